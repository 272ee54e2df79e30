# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._config_value_problems; its code is in plugin_utils/_config_value_problems_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _config_value_problems
short_description: "Internal: why a variable must not be written into a configuration file (no compatibility promise)"
version_added: 0.1.0
description:
  - Checks a role variable against what the file it is written into allows and gives one line per problem, naming
    the variable (and the key or index inside it) and what is allowed; an empty list when it may be written.
  - A newline, a NUL byte or a character the file format gives a meaning to would let a value add lines of its own
    (an C(install nvidia /bin/sh -c ...) line in C(/etc/modprobe.d) runs as root at every module load), so each
    format allows only what its values need.
  - "Formats: V(modprobe_options) (a dict of kernel module to a dict of parameter to value, for C(options) lines),
    V(kernel_modules) (a list of module names, for C(modules-load.d)), V(apt_pin_value) (one value of an apt
    preferences C(Pin:) line), V(limits_domains) (a list of C(limits.conf) domains: C(*), a user, C(@group) or
    C(%group)), V(nccl_env) (a dict of C(NCCL_*) variable to value, for C(/etc/nccl.conf)), V(unit_names) (a list of
    systemd unit names), V(pip_locations) (an index URL, empty for none, or a list of index URLs and wheel
    locations, for pip's command line: URLs or absolute paths without spaces), V(pip_location_list) (the same as
    a list only, for C(--find-links)), V(listen_address) (C(HOST:PORT),
    C([IPv6]:PORT) or C(:PORT)), V(host_name), V(host_address) (a host name or an IP address),
    V(absolute_path) (without C(.) or C(..) parts), V(absolute_paths) (a list), V(system_user) and
    V(system_users) (a list), for a service's command line and unit file; V(basic_auth_users) (a dict of user
    names and bcrypt hashes, for an
    exporter's web configuration: a value that is not a hash is not shown in the message)."
options:
  _input:
    description: The variable's value.
    type: raw
    required: true
  format:
    description: The file format the value is written into.
    type: str
    required: true
    choices: [modprobe_options, kernel_modules, apt_pin_value, limits_domains, nccl_env, unit_names, pip_locations,
              pip_location_list, listen_address, host_name, host_address, absolute_path, absolute_paths, system_user,
              system_users, basic_auth_users]
  name:
    description: The variable's name, for the messages.
    type: str
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Refuse module parameters that would add lines to /etc/modprobe.d
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join('; ') }}; nothing was changed."
  vars:
    nvidia_driver_module_params: {nvidia: {NVreg_EnableStreamMemOPs: 1}}
    problems: >-
      {{ nvidia_driver_module_params
         | accelops.gpu._config_value_problems('modprobe_options', 'nvidia_driver_module_params') }}
"""

RETURN = r"""
_value:
  description: One line per problem; empty when the value may be written.
  type: list
  elements: str
"""


def _config_value_problems(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._config_value_problems_filters import (
        config_value_problems as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_config_value_problems": _config_value_problems}
