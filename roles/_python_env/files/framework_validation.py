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
messages about the all-reduce on the CPU), and extra_arguments(parser).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time


def arguments(description, framework, argv=None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--expect-gpus", type=int, default=0)
    parser.add_argument("--size", type=int, default=8192, help="matrix size on the GPU")
    parser.add_argument("--cpu-size", type=int, default=1024, help="matrix size on the CPU")
    parser.add_argument("--seconds", type=float, default=0.5, help="minimum time of each measurement")
    parser.add_argument("--allreduce-mb", type=int, default=256)
    parser.add_argument("--cpu-allreduce", type=int, default=0, metavar="N", help=framework.cpu_allreduce_help)
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
    print(json.dumps(facts))
    return code


def validate(framework, description, argv=None):
    """Run the checks in order and print one JSON object; the exit code: 0 works, 1 does not, 2 cannot be imported."""
    args = arguments(description, framework, argv)
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
