# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the node labels of NVIDIA's GPU Feature Discovery (GFD) from
ansible_facts.nvidia, and the feature file of Node Feature Discovery (NFD) that carries them."""

from __future__ import annotations

import datetime
import re

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shortened, shown
from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import LabelError

# Every rule below follows GFD as NVIDIA/k8s-device-plugin v0.20.0 writes it: internal/lm/resource.go (product, count,
# replicas, sharing-strategy, memory, family, compute capability; sanitise; getArchFamily), internal/lm/nvml.go
# (driver and CUDA versions, mig.capable, mps.capable, gpu.mode), internal/lm/mig-strategy.go (the none, single and
# mixed strategies, the MIG-INVALID labels), internal/lm/machine-type.go (gpu.machine) and
# internal/resource/nvml-mig-device.go (a MIG device's name and attributes). The feature file follows NFD's local
# source (kubernetes-sigs/node-feature-discovery, source/local/local.go).

PREFIX = "nvidia.com/"
GPU = "nvidia.com/gpu"
MIG_STRATEGIES = ("none", "single", "mixed")
SHARING_STRATEGIES = ("none", "time-slicing", "mps")
# The most replicas a GPU is offered as: far above what anyone shares a GPU by (each replica is a CUDA context).
MAX_REPLICAS = 1 << 16
# What the labels read of each GPU, by the NVML function whose error would leave it null.
READS = frozenset(("nvmlDeviceGetName", "nvmlDeviceGetCudaComputeCapability", "nvmlDeviceGetMemoryInfo",
                   "nvmlDeviceGetMigMode", "nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMigDeviceHandleByIndex"))
# PCI class codes of a GPU (go-nvlib's nvpci.PCIVgaControllerClass and PCI3dControllerClass).
PCI_VGA_CLASS = 0x030000
PCI_3D_CLASS = 0x030200

# Kubernetes' label rules (k8s.io/apimachinery validation: IsQualifiedName, IsValidLabelValue).
_NAME = r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?"
LABEL_NAME = re.compile(r"\A%s\Z" % _NAME)
LABEL_VALUE = re.compile(r"\A(%s)?\Z" % _NAME)
DNS_SUBDOMAIN = re.compile(r"\A(?=.{1,253}\Z)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\Z")
# GFD's sanitise(): drop every character but these, then join the blank-separated words with '-'.
UNSANITARY = re.compile(r"[^A-Za-z0-9\-_. ]")
COMPUTE_CAPABILITY = re.compile(r"\A([0-9]{1,4})\.([0-9]{1,4})\Z")
CUDA_VERSION = re.compile(r"\A([0-9]{1,4})\.([0-9]{1,4})\Z")
# A MIG profile as go-nvlib names it: [<c>c.]<g>g.<n>gb[+attributes], '+' then read as '.' by GFD.
MIG_PROFILE = re.compile(r"\A(?:(?P<ci>[0-9]{1,2})c\.)?(?P<gi>[0-9]{1,2})g\.[0-9]{1,4}gb(?:\+[A-Za-z0-9+,]+)?\Z")
# NFD's expiry directive takes Go's time.RFC3339 (fractional seconds allowed).
RFC3339 = re.compile(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
                     r"(Z|[+-][0-9]{2}:[0-9]{2})\Z")
# NFD ignores a feature file larger than this (source/local/local.go MaxFeatureFileSize).
MAX_FEATURE_FILE = 65536


def sanitise(text):
    """GFD's sanitise(): characters other than letters, digits, '-', '_', '.' and blanks dropped, the words joined
    with '-' (C(NVIDIA H100 80GB HBM3) gives C(NVIDIA-H100-80GB-HBM3))."""
    return "-".join(UNSANITARY.sub("", text).split())


def arch_family(major, minor):
    """GFD's getArchFamily() for a compute capability."""
    if major == 7:
        return "volta" if minor < 5 else "turing"
    if major == 8:
        return "ampere" if minor < 9 else "ada-lovelace"
    return {1: "tesla", 2: "fermi", 3: "kepler", 5: "maxwell", 6: "pascal", 9: "hopper", 10: "blackwell",
            12: "blackwell", 13: "rubin"}.get(major, "undefined")


