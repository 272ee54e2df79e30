"""meta/runtime.yml's action groups: group/accelops.gpu.sysfs is exactly the modules that take sysfs_root, each says
so in its documentation, and module_defaults on the group reaches every one of them."""

from __future__ import annotations

import ast
import subprocess
import sys

import yaml

from simnode import ROOT, ansible_env

RUNTIME = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text(encoding="utf-8"))
MODULES = sorted(ROOT.glob("plugins/modules/*.py"))


def documentation(path):
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DOCUMENTATION":
            return yaml.safe_load(node.value.value)
    raise AssertionError("%s has no DOCUMENTATION" % path.name)


def takes(path, option):
    """The module documents the option and its argument_spec has it."""
    return option in documentation(path).get("options", {}) and ("%s=dict(" % option) in path.read_text("utf-8")


def test_the_sysfs_group_is_every_module_that_takes_sysfs_root():
    assert RUNTIME["action_groups"]["sysfs"] == sorted(p.stem for p in MODULES if takes(p, "sysfs_root"))


def test_only_documented_groups():
    assert set(RUNTIME["action_groups"]) == {"sysfs"}


def test_members_document_their_membership():
    """ansible-doc and the docs site show the group on each member's page (the shared doc fragment)."""
    for path in MODULES:
        fragments = documentation(path).get("extends_documentation_fragment", [])
        member = path.stem in RUNTIME["action_groups"]["sysfs"]
        assert ("accelops.gpu.attributes.sysfs_group" in fragments) == member, path.name


def test_module_defaults_on_the_group_reach_every_member(tmp_path):
    """A sysfs_root given once for the group is what each member is given: a directory that is not there fails each
    of them with its own message naming it (before NVML is asked)."""
    missing = tmp_path / "no-sysfs"
    play = [{
        "name": "The group", "hosts": "localhost", "connection": "local", "gather_facts": False,
        "vars": {"ansible_python_interpreter": sys.executable},
        "module_defaults": {"group/accelops.gpu.sysfs": {"sysfs_root": str(missing)}},
        "tasks": [{"name": name, "accelops.gpu.%s" % name: {}, "ignore_errors": True}
                  for name in RUNTIME["action_groups"]["sysfs"]],
    }]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play), encoding="utf-8")
    run = subprocess.run(["ansible-playbook", "-i", "localhost,", "play.yml"], cwd=tmp_path, env=ansible_env(),
                         capture_output=True, text=True, check=False, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    failed = "sysfs_root: %s is not a directory" % missing
    tasks = dict(chunk.split("]", 1) for chunk in run.stdout.split("TASK [")[1:])
    assert sorted(tasks) == RUNTIME["action_groups"]["sysfs"], run.stdout[-4000:]
    for name, out in tasks.items():
        assert "FAILED" in out and failed in out, (name, out[-2000:])
