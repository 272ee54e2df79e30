"""playbooks/gpu_waste.yml against a stand-in sacct that prints Slurm 24.11's text (tests/sim/slurm/sacct-24.11.txt)
and records how it was called, and its HTML in a real headless Chromium: printed to PDF, read back with pdftotext,
the figures worked out by hand in tests/unit/plugins/plugin_utils/test__waste.py must be on the page. The real sacct
runs in the molecule scenario slurm."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from simnode import ROOT, ansible_env, expose_collection

expose_collection()

OUT = ROOT / "build" / "gpu-waste"
SACCT = ROOT / "tests" / "sim" / "slurm" / "sacct-24.11.txt"

INVENTORY = """
slurm_controllers:
  hosts:
    ctl: {ansible_connection: local, ansible_python_interpreter: %(python)s}
"""

# Prints the fixture; records its arguments and the environment it was given; fails where told to.
FAKE_SACCT = """#!/bin/sh
printf '%%s\\n' "$@" > "%(work)s/sacct-args"
printf 'TZ=%%s SLURM_TIME_FORMAT=%%s\\n' "$TZ" "$SLURM_TIME_FORMAT" > "%(work)s/sacct-env"
if [ -e "%(work)s/sacct-down" ]; then
  echo "sacct: error: Problem talking to the database: Connection refused" >&2
  exit 1
