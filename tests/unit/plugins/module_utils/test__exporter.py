"""The GPU exporter (_exporter): one scrape through the real collector, the real pynvml and the fake libnvidia-ml.so.1,
served over HTTP on a loopback port and written as a node_exporter textfile; failures are series, never a crash."""

from __future__ import annotations

import base64
import datetime
import http.client
import ipaddress
import json
import os
import socket
import ssl
import stat
import threading
import time
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
    # HEAD: the headers of a GET, no body (a load balancer's or an operator's check).
    with urllib.request.urlopen(urllib.request.Request(server + "/metrics", method="HEAD"), timeout=30) as reply:
        assert reply.status == 200 and int(reply.headers["Content-Length"]) > 1000
        assert reply.read() == b""


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


def test_textfile_with_the_jobs_on_each_gpu(nvml_fixture, tmp_path):
    """--hpc-job-mapping-dir and --hostname-label as dcgm-exporter's: the map is read at every round."""
    nvml_fixture("dgx-h100")
    (tmp_path / "textfiles").mkdir()
    (tmp_path / "map").mkdir()
    (tmp_path / "map" / "3").write_text("4711\n")
    target = tmp_path / "textfiles" / "gpu.prom"
    argv = ["--textfile", str(target), "--hostname", "node1", "--hostname-label", "hostname",
            "--hpc-job-mapping-dir", str(tmp_path / "map")]
    assert _exporter.main(argv) == 0
    families = parse(target.read_text())
    assert value(families, "DCGM_FI_DEV_GPU_TEMP", gpu=3, hpc_job="4711", hostname="node1") == 32
    assert [labels.get("hpc_job") for labels, _value in families["DCGM_FI_DEV_GPU_TEMP"]["samples"]] == \
        [None, None, None, "4711", None, None, None, None]
    assert value(families, "accelops_gpu_scrape_nvml_calls", hostname="node1") > 0
    # The job ended: its label is gone at the next reading.
    (tmp_path / "map" / "3").unlink()
    assert _exporter.main(argv) == 0
    families = parse(target.read_text())
    assert all("hpc_job" not in labels for labels, _value in families["DCGM_FI_DEV_GPU_TEMP"]["samples"])
    assert value(families, "accelops_gpu_job_map_problems", hostname="node1") == 0


def test_textfile_refusals(nvml_fixture, tmp_path, capsys):
    nvml_fixture("dgx-h100")
    (tmp_path / "textfiles").mkdir()
    assert _exporter.main(["--textfile", str(tmp_path / "textfiles" / "gpu.txt")]) == 1
    assert "must end in .prom" in capsys.readouterr().err
    assert _exporter.main(["--textfile", str(tmp_path / "missing" / "gpu.prom")]) == 1
    assert "No such file or directory" in capsys.readouterr().err
    assert os.listdir(tmp_path / "textfiles") == []
    # The target is a directory: refused, and the temporary file of its own removed; nothing else touched.
    (tmp_path / "textfiles" / "gpu.prom").mkdir()
    assert _exporter.main(["--textfile", str(tmp_path / "textfiles" / "gpu.prom")]) == 1
    assert "accelops-gpu-exporter: " in capsys.readouterr().err
    assert os.listdir(tmp_path / "textfiles") == ["gpu.prom"]


def test_textfile_never_writes_through_a_planted_name(nvml_fixture, tmp_path):
    """A link planted where a predictable temporary name would be is not followed: the temporary file is new."""
    nvml_fixture("dgx-h100")
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (tmp_path / "textfiles").mkdir()
    for pid in range(os.getpid() - 2, os.getpid() + 3):
        os.symlink(victim, tmp_path / "textfiles" / (".gpu.prom.%d.tmp" % pid))
    assert _exporter.main(["--textfile", str(tmp_path / "textfiles" / "gpu.prom"), "--hostname", "n"]) == 0
    assert victim.read_text() == "keep\n"
    assert value(parse((tmp_path / "textfiles" / "gpu.prom").read_text()), "accelops_gpu_count") == 8


@pytest.mark.parametrize("listen, parsed", [
    (":9400", ("", 9400)), ("127.0.0.1:9500", ("127.0.0.1", 9500)), ("[::1]:9400", ("::1", 9400)),
    ("node1.example:1", ("node1.example", 1)),
])
def test_listen(listen, parsed):
    assert _exporter.parse_listen(listen) == parsed


