# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: Spark's GPU discovery script. It reads the node's GPUs through NVML (the
collector of gpu_facts, one NVML session) and prints the one line of JSON that Spark's ResourceDiscoveryScriptPlugin
parses as a ResourceInformation, {"name": "gpu", "addresses": ["0", "1", ...]}.

Spark runs the script when a worker, a driver or an executor starts and reads an empty list as "no GPUs": so the
script never answers with fewer addresses than --min-addresses (default 1). Whatever goes wrong (NVML missing, the
driver not loaded, an NVML error, too few GPUs) is one line on stderr, nothing on stdout and exit status 1; Spark
then refuses to start that process and logs why. A lost GPU, or one whose handle NVML refuses, is left out and said
on stderr: the other GPUs still serve.

Run on the node by its program, node_programs/accelops-gpu-spark-discovery.py (with pynvml importable):
accelops-gpu-spark-discovery --lib DIR [--mig devices|gpus|skip] [--exclude GPU[,GPU...]]... [--min-addresses N]
[--resource-name NAME]
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import GpuFactsCollector, text
from ansible_collections.accelops.gpu.plugins.module_utils._nvml import NvmlSession

PROG = "accelops-gpu-spark-discovery"
MIG_CHOICES = ("devices", "gpus", "skip")
# Spark's configuration keys hold the name (spark.worker.resource.<name>.discoveryScript): no dot, no space.
RESOURCE_NAME = re.compile(r"\A[A-Za-z][A-Za-z0-9_-]{0,63}\Z")
INDEX = re.compile(r"\A[0-9]{1,4}\Z")
# A GPU's UUID (GPU-<hex and dashes>), a MIG device's (MIG-<hex and dashes>, or the GPU UUID/GI/CI form of
# drivers before R470), as nvidia-smi -L and CUDA_VISIBLE_DEVICES write them.
UUID = re.compile(r"\A(GPU-[0-9A-Fa-f-]{1,64}|MIG-[0-9A-Fa-f-]{1,64}"
                  r"|MIG-GPU-[0-9A-Fa-f-]{1,64}/[0-9]{1,3}/[0-9]{1,3})\Z")


class DiscoveryError(Exception):
    """No answer that Spark may use: one line saying why."""


class AddressReader(GpuFactsCollector):
    """gpu_facts' collector (its NVML session, lost GPUs, failed handles, MIG devices) reading, of the basic facts,
    only the UUID: what the addresses and --exclude need. Every value read is one more NVML error that can stop the
    script, and the script is on the start path of every Spark worker."""

    def _basic(self, h, gpu):
        gpu["uuid"] = text(self.nvml.query("nvmlDeviceGetUUID", h))


def read_gpus(lib=None):
    """The node's GPUs as gpu_facts lists them (index, uuid, lost, error, errors, mig_mode, mig_devices).

    Raises DiscoveryError when NVML cannot be used, cannot count the GPUs, or answered any reading with an error
    other than a lost GPU or a refused handle (those GPUs are in the list, and addresses() leaves them out)."""
    with NvmlSession(lib) as session:
        facts = AddressReader(session, {"basic", "mig"}).collect()
    if not facts["driver_loaded"]:
        raise DiscoveryError("NVML cannot be used: %s" % facts["reason"])
    if facts["gpu_count"] is None:
        raise DiscoveryError(facts["reason"])
    if facts["errors"]:
        raise DiscoveryError("NVML answered with an error: %s" % facts["errors"][0])
    for gpu in facts["gpus"]:
        if gpu["errors"] and not gpu["lost"] and not gpu.get("error"):
            raise DiscoveryError("GPU %d: NVML answered with an error: %s" % (gpu["index"], gpu["errors"][0]))
    return facts["gpus"]


def parse_exclude(values):
    """--exclude values (each one or a comma list) as a list of indexes (int) and UUIDs (str), in order, once each."""
    found = []
    for value in values or ():
        for raw in value.split(","):
            item = raw.strip()
            if INDEX.match(item):
                entry = int(item)
            elif UUID.match(item):
                entry = item
            else:
                raise ValueError("--exclude: %r is neither a GPU index (0, 1, ...) nor a GPU or MIG device UUID "
                                 "(GPU-..., MIG-...)" % item)
            if entry not in found:
                found.append(entry)
    return found


