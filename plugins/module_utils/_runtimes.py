# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the container runtimes' configuration for NVIDIA's container toolkit
(accelops.gpu.container_runtime). Pure functions over the text of the node's files: Docker's daemon.json merged,
containerd's config.toml given one import and a drop-in that carries the site's CRI plugin section with NVIDIA's
runtime and CDI added, CRI-O's drop-in. Nothing here writes."""

from __future__ import annotations

import copy
import datetime
import fnmatch
import json
import math
import os
import re

try:  # Python 3.11 and later
    import tomllib as _toml_reader
except ImportError:  # pragma: no cover - the node's Python decides
    try:
        import tomli as _toml_reader
    except ImportError:
        try:
            import toml as _toml_reader  # python3-toml, as Ubuntu 22.04 packages it
        except ImportError:
            _toml_reader = None

HAS_TOML = _toml_reader is not None
TOML_HINT = ("reading containerd's TOML configuration needs Python 3.11 or later (tomllib) or the python3-toml "
             "package for the module's Python")

RUNTIMES = ("docker", "containerd", "crio")
# containerd's CRI plugin per configuration version: 2 is containerd 1.x's, 3 is containerd 2.x's.
CRI_PLUGIN = {2: "io.containerd.grpc.v1.cri", 3: "io.containerd.cri.v1.runtime"}
DEFAULT_CDI_SPEC_DIRS = ["/etc/cdi", "/var/run/cdi"]
HEADER = ("# Written by accelops.gpu (role container_toolkit): NVIDIA's runtime and CDI for containerd.\n"
          "# It carries the whole %s plugin section of %s and its other imports,\n"
          "# as containerd replaces a plugin's section whole when it reads an import;\n"
          "# change the site's settings there and run the role again.\n")
CRIO_TEXT = ("# Written by accelops.gpu (role container_toolkit): CRI-O hands out GPUs through the CDI specs here.\n"
             "[crio.runtime]\ncdi_spec_dirs = %s\n")
# A value written into a file: an absolute path without control characters, quotes or backslashes.
PATH_PATTERN = re.compile(r"\A/[^\x00-\x1f\x7f\"\\]*\Z")
BARE_KEY = re.compile(r"\A[A-Za-z0-9_-]+\Z")


class RuntimeConfigError(Exception):
    """A file that cannot be merged (invalid, of an unknown version, laid out so that it cannot be edited safely):
    the message names the file, and nothing is written."""


def check_path_value(name, value):
    """A message when a value that goes into a file is not an absolute path fit to be written there."""
    if not isinstance(value, str) or not PATH_PATTERN.match(value):
        return ("%s must be an absolute path without newlines, control characters, quotes or backslashes, got %r"
                % (name, value))
    return None


# --- Docker ---------------------------------------------------------------------------------------------------------

def _unique_keys(pairs):
    """A JSON object's dict; ValueError for a key given twice (which of them Docker reads is not for us to guess)."""
    data = {}
    for key, value in pairs:
        if key in data:
            raise ValueError("the key %s is given twice in one object" % json.dumps(key, ensure_ascii=False))
        data[key] = value
    return data


def _no_constant(name):
    """NaN and Infinity are not JSON: Docker refuses them, so they are not read (nor written back) here."""
    raise ValueError("%s is not a JSON value" % name)


def docker_merge(text, runtime_path, set_default):
    """daemon.json's text (None: no file) -> the new text, or None when nothing changes. Only runtimes.nvidia and,
    when asked, default-runtime are touched; every other key of the site is kept."""
    try:
        return _docker_merge(text, runtime_path, set_default)
    except RecursionError:
        raise RuntimeConfigError("is nested too deeply to be merged") from None


def _docker_merge(text, runtime_path, set_default):
    data = {}
    if text is not None and text.strip():
        try:
            data = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
        except (ValueError, RecursionError) as exc:
            raise RuntimeConfigError("is not valid JSON (%s)" % exc) from None
        if not isinstance(data, dict):
            raise RuntimeConfigError("is JSON but not an object")
    runtimes = data.get("runtimes", {})
    if not isinstance(runtimes, dict):
        raise RuntimeConfigError("has a 'runtimes' that is not an object")
    wanted = copy.deepcopy(data)
    wanted.setdefault("runtimes", {})
    wanted["runtimes"]["nvidia"] = {"path": runtime_path, "args": []}
    if set_default:
        wanted["default-runtime"] = "nvidia"
    if text is not None and wanted == data:
        return None
    return json.dumps(wanted, indent=4, ensure_ascii=False) + "\n"


# --- TOML -----------------------------------------------------------------------------------------------------------

