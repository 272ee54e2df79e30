# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The _config_value_problems filter, internal to the roles (no compatibility promise),
documented in _config_value_problems.yml."""

from __future__ import annotations

import math
import re

from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shown

# Every pattern is anchored with \A and \Z: "$" would also match before a trailing newline.
# Never a leading - (modprobe and systemctl would read an option: ["-r", "mlx5_ib"] unloads) or . (.., hidden).
MODULE_NAME = re.compile(r"\A[A-Za-z0-9_][A-Za-z0-9_-]{0,63}\Z")
PARAMETER_NAME = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]{0,127}\Z")
# A bare value (NVreg_RegistryDwords=RMUseSwI2c=0x01;RMI2cSpeed=100) or a double-quoted one with spaces.
PARAMETER_VALUE = re.compile(r"\A(?:[A-Za-z0-9_.,:;/+=@%-]{1,1024}|\"[ !#-\[\]-~]{0,1024}\")\Z")
PIN_VALUE = re.compile(r"\A[A-Za-z0-9._+~-](?:[A-Za-z0-9 ._+~-]{0,126}[A-Za-z0-9._+~-])?\Z")
LIMITS_DOMAIN = re.compile(r"\A(?:\*|[@%]?[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?)\Z")
NCCL_NAME = re.compile(r"\ANCCL_[A-Z0-9_]{1,64}\Z")
NCCL_VALUE = re.compile(r"\A[!-~]{1,1024}\Z")
UNIT_NAME = re.compile(r"\A(?!.*\.\.)[A-Za-z0-9:_@\\][A-Za-z0-9:_.@\\-]{0,254}\Z")
# A package index or wheel location, given to pip on its command line: a URL or an absolute path, no white space
# (which would start another pip option, such as --trusted-host).
PIP_LOCATION = re.compile(r"\A(?:https?://|file://|/)[!-~]{1,2048}\Z")
# An address to listen on, for a service's command line: HOST:PORT, [IPv6]:PORT or :PORT (every address).
LISTEN = re.compile(r"\A(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])?:([0-9]{1,5})\Z")
HOST_NAME = re.compile(r"\A[A-Za-z0-9](?:[A-Za-z0-9._-]{0,251}[A-Za-z0-9])?\Z")
# An absolute path without "." or ".." parts, for a systemd unit's command line and ReadWritePaths=.
ABSOLUTE_PATH = re.compile(r"\A(?:/(?!\.\.?(?:/|\Z))[A-Za-z0-9._+-]{1,255}){1,32}\Z")
SYSTEM_USER = re.compile(r"\A[a-z_][a-z0-9_-]{0,31}\Z")
# Where a node is reached: a host name, an IPv4 address or an IPv6 address (without brackets).
HOST_ADDRESS = re.compile(r"\A(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|[0-9A-Fa-f:.]{2,45})\Z")
# Basic authentication's users, as an exporter's web configuration holds them: a name (no colon, which ends the name
# in the Authorization header) and the bcrypt hash of the password (htpasswd -B, password_hash('bcrypt')).
AUTH_USER = re.compile(r"\A[A-Za-z0-9._@+-]{1,64}\Z")
BCRYPT_HASH = re.compile(r"\A\$2[aby]?\$(?:0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}\Z")

ALLOWED = {
    "module": "a kernel module name (letters, digits, _ and -, not starting with -)",
    "parameter": "a module parameter name (letters, digits and _)",
    "value": "letters, digits and _ . , : ; / + = @ % -, or a double-quoted text of printable ASCII without "
             "\" and \\",
    "pin": "letters, digits, spaces inside and . _ + ~ - (no comma, no newline)",
    "domain": "*, a user name, @group or %group",
    "nccl_name": "an NCCL variable name (NCCL_ and capitals, digits, _)",
    "nccl_value": "printable ASCII without spaces",
    "unit": "a systemd unit name (letters, digits and : _ . @ \\ -, not starting with - or ., without ..)",
    "pip": "an https://, http:// or file:// URL or an absolute path, without spaces",
    "listen": "HOST:PORT, [IPv6 address]:PORT or :PORT (every address), the port from 1 to 65535",
    "host_name": "a host name (letters, digits and . _ -)",
    "path": "an absolute path of letters, digits and . _ + - without . or .. parts",
    "user": "a system user name (lower-case letters, digits, _ and -, at most 32)",
    "address": "a host name, an IPv4 address or an IPv6 address without brackets",
    "auth_user": "a user name of letters, digits and . _ @ + - (at most 64)",
}


def _scalar(value):
    """The text a template writes for a scalar; None for anything that is not one."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, str)):
        return str(value) if not isinstance(value, int) or value.bit_length() <= 64 else None
    if isinstance(value, float) and math.isfinite(value):
        return str(value)
    return None


def _check(problems, where, value, pattern, allowed):
    text = _scalar(value)
    if text is None or not pattern.match(text):
        problems.append("%s%s %s is not allowed here; give %s"
                        % (where, "" if where.endswith(" key") else ":", shown(value), ALLOWED[allowed]))


