# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: package versions ordered as the package managers order them, dpkg's order
for Debian and Ubuntu, RPM's for EL (the roles' filters on the controller, apt_mirror on the machine it runs on).

The algorithms are dpkg's ``dpkg_version_compare`` (lib/dpkg/version.c) and RPM's ``rpmvercmp`` with its version
parser (rpmio/rpmvercmp.c, rpmio/rpmver.c, as ``rpm.vercmp`` answers). The controller has neither python-apt nor
RPM's bindings in general (neither is on PyPI), so they are written here and tested against ``dpkg
--compare-versions`` and RPM's own ``rpm.vercmp`` on real version strings (tests/unit/plugins/module_utils).
Characters are classified as in the C locale (ASCII letters and digits only), as both tools do.
"""

from __future__ import annotations

import functools
import re

SCHEMES = ("deb", "rpm")
_DIGITS = frozenset("0123456789")
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
# dpkg's parseversion refuses an epoch that is not a number and a version without a digit at its start; what it
# accepts in the upstream part and the revision (it only warns about other characters, which never occur in a
# repository's Packages file).
_DEB = re.compile(r"\A(?:(?P<epoch>[0-9]+):)?(?P<upstream>[0-9][A-Za-z0-9.+~:-]*?)"
                  r"(?:-(?P<revision>[A-Za-z0-9.+~]+))?\Z")


class VersionError(ValueError):
    """A version string that the package manager would refuse."""


def _deb_order(char):
    if char in _DIGITS:
        return 0
    if char in _LETTERS:
        return ord(char)
    if char == "~":
        return -1
    return ord(char) + 256


def _deb_part(one, two):
    """dpkg's verrevcmp: <0, 0 or >0."""
    i = j = 0
    while i < len(one) or j < len(two):
        while (i < len(one) and one[i] not in _DIGITS) or (j < len(two) and two[j] not in _DIGITS):
            left = _deb_order(one[i]) if i < len(one) and one[i] not in _DIGITS else 0
            right = _deb_order(two[j]) if j < len(two) and two[j] not in _DIGITS else 0
            if left != right:
                return left - right
            i += 1
            j += 1
        while i < len(one) and one[i] == "0":
            i += 1
        while j < len(two) and two[j] == "0":
            j += 1
        first_diff = 0
        while i < len(one) and one[i] in _DIGITS and j < len(two) and two[j] in _DIGITS:
            if not first_diff:
                first_diff = ord(one[i]) - ord(two[j])
            i += 1
            j += 1
        if i < len(one) and one[i] in _DIGITS:
            return 1
        if j < len(two) and two[j] in _DIGITS:
            return -1
        if first_diff:
            return first_diff
    return 0


def deb_parse(version):
    """(epoch, upstream, revision) of a Debian version, as dpkg splits it; VersionError where dpkg refuses it."""
    if not isinstance(version, str):
        raise VersionError("a version must be a string, got %s" % type(version).__name__)
    match = _DEB.match(version)
    if match is not None and match.group("epoch") is None and ":" in version:
        match = None  # dpkg reads what comes before the first colon as the epoch, which must be a number
    if match is None:
        raise VersionError("%r is not a Debian version ([epoch:]upstream[-revision], the upstream part starting with "
                           "a digit, of letters, digits and . + ~ - :)" % version)
    if match.group("revision") is None and "-" in match.group("upstream"):
        raise VersionError("%r is not a Debian version: its revision (after the last -) is empty or has characters "
                           "other than letters, digits and . + ~" % version)
    return int(match.group("epoch") or 0), match.group("upstream"), match.group("revision") or ""


def deb_compare(one, two):
    """-1, 0 or 1 as ``dpkg --compare-versions`` orders ``one`` and ``two``."""
    left, right = deb_parse(one), deb_parse(two)
    if left[0] != right[0]:
        return -1 if left[0] < right[0] else 1
    for part in (1, 2):
        found = _deb_part(left[part], right[part])
        if found:
            return -1 if found < 0 else 1
    return 0


