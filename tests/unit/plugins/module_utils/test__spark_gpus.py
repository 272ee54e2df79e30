"""Spark's GPU discovery script (_spark_gpus and its program node_programs/accelops-gpu-spark-discovery.py) through the
real pynvml and the fake libnvidia-ml.so.1: every fixture, every option, NVML's faults. stdout is Spark's JSON or
nothing; a failure is one line on stderr and a non-zero exit status, never an empty list and never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pynvml
import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _nvml, _spark_gpus
from simnode import COLLECTIONS, FAKENVML_DIR, FIXTURES, ROOT, read_fixture

PROGRAM = ROOT / "node_programs" / "accelops-gpu-spark-discovery.py"
EIGHT = [str(index) for index in range(8)]
H100_UUIDS = [read_fixture(FIXTURES / "dgx-h100.conf")["gpu.%d.uuid" % index] for index in range(8)]


def mig_uuids(gpu):
    """The MIG devices' UUIDs of a GPU of dgx-a100-mig, in NVML's order (GPU instance id, then compute instance)."""
    values = read_fixture(FIXTURES / "dgx-a100-mig.conf")
    prefix = "gpu.%d.gi." % gpu
    found = []
    for key, value in values.items():
        if key.startswith(prefix) and key.endswith(".uuid"):
            gi, _ci, ci = key[len(prefix):-len(".uuid")].split(".")
            found.append(((int(gi), int(ci)), value))
    return [uuid for _key, uuid in sorted(found)]


GPU0_MIG, GPU1_MIG = mig_uuids(0), mig_uuids(1)
# Each fixture: (exit status, the addresses or None, what stderr says).
FIXTURE_ANSWERS = {
    "dgx-h100": (0, EIGHT, ""),
    "dgx-a100-mig": (0, GPU0_MIG + GPU1_MIG + EIGHT[2:], ""),
    "pcie-l40s": (0, ["0", "1"], ""),
    "busy": (0, ["0", "1"], ""),
    "old-driver": (0, EIGHT, ""),
    "gpu-lost": (0, ["0", "1", "3"], "GPU 2 left out: the GPU is lost"),
    "no-gpu": (1, None, "0 usable GPU addresses (NVML lists 0 GPUs), fewer than --min-addresses 1"),
    "driver-not-loaded": (1, None, "NVML cannot be used: the NVIDIA kernel driver is not loaded"),
    "driver-mismatch": (1, None, "NVML cannot be used: driver/library version mismatch"),
}


class Broken:
    """pynvml with one entry point that raises what no NVML wrapper expects."""

    def __getattr__(self, name):
        return getattr(pynvml, name)

    def nvmlDeviceGetCount(self):  # pynvml's name
        raise RuntimeError("the reading\nwent wrong")


@pytest.fixture
def discover(nvml_fixture, capsys):
    """discover(fixture, *argv, faults=()) -> (exit status, stdout, stderr) of _spark_gpus.main on that fixture, with
    lines such as fail.<symbol>=N:CODE added to it."""

    def run(name, *argv, faults=(), lib=None):
        path = nvml_fixture(name)
        if faults:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write("\n" + "\n".join(faults) + "\n")
        try:
            code = _spark_gpus.main(list(argv), lib=lib)
        except SystemExit as exc:  # argparse's refusals
            code = exc.code
        out, err = capsys.readouterr()
        return code, out, err

    return run


def answer(out):
    """stdout holds one line, Spark's JSON, and nothing else."""
    assert out.endswith("\n") and out.count("\n") == 1
    data = json.loads(out)
    assert sorted(data) == ["addresses", "name"]
    assert all(isinstance(address, str) for address in data["addresses"])
    assert len(set(data["addresses"])) == len(data["addresses"])
    return data


def refused(code, out, err, expected):
    """A refusal: exit status 1, nothing on stdout, one line on stderr that says `expected`."""
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and err.startswith("accelops-gpu-spark-discovery: ")
    assert expected in err
    assert "Traceback" not in err


def run_program(*argv, fixture=None, env_extra=None):
    env = dict(os.environ, LD_LIBRARY_PATH=str(FAKENVML_DIR))
    if fixture is not None:
        env["FAKE_NVML_FIXTURE"] = str(fixture)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, str(PROGRAM), *argv], capture_output=True, text=True, env=env,
                          check=False, timeout=60)


def test_every_fixture_has_an_answer():
    assert sorted(FIXTURE_ANSWERS) == sorted(path.stem for path in FIXTURES.glob("*.conf"))


