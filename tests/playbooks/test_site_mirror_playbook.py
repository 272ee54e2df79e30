"""playbooks/site_mirror.yml on this machine, from a simulated CUDA repository (tests/sim/mirror/cudamirror/build.py,
built into a temporary directory) and a wheelhouse of one dummy wheel, both served by a private web server on an
ephemeral port of 127.0.0.1, signed with a site key made for the test. The nodes are never contacted.

Check mode on a new directory makes nothing; the build changes, a second run does not and leaves every file as it
was. What it must not write through or replace (a link out of site_mirror_dir, a directory that holds files no copy
holds) and an upstream key other than the pinned one are refused with one message, and nothing is changed.
The refusals of bad variables are the filter's, tested in tests/unit/plugins/filter/test_site_mirror.py.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import zipfile

import pytest

from simnode import ROOT, ansible_env, expose_collection

expose_collection()

BUILD_PY = ROOT / "tests" / "sim" / "mirror" / "cudamirror" / "build.py"
NVML_VERSION = "13.615.71"
# The nodes' variables: the driver branch 550 at one release, no toolkit, no exporter (so that one wheel,
# nvidia-ml-py, is all the wheelhouse needs).
INVENTORY = """
gpu_nodes:
  vars:
    nvidia_driver_branch: "550"
    accelops_gpu_install_toolkit: false
    accelops_gpu_install_monitoring: false
    nvml_python_version: "%s"
  hosts:
    gpu01: {nvidia_driver_version: 550.54.15}
    gpu02: {}
""" % NVML_VERSION


def dummy_wheel(directory, name, version):
    """A valid, empty pure-Python wheel: pip downloads it for any Python and platform."""
    dist = "%s-%s" % (name.replace("-", "_"), version)
    files = {
        "%s.dist-info/METADATA" % dist: "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version),
        "%s.dist-info/WHEEL" % dist: "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    path = directory / ("%s-py3-none-any.whl" % dist)
    with zipfile.ZipFile(path, "w") as wheel:
        for member, text in files.items():
            data = text.encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (member, digest, len(data)))
            wheel.writestr(member, data)
        record.append("%s.dist-info/RECORD,," % dist)
        wheel.writestr("%s.dist-info/RECORD" % dist, "\n".join(record) + "\n")
    return path


@contextlib.contextmanager
def served(directory):
    handler = functools.partial(QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    """The simulated CUDA repository and the wheelhouse, served; the site's GnuPG home with its key."""
    top = tmp_path_factory.mktemp("site-mirror")
    served_root = top / "served"
    (served_root / "wheels").mkdir(parents=True)
    subprocess.run([sys.executable, str(BUILD_PY), str(top / "cudamirror")], check=True, stdout=subprocess.DEVNULL)
    (served_root / "cuda").mkdir()
    (served_root / "cuda" / "repos").symlink_to(top / "cudamirror" / "repos")
    dummy_wheel(served_root / "wheels", "nvidia-ml-py", NVML_VERSION)
    home = top / "gnupg"
    home.mkdir(mode=0o700)
    gpg = ["gpg", "--homedir", str(home), "--batch", "--no-tty", "--quiet"]
    subprocess.run([*gpg, "--pinentry-mode", "loopback", "--passphrase", "", "--quick-generate-key",
                    "Site <mirror@site.example>", "ed25519", "sign", "never"], check=True, capture_output=True)
    listing = subprocess.run([*gpg, "--with-colons", "--list-secret-keys"], check=True, capture_output=True, text=True)
    site_key = re.search(r"^fpr:(?:[^:]*:){8}([0-9A-F]{40}):", listing.stdout, re.M).group(1)
    upstream_key = (top / "cudamirror" / "fingerprint").read_text(encoding="utf-8").strip()
    (top / "inventory.yml").write_text(INVENTORY, encoding="utf-8")
    with served(served_root) as url:
        yield {"top": top, "url": url, "home": home, "site_key": site_key, "upstream_key": upstream_key}
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], check=False, capture_output=True)


def play(upstream, mirror_dir, *args, **extra):
    variables = {
        "site_mirror_dir": str(mirror_dir),
        "site_mirror_gnupg_home": str(upstream["home"]),
        "site_mirror_signing_key": upstream["site_key"],
        "site_mirror_cuda_base_url": upstream["url"] + "/cuda/repos",
        "site_mirror_cuda_keys": {"debian12": {"name": upstream["upstream_key"][-8:].lower() + ".pub",
                                               "fingerprint": upstream["upstream_key"]}},
        "site_mirror_pip_index_url": "",
        "site_mirror_pip_find_links": [upstream["url"] + "/wheels/"],
    }
    variables.update(extra)
    run = subprocess.run(["ansible-playbook", "-i", "inventory.yml", "accelops.gpu.site_mirror",
                          "-e", json.dumps(variables), *args],
                         cwd=upstream["top"], env=ansible_env(), capture_output=True, text=True, check=False)
    out = run.stdout + run.stderr
    assert "Traceback" not in out, out[-3000:]
    return run.returncode, out


