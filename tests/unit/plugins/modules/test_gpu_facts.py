"""gpu_facts end to end in-process: the module's main(), the real pynvml, the fake libnvidia-ml.so.1, each fixture."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from ansible_collections.accelops.gpu.plugins.modules import gpu_facts, gpu_health
from simnode import COLLECTIONS, FAKENVML_DIR, ROOT, ansible_env, fixture_value, read_fixture


def gather(module_result, nvml_fixture, name, **args):
    path = nvml_fixture(name)
    rc, result = module_result(gpu_facts, args)
    assert rc == 0, result
    assert result["changed"] is False
    return result["ansible_facts"]["nvidia"], read_fixture(path)


def gather_facts(module_result, nvml_fixture, name, **args):
    return gather(module_result, nvml_fixture, name, **args)[0]


def test_dgx_h100_matches_its_fixture(module_result, nvml_fixture):
    facts, fx = gather(module_result, nvml_fixture, "dgx-h100")
    assert (facts["nvml_available"], facts["driver_loaded"], facts["reason"]) == (True, True, None)
    assert facts["driver_version"] == fx["driver_version"] == "550.54.15"
    assert facts["nvml_version"] == fx["nvml_version"]
    assert facts["cuda_driver_version"] == "12.4"
    assert facts["gpu_count"] == len(facts["gpus"]) == 8
    for gpu in facts["gpus"]:
        i = gpu["index"]
        assert gpu["uuid"] == fixture_value(fx, i, "uuid")
        assert gpu["serial"] == fixture_value(fx, i, "serial")
        assert gpu["pci_bus_id"] == fixture_value(fx, i, "pci.bus_id").lower()[4:]
        assert gpu["name"] == "NVIDIA H100 80GB HBM3"
        assert (gpu["architecture"], gpu["compute_capability"]) == ("hopper", "9.0")
        assert gpu["memory_total_mib"] == 81559
        assert gpu["memory_used_mib"] + gpu["memory_free_mib"] == 81559
        assert gpu["temperature_c"] == int(fixture_value(fx, i, "temperature_c"))
        assert gpu["power_draw_w"] == round(int(fixture_value(fx, i, "power.usage_mw")) / 1000, 2)
        assert (gpu["power_limit_w"], gpu["power_limit_min_w"], gpu["power_limit_max_w"]) == (700.0, 200.0, 700.0)
        assert gpu["persistence_mode"] is True and gpu["compute_mode"] == "default"
        assert gpu["ecc_enabled"] is True
        assert gpu["ecc_errors"] == {"volatile": {"corrected": 0, "uncorrected": 0},
                                     "aggregate": {"corrected": 0, "uncorrected": 0}}
        assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
        assert gpu["retired_pages_pending"] is None  # page retirement does not exist on Hopper
        assert gpu["mig_mode"] is False and gpu["mig_devices"] == []
        assert gpu["fan_speed_pct"] is None  # SXM modules have no fans
        assert gpu["pcie"] == {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16}
        assert gpu["clocks_event_reasons"] == ["gpu_idle"]
        assert gpu["processes"] == []
        assert len(gpu["nvlinks"]) == 18
        assert all(link["active"] and link["remote_type"] == "switch" for link in gpu["nvlinks"])
        assert {link["remote_pci_bus_id"] for link in gpu["nvlinks"]} == {
            "0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"}
    assert [row[i] for i, row in enumerate(facts["topology"])] == ["X"] * 8
    assert {cell for row in facts["topology"] for cell in row} == {"X", "NV18"}
    assert facts["health"] == {"status": "ok", "findings": []}
    # numa.<n>.cpus of each GPU's numa_node: two sockets of 56 cores, their hyperthread siblings from CPU 112 on
    assert [gpu["cpu_affinity"] for gpu in facts["gpus"]] == ["0-55,112-167"] * 4 + ["56-111,168-223"] * 4


def test_dgx_a100_reports_mig_devices(module_result, nvml_fixture):
    facts, fx = gather(module_result, nvml_fixture, "dgx-a100-mig")
    gpu0, gpu1, gpu2 = facts["gpus"][:3]
    assert gpu0["mig_mode"] is True and len(gpu0["mig_devices"]) == 7
    assert {d["profile"] for d in gpu0["mig_devices"]} == {"1g.10gb"}
    assert [d["uuid"] for d in gpu0["mig_devices"]] == [fx["gpu.0.gi.%d.ci.0.uuid" % gi] for gi in range(7, 14)]
    assert [d["gpu_instance_id"] for d in gpu0["mig_devices"]] == list(range(7, 14))
    assert all(d["memory_total_mib"] == 9856 for d in gpu0["mig_devices"])
    assert gpu1["mig_mode"] is True
    assert sorted(d["profile"] for d in gpu1["mig_devices"]) == ["1g.10gb", "2g.20gb", "3g.40gb"]
    assert all(d["uuid"].startswith("MIG-") for d in gpu1["mig_devices"])
    assert gpu2["mig_mode"] is False and gpu2["mig_devices"] == []
    assert all(len(g["nvlinks"]) == 12 for g in facts["gpus"])
    assert {cell for row in facts["topology"] for cell in row} == {"X", "NV12"}


def test_pcie_l40s_has_no_nvlink_and_no_mig(module_result, nvml_fixture):
    facts = gather_facts(module_result, nvml_fixture, "pcie-l40s")
    assert facts["gpu_count"] == 2
    for gpu in facts["gpus"]:
        assert (gpu["name"], gpu["architecture"], gpu["compute_capability"]) == ("NVIDIA L40S", "ada", "8.9")
        assert gpu["nvlinks"] is None
        assert gpu["mig_mode"] is None and gpu["mig_devices"] is None
        assert gpu["pcie"]["gen_max"] == 4
    assert facts["topology"] == [["X", "SYS"], ["SYS", "X"]]
    assert [gpu["cpu_affinity"] for gpu in facts["gpus"]] == ["0-31,64-95", "32-63,96-127"]
    assert facts["health"]["status"] == "ok"


def test_busy_host_lists_processes_with_names(module_result, nvml_fixture):
    facts, fx = gather(module_result, nvml_fixture, "busy")
    procs = facts["gpus"][0]["processes"]
    assert [(p["pid"], p["name"], p["used_memory_mib"]) for p in procs] == [
        (21347, "python3", 30412), (21590, "python3", 8120)]
    assert [p["pid"] for p in facts["gpus"][1]["processes"]] == [int(fx["gpu.1.process.0.pid"])]


def test_lost_gpu_gives_degraded_facts_and_a_critical_finding(module_result, nvml_fixture):
    facts, fx = gather(module_result, nvml_fixture, "gpu-lost")
    assert facts["gpu_count"] == 4
    lost = facts["gpus"][2]
    assert lost["lost"] is True and lost["name"] is None and lost["uuid"] is None
    assert [g["lost"] for g in facts["gpus"]] == [False, False, True, False]
    assert facts["gpus"][3]["uuid"] == fixture_value(fx, 3, "uuid")
    assert facts["health"]["status"] == "critical"
    codes = [(f["gpu"], f["code"]) for f in facts["health"]["findings"]]
    assert (2, "gpu_lost") in codes
    assert facts["topology"][2] == [None, None, "X", None]
    assert facts["topology"][0][1].startswith("NV")


def test_old_driver_degrades_to_null_instead_of_failing(module_result, nvml_fixture):
    facts = gather_facts(module_result, nvml_fixture, "old-driver")
    assert facts["driver_version"].startswith("470.")
    gpu = facts["gpus"][0]
    assert (gpu["architecture"], gpu["compute_capability"]) == ("volta", "7.0")
    assert gpu["processes"] == []  # through the _v2 entry point
    assert gpu["clocks_event_reasons"] == ["gpu_idle"]  # through the pre-R535 name, ...ThrottleReasons
    assert all(link["remote_type"] is None for link in gpu["nvlinks"] if link["active"])
    assert gpu["memory_total_mib"] is not None


def test_host_without_gpus(module_result, nvml_fixture):
    facts = gather_facts(module_result, nvml_fixture, "no-gpu")
    assert (facts["driver_loaded"], facts["gpu_count"], facts["gpus"]) == (True, 0, [])
    assert facts["topology"] == []
    assert facts["health"] == {"status": "ok", "findings": []}


def test_driver_not_loaded_is_a_fact_not_a_failure(module_result, nvml_fixture):
    facts = gather_facts(module_result, nvml_fixture, "driver-not-loaded")
    assert (facts["nvml_available"], facts["driver_loaded"]) == (True, False)
    assert "not loaded" in facts["reason"]
    assert facts["gpus"] == [] and facts["driver_version"] is None


def build_sysfs(fixture, target):
    subprocess.run([sys.executable, str(ROOT / "tests/sim/host/mksysfs.py"),
                    str(ROOT / "tests/sim/nvml/fixtures" / ("%s.conf" % fixture)), str(target)],
                   check=True, capture_output=True)
    return str(target)


def test_driver_changed_without_a_reboot(module_result, nvml_fixture, tmp_path):
    """NVML refuses to start (error 18): the facts name the condition and both releases, never "no driver"."""
    root = build_sysfs("driver-mismatch", tmp_path / "sys")
    facts = gather_facts(module_result, nvml_fixture, "driver-mismatch", sysfs_root=root)
    # The library this process loaded is the build's libnvidia-ml.so.1, whose name carries no release.
    assert facts["driver_mismatch"] == {"loaded": "550.54.15", "library": None}
    assert facts["driver_loaded"] is False and facts["gpus"] == [] and facts["gpu_count"] == 0
    assert facts["reason"] == (
        "driver/library version mismatch: the installed NVML library is not the loaded NVIDIA kernel module's "
        "release (the driver changed and the node has not rebooted): the loaded kernel module is 550.54.15, the "
        "installed library of unknown release; reboot to load it")
    assert facts["health"]["status"] == "critical"
    assert facts["health"]["findings"][0]["code"] == "driver_mismatch"
    assert facts["health"]["findings"][0]["message"].startswith("reboot required: driver/library version mismatch")


def test_driver_mismatch_from_an_installed_library(tmp_path):
    """As a driver package installs it (libnvidia-ml.so.1 -> libnvidia-ml.so.550.127.08), the library's own file
    names its release: fixture key library_version=auto, a real nvmlInit in a fresh process, and gpu_facts' reading of
    both releases."""
    lib = tmp_path / "lib"
    lib.mkdir()
    shutil.copy(FAKENVML_DIR / "libnvidia-ml.so.1", lib / "libnvidia-ml.so.550.127.08")
    (lib / "libnvidia-ml.so.1").symlink_to("libnvidia-ml.so.550.127.08")
    fixture = tmp_path / "nvml.conf"
    fixture.write_text("driver_version=550.54.15\nlibrary_version=auto\ngpu_count=0\n")
    root = build_sysfs("driver-mismatch", tmp_path / "sys")
    code = (
        "import json, pynvml\n"
        "from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_facts\n"
        "try:\n"
        "    pynvml.nvmlInit(); error = None\n"
        "except pynvml.NVMLError as exc:\n"
        "    error = exc.value\n"
        "print(json.dumps([error, _gpu_facts.library_release(), _gpu_facts.loaded_module_release(%r)]))\n" % root)
    env = ansible_env(LD_LIBRARY_PATH=str(lib), FAKE_NVML_FIXTURE=str(fixture), PYTHONPATH=str(COLLECTIONS))
    child = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(child.stdout) == [18, "550.127.08", "550.54.15"]
    # The same library on the module's own release starts.
    fixture.write_text("driver_version=550.127.08\nlibrary_version=auto\ngpu_count=0\n")
    child = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(child.stdout)[0] is None


def test_loaded_module_release_from_proc(tmp_path):
    proc = tmp_path / "version"
    proc.write_text("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build  "
                    "(dvs-builder@U16-I3-C03-3-1)  Thu Feb 20 00:00:00 UTC 2025\nGCC version:  gcc version 12.2.0\n")
    from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_facts
    assert _gpu_facts.loaded_module_release(str(tmp_path / "nosys"), str(proc)) == "570.124.06"
    proc.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n")
    assert _gpu_facts.loaded_module_release(str(tmp_path / "nosys"), str(proc)) == "550.54.15"
    assert _gpu_facts.loaded_module_release(str(tmp_path / "nosys"), str(tmp_path / "none")) is None
    for junk in ("550.54.15abc", "550.54.15.7", "\u0665\u0665\u0660.54"):  # refused, never cut short
        proc.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Tue Mar  5 2024\n" % junk)
        assert _gpu_facts.loaded_module_release(str(tmp_path / "nosys"), str(proc)) is None, junk


def test_gather_subset_limits_the_keys(module_result, nvml_fixture):
    facts = gather_facts(module_result, nvml_fixture, "dgx-h100", gather_subset=["memory"])
    gpu = facts["gpus"][0]
    assert gpu["memory_total_mib"] == 81559 and gpu["name"] == "NVIDIA H100 80GB HBM3"
    for absent in ("nvlinks", "power_limit_w", "processes", "mig_mode", "cpu_affinity"):
        assert absent not in gpu
    assert facts["topology"] is None and facts["health"] is None and facts["pci_devices"] is None


def test_set_facts_false_returns_the_facts_and_sets_none(module_result, nvml_fixture):
    """A read for a task's own decision leaves ansible_facts alone (the plays after it keep the wider picture)."""
    nvml_fixture("dgx-h100")
    rc, result = module_result(gpu_facts, {"gather_subset": ["basic", "processes"], "set_facts": False})
    assert rc == 0, result
    assert "ansible_facts" not in result
    assert result["nvidia"]["gpu_count"] == 8 and result["nvidia"]["gpus"][0]["processes"] == []
    assert "ecc_enabled" not in result["nvidia"]["gpus"][0]
    rc, full = module_result(gpu_facts, {"gather_subset": ["basic", "processes"]})
    assert full["ansible_facts"]["nvidia"] == result["nvidia"]


