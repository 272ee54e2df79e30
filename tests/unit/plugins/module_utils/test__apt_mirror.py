"""_apt_mirror's pure logic: Debian's version order (asked of dpkg too), relations, deb822 paragraphs, requests, pins,
and the selection a node's apt would make from a small index."""

from __future__ import annotations

import gzip
import hashlib
import re
import shutil
import subprocess

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _apt_mirror as mirror
from ansible_collections.accelops.gpu.plugins.module_utils._apt_mirror import MirrorError

# (left, right, sign of left - right as Debian orders them)
VERSION_PAIRS = [
    ("1.0", "1.0", 0),
    ("1.0", "1.0-0", 0),                      # no revision reads as revision 0
    ("0:1.0", "1.0", 0),                      # no epoch reads as epoch 0
    ("1.001", "1.1", 0),                      # numbers, not strings
    ("1.0~rc1", "1.0", -1),                   # a tilde sorts before the end
    ("1.0~~", "1.0~", -1),
    ("1.0~~a", "1.0~~", 1),
    ("1.0~", "1.0", -1),
    ("1.0", "1.0+1", -1),
    ("1.0", "1.0.0", -1),
    ("1.0a", "1.0", 1),
    ("1.0a", "1.0+", -1),                     # letters before other characters
    ("1.0+", "1.0.", -1),                     # then by ASCII
    ("1.2.3", "1.2.3a~", -1),
    ("10", "9", 1),
    ("1:0.1", "2.0", 1),                      # the epoch first
    ("2:1", "10:0", -1),                      # a number
    ("1:1.0", "1:1.0~", 1),
    ("1:3.3.9", "1:4.2.3-1", -1),
    ("1.0-1", "1.0-1ubuntu1", -1),
    ("1.0-1~bpo1", "1.0-1", -1),
    ("1.0-0.1", "1.0-0", 1),
    ("1.0-1-1", "1.0-1", 1),                  # the revision is after the last hyphen
    ("4.2.3-4.1.3-1", "4.2.3-4.1.3", 1),
    ("550.54.15-1", "550.54.15", 1),
    ("550.127.08-1", "550.54.15-1", 1),
    ("12.4.127-1", "12.4.131-1", -1),
    ("2.26.2-1+cuda12.8", "2.26.2-1+cuda12.4", 1),
    ("9.8.0.87-1", "9.10.0.1-1", -1),
]


def sign(number):
    return (number > 0) - (number < 0)


@pytest.mark.parametrize("first, second, expected", VERSION_PAIRS)
def test_versions_are_ordered_as_dpkg_orders_them(first, second, expected):
    assert sign(mirror.compare_versions(first, second)) == expected
    assert sign(mirror.compare_versions(second, first)) == -expected
    if shutil.which("dpkg"):
        def dpkg(op):
            return subprocess.run(["dpkg", "--compare-versions", first, op, second], check=False).returncode == 0

        assert (-1 if dpkg("lt") else 0 if dpkg("eq") else 1) == expected


@pytest.mark.parametrize("version", ["a:1.0", ":1.0", "1a:2"])
def test_a_version_whose_epoch_is_not_a_number_is_refused(version):
    with pytest.raises(MirrorError, match=r"cannot read the version: .* is not a Debian version"):
        mirror.compare_versions("1.0", version)


@pytest.mark.parametrize("version, op, wanted, result", [
    ("1.0-1", None, None, True),
    ("1.0-1", "=", "1.0-1", True),
    ("1.0-1", "=", "1.0-2", False),
    ("1.0-1", ">=", "1.0-1", True),
    ("1.0-1", ">>", "1.0-1", False),
    ("1.0-2", ">>", "1.0-1", True),
    ("1.0-1", "<=", "1.0-1", True),
    ("1.0-1", "<<", "1.0-1", False),
    ("1.0~rc1", "<<", "1.0", True),
    ("1.0-1", "<", "1.0-1", True),              # the deprecated forms mean <= and >=
    ("1.0-1", ">", "1.0-1", True),
    ("1.0-2", "<", "1.0-1", False),
])
def test_satisfies(version, op, wanted, result):
    assert mirror.satisfies(version, op, wanted) is result


