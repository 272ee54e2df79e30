# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the GPU fleet report's model from each node's facts (health, version drift,
validation figures next to nominal ones), JSON-serialisable; _report_html.py renders it."""

from __future__ import annotations

import math

from ansible_collections.accelops.gpu.plugins.module_utils import _health, _numbers
from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_nodes
from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import ReportError

# Node and GPU statuses, best first. "unknown" (facts missing, incomplete, or the node not reached) is never "ok",
# and is better than a known fault.
STATUSES = ("ok", "unknown", "warning", "critical")
RANK = {status: rank for rank, status in enumerate(STATUSES)}

# The gpu_facts subsets whose facts the health judgement reads, each with the per-GPU keys that show it was gathered
# (gpu_facts sets every key of a subset it gathers, null where NVML does not support it).
HEALTH_KEYS = (("state", ("persistence_mode",)),
               ("ecc", ("ecc_enabled", "ecc_errors", "remapped_rows", "retired_pages_pending")),
               ("thermal", ("temperature_c", "temperature_slowdown_c")), ("clocks", ("clocks_event_reasons",)),
               ("nvlink", ("nvlinks",)), ("pcie", ("pcie",)))
# Keys every gpu_facts since NVML errors are reported sets on each GPU and on the node: without them a failed NVML call
# cannot be told from a value NVML does not support.
GPU_BASE_KEYS = ("index", "lost", "errors")

# What the report reads from the facts, by kind; null is always allowed (NVML does not support the value), any other
# kind is malformed: the value is left out (null) and the node is unknown. "message" is any value, kept as text.
TEXT, MESSAGE, BOOL, COUNT, NUMBER, AMOUNT, PERCENT, TEXTS = (
    "text", "message", "bool", "count", "number", "amount", "percent", "texts")


def _dict_of(**fields):
    return ("dict", fields)


def _list_of(kind):
    return ("list", kind)


_ECC_COUNTS = _dict_of(corrected=COUNT, uncorrected=COUNT)
GPU_SCHEMA = {
    "index": COUNT, "lost": BOOL, "error": MESSAGE, "errors": TEXTS, "name": TEXT, "uuid": TEXT, "serial": TEXT,
    "pci_bus_id": TEXT, "vbios_version": TEXT, "persistence_mode": BOOL, "memory_total_mib": COUNT,
    "memory_used_mib": COUNT, "temperature_c": AMOUNT, "temperature_slowdown_c": AMOUNT,
    "temperature_shutdown_c": AMOUNT, "power_draw_w": AMOUNT, "power_limit_w": AMOUNT, "utilization_gpu_pct": PERCENT,
    "ecc_enabled": BOOL, "ecc_errors": _dict_of(volatile=_ECC_COUNTS, aggregate=_ECC_COUNTS),
    "remapped_rows": _dict_of(correctable=COUNT, uncorrectable=COUNT, pending=BOOL, failure=BOOL),
    "retired_pages_pending": BOOL, "clocks_event_reasons": TEXTS,
    "pcie": _dict_of(gen_current=COUNT, gen_max=COUNT, width_current=COUNT, width_max=COUNT),
    "nvlinks": _list_of(_dict_of(index=COUNT, active=BOOL)), "mig_mode": BOOL,
}
FACTS_SCHEMA = {
    "driver_loaded": BOOL, "reason": MESSAGE, "driver_version": TEXT, "cuda_driver_version": TEXT,
    "nvml_version": TEXT, "gpu_count": COUNT, "errors": TEXTS, "pci_devices": _list_of(_dict_of(kind=TEXT)),
    "topology": _list_of(_list_of(TEXT)), "driver_mismatch": _dict_of(loaded=TEXT, library=TEXT),
    "health": _dict_of(findings=_list_of(_dict_of(gpu=COUNT, code=TEXT, severity=TEXT, message=MESSAGE))),
}
IB_SCHEMA = {
    "devices": _list_of(_dict_of(
        name=TEXT, hca_type=TEXT, fw_ver=TEXT, board_id=TEXT, pci_bus_id=TEXT, numa_node=NUMBER,
        ports=_list_of(_dict_of(port=COUNT, state=TEXT, phys_state=TEXT, rate_gbps=AMOUNT, link_layer=TEXT)))),
    "gpu_affinity": _list_of(_dict_of(pci_bus_id=TEXT, closest=TEXTS, path=TEXT)), "peermem_loaded": BOOL,
}
_MATMUL = _dict_of(size=COUNT, dtype=TEXT, tflops=AMOUNT)
VALIDATION_SCHEMA = {
    "version": TEXT, "failure": MESSAGE, "gpu_count": COUNT, "built_cuda": TEXT, "built_nccl": TEXT,
    "statement": MESSAGE, "gpu": _dict_of(name=TEXT, matmul_fp32=_MATMUL, matmul_low=_MATMUL),
    "allreduce": _dict_of(backend=TEXT, gpus=COUNT, busbw_gbps=AMOUNT),
}


def finite(value):
    """Whether value is a number (not a bool) with a finite value that a float can hold."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


