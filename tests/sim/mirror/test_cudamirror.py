"""The simulated CUDA network repository of tests/sim/mirror/cudamirror/build.py: its signatures and indexes, the files
of its dummy packages, and what apt resolves from it.

apt runs in a throw-away root (APT_CONFIG points at a config whose Dir is a temporary directory, with an empty
dpkg status), so nothing of the host's apt set-up is read or changed.
"""

import contextlib
import functools
import gzip
import hashlib
import http.server
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BUILD_PY = ROOT / "tests" / "sim" / "mirror" / "cudamirror" / "build.py"
FAKE_NVML = ROOT / "build" / "fakenvml" / "libnvidia-ml.so.1"
BASE_URL = "http://127.0.0.1:18080/cuda/repos"

DISTROS = ("debian12", "debian13", "ubuntu2204", "ubuntu2404")
DEBIAN_NEWEST_550 = "550.127.08-1"
DEBIAN_OLDEST_550 = "550.54.15-1"
DEBIAN_590 = "590.48.01-1"
# The packages of one driver release that cuda-drivers (proprietary kernel module) installs on Debian.
DEBIAN_DRIVER_SET = {
    "nvidia-driver", "nvidia-driver-libs", "nvidia-driver-cuda", "nvidia-kernel-dkms", "nvidia-kernel-support",
    "nvidia-modprobe", "libnvidia-ml1", "libcuda1", "nvidia-smi", "nvidia-persistenced", "libnvidia-cfg1",
    "nvidia-settings", "nvidia-xconfig",
}


def build(outdir, *args):
    subprocess.run([sys.executable, str(BUILD_PY), str(outdir), "--base-url", BASE_URL, *args], check=True,
                   stdout=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """One build for the whole module (about 3 s)."""
    outdir = tmp_path_factory.mktemp("cudamirror")
    build(outdir)
    return outdir


def repo(mirror, distro):
    return mirror / "repos" / distro / "x86_64"


def fingerprint(mirror):
    return (mirror / "fingerprint").read_text(encoding="utf-8").strip()


def stanzas(text):
    """Paragraphs of a Debian control-style file as dicts (continuation lines are dropped)."""
    result = []
    for paragraph in text.split("\n\n"):
        fields = {}
        for line in paragraph.splitlines():
            if line and not line[0].isspace():
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        if fields:
            result.append(fields)
    return result


def index(mirror, distro):
    return stanzas((repo(mirror, distro) / "Packages").read_text(encoding="utf-8"))


def versions(mirror, distro, name):
    return {fields["Version"] for fields in index(mirror, distro) if fields["Package"] == name}


def deb_path(mirror, distro, name, version):
    """The .deb file of one package version, found through the Packages index."""
    for fields in index(mirror, distro):
        if fields["Package"] == name and fields["Version"] == version:
            return repo(mirror, distro) / fields["Filename"]
    raise AssertionError("%s %s is not in %s's index" % (name, version, distro))


def deb_members(path):
    """The data members of a .deb file, by absolute path."""
    tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(path)], check=True, capture_output=True).stdout
    archive = tarfile.open(fileobj=io.BytesIO(tar))
    return {member.name.lstrip("."): (member, archive) for member in archive.getmembers()}


def deb_file(path, member):
    info, archive = deb_members(path)[member]
    return archive.extractfile(info).read()


def key_fingerprints(keyring, tmp_path):
    """Fingerprints of the primary keys in a keyring file (binary or armored)."""
    home = tmp_path / "show-keys-home"
    home.mkdir(mode=0o700, exist_ok=True)
    listing = subprocess.run(["gpg", "--batch", "--homedir", str(home), "--with-colons", "--show-keys", str(keyring)],
                             check=True, capture_output=True, text=True).stdout
    return [line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")]


@pytest.fixture(scope="module")
def other_keyring(tmp_path_factory):
    """A keyring with a key that did not sign the repository."""
    home = tmp_path_factory.mktemp("other-gnupg")
    home.chmod(0o700)
    env = dict(os.environ, GNUPGHOME=str(home))
    gpg = ["gpg", "--batch", "--quiet", "--pinentry-mode", "loopback", "--passphrase", ""]
    try:
        subprocess.run([*gpg, "--quick-generate-key", "someone else <other@accelops.invalid>", "ed25519", "sign",
                        "never"], check=True, env=env, capture_output=True)
        keyring = home / "other.gpg"
        keyring.write_bytes(subprocess.run([*gpg, "--export"], check=True, env=env, capture_output=True).stdout)
    finally:
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], check=False, env=env, capture_output=True)
    return keyring


