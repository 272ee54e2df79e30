"""Whole numbers in ASCII digits only, and messages that can show any value."""

from __future__ import annotations

import pytest
from hostile import huge, nested

from ansible_collections.accelops.gpu.plugins.module_utils import _numbers


@pytest.mark.parametrize("value, expected", [
    (3, 3), ("3", 3), (True, None), ("³", None), ("٣", None), ("3\n", None), (" 3", None), (-1, None),
    (2 ** 64, None), (3.0, None), ("9" * 21, None),
])
def test_whole_numbers(value, expected):
    assert _numbers.whole(value) == expected
    assert _numbers.whole(huge()) is None


def test_shown_never_fails_on_a_huge_integer():
    assert _numbers.shown(huge()) == "an integer of 16610 bits"
    assert _numbers.shown("x" * 200).endswith("...") and len(_numbers.shown("x" * 200)) == 80


@pytest.mark.parametrize("value, expected", [
    ("x" * 10 ** 6, "'" + "x" * 76 + "..."),
    (["x" * 10 ** 6], "a list of 1 items"),
    (list(range(10 ** 5)), "a list of 100000 items"),
    ({"a": {"b": huge()}}, "a dict of 1 items"),
    (nested(10 ** 5), "a list of 1 items"),
    (b"\0" * 10 ** 6, ("b'" + "\\x00" * 19)[:77] + "..."),
    ({"a": 1}, "{'a': 1}"),
])
def test_shown_is_bounded_and_cheap_for_any_value(value, expected):
    assert _numbers.shown(value) == expected and len(_numbers.shown(value)) <= 80


def test_shortened():
    assert _numbers.shortened("abc", 10) == "abc"
    assert _numbers.shortened("a" * 20, 10) == "aaaaaaa..."
    assert _numbers.shortened(5, 10) == "5"


@pytest.mark.parametrize("bus_id, short", [
    ("00000000:18:00.0", "0000:18:00.0"), ("00000000:DB:00.0", "0000:db:00.0"), ("0000:3a:00.0", "0000:3a:00.0"),
    ("00000001:01:00.0", "0001:01:00.0"), (None, None), ("", None),
])
def test_normalise_bus_id(bus_id, short):
    assert _numbers.normalise_bus_id(bus_id) == short


@pytest.mark.parametrize("numbers, text", [([], ""), ([3], "3"), ([5, 1, 2, 3, 3], "1-3,5"), (range(8), "0-7")])
def test_ranges(numbers, text):
    assert _numbers.ranges(numbers) == text
