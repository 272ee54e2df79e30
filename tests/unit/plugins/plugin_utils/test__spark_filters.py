"""The spark role's settings check and its verification's reading of the master's state."""

from __future__ import annotations

import pytest

from ansible_collections.accelops.gpu.plugins.plugin_utils._spark_filters import (
    FilterModule,
    SparkError,
    spark_cluster_problems,
    spark_discovery_problems,
    spark_problems,
)

GOOD = {
    "spark_version": "4.3.0", "masters": ["spark01"], "spark_master_group": "spark_masters",
    "workers": ["gpu01"], "spark_worker_group": "gpu_nodes",
    "spark_executor_gpus": 2, "spark_task_gpus": 1, "spark_gpu_mig": "devices", "spark_gpu_exclude": [3, "GPU-ab-12"],
    "spark_worker_cores": "", "spark_worker_memory": "", "spark_master_port": 7077, "spark_master_webui_port": 8080,
    "spark_worker_port": 7078, "spark_worker_webui_port": 8081, "spark_auth_secret": "0123456789abcdef",
    "spark_bind_address": "127.0.0.1", "spark_java_package": "openjdk-17-jre-headless",
    "spark_index_url": "https://pypi.org/simple", "spark_rapids_jar_url": "", "spark_rapids_jar_sha256": "",
}
JAR = "https://repo1.maven.org/maven2/com/nvidia/rapids-4-spark_2.13/25.10.0/rapids-4-spark_2.13-25.10.0.jar"


def test_filters_are_registered():
    assert set(FilterModule().filters()) == {"_spark_problems", "_spark_cluster_problems", "_spark_discovery_problems"}


@pytest.mark.parametrize("change", [
    {}, {"spark_task_gpus": 0.5}, {"spark_task_gpus": "0.25"}, {"spark_task_gpus": 2}, {"spark_executor_gpus": "8"},
    {"spark_worker_cores": 16}, {"spark_worker_cores": "16"}, {"spark_worker_memory": "64g"},
    {"spark_gpu_exclude": ["MIG-7c2a-1", 0]}, {"spark_gpu_mig": "skip"}, {"spark_master_port": "7077"},
    {"spark_bind_address": "10.0.0.11"}, {"spark_bind_address": "gpu01.cluster.example"},
    {"spark_java_package": "openjdk-21-jre-headless"}, {"spark_index_url": ""},
    {"spark_worker_memory": "1024k"}, {"spark_worker_memory": "2047t"}, {"spark_version": "4.0.0"},
    {"spark_version": "3.5.10"},
    {"spark_rapids_jar_url": JAR, "spark_rapids_jar_sha256": "0" * 63 + "F"},
    {"spark_rapids_jar_url": "file:///srv/mirror/rapids-4-spark_2.13-25.10.0.jar", "spark_rapids_jar_sha256": "a" * 64},
    # The checksum counts only with a jar.
    {"spark_rapids_jar_sha256": "not one"},
])
def test_good_settings_have_no_problem(change):
    assert spark_problems({**GOOD, **change}) == []


