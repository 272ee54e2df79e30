/*
 * Fake NVML, MIG GPU and compute instances (profiles, placements, create,
 * destroy, enumerate). See fakenvml.h.
 */
#include "fakenvml.h"

/* ------------------------------------------------------------------------ */
/* MIG GPU and compute instances                                            */
/* ------------------------------------------------------------------------ */

#define ANY_CI UINT_MAX

/* Whether a compute process runs on GPU instance gi (and compute instance ci, unless ANY_CI). */
static nvmlReturn_t instance_busy(unsigned int gpu, unsigned int gi, unsigned int ci, int *busy)
{
    nvmlProcessInfo_t info;
    unsigned int total, p;
    *busy = 0;
    if (gpu_uint(gpu, "process.count", &total) != NVML_SUCCESS)
        return NVML_SUCCESS;
    for (p = 0; p < total; p++) {
        nvmlReturn_t rc = read_process(gpu, COMPUTE_PROCESS, p, &info);
        if (rc == NVML_ERROR_NOT_FOUND)
            continue;
        RETURN_IF_ERROR(rc);
        if (info.gpuInstanceId == gi && (ci == ANY_CI || info.computeInstanceId == ci))
            *busy = 1;
    }
    return NVML_SUCCESS;
}

/*
 * Checks shared by the calls on a GPU instance handle: symbol present,
 * initialised, a handle this library gave out, GPU not lost, MIG on, and the
 * instance still there (a destroyed one's handle is INVALID_ARGUMENT).
 */
static nvmlReturn_t gi_enter(const char *symbol, nvmlGpuInstance_t handle, struct mig_state *st,
                             struct mig_gi **gi)
{
    nvmlReturn_t rc = api_enter(symbol);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!IN_ARRAY(handle, gi_handles) || handle->gpu >= gpu_count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (gpu_is_lost(handle->gpu))
        return NVML_ERROR_GPU_IS_LOST;
    RETURN_IF_ERROR(mig_enter(handle->gpu, st));
    if (!st->gi[handle->id].exists)
        return NVML_ERROR_INVALID_ARGUMENT;
    *gi = &st->gi[handle->id];
    return NVML_SUCCESS;
}

static nvmlReturn_t ci_enter(const char *symbol, nvmlComputeInstance_t handle,
                             struct mig_state *st, struct mig_gi **gi, struct mig_ci **ci)
{
    nvmlReturn_t rc = api_enter(symbol);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!IN_ARRAY(handle, ci_handles) || handle->gpu >= gpu_count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (gpu_is_lost(handle->gpu))
        return NVML_ERROR_GPU_IS_LOST;
    RETURN_IF_ERROR(mig_enter(handle->gpu, st));
    if (!st->gi[handle->gi].exists || !st->gi[handle->gi].ci[handle->id].exists)
        return NVML_ERROR_INVALID_ARGUMENT;
    *gi = &st->gi[handle->gi];
    *ci = &st->gi[handle->gi].ci[handle->id];
    return NVML_SUCCESS;
}

#define GI_ENTER(handle, st, gi)                                                       \
    struct mig_state st;                                                               \
    struct mig_gi *gi = NULL;                                                          \
    do {                                                                               \
        nvmlReturn_t rc_ = gi_enter(__func__, (handle), &st, &gi);                     \
        if (rc_ != NVML_SUCCESS)                                                       \
            return rc_;                                                                \
    } while (0)

#define CI_ENTER(handle, st, gi, ci)                                                   \
    struct mig_state st;                                                               \
    struct mig_gi *gi = NULL;                                                          \
    struct mig_ci *ci = NULL;                                                          \
    do {                                                                               \
        nvmlReturn_t rc_ = ci_enter(__func__, (handle), &st, &gi, &ci);                \
        if (rc_ != NVML_SUCCESS)                                                       \
            return rc_;                                                                \
    } while (0)

