"""The pytorch and tensorflow roles' choice of wheel channel / build from the node's GPUs and driver, their pip
arguments, and the refusals their preflight renders, by Ansible's own templating from each role's defaults and vars
(the templates call the collection's compatibility filters, so they render in a child Python where the collection
loader finds accelops.gpu by its FQCN). The refusal messages are the ones in the roles' preflight.yml, rendered with
the error the filter raised, as the role's rescue does."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from rolevars import Batch, preflight_task, role_files

from simnode import ROOT


def nvidia(gpus=8, driver="570.124.06", cuda="12.8", loaded=True, arch=("hopper", "9.0")):
    """gpu_facts of a node with gpus GPUs of one architecture (name, compute capability)."""
    return {"nvidia": {"pynvml_available": True, "driver_loaded": loaded, "gpu_count": gpus, "driver_version": driver,
                       "cuda_driver_version": cuda, "reason": None,
                       "gpus": [{"index": i, "architecture": arch[0], "compute_capability": arch[1]}
                                for i in range(gpus)]}}


VOLTA, BLACKWELL, KEPLER = ("volta", "7.0"), ("blackwell", "12.0"), ("kepler", "3.7")


NO_GPU = {"nvidia": {"pynvml_available": False, "driver_loaded": False, "gpu_count": 0, "driver_version": None,
                     "cuda_driver_version": None, "reason": "nvidia-ml-py (pynvml) is not installed"}}


class _Batch(Batch):
    """Cases of a framework role on a Debian host with the given GPU facts."""

    def case(self, role, facts, templates, task_vars=None, **overrides):
        return self.add(role_files(role), {**overrides, "ansible_facts": facts}, templates, task_vars)


BATCH = _Batch()


def assert_one_line_with(message, parts):
    """A message the roles show: one line that holds every expected part."""
    assert [part for part in parts if part not in message] == [], message
    assert "\n" not in message, message


TORCH = [("channel", "{{ __pytorch_channel }}"), ("pip", "{{ __pytorch_pip_args }}"),
         ("requirements", "{{ __pytorch_requirements }}")]


@pytest.mark.parametrize("key, channel", [
    # A node without GPUs, or whose driver is not loaded, gets the CPU build.
    (BATCH.case("pytorch", NO_GPU, TORCH), "cpu"),
    (BATCH.case("pytorch", nvidia(loaded=False), TORCH), "cpu"),
    (BATCH.case("pytorch", nvidia(gpus=0), TORCH), "cpu"),
    # The newest channel of the release not newer than the CUDA the driver reports; where there is none, the nearest
    # newer one of the same CUDA major through minor version compatibility (unless pytorch_driver_compat toolkit).
    (BATCH.case("pytorch", nvidia(driver="550.54.15", cuda="12.4"), TORCH, pytorch_version="2.5.1"), "cu124"),
    (BATCH.case("pytorch", nvidia(driver="550.54.15", cuda="12.4"), TORCH), "cu126"),
    (BATCH.case("pytorch", nvidia(driver="535.104.05", cuda="12.2"), TORCH, pytorch_version="2.8.0"), "cu126"),
    (BATCH.case("pytorch", nvidia(), TORCH, pytorch_version="2.13.0"), "cu126"),
    (BATCH.case("pytorch", nvidia(), TORCH, pytorch_version="2.7.1"), "cu128"),
    (BATCH.case("pytorch", nvidia(), TORCH, pytorch_version="2.8.0"), "cu128"),
    (BATCH.case("pytorch", nvidia(), TORCH, pytorch_version="2.8.0", pytorch_driver_compat="toolkit"), "cu128"),
    (BATCH.case("pytorch", nvidia(driver="580.65.06", cuda="13.0"), TORCH), "cu130"),
    (BATCH.case("pytorch", nvidia(driver="580.65.06", cuda="13.0"), TORCH, pytorch_driver_compat="toolkit"), "cu130"),
    (BATCH.case("pytorch", nvidia(driver="595.45.04", cuda="13.2"), TORCH), "cu132"),
    # Where NVML gives no CUDA version, the collection's table answers for the driver: 570.124.06 runs CUDA 12.8.
    (BATCH.case("pytorch", nvidia(cuda=None), TORCH, pytorch_version="2.7.1"), "cu128"),
    # The override wins, also on a GPU node.
    (BATCH.case("pytorch", nvidia(), TORCH, pytorch_channel="cpu"), "cpu"),
    (BATCH.case("pytorch", nvidia(driver="580.65.06", cuda="13.0"), TORCH, pytorch_channel="CU126"), "cu126"),
], ids=["no-gpu", "driver-not-loaded", "zero-gpus", "torch2.5-cuda12.4", "torch2.13-cuda12.4", "torch2.8-cuda12.2",
        "torch2.13-cuda12.8", "torch2.7-cuda12.8", "torch2.8-cuda12.8", "torch2.8-cuda12.8-toolkit",
        "torch2.13-cuda13.0", "torch2.13-cuda13.0-toolkit", "torch2.13-cuda13.2", "driver-table", "override-cpu",
        "override-cu126"])
def test_channel(key, channel):
    result = BATCH[key]
    assert result["channel"] == channel
    assert result["pip"] == ["--index-url", "https://download.pytorch.org/whl/%s" % channel]
    assert result["requirements"] == ["torch==%s" % BATCH.cases[key]["variables"].get("pytorch_version", "2.13.0")]


@pytest.mark.parametrize("key, expected", [
    (BATCH.case("pytorch", NO_GPU, TORCH, pytorch_index_url="", pytorch_find_links=["http://127.0.0.1:18080/wheelhouse/"]),
     ["--no-index", "--find-links=http://127.0.0.1:18080/wheelhouse/"]),
    (BATCH.case("pytorch", nvidia(), TORCH, pytorch_index_url="https://mirror.example/torch/{channel}/simple",
                pytorch_extra_index_urls=["https://mirror.example/pypi/simple"], pytorch_find_links=["/srv/wheels"]),
     ["--index-url", "https://mirror.example/torch/cu126/simple", "--extra-index-url=https://mirror.example/pypi/simple",
      "--find-links=/srv/wheels"]),
], ids=["wheelhouse-only", "site-mirror"])
def test_pip_arguments(key, expected):
    assert BATCH[key]["pip"] == expected


DALI = [("channel", "{{ __pytorch_channel }}"), ("dali", "{{ __pytorch_dali_package }}")]


@pytest.mark.parametrize("key, package", [
    (BATCH.case("pytorch", nvidia(), DALI), "nvidia-dali-cuda120"),
    (BATCH.case("pytorch", nvidia(driver="580.65.06", cuda="13.0"), DALI, pytorch_dali_version="1.52.0"),
     "nvidia-dali-cuda130==1.52.0"),
], ids=["cuda12", "cuda13-pinned"])
def test_dali_package_follows_the_channel(key, package):
    assert BATCH[key]["dali"] == package


REFUSAL = preflight_task("pytorch", "Refuse a torch release without a wheel for this CUDA")
REFUSED = [("channel", "{{ __pytorch_channel }}"), ("message", REFUSAL["ansible.builtin.fail"]["msg"])]


@pytest.mark.parametrize("key, expected", [
    # The driver runs CUDA 12.2 and, without minor version compatibility, nothing newer; torch 2.8's oldest channel
    # is cu126.
    (BATCH.case("pytorch", nvidia(driver="535.104.05", cuda="12.2"), REFUSED, REFUSAL["vars"], pytorch_version="2.8.0",
                pytorch_driver_compat="toolkit"),
     ["The NVIDIA driver 535.104.05 runs CUDA up to 12.2, and torch 2.8.0 has no wheel for CUDA 12.2",
      "its channels are cu126, cu128, cu129", "nearest: cu126 (CUDA 12.6)", "Nothing was installed"]),
    # A CUDA 11 driver and a torch release that left CUDA 11.8 behind: minor version compatibility stays in CUDA 11.
    (BATCH.case("pytorch", nvidia(driver="520.61.05", cuda="11.8"), REFUSED, REFUSAL["vars"]),
     ["runs CUDA up to 11.8 (and CUDA 11 wheels through minor version compatibility)",
      "torch 2.13.0 has no wheel for CUDA 11.8", "nearest: cu126 (CUDA 12.6)"]),
    # A channel the release does not have, asked for by name.
    (BATCH.case("pytorch", NO_GPU, REFUSED, REFUSAL["vars"], pytorch_channel="cu118"),
     ["pytorch_channel cu118: torch 2.13.0 has no wheel for CUDA 11.8", "its channels are cu126, cu130, cu132",
      "nearest: cu126 (CUDA 12.6)"]),
    (BATCH.case("pytorch", nvidia(), REFUSED, REFUSAL["vars"], pytorch_channel="cu125", pytorch_version="2.5.1"),
     ["pytorch_channel cu125: torch 2.5.1 has no wheel for CUDA 12.5", "nearest: cu124 (CUDA 12.4)"]),
    # A release the table does not know.
    (BATCH.case("pytorch", nvidia(), REFUSED, REFUSAL["vars"], pytorch_version="2.0.1"),
     ["torch 2.0.1 is not in the table (torch 2.1 to 2.13); nearest: 2.1"]),
], ids=["torch2.8-cuda12.2-toolkit", "torch2.13-cuda11.8", "channel-cu118", "channel-cu125", "unknown-torch"])
def test_refusal_names_both_versions_and_the_nearest(key, expected):
    result = BATCH[key]
    assert "error" in result["channel"]
    message = result["message"]
    assert_one_line_with(message, expected)
    assert "Task failed" not in message and "filter plugin" not in message


# The GPUs a node has: auto picks a channel whose wheels carry code for every one, and refuses where none does.
@pytest.mark.parametrize("key, channel", [
    # A V100 node on driver 580 runs CUDA 13.0, but torch 2.13's cu130 wheels start at Turing.
    (BATCH.case("pytorch", nvidia(driver="580.65.06", cuda="13.0", arch=VOLTA), TORCH), "cu126"),
    (BATCH.case("pytorch", nvidia(driver="580.65.06", cuda="13.0"), TORCH), "cu130"),
    (BATCH.case("pytorch", nvidia(driver="580.65.06", cuda="13.0", arch=BLACKWELL), TORCH), "cu130"),
    (BATCH.case("pytorch", nvidia(driver="570.124.06", cuda="12.8", arch=VOLTA), TORCH, pytorch_version="2.8.0"),
     "cu128"),  # 2.8 kept sm_70 in its CUDA 12.8 wheels
], ids=["v100-driver580", "h100-driver580", "blackwell-driver580", "v100-torch2.8"])
def test_channel_carries_code_for_the_gpus(key, channel):
    assert BATCH[key]["channel"] == channel


GPU_REFUSED = [("channel", "{{ __pytorch_channel }}"), ("message", REFUSAL["ansible.builtin.fail"]["msg"])]
GPU_CHECK_TASK = preflight_task("pytorch", "Refuse a channel whose wheels carry no code for the GPUs")


@pytest.mark.parametrize("key, parts", [
    # A driver-570 Blackwell node: torch 2.13's only channel it runs is cu126, which carries no Blackwell code.
    (BATCH.case("pytorch", nvidia(driver="570.124.06", cuda="12.8", arch=BLACKWELL), GPU_REFUSED, REFUSAL["vars"]),
     ["The NVIDIA driver 570.124.06 runs CUDA up to 12.8", "torch 2.13.0 has no wheel for CUDA 12.8 that runs on "
      "Blackwell (compute capability 12.0): its channels for them are cu130, cu132; nearest: cu130 (CUDA 13.0)",
      "upgrade the driver", "Nothing was installed"]),
    (BATCH.case("pytorch", nvidia(driver="470.82.01", cuda="11.4", arch=KEPLER), GPU_REFUSED, REFUSAL["vars"]),
     ["torch 2.13.0 has no CUDA wheel that runs on Kepler (compute capability 3.7)", "Nothing was installed"]),
], ids=["blackwell-driver570", "kepler"])
def test_auto_refuses_where_no_channel_carries_the_gpus(key, parts):
    result = BATCH[key]
    assert "error" in result["channel"]
    assert_one_line_with(result["message"], parts)


@pytest.mark.parametrize("key, parts", [
    (BATCH.case("pytorch", nvidia(driver="580.65.06", cuda="13.0", arch=VOLTA),
                [("message", GPU_CHECK_TASK["ansible.builtin.assert"]["fail_msg"])],
                {"__pytorch_channel_resolved": "{{ __pytorch_channel }}", **GPU_CHECK_TASK["vars"]},
                pytorch_channel="cu130"),
     ["pytorch_channel cu130: torch 2.13.0's cu130 wheels carry no code for Volta (compute capability 7.0)",
      "nearest: cu126", "Nothing was installed"]),
], ids=["v100-cu130"])
def test_a_set_channel_without_code_for_the_gpus_is_refused(key, parts):
    assert_one_line_with(BATCH[key]["message"], parts)


GPU_CHECKED = [("problems", "{{ %s }}" % GPU_CHECK_TASK["vars"]["__pytorch_gpu_problems"].strip().strip("{}").strip())]


@pytest.mark.parametrize("key", [
    BATCH.case("pytorch", nvidia(driver="580.65.06", cuda="13.0", arch=VOLTA), GPU_CHECKED,
               {"__pytorch_channel_resolved": "cu126"}),
    BATCH.case("pytorch", nvidia(driver="580.65.06", cuda="13.0"), GPU_CHECKED,
               {"__pytorch_channel_resolved": "cu130"}),
    BATCH.case("pytorch", nvidia(gpus=0), GPU_CHECKED, {"__pytorch_channel_resolved": "cu130"}),
], ids=["v100-cu126", "h100-cu130", "no-gpu"])
def test_a_channel_with_code_for_the_gpus_passes(key):
    assert BATCH[key]["problems"] == []


DRIVER_CHECK = preflight_task("pytorch", "Refuse a CUDA channel the driver cannot run")["ansible.builtin.assert"]


CHECKED = [("ok", "{{ %s }}" % DRIVER_CHECK["that"])]


@pytest.mark.parametrize("key, allowed", [
    (BATCH.case("pytorch", nvidia(driver="550.54.15", cuda="12.4"), CHECKED, pytorch_channel="cu126",
                pytorch_version="2.6.0", pytorch_driver_compat="toolkit"), False),
    (BATCH.case("pytorch", nvidia(driver="550.54.15", cuda="12.4"), CHECKED, pytorch_channel="cu126",
                pytorch_version="2.6.0"), True),
    (BATCH.case("pytorch", nvidia(driver="550.54.15", cuda="12.4"), CHECKED, pytorch_channel="cu124",
                pytorch_version="2.6.0", pytorch_driver_compat="toolkit"), True),
    # Minor version compatibility stays within a CUDA major.
    (BATCH.case("pytorch", nvidia(driver="570.124.06", cuda="12.8"), CHECKED, pytorch_channel="cu130"), False),
    (BATCH.case("pytorch", nvidia(driver="580.65.06", cuda="13.0"), CHECKED, pytorch_channel="cu132"), True),
], ids=["cu126-on-550-toolkit", "cu126-on-550-minor", "cu124-on-550", "cu130-on-570", "cu132-on-580"])
def test_channel_against_driver(key, allowed):
    assert BATCH[key]["ok"] is allowed


DRIVER_MESSAGE = BATCH.case("pytorch", nvidia(driver="550.54.15", cuda="12.4"),
                            [("channel", "{{ __pytorch_channel }}"), ("message", DRIVER_CHECK["fail_msg"])],
                            {"__pytorch_channel_resolved": "{{ __pytorch_channel }}"},
                            pytorch_channel="cu126", pytorch_version="2.6.0", pytorch_driver_compat="toolkit")
DRIVER_MESSAGE_MINOR = BATCH.case("pytorch", nvidia(driver="570.124.06", cuda="12.8"),
                                  [("channel", "{{ __pytorch_channel }}"), ("message", DRIVER_CHECK["fail_msg"])],
                                  {"__pytorch_channel_resolved": "{{ __pytorch_channel }}"}, pytorch_channel="cu130")


@pytest.mark.parametrize("key, parts", [
    (DRIVER_MESSAGE, ["pytorch_channel cu126 needs a driver that runs CUDA 12.6 (560.28.03 or newer);",
                      "the NVIDIA driver 550.54.15 runs CUDA up to 12.4:", "Nothing was installed"]),
    (DRIVER_MESSAGE_MINOR, ["pytorch_channel cu130 needs a driver that runs CUDA 13.0 (580.65.06 or newer, or "
                            "580 through minor version compatibility);",
                            "the NVIDIA driver 570.124.06 runs CUDA up to 12.8 and CUDA 12 wheels through minor "
                            "version compatibility:", "Nothing was installed"]),
], ids=["toolkit", "minor"])
def test_channel_against_driver_message(key, parts):
    assert_one_line_with(BATCH[key]["message"], parts)


TF = [("variant", "{{ __tensorflow_variant }}"), ("requirements", "{{ __tensorflow_requirements }}"),
      ("build", "{{ __tensorflow_build }}"), ("fits", "{{ __tensorflow_driver_fits }}"),
      ("nearest", "{{ __tensorflow_nearest }}"), ("pip", "{{ __tensorflow_pip_args }}")]


@pytest.mark.parametrize("key, requirement, fits", [
    (BATCH.case("tensorflow", NO_GPU, TF), "tensorflow-cpu==2.21.0", True),
    (BATCH.case("tensorflow", nvidia(), TF), "tensorflow[and-cuda]==2.21.0", True),
    (BATCH.case("tensorflow", nvidia(), TF, tensorflow_variant="cpu"), "tensorflow-cpu==2.21.0", True),
    # CUDA 12.5 through minor version compatibility on a CUDA 12.4 driver.
    (BATCH.case("tensorflow", nvidia(driver="550.54.15", cuda="12.4"), TF), "tensorflow[and-cuda]==2.21.0", True),
    (BATCH.case("tensorflow", nvidia(driver="580.65.06", cuda="13.0"), TF), "tensorflow[and-cuda]==2.21.0", True),
    (BATCH.case("tensorflow", nvidia(driver="520.61.05", cuda="11.8"), TF), "tensorflow[and-cuda]==2.21.0", False),
    (BATCH.case("tensorflow", nvidia(driver="520.61.05", cuda="11.8"), TF, tensorflow_version="2.14.1"),
     "tensorflow[and-cuda]==2.14.1", True),
], ids=["no-gpu", "gpu", "override-cpu", "minor-compat", "cuda13-driver", "cuda11-driver", "tf2.14-cuda11-driver"])
def test_tensorflow_build(key, requirement, fits):
    result = BATCH[key]
    assert result["requirements"] == [requirement]
    assert result["fits"] is fits
    assert result["pip"] == ["--index-url", "https://pypi.org/simple"]


TF_BUILD_TASK = preflight_task("tensorflow", "Look up the build of tensorflow {{ tensorflow_version }}")


def _expression(template):
    """The expression inside a template that is one {{ ... }}."""
    text = template.strip()
    assert text.startswith("{{") and text.endswith("}}"), text
    return text[2:-2].strip()


# The facts the build lookup sets, as the tasks after it see them (task vars), and as templates to render one by one.
_TF_DRIVERS = TF_BUILD_TASK["ansible.builtin.set_fact"]["__tensorflow_build_drivers"]
TF_RESOLVED = {"__tensorflow_build_resolved": TF_BUILD_TASK["ansible.builtin.set_fact"]["__tensorflow_build_resolved"],
               "__tensorflow_build_drivers": "{{ {%s} }}" % ", ".join(
                   "'%s': (%s)" % (name, _expression(template)) for name, template in _TF_DRIVERS.items())}
TF_BUILD = [("build", TF_RESOLVED["__tensorflow_build_resolved"])] + [
    ("driver_" + name, template) for name, template in _TF_DRIVERS.items()]


TF_CHECK_TASK = preflight_task("tensorflow", "Refuse a CUDA build the driver cannot run")
TF_CHECK = TF_CHECK_TASK["ansible.builtin.assert"]
TF_DRIVER_MESSAGE = BATCH.case("tensorflow", nvidia(driver="520.61.05", cuda="11.8"),
                               [("message", TF_CHECK["fail_msg"])],
                               {**TF_RESOLVED, **TF_CHECK_TASK["vars"]})
TF_UNKNOWN = preflight_task("tensorflow", "Refuse a release the compatibility table does not know")
TF_UNKNOWN_MESSAGE = BATCH.case("tensorflow", NO_GPU, [("build", "{{ __tensorflow_build }}"),
                                                       ("message", TF_UNKNOWN["ansible.builtin.fail"]["msg"])],
                                tensorflow_version="2.13.1")


def test_tensorflow_refuses_a_build_the_driver_cannot_run():
    message = BATCH[TF_DRIVER_MESSAGE]["message"]
    for part in ("tensorflow 2.21.0 is built with CUDA 12.5 and cuDNN 9.3", "525.60.13 or newer",
                 "555.42.02 for CUDA 12.5 itself", "the driver 520.61.05 runs CUDA up to 11.8",
                 "Nearest: tensorflow 2.14 (CUDA 11.8)", "tensorflow_variant: cpu", "Nothing was installed"):
        assert part in message, message
    assert "\n" not in message


def test_tensorflow_refuses_an_unknown_release():
    result = BATCH[TF_UNKNOWN_MESSAGE]
    assert "error" in result["build"]
    assert result["message"] == ("tensorflow 2.13.1 is not in the table (tensorflow 2.14 to 2.21); nearest: 2.14. "
                                 "Nothing was installed.")


TF_OLD_DRIVER = BATCH.case("tensorflow", nvidia(driver="418.67", cuda="10.1"),
                           [("nearest", "{{ __tensorflow_nearest }}"), ("message", TF_CHECK["fail_msg"])],
                           {**TF_RESOLVED, **TF_CHECK_TASK["vars"]})


TF_MIN_DRIVERS = [
    ({"13.4": 615.2}, "tensorflow_cuda_min_drivers gives CUDA 13.4's driver as the number 615.2: quote it"),
    ({"13.4": "latest"}, "tensorflow_cuda_min_drivers: CUDA 13.4's driver 'latest' is not a version"),
    ({"12.7": "560.1"}, "tensorflow_cuda_min_drivers names CUDA 12.7, which is not a CUDA release"),
    ("13.4", "tensorflow_cuda_min_drivers must be a mapping of CUDA release to its minimum driver"),
]


@pytest.mark.parametrize("key, said", [
    (BATCH.case("tensorflow", facts, [*TF_BUILD, ("message", TF_UNKNOWN["ansible.builtin.fail"]["msg"])],
                tensorflow_cuda_min_drivers=min_drivers), said)
    for facts in (nvidia(driver="520.61.05", cuda="11.8"), NO_GPU) for min_drivers, said in TF_MIN_DRIVERS])
def test_tensorflow_cuda_min_drivers_is_checked_on_every_node(key, said):
    """Refused as itself, with the role's name for it, before anything else reads it: also on a node without GPUs
    (where nothing else reads it), never left to fail a later message's template."""
    result = BATCH[key]
    assert any(isinstance(value, dict) and "error" in value for value in result.values()), result
    assert isinstance(result["message"], str) and result["message"].startswith(said), result["message"]
    assert_one_line_with(result["message"], [said, "Nothing was installed."])


