"""Every public filter of the collection against hostile input: each returns or raises AnsibleFilterError (what
Ansible shows as the task's failure), never another exception (a traceback), and no error message echoes its input
unbounded."""

from __future__ import annotations

import importlib
import inspect
import time

import pytest
from ansible.errors import AnsibleFilterError
from hostile import huge, nested

from simnode import ROOT

# The longest error message a filter may give: a message names the field and shows a shortened value.
MESSAGE_LIMIT = 2000


HOSTILE = {
    "none": None,
    "int": 7,
    "negative": -1,
    "bool": True,
    "float": 1.5,
    "nan": float("nan"),
    "inf": float("inf"),
    "huge-int": huge(),
    "int-64": 2 ** 64,
    "5000-digits": "1" * 5000,
    "5000-digit-version": "12." + "9" * 5000,
    "version-5000-parts": ".".join(["1"] * 2500),
    "megabyte": "x" * 1000000,
    "nul": "12.4\x00",
    "newline": "12.4\n",
    "empty-text": "",
    "empty-list": [],
    "empty-dict": {},
    "list-of-dicts": [{"name": 5, "index": "x", "uuid": None, "path": [], "state": {}}, {}],
    "list-of-none": [None, None],
    "list-of-huge": [huge(), "9" * 5000],
    "wrong-dict": {"stdout": 5, "rc": "x", "stdout_lines": [None], "gpus": "x", "driver": 7, "cuda": [],
                   "content": 5, "failed": "yes", "msg": None, "nvidia": "x", "exists": "x", "type": []},
    "dict-of-none": {None: None},
    "dict-huge-key": {"k" * 100000: "v" * 100000},
    "deep-list": nested(5000),
    "deep-dict": {"a": nested(3000)},
    "text-list": ["x" * 100000, "a\nb", "\x00"],
    # Shaped like the facts and results the filters read, with every field of the wrong type.
    "facts-wrong-types": {
        "driver_loaded": True, "driver_version": huge(), "gpu_count": "x", "reason": nested(3000),
        "gpus": [{}, {"index": None, "name": 5, "memory_total_mib": "x", "temperature_c": [], "power_draw_w": "x",
                      "nvlinks": [None, 5], "lost": "x", "processes": "x", "errors": 5, "uuid": 7}, None],
        "health": {"findings": [None, {"gpu": None, "severity": [], "code": 5}]}, "topology": [[5]],
        "pci_devices": [None, 5], "devices": [None, {"ports": 5}], "gpu_affinity": 5, "nodes": "x"},
    "facts-gpus-not-dicts": {"driver_loaded": True, "gpus": ["x", 5], "health": "x", "topology": "x"},
    "facts-unloaded": {"driver_loaded": False, "pci_devices": [None, 5, {"kind": []}], "reason": "x" * 100000},
    "result-wrong-types": {"rc": huge(), "stdout": None, "stderr": 5, "stdout_lines": "x", "stderr_lines": [5],
                           "failed": True, "msg": ["x"], "skipped": "no", "content": "!!", "status": 5,
                           "armor_blocks": [None], "text_outside_armor": "x", "error": 5},
}


def public_filters():
    """(file, name, function) for every filter, as the plugin_utils/_*_filters.py its plugins/filter/<name>.py calls
    defines it (the plugin file is a wrapper of (*args, **kwargs) that imports it at the call)."""
    found = []
    for path in sorted((ROOT / "plugins" / "plugin_utils").glob("_*_filters.py")):
        module = importlib.import_module("ansible_collections.accelops.gpu.plugins.plugin_utils." + path.stem)
        for name, function in sorted(module.FilterModule().filters().items()):
            found.append((path.stem, name, function))
    assert sorted(name for _file, name, _function in found) == sorted(
        path.stem for path in (ROOT / "plugins" / "filter").glob("*.py"))
    return found


FILTERS = public_filters()


def signature(name, function):
    """The filter's parameters; those of the plugin_utils function a generic wrapper (*args, **kwargs) calls."""
    parameters = list(inspect.signature(function).parameters.values())
    if [p.kind for p in parameters] == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
        target = getattr(importlib.import_module("ansible_collections.accelops.gpu.plugins.plugin_utils._cuda_compat"),
                         name)
        parameters = list(inspect.signature(target).parameters.values())
    return parameters


