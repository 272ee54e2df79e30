"""_slurm_cluster_members: the GPU nodes of a configless cluster when some are outside the play (a node that
joins, a run with --limit), from the nodes' own records and the controller's slurm.conf and gres.conf as the role
wrote them."""

from __future__ import annotations

import base64

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import FilterModule

MEMBERS = FilterModule().filters()["_slurm_cluster_members"]
H100 = ("NodeName=dgx01 NodeAddr=10.0.0.11 Port=6818 CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 "
        "ThreadsPerCore=2 RealMemory=2063937 Gres=gpu:nvidia_h100_80gb_hbm3:8,shard:64 State=UNKNOWN")
L40S = ("NodeName=pcie01 CPUs=128 Boards=1 SocketsPerBoard=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=515000 "
        "Gres=gpu:nvidia_l40s:2 State=UNKNOWN")
CONF = ("# Ansible managed\nClusterName=gpucluster\nSlurmctldParameters=enable_configless\n"
        "ProctrackType=proctrack/cgroup\n\n%s\n%s\nPartitionName=gpu Nodes=dgx01,pcie01 Default=YES\n" % (H100, L40S))
GRES = ("# Ansible managed\nNodeName=dgx01 AutoDetect=nvml\nNodeName=dgx01 Name=shard Count=8 File=/dev/nvidia0\n"
        "NodeName=pcie01 AutoDetect=off\nNodeName=pcie01 Name=gpu Type=nvidia_l40s File=/dev/nvidia0 Cores=0-31\n")
NEW = {"name": "new01", "line": "NodeName=new01 CPUs=8 RealMemory=1000 Gres=gpu:nvidia_l4:1 State=UNKNOWN",
       "gres": [{"name": "gpu", "type": "nvidia_l4", "count": 1}], "gres_conf": ["AutoDetect=nvml"],
       "in_container": False}


def read(text):
    """node_probe's read of a file."""
    return {"exists": True, "type": "file", "content": base64.b64encode(text.encode()).decode()}


def test_a_node_joins_and_the_others_keep_the_controllers_lines():
    hostvars = {"dgx01.example": {}, "pcie01": {"slurm_node_name": "pcie01"}, "new01": {"__slurm_node": NEW}}
    found = MEMBERS(["dgx01.example", "new01", "pcie01"], hostvars, read(CONF), read(GRES), ["new01", "ctl"])
    assert [node["name"] for node in found["nodes"]] == ["dgx01", "new01", "pcie01"]
    assert found["nodes"][0]["line"] == H100
    assert found["nodes"][0]["gres"] == "gpu:nvidia_h100_80gb_hbm3:8,shard:64"
    assert found["nodes"][2]["gres_conf"] == ["AutoDetect=off",
                                              "Name=gpu Type=nvidia_l40s File=/dev/nvidia0 Cores=0-31"]
    assert found["unknown"] == [] and found["waiting"] == []
    # The controller's gres.conf keeps the others' lines as they were, in inventory order.
    assert found["gres_lines"] == [
        "NodeName=dgx01 AutoDetect=nvml", "NodeName=dgx01 Name=shard Count=8 File=/dev/nvidia0",
        "NodeName=new01 AutoDetect=nvml",
        "NodeName=pcie01 AutoDetect=off", "NodeName=pcie01 Name=gpu Type=nvidia_l40s File=/dev/nvidia0 Cores=0-31"]
    assert found["gres_types"] == ["gpu", "shard"]
    # A slurm.conf that confines jobs: the kept nodes are not containers, and auto keeps confining.
    assert [node["in_container"] for node in found["nodes"]] == [False, False, False]


def test_kept_nodes_count_as_containers_where_the_controller_does_not_confine():
    conf = CONF.replace("proctrack/cgroup", "proctrack/linuxproc")
    found = MEMBERS(["dgx01"], {"dgx01": {}}, read(conf), read(GRES), [])
    assert found["nodes"][0]["in_container"] is True


def test_a_node_the_controller_does_not_have_is_unknown_never_guessed():
    hostvars = {"dgx01": {}, "gone": {}, "renamed": {"slurm_node_name": "other"}}
    found = MEMBERS(["dgx01", "gone", "renamed"], hostvars, read(CONF), read(GRES), [])
    assert found["unknown"] == ["gone", "renamed"]
    assert [node["name"] for node in found["nodes"]] == ["dgx01"]
    # No slurm.conf on the controller yet: every node outside the play is unknown.
    assert MEMBERS(["dgx01"], {"dgx01": {}}, {"exists": False}, None, [])["unknown"] == ["dgx01"]


def test_a_node_of_the_play_not_described_yet_is_waiting():
    found = MEMBERS(["dgx01", "new01"], {"dgx01": {}, "new01": {}}, read(CONF), read(GRES), ["new01"])
    assert found["waiting"] == ["new01"]
    assert [node["name"] for node in found["nodes"]] == ["dgx01"]


def test_every_node_in_the_play_needs_no_read():
    # A run over the whole cluster (or without configless mode) never reads the controller's files.
    found = MEMBERS(["new01"], {"new01": {"__slurm_node": NEW}}, "unread", None, ["new01"])
    assert found["nodes"] == [NEW] and found["gres_types"] == ["gpu"]