@pytest.mark.parametrize("name", sorted(FIXTURE_ANSWERS))
def test_every_fixture_through_the_program(fake_nvml_lib, name):
    """As Spark runs it: a fresh process, stdout only the JSON (or nothing), the status."""
    code, addresses, said = FIXTURE_ANSWERS[name]
    out = run_program("--lib", str(COLLECTIONS), fixture=FIXTURES / ("%s.conf" % name))
    if code == 0:
        assert out.returncode == 0, out.stderr
        assert answer(out.stdout) == {"name": "gpu", "addresses": addresses}
        assert said in out.stderr
        if not said:
            assert out.stderr == ""
    else:
        refused(out.returncode, out.stdout, out.stderr, said)


def test_the_mig_devices_are_their_uuids(discover):
    code, out, err = discover("dgx-a100-mig")
    assert code == 0 and err == ""
    addresses = answer(out)["addresses"]
    assert len(GPU0_MIG) == 7 and len(GPU1_MIG) == 3
    assert all(address.startswith("MIG-") for address in addresses[:10])


@pytest.mark.parametrize("mig, addresses, said", [
    ("devices", GPU0_MIG + GPU1_MIG + EIGHT[2:], ""),
    ("gpus", EIGHT, ""),
    ("skip", EIGHT[2:], "GPU 0 left out: MIG is on (--mig skip)"),
])
def test_mig_choices(discover, mig, addresses, said):
    code, out, err = discover("dgx-a100-mig", "--mig", mig)
    assert code == 0
    assert answer(out)["addresses"] == addresses
    assert said in err
    if said:
        assert "GPU 1 left out: MIG is on (--mig skip)" in err


@pytest.mark.parametrize("mig", _spark_gpus.MIG_CHOICES)
def test_mig_choices_change_nothing_without_mig(discover, mig):
    code, out, _err = discover("dgx-h100", "--mig", mig)
    assert code == 0 and answer(out)["addresses"] == EIGHT


def test_a_gpu_with_mig_on_and_no_mig_device_gives_no_address(discover):
    """MIG on, every instance destroyed: nothing to give in devices mode, and the script says so."""
    code, out, err = discover("dgx-h100", faults=["gpu.3.mig.current=1", "gpu.3.mig.pending=1"])
    assert code == 0
    assert answer(out)["addresses"] == ["0", "1", "2", "4", "5", "6", "7"]
    assert "GPU 3 gives no address: MIG is on and it has no MIG device" in err


@pytest.mark.parametrize("argv, addresses", [
    (["--exclude", "3"], ["0", "1", "2", "4", "5", "6", "7"]),
    (["--exclude", "3,5"], ["0", "1", "2", "4", "6", "7"]),
    (["--exclude", " 3 , 5 "], ["0", "1", "2", "4", "6", "7"]),
    (["--exclude", "3", "--exclude", "5,3"], ["0", "1", "2", "4", "6", "7"]),
    (["--exclude", H100_UUIDS[0]], EIGHT[1:]),
    (["--exclude", H100_UUIDS[7].upper()], EIGHT[:7]),
    (["--exclude", "%s,6" % H100_UUIDS[1]], ["0", "2", "3", "4", "5", "7"]),
])
def test_exclude(discover, argv, addresses):
    code, out, err = discover("dgx-h100", *argv)
    assert code == 0 and err == ""
    assert answer(out)["addresses"] == addresses


def test_exclude_on_a_mig_node(discover):
    """A GPU index or UUID keeps its MIG devices from Spark too; a MIG device's UUID keeps that device."""
    uuid1 = read_fixture(FIXTURES / "dgx-a100-mig.conf")["gpu.1.uuid"]
    code, out, _err = discover("dgx-a100-mig", "--exclude", "0", "--exclude", "%s,%s" % (uuid1, "4"))
    assert code == 0 and answer(out)["addresses"] == ["2", "3", "5", "6", "7"]
    code, out, _err = discover("dgx-a100-mig", "--exclude", "%s,%s" % (GPU0_MIG[2], GPU1_MIG[0]))
    assert code == 0
    assert answer(out)["addresses"] == GPU0_MIG[:2] + GPU0_MIG[3:] + GPU1_MIG[1:] + EIGHT[2:]
    # With --mig gpus Spark gets whole GPUs: the GPU that holds an excluded MIG device is kept from it, and said.
    code, out, err = discover("dgx-a100-mig", "--mig", "gpus", "--exclude", GPU0_MIG[2])
    assert code == 0 and answer(out)["addresses"] == EIGHT[1:]
    assert err == ("accelops-gpu-spark-discovery: GPU 0 left out: it holds the excluded MIG device %s (--mig gpus "
                   "gives Spark whole GPUs)\n" % GPU0_MIG[2])
    # With --mig skip the GPU is left out anyway.
    code, out, _err = discover("dgx-a100-mig", "--mig", "skip", "--exclude", GPU0_MIG[2])
    assert code == 0 and answer(out)["addresses"] == EIGHT[2:]


