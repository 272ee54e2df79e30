# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._pip_unmet; its code is in plugin_utils/_probe_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _pip_unmet
short_description: "Internal: the requirements that a Python environment read by node_probe does not meet yet (no
  compatibility promise)"
version_added: 0.1.0
description:
  - Gives the requirements, in the order given, that the distributions installed in an environment are not known to
    meet. An empty list means that each requirement itself is installed, so a converged environment needs no pip
    run (pip lists the whole environment on every run, seconds each time). The requirements' own dependencies are
    not read; a framework's validation is what proves that its environment works.
  - >-
    Reads the environment's C(*.dist-info) directories as the C(globs) of M(accelops.gpu.node_probe) give them: those
    of the one Python the environment runs (C(lib/python3.11/site-packages)), not those another Python left.
  - >-
    Judges a project name alone (installed at any version) and a name pinned with C(==) to one version (without a
    local label it also matches the installed version's local build, as pip does; C(torch==2.13.0) is met by
    C(2.13.0+cpu)). Any other requirement (another specifier, extras, markers, a URL or a path) is given back as
    unmet, so pip decides it.
options:
  _input:
    description: The requirements, as M(ansible.builtin.pip) takes them in its C(name).
    type: list
    elements: str
    required: true
  dist_infos:
    description: The paths of the environment's C(*.dist-info) directories.
    type: list
    elements: str
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the environment
  accelops.gpu.node_probe:
    globs: [/opt/app/venv/lib/python3.11/site-packages/*.dist-info]
  register: state

- name: Install the requirements only where the environment lacks one
  ansible.builtin.pip:
    name: [nvidia-ml-py==13.580.82]
    virtualenv: /opt/app/venv
  when: >-
    ['nvidia-ml-py==13.580.82']
    | accelops.gpu._pip_unmet(state.globs['/opt/app/venv/lib/python3.11/site-packages/*.dist-info'])
    | length > 0
"""

RETURN = r"""
_value:
  description: The requirements that pip would have to install or move, or that this filter cannot judge.
  type: list
  elements: str
"""


def _pip_unmet(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._probe_filters import pip_unmet as implementation

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_pip_unmet": _pip_unmet}
