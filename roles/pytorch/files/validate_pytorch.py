# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prove that PyTorch works on this node; run with the interpreter of the PyTorch virtual environment.

Prints one JSON object on stdout (logs go to stderr): the torch version and the CUDA, cuDNN and NCCL it was built
with, whether CUDA is available and how many GPUs torch sees, a matrix multiply in fp32 and bf16 (fp16 where the GPU
has no bf16) with the achieved TFLOP/s on the GPU and on the CPU and the GPU:CPU speed-up, a short mixed-precision
training step, and on two or more GPUs an NCCL all-reduce with its bus bandwidth. Without a usable GPU it runs the CPU
path and says so in "statement".

--expect-gpus N (the GPU count NVML reports): with N > 0 the node is a GPU node, and the script exits 1 with the
reason in "failure" when torch cannot see exactly N GPUs. Exit 2: torch cannot be imported.
--cpu-allreduce N: also run the same all-reduce over N processes on the CPU with Gloo ("cpu_allreduce"), which
checks torch.distributed where there is no GPU.
--multi-node gpu|cpu: run as one rank of an all-reduce across the nodes of a Slurm job step instead (srun
--ntasks-per-node; NCCL with one rank per GPU, or Gloo on the CPU), with the rendezvous on the step's first node at
--port; rank 0 prints the bus bandwidth (playbooks/validate.yml runs it for each pair of nodes).
Used by the accelops.gpu.pytorch role (verify step) and playbooks/validate.yml. framework_validation.py (from the
internal python_env role) sits beside it and runs the checks in order.
"""

from __future__ import annotations

import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import framework_validation


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _allreduce(rank, world, backend, init_method, *, megabytes, device=None, timeout=None):
    """This rank's part of the all-reduce of megabytes of fp32 over world ranks (NCCL: device is this rank's GPU;
    Gloo: on the CPU); the allreduce_record in rank 0, None in the others."""
    import datetime

    import torch
    import torch.distributed as dist

    on_gpu = backend == "nccl"
    if on_gpu:
        torch.cuda.set_device(device)
    synchronize = torch.cuda.synchronize if on_gpu else (lambda: None)
    options = {"timeout": datetime.timedelta(seconds=timeout)} if timeout else {}
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world, **options)
    tensor = torch.ones(megabytes * 1024 * 1024 // 4, dtype=torch.float32, device="cuda" if on_gpu else "cpu")
    for _step in range(3):
        dist.all_reduce(tensor)
    synchronize()
    dist.barrier()
    iterations = 10
    start = time.perf_counter()
    for _step in range(iterations):
        dist.all_reduce(tensor)
    synchronize()
    seconds = (time.perf_counter() - start) / iterations
    # The check of the sum is a collective too: every rank takes part, or rank 0 waits for ever.
    tensor.fill_(1.0)
    dist.all_reduce(tensor)
    synchronize()
    record = None
    if rank == 0:
        correct = float(tensor[0].item()) == float(world) and float(tensor[-1].item()) == float(world)
        record = framework_validation.allreduce_record(backend, world, world if on_gpu else 0, tensor.numel() * 4,
                                                       seconds, correct=correct)
    dist.destroy_process_group()
    return record


def _allreduce_worker(rank, job, queue):
    """One rank of the all-reduce on this node; job: world (ranks), port, megabytes, backend."""
    record = _allreduce(rank, job["world"], job["backend"], "tcp://127.0.0.1:%d" % job["port"],
                        megabytes=job["megabytes"], device=rank)
    if record:
        queue.put(record)


class Torch:
    """PyTorch, as framework_validation.validate() asks for it."""

    name = "pytorch"
    module = "torch"
    cpu_device = "cpu"
    gpu_device = "cuda:0"
    cpu_allreduce_help = "also run the all-reduce over N processes on the CPU (Gloo)"
    cpu_allreduce_label = "Gloo all-reduce over %d processes"
    cpu_allreduce_kind = "Gloo all-reduce"
    dtype_name = staticmethod(_dtype_name)

    def __init__(self):
        self.torch = None
        self.cuda_reason = None

    @staticmethod
    def extra_arguments(_parser):
        return None

    def load(self, _args):
        import torch

        self.torch = torch
        self.float32, self.bfloat16 = torch.float32, torch.bfloat16

    def describe(self):
        torch = self.torch
        facts = {
            "version": torch.__version__,
            "built_cuda": torch.version.cuda,
            "built_cudnn": None,
            "built_nccl": None,
            "cuda_available": False,
            "gpu_count": 0,
            "devices": [],
            "cpu_threads": torch.get_num_threads(),
        }
        try:
            facts["cuda_available"] = bool(torch.cuda.is_available())
            facts["gpu_count"] = torch.cuda.device_count() if facts["cuda_available"] else 0
        except Exception as error:  # pylint: disable=broad-except
            self.cuda_reason = str(error)
        if torch.version.cuda:
            cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
            if cudnn and cudnn >= 10000:  # cuDNN 9: 90300 is 9.3.0
                facts["built_cudnn"] = "%d.%d.%d" % (cudnn // 10000, cudnn // 100 % 100, cudnn % 100)
            elif cudnn:
                facts["built_cudnn"] = str(cudnn)
            try:
                nccl = torch.cuda.nccl.version()
                facts["built_nccl"] = ".".join(str(part) for part in nccl) if isinstance(nccl, tuple) else str(nccl)
            except Exception:  # pylint: disable=broad-except
                facts["built_nccl"] = None
        facts["devices"] = [torch.cuda.get_device_name(i) for i in range(facts["gpu_count"])]
        return facts

    def gpu_node_problem(self, expected, facts):
        torch = self.torch
        if not torch.version.cuda:
            return ("this is a GPU node (%d GPUs) but torch %s is a CPU-only build: install it from a CUDA channel "
                    "(pytorch_channel)" % (expected, torch.__version__))
        if not facts["cuda_available"]:
            return ("this is a GPU node (%d GPUs) but torch %s (CUDA %s) cannot use them: %s" % (
                expected, torch.__version__, torch.version.cuda,
                self.cuda_reason or "torch.cuda.is_available() is False; is the driver loaded and new enough for "
                                    "CUDA %s, and are /dev/nvidia* accessible?" % torch.version.cuda))
        return None

    def low_precision(self, _facts):
        return self.torch.bfloat16 if self.torch.cuda.is_bf16_supported() else self.torch.float16

    def matmul(self, device, dtype, size, min_seconds):
        torch = self.torch
        a = torch.randn(size, size, device=device, dtype=dtype)
        b = torch.randn(size, size, device=device, dtype=dtype)
        sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
        seconds = framework_validation.timed(lambda: torch.matmul(a, b), lambda _result: sync(), min_seconds)
        return framework_validation.matmul_record(size, _dtype_name(dtype), seconds)

    def train_step(self, device, dtype, *, steps=5, width=256, batch=64):
        """A few SGD steps of a small MLP under autocast; the loss must be finite and the weights must change."""
        torch = self.torch
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(),
                                    torch.nn.Linear(width, 10)).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        use_scaler = device.startswith("cuda") and dtype == torch.float16
        scaler = torch.amp.GradScaler("cuda") if use_scaler else None
        inputs = torch.randn(batch, width, device=device)
        target = torch.randint(0, 10, (batch,), device=device)
        before = model[0].weight.detach().clone()
        losses = []
        start = time.perf_counter()
        for _step in range(steps):
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.split(":")[0], dtype=dtype):
                loss = torch.nn.functional.cross_entropy(model(inputs), target)
            if scaler:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
            losses.append(float(loss.detach().float()))
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        changed = not torch.equal(before, model[0].weight.detach())
        return framework_validation.train_record(_dtype_name(dtype), steps, losses, seconds / steps, changed)

    @staticmethod
    def allreduce(world, megabytes, on_gpu, args):
        """An all-reduce of megabytes of fp32 over world processes (one per GPU with NCCL, Gloo on the CPU), timed
        in rank 0. A rank that hangs (a collective that never completes) is killed after --allreduce-timeout
        seconds, with the others."""
        import torch.multiprocessing as mp

        timeout = args.allreduce_timeout
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        context = mp.get_context("spawn")
        queue = context.SimpleQueue()
        job = {"world": world, "port": port, "megabytes": megabytes, "backend": "nccl" if on_gpu else "gloo"}
        workers = mp.spawn(_allreduce_worker, args=(job, queue), nprocs=world, join=False)
        deadline = time.monotonic() + timeout
        while not workers.join(timeout=max(0.05, min(1.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                for process in workers.processes:
                    process.kill()
                raise TimeoutError("no result from %d ranks after %g s" % (world, timeout))
        return queue.get()

    @staticmethod
    def multinode_setup(_task, _on_gpu, _args):
        """Each rank sees the step's GPUs on its node and takes the one of its local rank."""
        return None

    def version(self):
        return self.torch.__version__

    @staticmethod
    def multinode_allreduce(task, megabytes, on_gpu, args):
        """One rank of the all-reduce across the step's nodes: NCCL with one rank per GPU, or Gloo on the CPU; the
        rendezvous on the first node at --port."""
        return _allreduce(task.rank, task.world, "nccl" if on_gpu else "gloo",
                          "tcp://" + task.endpoint(0, args.port), megabytes=megabytes, device=task.local_rank,
                          timeout=args.allreduce_timeout)

    def statement(self, facts):
        torch = self.torch
        return "torch %s uses %d GPU(s) (%s) through CUDA %s" % (
            torch.__version__, facts["gpu_count"], facts["devices"][0], torch.version.cuda)

    def cpu_statement(self, _facts):
        torch = self.torch
        if not torch.version.cuda:
            return "torch %s is a CPU-only build" % torch.__version__
        return self.cuda_reason or "torch.cuda.is_available() is False"


if __name__ == "__main__":
    sys.exit(framework_validation.validate(Torch(), __doc__.splitlines()[0]))