def test_check_mode_gives_the_same_facts(module_result, nvml_fixture):
    real = gather_facts(module_result, nvml_fixture, "dgx-h100")
    checked = gather_facts(module_result, nvml_fixture, "dgx-h100", _ansible_check_mode=True)
    assert checked == real


def test_fixture_is_never_written(module_result, nvml_fixture):
    path = nvml_fixture("dgx-h100")
    before = path.read_bytes()
    module_result(gpu_facts, {})
    assert path.read_bytes() == before


def test_sysfs_root_feeds_pci_devices(module_result, nvml_fixture, tmp_path):
    subprocess.run([sys.executable, str(ROOT / "tests/sim/host/mksysfs.py"),
                    str(ROOT / "tests/sim/nvml/fixtures/dgx-h100.conf"),
                    str(tmp_path / "sys")], check=True, capture_output=True)
    facts = gather_facts(module_result, nvml_fixture, "dgx-h100", sysfs_root=str(tmp_path / "sys"))
    kinds = [d["kind"] for d in facts["pci_devices"]]
    assert kinds.count("gpu") == 8 and kinds.count("nvswitch") == 4 and len(kinds) == 12
    assert {d["architecture"] for d in facts["pci_devices"] if d["kind"] == "gpu"} == {"hopper"}
    assert {d["driver"] for d in facts["pci_devices"]} == {"nvidia"}
    nvml_ids = sorted(g["pci_bus_id"] for g in facts["gpus"])
    assert nvml_ids == sorted(d["pci_bus_id"] for d in facts["pci_devices"] if d["kind"] == "gpu")


