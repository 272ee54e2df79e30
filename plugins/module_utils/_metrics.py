# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: GPU facts (as gpu_facts gathers them, health included) in Prometheus' text
exposition format.

What NVML gives is named, typed and labelled as NVIDIA's dcgm-exporter names it (DCGM_FI_DEV_GPU_TEMP{gpu="0",
UUID=..., pci_bus_id=..., device="nvidia0", modelName=..., Hostname=...}), so that dashboards and alert rules made for
dcgm-exporter read it unchanged; a MIG device's memory series carry GPU_I_PROFILE and GPU_I_ID as dcgm-exporter's do.
The collection's own series start with accelops_gpu_: whether NVML answered, the health verdict and each finding, the
driver's versions, lost GPUs, NVML calls that failed, clock event reasons, NVLink state and compute processes.

The node's name is in the label Hostname, or hostname as dcgm-exporter's main branch renamed it (NVIDIA/dcgm-exporter
#655; Node chooses). A GPU that jobs hold (a job map in dcgm-exporter's HPC convention, _job_map.py) has every series
once per job, with the job's id in hpc_job, as dcgm-exporter's are; a GPU no job holds has no hpc_job label.

An NVML error is never good news here: when NVML or the driver does not answer there is no GPU count and no
per-GPU series (not zero GPUs), accelops_gpu_nvml_up is 0, and the health verdict reads "unknown" unless the facts
already judged the node worse.
"""

from __future__ import annotations

try:
    from prometheus_client import generate_latest
    from prometheus_client.core import Metric
except ImportError:  # the node's environment lacks it: the exporter says so (_exporter.main), imports stay harmless
    generate_latest = Metric = None

# Prometheus' text format 0.0.4, as dcgm-exporter serves it (prometheus_client.exposition.CONTENT_TYPE_PLAIN_0_0_4).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
HEALTH_VALUES = {"ok": 0, "warning": 1, "critical": 2, "unknown": 3}
# The label of the node's name: dcgm-exporter's releases, and its main branch since #655.
HOSTNAME_LABELS = ("Hostname", "hostname")


def _path(*keys):
    def read(item):
        for key in keys:
            if not isinstance(item, dict):
                return None
            item = item.get(key)
        return item
    return read


def _flag(*keys):
    read = _path(*keys)

    def flag(item):
        value = read(item)
        return None if value is None else int(bool(value))
    return flag


# (name, type, help, reader of one GPU's facts): dcgm-exporter's field names and help texts for what NVML gives.
GPU_FAMILIES = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", _path("clocks_mhz", "sm")),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", _path("clocks_mhz", "memory")),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", _path("temperature_c")),
    ("DCGM_FI_DEV_SLOWDOWN_TEMP", "gauge", "Slowdown temperature for the device (in C).",
     _path("temperature_slowdown_c")),
    ("DCGM_FI_DEV_SHUTDOWN_TEMP", "gauge", "Shutdown temperature for the device (in C).",
     _path("temperature_shutdown_c")),
    ("DCGM_FI_DEV_FAN_SPEED", "gauge", "Fan speed for the device in percent 0-100.", _path("fan_speed_pct")),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", _path("power_draw_w")),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).",
     _path("energy_mj")),
    ("DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge", "Current power limit for the device (in W).", _path("power_limit_w")),
    ("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gauge", "Effective power limit that the driver enforces after taking into "
     "account all limiters (in W).", _path("power_limit_enforced_w")),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", _path("utilization_gpu_pct")),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", _path("utilization_memory_pct")),
    ("DCGM_FI_DEV_FB_TOTAL", "gauge", "Total framebuffer memory (in MiB).", _path("memory_total_mib")),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", _path("memory_free_mib")),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", _path("memory_used_mib")),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
     _path("ecc_errors", "volatile", "corrected")),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
     _path("ecc_errors", "volatile", "uncorrected")),
    ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "Total number of single-bit persistent ECC errors.",
     _path("ecc_errors", "aggregate", "corrected")),
    ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "Total number of double-bit persistent ECC errors.",
     _path("ecc_errors", "aggregate", "uncorrected")),
    ("DCGM_FI_DEV_RETIRED_PENDING", "counter", "Total number of pages pending retirement.",
     _flag("retired_pages_pending")),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors",
     _path("remapped_rows", "uncorrectable")),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors",
     _path("remapped_rows", "correctable")),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed",
     _flag("remapped_rows", "failure")),
    ("DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", "Whether remapping of rows is pending (a GPU reset is needed).",
     _flag("remapped_rows", "pending")),
    ("DCGM_FI_DEV_PCIE_LINK_GEN", "gauge", "PCIe current link generation.", _path("pcie", "gen_current")),
    ("DCGM_FI_DEV_PCIE_LINK_WIDTH", "gauge", "PCIe current link width.", _path("pcie", "width_current")),
    ("DCGM_FI_DEV_PERSISTENCE_MODE", "gauge", "Persistence mode for the device (1 on, 0 off).",
     _flag("persistence_mode")),
)


def nvml_bus_id(bus_id):
    """NVML's form of a PCI address, as dcgm-exporter's pci_bus_id label has it: 00000000:18:00.0."""
    if not isinstance(bus_id, str) or ":" not in bus_id:
        return bus_id
    parts = bus_id.split(":")
    if len(parts) == 3:
        parts[0] = parts[0].rjust(8, "0")
    return ":".join(parts).upper()


def _text(value):
    """A label value or help text as text that UTF-8 can hold: a surrogate (bytes the locale could not decode, in a
    path or an NVML message) is replaced, not a scrape that fails to encode."""
    value = value if isinstance(value, str) else str(value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", errors="replace").decode("utf-8")
    return value


class _Families:
    """What prometheus_client's generate_latest reads: anything with collect() (a Collector)."""

    def __init__(self, families):
        self.families = families

    def collect(self):
        return self.families


class Exposition:
    """Metric families (prometheus_client's Metric) in the order they are first added, each with its HELP, TYPE and
    samples, rendered by prometheus_client's generate_latest."""

    def __init__(self):
        self._families = {}
        self._seen = {}

    def add(self, name, kind, text, labels, value):
        """One sample. A value that is not a number (None where NVML gave nothing, or a reading of the wrong kind) is
        left out, and so is a second sample with the same labels: Prometheus refuses a whole scrape that holds the
        same series twice."""
        if not isinstance(value, (bool, int, float)):
            return
        family = self.declare(name, kind, text)
        # ASCII text as it is (nearly every label); anything else through _text.
        labels = {key: val if val.__class__ is str and val.isascii() else _text(val) for key, val in labels}
        key = tuple(labels.items())
        seen = self._seen[name]
        if key in seen:
            return
        seen.add(key)
        family.add_sample(name, labels, float(value))

    def declare(self, name, kind, text):
        """A family with no samples yet still says what it is (a scrape of a node without GPUs shows the names)."""
        family = self._families.get(name)
        if family is None:
            # prometheus_client names a counter family without its _total: generate_latest puts it back.
            family = Metric(name[:-6] if kind == "counter" and name.endswith("_total") else name, _text(text), kind)
            family.bare_counter = kind == "counter" and not name.endswith("_total")
            self._families[name] = family
            self._seen[name] = set()
        return family

    def families(self):
        """The families as prometheus_client's Metric objects, for a Collector's collect()."""
        return list(self._families.values())

    def text(self):
        return render(self.families())


def render(families):
    """Prometheus' text format (0.0.4) of metric families, by prometheus_client's generate_latest.

    generate_latest names the HELP and TYPE lines of every counter NAME_total (OpenMetrics' rule for counters), but
    dcgm-exporter's counters (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, ...) have no such
    suffix and their samples keep their own names: those two lines are put back to the samples' name, as
    dcgm-exporter writes them, or Prometheus would read the samples as untyped. A string replacement per such family
    on the finished text (well under a millisecond on 16 GPUs)."""
    text = generate_latest(_Families(families)).decode("utf-8")
    for family in families:
        if getattr(family, "bare_counter", False):
            name = family.name
            text = text.replace("# HELP %s_total " % name, "# HELP %s " % name, 1)
            text = text.replace("# TYPE %s_total counter\n" % name, "# TYPE %s counter\n" % name, 1)
    return text


class Node:
    """The node's name and the label that carries it (one of HOSTNAME_LABELS)."""

    __slots__ = ("label", "name")

    def __init__(self, name, label="Hostname"):
        if label not in HOSTNAME_LABELS:
            raise ValueError("the node's label is one of %s, got %r" % (", ".join(HOSTNAME_LABELS), label))
        self.name, self.label = name, label

    def labels(self):
        return [(self.label, self.name)]


def as_node(hostname):
    """A Node from a Node or a name (which the label Hostname carries)."""
    return hostname if isinstance(hostname, Node) else Node(hostname)


def gpu_labels(gpu, hostname, driver_version=None):
    """dcgm-exporter's labels of one GPU; hostname is the node's name or a Node."""
    labels = [("gpu", gpu.get("index")), ("UUID", gpu.get("uuid") or ""),
              ("pci_bus_id", nvml_bus_id(gpu.get("pci_bus_id") or "")),
              ("device", "nvidia%s" % gpu["minor_number"] if gpu.get("minor_number") is not None else ""),
              ("modelName", gpu.get("name") or ""), *as_node(hostname).labels()]
    if driver_version:
        labels.append(("DCGM_FI_DRIVER_VERSION", driver_version))
    return labels


def _list(value):
    return value if isinstance(value, list) else []


def _dicts(value):
    """The dicts of a list in the facts; anything else (a reading of the wrong kind) is left out, not a crash."""
    return [item for item in _list(value) if isinstance(item, dict)]


def _node_health(facts):
    """The verdict of the node: the facts' own, but never "ok" while NVML or the driver does not answer."""
    verdict = (facts.get("health") or {}).get("status") or "unknown"
    if verdict not in HEALTH_VALUES:
        verdict = "unknown"
    answered = facts.get("nvml_available") and facts.get("driver_loaded")
    if not answered and HEALTH_VALUES[verdict] < HEALTH_VALUES["critical"]:
        verdict = "unknown"
    return verdict


def exposition(facts, hostname, xid=None, jobs=None):
    """Every series for one node's facts as text (see collect)."""
    return collect(facts, hostname, xid, jobs=jobs).text()


def collect(facts, hostname, xid=None, out=None, jobs=None):
    """Every series for one node's facts (gpu_facts' ansible_facts.nvidia, with health), added to out (a new
    Exposition where None), which is returned. hostname is the node's name or a Node. xid is what the exporter's XID
    watcher counted ({"up", "error", "counts": {(gpu, code): n}, "last": {gpu: code}, "watched": [gpu, ...]}), None
    where nothing watches; jobs is the job map that was read (a _job_map.JobMap), None where none is read."""
    out = Exposition() if out is None else out
    node = as_node(hostname).labels()
    answered = bool(facts.get("nvml_available") and facts.get("driver_loaded"))
    out.add("accelops_gpu_nvml_up", "gauge", "Whether NVML and the NVIDIA driver answered (1) or not (0).", node,
            answered)
    if not answered:
        out.add("accelops_gpu_nvml_down_info", "gauge", "Why NVML or the driver did not answer.",
                [*node, ("reason", facts.get("reason") or "unknown")], 1)
    if facts.get("driver_version"):
        out.add("accelops_gpu_driver_info", "gauge", "The NVIDIA driver's versions (always 1).",
                [*node, ("driver_version", facts.get("driver_version")),
                 ("cuda_driver_version", facts.get("cuda_driver_version") or ""),
                 ("nvml_version", facts.get("nvml_version") or "")], 1)
    verdict = _node_health(facts)
    out.add("accelops_gpu_health_status", "gauge",
            "The node's GPU health verdict: 0 ok, 1 warning, 2 critical, 3 unknown (NVML did not answer).",
            node, HEALTH_VALUES[verdict])
    out.declare("accelops_gpu_health_finding", "gauge", "One finding of the health verdict (always 1).")
    for item in _dicts((facts.get("health") or {}).get("findings")):
        out.add("accelops_gpu_health_finding", "gauge", "", [
            *node, ("gpu", "" if item.get("gpu") is None else item.get("gpu")), ("code", item.get("code") or ""),
            ("severity", item.get("severity") or ""), ("message", item.get("message") or "")], 1)
    out.add("accelops_gpu_nvml_errors", "gauge", "NVML calls that failed in this read, for the node as a whole.",
            node, len(_list(facts.get("errors"))))
    if isinstance(xid, dict):
        out.add("accelops_gpu_xid_watch_up", "gauge", "Whether XID errors are being watched through NVML's events.",
                node, bool(xid.get("up")))
        if not xid.get("up"):
            out.add("accelops_gpu_xid_watch_down_info", "gauge", "Why XID errors are not being watched.",
                    [*node, ("reason", (xid.get("error") or "unknown")[:500])], 1)
        out.declare("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.")
        out.declare("accelops_gpu_xid_errors_total", "counter",
                    "XID errors of the GPU by code, since the exporter started.")
    if jobs is not None:
        # A file for a GPU that NVML does not list (the map numbers the GPUs otherwise, or names one that is gone)
        # puts its jobs on no series: a problem too, where NVML answered with its list.
        listed = {str(gpu.get("index")) for gpu in _dicts(facts.get("gpus"))}
        out.add("accelops_gpu_job_map_problems", "gauge",
                "Entries of the job map left out in this reading (not a GPU index that NVML lists, a link, not a "
                "regular file, too large, a line that is not a job id).", node,
                jobs.problems + (len(set(jobs.jobs) - listed) if answered else 0))
    if not answered:
        return out
    out.add("accelops_gpu_count", "gauge", "GPUs that NVML lists.", node, facts.get("gpu_count"))
    for name, kind, text, _read in GPU_FAMILIES:
        out.declare(name, kind, text)
    for gpu in _dicts(facts.get("gpus")):
        base = gpu_labels(gpu, hostname, facts.get("driver_version"))
        held = jobs.of(gpu.get("index")) if jobs is not None else []
        for labels in [[*base, ("hpc_job", job)] for job in held] or [base]:
            _gpu_series(out, gpu, labels, xid if isinstance(xid, dict) else None)
    return out


def _xid_series(out, gpu, labels, xid):
    """A GPU's XIDs: the last code as dcgm-exporter gives it (0: none since the exporter started) and a counter per
    code; a lost GPU's too (XID 79 is how it fell off the bus)."""
    index = gpu.get("index")
    if index not in _list(xid.get("watched")):
        return
    out.add("DCGM_FI_DEV_XID_ERRORS", "gauge", "", labels, (xid.get("last") or {}).get(index, 0))
    for (where, code), count in sorted((xid.get("counts") or {}).items()):
        if where == index:
            out.add("accelops_gpu_xid_errors_total", "counter", "", [*labels, ("xid", code)], count)


def _gpu_series(out, gpu, labels, xid=None):
    if xid is not None:
        _xid_series(out, gpu, labels, xid)
    out.add("accelops_gpu_lost", "gauge", "Whether the GPU fell off the bus or stopped answering (1) or not (0).",
            labels, bool(gpu.get("lost")))
    out.add("accelops_gpu_nvml_gpu_errors", "gauge", "NVML calls about this GPU that failed in this read.", labels,
            len(_list(gpu.get("errors"))) + (1 if gpu.get("error") else 0))
    if gpu.get("lost"):
        return
    for name, kind, text, read in GPU_FAMILIES:
        out.add(name, kind, text, labels, read(gpu))
    for reason in _list(gpu.get("clocks_event_reasons")):
        out.add("accelops_gpu_clocks_event_reason", "gauge",
                "A reason the clocks are held back now (always 1; gpu_idle when idle).", [*labels, ("reason", reason)],
                1)
    for link in _dicts(gpu.get("nvlinks")):
        out.add("accelops_gpu_nvlink_up", "gauge", "Whether the NVLink is active (1) or not (0).",
                [*labels, ("link", link.get("index"))], bool(link.get("active")))
    processes = gpu.get("processes")
    if isinstance(processes, list):
        out.add("accelops_gpu_compute_processes", "gauge", "Compute processes on the GPU.", labels, len(processes))
    for mig in _dicts(gpu.get("mig_devices")):
        mig_labels = [*labels, ("GPU_I_PROFILE", mig.get("profile") or ""), ("GPU_I_ID", mig.get("gpu_instance_id")),
                      ("mig_uuid", mig.get("uuid") or "")]
        total, used = mig.get("memory_total_mib"), mig.get("memory_used_mib")
        out.add("DCGM_FI_DEV_FB_TOTAL", "gauge", "", mig_labels, total)
        out.add("DCGM_FI_DEV_FB_USED", "gauge", "", mig_labels, used)
        if isinstance(total, int) and isinstance(used, int):
            out.add("DCGM_FI_DEV_FB_FREE", "gauge", "", mig_labels, total - used)
