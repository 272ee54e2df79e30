"""playbooks/report.yml on a simulated fleet of three nodes, and its HTML in a real headless Chromium.

The nodes are the controller itself (a local connection per node), each with its own NVML fixture: the facts come from
the real gpu_facts module on the fake NVML. One node has a lost GPU (critical), one runs a driver that the other two
H100 nodes do not (drift), and a fourth node cannot be reached. Chromium prints the page to PDF (no JavaScript; the page
has none) and pdftotext reads what was rendered; a screenshot is kept under build/report/.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from simnode import FAKENVML, FIXTURES, ROOT, ansible_env, expose_collection

expose_collection()

OUT = ROOT / "build" / "report"
ODD_DRIVER = "550.127.08"

INVENTORY = """
gpu_nodes:
  hosts:
    gpu-a01: {fixture: dgx-h100, accelops_gpu_sysfs_root: "%(work)s/sys/gpu-a01"}
    gpu-a02: {fixture: odd-driver, accelops_gpu_sysfs_root: "%(work)s/sys/gpu-a02"}
    gpu-b07: {fixture: gpu-lost, accelops_gpu_sysfs_root: "%(work)s/sys/gpu-b07"}
    gpu-c03: {ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 9, ansible_ssh_timeout: 3}
  vars:
    ansible_connection: local
    ansible_python_interpreter: %(python)s
"""

PLAYBOOK = """
- name: Gather each node's GPU facts from its fixture
  hosts: gpu_nodes:!gpu-c03
  gather_facts: false
  tasks:
    - name: Gather GPU facts through NVML
      accelops.gpu.gpu_facts:
        sysfs_root: "{{ accelops_gpu_sysfs_root }}"
      environment:
        FAKE_NVML_FIXTURE: "{{ fixtures }}/{{ fixture }}.conf"

    # What site.yml's health gate registers (gpu_health's result, tests/unit/plugins/modules/test_gpu_health.py) on a
    # node whose CDI spec is for the driver before an upgrade; the report shows its CDI finding, not the others.
    - name: The health gate's judgement
      ansible.builtin.set_fact:
        __site_gpu_health:
          verdict: warning
          findings:
            - {gpu: 3, code: persistence_off, severity: warning, message: "not a CDI finding"}
            - {gpu: null, code: cdi_driver_version, severity: warning,
               message: "/etc/cdi/nvidia.yaml: the spec is for driver 550.54.14; the loaded driver is 550.54.15"}
      when: inventory_hostname == 'gpu-a01'

- name: The report
  ansible.builtin.import_playbook: accelops.gpu.report
"""


# report.yml on its own, as a careless user runs it: --limit (which leaves the controller out), a relative report
# directory, a node whose facts cannot be read, check mode first and a second run after the first.
LIMITED_INVENTORY = """
gpu_nodes:
  hosts:
    gpu-a01: {accelops_gpu_sysfs_root: "%(work)s/sys/gpu-a01"}
    gpu-bad: {accelops_gpu_sysfs_root: "%(work)s/sys/no-such-tree"}
    gpu-b07: {accelops_gpu_sysfs_root: "%(work)s/sys/gpu-a01"}
  vars:
    ansible_connection: local
    ansible_python_interpreter: %(python)s
