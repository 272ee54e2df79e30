# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report filters (fleet_report_model, fleet_report_html), each documented in its own <name>.yml."""

from __future__ import annotations

from ansible_collections.accelops.gpu.plugins.plugin_utils._filters import LazyModule, filter_errors

# Imported at the first call of one of these filters, not with the file (see LazyModule).
_report_model = LazyModule("_report_model")
_report_html = LazyModule("_report_html")


def _filter(name):
    """Make a function a filter whose errors are AnsibleFilterError naming the filter."""
    return filter_errors(name, _report_model, "ReportError")


@_filter("fleet_report_model")
def fleet_report_model(nodes, unreachable=None, failed=None):
    """The fleet report's model from each node's facts, and the nodes the play lost with the reasons."""
    return _report_model.fleet_model(nodes, unreachable, failed)


@_filter("fleet_report_html")
def fleet_report_html(model, title, generated_at):
    """The fleet report's model as one self-contained HTML document."""
    return _report_html.render_html(model, title, generated_at)


class FilterModule:
    def filters(self):
        return {
            "fleet_report_model": fleet_report_model,
            "fleet_report_html": fleet_report_html,
        }
