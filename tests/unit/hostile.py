"""Hostile values for the tests of inputs: lists nested deeper than Python's recursion limit, and integers of more
digits than Python prints, built so that a linter's inference does not try to print them; and a limit on what may
block (a fifo, a stream)."""

from __future__ import annotations

import contextlib
import signal


def nested(depth):
    """A list holding a list ... ``depth`` times."""
    value = []
    for _unused in range(depth):
        value = [value]
    return value


def huge(digits=5000):
    """10 ** digits (Python refuses to print ints of over 4,300 digits)."""
    value = 1
    for _unused in range(digits):
        value *= 10
    return value


@contextlib.contextmanager
def alarm(seconds):
    """Fail, not hang, when what is inside blocks longer than seconds."""
    def expired(_signum, _frame):
        raise TimeoutError("blocked for %d s" % seconds)

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
