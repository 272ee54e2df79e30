"""Prometheus' text exposition format, read strictly: every line checked, every family's samples with their labels."""

from __future__ import annotations

import re

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r"\A(%s)(?:\{(%s(?:,%s)*)\})? (-?[0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?|NaN|[+-]Inf)\Z"
                    % (NAME, LABEL, LABEL))
LABEL_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')


def parse(text):
    """The text as {name: {"type", "help", "samples": [(labels dict, value)]}}, failing on any line out of format."""
    assert text.endswith("\n")
    families, current = {}, None
    for line in text[:-1].split("\n"):
        if line.startswith("# HELP "):
            name, _sep, help_text = line[7:].partition(" ")
            assert name not in families, "family %s twice" % name
            current = families[name] = {"help": help_text, "type": None, "samples": []}
        elif line.startswith("# TYPE "):
            name, _sep, kind = line[7:].partition(" ")
            assert name in families and kind in ("gauge", "counter"), line
            families[name]["type"] = kind
        else:
            match = SAMPLE.match(line)
            assert match, "not a sample line: %r" % line
            assert match[1] == current_name(families, current), "sample of %s outside its family" % match[1]
            labels = {key: unescape(val) for key, val in LABEL_PAIR.findall(match[2] or "")}
            current["samples"].append((labels, float(match[3])))
    for name, family in families.items():
        keys = [tuple(sorted(labels.items())) for labels, _value in family["samples"]]
        assert len(keys) == len(set(keys)), "%s has one label set twice" % name
    return families


def unescape(text):
    return re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], text)


def current_name(families, current):
    return next(name for name, family in families.items() if family is current)


def value(families, name, **labels):
    found = [v for have, v in families[name]["samples"] if all(have.get(k) == str(w) for k, w in labels.items())]
    assert len(found) == 1, (name, labels, families.get(name))
    return found[0]
