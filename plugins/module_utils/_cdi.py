# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the CDI spec of a node's NVIDIA GPUs, built from NVML and the node's files
the way ``nvidia-ctk cdi generate`` (nvidia-container-toolkit 1.18) builds it, and an existing spec compared with
them."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import stat

from ansible_collections.accelops.gpu.plugins.module_utils import _files
from ansible_collections.accelops.gpu.plugins.module_utils._gpu_apply import FAULTS, ConfigError, describe_fault
from ansible_collections.accelops.gpu.plugins.module_utils._gpu_config import inventory
from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import text
from ansible_collections.accelops.gpu.plugins.module_utils._gpu_mig import MigManager
from ansible_collections.accelops.gpu.plugins.module_utils._health import finding
from ansible_collections.accelops.gpu.plugins.module_utils._numbers import normalise_bus_id
from ansible_collections.accelops.gpu.plugins.module_utils._nvml import GpuLost, NvmlCallError

try:
    import yaml
    HAS_YAML = True
except ImportError:  # PyYAML is needed only to read a YAML spec back (state=check and the findings)
    yaml = None
    HAS_YAML = False

KIND = "nvidia.com/gpu"
# The lowest CDI version that allows device names starting with a digit ("0") and hostPath in device nodes, the
# version nvidia-ctk writes for such a spec; every CDI-aware runtime since 2022 (Podman 4.3 included) reads it.
CDI_VERSION = "0.5.0"
# Device nodes of every container that gets any GPU (nvidia-ctk's controlDeviceNodeDiscoverer), where they exist.
CONTROL_NODES = ("/dev/nvidia-modeset", "/dev/nvidia-uvm-tools", "/dev/nvidia-uvm", "/dev/nvidiactl")
REQUIRED_CONTROL_NODE = "/dev/nvidiactl"
# nvidia-ctk's library search paths (pkg/lookup/library.go); the driver's libraries are the files named
# *.so.<driver version> in them, and in the vdpau folder beside the first hits.
LIBRARY_DIRS = (
    "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/x86_64-linux-gnu/nvidia/current",
    "/usr/lib/aarch64-linux-gnu/nvidia/current", "/lib64", "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
    "/lib/x86_64-linux-gnu/nvidia/current", "/lib/aarch64-linux-gnu/nvidia/current",
)
# nvidia-ctk's default PATH (internal/lookup/path.go); the module's own PATH is left out so that the spec does not
# depend on the environment Ansible runs the module in.
BINARY_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
BINARIES = ("nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
            "nvidia-cuda-mps-server", "nvidia-imex", "nvidia-imex-ctl")
# The driver's daemons' sockets and the MPS pipe folder (internal/discover/ipc.go), where they exist.
IPC_PATHS = (("/run/nvidia-persistenced/socket", "/var/run/nvidia-persistenced/socket"),
             ("/run/nvidia-fabricmanager/socket", "/var/run/nvidia-fabricmanager/socket"),
             ("/tmp/nvidia-mps",))
MOUNT_OPTIONS = ["ro", "nosuid", "nodev", "rbind", "rprivate"]
IPC_OPTIONS = ["nosuid", "nodev", "rbind", "rprivate", "noexec"]
FIRMWARE_DIRS = ("/lib/firmware/updates/{release}", "/lib/firmware/updates", "/lib/firmware/{release}",
                 "/lib/firmware")
MIG_MINORS = "driver/nvidia-caps/mig-minors"
# The hooks of nvidia-cdi-hook that the spec can call, in the order nvidia-ctk writes them; the default is what
# nvidia-ctk 1.18 and 1.19 write (update-application-profile came with 1.20; chmod is off by default since 1.17).
HOOKS = ("create-symlinks", "enable-cuda-compat", "update-ldcache", "disable-device-node-modification",
         "update-application-profile", "chmod")
DEFAULT_HOOKS = ("create-symlinks", "enable-cuda-compat", "update-ldcache", "disable-device-node-modification")
NAME_STRATEGIES = ("index", "uuid", "type-index")
DEFAULT_HOOK_PATH = "/usr/bin/nvidia-cdi-hook"
# The CDI versions a spec may declare, and the fields each part of a spec may hold (runtimes read specs strictly).
CDI_VERSIONS = ("0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0")
SPEC_KEYS = {"cdiVersion", "kind", "annotations", "devices", "containerEdits"}
DEVICE_KEYS = {"name", "annotations", "containerEdits"}
EDIT_KEYS = {"env", "deviceNodes", "netDevices", "hooks", "mounts", "intelRdt", "additionalGids"}
NODE_KEYS = {"path", "hostPath", "type", "major", "minor", "fileMode", "permissions", "uid", "gid"}
HOOK_KEYS = {"hookName", "path", "args", "env", "timeout"}
MOUNT_KEYS = {"hostPath", "containerPath", "options", "type"}
# The Go types of the entries' fields (a runtime that reads a value of another type refuses the whole spec); null is
# Go's zero value, and taken.
STRING_FIELDS = {"path", "hostPath", "type", "permissions", "containerPath", "hookName"}
STRING_LISTS = {"options", "args", "env"}
INTEGER_FIELDS = {"major", "minor", "fileMode", "uid", "gid", "timeout"}
HOOK_NAMES = ("prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop")
# A spec larger than this is not one nvidia-ctk or this module writes (8 GPUs with 7 MIG devices each: ~60 KiB).
READ_LIMIT = 16 * 1024 * 1024
DRIVER_RELEASE = r"[0-9]+\.[0-9]+(?:\.[0-9]+)?"
_LIBRARY_RELEASE = re.compile(r"/lib[^/]*\.so\.(%s)$" % DRIVER_RELEASE)
_FIRMWARE_RELEASE = re.compile(r"/firmware/nvidia/(%s)/" % DRIVER_RELEASE)
_COMPAT_RELEASE = re.compile(r"^--host-driver-version=(%s)$" % DRIVER_RELEASE)
_MIG_MINOR_LINE = re.compile(r"^(gpu[0-9]+/gi[0-9]+(?:/ci[0-9]+)?/access|config|monitor) ([0-9]+)$")


