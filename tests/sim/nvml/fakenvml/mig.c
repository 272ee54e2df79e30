/*
 * Fake NVML, MIG profile tables and the state of GPU and compute instances.
 * See fakenvml.h.
 */
#include "fakenvml.h"

/* ------------------------------------------------------------------------ */
/* MIG profile tables and instance state                                    */
/* ------------------------------------------------------------------------ */

/*
 * A100 and H100 have 7 compute and 8 memory slices.  Placements (start:size
 * in memory slices) are the same on all three boards:
 *   1g, 1g+me {0..6}:1    1g with 2 memory slices {0,2,4,6}:2    2g {0,2,4}:2
 *   3g {0,4}:4            4g {0}:4                                7g {0}:8
 * Engines and SM counts are those nvidia-smi mig -lgip prints.  Memory per
 * profile (also the MIG device's total): on A100 80GB what its MIG devices
 * report (1g.10gb 9856 MiB), on A100 40GB and H100 the -lgip column (4.75,
 * 9.75, 19.62, 39.50, 79.25 GiB).
 */
static const struct gi_profile a100_40gb_profiles[] = {
    {0, 19, "1g.5gb", 1, 7, 14, 1, 0, 0, 0, 0, 4864, 1, 0x7F},
    {7, 20, "1g.5gb+me", 1, 1, 14, 1, 1, 0, 1, 1, 4864, 1, 0x7F},
    {9, 15, "1g.10gb", 1, 4, 14, 1, 1, 0, 0, 0, 9984, 2, 0x55},
    {1, 14, "2g.10gb", 2, 3, 28, 2, 1, 0, 0, 0, 9984, 2, 0x15},
    {2, 9, "3g.20gb", 3, 2, 42, 3, 2, 0, 0, 0, 20096, 4, 0x11},
    {3, 5, "4g.20gb", 4, 1, 56, 4, 2, 0, 0, 0, 20096, 4, 0x01},
    {4, 0, "7g.40gb", 7, 1, 98, 7, 5, 0, 1, 1, 40448, 8, 0x01},
};

static const struct gi_profile a100_80gb_profiles[] = {
    {0, 19, "1g.10gb", 1, 7, 14, 1, 0, 0, 0, 0, 9856, 1, 0x7F},
    {7, 20, "1g.10gb+me", 1, 1, 14, 1, 1, 0, 1, 1, 9856, 1, 0x7F},
    {9, 15, "1g.20gb", 1, 4, 14, 1, 1, 0, 0, 0, 19968, 2, 0x55},
    {1, 14, "2g.20gb", 2, 3, 28, 2, 1, 0, 0, 0, 19968, 2, 0x15},
    {2, 9, "3g.40gb", 3, 2, 42, 3, 2, 0, 0, 0, 40192, 4, 0x11},
    {3, 5, "4g.40gb", 4, 1, 56, 4, 2, 0, 0, 0, 40192, 4, 0x01},
    {4, 0, "7g.80gb", 7, 1, 98, 7, 5, 0, 1, 1, 80384, 8, 0x01},
};

static const struct gi_profile h100_80gb_profiles[] = {
    {0, 19, "1g.10gb", 1, 7, 16, 1, 1, 0, 1, 0, 9984, 1, 0x7F},
    {7, 20, "1g.10gb+me", 1, 1, 16, 1, 1, 0, 1, 1, 9984, 1, 0x7F},
    {9, 15, "1g.20gb", 1, 4, 26, 1, 1, 0, 1, 0, 20096, 2, 0x55},
    {1, 14, "2g.20gb", 2, 3, 32, 2, 2, 0, 2, 0, 20096, 2, 0x15},
    {2, 9, "3g.40gb", 3, 2, 60, 3, 3, 0, 3, 0, 40448, 4, 0x11},
    {3, 5, "4g.40gb", 4, 1, 64, 4, 4, 0, 4, 0, 40448, 4, 0x01},
    {4, 0, "7g.80gb", 7, 1, 132, 8, 7, 0, 7, 1, 81152, 8, 0x01},
};

