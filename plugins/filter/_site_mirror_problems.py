# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._site_mirror_problems; its code is in plugin_utils/_site_mirror_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _site_mirror_problems
short_description: "Internal: what is wrong with site_mirror's variables and directories (no compatibility promise)"
version_added: 0.1.0
description:
  - One line per problem with the variables of the P(accelops.gpu.site_mirror#role) role, each naming the variable,
    what it must be and what it is. A path must be absolute and written the one way, a URL C(http://) or
    C(https://) without spaces, query or fragment, a list a list (a string is refused, not read as its letters),
    an extra package or wheel a name with a version constraint at most (nothing that reads as an option, a URL or
    a shell word).
  - Given what the builder holds below C(site_mirror_dir), also a line for each directory the copy must not write
    into. The copy replaces C(<site_mirror_dir>/cuda/repos/<distro>/x86_64) whole, so that directory and those
    above it must be real directories (a symbolic link could lead the copy outside C(site_mirror_dir)), and
    C(x86_64) must hold nothing but what a copy holds; the directory above C(site_mirror_dir) must exist.
  - An empty list when all is well.
  - Used by the P(accelops.gpu.site_mirror#role) role.
positional: _input
options:
  _input:
    description: The role's variables, C(site_mirror_*), by name.
    type: dict
    required: true
  files:
    description:
      - What M(accelops.gpu.node_probe) found (its C(files)) at each path the copy writes into and at the directory
        above C(site_mirror_dir). A path not given, or one the probe could not look at (below a file), is taken as
        absent. C(site_mirror_dir) and the directory above it may be symbolic links, the others may not. Without it
        only the variables are checked.
    type: dict
  listing:
    description: The paths in the C(x86_64) directories, hidden ones too (M(accelops.gpu.node_probe)'s C(globs)).
    type: list
    elements: str
    default: []
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Say what is wrong with a relative mirror directory and a short fingerprint (two lines)
  ansible.builtin.debug:
    msg: "{{ problems }}"
  vars:
    problems: >-
      {{ {'site_mirror_dir': 'mirror', 'site_mirror_gnupg_home': '/srv/keys/gnupg',
          'site_mirror_signing_key': '3BF863CC', 'site_mirror_hosts': 'gpu_nodes',
          'site_mirror_distros': ['debian12'], 'site_mirror_cuda_base_url': 'https://mirror.example/cuda/repos',
          'site_mirror_cuda_keys': {}, 'site_mirror_extra_packages': [], 'site_mirror_recommends': true,
          'site_mirror_pip_index_url': '', 'site_mirror_pip_find_links': [], 'site_mirror_extra_wheels': [],
          'site_mirror_python': '', 'site_mirror_timeout': 60} | accelops.gpu._site_mirror_problems }}
"""

RETURN = r"""
_value:
  description: One line per problem, naming the variable or the path; empty when all is well.
  type: list
  elements: str
"""


def _site_mirror_problems(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._site_mirror_filters import (
        site_mirror_problems as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_site_mirror_problems": _site_mirror_problems}
