"""The Slurm filters: what playbooks hand them (registered results, slurped files) and their errors."""

from __future__ import annotations

import base64

import pytest
from ansible.errors import AnsibleFilterError
from hostile import huge, nested

from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import GpuFactsCollector, resolve_subsets
from ansible_collections.accelops.gpu.plugins.module_utils._nvml import NvmlSession
from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_conf import gres_summary
from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import (
    FilterModule,
    slurm_foreign_scripts,
    slurm_gres_conf,
    slurm_gres_mismatch,
    slurm_hardware,
    slurm_health_actions,
    slurm_maintenance,
    slurm_node_gres,
    slurm_node_line,
    slurm_node_problems,
    slurm_node_states,
    slurm_site_scripts,
)

NAMES = {"slurm_node_gres", "slurm_hardware", "slurm_node_line", "slurm_gres_conf", "_slurm_gres_mismatch",
         "_slurm_node_problems", "slurm_node_states", "_slurm_health_actions", "_slurm_maintenance",
         "_slurm_allreduce_plan", "_slurm_allreduce_result", "_slurm_foreign_scripts", "_slurm_site_scripts",
         "_slurm_cluster_members"}
SLURMD_C = ("NodeName=dgx01 CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2063937\n"
            "UpTime=12-03:04:05\n")
MIG_MINORS = "config 1\nmonitor 2\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n"


def registered(stdout="", stderr="", rc=0):
    return {"changed": False, "rc": rc, "stdout": stdout, "stderr": stderr, "stdout_lines": stdout.splitlines(),
            "stderr_lines": stderr.splitlines(), "cmd": ["slurmd"]}


@pytest.fixture
def h100_facts(nvml_fixture):
    nvml_fixture("dgx-h100")
    with NvmlSession() as session:
        return GpuFactsCollector(session, resolve_subsets(["all", "!pci", "!processes"])).collect()


def mig_node():
    """One A100 in MIG mode with one 7g.40gb device, as gpu_facts gives it."""
    mig = {"index": 0, "uuid": "MIG-7c1c8b0e-0000-0000-0000-000000000000", "name": "NVIDIA A100-SXM4-40GB MIG 7g.40gb",
           "profile": "7g.40gb", "gpu_instance_id": 1, "compute_instance_id": 0}
    gpu = {"index": 0, "lost": False, "errors": [], "name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-1",
           "pci_bus_id": "0000:07:00.0", "minor_number": 0, "nvlinks": None, "mig_mode": True, "mig_devices": [mig],
           "cpu_affinity": "0-7"}
    return {"nvml_available": True, "driver_loaded": True, "gpu_count": 1, "gpus": [gpu], "errors": [],
            "driver_version": "535.161.08"}


def test_filters_are_registered():
    filters = FilterModule().filters()
    assert set(filters) == NAMES
    assert filters["slurm_hardware"](SLURMD_C)["cpus"] == 224


def test_node_gres_from_a_registered_module_result_and_slurmd_c(h100_facts):
    records = slurm_node_gres({"ansible_facts": {"nvidia": h100_facts}, "changed": False}, registered(SLURMD_C))
    assert [r["cores"] for r in records] == ["0-55"] * 4 + ["56-111"] * 4
    assert slurm_node_gres(h100_facts, SLURMD_C) == records
    assert slurm_node_gres(h100_facts, slurm_hardware(SLURMD_C)) == records
    assert gres_summary(records) == "gpu:nvidia_h100_80gb_hbm3:8"


def test_node_gres_with_shards_and_mps_as_keywords(h100_facts):
    records = slurm_node_gres(h100_facts, SLURMD_C, shards_per_gpu=2, mps=True)
    assert records[:8] == slurm_node_gres(h100_facts, SLURMD_C)
    assert gres_summary(records) == "gpu:nvidia_h100_80gb_hbm3:8,shard:16,mps:800"
    assert slurm_gres_conf(records, True)[:2] == ["AutoDetect=nvml", "Name=shard Count=2 File=/dev/nvidia0"]
    with pytest.raises(AnsibleFilterError, match=r"^slurm_node_gres: shards_per_gpu must be a whole number from 0 "
                                                 r"\(no shards\) to 128, got -1$"):
        slurm_node_gres(h100_facts, shards_per_gpu=-1)