def test_an_unreadable_pci_bus_is_unknown_not_empty(module_result, nvml_fixture, tmp_path):
    """A bus that cannot be listed gives pci_devices null and says why: never "no NVIDIA device here"."""
    (tmp_path / "bus" / "pci").mkdir(parents=True)
    (tmp_path / "bus" / "pci" / "devices").write_text("")
    facts = gather_facts(module_result, nvml_fixture, "dgx-h100", sysfs_root=str(tmp_path))
    assert facts["pci_devices"] is None
    assert facts["errors"] == ["PCI devices of %s cannot be listed: Not a directory" % tmp_path]
    assert facts["gpu_count"] == 8  # NVML still answers


def test_unknown_subset_is_one_clear_error(module_result, nvml_fixture):
    nvml_fixture("dgx-h100")
    rc, result = module_result(gpu_facts, {"gather_subset": ["memory", "gpus", "!nothing"]})
    assert rc == 1 and result["failed"]
    assert result["msg"].startswith("gather_subset: 'gpus', '!nothing' not allowed; give all or a subset name")
    assert result["msg"].endswith("(basic, state, memory, thermal, power, utilization, ecc, clocks, pcie, nvlink, mig, "
                                  "processes, topology, pci, health)")


@pytest.mark.parametrize("subsets, bad", [(["!all"], "'!all'"), (["!!health"], "'!!health'"), (["!"], "'!'"),
                                          (["memory", " memory"], "' memory'")])
