# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._spark_problems; its code is in plugin_utils/_spark_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _spark_problems
short_description: "Internal: what is wrong with the spark role's variables (no compatibility promise)"
version_added: 0.1.0
description:
  - One line per problem with the variables of the P(accelops.gpu.spark#role) role, each naming the variable, what it
    must be and what it is; the secret itself is never shown.
  - >-
    The master group must hold one host, the worker group at least one; GPU amounts must be numbers Spark takes (an
    executor's a whole number of 1 or more, a task's a whole number up to the executor's or a fraction of at most
    0.5); the ports must differ; the shared secret must be set; the bind address must be a host name or an IPv4
    address other than 0.0.0.0; the Java runtime must be a Debian package's name; the index one URL.
  - An empty list when all is well.
positional: _input
options:
  _input:
    description:
      - The role's variables, C(spark_*), by name, and C(masters) and C(workers), the hosts of C(spark_master_group)
        and C(spark_worker_group).
    type: dict
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Say what is wrong with a negative GPU amount and a missing secret (two lines)
  ansible.builtin.debug:
    msg: "{{ problems }}"
  vars:
    problems: >-
      {{ {'spark_version': '4.3.0', 'masters': ['spark01'], 'spark_master_group': 'spark_masters',
          'workers': ['gpu01'], 'spark_worker_group': 'gpu_nodes',
          'spark_executor_gpus': -1, 'spark_task_gpus': 1, 'spark_gpu_mig': 'devices', 'spark_gpu_exclude': [],
          'spark_worker_cores': '', 'spark_worker_memory': '', 'spark_master_port': 7077,
          'spark_master_webui_port': 8080, 'spark_worker_port': 7078, 'spark_worker_webui_port': 8081,
          'spark_auth_secret': '', 'spark_bind_address': '127.0.0.1', 'spark_java_package': 'openjdk-17-jre-headless',
          'spark_index_url': 'https://pypi.org/simple'} | accelops.gpu._spark_problems }}
"""

RETURN = r"""
_value:
  description: One line per problem, naming the variable; empty when all is well.
  type: list
  elements: str
"""


def _spark_problems(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._spark_filters import (
        spark_problems as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_spark_problems": _spark_problems}
