# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # Standard attributes documentation fragment for the collection's modules.
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  idempotent:
    description:
      - When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
      - This assumes that the system controlled/queried by the module has not changed in a relevant way.
"""

    FACTS = r"""
options: {}
attributes:
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
"""

    NVML = r"""
options: {}
requirements:
  - nvidia-ml-py (import name C(pynvml)) on the managed host; the C(accelops.gpu.nvml_python) role installs it
    without touching the distribution's Python.
  - The NVIDIA driver's C(libnvidia-ml.so.1) on the managed host for GPU data.
notes:
  - Talks to the GPU through NVML only; no subprocess such as C(nvidia-smi) is run.
"""

    SYSFS_GROUP = r"""
options: {}
attributes:
  action_group:
    description:
      - The module is in the action group C(accelops.gpu.sysfs), the collection's modules that read the node's sysfs
        and take O(sysfs_root). C(module_defaults) with C(group/accelops.gpu.sysfs) sets their O(sysfs_root) in one
        place.
    support: full
    membership:
      - accelops.gpu.sysfs
"""
