# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: Slurm's view of a node's GPUs from ansible_facts.nvidia, as Slurm 24.11's
NVML autodetection describes them, its slurm.conf and gres.conf lines, what slurmd -C, slurmd -G and scontrol print,
the health and maintenance decisions, and the pairs of nodes of the all-reduce across nodes."""

from __future__ import annotations

import ipaddress
import json
import re

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import normalise_bus_id, ranges, shown

# Every rule below follows Slurm 24.11: src/plugins/gpu/nvml/gpu_nvml.c (_get_system_gpu_list_nvml, _handle_mig,
# _nvml_get_nvlink_info), src/plugins/gpu/common/gpu_common.c, src/interfaces/gres.c (gres.conf parsing,
# _log_gres_slurmd_conf) and src/slurmd/slurmd/slurmd.c (_print_config, what slurmd -C prints).

# What a type may hold inside slurm.conf's Gres=name:type:count and gres.conf's Type=: no separator, no blank, and
# no parenthesis (scontrol prints a node's Gres as gpu:<type>:<count>(S:0-1), which a type with one would garble).
TYPE = re.compile(r"\A[a-z0-9_.+/-]+\Z")
DEVICE_FILE = re.compile(r"\A/[A-Za-z0-9_./-]+\Z")
CORES = re.compile(r"\A[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*\Z")
LINKS = re.compile(r"\A-?[0-9]+(,-?[0-9]+)*\Z")
GRES_ITEM = re.compile(r"\A[a-z0-9_]+(:[a-z0-9_.+/-]+)?:[1-9][0-9]*\Z")
NODE_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]*\Z")
HOST_NAME = re.compile(r"\A(?=.{1,253}\Z)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                       r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\Z")
EXTRA_KEY = re.compile(r"\A[A-Z][A-Za-z]*\Z")
EXTRA_VALUE = re.compile(r"\A[A-Za-z0-9_.,:+/@()\[\]-]+\Z")
MIG_MINOR = re.compile(r"\A(\S+)\s+([0-9]+)\Z")
# The line _print_config writes first; it adds " Gres=..." where autodetection found GPUs.
SLURMD_C = re.compile(r"\ANodeName=(?P<name>\S+) CPUs=(?P<cpus>[0-9]+) Boards=(?P<boards>[0-9]+) "
                      r"SocketsPerBoard=(?P<sockets_per_board>[0-9]+) CoresPerSocket=(?P<cores_per_socket>[0-9]+) "
                      r"ThreadsPerCore=(?P<threads_per_core>[0-9]+) RealMemory=(?P<real_memory>[0-9]+)"
                      r"(?: Gres=(?P<gres>\S+))?\Z")
# _log_gres_slurmd_conf's four formats with DebugFlags=Gres and the one without, after slurmd's own log prefix
# ("slurmd: ", "slurmd-<node>: ", "[2025-01-01T00:00:00.000] "), not after any other text (an error that quotes a
# line is not a GPU). Slurm 22.05 (Debian 12) prints them on stderr without Flags=, and a device without links ends in
# "(null)" where Links= would be.
SLURMD_G = re.compile(r"\A(?:\[[^\]\s]+\] )?(?:slurmd(?:-\S+)?: )?"
                      r"Gres Name=(?P<name>\S+) Type=(?P<type>\S+) Count=(?P<count>[0-9]+)"
                      r"(?: Index=(?P<index>-?[0-9]+))?(?: ID=[0-9]+)?(?: File=(?P<file>\S+))?"
                      r"(?: Cores=(?P<cores>\S*) CoreCnt=[0-9]+)?(?: (?:Links=(?P<links>\S*)|\(null\)))?"
                      r"(?: Flags=(?P<flags>\S*))?\Z")
# The NVML calls whose failure changes what slurmd would detect; other errors (a temperature) do not matter here.
SLURM_CALLS = ("nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetPciInfo", "nvmlDeviceGetMinorNumber",
               "nvmlDeviceGetCpuAffinity", "nvmlDeviceGetNvLink", "nvmlDeviceGetMig", "nvmlDeviceGetMaxMigDeviceCount",
               "nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetComputeInstanceId")
GPU_FIELDS = ("name", "uuid", "pci_bus_id", "minor_number")
# Per subset of gpu_facts, the per-GPU key that shows it was gathered.
SUBSET_KEYS = (("nvlink", "nvlinks"), ("mig", "mig_mode"), ("topology", "cpu_affinity"))
MIG_FIELDS = ("name", "uuid", "gpu_instance_id", "compute_instance_id")
COUNT_MAX = 65535
HARDWARE_KEYS = ("cpus", "boards", "sockets_per_board", "cores_per_socket", "threads_per_core", "real_memory")
NODE_KEYS = ("NodeName", "NodeAddr", "Port", "CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore",
             "RealMemory", "Gres", "State", "Sockets")
# Drivers from 470.42.01 give each MIG device a MIG-<uuid>; slurmd names those of older ones MIG-<GPU uuid>/<gi>/<ci>.
MIG_UUID_DRIVER = (470, 42, 1)


class SlurmError(ValueError):
    """Input from which Slurm's view of a node cannot be told; the message names the GPU or the field."""


def gres_type(name):
    """Slurm's GRES type for an NVML device name: lower case, blanks as "_" (gpu_common_underscorify_tolower)."""
    return "".join(c.lower() if "A" <= c <= "Z" else "_" if c == " " else c for c in name)


def mig_gres_type(gpu_name, mig_name):
    """Slurm's GRES type for a MIG device: its GPU's type up to the first "-", then the MIG name from "_<profile>"."""
    mig = gres_type(mig_name)
    at = mig.find("mig_")
    if at < 0:
        raise SlurmError("MIG device name %r holds no 'MIG <profile>': slurmd would name it from NVML's device "
                         "attributes, which the facts do not carry" % (mig_name,))
    return gres_type(gpu_name).split("-", 1)[0] + mig[at + 3:]


def parse_mig_minors(text):
    """/proc/driver/nvidia-caps/mig-minors ("gpu0/gi1/access 12" lines) as a dict of name -> minor."""
    if not isinstance(text, str):
        raise SlurmError("mig_minors must be the text of /proc/driver/nvidia-caps/mig-minors, got %s"
                         % type(text).__name__)
    minors = {}
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            match = MIG_MINOR.match(line.strip())
            if not match:
                raise SlurmError("mig_minors line %d is not '<name> <minor>': %r" % (number, line))
            minors[match[1]] = int(match[2])
    return minors


