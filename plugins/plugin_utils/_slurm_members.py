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

from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_conf
from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import SlurmError

# The role's own lines (slurm.conf's and gres.conf's): NodeName= and one node's name, then settings, in printable
# ASCII with no comment, quote or escape, so that the line means to Slurm what it means here and can be written again
# as it is. Slurm reads keys in any case.
SETTING = r"[A-Za-z][A-Za-z0-9]*=[!$-\[\]-~]*"
NODE_LINE = re.compile(r"\ANodeName=(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,63})(?:[ \t]+(?P<rest>%s(?:[ \t]+%s)*))?\Z"
                       % (SETTING, SETTING), re.IGNORECASE)
# Any NodeName= entry as Slurm reads a logical line (a hostlist such as gpu[01-04], a quoted value).
NODE_ENTRY = re.compile(r'\s*NodeName\s*=\s*(?:"(?P<quoted>[^"]*)"|(?P<plain>\S+))', re.IGNORECASE)
GRES_VALUE = re.compile(r"(?:\A|[ \t])Gres=(?P<gres>\S*)", re.IGNORECASE)
GRES_NAME = re.compile(r"\AName=(?P<name>[a-z0-9_]+)(?: |\Z)")
CONFINED = re.compile(r"\AProctrackType=proctrack/cgroup\s*\Z", re.IGNORECASE)
CONFIGLESS = re.compile(r'(?:\A|\s)SlurmctldParameters\s*=\s*"?(?P<value>[^"\s]*)', re.IGNORECASE)
# At most this many names or line numbers in one message.
SHOWN_MAX = 5


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


def _listed(items):
    items = list(items)
    return ", ".join(items[:SHOWN_MAX]) + (" and %d more" % (len(items) - SHOWN_MAX) if len(items) > SHOWN_MAX else "")


