# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the readers of accelops.gpu.node_probe, which gathers a node's package,
file, service and command state in one round trip so that a role decides on the controller. Parsers are plain
functions over the text the tools print."""

from __future__ import annotations

import base64
import errno
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
# A regular file is hashed up to this size; a larger one (a sparse file of terabytes, a log) gets a checksum of null
# and an error instead of an endless read. Files a role compares are configuration files, scripts and keys.
HASH_LIMIT = 64 * 1024 * 1024
CHUNK = 65536
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


class Refused(Exception):
    """A path that is not read, and why (the message names the path)."""


KINDS = ((stat.S_ISREG, "file"), (stat.S_ISDIR, "directory"), (stat.S_ISLNK, "link"), (stat.S_ISFIFO, "fifo"),
         (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"))


def kind(mode):
    """The kind of file a st_mode is: file, directory, link, fifo, character device, block device, socket or other."""
    return next((name for test, name in KINDS if test(mode)), "other")


def described(mode):
    """The kind of file a st_mode is, for a message: "a symbolic link", "a fifo", ..."""
    return {"link": "a symbolic link", "other": "a special file"}.get(kind(mode), "a " + kind(mode))


def read_regular(path, keep=0, limit=HASH_LIMIT):
    """(SHA-1 hex digest, the first bytes up to keep + 1) of the regular file at path. It is opened without following
    a symbolic link and without blocking (a fifo or a device put in its place after an lstat, a stream such as
    /proc/kmsg that has nothing to give), and read to at most limit bytes; Refused, naming the path and why, otherwise.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise Refused("%s is a symbolic link; not followed" % path) from None
        raise Refused("cannot open %s: %s" % (path, error.strerror or error)) from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise Refused("%s is %s, not a regular file; not read" % (path, described(info.st_mode)))
        if info.st_size > limit:
            raise Refused("%s is %d bytes, more than the limit of %s; not read" % (path, info.st_size, _mib(limit)))
        digest, kept, total = hashlib.sha1(), [], 0
        while True:
            try:
                chunk = os.read(descriptor, CHUNK)
            except BlockingIOError:
                raise Refused("%s would block when read (a stream, not a file); not read" % path) from None
            except OSError as error:
                raise Refused("cannot read %s: %s" % (path, error.strerror or error)) from None
            if not chunk:
                break
            total += len(chunk)
            if total > limit:  # a file that grows, or one the kernel makes up as it is read
                raise Refused("%s gave more than the limit of %s; not read" % (path, _mib(limit)))
            digest.update(chunk)
            if keep and sum(map(len, kept)) <= keep:
                kept.append(chunk)
        return digest.hexdigest(), b"".join(kept)[:keep + 1]
    finally:
        os.close(descriptor)


def _mib(size):
    return "%g MiB" % (size / 1048576.0)


def file_state(path, read=False):
    """What the file module and template compare: existence, type, mode, owner, group, size and SHA-1 of a regular
    file (the checksum Ansible's copy and template use) up to HASH_LIMIT; its content (text) when read and no larger
    than READ_LIMIT. A regular file that cannot be read (larger than HASH_LIMIT, replaced by a link or a fifo, a
    stream that would block) gets a checksum of null and an error naming the path; nothing else is ever opened."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return {"exists": False}
    except OSError as error:
        return {"exists": None, "error": str(error)}
    found = kind(info.st_mode)
    # The file module knows files, directories and links; the others (never opened) are named in kind.
    state = {"exists": True, "type": found if found in ("file", "directory", "link") else "other",
             "mode": "%04o" % stat.S_IMODE(info.st_mode), "owner": _name(pwd.getpwuid, info.st_uid),
             "group": _name(grp.getgrgid, info.st_gid), "size": info.st_size, "checksum": None}
    if state["type"] == "other":
        state["kind"] = found
    if state["type"] == "link":
        try:
            state["target"] = os.readlink(path)
        except OSError as error:  # replaced by a file (EINVAL) or removed since the lstat
            state["target"] = None
            state["error"] = "cannot read the link %s: %s" % (path, error.strerror or error)
    if state["type"] == "file":
        try:
            state["checksum"], data = read_regular(path, READ_LIMIT if read else 0)
        except Refused as error:
            state["error"] = str(error)
            return state
        if read:
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