def _cpu_runs(cpulist, where):
    """The (first, last) runs of a Linux cpulist, each ascending."""
    if not isinstance(cpulist, str) or not CORES.match(cpulist):
        raise SlurmError("%s: cpu_affinity must be a cpulist such as 0-55,112-167, got %r" % (where, cpulist))
    runs = []
    for part in cpulist.split(","):
        first, _sep, last = part.partition("-")
        runs.append((int(first), int(last or first)))
        if runs[-1][1] < runs[-1][0]:
            raise SlurmError("%s: cpu_affinity must be a cpulist such as 0-55,112-167 (each range ascending), got %r"
                             % (where, cpulist))
    return runs


def check_hardware(hardware):
    """Refuse a hardware dict that is not what slurmd_hardware returns."""
    if not isinstance(hardware, dict):
        raise SlurmError("hardware must be what slurm_hardware reads from slurmd -C (a dict), got %s"
                         % type(hardware).__name__)
    for key in (*HARDWARE_KEYS, "sockets"):
        value = hardware.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SlurmError("hardware: %s must be a positive whole number, got %r" % (key, value))
        # Slurm keeps every count but the memory in 16 bits.
        if key != "real_memory" and value > COUNT_MAX:
            raise SlurmError("hardware: %s must be at most %d, got %r" % (key, COUNT_MAX, value))
    if hardware["sockets"] != hardware["boards"] * hardware["sockets_per_board"]:
        raise SlurmError("hardware: sockets (%d) must be boards times sockets_per_board (%d)"
                         % (hardware["sockets"], hardware["boards"] * hardware["sockets_per_board"]))
    return hardware


# Linux numbers every core's first thread, then their hyperthread siblings: CPU c is core c % (sockets * cores), the
# abstract index slurmd's xcpuinfo_mac_to_abs gives it (cores in socket order, as hwloc's logical order). A node
# numbered otherwise (siblings side by side) shows it: its GPU's CPUs do not fall on whole cores that way.
def cores(cpulist, hardware, where="cores"):
    """Slurm's core indices (gres.conf Cores=) of a GPU's CPUs; None without hardware or affinity, off the node, or
    on a node whose CPU numbering is not the one above."""
    if hardware is None or cpulist is None:
        return None
    check_hardware(hardware)
    runs = _cpu_runs(cpulist, where)
    total = hardware["sockets"] * hardware["cores_per_socket"]
    if max(last for _first, last in runs) >= hardware["cpus"]:
        return None
    if hardware["cpus"] != total * hardware["threads_per_core"]:
        return None
    cpus = {cpu for first, last in runs for cpu in range(first, last + 1)}
    found = {cpu % total for cpu in cpus}
    if len(found) * hardware["threads_per_core"] != len(cpus):
        return None
    return ranges(found)


def links(gpus, gpu):
    """Slurm's Links= of a GPU: per GPU by index, -1 for itself, else its active NVLinks that reach that GPU's bus."""
    lut = {}
    for other in gpus:
        lut.setdefault(normalise_bus_id(other["pci_bus_id"]), other["index"])
    counts = [0] * len(gpus)
    counts[gpu["index"]] = -1
    for link in gpu.get("nvlinks") or []:
        peer = lut.get(normalise_bus_id(link.get("remote_pci_bus_id"))) if link.get("active") else None
        if peer is not None and peer != gpu["index"]:
            counts[peer] += 1
    return ",".join(str(count) for count in counts)


def _check_facts(facts):
    """Refuse facts that are an NVML failure; return the GPUs."""
    if not isinstance(facts, dict):
        raise SlurmError("facts must be ansible_facts.nvidia as accelops.gpu.gpu_facts returns it (a dict), got %s"
                         % type(facts).__name__)
    if not facts.get("nvml_available") or not facts.get("driver_loaded"):
        raise SlurmError("NVML is not usable on this node, so slurmd cannot detect its GPUs: %s"
                         % (facts.get("reason") or "nvml_available or driver_loaded is false"))
    if facts.get("gpu_count") is None:
        raise SlurmError("NVML could not count the GPUs: %s" % (facts.get("reason") or "gpu_count is null"))
    gpus = facts.get("gpus")
    if isinstance(facts["gpu_count"], bool) or not isinstance(gpus, list) or len(gpus) != facts["gpu_count"]:
        raise SlurmError("gpu_count is %r but the facts list %s GPUs" % (
            facts["gpu_count"], len(gpus) if isinstance(gpus, list) else "no"))
    if not gpus and facts.get("errors"):
        raise SlurmError("NVML counted no GPU but failed to answer: %s" % "; ".join(facts["errors"]))
    for position, gpu in enumerate(gpus):
        _check_gpu(gpu, position)
    _check_bus(facts, gpus)
    return gpus


def _check_bus(facts, gpus):
    """Where the facts hold the PCI bus (gpu_facts' pci subset): refuse a GPU the nvidia driver holds that NVML does
    not list, which slurmd would not detect either: slurm.conf would quietly lose it."""
    devices = facts.get("pci_devices")
    if not isinstance(devices, list):
        return
    listed = {normalise_bus_id(gpu["pci_bus_id"]) for gpu in gpus}
    missing = [device["pci_bus_id"] for device in devices
               if isinstance(device, dict) and device.get("kind") == "gpu" and device.get("driver") == "nvidia"
               and isinstance(device.get("pci_bus_id"), str) and normalise_bus_id(device["pci_bus_id"]) not in listed]
    if missing:
        raise SlurmError("the nvidia driver holds %d GPU(s) that NVML does not list (%s): slurmd would not detect "
                         "them and Slurm would lose them; reset or replace them, or unbind them from the nvidia driver"
                         % (len(missing), ", ".join(missing)))


def _check_gpu(gpu, position):
    """Refuse a GPU slurmd would not describe as the facts do."""
    if not isinstance(gpu, dict) or gpu.get("index") != position:
        raise SlurmError("GPU %d: the facts' entry is not a GPU of index %d" % (position, position))
    if gpu.get("lost"):
        raise SlurmError("GPU %d is lost (NVML error 15): slurmd cannot detect it; reset or replace it" % position)
    if gpu.get("error"):
        raise SlurmError("GPU %d could not be read: %s" % (position, gpu["error"]))
    failed = [str(error) for error in gpu.get("errors") or [] if str(error).startswith(SLURM_CALLS)]
    if failed:
        raise SlurmError("GPU %d: NVML failed to answer what slurmd reads: %s" % (position, "; ".join(failed)))
    for subset, key in SUBSET_KEYS:
        if key not in gpu:
            raise SlurmError("GPU %d: the facts lack %s; gather the %s subset of accelops.gpu.gpu_facts"
                             % (position, key, subset))
    for field in GPU_FIELDS:
        if gpu.get(field) is None:
            raise SlurmError("GPU %d: NVML gave no %s" % (position, field))