def test_a_mig_uuid_nvml_gives_twice_is_refused(discover):
    """Two MIG devices with one UUID (an NVML fault): Spark would hand one device to two executors."""
    refused(*discover("dgx-a100-mig", faults=["gpu.0.gi.8.ci.0.uuid=%s" % GPU0_MIG[0]]),
            "NVML gives two MIG devices the same UUID %s" % GPU0_MIG[0])
    # Where Spark gets whole GPUs the MIG devices' UUIDs are no address.
    code, out, _err = discover("dgx-a100-mig", "--mig", "gpus", faults=["gpu.0.gi.8.ci.0.uuid=%s" % GPU0_MIG[0]])
    assert code == 0 and answer(out)["addresses"] == EIGHT


@pytest.mark.parametrize("exclude, said", [
    ("8", "--exclude 8: no such GPU on this node (NVML lists 8 GPUs, indexes 0 to 7)"),
    ("GPU-00000000-0000-0000-0000-000000000000", "--exclude GPU-00000000-0000-0000-0000-000000000000: no such GPU or "
                                                 "MIG device on this node"),
    ("MIG-00000000-0000-0000-0000-000000000000", "--exclude MIG-00000000-0000-0000-0000-000000000000: no such GPU or "
                                                 "MIG device"),
])
def test_an_unknown_exclude_is_an_error_naming_it(discover, exclude, said):
    refused(*discover("dgx-h100", "--exclude", "1,%s" % exclude), said)


def test_an_unknown_uuid_may_be_the_lost_gpu(discover):
    """The site excluded a GPU by UUID, and that GPU has since been lost: NVML cannot say its UUID any more."""
    code, out, err = discover("gpu-lost", "--exclude", "GPU-00000000-0000-0000-0000-000000000000")
    assert code == 0 and answer(out)["addresses"] == ["0", "1", "3"]
    assert "--exclude GPU-00000000-0000-0000-0000-000000000000: not found; it may be a GPU left out above" in err
    # An index is never in doubt.
    refused(*discover("gpu-lost", "--exclude", "4"), "--exclude 4: no such GPU on this node (NVML lists 4 GPUs")


@pytest.mark.parametrize("exclude", ["", "1,", "gpu0", "-1", "GPU-", "GPU-xyz", "0x1", "MIG-GPU-abc/1", "1;2",
                                     "GPU-00\n00", "3\x00"])
def test_a_malformed_exclude_is_refused_as_usage(discover, exclude):
    code, out, err = discover("dgx-h100", "--exclude", exclude)
    assert (code, out) == (2, "")
    assert "is neither a GPU index" in err and "Traceback" not in err


def test_the_old_mig_uuid_form_is_accepted():
    assert _spark_gpus.parse_exclude(["MIG-GPU-e07c3358-a96c-4e6b-86c1-5bf160a24ea8/7/0,2"]) == [
        "MIG-GPU-e07c3358-a96c-4e6b-86c1-5bf160a24ea8/7/0", 2]


def test_min_addresses(discover):
    code, out, _err = discover("dgx-h100", "--min-addresses", "8")
    assert code == 0 and len(answer(out)["addresses"]) == 8
    refused(*discover("dgx-h100", "--min-addresses", "9"),
            "8 usable GPU addresses (NVML lists 8 GPUs), fewer than --min-addresses 9")
    # What was left out is in the refusal, for the worker's log.
    refused(*discover("gpu-lost", "--min-addresses", "4"),
            "3 usable GPU addresses (NVML lists 4 GPUs), fewer than --min-addresses 4; GPU 2 left out: the GPU is lost")
    refused(*discover("dgx-a100-mig", "--mig", "skip", "--exclude", "2,3,4,5,6,7"),
            "0 usable GPU addresses (NVML lists 8 GPUs), fewer than --min-addresses 1")


def test_min_addresses_zero_allows_an_empty_list(discover):
    code, out, err = discover("no-gpu", "--min-addresses", "0")
    assert code == 0 and err == ""
    assert answer(out) == {"name": "gpu", "addresses": []}
    # Zero usable addresses is no licence for NVML's errors.
    refused(*discover("driver-not-loaded", "--min-addresses", "0"), "the NVIDIA kernel driver is not loaded")