def test_parse_relations():
    text = ("libc6 (>= 2.34), dkms | nvidia-kernel-550.54.15 ,nvidia-driver-libs:amd64 (= 550.54.15-1), "
            "python3:any, foo [amd64 arm64], bar (<< 2~) [!i386] <!nocheck> <stage1 cross>, , baz(>>1)")
    assert mirror.parse_relations(text) == [
        [("libc6", ">=", "2.34")],
        [("dkms", None, None), ("nvidia-kernel-550.54.15", None, None)],
        [("nvidia-driver-libs", "=", "550.54.15-1")],
        [("python3", None, None)],
        [("foo", None, None)],
        [("bar", "<<", "2~")],
        [("baz", ">>", "1")],
    ]
    assert mirror.parse_relations("") == []
    assert mirror.parse_relations(" , ") == []


@pytest.mark.parametrize("text", ["Foo", "foo (>= )", "foo (~> 1)", "foo (>= 1", "foo bar", "-foo", "foo [amd64"])
def test_parse_relations_refuses_what_it_cannot_read(text):
    with pytest.raises(MirrorError, match="cannot read the relation"):
        mirror.parse_relations("libc6, " + text)


def test_parse_stanzas():
    text = ("\n# Track NVIDIA driver branch 550\nPackage: cuda-drivers* nvidia-*\nPin: version 550.*\n"
            "Pin-Priority: 1000\n\n \n\t\nPackage: a\nDescription: one\n two\n\tthree\nEmpty:\n"
            "Pin: release l=NVIDIA CUDA\n \nPackage: b\n")
    first, second, third = mirror.parse_stanzas(text)  # a line of blanks parts paragraphs (Debian Policy 5.1)
    assert {key: value for key, value in first.items() if key} == {
        "Package": "cuda-drivers* nvidia-*", "Pin": "version 550.*", "Pin-Priority": "1000"}
    assert first[None].startswith("# Track")
    assert second["Description"] == "one\n two\n\tthree"
    assert second["Empty"] == ""
    assert second["Pin"] == "release l=NVIDIA CUDA"  # a colon in the value stays
    assert second[None] == "Package: a\nDescription: one\n two\n\tthree\nEmpty:\nPin: release l=NVIDIA CUDA"
    assert third == {"Package": "b", None: "Package: b"}
    assert mirror.parse_stanzas("\n \n") == []
    with pytest.raises(MirrorError, match="cannot read the line 'no colon here'"):
        mirror.parse_stanzas("Package: a\nno colon here\n")


@pytest.mark.parametrize("text, result", [
    ("cuda-drivers-550", ("cuda-drivers-550", "")),
    (" cuda-drivers-550=550.54.15-1 ", ("cuda-drivers-550", "550.54.15-1")),
    ("datacenter-gpu-manager=1:3.3.9", ("datacenter-gpu-manager", "1:3.3.9")),
    ("libnccl2=2.26.2-1+cuda12.8", ("libnccl2", "2.26.2-1+cuda12.8")),
    ("g++=4:12.2.0-3", ("g++", "4:12.2.0-3")),
    ("libnccl2=*+cuda12.8", ("libnccl2", "*+cuda12.8")),
])
def test_parse_request(text, result):
    assert mirror.parse_request(text) == result


@pytest.mark.parametrize("text", [
    "", "Cuda", "-cuda", "cuda drivers", "cuda-drivers:amd64", "cuda=1=2", "cuda=1 2", "cuda=1\n2", "cuda\n=1",
    "cuda=a:1.0", "cuda=:1.0", "cuda=1.0\x00", "cuda=(>= 1)",
])
def test_parse_request_refuses(text):
    with pytest.raises(MirrorError, match=r"^packages: .* is not a package name, or name=version$"):
        mirror.parse_request(text)


