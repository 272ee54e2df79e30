#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_facts
short_description: Gather NVIDIA GPU facts through NVML
version_added: 0.1.0
description:
  - Sets C(ansible_facts.nvidia) from the NVIDIA Management Library (NVML) through nvidia-ml-py, in one NVML session
    and without running any command.
  - Also lists the NVIDIA devices on the PCI bus from sysfs, which works before any driver is installed.
  - Never fails because the host has no GPU, no driver, a driver that is not loaded, or no nvidia-ml-py; it reports
    C(pynvml_available), C(nvml_available), C(driver_loaded) and C(reason) (which says what to install) instead,
    with the PCI devices, so that playbooks can branch and check mode works on a host not yet set up.
  - A lost GPU gives degraded facts for that GPU and a critical health finding.
options:
  gather_subset:
    description:
      - What to gather. C(all) gathers everything; a name prefixed with C(!) is left out.
      - C(basic) (index, name, UUID, PCI bus id, architecture, compute capability, serial, VBIOS) is always gathered.
      - C(health) also gathers C(ecc), C(thermal), C(clocks), C(nvlink) and C(pcie), which it judges.
    type: list
    elements: str
    default: [all]
  sysfs_root:
    description:
      - Where sysfs is mounted, for the PCI scan. Point it at another tree for image builds in a chroot or for tests.
    type: path
    default: /sys
  set_facts:
    description:
      - Set C(ansible_facts.nvidia) (true), or return the facts as C(nvidia) in the module's result and leave
        C(ansible_facts) as they were (false).
      - Use false, with C(register), where a task reads a subset of the facts for a decision of its own, so that the
        tasks and plays after it do not see a narrower C(ansible_facts.nvidia) than the one they had (a report or a
        health gate would find the facts of the subsets left out missing).
    type: bool
    default: true
    version_added: 0.1.0
extends_documentation_fragment:
  - accelops.gpu.attributes
  - accelops.gpu.attributes.sysfs_group
  - accelops.gpu.attributes.facts
  - accelops.gpu.attributes.nvml
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
- name: Gather GPU facts
  accelops.gpu.gpu_facts:

- name: Show each GPU
  ansible.builtin.debug:
    msg: "{{ item.index }}: {{ item.name }} {{ item.memory_total_mib }} MiB"
  loop: "{{ ansible_facts.nvidia.gpus }}"

- name: Gather only what a scheduler needs, without processes or topology
  accelops.gpu.gpu_facts:
    gather_subset: [basic, memory, mig]

- name: Read the GPU processes for a decision of this play, leaving ansible_facts.nvidia as it was
  accelops.gpu.gpu_facts:
    gather_subset: [basic, processes]
    set_facts: false
  register: gpu_read

- name: Say how many GPUs run processes
  ansible.builtin.debug:
    msg: "{{ gpu_read.nvidia.gpus | selectattr('processes') | list | length }} GPUs run processes"

- name: Stop when the driver is not loaded
  ansible.builtin.assert:
    that: ansible_facts.nvidia.driver_loaded
    fail_msg: "The driver is not loaded: {{ ansible_facts.nvidia.reason }}"

- name: Choose open kernel modules from the PCI bus, before any driver is installed
  ansible.builtin.set_fact:
    use_open_modules: >-
      {{ ansible_facts.nvidia.pci_devices | selectattr('kind', 'equalto', 'gpu')
         | map(attribute='open_kernel_modules') | reject('equalto', 'supported') | reject('equalto', 'required')
         | list | length == 0 }}
"""

RETURN = r"""
nvidia:
  description: With O(set_facts=false), the same facts as RV(ansible_facts.nvidia) (in the result, not set as facts).
  returned: when O(set_facts=false)
  type: dict
  sample: {"driver_loaded": true, "gpu_count": 8, "gpus": []}