@pytest.mark.parametrize("change, problem", [
    ({"spark_executor_gpus": True}, "spark_executor_gpus must be a whole number of GPUs of 1 or more, got True"),
    ({"spark_rapids_jar_url": JAR}, "spark_rapids_jar_sha256 must be the jar's SHA-256 as 64 hexadecimal digits, "
                                    "required with spark_rapids_jar_url"),
    ({"spark_rapids_jar_url": JAR, "spark_rapids_jar_sha256": "sha256:" + "a" * 64}, "spark_rapids_jar_sha256 must"),
    ({"spark_rapids_jar_url": JAR, "spark_rapids_jar_sha256": "a" * 63}, "spark_rapids_jar_sha256 must"),
    ({"spark_rapids_jar_url": "ftp://mirror/rapids.jar"}, "spark_rapids_jar_url must be \"\" for none, or the https://"),
    ({"spark_rapids_jar_url": "https://mirror/rapids.zip"}, "spark_rapids_jar_url must be"),
    ({"spark_rapids_jar_url": "https://mirror/"}, "spark_rapids_jar_url must be"),
    ({"spark_rapids_jar_url": "https://mirror/.jar"}, "spark_rapids_jar_url must be"),
    ({"spark_rapids_jar_url": "https://mirror/a jar.jar"}, "spark_rapids_jar_url must be"),
    ({"spark_rapids_jar_url": "https://mirror/x.jar\nspark.authenticate false"}, "spark_rapids_jar_url must be"),
    ({"spark_rapids_jar_url": ["https://mirror/x.jar"]}, "spark_rapids_jar_url must be"),
    ({"spark_rapids_jar_url": None}, "spark_rapids_jar_url must be"),
    # The file name is the URL's end.
    ({"spark_rapids_jar_url": "https://mirror/get?name=/x.jar"}, "without spaces, query or fragment"),
    ({"spark_rapids_jar_url": "https://mirror/x.jar#y.jar"}, "without spaces, query or fragment"),
    ({"spark_executor_gpus": 0}, "spark_executor_gpus must be a whole number"),
    ({"spark_executor_gpus": "1e3"}, "spark_executor_gpus must be a whole number"),
    ({"spark_executor_gpus": None}, "spark_executor_gpus must be a whole number"),
    ({"spark_task_gpus": -0.5}, "spark_task_gpus must be a number of GPUs above 0"),
    ({"spark_task_gpus": 0.6}, "Spark refuses 0.5 < amount < 1"),
    ({"spark_task_gpus": 1.5}, "a whole number when it is 1 or more"),
    ({"spark_task_gpus": 3}, "spark_task_gpus (3) must not exceed spark_executor_gpus (2)"),
    ({"masters": []}, "must hold one host, the master; it holds none"),
    ({"masters": None}, "must hold one host, the master; it holds none"),
    # A misspelt group: the master alone, and a run that passes with no GPU offered.
    ({"workers": []}, "the group 'gpu_nodes' (spark_worker_group) holds no host: the cluster would have no worker"),
    ({"workers": None}, "(spark_worker_group) holds no host"),
    ({"spark_gpu_mig": "all"}, "spark_gpu_mig must be one of devices, gpus, skip"),
    ({"spark_gpu_exclude": [True]}, "spark_gpu_exclude must be a list"),
    ({"spark_gpu_exclude": ["GPU-x y"]}, "spark_gpu_exclude must be a list"),
    ({"spark_worker_cores": "all"}, "spark_worker_cores must be a number of cores"),
    ({"spark_worker_cores": False}, "spark_worker_cores must be a number of cores"),
    ({"spark_worker_memory": "64"}, "spark_worker_memory must be an amount"),
    ({"spark_worker_memory": "1g\nx"}, "spark_worker_memory must be an amount"),
    # The worker takes whole MiB in an int: less than one is "Memory is below 1MB" at its start, 2048t overflows.
    ({"spark_worker_memory": "512k"}, "spark_worker_memory must be an amount from 1m to 2047t"),
    ({"spark_worker_memory": "2048t"}, "spark_worker_memory must be an amount from 1m to 2047t"),
    ({"spark_worker_port": 0}, "spark_worker_port must be a port from 1024 to 65535"),
    # The daemons run as the user spark, which cannot bind a port under 1024.
    ({"spark_master_webui_port": 80}, "spark_master_webui_port must be a port from 1024 to 65535 (the daemons run "
                                      "as the unprivileged user spark), got 80"),
    ({"spark_worker_port": True}, "spark_worker_port must be a port"),
    ({"spark_worker_webui_port": 7078}, "spark_worker_port and spark_worker_webui_port must be different ports"),
    ({"spark_version": "4.3"}, "spark_version must be a pyspark release"),
    # pip reads 04.3.0 as 4.3.0, the role's check of the environment does not: pip would run on every run.
    ({"spark_version": "04.3.0"}, "spark_version must be a pyspark release"),
    ({"spark_version": "4.3.00"}, "spark_version must be a pyspark release"),
    # What the workers and applications connect to: spark://::1:7077 is no URL Spark reads, and 0.0.0.0 reaches no
    # other host (and would open the web UIs on every address).
    ({"spark_bind_address": "::1"}, "spark_bind_address must be a host name or an IPv4 address"),
    ({"spark_bind_address": "fe80::1%eth0"}, "no IPv6 address"),
    ({"spark_bind_address": "0.0.0.0"}, "of the host that the others reach it at (not 0.0.0.0"),
    ({"spark_bind_address": "0"}, "not 0.0.0.0"),
    ({"spark_bind_address": "127.0.0.1 --foo"}, "spark_bind_address must be a host name"),
    ({"spark_bind_address": "-h"}, "spark_bind_address must be a host name"),
    ({"spark_bind_address": 10}, "spark_bind_address must be a host name"),
    # apt would read an option, install every package a pattern matches, or pin a version node_probe never finds.
    ({"spark_java_package": "-o"}, "spark_java_package must be the name of a Debian package"),
    ({"spark_java_package": "openjdk-*"}, "spark_java_package must be the name"),
    ({"spark_java_package": "openjdk-17-jre-headless=17.0.1"}, "spark_java_package must be the name"),
    ({"spark_java_package": "foo; rm -rf /"}, "spark_java_package must be the name"),
    ({"spark_java_package": ""}, "spark_java_package must be the name"),
    ({"spark_java_package": None}, "spark_java_package must be the name"),
    # One index: a list would give pip "--index-url ['...']".
    ({"spark_index_url": ["https://pypi.org/simple"]}, "spark_index_url must be one index URL"),
    ({"spark_auth_secret": None}, "spark_auth_secret must be set"),
    ({"spark_auth_secret": "0123456789abcde\n"}, "(not shown: it is a secret)"),
    # spark-defaults.conf is a Java properties file: a backslash there escapes, \u then needs 4 hex digits, and one at
    # the end of the line joins the next line to the secret.
    ({"spark_auth_secret": "0123456789abcdef\\uZZZZ"}, "without spaces or backslashes (not shown: it is a secret)"),
    ({"spark_auth_secret": "0123456789abcdef\\"}, "without spaces or backslashes"),
    ({"spark_auth_secret": ["0123456789abcdef"]}, "spark_auth_secret must be 16 to 1024 printable ASCII"),
])
def test_each_bad_setting_is_one_problem_naming_it(change, problem):
    found = spark_problems({**GOOD, **change})
    assert len(found) == 1 and problem in found[0], found
    if "spark_auth_secret" in change:
        assert "0123456789" not in found[0]


