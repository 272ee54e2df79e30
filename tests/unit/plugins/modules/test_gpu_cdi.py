"""gpu_cdi on every fixture through the real pynvml and the fake libnvidia-ml.so.1, with the node's /dev, /proc, /sys
and driver files built under tmp_path."""

from __future__ import annotations

import os
import re
import stat

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _cdi, _files
from ansible_collections.accelops.gpu.plugins.modules import gpu_cdi, gpu_mig
from simnode import read_fixture

H100_GPU0 = "GPU-5b357cbf-a18f-4d4b-a1fa-e80574e9a835"
H100_MIG = "MIG-0c7d1a52-3d43-4c5e-9d5c-2b0f3d7a1e01"
LIBDIR = "/usr/lib/x86_64-linux-gnu"


def cap_minor(gpu_minor, gi, ci=None):
    """The driver's numbering of /proc/driver/nvidia-caps/mig-minors: config 1, monitor 2, then per GPU minor 15
    GPU instances of 9 minors each (the instance's access, then its 8 compute instances)."""
    base = 3 + gpu_minor * 135 + gi * 9
    return base if ci is None else base + 1 + ci


class Node:
    """A node's files under ``root``: device nodes, the MIG minors table, sysfs and the driver's files."""

    def __init__(self, root, monkeypatch):
        self.root = root
        self.real_nodes = os.geteuid() == 0
        if not self.real_nodes:
            # Without root no character device can be made: regular files stand in for them, and count as such.
            monkeypatch.setattr(_cdi, "is_char_device", lambda path: os.path.isfile(path) and "/dev/" in path)
        for folder in ("dev", "proc", "sys", "usr/lib"):
            (root / folder).mkdir(parents=True, exist_ok=True)

    def path(self, path):
        return str(self.root / path.lstrip("/"))

    def char(self, path, minor=0):
        target = self.path(path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.lexists(target):
            return
        if self.real_nodes:
            os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(195, minor))
        else:
            with open(target, "w", encoding="ascii"):
                pass

    def file(self, path, content="", mode=0o644):
        target = self.path(path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="ascii") as handle:
            handle.write(content)
        os.chmod(target, mode)

    def link(self, path, target):
        os.makedirs(os.path.dirname(self.path(path)), exist_ok=True)
        if not os.path.lexists(self.path(path)):
            os.symlink(target, self.path(path))

    def control(self, names=("nvidiactl", "nvidia-uvm")):
        for n, name in enumerate(names):
            self.char("/dev/" + name, 255 - n)

    def gpus(self, minors):
        for minor in minors:
            self.char("/dev/nvidia%d" % minor, minor)

    def mig_minors(self, gpu_minors, nodes=True):
        lines = ["config 1", "monitor 2"]
        for minor in gpu_minors:
            for gi in range(15):
                lines.append("gpu%d/gi%d/access %d" % (minor, gi, cap_minor(minor, gi)))
                lines.extend("gpu%d/gi%d/ci%d/access %d" % (minor, gi, ci, cap_minor(minor, gi, ci)) for ci in range(8))
                if nodes:
                    self.char("/dev/nvidia-caps/nvidia-cap%d" % cap_minor(minor, gi), 0)
                    for ci in range(8):
                        self.char("/dev/nvidia-caps/nvidia-cap%d" % cap_minor(minor, gi, ci), 0)
        self.file("/proc/driver/nvidia-caps/mig-minors", "\n".join(lines) + "\n")

    def driver(self, version, full=True):
        """The driver's libraries as a driver package installs them (the versioned file, its SONAME link, a .so
        link for libcuda), /lib as a link to /usr/lib (a merged /usr), and with ``full`` its tools, firmware and
        persistenced socket."""
        for name in ("libcuda", "libnvidia-ml"):
            self.file("%s/%s.so.%s" % (LIBDIR, name, version), "ELF")
            self.link("%s/%s.so.1" % (LIBDIR, name), "%s.so.%s" % (name, version))
        self.link(LIBDIR + "/libcuda.so", "libcuda.so.1")
        self.file("%s/vdpau/libvdpau_nvidia.so.%s" % (LIBDIR, version), "ELF")
        if not os.path.lexists(self.path("/lib")):
            self.link("/lib", "usr/lib")
        self.file("/usr/bin/nvidia-smi", "#!/bin/sh\n", 0o755)
        if full:
            self.file("/usr/bin/nvidia-persistenced", "#!/bin/sh\n", 0o755)
            self.file("/lib/firmware/nvidia/%s/gsp_ga10x.bin" % version, "GSP")
            self.file("/run/nvidia-persistenced/socket")

    def args(self, **extra):
        return dict(path=self.path("/etc/cdi/nvidia.yaml"), driver_root=str(self.root), sysfs_root=self.path("/sys"),
                    proc_root=self.path("/proc"), **extra)


@pytest.fixture
def node(tmp_path, monkeypatch):
    return Node(tmp_path / "root", monkeypatch)


@pytest.fixture
def cdi(module_result, nvml_fixture, monkeypatch):
    """cdi(fixture, extra fixture lines, **args) -> (rc, result); the fixture is installed once per test
    (cdi.install(fixture, extra) installs it before the first run)."""
    from ansible.module_utils import _internal

    monkeypatch.setattr(_internal, "is_controller", False)  # so that module warnings come back in the result
    installed = {}

    def install(name, extra=()):
        if name not in installed:
            installed[name] = nvml_fixture(name)
            if extra:
                with installed[name].open("a") as handle:
                    handle.write("\n".join(extra) + "\n")
        return installed[name]

    def run(name, extra=(), **args):
        install(name, extra)
        return module_result(gpu_cdi, args)

    run.install = install
    return run


