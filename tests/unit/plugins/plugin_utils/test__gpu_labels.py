"""The pure rules of _gpu_labels: GFD's sanitise() and family table (the cases of GFD v0.20.0's own tests and its
getArchFamily), and Kubernetes' label rules as NFD applies them."""

from __future__ import annotations

import pytest

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import LabelError
from ansible_collections.accelops.gpu.plugins.plugin_utils._gpu_labels import arch_family, check_label, sanitise


@pytest.mark.parametrize("text, expected", [
    # internal/lm/resource_test.go TestSanitise, case by case
    ("a space separated string", "a-space-separated-string"),
    ("some(thing)else", "somethingelse"),
    ("some ( thing )else", "some-thing-else"),
    ("NVIDIA-TITAN-X-(Pascal)", "NVIDIA-TITAN-X-Pascal"),
    (" input  with multiple   spaces   ", "input-with-multiple-spaces"),
    ("some [ / thing / ]else", "some-thing-else"),
    ("some / thing /else", "some-thing-else"),
    ("some-thing.else_new", "some-thing.else_new"),
    # and the NVML names of the fixtures
    ("NVIDIA H100 80GB HBM3", "NVIDIA-H100-80GB-HBM3"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB"),
    ("NVIDIA RTX 6000 Ada Generation", "NVIDIA-RTX-6000-Ada-Generation"),
    ("", ""),
])
def test_sanitise_as_gfd(text, expected):
    assert sanitise(text) == expected


@pytest.mark.parametrize("major, minor, family", [
    (1, 3, "tesla"), (2, 1, "fermi"), (3, 7, "kepler"), (4, 0, "undefined"), (5, 2, "maxwell"), (6, 0, "pascal"),
    (7, 0, "volta"), (7, 2, "volta"), (7, 5, "turing"), (8, 0, "ampere"), (8, 6, "ampere"), (8, 7, "ampere"),
    (8, 9, "ada-lovelace"), (9, 0, "hopper"), (10, 0, "blackwell"), (11, 0, "undefined"), (12, 0, "blackwell"),
    (13, 0, "rubin"), (14, 0, "undefined"),
])
def test_family_as_gfd(major, minor, family):
    assert arch_family(major, minor) == family


@pytest.mark.parametrize("key, value", [
    ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
    ("nvidia.com/gpu.sharing-strategy", ""),
    ("nvidia.com/mig-1g.10gb.me.count", "7"),
    ("feature.node.kubernetes.io/x", "true"),
    ("a.b/" + "n" * 63, "v" * 63),
])
def test_labels_kubernetes_takes(key, value):
    check_label(key, value)


@pytest.mark.parametrize("key, value", [
    ("gpu", "1"), ("/gpu", "1"), ("nvidia.com/", "1"), ("nvidia.com/-gpu", "1"), ("nvidia.com/gpu.", "1"),
    ("NVIDIA.com/gpu", "1"), ("nvidia.com/a/b", "1"), ("nvidia.com/" + "n" * 64, "1"), ("kubernetes.io/gpu", "1"),
    ("node.kubernetes.io/gpu", "1"), ("nvidia.com/gpu", "v" * 64), ("nvidia.com/gpu", "-v"), ("nvidia.com/gpu", "v."),
    ("nvidia.com/gpu", "a b"), ("nvidia.com/gpu", "a\n"), ("nvidia.com/gpu", "a=b"), ("nvidia.com/gpu", 1),
    ("nvidia.com/gpu", None), (None, "1"),
])
def test_labels_kubernetes_refuses(key, value):
    with pytest.raises(LabelError):
        check_label(key, value)
