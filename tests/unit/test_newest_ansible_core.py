"""tests/newest-ansible-core.sh, which says whether PyPI offers an ansible-core newer than the Makefile's
NEWEST_ANSIBLE_CORE, answered by a stand-in for pip (no network): newer says so and exits 1, the same or an unreachable
index exit 0, and the README names the pinned release as run."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from simnode import ROOT

SCRIPT = ROOT / "tests" / "newest-ansible-core.sh"
PINNED = re.search(r"^NEWEST_ANSIBLE_CORE := (\S+)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M).group(1)


def run(tmp_path, pip_output, pip_rc=0, pinned=PINNED):
    """The script with a python3 on PATH whose `-m pip index versions` prints pip_output and exits pip_rc."""
    stub = tmp_path / "python3"
    stub.write_text("#!/bin/sh\ncat <<'EOF'\n%sEOF\nexit %d\n" % (pip_output, pip_rc), encoding="utf-8")
    stub.chmod(0o755)
    env = dict(os.environ, PATH="%s:%s" % (tmp_path, os.environ["PATH"]))
    return subprocess.run([str(SCRIPT), pinned], env=env, capture_output=True, text=True, check=False)


def answer(newest):
    return "ansible-core (%s)\nAvailable versions: %s, 2.20.10\n" % (newest, newest)


@pytest.mark.parametrize("newest", ["2.21.6", "2.22.0", "3.0.0"])
def test_a_newer_release_is_said(tmp_path, newest):
    result = run(tmp_path, answer(newest), pinned="2.21.5")
    assert result.returncode == 1
    assert "PyPI offers ansible-core %s, newer than NEWEST_ANSIBLE_CORE 2.21.5" % newest in result.stdout


@pytest.mark.parametrize("newest", ["2.21.5", "2.21.4", "2.9.27"])
def test_the_pinned_release_is_the_newest(tmp_path, newest):
    result = run(tmp_path, answer(newest), pinned="2.21.5")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "newer" not in result.stdout


@pytest.mark.parametrize("output, rc", [("", 1), ("ERROR: No matching distribution found for ansible-core\n", 1),
                                        ("something else\n", 0)])
def test_offline_is_said_and_not_a_failure(tmp_path, output, rc):
    result = run(tmp_path, output, rc)
    assert result.returncode == 0
    assert "PyPI could not be asked" in result.stdout


@pytest.mark.parametrize("pinned", ["2.21", "latest", "2.21.5; rm -rf /"])
def test_a_bad_pin_is_refused(tmp_path, pinned):
    result = run(tmp_path, answer("2.21.5"), pinned=pinned)
    assert result.returncode == 2
    assert "PINNED must be a release" in result.stderr


def test_the_readme_names_the_pinned_release_as_run():
    assert "**%s**, the newest that PyPI offers" % PINNED in (ROOT / "README.md").read_text(encoding="utf-8")