def test_tensorflow_refuses_a_driver_older_than_the_table_with_its_own_message():
    result = BATCH[TF_OLD_DRIVER]
    assert result["nearest"] == ""
    assert_one_line_with(result["message"], ["the driver 418.67 runs CUDA up to 10.1",
                                             "Nearest: no release in the table", "Nothing was installed."])


TF_GPU_TASK = preflight_task("tensorflow", "Refuse a GPU build that carries no code for the GPUs")


@pytest.mark.parametrize("key, problems", [
    (BATCH.case("tensorflow", nvidia(driver="470.82.01", cuda="11.4", arch=KEPLER),
                [("message", TF_GPU_TASK["ansible.builtin.assert"]["fail_msg"])], TF_GPU_TASK["vars"],
                tensorflow_version="2.14.1"),
     ["tensorflow 2.14.1's GPU build carries no code for Kepler (compute capability 3.7)",
      "Set tensorflow_variant: cpu, or a tensorflow_version whose GPU build carries code for these GPUs",
      "Nothing was installed"]),
], ids=["kepler"])
def test_tensorflow_refuses_a_build_without_code_for_the_gpus(key, problems):
    assert_one_line_with(BATCH[key]["message"], problems)


@pytest.mark.parametrize("key", [
    BATCH.case("tensorflow", nvidia(arch=BLACKWELL), [("problems", "{{ __tensorflow_gpu_problems }}")],
               TF_GPU_TASK["vars"]),  # compute_90 PTX runs on Blackwell
    BATCH.case("tensorflow", nvidia(arch=VOLTA), [("problems", "{{ __tensorflow_gpu_problems }}")],
               TF_GPU_TASK["vars"]),
], ids=["blackwell", "volta"])
def test_tensorflow_build_with_code_for_the_gpus_passes(key):
    assert BATCH[key]["problems"] == []


