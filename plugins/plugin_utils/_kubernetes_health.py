# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: GPU health into Kubernetes, as the Slurm health check does it for Slurm.

A node whose verdict reaches the threshold is cordoned, with the findings in an annotation of the collection's own
(the mark that it was this check that cordoned it); a node that the check cordoned is uncordoned once it is healthy.
A node cordoned by anyone else (no mark), a node without a verdict (unreachable, NVML failing) and a node Kubernetes
does not know are left as they are: no news is never good news.
"""

from __future__ import annotations

import json
import re

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import KubernetesError
from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_nodes import (
    HEALTH_SEVERITIES,
    _health_reason,
    check_verdicts,
)

ANNOTATION = "accelops.gpu/health"
# RFC 1123 subdomain: what Kubernetes allows as a node name.
NODE_NAME = re.compile(r"\A(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


def parse_nodes(listing):
    """{name: {unschedulable, mark}} from ``kubectl get nodes -o json`` (its text or the parsed object)."""
    if isinstance(listing, str):
        try:
            listing = json.loads(listing)
        except ValueError as exc:
            raise KubernetesError("nodes must be what kubectl get nodes -o json printed: %s" % exc) from None
    if not isinstance(listing, dict) or not isinstance(listing.get("items"), list):
        raise KubernetesError("nodes must be what kubectl get nodes -o json printed (a List with items)")
    nodes = {}
    for item in listing["items"]:
        meta = item.get("metadata") if isinstance(item, dict) else None
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            raise KubernetesError("nodes: an item without metadata.name")
        annotations = meta.get("annotations") or {}
        spec = item.get("spec") or {}
        if not isinstance(annotations, dict) or not isinstance(spec, dict):
            raise KubernetesError("nodes: %s has annotations or a spec that is not a mapping" % meta["name"])
        nodes[meta["name"]] = {"unschedulable": spec.get("unschedulable") is True, "mark": annotations.get(ANNOTATION)}
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
    if not isinstance(kubectl, str) or not kubectl or any(c in kubectl for c in "\0\n\r"):
        raise KubernetesError("kubectl must be a path on one line, got %r" % (kubectl,))
    if not isinstance(kubeconfig, str) or any(c in kubeconfig for c in "\0\n\r"):
        raise KubernetesError("kubeconfig must be a path on one line, got %r" % (kubeconfig,))
    if not isinstance(actions, list) or not all(isinstance(a, dict) and isinstance(a.get("node"), str)
                                                for a in actions):
        raise KubernetesError("actions must be the list that _kubernetes_health_actions gives, got %r" % (actions,))
    base = [kubectl] + (["--kubeconfig", kubeconfig] if kubeconfig else [])
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
