"""Each role's README.md is what tests/role_readmes.py writes from its argument_specs: the variables it lists are the
ones the role checks (Galaxy's importer refuses a role without a README)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def generator():
    spec = importlib.util.spec_from_file_location("role_readmes", ROOT / "tests" / "role_readmes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_role_has_its_readme_up_to_date(capsys):
    assert generator().main(["--check"]) == 0, capsys.readouterr().out
    roles = {path.parent.parent.name for path in (ROOT / "roles").glob("*/meta/argument_specs.yml")}
    assert roles == {path.parent.name for path in (ROOT / "roles").glob("*/README.md")}


def test_a_readme_lists_every_variable_of_the_role():
    module = generator()
    text = module.readme("gpu_monitoring")
    for name in ("gpu_monitoring_backend", "gpu_monitoring_listen", "gpu_monitoring_dcgm_diag"):
        assert "| `%s` |" % name in text
    assert "| `gpu_monitoring_backend` | str: `nvml`, `dcgm` | `nvml` |" in text
    assert "Runs first: `accelops.gpu.nvml_python`." in text


def test_markup_becomes_markdown():
    module = generator()
    assert module.markdown("C(a) O(b=c) M(accelops.gpu.gpu_facts) I(d) B(e) U(https://x) L(t, https://y)") == (
        "`a` `b=c` `accelops.gpu.gpu_facts` *d* **e** <https://x> [t](https://y)")


def test_check_names_a_stale_readme(tmp_path, monkeypatch, capsys):
    module = generator()
    role = tmp_path / "roles" / "r" / "meta"
    role.mkdir(parents=True)
    (role / "argument_specs.yml").write_text("argument_specs:\n  main:\n    short_description: R\n")
    (role / "main.yml").write_text("galaxy_info: {}\n")
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "ROLES", tmp_path / "roles")
    assert module.main(["--check"]) == 1
    assert "roles/r/README.md" in capsys.readouterr().out
    assert not (tmp_path / "roles" / "r" / "README.md").exists()
    assert module.main([]) == 0
    assert module.main(["--check"]) == 0