@pytest.mark.parametrize("argv, said", [
    (["--min-addresses", "-1"], "--min-addresses must be from 0 to 4096"),
    (["--min-addresses", "4097"], "--min-addresses must be from 0 to 4096"),
    (["--min-addresses", "one"], "invalid int value"),
    (["--mig", "all"], "invalid choice"),
    (["--resource-name", ""], "--resource-name must be a letter"),
    (["--resource-name", "gpu.a100"], "--resource-name must be a letter"),
    (["--resource-name", "gpu\n"], "--resource-name must be a letter"),
    (["--resource-name", "1gpu"], "--resource-name must be a letter"),
    (["--resource-name", "g" * 65], "--resource-name must be a letter"),
    (["--unknown"], "unrecognized arguments"),
])
def test_bad_options_are_refused_with_usage_status(discover, argv, said):
    code, out, err = discover("dgx-h100", *argv)
    assert (code, out) == (2, "")
    assert said in err and "Traceback" not in err


@pytest.mark.parametrize("name", ["gpu", "fpga", "nvidia_gpu", "A100-80gb", "g" * 64])
def test_resource_name(discover, name):
    code, out, _err = discover("pcie-l40s", "--resource-name", name)
    assert code == 0 and answer(out) == {"name": name, "addresses": ["0", "1"]}


@pytest.mark.parametrize("faults, said", [
    (["fail.nvmlDeviceGetCount_v2=1:UNKNOWN"], "NVML cannot count the GPUs: nvmlDeviceGetCount: Unknown Error"),
    (["fail.nvmlDeviceGetUUID=2:UNKNOWN"], "GPU 1: NVML answered with an error: nvmlDeviceGetUUID: Unknown Error"),
    (["fail.nvmlDeviceGetMigMode=4:NO_PERMISSION"],
     "GPU 3: NVML answered with an error: nvmlDeviceGetMigMode: Insufficient Permissions"),
    (["fail.nvmlSystemGetDriverVersion=1:UNKNOWN"], "NVML answered with an error: nvmlSystemGetDriverVersion"),
    (["fail.nvmlDeviceGetCount_v2=1:GPU_IS_LOST"], "NVML cannot count the GPUs: nvmlDeviceGetCount: GPU is lost"),
    (["init_error=NO_PERMISSION"], "NVML cannot be used: no permission to open the NVIDIA device files"),
])
def test_an_nvml_error_is_never_an_answer(discover, faults, said):
    refused(*discover("dgx-h100", faults=faults), said)


@pytest.mark.parametrize("faults, said", [
    (["fail.nvmlDeviceGetMigDeviceHandleByIndex=2:UNKNOWN"],
     "GPU 0: NVML answered with an error: nvmlDeviceGetMigDeviceHandleByIndex: Unknown Error"),
    (["fail.nvmlDeviceGetMaxMigDeviceCount=2:UNKNOWN"], "GPU 1: NVML answered with an error"),
    # pynvml's name for the MIG device's UUID is the GPU's: the 2nd call of nvmlDeviceGetUUID is GPU 0's first MIG
    # device (the GPU's own UUID is read first).
    (["fail.nvmlDeviceGetUUID=2:NOT_SUPPORTED"], "GPU 0: MIG device 0 has no UUID, so it cannot be given to Spark"),
])
def test_an_nvml_error_on_the_mig_devices(discover, faults, said):
    refused(*discover("dgx-a100-mig", faults=faults), said)
    # With --mig gpus the MIG devices are read all the same, and their errors count all the same.
    if "UUID" not in said:
        refused(*discover("dgx-a100-mig", "--mig", "gpus", faults=faults), said)


def test_an_unsupported_uuid_is_no_error_until_it_is_needed(discover):
    code, out, _err = discover("dgx-h100", faults=["fail.nvmlDeviceGetUUID=1+:NOT_SUPPORTED"])
    assert code == 0 and answer(out)["addresses"] == EIGHT
    refused(*discover("dgx-h100", "--exclude", H100_UUIDS[0], faults=["fail.nvmlDeviceGetUUID=1+:NOT_SUPPORTED"]),
            "--exclude %s: no such GPU or MIG device" % H100_UUIDS[0])


@pytest.mark.parametrize("code_name, said", [
    ("UNKNOWN", "GPU 2 left out: NVML refused it: nvmlDeviceGetHandleByIndex: Unknown Error (NVML error 999)"),
    ("NO_PERMISSION", "GPU 2 left out: NVML refused it: nvmlDeviceGetHandleByIndex: Insufficient Permissions"),
    ("GPU_IS_LOST", "GPU 2 left out: the GPU is lost"),
])
def test_a_gpu_whose_handle_fails_is_left_out_and_said(discover, code_name, said):
    code, out, err = discover("dgx-h100", faults=["fail.nvmlDeviceGetHandleByIndex_v2=3:%s" % code_name])
    assert code == 0
    assert answer(out)["addresses"] == ["0", "1", "3", "4", "5", "6", "7"]
    assert said in err and err.count("\n") == 1


