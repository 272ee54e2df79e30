# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._spark_discovery_problems; its code is in plugin_utils/_spark_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _spark_discovery_problems
short_description: "Internal: what keeps a Spark worker from offering its GPUs (no compatibility promise)"
version_added: 0.1.0
description:
  - >-
    Reads the run of a worker's GPU discovery script (the result of a command task) as Spark will read the script at
    the worker's start, one JSON object with the C(name) C(gpu) and its C(addresses), each a text and none twice.
  - >-
    One line when the script failed (its own message on stderr, else its output, else its exit status), listed no
    address, or printed anything else; an empty list when Spark gets at least one GPU. Used by the
    P(accelops.gpu.spark#role) role before it writes the worker's configuration.
positional: _input
options:
  _input:
    description: The command's result, with C(rc), C(stdout) and C(stderr).
    type: dict
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Say that the script printed no GPU list (one line)
  ansible.builtin.debug:
    msg: "{{ {'rc': 0, 'stdout': '{\"name\": \"gpu\"}', 'stderr': ''} | accelops.gpu._spark_discovery_problems }}"
"""

RETURN = r"""
_value:
  description: One line when the worker offers no GPU Spark could use; empty when it offers at least one.
  type: list
  elements: str
"""


def _spark_discovery_problems(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._spark_filters import (
        spark_discovery_problems as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_spark_discovery_problems": _spark_discovery_problems}