@pytest.mark.parametrize("minors", [
    MIG_MINORS,
    registered(MIG_MINORS),  # a registered cat
    {"content": base64.b64encode(MIG_MINORS.encode()).decode(), "encoding": "base64",
     "source": "/proc/driver/nvidia-caps/mig-minors"},  # a slurp
])
def test_mig_minors_as_a_playbook_reads_them(minors):
    (record,) = slurm_node_gres(mig_node(), None, minors)
    assert record["type"] == "nvidia_a100_7g.40gb"
    assert record["file"] == "/dev/nvidia0,/dev/nvidia-caps/nvidia-cap12,/dev/nvidia-caps/nvidia-cap13"
    assert slurm_gres_conf([record], False) == [
        "AutoDetect=off", "Name=gpu Type=nvidia_a100_7g.40gb MultipleFiles=" + record["file"]]


def test_hardware_from_a_registered_result():
    assert slurm_hardware(registered(SLURMD_C)) == {
        "name": "dgx01", "cpus": 224, "boards": 1, "sockets_per_board": 2, "sockets": 2, "cores_per_socket": 56,
        "threads_per_core": 2, "real_memory": 2063937, "gres": None}


def test_node_line_from_slurmd_c_output_and_a_port_from_inventory(h100_facts):
    records = slurm_node_gres(h100_facts)
    assert slurm_node_line("dgx01", registered(SLURMD_C), records, "dgx01.example.org", "6818",
                           extra={"Features": "h100"}) == (
        "NodeName=dgx01 NodeAddr=dgx01.example.org Port=6818 CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 "
        "ThreadsPerCore=2 RealMemory=2063937 Gres=gpu:nvidia_h100_80gb_hbm3:8 Features=h100 State=UNKNOWN")


def test_mismatch_reads_slurmd_g_stderr(h100_facts):
    records = slurm_node_gres(h100_facts, SLURMD_C)
    lines = ["slurmd: Gres Name=gpu Type=nvidia_h100_80gb_hbm3 Count=1 Index=%d ID=7696487 File=/dev/nvidia%d "
             "Cores=%s CoreCnt=224 Links=%s Flags=HAS_FILE,HAS_TYPE,ENV_NVML" % (i, i, r["cores"], r["links"])
             for i, r in enumerate(records)]
    assert slurm_gres_mismatch(records, registered(stderr="\n".join(lines))) == []
    assert slurm_gres_mismatch(records, "\n".join(lines[1:])) == [
        "GPU type nvidia_h100_80gb_hbm3: gres.conf/facts expect 8, slurmd -G detects 7",
        "GPU 0 (/dev/nvidia0): expected as type nvidia_h100_80gb_hbm3, but slurmd -G lists no GPU with this File"]


