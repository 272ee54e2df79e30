# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: whole numbers read from users and from sysfs, ASCII digits only, and the
other pure helpers that both the node and the controller use (bus ids, CPU lists, natural order); no NVML here."""

from __future__ import annotations

import re

# Enough for any index, clock, MTU or counter; a longer run of digits is a mistake or an attack, not a number.
MAX_DIGITS = 20
DECIMAL = re.compile(r"\A-?[0-9]{1,%d}\Z" % MAX_DIGITS)
HEXADECIMAL = re.compile(r"\A0[xX][0-9a-fA-F]{1,16}\Z")


def decimal(text, negative=False):
    """The int that ``text`` spells in ASCII decimal digits (str.isdigit() also takes '³' and '٣'); else None."""
    if not isinstance(text, str) or not DECIMAL.match(text) or (text.startswith("-") and not negative):
        return None
    return int(text, 10)


def whole(value, negative=False):
    """An int given as an int (not a bool) or as ASCII decimal digits; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if (negative or value >= 0) and value.bit_length() <= 64 else None
    return decimal(value, negative) if isinstance(value, str) else None


def decimal_or_hex(text):
    """``0x..`` hexadecimal or ASCII decimal, as sysfs writes numbers; else None."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if HEXADECIMAL.match(text):
        return int(text, 16)
    return decimal(text)


def shortened(text, limit=200):
    """``text`` cut to at most ``limit`` characters, the cut marked with ...: a message never echoes unbounded input."""
    text = str(text)
    return text if len(text) <= limit else text[:max(limit - 3, 0)] + "..."


def shown(value, limit=80):
    """``repr(value)`` for a message, at most ``limit`` characters, also for an int too long for Python to print and
    for a container too deep or too large to print whole."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return "an integer of %d bits" % value.bit_length()
    if isinstance(value, str):
        value = value[:limit]  # repr of a megabyte of text only to cut it
    elif isinstance(value, (bytes, bytearray)):
        value = bytes(value[:limit])
    elif isinstance(value, (dict, list, tuple, set, frozenset)) and _large(value, limit):
        return "a %s of %d items" % (type(value).__name__, len(value))
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # nested too deep; an int inside too long to print
        return "a %s of %d items" % (type(value).__name__, len(value)) if hasattr(value, "__len__") \
            else "a %s" % type(value).__name__
    return shortened(text, limit)


def _large(value, limit, depth=0):
    """Whether repr() of a container could be costly: many items, deep nesting or long texts inside."""
    if depth > 8 or len(value) > limit:
        return True
    items = value.items() if isinstance(value, dict) else ((None, item) for item in value)
    for key, item in items:
        for part in (key, item):
            if isinstance(part, (str, bytes)) and len(part) > limit:
                return True
            if isinstance(part, int) and not isinstance(part, bool) and part.bit_length() > 64:
                return True
            if isinstance(part, (dict, list, tuple, set, frozenset)) and _large(part, limit, depth + 1):
                return True
    return False


def normalise_bus_id(bus_id):
    """NVML writes ``00000000:18:00.0``, sysfs ``0000:18:00.0``: compare on the short, lower-case form."""
    if not bus_id:
        return None
    bus_id = bus_id.lower()
    domain, sep, rest = bus_id.partition(":")
    return "%04x%s%s" % (int(domain, 16), sep, rest) if rest else bus_id


def ranges(numbers):
    """Numbers as a Linux cpulist: ascending, runs as first-last, comma separated ("0-55,112-167"; "" for none)."""
    runs = []
    for number in sorted(set(numbers)):
        if runs and runs[-1][1] == number - 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ",".join(str(first) if first == last else "%d-%d" % (first, last) for first, last in runs)


def natural(name):
    """Sort key that puts mlx5_2 before mlx5_10 (and node2 before node10)."""
    return [(0, int(part), "") if part.isascii() and part.isdigit() else (1, 0, part)
            for part in re.split(r"([0-9]{1,18})", name)]
