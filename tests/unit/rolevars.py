"""Render a role's variables and templates with Ansible's own templating, as the role sees them on a host.

The roles' variables call the collection's filters (accelops.gpu.*), which only Ansible's collection loader finds by
their FQCN; a pytest process has already imported the collection's Python directly, so the rendering runs in a child
Python. Each child takes about a second, so a test module registers all its cases while pytest collects its
parametrized tests (Batch.add returns a key) and the first test that asks renders them all in one child.
"""

from __future__ import annotations

import json
import subprocess
import sys

import yaml

from simnode import COLLECTIONS, ROOT

RENDER = r"""
import json, sys
from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template

init_plugin_loader([sys.argv[1]])
loader = DataLoader()
results = []
for case in json.load(sys.stdin):
    variables = {}
    for path in case["files"]:
        variables.update(loader.load_from_file(path, trusted_as_template=True))
    variables.update(case["variables"])
    # Variables whose values are templates themselves, as a task's vars: or an earlier set_fact give them.
    variables.update({k: trust_as_template(v) for k, v in case["task_vars"].items()})
    result = {}
    for name, text in case["templates"]:
        templar = Templar(loader=loader, variables=variables)
        try:
            result[name] = templar.template(trust_as_template(text))
        except AnsibleError as error:
            result[name] = {"error": str(error)}
            # As a role's rescue sees it.
            variables["ansible_failed_result"] = {"msg": str(error)}
    results.append(result)
print(json.dumps(results, default=str))
"""


def role_files(role, vars_name="Debian"):
    """The files a role's variables come from: defaults, vars/main.yml and one OS-specific vars file, where it has
    them."""
    base = ROOT / "roles" / role
    files = [base / "defaults" / "main.yml", base / "vars" / "main.yml", base / "vars" / ("%s.yml" % vars_name)]
    return [path for path in files if path.exists()]


class Batch:
    """Cases of (variable files, variables, templates), rendered together in one child Python on first use."""

    def __init__(self):
        self.cases, self.results = [], None

    def add(self, files, variables, templates, task_vars=None):
        """templates: (name, template text) pairs; returns the key of the case's results."""
        self.cases.append({"files": [str(path) for path in files], "variables": variables,
                           "task_vars": task_vars or {}, "templates": list(templates)})
        return len(self.cases) - 1

    def __getitem__(self, key):
        """The case's rendered values by name (text stripped); a template that failed is {"error": message}."""
        if self.results is None:
            child = subprocess.run([sys.executable, "-c", RENDER, str(COLLECTIONS)], input=json.dumps(self.cases),
                                   capture_output=True, text=True, check=True, cwd="/")
            self.results = json.loads(child.stdout.splitlines()[-1])
        return {name: value.strip() if isinstance(value, str) else value for name, value in self.results[key].items()}


def preflight_task(role, name, tasks_file="preflight.yml"):
    """The task called name in the role's preflight.yml (or another tasks file), inside blocks and rescues too."""
    tasks = yaml.safe_load((ROOT / "roles" / role / "tasks" / tasks_file).read_text())
    while tasks:
        task = tasks.pop(0)
        if task.get("name") == name:
            return task
        tasks.extend(task.get("block", []) + task.get("rescue", []))
    raise AssertionError("no task %r in %s's %s" % (name, role, tasks_file))