def _mig_uuid(facts, gpu, mig):
    """slurmd's UniqueId of a MIG device: its MIG UUID, or MIG-<GPU uuid>/<gi>/<ci> before driver 470.42.01."""
    release = tuple(int(part) for part in re.findall(r"[0-9]+", facts.get("driver_version") or "")[:3])
    if release and release < MIG_UUID_DRIVER:
        return "MIG-%s/%d/%d" % (gpu["uuid"], mig["gpu_instance_id"], mig["compute_instance_id"])
    return mig["uuid"]


def _mig_file(gpu, mig, minors, label):
    """The device files of a MIG device: its GPU's, then the capabilities of its GPU and compute instances."""
    if minors is None:
        return None
    names = ("gpu%d/gi%d/access" % (gpu["minor_number"], mig["gpu_instance_id"]),
             "gpu%d/gi%d/ci%d/access" % (gpu["minor_number"], mig["gpu_instance_id"], mig["compute_instance_id"]))
    for name in names:
        if not minors.get(name):
            raise SlurmError("%s: mig-minors has no %s, so slurmd would skip this MIG device" % (label, name))
    return "/dev/nvidia%d,/dev/nvidia-caps/nvidia-cap%d,/dev/nvidia-caps/nvidia-cap%d" % (
        gpu["minor_number"], minors[names[0]], minors[names[1]])


def _record(gpu, gres, file, uuid, **fields):
    """One GRES record; a type slurm.conf or gres.conf cannot hold is refused."""
    record = {"name": "gpu", "type": gres, "count": 1, "index": gpu["index"], "mig_index": None, "uuid": uuid,
              "file": file, "links": None, "cores": None, "cpu_affinity": gpu["cpu_affinity"]}
    record.update(fields)
    if not TYPE.match(record["type"]):
        raise SlurmError("GPU %d: Slurm's type %r for %r holds characters slurm.conf and gres.conf cannot hold"
                         % (gpu["index"], record["type"], gpu["name"]))
    return record


def _mig_records(facts, gpu, gpu_cores, minors):
    """The records of a GPU in MIG mode: one per MIG device, in NVML's order."""
    devices = gpu.get("mig_devices") or []
    if not devices:
        raise SlurmError("GPU %d (/dev/nvidia%d) is in MIG mode without MIG devices: slurmd logs an error and offers "
                         "the whole GPU, which CUDA cannot use; create its MIG devices or disable MIG mode"
                         % (gpu["index"], gpu["minor_number"]))
    records = []
    for mig in devices:
        label = "GPU %d MIG device %s" % (gpu["index"], mig.get("index"))
        for field in MIG_FIELDS:
            if mig.get(field) is None:
                raise SlurmError("%s: NVML gave no %s" % (label, field))
        try:
            gres = mig_gres_type(gpu["name"], mig["name"])
        except SlurmError as error:
            raise SlurmError("%s: %s" % (label, error)) from None
        records.append(_record(gpu, gres, _mig_file(gpu, mig, minors, label), _mig_uuid(facts, gpu, mig),
                               mig_index=mig.get("index"), cores=gpu_cores))
    return records


def node_gres(facts, hardware=None, mig_minors=None):
    """The GPU GRES records slurmd's NVML autodetection finds on a node, from ansible_facts.nvidia."""
    gpus = _check_facts(facts)
    minors = parse_mig_minors(mig_minors) if mig_minors is not None else None
    records = []
    for gpu in gpus:
        gpu_cores = cores(gpu["cpu_affinity"], hardware, "GPU %d" % gpu["index"])
        if gpu.get("mig_mode"):
            records.extend(_mig_records(facts, gpu, gpu_cores, minors))
        else:
            records.append(_record(gpu, gres_type(gpu["name"]), "/dev/nvidia%d" % gpu["minor_number"], gpu["uuid"],
                                   links=links(gpus, gpu), cores=gpu_cores))
    return records


def _check_records(records):
    """Refuse records that are not what node_gres returns."""
    if not isinstance(records, list) or not all(isinstance(r, dict) and r.get("name") == "gpu" for r in records):
        raise SlurmError("records must be the list slurm_node_gres returns, got %r" % (records,))
    for record in records:
        if not isinstance(record.get("type"), str) or not TYPE.match(record["type"]):
            raise SlurmError("GPU %s: type %r is not a Slurm GRES type" % (record.get("index"), record.get("type")))
    return records


def gres_summary(records):
    """slurm.conf's Gres= value for the records: gpu:<type>:<count> per type, in first-seen order."""
    counts = {}
    for record in _check_records(records):
        counts[record["type"]] = counts.get(record["type"], 0) + 1
    return ",".join("gpu:%s:%d" % item for item in counts.items())


def slurmd_hardware(text):
    """The node's hardware as slurmd -C prints it."""
    if not isinstance(text, str):
        raise SlurmError("the input must be what slurmd -C printed, got %s" % type(text).__name__)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    match = SLURMD_C.match(lines[0]) if lines else None
    if not match:
        raise SlurmError("slurmd -C should print 'NodeName=<name> CPUs=<n> Boards=<n> SocketsPerBoard=<n> "
                         "CoresPerSocket=<n> ThreadsPerCore=<n> RealMemory=<MiB>' first, got %r"
                         % (lines[0] if lines else text))
    hardware = {key: int(match[key]) for key in HARDWARE_KEYS}
    hardware.update(name=match["name"], gres=match["gres"],
                    sockets=hardware["boards"] * hardware["sockets_per_board"])
    return check_hardware(hardware)


def _check_node(name, addr, port):
    """Refuse a node name, address or port slurm.conf cannot hold; return the port as a number."""
    if not isinstance(name, str) or not NODE_NAME.match(name) or name.upper() == "DEFAULT":
        raise SlurmError("name: a Slurm node name is letters, digits, '-', '_' and '.', starting with a letter or a "
                         "digit, and not DEFAULT; got %r" % (name,))
    if addr is not None and not (isinstance(addr, str) and (HOST_NAME.match(addr) or _is_ip(addr))):
        raise SlurmError("addr: give a host name or an IP address, got %r" % (addr,))
    number = int(port) if isinstance(port, str) and re.match(r"\A[0-9]{1,5}\Z", port) else port
    if port is not None and not (isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= 65535):
        raise SlurmError("port: give a port number from 1 to 65535, got %r" % (port,))
    return number


