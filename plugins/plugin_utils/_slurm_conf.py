# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: Slurm's view of a node's GPUs from ansible_facts.nvidia, as Slurm 24.11's
NVML autodetection describes them (GRES records), the shards and MPS shares of its whole GPUs, the slurm.conf and
gres.conf lines made from them, and what slurmd -C and slurmd -G print."""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import normalise_bus_id, ranges
from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import SlurmError

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
# gres/shard and gres/mps: GRES that share a GPU (src/plugins/gres/common/gres_c_s.c), one gres.conf line per whole
# GPU with its File= (which is how a GPU in MIG mode gets none: its MIG devices' files never match).
SHARING = ("shard", "mps")
# At most this many shards per GPU. Slurm takes any count, but each job on a shard is a CUDA context of its own (a few
# hundred MiB of GPU memory before it does anything), so even an 80 GB GPU holds about a hundred at once; a larger
# count is a mistake (a node's total given per GPU), and Slurm advises no more shards than jobs that can run at once.
SHARDS_MAX = 128
# gres/mps counts a GPU in hundredths: a job's --gres=mps:N is N percent of one GPU (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE).
MPS_PER_GPU = 100
# Drivers from 470.42.01 give each MIG device a MIG-<uuid>; slurmd names those of older ones MIG-<GPU uuid>/<gi>/<ci>.
MIG_UUID_DRIVER = (470, 42, 1)


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


def check_shards(shards, name="shards_per_gpu"):
    """Refuse a shard count per GPU that is not a whole number from 0 (no shards) to SHARDS_MAX."""
    if isinstance(shards, bool) or not isinstance(shards, int) or not 0 <= shards <= SHARDS_MAX:
        raise SlurmError("%s must be a whole number from 0 (no shards) to %d, got %r" % (name, SHARDS_MAX, shards))
    return shards


def _sharing_records(name, per_gpu, records):
    """One record of gres/shard or gres/mps per whole GPU (not in MIG mode), with its GPU's type and device file."""
    return [dict(record, name=name, count=per_gpu, links=None) for record in records if record["mig_index"] is None]


def node_gres(facts, hardware=None, mig_minors=None, *, shards_per_gpu=0, mps=False):
    """The GPU GRES records slurmd's NVML autodetection finds on a node, from ansible_facts.nvidia; then, per whole
    GPU, a gres/shard record of shards_per_gpu and a gres/mps record of 100 where mps is true."""
    check_shards(shards_per_gpu)
    if not isinstance(mps, bool):
        raise SlurmError("mps must be true (gres/mps on every whole GPU) or false, got %r" % (mps,))
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
    sharing = _sharing_records("shard", shards_per_gpu, records) if shards_per_gpu else []
    sharing += _sharing_records("mps", MPS_PER_GPU, records) if mps else []
    return records + sharing


def _check_records(records):
    """Refuse records that are not what node_gres returns."""
    if not isinstance(records, list) or not all(isinstance(r, dict) and (r.get("name") == "gpu" or _is_share(r))
                                                for r in records):
        raise SlurmError("records must be the list slurm_node_gres returns, got %r" % (records,))
    for record in records:
        if not isinstance(record.get("type"), str) or not TYPE.match(record["type"]):
            raise SlurmError("GPU %s: type %r is not a Slurm GRES type" % (record.get("index"), record.get("type")))
    return records


def _is_share(record):
    """Whether a record is one of gres/shard or gres/mps with a positive count."""
    count = record.get("count")
    return record.get("name") in SHARING and isinstance(count, int) and not isinstance(count, bool) and count > 0


def _gpus(records):
    """The records of GPUs and MIG devices, without those of gres/shard and gres/mps."""
    return [record for record in records if record["name"] == "gpu"]


def sharing_totals(records):
    """Per GRES that shares a GPU (shard, mps), the node's total count, where it has any."""
    totals = {}
    for record in _check_records(records):
        if record["name"] in SHARING:
            totals[record["name"]] = totals.get(record["name"], 0) + record["count"]
    return totals


def gres_summary(records):
    """slurm.conf's Gres= value for the records: gpu:<type>:<count> per type, in first-seen order, then shard:<total>
    and mps:<total> (untyped: Slurm copies the type of each share from its GPU)."""
    counts = {}
    for record in _gpus(_check_records(records)):
        counts[record["type"]] = counts.get(record["type"], 0) + 1
    return ",".join(["gpu:%s:%d" % item for item in counts.items()]
                    + ["%s:%d" % item for item in sharing_totals(records).items()])


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
    if addr is not None and not (isinstance(addr, str) and (HOST_NAME.match(addr) or is_ip(addr))):
        raise SlurmError("addr: give a host name or an IP address, got %r" % (addr,))
    number = int(port) if isinstance(port, str) and re.match(r"\A[0-9]{1,5}\Z", port) else port
    if port is not None and not (isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= 65535):
        raise SlurmError("port: give a port number from 1 to 65535, got %r" % (port,))
    return number