class CdiError(ConfigError):
    """The spec cannot be built or written: nothing was written."""


# ---------------------------------------------------------------------------------------------------------------------
# What NVML says


def read_gpus(session):
    """The driver release and every GPU of an open NVML session: ``{"driver_version", "gpus", "lost"}``.

    Each GPU is ``{index, uuid, minor, bus_id, mig_enabled, mig_devices}``, a MIG device ``{index, uuid,
    gpu_instance_id, compute_instance_id}``. A lost GPU is left out and listed in ``lost``; any other NVML error
    raises :class:`CdiError` (never fewer GPUs than there are).
    """
    try:
        version = text(session.call("nvmlSystemGetDriverVersion"))
    except (NvmlCallError, GpuLost) as exc:
        raise CdiError("NVML cannot give the driver version: %s; nothing was written" % exc) from None
    if not version or not re.match(r"\A%s\Z" % DRIVER_RELEASE, version):
        raise CdiError("NVML gives no usable driver version (%r); nothing was written" % (version,))
    try:
        found = inventory(session)
    except ConfigError as exc:
        raise CdiError(str(exc).replace("nothing was changed", "nothing was written")) from None
    manager = MigManager(session)
    gpus, lost = [], []
    for entry in found:
        if entry["lost"]:
            lost.append(entry["index"])
            continue
        try:
            gpus.append(_read_gpu(session, manager, entry))
        except GpuLost:
            lost.append(entry["index"])
        except NvmlCallError as exc:
            raise CdiError("GPU %d: %s; nothing was written" % (entry["index"], exc)) from None
    return {"driver_version": version, "gpus": gpus, "lost": lost}


def _read_gpu(session, manager, entry):
    index, handle = entry["index"], entry["handle"]
    where = "GPU %d" % index
    minor = session.call("nvmlDeviceGetMinorNumber", handle)
    if minor is None:
        raise CdiError("%s: NVML gives no device minor number, so its /dev/nvidia<N> is unknown; nothing was written"
                       % where)
    pci = session.call("nvmlDeviceGetPciInfo", handle)
    modes = session.call("nvmlDeviceGetMigMode", handle)
    gpu = {"index": index, "uuid": entry["uuid"], "minor": minor,
           "bus_id": normalise_bus_id(text(pci.busId)) if pci is not None else None,
           "mig_enabled": bool(modes and modes[0]), "mig_devices": []}
    if not gpu["uuid"]:
        raise CdiError("%s: NVML gives no UUID; nothing was written" % where)
    if gpu["mig_enabled"]:
        seen = len(session.errors)
        devices = manager.devices(handle)
        errors = session.errors[seen:]
        if errors:
            raise CdiError("%s: NVML cannot describe its MIG devices: %s; nothing was written"
                           % (where, "; ".join(errors)))
        for mig in devices:
            if not mig["uuid"] or mig["gpu_instance_id"] is None or mig["compute_instance_id"] is None:
                raise CdiError("%s: NVML gives MIG device %d no UUID or instance ids; nothing was written"
                               % (where, mig["index"]))
            gpu["mig_devices"].append({key: mig[key] for key in
                                       ("index", "uuid", "gpu_instance_id", "compute_instance_id")})
    return gpu


# ---------------------------------------------------------------------------------------------------------------------
# What the node has


