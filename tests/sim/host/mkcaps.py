"""The NVIDIA driver's MIG capabilities for a simulated node: mig-minors and the device files of the MIG devices.

Usage: mkcaps.py FIXTURE PROCROOT [DEVDIR]

Writes PROCROOT/driver/nvidia-caps/mig-minors as the driver lists it (config 1, monitor 2, then for each GPU minor
number 15 GPU instances of 9 minors each: the instance's access file, then its compute instances 0..7), for every GPU
of the NVML fixture, and makes DEVDIR/nvidia-caps/nvidia-cap<minor> (a character device, as nvidia-modprobe makes it)
for the GPU instance and compute instance of every MIG device in the fixture. DEVDIR defaults to /dev. A container
cannot write /proc itself: the Slurm role reads PROCROOT through accelops_gpu_procfs_root.
"""

import os
import re
import stat
import sys

GPU_INSTANCES = 15
# The driver's table has room for 32 GPUs (it lists them all; this lists the fixture's).
MAX_GPUS = 32
COMPUTE_INSTANCES = 8
# nvidia-caps gets its major number at load time; any free one does for slurmd, which checks that the file is there.
CAPS_MAJOR = 236


def minor_of(gpu, gi, ci=None):
    """The minor of gpu<gpu>/gi<gi>/access, or of gpu<gpu>/gi<gi>/ci<ci>/access."""
    base = 3 + gpu * GPU_INSTANCES * (COMPUTE_INSTANCES + 1) + gi * (COMPUTE_INSTANCES + 1)
    return base if ci is None else base + 1 + ci


def read(path):
    """The GPUs' minor numbers by index, and the (index, gi, ci) of every MIG device."""
    minors, migs = {}, set()
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            key, _sep, value = line.strip().partition("=")
            match = re.fullmatch(r"gpu\.([0-9]+)\.minor_number", key)
            if match:
                minors[int(match[1])] = int(value)
            match = re.fullmatch(r"gpu\.([0-9]+)\.gi\.([0-9]+)\.ci\.([0-9]+)\.uuid", key)
            if match:
                migs.add((int(match[1]), int(match[2]), int(match[3])))
    return minors, sorted(migs)


def main(fixture, procroot, devdir="/dev"):
    minors, migs = read(fixture)
    if any(not 0 <= minor < MAX_GPUS for minor in minors.values()):
        sys.exit("mkcaps.py: the driver numbers capabilities for GPU minors 0 to %d, the fixture has %s"
                 % (MAX_GPUS - 1, sorted(minors.values())))
    lines = ["config 1", "monitor 2"]
    for gpu in sorted(minors.values()):
        for gi in range(GPU_INSTANCES):
            lines.append("gpu%d/gi%d/access %d" % (gpu, gi, minor_of(gpu, gi)))
            lines.extend("gpu%d/gi%d/ci%d/access %d" % (gpu, gi, ci, minor_of(gpu, gi, ci))
                         for ci in range(COMPUTE_INSTANCES))
    caps = os.path.join(procroot, "driver", "nvidia-caps")
    os.makedirs(caps, exist_ok=True)
    with open(os.path.join(caps, "mig-minors"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    made = 0
    if migs:
        os.makedirs(os.path.join(devdir, "nvidia-caps"), exist_ok=True)
    for index, gi, ci in migs:
        for minor in (minor_of(minors[index], gi), minor_of(minors[index], gi, ci)):
            path = os.path.join(devdir, "nvidia-caps", "nvidia-cap%d" % minor)
            if not os.path.exists(path):
                os.mknod(path, 0o444 | stat.S_IFCHR, os.makedev(CAPS_MAJOR, minor))
                made += 1
    print("mig-minors for %d GPUs, %d MIG devices, %d capability files made" % (len(minors), len(migs), made))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])