HOROVOD_TASK = {role: preflight_task(role, "Refuse a Horovod release that does not build against %s {{ %s_version }}"
                                     % (framework, role))
                for role, framework in (("pytorch", "torch"), ("tensorflow", "tensorflow"))}


def horovod_case(role, **overrides):
    task = HOROVOD_TASK[role]
    check = task["ansible.builtin.assert"]
    return BATCH.case(role, NO_GPU, [("ok", "{{ %s }}" % check["that"]), ("message", check["fail_msg"]),
                                     ("requirement", "{{ __%s_horovod_requirement }}" % role)],
                      task["vars"], **{"%s_horovod" % role: True, **overrides})


@pytest.mark.parametrize("key, allowed, requirement", [
    # Horovod 0.28.1, its newest release, builds against neither framework's default.
    (horovod_case("pytorch"), False, "horovod==0.28.1"),
    (horovod_case("tensorflow"), False, "horovod==0.28.1"),
    # It does against older releases.
    (horovod_case("pytorch", pytorch_version="2.0.1"), True, "horovod==0.28.1"),
    (horovod_case("tensorflow", tensorflow_version="2.15.1"), True, "horovod==0.28.1"),
    # A source of the site's own is built as given; a release newer than the table has no known limit.
    (horovod_case("pytorch", pytorch_horovod_source="horovod @ https://mirror.example.com/horovod-main.tar.gz"), True,
     "horovod @ https://mirror.example.com/horovod-main.tar.gz"),
    (horovod_case("tensorflow", tensorflow_horovod_version="0.29.0"), True, "horovod==0.29.0"),
    # Without Horovod asked for there is nothing to check.
    (horovod_case("pytorch", pytorch_horovod=False), True, "horovod==0.28.1"),
], ids=["torch-2.13", "tf-2.21", "torch-2.0", "tf-2.15", "torch-source", "tf-newer-horovod", "not-asked"])
def test_horovod_release_against_the_framework(key, allowed, requirement):
    result = BATCH[key]
    assert result["ok"] is allowed
    assert result["requirement"] == requirement
    # Ansible renders an assert's fail_msg before it checks: it must render where the check passes too.
    assert isinstance(result["message"], str), result["message"]


