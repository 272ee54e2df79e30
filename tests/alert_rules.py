"""Write roles/gpu_monitoring/files/accelops-gpu.rules.yml, the alert rules for users to copy, from the role's template
(templates/accelops-gpu.rules.yml.j2) with the role's defaults, rendered by Ansible's template module as the role
renders it where gpu_monitoring_rules_dir is set: python3 tests/alert_rules.py [--check]

--check writes nothing and exits 1 when the file differs from what the template gives.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROLE = ROOT / "roles" / "gpu_monitoring"
TEMPLATE = ROLE / "templates" / "accelops-gpu.rules.yml.j2"
SHIPPED = ROLE / "files" / "accelops-gpu.rules.yml"
NAME = "accelops-gpu.rules.yml"
# The shipped file's header, in place of "Ansible managed": where it comes from and how to get it with other settings.
HEADER = "Written by tests/alert_rules.py from the role's templates/accelops-gpu.rules.yml.j2 with its defaults."


def ansible_playbook():
    beside = Path(sys.executable).with_name("ansible-playbook")
    return str(beside) if beside.exists() else shutil.which("ansible-playbook") or "ansible-playbook"


def render(settings=None, header=None):
    """The rules file that the template gives with the role's defaults and settings (role variables) over them."""
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(temporary)
        play = [{"hosts": "localhost", "connection": "local", "gather_facts": False,
                 "vars_files": [str(ROLE / "defaults" / "main.yml")],
                 "tasks": [{"name": "Render the alert rules",
                            "ansible.builtin.template": {"src": str(TEMPLATE), "dest": str(work / NAME),
                                                         "mode": "0644"}}]}]
        (work / "play.yml").write_text(json.dumps(play))
        # The template module runs on this machine, with this Python (not whatever interpreter discovery finds).
        extra = dict(settings or {}, ansible_python_interpreter=sys.executable)
        if header is not None:
            extra["ansible_managed"] = header
        (work / "extra.json").write_text(json.dumps(extra))
        env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false",
                   ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_HOME=str(work / "home"))
        run = subprocess.run([ansible_playbook(), "-i", "localhost,", "play.yml", "-e", "@extra.json"], cwd=work,
                             env=env, capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise RuntimeError("rendering %s failed:\n%s%s" % (TEMPLATE.name, run.stdout[-3000:], run.stderr[-3000:]))
        return (work / NAME).read_text(encoding="utf-8")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file is not up to date")
    args = parser.parse_args(argv)
    text = render(header=HEADER)
    if SHIPPED.read_text(encoding="utf-8") == text:
        return 0
    if args.check:
        print("alert_rules: %s is not up to date (run python3 tests/alert_rules.py)" % SHIPPED.relative_to(ROOT))
        return 1
    SHIPPED.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
