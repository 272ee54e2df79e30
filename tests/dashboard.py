"""The Grafana dashboard shipped with gpu_monitoring (roles/gpu_monitoring/files/grafana/accelops-gpu.json): its
queries, with Grafana's variables replaced by values, and a check that runs each against a Prometheus.

    python3 tests/dashboard.py --prometheus http://127.0.0.1:19090 --var instance=127.0.0.1:19400 --var gpu=1

Every panel target's expression and every query variable's query (label_values(SELECTOR, LABEL): the selector must
find a series with the label) must give at least one series; what gives none is named by its panel and printed, and
the exit status is 1. A query is asked again for up to --wait seconds (series that the last scrape brought). The unit
tests (tests/unit/roles/gpu_monitoring/test_dashboard.py) read the same functions without a Prometheus.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
import time
import urllib.parse
import urllib.request

DASHBOARD = pathlib.Path(__file__).resolve().parents[1] / "roles" / "gpu_monitoring" / "files" / "grafana" / \
    "accelops-gpu.json"
# Grafana's own variables, as a panel of a few hours asks (any value that Prometheus takes does for the check).
BUILTIN = {"__rate_interval": "1m", "__interval": "15s", "__range": "5m"}
LABEL_VALUES = re.compile(r"\Alabel_values\(\s*(?:(?P<selector>.+),\s*)?(?P<label>[A-Za-z_][A-Za-z0-9_]*)\s*\)\Z",
                          re.S)
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")
# PromQL's words that are not metric names.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset",
            "inf", "nan"}


def load(path=DASHBOARD):
    return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))


def panels(dashboard):
    """Every panel, those inside rows too."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def variable_query(variable):
    """A query variable's query text (Grafana writes a string or {"query": ...})."""
    query = variable.get("query")
    return query.get("query", "") if isinstance(query, dict) else query or ""


def queries(dashboard):
    """(where, expr, label) for every panel target and query variable; label is the label a variable lists (its
    selector must find series that have it), None for a panel's expression."""
    found = []
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            if target.get("expr"):
                found.append(("panel %r target %s" % (panel.get("title"), target.get("refId")), target["expr"], None))
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") != "query":
            continue
        match = LABEL_VALUES.match(variable_query(variable).strip())
        if not match:
            raise ValueError("variable %r: not label_values(SELECTOR, LABEL): %r"
                             % (variable.get("name"), variable_query(variable)))
        found.append(("variable %r" % variable.get("name"), match.group("selector") or "up", match.group("label")))
    return found


def substitute(expr, values):
    """expr with $name, ${name} and ${name:format} replaced from values (Grafana's __rate_interval and friends
    included); a variable without a value is an error."""
    values = {**BUILTIN, **values}

    def value(match):
        name = match.group(1) or match.group(2)
        if name not in values:
            raise KeyError("no value for $%s in %r" % (name, expr))
        return values[name]
    return VARIABLE.sub(value, expr)


def metric_names(expr):
    """The metric names an expression reads: what is left of it without strings, label matchers, durations,
    grouping label lists, function calls, keywords and numbers."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"' + r"|'(?:[^'\\]|\\.)*'", '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.$])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?", text):
        name, call = match.group(1), match.group(2)
        if not call and name.lower() not in KEYWORDS:
            names.add(name)
    return names


def ask(prometheus, expr):
    url = prometheus.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as answer:
        body = json.load(answer)
    if body.get("status") != "success":
        raise RuntimeError("%s: %s" % (expr, body))
    return body["data"]["result"]


def check(prometheus, values, wait=20.0, dashboard=None):
    """(where, expr, why) for every query that gives no series (a variable: none with its label)."""
    deadline = time.monotonic() + wait
    pending = [(where, substitute(expr, values), label) for where, expr, label in queries(dashboard or load())]
    while True:
        failed = []
        for where, expr, label in pending:
            try:
                result = ask(prometheus, expr)
            except (OSError, RuntimeError) as exc:
                failed.append((where, expr, label, "Prometheus refused it: %s" % exc))
                continue
            if label is not None:
                result = [item for item in result if item.get("metric", {}).get(label)]
            if not result:
                failed.append((where, expr, label, "no series" + (" with the label %s" % label if label else "")))
        if not failed or time.monotonic() > deadline:
            return [(where, expr, why) for where, expr, _label, why in failed]
        pending = [(where, expr, label) for where, expr, label, _why in failed]
        time.sleep(1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--prometheus", required=True, help="Prometheus' base URL")
    parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE", help="a variable's value")
    parser.add_argument("--dashboard", default=str(DASHBOARD))
    parser.add_argument("--wait", type=float, default=20.0, help="seconds to ask again for what is missing")
    args = parser.parse_args(argv)
    values = dict(item.split("=", 1) for item in args.var)
    dashboard = load(args.dashboard)
    failed = check(args.prometheus, values, args.wait, dashboard)
    total = len(queries(dashboard))
    for where, expr, why in failed:
        print("FAILED %s: %s: %s" % (where, why, expr))
    print("%d of %d dashboard queries gave series (%s)" % (total - len(failed), total,
                                                           ", ".join("%s=%s" % item for item in values.items())))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