def is_char_device(path):
    """Whether path (not followed if a link) is a character device; a path the kernel cannot take (a NUL in a spec
    written by hand) is not one."""
    try:
        return stat.S_ISCHR(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


class Host:
    """The node's files as nvidia-ctk reads them: libraries and binaries under ``driver_root``, device nodes under
    ``dev_root``, DRM devices in ``sysfs_root`` and MIG capability minors in ``proc_root``. Paths in the spec are the
    container's; a host path under a root other than / is written as ``hostPath``, as nvidia-ctk's --driver-root and
    --dev-root do."""

    def __init__(self, driver_root="/", dev_root=None, sysfs_root="/sys", proc_root="/proc", kernel_release=None):
        self.driver_root = driver_root
        self.dev_root = dev_root or driver_root
        self.sysfs_root = sysfs_root
        self.proc_root = proc_root
        self.kernel_release = kernel_release if kernel_release is not None else os.uname().release
        self._mig_minors = None

    @staticmethod
    def under(root, path):
        return path if root in ("", "/") else os.path.join(root, path.lstrip("/"))

    def dev(self, path):
        return self.under(self.dev_root, path)

    def drv(self, path):
        return self.under(self.driver_root, path)

    def node_entry(self, path):
        """The spec's device node for a container path: hostPath where the host has it elsewhere."""
        host = self.dev(path)
        return {"path": path, "hostPath": host} if host != path else {"path": path}

    def device_node(self, path):
        """A spec device node for the container path, or None when the host has no such character device."""
        return self.node_entry(path) if is_char_device(self.dev(path)) else None

    def mig_minors(self):
        """``{"gpu2/gi7/access": 66, ...}`` from the driver's mig-minors table; raises CdiError when unreadable."""
        if self._mig_minors is None:
            path = os.path.join(self.proc_root, MIG_MINORS)
            try:
                # Without blocking: a FIFO or device where the driver's table should be is refused, not waited on.
                descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
                with os.fdopen(descriptor, "rb") as handle:
                    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                        raise OSError(0, "not a regular file")
                    lines = handle.read(1024 * 1024).decode("ascii", errors="replace").splitlines()
            except OSError as exc:
                raise CdiError("%s cannot be read (%s): the MIG capability device nodes are unknown; nothing was "
                               "written" % (path, exc.strerror or exc)) from None
            found = {}
            for line in lines:
                match = _MIG_MINOR_LINE.match(line.strip())
                if match:
                    found[match.group(1)] = int(match.group(2))
            self._mig_minors = found
        return self._mig_minors

    def cap_node(self, capability):
        """The container path of a MIG capability's device node (/dev/nvidia-caps/nvidia-cap<minor>)."""
        minors = self.mig_minors()
        if capability not in minors:
            raise CdiError("%s has no %s: the driver does not know that MIG instance; nothing was written"
                           % (os.path.join(self.proc_root, MIG_MINORS), capability))
        return "/dev/nvidia-caps/nvidia-cap%d" % minors[capability]

    def drm_nodes(self, bus_id):
        """The container paths of the GPU's DRM nodes (/dev/dri/card1, /dev/dri/renderD128) that sysfs names."""
        if not bus_id:
            return []
        try:
            names = sorted(os.listdir(os.path.join(self.sysfs_root, "bus/pci/devices", bus_id, "drm")))
        except OSError:
            return []
        return ["/dev/dri/%s" % name for name in names if re.match(r"\A[A-Za-z0-9_-]+\Z", name)]

    def by_path_links(self, bus_id, nodes):
        """create-symlinks arguments for the /dev/dri/by-path links of the GPU's DRM nodes in ``nodes``."""
        links = []
        chosen = {node.get("hostPath", node["path"]) for node in nodes}
        for kind in ("card", "render"):
            link = self.dev("/dev/dri/by-path/pci-%s-%s" % (bus_id, kind))
            try:
                target = os.readlink(link)
            except OSError:
                continue
            if os.path.normpath(os.path.join(os.path.dirname(link), target)) in chosen:
                links.append("%s::%s" % (target, link))
        return links

    def libraries(self, version):
        """The driver's libraries of ``version``: ``(container path, host path)`` in nvidia-ctk's search order (each
        library folder, then the vdpau folders of those that hold one), each file once."""
        pattern = "*.so." + version
        found, seen, folders = [], set(), []
        for folder in LIBRARY_DIRS:
            hits = self._files(folder, pattern, seen)
            if hits:
                folders.append(folder)
                found.extend(hits)
        for folder in folders:
            found.extend(self._files(folder + "/vdpau", pattern, seen))
        return found, folders

    def _files(self, folder, pattern, seen, executable=False):
        host_folder = self.drv(folder)
        try:
            names = sorted(os.listdir(host_folder))
        except OSError:
            return []
        hits = []
        for name in names:
            if not fnmatch.fnmatchcase(name, pattern):
                continue
            host = os.path.join(host_folder, name)
            try:
                info = os.stat(host)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode) or (executable and not info.st_mode & 0o111):
                continue
            key = (info.st_dev, info.st_ino)
            if key in seen:
                continue
            seen.add(key)
            hits.append((folder + "/" + name, host))
        return hits

    def library_links(self, container, host):
        """create-symlinks arguments for one library: nvidia-ctk's fixed ones (libcuda.so, libGLX_indirect.so.0,
        libnvidia-opticalflow.so) and the SONAME and .so links the host has for it. nvidia-ctk reads the SONAME from
        the ELF header; here it is the link in the same folder that ldconfig made to the file (libcuda.so.1 ->
        libcuda.so.550.54.15), which is the same name on a node whose ldconfig has run."""
        folder, name = os.path.split(container)
        host_folder = os.path.dirname(host)
        stem = name.split(".so.", 1)[0]
        links = []
        fixed = {"libcuda": "libcuda.so.1::%s/libcuda.so", "libGLX_nvidia": name + "::%s/libGLX_indirect.so.0",
                 "libnvidia-opticalflow": "libnvidia-opticalflow.so.1::%s/libnvidia-opticalflow.so"}
        if stem in fixed:
            links.append(fixed[stem] % folder)
        soname = None
        try:
            candidates = sorted(os.listdir(host_folder))
        except OSError:
            candidates = []
        for candidate in candidates:
            if re.match(r"\A%s\.so\.[0-9]+\Z" % re.escape(stem), candidate) and candidate != name:
                path = os.path.join(host_folder, candidate)
                if os.path.islink(path) and os.path.basename(os.readlink(path)) == name:
                    soname = candidate
                    break
        if soname:
            links.append("%s::%s/%s" % (name, folder, soname))
        dot_so = os.path.join(host_folder, stem + ".so")
        if os.path.islink(dot_so):
            links.append("%s::%s/%s.so" % (soname or name, folder, stem))
        return links

    def firmware(self, version):
        """The GSP firmware files of ``version`` (nvidia/<version>/gsp*.bin in the kernel's firmware folders)."""
        found, seen = [], set()
        for template in FIRMWARE_DIRS:
            folder = template.format(release=self.kernel_release) + "/nvidia/" + version
            found.extend(self._files(folder, "gsp*.bin", seen))
        return found

    def binaries(self):
        found, seen = [], set()
        for name in BINARIES:
            for folder in BINARY_DIRS:
                hits = self._files(folder, name, seen, executable=True)
                if hits:
                    found.extend(hits)
                    break
        return found

    def ipc(self):
        found = []
        for candidates in IPC_PATHS:
            for path in candidates:
                host = self.drv(path)
                if os.path.exists(host):
                    found.append((path, host))
                    break
        return found