@pytest.mark.parametrize("key, parts", [
    (horovod_case("pytorch"), ["pytorch_horovod: Horovod 0.28.1 does not build against torch 2.13.0 (torch 2.1 and "
                               "newer need a C++17 build, which no Horovod release makes; it builds against torch "
                               "older than 2.1)", "Set pytorch_horovod_source", "choose a pytorch_version older than "
                               "2.1", "Nothing was installed."]),
    (horovod_case("tensorflow"), ["tensorflow_horovod: Horovod 0.28.1 does not build against tensorflow 2.21.0 "
                                  "(tensorflow 2.16 and newer bring Keras 3", "older than 2.16)",
                                  "Set tensorflow_horovod_source", "Nothing was installed."]),
], ids=["torch", "tensorflow"])
def test_horovod_refusal_message(key, parts):
    assert_one_line_with(BATCH[key]["message"], parts)


# What ansible.builtin.pip returns for a failed build: the command and one msg of pip's stdout and stderr. The lines
# are from Horovod 0.28.1 builds against torch 2.13.0 and tensorflow-cpu 2.21.0 on Debian 12 (g++ 12).
PIP_FAILED = """stdout: Building wheels for collected packages: horovod
  Building wheel for horovod (setup.py): finished with status 'error'
  error: subprocess-exited-with-error
  \u00d7 python setup.py bdist_wheel did not run successfully.
      [ 97%%] Building CXX object horovod/%s/CMakeFiles/%s.dir/mpi_ops%s.cc.o
      %s
      subprocess.CalledProcessError: Command '['cmake', '--build', '.']' returned non-zero exit status 2.
  ERROR: Failed building wheel for horovod
ERROR: Could not build wheels for horovod, which is required to install pyproject.toml-based projects
"""
TORCH_ERROR = ("/opt/accelops-gpu/pytorch/lib/python3.11/site-packages/torch/include/torch/csrc/api/include/torch/"
               "all.h:5:2: error: #error C++17 or later compatible compiler is required to use PyTorch.")
