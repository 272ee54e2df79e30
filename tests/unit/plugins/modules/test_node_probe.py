"""node_probe's main() on this machine's own package database, files and commands."""

from __future__ import annotations

import base64
import shutil

import pytest

from ansible_collections.accelops.gpu.plugins.modules import node_probe


def test_reads_everything_in_one_call(module_result, tmp_path):
    conf = tmp_path / "nvidia.conf"
    conf.write_text("options nvidia NVreg_PreserveVideoMemoryAllocations=1\n")
    rc, result = module_result(node_probe, {
        "package_facts": True, "files": [str(tmp_path / "missing")], "read": [str(conf)],
        "globs": [str(tmp_path / "*.conf")],
        "commands": {"echo": ["echo", "one", "two"], "missing": ["accelops-no-such-command"], "fails": ["false"]}})
    assert rc == 0, result
    assert result["changed"] is False
    if shutil.which("dpkg-query"):
        # This machine's own package database, as package_facts would set it.
        assert result["ansible_facts"]["packages"]["dpkg"][0]["version"]
        assert "accelops-no-such-package" not in result["ansible_facts"]["packages"]
        assert isinstance(result["holds"], list)
    assert result["files"][str(tmp_path / "missing")] == {"exists": False}
    assert base64.b64decode(result["files"][str(conf)]["content"]) == conf.read_bytes()
    assert result["globs"] == {str(tmp_path / "*.conf"): [str(conf)]}
    assert result["commands"]["echo"]["stdout_lines"] == ["one two"]
    assert result["commands"]["echo"]["rc"] == 0
    assert result["commands"]["missing"]["rc"] == 127
    assert result["commands"]["fails"]["rc"] == 1
    # Nothing asked for, nothing run.
    assert result["candidates"] == {} and result["services"] == {}
    rc, result = module_result(node_probe, {})
    assert rc == 0 and result["holds"] is None and "ansible_facts" not in result


@pytest.mark.parametrize("args, field", [
    ({"candidates": ["--admindir=/tmp"]}, "candidates"),
    ({"candidates": ["two words"]}, "candidates"),
    ({"services": [""]}, "services"),
    ({"commands": {"empty": []}}, "commands.empty"),
    ({"commands": {"shell": "dkms status"}}, "commands.shell"),
])
def test_bad_input_names_the_field(module_result, args, field):
    rc, result = module_result(node_probe, args)
    assert rc == 1
    assert result["msg"].startswith(field), result["msg"]
