"""GPU facts in Prometheus' text format (_metrics): the fixtures' facts through the real collector, the real pynvml and
the fake libnvidia-ml.so.1, every line checked against the exposition format, and dcgm-exporter's names and labels."""

from __future__ import annotations

import pytest
from promtext import parse, value

from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import GpuFactsCollector, resolve_subsets
from ansible_collections.accelops.gpu.plugins.module_utils._metrics import (
    GPU_FAMILIES,
    Exposition,
    exposition,
    nvml_bus_id,
)
from ansible_collections.accelops.gpu.plugins.module_utils._nvml import NvmlSession

H100_UUID = "GPU-5b357cbf-a18f-4d4b-a1fa-e80574e9a835"


@pytest.fixture
def scrape(nvml_fixture):
    def gather(name, subsets=("all",)):
        nvml_fixture(name)
        with NvmlSession() as session:
            facts = GpuFactsCollector(session, resolve_subsets(list(subsets))).collect()
        return parse(exposition(facts, "node1")), facts

    return gather


def test_dgx_h100_as_dcgm_exporter_names_it(scrape):
    families, facts = scrape("dgx-h100")
    gpu0 = facts["gpus"][0]
    labels, temp = families["DCGM_FI_DEV_GPU_TEMP"]["samples"][0]
    assert labels == {"gpu": "0", "UUID": H100_UUID, "pci_bus_id": "00000000:18:00.0", "device": "nvidia0",
                      "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "node1", "DCGM_FI_DRIVER_VERSION": "550.54.15"}
    assert temp == gpu0["temperature_c"]
    assert families["DCGM_FI_DEV_GPU_TEMP"]["type"] == "gauge"
    assert families["DCGM_FI_DEV_GPU_TEMP"]["help"] == "GPU temperature (in C)."
    assert families["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"]["type"] == "counter"
    # Every GPU family has one sample per GPU that NVML answered it for, read from that GPU's facts; the H100 SXM has
    # no fan and no page retirement (row remapping took its place), so those two families stay empty.
    empty = set()
    for name, _kind, _text, read in GPU_FAMILIES:
        answered = [gpu for gpu in facts["gpus"] if read(gpu) is not None]
        assert len(families[name]["samples"]) == len(answered), name
        if not answered:
            empty.add(name)
        for gpu in answered:
            assert value(families, name, gpu=gpu["index"]) == float(read(gpu)), name
    assert empty == {"DCGM_FI_DEV_FAN_SPEED", "DCGM_FI_DEV_RETIRED_PENDING"}
    assert value(families, "DCGM_FI_DEV_POWER_USAGE", gpu=3) == facts["gpus"][3]["power_draw_w"]
    assert value(families, "DCGM_FI_DEV_FB_USED", gpu=0) + value(families, "DCGM_FI_DEV_FB_FREE", gpu=0) == \
        gpu0["memory_total_mib"]
    assert value(families, "accelops_gpu_nvml_up") == 1
    assert value(families, "accelops_gpu_count") == 8
    assert value(families, "accelops_gpu_health_status") == 0
    assert families["accelops_gpu_health_finding"]["samples"] == []
    info = families["accelops_gpu_driver_info"]["samples"][0][0]
    assert info == {"Hostname": "node1", "driver_version": "550.54.15", "cuda_driver_version": "12.4",
                    "nvml_version": "12.550.54.15"}
    assert len(families["accelops_gpu_nvlink_up"]["samples"]) == 8 * 18
    assert {v for _labels, v in families["accelops_gpu_nvlink_up"]["samples"]} == {1.0}
    assert value(families, "accelops_gpu_clocks_event_reason", gpu=0, reason="gpu_idle") == 1
    assert value(families, "accelops_gpu_lost", gpu=5) == 0


def test_a_lost_gpu_is_critical_and_has_no_readings(scrape):
    families, facts = scrape("gpu-lost")
    assert [gpu["index"] for gpu in facts["gpus"] if gpu["lost"]] == [2]
    assert value(families, "accelops_gpu_lost", gpu=2) == 1
    assert value(families, "accelops_gpu_lost", gpu=1) == 0
    assert [labels["gpu"] for labels, _v in families["DCGM_FI_DEV_GPU_TEMP"]["samples"]] == [
        str(gpu["index"]) for gpu in facts["gpus"] if not gpu["lost"]]
    assert len(facts["gpus"]) > 2
    assert value(families, "accelops_gpu_health_status") == 2
    finding = families["accelops_gpu_health_finding"]["samples"]
    assert finding == [({"Hostname": "node1", "gpu": "2", "code": "gpu_lost", "severity": "critical",
                         "message": "GPU 2 is lost: it fell off the bus or stopped answering"}, 1.0)]


def test_mig_devices_carry_their_profile_and_instance(scrape):
    families, facts = scrape("dgx-a100-mig")
    mig = facts["gpus"][1]["mig_devices"][0]
    labels = {"gpu": "1", "GPU_I_PROFILE": "3g.40gb", "GPU_I_ID": "2"}
    assert value(families, "DCGM_FI_DEV_FB_USED", **labels) == mig["memory_used_mib"]
    assert value(families, "DCGM_FI_DEV_FB_TOTAL", **labels) == mig["memory_total_mib"]
    assert value(families, "DCGM_FI_DEV_FB_FREE", **labels) == mig["memory_total_mib"] - mig["memory_used_mib"]
    whole = [labels for labels, _v in families["DCGM_FI_DEV_FB_USED"]["samples"] if "GPU_I_ID" not in labels]
    assert len(whole) == 8
    assert len(families["DCGM_FI_DEV_FB_USED"]["samples"]) == 8 + 10
    assert value(families, "accelops_gpu_compute_processes", gpu=1) == 1


@pytest.mark.parametrize("fixture", ["driver-not-loaded"])
def test_nvml_that_does_not_answer_is_never_zero_gpus_or_healthy(scrape, fixture):
    families, facts = scrape(fixture)
    assert not facts["driver_loaded"]
    assert value(families, "accelops_gpu_nvml_up") == 0
    assert "accelops_gpu_count" not in families
    assert value(families, "accelops_gpu_health_status") in (2, 3)
    reason = families["accelops_gpu_nvml_down_info"]["samples"][0][0]["reason"]
    assert "not loaded" in reason
    assert not any(name.startswith("DCGM_") for name in families)


def test_nvml_missing_reads_unknown(fake_nvml_lib):
    facts = {"pynvml_available": True, "nvml_available": False, "driver_loaded": False,
             "reason": 'libnvidia-ml.so.1 cannot be loaded: "no such file"', "gpu_count": None, "gpus": [],
             "health": {"status": "ok", "findings": []}}
    families = parse(exposition(facts, "node1"))
    assert value(families, "accelops_gpu_nvml_up") == 0
    assert value(families, "accelops_gpu_health_status") == 3
    assert families["accelops_gpu_nvml_down_info"]["samples"][0][0]["reason"] == \
        'libnvidia-ml.so.1 cannot be loaded: "no such file"'


def test_a_node_without_gpus_says_so(scrape):
    families, _facts = scrape("no-gpu")
    assert value(families, "accelops_gpu_nvml_up") == 1
    assert value(families, "accelops_gpu_count") == 0
    assert families["DCGM_FI_DEV_GPU_TEMP"]["samples"] == []


def test_label_values_are_escaped():
    out = Exposition()
    out.add("x_total", "counter", "help with \\ and\nnewline", [("l", 'q"\n\\')], 3)
    assert out.text() == ('# HELP x_total help with \\\\ and\\nnewline\n# TYPE x_total counter\n'
                          'x_total{l="q\\"\\n\\\\"} 3.0\n')
    assert parse(out.text())["x_total"]["samples"] == [({"l": 'q"\n\\'}, 3.0)]


def test_text_utf8_cannot_hold_is_replaced_not_a_failed_scrape():
    out = Exposition()
    out.add("a", "gauge", "h", [("reason", "bad \udcff byte")], 1)
    assert value(parse(out.text()), "a", reason="bad ? byte") == 1


def test_dcgm_exporters_counters_keep_their_names():
    """prometheus_client writes a counter's HELP and TYPE as NAME_total; dcgm-exporter's counters have no _total, and
    their HELP and TYPE lines name the samples' name as dcgm-exporter writes them (empty families too)."""
    out = Exposition()
    out.add("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "h", [("gpu", 0)], 2)
    out.declare("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "e")
    out.add("accelops_gpu_xid_errors_total", "counter", "x", [("gpu", 0)], 1)
    assert out.text() == (
        "# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL h\n# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter\n"
        'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="0"} 2.0\n'
        "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION e\n# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
        '# HELP accelops_gpu_xid_errors_total x\n# TYPE accelops_gpu_xid_errors_total counter\n'
        'accelops_gpu_xid_errors_total{gpu="0"} 1.0\n')


@pytest.mark.parametrize("bus_id, nvml", [
    ("0000:18:00.0", "00000000:18:00.0"), ("0000:0f:00.0", "00000000:0F:00.0"),
    ("00000000:0F:00.0", "00000000:0F:00.0"),
    ("", ""), (None, None),
])
def test_nvml_bus_id(bus_id, nvml):
    assert nvml_bus_id(bus_id) == nvml


def test_values_must_be_numbers():
    out = Exposition()
    out.add("a", "gauge", "h", [], None)
    assert out.text() == ""
    out.add("a", "gauge", "h", [], float("nan"))
    out.add("b", "gauge", "h", [], 2.5)
    assert out.text() == "# HELP a h\n# TYPE a gauge\na NaN\n# HELP b h\n# TYPE b gauge\nb 2.5\n"
    # A reading of the wrong kind is left out, not a crash of the whole scrape.
    for wrong in ("12", [1], {"a": 1}, object()):
        out.add("c", "gauge", "h", [], wrong)
    assert "c" not in parse(out.text())


def test_a_series_is_never_written_twice():
    """Prometheus refuses the whole scrape when one series comes twice: the second sample is left out."""
    out = Exposition()
    out.add("a", "gauge", "h", [("gpu", 0)], 1)
    out.add("a", "gauge", "h", [("gpu", "0")], 2)
    out.add("a", "gauge", "h", [("gpu", 1)], 3)
    assert out.text() == '# HELP a h\n# TYPE a gauge\na{gpu="0"} 1.0\na{gpu="1"} 3.0\n'


@pytest.mark.parametrize("broken", [
    {"gpus": [None, "x", 3]},
    {"gpus": "eight"},
    {"gpus": [{"index": 0, "uuid": "GPU-1", "nvlinks": [None, {"index": 1, "active": True}], "mig_devices": ["x"],
               "clocks_event_reasons": "gpu_idle", "errors": 5, "temperature_c": "hot", "ecc_errors": [1]}]},
    {"health": {"status": "ok", "findings": [None, "x"]}, "errors": 7},
])
def test_facts_of_the_wrong_shape_are_left_out_not_a_failed_scrape(broken):
    facts = {"nvml_available": True, "driver_loaded": True, "gpu_count": 1, "gpus": [],
             "health": {"status": "ok", "findings": []}}
    facts.update(broken)
    families = parse(exposition(facts, "node1"))
    assert value(families, "accelops_gpu_nvml_up") == 1
    assert "DCGM_FI_DEV_GPU_TEMP" in families


def test_energy_is_dcgm_exporters_counter_in_millijoules(scrape):
    families, facts = scrape("dgx-h100")
    assert facts["gpus"][0]["energy_mj"] == 71234 * 259200
    assert families["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]["type"] == "counter"
    assert value(families, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu=0) == 71234 * 259200
    # A GPU whose driver does not give it (the fixture without the key): no sample, not 0.
    families, _facts = scrape("old-driver")
    assert families["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]["samples"] == []


def test_jobs_label_their_gpus_as_dcgm_exporters_hpc_job(scrape, tmp_path):
    """A GPU that a job holds has every series with hpc_job; one that two jobs share (shards), every series once per
    job; the others none; the node's name in the label chosen."""
    from ansible_collections.accelops.gpu.plugins.module_utils import _job_map
    from ansible_collections.accelops.gpu.plugins.module_utils._metrics import Node, collect

    _families, facts = scrape("dgx-h100")
    (tmp_path / "map").mkdir()
    (tmp_path / "map" / "1").write_text("4711\n")
    (tmp_path / "map" / "2").write_text("50\n51\n")
    (tmp_path / "map" / "9").write_text("60\n")  # no such GPU: no series, and a problem of the map
    families = parse(collect(facts, Node("node1", "hostname"), jobs=_job_map.read(str(tmp_path / "map"))).text())
    samples = families["DCGM_FI_DEV_GPU_TEMP"]["samples"]
    assert [(labels["gpu"], labels.get("hpc_job")) for labels, _value in samples] == [
        ("0", None), ("1", "4711"), ("2", "50"), ("2", "51"), ("3", None), ("4", None), ("5", None), ("6", None),
        ("7", None)]
    assert all(labels["hostname"] == "node1" and "Hostname" not in labels for labels, _value in samples)
    assert value(families, "DCGM_FI_DEV_GPU_UTIL", gpu=2, hpc_job="51") == facts["gpus"][2]["utilization_gpu_pct"]
    assert value(families, "accelops_gpu_compute_processes", gpu=1, hpc_job="4711") == \
        len(facts["gpus"][1]["processes"])
    assert value(families, "accelops_gpu_job_map_problems", hostname="node1") == 1
    assert value(families, "accelops_gpu_nvml_up", hostname="node1") == 1
    # No map read: no job label and no problem count.
    plain = parse(collect(facts, "node1").text())
    assert "accelops_gpu_job_map_problems" not in plain
    assert all("hpc_job" not in labels for labels, _value in plain["DCGM_FI_DEV_GPU_TEMP"]["samples"])


def test_the_node_label_is_one_of_dcgm_exporters():
    from ansible_collections.accelops.gpu.plugins.module_utils._metrics import Node

    with pytest.raises(ValueError, match="Hostname, hostname"):
        Node("node1", "host")


def test_a_job_map_of_gpus_nvml_does_not_list_is_counted_only_where_nvml_answered(scrape, tmp_path):
    """A file for a GPU index that NVML does not list (the map numbers GPUs otherwise, or names one that is gone)
    hides its jobs: a problem of the map. Where NVML does not answer there is no list to compare with."""
    from ansible_collections.accelops.gpu.plugins.module_utils import _job_map
    from ansible_collections.accelops.gpu.plugins.module_utils._metrics import collect

    _families, facts = scrape("dgx-h100")
    (tmp_path / "map").mkdir()
    (tmp_path / "map" / "0").write_text("1\n")
    (tmp_path / "map" / "8").write_text("2\n3\n")
    (tmp_path / "map" / "12").write_text("4\n")
    jobs = _job_map.read(str(tmp_path / "map"))
    assert value(parse(collect(facts, "node1", jobs=jobs).text()), "accelops_gpu_job_map_problems") == 2
    down = dict(facts, nvml_available=False, gpus=[], gpu_count=None)
    assert value(parse(collect(down, "node1", jobs=jobs).text()), "accelops_gpu_job_map_problems") == 0
