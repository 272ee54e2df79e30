"""python_env's validation files as node_files entries (tasks/validate.yml): the directory, then the calling role's
script and the checks every framework shares, each taken from a file of the collection that exists."""

from __future__ import annotations

import pathlib

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from simnode import ROOT

ROLE = ROOT / "roles" / "python_env"


@pytest.mark.parametrize("role, script", [("pytorch", "validate_pytorch.py"), ("tensorflow", "validate_tensorflow.py")])
def test_validate_files(role, script):
    loader = DataLoader()
    values = dict(loader.load_from_file(str(ROLE / "vars" / "main.yml"), trusted_as_template=True))
    values.update({"role_path": str(ROLE), "python_env_role": role, "python_env_script": script,
                   "python_env_path": "/opt/accelops-gpu/" + role})
    entries = Templar(loader=loader, variables=values).template(trust_as_template("{{ __python_env_validate_files }}"))
    share = "/opt/accelops-gpu/%s/share/accelops-gpu" % role
    assert [entry["dest"] for entry in entries] == [share, share + "/" + script, share + "/framework_validation.py"]
    assert entries[0]["directory"] is True
    for entry in entries[1:]:
        assert pathlib.Path(entry["file"]).resolve().is_file(), entry
        assert pathlib.Path(entry["file"]).name == pathlib.Path(entry["dest"]).name
