"""MIG instance management of the fake libnvidia-ml.so.1, driven through the real pynvml (nvidia-ml-py).

Expected values are NVIDIA's: ``nvidia-smi mig -lgip`` / ``-lgipp`` output and the MIG user guide's profile tables
for A100 40GB, A100 80GB and H100 80GB.
"""

import ctypes
import json
import os
import pathlib
import subprocess
import sys

import pynvml
import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "sim" / "nvml" / "fixtures"
BUILD_DIR = REPO / "build" / "fakenvml"
MIB = 1024 * 1024

# NVML_GPU_INSTANCE_PROFILE_* -> (profile id, name, slices, instances, memory MiB, SMs, CE, DEC, JPEG, OFA)
TABLES = {
    "a100-40gb": {
        pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE: (19, "1g.5gb", 1, 7, 4864, 14, 1, 0, 0, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1: (20, "1g.5gb+me", 1, 1, 4864, 14, 1, 1, 1, 1),
        pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2: (15, "1g.10gb", 1, 4, 9984, 14, 1, 1, 0, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE: (14, "2g.10gb", 2, 3, 9984, 28, 2, 1, 0, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE: (9, "3g.20gb", 3, 2, 20096, 42, 3, 2, 0, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE: (5, "4g.20gb", 4, 1, 20096, 56, 4, 2, 0, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE: (0, "7g.40gb", 7, 1, 40448, 98, 7, 5, 1, 1),
    },
    "a100-80gb": {
        pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE: (19, "1g.10gb", 1, 7, 9856, 14, 1, 0, 0, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1: (20, "1g.10gb+me", 1, 1, 9856, 14, 1, 1, 1, 1),
        pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2: (15, "1g.20gb", 1, 4, 19968, 14, 1, 1, 0, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE: (14, "2g.20gb", 2, 3, 19968, 28, 2, 1, 0, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE: (9, "3g.40gb", 3, 2, 40192, 42, 3, 2, 0, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE: (5, "4g.40gb", 4, 1, 40192, 56, 4, 2, 0, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE: (0, "7g.80gb", 7, 1, 80384, 98, 7, 5, 1, 1),
    },
    "h100-80gb": {
        pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE: (19, "1g.10gb", 1, 7, 9984, 16, 1, 1, 1, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1: (20, "1g.10gb+me", 1, 1, 9984, 16, 1, 1, 1, 1),
        pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2: (15, "1g.20gb", 1, 4, 20096, 26, 1, 1, 1, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE: (14, "2g.20gb", 2, 3, 20096, 32, 2, 2, 2, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE: (9, "3g.40gb", 3, 2, 40448, 60, 3, 3, 3, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE: (5, "4g.40gb", 4, 1, 40448, 64, 4, 4, 4, 0),
        pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE: (0, "7g.80gb", 7, 1, 81152, 132, 8, 7, 7, 1),
    },
}
MISSING = [pynvml.NVML_GPU_INSTANCE_PROFILE_8_SLICE, pynvml.NVML_GPU_INSTANCE_PROFILE_6_SLICE,
           pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1, pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX,
           pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME]

# nvidia-smi mig -lgipp, the same on all three boards: profile id -> placements (start, size in memory slices)
PLACEMENTS = {
    19: [(s, 1) for s in range(7)],
    20: [(s, 1) for s in range(7)],
    15: [(0, 2), (2, 2), (4, 2), (6, 2)],
    14: [(0, 2), (2, 2), (4, 2)],
    9: [(0, 4), (4, 4)],
    5: [(0, 4)],
    0: [(0, 8)],
}
P1G, P1G_ME, P1G_2MEM, P2G, P3G, P4G, P7G = 19, 20, 15, 14, 9, 5, 0
SIZE = {pid: places[0][1] for pid, places in PLACEMENTS.items()}
CI_1, CI_2, CI_3, CI_4, CI_7 = (
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE)
SHARED = pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED


def h100_mig_on(nvml, *extra):
    """dgx-h100 with MIG mode on for GPU 0 (current and pending), nothing created yet."""
    return nvml("dgx-h100.conf", "gpu.0.mig.current=1", "gpu.0.mig.pending=1", *extra)


def handle(i=0):
    return pynvml.nvmlDeviceGetHandleByIndex(i)


def reinit():
    pynvml.nvmlShutdown()
    pynvml.nvmlInit()


def snapshot(path):
    st = os.stat(path)
    return path.read_bytes(), st.st_ino, st.st_mtime_ns


def addr(ptr):
    return ctypes.cast(ptr, ctypes.c_void_p).value


def placements(h, profile_id):
    count = ctypes.c_uint()
    pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(h, profile_id, None, ctypes.byref(count))
    buf = (pynvml.c_nvmlGpuInstancePlacement_t * count.value)()
    pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(h, profile_id, buf, ctypes.byref(count))
    return [(p.start, p.size) for p in buf[:count.value]]


def ci_placements(gi, profile):
    count = ctypes.c_uint()
    pynvml.nvmlGpuInstanceGetComputeInstancePossiblePlacements(gi, profile, None, ctypes.byref(count))
    buf = (pynvml.c_nvmlComputeInstancePlacement_t * count.value)()
    pynvml.nvmlGpuInstanceGetComputeInstancePossiblePlacements(gi, profile, buf, ctypes.byref(count))
    return [(p.start, p.size) for p in buf[:count.value]]


def create_gi(h, profile_id, start=None):
    if start is None:
        return pynvml.nvmlDeviceCreateGpuInstance(h, profile_id)
    place = pynvml.c_nvmlGpuInstancePlacement_t(start, SIZE[profile_id])
    return pynvml.nvmlDeviceCreateGpuInstanceWithPlacement(h, profile_id, ctypes.byref(place))


def create_ci(gi, profile, start=None, size=None):
    if start is None:
        return pynvml.nvmlGpuInstanceCreateComputeInstance(gi, profile)
    place = pynvml.c_nvmlComputeInstancePlacement_t(start, size)
    return pynvml.nvmlGpuInstanceCreateComputeInstanceWithPlacement(gi, profile, ctypes.byref(place))


def gi_info(gi):
    info = pynvml.nvmlGpuInstanceGetInfo(gi)
    return info.id, info.profileId, (info.placement.start, info.placement.size)


def gpu_instances(h, profile_id):
    buf = (pynvml.c_nvmlGpuInstance_t * 8)()
    count = ctypes.c_uint()
    pynvml.nvmlDeviceGetGpuInstances(h, profile_id, buf, ctypes.byref(count))
    return [gi_info(g)[0] for g in buf[:count.value]]


def compute_instances(gi, profile):
    buf = (pynvml.c_nvmlComputeInstance_t * 8)()
    count = ctypes.c_uint()
    pynvml.nvmlGpuInstanceGetComputeInstances(gi, profile, buf, ctypes.byref(count))
    return [pynvml.nvmlComputeInstanceGetInfo(c).id for c in buf[:count.value]]


def mig_devices(h):
    found = []
    for index in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(h)):
        try:
            found.append(pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, index))
        except pynvml.NVMLError_NotFound:
            continue
    return found


def describe(mig):
    mem = pynvml.nvmlDeviceGetMemoryInfo(mig)
    return (pynvml.nvmlDeviceGetName(mig), pynvml.nvmlDeviceGetUUID(mig), pynvml.nvmlDeviceGetGpuInstanceId(mig),
            pynvml.nvmlDeviceGetComputeInstanceId(mig), mem.total // MIB)


# --------------------------------------------------------------------------- profiles and placements


@pytest.mark.parametrize("model", sorted(TABLES))
def test_gpu_instance_profiles_per_model(nvml, model):
    h100_mig_on(nvml, f"gpu.0.mig.profiles={model}")
    h = handle()
    for index, (pid, name, slices, count, mem, sm, ce, dec, jpeg, ofa) in TABLES[model].items():
        for version in (1, 2):
            info = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(h, index, version=version)
            assert (info.id, info.sliceCount, info.instanceCount, info.memorySizeMB) == (pid, slices, count, mem)
            assert (info.multiprocessorCount, info.copyEngineCount, info.decoderCount, info.encoderCount,
                    info.jpegCount, info.ofaCount, info.isP2pSupported) == (sm, ce, dec, 0, jpeg, ofa, 0)
        assert info.name == "MIG " + name
        assert pynvml.nvmlDeviceGetGpuInstanceProfileInfoById(h, pid).name == info.name
        assert placements(h, pid) == PLACEMENTS[pid]
        assert pynvml.nvmlDeviceGetGpuInstanceRemainingCapacity(h, pid) == count
    for index in MISSING:
        with pytest.raises(pynvml.NVMLError_NotSupported):
            pynvml.nvmlDeviceGetGpuInstanceProfileInfo(h, index)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetGpuInstanceProfileInfo(h, pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT)
    for call in (lambda: pynvml.nvmlDeviceGetGpuInstanceProfileInfoById(h, 1),
                 lambda: placements(h, 1), lambda: pynvml.nvmlDeviceCreateGpuInstance(h, 1)):
        with pytest.raises(pynvml.NVMLError_NotSupported):
            call()


def test_profile_info_struct_version_is_checked(nvml, lib):
    h100_mig_on(nvml)
    fn = lib.nvmlDeviceGetGpuInstanceProfileInfoV
    fn.argtypes = [pynvml.c_nvmlDevice_t, ctypes.c_uint, ctypes.c_void_p]
    info = pynvml.c_nvmlGpuInstanceProfileInfo_v2_t()
    info.version = 0x01000098
    assert fn(handle(), 0, ctypes.byref(info)) == pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH


def test_mig_mode_off_is_not_supported_except_placements(nvml):
    path = nvml("dgx-h100.conf")
    before = snapshot(path)
    h = handle()
    for call in (
        lambda: pynvml.nvmlDeviceGetGpuInstanceProfileInfo(h, 0),
        lambda: pynvml.nvmlDeviceGetGpuInstanceRemainingCapacity(h, P1G),
        lambda: pynvml.nvmlDeviceCreateGpuInstance(h, P1G),
        lambda: create_gi(h, P3G, 0),
        lambda: gpu_instances(h, P1G),
        lambda: pynvml.nvmlDeviceGetGpuInstanceById(h, 7),
    ):
        with pytest.raises(pynvml.NVMLError_NotSupported):
            call()
    assert placements(h, P1G_2MEM) == PLACEMENTS[P1G_2MEM]  # _v2 lists placements whatever the mode
    # enabling is only pending until a GPU reset; instances still cannot be created
    assert pynvml.nvmlDeviceSetMigMode(h, pynvml.NVML_DEVICE_MIG_ENABLE) == pynvml.NVML_SUCCESS
    assert pynvml.nvmlDeviceGetMigMode(h) == [0, 1]
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceCreateGpuInstance(h, P1G)
    assert path.read_bytes() == before[0] + b"gpu.0.mig.pending=1\n"


def test_gpu_without_mig_has_no_profiles(nvml):
    nvml("pcie-l40s.conf")
    h = handle()
    for call in (lambda: pynvml.nvmlDeviceGetGpuInstanceProfileInfo(h, 0), lambda: placements(h, P1G),
                 lambda: pynvml.nvmlDeviceCreateGpuInstance(h, P1G)):
        with pytest.raises(pynvml.NVMLError_NotSupported):
            call()


def test_remaining_capacity_follows_occupied_slices(nvml):
    h100_mig_on(nvml)
    h = handle()
    create_gi(h, P3G, 0)  # memory slices 0-3
    remaining = {pid: pynvml.nvmlDeviceGetGpuInstanceRemainingCapacity(h, pid) for pid in PLACEMENTS}
    assert remaining == {P1G: 3, P1G_ME: 1, P1G_2MEM: 2, P2G: 1, P3G: 1, P4G: 0, P7G: 0}
    create_gi(h, P1G_ME)
    assert pynvml.nvmlDeviceGetGpuInstanceRemainingCapacity(h, P1G_ME) == 0  # one media-extension instance
    assert pynvml.nvmlDeviceGetGpuInstanceRemainingCapacity(h, P1G) == 2


# --------------------------------------------------------------------------- creating GPU instances


def test_create_without_placement_fills_like_nvidia_smi(nvml):
    path = h100_mig_on(nvml)
    h = handle()
    created = [gi_info(create_gi(h, P1G)) for _n in range(7)]
    # nvidia-smi mig -cgi 19 x7 on an empty H100: GPU instance ids 13, 11, 12, 7, 8, 9, 10
    assert [c[0] for c in created] == [13, 11, 12, 7, 8, 9, 10]
    assert all(profile == P1G and place == (gid - 7, 1) for gid, profile, place in created)
    assert gpu_instances(h, P1G) == list(range(7, 14))
    assert pynvml.nvmlDeviceGetGpuInstanceRemainingCapacity(h, P1G) == 0
    before = snapshot(path)
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        create_gi(h, P1G)
    assert snapshot(path) == before
    lines = path.read_text().splitlines()
    assert "gpu.0.gi.13.profile=19" in lines and "gpu.0.gi.13.start=6" in lines


def test_create_with_placement(nvml):
    h100_mig_on(nvml)
    h = handle()
    gi = create_gi(h, P3G, 4)
    assert gi_info(gi) == (2, P3G, (4, 4))
    assert gi_info(create_gi(h, P2G, 0)) == (3, P2G, (0, 2))
    assert gi_info(create_gi(h, P1G, 2)) == (9, P1G, (2, 1))
    assert addr(pynvml.nvmlDeviceGetGpuInstanceById(h, 2)) == addr(gi)
    assert addr(pynvml.nvmlGpuInstanceGetInfo(gi).device) == addr(h)
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetGpuInstanceById(h, 1)


@pytest.mark.parametrize(
    ("existing", "profile_id", "start", "error"),
    [
        pytest.param([(P3G, 4)], P2G, 4, pynvml.NVMLError_InsufficientResources, id="overlap-placement"),
        pytest.param([(P1G, 6)], P1G_2MEM, 6, pynvml.NVMLError_InsufficientResources, id="overlap-partial"),
        pytest.param([(P7G, 0)], P1G, None, pynvml.NVMLError_InsufficientResources, id="full-gpu"),
        pytest.param([(P4G, 0), (P3G, 4)], P1G, None, pynvml.NVMLError_InsufficientResources, id="no-free-slice"),
        pytest.param([(P1G_ME, 0)], P1G_ME, 3, pynvml.NVMLError_InsufficientResources, id="instance-count"),
        pytest.param([(P3G, 0), (P3G, 4)], P3G, None, pynvml.NVMLError_InsufficientResources, id="second-3g-full"),
        pytest.param([], P3G, 2, pynvml.NVMLError_InvalidArgument, id="not-a-placement"),
        pytest.param([], P1G, 7, pynvml.NVMLError_InvalidArgument, id="slice-7-is-not-1g"),
        pytest.param([], 1, None, pynvml.NVMLError_NotSupported, id="unknown-profile-id"),
    ],
)
def test_rejected_creation_leaves_fixture_untouched(nvml, existing, profile_id, start, error):
    path = h100_mig_on(nvml)
    h = handle()
    for pid, at in existing:
        create_gi(h, pid, at)
    before = snapshot(path)
    with pytest.raises(error):
        create_gi(h, profile_id, start)
    assert snapshot(path) == before


def test_wrong_placement_size_is_invalid(nvml):
    path = h100_mig_on(nvml)
    before = snapshot(path)
    place = pynvml.c_nvmlGpuInstancePlacement_t(0, 2)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceCreateGpuInstanceWithPlacement(handle(), P3G, ctypes.byref(place))
    assert snapshot(path) == before


# --------------------------------------------------------------------------- compute instances and MIG devices


@pytest.mark.parametrize(
    ("gi_profile", "offered"),
    [
        (P1G, {CI_1: (1, 1, [(0, 1)])}),
        (P2G, {CI_1: (1, 2, [(0, 1), (1, 1)]), CI_2: (2, 1, [(0, 2)])}),
        (P3G, {CI_1: (1, 3, [(0, 1), (1, 1), (2, 1)]), CI_2: (2, 1, [(0, 2)]), CI_3: (3, 1, [(0, 3)])}),
        (P7G, {CI_1: (1, 7, [(s, 1) for s in range(7)]), CI_2: (2, 3, [(0, 2), (2, 2), (4, 2)]),
               CI_3: (3, 2, [(0, 3), (4, 3)]), CI_4: (4, 1, [(0, 4)]), CI_7: (7, 1, [(0, 7)])}),
    ],
)
def test_compute_instance_profiles(nvml, gi_profile, offered):
    h100_mig_on(nvml)
    gi = create_gi(handle(), gi_profile)
    for profile in range(pynvml.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):
        if profile not in offered:
            with pytest.raises(pynvml.NVMLError_NotSupported):
                pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, profile, SHARED)
            continue
        slices, count, places = offered[profile]
        info = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, profile, SHARED)
        assert (info.id, info.sliceCount, info.instanceCount) == (profile, slices, count)
        assert pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, profile, SHARED, version=1).sliceCount == slices
        assert ci_placements(gi, profile) == places
        assert pynvml.nvmlGpuInstanceGetComputeInstanceRemainingCapacity(gi, profile) == count
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, CI_1, 1)


def test_full_compute_instance_becomes_a_mig_device(nvml):
    path = h100_mig_on(nvml)
    h = handle()
    assert mig_devices(h) == []
    gi = create_gi(h, P3G, 4)
    assert mig_devices(h) == []  # a GPU instance alone is not a MIG device
    ci = create_ci(gi, CI_3)
    info = pynvml.nvmlComputeInstanceGetInfo(ci)
    assert (info.id, info.profileId, info.placement.start, info.placement.size) == (0, CI_3, 0, 3)
    assert addr(info.gpuInstance) == addr(gi) and addr(info.device) == addr(h)
    profile = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, CI_3, SHARED)
    assert (profile.name, profile.multiprocessorCount) == ("MIG 3g.40gb", 60)
    assert compute_instances(gi, CI_3) == [0]
    assert addr(pynvml.nvmlGpuInstanceGetComputeInstanceById(gi, 0)) == addr(ci)
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        create_ci(gi, CI_1)  # the compute slices are taken

    reinit()
    (mig,) = mig_devices(handle())
    name, uuid, gi_id, ci_id, total = describe(mig)
    assert (name, gi_id, ci_id, total) == ("NVIDIA H100 80GB HBM3 MIG 3g.40gb", 2, 0, 40448)
    assert len(uuid) == 40 and uuid.startswith("MIG-") and [len(p) for p in uuid[4:].split("-")] == [8, 4, 4, 4, 12]
    assert f"gpu.0.gi.2.ci.0.uuid={uuid}" in path.read_text().splitlines()
    assert pynvml.nvmlDeviceGetGpuInstanceId(pynvml.nvmlDeviceGetHandleByUUID(uuid)) == 2
    attrs = pynvml.nvmlDeviceGetAttributes(mig)
    assert (attrs.gpuInstanceSliceCount, attrs.computeInstanceSliceCount, attrs.memorySizeMB,
            attrs.multiprocessorCount) == (3, 3, 40448, 60)


def test_partial_compute_instances(nvml):
    h100_mig_on(nvml)
    h = handle()
    gi = create_gi(h, P7G)
    assert gi_info(gi) == (0, P7G, (0, 8))
    first = create_ci(gi, CI_3)
    second = create_ci(gi, CI_2, start=4, size=2)
    third = create_ci(gi, CI_1)
    places = [(c.id, c.placement.start, c.placement.size)
              for c in map(pynvml.nvmlComputeInstanceGetInfo, (first, second, third))]
    assert places == [(0, 0, 3), (1, 4, 2), (2, 3, 1)]
    assert pynvml.nvmlGpuInstanceGetComputeInstanceRemainingCapacity(gi, CI_1) == 1  # slice 6
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        create_ci(gi, CI_2, start=1, size=2)
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        create_ci(gi, CI_2, start=2, size=2)
    names = [pynvml.nvmlDeviceGetName(m).rsplit(" ", 1)[1] for m in mig_devices(h)]
    assert names == ["3c.7g.80gb", "2c.7g.80gb", "1c.7g.80gb"]
    assert pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, CI_2, SHARED).multiprocessorCount == 32


# --------------------------------------------------------------------------- destroying


def test_destroy_round_trip_restores_the_fixture(nvml):
    path = h100_mig_on(nvml, "gpu.*.gi.*.memory.used_mib=13")
    original = path.read_text()
    h = handle()
    gi = create_gi(h, P2G)
    ci = create_ci(gi, CI_2)
    gi_id = gi_info(gi)[0]
    with pytest.raises(pynvml.NVMLError_InUse):
        pynvml.nvmlGpuInstanceDestroy(gi)  # it still has a compute instance
    (mig,) = mig_devices(h)
    assert pynvml.nvmlDeviceGetMemoryInfo(mig).used == 13 * MIB
    pynvml.nvmlComputeInstanceDestroy(ci)
    assert mig_devices(h) == [] and compute_instances(gi, CI_2) == []
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlComputeInstanceGetInfo(ci)  # the handle died with the instance
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetName(mig)
    pynvml.nvmlGpuInstanceDestroy(gi)
    assert path.read_text() == original
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlGpuInstanceGetInfo(gi)
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetGpuInstanceById(h, gi_id)


def test_a100_fixture_instances_and_busy_destroy(nvml):
    path = nvml("dgx-a100-mig.conf")
    gpu0, gpu1 = handle(0), handle(1)
    assert gpu_instances(gpu0, P1G) == list(range(7, 14))
    assert [gi_info(g) for g in map(lambda i: pynvml.nvmlDeviceGetGpuInstanceById(gpu1, i), (2, 3, 9))] == [
        (2, P3G, (4, 4)), (3, P2G, (0, 2)), (9, P1G, (2, 1))]
    assert pynvml.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu1, P1G) == 1  # slice 3
    assert pynvml.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu1, P3G) == 0
    busy_gi = pynvml.nvmlDeviceGetGpuInstanceById(gpu1, 2)
    busy_ci = pynvml.nvmlGpuInstanceGetComputeInstanceById(busy_gi, 0)
    before = snapshot(path)
    with pytest.raises(pynvml.NVMLError_InUse):
        pynvml.nvmlComputeInstanceDestroy(busy_ci)  # python3, pid 48213, runs on it
    with pytest.raises(pynvml.NVMLError_InUse):
        pynvml.nvmlGpuInstanceDestroy(busy_gi)
    assert snapshot(path) == before
    idle = pynvml.nvmlDeviceGetGpuInstanceById(gpu1, 3)
    pynvml.nvmlComputeInstanceDestroy(pynvml.nvmlGpuInstanceGetComputeInstanceById(idle, 0))
    pynvml.nvmlGpuInstanceDestroy(idle)
    reinit()
    assert [pynvml.nvmlDeviceGetGpuInstanceId(m) for m in mig_devices(handle(1))] == [2, 9]
    assert not any(line.startswith("gpu.1.gi.3.") for line in path.read_text().splitlines())


def test_process_on_a_gpu_instance_without_compute_instance_blocks_destroy(nvml):
    path = h100_mig_on(nvml, "gpu.0.process.count=1", "gpu.0.process.0.pid=4242", "gpu.0.process.0.gi_id=5")
    gi = create_gi(handle(), P2G, 4)  # GPU instance 5
    before = snapshot(path)
    with pytest.raises(pynvml.NVMLError_InUse):
        pynvml.nvmlGpuInstanceDestroy(gi)
    assert snapshot(path) == before


# --------------------------------------------------------------------------- persistence and guards


def test_instances_persist_into_a_fresh_process(nvml):
    path = h100_mig_on(nvml)
    h = handle()
    create_ci(create_gi(h, P4G), CI_4)
    create_ci(create_gi(h, P1G_2MEM), CI_1)
    expected = [list(describe(m)) for m in mig_devices(h)]
    code = (
        "import json, pynvml\n"
        "pynvml.nvmlInit()\n"
        "h = pynvml.nvmlDeviceGetHandleByIndex(0)\n"
        "out = []\n"
        "for i in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(h)):\n"
        "    try:\n"
        "        m = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, i)\n"
        "    except pynvml.NVMLError_NotFound:\n"
        "        continue\n"
        "    out.append([pynvml.nvmlDeviceGetName(m), pynvml.nvmlDeviceGetUUID(m),\n"
        "                pynvml.nvmlDeviceGetGpuInstanceId(m), pynvml.nvmlDeviceGetComputeInstanceId(m),\n"
        "                pynvml.nvmlDeviceGetMemoryInfo(m).total // 1048576])\n"
        "print(json.dumps(out))\n"
    )
    env = dict(os.environ, LD_LIBRARY_PATH=str(BUILD_DIR), FAKE_NVML_FIXTURE=str(path))
    env.pop("LD_PRELOAD", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == expected
    assert [e[0].rsplit(" ", 1)[1] for e in expected] == ["4g.40gb", "1g.20gb"]
    assert [e[2] for e in expected] == [1, 5]  # 4g on slices 0-3, 1g.20gb best fit on 4-5


@pytest.mark.parametrize(
    ("extra", "call", "error"),
    [
        pytest.param(("setters_error=NO_PERMISSION",), lambda h: create_gi(h, P1G),
                     pynvml.NVMLError_NoPermission, id="create-non-root"),
        pytest.param(("setters_error=NO_PERMISSION", "gpu.0.gi.0.profile=0", "gpu.0.gi.0.ci.0.profile=4"),
                     lambda h: pynvml.nvmlComputeInstanceDestroy(
                         pynvml.nvmlGpuInstanceGetComputeInstanceById(pynvml.nvmlDeviceGetGpuInstanceById(h, 0), 0)),
                     pynvml.NVMLError_NoPermission, id="destroy-non-root"),
        pytest.param(("drop_symbols=nvmlDeviceCreateGpuInstance",), lambda h: create_gi(h, P1G),
                     pynvml.NVMLError_FunctionNotFound, id="dropped-symbol"),
        pytest.param(("gpu.0.lost=1",), lambda h: create_gi(h, P1G), pynvml.NVMLError_GpuIsLost, id="lost-gpu"),
        pytest.param(("gpu.0.gi.1.profile=9", "gpu.0.gi.2.profile=5"), lambda h: create_gi(h, P1G),
                     pynvml.NVMLError_Unknown, id="broken-fixture-overlap"),
        pytest.param(("gpu.0.gi.3.profile=9",), lambda h: create_gi(h, P1G),
                     pynvml.NVMLError_Unknown, id="broken-fixture-id"),
        pytest.param(("gpu.0.mig.profiles=b200",), lambda h: create_gi(h, P1G),
                     pynvml.NVMLError_Unknown, id="unknown-table"),
    ],
)
def test_guards_leave_fixture_untouched(nvml, extra, call, error):
    path = h100_mig_on(nvml, *extra)
    before = snapshot(path)
    with pytest.raises(error):
        call(handle())
    assert snapshot(path) == before


def test_rejected_compute_instance_calls_leave_fixture_untouched(nvml):
    path = h100_mig_on(nvml)
    gi = create_gi(handle(), P1G)
    create_ci(gi, CI_1)
    before = snapshot(path)
    for call, error in (
        (lambda: create_ci(gi, CI_2), pynvml.NVMLError_NotSupported),
        (lambda: create_ci(gi, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_COUNT), pynvml.NVMLError_InvalidArgument),
        (lambda: create_ci(gi, CI_1), pynvml.NVMLError_InsufficientResources),
        (lambda: pynvml.nvmlGpuInstanceDestroy(gi), pynvml.NVMLError_InUse),
    ):
        with pytest.raises(error):
            call()
        assert snapshot(path) == before


def test_mig_queries_never_modify_the_fixture(nvml):
    path = nvml("dgx-a100-mig.conf")
    before = snapshot(path)
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = handle(i)
        for call in (
            lambda h=h: [pynvml.nvmlDeviceGetGpuInstanceProfileInfo(h, index) for index in range(10)],
            lambda h=h: [placements(h, pid) for pid in PLACEMENTS],
            lambda h=h: [pynvml.nvmlDeviceGetGpuInstanceRemainingCapacity(h, pid) for pid in PLACEMENTS],
            lambda h=h: [gpu_instances(h, pid) for pid in PLACEMENTS],
            lambda h=h: [(*describe(m), pynvml.nvmlDeviceGetAttributes(m).multiprocessorCount) for m in mig_devices(h)],
        ):
            try:
                call()
            except pynvml.NVMLError:
                pass
        for gid in range(15):
            try:
                gi = pynvml.nvmlDeviceGetGpuInstanceById(h, gid)
            except pynvml.NVMLError:
                continue
            gi_info(gi)
            for profile in (CI_1, CI_2, CI_3):
                try:
                    ci_placements(gi, profile)
                    pynvml.nvmlGpuInstanceGetComputeInstanceRemainingCapacity(gi, profile)
                    compute_instances(gi, profile)
                except pynvml.NVMLError_NotSupported:
                    pass
    assert snapshot(path) == before
