"""cuda_repo's repository directory, key and URL for every distribution it supports, rendered by Ansible's own
templating from the role's defaults and vars (the Ubuntu and RHEL paths cannot run in the test containers)."""

from __future__ import annotations

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from rolevars import Batch

from simnode import ROOT

ROLE = ROOT / "roles" / "cuda_repo"
NVIDIA = "https://developer.download.nvidia.com/compute/cuda/repos"
KEY_2022 = ("3bf863cc.pub", "EB693B3035CD5710E231E123A4B469963BF863CC")
KEY_DEBIAN13 = ("8793F200.pub", "02182E60104FCDC26EAE1B8597A5D4CB8793F200")
KEY_RHEL = ("D42D0685.pub", "610C7B14E068A878070DA4E99CD0A493D42D0685")


def render(facts, **overrides):
    loader = DataLoader()
    variables = {}
    for part in ("defaults", "vars"):  # loaded as Ansible loads role files: their strings are templates
        variables.update(loader.load_from_file(str(ROLE / part / "main.yml"), trusted_as_template=True))
    variables.update(overrides)
    variables["ansible_facts"] = facts
    templar = Templar(loader=loader, variables=variables)
    names = ("__cuda_repo_dir", "__cuda_repo_url", "__cuda_repo_key_name", "__cuda_repo_key_fingerprint")
    return tuple(str(templar.template(trust_as_template("{{ %s }}" % name))).strip() for name in names)


@pytest.mark.parametrize("distribution, major, arch, directory, key", [
    ("Debian", "12", "x86_64", "debian12/x86_64", KEY_2022),
    ("Debian", "13", "x86_64", "debian13/x86_64", KEY_DEBIAN13),
    ("Ubuntu", "20", "x86_64", "ubuntu2004/x86_64", KEY_2022),
    ("Ubuntu", "22", "x86_64", "ubuntu2204/x86_64", KEY_2022),
    ("Ubuntu", "24", "x86_64", "ubuntu2404/x86_64", KEY_2022),
    ("Ubuntu", "24", "aarch64", "ubuntu2404/sbsa", KEY_2022),
    ("RedHat", "8", "x86_64", "rhel8/x86_64", KEY_RHEL),
    ("RedHat", "9", "aarch64", "rhel9/sbsa", KEY_RHEL),
    ("Rocky", "9", "x86_64", "rhel9/x86_64", KEY_RHEL),
    ("AlmaLinux", "8", "x86_64", "rhel8/x86_64", KEY_RHEL),
])
def test_nvidia_layout_per_distribution(distribution, major, arch, directory, key):
    facts = {"distribution": distribution, "distribution_major_version": major, "architecture": arch}
    assert render(facts) == (directory, "%s/%s/" % (NVIDIA, directory), *key)


def test_mirror_and_overrides_win():
    facts = {"distribution": "Debian", "distribution_major_version": "12", "architecture": "x86_64"}
    result = render(facts, cuda_repo_base_url="https://mirror.example/cuda/repos//", cuda_repo_key_name="local.pub",
                    cuda_repo_key_fingerprint="ab12 " * 8)
    assert result == ("debian12/x86_64", "https://mirror.example/cuda/repos/debian12/x86_64/", "local.pub",
                      "AB12" * 8)


def test_unknown_distribution_resolves_to_nothing_usable():
    facts = {"distribution": "Fedora", "distribution_major_version": "41", "architecture": "x86_64"}
    assert render(facts)[0] == "/x86_64"  # preflight refuses it: not <distro>/<arch>


def test_pin_file_matches_nvidia():
    template = (ROLE / "templates" / "cuda-repository-pin.j2").read_text()
    templar = Templar(loader=DataLoader(), variables={
        "ansible_managed": "managed", "cuda_repo_pin_label": "NVIDIA CUDA", "cuda_repo_pin_priority": 600})
    text = str(templar.template(trust_as_template(template)))
    assert "Package: *\nPin: release l=NVIDIA CUDA\nPin-Priority: 600" in text


PINNED = KEY_2022[1]
OTHER = "0123456789ABCDEF0123456789ABCDEF01234567"
KEYRING = "/etc/apt/keyrings/cuda-archive-keyring.asc"


def listing(*fingerprints, rc=0, capabilities="scSC", armor=("PGP PUBLIC KEY BLOCK",)):
    """What node_probe's keyrings return for a key file: gpg's colon listing of these primary keys (capabilities: the
    key's own in lower case, those of the whole key that are usable in upper case) and the file's armor."""
    lines = []
    for fingerprint in fingerprints:
        lines += ["pub:-:4096:1:%s:1650000000:::-:::%s::::::23::0:" % (fingerprint[-16:], capabilities),
                  "fpr:::::::::%s:" % fingerprint]
    return {"rc": rc, "stdout": "\n".join(lines), "stdout_lines": lines,
            "stderr": "" if rc == 0 else "gpg: read error", "cmd": ["gpg"], "armor_blocks": list(armor),
            "text_outside_armor": False}