def test_only_the_roles_own_node_lines_are_kept():
    conf = "NodeName=DEFAULT CPUs=8\nNodeName=gpu[01-04] CPUs=8 Gres=gpu:4\n#NodeName=old01 CPUs=8\n"
    found = MEMBERS(["DEFAULT", "gpu01", "old01"], {}.fromkeys(["DEFAULT", "gpu01", "old01"], {}), conf, "", [])
    assert found["unknown"] == ["DEFAULT", "gpu01", "old01"]


@pytest.mark.parametrize("conf", [
    {"exists": True, "type": "link", "target": "/elsewhere"},
    {"exists": True, "type": "file", "content": None, "error": "larger than the read limit"},
    {"exists": True, "type": "file", "content": "not base64!"},
    42,
])
def test_a_controllers_file_that_cannot_be_read_is_an_error(conf):
    with pytest.raises(AnsibleFilterError, match="_slurm_cluster_members"):
        MEMBERS(["dgx01"], {"dgx01": {}}, conf, read(GRES), [])


@pytest.mark.parametrize("hosts, hostvars, play", [
    ("dgx01", {"dgx01": {}}, []),
    (["dgx01"], {"dgx01": {"__slurm_node": {"name": "dgx01"}}}, ["dgx01"]),
    (["dgx01"], {"dgx01": {}}, "dgx01"),
])
def test_malformed_arguments_are_errors(hosts, hostvars, play):
    with pytest.raises(AnsibleFilterError):
        MEMBERS(hosts, hostvars, read(CONF), read(GRES), play)


def test_the_nodes_that_leave_are_those_of_slurm_conf_the_group_no_longer_has():
    hostvars = {"dgx01": {}, "new01": {"__slurm_me": {"name": "new01"}}}
    found = MEMBERS(["dgx01", "new01"], hostvars, read(CONF), read(GRES), ["new01", "ctl"])
    assert found["removed"] == ["pcie01"]
    # A node of the play counts under its own name once it described itself.
    found = MEMBERS(["new01", "pcie01"], {"new01": {"__slurm_node": NEW}, "pcie01": {}}, read(CONF), read(GRES),
                    ["new01"])
    assert found["removed"] == ["dgx01"]
    # A slurm.conf that cannot be read removes nothing here (the preflight's check of its scripts says why).
    assert MEMBERS(["new01"], {"new01": {"__slurm_node": NEW}}, {"exists": True, "type": "link"}, None,
                   ["new01"])["removed"] == []


# --------------------------------------------------------------------------- Odd and hostile controller files


def kept(conf, gres=GRES, hostvars=None, play=None):
    hostvars = hostvars if hostvars is not None else {"dgx01": {}, "pcie01": {}}
    return MEMBERS(list(hostvars), hostvars, read(conf), read(gres), play or [])


def test_crlf_blanks_and_extra_spaces_are_read_as_slurm_reads_them():
    conf = CONF.replace("\n", "\r\n").replace("NodeName=dgx01 NodeAddr", "  NodeName=dgx01  \tNodeAddr")
    found = kept(conf, GRES.replace("\n", "\r\n"))
    assert found["problems"] == [] and found["unknown"] == []
    assert found["nodes"][0]["line"] == "NodeName=dgx01  \tNodeAddr" + H100[len("NodeName=dgx01 NodeAddr"):]
    assert found["nodes"][1]["gres_conf"] == ["AutoDetect=off",
                                              "Name=gpu Type=nvidia_l40s File=/dev/nvidia0 Cores=0-31"]
    assert all("\r" not in line for line in found["gres_lines"])


@pytest.mark.parametrize("line, said", [
    # Two lines for one node: which one Slurm uses is not clear.
    (H100 + "\n" + H100.replace("CPUs=224", "CPUs=8"), "more than one NodeName=dgx01 line (dgx01)"),
    # Hand-written: a comment, a continued line, a quoted value, an escape, a control character.
    (H100 + " # moved to rack 4", "NodeName=dgx01 line of the controller's slurm.conf (dgx01) is not one"),
    (H100.replace(" CPUs=224", " \\\n CPUs=224"), "(dgx01) is not one this role writes"),
    (H100.replace("State=UNKNOWN", 'Features="a b"'), "(dgx01) is not one this role writes"),
    (H100.replace("State=UNKNOWN", "Features=a\\#b"), "(dgx01) is not one this role writes"),
    (H100.replace(" CPUs", "\x00CPUs"), "(dgx01) is not one this role writes"),
    (H100.replace(" CPUs", "\x0bCPUs"), "(dgx01) is not one this role writes"),
    (H100.replace(" CPUs", "\u2028CPUs"), "(dgx01) is not one this role writes"),
])
def test_a_kept_node_whose_lines_are_not_the_roles_is_refused_never_rewritten(line, said):
    found = kept(CONF.replace(H100, line))
    assert [problem for problem in found["problems"] if said in problem], found["problems"]
    assert [node["name"] for node in found["nodes"]] == ["pcie01"]
    # Nothing of such a line reaches the files the role writes.
    assert all("\x00" not in text and "\x0b" not in text for text in found["gres_lines"])