TF_ERROR = ("/opt/accelops-gpu/tensorflow/lib/python3.11/site-packages/tensorflow/include/xla/printer.h:29:10: fatal "
            "error: highwayhash/arch_specific.h: No such file or directory")
# The message is the internal python_env role's, with the arguments each framework role gives its horovod entry point.
BUILD_FAILED = preflight_task("python_env", "Stop where Horovod did not build", "horovod.yml")["ansible.builtin.fail"]
HOROVOD_ARGS = {role: preflight_task(role, "Install Horovod where it can be built", "install.yml")["vars"]
                for role in ("pytorch", "tensorflow")}


def build_failure(role, msg):
    return BATCH.add([*role_files(role), ROOT / "roles" / "python_env" / "vars" / "main.yml"],
                     {"ansible_facts": NO_GPU,
                      "__python_env_horovod_build": {"cmd": ["pip"], "msg": msg, "failed_when_result": False}},
                     [("message", BUILD_FAILED["msg"])], task_vars=HOROVOD_ARGS[role])


@pytest.mark.parametrize("key, parts", [
    (build_failure("pytorch", PIP_FAILED % ("torch", "pytorch", "_v2", TORCH_ERROR)),
     ["Horovod (horovod==0.28.1) did not build against torch 2.13.0: " + TORCH_ERROR + " The rest of "
      "/opt/accelops-gpu/pytorch is installed; Horovod is not.", "run with -v"]),
    (build_failure("tensorflow", PIP_FAILED % ("tensorflow", "tensorflow", "", TF_ERROR)),
     ["Horovod (horovod==0.28.1) did not build against tensorflow 2.21.0: " + TF_ERROR + ".",
      "The rest of /opt/accelops-gpu/tensorflow is installed"]),
    # No compiler ran: pip's last line says why.
    (build_failure("pytorch", "stdout: Looking in links: /srv/wheels\n\n:stderr: ERROR: Could not find a version "
                              "that satisfies the requirement horovod==0.28.1 (from versions: none)\nERROR: No "
                              "matching distribution found for horovod==0.28.1\n"),
     ["did not build against torch 2.13.0: ERROR: No matching distribution found for horovod==0.28.1. The rest"]),
], ids=["torch-cxx17", "tensorflow-header", "no-compiler-error"])
def test_horovod_build_failure_in_one_line(key, parts):
    message = BATCH[key]["message"]
    assert_one_line_with(message, parts)
    assert "subprocess-exited-with-error" not in message and ".." not in message


