# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: which jobs hold which GPU, read from a directory in dcgm-exporter's HPC
job-mapping convention (its --hpc-job-mapping-dir): one file per GPU, named by the GPU's index, holding the ids of
the jobs on that GPU, one per line. The slurm role's prolog and epilog write and remove them; the GPU exporter reads
them at every scrape and labels the GPU's series with hpc_job.

What a scheduler (or anyone who can write there) left in the directory is input, not trusted: names that are not a
GPU index, links, files that are not regular, lines that cannot be a label value and files past a size are left out
and counted, never a crash, a blocked read or a label nobody asked for.
"""

from __future__ import annotations

import errno
import os
import re
import stat

# A GPU index, as the exporter's gpu label has it.
GPU_NAME = re.compile(r"\A(?:0|[1-9][0-9]{0,3})\Z")
# A job id: Slurm's are digits (an array task's SLURM_JOB_ID too); other schedulers' may carry letters, . _ - and [].
JOB_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.\[\]-]{0,63}\Z")
# Enough for a shared GPU (128 shards, each a job of its own, with long ids); a larger file is not a job map.
MAX_FILE_BYTES = 16384
MAX_JOBS_PER_GPU = 128
MAX_ENTRIES = 1024


class JobMap:
    """What one read of the directory found: jobs, {gpu index (str): [job id, ...]} in the files' order, and
    problems, how many entries, files and lines were left out (0 where all was as the convention has it)."""

    __slots__ = ("jobs", "problems")

    def __init__(self, jobs=None, problems=0):
        self.jobs = jobs if jobs is not None else {}
        self.problems = problems

    def of(self, index):
        """The job ids on the GPU of this index (an int or its text); [] where none."""
        return self.jobs.get(str(index), [])


def _read_file(directory_fd, name):
    """The text of one regular file under the directory (opened by name from the directory's descriptor, without
    following a link or blocking on a FIFO), at most MAX_FILE_BYTES; None where it is none of that, "" where it is
    gone (the epilog removed it since the listing: a job that ended)."""
    try:
        # A device is never opened (a tty would become the exporter's controlling terminal); the descriptor is
        # checked again below, in case the name was replaced in between.
        if not stat.S_ISREG(os.stat(name, dir_fd=directory_fd, follow_symlinks=False).st_mode):
            return None
        descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                             dir_fd=directory_fd)
    except OSError as exc:
        return "" if exc.errno == errno.ENOENT else None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        data = os.read(descriptor, MAX_FILE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    if len(data) > MAX_FILE_BYTES:
        return None
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        return None


def read(directory):
    """The job map in directory (a path); an empty map where directory is empty or None, or does not exist (no job
    has run since the node started). A directory that cannot be read counts as one problem."""
    found = JobMap()
    if not directory:
        return found
    try:
        directory_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            found.problems += 1
        return found
    try:
        try:
            # Not the writers' temporary files (dot names, which sort first): they never use up MAX_ENTRIES.
            names = sorted(name for name in os.listdir(directory_fd) if not name.startswith("."))
        except OSError:
            found.problems += 1
            return found
        for count, name in enumerate(names):
            if count >= MAX_ENTRIES:
                found.problems += len(names) - count
                break
            text = _read_file(directory_fd, name) if GPU_NAME.match(name) else None
            if text is None:
                found.problems += 1
                continue
            jobs = found.jobs.setdefault(name, [])
            # Lines end at a newline alone (splitlines would make two ids of a line with a CR or \x1c inside).
            for job in (line.strip() for line in text.split("\n")):
                if not job:
                    continue
                if not JOB_ID.match(job) or len(jobs) >= MAX_JOBS_PER_GPU:
                    found.problems += 1
                elif job not in jobs:
                    jobs.append(job)
            if not jobs:
                del found.jobs[name]
    finally:
        os.close(directory_fd)
    return found
