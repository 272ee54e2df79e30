"""node_probe's main() on this machine's own package database, files and commands."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile

import pytest
from hostile import alarm

from ansible_collections.accelops.gpu.plugins.modules import node_probe
from ansible_collections.accelops.gpu.plugins.plugin_utils._signing_key_problems_filters import signing_key_problems


def test_reads_everything_in_one_call(module_result, tmp_path):
    conf = tmp_path / "nvidia.conf"
    conf.write_text("options nvidia NVreg_PreserveVideoMemoryAllocations=1\n")
    rc, result = module_result(node_probe, {
        "package_facts": True, "files": [str(tmp_path / "missing")], "read": [str(conf)],
        "globs": [str(tmp_path / "*.conf")], "commands": ["apt_policy", "dkms_status", "slurmd_hardware"]})
    assert rc == 0, result
    assert result["changed"] is False
    if shutil.which("dpkg-query"):
        # This machine's own package database, as package_facts would set it.
        assert result["ansible_facts"]["packages"]["dpkg"][0]["version"]
        assert "accelops-no-such-package" not in result["ansible_facts"]["packages"]
        assert isinstance(result["holds"], list)
    assert result["files"][str(tmp_path / "missing")] == {"exists": False}
    assert base64.b64decode(result["files"][str(conf)]["content"]) == conf.read_bytes()
    assert result["globs"] == {str(tmp_path / "*.conf"): [str(conf)]}
    for name, program in (("apt_policy", "apt-cache"), ("dkms_status", "dkms"), ("slurmd_hardware", "slurmd")):
        # A program that is not installed answers as a shell would: rc 127, not a failed probe.
        assert result["commands"][name]["rc"] == (127 if not shutil.which(program) else result["commands"][name]["rc"])
        assert result["commands"][name]["stdout_lines"] == result["commands"][name]["stdout"].splitlines()
    # Nothing asked for, nothing run.
    assert result["candidates"] == {} and result["services"] == {}
    rc, result = module_result(node_probe, {})
    assert rc == 0 and result["holds"] is None and "ansible_facts" not in result


def test_sacctmgr_clusters_lists_the_clusters_slurmdbd_knows(module_result, tmp_path, monkeypatch):
    # A stand-in sacctmgr on PATH that prints its arguments and the clusters, as sacctmgr -n -P prints them.
    program = tmp_path / "sacctmgr"
    program.write_text('#!/bin/sh\necho "args=$*" >&2\nprintf "gpucluster\\nother\\n"\n')
    program.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (tmp_path, os.environ["PATH"]))
    rc, result = module_result(node_probe, {"commands": ["sacctmgr_clusters"]})
    assert rc == 0, result
    clusters = result["commands"]["sacctmgr_clusters"]
    assert clusters["rc"] == 0 and clusters["stdout_lines"] == ["gpucluster", "other"]
    assert clusters["stderr"].strip() == "args=--noheader --parsable2 list cluster format=Cluster"


@pytest.mark.parametrize("args, field", [
    ({"candidates": ["--admindir=/tmp"]}, "candidates"),
    ({"candidates": ["two words"]}, "candidates"),
    ({"services": [""]}, "services"),
    ({"services": ["nvidia-*.service"]}, "services"),
    ({"users": ["root extra"]}, "users"),
    ({"users": ["ro\x00ot"]}, "users"),
    ({"candidates": ["slurmd\x00"]}, "candidates"),
    ({"files": ["relative/path"]}, "files"),
    ({"read": ["~/.ssh/id_rsa"]}, "read"),
    # Only the fixed read-only commands run: nothing else can be slipped in.
    ({"commands": ["rm -rf /"]}, "value of commands must be one or more of"),
    ({"commands": {"x": ["/usr/bin/rm", "-rf", "/tmp/x"]}}, "argument 'commands' is of type dict"),
])
def test_bad_input_names_the_field(module_result, args, field):
    rc, result = module_result(node_probe, args)
    assert rc == 1
    assert result["msg"].startswith(field) or field in result["msg"], result["msg"]


@pytest.mark.parametrize("args, field", [
    ({"files": ["relative/" + "x" * 100000] * 1000}, "files"),
    ({"keyrings": ["k%d" % n for n in range(100000)]}, "keyrings"),
    ({"users": ["-" + "u" * 100000]}, "users"),
])
def test_bad_input_is_one_bounded_message(module_result, args, field):
    """A careless list (thousands of entries, a megabyte each) gets one short message naming the field, never the whole
    input echoed back."""
    rc, result = module_result(node_probe, args)
    assert rc == 1 and result["msg"].startswith(field + ":"), result["msg"][:300]
    assert len(result["msg"]) < 1000, len(result["msg"])


def test_paths_are_keyed_as_given(module_result, tmp_path, monkeypatch):
    """A path is neither expanded nor normalised: the caller finds its answer under the string it asked with."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "efivar").write_bytes(b"\x06\x00\x00\x00\x01")
    asked = str(tmp_path) + "//efivar"
    rc, result = module_result(node_probe, {"read": [asked]})
    assert rc == 0, result
    assert base64.b64decode(result["files"][asked]["content"])[-1:] == b"\x01"