# ---------------------------------------------------------------------------------------------------------------------
# The spec


def hook(name, args, hook_path):
    return {"hookName": "createContainer", "path": hook_path,
            "args": [os.path.basename(hook_path), name, *args], "env": ["NVIDIA_CTK_DEBUG=false"]}


def mount(container, host, options):
    return {"hostPath": host, "containerPath": container, "options": list(options)}


def _depth_key(path):
    return (os.path.normpath(path).count("/"), path)


def sort_edits(edits):
    """nvidia-ctk's order: device nodes and mounts by depth, then path; empty parts left out; duplicates dropped."""
    result = {}
    for key in ("env", "deviceNodes", "hooks", "mounts"):
        items = []
        for item in edits.get(key) or []:
            if item not in items:
                items.append(item)
        if key == "deviceNodes":
            items.sort(key=lambda node: _depth_key(node["path"]))
        elif key == "mounts":
            items.sort(key=lambda entry: _depth_key(entry["containerPath"]))
        if items:
            result[key] = items
    return result


def device_names(strategies, gpu, mig=None):
    names = []
    for strategy in strategies:
        if strategy == "uuid":
            names.append(mig["uuid"] if mig else gpu["uuid"])
        else:
            prefix = "" if strategy == "index" else ("mig" if mig else "gpu")
            names.append("%s%d:%d" % (prefix, gpu["index"], mig["index"]) if mig else "%s%d" % (prefix, gpu["index"]))
    return list(dict.fromkeys(names))


def gpu_edits(host, gpu, hooks, hook_path, strict=True):
    where = "GPU %d (%s)" % (gpu["index"], gpu["uuid"])
    path = "/dev/nvidia%d" % gpu["minor"]
    own = host.device_node(path) or (None if strict else host.node_entry(path))
    if own is None:
        raise CdiError("%s: %s is not a character device: the driver has not made it (nvidia-modprobe or the "
                       "persistence daemon does); nothing was written" % (where, host.dev(path)))
    nodes = [own] + [node for node in (host.device_node(path) for path in host.drm_nodes(gpu["bus_id"])) if node]
    edits = {"deviceNodes": nodes, "hooks": []}
    links = host.by_path_links(gpu["bus_id"], nodes[1:]) if len(nodes) > 1 else []
    if links and "create-symlinks" in hooks:
        edits["hooks"].append(hook("create-symlinks", [arg for link in links for arg in ("--link", link)], hook_path))
    if "chmod" in hooks and any(node["path"].startswith("/dev/dri/") for node in nodes):
        edits["hooks"].append(hook("chmod", ["--mode", "755", "--path", "/dev/dri"], hook_path))
    return sort_edits(edits)


def mig_edits(host, gpu, mig, strict=True):
    where = "GPU %d MIG device %d (%s)" % (gpu["index"], mig["index"], mig["uuid"])
    paths = ["/dev/nvidia%d" % gpu["minor"],
             host.cap_node("gpu%d/gi%d/access" % (gpu["minor"], mig["gpu_instance_id"])),
             host.cap_node("gpu%d/gi%d/ci%d/access" % (gpu["minor"], mig["gpu_instance_id"],
                                                       mig["compute_instance_id"]))]
    nodes = []
    for path in paths:
        node = host.device_node(path) or (None if strict else host.node_entry(path))
        if node is None:
            raise CdiError("%s: %s is not a character device (nvidia-modprobe makes the MIG capability nodes); "
                           "nothing was written" % (where, host.dev(path)))
        nodes.append(node)
    return sort_edits({"deviceNodes": nodes})


def common_edits(host, version, hooks, hook_path, strict=True):
    """The edits of every container that gets a GPU: control nodes, the driver's libraries, firmware, binaries and
    sockets, and the hooks that link and index the libraries."""
    nodes = [node for node in (host.device_node(path) for path in CONTROL_NODES) if node]
    if not any(node["path"] == REQUIRED_CONTROL_NODE for node in nodes) and strict:
        raise CdiError("%s is not a character device: the driver's control device is missing; nothing was written"
                       % host.dev(REQUIRED_CONTROL_NODE))
    libraries, folders = host.libraries(version)
    if not libraries and strict:
        raise CdiError("no library of driver %s (*.so.%s) under %s in %s: the installed driver is not the loaded one; "
                       "nothing was written" % (version, version, host.driver_root, ", ".join(LIBRARY_DIRS)))
    mounts = [mount(container, hostpath, MOUNT_OPTIONS) for container, hostpath in libraries]
    edits = {"env": ["NVIDIA_CTK_LIBCUDA_DIR=" + ":".join(folders), "NVIDIA_VISIBLE_DEVICES=void"],
             "deviceNodes": nodes, "hooks": [], "mounts": []}
    links = list(dict.fromkeys(link for container, hostpath in libraries
                               for link in host.library_links(container, hostpath)))
    if links and "create-symlinks" in hooks:
        edits["hooks"].append(hook("create-symlinks", [arg for link in links for arg in ("--link", link)], hook_path))
    if "enable-cuda-compat" in hooks:
        edits["hooks"].append(hook("enable-cuda-compat", ["--host-driver-version=" + version], hook_path))
    library_folders = list(dict.fromkeys(os.path.dirname(container) for container, _host in libraries
                                         if re.match(r"\Alib.+\.so", os.path.basename(container))))
    if library_folders and "update-ldcache" in hooks:
        edits["hooks"].append(hook("update-ldcache", [arg for folder in library_folders
                                                      for arg in ("--folder", folder)], hook_path))
    if "disable-device-node-modification" in hooks:
        edits["hooks"].append(hook("disable-device-node-modification", [], hook_path))
    if "update-application-profile" in hooks:
        edits["hooks"].append(hook("update-application-profile", [], hook_path))
    mounts.extend(mount(container, hostpath, IPC_OPTIONS) for container, hostpath in host.ipc())
    mounts.extend(mount(container, hostpath, MOUNT_OPTIONS) for container, hostpath in host.firmware(version))
    mounts.extend(mount(container, hostpath, MOUNT_OPTIONS) for container, hostpath in host.binaries())
    edits["mounts"] = mounts
    return sort_edits(edits)


