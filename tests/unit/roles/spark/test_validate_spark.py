"""The spark role's validation job (roles/spark/files/validate_spark.py): its comparison of the tasks' records with the
master's JSON, called directly, with pyspark stood in for (the job itself runs in the molecule scenario spark)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import types

ROOT = pathlib.Path(__file__).resolve().parents[4]


def load():
    stubs = {"pyspark": types.ModuleType("pyspark"), "pyspark.sql": types.ModuleType("pyspark.sql")}
    stubs["pyspark"].TaskContext = object
    stubs["pyspark.sql"].SparkSession = object
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        spec = importlib.util.spec_from_file_location("validate_spark", ROOT / "roles/spark/files/validate_spark.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for name, old in saved.items():
            if old is None:
                del sys.modules[name]
            else:
                sys.modules[name] = old
    return module


def worker(host, gpus=None, state="ALIVE"):
    found = {"host": host, "port": 7078, "state": state, "resources": {}}
    if gpus is not None:
        found["resources"]["gpu"] = {"name": "gpu", "addresses": gpus}
    return found


def test_tasks_on_their_workers_gpus_pass():
    state = {"workers": [worker("10.0.0.1", ["0", "1"])]}
    records = [{"task": 0, "worker": "spark://Worker@10.0.0.1:7078", "gpus": ["0"], "start": 0, "end": 2},
               {"task": 1, "worker": "spark://Worker@10.0.0.1:7078", "gpus": ["1"], "start": 0, "end": 2}]
    assert load().problems(records, state) == ([], 1)


def test_a_worker_without_gpus_is_a_problem_not_a_crash():
    state = {"workers": [worker("10.0.0.1", ["0"]), worker("10.0.0.2")]}
    records = [{"task": 0, "worker": "spark://Worker@10.0.0.2:7078", "gpus": ["0"], "start": 0, "end": 2}]
    found, overlaps = load().problems(records, state)
    assert found == ["task 0 got ['0'], not a GPU of its worker spark://Worker@10.0.0.2:7078"]
    assert overlaps == 0
