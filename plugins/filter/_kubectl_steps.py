# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._kubectl_steps; its code is in plugin_utils/_kubernetes_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _kubectl_steps
short_description: "Internal: the kubectl commands of the health check's actions (no compatibility promise)"
version_added: 0.1.0
description:
  - One step per kubectl command, in order, for the actions of P(accelops.gpu._kubernetes_health_actions#filter).
  - A cordon writes the mark (the annotation C(accelops.gpu/health)) first and then cordons, so that a node is never
    cordoned without it; giving a node back uncordons it and then removes the mark.
  - An action C(missing) is kept with no command (C(argv) null).
positional: _input, kubectl, kubeconfig
options:
  _input:
    description: The actions.
    type: list
    elements: dict
    required: true
  kubectl:
    description: kubectl's path on the host that runs it (one line).
    type: str
    default: kubectl
  kubeconfig:
    description: The kubeconfig's path there, empty for kubectl's own choice (one line).
    type: str
    default: ""
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
# [{"node": "gpu01", "action": "cordon", "reason": "...",
#   "argv": ["kubectl", "annotate", "--overwrite", "node", "gpu01", "accelops.gpu/health=..."]},
#  {"node": "gpu01", "action": "cordon", "reason": "...", "argv": ["kubectl", "cordon", "gpu01"]}]
- name: The commands
  ansible.builtin.debug:
    msg: "{{ actions | accelops.gpu._kubectl_steps }}"
  vars:
    actions: [{node: gpu01, action: cordon, reason: "GPU 3 is lost: it fell off the bus or stopped answering"}]
"""

RETURN = r"""
_value:
  description: The steps, each a dict with C(node), C(action), C(reason) and C(argv) (kubectl's arguments, or null).
  type: list
  elements: dict
"""


def _kubectl_steps(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._kubernetes_filters import (
        _kubectl_steps as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_kubectl_steps": _kubectl_steps}
