"""playbooks/validate.yml refuses a bad setting of the all-reduce across nodes with one message naming the field,
before it reads any node; without a Slurm controller, or with one node, the all-reduce across nodes is not asked for.
The nodes are unreachable addresses, so a check that let a node through fails here instead of touching this machine.
The validation itself runs in the molecule scenarios frameworks and slurm (the all-reduce across nodes).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from simnode import ROOT, UNREACHABLE_NODES, ansible_env, expose_collection

expose_collection()

INVENTORY = """
gpu_nodes:
  hosts:
    gpu01: {}
    gpu02: {}
slurm_controllers:
  hosts: %(controllers)s
""" + UNREACHABLE_NODES.replace("%", "%%")


def validate(tmp_path, extra, controllers="{ctl: {}}", *more):
    (tmp_path / "inventory.yml").write_text(INVENTORY % {"controllers": controllers})
    run = subprocess.run(
        ["ansible-playbook", "-i", "inventory.yml", "accelops.gpu.validate", "-e", json.dumps(extra), *more],
        cwd=tmp_path, env=ansible_env(), capture_output=True, text=True, check=False)
    return run.returncode, (run.stdout + run.stderr).replace("\\n", "\n").replace('\\"', '"')


@pytest.mark.parametrize("extra, message", [
    ({"validate_multinode_framework": "jax"},
     'validate_multinode_framework must be auto, pytorch or tensorflow, got "jax"'),
    ({"validate_multinode_allreduce_mb": 0},
     'validate_multinode_allreduce_mb must be a size in MiB from 1 to 99999, got "0"'),
    ({"validate_multinode_cpu_ranks": 17}, 'validate_multinode_cpu_ranks must be a rank count from 1 to 16, got "17"'),
    ({"validate_multinode_port": 1023}, 'validate_multinode_port must be a port from 1024 to 60000, got "1023"'),
    ({"validate_multinode_port": "29400\n"}, 'validate_multinode_port must be a port from 1024 to 60000'),
    ({"validate_multinode_timeout": 5}, 'validate_multinode_timeout must be seconds from 10 to 99999, got "5"'),
    ({"validate_multinode_wait": "soon"}, 'validate_multinode_wait must be seconds from 1 to 99999, got "soon"'),
])
def test_bad_settings_are_refused_before_any_node_is_read(tmp_path, extra, message):
    code, out = validate(tmp_path, extra)
    assert code == 2 and message in out, out[-3000:]
    # The check comes first: no node was asked for its GPUs.
    assert "Gather GPU facts through NVML" not in out, out[-3000:]


@pytest.mark.parametrize("extra, controllers, more", [
    ({"validate_multinode_framework": "jax"}, "{}", []),
    ({"validate_multinode_framework": "jax", "validate_multinode": False}, "{ctl: {}}", []),
    ({"validate_multinode_framework": "jax"}, "{ctl: {}}", ["--limit", "gpu01"]),
], ids=["no-controller", "left-out", "one-node"])
def test_the_all_reduce_across_nodes_is_left_out_where_it_cannot_or_should_not_run(
        tmp_path, extra, controllers, more):
    code, out = validate(tmp_path, extra, controllers, *more)
    # The bad setting is never read: the run goes on to the nodes, which cannot be reached.
    assert "validate_multinode_framework must be" not in out, out[-3000:]
    assert "Gather GPU facts through NVML" in out and code == 4, out[-3000:]


@pytest.mark.parametrize("srun_args", [
    "--partition=gpu", ["-p=gpu"], ["--partition=gpu", "--ntasks-per-node=1"], ["--label"], ["--account=ops\n--uid=0"],
    [["--partition=gpu"]], {"partition": "gpu"},
])
def test_bad_srun_options_are_refused_before_any_node_is_read(tmp_path, srun_args):
    code, out = validate(tmp_path, {"validate_multinode_srun_args": srun_args})
    assert code == 2 and "validate_multinode_srun_args must be a list of long srun options" in out, out[-3000:]
    assert "Gather GPU facts through NVML" not in out, out[-3000:]


def test_the_playbook_refuses_the_same_srun_options_as_the_plan():
    import yaml

    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_allreduce

    play = yaml.safe_load((ROOT / "playbooks" / "validate.yml").read_text())[0]
    check = next(task for task in play["tasks"] if task["name"] == "Check the site's own srun options")
    assert tuple(check["vars"]["__validate_srun_own"]) == _slurm_allreduce.SRUN_OWN
    assert check["vars"]["__validate_srun_arg"] == _slurm_allreduce.SRUN_ARG.pattern.replace("(?P<name>", "(")


def test_good_settings_pass_the_checks_and_the_run_goes_on_to_the_nodes(tmp_path):
    code, out = validate(tmp_path, {"validate_multinode_srun_args": ["--partition=gpu", "--account=ml ops"],
                                    "validate_multinode_port": 1024, "validate_multinode_framework": "pytorch"})
    assert "must be" not in out and "Gather GPU facts through NVML" in out and code == 4, out[-3000:]
