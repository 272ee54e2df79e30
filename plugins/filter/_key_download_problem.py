# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._key_download_problem; its code is in plugin_utils/_key_download_problem_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _key_download_problem
short_description: "Internal: why a repository key download did not store the key (no compatibility promise)"
version_added: 0.1.0
description:
  - "Reads the registered result of an C(ansible.builtin.get_url) task that ran with C(failed_when: false) (so that
    the role can stop with its own message) and gives the reason the key was not stored, or an empty string when it
    was, or when the task was skipped."
  - Success is what C(get_url) returns for something it read and stored, the checksum of what it read and
    C(OK (N bytes)); a C(file://) URL and a check-mode HEAD request have no HTTP status code, so the status alone
    cannot tell.
  - A refused connection, a name that does not resolve, an HTTP error (its code and response are added), a 304
    (impossible for a forced download) and a staged file that could not be written or replaced are each a reason.
  - Every repository key the collection downloads (the CUDA repository, DOCA) is judged by this one filter.
options:
  _input:
    description: The registered result of the C(ansible.builtin.get_url) task.
    type: dict
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Download the signing key
  ansible.builtin.get_url:
    url: https://mirror.example/repo.pub
    dest: /root/staging/repo.pub
    mode: "0644"
    force: true
  register: key_download
  failed_when: false

- name: Stop when it was not stored
  ansible.builtin.fail:
    msg: "Cannot download https://mirror.example/repo.pub: {{ key_download | accelops.gpu._key_download_problem }}"
  when: key_download | accelops.gpu._key_download_problem | length > 0
"""

RETURN = r"""
_value:
  description: The reason, or an empty string when the key was stored (or the task skipped).
  type: str
"""


def _key_download_problem(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._key_download_problem_filters import (
        key_download_problem as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_key_download_problem": _key_download_problem}
