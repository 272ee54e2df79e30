# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The _newest_version, _package_offers and _apt_outdated filters, internal to the roles (no compatibility promise);
each documented in its own <name>.yml."""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils import _pkgversion
from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shown


def _strings(value, name, what):
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, (list, tuple)) or \
            not all(isinstance(item, str) for item in value):
        raise AnsibleFilterError("%s: %s must be a list of strings, got %s" % (name, what, type(value).__name__))
    return list(value)


def newest_version(versions, suffix="", pattern="", scheme="deb"):
    """The newest of ``versions`` in the package manager's order (``scheme``: dpkg's for ``deb``, RPM's for
    ``rpm``), among those that end with ``suffix`` and match ``pattern``; an empty string when none does."""
    candidates = _strings(versions, "_newest_version", "the input")
    if not isinstance(suffix, str) or not isinstance(pattern, str):
        raise AnsibleFilterError("_newest_version: suffix and pattern must be strings")
    if scheme not in _pkgversion.SCHEMES:
        raise AnsibleFilterError("_newest_version: scheme must be one of %s, got %s"
                                 % (", ".join(_pkgversion.SCHEMES), shown(scheme)))
    try:
        wanted = re.compile(pattern) if pattern else None
    except re.error as exc:
        raise AnsibleFilterError("_newest_version: pattern %s is not a regular expression: %s"
                                 % (shown(pattern), exc)) from None
    candidates = [v for v in candidates if v.endswith(suffix) and (wanted is None or wanted.search(v))]
    try:
        return max(candidates, key=_pkgversion.sort_key(scheme), default="")
    except _pkgversion.VersionError as exc:
        raise AnsibleFilterError("_newest_version: %s" % exc) from None


def package_offers(lines, regex=None):
    """``{package: [versions]}`` from a package manager's listing, one offer per line that ``regex`` matches with
    the package name as its first group and the version as its second; or, without ``regex``, from
    accelops.gpu.node_probe's ``candidates`` (the versions apt's sources offer, for each package that has any)."""
    if regex is None:
        if not isinstance(lines, dict) or not all(isinstance(info, dict) for info in lines.values()):
            raise AnsibleFilterError("_package_offers: without a regex the input must be the candidates of "
                                     "accelops.gpu.node_probe, got %s" % type(lines).__name__)
        return {name: list(info["versions"]) for name, info in lines.items() if info.get("versions")}
    listing = _strings(lines, "_package_offers", "the input")
    try:
        offer = re.compile(regex)
    except (re.error, TypeError) as exc:
        raise AnsibleFilterError("_package_offers: %s is not a regular expression: %s" % (shown(regex), exc)) from None
    if offer.groups < 2:
        raise AnsibleFilterError("_package_offers: the regular expression needs two groups, name and version")
    found = {}
    for line in listing:
        match = offer.search(line)
        if match:
            found.setdefault(match.group(1), []).append(match.group(2))
    return found


def apt_outdated(names, candidates):
    """The names (in the order given) that apt would install or move: not installed, not at apt's candidate, without
    a candidate, or not in ``candidates`` (accelops.gpu.node_probe's answer) at all. None when ``candidates`` is None
    (no apt on the node): every name."""
    wanted = _strings(names, "_apt_outdated", "the input")
    if candidates is None:
        return wanted
    if not isinstance(candidates, dict):
        raise AnsibleFilterError("_apt_outdated: candidates must be the candidates of accelops.gpu.node_probe, got %s"
                                 % type(candidates).__name__)
    outdated = []
    for name in wanted:
        entry = candidates.get(name)
        if not isinstance(entry, dict) or not entry.get("candidate") or entry.get("installed") != entry["candidate"]:
            outdated.append(name)
    return outdated


class FilterModule:
    def filters(self):
        return {"_newest_version": newest_version, "_package_offers": package_offers, "_apt_outdated": apt_outdated}
