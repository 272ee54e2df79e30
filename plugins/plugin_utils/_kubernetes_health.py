# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: GPU health into Kubernetes, as the Slurm health check does it for Slurm.

A node whose verdict reaches the threshold is cordoned, with the findings in an annotation of the collection's own
(the mark that it was this check that cordoned it); a node that the check cordoned is uncordoned once it is healthy.
A node cordoned by anyone else (no mark), a node without a verdict (unreachable, NVML failing) and a node Kubernetes
does not know are left as they are: no news is never good news.

Maintenance (a driver upgrade) cordons a node with a mark of its own, accelops.gpu/maintenance, and waits until no pod
on it holds a GPU; while that mark is on a cordoned node the health check leaves the node to the maintenance.
"""

from __future__ import annotations

import json
import re

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import KubernetesError
from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_nodes import (
    HEALTH_SEVERITIES,
    _health_reason,
    check_verdicts,
    one_line,
)

ANNOTATION = "accelops.gpu/health"
MAINTENANCE = "accelops.gpu/maintenance"
# Resources that hold a GPU or a part of one: nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-1g.10gb, ...
GPU_RESOURCE = "nvidia.com/"
# RFC 1123 subdomain: what Kubernetes allows as a node name.
NODE_NAME = re.compile(r"\A(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


def _items(listing, kind):
    """(item, its metadata) of each item of ``kubectl get <kind> -o json`` (its text or the parsed object)."""
    if isinstance(listing, str):
        try:
            listing = json.loads(listing)
        except ValueError as exc:
            raise KubernetesError("%s must be what kubectl get %s -o json printed: %s" % (kind, kind, exc)) from None
    if not isinstance(listing, dict) or not isinstance(listing.get("items"), list):
        raise KubernetesError("%s must be what kubectl get %s -o json printed (a List with items)" % (kind, kind))
    for item in listing["items"]:
        meta = item.get("metadata") if isinstance(item, dict) else None
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            raise KubernetesError("%s: an item without metadata.name" % kind)
        yield item, meta


def parse_nodes(listing):
    """{name: {unschedulable, mark}} from ``kubectl get nodes -o json`` (its text or the parsed object)."""
    nodes = {}
    for item, meta in _items(listing, "nodes"):
        annotations = meta.get("annotations") or {}
        spec = item.get("spec") or {}
        if not isinstance(annotations, dict) or not isinstance(spec, dict):
            raise KubernetesError("nodes: %s has annotations or a spec that is not a mapping" % meta["name"])
        nodes[meta["name"]] = {"unschedulable": spec.get("unschedulable") is True, "mark": annotations.get(ANNOTATION),
                               "maintenance": annotations.get(MAINTENANCE)}
    return nodes


def health_actions(listing, verdicts, cordon_on="critical"):
    """What to tell Kubernetes after a health check: [{node, action, reason}], action cordon (with the reason for the
    annotation), annotate (a node this check cordoned, with new findings), uncordon (a node this check cordoned, now
    healthy), unmark (the mark left on a node that someone else uncordoned), or missing (a judged node Kubernetes does
    not know: said, not acted on)."""
    if cordon_on not in HEALTH_SEVERITIES[1:]:
        raise KubernetesError("cordon_on must be warning or critical, got %r" % (cordon_on,))
    check_verdicts(verdicts, KubernetesError)
    bad = sorted({v["name"] for v in verdicts if not NODE_NAME.match(v["name"])})
    if bad:
        raise KubernetesError("verdicts: %s is not a Kubernetes node name (lower-case letters, digits, - and .)"
                              % ", ".join(repr(name) for name in bad))
    nodes = parse_nodes(listing)
    actions = []
    for entry in verdicts:
        node = nodes.get(entry["name"])
        if node is None:
            actions.append({"node": entry["name"], "action": "missing", "reason": None})
            continue
        if entry["verdict"] not in HEALTH_SEVERITIES:
            continue
        if node["unschedulable"] and node["maintenance"] is not None:
            # Taken out for maintenance (a driver upgrade): the maintenance gives it back, not the health check.
            continue
        ours = node["mark"] is not None
        if HEALTH_SEVERITIES.index(entry["verdict"]) >= HEALTH_SEVERITIES.index(cordon_on):
            # One printable line of at most 200 characters, as Slurm's drain reasons, for `kubectl describe node`.
            reason = _health_reason("accelops.gpu", entry.get("findings") or [], cordon_on)[len("accelops.gpu "):]
            if not node["unschedulable"]:
                actions.append({"node": entry["name"], "action": "cordon", "reason": reason})
            elif ours and node["mark"] != reason:
                actions.append({"node": entry["name"], "action": "annotate", "reason": reason})
        elif ours:
            actions.append({"node": entry["name"], "action": "uncordon" if node["unschedulable"] else "unmark",
                            "reason": None})
    return actions


def kubectl_steps(actions, kubectl="kubectl", kubeconfig=""):
    """The kubectl commands of the actions, in order: [{node, action, reason, argv}], one per command; an action
    missing is kept without argv (it is said, not done)."""
    base = _base(kubectl, kubeconfig)
    if not isinstance(actions, list) or not all(isinstance(a, dict) and isinstance(a.get("node"), str)
                                                for a in actions):
        raise KubernetesError("actions must be the list that _kubernetes_health_actions gives, got %r" % (actions,))
    steps = []
    for action in actions:
        node, what, reason = action["node"], action.get("action"), action.get("reason")
        if not NODE_NAME.match(node):
            raise KubernetesError("actions: %r is not a Kubernetes node name" % (node,))
        if what in ("cordon", "annotate") and (not isinstance(reason, str) or any(c in reason for c in "\0\n\r")):
            raise KubernetesError("actions: the reason for %s must be one line of text, got %r" % (node, reason))
        mark = ["annotate", "--overwrite", "node", node, "%s=%s" % (ANNOTATION, reason)]
        unmark = ["annotate", "node", node, ANNOTATION + "-"]
        # The mark first: a node cordoned without it would look cordoned by a person, and never be given back.
        argvs = {"cordon": [mark, ["cordon", node]], "annotate": [mark], "uncordon": [["uncordon", node], unmark],
                 "unmark": [unmark], "missing": [None]}
        if what not in argvs:
            raise KubernetesError("actions: the action for %s must be one of %s, got %r"
                                  % (node, ", ".join(argvs), what))
        steps.extend({"node": node, "action": what, "reason": reason, "argv": None if argv is None else base + argv}
                     for argv in argvs[what])
    return steps


def _base(kubectl, kubeconfig):
    if not isinstance(kubectl, str) or not kubectl or any(c in kubectl for c in "\0\n\r"):
        raise KubernetesError("kubectl must be a path on one line, got %r" % (kubectl,))
    if not isinstance(kubeconfig, str) or any(c in kubeconfig for c in "\0\n\r"):
        raise KubernetesError("kubeconfig must be a path on one line, got %r" % (kubeconfig,))
    return [kubectl] + (["--kubeconfig", kubeconfig] if kubeconfig else [])


def maintenance_action(listing, node, action, reason=None, *, scope="", kubectl="kubectl", kubeconfig=""):
    """What to tell Kubernetes to take one node out of service for maintenance (action cordon) or to give it back
    (uncordon), from ``kubectl get nodes -o json``.

    holder says who had cordoned the node: none (it is schedulable), maintenance (this maintenance: the mark
    accelops.gpu/maintenance, whose text starts with scope), health (the health check's mark alone), other (a person,
    another tool, or another maintenance of this collection). cordon: the mark first, then the cordon, so that a node is
    never cordoned without it; a node the health check cordoned is taken over (its mark gives way to the maintenance's);
    a node held by anyone else stays theirs. uncordon: only a node held by this maintenance is uncordoned, then its
    mark removed. Returns {node, holder, unschedulable, mark, argvs (kubectl commands, in order; empty when nothing is
    to be done)}."""
    if action not in ("cordon", "uncordon"):
        raise KubernetesError("action must be cordon or uncordon, got %r" % (action,))
    if not isinstance(node, str) or not NODE_NAME.match(node):
        raise KubernetesError("node must be a Kubernetes node name (lower-case letters, digits, - and .), got %r"
                              % (node,))
    if not isinstance(scope, str) or scope != one_line(scope, 64):
        raise KubernetesError("scope must be one line of at most 64 printable characters, got %r" % (scope,))
    wanted = None
    if action == "cordon":
        wanted = one_line(reason) if isinstance(reason, str) else ""
        if not wanted:
            raise KubernetesError("reason: a cordon for maintenance needs a reason (printable text), got %r"
                                  % (reason,))
        if not wanted.startswith(scope):
            raise KubernetesError("reason: %r does not start with the maintenance's scope %r" % (wanted, scope))
    base = _base(kubectl, kubeconfig)
    found = parse_nodes(listing).get(node)
    if found is None:
        raise KubernetesError("Kubernetes does not know the node %s" % node)
    mark = found["maintenance"]
    mine = isinstance(mark, str) and mark.startswith(scope)
    if not found["unschedulable"]:
        holder = "none"
    elif mark is not None:
        holder = "maintenance" if mine else "other"
    else:
        holder = "health" if found["mark"] is not None else "other"
    annotate = ["annotate", "--overwrite", "node", node, "%s=%s" % (MAINTENANCE, wanted)]
    unmark = ["annotate", "node", node, MAINTENANCE + "-"]
    argvs = []
    if action == "cordon":
        if holder == "none":
            argvs = [annotate, ["cordon", node]]
        elif holder == "maintenance" and mark != wanted:
            argvs = [annotate]
        elif holder == "health":
            argvs = [annotate, ["annotate", "node", node, ANNOTATION + "-"]]
    elif holder == "maintenance":
        argvs = [["uncordon", node], unmark]
    elif holder == "none" and mine:
        # Someone uncordoned the node while it was held: the mark alone is left, and goes.
        argvs = [unmark]
    return {"node": node, "holder": holder, "unschedulable": found["unschedulable"], "mark": mark,
            "argvs": [base + argv for argv in argvs]}


def _gpu_requests(container):
    """{resource: amount} of the nvidia.com/ resources a container asks for; a count as a number, anything else (which
    the API server would not take) as its text."""
    resources = container.get("resources") if isinstance(container, dict) else None
    held = {}
    for kind in ("limits", "requests"):
        amounts = (resources or {}).get(kind) if isinstance(resources, dict) else None
        for name, amount in (amounts or {}).items() if isinstance(amounts, dict) else ():
            text = str(amount).strip()
            count = int(text) if text.isascii() and text.isdecimal() else text
            if isinstance(name, str) and name.startswith(GPU_RESOURCE) and count not in (0, ""):
                held[name] = count
    return held


def _pod_gpus(spec):
    """What a pod holds of each nvidia.com/ resource, as the scheduler counts it: its containers' and its sidecars'
    (init containers that keep running) added up, or one init container's where that one asks for more."""
    running, init = {}, {}
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            keeps = key == "containers" or (isinstance(container, dict) and container.get("restartPolicy") == "Always")
            into = running if keeps else init
            for name, amount in _gpu_requests(container).items():
                before = into.get(name, 0)
                if isinstance(amount, int) and isinstance(before, int):
                    into[name] = before + amount if keeps else max(before, amount)
                else:
                    into[name] = amount
    for name, amount in init.items():
        before = running.get(name, 0)
        if not (isinstance(amount, int) and isinstance(before, int) and before >= amount):
            running[name] = amount
    return running


def gpu_pods(listing):
    """The pods that hold a GPU on a node, from ``kubectl get pods -o json``: each "<namespace>/<name> (<resource>=<n>,
    ...)", in order. A pod holds a GPU while it has not ended (phase neither Succeeded nor Failed; a pod being deleted
    still runs) and one of its containers asks for an nvidia.com/ resource (a GPU, a MIG device, a shared GPU). Pods of
    a DaemonSet are not counted: they never end, and kubectl drain leaves them too (their work on the GPUs is seen
    through NVML)."""
    held = []
    for item, meta in _items(listing, "pods"):
        status = item.get("status") or {}
        spec = item.get("spec") or {}
        if not isinstance(status, dict) or not isinstance(spec, dict):
            raise KubernetesError("pods: %s has a status or a spec that is not a mapping" % meta["name"])
        if status.get("phase") in ("Succeeded", "Failed"):
            continue
        owners = meta.get("ownerReferences") or []
        if any(isinstance(owner, dict) and owner.get("kind") == "DaemonSet" for owner in owners):
            continue
        resources = _pod_gpus(spec)
        if resources:
            held.append(one_line("%s/%s (%s)" % (meta.get("namespace") or "default", meta["name"], ", ".join(
                "%s=%s" % pair for pair in sorted(resources.items())))))
    return held
