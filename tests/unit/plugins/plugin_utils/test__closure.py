"""The module_utils closure that accelops.gpu.node_files ships for a node program."""

from __future__ import annotations

import pytest

from ansible_collections.accelops.gpu.plugins.plugin_utils import _closure


def test_imports_every_form():
    source = (
        "import os\n"
        "from ansible_collections.accelops.gpu.plugins.module_utils import _a, _b\n"
        "from ansible_collections.accelops.gpu.plugins.module_utils._c import thing\n"
        "import ansible_collections.accelops.gpu.plugins.module_utils._d\n"
        "from . import _e\n"
        "from ._f import other\n"
        "def late():\n"
        "    from ansible_collections.accelops.gpu.plugins.module_utils._g import x\n"
        "try:\n"
        "    import pynvml\n"
        "except ImportError:\n"
        "    pass\n"
    )
    assert _closure.imports(source) == ({"_a", "_b", "_c", "_d", "_e", "_f", "_g"}, set())
    assert _closure.imports("from ansible.module_utils.basic import AnsibleModule\nimport ansible\n")[1] == {
        "ansible.module_utils.basic", "ansible"}


def test_closure_of_the_boot_applier():
    assert _closure.closure(["_gpu_config", "_gpu_mig"]) == ["_gpu_apply", "_gpu_config", "_gpu_mig", "_numbers",
                                                             "_nvml"]


def test_tree():
    directories, files = _closure.tree("/usr/local/lib/x", ["_numbers"])
    assert directories == ["/usr/local/lib/x", "/usr/local/lib/x/ansible_collections",
                           "/usr/local/lib/x/ansible_collections/accelops",
                           "/usr/local/lib/x/ansible_collections/accelops/gpu",
                           "/usr/local/lib/x/ansible_collections/accelops/gpu/plugins",
                           "/usr/local/lib/x/ansible_collections/accelops/gpu/plugins/module_utils"]
    assert [path for _source, path in files] == [directories[-1] + "/_numbers.py"]
    assert files[0][0].endswith("plugins/module_utils/_numbers.py")


@pytest.mark.parametrize("names, message", [
    ("_nvml", "must be a list"),
    ([None], "is not a module name"),
    (["../modules/gpu_facts"], "is not a module name"),
    (["_no_such_util"], "is not one of the collection's module_utils"),
])
def test_refused(names, message):
    with pytest.raises(_closure.ClosureError, match=message):
        _closure.closure(names)


def test_a_module_util_that_imports_ansible_is_refused(tmp_path):
    (tmp_path / "_top.py").write_text("from ._helper import x\n")
    (tmp_path / "_helper.py").write_text("from ansible.module_utils.basic import AnsibleModule\n")
    with pytest.raises(_closure.ClosureError, match=r"_helper imports ansible\.module_utils\.basic"):
        _closure.closure(["_top"], root=str(tmp_path))
    (tmp_path / "_broken.py").write_text("def (:\n")
    with pytest.raises(_closure.ClosureError, match="not Python"):
        _closure.closure(["_broken"], root=str(tmp_path))


def test_program():
    path, names = _closure.program("apply-gpu-settings")
    assert path.endswith("node_programs/apply-gpu-settings.py")
    assert names == ["_gpu_apply", "_gpu_config", "_gpu_mig", "_nvml"]
    assert _closure.program("accelops-gpu-exporter")[1] == ["_exporter"]
    assert _closure.program("accelops-gpu-spark-discovery")[1] == ["_spark_gpus"]
    assert _closure.closure(["_spark_gpus"]) == ["_gpu_facts", "_health", "_numbers", "_nvml", "_pci", "_spark_gpus",
                                                 "_sysfs"]


@pytest.mark.parametrize("name, message", [
    ("../plugins/modules/gpu_facts", "is not a program name"),
    ("Apply", "is not a program name"),
    (None, "is not a program name"),
    ("no-such-program", r"not one of the collection's node programs \(accelops-gpu-exporter, "
                        r"accelops-gpu-spark-discovery, apply-gpu-settings\)"),
])
def test_program_refused(name, message):
    with pytest.raises(_closure.ClosureError, match=message):
        _closure.program(name)


def test_program_that_imports_ansible_is_refused(tmp_path):
    (tmp_path / "bad.py").write_text("import ansible.module_utils.basic\n")
    with pytest.raises(_closure.ClosureError, match=r"imports ansible\.module_utils\.basic"):
        _closure.program("bad", root=str(tmp_path))