def prepare(node, fixture_path):
    """A node's files that match an NVML fixture: every GPU's /dev/nvidia<minor>, MIG tables where MIG is offered."""
    values = read_fixture(fixture_path)
    minors = [int(values[key]) for key in values if re.match(r"gpu\.[0-9]+\.minor_number$", key)]
    node.control()
    node.gpus(minors)
    if any(key.endswith("mig.current") for key in values):
        node.mig_minors(minors)
    node.driver(values.get("driver_version", "0.0"))
    return values


def codes(result):
    return sorted((f["gpu"] if f["gpu"] is not None else -1, f["code"]) for f in result["findings"])


# --- every fixture -------------------------------------------------------------------------------------------------

GOOD = [
    # fixture, device names expected besides "all" (per strategy index + uuid)
    ("dgx-h100", 8 * 2),
    ("dgx-a100-mig", 6 * 2 + (7 + 3) * 2),  # GPUs 0 and 1 in MIG mode: only their MIG devices
    ("pcie-l40s", 2 * 2),
    ("old-driver", 8 * 2),
    ("busy", 2 * 2),
]


@pytest.mark.parametrize("name, count", GOOD, ids=[g[0] for g in GOOD])
def test_present_check_idempotent(cdi, node, name, count):
    """Check mode writes nothing; the real run writes the spec once; a second run and a check find nothing to do."""
    values = prepare(node, cdi.install(name))
    spec = node.path("/etc/cdi/nvidia.yaml")

    rc, checked = cdi(name, **node.args(_ansible_check_mode=True, _ansible_diff=True))
    assert rc == 0, checked
    assert checked["changed"] is True and checked["stale"] is True
    assert codes(checked) == [(-1, "cdi_spec_missing")]
    assert not os.path.lexists(spec) and not os.path.lexists(node.path("/etc/cdi"))
    assert checked["diff"]["before"] == "" and checked["diff"]["after"].startswith("---\ncdiVersion: 0.5.0\n")

    rc, written = cdi(name, **node.args())
    assert rc == 0, written
    assert written["changed"] is True
    assert len(written["devices"]) == count + 1 and written["devices"][-1] == "all"
    assert written["driver_version"] == values["driver_version"]
    assert stat.S_IMODE(os.stat(spec).st_mode) == 0o644
    assert stat.S_IMODE(os.stat(os.path.dirname(spec)).st_mode) & 0o755 == 0o755
    first = open(spec, "rb").read()
    assert _cdi.validate(_cdi.parse(first, spec)) == []
    assert os.listdir(os.path.dirname(spec)) == ["nvidia.yaml"]  # no temporary file left

    rc, again = cdi(name, **node.args())
    assert rc == 0 and again["changed"] is False and again["findings"] == [] and again["stale"] is False
    assert open(spec, "rb").read() == first
    rc, checked = cdi(name, **node.args(state="check"))
    assert rc == 0 and checked["changed"] is False
    assert (checked["stale"], checked["differs"], checked["findings"]) == (False, False, [])


def test_mig_devices_by_minor_and_slot(cdi, node):
    """A MIG device is named <gpu index>:<slot>, and its capability nodes are those of the GPU's minor number (GPU 0
    of the DGX A100 fixture is /dev/nvidia2)."""
    values = prepare(node, cdi.install("dgx-a100-mig"))
    rc, result = cdi("dgx-a100-mig", **node.args(device_name_strategy=["index", "uuid", "type-index"]))
    assert rc == 0, result
    spec = _cdi.parse(open(node.path("/etc/cdi/nvidia.yaml"), "rb").read(), "nvidia.yaml")
    devices = {d["name"]: d["containerEdits"] for d in spec["devices"]}
    assert "0" not in devices and "1" not in devices and "gpu0" not in devices  # in MIG mode
    assert devices["2"] == devices["gpu2"] == devices[values["gpu.2.uuid"]]
    assert sorted(n for n in devices if re.match(r"^[0-9]+:", n)) == ["0:%d" % j for j in range(7)] + [
        "1:0", "1:1", "1:2"]
    paths = [n["path"] for n in devices["0:0"]["deviceNodes"]]
    assert paths == ["/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap%d" % cap_minor(2, 7),
                     "/dev/nvidia-caps/nvidia-cap%d" % cap_minor(2, 7, 0)]
    assert devices["0:0"] == devices["mig0:0"] == devices[values["gpu.0.gi.7.ci.0.uuid"]]
    assert devices["0:0"]["deviceNodes"][0]["hostPath"] == node.path("/dev/nvidia2")


# --- the spec written out by hand ----------------------------------------------------------------------------------

