"""playbooks/kubernetes_health.yml against a recorded fake kubectl, on a simulated fleet.

No API server runs here: kubectl is a stand-in (tests/sim/host/fake-kubectl.py) that keeps the nodes of a cluster in a
JSON file, answers `get nodes --output json` in the shape of kubectl 1.31's (a List of Node objects with
metadata.annotations and spec.unschedulable), does `cordon`, `uncordon` and `annotate` on that file as the API server
would (NotFound for an unknown node), and records every command. The GPU nodes are the controller itself (a local
connection each), each with its own NVML fixture through a Python that sets FAKE_NVML_FIXTURE: the verdicts come from
the real gpu_health.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from simnode import FAKENVML, FIXTURES, ROOT, ansible_env, expose_collection

expose_collection()

# kubectl: tests/sim/host/fake-kubectl.py, run by the controller's Python.
FAKE_KUBECTL = "#!/bin/sh\nexec %(python)s %(script)s \"$@\"\n"

# Each node's Python: the controller's, with the node's fixture.
PYTHON = "#!/bin/sh\nFAKE_NVML_FIXTURE=%(fixture)s exec %(python)s \"$@\"\n"

INVENTORY = """
gpu_nodes:
  hosts:
    gpu-a01.example.com: {fixture: dgx-h100}
    gpu-b07: {fixture: gpu-lost}
    gpu-c03: {fixture: busy}
    gpu-e05: {fixture: dgx-h100}
    gpu-f06: {fixture: pcie-l40s}
    gpu-g08: {fixture: dgx-h100}
    gpu-x09: {fixture: gpu-lost}
    gpu-down: {ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 9, ansible_ssh_timeout: 3}
  vars:
    ansible_connection: local
    ansible_python_interpreter: "%(work)s/python-{{ fixture }}"
    accelops_gpu_sysfs_root: "%(work)s/sys/{{ fixture }}"
