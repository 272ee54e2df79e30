"""slurm's accounting (slurm_accounting): slurm.conf's accounting block, slurmdbd.conf and MariaDB's settings, rendered
by Ansible's own templating, and the preflight checks that refuse a value those files or MariaDB's SQL cannot hold."""

from __future__ import annotations

import re

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from rolevars import preflight_task

from ansible_collections.accelops.gpu.plugins.plugin_utils._node_files_filters import node_file_paths
from simnode import ROOT

ROLE = ROOT / "roles" / "slurm"
PASSWORD = "Xk2!p%w*9+q,r-s.t/u:v;w?x@y^z_A~"


def values(**variables):
    loader = DataLoader()
    result = {}
    for part in ("defaults/main.yml", "vars/main.yml", "vars/Debian.yml"):
        result.update(loader.load_from_file(str(ROLE / part), trusted_as_template=True))
    result.update({
        "ansible_managed": "Ansible managed", "inventory_hostname": "ctl", "inventory_hostname_short": "ctl",
        "groups": {"slurm_controllers": ["ctl"], "gpu_nodes": ["dgx01"]},
        "ansible_facts": {"hostname": "ctl", "service_mgr": "systemd"},
        "__slurm_controller": {"name": "ctl", "hostname": "ctl", "address": ""},
        "__slurm_cluster": {"name": "gpucluster", "slurmctld_port": 6817, "partition": "gpu",
                            "partition_default": True, "cgroups": "auto", "accounting": True,
                            "gather_frequency": 30, "site_scripts": {}},
        "__slurm_me": {"hostname": "ctl", "dbd": {"address": "ctl", "port": 6819}},
        "__slurm_node_lines": [], "__slurm_node_names": ["dgx01"],
        "__slurm_confine": True, "__slurm_gres_lines": [], "__slurm_gres_types": ["gpu"],
        "slurm_accounting": True, "slurm_dbd_password": PASSWORD,
    })
    result["hostvars"] = {"ctl": {"__slurm_me": {"cluster": result["__slurm_cluster"], **result["__slurm_me"]}}}
    result.update(variables)
    return loader, result


def render(name, **variables):
    loader, variables = values(**variables)
    return str(Templar(loader=loader, variables=variables).template(
        trust_as_template((ROLE / "templates" / name).read_text())))