@pytest.mark.parametrize("call, message", [
    (lambda: slurm_node_gres({"nvml_available": True, "driver_loaded": False, "reason": "the NVIDIA kernel driver is "
                                                                                        "not loaded"}),
     r"^slurm_node_gres: NVML is not usable on this node, so slurmd cannot detect its GPUs: the NVIDIA kernel driver"),
    (lambda: slurm_node_gres(mig_node(), None, {"content": "not base64!"}),
     r"^slurm_node_gres: mig_minors: the slurped content is not base64 text"),
    (lambda: slurm_node_gres(mig_node(), None, 12),
     r"^slurm_node_gres: the input must be what cat /proc/driver/nvidia-caps/mig-minors printed"),
    (lambda: slurm_node_gres(mig_node(), 224), r"^slurm_node_gres: the input must be what slurmd -C printed"),
    (lambda: slurm_hardware(42),
     r"^slurm_hardware: the input must be what slurmd -C printed \(its registered result or its text\), got int$"),
    (lambda: slurm_hardware(registered("slurmd: error: Unable to read slurm.conf")),
     r"^slurm_hardware: slurmd -C should print 'NodeName=<name> "),
    (lambda: slurm_node_line("bad name", SLURMD_C, ""), r"^slurm_node_line: name: a Slurm node name is"),
    (lambda: slurm_node_line("n1", SLURMD_C, "", port=99999), r"^slurm_node_line: port: give a port number"),
    (lambda: slurm_gres_conf([], "false"), r"^slurm_gres_conf: autodetect must be true \(AutoDetect=nvml\) or false"),
    (lambda: slurm_gres_mismatch([], 42), r"^_slurm_gres_mismatch: the input must be what slurmd -G printed"),
    (lambda: slurm_gres_mismatch("gpu", ""), r"^_slurm_gres_mismatch: records must be the list slurm_node_gres"),
])
def test_bad_input_names_the_filter_and_the_problem(call, message):
    with pytest.raises(AnsibleFilterError, match=message):
        call()


def test_slurm_node_problems_reads_a_registered_result_and_names_the_filter_on_bad_input():
    result = {"stdout": "NodeName=gpu01 Gres=gpu:nvidia_l40s:2(S:0-1) State=IDLE+DRAIN Reason=Kill task failed "
                        "[slurm@2026-12-02T00:30:00]"}
    assert slurm_node_problems(result, [{"name": "gpu01", "gres": "gpu:nvidia_l40s:2"}]) == [
        "gpu01: state IDLE+DRAIN, reason: Kill task failed [slurm@2026-12-02T00:30:00]"]
    with pytest.raises(AnsibleFilterError, match="_slurm_node_problems: nodes must be"):
        slurm_node_problems([], "gpu01")


def test_slurm_health_actions_reads_a_registered_result_and_names_the_filter_on_bad_input():
    result = {"stdout": "NodeName=gpu01 Gres=gpu:nvidia_l40s:2(S:0-1) State=IDLE"}
    verdicts = [{"name": "gpu01", "verdict": "critical",
                 "findings": [{"severity": "critical", "message": "GPU 1 is lost"}]}]
    assert slurm_health_actions(result, verdicts) == [
        {"node": "gpu01", "action": "drain", "reason": "accelops-gpu: GPU 1 is lost"}]
    with pytest.raises(AnsibleFilterError, match="_slurm_health_actions: drain_on must be"):
        slurm_health_actions(result, verdicts, "ok")


def test_slurm_maintenance_reads_a_registered_result_and_names_the_filter_on_bad_input():
    result = {"stdout": "NodeName=gpu01 Gres=gpu:nvidia_l40s:2(S:0-1) State=MIXED"}
    assert slurm_maintenance(result, "gpu01", "drain", "driver upgrade")["argv"] == [
        "scontrol", "update", "nodename=gpu01", "state=drain", "reason=accelops-gpu: maintenance: driver upgrade"]
    assert slurm_maintenance(result, "gpu01", "resume")["argv"] == []
    with pytest.raises(AnsibleFilterError, match=r"^_slurm_maintenance: the controller does not know the node gpu02$"):
        slurm_maintenance(result, "gpu02", "resume")


@pytest.mark.parametrize("result, message", [
    # a task registered on every host but run on the controller only
    ({"changed": False, "skipped": True, "skip_reason": "Conditional result was False"},
     r"^_slurm_health_actions: the input is the result of a task that was skipped on this host, not what scontrol "
     r"show node --oneliner printed$"),
    ({"changed": False, "msg": "x"},
     r"^_slurm_health_actions: the input must be what scontrol show node --oneliner printed \(its registered result "
     r"or its text\), got a dict without stdout$"),
])
def test_a_result_without_output_says_what_it_is(result, message):
    with pytest.raises(AnsibleFilterError, match=message):
        slurm_health_actions(result, [])