@pytest.mark.parametrize("listen", [
    "9400", ":0", ":65536", "host:", "host:port", "a b:9400", ":-1", ":\u0669\u0664\u0660\u0660", "[::1:9400",
    "::1:9400", "[]:9400", "h\u00f6st:9400", "a/b:9400",
])
def test_listen_refused(listen):
    with pytest.raises(ValueError, match=r"^--listen"):
        _exporter.parse_listen(listen)


def test_main_says_why_it_cannot_listen(capsys):
    assert _exporter.main(["--listen", "host:port"]) == 1
    assert capsys.readouterr().err.startswith("accelops-gpu-exporter: cannot listen on host:port: --listen must be")


HOSTNAME = "--hostname must be one line of UTF-8 text"
INTERVAL = "--interval goes with --textfile and is from 1 to 3600 seconds"
SYSFS_ROOT = "--sysfs-root must be one line of UTF-8 text"
JOB_MAP = "--hpc-job-mapping-dir must be an absolute path on one line"


@pytest.mark.parametrize("argv, message", [
    *[(["--textfile", "x.prom", "--hostname", hostname], HOSTNAME) for hostname in ["a\nb", "", "a\rb", "node\udcff"]],
    (["--interval", "5"], INTERVAL),
    (["--textfile", "x.prom", "--interval", "0.5"], INTERVAL),
    (["--textfile", "x.prom", "--interval", "7200"], INTERVAL),
    *[(["--textfile", "x.prom", "--sysfs-root", root], SYSFS_ROOT) for root in ["/sys\udcff", "/sys\n/x", ""]],
    *[(["--textfile", "x.prom", "--hpc-job-mapping-dir", path], JOB_MAP)
      for path in ["", "run/map", "/run/map\n", "/run/\udcff"]],
    (["--textfile", "x.prom", "--hostname-label", "host"], "invalid choice: 'host'"),
])
def test_bad_arguments_are_refused_with_usage_status(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _exporter.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_every_address_is_ipv6_and_ipv4(nvml_fixture):
    """:PORT listens on every address of both families where the host has IPv6 (IPv4-mapped), else on IPv4's."""
    nvml_fixture("dgx-h100")
    httpd = _exporter.make_server("", 0, "node1")
    try:
        port = httpd.server_address[1]
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=30) as reply:
            assert reply.status == 200
        if httpd.address_family == socket.AF_INET6:
            with urllib.request.urlopen("http://[::1]:%d/" % port, timeout=30) as reply:
                assert reply.status == 200
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_an_unknown_host_is_a_clear_refusal(capsys):
    assert _exporter.main(["--listen", "no-such-host.invalid:9400"]) == 1
    assert "cannot listen on no-such-host.invalid:9400: cannot resolve no-such-host.invalid" in capsys.readouterr().err


def test_textfile_every_interval_keeps_going_after_a_failed_write(nvml_fixture, tmp_path, monkeypatch, capsys):
    """As a service: a write that fails (the directory gone for a while) is said and tried again next round."""
    nvml_fixture("dgx-h100")
    monkeypatch.setattr(_exporter.time, "sleep", lambda seconds: None)
    target = tmp_path / "textfiles" / "gpu.prom"
    assert _exporter.textfile_loop(str(target), "n", interval=5, rounds=2) == 0
    assert "No such file or directory" in capsys.readouterr().err
    (tmp_path / "textfiles").mkdir()
    assert _exporter.textfile_loop(str(target), "n", interval=5, rounds=1) == 0
    assert value(parse(target.read_text()), "accelops_gpu_count") == 8


