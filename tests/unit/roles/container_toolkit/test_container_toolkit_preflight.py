"""container_toolkit's preflight: the CDI spec must lie in a directory the runtimes are told to read."""

from __future__ import annotations

import pytest
from rolevars import Batch, preflight_task, role_files

CHECK = preflight_task("container_toolkit", "Check that the CDI spec is in a directory the runtimes read")
BATCH = Batch()
CASES = [
    ({}, True),
    ({"container_toolkit_cdi_spec": "/var/run/cdi/nvidia.yaml"}, True),
    ({"container_toolkit_cdi_spec_dirs": ["/etc/cdi/", "/var/run/cdi"]}, True),
    ({"container_toolkit_cdi_spec_dirs": ["/var/run/cdi"]}, False),
    ({"container_toolkit_cdi_spec": "/etc/cdi/site/nvidia.yaml"}, False),
    ({"container_toolkit_cdi_spec_dirs": []}, False),
]
KEYS = [BATCH.add(role_files("container_toolkit"), variables,
                  [("ok", "{{ %s }}" % CHECK["ansible.builtin.assert"]["that"]),
                   ("message", CHECK["ansible.builtin.assert"]["fail_msg"])]) for variables, _ok in CASES]


@pytest.mark.parametrize("position", range(len(CASES)))
def test_the_spec_must_be_in_a_spec_dir(position):
    rendered = BATCH[KEYS[position]]
    assert rendered["ok"] == CASES[position][1], rendered
    assert "container_toolkit_cdi_spec_dirs" in rendered["message"]
