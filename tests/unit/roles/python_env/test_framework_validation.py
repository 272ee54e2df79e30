# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/python_env/files/framework_validation.py: the order of the checks and the verdict that both validation
scripts share, driven with a framework double (the real frameworks run in molecule/frameworks)."""

from __future__ import annotations

import importlib.util
import json
import os
import threading

import pytest

from simnode import ROOT

SPEC = importlib.util.spec_from_file_location(
    "framework_validation", ROOT / "roles" / "python_env" / "files" / "framework_validation.py")
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

    def multinode_setup(self, task, on_gpu, args):
        self.calls.append(("setup", task.rank, task.address(0), on_gpu, args.port))

    @staticmethod
    def version():
        return "1.0"

    def multinode_allreduce(self, task, megabytes, on_gpu, _args):
        self.calls.append(("multinode", task.rank, task.world, task.local_rank, megabytes, on_gpu))
        if not self.reduces:
            raise RuntimeError("Connection refused")
        if task.rank:
            return None
        return fv.allreduce_record("gloo", task.world, 0, megabytes << 20, 0.01, correct=self.sums)

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


def step(rank, world=4, nodes="n1,n2", **more):
    """The environment srun gives rank `rank` of a step of `world` ranks in blocks over `nodes`."""
    per_node = world // len(nodes.split(","))
    environ = {"SLURM_PROCID": str(rank), "SLURM_STEP_NUM_TASKS": str(world), "SLURM_LOCALID": str(rank % per_node),
               "SLURM_NODEID": str(rank // per_node), "SLURM_STEP_NODELIST": nodes}
    environ.update(more)
    return environ


def multinode(double, capsys, environ, *argv):
    args = fv.arguments("Prove the double", double, list(argv))
    code = fv.multinode(double, args, environ, expand=lambda nodelist: nodelist.split(","))
    out = capsys.readouterr().out
    return code, (json.loads(out) if out else None)


def test_multinode_rank_zero_prints_the_record_with_the_nodes(capsys):
    double = Double()
    code, facts = multinode(double, capsys, step(0), "--multi-node", "cpu", "--port", "31000", "--allreduce-mb", "8",
                            "--hosts", "n1=10.0.0.1,n2=10.0.0.2")
    assert code == 0 and facts["failure"] is None
    assert (facts["nodes"], facts["rank"], facts["multi_node"], facts["ranks"], facts["version"]) == (
        ["n1", "n2"], 0, "cpu", 4, "1.0")
    # The rendezvous is on the first node's address; setup runs before the framework is imported.
    assert double.calls[:3] == [("setup", 0, "10.0.0.1", False, 31000), ("load", "x"), ("multinode", 0, 4, 0, 8, False)]


def test_multinode_other_ranks_print_nothing_when_they_succeed(capsys):
    double = Double()
    code, facts = multinode(double, capsys, step(3), "--multi-node", "gpu")
    assert (code, facts) == (0, None)
    assert ("multinode", 3, 4, 1, 256, True) in double.calls


@pytest.mark.parametrize("environ, failure", [
    ({}, "SLURM_PROCID is not set: run this as a task of a Slurm job step (srun)"),
    (step(0, world=3), "the step's 3 ranks are not spread evenly over its nodes (n1,n2): give srun --ntasks-per-node"),
    (dict(step(1), SLURM_NODEID="1"), "rank 1 is task 1 of node 1: the ranks are not in blocks of 2 per node (give "
                                      "srun --distribution=block)"),
])
def test_multinode_outside_a_well_formed_step_says_how_to_start_it(environ, failure, capsys):
    code, facts = multinode(Double(), capsys, environ, "--multi-node", "cpu")
    assert (code, facts["failure"]) == (1, failure)


@pytest.mark.parametrize("double, rank, expected", [
    (Double(reduces=False), 2, (1, "double all-reduce over 4 ranks on 2 nodes (on the CPU) failed in rank 2 on n2: "
                                   "Connection refused")),
    (Double(sums=False), 0, (1, "the double all-reduce over 4 ranks on 2 nodes (on the CPU) gave a wrong sum")),
    (Double(importable=False), 1, (2, "doublelib cannot be imported on n1: No module named 'doublelib'")),
])
def test_multinode_failures_are_printed_by_the_rank_that_saw_them(double, rank, expected, capsys):
    code, facts = multinode(double, capsys, step(rank), "--multi-node", "cpu")
    assert (code, facts["failure"]) == expected and facts["rank"] == rank


def test_the_scripts_entry_point_takes_the_multinode_path(capsys, monkeypatch):
    monkeypatch.setattr(fv, "expand_nodelist", lambda nodelist: nodelist.split(","))
    for name, value in step(0, world=2).items():
        monkeypatch.setenv(name, value)
    code = fv.validate(Double(), "Prove the double", ["--multi-node", "cpu"])
    facts = json.loads(capsys.readouterr().out)
    assert code == 0 and facts["ranks"] == 2 and facts["nodes"] == ["n1", "n2"]


def test_expand_nodelist_asks_scontrol(tmp_path, monkeypatch):
    scontrol = tmp_path / "scontrol"
    scontrol.write_text("#!/bin/sh\n[ \"$1 $2\" = 'show hostnames' ] || exit 3\n"
                        "[ \"$3\" = 'gpu[01-02]' ] && printf 'gpu01\\ngpu02\\n' && exit 0\n"
                        "echo 'scontrol: error: Invalid hostlist' >&2; exit 1\n")
    scontrol.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (tmp_path, os.environ["PATH"]))
    assert fv.expand_nodelist("gpu[01-02]") == ["gpu01", "gpu02"]
    with pytest.raises(ValueError, match=r"scontrol show hostnames gpu\[: scontrol: error: Invalid hostlist"):
        fv.expand_nodelist("gpu[")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match=r"scontrol show hostnames gpu01: .*scontrol"):
        fv.expand_nodelist("gpu01")


@pytest.mark.parametrize("environ, hosts, failure", [
    (dict(step(0), SLURM_PROCID="-1"), "", "SLURM_PROCID must be a whole number, got '-1'"),
    (dict(step(0), SLURM_LOCALID="٣"), "", "SLURM_LOCALID must be a whole number, got '٣'"),
    (dict(step(0), SLURM_STEP_NUM_TASKS="0"), "",
     "rank 0 of a step of 0 ranks: Slurm's environment is not this step's"),
    (dict(step(0), SLURM_PROCID="4"), "", "rank 4 of a step of 4 ranks"),
    (step(0), "n1=", "--hosts takes NAME=ADDRESS,..., got 'n1='"),
    (step(0), "n1", "--hosts takes NAME=ADDRESS,..., got 'n1'"),
])
def test_multinode_refuses_an_environment_or_hosts_it_cannot_trust(environ, hosts, failure, capsys):
    code, facts = multinode(Double(), capsys, environ, "--multi-node", "cpu", *(["--hosts", hosts] if hosts else []))
    assert code == 1 and facts["failure"].startswith(failure), facts["failure"]


def test_endpoints_put_an_ipv6_address_in_brackets():
    task = fv.SlurmTask(step(0), "n1=fd00::1,n2=10.0.0.2", expand=lambda nodelist: nodelist.split(","))
    assert [task.endpoint(rank, 29400 + rank) for rank in range(4)] == [
        "[fd00::1]:29400", "[fd00::1]:29401", "10.0.0.2:29402", "10.0.0.2:29403"]


@pytest.mark.parametrize("argv", [["--port", "0"], ["--port", "70000"], ["--allreduce-mb", "-1"],
                                  ["--allreduce-timeout", "0"], ["--allreduce-timeout", "inf"]])
def test_out_of_range_numbers_are_refused_by_the_arguments(argv, capsys):
    with pytest.raises(SystemExit):
        fv.arguments("Prove the double", Double(), ["--multi-node", "cpu", *argv])
    assert "must be" in capsys.readouterr().err


class Stuck(Double):
    """A framework whose all-reduce never hears from its peers (TensorFlow waiting for a worker it cannot reach)."""

    def __init__(self):
        super().__init__()
        self.released = threading.Event()

    def multinode_allreduce(self, task, megabytes, on_gpu, args):
        self.released.wait(10)
        return super().multinode_allreduce(task, megabytes, on_gpu, args)


def test_a_rank_that_hears_nothing_gives_up_after_the_timeout_and_says_so(capsys, monkeypatch):
    stuck = Stuck()
    exits = []

    def fake_exit(code):  # the real one ends the process, framework threads and all
        exits.append(code)
        stuck.released.set()

    monkeypatch.setattr(fv.os, "_exit", fake_exit)
    args = fv.arguments("Prove the double", stuck, ["--multi-node", "cpu", "--allreduce-timeout", "0.2"])
    fv.multinode(stuck, args, step(1), expand=lambda nodelist: nodelist.split(","))
    first = json.loads(capsys.readouterr().out.splitlines()[0])
    assert exits == [1]
    assert first["failure"] == ("double all-reduce over 4 ranks on 2 nodes (on the CPU): rank 1 on n1 had no result "
                                "after 0.2 s (--allreduce-timeout): a rank that cannot reach the others, or a node too "
                                "slow")
