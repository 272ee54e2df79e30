#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: apt_mirror
short_description: Copy what nodes need from a signed flat apt repository into a mirror signed with the site's key
version_added: 0.1.0
description:
  - For air-gapped sites. Reads a flat apt repository (the layout of NVIDIA's CUDA repository,
    C(<base>/<distro>/x86_64/)) on a machine that can reach it, takes the packages named in O(packages) and
    everything they depend on that the repository has, and writes them into O(dest) as a flat repository of its own,
    signed with the site's key. Nodes then install from O(dest) served by any web server, with no other network.
  - Upstream is trusted only through its pinned key. O(keyring) must hold that key alone (the whole file is read,
    not just a key in it); C(InRelease) must carry a good signature of it; the hashes come from the text C(gpgv)
    returns, and every package downloaded must match the index's SHA256 and size.
  - >-
    Dependencies are taken as a node's apt takes them. Of several alternatives the first that the repository can
    satisfy; of a package name the newest version, unless a version pin allows more. The pins are read from the
    packages named in O(preferences_from) (NVIDIA's C(nvidia-driver-pinning-*) packages), and every version they
    allow is taken, so that nodes on different releases of a driver branch install from one mirror. Dependencies the
    repository cannot satisfy (C(dkms), C(libc6)) are for the distribution's own mirror; RV(outside) lists them.
  - "The copy keeps upstream's C(Origin), C(Label) and C(Architecture), so NVIDIA's repository pin
    (C(Pin: release l=NVIDIA CUDA)) still matches."
  - The site's public key is written beside the index as C(<last 8 hex digits of its fingerprint>.pub), the name
    NVIDIA gives its key, which C(cuda_repo_key_name) takes.
  - A package the repository does not have fails the task naming it and the versions the repository has; so does
    anything that cannot be trusted. Nothing is changed then. The new copy is built beside O(dest) and renamed into
    place, so that a web server serving O(dest) never serves half of it.
  - Needs C(gpg), C(gpgv) and C(dpkg-deb) on the machine the module runs on.
extends_documentation_fragment:
  - accelops.gpu.attributes
attributes:
  check_mode:
    support: full
    details: Reads upstream and says what would be copied. The packages of O(preferences_from) are read from O(dest)
      where the copy holds them (their SHA256 that of upstream's signed index), else downloaded into a temporary
      directory.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: A copy in place that has exactly the selected packages, this index and the site key's signature over it
      is left as it is.
options:
  upstream:
    description: The repository's directory, C(https://) (or C(http://) for a mirror on a trusted network).
    type: str
    required: true
  keyring:
    description: The upstream signing key's file on the machine the module runs on, armored or binary.
    type: path
    required: true
  fingerprint:
    description: The upstream key's full fingerprint (40 hex digits); O(keyring) must hold this key and no other.
    type: str
    required: true
  packages:
    description:
      - What the nodes install, each C(name), C(name=version) or C(name=GLOB) (the newest version the glob matches).
    type: list
    elements: str
    required: true
  preferences_from:
    description:
      - >-
        Packages of O(packages) whose apt preferences files (C(/etc/apt/preferences.d/)) limit the versions of other
        packages once installed. Their C(Pin: version) paragraphs above priority 500 apply to the selection.
    type: list
    elements: str
    default: []
  recommends:
    description: Follow C(Recommends) too, as apt does by default.
    type: bool
    default: true
  dest:
    description: The copy's directory on the machine the module runs on, replaced whole.
    type: path
    required: true
  gnupg_home:
    description: The GnuPG home that holds the site's secret signing key. It is only read and signed with.
    type: path
    required: true
  signing_key:
    description: The full fingerprint of the site's key in O(gnupg_home) that signs the copy.
    type: str
    required: true
  origin:
    description: C(Origin) of the copy's Release in place of upstream's.
    type: str
  label:
    description: C(Label) of the copy's Release in place of upstream's (repository pins match on it).
    type: str
  timeout:
    description: Seconds for each download to answer.
    type: int
    default: 60
  validate_certs:
    description: Check upstream's TLS certificate.
    type: bool
    default: true
seealso:
  - name: Air-gapped sites
    description: The playbook that builds a site's whole mirror with this module.
    link: https://github.com/accelops/accelops.gpu/blob/main/docs/airgap.md
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Copy the driver branch 550 and CUDA 12.4 from NVIDIA's Debian 12 repository into the site's mirror
  accelops.gpu.apt_mirror:
    upstream: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/
    keyring: /srv/keys/3bf863cc.pub
    fingerprint: EB693B3035CD5710E231E123A4B469963BF863CC
    packages: [nvidia-driver-pinning-550, cuda-drivers-550, nvidia-fabricmanager-550, cuda-toolkit-12-4]
    preferences_from: [nvidia-driver-pinning-550]
    dest: /srv/mirror/cuda/repos/debian12/x86_64
    gnupg_home: /srv/keys/site-gnupg
    signing_key: 0123456789ABCDEF0123456789ABCDEF01234567
  register: copied

- name: Say what must come from the distribution's mirror
  ansible.builtin.debug:
    msg: "{{ copied.outside }}"
"""

RETURN = r"""
packages:
  description: The packages in the copy.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The package.
      type: str
    version:
      description: Its version.
      type: str
    file:
      description: Its file in O(dest).
      type: str
  sample: [{"name": "cuda-drivers-550", "version": "550.127.08-1", "file": "cuda-drivers-550_550.127.08-1_amd64.deb"}]
outside:
  description: Dependencies that the repository cannot satisfy, for the distribution's mirror to carry.
  returned: always
  type: list
  elements: str
  sample: ["dkms"]
pins:
  description: The version pins read from O(preferences_from), as package globs and a version glob.
  returned: always
  type: list
  elements: dict
  sample: [{"packages": ["cuda-drivers*", "nvidia-*"], "version": "550.*"}]
downloaded:
  description: The files downloaded into the copy (the others were in O(dest) already).
  returned: always
  type: list
  elements: str
key_file:
  description: The site's public key in O(dest).
  returned: always
  type: str
  sample: /srv/mirror/cuda/repos/debian12/x86_64/01234567.pub
"""

import contextlib
import gzip
import hashlib
import os
import re
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.accelops.gpu.plugins.module_utils import _apt_mirror as mirror

# What a copy holds: the packages, the index, its signatures and the site's key.
_OWN = re.compile(r"\A(?:[^/]+\.deb|Packages|Packages\.gz|Release|InRelease|Release\.gpg|[0-9a-f]{8}\.pub)\Z")


def fingerprint(value, field):
    text = re.sub(r"\s+", "", str(value or "")).upper()
    if not mirror._FINGERPRINT.match(text):
        raise mirror.MirrorError("%s: %r is not a full key fingerprint (40 hex digits)" % (field, value))
    return text


def check_params(params):
    upstream = params["upstream"]
    if not re.match(r"^https?://[^\s/]+/\S*$", upstream) or any(c in upstream for c in "\n\r\0"):
        raise mirror.MirrorError("upstream: %r is not an http:// or https:// URL of a directory" % upstream)
    params["upstream"] = upstream if upstream.endswith("/") else upstream + "/"
    params["fingerprint"] = fingerprint(params["fingerprint"], "fingerprint")
    params["signing_key"] = fingerprint(params["signing_key"], "signing_key")
    if not params["packages"]:
        raise mirror.MirrorError("packages: name at least one package")
    params["requests"] = [mirror.parse_request(item) for item in params["packages"]]
    names = [name for name, _version in params["requests"]]
    for name in params["preferences_from"]:
        if name not in names:
            raise mirror.MirrorError("preferences_from: %s is not one of packages" % name)
    dest = os.path.abspath(params["dest"])
    if dest == os.path.dirname(dest):
        raise mirror.MirrorError("dest: %r is not a directory of its own" % params["dest"])
    params["dest"] = dest
    if not os.path.isdir(os.path.dirname(dest)):
        raise mirror.MirrorError("dest: the directory %s above it does not exist" % os.path.dirname(dest))
    if os.path.lexists(dest) and (os.path.islink(dest) or not os.path.isdir(dest)):
        raise mirror.MirrorError("dest: %s is not a directory" % dest)  # build() renames it: not through a link
    if os.path.isdir(dest):
        # dest is replaced whole: only a copy of this module's (packages, the index, the key) may be there.
        foreign = sorted(name for name in os.listdir(dest) if not _OWN.match(name))
        if foreign:
            raise mirror.MirrorError("dest: %s holds files that are not a copy's (%s): give a directory of its own"
                                     % (dest, ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")))
    for field in ("origin", "label"):
        if params[field] is not None and (not params[field].strip() or re.search(r"[\n\r\0]", params[field])):
            raise mirror.MirrorError("%s: one line of text, not %r" % (field, params[field]))
    if params["timeout"] <= 0:
        raise mirror.MirrorError("timeout: a number of seconds above 0, not %s" % params["timeout"])


class Upstream:
    def __init__(self, params):
        self.base = params["upstream"]
        self.timeout = params["timeout"]
        self.validate_certs = params["validate_certs"]

    def open(self, url):
        try:
            return open_url(url, timeout=self.timeout, validate_certs=self.validate_certs, follow_redirects="safe")
        except Exception as exc:  # urllib, http.client, ssl and socket errors alike: said with the URL
            raise mirror.MirrorError("cannot fetch %s: %s" % (url, exc)) from None

    def fetch(self, url):
        try:
            with contextlib.closing(self.open(url)) as response:
                return response.read()
        except mirror.MirrorError:
            raise
        except Exception as exc:
            raise mirror.MirrorError("cannot fetch %s: %s" % (url, exc)) from None

    def package_url(self, stanza):
        mirror.local_name(stanza)  # refuses a path out of upstream's directory
        path = stanza["Filename"]
        return self.base + (path[2:] if path.startswith("./") else path)

    def download(self, stanza, path):
        url = self.package_url(stanza)
        size, digest, written = int(stanza["Size"]), hashlib.sha256(), 0
        try:
            with contextlib.closing(self.open(url)) as response, open(path, "wb") as handle:
                for block in iter(lambda: response.read(mirror._CHUNK), b""):
                    written += len(block)
                    if written > size:
                        break
                    digest.update(block)
                    handle.write(block)
        except mirror.MirrorError:
            raise
        except Exception as exc:
            raise mirror.MirrorError("cannot fetch %s: %s" % (url, exc)) from None
        if written != size or digest.hexdigest() != stanza["SHA256"].lower():
            os.unlink(path)
            raise mirror.MirrorError("%s does not match the size and SHA256 of the signed index" % url)


def select(params, upstream, upstream_gpg, workdir):
    """The signed index of upstream and the packages to copy, with the pins read from preferences_from."""
    text = mirror.verify_inrelease(upstream_gpg, params["keyring"], params["fingerprint"],
                                   upstream.fetch(upstream.base + "InRelease"), workdir)
    release, hashes = mirror.release_hashes(text)
    index = mirror.Index(mirror.packages_index(upstream.fetch, upstream.base, hashes))
    pins = []
    wanted = dict(params["requests"])
    plain = mirror.Selection(index, recommends=False)
    for name in params["preferences_from"]:
        found = plain.candidates(name, "=" if wanted[name] else None, wanted[name] or None)
        if not found:
            plain.request(name, wanted[name])  # says what the repository has
        # The copy in place, where it is that very package (its SHA256 in upstream's signed index); else upstream's.
        path = os.path.join(params["dest"], mirror.local_name(found[-1]))
        if os.path.islink(path) or not mirror.file_matches(path, found[-1]):
            path = os.path.join(workdir, mirror.local_name(found[-1]))
            upstream.download(found[-1], path)
        pins += mirror.parse_pins(mirror.deb_preferences(path))
    selection = mirror.Selection(index, pins, params["recommends"], exempt=params["preferences_from"])
    for name, version in params["requests"]:
        selection.request(name, version)
    files = {}
    for stanza in selection.chosen.values():
        name = mirror.local_name(stanza)
        if name in files and files[name] is not stanza:
            raise mirror.MirrorError("two packages of the index have the file name %s" % name)
        files[name] = stanza
    return release, selection, pins, files


class Plan:
    """What the copy should hold: the packages by file name, the index files, the site's key and upstream's
    Release."""

    def __init__(self, release, files, index_files, key):
        self.release, self.files, self.index_files = release, files, index_files
        self.key_name, self.key_data = key
        self.own_files = [*index_files, key]


def in_place(params, plan, site_gpg_check, workdir):
    dest = params["dest"]
    files = plan.files
    try:
        present = set(os.listdir(dest))
    except OSError:
        return False
    wanted = set(files) | {name for name, _data in plan.own_files} | {"Release", "InRelease", "Release.gpg"}
    if present != wanted:
        return False
    for name, data in plan.own_files:
        try:
            with open(os.path.join(dest, name), "rb") as handle:
                if handle.read() != data:
                    return False
        except OSError:
            return False
    if not all(mirror.file_matches(os.path.join(dest, name), stanza) for name, stanza in files.items()):
        return False
    key_file = os.path.join(workdir, "site.asc")
    mirror.write_file(key_file, plan.key_data)
    return mirror.signed_hashes_match(site_gpg_check, (key_file, params["signing_key"]), dest, plan.index_files,
                                      workdir, fields=mirror.release_fields(plan.release, params["origin"],
                                                                            params["label"]))


def build(params, upstream, site_gpg, plan):
    """The new copy beside dest, then renamed over it. Returns the files downloaded."""
    dest = params["dest"]
    parent = os.path.dirname(dest)
    staging = tempfile.mkdtemp(prefix=".%s.new-" % os.path.basename(dest), dir=parent)
    downloaded = []
    try:
        os.chmod(staging, 0o755)
        for name, stanza in sorted(plan.files.items()):
            old, new = os.path.join(dest, name), os.path.join(staging, name)
            if os.path.isfile(old) and not os.path.islink(old) and mirror.file_matches(old, stanza):
                shutil.copy2(old, new)
            else:
                upstream.download(stanza, new)
                downloaded.append(name)
        for name, data in plan.own_files:
            mirror.write_file(os.path.join(staging, name), data)
        release_path = os.path.join(staging, "Release")
        release = mirror.release_text(plan.release, plan.index_files, params["origin"], params["label"])
        mirror.write_file(release_path, release)
        # A key behind a passphrase fails at once (no prompt that nobody answers).
        signer = ("--pinentry-mode", "error", "--local-user", params["signing_key"] + "!", "--digest-algo", "SHA512")
        site_gpg(*signer, "--armor", "--detach-sign", "--output", os.path.join(staging, "Release.gpg"), release_path)
        site_gpg(*signer, "--clearsign", "--output", os.path.join(staging, "InRelease"), release_path)
        for name in os.listdir(staging):
            os.chmod(os.path.join(staging, name), 0o644)
        old_copy = None
        if os.path.lexists(dest):
            if os.path.islink(dest) or not os.path.isdir(dest):
                raise mirror.MirrorError("dest: %s is not a directory" % dest)
            old_copy = tempfile.mkdtemp(prefix=".%s.old-" % os.path.basename(dest), dir=parent)
            os.rmdir(old_copy)
            os.rename(dest, old_copy)
        try:
            os.rename(staging, dest)
        except OSError:
            if old_copy:
                os.rename(old_copy, dest)
            raise
        if old_copy:
            shutil.rmtree(old_copy, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return downloaded


def run(module, params):
    workdir = tempfile.mkdtemp(prefix="accelops-apt-mirror-")
    try:
        homes = []
        for name in ("upstream", "check"):
            home = os.path.join(workdir, name + "-gnupg")
            os.mkdir(home, 0o700)
            homes.append(mirror.Gpg(home))
        upstream_gpg, check_gpg = homes
        site_gpg = mirror.Gpg(params["gnupg_home"])
        mirror.check_key_file(upstream_gpg, params["keyring"], params["fingerprint"], "keyring")
        secret = site_gpg("--with-colons", "--list-secret-keys", params["signing_key"], check=False)
        if secret.returncode != 0 or not secret.stdout.startswith(b"sec"):
            raise mirror.MirrorError("signing_key: %s has no secret key in %s"
                                     % (params["signing_key"], params["gnupg_home"]))
        # The key must sign without a prompt (no passphrase): tried before anything is downloaded.
        probe = os.path.join(workdir, "probe")
        mirror.write_file(probe, b"accelops.gpu apt_mirror\n")
        tried = site_gpg("--pinentry-mode", "error", "--local-user", params["signing_key"] + "!", "--armor",
                         "--detach-sign", "--output", probe + ".asc", probe, check=False)
        if tried.returncode != 0:
            raise mirror.MirrorError("signing_key: %s in %s cannot sign without a prompt (a key with a passphrase?): %s"
                                     % (params["signing_key"], params["gnupg_home"],
                                        tried.stderr.decode("utf-8", "replace").strip()[-300:]))
        key_data = site_gpg("--armor", "--export", params["signing_key"]).stdout
        key_name = params["signing_key"][-8:].lower() + ".pub"
        upstream = Upstream(params)
        release, selection, pins, files = select(params, upstream, upstream_gpg, workdir)
        packages_data = mirror.packages_text(selection.chosen)
        index_files = [("Packages", packages_data), ("Packages.gz", gzip.compress(packages_data, mtime=0))]
        result = dict(
            changed=False,
            packages=[{"name": s["Package"], "version": s["Version"], "file": name}
                      for name, s in sorted(files.items(), key=lambda item: (item[1]["Package"], item[0]))],
            outside=sorted(selection.outside),
            pins=[{"packages": list(globs), "version": version} for globs, version in pins],
            downloaded=[],
            key_file=os.path.join(params["dest"], key_name),
        )
        plan = Plan(release, files, index_files, (key_name, key_data))
        if in_place(params, plan, check_gpg, workdir):
            return result
        result["changed"] = True
        if module.check_mode:
            result["downloaded"] = sorted(name for name, stanza in files.items()
                                          if not mirror.file_matches(os.path.join(params["dest"], name), stanza))
            return result
        result["downloaded"] = build(params, upstream, site_gpg, plan)
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            upstream=dict(type="str", required=True),
            keyring=dict(type="path", required=True),
            fingerprint=dict(type="str", required=True),
            packages=dict(type="list", elements="str", required=True),
            preferences_from=dict(type="list", elements="str", default=[]),
            recommends=dict(type="bool", default=True),
            dest=dict(type="path", required=True),
            gnupg_home=dict(type="path", required=True),
            signing_key=dict(type="str", required=True, no_log=False),  # a fingerprint, public
            origin=dict(type="str"),
            label=dict(type="str"),
            timeout=dict(type="int", default=60),
            validate_certs=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    params = dict(module.params)
    try:
        check_params(params)
        result = run(module, params)
    except mirror.MirrorError as exc:
        module.fail_json(msg="%s; nothing was changed" % exc)
    except OSError as exc:
        path = getattr(exc, "filename", "") or params["dest"]
        module.fail_json(msg="%s: %s; nothing was changed" % (path, exc.strerror or exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
