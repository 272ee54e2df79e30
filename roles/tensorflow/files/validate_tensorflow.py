# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prove that TensorFlow works on this node; run with the interpreter of the TensorFlow virtual environment.

Prints one JSON object on stdout (TensorFlow's logs go to stderr): the TensorFlow version and the CUDA and cuDNN it
was built with (TensorFlow does not report its NCCL: null), whether it sees GPUs and how many, a matrix multiply in
fp32 and bf16 (fp16 where the GPU has no bf16) with the achieved TFLOP/s on the GPU and on the CPU and the GPU:CPU
speed-up, a short mixed-precision training step, and on two or more GPUs an NCCL all-reduce (MirroredStrategy) with
its bus bandwidth. Without a usable GPU it runs the CPU path and says so in "statement".

--expect-gpus N (the GPU count NVML reports): with N > 0 the node is a GPU node, and the script exits 1 with the
reason in "failure" when TensorFlow cannot see exactly N GPUs. Exit 2: tensorflow cannot be imported.
--cpu-allreduce N: also run the same all-reduce over N logical CPU devices ("cpu_allreduce", MirroredStrategy with
reduction to one device), which checks tf.distribute where there is no GPU.
Used by the accelops.gpu.tensorflow role (verify step) and playbooks/validate.yml.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def timed(function, min_seconds, max_iterations=50):
    """Warm up once, then run until min_seconds have passed; return seconds per call (results are read back)."""
    function().numpy()
    iterations = 0
    start = time.perf_counter()
    while True:
        result = function()
        iterations += 1
        if iterations >= max_iterations or time.perf_counter() - start >= min_seconds:
            break
    result.numpy()  # waits for the device
    return (time.perf_counter() - start) / iterations


def matmul(tf, device, dtype, size, min_seconds):
    with tf.device(device):
        a = tf.cast(tf.random.normal((size, size)), dtype)
        b = tf.cast(tf.random.normal((size, size)), dtype)
        # Reduce to one number so that reading the result back costs nothing next to the multiply.
        step = tf.function(lambda: tf.reduce_sum(tf.cast(tf.linalg.matmul(a, b)[:1, :1], tf.float32)))
        seconds = timed(step, min_seconds)
    return {"size": size, "dtype": dtype.name, "seconds": round(seconds, 6),
            "tflops": round(2.0 * size ** 3 / seconds / 1e12, 4)}


def train_step(tf, device, dtype, *, steps=5, width=256, batch=64):
    """A few SGD steps of a small MLP computed in dtype with fp32 master weights (loss scaling for fp16)."""
    tf.random.set_seed(0)
    with tf.device(device):
        w1 = tf.Variable(tf.random.normal((width, width), stddev=0.05))
        w2 = tf.Variable(tf.random.normal((width, 10), stddev=0.05))
        inputs = tf.random.normal((batch, width))
        target = tf.random.uniform((batch,), maxval=10, dtype=tf.int32)
        scale = 1024.0 if dtype == tf.float16 else 1.0
        before = w1.numpy().copy()

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                hidden = tf.nn.relu(tf.matmul(tf.cast(inputs, dtype), tf.cast(w1, dtype)))
                logits = tf.cast(tf.matmul(hidden, tf.cast(w2, dtype)), tf.float32)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=target, logits=logits))
                scaled = loss * scale
            grads = tape.gradient(scaled, [w1, w2])
            for var, grad in zip([w1, w2], grads):
                var.assign_sub(0.05 * tf.cast(grad, tf.float32) / scale)
            return loss

        losses = [float(step().numpy())]
        start = time.perf_counter()
        for _step in range(steps - 1):
            losses.append(float(step().numpy()))
        seconds = time.perf_counter() - start
        changed = bool((w1.numpy() != before).any())
    finite = all(math.isfinite(loss) for loss in losses)
    return {"dtype": dtype.name, "steps": steps, "loss_first": round(losses[0], 5), "loss_last": round(losses[-1], 5),
            "seconds_per_step": round(seconds / max(steps - 1, 1), 6), "ok": bool(changed and finite)}


