"""Every example of the documentation (each plugin's EXAMPLES, README.md's plays) runs when pasted: it shows the
tasks that make what it uses, and tests/examples/run_examples.py runs them all in one ansible-playbook run against
the fake NVML, except the few its SETUP lists with the reason each cannot run here."""

from __future__ import annotations

import pytest
import run_examples
import yaml

EXAMPLES = run_examples.collect()


def test_examples_are_found():
    keys = {example["key"] for example in EXAMPLES}
    assert {"plugins/modules/gpu_facts.py", "plugins/filter/gpu_summary.py", "README.md#1"} <= keys
    assert len(keys) == len({run_examples.host_name(key) for key in keys})


@pytest.mark.parametrize("example", EXAMPLES, ids=[example["key"] for example in EXAMPLES])
def test_an_example_reads_only_what_it_makes(example):
    assert run_examples.undefined_names(yaml.safe_load(example["text"])) == []


def test_every_exception_is_an_example_with_its_reason():
    keys = {example["key"] for example in EXAMPLES}
    assert sorted(set(run_examples.SETUP) - keys) == []
    for key, setup in run_examples.SETUP.items():
        reason = setup.get("skip") or setup.get("check") or setup.get("why")
        assert isinstance(reason, str) and len(reason) > 10, key
        assert set(setup) <= {"skip", "check", "why", "paths", "fixture", "fixture_edit", "fabric", "programs",
                              "alone"}, key


# Modules whose examples run here as they stand: they read, or change only the fake NVML's GPUs. The examples run as
# root on the machine that runs the tests: a module that writes anything else (files under /etc, services) must be in
# SETUP, skipped, in check mode or with its paths moved, so that a new module's example never changes this machine.
RUN_HERE = {"gpu_config", "gpu_facts", "gpu_health", "gpu_mig", "ib_facts", "node_probe"}


def test_a_module_example_run_here_changes_only_the_fake_gpus():
    modules = {example["key"] for example in EXAMPLES if example["key"].startswith("plugins/modules/")}
    assert modules, "no module example found"
    unlisted = sorted(key for key in modules if key not in run_examples.SETUP
                      and key.rsplit("/", 1)[1].removesuffix(".py") not in RUN_HERE)
    assert unlisted == [], "a module example that would run on this machine as it stands; list it in SETUP"


def test_the_readme_holds_plays_and_one_inventory():
    blocks = run_examples.readme_blocks()
    plays = [block for block in blocks if isinstance(block, list)]
    others = [block for block in blocks if not isinstance(block, list)]
    assert plays and all(set(play) <= {"name", "hosts", "tasks"} for block in plays for play in block)
    assert all(len(block) == 1 for block in plays)
    assert [sorted(block) for block in others] == [["all"]]


def test_the_examples_run(fake_nvml_lib, tmp_path):
    returncode, output, failed = run_examples.run_examples(tmp_path)
    assert failed == [], output[-8000:]
    assert returncode == 0, output[-8000:]
