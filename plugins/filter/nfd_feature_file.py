# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.nfd_feature_file; its code is in plugin_utils/_kubernetes_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: nfd_feature_file
short_description: Node Feature Discovery's feature file for a set of node labels
version_added: 0.1.0
description:
  - Writes node labels, such as those of P(accelops.gpu.gpu_feature_labels#filter), as the text of a feature file
    for the C(local) source of Kubernetes Node Feature Discovery (NFD), which reads every file of
    C(/etc/kubernetes/node-feature-discovery/features.d/) on the node and sets the labels it finds there.
  - One C(name=value) line per label, sorted by name, each ending in a newline; an empty value is written as
    C(name=) (NFD would read a name alone as C(true)). Nothing else, so the text is the same for the same labels
    at every run; no C(ansible_managed) comment.
  - With O(expiry), first a C(# +expiry-time=) directive, after which NFD drops the labels at its next discovery,
    so that a node whose file is no longer rewritten loses them.
  - Fails for a label that Kubernetes or NFD would refuse (a name without a C(<prefix>/), a name or value longer
    than 63 characters or not beginning and ending with a letter or digit, a C(kubernetes.io) namespace other
    than NFD's own), a value that is not text or a whole number, and text larger than the 64 KiB NFD reads.
positional: _input, expiry
options:
  _input:
    description: Label name to value (text, or a whole number written as one).
    type: dict
    required: true
  expiry:
    description: A time in RFC 3339 (C(2026-07-01T00:00:00Z)) from which NFD no longer sets the labels; null for
      none.
    type: str
seealso:
  - plugin: accelops.gpu.gpu_feature_labels
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read what the labels are made from, leaving ansible_facts.nvidia as it was
  accelops.gpu.gpu_facts:
    gather_subset: [basic, memory, mig, pci]
    set_facts: false
  register: gpu_read

- name: Make NFD's feature directory
  ansible.builtin.file:
    path: /etc/kubernetes/node-feature-discovery/features.d
    state: directory
    mode: "0755"

# nvidia.com/cuda.driver-version.full=550.54.15
# ...
# nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3
- name: Write GPU Feature Discovery's labels for NFD
  ansible.builtin.copy:
    dest: /etc/kubernetes/node-feature-discovery/features.d/accelops-gpu
    content: "{{ gpu_read | accelops.gpu.gpu_feature_labels('single') | accelops.gpu.nfd_feature_file }}"
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The text of the feature file; empty for no label and no O(expiry).
  type: str
  sample: "nvidia.com/gpu.count=8\nnvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3\n"
"""


def nfd_feature_file(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._kubernetes_filters import (
        nfd_feature_file as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"nfd_feature_file": nfd_feature_file}
