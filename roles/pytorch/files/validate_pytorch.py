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
Used by the accelops.gpu.pytorch role (verify step) and playbooks/validate.yml.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import sys
import time


def timed(function, synchronize, min_seconds, max_iterations=50):
    """Warm up once, then run until min_seconds have passed; return seconds per call."""
    function()
    synchronize()
    iterations = 0
    start = time.perf_counter()
    while True:
        function()
        iterations += 1
        if iterations >= max_iterations or time.perf_counter() - start >= min_seconds:
            break
    synchronize()
    return (time.perf_counter() - start) / iterations


def matmul(torch, device, dtype, size, min_seconds):
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    seconds = timed(lambda: torch.matmul(a, b), sync, min_seconds)
    return {"size": size, "dtype": str(dtype).replace("torch.", ""), "seconds": round(seconds, 6),
            "tflops": round(2.0 * size ** 3 / seconds / 1e12, 4)}


def train_step(torch, device, dtype, *, steps=5, width=256, batch=64):
    """A few SGD steps of a small MLP under autocast; the loss must be finite and the weights must change."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 10)).to(device)
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
    finite = all(math.isfinite(loss) for loss in losses)
    return {"dtype": str(dtype).replace("torch.", ""), "steps": steps, "loss_first": round(losses[0], 5),
            "loss_last": round(losses[-1], 5), "seconds_per_step": round(seconds / steps, 6),
            "ok": bool(changed and finite)}


def _allreduce_worker(rank, job, queue):
    """One rank of the all-reduce; job: world (ranks), port, megabytes, backend."""
    import torch
    import torch.distributed as dist

    world, backend = job["world"], job["backend"]
    # NCCL: one process per GPU. Gloo: processes on the CPU.
    on_gpu = backend == "nccl"
    if on_gpu:
        torch.cuda.set_device(rank)
    synchronize = torch.cuda.synchronize if on_gpu else (lambda: None)
    dist.init_process_group(backend, init_method="tcp://127.0.0.1:%d" % job["port"], rank=rank, world_size=world)
    tensor = torch.ones(job["megabytes"] * 1024 * 1024 // 4, dtype=torch.float32, device="cuda" if on_gpu else "cpu")
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
    if rank == 0:
        correct = float(tensor[0].item()) == float(world) and float(tensor[-1].item()) == float(world)
        size = tensor.numel() * 4
        algbw = size / seconds / 1e9
        # Bus bandwidth as nccl-tests reports it for all-reduce: algorithm bandwidth x 2(n-1)/n.
        queue.put({"backend": backend, "ranks": world, "gpus": world if on_gpu else 0, "bytes": size,
                   "seconds": round(seconds, 6), "algbw_gbps": round(algbw, 3),
                   "busbw_gbps": round(algbw * 2 * (world - 1) / world, 3), "correct": correct})
    dist.destroy_process_group()


def allreduce(world, megabytes, backend="nccl", timeout=300.0):
    """An all-reduce of megabytes of fp32 over world processes (one per GPU with NCCL), timed in rank 0. A rank that
    hangs (a collective that never completes) is killed after timeout seconds, with the others."""
    import torch.multiprocessing as mp

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    context = mp.get_context("spawn")
    queue = context.SimpleQueue()
    job = {"world": world, "port": port, "megabytes": megabytes, "backend": backend}
    workers = mp.spawn(_allreduce_worker, args=(job, queue), nprocs=world, join=False)
    deadline = time.monotonic() + timeout
    while not workers.join(timeout=max(0.05, min(1.0, deadline - time.monotonic()))):
        if time.monotonic() >= deadline:
            for process in workers.processes:
                process.kill()
            raise TimeoutError("no result from %d ranks after %g s" % (world, timeout))
    return queue.get()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--expect-gpus", type=int, default=0)
    parser.add_argument("--size", type=int, default=8192, help="matrix size on the GPU")
    parser.add_argument("--cpu-size", type=int, default=1024, help="matrix size on the CPU")
    parser.add_argument("--seconds", type=float, default=0.5, help="minimum time of each measurement")
    parser.add_argument("--allreduce-mb", type=int, default=256)
    parser.add_argument("--cpu-allreduce", type=int, default=0, metavar="N",
                        help="also run the all-reduce over N processes on the CPU (Gloo)")
    parser.add_argument("--allreduce-timeout", type=float, default=300.0,
                        help="seconds before the all-reduce's processes are killed")
    args = parser.parse_args()

    facts = {"framework": "pytorch", "expected_gpus": args.expect_gpus, "failure": None}
    try:
        import torch
    except Exception as error:  # pylint: disable=broad-except
        facts["failure"] = "torch cannot be imported: %s" % error
        print(json.dumps(facts))
        return 2

    facts.update({
        "version": torch.__version__,
        "built_cuda": torch.version.cuda,
        "built_cudnn": None,
        "built_nccl": None,
        "cuda_available": False,
        "gpu_count": 0,
        "devices": [],
        "cpu_threads": torch.get_num_threads(),
    })
    cuda_reason = None
    try:
        facts["cuda_available"] = bool(torch.cuda.is_available())
        facts["gpu_count"] = torch.cuda.device_count() if facts["cuda_available"] else 0
    except Exception as error:  # pylint: disable=broad-except
        cuda_reason = str(error)
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

    if args.expect_gpus > 0:
        if not torch.version.cuda:
            facts["failure"] = ("this is a GPU node (%d GPUs) but torch %s is a CPU-only build: install it from a CUDA "
                                "channel (pytorch_channel)" % (args.expect_gpus, torch.__version__))
        elif not facts["cuda_available"]:
            facts["failure"] = ("this is a GPU node (%d GPUs) but torch %s (CUDA %s) cannot use them: %s" % (
                args.expect_gpus, torch.__version__, torch.version.cuda,
                cuda_reason or "torch.cuda.is_available() is False; is the driver loaded and new enough for CUDA %s, "
                               "and are /dev/nvidia* accessible?" % torch.version.cuda))
        elif facts["gpu_count"] != args.expect_gpus:
            facts["failure"] = ("torch sees %d GPUs but NVML reports %d (CUDA_VISIBLE_DEVICES=%s)" % (
                facts["gpu_count"], args.expect_gpus, os.environ.get("CUDA_VISIBLE_DEVICES", "unset")))
        if facts["failure"]:
            print(json.dumps(facts))
            return 1

    gpu = facts["gpu_count"] > 0
    low = torch.bfloat16
    if gpu and not torch.cuda.is_bf16_supported():
        low = torch.float16
    facts["low_precision_dtype"] = str(low).replace("torch.", "")
    facts["cpu"] = {
        "matmul_fp32": matmul(torch, "cpu", torch.float32, args.cpu_size, args.seconds),
        "matmul_low": matmul(torch, "cpu", torch.bfloat16, args.cpu_size, args.seconds),
        "train_step": train_step(torch, "cpu", torch.bfloat16),
    }
    facts["gpu"] = None
    facts["allreduce"] = None
    if gpu:
        fp32 = matmul(torch, "cuda:0", torch.float32, args.size, args.seconds)
        lowp = matmul(torch, "cuda:0", low, args.size, args.seconds)
        facts["gpu"] = {
            "name": facts["devices"][0],
            "matmul_fp32": fp32,
            "matmul_low": lowp,
            "speedup_fp32": round(fp32["tflops"] / max(facts["cpu"]["matmul_fp32"]["tflops"], 1e-9), 1),
            "speedup_low": round(lowp["tflops"] / max(facts["cpu"]["matmul_low"]["tflops"], 1e-9), 1),
            "train_step": train_step(torch, "cuda:0", low),
        }
        if facts["gpu_count"] >= 2:
            try:
                facts["allreduce"] = allreduce(facts["gpu_count"], args.allreduce_mb, timeout=args.allreduce_timeout)
            except Exception as error:  # pylint: disable=broad-except
                facts["failure"] = "NCCL all-reduce over %d GPUs failed: %s" % (facts["gpu_count"], error)
        facts["statement"] = "torch %s uses %d GPU(s) (%s) through CUDA %s" % (
            torch.__version__, facts["gpu_count"], facts["devices"][0], torch.version.cuda)
    else:
        facts["statement"] = "no usable GPU: %s; ran the CPU path only" % (
            "torch %s is a CPU-only build" % torch.__version__ if not torch.version.cuda
            else cuda_reason or "torch.cuda.is_available() is False")
    facts["cpu_allreduce"] = None
    if args.cpu_allreduce > 0:
        try:
            facts["cpu_allreduce"] = allreduce(args.cpu_allreduce, args.allreduce_mb, backend="gloo",
                                               timeout=args.allreduce_timeout)
        except Exception as error:  # pylint: disable=broad-except
            facts["failure"] = facts["failure"] or "Gloo all-reduce over %d processes failed: %s" % (
                args.cpu_allreduce, error)
    trained = facts["cpu"]["train_step"]["ok"] and (not gpu or facts["gpu"]["train_step"]["ok"])
    if not trained and not facts["failure"]:
        facts["failure"] = "the mixed-precision training step did not update the weights or gave a non-finite loss"
    if facts["allreduce"] and not facts["allreduce"]["correct"] and not facts["failure"]:
        facts["failure"] = "the NCCL all-reduce gave a wrong sum"
    if facts["cpu_allreduce"] and not facts["cpu_allreduce"]["correct"] and not facts["failure"]:
        facts["failure"] = "the Gloo all-reduce gave a wrong sum"
    print(json.dumps(facts))
    return 1 if facts["failure"] else 0


if __name__ == "__main__":
    sys.exit(main())
