# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.gpu_waste_model; its code is in plugin_utils/_gpu_waste_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpu_waste_model
short_description: GPU-hours allocated, used and idle per Slurm job, user and account, from sacct
version_added: 0.1.0
description:
  - Reads what C(sacct --allusers --parsable2 --noheader --noconvert --starttime START --endtime END --format
    JobID,User,Account,State,Start,End,ElapsedRaw,NTasks,AllocTRES,TRESUsageInAve) prints (steps included), run with
    C(TZ=UTC) and C(SLURM_TIME_FORMAT=standard) in its environment so that every time is UTC, and makes the model
    of the GPU waste report (JSON-serialisable) for P(accelops.gpu.gpu_waste_html#filter). It runs on the controller
    and reads only what it is given.
  - Per job with GPUs (C(gres/gpu=N) in the job line's C(AllocTRES)), C(gpu_hours) is N times the job's hours inside
    the window; a running job (no C(End)) counts up to the window's end or O(now), whichever is first. Jobs without
    GPUs are left out (counted in C(jobs_without_gpus)), and so are jobs on shards alone.
  - C(mean_utilization) is the mean SM utilisation per allocated GPU, in percent, over the job's whole run - the
    sum over its steps of C(gres/gpuutil) (the step's TRESUsageInAve, which Slurm keeps as the sum over the step's
    GPUs of each GPU's percent, averaged over its tasks) times the step's tasks times its C(ElapsedRaw), divided by
    N times the job's C(ElapsedRaw). Time in which no step ran counts as unused, since the GPUs were held. Above 100
    it is shown as 100 and C(utilization_capped) is true. C(gpu_hours_idle) is C(gpu_hours) times (1 - mean / 100).
  - A job none of whose steps records C(gres/gpuutil) (an accounting without Slurm's NVML plugin, or steps too short
    for a read) is not measured, C(measured) false with null C(mean_utilization) and C(gpu_hours_idle); its hours
    count in C(gpu_hours_not_measured), never as idle nor as busy.
  - A line that cannot be read (another number of fields, a job id that is not one, a count that is not a whole
    number or is larger than a real record holds, a time that is not one, an end before the start, a step without
    its job) is skipped and listed with the reason; a step skipped this way is counted in its job's C(steps_skipped).
positional: _input, start, end, now
options:
  _input:
    description: The standard output of the sacct command above.
    type: str
    required: true
  start:
    description: The window's start, UTC, as C(YYYY-MM-DD), C(YYYY-MM-DDTHH:MM) or C(YYYY-MM-DDTHH:MM:SS).
    type: str
    required: true
  end:
    description: The window's end, UTC, in the same form; after O(start).
    type: str
    required: true
  now:
    description: When sacct ran, UTC, in the same form; running jobs count up to it. Default O(end).
    type: str
seealso:
  - plugin: accelops.gpu.gpu_waste_html
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the jobs of the last day
  ansible.builtin.command:
    argv: [sacct, --allusers, --parsable2, --noheader, --noconvert, --starttime, 2026-12-01T00:00:00,
           --endtime, 2026-12-02T00:00:00, --format,
           "JobID,User,Account,State,Start,End,ElapsedRaw,NTasks,AllocTRES,TRESUsageInAve"]
  environment:
    TZ: UTC
    SLURM_TIME_FORMAT: standard
  register: jobs
  changed_when: false

# {"summary": {"jobs": 2, "gpu_hours": 8.0, "gpu_hours_idle": 6.4, "mean_utilization": 20.0, ...},
#  "jobs": [{"job": "102", "user": "bob", "gpus": 2, "gpu_hours": 4.0, "mean_utilization": 5.0, ...}, ...], ...}
- name: Make the model
  ansible.builtin.set_fact:
    waste: "{{ jobs.stdout | accelops.gpu.gpu_waste_model('2026-12-01T00:00:00', '2026-12-02T00:00:00') }}"
"""

RETURN = r"""
_value:
  description: The model of the report.
  type: dict
  contains:
    window:
      description: C(start), C(end), C(now) (UTC, C(YYYY-MM-DDTHH:MM:SS)), C(hours), C(timezone).
      type: dict
    source:
      description: C(command), the sacct command for this window; C(fields), the fields it asks for.
      type: dict
    summary:
      description:
        - C(jobs) (GPU jobs with time in the window), C(gpu_hours), C(gpu_hours_measured), C(gpu_hours_idle),
          C(gpu_hours_not_measured), C(jobs_not_measured), C(mean_utilization) (over the measured GPU-hours; null
          without any), C(users), C(accounts), C(jobs_running), C(jobs_without_gpus), C(jobs_outside_window) (GPU
          jobs with no time in the window), C(jobs_capped), C(lines), C(lines_skipped).
      type: dict
    jobs:
      description:
        - One per GPU job, most idle GPU-hours first (not measured last), with C(job), C(user), C(account),
          C(state), C(start), C(end) (null while running), C(running), C(gpus), C(elapsed_s), C(hours_in_window),
          C(gpu_hours), C(measured), C(mean_utilization), C(gpu_hours_idle), C(utilization_capped), C(steps),
          C(steps_measured), C(steps_skipped).
      type: list
      elements: dict
    users:
      description: Per user, most idle GPU-hours first, C(user) and the summary's C(jobs), C(gpu_hours),
        C(gpu_hours_measured), C(gpu_hours_idle), C(gpu_hours_not_measured), C(jobs_not_measured),
        C(mean_utilization).
      type: list
      elements: dict
    accounts:
      description: Per account, as RV(_value.users) with C(account).
      type: list
      elements: dict
    skipped:
      description: The first 50 lines skipped, each with C(line) (its number), C(reason) and C(text) (at most 200
        characters).
      type: list
      elements: dict
"""


def gpu_waste_model(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._gpu_waste_filters import (
        gpu_waste_model as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"gpu_waste_model": gpu_waste_model}