def addresses(gpus, mig="devices", exclude=()):
    """Spark's addresses for the GPUs read_gpus() gave, and the notes (lines for stderr) on what was left out.

    mig: ``devices`` (a GPU with MIG on gives its MIG devices' UUIDs), ``gpus`` (its index, as any GPU) or ``skip``
    (it gives nothing). exclude: indexes and UUIDs (of GPUs or of MIG devices) the site keeps from Spark; with ``gpus``
    a MIG device's UUID keeps its whole GPU from Spark. One that names nothing here is a DiscoveryError, unless a GPU
    could not be read (then it may be that one: a note). Two MIG devices with one UUID are a DiscoveryError."""
    notes, found = [], []
    unread = [gpu for gpu in gpus if gpu["lost"] or gpu.get("error")]
    for gpu in unread:
        why = "the GPU is lost" if gpu["lost"] else "NVML refused it: %s" % gpu["error"]
        notes.append("GPU %d left out: %s" % (gpu["index"], why))
    known = {gpu["index"] for gpu in gpus}
    uuids = {}
    for gpu in gpus:
        for uuid in [gpu.get("uuid")] + [device.get("uuid") for device in gpu.get("mig_devices") or ()]:
            if uuid:
                uuids[uuid.lower()] = uuid
    for entry in exclude:
        if isinstance(entry, int) and entry in known:
            continue
        if not isinstance(entry, int) and entry.lower() in uuids:
            continue
        what = "GPU %d" % entry if isinstance(entry, int) else entry
        if isinstance(entry, int) or not unread:
            raise DiscoveryError("--exclude %s: no such GPU%s on this node (NVML lists %d GPU%s%s)" % (
                entry, "" if isinstance(entry, int) else " or MIG device", len(gpus), "" if len(gpus) == 1 else "s",
                ", indexes 0 to %d" % (len(gpus) - 1) if gpus else ""))
        notes.append("--exclude %s: not found; it may be a GPU left out above" % what)
    excluded = {entry.lower() if isinstance(entry, str) else entry for entry in exclude}
    owners = {}
    for gpu in gpus:
        if gpu in unread or gpu["index"] in excluded or (gpu.get("uuid") or "").lower() in excluded:
            continue
        devices = [device["uuid"] for device in gpu.get("mig_devices") or ()] if gpu.get("mig_mode") else []
        held = [uuid for uuid in devices if uuid and uuid.lower() in excluded]
        if not gpu.get("mig_mode"):
            found.append(str(gpu["index"]))
        elif mig == "gpus" and held:
            # The whole GPU would give Spark the MIG device the site keeps from it.
            notes.append("GPU %d left out: it holds the excluded MIG device %s (--mig gpus gives Spark whole GPUs)"
                         % (gpu["index"], held[0]))
        elif mig == "gpus":
            found.append(str(gpu["index"]))
        elif mig == "skip":
            notes.append("GPU %d left out: MIG is on (--mig skip)" % gpu["index"])
        else:
            if not devices:
                notes.append("GPU %d gives no address: MIG is on and it has no MIG device" % gpu["index"])
            for index, uuid in enumerate(devices):
                if not uuid:
                    raise DiscoveryError("GPU %d: MIG device %d has no UUID, so it cannot be given to Spark"
                                         % (gpu["index"], gpu["mig_devices"][index]["index"]))
                if uuid.lower() in owners:
                    raise DiscoveryError("NVML gives two MIG devices the same UUID %s (GPU %d and GPU %d): Spark would "
                                         "give one device to two tasks" % (uuid, owners[uuid.lower()], gpu["index"]))
                owners[uuid.lower()] = gpu["index"]
                if uuid.lower() not in excluded:
                    found.append(uuid)
    return found, notes


def discover(mig="devices", exclude=(), min_addresses=1, resource_name="gpu", lib=None):
    """The ResourceInformation for Spark (a dict) and the notes for stderr; DiscoveryError when there is no answer
    that Spark may use."""
    gpus = read_gpus(lib)
    found, notes = addresses(gpus, mig, exclude)
    if len(found) < min_addresses:
        raise DiscoveryError("%d usable GPU address%s (NVML lists %d GPU%s), fewer than --min-addresses %d%s" % (
            len(found), "" if len(found) == 1 else "es", len(gpus), "" if len(gpus) == 1 else "s", min_addresses,
            "".join("; " + note for note in notes)))
    return {"name": resource_name, "addresses": found}, notes


def _one_line(message):
    return " ".join(str(message).split())


def parser():
    result = argparse.ArgumentParser(prog=PROG, description=__doc__.partition("\n\n")[0].partition(": ")[2])
    result.add_argument("--mig", choices=MIG_CHOICES, default="devices",
                        help="a GPU with MIG on gives its MIG devices' UUIDs (devices, the default), its index as "
                             "any GPU (gpus), or nothing (skip)")
    result.add_argument("--exclude", action="append", default=[], metavar="GPU[,GPU...]",
                        help="GPU indexes, GPU UUIDs or MIG device UUIDs that Spark must not use (repeatable)")
    result.add_argument("--min-addresses", type=int, default=1, metavar="N",
                        help="fail when fewer than N addresses are usable (default 1: never an empty list)")
    result.add_argument("--resource-name", default="gpu", metavar="NAME",
                        help="the resource's name, as in spark.worker.resource.NAME.discoveryScript (default gpu)")
    return result


def main(argv=None, lib=None):
    """Print Spark's JSON and return 0, or say why not on stderr and return 1 (2 for bad options)."""
    options = parser()
    args = options.parse_args(argv)
    if not RESOURCE_NAME.match(args.resource_name):
        options.error("--resource-name must be a letter, then up to 63 letters, digits, '_' or '-' (got %r)"
                      % args.resource_name)
    if not 0 <= args.min_addresses <= 4096:
        options.error("--min-addresses must be from 0 to 4096 (got %d)" % args.min_addresses)
    try:
        exclude = parse_exclude(args.exclude)
    except ValueError as exc:
        options.error(str(exc))
    try:
        answer, notes = discover(args.mig, exclude, args.min_addresses, args.resource_name, lib)
    except DiscoveryError as exc:
        sys.stderr.write("%s: %s\n" % (PROG, _one_line(exc)))
        return 1
    except Exception as exc:  # pylint: disable=broad-except  # Spark logs one line, never a traceback
        sys.stderr.write("%s: reading the GPUs failed: %s: %s\n" % (PROG, type(exc).__name__, _one_line(exc)))
        return 1
    for note in notes:
        sys.stderr.write("%s: %s\n" % (PROG, _one_line(note)))
    sys.stdout.write(json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