def _rpm_part(one, two):
    """RPM's rpmvercmp: -1, 0 or 1."""
    if one == two:
        return 0
    i = j = 0
    while i < len(one) or j < len(two):
        while i < len(one) and one[i] not in _DIGITS and one[i] not in _LETTERS and one[i] not in "~^":
            i += 1
        while j < len(two) and two[j] not in _DIGITS and two[j] not in _LETTERS and two[j] not in "~^":
            j += 1
        head_one = one[i] if i < len(one) else ""
        head_two = two[j] if j < len(two) else ""
        # A tilde sorts before everything, the end included.
        if head_one == "~" or head_two == "~":
            if head_one != "~":
                return 1
            if head_two != "~":
                return -1
            i += 1
            j += 1
            continue
        # A caret sorts after the end and before everything else.
        if head_one == "^" or head_two == "^":
            if not head_one:
                return -1
            if not head_two:
                return 1
            if head_one != "^":
                return 1
            if head_two != "^":
                return -1
            i += 1
            j += 1
            continue
        if not (head_one and head_two):
            break
        kind = _DIGITS if head_one in _DIGITS else _LETTERS
        start_one, start_two = i, j
        while i < len(one) and one[i] in kind:
            i += 1
        while j < len(two) and two[j] in kind:
            j += 1
        seg_one, seg_two = one[start_one:i], two[start_two:j]
        if not seg_two:
            return 1 if kind is _DIGITS else -1
        if kind is _DIGITS:
            seg_one, seg_two = seg_one.lstrip("0"), seg_two.lstrip("0")
            if len(seg_one) != len(seg_two):
                return 1 if len(seg_one) > len(seg_two) else -1
        if seg_one != seg_two:
            return 1 if seg_one > seg_two else -1
    if i >= len(one) and j >= len(two):
        return 0
    return -1 if i >= len(one) else 1


def rpm_parse(version):
    """(epoch, version, release) as RPM's parser splits ``[epoch:]version[-release]``; the release None when there is
    no hyphen. VersionError for what RPM refuses."""
    if not isinstance(version, str):
        raise VersionError("a version must be a string, got %s" % type(version).__name__)
    if not version or any(ord(char) < 33 or ord(char) > 126 for char in version):
        raise VersionError("%r is not an RPM version ([epoch:]version[-release], printable ASCII without spaces)"
                           % version)
    end = 0
    while end < len(version) and version[end] in _DIGITS:
        end += 1
    epoch, rest = ("0", version)
    if end < len(version) and version[end] == ":":
        epoch, rest = version[:end] or "0", version[end + 1:]
    cut = rest.rfind("-")
    if cut < 0:
        return epoch, rest, None
    return epoch, rest[:cut], rest[cut + 1:]


def rpm_compare(one, two):
    """-1, 0 or 1 as RPM's ``rpm.vercmp`` orders ``one`` and ``two`` (a release, even an empty one, sorts after
    none when all else is equal)."""
    left, right = rpm_parse(one), rpm_parse(two)
    for part in (0, 1):
        found = _rpm_part(left[part], right[part])
        if found:
            return found
    if left[2] is None or right[2] is None:
        return (left[2] is not None) - (right[2] is not None)
    return _rpm_part(left[2], right[2])


def compare(one, two, scheme="deb"):
    """-1, 0 or 1: ``one`` against ``two`` in the package manager's order (``scheme`` deb or rpm)."""
    if scheme == "deb":
        return deb_compare(one, two)
    if scheme == "rpm":
        return rpm_compare(one, two)
    raise VersionError("scheme must be one of %s, got %r" % (", ".join(SCHEMES), scheme))


def sort_key(scheme="deb"):
    """A key for sorted() in the package manager's order."""
    if scheme not in SCHEMES:
        raise VersionError("scheme must be one of %s, got %r" % (", ".join(SCHEMES), scheme))
    return functools.cmp_to_key(functools.partial(compare, scheme=scheme))