/*
 * A GPU instance profile by NVML_GPU_INSTANCE_PROFILE_* (by_id 0) or by the
 * profile id NVML reports (by_id 1).  NVML answers NOT_SUPPORTED while MIG
 * mode is off and for a profile the board does not offer.
 */
static nvmlReturn_t gi_profile_lookup(const struct fake_device *dev, int by_id, unsigned int which,
                                      const struct gi_profile **out)
{
    const struct mig_model *model;
    if (!by_id && which >= NVML_GPU_INSTANCE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(mig_model_of(dev->gpu, &model));
    if (!mig_enabled(dev->gpu))
        return NVML_ERROR_NOT_SUPPORTED;
    *out = by_id ? profile_by_id(model, which) : profile_by_index(model, which);
    return *out ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

static void gi_profile_info(const struct gi_profile *p, nvmlGpuInstanceProfileInfo_t *info)
{
    memset(info, 0, sizeof(*info));
    info->id = p->id;
    info->isP2pSupported = 0;
    info->sliceCount = p->slices;
    info->instanceCount = p->instances;
    info->multiprocessorCount = p->sm;
    info->copyEngineCount = p->ce;
    info->decoderCount = p->dec;
    info->encoderCount = p->enc;
    info->jpegCount = p->jpeg;
    info->ofaCount = p->ofa;
    info->memorySizeMB = p->memory_mib;
}

static void gi_profile_info_v2(const struct gi_profile *p, nvmlGpuInstanceProfileInfo_v2_t *info)
{
    nvmlGpuInstanceProfileInfo_t v1;
    gi_profile_info(p, &v1);
    memset(info, 0, sizeof(*info));
    info->version = nvmlGpuInstanceProfileInfo_v2;
    info->id = v1.id;
    info->isP2pSupported = v1.isP2pSupported;
    info->sliceCount = v1.sliceCount;
    info->instanceCount = v1.instanceCount;
    info->multiprocessorCount = v1.multiprocessorCount;
    info->copyEngineCount = v1.copyEngineCount;
    info->decoderCount = v1.decoderCount;
    info->encoderCount = v1.encoderCount;
    info->jpegCount = v1.jpegCount;
    info->ofaCount = v1.ofaCount;
    info->memorySizeMB = v1.memorySizeMB;
    snprintf(info->name, sizeof(info->name), "MIG %s", p->name);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                 nvmlGpuInstanceProfileInfo_t *info)
{
    const struct gi_profile *p;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(gi_profile_lookup(dev, 0, profile, &p));
    gi_profile_info(p, info);
    return NVML_SUCCESS;
}

/* The versioned form: info->version must be nvmlGpuInstanceProfileInfo_v2. */
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                  nvmlGpuInstanceProfileInfo_v2_t *info)
{
    const struct gi_profile *p;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (info->version != nvmlGpuInstanceProfileInfo_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    RETURN_IF_ERROR(gi_profile_lookup(dev, 0, profile, &p));
    gi_profile_info_v2(p, info);
    return NVML_SUCCESS;
}

/* The same, looked up by the profile id (19 for 1g.10gb) rather than NVML_GPU_INSTANCE_PROFILE_*. */
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoByIdV(nvmlDevice_t device, unsigned int profileId,
                                                      nvmlGpuInstanceProfileInfo_v2_t *info)
{
    const struct gi_profile *p;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (info->version != nvmlGpuInstanceProfileInfo_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    RETURN_IF_ERROR(gi_profile_lookup(dev, 1, profileId, &p));
    gi_profile_info_v2(p, info);
    return NVML_SUCCESS;
}

/*
 * Every placement of the profile, occupied or not, and (unlike the other MIG
 * queries) whether MIG mode is on or off.  placements NULL: only the count.
 */
nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device,
                                                           unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t *placements,
                                                           unsigned int *count)
{
    const struct mig_model *model;
    const struct gi_profile *p;
    unsigned int s, n = 0;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(mig_model_of(dev->gpu, &model));
    p = profile_by_id(model, profileId);
    if (!p)
        return NVML_ERROR_NOT_SUPPORTED;
    for (s = 0; s < MIG_MEMORY_SLICES; s++) {
        if (!(p->starts & (1u << s)))
            continue;
        if (placements) {
            placements[n].start = s;
            placements[n].size = p->size;
        }
        n++;
    }
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device,
                                                       unsigned int profileId,
                                                       unsigned int *count)
{
    const struct gi_profile *p;
    struct mig_state st;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(mig_enter(dev->gpu, &st));
    p = profile_by_id(st.model, profileId);
    if (!p)
        return NVML_ERROR_NOT_SUPPORTED;
    *count = gi_remaining(&st, p);
    return NVML_SUCCESS;
}

/*
 * A new GPU instance takes a free placement of its profile (the given one,
 * or NVML's choice); an occupied placement or a profile at its instance count
 * is INSUFFICIENT_RESOURCES, a placement the profile does not have
 * INVALID_ARGUMENT.  Its id follows from the placement.  Written:
 * gpu.<i>.gi.<id>.profile and .start.
 */
static nvmlReturn_t gi_create(const struct fake_device *dev, unsigned int profile_id,
                              const nvmlGpuInstancePlacement_t *placement,
                              nvmlGpuInstance_t *out)
{
    char k_cis[64], k_profile[64], k_start[64], v_profile[16], v_start[16];
    struct fx_edit edits[3];
    const struct gi_profile *p;
    struct mig_state st;
    unsigned int start = 0, id;

    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(mig_enter(dev->gpu, &st));
    p = profile_by_id(st.model, profile_id);
    if (!p)
        return NVML_ERROR_NOT_SUPPORTED;
    if (placement) {
        if (placement->size != p->size || placement->start >= MIG_MEMORY_SLICES ||
            !(p->starts & (1u << placement->start)))
            return NVML_ERROR_INVALID_ARGUMENT;
        start = placement->start;
        if (gi_used_slices(&st) & slice_mask(start, p->size))
            return NVML_ERROR_INSUFFICIENT_RESOURCES;
    } else if (!gi_pick_start(&st, p, &start)) {
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    if (gi_count(&st, p) >= p->instances)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;

    id = gi_id_of(start, p->size);
    snprintf(k_cis, sizeof(k_cis), "gpu.%u.gi.%u.ci.", dev->gpu, id);
    snprintf(k_profile, sizeof(k_profile), "gpu.%u.gi.%u.profile", dev->gpu, id);
    snprintf(k_start, sizeof(k_start), "gpu.%u.gi.%u.start", dev->gpu, id);
    snprintf(v_profile, sizeof(v_profile), "%u", p->id);
    snprintf(v_start, sizeof(v_start), "%u", start);
    edits[0] = (struct fx_edit){k_cis, NULL, 1}; /* a new instance has no compute instances */
    edits[1] = (struct fx_edit){k_profile, v_profile, 0};
    edits[2] = (struct fx_edit){k_start, v_start, 0};
    RETURN_IF_ERROR(commit(3, edits));
    *out = &gi_handles[dev->gpu][id];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                         nvmlGpuInstance_t *gpuInstance)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return gi_create(dev, profileId, NULL, gpuInstance);
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t *placement,
                                                      nvmlGpuInstance_t *gpuInstance)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!placement)
        return NVML_ERROR_INVALID_ARGUMENT;
    return gi_create(dev, profileId, placement, gpuInstance);
}

