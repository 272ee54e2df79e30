"""The parsers of node_probe over the text the tools print on a simulated node (Debian 12, the local mirror)."""

from __future__ import annotations

import base64
import hashlib
import os

import pytest
from hostile import alarm

from ansible_collections.accelops.gpu.plugins.module_utils import _probe

POLICY = """\
libnvidia-ml1:
  Installed: 550.54.15-1
  Candidate: 550.54.15-1
  Version table:
     590.48.01-1 600
        600 http://127.0.0.1:18080/cuda/repos/debian12/x86_64  Packages
     570.124.06-1 600
        600 http://127.0.0.1:18080/cuda/repos/debian12/x86_64  Packages
 *** 550.54.15-1 1000
        600 http://127.0.0.1:18080/cuda/repos/debian12/x86_64  Packages
        100 /var/lib/dpkg/status
nvidia-driver-pinning-550:
  Installed: (none)
  Candidate: 550-1
  Version table:
     550-1 600
        600 http://127.0.0.1:18080/cuda/repos/debian12/x86_64  Packages
cuda-drivers-550:
  Installed: 550.40.07-1
  Candidate: 550.54.15-1
  Version table:
     550.54.15-1 600
        600 http://127.0.0.1:18080/cuda/repos/debian12/x86_64  Packages
 *** 550.40.07-1 100
        100 /var/lib/dpkg/status
python3:
  Installed: 3.11.2-1+b1
  Candidate: 3.11.2-1+b1
  Version table:
 *** 3.11.2-1+b1 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
        100 /var/lib/dpkg/status
"""


def test_apt_policy():
    found = _probe.parse_apt_policy(POLICY, ["libnvidia-ml1", "nvidia-driver-pinning-550", "python3", "nosuch",
                                             "cuda-drivers-550"])
    assert found["libnvidia-ml1"] == {"known": True, "installed": "550.54.15-1", "candidate": "550.54.15-1",
                                      "versions": ["590.48.01-1", "570.124.06-1", "550.54.15-1"]}
    assert found["nvidia-driver-pinning-550"] == {"known": True, "installed": None, "candidate": "550-1",
                                                  "versions": ["550-1"]}
    assert found["python3"]["versions"] == ["3.11.2-1+b1"]
    # Installed, but no source offers it any more.
    assert found["cuda-drivers-550"]["versions"] == ["550.54.15-1"]
    assert found["cuda-drivers-550"]["installed"] == "550.40.07-1"
    # apt prints nothing for a name it does not know.
    assert found["nosuch"] == {"known": False, "installed": None, "candidate": None, "versions": []}


def test_apt_policy_without_candidate():
    text = "cuda-toolkit-12-8:\n  Installed: (none)\n  Candidate: (none)\n  Version table:\n"
    assert _probe.parse_apt_policy(text, ["cuda-toolkit-12-8"])["cuda-toolkit-12-8"] == {
        "known": True, "installed": None, "candidate": None, "versions": []}


@pytest.mark.parametrize("listing, installed, status", [
    ("slurmd\tinstall ok installed\n", "22.05.8-4", "installed"),
    ("slurmd\thold ok installed\n", "22.05.8-4", "installed"),
    ("slurmd:amd64\tinstall ok installed\n", "22.05.8-4", "installed"),
    # apt-cache policy says "Installed:" for these too; apt would install them again, so the probe does not.
    ("slurmd\tinstall ok half-configured\n", None, "half-configured"),
    ("slurmd\tinstall ok unpacked\n", None, "unpacked"),
    ("slurmd\tinstall reinstreq half-installed\n", None, "half-installed"),
    # dpkg does not list it (rc 1, nothing printed).
    ("", None, None),
    # Two architectures: each line must be fully installed, in either order.
    ("slurmd:amd64\tinstall reinstreq half-installed\nslurmd:i386\tinstall ok installed\n", None, "half-installed"),
    ("slurmd:i386\tinstall ok installed\nslurmd:amd64\tinstall ok unpacked\n", None, "unpacked"),
    ("slurmd:i386\tinstall ok installed\nslurmd:amd64\thold ok installed\n", "22.05.8-4", "installed"),
])
def test_complete_installs(listing, installed, status):
    policy = {"slurmd": {"known": True, "installed": "22.05.8-4", "candidate": "22.05.8-4", "versions": ["22.05.8-4"]},
              "munge": {"known": True, "installed": None, "candidate": "0.5.15-2", "versions": ["0.5.15-2"]}}
    found = _probe.complete_installs(policy, listing)
    assert found["slurmd"]["installed"] == installed and found["slurmd"]["status"] == status
    assert found["munge"] == {"known": True, "installed": None, "candidate": "0.5.15-2", "versions": ["0.5.15-2"],
                              "status": None}