def test_one_h100_and_one_mig_device_by_hand(cdi, node):
    """GPU 0 of an H100 node whole, GPU 1 in MIG mode with one 1g.10gb instance (GPU instance 7 at memory slice 0):
    the spec as nvidia-ctk 1.18 writes it for the same node."""
    extra = ["gpu_count=2", "gpu.1.mig.current=1", "gpu.1.mig.pending=1", "gpu.1.gi.7.profile=1g.10gb",
             "gpu.1.gi.7.start=0", "gpu.1.gi.7.ci.0.profile=0", "gpu.1.gi.7.ci.0.uuid=" + H100_MIG]
    node.control(("nvidiactl", "nvidia-uvm"))
    node.gpus([0, 1])
    node.mig_minors([1], nodes=False)
    node.char("/dev/nvidia-caps/nvidia-cap201")
    node.char("/dev/nvidia-caps/nvidia-cap202")
    node.driver("550.54.15", full=False)
    rc, result = cdi("dgx-h100", extra, **node.args())
    assert rc == 0, result
    root = str(node.root)
    expected = """---
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
    - name: "0"
      containerEdits:
        deviceNodes:
            - path: /dev/nvidia0
              hostPath: ROOT/dev/nvidia0
    - name: "1:0"
      containerEdits:
        deviceNodes:
            - path: /dev/nvidia1
              hostPath: ROOT/dev/nvidia1
            - path: /dev/nvidia-caps/nvidia-cap201
              hostPath: ROOT/dev/nvidia-caps/nvidia-cap201
            - path: /dev/nvidia-caps/nvidia-cap202
              hostPath: ROOT/dev/nvidia-caps/nvidia-cap202
    - name: GPU0UUID
      containerEdits:
        deviceNodes:
            - path: /dev/nvidia0
              hostPath: ROOT/dev/nvidia0
    - name: MIGUUID
      containerEdits:
        deviceNodes:
            - path: /dev/nvidia1
              hostPath: ROOT/dev/nvidia1
            - path: /dev/nvidia-caps/nvidia-cap201
              hostPath: ROOT/dev/nvidia-caps/nvidia-cap201
            - path: /dev/nvidia-caps/nvidia-cap202
              hostPath: ROOT/dev/nvidia-caps/nvidia-cap202
    - name: all
      containerEdits:
        deviceNodes:
            - path: /dev/nvidia0
              hostPath: ROOT/dev/nvidia0
            - path: /dev/nvidia1
              hostPath: ROOT/dev/nvidia1
            - path: /dev/nvidia-caps/nvidia-cap201
              hostPath: ROOT/dev/nvidia-caps/nvidia-cap201
            - path: /dev/nvidia-caps/nvidia-cap202
              hostPath: ROOT/dev/nvidia-caps/nvidia-cap202
containerEdits:
    env:
        - NVIDIA_CTK_LIBCUDA_DIR=/usr/lib/x86_64-linux-gnu
        - NVIDIA_VISIBLE_DEVICES=void
    deviceNodes:
        - path: /dev/nvidia-uvm
          hostPath: ROOT/dev/nvidia-uvm
        - path: /dev/nvidiactl
          hostPath: ROOT/dev/nvidiactl
    hooks:
        - hookName: createContainer
          path: /usr/bin/nvidia-cdi-hook
          args:
            - nvidia-cdi-hook
            - create-symlinks
            - --link
            - libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so
            - --link
            - libcuda.so.550.54.15::/usr/lib/x86_64-linux-gnu/libcuda.so.1
            - --link
            - libnvidia-ml.so.550.54.15::/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1
          env:
            - NVIDIA_CTK_DEBUG=false
        - hookName: createContainer
          path: /usr/bin/nvidia-cdi-hook
          args:
            - nvidia-cdi-hook
            - enable-cuda-compat
            - --host-driver-version=550.54.15
          env:
            - NVIDIA_CTK_DEBUG=false
        - hookName: createContainer
          path: /usr/bin/nvidia-cdi-hook
          args:
            - nvidia-cdi-hook
            - update-ldcache
            - --folder
            - /usr/lib/x86_64-linux-gnu
            - --folder
            - /usr/lib/x86_64-linux-gnu/vdpau
          env:
            - NVIDIA_CTK_DEBUG=false
        - hookName: createContainer
          path: /usr/bin/nvidia-cdi-hook
          args:
            - nvidia-cdi-hook
            - disable-device-node-modification
          env:
            - NVIDIA_CTK_DEBUG=false
    mounts:
        - hostPath: ROOT/usr/bin/nvidia-smi
          containerPath: /usr/bin/nvidia-smi
          options:
            - ro
            - nosuid
            - nodev
            - rbind
            - rprivate
        - hostPath: ROOT/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15
          containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15
          options:
            - ro
            - nosuid
            - nodev
            - rbind
            - rprivate
        - hostPath: ROOT/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15
          containerPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15
          options:
            - ro
            - nosuid
            - nodev
            - rbind
            - rprivate
        - hostPath: ROOT/usr/lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so.550.54.15
          containerPath: /usr/lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so.550.54.15
          options:
            - ro
            - nosuid
            - nodev
            - rbind
            - rprivate
""".replace("ROOT", root).replace("GPU0UUID", H100_GPU0).replace("MIGUUID", H100_MIG)
    assert open(node.path("/etc/cdi/nvidia.yaml"), encoding="utf-8").read() == expected
    assert result["devices"] == ["0", "1:0", H100_GPU0, H100_MIG, "all"]
    # PyYAML reads it back to what was meant ("1:0" stays a name, not the base-60 number 60)
    spec = _cdi.parse(expected.encode(), "nvidia.yaml")
    assert [d["name"] for d in spec["devices"]] == result["devices"]


