# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the all-reduce across Slurm nodes, the pairs of nodes in rounds with the
srun of each pair, and what a pair's ranks printed read back into a result or a failure."""

from __future__ import annotations

import json
import re

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import SlurmError
from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_conf import HOST_NAME, NODE_NAME, is_ip
from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_nodes import one_line


def allreduce_rounds(names):
    """The pairs of nodes whose all-reduce across nodes is measured: each node with the next one in name order (a
    ring; two nodes make one pair), in rounds in which no node is in two pairs, so that a round's pairs can run at
    once."""
    if not isinstance(names, (list, tuple)):
        raise SlurmError("the nodes must be a list of Slurm node names, got %s" % type(names).__name__)
    for name in names:
        if not isinstance(name, str) or not NODE_NAME.match(name):
            raise SlurmError("%s is not a Slurm node name (letters, digits, dots, dashes and underscores)"
                             % json.dumps(name, default=str))
    nodes = sorted(set(names))
    if len(nodes) < 2:
        return []
    if len(nodes) == 2:
        return [[nodes]]
    count = len(nodes)
    pairs = [[nodes[i], nodes[(i + 1) % count]] for i in range(count)]
    if count % 2:
        # The last pair closes the ring with the first node, which the first round already uses.
        rounds = [pairs[0:count - 1:2], pairs[1:count - 1:2], pairs[count - 1:]]
    else:
        rounds = [pairs[0::2], pairs[1::2]]
    return [round_ for round_ in rounds if round_]


FRAMEWORKS = ("pytorch", "tensorflow")
# A site's own srun options (a partition, an account, a QoS...): long options only, one printable line each, and none
# that the plan sets itself or that changes what srun prints (the ranks' JSON lines are read from its output).
SRUN_ARG = re.compile(r"\A--(?P<name>[a-z][a-z0-9-]*)(=[ -~]*)?\Z")
SRUN_OWN = ("job-name", "nodes", "nodelist", "ntasks", "ntasks-per-node", "distribution", "kill-on-bad-exit",
            "immediate", "time", "gres", "gpus", "gpus-per-node", "gpus-per-task", "label", "output", "error", "input",
            "export", "exclude", "multi-prog", "pty", "chdir", "unbuffered", "quiet", "verbose", "test-only",
            "overlap", "relative", "uid", "gid")
VENV = re.compile(r"\A/[A-Za-z0-9_./+-]+\Z")


def _setting(name, value, low, high):
    number = int(value) if isinstance(value, str) and re.match(r"\A[0-9]{1,6}\Z", value) else value
    if not isinstance(number, int) or isinstance(number, bool) or not low <= number <= high:
        raise SlurmError("%s must be a whole number from %d to %d, got %s" % (name, low, high,
                                                                              json.dumps(value, default=str)))
    return number


def srun_problems(srun_args):
    """A site's own srun options, checked: a list of long options (--partition=gpu), one printable line each, none
    of those the plan sets itself (SRUN_OWN)."""
    if not isinstance(srun_args, (list, tuple)) or not all(isinstance(arg, str) and SRUN_ARG.match(arg)
                                                           for arg in srun_args):
        raise SlurmError("srun_args must be a list of long srun options such as --partition=gpu (one printable "
                         "line each), got %s" % json.dumps(srun_args, default=str)[:200])
    own = [arg for arg in srun_args if SRUN_ARG.match(arg).group("name") in SRUN_OWN]
    if own:
        raise SlurmError("srun_args: %s is set by the all-reduce itself (or changes what srun prints); leave out %s"
                         % (", ".join(own), ", ".join("--" + name for name in SRUN_OWN)))
    return list(srun_args)


def _allreduce_node(node):
    """One node's part of the plan: {name, address, frameworks: {name: {venv, gpus, single} or null}}."""
    if not isinstance(node, dict) or not isinstance(node.get("name"), str) or not NODE_NAME.match(node["name"]):
        raise SlurmError("each node must be a dict with its Slurm name (name), got %s"
                         % json.dumps(node, default=str)[:200])
    address = node.get("address") or ""
    if not (address == "" or (isinstance(address, str) and (HOST_NAME.match(address) or is_ip(address)))):
        raise SlurmError("%s: address must be a host name or an IP address, got %s"
                         % (node["name"], json.dumps(address, default=str)))
    if not isinstance(node.get("frameworks") or {}, dict):
        raise SlurmError("%s: frameworks must be a dict from pytorch and tensorflow to what each brings, got %s"
                         % (node["name"], json.dumps(node["frameworks"], default=str)[:200]))
    frameworks = {}
    for framework, found in (node.get("frameworks") or {}).items():
        # Not validated on the node: null, or an empty string where Ansible before 2.19 renders none so.
        if framework not in FRAMEWORKS or found is None or found == "":
            continue
        if not (isinstance(found, dict) and isinstance(found.get("venv"), str) and VENV.match(found["venv"])):
            raise SlurmError("%s: %s needs its virtual environment's absolute path (venv), got %s" % (
                node["name"], framework, json.dumps(found, default=str)[:200]))
        frameworks[framework] = dict(found, gpus=_setting("%s: %s gpus" % (node["name"], framework),
                                                          found.get("gpus", 0), 0, 1024),
                                     single=found.get("single") if isinstance(found.get("single"), dict) else None)
    return {"name": node["name"], "address": address, "frameworks": frameworks}


