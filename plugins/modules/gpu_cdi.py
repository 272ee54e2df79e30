#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_cdi
short_description: Keep the CDI spec of NVIDIA GPUs true to NVML
version_added: 0.1.0
description:
  - Writes the Container Device Interface (CDI) spec through which Podman, containerd and CRI-O hand GPUs to
    containers (C(--device nvidia.com/gpu=0)), built the way C(nvidia-ctk cdi generate) of nvidia-container-toolkit
    1.18 builds it, from what NVML says and what the node has.
  - "The spec (kind C(nvidia.com/gpu), cdiVersion C(0.5.0)) names every GPU by its index and UUID (C(0),
    C(GPU-...)), every MIG device by C(<gpu>:<slot>) and its UUID (C(0:1), C(MIG-...)), and C(all). A GPU in MIG mode
    is offered as its MIG devices only, as nvidia-ctk does."
  - A GPU's device gives C(/dev/nvidia<minor>) (NVML's minor number, not the index) and its DRM nodes; a MIG device
    gives its GPU's node and the capability nodes C(/dev/nvidia-caps/nvidia-cap<N>) of its GPU and compute instances,
    whose minors come from C(/proc/driver/nvidia-caps/mig-minors). Every container that gets a GPU also gets
    C(/dev/nvidiactl), C(/dev/nvidia-uvm), C(/dev/nvidia-uvm-tools) and C(/dev/nvidia-modeset) (those present), the
    driver's libraries of the loaded release (C(*.so.<release>)) mounted read-only, its GSP firmware, its tools
    (C(nvidia-smi), ...) and daemons' sockets, and the nvidia-cdi-hook hooks that link and index the libraries.
  - O(state=present) writes the spec when its content or mode differs, through a temporary file in the same
    directory and a rename, so that a runtime never reads half of it; the directory is made when missing. Run it
    again after a driver change or a MIG layout change (M(accelops.gpu.gpu_mig)).
  - O(state=check) only reads and compares, and returns RV(stale) and RV(findings) in the shape of
    M(accelops.gpu.gpu_health)'s findings.
  - Without nvidia-ml-py, without a loaded driver, or on any NVML error the task fails and nothing is written or
    judged; an NVML error is never an empty GPU list. A lost GPU is left out of the spec and said in a warning.
  - In check mode, O(state=present) without nvidia-ml-py or a loaded driver (which an earlier task of the same run
    may install) warns and reports a change, as a real run would write the spec; only RV(path) and RV(differs) are
    returned then.
  - Refuses a path that is a symbolic link, a directory or anything but a regular file.
