# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the GPU fleet report's model (_report_model.py) as one self-contained HTML
document."""

from __future__ import annotations

import html
import re

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


def _e(value):
    """A value from the facts as HTML text; None as n/a."""
    if value is None:
        return '<span class="na">n/a</span>'
    return html.escape(str(value), quote=True)


def _badge(status):
    status = status if status in RANK else "unknown"
    return '<span class="b %s">%s</span>' % (status, status.upper())


def _number(value, fmt="%g"):
    return fmt % value if finite(value) else _e(value)


def _pair(current, limit, unit, fmt="%g"):
    if current is None and limit is None:
        return _e(None)
    return "%s / %s %s" % (_number(current, fmt), _number(limit, fmt), unit)


def _ecc(gpu):
    if gpu["ecc_enabled"] is False:
        return "off"
    errors = gpu["ecc_errors"] or {}
    volatile = (errors.get("volatile") or {}).get("uncorrected")
    aggregate = (errors.get("aggregate") or {}).get("uncorrected")
    if gpu["ecc_enabled"] is None and volatile is None and aggregate is None:
        return _e(None)
    text = "%s / %s" % (_number(volatile), _number(aggregate))
    return '<span class="odd">%s</span>' % text if volatile or aggregate else text


def _rows(gpu):
    rows = gpu["remapped_rows"]
    if not isinstance(rows, dict):
        return _e(None)
    text = "%s corr. %s uncorr." % (_number(rows.get("correctable")), _number(rows.get("uncorrectable")))
    flags = [word for word, key in (("PENDING", "pending"), ("FAILURE", "failure")) if rows.get(key)]
    return text + ("".join(' <span class="odd">%s</span>' % flag for flag in flags))


def _temperatures(gpu):
    values = (gpu["temperature_c"], gpu["temperature_slowdown_c"], gpu["temperature_shutdown_c"])
    if all(value is None for value in values):
        return _e(None)
    return "%s / %s / %s C" % tuple(_number(value) for value in values)


def _nvlink(gpu):
    link = gpu["nvlink"]
    if gpu["lost"]:
        return _e(None)
    if not link:
        return "none"
    text = "%d/%d up" % (link["active"], link["total"])
    if link["down"] and link["active"]:
        text += ' <span class="odd">down: %s</span>' % _e(", ".join(str(d) for d in link["down"]))
    return text


def _pcie(gpu):
    pcie = gpu["pcie"]
    if not pcie:
        return _e(None)
    keys = ("gen_current", "gen_max", "width_current", "width_max")
    text = "gen %s/%s x%s/%s" % tuple(_number(pcie.get(k)) for k in keys)
    if pcie.get("width_current") and pcie.get("width_max") and pcie["width_current"] < pcie["width_max"]:
        return '<span class="odd">%s</span>' % text
    return text


def _topology_colour(label):
    if label == "X":
        return TOPOLOGY_SELF
    for prefix, colour in TOPOLOGY_COLOURS:
        if isinstance(label, str) and (label == prefix or (prefix == "NV" and re.match(r"\ANV[0-9]+\Z", label))):
            return colour
    return TOPOLOGY_UNKNOWN


def _topology_symbol(ident, names, matrix):
    """One heat map as an SVG symbol; every cell carries its label as text, so the colour is never the only sign."""
    size = (len(names) + 1) * CELL
    out = ['<symbol id="%s" viewBox="0 0 %d %d"><g font-family="monospace" font-size="10">' % (ident, size, size)]
    for i, name in enumerate(names):
        out.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % ((i + 1.5) * CELL, CELL * 0.6, _e(name)))
        out.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % (CELL / 2, (i + 1.6) * CELL, _e(name)))
    for i, row in enumerate(matrix):
        for j, label in enumerate(row):
            x, y = (j + 1) * CELL, (i + 1) * CELL
            out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#fff"/>'
                       '<text x="%d" y="%d" text-anchor="middle">%s</text>'
                       % (x, y, CELL, CELL, _topology_colour(label), x + CELL / 2, y + CELL * 0.6,
                          _e(label if label is not None else "?")))
    out.append("</g></symbol>")
    return "".join(out)


def _gpu_rows(record, out):
    same = len({gpu["name"] for gpu in record["gpus"] if gpu["name"] is not None}) <= 1
    nearest = any(gpu["nearest_hca"] for gpu in record["gpus"])
    out.append("<table><tr><th>GPU</th>%s<th>Health</th><th>Memory used/total</th><th>Power draw/limit</th>"
               "<th>Temp now/slowdown/shutdown</th><th>ECC uncorr. volatile/aggregate</th><th>Remapped rows</th>"
               "<th>NVLink</th><th>PCIe now/max</th><th>VBIOS</th>%s</tr>"
               % ("" if same else "<th>Model</th>", "<th>Nearest HCA</th>" if nearest else ""))
    for gpu in record["gpus"]:
        near = gpu["nearest_hca"]
        if not nearest:
            near_cell = ""
        elif near:
            near_cell = "<td>%s (%s)</td>" % (_e(", ".join(str(d) for d in near["devices"])), _e(near["path"]))
        else:
            near_cell = "<td>%s</td>" % _e(None)
        out.append(
            "<tr><td>%s%s</td>%s<td>%s %s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
            "<td>%s</td><td>%s</td>%s</tr>" % (
                _e(gpu["index"]), " LOST" if gpu["lost"] else "",
                "" if same else "<td>%s</td>" % _e(gpu["name"]),
                _badge(gpu["status"]), _e(gpu["status_text"]),
                _pair(gpu["memory_used_mib"], gpu["memory_total_mib"], "MiB", "%d"),
                _pair(gpu["power_draw_w"], gpu["power_limit_w"], "W", "%.0f"),
                _temperatures(gpu),
                _ecc(gpu), _rows(gpu), _nvlink(gpu), _pcie(gpu), _e(gpu["vbios_version"]), near_cell))
    out.append("</table>")


def _rdma_rows(rdma, out):
    if not rdma["devices"]:
        out.append("<p>RDMA: no RDMA device.</p>")
        return
    out.append("<table><tr><th>RDMA device</th><th>HCA</th><th>Firmware</th><th>PCI</th><th>NUMA</th>"
               "<th>Ports: state, physical state, rate, link layer</th></tr>")
    for device in rdma["devices"]:
        # A port that is not active reports its lowest rate, not the cable's: its rate is left out.
        ports = "; ".join("%s: %s, %s, %s, %s" % (
            _e(p["port"]), _e(p["state"]) if p["state"] == "ACTIVE" else "%s (not active)" % _e(p["state"]),
            _e(p["phys_state"]), "%s Gb/s" % _e(p["rate_gbps"]) if p["state"] == "ACTIVE" else "no rate",
            _e(p["link_layer"])) for p in device["ports"]) or "none"
        out.append("<tr><td>%s</td><td>%s%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            _e(device["name"]), _e(device["hca_type"]), " %s" % _e(device["family"]) if device["family"] else "",
            _e(device["fw_ver"]), _e(device["pci_bus_id"]), _e(device["numa_node"]), ports))
    out.append("</table><p>nvidia_peermem loaded: %s</p>" % _e({True: "yes", False: "no"}.get(rdma["peermem_loaded"])))


def _validation_rows(validation, out):
    out.append("<table><tr><th>Framework</th><th>Measure</th><th>Measured</th><th>Nominal peak (not measured)</th>"
               "<th>Measured / nominal</th></tr>")
    for entry in validation:
        head = "%s %s" % (_e(entry["framework"]), _e(entry["version"]))
        if entry["failure"]:
            out.append('<tr><td>%s</td><td colspan="4"><span class="b critical">FAILED</span> %s</td></tr>'
                       % (head, _e(entry["failure"])))
        for figure in entry["figures"]:
            nominal = ("%s %s (nominal, %s)" % (_number(figure["nominal"]), _e(figure["unit"]),
                                                _e(figure["nominal_basis"])) if figure["nominal"] else
                       '<span class="na">no nominal figure for %s</span>' % _e(entry["model"] or "this GPU"))
            out.append("<tr><td>%s</td><td>%s</td><td>%s %s</td><td>%s</td><td>%s</td></tr>" % (
                head, _e(figure["label"]), _number(figure["measured"]), _e(figure["unit"]), nominal,
                "%.0f%%" % (figure["ratio"] * 100) if figure["ratio"] is not None else _e(None)))
        if not entry["failure"] and not entry["figures"]:
            out.append('<tr><td>%s</td><td colspan="4">%s</td></tr>' % (head, _e(entry["statement"])))
    out.append("</table>")


def _node(anchor, record, symbols, out):
    out.append('<div class="n %s" id="%s"><h3>%s %s</h3>' % (
        record["status"] if record["status"] in RANK else "unknown", anchor, _e(record["name"]),
        _badge(record["status"])))
    if record["facts"]:
        out.append('<p class="m">driver %s, CUDA %s, NVML %s, %s GPU(s)%s</p>' % (
            _e(record["driver_version"]), _e(record["cuda_driver_version"]), _e(record["nvml_version"]),
            _e(record["gpu_count"]), ", %s" % _e(record["model"]) if record["model"] else ""))
        if not record["driver_loaded"]:
            out.append("<p>NVML not usable: %s</p>" % _e(record["reason"]))
    if record["versions"]:
        out.append('<p class="m">%s</p>' % ", ".join("%s %s" % (_e(k), _e(v)) for k, v in record["versions"].items()))
    if record["slurm"]:
        reason = record["slurm"]["reason"] or record["slurm"].get("problem")
        out.append("<p>Slurm: %s%s</p>" % (_e(record["slurm"]["state"]), " (%s)" % _e(reason) if reason else ""))
    node_findings = [f for f in record["findings"] if f["gpu"] is None]
    if node_findings:
        out.append("<ul>%s</ul>" % "".join("<li>%s %s</li>" % (_badge(f["severity"]), _e(f["message"]))
                                           for f in node_findings))
    if record["gpus"]:
        _gpu_rows(record, out)
    topology = record["topology"]
    if topology:
        key = (tuple(topology["gpus"]), tuple(tuple(row) for row in topology["matrix"]))
        if key not in symbols:
            symbols[key] = ("t%d" % len(symbols), _topology_symbol("t%d" % len(symbols), *key))
        size = (len(topology["gpus"]) + 1) * CELL
        out.append('<svg width="%d" height="%d" role="img" aria-label="GPU topology heat map"><use href="#%s"/></svg>'
                   % (size, size, symbols[key][0]))
    if record["rdma"] is not None:
        _rdma_rows(record["rdma"], out)
    if record["validation"]:
        _validation_rows(record["validation"], out)
    out.append("</div>")


def _check_model(model):
    keys = ("summary", "findings", "drift", "nodes", "unreachable", "failed", "nominal")
    if not isinstance(model, dict) or any(key not in model for key in keys):
        raise ReportError("the model must be what fleet_report_model returns (a dict with %s), got %s"
                          % (", ".join(keys), type(model).__name__ if not isinstance(model, dict)
                             else "a dict with %s" % ", ".join(sorted(str(k) for k in model))))


def render_html(model, title, generated_at):
    """The model as one self-contained HTML document: inline CSS and SVG, no script, no external resource."""
    _check_model(model)
    summary = model["summary"]
    anchors = {record["name"]: "n%d" % i for i, record in enumerate(model["nodes"])}

    def node_link(name):
        return '<a href="#%s">%s</a>' % (anchors[name], _e(name)) if name in anchors else _e(name)

    out = ['<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
           '<meta name="viewport" content="width=device-width,initial-scale=1"><title>%s</title><style>%s</style>'
           "</head><body><h1>%s</h1><p class=\"m\">Generated %s</p>" % (_e(title), CSS, _e(title), _e(generated_at))]

    out.append("<h2>Summary</h2><table><tr><th>Nodes</th><th>Reporting</th><th>Unreachable</th><th>Failed</th>"
               "<th>GPUs</th><th>Drifting versions</th></tr><tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
               "<td>%s</td><td>%s</td></tr></table>" % tuple(_e(summary.get(k)) for k in (
                   "nodes", "reporting", "unreachable", "failed", "gpus", "drift_fields")))
    row = "<tr><td>%s</td><td>%s</td><td>%s</td></tr>"
    out.append("<table><tr><th>Health</th><th>Nodes</th><th>GPUs</th></tr>%s</table>" % "".join(
        row % (_badge(s), _e(summary["health"].get(s)), _e(summary["gpu_health"].get(s)))
        for s in reversed(STATUSES)))
    out.append("<table><tr><th>GPU model</th><th>GPUs</th><th>Nodes</th></tr>%s</table>" % "".join(
        row % (_e(m["model"] or "unknown model"), _e(m["gpus"]), _e(m["nodes"])) for m in summary["gpu_models"]))

    out.append("<h2>Findings, worst first</h2>")
    if model["findings"]:
        out.append("<table><tr><th>Severity</th><th>Node</th><th>GPU</th><th>Code</th><th>Finding</th></tr>")
        out.extend("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            _badge(f["severity"]), node_link(f["node"]), "" if f["gpu"] is None else _e(f["gpu"]), _e(f["code"]),
            _e(f["message"])) for f in model["findings"])
        out.append("</table>")
    else:
        out.append("<p>No findings.</p>")

    out.append("<h2>Version drift</h2><p class=\"m\">Per GPU model and per HCA model, the value most have and the "
               "odd ones out.</p>")
    for group in model["drift"]:
        out.append("<h3>%s</h3><table><tr><th>Field</th><th>Majority</th><th>Odd ones out</th></tr>"
                   % _e(group["label"]))
        for field in group["fields"]:
            odd = "; ".join('<span class="odd">%s</span> on %s' % (_e(o["value"]), ", ".join(
                _member(m, node_link) for m in o["members"])) for o in field["odd"]) or "none: consistent"
            out.append("<tr><td>%s</td><td>%s (%s of %s %s%s)</td><td>%s</td></tr>" % (
                _e(field["label"]), _e(field["majority"]), _e(field["majority_count"]), _e(field["total"]),
                _e(field["unit"] + "s"), ", a tie" if field["tie"] else "", odd))
        out.append("</table>")

    lost = [("unreachable", e) for e in model["unreachable"]] + [("failed", e) for e in model["failed"]]
    out.append("<h2>Unreachable and failed nodes</h2>")
    if lost:
        out.append("<table><tr><th>Node</th><th>What</th><th>Reason</th></tr>%s</table>" % "".join(
            "<tr><td>%s</td><td>%s</td><td>%s</td></tr>" % (node_link(e["name"]), what, _e(e["reason"]))
            for what, e in lost))
    else:
        out.append("<p>None.</p>")

    out.append("<h2>Nodes, worst first</h2><table><tr><th>Health</th><th>Node</th><th>GPUs</th><th>Model</th>"
               "<th>Driver</th><th>Slurm</th></tr>")
    out.extend("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
        _badge(r["status"]), node_link(r["name"]), _e(len(r["gpus"])), _e(r["model"]), _e(r["driver_version"]),
        _e(r["slurm"]["state"]) if r["slurm"] else '<span class="na">not in Slurm</span>') for r in model["nodes"])
    out.append("</table>")
    symbols = {}
    for record in model["nodes"]:
        _node(anchors[record["name"]], record, symbols, out)

    out.append("<h2>Legend and nominal figures</h2><p>Health: %s.</p>" % ", ".join(
        "%s %s" % (_badge(s), text) for s, text in (
            ("critical", "a GPU or the node cannot be used"), ("warning", "degraded"),
            ("unknown", "facts missing or incomplete, or the node was not reached"), ("ok", "no findings"))))
    out.append("<p>Topology heat map, nearest first: %s.</p>" % "; ".join(
        "%s %s" % (_e(label), _e(text)) for label, text in TOPOLOGY_MEANINGS))
    nominal = model["nominal"]
    if nominal.get("models"):
        out.append("<p>Nominal figures are datasheet peaks (dense, TFLOP/s; NVLink GB/s per GPU and direction), not "
                   "measurements.</p><table><tr><th>GPU model</th><th>FP32</th><th>TF32</th><th>BF16</th>"
                   "<th>FP16</th><th>NVLink</th><th>Source</th></tr>%s</table>" % "".join(
                       "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % tuple(
                           _e(m.get(k)) for k in ("model", "fp32", "tf32", "bf16", "fp16", "nvlink_gbps", "source"))
                       for m in nominal["models"]))
    out.append("<p>PCIe ceilings per lane and direction (GB/s): %s (%s).</p>" % (
        ", ".join("gen %s %s" % (_e(k), _e(v)) for k, v in sorted((nominal.get("pcie_lane_gbps") or {}).items())),
        _e(nominal.get("pcie_source"))))
    if symbols:
        out.append('<svg width="0" height="0" style="position:absolute" aria-hidden="true">%s</svg>'
                   % "".join(symbol for _ident, symbol in symbols.values()))
    out.append("</body></html>\n")
    return "".join(out)


def _member(member, node_link):
    where = node_link(member["node"])
    if "gpu" in member:
        return "%s GPU %s" % (where, _e(member["gpu"]))
    if "device" in member:
        return "%s %s" % (where, _e(member["device"]))
    return where