SCONTROL_TWO = ("NodeName=gpu01 Arch=x86_64 Gres=gpu:nvidia_h100_80gb_hbm3:8(S:0-1) State=IDLE Partitions=gpu\n"
                "NodeName=gpu02 Arch=x86_64 Gres=gpu:nvidia_l40s:2(S:0) State=MIXED+DRAIN Partitions=gpu "
                "Reason=bad fan [root@2026-12-02T00:30:00]\n")


def test_node_states_from_a_registered_scontrol():
    states = slurm_node_states({"rc": 0, "stdout": SCONTROL_TWO, "stderr": ""}, ["gpu01", "gpu02", "gpu03"])
    assert states == {
        "gpu01": {"state": "IDLE", "reason": None, "problem": None},
        "gpu02": {"state": "MIXED+DRAIN", "reason": "bad fan [root@2026-12-02T00:30:00]", "problem": None},
        "gpu03": {"state": None, "reason": None, "problem": "Slurm's controller does not know this node"},
    }
    assert slurm_node_states(SCONTROL_TWO.splitlines(), ["gpu01"]) == {"gpu01": states["gpu01"]}


@pytest.mark.parametrize("line", ["NodeName=gpu01 Arch=x86_64 Partitions=gpu", "NodeName=gpu01 State= Arch=x86_64"])
def test_a_node_without_a_state_says_so(line):
    """A node line without State= (another scontrol's output, a cut line) is a state not known, and says why."""
    assert slurm_node_states(line, ["gpu01"]) == {"gpu01": {
        "state": None, "reason": None, "problem": "Slurm's controller printed no state for this node"}}


@pytest.mark.parametrize("result, said", [
    ({"rc": 1, "stdout": "", "stderr": "slurm_load_node error: Unable to contact slurm controller\n"},
     "Slurm's controller could not be asked: slurm_load_node error: Unable to contact slurm controller"),
    ({"unreachable": True, "msg": "ssh: connect to host ctl port 22: refused"},
     "Slurm's controller could not be asked: ssh: connect to host ctl port 22: refused"),
    ({"failed": True, "rc": 2, "msg": "[Errno 2] No such file or directory: b'scontrol'", "stdout": ""},
     "Slurm's controller could not be asked: [Errno 2] No such file or directory: b'scontrol'"),
    ({"rc": 1, "stderr": "x" * 5000}, "Slurm's controller could not be asked: " + "x" * 300),
    # stderr of white space only says nothing: the task's own message does.
    ({"rc": 1, "stdout": "", "stderr": " \n", "msg": "non-zero return code"},
     "Slurm's controller could not be asked: non-zero return code"),
    ({"rc": 1, "stderr": "", "msg": ""}, "Slurm's controller could not be asked: scontrol exited with 1"),
])
def test_a_controller_that_cannot_be_asked_is_said_never_a_node_outside_slurm(result, said):
    assert slurm_node_states(result, ["gpu01"]) == {"gpu01": {"state": None, "reason": None, "problem": said}}


@pytest.mark.parametrize("result", [SCONTROL_TWO, {"rc": 1, "stderr": "Unable to contact slurm controller"}])
def test_a_name_slurm_cannot_have_is_that_nodes_problem_only(result):
    """A host known by its IPv6 address or a name with a newline: its own problem, the other nodes' states stay (a
    report keeps the node, with the reason)."""
    states = slurm_node_states(result, ["fe80::1", "gpu01\nx", "gpu01"])
    assert states["fe80::1"] == {"state": None, "reason": None,
                                 "problem": "'fe80::1' is not a Slurm node name (letters, digits, . _ -)"}
    assert states["gpu01\nx"]["problem"] == "'gpu01\\nx' is not a Slurm node name (letters, digits, . _ -)"
    assert states["gpu01"]["state"] == ("IDLE" if result is SCONTROL_TWO else None)
    long_name = "gpu" * 10000
    assert len(slurm_node_states(SCONTROL_TWO, [long_name + "!"])[long_name + "!"]["problem"]) < 120