def build_spec(node, host, options, strict=True):
    """The spec nvidia-ctk would write for ``node`` (from :func:`read_gpus`) and ``host``, with ``options``
    (strategies, hooks, hook_path, all_device); also ``owners``, which maps each device name to the GPU index it
    belongs to and what it is ("GPU 0 (GPU-...)").

    Strict, a device node or library that is missing raises :class:`CdiError`, as do a node without devices and a spec
    that :func:`validate` refuses. Not strict (to compare an existing spec with), the spec names the nodes NVML implies
    whether they exist or not, and may name no device."""
    strategies, hooks, hook_path = options["strategies"], options["hooks"], options["hook_path"]
    devices, owners = [], {}
    for gpu in node["gpus"]:
        if gpu["mig_enabled"]:
            continue  # a GPU in MIG mode is offered as its MIG devices only, as nvidia-ctk does
        edits = gpu_edits(host, gpu, hooks, hook_path, strict)
        for name in device_names(strategies, gpu):
            devices.append({"name": name, "containerEdits": edits})
            owners[name] = (gpu["index"], "GPU %d (%s)" % (gpu["index"], gpu["uuid"]))
    for gpu in node["gpus"]:
        for mig in gpu["mig_devices"]:
            edits = mig_edits(host, gpu, mig, strict)
            for name in device_names(strategies, gpu, mig):
                devices.append({"name": name, "containerEdits": edits})
                owners[name] = (gpu["index"], "GPU %d MIG device %d (%s)" % (gpu["index"], mig["index"], mig["uuid"]))
    if not devices and strict:
        raise CdiError("NVML shows no GPU or MIG device to describe (a CDI spec needs at least one); nothing was "
                       "written")
    common = common_edits(host, node["driver_version"], hooks, hook_path, strict)
    if options["all_device"] and devices:
        merged = {}
        for device in devices:
            for key, items in device["containerEdits"].items():
                merged.setdefault(key, []).extend(items)
        devices.append({"name": "all", "containerEdits": sort_edits(merged)})
        owners["all"] = (None, "every device")
    devices.sort(key=lambda device: device["name"])
    spec = {"cdiVersion": CDI_VERSION, "kind": KIND, "devices": devices, "containerEdits": common}
    problems = validate(spec) if strict else []
    if problems:
        # NVML's own answer (a UUID that is no CDI name, one UUID for two devices) would make a spec that every runtime
        # refuses whole: no container would get any GPU.
        raise CdiError("the spec NVML's answer makes is not one a runtime accepts: %s; nothing was written"
                       % "; ".join(problems[:5]))
    return spec, owners


# ---------------------------------------------------------------------------------------------------------------------
# Writing and reading


# A string is written plain where neither YAML 1.1 (PyYAML) nor 1.2 (Go's yaml.v3) reads it as anything but that
# string: a number in either (0, 1e3, 0x1f, and 0:1, which YAML 1.1 reads as the base-60 number 1), a boolean or null
# word; anything else is a JSON string, which is also a YAML double-quoted scalar.
_PLAIN = re.compile(r"\A[A-Za-z0-9/_.=+-][A-Za-z0-9/_.:=@+,-]*\Z")
_NOT_PLAIN = re.compile(
    r"\A(?:[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?0[bBoOxX][0-9a-fA-F_]+|[-+]?\.(?:inf|nan)|-|~|y|n|yes|no|on|off|true|false|null)\Z", re.IGNORECASE)


def _scalar(value):
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    value = str(value)
    if _PLAIN.match(value) and not _NOT_PLAIN.match(value) and not value.endswith(":"):
        return value
    return json.dumps(value)


def _emit(value, column, lines, first_prefix=None):
    """Block YAML laid out as Go's yaml.v3 writes it (what nvidia-ctk writes): 4 columns per level, a sequence's
    items at its key's level + 4, a mapping inside an item beginning on the dash's line."""
    pad = " " * column
    if isinstance(value, dict):
        for position, (key, item) in enumerate(value.items()):
            lead = first_prefix if position == 0 and first_prefix is not None else pad
            child = column + 4 if first_prefix is None else column + 2
            if isinstance(item, (dict, list)):
                lines.append("%s%s:" % (lead, key))
                _emit(item, child, lines)
            else:
                lines.append("%s%s: %s" % (lead, key, _scalar(item)))
    else:
        for item in value:
            if isinstance(item, dict):
                _emit(item, column + 2, lines, first_prefix=pad + "- ")
            else:
                lines.append("%s- %s" % (pad, _scalar(item)))


def render(spec, path):
    """The spec's bytes: JSON for a .json path (compact, as nvidia-ctk writes it), else YAML."""
    if path.endswith(".json"):
        return json.dumps(spec, separators=(",", ":")).encode("utf-8")
    lines = ["---"]
    _emit(spec, 0, lines)
    return ("\n".join(lines) + "\n").encode("utf-8")