def check_label(key, value):
    """LabelError unless ``key`` is a prefixed Kubernetes label name in a namespace NFD lets through and ``value`` a
    label value (at most 63 characters of letters, digits, '-', '_' and '.', beginning and ending alphanumeric)."""
    if not isinstance(key, str):
        raise LabelError("a label name must be text, got %s" % shown(key))
    prefix, slash, name = key.rpartition("/")
    if not slash or not DNS_SUBDOMAIN.match(prefix) or not LABEL_NAME.match(name):
        raise LabelError("label name %s is not a Kubernetes label name with a prefix (<DNS subdomain>/<name>: the name "
                         "at most 63 letters, digits, '-', '_' or '.', beginning and ending alphanumeric)" % shown(key))
    if (prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io")) and not (
            prefix.endswith(("feature.node.kubernetes.io", "profile.node.kubernetes.io"))):
        raise LabelError("label name %s is in a namespace that NFD refuses (kubernetes.io other than "
                         "feature.node.kubernetes.io and profile.node.kubernetes.io)" % shown(key))
    if not isinstance(value, str) or not LABEL_VALUE.match(value):
        raise LabelError("label %s: value %s is not a Kubernetes label value (text of at most 63 letters, digits, "
                         "'-', '_' or '.', beginning and ending alphanumeric, or empty)" % (key, shown(value)))


def _facts(value):
    """ansible_facts.nvidia from the facts themselves or from gpu_facts' registered result."""
    if isinstance(value, dict) and value.get("skipped"):
        raise LabelError("the input is the result of a gpu_facts task that was skipped on this host, not its facts")
    if isinstance(value, dict) and value.get("failed"):
        raise LabelError("the input is the result of a gpu_facts task that failed: %s"
                         % shortened(value.get("msg"), 300))
    if isinstance(value, dict) and isinstance(value.get("ansible_facts"), dict) and "nvidia" in value["ansible_facts"]:
        value = value["ansible_facts"]["nvidia"]
    elif isinstance(value, dict) and isinstance(value.get("nvidia"), dict) and "gpus" not in value:
        value = value["nvidia"]
    if not isinstance(value, dict) or not isinstance(value.get("gpus"), list):
        raise LabelError("the input must be ansible_facts.nvidia as accelops.gpu.gpu_facts sets it (a dict with gpus, "
                         "a list), or that module's registered result; got %s" % shown(value))
    return value


def _text(value, what, pattern=None):
    if not isinstance(value, str) or (pattern is not None and not pattern.match(value)):
        raise LabelError("%s is %s, not what gpu_facts gives" % (what, shown(value)))
    return value


def _nvml_usable(facts):
    """Refuse facts that are an NVML failure rather than a description of the node."""
    if facts.get("driver_loaded") is not True:
        raise LabelError("NVML is not usable on this node, so no label can say what its GPUs are: %s"
                         % shortened(facts.get("reason") or "the facts say the driver is not loaded", 300))
    count = facts.get("gpu_count")
    if not isinstance(count, int) or isinstance(count, bool) or count != len(facts["gpus"]):
        raise LabelError("NVML could not count the GPUs (gpu_count %s for %d listed): %s"
                         % (shown(count), len(facts["gpus"]),
                            shortened(facts.get("reason") or facts.get("errors"), 300)))


def _usable_gpus(facts):
    """The GPUs that answered: a lost GPU or one NVML could not read is left out, as the device plugin leaves it out
    of the node's allocatable GPUs; a value the labels need that NVML failed to give is an error."""
    usable = []
    for gpu in facts["gpus"]:
        if not isinstance(gpu, dict) or not isinstance(gpu.get("index"), int):
            raise LabelError("each GPU of the facts must be a dict with its index, got %s" % shown(gpu))
        if gpu.get("lost") is True or gpu.get("error"):
            continue
        where = "GPU %d" % gpu["index"]
        for key, subset in (("memory_total_mib", "memory"), ("mig_mode", "mig")):
            if key not in gpu:
                raise LabelError("%s: the facts lack the %s subset (gather_subset must hold basic, memory and mig)"
                                 % (where, subset))
        errors = [e for e in gpu.get("errors") or [] if str(e).split(":", 1)[0] in READS]
        if errors:
            raise LabelError("%s: NVML failed to give what the labels read: %s" % (where, shortened(errors[0], 300)))
        if not sanitise(_text(gpu.get("name"), "%s's name" % where)):
            raise LabelError("%s's name %s gives no product label (no letter or digit)" % (where, shown(gpu["name"])))
        _text(gpu.get("compute_capability"), "%s's compute capability" % where, COMPUTE_CAPABILITY)
        memory = gpu.get("memory_total_mib")
        if not isinstance(memory, int) or isinstance(memory, bool) or memory < 0:
            raise LabelError("%s's total memory is %s, not what gpu_facts gives" % (where, shown(memory)))
        if gpu.get("mig_mode") not in (True, False, None):
            raise LabelError("%s's MIG mode is %s, not what gpu_facts gives" % (where, shown(gpu.get("mig_mode"))))
        if gpu.get("mig_mode") and not isinstance(gpu.get("mig_devices"), list):
            raise LabelError("%s is in MIG mode but its MIG devices are %s" % (where, shown(gpu.get("mig_devices"))))
        usable.append(gpu)
    if facts["gpus"] and not usable:
        raise LabelError("none of the node's %d GPU(s) answers (lost or unreadable): no label would be true"
                         % len(facts["gpus"]))
    return usable