# What a value of each plain kind is; a count stays below 2**53, so that a float holds it.
_KINDS = {
    TEXT: lambda value: isinstance(value, str),
    BOOL: lambda value: isinstance(value, bool),
    COUNT: lambda value: isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** 53,
    NUMBER: finite,
    AMOUNT: lambda value: finite(value) and value >= 0,
    PERCENT: lambda value: finite(value) and 0 <= value <= 100,
    TEXTS: lambda value: isinstance(value, list) and all(isinstance(item, str) for item in value),
}


def _clean(value, kind):
    """(value as the report reads it, whether it was of its kind); a dict kind gets every key it names."""
    if value is None:
        return None, True
    if kind == MESSAGE:
        return (value, True) if isinstance(value, str) else (str(value), False)
    if isinstance(kind, str):
        good = _KINDS[kind](value)
        return (value if good else None), good
    container, inner = kind
    if container == "list":
        if not isinstance(value, list):
            return None, False
        items = []
        for given in value:
            item, good = _clean(given, inner)
            if not good:
                return None, False
            items.append(item)
        return items, True
    if not isinstance(value, dict):
        return None, False
    clean = dict(value)
    for key, field in inner.items():
        item = value.get(key)
        if item is None:
            clean[key] = None
        elif isinstance(field, str) and field != MESSAGE:  # a plain kind, checked here: the facts hold many
            if not _KINDS[field](item):
                return None, False
        else:
            clean[key], good = _clean(item, field)
            if not good:
                return None, False
    return clean, True


def _clean_all(data, schema, where):
    """data with each key of schema cleaned; the malformed keys as "<where><key>"."""
    clean, bad = dict(data), []
    for key, kind in schema.items():
        if key in data:
            clean[key], good = _clean(data[key], kind)
            if not good:
                bad.append(where + key)
    return clean, bad


def clean_facts(facts):
    """The GPU facts as the report reads them, and the keys that were malformed (each left out: null)."""
    clean, bad = _clean_all(facts, FACTS_SCHEMA, "")
    gpus = facts.get("gpus")
    if gpus is not None and not isinstance(gpus, list):
        clean["gpus"], gpus = [], None
        bad.append("gpus")
    if gpus is not None:
        clean["gpus"] = []
        for position, given in enumerate(gpus):
            if not isinstance(given, dict):
                bad.append("gpus[%d]" % position)
                continue
            gpu, gpu_bad = _clean_all(given, GPU_SCHEMA, "gpus[%d]." % position)
            clean["gpus"].append(gpu)
            bad.extend(gpu_bad)
        indices = [gpu["index"] for gpu in clean["gpus"] if gpu.get("index") is not None]
        bad.extend("gpus: index %d twice" % index for index in sorted({i for i in indices if indices.count(i) > 1}))
    return clean, bad


def _malformed(name, what, bad):
    shown = ", ".join(bad[:8]) + (" and %d more" % (len(bad) - 8) if len(bad) > 8 else "")
    return _finding(name, None, "facts_malformed", "unknown", "the %s are not what the module returns (%s): left out"
                    % (what, shown))


