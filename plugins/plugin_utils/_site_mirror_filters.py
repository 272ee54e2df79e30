# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The _site_mirror_needs and _site_mirror_problems filters, internal to the site_mirror role (no compatibility
promise), documented in plugins/filter/_site_mirror_needs.py and plugins/filter/_site_mirror_problems.py.

_site_mirror_needs: what an inventory's GPU nodes install from NVIDIA's CUDA repository and from PyPI, worked out
from each node's variables as the roles read them. The package names are the roles' own (their vars/Debian.yml files,
passed in as ``names``); the rules that join a name to a variable are the roles' rules, tested against the roles'
files in tests/unit/plugins/filter. A node variable the roles would refuse is a problem naming the host and the
variable, never a package guessed from it.

_site_mirror_problems: what is wrong with the role's own variables and, given what the builder's file system holds
below site_mirror_dir, with the directories the copy would write into: the copy replaces each
<site_mirror_dir>/cuda/repos/<distro>/x86_64 whole, so it must be a directory of the role's making below real
directories, never a symbolic link that leads outside site_mirror_dir."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from jinja2 import Undefined

from ansible_collections.accelops.gpu.plugins.module_utils._apt_mirror import MirrorError, parse_request
from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shortened, shown, whole

_BRANCH = re.compile(r"\A[0-9]{3}\Z")
_RELEASE = re.compile(r"\A[0-9]{3}\.[0-9]+(?:\.[0-9]+)?\Z")
_CUDA = re.compile(r"\A[0-9]+\.[0-9]+\Z")
_PACKAGE_VERSION = re.compile(r"\A[0-9][0-9A-Za-z.+~:-]*\Z")
# The release numbers roles/nvml_python and roles/gpu_monitoring accept (their preflight.yml).
_PIN = re.compile(r"\A[0-9]+(?:\.[0-9]+)*\Z")
# From this branch on NVIDIA's packages carry no branch suffix (roles/nvidia_driver/vars/main.yml).
_UNSUFFIXED_FROM = 590
# What ansible.builtin's bool filter and argument_specs' type bool take.
_BOOLEANS = {"true": True, "yes": True, "on": True, "y": True, "t": True, "1": True,
             "false": False, "no": False, "off": False, "n": False, "f": False, "0": False}

_CONTROL = r"\x00-\x20\x7f"
_ABSOLUTE = re.compile(r"\A/[^%s]*\Z" % _CONTROL.replace(r"\x20", r"\x1f"))
_URL = re.compile(r"\Ahttps?://[^%s/?#]+(?:/[^%s?#]*)?\Z" % (_CONTROL, _CONTROL))
_FIND_LINK = re.compile(r"\A(?:https?://[^%s/?#]+(?:/[^%s?#]*)?|/[^%s]*)\Z" % (_CONTROL, _CONTROL, _CONTROL))
_FINGERPRINT = re.compile(r"\A[0-9A-Fa-f]{40}\Z")
_KEY_NAME = re.compile(r"\A[A-Za-z0-9_-][A-Za-z0-9._-]*\Z")
_DISTRO = re.compile(r"\A[a-z0-9]+\Z")
# pip requirement specifiers without URLs, markers, options or spaces: numpy==2.3.1, pyyaml>=6,<7, torch[cuda]==2.*
_WHEEL = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[A-Za-z0-9._,-]+\])?(?:(?:===?|!=|~=|<=?|>=?)[A-Za-z0-9.*+!_-]+"
                    r"(?:,(?:===?|!=|~=|<=?|>=?)[A-Za-z0-9.*+!_-]+)*)?\Z")
# What apt_mirror writes into <distro>/x86_64: the packages, the index, its signatures and the site's key.
_COPY_FILE = re.compile(r"\A(?:[A-Za-z0-9_+~%-][A-Za-z0-9_.+~%-]*\.deb|Packages|Packages\.gz|Release|InRelease"
                        r"|Release\.gpg|[0-9a-f]{8}\.pub)\Z")
_MAX_TIMEOUT = 3600


class SiteMirrorError(AnsibleFilterError):
    """Input the role never passes (not the users' variables): the message names what was wrong."""


class _Bad(Exception):
    """One variable of one node the roles would refuse."""


def _undefined_message(value):
    try:
        return getattr(value, "_undefined_message", None) or "undefined"
    except Exception:  # an undefined value may refuse any attribute
        return "undefined"


def _cuda_key(version):
    return tuple(int(part) for part in version.split("."))


