"""The fleet report filters: thin wrappers over plugin_utils/_report_model.py and _report_html.py whose errors name the
filter."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import GpuFactsCollector, resolve_subsets
from ansible_collections.accelops.gpu.plugins.module_utils._nvml import NvmlSession
from ansible_collections.accelops.gpu.plugins.plugin_utils import _report_html, _report_model
from ansible_collections.accelops.gpu.plugins.plugin_utils._report_filters import (
    FilterModule,
    fleet_report_html,
    fleet_report_model,
)


@pytest.fixture
def facts_of(nvml_fixture):
    """The facts gpu_facts gathers on a fixture: the real collector, the real pynvml, the fake libnvidia-ml."""

    def gather(name):
        nvml_fixture(name)
        with NvmlSession() as session:
            return GpuFactsCollector(session, resolve_subsets(["all", "!processes"])).collect()

    return gather


def test_the_model_filter_gives_the_model(facts_of):
    nodes = {"dgx01": {"nvidia": facts_of("dgx-h100")}, "hgx01": {"nvidia": facts_of("gpu-lost")}}
    lost = {"dgx02": "Failed to connect to the host via ssh"}
    model = fleet_report_model(nodes, lost)
    assert model == _report_model.fleet_model(nodes, lost)
    assert [(n["name"], n["status"]) for n in model["nodes"]] == [("hgx01", "critical"), ("dgx01", "ok")]
    assert fleet_report_model(nodes, failed=lost)["failed"] == [{"name": "dgx02", "reason": lost["dgx02"]}]


def test_the_html_filter_renders_the_model(facts_of):
    model = fleet_report_model({"dgx01": {"nvidia": facts_of("dgx-h100")}})
    page = fleet_report_html(model, "GPU fleet <prod>", "2026-03-01T06:00:00+00:00")
    assert page == _report_html.render_html(model, "GPU fleet <prod>", "2026-03-01T06:00:00+00:00")
    assert page.startswith("<!DOCTYPE html>") and "<title>GPU fleet &lt;prod&gt;</title>" in page


@pytest.mark.parametrize("call, message", [
    (lambda: fleet_report_model(["dgx01"]), r"^fleet_report_model: nodes must be a dict"),
    (lambda: fleet_report_model({}, "dgx02"), r"^fleet_report_model: unreachable must be a dict"),
    (lambda: fleet_report_html({"nodes": []}, "t", "now"), r"^fleet_report_html: the model must be what"),
])
def test_errors_name_the_filter(call, message):
    with pytest.raises(AnsibleFilterError, match=message):
        call()


def test_filters_are_registered():
    assert FilterModule().filters() == {"fleet_report_model": fleet_report_model,
                                        "fleet_report_html": fleet_report_html}