def test_negated_all_and_repeated_bangs_are_refused(module_result, nvml_fixture, subsets, bad):
    nvml_fixture("dgx-h100")
    rc, result = module_result(gpu_facts, {"gather_subset": subsets})
    assert rc == 1 and result["msg"].startswith("gather_subset: %s not allowed" % bad)


@pytest.mark.parametrize("module", [gpu_facts, gpu_health], ids=["gpu_facts", "gpu_health"])
@pytest.mark.parametrize("root, message", [
    ("/no/such/sysfs", "sysfs_root: /no/such/sysfs is not a directory"),
    ("/etc/hostname", "sysfs_root: /etc/hostname is not a directory"),
    ("sys", "sysfs_root: give an absolute directory path, got"),
    ("/sys\x00", "sysfs_root: give an absolute directory path"),
])
def test_a_sysfs_root_that_is_no_directory_is_refused(module_result, nvml_fixture, module, root, message):
    nvml_fixture("driver-not-loaded")  # where a wrong tree would have turned "no driver" into "ok"
    rc, result = module_result(module, {"sysfs_root": root.replace("\\x00", "\x00")})
    assert rc == 1 and message in result["msg"], result["msg"]


# --------------------------------------------------------------------------- NVML errors are never good news


def facts_with(module_result, nvml_fixture, *lines, args=None):
    path = nvml_fixture("dgx-h100")
    with path.open("a") as handle:
        handle.write("".join(line + "\n" for line in lines))
    rc, result = module_result(gpu_facts, args or {})
    assert rc == 0, result
    return result["ansible_facts"]["nvidia"]


