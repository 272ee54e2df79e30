"""The exporter's judgement of the node's CDI specs (module_utils/_exporter.py's CdiJudge): the spec that gpu_cdi
writes, judged with the real pynvml against the fake NVML as gpu_health judges it, in the scrape's health verdict and
findings; judged again only when what it can see cheaply changes."""

from __future__ import annotations

import os

import pytest
from promtext import parse, value
from test_gpu_health import cdi_codes, spec_node  # noqa: F401  # pylint: disable=unused-import  # a fixture

from ansible_collections.accelops.gpu.plugins.module_utils import _cdi, _exporter
from ansible_collections.accelops.gpu.plugins.modules import gpu_cdi, gpu_mig


def judge(node, **extra):
    host = _cdi.Host(str(node.root), None, node.path("/sys"), node.path("/proc"))
    return _exporter.CdiJudge([node.path("/etc/cdi/nvidia.yaml"), node.path("/var/run/cdi/nvidia.yaml")], host,
                              **extra)


def scrape(node, cdi):
    return parse(_exporter.scrape("node1", node.path("/sys"), cdi=cdi))


def cdi_findings(families):
    return sorted((labels["gpu"], labels["code"], labels["severity"])
                  for labels, _value in families["accelops_gpu_health_finding"]["samples"]
                  if labels["code"].startswith("cdi_"))


@pytest.mark.parametrize("name", ["dgx-h100", "dgx-a100-mig"])
def test_a_true_spec_is_no_finding(spec_node, name):  # noqa: F811
    spec_node.start(name)
    cdi = judge(spec_node)
    families = scrape(spec_node, cdi)
    assert value(families, "accelops_gpu_health_status") == 0
    assert cdi_findings(families) == [] and cdi.judged == 1


def test_a_mig_change_is_a_warning_until_the_spec_is_written_again(spec_node, module_result):  # noqa: F811
    spec_node.start("dgx-a100-mig")
    cdi = judge(spec_node)
    assert cdi_findings(scrape(spec_node, cdi)) == []
    rc, changed = module_result(gpu_mig, {"gpus": [0], "layout": ["3g.40gb", "3g.40gb"]})
    assert rc == 0 and changed["changed"], changed
    families = scrape(spec_node, cdi)
    assert value(families, "accelops_gpu_health_status") == 1
    found = cdi_findings(families)
    assert ("0", "cdi_device_missing", "warning") in found and ("", "cdi_device_extra", "warning") in found
    # The same as gpu_health says of the node.
    rc, health = spec_node.health()
    assert rc == 0 and sorted(("" if g is None else str(g), c, s) for g, c, s in cdi_codes(health)) == found
    # The MIG devices changed: judged again (2); the spec written again: judged again, and true.
    assert cdi.judged == 2
    assert module_result(gpu_cdi, spec_node.args())[0] == 0
    families = scrape(spec_node, cdi)
    assert cdi_findings(families) == [] and value(families, "accelops_gpu_health_status") == 0
    assert cdi.judged == 3


def test_judged_again_only_when_something_changes(spec_node):  # noqa: F811
    spec_node.start("dgx-h100")
    cdi = judge(spec_node)
    for _round in range(3):
        scrape(spec_node, cdi)
    assert cdi.judged == 1
    # The spec touched (a new inode through gpu_cdi's rename, or a new mtime): judged again.
    spec = spec_node.path("/etc/cdi/nvidia.yaml")
    with open(spec, "a", encoding="ascii") as handle:
        handle.write("# edited\n")
    scrape(spec_node, cdi)
    assert cdi.judged == 2
    # And after recheck_s whatever happened.
    every = judge(spec_node, recheck_s=0)
    for _round in range(2):
        scrape(spec_node, every)
    assert every.judged == 2


