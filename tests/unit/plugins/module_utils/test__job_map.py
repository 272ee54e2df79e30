"""The job map (_job_map): dcgm-exporter's HPC job-mapping directory read as the exporter reads it at every scrape,
with what a scheduler or anyone else left there that does not follow the convention left out and counted."""

from __future__ import annotations

import os
import signal
import stat

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _job_map


def test_jobs_per_gpu_in_the_files_order(tmp_path):
    (tmp_path / "0").write_text("4711\n")
    (tmp_path / "3").write_text("12\n13\n\n  14  \n12\n")
    (tmp_path / "10").write_text("")
    found = _job_map.read(str(tmp_path))
    assert found.jobs == {"0": ["4711"], "3": ["12", "13", "14"]}
    assert found.of(3) == ["12", "13", "14"] and found.of("0") == ["4711"] and found.of(10) == [] and found.of(7) == []
    assert found.problems == 0


@pytest.mark.parametrize("directory", [None, "", "/nonexistent/accelops-job-map"])
def test_no_directory_is_no_job(directory):
    found = _job_map.read(directory)
    assert found.jobs == {} and found.problems == 0


def test_what_breaks_the_convention_is_left_out_and_counted(tmp_path):
    (tmp_path / "0").write_text("77\nnot a job\n" + "x" * 65 + "\n78\n")
    (tmp_path / "01").write_text("5\n")  # not an index as the gpu label has it
    (tmp_path / "gpu1").write_text("5\n")
    (tmp_path / "12345").write_text("5\n")
    (tmp_path / "2").write_bytes(b"\xff\xfe9\n")  # not ASCII
    (tmp_path / "3").write_text("9\n" * (_job_map.MAX_FILE_BYTES // 2 + 1))  # too large
    (tmp_path / "4").mkdir()
    os.symlink(tmp_path / "0", tmp_path / "5")  # a link is never followed
    os.mkfifo(tmp_path / "6")  # a FIFO never blocks the scrape
    (tmp_path / ".lock").write_text("")  # the writers' own
    (tmp_path / ".7.tmp").write_text("8\n")
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    signal.alarm(5)
    try:
        found = _job_map.read(str(tmp_path))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert found.jobs == {"0": ["77", "78"]}
    # Two lines of 0, and 01, gpu1, 12345, 2, 3, 4, 5, 6.
    assert found.problems == 2 + 8


def test_a_shared_gpu_has_at_most_so_many_jobs(tmp_path):
    (tmp_path / "0").write_text("".join("%d\n" % job for job in range(_job_map.MAX_JOBS_PER_GPU + 3)))
    found = _job_map.read(str(tmp_path))
    assert len(found.of(0)) == _job_map.MAX_JOBS_PER_GPU and found.problems == 3


def test_a_directory_that_cannot_be_read_is_a_problem_not_a_crash(tmp_path):
    (tmp_path / "file").write_text("")
    found = _job_map.read(str(tmp_path / "file"))
    assert found.jobs == {} and found.problems == 1


def test_slurm_array_and_other_schedulers_ids(tmp_path):
    (tmp_path / "1").write_text("4711_3\n9.batch\njob-7\n[1]\n")
    assert _job_map.read(str(tmp_path)).of(1) == ["4711_3", "9.batch", "job-7"]


def test_the_writers_temporary_files_do_not_count_against_the_limit(tmp_path):
    """Dot names (the prolog's temporary files, left by a prolog that was killed) sort first: they must not use up
    the entries read and hide the GPUs' files."""
    for job in range(_job_map.MAX_ENTRIES + 10):
        (tmp_path / (".0.%d.tmp" % job)).write_text("")
    (tmp_path / "0").write_text("9\n")
    found = _job_map.read(str(tmp_path))
    assert found.jobs == {"0": ["9"]} and found.problems == 0


def test_at_most_so_many_entries_are_read(tmp_path):
    for name in range(_job_map.MAX_ENTRIES + 5):
        (tmp_path / ("x%05d" % name)).write_text("")
    assert _job_map.read(str(tmp_path)).problems == _job_map.MAX_ENTRIES + 5


def test_a_file_that_vanishes_during_the_read_is_a_job_that_ended(tmp_path, monkeypatch):
    """The epilog removes a GPU's file between the listing and the read: no job there, and no problem."""
    (tmp_path / "0").write_text("9\n")
    listdir = os.listdir
    monkeypatch.setattr(_job_map.os, "listdir", lambda where: [*listdir(where), "1"])
    found = _job_map.read(str(tmp_path))
    assert found.jobs == {"0": ["9"]} and found.problems == 0


def test_a_device_or_fifo_is_never_opened(tmp_path, monkeypatch):
    """Opening a device has effects of its own (a tty becomes the exporter's controlling terminal, a tape rewinds):
    what is not a regular file is left out without an open."""
    os.mknod(tmp_path / "0", 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    os.mkfifo(tmp_path / "1")
    (tmp_path / "2").write_text("9\n")
    opened = []
    real_open = os.open

    def recording_open(path, *args, **kwargs):
        opened.append(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(_job_map.os, "open", recording_open)
    found = _job_map.read(str(tmp_path))
    assert found.jobs == {"2": ["9"]} and found.problems == 2
    assert "0" not in opened and "1" not in opened


def test_lines_end_at_a_newline_alone(tmp_path):
    """As dcgm-exporter reads the files: a CR or another separator inside a line does not make two job ids of it
    (a CR before the newline is the line's end, as a file written on Windows has it)."""
    (tmp_path / "0").write_bytes(b"3\r4\n5\x1c6\n7\r\n8\x0b\n")
    found = _job_map.read(str(tmp_path))
    assert found.of(0) == ["7", "8"] and found.problems == 2
