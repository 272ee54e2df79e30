"""slurm's slurm.conf, gres.conf and cgroup.conf templates and the patterns its preflight checks values with, rendered
by Ansible's own templating."""

from __future__ import annotations

import base64
import os
import re

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from rolevars import Batch, preflight_task, role_files

from ansible_collections.accelops.gpu.plugins.module_utils import _probe
from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_conf
from simnode import ROOT

ROLE = ROOT / "roles" / "slurm"
H100 = ("NodeName=dgx01 NodeAddr=10.0.0.11 Port=6818 CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 "
        "ThreadsPerCore=2 RealMemory=2063937 Gres=gpu:nvidia_h100_80gb_hbm3:8 State=UNKNOWN")
L40S = ("NodeName=pcie01 CPUs=128 Boards=1 SocketsPerBoard=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=515000 "
        "Gres=gpu:nvidia_l40s:2 State=UNKNOWN")


def render(name, **variables):
    loader = DataLoader()
    values = {}
    for part in ("defaults/main.yml", "vars/main.yml", "vars/Debian.yml"):
        values.update(loader.load_from_file(str(ROLE / part), trusted_as_template=True))
    values.update({
        "ansible_managed": "Ansible managed", "inventory_hostname": "ctl", "inventory_hostname_short": "ctl",
        "groups": {"slurm_controllers": ["ctl"], "gpu_nodes": ["dgx01", "pcie01"]},
        "__slurm_controller": {"name": "ctl", "hostname": "ctl", "address": ""},
        "__slurm_cluster": {"name": "gpucluster", "slurmctld_port": 6817, "partition": "gpu",
                            "partition_default": True, "cgroups": "auto", "job_map_dir": "/run/accelops-gpu/job-map",
                            "site_scripts": {}},
        "__slurm_node_lines": [H100, L40S], "__slurm_node_names": ["dgx01", "pcie01"],
        "__slurm_confine": True, "__slurm_gres_lines": [], "__slurm_gres_types": ["gpu"],
    })
    values.update(variables)
    return str(Templar(loader=loader, variables=values).template(
        trust_as_template((ROLE / "templates" / name).read_text())))


def settings(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_slurm_conf_describes_the_cluster_with_two_kinds_of_node():
    lines = settings(render("slurm.conf.j2"))
    assert "ClusterName=gpucluster" in lines
    assert "SlurmctldHost=ctl" in lines
    assert "SlurmUser=slurm" in lines
    assert "GresTypes=gpu" in lines
    assert "SelectType=select/cons_tres" in lines
    assert lines.index(H100) < lines.index(L40S)
    assert lines[-1] == "PartitionName=gpu Nodes=dgx01,pcie01 Default=YES MaxTime=INFINITE State=UP"
    assert "ProctrackType=proctrack/cgroup" in lines
    assert "TaskPlugin=task/cgroup,task/affinity" in lines
    assert not any(line.startswith("DebugFlags") for line in lines)
    # Every script of the prolog and epilog directories, the job map's among them, at a job's allocation and end.
    assert [line for line in lines if line.startswith(("Prolog", "Epilog"))] == [
        "Prolog=/etc/slurm/prolog.d/*", "Epilog=/etc/slurm/epilog.d/*", "PrologFlags=Alloc"]


def test_slurm_conf_in_a_container_and_for_the_check():
    lines = settings(render("slurm.conf.j2", __slurm_confine=False, __slurm_candidate=True,
                            __slurm_controller={"name": "ctl", "hostname": "ctl", "address": "127.0.0.1"},
                            __slurm_cluster={"name": "gpucluster", "slurmctld_port": 16817, "partition": "gpu",
                                             "partition_default": False, "cgroups": "auto",
                                             "site_scripts": {}}))
    assert "ProctrackType=proctrack/linuxproc" in lines
    assert "TaskPlugin=task/affinity" in lines
    assert "DebugFlags=Gres" in lines
    assert "SlurmctldHost=ctl(127.0.0.1)" in lines
    assert "SlurmctldPort=16817" in lines
    assert lines[-1].endswith("Default=NO MaxTime=INFINITE State=UP")


def test_gres_and_cgroup_conf():
    gres = ["AutoDetect=off", "Name=gpu Type=nvidia_l40s File=/dev/nvidia0 Cores=0-31 Links=-1,0"]
    assert settings(render("gres.conf.j2", __slurm_gres_lines=gres)) == gres
    assert settings(render("cgroup.conf.j2")) == ["CgroupPlugin=autodetect", "ConstrainCores=yes",
                                                  "ConstrainDevices=yes", "ConstrainRAMSpace=yes"]
    assert settings(render("slurmd-options.j2", slurm_node_name="dgx01")) == ['SLURMD_OPTIONS="-N dgx01"']


PATTERNS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())


@pytest.mark.parametrize("name, good, bad", [
    ("__slurm_cluster_pattern", ["gpucluster", "ml-prod_2"], ["GPU", "a\nb", "a b", "x" * 41, "", "a\x00"]),
    ("__slurm_name_pattern", ["dgx01", "node-1.rack2", "gpu_a"], ["", "-x", "a b", "a\n", "a,b", "a=b", "n" * 65]),
])
def test_name_patterns_accept_slurm_names_only(name, good, bad):
    pattern = re.compile(PATTERNS[name])
    assert all(pattern.search(value) for value in good)
    assert not any(pattern.search(value) for value in bad)


def test_preflight_checks_every_value_written_into_slurm_conf():
    task = preflight_task("slurm", "Check the values written into slurm.conf")
    checked = {item["name"] for item in task["loop"]}
    assert checked == {"slurm_cluster_name", "slurm_partition_name", "slurm_node_name", "slurm_node_address",
                       "slurm_slurmd_port", "slurm_slurmctld_port"}
    address = next(item for item in task["loop"] if item["name"] == "slurm_node_address")["pattern"]
    assert re.search(address, "") and re.search(address, "10.0.0.1") and re.search(address, "fd00::1")
    assert not re.search(address, "a\nb") and not re.search(address, "a b")


def munge_key_ok(key):
    """The preflight's munge key check, rendered as the role renders it."""
    task = preflight_task("slurm", "Check the munge key")
    variables = {"slurm_munge_key": key}
    variables.update({name: trust_as_template(value) for name, value in task["vars"].items()})
    templar = Templar(loader=DataLoader(), variables=variables)
    tests = task["ansible.builtin.assert"]["that"]
    return all(templar.template(trust_as_template("{{ %s }}" % test)) for test in tests)


@pytest.mark.parametrize("key, ok", [
    ("", True),
    (base64.b64encode(bytes(range(32))).decode(), True),
    # Bytes that are valid UTF-8 (two bytes per character) still count as 32 bytes.
    (base64.b64encode(b"\xc3\xa9" * 16).decode(), True),
    (base64.b64encode(b"k" * 1024).decode() + "\n", True),
    (base64.b64encode(b"k" * 31).decode(), False),
    (base64.b64encode(b"k" * 33).decode()[:-1], False),
    ("not base64 at all, not base64 at all, not base64!", False),
    ("a" * 43 + "\x00", False),
])
def test_munge_key_check(key, ok):
    assert munge_key_ok(key) is ok


POLICY_KNOWN = """\
munge:
  Installed: (none)
  Candidate: 0.5.15-2
  Version table:
     0.5.15-2 500
slurmctld:
  Installed: (none)
  Candidate: 22.05.8-4+deb12u3
slurm-client:
  Installed: 22.05.8-4+deb12u3
  Candidate: 22.05.8-4+deb12u3
"""


