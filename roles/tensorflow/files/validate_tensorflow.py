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
--multi-node gpu|cpu: run as one rank of an all-reduce across the nodes of a Slurm job step instead (srun
--ntasks-per-node; MultiWorkerMirroredStrategy: NCCL with one rank per GPU, or the ring over gRPC on the CPU), rank r
listening at --port + r; rank 0 prints the bus bandwidth (playbooks/validate.yml runs it for each pair of nodes).
Used by the accelops.gpu.tensorflow role (verify step) and playbooks/validate.yml. framework_validation.py (from the
internal python_env role) sits beside it and runs the checks in order.
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import framework_validation


class TensorFlow:
    """TensorFlow, as framework_validation.validate() asks for it."""

    name = "tensorflow"
    module = "tensorflow"
    cpu_device = "/cpu:0"
    gpu_device = "/gpu:0"
    cpu_allreduce_help = "also run the all-reduce over N logical CPU devices"
    cpu_allreduce_label = "all-reduce over %d CPU devices"
    cpu_allreduce_kind = "all-reduce over CPU devices"

    def __init__(self):
        self.tf = None
        self.gpus = []

    @staticmethod
    def extra_arguments(_parser):
        return None

    @staticmethod
    def dtype_name(dtype):
        return dtype.name

    def load(self, args):
        import tensorflow as tf

        self.tf = tf
        self.float32, self.bfloat16 = tf.float32, tf.bfloat16
        if args.cpu_allreduce > 1:
            # Before anything starts TensorFlow's runtime: the CPU as N logical devices.
            cpus = tf.config.list_physical_devices("CPU")
            tf.config.set_logical_device_configuration(
                cpus[0], [tf.config.LogicalDeviceConfiguration() for _device in range(args.cpu_allreduce)])

    def describe(self):
        tf = self.tf
        build = dict(tf.sysconfig.get_build_info())
        self.gpus = gpus = tf.config.list_physical_devices("GPU")
        for device in gpus:
            try:
                tf.config.experimental.set_memory_growth(device, True)
            except Exception:  # pylint: disable=broad-except
                pass
        return {
            "version": tf.__version__,
            "built_cuda": build.get("cuda_version"),
            "built_cudnn": build.get("cudnn_version"),
            "built_nccl": None,
            "built_with_cuda": bool(build.get("is_cuda_build")),
            "cuda_available": len(gpus) > 0,
            "gpu_count": len(gpus),
            "devices": [tf.config.experimental.get_device_details(d).get("device_name", d.name) for d in gpus],
            "cpu_threads": os.cpu_count(),
        }

    def gpu_node_problem(self, expected, facts):
        version = self.tf.__version__
        if not facts["built_with_cuda"]:
            return ("this is a GPU node (%d GPUs) but tensorflow %s is a CPU-only build: install tensorflow[and-cuda] "
                    "(tensorflow_variant)" % (expected, version))
        if not self.gpus:
            return ("this is a GPU node (%d GPUs) but tensorflow %s (built with CUDA %s, cuDNN %s) sees no GPU: are "
                    "the driver and the nvidia-* CUDA wheels loadable? Run the script with TF_CPP_MIN_LOG_LEVEL=0 for "
                    "TensorFlow's reason" % (expected, version, facts["built_cuda"], facts["built_cudnn"]))
        return None

    def low_precision(self, _facts):
        details = self.tf.config.experimental.get_device_details(self.gpus[0])
        return self.tf.float16 if tuple(details.get("compute_capability", (8, 0))) < (8, 0) else self.tf.bfloat16

    def matmul(self, device, dtype, size, min_seconds):
        tf = self.tf
        with tf.device(device):
            a = tf.cast(tf.random.normal((size, size)), dtype)
            b = tf.cast(tf.random.normal((size, size)), dtype)
            # Reduce to one number so that reading the result back costs nothing next to the multiply.
            step = tf.function(lambda: tf.reduce_sum(tf.cast(tf.linalg.matmul(a, b)[:1, :1], tf.float32)))
            # Reading the result back waits for the device.
            seconds = framework_validation.timed(step, lambda result: result.numpy(), min_seconds)
        return framework_validation.matmul_record(size, dtype.name, seconds)

    def train_step(self, device, dtype, *, steps=5, width=256, batch=64):
        """A few SGD steps of a small MLP computed in dtype with fp32 master weights (loss scaling for fp16)."""
        tf = self.tf
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
                    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=target,
                                                                                         logits=logits))
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
        return framework_validation.train_record(dtype.name, steps, losses, seconds / max(steps - 1, 1), changed)

    def _timed_allreduce(self, strategy, elements, replicas):
        """Sum ones over the strategy's replicas once (checked: every element is the replica count), then time ten
        sums; returns (correct, seconds per sum)."""
        tf = self.tf

        @tf.function
        def reduce_once():
            def replica():
                return tf.distribute.get_replica_context().all_reduce("sum", tf.ones((elements,), tf.float32))
            return strategy.run(replica)

        first = strategy.experimental_local_results(reduce_once())
        correct = all(float(part[0].numpy()) == float(replicas) and float(part[-1].numpy()) == float(replicas)
                      for part in first)
        iterations = 10
        start = time.perf_counter()
        for _step in range(iterations):
            result = reduce_once()
        [part.numpy() for part in strategy.experimental_local_results(result)]
        return correct, (time.perf_counter() - start) / iterations

    def allreduce(self, gpus, megabytes, on_gpu, _args):
        """An all-reduce of megabytes of fp32 over the first gpus devices: NCCL across GPUs, reduction to one device
        across logical CPU devices."""
        tf = self.tf
        device_type = "GPU" if on_gpu else "CPU"
        strategy = tf.distribute.MirroredStrategy(
            devices=["/%s:%d" % (device_type.lower(), i) for i in range(gpus)],
            cross_device_ops=tf.distribute.NcclAllReduce() if on_gpu else tf.distribute.ReductionToOneDevice())
        elements = megabytes * 1024 * 1024 // 4

        correct, seconds = self._timed_allreduce(strategy, elements, gpus)
        return framework_validation.allreduce_record("nccl" if on_gpu else "reduction-to-one-device", gpus,
                                                     gpus if on_gpu else 0, elements * 4, seconds, correct=correct)

    @staticmethod
    def multinode_setup(task, on_gpu, args):
        """Before TensorFlow is imported: the cluster of the step's ranks (TF_CONFIG: rank r listens at --port + r on
        its node, so that ranks of nodes that share an address do not collide), and one GPU per rank."""
        os.environ["TF_CONFIG"] = json.dumps({
            "cluster": {"worker": [task.endpoint(rank, args.port + rank) for rank in range(task.world)]},
            "task": {"type": "worker", "index": task.rank},
        })
        if on_gpu:
            visible = [device for device in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if device]
            os.environ["CUDA_VISIBLE_DEVICES"] = visible[task.local_rank] if visible else str(task.local_rank)

    def version(self):
        return self.tf.__version__

    def multinode_allreduce(self, task, megabytes, on_gpu, args):
        """One rank of the all-reduce across the step's nodes (MultiWorkerMirroredStrategy): NCCL with one rank per
        GPU, or TensorFlow's ring over gRPC on the CPU."""
        tf = self.tf
        implementations = tf.distribute.experimental.CommunicationImplementation
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(
                implementation=implementations.NCCL if on_gpu else implementations.RING,
                timeout_seconds=args.allreduce_timeout))
        elements = megabytes * 1024 * 1024 // 4

        correct, seconds = self._timed_allreduce(strategy, elements, task.world)
        if task.rank != 0:
            return None
        return framework_validation.allreduce_record("nccl" if on_gpu else "ring", task.world,
                                                     task.world if on_gpu else 0, elements * 4, seconds,
                                                     correct=correct)

    def statement(self, facts):
        return "tensorflow %s uses %d GPU(s) (%s), built with CUDA %s" % (
            self.tf.__version__, facts["gpu_count"], facts["devices"][0], facts["built_cuda"])

    def cpu_statement(self, facts):
        if not facts["built_with_cuda"]:
            return "tensorflow %s is a CPU-only build" % self.tf.__version__
        return "tensorflow lists no GPU device"


if __name__ == "__main__":
    sys.exit(framework_validation.validate(TensorFlow(), __doc__.splitlines()[0]))
