#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: container_runtime
short_description: Give a container runtime NVIDIA's runtime and CDI, keeping the site's settings
version_added: 0.1.0
description:
  - "C(docker): merges C(runtimes.nvidia) (C({\"path\": \"nvidia-container-runtime\", \"args\": []})) into
    C(/etc/docker/daemon.json), and C(default-runtime) only with O(set_default); every other key of the file is
    kept. The file is rewritten (indented JSON) only when its content would change."
  - "C(containerd): writes the drop-in O(drop_in) and adds it to the C(imports) of C(config.toml), whose other lines
    stay as they are. containerd 1.6 and 1.7 replace a plugin's whole section when they read an import
    (C(mergeConfig) in C(services/server/config/config.go); containerd issue 5837), so the drop-in carries the
    site's whole CRI plugin section (from C(config.toml) and its other imports) with NVIDIA's runtime (C(runtime_type
    io.containerd.runc.v2), C(BinaryName)), C(enable_cdi = true) and C(cdi_spec_dirs) added. Configuration version 2
    (C(io.containerd.grpc.v1.cri), containerd 1.x) and 3 (C(io.containerd.cri.v1.runtime), containerd 2.x) as the
    file's C(version) says."
  - "C(crio): writes a drop-in that names the CDI spec directories (C([crio.runtime] cdi_spec_dirs)). Podman reads
    C(/etc/cdi) and C(/var/run/cdi) by itself and needs nothing."
  - Reading TOML needs Python 3.11 or later (C(tomllib)) or C(python3-toml) for the module's Python; without
    either a containerd configuration fails the task with nothing changed.
  - A file that is not valid JSON or TOML, of an unknown configuration version, a symbolic link or anything but a
    regular file fails the task, naming it; nothing is written. Each file is written through a temporary file in its
    own directory and a rename; an existing file keeps its mode and owner.
extends_documentation_fragment:
  - accelops.gpu.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    support: full
options:
  runtime:
    description: The runtime to configure.
    type: str
    choices: [docker, containerd, crio]
    required: true
  path:
    description:
      - The runtime's configuration file. Defaults C(/etc/docker/daemon.json), C(/etc/containerd/config.toml),
        C(/etc/crio/crio.conf.d/99-nvidia.conf).
    type: path
  drop_in:
    description: containerd only, the drop-in this module owns.
    type: path
    default: /etc/containerd/conf.d/99-nvidia.toml
  runtime_path:
    description:
      - The runtime binary that Docker and containerd run. Docker looks a bare name up in its C(PATH).
      - Defaults C(nvidia-container-runtime) for Docker and C(/usr/bin/nvidia-container-runtime) for containerd.
    type: str
  set_default:
    description:
      - Make NVIDIA's runtime the default one (Docker's C(default-runtime), containerd's C(default_runtime_name)).
    type: bool
    default: false
  cdi_spec_dirs:
    description: Where containerd and CRI-O look for CDI specs.
    type: list
    elements: str
    default: [/etc/cdi, /var/run/cdi]
  version:
    description:
      - containerd's configuration version where C(config.toml) is missing or has no settings; C(2) for containerd
        1.x, C(3) for containerd 2.x. Omitted, it is C(3) where C(containerd --version) says 2.x, else C(2).
      - containerd 1.6 reads no CDI settings (they come with 1.7); the module warns there, and its containers get GPUs
        through NVIDIA's runtime only.
    type: int
    choices: [2, 3]
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Docker with NVIDIA's runtime
  accelops.gpu.container_runtime:
    runtime: docker
  become: true

- name: containerd with NVIDIA's runtime and CDI
  accelops.gpu.container_runtime:
    runtime: containerd
  become: true
"""

RETURN = r"""
changed_paths:
  description: The files written (or, in check mode, that would be).
  returned: always
  type: list
  elements: str
  sample: [/etc/containerd/conf.d/99-nvidia.toml, /etc/containerd/config.toml]
version:
  description: containerd's configuration version that was merged.
  returned: when O(runtime=containerd)
  type: int
  sample: 2
