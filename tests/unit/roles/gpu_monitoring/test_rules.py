"""The alert rules shipped with gpu_monitoring (files/accelops-gpu.rules.yml), through Prometheus' own promtool from the
distribution (make units unpacks it under build/): valid rules, every alert fired by rules_test.yml with its labels
and annotations, and each alert saying its severity and what to do."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest
import yaml

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


def test_a_wrong_rule_fails_the_tests(tmp_path):
    """The tests can fail: a GpuLost rule that never fires (== 2) makes promtool say so."""
    broken = tmp_path / "roles" / "gpu_monitoring" / "files"
    broken.mkdir(parents=True)
    (broken / RULES.name).write_text(RULES.read_text().replace("accelops_gpu_lost == 1", "accelops_gpu_lost == 2"))
    where = tmp_path / "tests" / "unit" / "roles" / "gpu_monitoring"
    where.mkdir(parents=True)
    shutil.copy(TESTS, where)
    result = run("test", "rules", TESTS.name, cwd=where)
    assert result.returncode != 0
    assert "alertname: GpuLost" in result.stdout + result.stderr