def test_parse_pins():
    text = """# Track NVIDIA driver branch 550
Package: cuda-drivers* nvidia-* libcuda*
Pin: version 550.*
Pin-Priority: 1000

Package: *
Pin: release l=NVIDIA CUDA
Pin-Priority: 600

Package: low
Pin: version 1.*
Pin-Priority: 500

Package: odd
Pin: version 2.*
Pin-Priority: high

Pin: version 3.*
Pin-Priority: 990

Package: exact
Pin: version 1.2-1
Pin-Priority: 501
"""
    assert mirror.parse_pins(text) == [(("cuda-drivers*", "nvidia-*", "libcuda*"), "550.*"), (("exact",), "1.2-1")]
    assert mirror.parse_pins("") == []


# --- Selection -------------------------------------------------------------------------------------------------------

def index(*packages):
    """An index of (name, version, fields) packages."""
    paragraphs = []
    for name, version, fields in packages:
        lines = ["Package: %s" % name, "Version: %s" % version]
        lines += ["%s: %s" % item for item in fields.items()]
        lines += ["Filename: ./%s_%s_amd64.deb" % (name, version.split(":")[-1]), "Size: 1", "SHA256: %s" % ("0" * 64)]
        paragraphs.append("\n".join(lines))
    return mirror.Index("\n\n".join(paragraphs) + "\n")


def chosen(selection):
    return sorted(selection.chosen, key=lambda key: (key[0], mirror._Key(key[1])))


def test_alternatives_take_the_first_the_repository_has():
    repo = index(("a", "1", {"Depends": "missing | b, c | b"}), ("b", "1", {}), ("c", "1", {}))
    selection = mirror.Selection(repo)
    selection.request("a", "")
    assert chosen(selection) == [("a", "1"), ("b", "1"), ("c", "1")]
    assert selection.outside == set()


def test_the_newest_version_that_satisfies_a_relation():
    repo = index(("a", "1", {"Depends": "b (<< 3)"}), ("b", "1.9", {}), ("b", "1.10", {}), ("b", "3", {}),
                 ("b", "2~rc1", {}))
    selection = mirror.Selection(repo)
    selection.request("a", "")
    assert chosen(selection) == [("a", "1"), ("b", "2~rc1")]


def test_provides():
    repo = index(("a", "1", {"Depends": "virtual"}), ("b", "1", {"Depends": "virtual (>= 2)"}),
                 ("plain", "5", {"Provides": "virtual"}), ("versioned", "1", {"Provides": "virtual (= 2)"}),
                 ("old", "1", {"Provides": "virtual (= 1)"}))
    selection = mirror.Selection(repo)
    selection.request("a", "")
    assert chosen(selection) == [("a", "1"), ("old", "1"), ("plain", "5"), ("versioned", "1")]
    selection = mirror.Selection(repo)
    selection.request("b", "")  # an unversioned Provides satisfies no versioned relation
    assert chosen(selection) == [("b", "1"), ("versioned", "1")]
    selection = mirror.Selection(repo)
    selection.request("virtual", "2")
    assert chosen(selection) == [("versioned", "1")]


DRIVERS = (
    ("cuda-drivers-550", "550.54.15-1", {"Depends": "nvidia-driver (>= 550.54.15), dkms"}),
    ("cuda-drivers-550", "550.127.08-1", {"Depends": "nvidia-driver (>= 550.54.15), dkms"}),
    ("nvidia-driver", "550.54.15-1", {"Depends": "libc6 (>= 2.34)", "Recommends": "nvidia-settings | nope"}),
    ("nvidia-driver", "550.127.08-1", {"Depends": "libc6 (>= 2.34)"}),
    ("nvidia-driver", "570.86.15-1", {}),
    ("nvidia-settings", "570.86.15-1", {}),
    ("nvidia-driver-pinning-550", "550-1", {}),
    ("nvidia-driver-pinning-550", "550.1-1", {}),
    ("tool", "1.0-1", {"Depends": "nvidia-driver-pinning-550"}),
)
PINS = [(("cuda-drivers*", "nvidia-*"), "550.*")]


