# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The _dcgm_diag_problems filter, internal to the roles (no compatibility promise),
documented in _dcgm_diag_problems.yml."""

from __future__ import annotations

import json

from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shown, whole

# A message names at most this many characters of what dcgmi printed.
SHOWN = 500
# The statuses of a result that are no failure; any other (Fail, Error, none at all, one never seen) is a problem.
NOT_FAILED = frozenset(("pass", "passed", "warn", "warning", "skip", "skipped", "not run", "notrun", "not_run"))


def _text(value):
    return value if isinstance(value, str) else ""


def _list(value):
    return value if isinstance(value, list) else []


def _shown(text):
    return " ".join(text.split())[:SHOWN]


def _entity(result):
    group = result.get("entity_group")
    group = group if isinstance(group, str) and group else "GPU"
    entity = result.get("entity_id")
    if isinstance(entity, (int, str)) and not isinstance(entity, bool):
        return "%s %s" % (group, _shown(str(entity)))
    return group


def _reasons(result):
    texts = []
    for warning in _list(result.get("warnings")):
        text = warning.get("warning") if isinstance(warning, dict) else warning
        if isinstance(text, str) and text.strip():
            texts.append(_shown(text))
    if not texts:
        texts = [_shown(info) for info in _list(result.get("info")) if isinstance(info, str) and info.strip()]
    return "; ".join(text.rstrip(". ") for text in texts)[:SHOWN] or "no reason given"


def _status(holder):
    status = holder.get("status") if isinstance(holder, dict) else None
    return status.strip().lower() if isinstance(status, str) else None


def _categories(document):
    diagnostic = document.get("DCGM Diagnostic") if isinstance(document, dict) else None
    categories = diagnostic.get("test_categories") if isinstance(diagnostic, dict) else None
    return categories if isinstance(categories, list) else None


def _test_problems(category, test):
    name = "%s/%s" % (_shown(str(category.get("category", "?"))), _shown(str(test.get("name", "?"))))
    problems, results = [], 0
    for entry in _list(test.get("results")):
        results += 1
        status = _status(entry)
        if status not in NOT_FAILED:
            result = entry if isinstance(entry, dict) else {}
            said = "failed" if status in ("fail", "failed", "error") else "gave the status %s" % (
                _shown(str(result.get("status"))) if "status" in result else "none")
            problems.append("%s: %s %s: %s" % (_entity(result), name, said, _reasons(result)))
    summary = _status(test.get("test_summary"))
    if not problems and summary is not None and summary not in NOT_FAILED:
        problems.append("%s: the test's summary is %s" % (name, _shown(str(test["test_summary"]["status"]))))
    return problems, results


def dcgm_diag_problems(diag):
    """What `dcgmi diag -j` found wrong, one line per failed test and entity; [] when it passed."""
    if isinstance(diag, dict):
        rc, stdout, stderr = diag.get("rc"), _text(diag.get("stdout")), _text(diag.get("stderr"))
        rc = rc if rc is None or whole(rc, negative=True) is not None else shown(rc)
        msg = _text(diag.get("msg"))
    elif isinstance(diag, str):
        rc, stdout, stderr, msg = None, diag, "", ""
    else:
        raise AnsibleFilterError("_dcgm_diag_problems: the input must be the registered result of `dcgmi diag -r N -j` "
                                 "or the text it printed, got %s" % type(diag).__name__)
    try:
        categories = _categories(json.loads(stdout))
    except (ValueError, RecursionError):
        categories = None
    if categories is None:
        said = _shown(stderr.strip() or stdout.strip() or msg.strip() or "nothing")
        return ["dcgmi diag gave no diagnostic document (exit status %s): %s" % (rc, said)]
    problems, results = [], 0
    for category in categories:
        for test in _list(category.get("tests")) if isinstance(category, dict) else ():
            if isinstance(test, dict):
                found, counted = _test_problems(category, test)
                problems += found
                results += counted
    if not problems and not results:
        problems.append("dcgmi diag ran no test (exit status %s): %s" % (rc, _shown(stderr) or "no GPU in its view?"))
    if not problems and rc not in (None, 0):
        problems.append("dcgmi diag exited with status %s without naming a failed test: %s"
                        % (rc, _shown(stderr) or "nothing on stderr"))
    return problems


class FilterModule:
    def filters(self):
        return {"_dcgm_diag_problems": dcgm_diag_problems}