def until(condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within %s s" % timeout
        time.sleep(0.02)


def test_a_textfile_with_text_utf8_cannot_hold_is_still_written(tmp_path):
    target = tmp_path / "gpu.prom"
    _exporter.write_textfile(str(target), 'accelops_gpu_xid_watch_down_info{reason="bad \udcff byte"} 1\n')
    assert target.read_text(encoding="utf-8") == 'accelops_gpu_xid_watch_down_info{reason="bad ? byte"} 1\n'


def test_a_scrape_that_raises_outside_the_reading_answers_the_error_page(nvml_fixture, monkeypatch):
    nvml_fixture("dgx-h100")
    calls = []

    def read(*args, **_kwargs):
        calls.append(args)
        raise MemoryError("out of memory") if len(calls) == 1 else RuntimeError("no session")

    monkeypatch.setattr(_exporter, "read", read)
    text = _exporter._scrape_with(threading.Lock(), "node1", "/sys", None, None)
    families = parse(text)
    assert value(families, "accelops_gpu_nvml_up", Hostname="node1") == 0
    assert 'error="RuntimeError: no session"' in _exporter._scrape_with(threading.Lock(), "node1", "/sys", None, None)
    assert "MemoryError: out of memory" in text


@pytest.fixture
def watcher():
    started = []

    def start(lib=None):
        xid = _exporter.XidWatcher(threading.Lock(), lib, poll_s=0.02, retry_s=0.1).start()
        started.append(xid)
        return xid

    yield start
    for xid in started:
        xid.stop()


def test_xid_errors_are_counted_per_gpu_and_code(nvml_fixture, watcher):
    path = nvml_fixture("dgx-h100")
    with path.open("a") as fixture:
        fixture.write("gpu.5.xid.1=31\n")  # before the watch: not news
    xid = watcher()
    until(lambda: xid.up)
    assert xid.watched == list(range(8))
    with path.open("a") as fixture:
        fixture.write("gpu.3.xid.1=79\ngpu.3.xid.2=79\ngpu.0.xid.1=13\ngpu.3.xid.3=48\n")
    until(lambda: sum(xid.counts.values()) == 4)
    with xid.lock:
        families = parse(_exporter.scrape("node1", xid=xid.state()))
    assert value(families, "accelops_gpu_xid_watch_up") == 1
    assert value(families, "accelops_gpu_xid_errors_total", gpu=3, xid=79) == 2
    assert value(families, "accelops_gpu_xid_errors_total", gpu=3, xid=48) == 1
    assert value(families, "accelops_gpu_xid_errors_total", gpu=0, xid=13) == 1
    assert families["accelops_gpu_xid_errors_total"]["type"] == "counter"
    assert len(families["accelops_gpu_xid_errors_total"]["samples"]) == 3
    # dcgm-exporter's field: the last XID of each GPU, 0 where none came.
    assert value(families, "DCGM_FI_DEV_XID_ERRORS", gpu=3) == 48
    assert value(families, "DCGM_FI_DEV_XID_ERRORS", gpu=0) == 13
    assert value(families, "DCGM_FI_DEV_XID_ERRORS", gpu=5) == 0
    assert len(families["DCGM_FI_DEV_XID_ERRORS"]["samples"]) == 8


def test_a_lost_gpu_is_left_out_of_the_watch_and_its_xid_still_shows(nvml_fixture, watcher):
    path = nvml_fixture("gpu-lost")
    xid = watcher()
    until(lambda: xid.up)
    assert xid.watched == [0, 1, 3]
    with path.open("a") as fixture:
        fixture.write("gpu.1.xid.1=79\n")
    until(lambda: xid.counts)
    with xid.lock:
        families = parse(_exporter.scrape("node1", xid=xid.state()))
    assert value(families, "accelops_gpu_xid_errors_total", gpu=1, xid=79) == 1
    assert "gpu" not in [key for labels, _v in families["DCGM_FI_DEV_XID_ERRORS"]["samples"]
                         if labels.get("gpu") == "2" for key in labels]


def test_a_watch_that_cannot_start_says_why(nvml_fixture, watcher):
    nvml_fixture("dgx-h100")
    xid = watcher(lib=NoLibrary())
    until(lambda: xid.error and xid.error != "not started")
    with xid.lock:
        families = parse(_exporter.scrape("node1", xid=xid.state()))
    assert value(families, "accelops_gpu_xid_watch_up") == 0
    assert "libnvidia-ml.so.1" in families["accelops_gpu_xid_watch_down_info"]["samples"][0][0]["reason"]
    # The readings themselves are not the watcher's business: NVML answers the scrape.
    assert value(families, "accelops_gpu_nvml_up") == 1


def test_a_failing_wait_restarts_the_watch_and_keeps_the_counts(nvml_fixture):
    """NVML failing part-way (the third wait after each init): the watcher says why, starts again, and a Prometheus
    counter never goes back."""
    path = nvml_fixture("dgx-h100")
    with path.open("a") as fixture:
        fixture.write("fail.nvmlEventSetWait_v2=3+:UNKNOWN\n")
    xid = _exporter.XidWatcher(threading.Lock(), poll_s=0.02, retry_s=0.05)
    xid.counts[(1, 94)] = 1
    xid.last[1] = 94
    errors = []
    xid.start()
    try:
        until(lambda: errors.append(xid.error) or (len({e for e in errors if e and "nvmlEventSetWait" in e}) >= 1
              and len(errors) > 20))
    finally:
        xid.stop()
    assert any("nvmlEventSetWait" in (e or "") and "NVML error 999" in e for e in errors)
    assert not xid.up
    assert xid.counts == {(1, 94): 1} and xid.last == {1: 94}


def test_the_server_shows_the_watchers_counts(nvml_fixture, watcher):
    path = nvml_fixture("pcie-l40s")
    xid = watcher()
    until(lambda: xid.up)
    with path.open("a") as fixture:
        fixture.write("gpu.1.xid.1=63\n")
    until(lambda: xid.counts)
    httpd = _exporter.make_server("127.0.0.1", 0, "node1", watcher=xid)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % httpd.server_address[1], timeout=30) as reply:
            families = parse(reply.read().decode("utf-8"))
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert value(families, "accelops_gpu_xid_errors_total", gpu=1, xid=63) == 1


