# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the collection's module_utils that a program on a node needs, worked out
from their own imports, so that what accelops.gpu.node_files ships is exactly what the programs import."""

from __future__ import annotations

import ast
import os
import re

PACKAGE = "ansible_collections.accelops.gpu.plugins.module_utils"
MODULE_UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
# The programs that run on nodes (a boot unit's applier, an exporter): each a file of its own that imports the
# collection's module_utils from a --lib directory that node_files fills with exactly what it imports.
NODE_PROGRAMS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                             "node_programs")
NAME = re.compile(r"\A_?[a-z][a-z0-9_]*\Z")
PROGRAM = re.compile(r"\A[a-z][a-z0-9-]*\Z")


class ClosureError(Exception):
    """A name that is not one of the collection's module_utils, or one that imports what a node does not have."""


def imports(source, filename="<source>"):
    """The collection's module_utils (names such as _nvml) that Python source imports, anywhere in it (at the top,
    in a function, under try), and the Ansible modules it imports (a program on a node runs without Ansible)."""
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as error:
        raise ClosureError("%s: not Python: %s" % (filename, error.msg)) from None
    found, ansible = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + "."):
                    found.add(alias.name[len(PACKAGE) + 1:].split(".")[0])
                elif alias.name == "ansible" or alias.name.startswith("ansible."):
                    ansible.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                # Relative to module_utils itself.
                if module:
                    found.add(module.split(".")[0])
                else:
                    found.update(alias.name for alias in node.names)
            elif module == PACKAGE:
                found.update(alias.name for alias in node.names)
            elif module.startswith(PACKAGE + "."):
                found.add(module[len(PACKAGE) + 1:].split(".")[0])
            elif module == "ansible" or module.startswith("ansible."):
                ansible.add(module)
    return found, ansible


def closure(names, root=MODULE_UTILS):
    """The module_utils names, and every one they import in turn, sorted: the files (NAME.py under root) a node
    program that imports names needs."""
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise ClosureError("module_utils must be a list of the collection's module_utils names, such as [_gpu_config]")
    todo, done = list(names), set()
    while todo:
        name = todo.pop()
        if name in done:
            continue
        if not isinstance(name, str) or not NAME.match(name):
            raise ClosureError("module_utils: %r is not a module name such as _gpu_config" % (name,))
        path = os.path.join(root, name + ".py")
        if not os.path.isfile(path):
            raise ClosureError("module_utils: %s is not one of the collection's module_utils" % name)
        with open(path, encoding="utf-8") as handle:
            found, ansible = imports(handle.read(), path)
        if ansible:
            raise ClosureError("module_utils: %s imports %s, which a program on a node cannot import (it runs "
                               "without Ansible)" % (name, ", ".join(sorted(ansible))))
        done.add(name)
        todo.extend(sorted(found - done))
    return sorted(done)


def tree(dest, names, root=MODULE_UTILS):
    """The directories (from dest down) and files (relative source path, destination) of the closure of names
    installed under dest as the namespace package tree that `sys.path.insert(0, dest)` makes importable."""
    directories, path = [dest], dest
    for part in PACKAGE.split("."):
        path = os.path.join(path, part)
        directories.append(path)
    return directories, [(os.path.join(root, name + ".py"), os.path.join(path, name + ".py"))
                         for name in closure(names, root)]


def program(name, root=NODE_PROGRAMS):
    """A node program's source path and the collection's module_utils it imports (directly; closure() adds theirs)."""
    if not isinstance(name, str) or not PROGRAM.match(name):
        raise ClosureError("program: %r is not a program name such as apply-gpu-settings" % (name,))
    path = os.path.join(root, name + ".py")
    if not os.path.isfile(path):
        known = sorted(entry[:-3] for entry in os.listdir(root) if entry.endswith(".py")) if os.path.isdir(root) else []
        raise ClosureError("program: %s is not one of the collection's node programs (%s)"
                           % (name, ", ".join(known) or "none"))
    with open(path, encoding="utf-8") as handle:
        found, ansible = imports(handle.read(), path)
    if ansible:
        raise ClosureError("program: %s imports %s, which a program on a node cannot import" % (name, ", ".join(
            sorted(ansible))))
    return path, sorted(found)