class _Sharing:
    """GFD's sharing of nvidia.com/gpu (time-slicing or MPS replicas), as the device plugin's config sets it."""

    __slots__ = ("renamed", "replicas", "strategy")

    def __init__(self, strategy, replicas, renamed):
        if strategy not in SHARING_STRATEGIES:
            raise LabelError("sharing_strategy must be one of %s, got %s"
                             % (", ".join(SHARING_STRATEGIES), shown(strategy)))
        if not isinstance(replicas, int) or isinstance(replicas, bool) or not 1 <= replicas <= MAX_REPLICAS:
            raise LabelError("replicas must be a whole number from 1 to %d, got %s" % (MAX_REPLICAS, shown(replicas)))
        if strategy == "none" and replicas != 1:
            raise LabelError("replicas %d needs sharing_strategy time-slicing or mps" % replicas)
        if not isinstance(renamed, bool):
            raise LabelError("rename_by_default must be true or false, got %s" % shown(renamed))
        self.strategy = strategy if replicas > 1 else "none"
        self.replicas = replicas
        self.renamed = renamed


def _resource(resource, parts, count, sharing):
    """GFD's baseLabeler: product, count, replicas, sharing-strategy of one resource. ``sharing`` None is GFD's
    labeler without sharing (a GPU in MIG mode): 0 replicas."""
    product = [sanitise(part) for part in parts]
    product = [part for part in product if part]
    replicas = 0 if sharing is None else sharing.replicas
    shared = sharing is not None and replicas > 1
    if shared and not sharing.renamed:
        product.append("SHARED")
    return {resource + ".product": "-".join(product), resource + ".count": str(count),
            resource + ".replicas": str(replicas),
            resource + ".sharing-strategy": sharing.strategy if shared else "none"}


def _full_gpu_labels(gpus, sharing):
    """newGPULabelers: the labels of the GPUs in MIG mode (without sharing), overridden by those of the whole GPUs.
    Each is one product's: GFD's nodes have one; of several, GFD labels whichever its map gives last, here the lowest
    index's. The count is that product's GPUs, whether in MIG mode or not."""
    counts = {}
    for gpu in gpus:
        counts[gpu["name"]] = counts.get(gpu["name"], 0) + 1
    labels = {}
    in_mig = [gpu for gpu in gpus if gpu["mig_mode"]]
    whole = [gpu for gpu in gpus if not gpu["mig_mode"]]
    for group, shared in ((in_mig, None), (whole, sharing)):
        if not group:
            continue
        chosen = group[0]
        labels.update(_resource(GPU, [chosen["name"]], counts[chosen["name"]], shared))
        if chosen["memory_total_mib"]:
            labels[GPU + ".memory"] = str(chosen["memory_total_mib"])
        major, minor = (int(n) for n in chosen["compute_capability"].split("."))
        if major:
            labels.update({GPU + ".family": arch_family(major, minor), GPU + ".compute.major": str(major),
                           GPU + ".compute.minor": str(minor)})
    return labels


def _mig_devices(gpus):
    """(profile as GFD names it, MIG device, its GPU) for every MIG device of the GPUs in MIG mode, in NVML order."""
    found = []
    for gpu in gpus:
        if not gpu["mig_mode"]:
            continue
        for mig in gpu["mig_devices"]:
            where = "GPU %d's MIG device %s" % (gpu["index"], shown(mig.get("index") if isinstance(mig, dict) else mig))
            if not isinstance(mig, dict):
                raise LabelError("%s is not what gpu_facts gives" % where)
            profile = _text(mig.get("profile"), "%s's profile" % where, MIG_PROFILE)
            memory = mig.get("memory_total_mib")
            if not isinstance(memory, int) or isinstance(memory, bool) or memory < 0:
                raise LabelError("%s's memory is %s: NVML did not give it" % (where, shown(memory)))
            found.append((profile.replace("+", "."), profile, mig, gpu))
    return found


