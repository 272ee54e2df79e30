"""gpu_mig against the fake NVML's MIG profile tables, placements and instances (A100 80GB, H100 80GB)."""

from __future__ import annotations

import pytest

from ansible_collections.accelops.gpu.plugins.modules import gpu_facts, gpu_mig
from simnode import FIXTURES, read_fixture

MIXED = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]


@pytest.fixture
def mig(module_result, nvml_fixture):
    """mig(fixture, extra fixture lines, **args) -> (rc, result, path); the fixture is installed once per test."""
    paths = {}

    def run(name, extra=(), **args):
        if name not in paths:
            paths[name] = nvml_fixture(name)
            if extra:
                with paths[name].open("a") as handle:
                    handle.write("\n".join(extra) + "\n")
        rc, result = module_result(gpu_mig, args)
        return rc, result, paths[name]

    return run


H100_MIG_ON = ["gpu.0.mig.current=1", "gpu.0.mig.pending=1", "gpu.1.mig.current=1", "gpu.1.mig.pending=1"]


def test_existing_layouts_are_left_alone(mig):
    rc, result, path = mig("dgx-a100-mig", gpus=[0], layout=["1g.10gb"] * 7)
    assert rc == 0 and result["changed"] is False
    gpu = result["gpus"][0]
    assert gpu["before"] == gpu["after"] == ["1g.10gb"] * 7
    values = read_fixture(path)
    assert [d["uuid"] for d in gpu["mig_devices"]] == [values["gpu.0.gi.%d.ci.0.uuid" % gi] for gi in range(7, 14)]
    rc, result, _path = mig("dgx-a100-mig", gpus=[1], layout=["1g.10gb", "3g.40gb", "2g.20gb"])
    assert rc == 0 and result["changed"] is False


def test_check_then_create_then_idempotent(mig, module_result):
    rc, checked, path = mig("dgx-h100", H100_MIG_ON, gpus=[0], layout=MIXED, _ansible_check_mode=True)
    before = path.read_bytes()
    assert rc == 0 and checked["changed"] is True
    # 1g instances cannot use the eighth memory slice, so the 3g.40gb goes to the upper half
    assert checked["gpus"][0]["created"] == ["3g.40gb@4", "2g.20gb@0", "1g.10gb@2", "1g.10gb@3"]
    assert path.read_bytes() == before

    rc, real, _path = mig("dgx-h100", gpus=[0], layout=MIXED)
    assert rc == 0 and real["changed"] is True
    devices = real["gpus"][0]["mig_devices"]
    assert sorted(d["profile"] for d in devices) == sorted(MIXED)
    assert all(d["uuid"].startswith("MIG-") for d in devices)
    assert len({d["uuid"] for d in devices}) == 4

    rc, again, _path = mig("dgx-h100", gpus=[0], layout=list(reversed(MIXED)))
    assert rc == 0 and again["changed"] is False and again["gpus"][0]["mig_devices"] == devices

    rc, facts = module_result(gpu_facts, {"gather_subset": ["mig"]})
    seen = facts["ansible_facts"]["nvidia"]["gpus"][0]["mig_devices"]
    assert sorted(d["uuid"] for d in seen) == sorted(d["uuid"] for d in devices)


def test_matching_instances_are_kept(mig):
    assert mig("dgx-h100", H100_MIG_ON, gpus=[1], layout=MIXED)[0] == 0
    rc, result, _path = mig("dgx-h100", gpus=[1], layout=["3g.40gb", "3g.40gb"])
    gpu = result["gpus"][0]
    assert rc == 0 and gpu["after"] == ["3g.40gb", "3g.40gb"]
    assert gpu["created"] == ["3g.40gb@0"]
    assert sorted(gpu["destroyed"]) == ["1g.10gb@2", "1g.10gb@3", "2g.20gb@0"]


def test_empty_layout_removes_every_instance(mig):
    rc, result, path = mig("dgx-a100-mig", gpus=[0], layout=[])
    assert rc == 0 and result["changed"] and len(result["gpus"][0]["destroyed"]) == 7
    assert result["gpus"][0]["mig_devices"] == []
    assert not any(key.startswith("gpu.0.gi.") for key in read_fixture(path))


