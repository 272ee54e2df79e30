"""The changelog fragments, checked in seconds where the release stage would find them only at the end of make test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

CHANGELOGS = Path(__file__).resolve().parents[2] / "changelogs"
FRAGMENTS = sorted((CHANGELOGS / "fragments").glob("*.yml"))
CONFIG = yaml.safe_load((CHANGELOGS / "config.yaml").read_text(encoding="utf-8"))
SECTIONS = {name for name, _title in CONFIG["sections"]}
SECTIONS |= {CONFIG["prelude_section_name"], CONFIG["trivial_section_name"]}
FIRST_RELEASE = not yaml.safe_load((CHANGELOGS / "changelog.yaml").read_text(encoding="utf-8"))["releases"]


def test_there_are_fragments():
    assert FRAGMENTS


@pytest.mark.parametrize("path", FRAGMENTS, ids=[path.name for path in FRAGMENTS])
def test_fragment_sections(path):
    """Each fragment uses sections the config knows, each a list of non-empty strings (the prelude one string); before
    the first release there is nothing to fix, so a fix is told in its feature's words (minor_changes)."""
    fragment = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(fragment, dict) and fragment, path.name
    assert set(fragment) <= SECTIONS, sorted(set(fragment) - SECTIONS)
    if FIRST_RELEASE:
        assert not set(fragment) & {"bugfixes", "security_fixes"}, "a first release has no fixes: use minor_changes"
    for section, entries in fragment.items():
        if section == CONFIG["prelude_section_name"]:
            assert isinstance(entries, str) and entries.strip()
        else:
            assert isinstance(entries, list) and entries
            assert all(isinstance(entry, str) and entry.strip() for entry in entries)


# Words that narrate how the collection was built rather than say what it gives: its tests, and, before the first
# release, fixes of what no release shipped.
TESTS_ONLY = re.compile(r"\b(molecule|unit tests?|scenarios?|simulated (node|nodes|cluster)|fake NVML|CI)\b")
NARRATION = re.compile(r"\b(no longer|used to|fixed|previously|any ?more|regression)\b", re.IGNORECASE)


def entries(fragment):
    return [entry for section, items in fragment.items() if section != CONFIG["prelude_section_name"]
            for entry in items]


@pytest.mark.parametrize("path", FRAGMENTS, ids=[path.name for path in FRAGMENTS])
def test_fragments_speak_to_users(path):
    """A changelog entry says what a user gets: no entry about the project's own tests (those need none), no internal
    change (trivial), and before the first release no story of a fix."""
    fragment = yaml.safe_load(path.read_text(encoding="utf-8"))
    for entry in entries(fragment):
        assert not TESTS_ONLY.search(entry), "%s speaks of the tests: %s" % (path.name, entry[:120])
    if FIRST_RELEASE:
        assert CONFIG["trivial_section_name"] not in fragment, "an internal change needs no fragment"
        for entry in entries(fragment):
            found = NARRATION.search(entry)
            assert not found, "%s narrates a fix (%r): say what the release gives" % (path.name, found.group(0))


def test_one_release_summary():
    summaries = [path.name for path in FRAGMENTS
                 if CONFIG["prelude_section_name"] in yaml.safe_load(path.read_text(encoding="utf-8"))]
    assert len(summaries) == 1, summaries