def is_ip(text):
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
    if record["name"] in SHARING:
        file = record.get("file")
        if not (isinstance(file, str) and DEVICE_FILE.match(file) and "," not in file):
            raise SlurmError("GPU %s: %s file %r is not a GPU's device path"
                             % (record.get("index"), record["name"], record.get("file")))
        return "Name=%s Count=%d File=%s" % (record["name"], record["count"], record["file"])
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
    """gres.conf's lines: AutoDetect=nvml, or AutoDetect=off and one line per GPU or MIG device; then one line per
    whole GPU of each GRES that shares it (Name=shard Count=<n> File=/dev/nvidia<minor>), in both cases."""
    if not isinstance(autodetect, bool):
        raise SlurmError("autodetect must be true (AutoDetect=nvml) or false (one line per device), got %r"
                         % (autodetect,))
    _check_records(records)
    sharing = [_conf_line(record) for record in records if record["name"] in SHARING]
    if autodetect:
        return ["AutoDetect=nvml", *sharing]
    return ["AutoDetect=off", *[_conf_line(record) for record in _gpus(records)], *sharing]


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
    """Where what slurmd -G detected differs from the GPUs the facts expect, and from their shards and MPS shares where
    the records hold them; an empty list when they agree."""
    _check_records(expected)
    lines = parse_slurmd_gres(detected) if isinstance(detected, str) else detected
    if not isinstance(lines, list) or not all(isinstance(line, dict) and "count" in line for line in lines):
        raise SlurmError("detected must be what slurmd -G printed or its parsed lines, got %r" % (detected,))
    gpus = [line for line in lines if line.get("name") == "gpu"]
    expected_gpus = _gpus(expected)
    messages = _count_messages(expected_gpus, gpus)
    if expected and not lines:
        messages.append("slurmd -G printed no Gres line: it prints them with DebugFlags=Gres in slurm.conf, or "
                        "with -v")
    if any("file" in line for line in gpus) and all(record.get("file") for record in expected_gpus):
        messages += _file_messages(expected_gpus, gpus)
    return messages + _sharing_messages(expected, lines)


def _sharing_messages(expected, lines):
    """Per GRES that shares a GPU (shard, mps) that the records hold: its count on each GPU as slurmd -G detects it
    (by File, where it prints them), else the node's total. A GPU slurmd gives none of it (a MIG device) is no GPU
    of it."""
    messages = []
    for name in SHARING:
        want = [record for record in expected if record["name"] == name]
        have = [line for line in lines if line.get("name") == name and line["count"] > 0]
        if not want:
            continue
        if have and all("file" in line for line in have):
            by_file = {}
            for line in have:
                by_file[line["file"]] = by_file.get(line["file"], 0) + line["count"]
            for record in want:
                count = by_file.pop(record["file"], 0)
                if count != record["count"]:
                    messages.append("%s: %s Count=%d expected, slurmd -G detects %d"
                                    % (_label(record), name, record["count"], count))
            messages += ["slurmd -G gives %s Count=%d to File=%s, which gres.conf gives none" % (name, count, file)
                         for file, count in by_file.items()]
        elif sum(line["count"] for line in have) != sum(record["count"] for record in want):
            messages.append("%s: gres.conf/facts expect %d in all, slurmd -G detects %d"
                            % (name, sum(record["count"] for record in want), sum(line["count"] for line in have)))
    return messages


# The settings of slurm.conf that run scripts on the nodes. The role writes the first three (every script in the prolog
# and epilog directories, the job map's among them); a site's other scripts come from slurm_site_scripts
# (SITE_SCRIPT_KEYS). A slurm.conf that a site wrote with other values of any of them would lose them.
ROLE_SCRIPT_KEYS = ("Prolog", "Epilog", "PrologFlags")
# The program settings are read as one path each (src/common/read_config.c, Slurm 24.11); HealthCheckInterval is the
# seconds between two runs of HealthCheckProgram (0: never), HealthCheckNodeState the node states it runs in.
SITE_PROGRAM_KEYS = ("PrologSlurmctld", "EpilogSlurmctld", "TaskProlog", "TaskEpilog", "SrunProlog", "SrunEpilog",
                     "HealthCheckProgram")