def test_a_gpu_lost_while_its_mig_devices_are_read_is_left_out(discover):
    code, out, err = discover("dgx-a100-mig", faults=["fail.nvmlDeviceGetMigDeviceHandleByIndex=3:GPU_IS_LOST"])
    assert code == 0
    assert answer(out)["addresses"] == GPU1_MIG + EIGHT[2:]
    assert "GPU 0 left out: the GPU is lost" in err


def test_every_gpu_lost_is_a_refusal_that_says_why(discover):
    refused(*discover("gpu-lost", faults=["gpu.*.lost=1"]),
            "0 usable GPU addresses (NVML lists 4 GPUs), fewer than --min-addresses 1; GPU 0 left out: the GPU is "
            "lost; GPU 1 left out: the GPU is lost; GPU 2")


def test_pynvml_missing(discover, monkeypatch):
    monkeypatch.setattr(_nvml, "pynvml", None)
    refused(*discover("dgx-h100"), "NVML cannot be used: nvidia-ml-py (import name pynvml) is not installed")


def test_an_exception_in_the_reading_is_one_line(discover):
    refused(*discover("dgx-h100", lib=Broken()), "reading the GPUs failed: RuntimeError: the reading went wrong")


def test_nvml_is_shut_down_after_the_reading(discover, monkeypatch):
    calls = []
    real = pynvml.nvmlShutdown
    monkeypatch.setattr(pynvml, "nvmlShutdown", lambda: calls.append(real()))
    discover("dgx-h100")
    refused(*discover("dgx-h100", faults=["fail.nvmlDeviceGetUUID=2:UNKNOWN"]), "nvmlDeviceGetUUID")
    assert len(calls) == 2


def test_the_program_prints_only_the_json(fake_nvml_lib, tmp_path):
    out = run_program("--lib", str(COLLECTIONS), "--exclude", "0", "--resource-name", "accel",
                      fixture=FIXTURES / "gpu-lost.conf")
    assert out.returncode == 0
    assert json.loads(out.stdout) == {"name": "accel", "addresses": ["1", "3"]}
    assert out.stdout.count("\n") == 1
    assert out.stderr == "accelops-gpu-spark-discovery: GPU 2 left out: the GPU is lost\n"


def test_the_program_without_the_nvidia_library(fake_nvml_lib, tmp_path):
    """No libnvidia-ml.so.1 to load (the driver is not installed): pynvml's LibraryNotFound, said in one line."""
    out = run_program("--lib", str(COLLECTIONS), fixture=FIXTURES / "dgx-h100.conf",
                      env_extra={"LD_LIBRARY_PATH": str(tmp_path)})
    if out.returncode == 0:
        pytest.skip("this machine has a libnvidia-ml.so.1 of its own")
    refused(out.returncode, out.stdout, out.stderr, "NVML cannot be used: libnvidia-ml.so.1 was not found")


@pytest.mark.parametrize("name", ["driver-not-loaded", "no-gpu"])
def test_the_program_fails_with_nothing_on_stdout(fake_nvml_lib, name):
    out = run_program("--lib", str(COLLECTIONS), fixture=FIXTURES / ("%s.conf" % name))
    refused(out.returncode, out.stdout, out.stderr, FIXTURE_ANSWERS[name][2])


@pytest.mark.parametrize("argv, code, said", [
    (["--lib"], 2, "accelops-gpu-spark-discovery: --lib needs a directory"),
    (["--lib", "/nonexistent"], 1, "accelops-gpu-spark-discovery: the collection's code is not under /nonexistent"),
    (["--lib", str(COLLECTIONS), "--mig", "none"], 2, "invalid choice: 'none'"),
    (["--lib", str(COLLECTIONS), "--exclude", "x"], 2, "'x' is neither a GPU index"),
])
def test_the_programs_refusals(fake_nvml_lib, argv, code, said):
    out = run_program(*argv, fixture=FIXTURES / "dgx-h100.conf")
    assert (out.returncode, out.stdout) == (code, "")
    assert said in out.stderr and "Traceback" not in out.stderr


def test_the_programs_help(fake_nvml_lib):
    out = run_program("--lib", str(COLLECTIONS), "--help")
    assert out.returncode == 0
    for option in ("--mig {devices,gpus,skip}", "--exclude", "--min-addresses", "--resource-name"):
        assert option in out.stdout
