# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's side of accelops.gpu.node_files (documented in plugins/modules/node_files.py): every entry is
checked and rendered here, then one call of the module on the node compares and writes them all."""

from __future__ import annotations

import os

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import NodeFilesError
from ansible_collections.accelops.gpu.plugins.plugin_utils._node_files import node_entries, settled

# ansible.builtin.template's defaults, which the rendering here keeps so that both give the same text.
OVERRIDES_217 = {"trim_blocks": True, "lstrip_blocks": False}
OVERRIDES_219 = dict(OVERRIDES_217, newline_sequence="\n")


def _fail(message):
    raise NodeFilesError("node_files: " + message)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        try:
            node = node_entries(args, lambda kind, name, dest: self._read(kind, name, dest, task_vars))
        except NodeFilesError as error:
            result.update(failed=True, msg=str(error), changed_paths=[])
            return result
        # Decided from the earlier read where it finds every destination as wanted: no call on the node.
        answer = settled(node, args, args["known"]) if args.get("known") is not None else None
        if answer is None:
            module_args = {"files": node}
            for key in ("owner", "group", "mode", "directory_mode"):
                if args.get(key) is not None:
                    module_args[key] = args[key]
            answer = self._execute_module(module_name="accelops.gpu.node_files", module_args=module_args,
                                          task_vars=task_vars)
            # The module's arguments hold every file's text: the task's own arguments stand in for them.
            answer.pop("invocation", None)
            answer.setdefault("changed_paths", [])
            answer["read"] = "node"
        result.update(answer)
        return result

    def _find(self, kind, name, dest):
        try:
            return self._find_needle(kind, name)
        except AnsibleError as error:
            _fail("%s: %s" % (dest, to_text(error.message)))

    def _read(self, kind, name, dest, task_vars):
        """A file's text: a template rendered, a role file, or (kind None) a file of the collection by its path."""
        if kind == "template":
            return self._render(name, dest, task_vars)
        path = self._find("files", name, dest) if kind else name
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
