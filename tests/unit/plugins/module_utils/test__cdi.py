"""The pure parts of _cdi: names, YAML written and read back, validation, driver releases, the node's files."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from ansible_collections.accelops.gpu.plugins.module_utils import _cdi

GPU = {"index": 3, "uuid": "GPU-aaaa", "minor": 5}
MIG = {"index": 2, "uuid": "MIG-bbbb"}


@pytest.mark.parametrize("strategies, gpu_names, mig_names", [
    (["index", "uuid"], ["3", "GPU-aaaa"], ["3:2", "MIG-bbbb"]),
    (["type-index"], ["gpu3"], ["mig3:2"]),
    (["uuid", "uuid", "index"], ["GPU-aaaa", "3"], ["MIG-bbbb", "3:2"]),
])
def test_device_names(strategies, gpu_names, mig_names):
    assert _cdi.device_names(strategies, GPU) == gpu_names
    assert _cdi.device_names(strategies, GPU, MIG) == mig_names


TRICKY = ["0", "0:1", "12:59", "1e3", "0x1f", "0o17", ".5", "-1", "yes", "No", "ON", "null", "~", "-", "y", "true",
          "a b", "x: y", "#x", "x #y", "'q'", '"q"', "tab\there", "new\nline", "ünï", "x:", "[a]", "{a}", "&a", "*a",
          "!tag", "%x", "@x", "`x`", "|", ">", "", " lead", "trail ", "0.5.0", "550.54.15", "--link",
          "libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so", "NVIDIA_CTK_DEBUG=false", "/tmp/with space/dev"]


@pytest.mark.parametrize("value", TRICKY)
def test_every_string_reads_back_as_itself(value):
    """What the emitter writes, PyYAML's own loader (YAML 1.1) and the module's reader give back unchanged."""
    spec = {"kind": value, "devices": [{"name": value, "containerEdits": {"env": [value]}}]}
    data = _cdi.render(spec, "nvidia.yaml")
    assert yaml.safe_load(data) == spec
    assert _cdi.parse(data, "nvidia.yaml") == spec
    assert json.loads(_cdi.render(spec, "nvidia.json")) == spec


def test_plain_where_go_writes_plain():
    assert _cdi.render({"cdiVersion": "0.5.0", "devices": [{"name": "all"}, {"name": "0"}]}, "x.yaml") == (
        b'---\ncdiVersion: 0.5.0\ndevices:\n    - name: all\n    - name: "0"\n')


def test_reader_keeps_every_plain_scalar_a_string():
    """nvidia-ctk writes MIG names plain (name: 0:1); YAML 1.1 would read that as the number 1."""
    spec = _cdi.parse(b"devices:\n- name: 0:1\n  major: 195\n- name: yes\n", "x.yaml")
    assert spec == {"devices": [{"name": "0:1", "major": "195"}, {"name": "yes"}]}


@pytest.mark.parametrize("data, message", [
    (b"a: &x [1]\nb: *x\n", "aliases are not allowed"),
    (b"{" * 3000 + b"}" * 3000, "it is not JSON"),
    (b"[" * 3000 + b"]" * 3000, "it is not YAML"),
    (b"\xff", "not UTF-8"),
    (b"- a\n", "not a mapping"),
    (b"", "not a mapping"),
])
def test_parse_refuses(data, message):
    with pytest.raises(ValueError, match=message):
        _cdi.parse(data, "x.yaml")


def test_parse_without_pyyaml(monkeypatch):
    monkeypatch.setattr(_cdi, "HAS_YAML", False)
    assert _cdi.parse(b'{"kind": "x"}', "x.yaml") == {"kind": "x"}
    with pytest.raises(LookupError):
        _cdi.parse(b"kind: x\n", "x.yaml")


GOOD = {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu",
        "devices": [{"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}],
        "containerEdits": {"env": ["A=1"], "hooks": [{"hookName": "createContainer", "path": "/x"}],
                           "mounts": [{"hostPath": "/a", "containerPath": "/a"}]}}


def edited(change):
    spec = json.loads(json.dumps(GOOD))
    change(spec)
    return spec


@pytest.mark.parametrize("change, problem", [
    (lambda s: s.update(cdiVersion="0.9.9"), "cdiVersion '0.9.9' is not a CDI version"),
    (lambda s: s.update(cdiVersion="0.4.0"), "cdiVersion 0.4.0 is below 0.5.0"),
    (lambda s: s["devices"].append(dict(s["devices"][0])), "name 0 is given twice"),
    (lambda s: s["devices"][0].update(name="-x"), "is not a CDI device name"),
    (lambda s: s["devices"][0].update(name="x:"), "is not a CDI device name"),
    (lambda s: s["devices"][0].update(containerEdits={"env": []}), "devices[0].containerEdits is empty"),
    (lambda s: s["devices"][0].update(extra=1), "devices[0]: unknown fields extra"),
    (lambda s: s["containerEdits"]["env"].append("=1"), "'=1' is not NAME=VALUE"),
    (lambda s: s["containerEdits"]["hooks"][0].update(hookName="create"), "hookName 'create' is not an OCI hook"),
    (lambda s: s["containerEdits"]["mounts"][0].pop("hostPath"), "mounts[0]: no hostPath"),
    (lambda s: s["containerEdits"].update(deviceNodes="x"), "containerEdits.deviceNodes is not a list"),
    (lambda s: s.update(devices={}), "it lists no devices"),
    (lambda s: s.update(kind=["x"]), "kind is ['x'], not nvidia.com/gpu"),
    (lambda s: s["devices"][0]["containerEdits"]["deviceNodes"][0].update(hostPath=1), "hostPath 1 is not a string"),
    (lambda s: s["devices"][0]["containerEdits"]["deviceNodes"][0].update(major="195"), "major '195' is not a number"),
    (lambda s: s["devices"][0]["containerEdits"]["deviceNodes"][0].update(uid=True), "uid True is not a number"),
    (lambda s: s["containerEdits"]["mounts"][0].update(options="ro"), "options 'ro' is not a list of strings"),
    (lambda s: s["containerEdits"]["mounts"][0].update(options=["ro", 1]), "is not a list of strings"),
    (lambda s: s["containerEdits"]["hooks"][0].update(args=[{"a": 1}]), "args [{'a': 1}] is not a list of strings"),
    (lambda s: s["containerEdits"]["hooks"][0].update(env=1), "env 1 is not a list of strings"),
])
def test_validate(change, problem):
    assert _cdi.validate(GOOD) == []
    problems = _cdi.validate(edited(change))
    assert any(problem in p for p in problems), problems


def test_driver_releases():
    spec = edited(lambda s: s["containerEdits"].update(
        mounts=[{"hostPath": "/r/usr/lib/libcuda.so.550.54.15", "containerPath": "/usr/lib/libcuda.so.550.54.15"},
                {"hostPath": "/lib/firmware/nvidia/535.161.08/gsp_ga10x.bin", "containerPath": "/x"},
                {"hostPath": "/usr/lib/libfoo.so.4", "containerPath": "/usr/lib/libfoo.so.4"},
                {"hostPath": "/usr/bin/nvidia-smi", "containerPath": "/usr/bin/nvidia-smi"}],
        hooks=[{"hookName": "createContainer", "path": "/x", "args": ["x", "--host-driver-version=470.239.06"]}]))
    assert _cdi.driver_releases(spec) == {"550.54.15", "535.161.08", "470.239.06"}
    assert _cdi.driver_releases(GOOD) == set()


def test_mig_minors_skips_malformed_lines(tmp_path):
    (tmp_path / "driver/nvidia-caps").mkdir(parents=True)
    (tmp_path / "driver/nvidia-caps/mig-minors").write_text(
        "config 1\nmonitor 2\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\ngarbage\ngpu0/gi2/access x\n\n")
    host = _cdi.Host("/", proc_root=str(tmp_path))
    assert host.mig_minors() == {"config": 1, "monitor": 2, "gpu0/gi1/access": 12, "gpu0/gi1/ci0/access": 13}
    assert host.cap_node("gpu0/gi1/ci0/access") == "/dev/nvidia-caps/nvidia-cap13"
    with pytest.raises(_cdi.CdiError, match="has no gpu0/gi2/access"):
        host.cap_node("gpu0/gi2/access")


@pytest.mark.parametrize("kind", ["fifo", "directory", "missing"])
def test_mig_minors_that_are_not_a_file_are_refused_without_waiting(tmp_path, kind):
    """A FIFO where the driver's table should be is refused at once (a blocking open would hang the module)."""
    (tmp_path / "driver/nvidia-caps").mkdir(parents=True)
    table = tmp_path / "driver/nvidia-caps/mig-minors"
    if kind == "fifo":
        os.mkfifo(table)
    elif kind == "directory":
        table.mkdir()
    host = _cdi.Host("/", proc_root=str(tmp_path))
    with pytest.raises(_cdi.CdiError, match=r"mig-minors cannot be read .*nothing was written"):
        host.mig_minors()


