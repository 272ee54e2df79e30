"""Every filter has a file of its own, named after it, that carries its documentation, and ansible-doc shows that
documentation under the filter's own name.

Galaxy's importer lists a collection's filters one entry per file, by the file's name: every .py of plugins/filter,
and every file ansible-doc names as a filter's documentation (galaxy_importer's ContentFinder and its
CollectionLoader._load_contents). A file of several filters gave an entry without a description, and a filter
documented in a sidecar <name>.yml beside its <name>.py gave two entries of one name."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from simnode import COLLECTIONS, ROOT, filter_docs

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


def test_each_filter_file_is_one_filter_that_it_documents():
    names = registered()
    assert names == {path.stem: path.name for path in FILTERS.glob("*.py")}
    assert sorted(path.name for path in FILTERS.glob("*.y*ml")) == [], "no sidecar documentation"
    for name in names:
        doc = filter_docs(name)
        assert set(doc) == {"DOCUMENTATION", "EXAMPLES", "RETURN"}, name
        assert doc["DOCUMENTATION"]["name"] == name
        assert doc["DOCUMENTATION"]["short_description"].strip()
        assert doc["DOCUMENTATION"]["version_added"] in ("0.1.0", "0.2.0"), name
        assert doc["EXAMPLES"].strip() and doc["RETURN"], name


def ansible_doc_json(names):
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
    return json.loads(done.stdout)


def test_ansible_doc_shows_each_filter_under_its_own_name():
    names = sorted(registered())
    shown = ansible_doc_json(names)
    assert sorted(shown) == ["accelops.gpu.%s" % n for n in names]
    for name in names:
        doc = shown["accelops.gpu.%s" % name]["doc"]
        assert doc["name"] == name
        assert doc["short_description"] == filter_docs(name)["DOCUMENTATION"]["short_description"]
        assert doc["collection"] == "accelops.gpu"


def test_galaxy_lists_each_filter_once_with_its_description():
    """The entries Galaxy's importer makes: one per file, the .py files and the files ansible-doc reads the docs from,
    each named by its file's stem and described by the documentation of the filter of that name."""
    names = sorted(registered())
    shown = ansible_doc_json(names)
    files = {path.resolve() for path in FILTERS.glob("*.py") if path.name != "__init__.py"}
    files |= {Path(entry["doc"]["filename"]).resolve() for entry in shown.values()}
    entries = Counter(path.stem for path in files)
    assert sorted(entries) == names, "entries without a filter of their name"
    assert [name for name, count in entries.items() if count > 1] == [], "entries listed twice"
    for name in entries:
        assert shown["accelops.gpu.%s" % name]["doc"]["short_description"].strip(), name
