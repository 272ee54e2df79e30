"""The Grafana dashboard shipped with gpu_monitoring (files/grafana/accelops-gpu.json), without a Prometheus: what
Grafana needs of it (uid, title, panels with unique ids and a place, the data source variable), every metric name it
reads one that the exporter writes, every query one that Prometheus' parser (promtool) takes. The monitoring scenario
runs every query against a real Prometheus (tests/dashboard.py)."""

from __future__ import annotations

import importlib.util
import pathlib
import re

import pytest
import yaml
from test_rules import run

from ansible_collections.accelops.gpu.plugins.module_utils import _metrics

ROOT = pathlib.Path(__file__).resolve().parents[4]
spec = importlib.util.spec_from_file_location("dashboard", ROOT / "tests" / "dashboard.py")
dashboard = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dashboard)

BOARD = dashboard.load()
EXPORTER_CODE = [ROOT / "plugins" / "module_utils" / name for name in ("_metrics.py", "_exporter.py")]
VALUES = {"instance": "127.0.0.1:9400", "gpu": "0", "datasource": "prometheus"}


def exported_names():
    """Every series the collection's exporter can write: dcgm-exporter's fields it reads from NVML, and the names it
    adds or declares in its code."""
    names = {family[0] for family in _metrics.GPU_FAMILIES}
    for path in EXPORTER_CODE:
        names.update(re.findall(r'\.(?:add|declare)\(\s*"([A-Za-z_:][A-Za-z0-9_:]*)"', path.read_text()))
    return names


def all_panels():
    return list(dashboard.panels(BOARD))


def test_grafana_can_import_it():
    assert isinstance(BOARD["uid"], str) and re.match(r"\A[A-Za-z0-9_-]{1,40}\Z", BOARD["uid"])
    assert BOARD["title"].strip()
    assert isinstance(BOARD["schemaVersion"], int)
    ids = [panel["id"] for panel in all_panels()]
    assert all(isinstance(item, int) for item in ids)
    assert len(ids) == len(set(ids)), "panel ids repeat"
    for panel in all_panels():
        place = panel["gridPos"]
        assert set(place) >= {"h", "w", "x", "y"} and all(isinstance(place[key], int) for key in "hwxy"), panel["title"]
        assert place["x"] >= 0 and place["y"] >= 0 and place["w"] > 0 and place["h"] > 0, panel["title"]
        assert place["x"] + place["w"] <= 24, panel["title"]
        assert panel["title"].strip() and panel["type"]


def test_panels_do_not_overlap():
    cells = {}
    for panel in all_panels():
        place = panel["gridPos"]
        for x in range(place["x"], place["x"] + place["w"]):
            for y in range(place["y"], place["y"] + place["h"]):
                assert (x, y) not in cells, "%r overlaps %r" % (panel["title"], cells[(x, y)])
                cells[(x, y)] = panel["title"]