def _mig_resources(migs, resource_of, sharing_of):
    """newMIGDeviceLabelers: per profile, the first device's GPU name and attributes, and the count of them."""
    labels = {}
    firsts = {}
    counts = {}
    for name, profile, mig, gpu in migs:
        firsts.setdefault(name, (profile, mig, gpu))
        counts[name] = counts.get(name, 0) + 1
    for name, (profile, mig, gpu) in firsts.items():
        resource = resource_of(name)
        labels.update(_resource(resource, [gpu["name"], "MIG", name], counts[name], sharing_of(resource)))
        slices = MIG_PROFILE.match(profile)
        labels.update({resource + ".memory": str(mig["memory_total_mib"]), resource + ".slices.gi": slices.group("gi"),
                       resource + ".slices.ci": slices.group("ci") or slices.group("gi")})
    return labels


def _mig_single(gpus, sharing):
    """newMigStrategySingleLabeler: MIG devices as nvidia.com/gpu when every GPU is in MIG mode with one profile;
    the MIG-INVALID labels otherwise."""
    in_mig = [gpu for gpu in gpus if gpu["mig_mode"]]
    if not in_mig:
        return {}
    valid = all(gpu["mig_devices"] for gpu in in_mig) and len(in_mig) == len(gpus)
    migs = _mig_devices(gpus) if valid else []
    if not valid or len({m[0] for m in migs}) != 1:
        return {GPU + ".product": "-".join(p for p in (sanitise(in_mig[0]["name"]), "MIG", "INVALID") if p),
                GPU + ".count": "0", GPU + ".replicas": "0", GPU + ".sharing-strategy": "", GPU + ".memory": "0"}
    return _mig_resources(migs, lambda name: GPU, lambda resource: sharing)


def _mig_mixed(gpus, sharing):
    """newMigStrategyMixedLabeler: one nvidia.com/mig-<profile> resource per profile; a GPU in MIG mode without MIG
    devices is passed over. Sharing here is that of nvidia.com/gpu alone, so the MIG resources are not shared."""
    return _mig_resources(_mig_devices(gpus), lambda name: "nvidia.com/mig-" + name,
                          lambda resource: sharing if resource == GPU else _Sharing("none", 1, False))


def _versions(facts):
    """newVersionLabeler: the driver's release split as text (550.54.15 gives 550, 54, 15), CUDA as NVML gives it."""
    errors = facts.get("errors") if isinstance(facts.get("errors"), list) else []
    for key, function, what in (("driver_version", "nvmlSystemGetDriverVersion", "driver version"),
                                ("cuda_driver_version", "nvmlSystemGetCudaDriverVersion", "CUDA driver version")):
        failed = [error for error in errors if str(error).split(":", 1)[0] == function]
        if facts.get(key) is None and failed:
            raise LabelError("NVML failed to give the %s: %s" % (what, shortened(failed[0], 300)))
    driver = _text(facts.get("driver_version"), "the driver version")
    parts = driver.split(".")
    if not 2 <= len(parts) <= 3:
        raise LabelError("the driver version %s does not match X.Y[.Z]" % shown(driver))
    major, minor, rev = [*parts, ""][:3]
    cuda = CUDA_VERSION.match(_text(facts.get("cuda_driver_version"), "the CUDA driver version", CUDA_VERSION))
    cuda_major, cuda_minor = str(int(cuda.group(1))), str(int(cuda.group(2)))
    return {
        "nvidia.com/cuda.driver.major": major, "nvidia.com/cuda.driver.minor": minor, "nvidia.com/cuda.driver.rev": rev,
        "nvidia.com/cuda.runtime.major": cuda_major, "nvidia.com/cuda.runtime.minor": cuda_minor,
        "nvidia.com/cuda.driver-version.major": major, "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": rev, "nvidia.com/cuda.driver-version.full": driver,
        "nvidia.com/cuda.runtime-version.major": cuda_major, "nvidia.com/cuda.runtime-version.minor": cuda_minor,
        "nvidia.com/cuda.runtime-version.full": "%s.%s" % (cuda_major, cuda_minor),
    }


