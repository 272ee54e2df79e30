"""The node's side of accelops.gpu.node_files: plan, compare, refuse, write, on a temporary tree."""

from __future__ import annotations

import base64
import grp
import os
import pwd
import stat

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _files

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


def entries(root):
    return [
        {"dest": str(root / "etc"), "directory": True, "mode": "0750"},
        {"dest": str(root / "etc" / "a.conf"), "content": "a=1\n", "mode": "0640", "owner": ME, "group": MY_GROUP},
        {"dest": str(root / "link"), "link": str(root / "etc" / "a.conf")},
    ]


def test_apply_check_real_again(tmp_path):
    changed, diffs, results = _files.apply(entries(tmp_path), check_mode=True, want_diff=True)
    assert changed == [str(tmp_path / "etc"), str(tmp_path / "etc" / "a.conf"), str(tmp_path / "link")]
    assert os.listdir(tmp_path) == []
    assert [result["differs"] for result in results] == [["created"]] * 3
    assert {"before_header": str(tmp_path / "etc" / "a.conf"), "after_header": str(tmp_path / "etc" / "a.conf"),
            "before": "", "after": "a=1\n"} in diffs
    changed, _diffs, _results = _files.apply(entries(tmp_path))
    assert len(changed) == 3
    assert (tmp_path / "etc" / "a.conf").read_text() == "a=1\n"
    assert stat.S_IMODE(os.stat(tmp_path / "etc" / "a.conf").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(tmp_path / "etc").st_mode) == 0o750
    assert os.readlink(tmp_path / "link") == str(tmp_path / "etc" / "a.conf")
    assert _files.apply(entries(tmp_path))[0] == []
    # No temporary file is left behind.
    assert sorted(os.listdir(tmp_path / "etc")) == ["a.conf"]


def test_a_directory_makes_its_parents(tmp_path):
    wanted = [{"dest": str(tmp_path / "a" / "b" / "c"), "directory": True, "mode": "0750"},
              {"dest": str(tmp_path / "a" / "b" / "file"), "content": "x", "mode": "0600"}]
    changed, _diffs, _results = _files.apply(wanted, check_mode=True)
    assert changed == [str(tmp_path / "a" / "b" / "c"), str(tmp_path / "a" / "b" / "file")]
    assert os.listdir(tmp_path) == []
    _files.apply(wanted)
    assert [stat.S_IMODE(os.stat(tmp_path.joinpath(*parts)).st_mode) for parts in ("a", "ab", "abc")] == [0o750] * 3
    assert (tmp_path / "a" / "b" / "file").read_text() == "x"
    assert _files.apply(wanted)[0] == []


def test_drift_is_put_back_and_named(tmp_path):
    _files.apply(entries(tmp_path))
    os.chmod(tmp_path / "etc" / "a.conf", 0o666)
    (tmp_path / "link").unlink()
    (tmp_path / "link").symlink_to("/elsewhere")
    changed, _diffs, results = _files.apply(entries(tmp_path))
    assert changed == [str(tmp_path / "etc" / "a.conf"), str(tmp_path / "link")]
    assert [result["differs"] for result in results] == [[], ["mode"], ["target"]]
    assert stat.S_IMODE(os.stat(tmp_path / "etc" / "a.conf").st_mode) == 0o640


def test_a_link_in_place_of_a_file_is_replaced_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.write_text("keep\n")
    (tmp_path / "f").symlink_to(outside)
    changed, _diffs, _results = _files.apply([{"dest": str(tmp_path / "f"), "content": "new\n", "mode": "0644"}])
    assert changed == [str(tmp_path / "f")]
    assert outside.read_text() == "keep\n"
    assert not (tmp_path / "f").is_symlink() and (tmp_path / "f").read_text() == "new\n"


@pytest.mark.parametrize("bad, message", [
    ({"dest": "relative", "content": "x", "mode": "0644"}, "dest must be an absolute path"),
    ({"dest": "/x\n", "content": "x", "mode": "0644"}, "dest must be an absolute path"),
    ({"dest": "/nonexistent-dir/x", "content": "x", "mode": "0644"}, "its directory /nonexistent-dir does not exist"),
    ({"dest": "{root}/x", "content": "x", "mode": "644x"}, "mode must be three or four octal digits"),
    ({"dest": "{root}/x", "content": "x", "mode": 420}, "mode must be three or four octal digits"),
    ({"dest": "{root}/x", "content": "x", "mode": "0644", "owner": "no-such-user-here"}, "owner no-such-user-here"),
    ({"dest": "{root}/x", "content": "x", "mode": "0644", "group": "no-such-group-here"}, "group no-such-group-here"),
    ({"dest": "{root}/x", "mode": "0644"}, "exactly one of content, base64, directory or link"),
    ({"dest": "{root}/x", "content": "x", "link": "/y", "mode": "0644"}, "exactly one of content, base64"),
    ({"dest": "{root}/dir", "content": "x", "mode": "0644"}, "is a directory; it is left alone"),
    ({"dest": "{root}/file", "directory": True, "mode": "0755"}, "is a file, not a directory"),
    ({"dest": "{root}/fifo", "content": "x", "mode": "0644"}, "is a fifo, socket or device"),
    ({"dest": "{root}/first", "content": "again", "mode": "0644"}, "named twice"),
    ({"dest": "{root}/first/under", "content": "x", "mode": "0644"},
     "is beneath {root}/first, which an earlier entry makes a file or link"),
    ({"dest": "{root}/first/a/b", "directory": True, "mode": "0755"}, "is beneath {root}/first"),
    ({"dest": "{root}/dangling/a/b", "directory": True, "mode": "0755"},
     "{root}/dangling is there and is not a directory"),
    ({"dest": "{root}/file/x", "directory": True, "mode": "0755"}, "{root}/file is there and is not a directory"),
    ({"dest": "{root}/long", "link": "x" * 5000}, "link target is 5000 bytes; a link holds fewer than 4096"),
])
def test_refused_before_anything_is_written(tmp_path, bad, message):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("file\n")
    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    bad = {key: value.replace("{root}", str(tmp_path)) if isinstance(value, str) else value
           for key, value in bad.items()}
    message = message.replace("{root}", str(tmp_path))
    first = {"dest": str(tmp_path / "first"), "content": "first\n", "mode": "0644"}
    with pytest.raises(_files.FilesError, match=message.replace("(", r"\(")):
        _files.apply([first, bad])
    assert not (tmp_path / "first").exists()
    assert (tmp_path / "file").read_text() == "file\n"