"""

import glob
import os
import re
import stat

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.text.converters import to_bytes, to_text

from ansible_collections.accelops.gpu.plugins.module_utils import _files, _runtimes

DEFAULT_PATHS = {"docker": "/etc/docker/daemon.json", "containerd": "/etc/containerd/config.toml",
                 "crio": "/etc/crio/crio.conf.d/99-nvidia.conf"}
DEFAULT_RUNTIME_PATHS = {"docker": "nvidia-container-runtime", "containerd": "/usr/bin/nvidia-container-runtime"}
READ_LIMIT = 16 * 1024 * 1024


class Refused(Exception):
    """A path that is not a regular file, or that cannot be read."""


def read(path):
    """The text at path, or None where nothing is there; Refused for a link, a directory, a device or bad UTF-8."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Refused("%s cannot be read: %s" % (path, exc.strerror)) from None
    if stat.S_ISLNK(info.st_mode):
        raise Refused("%s is a symbolic link; it is left alone" % path)
    if not stat.S_ISREG(info.st_mode):
        raise Refused("%s is not a regular file; it is left alone" % path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # replaced since the lstat
                raise Refused("%s is not a regular file; it is left alone" % path)
            data = handle.read(READ_LIMIT + 1)
    except OSError as exc:
        raise Refused("%s cannot be read: %s" % (path, exc.strerror or exc)) from None
    if len(data) > READ_LIMIT:
        raise Refused("%s is larger than %d bytes; it is left alone" % (path, READ_LIMIT))
    try:
        return to_text(data, errors="strict")
    except UnicodeDecodeError as exc:
        raise Refused("%s cannot be read as UTF-8 text: %s" % (path, exc)) from None


def import_paths(pattern, drop_in):
    """The files one import pattern names, as containerd expands it once the drop-in is there: a glob where it has a
    '*' (sorted), else the one path (brackets and question marks are then part of the name)."""
    if "*" not in pattern:
        return [pattern]
    found = set(glob.glob(pattern)) | ({drop_in} if _runtimes.import_matches(pattern, drop_in) else set())
    return [path for path in sorted(found) if _runtimes.import_matches(pattern, path)]


def write(path, text, old=None):
    """text into path through a temporary file in the same directory and a rename; an existing file's mode and owner
    are kept, a new one is root's 0644. The directory is made (0755) when missing. Refused where the file is no
    longer what was read (old: its text, None for no file): replaced by a link or a FIFO, or changed meanwhile."""
    if read(path) != old:  # Refused where it became a link, a FIFO or a directory meanwhile
        raise Refused("%s changed while it was being merged; run again" % path)
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    try:
        state = _files.current(path)
    except _files.FilesError as exc:
        raise Refused(str(exc)) from None
    info = state["stat"] if state else None
    # The collection's one atomic write (module_utils/_files.py): a temporary file beside it, renamed over it.
    _files.put({"path": path, "kind": "content", "data": to_bytes(text),
                "mode": stat.S_IMODE(info.st_mode) if info else 0o644,
                "uid": info.st_uid if info and os.geteuid() == 0 else None,
                "gid": info.st_gid if info and os.geteuid() == 0 else None}, state)


def check_params(params):
    """One message for the first option that is wrong; None when all are usable."""
    for name in ("path", "drop_in"):
        problem = _runtimes.check_path_value(name, params[name])
        if problem:
            return problem
    if params["runtime"] == "containerd":
        problem = _runtimes.check_path_value("runtime_path", params["runtime_path"])
    elif params["runtime"] == "docker" and not re.match(r"\A[^\x00-\x1f\x7f]+\Z", params["runtime_path"]):
        problem = "runtime_path must be a name or path without control characters, got %r" % params["runtime_path"]
    if problem:
        return problem
    if not params["cdi_spec_dirs"]:
        return "cdi_spec_dirs must name at least one directory"
    for directory in params["cdi_spec_dirs"]:
        problem = _runtimes.check_path_value("cdi_spec_dirs", directory)
        if problem:
            return problem
    if params["runtime"] == "containerd" and "*" in params["drop_in"]:
        return ("drop_in must not contain '*': containerd reads an import with a '*' as a glob, got %r"
                % params["drop_in"])
    if params["runtime"] == "containerd" and os.path.normpath(params["drop_in"]) == os.path.normpath(params["path"]):
        return "drop_in must be another file than path (%s)" % params["path"]
    return None


def containerd_release(module):
    """(major, minor) of the node's containerd (containerd --version), or None where it is not there or says none."""
    binary = module.get_bin_path("containerd")
    if binary is None:
        return None
    rc, out, _err = module.run_command([binary, "--version"])
    found = re.search(r"\sv?(\d+)\.(\d+)", out or "")
    return (int(found.group(1)), int(found.group(2))) if rc == 0 and found else None


def plan(module, params):
    """[(path, old text or None, new text)] of the files that change, and the extra results."""
    path = params["path"]
    if params["runtime"] == "docker":
        old = read(path)
        new = _runtimes.docker_merge(old, params["runtime_path"], params["set_default"])
        return ([(path, old, new)] if new is not None else []), {}
    if params["runtime"] == "crio":
        old = read(path)
        new = _runtimes.crio_text(params["cdi_spec_dirs"])
        return ([(path, old, new)] if new != old else []), {}
    drop_in = params["drop_in"]
    old_config = read(path)
    old_drop_in = read(drop_in)
    if not _runtimes.HAS_TOML:
        module.fail_json(msg="%s; %s was not changed" % (missing_required_lib("python3-toml",
                                                                              reason=_runtimes.TOML_HINT), path))
    others, after, ours = {}, [], False  # others in the order containerd reads them, each once
    if old_config is not None:
        data = _runtimes.toml_loads(old_config, path)
        for pattern in _runtimes.imports_of(data, os.path.dirname(path)):
            for found in import_paths(pattern, drop_in):
                if os.path.normpath(found) == os.path.normpath(drop_in):
                    ours = True
                elif found not in others:
                    others[found] = read(found)
                    if ours:
                        after.append(found)
        others = {key: value for key, value in others.items() if value is not None}
    release = containerd_release(module)
    warning = _runtimes.cdi_warning(release)
    if warning:
        module.warn(warning)
    version = params["version"] or (3 if release is not None and release >= (2, 0) else 2)
    options = {"runtime_path": params["runtime_path"], "cdi_spec_dirs": params["cdi_spec_dirs"],
               "set_default": params["set_default"], "version": version, "read_after": after}
    result = _runtimes.containerd_plan(old_config, path, others, drop_in, options)
    changes = []
    if result["drop_in"] != old_drop_in:
        changes.append((drop_in, old_drop_in, result["drop_in"]))
    if result["config"] is not None:
        changes.append((path, old_config, result["config"]))
    return changes, {"version": result["version"]}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            runtime=dict(type="str", choices=list(_runtimes.RUNTIMES), required=True),
            path=dict(type="path"),
            drop_in=dict(type="path", default="/etc/containerd/conf.d/99-nvidia.toml"),
            runtime_path=dict(type="str"),
            set_default=dict(type="bool", default=False),
            cdi_spec_dirs=dict(type="list", elements="str", default=list(_runtimes.DEFAULT_CDI_SPEC_DIRS)),
            version=dict(type="int", choices=[2, 3]),
        ),
        supports_check_mode=True,
    )
    params = dict(module.params)
    params["path"] = params["path"] or DEFAULT_PATHS[params["runtime"]]
    params["runtime_path"] = params["runtime_path"] or DEFAULT_RUNTIME_PATHS.get(params["runtime"], "")
    problem = check_params(params)
    if problem:
        module.fail_json(msg="%s; nothing was changed" % problem)
    try:
        changes, extra = plan(module, params)
    except Refused as exc:
        module.fail_json(msg="%s; nothing was changed" % exc)
    except _runtimes.RuntimeConfigError as exc:
        message = str(exc)
        if params["runtime"] == "docker":
            message = "%s %s" % (params["path"], message)
        module.fail_json(msg="%s; nothing was changed" % message)
    except LookupError as exc:
        module.fail_json(msg="%s; nothing was changed" % exc)
    result = dict(changed=bool(changes), changed_paths=[path for path, _old, _new in changes], **extra)
    if module._diff and changes:
        result["diff"] = [{"before_header": path, "after_header": path, "before": old or "", "after": new}
                          for path, old, new in changes]
    if changes and not module.check_mode:
        written = []
        for path, old, new in changes:  # the drop-in first: config.toml never imports a file that is not there
            try:
                write(path, new, old)
            except (OSError, Refused) as exc:
                result["changed_paths"] = written
                result["changed"] = bool(written)
                problem = str(exc) if isinstance(exc, Refused) else "%s cannot be written: %s" % (
                    path, exc.strerror or exc)
                module.fail_json(msg="%s; %s" % (problem, "already written: %s" % ", ".join(written) if written
                                                 else "nothing was changed"), **result)
            written.append(path)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
