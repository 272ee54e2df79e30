"""The spark role refuses bad settings with one message naming the variable, before it reads or changes any host. The
checks run on the Ansible host alone: the hosts are unreachable addresses, so a check that let a host through fails
here instead of touching this machine. The whole cluster runs in the molecule scenario spark."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from simnode import ROOT, UNREACHABLE_NODES, ansible_env, expose_collection

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
    # A jar that runs inside every executor, unchecked.
    ({"spark_rapids_jar_url": "https://mirror.example/rapids-4-spark_2.13-25.10.0.jar"}, {}, "{spark01: {}}",
     "spark_rapids_jar_sha256 must be the jar's SHA-256 as 64 hexadecimal digits, required with spark_rapids_jar_url"),
    ({"spark_executor_gpus": -1}, {}, "{spark01: {}}",
     "spark_executor_gpus must be a whole number of GPUs of 1 or more, got -1"),
    ({"spark_executor_gpus": "two"}, {}, "{spark01: {}}", "spark_executor_gpus must be a whole number"),
    ({"spark_executor_gpus": 1.5}, {}, "{spark01: {}}", "spark_executor_gpus must be a whole number"),
    ({"spark_task_gpus": 0}, {}, "{spark01: {}}", "spark_task_gpus must be a number of GPUs above 0"),
    ({"spark_task_gpus": 0.75}, {}, "{spark01: {}}", "Spark refuses 0.5 < amount < 1"),
    ({"spark_task_gpus": 2}, {}, "{spark01: {}}", "spark_task_gpus (2) must not exceed spark_executor_gpus (1)"),
    ({}, {}, "{}", "the group 'spark_masters' (spark_master_group) must hold one host, the master; it holds none"),
    ({}, {}, "{spark01: {}, spark02: {}}", "must hold one host, the master; it holds 'spark01', 'spark02'"),
    ({"spark_worker_group": "gpu_node"}, {}, "{spark01: {}}", "the group 'gpu_node' (spark_worker_group) holds no"),
    ({"spark_auth_secret": ""}, {}, "{spark01: {}}", "spark_auth_secret must be set"),
    ({"spark_auth_secret": "short"}, {}, "{spark01: {}}", "spark_auth_secret must be 16 to 1024 printable ASCII"),
    ({"spark_auth_secret": "a secret with spaces in it"}, {}, "{spark01: {}}", "(not shown: it is a secret)"),
    ({"spark_auth_secret": "a-secret-of-some-length\\u00"}, {}, "{spark01: {}}", "without spaces or backslashes"),
    ({"spark_version": "latest"}, {}, "{spark01: {}}", "spark_version must be a pyspark release such as 4.3.0"),
    ({"spark_master_port": 8080}, {}, "{spark01: {}}",
     "spark_master_port and spark_master_webui_port must be different"),
    ({}, {"spark_worker_port": 70000}, "{spark01: {}}", "spark_worker_port must be a port from 1024 to 65535"),
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


VALIDATE = """
- name: Validate the Spark cluster
  hosts: spark_masters:gpu_nodes
  gather_facts: false
  tasks:
    - name: Run a GPU job on the Spark cluster
      ansible.builtin.include_role:
        name: accelops.gpu.spark
        tasks_from: validate