ansible_facts:
  description: GPU facts, under the key C(nvidia).
  returned: unless O(set_facts=false)
  type: complex
  contains:
    nvidia:
      description: What NVML and the PCI bus report. Any value NVML does not support on a GPU is null.
      returned: always
      type: dict
      contains:
        pynvml_available:
          description: Whether nvidia-ml-py (C(pynvml)) could be imported on the managed host.
          type: bool
          returned: always
          sample: true
        nvml_available:
          description: Whether C(libnvidia-ml.so.1) could be loaded.
          type: bool
          returned: always
          sample: true
        driver_loaded:
          description: Whether NVML initialised, i.e. the kernel driver is loaded and answers.
          type: bool
          returned: always
          sample: true
        reason:
          description: Why NVML is not usable, and what to install where that helps; null when it is usable.
          type: str
          returned: always
          sample: the NVIDIA kernel driver is not loaded (libnvidia-ml.so.1 is present)
        driver_mismatch:
          description:
            - After a driver change without a reboot NVML refuses to start (driver/library version mismatch, NVML
              error 18); then the release of the loaded kernel module (C(loaded), from the module's sysfs version or
              C(/proc/driver/nvidia/version)) and of the installed NVML library (C(library), from its file name),
              each null where it cannot be read. Null otherwise.
          type: dict
          returned: always
          sample: {"loaded": "550.54.15", "library": "550.127.08"}
        driver_version:
          description: Driver version.
          type: str
          returned: always
          sample: 550.54.15
        cuda_driver_version:
          description: Newest CUDA version the driver supports, as major.minor.
          type: str
          returned: always
          sample: "12.4"
        nvml_version:
          description: NVML library version.
          type: str
          returned: always
          sample: 12.550.54.15
        gpu_count:
          description: Number of GPUs NVML sees (lost ones included); null when NVML cannot count them (never 0
            then), with the reason in RV(ansible_facts.nvidia.reason).
          type: int
          returned: always
          sample: 8
        errors:
          description: NVML errors other than "not supported" while the system values were read (driver, NVML and
            CUDA versions, the count); each as the function, its message and the NVML error number. The health
            verdict reports them.
          type: list
          elements: str
          returned: always
          sample: []
        gpus:
          description:
            - One entry per GPU, by NVML index. Keys of subsets that were not gathered are absent.
            - C(basic) index, name, uuid, serial, pci_bus_id, architecture (C(volta), C(ampere), C(hopper), ...),
              compute_capability, vbios_version, board_part_number, minor_number, lost.
            - C(state) persistence_mode, compute_mode (C(default), C(exclusive_process), C(prohibited)).
            - C(memory) memory_total_mib, memory_used_mib, memory_free_mib.
            - C(thermal) temperature_c, temperature_slowdown_c, temperature_shutdown_c, fan_speed_pct.
            - C(power) power_draw_w, power_limit_w, power_limit_enforced_w, power_limit_default_w, power_limit_min_w,
              power_limit_max_w, energy_mj (energy since the driver loaded, in millijoules; Volta and later).
            - C(utilization) utilization_gpu_pct, utilization_memory_pct.
            - C(ecc) ecc_enabled, ecc_pending, ecc_errors (volatile and aggregate, corrected and uncorrected),
              remapped_rows (correctable, uncorrectable, pending, failure), retired_pages_pending.
            - C(clocks) clocks_mhz, clocks_event_reasons.
            - C(pcie) pcie (gen_current, gen_max, width_current, width_max).
            - C(nvlink) nvlinks, per link index, active, remote_pci_bus_id, remote_type (C(gpu), C(switch)).
            - C(mig) mig_mode, mig_mode_pending, mig_devices (index, uuid, name, profile, gpu_instance_id,
              compute_instance_id, memory_total_mib, memory_used_mib).
            - C(processes) processes (pid, name, used_memory_mib).
            - C(topology) cpu_affinity, the CPUs near the GPU as NVML's C(nvmlDeviceGetCpuAffinity) gives them (the
              set Slurm's C(AutoDetect=nvml) binds the GPU to), as a Linux cpulist such as C(0-55,112-167) with
              CPU numbers as the kernel gives them; null where NVML does not support it, fails, or names no CPU.
            - Always errors, the NVML errors other than "not supported" that left a value of this GPU null (the
              health verdict warns about them), and error where the GPU could not be read at all (critical).
          type: list
          elements: dict
          returned: always
          sample:
            - index: 0
              name: NVIDIA H100 80GB HBM3
              uuid: GPU-4a3c9e4f-2b8d-4c1e-9f7a-0d6b5e3a2c10
              pci_bus_id: "0000:18:00.0"
              architecture: hopper
              compute_capability: "9.0"
              memory_total_mib: 81559
              power_limit_w: 700.0
              persistence_mode: true
              cpu_affinity: 0-55,112-167
              lost: false
        topology:
          description:
            - GPU by GPU matrix (rows and columns in NVML index order) with the labels of C(nvidia-smi topo -m),
              C(X) (self), C(NV<n>) (n NVLinks), C(PIX), C(PXB), C(PHB), C(NODE), C(SYS).
            - Null when not gathered or no GPU answers.
          type: list
          elements: list
          returned: always
          sample: [["X", "NV18"], ["NV18", "X"]]
        pci_devices:
          description:
            - NVIDIA functions on the PCI bus from sysfs, present even without a driver.
            - Null when the C(pci) subset was not gathered, or when the PCI devices cannot be listed (C(errors) says
              why), as an unreadable bus is not an empty one.
            - Each has pci_bus_id, vendor_id, device_id, class, kind (C(gpu), C(nvswitch), C(audio), C(usb),
              C(other), C(unknown) when its class cannot be read), architecture, open_kernel_modules (C(required),
              C(supported), C(unsupported)), driver and numa_node.
          type: list
          elements: dict
          returned: always
          sample:
            - pci_bus_id: "0000:18:00.0"
              device_id: "0x2330"
              kind: gpu
              architecture: hopper
              open_kernel_modules: supported
              driver: nvidia
        health:
          description:
            - Overall C(status) (C(ok), C(warning), C(critical)) and C(findings) (gpu, code, severity, message).
          type: dict
          returned: always
          sample: {"status": "ok", "findings": []}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.accelops.gpu.plugins.module_utils import _nvml
from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import (
    GpuFactsCollector,
    check_subsets,
    resolve_subsets,
)
from ansible_collections.accelops.gpu.plugins.module_utils._sysfs import check_sysfs_root


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gather_subset=dict(type="list", elements="str", default=["all"]),
            sysfs_root=dict(type="path", default="/sys"),
            set_facts=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    problem = check_subsets(module.params["gather_subset"]) or check_sysfs_root(module.params["sysfs_root"])
    if problem:
        module.fail_json(msg=problem)
    with _nvml.NvmlSession() as session:
        collector = GpuFactsCollector(session, resolve_subsets(module.params["gather_subset"]),
                                      module.params["sysfs_root"])
        facts = collector.collect()
    if module.params["set_facts"]:
        module.exit_json(changed=False, ansible_facts={"nvidia": facts})
    module.exit_json(changed=False, nvidia=facts)


if __name__ == "__main__":
    main()
