"""A role or playbook that reads GPU facts for its own needs never leaves ansible_facts.nvidia narrower than it found
it: the plays after it (the health gate, the fleet report) judge what they find there. Every gpu_facts task in roles/
and playbooks/ either gathers everything (and so sets a whole, fresh picture) or keeps its narrower read to itself
(set_facts: false, with register)."""

from __future__ import annotations

import pytest
import yaml

from simnode import ROOT

ACTIONS = ("accelops.gpu.gpu_facts", "gpu_facts")
FILES = sorted({*ROOT.glob("roles/*/tasks/*.yml"), *ROOT.glob("roles/*/handlers/*.yml"),
                *ROOT.glob("playbooks/*.yml"), *ROOT.glob("playbooks/tasks/*.yml")})


def tasks_of(items):
    """Every task of a task list or playbook, blocks and plays opened."""
    for task in items or []:
        if not isinstance(task, dict):
            continue
        for part in ("block", "rescue", "always", "pre_tasks", "tasks", "post_tasks", "handlers"):
            if part in task:
                yield from tasks_of(task[part])
        yield task


def reads():
    for path in FILES:
        for task in tasks_of(yaml.safe_load(path.read_text())):
            for action in ACTIONS:
                if action in task:
                    yield path.relative_to(ROOT), task, task[action] or {}


def narrowed(subsets):
    """Whether a gather_subset leaves something out (the module's default is [all])."""
    subsets = subsets if isinstance(subsets, list) else [subsets]
    return "all" not in subsets or any(str(s).startswith("!") for s in subsets)


READS = list(reads())


@pytest.mark.parametrize("path, task, args", READS, ids=["%s: %s" % (r[0], r[1].get("name")) for r in READS])
def test_a_narrow_read_keeps_to_itself(path, task, args):
    own = args.get("set_facts", True) is False
    if own:
        assert "register" in task, "%s: %r sets no facts and registers nothing" % (path, task.get("name"))
    elif "gather_subset" in args:
        assert not narrowed(args["gather_subset"]), (
            "%s: %r gathers %s into ansible_facts.nvidia: the plays after it would see a narrower picture (give "
            "set_facts: false and register, or gather everything)" % (path, task.get("name"), args["gather_subset"]))


def test_the_walk_finds_the_reads():
    """The check sees the reads it is about: slurm's and nvidia_driver's own, the facts play's and the report's."""
    found = {(str(path), task.get("name")) for path, task, unused in READS}
    assert ("roles/slurm/tasks/configure.yml", "Gather the GPU facts") in found
    assert ("roles/nvidia_driver/tasks/preflight.yml", "Look at the GPUs, NVSwitches and GPU processes") in found
    assert ("playbooks/report.yml", "Gather GPU facts through NVML") in found
    assert len(READS) >= 15


@pytest.mark.parametrize("subsets, narrow", [
    (["all"], False), ("all", False), (["all", "!topology"], True), (["basic"], True), (["basic", "pci"], True)])
def test_narrowed(subsets, narrow):
    assert narrowed(subsets) is narrow
