"""Package versions in dpkg's and RPM's order, checked against the package managers' own answers: ``dpkg
--compare-versions`` and RPM's ``rpm.vercmp`` (through ``rpm --eval`` and RPM's Lua) on the real version strings of
versions.txt. Both tools are Debian packages (make units installs rpm)."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _pkgversion
from ansible_collections.accelops.gpu.plugins.module_utils._pkgversion import (
    VersionError,
    compare,
    deb_compare,
    deb_parse,
    rpm_compare,
    rpm_parse,
    sort_key,
)

CORPUS = [line for line in (Path(__file__).parent / "versions.txt").read_text().splitlines()
          if line and not line.startswith("#")]
SIGN = {-1: "<", 0: "=", 1: ">"}


def tool(name):
    path = shutil.which(name)
    if not path:
        pytest.fail("%s is not installed: make units installs it (apt-get install dpkg rpm)" % name)
    return path


def deb_valid(version):
    try:
        deb_parse(version)
    except VersionError:
        return False
    return True


def test_the_corpus_is_large_and_has_the_hard_cases():
    assert len(CORPUS) > 400
    assert len(set(CORPUS)) == len(CORPUS)
    assert sum(":" in v for v in CORPUS) > 40 and sum("~" in v for v in CORPUS) > 20


@pytest.mark.parametrize("one, two, expected", [
    ("9.8.0.87~rc1-1", "9.8.0.87-1", -1),  # a pre-release before its release
    ("1:1.0-1", "9.8.0.87-1", 1),  # the epoch first
    ("1.0~~", "1.0~~a", -1),
    ("1.0~", "1.0", -1),
    ("1.0", "1.0a", -1),
    ("1.0a", "1.0+", -1),  # letters before other characters
    ("1.0", "1.00", 0),
    ("1.0", "1.0-0", 0),  # no revision is revision 0
    ("0:1.0", "1.0", 0),
    ("2.26.2-1+cuda12.10", "2.26.2-1+cuda12.8", 1),
    ("550.127.08-1", "550.54.15-1", 1),
])
def test_deb_order_by_example(one, two, expected):
    left, right = one, two
    assert deb_compare(left, right) == expected
    assert deb_compare(right, left) == -expected


@pytest.mark.parametrize("one, two, expected", [
    ("1.0~rc1", "1.0", -1),
    ("1.0^git1", "1.0", 1),  # a caret after the end
    ("1.0^git1", "1.0.1", -1),  # and before anything else
    ("1.0", "1.0-1", -1),  # no release before a release
    ("1:1.0", "2.0", 1),
    ("1.0a", "1.0.1", -1),  # letters before numbers
    ("1.0_1", "1.0.1", 0),  # separators are all alike
    ("01.0", "1.0", 0),
])
def test_rpm_order_by_example(one, two, expected):
    left, right = one, two
    assert rpm_compare(left, right) == expected
    assert rpm_compare(right, left) == -expected


def test_dpkg_agrees_on_the_corpus():
    """Sorted in dpkg's order here, each version against the next, and 400 pairs drawn at random, asked of dpkg."""
    dpkg = tool("dpkg")
    valid = sorted((v for v in CORPUS if deb_valid(v)), key=sort_key("deb"))
    assert len(valid) > 400
    pairs = list(zip(valid, valid[1:]))
    draw = random.Random(20261206)
    pairs += [tuple(draw.sample(valid, 2)) for _draw in range(400)]
    # One shell for all the questions: dpkg --compare-versions A lt B, then eq.
    script = "\n".join(
        "if %(d)s --compare-versions '%(a)s' lt '%(b)s'; then echo '<'; "
        "elif %(d)s --compare-versions '%(a)s' eq '%(b)s'; then echo '='; else echo '>'; fi"
        % {"d": dpkg, "a": one, "b": two} for one, two in pairs)
    answers = subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True, check=True).stdout.split()
    assert len(answers) == len(pairs)
    wrong = [(one, two, SIGN[deb_compare(one, two)], said)
             for (one, two), said in zip(pairs, answers) if SIGN[deb_compare(one, two)] != said]
    assert wrong == []


def test_dpkg_warns_about_what_is_refused_here():
    """The versions refused here are those dpkg calls bad syntax."""
    dpkg = tool("dpkg")
    refused = [v for v in CORPUS if not deb_valid(v)]
    assert refused
    for version in refused:
        said = subprocess.run([dpkg, "--compare-versions", version, "eq", "1"], check=False, capture_output=True,
                              text=True)
        assert "bad syntax" in said.stderr, version
    for version in ("1.0", "1:2.3-4", "0~20171227-0.3+deb12u1"):
        said = subprocess.run([dpkg, "--compare-versions", version, "eq", "1"], check=False, capture_output=True,
                              text=True)
        assert "bad syntax" not in said.stderr


def test_rpm_agrees_on_every_pair_of_the_corpus(tmp_path):
    """Every pair of the corpus, asked of RPM's own rpm.vercmp in one Lua run."""
    rpm = tool("rpm")
    listing = tmp_path / "versions"
    listing.write_text("\n".join(CORPUS) + "\n")
    lua = tmp_path / "pairs.lua"
    lua.write_text(
        "local v = {}\n"
        "for line in io.lines('%s') do v[#v + 1] = line end\n"
        "local sign = {[-1] = '<', [0] = '=', [1] = '>'}\n"
        "for i = 1, #v do\n"
        "  local row = {}\n"
        "  for j = 1, #v do row[j] = sign[rpm.vercmp(v[i], v[j])] end\n"
        "  io.write(table.concat(row), \"\\n\")\n"
        "end\n" % listing)
    rows = subprocess.run([rpm, "--eval", "%%{lua: dofile('%s')}" % lua], capture_output=True, text=True,
                          check=True).stdout.split()
    assert len(rows) == len(CORPUS)
    wrong = [(one, two, SIGN[rpm_compare(one, two)], rows[i][j])
             for i, one in enumerate(CORPUS) for j, two in enumerate(CORPUS)
             if SIGN[rpm_compare(one, two)] != rows[i][j]]
    assert wrong[:20] == []


@pytest.mark.parametrize("version, message", [
    ("", "'' is not a Debian version"),
    ("a1.0", "'a1.0' is not a Debian version"),
    ("x:1.0", "'x:1.0' is not a Debian version"),
    ("1.0-", "its revision"),
    ("1.0-2:3", "is not a Debian version"),  # dpkg: "epoch in version is not number"
    ("1.0 1", "is not a Debian version"),
    ("1.0\n", "is not a Debian version"),
    (1.0, "a version must be a string, got float"),
])
def test_deb_refusals(version, message):
    with pytest.raises(VersionError, match=message):
        deb_parse(version)


@pytest.mark.parametrize("version, message", [
    ("", "is not an RPM version"),
    ("1.0 1", "is not an RPM version"),
    ("1.0\x00", "is not an RPM version"),
    (None, "a version must be a string, got NoneType"),
])
def test_rpm_refusals(version, message):
    with pytest.raises(VersionError, match=message):
        rpm_parse(version)


def test_an_unknown_scheme_is_refused():
    with pytest.raises(VersionError, match="scheme must be one of deb, rpm, got 'pacman'"):
        compare("1", "2", "pacman")
    with pytest.raises(VersionError, match="scheme must be one of deb, rpm"):
        sort_key("apk")
    assert _pkgversion.SCHEMES == ("deb", "rpm")