def read_cluster(conf, gres):
    """The controller's slurm.conf and gres.conf as the role reads them: {nodes, twice, foreign, configless,
    gres_foreign}. nodes: each node of a line of the role's by name, with its line, its Gres= value, its gres.conf
    lines (without their NodeName=) and whether slurm.conf confines jobs (proctrack/cgroup); twice: the names of more
    than one such line; foreign: the NodeName= values of the other entries Slurm reads (hand-written: a hostlist, a
    comment or an escape, a line continued); configless: whether slurm.conf enables configless mode; gres_foreign:
    the numbers of gres.conf's setting lines that are none of the role's."""
    conf_text, gres_text = _text(conf, "slurm.conf"), _text(gres, "gres.conf")
    # Lines as Slurm splits them (at a newline alone); a carriage return at the end is white space to both.
    physical = [line.strip() for line in conf_text.split("\n")]
    logical = [line.strip() for line in _slurm_conf._conf_lines(conf_text)]  # pylint: disable=protected-access
    confined = any(CONFINED.match(line) for line in logical)
    configless = any("enable_configless" in match.group("value").lower().split(",")
                     for match in map(CONFIGLESS.search, logical) if match)
    nodes, twice, foreign = {}, set(), []
    own_lines = set(physical)
    for line in logical:
        entry = NODE_ENTRY.match(line)
        if entry is None:
            continue
        value = entry.group("quoted") if entry.group("quoted") is not None else entry.group("plain")
        if value.upper() == "DEFAULT":
            continue
        match = NODE_LINE.match(line)
        if match is None or line not in own_lines:
            foreign.append(value)
            continue
        name = match.group("name")
        if name in nodes:
            twice.add(name)
        found = GRES_VALUE.search(match.group("rest") or "")
        nodes[name] = {"name": name, "line": line, "gres": found.group("gres") if found else "", "gres_conf": [],
                       "in_container": not confined, "kept": True}
    gres_foreign = []
    for number, raw in enumerate(gres_text.split("\n"), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = NODE_LINE.match(line)
        if match is None or not match.group("rest"):
            gres_foreign.append(str(number))
        elif match.group("name") in nodes:
            nodes[match.group("name")]["gres_conf"].append(match.group("rest"))
    return {"nodes": nodes, "twice": twice, "foreign": foreign, "configless": configless, "gres_foreign": gres_foreign}


def kept_nodes(conf, gres):
    """Each node of the role's lines of the controller's slurm.conf by name (read_cluster's nodes)."""
    return read_cluster(conf, gres)["nodes"]


def _removed(conf, gres, names, read=None):
    """The nodes of the controller's slurm.conf that the cluster no longer has: the names of the role's lines, then
    the NodeName= values of hand-written entries (hostlists such as gpu[01-04], which sinfo expands) that are not a
    name the cluster keeps. None where slurm.conf cannot be read: the preflight's check of its scripts says why.
    read: read_cluster's answer where the caller has it already."""
    if read is None:
        try:
            read = read_cluster(conf, gres)
        except SlurmError:
            return []
    kept = set(names)
    return (sorted(set(read["nodes"]) - kept)
            + [value for value in dict.fromkeys(read["foreign"]) if value not in kept and value not in read["nodes"]])


def _described(record, host):
    if not (isinstance(record, dict) and isinstance(record.get("name"), str) and isinstance(record.get("line"), str)
            and isinstance(record.get("gres_conf"), list)):
        raise SlurmError("%s: its node record must have name, line and gres_conf, got %r" % (host, record))
    return record


def _node_name(value):
    """A slurm_node_name as the role takes it (text: the preflight refuses a number on a host of the play); None for
    what cannot be one."""
    return value if isinstance(value, str) else None


def _kept_problem(host, name, read):
    """Why the controller's lines for a node outside the play cannot be kept, or None."""
    if name in read["twice"]:
        return ("the controller's slurm.conf has more than one NodeName=%s line (%s): which one Slurm uses is not "
                "clear" % (name, host))
    if name in read["foreign"]:
        return ("the NodeName=%s line of the controller's slurm.conf (%s) is not one this role writes (a comment, a "
                "quote, an escape or a line continued)" % (name, host))
    if name in read["nodes"] and not read["nodes"][name]["gres_conf"]:
        return "the controller's gres.conf has no NodeName=%s line (%s)" % (name, host)
    return None


def cluster_members(hosts, hostvars, conf, gres, play_hosts):
    """The cluster's GPU nodes in inventory order: {nodes, unknown, waiting, removed, names, problems, gres_lines,
    gres_types}. Each node of the play is its own __slurm_node (waiting: not described yet); each other one is the
    controller's kept lines under its slurm_node_name (the inventory's, else its short host name), unknown where the
    controller has none. removed: the names of the controller's slurm.conf that are none of them; names: the names of
    the cluster's nodes; problems: why the nodes outside the play cannot be kept as the controller has them."""
    if not isinstance(hosts, list) or not all(isinstance(host, str) for host in hosts):
        raise SlurmError("hosts must be a list of inventory host names, got %r" % (hosts,))
    if not isinstance(play_hosts, list):
        raise SlurmError("play_hosts must be a list of inventory host names, got %r" % (play_hosts,))
    read = None
    nodes, unknown, waiting, problems = [], [], [], []
    owners = {}
    for host in hosts:
        own = hostvars[host]
        if host in play_hosts:
            if "__slurm_node" in own:
                nodes.append(_described(own["__slurm_node"], host))
                name = nodes[-1]["name"]
            else:
                waiting.append(host)
                # The name it published in the preflight, before it described itself.
                me = own["__slurm_me"] if "__slurm_me" in own else None
                name = _node_name(me.get("name")) if isinstance(me, dict) else None
            if name is not None:
                owners.setdefault(name, []).append(host)
            continue
        if read is None:
            read = read_cluster(conf, gres)
        given = own.get("slurm_node_name") if "slurm_node_name" in own else None
        name = _node_name(given) if given is not None else host.split(".")[0]
        if name is None or not name:
            problems.append("%s: slurm_node_name must be a node name (letters, digits, _ . and -), got %s"
                            % (host, _slurm_conf._shown(given)))  # pylint: disable=protected-access
            continue
        owners.setdefault(name, []).append(host)
        problem = _kept_problem(host, name, read)
        if problem is not None:
            problems.append(problem)
        elif name in read["nodes"]:
            nodes.append(dict(read["nodes"][name], host=host))
        else:
            unknown.append(host)
    if read is not None:
        if read["nodes"] and not read["configless"]:
            problems.append("the controller's slurm.conf is not in configless mode yet (no SlurmctldParameters="
                            "enable_configless): the first run with slurm_configless needs every GPU node in the play, "
                            "since the others still read their own files")
        if read["gres_foreign"]:
            problems.append("the controller's gres.conf has lines this role does not write (line %s), which the "
                            "cluster's gres.conf would drop" % _listed(read["gres_foreign"]))
    problems += ["%s have the same node name %s (slurm_node_name, else the short host name)"
                 % (" and ".join(named), name) for name, named in owners.items() if len(named) > 1]
    gres_names = {match.group("name") for node in nodes for match in map(GRES_NAME.match, node["gres_conf"]) if match}
    return {"nodes": nodes, "unknown": unknown, "waiting": waiting, "removed": _removed(conf, gres, list(owners), read),
            "names": sorted(owners), "problems": problems,
            # The controller's gres.conf in configless mode: each node's lines behind its NodeName=.
            "gres_lines": ["NodeName=%s %s" % (node["name"], line) for node in nodes for line in node["gres_conf"]],
            # slurm.conf's GresTypes: gpu, then shard and mps where a node has them.
            "gres_types": ["gpu"] + [name for name in ("shard", "mps") if name in gres_names]}