# --- repository files ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("distro", DISTROS)
def test_repository_has_nvidias_flat_layout(mirror, distro):
    directory = repo(mirror, distro)
    for name in ("Packages", "Packages.gz", "Release", "InRelease", "Release.gpg", "cuda-keyring_1.1-1_all.deb",
                 "cuda-%s.pin" % distro, "%s.pub" % fingerprint(mirror)[-8:].lower()):
        assert (directory / name).is_file(), name
    release = stanzas((directory / "Release").read_text(encoding="utf-8"))[0]
    assert release["Origin"] == "NVIDIA"
    assert release["Label"] == "NVIDIA CUDA"
    assert release["Architecture"] == "x86_64"
    # A flat repository ("deb URL /"): no suite, no components.
    assert "Suite" not in release
    assert "Components" not in release
    assert "Pin: release l=NVIDIA CUDA\nPin-Priority: 600" in (directory / ("cuda-%s.pin" % distro)).read_text()


@pytest.mark.parametrize("distro", DISTROS)
def test_release_hashes_match_the_indexes(mirror, distro):
    directory = repo(mirror, distro)
    packages = (directory / "Packages").read_bytes()
    assert gzip.decompress((directory / "Packages.gz").read_bytes()) == packages
    sections = {}
    current = None
    for line in (directory / "Release").read_text(encoding="utf-8").splitlines():
        if line.startswith(" "):
            digest, size, name = line.split()
            sections[current][name] = (digest, int(size))
        else:
            current = line.split(":", 1)[0]
            sections[current] = {}
    assert set(sections) == {"Origin", "Label", "Architecture", "Date", "MD5Sum", "SHA1", "SHA256", "Acquire-By-Hash"}
    for title, algorithm in (("MD5Sum", "md5"), ("SHA1", "sha1"), ("SHA256", "sha256")):
        assert set(sections[title]) == {"Packages", "Packages.gz"}
        for name, (digest, size) in sections[title].items():
            data = (directory / name).read_bytes()
            assert (hashlib.new(algorithm, data).hexdigest(), len(data)) == (digest, size), (title, name)


@pytest.mark.parametrize("distro", DISTROS)
def test_packages_index_describes_every_deb(mirror, distro):
    directory = repo(mirror, distro)
    listed = set()
    for fields in index(mirror, distro):
        path = directory / fields["Filename"]
        assert fields["Filename"].startswith("./")
        data = path.read_bytes()
        assert int(fields["Size"]) == len(data)
        assert fields["SHA256"] == hashlib.sha256(data).hexdigest()
        assert fields["Maintainer"] == "cudatools <cudatools@nvidia.com>"
        listed.add(path.name)
    assert listed == {path.name for path in directory.glob("*.deb")}


def test_inrelease_and_release_gpg_verify_with_the_published_key(mirror):
    keyring = mirror / "cuda-archive-keyring.gpg"
    for distro in DISTROS:
        directory = repo(mirror, distro)
        subprocess.run(["gpgv", "--keyring", str(keyring), str(directory / "InRelease")], check=True,
                       capture_output=True)
        subprocess.run(["gpgv", "--keyring", str(keyring), str(directory / "Release.gpg"), str(directory / "Release")],
                       check=True, capture_output=True)


def test_signatures_do_not_verify_with_another_key(mirror, other_keyring):
    directory = repo(mirror, "debian12")
    for args in ([directory / "InRelease"], [directory / "Release.gpg", directory / "Release"]):
        result = subprocess.run(["gpgv", "--keyring", str(other_keyring), *map(str, args)], check=False,
                                capture_output=True, text=True)
        assert result.returncode != 0
        assert "No public key" in result.stderr


