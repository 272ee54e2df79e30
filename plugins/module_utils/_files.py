# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the node's side of accelops.gpu.node_files. The action plugin renders every
entry on the controller; here each destination is read, compared with what it should be, and only what differs is
written (a file through a temporary file in its own directory and a rename, so that a reader never sees half of
it). Nothing is changed before every entry has been checked."""

from __future__ import annotations

import base64
import binascii
import grp
import hashlib
import os
import pwd
import stat
import tempfile

# The kinds of entry the node is given (the action plugin turns templates, role files and module_utils into content);
# a file's bytes come as content (text) or as base64 (any bytes, such as a key).
KINDS = ("content", "base64", "directory", "link")
# A file's before and after text are shown in --diff up to this size (Ansible's own max_diff_size default).
DIFF_LIMIT = 104448
# A destination is compared by content up to this size; a larger file is rewritten.
READ_LIMIT = 64 * 1024 * 1024
# A link target holds fewer bytes than this (Linux PATH_MAX, its final NUL included).
PATH_MAX = 4096


class FilesError(Exception):
    """A problem with one entry, or a step that failed: the message names the path."""


def entry_kind(entry):
    """Which of content (given as text or as base64), directory and link an entry (a dict of the node's argument
    spec) is."""
    kinds = [kind for kind in KINDS if entry.get(kind) not in (None, False)]
    if len(kinds) != 1:
        raise FilesError("%s: exactly one of content, base64, directory or link must be given to the node, got %s"
                         % (entry.get("dest"), ", ".join(kinds) or "none"))
    return "content" if kinds[0] == "base64" else kinds[0]


def parse_mode(value, path):
    """A mode given as three or four octal digits in a string ('0644'): its bits."""
    if not (isinstance(value, str) and 3 <= len(value) <= 4 and set(value) <= set("01234567")):
        raise FilesError("%s: mode must be three or four octal digits as a string such as '0644', got %r"
                         % (path, value))
    return int(value, 8)


# An owner or group that does not exist yet, in check mode: an earlier task of the same run would make it.
MISSING = -2


def owner_id(name, path, check_mode=False):
    """A user name as its uid; None leaves the owner alone."""
    if name is None:
        return None
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        if check_mode:
            return MISSING
        raise FilesError("%s: owner %s is not a user on this node" % (path, name)) from None


def group_id(name, path, check_mode=False):
    """A group name as its gid; None leaves the group alone."""
    if name is None:
        return None
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        if check_mode:
            return MISSING
        raise FilesError("%s: group %s is not a group on this node" % (path, name)) from None


def plan(entries, check_mode=False):
    """Each entry checked and made ready, in order: its path, kind, wanted bytes or link target, mode bits and ids.
    Every destination must be an absolute path named once, and its parent a directory that exists or an earlier
    directory entry creates. In check mode an owner or group that does not exist yet counts as a difference (an
    earlier task of the run would make it), not an error."""
    planned, seen, directories, others = [], set(), set(), set()
    for entry in entries:
        path = entry["dest"]
        if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path or "\n" in path:
            raise FilesError("dest must be an absolute path without a newline or NUL, got %r" % (path,))
        path = os.path.normpath(path)
        if path in seen:
            raise FilesError("%s: named twice (each destination is declared once)" % path)
        kind = entry_kind(entry)
        parent = os.path.dirname(path)
        # Nothing goes beneath an earlier entry's file or link (it would fail half-way, or write through the link
        # the task has just made), nor beneath something that is there and is not a directory.
        for above in ancestors(path):
            if above in others:
                raise FilesError("%s: is beneath %s, which an earlier entry makes a file or link" % (path, above))
            if above in directories:
                break
            if os.path.lexists(above) and not os.path.isdir(above):
                raise FilesError("%s: %s is there and is not a directory (a file, or a link to a missing path)"
                                 % (path, above))
        # A directory's missing parents are made with it (as ansible.builtin.file makes them); a file's or a link's
        # directory must exist or be made by an earlier entry.
        if kind != "directory" and parent not in directories and not os.path.isdir(parent):
            raise FilesError("%s: its directory %s does not exist; declare it as a directory entry before it"
                             % (path, parent))
        item = {"path": path, "kind": kind, "uid": owner_id(entry.get("owner"), path, check_mode),
                "gid": group_id(entry.get("group"), path, check_mode), "owner": entry.get("owner"),
                "group": entry.get("group"), "mode": None, "secret": bool(entry.get("secret"))}
        if kind == "link":
            item["target"] = entry["link"]
            if not isinstance(item["target"], str) or not item["target"] or "\0" in item["target"]:
                raise FilesError("%s: link must be a non-empty path without NUL" % path)
            if len(item["target"].encode("utf-8", "surrogateescape")) >= PATH_MAX:
                raise FilesError("%s: link target is %d bytes; a link holds fewer than %d"
                                 % (path, len(item["target"].encode("utf-8", "surrogateescape")), PATH_MAX))
        else:
            item["mode"] = parse_mode(entry.get("mode"), path)
            if kind == "content" and entry.get("base64") is not None:
                item["data"] = decode_base64(entry["base64"], path)
            elif kind == "content":
                content = entry["content"]
                item["data"] = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content
        seen.add(path)
        if kind == "directory":
            directories.add(path)
            directories.update(ancestors(path))
        else:
            others.add(path)
        planned.append(item)
    return planned


def decode_base64(value, path):
    """A file's bytes given as base64 text."""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise FilesError("%s: base64 must be base64 text (A-Z, a-z, 0-9, +, / and = at the end)" % path) from None


