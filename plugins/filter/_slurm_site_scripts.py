# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._slurm_site_scripts; its code is in plugin_utils/_slurm_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _slurm_site_scripts
short_description: "Internal: the slurm role's slurm_site_scripts checked, as slurm.conf's settings (no compatibility
  promise)"
version_added: 0.1.0
description:
  - Checks C(slurm_site_scripts), the site's own script settings that the slurm role writes into slurm.conf beside
    its C(Prolog), C(Epilog) and C(PrologFlags) (slurm.conf is written whole, so these are the way to keep them).
  - Keys are taken in any case, as Slurm reads them, and given back in Slurm's spelling. C(PrologSlurmctld),
    C(EpilogSlurmctld), C(TaskProlog), C(TaskEpilog), C(SrunProlog), C(SrunEpilog) and C(HealthCheckProgram) are
    absolute paths with no white space, quote, C(#), backslash or control character (Slurm's parser reads those
    otherwise). C(HealthCheckInterval) is seconds from 0 to 65535 (a bool is refused), C(HealthCheckNodeState) one
    or more of C(ALLOC), C(ANY), C(CYCLE), C(IDLE), C(MIXED) and C(NONDRAINED_IDLE) joined by commas.
  - C(HealthCheckProgram) needs C(HealthCheckInterval) of at least 1, and C(HealthCheckInterval) or
    C(HealthCheckNodeState) needs C(HealthCheckProgram), since Slurm does nothing with one alone.
  - Never fails on a bad value; every problem is given back, each naming C(slurm_site_scripts.KEY) and what it may
    be. The caller refuses the whole when there is one.
positional: _input
options:
  _input:
    description: The value of C(slurm_site_scripts), a dict of setting and value (null is none).
    type: raw
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
# {"settings": {"HealthCheckInterval": "300", "HealthCheckNodeState": "IDLE,CYCLE",
#               "HealthCheckProgram": "/usr/sbin/nhc", "TaskProlog": "/usr/local/sbin/task-prolog"},
#  "problems": []}
- name: Check the site's scripts
  ansible.builtin.assert:
    that: (slurm_site_scripts | accelops.gpu._slurm_site_scripts).problems | length == 0
  vars:
    slurm_site_scripts:
      taskprolog: /usr/local/sbin/task-prolog
      HealthCheckProgram: /usr/sbin/nhc
      HealthCheckInterval: 300
      HealthCheckNodeState: idle,cycle
"""

RETURN = r"""
_value:
  description: The settings and the problems.
  type: dict
  contains:
    settings:
      description: >-
        Each setting that passed, in Slurm's spelling, with its value as slurm.conf writes it (text). Where
        problems is not empty, the ones that passed alone.
      type: dict
    problems:
      description: >-
        What is wrong, one message per problem (the first ten, then one that counts the others); empty when
        the whole may be written.
      type: list
      elements: str
"""


def _slurm_site_scripts(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import (
        slurm_site_scripts as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_slurm_site_scripts": _slurm_site_scripts}
