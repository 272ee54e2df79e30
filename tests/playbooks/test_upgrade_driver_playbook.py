"""playbooks/upgrade_driver.yml refuses bad settings with one message naming the field, before it reads or changes any
node. The checks run on the Ansible host alone: the nodes are unreachable addresses, so a check that let a node through
fails here instead of touching this machine. The whole upgrade runs in the molecule scenario slurm.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from rolevars import Batch

from simnode import ROOT, UNREACHABLE_NODES, ansible_env, expose_collection

expose_collection()

INVENTORY = """
gpu_nodes:
  hosts:
    gpu01: {}
    gpu02: %(gpu02)s
slurm_controllers:
  hosts:
    %(controllers)s
""" + UNREACHABLE_NODES.replace("%", "%%")


@pytest.mark.parametrize("extra, gpu02, controllers, message", [
    ({"upgrade_driver_batch": 0}, {}, "ctl: {}",
     'upgrade_driver_batch must be a node count or a percentage such as 25%, got "0"'),
    ({"upgrade_driver_batch": "150%"}, {}, "ctl: {}", 'upgrade_driver_batch must be a node count'),
    ({"upgrade_driver_batch": "2\nserial: 1"}, {}, "ctl: {}", 'upgrade_driver_batch must be a node count'),
    ({"upgrade_driver_max_fail_percentage": 101}, {}, "ctl: {}",
     'upgrade_driver_max_fail_percentage must be a percentage from 0 to 100, got "101"'),
    # A bad value on a host other than the first is found too.
    ({}, {"upgrade_driver_health_fail_on": "bogus"}, "ctl: {}",
     'upgrade_driver_health_fail_on must be warning or critical, got "bogus"'),
    ({"slurm_health_drain_on": "never"}, {}, "ctl: {}", 'upgrade_driver_health_fail_on must be warning or critical'),
    ({"upgrade_driver_expected_gpus": "eight"}, {}, "ctl: {}", 'upgrade_driver_expected_gpus must be a GPU count'),
    ({"upgrade_driver_validate": "maybe"}, {}, "ctl: {}", 'upgrade_driver_validate must be true or false'),
    ({"upgrade_driver_reboot_tasks": "reboot.yml"}, {}, "ctl: {}",
     'upgrade_driver_reboot_tasks must be empty or the absolute path of a task file'),
    ({"upgrade_driver_reboot_tasks": "/tmp/x\ny.yml"}, {}, "ctl: {}", 'upgrade_driver_reboot_tasks must be empty'),
    ({"upgrade_driver_reboot_tasks": "/no/such/reboot.yml"}, {}, "ctl: {}",
     'upgrade_driver_reboot_tasks: /no/such/reboot.yml is no file on the Ansible host'),
    ({"slurm_maintenance_reason": "x"}, {}, "ctl: {}", 'are set by this playbook for each step'),
    ({"slurm_maintenance_wait": False}, {}, "ctl: {}", 'are set by this playbook for each step'),
    ({}, {"slurm_node_name": "gpu01"}, "ctl: {}", "and each node its own slurm_node_name (got gpu01, gpu01)"),
    ({}, {}, "{}", "The group slurm_controllers must hold one host"),
    ({}, {}, "{ctl: {}, ctl2: {}}", "The group slurm_controllers must hold one host"),
])
def test_bad_settings_are_refused_before_any_node_is_read(tmp_path, extra, gpu02, controllers, message):
    (tmp_path / "inventory.yml").write_text(INVENTORY % {
        "gpu02": json.dumps(gpu02), "controllers": controllers if controllers != "{}" else "{}"})
    if controllers in ("{}", "{ctl: {}, ctl2: {}}"):
        text = (tmp_path / "inventory.yml").read_text().replace("  hosts:\n    %s\n" % controllers,
                                                                "  hosts: %s\n" % controllers)
        (tmp_path / "inventory.yml").write_text(text)
    run = subprocess.run(
        ["ansible-playbook", "-i", "inventory.yml", "accelops.gpu.upgrade_driver", "-e", json.dumps(extra)],
        cwd=tmp_path, env=ansible_env(), capture_output=True, text=True, check=False)
    out = run.stdout + run.stderr
    assert run.returncode == 2, out[-3000:]
    assert message in out.replace("\\n", "\n").replace('\\"', '"'), out[-3000:]
    assert "Nothing was changed." in out
    # The checks come first: the driver role's plan never ran, so no node was read.
    assert "Work out whether the driver would change" not in out, out[-3000:]


K8S = {"upgrade_driver_scheduler": "kubernetes"}


@pytest.mark.parametrize("extra, gpu02, message", [
    ({"upgrade_driver_scheduler": "pbs"}, {}, 'upgrade_driver_scheduler must be slurm or kubernetes, got "pbs"'),
    (K8S, {"kubernetes_node_name": "GPU_02"}, "a Kubernetes node name (got gpu01, GPU_02)"),
    (K8S, {"kubernetes_node_name": 42}, "a Kubernetes node name (got gpu01, 42)"),
    (K8S, {"kubernetes_node_name": "g" * 254}, "a Kubernetes node name (got gpu01, ggg"),
    (K8S, {"kubernetes_node_name": "gpu01"}, "each node its own kubernetes_node_name"),
    (dict(K8S, kubernetes_kubeconfig="/tmp/a\nb"), {},
     "kubernetes_kubectl and kubernetes_kubeconfig paths on one line"),
    (dict(K8S, kubernetes_kubectl=""), {}, "kubernetes_kubectl and kubernetes_kubeconfig paths on one line"),
    (dict(K8S, kubernetes_maintenance_timeout=0), {}, 'kubernetes_maintenance_timeout must be seconds, more than 0'),
    (dict(K8S, kubernetes_maintenance_poll="10s"), {}, 'kubernetes_maintenance_poll must be seconds, more than 0'),
    (dict(K8S, kubernetes_maintenance_evict="maybe"), {}, 'kubernetes_maintenance_evict must be true or false'),
])
def test_bad_kubernetes_settings_are_refused_before_any_node_is_read(tmp_path, extra, gpu02, message):
    # No Slurm controller: a Kubernetes upgrade does not need one.
    (tmp_path / "inventory.yml").write_text((INVENTORY % {"gpu02": json.dumps(gpu02), "controllers": "{}"}).replace(
        "  hosts:\n    {}\n", "  hosts: {}\n"))
    run = subprocess.run(
        ["ansible-playbook", "-i", "inventory.yml", "accelops.gpu.upgrade_driver", "-e", json.dumps(extra)],
        cwd=tmp_path, env=ansible_env(), capture_output=True, text=True, check=False)
    out = (run.stdout + run.stderr).replace("\\n", "\n").replace('\\"', '"').replace("\n", " ")
    assert run.returncode == 2, out[-3000:]
    assert message in out and "Nothing was changed." in out, out[-3000:]
    assert "Work out whether the driver would change" not in out, out[-3000:]


UPGRADE_PLAY = yaml.safe_load((ROOT / "playbooks" / "upgrade_driver.yml").read_text())[1]
WAITS = Batch()


def wait_case(variables):
    return WAITS.add([], variables, [("wait", "{{ __upgrade_driver_wait }}"), ("poll", "{{ __upgrade_driver_poll }}")],
                     task_vars=UPGRADE_PLAY["vars"])


@pytest.mark.parametrize("key, wait, poll", [
    (wait_case({}), 3600, 10),
    (wait_case({"slurm_maintenance_timeout": 900, "slurm_maintenance_poll": 30, "kubernetes_maintenance_timeout": 60}),
     900, 30),
    # A Kubernetes upgrade's wait for NVML's compute processes follows the Kubernetes settings, not Slurm's.
    (wait_case({"upgrade_driver_scheduler": "kubernetes"}), 3600, 10),
    (wait_case({"upgrade_driver_scheduler": "kubernetes", "kubernetes_maintenance_timeout": 600,
                "kubernetes_maintenance_poll": 5, "slurm_maintenance_timeout": 7200, "slurm_maintenance_poll": 0}),
     600, 5),
])
def test_the_wait_for_the_gpus_follows_the_schedulers_settings(key, wait, poll):
    assert WAITS[key] == {"wait": wait, "poll": poll}