/* IN_USE while compute instances exist or a process runs on it; removes gpu.<i>.gi.<id>.*. */
nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance)
{
    struct fx_edit edit;
    char prefix[48];
    unsigned int c;
    int busy;
    GI_ENTER(gpuInstance, st, gi);
    for (c = 0; c < MAX_CI_IDS; c++)
        if (gi->ci[c].exists)
            return NVML_ERROR_IN_USE;
    RETURN_IF_ERROR(instance_busy(gpuInstance->gpu, gpuInstance->id, ANY_CI, &busy));
    if (busy)
        return NVML_ERROR_IN_USE;
    snprintf(prefix, sizeof(prefix), "gpu.%u.gi.%u.", gpuInstance->gpu, gpuInstance->id);
    edit = (struct fx_edit){prefix, NULL, 1};
    return commit(1, &edit);
}

/* The existing GPU instances of a profile, by id; the buffer holds instanceCount handles. */
nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                       nvmlGpuInstance_t *gpuInstances, unsigned int *count)
{
    const struct gi_profile *p;
    struct mig_state st;
    unsigned int g, n = 0;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!gpuInstances || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(mig_enter(dev->gpu, &st));
    p = profile_by_id(st.model, profileId);
    if (!p)
        return NVML_ERROR_NOT_SUPPORTED;
    for (g = 0; g < MAX_GI_IDS; g++)
        if (st.gi[g].exists && st.gi[g].profile == p)
            gpuInstances[n++] = &gi_handles[dev->gpu][g];
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                          nvmlGpuInstance_t *gpuInstance)
{
    struct mig_state st;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!gpuInstance)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(mig_enter(dev->gpu, &st));
    if (id >= MAX_GI_IDS || !st.gi[id].exists)
        return NVML_ERROR_NOT_FOUND;
    *gpuInstance = &gi_handles[dev->gpu][id];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info)
{
    GI_ENTER(gpuInstance, st, gi);
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(info, 0, sizeof(*info));
    info->device = &gpu_devs[gpuInstance->gpu];
    info->id = gpuInstance->id;
    info->profileId = gi->profile->id;
    info->placement.start = gi->start;
    info->placement.size = gi->profile->size;
    return NVML_SUCCESS;
}

