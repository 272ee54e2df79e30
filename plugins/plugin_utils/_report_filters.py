# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report filters (fleet_report_model, fleet_report_html), each documented in its own <name>.yml."""

from __future__ import annotations

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import ReportError
from ansible_collections.accelops.gpu.plugins.plugin_utils._filters import filter_errors

# Each filter imports its plugin_utils module inside the function, not with the file: Ansible's Jinja plugin loader
# imports every filter file of the collection in every worker process at the first lookup of any filter, and a task
# that asks none of these filters should not pay for the fleet report code (docs/performance.md).


def _filter(name):
    """Make a function a filter whose errors are AnsibleFilterError naming the filter."""
    return filter_errors(name, ReportError)


@_filter("fleet_report_model")
def fleet_report_model(nodes, unreachable=None, failed=None):
    """The fleet report's model from each node's facts, and the nodes the play lost with the reasons."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _report_model

    return _report_model.fleet_model(nodes, unreachable, failed)


@_filter("fleet_report_html")
def fleet_report_html(model, title, generated_at):
    """The fleet report's model as one self-contained HTML document."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _report_html

    return _report_html.render_html(model, title, generated_at)


class FilterModule:
    def filters(self):
        return {
            "fleet_report_model": fleet_report_model,
            "fleet_report_html": fleet_report_html,
        }
