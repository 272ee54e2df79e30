"""The Kubernetes health check's decisions: whom to cordon, whom to give back, whom to leave alone, and kubectl's
commands for it."""

from __future__ import annotations

import json

import pytest

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import KubernetesError
from ansible_collections.accelops.gpu.plugins.plugin_utils._kubernetes_health import (
    ANNOTATION,
    MAINTENANCE,
    gpu_pods,
    health_actions,
    kubectl_steps,
    maintenance_action,
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
    nodes = parse_nodes(listing(("n1", True, {ANNOTATION: "why"}), ("n2", False, {MAINTENANCE: "upgrade"})))
    assert nodes == {"n1": {"unschedulable": True, "mark": "why", "maintenance": None},
                     "n2": {"unschedulable": False, "mark": None, "maintenance": "upgrade"}}


# Maintenance: the driver upgrade's cordon and uncordon.
UPGRADE = "driver upgrade to 570.124.06"


@pytest.mark.parametrize("node, holder, cordon, uncordon", [
    # Schedulable: marked first, then cordoned; nothing to give back.
    (("n1", False, {}), "none",
     [["annotate", "--overwrite", "node", "n1", MAINTENANCE + "=" + UPGRADE], ["cordon", "n1"]], []),
    # Held by this maintenance: the mark follows the reason; given back, then unmarked.
    (("n1", True, {MAINTENANCE: UPGRADE}), "maintenance", [],
     [["uncordon", "n1"], ["annotate", "node", "n1", MAINTENANCE + "-"]]),
    (("n1", True, {MAINTENANCE: "driver upgrade to 550.127.08 failed: x"}), "maintenance",
     [["annotate", "--overwrite", "node", "n1", MAINTENANCE + "=" + UPGRADE]],
     [["uncordon", "n1"], ["annotate", "node", "n1", MAINTENANCE + "-"]]),
    # The health check's cordon is taken over; its mark gives way.
    (("n1", True, {ANNOTATION: "GPU 2 is lost"}), "health",
     [["annotate", "--overwrite", "node", "n1", MAINTENANCE + "=" + UPGRADE],
      ["annotate", "node", "n1", ANNOTATION + "-"]], []),
    # A person's cordon, and another maintenance's, stay theirs.
    (("n1", True, {}), "other", [], []),
    (("n1", True, {MAINTENANCE: "kernel update"}), "other", [], []),
    # Someone uncordoned a node held for this maintenance: cordoned again, or its stale mark removed.
    (("n1", False, {MAINTENANCE: UPGRADE}), "none",
     [["annotate", "--overwrite", "node", "n1", MAINTENANCE + "=" + UPGRADE], ["cordon", "n1"]],
     [["annotate", "node", "n1", MAINTENANCE + "-"]]),
])
def test_maintenance_cordons_and_gives_back_only_its_own(node, holder, cordon, uncordon):
    nodes = listing(node, ("other", True, {}))
    got = maintenance_action(nodes, "n1", "cordon", UPGRADE, scope="driver upgrade", kubectl="/k")
    assert got["holder"] == holder and got["argvs"] == [["/k", *argv] for argv in cordon]
    got = maintenance_action(nodes, "n1", "uncordon", scope="driver upgrade", kubeconfig="/etc/kube.conf")
    assert got["argvs"] == [["kubectl", "--kubeconfig", "/etc/kube.conf", *argv] for argv in uncordon]
    assert got["unschedulable"] == node[1]


def test_maintenance_reason_is_one_line():
    reason = "driver upgrade failed:\n\tGPU 2\x00 lost " + "x" * 300
    got = maintenance_action(listing(("n1", False, {})), "n1", "cordon", reason, scope="driver upgrade")
    text = got["argvs"][0][-1].split("=", 1)[1]
    assert text.startswith("driver upgrade failed: GPU 2 lost x") and len(text) == 200 and text.endswith("...")


@pytest.mark.parametrize("args, kwargs, message", [
    (("n1", "drain", UPGRADE), {}, "action must be cordon or uncordon"),
    (("N1", "cordon", UPGRADE), {}, "node must be a Kubernetes node name"),
    (("n9", "cordon", UPGRADE), {}, "Kubernetes does not know the node n9"),
    (("n1", "cordon", None), {}, "a cordon for maintenance needs a reason"),
    (("n1", "cordon", " \n "), {}, "a cordon for maintenance needs a reason"),
    (("n1", "cordon", "kernel"), {"scope": "driver upgrade"}, "does not start with the maintenance's scope"),
    (("n1", "uncordon"), {"scope": "a\nb"}, "scope must be one line"),
    (("n1", "uncordon"), {"kubectl": ""}, "kubectl must be a path on one line"),
    (("n1", "uncordon"), {"kubeconfig": "/a\n/b"}, "kubeconfig must be a path on one line"),
])
def test_maintenance_refuses_bad_input(args, kwargs, message):
    with pytest.raises(KubernetesError, match=message):
        maintenance_action(listing(("n1", False, {})), *args, **kwargs)


def test_maintenance_refuses_what_is_not_kubectls_listing():
    with pytest.raises(KubernetesError, match="nodes must be what kubectl get nodes -o json printed"):
        maintenance_action("error: You must be logged in to the server (Unauthorized)", "n1", "uncordon")


def test_the_health_check_leaves_a_node_held_for_maintenance():
    nodes = listing(("n1", True, {MAINTENANCE: UPGRADE}),
                    ("n2", True, {MAINTENANCE: UPGRADE, ANNOTATION: "GPU 2 is lost"}),
                    ("n3", False, {MAINTENANCE: UPGRADE}))
    assert health_actions(nodes, [verdict("n1", "critical", LOST), verdict("n2", "ok"),
                                  verdict("n3", "critical", LOST)]) == [
        {"node": "n3", "action": "cordon", "reason": "GPU 2 is lost"}]


def pod(name, phase="Running", owner=None, namespace="ml", **resources):
    containers = [{"name": "main", "resources": {"limits": dict(resources)}}]
    meta = {"name": name, "namespace": namespace}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": "x"}]
    return {"metadata": meta, "spec": {"containers": containers}, "status": {"phase": phase}}


def test_gpu_pods_are_the_running_pods_that_ask_for_nvidia_resources():
    items = [
        pod("train", **{"nvidia.com/gpu": 2, "cpu": "4"}),
        pod("infer", phase="Pending", **{"nvidia.com/mig-1g.10gb": "1"}),
        pod("shared", **{"nvidia.com/gpu.shared": 1}),
        pod("web", cpu="1"),
        pod("done", phase="Succeeded", **{"nvidia.com/gpu": 1}),
        pod("failed", phase="Failed", **{"nvidia.com/gpu": 1}),
        pod("exporter", owner="DaemonSet", namespace="gpu", **{"nvidia.com/gpu": 1}),
        pod("zero", **{"nvidia.com/gpu": 0}),
        {"metadata": {"name": "init", "ownerReferences": [{"kind": "ReplicaSet"}]},
         "spec": {"initContainers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}], "containers": [{}]},
         "status": {}},
    ]
    assert gpu_pods(json.dumps({"kind": "List", "items": items})) == [
        "ml/train (nvidia.com/gpu=2)", "ml/infer (nvidia.com/mig-1g.10gb=1)", "ml/shared (nvidia.com/gpu.shared=1)",
        "default/init (nvidia.com/gpu=1)"]
    assert gpu_pods({"kind": "List", "items": []}) == []


def test_gpu_pods_count_what_the_whole_pod_holds():
    def limits(amount, **extra):
        return dict(extra, resources={"limits": {"nvidia.com/gpu": amount}})

    def spec(containers, init=()):
        return {"metadata": {"name": "p"}, "spec": {"containers": containers, "initContainers": list(init)}}

    cases = [
        # Two containers with a GPU each hold two.
        (spec([limits("1"), limits(1), {}]), "nvidia.com/gpu=2"),
        # An init container runs before them: the larger of the two counts.
        (spec([limits(1)], [limits(4)]), "nvidia.com/gpu=4"),
        (spec([limits(2), limits(1)], [limits(2)]), "nvidia.com/gpu=3"),
        # A sidecar (an init container that keeps running) holds its GPU beside the containers.
        (spec([limits(1)], [limits(1, restartPolicy="Always")]), "nvidia.com/gpu=2"),
        (spec([limits("00"), limits(1)]), "nvidia.com/gpu=1"),
        # What is not a count is said as it stands.
        (spec([limits("1"), limits("2x")]), "nvidia.com/gpu=2x"),
    ]
    for item, said in cases:
        assert gpu_pods({"items": [item]}) == ["default/p (%s)" % said], item


@pytest.mark.parametrize("text, message", [
    ("No resources found", "pods must be what kubectl get pods -o json printed"),
    ('{"items": 3}', "a List with items"),
    ('{"items": [{"metadata": {}}]}', "an item without metadata.name"),
    ('{"items": [{"metadata": {"name": "p"}, "status": "Running"}]}', "p has a status or a spec that is not a mapping"),
])
def test_gpu_pods_refuse_what_is_not_kubectls_listing(text, message):
    with pytest.raises(KubernetesError, match=message):
        gpu_pods(text)
