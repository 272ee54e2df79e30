"""node_probe's main() on this machine's own package database, files and commands."""

from __future__ import annotations

import shutil

import pytest

from ansible_collections.accelops.gpu.plugins.modules import node_probe


def test_reads_everything_in_one_call(module_result, tmp_path):
    conf = tmp_path / "nvidia.conf"
    conf.write_text("options nvidia NVreg_PreserveVideoMemoryAllocations=1\n")
    rc, result = module_result(node_probe, {
        "packages": ["dpkg", "accelops-no-such-package"], "files": [str(tmp_path / "missing")], "read": [str(conf)],
        "globs": [str(tmp_path / "*.conf")],
        "commands": {"echo": ["echo", "one", "two"], "missing": ["accelops-no-such-command"], "fails": ["false"]}})
    assert rc == 0, result
    assert result["changed"] is False
    if shutil.which("dpkg-query"):
        assert result["packages"]["dpkg"]["installed"] is True
        assert result["packages"]["dpkg"]["version"]
        assert result["packages"]["accelops-no-such-package"]["installed"] is False
    assert result["files"][str(tmp_path / "missing")] == {"exists": False}
    assert result["files"][str(conf)]["content"] == conf.read_text()
    assert result["globs"] == {str(tmp_path / "*.conf"): [str(conf)]}
    assert result["commands"]["echo"]["stdout_lines"] == ["one two"]
    assert result["commands"]["echo"]["rc"] == 0
    assert result["commands"]["missing"]["rc"] == 127
    assert result["commands"]["fails"]["rc"] == 1
    # Nothing asked for, nothing run.
    assert result["candidates"] == {} and result["services"] == {}


@pytest.mark.parametrize("args, field", [
    ({"packages": ["--admindir=/tmp"]}, "packages"),
    ({"candidates": ["two words"]}, "candidates"),
    ({"services": [""]}, "services"),
    ({"commands": {"empty": []}}, "commands.empty"),
    ({"commands": {"shell": "dkms status"}}, "commands.shell"),
])
def test_bad_input_names_the_field(module_result, args, field):
    rc, result = module_result(node_probe, args)
    assert rc == 1
    assert result["msg"].startswith(field), result["msg"]
