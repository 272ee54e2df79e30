# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._running_units; its code is in plugin_utils/_probe_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _running_units
short_description: "Internal: the systemd units of a node_probe read that are active and enabled (no compatibility
  promise)"
version_added: 0.1.0
description:
  - >-
    From the C(services) of M(accelops.gpu.node_probe), the units that are active and whose unit file is enabled,
    which a M(ansible.builtin.systemd_service) task with C(state=started) and C(enabled=true) would leave as they
    are; a role skips that task, and its round trip, on a converged node.
  - A unit that is missing, inactive, failed, static or enabled only at runtime is not in the list; neither is any
    unit when the node has no systemd (C(services) is C(null)).
options:
  _input:
    description: The services read, C(node_probe.services).
    type: dict
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the exporter's unit
  accelops.gpu.node_probe:
    services: [exporter.service]
  register: state

- name: Start the exporter where it does not run yet
  ansible.builtin.systemd_service:
    name: exporter.service
    state: started
    enabled: true
  when: "'exporter.service' not in (state.services | accelops.gpu._running_units)"
"""

RETURN = r"""
_value:
  description: The names of the active and enabled units, sorted.
  type: list
  elements: str
"""


def _running_units(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._probe_filters import running_units as implementation

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_running_units": _running_units}
