"""The nodes as the Slurm controller sees them (scontrol show node --oneliner): what keeps them from their
configuration, and the drain and resume decisions of the GPU health check and of maintenance."""

from __future__ import annotations

import re

import pytest

from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_nodes
from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_nodes import SlurmError

SCONTROL = [
    "NodeName=gpu01 Arch=x86_64 CoresPerSocket=2 CPUAlloc=0 Gres=gpu:nvidia_h100_80gb_hbm3:8(S:0-1) NodeAddr=127.0.0.1 "
    "State=IDLE ThreadsPerCore=1 Partitions=gpu",
    "NodeName=gpu02 Arch=x86_64 Gres=gpu:nvidia_l40s:2(S:0-1) State=IDLE+DRAIN Partitions=gpu "
    "Reason=gres/gpu count reported lower than configured (1 < 2) [slurm@2026-12-02T00:30:00]",
    "NodeName=gpu03 Arch=x86_64 Gres=gpu:nvidia_l40s:2(S:0) State=IDLE+DRAIN Partitions=gpu "
    "Reason=bad fan, ticket 42 [root@2026-12-02T00:30:00]",
    "NodeName=gpu04 Arch=x86_64 Gres=(null) State=DOWN+NOT_RESPONDING Partitions=gpu Reason=Not responding "
    "[slurm@2026-12-02T00:31:00]",
]


def test_parse_scontrol_nodes_reads_gres_state_and_reason():
    nodes = _slurm_nodes.parse_scontrol_nodes(SCONTROL)
    assert nodes["gpu01"] == {"name": "gpu01", "gres": "gpu:nvidia_h100_80gb_hbm3:8", "states": ["IDLE"],
                              "reason": None, "reason_user": None}
    assert nodes["gpu03"]["reason"] == "bad fan, ticket 42 [root@2026-12-02T00:30:00]"
    assert nodes["gpu03"]["reason_user"] == "root"
    assert nodes["gpu04"]["gres"] == ""


def test_node_problems_names_slurm_drains_bad_states_and_gres_but_not_a_person_s_drain():
    nodes = [{"name": "gpu01", "gres": "gpu:nvidia_h100_80gb_hbm3:8"},
             {"name": "gpu02", "gres": "gpu:nvidia_l40s:2"},
             {"name": "gpu03", "gres": "gpu:nvidia_l40s:2"},
             {"name": "gpu04", "gres": "gpu:nvidia_l40s:2"},
             {"name": "gpu05", "gres": ""}]
    problems = _slurm_nodes.node_problems(SCONTROL, nodes)
    assert problems == [
        "gpu02: state IDLE+DRAIN, reason: gres/gpu count reported lower than configured (1 < 2) "
        "[slurm@2026-12-02T00:30:00]",
        "gpu04: the controller has Gres=(none), slurm.conf declares gpu:nvidia_l40s:2",
        "gpu04: state DOWN+NOT_RESPONDING, reason: Not responding [slurm@2026-12-02T00:31:00]",
        "gpu05: the controller does not know this node",
    ]


def test_node_problems_compares_gres_records():
    records = [{"name": "gpu", "type": "nvidia_l40s", "index": i} for i in range(2)]
    assert _slurm_nodes.node_problems(SCONTROL[2:3], [{"name": "gpu03", "gres": records}]) == []
    assert _slurm_nodes.node_problems(SCONTROL[2:3], [{"name": "gpu03", "gres": records[:1]}]) == [
        "gpu03: the controller has Gres=gpu:nvidia_l40s:2, slurm.conf declares gpu:nvidia_l40s:1"]


