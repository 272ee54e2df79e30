#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_health
short_description: Judge the health of a node's NVIDIA GPUs and fail on what matters
version_added: 0.1.0
description:
  - Reads the GPUs through NVML and lists findings, each with the GPU, a code, a severity and a message.
  - C(critical) findings are C(gpu_lost), C(ecc_uncorrected) (uncorrectable volatile ECC errors),
    C(row_remap_failure), C(gpu_count_low) (fewer GPUs than O(expected_gpu_count)), C(driver_mismatch) (the driver
    changed and the node has not rebooted, so a reboot is required; the loaded kernel module is not the installed
    library's release), C(driver_unavailable) (GPUs on the PCI bus, or expected, but no usable driver) and
    C(pci_unreadable) when the PCI bus cannot be listed and NVML does not answer either (a warning when NVML does).
  - C(warning) findings are C(row_remap_pending), C(retired_pages_pending), C(temperature_slowdown) (at or past the
    slowdown threshold), C(clocks_slowdown) (hardware or thermal slowdown among the clock event reasons),
    C(nvlink_down) (a link down on a node with an NVLink fabric), C(pcie_width_degraded), C(pcie_gen_degraded)
    (a busy GPU below its maximum PCIe generation; idle GPUs lower it on purpose) and C(persistence_off).
  - >-
    C(warning) findings about the node's CDI specs (O(cdi_specs)), where one exists, compared with NVML as
    M(accelops.gpu.gpu_cdi) with O(accelops.gpu.gpu_cdi#module:state=check) compares them, with the names the spec
    uses. The codes are C(cdi_device_missing), C(cdi_device_extra), C(cdi_device_differs) (a GPU or MIG device that
    the spec gives other device nodes than NVML shows, as after a MIG change), C(cdi_device_node_missing),
    C(cdi_mount_missing), C(cdi_driver_version) (the spec is for another driver than the loaded one),
    C(cdi_spec_invalid), and C(cdi_unjudged) when the spec cannot be compared (no PyYAML for the module's Python,
    NVML failing part-way).
  - >-
    They are warnings because the GPUs work, but a container that asks for a GPU through the spec gets the wrong
    devices or none. Rewrite the spec with M(accelops.gpu.gpu_cdi).
  - The verdict is the worst severity found; O(fail_on) decides whether the task fails.
  - Without nvidia-ml-py on the host the task fails with what to install (in check mode it warns instead).
options:
  fail_on:
    description:
      - The verdict from which the task fails, with a message that lists the findings.
      - C(never) only reports.
    type: str
    choices: [critical, warning, never]
    default: critical
  expected_gpu_count:
    description:
      - How many GPUs the node should have (for example from the inventory); fewer is a critical finding.
      - A whole number, 0 or more, or text of ASCII digits (as a template renders it).
    type: raw
  sysfs_root:
    description: Where sysfs is mounted, for the PCI scan that tells a missing driver from a node without GPUs.
    type: path
    default: /sys
  cdi_specs:
    description:
      - The CDI spec files to judge where they exist (a path with nothing there is no finding); an empty list judges
        none.
      - The defaults are where nvidia-ctk and M(accelops.gpu.gpu_cdi) write them.
    type: list
    elements: path
    default: [/etc/cdi/nvidia.yaml, /var/run/cdi/nvidia.yaml]
  driver_root:
    description: Where the driver's files and device nodes are, as for M(accelops.gpu.gpu_cdi), to judge a spec.
    type: path
    default: /
  proc_root:
    description: Where procfs is mounted (the driver's MIG capability minors), to judge a spec.
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
    support: none
  idempotent:
    support: full
seealso:
  - module: accelops.gpu.gpu_facts
  - module: accelops.gpu.gpu_cdi
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Keep a node with a sick GPU out of the scheduler
  accelops.gpu.gpu_health:
    expected_gpu_count: "{{ gpu_count | default(8) }}"

- name: Report only, then decide
  accelops.gpu.gpu_health:
    fail_on: never
  register: health

- name: Drain the node when anything is off
  ansible.builtin.command: >-
    scontrol update nodename={{ inventory_hostname_short }} state=drain reason="GPU health {{ health.verdict }}"
  when: health.verdict != 'ok'
  changed_when: true
"""

RETURN = r"""
verdict:
  description:
    - The worst severity among the findings.
    - C(unknown) only in check mode on a host without nvidia-ml-py (without check mode that is an error).
  returned: always
  type: str
  choices: [ok, warning, critical, unknown]
  sample: critical
findings:
  description: What is wrong, worst first in the order of the checks.
  returned: always
  type: list
  elements: dict
  contains:
    gpu:
      description: NVML index of the GPU, or null for a node-wide finding.
      type: int
      returned: always
    code:
      description: What was found (see the module description).
      type: str
      returned: always
    severity:
      description: C(warning) or C(critical).
      type: str
      returned: always
    message:
      description: The finding in words.
      type: str
      returned: always
  sample:
    - gpu: 2
      code: gpu_lost
      severity: critical
      message: "GPU 2 is lost: it fell off the bus or stopped answering"
gpu_count:
  description: Number of GPUs NVML sees.
  returned: always
  type: int
  sample: 8
driver_loaded:
  description: Whether NVML could be used.
  returned: always
  type: bool
  sample: true
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.accelops.gpu.plugins.module_utils import _cdi, _health, _nvml
from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import (
    GpuFactsCollector,
    resolve_subsets,
)
from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shown, whole
from ansible_collections.accelops.gpu.plugins.module_utils._sysfs import check_sysfs_root


def main():
    module = AnsibleModule(
        argument_spec=dict(
            fail_on=dict(type="str", choices=["critical", "warning", "never"], default="critical"),
            expected_gpu_count=dict(type="raw"),
            sysfs_root=dict(type="path", default="/sys"),
            cdi_specs=dict(type="list", elements="path", default=["/etc/cdi/nvidia.yaml", "/var/run/cdi/nvidia.yaml"]),
            driver_root=dict(type="path", default="/"),
            proc_root=dict(type="path", default="/proc"),
        ),
        supports_check_mode=True,
    )
    given = module.params["expected_gpu_count"]
    expected = whole(given.strip(" ") if isinstance(given, str) else given)
    if given is not None and expected is None:
        module.fail_json(msg="expected_gpu_count must be a whole number, 0 or more (ASCII digits), got %s"
                         % shown(given))
    problem = check_sysfs_root(module.params["sysfs_root"])
    for path in module.params["cdi_specs"]:
        if problem is None and _cdi.check_path(path):
            problem = "cdi_specs: " + _cdi.check_path(path)[len("path: "):]
    for name in ("driver_root", "proc_root"):
        problem = problem or _cdi.check_root(name, module.params[name])
    if problem:
        module.fail_json(msg=problem)
    specs = [os.path.normpath(path) for path in module.params["cdi_specs"]]

    if not _nvml.HAS_PYNVML:
        if not module.check_mode:
            module.fail_json(msg=_nvml.MISSING_LIB_HINT)
        # In check mode an earlier role of the same run may be what installs nvidia-ml-py.
        module.warn("check mode: %s; GPU health cannot be judged" % _nvml.MISSING_LIB_HINT)
        module.exit_json(changed=False, verdict="unknown", findings=[], gpu_count=0, driver_loaded=False)
    host = _cdi.Host(module.params["driver_root"], None, module.params["sysfs_root"], module.params["proc_root"])
    with _nvml.NvmlSession() as session:
        facts = GpuFactsCollector(session, resolve_subsets(["health"]), module.params["sysfs_root"]).collect()
        # The specs only where NVML answers: without it the findings above already say why nothing can be judged.
        cdi = _cdi.health_findings(specs, session, host) if facts["driver_loaded"] else []
    result = _health.assess_node(facts, expected)
    if cdi:
        result = dict(findings=result["findings"] + cdi,
                      status=result["status"] if _health.at_least(result["status"], "warning") else "warning")
    report = dict(changed=False, verdict=result["status"], findings=result["findings"],
                  gpu_count=facts["gpu_count"], driver_loaded=facts["driver_loaded"])
    if _health.at_least(result["status"], module.params["fail_on"]):
        messages = "; ".join(f["message"] for f in result["findings"])
        module.fail_json(msg="GPU health is %s: %s" % (result["status"], messages), **report)
    module.exit_json(**report)


if __name__ == "__main__":
    main()