def test_json_and_the_root_as_on_a_node(cdi, node):
    """A .json path is written as JSON; the same content as the YAML."""
    prepare(node, cdi.install("pcie-l40s"))
    rc, result = cdi("pcie-l40s", **dict(node.args(), path=node.path("/etc/cdi/nvidia.json")))
    assert rc == 0, result
    data = open(node.path("/etc/cdi/nvidia.json"), "rb").read()
    assert data.startswith(b'{"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","devices":[')
    rc, checked = cdi("pcie-l40s", **dict(node.args(state="check"), path=node.path("/etc/cdi/nvidia.json")))
    assert rc == 0 and checked["findings"] == [] and checked["differs"] is False


def test_drm_nodes_and_by_path_links(cdi, node):
    values = prepare(node, cdi.install("pcie-l40s"))
    bus = values["gpu.0.pci.bus_id"].lower()[4:]
    for name in ("card1", "renderD128"):
        os.makedirs(node.path("/sys/bus/pci/devices/%s/drm/%s" % (bus, name)))
        node.char("/dev/dri/" + name, 226)
    node.link("/dev/dri/by-path/pci-%s-card" % bus, "../card1")
    node.link("/dev/dri/by-path/pci-%s-render" % bus, "../renderD128")
    rc, result = cdi("pcie-l40s", **node.args(hooks=["create-symlinks", "chmod"]))
    assert rc == 0, result
    spec = _cdi.parse(open(node.path("/etc/cdi/nvidia.yaml"), "rb").read(), "nvidia.yaml")
    gpu0 = next(d["containerEdits"] for d in spec["devices"] if d["name"] == "0")
    assert [n["path"] for n in gpu0["deviceNodes"]] == ["/dev/nvidia0", "/dev/dri/card1", "/dev/dri/renderD128"]
    by_path = node.path("/dev/dri/by-path/pci-%s-" % bus)
    assert gpu0["hooks"][0]["args"] == ["nvidia-cdi-hook", "create-symlinks", "--link", "../card1::%scard" % by_path,
                                        "--link", "../renderD128::%srender" % by_path]
    assert gpu0["hooks"][1]["args"] == ["nvidia-cdi-hook", "chmod", "--mode", "755", "--path", "/dev/dri"]
    # chosen hooks only: no enable-cuda-compat, update-ldcache, disable-device-node-modification
    assert [h["args"][1] for h in spec["containerEdits"]["hooks"]] == ["create-symlinks"]


# --- stale specs ---------------------------------------------------------------------------------------------------

def test_mig_layout_change_makes_the_spec_stale(cdi, node, module_result):
    prepare(node, cdi.install("dgx-a100-mig"))
    assert cdi("dgx-a100-mig", **node.args())[0] == 0
    old_uuids = [d["uuid"] for d in module_result(gpu_mig, {"gpus": [0], "layout": ["1g.10gb"] * 7})[1]["gpus"][0][
        "mig_devices"]]
    rc, changed = module_result(gpu_mig, {"gpus": [0], "layout": ["3g.40gb", "3g.40gb"]})
    assert rc == 0 and changed["changed"], changed
    new = changed["gpus"][0]["mig_devices"]

    rc, checked = cdi("dgx-a100-mig", **node.args(state="check"))
    assert rc == 0, checked
    assert checked["stale"] is True and checked["changed"] is False
    found = {f["code"]: f for f in checked["findings"]}
    assert sorted(found) == ["cdi_device_differs", "cdi_device_extra", "cdi_device_missing"]
    extra = found["cdi_device_extra"]["message"]
    assert all("nvidia.com/gpu=%s" % uuid in extra for uuid in old_uuids)
    assert all("nvidia.com/gpu=0:%d" % j in extra for j in (2, 3, 4, 5, 6))
    missing = [f for f in checked["findings"] if f["code"] == "cdi_device_missing"]
    assert {f["gpu"] for f in missing} == {0} and len(missing) == 2
    assert all(any(d["uuid"] in f["message"] for f in missing) for d in new)
    # 0:0 and 0:1 still exist as names, but now lead to other capability nodes; so does "all"
    differs = [f["message"] for f in checked["findings"] if f["code"] == "cdi_device_differs"]
    assert any(m.startswith("nvidia.com/gpu=0:0 gives") for m in differs)
    assert any(m.startswith("nvidia.com/gpu=all gives") for m in differs)

    rc, rewritten = cdi("dgx-a100-mig", **node.args())
    assert rc == 0 and rewritten["changed"] and rewritten["stale"]
    rc, checked = cdi("dgx-a100-mig", **node.args(state="check"))
    assert (checked["stale"], checked["findings"]) == (False, [])


def test_driver_change_makes_the_spec_stale(cdi, node):
    path = cdi.install("dgx-h100")
    prepare(node, path)
    assert cdi("dgx-h100", **node.args())[0] == 0
    # The driver is upgraded to 550.127.08 and the node rebooted: the old libraries are gone.
    with path.open("a") as handle:
        handle.write("driver_version=550.127.08\n")
    for folder, _dirs, files in os.walk(str(node.root)):
        for name in files:
            if "550.54.15" in name:
                os.unlink(os.path.join(folder, name))
    for folder in (LIBDIR, LIBDIR + "/vdpau"):
        for name in os.listdir(node.path(folder)):
            if os.path.islink(node.path(folder + "/" + name)):
                os.unlink(node.path(folder + "/" + name))
    node.driver("550.127.08")
    rc, checked = cdi("dgx-h100", **node.args(state="check"))
    assert rc == 0, checked
    assert checked["stale"] is True
    assert codes(checked) == [(-1, "cdi_driver_version"), (-1, "cdi_mount_missing")]
    version = next(f for f in checked["findings"] if f["code"] == "cdi_driver_version")
    assert version["message"] == "the spec is for driver 550.54.15; the loaded driver is 550.127.08"
    assert version["severity"] == "critical"
    rc, rewritten = cdi("dgx-h100", **node.args())
    assert rc == 0 and rewritten["changed"] and rewritten["driver_version"] == "550.127.08"
    assert b"libcuda.so.550.127.08" in open(node.path("/etc/cdi/nvidia.yaml"), "rb").read()
    assert cdi("dgx-h100", **node.args(state="check"))[1]["findings"] == []


