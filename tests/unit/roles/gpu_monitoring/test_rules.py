"""The alert rules shipped with gpu_monitoring (files/accelops-gpu.rules.yml), through Prometheus' own promtool from the
distribution (make units unpacks it under build/): valid rules, every alert fired by rules_test.yml with its labels
and annotations, and each alert saying its severity and what to do. The shipped file is the role's template rendered
with the defaults; the role's settings of the idle allocated GPUs' alerts reach the rules it writes."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import yaml
from rolevars import Batch, preflight_task, role_files

from simnode import ansible_env

ROOT = pathlib.Path(__file__).resolve().parents[4]
RULES = ROOT / "roles" / "gpu_monitoring" / "files" / "accelops-gpu.rules.yml"
TESTS = pathlib.Path(__file__).with_name("rules_test.yml")


def promtool():
    for path in (os.environ.get("PROMTOOL"), str(ROOT / "build" / "prometheus" / "usr" / "bin" / "promtool"),
                 shutil.which("promtool")):
        if path and os.access(path, os.X_OK):
            return path
    pytest.fail("promtool is missing: make units unpacks it from Debian's prometheus package under build/prometheus")


def run(*args, cwd=None):
    return subprocess.run([promtool(), *args], capture_output=True, text=True, timeout=120, check=False, cwd=cwd)


def alerts():
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def test_the_rules_are_valid():
    result = run("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: %d rules found" % len(alerts()) in result.stdout


def test_every_alert_fires_as_the_tests_say():
    result = run("test", "rules", TESTS.name, cwd=TESTS.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize("rule", alerts(), ids=lambda rule: rule["alert"])
def test_each_alert_says_how_bad_and_what_to_do(rule):
    assert rule["labels"]["severity"] in ("critical", "warning")
    assert set(rule["annotations"]) == {"summary", "description", "runbook"}
    assert all(text.strip() for text in rule["annotations"].values())


def test_each_alert_is_fired_by_a_test():
    fired = {case["alertname"] for test in yaml.safe_load(TESTS.read_text())["tests"]
             for case in test["alert_rule_test"] if case["exp_alerts"]}
    assert fired == {rule["alert"] for rule in alerts()}


@pytest.mark.parametrize("old, new, alert", [
    # A GpuLost rule that never fires.
    ("accelops_gpu_lost == 1", "accelops_gpu_lost == 2", "GpuLost"),
    # Idle GPUs that no job holds (a process at 3 %; no process at all) taken for a job's.
    ('DCGM_FI_DEV_GPU_UTIL{hpc_job!=""} <', "DCGM_FI_DEV_GPU_UTIL <", "GpuAllocatedIdle"),
    ('accelops_gpu_compute_processes{hpc_job!=""} == 0', "accelops_gpu_compute_processes == 0",
     "GpuAllocatedNoProcess"),
    # A job's GPU without a process reported twice; a GPU at the threshold taken for idle.
    ("\n          unless on(UUID, hpc_job) accelops_gpu_compute_processes == 0", "", "GpuAllocatedIdle"),
    ('{hpc_job!=""} < 5', '{hpc_job!=""} <= 5', "GpuAllocatedIdle"),
    # One alert per GPU where jobs share it.
    ('DCGM_FI_DEV_GPU_UTIL{hpc_job!=""} < 5', 'topk by(UUID) (1, DCGM_FI_DEV_GPU_UTIL{hpc_job!=""}) < 5',
     "GpuAllocatedIdle"),
    # The idle time too short; a job's GPU reported by GpuIdleWhileHeld as well.
    ("hpc_job) accelops_gpu_compute_processes == 0\n        for: 30m",
     "hpc_job) accelops_gpu_compute_processes == 0\n        for: 29m", "GpuAllocatedIdle"),
    ('accelops_gpu_compute_processes{hpc_job=""} > 0', "accelops_gpu_compute_processes > 0", "GpuIdleWhileHeld"),
], ids=["lost", "idle-without-job", "no-process-without-job", "idle-without-process", "threshold", "shared",
        "idle-time", "held-with-job"])
def test_a_wrong_rule_fails_the_tests(tmp_path, old, new, alert):
    """The tests can fail: each change that breaks a rule makes promtool name its alert."""
    assert RULES.read_text().count(old) == 1, old
    broken = tmp_path / "roles" / "gpu_monitoring" / "files"
    broken.mkdir(parents=True)
    (broken / RULES.name).write_text(RULES.read_text().replace(old, new))
    assert run("check", "rules", str(broken / RULES.name)).returncode == 0
    where = tmp_path / "tests" / "unit" / "roles" / "gpu_monitoring"
    where.mkdir(parents=True)
    shutil.copy(TESTS, where)
    result = run("test", "rules", TESTS.name, cwd=where)
    assert result.returncode != 0
    assert "alertname: %s" % alert in result.stdout + result.stderr


def generator():
    spec = importlib.util.spec_from_file_location("alert_rules", ROOT / "tests" / "alert_rules.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_rules_are_the_template_with_the_defaults(capsys):
    assert generator().main(["--check"]) == 0, capsys.readouterr().out


def series(name, labels, values):
    return {"series": "%s{%s}" % (name, ", ".join('%s="%s"' % item for item in labels.items())), "values": values}


def test_the_role_settings_reach_the_rules(tmp_path):
    """Rendered with a threshold of 20 % and 10 minutes: a job's GPU at 15 % fires after 10 minutes, not before; one
    without a process too; the annotations say the settings."""
    text = generator().render({"gpu_monitoring_idle_util_percent": 20, "gpu_monitoring_idle_for": "10m"})
    (tmp_path / RULES.name).write_text(text)
    rules = {rule["alert"]: rule for group in yaml.safe_load(text)["groups"] for rule in group["rules"]}
    assert rules["GpuAllocatedIdle"]["for"] == rules["GpuAllocatedNoProcess"]["for"] == "10m"
    assert rules["GpuIdleWhileHeld"]["for"] == "30m"
    low = {"Hostname": "n1", "gpu": "0", "UUID": "GPU-0", "hpc_job": "7"}
    unused = {"Hostname": "n1", "gpu": "1", "UUID": "GPU-1", "hpc_job": "7"}

    def runbook(alert):
        return rules[alert]["annotations"]["runbook"].replace("{{ $labels.hpc_job }}", "7")

    tests = {"rule_files": [RULES.name], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [series("DCGM_FI_DEV_GPU_UTIL", low, "15x20"),
                         series("accelops_gpu_compute_processes", low, "1x20"),
                         series("DCGM_FI_DEV_GPU_UTIL", unused, "0x20"),
                         series("accelops_gpu_compute_processes", unused, "0x20")],
        "alert_rule_test": [
            {"eval_time": "9m", "alertname": "GpuAllocatedIdle", "exp_alerts": []},
            {"eval_time": "9m", "alertname": "GpuAllocatedNoProcess", "exp_alerts": []},
            {"eval_time": "10m", "alertname": "GpuAllocatedIdle", "exp_alerts": [{
                "exp_labels": {"severity": "warning", **low},
                "exp_annotations": {
                    "summary": "Job 7 leaves GPU 0 of n1 idle",
                    "description": "GPU 0 (GPU-0) of n1, held by Slurm job 7, has been below 20 % utilisation for 10m "
                                   "(now 15 %).",
                    "runbook": runbook("GpuAllocatedIdle")}}]},
            {"eval_time": "10m", "alertname": "GpuAllocatedNoProcess", "exp_alerts": [{
                "exp_labels": {"severity": "warning", **unused},
                "exp_annotations": {
                    "summary": "Job 7 holds GPU 1 of n1 and runs nothing on it",
                    "description": "Slurm job 7 holds GPU 1 (GPU-1) of n1 and has had no compute process on it for "
                                   "10m: the GPU is allocated and unused.",
                    "runbook": runbook("GpuAllocatedNoProcess")}}]}]}]}
    (tmp_path / "idle_test.yml").write_text(yaml.safe_dump(tests, sort_keys=False))
    result = run("test", "rules", "idle_test.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


PREFLIGHT = preflight_task("gpu_monitoring", "Check the alert rules' settings")
BATCH = Batch()
SETTINGS = {
    "defaults": ({}, []),
    "set": ({"gpu_monitoring_idle_util_percent": 100, "gpu_monitoring_idle_for": "2h",
             "gpu_monitoring_rules_dir": "/etc/prometheus/rules.d"}, []),
    "util-0": ({"gpu_monitoring_idle_util_percent": 0}, ["gpu_monitoring_idle_util_percent must be a whole"]),
    "util-101": ({"gpu_monitoring_idle_util_percent": 101}, ["gpu_monitoring_idle_util_percent must be a whole"]),
    "util-text": ({"gpu_monitoring_idle_util_percent": "5\n"}, ["gpu_monitoring_idle_util_percent must be a whole"]),
    "util-bool": ({"gpu_monitoring_idle_util_percent": True}, ["gpu_monitoring_idle_util_percent must be a whole"]),
    "for-no-unit": ({"gpu_monitoring_idle_for": "30"}, ["gpu_monitoring_idle_for must be a Prometheus duration"]),
    "for-zero": ({"gpu_monitoring_idle_for": "0m"}, ["gpu_monitoring_idle_for must be a Prometheus duration"]),
    "for-line": ({"gpu_monitoring_idle_for": "30m\n        labels: {}"},
                 ["gpu_monitoring_idle_for must be a Prometheus duration"]),
    "dir": ({"gpu_monitoring_rules_dir": "rules"}, ["gpu_monitoring_rules_dir must be an absolute directory"]),
    "dir-line": ({"gpu_monitoring_rules_dir": "/etc/x\ny"}, ["gpu_monitoring_rules_dir must be an absolute directory"]),
    "all": ({"gpu_monitoring_idle_util_percent": -1, "gpu_monitoring_idle_for": "soon", "gpu_monitoring_rules_dir": []},
            ["gpu_monitoring_idle_util_percent", "gpu_monitoring_idle_for", "gpu_monitoring_rules_dir"]),
}
KEYS = {name: BATCH.add(role_files("gpu_monitoring"), overrides,
                        [("problems", "{{ __gpu_monitoring_rules_problems }}"),
                         ("message", PREFLIGHT["ansible.builtin.assert"]["fail_msg"])],
                        {"__gpu_monitoring_rules_problems": PREFLIGHT["vars"]["__gpu_monitoring_rules_problems"]})
        for name, (overrides, _expected) in SETTINGS.items()}


@pytest.mark.parametrize("name", SETTINGS)
def test_the_settings_are_checked(name):
    expected = SETTINGS[name][1]
    result = BATCH[KEYS[name]]
    assert PREFLIGHT["ansible.builtin.assert"]["that"] == "__gpu_monitoring_rules_problems | length == 0"
    problems = result["problems"]
    assert isinstance(problems, list), result
    assert len(problems) == len(expected), problems
    for problem, start in zip(problems, expected):
        assert problem.startswith(start), problem
    if expected:
        assert result["message"].endswith(". Nothing was changed.") and "\n" not in result["message"], result


# Two nodes that must never be reached: the rules are written on the controller alone.
INVENTORY = """
gpu_nodes:
  vars: {ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 9, ansible_ssh_timeout: 3}
  hosts: {gpu01: {}, gpu02: {}}