@pytest.mark.parametrize("controller, declared, same", [
    # The controller writes a share per GPU type, slurm.conf the node's total; 1024 is 1K.
    ("gpu:nvidia_h100_80gb_hbm3:8(S:0-1),shard:nvidia_h100_80gb_hbm3:32(S:0-1)", "gpu:nvidia_h100_80gb_hbm3:8,shard:32",
     True),
    ("gpu:a:1(S:0),gpu:b:7(S:0),shard:a:4(S:0),shard:b:28(S:0),mps:b:700(S:0)", "gpu:a:1,gpu:b:7,shard:32,mps:700",
     True),
    ("gpu:h100:8(S:0-1),shard:h100:1K(S:0-1)", "gpu:h100:8,shard:1024", True),
    ("gpu:h100:8(S:0-1),shard:h100:24(S:0-1)", "gpu:h100:8,shard:32", False),
    ("gpu:h100:8(S:0-1)", "gpu:h100:8,shard:32", False),
    ("gpu:h100:8(S:0-1),mps:h100:800(S:0-1)", "gpu:h100:8,shard:800", False),
    ("gpu:h100:7(S:0-1),shard:h100:32(S:0-1)", "gpu:h100:8,shard:32", False),
    ("gpu:h100:8(S:0-1),shard:h100:x(S:0-1)", "gpu:h100:8,shard:32", False),
])
def test_node_problems_compares_the_shares_by_their_total(controller, declared, same):
    line = "NodeName=gpu01 Arch=x86_64 CoresPerSocket=56 Gres=%s State=IDLE ThreadsPerCore=2" % controller
    problems = _slurm_nodes.node_problems([line], [{"name": "gpu01", "gres": declared}])
    assert problems == ([] if same else ["gpu01: the controller has Gres=%s, slurm.conf declares %s"
                                         % (re.sub(r"\([^)]*\)", "", controller), declared)])


@pytest.mark.parametrize("lines, nodes", [(42, []), (["x"], [{"name": "a"}]), (["x"], "a")])
def test_node_problems_refuses_other_input(lines, nodes):
    with pytest.raises(_slurm_nodes.SlurmError):
        _slurm_nodes.node_problems(lines, nodes)


def test_reason_stops_before_the_optional_fields_after_it():
    line = ("NodeName=gpu01 Gres=gpu:t:1 State=IDLE+DRAIN Reason=fan check [root@2026-12-02T00:30:00] Comment=rack 4 "
            "Extra=x")
    assert _slurm_nodes.parse_scontrol_nodes([line])["gpu01"]["reason"] == "fan check [root@2026-12-02T00:30:00]"
    line = "NodeName=gpu01 Gres=gpu:t:1 State=IDLE+DRAIN Reason=no time here Topology=a:b"
    assert _slurm_nodes.parse_scontrol_nodes([line])["gpu01"]["reason"] == "no time here"


LOST = {"gpu": 3, "code": "gpu_lost", "severity": "critical", "message": "GPU 3 is lost: it fell off the bus"}
HOT = {"gpu": 1, "code": "temperature_slowdown", "severity": "warning", "message": "GPU 1 is at 91 C"}
HEALTH_NODES = [
    "NodeName=a Gres=gpu:t:8 State=IDLE",
    "NodeName=b Gres=gpu:t:8 State=IDLE+DRAIN Reason=fan check, ticket 7 [root@2026-12-02T00:30:00]",
    "NodeName=c Gres=gpu:t:8 State=MIXED+DRAIN Reason=accelops-gpu: GPU 3 is lost: it fell off the bus "
    "[root@2026-12-02T00:30:00]",
    "NodeName=d Gres=gpu:t:8 State=IDLE+DRAIN Reason=accelops-gpu: GPU 0 is lost [root@2026-12-02T00:30:00]",
    "NodeName=e Gres=gpu:t:8 State=ALLOCATED",
    "NodeName=f Gres=gpu:t:8 State=IDLE Reason=accelops-gpu: GPU 0 is lost [root@2026-12-02T00:30:00]",
]