# Nominal figures per GPU model, by the name NVML gives it: dense (no sparsity) peak TFLOP/s and the NVLink bandwidth
# of one GPU in one direction in GB/s (half the bidirectional total of the datasheets), the ceiling of NCCL's
# all-reduce bus bandwidth. fp32 is plain FP32 (PyTorch's default for float32 matmuls); tf32 the TF32 tensor cores
# (TensorFlow's default for float32 matmuls from Ampere on); bf16 and fp16 the tensor cores with FP32 accumulation.
# A validation matmul reaches only part of the peak: the report shows measured figures beside these, judges nothing.
_H100_WHITEPAPER = "NVIDIA H100 Tensor Core GPU Architecture whitepaper, H100 SXM5 and PCIe columns"
_A100_DATASHEET = "NVIDIA A100 Tensor Core GPU datasheet"
_V100_DATASHEET = "NVIDIA V100 Tensor Core GPU datasheet, SXM2"
NOMINAL = {
    "NVIDIA H100 80GB HBM3": {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "nvlink_gbps": 450,
                              "source": _H100_WHITEPAPER},
    "NVIDIA H100 PCIe": {"fp32": 51.2, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0, "nvlink_gbps": 300,
                         "source": _H100_WHITEPAPER},
    "NVIDIA H200": {"fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5, "nvlink_gbps": 450,
                    "source": "NVIDIA H200 Tensor Core GPU datasheet, SXM"},
    "NVIDIA A100-SXM4-80GB": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0, "nvlink_gbps": 300,
                              "source": _A100_DATASHEET},
    "NVIDIA A100-SXM4-40GB": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0, "nvlink_gbps": 300,
                              "source": _A100_DATASHEET},
    "NVIDIA A100 80GB PCIe": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0, "nvlink_gbps": 300,
                              "source": _A100_DATASHEET},
    "NVIDIA A100-PCIE-40GB": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0, "nvlink_gbps": 300,
                              "source": _A100_DATASHEET},
    "NVIDIA L40S": {"fp32": 91.6, "tf32": 183.0, "bf16": 362.05, "fp16": 362.05, "nvlink_gbps": None,
                    "source": "NVIDIA L40S datasheet"},
    "Tesla V100-SXM2-16GB": {"fp32": 15.7, "tf32": None, "bf16": None, "fp16": 125.0, "nvlink_gbps": 150,
                             "source": _V100_DATASHEET},
    "Tesla V100-SXM2-32GB": {"fp32": 15.7, "tf32": None, "bf16": None, "fp16": 125.0, "nvlink_gbps": 150,
                             "source": _V100_DATASHEET},
}
# PCIe bandwidth of one lane in one direction, GB/s, after line encoding (8b/10b to gen 2, 128b/130b from gen 3): the
# all-reduce ceiling of GPUs without NVLink is their own link, generation and width as NVML gives their maximum.
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938}
PCIE_SOURCE = "PCI Express base specifications: transfer rate per lane and line encoding"
DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}

# hca_type as mlx5 reports it (MT<PCI device id in decimal>) -> the adapter family (pci.ids).
HCA_FAMILIES = {"MT4119": "ConnectX-5", "MT4121": "ConnectX-5 Ex", "MT4123": "ConnectX-6", "MT4125": "ConnectX-6 Dx",
                "MT4129": "ConnectX-7", "MT4131": "ConnectX-8"}

# Slurm node states that mean the node cannot take jobs (as scontrol prints them, and sinfo's short forms).
SLURM_BAD_STATES = frozenset(_slurm_nodes.BAD_STATES) | {"FAILING", "FAILG", "UNK", "FUTR"}

# Node facts compared across the nodes of one GPU model: (field, label).
NODE_VERSION_FIELDS = (("driver_version", "driver"), ("cuda_driver_version", "CUDA driver API"))


def _natural(text):
    """Sort key that puts node2 before node10."""
    return _numbers.natural(str(text))


def worst(statuses, default="ok"):
    return max(statuses, key=RANK.get, default=default)


def _finding(node, gpu, code, severity, message):
    return {"node": node, "gpu": gpu, "code": code, "severity": severity, "message": message}


def _finding_key(finding):
    gpu = finding.get("gpu")
    return (-RANK.get(finding["severity"], 0), _natural(finding["node"]), gpu is not None, gpu if gpu is not None
            else 0)


def _text(value):
    """A version or a name as text; None stays None."""
    return None if value is None else str(value)


def _mapping(value, what):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ReportError("%s must be a dict of node name -> reason, got %s" % (what, type(value).__name__))
    return {str(name): None if reason is None else str(reason) for name, reason in value.items()}


SECTIONS = ("nvidia", "ib", "validation", "slurm", "versions")


def _unset(value):
    """None for what ansible-core before 2.19 makes of a value that is not there: `"{{ x | default(none) }}"` in a
    dict renders there as an empty string."""
    return None if value == "" else value