options:
  state:
    description:
      - C(present) writes the spec; C(check) compares the spec at O(path) with NVML and the node and changes nothing.
    type: str
    choices: [present, check]
    default: present
  path:
    description:
      - The spec file. Runtimes read C(/etc/cdi) and C(/var/run/cdi); a name ending in C(.json) is written as JSON,
        any other as YAML, so it must end in C(.yaml) or C(.json).
      - nvidia-container-toolkit's own C(nvidia-cdi-refresh) service writes C(/var/run/cdi/nvidia.yaml); two specs of
        the same kind in the two directories name the same devices twice. Use one of them.
    type: path
    default: /etc/cdi/nvidia.yaml
  device_name_strategy:
    description:
      - How devices are named, as nvidia-ctk's C(--device-name-strategy); each strategy adds a name for every device.
      - C(index) gives C(0) and C(0:1), C(uuid) gives C(GPU-...) and C(MIG-...), C(type-index) gives C(gpu0) and
        C(mig0:1).
    type: list
    elements: str
    choices: [index, uuid, type-index]
    default: [index, uuid]
  all_device:
    description: Add the device C(all), which gives every device's edits (nvidia-ctk's default; C(--no-all-device)).
    type: bool
    default: true
  hooks:
    description:
      - The nvidia-cdi-hook hooks the spec calls; the installed nvidia-container-toolkit must know each one, or the
        runtime fails to create the container.
      - The default is what nvidia-container-toolkit 1.18 and 1.19 write. Add C(update-application-profile) for 1.20;
        leave out C(enable-cuda-compat) and C(disable-device-node-modification) for releases before 1.18.
      - C(chmod) (off by default since 1.17) makes C(/dev/dri) readable in containers of older crun releases.
    type: list
    elements: str
    choices: [create-symlinks, enable-cuda-compat, update-ldcache, disable-device-node-modification,
              update-application-profile, chmod]
    default: [create-symlinks, enable-cuda-compat, update-ldcache, disable-device-node-modification]
  hook_path:
    description: Where nvidia-cdi-hook is on the node (nvidia-ctk's C(--nvidia-cdi-hook-path)).
    type: path
    default: /usr/bin/nvidia-cdi-hook
  driver_root:
    description:
      - Where the driver's files are (nvidia-ctk's C(--driver-root)), for a driver installed in a container's root;
        paths under another root than C(/) are written as the spec's host paths.
    type: path
    default: /
  dev_root:
    description: Where C(/dev) is (nvidia-ctk's C(--dev-root)); defaults to O(driver_root).
    type: path
  sysfs_root:
    description: Where sysfs is mounted, for each GPU's DRM nodes.
    type: path
    default: /sys
  proc_root:
    description: Where procfs is mounted, for the MIG capability minors.
    type: path
    default: /proc
extends_documentation_fragment:
  - accelops.gpu.attributes
  - accelops.gpu.attributes.sysfs_group
  - accelops.gpu.attributes.nvml
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    support: full
requirements:
  - PyYAML on the managed host to read a YAML spec back for O(state=check) and for the findings of
    O(state=present); writing needs nothing but the Python standard library.
notes:
  - Needs root on the managed host (C(become=true)) to write into C(/etc/cdi).
  - Device nodes are written by path only, as nvidia-ctk did before 1.19; the runtime reads their major and minor
    numbers from the node when it creates the container, so a node recreated by the driver does not make the spec
    stale.
  - Graphics files (Vulkan and EGL configuration, X.org modules) are not mounted; the spec serves compute containers.
  - nvidia-ctk's C(--device-id) (a spec for some devices only) is not offered, so that RV(findings) can say whether
    every GPU and MIG device is in the spec.
seealso:
  - module: accelops.gpu.gpu_mig
  - module: accelops.gpu.gpu_health
  - name: Support for Container Device Interface
    description: NVIDIA's guide to C(nvidia-ctk cdi generate).
    link: https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html
  - name: Container Device Interface specification
    description: The spec format, device names and validation.
    link: https://github.com/cncf-tags/container-device-interface/blob/main/SPEC.md
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Write the CDI spec of the node's GPUs
  accelops.gpu.gpu_cdi:
  become: true

- name: Lay out MIG, then write the spec again (the MIG devices changed)
  block:
    - name: Seven 1g.10gb instances on every GPU
      accelops.gpu.gpu_mig:
        layout: [1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb]
    - name: Write the CDI spec
      accelops.gpu.gpu_cdi:
  become: true

- name: Find a stale spec
  accelops.gpu.gpu_cdi:
    state: check
  register: cdi

- name: Say what is stale
  ansible.builtin.debug:
    msg: "{{ cdi.findings | map(attribute='message') | list }}"
  when: cdi.stale

- name: A spec for nvidia-container-toolkit 1.20, as JSON
  accelops.gpu.gpu_cdi:
    path: /etc/cdi/nvidia.json
    hooks: [create-symlinks, enable-cuda-compat, update-ldcache, disable-device-node-modification,
            update-application-profile]
  become: true
"""

RETURN = r"""
path:
  description: The spec file.
  returned: always
  type: str
  sample: /etc/cdi/nvidia.yaml
stale:
  description: Whether the spec that was at RV(path) before the run is not true of the node (RV(findings) other than
    a lost GPU). With O(state=present) the spec is then rewritten (in check mode, would be).
  returned: success, except in check mode when NVML cannot be asked
  type: bool
  sample: true
differs:
  description: Whether the file's content or mode differs from what O(state=present) writes (also when it is not
    stale, for example after a change of O(hooks)).
  returned: success
  type: bool
  sample: true
