from __future__ import annotations

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_mig as gm

# H100 80GB / A100 80GB placements (start, size in memory slices), as `nvidia-smi mig -lgipp` lists them.
PLACEMENTS = {
    "1g.10gb": [(n, 1) for n in range(7)], "1g.20gb": [(0, 2), (2, 2), (4, 2), (6, 2)],
    "2g.20gb": [(0, 2), (2, 2), (4, 2)], "3g.40gb": [(0, 4), (4, 4)], "4g.40gb": [(0, 4)], "7g.80gb": [(0, 8)],
}


@pytest.mark.parametrize("raw, name", [(b"MIG 1g.10gb", "1g.10gb"), ("MIG 1g.10gb+me", "1g.10gb+me"),
                                       ("3g.40gb", "3g.40gb"), ("MIG 1c.7g.80gb", None), ("", None), (None, None)])
def test_profile_name(raw, name):
    assert gm.profile_name(raw) == name


@pytest.mark.parametrize("wanted, placed", [
    (["7g.80gb"], [("7g.80gb", 0, 8)]),
    (["1g.10gb"] * 7, [("1g.10gb", n, 1) for n in range(7)]),
    (["3g.40gb", "3g.40gb"], [("3g.40gb", 0, 4), ("3g.40gb", 4, 4)]),
    (["4g.40gb", "3g.40gb"], [("3g.40gb", 4, 4), ("4g.40gb", 0, 4)]),
    (["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"],
     [("3g.40gb", 4, 4), ("2g.20gb", 0, 2), ("1g.10gb", 2, 1), ("1g.10gb", 3, 1)]),
    ([], []),
])
def test_fit_places_largest_first_at_the_lowest_free_placement(wanted, placed):
    assert gm.fit(wanted, PLACEMENTS) == placed


@pytest.mark.parametrize("wanted", [["7g.80gb", "1g.10gb"], ["4g.40gb", "4g.40gb"], ["1g.10gb"] * 8,
                                    ["3g.40gb", "3g.40gb", "1g.10gb"], ["1g.20gb"] * 5])
def test_fit_refuses_what_does_not_fit(wanted):
    assert gm.fit(wanted, PLACEMENTS) is None


def test_fit_around_occupied_slices():
    assert gm.fit(["3g.40gb"], PLACEMENTS, occupied=[0, 1]) == [("3g.40gb", 4, 4)]
    assert gm.fit(["4g.40gb"], PLACEMENTS, occupied=[3]) is None


def instance(profile, start, size, processes=(), whole=True):
    return {"profile": profile, "start": start, "size": size, "processes": list(processes), "whole": whole}


def test_plan_keeps_matching_instances_and_fills_around_them():
    current = [instance("3g.40gb", 4, 4), instance("2g.20gb", 0, 2), instance("1g.10gb", 2, 1)]
    plan = gm.plan_layout(["3g.40gb", "1g.10gb", "1g.10gb", "1g.10gb"], current, PLACEMENTS)
    assert [i["profile"] for i in plan["keep"]] == ["1g.10gb", "3g.40gb"]
    assert [i["profile"] for i in plan["destroy"]] == ["2g.20gb"]
    assert plan["create"] == [("1g.10gb", 0, 1), ("1g.10gb", 1, 1)]


def test_plan_rebuilds_when_the_kept_instances_block_the_rest():
    current = [instance("1g.10gb", 3, 1)]
    plan = gm.plan_layout(["1g.10gb", "4g.40gb"], current, PLACEMENTS)
    assert plan["keep"] == [] and plan["destroy"] == current
    assert plan["create"] == [("4g.40gb", 0, 4), ("1g.10gb", 4, 1)]


def test_plan_prefers_keeping_busy_instances():
    idle, busy = instance("1g.10gb", 0, 1), instance("1g.10gb", 5, 1, processes=[{"pid": 7}])
    plan = gm.plan_layout(["1g.10gb"], [idle, busy], PLACEMENTS)
    assert plan["keep"] == [busy] and plan["destroy"] == [idle] and plan["create"] == []


def test_instances_without_one_whole_compute_instance_are_rebuilt():
    split = instance("2g.20gb", 0, 2, whole=False)
    plan = gm.plan_layout(["2g.20gb"], [split], PLACEMENTS)
    assert plan["destroy"] == [split] and plan["create"] == [("2g.20gb", 0, 2)]
