"""The CDI handler's topic: container_toolkit's handler listens to the name its vars give, and nvidia_driver and
gpu_settings notify that name only where it is defined (the role is in their play)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[4]
NOTIFY = "{{ [__container_toolkit_cdi_topic] if __container_toolkit_cdi_topic is defined else [] }}"


def test_the_handler_listens_to_the_topic_of_the_vars():
    variables = yaml.safe_load((ROOT / "roles/container_toolkit/vars/main.yml").read_text())
    topic = variables["__container_toolkit_cdi_topic"]
    handlers = yaml.safe_load((ROOT / "roles/container_toolkit/handlers/main.yml").read_text())
    assert [handler["listen"] for handler in handlers if "listen" in handler] == [topic]


def test_driver_and_mig_changes_notify_the_topic_only_where_it_is_defined():
    found = []
    for path in ("roles/nvidia_driver/tasks/apt.yml", "roles/nvidia_driver/tasks/dnf.yml",
                 "roles/gpu_settings/tasks/run_gpu_mig.yml"):
        text = (ROOT / path).read_text()
        found.append(text.count("notify: \"%s\"" % NOTIFY))
    assert found == [1, 1, 1]