findings:
  description:
    - Where the spec that was at RV(path) is not true of the node, as M(accelops.gpu.gpu_health)'s findings
      (C(gpu) index or null, C(code), C(severity), C(message)).
    - "Codes: C(cdi_spec_missing), C(cdi_spec_invalid) (does not parse, or a runtime would refuse it),
      C(cdi_device_missing) (a GPU or MIG device NVML shows), C(cdi_device_extra) (a name NVML does not show, such as
      the MIG devices of a layout since changed), C(cdi_device_differs) (a name that leads to other device nodes than
      NVML's), C(cdi_device_node_missing), C(cdi_mount_missing), C(cdi_driver_version) (libraries of another release
      than the loaded driver), C(gpu_lost) (a GPU left out and not judged)."
  returned: success, except in check mode when NVML cannot be asked
  type: list
  elements: dict
  sample:
    - gpu: null
      code: cdi_driver_version
      severity: critical
      message: the spec is for driver 535.161.08; the loaded driver is 550.54.15
devices:
  description: The device names of the spec written (or, with O(state=check), of the spec that would be written).
  returned: success, except in check mode when NVML cannot be asked
  type: list
  elements: str
  sample: ["0", "0:0", "1", "GPU-5b357cbf-a18f-4d4b-a1fa-e80574e9a835", "MIG-2960a99b-cfa9-44ae-9958-5271b5f50c61",
           all]
driver_version:
  description: The loaded driver's release, as NVML gives it.
  returned: success, except in check mode when NVML cannot be asked
  type: str
  sample: 550.54.15
lost_gpus:
  description: Indexes of the GPUs left out because NVML says they are lost.
  returned: success, except in check mode when NVML cannot be asked
  type: list
  elements: int
  sample: [2]
"""

import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.accelops.gpu.plugins.module_utils import _cdi, _files, _nvml
from ansible_collections.accelops.gpu.plugins.module_utils._gpu_apply import FAULTS, describe_fault
from ansible_collections.accelops.gpu.plugins.module_utils._health import finding

SPEC_MODE = 0o644


def check_params(params):
    """One message for the first option that is wrong; None when all are usable."""
    problem = _cdi.check_path(params["path"])
    for name in ("driver_root", "sysfs_root", "proc_root", "dev_root"):
        if problem is None and (name != "dev_root" or params[name] is not None):
            problem = _cdi.check_root(name, params[name])
    if problem is None:
        problem = _cdi.check_hook_path(params["hook_path"])
    if problem is None and not params["device_name_strategy"]:
        problem = "device_name_strategy: give at least one of index, uuid, type-index"
    return problem


def judge(state, path, expected, owners, node):
    """The findings about the spec that is at path now; raises LookupError("PyYAML") when it cannot be read."""
    if state is None:
        if not expected["devices"]:
            return []  # a node without GPU or MIG device needs no spec
        return [finding(None, "cdi_spec_missing", "critical", "%s does not exist" % path)]
    spec, problems = _cdi.read_spec(state, path)
    if problems:
        return [_cdi.invalid_finding(path, problems, "critical")]
    return _cdi.compare(spec, expected, owners, node)


def unavailable(module, problem, path):
    """NVML cannot be asked: the module fails, except with state=present in check mode, where an earlier task of the
    same run may be what installs nvidia-ml-py or the driver: it says so and predicts a write."""
    if module.check_mode and module.params["state"] == "present":
        module.warn("check mode: %s; the spec cannot be built, a real run would write it" % problem)
        module.exit_json(changed=True, path=path, differs=True)
    module.fail_json(msg="%s; nothing was written" % problem)


def read_node(module, path):
    """NVML's view of the GPUs, in one session; fails the module when NVML cannot give it."""
    if not _nvml.HAS_PYNVML:
        unavailable(module, _nvml.MISSING_LIB_HINT, path)
    try:
        with _nvml.NvmlSession() as session:
            _available, loaded, reason = session.open()
            if not loaded:
                unavailable(module, "NVML is not usable on this host: %s" % reason, path)
            return _cdi.read_gpus(session)
    except _cdi.CdiError as exc:
        module.fail_json(msg=str(exc))
    except FAULTS as exc:
        module.fail_json(msg=describe_fault("NVML", "reading the GPUs", exc) + "; nothing was written")
    return None  # not reached


