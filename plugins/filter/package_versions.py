# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The newest_version and package_offers filters; each documented in its own <name>.yml."""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.compat.version import LooseVersion


def _strings(value, name, what):
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, (list, tuple)) or \
            not all(isinstance(item, str) for item in value):
        raise AnsibleFilterError("%s: %s must be a list of strings, got %s" % (name, what, type(value).__name__))
    return list(value)


def newest_version(versions, suffix="", pattern=""):
    """The newest of ``versions`` (compared as Ansible's ``version`` test does by default), among those that end
    with ``suffix`` and match ``pattern``; an empty string when none does."""
    candidates = _strings(versions, "newest_version", "the input")
    if not isinstance(suffix, str) or not isinstance(pattern, str):
        raise AnsibleFilterError("newest_version: suffix and pattern must be strings")
    try:
        wanted = re.compile(pattern) if pattern else None
    except re.error as exc:
        raise AnsibleFilterError("newest_version: pattern %r is not a regular expression: %s" % (pattern, exc)) \
            from None
    candidates = [v for v in candidates if v.endswith(suffix) and (wanted is None or wanted.search(v))]
    newest = ""
    for version in candidates:
        try:
            if not newest or LooseVersion(version) > LooseVersion(newest):
                newest = version
        except TypeError:  # LooseVersion cannot order a number against a word at the same place
            raise AnsibleFilterError("newest_version: %r and %r cannot be compared" % (version, newest)) from None
    return newest


def package_offers(lines, regex):
    """``{package: [versions]}`` from a package manager's listing, one offer per line that ``regex`` matches with
    the package name as its first group and the version as its second."""
    listing = _strings(lines, "package_offers", "the input")
    try:
        offer = re.compile(regex)
    except (re.error, TypeError) as exc:
        raise AnsibleFilterError("package_offers: %r is not a regular expression: %s" % (regex, exc)) from None
    if offer.groups < 2:
        raise AnsibleFilterError("package_offers: the regular expression needs two groups, name and version")
    found = {}
    for line in listing:
        match = offer.search(line)
        if match:
            found.setdefault(match.group(1), []).append(match.group(2))
    return found


class FilterModule:
    def filters(self):
        return {"newest_version": newest_version, "package_offers": package_offers}