def test_fingerprint_file_names_the_key_of_cuda_keyring(mirror, tmp_path):
    expected = fingerprint(mirror)
    assert re.fullmatch(r"[0-9A-F]{40}", expected)
    assert key_fingerprints(mirror / "cuda-archive-keyring.gpg", tmp_path) == [expected]
    for distro in DISTROS:
        deb = repo(mirror, distro) / "cuda-keyring_1.1-1_all.deb"
        keyring = tmp_path / ("%s-keyring.gpg" % distro)
        keyring.write_bytes(deb_file(deb, "/usr/share/keyrings/cuda-archive-keyring.gpg"))
        assert key_fingerprints(keyring, tmp_path) == [expected]
        assert key_fingerprints(repo(mirror, distro) / ("%s.pub" % expected[-8:].lower()), tmp_path) == [expected]


@pytest.mark.parametrize("distro", DISTROS)
def test_cuda_keyring_installs_source_list_and_pin(mirror, distro):
    deb = repo(mirror, distro) / "cuda-keyring_1.1-1_all.deb"
    source = deb_file(deb, "/etc/apt/sources.list.d/cuda-%s-x86_64.list" % distro).decode()
    assert source == "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] %s/%s/x86_64/ /\n" % (
        BASE_URL, distro)
    pin = deb_file(deb, "/etc/apt/preferences.d/cuda-repository-pin-600").decode()
    assert pin == "Package: *\nPin: release l=NVIDIA CUDA\nPin-Priority: 600\n"


# --- package contents ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("distro", "name", "version"), [
    ("debian12", "libnvidia-ml1", DEBIAN_NEWEST_550),
    ("debian13", "libnvidia-ml1", DEBIAN_590),
    ("ubuntu2204", "libnvidia-compute-570", "570.124.06-0ubuntu1"),
    ("ubuntu2404", "libnvidia-compute", "590.48.01-0ubuntu1"),
])
def test_driver_library_package_ships_the_fake_nvml(mirror, distro, name, version):
    release = version.split("-")[0]
    members = deb_members(deb_path(mirror, distro, name, version))
    real_path = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.%s" % release
    info, archive = members[real_path]
    assert archive.extractfile(info).read() == FAKE_NVML.read_bytes()
    link = members["/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"][0]
    assert link.issym()
    assert link.linkname == "libnvidia-ml.so.%s" % release


@pytest.mark.parametrize(("distro", "name", "version", "unit"), [
    ("debian12", "nvidia-persistenced", DEBIAN_NEWEST_550, "nvidia-persistenced.service"),
    ("ubuntu2204", "nvidia-compute-utils-550", "550.127.08-0ubuntu1", "nvidia-persistenced.service"),
    ("debian12", "nvidia-fabricmanager-550", DEBIAN_NEWEST_550, "nvidia-fabricmanager.service"),
    ("debian13", "nvidia-fabricmanager-570", "570.86.15-1", "nvidia-fabricmanager.service"),
    ("debian12", "nvidia-fabricmanager", DEBIAN_590, "nvidia-fabricmanager.service"),
    ("debian12", "datacenter-gpu-manager-4-core", "1:4.2.3-1", "nvidia-dcgm.service"),
])
def test_daemon_packages_ship_a_startable_unit(mirror, distro, name, version, unit):
    text = deb_file(deb_path(mirror, distro, name, version), "/usr/lib/systemd/system/%s" % unit).decode()
    assert "Type=simple\n" in text
    assert "ExecStart=/bin/sleep infinity\n" in text
    assert "WantedBy=multi-user.target\n" in text


