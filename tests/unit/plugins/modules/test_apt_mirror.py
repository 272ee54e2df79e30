"""apt_mirror end to end: the simulated CUDA repository (tests/sim/mirror/cudamirror) served over HTTP on 127.0.0.1,
copied into a directory signed with a throw-away site key; check/real/idempotent runs, and every refusal leaving the
copy as it was."""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import http.server
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _apt_mirror as mirror
from ansible_collections.accelops.gpu.plugins.modules import apt_mirror

ROOT = Path(__file__).resolve().parents[4]
BUILD_SCRIPT = ROOT / "tests" / "sim" / "mirror" / "cudamirror" / "build.py"
REPO = Path("repos") / "debian12" / "x86_64"
PINNING = "nvidia-driver-pinning-550"
BRANCH = [PINNING, "cuda-drivers-550"]

pytestmark = pytest.mark.skipif(not all(shutil.which(tool) for tool in ("gpg", "gpgv", "dpkg-deb")),
                                reason="apt_mirror needs gpg, gpgv and dpkg-deb")


def gpg(home, *args, data=None):
    return subprocess.run(["gpg", "--homedir", str(home), "--batch", "--quiet", *args], input=data,
                          capture_output=True, check=True).stdout


def stop_agent(home):
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], capture_output=True, check=False)


def secret_fingerprint(home):
    for line in gpg(home, "--with-colons", "--list-secret-keys").decode().splitlines():
        if line.startswith("fpr:"):
            return line.split(":")[9]
    raise AssertionError("no secret key in %s" % home)


def sign(home, fingerprint, release):
    """InRelease of release (bytes), clear-signed with the key in home."""
    return gpg(home, "--local-user", fingerprint + "!", "--digest-algo", "SHA512", "--clearsign", data=release)


class Env:
    """The served tree, the upstream key and the site key."""

    def __init__(self, www, server, upstream, site_home, site_fingerprint):
        self.www, self.port, self.requests = www, server.server_address[1], server.requests
        self.tree = www / "good"
        self.key_home, self.fingerprint = upstream
        self.keyring = str(self.tree / ("%s.pub" % self.fingerprint[-8:].lower()))
        self.site_home, self.site_fingerprint = str(site_home), site_fingerprint

    def url(self, name="good"):
        return "http://127.0.0.1:%d/%s/" % (self.port, name)

    def args(self, dest, **changes):
        args = {"upstream": self.url(), "keyring": self.keyring, "fingerprint": self.fingerprint,
                "packages": list(BRANCH), "preferences_from": [PINNING], "dest": str(dest),
                "gnupg_home": self.site_home, "signing_key": self.site_fingerprint, "timeout": 10}
        args.update(changes)
        return args

    def variant(self, name, change):
        """A copy of the good tree under another name, changed by change(path); its URL."""
        path = self.www / name
        if not path.exists():
            shutil.copytree(self.tree, path)
            change(path)
        return self.url(name)


@pytest.fixture(scope="module")
def cuda_build(tmp_path_factory):
    """The simulated CUDA repositories: `make sim`'s when they are there, else built now (the units stage runs before
    the sim stage). Returns (outdir, upstream GnuPG home copy, fingerprint)."""
    outdir = ROOT / "build" / "mirror" / "cuda"
    if not ((outdir / "fingerprint").is_file() and (outdir / REPO / "InRelease").is_file()
            and (outdir / ".gnupg").is_dir()):
        outdir = tmp_path_factory.mktemp("cudamirror")
        command = [sys.executable, str(BUILD_SCRIPT), str(outdir)]
        fake_nvml = ROOT / "build" / "fakenvml" / "libnvidia-ml.so.1"
        if fake_nvml.is_file():
            command += ["--fake-nvml", str(fake_nvml)]
        subprocess.run(command, check=True, capture_output=True)
    # A copy of the upstream key's home, to sign tampered indexes with: the build's own is left alone.
    home = tmp_path_factory.mktemp("upstream-gnupg")
    shutil.copytree(outdir / ".gnupg", home, dirs_exist_ok=True, ignore=shutil.ignore_patterns("S.*", "*.lock"))
    os.chmod(home, 0o700)
    yield outdir, home, (outdir / "fingerprint").read_text().strip()
    stop_agent(home)