def _nodes_read(nodes):
    """The nodes with each empty string where a section or a validation record goes read as not given."""
    if not isinstance(nodes, dict):
        return nodes
    read = {}
    for name, given in nodes.items():
        data = given
        if isinstance(given, dict):
            data = dict(given, **{key: _unset(given[key]) for key in SECTIONS if key in given})
            if isinstance(data.get("validation"), dict):
                data["validation"] = {framework: _unset(record) for framework, record in data["validation"].items()}
        read[name] = data
    return read


def _check_nodes(nodes):
    if not isinstance(nodes, dict):
        raise ReportError("nodes must be a dict of node name -> {nvidia, ib, validation, slurm, versions}, got %s"
                          % type(nodes).__name__)
    for name, data in nodes.items():
        if not isinstance(data, dict):
            raise ReportError("node %s: must be a dict with nvidia, ib, validation, slurm, versions and "
                              "expected_gpu_count (each optional), got %s" % (name, type(data).__name__))
        for key in SECTIONS:
            if data.get(key) is not None and not isinstance(data[key], dict):
                raise ReportError("node %s: %s must be a dict, got %s" % (name, key, type(data[key]).__name__))
        for framework, record in (data.get("validation") or {}).items():
            if record is not None and not isinstance(record, dict):
                raise ReportError("node %s: validation.%s must be the framework's validation record (a dict), got %s"
                                  % (name, framework, type(record).__name__))
        expected_count(name, data.get("expected_gpu_count"))


def expected_count(name, value):
    """expected_gpu_count as gpu_health takes it (a whole number, 0 or more, or its ASCII digits); None if not given."""
    if value is None or value == "":
        return None
    count = _numbers.whole(value.strip(" ") if isinstance(value, str) else value)
    if count is None:
        raise ReportError("node %s: expected_gpu_count must be a whole number, 0 or more, got %s"
                          % (name, _numbers.shown(value)))
    return count


def primary_model(gpus):
    """The GPU model most GPUs of a node have (the first by name on a tie); None when no GPU has a name."""
    counts = {}
    for gpu in gpus:
        if gpu.get("name"):
            counts[gpu["name"]] = counts.get(gpu["name"], 0) + 1
    return min(counts, key=lambda name: (-counts[name], name)) if counts else None


def _health_findings(name, facts, expected_gpu_count=None, malformed=()):
    """The findings of _health (the policy gpu_facts and gpu_health apply), plus what keeps the facts from telling;
    facts as clean_facts gives them, with the keys it found malformed."""
    verdict = _health.assess_node(facts, expected_gpu_count)
    findings = list(verdict["findings"])
    seen = {(f.get("gpu"), f.get("code"), f.get("message")) for f in findings}
    for reported in (facts.get("health") or {}).get("findings") or []:
        if (reported.get("gpu"), reported.get("code"), reported.get("message")) not in seen:
            findings.append(reported)
    result = [_finding(name, f.get("gpu"), f.get("code"), f.get("severity") if f.get("severity") in RANK
                       else "unknown", f.get("message")) for f in findings]
    incomplete = bool(malformed)
    if malformed:
        result.append(_malformed(name, "GPU facts", malformed))
    if "driver_loaded" not in facts or "gpus" not in facts:
        result.append(_finding(name, None, "gpu_facts_incomplete", "unknown",
                               "the GPU facts lack driver_loaded or gpus: they are not what gpu_facts returns"))
        incomplete = True
    elif not facts.get("driver_loaded") and facts.get("pci_devices") is None:
        result.append(_finding(name, None, "gpus_unknown", "unknown",
                               "NVML is not usable (%s) and the PCI bus was not listed: whether GPUs are left "
                               "without a driver is unknown" % (facts.get("reason") or "no reason given")))
        incomplete = True
    gpus = facts.get("gpus") or []
    missing = [subset for subset, keys in HEALTH_KEYS if any(key not in gpu for gpu in gpus for key in keys)]
    if missing:
        result.append(_finding(name, None, "health_facts_incomplete", "unknown",
                               "the %s facts were not gathered: GPU health cannot be judged in full"
                               % ", ".join(missing)))
        incomplete = True
    unreported = (["errors"] if "gpus" in facts and facts.get("errors") is None else []) + [
        "GPU " + key for key in GPU_BASE_KEYS if any(gpu.get(key) is None for gpu in gpus)]
    if unreported:
        result.append(_finding(name, None, "nvml_errors_unreported", "unknown",
                               "the GPU facts lack %s (an older gpu_facts?): a failed NVML call cannot be told from "
                               "a value NVML does not support" % ", ".join(unreported)))
        incomplete = True
    if not result and "gpus" in facts and not gpus and expected_gpu_count != 0:
        # A node of the GPU nodes without a GPU is most often an inventory mistake (as nvidia_driver says).
        result.append(_finding(name, None, "no_gpu", "warning", "no GPU: %s" % (
            "NVML counts none" if facts.get("driver_loaded") else "none is on the PCI bus, and NVML is not usable "
            "(%s)" % (facts.get("reason") or "no reason given"))))
    return result, incomplete


