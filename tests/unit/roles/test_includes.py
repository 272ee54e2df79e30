"""A dynamic include's own tags select the include alone, not its tasks (the tags of the blocks and imports around it
do reach them): each include_tasks with tags of its own in a role passes them on with apply (or is tagged always and
leaves the tags to its parts), so that --tags ROLE runs what the include holds."""

from __future__ import annotations

import pytest
import yaml

from simnode import ROOT

ROLES = sorted(p.parent.parent for p in ROOT.glob("roles/*/tasks/main.yml"))
IMPORTS = ("ansible.builtin.import_tasks", "import_tasks")
INCLUDES = ("ansible.builtin.include_tasks", "include_tasks")


def tag_set(tags):
    return {tags} if isinstance(tags, str) else set(tags or [])


def tasks_of(items):
    for task in items or []:
        if "block" in task:
            for part in ("block", "rescue", "always"):
                yield from tasks_of(task.get(part))
        else:
            yield task


def includes(role, path, seen):
    """Every include_tasks of the task files reached from path by imports and by includes of a fixed file name: its
    file, the task and its argument."""
    if path in seen:
        return
    seen.add(path)
    for task in tasks_of(yaml.safe_load(path.read_text())):
        for action in IMPORTS + INCLUDES:
            if action not in task:
                continue
            spec = task[action]
            if action in INCLUDES:
                yield path.name, task, spec
            name = spec if isinstance(spec, str) else spec.get("file", "")
            if "{{" not in name:
                yield from includes(role, role / "tasks" / name, seen)


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_includes_pass_their_tags_on(role):
    for name, task, spec in includes(role, role / "tasks" / "main.yml", set()):
        own = tag_set(task.get("tags"))
        if "always" in own:
            continue
        applied = tag_set(((spec if isinstance(spec, dict) else {}).get("apply") or {}).get("tags"))
        assert own <= applied, "%s: %r has tags %s, applies %s" % (name, task["name"], sorted(own), sorted(applied))


def test_the_check_sees_includes():
    """The walk reaches the includes of imported files (nvidia_driver's package manager part, in install.yml) and of
    included ones (infiniband's bandwidth measurement, in verify.yml, which main.yml includes)."""
    found = set()
    for role in ("nvidia_driver", "infiniband"):
        path = ROOT / "roles" / role
        found |= {(name, task["name"]) for name, task, _spec in includes(path, path / "tasks" / "main.yml", set())}
    assert ("install.yml", "Change the packages with the distribution's package manager") in found
    assert ("verify.yml", "Measure the RDMA bandwidth between two hosts") in found