@pytest.mark.parametrize("output, names, error", [
    ({"skipped": True, "rc": 1}, ["gpu01"], "skipped"),
    (SCONTROL_TWO, "gpu01", "names must be a list"),
    (SCONTROL_TWO, ["gpu01", 7], "names must be a list"),
    (SCONTROL_TWO, None, "names must be a list"),
    (42, ["gpu01"], "must be what scontrol show node --oneliner printed"),
])
def test_node_states_refuses_what_it_cannot_read(output, names, error):
    with pytest.raises(AnsibleFilterError, match="slurm_node_states: .*" + error):
        slurm_node_states(output, names)


WANTED = {"Prolog": "/etc/slurm/prolog.d/*", "Epilog": "/etc/slurm/epilog.d/*", "PrologFlags": "Alloc"}


def test_a_site_prolog_in_a_hand_written_slurm_conf_is_named():
    conf = ("ClusterName=gpu\nprolog=/usr/local/sbin/site-prolog   # ours\nEpilog=/etc/slurm/epilog.d/*\n"
            "# Prolog=/commented/out\nPrologFlags=Contain\nPrologEpilogTimeout=60\nNodeName=n1 CPUs=4\n")
    assert slurm_foreign_scripts(conf, WANTED) == ["Prolog=/usr/local/sbin/site-prolog", "PrologFlags=Contain"]
    read = {"exists": True, "content": base64.b64encode(conf.encode()).decode()}
    assert slurm_foreign_scripts(read, WANTED) == ["Prolog=/usr/local/sbin/site-prolog", "PrologFlags=Contain"]


def test_the_roles_own_slurm_conf_and_none_have_no_foreign_script():
    ours = "Prolog=/etc/slurm/prolog.d/*\nEpilog=/etc/slurm/epilog.d/*\nPrologFlags=Alloc\n"
    assert slurm_foreign_scripts(ours, WANTED) == []
    assert slurm_foreign_scripts("ClusterName=gpu\n", WANTED) == []
    assert slurm_foreign_scripts({"exists": False}, WANTED) == []


@pytest.mark.parametrize("conf, wanted, message", [
    ({"exists": True, "content": "not base64!"}, WANTED, "not base64"),
    (["Prolog=x"], WANTED, "must be text"),
    ("", ["Prolog"], "wanted must be a dict"),
])
def test_foreign_scripts_refuses_what_it_cannot_read(conf, wanted, message):
    with pytest.raises(AnsibleFilterError, match=message):
        slurm_foreign_scripts(conf, wanted)


@pytest.mark.parametrize("read, message", [
    ({"exists": True, "type": "link", "target": "/shared/slurm.conf"}, "a link to /shared/slurm.conf"),
    ({"exists": True, "type": "file", "content": None}, "larger than"),
    ({"exists": True, "type": "file", "checksum": None, "error": "a FIFO"}, "a FIFO"),
    ({"exists": None, "error": "Permission denied"}, "Permission denied"),
    ({"exists": True, "type": "directory"}, "a directory"),
])
def test_a_slurm_conf_that_could_not_be_read_is_refused_not_passed(read, message):
    """A slurm.conf whose text the probe did not bring (a link, too large, unreadable) may hold any Prolog: refused
    with what was found, never read as none."""
    with pytest.raises(AnsibleFilterError, match="could not be read.*" + message):
        slurm_foreign_scripts(read, WANTED)


