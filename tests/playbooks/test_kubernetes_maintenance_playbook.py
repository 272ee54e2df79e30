"""playbooks/tasks/kubernetes_maintenance.yml (the Kubernetes side of playbooks/upgrade_driver.yml) against the recorded
fake kubectl (tests/sim/host/fake-kubectl.py), on the controller alone: the cordon and its mark, the wait for the pods
that hold GPUs, the eviction through kubectl drain and a PodDisruptionBudget that stops it, a person's cordon left
theirs, and the uncordon. The whole upgrade in Kubernetes runs in the molecule scenario nvidia_driver.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from simnode import ROOT, ansible_env, expose_collection

expose_collection()

KUBECTL = "#!/bin/sh\nexec %(python)s %(script)s \"$@\"\n"

PLAYBOOK = """
- name: One node in or out of service
  hosts: localhost
  gather_facts: false
  vars:
    __k8s_host: localhost
    __k8s_kubectl: %(kubectl)s
    __k8s_kubeconfig: ""
    __k8s_base: ["%(kubectl)s"]
    __k8s_name: gpu01
    __k8s_maintenance_scope: driver upgrade
    kubernetes_maintenance_timeout: 2
    kubernetes_maintenance_poll: 1
  tasks:
    - name: The maintenance's step
      ansible.builtin.include_tasks: %(tasks)s