def test_a_device_node_that_went_away(cdi, node):
    prepare(node, cdi.install("pcie-l40s"))
    assert cdi("pcie-l40s", **node.args())[0] == 0
    os.unlink(node.path("/dev/nvidia1"))
    rc, checked = cdi("pcie-l40s", **node.args(state="check"))
    assert rc == 0 and checked["stale"] is True and checked["differs"] is True
    assert codes(checked) == [(-1, "cdi_device_node_missing")]
    assert node.path("/dev/nvidia1") in checked["findings"][0]["message"]
    assert any("a spec cannot be written now" in str(w) for w in checked.get("warnings", []))
    # present refuses to write a spec whose device node is missing, and leaves the old one
    before = open(node.path("/etc/cdi/nvidia.yaml"), "rb").read()
    rc, failed = cdi("pcie-l40s", **node.args())
    assert rc == 1 and "/dev/nvidia1 is not a character device" in failed["msg"]
    assert "nothing was written" in failed["msg"]
    assert open(node.path("/etc/cdi/nvidia.yaml"), "rb").read() == before


SWAPPED = """---
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
    - name: "0"
      containerEdits:
        deviceNodes:
            - path: /dev/nvidia1
              hostPath: ROOT/dev/nvidia1
    - name: "1"
      containerEdits:
        deviceNodes:
            - path: /dev/nvidia0
              hostPath: ROOT/dev/nvidia0
    - name: "7"
      containerEdits:
        deviceNodes:
            - path: /dev/nvidia0
              hostPath: ROOT/dev/nvidia0
containerEdits:
    mounts:
        - hostPath: ROOT/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15
          containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15
"""


def test_a_spec_by_hand_with_indexes_swapped(cdi, node):
    prepare(node, cdi.install("pcie-l40s"))
    node.file("/etc/cdi/nvidia.yaml", SWAPPED.replace("ROOT", str(node.root)))
    rc, checked = cdi("pcie-l40s", **node.args(state="check"))
    assert rc == 0, checked
    assert codes(checked) == [(-1, "cdi_device_extra"), (-1, "cdi_device_missing"), (0, "cdi_device_differs"),
                              (0, "cdi_device_missing"), (1, "cdi_device_differs"), (1, "cdi_device_missing")]
    differs = next(f for f in checked["findings"] if f["code"] == "cdi_device_differs" and f["gpu"] == 0)
    assert differs["message"].startswith("nvidia.com/gpu=0 gives /dev/nvidia1; NVML shows GPU 0 (GPU-")
    assert "nvidia.com/gpu=7" in next(f for f in checked["findings"] if f["code"] == "cdi_device_extra")["message"]


def test_a_spec_with_a_nul_in_a_device_node_path(cdi, node):
    """JSON can carry a NUL in a path; the comparison says the node is missing rather than failing with a traceback."""
    prepare(node, cdi.install("pcie-l40s"))
    target = node.path("/etc/cdi/nvidia.json")
    os.makedirs(os.path.dirname(target))
    with open(target, "w", encoding="ascii") as handle:
        handle.write('{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [{"name": "0", "containerEdits": '
                     '{"deviceNodes": [{"path": "/dev/nvidia0\\u0000"}]}}]}')
    rc, checked = cdi("pcie-l40s", **dict(node.args(state="check"), path=target))
    assert rc == 0, checked
    assert (-1, "cdi_device_node_missing") in codes(checked) and checked["stale"] is True


BROKEN = [
    ("not yaml", "devices: [\n", "it is not YAML"),
    ("not a mapping", "- 1\n- 2\n", "it is not a mapping"),
    ("wrong kind", "cdiVersion: 0.5.0\nkind: amd.com/gpu\ndevices: [{name: a, containerEdits: {env: [A=1]}}]\n",
     "kind is 'amd.com/gpu', not nvidia.com/gpu"),
    ("version too low", "cdiVersion: 0.3.0\nkind: nvidia.com/gpu\n"
     "devices: [{name: \"0\", containerEdits: {env: [A=1]}}]\n", "cdiVersion 0.3.0 is below 0.5.0"),
    ("bad name", "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: [{name: 'a b', containerEdits: {env: [A=1]}}]\n",
     "name 'a b' is not a CDI device name"),
    ("empty edits", "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: [{name: a, containerEdits: {}}]\n",
     "devices[0].containerEdits is empty"),
    ("unknown field", "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\nextra: 1\n"
     "devices: [{name: a, containerEdits: {env: [A=1]}}]\n", "unknown fields extra"),
    ("no devices", "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n", "it lists no devices"),
    ("alias bomb", "a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n", "aliases are not allowed"),
    ("not utf-8", b"\xff\xfe\x00", "it is not UTF-8 text"),
    ("deep", "[" * 5000 + "]" * 5000, "it is not"),
]


