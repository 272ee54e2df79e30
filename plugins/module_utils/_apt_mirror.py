# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A site's own signed copy of what its nodes need from a signed flat apt repository (NVIDIA's CUDA layout).

Upstream is trusted only through its pinned key: the key file must hold exactly the pinned key, InRelease must carry
a good signature of it, and the text that gpgv returns (never the unverified text) gives the hashes of the package
index, whose SHA256 and size in turn check every package downloaded. The copy is signed with the site's own key.
"""

from __future__ import annotations

import email.utils
import fnmatch
import gzip
import hashlib
import io
import lzma
import os
import re
import subprocess
import tarfile
import tempfile
import time

from ansible_collections.accelops.gpu.plugins.module_utils import _pkgversion

# A relation as apt writes it: name[:arch] [(op version)] [[arch list]] [<profile>]
_RELATION = re.compile(
    r"^([a-z0-9][a-z0-9.+-]*)(?::[a-z0-9-]+)?\s*(?:\(\s*(<<|<=|=|>=|>>|<|>)\s*([^)\s<>=]+)\s*\))?\s*(?:\[[^\]]*\]\s*)?(?:<[^>]*>\s*)*$"
)
_NAME = re.compile(r"\A[a-z0-9][a-z0-9.+-]*\Z")
# A colon only after an epoch, which is a number: compare_versions reads what comes before the first colon as one.
# A version may be a glob (* and ?): the newest version it matches.
_VERSION = re.compile(r"\A(?:[0-9]+:[0-9A-Za-z.+~:*?-]+|[0-9A-Za-z.+~*?-]+)\Z")
_FINGERPRINT = re.compile(r"\A[0-9A-F]{40}\Z")
# A package's Filename in an index: relative, plain path segments, a .deb (no "..", checked apart).
_FILENAME = re.compile(r"\A(?:\./)?(?:[A-Za-z0-9_.+~%-]+/)*[A-Za-z0-9_.+~%-]+\.deb\Z")
_CHUNK = 1 << 20


class MirrorError(Exception):
    """A refusal, said as it is: nothing of the mirror was changed."""


def compare_versions(left, right):
    """<0, 0 or >0 as Debian orders the two versions (dpkg's order, module_utils/_pkgversion.py)."""
    try:
        return _pkgversion.deb_compare(left, right)
    except _pkgversion.VersionError as exc:
        raise MirrorError("cannot read the version: %s" % exc) from None


def satisfies(version, op, wanted):
    if not op:
        return True
    order = compare_versions(version, wanted)
    return {"<<": order < 0, "<": order <= 0, "<=": order <= 0, "=": order == 0, ">=": order >= 0,
            ">": order >= 0, ">>": order > 0}[op]


def parse_relations(text):
    """A Depends-like field as groups of alternatives, each (name, op, version)."""
    groups = []
    for group in (part.strip() for part in text.split(",")):
        if not group:
            continue
        alternatives = []
        for alternative in (part.strip() for part in group.split("|")):
            match = _RELATION.match(alternative)
            if not match:
                raise MirrorError("cannot read the relation %r" % alternative)
            alternatives.append(match.groups())
        groups.append(alternatives)
    return groups


def parse_stanzas(text):
    """deb822 paragraphs: a dict of field to value each, with the paragraph's own text under None."""
    stanzas = []
    for block in re.split(r"\n\s*\n", text.strip("\n")):
        if not block.strip():
            continue
        fields = {}
        last = None
        for line in block.splitlines():
            if line[:1] in (" ", "\t") and last:
                fields[last] += "\n" + line
            elif ":" in line:
                last, value = line.partition(":")[::2]
                fields[last] = value.strip()
            elif line.strip() and not line.startswith("#"):
                raise MirrorError("cannot read the line %r" % line)
        fields[None] = block
        stanzas.append(fields)
    return stanzas


def parse_request(text):
    """'name', 'name=version' or 'name=GLOB' (the newest version that the glob matches, as 2.*+cuda12.8)."""
    name, version = str(text).strip().partition("=")[::2]
    if not _NAME.match(name) or (version and not _VERSION.match(version)) or "=" in version:
        raise MirrorError("packages: %r is not a package name, or name=version" % text)
    return name, version


class Gpg:
    """gpg and gpgv in a home of their own, never the user's keyrings."""

    def __init__(self, home, run=subprocess.run):
        self.home = home
        self.run = run

    def __call__(self, *args, data=None, check=True):
        result = self.run(["gpg", "--homedir", self.home, "--batch", "--no-tty", "--quiet", *args], input=data,
                          capture_output=True, check=False)
        if check and result.returncode != 0:
            raise MirrorError("gpg %s failed: %s" % (args[0], result.stderr.decode("utf-8", "replace").strip()))
        return result

    def primary_fingerprints(self, key_file):
        listing = self("--with-colons", "--show-keys", key_file).stdout.decode("utf-8", "replace").splitlines()
        fingerprints, after_pub = [], False
        for line in listing:
            fields = line.split(":")
            if fields[0] == "pub":
                after_pub = True
            elif fields[0] == "fpr" and after_pub:
                fingerprints.append(fields[9].upper())
                after_pub = False
            elif fields[0] in ("sub", "ssb"):
                after_pub = False
        return fingerprints


def check_key_file(gpg, key_file, fingerprint, what):
    """The whole key file must be the one pinned key (no other key beside it)."""
    if not os.path.isfile(key_file):
        raise MirrorError("%s: %s is not a file" % (what, key_file))
    found = gpg.primary_fingerprints(key_file)
    if found != [fingerprint]:
        raise MirrorError("%s: %s holds %s, not the pinned key %s alone"
                          % (what, key_file, ", ".join(found) or "no key", fingerprint))


def verify_inrelease(gpg, key_file, fingerprint, inrelease, workdir):
    """The text of InRelease that gpgv vouches for, signed by the pinned key."""
    gpg("--import", key_file)
    workdir = tempfile.mkdtemp(dir=workdir)
    keyring = os.path.join(workdir, "keyring.gpg")
    with open(keyring, "wb") as handle:
        handle.write(gpg("--export", fingerprint).stdout)
    signed = os.path.join(workdir, "InRelease")
    with open(signed, "wb") as handle:
        handle.write(inrelease)
    output = os.path.join(workdir, "Release.verified")
    result = gpg.run(["gpgv", "--homedir", gpg.home, "--keyring", keyring, "--status-fd", "1", "--output", output,
                      signed], capture_output=True, check=False)
    status = result.stdout.decode("utf-8", "replace")
    valid = [line.split() for line in status.splitlines() if line.startswith("[GNUPG:] VALIDSIG ")]
    if result.returncode != 0 or not valid or valid[0][-1].upper() != fingerprint:
        raise MirrorError("InRelease carries no good signature of the pinned key %s: %s"
                          % (fingerprint, (result.stderr.decode("utf-8", "replace").strip() or status.strip())))
    with open(output, "rb") as handle:
        return handle.read().decode("utf-8")


def release_hashes(release_text):
    """{path: (size, sha256)} from the SHA256 field of a Release file."""
    stanzas = parse_stanzas(release_text)
    if len(stanzas) != 1 or "SHA256" not in stanzas[0]:
        raise MirrorError("the Release file has no SHA256 list")
    hashes = {}
    for line in stanzas[0]["SHA256"].splitlines():
        parts = line.split()
        if len(parts) == 3:
            hashes[parts[2]] = (int(parts[1]), parts[0].lower())
    return stanzas[0], hashes


def packages_index(fetch, upstream, hashes):
    """The package index that Release names, checked against its SHA256, uncompressed."""
    for name, opener in (("Packages.xz", lzma.decompress), ("Packages.gz", gzip.decompress), ("Packages", bytes)):
        if name in hashes:
            data = fetch(upstream + name)
            size, digest = hashes[name]
            if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
                raise MirrorError("%s%s does not match the SHA256 in the signed Release" % (upstream, name))
            return opener(data).decode("utf-8")
    raise MirrorError("the signed Release of %s names no Packages index" % upstream)


class Index:
    """The packages of one repository by name, and who provides what."""

    def __init__(self, text):
        self.by_name, self.providers = {}, {}
        for stanza in parse_stanzas(text):
            for field in ("Package", "Version", "Filename", "Size", "SHA256"):
                if field not in stanza:
                    raise MirrorError("a package of the index has no %s: %s" % (field, stanza[None][:200]))
            self.by_name.setdefault(stanza["Package"], []).append(stanza)
            for group in parse_relations(stanza.get("Provides", "")):
                for name, op, version in group:
                    self.providers.setdefault(name, []).append((stanza, op, version))

    def versions(self, name):
        return sorted((s["Version"] for s in self.by_name.get(name, [])), key=_Key)


class _Key:
    def __init__(self, version):
        self.version = version

    def __lt__(self, other):
        return compare_versions(self.version, other.version) < 0


def parse_pins(text):
    """apt preferences: [(package globs, version glob)] of the 'Pin: version' paragraphs above priority 500."""
    pins = []
    for stanza in parse_stanzas(text):
        pin = stanza.get("Pin", "")
        try:
            priority = int(stanza.get("Pin-Priority", "0"))
        except ValueError:
            continue
        if pin.startswith("version ") and priority > 500 and stanza.get("Package"):
            pins.append((tuple(stanza["Package"].split()), pin[len("version "):].strip()))
    return pins


def deb_preferences(deb_path, run=subprocess.run):
    """The apt preferences files that a package installs, read with dpkg-deb."""
    result = run(["dpkg-deb", "--fsys-tarfile", deb_path], capture_output=True, check=False)
    if result.returncode != 0:
        raise MirrorError("dpkg-deb cannot read %s: %s" % (deb_path, result.stderr.decode("utf-8", "replace").strip()))
    texts = []
    with tarfile.open(fileobj=io.BytesIO(result.stdout)) as archive:
        for member in archive.getmembers():
            if member.isfile() and member.name.lstrip("./").startswith("etc/apt/preferences.d/"):
                texts.append(archive.extractfile(member).read().decode("utf-8", "replace"))
    return "\n\n".join(texts)


class Selection:
    """What the requested packages need from the repository, as a node's apt would take it under the pins."""

    def __init__(self, index, pins=(), recommends=True, exempt=()):
        self.index = index
        self.pins = list(pins)
        # The packages that carry the pins: installed before the pins exist, as the pinning package is.
        self.exempt = set(exempt)
        self.recommends = recommends
        self.chosen = {}
        self.outside = set()

    def _pinned(self, name):
        if name in self.exempt:
            return []
        return [version for globs, version in self.pins if any(fnmatch.fnmatchcase(name, glob) for glob in globs)]

    def _preferred(self, name, stanzas):
        """apt's view of a pin: versions that match it outrank the others, which stay installable where none does.
        Of a pinned name every version the pins prefer is taken (nodes of one branch may be on different releases),
        else the newest."""
        stanzas = sorted(stanzas, key=lambda s: _Key(s["Version"]))
        pinned = self._pinned(name)
        preferred = [s for s in stanzas if any(fnmatch.fnmatchcase(s["Version"], glob) for glob in pinned)]
        return preferred or stanzas[-1:]

    def candidates(self, name, op, version):
        """The packages that satisfy one alternative, as the node's apt would choose them."""
        found = {}
        for stanza in self.index.by_name.get(name, []):
            if satisfies(stanza["Version"], op, version):
                found.setdefault(name, []).append(stanza)
        for stanza, provided_op, provided in self.index.providers.get(name, []):
            if op and not (provided_op == "=" and satisfies(provided, op, version)):
                continue
            found.setdefault(stanza["Package"], []).append(stanza)
        taken = []
        for package, stanzas in found.items():
            taken += self._preferred(package, stanzas)
        return taken

    def request(self, name, version):
        if version and any(char in version for char in "*?"):
            matching = [s for s in self.index.by_name.get(name, []) if fnmatch.fnmatchcase(s["Version"], version)]
            found = sorted(matching, key=lambda s: _Key(s["Version"]))[-1:]
        else:
            found = self.candidates(name, "=" if version else None, version or None)
        if not found:
            have = self.index.versions(name)
            raise MirrorError(
                "packages: %s%s is not in the repository%s"
                % (name, "=" + version if version else "",
                   " (it has %s)" % ", ".join(have) if have else ""))
        self._take(found)

    def _take(self, stanzas):
        queue = list(stanzas)
        while queue:
            stanza = queue.pop()
            key = (stanza["Package"], stanza["Version"])
            if key in self.chosen:
                continue
            self.chosen[key] = stanza
            fields = ("Pre-Depends", "Depends") + (("Recommends",) if self.recommends else ())
            for field in fields:
                for group in parse_relations(stanza.get(field, "")):
                    for name, op, version in group:
                        found = self.candidates(name, op, version)
                        if found:
                            queue.extend(found)
                            break
                    else:
                        if field != "Recommends":
                            self.outside.add(" | ".join(
                                name + (" (%s %s)" % (op, version) if op else "") for name, op, version in group))


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def file_matches(path, stanza):
    try:
        return os.path.getsize(path) == int(stanza["Size"]) and sha256_file(path) == stanza["SHA256"].lower()
    except OSError:
        return False


def local_name(stanza):
    """The package's file name in the flat copy; an index that names a file outside upstream's directory, or an odd
    one, is refused (before anything is downloaded or written, in check mode too)."""
    path = stanza["Filename"]
    name = os.path.basename(path)
    if not _FILENAME.match(path) or "/../" in "/" + path or name.startswith("."):
        raise MirrorError("the index names an odd file %r for %s" % (path, stanza["Package"]))
    return name


def packages_text(chosen):
    """The copy's index: upstream's paragraphs as they are, Filename pointing into the flat directory."""
    paragraphs = []
    for key in sorted(chosen, key=lambda k: (k[0], _Key(k[1]))):
        stanza = chosen[key]
        line = "Filename: ./" + local_name(stanza)
        text = re.sub(r"(?m)^Filename:.*$", lambda _match, line=line: line, stanza[None])
        paragraphs.append(text.rstrip("\n"))
    return ("\n\n".join(paragraphs) + "\n").encode("utf-8") if paragraphs else b""


def release_fields(upstream_release, origin=None, label=None):
    """[(field, value)] of the copy's Release before its hashes: upstream's Origin, Label and Architecture (NVIDIA's
    pin matches the label), or the site's Origin and Label."""
    fields = []
    for field, value in (("Origin", origin or upstream_release.get("Origin")),
                         ("Label", label or upstream_release.get("Label")),
                         ("Architecture", upstream_release.get("Architecture"))):
        if value:
            if "\n" in value:
                raise MirrorError("the %s of the Release is not one line" % field)
            fields.append((field, value))
    return fields


def release_text(upstream_release, files, origin=None, label=None, now=None):
    """Release for the copy: release_fields, the date and the hashes of the copy's own indexes."""
    lines = ["%s: %s" % item for item in release_fields(upstream_release, origin, label)]
    # RFC 1123 in English whatever the locale (apt refuses a Date it cannot read; time.strftime's %a and %b follow
    # LC_TIME, which AnsibleModule sets from the environment).
    lines.append("Date: %s UTC" % email.utils.formatdate(time.time() if now is None else now, usegmt=True)[:-4])
    lines.append("Acquire-By-Hash: no")
    for field, algorithm in (("MD5Sum", hashlib.md5), ("SHA1", hashlib.sha1), ("SHA256", hashlib.sha256)):
        lines.append("%s:" % field)
        for name, data in files:
            lines.append(" %s %16d %s" % (algorithm(data).hexdigest(), len(data), name))
    return ("\n".join(lines) + "\n").encode("utf-8")


def signed_hashes_match(gpg, site_key, dest, files, workdir, *, fields=None):
    """Whether the copy in place is signed by the site's key (its file and fingerprint) over exactly these index
    files, and, where fields (release_fields) are given, says exactly that Origin, Label and Architecture."""
    key_file, fingerprint = site_key
    try:
        with open(os.path.join(dest, "InRelease"), "rb") as handle:
            inrelease = handle.read()
        text = verify_inrelease(gpg, key_file, fingerprint, inrelease, workdir)
        release, hashes = release_hashes(text)
    except (OSError, MirrorError, UnicodeDecodeError):
        return False
    wanted = {name: (len(data), hashlib.sha256(data).hexdigest()) for name, data in files}
    if fields is not None and any(release.get(field) != dict(fields).get(field)
                                  for field in ("Origin", "Label", "Architecture")):
        return False
    return hashes == wanted


def write_file(path, data):
    with open(path, "wb") as handle:
        handle.write(data)