"""


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("Chromium is not installed: make units installs it (apt-get install chromium poppler-utils)")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    if not FAKENVML.exists():
        pytest.fail("build the fake NVML first: make units")
    work = tmp_path_factory.mktemp("report")
    fixtures = work / "fixtures"
    fixtures.mkdir()
    for name in ("dgx-h100", "gpu-lost"):
        shutil.copy(FIXTURES / ("%s.conf" % name), fixtures)
    text = (FIXTURES / "dgx-h100.conf").read_text()
    assert "driver_version=550.54.15\n" in text
    (fixtures / "odd-driver.conf").write_text(text.replace("driver_version=550.54.15\n",
                                                           "driver_version=%s\n" % ODD_DRIVER))
    # Each node's PCI devices as the simulated node has them (tests/sim/host/mksysfs.py).
    for node, fixture in (("gpu-a01", "dgx-h100"), ("gpu-a02", "odd-driver"), ("gpu-b07", "gpu-lost")):
        subprocess.run([sys.executable, str(ROOT / "tests" / "sim" / "host" / "mksysfs.py"),
                        str(fixtures / ("%s.conf" % fixture)), str(work / "sys" / node)], check=True)
    (work / "inventory.yml").write_text(INVENTORY % {"work": work, "python": sys.executable})
    (work / "site.yml").write_text(PLAYBOOK)
    OUT.mkdir(parents=True, exist_ok=True)
    run = subprocess.run(
        ["ansible-playbook", "-i", "inventory.yml", "site.yml",
         "-e", "fixtures=%s" % fixtures,
         "-e", json.dumps({"accelops_gpu_report_dir": str(OUT), "accelops_gpu_report_title": "Simulated fleet"})],
        cwd=work, env=ansible_env(LD_LIBRARY_PATH=str(FAKENVML.parent)), capture_output=True, text=True, check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    return run


def test_the_run_says_where_the_report_is(report):
    assert "Fleet report: %s/fleet.html" % OUT in report.stdout
    assert "4 nodes" in report.stdout


def test_the_json_has_the_critical_gpu_the_drift_and_the_lost_node(report):
    model = json.loads((OUT / "fleet.json").read_text())
    assert model["summary"]["nodes"] == 4
    worst = model["findings"][0]
    assert (worst["node"], worst["gpu"], worst["severity"], worst["code"]) == ("gpu-b07", 2, "critical", "gpu_lost")
    assert next(node["name"] for node in model["nodes"]) == "gpu-b07"
    drivers = [field for group in model["drift"] if group["model"] == "NVIDIA H100 80GB HBM3"
               for field in group["fields"] if field["field"] == "driver_version"]
    assert drivers and drivers[0]["majority"] == "550.54.15"
    assert [(odd["value"], odd["nodes"]) for odd in drivers[0]["odd"]] == [(ODD_DRIVER, ["gpu-a02"])]
    assert [node["name"] for node in model["unreachable"]] == ["gpu-c03"]
    # The health gate's CDI finding is the healthy node's only finding; the gate's other findings are gpu_facts' own.
    a01 = [(f["code"], f["severity"]) for f in model["findings"] if f["node"] == "gpu-a01"]
    assert a01 == [("cdi_driver_version", "warning")]


def test_chromium_renders_the_nodes_the_critical_finding_and_the_drift(report):
    browser = chromium()
    if not shutil.which("pdftotext"):
        pytest.fail("pdftotext is not installed: make units installs it (apt-get install poppler-utils)")
    page = (OUT / "fleet.html").as_uri()
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--user-data-dir=%s" % (OUT / "chromium-profile")]
    pdf = OUT / "fleet.pdf"
    subprocess.run([*flags, "--no-pdf-header-footer", "--print-to-pdf=%s" % pdf, page],
                   check=True, capture_output=True, timeout=120)
    subprocess.run([*flags, "--window-size=1400,2000", "--screenshot=%s" % (OUT / "fleet.png"), page],
                   check=True, capture_output=True, timeout=120)
    assert (OUT / "fleet.png").stat().st_size > 10000
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True,
                          text=True).stdout
    words = " ".join(text.split())
    for node in ("gpu-a01", "gpu-a02", "gpu-b07", "gpu-c03"):
        assert node in words
    assert "Simulated fleet" in words
    assert "CRITICAL" in words and "GPU 2 is lost" in words
    assert ODD_DRIVER in words
    assert "unreachable" in words.lower()


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    """(check run and whether it left the report's directory, first run, second run, work dir) of report.yml alone
    with --limit gpu-a01,gpu-bad."""
    if not FAKENVML.exists():
        pytest.fail("build the fake NVML first: make units")
    work = tmp_path_factory.mktemp("limited")
    subprocess.run([sys.executable, str(ROOT / "tests" / "sim" / "host" / "mksysfs.py"),
                    str(FIXTURES / "dgx-h100.conf"), str(work / "sys" / "gpu-a01")], check=True)
    (work / "inventory.yml").write_text(LIMITED_INVENTORY % {"work": work, "python": sys.executable})
    (work / "report.yml").write_text("- name: The report\n  ansible.builtin.import_playbook: accelops.gpu.report\n")
    env = ansible_env(LD_LIBRARY_PATH=str(FAKENVML.parent), FAKE_NVML_FIXTURE=str(FIXTURES / "dgx-h100.conf"))

    def run(*extra):
        return subprocess.run(
            ["ansible-playbook", "-i", "inventory.yml", "report.yml", "--limit", "gpu-a01,gpu-bad",
             "-e", "accelops_gpu_report_dir=limited-report", *extra],
            cwd=work, env=env, capture_output=True, text=True, check=False)

    check = run("--check")
    return (check, (work / "limited-report").exists()), run(), run(), work


def test_check_mode_writes_nothing(limited):
    (check, written), _first, _second, _work = limited
    assert check.returncode == 0, check.stdout[-4000:]
    assert "Check mode: nothing was written" in check.stdout
    assert not written


def test_limit_writes_the_report_of_the_limited_nodes_with_the_reason_of_a_failed_one(limited):
    _check, first, _second, work = limited
    assert first.returncode == 0, first.stdout[-4000:]
    # A relative directory is taken from where ansible-playbook runs, not from the playbook's directory.
    assert "Fleet report: %s/fleet.html" % (work.resolve() / "limited-report") in first.stdout
    assert not (ROOT / "playbooks" / "limited-report").exists()
    model = json.loads((work / "limited-report" / "fleet.json").read_text())
    assert [node["name"] for node in model["nodes"]] == ["gpu-a01"]
    assert [failed["name"] for failed in model["failed"]] == ["gpu-bad"]
    assert model["failed"][0]["reason"].startswith("GPU facts: sysfs_root: ")
    assert model["summary"]["nodes"] == 2 and "gpu-b07" not in json.dumps(model)


def test_a_second_run_changes_nothing(limited):
    _check, _first, second, _work = limited
    assert second.returncode == 0, second.stdout[-4000:]
    recap = re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", second.stdout, re.MULTILINE)
    assert recap and all(changed == "0" for _host, changed in recap), recap


def test_facts_from_a_persistent_cache_are_not_taken_for_this_run(limited, tmp_path):
    """With a jsonfile fact cache, a node gathered by an earlier run and unreachable now is unreachable in the report,
    not ok from the cached facts."""
    _check, _first, _second, work = limited
    env = ansible_env(LD_LIBRARY_PATH=str(FAKENVML.parent), FAKE_NVML_FIXTURE=str(FIXTURES / "dgx-h100.conf"),
                      ANSIBLE_CACHE_PLUGIN="jsonfile", ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "cache"))
    down = work / "down.yml"
    down.write_text((work / "inventory.yml").read_text().replace(
        'gpu-a01: {', 'gpu-a01: {ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 9, '
        'ansible_ssh_timeout: 3, '))
    for inventory in ("inventory.yml", down.name):
        run = subprocess.run(["ansible-playbook", "-i", inventory, "report.yml", "--limit", "gpu-a01",
                              "-e", "accelops_gpu_report_dir=%s" % (tmp_path / "report")],
                             cwd=work, env=env, capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stdout[-4000:]
    assert (tmp_path / "cache").is_dir()
    model = json.loads((tmp_path / "report" / "fleet.json").read_text())
    assert model["nodes"] == [] and [node["name"] for node in model["unreachable"]] == ["gpu-a01"]


@pytest.mark.parametrize("controller, problem", [
    # Down: run_once made the unreachable controller fatal to every node, and no report was written.
    ("{ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 9, ansible_ssh_timeout: 3}",
     "Slurm's controller could not be asked: "),
    # Up, without Slurm's client (scontrol is not installed here).
    ("{ansible_connection: local, ansible_python_interpreter: %(python)s}", "Slurm's controller could not be asked: "),
], ids=["controller-down", "no-scontrol"])
def test_a_slurm_controller_that_cannot_be_asked_is_said_in_the_report(limited, tmp_path, controller, problem):
    """The report is written, each Slurm node with the reason its state is not known (never outside Slurm); a node
    whose name Slurm cannot have gets that reason, and stays in the report."""
    _check, _first, _second, work = limited
    if not (work / "sys" / "gpu@a02").exists():
        subprocess.run([sys.executable, str(ROOT / "tests" / "sim" / "host" / "mksysfs.py"),
                        str(FIXTURES / "dgx-h100.conf"), str(work / "sys" / "gpu@a02")], check=True)
    inventory = tmp_path / "slurm.yml"
    # gpu-a01's Slurm name is a YAML number (slurm_node_name: 101), as a careless inventory gives it.
    inventory.write_text(LIMITED_INVENTORY.replace('    gpu-bad: {', '    gpu@a02: {accelops_gpu_sysfs_root: '
                                                   '"%(work)s/sys/gpu@a02"}\n    gpu-bad: {')
                         .replace("    gpu-a01: {", "    gpu-a01: {slurm_node_name: 101, ")
                         % {"work": work, "python": sys.executable}
                         + "slurm_controllers:\n  hosts:\n    ctl: %s\n" % (controller % {"python": sys.executable}))
    env = ansible_env(LD_LIBRARY_PATH=str(FAKENVML.parent), FAKE_NVML_FIXTURE=str(FIXTURES / "dgx-h100.conf"))
    run = subprocess.run(["ansible-playbook", "-i", str(inventory), "report.yml", "--limit", "gpu-a01,gpu@a02",
                          "-e", "accelops_gpu_report_dir=%s" % (tmp_path / "report")],
                         cwd=work, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-4000:]
    model = json.loads((tmp_path / "report" / "fleet.json").read_text())
    nodes = {node["name"]: node for node in model["nodes"]}
    assert sorted(nodes) == ["gpu-a01", "gpu@a02"], run.stdout[-4000:]
    assert nodes["gpu-a01"]["slurm"]["state"] is None
    assert nodes["gpu-a01"]["slurm"]["problem"].startswith(problem), nodes["gpu-a01"]["slurm"]
    assert nodes["gpu@a02"]["slurm"]["problem"] == "'gpu@a02' is not a Slurm node name (letters, digits, . _ -)"
    assert all(node["status"] == "warning" for node in nodes.values())
