from __future__ import annotations

import json
import subprocess
import sys

import pytest
from ansible.errors import AnsibleFilterError
from hostile import huge, nested

from ansible_collections.accelops.gpu.plugins.plugin_utils._cuda_compat_filters import (
    FilterModule,
    cuda_max_for_driver,
    cuda_min_driver,
    cuda_too_new,
    gpu_support_problems,
    horovod_limit,
    tensorflow_build,
    tensorflow_for_cuda,
    torch_cuda_channel,
)
from simnode import COLLECTIONS

NAMES = {"cuda_min_driver", "cuda_max_for_driver", "torch_cuda_channel", "tensorflow_build", "horovod_limit",
         "gpu_support_problems", "cuda_too_new", "tensorflow_for_cuda"}


def test_filters_are_registered():
    filters = FilterModule().filters()
    assert set(filters) == NAMES
    assert filters["cuda_min_driver"]("12.4") == "550.54.14"


def test_filters_return_the_table_values():
    assert cuda_min_driver("12.4") == "550.54.14"
    assert cuda_min_driver("12.8", compat="minor") == "525.60.13"
    assert cuda_max_for_driver("570.124.06") == "12.8"
    assert torch_cuda_channel("12.8", torch="2.5.1") == "cu124"
    assert tensorflow_build("2.16.1") == {"cuda": "12.3", "cudnn": "8.9"}
    assert horovod_limit("0.28.1", "torch")["below"] == "2.1"


@pytest.mark.parametrize("call, message", [
    (lambda: cuda_min_driver("12.7"), r"^cuda_min_driver: CUDA 12\.7 is not in the table .*; nearest: 12\.6$"),
    (lambda: cuda_max_for_driver("440.118.02"), r"^cuda_max_for_driver: driver 440\.118\.02 is older than any CUDA"),
    (lambda: torch_cuda_channel("12.8", "2.5.1", exact=True),
     r"^torch_cuda_channel: torch 2\.5\.1 has no wheel for CUDA 12\.8: its channels are cu118, cu121, cu124; "
     r"nearest: cu124 \(CUDA 12\.4\)$"),
    (lambda: tensorflow_build("banana"), r"^tensorflow_build: tensorflow 'banana' is not a version"),
    (lambda: horovod_limit("0.28.1", "jax"), r"^horovod_limit: framework must be one of torch, tensorflow"),
])
def test_errors_become_ansible_filter_errors(call, message):
    with pytest.raises(AnsibleFilterError, match=message):
        call()


# Templates render in a child Python: there the collection loader finds accelops.gpu by its FQCN, as in a playbook.
# In this process the collection is imported from sys.path, which that loader cannot take over.
RENDER = r"""
import json, sys
from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template

init_plugin_loader([sys.argv[1]])
templar = Templar(loader=DataLoader(), variables={
    "ansible_facts": {"nvidia": {"driver_version": "550.54.15"}},
    "torch_version": "2.7.1",
})
results = []
for template in json.load(sys.stdin):
    try:
        results.append({"value": templar.template(trust_as_template(template))})
    except AnsibleError as error:
        results.append({"error": type(error).__name__, "message": str(error)})
print(json.dumps(results))
"""

TEMPLATES = [
    ("{{ '12.4' | accelops.gpu.cuda_min_driver }}", "550.54.14"),
    ("{{ 12.4 | accelops.gpu.cuda_min_driver }}", "550.54.14"),
    ("{{ '13.0' | accelops.gpu.cuda_min_driver('minor') }}", "580"),
    ("{{ ansible_facts.nvidia.driver_version | accelops.gpu.cuda_max_for_driver }}", "12.4"),
    ("{{ ansible_facts.nvidia.driver_version | accelops.gpu.cuda_max_for_driver"
     " | accelops.gpu.torch_cuda_channel(torch=torch_version) }}", "cu118"),  # torch 2.7 has no cu124: cu118
    ("{{ '12.8' | accelops.gpu.torch_cuda_channel(torch_version, exact=true) }}", "cu128"),
    ("{{ ('2.18.0' | accelops.gpu.tensorflow_build).cuda | accelops.gpu.cuda_min_driver }}", "555.42.02"),
    ("{{ '2.16.1' | accelops.gpu.tensorflow_build }}", {"cuda": "12.3", "cudnn": "8.9"}),
    ("{{ ansible_facts.nvidia.driver_version is version('12.4' | accelops.gpu.cuda_min_driver, '>=') }}", True),
    ("{{ torch_version is version(('0.28.1' | accelops.gpu.horovod_limit('torch')).below, '<') }}", False),
    ("{{ '0.29.0' | accelops.gpu.horovod_limit('tensorflow') }}", {}),
    ("{{ ansible_facts.nvidia.driver_version is version('12.8' | accelops.gpu.cuda_min_driver, '>=') }}", False),
    ("{{ ['7.0', 'Hopper'] | accelops.gpu.gpu_support_problems(driver_branch='590') }}",
     ["driver branch 590 does not support Volta: its last branch is 580; nearest: 580"]),
    ("{{ '13.0' | accelops.gpu.torch_cuda_channel(torch='2.13.0', compat='minor', gpus=['7.0']) }}", "cu126"),
    # min_drivers from a template: a dict of quoted strings, as an inventory gives it
    ("{{ '13.4' | accelops.gpu.cuda_min_driver(min_drivers={'13.4': '615.20.01'}) }}", "615.20.01"),
    ("{{ '615.20.01' | accelops.gpu.cuda_max_for_driver(min_drivers={'13.4': '615.20.01'}) }}", "13.4"),
]
FAILING = {
    "{{ '12.4' | accelops.gpu.torch_cuda_channel('2.8.0') }}":
        "torch_cuda_channel: torch 2.8.0 has no wheel for CUDA 12.4: its channels are cu126, cu128, cu129; "
        "nearest: cu126 (CUDA 12.6)",
    "{{ 'latest' | accelops.gpu.tensorflow_build }}":
        "tensorflow_build: tensorflow 'latest' is not a version: expected major.minor[.patch], e.g. 2.16.1",
    "{{ '13.0' | accelops.gpu.cuda_min_driver(compat='major') }}":
        "cuda_min_driver: compat must be one of toolkit, minor, got 'major'",
    "{{ '13.4' | accelops.gpu.torch_cuda_channel('2.13.0') }}":
        "torch_cuda_channel: CUDA 13.4 is newer than the table: its newest is CUDA 13.3 (driver >= 610.43.02)",
    "{{ '13.4' | accelops.gpu.cuda_min_driver(min_drivers={'13.4': 615.20}) }}":
        "cuda_min_driver: min_drivers gives CUDA 13.4's driver as the number 615.2: quote it",
}


