"""The all-reduce across Slurm nodes: which pairs run in which round, the srun of each pair, and what a pair's ranks
printed (as validate_<framework>.py --multi-node prints it) read back into a result or a failure."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_allreduce import (
    SlurmError,
    allreduce_plan,
    allreduce_result,
    allreduce_rounds,
)
from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import FilterModule

TORCH = "/opt/accelops-gpu/pytorch"
TF = "/opt/accelops-gpu/tensorflow"
FILTERS = FilterModule().filters()


def node(name, *, pytorch=None, tensorflow=None, address=""):
    """A node as playbooks/tasks/validate_multinode.yml notes it: each framework's GPUs, or None where the framework
    did not pass on the node."""
    def framework(venv, gpus):
        if gpus is None:
            return None
        single = {"backend": "nccl", "ranks": gpus, "busbw_gbps": 350.0} if gpus > 1 else None
        return {"venv": venv, "gpus": gpus, "single": single}
    return {"name": name, "address": address,
            "frameworks": {"pytorch": framework(TORCH, pytorch), "tensorflow": framework(TF, tensorflow)}}


def pairs(rounds):
    return [[" ".join(pair) for pair in round_] for round_ in rounds]


@pytest.mark.parametrize("names, expected", [
    ([], []),
    (["gpu01"], []),
    (["gpu02", "gpu01"], [["gpu01 gpu02"]]),
    (["gpu01", "gpu02", "gpu03"], [["gpu01 gpu02"], ["gpu02 gpu03"], ["gpu03 gpu01"]]),
    (["gpu04", "gpu03", "gpu02", "gpu01"], [["gpu01 gpu02", "gpu03 gpu04"], ["gpu02 gpu03", "gpu04 gpu01"]]),
    (["n1", "n2", "n3", "n4", "n5"], [["n1 n2", "n3 n4"], ["n2 n3", "n4 n5"], ["n5 n1"]]),
])
def test_rounds_pair_each_node_with_the_next_and_no_node_twice_in_a_round(names, expected):
    rounds = allreduce_rounds(names)
    assert pairs(rounds) == expected
    for round_ in rounds:
        members = [name for pair in round_ for name in pair]
        assert len(members) == len(set(members))


def test_every_link_of_a_large_ring_is_measured_once_in_two_rounds():
    names = ["gpu%03d" % i for i in range(200)]
    rounds = allreduce_rounds(list(reversed(names)))
    assert len(rounds) == 2
    measured = {frozenset(pair) for round_ in rounds for pair in round_}
    assert measured == {frozenset((names[i], names[(i + 1) % 200])) for i in range(200)}


def test_a_gpu_pair_runs_one_rank_per_gpu_of_the_smaller_node():
    plan = allreduce_plan([node("h100", pytorch=8, tensorflow=8), node("l40s", pytorch=2, tensorflow=2)],
                          megabytes=1024, srun_args=["--partition=gpu", "--account=ml-ops"])
    (job,), = plan
    assert (job["pair"], job["framework"], job["mode"], job["ranks_per_node"], job["failure"]) == (
        ["h100", "l40s"], "pytorch", "gpu", 2, None)
    assert job["argv"] == [
        "srun", "--job-name=accelops-gpu-allreduce", "--nodes=2", "--nodelist=h100,l40s", "--ntasks-per-node=2",
        "--distribution=block", "--kill-on-bad-exit=1", "--immediate=60", "--time=6", "--gres=gpu:2",
        "--partition=gpu", "--account=ml-ops",
        TORCH + "/bin/python", TORCH + "/share/accelops-gpu/validate_pytorch.py", "--multi-node=gpu", "--port=29400",
        "--allreduce-mb=1024", "--allreduce-timeout=300"]
    assert job["single_node"]["h100"]["busbw_gbps"] == 350.0 and job["single_node"]["l40s"]["ranks"] == 2


def test_cpu_builds_run_ranks_on_the_cpu_with_the_framework_both_nodes_have():
    nodes = [node("a", tensorflow=0, address="10.0.0.1"), node("b", pytorch=0, tensorflow=0, address="10.0.0.2")]
    (job,), = allreduce_plan(nodes, cpu_ranks=2, port=31000, timeout=60, wait=5)
    assert (job["framework"], job["mode"], job["ranks_per_node"]) == ("tensorflow", "cpu", 2)
    assert "--gres=gpu:2" not in " ".join(job["argv"]) and "--ntasks-per-node=2" in job["argv"]
    assert job["argv"][-5:] == ["--multi-node=cpu", "--port=31000", "--allreduce-mb=256", "--allreduce-timeout=60",
                                "--hosts=a=10.0.0.1,b=10.0.0.2"]
    assert "--time=2" in job["argv"] and "--immediate=5" in job["argv"]


def test_a_gpu_node_next_to_a_cpu_build_runs_on_the_cpu():
    (job,), = allreduce_plan([node("a", pytorch=8), node("b", pytorch=0)])
    assert (job["mode"], job["ranks_per_node"]) == ("cpu", 1)


def test_the_pairs_of_a_round_take_ports_of_their_own():
    nodes = [node("n%d" % i, tensorflow=4) for i in range(1, 5)]
    first, second = allreduce_plan(nodes, port=29400)
    ports = [[arg for arg in job["argv"] if arg.startswith("--port=")] for job in first + second]
    # Each pair's TensorFlow ranks listen at its port + rank (8 ranks): the second pair of a round starts after them.
    assert ports == [["--port=29400"], ["--port=29408"], ["--port=29400"], ["--port=29408"]]


def test_ports_start_again_before_they_run_out():
    # 800 nodes: 400 pairs a round, 16 ports each from 60000, more than the 5,535 ports up to 65535.
    nodes = [node("n%03d" % i, pytorch=8) for i in range(800)]
    for round_ in allreduce_plan(nodes, port=60000):
        ports = [int(next(arg for arg in job["argv"] if arg.startswith("--port="))[7:]) for job in round_]
        assert all(60000 <= port <= 65535 - 16 for port in ports)
        assert ports.count(60000) > 1  # started again
        wrapped = ports.index(60000, 1)
        # Until it starts again, each pair's 16 ports follow the ones before.
        assert ports[:wrapped] == list(range(60000, 60000 + 16 * wrapped, 16))


def test_each_pair_is_told_only_its_own_nodes_addresses():
    nodes = [node("n%d" % i, pytorch=1, address="10.0.0.%d" % i) for i in range(1, 5)]
    hosts = [[arg for arg in job["argv"] if arg.startswith("--hosts=")] for round_ in allreduce_plan(nodes)
             for job in round_]
    assert hosts == [["--hosts=n1=10.0.0.1,n2=10.0.0.2"], ["--hosts=n3=10.0.0.3,n4=10.0.0.4"],
                     ["--hosts=n2=10.0.0.2,n3=10.0.0.3"], ["--hosts=n4=10.0.0.4,n1=10.0.0.1"]]


def test_a_framework_rendered_empty_by_older_ansible_is_not_validated_and_odd_single_figures_are_none():
    first, second = node("a", tensorflow=0), node("b", tensorflow=0)
    first["frameworks"]["pytorch"] = ""  # a none in a template, before ansible-core 2.19
    second["frameworks"]["tensorflow"]["single"] = "n/a"
    (job,), = allreduce_plan([first, second])
    assert (job["framework"], job["failure"], job["single_node"]) == ("tensorflow", None, {"a": None, "b": None})


def test_a_pair_without_a_common_framework_or_environment_fails_without_a_run():
    plan = allreduce_plan([node("a", pytorch=2), node("b", tensorflow=2), node("c", pytorch=2)], framework="auto")
    jobs = {" ".join(job["pair"]): job for round_ in plan for job in round_}
    assert jobs["a b"]["argv"] == [] and jobs["a b"]["failure"] == (
        "no framework (pytorch or tensorflow) is validated on both a (pytorch) and b (tensorflow)")
    assert jobs["c a"]["failure"] is None and jobs["c a"]["framework"] == "pytorch"
    moved = node("b", pytorch=2)
    moved["frameworks"]["pytorch"]["venv"] = "/srv/torch"
    (job,), = allreduce_plan([node("a", pytorch=2), moved], framework="pytorch")
    assert job["failure"] == ("pytorch's environment is /opt/accelops-gpu/pytorch on a but /srv/torch on b: one srun "
                              "runs the same command on both") and job["argv"] == []


@pytest.mark.parametrize("call, message", [
    (lambda: allreduce_plan([node("a")], framework="jax"),
     "framework must be auto, pytorch or tensorflow, got \"jax\""),
    (lambda: allreduce_plan([node("a")], megabytes=0), "megabytes must be a whole number from 1 to 99999, got 0"),
    (lambda: allreduce_plan([node("a")], cpu_ranks="2\n"), "cpu_ranks must be a whole number from 1 to 16"),
    (lambda: allreduce_plan([node("a")], port=80), "port must be a whole number from 1024 to 60000, got 80"),
    (lambda: allreduce_plan([node("a")], wait=True), "wait must be a whole number from 1 to 99999, got true"),
    (lambda: allreduce_plan([node("a")], srun_args=["--partition=gpu\n--uid=0"]),
     "srun_args must be a list of long srun options"),
    (lambda: allreduce_plan([node("a")], srun_args="--partition=gpu"), "srun_args must be a list of long srun options"),
    # Short options are refused (srun reads -p=gpu as the partition "=gpu"), and so is every option the plan sets
    # itself or that changes what srun prints.
    (lambda: allreduce_plan([node("a")], srun_args=["-p=gpu"]), "srun_args must be a list of long srun options"),
    (lambda: allreduce_plan([node("a")], srun_args=["--account=ops", "--ntasks-per-node=1", "--label"]),
     "srun_args: --ntasks-per-node=1, --label is set by the all-reduce itself (or changes what srun prints); leave "
     "out --job-name"),
    (lambda: allreduce_plan([{"name": "a", "frameworks": ["pytorch"]}]), "a: frameworks must be a dict"),
    (lambda: allreduce_plan([node("a b")]), "each node must be a dict with its Slurm name"),
    (lambda: allreduce_plan([node("a", address="10.0.0.1;reboot")]), "a: address must be a host name or an IP"),
    (lambda: allreduce_plan([node("a"), node("a")]), "two hosts are Slurm node a"),
    (lambda: allreduce_plan([{"name": "a", "frameworks": {"pytorch": {"venv": "opt/x", "gpus": 1}}}]),
     "a: pytorch needs its virtual environment's absolute path"),
    (lambda: allreduce_plan([{"name": "a", "frameworks": {"pytorch": {"venv": TORCH, "gpus": -1}}}]),
     "a: pytorch gpus must be a whole number from 0 to 1024"),
    (lambda: allreduce_rounds(["a", None]), "null is not a Slurm node name"),
    (lambda: allreduce_plan("a,b"), "the nodes must be a list, got str"),
])
def test_bad_input_is_refused_naming_what_is_wrong(call, message):
    with pytest.raises(SlurmError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        call()


def printed(*reports):
    return "\n".join(json.dumps(report) for report in reports)


JOB = allreduce_plan([node("h100", tensorflow=0), node("l40s", tensorflow=0)])[0][0]
GOOD = {"framework": "tensorflow", "multi_node": "cpu", "nodes": ["h100", "l40s"], "failure": None, "rank": 0,
        "version": "2.21.0", "backend": "ring", "ranks": 2, "gpus": 0, "bytes": 8388608, "seconds": 0.05,
        "algbw_gbps": 0.168, "busbw_gbps": 0.168, "correct": True}


def test_rank_zeros_record_is_the_result_next_to_each_nodes_own():
    result = allreduce_result(JOB, "2026-12-02 tensorflow log line\n" + printed(GOOD), "", 0)
    assert result["failure"] is None and result["record"] == GOOD
    assert result["summary"] == ("h100 + l40s: tensorflow 2.21.0 ring all-reduce of 8 MiB over 2 ranks (on the CPU): "
                                 "0.168 GB/s bus bandwidth; each node alone: h100 none, l40s none")


@pytest.mark.parametrize("stdout, stderr, rc, failure", [
    # Rank 1 failed (and said so); rank 0 was killed by srun --kill-on-bad-exit before it could say anything.
    (printed(dict(GOOD, rank=1, failure="tensorflow all-reduce ... failed in rank 1 on l40s: Connection refused")),
     "srun: error: l40s: task 1: Exited with exit code 1", 1,
     "tensorflow all-reduce ... failed in rank 1 on l40s: Connection refused"),
    # Two ranks failed: the lowest rank's failure wins, whatever the order of the lines.
    (printed(dict(GOOD, rank=1, failure="second"), dict(GOOD, rank=0, failure="first")), "", 1, "first"),
    # A record that claims success does not win over another rank's failure.
    (printed(GOOD, dict(GOOD, rank=1, failure="rank 1 lost")), "", 1, "rank 1 lost"),
    ("", "srun: error: Unable to allocate resources: Requested nodes are busy", 1,
     "srun exited with 1: srun: error: Unable to allocate resources: Requested nodes are busy"),
    (printed(dict(GOOD, rank=1)), "", 0, "no result from rank 0"),
    ("{not json", "", None, "srun never ended"),
])
def test_a_pair_that_did_not_reduce_says_why(stdout, stderr, rc, failure):
    result = allreduce_result(JOB, stdout, stderr, rc)
    assert result["failure"] == failure and result["record"] is None
    assert result["summary"].startswith("h100 + l40s: FAILED: " + failure + "; each node alone:")


@pytest.mark.parametrize("record, failure", [
    (dict(GOOD, correct=False), "the all-reduce gave a wrong sum (rank 0's record: correct is false)"),
    ({key: value for key, value in GOOD.items() if key != "correct"},
     "the all-reduce gave a wrong sum (rank 0's record: correct is null)"),
    (dict(GOOD, bytes=None), "rank 0's record lacks ranks, bytes, seconds, algbw_gbps, busbw_gbps"),
    (dict(GOOD, ranks="2"), "rank 0's record lacks ranks, bytes"),
    (dict(GOOD, nodes=["x"], ranks=1), "rank 0's record is not this pair's run"),
    (dict(GOOD, framework="pytorch", backend="gloo"), "rank 0's record is not this pair's run"),
    # A rank that is not a whole number is not rank 0, and a failure that says nothing is still a failure.
    (dict(GOOD, rank=False), "no result from rank 0"),
    (dict(GOOD, rank=0.0), "no result from rank 0"),
    (dict(GOOD, failure=""), "rank 0 failed without a message"),
])
def test_a_record_of_rank_zero_that_is_not_this_pairs_good_run_is_a_failure(record, failure):
    result = allreduce_result(JOB, printed(record), "", 0)
    assert result["record"] is None and result["failure"].startswith(failure), result["failure"]


def test_the_filter_reads_async_status_and_keeps_a_planned_failure():
    result = FILTERS["_slurm_allreduce_result"](JOB, {"finished": 1, "rc": 0, "stdout": printed(GOOD), "stderr": ""})
    assert result["record"]["busbw_gbps"] == 0.168
    timed_out = FILTERS["_slurm_allreduce_result"](JOB, {"failed": True, "msg": "Job reached maximum time limit"})
    assert timed_out["failure"] == "srun never ended: Job reached maximum time limit"
    planned = dict(JOB, failure="no framework (pytorch) is validated on both", argv=[])
    assert FILTERS["_slurm_allreduce_result"](planned)["failure"] == "no framework (pytorch) is validated on both"
    with pytest.raises(AnsibleFilterError, match="_slurm_allreduce_result: result must be the registered result"):
        FILTERS["_slurm_allreduce_result"](JOB, "0.168")
    with pytest.raises(AnsibleFilterError, match="_slurm_allreduce_result: result is that of an srun that was skipped"):
        FILTERS["_slurm_allreduce_result"](JOB, {"skipped": True, "msg": "skipped"})
    # No srun on the controller: the command module's message is the reason.
    missing = FILTERS["_slurm_allreduce_result"](JOB, {"rc": 2, "stdout": "", "stderr": "", "failed": True,
                                                       "msg": "[Errno 2] No such file or directory: b'srun'"})
    assert missing["failure"] == "srun exited with 2: [Errno 2] No such file or directory: b'srun'"
    with pytest.raises(AnsibleFilterError, match="_slurm_allreduce_result: what srun printed must be text"):
        FILTERS["_slurm_allreduce_result"](JOB, {"rc": 0, "stdout": ["{}"], "stderr": ""})
    with pytest.raises(AnsibleFilterError, match="_slurm_allreduce_result: the input must be one pair"):
        FILTERS["_slurm_allreduce_result"]({"pair": "h100"}, {"rc": 0})
    with pytest.raises(AnsibleFilterError, match="_slurm_allreduce_plan: port must be"):
        FILTERS["_slurm_allreduce_plan"]([node("a")], port="http")
