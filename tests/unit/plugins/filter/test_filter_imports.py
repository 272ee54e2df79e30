"""Ansible's Jinja plugin loader imports every filter file of the collection in each worker process, at the first
lookup of any of its filters: the files import their code in plugin_utils, and the large modules behind it (the fleet
report, Slurm, the compatibility tables), only when their filter is called."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from simnode import COLLECTIONS, ROOT

LARGE = ("_report_model", "_report_html", "_slurm_conf", "_slurm_nodes", "_slurm_allreduce", "_cuda_compat", "_health",
         "_ib", "_gpu_labels")

SHOW = """
print(json.dumps(sorted(name.rsplit(".", 1)[-1] for name in sys.modules
                        if name.startswith("ansible_collections.accelops"))))
"""
PROGRAM = """
import importlib, json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.py")):
    importlib.import_module("ansible_collections.accelops.gpu.plugins.filter." + path.stem).FilterModule().filters()
""" + SHOW


def imported_after(program, *args):
    out = subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(COLLECTIONS), "PATH": "/usr/bin:/bin"})
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_loading_every_filter_file_imports_no_large_module():
    imported = imported_after(PROGRAM, str(ROOT / "plugins" / "filter"))
    assert {"_file_matches", "fleet_report_model", "slurm_gres_conf"} <= imported
    # Nor the filters' own code in plugin_utils: a filter file holds its documentation and a wrapper alone.
    assert sorted(name for name in imported if name.endswith("_filters")) == []
    assert not imported & set(LARGE), "imported with the filter files: %s" % sorted(imported & set(LARGE))


@pytest.mark.parametrize("call, module", [
    ("fleet_report_model.FilterModule().filters()['fleet_report_model']({})", "_report_model"),
    ("slurm_gres_conf.FilterModule().filters()['slurm_gres_conf']([], True)", "_slurm_conf"),
    ("cuda_min_driver.FilterModule().filters()['cuda_min_driver']('12.4')", "_cuda_compat"),
])
def test_a_filter_call_imports_its_module_and_keeps_its_errors(call, module):
    program = PROGRAM + """
from ansible.errors import AnsibleFilterError
from ansible_collections.accelops.gpu.plugins.filter import fleet_report_model, slurm_gres_conf, cuda_min_driver
try:
    %s
except AnsibleFilterError:
    pass
""" % call + SHOW
    assert module in imported_after(program, str(ROOT / "plugins" / "filter"))


def test_errors_of_a_module_imported_at_the_call_name_the_filter():
    from ansible.errors import AnsibleFilterError

    from ansible_collections.accelops.gpu.plugins.plugin_utils._cuda_compat_filters import cuda_min_driver
    from ansible_collections.accelops.gpu.plugins.plugin_utils._report_filters import fleet_report_model
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import slurm_gres_conf

    with pytest.raises(AnsibleFilterError, match=r"^slurm_gres_conf: "):
        slurm_gres_conf("not records", True)

    with pytest.raises(AnsibleFilterError, match=r"^fleet_report_model: "):
        fleet_report_model("not a list")
    with pytest.raises(AnsibleFilterError, match=r"^cuda_min_driver: "):
        cuda_min_driver("no version")
    assert cuda_min_driver.__name__ == "cuda_min_driver"


def test_filter_errors_needs_its_error_class():
    from ansible_collections.accelops.gpu.plugins.plugin_utils._filters import filter_errors

    with pytest.raises(TypeError, match="missing"):
        filter_errors("name")
