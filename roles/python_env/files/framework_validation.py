# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the framework validation scripts share: their arguments, the timing loop, the records they print, the order
of the checks and the verdict. Each script (validate_pytorch.py, validate_tensorflow.py) describes its framework as
an object with the hooks that validate() calls; this file is copied beside it into the framework's environment.

Hooks of a framework object: name, module (what "cannot be imported" names), cpu_allreduce_help, load(args) (imports
the framework), describe() (versions, GPUs: "gpu_count", "devices"), gpu_node_problem(expected, facts) (why a GPU
node's framework cannot use its GPUs, or None), low_precision(facts) (the dtype for the GPU), float32 and bfloat16,
dtype_name(dtype), matmul(device, dtype, size, min_seconds) (a matmul_record), train_step(device, dtype) (a
train_record), allreduce(ranks, megabytes, on_gpu, args) (an allreduce_record), gpu_device, cpu_device,
statement(facts) and cpu_statement(facts), cpu_allreduce_label ("... over %d ...") and cpu_allreduce_kind (for the
messages about the all-reduce on the CPU), and extra_arguments(parser). For the all-reduce across nodes (--multi-node,
one process per rank started by srun): multinode_setup(task, on_gpu, args) (before load: what the framework reads from
the environment at import) and multinode_allreduce(task, megabytes, on_gpu, args) (an allreduce_record in rank 0, None
in the other ranks).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time


def _whole(low, high):
    def whole(text):
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError("must be a whole number from %d to %d, got %s" % (low, high, text))
        return value
    return whole


def _positive(text):
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError("must be a number of seconds above 0, got %s" % text)
    return value


def arguments(description, framework, argv=None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--expect-gpus", type=int, default=0)
    parser.add_argument("--size", type=int, default=8192, help="matrix size on the GPU")
    parser.add_argument("--cpu-size", type=int, default=1024, help="matrix size on the CPU")
    parser.add_argument("--seconds", type=float, default=0.5, help="minimum time of each measurement")
    parser.add_argument("--allreduce-mb", type=_whole(1, 1 << 20), default=256)
    parser.add_argument("--cpu-allreduce", type=int, default=0, metavar="N", help=framework.cpu_allreduce_help)
    parser.add_argument("--allreduce-timeout", type=_positive, default=300.0,
                        help="seconds before a rank of the all-reduce gives up (the processes on this node are killed)")
    parser.add_argument("--multi-node", choices=["gpu", "cpu"],
                        help="run as one rank of an all-reduce across the nodes of a Slurm step (srun): one rank per "
                             "GPU, or ranks on the CPU; rank 0 prints the result")
    parser.add_argument("--port", type=_whole(1, 65535), default=29400,
                        help="--multi-node: the first port of the ranks' rendezvous on the step's first node")
    parser.add_argument("--hosts", default="",
                        help="--multi-node: NAME=ADDRESS,... where a node's Slurm name is not the address to reach")
    framework.extra_arguments(parser)
    return parser.parse_args(argv)


def timed(step, wait, min_seconds, max_iterations=50):
    """Warm up once, then run step until min_seconds have passed; return seconds per call. wait(result) returns
    when the device has finished the work that gave result."""
    wait(step())
    iterations = 0
    start = time.perf_counter()
    while True:
        result = step()
        iterations += 1
        if iterations >= max_iterations or time.perf_counter() - start >= min_seconds:
            break
    wait(result)
    return (time.perf_counter() - start) / iterations


def matmul_record(size, dtype_name, seconds):
    return {"size": size, "dtype": dtype_name, "seconds": round(seconds, 6),
            "tflops": round(2.0 * size ** 3 / seconds / 1e12, 4)}


def train_record(dtype_name, steps, losses, seconds_per_step, changed):
    """A training step is good when the weights changed and every loss is finite."""
    finite = all(math.isfinite(loss) for loss in losses)
    return {"dtype": dtype_name, "steps": steps, "loss_first": round(losses[0], 5), "loss_last": round(losses[-1], 5),
            "seconds_per_step": round(seconds_per_step, 6), "ok": bool(changed and finite)}


def allreduce_record(backend, ranks, gpus, size, seconds, *, correct):
    """size bytes reduced in seconds over ranks. Bus bandwidth as nccl-tests reports it for all-reduce: algorithm
    bandwidth x 2(n-1)/n."""
    algbw = size / seconds / 1e9
    return {"backend": backend, "ranks": ranks, "gpus": gpus, "bytes": size, "seconds": round(seconds, 6),
            "algbw_gbps": round(algbw, 3), "busbw_gbps": round(algbw * 2 * (ranks - 1) / ranks, 3),
            "correct": correct}


def emit(facts, code):
    # One write per line: the ranks of a step may share one output.
    sys.stdout.write(json.dumps(facts) + "\n")
    sys.stdout.flush()
    return code


class SlurmTask:
    """This process's place in a Slurm job step: rank, world (ranks), local_rank, node (index in the step), nodes
    (their names, in Slurm's order), per_node (ranks on each node) and addresses (where each node is reached)."""

    def __init__(self, environ, hosts="", expand=None):
        def number(*names):
            for name in names:
                value = environ.get(name)
                if value is None:
                    continue
                if not value.isascii() or not value.isdigit():
                    raise ValueError("%s must be a whole number, got %r: run this as a task of a Slurm job step "
                                     "(srun)" % (name, value))
                return int(value)
            raise ValueError("%s is not set: run this as a task of a Slurm job step (srun)" % names[0])

        self.rank = number("SLURM_PROCID")
        self.world = number("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")
        self.local_rank = number("SLURM_LOCALID")
        self.node = number("SLURM_NODEID")
        if self.rank >= self.world:
            raise ValueError("rank %d of a step of %d ranks: Slurm's environment is not this step's" % (
                self.rank, self.world))
        nodelist = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST", "")
        self.nodes = (expand or expand_nodelist)(nodelist)
        if not self.nodes or self.world % len(self.nodes):
            raise ValueError("the step's %d ranks are not spread evenly over its nodes (%s): give srun "
                             "--ntasks-per-node" % (self.world, nodelist or "none"))
        self.per_node = self.world // len(self.nodes)
        if self.rank // self.per_node != self.node or self.local_rank != self.rank % self.per_node:
            raise ValueError("rank %d is task %d of node %d: the ranks are not in blocks of %d per node (give srun "
                             "--distribution=block)" % (self.rank, self.local_rank, self.node, self.per_node))
        names = {}
        for pair in hosts.split(",") if hosts else []:
            name, _sep, address = pair.partition("=")
            if not (name and address):
                raise ValueError("--hosts takes NAME=ADDRESS,..., got %r" % hosts)
            names[name] = address
        self.addresses = [names.get(name, name) for name in self.nodes]

    def address(self, rank):
        """Where rank's node is reached."""
        return self.addresses[rank // self.per_node]

    def endpoint(self, rank, port):
        """host:port of rank's node, an IPv6 address in brackets."""
        address = self.address(rank)
        return ("[%s]:%d" if ":" in address else "%s:%d") % (address, port)


def expand_nodelist(nodelist):
    """A Slurm node list (sim-slurm-[h100,l40s]) as names, in Slurm's order, by Slurm's own scontrol."""
    if not nodelist:
        return []
    try:
        result = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True,
                                check=False)
    except OSError as error:
        raise ValueError("scontrol show hostnames %s: %s" % (nodelist, error)) from None
    if result.returncode != 0:
        raise ValueError("scontrol show hostnames %s: %s" % (nodelist, result.stderr.strip() or result.returncode))
    return result.stdout.split()


def multinode(framework, args, environ=None, expand=None):
    """One rank of an all-reduce across the nodes of a Slurm step. Rank 0 prints the JSON (the allreduce_record with
    the nodes); a rank that fails prints its failure, whichever it is. A rank that has no result after
    --allreduce-timeout seconds (a peer it cannot reach: TensorFlow waits for its cluster without a limit) prints
    that and ends. The exit code: 0 works, 1 does not, 2 cannot be imported."""
    environ = os.environ if environ is None else environ
    on_gpu = args.multi_node == "gpu"
    facts = {"framework": framework.name, "multi_node": args.multi_node, "nodes": [], "failure": None}
    try:
        task = SlurmTask(environ, args.hosts, expand)
    except ValueError as error:
        facts["failure"] = str(error)
        return emit(facts, 1)
    facts.update(nodes=task.nodes, rank=task.rank)
    here = task.nodes[task.node]
    label = "%s all-reduce over %d ranks on %d nodes (%s)" % (
        framework.name, task.world, len(task.nodes), "one per GPU" if on_gpu else "on the CPU")

    def give_up():
        facts["failure"] = "%s: rank %d on %s had no result after %g s (--allreduce-timeout): a rank that cannot " \
                           "reach the others, or a node too slow" % (label, task.rank, here, args.allreduce_timeout)
        emit(facts, 1)
        sys.stdout.flush()
        os._exit(1)  # the framework's own threads may never end

    watchdog = threading.Timer(args.allreduce_timeout, give_up)
    watchdog.daemon = True
    watchdog.start()
    try:
        try:
            framework.multinode_setup(task, on_gpu, args)
            framework.load(args)
        except Exception as error:  # pylint: disable=broad-except
            facts["failure"] = "%s cannot be imported on %s: %s" % (framework.module, here, error)
            return emit(facts, 2)
        facts["version"] = framework.version()
        try:
            record = framework.multinode_allreduce(task, args.allreduce_mb, on_gpu, args)
        except Exception as error:  # pylint: disable=broad-except
            facts["failure"] = "%s failed in rank %d on %s: %s" % (label, task.rank, here, error)
            return emit(facts, 1)
    finally:
        watchdog.cancel()
    if task.rank != 0:
        return 0
    facts.update(record)
    if not record["correct"]:
        facts["failure"] = "the %s gave a wrong sum" % label
    return emit(facts, 1 if facts["failure"] else 0)


def validate(framework, description, argv=None):
    """Run the checks in order and print one JSON object; the exit code: 0 works, 1 does not, 2 cannot be imported.
    With --multi-node: one rank of the all-reduce across nodes (multinode())."""
    args = arguments(description, framework, argv)
    if args.multi_node:
        return multinode(framework, args)
    facts = {"framework": framework.name, "expected_gpus": args.expect_gpus, "failure": None}
    try:
        framework.load(args)
    except Exception as error:  # pylint: disable=broad-except
        facts["failure"] = "%s cannot be imported: %s" % (framework.module, error)
        return emit(facts, 2)
    facts.update(framework.describe())

    if args.expect_gpus > 0:
        facts["failure"] = framework.gpu_node_problem(args.expect_gpus, facts)
        if not facts["failure"] and facts["gpu_count"] != args.expect_gpus:
            facts["failure"] = "%s sees %d GPUs but NVML reports %d (CUDA_VISIBLE_DEVICES=%s)" % (
                framework.module, facts["gpu_count"], args.expect_gpus, os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))
        if facts["failure"]:
            return emit(facts, 1)

    gpu = facts["gpu_count"] > 0
    low = framework.low_precision(facts) if gpu else framework.bfloat16
    facts["low_precision_dtype"] = framework.dtype_name(low)
    cpu = framework.cpu_device
    facts["cpu"] = {
        "matmul_fp32": framework.matmul(cpu, framework.float32, args.cpu_size, args.seconds),
        "matmul_low": framework.matmul(cpu, framework.bfloat16, args.cpu_size, args.seconds),
        "train_step": framework.train_step(cpu, framework.bfloat16),
    }
    facts["gpu"] = None
    facts["allreduce"] = None
    if gpu:
        fp32 = framework.matmul(framework.gpu_device, framework.float32, args.size, args.seconds)
        lowp = framework.matmul(framework.gpu_device, low, args.size, args.seconds)
        facts["gpu"] = {
            "name": facts["devices"][0],
            "matmul_fp32": fp32,
            "matmul_low": lowp,
            "speedup_fp32": round(fp32["tflops"] / max(facts["cpu"]["matmul_fp32"]["tflops"], 1e-9), 1),
            "speedup_low": round(lowp["tflops"] / max(facts["cpu"]["matmul_low"]["tflops"], 1e-9), 1),
            "train_step": framework.train_step(framework.gpu_device, low),
        }
        if facts["gpu_count"] >= 2:
            try:
                facts["allreduce"] = framework.allreduce(facts["gpu_count"], args.allreduce_mb, True, args)
            except Exception as error:  # pylint: disable=broad-except
                facts["failure"] = "NCCL all-reduce over %d GPUs failed: %s" % (facts["gpu_count"], error)
        facts["statement"] = framework.statement(facts)
    else:
        facts["statement"] = "no usable GPU: %s; ran the CPU path only" % framework.cpu_statement(facts)
    facts["cpu_allreduce"] = None
    if args.cpu_allreduce > 0:
        try:
            facts["cpu_allreduce"] = framework.allreduce(args.cpu_allreduce, args.allreduce_mb, False, args)
        except Exception as error:  # pylint: disable=broad-except
            facts["failure"] = facts["failure"] or "%s failed: %s" % (
                framework.cpu_allreduce_label % args.cpu_allreduce, error)
    trained = facts["cpu"]["train_step"]["ok"] and (not gpu or facts["gpu"]["train_step"]["ok"])
    if not trained and not facts["failure"]:
        facts["failure"] = "the mixed-precision training step did not update the weights or gave a non-finite loss"
    if facts["allreduce"] and not facts["allreduce"]["correct"] and not facts["failure"]:
        facts["failure"] = "the NCCL all-reduce gave a wrong sum"
    if facts["cpu_allreduce"] and not facts["cpu_allreduce"]["correct"] and not facts["failure"]:
        facts["failure"] = "the %s gave a wrong sum" % framework.cpu_allreduce_kind
    return emit(facts, 1 if facts["failure"] else 0)
