"""The node_files action's checks of its arguments: one clear error naming the field, before anything is read."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.accelops.gpu.plugins.action.node_files import check_args

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
    ({"files": [GOOD], "force": True}, "unknown option force; allowed: directory_mode, files, group, mode, owner"),
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
])
def test_refused(args, message):
    with pytest.raises(AnsibleActionFail) as caught:
        check_args(args)
    assert message in str(caught.value)
    assert str(caught.value).startswith("node_files: ")
