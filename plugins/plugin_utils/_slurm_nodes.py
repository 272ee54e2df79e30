# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the nodes as the Slurm controller sees them (scontrol show node), what keeps
them from their configuration, and the drain and resume decisions of the GPU health check and of maintenance."""

from __future__ import annotations

import re

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shown
from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import SlurmError
from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_conf import NODE_NAME, SHARING, gres_summary

# scontrol show node --oneliner: "NodeName=n1 Arch=x86_64 ... Gres=gpu:t:8(S:0-1) ... State=IDLE+DRAIN ...
# Reason=gres/gpu count reported lower than configured (7 < 8) [slurm@2026-12-02T00:30:00]". Reason comes last and
# may hold spaces; the user in brackets says who set it. A reason is free text (anyone who drains a node writes it, and
# the health findings go into ours): NodeName=, Gres= and State= are read before it, the first of each, and the reason
# runs to the first "[user@time]" that ends it, not to one that its text holds.
_SCONTROL_FIELD = re.compile(r"(?:\A|\s)(NodeName|Gres|State)=(\S*)")
_SCONTROL_REASON = re.compile(r"\sReason=")
# Comment=, Extra=, InstanceId=, ReservationName=, TLSCert... or Topology= may follow the reason.
_AFTER_REASON = r"(?=\s+(?:Comment|Extra|InstanceId|InstanceType|ReservationName|TLSCertTokenSet|Topology)=|\s*\Z)"
_REASON_SIGNED = re.compile(r"\A(?P<reason>.*?\[(?P<user>[^\]@\s]+)@[^\]]*\])" + _AFTER_REASON)
_REASON_PLAIN = re.compile(r"\A(?P<reason>.*?)" + _AFTER_REASON)
# States in which the node cannot run jobs for a reason of Slurm's own.
BAD_STATES = ("DOWN", "NOT_RESPONDING", "UNKNOWN", "INVAL", "INVALID_REG", "FAIL", "FUTURE")


def parse_scontrol_nodes(lines):
    """Each node of `scontrol show node --oneliner` as {name, gres, states, reason, reason_user}."""
    nodes = {}
    for line in lines:
        start = _SCONTROL_REASON.search(line)
        fields = {}
        for key, value in _SCONTROL_FIELD.findall(line[:start.start()] if start else line):
            fields.setdefault(key, value)
        if "NodeName" not in fields:
            continue
        reason = user = None
        if start:
            rest = line[start.end():]
            signed = _REASON_SIGNED.match(rest)
            reason = (signed or _REASON_PLAIN.match(rest))["reason"].strip()
            user = signed["user"] if signed else None
        nodes[fields["NodeName"]] = {
            "name": fields["NodeName"],
            "gres": re.sub(r"\([^)]*\)", "", fields.get("Gres", "")).replace("(null)", ""),
            "states": fields.get("State", "").split("+"),
            "reason": reason if reason not in (None, "(null)", "") else None,
            "reason_user": user,
        }
    return nodes


# A count as Slurm prints it: 1024 is 1K (gres.c's _get_suffix).
_COUNT = re.compile(r"\A([0-9]+)([KMGTP]?)\Z")


def _gres_parts(value):
    """A Gres= value as its GPUs (as written) and the node's total of each GRES that shares a GPU (shard, mps): the
    controller writes those per GPU type (shard:<type>:<count>), slurm.conf without a type."""
    gpus, shares = [], {}
    for item in filter(None, value.split(",")):
        name, _sep, rest = item.partition(":")
        if name not in SHARING:
            gpus.append(item)
            continue
        count = _COUNT.match(rest.rpartition(":")[2])
        if count is None:
            shares[name] = item  # not a count: never equal to one
        elif isinstance(shares.get(name, 0), int):
            shares[name] = shares.get(name, 0) + int(count[1]) * 1024 ** "_KMGTP".index(count[2] or "_")
    return ",".join(gpus), shares


def node_problems(lines, nodes, slurm_user="slurm"):
    """What keeps the controller's view of the nodes from their configuration; an empty list when nothing does.
    A drain set by anyone but Slurm itself is left to whoever set it."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise SlurmError("lines must be what scontrol show node --oneliner printed, got %r" % (lines,))
    if not isinstance(nodes, list) or not all(
            isinstance(n, dict) and isinstance(n.get("name"), str) and "gres" in n for n in nodes):
        raise SlurmError("nodes must be a list of {name, gres} (GRES records), got %r" % (nodes,))
    seen = parse_scontrol_nodes(lines)
    problems = []
    for node in nodes:
        name = node["name"]
        found = seen.get(name)
        if found is None:
            problems.append("%s: the controller does not know this node" % name)
            continue
        wanted = node["gres"] if isinstance(node["gres"], str) else gres_summary(node["gres"])
        if _gres_parts(found["gres"]) != _gres_parts(wanted):
            problems.append("%s: the controller has Gres=%s, slurm.conf declares %s"
                            % (name, found["gres"] or "(none)", wanted or "(none)"))
        bad = [state for state in found["states"] if state in BAD_STATES]
        slurm_drain = "DRAIN" in found["states"] and found["reason_user"] in (slurm_user, None)
        if bad or slurm_drain:
            why = (", reason: %s" % found["reason"]) if found["reason"] else ""
            problems.append("%s: state %s%s" % (name, "+".join(found["states"]), why))
    return problems