def _rdma_findings(name, ib):
    """A port whose link is up but that is not ACTIVE: no subnet manager (or no RoCE configuration) brought it up."""
    for device in ib.get("devices") or []:
        for port in device.get("ports") or []:
            if port.get("phys_state") == "LinkUp" and port.get("state") not in ("ACTIVE", None):
                yield _finding(name, None, "rdma_port_not_active", "warning",
                               "%s port %s has its link up but is %s: no subnet manager has brought it up"
                               % (device.get("name"), port.get("port"), port.get("state")))


def slurm_states(state):
    """'IDLE+DRAIN' or sinfo's 'down*' as upper-case state names; a trailing '*' is NOT_RESPONDING."""
    states = []
    for part in str(state or "").upper().split("+"):
        if part.endswith("*"):
            states.append("NOT_RESPONDING")
        name = part.rstrip("*~#!%$@^-")
        if name:
            states.append(name)
    return states


def _slurm_record(name, slurm):
    if not slurm:
        return None, []
    record = {"state": _text(slurm.get("state")), "reason": _text(slurm.get("reason")),
              "problem": _text(slurm.get("problem"))}
    bad = [s for s in slurm_states(record["state"]) if s in SLURM_BAD_STATES]
    findings = []
    if record["state"] is None:
        # A node in the Slurm cluster whose state is not known is never shown as if it were outside Slurm.
        findings.append(_finding(name, None, "slurm_state", "warning", record["problem"] or (
            "Slurm's state of this node is not known")))
    elif bad:
        findings.append(_finding(name, None, "slurm_state", "warning", "Slurm has this node %s%s" % (
            record["state"], ", reason: %s" % record["reason"] if record["reason"] else "")))
    return record, findings


def _gpu_record(gpu, findings, unjudged, affinity):
    index = gpu.get("index")
    own = [f for f in findings if f["gpu"] == index and index is not None]
    status = worst((f["severity"] for f in own), "unknown" if unjudged else "ok")
    if own:
        status_text = "; ".join(str(f["message"]) for f in own)
    else:
        status_text = "health not judged: facts incomplete" if unjudged else "no findings"
    links = gpu.get("nvlinks")
    nvlink = None
    if links:
        down = [link.get("index") for link in links if not link.get("active")]
        nvlink = {"active": len(links) - len(down), "total": len(links), "down": down}
    pcie = gpu.get("pcie")
    near = affinity.get(gpu.get("pci_bus_id"))
    return {
        "index": index, "name": gpu.get("name"), "uuid": gpu.get("uuid"), "serial": gpu.get("serial"),
        "pci_bus_id": gpu.get("pci_bus_id"), "vbios_version": gpu.get("vbios_version"), "lost": bool(gpu.get("lost")),
        "status": status, "status_text": status_text, "codes": sorted({str(f["code"]) for f in own}),
        "memory_used_mib": gpu.get("memory_used_mib"), "memory_total_mib": gpu.get("memory_total_mib"),
        "power_draw_w": gpu.get("power_draw_w"), "power_limit_w": gpu.get("power_limit_w"),
        "temperature_c": gpu.get("temperature_c"), "temperature_slowdown_c": gpu.get("temperature_slowdown_c"),
        "temperature_shutdown_c": gpu.get("temperature_shutdown_c"),
        "utilization_gpu_pct": gpu.get("utilization_gpu_pct"),
        "ecc_enabled": gpu.get("ecc_enabled"), "ecc_errors": gpu.get("ecc_errors"),
        "remapped_rows": gpu.get("remapped_rows"), "retired_pages_pending": gpu.get("retired_pages_pending"),
        "nvlink": nvlink,
        "pcie": dict(pcie) if isinstance(pcie, dict) else None,
        "mig_mode": gpu.get("mig_mode"),
        "nearest_hca": {"devices": list(near.get("closest") or []), "path": near.get("path")} if near else None,
    }