def keyring_case(keys, mode="0644", owner="root", **overrides):
    state = {"files": {KEYRING: {"exists": keys is not None, "type": "file", "mode": mode, "owner": owner,
                                 "group": "root", "checksum": "0" * 40}},
             "keyrings": {KEYRING: keys}}
    if keys is None:
        state["files"][KEYRING] = {"exists": False}
    facts = {"distribution": "Debian", "distribution_major_version": "12", "architecture": "x86_64"}
    return KEYRINGS.add([ROLE / "defaults" / "main.yml", ROLE / "vars" / "main.yml"],
                        {"ansible_facts": facts, "__cuda_repo_state": state, **overrides},
                        [("in_place", "{{ __cuda_repo_keyring_in_place }}")])


KEYRINGS = Batch()


@pytest.mark.parametrize("key, expected", [
    (keyring_case(listing(PINNED)), True),
    # The pinned key and another: the keyring is written again from the checked download.
    (keyring_case(listing(PINNED, OTHER)), False),
    (keyring_case(listing(OTHER)), False),
    # gpg could not read all of it, or it is not there, or not root's 0644 file.
    (keyring_case(listing(PINNED, rc=2)), False),
    (keyring_case(None), False),
    (keyring_case(listing(PINNED), mode="0666"), False),
    (keyring_case(listing(PINNED), owner="nobody"), False),
    # Another fingerprint pinned: the keyring in place no longer counts.
    (keyring_case(listing(PINNED), cuda_repo_key_fingerprint=OTHER), False),
    # A second armored block gpg does not list but apt reads.
    (keyring_case(listing(PINNED, armor=("PGP PUBLIC KEY BLOCK", "ATTACKER"))), False),
    # The key can no longer sign (its signing subkey expired or was revoked): downloaded again, in case it was renewed.
    (keyring_case(listing(PINNED, capabilities="cC")), False),
], ids=["pinned", "pinned-and-other", "other", "unreadable", "missing", "mode", "owner", "new-pin", "second-block",
        "cannot-sign"])
def test_keyring_in_place(key, expected):
    """Whether the keyring in place is trusted without a download (tasks/apt.yml): root's 0644 file whose gpg listing
    holds exactly the pinned primary key."""
    assert KEYRINGS[key]["in_place"] in ((True, "True") if expected else (False, "False"))


STAGED = "/var/cache/accelops-gpu/3bf863cc.pub"
LINKED = {"error": "%s is a symbolic link, not a regular file; not read" % STAGED}


def fingerprint_check(listing, check_mode=False):
    """The check of tasks/fingerprint.yml (its condition and its problems) on node_probe's read of the download."""
    task = next(t for t in yaml.safe_load((ROLE / "tasks" / "fingerprint.yml").read_text())
                if t["name"] == "Refuse a key file that holds anything but the pinned key")
    facts = {"distribution": "Debian", "distribution_major_version": "12", "architecture": "x86_64"}
    return KEYRINGS.add([ROLE / "defaults" / "main.yml", ROLE / "vars" / "main.yml"],
                        {"ansible_facts": facts, "ansible_check_mode": check_mode,
                         "__cuda_repo_key_read": {"keyrings": {STAGED: listing}}},
                        [("when", "{{ %s }}" % task["when"]), ("problems", task["vars"]["__cuda_repo_key_problems"])],
                        task_vars={"__cuda_repo_key_source": task["vars"]["__cuda_repo_key_source"]})


@pytest.mark.parametrize("key, runs, problem", [
    (fingerprint_check(listing(PINNED)), True, None),
    # A link (even to a good key) is refused, not skipped: the copy to the keyring would follow it.
    (fingerprint_check(LINKED), True, "The key file at %s/debian12/x86_64/3bf863cc.pub was not read: %s"
     % (NVIDIA, LINKED["error"])),
    (fingerprint_check(LINKED, check_mode=True), True, "was not read: "),
    # Nothing there: skipped only in check mode, where nothing may have been downloaded.
    (fingerprint_check(None, check_mode=True), False, None),
    (fingerprint_check(None), True, "3bf863cc.pub is not at %s after its download" % STAGED),
], ids=["pinned", "link", "link-check-mode", "missing-check-mode", "missing"])
def test_the_downloaded_key_is_checked_unless_check_mode_downloaded_nothing(key, runs, problem):
    rendered = KEYRINGS[key]
    assert rendered["when"] in ((True, "True") if runs else (False, "False")), rendered
    if problem is None and runs:
        assert rendered["problems"] in ([], "[]"), rendered
    elif problem is not None:
        assert any(problem in found for found in rendered["problems"]), rendered
