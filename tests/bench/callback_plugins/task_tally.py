"""Tally of a run for the benchmarks: per host and role, the tasks that ran, changed or were skipped, and the seconds
they took, written as JSON to the file named by ACCELOPS_TASK_TALLY when the run ends; beside it, in that name with
".tasks" added, each task's own record (host, role, name, action, file and line, outcome, seconds)."""

from __future__ import annotations

import collections
import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: task_tally
type: aggregate
short_description: per role tally of tasks and their time, as JSON, for tests/bench
description: Enabled by tests/bench/site_rerun.py; writes ACCELOPS_TASK_TALLY when the run ends.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_tally"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._started = {}
        self._tasks = []
        self._tally = collections.defaultdict(
            lambda: {"ok": 0, "changed": 0, "skipped": 0, "failed": 0, "seconds": 0.0, "actions": {}})

    @staticmethod
    def _role(task):
        role = task._role  # pylint: disable=protected-access
        return role.get_name() if role else "(play)"

    def v2_runner_on_start(self, host, task):
        self._started[(host.get_name(), task._uuid)] = time.monotonic()  # pylint: disable=protected-access

    def _record(self, result, outcome):
        task, host = result._task, result._host.get_name()  # pylint: disable=protected-access
        start = self._started.pop((host, task._uuid), None)  # pylint: disable=protected-access
        entry = self._tally[(host, self._role(task))]
        entry[outcome] += 1
        if outcome == "ok" and result._result.get("changed"):  # pylint: disable=protected-access
            entry["changed"] += 1
        if start is not None:
            entry["seconds"] += time.monotonic() - start
            self._tasks.append({"host": host, "role": self._role(task), "task": task.get_name(),
                                "action": task.action, "path": task.get_path(), "outcome": outcome,
                                "seconds": round(time.monotonic() - start, 3)})
        if outcome != "skipped":
            entry["actions"][task.action] = entry["actions"].get(task.action, 0) + 1

    def v2_runner_on_ok(self, result):
        self._record(result, "ok")

    def v2_runner_on_skipped(self, result):
        self._record(result, "skipped")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, "failed")

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("ACCELOPS_TASK_TALLY")
        if not path:
            return
        rows = [dict(host=host, role=role, **entry) for (host, role), entry in self._tally.items()]
        with open(path, "w", encoding="utf-8") as out:
            json.dump(rows, out, indent=1)
        with open(path + ".tasks", "w", encoding="utf-8") as out:
            json.dump(self._tasks, out, indent=1)
