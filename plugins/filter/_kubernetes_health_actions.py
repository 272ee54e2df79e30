# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._kubernetes_health_actions; its code is in plugin_utils/_kubernetes_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _kubernetes_health_actions
short_description: "Internal: which GPU nodes to cordon and which to give back after a GPU health check
  (no compatibility promise)"
version_added: 0.1.0
description:
  - Reads C(kubectl get nodes --output json) and the verdicts of M(accelops.gpu.gpu_health), one per node, for the
    C(accelops.gpu.kubernetes_health) playbook.
  - A schedulable node whose verdict reaches O(cordon_on) is cordoned, with its findings that reach it (worst first,
    in one printable line) as the annotation C(accelops.gpu/health), the mark that this check cordoned it; a node
    it cordoned gets the new findings when they changed. A node cordoned by anyone else (no mark) is left alone.
  - A node with the mark whose verdict is below O(cordon_on) is uncordoned and unmarked (only unmarked when someone
    else uncordoned it already).
  - A node without a verdict or with the verdict C(unknown) is left as it is; a judged node that Kubernetes does
    not know is the action C(missing).
  - Node names must be Kubernetes node names, each node once; other input is refused.
positional: _input, verdicts, cordon_on
options:
  _input:
    description: What C(kubectl get nodes --output json) printed (its text or the parsed list).
    type: raw
    required: true
  verdicts:
    description: One dict per node, with C(name) (the node's name in Kubernetes), C(verdict) and C(findings) as
      M(accelops.gpu.gpu_health) returns them.
    type: list
    elements: dict
    required: true
  cordon_on:
    description: The verdict from which a node is cordoned.
    type: str
    choices: [critical, warning]
    default: critical
seealso:
  - module: accelops.gpu.gpu_health
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Check the GPUs' health
  accelops.gpu.gpu_health:
    fail_on: never
  register: health

- name: Read the nodes from Kubernetes
  ansible.builtin.command: kubectl get nodes --output json
  register: nodes
  changed_when: false

# [{"node": "gpu01", "action": "cordon", "reason": "GPU 3 is lost: it fell off the bus or stopped answering"}]
- name: What to do
  ansible.builtin.debug:
    msg: "{{ nodes.stdout | accelops.gpu._kubernetes_health_actions(verdicts) }}"
  vars:
    verdicts: "{{ [{'name': inventory_hostname_short, 'verdict': health.verdict, 'findings': health.findings}] }}"
"""

RETURN = r"""
_value:
  description: The actions, each a dict with C(node), C(action) (C(cordon), C(annotate), C(uncordon), C(unmark) or
    C(missing)) and C(reason) (null but for C(cordon) and C(annotate)).
  type: list
  elements: dict
"""


def _kubernetes_health_actions(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._kubernetes_filters import (
        _kubernetes_health_actions as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_kubernetes_health_actions": _kubernetes_health_actions}