@pytest.mark.parametrize("status, installed, hold", [
    ("hold ok installed", True, True),
    ("install ok installed", True, False),
    ("deinstall ok config-files", False, False),
    ("install ok half-configured", True, False),
    ("unknown ok not-installed", False, False),
    ("hold ok not-installed", False, True),
])
def test_dpkg_query(status, installed, hold):
    packages, holds = _probe.parse_dpkg_query("libnvidia-ml1\t550.54.15-1\tamd64\t%s\n" % status)
    assert ("libnvidia-ml1" in packages) is installed
    assert holds == (["libnvidia-ml1"] if hold else [])
    if installed:
        # The shape ansible.builtin.package_facts gives with apt.
        assert packages["libnvidia-ml1"] == [{"name": "libnvidia-ml1", "version": "550.54.15-1", "arch": "amd64",
                                              "source": "apt"}]


def test_dpkg_query_multiarch_and_garbage():
    text = ("libc6\t2.36-9\tamd64\tinstall ok installed\n"
            "libc6\t2.36-9\ti386\tinstall ok installed\n"
            "libfoo\t\tamd64\tdeinstall ok config-files\n"
            "garbage line\n"
            "nvidia-open\t550.54.15-1\tamd64\thold ok installed\n")
    packages, holds = _probe.parse_dpkg_query(text)
    assert [entry["arch"] for entry in packages["libc6"]] == ["amd64", "i386"]
    assert set(packages) == {"libc6", "nvidia-open"}
    assert holds == ["nvidia-open"]


def test_rpm_query():
    text = ("nvidia-driver\t550.54.15\t1.el9\t3\tx86_64\n"
            "kernel-devel\t5.14.0\t362.el9\t(none)\tx86_64\n"
            "kernel-devel\t5.14.0\t427.el9\t(none)\tx86_64\n"
            "package foo is not installed\n")
    packages = _probe.parse_rpm_query(text)
    # The shape ansible.builtin.package_facts gives with rpm, which kernel_headers_missing reads.
    assert packages["nvidia-driver"] == [{"name": "nvidia-driver", "version": "550.54.15", "release": "1.el9",
                                          "epoch": 3, "arch": "x86_64", "source": "rpm"}]
    assert [entry["release"] for entry in packages["kernel-devel"]] == ["362.el9", "427.el9"]
    assert packages["kernel-devel"][0]["epoch"] is None
    assert set(packages) == {"nvidia-driver", "kernel-devel"}


def test_systemctl_show():
    text = ("Id=nvidia-persistenced.service\nLoadState=loaded\nActiveState=active\nSubState=running\n"
            "UnitFileState=enabled\n\nId=nosuch.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\n"
            "UnitFileState=\n")
    found = _probe.parse_systemctl_show(text, ["nvidia-persistenced.service", "nosuch.service"])
    assert found["nvidia-persistenced.service"] == {"load_state": "loaded", "active_state": "active",
                                                    "sub_state": "running", "unit_file_state": "enabled"}
    assert found["nosuch.service"] == {"load_state": "not-found", "active_state": "inactive", "sub_state": "dead",
                                       "unit_file_state": None}


def test_file_state(tmp_path):
    path = tmp_path / "nvidia.conf"
    path.write_text("options nvidia NVreg_OpenRmEnableUnsupportedGpus=1\n")
    os.chmod(path, 0o640)
    os.symlink(str(path), str(tmp_path / "link"))
    state = _probe.file_state(str(path), read=True)
    assert state["exists"] is True and state["type"] == "file" and state["mode"] == "0640"
    # The checksum the copy and template modules compare.
    assert state["checksum"] == hashlib.sha1(path.read_bytes()).hexdigest()
    assert base64.b64decode(state["content"]) == path.read_bytes()
    assert "content" not in _probe.file_state(str(path))
    assert _probe.file_state(str(tmp_path / "link"))["target"] == str(path)
    assert _probe.file_state(str(tmp_path / "link"))["checksum"] is None
    assert _probe.file_state(str(tmp_path / "missing")) == {"exists": False}
    assert _probe.file_state(str(tmp_path))["type"] == "directory"