def _rdma_record(ib):
    devices = []
    for device in ib.get("devices") or []:
        hca_type = _text(device.get("hca_type"))
        devices.append({
            "name": device.get("name"), "hca_type": hca_type, "family": HCA_FAMILIES.get(hca_type),
            "fw_ver": _text(device.get("fw_ver")), "board_id": device.get("board_id"),
            "pci_bus_id": device.get("pci_bus_id"), "numa_node": device.get("numa_node"),
            "ports": [{key: port.get(key) for key in ("port", "state", "phys_state", "rate_gbps", "link_layer")}
                      for port in device.get("ports") or []],
        })
    return {"devices": devices, "peermem_loaded": ib.get("peermem_loaded")}


def allreduce_nominal(model, gpus):
    """The all-reduce bus bandwidth ceiling of a node's GPUs: NVLink where a link is up, else the narrowest GPU's
    PCIe link at its maximum; (GB/s, basis) or (None, None)."""
    if any(link.get("active") for gpu in gpus for link in gpu.get("nvlinks") or []):
        gbps = (NOMINAL.get(model) or {}).get("nvlink_gbps")
        return (gbps, "NVLink") if gbps else (None, None)
    links = [(gpu.get("pcie") or {}) for gpu in gpus]
    rates = [(PCIE_LANE_GBPS[p["gen_max"]] * p["width_max"], p["gen_max"], p["width_max"]) for p in links
             if p.get("gen_max") in PCIE_LANE_GBPS and p.get("width_max")]
    if not rates or len(rates) != len(links):
        return None, None
    gbps, gen, width = min(rates)
    return round(gbps, 1), "PCIe gen %d x%d" % (gen, width)


def _figure(metric, label, unit, measured, reference):
    """A measured figure beside its nominal one; reference is (nominal, basis), each None where the table has none."""
    nominal, basis = reference if reference[0] else (None, None)
    ratio = round(measured / nominal, 3) if isinstance(measured, (int, float)) and nominal else None
    return {"metric": metric, "label": label, "unit": unit, "measured": measured, "nominal": nominal,
            "nominal_basis": basis, "ratio": ratio}


def _validation_record(framework, record, model, gpus):
    """One framework's validation (the fact pytorch_validation or tensorflow_validation) with its GPU figures."""
    gpu = record.get("gpu") if isinstance(record.get("gpu"), dict) else {}
    model = model or gpu.get("name")
    nominal = NOMINAL.get(model) or {}
    figures = []
    fp32 = gpu.get("matmul_fp32") or {}
    if fp32:
        # TensorFlow runs float32 matmuls on TF32 tensor cores where the GPU has them; PyTorch keeps FP32.
        basis = "tf32" if framework == "tensorflow" and nominal.get("tf32") else "fp32"
        figures.append(_figure("matmul_fp32", "matmul float32, size %s" % fp32.get("size"), "TFLOP/s",
                               fp32.get("tflops"), (nominal.get(basis), basis)))
    low = gpu.get("matmul_low") or {}
    if low:
        basis = DTYPES.get(low.get("dtype"))
        figures.append(_figure("matmul_low", "matmul %s, size %s" % (low.get("dtype"), low.get("size")), "TFLOP/s",
                               low.get("tflops"), (nominal.get(basis), basis)))
    allreduce = record.get("allreduce") if isinstance(record.get("allreduce"), dict) else None
    if allreduce:
        figures.append(_figure("allreduce_busbw", "%s all-reduce over %s GPUs, bus bandwidth"
                               % (allreduce.get("backend") or "nccl", allreduce.get("gpus")), "GB/s",
                               allreduce.get("busbw_gbps"), allreduce_nominal(model, gpus)))
    return {
        "framework": framework, "version": _text(record.get("version")), "failure": record.get("failure"),
        "gpu_count": record.get("gpu_count"), "built_cuda": _text(record.get("built_cuda")),
        "built_nccl": _text(record.get("built_nccl")), "statement": record.get("statement"), "model": model,
        "figures": figures,
    }


