# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: what every filter plugin of the collection shares."""

from __future__ import annotations

import functools
import importlib

from ansible.errors import AnsibleFilterError

_PLUGIN_UTILS = "ansible_collections.accelops.gpu.plugins.plugin_utils."


class LazyModule:
    """A plugin_utils module imported at the first use of one of its names.

    Ansible's Jinja plugin loader imports every filter file of the collection, in every worker process, at the first
    lookup of any of its filters: a task that only asks ``file_matches`` would otherwise import the fleet report, Slurm
    and compatibility code too (about a tenth of the controller's time on a converged re-run of site.yml)."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = _PLUGIN_UTILS + name

    def __getattr__(self, attribute):
        # Never for its own slot (unset while copy or pickle make one without __init__) or a special name.
        if attribute == "_name" or attribute.startswith("__"):
            raise AttributeError(attribute)
        return getattr(importlib.import_module(self._name), attribute)


def filter_errors(name, module, error):
    """A decorator that makes a function a filter whose errors of the class named ``error`` of the LazyModule
    ``module`` (looked up only when something was raised) are AnsibleFilterError naming the filter ``name``."""

    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except Exception as raised:
                if isinstance(raised, getattr(module, error)):
                    raise AnsibleFilterError("%s: %s" % (name, raised)) from raised
                raise

        return wrapper

    return decorate