def test_libraries_once_through_a_merged_usr(tmp_path):
    """/lib -> usr/lib: a library is found once, under the first folder that has it; its links from the host."""
    lib = tmp_path / "usr/lib/x86_64-linux-gnu"
    (lib / "vdpau").mkdir(parents=True)
    (tmp_path / "lib").symlink_to("usr/lib")
    for name in ("libcuda.so.1.2", "libnvidia-opticalflow.so.1.2", "libGLX_nvidia.so.1.2",
                 "vdpau/libvdpau_nvidia.so.1.2", "libcuda.so.9.9"):
        (lib / name).write_text("x")
    os.symlink("libcuda.so.1.2", str(lib / "libcuda.so.1"))
    os.symlink("libcuda.so.1", str(lib / "libcuda.so"))
    os.symlink("libGLX_nvidia.so.1.2", str(lib / "libGLX_nvidia.so.0"))
    host = _cdi.Host(str(tmp_path), kernel_release="6.1.0")
    found, folders = host.libraries("1.2")
    assert [c for c, _h in found] == ["/usr/lib/x86_64-linux-gnu/" + n for n in (
        "libGLX_nvidia.so.1.2", "libcuda.so.1.2", "libnvidia-opticalflow.so.1.2", "vdpau/libvdpau_nvidia.so.1.2")]
    assert folders == ["/usr/lib/x86_64-linux-gnu"]
    d = "/usr/lib/x86_64-linux-gnu"
    assert host.library_links(d + "/libcuda.so.1.2", str(lib / "libcuda.so.1.2")) == [
        "libcuda.so.1::%s/libcuda.so" % d, "libcuda.so.1.2::%s/libcuda.so.1" % d, "libcuda.so.1::%s/libcuda.so" % d]
    assert host.library_links(d + "/libGLX_nvidia.so.1.2", str(lib / "libGLX_nvidia.so.1.2")) == [
        "libGLX_nvidia.so.1.2::%s/libGLX_indirect.so.0" % d, "libGLX_nvidia.so.1.2::%s/libGLX_nvidia.so.0" % d]
    assert host.library_links(d + "/libnvidia-opticalflow.so.1.2", str(lib / "libnvidia-opticalflow.so.1.2")) == [
        "libnvidia-opticalflow.so.1::%s/libnvidia-opticalflow.so" % d]