def test_a_name_that_is_part_of_another_is_its_own_node():
    conf = CONF.replace(H100, H100 + "\nNodeName=dgx0 CPUs=8 Gres=gpu:x:1 State=UNKNOWN")
    found = kept(conf, GRES + "NodeName=dgx0 AutoDetect=nvml\n", {"dgx01": {}, "dgx0": {}, "pcie01": {}})
    assert found["problems"] == []
    assert [(node["name"], node["gres_conf"][0]) for node in found["nodes"]] == [
        ("dgx01", "AutoDetect=nvml"), ("dgx0", "AutoDetect=nvml"), ("pcie01", "AutoDetect=off")]


def test_a_kept_node_without_gres_conf_lines_is_refused():
    found = kept(CONF, GRES.replace("NodeName=pcie01", "NodeName=pcie02"))
    assert found["problems"] == ["the controller's gres.conf has no NodeName=pcie01 line (pcie01)"]


def test_gres_conf_lines_of_a_node_not_in_slurm_conf_are_dropped():
    found = kept(CONF, GRES + "NodeName=ghost01 AutoDetect=nvml\n")
    assert found["problems"] == []
    assert not [line for line in found["gres_lines"] if "ghost01" in line]


@pytest.mark.parametrize("extra", ["AutoDetect=nvml", "NodeName=dgx[01-02] Name=gpu File=/dev/nvidia[0-7]",
                                   "NodeName=dgx01 Name=gpu File=/dev/nvidia0 # spare", "NodeName=dgx01"])
def test_hand_written_gres_conf_lines_are_refused_not_dropped(extra):
    found = kept(CONF, GRES + "# a comment is fine\n\n" + extra + "\n")
    assert found["problems"] == ["the controller's gres.conf has lines this role does not write (line 8), which "
                                 "the cluster's gres.conf would drop"]


def test_a_slurm_conf_not_in_configless_mode_keeps_no_node():
    found = kept(CONF.replace("SlurmctldParameters=enable_configless\n", ""), "")
    assert [problem for problem in found["problems"]
            if problem.startswith("the controller's slurm.conf is not in configless mode yet")]
    # With other flags, in any case.
    conf = CONF.replace("=enable_configless", "=idle_on_node_suspend,Enable_Configless")
    assert kept(conf)["problems"] == []


@pytest.mark.parametrize("name, said", [
    (["dgx01"], "dgx01: slurm_node_name must be a node name (letters, digits, _ . and -), got a list"),
    ({"a": 1}, "got a dict"),
    (True, "got a bool"),
    # A number would be the host name's fallback otherwise, and a node of the play may not have one either.
    (1001, "got 1001"),
])
def test_a_slurm_node_name_that_is_no_name_is_refused(name, said):
    found = kept(CONF, hostvars={"dgx01": {"slurm_node_name": name}, "pcie01": {}})
    assert said in found["problems"][0] and found["unknown"] == []


@pytest.mark.parametrize("name", ["dgx01\nNodeName=evil", "dgx01 ", "", "dgx01\x00"])
def test_a_slurm_node_name_with_a_newline_matches_no_kept_node(name):
    found = kept(CONF, hostvars={"dgx01": {"slurm_node_name": name}, "pcie01": {}})
    assert not [node for node in found["nodes"] if node["host"] == "dgx01"]
    assert "dgx01" in found["unknown"] or found["problems"]


def test_a_node_of_the_play_may_not_take_a_kept_nodes_name():
    hostvars = {"dgx01": {}, "new01": {"__slurm_me": {"name": "dgx01"}}, "pcie01": {}}
    found = MEMBERS(list(hostvars), hostvars, read(CONF), read(GRES), ["new01"])
    assert found["problems"] == ["dgx01 and new01 have the same node name dgx01 (slurm_node_name, else the short "
                                 "host name)"]
    # Two hosts outside the play under one name: never two NodeName= lines for it.
    hostvars = {"dgx01": {}, "other": {"slurm_node_name": "dgx01"}, "pcie01": {}}
    assert "dgx01 and other have the same node name dgx01" in kept(CONF, hostvars=hostvars)["problems"][0]


def test_hand_written_node_entries_are_asked_about_before_they_leave():
    """A NodeName= entry the role did not write (a hostlist, another case, a comment) is dropped by the role's
    slurm.conf as well: sinfo is asked about it, never skipped."""
    conf = (CONF + "NodeName=old[01-04] CPUs=8 State=UNKNOWN\nnodename=old05 CPUs=8\n"
            "NodeName=old06 CPUs=8 # spare\nNodeName = old07 CPUs=8\nNodeName=DEFAULT CPUs=8\nNodeName=pcie01\tX=1 #\n")
    hostvars = {"dgx01": {}, "new01": {"__slurm_node": NEW}}
    found = MEMBERS(list(hostvars), hostvars, read(conf), read(GRES), ["new01"])
    assert found["removed"] == ["old05", "pcie01", "old[01-04]", "old06", "old07"]
    assert found["names"] == ["dgx01", "new01"]