def test_users_as_getent_gives_them(module_result):
    """An account through the name service: root with its home and shell; a name no account has is absent, not an
    error."""
    rc, result = module_result(node_probe, {"users": ["root", "accelops-no-such-user"]})
    assert rc == 0, result
    root = result["users"]["root"]
    assert root["exists"] is True and root["uid"] == 0 and root["gid"] == 0 and root["home"].startswith("/")
    assert set(root) == {"exists", "uid", "gid", "comment", "home", "shell"}
    assert result["users"]["accelops-no-such-user"] == {"exists": False}


@pytest.mark.skipif(shutil.which("gpg") is None, reason="needs gpg")  # make test installs it
def test_keyrings_are_listed_without_touching_a_gnupg_home(module_result, tmp_path, monkeypatch):
    """A repository's keyring, listed as the roles check a downloaded key: the listing passes signing_key_problems
    for the key's own fingerprint, a missing path is null, a directory an error, a file gpg cannot read answers with
    its rc;
    neither root's GnuPG home nor the temporary one is left behind."""
    maker = tmp_path / "maker"
    maker.mkdir(mode=0o700)
    env = dict(os.environ, GNUPGHOME=str(maker))
    gpg = ["gpg", "--batch", "--quiet", "--no-tty", "--pinentry-mode", "loopback", "--passphrase", ""]
    subprocess.run([*gpg, "--quick-generate-key", "Repo <repo@example.org>", "ed25519", "sign", "never"], env=env,
                   check=True, capture_output=True)
    listing = subprocess.run([*gpg, "--with-colons", "--list-keys"], env=env, check=True, capture_output=True,
                             text=True)
    fingerprint = next(line.split(":")[9] for line in listing.stdout.splitlines() if line.startswith("fpr:"))
    keyring = tmp_path / "repo.asc"
    keyring.write_bytes(subprocess.run([*gpg, "--armor", "--export", fingerprint], env=env, check=True,
                                       capture_output=True).stdout)
    subprocess.run(["gpgconf", "--kill", "all"], env=env, check=False, capture_output=True)
    junk = tmp_path / "junk.asc"
    junk.write_bytes(b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n!\n")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GNUPGHOME", raising=False)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    homes = []
    real = tempfile.TemporaryDirectory

    def spy(*args, **kwargs):
        made = real(*args, **kwargs)
        homes.append(made.name)
        return made

    monkeypatch.setattr(node_probe.tempfile, "TemporaryDirectory", spy)
    asked = [str(keyring), str(tmp_path / "missing.asc"), str(tmp_path), str(junk)]
    rc, result = module_result(node_probe, {"keyrings": asked})
    assert rc == 0, result
    listed = result["keyrings"][str(keyring)]
    assert listed["rc"] == 0 and listed["stdout_lines"] == listed["stdout"].splitlines()
    assert listed["cmd"] == ["gpg", "--batch", "--with-colons", "--show-keys", "--", str(keyring)]
    assert signing_key_problems(listed, fingerprint) == []
    assert signing_key_problems(listed, "0" * 40) != []
    assert result["keyrings"][str(tmp_path / "missing.asc")] is None
    assert result["keyrings"][str(tmp_path)] == {"error": "%s is a directory, not a regular file; not read" % tmp_path}
    assert result["keyrings"][str(junk)]["rc"] != 0
    assert signing_key_problems(result["keyrings"][str(junk)], fingerprint)[0].startswith("gpg could not read all")
    # One GnuPG home per key file gpg read, under the temporary directory, each gone afterwards.
    assert len(homes) == 2 and all(name.startswith(str(tmp_path / "tmp")) for name in homes)
    assert list(home.iterdir()) == [] and list((tmp_path / "tmp").iterdir()) == []
    rc, result = module_result(node_probe, {"keyrings": ["repo.asc"]})
    assert rc == 1 and result["msg"].startswith("keyrings: paths must be absolute"), result


def first_fingerprint(listing):
    return next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))