@pytest.mark.parametrize("stdout, valid, in_place", [
    (POLICY_KNOWN, 3600, False),
    # A fresh image's lists without Debian's archive: apt knows none of them, or one only without a candidate.
    ("", 0, False),
    (POLICY_KNOWN.replace("Candidate: 0.5.15-2", "Candidate: (none)"), 0, False),
    (POLICY_KNOWN.replace("slurm-client:\n  Installed: 22.05.8-4+deb12u3\n  Candidate: 22.05.8-4+deb12u3\n", ""),
     0, False),
    # Every package installed: the lists are not read at all (the task is skipped).
    (POLICY_KNOWN.replace("Installed: (none)", "Installed: 1.0-1"), 3600, True),
])
def test_package_lists_are_read_again_when_apt_lacks_a_package(stdout, valid, in_place):
    """Lists younger than an hour are kept only while apt has a candidate for every package the host needs (as the
    preflight's node_probe read apt-cache policy), and not read at all while every package is installed."""
    loader = DataLoader()
    tasks = yaml.safe_load((ROLE / "tasks" / "install.yml").read_text())
    task = next(task for task in tasks if task["name"] == "Read the distribution's package lists")
    values = {}
    for part in ("defaults/main.yml", "vars/main.yml", "vars/Debian.yml"):
        values.update(loader.load_from_file(str(ROLE / part), trusted_as_template=True))
    names = ["munge", "slurmctld", "slurm-client"]
    values.update({"inventory_hostname": "ctl", "groups": {"slurm_controllers": ["ctl"], "gpu_nodes": ["dgx01"]},
                   "__slurm_state": {"candidates": _probe.parse_apt_policy(stdout, names)}})
    templar = Templar(loader=loader, variables=values)
    wanted = templar.template(trust_as_template("{{ __slurm_packages_wanted }}"))
    assert wanted == names
    assert int(templar.template(trust_as_template(task["ansible.builtin.apt"]["cache_valid_time"]))) == valid
    assert templar.template(trust_as_template("{{ __slurm_packages_in_place }}")) is in_place
    skipped = not all(templar.template(trust_as_template("{{ %s }}" % condition)) for condition in task["when"])
    assert skipped is in_place


@pytest.mark.parametrize("root, ok", [
    (None, True), ("/proc", True), ("/etc/accelops-sim/proc", True), ("/srv/node-1.sim/proc/", True),
    ("proc", False), ("", False), ("/", False), ("/proc\n", False), ("/pr\x00oc", False), ("/proc ", False),
    ("/my proc", False), ("/a/../../etc", False), ("/a/./b", False), ("/..", False), (7, False), (["/proc"], False),
    ("{{ lookup('pipe', 'id') }}", False),
])
def test_procfs_root_check(root, ok):
    task = preflight_task("slurm", "Check where the driver's MIG capabilities are read")
    variables = {} if root is None else {"accelops_gpu_procfs_root": root}
    templar = Templar(loader=DataLoader(), variables=variables)
    that = task["ansible.builtin.assert"]["that"]
    assert templar.template(trust_as_template("{{ %s }}" % that)) is ok


def test_slurmd_dropin_asserts_slurm_conf():
    assert settings(render("slurmd-dropin.conf.j2")) == ["[Unit]", "AssertPathExists=/etc/slurm/slurm.conf"]


CONF_DIR_CHECK = preflight_task("slurm", "Check the configuration directory of this distribution")
CONF_DIR_TEMPLATES = [("that", "{{ %s }}" % CONF_DIR_CHECK["ansible.builtin.assert"]["that"]),
                      ("msg", CONF_DIR_CHECK["ansible.builtin.assert"]["fail_msg"])]
CONF_DIR_BATCH = Batch()
CONF_DIRS = [
    ("/etc/slurm", True), ("/etc/slurm-llnl", True),
    ("etc/slurm", False), ("/etc/slurm\nExecStartPre=/bin/sh", False), ("/etc/sl\x00urm", False),
    ("/etc/slurm ", False), ("/etc/../tmp", False), ("", False),
]


@pytest.mark.parametrize("conf_dir, ok, key", [
    (conf_dir, ok, CONF_DIR_BATCH.add([], {"__slurm_conf_dir": conf_dir}, CONF_DIR_TEMPLATES))
    for conf_dir, ok in CONF_DIRS
])
def test_conf_dir_check(conf_dir, ok, key):
    result = CONF_DIR_BATCH[key]
    assert result["that"] is ok
    if not ok:
        assert result["msg"].startswith("__slurm_conf_dir: ") and result["msg"].endswith("Nothing was changed.")


def role_value(expression, host, groups):
    loader = DataLoader()
    values = {}
    for part in ("defaults/main.yml", "vars/main.yml", "vars/Debian.yml"):
        values.update(loader.load_from_file(str(ROLE / part), trusted_as_template=True))
    values.update({"inventory_hostname": host, "groups": groups, "ansible_facts": {"service_mgr": "systemd"}})
    return Templar(loader=loader, variables=values).template(trust_as_template(expression))


DROPIN = ["/etc/systemd/system/slurmd.service.d", "/etc/systemd/system/slurmd.service.d/accelops-gpu.conf"]


@pytest.mark.parametrize("host, dirs, node_files", [
    ("ctl", ["/etc/slurm", "/var/log/slurm", "/var/lib/slurm/slurmctld"], []),
    ("dgx01", ["/etc/slurm", "/var/log/slurm", "/var/lib/slurm/slurmd", "/var/lib/accelops-gpu/slurm-candidate"],
     [*DROPIN, "/etc/slurm/gres.conf", "/etc/default/slurmd"]),
    ("both", ["/etc/slurm", "/var/log/slurm", "/var/lib/slurm/slurmctld", "/var/lib/slurm/slurmd",
              "/var/lib/accelops-gpu/slurm-candidate"], [*DROPIN, "/etc/slurm/gres.conf", "/etc/default/slurmd"]),
])
def test_each_file_is_declared_once(host, dirs, node_files):
    """The directories and files that node_files compares in one call (tasks/configure.yml): a controller's and a
    node's own, each path once, the directories before the files in them, and each file in the group of what its
    change needs (slurmd's drop-in a daemon-reload, slurm.conf and cgroup.conf both daemons' restart, gres.conf and
    slurmd's options slurmd's)."""
    groups = {"slurm_controllers": ["ctl", "both"], "gpu_nodes": ["dgx01", "both"]}
    entries = role_value("{{ __slurm_dirs + __slurm_dropin_files + __slurm_cluster_files + __slurm_node_files "
                         "+ __slurm_script_files }}", host, groups)
    paths = [entry["dest"] for entry in entries]
    assert len(set(paths)) == len(paths)
    assert paths[:len(dirs)] == dirs and all(entry.get("directory") for entry in entries[:len(dirs)])
    rest = paths[len(dirs):]
    assert [path for path in rest if path in DROPIN] == node_files[:2 if node_files else 0]
    scripts = ["/etc/slurm/prolog.d", "/etc/slurm/epilog.d", "/etc/slurm/prolog.d/50-accelops-gpu-job-map",
               "/etc/slurm/epilog.d/50-accelops-gpu-job-map"] if node_files else []
    others = ["/etc/slurm/slurm.conf", "/etc/slurm/cgroup.conf", *node_files[2:], *scripts]
    assert [path for path in rest if path not in DROPIN] == others
    slurm_owned = {entry["dest"] for entry in entries if entry.get("owner") == "slurm"}
    assert slurm_owned == {"/var/log/slurm", "/var/lib/slurm/slurmctld"} & set(dirs)
    candidates = role_value("{{ __slurm_candidate_files | map(attribute='dest') | list }}", host, groups)
    assert all(path.startswith("/var/lib/accelops-gpu/slurm-candidate/") for path in candidates)