"""


def k8s_node(name, unschedulable=False, annotations=None):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"unschedulable": True} if unschedulable else {}}


# gpu-a01 healthy; gpu-b07 a lost GPU (critical); gpu-c03 persistence off (a warning); gpu-e05 healthy, cordoned by a
# person; gpu-f06 healthy again after this check cordoned it; gpu-g08 cordoned by a person though sick; gpu-down not
# reachable, marked by an earlier run (it must stay cordoned); gpu-x09 not in the cluster.
CLUSTER = [
    k8s_node("gpu-a01"),
    k8s_node("gpu-b07", annotations={"node.alpha.kubernetes.io/ttl": "0"}),
    k8s_node("gpu-c03"),
    k8s_node("gpu-e05", unschedulable=True),
    k8s_node("gpu-f06", unschedulable=True, annotations={"accelops.gpu/health": "GPU 1 is lost"}),
    k8s_node("gpu-g08", unschedulable=True, annotations={"owner": "ops"}),
    k8s_node("gpu-down", unschedulable=True, annotations={"accelops.gpu/health": "GPU 0 is lost"}),
]


@pytest.fixture
def fleet(tmp_path):
    if not FAKENVML.exists():
        pytest.fail("build the fake NVML first: make units")
    (tmp_path / "bin").mkdir()
    kubectl = tmp_path / "bin" / "kubectl"
    kubectl.write_text(FAKE_KUBECTL % {"python": sys.executable,
                                       "script": ROOT / "tests" / "sim" / "host" / "fake-kubectl.py"})
    kubectl.chmod(0o755)
    for fixture in ("dgx-h100", "gpu-lost", "busy", "pcie-l40s"):
        python = tmp_path / ("python-%s" % fixture)
        python.write_text(PYTHON % {"fixture": FIXTURES / ("%s.conf" % fixture), "python": sys.executable})
        python.chmod(0o755)
        subprocess.run([sys.executable, str(ROOT / "tests" / "sim" / "host" / "mksysfs.py"),
                        str(FIXTURES / ("%s.conf" % fixture)), str(tmp_path / "sys" / fixture)], check=True)
    (tmp_path / "inventory.yml").write_text(INVENTORY % {"work": tmp_path})
    (tmp_path / "state.json").write_text(json.dumps(CLUSTER))
    (tmp_path / "health.yml").write_text(
        "- name: GPU health into Kubernetes\n  ansible.builtin.import_playbook: accelops.gpu.kubernetes_health\n")

    def run(*args):
        (tmp_path / "log").write_text("")
        env = ansible_env(LD_LIBRARY_PATH=str(FAKENVML.parent), FAKE_KUBE_STATE=str(tmp_path / "state.json"),
                          FAKE_KUBE_LOG=str(tmp_path / "log"), PATH="%s:%s" % (tmp_path / "bin", os.environ["PATH"]))
        done = subprocess.run(["ansible-playbook", "-i", "inventory.yml", "health.yml", *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, check=False)
        calls = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
        try:
            state = {n["metadata"]["name"]: n for n in json.loads((tmp_path / "state.json").read_text())}
        except ValueError:
            state = None
        return done, calls, state

    return run


def changes(calls):
    return [call for call in calls if call[:1] != ["get"] and call[2:3] != ["get"]]


def test_cordons_the_sick_gives_back_the_healed_and_leaves_the_rest(fleet):
    done, calls, state = fleet()
    out = done.stdout + done.stderr
    # The unreachable node fails the run; every other node was judged.
    assert done.returncode == 4, out[-4000:]
    assert "gpu-down" in out and "UNREACHABLE" in out
    assert changes(calls) == [
        ["annotate", "--overwrite", "node", "gpu-b07",
         "accelops.gpu/health=GPU 2 is lost: it fell off the bus or stopped answering"],
        ["cordon", "gpu-b07"],
        ["uncordon", "gpu-f06"],
        ["annotate", "node", "gpu-f06", "accelops.gpu/health-"],
    ], out[-4000:]
    assert state["gpu-b07"]["spec"] == {"unschedulable": True}
    assert state["gpu-b07"]["metadata"]["annotations"]["node.alpha.kubernetes.io/ttl"] == "0"
    assert state["gpu-f06"]["spec"] == {} and "accelops.gpu/health" not in state["gpu-f06"]["metadata"]["annotations"]
    # A cordon a person set stays, healthy or not; a node not judged stays as it is; a warning is below the default.
    assert state["gpu-e05"]["spec"] == {"unschedulable": True}
    assert state["gpu-g08"]["spec"] == {"unschedulable": True}
    assert state["gpu-down"]["metadata"]["annotations"] == {"accelops.gpu/health": "GPU 0 is lost"}
    assert state["gpu-c03"]["spec"] == {}
    assert "gpu-x09 is not a node of this Kubernetes cluster: nothing was done for it" in out
    # The node's name is the inventory name up to the first dot.
    assert state["gpu-a01"]["spec"] == {}


def test_a_second_run_changes_nothing_and_warning_cordons_more(fleet):
    fleet()
    done, calls, _state = fleet("--limit", "!gpu-down")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert changes(calls) == []
    assert "changed=0" in done.stdout
    done, calls, state = fleet("--limit", "!gpu-down", "-e", "kubernetes_health_cordon_on=warning")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert [call[:-1] for call in changes(calls)] == [["annotate", "--overwrite", "node", "gpu-c03"], ["cordon"]]
    assert state["gpu-c03"]["spec"] == {"unschedulable": True}
    assert state["gpu-c03"]["metadata"]["annotations"]["accelops.gpu/health"].count("persistence") == 2


def test_check_mode_reads_and_changes_nothing(fleet):
    done, calls, state = fleet("--check", "--limit", "!gpu-down")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert changes(calls) == [] and calls == [["get", "nodes", "--output", "json"]]
    assert state["gpu-b07"]["spec"] == {}
    assert "cordon gpu-b07: GPU 2 is lost" in done.stdout


@pytest.mark.parametrize("extra, message", [
    ({"kubernetes_health_cordon_on": "never"}, "kubernetes_health_cordon_on must be warning or critical"),
    ({"kubernetes_kubeconfig": "/tmp/a\nb"}, "kubernetes_kubectl and kubernetes_kubeconfig paths on one line"),
])
def test_bad_settings_change_nothing(fleet, extra, message):
    done, calls, _state = fleet("--limit", "!gpu-down", "-e", json.dumps(extra))
    out = (done.stdout + done.stderr).replace("\\n", "\n").replace('\\"', '"')
    assert done.returncode == 2 and message in out, out[-3000:]
    assert "Nothing was changed." in out
    assert calls == []


def test_kubectl_failing_is_said_and_nothing_is_decided(fleet, tmp_path):
    (tmp_path / "state.json").write_text("not json")
    done, calls, _state = fleet("--limit", "!gpu-down")
    assert done.returncode == 2, (done.stdout + done.stderr)[-3000:]
    assert calls == [["get", "nodes", "--output", "json"]]
    assert "Read the nodes from Kubernetes" in done.stdout
