"""container_runtime: Docker's daemon.json merged, containerd's config.toml given our drop-in with the site's CRI
section, CRI-O's drop-in; invalid files, links and bad values refused with nothing written."""

from __future__ import annotations

import json
import os

import pytest
import tomllib

from ansible_collections.accelops.gpu.plugins.module_utils import _runtimes
from ansible_collections.accelops.gpu.plugins.modules import container_runtime

SITE_DAEMON = {"log-driver": "journald", "data-root": "/srv/docker", "runtimes": {"crun": {"path": "/usr/bin/crun"}},
               "default-runtime": "runc"}

SITE_V2 = """# The site's containerd
version = 2
root = "/srv/containerd"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.example/pause:3.9"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true

[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/containerd/certs.d"
"""

SITE_V3 = """version = 3
imports = ["/etc/containerd/site.d/*.toml"]

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
SystemdCgroup = true

[plugins.'io.containerd.cri.v1.images']
snapshotter = "overlayfs"
"""


def run(module_result, args, check=False, diff=False):
    args = dict(args)
    if check:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    return module_result(container_runtime, args)


def snapshot(root):
    return {str(path): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


# --- Docker ---------------------------------------------------------------------------------------------------------

def test_docker_merges_and_keeps_the_site_keys(module_result, tmp_path):
    daemon = tmp_path / "daemon.json"
    daemon.write_text(json.dumps(SITE_DAEMON))
    os.chmod(daemon, 0o600)
    before = snapshot(tmp_path)
    rc, result = run(module_result, {"runtime": "docker", "path": str(daemon)}, check=True, diff=True)
    assert rc == 0 and result["changed"] and result["changed_paths"] == [str(daemon)]
    assert snapshot(tmp_path) == before
    assert '"nvidia"' in result["diff"][0]["after"]
    rc, result = run(module_result, {"runtime": "docker", "path": str(daemon)})
    assert rc == 0 and result["changed"]
    data = json.loads(daemon.read_text())
    assert data["runtimes"]["nvidia"] == {"path": "nvidia-container-runtime", "args": []}
    assert {key: value for key, value in data.items() if key != "runtimes"} == {
        key: value for key, value in SITE_DAEMON.items() if key != "runtimes"}
    assert data["runtimes"]["crun"] == SITE_DAEMON["runtimes"]["crun"]
    assert data["default-runtime"] == "runc"  # only set_default changes it
    assert oct(os.stat(daemon).st_mode & 0o777) == "0o600"
    assert list(tmp_path.iterdir()) == [daemon]  # no temporary file left
    rc, result = run(module_result, {"runtime": "docker", "path": str(daemon)})
    assert rc == 0 and not result["changed"]
    rc, result = run(module_result, {"runtime": "docker", "path": str(daemon), "set_default": True})
    assert rc == 0 and result["changed"] and json.loads(daemon.read_text())["default-runtime"] == "nvidia"


def test_docker_creates_a_missing_file(module_result, tmp_path):
    daemon = tmp_path / "docker" / "daemon.json"
    rc, result = run(module_result, {"runtime": "docker", "path": str(daemon)})
    assert rc == 0 and result["changed"]
    assert json.loads(daemon.read_text()) == {"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}}
    assert oct(os.stat(daemon).st_mode & 0o777) == "0o644"


@pytest.mark.parametrize("text, words", [
    ('{"log-driver": "journald",', "is not valid JSON"),
    ("[1, 2]", "is JSON but not an object"),
    ('{"runtimes": []}', "'runtimes' that is not an object"),
    ('{"debug": true, "debug": false}', 'the key "debug" is given twice'),
    ('{"max-concurrent-downloads": NaN}', "NaN is not a JSON value"),
    ("[" * 100000, "is not valid JSON"),
    ('{"a": ' * 900 + "1" + "}" * 900, "nested too deeply"),
])
def test_docker_invalid_json_is_left_untouched(module_result, tmp_path, text, words):
    daemon = tmp_path / "daemon.json"
    daemon.write_text(text)
    rc, result = run(module_result, {"runtime": "docker", "path": str(daemon)})
    assert rc == 1 and result["failed"]
    assert str(daemon) in result["msg"] and words in result["msg"] and "nothing was changed" in result["msg"]
    assert daemon.read_text() == text


@pytest.mark.parametrize("runtime", ["docker", "containerd", "crio"])
def test_a_link_or_directory_is_refused(module_result, tmp_path, runtime):
    real = tmp_path / "real"
    real.write_text("{}")
    link = tmp_path / "link"
    link.symlink_to(real)
    rc, result = run(module_result, {"runtime": runtime, "path": str(link), "drop_in": str(tmp_path / "d.toml")})
    assert rc == 1 and "is a symbolic link" in result["msg"] and str(link) in result["msg"]
    assert real.read_text() == "{}" and not (tmp_path / "d.toml").exists()
    rc, result = run(module_result, {"runtime": runtime, "path": str(tmp_path), "drop_in": str(tmp_path / "d.toml")})
    assert rc == 1 and "is not a regular file" in result["msg"]


@pytest.mark.parametrize("args, name", [
    ({"runtime_path": "/usr/bin/nvidia\nx"}, "runtime_path"),
    ({"cdi_spec_dirs": ["/etc/cdi", "relative"]}, "cdi_spec_dirs"),
    ({"cdi_spec_dirs": ['/etc/"cdi']}, "cdi_spec_dirs"),
    ({"cdi_spec_dirs": []}, "cdi_spec_dirs"),
    ({"drop_in": "/etc/containerd/conf.d/*.toml"}, "drop_in"),
])
def test_bad_values_are_refused(module_result, tmp_path, args, name):
    rc, result = run(module_result, dict({"runtime": "containerd", "path": str(tmp_path / "config.toml"),
                                          "drop_in": str(tmp_path / "d.toml")}, **args))
    assert rc == 1 and result["msg"].startswith(name) and "nothing was changed" in result["msg"]
    assert list(tmp_path.iterdir()) == []


# --- containerd -----------------------------------------------------------------------------------------------------

def containerd(tmp_path, text, **args):
    config = tmp_path / "config.toml"
    if text is not None:
        config.write_text(text)
    return dict({"runtime": "containerd", "path": str(config), "drop_in": str(tmp_path / "conf.d" / "99-nvidia.toml")},
                **args), config


def effective(config_path):
    """What containerd 1.6/1.7 reads: config.toml, then each import replacing a plugin's whole section."""
    data = tomllib.loads(config_path.read_text())
    for pattern in data.get("imports", []):
        for path in sorted(__import__("glob").glob(pattern)):
            other = tomllib.loads(open(path).read())
            for name, section in other.get("plugins", {}).items():
                data.setdefault("plugins", {})[name] = section
    return data


def test_containerd_v2_keeps_the_site_cri_settings(module_result, tmp_path):
    args, config = containerd(tmp_path, SITE_V2)
    before = snapshot(tmp_path)
    rc, result = run(module_result, args, check=True, diff=True)
    assert rc == 0 and result["changed"] and snapshot(tmp_path) == before
    assert len(result["diff"]) == 2
    rc, result = run(module_result, args)
    assert rc == 0 and result["changed"] and result["version"] == 2
    assert result["changed_paths"] == [args["drop_in"], str(config)]
    # config.toml: the one import line added, every other line as it was.
    first_table = '[plugins."io.containerd.grpc.v1.cri"]\n'
    assert config.read_text() == SITE_V2.replace(first_table, 'imports = ["%s"]\n%s' % (args["drop_in"], first_table))
    cri = effective(config)["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == "registry.example/pause:3.9"
    assert cri["registry"]["config_path"] == "/etc/containerd/certs.d"
    assert cri["containerd"]["snapshotter"] == "overlayfs"
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    assert cri["containerd"]["runtimes"]["nvidia"] == {
        "runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": "/usr/bin/nvidia-container-runtime"}}
    assert cri["enable_cdi"] is True and cri["cdi_spec_dirs"] == ["/etc/cdi", "/var/run/cdi"]
    assert "default_runtime_name" not in cri["containerd"]
    assert effective(config)["root"] == "/srv/containerd"
    rc, result = run(module_result, args)
    assert rc == 0 and not result["changed"]


def test_containerd_v3_and_the_site_imports(module_result, tmp_path):
    site_d = tmp_path / "site.d"
    site_d.mkdir()
    (site_d / "10-cri.toml").write_text(
        "version = 3\n[plugins.'io.containerd.cri.v1.runtime']\ndevice_ownership_from_security_context = true\n")
    args, config = containerd(tmp_path, SITE_V3.replace("/etc/containerd/site.d", str(site_d)), set_default=True)
    rc, result = run(module_result, args)
    assert rc == 0 and result["changed"] and result["version"] == 3
    data = effective(config)
    runtime = data["plugins"]["io.containerd.cri.v1.runtime"]
    # The import replaced config.toml's section for the same plugin, as containerd does; ours carries that.
    assert runtime["device_ownership_from_security_context"] is True
    assert runtime["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    assert runtime["containerd"]["default_runtime_name"] == "nvidia"
    assert runtime["enable_cdi"] is True
    assert data["plugins"]["io.containerd.cri.v1.images"]["snapshotter"] == "overlayfs"
    assert data["imports"] == [str(site_d / "*.toml"), args["drop_in"]]
    rc, result = run(module_result, args)
    assert rc == 0 and not result["changed"]


def test_containerd_drop_in_already_imported_by_a_glob(module_result, tmp_path):
    args, config = containerd(tmp_path, 'version = 2\nimports = ["%s/conf.d/*.toml"]\n' % tmp_path)
    text = config.read_text()
    rc, result = run(module_result, args)
    assert rc == 0 and result["changed_paths"] == [args["drop_in"]] and config.read_text() == text


def test_containerd_without_a_config(module_result, tmp_path):
    args, config = containerd(tmp_path, None, version=3)
    rc, result = run(module_result, args)
    assert rc == 0 and result["changed"]
    assert tomllib.loads(config.read_text()) == {"version": 3, "imports": [args["drop_in"]]}
    assert effective(config)["plugins"]["io.containerd.cri.v1.runtime"]["enable_cdi"] is True
    rc, result = run(module_result, args)
    assert rc == 0 and not result["changed"]


@pytest.mark.parametrize("text, words", [
    ("version = 2\n[plugins\n", "is not valid TOML"),
    ("[plugins.cri]\nenable_cdi = false\n", "configuration version 1"),
    ("version = 2\nimports = [\n  \"/a.toml\",\n]\n", "not on one line"),
    ('version = 2\nplugins = "cri"\n', "'plugins' is not a table"),
    ('version = 2\n[plugins]\n"io.containerd.grpc.v1.cri" = 1\n', "plugin section is not a table"),
])
def test_containerd_unusable_config_is_left_untouched(module_result, tmp_path, text, words):
    args, config = containerd(tmp_path, text)
    rc, result = run(module_result, args)
    assert rc == 1 and str(config) in result["msg"] and words in result["msg"], result
    assert config.read_text() == text and not os.path.exists(args["drop_in"])


def test_toml_writer_reads_back():
    data = {"version": 2, "plugins": {"io.containerd.grpc.v1.cri": {
        "a key": "quote \" and \\ and \n", "n": 1.5, "flag": False, "list": [1, 2], "inline": [{"x": 1}],
        "empty": {}, "containerd": {"runtimes": {"runc": {"options": {"SystemdCgroup": True}}}}}}}
    assert tomllib.loads(_runtimes.toml_dumps(data)) == data


# --- CRI-O ----------------------------------------------------------------------------------------------------------

def test_crio_drop_in(module_result, tmp_path):
    drop_in = tmp_path / "crio.conf.d" / "99-nvidia.conf"
    rc, result = run(module_result, {"runtime": "crio", "path": str(drop_in)})
    assert rc == 0 and result["changed"]
    assert tomllib.loads(drop_in.read_text()) == {"crio": {"runtime": {"cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"]}}}
    rc, result = run(module_result, {"runtime": "crio", "path": str(drop_in)})
    assert rc == 0 and not result["changed"]


@pytest.mark.parametrize("case", [
    ("containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1", 2, True),
    ("containerd github.com/containerd/containerd/v2 v2.0.4 1a43cb6a", 3, False),
])
def test_containerd_release_chooses_the_version_and_warns_without_cdi(module_result, tmp_path, monkeypatch, case):
    said, version, warned = case
    program = tmp_path / "bin" / "containerd"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\necho '%s'\n" % said)
    program.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (program.parent, os.environ["PATH"]))
    args, config = containerd(tmp_path, None)
    rc, result = run(module_result, args)
    assert rc == 0 and result["version"] == version
    assert tomllib.loads(config.read_text())["version"] == version
    assert (_runtimes.cdi_warning((1, 6) if version == 2 else (2, 0)) is not None) is warned
    assert "containerd 1.6 does not read enable_cdi" in _runtimes.cdi_warning((1, 6))
    assert _runtimes.cdi_warning((1, 7)) is None and _runtimes.cdi_warning(None) is None


def test_containerd_import_that_is_not_a_table_is_refused(module_result, tmp_path):
    site = tmp_path / "site.toml"
    site.write_text('version = 2\nplugins = ["io.containerd.grpc.v1.cri"]\n')
    args, config = containerd(tmp_path, 'version = 2\nimports = ["%s"]\n' % site)
    text = config.read_text()
    rc, result = run(module_result, args)
    assert rc == 1 and str(site) in result["msg"] and "'plugins' is not a table" in result["msg"], result
    assert config.read_text() == text and not os.path.exists(args["drop_in"])


def test_containerd_glob_star_stays_within_one_directory(module_result, tmp_path):
    """containerd's '*' (Go's filepath.Glob) does not cross a '/': a glob over the config's directory does not import
    conf.d/99-nvidia.toml, so the import is added."""
    args, config = containerd(tmp_path, 'version = 2\nimports = ["%s/*.toml"]\n' % tmp_path)
    rc, result = run(module_result, args)
    assert rc == 0 and result["changed_paths"] == [args["drop_in"], str(config)], result
    assert tomllib.loads(config.read_text())["imports"] == ["%s/*.toml" % tmp_path, args["drop_in"]]
    assert effective(config)["plugins"]["io.containerd.grpc.v1.cri"]["enable_cdi"] is True


def test_containerd_import_with_brackets_is_one_file(module_result, tmp_path):
    """An import without a '*' names one file, brackets and all (containerd globs only where there is a '*')."""
    (tmp_path / "site1.toml").write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nsandbox_image = "a"\n')
    (tmp_path / "site[1].toml").write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nsandbox_image = "b"\n')
    args, config = containerd(tmp_path, 'version = 2\nimports = ["%s/site[1].toml"]\n' % tmp_path)
    rc, result = run(module_result, args)
    assert rc == 0, result
    drop_in = tomllib.loads((tmp_path / "conf.d" / "99-nvidia.toml").read_text())
    assert drop_in["plugins"]["io.containerd.grpc.v1.cri"]["sandbox_image"] == "b"
    assert tomllib.loads(config.read_text())["imports"][-1] == args["drop_in"]


def test_a_file_over_the_limit_is_refused_not_cut(module_result, tmp_path, monkeypatch):
    """A config.toml longer than the read limit is refused: cut at the limit it may still parse, and be written back
    without its end."""
    monkeypatch.setattr(container_runtime, "READ_LIMIT", 64)
    text = "version = 2\n" + "# the site's notes\n" * 10 + "[plugins]\n"
    args, config = containerd(tmp_path, text)
    rc, result = run(module_result, args)
    assert rc == 1 and str(config) in result["msg"] and "larger than 64 bytes" in result["msg"], result
    assert config.read_text() == text and not os.path.exists(args["drop_in"])


def test_a_file_replaced_by_a_fifo_after_the_lstat_is_refused(tmp_path, monkeypatch):
    """The file is checked again once open: a FIFO swapped in after the lstat reads as empty, never as a config."""
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    regular = os.lstat(__file__)
    monkeypatch.setattr(container_runtime.os, "lstat", lambda path: regular)
    with pytest.raises(container_runtime.Refused, match="not a regular file"):
        container_runtime.read(str(fifo))


def test_containerd_nesting_too_deep_for_the_merge_is_an_error(monkeypatch):
    """A configuration the reader takes but that the merge cannot walk (Python's recursion limit) is an error naming
    the file, never a traceback."""
    def too_deep(*_args, **_kwargs):
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(_runtimes, "deep_merge", too_deep)
    options = {"runtime_path": "/usr/bin/nvidia-container-runtime", "cdi_spec_dirs": ["/etc/cdi"],
               "set_default": False, "version": 2}
    with pytest.raises(_runtimes.RuntimeConfigError, match=r"/etc/containerd/config\.toml .*nested too deeply"):
        _runtimes.containerd_plan("version = 2\n", "/etc/containerd/config.toml", {}, "/etc/containerd/d.toml", options)


@pytest.mark.parametrize("swap", ["link", "changed"])
def test_a_file_swapped_between_read_and_write_is_left_alone(module_result, tmp_path, monkeypatch, swap):
    """daemon.json replaced by a link (or rewritten by someone else) after it was read: nothing is written over it."""
    daemon, target = tmp_path / "daemon.json", tmp_path / "shadow"
    daemon.write_text('{"debug": true}\n')
    target.write_text("secret\n")
    merge = container_runtime._runtimes.docker_merge

    def merge_then_swap(*args):
        new = merge(*args)
        daemon.unlink()
        if swap == "link":
            daemon.symlink_to(target)
        else:
            daemon.write_text('{"debug": false}\n')
        return new

    monkeypatch.setattr(container_runtime._runtimes, "docker_merge", merge_then_swap)
    rc, result = run(module_result, {"runtime": "docker", "path": str(daemon)})
    assert rc == 1 and str(daemon) in result["msg"] and "nothing was changed" in result["msg"], result
    assert target.read_text() == "secret\n" and not result["changed"]
    assert daemon.is_symlink() if swap == "link" else daemon.read_text() == '{"debug": false}\n'


def test_containerd_imports_in_containerd_order(module_result, tmp_path):
    """The import read last gives the site's CRI section (containerd replaces the section whole), in the order of the
    imports list, not the files' names."""
    section = 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nsandbox_image = "%s"\n'
    for name, image in (("b.toml", "from-b"), ("a.toml", "from-a")):
        (tmp_path / name).write_text(section % image)
    args, config = containerd(tmp_path, 'version = 2\nimports = ["%s/b.toml", "%s/a.toml"]\n' % (tmp_path, tmp_path))
    rc, result = run(module_result, args)
    assert rc == 0, result
    assert effective(config)["plugins"]["io.containerd.grpc.v1.cri"]["sandbox_image"] == "from-a"


def test_containerd_import_read_after_the_drop_in_is_refused(module_result, tmp_path):
    """A site file that a glob imports after the drop-in would replace NVIDIA's runtime: refused, naming it."""
    args, config = containerd(tmp_path, 'version = 2\nimports = ["%s/conf.d/*.toml"]\n' % tmp_path)
    (tmp_path / "conf.d").mkdir()
    late = tmp_path / "conf.d" / "zz-site.toml"
    late.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nsandbox_image = "site"\n')
    text = config.read_text()
    rc, result = run(module_result, args)
    assert rc == 1 and str(late) in result["msg"] and "imported after" in result["msg"], result
    assert config.read_text() == text and not os.path.exists(args["drop_in"])
