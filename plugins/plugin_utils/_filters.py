# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: what every filter plugin of the collection shares."""

from __future__ import annotations

import functools
import sys

from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shortened

# The longest message of a filter error: a message names the field and shows a shortened value, never the input whole.
MESSAGE_LIMIT = 1000
# What Python raises on a field of another type or a value it cannot take (NaN as a count, a string as a number).
INPUT_ERRORS = (AttributeError, KeyError, IndexError, TypeError, ValueError, OverflowError)


def input_problem(raised):
    """What Python refused in the input, for an exception that input too large or too deep causes in any code that
    reads it (a RecursionError; the ValueError of an int of more digits than Python converts); else None."""
    if isinstance(raised, RecursionError):
        return "the input is nested too deeply to read"
    if isinstance(raised, ValueError) and "integer string conversion" in str(raised):
        return "the input holds a number of more digits than Python converts (%d)" % sys.get_int_max_str_digits()
    return None


def malformed_input(name, expected):
    """A decorator for a filter that reads a structure (facts, a registered result) field by field: a field missing
    or of another type or value (INPUT_ERRORS) or input Python refuses (input_problem) is
    AnsibleFilterError naming the filter ``name`` and saying the input is not ``expected``."""

    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except Exception as raised:
                problem = input_problem(raised)
                if problem is None and isinstance(raised, INPUT_ERRORS):
                    problem = "%s: %s" % (type(raised).__name__, shortened(raised, 300))
                if problem is None:
                    raise
                raise AnsibleFilterError("%s: the input is not %s (%s)" % (name, expected, problem)) from None

        return wrapper

    return decorate


def filter_errors(name, error):
    """A decorator that makes a function a filter whose errors of the class ``error`` (one of _errors.py), what
    input too large or too deep causes, and what a field of another type or a value out of range makes Python raise
    (AttributeError, KeyError, IndexError, TypeError, ValueError, OverflowError) are AnsibleFilterError naming the
    filter ``name``, with a message of at most MESSAGE_LIMIT characters."""

    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except Exception as raised:
                if isinstance(raised, error):
                    said = str(raised)
                    if len(said) > MESSAGE_LIMIT:  # Ansible would append the whole message of the cause
                        raise AnsibleFilterError("%s: %s" % (name, shortened(said, MESSAGE_LIMIT))) from None
                    raise AnsibleFilterError("%s: %s" % (name, said)) from raised
                problem = input_problem(raised)
                if problem is None and isinstance(raised, INPUT_ERRORS):
                    problem = ("the input is not what the filter reads (%s: %s)"
                               % (type(raised).__name__, shortened(raised, 300)))
                if problem:
                    raise AnsibleFilterError("%s: %s" % (name, problem)) from None
                raise

        return wrapper

    return decorate
