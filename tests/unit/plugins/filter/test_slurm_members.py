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