def toml_loads(text, where):
    """Parse TOML text; RuntimeConfigError naming where it is not valid."""
    if not HAS_TOML:
        raise LookupError(TOML_HINT)
    try:
        return _toml_reader.loads(text)
    except Exception as exc:  # tomllib.TOMLDecodeError, toml.TomlDecodeError: each reader its own
        raise RuntimeConfigError("%s is not valid TOML (%s)" % (where, exc)) from None


def _key(name):
    return name if BARE_KEY.match(name) else json.dumps(name, ensure_ascii=False)


def _value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join("%s = %s" % (_key(k), _value(v)) for k, v in value.items()) + "}"
    raise RuntimeConfigError("holds a value TOML cannot write: %r" % (value,))


def toml_dumps(data, prefix=()):
    """TOML text of nested dicts: a table's keys, then its sub-tables and arrays of tables. Hand-written because no
    TOML writer can be counted on on the node; the caller parses the text back and compares."""
    lines, tables = [], []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value))
        elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            tables.append((key, value))
        else:
            lines.append("%s = %s" % (_key(key), _value(value)))
    out = []
    if lines:
        if prefix:
            out.append("[%s]" % ".".join(_key(part) for part in prefix))
        out.extend(lines)
        out.append("")
    for key, value in tables:
        path = (*prefix, key)
        if isinstance(value, list):
            for item in value:
                out.append("[[%s]]" % ".".join(_key(part) for part in path))
                inner = toml_dumps(item, path).splitlines()
                # The array element's own keys follow its header; its sub-tables come with their own headers.
                out.extend(line for line in inner if line != "[%s]" % ".".join(_key(part) for part in path))
                out.append("")
        else:
            text = toml_dumps(value, path)
            if not text.strip():
                out.append("[%s]" % ".".join(_key(part) for part in path))
                out.append("")
            else:
                out.append(text.rstrip("\n"))
                out.append("")
    return "\n".join(out).rstrip("\n") + "\n" if out else ""


def deep_merge(base, extra):
    """base with extra's keys set, dicts merged key by key."""
    merged = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


# --- containerd -----------------------------------------------------------------------------------------------------

def containerd_version(data, where, fallback):
    """The configuration's version: 2 or 3; a file without keys takes fallback. Version 1 (no version key) is
    refused."""
    if not data:
        return fallback
    version = data.get("version", 1)
    if version not in CRI_PLUGIN:
        raise RuntimeConfigError("%s has configuration version %s; only versions 2 (containerd 1.x) and 3 "
                                 "(containerd 2.x) are merged: migrate it with 'containerd config migrate'"
                                 % (where, version))
    return version


def nvidia_section(runtime_path, cdi_spec_dirs, set_default):
    """What NVIDIA's runtime and CDI add to the CRI plugin's section."""
    runtime = {"runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": runtime_path}}
    section = {"enable_cdi": True, "cdi_spec_dirs": list(cdi_spec_dirs),
               "containerd": {"runtimes": {"nvidia": runtime}}}
    if set_default:
        section["containerd"]["default_runtime_name"] = "nvidia"
    return section  # the same keys in version 2's and version 3's sections


def cdi_warning(release):
    """What to say where containerd's release (major, minor) reads no CDI settings (1.7 brought them); None else."""
    if release is None or release >= (1, 7):
        return None
    return ("containerd %d.%d does not read enable_cdi and cdi_spec_dirs (CDI comes with containerd 1.7): its "
            "containers get GPUs through NVIDIA's runtime only" % release)


def imports_of(data, config_dir):
    """The absolute patterns of a configuration's imports, relative ones taken from its directory."""
    found = data.get("imports", [])
    if not isinstance(found, list) or not all(isinstance(item, str) for item in found):
        raise RuntimeConfigError("has an 'imports' that is not a list of paths")
    return [item if os.path.isabs(item) else os.path.join(config_dir, item) for item in found]


def import_matches(pattern, path):
    """Whether one import pattern names path as containerd reads it: a pattern with a '*' is a glob whose wildcards
    stay within one path component (Go's filepath.Glob), any other names one file, brackets and all."""
    pattern, path = os.path.normpath(pattern), os.path.normpath(path)
    if "*" not in pattern:
        return pattern == path
    parts, names = pattern.split("/"), path.split("/")
    return len(parts) == len(names) and all(fnmatch.fnmatchcase(name, part) for name, part in zip(names, parts))


def imported(patterns, path):
    """Whether one of the import patterns names path."""
    return any(import_matches(pattern, path) for pattern in patterns)


