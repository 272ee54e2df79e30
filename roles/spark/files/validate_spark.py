"""The spark role's validation (tasks_from: validate, and playbooks/validate.yml): a PySpark job whose tasks each
report the GPUs Spark gave them, run on the master with spark-submit:
    spark-submit validate_spark.py APP_NAME TASKS MASTER_JSON_URL

Each task holds its GPU for two seconds, so that the tasks of one executor run side by side, and reports the worker
it ran on (the --worker-url of the executor that runs it, read from the process tree), its GPU addresses and when it
ran. The driver then compares them with the master's own view of the workers (its web UI's JSON) and prints one line,
GPU-CHECK {...}: every task got the GPUs its amount asks (spark.task.resource.gpu.amount: that many, or one shared GPU
for a fraction), GPUs of its own worker, and, where a task takes whole GPUs, no two tasks that ran at the same time on
one worker shared one.
"""

import json
import os
import sys
import time
import urllib.request

from pyspark import TaskContext
from pyspark.sql import SparkSession


def worker_url():
    """The --worker-url of the executor above this Python process (daemon, then the executor's JVM)."""
    pid = os.getpid()
    for _level in range(6):
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            argv = handle.read().decode().split("\0")
        if "--worker-url" in argv:
            return argv[argv.index("--worker-url") + 1]
        with open("/proc/%d/stat" % pid, encoding="utf-8") as handle:
            pid = int(handle.read().rsplit(")", 1)[1].split()[1])
    return None


def task(index):
    start = time.time()
    time.sleep(2)
    return {"task": index, "worker": worker_url(), "gpus": sorted(TaskContext.get().resources()["gpu"].addresses),
            "start": start, "end": time.time()}


def problems(records, state, amount=1.0):
    found = []
    wanted = max(1, int(amount))
    offered = {}
    for worker in state["workers"]:
        if worker["state"] == "ALIVE":
            # A worker that offers no GPU (one started outside the role) has no resource gpu: none of its tasks can
            # pass, which the checks below say, rather than the job ending on a KeyError.
            offered["spark://Worker@%s:%s" % (worker["host"], worker["port"])] = set(
                worker.get("resources", {}).get("gpu", {}).get("addresses", []))
    for record in records:
        if len(record["gpus"]) != wanted:
            found.append("task %d got the GPUs %s, not %d" % (record["task"], record["gpus"], wanted))
        if record["worker"] not in offered:
            found.append("task %d ran on %s, not a worker of the master" % (record["task"], record["worker"]))
        elif not set(record["gpus"]) <= offered[record["worker"]]:
            found.append("task %d got %s, not a GPU of its worker %s"
                         % (record["task"], record["gpus"], record["worker"]))
    overlaps = 0
    for first in records:
        for second in records:
            if first["task"] < second["task"] and first["worker"] == second["worker"] \
                    and first["start"] < second["end"] and second["start"] < first["end"]:
                overlaps += 1
                if amount >= 1 and set(first["gpus"]) & set(second["gpus"]):
                    found.append("tasks %d and %d ran at the same time on %s with the same GPU %s"
                                 % (first["task"], second["task"], first["worker"], first["gpus"]))
    return found, overlaps


def main():
    name, tasks, state_url = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    spark = SparkSession.builder.appName(name).getOrCreate()
    amount = float(spark.sparkContext.getConf().get("spark.task.resource.gpu.amount", "1"))
    records = spark.sparkContext.parallelize(range(tasks), tasks).map(task).collect()
    with urllib.request.urlopen(state_url, timeout=10) as answer:
        state = json.load(answer)
    found, overlaps = problems(records, state, amount)
    per_worker = {}
    for record in records:
        per_worker[record["worker"]] = per_worker.get(record["worker"], 0) + 1
    print("GPU-CHECK " + json.dumps({"problems": found, "tasks": len(records), "overlaps": overlaps,
                                     "per_worker": per_worker, "records": records}))
    spark.stop()


if __name__ == "__main__":
    main()
