# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._spark_cluster_problems; its code is in plugin_utils/_spark_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _spark_cluster_problems
short_description: "Internal: what is wrong with a Spark cluster as its master shows it (no compatibility promise)"
version_added: 0.1.0
description:
  - >-
    Compares the JSON of a standalone master's web UI (C(/json/)) with the workers expected; each must be C(ALIVE)
    there, by host and port, offering exactly the GPU addresses its discovery script found.
  - One line per problem; an empty list when all is well. Used by the P(accelops.gpu.spark#role) role's verification.
positional: _input, workers
options:
  _input:
    description: The master's JSON.
    type: dict
    required: true
  workers:
    description: The workers expected, each C(host), C(port) and C(gpus) (the addresses).
    type: list
    elements: dict
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Say that a worker lacks a GPU (one line)
  ansible.builtin.debug:
    msg: "{{ state | accelops.gpu._spark_cluster_problems([{'host': '10.0.0.11', 'port': 7078, 'gpus': ['0', '1']}]) }}"
  vars:
    state:
      workers:
        - {host: 10.0.0.11, port: 7078, state: ALIVE, resources: {gpu: {name: gpu, addresses: ["0"]}}}
"""

RETURN = r"""
_value:
  description: One line per problem, naming the worker; empty when all is well.
  type: list
  elements: str
"""


def _spark_cluster_problems(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._spark_filters import (
        spark_cluster_problems as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_spark_cluster_problems": _spark_cluster_problems}