SITE_SCRIPT_KEYS = (*SITE_PROGRAM_KEYS, "HealthCheckInterval", "HealthCheckNodeState")
SCRIPT_KEYS = (*ROLE_SCRIPT_KEYS, *SITE_SCRIPT_KEYS)
# The line the role's slurm.conf carries: a file with it was written by the role, whose site settings came from
# slurm_site_scripts, so that a changed slurm_site_scripts (one that removes a key too) rewrites it.
SITE_MARK = "# Written whole by accelops.gpu.slurm: a site's scripts come from slurm_site_scripts."
# A program's path as slurm.conf can hold it: absolute, shorter than Linux's PATH_MAX (4096 with its NUL), and none of
# what Slurm's parser reads otherwise (white space ends a value, a quote starts a quoted one, # a comment, a backslash
# escapes) nor any other control character.
SITE_PROGRAM = re.compile(r"\A/[^\s\"'#\\\x00-\x1f\x7f-\x9f]{1,4094}\Z")
# HealthCheckNodeState's words (_health_node_state, read_config.c; Slurm ignores others with an error in its log).
HEALTH_STATES = ("ALLOC", "ANY", "CYCLE", "IDLE", "MIXED", "NONDRAINED_IDLE")
# Slurm keeps HealthCheckInterval in 16 bits (s_p_handle_uint16 refuses more).
HEALTH_INTERVAL_MAX = 65535
# The problems of slurm_site_scripts said one by one; past them, a count.
SITE_PROBLEMS_SHOWN = 10


# One KEY=VALUE of a slurm.conf line as Slurm's parser (src/common/parse_config.c) finds them, several to a line: a key
# of letters, digits, _ and ., an optional operator, spaces around =, a value in double quotes or up to a space.
_CONF_PAIR = re.compile(r'\s*([A-Za-z0-9_.]+)\s*[-*+/]?=\s*(?:"([^"]*)"|(\S+))(?=\s|\Z)')
# Slurm's Include directive: another file read in its place, which may hold any setting.
_CONF_INCLUDE = re.compile(r"\s*include\s+(\S+)", re.IGNORECASE)


def _conf_lines(text):
    """text's logical lines as Slurm reads a slurm.conf: each line cut at a # that no odd run of backslashes escapes,
    a line that then ends in an odd run of backslashes (spaces after them allowed) joined with the next, and each
    backslash taken out (escaping the character after it)."""
    held = ""
    for raw in text.splitlines():
        line, escapes = raw, 0
        for at, char in enumerate(raw):
            if char == "#" and escapes % 2 == 0:
                line = raw[:at]
                break
            escapes = escapes + 1 if char == "\\" else 0
        trimmed = line.rstrip()
        if (len(trimmed) - len(trimmed.rstrip("\\"))) % 2:
            held += trimmed[:-1]
            continue
        yield re.sub(r"\\(.?)", r"\1", held + line, flags=re.S)
        held = ""
    if held:
        yield re.sub(r"\\(.?)", r"\1", held, flags=re.S)


def _shown(value):
    """A value as a message may show it: a text cut short, a whole number, else its kind alone (a huge number or a
    deeply nested list would not print; Ansible hands its own subclasses of list, dict and str)."""
    if isinstance(value, str):
        return repr(str(value[:60]) + ("..." if len(value) > 60 else ""))
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10 ** 12:
        return str(value)
    if value is None:
        return "null"
    kinds = ((bool, "a bool"), (int, "an int"), (float, "a float"), (dict, "a dict"), ((list, tuple), "a list"))
    return next((name for kind, name in kinds if isinstance(value, kind)), "a %s" % type(value).__name__)


def _site_value(key, value):
    """One setting of slurm_site_scripts as slurm.conf writes it, or why it cannot be (None, message)."""
    where = "slurm_site_scripts.%s" % key
    if key in SITE_PROGRAM_KEYS:
        if isinstance(value, str) and SITE_PROGRAM.match(value):
            return value, None
        return None, ("%s must be an absolute path (at most 4095 characters) with no white space, quote, #, backslash "
                      "or control character (slurm.conf would read those otherwise), got %s" % (where, _shown(value)))
    if key == "HealthCheckInterval":
        if isinstance(value, str) and re.match(r"\A[0-9]{1,5}\Z", value):
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= HEALTH_INTERVAL_MAX:
            return str(value), None
        return None, ("%s must be the seconds between two runs of HealthCheckProgram, a whole number from 0 to %d, got "
                      "%s" % (where, HEALTH_INTERVAL_MAX, _shown(value)))
    words = value.split(",") if isinstance(value, str) and len(value) <= 200 else None
    if words and all(word.upper() in HEALTH_STATES for word in words):
        return ",".join(word.upper() for word in words), None
    return None, ("%s must be one or more of %s joined by commas, got %s"
                  % (where, ", ".join(HEALTH_STATES), _shown(value)))


