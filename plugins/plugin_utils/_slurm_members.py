# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the GPU nodes of a Slurm cluster as slurm.conf describes them, where some
are outside the play (configless mode: a node that joins, or a run with --limit). A node of the play describes itself;
one outside it keeps the NodeName= line of the controller's slurm.conf and its NodeName= lines of the controller's
gres.conf, as the slurm role wrote them."""

from __future__ import annotations

import base64
import binascii
import re

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import SlurmError

# The role's own lines: one node per NodeName= line, its name first (slurm.conf's and gres.conf's).
NODE_LINE = re.compile(r"\ANodeName=(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,63})(?: (?P<rest>.*))?\Z")
GRES_VALUE = re.compile(r"(?:\A| )Gres=(?P<gres>\S*)")
GRES_NAME = re.compile(r"\AName=(?P<name>[a-z0-9_]+)(?: |\Z)")
CONFINED = re.compile(r"\AProctrackType=proctrack/cgroup\s*\Z", re.IGNORECASE)


def _text(read, what):
    """The text of a file from node_probe's read of it (missing: empty); a read without its text is an error."""
    if read is None or (isinstance(read, dict) and read.get("exists", True) is False):
        return ""
    if isinstance(read, str):
        return read
    if not isinstance(read, dict) or not isinstance(read.get("content"), str):
        why = read.get("error") if isinstance(read, dict) else None
        raise SlurmError("the controller's %s could not be read (%s): the nodes outside this play are unknown. Nothing "
                         "was changed." % (what, why or "a link, a directory or a file too large, or not read"))
    try:
        return base64.b64decode(read["content"] or "", validate=True).decode("utf-8", errors="replace")
    except (binascii.Error, TypeError) as error:
        raise SlurmError("the read of the controller's %s is not base64 text (%s)" % (what, error)) from None


def kept_nodes(conf, gres):
    """Each node of the controller's slurm.conf by name: its NodeName= line, its Gres= value, the lines of gres.conf
    for it (without their NodeName=), and whether slurm.conf confines jobs (proctrack/cgroup)."""
    conf_text, gres_text = _text(conf, "slurm.conf"), _text(gres, "gres.conf")
    confined = any(CONFINED.match(line.strip()) for line in conf_text.splitlines())
    nodes = {}
    for line in conf_text.splitlines():
        match = NODE_LINE.match(line.strip())
        if match and match.group("name") != "DEFAULT":
            found = GRES_VALUE.search(match.group("rest") or "")
            nodes[match.group("name")] = {"name": match.group("name"), "line": line.strip(),
                                          "gres": found.group("gres") if found else "", "gres_conf": [],
                                          "in_container": not confined, "kept": True}
    for line in gres_text.splitlines():
        match = NODE_LINE.match(line.strip())
        if match and match.group("name") in nodes and match.group("rest"):
            nodes[match.group("name")]["gres_conf"].append(match.group("rest"))
    return nodes


def _removed(conf, gres, names):
    """The nodes of the controller's slurm.conf that the cluster no longer has (none where it cannot be read: the
    preflight's check of its scripts says why)."""
    try:
        return sorted(set(kept_nodes(conf, gres)) - set(names))
    except SlurmError:
        return []


def _described(record, host):
    if not (isinstance(record, dict) and isinstance(record.get("name"), str) and isinstance(record.get("line"), str)
            and isinstance(record.get("gres_conf"), list)):
        raise SlurmError("%s: its node record must have name, line and gres_conf, got %r" % (host, record))
    return record


def cluster_members(hosts, hostvars, conf, gres, play_hosts):
    """The cluster's GPU nodes in inventory order: {nodes, unknown, waiting, removed, gres_lines, gres_types}. Each
    node of the play is its own __slurm_node (waiting: not described yet); each other one is the controller's kept
    lines under its slurm_node_name (the inventory's, else its short host name), unknown where the controller has
    none. removed: the names of the controller's slurm.conf that are none of them."""
    if not isinstance(hosts, list) or not all(isinstance(host, str) for host in hosts):
        raise SlurmError("hosts must be a list of inventory host names, got %r" % (hosts,))
    if not isinstance(play_hosts, list):
        raise SlurmError("play_hosts must be a list of inventory host names, got %r" % (play_hosts,))
    kept = None
    nodes, unknown, waiting, names = [], [], [], []
    for host in hosts:
        own = hostvars[host]
        if host in play_hosts:
            if "__slurm_node" in own:
                nodes.append(_described(own["__slurm_node"], host))
                names.append(nodes[-1]["name"])
            else:
                waiting.append(host)
                # The name it published in the preflight, before it described itself.
                me = own["__slurm_me"] if "__slurm_me" in own else None
                names += [me["name"]] if isinstance(me, dict) and isinstance(me.get("name"), str) else []
            continue
        if kept is None:
            kept = kept_nodes(conf, gres)
        name = own.get("slurm_node_name") if "slurm_node_name" in own else None
        name = name if isinstance(name, str) and name else host.split(".")[0]
        if name in kept:
            nodes.append(dict(kept[name], host=host))
            names.append(name)
        else:
            unknown.append(host)
    gres_names = {match.group("name") for node in nodes for match in map(GRES_NAME.match, node["gres_conf"]) if match}
    return {"nodes": nodes, "unknown": unknown, "waiting": waiting, "removed": _removed(conf, gres, names),
            # The controller's gres.conf in configless mode: each node's lines behind its NodeName=.
            "gres_lines": ["NodeName=%s %s" % (node["name"], line) for node in nodes for line in node["gres_conf"]],
            # slurm.conf's GresTypes: gpu, then shard and mps where a node has them.
            "gres_types": ["gpu"] + [name for name in ("shard", "mps") if name in gres_names]}
