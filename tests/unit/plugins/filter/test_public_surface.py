"""The filters the collection promises, and the ones its roles keep to themselves: a filter whose name starts with _ is
internal (the roles' and playbooks' own, no compatibility promise); the README names the public ones alone, every
internal one has a caller, and every filter a role, playbook or scenario calls exists."""

from __future__ import annotations

import importlib
import re

import pytest

from simnode import ROOT, filter_docs

FILTERS = ROOT / "plugins" / "filter"

PUBLIC = {
    # CUDA, driver, GPU and framework compatibility (docs/compatibility.md)
    "cuda_min_driver", "cuda_max_for_driver", "cuda_too_new", "gpu_support_problems", "torch_cuda_channel",
    "tensorflow_for_cuda", "tensorflow_build", "horovod_limit",
    # the facts, read for people
    "gpu_summary", "topology_table", "gpu_processes",
    # the fleet report
    "fleet_report_model", "fleet_report_html",
    # the GPU waste report from Slurm's accounting
    "gpu_waste_model", "gpu_waste_html",
    # Slurm's configuration and view, from the facts
    "slurm_node_gres", "slurm_hardware", "slurm_node_line", "slurm_gres_conf", "slurm_node_states",
    # NCCL's settings from the RDMA facts
    "nccl_env",
    # node_files' destinations, for node_probe's read
    "node_file_paths",
    # Kubernetes: GPU Feature Discovery's labels and Node Feature Discovery's feature file (docs/kubernetes.md)
    "gpu_feature_labels", "nfd_feature_file",
}
INTERNAL = {
    "_alternatives_set", "_apt_outdated", "_config_value_problems", "_dcgm_diag_problems", "_dkms_unbuilt",
    "_file_matches", "_gpu_waste_window", "_ipoib_problems", "_kernel_headers_missing", "_key_download_problem",
    "_newest_version", "_package_offers", "_pip_unmet", "_running_units", "_signing_key_problems", "_site_mirror_needs",
    "_site_mirror_problems", "_spark_problems", "_spark_cluster_problems", "_spark_discovery_problems",
    "_slurm_allreduce_plan", "_slurm_allreduce_result", "_slurm_cluster_members", "_slurm_foreign_scripts",
    "_slurm_gres_mismatch", "_slurm_health_actions", "_slurm_maintenance", "_slurm_node_problems",
    "_slurm_site_scripts",
    "_kubernetes_health_actions", "_kubectl_steps", "_kubernetes_maintenance", "_kubernetes_gpu_pods",
}
# Where the collection calls its own filters.
CALLERS = ("roles", "playbooks")
REFERENCES = ("roles", "playbooks", "molecule")
TEXT = {".yml", ".yaml", ".j2", ".md", ".py"}


def provided():
    names = set()
    for path in sorted(FILTERS.glob("*.py")):
        module = importlib.import_module("ansible_collections.accelops.gpu.plugins.filter.%s" % path.stem)
        names |= set(module.FilterModule().filters())
    return names


def texts(*tops):
    for top in tops:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and path.suffix in TEXT:
                yield path, path.read_text(encoding="utf-8")


def test_the_filters_provided_are_the_public_and_the_internal_ones():
    assert not PUBLIC & INTERNAL
    names = provided()
    assert names == PUBLIC | INTERNAL, "not listed here: %s; listed but not provided: %s" % (
        sorted(names - PUBLIC - INTERNAL), sorted((PUBLIC | INTERNAL) - names))


def test_internal_names_start_with_an_underscore_and_public_ones_do_not():
    assert all(name.startswith("_") for name in INTERNAL)
    assert not any(name.startswith("_") for name in PUBLIC)


def test_the_readme_names_each_public_filter_and_no_internal_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert [name for name in sorted(PUBLIC) if not re.search(r"`(accelops\.gpu\.)?%s`" % name, readme)] == []
    # Neither the internal name nor the name it had before it was internal.
    named = [name for name in sorted(INTERNAL) if re.search(r"\b_?%s\b" % name[1:], readme)]
    assert named == [], "README.md names internal filters"


@pytest.mark.parametrize("name", sorted(INTERNAL))
def test_each_internal_filter_has_a_caller(name):
    """A filter that nothing in the collection calls is either public or gone."""
    call = re.compile(r"\baccelops\.gpu\.%s\b" % re.escape(name))
    callers = [path for path, text in texts(*CALLERS) if call.search(text)]
    callers += [path for path, text in texts("plugins") if FILTERS not in path.parents and call.search(text)]
    assert callers, "%s: no role, playbook or plugin calls it" % name


def test_each_filter_the_collection_calls_exists():
    names = provided()
    # As a filter (| accelops.gpu.NAME) or mapped (map('accelops.gpu.NAME')).
    called = re.compile(r"(?:\||\bmap\(\s*['\"])\s*accelops\.gpu\.(\w+)")
    unknown = sorted({"%s: %s" % (path.relative_to(ROOT), found)
                      for path, text in texts(*REFERENCES) for found in called.findall(text) if found not in names})
    assert unknown == []
    # Nor under a name it had before it was internal.
    old = re.compile(r"\baccelops\.gpu\.(%s)\b" % "|".join(name[1:] for name in INTERNAL))
    stale = sorted({"%s: %s" % (path.relative_to(ROOT), found)
                    for path, text in texts(*REFERENCES, "docs", "tests", "plugins") for found in old.findall(text)})
    assert stale == []


@pytest.mark.parametrize("name", sorted(PUBLIC | INTERNAL))
def test_each_filter_has_its_documentation(name):
    doc = filter_docs(name)["DOCUMENTATION"]
    assert doc["name"] == name
    if name in INTERNAL:
        assert doc["short_description"].startswith("Internal: "), name
        assert doc["short_description"].endswith("(no compatibility promise)"), name
    else:
        assert not doc["short_description"].startswith("Internal"), name
        # The documentation site has no page for an internal filter: a public one does not point at one.
        assert not [also for also in doc.get("seealso", []) if str(also.get("plugin", "")).startswith("accelops.gpu._")]
