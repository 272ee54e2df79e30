# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: reading sysfs attributes that can neither block nor crash a module."""

from __future__ import annotations

import os
import stat

# sysfs attributes are at most a page long.
MAX_ATTRIBUTE_BYTES = 4096


def read_attribute(path):
    """A sysfs attribute's text, stripped; None when it is missing, unreadable or not a regular file.

    Opened without blocking (a FIFO or device node where an attribute should be is refused, not waited on), read up
    to one page, bytes that are not UTF-8 replaced.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError, TypeError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_ATTRIBUTE_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace").strip()


def check_sysfs_root(path):
    """A message when ``sysfs_root`` cannot be a sysfs tree (not an absolute, existing directory); else None."""
    if not isinstance(path, str) or not path or "\x00" in path or not os.path.isabs(path):
        return "sysfs_root: give an absolute directory path, got %r" % (path,)
    if not os.path.isdir(path):
        return "sysfs_root: %s is not a directory" % path
    return None