def test_a_fifo_put_in_place_of_a_file_is_not_waited_on(tmp_path, monkeypatch):
    """The path was a regular file when it was looked at (lstat) and is a fifo with no writer when it is opened:
    opened without blocking, it is refused as a fifo."""
    plain, fifo = tmp_path / "plain", tmp_path / "fifo"
    plain.write_text("x")
    os.mkfifo(fifo)
    real = os.lstat
    monkeypatch.setattr(_probe.os, "lstat", lambda path: real(plain) if path == str(fifo) else real(path))
    with alarm(5):
        state = _probe.file_state(str(fifo), read=True)
    assert state["type"] == "file" and state["checksum"] is None and "content" not in state
    assert state["error"] == "%s is a fifo, not a regular file; not read" % fifo


def test_a_link_put_in_place_of_a_file_is_not_followed(tmp_path, monkeypatch):
    plain, link = tmp_path / "plain", tmp_path / "link"
    plain.write_text("secret")
    link.symlink_to(plain)
    real = os.lstat
    monkeypatch.setattr(_probe.os, "lstat", lambda path: real(plain) if path == str(link) else real(path))
    state = _probe.file_state(str(link), read=True)
    assert state["checksum"] is None and "content" not in state
    assert state["error"] == "%s is a symbolic link; not followed" % link


def test_a_file_put_in_place_of_a_link_is_an_error_not_a_traceback(tmp_path, monkeypatch):
    """The path was a symbolic link when it was looked at (lstat) and is a regular file when its target is read
    (readlink raises EINVAL), or is gone by then (ENOENT): an error naming the path, no target, no exception."""
    plain, link = tmp_path / "plain", tmp_path / "link"
    plain.write_text("x")
    link.symlink_to(plain)
    real = os.lstat
    monkeypatch.setattr(_probe.os, "lstat", lambda path: real(link) if path in (str(plain), str(tmp_path / "gone"))
                        else real(path))
    state = _probe.file_state(str(plain))
    assert state["type"] == "link" and state["target"] is None
    assert state["error"].startswith("cannot read the link %s: " % plain)
    state = _probe.file_state(str(tmp_path / "gone"))
    assert state["target"] is None and state["error"].startswith("cannot read the link %s: " % (tmp_path / "gone"))


def test_a_stream_that_has_nothing_to_give_is_not_waited_on(tmp_path, monkeypatch):
    """As /proc/kmsg (a regular file to stat, a stream to read): open, nothing to read yet. A fifo with a writer that
    writes nothing stands in for it, taken for a regular file."""
    fifo = tmp_path / "stream"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # keeps a writer attached, so a blocking read would wait
    monkeypatch.setattr(_probe.stat, "S_ISREG", lambda mode: True)
    try:
        with alarm(5), pytest.raises(_probe.Refused, match="^%s would block when read" % fifo):
            _probe.read_regular(str(fifo))
    finally:
        os.close(writer)


@pytest.mark.parametrize("size, read, error", [
    (2 ** 40, False, "is 1099511627776 bytes, more than the limit of 64 MiB; not read"),
    (64 * 2 ** 20 + 1, True, "is 67108865 bytes, more than the limit of 64 MiB; not read"),
    (2 ** 20 + 1, True, None),
])
def test_a_large_sparse_file_is_an_error_not_an_endless_hash(tmp_path, size, read, error):
    path = tmp_path / "sparse"
    with open(path, "wb") as handle:
        handle.truncate(size)
    with alarm(10):
        state = _probe.file_state(str(path), read=read)
    if error:
        assert state["checksum"] is None and state["error"] == "%s %s" % (path, error) and "content" not in state
    else:  # hashed, but too large to return
        assert state["checksum"] == hashlib.sha1(b"\0" * size).hexdigest() and state["content"] is None


def test_globs(tmp_path):
    for name in ("vmlinuz-6.1.0-18-amd64", "vmlinuz-6.1.0-9-amd64", "config-6.1.0-9-amd64"):
        (tmp_path / name).write_text("")
    pattern = str(tmp_path / "vmlinuz-*")
    assert _probe.expand_globs([pattern]) == {pattern: [str(tmp_path / "vmlinuz-6.1.0-18-amd64"),
                                                        str(tmp_path / "vmlinuz-6.1.0-9-amd64")]}
