"""Build the sysfs PCI tree of a simulated GPU node from its NVML fixture.

Usage: mksysfs.py FIXTURE OUTDIR

Writes OUTDIR/bus/pci/devices/<address>/{vendor,device,class,subsystem_vendor,subsystem_device,numa_node} for
every GPU of the fixture and every NVSwitch its NVLinks lead to, plus one host bridge from another vendor, and
binds the NVIDIA functions to the `nvidia` driver when the fixture's driver loads, whose release then goes to
OUTDIR/module/nvidia/version as the kernel module's (the fixture's driver_version). Runs on the node's own
python3 with the standard library only.
"""

import os
import sys

NVIDIA = 0x10DE
CLASS_3D_CONTROLLER = 0x030200
CLASS_BRIDGE_OTHER = 0x068000


def read_fixture(path):
    values = {}
    with open(path) as handle:
        for raw in handle:
            line = raw.strip()
            if line and not line.startswith("#") and "=" in line:
                key, value = line.split("=", 1)
                values[key.strip()] = value.strip()
    return values


def lookup(values, *keys):
    """The first key present, as the fake NVML resolves `*` defaults."""
    for key in keys:
        if key in values:
            return values[key]
    return None


def gpu_key(values, gpu, key):
    return lookup(values, "gpu.%d.%s" % (gpu, key), "gpu.*.%s" % key)


def link_key(values, gpu, link, key):
    return lookup(values, "gpu.%d.nvlink.%d.%s" % (gpu, link, key), "gpu.%d.nvlink.*.%s" % (gpu, key),
                  "gpu.*.nvlink.%d.%s" % (link, key), "gpu.*.nvlink.*.%s" % key)


def short_bus_id(bus_id):
    domain, rest = bus_id.lower().split(":", 1)
    return "%04x:%s" % (int(domain, 16), rest)


def devices(values):
    found = {}
    for gpu in range(int(values.get("gpu_count", "0"), 0)):
        bus_id = gpu_key(values, gpu, "pci.bus_id")
        if not bus_id:
            continue
        ids = int(gpu_key(values, gpu, "pci.device_id") or "0", 0)
        subsystem = int(gpu_key(values, gpu, "pci.subsystem_id") or "0", 0)
        found[short_bus_id(bus_id)] = (NVIDIA, ids >> 16, CLASS_3D_CONTROLLER, subsystem,
                                       gpu_key(values, gpu, "numa_node") or "-1")
        for link in range(int(gpu_key(values, gpu, "nvlink.count") or "0", 0)):
            remote = link_key(values, gpu, link, "remote_bus_id")
            if remote and link_key(values, gpu, link, "remote_type") == "switch":
                remote_ids = int(link_key(values, gpu, link, "remote_device_id") or "0", 0)
                found.setdefault(short_bus_id(remote), (NVIDIA, remote_ids >> 16, CLASS_BRIDGE_OTHER, 0, "-1"))
    return found


def write(path, text):
    with open(path, "w") as handle:
        handle.write(text + "\n")


def main(fixture, outdir):
    values = read_fixture(fixture)
    driver_loads = "init_error" not in values
    base = os.path.join(outdir, "bus", "pci", "devices")
    drivers = os.path.join(outdir, "bus", "pci", "drivers")
    tree = devices(values)
    tree["0000:00:00.0"] = (0x8086, 0x09A2, 0x060000, 0, "0")  # a CPU host bridge, to be skipped by vendor
    for address, (vendor, device, pci_class, subsystem, numa) in sorted(tree.items()):
        path = os.path.join(base, address)
        os.makedirs(path)
        write(os.path.join(path, "vendor"), "0x%04x" % vendor)
        write(os.path.join(path, "device"), "0x%04x" % device)
        write(os.path.join(path, "class"), "0x%06x" % pci_class)
        write(os.path.join(path, "subsystem_vendor"), "0x%04x" % (subsystem & 0xFFFF))
        write(os.path.join(path, "subsystem_device"), "0x%04x" % (subsystem >> 16))
        write(os.path.join(path, "numa_node"), numa)
        if vendor == NVIDIA and driver_loads:
            target = os.path.join(drivers, "nvidia")
            if not os.path.isdir(target):
                os.makedirs(target)
            os.symlink(os.path.relpath(target, path), os.path.join(path, "driver"))
    if driver_loads and values.get("driver_version"):
        os.makedirs(os.path.join(outdir, "module", "nvidia"), exist_ok=True)
        write(os.path.join(outdir, "module", "nvidia", "version"), values["driver_version"])
    return len(tree)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print("%d PCI functions" % main(sys.argv[1], sys.argv[2]))
