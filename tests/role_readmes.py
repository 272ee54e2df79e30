"""Write each role's README.md from its meta/argument_specs.yml, so that the variables a README lists are the ones the
role checks: python3 tests/role_readmes.py [--check]

--check writes nothing and exits 1 naming the READMEs that differ from what their argument_specs give.
"""

import argparse
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
ROLES = ROOT / "roles"
NAMESPACE = "accelops.gpu"

# Ansible's documentation markup, as Markdown.
MARKUP = [
    (re.compile(r"L\(([^,()]+),\s*([^()]+)\)"), r"[\1](\2)"),
    (re.compile(r"U\(([^()]+)\)"), r"<\1>"),
    (re.compile(r"[CMOVRP]\(([^()]+)\)"), r"`\1`"),
    (re.compile(r"I\(([^()]+)\)"), r"*\1*"),
    (re.compile(r"B\(([^()]+)\)"), r"**\1**"),
]


def markdown(text):
    text = " ".join(str(text).split())
    for pattern, replacement in MARKUP:
        text = pattern.sub(replacement, text)
    return text


def paragraphs(value):
    if value is None:
        return []
    return [markdown(item) for item in (value if isinstance(value, list) else [value])]


def cell(text):
    return text.replace("|", "\\|")


def default(option):
    if "default" not in option:
        return "**required**" if option.get("required") else ""
    value = option["default"]
    if value in ("", [], {}):
        return "`%s`" % ("\"\"" if value == "" else yaml.safe_dump(value, default_flow_style=True).strip())
    if isinstance(value, bool):
        return "`%s`" % str(value).lower()
    return "`%s`" % yaml.safe_dump(value, default_flow_style=True, width=1000).strip().removesuffix("\n...")


def kind(option):
    text = option.get("type", "str")
    if text == "list" and option.get("elements"):
        text = "list of %s" % option["elements"]
    if option.get("choices"):
        text += ": " + ", ".join("`%s`" % choice for choice in option["choices"])
    return text


def options_table(options):
    lines = ["| Variable | Type | Default | What it does |", "|---|---|---|---|"]
    for name in sorted(options):
        option = options[name] or {}
        what = " ".join(paragraphs(option.get("description")))
        lines.append("| `%s` | %s | %s | %s |" % (name, cell(kind(option)), cell(default(option)), cell(what)))
    return lines


# Roles that do not run on the GPU nodes: where their example runs, and the variables it must give.
ELSEWHERE = {
    "site_mirror": {"hosts": "localhost", "vars": {"site_mirror_gnupg_home": "/srv/keys/mirror-gnupg",
                                                   "site_mirror_signing_key": "<the site key's fingerprint>"}},
    "spark": {"hosts": "spark_masters:gpu_nodes", "become": True,
              "vars": {"spark_auth_secret": '"{{ vault_spark_secret }}"'}},
}


def example(role, entry, spec):
    required = {name: option for name, option in (spec.get("options") or {}).items() if option.get("required")}
    elsewhere = ELSEWHERE.get(role, {}) if entry == "main" else {}
    lines = ["```yaml", "- name: Apply %s.%s" % (NAMESPACE, role), "  hosts: %s" % elsewhere.get("hosts", "gpu_nodes")]
    if not elsewhere or elsewhere.get("become"):
        lines.append("  become: true")
    lines.append("  tasks:" if entry != "main" else "  roles:")
    if elsewhere:
        lines += ["    - role: %s.%s" % (NAMESPACE, role), "      vars:"]
        lines += ["        %s: %s" % (name, value) for name, value in sorted(elsewhere["vars"].items())]
        lines.append("```")
        return lines
    if entry == "main":
        lines.append("    - role: %s.%s" % (NAMESPACE, role))
        indent = "      "
    else:
        lines += ["    - name: Run the %s entry point" % entry, "      ansible.builtin.include_role:",
                  "        name: %s.%s" % (NAMESPACE, role), "        tasks_from: %s" % entry, "      vars:"]
        indent = "        "
    if required and entry == "main":
        lines.append("      vars:")
        indent = "        "
    for name in sorted(required):
        lines.append("%s%s: <%s>" % (indent, name, kind(required[name]).split(":")[0]))
    if entry != "main" and not required:
        lines.pop()
    lines.append("```")
    return lines


def readme(role):
    specs = (yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
             or {}).get("argument_specs") or {}
    meta = yaml.safe_load((ROLES / role / "meta" / "main.yml").read_text(encoding="utf-8")) or {}
    galaxy = meta.get("galaxy_info") or {}
    main = specs.get("main") or {}
    lines = ["# %s.%s" % (NAMESPACE, role), "",
             "<!-- Written by tests/role_readmes.py from meta/argument_specs.yml; edit those, then run it. -->", ""]
    lines += [markdown(main.get("short_description") or galaxy.get("description") or role), ""]
    for text in paragraphs(main.get("description")):
        lines += [text, ""]
    dependencies = [dep.get("role", dep) if isinstance(dep, dict) else dep for dep in meta.get("dependencies") or []]
    if dependencies:
        lines += ["Runs first: %s." % ", ".join("`%s`" % dep for dep in dependencies), ""]
    for entry in ["main", *sorted(name for name in specs if name != "main")]:
        spec = specs.get(entry) or {}
        title = "Variables" if entry == "main" else "Entry point `%s`" % entry
        lines += ["## %s" % title, ""]
        if entry != "main":
            for text in [markdown(spec.get("short_description") or ""), *paragraphs(spec.get("description"))]:
                if text:
                    lines += [text, ""]
        if spec.get("options"):
            lines += [*options_table(spec["options"]), ""]
        else:
            lines += ["No variables.", ""]
        lines += ["Example:", "", *example(role, entry, spec), ""]
    lines += ["`ansible-doc -t role %s.%s` shows the same, with every entry point." % (NAMESPACE, role), ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a README is not up to date")
    args = parser.parse_args(argv)
    stale = []
    for spec in sorted(ROLES.glob("*/meta/argument_specs.yml")):
        role = spec.parent.parent.name
        path = ROLES / role / "README.md"
        text = readme(role)
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            stale.append(str(path.relative_to(ROOT)))
            if not args.check:
                path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print("role_readmes: not up to date (run python3 tests/role_readmes.py): %s" % ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