def site_scripts(value):
    """slurm_site_scripts checked: {"settings": {Key: "value"}, "problems": [message]}, each key in Slurm's spelling
    (given in any case, as Slurm reads them), each message naming slurm_site_scripts.KEY and what it may be. The caller
    refuses the whole when problems is not empty (settings then holds the keys that passed alone)."""
    settings, problems = {}, []
    if value is None:
        value = {}
    if not isinstance(value, dict):
        return {"settings": {}, "problems": ["slurm_site_scripts must be a dict of slurm.conf's settings (%s) and "
                                             "their values, got %s" % (", ".join(SITE_SCRIPT_KEYS), _shown(value))]}
    keys = {key.lower(): key for key in SITE_SCRIPT_KEYS}
    given = set()
    for name, setting in value.items():
        key = keys.get(name.lower()) if isinstance(name, str) else None
        if key is None:
            problems.append("slurm_site_scripts.%s is not a setting the role writes for a site; give %s (the other "
                            "settings of slurm.conf are the role's own)"
                            % (name if isinstance(name, str) and re.match(r"\A[A-Za-z0-9_]{1,60}\Z", name)
                               else _shown(name), ", ".join(SITE_SCRIPT_KEYS)))
        elif key in given:
            problems.append("slurm_site_scripts.%s is given twice (its keys are read in any case, as Slurm reads "
                            "them)" % key)
        else:
            given.add(key)
            written, problem = _site_value(key, setting)
            if problem is None:
                settings[key] = written
            else:
                problems.append(problem)
    if "HealthCheckProgram" in given and "HealthCheckInterval" not in given:
        problems.append("slurm_site_scripts.HealthCheckProgram needs slurm_site_scripts.HealthCheckInterval (seconds, "
                        "at least 1): Slurm runs the program only with an interval")
    if settings.get("HealthCheckInterval") == "0" and "HealthCheckProgram" in given:
        problems.append("slurm_site_scripts.HealthCheckInterval must be at least 1 with HealthCheckProgram: Slurm "
                        "never runs the program with an interval of 0")
    for key in ("HealthCheckInterval", "HealthCheckNodeState"):
        if key in given and "HealthCheckProgram" not in given:
            problems.append("slurm_site_scripts.%s needs slurm_site_scripts.HealthCheckProgram: Slurm does nothing "
                            "with it alone" % key)
    if len(problems) > SITE_PROBLEMS_SHOWN:
        # The preflight's failure joins them: a dict of thousands of other keys would make a message of megabytes.
        more = len(problems) - SITE_PROBLEMS_SHOWN
        problems[SITE_PROBLEMS_SHOWN:] = ["slurm_site_scripts: and %d more problems" % more]
    return {"settings": settings, "problems": problems}


def _same(key, have, want):
    """Whether a file's value of a script setting is the wanted one (HealthCheckNodeState's words in any case)."""
    if key == "HealthCheckNodeState" and isinstance(want, str):
        return have.upper() == want.upper()
    return have == want


def foreign_scripts(text, wanted):
    """The script settings (SCRIPT_KEYS; keys in any case, as Slurm reads them) that text (a slurm.conf) gives with a
    value other than wanted's ({key: value}), as KEY=VALUE texts in the file's order, and each Include (as "Include
    PATH": the role's slurm.conf has none, and the file it names may hold any of them). The text is read as Slurm
    reads it: several settings to a line, comments, continued lines, escapes and quoted values. A file that carries
    SITE_MARK on a line of its own was written by the role: its SITE_SCRIPT_KEYS came from slurm_site_scripts, and
    are not looked at (a changed slurm_site_scripts rewrites them)."""
    if not isinstance(text, str):
        raise SlurmError("the slurm.conf to read must be text, got %s" % type(text).__name__)
    marked = any(line.strip() == SITE_MARK for line in text.splitlines())
    keys = {key.lower(): key for key in (ROLE_SCRIPT_KEYS if marked else SCRIPT_KEYS)}
    found = []
    for line in _conf_lines(text):
        include = _CONF_INCLUDE.match(line)
        if include is not None:
            found.append("Include %s" % include.group(1)[:200])
            continue
        at = 0
        while True:
            pair = _CONF_PAIR.match(line, at)
            if pair is None:
                break
            at = pair.end()
            key = keys.get(pair.group(1).lower())
            value = pair.group(2) if pair.group(2) is not None else pair.group(3)
            if key is not None and not _same(key, value, wanted.get(key)):
                found.append("%s=%s" % (key, value[:200]))
    return found