controller:
  hosts:
    localhost: {ansible_connection: local, ansible_python_interpreter: %s}
""" % sys.executable


def write_rules(tmp_path, *options, **settings):
    """The role's tasks/rules.yml on two nodes, as main.yml runs it after the role's checks (the role without its
    meta/: the dependency on nvml_python would reach the nodes). Returns each node's recap."""
    role = tmp_path / "roles" / "gpu_monitoring"
    if not role.exists():
        role.mkdir(parents=True)
        for part in ("defaults", "tasks", "templates", "vars"):
            (role / part).symlink_to(ROOT / "roles" / "gpu_monitoring" / part)
    play = [{"hosts": "gpu_nodes", "gather_facts": False, "tasks": [{"ansible.builtin.include_role": {
        "name": "gpu_monitoring", "tasks_from": "rules.yml"}, "vars": {
        "gpu_monitoring_rules_dir": str(tmp_path / "rules"), "__gpu_monitoring_checked": True, **settings}}]}]
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    result = subprocess.run(["ansible-playbook", "-i", "inventory.yml", "play.yml", *options], cwd=tmp_path,
                            env=ansible_env(ANSIBLE_ROLES_PATH=str(tmp_path / "roles")), capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    recap = result.stdout.split("PLAY RECAP")[1].splitlines()
    return {line.split()[0]: dict(field.split("=") for field in line.split()[2:]) for line in recap if " : " in line}


def test_the_role_writes_the_rules_once_on_the_controller(tmp_path):
    written = tmp_path / "rules" / RULES.name
    recap = write_rules(tmp_path, "--check", gpu_monitoring_idle_for="2h")
    assert recap["gpu01"]["changed"] == "2" and not written.exists()
    recap = write_rules(tmp_path, gpu_monitoring_idle_for="2h")
    # Once, for the first node; no node is reached.
    assert [recap[node]["changed"] for node in ("gpu01", "gpu02")] == ["2", "0"], recap
    assert [recap[node]["unreachable"] for node in ("gpu01", "gpu02")] == ["0", "0"], recap
    text = written.read_text()
    assert text == generator().render({"gpu_monitoring_idle_for": "2h"}, header="Ansible managed")
    assert oct(written.stat().st_mode & 0o777) == "0o644"
    assert write_rules(tmp_path, gpu_monitoring_idle_for="2h")["gpu01"]["changed"] == "0"


BACKEND = preflight_task("gpu_monitoring", "Check the backend and the node's label")
LABELS = {"Hostname": "Hostname", "hostname": "hostname", "host": "host", "list": ["Hostname"], "line": "Hostname\n",
          "number": 1}
LABEL_KEYS = {name: BATCH.add(role_files("gpu_monitoring"), {"gpu_monitoring_hostname_label": value},
                              [("ok", "{{ [%s] | select | list | length == %d }}" % (
                                  ", ".join("(%s)" % that for that in BACKEND["ansible.builtin.assert"]["that"]),
                                  len(BACKEND["ansible.builtin.assert"]["that"]))),
                               ("message", BACKEND["ansible.builtin.assert"]["fail_msg"])])
              for name, value in LABELS.items()}


@pytest.mark.parametrize("name", LABELS)
def test_the_node_label_is_checked_without_argument_specs(name):
    """Run without argument_specs (tasks_from, rolespec_validate: false), a label the exporter refuses would stop it
    after its unit was written: refused before, with the variable's name."""
    result = BATCH[LABEL_KEYS[name]]
    good = name in ("Hostname", "hostname")
    assert result["ok"] is good or result["ok"] == str(good), result
    if not good:
        assert result["message"].startswith("gpu_monitoring_hostname_label must be Hostname or hostname, got "), result
        assert result["message"].endswith(". Nothing was changed.") and "\n" not in result["message"], result
