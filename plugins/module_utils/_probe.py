# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the readers of accelops.gpu.node_probe, which gathers a node's package,
file, service and command state in one round trip so that a role decides on the controller. Parsers are plain
functions over the text the tools print."""

from __future__ import annotations

import base64
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


def parse_dpkg_query(text):
    """`dpkg-query -W -f '${Package}\\t${Version}\\t${Architecture}\\t${Status}\\n'` over every package: the
    installed ones as ansible.builtin.package_facts (apt) lists them, {name: [{name, version, arch, source}]}, and the
    names whose dpkg selection is 'hold'."""
    packages, holds = {}, []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) != 4:
            continue
        name, version, arch, status = fields
        words = status.split()
        if len(words) != 3:
            continue
        if words[0] == "hold" and name not in holds:
            holds.append(name)
        if words[2] in INSTALLED_STATES:
            packages.setdefault(name, []).append({"name": name, "version": version, "arch": arch, "source": "apt"})
    return packages, sorted(holds)


def complete_installs(candidates, text):
    """apt-cache policy's answer (parse_apt_policy) with `installed` kept only for a package that dpkg has fully
    installed (`dpkg-query -W -f '${Package}\t${Status}\n' NAMES`): apt-cache reports a half-configured, unpacked or
    half-installed package as installed, which apt itself would install again. Each package gets dpkg's `status`
    (its third word, None when dpkg does not list it)."""
    states = {}
    for line in text.splitlines():
        name, _tab, status = line.partition("\t")
        words = status.split()
        if len(words) == 3:
            # One line per architecture of a multi-arch package: each must be fully installed.
            states.setdefault(name.split(":", 1)[0], []).append(words)
    for name, info in candidates.items():
        lines = states.get(name, [])
        whole = bool(lines) and all(words[1:] == ["ok", "installed"] for words in lines)
        info["status"] = None if not lines else "installed" if whole else next(
            words[2] for words in lines if words[1:] != ["ok", "installed"])
        if not whole:
            info["installed"] = None
    return candidates


def parse_rpm_query(text):
    """`rpm -qa --qf '%{NAME}\\t%{VERSION}\\t%{RELEASE}\\t%{EPOCH}\\t%{ARCH}\\n'`: as
    ansible.builtin.package_facts (rpm) lists them, {name: [{name, version, release, epoch, arch, source}]}; every
    installed version (kernels are installed side by side)."""
    packages = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) != 5 or not fields[0]:
            continue
        name, version, release, epoch, arch = fields
        packages.setdefault(name, []).append({
            "name": name, "version": version, "release": release,
            "epoch": int(epoch) if epoch.isdigit() else None, "arch": arch, "source": "rpm"})
    return packages


def parse_apt_policy(text, names):
    """`LC_ALL=C apt-cache policy NAMES`: per name the installed and the candidate version (None for '(none)') and
    every version a source offers, in apt's order (newest first). A name apt does not know is absent from
    its output and gets known: false."""
    result = {name: {"known": False, "installed": None, "candidate": None, "versions": []} for name in names}
    current = pending = None
    in_table = False
    for line in text.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            name = line[:-1]
            current = result.setdefault(name, {"known": False, "installed": None, "candidate": None, "versions": []})
            current["known"] = True
            in_table, pending = False, None
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
            # ("600 http://... Packages"); a version whose only source is dpkg's status file (installed, no longer
            # offered) is not on offer.
            words = stripped.split()
            if len(line) - len(line.lstrip()) < 8:
                pending = words[1] if words[0] == "***" and len(words) > 1 else words[0]
            elif pending and words[-1] != "/var/lib/dpkg/status" and pending not in current["versions"]:
                current["versions"].append(pending)
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
        digest, kept = hashlib.sha1(), []
        try:
            with open(path, "rb") as handle:
                for chunk in iter(lambda: handle.read(65536), b""):
                    digest.update(chunk)
                    if read and sum(map(len, kept)) <= READ_LIMIT:
                        kept.append(chunk)
        except OSError as error:
            state["error"] = str(error)
            return state
        state["checksum"] = digest.hexdigest()
        if read:
            data = b"".join(kept)
            state["content"] = base64.b64encode(data).decode("ascii") if len(data) <= READ_LIMIT else None
    return state


def _name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def user_state(name):
    """An account as `getent passwd NAME` gives it (the name service, not only /etc/passwd)."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return {"exists": False}
    return {"exists": True, "uid": entry.pw_uid, "gid": entry.pw_gid, "comment": entry.pw_gecos, "home": entry.pw_dir,
            "shell": entry.pw_shell}


def expand_globs(patterns):
    return {pattern: sorted(glob.glob(pattern)) for pattern in patterns}


def armor_layout(data):
    """The labels of a key file's ASCII-armored blocks in order (its -----BEGIN LABEL----- lines, as apt-key's dearmor
    finds them: at the start of a line, whatever the label) and whether anything but white space lies outside them.
    A binary file has no blocks (and nothing counts as outside them)."""
    blocks, outside, inside = [], False, False
    for line in data.splitlines():
        if line.startswith(b"-----BEGIN"):
            label = line[len(b"-----BEGIN"):].strip().rstrip(b"-").strip()
            blocks.append(label.decode("ascii", "replace"))
            inside = True
        elif line.startswith(b"-----END"):
            inside = False
        elif not inside and line.strip():
            outside = True
    return {"armor_blocks": blocks, "text_outside_armor": outside if blocks else False}