@pytest.mark.parametrize("content, message", [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_a_spec_that_does_not_parse(cdi, node, content, message):
    prepare(node, cdi.install("pcie-l40s"))
    target = node.path("/etc/cdi/nvidia.yaml")
    os.makedirs(os.path.dirname(target))
    with open(target, "wb") as handle:
        handle.write(content if isinstance(content, bytes) else content.encode())
    rc, checked = cdi("pcie-l40s", **node.args(state="check"))
    assert rc == 0, checked
    assert codes(checked) == [(-1, "cdi_spec_invalid")] and checked["stale"] is True
    assert message in checked["findings"][0]["message"], checked["findings"][0]["message"]
    rc, written = cdi("pcie-l40s", **node.args())
    assert rc == 0 and written["changed"] and written["findings"] == checked["findings"]
    assert _cdi.validate(_cdi.parse(open(target, "rb").read(), target)) == []


# --- faults --------------------------------------------------------------------------------------------------------

def test_lost_gpu_is_left_out_and_said(cdi, node):
    values = prepare(node, cdi.install("gpu-lost"))
    rc, result = cdi("gpu-lost", **node.args())
    assert rc == 0, result
    assert result["lost_gpus"] == [2]
    assert "2" not in result["devices"] and "3" in result["devices"] and values["gpu.2.uuid"] not in result["devices"]
    assert any("GPU 2 is lost" in str(w) for w in result.get("warnings", []))
    rc, checked = cdi("gpu-lost", **node.args(state="check"))
    assert rc == 0 and checked["stale"] is False and codes(checked) == [(2, "gpu_lost")]


def test_a_spec_written_before_the_gpu_was_lost(cdi, node):
    """The lost GPU's entries of an older spec (its index name, its UUID name, "all") are not judged."""
    path = cdi.install("gpu-lost")
    values = prepare(node, path)
    with path.open("a") as handle:
        handle.write("gpu.2.lost=0\n")
    assert cdi("gpu-lost", **node.args())[0] == 0
    assert values["gpu.2.uuid"] in open(node.path("/etc/cdi/nvidia.yaml"), encoding="utf-8").read()
    with path.open("a") as handle:
        handle.write("gpu.2.lost=1\n")
    rc, checked = cdi("gpu-lost", **node.args(state="check"))
    assert rc == 0 and codes(checked) == [(2, "gpu_lost")] and checked["differs"] is True


FAILING = [
    ("driver-not-loaded", "NVML is not usable on this host: the NVIDIA kernel driver is not loaded"),
    ("driver-mismatch", "NVML is not usable on this host: driver/library version mismatch"),
    ("no-gpu", "NVML shows no GPU or MIG device to describe"),
]


@pytest.mark.parametrize("name, message", FAILING, ids=[f[0] for f in FAILING])
def test_nothing_to_describe_fails_and_writes_nothing(cdi, node, name, message):
    prepare(node, cdi.install(name))
    rc, result = cdi(name, **node.args())
    assert rc == 1 and message in result["msg"] and "nothing was written" in result["msg"]
    assert not os.path.lexists(node.path("/etc/cdi"))


@pytest.mark.parametrize("name", ["driver-not-loaded", "driver-mismatch"])
def test_check_fails_without_nvml(cdi, node, name):
    """An NVML that cannot answer is an error, never a spec that is fine."""
    prepare(node, cdi.install(name))
    node.file("/etc/cdi/nvidia.yaml", "cdiVersion: 0.5.0\n")
    rc, result = cdi(name, **node.args(state="check"))
    assert rc == 1 and "NVML is not usable on this host" in result["msg"]
    assert "stale" not in result and "findings" not in result


def test_check_on_a_node_without_gpus(cdi, node):
    prepare(node, cdi.install("no-gpu"))
    rc, result = cdi("no-gpu", **node.args(state="check"))
    assert rc == 0 and result["findings"] == [] and result["stale"] is False and result["devices"] == []
    node.file("/etc/cdi/nvidia.yaml", SWAPPED.replace("ROOT", str(node.root)))
    rc, result = cdi("no-gpu", **node.args(state="check"))
    assert rc == 0 and codes(result) == [(-1, "cdi_device_extra"), (-1, "cdi_device_node_missing")]


def test_nvml_error_reading_a_gpu_fails(cdi, node):
    prepare(node, cdi.install("dgx-a100-mig", ["fail.nvmlDeviceGetMinorNumber=3:UNKNOWN"]))
    rc, result = cdi("dgx-a100-mig", **node.args(state="check"))
    assert rc == 1 and result["msg"].startswith("GPU 2: nvmlDeviceGetMinorNumber") and "findings" not in result
    rc, result = cdi("dgx-a100-mig", **node.args())
    assert rc == 1 and not os.path.lexists(node.path("/etc/cdi"))


def test_mig_uuid_error_fails(cdi, node):
    prepare(node, cdi.install("dgx-a100-mig", ["fail.nvmlDeviceGetUUID=10:UNKNOWN"]))
    rc, result = cdi("dgx-a100-mig", **node.args())
    assert "GPU 0: NVML cannot describe its MIG devices: nvmlDeviceGetUUID" in result["msg"], result
    assert rc == 1 and "nothing was written" in result["msg"], result
    assert not os.path.lexists(node.path("/etc/cdi"))


def test_missing_libraries_and_control_device(cdi, node):
    prepare(node, cdi.install("pcie-l40s"))
    os.unlink(node.path(LIBDIR + "/libcuda.so.550.54.15"))
    os.unlink(node.path(LIBDIR + "/libnvidia-ml.so.550.54.15"))
    os.unlink(node.path(LIBDIR + "/vdpau/libvdpau_nvidia.so.550.54.15"))
    rc, result = cdi("pcie-l40s", **node.args())
    assert rc == 1 and "no library of driver 550.54.15" in result["msg"]
    node.driver("550.54.15")
    os.unlink(node.path("/dev/nvidiactl"))
    rc, result = cdi("pcie-l40s", **node.args())
    assert rc == 1 and "/dev/nvidiactl is not a character device" in result["msg"]
    assert not os.path.lexists(node.path("/etc/cdi"))


def test_missing_mig_minors_table(cdi, node):
    prepare(node, cdi.install("dgx-a100-mig"))
    os.unlink(node.path("/proc/driver/nvidia-caps/mig-minors"))
    rc, result = cdi("dgx-a100-mig", **node.args())
    assert rc == 1 and "mig-minors cannot be read" in result["msg"]
    rc, result = cdi("dgx-a100-mig", **node.args(state="check"))
    assert rc == 1 and "mig-minors cannot be read" in result["msg"] and "nothing was compared" in result["msg"]


def test_without_pyyaml(cdi, node, monkeypatch):
    """Writing needs no PyYAML; reading a YAML spec back does: present rewrites without findings, check fails."""
    prepare(node, cdi.install("pcie-l40s"))
    node.file("/etc/cdi/nvidia.yaml", "old: spec\n")
    monkeypatch.setattr(_cdi, "HAS_YAML", False)
    rc, result = cdi("pcie-l40s", **node.args(state="check"))
    assert rc == 1 and "PyYAML" in result["msg"]
    rc, result = cdi("pcie-l40s", **node.args())
    assert rc == 0 and result["changed"] and result["findings"] == []
    assert any("PyYAML is not installed" in str(w) for w in result.get("warnings", []))
    rc, result = cdi("pcie-l40s", **node.args())
    assert rc == 0 and result["changed"] is False


def test_without_pynvml(cdi, node, monkeypatch):
    from ansible_collections.accelops.gpu.plugins.module_utils import _nvml
    prepare(node, cdi.install("pcie-l40s"))
    monkeypatch.setattr(_nvml, "HAS_PYNVML", False)
    rc, result = cdi("pcie-l40s", **node.args())
    assert rc == 1 and "nvidia-ml-py" in result["msg"] and not os.path.lexists(node.path("/etc/cdi"))


@pytest.mark.parametrize("extra, said", [
    (["gpu.0.uuid=GPU-767148cd b4af"], "name 'GPU-767148cd b4af' is not a CDI device name"),
    (["gpu.1.uuid=GPU-767148cd-b4af-4004-a674-b1a6ab7cc7ac"],
     "name GPU-767148cd-b4af-4004-a674-b1a6ab7cc7ac is given twice"),
])
def test_an_nvml_answer_that_makes_a_spec_runtimes_refuse(cdi, node, extra, said):
    """A UUID that is no CDI name, or one NVML gives two GPUs: the spec would be refused by every runtime (no GPU for
    any container), so it is not written, and the old spec stays."""
    prepare(node, cdi.install("pcie-l40s", extra))
    node.file("/etc/cdi/nvidia.yaml", "old: spec\n")
    rc, result = cdi("pcie-l40s", **node.args())
    assert rc == 1 and said in result["msg"] and "nothing was written" in result["msg"], result
    assert open(node.path("/etc/cdi/nvidia.yaml"), encoding="ascii").read() == "old: spec\n"


def test_a_duplicate_mig_uuid_is_not_written(cdi, node):
    prepare(node, cdi.install("dgx-a100-mig", ["gpu.0.gi.8.ci.0.uuid=MIG-2960a99b-cfa9-44ae-9958-5271b5f50c61"]))
    rc, result = cdi("dgx-a100-mig", **node.args())
    assert rc == 1 and "MIG-2960a99b-cfa9-44ae-9958-5271b5f50c61 is given twice" in result["msg"], result
    assert not os.path.lexists(node.path("/etc/cdi"))


@pytest.mark.parametrize("name", ["pcie-l40s", "driver-not-loaded"])
def test_check_mode_before_nvml_is_in_place(cdi, node, monkeypatch, name):
    """In check mode an earlier task of the run may install nvidia-ml-py or the driver: state=present says that it
    would write the spec and writes nothing; state=check still fails."""
    from ansible_collections.accelops.gpu.plugins.module_utils import _nvml
    prepare(node, cdi.install(name))
    if name == "pcie-l40s":
        monkeypatch.setattr(_nvml, "HAS_PYNVML", False)
    rc, result = cdi(name, **node.args(_ansible_check_mode=True))
    assert rc == 0 and result["changed"] and result["differs"], result
    assert "stale" not in result and not os.path.lexists(node.path("/etc/cdi"))
    assert any("check mode: " in str(w) and "a real run would write it" in str(w)
               for w in result.get("warnings", [])), result
    rc, result = cdi(name, **node.args(state="check", _ansible_check_mode=True))
    assert rc == 1 and "nothing was written" in result["msg"]


# --- hostile paths -------------------------------------------------------------------------------------------------

def test_a_symlink_is_refused(cdi, node):
    prepare(node, cdi.install("pcie-l40s"))
    node.file("/srv/elsewhere.yaml", "precious\n")
    node.link("/etc/cdi/nvidia.yaml", node.path("/srv/elsewhere.yaml"))
    for state in ("present", "check"):
        rc, result = cdi("pcie-l40s", **node.args(state=state))
        assert rc == 1 and "is a symbolic link, not a regular file" in result["msg"]
    assert open(node.path("/srv/elsewhere.yaml"), encoding="ascii").read() == "precious\n"
    assert os.path.islink(node.path("/etc/cdi/nvidia.yaml"))


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_not_a_regular_file_is_refused(cdi, node, kind):
    prepare(node, cdi.install("pcie-l40s"))
    target = node.path("/etc/cdi/nvidia.yaml")
    os.makedirs(os.path.dirname(target))
    if kind == "directory":
        os.mkdir(target)
    else:
        os.mkfifo(target)
    rc, result = cdi("pcie-l40s", **node.args())
    assert rc == 1 and "not a regular file; it is left alone" in result["msg"]


BAD_ARGS = [
    ({"path": "relative/nvidia.yaml"}, "path: give an absolute file path"),
    ({"path": "/etc/cdi/nvidia.conf"}, "must end in .yaml or .json"),
    ({"path": "/etc/cdi/.yaml"}, "must end in .yaml or .json"),
    ({"path": "/etc/cdi/nvidia\n.yaml"}, "without a newline"),
    ({"driver_root": "relative"}, "driver_root: give an absolute directory path"),
    ({"proc_root": "/nonexistent-proc"}, "proc_root: /nonexistent-proc is not a directory"),
    ({"dev_root": "/nonexistent-dev"}, "dev_root: /nonexistent-dev is not a directory"),
    ({"hook_path": "/usr/bin/nvidia cdi hook"}, "hook_path: give the absolute path of nvidia-cdi-hook"),
    ({"device_name_strategy": []}, "device_name_strategy: give at least one"),
    ({"device_name_strategy": ["name"]}, "value of device_name_strategy must be one or more of"),
    ({"hooks": ["rm-rf"]}, "value of hooks must be one or more of"),
    ({"state": "absent"}, "value of state must be one of"),
]


@pytest.mark.parametrize("args, message", BAD_ARGS, ids=[b[1][:40] for b in BAD_ARGS])
def test_bad_arguments(cdi, node, args, message):
    prepare(node, cdi.install("pcie-l40s"))
    rc, result = cdi("pcie-l40s", **dict(node.args(), **args))
    assert rc == 1 and message in result["msg"], result["msg"]
    assert not os.path.lexists(node.path("/etc/cdi"))


def test_parent_is_a_file(cdi, node):
    prepare(node, cdi.install("pcie-l40s"))
    node.file("/etc/cdi", "not a directory\n")
    rc, result = cdi("pcie-l40s", **node.args())
    assert rc == 1 and "is not a directory" in result["msg"]


def test_unwritable_directory_leaves_nothing_half_written(cdi, node, monkeypatch):
    """A rename that fails (a read-only /etc, as root cannot be kept out by a mode) leaves the old spec whole and
    no temporary file behind."""
    prepare(node, cdi.install("pcie-l40s"))
    node.file("/etc/cdi/nvidia.yaml", "old: spec\n")

    def refuse(_src, _dst):
        raise PermissionError(30, "Read-only file system")

    monkeypatch.setattr(_files.os, "replace", refuse)
    rc, result = cdi("pcie-l40s", **node.args())
    assert rc == 1 and result["msg"].endswith("cannot be written: Read-only file system; nothing was written")
    assert result["changed"] is False
    assert os.listdir(node.path("/etc/cdi")) == ["nvidia.yaml"]
    assert open(node.path("/etc/cdi/nvidia.yaml"), encoding="ascii").read() == "old: spec\n"


def test_mode_only_is_fixed(cdi, node):
    prepare(node, cdi.install("pcie-l40s"))
    assert cdi("pcie-l40s", **node.args())[0] == 0
    os.chmod(node.path("/etc/cdi/nvidia.yaml"), 0o600)
    rc, checked = cdi("pcie-l40s", **node.args(state="check"))
    assert (checked["stale"], checked["differs"]) == (False, True)
    rc, fixed = cdi("pcie-l40s", **node.args())
    assert rc == 0 and fixed["changed"] and stat.S_IMODE(os.stat(node.path("/etc/cdi/nvidia.yaml")).st_mode) == 0o644


def test_directories_made_for_a_spec_that_cannot_be_written_are_removed(cdi, node, monkeypatch):
    """The failure says nothing was written, and that holds for the directories too: those the run made for the spec
    are removed again when the spec cannot be put in place."""
    prepare(node, cdi.install("pcie-l40s"))

    def refuse(_src, _dst):
        raise PermissionError(30, "Read-only file system")

    os.makedirs(node.path("/etc"))
    monkeypatch.setattr(_files.os, "replace", refuse)
    target = node.path("/etc/cdi/site/nvidia.yaml")
    rc, result = cdi("pcie-l40s", **dict(node.args(), path=target))
    assert rc == 1 and result["msg"].endswith("cannot be written: Read-only file system; nothing was written")
    assert result["changed"] is False
    assert os.path.isdir(node.path("/etc")) and not os.path.lexists(node.path("/etc/cdi"))