def test_every_query_asks_the_chosen_data_source():
    variables = {item["name"]: item for item in BOARD["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["instance"]["type"] == variables["gpu"]["type"] == "query"
    source = {"type": "prometheus", "uid": "${datasource}"}
    for item in [*all_panels(), variables["instance"], variables["gpu"]]:
        assert item["datasource"] == source, item.get("title", item.get("name"))
    for panel in all_panels():
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == source and target["expr"], panel["title"]
    # No data source of an exporter's site fixed in the file (what a dashboard exported for sharing would carry).
    assert "__inputs" not in BOARD


def test_every_metric_name_is_one_the_exporter_writes():
    known = exported_names()
    read = {name for _where, expr, _label in dashboard.queries(BOARD) for name in dashboard.metric_names(expr)}
    assert read, "no metric names found"
    assert read - known == set()


def test_what_the_dashboard_reads_covers_the_issue():
    read = {name for _where, expr, _label in dashboard.queries(BOARD) for name in dashboard.metric_names(expr)}
    assert read >= {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP",
                    "DCGM_FI_DEV_XID_ERRORS", "accelops_gpu_xid_errors_total", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
                    "accelops_gpu_health_status", "accelops_gpu_nvlink_up", "DCGM_FI_DEV_SM_CLOCK",
                    "accelops_gpu_clocks_event_reason"}
    assert any('hpc_job!=""' in expr for _where, expr, _label in dashboard.queries(BOARD))


def test_panels_of_the_collections_series_alone_say_so():
    """With the dcgm backend only dcgm-exporter's names have series: a panel that reads none of them says so."""
    for panel in all_panels():
        names = {name for target in panel["targets"] for name in dashboard.metric_names(target["expr"])}
        if not any(name.startswith("DCGM_FI_") for name in names):
            assert "the collection's exporter only" in panel["description"], panel["title"]


def test_legends_name_labels_that_every_series_has():
    """Grafana writes a label's name where a series lacks it (Hostname on a node that calls it hostname): legends name
    the scrape target, the GPU and what the query groups by."""
    for panel in all_panels():
        for target in panel["targets"]:
            grouped = re.match(r"\A\w+ by \(([^)]*)\)", target["expr"])
            allowed = {item.strip() for item in grouped.group(1).split(",")} if grouped else {"instance", "gpu"}
            assert set(re.findall(r"\{\{\s*(\S+?)\s*\}\}", target["legendFormat"])) <= allowed, panel["title"]


def test_every_query_parses(tmp_path):
    """Prometheus' own parser, through promtool check rules: each query with Grafana's variables replaced, as a
    recording rule."""
    found = dashboard.queries(BOARD)
    rules = [{"record": "dashboard:query_%d" % number, "expr": dashboard.substitute(expr, VALUES)}
             for number, (_where, expr, _label) in enumerate(found)]
    path = tmp_path / "queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = run("check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: %d rules found" % len(found) in result.stdout


@pytest.mark.parametrize("expr, names", [
    ('DCGM_FI_DEV_GPU_UTIL{instance=~"$instance", gpu=~"$gpu", hpc_job!=""}', {"DCGM_FI_DEV_GPU_UTIL"}),
    ('sum by (instance, gpu) (accelops_gpu_nvlink_up{gpu="0"})', {"accelops_gpu_nvlink_up"}),
    ("rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[$__rate_interval]) / 1000", {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"}),
    ("DCGM_FI_DEV_FB_TOTAL or (DCGM_FI_DEV_FB_USED + on(gpu) group_left(x) DCGM_FI_DEV_FB_FREE)",
     {"DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"}),
    ('max by (hpc_job) (DCGM_FI_DEV_GPU_UTL{a="b}"}) unless ignoring(x) up offset 5m', {"DCGM_FI_DEV_GPU_UTL", "up"}),
    ("1e3 * vector(1)", set()),
])
def test_metric_names(expr, names):
    assert dashboard.metric_names(expr) == names


def test_a_misspelt_metric_is_caught():
    assert dashboard.metric_names("DCGM_FI_DEV_GPU_UTL{gpu=~\"$gpu\"}") - exported_names() == {"DCGM_FI_DEV_GPU_UTL"}


def test_substitute():
    assert dashboard.substitute('rate(x{gpu=~"$gpu",i=~"${instance}"}[$__rate_interval])', VALUES) == \
        'rate(x{gpu=~"0",i=~"127.0.0.1:9400"}[1m])'
    with pytest.raises(KeyError, match=r"no value for \$node"):
        dashboard.substitute('x{n="$node"}', VALUES)


def test_variables_are_label_values():
    variables = [item for item in dashboard.queries(BOARD) if item[2] is not None]
    assert [(where, label) for where, _expr, label in variables] == [("variable 'instance'", "instance"),
                                                                     ("variable 'gpu'", "gpu")]
    with pytest.raises(ValueError, match="not label_values"):
        dashboard.queries({"templating": {"list": [{"name": "x", "type": "query", "query": "up"}]}})
