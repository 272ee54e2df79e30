"""The fleet report: facts gathered by the real collector through the real pynvml on the fake libnvidia-ml and the
fixtures, RDMA facts from the simulated fabrics, validation records as the roles' validation scripts write them."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
from html.parser import HTMLParser

import pytest
from markupsafe import escape

from ansible_collections.accelops.gpu.plugins.module_utils import _ib
from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import GpuFactsCollector, resolve_subsets
from ansible_collections.accelops.gpu.plugins.module_utils._nvml import NvmlSession
from ansible_collections.accelops.gpu.plugins.plugin_utils import _report_model
from ansible_collections.accelops.gpu.plugins.plugin_utils._report_html import render_html
from ansible_collections.accelops.gpu.plugins.plugin_utils._report_model import (
    ReportError,
    allreduce_nominal,
    fleet_model,
    slurm_states,
)
from simnode import ROOT, load_sim_script

mkfabric = load_sim_script("host/mkfabric.py", "mkfabric")
SPEC = importlib.util.spec_from_file_location(
    "framework_validation", ROOT / "roles" / "python_env" / "files" / "framework_validation.py")
fv = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(fv)

H100 = "NVIDIA H100 80GB HBM3"
GENERATED = "2026-03-01T06:00:00+00:00"
HOSTILE = '<script>alert("x")</script>'
HOSTILE_NODE = '"><img src=x onerror=alert(1)>'
# What a report may hold: no script, no image, no link to anything outside the document.
TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "table", "tr", "th", "td", "span",
        "a", "div", "ul", "li", "svg", "use", "symbol", "g", "rect", "text"}


@pytest.fixture
def gather(nvml_fixture):
    """gather(fixture, *extra_lines, subsets=..., sysfs_root=...) -> ansible_facts.nvidia as gpu_facts sets it."""

    def run(name, *lines, subsets=("all", "!pci", "!processes"), sysfs_root="/sys"):
        path = nvml_fixture(name)
        if lines:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write("\n" + "\n".join(lines) + "\n")
        with NvmlSession() as session:
            return GpuFactsCollector(session, resolve_subsets(list(subsets)), sysfs_root).collect()

    return run


@pytest.fixture
def fabric(tmp_path):
    """fabric(profile) -> the sysfs root of a simulated fabric (mkfabric.py)."""

    def build(profile):
        root = tmp_path / ("fabric-" + profile)
        if not root.exists():
            mkfabric.main(profile, str(root))
        return str(root)

    return build


def matmul(dtype, tflops, size=8192):
    return fv.matmul_record(size, dtype, 2.0 * size ** 3 / tflops / 1e12)


def validation(framework="pytorch", *, gpus=8, fp32=51.2, low=702.5, busbw=361.0, name=H100, low_dtype="bfloat16",
               failure=None):
    """A record as validate_pytorch.py / validate_tensorflow.py print it (the fact <framework>_validation)."""
    size = 256 << 20
    algbw = busbw * gpus / (2.0 * (gpus - 1))
    gpu_fp32, gpu_low = matmul("float32", fp32), matmul(low_dtype, low)
    cpu_fp32, cpu_low = matmul("float32", 2.1, 1024), matmul("bfloat16", 1.3, 1024)
    version = {"pytorch": "2.5.1+cu124", "tensorflow": "2.18.0"}[framework]
    return {
        "framework": framework, "expected_gpus": gpus, "failure": failure, "version": version, "built_cuda": "12.4",
        "built_cudnn": "9.1.0", "built_nccl": "2.21.5" if framework == "pytorch" else None, "cuda_available": True,
        "gpu_count": gpus, "devices": [name] * gpus, "cpu_threads": 224, "low_precision_dtype": low_dtype,
        "cpu": {"matmul_fp32": cpu_fp32, "matmul_low": cpu_low,
                "train_step": fv.train_record("bfloat16", 2, [2.31, 2.29], 0.02, True)},
        "gpu": {"name": name, "matmul_fp32": gpu_fp32, "matmul_low": gpu_low,
                "speedup_fp32": round(gpu_fp32["tflops"] / cpu_fp32["tflops"], 1),
                "speedup_low": round(gpu_low["tflops"] / cpu_low["tflops"], 1),
                "train_step": fv.train_record(low_dtype, 2, [2.31, 2.28], 0.004, True)},
        "allreduce": fv.allreduce_record("nccl", gpus, gpus, size, size / algbw / 1e9, correct=True) if gpus > 1
        else None,
        "statement": "%s %s uses %d GPU(s) (%s)" % (framework, version, gpus, name),
        "cpu_allreduce": None,
    }


def by_name(model):
    return {node["name"]: node for node in model["nodes"]}


def drift_field(model, model_name, field):
    group = next(g for g in model["drift"] if g["model"] == model_name)
    return next(f for f in group["fields"] if f["field"] == field)


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attributes = set(), set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes.update(name for name, _value in attrs)


def test_a_healthy_dgx_node_is_ok_with_its_facts_and_figures(gather, fabric):
    facts = gather("dgx-h100")
    node = {"nvidia": facts, "ib": _ib.collect(fabric("dgx-h100")), "slurm": {"state": "IDLE", "reason": None},
            "validation": {"pytorch": validation(), "tensorflow": validation("tensorflow", fp32=260.0, low=610.0)},
            "versions": {"cuda_toolkit": "12.4.1", "pytorch": "2.5.1"}}
    model = fleet_model({"dgx01": node})
    json.dumps(model)
    record = model["nodes"][0]
    assert (record["status"], record["findings"], model["findings"]) == ("ok", [], [])
    assert model["summary"]["health"] == {"ok": 1, "unknown": 0, "warning": 0, "critical": 0}
    assert model["summary"]["gpu_models"] == [{"model": H100, "gpus": 8, "nodes": 1}]
    assert record["model"] == H100 and record["driver_version"] == "550.54.15"
    gpu = record["gpus"][0]
    assert gpu["status"] == "ok" and gpu["status_text"] == "no findings"
    assert (gpu["memory_used_mib"], gpu["memory_total_mib"], gpu["power_limit_w"]) == (1, 81559, 700.0)
    assert (gpu["temperature_slowdown_c"], gpu["temperature_shutdown_c"]) == (87, 92)
    assert gpu["nvlink"] == {"active": 18, "total": 18, "down": []}
    assert gpu["pcie"] == {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16}
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert record["topology"]["gpus"] == ["GPU%d" % i for i in range(8)]
    assert record["topology"]["matrix"][0] == ["X"] + ["NV18"] * 7
    assert len(record["rdma"]["devices"]) == 12
    assert {d["family"] for d in record["rdma"]["devices"]} == {"ConnectX-7"}
    figures = {(v["framework"], f["metric"]): f for v in record["validation"] for f in v["figures"]}
    assert figures["pytorch", "matmul_fp32"]["nominal"] == 66.9
    assert figures["pytorch", "matmul_fp32"]["nominal_basis"] == "fp32"
    assert figures["pytorch", "matmul_low"]["nominal"] == 989.4
    assert figures["pytorch", "matmul_low"]["nominal_basis"] == "bf16"
    assert figures["pytorch", "matmul_low"]["measured"] == pytest.approx(702.5, rel=1e-3)
    assert (figures["pytorch", "allreduce_busbw"]["nominal"], figures["pytorch", "allreduce_busbw"]["nominal_basis"]) \
        == (450, "NVLink")
    assert figures["pytorch", "allreduce_busbw"]["ratio"] == pytest.approx(361.0 / 450, abs=1e-3)
    # TensorFlow runs float32 matmuls on TF32 tensor cores by default.
    assert (figures["tensorflow", "matmul_fp32"]["nominal"], figures["tensorflow", "matmul_fp32"]["nominal_basis"]) \
        == (494.7, "tf32")
    page = render_html(model, "Fleet", GENERATED)
    assert "nominal" in page and "66.9 TFLOP/s (nominal, fp32)" in page


@pytest.mark.parametrize("fixture, framework, metric, expected", [
    ("pcie-l40s", "pytorch", "allreduce_busbw", (31.5, "PCIe gen 4 x16")),
    ("pcie-l40s", "tensorflow", "matmul_fp32", (183.0, "tf32")),
    ("old-driver", "tensorflow", "matmul_fp32", (15.7, "fp32")),
    ("old-driver", "pytorch", "matmul_low", (125.0, "fp16")),
    ("old-driver", "pytorch", "allreduce_busbw", (150, "NVLink")),
    # No nominal figure for a GPU the table does not list.
    ("busy", "pytorch", "matmul_fp32", (None, None)),
])
def test_nominal_figures_follow_the_model_and_the_interconnect(gather, fixture, framework, metric, expected):
    nominal = expected[0]
    facts = gather(fixture)
    name, gpus = facts["gpus"][0]["name"], len(facts["gpus"])
    low = "float16" if name.startswith("Tesla V100") else "bfloat16"
    record = validation(framework, gpus=gpus, name=name, fp32=10.0, low=50.0, busbw=20.0, low_dtype=low)
    model = fleet_model({"n1": {"nvidia": facts, "validation": {framework: record}}})
    figure = next(f for f in model["nodes"][0]["validation"][0]["figures"] if f["metric"] == metric)
    assert (figure["nominal"], figure["nominal_basis"]) == expected
    assert figure["ratio"] == (None if nominal is None else round(figure["measured"] / nominal, 3))


def test_allreduce_nominal_needs_every_gpu_link():
    gpus = [{"pcie": {"gen_max": 4, "width_max": 16}}, {"pcie": {"gen_max": 4, "width_max": 8}}]
    assert allreduce_nominal("NVIDIA L40S", gpus) == (15.8, "PCIe gen 4 x8")
    assert allreduce_nominal("NVIDIA L40S", [*gpus, {"pcie": None}]) == (None, None)
    assert allreduce_nominal("unknown GPU", [{"nvlinks": [{"active": True}]}]) == (None, None)


def test_one_odd_driver_among_three_nodes_is_drift(gather, fabric):
    facts, ib = gather("dgx-h100"), _ib.collect(fabric("dgx-h100"))
    nodes = {name: {"nvidia": copy.deepcopy(facts), "ib": copy.deepcopy(ib), "versions": {"cuda_toolkit": "12.4.1"}}
             for name in ("gpu01", "gpu02", "gpu03")}
    nodes["gpu03"]["nvidia"].update(driver_version="535.161.08", cuda_driver_version="12.2")
    nodes["gpu02"]["nvidia"]["gpus"][5]["vbios_version"] = "96.00.74.00.01"
    nodes["gpu01"]["ib"]["devices"][0]["fw_ver"] = "28.38.1002"
    nodes["gpu01"]["versions"]["cuda_toolkit"] = "12.6.2"
    model = fleet_model(nodes)
    driver = drift_field(model, H100, "driver_version")
    assert {k: driver[k] for k in ("majority", "majority_count", "total", "tie", "drift", "unit")} == {
        "majority": "550.54.15", "majority_count": 2, "total": 3, "tie": False, "drift": True, "unit": "node"}
    assert driver["odd"] == [{"value": "535.161.08", "count": 1, "nodes": ["gpu03"], "members": [{"node": "gpu03"}]}]
    assert drift_field(model, H100, "cuda_driver_version")["odd"][0]["nodes"] == ["gpu03"]
    vbios = drift_field(model, H100, "vbios_version")
    assert (vbios["majority"], vbios["total"]) == ("96.00.89.00.01", 24)
    assert vbios["odd"][0]["members"] == [{"node": "gpu02", "gpu": 5}]
    toolkit = drift_field(model, H100, "versions.cuda_toolkit")
    assert (toolkit["majority"], toolkit["odd"][0]["value"], toolkit["odd"][0]["nodes"]) == ("12.4.1", "12.6.2",
                                                                                             ["gpu01"])
    firmware = drift_field(model, "MT4129", "fw_ver")
    assert (firmware["majority"], firmware["total"], firmware["odd"][0]["members"]) == (
        "28.39.1002", 36, [{"node": "gpu01", "device": "mlx5_0"}])
    assert next(g for g in model["drift"] if g["model"] == "MT4129")["label"] == "MT4129 (ConnectX-7)"
    assert model["summary"]["drift_fields"] == 5
    assert drift_field(model, H100, "vbios_version")["drift"] and not any(
        f["drift"] for g in model["drift"] for f in g["fields"] if f["field"] == "nvml_version")
    page = render_html(model, "Fleet", GENERATED)
    assert re.search(r'<span class="odd">535\.161\.08</span> on <a href="#n\d+">gpu03</a>', page)
    assert re.search(r'<span class="odd">96\.00\.74\.00\.01</span> on <a href="#n\d+">gpu02</a> GPU 5', page)


def test_a_tie_takes_the_newest_value_and_says_so(gather):
    facts = gather("dgx-h100")
    old = dict(facts, driver_version="535.161.08")
    field = drift_field(fleet_model({"a": {"nvidia": old}, "b": {"nvidia": facts}}), H100, "driver_version")
    assert (field["majority"], field["tie"], field["odd"][0]["value"]) == ("550.54.15", True, "535.161.08")


def test_nodes_and_findings_come_worst_first_then_by_name(gather):
    healthy = gather("dgx-h100")
    nodes = {
        "node10": {"nvidia": healthy},
        "node2": {"nvidia": healthy},
        "node3": {"nvidia": gather("gpu-lost")},
        "node1": {"nvidia": gather("dgx-h100", "fail.nvmlDeviceGetPowerManagementLimit=4:UNKNOWN")},
        "node4": {},
        "node11": {"nvidia": healthy, "slurm": {"state": "DOWN+DRAIN", "reason": "Not responding"}},
    }
    model = fleet_model(nodes)
    assert [(n["name"], n["status"]) for n in model["nodes"]] == [
        ("node3", "critical"), ("node1", "warning"), ("node11", "warning"), ("node4", "unknown"), ("node2", "ok"),
        ("node10", "ok")]
    ranks = [_report_model.RANK[f["severity"]] for f in model["findings"]]
    assert ranks == sorted(ranks, reverse=True)
    assert (model["findings"][0]["node"], model["findings"][0]["code"]) == ("node3", "gpu_lost")
    assert model["summary"]["health"] == {"ok": 2, "unknown": 1, "warning": 2, "critical": 1}
    page = render_html(model, "Fleet", GENERATED)
    order = [page.index('id="n%d"' % i) for i in range(len(model["nodes"]))]
    assert order == sorted(order)
    assert page.index(">node3</a>") < page.index(">node1</a>") < page.index(">node4</a>")


@pytest.mark.parametrize("fixture, gpu, code, severity", [
    (("dgx-h100", "fail.nvmlDeviceGetPowerManagementLimit=4:UNKNOWN"), 3, "nvml_error", "warning"),
    (("dgx-h100", "fail.nvmlSystemGetDriverVersion=1:UNKNOWN"), None, "nvml_error", "warning"),
    (("dgx-h100", "fail.nvmlDeviceGetCount_v2=1:UNKNOWN"), None, "gpu_count_unknown", "critical"),
    (("gpu-lost",), 2, "gpu_lost", "critical"),
    (("driver-mismatch",), None, "driver_mismatch", "critical"),
])
def test_an_nvml_error_is_a_finding_never_healthy(gather, fixture, gpu, code, severity):
    facts = gather(*fixture)
    # Facts whose own verdict claims health are judged again from what they hold.
    facts["health"] = {"status": "ok", "findings": []}
    model = fleet_model({"n1": {"nvidia": facts}})
    record = model["nodes"][0]
    assert record["status"] == severity
    assert {"node": "n1", "gpu": gpu, "code": code, "severity": severity} in [
        {k: f[k] for k in ("node", "gpu", "code", "severity")} for f in model["findings"]]
    if gpu is not None:
        assert record["gpus"][gpu]["status"] == severity
        assert code in record["gpus"][gpu]["codes"] and record["gpus"][gpu]["status_text"] != "no findings"
    assert model["summary"]["health"]["ok"] == 0


def test_a_lost_gpu_is_shown_lost_in_the_html(gather):
    page = render_html(fleet_model({"hgx": {"nvidia": gather("gpu-lost")}}), "Fleet", GENERATED)
    assert "<td>2 LOST</td><td>" in page and '<span class="b critical">CRITICAL</span> GPU 2 is lost' in page


@pytest.mark.parametrize("node, code", [
    ({}, "gpu_facts_missing"),
    ({"nvidia": None, "versions": {"cuda_toolkit": "12.4.1"}}, "gpu_facts_missing"),
    ({"nvidia": {}}, "gpu_facts_incomplete"),
])
def test_a_node_without_facts_is_unknown(node, code):
    model = fleet_model({"n1": node})
    assert model["nodes"][0]["status"] == "unknown"
    assert [(f["code"], f["severity"]) for f in model["findings"]] == [(code, "unknown")]
    assert model["summary"]["health"] == {"ok": 0, "unknown": 1, "warning": 0, "critical": 0}


def test_an_empty_string_is_a_section_not_given(gather):
    """What ansible-core before 2.19 renders for `"{{ ansible_facts.infiniband | default(none) }}"` inside a dict."""
    facts = gather("dgx-h100")
    given = fleet_model({"n1": {"nvidia": facts, "ib": "", "slurm": "", "validation": {"pytorch": ""}}})
    assert given == fleet_model({"n1": {"nvidia": facts, "ib": None, "slurm": None, "validation": {"pytorch": None}}})
    with pytest.raises(ReportError, match="node n1: ib must be a dict, got str"):
        fleet_model({"n1": {"nvidia": facts, "ib": "mlx5_0"}})


def test_facts_without_the_health_subsets_are_unknown_not_ok(gather):
    model = fleet_model({"n1": {"nvidia": gather("dgx-h100", subsets=("basic", "memory"))}})
    record = model["nodes"][0]
    assert record["status"] == "unknown"
    assert record["findings"][0]["code"] == "health_facts_incomplete"
    assert "state, ecc, thermal, clocks, nvlink, pcie" in record["findings"][0]["message"]
    assert {gpu["status"] for gpu in record["gpus"]} == {"unknown"}
    assert model["summary"]["gpu_health"]["unknown"] == 8


def test_without_nvml_the_pci_bus_decides(gather, fabric, tmp_path):
    # Without the pci subset nobody can tell whether GPUs are left without a driver.
    unlisted = fleet_model({"n1": {"nvidia": gather("driver-not-loaded", subsets=("basic", "memory"))}})["nodes"][0]
    assert (unlisted["status"], unlisted["findings"][0]["code"]) == ("unknown", "gpus_unknown")
    listed = gather("driver-not-loaded", subsets=("all",), sysfs_root=fabric("no-rdma"))
    record = fleet_model({"n1": {"nvidia": listed}})["nodes"][0]
    assert (record["status"], record["findings"][0]["code"]) == ("critical", "driver_unavailable")
    (tmp_path / "empty" / "bus" / "pci" / "devices").mkdir(parents=True)
    bare = gather("driver-not-loaded", subsets=("all",), sysfs_root=str(tmp_path / "empty"))
    # No GPU on the bus and no driver: told, not ok (a GPU node without a GPU is most often an inventory mistake).
    record = fleet_model({"n1": {"nvidia": bare}})["nodes"][0]
    assert (bare["pci_devices"], record["status"], record["findings"][0]["code"]) == ([], "warning", "no_gpu")


def test_unreachable_and_failed_nodes_keep_their_reasons(gather):
    healthy = gather("dgx-h100")
    ssh = "Failed to connect to the host via ssh: ssh: connect to host gpu03 port 22: Connection timed out"
    torch = "torch sees 7 GPUs but NVML reports 8 (CUDA_VISIBLE_DEVICES=unset)"
    model = fleet_model({"gpu01": {"nvidia": healthy}, "gpu02": {"nvidia": healthy}},
                        unreachable={"gpu03": ssh}, failed={"gpu02": torch, "gpu04": None})
    assert model["unreachable"] == [{"name": "gpu03", "reason": ssh}]
    assert model["failed"] == [{"name": "gpu02", "reason": torch}, {"name": "gpu04", "reason": None}]
    summary = model["summary"]
    assert (summary["nodes"], summary["reporting"], summary["unreachable"], summary["failed"]) == (4, 2, 1, 2)
    assert summary["health"] == {"ok": 1, "unknown": 3, "warning": 0, "critical": 0}
    assert by_name(model)["gpu02"]["status"] == "unknown"
    assert [(f["node"], f["code"], f["message"]) for f in model["findings"]] == [
        ("gpu02", "failed", torch), ("gpu03", "unreachable", ssh), ("gpu04", "failed", "no reason given")]
    page = render_html(model, "Fleet", GENERATED)
    assert "<td>gpu03</td><td>unreachable</td><td>%s</td>" % ssh in page
    assert re.search(r'<a href="#n\d+">gpu02</a></td><td>failed</td><td>%s' % re.escape(torch), page)


def test_rdma_and_slurm_findings(gather, fabric):
    model = fleet_model({"n1": {"nvidia": gather("pcie-l40s"), "ib": _ib.collect(fabric("ports-down")),
                                "slurm": {"state": "down*", "reason": "Kill task failed"}}})
    found = [(f["code"], f["severity"], f["message"]) for f in model["findings"]]
    assert ("rdma_port_not_active", "warning", "mlx5_0 port 1 has its link up but is INIT: no subnet manager has "
            "brought it up") in found
    assert ("slurm_state", "warning", "Slurm has this node down*, reason: Kill task failed") in found
    assert len(found) == 2


@pytest.mark.parametrize("state, states", [
    ("IDLE+DRAIN", ["IDLE", "DRAIN"]), ("down*", ["NOT_RESPONDING", "DOWN"]), ("MIXED", ["MIXED"]), (None, []),
    ("IDLE+DRAIN+NOT_RESPONDING", ["IDLE", "DRAIN", "NOT_RESPONDING"]),
])
def test_slurm_states(state, states):
    assert slurm_states(state) == states


def test_a_drain_alone_is_shown_not_found(gather):
    model = fleet_model({"n1": {"nvidia": gather("dgx-h100"), "slurm": {"state": "IDLE+DRAIN", "reason": "rma"}}})
    assert model["nodes"][0]["status"] == "ok" and model["nodes"][0]["slurm"] == {"state": "IDLE+DRAIN",
                                                                                  "reason": "rma", "problem": None}


@pytest.mark.parametrize("problem", ["Slurm's controller could not be asked: Unable to contact slurm controller",
                                     "Slurm's controller does not know this node"])
def test_a_slurm_state_not_known_is_a_warning_never_outside_slurm(gather, problem):
    model = fleet_model({"n1": {"nvidia": gather("dgx-h100"), "slurm": {"state": None, "reason": None,
                                                                        "problem": problem}},
                         "n2": {"nvidia": gather("dgx-h100")}})
    node = next(n for n in model["nodes"] if n["name"] == "n1")
    assert node["status"] == "warning" and node["slurm"] == {"state": None, "reason": None, "problem": problem}
    assert [(f["code"], f["severity"], f["message"]) for f in node["findings"]] == [("slurm_state", "warning", problem)]
    page = render_html(model, "Fleet", GENERATED)
    assert "<p>Slurm: %s (%s)</p>" % ('<span class="na">n/a</span>', escape(problem)) in page
    assert '<td><span class="na">not in Slurm</span></td></tr>' in page  # n2 has no Slurm record


def test_a_failed_validation_is_critical(gather):
    failure = "the NCCL all-reduce gave a wrong sum"
    model = fleet_model({"n1": {"nvidia": gather("dgx-h100"), "validation": {
        "pytorch": validation(failure=failure), "tensorflow": None}}})
    record = model["nodes"][0]
    assert record["status"] == "critical" and [v["framework"] for v in record["validation"]] == ["pytorch"]
    assert record["findings"][0]["message"] == "pytorch validation failed: %s" % failure
    assert "FAILED</span> %s" % failure in render_html(model, "Fleet", GENERATED)


def test_every_value_from_the_facts_is_escaped(gather, fabric):
    facts = gather("dgx-h100")
    facts["gpus"][0]["name"] = HOSTILE
    facts["gpus"][1]["vbios_version"] = HOSTILE
    facts["topology"][0][1] = HOSTILE
    facts["driver_version"] = HOSTILE
    ib = _ib.collect(fabric("dgx-h100"))
    ib["devices"][0]["name"] = HOSTILE
    ib["devices"][1]["hca_type"] = HOSTILE
    node = {"nvidia": facts, "ib": ib, "versions": {HOSTILE: HOSTILE}, "slurm": {"state": "DOWN", "reason": HOSTILE},
            "validation": {HOSTILE: validation(failure=HOSTILE, name=HOSTILE)}}
    model = fleet_model({HOSTILE_NODE: node, "gpu02": {"nvidia": gather("gpu-lost")}},
                        unreachable={HOSTILE: HOSTILE}, failed={"gpu09": HOSTILE})
    page = render_html(model, HOSTILE, HOSTILE)
    parser = Tags()
    parser.feed(page)
    assert parser.tags <= TAGS
    assert not [a for a in parser.attributes if a.startswith("on")]
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in page


def test_the_document_is_self_contained_and_printable(gather, fabric):
    facts, ib = gather("dgx-h100"), _ib.collect(fabric("dgx-h100"))
    nodes = {"gpu%02d" % i: {"nvidia": facts, "ib": ib} for i in range(3)}
    nodes["l40s-01"] = {"nvidia": gather("pcie-l40s")}
    page = render_html(fleet_model(nodes), "Fleet", GENERATED)
    assert page.startswith("<!DOCTYPE html>") and page.count("<html") == 1 and "@media print" in page
    for outside in ("http://", "https://", "src=", "@import", "url(", "<script", "<link"):
        assert outside not in page
    # One heat map per distinct topology, each node pointing at its own.
    uses, symbols = re.findall(r'<use href="#(t\d+)"/>', page), re.findall(r'<symbol id="(t\d+)"', page)
    assert len(uses) == 4 and sorted(set(uses)) == sorted(symbols) and len(symbols) == 2
    for status in ("CRITICAL", "WARNING", "UNKNOWN", "OK"):
        assert '">%s</span>' % status in page
    assert ">NV18</text>" in page and ">SYS</text>" in page


def test_the_model_leaves_its_input_alone(gather, fabric):
    nodes = {"n1": {"nvidia": gather("gpu-lost"), "ib": _ib.collect(fabric("dgx-h100")),
                    "validation": {"pytorch": validation()}, "versions": {"nccl": "2.21.5"}}}
    before = copy.deepcopy(nodes)
    fleet_model(nodes, {"n2": "timeout"})
    assert nodes == before


def _set(path, value):
    """A change to a node's input: path is a tuple of keys and list positions from the node."""

    def change(node):
        target = node
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("path, value", [
    (("nvidia", "gpus", 0, "temperature_c"), NAN),
    (("nvidia", "gpus", 0, "temperature_c"), INF),
    (("nvidia", "gpus", 0, "temperature_c"), "hot"),
    (("nvidia", "gpus", 0, "temperature_slowdown_c"), "87"),
    (("nvidia", "gpus", 0, "memory_used_mib"), NAN),
    (("nvidia", "gpus", 0, "memory_total_mib"), 10 ** 400),
    (("nvidia", "gpus", 0, "power_draw_w"), [1]),
    (("nvidia", "gpus", 0, "power_draw_w"), -5.0),
    (("nvidia", "gpus", 0, "utilization_gpu_pct"), 250),
    (("nvidia", "gpus", 0, "ecc_errors"), "x"),
    (("nvidia", "gpus", 0, "ecc_errors", "volatile"), {"uncorrected": "5"}),
    (("nvidia", "gpus", 0, "ecc_errors", "volatile"), {"uncorrected": NAN}),
    (("nvidia", "gpus", 0, "remapped_rows"), [1]),
    (("nvidia", "gpus", 0, "nvlinks"), [1]),
    (("nvidia", "gpus", 0, "pcie"), "x"),
    (("nvidia", "gpus", 0, "clocks_event_reasons"), "hw_slowdown"),
    (("nvidia", "gpus", 0, "errors"), [1]),
    (("nvidia", "gpus", 0, "errors"), None),
    (("nvidia", "gpus", 0, "lost"), "false"),
    (("nvidia", "gpus", 0, "index"), "0"),
    (("nvidia", "gpus", 1, "index"), 0),
    (("nvidia", "gpus", 0, "name"), ["x"]),
    (("nvidia", "gpus", 0, "pci_bus_id"), {"a": 1}),
    (("nvidia", "gpus", 0), None),
    (("nvidia", "gpus"), {"0": {}}),
    (("nvidia", "gpus"), "none"),
    (("nvidia", "errors"), [1]),
    (("nvidia", "driver_loaded"), "false"),
    (("nvidia", "pci_devices"), [1]),
    (("nvidia", "topology"), [[1, 2]]),
    (("nvidia", "topology"), [1]),
    (("nvidia", "health"), "ok"),
    (("nvidia", "health"), {"findings": [{"gpu": [0], "code": "x", "severity": "warning", "message": "x"}]}),
    (("ib", "devices"), "mlx5_0"),
    (("ib", "devices", 0, "ports"), [1]),
    (("ib", "gpu_affinity"), [{"pci_bus_id": ["x"]}]),
    (("validation", "pytorch", "gpu", "matmul_fp32"), [1]),
    (("validation", "pytorch", "gpu", "matmul_fp32", "tflops"), NAN),
    (("validation", "pytorch", "gpu", "matmul_low", "dtype"), ["bfloat16"]),
    (("validation", "pytorch", "allreduce", "busbw_gbps"), INF),
], ids=lambda v: ".".join(map(str, v)) if isinstance(v, tuple) else repr(v)[:12])
def test_malformed_facts_are_unknown_never_ok_and_never_a_traceback(gather, fabric, path, value):
    node = {"nvidia": gather("dgx-h100"), "ib": _ib.collect(fabric("dgx-h100")),
            "validation": {"pytorch": validation()}}
    _set(path, value)(node)
    model = fleet_model({"n1": node})
    record = model["nodes"][0]
    assert record["status"] != "ok" and model["summary"]["health"]["ok"] == 0
    assert "facts_malformed" in [f["code"] for f in record["findings"]] or (
        "nvml_errors_unreported" in [f["code"] for f in record["findings"]])
    json.dumps(model, allow_nan=False)
    render_html(model, "Fleet", GENERATED)