def test_a_count_nvml_cannot_give_is_unknown_and_critical(module_result, nvml_fixture):
    facts = facts_with(module_result, nvml_fixture, "fail.nvmlDeviceGetCount_v2=1:UNKNOWN")
    assert facts["gpu_count"] is None and facts["gpus"] == []
    assert facts["reason"] == "NVML cannot count the GPUs: nvmlDeviceGetCount: Unknown Error (NVML error 999)"
    assert facts["health"]["status"] == "critical"
    assert facts["health"]["findings"][0]["code"] == "gpu_count_unknown"


def test_half_the_gpus_unreadable_is_critical(module_result, nvml_fixture):
    facts = facts_with(module_result, nvml_fixture, "fail.nvmlDeviceGetHandleByIndex_v2=5+:UNKNOWN")
    assert facts["gpu_count"] == 8 and [bool(g.get("error")) for g in facts["gpus"]] == [False] * 4 + [True] * 4
    codes = [(f["gpu"], f["code"]) for f in facts["health"]["findings"]]
    assert codes == [(i, "gpu_unreadable") for i in range(4, 8)] and facts["health"]["status"] == "critical"


@pytest.mark.parametrize("lines, affinity, errors", [
    # a GPU whose NUMA node is unknown: NVML does not support the question, which is no error
    (("gpu.5.numa_node=-1",), None, []),
    (("gpu.5.cpu_affinity=0-3, 112-115",), "0-3,112-115", []),
    (("fail.nvmlDeviceGetCpuAffinity=6:UNKNOWN",), None, ["nvmlDeviceGetCpuAffinity: Unknown Error (NVML error 999)"]),
])
def test_cpu_affinity_nvml_cannot_give_is_null(module_result, nvml_fixture, lines, affinity, errors):
    facts = facts_with(module_result, nvml_fixture, *lines)
    assert facts["gpus"][5]["cpu_affinity"] == affinity
    assert facts["gpus"][5]["errors"] == errors
    assert facts["gpus"][4]["cpu_affinity"] == "56-111,168-223"
    assert facts["topology"][5][4] == "NV18"  # the system-level matrix of the same subset is still there