class _Loader(yaml.SafeLoader if HAS_YAML else object):
    """PyYAML's safe loader with every plain scalar a string (a CDI spec holds strings; YAML 1.1 would read the MIG
    device name 0:1 as the number 1) and without aliases (a spec needs none, and they can expand without end)."""

    yaml_implicit_resolvers: dict = {}  # noqa: RUF012 (PyYAML's own class attribute, emptied here)

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.MarkedYAMLError("while reading a CDI spec", None, "aliases are not allowed", event.start_mark)
        return super().compose_node(parent, index)


def parse(data, path):
    """The spec in ``data`` (bytes) as a dict; raises ValueError saying why it cannot be one."""
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("it is not UTF-8 text") from None
    if path.endswith(".json") or content.lstrip().startswith("{"):
        try:
            spec = json.loads(content)
        except (ValueError, RecursionError) as exc:
            raise ValueError("it is not JSON: %s" % exc) from None
    elif not HAS_YAML:
        raise LookupError("PyYAML")
    else:
        try:
            spec = yaml.load(content, Loader=_Loader)  # nosec: a safe loader, see _Loader
        except (yaml.YAMLError, RecursionError) as exc:
            raise ValueError("it is not YAML: %s" % " ".join(str(exc).split())) from None
    if not isinstance(spec, dict):
        raise ValueError("it is not a mapping")
    return spec


def validate(spec):
    """What makes ``spec`` one that a CDI runtime refuses (the checks of the CDI library's validation), as messages;
    empty for a valid spec."""
    problems = []
    unknown = sorted(set(spec) - SPEC_KEYS, key=str)
    if unknown:
        problems.append("unknown fields %s" % ", ".join(str(key) for key in unknown))
    version = str(spec.get("cdiVersion", "")).lstrip("v")
    if version not in CDI_VERSIONS:
        problems.append("cdiVersion %r is not a CDI version" % (spec.get("cdiVersion"),))
    if spec.get("kind") != KIND:
        problems.append("kind is %r, not %s" % (spec.get("kind"), KIND))
    devices = spec.get("devices")
    if not isinstance(devices, list) or not devices:
        problems.append("it lists no devices")
        devices = []
    problems.extend(_edit_problems(spec.get("containerEdits"), "containerEdits", allow_empty=True))
    names = set()
    needs = "0.3.0"
    for position, device in enumerate(devices):
        where = "devices[%d]" % position
        if not isinstance(device, dict):
            problems.append("%s is not a mapping" % where)
            continue
        extra = sorted(set(device) - DEVICE_KEYS, key=str)
        if extra:
            problems.append("%s: unknown fields %s" % (where, ", ".join(str(key) for key in extra)))
        name = device.get("name")
        if not isinstance(name, str) or not re.match(r"\A[A-Za-z0-9](?:[A-Za-z0-9_.:-]*[A-Za-z0-9])?\Z", name):
            problems.append("%s: name %r is not a CDI device name" % (where, name))
        elif name in names:
            problems.append("%s: name %s is given twice" % (where, name))
        else:
            names.add(name)
            if name[0].isdigit():
                needs = "0.5.0"
        problems.extend(_edit_problems(device.get("containerEdits"), where + ".containerEdits", allow_empty=False))
    if any(node.get("hostPath") for node in all_nodes(spec)):
        needs = "0.5.0"
    if version in CDI_VERSIONS and CDI_VERSIONS.index(version) < CDI_VERSIONS.index(needs):
        problems.append("cdiVersion %s is below %s, which its device names and host paths need" % (version, needs))
    return problems


def _edit_problems(edits, where, allow_empty):
    if edits is None and allow_empty:
        return []
    if not isinstance(edits, dict):
        return ["%s is not a mapping" % where]
    problems = []
    extra = sorted(set(edits) - EDIT_KEYS, key=str)
    if extra:
        problems.append("%s: unknown fields %s" % (where, ", ".join(str(key) for key in extra)))
    if not allow_empty and not any(edits.get(key) for key in EDIT_KEYS):
        problems.append("%s is empty" % where)
    checks = (("env", None, None), ("deviceNodes", NODE_KEYS, ("path",)), ("hooks", HOOK_KEYS, ("hookName", "path")),
              ("mounts", MOUNT_KEYS, ("hostPath", "containerPath")))
    for key, fields, required in checks:
        items = edits.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            problems.append("%s.%s is not a list" % (where, key))
            continue
        for position, item in enumerate(items):
            here = "%s.%s[%d]" % (where, key, position)
            if fields is None:
                if not isinstance(item, str) or item.find("=") <= 0:
                    problems.append("%s: %r is not NAME=VALUE" % (here, item))
                continue
            if not isinstance(item, dict):
                problems.append("%s is not a mapping" % here)
                continue
            extra = sorted(set(item) - fields, key=str)
            if extra:
                problems.append("%s: unknown fields %s" % (here, ", ".join(str(k) for k in extra)))
            missing = [name for name in required if not isinstance(item.get(name), str) or not item.get(name)]
            if missing:
                problems.append("%s: no %s" % (here, ", ".join(missing)))
            problems.extend("%s: %s" % (here, problem) for problem in _field_types(item))
            if key == "hooks" and item.get("hookName") not in HOOK_NAMES:
                problems.append("%s: hookName %r is not an OCI hook" % (here, item.get("hookName")))
    return problems


def _field_types(item):
    """What of an entry's fields is not of the type a runtime reads it as."""
    problems = []
    for name in sorted(item, key=str):
        value = item[name]
        if value is None:
            continue
        if name in STRING_FIELDS and not isinstance(value, str):
            problems.append("%s %r is not a string" % (name, value))
        elif name in STRING_LISTS and (not isinstance(value, list)
                                       or not all(entry is None or isinstance(entry, str) for entry in value)):
            problems.append("%s %r is not a list of strings" % (name, value))
        elif name in INTEGER_FIELDS and (isinstance(value, bool) or not isinstance(value, int) or value < 0
                                         or value >= 2 ** 63):
            problems.append("%s %r is not a number a runtime takes" % (name, value))
    return problems


