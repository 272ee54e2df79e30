# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._kubernetes_gpu_pods; its code is in plugin_utils/_kubernetes_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _kubernetes_gpu_pods
short_description: "Internal: the pods that hold a GPU, from kubectl get pods (no compatibility promise)"
version_added: 0.1.0
description:
  - Each pod that has not ended (phase neither C(Succeeded) nor C(Failed)) and whose containers ask for an
    C(nvidia.com/) resource (a GPU, a MIG device, a shared GPU), as C(<namespace>/<name> (<resource>=<amount>, ...)).
  - The amount is the whole pod's, as the scheduler counts it - its containers and sidecars added up, or one init
    container's where that one asks for more.
  - Pods of a DaemonSet are left out, as C(kubectl drain) leaves them; their work on the GPUs is seen through NVML.
  - Text that is not C(kubectl get pods --output json) is refused.
positional: _input
options:
  _input:
    description: What C(kubectl get pods --output json) printed (its text or the parsed List).
    type: raw
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the pods of the node gpu01 from Kubernetes
  ansible.builtin.command: kubectl get pods --all-namespaces --field-selector spec.nodeName=gpu01 --output json
  register: pods
  changed_when: false

# ["ml/train-7f9c (nvidia.com/gpu=2)"]
- name: The pods that hold the node's GPUs
  ansible.builtin.debug:
    msg: "{{ pods.stdout | accelops.gpu._kubernetes_gpu_pods }}"
"""

RETURN = r"""
_value:
  description: One line per pod that holds a GPU.
  type: list
  elements: str
"""


def _kubernetes_gpu_pods(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._kubernetes_filters import (
        _kubernetes_gpu_pods as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_kubernetes_gpu_pods": _kubernetes_gpu_pods}