def test_busy_instance_is_not_destroyed(mig):
    rc, result, path = mig("dgx-a100-mig", gpus=[1], layout=["7g.80gb"])
    assert rc == 1
    assert "GPU 1: the 3g.40gb instance (GPU instance 2) would be destroyed but runs processes" in result["msg"]
    assert "force: true" in result["msg"]
    assert path.read_bytes() == (FIXTURES / "dgx-a100-mig.conf").read_bytes()


def test_force_still_meets_nvml_refusal_and_changes_nothing(mig):
    rc, result, path = mig("dgx-a100-mig", gpus=[1], layout=["7g.80gb"], force=True)
    assert rc == 1 and "destroying the 3g.40gb instance (GPU instance 2) failed" in result["msg"]
    assert path.read_bytes() == (FIXTURES / "dgx-a100-mig.conf").read_bytes()


BAD = [
    ("dgx-a100-mig", {"gpus": [0], "layout": ["5g.50gb"]}, "GPU 0: profile 5g.50gb is not offered; this GPU offers"),
    ("dgx-a100-mig", {"gpus": [0], "layout": ["4g.40gb", "4g.40gb"]},
     "GPU 0: layout 4g.40gb + 4g.40gb does not fit this GPU's memory slices and placements: 2 x 4g.40gb (at most 1)"),
    ("dgx-a100-mig", {"gpus": [0], "layout": ["7g.80gb", "1g.10gb"]}, "layout 7g.80gb + 1g.10gb does not fit"),
    ("dgx-a100-mig", {"gpus": [0], "layout": ["1g.10gb"] * 8}, "8 x 1g.10gb (at most 7)"),
    ("dgx-a100-mig", {"gpus": [2], "layout": ["7g.80gb"]},
     "GPU 2: MIG mode is off; enable it with accelops.gpu.gpu_config (mig_mode: true) and reset the GPU"),
    ("dgx-a100-mig", {"gpus": [0, 3], "layout": ["7g.80gb"]}, "GPU 3: MIG mode is off"),
    ("pcie-l40s", {"layout": ["1g.10gb"]}, "GPU 0: MIG is not supported on this GPU; GPU 1: MIG is not supported"),
    ("dgx-a100-mig", {"gpus": [8], "layout": []}, "gpus: index 8 is out of range; this node has GPUs 0-7"),
    ("dgx-a100-mig", {"gpus": ["GPU-deadbeef-0000-0000-0000-000000000000"], "layout": []}, "no GPU with UUID"),
    ("dgx-a100-mig", {"gpus": [0]}, "missing required arguments: layout"),
    ("dgx-a100-mig", {"gpus": [0], "layout": [], "force": "sometimes"}, "argument 'force' is of type"),
    ("gpu-lost", {"layout": []}, "GPU 2 is lost; nothing was changed"),
    ("driver-not-loaded", {"layout": []}, "NVML is not usable on this host"),
]


@pytest.mark.parametrize("name, args, message", BAD, ids=[b[2][:40] for b in BAD])
def test_bad_layouts_change_nothing(mig, name, args, message):
    rc, result, path = mig(name, **args)
    assert rc == 1 and message in result["msg"], result["msg"]
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes()


def test_pending_mig_mode_is_named(mig):
    rc, result, _path = mig("dgx-h100", ["gpu.4.mig.pending=1"], gpus=[4], layout=["7g.80gb"])
    assert rc == 1 and "GPU 4: MIG mode is enabled but waits for a GPU reset" in result["msg"]


@pytest.mark.parametrize("name, message", [
    ("dgx-h100", "GPU 0: MIG mode is off"), ("pcie-l40s", "GPU 0: MIG is not supported on this GPU"),
    ("busy", "GPU 0: MIG is not supported on this GPU"), ("old-driver", "GPU 0: MIG is not supported on this GPU"),
    ("gpu-lost", "GPU 2 is lost"), ("driver-not-loaded", "NVML is not usable on this host"),
])
def test_layout_on_every_fixture_without_mig_is_refused(mig, name, message):
    rc, result, path = mig(name, layout=["1g.10gb"])
    assert rc == 1 and message in result["msg"]
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes()


def test_no_gpu_host_has_nothing_to_lay_out(mig):
    rc, result, _path = mig("no-gpu", layout=["1g.10gb"])
    assert rc == 0 and result["changed"] is False and result["gpus"] == []