/* NVML_COMPUTE_INSTANCE_PROFILE_* out of range: INVALID_ARGUMENT; not offered here: NOT_SUPPORTED. */
static nvmlReturn_t ci_profile_check(const struct mig_gi *gi, unsigned int profile)
{
    if (profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    return ci_offered(gi->profile->slices, profile) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

/* Compute instances share their GPU instance's copy engines, decoders, encoders, JPEG and OFA. */
static void ci_profile_info(const struct mig_state *st, const struct mig_gi *gi,
                            unsigned int profile, nvmlComputeInstanceProfileInfo_t *info)
{
    memset(info, 0, sizeof(*info));
    info->id = profile;
    info->sliceCount = ci_profile_slices[profile];
    info->instanceCount = ci_placement_count(gi->profile->slices, ci_profile_slices[profile]);
    info->multiprocessorCount = ci_sm_count(st, gi, profile);
    info->sharedCopyEngineCount = gi->profile->ce;
    info->sharedDecoderCount = gi->profile->dec;
    info->sharedEncoderCount = gi->profile->enc;
    info->sharedJpegCount = gi->profile->jpeg;
    info->sharedOfaCount = gi->profile->ofa;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance,
                                                          unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t *info)
{
    GI_ENTER(gpuInstance, st, gi);
    if (!info || engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(ci_profile_check(gi, profile));
    ci_profile_info(&st, gi, profile, info);
    return NVML_SUCCESS;
}

/* The versioned form: info->version must be nvmlComputeInstanceProfileInfo_v2. */
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(nvmlGpuInstance_t gpuInstance,
                                                           unsigned int profile,
                                                           unsigned int engProfile,
                                                           nvmlComputeInstanceProfileInfo_v2_t *info)
{
    nvmlComputeInstanceProfileInfo_t v1;
    char name[48];
    GI_ENTER(gpuInstance, st, gi);
    if (!info || engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (info->version != nvmlComputeInstanceProfileInfo_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    RETURN_IF_ERROR(ci_profile_check(gi, profile));
    ci_profile_info(&st, gi, profile, &v1);
    ci_name(gi, profile, name, sizeof(name));
    memset(info, 0, sizeof(*info));
    info->version = nvmlComputeInstanceProfileInfo_v2;
    info->id = v1.id;
    info->sliceCount = v1.sliceCount;
    info->instanceCount = v1.instanceCount;
    info->multiprocessorCount = v1.multiprocessorCount;
    info->sharedCopyEngineCount = v1.sharedCopyEngineCount;
    info->sharedDecoderCount = v1.sharedDecoderCount;
    info->sharedEncoderCount = v1.sharedEncoderCount;
    info->sharedJpegCount = v1.sharedJpegCount;
    info->sharedOfaCount = v1.sharedOfaCount;
    snprintf(info->name, sizeof(info->name), "MIG %s", name);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(nvmlGpuInstance_t gpuInstance,
                                                                unsigned int profileId,
                                                                unsigned int *count)
{
    GI_ENTER(gpuInstance, st, gi);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(ci_profile_check(gi, profileId));
    *count = ci_remaining(gi, profileId);
    return NVML_SUCCESS;
}

/* Placements in compute slices of the GPU instance; placements NULL: only the count. */
nvmlReturn_t nvmlGpuInstanceGetComputeInstancePossiblePlacements(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstancePlacement_t *placements, unsigned int *count)
{
    unsigned int s, n = 0, slices;
    GI_ENTER(gpuInstance, st, gi);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(ci_profile_check(gi, profileId));
    slices = ci_profile_slices[profileId];
    for (s = 0; s < gi->profile->slices; s++) {
        if (!ci_start_ok(gi->profile->slices, slices, s))
            continue;
        if (placements) {
            placements[n].start = s;
            placements[n].size = slices;
        }
        n++;
    }
    *count = n;
    return NVML_SUCCESS;
}

/*
 * A new compute instance takes free compute slices of its GPU instance (the
 * given placement, else the lowest free one) and the lowest free id; it
 * becomes a MIG device.  Written: gpu.<i>.gi.<g>.ci.<id>.profile, .start and
 * .uuid.
 */
static nvmlReturn_t ci_create(nvmlGpuInstance_t handle, struct mig_gi *gi, unsigned int profile,
                              const nvmlComputeInstancePlacement_t *placement,
                              nvmlComputeInstance_t *out)
{
    char k_profile[64], k_start[64], k_uuid[64], v_profile[16], v_start[16], v_uuid[48];
    unsigned int n = gi->profile->slices, slices, used = ci_used_slices(gi), start, id;
    struct fx_edit edits[3];

    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(ci_profile_check(gi, profile));
    slices = ci_profile_slices[profile];
    if (placement) {
        if (placement->size != slices || placement->start >= n ||
            !ci_start_ok(n, slices, placement->start))
            return NVML_ERROR_INVALID_ARGUMENT;
        start = placement->start;
        if (used & slice_mask(start, slices))
            return NVML_ERROR_INSUFFICIENT_RESOURCES;
    } else {
        for (start = 0; start < n; start++)
            if (ci_start_ok(n, slices, start) && !(used & slice_mask(start, slices)))
                break;
        if (start >= n)
            return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    for (id = 0; id < MAX_CI_IDS && gi->ci[id].exists; id++)
        ;
    if (id >= MAX_CI_IDS)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;

    snprintf(k_profile, sizeof(k_profile), "gpu.%u.gi.%u.ci.%u.profile", handle->gpu, handle->id, id);
    snprintf(k_start, sizeof(k_start), "gpu.%u.gi.%u.ci.%u.start", handle->gpu, handle->id, id);
    snprintf(k_uuid, sizeof(k_uuid), "gpu.%u.gi.%u.ci.%u.uuid", handle->gpu, handle->id, id);
    snprintf(v_profile, sizeof(v_profile), "%u", profile);
    snprintf(v_start, sizeof(v_start), "%u", start);
    mig_uuid_for(handle->gpu, handle->id, id, v_uuid, sizeof(v_uuid));
    edits[0] = (struct fx_edit){k_profile, v_profile, 0};
    edits[1] = (struct fx_edit){k_start, v_start, 0};
    edits[2] = (struct fx_edit){k_uuid, v_uuid, 0};
    RETURN_IF_ERROR(commit(3, edits));
    *out = &ci_handles[handle->gpu][handle->id][id];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance,
                                                  unsigned int profileId,
                                                  nvmlComputeInstance_t *computeInstance)
{
    GI_ENTER(gpuInstance, st, gi);
    return ci_create(gpuInstance, gi, profileId, NULL, computeInstance);
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    const nvmlComputeInstancePlacement_t *placement, nvmlComputeInstance_t *computeInstance)
{
    GI_ENTER(gpuInstance, st, gi);
    if (!placement)
        return NVML_ERROR_INVALID_ARGUMENT;
    return ci_create(gpuInstance, gi, profileId, placement, computeInstance);
}

/* IN_USE while a process runs on it; removes gpu.<i>.gi.<g>.ci.<id>.*. */
nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance)
{
    struct fx_edit edit;
    char prefix[64];
    int busy;
    CI_ENTER(computeInstance, st, gi, ci);
    RETURN_IF_ERROR(instance_busy(computeInstance->gpu, computeInstance->gi, computeInstance->id,
                                  &busy));
    if (busy)
        return NVML_ERROR_IN_USE;
    snprintf(prefix, sizeof(prefix), "gpu.%u.gi.%u.ci.%u.", computeInstance->gpu,
             computeInstance->gi, computeInstance->id);
    edit = (struct fx_edit){prefix, NULL, 1};
    return commit(1, &edit);
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                unsigned int profileId,
                                                nvmlComputeInstance_t *computeInstances,
                                                unsigned int *count)
{
    unsigned int c, n = 0;
    GI_ENTER(gpuInstance, st, gi);
    if (!computeInstances || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(ci_profile_check(gi, profileId));
    for (c = 0; c < MAX_CI_IDS; c++)
        if (gi->ci[c].exists && gi->ci[c].profile == profileId)
            computeInstances[n++] = &ci_handles[gpuInstance->gpu][gpuInstance->id][c];
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                   nvmlComputeInstance_t *computeInstance)
{
    GI_ENTER(gpuInstance, st, gi);
    if (!computeInstance)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (id >= MAX_CI_IDS || !gi->ci[id].exists)
        return NVML_ERROR_NOT_FOUND;
    *computeInstance = &ci_handles[gpuInstance->gpu][gpuInstance->id][id];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                           nvmlComputeInstanceInfo_t *info)
{
    CI_ENTER(computeInstance, st, gi, ci);
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(info, 0, sizeof(*info));
    info->device = &gpu_devs[computeInstance->gpu];
    info->gpuInstance = &gi_handles[computeInstance->gpu][computeInstance->gi];
    info->id = computeInstance->id;
    info->profileId = ci->profile;
    info->placement.start = ci->start;
    info->placement.size = ci_profile_slices[ci->profile];
    return NVML_SUCCESS;
}

/* The shape of a MIG device; a GPU handle is NOT_SUPPORTED here. */
nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes)
{
    const struct mig_gi *gi;
    struct mig_state st;
    unsigned int profile;
    DEVICE_ENTER(device, dev, MIG_OK);
    if (!attributes)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->is_mig)
        return NVML_ERROR_NOT_SUPPORTED;
    RETURN_IF_ERROR(mig_load(dev->gpu, &st));
    gi = &st.gi[dev->gi];
    profile = gi->ci[dev->ci].profile;
    memset(attributes, 0, sizeof(*attributes));
    attributes->multiprocessorCount = ci_sm_count(&st, gi, profile);
    attributes->sharedCopyEngineCount = gi->profile->ce;
    attributes->sharedDecoderCount = gi->profile->dec;
    attributes->sharedEncoderCount = gi->profile->enc;
    attributes->sharedJpegCount = gi->profile->jpeg;
    attributes->sharedOfaCount = gi->profile->ofa;
    attributes->gpuInstanceSliceCount = gi->profile->slices;
    attributes->computeInstanceSliceCount = ci_profile_slices[profile];
    attributes->memorySizeMB = gi->profile->memory_mib;
    return NVML_SUCCESS;
}