static const struct mig_model mig_models[] = {
    {"a100-40gb", a100_40gb_profiles, sizeof(a100_40gb_profiles) / sizeof(a100_40gb_profiles[0])},
    {"a100-80gb", a100_80gb_profiles, sizeof(a100_80gb_profiles) / sizeof(a100_80gb_profiles[0])},
    {"h100-80gb", h100_80gb_profiles, sizeof(h100_80gb_profiles) / sizeof(h100_80gb_profiles[0])},
};

/* Compute slices of each NVML_COMPUTE_INSTANCE_PROFILE_*. */
const unsigned int ci_profile_slices[NVML_COMPUTE_INSTANCE_PROFILE_COUNT] = {
    1, 2, 3, 4, 7, 8, 6, 1, 7,
};

int mig_enabled(unsigned int gpu)
{
    unsigned long long mode;
    return parse_ull(gpu_str(gpu, "mig.current"), &mode) && mode == 1;
}

/*
 * The profile table of a GPU (gpu.<i>.mig.profiles).  A GPU without MIG
 * (no mig.current) or without a table has no profiles: NOT_SUPPORTED.
 */
nvmlReturn_t mig_model_of(unsigned int gpu, const struct mig_model **out)
{
    const char *name;
    size_t i;
    if (!gpu_str(gpu, "mig.current"))
        return NVML_ERROR_NOT_SUPPORTED;
    name = gpu_str(gpu, "mig.profiles");
    if (!name)
        return NVML_ERROR_NOT_SUPPORTED;
    for (i = 0; i < sizeof(mig_models) / sizeof(mig_models[0]); i++) {
        if (strcasecmp(name, mig_models[i].name) == 0) {
            *out = &mig_models[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_UNKNOWN;
}

const struct gi_profile *profile_by_index(const struct mig_model *m, unsigned int index)
{
    size_t i;
    for (i = 0; i < m->count; i++)
        if (m->profiles[i].index == index)
            return &m->profiles[i];
    return NULL;
}

const struct gi_profile *profile_by_id(const struct mig_model *m, unsigned int id)
{
    size_t i;
    for (i = 0; i < m->count; i++)
        if (m->profiles[i].id == id)
            return &m->profiles[i];
    return NULL;
}

/* A fixture's profile value: the profile id NVML reports, or its name. */
static const struct gi_profile *profile_by_value(const struct mig_model *m, const char *v)
{
    unsigned long long id;
    size_t i;
    if (parse_ull(v, &id))
        return id <= UINT_MAX ? profile_by_id(m, (unsigned int)id) : NULL;
    for (i = 0; i < m->count; i++)
        if (strcasecmp(m->profiles[i].name, v) == 0)
            return &m->profiles[i];
    return NULL;
}

unsigned int slice_mask(unsigned int start, unsigned int size)
{
    return ((1u << size) - 1u) << start;
}

/* The GPU instance id of a placement: its node in the placement tree. */
unsigned int gi_id_of(unsigned int start, unsigned int size)
{
    unsigned int level = size >= 8 ? 0 : size >= 4 ? 1 : size >= 2 ? 2 : 3;
    return (1u << level) - 1u + start / size;
}

/* The placement behind a GPU instance id, if the profile can sit there. */
static int gi_start_of(const struct gi_profile *p, unsigned int id, unsigned int *start)
{
    unsigned int level = p->size >= 8 ? 0 : p->size >= 4 ? 1 : p->size >= 2 ? 2 : 3;
    unsigned int first = (1u << level) - 1u;
    if (id < first || id >= 2 * first + 1)
        return 0;
    *start = (id - first) * p->size;
    return *start < MIG_MEMORY_SLICES && (p->starts & (1u << *start)) != 0;
}

/*
 * The compute instance profiles of a GPU instance of gi_slices slices: the
 * 1, 2, 3 and 4 slice ones that fit, and the one that spans the instance.
 */
int ci_offered(unsigned int gi_slices, unsigned int profile)
{
    unsigned int slices;
    if (profile > 4) /* NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE */
        return 0;
    slices = ci_profile_slices[profile];
    return slices == gi_slices || (slices < gi_slices && slices <= 4);
}

/* Compute instances start on a multiple of their size rounded up to a power of 2. */
int ci_start_ok(unsigned int gi_slices, unsigned int slices, unsigned int start)
{
    unsigned int align = 1;
    while (align < slices)
        align *= 2;
    return start % align == 0 && start + slices <= gi_slices;
}

unsigned int ci_placement_count(unsigned int gi_slices, unsigned int slices)
{
    unsigned int s, n = 0;
    for (s = 0; s < gi_slices; s++)
        n += ci_start_ok(gi_slices, slices, s);
    return n;
}

unsigned int gi_used_slices(const struct mig_state *st)
{
    unsigned int g, used = 0;
    for (g = 0; g < MAX_GI_IDS; g++)
        if (st->gi[g].exists)
            used |= slice_mask(st->gi[g].start, st->gi[g].profile->size);
    return used;
}

unsigned int gi_count(const struct mig_state *st, const struct gi_profile *p)
{
    unsigned int g, n = 0;
    for (g = 0; g < MAX_GI_IDS; g++)
        n += st->gi[g].exists && st->gi[g].profile == p;
    return n;
}

unsigned int ci_used_slices(const struct mig_gi *gi)
{
    unsigned int c, used = 0;
    for (c = 0; c < MAX_CI_IDS; c++)
        if (gi->ci[c].exists)
            used |= slice_mask(gi->ci[c].start, ci_profile_slices[gi->ci[c].profile]);
    return used;
}

static unsigned int ci_count(const struct mig_gi *gi, unsigned int profile)
{
    unsigned int c, n = 0;
    for (c = 0; c < MAX_CI_IDS; c++)
        n += gi->ci[c].exists && gi->ci[c].profile == profile;
    return n;
}

/*
 * The compute instances of one GPU instance.  Keys under a GPU instance that
 * does not exist are ignored; an unknown or misplaced compute instance is a
 * broken fixture.
 */
static nvmlReturn_t mig_load_cis(unsigned int gpu, unsigned int g, struct mig_gi *gi)
{
    unsigned int c, used = 0, slices = gi->profile->slices;
    unsigned long long profile, start;
    const char *v;
    for (c = 0; c < MAX_CI_IDS; c++) {
        v = fx_fmt("gpu.%u.gi.%u.ci.%u.profile", gpu, g, c);
        if (!v)
            continue;
        if (!parse_ull(v, &profile) || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
            !ci_offered(slices, (unsigned int)profile))
            return NVML_ERROR_UNKNOWN;
        start = 0;
        v = fx_fmt("gpu.%u.gi.%u.ci.%u.start", gpu, g, c);
        if (v && (!parse_ull(v, &start) || start >= slices))
            return NVML_ERROR_UNKNOWN;
        if (!ci_start_ok(slices, ci_profile_slices[profile], (unsigned int)start) ||
            (used & slice_mask((unsigned int)start, ci_profile_slices[profile])))
            return NVML_ERROR_UNKNOWN;
        used |= slice_mask((unsigned int)start, ci_profile_slices[profile]);
        gi->ci[c].exists = 1;
        gi->ci[c].profile = (unsigned int)profile;
        gi->ci[c].start = (unsigned int)start;
    }
    return NVML_SUCCESS;
}

/*
 * The profile table and the GPU and compute instances of a GPU, read from
 * the exact keys gpu.<i>.gi.<id>.profile / .start and
 * gpu.<i>.gi.<id>.ci.<id>.profile / .start.  Instances that overlap, sit on a
 * placement their profile lacks or name an unknown profile are a broken
 * fixture: NVML_ERROR_UNKNOWN.
 */
nvmlReturn_t mig_load(unsigned int gpu, struct mig_state *st)
{
    unsigned int g, start, used = 0;
    unsigned long long given;
    struct mig_gi *gi;
    const char *v;

    memset(st, 0, sizeof(*st));
    RETURN_IF_ERROR(mig_model_of(gpu, &st->model));
    for (g = 0; g < MAX_GI_IDS; g++) {
        gi = &st->gi[g];
        v = fx_fmt("gpu.%u.gi.%u.profile", gpu, g);
        if (!v)
            continue;
        gi->profile = profile_by_value(st->model, v);
        if (!gi->profile || !gi_start_of(gi->profile, g, &start))
            return NVML_ERROR_UNKNOWN;
        v = fx_fmt("gpu.%u.gi.%u.start", gpu, g);
        if (v && (!parse_ull(v, &given) || given != start))
            return NVML_ERROR_UNKNOWN;
        if (used & slice_mask(start, gi->profile->size))
            return NVML_ERROR_UNKNOWN;
        used |= slice_mask(start, gi->profile->size);
        gi->start = start;
        gi->exists = 1;
        if (gi_count(st, gi->profile) > gi->profile->instances)
            return NVML_ERROR_UNKNOWN;
        RETURN_IF_ERROR(mig_load_cis(gpu, g, gi));
    }
    return NVML_SUCCESS;
}

/* MIG management on a GPU: its table must exist and MIG mode be on (else NOT_SUPPORTED). */
nvmlReturn_t mig_enter(unsigned int gpu, struct mig_state *st)
{
    const struct mig_model *model;
    RETURN_IF_ERROR(mig_model_of(gpu, &model));
    if (!mig_enabled(gpu))
        return NVML_ERROR_NOT_SUPPORTED;
    return mig_load(gpu, st);
}

/*
 * NVML puts a GPU instance created without a placement where it fragments
 * the free memory slices least: for each free placement it takes the largest
 * aligned block around it whose slices are all free and usable by the
 * profile; the smallest such block wins, the lowest start on a tie.  On an
 * empty A100 or H100 seven 1g instances land on slices 6, 4, 5, 0, 1, 2, 3
 * (GPU instance ids 13, 11, 12, 7, 8, 9, 10), as `nvidia-smi mig -cgi` shows.
 */
int gi_pick_start(const struct mig_state *st, const struct gi_profile *p, unsigned int *start)
{
    unsigned int used = gi_used_slices(st), usable = 0, s, b, fit, best_fit = UINT_MAX;
    for (s = 0; s < MIG_MEMORY_SLICES; s++)
        if (p->starts & (1u << s))
            usable |= slice_mask(s, p->size);
    for (s = 0; s < MIG_MEMORY_SLICES; s++) {
        if (!(p->starts & (1u << s)) || (used & slice_mask(s, p->size)))
            continue;
        fit = p->size;
        for (b = p->size * 2; b <= MIG_MEMORY_SLICES; b *= 2) {
            unsigned int block = slice_mask(s & ~(b - 1), b);
            if ((block & used) || (block & ~usable))
                break;
            fit = b;
        }
        if (fit < best_fit) {
            best_fit = fit;
            *start = s;
        }
    }
    return best_fit != UINT_MAX;
}

/* How many more instances of a profile fit: free placements, at most instanceCount in all. */
unsigned int gi_remaining(const struct mig_state *st, const struct gi_profile *p)
{
    unsigned int used = gi_used_slices(st), have = gi_count(st, p), n = 0, s;
    for (s = 0; s < MIG_MEMORY_SLICES; s++) {
        if ((p->starts & (1u << s)) && !(used & slice_mask(s, p->size))) {
            used |= slice_mask(s, p->size);
            n++;
        }
    }
    return have >= p->instances ? 0 : (n < p->instances - have ? n : p->instances - have);
}

unsigned int ci_remaining(const struct mig_gi *gi, unsigned int profile)
{
    unsigned int slices = ci_profile_slices[profile], used = ci_used_slices(gi), s, n = 0;
    unsigned int total = ci_placement_count(gi->profile->slices, slices);
    unsigned int have = ci_count(gi, profile);
    for (s = 0; s < gi->profile->slices; s++) {
        if (ci_start_ok(gi->profile->slices, slices, s) && !(used & slice_mask(s, slices))) {
            used |= slice_mask(s, slices);
            n++;
        }
    }
    return have >= total ? 0 : (n < total - have ? n : total - have);
}

/* "3g.40gb" for the compute instance spanning its GPU instance, else "1c.3g.40gb". */
void ci_name(const struct mig_gi *gi, unsigned int profile, char *out, size_t len)
{
    unsigned int slices = ci_profile_slices[profile];
    if (slices == gi->profile->slices)
        snprintf(out, len, "%s", gi->profile->name);
    else
        snprintf(out, len, "%uc.%s", slices, gi->profile->name);
}

/* SMs of a compute instance: the GPU instance's when it spans it, else per slice. */
unsigned int ci_sm_count(const struct mig_state *st, const struct mig_gi *gi,
                         unsigned int profile)
{
    const struct gi_profile *one = profile_by_index(st->model, 0);
    unsigned int slices = ci_profile_slices[profile];
    if (slices == gi->profile->slices)
        return gi->profile->sm;
    return slices * (one ? one->sm : gi->profile->sm / gi->profile->slices);
}

/*
 * NVML gives every new compute instance a fresh random MIG-<uuid>; here it is
 * derived from the GPU's UUID and the instance ids, so the same instance gets
 * the same UUID in every run.
 */
void mig_uuid_for(unsigned int gpu, unsigned int gi, unsigned int ci, char *out, size_t len)
{
    char seed[160];
    const char *parent = gpu_str(gpu, "uuid");
    unsigned long long h1 = 0xcbf29ce484222325ULL, h2 = 0x84222325cbf29ce4ULL;
    const unsigned char *c;

    snprintf(seed, sizeof(seed), "%s/%u/%u/%u", parent ? parent : "", gpu, gi, ci);
    for (c = (const unsigned char *)seed; *c; c++) {
        h1 = (h1 ^ *c) * 0x100000001b3ULL;
        h2 = (h2 ^ *c) * 0x100000001b3ULL;
        h2 ^= h2 >> 29;
    }
    snprintf(out, len, "MIG-%08llx-%04llx-4%03llx-%04llx-%012llx", h1 >> 32, (h1 >> 16) & 0xFFFF,
             h1 & 0xFFF, 0x8000 | ((h2 >> 48) & 0x3FFF), h2 & 0xFFFFFFFFFFFFULL);
}

/* The MIG UUID of a compute instance: gpu.<i>.gi.<g>.ci.<c>.uuid, else the derived one. */
const char *mig_uuid(unsigned int gpu, unsigned int gi, unsigned int ci, char *buf, size_t len)
{
    const char *v = fx_fmt("gpu.%u.gi.%u.ci.%u.uuid", gpu, gi, ci);
    if (v)
        return v;
    mig_uuid_for(gpu, gi, ci, buf, len);
    return buf;
}

/*
 * The MIG devices of a GPU: one per compute instance, ordered by GPU instance
 * id, then compute instance id; none while MIG mode is off.
 */
nvmlReturn_t mig_devices(unsigned int gpu, struct mig_ref *refs, unsigned int *count)
{
    struct mig_state st;
    unsigned int g, c, n = 0;
    nvmlReturn_t rc;

    *count = 0;
    if (!mig_enabled(gpu))
        return NVML_SUCCESS;
    rc = mig_load(gpu, &st);
    if (rc == NVML_ERROR_NOT_SUPPORTED)
        return NVML_SUCCESS;
    RETURN_IF_ERROR(rc);
    for (g = 0; g < MAX_GI_IDS; g++) {
        for (c = 0; st.gi[g].exists && c < MAX_CI_IDS; c++) {
            if (st.gi[g].ci[c].exists) {
                refs[n].gi = g;
                refs[n].ci = c;
                n++;
            }
        }
    }
    *count = n;
    return NVML_SUCCESS;
}
