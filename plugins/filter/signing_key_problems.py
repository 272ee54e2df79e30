# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: signing_key_problems
short_description: Why a downloaded repository key file must not be trusted
version_added: 0.1.0
description:
  - Reads what C(gpg --batch --with-colons --show-keys FILE) prints for a key file and gives one line per reason
    not to trust the whole file; an empty list when the file holds exactly the pinned primary key (with any
    subkeys of that key) and nothing else.
  - A second primary key, a file with no key, a pinned fingerprint that is only a subkey's, or a secret key in the
    file are each a reason, since APT and RPM trust every key in a file they are given, so one extra key would let
    whoever placed it sign packages that install as root.
  - Every repository key the collection trusts (the CUDA repository, DOCA) is checked by this one filter.
options:
  _input:
    description: The lines C(gpg --with-colons --show-keys) printed (its C(stdout_lines)), or the whole text.
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
    problems: "{{ key_info.stdout_lines | accelops.gpu.signing_key_problems(pinned, source=key_url) }}"
"""

RETURN = r"""
_value:
  description: One line per reason, naming the source, the pinned fingerprint and what was found; empty when the
    file may be trusted.
  type: list
  elements: str
"""

import re

from ansible.errors import AnsibleFilterError

FINGERPRINT = re.compile(r"\A[0-9A-F]{40}\Z")
PRIMARY_RECORDS = {"pub": "public", "sec": "secret"}
SUBKEY_RECORDS = ("sub", "ssb")


def parse_keys(lines):
    """``[(kind, fingerprint, is_primary)]`` from gpg's colon listing, in file order."""
    keys, pending = [], None
    for line in lines:
        fields = line.split(":")
        record = fields[0]
        if record in PRIMARY_RECORDS or record in SUBKEY_RECORDS:
            pending = record
        elif record == "fpr" and pending is not None:
            fingerprint = fields[9].upper() if len(fields) > 9 else ""
            keys.append((pending, fingerprint, pending in PRIMARY_RECORDS))
            pending = None
    return keys


def signing_key_problems(listing, fingerprint, source="the key file"):
    if isinstance(listing, str):
        lines = listing.splitlines()
    elif isinstance(listing, (list, tuple)) and all(isinstance(line, str) for line in listing):
        lines = list(listing)
    else:
        raise AnsibleFilterError("signing_key_problems: expected gpg's --with-colons output as text or lines, got %s"
                                 % type(listing).__name__)
    if not isinstance(fingerprint, str) or not FINGERPRINT.match(fingerprint.replace(" ", "").upper()):
        raise AnsibleFilterError("signing_key_problems: fingerprint must be 40 hex digits, got %r" % (fingerprint,))
    pinned = fingerprint.replace(" ", "").upper()
    keys = parse_keys(lines)
    primaries = [fpr for record, fpr, primary in keys if primary]
    problems = []
    if not primaries:
        problems.append("%s holds no OpenPGP key (expected the pinned %s)" % (source, pinned))
    others = [fpr for fpr in primaries if fpr != pinned]
    if others:
        problems.append("%s holds primary key%s %s besides the pinned %s; only the pinned key may be in it"
                        % (source, "s" if len(others) > 1 else "", ", ".join(others), pinned))
    if primaries and pinned not in primaries:
        as_subkey = any(fpr == pinned for _record, fpr, primary in keys if not primary)
        problems.append("%s does not hold the pinned %s%s" % (
            source, pinned, " as a primary key (only as a subkey)" if as_subkey else ""))
    if primaries.count(pinned) > 1:
        problems.append("%s holds the pinned %s more than once" % (source, pinned))
    if any(record in ("sec", "ssb") for record, _fpr, _primary in keys):
        problems.append("%s holds secret key material; a repository key file holds public keys only" % source)
    return problems


class FilterModule:
    def filters(self):
        return {"signing_key_problems": signing_key_problems}