def _is_ip(text):
    """Whether the text is an IPv4 or IPv6 address, without an IPv6 scope (fe80::1%eth0): Python takes any text after
    the % as one, blanks and newlines included."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return "%" not in text


def _gres_value(gres):
    """A Gres= value from records or from a gres_summary string."""
    value = gres if isinstance(gres, str) else gres_summary(gres)
    if value and not all(GRES_ITEM.match(item) for item in value.split(",")):
        raise SlurmError("gres: give the records of slurm_node_gres or a Gres= value such as "
                         "gpu:nvidia_h100_80gb_hbm3:8, got %r" % (value,))
    return value


def _extra_items(extra):
    """Further Key=Value node parameters (Features, Weight, ...), checked."""
    if extra is None:
        return []
    if not isinstance(extra, dict):
        raise SlurmError("extra must be a dict of slurm.conf node parameters, got %s" % type(extra).__name__)
    items, seen = [], {key.lower() for key in NODE_KEYS}
    for key, given in extra.items():
        value = str(given) if isinstance(given, int) and not isinstance(given, bool) else given
        # slurm.conf's keys are case-insensitive: STATE= is State=.
        if not isinstance(key, str) or not EXTRA_KEY.match(key) or key.lower() in seen:
            raise SlurmError("extra: %r is not a node parameter this line may add (not one of %s, in any case, and "
                             "each once)" % (key, ", ".join(NODE_KEYS)))
        seen.add(key.lower())
        if not isinstance(value, str) or not EXTRA_VALUE.match(value):
            raise SlurmError("extra: %s=%r holds characters slurm.conf cannot hold" % (key, given))
        items.append("%s=%s" % (key, value))
    return items


def node_line(name, hardware, gres, addr=None, port=None, *, extra=None):
    """The slurm.conf NodeName= line of a node."""
    port = _check_node(name, addr, port)
    check_hardware(hardware)
    value = _gres_value(gres)
    parts = ["NodeName=%s" % name]
    parts += ["NodeAddr=%s" % addr] if addr is not None else []
    parts += ["Port=%d" % port] if port is not None else []
    parts += ["CPUs=%(cpus)d Boards=%(boards)d SocketsPerBoard=%(sockets_per_board)d "
              "CoresPerSocket=%(cores_per_socket)d ThreadsPerCore=%(threads_per_core)d RealMemory=%(real_memory)d"
              % hardware]
    parts += ["Gres=%s" % value] if value else []
    return " ".join(parts + _extra_items(extra) + ["State=UNKNOWN"])


def _conf_line(record):
    """One gres.conf line; a MIG device's several files go in MultipleFiles=, as gres.conf requires."""
    label = "GPU %s%s" % (record.get("index"), "" if record.get("mig_index") is None
                          else " MIG device %s" % record["mig_index"])
    file = record.get("file")
    if file is None:
        raise SlurmError("%s: no device file; a MIG device's files need the text of "
                         "/proc/driver/nvidia-caps/mig-minors (mig_minors)" % label)
    files = file.split(",") if isinstance(file, str) else [None]
    if not all(isinstance(f, str) and DEVICE_FILE.match(f) for f in files):
        raise SlurmError("%s: file %r is not a device path" % (label, file))
    line = "Name=gpu Type=%s %s=%s" % (record["type"], "MultipleFiles" if len(files) > 1 else "File", file)
    for key, pattern in (("cores", CORES), ("links", LINKS)):
        value = record.get(key)
        if value is not None and not (isinstance(value, str) and pattern.match(value)):
            raise SlurmError("%s: %s %r is not a Slurm %s list" % (label, key, value, key))
        line += " %s=%s" % (key.capitalize(), value) if value is not None else ""
    return line


def gres_conf_lines(records, autodetect):
    """gres.conf's lines: AutoDetect=nvml, or AutoDetect=off and one line per GPU or MIG device."""
    if not isinstance(autodetect, bool):
        raise SlurmError("autodetect must be true (AutoDetect=nvml) or false (one line per device), got %r"
                         % (autodetect,))
    _check_records(records)
    if autodetect:
        return ["AutoDetect=nvml"]
    return ["AutoDetect=off"] + [_conf_line(record) for record in records]


def parse_slurmd_gres(text):
    """The Gres lines slurmd -G logged, each as a dict of the fields it printed; other lines are left out."""
    if not isinstance(text, str):
        raise SlurmError("the input must be what slurmd -G printed, got %s" % type(text).__name__)
    found = []
    for line in text.splitlines():
        match = SLURMD_G.match(line.strip())
        if match:
            fields = {key: None if value == "(null)" else value
                      for key, value in match.groupdict().items() if value is not None}
            flags = fields.get("flags") or ""
            fields.update(count=int(fields["count"]), flags=[flag for flag in flags.split(",") if flag])
            if "index" in fields:
                fields["index"] = int(fields["index"])
            found.append(fields)
    return found


def _label(record):
    """How a message names an expected GPU or MIG device."""
    mig = "" if record.get("mig_index") is None else " MIG device %s" % record["mig_index"]
    return "GPU %s%s (%s)" % (record.get("index"), mig, record.get("file") or "no device file")


def _count_messages(expected, detected):
    """Per type: how many devices the facts expect and slurmd -G detects, where they differ."""
    want, have = {}, {}
    for record in expected:
        want[record["type"]] = want.get(record["type"], 0) + 1
    for line in detected:
        have[line.get("type")] = have.get(line.get("type"), 0) + line["count"]
    return ["GPU type %s: gres.conf/facts expect %d, slurmd -G detects %d"
            % (kind or "(none)", want.get(kind, 0), have.get(kind, 0))
            for kind in list(want) + [kind for kind in have if kind not in want] if want.get(kind) != have.get(kind)]


def _file_messages(expected, detected):
    """Per device file: a GPU missing, one more, or one with another type or other links."""
    by_file = {line["file"]: line for line in detected if "file" in line}
    messages = []
    for record in expected:
        line = by_file.pop(record["file"], None)
        if line is None:
            messages.append("%s: expected as type %s, but slurmd -G lists no GPU with this File"
                            % (_label(record), record["type"]))
            continue
        if line.get("type") != record["type"]:
            messages.append("%s: type %s expected, slurmd -G detects type %s"
                            % (_label(record), record["type"], line.get("type") or "(none)"))
        if record.get("links") and line.get("links") and record["links"] != line["links"]:
            messages.append("%s: Links=%s expected, slurmd -G detects Links=%s"
                            % (_label(record), record["links"], line["links"]))
    for file, line in by_file.items():
        messages.append("slurmd -G lists a GPU of type %s at Index=%s with File=%s, which the facts do not have"
                        % (line.get("type") or "(none)", line.get("index", "?"), file))
    return messages


def gres_mismatch(expected, detected):
    """Where what slurmd -G detected differs from the GPUs the facts expect; an empty list when they agree."""
    _check_records(expected)
    lines = parse_slurmd_gres(detected) if isinstance(detected, str) else detected
    if not isinstance(lines, list) or not all(isinstance(line, dict) and "count" in line for line in lines):
        raise SlurmError("detected must be what slurmd -G printed or its parsed lines, got %r" % (detected,))
    gpus = [line for line in lines if line.get("name") == "gpu"]
    messages = _count_messages(expected, gpus)
    if expected and not lines:
        messages.append("slurmd -G printed no Gres line: it prints them with DebugFlags=Gres in slurm.conf, or "
                        "with -v")
    if any("file" in line for line in gpus) and all(record.get("file") for record in expected):
        messages += _file_messages(expected, gpus)
    return messages