@pytest.mark.parametrize("role, script", [("pytorch", "validate_pytorch.py"), ("tensorflow", "validate_tensorflow.py")])
def test_validation_script_without_the_framework(role, script, tmp_path):
    """Run by a Python without the framework, the script says so in JSON and exits 2. -S leaves out every
    site-packages directory, so the framework cannot be imported whatever this machine has installed."""
    for source in (ROOT / "roles" / role / "files" / script, ROOT / "roles" / "python_env" / "files" /
                   "framework_validation.py"):  # as the role installs them: side by side
        shutil.copy(source, tmp_path)
    child = subprocess.run([sys.executable, "-I", "-S", str(tmp_path / script)],
                           check=False, capture_output=True, text=True, cwd="/")
    assert child.returncode == 2, child.stderr
    facts = json.loads(child.stdout)
    assert facts["failure"].startswith(("torch cannot be imported", "tensorflow cannot be imported"))


def test_wheelhouse_pins_follow_the_roles():
    """tests/sim/mirror/wheelhouse.sh reads the pins from the roles' defaults with sed: they must stay one quoted line
    each."""
    text = (ROOT / "tests" / "sim" / "mirror" / "wheelhouse.sh").read_text()
    assert "pin pytorch pytorch_version" in text and "pin tensorflow tensorflow_version" in text
    for role in ("pytorch", "tensorflow"):
        lines = [line for line in (ROOT / "roles" / role / "defaults" / "main.yml").read_text().splitlines()
                 if line.startswith("%s_version:" % role)]
        assert len(lines) == 1 and lines[0].count('"') == 2, lines