@pytest.mark.parametrize("name, verdict, findings, drain_on, expected", [
    # A sick node is drained with its findings as the reason.
    ("a", "critical", [HOT, LOST], "critical",
     [{"node": "a", "action": "drain", "reason": "accelops-gpu: GPU 3 is lost: it fell off the bus"}]),
    ("a", "warning", [HOT], "warning",
     [{"node": "a", "action": "drain", "reason": "accelops-gpu: GPU 1 is at 91 C"}]),
    # Below the chosen severity nothing happens.
    ("a", "warning", [HOT], "critical", []),
    ("a", "ok", [], "critical", []),
    # A person's drain is never touched, sick or healthy.
    ("b", "critical", [LOST], "critical", []),
    ("b", "ok", [], "critical", []),
    # Ours: kept while the same finding holds, resumed when healthy, given the new reason when it changed.
    ("c", "critical", [LOST], "critical", []),
    ("c", "ok", [], "critical", [{"node": "c", "action": "resume", "reason": None}]),
    ("c", "warning", [HOT], "critical", [{"node": "c", "action": "resume", "reason": None}]),
    # Slurm keeps the reason after a resume: a resumed node of ours is not resumed again.
    ("f", "ok", [], "critical", []),
    ("d", "critical", [LOST], "critical",
     [{"node": "d", "action": "drain", "reason": "accelops-gpu: GPU 3 is lost: it fell off the bus"}]),
    # A busy node is drained too: its jobs finish, no new one starts.
    ("e", "critical", [LOST], "critical",
     [{"node": "e", "action": "drain", "reason": "accelops-gpu: GPU 3 is lost: it fell off the bus"}]),
    # No verdict to act on.
    ("a", "unknown", [], "critical", []),
    ("zz", "critical", [LOST], "critical", []),
])
def test_health_actions(name, verdict, findings, drain_on, expected):
    verdicts = [{"name": name, "verdict": verdict, "findings": findings}]
    assert _slurm_nodes.health_actions(HEALTH_NODES, verdicts, drain_on) == expected


def test_health_reason_is_one_printable_line_of_bounded_length():
    finding = {"severity": "critical", "message": "bad\nline\x00" + "x" * 400}
    [action] = _slurm_nodes.health_actions(HEALTH_NODES[:1],
                                           [{"name": "a", "verdict": "critical", "findings": [finding]}])
    assert action["reason"].startswith("accelops-gpu: bad line ")
    assert len(action["reason"]) == _slurm_nodes.HEALTH_REASON_MAX
    assert all(" " <= char <= "~" for char in action["reason"])


@pytest.mark.parametrize("args", [
    ([], [], "never", "accelops-gpu:"),
    ([], [], "critical", "bad prefix"),
    ([], [{"verdict": "ok"}], "critical", "accelops-gpu:"),
    (7, [], "critical", "accelops-gpu:"),
])
def test_health_actions_refuses_bad_input(args):
    with pytest.raises(_slurm_nodes.SlurmError):
        _slurm_nodes.health_actions(*args)


MAINT_NODES = [
    *HEALTH_NODES,
    "NodeName=g Gres=gpu:t:8 State=MIXED+DRAIN Reason=accelops-gpu: maintenance: driver upgrade to 550.127.08 "
    "[root@2026-12-02T00:30:00]",
    "NodeName=h Gres=gpu:t:8 State=IDLE Reason=accelops-gpu: maintenance: driver upgrade [root@2026-12-02T00:30:00]",
    "NodeName=i Gres=gpu:t:8 State=IDLE+DRAIN+INVALID_REG Reason=gres/gpu count reported lower than configured (1 < 2) "
    "[slurm@2026-12-02T11:36:37]",
    "NodeName=j Gres=gpu:t:8 State=IDLE+DRAIN Reason=accelops-gpu: maintenance: replace fan 3 "
    "[root@2026-12-02T00:30:00]",
]
UPGRADE = "accelops-gpu: maintenance: driver upgrade to 550.127.08"