@pytest.mark.parametrize("path, ok", [
    ("/etc/cdi/nvidia.yaml", True), ("/var/run/cdi/nvidia.json", True), ("/etc/cdi/nvidia.yml", False),
    ("etc/cdi/nvidia.yaml", False), ("/etc/cdi/.json", False), ("/etc/cdi/a\0.yaml", False), (None, False),
])
def test_check_path(path, ok):
    assert (_cdi.check_path(path) is None) is ok


def test_sort_edits_as_nvidia_ctk():
    edits = _cdi.sort_edits({"deviceNodes": [{"path": "/dev/nvidia-caps/nvidia-cap99"}, {"path": "/dev/nvidiactl"},
                                             {"path": "/dev/nvidia-caps/nvidia-cap102"}, {"path": "/dev/nvidia-uvm"},
                                             {"path": "/dev/nvidiactl"}], "hooks": [], "env": ["B=1", "A=1"]})
    assert edits == {"env": ["B=1", "A=1"], "deviceNodes": [
        {"path": "/dev/nvidia-uvm"}, {"path": "/dev/nvidiactl"}, {"path": "/dev/nvidia-caps/nvidia-cap102"},
        {"path": "/dev/nvidia-caps/nvidia-cap99"}]}


@pytest.mark.parametrize("path", ["/dev/nvidia0\0", "\0"])
def test_a_path_with_a_nul_is_no_character_device(path):
    """A hand-written spec can name a device node with a NUL in its path (JSON's \\u0000): the stat call refuses it
    with ValueError, which is "not a character device" here, not a traceback."""
    assert _cdi.is_char_device(path) is False
