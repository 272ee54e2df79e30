# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: judges gathered GPU facts and lists findings."""

from __future__ import annotations

SEVERITIES = ("ok", "warning", "critical")

# Clock event reasons that mean the GPU is being held back by a fault or by heat, not by idling or by policy.
SLOWDOWN_REASONS = ("hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown")


def finding(gpu, code, severity, message):
    return {"gpu": gpu, "code": code, "severity": severity, "message": message}


def _gpu_findings(gpu, fabric):
    idx = gpu.get("index")
    label = "GPU %s" % idx
    if gpu.get("lost"):
        yield finding(idx, "gpu_lost", "critical", "%s is lost: it fell off the bus or stopped answering" % label)
        return
    if gpu.get("error"):
        yield finding(idx, "gpu_unreadable", "critical", "%s cannot be read through NVML: %s" % (label, gpu["error"]))
    mute = "uuid" in gpu and gpu.get("uuid") is None and gpu.get("name") is None
    if gpu.get("errors") and mute and not gpu.get("error"):
        # NVML gave a handle but not even the GPU's name or UUID: nothing read about it can be trusted.
        yield finding(idx, "gpu_unreadable", "critical", "%s gives a handle but not its name or UUID: NVML failed "
                      "to answer %s" % (label, "; ".join(gpu["errors"])))
    elif gpu.get("errors"):
        yield finding(idx, "nvml_error", "warning", "%s: NVML failed to answer %s" % (label, "; ".join(gpu["errors"])))
    volatile = ((gpu.get("ecc_errors") or {}).get("volatile") or {}).get("uncorrected")
    if volatile:
        yield finding(idx, "ecc_uncorrected", "critical",
                      "%s has %d uncorrectable ECC errors since the driver loaded" % (label, volatile))
    rows = gpu.get("remapped_rows") or {}
    if rows.get("failure"):
        yield finding(idx, "row_remap_failure", "critical", "%s failed to remap a memory row" % label)
    if rows.get("pending"):
        yield finding(idx, "row_remap_pending", "warning", "%s has a row remap pending: reset the GPU" % label)
    if gpu.get("retired_pages_pending"):
        yield finding(idx, "retired_pages_pending", "warning", "%s has page retirements pending: reset the GPU" % label)
    temp, slowdown = gpu.get("temperature_c"), gpu.get("temperature_slowdown_c")
    if temp is not None and slowdown is not None and temp >= slowdown:
        yield finding(idx, "temperature_slowdown", "warning",
                      "%s is at %d C, at or past its slowdown threshold of %d C" % (label, temp, slowdown))
    reasons = gpu.get("clocks_event_reasons")
    slow = [r for r in reasons or [] if r in SLOWDOWN_REASONS]
    if slow:
        yield finding(idx, "clocks_slowdown", "warning", "%s clocks are held down: %s" % (label, ", ".join(slow)))
    links = gpu.get("nvlinks") or []
    down = [link["index"] for link in links if not link.get("active")]
    if down and fabric:
        yield finding(idx, "nvlink_down", "warning", "%s has %d of %d NVLinks down: %s"
                      % (label, len(down), len(links), ", ".join(str(d) for d in down)))
    pcie = gpu.get("pcie") or {}
    if pcie.get("width_current") and pcie.get("width_max") and pcie["width_current"] < pcie["width_max"]:
        yield finding(idx, "pcie_width_degraded", "warning", "%s PCIe link runs at x%d of x%d"
                      % (label, pcie["width_current"], pcie["width_max"]))
    # An idle GPU lowers its PCIe generation to save power; below the maximum under load is a fault (a riser, a
    # slot, a BIOS setting).
    busy = reasons is not None and "gpu_idle" not in reasons
    if busy and pcie.get("gen_current") and pcie.get("gen_max") and pcie["gen_current"] < pcie["gen_max"]:
        yield finding(idx, "pcie_gen_degraded", "warning", "%s PCIe link runs at gen %d of gen %d while busy"
                      % (label, pcie["gen_current"], pcie["gen_max"]))
    if gpu.get("persistence_mode") is False:
        yield finding(idx, "persistence_off", "warning",
                      "%s has persistence mode off: the driver state is torn down between jobs" % label)


def assess(gpus, expected_gpu_count=None):
    """Return ``{"status": ok|warning|critical, "findings": [...]}`` for a list of per-GPU facts."""
    findings = []
    if expected_gpu_count is not None and len(gpus) < expected_gpu_count:
        findings.append(finding(None, "gpu_count_low", "critical", "%d GPUs visible, %d expected"
                                % (len(gpus), expected_gpu_count)))
    # Unconnected NVLink ports are normal on PCIe cards without bridges; a link down matters where the node has
    # an NVLink fabric, i.e. some GPU has a link up.
    fabric = any(link.get("active") for gpu in gpus for link in gpu.get("nvlinks") or [])
    for gpu in gpus:
        findings.extend(_gpu_findings(gpu, fabric))
    return {"status": worst(findings), "findings": findings}


# How gpu_facts begins the error of a PCI bus it cannot list.
PCI_UNREADABLE = "PCI devices of"


def assess_node(facts, expected_gpu_count=None):
    """Judge a node from its ``ansible_facts.nvidia``: the GPUs, and a driver that GPUs on the bus need."""
    result = assess(facts.get("gpus") or [], expected_gpu_count)
    # A function whose class cannot be read may be a GPU.
    on_bus = [d for d in facts.get("pci_devices") or [] if d.get("kind") in ("gpu", "unknown")]
    # Without NVML and without the PCI bus nobody can tell whether GPUs are left without a driver.
    unreadable = [e for e in facts.get("errors") or [] if e.startswith(PCI_UNREADABLE)]
    if unreadable:
        severity = "warning" if facts.get("driver_loaded") else "critical"
        result["findings"].insert(0 if severity == "critical" else len(result["findings"]),
                                  finding(None, "pci_unreadable", severity, "; ".join(unreadable)))
    if facts.get("driver_mismatch"):
        # The driver changed without a reboot: nothing can use the GPUs until the installed driver is loaded.
        result["findings"].insert(0, finding(None, "driver_mismatch", "critical", "reboot required: %s" % (
            facts.get("reason"),)))
    elif not facts.get("driver_loaded") and (on_bus or expected_gpu_count):
        result["findings"].insert(0, finding(None, "driver_unavailable", "critical", facts.get("reason")))
    elif facts.get("driver_loaded") and facts.get("gpu_count", 0) is None:
        result["findings"].insert(0, finding(None, "gpu_count_unknown", "critical", facts.get("reason")))
    else:
        nvml_errors = [e for e in facts.get("errors") or [] if not e.startswith(PCI_UNREADABLE)]
        if nvml_errors:
            result["findings"].insert(0, finding(None, "nvml_error", "warning",
                                                 "NVML failed to answer %s" % "; ".join(nvml_errors)))
    result["status"] = worst(result["findings"])
    return result


def worst(findings):
    rank = max([SEVERITIES.index(f["severity"]) for f in findings] or [0])
    return SEVERITIES[rank]


def at_least(verdict, threshold):
    """Whether ``verdict`` is as bad as ``threshold`` (``never`` is never reached)."""
    return threshold in SEVERITIES and SEVERITIES.index(verdict) >= SEVERITIES.index(threshold) > 0
