# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU waste report filters (gpu_waste_model, gpu_waste_html, and the playbook's _gpu_waste_window), each
documented in its own <name>.yml."""

from __future__ import annotations

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import ReportError
from ansible_collections.accelops.gpu.plugins.plugin_utils._filters import filter_errors

# Each filter imports its plugin_utils module inside the function, as report.py does: a task that asks none of these
# filters does not pay for the report's code (docs/performance.md).


@filter_errors("gpu_waste_model", ReportError)
def gpu_waste_model(stdout, start, end, now=None):
    """The GPU waste report's model from sacct's text and the window (UTC)."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _waste

    return _waste.waste_model(stdout, start, end, now)


@filter_errors("gpu_waste_html", ReportError)
def gpu_waste_html(model, title, generated_at):
    """The GPU waste report's model as one self-contained HTML document."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _waste_html

    return _waste_html.render_html(model, title, generated_at)


@filter_errors("_gpu_waste_window", ReportError)
def _gpu_waste_window(now, start="", end="", days=7):
    """The window of playbooks/gpu_waste.yml and the sacct command that reads it."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _waste

    return _waste.window(now, start, end, days)


class FilterModule:
    def filters(self):
        return {
            "gpu_waste_model": gpu_waste_model,
            "gpu_waste_html": gpu_waste_html,
            "_gpu_waste_window": _gpu_waste_window,
        }