STATE_PROBLEM_MAX = 300


def node_states(lines, names, error=None):
    """Each named node's state as the controller sees it: {name: {state, reason, problem}}. ``state`` is scontrol's
    State= (such as IDLE, MIXED+DRAIN), ``problem`` says why there is none: the name is not one Slurm can have, the
    controller could not be asked (``error``, its message), does not know the node or printed no state for it."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise SlurmError("the input must be what scontrol show node --oneliner printed, got %s" % type(lines).__name__)
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise SlurmError("names must be a list of Slurm node names (letters, digits, . _ -), got %s"
                         % shown(names))
    # A name Slurm cannot have (a host known by its IPv6 address, a name with a space) is that node's problem: the
    # other nodes' states, and this node's place in a report, do not depend on it.
    states = {name: {"state": None, "reason": None,
                     "problem": "%s is not a Slurm node name (letters, digits, . _ -)" % shown(name, 60)}
              for name in names if not NODE_NAME.match(name)}
    if error is not None:
        error = " ".join(str(error).split())[:STATE_PROBLEM_MAX] or "no message"
        states.update({name: {"state": None, "reason": None,
                              "problem": "Slurm's controller could not be asked: %s" % error}
                       for name in names if name not in states})
        return states
    seen = parse_scontrol_nodes(lines)
    for name in names:
        if name in states:
            continue
        found = seen.get(name)
        if found is None:
            states[name] = {"state": None, "reason": None, "problem": "Slurm's controller does not know this node"}
        else:
            state = "+".join(found["states"]) or None
            states[name] = {"state": state, "reason": found["reason"],
                            "problem": None if state else "Slurm's controller printed no state for this node"}
    return states


HEALTH_SEVERITIES = ("ok", "warning", "critical")
HEALTH_REASON_MAX = 200
# After the prefix, the mark of a node taken out of service for maintenance (a driver upgrade) by this collection.
MAINTENANCE_TAG = "maintenance:"
_UNPRINTABLE = re.compile(r"[^ -~]+")


def _health_reason(prefix, findings, drain_on):
    """The drain reason: the prefix, then the findings that reach drain_on, worst first, in one printable line."""
    level = HEALTH_SEVERITIES.index(drain_on)
    shown = [f for f in findings if f.get("severity") in HEALTH_SEVERITIES
             and HEALTH_SEVERITIES.index(f["severity"]) >= level]
    shown.sort(key=lambda f: -HEALTH_SEVERITIES.index(f["severity"]))
    text = "; ".join(_UNPRINTABLE.sub(" ", str(f.get("message") or f.get("code") or "?")).strip() for f in shown)
    reason = "%s %s" % (prefix, text or "GPU health %s" % drain_on)
    return reason if len(reason) <= HEALTH_REASON_MAX else reason[:HEALTH_REASON_MAX - 3] + "..."


def check_verdicts(verdicts, error):
    """Raise ``error`` unless verdicts is a list of {name, verdict, findings} (gpu_health's results), each node once:
    one node judged twice (two hosts with one node name) could be taken out and given back in one run."""
    if not isinstance(verdicts, list) or not all(
            isinstance(v, dict) and isinstance(v.get("name"), str) and "verdict" in v
            and isinstance(v.get("findings") or [], list) and all(isinstance(f, dict) for f in v.get("findings") or [])
            for v in verdicts):
        raise error("verdicts must be a list of {name, verdict, findings} (gpu_health's results, findings a "
                    "list of {severity, message}), got %r" % (verdicts,))
    names = [v["name"] for v in verdicts]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise error("verdicts: each node once, but %s come more than once" % ", ".join(twice))


def _check_prefix(prefix):
    if not isinstance(prefix, str) or not re.match(r"\A[A-Za-z0-9_.:-]{1,32}\Z", prefix):
        raise SlurmError("prefix must be 1 to 32 letters, digits or _ . : -, got %r" % (prefix,))


def _drained(node):
    return any(state in node["states"] for state in ("DRAIN", "DRAINED", "DRAINING"))


def _for_maintenance(node, prefix):
    return (node["reason"] or "").startswith("%s %s" % (prefix, MAINTENANCE_TAG))


def _unsigned_reason(node):
    """A node's reason without the "[user@time]" that Slurm adds to it."""
    return re.sub(r"\s*\[[^\]]*\]\s*\Z", "", node["reason"] or "")


def one_line(text, limit=HEALTH_REASON_MAX):
    """The text as one printable line, blanks runs as one space, cut to at most ``limit`` characters."""
    text = " ".join(_UNPRINTABLE.sub(" ", text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def health_actions(lines, verdicts, drain_on="critical", prefix="accelops-gpu:"):
    """What to tell Slurm after a health check: drain each node whose verdict reaches drain_on (unless a person
    drained it already), resume each node that this collection drained and that is healthy again. Each action is
    {node, action: drain|resume, reason}; a node without a verdict, or with `unknown`, is left as it is."""
    if drain_on not in HEALTH_SEVERITIES[1:]:
        raise SlurmError("drain_on must be warning or critical, got %r" % (drain_on,))
    _check_prefix(prefix)
    if isinstance(lines, str):
        lines = lines.splitlines()
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise SlurmError("lines must be what scontrol show node --oneliner printed, got %r" % (lines,))
    check_verdicts(verdicts, SlurmError)
    nodes = parse_scontrol_nodes(lines)
    actions = []
    for entry in verdicts:
        node = nodes.get(entry["name"])
        if node is None or entry["verdict"] not in HEALTH_SEVERITIES:
            continue
        drained = _drained(node)
        ours = (node["reason"] or "").startswith(prefix + " ")
        if ours and drained and _for_maintenance(node, prefix):
            # Taken out for maintenance (a driver upgrade): the maintenance gives it back, not the health check.
            continue
        sick = HEALTH_SEVERITIES.index(entry["verdict"]) >= HEALTH_SEVERITIES.index(drain_on)
        if sick:
            reason = _health_reason(prefix, entry.get("findings") or [], drain_on)
            # A drain a person set stays as it is; ours gets the current findings.
            current = _unsigned_reason(node)
            if not drained or (ours and current != reason):
                actions.append({"node": entry["name"], "action": "drain", "reason": reason})
        elif ours and drained:
            # Slurm keeps the last reason after a resume: only a drained node is resumed.
            actions.append({"node": entry["name"], "action": "resume", "reason": None})
    return actions


def maintenance_action(lines, node, action, reason=None, *, prefix="accelops-gpu:", slurm_user="slurm", scope=""):
    """What to tell Slurm to take one node out of service for maintenance (action drain) or to give it back (resume).

    A maintenance's reasons are "<prefix> maintenance: <reason>" (one printable line of at most 200 characters), and
    scope is how they start ("driver upgrade"): a drain of another maintenance of this collection belongs to that one.
    drain: the node is drained with the reason; a drain of the same maintenance, of the health check, or that Slurm
    itself set (its reason signed by slurm_user, such as a GPU count that fell after a reboot) takes the new reason; a
    drain that anyone else set stays as it is, and the node stays theirs. resume: the node is resumed only when it is
    drained for this maintenance. Returns {node, argv (scontrol's arguments; empty when nothing is to be done), holder
    (none, maintenance, health, slurm or other: who drained the node before), drained, states, reason}."""
    if action not in ("drain", "resume"):
        raise SlurmError("action must be drain or resume, got %r" % (action,))
    _check_prefix(prefix)
    if not isinstance(node, str) or not NODE_NAME.match(node):
        raise SlurmError("node must be a node name, got %r" % (node,))
    if not isinstance(scope, str) or scope != one_line(scope):
        raise SlurmError("scope must be one line of printable ASCII, got %r" % (scope,))
    wanted = None
    if action == "drain":
        text = one_line(reason) if isinstance(reason, str) else ""
        if not text:
            raise SlurmError("reason: a drain for maintenance needs a reason (printable text), got %r" % (reason,))
        if not text.startswith(scope):
            raise SlurmError("reason: %r does not start with the maintenance's scope %r" % (text, scope))
        wanted = one_line("%s %s %s" % (prefix, MAINTENANCE_TAG, text))
    if isinstance(lines, str):
        lines = lines.splitlines()
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise SlurmError("lines must be what scontrol show node --oneliner printed, got %r" % (lines,))
    found = parse_scontrol_nodes(lines).get(node)
    if found is None:
        raise SlurmError("the controller does not know the node %s" % node)
    current = _unsigned_reason(found)
    drained = _drained(found)
    if not drained:
        holder = "none"
    elif not current.startswith(prefix + " "):
        holder = "slurm" if found["reason_user"] == slurm_user else "other"
    elif not _for_maintenance(found, prefix):
        holder = "health"
    else:
        # Another maintenance of this collection (tasks_from: drain with another reason) keeps its node.
        mine = current.startswith("%s %s %s" % (prefix, MAINTENANCE_TAG, scope))
        holder = "maintenance" if mine else "other"
    argv = []
    if action == "drain" and holder != "other":
        if holder == "none" or current != wanted:
            argv = ["scontrol", "update", "nodename=" + node, "state=drain", "reason=" + wanted]
    elif action == "resume" and holder == "maintenance":
        argv = ["scontrol", "update", "nodename=" + node, "state=resume"]
    return {"node": node, "argv": argv, "holder": holder, "drained": drained, "states": found["states"],
            "reason": found["reason"]}