def node_record(name, data, lost=()):
    """One node's part of the report; ``lost`` holds (``unreachable`` or ``failed``, reason) where the play lost the
    node after its facts were gathered."""
    facts = data.get("nvidia")
    findings = []
    if facts is None:
        findings.append(_finding(name, None, "gpu_facts_missing", "unknown", "no GPU facts were gathered"))
        unjudged = True
        facts = {}
    else:
        facts, bad = clean_facts(facts)
        findings, unjudged = _health_findings(name, facts, expected_count(name, data.get("expected_gpu_count")), bad)
    ib = data.get("ib")
    if ib is not None:
        ib, bad = _clean_all(ib, IB_SCHEMA, "")
        if bad:
            findings.append(_malformed(name, "RDMA facts", bad))
        findings.extend(_rdma_findings(name, ib))
    slurm, slurm_findings = _slurm_record(name, data.get("slurm"))
    findings.extend(slurm_findings)
    gpus = facts.get("gpus") or []
    model = primary_model(gpus)
    validation = []
    for framework, given in sorted((data.get("validation") or {}).items(), key=lambda item: str(item[0])):
        if given is None:
            continue
        record, bad = _clean_all(given, VALIDATION_SCHEMA, "")
        if bad:
            findings.append(_malformed(name, "%s validation facts" % framework, bad))
        validation.append(_validation_record(str(framework), record, model, gpus))
        if record.get("failure"):
            findings.append(_finding(name, None, "validation_failed", "critical",
                                     "%s validation failed: %s" % (framework, record["failure"])))
    for code, reason in lost:
        findings.append(_finding(name, None, code, "unknown", reason or "no reason given"))
    findings.sort(key=_finding_key)
    affinity = {entry.get("pci_bus_id"): entry for entry in (ib or {}).get("gpu_affinity") or []}
    topology = facts.get("topology")
    return {
        "name": name,
        "status": worst(f["severity"] for f in findings),
        "findings": findings,
        "facts": data.get("nvidia") is not None,
        "driver_loaded": facts.get("driver_loaded"), "reason": facts.get("reason"),
        "driver_version": _text(facts.get("driver_version")),
        "cuda_driver_version": _text(facts.get("cuda_driver_version")),
        "nvml_version": _text(facts.get("nvml_version")),
        "gpu_count": facts.get("gpu_count"), "model": model,
        "gpus": [_gpu_record(gpu, findings, unjudged, affinity) for gpu in gpus],
        "topology": {"gpus": ["GPU%s" % gpu.get("index") for gpu in gpus], "matrix": [list(row) for row in topology]}
        if isinstance(topology, list) and topology else None,
        "rdma": _rdma_record(ib) if ib is not None else None,
        "validation": validation,
        "slurm": slurm,
        "versions": {str(k): _text(v) for k, v in sorted((data.get("versions") or {}).items(), key=lambda i: str(i[0]))
                     if v is not None},
    }


def _member_key(member):
    return _natural(member["node"]), _natural(member.get("gpu", member.get("device")))


def _majority(values):
    """values: [(value, member)] -> the field record: the value most members have (the newest on a tie) and the
    others with their members."""
    by_value = {}
    for value, member in values:
        by_value.setdefault(value, []).append(member)
    order = sorted(by_value, key=lambda v: (-len(by_value[v]), [(-a, -b, c) for a, b, c in _natural(v)]))
    top = order[0]
    odd = [{"value": v, "count": len(by_value[v]), "nodes": sorted({m["node"] for m in by_value[v]}, key=_natural),
            "members": sorted(by_value[v], key=_member_key)} for v in order[1:]]
    return {"majority": top, "majority_count": len(by_value[top]), "total": len(values),
            "tie": len(order) > 1 and len(by_value[order[1]]) == len(by_value[top]), "drift": len(order) > 1,
            "odd": odd}