DALI = [("dali", "{{ __pytorch_dali_pip_args | to_json }}")]


@pytest.mark.parametrize("key, args", [
    (BATCH.case("pytorch", nvidia(), DALI), ["--index-url", "https://pypi.nvidia.com"]),
    (BATCH.case("pytorch", nvidia(), DALI, pytorch_dali_index_url="https://mirror.example/nvidia",
                pytorch_extra_index_urls=["https://mirror.example/pypi"], pytorch_find_links=["/srv/wheels"]),
     ["--index-url", "https://mirror.example/nvidia", "--extra-index-url=https://mirror.example/pypi",
      "--find-links=/srv/wheels"]),
    (BATCH.case("pytorch", nvidia(), DALI, pytorch_dali_index_url=""),
     ["--index-url", "https://download.pytorch.org/whl/cu126"]),  # torch 2.13 on driver 570 (minor compatibility)
])
def test_dali_has_one_index_never_mixed_with_torchs(key, args):
    rendered = json.loads(BATCH[key]["dali"])
    assert rendered == args
    assert rendered.count("--index-url") == 1


MISMATCH = {"nvidia": {"pynvml_available": True, "driver_loaded": False, "gpu_count": 0, "driver_version": None,
                       "cuda_driver_version": None, "gpus": [], "reason": "driver/library version mismatch: ...",
                       "driver_mismatch": {"loaded": "550.54.15", "library": "550.127.08"}}}
REBOOT_TASKS = {"pytorch": preflight_task("pytorch",
                                          "Refuse a CUDA build on a node whose new driver waits for a reboot"),
                "tensorflow": preflight_task("tensorflow",
                                             "Refuse a GPU build on a node whose new driver waits for a reboot")}


def reboot_case(role, facts, **overrides):
    task = REBOOT_TASKS[role]
    # Each condition as Ansible 2.19 takes it: a boolean, never None.
    return BATCH.case(role, facts, [("conditions", "{{ [%s] }}" % ", ".join("(%s)" % c for c in task["when"])),
                                    ("message", task["ansible.builtin.fail"]["msg"])], **overrides)


@pytest.mark.parametrize("key, refused", [
    # A driver changed without a reboot: NVML does not start, so the GPUs cannot be counted; never the CPU build
    # by default.
    (reboot_case("pytorch", MISMATCH), True),
    (reboot_case("pytorch", MISMATCH, pytorch_channel="cpu"), False),
    (reboot_case("pytorch", nvidia()), False),
    (reboot_case("tensorflow", MISMATCH), True),
    (reboot_case("tensorflow", MISMATCH, tensorflow_variant="cpu"), False),
], ids=["pytorch-auto", "pytorch-cpu", "pytorch-healthy", "tensorflow-auto", "tensorflow-cpu"])
def test_a_node_waiting_for_a_reboot_gets_no_gpu_build(key, refused):
    result = BATCH[key]
    assert all(isinstance(value, bool) for value in result["conditions"]), result["conditions"]
    assert all(result["conditions"]) is refused
    if refused:
        assert_one_line_with(result["message"], ["driver/library version mismatch", "reboot the node first",
                                                 "Nothing was installed"])


# A driver newer than the compatibility table (R615, whose CUDA 13.4 the table does not know): auto does not guess a
# channel; pytorch_cuda_min_drivers (NVIDIA's published minimum) or a channel set by name are the ways out.
NEWER_DRIVER = nvidia(driver="615.20.01", cuda="13.4")
NEWER = {"13.4": "615.20.01"}


@pytest.mark.parametrize("key, channel", [
    (BATCH.case("pytorch", NEWER_DRIVER, TORCH, pytorch_cuda_min_drivers=NEWER), "cu132"),
    (BATCH.case("pytorch", NEWER_DRIVER, TORCH, pytorch_channel="cu132"), "cu132"),
    (BATCH.case("pytorch", NEWER_DRIVER, TORCH, pytorch_channel="cpu"), "cpu"),
    # R565 drivers report CUDA 12.7, never released: the channel is chosen for the table's 12.6.
    (BATCH.case("pytorch", nvidia(driver="565.57.01", cuda="12.7"), TORCH), "cu126"),
    (BATCH.case("pytorch", nvidia(driver="565.57.01", cuda="12.7"), TORCH, pytorch_version="2.7.1",
                pytorch_driver_compat="toolkit"), "cu126"),
], ids=["newer-driver-named", "newer-driver-channel-set", "newer-driver-cpu", "r565", "r565-toolkit"])
def test_channel_on_a_driver_the_table_knows_only_when_told(key, channel):
    assert BATCH[key]["channel"] == channel


