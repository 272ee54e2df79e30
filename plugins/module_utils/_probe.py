# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the readers of accelops.gpu.node_probe, which gathers a node's package,
file, service and command state in one round trip so that a role decides on the controller. Parsers are plain
functions over the text the tools print."""

from __future__ import annotations

import glob
import grp
import hashlib
import os
import pwd
import stat

# Unit properties read with one `systemctl show`.
SERVICE_PROPERTIES = ("Id", "LoadState", "ActiveState", "SubState", "UnitFileState")
# A file whose content is asked for is returned up to this size.
READ_LIMIT = 1024 * 1024
# dpkg's states in which a package's files are on the disk.
INSTALLED_STATES = ("installed", "half-configured", "unpacked", "half-installed", "triggers-awaited",
                    "triggers-pending")


def parse_dpkg_query(text, names):
    """`dpkg-query -W -f '${Package}\\t${Version}\\t${Status}\\n' NAMES`: for each package found, whether it is
    installed, its version and whether it is held (dpkg's selection 'hold'). NAMES may be dpkg's patterns
    (linux-headers-*): every package they match is in the result; a plain name dpkg does not know is not installed."""
    found = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) != 3:
            continue
        name, version, status = fields
        words = status.split()
        if len(words) != 3:
            continue
        selection, _flag, state = words
        installed = state in INSTALLED_STATES
        # Multi-arch packages print once per architecture; an installed one wins over a removed one.
        if name in found and found[name]["installed"] and not installed:
            continue
        found[name] = {"installed": installed, "version": version if installed else None,
                       "hold": selection == "hold", "state": state}
    for name in names:
        if not is_pattern(name):
            found.setdefault(name, {"installed": False, "version": None, "hold": False, "state": "not-installed"})
    return found


def is_pattern(name):
    return any(char in name for char in "*?[")


def parse_rpm_query(text, names):
    """`rpm -qa --qf '%{NAME}\\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\\n' NAMES` (names or rpm's patterns); every
    installed version of a package in `versions` (kernels are installed side by side), the newest rpm listed last in
    `version`. rpm has no holds (dnf's versionlock is its own): hold is None."""
    found = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0]:
            continue
        epoch, _colon, rest = fields[1].partition(":")
        entry = found.setdefault(fields[0], {"installed": True, "version": None, "versions": [], "hold": None,
                                             "state": "installed"})
        entry["versions"].append(rest if epoch == "0" else fields[1])
        entry["version"] = entry["versions"][-1]
    for name in names:
        if not is_pattern(name):
            found.setdefault(name, {"installed": False, "version": None, "versions": [], "hold": None,
                                    "state": "not-installed"})
    return found


def parse_apt_policy(text, names):
    """`LC_ALL=C apt-cache policy NAMES`: per name the installed and the candidate version (None for '(none)') and
    every version the package lists offer, in apt's order (newest first). A name apt does not know is absent from
    its output and gets known: false."""
    result = {name: {"known": False, "installed": None, "candidate": None, "versions": []} for name in names}
    current = None
    in_table = False
    for line in text.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            name = line[:-1]
            current = result.setdefault(name, {"known": False, "installed": None, "candidate": None, "versions": []})
            current["known"] = True
            in_table = False
            continue
        if current is None:
            continue
        stripped = line.strip()
        if stripped.startswith("Installed:"):
            value = stripped.split(":", 1)[1].strip()
            current["installed"] = None if value == "(none)" else value
        elif stripped.startswith("Candidate:"):
            value = stripped.split(":", 1)[1].strip()
            current["candidate"] = None if value == "(none)" else value
        elif stripped.startswith("Version table:"):
            in_table = True
        elif in_table and stripped:
            # A version line ("*** 550.54.15-1 600" or "550.54.15-1 600") is indented less than its sources
            # ("600 http://... Packages", "100 /var/lib/dpkg/status").
            words = stripped.split()
            if words[0] == "***":
                words = words[1:]
            if len(line) - len(line.lstrip()) < 8 and words and words[0] not in current["versions"]:
                current["versions"].append(words[0])
    return {name: result[name] for name in names}


def parse_systemctl_show(text, names):
    """`systemctl show --property=Id,LoadState,... NAMES`: blocks separated by blank lines, in the order asked."""
    blocks, block = [], {}
    for line in [*text.splitlines(), ""]:
        if not line.strip():
            if block:
                blocks.append(block)
                block = {}
            continue
        key, _eq, value = line.partition("=")
        block[key] = value
    states = {}
    for name, block in zip(names, blocks):
        states[name] = {"load_state": block.get("LoadState"), "active_state": block.get("ActiveState"),
                        "sub_state": block.get("SubState"), "unit_file_state": block.get("UnitFileState") or None}
    return {name: states.get(name) for name in names}


def file_state(path, read=False):
    """What the file module and template compare: existence, type, mode, owner, group, size and SHA-1 of a regular
    file (the checksum Ansible's copy and template use); its content (text) when read and no larger than READ_LIMIT."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return {"exists": False}
    except OSError as error:
        return {"exists": None, "error": str(error)}
    kinds = ((stat.S_ISREG, "file"), (stat.S_ISDIR, "directory"), (stat.S_ISLNK, "link"))
    state = {"exists": True, "type": next((kind for test, kind in kinds if test(info.st_mode)), "other"),
             "mode": "%04o" % stat.S_IMODE(info.st_mode), "owner": _name(pwd.getpwuid, info.st_uid),
             "group": _name(grp.getgrgid, info.st_gid), "size": info.st_size, "checksum": None}
    if state["type"] == "link":
        state["target"] = os.readlink(path)
    if state["type"] == "file":
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as error:
            state["error"] = str(error)
            return state
        state["checksum"] = hashlib.sha1(data).hexdigest()
        if read:
            state["content"] = data.decode("utf-8", "replace") if len(data) <= READ_LIMIT else None
    return state


def _name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def expand_globs(patterns):
    return {pattern: sorted(glob.glob(pattern)) for pattern in patterns}
