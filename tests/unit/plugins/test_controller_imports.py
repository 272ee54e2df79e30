"""Controller-side plugins (filters, plugin_utils, actions) never import the node's NVML code: the collector, the
RDMA sysfs reader, the NVML session and the exporter stay on the node; the pure helpers both sides use live in
module_utils/_numbers.py. Every import is read from the source (ast), function-local ones too."""

from __future__ import annotations

import ast

import pytest

from simnode import ROOT

CONTROLLER = ("filter", "plugin_utils", "action")
NODE_ONLY = {"_gpu_facts", "_ib", "_nvml", "_exporter", "pynvml"}
COLLECTION = "ansible_collections.accelops.gpu.plugins."
# What a filter file may import from the collection: the controller's shared code, and pure module_utils helpers.
FILTER_MAY_IMPORT = ("plugin_utils.", "module_utils._numbers")


def controller_files():
    for kind in CONTROLLER:
        yield from sorted((ROOT / "plugins" / kind).glob("*.py"))


def imported(path):
    """Every module a file imports, as dotted names (for ``from X import y``: X and X.y), relative ones resolved."""
    package = "%s%s" % (COLLECTION, path.parent.name)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = "%s.%s" % (parent, base) if base else parent
            yield base
            yield from ("%s.%s" % (base, alias.name) for alias in node.names)


def test_the_controller_files_are_found():
    names = {path.name for path in controller_files()}
    assert {"slurm_gres_conf.py", "_slurm_filters.py", "_report_filters.py", "_filters.py"} <= names


@pytest.mark.parametrize("path", list(controller_files()), ids=lambda path: "%s/%s" % (path.parent.name, path.name))
def test_no_controller_file_imports_the_node_nvml_code(path):
    found = sorted(name for name in set(imported(path)) if NODE_ONLY & set(name.split(".")))
    assert not found, "%s imports node-only code: %s" % (path.relative_to(ROOT), found)


@pytest.mark.parametrize("path", sorted((ROOT / "plugins" / "filter").glob("*.py")), ids=lambda path: path.name)
def test_filter_files_reach_shared_code_through_plugin_utils(path):
    ours = {name[len(COLLECTION):] for name in imported(path) if name.startswith(COLLECTION)}
    # ``from X import y`` yields X too: only the deepest names say what was taken.
    bad = sorted(name for name in ours if not name.startswith(FILTER_MAY_IMPORT)
                 and not any(other.startswith(name + ".") for other in ours))
    assert not bad, "%s imports %s (shared code belongs in plugin_utils)" % (path.relative_to(ROOT), bad)


@pytest.mark.parametrize("source", [
    "def f():\n    from ansible_collections.accelops.gpu.plugins.module_utils import _ib\n",
    "import ansible_collections.accelops.gpu.plugins.module_utils._nvml as nvml\n",
    "from ..module_utils._gpu_facts import ranges\n",
    "try:\n    import pynvml\nexcept ImportError:\n    pass\n",
])
def test_the_check_sees_every_form_of_a_node_import(tmp_path, source):
    path = tmp_path / "plugin_utils" / "_example.py"
    path.parent.mkdir()
    path.write_text(source, encoding="utf-8")
    assert any(NODE_ONLY & set(name.split(".")) for name in imported(path))
