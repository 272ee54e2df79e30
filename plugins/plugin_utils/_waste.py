# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the GPU waste report's model, from Slurm's accounting (sacct).

The input is what this command prints (SACCT_ARGV, with TZ=UTC and SLURM_TIME_FORMAT=standard in its environment, so
that every time is UTC in ISO form), steps included:

    sacct --allusers --parsable2 --noheader --noconvert --starttime S --endtime E
          --format JobID,User,Account,State,Start,End,ElapsedRaw,NTasks,AllocTRES,TRESUsageInAve

Per job with GPUs (``gres/gpu=N`` in the job line's AllocTRES):
- GPU-hours allocated: N x the hours of the job that lie inside the window (a running job up to the window's end or
  now, whichever comes first);
- mean utilisation per allocated GPU, in percent: the sum over the job's steps of the step's gpuutil (Slurm's
  ``gres/gpuutil`` in TRESUsageInAve is the average over the step's tasks of each task's sum over GPUs of each GPU's
  SM percent: times NTasks it is the step's sum over its GPUs) times the step's ElapsedRaw, divided by N times the
  job's ElapsedRaw. Time in which no step ran counts as unused: the GPUs were held. The same mean is applied to the
  part of the job inside the window;
- GPU-hours idle: allocated x (1 - mean / 100).
A job none of whose steps records ``gres/gpuutil`` (an accounting without Slurm's NVML plugin, or a step that ended
before the first read) is "not measured": its utilisation and idle hours are null, its GPU-hours are counted apart,
never as 0 % used nor as busy. Lines that cannot be read are skipped and counted with the reason; nothing raises but
ReportError, for input that is not sacct's text at all or a window that is not one.
"""

from __future__ import annotations

import datetime
import re

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import ReportError

FIELDS = ("JobID", "User", "Account", "State", "Start", "End", "ElapsedRaw", "NTasks", "AllocTRES", "TRESUsageInAve")
SACCT_ARGV = ("sacct", "--allusers", "--parsable2", "--noheader", "--noconvert")
SACCT_FORMAT = ",".join(FIELDS)
# A window's bound and sacct's times (SLURM_TIME_FORMAT=standard): UTC, to the second.
TIME = re.compile(r"\A(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2}))?)?\Z")
# A job id as sacct prints it: digits, an array task (_N or _[...]) or a heterogeneous component (+N); a step adds
# .NAME (0, 1, batch, extern, interactive).
JOB_ID = re.compile(r"\A(\d{1,12}(?:_\d{1,12}|_\[[0-9,\-%:]{1,200}\])?(?:\+\d{1,6})?)(?:\.([A-Za-z0-9_+\-]{1,64}))?\Z")
COUNT = re.compile(r"\A\d{1,12}\Z")
# Bounds past which a figure is not a record of a real cluster but a corrupt one: the line is skipped.
MAX_GPUS = 1000000
MAX_SECONDS = 100 * 366 * 86400
MAX_TASKS = 10000000
# Skipped lines kept in the model with their text (all are counted).
SKIPPED_KEPT = 50
LINE_SHOWN = 200
UNKNOWN_TIMES = ("", "Unknown", "None", "N/A")


def parse_time(text, what):
    """A UTC time of the form YYYY-MM-DD[THH:MM[:SS]] as a datetime; ReportError naming ``what`` otherwise."""
    if isinstance(text, datetime.datetime):
        return text.replace(tzinfo=None)
    match = TIME.match(text) if isinstance(text, str) else None
    if not match:
        raise ReportError("%s must be a UTC time YYYY-MM-DD, YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS, got %s"
                          % (what, _shown(text)))
    try:
        return datetime.datetime(*(int(part or 0) for part in match.groups()))
    except ValueError as raised:
        raise ReportError("%s is not a date: %s (%s)" % (what, _shown(text), raised)) from None


def sacct_argv(start, end):
    """The sacct command (a list) that this model reads, for the window [start, end) given as UTC times."""
    return [*SACCT_ARGV, "--starttime", _iso(parse_time(start, "start")), "--endtime",
            _iso(parse_time(end, "end")), "--format", SACCT_FORMAT]


MAX_DAYS = 3660


def window(now, start="", end="", days=7):
    """The report's window from the variables: ``end`` (default ``now``, the Slurm controller's clock) and ``start``
    (default ``days`` before the end), each a UTC time; with the sacct command that reads it. ReportError names the
    variable that cannot be taken."""
    now = parse_time(now, "now (the Slurm controller's clock)")
    end = parse_time(end, "accelops_gpu_waste_end") if end not in (None, "") else now
    if start not in (None, ""):
        start = parse_time(start, "accelops_gpu_waste_start")
    else:
        if isinstance(days, bool) or not isinstance(days, (int, str)) or not COUNT.match(str(days)) \
                or not 1 <= int(days) <= MAX_DAYS:
            raise ReportError("accelops_gpu_waste_days must be a whole number of days from 1 to %d, got %s"
                              % (MAX_DAYS, _shown(days)))
        start = end - datetime.timedelta(days=int(days))
    if end <= start:
        raise ReportError("the window's end (accelops_gpu_waste_end, %s) must come after its start "
                          "(accelops_gpu_waste_start, %s)" % (_iso(end), _iso(start)))
    return {"start": _iso(start), "end": _iso(end), "now": _iso(now), "argv": sacct_argv(start, end)}


def _iso(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def _shown(value):
    """A value in a message: a string shortened and quoted, anything else by its type (an int of 5,000 digits cannot
    even be printed)."""
    if not isinstance(value, str):
        return "a value of type %s" % type(value).__name__
    return repr(value if len(value) <= LINE_SHOWN else value[:LINE_SHOWN] + "...")


def _tres(text):
    """A TRES list (k=v,k=v) as a dict of its keys to their text; None where it is not one."""
    if text == "":
        return {}
    out = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key or key in out:
            return None
        out[key] = value
    return out


class _Skip(Exception):
    """A line that cannot be read; the message says why."""


def _count(text, what, limit):
    if not COUNT.match(text):
        raise _Skip("%s is not a whole number: %s" % (what, _shown(text)))
    value = int(text)
    if value > limit:
        raise _Skip("%s is %d, more than a real record holds (%d)" % (what, value, limit))
    return value


def _when(text, what):
    if text in UNKNOWN_TIMES:
        return None
    match = TIME.match(text)
    if not match or match.group(4) is None:
        raise _Skip("%s is not a time: %s" % (what, _shown(text)))
    try:
        return datetime.datetime(*(int(part or 0) for part in match.groups()))
    except ValueError:
        raise _Skip("%s is not a time: %s" % (what, _shown(text))) from None


def _read(stdout):
    """(jobs by id in order, skipped lines, lines read) from sacct's text."""
    jobs, skipped, count = {}, [], 0
    for number, line in enumerate(stdout.split("\n"), 1):
        if not line.strip():
            continue
        count += 1
        try:
            _read_line(line, jobs)
        except _Skip as raised:
            skipped.append({"line": number, "reason": str(raised), "text": line[:LINE_SHOWN]})
    return jobs, skipped, count


def _read_line(line, jobs):
    fields = line.split("|")
    if len(fields) != len(FIELDS):
        raise _Skip("%d fields, not the %d of %s" % (len(fields), len(FIELDS), SACCT_FORMAT))
    row = dict(zip(FIELDS, fields))
    match = JOB_ID.match(row["JobID"])
    if not match:
        raise _Skip("JobID is not a Slurm job or step id: %s" % _shown(row["JobID"]))
    job_id, step = match.groups()
    elapsed = _count(row["ElapsedRaw"], "ElapsedRaw", MAX_SECONDS)
    if step is None:
        if job_id in jobs:
            raise _Skip("job %s is listed twice" % job_id)
        alloc = _tres(row["AllocTRES"])
        if alloc is None:
            raise _Skip("AllocTRES is not a TRES list: %s" % _shown(row["AllocTRES"]))
        gpus = _count(alloc["gres/gpu"], "gres/gpu", MAX_GPUS) if "gres/gpu" in alloc else 0
        start, end = _when(row["Start"], "Start"), _when(row["End"], "End")
        if start is not None and end is not None and end < start:
            raise _Skip("End %s is before Start %s" % (row["End"], row["Start"]))
        jobs[job_id] = {"job": job_id, "user": row["User"], "account": row["Account"], "state": row["State"],
                        "start": start, "end": end, "elapsed_s": elapsed, "gpus": gpus, "steps": [],
                        "steps_skipped": 0}
        return
    job = jobs.get(job_id)
    if job is None:
        raise _Skip("step %s.%s comes without its job's line" % (job_id, step))
    try:
        usage = _tres(row["TRESUsageInAve"])
        if usage is None:
            raise _Skip("TRESUsageInAve is not a TRES list: %s" % _shown(row["TRESUsageInAve"]))
        util = _count(usage["gres/gpuutil"], "gres/gpuutil", 100 * MAX_GPUS) if "gres/gpuutil" in usage else None
        tasks = _count(row["NTasks"], "NTasks", MAX_TASKS) if row["NTasks"] else 1
    except _Skip:
        job["steps_skipped"] += 1
        raise
    job["steps"].append({"step": step, "elapsed_s": elapsed, "gpuutil": util, "tasks": max(tasks, 1)})


def _hours_in(job, start, end, now):
    """Seconds of the job inside [start, end); a running job (no End) up to the window's end or now."""
    if job["start"] is None:
        return 0.0
    job_end = job["end"] if job["end"] is not None else min(end, now)
    return max(0.0, (min(job_end, end) - max(job["start"], start)).total_seconds())


def _job(job, start, end, now):
    seconds = _hours_in(job, start, end, now)
    gpu_hours = job["gpus"] * seconds / 3600.0
    measured = [step for step in job["steps"] if step["gpuutil"] is not None]
    mean = idle = None
    capped = False
    if measured:
        if job["elapsed_s"] > 0:
            used = sum(step["gpuutil"] * step["tasks"] * step["elapsed_s"] for step in measured)
            mean = used / float(job["gpus"] * job["elapsed_s"])
        else:
            mean = 0.0
        # More than 100 % per GPU is no real reading (tasks that share GPUs, a corrupt record): shown as 100, said.
        if mean > 100.0:
            mean, capped = 100.0, True
        idle = gpu_hours * (1.0 - mean / 100.0)
    return {
        "job": job["job"], "user": job["user"], "account": job["account"], "state": job["state"],
        "start": _iso(job["start"]) if job["start"] else None, "end": _iso(job["end"]) if job["end"] else None,
        "running": job["start"] is not None and job["end"] is None,
        "gpus": job["gpus"], "elapsed_s": job["elapsed_s"], "hours_in_window": seconds / 3600.0,
        "gpu_hours": gpu_hours, "measured": bool(measured),
        "mean_utilization": mean, "gpu_hours_idle": idle, "utilization_capped": capped,
        "steps": len(job["steps"]), "steps_measured": len(measured), "steps_skipped": job["steps_skipped"],
    }


def _group(records, key):
    groups = {}
    for record in records:
        name = record[key]
        entry = groups.setdefault(name, {key: name, "jobs": 0, "gpu_hours": 0.0, "gpu_hours_measured": 0.0,
                                         "gpu_hours_idle": 0.0, "gpu_hours_not_measured": 0.0,
                                         "jobs_not_measured": 0})
        _add(entry, record)
    return sorted((_finish(entry) for entry in groups.values()),
                  key=lambda e: (e["gpu_hours_idle"] is None, -(e["gpu_hours_idle"] or 0.0), -e["gpu_hours"],
                                 str(e[key])))


def _add(entry, record):
    entry["jobs"] += 1
    entry["gpu_hours"] += record["gpu_hours"]
    if record["measured"]:
        entry["gpu_hours_measured"] += record["gpu_hours"]
        entry["gpu_hours_idle"] += record["gpu_hours_idle"]
    else:
        entry["gpu_hours_not_measured"] += record["gpu_hours"]
        entry["jobs_not_measured"] += 1


def _finish(entry):
    """A group's mean utilisation over its measured GPU-hours (null without any), and its figures rounded."""
    measured = entry["gpu_hours_measured"]
    entry["mean_utilization"] = 100.0 * (1.0 - entry["gpu_hours_idle"] / measured) if measured > 0 else None
    if entry["jobs_not_measured"] == entry["jobs"] and entry["jobs"]:
        entry["gpu_hours_idle"] = None  # nothing measured: not "nothing idle"
    return _rounded(entry)


def _rounded(entry):
    for key, value in entry.items():
        if isinstance(value, float):
            entry[key] = round(value, 2 if key == "mean_utilization" else 4)
    return entry


def waste_model(stdout, start, end, now=None):
    """The GPU waste report's model from sacct's text (see the module's docstring) for the window [start, end) in
    UTC; ``now`` (UTC, when sacct ran; default: the end) bounds the jobs still running."""
    if not isinstance(stdout, str):
        raise ReportError("the input must be sacct's text (a string), got %s" % type(stdout).__name__)
    start, end = parse_time(start, "start"), parse_time(end, "end")
    now = parse_time(now, "now") if now not in (None, "") else end
    if end <= start:
        raise ReportError("the window's end (%s) must come after its start (%s)" % (_iso(end), _iso(start)))
    jobs, skipped, lines = _read(stdout)
    with_gpus = [job for job in jobs.values() if job["gpus"] > 0]
    records = [_job(job, start, end, now) for job in with_gpus]
    records = [record for record in records if record["gpu_hours"] > 0 or record["running"]]
    total = {"jobs": 0, "gpu_hours": 0.0, "gpu_hours_measured": 0.0, "gpu_hours_idle": 0.0,
             "gpu_hours_not_measured": 0.0, "jobs_not_measured": 0}
    for record in records:
        _add(total, record)
    users = _group(records, "user")
    accounts = _group(records, "account")
    records.sort(key=lambda r: (r["gpu_hours_idle"] is None, -(r["gpu_hours_idle"] or 0.0), -r["gpu_hours"],
                                r["job"]))
    summary = _finish(total)
    summary.update({
        "users": len(users), "accounts": len(accounts),
        "jobs_running": sum(1 for record in records if record["running"]),
        "jobs_without_gpus": sum(1 for job in jobs.values() if job["gpus"] == 0),
        "jobs_outside_window": len(with_gpus) - len(records),
        "jobs_capped": sum(1 for record in records if record["utilization_capped"]),
        "lines": lines, "lines_skipped": len(skipped),
    })
    return {
        "window": {"start": _iso(start), "end": _iso(end), "now": _iso(now), "hours": (end - start).total_seconds()
                   / 3600.0, "timezone": "UTC"},
        "source": {"command": " ".join(sacct_argv(start, end)), "fields": list(FIELDS)},
        "summary": summary,
        "jobs": [_rounded(record) for record in records],
        "users": users,
        "accounts": accounts,
        "skipped": skipped[:SKIPPED_KEPT],
    }