@pytest.fixture(scope="module")
def site_key(tmp_path_factory):
    """A throw-away site signing key: (GnuPG home, fingerprint)."""
    home = tmp_path_factory.mktemp("site-gnupg")
    os.chmod(home, 0o700)
    subprocess.run(["gpg", "--homedir", str(home), "--batch", "--pinentry-mode", "loopback", "--passphrase", "",
                    "--quick-generate-key", "accelops site mirror <mirror@site.invalid>", "ed25519", "sign", "never"],
                   check=True, capture_output=True)
    yield home, secret_fingerprint(home)
    stop_agent(home)


@pytest.fixture(scope="module")
def env(cuda_build, site_key, tmp_path_factory):
    """The good tree (and tampered copies made beside it) served on an ephemeral port of 127.0.0.1."""
    outdir, upstream_home, fingerprint = cuda_build
    www = tmp_path_factory.mktemp("www")
    (www / "good").symlink_to(outdir / REPO)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_request(self, *args):
            self.server.requests.append(self.path)  # the paths asked for, in order; nothing on the terminal

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(www)))
    server.requests = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield Env(www, server, (upstream_home, fingerprint), *site_key)
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def converged(env, tmp_path_factory):
    """A first copy of the driver branch 550, made once: (dest, the module's result). Tests take copies of it."""
    from ansible.module_utils.testing import patch_module_args

    dest = tmp_path_factory.mktemp("converged") / "x86_64"
    output = io.StringIO()
    with patch_module_args(env.args(dest)), contextlib.redirect_stdout(output), pytest.raises(SystemExit) as exit_info:
        apt_mirror.main()
    assert exit_info.value.code == 0, output.getvalue()
    return dest, json.loads(output.getvalue())


def run(module_result, args, check=False):
    if check:
        args = dict(args, _ansible_check_mode=True)
    return module_result(apt_mirror, args)


def snapshot(root):
    root = Path(root)
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def stanzas(path):
    return mirror.parse_stanzas(Path(path).read_text())


def verified_release(inrelease, key_file, tmp_path):
    """The text gpgv vouches for in inrelease, against the armored key_file alone."""
    keyring = tmp_path / "verify.gpg"
    home = tmp_path / "verify-gnupg"
    home.mkdir(mode=0o700, exist_ok=True)
    keyring.write_bytes(gpg(home, "--dearmor", data=Path(key_file).read_bytes()))
    output = tmp_path / "Release.verified"
    subprocess.run(["gpgv", "--homedir", str(home), "--keyring", str(keyring), "--output", str(output),
                    str(inrelease)], check=True, capture_output=True)
    return mirror.parse_stanzas(output.read_text())[0]


@pytest.fixture
def copy_of(converged, tmp_path):
    """A private copy of the converged mirror, and its parent directory (staging would appear there)."""
    dest = tmp_path / "site" / "x86_64"
    shutil.copytree(converged[0], dest)
    return dest


def assert_untouched(dest, before):
    assert snapshot(dest) == before
    assert sorted(os.listdir(dest.parent)) == [dest.name]  # no staging or old copy left beside it


def test_the_documentation_is_yaml():
    """ansible-doc and the docs site read these (a plain scalar with ": " in it is no YAML)."""
    import yaml

    options = yaml.safe_load(apt_mirror.DOCUMENTATION)["options"]
    assert sorted(options) == ["dest", "fingerprint", "gnupg_home", "keyring", "label", "origin", "packages",
                               "preferences_from", "recommends", "signing_key", "timeout", "upstream", "validate_certs"]
    assert "C(Pin: version)" in options["preferences_from"]["description"][0]
    assert yaml.safe_load(apt_mirror.EXAMPLES) and yaml.safe_load(apt_mirror.RETURN)


# --- A copy, check mode, idempotence ---------------------------------------------------------------------------------

