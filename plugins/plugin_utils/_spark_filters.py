# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The _spark_problems, _spark_discovery_problems and _spark_cluster_problems filters, internal to the spark role (no
compatibility promise), each documented in its file of plugins/filter: what is wrong with the role's settings, each
problem naming the variable and what is allowed, before anything is installed or written; what keeps a worker from
offering its GPUs; and what is wrong with the cluster as its master shows it."""

from __future__ import annotations

import json
import re

from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shown


class SparkError(AnsibleFilterError):
    """Input from which the cluster cannot be judged; the message names the field."""


# As pip names the release: no leading zero, which pip drops and the role's reading of the environment (_pip_unmet)
# would not, so that pip ran on every run.
VERSION = re.compile(r"\A(?:0|[1-9][0-9]{0,2})(?:\.(?:0|[1-9][0-9]{0,2})){2}\Z")
# What a Spark resource amount looks like in spark-defaults.conf: a whole number or a decimal fraction.
AMOUNT = re.compile(r"\A[0-9]{1,4}(?:\.[0-9]{1,6})?\Z")
# A worker's memory as Spark reads it (1g, 512m, 64G); "" for Spark's own default. The worker takes it in whole MiB,
# an int: under 1 MiB it refuses to start, from 2048t on the number overflows.
MEMORY = re.compile(r"\A(?:([1-9][0-9]{0,6})([kKmMgGtT]))?\Z")
MIB = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 ** 2}
CORES = re.compile(r"\A(?:[1-9][0-9]{0,4})?\Z")
# An exclusion as the discovery script takes it: an NVML index or a GPU or MIG device UUID.
EXCLUDE = re.compile(r"\A(?:[0-9]{1,4}|(?:GPU|MIG)-[0-9A-Za-z-]{1,64})\Z")
# The secret goes into spark-defaults.conf, one line of printable ASCII; Spark compares it whole. No backslash: Spark
# reads the file as Java properties, where a backslash escapes the next character (\u must then be four hex digits, or
# every daemon fails to start), and one at the end of the line joins the next line to the secret.
SECRET = re.compile(r"\A[!-\[\]-~]{16,1024}\Z")
# What the daemons bind to and announce, written into spark://HOST:PORT and onto their command lines: a host name or an
# IPv4 address. Not an IPv6 address (spark://::1:7077 is no URL Spark reads), and not 0.0.0.0, which no other host
# reaches and which would open the web UIs on every address.
BIND_ADDRESS = re.compile(r"\A[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?\Z")
EVERY_ADDRESS = re.compile(r"\A0+(?:\.0+){0,3}\Z")
# A Debian package name (Policy 5.6.1): never an option for apt, a pattern apt would expand to every package it
# matches, or a pinned version (name=version), which node_probe would never find installed.
DEB_PACKAGE = re.compile(r"\A[a-z0-9][a-z0-9+.-]{1,99}\Z")
# A GPU's address as the discovery script gives it (an NVML index, a MIG device's UUID), which spark-defaults.conf lists
# on a comment line: printable ASCII without spaces.
ADDRESS = re.compile(r"\A[!-~]{1,128}\Z")
# The accelerator jar's URL: get_url fetches it, and its file name, kept as it is, goes on the class path in
# spark-defaults.conf. No query or fragment, so that the name is the URL's end.
JAR_URL = re.compile(r"\A(?![^?#]*[?#])(?:https?|file)://[!-~]{0,2048}/([A-Za-z0-9_+-][A-Za-z0-9._+-]{0,200}\.jar)\Z")
SHA256 = re.compile(r"\A[0-9a-fA-F]{64}\Z")
MIG = ("devices", "gpus", "skip")
PORTS = ("spark_master_port", "spark_master_webui_port", "spark_worker_port", "spark_worker_webui_port")


def _number(value):
    """The value as a float where it is a number written as Spark reads one (never a bool), else None."""
    if isinstance(value, bool):
        return None
    text = str(value) if isinstance(value, (int, float, str)) else ""
    return float(text) if AMOUNT.match(text) else None


def spark_problems(settings):
    """The problems of the spark role's settings (a dict of its variables, plus ``masters`` and ``workers``, the
    hosts of spark_master_group and spark_worker_group), each one line that names the variable and what it may be;
    [] when there is none. The secret itself is never shown."""
    if not isinstance(settings, dict):
        return ["the spark role's settings must be a mapping, got %s" % shown(settings)]
    problems = []

    def refuse(name, allowed):
        problems.append("%s must be %s, got %s" % (name, allowed, shown(settings.get(name))))

    if not isinstance(settings.get("spark_version"), str) or not VERSION.match(settings["spark_version"]):
        refuse("spark_version", "a pyspark release such as 4.3.0 (quoted)")
    if not isinstance(settings.get("spark_java_package"), str) or not DEB_PACKAGE.match(settings["spark_java_package"]):
        refuse("spark_java_package", "the name of a Debian package, such as openjdk-17-jre-headless (lower-case "
                                     "letters, digits and + . -)")
    # Its form is _config_value_problems' (pip_locations), which takes a list as well.
    if not isinstance(settings.get("spark_index_url"), str):
        refuse("spark_index_url", 'one index URL, or "" to use only spark_find_links')
    masters = settings.get("masters")
    if not isinstance(masters, list) or len(masters) != 1:
        problems.append("the group %s (spark_master_group) must hold one host, the master; it holds %s"
                        % (shown(settings.get("spark_master_group")),
                           ", ".join(shown(host) for host in masters) if isinstance(masters, list) and masters
                           else "none"))
    if not isinstance(settings.get("workers"), list) or not settings["workers"]:
        problems.append("the group %s (spark_worker_group) holds no host: the cluster would have no worker"
                        % shown(settings.get("spark_worker_group")))
    executor = _number(settings.get("spark_executor_gpus"))
    if executor is None or executor < 1 or executor != int(executor):
        refuse("spark_executor_gpus", "a whole number of GPUs of 1 or more")
        executor = None
    task = _number(settings.get("spark_task_gpus"))
    if task is None or task <= 0:
        refuse("spark_task_gpus", "a number of GPUs above 0: a whole number, or a fraction of at most 0.5 to share "
                                  "one GPU among tasks")
    elif task < 1 and task > 0.5:
        refuse("spark_task_gpus", "a whole number, or a fraction of at most 0.5 (Spark refuses 0.5 < amount < 1)")
    elif task >= 1 and task != int(task):
        refuse("spark_task_gpus", "a whole number when it is 1 or more (Spark refuses 1.5)")
    elif executor is not None and task > executor:
        problems.append("spark_task_gpus (%s) must not exceed spark_executor_gpus (%s): no task could start"
                        % (shown(settings.get("spark_task_gpus")), shown(settings.get("spark_executor_gpus"))))
    if settings.get("spark_gpu_mig") not in MIG:
        refuse("spark_gpu_mig", "one of %s" % ", ".join(MIG))
    exclude = settings.get("spark_gpu_exclude")
    if not isinstance(exclude, list) or not all(isinstance(item, (str, int)) and not isinstance(item, bool)
                                                and EXCLUDE.match(str(item)) for item in exclude):
        refuse("spark_gpu_exclude", "a list of GPU indexes and GPU or MIG device UUIDs")
    if not isinstance(settings.get("spark_worker_cores"), (str, int)) or isinstance(settings.get("spark_worker_cores"),
                                                                                    bool) \
            or not CORES.match(str(settings["spark_worker_cores"])):
        refuse("spark_worker_cores", 'a number of cores of 1 or more, or "" for all of them')
    memory = MEMORY.match(settings["spark_worker_memory"]) if isinstance(settings.get("spark_worker_memory"), str) \
        else None
    if not memory or (memory.group(1) and not 1 <= int(memory.group(1)) * MIB[memory.group(2).lower()] < 2 ** 31):
        refuse("spark_worker_memory", 'an amount from 1m to 2047t such as 64g or 512m, or "" for Spark\'s own choice')
    address = settings.get("spark_bind_address")
    if not isinstance(address, str) or not BIND_ADDRESS.match(address) or EVERY_ADDRESS.match(address):
        refuse("spark_bind_address", "a host name or an IPv4 address of the host that the others reach it at (not "
                                     "0.0.0.0, and no IPv6 address, which the master's URL spark://HOST:PORT cannot "
                                     "take)")
    ports = {}
    for name in PORTS:
        value = settings.get(name)
        if isinstance(value, bool) or not re.match(r"\A[0-9]{1,5}\Z", str(value)) or not 1024 <= int(value) <= 65535:
            refuse(name, "a port from 1024 to 65535 (the daemons run as the unprivileged user spark)")
        else:
            ports.setdefault(int(value), []).append(name)
    for port, names in sorted(ports.items()):
        if len(names) > 1:
            problems.append("%s must be different ports, all are %d" % (" and ".join(names), port))
    jar = settings.get("spark_rapids_jar_url")
    if not isinstance(jar, str) or (jar and not JAR_URL.match(jar)):
        refuse("spark_rapids_jar_url", '"" for none, or the https://, http:// or file:// URL of a .jar file (its name '
                                       "of letters, digits and . _ + -), without spaces, query or fragment")
    elif jar and (not isinstance(settings.get("spark_rapids_jar_sha256"), str)
                  or not SHA256.match(settings["spark_rapids_jar_sha256"])):
        refuse("spark_rapids_jar_sha256", "the jar's SHA-256 as 64 hexadecimal digits, required with "
                                          "spark_rapids_jar_url: the jar runs inside every executor")
    secret = settings.get("spark_auth_secret")
    if secret is None or secret == "":
        problems.append("spark_auth_secret must be set: Spark's standalone cluster runs any code that reaches it "
                        "without one. Give it 16 to 1024 printable ASCII characters without spaces or backslashes, "
                        "from Ansible Vault")
    elif not isinstance(secret, str) or not SECRET.match(secret):
        problems.append("spark_auth_secret must be 16 to 1024 printable ASCII characters without spaces or backslashes "
                        "(not shown: it is a secret)")
    return problems


def spark_discovery_problems(found):
    """What keeps a worker from offering its GPUs, from the run of its discovery script (the result a command task
    registers): [] when the script printed what Spark will read at the worker's start, the resource gpu with at least
    one address, each a text of printable ASCII without spaces and none twice; else one line, the script's own where
    it said one."""
    if not isinstance(found, dict):
        raise SparkError("the discovery script's run must be the result of a command, got %s" % shown(found))
    stdout, stderr = (found.get(key) if isinstance(found.get(key), str) else "" for key in ("stdout", "stderr"))
    if found.get("rc") != 0:
        said = stderr.strip() or stdout.strip() or str(found.get("msg") or "").strip()
        return [said or "exit status %s" % shown(found.get("rc"))]
    try:
        answer = json.loads(stdout)
    except ValueError:
        answer = None
    addresses = answer.get("addresses") if isinstance(answer, dict) else None
    if not isinstance(addresses, list) or answer.get("name") != "gpu" \
            or not all(isinstance(address, str) and ADDRESS.match(address) for address in addresses) \
            or len(set(addresses)) < len(addresses):
        return ['its output is not the GPUs as Spark reads them, {"name": "gpu", "addresses": [...]} with no address '
                "twice: %s" % shown(stdout.strip())]
    if not addresses:
        return [stderr.strip() or "it lists none"]
    return []


def spark_cluster_problems(state, workers):
    """What is wrong with a standalone cluster as its master shows it (the JSON of the master's web UI, /json/)
    against the workers expected, [{host, port, gpus: [addresses]}]: each expected worker must be ALIVE there (by host
    and port) with exactly those GPU addresses. [] when all is well."""
    if not isinstance(state, dict) or not isinstance(state.get("workers"), list):
        return ["its state is not the master's JSON with a list of workers: %s" % shown(state)]
    if not isinstance(workers, list) or not all(isinstance(w, dict) for w in workers):
        raise SparkError("workers must be a list of {host, port, gpus}, got %s" % shown(workers))
    alive = {}
    for worker in state["workers"]:
        if isinstance(worker, dict) and worker.get("state") == "ALIVE":
            alive["%s:%s" % (worker.get("host"), worker.get("port"))] = worker
    problems = []
    for expected in workers:
        key = "%s:%s" % (expected.get("host"), expected.get("port"))
        found = alive.get(key)
        if found is None:
            problems.append("the worker %s is not alive there" % key)
            continue
        resources = found.get("resources") if isinstance(found.get("resources"), dict) else {}
        gpu = resources.get("gpu") if isinstance(resources.get("gpu"), dict) else {}
        addresses = sorted(str(a) for a in gpu.get("addresses") or [])
        wanted = sorted(str(a) for a in expected.get("gpus") or [])
        if addresses != wanted:
            problems.append("the worker %s offers the GPUs %s, not %s" % (key, addresses or "none", wanted))
    return problems


class FilterModule:
    def filters(self):
        return {"_spark_problems": spark_problems, "_spark_discovery_problems": spark_discovery_problems,
                "_spark_cluster_problems": spark_cluster_problems}