@pytest.mark.parametrize("distro", DISTROS)
def test_dcgm_4_ships_dcgmi_and_the_exporter_its_unit_and_counters(mirror, distro):
    core = deb_path(mirror, distro, "datacenter-gpu-manager-4-core", "1:4.2.3-1")
    assert deb_members(core)["/usr/bin/dcgmi"][0].mode == 0o755
    path = deb_path(mirror, distro, "datacenter-gpu-manager-exporter", "4.2.3-4.1.3-1")
    members = deb_members(path)
    assert members["/usr/bin/dcgm-exporter"][0].mode == 0o755
    # One stand-in, two names (it looks at the name it was called by).
    assert deb_file(path, "/usr/bin/dcgm-exporter") == deb_file(core, "/usr/bin/dcgmi")
    unit = deb_file(path, "/usr/lib/systemd/system/nvidia-dcgm-exporter.service").decode()
    assert "ExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/default-counters.csv\n" in unit
    counters = deb_file(path, "/etc/dcgm-exporter/default-counters.csv").decode()
    assert "DCGM_FI_DEV_GPU_TEMP, gauge," in counters
    conffiles = subprocess.run(["dpkg-deb", "--info", str(path), "conffiles"], check=True, capture_output=True,
                               text=True).stdout
    assert conffiles.split() == ["/etc/dcgm-exporter/default-counters.csv"]
    fields = next(f for f in index(mirror, distro) if f["Package"] == "datacenter-gpu-manager-exporter")
    assert fields["Depends"] == "datacenter-gpu-manager-4-core (>= 1:4)"


@pytest.mark.parametrize("distro", DISTROS)
def test_fabric_manager_exists_for_every_driver_release(mirror, distro):
    for branch in ("550", "570"):
        driver = "nvidia-driver" if distro.startswith("debian") else "nvidia-driver-%s" % branch
        releases = {v.split("-")[0] for v in versions(mirror, distro, driver) if v.startswith(branch + ".")}
        managers = {v.split("-")[0] for v in versions(mirror, distro, "nvidia-fabricmanager-%s" % branch)}
        assert len(releases) == 2
        assert managers == releases


def test_pinning_packages_exist_for_branches_and_releases(mirror):
    names = {fields["Package"] for fields in index(mirror, "debian12")}
    for name in ("nvidia-driver-pinning-550", "nvidia-driver-pinning-570", "nvidia-driver-pinning-590",
                 "nvidia-driver-pinning-550.54.15", "nvidia-driver-pinning-590.48.01"):
        assert name in names
    assert versions(mirror, "debian12", "nvidia-driver-pinning-590") == {"590-1"}
    # From 590 on there is no branch meta package.
    assert "cuda-drivers-590" not in names
    assert {"cuda-drivers-550", "cuda-drivers-570"} <= names


def test_toolkit_nvcc_answers_its_version(mirror, tmp_path):
    deb = deb_path(mirror, "debian12", "cuda-nvcc-12-4", "12.4.131-1")
    info, archive = deb_members(deb)["/usr/local/cuda-12.4/bin/nvcc"]
    assert info.mode & 0o111
    nvcc = tmp_path / "nvcc"
    nvcc.write_bytes(archive.extractfile(info).read())
    nvcc.chmod(0o755)
    output = subprocess.run([str(nvcc), "--version"], check=True, capture_output=True, text=True).stdout
    assert "Cuda compilation tools, release 12.4, V12.4.131" in output


def test_toolkit_config_points_usr_local_cuda_at_the_toolkit(mirror, tmp_path):
    deb = deb_path(mirror, "debian12", "cuda-toolkit-12-8-config-common", "12.8.90-1")
    assert "/usr/local/cuda-12.8/version.json" in deb_members(deb)
    subprocess.run(["dpkg-deb", "--control", str(deb), str(tmp_path)], check=True)
    postinst = (tmp_path / "postinst").read_text(encoding="utf-8")
    assert "update-alternatives --install /usr/local/cuda cuda /usr/local/cuda-12.8 128" in postinst
    assert "update-alternatives --install /usr/local/cuda-12 cuda-12 /usr/local/cuda-12.8 128" in postinst
    assert "update-alternatives --remove cuda /usr/local/cuda-12.8" in (tmp_path / "prerm").read_text(encoding="utf-8")
    for script in ("postinst", "prerm"):
        subprocess.run(["sh", "-n", str(tmp_path / script)], check=True)


# --- apt -------------------------------------------------------------------------------------------------------