def allreduce(tf, gpus, megabytes, device_type="GPU"):
    """An all-reduce of megabytes of fp32 over the first gpus devices of device_type: NCCL across GPUs, reduction to
    one device across logical CPU devices."""
    on_gpu = device_type == "GPU"
    strategy = tf.distribute.MirroredStrategy(
        devices=["/%s:%d" % (device_type.lower(), i) for i in range(gpus)],
        cross_device_ops=tf.distribute.NcclAllReduce() if on_gpu else tf.distribute.ReductionToOneDevice())
    elements = megabytes * 1024 * 1024 // 4

    @tf.function
    def reduce_once():
        def replica():
            return tf.distribute.get_replica_context().all_reduce("sum", tf.ones((elements,), tf.float32))
        return strategy.run(replica)

    first = strategy.experimental_local_results(reduce_once())
    correct = all(float(part[0].numpy()) == float(gpus) and float(part[-1].numpy()) == float(gpus) for part in first)
    iterations = 10
    start = time.perf_counter()
    for _step in range(iterations):
        result = reduce_once()
    [part.numpy() for part in strategy.experimental_local_results(result)]
    seconds = (time.perf_counter() - start) / iterations
    algbw = elements * 4 / seconds / 1e9
    # Bus bandwidth as nccl-tests reports it for all-reduce: algorithm bandwidth x 2(n-1)/n.
    return {"backend": "nccl" if on_gpu else "reduction-to-one-device", "ranks": gpus, "gpus": gpus if on_gpu else 0,
            "bytes": elements * 4, "seconds": round(seconds, 6), "algbw_gbps": round(algbw, 3),
            "busbw_gbps": round(algbw * 2 * (gpus - 1) / gpus, 3), "correct": correct}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--expect-gpus", type=int, default=0)
    parser.add_argument("--size", type=int, default=8192, help="matrix size on the GPU")
    parser.add_argument("--cpu-size", type=int, default=1024, help="matrix size on the CPU")
    parser.add_argument("--seconds", type=float, default=0.5, help="minimum time of each measurement")
    parser.add_argument("--allreduce-mb", type=int, default=256)
    parser.add_argument("--cpu-allreduce", type=int, default=0, metavar="N",
                        help="also run the all-reduce over N logical CPU devices")
    args = parser.parse_args()

    facts = {"framework": "tensorflow", "expected_gpus": args.expect_gpus, "failure": None}
    try:
        import tensorflow as tf
    except Exception as error:  # pylint: disable=broad-except
        facts["failure"] = "tensorflow cannot be imported: %s" % error
        print(json.dumps(facts))
        return 2

    if args.cpu_allreduce > 1:
        # Before anything starts TensorFlow's runtime: the CPU as N logical devices.
        cpus = tf.config.list_physical_devices("CPU")
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration() for _device in range(args.cpu_allreduce)])
    build = dict(tf.sysconfig.get_build_info())
    gpus = tf.config.list_physical_devices("GPU")
    for device in gpus:
        try:
            tf.config.experimental.set_memory_growth(device, True)
        except Exception:  # pylint: disable=broad-except
            pass
    facts.update({
        "version": tf.__version__,
        "built_cuda": build.get("cuda_version"),
        "built_cudnn": build.get("cudnn_version"),
        "built_nccl": None,
        "built_with_cuda": bool(build.get("is_cuda_build")),
        "cuda_available": len(gpus) > 0,
        "gpu_count": len(gpus),
        "devices": [tf.config.experimental.get_device_details(d).get("device_name", d.name) for d in gpus],
        "cpu_threads": os.cpu_count(),
    })

    if args.expect_gpus > 0:
        if not facts["built_with_cuda"]:
            facts["failure"] = ("this is a GPU node (%d GPUs) but tensorflow %s is a CPU-only build: install "
                                "tensorflow[and-cuda] (tensorflow_variant)" % (args.expect_gpus, tf.__version__))
        elif not gpus:
            facts["failure"] = ("this is a GPU node (%d GPUs) but tensorflow %s (built with CUDA %s, cuDNN %s) sees no "
                                "GPU: are the driver and the nvidia-* CUDA wheels loadable? Run the script with "
                                "TF_CPP_MIN_LOG_LEVEL=0 for TensorFlow's reason" % (
                                    args.expect_gpus, tf.__version__, facts["built_cuda"], facts["built_cudnn"]))
        elif len(gpus) != args.expect_gpus:
            facts["failure"] = "tensorflow sees %d GPUs but NVML reports %d (CUDA_VISIBLE_DEVICES=%s)" % (
                len(gpus), args.expect_gpus, os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))
        if facts["failure"]:
            print(json.dumps(facts))
            return 1

    gpu = len(gpus) > 0
    low = tf.bfloat16
    if gpu:
        capability = tf.config.experimental.get_device_details(gpus[0]).get("compute_capability", (8, 0))
        if tuple(capability) < (8, 0):
            low = tf.float16
    facts["low_precision_dtype"] = low.name
    facts["cpu"] = {
        "matmul_fp32": matmul(tf, "/cpu:0", tf.float32, args.cpu_size, args.seconds),
        "matmul_low": matmul(tf, "/cpu:0", tf.bfloat16, args.cpu_size, args.seconds),
        "train_step": train_step(tf, "/cpu:0", tf.bfloat16),
    }
    facts["gpu"] = None
    facts["allreduce"] = None
    if gpu:
        fp32 = matmul(tf, "/gpu:0", tf.float32, args.size, args.seconds)
        lowp = matmul(tf, "/gpu:0", low, args.size, args.seconds)
        facts["gpu"] = {
            "name": facts["devices"][0],
            "matmul_fp32": fp32,
            "matmul_low": lowp,
            "speedup_fp32": round(fp32["tflops"] / max(facts["cpu"]["matmul_fp32"]["tflops"], 1e-9), 1),
            "speedup_low": round(lowp["tflops"] / max(facts["cpu"]["matmul_low"]["tflops"], 1e-9), 1),
            "train_step": train_step(tf, "/gpu:0", low),
        }
        if len(gpus) >= 2:
            try:
                facts["allreduce"] = allreduce(tf, len(gpus), args.allreduce_mb)
            except Exception as error:  # pylint: disable=broad-except
                facts["failure"] = "NCCL all-reduce over %d GPUs failed: %s" % (len(gpus), error)
        facts["statement"] = "tensorflow %s uses %d GPU(s) (%s), built with CUDA %s" % (
            tf.__version__, len(gpus), facts["devices"][0], facts["built_cuda"])
    else:
        facts["statement"] = "no usable GPU: %s; ran the CPU path only" % (
            "tensorflow %s is a CPU-only build" % tf.__version__ if not facts["built_with_cuda"]
            else "tensorflow lists no GPU device")
    facts["cpu_allreduce"] = None
    if args.cpu_allreduce > 0:
        try:
            facts["cpu_allreduce"] = allreduce(tf, args.cpu_allreduce, args.allreduce_mb, device_type="CPU")
        except Exception as error:  # pylint: disable=broad-except
            facts["failure"] = facts["failure"] or "all-reduce over %d CPU devices failed: %s" % (
                args.cpu_allreduce, error)
    trained = facts["cpu"]["train_step"]["ok"] and (not gpu or facts["gpu"]["train_step"]["ok"])
    if not trained and not facts["failure"]:
        facts["failure"] = "the mixed-precision training step did not update the weights or gave a non-finite loss"
    if facts["allreduce"] and not facts["allreduce"]["correct"] and not facts["failure"]:
        facts["failure"] = "the NCCL all-reduce gave a wrong sum"
    if facts["cpu_allreduce"] and not facts["cpu_allreduce"]["correct"] and not facts["failure"]:
        facts["failure"] = "the all-reduce over CPU devices gave a wrong sum"
    print(json.dumps(facts))
    return 1 if facts["failure"] else 0


if __name__ == "__main__":
    sys.exit(main())