def test_settings_that_are_not_a_mapping():
    assert spark_problems(["x"]) == ["the spark role's settings must be a mapping, got ['x']"]


def worker(port, addresses, state="ALIVE"):
    return {"host": "127.0.0.1", "port": port, "state": state,
            "resources": {"gpu": {"name": "gpu", "addresses": addresses}}}


EXPECTED = [{"host": "127.0.0.1", "port": 7078, "gpus": ["0", "1"]},
            {"host": "127.0.0.1", "port": 7079, "gpus": ["MIG-a", "2"]}]


def test_a_cluster_with_every_worker_and_its_gpus_has_no_problem():
    state = {"workers": [worker(7078, ["1", "0"]), worker(7079, ["2", "MIG-a"]), worker(7079, [], state="DEAD")]}
    assert spark_cluster_problems(state, EXPECTED) == []


@pytest.mark.parametrize("workers, problem", [
    ([worker(7078, ["0", "1"])], "the worker 127.0.0.1:7079 is not alive there"),
    ([worker(7078, ["0", "1"]), worker(7079, ["2", "MIG-a"], state="DEAD")], "127.0.0.1:7079 is not alive"),
    ([worker(7078, ["0"]), worker(7079, ["2", "MIG-a"])],
     "the worker 127.0.0.1:7078 offers the GPUs ['0'], not ['0', '1']"),
    ([worker(7078, []), worker(7079, ["2", "MIG-a"])], "offers the GPUs none, not ['0', '1']"),
    ([{"host": "127.0.0.1", "port": 7078, "state": "ALIVE"}, worker(7079, ["2", "MIG-a"])], "offers the GPUs none"),
])
def test_a_missing_worker_or_a_wrong_gpu_is_said(workers, problem):
    found = spark_cluster_problems({"workers": workers}, EXPECTED)
    assert len(found) == 1 and problem in found[0], found


