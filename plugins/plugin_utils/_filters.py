# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: what every filter plugin of the collection shares."""

from __future__ import annotations

import functools

from ansible.errors import AnsibleFilterError


def filter_errors(name, errors):
    """A decorator that makes a function a filter whose ``errors`` (an exception class or a tuple of them) are
    AnsibleFilterError naming the filter ``name``."""

    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except errors as error:
                raise AnsibleFilterError("%s: %s" % (name, error)) from error

        return wrapper

    return decorate