def allreduce_plan(nodes, *, framework="auto", megabytes=256, cpu_ranks=1, port=29400, timeout=300, wait=60,
                   srun_args=()):
    """How the all-reduce across nodes runs: the rounds of allreduce_rounds(), each pair as {pair, framework, mode
    (gpu: one rank per GPU, as many on each node as the node with fewer GPUs has; cpu: cpu_ranks ranks on the CPU of
    each node), ranks_per_node, argv (its srun), single_node (each node's own all-reduce record), failure}. A pair
    without a framework validated on both nodes gets a failure and no argv."""
    if framework not in ("auto", *FRAMEWORKS):
        raise SlurmError("framework must be auto, pytorch or tensorflow, got %s" % json.dumps(framework, default=str))
    megabytes = _setting("megabytes", megabytes, 1, 99999)
    cpu_ranks = _setting("cpu_ranks", cpu_ranks, 1, 16)
    port = _setting("port", port, 1024, 60000)
    timeout = _setting("timeout", timeout, 10, 99999)
    wait = _setting("wait", wait, 1, 99999)
    srun_args = srun_problems(srun_args)
    if not isinstance(nodes, (list, tuple)):
        raise SlurmError("the nodes must be a list, got %s" % type(nodes).__name__)
    by_name = {}
    for node in map(_allreduce_node, nodes):
        if node["name"] in by_name:
            raise SlurmError("two hosts are Slurm node %s: give each its own slurm_node_name" % node["name"])
        by_name[node["name"]] = node
    choices = FRAMEWORKS if framework == "auto" else (framework,)
    plan = []
    for round_ in allreduce_rounds(list(by_name)):
        jobs = []
        # TensorFlow's rank r listens at its pair's port + r: the pairs of a round (which may share an address) start
        # after the ports of the pairs before them, from port again past 65535.
        next_port = port
        for pair in round_:
            first, second = (by_name[name]["frameworks"] for name in pair)
            job = {"pair": pair, "framework": None, "mode": None, "ranks_per_node": 0, "argv": [],
                   "single_node": {}, "failure": None}
            jobs.append(job)
            common = [name for name in choices if name in first and name in second]
            if not common:
                job["failure"] = ("no framework (%s) is validated on both %s (%s) and %s (%s)" % (
                    " or ".join(choices), pair[0], ", ".join(sorted(first)) or "none", pair[1],
                    ", ".join(sorted(second)) or "none"))
                continue
            name = common[0]
            job["framework"] = name
            job["single_node"] = {pair[0]: first[name].get("single"), pair[1]: second[name].get("single")}
            if first[name]["venv"] != second[name]["venv"]:
                job["failure"] = ("%s's environment is %s on %s but %s on %s: one srun runs the same command on both"
                                  % (name, first[name]["venv"], pair[0], second[name]["venv"], pair[1]))
                continue
            gpus = min(first[name]["gpus"], second[name]["gpus"])
            job["mode"] = "gpu" if gpus else "cpu"
            job["ranks_per_node"] = per_node = gpus or cpu_ranks
            venv = first[name]["venv"]
            hosts = ",".join("%s=%s" % (node, by_name[node]["address"]) for node in pair if by_name[node]["address"])
            job["argv"] = (
                ["srun", "--job-name=accelops-gpu-allreduce", "--nodes=2", "--nodelist=" + ",".join(pair),
                 "--ntasks-per-node=%d" % per_node, "--distribution=block", "--kill-on-bad-exit=1",
                 "--immediate=%d" % wait, "--time=%d" % (-(-(timeout + 60) // 60))]
                + (["--gres=gpu:%d" % gpus] if gpus else [])
                + list(srun_args)
                + [venv + "/bin/python", "%s/share/accelops-gpu/validate_%s.py" % (venv, name),
                   "--multi-node=" + job["mode"], "--port=%d" % next_port,
                   "--allreduce-mb=%d" % megabytes, "--allreduce-timeout=%d" % timeout]
                + (["--hosts=" + hosts] if hosts else []))
            next_port += 2 * per_node
            if next_port + 2 * per_node > 65535:
                next_port = port
        plan.append(jobs)
    return plan


def _allreduce_text(record):
    if not isinstance(record, dict) or not record:
        return "none"
    return "%s GB/s (%s, %s ranks)" % (record.get("busbw_gbps"), record.get("backend"), record.get("ranks"))


def _allreduce_reports(stdout):
    """The ranks' JSON lines among what they printed (a framework's own log lines may come between them)."""
    reports = []
    for line in (stdout or "").splitlines():
        if not line.strip().startswith("{"):
            continue
        try:
            report = json.loads(line)
        except ValueError:
            continue
        if isinstance(report, dict) and "multi_node" in report:
            reports.append(report)
    return reports


def _rank(report):
    """A report's rank: a whole number, never a boolean."""
    rank = report.get("rank")
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else None


def _record_problem(job, record):
    """Why rank 0's record is not the pair's result, or None: a wrong sum, or a record of another run or shape."""
    numbers = ("ranks", "bytes", "seconds", "algbw_gbps", "busbw_gbps")
    if any(not isinstance(record.get(key), (int, float)) or isinstance(record.get(key), bool) for key in numbers):
        return "rank 0's record lacks %s: %s" % (", ".join(numbers), json.dumps(record, default=str)[:200])
    if record.get("correct") is not True:
        return "the all-reduce gave a wrong sum (rank 0's record: correct is %s)" % json.dumps(record.get("correct"))
    expected = {"framework": job.get("framework"), "ranks": 2 * (job.get("ranks_per_node") or 0),
                "nodes": sorted(job["pair"])}
    nodes = record.get("nodes")
    if isinstance(nodes, list) and all(isinstance(name, str) for name in nodes):
        nodes = sorted(nodes)
    found = {"framework": record.get("framework"), "ranks": record.get("ranks"), "nodes": nodes}
    if found != expected:
        return "rank 0's record is not this pair's run: %s, not %s" % (
            json.dumps(found, default=str)[:200], json.dumps(expected))
    return None


def allreduce_result(job, stdout="", stderr="", rc=None):
    """One pair of allreduce_plan() after its srun printed stdout (every rank's: rank 0 prints its record as one JSON
    line, a rank that fails its failure) and stderr (srun's own messages) and exited with rc (None: it never ended):
    {nodes, framework, mode, ranks_per_node, single_node, record, failure, summary}. The failure of the lowest rank
    that reported one wins; without one, srun's exit or the lack of rank 0's record is the failure. A job that the
    plan could not run keeps the plan's failure."""
    if not isinstance(job, dict) or not isinstance(job.get("pair"), list) or len(job["pair"]) != 2:
        raise SlurmError("the input must be one pair of _slurm_allreduce_plan, got %s"
                         % json.dumps(job, default=str)[:200])
    if not isinstance(stdout, str) or not isinstance(stderr, str):
        raise SlurmError("what srun printed must be text, got %s and %s" % (type(stdout).__name__,
                                                                            type(stderr).__name__))
    result = {"nodes": list(job["pair"]), "framework": job.get("framework"), "mode": job.get("mode"),
              "ranks_per_node": job.get("ranks_per_node"),
              "single_node": job.get("single_node") if isinstance(job.get("single_node"), dict) else {},
              "record": None, "failure": job.get("failure")}
    if not result["failure"]:
        reports = _allreduce_reports(stdout)
        failed = sorted((report for report in reports if report.get("failure") is not None),
                        key=lambda report: _rank(report) if _rank(report) is not None else -1)
        first = [report for report in reports if _rank(report) == 0 and report.get("failure") is None]
        said = [line.strip() for line in (stderr or "").splitlines() if line.strip()]
        if failed:
            result["failure"] = str(failed[0]["failure"]) or "rank %s failed without a message" % failed[0].get("rank")
        elif rc != 0 or not first:
            result["failure"] = ("srun never ended" if rc is None else "srun exited with %s" % rc if rc != 0
                                 else "no result from rank 0") + (": %s" % said[-1] if said else "")
        else:
            result["failure"] = _record_problem(job, first[0])
            result["record"] = None if result["failure"] else first[0]
    if result["failure"]:
        result["failure"] = one_line(result["failure"], 500)
        measured = "FAILED: " + result["failure"]
    else:
        record = result["record"]
        measured = "%s %s %s all-reduce of %d MiB over %d ranks (%s): %s GB/s bus bandwidth" % (
            result["framework"], record.get("version"), record.get("backend"), record.get("bytes", 0) // 1048576,
            record.get("ranks", 0), "one per GPU" if result["mode"] == "gpu" else "on the CPU",
            record.get("busbw_gbps"))
    alone = ", ".join("%s %s" % (name, _allreduce_text(result["single_node"].get(name)))
                      for name in result["nodes"])
    result["summary"] = "%s: %s; each node alone: %s" % (" + ".join(result["nodes"]), measured, alone)
    return result