def test_a_first_copy_check_mode_then_real_then_unchanged(module_result, env, converged, copy_of, tmp_path):
    dest = tmp_path / "fresh" / "x86_64"
    dest.parent.mkdir()
    rc, result = run(module_result, env.args(dest), check=True)
    assert rc == 0 and result["changed"], result
    assert list(dest.parent.iterdir()) == []  # check mode: nothing written, not even staging
    planned = result["packages"]
    assert result["downloaded"] == sorted(item["file"] for item in planned)

    dest, result = converged  # the real first run, made by the fixture the other tests share
    assert result["changed"] and result["packages"] == planned
    assert sorted(result["downloaded"]) == sorted(item["file"] for item in planned)
    assert result["outside"] == ["dkms"]
    assert result["pins"] == [{"packages": result["pins"][0]["packages"], "version": "550.*"}]
    assert "nvidia-*" in result["pins"][0]["packages"]
    assert result["key_file"] == str(dest / ("%s.pub" % env.site_fingerprint[-8:].lower()))
    assert sorted(os.listdir(dest.parent)) == ["x86_64"]

    versions = {}
    for item in result["packages"]:
        versions.setdefault(item["name"], []).append(item["version"])
    # The pins of nvidia-driver-pinning-550 keep both 550 releases of the branch, and nothing of 570 or 590.
    assert versions["cuda-drivers-550"] == ["550.127.08-1", "550.54.15-1"]
    assert sorted(versions["nvidia-driver"]) == ["550.127.08-1", "550.54.15-1"]
    assert versions[PINNING] == ["550-1"]
    assert all(version.startswith("550") for version in (v for values in versions.values() for v in values))
    assert "cuda-drivers" not in versions and "nvidia-kernel-open-dkms" not in versions

    # Signed by the site's key, as gpgv (apt's verifier) sees it with the key file written beside the index.
    release = verified_release(dest / "InRelease", result["key_file"], tmp_path)
    assert release["Origin"] == "NVIDIA" and release["Label"] == "NVIDIA CUDA"
    assert release["Architecture"] == "x86_64"
    hashes = mirror.release_hashes(release[None])[1]
    for name in ("Packages", "Packages.gz"):
        data = (dest / name).read_bytes()
        assert hashes[name] == (len(data), hashlib.sha256(data).hexdigest())
    assert gzip.decompress((dest / "Packages.gz").read_bytes()) == (dest / "Packages").read_bytes()
    upstream = {(s["Package"], s["Version"]): s for s in stanzas(env.tree / "Packages")}
    index = stanzas(dest / "Packages")
    assert sorted((s["Package"], s["Version"]) for s in index) == sorted(
        (item["name"], item["version"]) for item in result["packages"])
    for stanza in index:
        name = stanza["Filename"][2:]
        assert stanza["Filename"] == "./" + name and "/" not in name
        assert stanza["SHA256"] == upstream[stanza["Package"], stanza["Version"]]["SHA256"]
        assert hashlib.sha256((dest / name).read_bytes()).hexdigest() == stanza["SHA256"]
        assert (dest / name).stat().st_size == int(stanza["Size"])
    assert sorted(os.listdir(dest)) == sorted(
        [s["Filename"][2:] for s in index]
        + ["InRelease", "Packages", "Packages.gz", "Release", "Release.gpg", os.path.basename(result["key_file"])])
    assert oct(dest.stat().st_mode & 0o777) == "0o755"
    assert {oct(path.stat().st_mode & 0o777) for path in dest.iterdir()} == {"0o644"}

    # The second run (on a copy of it): nothing downloaded, the pinning package read from the copy (its SHA256 is the
    # signed index's).
    before = snapshot(copy_of)
    del env.requests[:]
    rc, second = run(module_result, env.args(copy_of))
    assert rc == 0 and not second["changed"] and second["downloaded"] == [], second
    assert snapshot(copy_of) == before
    assert [path for path in env.requests if path.endswith(".deb")] == []
    same = ("packages", "outside", "pins")
    assert {key: second[key] for key in same} == {key: result[key] for key in same}
    rc, result = run(module_result, env.args(copy_of), check=True)
    assert rc == 0 and not result["changed"]
    assert_untouched(copy_of, before)


def test_a_stale_file_or_a_changed_index_changes_it_again(module_result, env, copy_of):
    converged = snapshot(copy_of)
    (copy_of / "stale.deb").write_bytes(b"left over")
    before = snapshot(copy_of)
    rc, result = run(module_result, env.args(copy_of), check=True)
    assert rc == 0 and result["changed"] and result["downloaded"] == []
    assert snapshot(copy_of) == before
    rc, result = run(module_result, env.args(copy_of))
    assert rc == 0 and result["changed"] and result["downloaded"] == []
    assert not (copy_of / "stale.deb").exists()
    assert sorted(os.listdir(copy_of.parent)) == ["x86_64"]

    packages = copy_of / "Packages"
    packages.write_bytes(packages.read_bytes().replace(b"Priority: optional", b"Priority: extra", 1))
    rc, result = run(module_result, env.args(copy_of))
    assert rc == 0 and result["changed"]
    after = snapshot(copy_of)
    assert after["Packages"] == converged["Packages"]
    assert {name for name in after if after[name] != converged[name]} <= {"InRelease", "Release", "Release.gpg"}
    rc, result = run(module_result, env.args(copy_of))
    assert rc == 0 and not result["changed"]


