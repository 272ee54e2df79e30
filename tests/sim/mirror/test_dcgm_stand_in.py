"""The test mirror's stand-ins for dcgmi and dcgm-exporter (cudamirror/dcgm_stand_in.py), run as the packages install
them (under their own names) against the fake libnvidia-ml.so.1 and its fixtures."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

STAND_IN = Path(__file__).resolve().parent / "cudamirror" / "dcgm_stand_in.py"
FIXTURES = Path(__file__).resolve().parents[1] / "nvml" / "fixtures"


@pytest.fixture
def tool(tmp_path, fake_nvml_lib):
    """tool(name, *args, fixture=..., extra=[lines]) -> CompletedProcess of the stand-in called NAME."""

    def call(name, *args, fixture="dgx-h100", extra=(), wait=True):
        path = tmp_path / name
        shutil.copyfile(STAND_IN, path)
        conf = tmp_path / "nvml.conf"
        conf.write_text((FIXTURES / ("%s.conf" % fixture)).read_text() + "".join(line + "\n" for line in extra))
        env = dict(os.environ, FAKE_NVML_FIXTURE=str(conf), LD_LIBRARY_PATH=str(fake_nvml_lib.parent))
        command = [sys.executable, str(path), *args]
        if not wait:
            return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=30)

    return call


def results(stdout):
    document = json.loads(stdout)
    assert document["metadata"]["version"] == "4.2.3"
    [category] = document["DCGM Diagnostic"]["test_categories"]
    [test] = category["tests"]
    assert (category["category"], test["name"]) == ("Deployment", "software")
    return test["results"], test["test_summary"]["status"]


def test_diag_passes_every_gpu_of_a_healthy_node(tool):
    done = tool("dcgmi", "diag", "-r", "1", "-j")
    assert done.returncode == 0, done.stderr
    gpus, summary = results(done.stdout)
    assert [(gpu["entity_id"], gpu["status"]) for gpu in gpus] == [(index, "Pass") for index in range(8)]
    assert summary == "Pass"


def test_diag_fails_persistence_mode_off_and_a_pending_row_remap_per_gpu(tool):
    done = tool("dcgmi", "diag", "-r", "1", "-j", extra=["gpu.3.persistence_mode=0", "gpu.5.remapped.pending=1"])
    assert done.returncode == 226
    gpus, summary = results(done.stdout)
    assert summary == "Fail"
    failed = {gpu["entity_id"]: [w["warning"] for w in gpu["warnings"]] for gpu in gpus if gpu["status"] == "Fail"}
    assert list(failed) == [3, 5]
    assert failed[3][0].startswith("Persistence Mode: Persistence mode for GPU 3 is disabled.")
    assert failed[5][0].startswith("Page Retirement/Row Remap: GPU 5 has uncorrectable memory errors")


def test_diag_fails_a_lost_gpu_and_errs_without_nvml(tool):
    lost = tool("dcgmi", "diag", "-r", "1", "-j", fixture="gpu-lost")
    assert lost.returncode == 226
    gpus = results(lost.stdout)[0]
    assert [gpu["entity_id"] for gpu in gpus if gpu["status"] == "Fail"] == [2]
    down = tool("dcgmi", "diag", "-r", "1", "-j", fixture="driver-not-loaded")
    assert down.returncode == 1
    assert down.stdout == ""
    assert "Unable to complete diagnostic" in down.stderr


def test_dcgmi_refuses_what_it_does_not_know(tool):
    assert tool("dcgmi", "diag", "-r", "3").returncode == 1
    assert tool("dcgmi", "discovery", "-l").returncode == 1


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def scrape(port, server):
    for _attempt in range(100):
        try:
            return urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read().decode()
        except OSError:
            time.sleep(0.05)
    return pytest.fail("the stand-in did not answer: %s" % server.stderr.read())


def test_exporter_serves_the_counters_it_is_given_per_gpu(tool, tmp_path):
    counters = tmp_path / "counters.csv"
    counters.write_text("# DCGM FIELD, type, help\nDCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
                        "DCGM_FI_DEV_SM_CLOCK, gauge, SM clock.\n")
    port = free_port()
    server = tool("dcgm-exporter", "-a", "127.0.0.1:%d" % port, "-f", str(counters), "-r", "localhost:5555",
                  extra=["gpu.0.temperature_c=71"], wait=False)
    try:
        text = scrape(port, server)
    finally:
        server.kill()
        server.wait()
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert len(lines) == 8
    assert all(line.startswith("DCGM_FI_DEV_GPU_TEMP{") for line in lines)
    assert lines[0].startswith('DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-')
    assert 'modelName="NVIDIA H100 80GB HBM3"' in lines[0]
    assert lines[0].endswith("} 71")


def test_exporter_leaves_out_a_lost_gpu_and_serves_the_others(tool, tmp_path):
    counters = tmp_path / "counters.csv"
    counters.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n")
    port = free_port()
    server = tool("dcgm-exporter", "-a", "127.0.0.1:%d" % port, "-f", str(counters), fixture="gpu-lost", wait=False)
    try:
        text = scrape(port, server)
    finally:
        server.kill()
        server.wait()
    gpus = [line.split('gpu="')[1].split('"')[0] for line in text.splitlines() if not line.startswith("#")]
    assert gpus == ["0", "1", "3"]


def test_exporter_refuses_an_unknown_flag(tool):
    done = tool("dcgm-exporter", "--kubernetes", "true")
    assert done.returncode == 2
    assert "unknown argument --kubernetes" in done.stderr