def test_pins_keep_every_version_they_prefer():
    selection = mirror.Selection(index(*DRIVERS), PINS)
    selection.request("cuda-drivers-550", "")
    assert chosen(selection) == [
        ("cuda-drivers-550", "550.54.15-1"), ("cuda-drivers-550", "550.127.08-1"),
        ("nvidia-driver", "550.54.15-1"), ("nvidia-driver", "550.127.08-1"),
        ("nvidia-settings", "570.86.15-1"),  # no version of it matches the pin: the newest, as apt takes it
    ]
    assert selection.outside == {"libc6 (>= 2.34)", "dkms"}  # a Recommends apt cannot satisfy is no need


def test_without_pins_the_newest():
    selection = mirror.Selection(index(*DRIVERS), recommends=False)
    selection.request("cuda-drivers-550", "")
    assert chosen(selection) == [("cuda-drivers-550", "550.127.08-1"), ("nvidia-driver", "570.86.15-1")]


def test_the_pinning_package_is_exempt_from_its_own_pins():
    selection = mirror.Selection(index(*DRIVERS), PINS)
    selection.request("tool", "")
    assert chosen(selection) == [("nvidia-driver-pinning-550", "550.1-1"), ("tool", "1.0-1")]
    selection = mirror.Selection(index(*DRIVERS), PINS, exempt=["nvidia-driver-pinning-550"])
    selection.request("tool", "")
    assert chosen(selection) == [("nvidia-driver-pinning-550", "550.1-1"), ("tool", "1.0-1")]
    pins = [(("nvidia-*",), "550-*")]
    selection = mirror.Selection(index(*DRIVERS), pins)
    selection.request("tool", "")
    assert chosen(selection) == [("nvidia-driver-pinning-550", "550-1"), ("tool", "1.0-1")]
    selection = mirror.Selection(index(*DRIVERS), pins, exempt=["nvidia-driver-pinning-550"])
    selection.request("tool", "")
    assert chosen(selection) == [("nvidia-driver-pinning-550", "550.1-1"), ("tool", "1.0-1")]


def test_a_requested_version_is_taken_alone_even_against_the_pins():
    selection = mirror.Selection(index(*DRIVERS), PINS)
    selection.request("nvidia-driver", "570.86.15-1")
    assert chosen(selection) == [("nvidia-driver", "570.86.15-1")]


def test_a_glob_takes_the_newest_version_it_matches():
    repo = index(("libnccl2", "2.21.5-1+cuda12.4", {}), ("libnccl2", "2.26.2-1+cuda12.8", {}),
                 ("libnccl2", "2.25.1-1+cuda12.8", {}), ("libnccl2", "2.27.3-1+cuda12.9", {}))
    selection = mirror.Selection(repo)
    selection.request("libnccl2", "*+cuda12.8")
    assert chosen(selection) == [("libnccl2", "2.26.2-1+cuda12.8")]
    with pytest.raises(MirrorError, match=r"^packages: libnccl2=\*\+cuda13.0 is not in the repository \(it has "):
        selection.request("libnccl2", "*+cuda13.0")


@pytest.mark.parametrize("name, version, words", [
    ("nope", "", "packages: nope is not in the repository"),
    ("nvidia-driver", "560.1-1",
     "packages: nvidia-driver=560.1-1 is not in the repository (it has 550.54.15-1, 550.127.08-1, 570.86.15-1)"),
])
def test_a_request_the_repository_lacks_is_named(name, version, words):
    selection = mirror.Selection(index(*DRIVERS), PINS)
    with pytest.raises(MirrorError) as error:
        selection.request(name, version)
    assert str(error.value) == words
    assert selection.chosen == {}


def test_an_index_without_a_field_it_needs_is_refused():
    with pytest.raises(MirrorError, match="a package of the index has no SHA256: Package: a"):
        mirror.Index("Package: a\nVersion: 1\nFilename: ./a_1_all.deb\nSize: 1\n")


# --- The copy's files ------------------------------------------------------------------------------------------------

def stanza(filename, version="1"):
    return {"Package": "a", "Version": version, "Filename": filename, "Size": "1", "SHA256": "0" * 64,
            None: "Package: a\nVersion: %s\nFilename: %s\nSize: 1" % (version, filename)}


