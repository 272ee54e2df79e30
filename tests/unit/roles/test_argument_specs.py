"""Every role's meta/argument_specs.yml and defaults/main.yml describe the same public variables."""

from __future__ import annotations

import pytest
import yaml

from simnode import ROOT

ROLES = sorted(p.parent.parent for p in ROOT.glob("roles/*/meta/argument_specs.yml"))


def load(path):
    return yaml.safe_load(path.read_text()) or {}


def test_every_role_has_argument_specs():
    assert [p.name for p in ROLES] == sorted(p.name for p in ROOT.glob("roles/*") if p.is_dir())
    assert ROLES


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_specs_match_defaults(role):
    defaults = load(role / "defaults" / "main.yml")
    options = load(role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(options) == set(defaults)
    for name, spec in options.items():
        assert name.startswith(role.name + "_"), name
        assert spec.get("type") and spec.get("description"), name
        assert spec.get("default") == defaults[name], name
        if spec["type"] == "list":
            assert spec.get("elements"), name


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_internal_variables_are_prefixed(role):
    for path in (role / "vars").glob("*.yml"):
        for name in load(path):
            assert name.startswith("__%s_" % role.name), "%s: %s" % (path.name, name)


# Roles that the others use through tasks_from entry points and that refuse to run on their own. Their names follow
# Galaxy's role-name rule (no leading underscore), so that Galaxy's import lints them like every other role.
INTERNAL = [role for role in ROLES if role.name in ("python_env",)]


def test_the_internal_roles_exist():
    assert [role.name for role in INTERNAL] == ["python_env"]


@pytest.mark.parametrize("role", INTERNAL, ids=lambda p: p.name)
def test_internal_roles_refuse_direct_use_and_take_prefixed_arguments(role):
    specs = load(role / "meta" / "argument_specs.yml")["argument_specs"]
    assert specs["main"]["options"] == {} and load(role / "defaults" / "main.yml") == {}
    tasks = load(role / "tasks" / "main.yml")
    assert [next(iter(set(t) - {"name"})) for t in tasks] == ["ansible.builtin.fail"]
    for entry, spec in specs.items():
        if entry != "main":
            assert (role / "tasks" / ("%s.yml" % entry)).exists(), entry
            for name, option in spec["options"].items():
                assert name.startswith(role.name + "_") and option.get("type") and option.get("description"), name