NEWER_REFUSED = BATCH.case("pytorch", NEWER_DRIVER, REFUSED, REFUSAL["vars"])
NEWER_CHANNEL_REFUSED = BATCH.case("pytorch", NEWER_DRIVER, REFUSED, REFUSAL["vars"], pytorch_channel="cu134")


@pytest.mark.parametrize("key, parts", [
    (NEWER_REFUSED, ["pytorch_channel auto, NVIDIA driver 615.20.01: driver 615.20.01 is newer than the table: its "
                     "newest is CUDA 13.3 (driver >= 610.43.02, branch 610)",
                     "name them: pytorch_cuda_min_drivers: {'<cuda>': '<driver>'}",
                     "or set pytorch_channel to one of torch 2.13.0's channels by name. Nothing was installed."]),
    (NEWER_CHANNEL_REFUSED, ["pytorch_channel cu134: CUDA 13.4 is newer than the table: its newest is CUDA 13.3",
                             "name it: pytorch_cuda_min_drivers: {'13.4': '<driver>'}. Nothing was installed."]),
], ids=["auto", "channel"])
def test_a_driver_or_cuda_newer_than_the_table_is_refused(key, parts):
    result = BATCH[key]
    assert "error" in result["channel"]
    assert_one_line_with(result["message"], parts)
    assert "Task failed" not in result["message"] and "filter plugin" not in result["message"]


# Where the table has no answer for the driver at all (older than its oldest CUDA) or pytorch_cuda_min_drivers is not
# what the table takes, the refusal renders: one line with the filter's words, never a second template error.
@pytest.mark.parametrize("key, parts", [
    (BATCH.case("pytorch", nvidia(driver="418.67", cuda="10.1"), REFUSED, REFUSAL["vars"]),
     ["pytorch_channel auto, NVIDIA driver 418.67: driver 418.67 is older than any CUDA in the table: the oldest, "
      "CUDA 11.0, needs >= 450.51.05", "Nothing was installed."]),
    (BATCH.case("pytorch", nvidia(), REFUSED, REFUSAL["vars"], pytorch_cuda_min_drivers={"13.4": 615.2}),
     ["pytorch_cuda_min_drivers gives CUDA 13.4's driver as the number 615.2: quote it", "Nothing was installed."]),
    (BATCH.case("pytorch", nvidia(), REFUSED, REFUSAL["vars"], pytorch_cuda_min_drivers={"13.4": "latest"},
                pytorch_channel="cu126"),
     ["pytorch_cuda_min_drivers: CUDA 13.4's driver 'latest' is not a version", "Nothing was installed."]),
    (BATCH.case("pytorch", nvidia(), REFUSED, REFUSAL["vars"], pytorch_cuda_min_drivers=["13.4"]),
     ["pytorch_cuda_min_drivers must be a mapping of CUDA release to its minimum driver", "Nothing was installed."]),
], ids=["older-than-the-table", "min-drivers-float", "min-drivers-not-a-version-channel", "min-drivers-list"])
def test_a_refusal_renders_where_the_table_has_no_answer(key, parts):
    result = BATCH[key]
    assert "error" in result["channel"]
    assert isinstance(result["message"], str), result["message"]
    assert_one_line_with(result["message"], parts)
    assert "Task failed" not in result["message"] and "filter plugin" not in result["message"]
    if "min_drivers" in parts[0]:
        assert result["message"].startswith("pytorch_cuda_min_drivers"), result["message"]


# The preflight's messages are rendered whether the check fails or not (Ansible templates a task's arguments first):
# on a driver newer than the table they must render, and the checks pass.
NEWER_CHECKS = BATCH.case("pytorch", NEWER_DRIVER, [("ok", "{{ %s }}" % DRIVER_CHECK["that"]),
                                                    ("message", DRIVER_CHECK["fail_msg"])],
                          {"__pytorch_channel_resolved": "{{ __pytorch_channel }}"}, pytorch_channel="cu132")
TF_NEWER = BATCH.case("tensorflow", NEWER_DRIVER, [*TF, ("message", TF_CHECK["fail_msg"])],
                      {**TF_RESOLVED, **TF_CHECK_TASK["vars"]})
TF_NEWER_WITHOUT_NVML = BATCH.case("tensorflow", nvidia(driver="615.20.01", cuda=None),
                                   [("fits", "{{ __tensorflow_driver_fits }}")])
TF_NEWER_NAMED = BATCH.case("tensorflow", nvidia(driver="615.20.01", cuda=None),
                            [("fits", "{{ __tensorflow_driver_fits }}"), ("cuda", "{{ __tensorflow_driver_cuda }}")],
                            tensorflow_cuda_min_drivers=NEWER)


def test_the_checks_render_on_a_driver_newer_than_the_table():
    result = BATCH[NEWER_CHECKS]
    assert result["ok"] is True
    assert "the NVIDIA driver 615.20.01 runs CUDA up to 13.4" in result["message"]
    result = BATCH[TF_NEWER]
    assert (result["fits"], result["nearest"]) == (True, "")
    assert "the driver 615.20.01 runs CUDA up to 13.4" in result["message"]


def test_tensorflow_asks_the_table_only_where_nvml_is_silent():
    assert "driver 615.20.01 is newer than the table" in BATCH[TF_NEWER_WITHOUT_NVML]["fits"]["error"]
    assert BATCH[TF_NEWER_NAMED] == {"fits": True, "cuda": "13.4"}
