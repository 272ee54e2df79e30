# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._kubernetes_maintenance; its code is in plugin_utils/_kubernetes_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _kubernetes_maintenance
short_description: "Internal: how to cordon one Kubernetes node for maintenance, and how to give it back (no
  compatibility promise)"
version_added: 0.1.0
description:
  - Reads C(kubectl get nodes --output json) and says which C(kubectl) commands cordon the node for maintenance
    (O(action=cordon)) or uncordon it afterwards (O(action=uncordon)), or that none is needed.
  - O(action=cordon) writes the annotation C(accelops.gpu/maintenance) with the reason first, then cordons, so that a
    node is never cordoned without the mark. A node that the health check cordoned (C(accelops.gpu/health)) is taken
    over; a node that anyone else cordoned stays theirs, and so does a node held by another maintenance (a mark that
    does not start with O(scope)).
  - O(action=uncordon) uncordons the node, then removes the mark, only when this maintenance holds it.
  - A node that Kubernetes does not know, an unknown action or a cordon without a reason is refused.
positional: _input, node, action, reason
options:
  _input:
    description: What C(kubectl get nodes --output json) printed (its text or the parsed List).
    type: raw
    required: true
  node:
    description: The node's name in Kubernetes.
    type: str
    required: true
  action:
    description: C(cordon) or C(uncordon).
    type: str
    choices: [cordon, uncordon]
    required: true
  reason:
    description: Why the node is taken out (one printable line of at most 200 characters); required for C(cordon).
    type: str
  scope:
    description: How this maintenance's reasons start, such as C(driver upgrade); O(reason) must start with it.
    type: str
    default: ""
  kubectl:
    description: kubectl's path on the host that runs it (one line).
    type: str
    default: kubectl
  kubeconfig:
    description: The kubeconfig's path there, empty for kubectl's own choice (one line).
    type: str
    default: ""
seealso:
  - plugin: accelops.gpu._kubernetes_health_actions
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the node gpu01 from Kubernetes
  ansible.builtin.command: kubectl get nodes --field-selector metadata.name=gpu01 --output json
  register: nodes
  changed_when: false

# {"node": "gpu01", "holder": "none", "unschedulable": false, "mark": null,
#  "argvs": [["kubectl", "annotate", "--overwrite", "node", "gpu01", "accelops.gpu/maintenance=driver upgrade"],
#            ["kubectl", "cordon", "gpu01"]]}
- name: Cordon the node for its driver upgrade
  ansible.builtin.command:
    argv: "{{ item }}"
  loop: "{{ (nodes.stdout | accelops.gpu._kubernetes_maintenance('gpu01', 'cordon', 'driver upgrade')).argvs }}"
"""

RETURN = r"""
_value:
  description:
    - C(node); C(holder), who had cordoned the node (C(none), C(maintenance), C(health) or C(other)); C(unschedulable);
      C(mark), the maintenance annotation found; C(argvs), the kubectl commands to run in order (empty when nothing
      is to be done).
  type: dict
"""


def _kubernetes_maintenance(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._kubernetes_filters import (
        _kubernetes_maintenance as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_kubernetes_maintenance": _kubernetes_maintenance}
