"""The Kubernetes health check's decisions: whom to cordon, whom to give back, whom to leave alone, and kubectl's
commands for it."""

from __future__ import annotations

import json

import pytest

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import KubernetesError
from ansible_collections.accelops.gpu.plugins.plugin_utils._kubernetes_health import (
    ANNOTATION,
    health_actions,
    kubectl_steps,
    parse_nodes,
)

LOST = {"gpu": 2, "code": "gpu_lost", "severity": "critical", "message": "GPU 2 is lost"}
WARM = {"gpu": 1, "code": "temperature_slowdown", "severity": "warning", "message": "GPU 1 is hot"}


def listing(*nodes):
    return json.dumps({"kind": "List", "items": [
        {"metadata": {"name": name, "annotations": notes}, "spec": {"unschedulable": True} if cordoned else {}}
        for name, cordoned, notes in nodes]})


def verdict(name, status, *findings):
    return {"name": name, "verdict": status, "findings": list(findings)}


@pytest.mark.parametrize("node, judged, cordon_on, expected", [
    (("n1", False, {}), verdict("n1", "critical", LOST, WARM), "critical", [("cordon", "GPU 2 is lost")]),
    (("n1", False, {}), verdict("n1", "critical", LOST, WARM), "warning", [("cordon", "GPU 2 is lost; GPU 1 is hot")]),
    (("n1", False, {}), verdict("n1", "warning", WARM), "critical", []),
    (("n1", True, {}), verdict("n1", "critical", LOST), "critical", []),  # a person's cordon
    (("n1", True, {}), verdict("n1", "ok"), "critical", []),
    (("n1", True, {ANNOTATION: "GPU 2 is lost"}), verdict("n1", "critical", LOST), "critical", []),
    (("n1", True, {ANNOTATION: "GPU 0 is lost"}), verdict("n1", "critical", LOST), "critical",
     [("annotate", "GPU 2 is lost")]),
    (("n1", True, {ANNOTATION: "GPU 2 is lost"}), verdict("n1", "ok"), "critical", [("uncordon", None)]),
    (("n1", True, {ANNOTATION: "x"}), verdict("n1", "warning", WARM), "critical", [("uncordon", None)]),
    (("n1", False, {ANNOTATION: "x"}), verdict("n1", "ok"), "critical", [("unmark", None)]),
    (("n1", False, {ANNOTATION: "x"}), verdict("n1", "critical", LOST), "critical", [("cordon", "GPU 2 is lost")]),
    (("n1", True, {ANNOTATION: "x"}), verdict("n1", "unknown"), "critical", []),  # no news is not good news
    (("n2", False, {}), verdict("n1", "critical", LOST), "critical", [("missing", None)]),
])
def test_health_actions(node, judged, cordon_on, expected):
    actions = health_actions(listing(node), [judged], cordon_on)
    assert [(a["action"], a["reason"]) for a in actions] == expected


def test_the_reason_is_one_line_and_bounded():
    long = {"severity": "critical", "message": "x\n" * 2000}
    (action,) = health_actions(listing(("n1", False, {})), [verdict("n1", "critical", long)])
    assert "\n" not in action["reason"] and len(action["reason"]) < 200 and action["reason"].endswith("...")


def test_steps_mark_before_cordon_and_uncordon_before_unmark():
    actions = [{"node": "n1", "action": "cordon", "reason": "GPU 2 is lost"},
               {"node": "n2", "action": "uncordon", "reason": None},
               {"node": "n3", "action": "missing", "reason": None}]
    steps = kubectl_steps(actions, "/usr/bin/kubectl", "/etc/k.conf")
    assert [step["argv"] for step in steps] == [
        ["/usr/bin/kubectl", "--kubeconfig", "/etc/k.conf", "annotate", "--overwrite", "node", "n1",
         "accelops.gpu/health=GPU 2 is lost"],
        ["/usr/bin/kubectl", "--kubeconfig", "/etc/k.conf", "cordon", "n1"],
        ["/usr/bin/kubectl", "--kubeconfig", "/etc/k.conf", "uncordon", "n2"],
        ["/usr/bin/kubectl", "--kubeconfig", "/etc/k.conf", "annotate", "node", "n2", "accelops.gpu/health-"],
        None,
    ]
    assert kubectl_steps([{"node": "n1", "action": "unmark"}])[0]["argv"] == [
        "kubectl", "annotate", "node", "n1", "accelops.gpu/health-"]


@pytest.mark.parametrize("call, message", [
    (lambda: health_actions(listing(), [], "never"), "cordon_on must be warning or critical"),
    (lambda: health_actions("{", []), "nodes must be what kubectl get nodes -o json printed"),
    (lambda: health_actions({"items": "x"}, []), "a List with items"),
    (lambda: health_actions({"items": [{"metadata": {}}]}, []), "an item without metadata.name"),
    (lambda: health_actions(listing(), [{"name": "n1"}]), "verdicts must be a list of"),
    (lambda: health_actions(listing(), [verdict("Node_1", "ok")]), "'Node_1' is not a Kubernetes node name"),
    (lambda: health_actions(listing(), [verdict("n1", "ok"), verdict("n1", "ok")]), "each node once, but n1"),
    (lambda: kubectl_steps([{"node": "n1", "action": "drain"}]), "must be one of cordon"),
    (lambda: kubectl_steps([{"node": "n1", "action": "cordon", "reason": "a\nb"}]), "one line of text"),
    (lambda: kubectl_steps([{"node": "n1;rm", "action": "unmark"}]), "is not a Kubernetes node name"),
    (lambda: kubectl_steps([], "kube\nctl"), "kubectl must be a path on one line"),
    (lambda: kubectl_steps([], "kubectl", None), "kubeconfig must be a path on one line"),
])
def test_bad_input(call, message):
    with pytest.raises(KubernetesError, match=message):
        call()


def test_parse_nodes_reads_the_mark_and_the_cordon():
    nodes = parse_nodes(listing(("n1", True, {ANNOTATION: "why"}), ("n2", False, {})))
    assert nodes == {"n1": {"unschedulable": True, "mark": "why"}, "n2": {"unschedulable": False, "mark": None}}
