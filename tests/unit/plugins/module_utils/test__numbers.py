"""Whole numbers in ASCII digits only, and messages that can show any value."""

from __future__ import annotations

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _numbers


@pytest.mark.parametrize("value, expected", [
    (3, 3), ("3", 3), (True, None), ("³", None), ("٣", None), ("3\n", None), (" 3", None), (-1, None),
    (2 ** 64, None), (3.0, None), ("9" * 21, None),
])
def test_whole_numbers(value, expected):
    assert _numbers.whole(value) == expected
    assert _numbers.whole(10 ** 5000) is None


def test_shown_never_fails_on_a_huge_integer():
    assert _numbers.shown(10 ** 5000) == "an integer of 16610 bits"
    assert _numbers.shown("x" * 200).endswith("...") and len(_numbers.shown("x" * 200)) == 80