@pytest.mark.parametrize("drop, code", [
    # Facts from a gpu_facts before NVML errors were reported: a failed call reads as a value NVML does not support.
    (("errors",), "nvml_errors_unreported"),
    (("gpus", "errors"), "nvml_errors_unreported"),
    (("gpus", "lost"), "nvml_errors_unreported"),
    (("gpus", "index"), "nvml_errors_unreported"),
    (("gpus", "ecc_errors"), "health_facts_incomplete"),
    (("gpus", "remapped_rows"), "health_facts_incomplete"),
    (("gpus", "temperature_slowdown_c"), "health_facts_incomplete"),
])
def test_facts_without_newer_keys_are_unknown(gather, drop, code):
    facts = gather("dgx-h100")
    if drop[0] == "gpus":
        for gpu in facts["gpus"]:
            del gpu[drop[1]]
    else:
        del facts[drop[0]]
    record = fleet_model({"n1": {"nvidia": facts}})["nodes"][0]
    assert record["status"] == "unknown" and code in [f["code"] for f in record["findings"]]
    assert {gpu["status"] for gpu in record["gpus"]} == {"unknown"}


@pytest.mark.parametrize("fixture, why", [
    ("no-gpu", "NVML counts none"), ("driver-not-loaded", "none is on the PCI bus"),
])
def test_a_gpu_node_without_a_gpu_is_not_ok(gather, tmp_path, fixture, why):
    (tmp_path / "bare" / "bus" / "pci" / "devices").mkdir(parents=True)
    facts = gather(fixture, subsets=("all",), sysfs_root=str(tmp_path / "bare"))
    assert (facts["pci_devices"], facts["gpus"]) == ([], [])
    record = fleet_model({"n1": {"nvidia": facts}})["nodes"][0]
    assert (record["status"], [f["code"] for f in record["findings"]]) == ("warning", ["no_gpu"])
    assert why in record["findings"][0]["message"]
    # A node meant to have none says so.
    assert fleet_model({"n1": {"nvidia": facts, "expected_gpu_count": 0}})["nodes"][0]["status"] == "ok"