def test_failure_part_way_names_what_changed(tmp_path, monkeypatch):
    wanted = [{"dest": str(tmp_path / name), "content": name, "mode": "0644"} for name in ("a", "b", "c")]
    real = _files.put

    def put(item, state):
        if item["path"].endswith("/b"):
            raise OSError(28, "No space left on device", item["path"])
        return real(item, state)

    monkeypatch.setattr(_files, "put", put)
    with pytest.raises(_files.PartialError) as caught:
        _files.apply(wanted)
    assert caught.value.changed == [str(tmp_path / "a")]
    assert "%s: No space left on device" % (tmp_path / "b") in str(caught.value)
    assert not (tmp_path / "c").exists()


def test_binary_or_large_content_diff_shows_the_state(tmp_path):
    item = _files.plan([{"dest": str(tmp_path / "bin"), "content": "a\0b", "mode": "0644"}])[0]
    shown = _files.diff(item, None)
    assert shown["before"] == "path: %s\nstate: absent\n" % (tmp_path / "bin")
    assert "state: file" in shown["after"] and "mode: 0644" in shown["after"]


def test_secret_text_stays_out_of_diff_and_result(tmp_path):
    wanted = [{"dest": str(tmp_path / "web.yml"), "content": "basic_auth_users: {a: hash}\n", "mode": "0640",
               "secret": True}]
    changed, diffs, results = _files.apply(wanted, want_diff=True)
    assert changed == [str(tmp_path / "web.yml")]
    assert "hash" not in repr(diffs) and "hash" not in repr(results)
    assert "content: (secret, not shown)" in diffs[0]["after"]


def test_check_mode_counts_a_group_made_earlier_in_the_run(tmp_path):
    wanted = [{"dest": str(tmp_path / "f"), "content": "x", "mode": "0640", "group": "no-such-group-yet"}]
    changed, _diffs, results = _files.apply(wanted, check_mode=True)
    assert changed == [str(tmp_path / "f")] and results[0]["missing"] == ["group no-such-group-yet"]
    assert not (tmp_path / "f").exists()
    (tmp_path / "f").write_text("x")
    os.chmod(tmp_path / "f", 0o640)
    assert _files.apply(wanted, check_mode=True)[2][0]["differs"] == ["group"]
    with pytest.raises(_files.FilesError, match="group no-such-group-yet is not a group on this node"):
        _files.apply(wanted)


def test_base64_bytes_are_written_as_they_are_and_kept_secret(tmp_path):
    """A binary key (munge's) given as base64: written byte for byte, compared by its bytes, shown in no diff."""
    key = bytes(range(256)) * 4
    wanted = [{"dest": str(tmp_path / "munge.key"), "base64": base64.b64encode(key).decode(), "mode": "0400",
               "secret": True}]
    changed, diffs, results = _files.apply(wanted, want_diff=True)
    assert changed == [str(tmp_path / "munge.key")]
    assert (tmp_path / "munge.key").read_bytes() == key
    assert stat.S_IMODE(os.stat(tmp_path / "munge.key").st_mode) == 0o400
    assert "checksum" not in results[0] and "content: (secret, not shown)" in diffs[0]["after"]
    assert _files.apply(wanted)[0] == []
    with pytest.raises(_files.FilesError, match="base64 must be base64 text"):
        _files.apply([dict(wanted[0], base64="not base64!")])


def test_nothing_is_written_through_a_link_the_task_makes(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    wanted = [{"dest": str(tmp_path / "link"), "link": str(tmp_path / "elsewhere")},
              {"dest": str(tmp_path / "link" / "beneath"), "content": "x", "mode": "0644"}]
    for check_mode in (True, False):
        with pytest.raises(_files.FilesError, match="is beneath %s, which an earlier entry" % (tmp_path / "link")):
            _files.apply(wanted, check_mode=check_mode)
    assert sorted(os.listdir(tmp_path)) == ["elsewhere"] and os.listdir(tmp_path / "elsewhere") == []


def test_a_directory_mode_is_set_without_following_links(tmp_path, monkeypatch):
    (tmp_path / "d").mkdir(mode=0o700)
    # As in a chroot without /proc: chmod that does not follow links is unavailable.
    real = os.chmod

    def chmod(path, mode, *, dir_fd=None, follow_symlinks=True):
        if not follow_symlinks:
            raise NotImplementedError("chmod: follow_symlinks unavailable on this platform")
        return real(path, mode, dir_fd=dir_fd)

    monkeypatch.setattr(_files.os, "chmod", chmod)
    changed, _diffs, _results = _files.apply([{"dest": str(tmp_path / "d"), "directory": True, "mode": "0755"}])
    assert changed == [str(tmp_path / "d")]
    assert stat.S_IMODE(os.stat(tmp_path / "d").st_mode) == 0o755