PATHS_BATCH = Batch()
PATHS_CASES = [("ctl", False), ("dgx01", False), ("dgx01", True), ("ctl", True)]


@pytest.mark.parametrize("host, accounting, key", [
    (host, accounting, PATHS_BATCH.add(role_files("slurm"), {
        "inventory_hostname": host, "groups": {"slurm_controllers": ["ctl"], "gpu_nodes": ["dgx01"]},
        "ansible_facts": {"service_mgr": "systemd"},
        "hostvars": {"ctl": {"__slurm_me": {"cluster": {"accounting": accounting},
                                            "dbd": {"address": "ctl", "port": 6819}}}}},
        [("paths", "{{ __slurm_conf_paths }}")]))
    for host, accounting in PATHS_CASES
])
def test_the_probes_paths_render_on_every_host(host, accounting, key):
    """The preflight's read of the role's files (__slurm_conf_paths) on a controller and a GPU node, with accounting
    and without: a host that is not slurmdbd's has no slurmdbd file, and its paths are still a list."""
    paths = PATHS_BATCH[key]["paths"]
    assert isinstance(paths, list), paths
    assert "/etc/slurm/slurm.conf" in paths
    assert ("/etc/slurm/slurmdbd.conf" in paths) is (accounting and host == "ctl")
    assert ("/etc/slurm/prolog.d/50-accelops-gpu-job-map" in paths) is (host == "dgx01")


# --------------------------------------------------------------------------- GPUs shared: shards and MPS


def test_slurm_conf_names_the_shared_gres_types():
    lines = settings(render("slurm.conf.j2", __slurm_gres_types=["gpu", "shard", "mps"]))
    assert "GresTypes=gpu,shard,mps" in lines


GRES_TYPES_BATCH = Batch()
GRES_TYPE_LINES = {"gpu": "AutoDetect=nvml", "shard": "Name=shard Count=4 File=/dev/nvidia0",
                   "mps": "Name=mps Count=100 File=/dev/nvidia0"}


def gres_types_case(names):
    nodes = ["dgx01", "pcie01"]
    hostvars = {node: {"__slurm_node": {"name": node, "line": "NodeName=" + node,
                                        "gres_conf": [GRES_TYPE_LINES[name] for name in node_names]}}
                for node, node_names in zip(nodes, names)}
    hostvars["ctl"] = {"__slurm_state": {"files": {}}}
    return GRES_TYPES_BATCH.add(role_files("slurm"), {
        "inventory_hostname": "ctl", "groups": {"slurm_controllers": ["ctl"], "gpu_nodes": nodes},
        "hostvars": hostvars, "ansible_play_hosts_all": ["ctl", *nodes]},
        [("types", "{{ __slurm_members.gres_types }}")])


@pytest.mark.parametrize("types, key", [
    (types, gres_types_case(names)) for names, types in [
        ((["gpu"], ["gpu"]), ["gpu"]), ((["gpu", "shard"], ["gpu"]), ["gpu", "shard"]),
        ((["gpu", "mps"], ["gpu", "shard"]), ["gpu", "shard", "mps"]), (([], []), ["gpu"])]
])
def test_gres_types_are_those_of_every_node(types, key):
    """GresTypes (slurm.conf, the same on every host) holds shard and mps where any node has them, in that order:
    from each node's gres.conf lines, those of the play's nodes and those the controller keeps for the others."""
    task = next(task for task in yaml.safe_load((ROLE / "tasks" / "configure.yml").read_text())
                if task["name"] == "Write the configuration")
    assert task["vars"]["__slurm_gres_types"] == "{{ __slurm_members.gres_types }}"
    assert GRES_TYPES_BATCH[key]["types"] == types


SHARDS_CHECK = preflight_task("slurm", "Check the shard count")
SHARDS_TEMPLATES = [("that", "{{ %s }}" % SHARDS_CHECK["ansible.builtin.assert"]["that"]),
                    ("msg", SHARDS_CHECK["ansible.builtin.assert"]["fail_msg"])]
SHARDS_BATCH = Batch()
SHARDS = [(0, True), (1, True), (4, True), (128, True), ("8", True),
          (-1, False), (129, False), (1000000, False), (2.5, False), (4.0, False), ("four", False), (True, False),
          (None, False), ("4\n", False), (" 4", False), ("", False), ([4], False), ("0x10", False)]


@pytest.mark.parametrize("shards, ok, key", [
    (shards, ok, SHARDS_BATCH.add(role_files("slurm"), {"slurm_shards_per_gpu": shards}, SHARDS_TEMPLATES))
    for shards, ok in SHARDS
])
def test_shard_count_check(shards, ok, key):
    """0 is off; a whole number up to 128 is a count; anything else one error that names the variable and what it
    may be, before anything changes (the preflight)."""
    result = SHARDS_BATCH[key]
    assert result["that"] is ok
    assert result["msg"].startswith("slurm_shards_per_gpu must be a whole number of shards per GPU from 0 (none) to "
                                    "128 (each job on a shard holds a CUDA context of its own")
    assert result["msg"].endswith(". Nothing was changed.") and "\n" not in result["msg"]


def test_shard_limit_is_the_filters():
    """The preflight refuses what slurm_node_gres would refuse, no more and no less."""
    assert PATTERNS["__slurm_shards_max"] == _slurm_conf.SHARDS_MAX


MPS_CHECK = preflight_task("slurm", "Check that the MPS control daemon is on the node")
PROBE = preflight_task("slurm", "Read Slurm's packages, munge key, configuration, daemons and the hardware slurmd sees")
MPS_BATCH = Batch()
MPS_TEMPLATES = [("when", "{{ %s }}" % MPS_CHECK["when"]),
                 ("that", "{{ %s }}" % MPS_CHECK["ansible.builtin.assert"]["that"]),
                 ("msg", MPS_CHECK["ansible.builtin.assert"]["fail_msg"]),
                 ("probed", "{{ '/usr/bin/nvidia-cuda-mps-control' in (%s) }}"
                  % PROBE["accelops.gpu.node_probe"]["files"][3:-3])]
CONTROL = "/usr/bin/nvidia-cuda-mps-control"
MPS = [
    # host, slurm_mps, the probe's read of the daemon: the check runs, passes
    ("dgx01", True, {"exists": False}, True, False),
    ("dgx01", True, {"exists": True, "type": "file", "mode": "0755"}, True, True),
    ("dgx01", "yes", None, True, False),
    ("dgx01", False, None, False, None),
    ("ctl", True, None, False, None),
]