"""


@pytest.mark.parametrize("extra, message", [
    ({"spark_validate_conf": {"spark.executor.cores": "2\nspark.authenticate=false"}},
     "spark_validate_conf must map Spark settings (spark.*) to one printable line each"),
    ({"spark_validate_conf": {"--master": "local"}}, "spark_validate_conf must map Spark settings"),
    ({"spark_validate_conf": "spark.executor.cores=2"}, "spark_validate_conf"),
    ({"spark_validate_tasks": "many"}, "spark_validate_tasks"),
    # The job sent to another master, or without the cluster's authentication, or its driver (and GPU-CHECK line)
    # moved onto a worker.
    ({"spark_validate_conf": {"spark.master": "spark://elsewhere.example:7077"}}, "none of spark.master"),
    ({"spark_validate_conf": {"spark.remote": "sc://elsewhere.example"}}, "none of spark.master"),
    ({"spark_validate_conf": {"spark.authenticate": "false"}}, "none of spark.master"),
    ({"spark_validate_conf": {"spark.authenticate.secret": "another-secret-here"}}, "none of spark.master"),
    ({"spark_validate_conf": {"spark.submit.deployMode": "cluster"}}, "none of spark.master"),
    ({"spark_validate_tasks": -1}, "spark_validate_tasks must be a task count from 0 (two per worker) to 9999, got -1"),
    ({"spark_validate_tasks": 100000000}, "spark_validate_tasks must be a task count"),
    # timeout 0 is no limit at all.
    ({"spark_validate_timeout": 0}, "spark_validate_timeout must be seconds from 10 to 99999, got 0"),
    ({"spark_validate_timeout": -5}, "spark_validate_timeout must be seconds from 10 to 99999, got -5"),
])
def test_bad_validation_settings_run_nothing(tmp_path, extra, message):
    (tmp_path / "inventory.yml").write_text(INVENTORY % {"masters": "{spark01: {}}", "gpu02": "{}"})
    (tmp_path / "validate.yml").write_text(VALIDATE)
    run = subprocess.run(["ansible-playbook", "-i", "inventory.yml", "validate.yml", "--limit", "spark01",
                          "-e", json.dumps({**GOOD, **extra})],
                         cwd=tmp_path, env=ansible_env(), capture_output=True, text=True, check=False)
    out = " ".join((run.stdout + run.stderr).replace("\\n", "\n").replace('\\"', '"').split())
    assert run.returncode == 2, out[-3000:]
    assert message in out, out[-3000:]
    # Refused before the job was put in place or run.
    assert "accelops.gpu.spark : Put the validation job in place" not in out, out[-3000:]
    assert "accelops.gpu.spark : Run a GPU job" not in out, out[-3000:]
    # A value given to the job may be a secret: the refusal names the settings, never their values.
    assert "another-secret-here" not in out, out[-3000:]


# The role's files as it writes them for each host, rendered on this machine: its own settings check (preflight.yml,
# with the facts of a Debian host, so that it reads none), then its templates with its variables, into a folder.
RENDER = """
- name: The spark role's files for each host, rendered here
  hosts: spark_masters:gpu_nodes
  gather_facts: false
  vars: %(play_vars)s
  tasks:
    - name: Take the facts the role reads as a Debian host's
      ansible.builtin.set_fact:
        ansible_distribution: Debian
        ansible_distribution_major_version: "12"
        ansible_os_family: Debian
        ansible_python: {executable: /usr/bin/python3}
        cacheable: true
    - name: Check the settings as the role does
      ansible.builtin.include_role:
        name: accelops.gpu.spark
        tasks_from: preflight.yml
        public: true
    - name: Write the role's files here
      ansible.builtin.template:
        src: %(templates)s/{{ item }}.j2
        dest: %(out)s/{{ inventory_hostname }}/{{ item }}
        mode: "0644"
      loop: "{{ ['spark-defaults.conf'] + ['spark-master.service'] * __spark_is_master
                + ['spark-worker.service'] * __spark_is_worker }}"
      vars:
        # What the discovery script printed on the worker.
        __spark_found: {rc: 0, stdout: %(found)s, stderr: ""}