fi
cat "%(sacct)s"
"""


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("Chromium is not installed: make units installs it (apt-get install chromium poppler-utils)")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    work = tmp_path_factory.mktemp("waste")
    (work / "bin").mkdir()
    sacct = work / "bin" / "sacct"
    sacct.write_text(FAKE_SACCT % {"work": work, "sacct": SACCT})
    sacct.chmod(0o755)
    (work / "inventory.yml").write_text(INVENTORY % {"python": sys.executable})
    (work / "waste.yml").write_text("- name: The report\n  ansible.builtin.import_playbook: accelops.gpu.gpu_waste\n")
    return work


def playbook(work, *extra):
    env = ansible_env(PATH="%s:%s" % (work / "bin", os.environ["PATH"]))
    return subprocess.run(["ansible-playbook", "-i", "inventory.yml", "waste.yml", *extra], cwd=work, env=env,
                          capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def report(work):
    OUT.mkdir(parents=True, exist_ok=True)
    run = playbook(work, "-e", json.dumps({"accelops_gpu_waste_dir": str(OUT), "accelops_gpu_waste_start": "2026-12-01",
                                           "accelops_gpu_waste_end": "2026-12-02T00:00:00",
                                           "accelops_gpu_waste_title": "Simulated <cluster>"}))
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    return run


def test_sacct_is_asked_for_the_window_in_utc(report, work):
    assert (work / "sacct-args").read_text().split("\n")[:-1] == [
        "--allusers", "--parsable2", "--noheader", "--noconvert", "--starttime", "2026-12-01T00:00:00", "--endtime",
        "2026-12-02T00:00:00", "--format",
        "JobID,User,Account,State,Start,End,ElapsedRaw,NTasks,AllocTRES,TRESUsageInAve"]
    assert (work / "sacct-env").read_text() == "TZ=UTC SLURM_TIME_FORMAT=standard\n"
    assert "GPU waste report: %s/gpu-waste.html" % OUT in report.stdout
    assert "6 GPU jobs, 18.5 GPU-hours, 6.5 idle, 10.0 not measured" in report.stdout


def test_the_json_has_the_figures_of_the_accounting_jobs(report):
    model = json.loads((OUT / "gpu-waste.json").read_text())
    jobs = {job["job"]: job for job in model["jobs"]}
    assert (jobs["41"]["gpu_hours"], jobs["41"]["mean_utilization"], jobs["41"]["gpu_hours_idle"]) == (4.0, 15.0, 3.4)
    assert (jobs["42"]["gpu_hours"], jobs["42"]["mean_utilization"], jobs["42"]["gpu_hours_idle"]) == (2.0, 5.0, 1.9)
    assert jobs["45"]["mean_utilization"] is None
    assert (model["summary"]["gpu_hours"], model["summary"]["mean_utilization"]) == (18.5, 23.53)


def test_chromium_renders_the_figures_and_the_escaped_names(report):
    browser = chromium()
    if not shutil.which("pdftotext"):
        pytest.fail("pdftotext is not installed: make units installs it (apt-get install poppler-utils)")
    page = (OUT / "gpu-waste.html").as_uri()
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--user-data-dir=%s" % (OUT / "chromium-profile")]
    pdf = OUT / "gpu-waste.pdf"
    subprocess.run([*flags, "--no-pdf-header-footer", "--print-to-pdf=%s" % pdf, page],
                   check=True, capture_output=True, timeout=120)
    dom = subprocess.run([*flags, "--dump-dom", page], check=True, capture_output=True, text=True, timeout=120).stdout
    # The user name that is markup stayed text: no img element in what Chromium built.
    assert "<img" not in dom and "&lt;img src=x onerror=alert(1)&gt;" in dom
    words = " ".join(subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True,
                                    text=True).stdout.split())
    assert "Simulated <cluster>" in words
    assert "<img src=x onerror=alert(1)>" in words and "ops&co" in words
    # Totals, then jobs 41 and 42: 18.50 GPU-hours, 6.50 idle, 23.5 %; 4.00 / 15.0 % / 3.40; 2.00 / 5.0 % / 1.90.
    assert re.search(r"18\.50 6\.50 23\.5 %", words), words[:2000]
    assert re.search(r"\b41 alice physics COMPLETED .* 4\.00 15\.0 % 3\.40", words), words
    assert re.search(r"\b42 bob physics COMPLETED .* 2\.00 5\.0 % 1\.90", words), words
    assert "not measured" in words


def test_check_mode_writes_nothing_and_a_bad_window_reads_nothing(work, tmp_path):
    run = playbook(work, "--check", "-e", "accelops_gpu_waste_dir=%s" % (tmp_path / "check"),
                   "-e", "accelops_gpu_waste_start=2026-12-01", "-e", "accelops_gpu_waste_end=2026-12-02")
    assert run.returncode == 0, run.stdout[-4000:]
    assert "Check mode: nothing was written" in run.stdout and not (tmp_path / "check").exists()
    (work / "sacct-args").unlink()
    run = playbook(work, "-e", json.dumps({"accelops_gpu_waste_dir": str(tmp_path / "bad"),
                                           "accelops_gpu_waste_start": "2026-12-01\nrm"}))
    assert run.returncode != 0 and "accelops_gpu_waste_start and accelops_gpu_waste_end must be" in run.stdout
    assert not (work / "sacct-args").exists() and not (tmp_path / "bad").exists()


def test_sacct_that_fails_is_one_clear_error(work, tmp_path):
    (work / "sacct-down").touch()
    try:
        run = playbook(work, "-e", "accelops_gpu_waste_dir=%s" % (tmp_path / "down"))
    finally:
        (work / "sacct-down").unlink()
    assert run.returncode != 0
    assert "sacct failed on ctl (exit 1): sacct: error: Problem talking to the database" in run.stdout
    assert not (tmp_path / "down").exists()


def test_an_html_that_cannot_be_written_says_the_data_was(work, tmp_path):
    """A directory where the HTML goes: the run fails, naming the HTML and saying that its JSON was written."""
    (tmp_path / "html" / "gpu-waste.html").mkdir(parents=True)
    run = playbook(work, "-e", json.dumps({"accelops_gpu_waste_dir": str(tmp_path / "html"),
                                           "accelops_gpu_waste_start": "2026-12-01",
                                           "accelops_gpu_waste_end": "2026-12-02T00:00:00"}))
    assert run.returncode != 0
    said = " ".join(run.stdout.split())
    assert "The GPU waste report %s/gpu-waste.html could not be written" % (tmp_path / "html") in said, said[-3000:]
    assert "Its data %s/gpu-waste.json was written; nothing else changed." % (tmp_path / "html") in said
    assert json.loads((tmp_path / "html" / "gpu-waste.json").read_text())["summary"]["jobs"] > 0