def changed(out):
    return int(re.search(r"localhost\s+: ok=\d+\s+changed=(\d+)", out).group(1))


def tree(path):
    """Every path below ``path`` with its kind, size, mode and modification time."""
    found = {}
    for directory, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            stat = os.lstat(os.path.join(directory, name))
            found[os.path.relpath(os.path.join(directory, name), path)] = (stat.st_mode, stat.st_size, stat.st_mtime_ns)
    return found


def test_check_mode_makes_nothing_then_the_build_then_a_second_run_changes_nothing(upstream, tmp_path):
    mirror = tmp_path / "mirror"
    rc, out = play(upstream, mirror, "--check")
    assert rc == 0, out[-3000:]
    assert "would carry, for 2 node(s): debian12: " in out
    assert not mirror.exists()

    rc, out = play(upstream, mirror)
    assert rc == 0, out[-3000:]
    copy = mirror / "cuda" / "repos" / "debian12" / "x86_64"
    assert {"InRelease", "Release", "Release.gpg", "Packages", "Packages.gz",
            upstream["site_key"][-8:].lower() + ".pub"} <= {path.name for path in copy.iterdir()}
    debs = {path.name for path in copy.glob("*.deb")}
    assert "nvidia-driver-pinning-550.54.15_550.54.15-1_all.deb" in debs
    assert not [name for name in debs if name.startswith(("cuda-toolkit", "cudnn"))]
    assert (mirror / "cuda" / "repos" / "debian12" / "distribution-packages.txt").read_text() == "dkms\n"
    assert [path.name for path in (mirror / "wheels").iterdir()] == ["nvidia_ml_py-%s-py3-none-any.whl" % NVML_VERSION]

    before = tree(mirror)
    rc, out = play(upstream, mirror)
    assert rc == 0 and changed(out) == 0, out[-3000:]
    assert tree(mirror) == before


def test_a_link_out_of_the_mirror_is_refused_and_what_it_leads_to_is_kept(upstream, tmp_path):
    """The copy replaces <distro>/x86_64 whole: through a link it would replace a directory outside site_mirror_dir."""
    outside = tmp_path / "outside"
    (outside / "x86_64").mkdir(parents=True)
    (outside / "x86_64" / "precious.txt").write_text("kept")
    mirror = tmp_path / "mirror"
    (mirror / "cuda" / "repos").mkdir(parents=True)
    (mirror / "cuda" / "repos" / "debian12").symlink_to(outside)
    before = tree(tmp_path)
    rc, out = play(upstream, mirror)
    assert rc == 2, out[-3000:]
    assert "%s/cuda/repos/debian12 is a symbolic link" % mirror in out
    assert "nothing was changed." in out
    assert tree(tmp_path) == before


def test_a_directory_that_holds_what_no_copy_holds_is_not_replaced(upstream, tmp_path):
    """Another tool's mirror, or the site's files, where the copy would go; the name has shell pattern characters,
    which the role's look at the directory must take as themselves."""
    mirror = tmp_path / "mirror[1]*"
    copy = mirror / "cuda" / "repos" / "debian12" / "x86_64"
    copy.mkdir(parents=True)
    (copy / "Packages").write_text("")
    (copy / "cuda-debian12.pin").write_text("kept")
    before = tree(tmp_path)
    rc, out = play(upstream, mirror)
    assert rc == 2, out[-3000:]
    assert "%s holds cuda-debian12.pin, which no copy of this role has" % copy in out
    assert tree(tmp_path) == before


def test_an_upstream_key_other_than_the_pinned_one_is_refused_before_anything_is_made(upstream, tmp_path):
    mirror = tmp_path / "mirror"
    pinned = "0123456789ABCDEF0123456789ABCDEF01234567"
    rc, out = play(upstream, mirror, site_mirror_cuda_keys={
        "debian12": {"name": upstream["upstream_key"][-8:].lower() + ".pub", "fingerprint": pinned}})
    assert rc == 2, out[-3000:]
    assert "does not hold the pinned %s (the key pinned for debian12 in site_mirror_cuda_keys)" % pinned in out
    assert "nothing was changed." in out
    assert not mirror.exists()