"""

UPGRADE = "driver upgrade to 570.124.06"


def node(name, unschedulable=False, annotations=None):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"unschedulable": True} if unschedulable else {}}


def pod(name, on="gpu01", owner=None, labels=None, **limits):
    meta = {"name": name, "namespace": "ml", "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": name + "-owner"}]
    return {"metadata": meta, "spec": {"nodeName": on, "containers": [{"name": "c", "resources": {"limits": limits}}]},
            "status": {"phase": "Running"}}


GPU = {"nvidia.com/gpu": "1"}


@pytest.fixture
def cluster(tmp_path):
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(KUBECTL % {"python": sys.executable,
                                  "script": ROOT / "tests" / "sim" / "host" / "fake-kubectl.py"})
    kubectl.chmod(0o755)
    (tmp_path / "play.yml").write_text(PLAYBOOK % {
        "kubectl": kubectl, "tasks": ROOT / "playbooks" / "tasks" / "kubernetes_maintenance.yml"})

    def run(nodes, pods, **extra):
        (tmp_path / "nodes.json").write_text(json.dumps(nodes))
        (tmp_path / "pods.json").write_text(json.dumps(pods))
        (tmp_path / "log").write_text("")
        env = ansible_env(FAKE_KUBE_STATE=str(tmp_path / "nodes.json"), FAKE_KUBE_PODS=str(tmp_path / "pods.json"),
                          FAKE_KUBE_LOG=str(tmp_path / "log"), PATH=os.environ["PATH"])
        extra["ansible_python_interpreter"] = sys.executable
        done = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", "play.yml",
                               "-e", json.dumps(extra)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
        calls = [json.loads(line)[:2] for line in (tmp_path / "log").read_text().splitlines()]
        after = {n["metadata"]["name"]: n for n in json.loads((tmp_path / "nodes.json").read_text())}
        left = [p["metadata"]["name"] for p in json.loads((tmp_path / "pods.json").read_text())]
        return done, calls, after, left

    return run


def test_a_cordon_marks_first_and_waits_for_the_gpu_pods(cluster):
    pods = [pod("train", **GPU), pod("web", cpu="1"), pod("exporter", owner="DaemonSet", **GPU),
            pod("other", on="gpu02"), pod("other-gpu", on="gpu02", **GPU)]
    done, calls, after, left = cluster([node("gpu01"), node("gpu02")], pods,
                                       __k8s_maintenance_action="cordon", __k8s_maintenance_reason=UPGRADE)
    out = (done.stdout + done.stderr).replace("\n", " ")
    assert done.returncode == 2, out[-3000:]
    said = "Pods still hold GPUs of gpu01 after 2 s: ml/train (nvidia.com/gpu=1). The node stays cordoned"
    assert said in out, out[-3000:]
    # The mark before the cordon; then the pods read until the time ran out; nothing evicted.
    assert calls[:3] == [["get", "nodes"], ["annotate", "--overwrite"], ["cordon", "gpu01"]], calls
    assert calls[3:] == [["get", "pods"]] * 3, calls
    assert after["gpu01"]["spec"] == {"unschedulable": True}
    assert after["gpu01"]["metadata"]["annotations"] == {"accelops.gpu/maintenance": UPGRADE}
    assert after["gpu02"]["spec"] == {} and len(left) == 5


def test_eviction_drains_the_node_then_nothing_holds_a_gpu(cluster):
    pods = [pod("train", **GPU), pod("exporter", owner="DaemonSet", **GPU), pod("other", on="gpu02", **GPU)]
    done, calls, after, left = cluster([node("gpu01")], pods, __k8s_maintenance_action="cordon",
                                       __k8s_maintenance_reason=UPGRADE, kubernetes_maintenance_evict=True)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert calls == [["get", "nodes"], ["annotate", "--overwrite"], ["cordon", "gpu01"], ["drain", "gpu01"],
                     ["get", "pods"]]
    assert left == ["exporter", "other"] and after["gpu01"]["spec"] == {"unschedulable": True}


def test_a_disruption_budget_that_stops_the_eviction_is_said(cluster):
    # The drain evicts what it may before the budget stops it: the message does not say that nothing changed.
    pods = [pod("train", **GPU), pod("serve", labels={"fake-kubectl/pdb": "block"}, **GPU)]
    done, calls, after, left = cluster([node("gpu01")], pods, __k8s_maintenance_action="cordon",
                                       __k8s_maintenance_reason=UPGRADE, kubernetes_maintenance_evict=True)
    out = (done.stdout + done.stderr).replace('\\"', '"').replace("\n", " ")
    assert done.returncode == 2, out[-3000:]
    assert "kubectl drain gpu01 failed: error when evicting pods/\"serve\"" in out
    assert "disruption budget" in out
    assert ("The node stays cordoned; the pods that kubectl evicted before it stopped are gone, nothing else was "
            "changed.") in out, out[-3000:]
    assert ["get", "pods"] not in calls and left == ["serve"] and after["gpu01"]["spec"] == {"unschedulable": True}


def test_pods_left_after_the_eviction_are_said_with_the_eviction(cluster):
    # A static pod (its mirror in the API) is not evicted by kubectl drain and holds its GPU until its manifest goes.
    static = pod("static-infer", owner="Node", **GPU)
    static["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "0f3c"}
    done, calls, _after, left = cluster([node("gpu01")], [pod("train", **GPU), static],
                                        __k8s_maintenance_action="cordon", __k8s_maintenance_reason=UPGRADE,
                                        kubernetes_maintenance_evict=True)
    out = (done.stdout + done.stderr).replace("\n", " ")
    assert done.returncode == 2, out[-3000:]
    assert "Pods still hold GPUs of gpu01 after 2 s: ml/static-infer (nvidia.com/gpu=1)." in out, out[-3000:]
    assert "The node stays cordoned, its pods evicted; nothing else was changed." in out, out[-3000:]
    assert left == ["static-infer"] and ["drain", "gpu01"] in calls


def test_a_persons_cordon_stays_theirs(cluster):
    nodes = [node("gpu01", unschedulable=True, annotations={"owner": "ops"})]
    done, calls, after, _left = cluster(nodes, [], __k8s_maintenance_action="cordon", __k8s_maintenance_reason=UPGRADE)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert calls == [["get", "nodes"], ["get", "pods"]]
    done, calls, after, _left = cluster(nodes, [], __k8s_maintenance_action="uncordon")
    assert done.returncode == 0 and calls == [["get", "nodes"]]
    assert after["gpu01"] == nodes[0]


def test_the_uncordon_gives_back_only_a_node_this_maintenance_holds(cluster):
    nodes = [node("gpu01", unschedulable=True, annotations={"accelops.gpu/maintenance": UPGRADE, "keep": "x"})]
    done, calls, after, _left = cluster(nodes, [], __k8s_maintenance_action="uncordon")
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert calls == [["get", "nodes"], ["uncordon", "gpu01"], ["annotate", "node"]]
    assert after["gpu01"]["spec"] == {} and after["gpu01"]["metadata"]["annotations"] == {"keep": "x"}
    assert "changed=1" in done.stdout


def test_a_node_kubernetes_does_not_know_is_one_clear_error(cluster):
    done, calls, _after, _left = cluster([node("gpu02")], [], __k8s_maintenance_action="cordon",
                                         __k8s_maintenance_reason=UPGRADE)
    assert done.returncode == 2 and "Kubernetes does not know the node gpu01" in done.stdout, done.stdout[-3000:]
    assert calls == [["get", "nodes"]]