@pytest.mark.parametrize("name, action, holder, argv", [
    # A node in service is drained for maintenance, busy or not: its jobs finish, no new one starts.
    ("a", "drain", "none", ["state=drain", "reason=" + UPGRADE]),
    ("e", "drain", "none", ["state=drain", "reason=" + UPGRADE]),
    # A person's drain stays, with its reason, and is never resumed.
    ("b", "drain", "other", []),
    ("b", "resume", "other", []),
    # A health drain of ours becomes the maintenance's, and is not resumed by it.
    ("c", "drain", "health", ["state=drain", "reason=" + UPGRADE]),
    ("c", "resume", "health", []),
    # Drained for the same maintenance already: nothing to do; then given back.
    ("g", "drain", "maintenance", []),
    ("g", "resume", "maintenance", ["state=resume"]),
    # Slurm keeps the reason after a resume: a node in service with our old reason is not drained by it.
    ("h", "resume", "none", []),
    ("h", "drain", "none", ["state=drain", "reason=" + UPGRADE]),
    ("a", "resume", "none", []),
    # Slurm's own drain (a GPU that did not come back from the maintenance's reboot): the maintenance's reason wins,
    # and only the maintenance gives the node back.
    ("i", "drain", "slurm", ["state=drain", "reason=" + UPGRADE]),
    ("i", "resume", "slurm", []),
    # Another maintenance of this collection keeps its node: neither taken over nor resumed.
    ("j", "drain", "other", []),
    ("j", "resume", "other", []),
])
def test_maintenance_action(name, action, holder, argv):
    reason, scope = "driver upgrade to 550.127.08", "driver upgrade"
    result = _slurm_nodes.maintenance_action(MAINT_NODES, name, action, reason, scope=scope)
    assert result["holder"] == holder
    assert result["argv"] == (["scontrol", "update", "nodename=" + name, *argv] if argv else [])


def test_maintenance_gives_a_failed_upgrade_its_new_reason():
    reason = "driver upgrade to 550.127.08 failed:\nGPU 1\x00 lost"
    result = _slurm_nodes.maintenance_action(MAINT_NODES, "g", "drain", reason)
    assert result["argv"][-1] == "reason=" + UPGRADE + " failed: GPU 1 lost"
    long = _slurm_nodes.maintenance_action(MAINT_NODES, "a", "drain", "x" * 500)["argv"][-1]
    assert len(long) == len("reason=") + _slurm_nodes.HEALTH_REASON_MAX and long.endswith("...")


def test_without_a_scope_every_maintenance_is_the_same():
    result = _slurm_nodes.maintenance_action(MAINT_NODES, "j", "resume")
    assert result["argv"] == ["scontrol", "update", "nodename=j", "state=resume"]


def test_a_resumed_node_with_an_old_maintenance_reason_is_judged_again():
    """Slurm keeps the reason after a resume: node h is in service, so a critical verdict drains it."""
    [action] = _slurm_nodes.health_actions(MAINT_NODES, [{"name": "h", "verdict": "critical", "findings": [LOST]}])
    assert action["action"] == "drain"


def test_health_leaves_a_node_in_maintenance_alone():
    verdicts = [{"name": "g", "verdict": verdict, "findings": [LOST]} for verdict in ("ok",)]
    assert _slurm_nodes.health_actions(MAINT_NODES, verdicts) == []
    assert _slurm_nodes.health_actions(MAINT_NODES, [{"name": "g", "verdict": "critical", "findings": [LOST]}]) == []


