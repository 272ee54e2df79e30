# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The _signing_key_problems filter, internal to the roles (no compatibility promise),
documented in _signing_key_problems.yml."""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shortened, shown, whole

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
            if pending is not None:  # a key gpg listed without its fingerprint
                keys.append((pending[0], "", pending[0] in PRIMARY_RECORDS, pending[1]))
            pending = (record, fields[1] if len(fields) > 1 else "")
        elif record == "fpr" and pending is not None:
            fingerprint = fields[9].upper() if len(fields) > 9 else ""
            keys.append((pending[0], fingerprint, pending[0] in PRIMARY_RECORDS, pending[1]))
            pending = None
    if pending is not None:
        keys.append((pending[0], "", pending[0] in PRIMARY_RECORDS, pending[1]))
    return keys


def usable_capabilities(lines, fingerprint):
    """The usable capabilities of the whole key (capital letters of the primary key's field 12) whose primary key has
    the fingerprint; "" when the listing has no such key."""
    capabilities = None
    for line in lines:
        fields = line.split(":")
        if fields[0] in PRIMARY_RECORDS:
            capabilities = fields[11] if len(fields) > 11 else ""
        elif fields[0] in SUBKEY_RECORDS:
            capabilities = None
        elif fields[0] == "fpr" and capabilities is not None and len(fields) > 9 and fields[9].upper() == fingerprint:
            return "".join(c for c in capabilities if c.isupper())
    return ""


def armor_problems(listing, source):
    """node_probe's keyrings give the file's armor: apt reads every armored block of a key file whatever its label
    (apt-key's dearmor), gpg only those it accepts, so a block gpg skips would hold a key apt trusts."""
    blocks = listing.get("armor_blocks")
    if not blocks:
        return []
    problems = []
    if blocks != ["PGP PUBLIC KEY BLOCK"]:
        problems.append("%s holds the armored blocks %s; only one PGP PUBLIC KEY BLOCK may be in it (apt reads every "
                        "block, gpg lists only the keys it accepts)" % (source, ", ".join(repr(b) for b in blocks)))
    if listing.get("text_outside_armor"):
        problems.append("%s holds text outside its key block" % source)
    return problems


def signing_key_problems(listing, fingerprint, source="the key file", must_sign=False):
    if not isinstance(source, str):
        raise AnsibleFilterError("_signing_key_problems: source must be text that names the file, got %s"
                                 % type(source).__name__)
    failure, armor = None, []
    if isinstance(listing, dict) and "error" in listing:  # node_probe did not read it: a link, not a regular file
        return ["%s was not read: %s" % (source, shortened(listing["error"], 1000))]
    if isinstance(listing, dict):  # the registered command result, or node_probe's entry for the file
        armor = armor_problems(listing, source)
        if listing.get("rc") != 0 or listing.get("failed"):
            said = listing.get("stderr_lines", listing.get("stderr", ""))
            said = said.splitlines() if isinstance(said, str) else [s for s in said or [] if isinstance(s, str)]
            last = ": " + said[-1] if said else ""
            rc = listing.get("rc", "unknown")
            rc = rc if rc in ("unknown", None) or whole(rc, negative=True) is not None else shown(rc)
            failure = "gpg could not read all of %s (exit %s%s)" % (source, rc, last)
        listing = listing.get("stdout_lines", listing.get("stdout", ""))
    if isinstance(listing, str):
        lines = listing.splitlines()
    elif isinstance(listing, (list, tuple)) and all(isinstance(line, str) for line in listing):
        lines = list(listing)
    else:
        raise AnsibleFilterError("_signing_key_problems: expected gpg's --with-colons output as text or lines, got %s"
                                 % type(listing).__name__)
    if not isinstance(fingerprint, str) or not FINGERPRINT.match(fingerprint.replace(" ", "").upper()):
        raise AnsibleFilterError("_signing_key_problems: fingerprint must be 40 hex digits, got %s"
                                 % shown(fingerprint))
    pinned = fingerprint.replace(" ", "").upper()
    keys = parse_keys(lines)
    primaries = [fpr for _record, fpr, primary, _validity in keys if primary]
    problems = ([failure] if failure else []) + armor
    if not primaries:
        problems.append("%s holds no OpenPGP key (expected the pinned %s)" % (source, pinned))
    others = [fpr or "(one without a fingerprint)" for fpr in primaries if fpr != pinned]
    if others:
        problems.append("%s holds primary key%s %s besides the pinned %s; only the pinned key may be in it"
                        % (source, "s" if len(others) > 1 else "", ", ".join(others), pinned))
    if primaries and pinned not in primaries:
        as_subkey = any(fpr == pinned for _record, fpr, primary, _validity in keys if not primary)
        problems.append("%s does not hold the pinned %s%s" % (
            source, pinned, " as a primary key (only as a subkey)" if as_subkey else ""))
    if primaries.count(pinned) > 1:
        problems.append("%s holds the pinned %s more than once" % (source, pinned))
    states = {"r": "revoked", "e": "expired", "i": "invalid", "d": "disabled"}
    for _record, fpr, primary, validity in keys:
        if primary and fpr == pinned and validity in states:
            problems.append("%s holds the pinned %s, but that key is %s" % (source, pinned, states[validity]))
    if must_sign and pinned in primaries and "S" not in usable_capabilities(lines, pinned):
        problems.append("%s holds the pinned %s, but it can no longer sign (its signing keys expired or were revoked)"
                        % (source, pinned))
    if any(record in ("sec", "ssb") for record, _fpr, _primary, _validity in keys):
        problems.append("%s holds secret key material; a repository key file holds public keys only" % source)
    return problems


class FilterModule:
    def filters(self):
        return {"_signing_key_problems": signing_key_problems}
