# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm filters (GRES records from GPU facts, slurm.conf node lines, gres.conf, slurmd -C and slurmd -G, the health
and maintenance decisions, the all-reduce across nodes), each documented in its own <name>.yml."""

from __future__ import annotations

import base64
import binascii

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import SlurmError
from ansible_collections.accelops.gpu.plugins.plugin_utils._filters import filter_errors

# Each filter imports its plugin_utils module inside the function, not with the file: Ansible's Jinja plugin loader
# imports every filter file of the collection in every worker process at the first lookup of any filter, and a task
# that asks none of these filters should not pay for the Slurm code (docs/performance.md).


def _filter(name):
    """Make a function a filter whose errors are AnsibleFilterError naming the filter."""
    return filter_errors(name, SlurmError)


def _text(value, what, streams=("stdout",)):
    """A command's output: the text itself, or the named streams of its registered result."""
    if isinstance(value, dict) and any(stream in value for stream in streams):
        texts = [value.get(stream) or "" for stream in streams]
        if not all(isinstance(text, str) for text in texts):
            raise SlurmError("the input's %s must be what %s printed (text), got %s"
                             % (" and ".join(streams), what,
                                ", ".join(type(text).__name__ for text in texts)))
        value = "\n".join(texts)
    if isinstance(value, dict) and value.get("skipped"):
        raise SlurmError("the input is the result of a task that was skipped on this host, not what %s printed"
                         % what)
    if not isinstance(value, str):
        raise SlurmError("the input must be what %s printed (its registered result or its text), got %s"
                         % (what, "a dict without %s" % " or ".join(streams) if isinstance(value, dict)
                            else type(value).__name__))
    return value


def _mig_minors(value):
    """The text of mig-minors from the text itself, a registered cat (stdout) or a slurp (base64 content)."""
    if isinstance(value, dict) and "content" in value:
        try:
            return base64.b64decode(value["content"], validate=True).decode("utf-8")
        except (binascii.Error, TypeError, UnicodeDecodeError) as error:
            raise SlurmError("mig_minors: the slurped content is not base64 text (%s)" % error) from None
    return _text(value, "cat /proc/driver/nvidia-caps/mig-minors")


@_filter("slurm_node_gres")
def slurm_node_gres(facts, hardware=None, mig_minors=None, *, shards_per_gpu=0, mps=False):
    """The GPU GRES records slurmd's NVML autodetection finds, from ansible_facts.nvidia, and the shards and MPS shares
    of the whole GPUs."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_conf

    if isinstance(facts, dict) and isinstance(facts.get("ansible_facts"), dict):
        facts = facts["ansible_facts"].get("nvidia")
    if hardware is not None and not (isinstance(hardware, dict) and "cores_per_socket" in hardware):
        hardware = _slurm_conf.slurmd_hardware(_text(hardware, "slurmd -C"))
    return _slurm_conf.node_gres(facts, hardware, None if mig_minors is None else _mig_minors(mig_minors),
                                 shards_per_gpu=shards_per_gpu, mps=mps)


@_filter("slurm_hardware")
def slurm_hardware(output):
    """The node's hardware as slurmd -C prints it."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_conf

    return _slurm_conf.slurmd_hardware(_text(output, "slurmd -C"))


@_filter("slurm_node_line")
def slurm_node_line(name, hardware, gres, addr=None, port=None, *, extra=None):
    """The slurm.conf NodeName= line of a node."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_conf

    if not (isinstance(hardware, dict) and "cores_per_socket" in hardware):
        hardware = _slurm_conf.slurmd_hardware(_text(hardware, "slurmd -C"))
    return _slurm_conf.node_line(name, hardware, gres, addr, port, extra=extra)


@_filter("slurm_gres_conf")
def slurm_gres_conf(records, autodetect):
    """gres.conf's lines for GRES records."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_conf

    return _slurm_conf.gres_conf_lines(records, autodetect)


@_filter("_slurm_gres_mismatch")
def slurm_gres_mismatch(expected, output):
    """Where what slurmd -G detected differs from the GPU GRES records expected."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_conf

    return _slurm_conf.gres_mismatch(expected, _text(output, "slurmd -G", ("stdout", "stderr")))


@_filter("_slurm_foreign_scripts")
def slurm_foreign_scripts(conf, wanted):
    """slurm.conf's script settings (Prolog, Epilog, PrologFlags, and the site's: TaskProlog, HealthCheckProgram, ...)
    that differ from the ones the role writes."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_conf

    if not isinstance(wanted, dict) or not all(isinstance(value, str) for value in wanted.values()):
        raise SlurmError("wanted must be a dict of the settings the role writes, each a text")
    if isinstance(conf, dict) and conf.get("exists", True) is False:
        return []
    if isinstance(conf, dict) and not isinstance(conf.get("content"), str):
        # A read without text (a link, a directory, a file past node_probe's limit or that it could not read) may
        # hold any script: never read as none.
        if conf.get("type") == "link":
            why = conf.get("error") or "a link to %s" % conf.get("target")
        elif conf.get("type") not in (None, "file"):
            why = "a %s" % conf["type"]
        else:
            why = conf.get("error") or "larger than node_probe reads, or not read"
        raise SlurmError("slurm.conf could not be read (%s): its Prolog, Epilog and other script settings are "
                         "unknown. Nothing was changed." % why)
    if isinstance(conf, dict):
        try:
            conf = base64.b64decode(conf["content"] or "", validate=True).decode("utf-8", errors="replace")
        except (binascii.Error, TypeError) as error:
            raise SlurmError("the slurm.conf read is not base64 text (%s)" % error) from None
    return _slurm_conf.foreign_scripts(conf, wanted)