def _edit_groups(spec):
    """The container edits of a parsed spec (common, then each device's) that are mappings."""
    devices = spec.get("devices") if isinstance(spec.get("devices"), list) else []
    groups = [spec.get("containerEdits")] + [d.get("containerEdits") for d in devices if isinstance(d, dict)]
    return [edits for edits in groups if isinstance(edits, dict)]


def _entries(spec, key):
    return [entry for edits in _edit_groups(spec) if isinstance(edits.get(key), list)
            for entry in edits[key] if isinstance(entry, dict)]


def all_nodes(spec):
    """Every device node of a parsed spec (common and per device) that is a mapping."""
    return _entries(spec, "deviceNodes")


def all_mounts(spec):
    """Every mount of a parsed spec (common and per device) that is a mapping."""
    return _entries(spec, "mounts")


def driver_releases(spec):
    """The driver releases a spec names: in its libraries' and firmware's file names and the CUDA compat hook."""
    found = set()
    for entry in all_mounts(spec):
        for key in ("hostPath", "containerPath"):
            value = entry.get(key)
            if isinstance(value, str):
                for pattern in (_LIBRARY_RELEASE, _FIRMWARE_RELEASE):
                    match = pattern.search(value)
                    if match:
                        found.add(match.group(1))
    for edits in _edit_groups(spec):
        hooks = edits.get("hooks") if isinstance(edits.get("hooks"), list) else []
        for entry in hooks:
            args = entry.get("args") if isinstance(entry, dict) and isinstance(entry.get("args"), list) else []
            for arg in args:
                match = _COMPAT_RELEASE.match(arg) if isinstance(arg, str) else None
                if match:
                    found.add(match.group(1))
    return found


def node_paths(edits):
    if not isinstance(edits, dict) or not isinstance(edits.get("deviceNodes"), list):
        return []
    return sorted({node.get("path") for node in edits["deviceNodes"] if isinstance(node, dict)
                   and isinstance(node.get("path"), str)})


# ---------------------------------------------------------------------------------------------------------------------
# The comparison


def compare(spec, expected, owners, node):
    """Findings (as gpu_health's) where the parsed, valid ``spec`` is not true of the node: devices NVML has that it
    lacks, devices it names that NVML does not show or that lead to other device nodes than NVML's, device nodes and
    mounted files missing on the node, and driver releases other than the loaded one. ``expected`` and ``owners`` come
    from :func:`build_spec`. The entries of a lost GPU (``node["lost"]``) are not judged: its index names, its MIG
    names, and the UUID names that lead to its device node."""
    findings = [finding(index, "gpu_lost", "warning", "GPU %d is lost: it is left out of the spec, and the spec's "
                        "entries for it are not judged" % index) for index in node["lost"]]
    theirs = {d["name"]: d for d in spec["devices"]}
    ours = {d["name"]: d for d in expected["devices"]}
    lost_named = {name for name in theirs if _lost_name(name, node["lost"])}
    lost_paths = {path for name in lost_named for path in node_paths(theirs[name]["containerEdits"])
                  if re.match(r"\A/dev/nvidia[0-9]+\Z", path)}
    skip = lost_named | {name for name, device in theirs.items() if name not in ours
                         and set(node_paths(device["containerEdits"])) & lost_paths}
    missing = {}
    for name in ours:
        if name not in theirs:
            missing.setdefault(owners[name], []).append(name)
    for (gpu, what), names in missing.items():
        findings.append(finding(gpu, "cdi_device_missing", "warning", "the spec lacks %s: %s" % (
            what, ", ".join("%s=%s" % (KIND, name) for name in names))))
    extra = sorted(name for name in theirs if name not in ours and name not in skip)
    if extra:
        findings.append(finding(None, "cdi_device_extra", "critical", "the spec names devices NVML does not show: %s"
                                % ", ".join("%s=%s" % (KIND, name) for name in extra)))
    for name in sorted(set(theirs) & set(ours)):
        if name == "all" and node["lost"]:
            continue  # it still holds the lost GPU's nodes, which are not judged
        have, want = node_paths(theirs[name]["containerEdits"]), node_paths(ours[name]["containerEdits"])
        if have != want:
            gpu, what = owners[name]
            findings.append(finding(gpu, "cdi_device_differs", "critical", "%s=%s gives %s; NVML shows %s at %s" % (
                KIND, name, ", ".join(have) or "no device node", what, ", ".join(want))))
    absent = []
    for entry in all_nodes(spec):
        path = entry.get("hostPath") or entry.get("path")
        if isinstance(path, str) and path not in absent and not is_char_device(path):
            absent.append(path)
    if absent:
        findings.append(finding(None, "cdi_device_node_missing", "critical", "device nodes of the spec are not "
                                "character devices on this node: %s" % ", ".join(absent)))
    gone = []
    for entry in all_mounts(spec):
        path = entry.get("hostPath")
        if isinstance(path, str) and path not in gone and not os.path.lexists(path):
            gone.append(path)
    if gone:
        more = " and %d more" % (len(gone) - 5) if len(gone) > 5 else ""
        findings.append(finding(None, "cdi_mount_missing", "critical", "files the spec mounts are not on this node: "
                                "%s%s" % (", ".join(gone[:5]), more)))
    releases = driver_releases(spec)
    if releases != {node["driver_version"]}:
        findings.append(finding(None, "cdi_driver_version", "critical", "the spec is for driver %s; the loaded driver "
                                "is %s" % (", ".join(sorted(releases)) or "of no release it names",
                                           node["driver_version"])))
    return findings


