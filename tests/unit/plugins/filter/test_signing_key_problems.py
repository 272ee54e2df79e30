"""signing_key_problems over what the real gpg prints for key files made at test time."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.plugin_utils._signing_key_problems_filters import (
    FilterModule,
    signing_key_problems,
)

pytestmark = pytest.mark.skipif(shutil.which("gpg") is None, reason="needs gpg")  # make test installs it


class Keys:
    """Two throw-away signing keys (one with a subkey) in their own GNUPGHOME, exported as key files."""

    def __init__(self, home):
        self.home = home
        home.mkdir(mode=0o700)
        self.env = dict(os.environ, GNUPGHOME=str(home))
        self.pinned = self.generate("Pinned Repository <pinned@example.org>")
        self.other = self.generate("Someone Else <other@example.org>")
        self.gpg("--quick-add-key", self.pinned, "ed25519", "sign", "never")

    def gpg(self, *args):
        return subprocess.run(["gpg", "--batch", "--quiet", "--no-tty", "--pinentry-mode", "loopback",
                               "--passphrase", "", *args], env=self.env, capture_output=True, check=True).stdout

    def generate(self, uid):
        self.gpg("--quick-generate-key", uid, "ed25519", "sign", "never")
        listing = self.gpg("--with-colons", "--list-keys", uid).decode()
        return next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))

    def export(self, *fingerprints, secret=False):
        return self.gpg("--armor", "--export-secret-keys" if secret else "--export", *fingerprints)

    def show(self, path):
        """What the roles run on a downloaded key file."""
        out = subprocess.run(["gpg", "--batch", "--with-colons", "--show-keys", str(path)], env=self.env,
                             capture_output=True, check=False)
        return out.stdout.decode().splitlines()


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    made = Keys(tmp_path_factory.mktemp("gpg") / "home")
    yield made
    subprocess.run(["gpgconf", "--kill", "all"], env=made.env, check=False, capture_output=True)


def key_file(tmp_path, *parts):
    path = tmp_path / "repo.pub"
    path.write_bytes(b"".join(parts))
    return path


def test_the_pinned_key_with_its_subkey_is_trusted(keys, tmp_path):
    lines = keys.show(key_file(tmp_path, keys.export(keys.pinned)))
    assert sum(line.startswith("sub:") for line in lines) == 1  # the subkey is really there
    assert signing_key_problems(lines, keys.pinned) == []
    assert signing_key_problems("\n".join(lines), keys.pinned.lower()) == []  # text, any case


def test_the_pinned_key_plus_another_primary_key_is_refused(keys, tmp_path):
    lines = keys.show(key_file(tmp_path, keys.export(keys.pinned), keys.export(keys.other)))
    problems = signing_key_problems(lines, keys.pinned, source="https://mirror/repo.pub")
    assert problems == ["https://mirror/repo.pub holds primary key %s besides the pinned %s; only the pinned key "
                        "may be in it" % (keys.other, keys.pinned)]


def test_both_keys_in_one_export_are_refused_too(keys, tmp_path):
    lines = keys.show(key_file(tmp_path, keys.export(keys.other, keys.pinned)))
    assert len(signing_key_problems(lines, keys.pinned)) == 1


def test_another_key_alone_is_refused(keys, tmp_path):
    problems = signing_key_problems(keys.show(key_file(tmp_path, keys.export(keys.other))), keys.pinned)
    assert "the key file holds primary key %s besides the pinned" % keys.other in problems[0]
    assert problems[1] == "the key file does not hold the pinned %s" % keys.pinned


def test_a_pinned_fingerprint_that_is_only_a_subkey_is_refused(keys, tmp_path):
    lines = keys.show(key_file(tmp_path, keys.export(keys.pinned)))
    subkey = [line.split(":")[9] for line in lines if line.startswith("fpr:")][1]
    problems = signing_key_problems(lines, subkey)
    assert problems[-1] == "the key file does not hold the pinned %s as a primary key (only as a subkey)" % subkey


def test_secret_key_material_is_refused(keys, tmp_path):
    problems = signing_key_problems(keys.show(key_file(tmp_path, keys.export(keys.pinned, secret=True))), keys.pinned)
    assert problems == ["the key file holds secret key material; a repository key file holds public keys only"]


@pytest.mark.parametrize("content", [b"", b"not a key\n", b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n"])
def test_a_file_without_a_key_is_refused(keys, tmp_path, content):
    problems = signing_key_problems(keys.show(key_file(tmp_path, content)), keys.pinned)
    assert problems == ["the key file holds no OpenPGP key (expected the pinned %s)" % keys.pinned]


@pytest.mark.parametrize("listing, fingerprint, message", [
    (None, "A" * 40, "expected gpg's --with-colons output as text or lines, got NoneType"),
    ([1, 2], "A" * 40, "expected gpg's --with-colons output as text or lines, got list"),
    ([], "ABC", "fingerprint must be 40 hex digits, got 'ABC'"),
    ([], "A" * 39 + "\n", "fingerprint must be 40 hex digits"),
    ([], None, "fingerprint must be 40 hex digits, got None"),
])
def test_bad_input_is_a_filter_error(listing, fingerprint, message):
    with pytest.raises(AnsibleFilterError, match=message):
        signing_key_problems(listing, fingerprint)


@pytest.mark.parametrize("error", ["/var/cache/k.pub is a symbolic link, not a regular file; not read",
                                   "/var/cache/k.pub is a fifo, not a regular file; not read", "x" * 100000])
def test_a_file_node_probe_did_not_read_is_refused(error):
    """node_probe's keyrings give only an error for a path that is not a regular file (a link, a fifo) or too large:
    that is the one problem, never a key file that passes."""
    problems = signing_key_problems({"error": error}, "A" * 40, source="The key file at URL")
    assert len(problems) == 1 and problems[0].startswith("The key file at URL was not read: " + error[:900])
    assert len(problems[0]) <= 1100


def test_registered():
    assert FilterModule().filters()["_signing_key_problems"] is signing_key_problems


def run_show(keys, path):
    out = subprocess.run(["gpg", "--batch", "--with-colons", "--show-keys", str(path)], env=keys.env,
                         capture_output=True, text=True, check=False)
    return {"rc": out.returncode, "stdout_lines": out.stdout.splitlines(), "stderr_lines": out.stderr.splitlines()}


def test_the_registered_result_is_taken_whole(keys, tmp_path):
    assert signing_key_problems(run_show(keys, key_file(tmp_path, keys.export(keys.pinned))), keys.pinned) == []


def test_a_file_gpg_cannot_read_whole_is_refused(keys, tmp_path):
    junk = b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n!\n"
    result = run_show(keys, key_file(tmp_path, keys.export(keys.pinned), junk))
    assert result["rc"] != 0  # gpg's own verdict on the trailing junk
    problems = signing_key_problems(result, keys.pinned, source="the key")
    assert problems[0].startswith("gpg could not read all of the key (exit %d" % result["rc"])


def test_a_revoked_pinned_key_is_refused(keys, tmp_path):
    home = tmp_path / "revoking"
    home.mkdir(mode=0o700)
    shutil.copytree(keys.home, home, dirs_exist_ok=True, ignore=shutil.ignore_patterns("S.*"))
    env = dict(os.environ, GNUPGHOME=str(home))
    subprocess.run(["gpg", "--batch", "--yes", "--pinentry-mode", "loopback", "--passphrase", "",
                    "--output", str(tmp_path / "rev.asc"), "--gen-revoke", keys.pinned], env=env, input=b"y\n0\n\ny\n",
                   capture_output=True, check=False)
    if not (tmp_path / "rev.asc").exists():  # gpg writes one on key creation too
        shutil.copyfile(home / "openpgp-revocs.d" / ("%s.rev" % keys.pinned), tmp_path / "rev.asc")
        text = (tmp_path / "rev.asc").read_text().replace(":-----BEGIN", "-----BEGIN")
        (tmp_path / "rev.asc").write_text(text)
    subprocess.run(["gpg", "--batch", "--import", str(tmp_path / "rev.asc")], env=env, capture_output=True, check=True)
    exported = subprocess.run(["gpg", "--batch", "--armor", "--export", keys.pinned], env=env, capture_output=True,
                              check=True).stdout
    subprocess.run(["gpgconf", "--kill", "all"], env=env, check=False, capture_output=True)
    problems = signing_key_problems(keys.show(key_file(tmp_path, exported)), keys.pinned)
    assert problems == ["the key file holds the pinned %s, but that key is revoked" % keys.pinned]


PINNED = "A" * 40
PUB = "pub:-:255:22:0123456789ABCDEF:1700000000:::-:::scSC::::ed25519:::0:"
FPR = "fpr:::::::::%s:" % PINNED


@pytest.mark.parametrize("listing, problem", [
    ({"failed": True, "stdout_lines": [PUB, FPR], "stderr": "gpg: oops\ngpg: last words"},
     "gpg could not read all of the key file (exit unknown: gpg: last words)"),
    ({"rc": 2, "stdout_lines": [PUB, FPR], "stderr_lines": "not a list"},
     "gpg could not read all of the key file (exit 2: not a list)"),
    ([PUB, FPR, PUB], "the key file holds primary key (one without a fingerprint) besides the pinned"),
    ([PUB.replace("pub:-:", "pub:i:"), FPR], "but that key is invalid"),
    ([PUB.replace("pub:-:", "pub:d:"), FPR], "but that key is disabled"),
    ([PUB.replace("pub:-:", "pub:e:"), FPR], "but that key is expired"),
])
def test_listing_edge_cases(listing, problem):
    problems = signing_key_problems(listing, PINNED)
    assert any(problem in p for p in problems), problems


@pytest.mark.parametrize("capabilities, problem", [("scSC", False), ("cC", True), ("scESC", False)])
def test_must_sign_asks_for_a_usable_signing_capability(capabilities, problem):
    """gpg's capital letters are what the whole key can still do: without S its signing keys expired or were
    revoked. Only asked for with must_sign."""
    pinned = "EB693B3035CD5710E231E123A4B469963BF863CC"
    lines = ["pub:-:4096:1:A4B469963BF863CC:1650000000:::-:::%s::::::23::0:" % capabilities,
             "fpr:::::::::%s:" % pinned]
    assert signing_key_problems(lines, pinned) == []
    found = signing_key_problems(lines, pinned, source="the keyring", must_sign=True)
    assert found == (["the keyring holds the pinned %s, but it can no longer sign (its signing keys expired or were "
                      "revoked)" % pinned] if problem else [])