@pytest.mark.parametrize("runs, passes, key", [
    (runs, passes, MPS_BATCH.add(role_files("slurm"), {
        "slurm_mps": mps, "inventory_hostname": host, "inventory_hostname_short": host,
        "groups": {"slurm_controllers": ["ctl"], "gpu_nodes": ["dgx01"]}, "__slurm_conf_paths": [],
        "__slurm_state": {"files": {CONTROL: read} if read else {}}}, MPS_TEMPLATES))
    for host, mps, read, runs, passes in MPS
])
def test_mps_without_its_control_daemon_is_refused(runs, passes, key):
    """gres/mps is asked of a GPU node only; the preflight's one read looks for the daemon there, and a node without
    it gets one error naming the variable, the node and the daemon, before anything changes."""
    result = MPS_BATCH[key]
    assert result["when"] is runs
    assert result["probed"] is runs
    if runs:
        assert result["that"] is passes
        assert result["msg"].startswith("slurm_mps is true, but dgx01 has no MPS control daemon "
                                        "(/usr/bin/nvidia-cuda-mps-control, ")
        assert result["msg"].endswith("Install it, or set slurm_mps to false for this host. Nothing was changed.")


# --------------------------------------------------------------------------- The site's own script settings

SITE = {"TaskProlog": "/usr/local/sbin/task-prolog", "HealthCheckProgram": "/usr/sbin/nhc",
        "HealthCheckInterval": "300", "EpilogSlurmctld": "/usr/local/sbin/ctld-epilog",
        "HealthCheckNodeState": "IDLE,CYCLE"}
ROLE_SCRIPTS = {"Prolog": "/etc/slurm/prolog.d/*", "Epilog": "/etc/slurm/epilog.d/*", "PrologFlags": "Alloc"}


def cluster(site):
    return {"name": "gpucluster", "slurmctld_port": 6817, "partition": "gpu", "partition_default": True,
            "cgroups": "auto", "job_map_dir": "/run/accelops-gpu/job-map", "site_scripts": site}


def test_slurm_conf_writes_the_sites_scripts_sorted_after_the_roles():
    text = render("slurm.conf.j2", __slurm_cluster=cluster(SITE))
    lines = settings(text)
    after = lines[lines.index("PrologFlags=Alloc") + 1:]
    assert after[:5] == ["EpilogSlurmctld=/usr/local/sbin/ctld-epilog", "HealthCheckInterval=300",
                         "HealthCheckNodeState=IDLE,CYCLE", "HealthCheckProgram=/usr/sbin/nhc",
                         "TaskProlog=/usr/local/sbin/task-prolog"]
    assert after[5].startswith("GresTypes=")
    # The mark line, once, just before them: the role wrote this file.
    raw = text.splitlines()
    assert raw.count(_slurm_conf.SITE_MARK) == 1
    assert raw[raw.index(_slurm_conf.SITE_MARK) - 1] == "PrologFlags=Alloc"


def test_slurm_conf_has_no_site_setting_without_slurm_site_scripts():
    text = render("slurm.conf.j2")
    assert not [line for line in settings(text) if line.startswith(_slurm_conf.SITE_SCRIPT_KEYS)]
    assert _slurm_conf.SITE_MARK in text.splitlines()
    assert settings(text) == settings(render("slurm.conf.j2", __slurm_cluster=cluster({})))


def test_the_roles_slurm_conf_passes_its_own_check_and_a_changed_site_rewrites_it():
    """What the role wrote passes the preflight's check with the same settings, and with changed or removed ones (the
    mark line says the role wrote them); the same file without its mark, as a site would copy it, is refused for a
    setting slurm_site_scripts no longer gives."""
    text = render("slurm.conf.j2", __slurm_cluster=cluster(SITE))
    assert _slurm_conf.foreign_scripts(text, {**ROLE_SCRIPTS, **SITE}) == []
    assert _slurm_conf.foreign_scripts(text, ROLE_SCRIPTS) == []
    assert _slurm_conf.foreign_scripts(text, {**ROLE_SCRIPTS, **SITE, "TaskProlog": "/opt/other"}) == []
    copied = "\n".join(line for line in text.splitlines() if line != _slurm_conf.SITE_MARK)
    less = {key: value for key, value in SITE.items() if key != "TaskProlog"}
    assert _slurm_conf.foreign_scripts(copied, {**ROLE_SCRIPTS, **SITE}) == []
    assert _slurm_conf.foreign_scripts(copied, {**ROLE_SCRIPTS, **less}) == ["TaskProlog=/usr/local/sbin/task-prolog"]


def test_the_templates_mark_is_the_one_the_check_knows():
    assert _slurm_conf.SITE_MARK in (ROLE / "templates" / "slurm.conf.j2").read_text().splitlines()


def test_every_host_writes_the_controllers_site_scripts():
    """slurm.conf is the same file on every host: the controller and a node given other site settings of its own
    render it the same, from the controller's published settings."""
    controller = render("slurm.conf.j2", __slurm_cluster=cluster(SITE))
    node = render("slurm.conf.j2", __slurm_cluster=cluster(SITE), inventory_hostname="dgx01",
                  inventory_hostname_short="dgx01", slurm_site_scripts={"TaskProlog": "/node/own"})
    assert controller == node
    task = next(task for task in yaml.safe_load((ROLE / "tasks" / "configure.yml").read_text())
                if task["name"] == "Write the configuration")
    assert task["vars"]["__slurm_cluster"] == "{{ __slurm_controller.cluster }}"
    assert task["vars"]["__slurm_controller"] == "{{ hostvars[__slurm_controllers[0]].__slurm_me }}"


SITE_CHECK = preflight_task("slurm", "Check the site's scripts")
PUBLISH = preflight_task("slurm", "Publish this host's name, address and port")
FOREIGN_CHECK = preflight_task("slurm", "Check that slurm.conf runs no script that the role's slurm.conf would drop")
SITE_BATCH = Batch()
SITE_TEMPLATES = [("that", "{{ %s }}" % SITE_CHECK["ansible.builtin.assert"]["that"]),
                  ("msg", SITE_CHECK["ansible.builtin.assert"]["fail_msg"]),
                  ("published", PUBLISH["ansible.builtin.set_fact"]["__slurm_me"]["cluster"]["site_scripts"])]
SITE_CASES = [
    ({}, True, {}),
    ({"taskprolog": "/usr/local/sbin/task-prolog", "HealthCheckProgram": "/usr/sbin/nhc", "HealthCheckInterval": 300,
      "healthchecknodestate": "idle,cycle"}, True,
     {"TaskProlog": "/usr/local/sbin/task-prolog", "HealthCheckProgram": "/usr/sbin/nhc", "HealthCheckInterval": "300",
      "HealthCheckNodeState": "IDLE,CYCLE"}),
    # What would break slurm.conf, or take the role's settings: refused before anything is rendered.
    ({"TaskProlog": "/x\nProlog=/tmp/evil"}, False, None),
    ({"TaskProlog": "/x\x00"}, False, None),
    ({"TaskProlog": "/x # y"}, False, None),
    ({"TaskProlog": '/x"y'}, False, None),
    ({"TaskProlog": "/x\\"}, False, None),
    ({"TaskProlog": "relative"}, False, None),
    ({"TaskProlog": "/" + "x" * 100000}, False, None),
    ({"TaskProlog": "{{ lookup('pipe', 'id') }}"}, False, None),
    ({"Prolog": "/tmp/evil"}, False, None),
    ({"SlurmctldHost": "evil"}, False, None),
    ({"HealthCheckProgram": "/usr/sbin/nhc"}, False, None),
    ({"HealthCheckProgram": "/usr/sbin/nhc", "HealthCheckInterval": True}, False, None),
    ({"HealthCheckProgram": "/usr/sbin/nhc", "HealthCheckInterval": 2 ** 64}, False, None),
    ({"HealthCheckProgram": "/usr/sbin/nhc", "HealthCheckInterval": 60, "HealthCheckNodeState": "IDLE\nX=1"},
     False, None),
    (["TaskProlog"], False, None),
    ({"TaskProlog": ["/x"]}, False, None),
]


