# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.torch_cuda_channel; its code is in plugin_utils/_cuda_compat_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: torch_cuda_channel
short_description: The PyTorch wheel channel (cu124, ...) for a CUDA version
version_added: 0.1.0
description:
  - Gives the PyTorch wheel channel, the last part of C(https://download.pytorch.org/whl/<channel>), to install
    for a CUDA version, from pytorch.org's previous-versions page and the release compatibility matrix in
    PyTorch's RELEASE.md, for torch 2.1 to 2.13 on Linux x86_64.
  - A C(cuXYZ) wheel brings its own CUDA runtime and needs a driver that supports CUDA X.YZ, so the answer is the
    newest channel not newer than the CUDA given; CUDA 12.8 with torch 2.5 gives C(cu124). Pass the CUDA the
    driver supports, for example from P(accelops.gpu.cuda_max_for_driver#filter).
  - With O(torch), only that release's channels count; patch releases share their minor release's channels.
    Without it, every channel in the table counts.
  - Where no channel is that old, O(compat=minor) takes the nearest newer channel of the same CUDA major, as
    PyTorch's wheels bring their own CUDA runtime, which runs on any driver of its CUDA major through CUDA minor
    version compatibility (NVIDIA's CUDA compatibility guide; PTX newer than the driver cannot be JIT-compiled
    then). CUDA 12.4 (driver 550) with torch 2.13 gives C(cu126) this way, and no channel with O(compat=toolkit);
    CUDA 13.0 with torch 2.13 gives C(cu130) either way.
  - With O(exact=true), only the channel of exactly that CUDA C(major.minor) is accepted.
  - With O(gpus) (and O(torch)), only the channels whose wheels carry code for every one of the node's GPUs count
    (the SM architectures of each channel's wheels, see P(accelops.gpu.gpu_support_problems#filter)); a V100 node
    whose driver runs CUDA 13.0 gets C(cu126) from torch 2.13, whose C(cu130) wheels carry no Volta code.
  - Fails, naming the channels there are and the nearest one, when no channel fits, and for a torch release not
    in the table.
  - The CUDA given must be a release P(accelops.gpu.cuda_min_driver#filter) answers for, checked the same way; a
    CUDA newer than the table (unless O(min_drivers) names it) or one NVIDIA never published (C(12.7)) fails with
    the same message.
positional: _input, torch
options:
  _input:
    description: The CUDA version, C(major.minor) or C(major.minor.update). Quote it in YAML.
    type: str
    required: true
  torch:
    description: The torch version, such as C(2.5.1) (a local part like C(+cu124) is ignored).
    type: str
  exact:
    description: Accept only the channel of exactly this CUDA C(major.minor).
    type: bool
    default: false
  compat:
    description:
      - C(toolkit) accepts channels up to the CUDA given; C(minor) falls back to the nearest newer channel of
        the same CUDA major.
    type: str
    choices: [toolkit, minor]
    default: toolkit
  gpus:
    description:
      - The node's GPUs, as C(ansible_facts.nvidia.gpus) lists them (or architecture names, or compute
        capabilities such as C(9.0)). Only channels that carry code for every one of them count.
    type: list
    elements: raw
  min_drivers:
    description:
      - The minimum Linux driver of CUDA releases newer than the table, as NVIDIA publishes them (CUDA Toolkit release
        notes, table "CUDA Toolkit and Corresponding Driver Versions"), keyed by release. A key C(major.minor) is the
        GA release, C(major.minor.N) Update N; for example the key C(13.4) with the value C(615.20.01). Quote the
        releases and the drivers in YAML (C(615.20) unquoted reads as C(615.2), C(13.10) as C(13.1)).
      - It may name a release the table knows only with the table's driver, and no release NVIDIA never published
        (C(12.7)); a newer release never needs an older driver.
    type: dict
    default: {}
seealso:
  - plugin: accelops.gpu.cuda_max_for_driver
    plugin_type: filter
  - plugin: accelops.gpu.gpu_support_problems
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Gather GPU facts
  accelops.gpu.gpu_facts:

# "cu128" for torch 2.7.1 on a node whose driver supports CUDA 12.8 or 12.9
- name: Install torch from the channel that fits this node's driver
  ansible.builtin.pip:
    name: torch==2.7.1
    extra_args: >-
      --index-url https://download.pytorch.org/whl/{{ ansible_facts.nvidia.driver_version
      | accelops.gpu.cuda_max_for_driver | accelops.gpu.torch_cuda_channel(torch='2.7.1') }}

# "cu126": torch 2.13's CUDA 12 wheel on a driver 550 node (CUDA 12.4), through minor version compatibility
- name: Choose the channel as the accelops.gpu.pytorch role does
  ansible.builtin.debug:
    msg: "{{ '12.4' | accelops.gpu.torch_cuda_channel(torch='2.13.0', compat='minor') }}"

# ["cu124", "cu124"]: torch 2.5 has no cu128 wheel, so its newest below 12.8 (exact=true fails there, naming cu124)
- name: Show channels
  ansible.builtin.debug:
    msg:
      - "{{ '12.4' | accelops.gpu.torch_cuda_channel }}"
      - "{{ '12.8' | accelops.gpu.torch_cuda_channel(torch='2.5.1') }}"
"""

RETURN = r"""
_value:
  description: The channel name, such as C(cu124).
  type: str
"""


def torch_cuda_channel(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._cuda_compat_filters import (
        torch_cuda_channel as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"torch_cuda_channel": torch_cuda_channel}