@_filter("_slurm_site_scripts")
def slurm_site_scripts(value):
    """slurm_site_scripts checked: the settings slurm.conf gets from it, in Slurm's spelling, and what is wrong."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_conf

    return _slurm_conf.site_scripts(value)


@_filter("_slurm_node_problems")
def slurm_node_problems(lines, nodes):
    """What keeps the controller's view of the nodes (scontrol show node --oneliner) from their configuration."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_nodes

    if isinstance(lines, dict):
        lines = _text(lines, "scontrol show node --oneliner")
    return _slurm_nodes.node_problems(lines, nodes)


@_filter("slurm_node_states")
def slurm_node_states(output, names):
    """Each named node's state and reason as the controller sees it (scontrol show node --oneliner), or why not."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_nodes

    error = None
    if isinstance(output, dict) and (output.get("unreachable") or output.get("failed") or output.get("rc", 0) != 0):
        if output.get("skipped"):
            raise SlurmError("the input is the result of a task that was skipped, not what scontrol printed")
        # The first of stderr and the task's message that says something (stderr may be blank).
        error = next((said for said in (output.get("stderr"), output.get("msg")) if str(said or "").strip()),
                     "scontrol exited with %s" % output.get("rc"))
        output = ""
    elif isinstance(output, dict):
        output = _text(output, "scontrol show node --oneliner")
    return _slurm_nodes.node_states(output, names, error)


@_filter("_slurm_cluster_members")
def slurm_cluster_members(hosts, hostvars, conf, gres, play_hosts):
    """The cluster's GPU nodes: those of the play as they described themselves, the others as the controller's
    slurm.conf and gres.conf keep them (configless mode)."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_members

    return _slurm_members.cluster_members(hosts, hostvars, conf, gres, play_hosts)


@_filter("_slurm_health_actions")
def slurm_health_actions(lines, verdicts, drain_on="critical", prefix="accelops-gpu:"):
    """Which nodes to drain or resume after a GPU health check, from scontrol show node --oneliner."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_nodes

    if isinstance(lines, dict):
        lines = _text(lines, "scontrol show node --oneliner")
    return _slurm_nodes.health_actions(lines, verdicts, drain_on, prefix)


@_filter("_slurm_maintenance")
def slurm_maintenance(lines, node, action, reason=None, *, prefix="accelops-gpu:", slurm_user="slurm", scope=""):
    """How to drain one node for maintenance or resume it afterwards, from scontrol show node --oneliner."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_nodes

    if isinstance(lines, dict):
        lines = _text(lines, "scontrol show node --oneliner")
    return _slurm_nodes.maintenance_action(lines, node, action, reason, prefix=prefix, slurm_user=slurm_user,
                                           scope=scope)


@_filter("_slurm_allreduce_plan")
def slurm_allreduce_plan(nodes, **settings):
    """The pairs of nodes of the all-reduce across nodes, in rounds, each with its srun (settings: framework,
    megabytes, cpu_ranks, port, timeout, wait, srun_args)."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_allreduce

    return _slurm_allreduce.allreduce_plan(nodes, **settings)


@_filter("_slurm_allreduce_result")
def slurm_allreduce_result(job, result=None):
    """One pair of slurm_allreduce_plan, after its srun (its registered result or async_status): the record or the
    failure, and a line that says it."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_allreduce

    if job and isinstance(job, dict) and job.get("failure"):
        return _slurm_allreduce.allreduce_result(job)
    if not isinstance(result, dict) or not any(key in result for key in ("stdout", "rc", "msg")):
        raise SlurmError("result must be the registered result of the pair's srun, got %s"
                         % type(result).__name__)
    if result.get("skipped"):
        raise SlurmError("result is that of an srun that was skipped, not what it printed")
    stderr = result.get("stderr") or ""
    if result.get("rc") is None or not stderr.strip():
        # No exit status (the run never ended: Ansible's async limit) or nothing from srun (no srun on the
        # controller): Ansible's message says why.
        stderr = "\n".join([stderr, str(result.get("msg") or "")])
    return _slurm_allreduce.allreduce_result(job, result.get("stdout") or "", stderr, result.get("rc"))


class FilterModule:
    def filters(self):
        return {
            "slurm_node_gres": slurm_node_gres,
            "slurm_hardware": slurm_hardware,
            "slurm_node_line": slurm_node_line,
            "slurm_gres_conf": slurm_gres_conf,
            "_slurm_gres_mismatch": slurm_gres_mismatch,
            "_slurm_node_problems": slurm_node_problems,
            "_slurm_foreign_scripts": slurm_foreign_scripts,
            "_slurm_site_scripts": slurm_site_scripts,
            "slurm_node_states": slurm_node_states,
            "_slurm_cluster_members": slurm_cluster_members,
            "_slurm_health_actions": slurm_health_actions,
            "_slurm_maintenance": slurm_maintenance,
            "_slurm_allreduce_plan": slurm_allreduce_plan,
            "_slurm_allreduce_result": slurm_allreduce_result,
        }
