# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the controller's part of accelops.gpu.node_files that needs no task: its
arguments checked, the destinations an entry list stands for (module_utils trees and programs' libs expanded), and
whether an earlier read of them (node_probe's files) already finds every one as wanted."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

from ansible_collections.accelops.gpu.plugins.plugin_utils._closure import ClosureError, program, tree
from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import NodeFilesError

# What an entry can be; exactly one per entry.
SOURCES = ("template", "file", "module_utils", "program", "content", "base64", "directory", "link")
KEYS = set(SOURCES) | {"dest", "owner", "group", "mode", "lib", "secret"}
TOP = {"files", "owner", "group", "mode", "directory_mode", "known"}
MODE = re.compile(r"\A[0-7]{3,4}\Z")
BASE64 = re.compile(r"\A(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\Z")
# A user or group name as useradd allows it (no newline, colon or path separator can reach the node's lookups).
ACCOUNT = re.compile(r"\A[A-Za-z0-9_][A-Za-z0-9_.-]*\$?\Z")


def _fail(message):
    raise NodeFilesError("node_files: " + message)


def _type(value):
    """A value's type as YAML users know it (not ansible-core's tagged subclasses)."""
    for name, kind in (("bool", bool), ("int", int), ("float", float), ("str", str), ("list", list), ("dict", dict)):
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


def _check_mode_value(value, where):
    if value is not None and not (isinstance(value, str) and MODE.match(value)):
        _fail("%s must be three or four octal digits as a quoted string such as '0644', got %r%s"
              % (where, value, " (a YAML number; quote it)"
                 if isinstance(value, int) and not isinstance(value, bool) else ""))


def _check_account(value, where):
    if value is not None and not (isinstance(value, str) and ACCOUNT.match(value) and len(value) <= 64):
        _fail("%s must be a user or group name (letters, digits, '_', '.', '-'), got %r" % (where, value))


def check_args(args):
    """The task's arguments checked: one clear error naming the field and what is allowed."""
    unknown = sorted(set(args) - TOP)
    if unknown:
        _fail("unknown option %s; allowed: %s" % (", ".join(map(str, unknown)), ", ".join(sorted(TOP))))
    files = args.get("files")
    if not isinstance(files, list) or not files:
        _fail("files must be a non-empty list of entries, each a dict with dest and one of %s" % ", ".join(SOURCES))
    for key in ("owner", "group"):
        _check_account(args.get(key), key)
    for key in ("mode", "directory_mode"):
        _check_mode_value(args.get(key), key)
    if args.get("known") is not None and not isinstance(args["known"], dict):
        _fail("known must be node_probe's files (a dict of path to state), got %s" % _type(args["known"]))
    for index, entry in enumerate(files):
        where = "files[%d]" % index
        if not isinstance(entry, dict):
            _fail("%s must be a dict with dest and one of %s, got %s" % (where, ", ".join(SOURCES),
                                                                         _type(entry)))
        unknown = sorted(set(entry) - KEYS, key=str)
        if unknown:
            _fail("%s: unknown key %s; allowed: %s" % (where, ", ".join(map(str, unknown)), ", ".join(sorted(KEYS))))
        dest = entry.get("dest")
        if not isinstance(dest, str) or not dest.startswith("/") or "\n" in dest or "\0" in dest:
            _fail("%s.dest must be an absolute path without a newline or NUL, got %r" % (where, dest))
        where = "files[%d] (%s)" % (index, dest)
        given = [key for key in SOURCES if entry.get(key) is not None and entry.get(key) is not False]
        if len(given) != 1:
            _fail("%s must have exactly one of %s, got %s" % (where, ", ".join(SOURCES), ", ".join(given) or "none"))
        source = given[0]
        value = entry[source]
        if source == "directory" and value is not True:
            _fail("%s.directory must be true, got %r" % (where, value))
        if source == "module_utils":
            if not isinstance(value, list) or not value or not all(isinstance(name, str) for name in value):
                _fail("%s.module_utils must be a non-empty list of names such as _gpu_config, got %r" % (where, value))
        elif source != "directory" and not isinstance(value, str):
            _fail("%s.%s must be a string, got %s" % (where, source, _type(value)))
        if source == "base64" and not BASE64.match(value):
            _fail("%s.base64 must be base64 text (A-Z, a-z, 0-9, +, / and = at the end)" % where)
        if source == "link" and (not value or "\0" in value or "\n" in value):
            _fail("%s.link must be a path without a newline or NUL" % where)
        for key in ("owner", "group"):
            _check_account(entry.get(key), "%s.%s" % (where, key))
        _check_mode_value(entry.get("mode"), "%s.mode" % where)
        if source == "link" and entry.get("mode") is not None:
            _fail("%s.mode: a link has no mode of its own" % where)
        lib = entry.get("lib")
        if lib is not None and (source != "program" or not isinstance(lib, str) or not lib.startswith("/")
                                or "\n" in lib or "\0" in lib):
            _fail("%s.lib must be an absolute path, and is given only with program" % where)
        if entry.get("secret") is not None and not isinstance(entry["secret"], bool):
            _fail("%s.secret must be true or false, got %r" % (where, entry["secret"]))
        if entry.get("secret") and source not in ("template", "file", "content", "base64"):
            _fail("%s.secret applies to a file's text or bytes (template, file, content or base64)" % where)
    return files


def expand(entry, args, read):
    """One checked entry as the node's entries: a module_utils tree or a program with its lib as their directories and
    files. read(kind, name, dest) gives a file's text (None where only the paths are wanted); a template or role file
    is left to the caller (its content None here)."""
    common = {key: entry[key] for key in ("owner", "group", "mode", "secret") if entry.get(key) is not None}
    dest = entry["dest"]
    if entry.get("module_utils") is not None:
        return _tree(dest, entry["module_utils"], common, args, read)
    if entry.get("program") is not None:
        try:
            source, names = program(entry["program"])
        except ClosureError as error:
            _fail("%s: %s" % (dest, error))
        if names and entry.get("lib") is None:
            _fail("%s: program %s imports %s; lib must name the directory they go under"
                  % (dest, entry["program"], ", ".join(names)))
        # The module_utils get the task's mode for files, not the program's own.
        lib = _tree(entry["lib"], names, {key: common[key] for key in ("owner", "group") if key in common}, args,
                    read) if names else []
        return [*lib, dict(common, dest=dest, mode=entry.get("mode") or "0755", content=read(None, source, dest))]
    if entry.get("content") is not None:
        return [dict(common, dest=dest, content=entry["content"])]
    if entry.get("base64") is not None:
        return [dict(common, dest=dest, base64=entry["base64"])]
    if entry.get("directory"):
        return [dict(common, dest=dest, directory=True)]
    if entry.get("link") is not None:
        return [dict(common, dest=dest, link=entry["link"])]
    kind = "template" if entry.get("template") is not None else "file"
    return [dict(common, dest=dest, content=read(kind, entry[kind], dest))]


def _tree(dest, names, common, args, read):
    try:
        directories, files = tree(dest, names)
    except ClosureError as error:
        _fail("%s: %s" % (dest, error))
    directory = {key: common[key] for key in ("owner", "group") if key in common}
    if args.get("directory_mode") is not None:
        directory["mode"] = args["directory_mode"]
    return ([dict(directory, dest=path, directory=True) for path in directories]
            + [dict(common, dest=path, content=read(None, source, path)) for source, path in files])


def node_entries(args, read):
    """Every entry of the task's checked arguments as the node's entries, in order; an entry that two programs
    sharing a lib both declare, the same way, once."""
    node = []
    for entry in check_args(args):
        for item in expand(entry, args, _withheld(read) if entry.get("secret") else read):
            _check_text(item)
            if item.get("secret") and isinstance(item.get("content"), str):
                # The node's module logs its arguments ("Invoked with ..."), all but those it marks no_log: a secret
                # text goes as base64, which it marks so.
                text = item.pop("content")
                item["base64"] = base64.b64encode(text.encode("utf-8", "surrogateescape")).decode("ascii")
            if item not in node:
                node.append(item)
    return node


def _withheld(read):
    """read for a secret entry: a template that fails to render says so without the text of its error (which can
    quote the secret's value)."""
    def secret_read(kind, name, dest):
        try:
            return read(kind, name, dest)
        except NodeFilesError:
            _fail("%s: %s %s cannot be read or rendered (the details are withheld: the entry is secret)"
                  % (dest, kind or "file", name))
    return secret_read


def _check_text(item):
    """Text that is not UTF-8 (a template or file with other bytes, read with surrogate escapes) is refused before
    anything is written: such bytes are given as base64."""
    content = item.get("content")
    if isinstance(content, str):
        try:
            content.encode("utf-8")
        except UnicodeEncodeError:
            _fail("%s: the text is not UTF-8; give bytes that are not text as base64" % item["dest"])


def paths(files, directory_mode=None):
    """The destinations an entry list stands for, in order (module_utils trees and programs' libs expanded): what
    node_probe reads so that node_files can decide from that read."""
    args = {"files": files} if directory_mode is None else {"files": files, "directory_mode": directory_mode}
    found = []
    for item in node_entries(args, lambda kind, name, dest: None):
        if item["dest"] not in found:
            found.append(item["dest"])
    return found


def _octal(mode):
    return "%04o" % int(mode, 8)


def _data(item):
    """A node file entry's bytes: its text, or its base64 decoded."""
    if item.get("base64") is not None:
        try:
            return base64.b64decode(item["base64"], validate=True)
        except (binascii.Error, ValueError):
            _fail("%s.base64 must be base64 text" % item["dest"])
    return item["content"].encode("utf-8", "surrogateescape")


def settled(node, args, known):
    """The node_files result for node entries that the earlier read (node_probe's files, known) already finds as
    wanted, every one of them: the same owner, group, mode, kind, link target and SHA-1 of the content; None where any
    one is not, or was not read."""
    results = []
    for item in node:
        state = known.get(item["dest"])
        if not isinstance(state, dict) or state.get("exists") is not True:
            return None
        if item.get("directory"):
            kind, mode = "directory", item.get("mode") or args.get("directory_mode") or "0755"
        elif item.get("link") is not None:
            kind, mode = "link", None
        else:
            kind, mode = "file", item.get("mode") or args.get("mode") or "0644"
        if state.get("type") != kind:
            return None
        if mode is not None and state.get("mode") != _octal(mode):
            return None
        for key in ("owner", "group"):
            wanted = item.get(key) or args.get(key)
            if wanted is not None and state.get(key) != wanted:
                return None
        result = {"dest": item["dest"], "state": kind, "changed": False, "differs": []}
        if kind == "link" and state.get("target") != item["link"]:
            return None
        if kind == "file":
            checksum = hashlib.sha1(_data(item)).hexdigest()  # nosec
            if state.get("checksum") != checksum:
                return None
            if not item.get("secret"):
                result["checksum"] = checksum
        results.append(result)
    return {"changed": False, "changed_paths": [], "files": results, "read": "known"}
