"""README.md is read on Galaxy, which resolves no relative link, and in a checkout: its links are absolute, and the
switches its "What site.yml does to your nodes" table names are the ones the playbooks and roles read."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_link_is_absolute():
    links = re.findall(r"\]\(([^)]+)\)", README)
    assert links
    assert [link for link in links if not link.startswith(("https://", "#"))] == []


def test_the_links_into_the_repository_name_files_that_exist():
    base = "https://github.com/accelops/accelops.gpu/blob/main/"
    paths = {link[len(base):].split("#")[0] for link in re.findall(r"\]\(([^)]+)\)", README) if link.startswith(base)}
    assert "docs/slurm.md" in paths
    assert sorted(path for path in paths if not (ROOT / path).is_file()) == []


def test_the_site_table_names_switches_that_are_read():
    section = README.split("### What `site.yml` does to your nodes", 1)[1].split("\n## ", 1)[0]
    names = set(re.findall(r"`([a-z][a-z0-9_]+)(?::[^`]*)?`", section))
    switches = {name for name in names if name.startswith(("accelops_gpu_", "nvidia_driver_", "gpu_monitoring_"))}
    assert {"nvidia_driver_reboot", "accelops_gpu_install_driver", "accelops_gpu_report_dir",
            "gpu_monitoring_listen", "accelops_gpu_install_slurm"} <= switches
    sources = "".join(path.read_text(encoding="utf-8") for path in
                      [*(ROOT / "playbooks").glob("*.yml"), *(ROOT / "roles").glob("*/meta/argument_specs.yml")])
    assert sorted(name for name in switches if not re.search(r"\b%s\b" % name, sources)) == []
