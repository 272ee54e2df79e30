"""The GPU exporter (_exporter): one scrape through the real collector, the real pynvml and the fake libnvidia-ml.so.1,
served over HTTP on a loopback port and written as a node_exporter textfile; failures are series, never a crash."""

from __future__ import annotations

import os
import stat
import threading
import urllib.error
import urllib.request

import pynvml
import pytest
from promtext import parse, value

from ansible_collections.accelops.gpu.plugins.module_utils import _exporter


class Broken:
    """pynvml with one entry point that raises what no NVML wrapper expects."""

    def __getattr__(self, name):
        return getattr(pynvml, name)

    def nvmlDeviceGetCount(self):  # pynvml's name
        raise RuntimeError("the reading went wrong")


def test_a_scrape_of_the_dgx_h100(nvml_fixture):
    nvml_fixture("dgx-h100")
    families = parse(_exporter.scrape("node1"))
    assert value(families, "accelops_gpu_nvml_up") == 1
    assert value(families, "accelops_gpu_count") == 8
    assert len(families["DCGM_FI_DEV_GPU_TEMP"]["samples"]) == 8
    assert value(families, "accelops_gpu_health_status") == 0
    assert value(families, "accelops_gpu_scrape_duration_seconds") > 0
    # One NVML session: init and shutdown aside, the facts' reads; no topology queries.
    calls = value(families, "accelops_gpu_scrape_nvml_calls")
    assert 100 < calls < 2000
    assert "accelops_gpu_exporter_error_info" not in families


def test_a_lost_gpu_scrapes_as_critical(nvml_fixture):
    nvml_fixture("gpu-lost")
    families = parse(_exporter.scrape("node1"))
    assert value(families, "accelops_gpu_lost", gpu=2) == 1
    assert value(families, "accelops_gpu_health_status") == 2


def test_a_reading_that_raises_is_a_series_not_a_crash(nvml_fixture):
    nvml_fixture("dgx-h100")
    families = parse(_exporter.scrape("node1", lib=Broken()))
    assert value(families, "accelops_gpu_nvml_up") == 0
    assert value(families, "accelops_gpu_health_status") == 3
    error = families["accelops_gpu_exporter_error_info"]["samples"][0][0]["error"]
    assert error == "RuntimeError: the reading went wrong"
    assert "accelops_gpu_count" not in families
    assert not any(name.startswith("DCGM_") for name in families)


class NoLibrary:
    """pynvml on a node without libnvidia-ml.so.1."""

    def __getattr__(self, name):
        return getattr(pynvml, name)

    def nvmlInit(self):  # pynvml's name
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)


def test_nvml_missing_is_down_and_unknown(nvml_fixture):
    nvml_fixture("dgx-h100")
    families = parse(_exporter.scrape("node1", lib=NoLibrary()))
    assert value(families, "accelops_gpu_nvml_up") == 0
    assert value(families, "accelops_gpu_health_status") == 3
    assert "libnvidia-ml.so.1" in families["accelops_gpu_nvml_down_info"]["samples"][0][0]["reason"]
    assert "accelops_gpu_exporter_error_info" not in families
    assert "accelops_gpu_count" not in families


@pytest.fixture
def server(nvml_fixture):
    nvml_fixture("dgx-h100")
    httpd = _exporter.make_server("127.0.0.1", 0, "node1")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


def test_served_over_http(server):
    with urllib.request.urlopen(server + "/metrics", timeout=30) as reply:
        assert reply.status == 200
        assert reply.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        families = parse(reply.read().decode("utf-8"))
    assert value(families, "DCGM_FI_DEV_GPU_TEMP", gpu=0, Hostname="node1") == 33
    with urllib.request.urlopen(server + "/", timeout=30) as reply:
        assert b"/metrics" in reply.read()
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(server + "/other", timeout=30)
    assert missing.value.code == 404


def test_textfile_is_written_whole(nvml_fixture, tmp_path):
    nvml_fixture("dgx-h100")
    (tmp_path / "textfiles").mkdir()
    target = tmp_path / "textfiles" / "gpu.prom"
    target.write_text("old\n")
    assert _exporter.main(["--textfile", str(target), "--hostname", "node1"]) == 0
    families = parse(target.read_text())
    assert value(families, "accelops_gpu_count") == 8
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o644
    assert sorted(os.listdir(tmp_path / "textfiles")) == ["gpu.prom"]


def test_textfile_refusals(nvml_fixture, tmp_path, capsys):
    nvml_fixture("dgx-h100")
    (tmp_path / "textfiles").mkdir()
    assert _exporter.main(["--textfile", str(tmp_path / "textfiles" / "gpu.txt")]) == 1
    assert "must end in .prom" in capsys.readouterr().err
    assert _exporter.main(["--textfile", str(tmp_path / "missing" / "gpu.prom")]) == 1
    assert "No such file or directory" in capsys.readouterr().err
    assert os.listdir(tmp_path / "textfiles") == []


@pytest.mark.parametrize("listen, parsed", [
    (":9400", ("", 9400)), ("127.0.0.1:9500", ("127.0.0.1", 9500)), ("[::1]:9400", ("::1", 9400)),
    ("node1.example:1", ("node1.example", 1)),
])
def test_listen(listen, parsed):
    assert _exporter.parse_listen(listen) == parsed


@pytest.mark.parametrize("listen", ["9400", ":0", ":65536", "host:", "host:port", "a b:9400", ":-1"])
def test_listen_refused(listen):
    with pytest.raises(ValueError, match=r"^--listen"):
        _exporter.parse_listen(listen)


def test_main_says_why_it_cannot_listen(capsys):
    assert _exporter.main(["--listen", "host:port"]) == 1
    assert capsys.readouterr().err.startswith("accelops-gpu-exporter: cannot listen on host:port: --listen must be")


def test_hostname_must_be_one_line():
    with pytest.raises(SystemExit) as exit_info:
        _exporter.main(["--textfile", "x.prom", "--hostname", "a\nb"])
    assert exit_info.value.code == 2