@pytest.fixture(scope="module")
def rendered():
    templates = [template for template, expected in TEMPLATES] + list(FAILING)
    child = subprocess.run([sys.executable, "-c", RENDER, str(COLLECTIONS)], input=json.dumps(templates),
                           capture_output=True, text=True, check=True, cwd="/")
    return dict(zip(templates, json.loads(child.stdout.splitlines()[-1])))


@pytest.mark.parametrize("template, expected", TEMPLATES)
def test_filters_in_templates(rendered, template, expected):
    assert rendered[template] == {"value": expected}


@pytest.mark.parametrize("template", list(FAILING))
def test_a_filter_error_fails_the_template(rendered, template):
    assert rendered[template]["error"] == "AnsibleTemplatePluginRuntimeError"
    assert FAILING[template] in rendered[template]["message"]


class Loud:
    """A value whose str() and repr() are as long as a hostile input can make them."""

    def __str__(self):
        return "9" * 100000

    __repr__ = __str__


def _keyed(value):
    """{value: driver} where value can be a key (a template's dict can hold no other), else {repr: driver}."""
    try:
        hash(value)
    except TypeError:
        value = type(value).__name__ * 1000
    return {value: "615.1"}


# Hostile input: each must give AnsibleFilterError with a short message (or, where the argument may legitimately
# name something the table does not know, such as a GPU, an answer); never another exception.
HOSTILE = ["1" * 5000, "13." + "3" * 5000, "9" * 5000 + ".1", "." * 5000, "12.4" + " " * 5000 + "x",
           "12.4\x00", "\u0661\u0662.\u0664", huge(), -1, float("nan"), float("inf"), 1e308, b"12.4",
           {"12.4"}, {"cuda": "12.4"}, ["12.4"] * 10000, nested(5000), Loud(), object()]
VERSION_FILTERS = {
    "cuda_min_driver": cuda_min_driver,
    "cuda_min_driver(compat)": lambda v: cuda_min_driver("12.4", compat=v),
    "cuda_min_driver(min_drivers)": lambda v: cuda_min_driver("12.4", min_drivers=v),
    "cuda_min_driver(min_drivers key)": lambda v: cuda_min_driver("12.4", min_drivers=_keyed(v)),
    "cuda_min_driver(min_drivers value)": lambda v: cuda_min_driver("12.4", min_drivers={"13.4": v}),
    "cuda_max_for_driver": cuda_max_for_driver,
    "cuda_too_new(driver)": lambda v: cuda_too_new(["12.4"], v),
    "cuda_too_new([cuda])": lambda v: cuda_too_new([v], "550.54.15"),
    "torch_cuda_channel": torch_cuda_channel,
    "torch_cuda_channel(torch)": lambda v: torch_cuda_channel("12.4", torch=v),
    "torch_cuda_channel(compat)": lambda v: torch_cuda_channel("12.4", compat=v),
    "tensorflow_build": tensorflow_build,
    "tensorflow_for_cuda": tensorflow_for_cuda,
    "horovod_limit": lambda v: horovod_limit(v, "torch"),
    "horovod_limit(framework)": lambda v: horovod_limit("0.28.1", v),
    "gpu_support_problems(driver_branch)": lambda v: gpu_support_problems(["9.0"], driver_branch=v),
    "gpu_support_problems(kernel_modules)": lambda v: gpu_support_problems(["9.0"], kernel_modules=v),
    "gpu_support_problems(tensorflow)": lambda v: gpu_support_problems(["9.0"], tensorflow=v),
}
# Where a hostile value may be answered: a GPU the table does not know is left out, by design.
LENIENT_FILTERS = {
    "gpu_support_problems(gpus)": lambda v: gpu_support_problems(v, cuda="12.8"),
    "gpu_support_problems([gpu])": lambda v: gpu_support_problems([v], cuda="12.8"),
    "gpu_support_problems(compute_capability)": lambda v: gpu_support_problems([{"compute_capability": v}]),
    "gpu_support_problems(cuda)": lambda v: gpu_support_problems(["9.0"], cuda=v),
    "torch_cuda_channel(gpus)": lambda v: torch_cuda_channel("12.8", torch="2.7.1", gpus=v),
}


@pytest.mark.parametrize("name", list(VERSION_FILTERS) + list(LENIENT_FILTERS))
def test_hostile_input_gives_a_short_filter_error(name):
    call = VERSION_FILTERS.get(name) or LENIENT_FILTERS[name]
    for value in HOSTILE:
        try:
            call(value)
        except AnsibleFilterError as error:
            assert len(str(error)) < 500, (name, str(error)[:200])
        else:
            # min_drivers' empty and compat's 'toolkit' cannot come from HOSTILE: these must refuse every value.
            assert name in LENIENT_FILTERS, (name, repr(value)[:80])
