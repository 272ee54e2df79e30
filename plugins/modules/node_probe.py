#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_probe
short_description: Read a node's packages, package candidates, files, services and read-only commands in one call
version_added: 0.1.0
description:
  - Gathers in one round trip what a role needs to decide, on the controller, whether a converged node needs any
    change. Each task on a node costs a round trip on every node on every run; a role that reads its state with one
    probe and skips the changes it does not need re-runs in a few round trips.
  - Changes nothing, also outside check mode. The commands it is given must only read.
  - A part that cannot be read (no dpkg, no apt, no systemd) is C(null), not a failure, so that a role falls back to
    its own tasks.
options:
  package_facts:
    description:
      - Set C(ansible_facts.packages) as M(ansible.builtin.package_facts) does (dpkg on Debian and Ubuntu, rpm
        elsewhere; every installed package with its version) and return the held packages in RV(holds).
    type: bool
    default: false
  candidates:
    description:
      - Package names to look up in apt's package lists (C(apt-cache policy)) for the installed and candidate version
        and the versions on offer. C(null) where apt is not the package manager.
      - A package counts as installed only where dpkg has it fully installed (C(dpkg-query)); one that is
        half-configured, unpacked or half-installed gets C(installed) C(null), as apt would install it again.
    type: list
    elements: str
    default: []
  files:
    description:
      - Absolute paths whose state is returned (existence, type, mode, owner, group, size, SHA-1 of a regular file),
        each under the path exactly as given (no C(~) or variable expansion).
      - A path is never followed when it is a symbolic link, and only a regular file is opened, without blocking (a
        fifo, a device or a socket is C(type) C(other) with its C(kind), and is not opened). A regular file larger than
        64 MiB, one that would block when read (a stream such as C(/proc/kmsg)) or one replaced by something else
        while it is read gets a C(checksum) of C(null) and an C(error) naming the path, not a hang.
    type: list
    elements: str
    default: []
  read:
    description:
      - Absolute paths whose state and content (base64, as M(ansible.builtin.slurp) returns it; up to 1 MiB, C(null)
        for a larger file) are returned, each under the path exactly as given, read as O(files) are.
    type: list
    elements: str
    default: []
  globs:
    description:
      - Shell patterns whose matches are returned, sorted.
    type: list
    elements: str
    default: []
  services:
    description:
      - systemd units (names, not patterns) whose load, active and unit file states are returned (one
        C(systemctl show)). C(null) on a node not booted with systemd.
    type: list
    elements: str
    default: []
  users:
    description:
      - Accounts (names) to look up as C(getent passwd) does, through the system's name service.
    type: list
    elements: str
    default: []
  keyrings:
    description:
      - Absolute paths of OpenPGP key files (a repository's keyring) whose keys are listed as
        C(gpg --batch --with-colons --show-keys) lists them, with a GnuPG home of its own that is removed afterwards
        (the node's keyrings are neither read nor changed). C(rc), C(stdout), C(stderr), C(stdout_lines) and C(cmd)
        are returned under the path as given, as M(ansible.builtin.command) registers them; rc 127 without gpg.
        C(null) for a path that does not exist.
      - A path that is not a regular file (a symbolic link, a directory, a fifo, a device) or that cannot be read
        (larger than 1 MiB, unreadable) is not listed and gets only C(error), a message naming the path and why;
        the key check of the cuda_repo and infiniband roles refuses it. The file is read once, without following a
        link or blocking, and gpg lists a copy of what was read.
      - With them C(armor_blocks), the labels of the file's ASCII-armored blocks in order (C(-----BEGIN LABEL-----)
        lines; empty for a binary file), and C(text_outside_armor), whether anything but white space lies outside
        those blocks. APT reads every armored block of a key file whatever its label, gpg only those it accepts, so
        the key check of those roles refuses a file that is not exactly one C(PGP PUBLIC KEY BLOCK).
    type: list
    elements: str
    default: []
  commands:
    description:
      - Read-only commands to run, from a fixed set (C(apt_policy) is C(apt-cache policy), C(dkms_status) is
        C(dkms status), C(sacctmgr_clusters) is C(sacctmgr --noheader --parsable2 list cluster format=Cluster), the
        clusters slurmdbd knows, C(slurmd_hardware) is C(slurmd -C)), with C(LC_ALL=C). Their C(rc), C(stdout),
        C(stderr) and C(stdout_lines) are returned under that name, as M(ansible.builtin.command) registers them. A
        command that is not installed gets rc 127.
    type: list
    elements: str
    choices: [apt_policy, dkms_status, sacctmgr_clusters, slurmd_hardware]
    default: []
extends_documentation_fragment:
  - accelops.gpu.attributes
  - accelops.gpu.attributes.facts
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
  idempotent:
    support: full
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the driver's state
  accelops.gpu.node_probe:
    package_facts: true
    candidates: [libnvidia-ml1]
    files: [/etc/modprobe.d/nvidia.conf]
    globs: [/boot/vmlinuz-*]
    services: [nvidia-persistenced.service]
    commands: [dkms_status]
  register: __driver_state
"""

RETURN = r"""
holds:
  description: The packages whose dpkg selection is C(hold), sorted; C(null) without dpkg or when O(package_facts) is
    false.
  returned: always
  type: list
  elements: str
  sample: [libnvidia-ml1, nvidia-open]
ansible_facts:
  description: The facts set.
  returned: when O(package_facts) is true and dpkg or rpm is there
  type: dict
  contains:
    packages:
      description: As M(ansible.builtin.package_facts) sets it.
      returned: when O(package_facts) is true and dpkg or rpm is there
      type: dict
      sample: {"libnvidia-ml1": [{"name": "libnvidia-ml1", "version": "550.54.15-1", "arch": "amd64", "source": "apt"}]}
candidates:
  description: Per package asked for, from apt-cache policy; C(null) without apt.
  returned: always
  type: dict
  sample: {"libnvidia-ml1": {"known": true, "installed": "550.54.15-1", "candidate": "550.54.15-1",
           "versions": ["550.54.15-1", "550.40.07-1"], "status": "installed"}}
files:
  description: Per path in O(files) and O(read); C(content) (base64, as M(ansible.builtin.slurp) returns it) for
    those in O(read). C(type) is C(file), C(directory), C(link) or C(other) (then C(kind) is C(fifo),
    C(character device), C(block device), C(socket) or C(other)); C(error) says why a path could not be read.
  returned: always
  type: dict
  sample: {"/etc/modprobe.d/nvidia.conf": {"exists": true, "type": "file", "mode": "0644", "owner": "root",
           "group": "root", "size": 120, "checksum": "0c3f0e5e1c1a0e6ab3a86b7b6a3f0c4a3d9c5f43"}}
globs:
  description: Per pattern, the sorted paths it matches.
  returned: always
  type: dict
  sample: {"/boot/vmlinuz-*": ["/boot/vmlinuz-6.1.0-18-amd64"]}
users:
  description: Per account asked for, C(exists) and, where it exists, C(uid), C(gid), C(comment), C(home) and C(shell).
  returned: always
  type: dict
  sample: {"accelops-gpu-exporter": {"exists": true, "uid": 998, "gid": 998, "comment": "accelops.gpu GPU exporter",
           "home": "/nonexistent", "shell": "/usr/sbin/nologin"}}
services:
  description: Per unit, C(load_state), C(active_state), C(sub_state) and C(unit_file_state); C(null) without systemd.
  returned: always
  type: dict
  sample: {"nvidia-persistenced.service": {"load_state": "loaded", "active_state": "active", "sub_state": "running",
           "unit_file_state": "enabled"}}
keyrings:
  description: Per path in O(keyrings), gpg's listing (C(rc), C(stdout), C(stderr), C(stdout_lines), C(cmd)) and the
    file's armor (C(armor_blocks), C(text_outside_armor)); C(null) for a path that does not exist; only C(error) for
    one that is not a regular file or cannot be read.
  returned: always
  type: dict
  sample: {"/etc/apt/keyrings/cuda-archive-keyring.asc": {"rc": 0, "stdout": "pub:-:4096:1:A4B469963BF863CC:...",
           "stderr": "", "stdout_lines": ["pub:-:4096:1:A4B469963BF863CC:..."],
           "armor_blocks": ["PGP PUBLIC KEY BLOCK"], "text_outside_armor": false,
           "cmd": ["gpg", "--batch", "--with-colons", "--show-keys", "--",
                   "/etc/apt/keyrings/cuda-archive-keyring.asc"]}}
commands:
  description: Per name in O(commands), C(rc), C(stdout), C(stderr), C(stdout_lines) and C(cmd).
  returned: always
  type: dict
  sample: {"dkms_status": {"rc": 0, "stdout": "nvidia/550.54.15, 6.1.0-18-amd64, x86_64: installed", "stderr": "",
           "stdout_lines": ["nvidia/550.54.15, 6.1.0-18-amd64, x86_64: installed"], "cmd": ["dkms", "status"]}}
"""

import os
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.accelops.gpu.plugins.module_utils import _numbers, _probe

ENVIRON = {"LC_ALL": "C", "LANG": "C", "LANGUAGE": "C"}
# The only commands the module runs for O(commands): each only reads.
COMMANDS = {"apt_policy": ["apt-cache", "policy"], "dkms_status": ["dkms", "status"],
            "sacctmgr_clusters": ["sacctmgr", "--noheader", "--parsable2", "list", "cluster", "format=Cluster"],
            "slurmd_hardware": ["slurmd", "-C"]}


def run(module, argv):
    """argv with its program found as get_bin_path finds it (the sbin directories too); rc 127 when it is not."""
    program = module.get_bin_path(argv[0])
    if not program:
        return {"rc": 127, "stdout": "", "stderr": "%s: command not found" % argv[0], "cmd": argv}
    rc, out, err = module.run_command([program, *argv[1:]], environ_update=ENVIRON)
    return {"rc": rc, "stdout": out, "stderr": err, "cmd": argv}


def read(module, argv, what):
    """The standard output of a command the probe cannot do without; its failure fails the probe, named as what."""
    out = run(module, argv)
    if out["rc"] != 0:
        module.fail_json(msg="%s failed: %s" % (what, out["stderr"].strip()), rc=out["rc"])
    return out["stdout"]


def packages(module):
    """ansible_facts.packages and the held packages, or (None, None) without dpkg and rpm. dpkg where apt is the
    package manager (or rpm is absent), else rpm: a RHEL node may carry dpkg from EPEL."""
    if module.get_bin_path("dpkg-query") and (module.get_bin_path("apt-get") or not module.get_bin_path("rpm")):
        listing = ["dpkg-query", "-W", "-f", "${Package}\\t${Version}\\t${Architecture}\\t${Status}\\n"]
        return _probe.parse_dpkg_query(read(module, listing, "dpkg-query"))
    if module.get_bin_path("rpm"):
        listing = ["rpm", "-qa", "--qf", "%{NAME}\\t%{VERSION}\\t%{RELEASE}\\t%{EPOCH}\\t%{ARCH}\\n"]
        return _probe.parse_rpm_query(read(module, listing, "rpm -qa")), None
    return None, None


def candidates(module, names):
    if not names:
        return {}
    if not module.get_bin_path("apt-cache"):
        return None
    policy = _probe.parse_apt_policy(read(module, ["apt-cache", "policy", "--", *names], "apt-cache policy"), names)
    # dpkg-query answers rc 1 for a name it does not list; the names it lists are still printed.
    listed = run(module, ["dpkg-query", "-W", "-f", "${Package}\\t${Status}\\n", "--", *names])
    return _probe.complete_installs(policy, listed["stdout"])


def services(module, names):
    if not names:
        return {}
    if not (os.path.isdir("/run/systemd/system") and module.get_bin_path("systemctl")):
        return None
    argv = ["systemctl", "show", "--property=" + ",".join(_probe.SERVICE_PROPERTIES), "--", *names]
    return _probe.parse_systemctl_show(read(module, argv, "systemctl show"), names)


def commands(module, wanted):
    result = {}
    for name in wanted:
        out = run(module, COMMANDS[name])
        out["stdout_lines"] = out["stdout"].splitlines()
        result[name] = out
    return result


def keyrings(module, paths):
    """gpg's listing of each key file, with a throw-away GnuPG home: --show-keys imports nothing, but gpg creates its
    home's keybox and trust database, which must not land in root's home. The file is read once, without following a
    link or blocking and to at most READ_LIMIT bytes, and gpg lists a copy of what was read: the bytes listed are the
    bytes whose armor is given, whatever replaces the file meanwhile."""
    result = {}
    for path in paths:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            result[path] = None
            continue
        except OSError as error:
            result[path] = {"error": "cannot read %s: %s" % (path, error.strerror or error)}
            continue
        try:
            if not stat.S_ISREG(mode):
                raise _probe.Refused("%s is %s, not a regular file; not read" % (path, _probe.described(mode)))
            _digest, data = _probe.read_regular(path, _probe.READ_LIMIT, _probe.READ_LIMIT)
        except _probe.Refused as error:
            result[path] = {"error": str(error)}
            continue
        argv = ["gpg", "--batch", "--with-colons", "--show-keys", "--", path]
        with tempfile.TemporaryDirectory(prefix="accelops-probe-") as home:
            copy = os.path.join(home, "key")
            with open(copy, "xb") as handle:
                handle.write(data)
            out = run(module, [argv[0], "--no-tty", "--no-autostart", "--homedir", home, *argv[1:-1], copy])
            out["stderr"] = out["stderr"].replace(copy, path)
        out["cmd"] = argv
        out["stdout_lines"] = out["stdout"].splitlines()
        out.update(_probe.armor_layout(data))
        result[path] = out
    return result


def _refused(values, most=5):
    """The first values refused, each shortened, and how many more: a message never echoes a whole careless list."""
    shown = ", ".join(_numbers.shown(value, 60) for value in values[:most])
    return shown + (" and %d more" % (len(values) - most) if len(values) > most else "")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            package_facts=dict(type="bool", default=False),
            candidates=dict(type="list", elements="str", default=[]),
            files=dict(type="list", elements="str", default=[]),
            read=dict(type="list", elements="str", default=[]),
            globs=dict(type="list", elements="str", default=[]),
            services=dict(type="list", elements="str", default=[]),
            users=dict(type="list", elements="str", default=[]),
            # Paths of public key files, not secrets.
            keyrings=dict(type="list", elements="str", default=[], no_log=False),
            commands=dict(type="list", elements="str", choices=sorted(COMMANDS), default=[]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    for key in ("candidates", "services", "users"):
        bad = [name for name in params[key] if not name or name.startswith("-")
               or any(c.isspace() or c in "*?[\0" for c in name)]
        if bad:
            module.fail_json(msg="%s: names must be non-empty, without white space, NUL or *?[ and not start with '-', "
                             "got %s" % (key, _refused(bad)))
    for key in ("files", "read", "keyrings"):
        bad = [path for path in params[key] if not path.startswith("/") or "\0" in path]
        if bad:
            module.fail_json(msg="%s: paths must be absolute, got %s" % (key, _refused(bad)))
    files = {path: _probe.file_state(path) for path in params["files"]}
    files.update({path: _probe.file_state(path, read=True) for path in params["read"]})
    installed, holds = packages(module) if params["package_facts"] else (None, None)
    facts = {"ansible_facts": {"packages": installed}} if installed is not None else {}
    module.exit_json(changed=False, holds=holds, candidates=candidates(module, params["candidates"]), files=files,
                     globs=_probe.expand_globs(params["globs"]), services=services(module, params["services"]),
                     users={name: _probe.user_state(name) for name in params["users"]},
                     keyrings=keyrings(module, params["keyrings"]), commands=commands(module, params["commands"]),
                     **facts)


if __name__ == "__main__":
    main()