"""

LOCAL = """all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: %s
""" % sys.executable


def render(tmp_path, inventory, extra=None, play_vars=None, gpus=("0", "1")):
    """{host: {file name: text}} of the role's files, as it would write them with these settings, on workers whose
    discovery script finds these GPUs."""
    out = tmp_path / "out"
    for host in ("spark01", "gpu01", "node1"):
        (out / host).mkdir(parents=True)
    (tmp_path / "inventory.yml").write_text(inventory + LOCAL)
    (tmp_path / "render.yml").write_text(RENDER % {
        "play_vars": json.dumps(play_vars or {}), "templates": ROOT / "roles" / "spark" / "templates", "out": out,
        "found": json.dumps(json.dumps({"name": "gpu", "addresses": list(gpus)}))})
    run = subprocess.run(["ansible-playbook", "-i", "inventory.yml", "render.yml",
                          "-e", json.dumps({**GOOD, **(extra or {})})],
                         cwd=tmp_path, env=ansible_env(), capture_output=True, text=True, check=False)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    return {host.name: {path.name: path.read_text() for path in host.iterdir()} for host in out.iterdir()
            if any(host.iterdir())}


def setting(text, key):
    return [line.split(None, 1)[1] for line in text.splitlines() if line.split(None, 1)[:1] == [key]]


def test_the_files_of_a_master_and_a_worker(tmp_path):
    files = render(tmp_path, "spark_masters: {hosts: {spark01: {spark_bind_address: 10.0.0.10}}}\n"
                             "gpu_nodes: {hosts: {gpu01: {spark_bind_address: 10.0.0.11}}}\n")
    assert sorted(files["spark01"]) == ["spark-defaults.conf", "spark-master.service"]
    assert sorted(files["gpu01"]) == ["spark-defaults.conf", "spark-worker.service"]
    for host in ("spark01", "gpu01"):
        assert setting(files[host]["spark-defaults.conf"], "spark.master") == ["spark://10.0.0.10:7077"]
        assert setting(files[host]["spark-defaults.conf"], "spark.authenticate.secret") == [GOOD["spark_auth_secret"]]
    assert "--host 10.0.0.10 --port 7077 --webui-port 8080\n" in files["spark01"]["spark-master.service"]
    assert " --host 10.0.0.11 --port 7078 " in files["gpu01"]["spark-worker.service"]
    assert files["gpu01"]["spark-worker.service"].count("spark://10.0.0.10:7077\n") == 1


def test_the_executors_gpus_are_written_as_the_whole_number_spark_reads(tmp_path):
    """Spark reads spark.executor.resource.gpu.amount as an int: 2.0 there fails every application at its start."""
    files = render(tmp_path, "spark_masters: {hosts: {spark01: {}}}\ngpu_nodes: {hosts: {gpu01: {}}}\n",
                   {"spark_executor_gpus": 2.0, "spark_task_gpus": "0.50"})
    for host in ("spark01", "gpu01"):
        assert setting(files[host]["spark-defaults.conf"], "spark.executor.resource.gpu.amount") == ["2"]
        assert setting(files[host]["spark-defaults.conf"], "spark.task.resource.gpu.amount") == ["0.50"]


@pytest.mark.parametrize("inventory, play_vars", [
    # One host for both, its address set for the play (or as the role's parameter): not in the master's hostvars.
    ("spark_masters: {hosts: {node1: {}}}\ngpu_nodes: {hosts: {node1: {}}}\n",
     {"spark_bind_address": "10.9.9.9", "spark_master_port": 7177}),
    ("spark_masters: {hosts: {spark01: {}}}\ngpu_nodes: {hosts: {gpu01: {}}}\n",
     {"spark_bind_address": "10.9.9.9", "spark_master_port": 7177}),
    # The master's own address in the inventory, the worker's too.
    ("spark_masters: {hosts: {spark01: {spark_bind_address: 10.9.9.9, spark_master_port: 7177}}}\n"
     "gpu_nodes: {hosts: {gpu01: {spark_bind_address: 10.0.0.11}}}\n", {}),
])
def test_everyone_reaches_the_master_where_it_listens(tmp_path, inventory, play_vars):
    files = render(tmp_path, inventory, play_vars=play_vars)
    master = next(host for host in files if "spark-master.service" in files[host])
    assert "--host 10.9.9.9 --port 7177 " in files[master]["spark-master.service"]
    for host in files:
        assert setting(files[host]["spark-defaults.conf"], "spark.master") == ["spark://10.9.9.9:7177"]
        if "spark-worker.service" in files[host]:
            assert files[host]["spark-worker.service"].count(" spark://10.9.9.9:7177\n") == 1


def test_another_set_of_gpus_of_the_same_number_changes_the_workers_configuration(tmp_path):
    """A worker reads its GPUs once, at its start: spark_gpu_exclude or spark_gpu_mig changed, or MIG devices made
    anew, must restart it (the role restarts a worker whose spark-defaults.conf changed) also when the number stays."""
    inventory = "spark_masters: {hosts: {spark01: {}}}\ngpu_nodes: {hosts: {gpu01: {}}}\n"
    before = render(tmp_path / "before", inventory, gpus=["0", "1", "2"])
    after = render(tmp_path / "after", inventory, gpus=["0", "1", "3"])
    assert setting(after["gpu01"]["spark-defaults.conf"], "spark.worker.resource.gpu.amount") == ["3"]
    assert before["gpu01"]["spark-defaults.conf"] != after["gpu01"]["spark-defaults.conf"]
    assert "# This worker's GPUs, as the discovery script found them through NVML: 0 1 3\n" \
        in after["gpu01"]["spark-defaults.conf"]


def test_the_rapids_jar_goes_on_every_class_path_with_its_plugin_and_nowhere_without_it(tmp_path):
    inventory = "spark_masters: {hosts: {spark01: {}}}\ngpu_nodes: {hosts: {gpu01: {}}}\n"
    jar = "https://mirror.example/maven2/com/nvidia/rapids-4-spark_2.13/25.10.0/rapids-4-spark_2.13-25.10.0.jar"
    files = render(tmp_path / "with", inventory, {"spark_rapids_jar_url": jar, "spark_rapids_jar_sha256": "a" * 64})
    for host in ("spark01", "gpu01"):
        conf = files[host]["spark-defaults.conf"]
        assert setting(conf, "spark.plugins") == ["com.nvidia.spark.SQLPlugin"]
        for key in ("spark.driver.extraClassPath", "spark.executor.extraClassPath"):
            assert setting(conf, key) == ["/opt/accelops-gpu/spark-jars/rapids-4-spark_2.13-25.10.0.jar"]
    files = render(tmp_path / "without", inventory)
    for host in ("spark01", "gpu01"):
        assert "spark.plugins" not in files[host]["spark-defaults.conf"]
        assert "extraClassPath" not in files[host]["spark-defaults.conf"]