def ancestors(path):
    """Every directory above path, nearest first."""
    found = []
    while os.path.dirname(path) != path:
        path = os.path.dirname(path)
        found.append(path)
    return found


def current(path):
    """What is at path now, not following a link: None, or a dict with its kind (file, directory, link, other),
    stat result, link target and, for a file of up to READ_LIMIT bytes, its content."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise FilesError("%s: cannot be read: %s" % (path, error.strerror)) from None
    state = {"stat": info, "target": None, "data": None}
    if stat.S_ISLNK(info.st_mode):
        state["kind"] = "link"
        state["target"] = os.readlink(path)
    elif stat.S_ISDIR(info.st_mode):
        state["kind"] = "directory"
    elif stat.S_ISREG(info.st_mode):
        state["kind"] = "file"
        if info.st_size <= READ_LIMIT:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError as error:
                raise FilesError("%s: cannot be read: %s" % (path, error.strerror)) from None
            with os.fdopen(fd, "rb") as handle:
                state["data"] = handle.read(READ_LIMIT + 1)
    else:
        state["kind"] = "other"
    return state


def differences(item, state):
    """What is not as the entry wants it: a list of words (content, kind, target, mode, owner, group); empty when
    the destination is as wanted."""
    wanted_kind = {"content": "file", "directory": "directory", "link": "link"}[item["kind"]]
    if state is None:
        return ["created"]
    if state["kind"] != wanted_kind:
        return ["kind"]
    found = []
    if item["kind"] == "content" and state["data"] != item["data"]:
        found.append("content")
    if item["kind"] == "link" and state["target"] != item["target"]:
        found.append("target")
    info = state["stat"]
    if item["mode"] is not None and stat.S_IMODE(info.st_mode) != item["mode"]:
        found.append("mode")
    if item["uid"] is not None and info.st_uid != item["uid"]:
        found.append("owner")
    if item["gid"] is not None and info.st_gid != item["gid"]:
        found.append("group")
    return found


def refusal(item, state):
    """Why an entry cannot be put in place over what is there (a directory where a file or link is wanted, a file
    where a directory is wanted, a fifo or device), or None. A link is replaced by a file and a file by a link, as
    ansible.builtin.copy and file (force) do."""
    if state is None:
        return None
    if state["kind"] == "other":
        return "%s: is a fifo, socket or device; it is left alone" % item["path"]
    if item["kind"] == "directory" and state["kind"] != "directory":
        return "%s: is a %s, not a directory; it is left alone" % (item["path"], state["kind"])
    if item["kind"] != "directory" and state["kind"] == "directory":
        return "%s: is a directory; it is left alone" % item["path"]
    return None


def text(data):
    """Bytes as text for --diff, or None when they are not UTF-8 text or too large to show."""
    if data is None or len(data) > DIFF_LIMIT or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def diff(item, state):
    """One --diff entry for a destination that changes."""
    before = {"path": item["path"], "state": "absent" if state is None else state["kind"]}
    after = {"path": item["path"], "state": {"content": "file", "directory": "directory", "link": "link"}[item["kind"]]}
    if state is not None:
        info = state["stat"]
        if not stat.S_ISLNK(info.st_mode):
            before["mode"] = "%04o" % stat.S_IMODE(info.st_mode)
        before["owner"], before["group"] = _name(pwd.getpwuid, info.st_uid), _name(grp.getgrgid, info.st_gid)
        if state["target"] is not None:
            before["src"] = state["target"]
    if item["mode"] is not None:
        after["mode"] = "%04o" % item["mode"]
    for key in ("owner", "group"):
        if item[key] is not None:
            after[key] = item[key]
    if item["kind"] == "link":
        after["src"] = item["target"]
    if item["kind"] == "content" and item["secret"]:
        after["content"] = "(secret, not shown)"
    elif item["kind"] == "content":
        old = text(state["data"]) if state is not None and state["kind"] == "file" else ""
        new = text(item["data"])
        if old is not None and new is not None and (state is None or state["data"] != item["data"]):
            return {"before_header": item["path"], "after_header": item["path"], "before": old, "after": new}
    return {"before_header": item["path"], "after_header": item["path"],
            "before": _lines(before), "after": _lines(after)}


def _name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def _lines(fields):
    return "".join("%s: %s\n" % (key, fields[key]) for key in sorted(fields))


def _own(path, item, follow=True):
    if item["uid"] is not None or item["gid"] is not None:
        os.chown(path, -1 if item["uid"] is None else item["uid"], -1 if item["gid"] is None else item["gid"],
                 follow_symlinks=follow)


def put(item, state):
    """Put one entry in place. A file is written to a temporary file beside it and renamed over the old one; a link
    is made beside it and renamed over; a directory is created or has its mode and owners set."""
    path = item["path"]
    if item["kind"] == "directory":
        if state is None:
            missing = [parent for parent in ancestors(path) if not os.path.lexists(parent)]
            for directory in [*reversed(missing), path]:
                os.mkdir(directory, item["mode"])
                os.chmod(directory, item["mode"])
                _own(directory, item, follow=False)
            return
        # Read as a directory (not a link): its mode set through a descriptor that does not follow a link put there
        # since (os.chmod without following links needs /proc, which a chroot may lack).
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.fchmod(fd, item["mode"])
        finally:
            os.close(fd)
        _own(path, item, follow=False)
        return
    if item["kind"] == "content" and state is not None and state["kind"] == "file" and state["data"] == item["data"]:
        # Only the mode or owners differ: set them in place.
        os.chmod(path, item["mode"])
        _own(path, item, follow=False)
        return
    directory, name = os.path.split(path)
    if item["kind"] == "link":
        temporary = os.path.join(directory, ".%s.%s.tmp" % (name, os.getpid()))
        os.symlink(item["target"], temporary)
        try:
            _own(temporary, item, follow=False)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
        return
    fd, temporary = tempfile.mkstemp(prefix=".%s." % name, suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(item["data"])
            handle.flush()
            os.fchmod(handle.fileno(), item["mode"])
            if item["uid"] is not None or item["gid"] is not None:
                os.fchown(handle.fileno(), -1 if item["uid"] is None else item["uid"],
                          -1 if item["gid"] is None else item["gid"])
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise


def sha1(data):
    return hashlib.sha1(data).hexdigest()  # nosec: a checksum to compare with, as ansible.builtin.stat gives


def apply(entries, check_mode=False, want_diff=False):
    """Bring every entry's destination to its wanted state, in order; returns (changed paths, diffs, results). Every
    entry is checked first (paths, parents, owners, modes, what is there now); nothing is written when any is
    refused. A step that fails part-way raises FilesError naming the path, with the paths already changed."""
    planned = plan(entries, check_mode)
    states = [current(item["path"]) for item in planned]
    for item, state in zip(planned, states):
        problem = refusal(item, state)
        if problem:
            raise FilesError(problem)
    changed, diffs, results = [], [], []
    for item, state in zip(planned, states):
        found = differences(item, state)
        result = {"dest": item["path"], "state": {"content": "file"}.get(item["kind"], item["kind"]),
                  "changed": bool(found), "differs": found}
        if item["kind"] == "content" and not item["secret"]:
            result["checksum"] = sha1(item["data"])
        missing = [key for key, number in (("owner", item["uid"]), ("group", item["gid"])) if number == MISSING]
        if missing:
            result["missing"] = ["%s %s" % (key, item[key]) for key in missing]
        results.append(result)
        if not found:
            continue
        if want_diff:
            diffs.append(diff(item, state))
        if not check_mode:
            try:
                put(item, state)
            except OSError as error:
                raise PartialError("%s: %s" % (item["path"], error.strerror or error), changed) from None
        changed.append(item["path"])
    return changed, diffs, results


class PartialError(FilesError):
    """A write that failed after others succeeded: the message names the path, and changed lists what was written."""

    def __init__(self, message, changed):
        super().__init__(message)
        self.changed = list(changed)