def test_a_driver_change_is_a_warning(spec_node):  # noqa: F811
    fixture, _spec = spec_node.start("dgx-h100")
    cdi = judge(spec_node)
    scrape(spec_node, cdi)
    with fixture.open("a") as handle:
        handle.write("driver_version=550.127.08\n")
    spec_node.driver("550.127.08")
    families = scrape(spec_node, cdi)
    assert cdi_findings(families) == [("", "cdi_driver_version", "warning")]
    assert value(families, "accelops_gpu_health_status") == 1


def test_a_critical_node_stays_critical_and_nvml_down_judges_nothing(spec_node, nvml_fixture):  # noqa: F811
    fixture, _spec = spec_node.start("dgx-h100")
    with fixture.open("a") as handle:
        handle.write("gpu.6.ecc.volatile.uncorrected=2\ndriver_version=550.127.08\n")
    spec_node.driver("550.127.08")
    cdi = judge(spec_node)
    families = scrape(spec_node, cdi)
    assert value(families, "accelops_gpu_health_status") == 2
    assert ("", "cdi_driver_version", "warning") in cdi_findings(families)
    nvml_fixture("driver-not-loaded")
    cdi = judge(spec_node)
    families = scrape(spec_node, cdi)
    assert value(families, "accelops_gpu_health_status") == 3 and cdi_findings(families) == []
    assert cdi.judged == 0


def test_a_spec_that_is_no_file_is_a_warning_not_a_crash(spec_node):  # noqa: F811
    spec_node.start("dgx-h100")
    cdi = judge(spec_node)
    spec = spec_node.path("/var/run/cdi/nvidia.yaml")
    os.makedirs(spec)
    families = scrape(spec_node, cdi)
    assert cdi_findings(families) == [("", "cdi_spec_invalid", "warning")]
    assert "accelops_gpu_exporter_error_info" not in families


@pytest.mark.parametrize("argv, message", [
    (["--cdi-spec", "etc/cdi/nvidia.yaml"], "--cdi-spec: give an absolute file path"),
    (["--cdi-spec", "/etc/cdi/nvidia.txt"], "--cdi-spec: /etc/cdi/nvidia.txt must end in .yaml or .json"),
    (["--cdi-spec", "/etc/cdi/a.yaml", "--no-cdi"], "--cdi-spec and --no-cdi exclude each other"),
    (["--proc-root", "proc"], "--proc-root: an absolute directory on one line"),
    (["--driver-root", "/nonexistent-root"], "--driver-root: an absolute directory on one line"),
])
def test_bad_cdi_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _exporter.main(["--textfile", "x.prom", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_spec_with_a_field_of_the_wrong_type_is_not_healthy(spec_node):  # noqa: F811
    """A runtime refuses a spec whose device node's hostPath is a number (a spec in JSON, whose numbers are numbers):
    the exporter says so, never healthy."""
    import json

    import yaml

    _fixture, spec = spec_node.start("dgx-h100")
    data = yaml.safe_load(open(spec, encoding="utf-8").read())
    data["devices"][0]["containerEdits"]["deviceNodes"][0]["hostPath"] = 1
    with open(spec, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(data))
    families = scrape(spec_node, judge(spec_node))
    assert cdi_findings(families) == [("", "cdi_spec_invalid", "warning")]
    assert value(families, "accelops_gpu_health_status") == 1


def test_a_judgement_that_breaks_is_a_warning_not_a_failed_scrape(spec_node, monkeypatch):  # noqa: F811
    """Whatever the judgement trips over (here a comparison that raises on a spec it did not foresee) is a
    cdi_unjudged warning: the GPUs' metrics stay, the verdict is not healthy, and the next scrapes do not judge again
    until something changes."""
    spec_node.start("dgx-h100")

    def broken(*_args, **_kwargs):
        raise TypeError("'NoneType' object is not iterable")

    monkeypatch.setattr(_cdi, "compare", broken)
    cdi = judge(spec_node)
    for _round in range(3):
        families = scrape(spec_node, cdi)
        assert "accelops_gpu_exporter_error_info" not in families
        assert cdi_findings(families) == [("", "cdi_unjudged", "warning")]
        assert value(families, "accelops_gpu_health_status") == 1
    assert cdi.judged == 1
