"""The internal python_env role reads as internal wherever Galaxy or ansible-doc list it, as the internal filters do."""

from __future__ import annotations

import pytest
import yaml

from simnode import ROOT

INTERNAL_ROLES = {"python_env"}
ROLES = sorted(p.name for p in ROOT.glob("roles/*") if p.is_dir())


def describe(role):
    """The role's line in ansible-doc and on the role's page (argument_specs), and on Galaxy's content list (meta)."""
    specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    meta = yaml.safe_load((ROOT / "roles" / role / "meta" / "main.yml").read_text(encoding="utf-8"))
    return specs["argument_specs"]["main"]["short_description"], meta["galaxy_info"]["description"]


@pytest.mark.parametrize("role", ROLES)
def test_internal_roles_say_so_first(role):
    for line in describe(role):
        assert line.startswith("Internal: ") == (role in INTERNAL_ROLES), (role, line)


def test_internal_role_readme_says_so_first():
    readme = (ROOT / "roles" / "python_env" / "README.md").read_text(encoding="utf-8")
    first_paragraph = readme.split("-->", 1)[1].strip().splitlines()[0]
    assert first_paragraph.startswith("Internal: "), first_paragraph
