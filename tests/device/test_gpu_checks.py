"""tests/device/gpu-checks.sh, the one prepared run for a machine with a real GPU, run here against the fake NVML: every
step answers, the check-mode gpu_config changes nothing, and the results are the files a device machine returns."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from simnode import FAKENVML_DIR, FIXTURES, ROOT, read_fixture


def test_gpu_checks_against_the_fake(fake_nvml_lib, tmp_path):
    fixture = tmp_path / "nvml.conf"
    shutil.copyfile(FIXTURES / "dgx-h100.conf", fixture)
    out = tmp_path / "out"
    env = {**os.environ, "LD_LIBRARY_PATH": str(FAKENVML_DIR), "FAKE_NVML_FIXTURE": str(fixture), "OUT": str(out),
           "PYTHON": sys.executable}
    run = subprocess.run(["bash", str(ROOT / "tests" / "device" / "gpu-checks.sh")], env=env, capture_output=True,
                         text=True, check=False, timeout=300)
    assert run.returncode == 0, run.stderr
    summary = (out / "summary.txt").read_text()
    for step in ("nvml-capture: exit 0", "gpu_facts {}: exit 0", 'gpu_health {"fail_on": "never"}: exit 0',
                 '"_ansible_check_mode": true, "_ansible_diff": true}: exit 0'):
        assert step in summary, summary
    assert "persistence mode before: True; check mode asked for false; after: True; changed (would): True" in summary
    # No torch in this Python: the workload says so, exit 2.
    assert "validate_pytorch: exit 2" in summary
    assert sorted(path.name for path in out.iterdir()) == [
        "captured.conf", "gpu_config_check.json", "gpu_facts.json", "gpu_health.json", "summary.txt",
        "validate_pytorch.json"]  # no nvidia-smi here; on a GPU machine nvidia-smi.txt makes seven of eight
    assert read_fixture(out / "captured.conf")["gpu.7.uuid"] == read_fixture(fixture)["gpu.7.uuid"]
    facts = json.loads((out / "gpu_facts.json").read_text())["ansible_facts"]["nvidia"]
    assert facts["gpu_count"] == 8
    assert json.loads((out / "gpu_config_check.json").read_text())["changed"] is True
    assert fixture.read_bytes() == (FIXTURES / "dgx-h100.conf").read_bytes()  # check mode wrote nothing
