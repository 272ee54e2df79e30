"""The EXAMPLES of gpu_feature_labels and nfd_feature_file, pasted into a play as they stand, run on this machine (a
local connection) against the fake NVML of a DGX H100 and the PCI bus mksysfs.py makes for it: the feature file lands
with GPU Feature Discovery's labels, and a second run changes nothing. Only NFD's directory is moved under a temporary
one; no Kubernetes cluster runs here."""

from __future__ import annotations

import re
import subprocess
import sys

import yaml

from simnode import FAKENVML, FIXTURES, ROOT, ansible_env, filter_docs

FEATURES_D = "/etc/kubernetes/node-feature-discovery/features.d"


def examples(name):
    return filter_docs(name)["EXAMPLES"]


def test_the_examples_run_as_pasted_and_write_the_feature_file(tmp_path):
    assert FAKENVML.exists(), "build the fake NVML first: make units"
    sysfs = tmp_path / "sys"
    subprocess.run([sys.executable, str(ROOT / "tests/sim/host/mksysfs.py"), str(FIXTURES / "dgx-h100.conf"),
                    str(sysfs)], check=True, capture_output=True)
    features = tmp_path / "features.d"
    tasks = examples("gpu_feature_labels") + examples("nfd_feature_file").replace(FEATURES_D, str(features))
    play = [{
        "name": "The examples", "hosts": "localhost", "connection": "local", "gather_facts": False,
        "vars": {"ansible_python_interpreter": sys.executable},
        "environment": {"FAKE_NVML_FIXTURE": str(FIXTURES / "dgx-h100.conf")},
        "module_defaults": {"accelops.gpu.gpu_facts": {"sysfs_root": str(sysfs)}},
        "tasks": yaml.safe_load(tasks),
    }]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play), encoding="utf-8")
    env = ansible_env(LD_LIBRARY_PATH=str(FAKENVML.parent))
    runs = [subprocess.run(["ansible-playbook", "-i", "localhost,", "play.yml"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=False, timeout=300) for run in ("first", "second")]
    for run in runs:
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert '"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"' in runs[0].stdout
    assert '"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED"' in runs[0].stdout
    assert '"nvidia.com/gpu.replicas": "4"' in runs[0].stdout
    text = (features / "accelops-gpu").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines == sorted(lines) and len(lines) == 25 and text.endswith("\n")
    assert {"nvidia.com/gpu.count=8", "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory=81559",
            "nvidia.com/gpu.family=hopper", "nvidia.com/gpu.mode=compute", "nvidia.com/mig.strategy=single",
            "nvidia.com/cuda.driver-version.full=550.54.15", "nvidia.com/gpu.machine=unknown"} <= set(lines)
    assert re.search(r"changed=[1-9]", runs[0].stdout)
    assert re.search(r"changed=0 ", runs[1].stdout), runs[1].stdout[-2000:]