def _mapping(problems, name, value):
    if not isinstance(value, dict):
        problems.append("%s: must be a dict, got %s" % (name, type(value).__name__))
        return {}
    return value


def _sequence(problems, name, value):
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, (list, tuple)):
        # The plain type's name: ansible-core 2.19 gives templated values tagged types (_AnsibleTaggedStr).
        kind = next((plain.__name__ for plain in (bool, str, bytes, dict, int, float) if isinstance(value, plain)),
                    type(value).__name__)
        problems.append("%s: must be a list, got %s" % (name, kind))
        return []
    return value


def _modprobe_options(problems, name, value):
    for module, params in _mapping(problems, name, value).items():
        _check(problems, "%s: key" % name, module, MODULE_NAME, "module")
        for parameter, setting in _mapping(problems, "%s[%s]" % (name, shown(module)), params).items():
            where = "%s[%s]" % (name, shown(module))
            _check(problems, "%s: key" % where, parameter, PARAMETER_NAME, "parameter")
            _check(problems, "%s[%s]" % (where, shown(parameter)), setting, PARAMETER_VALUE, "value")


def _listed(pattern, allowed):
    def check(problems, name, value):
        for n, item in enumerate(_sequence(problems, name, value)):
            _check(problems, "%s[%d]" % (name, n), item, pattern, allowed)
    return check


def _apt_pin_value(problems, name, value):
    _check(problems, name, value, PIN_VALUE, "pin")


def _nccl_env(problems, name, value):
    for variable, setting in _mapping(problems, name, value).items():
        _check(problems, "%s: key" % name, variable, NCCL_NAME, "nccl_name")
        _check(problems, "%s[%s]" % (name, shown(variable)), setting, NCCL_VALUE, "nccl_value")


def _pip_locations(problems, name, value):
    if isinstance(value, str):  # one index URL; empty for none
        if value:
            _check(problems, name, value, PIP_LOCATION, "pip")
        return
    for n, item in enumerate(_sequence(problems, name, value)):
        _check(problems, "%s[%d]" % (name, n), item, PIP_LOCATION, "pip")


def _pip_location_list(problems, name, value):
    if isinstance(value, str):  # pip would be given one --find-links per character
        problems.append("%s: must be a list of wheel locations, got the text %s; give [%s]"
                        % (name, shown(value), shown(value)))
        return
    _pip_locations(problems, name, value)


def _refuse(problems, name, value, allowed):
    problems.append("%s: %s is not allowed here; give %s" % (name, shown(value), ALLOWED[allowed]))


def _listen(problems, name, value):
    match = LISTEN.match(value) if isinstance(value, str) else None
    if not match or not 1 <= int(match.group(1)) <= 65535:
        _refuse(problems, name, value, "listen")


def _basic_auth_users(problems, name, value):
    """{user: bcrypt hash}. A value that is not a hash is never shown: it may be the password itself."""
    for user, hashed in _mapping(problems, name, value).items():
        _check(problems, "%s: key" % name, user, AUTH_USER, "auth_user")
        if not isinstance(hashed, str) or not BCRYPT_HASH.match(hashed):
            problems.append("%s[%s]: is not a bcrypt hash (not shown: it may be a password); give the hash of the "
                            "password, such as htpasswd -nBC 12 %s writes or password_hash('bcrypt') makes"
                            % (name, shown(user), user if isinstance(user, str) and AUTH_USER.match(user) else "NAME"))


def _single(pattern, allowed):
    """One text value (not a number that a template would write as text)."""
    def check(problems, name, value):
        if not isinstance(value, str) or not pattern.match(value):
            _refuse(problems, name, value, allowed)
    return check


FORMATS = {
    "modprobe_options": _modprobe_options,
    "kernel_modules": _listed(MODULE_NAME, "module"),
    "apt_pin_value": _apt_pin_value,
    "limits_domains": _listed(LIMITS_DOMAIN, "domain"),
    "nccl_env": _nccl_env,
    "unit_names": _listed(UNIT_NAME, "unit"),
    "pip_locations": _pip_locations,
    "pip_location_list": _pip_location_list,
    "listen_address": _listen,
    "host_name": _single(HOST_NAME, "host_name"),
    "absolute_path": _single(ABSOLUTE_PATH, "path"),
    "absolute_paths": _listed(ABSOLUTE_PATH, "path"),
    "system_user": _single(SYSTEM_USER, "user"),
    "system_users": _listed(SYSTEM_USER, "user"),
    "host_address": _single(HOST_ADDRESS, "address"),
    "basic_auth_users": _basic_auth_users,
}


def config_value_problems(value, format, name):  # pylint: disable=redefined-builtin
    if not isinstance(format, str) or format not in FORMATS:
        raise AnsibleFilterError("_config_value_problems: format must be one of %s, got %s"
                                 % (", ".join(FORMATS), shown(format)))
    if not isinstance(name, str) or not name:
        raise AnsibleFilterError("_config_value_problems: name must be the variable's name, got %s" % shown(name))
    problems = []
    FORMATS[format](problems, name, value)
    return problems


class FilterModule:
    def filters(self):
        return {"_config_value_problems": config_value_problems}
