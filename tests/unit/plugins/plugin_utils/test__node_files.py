"""The node_files action's checks of its arguments (one clear error naming the field, before anything is read), the
paths an entry list stands for, and the decision from an earlier read."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import NodeFilesError
from ansible_collections.accelops.gpu.plugins.plugin_utils._node_files import check_args, node_entries, paths, settled

GOOD = {"dest": "/etc/x", "content": "x\n"}


def test_good():
    files = [GOOD, {"dest": "/d", "directory": True, "mode": "0700", "owner": "root", "group": "root"},
             {"dest": "/l", "link": "/etc/x"}, {"dest": "/lib", "module_utils": ["_nvml"]},
             {"dest": "/t", "template": "a.j2"}, {"dest": "/f", "file": "a.py", "mode": "755"},
             {"dest": "/k", "base64": "AP8=", "secret": True, "mode": "0400"}]
    assert check_args({"files": files, "owner": "root", "mode": "0644", "directory_mode": "0755"}) == files


@pytest.mark.parametrize("args, message", [
    ({}, "files must be a non-empty list"),
    ({"files": []}, "files must be a non-empty list"),
    ({"files": "x"}, "files must be a non-empty list"),
    ({"files": [GOOD], "force": True}, "unknown option force; allowed: directory_mode, files, group, known, mode, "
                                       "owner"),
    ({"files": [GOOD], "known": ["x"]}, "known must be node_probe's files"),
    ({"files": [GOOD], "mode": 644}, "mode must be three or four octal digits as a quoted string such as '0644', "
                                     "got 644 (a YAML number; quote it)"),
    ({"files": [GOOD], "directory_mode": "rwx"}, "directory_mode must be three or four octal digits"),
    ({"files": [GOOD], "owner": "root\nx"}, "owner must be a user or group name"),
    ({"files": ["x"]}, "files[0] must be a dict"),
    ({"files": [{"dest": "x", "content": "y"}]}, "files[0].dest must be an absolute path"),
    ({"files": [{"dest": "/x\n", "content": "y"}]}, "files[0].dest must be an absolute path"),
    ({"files": [{"dest": "/x"}]}, "files[0] (/x) must have exactly one of template, file, module_utils, program, "
                                  "content, base64, directory, link, got none"),
    ({"files": [{"dest": "/x", "base64": "a2V5\n"}]}, "files[0] (/x).base64 must be base64 text"),
    ({"files": [{"dest": "/x", "base64": "a2V"}]}, "files[0] (/x).base64 must be base64 text"),
    ({"files": [{"dest": "/x", "content": "a", "template": "b"}]}, "got template, content"),
    ({"files": [{"dest": "/x", "content": 3}]}, "files[0] (/x).content must be a string, got int"),
    ({"files": [{"dest": "/x", "directory": "yes"}]}, "files[0] (/x).directory must be true"),
    ({"files": [{"dest": "/x", "module_utils": "_nvml"}]}, "module_utils must be a non-empty list"),
    ({"files": [{"dest": "/x", "link": "/y\n"}]}, "link must be a path without a newline"),
    ({"files": [{"dest": "/x", "link": "/y", "mode": "0644"}]}, "a link has no mode of its own"),
    ({"files": [{"dest": "/x", "content": "y", "group": "a:b"}]}, "files[0] (/x).group must be a user or group"),
    ({"files": [GOOD, {"dest": "/x", "content": "y", "mode": "0o644"}]}, "files[1] (/x).mode must be three or four"),
    ({"files": [{"dest": "/x", "content": "y", "checksum": "abc"}]}, "files[0]: unknown key checksum"),
    ({"files": [{"dest": "/x", "content": "y", "lib": "/l"}]}, "lib must be an absolute path, and is given only with"),
    ({"files": [{"dest": "/x", "program": "p", "lib": "l"}]}, "lib must be an absolute path"),
    ({"files": [{"dest": "/x", "directory": True, "secret": True}]}, "secret applies to a file's text"),
    ({"files": [{"dest": "/x", "content": "y", "secret": "yes"}]}, "secret must be true or false"),
    ({"files": [{"dest": "/x", "content": "y", "secret": 1}]}, "secret must be true or false"),
    ({"files": [{"dest": "/x", "content": 0}]}, "files[0] (/x).content must be a string, got int"),
])
def test_refused(args, message):
    with pytest.raises(NodeFilesError) as caught:
        check_args(args)
    assert message in str(caught.value)
    assert str(caught.value).startswith("node_files: ")


def test_paths_expand_trees_and_programs():
    files = [{"dest": "/etc/a", "directory": True}, {"dest": "/etc/a/b.conf", "template": "b.j2"},
             {"dest": "/usr/local/libexec/x/apply", "program": "apply-gpu-settings", "lib": "/usr/local/lib/x"}]
    utils = "/usr/local/lib/x/ansible_collections/accelops/gpu/plugins/module_utils"
    assert paths(files) == ["/etc/a", "/etc/a/b.conf", "/usr/local/lib/x", "/usr/local/lib/x/ansible_collections",
                            "/usr/local/lib/x/ansible_collections/accelops",
                            "/usr/local/lib/x/ansible_collections/accelops/gpu",
                            "/usr/local/lib/x/ansible_collections/accelops/gpu/plugins", utils,
                            *("%s/%s.py" % (utils, name) for name in ("_gpu_apply", "_gpu_config", "_gpu_mig",
                                                                      "_numbers", "_nvml")),
                            "/usr/local/libexec/x/apply"]
    with pytest.raises(NodeFilesError, match="files\\[0\\] must be a dict"):
        paths(["/etc/a"])


SHA1_X = "11f6ad8ec52a2984abaafd7c3b516503785c2072"  # sha1 of "x"
NODE = [{"dest": "/d", "directory": True}, {"dest": "/d/f", "content": "x", "mode": "0600"},
        {"dest": "/d/l", "link": "/d/f"}]
KNOWN = {"/d": {"exists": True, "type": "directory", "mode": "0755", "owner": "root", "group": "root"},
         "/d/f": {"exists": True, "type": "file", "mode": "0600", "owner": "root", "group": "root",
                  "checksum": SHA1_X},
         "/d/l": {"exists": True, "type": "link", "mode": "0777", "owner": "root", "group": "root", "target": "/d/f"}}


def test_settled_from_the_read():
    answer = settled(NODE, {"owner": "root", "group": "root"}, KNOWN)
    assert answer["changed"] is False and answer["changed_paths"] == [] and answer["read"] == "known"
    assert [item["dest"] for item in answer["files"]] == ["/d", "/d/f", "/d/l"]
    assert answer["files"][1]["checksum"] == SHA1_X


@pytest.mark.parametrize("path, change", [
    ("/d", {"mode": "0750"}),
    ("/d", {"type": "file"}),
    ("/d/f", {"checksum": "0" * 40}),
    ("/d/f", {"checksum": None, "error": "too large"}),
    ("/d/f", {"owner": "nobody"}),
    ("/d/f", {"exists": False}),
    ("/d/l", {"target": "/elsewhere"}),
])
def test_not_settled_when_anything_differs(path, change):
    known = {key: dict(value) for key, value in KNOWN.items()}
    known[path].update(change)
    assert settled(NODE, {"owner": "root", "group": "root"}, known) is None


def test_not_settled_when_a_path_was_not_read():
    known = dict(KNOWN)
    del known["/d/l"]
    assert settled(NODE, {}, known) is None
    assert settled(NODE, {"directory_mode": "0700"}, KNOWN) is None


def test_settled_compares_base64_as_bytes():
    node = [{"dest": "/k", "base64": "AP8=", "mode": "0400", "secret": True}]
    known = {"/k": {"exists": True, "type": "file", "mode": "0400", "owner": "munge", "group": "munge",
                    "checksum": "aa3e5dcdd77b153f2e59bd0d8794fde33cb4e486"}}  # sha1 of b"\x00\xff"
    answer = settled(node, {"owner": "munge", "group": "munge"}, known)
    assert answer["files"] == [{"dest": "/k", "state": "file", "changed": False, "differs": []}]
    known["/k"]["checksum"] = SHA1_X
    assert settled(node, {}, known) is None


def test_text_that_is_not_utf8_is_refused():
    # A template or file with other bytes arrives with surrogate escapes: refused before any call on the node.
    with pytest.raises(NodeFilesError, match=r"^node_files: /x: the text is not UTF-8; give bytes that are not text as "
                                             r"base64$"):
        node_entries({"files": [{"dest": "/x", "template": "t.j2"}]}, lambda kind, name, dest: "\udcff\udcfebin")


def test_a_secret_entry_withholds_its_rendering_error():
    def read(kind, name, dest):
        raise NodeFilesError("node_files: %s: template %s: time data 'TOPSECRET' does not match" % (dest, name))

    with pytest.raises(NodeFilesError) as caught:
        node_entries({"files": [{"dest": "/k", "template": "k.j2", "secret": True}]}, read)
    assert "TOPSECRET" not in str(caught.value)
    assert str(caught.value) == ("node_files: /k: template k.j2 cannot be read or rendered (the details are withheld: "
                                 "the entry is secret)")
    with pytest.raises(NodeFilesError, match="TOPSECRET"):
        node_entries({"files": [{"dest": "/k", "template": "k.j2"}]}, read)


def test_a_boolean_mode_is_not_called_a_number():
    with pytest.raises(NodeFilesError) as caught:
        check_args({"files": [{"dest": "/x", "content": "y", "mode": True}]})
    assert str(caught.value).endswith("such as '0644', got True")


SECRET_TEXT = "StoragePass=TOPSECRET-16chars\n"


def test_a_secret_text_goes_to_the_node_only_as_base64():
    """The node's module writes its arguments into the node's log ("Invoked with ..."), all but those marked no_log:
    a secret file's text goes as base64, which is one of them, never as content."""
    node = node_entries({"files": [{"dest": "/k", "template": "k.j2", "secret": True, "mode": "0600"},
                                   {"dest": "/p", "content": "plain\n"}]}, lambda kind, name, dest: SECRET_TEXT)
    assert node == [{"dest": "/k", "mode": "0600", "secret": True,
                     "base64": base64.b64encode(SECRET_TEXT.encode()).decode()},
                    {"dest": "/p", "content": "plain\n"}]
    assert settled(node, {}, {"/k": {"exists": True, "type": "file", "mode": "0600",
                                     "checksum": hashlib.sha1(SECRET_TEXT.encode()).hexdigest()},  # nosec
                              "/p": {"exists": True, "type": "file", "mode": "0644",
                                     "checksum": hashlib.sha1(b"plain\n").hexdigest()}}) is not None  # nosec


def test_the_node_never_logs_a_secret(tmp_path, module_result, monkeypatch):
    from ansible.module_utils.basic import AnsibleModule

    from ansible_collections.accelops.gpu.plugins.modules import node_files

    logged = []
    monkeypatch.setattr(AnsibleModule, "log", lambda self, msg, log_args=None: logged.append(msg))
    dest = str(tmp_path / "slurmdbd.conf")
    node = node_entries({"files": [{"dest": dest, "template": "slurmdbd.conf.j2", "secret": True, "mode": "0600"}]},
                        lambda kind, name, dest: SECRET_TEXT)
    rc, result = module_result(node_files, {"files": node, "_ansible_diff": True})
    assert rc == 0 and result["changed"] is True, result
    assert logged and not any("TOPSECRET" in message or base64.b64encode(SECRET_TEXT.encode()).decode() in message
                              for message in logged), logged
    assert "TOPSECRET" not in json.dumps(result)
    with open(dest, encoding="utf-8") as handle:
        assert handle.read() == SECRET_TEXT