def test_a_changed_label_or_origin_is_written(module_result, env, copy_of, tmp_path):
    """The copy in place is not the wanted one when its signed Release says another Label or Origin."""
    args = env.args(copy_of, label="Site CUDA", origin="Site")
    rc, result = run(module_result, args)
    assert rc == 0 and result["changed"] and result["downloaded"] == []
    release = verified_release(copy_of / "InRelease", result["key_file"], tmp_path)
    assert release["Label"] == "Site CUDA" and release["Origin"] == "Site"
    rc, result = run(module_result, args)
    assert rc == 0 and not result["changed"]
    rc, result = run(module_result, env.args(copy_of))
    assert rc == 0 and result["changed"]
    assert verified_release(copy_of / "InRelease", result["key_file"], tmp_path)["Label"] == "NVIDIA CUDA"


# --- Refusals: nothing changed ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("packages, words", [
    (["no-such-package"], "packages: no-such-package is not in the repository; nothing was changed"),
    (["cuda-drivers-550=550.1-1"],
     "packages: cuda-drivers-550=550.1-1 is not in the repository (it has 550.54.15-1, 550.127.08-1)"),
])
def test_a_package_the_repository_lacks_fails_naming_it(module_result, env, copy_of, packages, words):
    before = snapshot(copy_of)
    rc, result = run(module_result, env.args(copy_of, packages=[*BRANCH, *packages]))
    assert rc == 1 and words in result["msg"], result
    assert_untouched(copy_of, before)


@pytest.mark.parametrize("case", ["two keys", "wrong fingerprint", "no file"])
def test_a_keyring_that_is_not_the_pinned_key_alone_is_refused(module_result, env, copy_of, tmp_path, case):
    site = env.site_fingerprint
    if case == "two keys":
        keyring = tmp_path / "two.pub"
        keyring.write_bytes(Path(env.keyring).read_bytes() + gpg(env.site_home, "--armor", "--export"))
        args = env.args(copy_of, keyring=str(keyring))
        words = "keyring: %s holds %s, %s, not the pinned key %s alone" % (keyring, env.fingerprint, site,
                                                                           env.fingerprint)
    elif case == "wrong fingerprint":
        args = env.args(copy_of, fingerprint=site.lower())
        words = "keyring: %s holds %s, not the pinned key %s alone" % (env.keyring, env.fingerprint, site)
    else:
        args = env.args(copy_of, keyring=str(tmp_path / "missing.pub"))
        words = "keyring: %s is not a file" % (tmp_path / "missing.pub")
    before = snapshot(copy_of)
    rc, result = run(module_result, args)
    assert rc == 1 and result["msg"] == words + "; nothing was changed", result
    assert_untouched(copy_of, before)


def tamper_inrelease(path):
    inrelease = path / "InRelease"
    inrelease.write_bytes(inrelease.read_bytes().replace(b"Label: NVIDIA CUDA", b"Label: NVIDIA CUDB"))


def tamper_packages(path):
    index = path / "Packages"
    index.write_bytes(index.read_bytes().replace(b"Version: 550.54.15-1", b"Version: 550.54.16-1"))
    (path / "Packages.gz").write_bytes(gzip.compress(index.read_bytes(), mtime=0))


def tamper_deb(path):
    deb = path / "libcuda1_550.127.08-1_amd64.deb"
    data = bytearray(deb.read_bytes())
    data[-1] ^= 0xFF
    deb.unlink()
    deb.write_bytes(bytes(data))


@pytest.mark.parametrize("change, words", [
    (tamper_inrelease, "InRelease carries no good signature of the pinned key"),
    (tamper_packages, "/tamper_packages/Packages.gz does not match the SHA256 in the signed Release"),
])
def test_an_upstream_that_does_not_verify_is_refused(module_result, env, copy_of, change, words):
    url = env.variant(change.__name__, change)
    before = snapshot(copy_of)
    rc, result = run(module_result, env.args(copy_of, upstream=url))
    assert rc == 1 and words in result["msg"] and result["msg"].endswith("; nothing was changed"), result
    assert_untouched(copy_of, before)


