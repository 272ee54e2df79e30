# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._signing_key_problems; its code is in plugin_utils/_signing_key_problems_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _signing_key_problems
short_description: "Internal: why a downloaded repository key file must not be trusted (no compatibility promise)"
version_added: 0.1.0
description:
  - Reads what C(gpg --batch --with-colons --show-keys FILE) prints for a key file and gives one line per reason
    not to trust the whole file; an empty list when the file holds exactly the pinned primary key (with any
    subkeys of that key) and nothing else.
  - A revoked, expired, invalid or disabled pinned key is a reason too.
  - A second primary key, a file with no key, a pinned fingerprint that is only a subkey's, or a secret key in the
    file are each a reason, since APT and RPM trust every key in a file they are given, so one extra key would let
    whoever placed it sign packages that install as root.
  - Given an entry of M(accelops.gpu.node_probe)'s C(keyrings), the file's armor is checked too, and anything but
    exactly one C(PGP PUBLIC KEY BLOCK) (another armored block of any label, text outside the block) is a reason,
    since APT reads every armored block of a key file while gpg lists only the keys it accepts.
  - Every repository key the collection trusts (the CUDA repository, DOCA) is checked by this one filter.
options:
  _input:
    description:
      - The registered result of C(gpg --batch --with-colons --show-keys FILE) or one entry of
        M(accelops.gpu.node_probe)'s C(keyrings) (then a non-zero exit, a file gpg could not read whole, is a
        reason too, with gpg's last words), or the lines or text it printed.
      - An entry of C(keyrings) with only C(error) (a path that is not a regular file, such as a symbolic link, or
        one too large to read) is the one reason, with node_probe's message.
    type: raw
    required: true
  fingerprint:
    description: The pinned fingerprint, 40 hex digits (spaces and case do not matter).
    type: str
    required: true
  source:
    description: Where the file came from, for the messages.
    type: str
    default: the key file
  must_sign:
    description:
      - Also a reason when the pinned key can no longer sign (no capital C(S) among the usable capabilities gpg
        lists for the whole key, as when its signing subkeys expired or were revoked). For a key already trusted,
        which a renewed download may replace.
    type: bool
    default: false
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the keys in the downloaded file
  ansible.builtin.command: gpg --batch --with-colons --show-keys /root/staging/repo.pub
  register: key_info
  changed_when: false
  failed_when: false

- name: Refuse the file unless it holds exactly the pinned key
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join('; ') }}; nothing was trusted"
  vars:
    problems: >-
      {{ key_info | accelops.gpu._signing_key_problems('EB693B3035CD5710E231E123A4B469963BF863CC',
                                                       source='https://mirror.example/repo.pub') }}
"""

RETURN = r"""
_value:
  description: One line per reason, naming the source, the pinned fingerprint and what was found; empty when the
    file may be trusted.
  type: list
  elements: str
"""


def _signing_key_problems(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._signing_key_problems_filters import (
        signing_key_problems as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_signing_key_problems": _signing_key_problems}