@pytest.mark.parametrize("filename, name", [
    ("./a_1_amd64.deb", "a_1_amd64.deb"),
    ("a_1_amd64.deb", "a_1_amd64.deb"),
    ("pool/main/a/a_1%3a2_amd64.deb", "a_1%3a2_amd64.deb"),
])
def test_local_name(filename, name):
    assert mirror.local_name(stanza(filename)) == name


@pytest.mark.parametrize("filename", [
    "../../etc/passwd.deb", "./../a.deb", "pool/../../a.deb", "/etc/a.deb", "a.tar", ".deb", "./.a.deb", "a/.deb",
    "a\\1.deb", "a b.deb", "a.deb\n", "https://example.com/a.deb", "",
])
def test_an_odd_file_name_is_refused(filename):
    with pytest.raises(MirrorError, match="the index names an odd file"):
        mirror.local_name(stanza(filename))
    with pytest.raises(MirrorError, match="the index names an odd file"):
        mirror.packages_text({("a", "1"): stanza(filename)})


def test_packages_text_points_into_the_flat_directory():
    one, two = stanza("pool/a/a_1_amd64.deb"), stanza("./a_1.10_amd64.deb", "1.10")
    nine = stanza("a_1.9_amd64.deb", "1.9")
    assert mirror.packages_text({("a", "1.10"): two, ("a", "1"): one, ("a", "1.9"): nine}) == (
        b"Package: a\nVersion: 1\nFilename: ./a_1_amd64.deb\nSize: 1\n\n"
        b"Package: a\nVersion: 1.9\nFilename: ./a_1.9_amd64.deb\nSize: 1\n\n"
        b"Package: a\nVersion: 1.10\nFilename: ./a_1.10_amd64.deb\nSize: 1\n")
    assert mirror.packages_text({}) == b""


def test_release_text():
    packages = b"Package: a\n"
    files = [("Packages", packages), ("Packages.gz", gzip.compress(packages, mtime=0))]
    text = mirror.release_text({"Origin": "NVIDIA", "Label": "NVIDIA CUDA", "Architecture": "x86_64"}, files,
                               now=86400 * 3 + 3661).decode()
    release = mirror.parse_stanzas(text)[0]
    assert release["Origin"] == "NVIDIA" and release["Label"] == "NVIDIA CUDA" and release["Architecture"] == "x86_64"
    assert release["Date"] == "Sun, 04 Jan 1970 01:01:01 UTC"
    assert mirror.release_hashes(text)[1] == {name: (len(data), hashlib.sha256(data).hexdigest())
                                              for name, data in files}
    text = mirror.release_text({"Origin": "NVIDIA"}, files, origin="Site", label="Site CUDA", now=0).decode()
    assert text.startswith("Origin: Site\nLabel: Site CUDA\nDate: Thu, 01 Jan 1970 00:00:00 UTC\n")
    with pytest.raises(MirrorError, match="the Label of the Release is not one line"):
        mirror.release_text({"Origin": "NVIDIA"}, files, label="a\nb")


@pytest.fixture
def german_time(monkeypatch):
    """Day and month names as time.strftime gives them under a German LC_TIME (what AnsibleModule's setlocale gives on
    a machine whose environment says de_DE): the Release's Date must not come from them."""
    import time

    english_strftime = time.strftime
    german = {"Thu": "Do", "Mon": "Mo", "Dec": "Dez", "Mar": "Mär", "May": "Mai", "Oct": "Okt"}

    def strftime(fmt, *args):
        english = english_strftime(fmt, *args)
        return re.sub(r"\b[A-Z][a-z]{2}\b", lambda word: german.get(word.group(0), word.group(0)), english)

    monkeypatch.setattr(time, "strftime", strftime)


def test_the_release_date_is_english_whatever_the_locale(german_time):
    import time

    assert time.strftime("%a %b", time.gmtime(0)) == "Do Jan"  # the locale is in force
    text = mirror.release_text({"Origin": "NVIDIA"}, [], now=0).decode()
    assert "\nDate: Thu, 01 Jan 1970 00:00:00 UTC\n" in text