def calls(name, function, value):
    """The argument lists to try: every required parameter hostile, each alone with the others empty, then each optional
    one hostile in turn."""
    parameters = signature(name, function)
    required = [p for p in parameters if p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keywords = {p.name: value for p in parameters if p.default is inspect.Parameter.empty and p.kind == p.KEYWORD_ONLY}
    optional = [p for p in parameters if p.default is not inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    args = [value] * max(len(required), 1)
    yield args, keywords
    if len(required) > 1:  # one hostile argument, the others empty: the checks of the later ones are reached too
        for position in range(len(required)):
            for empty in (None, "", []):
                yield [value if n == position else empty for n in range(len(required))], keywords
    for parameter in optional:
        yield args, dict(keywords, **{parameter.name: value})


def test_every_filter_is_tried():
    assert len(FILTERS) >= 40, [name for _file, name, _function in FILTERS]


@pytest.mark.parametrize("kind", list(HOSTILE))
@pytest.mark.parametrize("name, function", [(name, function) for _file, name, function in FILTERS],
                         ids=[name for _file, name, _function in FILTERS])
def test_hostile_input_is_a_filter_error_or_an_answer(name, function, kind):
    for args, kwargs in calls(name, function, HOSTILE[kind]):
        started = time.monotonic()
        try:
            function(*args, **kwargs)
        except AnsibleFilterError as error:
            message = str(error)
            assert len(message) <= MESSAGE_LIMIT, "%s(%s, %s): a message of %d characters: %s..." % (
                name, kind, sorted(kwargs), len(message), message[:300])
        except Exception as error:  # what this test is about
            pytest.fail("%s given %s (%s): %s: %s" % (name, kind, sorted(kwargs) or "required arguments",
                                                      type(error).__name__, str(error)[:300]))
        assert time.monotonic() - started < 5, "%s given %s took %.1f s" % (name, kind, time.monotonic() - started)


def named(name):
    return next(function for _file, found, function in FILTERS if found == name)


@pytest.mark.parametrize("name, args, message", [
    ("cuda_too_new", (5, "550.54.15"), "cuda_too_new: cudas must be a CUDA version or a list of them, got int"),
    ("cuda_min_driver", ("12." + "9" * 5000,), "cuda_min_driver: CUDA '12.9999"),
    ("cuda_min_driver", (nested(5000),), "cuda_min_driver: CUDA <list> is not a version"),
    ("cuda_min_driver", ("1" * 10 ** 6 + "x",), "cuda_min_driver: CUDA '1111"),
    ("gpu_summary", ({"driver_loaded": True, "gpus": [{}]},),
     "gpu_summary: the input is not ansible_facts.nvidia as gpu_facts sets it (KeyError: 'index')"),
    ("gpu_summary", ({"driver_loaded": True, "gpu_count": huge()},),
     "gpu_summary: the input is not ansible_facts.nvidia as gpu_facts sets it (the input holds a number of more "
     "digits than Python converts"),
    ("_ipoib_problems", ([], ["ib0", 5]),
     "_ipoib_problems: netdevs must be a list of net device names, got ['ib0', 5]"),
    ("_ipoib_problems", ([], [], huge()), "_ipoib_problems: name must be the variable's name, got an integer of"),
    ("slurm_hardware", ({"stdout": 5},), "slurm_hardware: the input's stdout must be what slurmd -C printed (text), "
     "got int"),
    ("_signing_key_problems", ([], "A" * 40, {"a": 1}), "_signing_key_problems: source must be text"),
    ("_dkms_unbuilt", ("", ["6.1.0-28-amd64"], ["x" * 10 ** 6]), "_dkms_unbuilt: version must be the driver's release"),
    ("nccl_env", ({}, None, {"NCCL_X": nested(5000)}), "nccl_env: the input is not ansible_facts.infiniband"),
])
def test_each_fault_found_is_one_bounded_filter_error(name, args, message):
    with pytest.raises(AnsibleFilterError) as raised:
        named(name)(*args)
    assert str(raised.value).startswith(message) and len(str(raised.value)) <= 1100, str(raised.value)[:300]
