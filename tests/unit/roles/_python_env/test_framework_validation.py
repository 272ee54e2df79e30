# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/_python_env/files/framework_validation.py: the order of the checks and the verdict that both validation
scripts share, driven with a framework double (the real frameworks run in molecule/frameworks)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from simnode import ROOT

SPEC = importlib.util.spec_from_file_location(
    "framework_validation", ROOT / "roles" / "_python_env" / "files" / "framework_validation.py")
fv = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(fv)


class Double:
    """A framework that sees `gpus` GPUs and whose steps give what the test asks for."""

    name = "double"
    module = "doublelib"
    cpu_device = "cpu"
    gpu_device = "gpu0"
    cpu_allreduce_help = "N processes"
    cpu_allreduce_label = "Gloo all-reduce over %d processes"
    cpu_allreduce_kind = "Gloo all-reduce"
    float32, bfloat16, float16 = "float32", "bfloat16", "float16"

    def __init__(self, gpus=0, *, importable=True, problem=None, trains=True, sums=True, reduces=True, fp16=False):
        self.gpus, self.importable, self.problem = gpus, importable, problem
        self.trains, self.sums, self.reduces, self.fp16 = trains, sums, reduces, fp16
        self.calls = []

    @staticmethod
    def extra_arguments(parser):
        parser.add_argument("--extra", default="x")

    @staticmethod
    def dtype_name(dtype):
        return dtype

    def load(self, args):
        if not self.importable:
            raise ImportError("No module named 'doublelib'")
        self.calls.append(("load", args.extra))

    def describe(self):
        return {"version": "1.0", "gpu_count": self.gpus, "devices": ["GPU %d" % i for i in range(self.gpus)]}

    def gpu_node_problem(self, expected, _facts):
        return self.problem and self.problem % expected

    def low_precision(self, _facts):
        return self.float16 if self.fp16 else self.bfloat16

    def matmul(self, device, dtype, size, _seconds):
        self.calls.append(("matmul", device, dtype, size))
        return fv.matmul_record(size, dtype, 0.5 if device == "cpu" else 0.001)

    def train_step(self, device, dtype):
        self.calls.append(("train", device, dtype))
        losses = [2.0, 1.5] if self.trains or device == "cpu" else [2.0, float("nan")]
        return fv.train_record(dtype, 2, losses, 0.01, True)

    def allreduce(self, ranks, megabytes, on_gpu, _args):
        self.calls.append(("allreduce", ranks, megabytes, on_gpu))
        if not self.reduces:
            raise RuntimeError("NCCL error: unhandled system error")
        return fv.allreduce_record("nccl" if on_gpu else "gloo", ranks, ranks if on_gpu else 0, megabytes << 20, 0.01,
                                   correct=self.sums)

    def statement(self, facts):
        return "double uses %d GPU(s)" % facts["gpu_count"]

    @staticmethod
    def cpu_statement(_facts):
        return "double is a CPU build"


def run(double, capsys, *argv):
    code = fv.validate(double, "Prove the double", list(argv))
    facts = json.loads(capsys.readouterr().out)
    return code, facts


def test_cpu_node(capsys):
    double = Double()
    code, facts = run(double, capsys, "--cpu-allreduce", "2", "--allreduce-mb", "4", "--extra", "y")
    assert code == 0 and facts["failure"] is None
    assert facts["statement"] == "no usable GPU: double is a CPU build; ran the CPU path only"
    assert facts["gpu"] is None and facts["allreduce"] is None
    assert facts["cpu_allreduce"]["backend"] == "gloo" and facts["cpu_allreduce"]["ranks"] == 2
    assert facts["low_precision_dtype"] == "bfloat16"
    assert double.calls[0] == ("load", "y")  # the framework's own argument reaches it
    assert ("allreduce", 2, 4, False) in double.calls


def test_gpu_node_with_records(capsys):
    double = Double(gpus=4, fp16=True)
    code, facts = run(double, capsys, "--expect-gpus", "4", "--size", "64", "--cpu-size", "32")
    assert code == 0 and facts["failure"] is None
    assert facts["low_precision_dtype"] == "float16"
    assert facts["gpu"]["name"] == "GPU 0"
    assert ("matmul", "gpu0", "float16", 64) in double.calls and ("matmul", "cpu", "bfloat16", 32) in double.calls
    assert facts["gpu"]["matmul_fp32"]["tflops"] == round(2.0 * 64 ** 3 / 0.001 / 1e12, 4)
    # The CPU's 32x32 in 0.5 s rounds to 0 TFLOP/s: the speed-up divides by 1e-9 then, never by zero.
    assert facts["cpu"]["matmul_fp32"]["tflops"] == 0.0
    assert facts["gpu"]["speedup_fp32"] == round(facts["gpu"]["matmul_fp32"]["tflops"] / 1e-9, 1)
    # nccl-tests' bus bandwidth: 256 MiB in 10 ms over 4 ranks is 26.844 GB/s x 2*3/4.
    assert facts["allreduce"]["algbw_gbps"] == 26.844 and facts["allreduce"]["busbw_gbps"] == 40.265
    assert facts["statement"] == "double uses 4 GPU(s)"


@pytest.mark.parametrize("double, argv, expected", [
    (Double(importable=False), [], (2, "doublelib cannot be imported: No module named 'doublelib'")),
    (Double(problem="this is a GPU node (%d GPUs) but the build has no CUDA"), ["--expect-gpus", "2"], (1,
     "this is a GPU node (2 GPUs) but the build has no CUDA")),
    (Double(gpus=1), ["--expect-gpus", "2"],
     (1, "doublelib sees 1 GPUs but NVML reports 2 (CUDA_VISIBLE_DEVICES=unset)")),
    (Double(gpus=1, trains=False), [], (1,
     "the mixed-precision training step did not update the weights or gave a non-finite loss")),
    (Double(gpus=2, sums=False), [], (1, "the NCCL all-reduce gave a wrong sum")),
    (Double(gpus=2, reduces=False), [], (1, "NCCL all-reduce over 2 GPUs failed: NCCL error: unhandled system error")),
    (Double(reduces=False), ["--cpu-allreduce", "3"], (1,
     "Gloo all-reduce over 3 processes failed: NCCL error: unhandled system error")),
    (Double(sums=False), ["--cpu-allreduce", "3"], (1, "the Gloo all-reduce gave a wrong sum")),
], ids=["not-importable", "cpu-build-on-gpu-node", "gpu-count", "training", "nccl-sum", "nccl-error", "cpu-error",
        "cpu-sum"])
def test_failures_are_named_and_exit_non_zero(double, argv, expected, capsys, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    code, facts = run(double, capsys, *argv)
    assert (code, facts["failure"]) == expected


def test_a_gpu_node_stops_before_measuring_when_the_gpus_are_not_seen(capsys):
    double = Double(gpus=0)
    code, facts = run(double, capsys, "--expect-gpus", "8")
    assert code == 1 and "cpu" not in facts
    assert [call[0] for call in double.calls] == ["load"]


def test_timed_waits_for_the_device_and_counts_calls():
    waited = []
    calls = iter(range(1000))
    seconds = fv.timed(lambda: next(calls), waited.append, 0.0, max_iterations=3)
    assert waited == [0, 1]  # the warm-up, then the last timed call
    assert seconds >= 0