def test_a_value_nvml_fails_to_give_is_a_warning_naming_gpu_and_call(module_result, nvml_fixture):
    facts = facts_with(module_result, nvml_fixture, "fail.nvmlDeviceGetTemperature=3:TIMEOUT")
    assert facts["gpus"][2]["temperature_c"] is None
    assert facts["gpus"][2]["errors"] == ["nvmlDeviceGetTemperature: Timeout (NVML error 10)"]
    assert all(g["errors"] == [] for g in facts["gpus"] if g["index"] != 2)
    assert facts["health"]["status"] == "warning"
    assert facts["health"]["findings"] == [{"gpu": 2, "code": "nvml_error", "severity": "warning", "message":
                                            "GPU 2: NVML failed to answer nvmlDeviceGetTemperature: Timeout (NVML "
                                            "error 10)"}]


def test_an_nvlink_state_nvml_fails_to_give_is_an_error_not_a_shorter_list(module_result, nvml_fixture):
    # The 5th call is GPU 0's link 4: NVML fails it part-way through the links.
    facts = facts_with(module_result, nvml_fixture, "fail.nvmlDeviceGetNvLinkState=5:UNKNOWN")
    links = facts["gpus"][0]["nvlinks"]
    assert [link["index"] for link in links] == [i for i in range(18) if i != 4]
    assert all(link["active"] for link in links)
    assert facts["gpus"][0]["errors"] == ["nvmlDeviceGetNvLinkState: Unknown Error (NVML error 999)"]
    assert [len(g["nvlinks"]) for g in facts["gpus"][1:]] == [18] * 7
    assert facts["health"]["status"] == "warning"
    assert [(f["gpu"], f["code"]) for f in facts["health"]["findings"]] == [(0, "nvml_error")]


@pytest.mark.parametrize("line, error, others", [
    ("fail.nvmlDeviceGetNvLinkState=1+:TIMEOUT", "nvmlDeviceGetNvLinkState: Timeout (NVML error 10)", True),
    ("fail.nvmlDeviceGetNvLinkState=1+:NOT_SUPPORTED", None, False),  # no NVLink at all: no error
    ("fail.nvmlDeviceGetNvLinkRemoteDeviceType=1+:UNKNOWN",
     "nvmlDeviceGetNvLinkRemoteDeviceType: Unknown Error (NVML error 999)", True),
])
def test_nvlink_calls_that_all_fail_are_one_error_per_gpu_not_one_per_link(module_result, nvml_fixture, line, error,
                                                                           others):
    facts = facts_with(module_result, nvml_fixture, line)
    assert facts["gpus"][0]["errors"] == ([error] if error else [])
    assert [g["errors"] for g in facts["gpus"][1:]] == [[error] if others else []] * 7
    assert facts["health"]["status"] == ("warning" if error else "ok")


