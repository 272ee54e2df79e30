"""The changelog fragments, checked in seconds where the release stage would find them only at the end of make test."""

from __future__ import annotations

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
