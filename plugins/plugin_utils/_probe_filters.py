# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The _file_matches, _running_units, _alternatives_set and _pip_unmet filters, each documented in its own
<name>.yml: the roles' decisions on the controller from node_probe's reads (internal: no compatibility promise)."""

from __future__ import annotations

import base64
import binascii
import posixpath
import re

from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shown

KINDS = ("file", "directory", "link")
OCTAL = set("01234567")


def file_matches(state, *, kind="file", owner=None, group=None, mode=None, checksum=None):
    """Whether node_probe's state of one path is what a file, copy or template task would leave: its kind, and each
    of owner, group, mode (four octal digits) and SHA-1 checksum that is given."""
    if not isinstance(state, dict):
        raise AnsibleFilterError("_file_matches: the input must be one path's state from accelops.gpu.node_probe "
                                 "(its files), got %s" % type(state).__name__)
    if kind not in KINDS:
        raise AnsibleFilterError("_file_matches: kind must be one of %s, got %s" % (", ".join(KINDS), shown(kind)))
    if mode is not None and not (isinstance(mode, str) and len(mode) == 4 and set(mode) <= OCTAL):
        raise AnsibleFilterError("_file_matches: mode must be four octal digits as a string such as '0644', got %s"
                                 % shown(mode))
    if state.get("exists") is not True or state.get("type") != kind:
        return False
    wanted = {"owner": owner, "group": group, "mode": mode, "checksum": checksum}
    return all(state.get(key) == value for key, value in wanted.items() if value is not None)


def running_units(services):
    """The units of node_probe's services read that are active and enabled, sorted: what a systemd_service task with
    state started and enabled true would leave alone. None (no systemd) gives none."""
    if services is None:
        return []
    if not isinstance(services, dict):
        raise AnsibleFilterError("_running_units: the input must be the services of accelops.gpu.node_probe, got %s"
                                 % type(services).__name__)
    return sorted(name for name, state in services.items()
                  if isinstance(state, dict) and state.get("active_state") == "active"
                  and state.get("unit_file_state") == "enabled")


def alternatives_set(files, links, target, admin_dir="/var/lib/dpkg/alternatives"):
    """The update-alternatives links (names) that node_probe's read of the files found in manual mode, pointing at
    target and with target registered as one of their choices: what `update-alternatives --install` and `--set`
    would leave alone. The read holds each link's state file (admin_dir/NAME, read with its content) and its link
    (/etc/alternatives/NAME)."""
    if not isinstance(files, dict):
        raise AnsibleFilterError("_alternatives_set: the input must be the files of accelops.gpu.node_probe, got %s"
                                 % type(files).__name__)
    if not isinstance(links, list) or not all(isinstance(link, str) for link in links):
        raise AnsibleFilterError("_alternatives_set: links must be a list of names, got %s" % shown(links))
    found = []
    for link in links:
        admin = files.get(posixpath.join(admin_dir, link)) or {}
        current = files.get("/etc/alternatives/" + link) or {}
        try:
            lines = base64.b64decode(admin.get("content") or "", validate=True).decode("utf-8").split("\n")
        except (binascii.Error, UnicodeDecodeError):
            continue
        # The mode, the link's path and its followers up to a blank line; then the choices, each a path and a
        # priority (and its followers' paths).
        choices = lines[lines.index(""):] if "" in lines else []
        if lines[0] == "manual" and current.get("target") == target and target in choices:
            found.append(link)
    return found


# A requirement this filter can judge: a project name alone, or pinned with == to one version. Anything else (other
# specifiers, extras, markers, URLs, paths) is left to pip.
REQUIREMENT = re.compile(r"\A\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)"
                         r"\s*(?:==\s*([A-Za-z0-9][A-Za-z0-9.+!_-]*))?\s*\Z")


def _project(name):
    """A project name as PEP 503 compares them: lower case, runs of -, _ and . as one -."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pip_unmet(requirements, dist_infos):
    """The requirements, in the order given, that the installed distributions (the paths of an environment's
    *.dist-info directories) are not known to meet; an empty list means that each requirement itself is installed
    (their dependencies are not read)."""
    if not isinstance(requirements, list) or not all(isinstance(item, str) for item in requirements):
        raise AnsibleFilterError("_pip_unmet: the input must be a list of requirement strings, got %s"
                                 % shown(requirements))
    if not isinstance(dist_infos, list) or not all(isinstance(item, str) for item in dist_infos):
        raise AnsibleFilterError("_pip_unmet: dist_infos must be a list of paths (node_probe's globs), got %s"
                                 % shown(dist_infos))
    installed = {}
    for path in dist_infos:
        base = posixpath.basename(path.rstrip("/"))
        stem = base[: -len(".dist-info")]
        # {name}-{version}.dist-info, with any - of the name written as _ (the wheel format's escaping); a version
        # never holds a -, so an older tool's unescaped name keeps its own.
        if not base.endswith(".dist-info") or "-" not in stem:
            continue
        name, version = stem.rsplit("-", 1)
        installed.setdefault(_project(name), set()).add(version)
    unmet = []
    for requirement in requirements:
        match = REQUIREMENT.match(requirement)
        versions = installed.get(_project(match.group(1)), set()) if match else set()
        wanted = match.group(2) if match else None
        # == without a local label also matches the installed version's local build (torch==2.13.0 is 2.13.0+cpu).
        met = bool(versions) and (wanted is None or any(
            version == wanted or ("+" not in wanted and version.split("+", 1)[0] == wanted) for version in versions))
        if not met:
            unmet.append(requirement)
    return unmet


class FilterModule:
    def filters(self):
        return {"_file_matches": file_matches, "_running_units": running_units, "_alternatives_set": alternatives_set,
                "_pip_unmet": pip_unmet}