@pytest.mark.parametrize("value, ok, published, key", [
    (value, ok, published,
     SITE_BATCH.add(role_files("slurm"), {"slurm_site_scripts": value}, SITE_TEMPLATES, SITE_CHECK["vars"]))
    for value, ok, published in SITE_CASES
])
def test_the_sites_scripts_are_checked_before_anything_is_written(value, ok, published, key):
    """The preflight's check, through Ansible's own templating and the collection's filter: one message naming each
    problem, and what the host publishes for slurm.conf where it passes."""
    result = SITE_BATCH[key]
    assert result["that"] is ok
    if ok:
        assert result["published"] == published
    else:
        assert result["msg"].startswith("slurm_site_scripts") and result["msg"].endswith(". Nothing was changed.")
        assert len(result["msg"]) < 2000 and "\n" not in result["msg"] and "\x00" not in result["msg"]
        assert "Ansible" not in result["msg"]  # a list is a list, not Ansible's lazy type


def test_the_sites_check_runs_before_anything_is_read_or_published():
    names = [task["name"] for task in yaml.safe_load((ROLE / "tasks" / "preflight.yml").read_text())]
    check = names.index("Check the site's scripts")
    assert check < names.index("Publish this host's name, address and port")
    assert check < names.index("Read Slurm's packages, munge key, configuration, daemons and the hardware slurmd sees")


FOREIGN_BATCH = Batch()
FOREIGN_TEMPLATES = [("that", "{{ %s }}" % FOREIGN_CHECK["ansible.builtin.assert"]["that"]),
                     ("msg", FOREIGN_CHECK["ansible.builtin.assert"]["fail_msg"]),
                     ("wanted", "{{ __slurm_wanted_scripts }}")]
HAND_WRITTEN = ("ClusterName=gpu\nProlog=/etc/slurm/prolog.d/*\nEpilog=/etc/slurm/epilog.d/*\nPrologFlags=Alloc\n"
                "TaskProlog=/usr/local/sbin/task-prolog\n")


def foreign_case(conf, controller_site, own_site=None):
    read = {"exists": True, "type": "file", "content": base64.b64encode(conf.encode()).decode()}
    return FOREIGN_BATCH.add(role_files("slurm"), {
        "inventory_hostname": "dgx01", "inventory_hostname_short": "dgx01",
        "groups": {"slurm_controllers": ["ctl"], "gpu_nodes": ["dgx01"]},
        "slurm_site_scripts": own_site or {},
        "hostvars": {"ctl": {"__slurm_me": {"cluster": {"site_scripts": controller_site}}}},
        "__slurm_state": {"files": {"/etc/slurm/slurm.conf": read}}}, FOREIGN_TEMPLATES, FOREIGN_CHECK["vars"])


FOREIGN_CASES = [
    # The controller's slurm_site_scripts gives the hand-written file's TaskProlog: kept, the file may be rewritten.
    ("kept", foreign_case(HAND_WRITTEN, {"TaskProlog": "/usr/local/sbin/task-prolog"})),
    # Not given, or given otherwise (this node's own value aside: the controller's holds): refused.
    ("missing", foreign_case(HAND_WRITTEN, {})),
    ("other", foreign_case(HAND_WRITTEN, {"TaskProlog": "/opt/other"}, {"TaskProlog": "/usr/local/sbin/task-prolog"})),
    # The role's own file, with the mark: rewritten for a removed site setting.
    ("marked", foreign_case(HAND_WRITTEN + _slurm_conf.SITE_MARK + "\n", {})),
]


@pytest.mark.parametrize("case, key", FOREIGN_CASES, ids=[case for case, _key in FOREIGN_CASES])
def test_a_hand_written_site_script_is_kept_through_slurm_site_scripts_or_refused(case, key):
    result = FOREIGN_BATCH[key]
    assert result["that"] is (case in ("kept", "marked"))
    if case == "kept":
        assert result["wanted"] == {**ROLE_SCRIPTS, "TaskProlog": "/usr/local/sbin/task-prolog"}
    if case in ("missing", "other"):
        msg = result["msg"]
        assert msg.startswith("/etc/slurm/slurm.conf on dgx01 has TaskProlog=/usr/local/sbin/task-prolog; ")
        assert "into slurm_site_scripts" in msg and "TaskProlog" in msg.split("put each other setting", 1)[1]
        assert msg.endswith("Nothing was changed.")
        if case == "other":
            assert "TaskProlog=/opt/other in its place" in msg


# --------------------------------------------------------------------------- The job map's prolog and epilog

JOB_MAP_CHECK = preflight_task("slurm", "Check the job map's directory")


@pytest.mark.parametrize("directory, ok", [
    ("", True), ("/run/accelops-gpu/job-map", True), ("/var/run/slurm-gpu.map", True),
    ("/run", False), ("/", False), ("run/map", False), ("/run/map/", False), ("/run/../etc", False),
    ("/run/./map", False), ("/run/map\n", False), ("/run/my map", False), ("/run/$(id)", False),
    ("/run/ma'p", False), ("/run/m\x00ap", False),
    # System directories, where files named 0, 1, ... holding job ids break what reads them (sudo, cron, ldconfig).
    ("/etc/sudoers.d", False), ("/etc/cron.d", False), ("/usr/local/map", False), ("/lib64/map", False),
    ("/root/map", False), ("/proc/map", False), ("/var/lib/accelops-gpu/job-map", True), ("/etc2/map", True),
])
def test_job_map_dir_check(directory, ok):
    templar = Templar(loader=DataLoader(), variables={"slurm_job_map_dir": directory})
    that = JOB_MAP_CHECK["ansible.builtin.assert"]["that"]
    assert templar.template(trust_as_template("{{ %s }}" % that)) is ok


@pytest.fixture
def job_map_script(tmp_path):
    """The prolog and epilog as rendered for a job map in tmp_path/map, and a way to run it as slurmd would."""
    import subprocess

    script = tmp_path / "job-map.sh"
    directory = tmp_path / "map"

    def rendered(where):
        cluster = {"name": "gpucluster", "slurmctld_port": 6817, "partition": "gpu", "partition_default": True,
                   "cgroups": "auto", "job_map_dir": where}
        script.write_text(render("accelops-gpu-job-map.sh.j2", __slurm_cluster=cluster))
        script.chmod(0o755)

    def run(context, job, gpus=None, cuda=None):
        env = {"SLURM_SCRIPT_CONTEXT": context, "SLURM_JOB_ID": job}
        if gpus is not None:
            env["SLURM_JOB_GPUS"] = gpus
        if cuda is not None:
            env["CUDA_VISIBLE_DEVICES"] = cuda
        done = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr  # never a failed job or a drained node
        return done.stderr

    def files():
        if not directory.exists():
            return None
        return {path.name: path.read_text() for path in sorted(directory.iterdir())
                if not path.name.startswith(".")}

    rendered(str(directory))
    return rendered, run, files, directory


