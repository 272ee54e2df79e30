"""Every filter is documented once, in its own sidecar <name>.yml, and ansible-doc shows that documentation under the
filter's own name (a docstring of a plugin file with several filters would win over the sidecars)."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from simnode import COLLECTIONS, ROOT

FILTERS = ROOT / "plugins" / "filter"


def registered():
    """filter name -> the plugin file that registers it."""
    names = {}
    for path in sorted(FILTERS.glob("*.py")):
        module = importlib.import_module("ansible_collections.accelops.gpu.plugins.filter.%s" % path.stem)
        for name in module.FilterModule().filters():
            assert name not in names, "%s is registered by %s and %s" % (name, names.get(name), path.name)
            names[name] = path.name
    return names


def sidecar(name):
    return yaml.safe_load((FILTERS / ("%s.yml" % name)).read_text(encoding="utf-8"))


def test_each_filter_has_its_own_sidecar_and_no_other_docs():
    names = registered()
    assert sorted(names) == sorted(path.stem for path in FILTERS.glob("*.yml"))
    for name in names:
        doc = sidecar(name)
        assert set(doc) == {"DOCUMENTATION", "EXAMPLES", "RETURN"}, name
        assert doc["DOCUMENTATION"]["name"] == name
        assert doc["DOCUMENTATION"]["short_description"].strip()
        assert doc["DOCUMENTATION"]["version_added"] in ("0.1.0", "0.2.0"), name
    for path in FILTERS.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"(?m)^(DOCUMENTATION|EXAMPLES|RETURN)\s*=", text), path.name


def test_ansible_doc_shows_each_filter_under_its_own_name():
    names = sorted(registered())
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONFIG", None)
    # The ansible-doc of the ansible-core the tests import (the venv's), else the one on PATH: never a skipped check.
    ansible_doc = Path(sys.executable).with_name("ansible-doc")
    if not ansible_doc.exists():
        ansible_doc = shutil.which("ansible-doc")
    assert ansible_doc, "no ansible-doc beside %s or on PATH" % sys.executable
    done = subprocess.run([str(ansible_doc), "-t", "filter", "--json", *("accelops.gpu.%s" % n for n in names)],
                          env=env, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "[WARNING]" not in done.stderr, done.stderr
    shown = json.loads(done.stdout)
    assert sorted(shown) == ["accelops.gpu.%s" % n for n in names]
    for name in names:
        doc = shown["accelops.gpu.%s" % name]["doc"]
        assert doc["name"] == name
        assert doc["short_description"] == sidecar(name)["DOCUMENTATION"]["short_description"]
        assert doc["collection"] == "accelops.gpu"
