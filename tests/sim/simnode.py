"""Helpers for tests that run against the simulated GPU node's parts (fake NVML, fixtures, the collection)."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / "build" / "collections"
FIXTURES = ROOT / "tests" / "sim" / "nvml" / "fixtures"
FAKENVML_DIR = ROOT / "build" / "fakenvml"
FAKENVML = FAKENVML_DIR / "libnvidia-ml.so.1"


def expose_collection():
    """Make the checkout importable as ansible_collections.accelops.gpu."""
    link = COLLECTIONS / "ansible_collections" / "accelops" / "gpu"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(ROOT, target_is_directory=True)
    if str(COLLECTIONS) not in sys.path:
        sys.path.insert(0, str(COLLECTIONS))


def load_sim_script(relative, name):
    """A script of tests/sim (such as mirror/cudamirror/build.py or host/mkfabric.py) imported as a module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "sim" / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_fake_nvml():
    subprocess.run([str(ROOT / "tests" / "sim" / "nvml" / "fakenvml" / "build.sh"), str(FAKENVML_DIR)], check=True)
    return FAKENVML


def read_fixture(path):
    """The fixture as a dict of key -> value (the same key=value format the library reads)."""
    values = {}
    for raw in Path(path).read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            values[key.strip()] = value.strip()
    return values


def fixture_value(values, gpu, key, item=None):
    """A per-GPU (or per-link/MIG/process when ``item=(kind, n)``) value, resolving ``*`` defaults like the library."""
    if item is None:
        keys = ["gpu.%d.%s" % (gpu, key), "gpu.*.%s" % key]
    else:
        kind, n = item
        keys = ["gpu.%s.%s.%s.%s" % (g, kind, i, key) for g in (gpu, "*") for i in (n, "*")]
    for k in keys:
        if k in values:
            return values[k]
    return None


def ansible_env(**extra):
    env = dict(os.environ)
    env.update(ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_HOME=str(ROOT / ".ansible"), ANSIBLE_NOCOLOR="1")
    env.update(extra)
    return env


# The inventory group `all` of a playbook test whose nodes must never be reached: an ssh port nothing listens on, so
# a check that lets a node through fails there instead of touching this machine.
UNREACHABLE_NODES = """all:
  vars:
    ansible_connection: ssh
    ansible_host: 127.0.0.1
    ansible_port: 9
    ansible_ssh_timeout: 3
    ansible_python_interpreter: %s
""" % sys.executable


def plugin_docs(path):
    """DOCUMENTATION, EXAMPLES and RETURN of a plugin file such as plugins/filter/<name>.py: the first and the last
    parsed as YAML, EXAMPLES as its text."""
    import yaml

    found = {}
    for node in ast.parse(Path(path).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("DOCUMENTATION", "EXAMPLES", "RETURN"):
                found[node.targets[0].id] = node.value.value
    for key in ("DOCUMENTATION", "RETURN"):
        if key in found:
            found[key] = yaml.safe_load(found[key])
    return found


def filter_docs(name):
    """The documentation of the filter accelops.gpu.<name>, which plugins/filter/<name>.py carries."""
    return plugin_docs(ROOT / "plugins" / "filter" / ("%s.py" % name))