def undo(made):
    """Remove the directories this run made for the spec (``made``, outermost first), so that nothing stays of a
    write that failed; the words for the failure's message."""
    for position, directory in reversed(list(enumerate(made))):
        try:
            os.rmdir(directory)
        except OSError:
            return "nothing was written, but the directories %s were made and are left" % ", ".join(made[:position + 1])
    return "nothing was written"


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["present", "check"], default="present"),
            path=dict(type="path", default="/etc/cdi/nvidia.yaml"),
            device_name_strategy=dict(type="list", elements="str", choices=list(_cdi.NAME_STRATEGIES),
                                      default=["index", "uuid"]),
            all_device=dict(type="bool", default=True),
            hooks=dict(type="list", elements="str", choices=list(_cdi.HOOKS), default=list(_cdi.DEFAULT_HOOKS)),
            hook_path=dict(type="path", default=_cdi.DEFAULT_HOOK_PATH),
            driver_root=dict(type="path", default="/"),
            dev_root=dict(type="path"),
            sysfs_root=dict(type="path", default="/sys"),
            proc_root=dict(type="path", default="/proc"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problem = check_params(params)
    if problem:
        module.fail_json(msg=problem)
    path = os.path.normpath(params["path"])
    options = {"strategies": list(dict.fromkeys(params["device_name_strategy"])),
               "hooks": [name for name in _cdi.HOOKS if name in params["hooks"]],
               "hook_path": params["hook_path"], "all_device": params["all_device"]}
    host = _cdi.Host(params["driver_root"], params["dev_root"], params["sysfs_root"], params["proc_root"])
    try:
        state = _cdi.current_spec(path)
    except _cdi.CdiError as exc:
        module.fail_json(msg=str(exc), path=path)

    node = read_node(module, path)
    check = params["state"] == "check"
    try:
        spec, owners = _cdi.build_spec(node, host, options)
        data = _cdi.render(spec, path)
    except _cdi.CdiError as exc:
        if not check:
            module.fail_json(msg=str(exc), path=path, lost_gpus=node["lost"])
        # The spec cannot be written as things are; the one there is still compared with what NVML shows.
        module.warn("a spec cannot be written now: %s" % exc)
        try:
            spec, owners = _cdi.build_spec(node, host, options, strict=False)
        except _cdi.CdiError as again:
            module.fail_json(msg=str(again).replace("nothing was written", "nothing was compared"), path=path)
        data = None
    for index in node["lost"]:
        module.warn("GPU %d is lost: it is left out of the CDI spec" % index)

    try:
        findings = judge(state, path, spec, owners, node)
    except LookupError:
        if check:
            module.fail_json(msg=missing_required_lib("PyYAML", reason="to read the YAML spec %s" % path), path=path)
        module.warn("PyYAML is not installed: %s is rewritten when its content differs, without findings" % path)
        findings = []
    item = {"path": path, "kind": "content", "data": data, "mode": SPEC_MODE, "uid": None, "gid": None,
            "owner": None, "group": None, "secret": False}
    differs = data is None or bool(_files.differences(item, state))
    result = dict(changed=False, path=path, stale=_cdi.stale(findings), differs=differs, findings=findings,
                  devices=[device["name"] for device in spec["devices"]], driver_version=node["driver_version"],
                  lost_gpus=node["lost"])
    if check or not differs:
        module.exit_json(**result)

    result["changed"] = True
    if module._diff:
        result["diff"] = _files.diff(item, state)
    if not module.check_mode:
        made = []
        try:
            for directory in [*reversed(_files.ancestors(path))][1:]:
                if not os.path.isdir(directory):
                    os.mkdir(directory, 0o755)
                    made.append(directory)
            _files.put(item, state)
        except OSError as exc:
            result["changed"] = False
            module.fail_json(msg="%s cannot be written: %s; %s" % (path, exc.strerror or exc, undo(made)), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
