# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The file_matches filter, documented in file_matches.yml: decisions on the controller from node_probe's reads."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

KINDS = ("file", "directory", "link")
OCTAL = set("01234567")


def file_matches(state, *, kind="file", owner=None, group=None, mode=None, checksum=None):
    """Whether node_probe's state of one path is what a file, copy or template task would leave: its kind, and each
    of owner, group, mode (four octal digits) and SHA-1 checksum that is given."""
    if not isinstance(state, dict):
        raise AnsibleFilterError("file_matches: the input must be one path's state from accelops.gpu.node_probe "
                                 "(its files), got %s" % type(state).__name__)
    if kind not in KINDS:
        raise AnsibleFilterError("file_matches: kind must be one of %s, got %r" % (", ".join(KINDS), kind))
    if mode is not None and not (isinstance(mode, str) and len(mode) == 4 and set(mode) <= OCTAL):
        raise AnsibleFilterError("file_matches: mode must be four octal digits as a string such as '0644', got %r"
                                 % (mode,))
    if state.get("exists") is not True or state.get("type") != kind:
        return False
    wanted = {"owner": owner, "group": group, "mode": mode, "checksum": checksum}
    return all(state.get(key) == value for key, value in wanted.items() if value is not None)


class FilterModule:
    def filters(self):
        return {"file_matches": file_matches}