# scontrol show node --oneliner: "NodeName=n1 Arch=x86_64 ... Gres=gpu:t:8(S:0-1) ... State=IDLE+DRAIN ...
# Reason=gres/gpu count reported lower than configured (7 < 8) [slurm@2026-12-02T00:30:00]". Reason comes last and
# may hold spaces; the user in brackets says who set it. A reason is free text (anyone who drains a node writes it, and
# the health findings go into ours): NodeName=, Gres= and State= are read before it, the first of each, and the reason
# runs to the first "[user@time]" that ends it, not to one that its text holds.
_SCONTROL_FIELD = re.compile(r"(?:\A|\s)(NodeName|Gres|State)=(\S*)")
_SCONTROL_REASON = re.compile(r"\sReason=")
# Comment=, Extra=, InstanceId=, ReservationName=, TLSCert... or Topology= may follow the reason.
_AFTER_REASON = r"(?=\s+(?:Comment|Extra|InstanceId|InstanceType|ReservationName|TLSCertTokenSet|Topology)=|\s*\Z)"
_REASON_SIGNED = re.compile(r"\A(?P<reason>.*?\[(?P<user>[^\]@\s]+)@[^\]]*\])" + _AFTER_REASON)
_REASON_PLAIN = re.compile(r"\A(?P<reason>.*?)" + _AFTER_REASON)
# States in which the node cannot run jobs for a reason of Slurm's own.
BAD_STATES = ("DOWN", "NOT_RESPONDING", "UNKNOWN", "INVAL", "INVALID_REG", "FAIL", "FUTURE")


def parse_scontrol_nodes(lines):
    """Each node of `scontrol show node --oneliner` as {name, gres, states, reason, reason_user}."""
    nodes = {}
    for line in lines:
        start = _SCONTROL_REASON.search(line)
        fields = {}
        for key, value in _SCONTROL_FIELD.findall(line[:start.start()] if start else line):
            fields.setdefault(key, value)
        if "NodeName" not in fields:
            continue
        reason = user = None
        if start:
            rest = line[start.end():]
            signed = _REASON_SIGNED.match(rest)
            reason = (signed or _REASON_PLAIN.match(rest))["reason"].strip()
            user = signed["user"] if signed else None
        nodes[fields["NodeName"]] = {
            "name": fields["NodeName"],
            "gres": re.sub(r"\([^)]*\)", "", fields.get("Gres", "")).replace("(null)", ""),
            "states": fields.get("State", "").split("+"),
            "reason": reason if reason not in (None, "(null)", "") else None,
            "reason_user": user,
        }
    return nodes


def node_problems(lines, nodes, slurm_user="slurm"):
    """What keeps the controller's view of the nodes from their configuration; an empty list when nothing does.
    A drain set by anyone but Slurm itself is left to whoever set it."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise SlurmError("lines must be what scontrol show node --oneliner printed, got %r" % (lines,))
    if not isinstance(nodes, list) or not all(
            isinstance(n, dict) and isinstance(n.get("name"), str) and "gres" in n for n in nodes):
        raise SlurmError("nodes must be a list of {name, gres} (GRES records), got %r" % (nodes,))
    seen = parse_scontrol_nodes(lines)
    problems = []
    for node in nodes:
        name = node["name"]
        found = seen.get(name)
        if found is None:
            problems.append("%s: the controller does not know this node" % name)
            continue
        wanted = node["gres"] if isinstance(node["gres"], str) else gres_summary(node["gres"])
        if found["gres"] != wanted:
            problems.append("%s: the controller has Gres=%s, slurm.conf declares %s"
                            % (name, found["gres"] or "(none)", wanted or "(none)"))
        bad = [state for state in found["states"] if state in BAD_STATES]
        slurm_drain = "DRAIN" in found["states"] and found["reason_user"] in (slurm_user, None)
        if bad or slurm_drain:
            why = (", reason: %s" % found["reason"]) if found["reason"] else ""
            problems.append("%s: state %s%s" % (name, "+".join(found["states"]), why))
    return problems


STATE_PROBLEM_MAX = 300


def node_states(lines, names, error=None):
    """Each named node's state as the controller sees it: {name: {state, reason, problem}}. ``state`` is scontrol's
    State= (such as IDLE, MIXED+DRAIN), ``problem`` says why there is none: the name is not one Slurm can have, the
    controller could not be asked (``error``, its message), does not know the node or printed no state for it."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise SlurmError("the input must be what scontrol show node --oneliner printed, got %s" % type(lines).__name__)
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise SlurmError("names must be a list of Slurm node names (letters, digits, . _ -), got %s"
                         % shown(names))
    # A name Slurm cannot have (a host known by its IPv6 address, a name with a space) is that node's problem: the
    # other nodes' states, and this node's place in a report, do not depend on it.
    states = {name: {"state": None, "reason": None,
                     "problem": "%s is not a Slurm node name (letters, digits, . _ -)" % shown(name, 60)}
              for name in names if not NODE_NAME.match(name)}
    if error is not None:
        error = " ".join(str(error).split())[:STATE_PROBLEM_MAX] or "no message"
        states.update({name: {"state": None, "reason": None,
                              "problem": "Slurm's controller could not be asked: %s" % error}
                       for name in names if name not in states})
        return states
    seen = parse_scontrol_nodes(lines)
    for name in names:
        if name in states:
            continue
        found = seen.get(name)
        if found is None:
            states[name] = {"state": None, "reason": None, "problem": "Slurm's controller does not know this node"}
        else:
            state = "+".join(found["states"]) or None
            states[name] = {"state": state, "reason": found["reason"],
                            "problem": None if state else "Slurm's controller printed no state for this node"}
    return states


HEALTH_SEVERITIES = ("ok", "warning", "critical")
HEALTH_REASON_MAX = 200
# After the prefix, the mark of a node taken out of service for maintenance (a driver upgrade) by this collection.
MAINTENANCE_TAG = "maintenance:"
_UNPRINTABLE = re.compile(r"[^ -~]+")


def _health_reason(prefix, findings, drain_on):
    """The drain reason: the prefix, then the findings that reach drain_on, worst first, in one printable line."""
    level = HEALTH_SEVERITIES.index(drain_on)
    shown = [f for f in findings if f.get("severity") in HEALTH_SEVERITIES
             and HEALTH_SEVERITIES.index(f["severity"]) >= level]
    shown.sort(key=lambda f: -HEALTH_SEVERITIES.index(f["severity"]))
    text = "; ".join(_UNPRINTABLE.sub(" ", str(f.get("message") or f.get("code") or "?")).strip() for f in shown)
    reason = "%s %s" % (prefix, text or "GPU health %s" % drain_on)
    return reason if len(reason) <= HEALTH_REASON_MAX else reason[:HEALTH_REASON_MAX - 3] + "..."