def test_a_package_that_does_not_match_the_index_is_refused(module_result, env, copy_of, tmp_path):
    url = env.variant("bad-deb", tamper_deb)
    before = snapshot(copy_of)
    # The copy in place has the good file: it is kept, not downloaded again, and nothing changes.
    rc, result = run(module_result, env.args(copy_of, upstream=url))
    assert rc == 0 and not result["changed"]
    assert snapshot(copy_of) == before
    words = ("%slibcuda1_550.127.08-1_amd64.deb does not match the size and SHA256 of the signed index; nothing was "
             "changed" % url)
    # A copy in place that lacks it: the new copy, half built beside it, is removed; the old one stays.
    (copy_of / "libcuda1_550.127.08-1_amd64.deb").unlink()
    before = snapshot(copy_of)
    rc, result = run(module_result, env.args(copy_of, upstream=url))
    assert rc == 1 and result["msg"] == words, result
    assert_untouched(copy_of, before)
    # No copy yet: none after.
    dest = tmp_path / "fresh" / "x86_64"
    dest.parent.mkdir()
    rc, result = run(module_result, env.args(dest, upstream=url))
    assert rc == 1 and result["msg"] == words, result
    assert list(dest.parent.iterdir()) == []


def resigned(env, edit):
    """A change of the tree whose index is edited by edit(text) and signed again with the upstream key."""

    def change(path):
        index = path / "Packages"
        index.write_text(edit(index.read_text()))
        (path / "Packages.gz").unlink()
        data = index.read_bytes()
        release = ("Origin: NVIDIA\nLabel: NVIDIA CUDA\nArchitecture: x86_64\nSHA256:\n %s %d Packages\n"
                   % (hashlib.sha256(data).hexdigest(), len(data))).encode()
        (path / "InRelease").unlink()
        (path / "InRelease").write_bytes(sign(env.key_home, env.fingerprint, release))

    return change


def test_an_index_naming_a_file_outside_the_repository_is_refused(module_result, env, tmp_path):
    def outside(text):
        return text.replace("Filename: ./libcuda1_550.127.08-1_amd64.deb", "Filename: ../../etc/passwd.deb")

    url = env.variant("escape", resigned(env, outside))
    dest = tmp_path / "site" / "x86_64"
    dest.parent.mkdir()
    for check in (True, False):
        rc, result = run(module_result, env.args(dest, upstream=url), check=check)
        assert rc == 1 and "the index names an odd file '../../etc/passwd.deb' for libcuda1" in result["msg"], result
        assert list(dest.parent.iterdir()) == []


def test_the_resigned_index_itself_is_accepted(module_result, env, tmp_path):
    """The re-signing above is sound: an index only re-signed is copied."""
    url = env.variant("resigned", resigned(env, lambda text: text))
    rc, result = run(module_result, env.args(tmp_path / "x86_64", upstream=url), check=True)
    assert rc == 0 and result["changed"] and result["outside"] == ["dkms"], result


# --- Bad arguments ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("changes, words", [
    ({"upstream": "ftp://127.0.0.1/cuda/"}, "upstream: 'ftp://127.0.0.1/cuda/' is not an http:// or https:// URL"),
    ({"upstream": "http://127.0.0.1/cuda/\n"}, "upstream: "),
    ({"upstream": "http://127.0.0.1/cu\nda/"}, "upstream: "),
    ({"fingerprint": "3BF863CC"}, "fingerprint: '3BF863CC' is not a full key fingerprint (40 hex digits)"),
    ({"signing_key": "ABCD"}, "signing_key: 'ABCD' is not a full key fingerprint"),
    ({"signing_key": "0123456789ABCDEF0123456789ABCDEF01234567"},
     "signing_key: 0123456789ABCDEF0123456789ABCDEF01234567 has no secret key in "),
    ({"preferences_from": ["nvidia-driver-pinning-570"]},
     "preferences_from: nvidia-driver-pinning-570 is not one of packages"),
    ({"packages": []}, "packages: name at least one package"),
    ({"packages": ["cuda-drivers-550:amd64"]}, "packages: 'cuda-drivers-550:amd64' is not a package name"),
    ({"dest": "/"}, "dest: '/' is not a directory of its own"),
    ({"dest": "/nonexistent-accelops/x86_64"}, "dest: the directory /nonexistent-accelops above it does not exist"),
    ({"origin": "NVIDIA\nLabel: x"}, "origin: one line of text"),
    ({"label": " "}, "label: one line of text"),
    ({"timeout": 0}, "timeout: a number of seconds above 0"),
])
def test_bad_arguments_are_refused_naming_the_field(module_result, env, copy_of, changes, words):
    before = snapshot(copy_of)
    del env.requests[:]
    rc, result = run(module_result, dict(env.args(copy_of), **changes))
    assert rc == 1 and result["msg"].startswith(words) and result["msg"].endswith("; nothing was changed"), result
    assert_untouched(copy_of, before)
    assert env.requests == []  # refused before asking upstream