@pytest.fixture(scope="module")
def two_keys(tmp_path_factory):
    """A pinned and another throw-away signing key, armored as a repository publishes one."""
    home = tmp_path_factory.mktemp("gpg")
    env = dict(os.environ, GNUPGHOME=str(home))
    gpg = ["gpg", "--batch", "--quiet", "--no-tty", "--pinentry-mode", "loopback", "--passphrase", ""]
    made = {}
    for name in ("pinned", "other"):
        subprocess.run([*gpg, "--quick-generate-key", "%s <%s@example.org>" % (name, name), "ed25519", "sign",
                        "never"], env=env, check=True, capture_output=True)
        listing = subprocess.run([*gpg, "--with-colons", "--list-keys", "%s@example.org" % name], env=env, check=True,
                                 capture_output=True, text=True).stdout
        fingerprint = first_fingerprint(listing)
        made[name] = (fingerprint, subprocess.run([*gpg, "--armor", "--export", fingerprint], env=env, check=True,
                                                  capture_output=True).stdout)
    yield made
    subprocess.run(["gpgconf", "--kill", "all"], env=env, check=False, capture_output=True)


def relabel(armored, label):
    return armored.replace(b"PGP PUBLIC KEY BLOCK", label)


@pytest.mark.skipif(shutil.which("gpg") is None, reason="needs gpg")
@pytest.mark.parametrize("extra, problem", [
    # gpg skips an armored block whose header it does not accept; apt reads every block, whatever its label.
    (lambda other: relabel(other, b"ATTACKER"), "holds the armored blocks 'PGP PUBLIC KEY BLOCK', 'ATTACKER'"),
    (lambda other: relabel(other, b"PGP SIGNATURE"), "'PGP SIGNATURE'; only one PGP PUBLIC KEY BLOCK"),
    (lambda other: b"Comment: anything\n", "holds text outside its key block"),
    (lambda other: other, "besides the pinned"),
], ids=["odd-label", "signature-block", "text-outside", "second-key-block"])
def test_a_key_file_apt_would_read_more_of_is_refused(module_result, tmp_path, two_keys, extra, problem):
    """A key file is trusted whole: the probe's armor layout makes the filter refuse what gpg alone does not list."""
    pinned, pinned_key = two_keys["pinned"]
    _other, other_key = two_keys["other"]
    plain, hostile = tmp_path / "plain.asc", tmp_path / "hostile.asc"
    plain.write_bytes(pinned_key)
    hostile.write_bytes(pinned_key + extra(other_key))
    rc, result = module_result(node_probe, {"keyrings": [str(plain), str(hostile)]})
    assert rc == 0, result
    assert result["keyrings"][str(plain)]["armor_blocks"] == ["PGP PUBLIC KEY BLOCK"]
    assert signing_key_problems(result["keyrings"][str(plain)], pinned) == []
    problems = signing_key_problems(result["keyrings"][str(hostile)], pinned, source="the key")
    assert any(problem in found for found in problems), problems


def sparse(path, size):
    with open(path, "wb") as handle:
        handle.truncate(size)


@pytest.mark.parametrize("make, said", [
    (lambda path, target: path.symlink_to(target), "is a symbolic link, not a regular file; not read"),
    (lambda path, target: os.mkfifo(path), "is a fifo, not a regular file; not read"),
    (lambda path, target: sparse(path, 2 ** 21), "is 2097152 bytes, more than the limit of 1 MiB; not read"),
], ids=["link", "fifo", "sparse-2MiB"])
def test_a_key_file_that_is_not_a_small_regular_file_is_refused_not_skipped(module_result, tmp_path, make, said):
    """Only a regular file is listed; a symbolic link (even to a good key file), a fifo or a file larger than 1 MiB is
    an error that signing_key_problems refuses, not a null that the roles' fingerprint check skips."""
    target = tmp_path / "key.asc"
    target.write_bytes(b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n-----END PGP PUBLIC KEY BLOCK-----\n")
    path = tmp_path / "download.asc"
    make(path, target)
    with alarm(10):
        rc, result = module_result(node_probe, {"keyrings": [str(path)]})
    assert rc == 0 and result["keyrings"] == {str(path): {"error": "%s %s" % (path, said)}}, result
    problems = signing_key_problems(result["keyrings"][str(path)], "A" * 40, source="The key file at URL")
    assert problems == ["The key file at URL was not read: %s %s" % (path, said)]


def test_files_that_would_block_or_never_end_are_reported_not_read(module_result, tmp_path):
    """A fifo is typed, never opened; a sparse file of 1 TiB is an error naming the path, not an endless hash."""
    fifo, big = tmp_path / "kmsg", tmp_path / "sparse.img"
    os.mkfifo(fifo)
    sparse(big, 2 ** 40)
    with alarm(10):
        rc, result = module_result(node_probe, {"files": [str(fifo)], "read": [str(big)]})
    assert rc == 0, result
    assert result["files"][str(fifo)]["type"] == "other" and result["files"][str(fifo)]["kind"] == "fifo"
    assert result["files"][str(big)]["checksum"] is None and "content" not in result["files"][str(big)]
    assert result["files"][str(big)]["error"] == (
        "%s is 1099511627776 bytes, more than the limit of 64 MiB; not read" % big)