def _lost_name(name, lost):
    """Whether a device name is an index name (0, gpu0) or MIG name (0:1, mig0:1) of a lost GPU."""
    match = re.match(r"\A(?:gpu|mig)?([0-9]+)(?::[0-9]+)?\Z", name)
    return bool(match) and int(match.group(1)) in lost


def stale(findings):
    """Whether the findings say the spec is not true of the node (a lost GPU alone does not)."""
    return any(f["code"] != "gpu_lost" for f in findings)


def options_of(spec):
    """The options a valid ``spec`` was written with, as far as the comparison needs them: its name strategies (from
    the names it holds) and whether it has the ``all`` device."""
    names = [device["name"] for device in spec["devices"]]
    strategies = [strategy for strategy, pattern in (
        ("index", r"\A[0-9]+(?::[0-9]+)?\Z"), ("uuid", r"\A(?:GPU|MIG)-"), ("type-index", r"\A(?:gpu|mig)[0-9]"))
        if any(re.match(pattern, name) for name in names)]
    return {"strategies": strategies or ["index", "uuid"], "hooks": list(DEFAULT_HOOKS),
            "hook_path": DEFAULT_HOOK_PATH, "all_device": "all" in names}


def health_findings(paths, session, host):
    """gpu_health's findings about the CDI specs at ``paths`` that exist (none for a path with nothing there), each
    compared with what NVML shows (in ``session``) as :func:`compare` does, with the spec's own name strategies. All
    are warnings: the GPUs work, but a container that asks for a GPU through a stale spec gets the wrong devices or
    none. A spec that cannot be read or judged is a warning too, never a spec found true."""
    found, node = [], None
    for path in paths:
        try:
            state = current_spec(path)
        except CdiError as exc:
            found.append(finding(None, "cdi_spec_invalid", "warning", str(exc)))
            continue
        if state is None:
            continue
        try:
            spec, problems = read_spec(state, path)
        except LookupError:
            found.append(finding(None, "cdi_unjudged", "warning", "%s cannot be judged: PyYAML, which reads it, is "
                                 "not installed for the Python that runs the module" % path))
            continue
        if problems:
            found.append(invalid_finding(path, problems, "warning"))
            continue
        try:
            if node is None:
                node = read_gpus(session)
            expected, owners = build_spec(node, host, options_of(spec), strict=False)
        except CdiError as exc:
            found.append(finding(None, "cdi_unjudged", "warning", "%s cannot be compared with the node: %s" % (
                path, str(exc).replace("; nothing was written", ""))))
            continue
        except FAULTS as exc:
            found.append(finding(None, "cdi_unjudged", "warning", "%s cannot be compared with the node: %s" % (
                path, describe_fault("NVML", "reading the GPUs", exc))))
            continue
        found.extend(dict(item, severity="warning", message="%s: %s" % (path, item["message"]))
                     for item in compare(spec, expected, owners, node) if item["code"] != "gpu_lost")
    return found


# ---------------------------------------------------------------------------------------------------------------------
# The file


def current_spec(path):
    """What is at path (_files.current's state), refusing anything but a regular file or nothing."""
    directory = os.path.dirname(path)
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise CdiError("path: %s is not a directory; nothing was written" % directory)
    try:
        state = _files.current(path)
    except _files.FilesError as exc:
        raise CdiError("path: %s; nothing was written" % exc) from None
    if state is not None and state["kind"] != "file":
        what = {"link": "a symbolic link", "directory": "a directory"}.get(state["kind"], "a fifo, socket or device")
        raise CdiError("path: %s is %s, not a regular file; it is left alone" % (path, what))
    return state


def read_spec(state, path):
    """(spec, problems) of the file whose state :func:`current_spec` gave: the parsed spec and what makes a runtime
    refuse it (empty when valid), or None and why it cannot be parsed; raises LookupError("PyYAML") when a YAML spec
    cannot be read for want of PyYAML."""
    if state["data"] is None or len(state["data"]) > READ_LIMIT:
        return None, ["it is larger than %d bytes" % READ_LIMIT]
    try:
        spec = parse(state["data"], path)
    except ValueError as exc:
        return None, [str(exc)]
    return spec, validate(spec)


def invalid_finding(path, problems, severity):
    more = "; and %d more" % (len(problems) - 5) if len(problems) > 5 else ""
    return finding(None, "cdi_spec_invalid", severity, "%s is not a CDI spec a runtime accepts: %s%s" % (
        path, "; ".join(problems[:5]), more))


def check_path(path):
    """A message when ``path`` cannot be a CDI spec file: an absolute path ending in .yaml or .json (CDI reads only
    those) without a newline or NUL; else None."""
    if not isinstance(path, str) or not path or not os.path.isabs(path) or "\0" in path or "\n" in path:
        return "path: give an absolute file path without a newline or NUL, got %r" % (path,)
    if not (path.endswith(".yaml") or path.endswith(".json")) or os.path.basename(path) in (".yaml", ".json"):
        return "path: %s must end in .yaml or .json (runtimes read only those from a CDI directory)" % path
    return None


def check_root(name, path):
    if not isinstance(path, str) or not path or "\0" in path or not os.path.isabs(path):
        return "%s: give an absolute directory path, got %r" % (name, path)
    if not os.path.isdir(path):
        return "%s: %s is not a directory" % (name, path)
    return None


def check_hook_path(path):
    if not isinstance(path, str) or not os.path.isabs(path) or not re.match(r"\A/[A-Za-z0-9/_.+-]+\Z", path):
        return "hook_path: give the absolute path of nvidia-cdi-hook (letters, digits, / _ . + -), got %r" % (path,)
    return None
