# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's side of accelops.gpu.node_files (documented in plugins/modules/node_files.py): every entry is
checked and rendered here, then one call of the module on the node compares and writes them all."""

from __future__ import annotations

import os
import re

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.accelops.gpu.plugins.plugin_utils._closure import ClosureError, program, tree

SOURCES = ("template", "file", "module_utils", "program", "content", "base64", "directory", "link")
KEYS = set(SOURCES) | {"dest", "owner", "group", "mode", "lib", "secret"}
TOP = {"files", "owner", "group", "mode", "directory_mode"}
MODE = re.compile(r"\A[0-7]{3,4}\Z")
BASE64 = re.compile(r"\A(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\Z")
# ansible.builtin.template's defaults, which the rendering here keeps so that both give the same text.
OVERRIDES_217 = {"trim_blocks": True, "lstrip_blocks": False}
OVERRIDES_219 = dict(OVERRIDES_217, newline_sequence="\n")
# A user or group name as useradd allows it (no newline, colon or path separator can reach the node's lookups).
ACCOUNT = re.compile(r"\A[A-Za-z0-9_][A-Za-z0-9_.-]*\$?\Z")


def _fail(message):
    raise AnsibleActionFail("node_files: " + message)


def _check_mode_value(value, where):
    if value is not None and not (isinstance(value, str) and MODE.match(value)):
        _fail("%s must be three or four octal digits as a quoted string such as '0644', got %r%s"
              % (where, value, " (a YAML number; quote it)" if isinstance(value, int) else ""))


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
    for index, entry in enumerate(files):
        where = "files[%d]" % index
        if not isinstance(entry, dict):
            _fail("%s must be a dict with dest and one of %s, got %s" % (where, ", ".join(SOURCES),
                                                                         type(entry).__name__))
        unknown = sorted(set(entry) - KEYS, key=str)
        if unknown:
            _fail("%s: unknown key %s; allowed: %s" % (where, ", ".join(map(str, unknown)), ", ".join(sorted(KEYS))))
        dest = entry.get("dest")
        if not isinstance(dest, str) or not dest.startswith("/") or "\n" in dest or "\0" in dest:
            _fail("%s.dest must be an absolute path without a newline or NUL, got %r" % (where, dest))
        where = "files[%d] (%s)" % (index, dest)
        given = [key for key in SOURCES if entry.get(key) not in (None, False)]
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
            _fail("%s.%s must be a string, got %s" % (where, source, type(value).__name__))
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
        if entry.get("secret") not in (None, True, False):
            _fail("%s.secret must be true or false, got %r" % (where, entry["secret"]))
        if entry.get("secret") and source not in ("template", "file", "content", "base64"):
            _fail("%s.secret applies to a file's text or bytes (template, file, content or base64)" % where)
    return files


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        try:
            files = check_args(args)
            node = []
            for entry in files:
                # Two programs that share a lib declare its tree twice, the same way: it is put in place once.
                node.extend(item for item in self._node_entries(entry, args, task_vars) if item not in node)
        except AnsibleActionFail as error:
            result.update(failed=True, msg=to_text(error.message), changed_paths=[])
            return result
        module_args = {"files": node}
        for key in ("owner", "group", "mode", "directory_mode"):
            if args.get(key) is not None:
                module_args[key] = args[key]
        answer = self._execute_module(module_name="accelops.gpu.node_files", module_args=module_args,
                                      task_vars=task_vars)
        # The module's arguments hold every file's text: the task's own arguments stand in for them.
        answer.pop("invocation", None)
        answer.setdefault("changed_paths", [])
        result.update(answer)
        return result

    def _node_entries(self, entry, args, task_vars):
        """One entry of the task as what the node is given: content in place of a template or a role file, and
        the directories and files of a module_utils tree."""
        common = {key: entry[key] for key in ("owner", "group", "mode", "secret") if entry.get(key) is not None}
        dest = entry["dest"]
        if entry.get("template") is not None:
            return [dict(common, dest=dest, content=self._render(entry["template"], dest, task_vars))]
        if entry.get("file") is not None:
            return [dict(common, dest=dest, content=self._read("files", entry["file"], dest))]
        if entry.get("module_utils") is not None:
            return self._tree(dest, entry["module_utils"], common, args)
        if entry.get("program") is not None:
            try:
                source, names = program(entry["program"])
            except ClosureError as error:
                _fail("%s: %s" % (dest, error))
            if names and entry.get("lib") is None:
                _fail("%s: program %s imports %s; lib must name the directory they go under"
                      % (dest, entry["program"], ", ".join(names)))
            # The module_utils get the task's mode for files, not the program's own.
            lib = self._tree(entry["lib"], names, {key: common[key] for key in ("owner", "group") if key in common},
                             args) if names else []
            return [*lib, dict(common, dest=dest, mode=entry.get("mode") or "0755",
                               content=self._read(None, source, dest))]
        if entry.get("content") is not None:
            return [dict(common, dest=dest, content=entry["content"])]
        if entry.get("base64") is not None:
            return [dict(common, dest=dest, base64=entry["base64"])]
        if entry.get("directory"):
            return [dict(common, dest=dest, directory=True)]
        return [dict(common, dest=dest, link=entry["link"])]

    def _tree(self, dest, names, common, args):
        """The directories and files of the module_utils names and what they import, under dest."""
        try:
            directories, files = tree(dest, names)
        except ClosureError as error:
            _fail("%s: %s" % (dest, error))
        directory = {key: common[key] for key in ("owner", "group") if key in common}
        if args.get("directory_mode") is not None:
            directory["mode"] = args["directory_mode"]
        return ([dict(directory, dest=path, directory=True) for path in directories]
                + [dict(common, dest=path, content=self._read(None, source, path)) for source, path in files])

    def _find(self, kind, name, dest):
        try:
            return self._find_needle(kind, name)
        except AnsibleError as error:
            _fail("%s: %s" % (dest, to_text(error.message)))

    def _read(self, kind, name, dest):
        path = self._find(kind, name, dest) if kind else name
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as error:
            _fail("%s: cannot read %s: %s" % (dest, path, error.strerror))
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            _fail("%s: %s is not UTF-8 text" % (dest, name))

    def _render(self, name, dest, task_vars):
        """The template rendered as ansible.builtin.template renders it (its search path, its template variables,
        ansible_managed), on this ansible-core."""
        source = self._find("templates", name, dest)
        try:
            return _render_219(self, name, source, dest, task_vars)
        except ImportError:
            return _render_217(self, name, source, dest, task_vars)


def _searchpath(action, source, task_vars):
    """Where a template's includes are looked up, as ansible.builtin.template looks: each of the play's search paths
    and its templates/ directory, then the playbook's and the template's own directory."""
    bases = [*task_vars.get("ansible_search_path", []), action._loader._basedir, os.path.dirname(source)]
    return [path for base in bases for path in (os.path.join(base, "templates"), base)]


def _render_219(action, name, source, dest, task_vars):
    """ansible-core 2.19 and later."""
    # pylint: disable-next=import-outside-toplevel
    from ansible._internal._templating import _template_vars

    # pylint: disable-next=import-outside-toplevel
    from ansible.template import trust_as_template

    data = trust_as_template(action._loader.get_text_file_contents(source))
    variables = dict(task_vars)
    variables.update(_template_vars.generate_ansible_template_vars(
        path=name, fullpath=source, dest_path=dest, include_ansible_managed="ansible_managed" not in variables))
    templar = action._templar.copy_with_new_env(searchpath=_searchpath(action, source, task_vars),
                                                available_variables=variables)
    try:
        rendered = templar.template(data, escape_backslashes=False, overrides=OVERRIDES_219)
    except AnsibleError as error:
        _fail("%s: template %s: %s" % (dest, name, to_text(error.message)))
    return "" if rendered is None else to_text(rendered)


def _render_217(action, name, source, dest, task_vars):
    """ansible-core 2.17 and 2.18."""
    # pylint: disable-next=import-outside-toplevel
    from ansible.template import AnsibleEnvironment, generate_ansible_template_vars

    real = action._loader.get_real_file(source)
    try:
        with open(real, "rb") as handle:
            data = to_text(handle.read(), errors="surrogate_or_strict")
    finally:
        action._loader.cleanup_tmp_file(real)
    variables = dict(task_vars)
    variables.update(generate_ansible_template_vars(name, source, dest))
    templar = action._templar.copy_with_new_env(environment_class=AnsibleEnvironment,
                                                searchpath=_searchpath(action, source, task_vars),
                                                newline_sequence="\n", available_variables=variables)
    try:
        rendered = templar.do_template(data, preserve_trailing_newlines=True, escape_backslashes=False,
                                       overrides=OVERRIDES_217)
    except AnsibleError as error:
        _fail("%s: template %s: %s" % (dest, name, to_text(error.message)))
    return "" if rendered is None else to_text(rendered)
