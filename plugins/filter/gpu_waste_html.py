# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.gpu_waste_html; its code is in plugin_utils/_gpu_waste_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpu_waste_html
short_description: The GPU waste report as one self-contained HTML document
version_added: 0.1.0
description:
  - Renders the model of P(accelops.gpu.gpu_waste_model#filter) as one HTML document with its CSS inline, no script
    and no external resource, through a Jinja2 template with autoescaping on, so that a user, account or state from
    the accounting cannot add markup.
  - Shows the summary, the accounts and the users most idle GPU-hours first, every GPU job most idle first, the
    lines of sacct that were skipped, and how the figures are made. A job without a GPU utilisation reads
    C(not measured), never 0 %.
positional: _input, title, generated_at
options:
  _input:
    description: The model that P(accelops.gpu.gpu_waste_model#filter) returns.
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
  - plugin: accelops.gpu.gpu_waste_model
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the jobs of the last day
  ansible.builtin.command:
    argv: [sacct, --allusers, --parsable2, --noheader, --noconvert, --starttime, 2026-12-01T00:00:00,
           --endtime, 2026-12-02T00:00:00, --format,
           "JobID,User,Account,State,Start,End,ElapsedRaw,NTasks,AllocTRES,TRESUsageInAve"]
  environment:
    TZ: UTC
    SLURM_TIME_FORMAT: standard
  register: jobs
  changed_when: false

- name: Make the model
  ansible.builtin.set_fact:
    waste: "{{ jobs.stdout | accelops.gpu.gpu_waste_model('2026-12-01T00:00:00', '2026-12-02T00:00:00') }}"

- name: Write the GPU waste report
  ansible.builtin.copy:
    content: "{{ waste | accelops.gpu.gpu_waste_html('GPU waste', now(utc=true).isoformat()) }}"
    dest: /var/tmp/gpu-waste.html
    mode: "0644"
  delegate_to: localhost
"""

RETURN = r"""
_value:
  description: The HTML document.
  type: str
"""


def gpu_waste_html(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._gpu_waste_filters import (
        gpu_waste_html as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"gpu_waste_html": gpu_waste_html}
