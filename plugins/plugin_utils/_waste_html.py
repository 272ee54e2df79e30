# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the GPU waste report's model (_waste.py) as one self-contained HTML document,
through a Jinja2 template with autoescaping on (every user, account, job id and state from sacct is escaped)."""

from __future__ import annotations

import functools
import math

from jinja2 import Environment, StrictUndefined
from markupsafe import Markup

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import ReportError

TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{{ title }}</title><style>
*{box-sizing:border-box}
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;margin:0 auto;max-width:1400px;
padding:16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;border-bottom:1px solid #d0d7de;margin:24px 0 8px}
table{border-collapse:collapse;margin:4px 0 10px}
th,td{border:1px solid #d0d7de;padding:2px 6px;text-align:left;vertical-align:top}
td.r{text-align:right}th{background:#f6f8fa}
.m{color:#57606a}.na{color:#8c959f}.odd{color:#cf222e;font-weight:600}
.bar{display:inline-block;height:8px;background:#cf222e;vertical-align:middle;margin-left:4px}
@media print{body{max-width:none;padding:0;font-size:10px}*{-webkit-print-color-adjust:exact;print-color-adjust:exact}
h2{break-after:avoid}tr{break-inside:avoid}}
</style></head><body>
<h1>{{ title }}</h1>
<p class="m">Generated {{ generated_at }}. Window {{ model.window.start }} to {{ model.window.end }} UTC
({{ num(model.window.hours) }} hours), from Slurm's accounting (sacct).</p>
{%- macro util(value) -%}
{%- if value is none %}<span class="na">not measured</span>{% else %}{{ pct(value) }}{% endif -%}
{%- endmacro %}
{%- macro hours(value) -%}
{%- if value is none %}<span class="na">not measured</span>{% else %}{{ num(value) }}{% endif -%}
{%- endmacro %}
{%- set s = model.summary %}
<h2>Summary</h2>
<table><tr><th>GPU jobs</th><th>Users</th><th>Accounts</th><th>GPU-hours allocated</th><th>GPU-hours idle</th>
<th>Mean GPU utilisation</th><th>GPU-hours not measured</th><th>Running jobs</th></tr>
<tr><td class="r">{{ s.jobs }}</td><td class="r">{{ s.users }}</td><td class="r">{{ s.accounts }}</td>
<td class="r">{{ num(s.gpu_hours) }}</td><td class="r">{{ hours(s.gpu_hours_idle) }}</td>
<td class="r">{{ util(s.mean_utilization) }}</td><td class="r">{{ num(s.gpu_hours_not_measured) }}
({{ s.jobs_not_measured }} jobs)</td><td class="r">{{ s.jobs_running }}</td></tr></table>
<p class="m">Idle GPU-hours and the mean are over the measured GPU-hours only. A job is <em>not measured</em> where
Slurm recorded no GPU utilisation for any of its steps (no NVML plugin in the accounting, or steps too short for a
read): its hours are neither idle nor busy here. {{ s.jobs_without_gpus }} job(s) without GPUs left out;
{{ s.jobs_outside_window }} GPU job(s) without time in the window;
{{ s.lines_skipped }} of {{ s.lines }} line(s) of sacct skipped{% if s.jobs_capped %};
<span class="odd">{{ s.jobs_capped }} job(s) read above 100 % per GPU, shown as 100 %</span>{% endif %}.</p>
{%- for key, heading in (("account", "Accounts"), ("user", "Users")) %}
<h2>{{ heading }}, most idle GPU-hours first</h2>
{%- set rows = model[key ~ "s"] %}
{%- if rows %}
<table><tr><th>{{ key | capitalize }}</th><th>Jobs</th><th>GPU-hours</th><th>GPU-hours idle</th>
<th>Mean utilisation</th><th>GPU-hours not measured</th></tr>
{%- for row in rows %}
<tr><td>{{ row[key] if row[key] else "(none)" }}</td><td class="r">{{ row.jobs }}</td>
<td class="r">{{ num(row.gpu_hours) }}</td>
<td class="r">{{ hours(row.gpu_hours_idle) }}{{ bar(row.gpu_hours_idle, s.gpu_hours_idle) }}</td>
<td class="r">{{ util(row.mean_utilization) }}</td><td class="r">{{ num(row.gpu_hours_not_measured) }}</td></tr>
{%- endfor %}
</table>
{%- else %}<p>No GPU job in the window.</p>{% endif %}
{%- endfor %}
<h2>Jobs, most idle GPU-hours first</h2>
{%- if model.jobs %}
<table><tr><th>Job</th><th>User</th><th>Account</th><th>State</th><th>Start</th><th>End</th><th>GPUs</th>
<th>Hours in window</th><th>GPU-hours</th><th>Mean utilisation</th><th>GPU-hours idle</th></tr>
{%- for job in model.jobs %}
<tr><td>{{ job.job }}</td><td>{{ job.user }}</td><td>{{ job.account }}</td><td>{{ job.state }}</td>
<td>{{ job.start }}</td><td>{{ job.end if job.end else "running" }}</td><td class="r">{{ job.gpus }}</td>
<td class="r">{{ num(job.hours_in_window) }}</td><td class="r">{{ num(job.gpu_hours) }}</td>
<td class="r">{{ util(job.mean_utilization) }}
{%- if job.utilization_capped %} <span class="odd">(capped)</span>{% endif %}</td>
<td class="r">{{ hours(job.gpu_hours_idle) }}</td></tr>
{%- endfor %}
</table>
{%- else %}<p>No GPU job in the window.</p>{% endif %}
{%- if model.skipped %}
<h2>Lines of sacct skipped</h2>
<table><tr><th>Line</th><th>Why</th><th>Text</th></tr>
{%- for skip in model.skipped %}
<tr><td class="r">{{ skip.line }}</td><td>{{ skip.reason }}</td><td><code>{{ skip.text }}</code></td></tr>
{%- endfor %}
</table>
{%- endif %}
<h2>How the figures are made</h2>
<p class="m">GPU-hours: the GPUs of the job (<code>gres/gpu</code> in AllocTRES) times its hours inside the window
(a running job up to the window's end or the time of the report). Mean utilisation per GPU: each step's
<code>gres/gpuutil</code> (TRESUsageInAve, the sum over its GPUs) times its tasks and its elapsed time, summed over
the steps, divided by the job's GPUs and its elapsed time; time in which no step ran counts as unused. Idle GPU-hours:
GPU-hours times (1 - mean / 100). Command: <code>{{ model.source.command }}</code></p>
</body></html>
"""


@functools.lru_cache(maxsize=None)
def _template():
    """The template, compiled once per process."""
    env = Environment(autoescape=True, undefined=StrictUndefined)
    env.globals.update(num=_num, pct=_pct, bar=_bar)
    return env.from_string(TEMPLATE)


def _finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _num(value):
    return f"{value:,.2f}" if _finite(value) else "n/a"


def _pct(value):
    return "%.1f %%" % value if _finite(value) else "n/a"


def _bar(value, total):
    """A bar beside a figure, its share of the total; its width is a number the code makes, never input text."""
    if not (_finite(value) and _finite(total)) or total <= 0 or value <= 0:
        return ""
    return Markup('<span class="bar" style="width:%dpx"></span>' % max(1, round(120 * min(value / total, 1.0))))


def render_html(model, title, generated_at):
    """The model as one self-contained HTML document: inline CSS, no script, no external resource."""
    keys = ("window", "source", "summary", "jobs", "users", "accounts", "skipped")
    if not isinstance(model, dict) or any(key not in model for key in keys):
        raise ReportError("the model must be what gpu_waste_model returns (a dict with %s)" % ", ".join(keys))
    return _template().render(model=model, title=str(title), generated_at=str(generated_at))