@pytest.mark.parametrize("conf, found", [
    # Several settings on one line, as Slurm reads them.
    ("SlurmctldHost=ctl Prolog=/site/prolog Epilog=/etc/slurm/epilog.d/*\n", ["Prolog=/site/prolog"]),
    ("  PROLOG = /site/prolog\n", ["Prolog=/site/prolog"]),
    # A line continued with a backslash; an escaped # is no comment.
    ("ClusterName=gpu \\\n  Prolog=/site/prolog\n", ["Prolog=/site/prolog"]),
    ("Epilog=/site/ep\\#1 # a comment\n", ["Epilog=/site/ep#1"]),
    # A quoted value is the value inside the quotes.
    ('Prolog="/etc/slurm/prolog.d/*"\nEpilog="/site/my epilog"\n', ["Epilog=/site/my epilog"]),
    ("Prolog=/etc/slurm/prolog.d/* # Prolog=/commented\n", []),
])
def test_script_settings_are_read_as_slurm_reads_them(conf, found):
    assert slurm_foreign_scripts(conf, WANTED) == found


def test_the_sites_other_scripts_are_kept_where_slurm_site_scripts_gives_them():
    """A hand-written slurm.conf's TaskProlog, HealthCheckProgram, ... pass where the wanted settings (the role's and
    slurm_site_scripts') hold them, and are named where they do not; the role's own file (its mark line) is rewritten
    for them, not refused."""
    conf = "ClusterName=gpu\nTaskProlog=/usr/local/sbin/task-prolog\nhealthcheckprogram=/usr/sbin/nhc\n" \
           "HealthCheckInterval=300\n"
    site = slurm_site_scripts({"TaskProlog": "/usr/local/sbin/task-prolog", "HealthCheckProgram": "/usr/sbin/nhc",
                               "HealthCheckInterval": 300})
    assert site["problems"] == []
    read = {"exists": True, "type": "file", "content": base64.b64encode(conf.encode()).decode()}
    assert slurm_foreign_scripts(read, {**WANTED, **site["settings"]}) == []
    assert slurm_foreign_scripts(read, WANTED) == [
        "TaskProlog=/usr/local/sbin/task-prolog", "HealthCheckProgram=/usr/sbin/nhc", "HealthCheckInterval=300"]
    mark = "# Written whole by accelops.gpu.slurm: a site's scripts come from slurm_site_scripts.\n"
    marked = {"exists": True, "type": "file", "content": base64.b64encode((mark + conf).encode()).decode()}
    assert slurm_foreign_scripts(marked, WANTED) == []


@pytest.mark.parametrize("value, settings, problems", [
    ({}, {}, []),
    (None, {}, []),
    ({"taskprolog": "/opt/tp"}, {"TaskProlog": "/opt/tp"}, []),
    ({"TaskProlog": "/opt/tp", "Prolog": "/x"}, {"TaskProlog": "/opt/tp"},
     ["slurm_site_scripts.Prolog is not a setting the role writes for a site; give PrologSlurmctld, EpilogSlurmctld, "
      "TaskProlog, TaskEpilog, SrunProlog, SrunEpilog, HealthCheckProgram, HealthCheckInterval, HealthCheckNodeState "
      "(the other settings of slurm.conf are the role's own)"]),
    ("x", {}, ["slurm_site_scripts must be a dict of slurm.conf's settings (PrologSlurmctld, EpilogSlurmctld, "
               "TaskProlog, TaskEpilog, SrunProlog, SrunEpilog, HealthCheckProgram, HealthCheckInterval, "
               "HealthCheckNodeState) and their values, got 'x'"]),
])
def test_site_scripts_filter_gives_the_settings_and_every_problem(value, settings, problems):
    assert slurm_site_scripts(value) == {"settings": settings, "problems": problems}


def test_site_scripts_filter_never_fails_on_hostile_values():
    checked = slurm_site_scripts({"TaskProlog": nested(5000), "HealthCheckInterval": huge(), "k" * 100000: "v",
                                  "SrunProlog": "/x\nNodeName=evil"})
    assert checked["settings"] == {}
    assert len(checked["problems"]) == 5
    assert all(len(problem) < 600 for problem in checked["problems"])


def test_an_include_may_hold_a_prolog_and_is_named():
    conf = "ClusterName=gpu\ninclude /etc/slurm/site.conf\nPrologFlags=Alloc\n"
    assert slurm_foreign_scripts(conf, WANTED) == ["Include /etc/slurm/site.conf"]