def test_the_server_bounds_what_clients_can_hold(nvml_fixture, monkeypatch):
    """A client that sends nothing is dropped at the request's deadline; scrapes beyond the limit get 503 at once, and
    the ones that queued share a reading younger than a second."""
    nvml_fixture("dgx-h100")
    monkeypatch.setattr(_exporter, "REQUEST_TIMEOUT_S", 2)
    monkeypatch.setattr(_exporter, "MAX_REQUESTS", 1)
    calls = []
    real = _exporter.read

    def slow(*args, **kwargs):
        calls.append(1)
        time.sleep(0.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(_exporter, "read", slow)
    httpd = _exporter.make_server("127.0.0.1", 0, "node1")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = "http://127.0.0.1:%d/metrics" % httpd.server_address[1]
    try:
        idle = socket.create_connection(httpd.server_address[:2], timeout=5)
        start = time.monotonic()
        assert idle.recv(1) == b""  # closed by the server
        assert time.monotonic() - start < 4
        idle.close()
        results = []

        def get():
            try:
                with urllib.request.urlopen(url, timeout=30) as reply:
                    results.append(reply.status)
            except urllib.error.HTTPError as error:
                results.append(error.code)

        first = threading.Thread(target=get)
        first.start()
        time.sleep(0.2)
        get()  # while the first holds the only slot
        first.join()
        assert sorted(results) == [200, 503]
        get()
        get()  # within a second of the last reading: the same reading
        assert results[-2:] == [200, 200] and len(calls) == 1
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_request_that_trickles_in_meets_one_deadline_not_one_per_read(nvml_fixture, monkeypatch):
    """A byte every 0.2 s never lets a read time out; the whole request has 1 s, and the server closes it then."""
    nvml_fixture("dgx-h100")
    monkeypatch.setattr(_exporter, "REQUEST_TIMEOUT_S", 1.0)
    httpd = _exporter.make_server("127.0.0.1", 0, "node1")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        client = socket.create_connection(httpd.server_address[:2], timeout=5)
        start = time.monotonic()
        closed = False
        for byte in b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:  # 20 s of bytes at this pace
            try:
                client.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.2)
            if time.monotonic() - start > 8:
                break
        if not closed:
            client.settimeout(5)
            try:
                closed = client.recv(1) == b""
            except OSError:
                closed = True
        client.close()
        assert closed and time.monotonic() - start < 8
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_answer_is_prometheus_text_of_the_library(server):
    """Whatever a client asks for in Accept (Prometheus asks for OpenMetrics first), the answer is the text format
    0.0.4, in which dcgm-exporter's counters keep their names."""
    request = urllib.request.Request(server + "/metrics", headers={
        "Accept": "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.1",
        "Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert reply.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert reply.headers.get("Content-Encoding") is None
        families = parse(reply.read().decode("utf-8"))
    assert families["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"]["type"] == "counter"
    assert reply.headers["Server"] == "accelops-gpu-exporter"


def test_other_methods_and_garbage_are_refused_without_a_traceback(server, capfd):
    host, port = server[len("http://"):].split(":")
    for request, status in [(b"POST /metrics HTTP/1.1\r\n\r\n", b"405"), (b"BREW\r\n\r\n", b"400"),
                            (b"\x16\x03\x01\x00\x05hello\r\n\r\n", b"400")]:
        with socket.create_connection((host, int(port)), timeout=10) as client:
            client.sendall(request)
            assert client.recv(4096).split(b" ")[1] == status
    # A client that asks and goes away before the answer: no trace of it.
    for _round in range(5):
        with socket.create_connection((host, int(port)), timeout=10) as client:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            client.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
    # Their readings go on (more at once than MAX_REQUESTS get 503 meanwhile); then the server answers as before.
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(server + "/metrics", timeout=30) as reply:
                assert reply.status == 200
                break
        except urllib.error.HTTPError as error:
            assert error.code == 503 and time.monotonic() < deadline
            time.sleep(0.1)
    assert "Traceback" not in capfd.readouterr().err


def test_a_gpu_lost_after_its_xid_keeps_its_series_when_the_watch_restarts(nvml_fixture):
    """XID 79 is how a GPU falls off the bus: the watch that starts again cannot register it, its count still shows.
    The fixture's fault ends each watch after 50 waits (about a second); the next one reads the fixture anew."""
    path = nvml_fixture("dgx-h100")
    with path.open("a") as fixture:
        fixture.write("fail.nvmlEventSetWait_v2=50+:UNKNOWN\n")
    xid = _exporter.XidWatcher(threading.Lock(), poll_s=0.02, retry_s=0.05).start()
    try:
        until(lambda: xid.up)
        with path.open("a") as fixture:
            fixture.write("gpu.2.xid.1=79\n")
        until(lambda: xid.counts)
        with path.open("a") as fixture:
            fixture.write("gpu.2.lost=1\n")
        starts = xid.starts
        until(lambda: xid.starts >= starts + 2)  # a whole watch began after the loss
        with xid.lock:
            families = parse(_exporter.scrape("node1", xid=xid.state()))
    finally:
        xid.stop()
    assert 2 in xid.watched
    assert value(families, "accelops_gpu_lost", gpu=2) == 1
    assert value(families, "accelops_gpu_xid_errors_total", gpu=2, xid=79) == 1


def test_a_second_start_does_not_start_a_second_watch(nvml_fixture):
    path = nvml_fixture("pcie-l40s")
    xid = _exporter.XidWatcher(threading.Lock(), poll_s=0.02, retry_s=0.1)
    try:
        assert xid.start() is xid.start()
        deadline = time.monotonic() + 20
        while not xid.up and time.monotonic() < deadline:
            time.sleep(0.02)
        assert xid.up, xid.error
        with path.open("a") as fixture:
            fixture.write("gpu.1.xid.1=63\n")
        while not xid.counts and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        assert xid.counts == {(1, 63): 1}
        assert xid.starts == 1
    finally:
        xid.stop()


# TLS and basic authentication from a web configuration file, as Prometheus' exporter toolkit reads it.

PASSWORD = "s3cret scrape"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A certificate for 127.0.0.1 with its key, and a bcrypt hash of PASSWORD (cost 4: a test, not a site)."""
    import bcrypt
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    where = tmp_path_factory.mktemp("pki")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    (where / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (where / "tls.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                      serialization.NoEncryption()))
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()
    return {"dir": where, "cert": str(where / "tls.crt"), "key": str(where / "tls.key"), "hash": hashed}


def web_config(path, **data):
    return _write(path, data)


@pytest.fixture
def secured(nvml_fixture, pki, tmp_path):
    """The exporter over TLS with one user, and an SSL context that trusts its certificate."""
    nvml_fixture("dgx-h100")
    config = web_config(tmp_path / "web.yml", tls_server_config={"cert_file": pki["cert"], "key_file": "tls.key"},
                        basic_auth_users={"prometheus": pki["hash"]})
    # A relative key_file is read from the configuration's directory, as the toolkit does.
    (tmp_path / "tls.key").write_bytes(open(pki["key"], "rb").read())
    httpd = _exporter.make_server("127.0.0.1", 0, "node1", web=_exporter.WebConfig.load(config))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    context = ssl.create_default_context(cafile=pki["cert"])
    yield httpd, "https://127.0.0.1:%d" % httpd.server_address[1], context
    httpd.shutdown()
    httpd.server_close()


def _get(url, context, user=None, password=None, timeout=30):
    request = urllib.request.Request(url)
    if user is not None:
        token = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        request.add_header("Authorization", "Basic " + token)
    try:
        with urllib.request.urlopen(request, context=context, timeout=timeout) as reply:
            return reply.status, reply.headers, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def test_tls_and_basic_auth_let_the_user_in_and_no_one_else(secured):
    _httpd, url, context = secured
    status, _headers, body = _get(url + "/metrics", context, "prometheus", PASSWORD)
    assert status == 200
    assert value(parse(body.decode()), "accelops_gpu_count") == 8
    # Again: the right answer is remembered (bcrypt's cost is paid once), and still checked.
    assert _get(url + "/metrics", context, "prometheus", PASSWORD)[0] == 200
    for user, password in [(None, None), ("prometheus", "wrong"), ("other", PASSWORD), ("prometheus", "x" * 100),
                           ("prometheus", PASSWORD + "\0")]:
        status, headers, body = _get(url + "/metrics", context, user, password)
        assert status == 401, (user, password)
        assert headers["WWW-Authenticate"] == 'Basic realm="accelops-gpu-exporter"'
        assert b"accelops_gpu" not in body
    assert _get(url + "/", context)[0] == 401
    # Plain HTTP on the TLS port gets nothing.
    with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
        urllib.request.urlopen(url.replace("https:", "http:") + "/metrics", timeout=10).read()


def test_scrapes_answer_while_many_slow_clients_are_connected(secured, capfd):
    """Clients that connect and say nothing (in the TLS handshake) and clients that send half a request hold neither a
    thread nor the exporter: a scrape still answers within its deadline. At most MAX_CONNECTIONS wait for their
    request; the oldest of them makes room."""
    httpd, url, context = secured
    httpd.max_connections = 8
    port = httpd.server_address[1]
    silent, halfway = [], []
    try:
        for _n in range(30):
            silent.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        for _n in range(30):
            sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                                       server_hostname="127.0.0.1")
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            halfway.append(sock)
        for _round in range(3):
            status, _headers, body = _get(url + "/metrics", context, "prometheus", PASSWORD, timeout=10)
            assert status == 200
            assert value(parse(body.decode()), "accelops_gpu_count") == 8
        assert httpd.connections <= 8 + 1
    finally:
        # They go away at once, some with a reset: no trace of them in the log.
        for number, sock in enumerate(silent + halfway):
            try:
                if number % 2:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                sock.close()
            except (OSError, ssl.SSLError):
                pass
    assert _get(url + "/metrics", context, "prometheus", PASSWORD, timeout=10)[0] == 200
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("data, message", [
    ([], "must be a mapping"),
    ({"tls_server_config": {"cert_file": "a", "key_file": "b"}, "http_server_config": {}},
     "unknown or unsupported keys http_server_config"),
    ({"tls_server_config": {"cert_file": "a", "key_file": "b", "client_ca_file": "c"}},
     "tls_server_config takes cert_file and key_file only"),
    ({"tls_server_config": {"cert_file": "a"}}, "tls_server_config needs cert_file and key_file"),
    ({"tls_server_config": {"cert_file": "a\nb", "key_file": "b"}}, "each a path on one line"),
    ({"tls_server_config": {"cert_file": "missing.crt", "key_file": "missing.key"}}, "cannot load the certificate"),
    ({"basic_auth_users": ["prometheus"]}, "basic_auth_users must map user names to bcrypt hashes"),
    ({"basic_auth_users": {"prometheus": "plain password"}}, "basic_auth_users.prometheus must be a bcrypt hash"),
    ({"basic_auth_users": {"a:b": "$2b$12$" + "a" * 53}}, "is not a user name"),
    ({"basic_auth_users": {"a\nb": "$2b$12$" + "a" * 53}}, "is not a user name"),
])
def test_a_web_configuration_that_cannot_be_used_is_refused(data, message, tmp_path):
    with pytest.raises(_exporter.WebConfigError, match=message):
        _exporter.WebConfig.load(_write(tmp_path / "web.yml", data))


def _write(path, data):
    path.write_text(json.dumps(data))
    return str(path)


def test_main_says_why_the_web_configuration_is_refused(tmp_path, capsys):
    (tmp_path / "web.yml").write_text("tls_server_config:\n  cert_file: a\n")
    assert _exporter.main(["--listen", "127.0.0.1:0", "--web.config.file", str(tmp_path / "web.yml"), "--no-xid"]) == 1
    assert "not JSON (YAML's JSON form, which the role writes)" in capsys.readouterr().err
    assert _exporter.main(["--listen", "127.0.0.1:0", "--web.config.file", str(tmp_path / "none.yml")]) == 1
    assert "No such file or directory" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _exporter.main(["--textfile", "x.prom", "--web.config.file", str(tmp_path / "web.yml")])
    assert "--web.config.file goes with --listen" in capsys.readouterr().err


def test_an_empty_web_configuration_serves_plain_http(nvml_fixture, tmp_path):
    nvml_fixture("dgx-h100")
    (tmp_path / "web.yml").write_text("{}")
    web = _exporter.WebConfig.load(str(tmp_path / "web.yml"))
    assert web.ssl_context is None and web.users == {} and web.authorized(None)


def test_the_roles_web_configuration_with_its_comment_header_is_read(pki, tmp_path):
    (tmp_path / "web.yml").write_text("#\n# Ansible managed\n#\n# The GPU exporter's TLS\n%s\n" % json.dumps(
        {"basic_auth_users": {"prometheus": pki["hash"]},
         "tls_server_config": {"cert_file": pki["cert"], "key_file": pki["key"]}}, indent=2))
    web = _exporter.WebConfig.load(str(tmp_path / "web.yml"))
    assert web.ssl_context is not None and list(web.users) == ["prometheus"]
    token = base64.b64encode(("prometheus:" + PASSWORD).encode()).decode()
    assert web.authorized("Basic " + token) and not web.authorized("Bearer " + token)


def test_a_client_that_reads_slowly_gets_the_whole_answer(nvml_fixture):
    """Small buffers on both sides: most of the answer waits in the server's own buffer, and still comes out whole
    before the connection closes."""
    nvml_fixture("dgx-h100")
    httpd = _exporter.make_server("127.0.0.1", 0, "node1")
    httpd.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)  # the connections' too
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.settimeout(20)
    try:
        client.connect(httpd.server_address[:2])
        client.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.5)
        received = b""
        while True:
            chunk = client.recv(2048)
            if not chunk:
                break
            received += chunk
            time.sleep(0.001)
    finally:
        client.close()
        httpd.shutdown()
        httpd.server_close()
    head, _sep, body = received.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.startswith(b"Content-Length:"))
    assert length > 80000 and len(body) == length
    assert value(parse(body.decode()), "accelops_gpu_count") == 8


def test_a_hostile_job_map_neither_breaks_nor_blocks_a_reading(nvml_fixture, tmp_path):
    """Links, a FIFO, a device, names that are not ASCII or not a GPU index, lines with NUL, CR, quotes and braces:
    the reading is whole, well formed, with hpc_job only from good lines and the rest counted."""
    import signal
    import stat

    nvml_fixture("dgx-h100")
    (tmp_path / "textfiles").mkdir()
    where = tmp_path / "map"
    where.mkdir()
    (where / "0").write_bytes(b'11\r\n12\x0013\n"}\n{a="b"}\n' + b"9" * 70 + b"\n")
    (where / "1").symlink_to("/etc/passwd")
    os.mkfifo(where / "2")
    os.mknod(where / "3", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    (where / "0 ").write_text("14\n")
    (where / "\u0663").write_text("15\n")
    (where.joinpath(os.fsdecode(b"4\xff"))).write_text("16\n")
    (where / "5").write_bytes(b"\xff\n")
    (where / "6").write_text("7" * (64 * 1024))
    target = tmp_path / "textfiles" / "gpu.prom"
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    signal.alarm(20)
    try:
        assert _exporter.main(["--textfile", str(target), "--hostname", "n1",
                               "--hpc-job-mapping-dir", str(where)]) == 0
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    families = parse(target.read_text())
    assert value(families, "accelops_gpu_nvml_up", Hostname="n1") == 1
    assert {labels.get("hpc_job") for labels, _value in families["DCGM_FI_DEV_GPU_TEMP"]["samples"]} == {None, "11"}
    # Four bad lines of 0; 1, 2, 3, "0 ", the Arabic-Indic three, 4\xff, 5 and 6.
    assert value(families, "accelops_gpu_job_map_problems", Hostname="n1") == 4 + 8