@pytest.mark.parametrize("check", [True, False])
def test_a_dest_that_is_not_a_directory_is_refused_before_anything(module_result, env, converged, tmp_path, check):
    """Also in check mode, and also a link to a copy in place: the new copy is renamed over dest, never through it."""
    link, plain = tmp_path / "link", tmp_path / "plain"
    link.symlink_to(converged[0])
    plain.write_text("a file")
    for dest in (link, plain):
        del env.requests[:]
        rc, result = run(module_result, env.args(dest), check=check)
        assert rc == 1 and result["msg"] == "dest: %s is not a directory; nothing was changed" % dest, result
        assert env.requests == []
    assert sorted(os.listdir(tmp_path)) == ["link", "plain"] and plain.read_text() == "a file"


@pytest.mark.parametrize("check", [True, False])
def test_a_dest_with_files_of_its_own_is_refused_before_anything(module_result, env, converged, tmp_path, check):
    """dest is replaced whole: a directory that holds anything but a copy's files (the site's notes, another tool's
    mirror) is refused, in check mode too, before upstream is asked."""
    dest = tmp_path / "x86_64"
    shutil.copytree(converged[0], dest)
    (dest / "README.site").write_text("ours")
    before = snapshot(dest)
    del env.requests[:]
    rc, result = run(module_result, env.args(dest), check=check)
    assert rc == 1 and result["msg"] == (
        "dest: %s holds files that are not a copy's (README.site): give a directory of its own; nothing was changed"
        % dest), result
    assert env.requests == []
    assert_untouched(dest, before)


def test_a_signing_key_behind_a_passphrase_is_refused_before_any_download(module_result, env, copy_of, tmp_path):
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    subprocess.run(["gpg", "--homedir", str(home), "--batch", "--pinentry-mode", "loopback", "--passphrase", "secret",
                    "--quick-generate-key", "site <m@site.invalid>", "ed25519", "sign", "never"],
                   check=True, capture_output=True)
    try:
        fingerprint = secret_fingerprint(home)
        before = snapshot(copy_of)
        del env.requests[:]
        rc, result = run(module_result, env.args(copy_of, gnupg_home=str(home), signing_key=fingerprint))
        assert rc == 1 and result["msg"].startswith(
            "signing_key: %s in %s cannot sign without a prompt (a key with a passphrase?): " % (fingerprint, home))
        assert result["msg"].endswith("; nothing was changed")
        assert env.requests == []
        assert_untouched(copy_of, before)
    finally:
        stop_agent(home)


def test_the_signing_key_needs_its_secret_key(module_result, env, copy_of):
    """The upstream key is known to gpg (a public key) but the site's home has no secret of it."""
    before = snapshot(copy_of)
    rc, result = run(module_result, env.args(copy_of, signing_key=env.fingerprint))
    assert rc == 1 and result["msg"] == "signing_key: %s has no secret key in %s; nothing was changed" % (
        env.fingerprint, env.site_home)
    assert_untouched(copy_of, before)


def test_an_upstream_that_does_not_answer_is_named(module_result, env, copy_of):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = "http://127.0.0.1:%d/cuda/" % port
    before = snapshot(copy_of)
    rc, result = run(module_result, env.args(copy_of, upstream=url, timeout=5))
    assert rc == 1 and result["msg"].startswith("cannot fetch %sInRelease: " % url), result
    assert "refused" in result["msg"].lower()
    assert_untouched(copy_of, before)