def _flag(value):
    """True or False as Ansible reads a boolean; None for anything else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        return _BOOLEANS.get(value.lower())
    return None


class _Host:
    def __init__(self, name, variables, defaults):
        self.name, self.variables, self.defaults = shortened(name, 100), variables, defaults
        self.problems = []

    def get(self, variable):
        try:
            value = self.variables[variable] if variable in self.variables else None
        except Exception as exc:  # an inventory template that cannot be rendered (an undefined variable in it)
            raise _Bad("%s cannot be read: %s" % (variable, shortened(exc, 200))) from None
        if isinstance(value, Undefined):  # ansible-core 2.19 hands such a template over as an undefined value
            raise _Bad("%s cannot be read: %s" % (variable, shortened(_undefined_message(value), 200)))
        if value is not None:
            return value
        if variable in self.defaults:
            return self.defaults[variable]
        raise _Bad("%s is not set and no role gives it a default" % variable)

    def bad(self, variable, value, allowed):
        return _Bad("%s is %s; allowed: %s" % (variable, shown(value), allowed))

    def text(self, variable, pattern, allowed, empty=False):
        value = self.get(variable)
        text = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
        if text is not None and ((empty and not text) or pattern.match(text)):
            return text
        raise self.bad(variable, value, allowed)

    def flag(self, variable):
        value = self.get(variable)
        flag = _flag(value)
        if flag is None:
            raise self.bad(variable, value, "true or false")
        return flag

    def choice(self, variable, allowed):
        value = self.get(variable)
        text = str(value).lower() if isinstance(value, (str, bool)) else None
        if text not in allowed:
            raise self.bad(variable, value, ", ".join(allowed))
        return text

    def read(self, *reads):
        """Each read (a callable) in turn; a refused one is recorded and gives None, so that every bad variable of
        the node is named at once."""
        values = []
        for read in reads:
            try:
                values.append(read())
            except _Bad as exc:
                self.problems.append("%s: %s" % (self.name, exc))
                values.append(None)
        return values


def _driver(host, names):
    branch, = host.read(lambda: host.text("nvidia_driver_branch", _BRANCH, "a driver branch of three digits, "
                                          "such as 570"))
    release_pattern = re.compile(r"\A%s\.[0-9]+(?:\.[0-9]+)?\Z" % branch) if branch else _RELEASE
    release_allowed = "empty, or a release of the branch such as %s.124.06" % (branch or "570")
    release, modules, persistenced, fabricmanager = host.read(
        lambda: host.text("nvidia_driver_version", release_pattern, release_allowed, empty=True),
        lambda: host.choice("nvidia_driver_kernel_modules", ("auto", "open", "proprietary")),
        lambda: host.flag("nvidia_driver_persistenced"),
        lambda: host.choice("nvidia_driver_fabricmanager", ("auto", "true", "false")))
    if None in (branch, release, modules, persistenced, fabricmanager):
        return [], []
    pinning = "nvidia-driver-pinning-%s" % (release or branch)
    flavours = [modules] if modules in ("open", "proprietary") else ["open", "proprietary"]
    packages = [pinning, names["library"]]
    for flavour in flavours:
        packages += names["packages"][flavour]
    if persistenced:
        packages.append(names["persistenced"])
    if fabricmanager != "false":
        packages.append("nvidia-fabricmanager" + ("" if int(branch) >= _UNSUFFIXED_FROM else "-" + branch))
    return packages, [pinning]


def _versions(host):
    versions = host.get("cuda_toolkit_versions")
    if isinstance(versions, (str, bytes)) or not isinstance(versions, (list, tuple)) or not versions:
        raise host.bad("cuda_toolkit_versions", versions, "a list of CUDA releases such as ['12.8']")
    wanted = []
    for given in versions:
        version = str(given) if isinstance(given, (str, int, float)) and not isinstance(given, bool) else ""
        if not _CUDA.match(version):
            raise _Bad("cuda_toolkit_versions has %s; allowed: CUDA releases such as 12.8 (quoted: 12.10 unquoted "
                       "is the number 12.1)" % shown(given))
        wanted.append(version)
    return wanted


def _toolkit(host, names):
    wanted, default, cudnn, nccl = host.read(
        lambda: _versions(host),
        lambda: host.text("cuda_toolkit_default", _CUDA, "one of cuda_toolkit_versions, or empty", empty=True),
        lambda: host.flag("cuda_toolkit_cudnn"),
        lambda: host.flag("cuda_toolkit_nccl"))
    if wanted is not None and default and default not in wanted:
        host.problems.append("%s: cuda_toolkit_default is %s; allowed: one of cuda_toolkit_versions (%s), or empty"
                             % (host.name, shown(default), ", ".join(wanted)))
        return []
    if None in (wanted, default, cudnn, nccl):
        return []
    default = default or max(wanted, key=_cuda_key)
    major = default.split(".")[0]
    packages = ["cuda-toolkit-%s" % version.replace(".", "-") for version in wanted]
    if cudnn:
        packages += [name.replace("{major}", major) for name in names["cudnn"]]
    if nccl:
        # NCCL's builds carry the CUDA release in the package version (2.26.2-1+cuda12.8): the newest such build.
        packages += ["%s=*+cuda%s" % (name, default) for name in names["nccl"]]
    return packages


def _container_toolkit(host, names):
    version, = host.read(lambda: host.text("container_toolkit_version", _PACKAGE_VERSION,
                                           "a package release such as 1.18.0-1"))
    return [] if version is None else ["%s=%s" % (name, version) for name in names["container_toolkit"]]


def _wheels(host, monitoring):
    reads = [("nvidia-ml-py", "nvml_python_version")]
    if monitoring:
        reads += [("prometheus_client", "gpu_monitoring_prometheus_client_version"),
                  ("bcrypt", "gpu_monitoring_bcrypt_version"), ("PyYAML", "gpu_monitoring_pyyaml_version")]
    versions = host.read(*[(lambda variable=variable: host.text(variable, _PIN, "a release number such as 1.2.3"))
                           for _name, variable in reads])
    return ["%s==%s" % (name, version) for (name, _variable), version in zip(reads, versions) if version is not None]


def _strings(value):
    return isinstance(value, (list, tuple)) and all(isinstance(item, str) and item for item in value)


def _check_names(names):
    if (not isinstance(names, Mapping)
            or not all(isinstance(names.get(key), str) for key in ("library", "persistenced"))
            or not all(_strings(names.get(key)) for key in ("cudnn", "nccl", "container_toolkit"))
            or not isinstance(names.get("packages"), Mapping)
            or not all(_strings(names["packages"].get(key)) for key in ("open", "proprietary"))):
        raise SiteMirrorError("_site_mirror_needs: names must give library, persistenced, packages (open and "
                              "proprietary), cudnn, nccl and container_toolkit, got %.200r" % (names,))


def site_mirror_needs(hosts, defaults, names):
    """``hosts``: {host: its variables}; ``defaults``: the roles' defaults and site.yml's switches; ``names``: the
    package names of the roles' vars files. Returns the CUDA repository's packages (``apt``, each ``name``,
    ``name=version`` or ``name=GLOB``), the pinning packages among them (``preferences_from``), the wheels and
    ``problems``: one line per node variable the roles would refuse, naming the host and the variable (then the
    lists leave out what that variable would have named)."""
    if not isinstance(hosts, Mapping) or not hosts:
        raise SiteMirrorError("_site_mirror_needs: the input must map the GPU nodes to their variables, got %s"
                              % type(hosts).__name__)
    for name, variables in hosts.items():
        if not isinstance(name, str) or not isinstance(variables, Mapping):
            raise SiteMirrorError("_site_mirror_needs: the variables of %.100r are not a mapping" % (name,))
    if not isinstance(defaults, Mapping):
        raise SiteMirrorError("_site_mirror_needs: defaults must be a mapping, got %s" % type(defaults).__name__)
    _check_names(names)
    apt, preferences, wheels, problems = [], [], [], []

    def add(target, items):
        target.extend(item for item in items if item not in target)

    for name in sorted(hosts):
        host = _Host(name, hosts[name], defaults)
        driver, toolkit, container_toolkit, monitoring = host.read(
            lambda host=host: host.flag("accelops_gpu_install_driver"),
            lambda host=host: host.flag("accelops_gpu_install_toolkit"),
            lambda host=host: host.flag("accelops_gpu_install_container_toolkit"),
            lambda host=host: host.flag("accelops_gpu_install_monitoring"))
        if driver:
            packages, pinning = _driver(host, names)
            add(apt, packages)
            add(preferences, pinning)
        if toolkit:
            add(apt, _toolkit(host, names))
        if container_toolkit:
            add(apt, _container_toolkit(host, names))
        add(wheels, _wheels(host, monitoring))
        problems += host.problems
    return {"apt": sorted(apt), "preferences_from": sorted(preferences), "wheels": sorted(wheels, key=str.lower),
            "hosts": sorted(hosts), "problems": problems}


# The role's own variables.

def _text(value):
    return value if isinstance(value, str) else None


def _is_list(value):
    return isinstance(value, (list, tuple))


def _apt_request(value):
    """What apt_mirror's packages take (name, name=version, name=GLOB), read by the module's own parser."""
    if not isinstance(value, str) or value != value.strip():
        return False
    try:
        parse_request(value)
    except MirrorError:
        return False
    return True


def _normal_absolute(path):
    """An absolute path written the one way (no empty, . or .. parts, no / at the end), other than /."""
    return (path is not None and _ABSOLUTE.match(path) is not None and path != "/"
            and posixpath.normpath(path) == path and not path.startswith("//"))


def _settings_problems(settings):
    problems = []

    def say(variable, allowed):
        problems.append("%s must be %s, got %s" % (variable, allowed, shown(settings.get(variable))))

    if not _normal_absolute(_text(settings.get("site_mirror_dir"))):
        say("site_mirror_dir", "an absolute directory other than / written without . or .. parts, doubled or "
            "trailing slashes")
    home = _text(settings.get("site_mirror_gnupg_home"))
    if not home or not _ABSOLUTE.match(home):
        say("site_mirror_gnupg_home", "the absolute path of the GnuPG home that holds the site's secret key")
    key = _text(settings.get("site_mirror_signing_key"))
    if key is None or not _FINGERPRINT.match(re.sub(r"[ \t]", "", key)):
        say("site_mirror_signing_key", "the full fingerprint (40 hex digits) of the site's key")
    hosts = _text(settings.get("site_mirror_hosts"))
    if not hosts or re.search(r"[%s:,!&*\[\]]" % _CONTROL, hosts):
        say("site_mirror_hosts", "the name of an inventory group")
    distros = settings.get("site_mirror_distros")
    if not _is_list(distros) or not distros or not all(_DISTRO.match(_text(d) or "") for d in distros):
        say("site_mirror_distros", "a list of NVIDIA's repository directories such as [debian12]")
        distros = None  # the keys' directories are not checked against it then
    url = _text(settings.get("site_mirror_cuda_base_url"))
    if url is None or not _URL.match(url):
        say("site_mirror_cuda_base_url", "an http:// or https:// URL without spaces, query or fragment")
    keys = settings.get("site_mirror_cuda_keys")
    if not isinstance(keys, Mapping) or not all(
            (distros is None or distro in distros) and isinstance(key, Mapping) and set(key) == {"name", "fingerprint"}
            and _KEY_NAME.match(_text(key["name"]) or "")
            and _FINGERPRINT.match(re.sub(r"[ \t]", "", _text(key["fingerprint"]) or ""))
            for distro, key in keys.items()):
        say("site_mirror_cuda_keys", "empty (NVIDIA's keys) or a mapping of some of site_mirror_distros (%s) to "
            "{name: <the key file's name in the repository directory>, fingerprint: <its 40 hex digits>}"
            % ", ".join(distros or ()))
    packages = settings.get("site_mirror_extra_packages")
    if not _is_list(packages) or not all(_apt_request(package) for package in packages):
        say("site_mirror_extra_packages", "a list of packages of NVIDIA's repository, each name, name=version or "
            "name=GLOB (such as datacenter-gpu-manager-4-cuda12 or libnccl2=2.26.*)")
    if _flag(settings.get("site_mirror_recommends")) is None:
        say("site_mirror_recommends", "true or false")
    index = _text(settings.get("site_mirror_pip_index_url"))
    if index is None or (index and not _URL.match(index)):
        say("site_mirror_pip_index_url", "an http:// or https:// URL without spaces, query or fragment, or empty")
    links = settings.get("site_mirror_pip_find_links")
    if not _is_list(links) or not all(_FIND_LINK.match(_text(link) or "") for link in links):
        say("site_mirror_pip_find_links", "a list of http:// or https:// URLs and absolute directories")
    wheels = settings.get("site_mirror_extra_wheels")
    if not _is_list(wheels) or not all(_WHEEL.match(_text(w) or "") for w in wheels):
        say("site_mirror_extra_wheels", "a list of pip requirement specifiers such as numpy==2.3.1 or pyyaml>=6,<7 "
            "(no URLs, markers, options or spaces)")
    python = _text(settings.get("site_mirror_python"))
    if python is None or (python and not _normal_absolute(python)):
        say("site_mirror_python", "the absolute path of a Python with pip on the builder, or empty")
    timeout = whole(settings.get("site_mirror_timeout"))
    if timeout is None or not 0 < timeout <= _MAX_TIMEOUT:
        say("site_mirror_timeout", "a number of seconds from 1 to %d" % _MAX_TIMEOUT)
    return problems


def _found(files, path):
    """node_probe's state of ``path`` when something is there; None when nothing is, or when the probe could not
    look (below a file: ENOTDIR), where the file above it is what is reported."""
    found = files.get(path)
    return found if isinstance(found, Mapping) and found.get("exists") else None


def _tree_problems(settings, files, listing):
    """What the builder has below site_mirror_dir (``files``: node_probe's files, which follows no link;
    ``listing``: the paths in the copies' directories)."""
    root = settings["site_mirror_dir"]
    problems = []
    # site_mirror_dir and the directory above it may be links: the site's choice of disk, which the role writes
    # into as it writes into a directory.
    parent = _found(files, posixpath.dirname(root))
    if parent is None or parent.get("type") not in ("directory", "link"):
        problems.append("the directory above site_mirror_dir (%s) must exist: make it first, or correct "
                        "site_mirror_dir (%s)" % (posixpath.dirname(root), root))
        return problems
    found = _found(files, root)
    if found is not None and found.get("type") not in ("directory", "link"):
        problems.append("site_mirror_dir (%s) is not a directory" % root)
        return problems
    directories = [root + "/cuda", root + "/cuda/repos", root + "/wheels"]
    for distro in settings["site_mirror_distros"]:
        directories += [root + "/cuda/repos/" + distro, root + "/cuda/repos/%s/x86_64" % distro]
    for path in directories:
        kind = (_found(files, path) or {"type": "directory"}).get("type")
        if kind == "link":
            problems.append("%s is a symbolic link: the mirror is written only into directories of its own below "
                            "site_mirror_dir, never through a link; remove it or choose another site_mirror_dir"
                            % path)
        elif kind != "directory":
            problems.append("%s is not a directory; remove it or choose another site_mirror_dir" % path)
    for distro in settings["site_mirror_distros"]:
        path = root + "/cuda/repos/%s/distribution-packages.txt" % distro
        if (_found(files, path) or {"type": "file"}).get("type") != "file":
            problems.append("%s is not a plain file; remove it or choose another site_mirror_dir" % path)
    if problems:  # what lies below a link or a file is not the copy's to judge
        return problems
    for distro in settings["site_mirror_distros"]:
        copy = root + "/cuda/repos/%s/x86_64" % distro
        # By name: what a copy holds is replaced with it, whatever it is (rmtree takes a link, not what it leads to).
        foreign = sorted(posixpath.basename(path) for path in listing
                         if isinstance(path, str) and posixpath.dirname(path) == copy
                         and not _COPY_FILE.match(posixpath.basename(path)))
        if foreign:
            problems.append("%s holds %s, which no copy of this role has; the copy replaces that directory whole: "
                            "move them away or choose another site_mirror_dir"
                            % (copy, ", ".join(shortened(name, 80) for name in foreign[:5])
                               + (" and %d more" % (len(foreign) - 5) if len(foreign) > 5 else "")))
    return problems


def site_mirror_problems(settings, files=None, listing=()):
    """One line per problem with the role's variables (``settings``: the site_mirror_* variables by name); with
    ``files`` (accelops.gpu.node_probe's files for the paths the role writes and the directory above site_mirror_dir)
    and ``listing`` (the paths in the copies' directories, hidden ones too) also with the builder's directories the
    copy writes into. Empty when all is well."""
    if not isinstance(settings, Mapping):
        raise SiteMirrorError("_site_mirror_problems: the input must map the role's variables to their values, got %s"
                              % type(settings).__name__)
    problems = _settings_problems(settings)
    if problems or files is None:
        return problems
    if not isinstance(files, Mapping) or not isinstance(listing, (list, tuple)):
        raise SiteMirrorError("_site_mirror_problems: files must be accelops.gpu.node_probe's files and listing "
                              "a list of paths, got %s and %s"
                              % (type(files).__name__, type(listing).__name__))
    return _tree_problems(settings, files, listing)


class FilterModule:
    def filters(self):
        return {"_site_mirror_needs": site_mirror_needs, "_site_mirror_problems": site_mirror_problems}