@pytest.mark.parametrize("args, message, options", [
    ((MAINT_NODES, "zz", "drain", "x"), "the controller does not know the node zz", {}),
    ((MAINT_NODES, "a", "reboot", "x"), "action must be drain or resume", {}),
    ((MAINT_NODES, "a", "drain", " "), "reason: a drain for maintenance needs a reason", {}),
    ((MAINT_NODES, "a", "drain", "\x00\n"), "reason: a drain for maintenance needs a reason", {}),
    ((MAINT_NODES, "a", "drain", "replace fan"), "does not start with the maintenance's scope", {"scope": "driver"}),
    ((MAINT_NODES, "a", "resume", None), "scope must be one line", {"scope": "driver\nupgrade"}),
    ((MAINT_NODES, "a b", "resume", None), "node must be a node name", {}),
    ((MAINT_NODES, "a", "drain", "x"), "prefix must be", {"prefix": "bad prefix"}),
    ((7, "a", "resume", None), "lines must be", {}),
])
def test_maintenance_action_refuses_bad_input(args, message, options):
    with pytest.raises(_slurm_nodes.SlurmError, match=message):
        _slurm_nodes.maintenance_action(*args, **options)


# --------------------------------------------------------------------------- hostile input


@pytest.mark.parametrize("reason", [
    "accelops-gpu: GPU 3 is lost NodeName=gpu10 State=IDLE Gres=gpu:t:1",
    "accelops-gpu: GPU 3 is lost [x@y] z",
    "accelops-gpu: GPU 3 is lost [x@y]",
    "fan check, Comment=see State=IDLE",
])
def test_a_reason_cannot_pass_for_other_fields(reason):
    """A reason is free text: what it holds is neither the node's name, state or Gres, nor who set it."""
    line = ("NodeName=gpu1 Arch=x86_64 Gres=gpu:t:8(S:0-1) State=IDLE+DRAIN Partitions=gpu Reason=%s "
            "[root@2026-12-02T00:30:00] Comment=rack 4 [bob@2026-12-01T00:00:00] Extra=State=DOWN" % reason)
    assert _slurm_nodes.parse_scontrol_nodes([line]) == {"gpu1": {
        "name": "gpu1", "gres": "gpu:t:8", "states": ["IDLE", "DRAIN"], "reason_user": "root",
        "reason": "%s [root@2026-12-02T00:30:00]" % reason}}


def test_a_finding_with_brackets_keeps_its_drain_as_it_is():
    """The reason set once is read back as the same reason: the next run does not drain the node again."""
    finding = {"severity": "critical", "message": "GPU 3 [0000:1a:00.0] is lost [xid@79]"}
    verdicts = [{"name": "a", "verdict": "critical", "findings": [finding]}]
    [action] = _slurm_nodes.health_actions(HEALTH_NODES[:1], verdicts)
    assert action["reason"] == "accelops-gpu: GPU 3 [0000:1a:00.0] is lost [xid@79]"
    drained = "NodeName=a Gres=gpu:t:8 State=IDLE+DRAIN Reason=%s [root@2026-12-02T00:30:00]" % action["reason"]
    assert _slurm_nodes.health_actions([drained], verdicts) == []


@pytest.mark.parametrize("findings", [["GPU 3 is lost"], "GPU 3 is lost", [None]])
def test_health_findings_that_are_not_gpu_health_s_are_refused(findings):
    with pytest.raises(SlurmError, match=r"^verdicts must be a list of \{name, verdict, findings\}"):
        _slurm_nodes.health_actions(HEALTH_NODES[:1], [{"name": "a", "verdict": "critical", "findings": findings}])


def test_node_problems_wants_node_names():
    with pytest.raises(SlurmError, match=r"^nodes must be a list of \{name, gres\}"):
        _slurm_nodes.node_problems(SCONTROL, [{"name": None, "gres": ""}])


def test_a_node_judged_twice_is_refused():
    """Two hosts with one slurm_node_name: one sick, one healthy would drain and resume the node in one run."""
    verdicts = [{"name": "c", "verdict": "critical", "findings": [LOST]},
                {"name": "c", "verdict": "ok", "findings": []}]
    with pytest.raises(SlurmError, match=r"^verdicts: each node once, but c come more than once$"):
        _slurm_nodes.health_actions(HEALTH_NODES, verdicts)