def test_the_prolog_writes_and_the_epilog_removes_each_jobs_gpus(job_map_script):
    from ansible_collections.accelops.gpu.plugins.module_utils import _job_map

    _rendered, run, files, directory = job_map_script
    run("prolog_slurmd", "101", gpus="0,3")
    run("prolog_slurmd", "102", cuda="3")  # a job of shards: CUDA_VISIBLE_DEVICES alone
    run("prolog_slurmd", "102", cuda="3")  # twice is once
    assert files() == {"0": "101\n", "3": "101\n102\n"}
    # What the exporter reads from it.
    assert _job_map.read(str(directory)).jobs == {"0": ["101"], "3": ["101", "102"]}
    assert oct(directory.stat().st_mode & 0o777) == "0o755"
    run("epilog_slurmd", "101", gpus="0,3")
    assert files() == {"3": "102\n"}
    run("epilog_slurmd", "102", cuda="3")
    assert files() == {}
    assert not [path.name for path in directory.iterdir() if path.name.endswith(".tmp")]


@pytest.mark.parametrize("context, job, gpus", [
    ("prolog_task", "101", "0"), ("", "101", "0"), ("prolog_slurmd", "", "0"), ("prolog_slurmd", "1;rm", "0"),
    ("prolog_slurmd", "101", ""), ("prolog_slurmd", "101", None),
])
def test_what_is_not_a_jobs_gpus_changes_nothing(job_map_script, context, job, gpus):
    _rendered, run, files, _directory = job_map_script
    run(context, job, gpus=gpus)
    assert files() is None


def test_odd_gpu_names_are_skipped_and_links_left_alone(job_map_script, tmp_path):
    _rendered, run, files, directory = job_map_script
    directory.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (directory / "1").symlink_to(victim)
    stderr = run("prolog_slurmd", "7", gpus="0,../x,1,-2,2x")
    assert "is not a regular file; left alone" in stderr
    assert victim.read_text() == "keep\n"
    assert files() == {"0": "7\n", "1": "keep\n"}
    assert not (tmp_path / "x").exists()


def test_an_empty_directory_is_no_job_map(job_map_script, tmp_path):
    rendered, run, _files, _directory = job_map_script
    rendered("")
    run("prolog_slurmd", "7", gpus="0")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["job-map.sh"]


def test_a_directory_that_cannot_be_made_is_said_not_failed(job_map_script, tmp_path):
    rendered, run, _files, _directory = job_map_script
    (tmp_path / "file").write_text("")
    rendered(str(tmp_path / "file" / "map"))
    assert "cannot use" in run("prolog_slurmd", "7", gpus="0")


def test_the_script_quotes_its_directory():
    assert "dir=/run/accelops-gpu/job-map\n" in render("accelops-gpu-job-map.sh.j2")


def test_a_glob_among_the_gpus_is_no_file_name(job_map_script, tmp_path, monkeypatch):
    _rendered, run, files, _directory = job_map_script
    monkeypatch.chdir(tmp_path)
    (tmp_path / "5").write_text("")
    run("prolog_slurmd", "9", gpus="*,[0-9],1")
    assert files() == {"1": "9\n"}


@pytest.mark.parametrize("plant", ["link", "fifo"])
def test_a_planted_lock_file_neither_creates_a_file_nor_blocks(job_map_script, tmp_path, plant):
    """The writers lock the directory itself: no name in it is opened for the lock."""
    _rendered, run, files, directory = job_map_script
    directory.mkdir()
    if plant == "link":
        (directory / ".lock").symlink_to(tmp_path / "created")
    else:
        os.mkfifo(directory / ".lock")
    run("prolog_slurmd", "9", gpus="0")
    assert files() == {"0": "9\n"}
    assert not (tmp_path / "created").exists()


@pytest.mark.parametrize("plant", ["link", "fifo", "full"])
def test_a_planted_temporary_file_clobbers_nothing_and_blocks_nothing(job_map_script, tmp_path, plant):
    """A link at the temporary name is never written through; a FIFO there never blocks; a write that fails (as on
    a full /run: a link to /dev/full) is never written through either."""
    _rendered, run, files, directory = job_map_script
    directory.mkdir()
    (directory / "0").write_text("5\n6\n")
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    temporary = directory / ".0.9.tmp"
    if plant == "link":
        temporary.symlink_to(victim)
    elif plant == "fifo":
        os.mkfifo(temporary)
    else:
        temporary.symlink_to("/dev/full")
    run("prolog_slurmd", "9", gpus="0")
    assert victim.read_text() == "keep\n"
    assert files() == {"0": "5\n6\n9\n"}
    assert not (directory / "0").is_symlink()


def test_a_failed_write_keeps_the_other_jobs_lines(job_map_script):
    _rendered, run, files, directory = job_map_script
    directory.mkdir()
    (directory / "0").write_text("5\n6\n")
    for job in (9, 6):
        (directory / (".0.%d.tmp" % job)).mkdir()  # a name that cannot be written or removed as a file
    assert "cannot write" in run("prolog_slurmd", "9", gpus="0")
    assert files() == {"0": "5\n6\n"}
    assert "cannot write" in run("epilog_slurmd", "6", gpus="0")
    assert files() == {"0": "5\n6\n"}


def test_a_line_the_script_did_not_write_is_kept(job_map_script):
    """grep treats a file with a NUL as binary and prints none of its lines: the other lines must survive."""
    _rendered, run, _files, directory = job_map_script
    directory.mkdir()
    (directory / "0").write_bytes(b"5\n\x00\n6\n")
    run("prolog_slurmd", "9", gpus="0")
    assert (directory / "0").read_bytes().split(b"\n")[-3:] == [b"6", b"9", b""]
    assert b"5\n" in (directory / "0").read_bytes()


