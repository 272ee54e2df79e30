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
  - A revoked or expired pinned key is a reason too.
  - A second primary key, a file with no key, a pinned fingerprint that is only a subkey's, or a secret key in the
    file are each a reason, since APT and RPM trust every key in a file they are given, so one extra key would let
    whoever placed it sign packages that install as root.
  - Every repository key the collection trusts (the CUDA repository, DOCA) is checked by this one filter.
options:
  _input:
    description:
      - The registered result of C(gpg --batch --with-colons --show-keys FILE) (then a non-zero exit, a file gpg
        could not read whole, is a reason too, with gpg's last words), or the lines or text it printed.
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
    problems: "{{ key_info | accelops.gpu.signing_key_problems(pinned, source=key_url) }}"
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
    """``[(kind, fingerprint, is_primary, validity)]`` from gpg's colon listing, in file order."""
    keys, pending = [], None
    for line in lines:
        fields = line.split(":")
        record = fields[0]
        if record in PRIMARY_RECORDS or record in SUBKEY_RECORDS:
            pending = (record, fields[1] if len(fields) > 1 else "")
        elif record == "fpr" and pending is not None:
            fingerprint = fields[9].upper() if len(fields) > 9 else ""
            keys.append((pending[0], fingerprint, pending[0] in PRIMARY_RECORDS, pending[1]))
            pending = None
    return keys


def signing_key_problems(listing, fingerprint, source="the key file"):
    failure = None
    if isinstance(listing, dict):  # the registered command result
        if listing.get("rc") not in (0, None):
            said = [line for line in listing.get("stderr_lines") or [] if isinstance(line, str)]
            failure = "gpg could not read all of %s (exit %s%s)" % (source, listing.get("rc"),
                                                                     ": " + said[-1] if said else "")
        listing = listing.get("stdout_lines", listing.get("stdout", ""))
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
    primaries = [fpr for _record, fpr, primary, _validity in keys if primary]
    problems = [failure] if failure else []
    if not primaries:
        problems.append("%s holds no OpenPGP key (expected the pinned %s)" % (source, pinned))
    others = [fpr for fpr in primaries if fpr != pinned]
    if others:
        problems.append("%s holds primary key%s %s besides the pinned %s; only the pinned key may be in it"
                        % (source, "s" if len(others) > 1 else "", ", ".join(others), pinned))
    if primaries and pinned not in primaries:
        as_subkey = any(fpr == pinned for _record, fpr, primary, _validity in keys if not primary)
        problems.append("%s does not hold the pinned %s%s" % (
            source, pinned, " as a primary key (only as a subkey)" if as_subkey else ""))
    if primaries.count(pinned) > 1:
        problems.append("%s holds the pinned %s more than once" % (source, pinned))
    states = {"r": "revoked", "e": "expired"}
    for _record, fpr, primary, validity in keys:
        if primary and fpr == pinned and validity in states:
            problems.append("%s holds the pinned %s, but that key is %s" % (source, pinned, states[validity]))
    if any(record in ("sec", "ssb") for record, _fpr, _primary, _validity in keys):
        problems.append("%s holds secret key material; a repository key file holds public keys only" % source)
    return problems


class FilterModule:
    def filters(self):
        return {"signing_key_problems": signing_key_problems}