def test_the_expected_gpu_count_is_judged_as_gpu_health_does(gather):
    facts = gather("dgx-h100")
    for expected in (9, "9"):
        record = fleet_model({"n1": {"nvidia": facts, "expected_gpu_count": expected}})["nodes"][0]
        assert (record["status"], record["findings"][0]["code"]) == ("critical", "gpu_count_low")
    assert fleet_model({"n1": {"nvidia": facts, "expected_gpu_count": "8"}})["nodes"][0]["status"] == "ok"
    for wrong in ("eight", -1, True, 1.5):
        with pytest.raises(ReportError, match="node n1: expected_gpu_count must be a whole number"):
            fleet_model({"n1": {"nvidia": facts, "expected_gpu_count": wrong}})


def test_the_html_takes_a_model_with_odd_numbers_and_labels(gather):
    model = fleet_model({"n1": {"nvidia": gather("dgx-h100")}})
    gpu = model["nodes"][0]["gpus"][0]
    gpu.update(memory_used_mib=NAN, memory_total_mib=INF, power_draw_w=10 ** 400, temperature_c=-INF)
    model["nodes"][0]["topology"]["matrix"][0][1] = 18
    page = render_html(model, "Fleet", GENERATED)
    assert "<td>nan / inf MiB</td>" in page and ">18</text>" in page