def test_twenty_prologs_and_epilogs_at_once_lose_no_line(job_map_script):
    import subprocess

    _rendered, run, _files, directory = job_map_script
    run("prolog_slurmd", "1", gpus="0,1")
    script = str(directory.parent / "job-map.sh")

    def start(context, job, gpus):
        env = {"SLURM_SCRIPT_CONTEXT": context, "SLURM_JOB_ID": str(job), "SLURM_JOB_GPUS": gpus}
        return subprocess.Popen([script], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    started = [start("prolog_slurmd", job, "0,1") for job in range(100, 120)]
    started += [start("epilog_slurmd", job, "0,1") for job in range(100, 110)]
    for process in started:
        assert process.wait(timeout=60) == 0
    # The epilogs may have run before their prologs: each job of 100..109 is there or not, the rest are.
    for name in ("0", "1"):
        jobs = (directory / name).read_text().split("\n")[:-1]
        assert len(jobs) == len(set(jobs))
        assert {"1", *map(str, range(110, 120))} <= set(jobs) <= {"1", *map(str, range(100, 120))}


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the directory away")
def test_a_directory_that_another_user_owns_is_not_used(job_map_script):
    """Its owner could plant links and lines there (a directory under /tmp made first by someone else)."""
    _rendered, run, files, directory = job_map_script
    directory.mkdir()
    os.chown(directory, 65534, 65534)
    assert "cannot use" in run("prolog_slurmd", "9", gpus="0")
    assert files() == {}


# --------------------------------------------------------------------------- Configless mode (slurm_configless)


CONFIGLESS_CLUSTER = {"name": "gpucluster", "slurmctld_port": 16817, "partition": "gpu", "partition_default": True,
                      "cgroups": "auto", "site_scripts": {}, "configless": True}


def test_configless_slurm_conf_serves_the_nodes_and_the_controller_holds_gres_conf():
    lines = settings(render("slurm.conf.j2", __slurm_cluster=CONFIGLESS_CLUSTER))
    assert "SlurmctldParameters=enable_configless" in lines
    assert "SlurmctldParameters=enable_configless" not in settings(render("slurm.conf.j2"))
    gres = ["NodeName=dgx01 AutoDetect=nvml", "NodeName=pcie01 AutoDetect=off",
            "NodeName=pcie01 Name=gpu Type=nvidia_l40s File=/dev/nvidia0"]
    assert settings(render("gres-cluster.conf.j2", __slurm_members={"gres_lines": gres})) == gres


def test_configless_slurmd_fetches_from_the_controller_and_starts_only_once_checked():
    configless = {"__slurm_configless": True, "__slurm_is_controller": False, "__slurm_conf_server": "10.0.0.1:6817"}
    assert settings(render("slurmd-options.j2", slurm_node_name="dgx01", **configless)) == [
        'SLURMD_OPTIONS="-N dgx01 --conf-server 10.0.0.1:6817"']
    # The unit's own condition on slurm.conf is reset; the start waits for the checked configuration.
    assert settings(render("slurmd-dropin.conf.j2", **configless)) == [
        "[Unit]", "ConditionPathExists=", "AssertPathExists=/var/lib/accelops-gpu/slurm-candidate/slurm.conf"]
    # A controller that is a GPU node too keeps its slurm.conf.
    controller = {**configless, "__slurm_is_controller": True}
    assert settings(render("slurmd-dropin.conf.j2", **controller)) == [
        "[Unit]", "AssertPathExists=/etc/slurm/slurm.conf"]


CONFIGLESS_BATCH = Batch()


@pytest.mark.parametrize("host, files, key", [
    (host, files, CONFIGLESS_BATCH.add(role_files("slurm"), {
        "inventory_hostname": host, "groups": {"slurm_controllers": ["ctl", "both"], "gpu_nodes": ["dgx01", "both"]},
        "ansible_facts": {"service_mgr": "systemd"},
        "hostvars": {"ctl": {"__slurm_me": {"cluster": {"configless": True}}}}},
        [("files", "{{ (__slurm_cluster_files + __slurm_node_files) | map(attribute='dest') | list }}"),
         ("leftovers", "{{ __slurm_leftover_files }}"), ("after", "{{ __slurm_daemons_after }}")]))
    for host, files in [
        ("ctl", ["/etc/slurm/slurm.conf", "/etc/slurm/cgroup.conf", "/etc/slurm/gres.conf"]),
        ("dgx01", ["/etc/default/slurmd"]),
        ("both", ["/etc/slurm/slurm.conf", "/etc/slurm/cgroup.conf", "/etc/slurm/gres.conf", "/etc/default/slurmd"]),
    ]
])
def test_configless_files_are_the_controllers(host, files, key):
    """Configless: the cluster's files (gres.conf the whole cluster's) on the controller alone; a GPU node has its
    options, removes its own older copies, and starts slurmd after the controller applied its configuration."""
    result = CONFIGLESS_BATCH[key]
    assert result["files"] == files
    node_only = host == "dgx01"
    assert result["leftovers"] == (["/etc/slurm/slurm.conf", "/etc/slurm/gres.conf", "/etc/slurm/cgroup.conf"]
                                   if node_only else [])
    assert result["after"] == (["slurmd"] if node_only else [])


# --------------------------------------------------------------------------- A node that leaves the cluster


LEAVING_CHECK = preflight_task("slurm", "Check that no job runs on a node that leaves the cluster")
LEAVING_TEMPLATES = [("that", "{{ %s }}" % LEAVING_CHECK["ansible.builtin.assert"]["that"]),
                     ("msg", LEAVING_CHECK["ansible.builtin.assert"]["fail_msg"])]
LEAVING_BATCH = Batch()
LEAVING_CONF = base64.b64encode(b"NodeName=dgx01 CPUs=8 Gres=gpu:x:1 State=UNKNOWN\n"
                                b"NodeName=old01 CPUs=8 Gres=gpu:x:1 State=UNKNOWN\n").decode()
LEAVING_READ = {"exists": True, "type": "file", "content": LEAVING_CONF}


def leaving_case(sinfo):
    return LEAVING_BATCH.add(role_files("slurm"), {
        "inventory_hostname": "dgx01", "groups": {"slurm_controllers": ["ctl"], "gpu_nodes": ["dgx01"]},
        "ansible_play_hosts_all": ["ctl", "dgx01"],
        "hostvars": {"ctl": {"__slurm_leaving": sinfo,
                             "__slurm_state": {"files": {"/etc/slurm/slurm.conf": LEAVING_READ}}},
                     "dgx01": {"__slurm_me": {"name": "dgx01"}}}}, LEAVING_TEMPLATES, LEAVING_CHECK["vars"])


@pytest.mark.parametrize("sinfo, ok, said, key", [
    (sinfo, ok, said, leaving_case(sinfo)) for sinfo, ok, said in [
        ({"rc": 0, "stdout_lines": ["old01 idle"]}, True, ""),
        ({"rc": 0, "stdout_lines": ["old01 drained"]}, True, ""),
        ({"rc": 0, "stdout_lines": ["old01 mixed"]}, False,
         "old01 (mixed) would leave the cluster (no longer in the group gpu_nodes) while jobs run"),
        ({"rc": 0, "stdout_lines": ["old01 allocated+"]}, False, "old01 (allocated+) would leave"),
        ({"rc": 0, "stdout_lines": ["old01 draining"]}, False, "old01 (draining) would leave"),
        ({"rc": 0, "stdout_lines": ["old01 completing"]}, False, "old01 (completing) would leave"),
        # sinfo's suffixes: not responding (*), planned (-), powered off (~), ...
        ({"rc": 0, "stdout_lines": ["old01 mixed-"]}, False, "old01 (mixed-) would leave"),
        ({"rc": 0, "stdout_lines": ["old01 allocated*"]}, False, "old01 (allocated*) would leave"),
        ({"rc": 0, "stdout_lines": ["old01 drained*", "old01 idle~", "old01 down*", "old01 planned"]}, True, ""),
        # A state that is not one of a node without jobs counts as busy (failing has jobs; a future state may).
        ({"rc": 0, "stdout_lines": ["old01 failing"]}, False, "old01 (failing) would leave"),
        ({"rc": 0, "stdout_lines": ["old01 reboot_requested"]}, False, "old01 (reboot_requested) would leave"),
        ({"rc": 0, "stdout_lines": ["old01 idle+drain", "old01 idle"]}, False, "old01 (idle+drain) would leave"),
        ({"rc": 0, "stdout_lines": ["old01 maint$"]}, False, "old01 (maint$) would leave"),
        ({"rc": 0, "stdout_lines": ["old01 mixed", "old01 mixed"]}, False, "old01 (mixed) would leave the"),
        # A node that stays (a hand-written hostlist in slurm.conf may name it) never counts.
        ({"rc": 0, "stdout_lines": ["dgx01 allocated", "old01 idle"]}, True, ""),
        ({"rc": 1, "stdout_lines": [], "stderr": "slurm_load_node error: Unable to contact slurm controller"}, False,
         "Slurm could not say whether jobs run on old01, which would leave the cluster (no longer in the group "
         "gpu_nodes): slurm_load_node error: Unable to contact slurm controller"),
        # slurmctld not running: the read was skipped, and no job can be lost.
        ({"skipped": True}, True, ""),
    ]
])
def test_a_node_with_jobs_does_not_leave_the_cluster(sinfo, ok, said, key):
    """The controller's slurm.conf has old01, the group no longer has it: the run that would drop it is refused while
    Slurm says a job runs there, or cannot say."""
    result = LEAVING_BATCH[key]
    assert result["that"] is ok, result
    if not ok:
        assert said in result["msg"] and result["msg"].endswith("Nothing was changed."), result["msg"]
        assert result["msg"].count("old01 (") <= 1 and "\n" not in result["msg"], result["msg"]


LEAVING_READ_TASK = preflight_task("slurm", "Read the nodes that leave the cluster")
LEAVING_READ_BATCH = Batch()


def leaving_read_case(services):
    state = {"files": {"/etc/slurm/slurm.conf": {"exists": True, "type": "file", "content": LEAVING_CONF}},
             "services": services}
    return LEAVING_READ_BATCH.add(role_files("slurm"), {
        "inventory_hostname": "ctl", "groups": {"slurm_controllers": ["ctl"], "gpu_nodes": ["dgx01"]},
        "ansible_play_hosts_all": ["ctl", "dgx01"], "__slurm_state": state,
        "hostvars": {"ctl": {"__slurm_state": state}, "dgx01": {"__slurm_me": {"name": "dgx01"}}}},
        [("when", "{{ (%s) | list | select | list | length == %d }}"
          % (", ".join("(%s)" % condition for condition in LEAVING_READ_TASK["when"]) + ",",
             len(LEAVING_READ_TASK["when"]))),
         ("argv", LEAVING_READ_TASK["ansible.builtin.command"]["argv"][-1])])


@pytest.mark.parametrize("asked, key", [
    (asked, leaving_read_case(services)) for services, asked in [
        ({"slurmctld": {"active_state": "active", "unit_file_state": "enabled"}}, True),
        # Running but not started at boot: its jobs are there all the same.
        ({"slurmctld": {"active_state": "active", "unit_file_state": "disabled"}}, True),
        ({"slurmctld": {"active_state": "reloading", "unit_file_state": "enabled"}}, True),
        ({"slurmctld": {"active_state": "inactive", "unit_file_state": "enabled"}}, False),
        ({"slurmctld": {"active_state": "failed", "unit_file_state": "enabled"}}, False),
        ({}, False), (None, False),
    ]
])
def test_slurm_is_asked_whenever_slurmctld_runs(asked, key):
    result = LEAVING_READ_BATCH[key]
    assert result["when"] is asked, result
    assert result["argv"] == "--nodes=old01"


MEMBERS_CHECK = preflight_task("slurm", "Check that every GPU node outside this play is in the cluster")
MEMBERS_BATCH = Batch()
MEMBERS_CONF = ("SlurmctldParameters=enable_configless\nNodeName=dgx01 CPUs=8 Gres=gpu:x:1 State=UNKNOWN\n"
                "NodeName=pcie01 CPUs=8 Gres=gpu:x:1 State=UNKNOWN\n")
MEMBERS_GRES = "NodeName=dgx01 AutoDetect=nvml\nNodeName=pcie01 AutoDetect=nvml\n"


def members_case(hostvars, play, conf=MEMBERS_CONF):
    files = {"/etc/slurm/slurm.conf": {"exists": True, "type": "file",
                                       "content": base64.b64encode(conf.encode()).decode()},
             "/etc/slurm/gres.conf": {"exists": True, "type": "file",
                                      "content": base64.b64encode(MEMBERS_GRES.encode()).decode()}}
    nodes = [host for host in hostvars if host != "ctl"]
    return MEMBERS_BATCH.add(role_files("slurm"), {
        "inventory_hostname": "ctl", "groups": {"slurm_controllers": ["ctl"], "gpu_nodes": nodes},
        "ansible_play_hosts_all": play,
        "hostvars": {"ctl": {"__slurm_state": {"files": files}, "__slurm_me": {"cluster": {"configless": True}}},
                     **{host: own for host, own in hostvars.items() if host != "ctl"}}},
        [("when", "{{ %s }}" % " and ".join("(%s)" % condition for condition in MEMBERS_CHECK["when"])),
         ("that", "{{ %s }}" % MEMBERS_CHECK["ansible.builtin.assert"]["that"]),
         ("msg", MEMBERS_CHECK["ansible.builtin.assert"]["fail_msg"])])


@pytest.mark.parametrize("ok, said, key", [
    (ok, said, members_case(hostvars, play, *conf)) for hostvars, play, conf, ok, said in [
        ({"ctl": {}, "dgx01": {}, "pcie01": {}, "new01": {"__slurm_me": {"name": "new01"}}}, ["ctl", "new01"], (),
         True, ""),
        # A new node under a kept node's name: both named, before anything changes.
        ({"ctl": {}, "dgx01": {}, "pcie01": {}, "new01": {"__slurm_me": {"name": "dgx01"}}}, ["ctl", "new01"], (),
         False, "dgx01 and new01 have the same node name dgx01 (slurm_node_name, else the short host name); a GPU "
         "node joins the cluster, or has its lines written again, in a run that holds it and the controller, such as "
         "--limit dgx01,slurm_controllers. Nothing was changed."),
        ({"ctl": {}, "dgx01": {}, "gone": {}, "pcie01": {}}, ["ctl"], (), False,
         "gone of the group gpu_nodes is neither in this play nor in the controller's /etc/slurm/slurm.conf (under its "
         "slurm_node_name, else its short host name); a GPU node joins the cluster, or has its lines written again, "
         "in a run that holds it and the controller, such as --limit gone,slurm_controllers. Nothing was changed."),
        ({"ctl": {}, "dgx01": {}, "pcie01": {}}, ["ctl"], (MEMBERS_CONF.replace("CPUs=8 Gres", "CPUs=8 # Gres", 1),),
         False, "the NodeName=dgx01 line of the controller's slurm.conf (dgx01) is not one this role writes"),
    ]
])
def test_nodes_outside_the_play_are_kept_only_as_the_role_wrote_them(ok, said, key):
    result = MEMBERS_BATCH[key]
    assert result["when"] is True and result["that"] is ok, result
    if not ok:
        assert said in result["msg"] and result["msg"].endswith("Nothing was changed.") and "\n" not in result["msg"]


NAME_CHECK = preflight_task("slurm", "Check the values written into slurm.conf")
NAME_ITEM = next(item for item in NAME_CHECK["loop"] if item["name"] == "slurm_node_name")
NAME_BATCH = Batch()


@pytest.mark.parametrize("ok, key", [
    (ok, NAME_BATCH.add(role_files("slurm"), {"slurm_node_name": name}, [
        ("that", "{{ (%s) is regex(__slurm_name_pattern) }}" % NAME_ITEM["value"][3:-3]),
        ("value", NAME_ITEM["value"])]))
    for name, ok in [("dgx01", True), ("1001", True), (1001, False), (None, False), (["dgx01"], False),
                     (True, False), ("dgx01\nNodeName=evil", False), ("dgx01\x00", False)]
])
def test_slurm_node_name_must_be_a_name_in_text(ok, key):
    """A number passed here once and failed halfway through the run (slurm_node_line); a null was written as None."""
    assert NAME_BATCH[key]["that"] is ok, NAME_BATCH[key]
