"""The spark role refuses bad settings with one message naming the variable, before it reads or changes any host. The
checks run on the Ansible host alone: the hosts are unreachable addresses, so a check that let a host through fails
here instead of touching this machine. The whole cluster runs in the molecule scenario spark."""

from __future__ import annotations

import json
import subprocess

import pytest

from simnode import UNREACHABLE_NODES, ansible_env, expose_collection

expose_collection()

INVENTORY = """
spark_masters:
  hosts: %(masters)s
gpu_nodes:
  hosts:
    gpu01: {}
    gpu02: %(gpu02)s
""" + UNREACHABLE_NODES.replace("%", "%%")

PLAYBOOK = """
- name: A Spark cluster
  hosts: spark_masters:gpu_nodes
  gather_facts: false
  roles:
    - role: accelops.gpu.spark
"""

GOOD = {"spark_auth_secret": "a-secret-of-some-length"}


@pytest.mark.parametrize("extra, gpu02, masters, message", [
    ({"spark_executor_gpus": -1}, {}, "{spark01: {}}",
     "spark_executor_gpus must be a whole number of GPUs of 1 or more, got -1"),
    ({"spark_executor_gpus": "two"}, {}, "{spark01: {}}", "spark_executor_gpus must be a whole number"),
    ({"spark_executor_gpus": 1.5}, {}, "{spark01: {}}", "spark_executor_gpus must be a whole number"),
    ({"spark_task_gpus": 0}, {}, "{spark01: {}}", "spark_task_gpus must be a number of GPUs above 0"),
    ({"spark_task_gpus": 0.75}, {}, "{spark01: {}}", "Spark refuses 0.5 < amount < 1"),
    ({"spark_task_gpus": 2}, {}, "{spark01: {}}", "spark_task_gpus (2) must not exceed spark_executor_gpus (1)"),
    ({}, {}, "{}", "the group 'spark_masters' (spark_master_group) must hold one host, the master; it holds none"),
    ({}, {}, "{spark01: {}, spark02: {}}", "must hold one host, the master; it holds 'spark01', 'spark02'"),
    ({"spark_auth_secret": ""}, {}, "{spark01: {}}", "spark_auth_secret must be set"),
    ({"spark_auth_secret": "short"}, {}, "{spark01: {}}", "spark_auth_secret must be 16 to 1024 printable ASCII"),
    ({"spark_auth_secret": "a secret with spaces in it"}, {}, "{spark01: {}}", "(not shown: it is a secret)"),
    ({"spark_auth_secret": "a-secret-of-some-length\\u00"}, {}, "{spark01: {}}", "without spaces or backslashes"),
    ({"spark_version": "latest"}, {}, "{spark01: {}}", "spark_version must be a pyspark release such as 4.3.0"),
    ({"spark_master_port": 8080}, {}, "{spark01: {}}",
     "spark_master_port and spark_master_webui_port must be different"),
    ({}, {"spark_worker_port": 70000}, "{spark01: {}}", "spark_worker_port must be a port from 1 to 65535, got 70000"),
    ({}, {"spark_bind_address": "0.0.0.0\nspark.x"}, "{spark01: {}}", "spark_bind_address"),
    ({}, {"spark_bind_address": "0.0.0.0"}, "{spark01: {}}", "spark_bind_address must be a host name or an IPv4"),
    ({}, {"spark_bind_address": "::1"}, "{spark01: {}}", "no IPv6 address"),
    ({"spark_gpu_exclude": "3"}, {}, "{spark01: {}}", "spark_gpu_exclude must be a list of GPU indexes"),
    ({"spark_gpu_exclude": ["3;rm"]}, {}, "{spark01: {}}", "spark_gpu_exclude must be a list of GPU indexes"),
    ({"spark_worker_memory": "lots"}, {}, "{spark01: {}}", "spark_worker_memory must be an amount from 1m to 2047t"),
    ({"spark_worker_cores": 0}, {}, "{spark01: {}}", "spark_worker_cores must be a number of cores of 1 or more"),
    ({"spark_index_url": "", "spark_find_links": []}, {}, "{spark01: {}}", "pip has nowhere to install pyspark from"),
    ({"spark_find_links": ["http://x/ --trusted-host y"]}, {}, "{spark01: {}}", "spark_find_links"),
    ({"spark_java_package": "openjdk-*"}, {}, "{spark01: {}}", "spark_java_package must be the name of a Debian"),
    ({"spark_index_url": ["https://pypi.org/simple"]}, {}, "{spark01: {}}", "spark_index_url must be one index URL"),
])
def test_bad_settings_are_refused_before_any_host_is_read(tmp_path, extra, gpu02, masters, message):
    (tmp_path / "inventory.yml").write_text(INVENTORY % {"masters": masters, "gpu02": json.dumps(gpu02)})
    (tmp_path / "spark.yml").write_text(PLAYBOOK)
    run = subprocess.run(["ansible-playbook", "-i", "inventory.yml", "spark.yml", "-e", json.dumps({**GOOD, **extra})],
                         cwd=tmp_path, env=ansible_env(), capture_output=True, text=True, check=False)
    out = (run.stdout + run.stderr).replace("\\n", "\n").replace('\\"', '"').replace("\n", " ")
    assert run.returncode == 2, out[-3000:]
    assert message in " ".join(out.split()), out[-3000:]
    assert "Nothing was changed." in out
    # The checks come first: no host was read (the facts are gathered after them).
    assert "Gather the facts this role needs" not in out, out[-3000:]
    # The secret is never shown, not even when it is the problem.
    secret = {**GOOD, **extra}["spark_auth_secret"]
    assert not secret or len(secret) < 8 or secret not in out