def version_drift(records):
    """Per GPU model, the driver and CUDA driver version of its nodes, each GPU's VBIOS and each node's ``versions``;
    per HCA model, the firmware of each HCA. Nodes without GPUs compare their ``versions`` among themselves."""
    groups = {}

    def add(group, spec, value, member):
        """spec: (field, label, unit)."""
        if value is None:
            return
        field, label, unit = spec
        fields = groups.setdefault(group, {})
        fields.setdefault(field, {"label": label, "unit": unit, "values": []})["values"].append((str(value), member))

    for record in records:
        node = record["name"]
        models = sorted({gpu["name"] for gpu in record["gpus"] if gpu["name"]})
        for model in models:
            for field, label in NODE_VERSION_FIELDS:
                add(("gpu_model", model), (field, label, "node"), record[field], {"node": node})
        for model in models or [None]:
            for key, value in record["versions"].items():
                add(("gpu_model", model), ("versions." + key, key, "node"), value, {"node": node})
        for gpu in record["gpus"]:
            if gpu["name"]:
                add(("gpu_model", gpu["name"]), ("vbios_version", "VBIOS", "gpu"), gpu["vbios_version"],
                    {"node": node, "gpu": gpu["index"]})
        for device in (record["rdma"] or {}).get("devices") or []:
            if device["hca_type"]:
                add(("hca_model", device["hca_type"]), ("fw_ver", "firmware", "hca"), device["fw_ver"],
                    {"node": node, "device": device["name"]})
    drift = []
    for (scope, model), fields in sorted(groups.items(), key=lambda item: (item[0][0], item[0][1] is None,
                                                                           str(item[0][1]))):
        if scope == "hca_model":
            label = "%s (%s)" % (model, HCA_FAMILIES[model]) if model in HCA_FAMILIES else model
        else:
            label = model if model is not None else "nodes without GPUs"
        entries = []
        for field, entry in fields.items():
            entries.append(dict({"field": field, "label": entry["label"], "unit": entry["unit"]},
                                **_majority(entry["values"])))
        drift.append({"scope": scope, "model": model, "label": label, "fields": entries})
    return drift


def fleet_model(nodes, unreachable=None, failed=None):
    """The report's model (JSON-serialisable): see the fleet_report_model filter's documentation for its keys."""
    nodes = _nodes_read(nodes)
    _check_nodes(nodes)
    unreachable = _mapping(unreachable, "unreachable")
    failed = _mapping(failed, "failed")
    records = [node_record(str(name), data, [(code, lost[str(name)]) for code, lost in (
        ("unreachable", unreachable), ("failed", failed)) if str(name) in lost]) for name, data in nodes.items()]
    records.sort(key=lambda r: (-RANK[r["status"]], _natural(r["name"])))
    known = {r["name"] for r in records}
    lost_only = sorted((set(unreachable) | set(failed)) - known, key=_natural)
    findings = [f for r in records for f in r["findings"]]
    for name in lost_only:
        for code, lost in (("unreachable", unreachable), ("failed", failed)):
            if name in lost:
                findings.append(_finding(name, None, code, "unknown", lost[name] or "no reason given"))
    findings.sort(key=_finding_key)

    health = dict.fromkeys(STATUSES, 0)
    for record in records:
        health[record["status"]] += 1
    health["unknown"] += len(lost_only)
    gpu_health = dict.fromkeys(STATUSES, 0)
    models = {}
    for record in records:
        for gpu in record["gpus"]:
            gpu_health[gpu["status"]] += 1
            entry = models.setdefault(gpu["name"], {"model": gpu["name"], "gpus": 0, "nodes": set()})
            entry["gpus"] += 1
            entry["nodes"].add(record["name"])
    gpu_models = [dict(entry, nodes=len(entry["nodes"])) for entry in sorted(
        models.values(), key=lambda e: (-e["gpus"], e["model"] is None, str(e["model"])))]
    drift = version_drift(records)
    counts = dict.fromkeys(("critical", "warning", "unknown"), 0)
    for f in findings:
        if f["severity"] in counts:
            counts[f["severity"]] += 1
    nominal = [dict({"model": m}, **NOMINAL[m]) for m in sorted(models, key=str) if m in NOMINAL]
    return {
        "summary": {
            "nodes": len(records) + len(lost_only), "reporting": len(records),
            "unreachable": len(unreachable), "failed": len(failed),
            "gpus": sum(len(r["gpus"]) for r in records), "gpu_models": gpu_models,
            "health": health, "gpu_health": gpu_health, "findings": counts,
            "drift_fields": sum(1 for group in drift for field in group["fields"] if field["drift"]),
        },
        "findings": findings,
        "drift": drift,
        "nodes": records,
        "unreachable": [{"name": n, "reason": unreachable[n]} for n in sorted(unreachable, key=_natural)],
        "failed": [{"name": n, "reason": failed[n]} for n in sorted(failed, key=_natural)],
        "nominal": {"models": nominal, "pcie_lane_gbps": {str(k): v for k, v in PCIE_LANE_GBPS.items()},
                    "pcie_source": PCIE_SOURCE},
    }
