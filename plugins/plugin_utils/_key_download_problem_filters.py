# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The _key_download_problem filter, internal to the roles (no compatibility promise),
documented in _key_download_problem.yml."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def key_download_problem(result):
    """Why a registered ansible.builtin.get_url (run with failed_when: false) did not store what it read; "" when it
    did, or when it was skipped."""
    if not isinstance(result, dict):
        raise AnsibleFilterError("_key_download_problem: expected the registered result of ansible.builtin.get_url, "
                                 "got %s" % type(result).__name__)
    if result.get("skipped"):
        return ""
    said = str(result.get("msg") or "")
    # What get_url read and stored has its checksum and fetch_url's "OK (N bytes)"; a file:// URL and a check-mode
    # HEAD request have no HTTP status code. A 304 cannot answer a forced download.
    if "checksum_src" in result and said.startswith("OK ("):
        return ""
    status = result.get("status_code")
    if isinstance(status, int) and not isinstance(status, bool):
        said = "%s (HTTP %d: %s)" % (said or "request failed", status, result.get("response") or "")
    return said or "get_url stored nothing and gave no reason"


class FilterModule:
    def filters(self):
        return {"_key_download_problem": key_download_problem}