def settings(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def accounting(lines):
    return [line for line in lines if line.startswith(("Accounting", "JobAcct"))]


def test_slurm_conf_stores_jobs_in_slurmdbd_with_their_gpus():
    assert accounting(settings(render("slurm.conf.j2"))) == [
        "AccountingStorageType=accounting_storage/slurmdbd",
        "AccountingStorageHost=ctl",
        "AccountingStoragePort=6819",
        "AccountingStorageTRES=gres/gpu",
        "JobAcctGatherType=jobacct_gather/cgroup",
        "JobAcctGatherFrequency=task=30",
    ]


def test_slurm_conf_gathers_through_linux_without_cgroups_and_names_a_slurmdbd_host_of_its_own():
    cluster = {"name": "gpucluster", "slurmctld_port": 6817, "partition": "gpu", "partition_default": True,
               "cgroups": "false", "accounting": True, "gather_frequency": 2, "site_scripts": {}}
    lines = settings(render("slurm.conf.j2", __slurm_confine=False, __slurm_cluster=cluster,
                            groups={"slurm_controllers": ["ctl"], "gpu_nodes": ["dgx01"], "slurm_dbd": ["db1"]},
                            hostvars={"ctl": {"__slurm_me": {"cluster": cluster}},
                                      "db1": {"__slurm_me": {"dbd": {"address": "10.0.0.5", "port": 16820}}}}))
    assert "AccountingStorageHost=10.0.0.5" in lines
    assert "AccountingStoragePort=16820" in lines
    assert "JobAcctGatherType=jobacct_gather/linux" in lines
    assert "JobAcctGatherFrequency=task=2" in lines


def test_slurm_conf_without_accounting_has_no_accounting_lines():
    cluster = {"name": "gpucluster", "slurmctld_port": 6817, "partition": "gpu", "partition_default": True,
               "cgroups": "auto", "accounting": False, "gather_frequency": 30, "site_scripts": {}}
    assert accounting(settings(render("slurm.conf.j2", __slurm_cluster=cluster))) == []
    # A controller published before accounting existed (no key) writes none either.
    del cluster["accounting"]
    assert accounting(settings(render("slurm.conf.j2", __slurm_cluster=cluster))) == []


def test_slurmdbd_conf():
    lines = settings(render("slurmdbd.conf.j2"))
    assert lines == [
        "AuthType=auth/munge", "DbdHost=ctl", "DbdPort=6819", "SlurmUser=slurm",
        "LogFile=/var/log/slurm/slurmdbd.log", "StorageType=accounting_storage/mysql", "StorageHost=localhost",
        "StorageLoc=slurm_acct_db", "StorageUser=slurm", "StoragePass=" + PASSWORD,
    ]
    db1 = {"hostname": "db1", "dbd": {"address": "10.0.0.5", "port": 16820}}
    lines = settings(render("slurmdbd.conf.j2", __slurm_me=db1))
    assert lines[1:4] == ["DbdHost=db1", "DbdAddr=10.0.0.5", "DbdPort=16820"]


def test_mariadb_settings():
    assert settings(render("mariadb-slurmdbd.cnf.j2")) == [
        "[mysqld]", "innodb_lock_wait_timeout = 900", "innodb_log_file_size = 64M", "max_allowed_packet = 16M"]


def test_slurmdbd_conf_is_secret_owned_by_slurm_and_the_probe_reads_every_path():
    loader, variables = values()
    templar = Templar(loader=loader, variables=variables)
    files = templar.template(trust_as_template("{{ __slurm_dbd_files }}"))
    conf = next(entry for entry in files if entry["dest"] == "/etc/slurm/slurmdbd.conf")
    assert conf == {"dest": "/etc/slurm/slurmdbd.conf", "template": "slurmdbd.conf.j2", "owner": "slurm",
                    "group": "slurm", "mode": "0600", "secret": True}
    assert templar.template(trust_as_template("{{ __slurm_dbd_daemons }}")) == ["mariadb", "slurmdbd"]
    assert templar.template(trust_as_template("{{ __slurm_packages_wanted }}")) == [
        "munge", "slurmctld", "slurm-client", "mariadb-server", "slurmdbd"]
    database = templar.template(trust_as_template("{{ __slurm_dbd_database_dir }}"))
    assert [*node_file_paths(files), database] == [
        "/etc/slurm", "/var/log/slurm", "/etc/mysql/mariadb.conf.d",
        "/etc/mysql/mariadb.conf.d/60-accelops-gpu-slurmdbd.cnf", "/etc/slurm/slurmdbd.conf",
        "/var/lib/mysql/slurm_acct_db"]
    # The preflight's one read covers them (the role's __slurm_conf_paths adds __slurm_dbd_paths).
    assert "__slurm_dbd_paths" in yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["__slurm_conf_paths"]
    # A node is not the slurmdbd host: nothing of it there.
    loader, variables = values(inventory_hostname="dgx01")
    templar = Templar(loader=loader, variables=variables)
    assert templar.template(trust_as_template("{{ __slurm_dbd_files }}")) == []
    assert templar.template(trust_as_template("{{ __slurm_dbd_daemons }}")) == []


@pytest.mark.parametrize("groups, host", [
    ({"slurm_controllers": ["ctl"], "gpu_nodes": ["dgx01"]}, "ctl"),
    ({"slurm_controllers": ["ctl"], "gpu_nodes": ["dgx01"], "slurm_dbd": []}, "ctl"),
    ({"slurm_controllers": ["ctl"], "gpu_nodes": ["dgx01"], "slurm_dbd": ["db1"]}, "db1"),
])
def test_slurmdbd_runs_on_its_group_or_the_controller(groups, host):
    loader, variables = values(groups=groups)
    assert Templar(loader=loader, variables=variables).template(trust_as_template("{{ __slurm_dbd_host }}")) == host


@pytest.mark.parametrize("stdout, rc, registered", [
    ("gpucluster\n", 0, True),
    ("other\ngpucluster\n", 0, True),
    ("other\n", 0, False),
    ("", 1, False),
])
def test_the_cluster_is_registered_only_when_sacctmgr_lists_it(stdout, rc, registered):
    read = {"rc": rc, "stdout": stdout, "stdout_lines": stdout.splitlines()}
    loader, variables = values(__slurm_state={"commands": {"sacctmgr_clusters": read}})
    templar = Templar(loader=loader, variables=variables)
    assert templar.template(trust_as_template("{{ __slurm_cluster_registered }}")) is registered


def check(task_name, **variables):
    """Whether the preflight task passes for every item (or its single assertion), as the role renders it."""
    task = preflight_task("slurm", task_name)
    loader, variables = values(**variables)
    templar = Templar(loader=loader, variables=variables)
    when = task.get("when", [])
    when = [when] if isinstance(when, str) else when
    if not all(templar.template(trust_as_template("{{ %s }}" % condition)) for condition in when):
        return None
    that = task["ansible.builtin.assert"]["that"]
    that = [that] if isinstance(that, str) else that
    items = task.get("loop", [None])
    failed = []
    for entry in items:
        if entry is not None:
            item = {key: templar.template(trust_as_template(value)) if isinstance(value, str) else value
                    for key, value in entry.items()}
            templar = Templar(loader=loader, variables={**variables, "item": item})
        if not all(templar.template(trust_as_template("{{ %s }}" % t)) for t in that):
            failed.append(templar.template(trust_as_template(task["ansible.builtin.assert"]["fail_msg"])))
    return failed


@pytest.mark.parametrize("password, ok", [
    (PASSWORD, True),
    ("a" * 16, True),
    ("a" * 128, True),
    ("", False),
    ("a" * 15, False),
    ("a" * 129, False),
    ("a" * 16 + "\n", False),
    ("a" * 16 + "\nStorageHost=evil", False),
    ("a" * 16 + "\x00", False),
    ("a" * 16 + "'; DROP DATABASE x; --", False),
    ("a" * 16 + " b", False),
    ("a" * 16 + "#", False),
    ("a" * 16 + "\\", False),
    ("a" * 16 + '"', False),
    ("a" * 16 + "=", False),
])
def test_the_password_check(password, ok):
    failed = check("Check the database password", slurm_dbd_password=password)
    assert (failed == []) is ok
    if not ok:
        assert failed[0].startswith("slurm_dbd_password must be set with slurm_accounting")
        assert password not in failed[0] or password == ""


def test_the_password_check_says_why_without_the_password_and_only_with_accounting():
    task = preflight_task("slurm", "Check the database password")
    # Its message is shown (no_log would hide it); it never templates the password's value.
    assert "no_log" not in task
    assert "slurm_dbd_password }}" not in task["ansible.builtin.assert"]["fail_msg"]
    assert "slurm_dbd_password | string | length" in task["ansible.builtin.assert"]["fail_msg"]
    assert task["ansible.builtin.assert"]["quiet"] is True
    assert check("Check the database password", slurm_accounting=False, slurm_dbd_password="") is None


@pytest.mark.parametrize("variables, message", [
    ({}, None),
    ({"slurm_dbd_database": "slurm_acct_db\nx"}, "slurm_dbd_database: \"slurm_acct_db\\nx\" is not allowed"),
    ({"slurm_dbd_database": "acct`; DROP"}, "slurm_dbd_database: \"acct`; DROP\" is not allowed"),
    ({"slurm_dbd_database": ""}, "slurm_dbd_database: \"\" is not allowed"),
    ({"slurm_dbd_storage_user": "slurm'@'%"}, "slurm_dbd_storage_user: \"slurm'@'%\" is not allowed"),
    ({"slurm_dbd_storage_user": "slurm\x00"}, "slurm_dbd_storage_user: \"slurm\\u0000\" is not allowed"),
    ({"slurm_dbd_address": "db1\nStorageHost=x"}, "slurm_dbd_address: \"db1\\nStorageHost=x\" is not allowed"),
    ({"slurm_dbd_port": "6819 "}, "slurm_dbd_port: \"6819 \" is not allowed"),
    ({"slurm_accounting_gather_frequency": 0}, "slurm_accounting_gather_frequency: \"0\" is not allowed"),
])
def test_the_accounting_names_check(variables, message):
    failed = check("Check the accounting settings", **variables)
    if message is None:
        assert failed == []
    else:
        assert len(failed) == 1 and failed[0].startswith(message), failed
        assert failed[0].endswith("Nothing was changed.")


@pytest.mark.parametrize("variables, ok", [
    ({}, True),
    ({"slurm_dbd_port": 65536}, False),
    ({"slurm_accounting_gather_frequency": 3601}, False),
])
def test_the_accounting_numbers_range(variables, ok):
    assert (check("Check the accounting numbers' range", **variables) == []) is ok


def test_accounting_checks_run_before_the_probe_and_the_sql_is_withheld():
    tasks = [task["name"] for task in yaml.safe_load((ROLE / "tasks" / "preflight.yml").read_text())]
    probe = tasks.index("Read Slurm's packages, munge key, configuration, daemons and the hardware slurmd sees")
    for name in ("Check the accounting settings", "Check the accounting numbers' range", "Check the database password"):
        assert tasks.index(name) < probe
    sql = preflight_task("slurm", "Make slurmdbd's database and its user", "accounting.yml")
    assert sql["no_log"] is True
    assert "slurm_dbd_password" in sql["ansible.builtin.command"]["stdin"]
    assert "slurm_dbd_password" not in sql["ansible.builtin.command"]["cmd"]
    conf = preflight_task("slurm", "Write slurmdbd.conf", "accounting.yml")
    assert conf["no_log"] is True


def test_main_starts_mariadb_and_slurmdbd_before_slurm_conf_and_registers_the_cluster_before_slurmctld():
    tasks = [task["name"] for task in yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())]
    order = ["Set up MariaDB and slurmdbd", "Write the configuration", "Register the cluster with slurmdbd",
             "Start the daemons and apply the changed configuration"]
    assert [tasks.index(name) for name in order] == sorted(tasks.index(name) for name in order)
    steps = []
    for task in yaml.safe_load((ROLE / "tasks" / "accounting.yml").read_text()):
        for inner in task.get("block", []):
            steps += [t["name"] for t in inner.get("block", [inner])]
    assert [s for s in steps if s.startswith(("Start", "Make", "Write slurmdbd"))] == [
        "Start MariaDB", "Make slurmdbd's database and its user", "Write slurmdbd.conf", "Start slurmdbd"]
    add = preflight_task("slurm", "Add the cluster to slurmdbd", "accounting_register.yml")
    assert add["ansible.builtin.command"]["argv"] == ["sacctmgr", "--immediate", "add", "cluster",
                                                      "{{ slurm_cluster_name }}"]
    assert re.search(r"not in __slurm_sacctmgr_clusters\.stdout_lines", add["when"])


def test_a_cluster_added_now_drops_slurmctlds_own_cluster_id():
    """slurmctld 24.11 refuses to start when its StateSaveLocation/clustername (made on a start without accounting)
    differs from the id slurmdbd gives a cluster new to its database: the file goes with the cluster's addition."""
    tasks = yaml.safe_load((ROLE / "tasks" / "accounting_register.yml").read_text())
    steps = [t["name"] for t in tasks[1]["block"]] + [t["name"] for t in tasks[2:]]
    assert steps.index("Add the cluster to slurmdbd") < steps.index("Let slurmctld take the cluster id slurmdbd gives")
    drop = tasks[2]
    assert drop["ansible.builtin.file"] == {"path": "{{ __slurm_state_dir }}/clustername", "state": "absent"}
    add = preflight_task("slurm", "Add the cluster to slurmdbd", "accounting_register.yml")
    assert add["when"] in drop["when"]