def _check_prefix(prefix):
    if not isinstance(prefix, str) or not re.match(r"\A[A-Za-z0-9_.:-]{1,32}\Z", prefix):
        raise SlurmError("prefix must be 1 to 32 letters, digits or _ . : -, got %r" % (prefix,))


def _drained(node):
    return any(state in node["states"] for state in ("DRAIN", "DRAINED", "DRAINING"))


def _for_maintenance(node, prefix):
    return (node["reason"] or "").startswith("%s %s" % (prefix, MAINTENANCE_TAG))


def _unsigned_reason(node):
    """A node's reason without the "[user@time]" that Slurm adds to it."""
    return re.sub(r"\s*\[[^\]]*\]\s*\Z", "", node["reason"] or "")


def _one_line(text, limit=HEALTH_REASON_MAX):
    text = " ".join(_UNPRINTABLE.sub(" ", text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def health_actions(lines, verdicts, drain_on="critical", prefix="accelops-gpu:"):
    """What to tell Slurm after a health check: drain each node whose verdict reaches drain_on (unless a person
    drained it already), resume each node that this collection drained and that is healthy again. Each action is
    {node, action: drain|resume, reason}; a node without a verdict, or with `unknown`, is left as it is."""
    if drain_on not in HEALTH_SEVERITIES[1:]:
        raise SlurmError("drain_on must be warning or critical, got %r" % (drain_on,))
    _check_prefix(prefix)
    if isinstance(lines, str):
        lines = lines.splitlines()
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise SlurmError("lines must be what scontrol show node --oneliner printed, got %r" % (lines,))
    if not isinstance(verdicts, list) or not all(
            isinstance(v, dict) and isinstance(v.get("name"), str) and "verdict" in v
            and isinstance(v.get("findings") or [], list) and all(isinstance(f, dict) for f in v.get("findings") or [])
            for v in verdicts):
        raise SlurmError("verdicts must be a list of {name, verdict, findings} (gpu_health's results, findings a "
                         "list of {severity, message}), got %r" % (verdicts,))
    names = [v["name"] for v in verdicts]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        # One node judged twice (two hosts with one slurm_node_name) could be drained and resumed in one run.
        raise SlurmError("verdicts: each node once, but %s come more than once" % ", ".join(twice))
    nodes = parse_scontrol_nodes(lines)
    actions = []
    for entry in verdicts:
        node = nodes.get(entry["name"])
        if node is None or entry["verdict"] not in HEALTH_SEVERITIES:
            continue
        drained = _drained(node)
        ours = (node["reason"] or "").startswith(prefix + " ")
        if ours and drained and _for_maintenance(node, prefix):
            # Taken out for maintenance (a driver upgrade): the maintenance gives it back, not the health check.
            continue
        sick = HEALTH_SEVERITIES.index(entry["verdict"]) >= HEALTH_SEVERITIES.index(drain_on)
        if sick:
            reason = _health_reason(prefix, entry.get("findings") or [], drain_on)
            # A drain a person set stays as it is; ours gets the current findings.
            current = _unsigned_reason(node)
            if not drained or (ours and current != reason):
                actions.append({"node": entry["name"], "action": "drain", "reason": reason})
        elif ours and drained:
            # Slurm keeps the last reason after a resume: only a drained node is resumed.
            actions.append({"node": entry["name"], "action": "resume", "reason": None})
    return actions


def maintenance_action(lines, node, action, reason=None, *, prefix="accelops-gpu:", slurm_user="slurm", scope=""):
    """What to tell Slurm to take one node out of service for maintenance (action drain) or to give it back (resume).

    A maintenance's reasons are "<prefix> maintenance: <reason>" (one printable line of at most 200 characters), and
    scope is how they start ("driver upgrade"): a drain of another maintenance of this collection belongs to that one.
    drain: the node is drained with the reason; a drain of the same maintenance, of the health check, or that Slurm
    itself set (its reason signed by slurm_user, such as a GPU count that fell after a reboot) takes the new reason; a
    drain that anyone else set stays as it is, and the node stays theirs. resume: the node is resumed only when it is
    drained for this maintenance. Returns {node, argv (scontrol's arguments; empty when nothing is to be done), holder
    (none, maintenance, health, slurm or other: who drained the node before), drained, states, reason}."""
    if action not in ("drain", "resume"):
        raise SlurmError("action must be drain or resume, got %r" % (action,))
    _check_prefix(prefix)
    if not isinstance(node, str) or not NODE_NAME.match(node):
        raise SlurmError("node must be a node name, got %r" % (node,))
    if not isinstance(scope, str) or scope != _one_line(scope):
        raise SlurmError("scope must be one line of printable ASCII, got %r" % (scope,))
    wanted = None
    if action == "drain":
        text = _one_line(reason) if isinstance(reason, str) else ""
        if not text:
            raise SlurmError("reason: a drain for maintenance needs a reason (printable text), got %r" % (reason,))
        if not text.startswith(scope):
            raise SlurmError("reason: %r does not start with the maintenance's scope %r" % (text, scope))
        wanted = _one_line("%s %s %s" % (prefix, MAINTENANCE_TAG, text))
    if isinstance(lines, str):
        lines = lines.splitlines()
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise SlurmError("lines must be what scontrol show node --oneliner printed, got %r" % (lines,))
    found = parse_scontrol_nodes(lines).get(node)
    if found is None:
        raise SlurmError("the controller does not know the node %s" % node)
    current = _unsigned_reason(found)
    drained = _drained(found)
    if not drained:
        holder = "none"
    elif not current.startswith(prefix + " "):
        holder = "slurm" if found["reason_user"] == slurm_user else "other"
    elif not _for_maintenance(found, prefix):
        holder = "health"
    else:
        # Another maintenance of this collection (tasks_from: drain with another reason) keeps its node.
        mine = current.startswith("%s %s %s" % (prefix, MAINTENANCE_TAG, scope))
        holder = "maintenance" if mine else "other"
    argv = []
    if action == "drain" and holder != "other":
        if holder == "none" or current != wanted:
            argv = ["scontrol", "update", "nodename=" + node, "state=drain", "reason=" + wanted]
    elif action == "resume" and holder == "maintenance":
        argv = ["scontrol", "update", "nodename=" + node, "state=resume"]
    return {"node": node, "argv": argv, "holder": holder, "drained": drained, "states": found["states"],
            "reason": found["reason"]}


def allreduce_rounds(names):
    """The pairs of nodes whose all-reduce across nodes is measured: each node with the next one in name order (a
    ring; two nodes make one pair), in rounds in which no node is in two pairs, so that a round's pairs can run at
    once."""
    if not isinstance(names, (list, tuple)):
        raise SlurmError("the nodes must be a list of Slurm node names, got %s" % type(names).__name__)
    for name in names:
        if not isinstance(name, str) or not NODE_NAME.match(name):
            raise SlurmError("%s is not a Slurm node name (letters, digits, dots, dashes and underscores)"
                             % json.dumps(name, default=str))
    nodes = sorted(set(names))
    if len(nodes) < 2:
        return []
    if len(nodes) == 2:
        return [[nodes]]
    count = len(nodes)
    pairs = [[nodes[i], nodes[(i + 1) % count]] for i in range(count)]
    if count % 2:
        # The last pair closes the ring with the first node, which the first round already uses.
        rounds = [pairs[0:count - 1:2], pairs[1:count - 1:2], pairs[count - 1:]]
    else:
        rounds = [pairs[0::2], pairs[1::2]]
    return [round_ for round_ in rounds if round_]


FRAMEWORKS = ("pytorch", "tensorflow")
# A site's own srun options (a partition, an account, a QoS...): long options only, one printable line each, and none
# that the plan sets itself or that changes what srun prints (the ranks' JSON lines are read from its output).
SRUN_ARG = re.compile(r"\A--(?P<name>[a-z][a-z0-9-]*)(=[ -~]*)?\Z")
SRUN_OWN = ("job-name", "nodes", "nodelist", "ntasks", "ntasks-per-node", "distribution", "kill-on-bad-exit",
            "immediate", "time", "gres", "gpus", "gpus-per-node", "gpus-per-task", "label", "output", "error", "input",
            "export", "exclude", "multi-prog", "pty", "chdir", "unbuffered", "quiet", "verbose", "test-only",
            "overlap", "relative", "uid", "gid")
VENV = re.compile(r"\A/[A-Za-z0-9_./+-]+\Z")


def _setting(name, value, low, high):
    number = int(value) if isinstance(value, str) and re.match(r"\A[0-9]{1,6}\Z", value) else value
    if not isinstance(number, int) or isinstance(number, bool) or not low <= number <= high:
        raise SlurmError("%s must be a whole number from %d to %d, got %s" % (name, low, high,
                                                                              json.dumps(value, default=str)))
    return number


def srun_problems(srun_args):
    """A site's own srun options, checked: a list of long options (--partition=gpu), one printable line each, none
    of those the plan sets itself (SRUN_OWN)."""
    if not isinstance(srun_args, (list, tuple)) or not all(isinstance(arg, str) and SRUN_ARG.match(arg)
                                                           for arg in srun_args):
        raise SlurmError("srun_args must be a list of long srun options such as --partition=gpu (one printable "
                         "line each), got %s" % json.dumps(srun_args, default=str)[:200])
    own = [arg for arg in srun_args if SRUN_ARG.match(arg).group("name") in SRUN_OWN]
    if own:
        raise SlurmError("srun_args: %s is set by the all-reduce itself (or changes what srun prints); leave out %s"
                         % (", ".join(own), ", ".join("--" + name for name in SRUN_OWN)))
    return list(srun_args)


def _allreduce_node(node):
    """One node's part of the plan: {name, address, frameworks: {name: {venv, gpus, single} or null}}."""
    if not isinstance(node, dict) or not isinstance(node.get("name"), str) or not NODE_NAME.match(node["name"]):
        raise SlurmError("each node must be a dict with its Slurm name (name), got %s"
                         % json.dumps(node, default=str)[:200])
    address = node.get("address") or ""
    if not (address == "" or (isinstance(address, str) and (HOST_NAME.match(address) or _is_ip(address)))):
        raise SlurmError("%s: address must be a host name or an IP address, got %s"
                         % (node["name"], json.dumps(address, default=str)))
    if not isinstance(node.get("frameworks") or {}, dict):
        raise SlurmError("%s: frameworks must be a dict from pytorch and tensorflow to what each brings, got %s"
                         % (node["name"], json.dumps(node["frameworks"], default=str)[:200]))
    frameworks = {}
    for framework, found in (node.get("frameworks") or {}).items():
        # Not validated on the node: null, or an empty string where Ansible before 2.19 renders none so.
        if framework not in FRAMEWORKS or found is None or found == "":
            continue
        if not (isinstance(found, dict) and isinstance(found.get("venv"), str) and VENV.match(found["venv"])):
            raise SlurmError("%s: %s needs its virtual environment's absolute path (venv), got %s" % (
                node["name"], framework, json.dumps(found, default=str)[:200]))
        frameworks[framework] = dict(found, gpus=_setting("%s: %s gpus" % (node["name"], framework),
                                                          found.get("gpus", 0), 0, 1024),
                                     single=found.get("single") if isinstance(found.get("single"), dict) else None)
    return {"name": node["name"], "address": address, "frameworks": frameworks}


def allreduce_plan(nodes, *, framework="auto", megabytes=256, cpu_ranks=1, port=29400, timeout=300, wait=60,
                   srun_args=()):
    """How the all-reduce across nodes runs: the rounds of allreduce_rounds(), each pair as {pair, framework, mode
    (gpu: one rank per GPU, as many on each node as the node with fewer GPUs has; cpu: cpu_ranks ranks on the CPU of
    each node), ranks_per_node, argv (its srun), single_node (each node's own all-reduce record), failure}. A pair
    without a framework validated on both nodes gets a failure and no argv."""
    if framework not in ("auto", *FRAMEWORKS):
        raise SlurmError("framework must be auto, pytorch or tensorflow, got %s" % json.dumps(framework, default=str))
    megabytes = _setting("megabytes", megabytes, 1, 99999)
    cpu_ranks = _setting("cpu_ranks", cpu_ranks, 1, 16)
    port = _setting("port", port, 1024, 60000)
    timeout = _setting("timeout", timeout, 10, 99999)
    wait = _setting("wait", wait, 1, 99999)
    srun_args = srun_problems(srun_args)
    if not isinstance(nodes, (list, tuple)):
        raise SlurmError("the nodes must be a list, got %s" % type(nodes).__name__)
    by_name = {}
    for node in map(_allreduce_node, nodes):
        if node["name"] in by_name:
            raise SlurmError("two hosts are Slurm node %s: give each its own slurm_node_name" % node["name"])
        by_name[node["name"]] = node
    choices = FRAMEWORKS if framework == "auto" else (framework,)
    plan = []
    for round_ in allreduce_rounds(list(by_name)):
        jobs = []
        # TensorFlow's rank r listens at its pair's port + r: the pairs of a round (which may share an address) start
        # after the ports of the pairs before them, from port again past 65535.
        next_port = port
        for pair in round_:
            first, second = (by_name[name]["frameworks"] for name in pair)
            job = {"pair": pair, "framework": None, "mode": None, "ranks_per_node": 0, "argv": [],
                   "single_node": {}, "failure": None}
            jobs.append(job)
            common = [name for name in choices if name in first and name in second]
            if not common:
                job["failure"] = ("no framework (%s) is validated on both %s (%s) and %s (%s)" % (
                    " or ".join(choices), pair[0], ", ".join(sorted(first)) or "none", pair[1],
                    ", ".join(sorted(second)) or "none"))
                continue
            name = common[0]
            job["framework"] = name
            job["single_node"] = {pair[0]: first[name].get("single"), pair[1]: second[name].get("single")}
            if first[name]["venv"] != second[name]["venv"]:
                job["failure"] = ("%s's environment is %s on %s but %s on %s: one srun runs the same command on both"
                                  % (name, first[name]["venv"], pair[0], second[name]["venv"], pair[1]))
                continue
            gpus = min(first[name]["gpus"], second[name]["gpus"])
            job["mode"] = "gpu" if gpus else "cpu"
            job["ranks_per_node"] = per_node = gpus or cpu_ranks
            venv = first[name]["venv"]
            hosts = ",".join("%s=%s" % (node, by_name[node]["address"]) for node in pair if by_name[node]["address"])
            job["argv"] = (
                ["srun", "--job-name=accelops-gpu-allreduce", "--nodes=2", "--nodelist=" + ",".join(pair),
                 "--ntasks-per-node=%d" % per_node, "--distribution=block", "--kill-on-bad-exit=1",
                 "--immediate=%d" % wait, "--time=%d" % (-(-(timeout + 60) // 60))]
                + (["--gres=gpu:%d" % gpus] if gpus else [])
                + list(srun_args)
                + [venv + "/bin/python", "%s/share/accelops-gpu/validate_%s.py" % (venv, name),
                   "--multi-node=" + job["mode"], "--port=%d" % next_port,
                   "--allreduce-mb=%d" % megabytes, "--allreduce-timeout=%d" % timeout]
                + (["--hosts=" + hosts] if hosts else []))
            next_port += 2 * per_node
            if next_port + 2 * per_node > 65535:
                next_port = port
        plan.append(jobs)
    return plan


def _allreduce_text(record):
    if not isinstance(record, dict) or not record:
        return "none"
    return "%s GB/s (%s, %s ranks)" % (record.get("busbw_gbps"), record.get("backend"), record.get("ranks"))


def _allreduce_reports(stdout):
    """The ranks' JSON lines among what they printed (a framework's own log lines may come between them)."""
    reports = []
    for line in (stdout or "").splitlines():
        if not line.strip().startswith("{"):
            continue
        try:
            report = json.loads(line)
        except ValueError:
            continue
        if isinstance(report, dict) and "multi_node" in report:
            reports.append(report)
    return reports


def _rank(report):
    """A report's rank: a whole number, never a boolean."""
    rank = report.get("rank")
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else None


def _record_problem(job, record):
    """Why rank 0's record is not the pair's result, or None: a wrong sum, or a record of another run or shape."""
    numbers = ("ranks", "bytes", "seconds", "algbw_gbps", "busbw_gbps")
    if any(not isinstance(record.get(key), (int, float)) or isinstance(record.get(key), bool) for key in numbers):
        return "rank 0's record lacks %s: %s" % (", ".join(numbers), json.dumps(record, default=str)[:200])
    if record.get("correct") is not True:
        return "the all-reduce gave a wrong sum (rank 0's record: correct is %s)" % json.dumps(record.get("correct"))
    expected = {"framework": job.get("framework"), "ranks": 2 * (job.get("ranks_per_node") or 0),
                "nodes": sorted(job["pair"])}
    nodes = record.get("nodes")
    if isinstance(nodes, list) and all(isinstance(name, str) for name in nodes):
        nodes = sorted(nodes)
    found = {"framework": record.get("framework"), "ranks": record.get("ranks"), "nodes": nodes}
    if found != expected:
        return "rank 0's record is not this pair's run: %s, not %s" % (
            json.dumps(found, default=str)[:200], json.dumps(expected))
    return None


def allreduce_result(job, stdout="", stderr="", rc=None):
    """One pair of allreduce_plan() after its srun printed stdout (every rank's: rank 0 prints its record as one JSON
    line, a rank that fails its failure) and stderr (srun's own messages) and exited with rc (None: it never ended):
    {nodes, framework, mode, ranks_per_node, single_node, record, failure, summary}. The failure of the lowest rank
    that reported one wins; without one, srun's exit or the lack of rank 0's record is the failure. A job that the
    plan could not run keeps the plan's failure."""
    if not isinstance(job, dict) or not isinstance(job.get("pair"), list) or len(job["pair"]) != 2:
        raise SlurmError("the input must be one pair of slurm_allreduce_plan, got %s"
                         % json.dumps(job, default=str)[:200])
    if not isinstance(stdout, str) or not isinstance(stderr, str):
        raise SlurmError("what srun printed must be text, got %s and %s" % (type(stdout).__name__,
                                                                            type(stderr).__name__))
    result = {"nodes": list(job["pair"]), "framework": job.get("framework"), "mode": job.get("mode"),
              "ranks_per_node": job.get("ranks_per_node"),
              "single_node": job.get("single_node") if isinstance(job.get("single_node"), dict) else {},
              "record": None, "failure": job.get("failure")}
    if not result["failure"]:
        reports = _allreduce_reports(stdout)
        failed = sorted((report for report in reports if report.get("failure") is not None),
                        key=lambda report: _rank(report) if _rank(report) is not None else -1)
        first = [report for report in reports if _rank(report) == 0 and report.get("failure") is None]
        said = [line.strip() for line in (stderr or "").splitlines() if line.strip()]
        if failed:
            result["failure"] = str(failed[0]["failure"]) or "rank %s failed without a message" % failed[0].get("rank")
        elif rc != 0 or not first:
            result["failure"] = ("srun never ended" if rc is None else "srun exited with %s" % rc if rc != 0
                                 else "no result from rank 0") + (": %s" % said[-1] if said else "")
        else:
            result["failure"] = _record_problem(job, first[0])
            result["record"] = None if result["failure"] else first[0]
    if result["failure"]:
        result["failure"] = _one_line(result["failure"], 500)
        measured = "FAILED: " + result["failure"]
    else:
        record = result["record"]
        measured = "%s %s %s all-reduce of %d MiB over %d ranks (%s): %s GB/s bus bandwidth" % (
            result["framework"], record.get("version"), record.get("backend"), record.get("bytes", 0) // 1048576,
            record.get("ranks", 0), "one per GPU" if result["mode"] == "gpu" else "on the CPU",
            record.get("busbw_gbps"))
    alone = ", ".join("%s %s" % (name, _allreduce_text(result["single_node"].get(name)))
                      for name in result["nodes"])
    result["summary"] = "%s: %s; each node alone: %s" % (" + ".join(result["nodes"]), measured, alone)
    return result