@pytest.mark.parametrize("args, message", [
    (([],), "nodes must be a dict"),
    (({"n1": "facts"},), "node n1: must be a dict"),
    (({"n1": {"nvidia": [1]}},), "node n1: nvidia must be a dict"),
    (({"n1": {"validation": {"pytorch": "ok"}}},), "node n1: validation.pytorch must be"),
    (({}, ["n2"]), "unreachable must be a dict"),
    (({}, None, "n2"), "failed must be a dict"),
])
def test_input_that_is_not_facts_is_refused(args, message):
    with pytest.raises(ReportError, match=re.escape(message)):
        fleet_model(*args)


def test_render_refuses_what_is_not_a_model():
    with pytest.raises(ReportError, match="what fleet_report_model returns"):
        render_html({"nodes": []}, "Fleet", GENERATED)


def test_a_fleet_of_500_nodes_stays_small(gather, fabric):
    healthy, lost, ib = gather("dgx-h100"), gather("gpu-lost"), _ib.collect(fabric("dgx-h100"))
    old = dict(healthy, driver_version="535.161.08", cuda_driver_version="12.2")
    records = {"pytorch": validation(), "tensorflow": validation("tensorflow", fp32=260.0, low=610.0)}
    nodes = {}
    for i in range(500):
        facts = lost if i % 97 == 0 else old if i % 10 == 0 else healthy
        nodes["gpu%03d" % i] = {"nvidia": facts, "ib": ib, "validation": records,
                                "slurm": {"state": "MIXED", "reason": None},
                                "versions": {"cuda_toolkit": "12.4.1", "pytorch": "2.5.1", "nccl": "2.21.5"}}
    model = fleet_model(nodes, unreachable={"gpu%03d" % i: "timeout" for i in range(500, 505)})
    lost_nodes = len(range(0, 500, 97))
    assert (model["summary"]["nodes"], model["summary"]["gpus"]) == (505, (500 - lost_nodes) * 8 + lost_nodes * 4)
    assert len(json.dumps(model)) < 20 * 1024 * 1024
    page = render_html(model, "Fleet", GENERATED)
    assert len(page.encode("utf-8")) < 5 * 1024 * 1024
    assert page.count('<div class="n ') == 500
