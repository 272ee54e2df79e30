"""A dynamic include's own tags select the include alone, not its tasks: each include_tasks in a role's statically
reached task files passes its tags on with apply (or is tagged always and leaves the tags to its parts), so that
--tags ROLE runs what the include holds."""

from __future__ import annotations

import pytest
import yaml

from simnode import ROOT

ROLES = sorted(p.parent.parent for p in ROOT.glob("roles/*/tasks/main.yml"))
ACTIONS = ("ansible.builtin.import_tasks", "import_tasks")
INCLUDES = ("ansible.builtin.include_tasks", "include_tasks")


def tasks_of(items, tags):
    """Each task with the tags it has from its blocks and from the imports that reached it."""
    for task in items or []:
        own = set(tags) | set(task.get("tags") or [])
        if "block" in task:
            for part in ("block", "rescue", "always"):
                yield from tasks_of(task.get(part), own)
        else:
            yield task, own


def includes(role, path, tags, seen):
    if path in seen:
        return
    seen.add(path)
    for task, own in tasks_of(yaml.safe_load(path.read_text()), tags):
        for action in ACTIONS:
            if action in task and "{{" not in str(task[action]):
                name = task[action] if isinstance(task[action], str) else task[action]["file"]
                yield from includes(role, role / "tasks" / name, own, seen)
        for action in INCLUDES:
            if action in task:
                yield path.name, task, own, task[action]


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_includes_pass_their_tags_on(role):
    found = list(includes(role, role / "tasks" / "main.yml", set(), set()))
    for name, task, tags, spec in found:
        if "always" in tags:
            continue
        applied = set(((spec if isinstance(spec, dict) else {}).get("apply") or {}).get("tags") or [])
        assert tags <= applied, "%s: %r has tags %s, applies %s" % (name, task["name"], sorted(tags), sorted(applied))


def test_the_check_sees_includes():
    """The walk reaches the includes of imported files (nvidia_driver's package manager part, in install.yml)."""
    role = ROOT / "roles" / "nvidia_driver"
    walked = includes(role, role / "tasks" / "main.yml", set(), set())
    found = {(name, task["name"]) for name, task, _tags, _spec in walked}
    assert ("install.yml", "Change the packages with the distribution's package manager") in found
