# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the GPU fleet report's model (_report_model.py) as one self-contained HTML
document, through a Jinja2 template with autoescaping on (every value from the nodes is escaped). The model says what
to show; the template, how. The template is written one element or block tag per line, and its lines are joined
without what separates them, so that the page carries no whitespace between its elements."""

from __future__ import annotations

import functools
import re

from jinja2 import Environment, StrictUndefined
from markupsafe import Markup, escape

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import ReportError
from ansible_collections.accelops.gpu.plugins.plugin_utils._report_model import RANK, STATUSES, finite

# Status colours; the status is always written out beside its colour.
STATUS_COLOURS = {"ok": "#1a7f37", "unknown": "#6e7781", "warning": "#9a6700", "critical": "#cf222e"}
# Topology heat map, nearest first: NVLink, one PCIe switch, several, the host bridge, the NUMA node, across sockets.
TOPOLOGY_COLOURS = (("NV", "#1a9850"), ("PIX", "#91cf60"), ("PXB", "#d9ef8b"), ("PHB", "#fee08b"),
                    ("NODE", "#fc8d59"), ("SYS", "#d73027"))
TOPOLOGY_SELF = "#d0d7de"
TOPOLOGY_UNKNOWN = "#ffffff"
TOPOLOGY_MEANINGS = (("X", "the GPU itself"), ("NV<n>", "n NVLinks, directly or through NVSwitch"),
                     ("PIX", "at most one PCIe switch"), ("PXB", "several PCIe switches, no host bridge"),
                     ("PHB", "through a PCIe host bridge"), ("NODE", "across host bridges of one NUMA node"),
                     ("SYS", "across NUMA nodes (the CPU interconnect)"), ("?", "unknown"))
CELL = 38

CSS = """
*{box-sizing:border-box}
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;margin:0 auto;max-width:1400px;
padding:16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;border-bottom:1px solid #d0d7de;margin:24px 0 8px}
h3{font-size:15px;margin:0 0 6px}
table{border-collapse:collapse;margin:4px 0 10px}
th,td{border:1px solid #d0d7de;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
.b{display:inline-block;min-width:70px;padding:0 4px;border-radius:3px;color:#fff;font-weight:600;text-align:center;
font-size:11px}
.n{border:1px solid #d0d7de;border-left-width:6px;border-radius:4px;padding:8px 10px;margin:10px 0}
.m{color:#57606a}.na{color:#8c959f}
.odd{color:#cf222e;font-weight:600}
ul{margin:2px 0 8px;padding-left:20px}
@media print{
body{max-width:none;padding:0;font-size:10px}
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}
a{color:inherit;text-decoration:none}
.n{break-inside:avoid}h2{break-after:avoid}
}
""" + "".join(".b.%s{background:%s}.n.%s{border-left-color:%s}\n" % (status, colour, status, colour)
              for status, colour in STATUS_COLOURS.items())


# Helpers the template calls for every value (functions, not macros: a page of 4,000 GPUs calls them 100,000 times):
# a value escaped or n/a, a number formatted, a status badge; and the colour of a topology cell (a colour the code
# picks, never input text).
NOT_AVAILABLE = Markup('<span class="na">n/a</span>')


def _value(value):
    """A value from the facts as HTML text; None as n/a."""
    return NOT_AVAILABLE if value is None else escape(value)


def _number(value, fmt="%g"):
    """A finite number formatted, else the value as _value shows it."""
    return _value(fmt % value if finite(value) else value)


def _badge(status):
    status = status if status in RANK else "unknown"
    return Markup('<span class="b %s">%s</span>') % (status, status.upper())


def _topology_colour(label):
    if label == "X":
        return TOPOLOGY_SELF
    for prefix, colour in TOPOLOGY_COLOURS:
        if isinstance(label, str) and (label == prefix or (prefix == "NV" and re.match(r"\ANV[0-9]+\Z", label))):
            return colour
    return TOPOLOGY_UNKNOWN


def _cell(value):
    """A coordinate of the heat map as the old printf %d wrote it."""
    return "%d" % value


TEMPLATE = r"""
{%- macro pair(current, limit, unit, fmt="%g") %}
{%- if current is none and limit is none %}{{ e(none) }}
{%- else %}{{ n(current, fmt) }} / {{ n(limit, fmt) }} {{ unit }}{% endif %}
{%- endmacro %}
{%- macro ecc(gpu) %}
{%- set errors = gpu.ecc_errors or {} %}
{%- set volatile = (errors.get("volatile") or {}).get("uncorrected") %}
{%- set aggregate = (errors.get("aggregate") or {}).get("uncorrected") %}
{%- if gpu.ecc_enabled is false %}off
{%- elif gpu.ecc_enabled is none and volatile is none and aggregate is none %}{{ e(none) }}
{%- elif volatile or aggregate %}<span class="odd">{{ n(volatile) }} / {{ n(aggregate) }}</span>
{%- else %}{{ n(volatile) }} / {{ n(aggregate) }}{% endif %}
{%- endmacro %}
{%- macro rows(gpu) %}
{%- set r = gpu.remapped_rows %}
{%- if r is not mapping %}{{ e(none) }}
{%- else %}{{ n(r.get("correctable")) }} corr. {{ n(r.get("uncorrectable")) }} uncorr.
{%- if r.get("pending") %} <span class="odd">PENDING</span>{% endif %}
{%- if r.get("failure") %} <span class="odd">FAILURE</span>{% endif %}
{%- endif %}
{%- endmacro %}
{%- macro temperatures(gpu) %}
{%- set values = [gpu.temperature_c, gpu.temperature_slowdown_c, gpu.temperature_shutdown_c] %}
{%- if values | reject("none") | list | length == 0 %}
{{- e(none) }}
{%- else %}{{ n(gpu.temperature_c) }} / {{ n(gpu.temperature_slowdown_c) }} /
{{ space }}{{ n(gpu.temperature_shutdown_c) }} C{% endif %}
{%- endmacro %}
{%- macro nvlink(gpu) %}
{%- set link = gpu.nvlink %}
{%- if gpu.lost %}{{ e(none) }}{% elif not link %}none{% else %}{{ link.active }}/{{ link.total }} up
{%- if link.down and link.active %} <span class="odd">down: {{ link.down | join(", ") }}</span>{% endif %}
{%- endif %}
{%- endmacro %}
{%- macro pcie(gpu) %}
{%- set p = gpu.pcie %}
{%- if not p %}{{ e(none) }}{% else %}
{%- set text %}gen {{ n(p.get("gen_current")) }}/{{ n(p.get("gen_max")) }}
{{- " x" }}{{ n(p.get("width_current")) }}/{{ n(p.get("width_max")) }}{% endset %}
{%- if p.get("width_current") and p.get("width_max") and p.width_current < p.width_max %}
<span class="odd">{{ text }}</span>
{%- else %}{{ text }}{% endif %}
{%- endif %}
{%- endmacro %}
{%- macro node_link(name) %}
{%- if name in anchors %}<a href="#{{ anchors[name] }}">{{ name }}</a>{% else %}{{ e(name) }}{% endif %}
{%- endmacro %}
{%- macro member(m) %}
{{- node_link(m.node) }}{% if "gpu" in m %} GPU {{ e(m.gpu) }}{% elif "device" in m %} {{ e(m.device) }}{% endif %}
{%- endmacro %}
{%- macro symbol(ident, names, matrix) %}
{%- set size = (names | length + 1) * cell %}
<symbol id="{{ ident }}" viewBox="0 0 {{ size }} {{ size }}"><g font-family="monospace" font-size="10">
{%- for name in names %}
<text x="{{ px((loop.index0 + 1.5) * cell) }}" y="{{ px(cell * 0.6) }}" text-anchor="middle">{{ e(name) }}</text>
<text x="{{ px(cell / 2) }}" y="{{ px((loop.index0 + 1.6) * cell) }}" text-anchor="middle">{{ e(name) }}</text>
{%- endfor %}
{%- for row in matrix %}{% set i = loop.index0 %}
{%- for label in row %}{% set x = (loop.index0 + 1) * cell %}{% set y = (i + 1) * cell %}
<rect x="{{ x }}" y="{{ y }}" width="{{ cell }}" height="{{ cell }}" fill="{{ colour(label) }}" stroke="#fff"/>
<text x="{{ px(x + cell / 2) }}" y="{{ px(y + cell * 0.6) }}" text-anchor="middle">
{{- e(label if label is not none else "?") }}</text>
{%- endfor %}
{%- endfor %}
</g></symbol>
{%- endmacro %}
<!DOCTYPE html>{{ newline }}<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>{{ e(title) }}</title><style>{{ css }}</style>
</head><body><h1>{{ e(title) }}</h1><p class="m">Generated {{ e(generated_at) }}</p>
{%- set s = model.summary %}
<h2>Summary</h2><table><tr><th>Nodes</th><th>Reporting</th><th>Unreachable</th><th>Failed</th>
<th>GPUs</th><th>Drifting versions</th></tr><tr>
{%- for key in ("nodes", "reporting", "unreachable", "failed", "gpus", "drift_fields") %}
<td>{{ e(s.get(key)) }}</td>
{%- endfor %}
</tr></table>
<table><tr><th>Health</th><th>Nodes</th><th>GPUs</th></tr>
{%- for status in statuses | reverse %}
<tr><td>{{ badge(status) }}</td><td>{{ e(s.health.get(status)) }}</td><td>{{ e(s.gpu_health.get(status)) }}</td></tr>
{%- endfor %}
</table>
<table><tr><th>GPU model</th><th>GPUs</th><th>Nodes</th></tr>
{%- for m in s.gpu_models %}
<tr><td>{{ e(m.model or "unknown model") }}</td><td>{{ e(m.gpus) }}</td><td>{{ e(m.nodes) }}</td></tr>
{%- endfor %}
</table>
<h2>Findings, worst first</h2>
{%- if model.findings %}
<table><tr><th>Severity</th><th>Node</th><th>GPU</th><th>Code</th><th>Finding</th></tr>
{%- for f in model.findings %}
<tr><td>{{ badge(f.severity) }}</td><td>{{ node_link(f.node) }}</td>
<td>{% if f.gpu is not none %}{{ e(f.gpu) }}{% endif %}</td>
<td>{{ e(f.code) }}</td><td>{{ e(f.message) }}</td></tr>
{%- endfor %}
</table>
{%- else %}
<p>No findings.</p>
{%- endif %}
<h2>Version drift</h2><p class="m">Per GPU model and per HCA model, the value most have and the odd ones out.</p>
{%- for group in model.drift %}
<h3>{{ e(group.label) }}</h3><table><tr><th>Field</th><th>Majority</th><th>Odd ones out</th></tr>
{%- for field in group.fields %}
<tr><td>{{ e(field.label) }}</td><td>{{ e(field.majority) }} ({{ e(field.majority_count) }} of {{ e(field.total) }}
{{ space }}{{ e(field.unit ~ "s") }}{% if field.tie %}, a tie{% endif %})</td><td>
{%- for o in field.odd %}{% if not loop.first %}; {% endif %}<span class="odd">{{ e(o.value) }}</span> on
{{ space }}{% for m in o.members %}{% if not loop.first %}, {% endif %}{{ member(m) }}{% endfor %}
{%- else %}none: consistent{% endfor %}
</td></tr>
{%- endfor %}
</table>
{%- endfor %}
<h2>Unreachable and failed nodes</h2>
{%- set lost = model.unreachable | map("lost_entry", "unreachable") | list %}
{%- set lost = lost + model.failed | map("lost_entry", "failed") | list %}
{%- if lost %}
<table><tr><th>Node</th><th>What</th><th>Reason</th></tr>
{%- for what, entry in lost %}
<tr><td>{{ node_link(entry.name) }}</td><td>{{ what }}</td><td>{{ e(entry.reason) }}</td></tr>
{%- endfor %}
</table>
{%- else %}
<p>None.</p>
{%- endif %}
<h2>Nodes, worst first</h2><table><tr><th>Health</th><th>Node</th><th>GPUs</th><th>Model</th><th>Driver</th>
<th>Slurm</th></tr>
{%- for r in model.nodes %}
<tr><td>{{ badge(r.status) }}</td><td>{{ node_link(r.name) }}</td><td>{{ e(r.gpus | length) }}</td>
<td>{{ e(r.model) }}</td>
<td>{{ e(r.driver_version) }}</td>
<td>{% if r.slurm %}{{ e(r.slurm.state) }}{% else %}<span class="na">not in Slurm</span>{% endif %}</td></tr>
{%- endfor %}
</table>
{%- for record in model.nodes %}
<div class="n {{ record.status if record.status in rank else "unknown" }}" id="{{ anchors[record.name] }}">
<h3>{{ e(record.name) }} {{ badge(record.status) }}</h3>
{%- if record.facts %}
<p class="m">driver {{ e(record.driver_version) }}, CUDA {{ e(record.cuda_driver_version) }}, NVML
{{ space }}{{ e(record.nvml_version) }}, {{ e(record.gpu_count) }} GPU(s)
{%- if record.model %}, {{ e(record.model) }}{% endif %}</p>
{%- if not record.driver_loaded %}
<p>NVML not usable: {{ e(record.reason) }}</p>
{%- endif %}
{%- endif %}
{%- if record.versions %}
<p class="m">
{%- for k, v in record.versions.items() %}{% if not loop.first %}, {% endif %}{{ e(k) }} {{ e(v) }}{% endfor %}
</p>
{%- endif %}
{%- if record.slurm %}{% set reason = record.slurm.reason or record.slurm.get("problem") %}
<p>Slurm: {{ e(record.slurm.state) }}{% if reason %} ({{ e(reason) }}){% endif %}</p>
{%- endif %}
{%- set node_findings = record.findings | selectattr("gpu", "none") | list %}
{%- if node_findings %}
<ul>{% for f in node_findings %}<li>{{ badge(f.severity) }} {{ e(f.message) }}</li>{% endfor %}</ul>
{%- endif %}
{%- if record.gpus %}
{%- set same = record.gpus | map(attribute="name") | reject("none") | unique | list | length <= 1 %}
{%- set nearest = record.gpus | map(attribute="nearest_hca") | select | list | length > 0 %}
<table><tr><th>GPU</th>{% if not same %}<th>Model</th>{% endif %}<th>Health</th><th>Memory used/total</th>
<th>Power draw/limit</th><th>Temp now/slowdown/shutdown</th><th>ECC uncorr. volatile/aggregate</th>
<th>Remapped rows</th>
<th>NVLink</th><th>PCIe now/max</th><th>VBIOS</th>{% if nearest %}<th>Nearest HCA</th>{% endif %}</tr>
{%- for gpu in record.gpus %}
<tr><td>{{ e(gpu.index) }}{% if gpu.lost %} LOST{% endif %}</td>{% if not same %}<td>{{ e(gpu.name) }}</td>{% endif %}
<td>{{ badge(gpu.status) }} {{ e(gpu.status_text) }}</td>
<td>{{ pair(gpu.memory_used_mib, gpu.memory_total_mib, "MiB", "%d") }}</td>
<td>{{ pair(gpu.power_draw_w, gpu.power_limit_w, "W", "%.0f") }}</td><td>{{ temperatures(gpu) }}</td>
<td>{{ ecc(gpu) }}</td>
<td>{{ rows(gpu) }}</td><td>{{ nvlink(gpu) }}</td><td>{{ pcie(gpu) }}</td><td>{{ e(gpu.vbios_version) }}</td>
{%- if nearest %}{% set near = gpu.nearest_hca %}
<td>{% if near %}{{ e(near.devices | join(", ")) }} ({{ e(near.path) }}){% else %}{{ e(none) }}{% endif %}</td>
{%- endif %}
</tr>
{%- endfor %}
</table>
{%- endif %}
{%- if record.topology %}{% set size = (record.topology.gpus | length + 1) * cell %}
<svg width="{{ size }}" height="{{ size }}" role="img" aria-label="GPU topology heat map">
<use href="#{{ symbol_of(record.topology) }}"/></svg>
{%- endif %}
{%- if record.rdma is not none %}{% set rdma = record.rdma %}
{%- if not rdma.devices %}
<p>RDMA: no RDMA device.</p>
{%- else %}
<table><tr><th>RDMA device</th><th>HCA</th><th>Firmware</th><th>PCI</th><th>NUMA</th>
<th>Ports: state, physical state, rate, link layer</th></tr>
{%- for device in rdma.devices %}
<tr><td>{{ e(device.name) }}</td>
<td>{{ e(device.hca_type) }}{% if device.family %} {{ e(device.family) }}{% endif %}</td>
<td>{{ e(device.fw_ver) }}</td><td>{{ e(device.pci_bus_id) }}</td><td>{{ e(device.numa_node) }}</td><td>
{%- for p in device.ports %}{% if not loop.first %}; {% endif %}{{ e(p.port) }}:
{{ space }}{% if p.state == "ACTIVE" %}{{ e(p.state) }}
{%- else %}{{ e(p.state) }} (not active){% endif %}, {{ e(p.phys_state) }},
{{ space }}{% if p.state == "ACTIVE" %}{{ e(p.rate_gbps) }} Gb/s{% else %}no rate{% endif %}, {{ e(p.link_layer) }}
{%- else %}none{% endfor %}
</td></tr>
{%- endfor %}
</table><p>nvidia_peermem loaded: {{ e({true: "yes", false: "no"}.get(rdma.peermem_loaded)) }}</p>
{%- endif %}
{%- endif %}
{%- if record.validation %}
<table><tr><th>Framework</th><th>Measure</th><th>Measured</th><th>Nominal peak (not measured)</th>
<th>Measured / nominal</th></tr>
{%- for entry in record.validation %}
{%- set head %}{{ e(entry.framework) }} {{ e(entry.version) }}{% endset %}
{%- if entry.failure %}
<tr><td>{{ head }}</td><td colspan="4"><span class="b critical">FAILED</span> {{ e(entry.failure) }}</td></tr>
{%- endif %}
{%- for figure in entry.figures %}
<tr><td>{{ head }}</td><td>{{ e(figure.label) }}</td><td>{{ n(figure.measured) }} {{ e(figure.unit) }}</td><td>
{%- if figure.nominal %}{{ n(figure.nominal) }} {{ e(figure.unit) }} (nominal, {{ e(figure.nominal_basis) }})
{%- else %}<span class="na">no nominal figure for {{ e(entry.model or "this GPU") }}</span>{% endif %}</td>
<td>{% if figure.ratio is not none %}{{ "%.0f%%" | format(figure.ratio * 100) }}{% else %}{{ e(none) }}{% endif %}
</td></tr>
{%- endfor %}
{%- if not entry.failure and not entry.figures %}
<tr><td>{{ head }}</td><td colspan="4">{{ e(entry.statement) }}</td></tr>
{%- endif %}
{%- endfor %}
</table>
{%- endif %}
</div>
{%- endfor %}
<h2>Legend and nominal figures</h2><p>Health:
{{ space }}{{ badge("critical") }} a GPU or the node cannot be used, {{ badge("warning") }} degraded,
{{ space }}{{ badge("unknown") }} facts missing or incomplete, or the node was not reached,
{{ space }}{{ badge("ok") }} no findings.</p>
<p>Topology heat map, nearest first:
{{ space }}{% for label, text in meanings %}{% if not loop.first %}; {% endif %}{{ label }} {{ text }}{% endfor %}.</p>
{%- set nominal = model.nominal %}
{%- if nominal.get("models") %}
<p>Nominal figures are datasheet peaks (dense, TFLOP/s; NVLink GB/s per GPU and direction), not measurements.</p>
<table><tr><th>GPU model</th><th>FP32</th><th>TF32</th><th>BF16</th><th>FP16</th><th>NVLink</th><th>Source</th></tr>
{%- for m in nominal.models %}
<tr>{% for k in ("model", "fp32", "tf32", "bf16", "fp16", "nvlink_gbps", "source") %}<td>{{ e(m.get(k)) }}</td>
{%- endfor %}</tr>
{%- endfor %}
</table>
{%- endif %}
<p>PCIe ceilings per lane and direction (GB/s):
{{ space }}{% for k, v in (nominal.get("pcie_lane_gbps") or {}).items() | sort %}
{%- if not loop.first %}, {% endif %}gen {{ e(k) }} {{ e(v) }}{% endfor %}
{{ space }}({{ e(nominal.get("pcie_source")) }}).</p>
{%- if symbols %}
<svg width="0" height="0" style="position:absolute" aria-hidden="true">
{%- for ident, names, matrix in symbols %}{{ symbol(ident, names, matrix) }}{% endfor %}</svg>
{%- endif %}
</body></html>{{ newline }}
"""


@functools.lru_cache(maxsize=None)
def _template():
    """The template, compiled once per process, its lines joined without their breaks and indentation."""
    env = Environment(autoescape=True, undefined=StrictUndefined)
    env.filters["lost_entry"] = lambda entry, what: (what, entry)
    env.globals.update(e=_value, n=_number, badge=_badge, colour=_topology_colour, px=_cell, rank=RANK,
                       statuses=STATUSES, cell=CELL, meanings=TOPOLOGY_MEANINGS, css=Markup(CSS), newline=Markup("\n"),
                       space=Markup(" "))
    return env.from_string("".join(line.strip() for line in TEMPLATE.splitlines()))


def _check_model(model):
    keys = ("summary", "findings", "drift", "nodes", "unreachable", "failed", "nominal")
    if not isinstance(model, dict) or any(key not in model for key in keys):
        raise ReportError("the model must be what fleet_report_model returns (a dict with %s), got %s"
                          % (", ".join(keys), type(model).__name__ if not isinstance(model, dict)
                             else "a dict with %s" % ", ".join(sorted(str(k) for k in model))))


def render_html(model, title, generated_at):
    """The model as one self-contained HTML document: inline CSS and SVG, no script, no external resource."""
    _check_model(model)
    anchors = {record["name"]: "n%d" % i for i, record in enumerate(model["nodes"])}
    # One heat map per distinct topology, in the order the nodes first show it; each node points at its own.
    symbols = {}
    for record in model["nodes"]:
        topology = record["topology"]
        if topology:
            key = (tuple(topology["gpus"]), tuple(tuple(row) for row in topology["matrix"]))
            symbols.setdefault(key, "t%d" % len(symbols))

    def symbol_of(topology):
        return symbols[(tuple(topology["gpus"]), tuple(tuple(row) for row in topology["matrix"]))]

    return _template().render(model=model, title=title, generated_at=generated_at, anchors=anchors,
                              symbol_of=symbol_of,
                              symbols=[(ident, names, matrix) for (names, matrix), ident in symbols.items()])