def test_a_gpu_lost_part_way_through_its_nvlinks_is_lost(module_result, nvml_fixture):
    facts = facts_with(module_result, nvml_fixture, "fail.nvmlDeviceGetNvLinkState=5:GPU_IS_LOST")
    assert facts["gpus"][0]["lost"] is True and facts["gpus"][0]["nvlinks"] is None
    assert [len(g["nvlinks"]) for g in facts["gpus"][1:]] == [18] * 7
    assert facts["health"]["status"] == "critical"
    assert [(f["gpu"], f["code"]) for f in facts["health"]["findings"]] == [(0, "gpu_lost")]


# Through ansible itself, in processes of their own: what a host without the library or without pynvml sees.

def run_ansible(tmp_path, interpreter, **env):
    inventory = tmp_path / "hosts"
    inventory.write_text("localhost ansible_connection=local ansible_python_interpreter=%s\n" % interpreter)
    out = subprocess.run(
        [str(ROOT / ".venv/bin/ansible") if (ROOT / ".venv/bin/ansible").exists() else "ansible", "localhost",
         "-i", str(inventory), "-m", "accelops.gpu.gpu_facts", "-o"],
        capture_output=True, text=True, env=ansible_env(**env), check=False)
    line = out.stdout.strip().splitlines()[-1]
    return json.loads(line.split(" => ", 1)[1])


def test_no_library_on_the_host(tmp_path):
    result = run_ansible(tmp_path, sys.executable, LD_LIBRARY_PATH="", LD_PRELOAD="")
    facts = result["ansible_facts"]["nvidia"]
    assert (facts["nvml_available"], facts["driver_loaded"]) == (False, False)
    assert "libnvidia-ml.so.1 was not found" in facts["reason"]


@pytest.fixture
def bare_python(tmp_path):
    """A Python without pynvml: a venv of this interpreter that sees no other site-packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    return tmp_path / "bare" / "bin" / "python"


def test_missing_pynvml_says_what_to_install(tmp_path, bare_python):
    result = run_ansible(tmp_path, bare_python)
    facts = result["ansible_facts"]["nvidia"]
    assert (facts["pynvml_available"], facts["nvml_available"], facts["driver_loaded"]) == (False, False, False)
    assert facts["reason"].startswith("nvidia-ml-py (import name pynvml) is not installed for %s" % bare_python)
    assert "accelops.gpu.nvml_python" in facts["reason"]
    assert facts["pci_devices"] is not None


def test_pynvml_found_through_the_path_variable(tmp_path, bare_python, nvml_fixture):
    import pynvml

    pylib = tmp_path / "pylib"
    pylib.mkdir()
    shutil.copy(pynvml.__file__, pylib)
    fixture = nvml_fixture("no-gpu")
    result = run_ansible(tmp_path, bare_python, ACCELOPS_GPU_PYTHONPATH=str(pylib), FAKE_NVML_FIXTURE=str(fixture),
                         LD_LIBRARY_PATH=str(FAKENVML_DIR))
    assert "ansible_facts" in result, result
    assert result["ansible_facts"]["nvidia"]["driver_loaded"] is True


@pytest.mark.parametrize("fault, count", [("fail.nvmlDeviceGetCount_v2=1:GPU_IS_LOST", None),
                                          ("fail.nvmlSystemGetDriverVersion=1:GPU_IS_LOST", 8),
                                          ("fail.nvmlDeviceGetTopologyCommonAncestor=3:UNKNOWN", 8),
                                          ("fail.nvmlDeviceGetTopologyCommonAncestor=3:GPU_IS_LOST", 8)])
def test_system_faults_are_errors_never_tracebacks_or_ok(module_result, nvml_fixture, fault, count):
    facts = facts_with(module_result, nvml_fixture, fault)
    assert facts["gpu_count"] == count and facts["errors"], facts["errors"]
    assert facts["health"]["status"] in ("warning", "critical")
    if "Topology" in fault:
        return  # gpu_health does not read the topology
    path = nvml_fixture("dgx-h100")
    with path.open("a") as handle:
        handle.write(fault + "\n")
    _rc, result = module_result(gpu_health, {})
    assert result.get("verdict", "critical") != "ok" and "Traceback" not in json.dumps(result)