def _gpu_mode(facts, gpus):
    """newGPUModeLabeler: compute (3D controller) or graphics (VGA controller) when every GPU has that PCI class;
    unknown where the facts lack the PCI bus (the pci subset) or the classes differ."""
    devices = facts.get("pci_devices")
    if not isinstance(devices, list):
        return "unknown"
    classes = {d.get("pci_bus_id"): d.get("class") for d in devices if isinstance(d, dict)}
    found = set()
    for gpu in gpus:
        value = classes.get(gpu.get("pci_bus_id"))
        if not isinstance(value, str) or not re.match(r"\A0x[0-9a-fA-F]{6}\Z", value):
            return "unknown"
        found.add(int(value, 16))
    if len(found) != 1:
        return "unknown"
    return {PCI_3D_CLASS: "compute", PCI_VGA_CLASS: "graphics"}.get(found.pop(), "unknown")


def gpu_feature_labels(value, mig_strategy="none", *, machine=None, sharing_strategy="none", replicas=1,
                       rename_by_default=False):
    """The labels GFD sets on a node, from its facts; {} for a node whose NVML answers and lists no GPU."""
    if mig_strategy not in MIG_STRATEGIES:
        raise LabelError("mig_strategy must be one of %s (the GPU Operator's mig.strategy), got %s"
                         % (", ".join(MIG_STRATEGIES), shown(mig_strategy)))
    sharing = _Sharing(sharing_strategy, replicas, rename_by_default)
    if machine is not None and not isinstance(machine, str):
        raise LabelError("machine must be the node's product name (text), got %s" % shown(machine))
    facts = _facts(value)
    _nvml_usable(facts)
    gpus = _usable_gpus(facts)
    if not gpus:
        return {}  # GFD labels a node without GPUs with nothing at all
    in_mig = any(gpu["mig_mode"] for gpu in gpus)
    if sharing.strategy == "mps" and in_mig:
        raise LabelError("MPS sharing is not supported for MIG devices (a GPU of this node is in MIG mode)")
    labels = {"nvidia.com/gpu.machine": sanitise(machine) if machine is not None else "unknown"}
    labels.update(_versions(facts))
    labels["nvidia.com/mig.capable"] = "true" if any(gpu["mig_mode"] is not None for gpu in gpus) else "false"
    labels["nvidia.com/mps.capable"] = "true" if sharing.strategy == "mps" else "false"
    labels.update(_full_gpu_labels(gpus, sharing))
    if mig_strategy != "none":
        labels["nvidia.com/mig.strategy"] = mig_strategy
        labels.update((_mig_single if mig_strategy == "single" else _mig_mixed)(gpus, sharing))
    labels["nvidia.com/gpu.mode"] = _gpu_mode(facts, gpus)
    labels = dict(sorted(labels.items()))
    for key, text in labels.items():
        check_label(key, text)
    return labels


def nfd_feature_file(labels, expiry=None):
    """NFD's feature file for ``labels``: one ``name=value`` line each, sorted by name, after an expiry directive."""
    if not isinstance(labels, dict):
        raise LabelError("the input must be the labels (a dict of label name to value), got %s" % shown(labels))
    lines = []
    if expiry is not None:
        if not isinstance(expiry, str) or not RFC3339.match(expiry):
            raise LabelError("expiry must be a time in RFC 3339 (2026-07-01T00:00:00Z), got %s" % shown(expiry))
        try:
            datetime.datetime.fromisoformat(expiry[:19])
            # Go's time.Parse, which NFD reads it with, takes an offset up to 23:59 only.
            if not expiry.endswith("Z") and (int(expiry[-5:-3]) > 23 or int(expiry[-2:]) > 59):
                raise ValueError(expiry)
        except ValueError:
            raise LabelError("expiry %s is not a time that exists" % shown(expiry)) from None
        lines.append("# +expiry-time=%s" % expiry)
    for key in sorted(labels, key=lambda k: (not isinstance(k, str), str(k))):
        value = labels[key]
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10 ** 18:
            value = str(value)
        check_label(key, value)
        lines.append("%s=%s" % (key, value))
    text = "".join(line + "\n" for line in lines)
    if len(text.encode("utf-8")) > MAX_FEATURE_FILE:
        raise LabelError("the feature file would be %d bytes; NFD ignores one larger than %d"
                         % (len(text.encode("utf-8")), MAX_FEATURE_FILE))
    return text
