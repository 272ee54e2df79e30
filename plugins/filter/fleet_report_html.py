# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.fleet_report_html; its code is in plugin_utils/_report_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_report_html
short_description: A GPU fleet report as one self-contained HTML document
version_added: 0.1.0
description:
  - Renders the model of P(accelops.gpu.fleet_report_model#filter) as one HTML document with its CSS and its SVG
    inline, no script and no external resource, so that it can be mailed, archived or printed as it is.
  - Shows the fleet summary, the findings worst first, the version drift, the unreachable and failed nodes with
    their reasons, then each node worst first with its GPUs, its GPU topology as a heat map, its RDMA ports and its
    validation figures beside the nominal ones.
  - Every health colour is also written out (C(CRITICAL), C(WARNING), C(UNKNOWN), C(OK)), and every cell of the
    heat map carries its label, so the report reads in black and white too.
  - Every value from the facts is escaped, so a node or GPU name cannot add markup.
positional: _input, title, generated_at
options:
  _input:
    description: The model that P(accelops.gpu.fleet_report_model#filter) returns.
    type: dict
    required: true
  title:
    description: The report's title.
    type: str
    required: true
  generated_at:
    description: When the report was made, as it should be shown.
    type: str
    required: true
seealso:
  - plugin: accelops.gpu.fleet_report_model
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Gather GPU facts
  accelops.gpu.gpu_facts:

- name: Keep what each node reports
  ansible.builtin.set_fact:
    fleet_node:
      nvidia: "{{ ansible_facts.nvidia }}"

- name: Make the fleet report's model
  ansible.builtin.set_fact:
    fleet_model: >-
      {{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'fleet_node')))
         | accelops.gpu.fleet_report_model }}
  run_once: true

- name: Write the fleet report
  ansible.builtin.copy:
    content: "{{ fleet_model | accelops.gpu.fleet_report_html('GPU fleet', now(utc=true).isoformat()) }}"
    dest: /var/tmp/gpu-fleet.html
    mode: "0644"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
_value:
  description: The HTML document.
  type: str
"""


def fleet_report_html(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._report_filters import (
        fleet_report_html as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"fleet_report_html": fleet_report_html}