def test_a_state_that_is_not_the_masters_json_is_a_problem_and_bad_expectations_an_error():
    assert spark_cluster_problems("<html>", EXPECTED)[0].startswith("its state is not the master's JSON")
    with pytest.raises(SparkError, match="workers must be a list"):
        spark_cluster_problems({"workers": []}, "x")


def ran(stdout="", stderr="", rc=0, **more):
    return {"rc": rc, "stdout": stdout, "stderr": stderr, **more}


@pytest.mark.parametrize("found", [
    ran('{"name": "gpu", "addresses": ["0", "1", "MIG-7c2a-1"]}'),
    ran('{"name": "gpu", "addresses": ["2"]}\n', "accelops-gpu-spark-discovery: GPU 0 left out: MIG is on"),
])
def test_a_discovery_that_spark_will_read_as_gpus_is_no_problem(found):
    assert spark_discovery_problems(found) == []


@pytest.mark.parametrize("found, problem", [
    # The script's own line, or what Ansible says, or the exit status.
    (ran(rc=1, stderr="accelops-gpu-spark-discovery: NVML cannot be used: the driver is not loaded\n"),
     "accelops-gpu-spark-discovery: NVML cannot be used: the driver is not loaded"),
    (ran(rc=2, msg="[Errno 2] No such file or directory: b'/usr/local/libexec/accelops-gpu/spark-gpus'"),
     "[Errno 2] No such file or directory"),
    (ran(rc=137), "exit status 137"),
    (ran('{"name": "gpu", "addresses": []}', "accelops-gpu-spark-discovery: GPU 0 left out: lost"),
     "accelops-gpu-spark-discovery: GPU 0 left out: lost"),
    (ran('{"name": "gpu", "addresses": []}'), "it lists none"),
    # What Spark would refuse when the worker starts: the role stops first, with the output.
    (ran('{"name": "gpu"}'), "its output is not the GPUs as Spark reads them"),
    (ran('{"name": "gpu", "addresses": "0,1"}'), "its output is not the GPUs as Spark reads them"),
    (ran('{"name": "gpu", "addresses": {"0": 1}}'), "its output is not the GPUs"),
    (ran('{"name": "gpu", "addresses": [0, 1]}'), "its output is not the GPUs"),
    (ran('{"name": "gpu", "addresses": ["0", ""]}'), "its output is not the GPUs"),
    # spark-defaults.conf lists the addresses on a comment line.
    (ran('{"name": "gpu", "addresses": ["0", "1\\nspark.authenticate false"]}'), "its output is not the GPUs"),
    (ran('{"name": "gpu", "addresses": ["0", "GPU 1"]}'), "its output is not the GPUs"),
    (ran('{"name": "gpu", "addresses": ["0", "0"]}'), "with no address twice"),
    (ran('{"name": "fpga", "addresses": ["0"]}'), "its output is not the GPUs"),
    (ran('[1]'), "its output is not the GPUs"),
    (ran("Traceback (most recent call last):"), "its output is not the GPUs as Spark reads them, "
                                                '{"name": "gpu", "addresses": [...]} with no address twice: '
                                                "'Traceback (most recent call last):'"),
    (ran(""), "its output is not the GPUs"),
])
def test_a_discovery_that_gives_spark_no_gpu_is_one_line(found, problem):
    said = spark_discovery_problems(found)
    assert len(said) == 1 and problem in said[0], said


def test_a_discovery_that_is_no_commands_result_is_an_error():
    with pytest.raises(SparkError, match="must be the result of a command"):
        spark_discovery_problems("0,1")
