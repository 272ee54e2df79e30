# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._slurm_foreign_scripts; its code is in plugin_utils/_slurm_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _slurm_foreign_scripts
short_description: "Internal: slurm.conf's script settings that the slurm role would replace (no compatibility promise)"
version_added: 0.1.0
description:
  - Reads a slurm.conf (its text, or node_probe's read of it with base64 C(content)) and gives each C(Prolog),
    C(Epilog) and C(PrologFlags) setting, and each of a site's C(PrologSlurmctld), C(EpilogSlurmctld),
    C(TaskProlog), C(TaskEpilog), C(SrunProlog), C(SrunEpilog), C(HealthCheckProgram), C(HealthCheckInterval) and
    C(HealthCheckNodeState) (keys in any case, as Slurm reads them) whose value differs from the one the role
    writes, as C(KEY=VALUE), and each C(Include) directive, as C(Include PATH) (the file it names may hold any of
    them; the role's slurm.conf has none).
  - The slurm role writes slurm.conf whole, with the prolog and epilog directories in the first three and the
    site's C(slurm_site_scripts) in the others; a site's own script named in a slurm.conf written by hand would
    silently stop running, so the role refuses instead.
  - >-
    A slurm.conf that carries the line
    C(# Written whole by accelops.gpu.slurm: a site's scripts come from slurm_site_scripts.) on a line of its own
    was written by the role with the site's settings of its C(slurm_site_scripts); only its C(Prolog), C(Epilog),
    C(PrologFlags) and C(Include) are looked at, so that a changed C(slurm_site_scripts) rewrites the others.
  - A file that does not exist has none. A read without its text (a link, a directory, a file too large or that
    could not be read) is an error, as it may hold any script.
positional: _input, wanted
options:
  _input:
    description: The slurm.conf, as text or as node_probe's read of it.
    type: raw
    required: true
  wanted:
    description: >-
      The settings the role writes, a dict of each KEY and its VALUE (C(HealthCheckNodeState) is compared in any
      case, as Slurm reads it).
    type: dict
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read slurm.conf
  ansible.builtin.slurp:
    src: /etc/slurm/slurm.conf
  register: slurm_conf

# ["Prolog=/usr/local/sbin/site-prolog"]
- name: Refuse to drop the site's own prolog
  ansible.builtin.assert:
    that: slurm_conf.content | b64decode | accelops.gpu._slurm_foreign_scripts(wanted) | length == 0
  vars:
    wanted: {Prolog: "/etc/slurm/prolog.d/*", Epilog: "/etc/slurm/epilog.d/*", PrologFlags: Alloc}
"""

RETURN = r"""
_value:
  description: >-
    The settings that differ, each C(KEY=VALUE) as the file gives it (the value cut at 200 characters), and each
    C(Include PATH).
  type: list
  elements: str
"""


def _slurm_foreign_scripts(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import (
        slurm_foreign_scripts as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_slurm_foreign_scripts": _slurm_foreign_scripts}