class AptRoot:
    """apt-get and apt-cache confined to a temporary root with one source and an empty dpkg status."""

    def __init__(self, root, source_line):
        self.root = root
        for sub in ("etc/apt/apt.conf.d", "etc/apt/preferences.d", "etc/apt/sources.list.d",
                    "var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "var/lib/dpkg", "var/log/apt"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        (root / "var/lib/dpkg/status").write_text("", encoding="utf-8")
        (root / "etc/apt/sources.list").write_text(source_line + "\n", encoding="utf-8")
        self.config = root / "apt.conf"
        self.config.write_text(
            'Dir "%s/";\n' % root
            + 'Dir::State::status "%s/var/lib/dpkg/status";\n' % root
            + 'APT::Architecture "amd64";\nAPT::Architectures { "amd64"; };\n'
            + 'Debug::NoLocking "true";\nAcquire::Languages "none";\nAPT::Sandbox::User "root";\n'
            + 'Acquire::http::Proxy "DIRECT";\n',
            encoding="utf-8")
        self.env = {key: value for key, value in os.environ.items() if not key.lower().endswith("_proxy")}
        self.env.update(APT_CONFIG=str(self.config), LC_ALL="C")

    def run(self, *args):
        return subprocess.run(["apt-get", *args], check=False, env=self.env, capture_output=True, text=True,
                              timeout=60)

    def update(self):
        result = self.run("update")
        assert result.returncode == 0, result.stdout + result.stderr
        return result

    def pin(self, preferences):
        """Replace the apt preferences (the files a pinning package would install); None removes them."""
        for path in (self.root / "etc/apt/preferences.d").iterdir():
            path.unlink()
        if preferences is not None:
            (self.root / "etc/apt/preferences.d/nvidia-driver-pin").write_bytes(preferences)

    def simulate(self, *packages):
        """{package: version} of what `apt-get install` would install."""
        result = self.run("install", "--simulate", *packages)
        assert result.returncode == 0, result.stdout + result.stderr
        return dict(re.findall(r"^Inst (\S+) \((\S+) ", result.stdout, re.MULTILINE))


def driver_versions(plan):
    """The versions an apt plan takes from NVIDIA's repository (dkms comes from the distribution's archive)."""
    return {version for name, version in plan.items() if name != "dkms"}


def pin_of(mirror, distro, pinning_package, version):
    """The preferences file that a pinning package installs."""
    deb = deb_path(mirror, distro, pinning_package, version)
    return deb_file(deb, "/etc/apt/preferences.d/nvidia-driver-pin")


@pytest.fixture(scope="module")
def debian12_apt(mirror, tmp_path_factory):
    """apt reading the debian12 repository through a file: URI, updated once."""
    # NVIDIA's repository and the stand-in of Debian's archive, which has dkms and the kernels' headers.
    keyring = mirror / "cuda-archive-keyring.gpg"
    lines = ["deb [signed-by=%s] file:%s/ /" % (keyring, repo(mirror, name))
             for name in ("debian12", "debian12-archive")]
    source = "\n".join(lines)
    apt = AptRoot(tmp_path_factory.mktemp("apt-debian12"), source)
    apt.update()
    return apt


@pytest.fixture
def apt(debian12_apt):
    yield debian12_apt
    debian12_apt.pin(None)


def test_branch_pin_makes_cuda_drivers_550_install_the_newest_550(mirror, apt):
    apt.pin(pin_of(mirror, "debian12", "nvidia-driver-pinning-550", "550-1"))
    plan = apt.simulate("cuda-drivers-550", "nvidia-fabricmanager-550")
    assert DEBIAN_DRIVER_SET <= set(plan)
    assert driver_versions(plan) == {DEBIAN_NEWEST_550}
    assert plan["nvidia-fabricmanager-550"] == plan["nvidia-driver"]


def test_release_pin_holds_an_older_release(mirror, apt):
    apt.pin(pin_of(mirror, "debian12", "nvidia-driver-pinning-550.54.15", "550.54.15-1"))
    plan = apt.simulate("cuda-drivers", "nvidia-fabricmanager-550")
    assert {"cuda-drivers", "cuda-drivers-550", *DEBIAN_DRIVER_SET} <= set(plan)
    assert driver_versions(plan) == {DEBIAN_OLDEST_550}


def test_branch_meta_without_pin_pulls_the_newest_driver_of_any_branch(apt):
    # NVIDIA's Debian cuda-drivers-<branch> only asks for "nvidia-driver (>= <first release of the branch>)":
    # without a pinning package apt takes the newest driver, here from the 590 branch.
    plan = apt.simulate("cuda-drivers-550")
    assert plan["cuda-drivers-550"] == DEBIAN_NEWEST_550
    assert plan["nvidia-driver"] == DEBIAN_590
    assert plan["libnvidia-ml1"] == DEBIAN_590


def test_branch_pin_refuses_another_branch(mirror, apt):
    apt.pin(pin_of(mirror, "debian12", "nvidia-driver-pinning-550", "550-1"))
    result = apt.run("install", "--simulate", "cuda-drivers-570")
    assert result.returncode != 0
    assert "nvidia-driver" in result.stdout + result.stderr


def test_nvidia_open_installs_the_open_kernel_module(mirror, apt):
    apt.pin(pin_of(mirror, "debian12", "nvidia-driver-pinning-590", "590-1"))
    plan = apt.simulate("nvidia-open", "nvidia-fabricmanager")
    assert {"nvidia-kernel-open-dkms", "firmware-nvidia-gsp", "nvidia-driver", "libnvidia-ml1"} <= set(plan)
    assert "nvidia-kernel-dkms" not in plan
    assert driver_versions(plan) == {DEBIAN_590}


def test_dkms_sources_pull_dkms_from_the_archive(mirror, apt):
    apt.pin(pin_of(mirror, "debian12", "nvidia-driver-pinning-550", "550-1"))
    plan = apt.simulate("nvidia-open")
    assert plan["dkms"] == "3.0.10-8+deb12u1"
    assert plan["nvidia-kernel-open-dkms"] == DEBIAN_NEWEST_550


def test_archive_has_headers_for_all_kernels_but_the_newest(apt):
    plan = apt.simulate("linux-image-6.1.0-902-amd64", "linux-headers-6.1.0-901-amd64", "linux-headers-6.1.0-902-amd64")
    assert plan["linux-headers-6.1.0-902-amd64"] == "6.1.902-1"
    assert apt.simulate("linux-image-6.1.0-903-amd64")
    result = apt.run("install", "--simulate", "linux-headers-6.1.0-903-amd64")
    assert result.returncode != 0


@pytest.mark.parametrize("module, kind", [("nvidia-current-open", "nvidia-kernel-open-dkms"),
                                          ("nvidia-current", "nvidia-kernel-dkms")])
def test_dkms_source_registers_and_builds_like_dh_dkms(mirror, tmp_path, module, kind):
    deb = deb_path(mirror, "debian12", kind, DEBIAN_OLDEST_550)
    subprocess.run(["dpkg-deb", "-e", str(deb), str(tmp_path)], check=True)
    postinst = (tmp_path / "postinst").read_text(encoding="utf-8")
    assert "dkms add -m %s -v 550.54.15" % module in postinst
    assert 'dkms install -m %s -v 550.54.15 -k "$kernel"' % module in postinst
    assert "dkms remove -m %s -v 550.54.15 --all" % module in (tmp_path / "prerm").read_text(encoding="utf-8")
    for script in ("postinst", "prerm"):
        subprocess.run(["sh", "-n", str(tmp_path / script)], check=True)


def test_toolkit_does_not_pull_a_driver(apt):
    plan = apt.simulate("cuda-toolkit-12-4")
    assert plan["cuda-nvcc-12-4"] == "12.4.131-1"
    assert plan["cuda-cudart-12-4"] == "12.4.127-1"
    assert "cuda-toolkit-12-4-config-common" in plan
    assert not [name for name in plan if name.startswith(("nvidia", "cuda-drivers", "libnvidia"))]
    assert apt.simulate("cuda-toolkit-12")["cuda-toolkit-12-8"] == "12.8.1-1"


def test_cuda_meta_pulls_toolkit_and_pinned_driver(mirror, apt):
    apt.pin(pin_of(mirror, "debian12", "nvidia-driver-pinning-550", "550-1"))
    plan = apt.simulate("cuda-12-4")
    assert plan["cuda-toolkit-12-4"] == "12.4.1-1"
    assert plan["cuda-runtime-12-4"] == "12.4.1-1"
    assert plan["cuda-drivers"] == DEBIAN_NEWEST_550
    assert plan["nvidia-driver"] == DEBIAN_NEWEST_550


def test_cudnn_and_nccl_resolve_to_matching_pairs(apt):
    plan = apt.simulate("cudnn9-cuda-12", "libnccl-dev")
    assert plan["libcudnn9-cuda-12"] == plan["libcudnn9-dev-cuda-12"] == "9.8.0.87-1"
    assert plan["libnccl2"] == plan["libnccl-dev"] == "2.26.2-1+cuda12.8"
    # An older NCCL needs both packages named with their version, as NVIDIA's install notes do it:
    # libnccl-dev's exact dependency alone does not move libnccl2 off its newest version.
    assert apt.run("install", "--simulate", "libnccl-dev=2.21.5-1+cuda12.4").returncode != 0
    plan = apt.simulate("libnccl2=2.21.5-1+cuda12.4", "libnccl-dev=2.21.5-1+cuda12.4")
    assert plan["libnccl2"] == plan["libnccl-dev"] == "2.21.5-1+cuda12.4"


@contextlib.contextmanager
def serve(directory, lifetime=120):
    """Serve directory on 127.0.0.1 (a free port); the server stops on exit, or by itself after `lifetime` s."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    deadline = threading.Timer(lifetime, server.shutdown)
    deadline.daemon = True
    deadline.start()
    try:
        yield "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        deadline.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def mirror_url(mirror):
    with serve(mirror) as url:
        yield url


@pytest.mark.parametrize(("distro", "expected"), [
    ("debian12", {"nvidia-driver": DEBIAN_NEWEST_550, "libnvidia-ml1": DEBIAN_NEWEST_550}),
    ("debian13", {"nvidia-driver": DEBIAN_NEWEST_550, "libnvidia-ml1": DEBIAN_NEWEST_550}),
    ("ubuntu2204", {"nvidia-driver-550": "550.127.08-0ubuntu1", "libnvidia-compute-550": "550.127.08-0ubuntu1"}),
    ("ubuntu2404", {"nvidia-driver-550": "550.127.08-0ubuntu1", "nvidia-dkms-550": "550.127.08-0ubuntu1"}),
])
def test_every_repository_serves_the_550_branch_over_http(mirror, mirror_url, tmp_path, distro, expected):
    # The Debian repositories' DKMS sources need dkms from the distribution's archive (its stand-in here).
    names = (distro, "%s-archive" % distro) if distro.startswith("debian") else (distro,)
    source = "\n".join("deb [signed-by=%s] %s/repos/%s/x86_64/ /" % (mirror / "cuda-archive-keyring.gpg", mirror_url,
                                                                     name) for name in names)
    apt = AptRoot(tmp_path / "apt", source)
    apt.update()
    apt.pin(pin_of(mirror, distro, "nvidia-driver-pinning-550", "550-1"))
    plan = apt.simulate("cuda-drivers-550", "nvidia-fabricmanager-550")
    assert {name: plan.get(name) for name in expected} == expected
    assert plan["cuda-drivers-550"] == DEBIAN_NEWEST_550
    assert plan["nvidia-fabricmanager-550"] == DEBIAN_NEWEST_550


# --- apt refuses what it cannot trust --------------------------------------------------------------------------


@pytest.fixture
def tampered(mirror, tmp_path):
    """A copy of the debian12 repository and an apt root pointed at it (keyring given as signed-by)."""
    copy = tmp_path / "repo"
    shutil.copytree(repo(mirror, "debian12"), copy)

    def apt_for(keyring=mirror / "cuda-archive-keyring.gpg"):
        return AptRoot(tmp_path / "apt", "deb [signed-by=%s] file:%s/ /" % (keyring, copy))

    return copy, apt_for


def refused(apt):
    result = apt.run("update")
    assert result.returncode != 0
    # Nothing from the repository may become installable.
    assert apt.run("install", "--simulate", "cuda-drivers").returncode != 0
    return result.stdout + result.stderr


def test_apt_refuses_packages_changed_after_signing(tampered):
    copy, apt_for = tampered
    packages = (copy / "Packages").read_text(encoding="utf-8").replace("Version: 550.127.08-1", "Version: 550.127.09-1")
    (copy / "Packages").write_text(packages, encoding="utf-8")
    (copy / "Packages.gz").write_bytes(gzip.compress(packages.encode(), mtime=0))
    assert re.search(r"Hash Sum mismatch|unexpected size", refused(apt_for()))


def test_apt_refuses_a_changed_inrelease(tampered):
    copy, apt_for = tampered
    text = (copy / "InRelease").read_text(encoding="utf-8")
    (copy / "InRelease").write_text(text.replace("Label: NVIDIA CUDA", "Label: NVIDIA CUDX"), encoding="utf-8")
    assert "BADSIG" in refused(apt_for())


def test_apt_refuses_an_unsigned_repository(tampered):
    copy, apt_for = tampered
    (copy / "InRelease").unlink()
    (copy / "Release.gpg").unlink()
    assert "is not signed" in refused(apt_for())


def test_apt_refuses_a_repository_signed_by_another_key(tampered, other_keyring):
    apt_for = tampered[1]
    assert "NO_PUBKEY" in refused(apt_for(other_keyring))


# --- rebuilds --------------------------------------------------------------------------------------------------


def snapshot(outdir):
    return {str(path.relative_to(outdir)): path.stat().st_mtime_ns
            for path in outdir.rglob("*") if path.is_file() and ".gnupg" not in path.parts}


def test_rebuild_with_unchanged_inputs_touches_nothing(mirror):
    before = snapshot(mirror)
    build(mirror)
    assert snapshot(mirror) == before


def test_changed_input_rebuilds_with_the_same_key(mirror, tmp_path):
    copy = tmp_path / "mirror"
    shutil.copytree(mirror, copy, symlinks=True)
    nvml = tmp_path / "libnvidia-ml.so.1"
    nvml.write_bytes(FAKE_NVML.read_bytes() + b"\0")
    old_inrelease = (copy / "repos/debian12/x86_64/InRelease").read_bytes()
    build(copy, "--fake-nvml", str(nvml))
    assert fingerprint(copy) == fingerprint(mirror)
    assert (copy / "repos/debian12/x86_64/InRelease").read_bytes() != old_inrelease
    deb = deb_path(copy, "debian12", "libnvidia-ml1", DEBIAN_NEWEST_550)
    assert deb_file(deb, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.127.08") == nvml.read_bytes()
    subprocess.run(["gpgv", "--keyring", str(mirror / "cuda-archive-keyring.gpg"),
                    str(copy / "repos/debian12/x86_64/InRelease")], check=True, capture_output=True)


@pytest.mark.parametrize("distro", ["debian12", "debian13", "ubuntu2204", "ubuntu2404"])
@pytest.mark.parametrize("version", ["1.17.8-1", "1.18.0-1"])
def test_container_toolkit_has_nvidia_names_dependencies_and_stand_in_programs(mirror, distro, version):
    release = version.split("-")[0]
    path = deb_path(mirror, distro, "nvidia-container-toolkit", version)
    entries = {(f["Package"], f["Version"]): f for f in index(mirror, distro)}
    fields = entries["nvidia-container-toolkit", version]
    assert fields["Filename"].endswith(path.name)
    assert fields["Depends"] == ("nvidia-container-toolkit-base (= %s), libnvidia-container-tools (>= %s), "
                                 "libnvidia-container-tools (<< 2.0.0)" % (version, version))
    tools = entries["libnvidia-container-tools", version]
    assert tools["Depends"] == "libnvidia-container1 (>= %s), libnvidia-container1 (<< 2.0.0)" % version
    base = deb_path(mirror, distro, "nvidia-container-toolkit-base", version)
    for program in ("nvidia-ctk", "nvidia-container-runtime", "nvidia-cdi-hook"):
        assert deb_members(base)["/usr/bin/%s" % program][0].mode == 0o755
        assert deb_file(base, "/usr/bin/%s" % program).startswith(b"#!/bin/sh\n")
    assert ("NVIDIA Container Toolkit CLI version %s" % release).encode() in deb_file(base, "/usr/bin/nvidia-ctk")
    library = deb_members(deb_path(mirror, distro, "libnvidia-container1", version))
    link = library["/usr/lib/x86_64-linux-gnu/libnvidia-container.so.1"][0]
    assert link.linkname == "libnvidia-container.so.%s" % release
