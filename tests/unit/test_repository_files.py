"""The files people look for in a repository (CONTRIBUTING.md, SECURITY.md, the support policy) are there, the README
links to them the way Galaxy can follow, and the release tarball holds SECURITY.md but not CONTRIBUTING.md."""

from __future__ import annotations

import fnmatch

import yaml

from simnode import ROOT

BASE = "https://github.com/accelops/accelops.gpu/blob/main/"
README = (ROOT / "README.md").read_text(encoding="utf-8")
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text(encoding="utf-8"))


def in_tarball(path):
    """Whether ansible-galaxy collection build keeps a top-level file (build_ignore takes shell patterns)."""
    return not any(fnmatch.fnmatch(path, pattern) for pattern in GALAXY["build_ignore"])


def test_the_readme_links_each_file():
    for path in ("CONTRIBUTING.md", "SECURITY.md", "docs/releasing.md#support-policy"):
        assert "](%s%s)" % (BASE, path) in README, path


def test_security_goes_with_the_collection_and_contributing_stays_in_the_repository():
    assert (ROOT / "SECURITY.md").is_file() and in_tarball("SECURITY.md")
    assert (ROOT / "CONTRIBUTING.md").is_file() and not in_tarball("CONTRIBUTING.md")


def test_security_says_to_report_privately():
    security = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    assert GALAXY["repository"] + "/security/advisories/new" in security
    for topic in ("Signed repositories", "key pinning", "Secrets", "injection", "ports"):
        assert topic.lower() in security.lower(), topic


def test_the_support_policy_is_where_the_links_point():
    releasing = (ROOT / "docs" / "releasing.md").read_text(encoding="utf-8")
    assert "\n## Support policy\n" in releasing
    assert "ansible-core" in releasing.split("## Support policy", 1)[1]


def test_contributing_names_the_make_targets_it_describes():
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("check", "test", "demo", "units", "docs"):
        assert "make %s" % target in contributing, target
        assert "\n%s:" % target in makefile, target
