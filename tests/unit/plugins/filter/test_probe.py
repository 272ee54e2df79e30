"""file_matches: node_probe's read of a path against what a file, copy or template task would leave."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.filter.probe import FilterModule, file_matches

CONF = {"exists": True, "type": "file", "mode": "0644", "owner": "root", "group": "root", "size": 40,
        "checksum": "faf5ce579f967aa59c9473270c4f9d7432b1d403"}


@pytest.mark.parametrize("state, args, matches", [
    (CONF, {}, True),
    (CONF, {"owner": "root", "group": "root", "mode": "0644", "checksum": CONF["checksum"]}, True),
    (CONF, {"checksum": "0" * 40}, False),
    (CONF, {"mode": "0600"}, False),
    (CONF, {"owner": "nvidia"}, False),
    (CONF, {"kind": "directory"}, False),
    ({"exists": True, "type": "directory", "mode": "0755", "owner": "root", "group": "root"},
     {"kind": "directory", "mode": "0755"}, True),
    ({"exists": False}, {}, False),
    # Could not be read (lstat failed): never taken as in place.
    ({"exists": None, "error": "Permission denied"}, {}, False),
])
def test_file_matches(state, args, matches):
    assert file_matches(state, **args) is matches


@pytest.mark.parametrize("state, args, message", [
    (None, {}, "the input must be one path's state"),
    ("/etc/app.conf", {}, "the input must be one path's state"),
    (CONF, {"kind": "fifo"}, "kind must be one of file, directory, link"),
    (CONF, {"mode": 420}, "mode must be four octal digits"),
    (CONF, {"mode": "644"}, "mode must be four octal digits"),
])
def test_bad_input(state, args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        file_matches(state, **args)


def test_registered():
    assert FilterModule().filters() == {"file_matches": file_matches}