def plugin_section(data, plugin, where):
    """The plugin's section of a parsed configuration ({} where it has none); RuntimeConfigError where 'plugins' or
    the section is not a table."""
    plugins = data.get("plugins", {})
    if not isinstance(plugins, dict):
        raise RuntimeConfigError("%s: 'plugins' is not a table" % where)
    section = plugins.get(plugin, {})
    if not isinstance(section, dict):
        raise RuntimeConfigError("%s: the %s plugin section is not a table" % (where, plugin))
    return section


def add_import(text, data, drop_in, where):
    """The config's text with drop_in added to its imports: a new top-level 'imports' line before the first table, or
    the drop-in appended to a one-line 'imports' array. Everything else of the text stays as it is."""
    lines = text.splitlines(keepends=True)
    if "imports" not in data:
        position = next((number for number, line in enumerate(lines) if line.lstrip().startswith("[")), len(lines))
        new = [*lines[:position], 'imports = [%s]\n' % json.dumps(drop_in), *lines[position:]]
        if position == len(lines) and lines and not lines[-1].endswith("\n"):
            new[position - 1] += "\n"
    else:
        pattern = re.compile(r"\A(\s*imports\s*=\s*\[)(.*?)(\]\s*(#.*)?\r?\n?)\Z")
        matches = [number for number, line in enumerate(lines) if pattern.match(line)]
        if len(matches) != 1:
            raise RuntimeConfigError("%s has an 'imports' array that is not on one line: add %s to it yourself"
                                     % (where, drop_in))
        head, items, tail = pattern.match(lines[matches[0]]).group(1, 2, 3)
        items = items.strip().rstrip(",").strip()
        lines[matches[0]] = "%s%s%s%s" % (head, items + ", " if items else "", json.dumps(drop_in), tail)
        new = lines
    result = "".join(new)
    wanted = dict(data, imports=[*data.get("imports", []), drop_in])
    if toml_loads(result, where) != wanted:
        raise RuntimeConfigError("%s cannot be given the import of %s without changing other settings: add it to "
                                 "its 'imports' yourself" % (where, drop_in))
    return result


def containerd_plan(config_text, config_path, imports_text, drop_in, options):
    """What to write for containerd: {config: new text or None, drop_in: new text, version}.

    config_text: config.toml's text or None; imports_text: {path: text} of the files its imports name (ours left
    out) in the order containerd reads them; options: runtime_path, cdi_spec_dirs, set_default, version (for a config
    without keys), read_after (those of imports_text that containerd reads after the drop-in, where its imports name
    it already)."""
    try:
        return _containerd_plan(config_text, config_path, imports_text, drop_in, options)
    except RecursionError:
        raise RuntimeConfigError("%s or one of its imports is nested too deeply to be merged" % config_path) from None


def _containerd_plan(config_text, config_path, imports_text, drop_in, options):
    data = toml_loads(config_text, config_path) if config_text is not None else {}
    version = containerd_version(data, config_path, options["version"])
    plugin = CRI_PLUGIN[version]
    config_dir = os.path.dirname(config_path)
    patterns = imports_of(data, config_dir)
    # The site's CRI section as containerd sees it: config.toml's, replaced whole by each import that has one.
    site = copy.deepcopy(plugin_section(data, plugin, config_path))
    for path, text in imports_text.items():
        other = toml_loads(text, path)
        if plugin in other.get("plugins", {}) or not isinstance(other.get("plugins", {}), dict):
            site = copy.deepcopy(plugin_section(other, plugin, path))
            if path in options.get("read_after", ()):
                raise RuntimeConfigError("%s is imported after %s and would replace its whole %s section: give the "
                                         "drop-in a name that sorts after it" % (path, drop_in, plugin))
    ours = nvidia_section(options["runtime_path"], options["cdi_spec_dirs"], options["set_default"])
    section = deep_merge(site, ours)
    wanted = {"version": version, "plugins": {plugin: section}}
    sources = ", ".join([config_path, *imports_text])
    drop_text = HEADER % (plugin, sources) + "\n" + toml_dumps(wanted)
    if toml_loads(drop_text, drop_in) != wanted:  # our own writer, checked by the reader
        raise RuntimeConfigError("the drop-in %s would not read back as written from %s" % (drop_in, sources))
    new_config = None
    if config_text is None or not data:
        new_config = "version = %d\nimports = [%s]\n" % (version, json.dumps(drop_in))
        if config_text:  # comments only: kept below
            new_config += "\n" + config_text
    elif not imported(patterns, drop_in):
        new_config = add_import(config_text, data, drop_in, config_path)
    return {"config": new_config, "drop_in": drop_text, "version": version}


def crio_text(cdi_spec_dirs):
    """CRI-O's drop-in: the directories of the CDI specs."""
    return CRIO_TEXT % json.dumps(list(cdi_spec_dirs))
