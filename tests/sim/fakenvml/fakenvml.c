/*
 * A fake libnvidia-ml.so.1 driven by a key=value fixture file.
 *
 * It exports the NVML entry points that pynvml (nvidia-ml-py) calls for
 * inventory, health and configuration, with the real C signatures, struct
 * layouts and return codes, so that the unmodified pynvml runs against it as
 * it does on a GPU host.  The fixture format is described in
 * tests/sim/fixtures/README.md.
 *
 * Behaviour modelled:
 *  - The fixture is read at every nvmlInit*; its path comes from
 *    FAKE_NVML_FIXTURE, default /etc/accelops-sim/nvml.conf.  A host with the
 *    user-space library but no loaded kernel module fails init with
 *    NVML_ERROR_DRIVER_NOT_LOADED; an unreadable fixture models exactly that.
 *  - Init is reference counted like NVML: every successful nvmlInit* needs one
 *    nvmlShutdown; any call while the count is zero is UNINITIALIZED.
 *  - A value the fixture lacks makes its getter return NOT_SUPPORTED, which is
 *    what NVML answers for a query the board or driver does not implement.
 *  - Entry points named in drop_symbols return FUNCTION_NOT_FOUND: pynvml
 *    turns that into NVMLError_FunctionNotFound, the same exception it raises
 *    when an older driver's library lacks the symbol.
 *  - A lost GPU (fell off the bus, Xid 79) still has a handle, but every call
 *    that touches it returns GPU_IS_LOST.
 *  - Setters validate like NVML and write the new value back into the fixture
 *    (temp file + rename), so the state persists from one process to the next.
 *    Getters never write.
 *  - MIG: GPU and compute instances are fixture state.  Creating or destroying
 *    one follows the placement rules of the board's profile table (A100 40GB /
 *    80GB, H100 80GB) and writes the instance's keys back, so the MIG devices a
 *    fresh process enumerates are the instances that exist.
 *  - Faults can be injected: fail.<symbol>=N:CODE fails the N-th call of an
 *    entry point since init (N+ that call and every later one).
 *  - Not thread safe: every caller is a single-threaded process.
 */
#define _XOPEN_SOURCE 700

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_FIXTURE "/etc/accelops-sim/nvml.conf"
#define MAX_GPUS 64
/*
 * GPU instance ids name a node of the placement tree over the 8 memory
 * slices: 0 the whole GPU, 1-2 the halves, 3-6 the quarters, 7-14 the single
 * slices.  A compute instance id is unique within its GPU instance.
 */
#define MIG_MEMORY_SLICES 8
#define MAX_GI_IDS 15
#define MAX_CI_IDS 8
#define MIB (1024ULL * 1024ULL)

/* ------------------------------------------------------------------------ */
/* NVML types, as laid out in nvml.h                                         */
/* ------------------------------------------------------------------------ */

typedef enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

/* An opaque handle: here a pointer into gpu_devs[] or mig_devs[][][]. */
struct fake_device {
    unsigned int gpu;   /* index of the physical GPU */
    int is_mig;         /* 1 for a MIG device handle */
    unsigned int gi;    /* MIG device: its GPU instance id */
    unsigned int ci;    /* MIG device: its compute instance id */
};
typedef struct fake_device *nvmlDevice_t;

/* Opaque GPU and compute instance handles: pointers into gi_handles / ci_handles. */
struct fake_gpu_instance {
    unsigned int gpu;
    unsigned int id;
};
typedef struct fake_gpu_instance *nvmlGpuInstance_t;

struct fake_compute_instance {
    unsigned int gpu;
    unsigned int gi;
    unsigned int id;
};
typedef struct fake_compute_instance *nvmlComputeInstance_t;

typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

#define nvmlMemory_v2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

typedef struct {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

/* nvmlProcessInfo_v2_t and _v3_t share this layout. */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_GPU_INSTANCE_PROFILE_COUNT 0x12
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT 0x9
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0

/* A GPU instance's place: memory slices start..start+size-1. */
typedef struct {
    unsigned int start;
    unsigned int size;
} nvmlGpuInstancePlacement_t;

/* A compute instance's place: compute slices of its GPU instance. */
typedef struct {
    unsigned int start;
    unsigned int size;
} nvmlComputeInstancePlacement_t;

typedef struct {
    unsigned int id;
    unsigned int isP2pSupported;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct {
    unsigned int version;
    unsigned int id;
    unsigned int isP2pSupported;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlGpuInstanceProfileInfo_v2_t;

#define nvmlGpuInstanceProfileInfo_v2 \
    ((unsigned int)(sizeof(nvmlGpuInstanceProfileInfo_v2_t) | (2u << 24)))

typedef struct {
    nvmlDevice_t device;
    unsigned int id;
    unsigned int profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct {
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct {
    unsigned int version;
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlComputeInstanceProfileInfo_v2_t;

#define nvmlComputeInstanceProfileInfo_v2 \
    ((unsigned int)(sizeof(nvmlComputeInstanceProfileInfo_v2_t) | (2u << 24)))

typedef struct {
    nvmlDevice_t device;
    nvmlGpuInstance_t gpuInstance;
    unsigned int id;
    unsigned int profileId;
    nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

typedef struct {
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
    unsigned int gpuInstanceSliceCount;
    unsigned int computeInstanceSliceCount;
    unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

#define STATIC_ASSERT(name, cond) typedef char static_assert_##name[(cond) ? 1 : -1]
STATIC_ASSERT(memory_v2_version, sizeof(nvmlMemory_v2_t) == 40);
STATIC_ASSERT(pci_info_size, sizeof(nvmlPciInfo_t) == 68);
STATIC_ASSERT(process_info_size, sizeof(nvmlProcessInfo_t) == 24);
STATIC_ASSERT(gi_profile_info_size, sizeof(nvmlGpuInstanceProfileInfo_t) == 48);
STATIC_ASSERT(gi_profile_info_v2_version, nvmlGpuInstanceProfileInfo_v2 == 0x02000098);
STATIC_ASSERT(ci_profile_info_size, sizeof(nvmlComputeInstanceProfileInfo_t) == 36);
STATIC_ASSERT(ci_profile_info_v2_version, nvmlComputeInstanceProfileInfo_v2 == 0x02000088);
STATIC_ASSERT(gi_info_size, sizeof(nvmlGpuInstanceInfo_t) == 24);
STATIC_ASSERT(ci_info_size, sizeof(nvmlComputeInstanceInfo_t) == 32);
STATIC_ASSERT(device_attributes_size, sizeof(nvmlDeviceAttributes_t) == 40);

#define NVML_VALUE_NOT_AVAILABLE_ULL (~0ULL)
#define NVML_VALUE_NOT_AVAILABLE_UINT (~0U)

/* Error codes: the name used in fixtures and the text nvmlErrorString gives. */
static const struct {
    nvmlReturn_t code;
    const char *name;
    const char *text;
} error_table[] = {
    {NVML_SUCCESS, "SUCCESS", "Success"},
    {NVML_ERROR_UNINITIALIZED, "UNINITIALIZED", "Uninitialized"},
    {NVML_ERROR_INVALID_ARGUMENT, "INVALID_ARGUMENT", "Invalid Argument"},
    {NVML_ERROR_NOT_SUPPORTED, "NOT_SUPPORTED", "Not Supported"},
    {NVML_ERROR_NO_PERMISSION, "NO_PERMISSION", "Insufficient Permissions"},
    {NVML_ERROR_ALREADY_INITIALIZED, "ALREADY_INITIALIZED", "Already Initialized"},
    {NVML_ERROR_NOT_FOUND, "NOT_FOUND", "Not Found"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "INSUFFICIENT_SIZE", "Insufficient Size"},
    {NVML_ERROR_INSUFFICIENT_POWER, "INSUFFICIENT_POWER", "Insufficient External Power"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "DRIVER_NOT_LOADED", "Driver Not Loaded"},
    {NVML_ERROR_TIMEOUT, "TIMEOUT", "Timeout"},
    {NVML_ERROR_IRQ_ISSUE, "IRQ_ISSUE", "Interrupt Request Issue"},
    {NVML_ERROR_LIBRARY_NOT_FOUND, "LIBRARY_NOT_FOUND", "NVML Shared Library Not Found"},
    {NVML_ERROR_FUNCTION_NOT_FOUND, "FUNCTION_NOT_FOUND", "Function Not Found"},
    {NVML_ERROR_CORRUPTED_INFOROM, "CORRUPTED_INFOROM", "Corrupted infoROM"},
    {NVML_ERROR_GPU_IS_LOST, "GPU_IS_LOST", "GPU is lost"},
    {NVML_ERROR_RESET_REQUIRED, "RESET_REQUIRED", "GPU requires restart"},
    {NVML_ERROR_OPERATING_SYSTEM, "OPERATING_SYSTEM",
     "The operating system has blocked the request."},
    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, "LIB_RM_VERSION_MISMATCH",
     "RM has detected an NVML/RM version mismatch."},
    {NVML_ERROR_IN_USE, "IN_USE", "In use by another client"},
    {NVML_ERROR_MEMORY, "MEMORY", "Insufficient Memory"},
    {NVML_ERROR_NO_DATA, "NO_DATA", "No data"},
    {NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "VGPU_ECC_NOT_SUPPORTED",
     "The requested vgpu operation is not available on target device, because ECC is enabled"},
    {NVML_ERROR_INSUFFICIENT_RESOURCES, "INSUFFICIENT_RESOURCES", "Insufficient resources for request"},
    {NVML_ERROR_FREQ_NOT_SUPPORTED, "FREQ_NOT_SUPPORTED", "Frequency not supported"},
    {NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "ARGUMENT_VERSION_MISMATCH", "Argument version mismatch"},
    {NVML_ERROR_DEPRECATED, "DEPRECATED", "Deprecated"},
    {NVML_ERROR_NOT_READY, "NOT_READY", "Not ready"},
    {NVML_ERROR_GPU_NOT_FOUND, "GPU_NOT_FOUND", "GPU not found"},
    {NVML_ERROR_INVALID_STATE, "INVALID_STATE", "Invalid state"},
    {NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, "RESET_TYPE_NOT_SUPPORTED", "Reset type not supported"},
    {NVML_ERROR_UNKNOWN, "UNKNOWN", "Unknown Error"},
};

/* ------------------------------------------------------------------------ */
/* Fixture table                                                             */
/* ------------------------------------------------------------------------ */

struct fx_entry {
    char *key;
    char *value;
};

struct fx_table {
    struct fx_entry *entries;
    size_t count;
    size_t cap;
};

static struct fx_table fixture;
static char fixture_path[PATH_MAX];

static char *trim(char *s)
{
    char *end;
    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

static void table_free(struct fx_table *t)
{
    size_t i;
    for (i = 0; i < t->count; i++) {
        free(t->entries[i].key);
        free(t->entries[i].value);
    }
    free(t->entries);
    t->entries = NULL;
    t->count = t->cap = 0;
}

static int table_append(struct fx_table *t, const char *key, const char *value)
{
    char *k, *v;
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        struct fx_entry *e = realloc(t->entries, cap * sizeof(*e));
        if (!e)
            return -1;
        t->entries = e;
        t->cap = cap;
    }
    k = strdup(key);
    v = strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    t->entries[t->count].key = k;
    t->entries[t->count].value = v;
    t->count++;
    return 0;
}

/* Split "key=value" in place; returns 0 for blank lines and comments. */
static int split_line(char *line, char **key, char **value)
{
    char *s = trim(line), *eq;
    if (*s == '\0' || *s == '#')
        return 0;
    eq = strchr(s, '=');
    if (!eq)
        return 0;
    *eq = '\0';
    *key = trim(s);
    *value = trim(eq + 1);
    return **key != '\0';
}

static int fixture_load(const char *path)
{
    struct fx_table t = {NULL, 0, 0};
    char *line = NULL, *key, *value;
    size_t cap = 0;
    FILE *f = fopen(path, "r");

    if (!f)
        return -1;
    while (getline(&line, &cap, f) != -1) {
        if (split_line(line, &key, &value) && table_append(&t, key, value) != 0) {
            free(line);
            fclose(f);
            table_free(&t);
            return -1;
        }
    }
    free(line);
    if (ferror(f)) {
        fclose(f);
        table_free(&t);
        return -1;
    }
    fclose(f);
    table_free(&fixture);
    fixture = t;
    /* Write back to the file a symlink points at, keeping the link. */
    if (!realpath(path, fixture_path))
        snprintf(fixture_path, sizeof(fixture_path), "%s", path);
    return 0;
}

/* Exact lookup; a later line overrides an earlier one. */
static const char *fx_str(const char *key)
{
    size_t i = fixture.count;
    while (i-- > 0)
        if (strcmp(fixture.entries[i].key, key) == 0)
            return fixture.entries[i].value;
    return NULL;
}

static const char *fx_fmt(const char *fmt, ...)
{
    char key[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(key, sizeof(key), fmt, ap);
    va_end(ap);
    return fx_str(key);
}

/*
 * Keep the in-memory table in step with a setter's write: value NULL removes
 * the key, prefix set removes every key that starts with key.
 */
static void fx_update(const char *key, const char *value, int prefix)
{
    size_t i = 0, len = strlen(key);
    while (i < fixture.count) {
        if (prefix ? strncmp(fixture.entries[i].key, key, len) == 0
                   : strcmp(fixture.entries[i].key, key) == 0) {
            free(fixture.entries[i].key);
            free(fixture.entries[i].value);
            memmove(&fixture.entries[i], &fixture.entries[i + 1],
                    (fixture.count - i - 1) * sizeof(fixture.entries[0]));
            fixture.count--;
        } else {
            i++;
        }
    }
    if (value)
        table_append(&fixture, key, value);
}

/* gpu.<i>.<key>, then the default gpu.*.<key>. */
static const char *gpu_str(unsigned int gpu, const char *key)
{
    const char *v = fx_fmt("gpu.%u.%s", gpu, key);
    return v ? v : fx_fmt("gpu.*.%s", key);
}

/* gpu.<i>.<kind>.<n>.<key> with '*' defaults for the GPU and the item index. */
static const char *sub_str(unsigned int gpu, const char *kind, unsigned int n, const char *key)
{
    const char *v;
    if ((v = fx_fmt("gpu.%u.%s.%u.%s", gpu, kind, n, key)))
        return v;
    if ((v = fx_fmt("gpu.%u.%s.*.%s", gpu, kind, key)))
        return v;
    if ((v = fx_fmt("gpu.*.%s.%u.%s", kind, n, key)))
        return v;
    return fx_fmt("gpu.*.%s.*.%s", kind, key);
}

/* ------------------------------------------------------------------------ */
/* Value parsing                                                             */
/* ------------------------------------------------------------------------ */

static int parse_ull(const char *s, unsigned long long *out)
{
    char *end;
    if (!s || *s == '\0' || *s == '-')
        return 0;
    errno = 0;
    *out = strtoull(s, &end, 0);
    return errno == 0 && *end == '\0';
}

static int parse_ll(const char *s, long long *out)
{
    char *end;
    if (!s || *s == '\0')
        return 0;
    errno = 0;
    *out = strtoll(s, &end, 0);
    return errno == 0 && *end == '\0';
}

/*
 * Typed reads of a fixture value.  A missing value is NOT_SUPPORTED; a value
 * that does not parse is a broken fixture, reported as NVML_ERROR_UNKNOWN.
 */
static nvmlReturn_t value_ull(const char *v, unsigned long long *out)
{
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!v)
        return NVML_ERROR_NOT_SUPPORTED;
    return parse_ull(v, out) ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

static nvmlReturn_t value_uint(const char *v, unsigned int *out)
{
    unsigned long long x;
    nvmlReturn_t rc;
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    rc = value_ull(v, &x);
    if (rc != NVML_SUCCESS)
        return rc;
    if (x > UINT_MAX)
        return NVML_ERROR_UNKNOWN;
    *out = (unsigned int)x;
    return NVML_SUCCESS;
}

static nvmlReturn_t value_int(const char *v, int *out)
{
    long long x;
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!v)
        return NVML_ERROR_NOT_SUPPORTED;
    if (!parse_ll(v, &x) || x < INT_MIN || x > INT_MAX)
        return NVML_ERROR_UNKNOWN;
    *out = (int)x;
    return NVML_SUCCESS;
}

static nvmlReturn_t gpu_uint(unsigned int gpu, const char *key, unsigned int *out)
{
    return value_uint(gpu_str(gpu, key), out);
}

/* A fixture value that is either a number or one of the given names. */
struct enum_name {
    const char *name;
    unsigned int value;
};

static nvmlReturn_t value_enum(const char *v, const struct enum_name *names, size_t n,
                               unsigned int *out)
{
    size_t i;
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!v)
        return NVML_ERROR_NOT_SUPPORTED;
    for (i = 0; i < n; i++) {
        if (strcasecmp(v, names[i].name) == 0) {
            *out = names[i].value;
            return NVML_SUCCESS;
        }
    }
    return value_uint(v, out);
}

/* "NO_PERMISSION", "NVML_ERROR_NO_PERMISSION" or "4". */
static int parse_return_code(const char *s, nvmlReturn_t *out)
{
    unsigned long long n;
    size_t i;
    if (strncasecmp(s, "NVML_ERROR_", 11) == 0)
        s += 11;
    for (i = 0; i < sizeof(error_table) / sizeof(error_table[0]); i++) {
        if (strcasecmp(s, error_table[i].name) == 0) {
            *out = error_table[i].code;
            return 1;
        }
    }
    if (parse_ull(s, &n) && n <= INT_MAX) {
        *out = (nvmlReturn_t)n;
        return 1;
    }
    return 0;
}

/* "00000000:18:00.0", "0000:18:00.0" or "18:00.0", any hex case. */
static int parse_bus_id(const char *s, unsigned int *domain, unsigned int *bus,
                        unsigned int *device, unsigned int *function)
{
    int used = -1;
    const char *colon;
    if (!s)
        return 0;
    colon = strchr(s, ':');
    if (colon && strchr(colon + 1, ':')) {
        if (sscanf(s, "%x:%x:%x.%x%n", domain, bus, device, function, &used) != 4)
            return 0;
    } else {
        *domain = 0;
        if (sscanf(s, "%x:%x.%x%n", bus, device, function, &used) != 3)
            return 0;
    }
    return used == (int)strlen(s) && *bus <= 0xFF && *device <= 0x1F && *function <= 7;
}

static nvmlReturn_t copy_string(const char *value, char *buf, unsigned int length)
{
    if (!buf)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!value)
        return NVML_ERROR_NOT_SUPPORTED;
    if (strlen(value) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, value, strlen(value) + 1);
    return NVML_SUCCESS;
}

#define RETURN_IF_ERROR(expr)                                                          \
    do {                                                                               \
        nvmlReturn_t rc_ = (expr);                                                     \
        if (rc_ != NVML_SUCCESS)                                                       \
            return rc_;                                                                \
    } while (0)

/* ------------------------------------------------------------------------ */
/* MIG profile tables and instance state                                     */
/* ------------------------------------------------------------------------ */

/*
 * One GPU instance profile of a board, as `nvidia-smi mig -lgip` (ID,
 * instances, memory, SM, CE, DEC, ENC, JPEG, OFA) and `nvidia-smi mig -lgipp`
 * (placements) list it.  index is the NVML_GPU_INSTANCE_PROFILE_* a caller
 * asks ...GetGpuInstanceProfileInfo about; id is the profile id NVML reports
 * there and takes back in every placement, capacity and create call.
 */
struct gi_profile {
    unsigned int index;
    unsigned int id;
    const char *name;
    unsigned int slices;    /* compute slices */
    unsigned int instances; /* most instances of this profile on one GPU */
    unsigned int sm, ce, dec, enc, jpeg, ofa;
    unsigned long long memory_mib;
    unsigned int size;   /* memory slices one instance occupies */
    unsigned int starts; /* bit s set: an instance may start at memory slice s */
};

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

static const struct mig_model {
    const char *name; /* the value of gpu.<i>.mig.profiles */
    const struct gi_profile *profiles;
    size_t count;
} mig_models[] = {
    {"a100-40gb", a100_40gb_profiles, sizeof(a100_40gb_profiles) / sizeof(a100_40gb_profiles[0])},
    {"a100-80gb", a100_80gb_profiles, sizeof(a100_80gb_profiles) / sizeof(a100_80gb_profiles[0])},
    {"h100-80gb", h100_80gb_profiles, sizeof(h100_80gb_profiles) / sizeof(h100_80gb_profiles[0])},
};

/* Compute slices of each NVML_COMPUTE_INSTANCE_PROFILE_*. */
static const unsigned int ci_profile_slices[NVML_COMPUTE_INSTANCE_PROFILE_COUNT] = {
    1, 2, 3, 4, 7, 8, 6, 1, 7,
};

struct mig_ci {
    int exists;
    unsigned int profile; /* NVML_COMPUTE_INSTANCE_PROFILE_* */
    unsigned int start;   /* first compute slice inside the GPU instance */
};

struct mig_gi {
    int exists;
    const struct gi_profile *profile;
    unsigned int start; /* first memory slice */
    struct mig_ci ci[MAX_CI_IDS];
};

struct mig_state {
    const struct mig_model *model;
    struct mig_gi gi[MAX_GI_IDS];
};

static int mig_enabled(unsigned int gpu)
{
    unsigned long long mode;
    return parse_ull(gpu_str(gpu, "mig.current"), &mode) && mode == 1;
}

/*
 * The profile table of a GPU (gpu.<i>.mig.profiles).  A GPU without MIG
 * (no mig.current) or without a table has no profiles: NOT_SUPPORTED.
 */
static nvmlReturn_t mig_model_of(unsigned int gpu, const struct mig_model **out)
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

static const struct gi_profile *profile_by_index(const struct mig_model *m, unsigned int index)
{
    size_t i;
    for (i = 0; i < m->count; i++)
        if (m->profiles[i].index == index)
            return &m->profiles[i];
    return NULL;
}

static const struct gi_profile *profile_by_id(const struct mig_model *m, unsigned int id)
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

static unsigned int slice_mask(unsigned int start, unsigned int size)
{
    return ((1u << size) - 1u) << start;
}

/* The GPU instance id of a placement: its node in the placement tree. */
static unsigned int gi_id_of(unsigned int start, unsigned int size)
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
static int ci_offered(unsigned int gi_slices, unsigned int profile)
{
    unsigned int slices;
    if (profile > 4) /* NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE */
        return 0;
    slices = ci_profile_slices[profile];
    return slices == gi_slices || (slices < gi_slices && slices <= 4);
}

/* Compute instances start on a multiple of their size rounded up to a power of 2. */
static int ci_start_ok(unsigned int gi_slices, unsigned int slices, unsigned int start)
{
    unsigned int align = 1;
    while (align < slices)
        align *= 2;
    return start % align == 0 && start + slices <= gi_slices;
}

static unsigned int ci_placement_count(unsigned int gi_slices, unsigned int slices)
{
    unsigned int s, n = 0;
    for (s = 0; s < gi_slices; s++)
        n += ci_start_ok(gi_slices, slices, s);
    return n;
}

static unsigned int gi_used_slices(const struct mig_state *st)
{
    unsigned int g, used = 0;
    for (g = 0; g < MAX_GI_IDS; g++)
        if (st->gi[g].exists)
            used |= slice_mask(st->gi[g].start, st->gi[g].profile->size);
    return used;
}

static unsigned int gi_count(const struct mig_state *st, const struct gi_profile *p)
{
    unsigned int g, n = 0;
    for (g = 0; g < MAX_GI_IDS; g++)
        n += st->gi[g].exists && st->gi[g].profile == p;
    return n;
}

static unsigned int ci_used_slices(const struct mig_gi *gi)
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
static nvmlReturn_t mig_load(unsigned int gpu, struct mig_state *st)
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
static nvmlReturn_t mig_enter(unsigned int gpu, struct mig_state *st)
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
static int gi_pick_start(const struct mig_state *st, const struct gi_profile *p, unsigned int *start)
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
static unsigned int gi_remaining(const struct mig_state *st, const struct gi_profile *p)
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

static unsigned int ci_remaining(const struct mig_gi *gi, unsigned int profile)
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
static void ci_name(const struct mig_gi *gi, unsigned int profile, char *out, size_t len)
{
    unsigned int slices = ci_profile_slices[profile];
    if (slices == gi->profile->slices)
        snprintf(out, len, "%s", gi->profile->name);
    else
        snprintf(out, len, "%uc.%s", slices, gi->profile->name);
}

/* SMs of a compute instance: the GPU instance's when it spans it, else per slice. */
static unsigned int ci_sm_count(const struct mig_state *st, const struct mig_gi *gi,
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
static void mig_uuid_for(unsigned int gpu, unsigned int gi, unsigned int ci, char *out, size_t len)
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
static const char *mig_uuid(unsigned int gpu, unsigned int gi, unsigned int ci, char *buf, size_t len)
{
    const char *v = fx_fmt("gpu.%u.gi.%u.ci.%u.uuid", gpu, gi, ci);
    if (v)
        return v;
    mig_uuid_for(gpu, gi, ci, buf, len);
    return buf;
}

struct mig_ref {
    unsigned int gi;
    unsigned int ci;
};

/*
 * The MIG devices of a GPU: one per compute instance, ordered by GPU instance
 * id, then compute instance id; none while MIG mode is off.
 */
static nvmlReturn_t mig_devices(unsigned int gpu, struct mig_ref *refs, unsigned int *count)
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

/* ------------------------------------------------------------------------ */
/* Library state, handles and the checks every entry point makes             */
/* ------------------------------------------------------------------------ */

static unsigned int init_refcount;
static unsigned int gpu_count;
static struct fake_device gpu_devs[MAX_GPUS];
static struct fake_device mig_devs[MAX_GPUS][MAX_GI_IDS][MAX_CI_IDS];
static struct fake_gpu_instance gi_handles[MAX_GPUS][MAX_GI_IDS];
static struct fake_compute_instance ci_handles[MAX_GPUS][MAX_GI_IDS][MAX_CI_IDS];

static int symbol_dropped(const char *symbol)
{
    const char *list = fx_str("drop_symbols");
    size_t len = strlen(symbol);
    while (list && *list) {
        const char *end = strchr(list, ',');
        const char *tok_end = end ? end : list + strlen(list);
        while (list < tok_end && isspace((unsigned char)*list))
            list++;
        while (tok_end > list && isspace((unsigned char)tok_end[-1]))
            tok_end--;
        if ((size_t)(tok_end - list) == len && strncmp(list, symbol, len) == 0)
            return 1;
        list = end ? end + 1 : NULL;
    }
    return 0;
}

static int gpu_is_lost(unsigned int gpu)
{
    unsigned long long lost;
    return parse_ull(gpu_str(gpu, "lost"), &lost) && lost != 0;
}

/* Whether compute instance ci of GPU instance gi exists and MIG mode is on. */
static int mig_instance_exists(unsigned int gpu, unsigned int gi, unsigned int ci)
{
    struct mig_state st;
    return mig_enabled(gpu) && mig_load(gpu, &st) == NVML_SUCCESS && st.gi[gi].exists &&
           st.gi[gi].ci[ci].exists;
}

/* p points at an element of a (possibly multi-dimensional) handle array. */
#define IN_ARRAY(p, array)                                                             \
    ((uintptr_t)(p) >= (uintptr_t)(array) &&                                           \
     (uintptr_t)(p) < (uintptr_t)(array) + sizeof(array) &&                            \
     ((uintptr_t)(p) - (uintptr_t)(array)) % sizeof(*(p)) == 0)

/* Map a caller's handle back to a device of the current fixture, or NULL. */
static struct fake_device *resolve(nvmlDevice_t handle)
{
    if (IN_ARRAY(handle, gpu_devs))
        return handle->gpu < gpu_count ? handle : NULL;
    if (IN_ARRAY(handle, mig_devs))
        return handle->gpu < gpu_count && (gpu_is_lost(handle->gpu) ||
                                           mig_instance_exists(handle->gpu, handle->gi, handle->ci))
                   ? handle
                   : NULL;
    return NULL;
}

/*
 * Injected faults: "fail.<symbol>=N:CODE" makes the N-th call of <symbol>
 * since the last successful init return CODE; "N+:CODE" the N-th and every
 * later one.  Calls are counted per symbol in this process, so a test can fail
 * a run part-way (the third GPU's setter, say) and see what the caller did
 * with the first two.  A failed call changes nothing, like every rejected one.
 */
#define MAX_COUNTED_SYMBOLS 256
static struct {
    const char *symbol;
    unsigned long long calls;
} call_counts[MAX_COUNTED_SYMBOLS];
static unsigned int counted_symbols;

static unsigned long long count_call(const char *symbol)
{
    unsigned int i;
    for (i = 0; i < counted_symbols; i++)
        if (strcmp(call_counts[i].symbol, symbol) == 0)
            return ++call_counts[i].calls;
    if (counted_symbols == MAX_COUNTED_SYMBOLS)
        return 0;
    call_counts[counted_symbols].symbol = symbol;
    call_counts[counted_symbols].calls = 1;
    counted_symbols++;
    return 1;
}

static nvmlReturn_t injected_fault(const char *symbol)
{
    char key[160];
    const char *value, *colon;
    char *end;
    unsigned long long nth, call;
    int onwards;
    nvmlReturn_t code;

    call = count_call(symbol);
    if (snprintf(key, sizeof(key), "fail.%s", symbol) >= (int)sizeof(key))
        return NVML_SUCCESS;
    value = fx_str(key);
    if (!value)
        return NVML_SUCCESS;
    colon = strchr(value, ':');
    if (!colon || !isdigit((unsigned char)*value))
        return NVML_ERROR_UNKNOWN; /* broken fixture */
    errno = 0;
    nth = strtoull(value, &end, 10);
    onwards = *end == '+';
    if (onwards)
        end++;
    if (errno || end != colon || nth == 0 || !parse_return_code(colon + 1, &code))
        return NVML_ERROR_UNKNOWN;
    if (call == nth || (onwards && call > nth))
        return code;
    return NVML_SUCCESS;
}

static void reset_call_counts(void)
{
    counted_symbols = 0;
}

static nvmlReturn_t api_enter(const char *symbol)
{
    nvmlReturn_t rc;
    if (symbol_dropped(symbol))
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (init_refcount == 0)
        return NVML_ERROR_UNINITIALIZED;
    rc = injected_fault(symbol);
    if (rc != NVML_SUCCESS)
        return rc;
    return NVML_SUCCESS;
}

enum { GPU_ONLY = 0, MIG_OK = 1 };

/*
 * Checks shared by every per-device call: symbol present, library
 * initialised, handle valid, GPU not lost.  Calls that have no meaning for a
 * MIG device handle answer NOT_SUPPORTED for one.
 */
static nvmlReturn_t device_enter(const char *symbol, nvmlDevice_t handle, int mig_ok,
                                 struct fake_device **out)
{
    struct fake_device *dev;
    nvmlReturn_t rc = api_enter(symbol);
    if (rc != NVML_SUCCESS)
        return rc;
    dev = resolve(handle);
    if (!dev)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (gpu_is_lost(dev->gpu))
        return NVML_ERROR_GPU_IS_LOST;
    if (dev->is_mig && !mig_ok)
        return NVML_ERROR_NOT_SUPPORTED;
    *out = dev;
    return NVML_SUCCESS;
}

#define API_ENTER()                                                                    \
    do {                                                                               \
        nvmlReturn_t rc_ = api_enter(__func__);                                        \
        if (rc_ != NVML_SUCCESS)                                                       \
            return rc_;                                                                \
    } while (0)

#define DEVICE_ENTER(handle, dev, mig_ok)                                              \
    struct fake_device *dev = NULL;                                                    \
    do {                                                                               \
        nvmlReturn_t rc_ = device_enter(__func__, (handle), (mig_ok), &dev);           \
        if (rc_ != NVML_SUCCESS)                                                       \
            return rc_;                                                                \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Writing setter results back to the fixture                                */
/* ------------------------------------------------------------------------ */

static nvmlReturn_t errno_to_nvml(int err)
{
    return (err == EACCES || err == EPERM || err == EROFS) ? NVML_ERROR_NO_PERMISSION
                                                           : NVML_ERROR_UNKNOWN;
}

/*
 * A fixture that is a mount point of its own (a bind-mounted file) cannot be
 * renamed over; it is then rewritten in place.
 */
static int copy_file(const char *from, const char *to)
{
    char buf[8192];
    size_t n;
    int failed = 0;
    FILE *in = fopen(from, "r"), *out;
    if (!in)
        return -1;
    out = fopen(to, "w");
    if (!out) {
        fclose(in);
        return -1;
    }
    while (!failed && (n = fread(buf, 1, sizeof(buf), in)) > 0)
        failed = fwrite(buf, 1, n, out) != n;
    failed |= ferror(in) != 0;
    fclose(in);
    failed |= fclose(out) != 0;
    return failed ? -1 : 0;
}

/*
 * One change to the fixture: set key to value, delete key (value NULL), or
 * delete every key that starts with key (prefix set, value NULL).
 */
struct fx_edit {
    const char *key;
    const char *value;
    int prefix;
};

#define MAX_EDITS_PER_WRITE 8

static int edit_matches(const struct fx_edit *edit, const char *key)
{
    return edit->prefix ? strncmp(key, edit->key, strlen(edit->key)) == 0
                        : strcmp(key, edit->key) == 0;
}

/*
 * Copy the fixture's lines from in to out with the edits applied: the first
 * line of a key that is set is replaced, later duplicates dropped, a missing
 * key appended; every other line and comment is kept as it was.  Returns 0 on
 * success.
 */
static int write_updated_lines(FILE *in, FILE *out, size_t n, const struct fx_edit edits[])
{
    char *line = NULL, *copy, *key, *value;
    int done[MAX_EDITS_PER_WRITE] = {0}, last_newline = 1, failed = 0;
    size_t cap = 0, i;
    ssize_t len;

    while (!failed && (len = getline(&line, &cap, in)) != -1) {
        int match = -1;
        copy = strdup(line);
        if (!copy) {
            failed = 1;
            break;
        }
        if (split_line(copy, &key, &value))
            for (i = 0; i < n; i++)
                if (edit_matches(&edits[i], key))
                    match = (int)i;
        free(copy);
        if (match < 0) {
            failed |= fputs(line, out) == EOF;
            last_newline = line[len - 1] == '\n';
        } else {
            if (!done[match] && edits[match].value) {
                failed |= fprintf(out, "%s=%s\n", edits[match].key, edits[match].value) < 0;
                last_newline = 1;
            }
            done[match] = 1;
        }
    }
    free(line);
    failed |= ferror(in) != 0;

    for (i = 0; i < n && !failed; i++) {
        if (done[i] || !edits[i].value)
            continue;
        if (!last_newline)
            failed |= fputc('\n', out) == EOF;
        failed |= fprintf(out, "%s=%s\n", edits[i].key, edits[i].value) < 0;
        last_newline = 1;
    }
    return failed ? -1 : 0;
}

/*
 * Apply a setter's change to the fixture file: the new content is written to
 * a temporary file beside it (same mode) and renamed over it, so a reader
 * never sees half a file.  The in-memory table follows.
 */
static nvmlReturn_t fixture_rewrite(size_t n, const struct fx_edit edits[])
{
    char tmp[PATH_MAX + 32];
    const char *slash = strrchr(fixture_path, '/');
    int fd, failed, err = 0;
    struct stat st;
    FILE *in, *out;
    size_t i;

    if (n > MAX_EDITS_PER_WRITE)
        return NVML_ERROR_UNKNOWN;
    in = fopen(fixture_path, "r");
    if (!in)
        return errno_to_nvml(errno);
    snprintf(tmp, sizeof(tmp), "%.*s.nvml.conf.XXXXXX",
             slash ? (int)(slash - fixture_path + 1) : 0, fixture_path);
    if (fstat(fileno(in), &st) != 0 || (fd = mkstemp(tmp)) < 0) {
        err = errno;
        fclose(in);
        return errno_to_nvml(err);
    }
    out = fdopen(fd, "w");
    if (!out) {
        err = errno;
        close(fd);
        unlink(tmp);
        fclose(in);
        return errno_to_nvml(err);
    }

    failed = write_updated_lines(in, out, n, edits) != 0;
    fclose(in);
    failed |= fchmod(fd, st.st_mode & 07777) != 0;
    failed |= fflush(out) != 0;
    if (failed)
        err = errno;
    failed |= fclose(out) != 0;
    if (!failed && rename(tmp, fixture_path) != 0) {
        err = errno;
        failed = !(err == EBUSY && copy_file(tmp, fixture_path) == 0);
        unlink(tmp);
    } else if (failed) {
        unlink(tmp);
    }
    if (failed)
        return errno_to_nvml(err);
    for (i = 0; i < n; i++)
        fx_update(edits[i].key, edits[i].value, edits[i].prefix);
    return NVML_SUCCESS;
}

/*
 * The last step of every setter, after its arguments were validated:
 * setters_error models a caller without the rights to change the GPU.
 */
static nvmlReturn_t commit(size_t n, const struct fx_edit edits[])
{
    const char *forced = fx_str("setters_error");
    nvmlReturn_t rc;

    if (forced) {
        if (!parse_return_code(forced, &rc))
            return NVML_ERROR_UNKNOWN;
        if (rc != NVML_SUCCESS)
            return rc;
    }
    return fixture_rewrite(n, edits);
}

/* Set (or, with a NULL value, delete) gpu.<gpu>.<key_a> and, unless NULL, gpu.<gpu>.<key_b>. */
static nvmlReturn_t commit_gpu(unsigned int gpu, const char *key_a, const char *value_a,
                               const char *key_b, const char *value_b)
{
    char full_a[128], full_b[128];
    struct fx_edit edits[2] = {{full_a, value_a, 0}, {full_b, value_b, 0}};

    snprintf(full_a, sizeof(full_a), "gpu.%u.%s", gpu, key_a);
    if (key_b)
        snprintf(full_b, sizeof(full_b), "gpu.%u.%s", gpu, key_b);
    return commit(key_b ? 2 : 1, edits);
}

static nvmlReturn_t commit_gpu_uint(unsigned int gpu, const char *key, unsigned int value)
{
    char text[16];
    snprintf(text, sizeof(text), "%u", value);
    return commit_gpu(gpu, key, text, NULL, NULL);
}

/* ------------------------------------------------------------------------ */
/* Initialisation                                                            */
/* ------------------------------------------------------------------------ */

static nvmlReturn_t init_common(const char *symbol)
{
    const char *path = getenv("FAKE_NVML_FIXTURE");
    const char *value;
    unsigned long long count = 0;
    nvmlReturn_t forced;
    unsigned int g, i, c;

    if (!path || *path == '\0')
        path = DEFAULT_FIXTURE;
    if (fixture_load(path) != 0)
        return NVML_ERROR_DRIVER_NOT_LOADED;
    if (symbol_dropped(symbol))
        return NVML_ERROR_FUNCTION_NOT_FOUND;

    value = fx_str("init_error");
    if (value) {
        if (!parse_return_code(value, &forced))
            return NVML_ERROR_UNKNOWN;
        if (forced != NVML_SUCCESS)
            return forced;
    }

    value = fx_str("gpu_count");
    if (value && (!parse_ull(value, &count) || count > MAX_GPUS))
        return NVML_ERROR_UNKNOWN;
    gpu_count = (unsigned int)count;

    for (g = 0; g < MAX_GPUS; g++) {
        gpu_devs[g].gpu = g;
        gpu_devs[g].is_mig = 0;
        for (i = 0; i < MAX_GI_IDS; i++) {
            gi_handles[g][i].gpu = g;
            gi_handles[g][i].id = i;
            for (c = 0; c < MAX_CI_IDS; c++) {
                mig_devs[g][i][c].gpu = g;
                mig_devs[g][i][c].is_mig = 1;
                mig_devs[g][i][c].gi = i;
                mig_devs[g][i][c].ci = c;
                ci_handles[g][i][c].gpu = g;
                ci_handles[g][i][c].gi = i;
                ci_handles[g][i][c].id = c;
            }
        }
    }
    reset_call_counts();
    init_refcount++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    (void)flags; /* NO_GPUS / NO_ATTACH change nothing for a fixture */
    return init_common(__func__);
}

nvmlReturn_t nvmlInit_v2(void)
{
    return init_common(__func__);
}

nvmlReturn_t nvmlInit(void)
{
    return init_common(__func__);
}

nvmlReturn_t nvmlShutdown(void)
{
    API_ENTER();
    init_refcount--;
    return NVML_SUCCESS;
}

/* Works without init, like NVML's; not subject to drop_symbols. */
const char *nvmlErrorString(nvmlReturn_t result)
{
    size_t i;
    for (i = 0; i < sizeof(error_table) / sizeof(error_table[0]); i++)
        if (error_table[i].code == result)
            return error_table[i].text;
    return "Unknown Error";
}

/* ------------------------------------------------------------------------ */
/* System queries                                                            */
/* ------------------------------------------------------------------------ */

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    API_ENTER();
    return copy_string(fx_str("driver_version"), version, length);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    API_ENTER();
    return copy_string(fx_str("nvml_version"), version, length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    API_ENTER();
    return value_int(fx_str("cuda_driver_version"), cudaDriverVersion);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    API_ENTER();
    return value_int(fx_str("cuda_driver_version"), cudaDriverVersion);
}

/* The name of a process listed on any GPU; NVML truncates to length. */
nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
    unsigned int g, p, count, proc_pid;
    const char *proc_name;
    API_ENTER();
    if (!name || length == 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (g = 0; g < gpu_count; g++) {
        if (gpu_uint(g, "process.count", &count) != NVML_SUCCESS)
            continue;
        for (p = 0; p < count; p++) {
            if (value_uint(sub_str(g, "process", p, "pid"), &proc_pid) != NVML_SUCCESS ||
                proc_pid != pid)
                continue;
            proc_name = sub_str(g, "process", p, "name");
            if (!proc_name)
                return NVML_ERROR_NOT_FOUND;
            snprintf(name, length, "%s", proc_name);
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* ------------------------------------------------------------------------ */
/* Device enumeration and identity                                           */
/* ------------------------------------------------------------------------ */

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    API_ENTER();
    if (!deviceCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = gpu_count;
    return NVML_SUCCESS;
}

/* Succeeds for a lost GPU too: NVML hands out the handle, later calls fail. */
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    API_ENTER();
    if (!device || index >= gpu_count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &gpu_devs[index];
    return NVML_SUCCESS;
}

/* GPU-... UUIDs give GPU handles, MIG-... UUIDs MIG device handles. */
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    struct mig_ref refs[MAX_GI_IDS * MAX_CI_IDS];
    unsigned int g, m, migs;
    char buf[48];
    const char *v;
    API_ENTER();
    if (!uuid || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (g = 0; g < gpu_count; g++) {
        v = gpu_str(g, "uuid");
        if (v && strcmp(v, uuid) == 0) {
            *device = &gpu_devs[g];
            return NVML_SUCCESS;
        }
        if (gpu_is_lost(g) || mig_devices(g, refs, &migs) != NVML_SUCCESS)
            continue;
        for (m = 0; m < migs; m++) {
            v = mig_uuid(g, refs[m].gi, refs[m].ci, buf, sizeof(buf));
            if (strcmp(v, uuid) == 0) {
                *device = &mig_devs[g][refs[m].gi][refs[m].ci];
                return NVML_SUCCESS;
            }
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    unsigned int dom, bus, dev, fn, d2, b2, v2, f2, g;
    API_ENTER();
    if (!device || !parse_bus_id(pciBusId, &dom, &bus, &dev, &fn))
        return NVML_ERROR_INVALID_ARGUMENT;
    for (g = 0; g < gpu_count; g++) {
        if (parse_bus_id(gpu_str(g, "pci.bus_id"), &d2, &b2, &v2, &f2) && d2 == dom &&
            b2 == bus && v2 == dev && f2 == fn) {
            *device = &gpu_devs[g];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!index)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = dev->gpu;
    return NVML_SUCCESS;
}

/*
 * A MIG device is named "<GPU name> MIG <profile>": the GPU instance profile
 * (3g.40gb) when its compute instance spans the GPU instance, else the
 * compute instance profile (1c.3g.40gb).
 */
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    char composed[160], profile[48];
    const char *gpu_name;
    struct mig_state st;
    DEVICE_ENTER(device, dev, MIG_OK);
    if (!dev->is_mig)
        return copy_string(gpu_str(dev->gpu, "name"), name, length);
    RETURN_IF_ERROR(mig_load(dev->gpu, &st));
    gpu_name = gpu_str(dev->gpu, "name");
    if (!gpu_name)
        return copy_string(NULL, name, length);
    ci_name(&st.gi[dev->gi], st.gi[dev->gi].ci[dev->ci].profile, profile, sizeof(profile));
    snprintf(composed, sizeof(composed), "%s MIG %s", gpu_name, profile);
    return copy_string(composed, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    char buf[48];
    DEVICE_ENTER(device, dev, MIG_OK);
    if (dev->is_mig)
        return copy_string(mig_uuid(dev->gpu, dev->gi, dev->ci, buf, sizeof(buf)), uuid, length);
    return copy_string(gpu_str(dev->gpu, "uuid"), uuid, length);
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return copy_string(gpu_str(dev->gpu, "serial"), serial, length);
}

nvmlReturn_t nvmlDeviceGetBoardPartNumber(nvmlDevice_t device, char *partNumber,
                                          unsigned int length)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return copy_string(gpu_str(dev->gpu, "board_part_number"), partNumber, length);
}

nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char *version, unsigned int length)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return copy_string(gpu_str(dev->gpu, "vbios_version"), version, length);
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return gpu_uint(dev->gpu, "minor_number", minorNumber);
}

/* Fill nvmlPciInfo_t: busId in the 8-digit-domain form, busIdLegacy in the 4-digit one. */
static nvmlReturn_t fill_pci_info(const char *bus_id, const char *device_id,
                                  const char *subsystem_id, nvmlPciInfo_t *pci)
{
    unsigned int dom, bus, dev, fn, devid = 0, subsys = 0;
    if (!pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!bus_id)
        return NVML_ERROR_NOT_SUPPORTED;
    if (!parse_bus_id(bus_id, &dom, &bus, &dev, &fn))
        return NVML_ERROR_UNKNOWN;
    if (device_id)
        RETURN_IF_ERROR(value_uint(device_id, &devid));
    if (subsystem_id)
        RETURN_IF_ERROR(value_uint(subsystem_id, &subsys));
    memset(pci, 0, sizeof(*pci));
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.%X", dom & 0xFFFF,
             bus & 0xFF, dev & 0x1F, fn & 7);
    snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.%X", dom, bus & 0xFF, dev & 0x1F,
             fn & 7);
    pci->domain = dom;
    pci->bus = bus;
    pci->device = dev;
    pci->pciDeviceId = devid;
    pci->pciSubSystemId = subsys;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return fill_pci_info(gpu_str(dev->gpu, "pci.bus_id"), gpu_str(dev->gpu, "pci.device_id"),
                         gpu_str(dev->gpu, "pci.subsystem_id"), pci);
}

static const struct enum_name arch_names[] = {
    {"kepler", 2}, {"maxwell", 3}, {"pascal", 4}, {"volta", 5},      {"turing", 6},
    {"ampere", 7}, {"ada", 8},     {"hopper", 9}, {"blackwell", 10},
};

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, unsigned int *arch)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return value_enum(gpu_str(dev->gpu, "architecture"), arch_names,
                      sizeof(arch_names) / sizeof(arch_names[0]), arch);
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    int maj, min;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!major || !minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(value_int(gpu_str(dev->gpu, "cc_major"), &maj));
    RETURN_IF_ERROR(value_int(gpu_str(dev->gpu, "cc_minor"), &min));
    *major = maj;
    *minor = min;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node)
{
    int value;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!node)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(value_int(gpu_str(dev->gpu, "numa_node"), &value));
    *node = (unsigned int)value; /* pynvml reads it as a C int: -1 stays -1 */
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * Sizes in bytes for a GPU or a MIG device; reserved is FB the driver keeps.
 * A MIG device has the memory of its GPU instance's profile; its use is
 * gpu.<i>.gi.<id>.memory.used_mib.
 */
static nvmlReturn_t memory_values(const struct fake_device *dev, unsigned long long *total,
                                  unsigned long long *used, unsigned long long *reserved)
{
    const char *u, *r = NULL;
    struct mig_state st;
    if (dev->is_mig) {
        RETURN_IF_ERROR(mig_load(dev->gpu, &st));
        *total = st.gi[dev->gi].profile->memory_mib;
        u = sub_str(dev->gpu, "gi", dev->gi, "memory.used_mib");
    } else {
        RETURN_IF_ERROR(value_ull(gpu_str(dev->gpu, "memory.total_mib"), total));
        u = gpu_str(dev->gpu, "memory.used_mib");
        r = gpu_str(dev->gpu, "memory.reserved_mib");
    }
    *used = *reserved = 0;
    if (u)
        RETURN_IF_ERROR(value_ull(u, used));
    if (r)
        RETURN_IF_ERROR(value_ull(r, reserved));
    *total *= MIB;
    *used *= MIB;
    *reserved *= MIB;
    return NVML_SUCCESS;
}

/* v1 counts reserved memory as used: free = total - used - reserved in both. */
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    unsigned long long total, used, reserved;
    DEVICE_ENTER(device, dev, MIG_OK);
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(memory_values(dev, &total, &used, &reserved));
    memory->total = total;
    memory->used = used + reserved;
    memory->free = total > memory->used ? total - memory->used : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    unsigned long long total, used, reserved;
    DEVICE_ENTER(device, dev, MIG_OK);
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    RETURN_IF_ERROR(memory_values(dev, &total, &used, &reserved));
    memory->total = total;
    memory->reserved = reserved;
    memory->used = used;
    memory->free = total > used + reserved ? total - used - reserved : 0;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Thermals, power, utilisation, clocks                                      */
/* ------------------------------------------------------------------------ */

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, unsigned int sensorType,
                                      unsigned int *temp)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (sensorType != 0) /* NVML_TEMPERATURE_GPU is the only sensor */
        return NVML_ERROR_INVALID_ARGUMENT;
    return gpu_uint(dev->gpu, "temperature_c", temp);
}

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, unsigned int thresholdType,
                                               unsigned int *temp)
{
    static const char *const keys[] = {
        "temperature.shutdown_c", "temperature.slowdown_c", "temperature.mem_max_c",
        "temperature.gpu_max_c",
    };
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (thresholdType >= 8) /* NVML_TEMPERATURE_THRESHOLD_COUNT */
        return NVML_ERROR_INVALID_ARGUMENT;
    if (thresholdType >= sizeof(keys) / sizeof(keys[0]))
        return temp ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
    return gpu_uint(dev->gpu, keys[thresholdType], temp);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return gpu_uint(dev->gpu, "power.usage_mw", power);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return gpu_uint(dev->gpu, "power.limit_mw", limit);
}

/* The enforced limit is the management limit unless another limit is lower. */
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (gpu_str(dev->gpu, "power.enforced_mw"))
        return gpu_uint(dev->gpu, "power.enforced_mw", limit);
    return gpu_uint(dev->gpu, "power.limit_mw", limit);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                          unsigned int *minLimit,
                                                          unsigned int *maxLimit)
{
    unsigned int lo, hi;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!minLimit || !maxLimit)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(gpu_uint(dev->gpu, "power.min_mw", &lo));
    RETURN_IF_ERROR(gpu_uint(dev->gpu, "power.max_mw", &hi));
    *minLimit = lo;
    *maxLimit = hi;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                      unsigned int *defaultLimit)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return gpu_uint(dev->gpu, "power.default_mw", defaultLimit);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    unsigned int gpu, mem;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!utilization)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(gpu_uint(dev->gpu, "utilization.gpu", &gpu));
    RETURN_IF_ERROR(gpu_uint(dev->gpu, "utilization.memory", &mem));
    utilization->gpu = gpu;
    utilization->memory = mem;
    return NVML_SUCCESS;
}

/* clocks_event_reasons is the nvmlClocksEventReason* bit mask. */
static nvmlReturn_t clocks_event_reasons(const struct fake_device *dev,
                                         unsigned long long *reasons)
{
    return value_ull(gpu_str(dev->gpu, "clocks_event_reasons"), reasons);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long *clocksEventReasons)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return clocks_event_reasons(dev, clocksEventReasons);
}

/* The name drivers before R535 export for the same query. */
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long *clocksThrottleReasons)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return clocks_event_reasons(dev, clocksThrottleReasons);
}

/*
 * nvmlClockType_t: 0 graphics, 1 SM, 2 memory, 3 video.  SM and graphics run
 * in one clock domain, so a missing SM value falls back to the graphics one.
 */
static nvmlReturn_t clock_value(const struct fake_device *dev, unsigned int type, int max,
                                unsigned int *clock)
{
    static const char *const current[] = {"clocks.graphics_mhz", "clocks.sm_mhz",
                                          "clocks.mem_mhz", "clocks.video_mhz"};
    static const char *const maximum[] = {"clocks.max_graphics_mhz", "clocks.max_sm_mhz",
                                          "clocks.max_mem_mhz", "clocks.max_video_mhz"};
    const char *const *keys = max ? maximum : current;
    if (type >= 4)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (type == 1 && !gpu_str(dev->gpu, keys[1]))
        type = 0;
    return gpu_uint(dev->gpu, keys[type], clock);
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned int type, unsigned int *clock)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return clock_value(dev, type, 0, clock);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, unsigned int type,
                                       unsigned int *clock)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return clock_value(dev, type, 1, clock);
}

/*
 * Supported clocks, as `nvidia-smi -q -d SUPPORTED_CLOCKS` lists them:
 * clocks.supported_mem_mhz and clocks.supported_graphics_mhz hold a comma
 * list ("9001,5001,810,405") or, for graphics, a range "MIN-MAX/STEP" that
 * stands for MAX, MAX-STEP, ..., MIN ((MAX - MIN) a multiple of STEP).  NVML
 * lists the clocks highest first; one graphics list applies to every
 * supported memory clock.  Absent: NOT_SUPPORTED; malformed: UNKNOWN.
 */
#define MAX_SUPPORTED_CLOCKS 1024

static int clock_desc(const void *a, const void *b)
{
    unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

static nvmlReturn_t parse_clock_range(const char *v, unsigned int *out, unsigned int *n)
{
    unsigned int lo, hi, step, c;
    int used = -1;
    if (sscanf(v, " %u - %u / %u %n", &lo, &hi, &step, &used) != 3 || used != (int)strlen(v) ||
        step == 0 || lo > hi || (hi - lo) % step != 0 || (hi - lo) / step >= MAX_SUPPORTED_CLOCKS)
        return NVML_ERROR_UNKNOWN;
    *n = 0;
    for (c = hi;; c -= step) {
        out[(*n)++] = c;
        if (c - lo < step)
            break;
    }
    return NVML_SUCCESS;
}

static nvmlReturn_t parse_clock_list(const char *v, unsigned int *out, unsigned int *n)
{
    char tok[32];
    unsigned long long x;
    *n = 0;
    while (v) {
        const char *end = strchr(v, ',');
        size_t len = end ? (size_t)(end - v) : strlen(v);
        if (len >= sizeof(tok) || *n >= MAX_SUPPORTED_CLOCKS)
            return NVML_ERROR_UNKNOWN;
        memcpy(tok, v, len);
        tok[len] = '\0';
        if (!parse_ull(trim(tok), &x) || x == 0 || x > UINT_MAX)
            return NVML_ERROR_UNKNOWN;
        out[(*n)++] = (unsigned int)x;
        v = end ? end + 1 : NULL;
    }
    qsort(out, *n, sizeof(*out), clock_desc);
    return NVML_SUCCESS;
}

static nvmlReturn_t supported_clocks(unsigned int gpu, const char *key, int ranges,
                                     unsigned int *out, unsigned int *n)
{
    const char *v = gpu_str(gpu, key);
    if (!v)
        return NVML_ERROR_NOT_SUPPORTED;
    if (ranges && strchr(v, '-'))
        return parse_clock_range(v, out, n);
    return parse_clock_list(v, out, n);
}

static int clock_listed(unsigned int clock, const unsigned int *list, unsigned int n)
{
    unsigned int i;
    for (i = 0; i < n; i++)
        if (list[i] == clock)
            return 1;
    return 0;
}

/*
 * NVML's size protocol: with *count too small (the caller's first call passes
 * 0 and NULL) the needed count comes back with INSUFFICIENT_SIZE.
 */
static nvmlReturn_t copy_clocks(const unsigned int *list, unsigned int n, unsigned int *count,
                                unsigned int *clocksMHz)
{
    if (*count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (!clocksMHz)
        return NVML_ERROR_INVALID_ARGUMENT;
    memcpy(clocksMHz, list, n * sizeof(*list));
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t device, unsigned int *count,
                                                unsigned int *clocksMHz)
{
    unsigned int mem[MAX_SUPPORTED_CLOCKS], n;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(supported_clocks(dev->gpu, "clocks.supported_mem_mhz", 0, mem, &n));
    return copy_clocks(mem, n, count, clocksMHz);
}

/* A memory clock that is not one of the supported ones is NOT_FOUND. */
nvmlReturn_t nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_t device, unsigned int memoryClockMHz,
                                                  unsigned int *count, unsigned int *clocksMHz)
{
    unsigned int mem[MAX_SUPPORTED_CLOCKS], graphics[MAX_SUPPORTED_CLOCKS], n_mem, n;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(supported_clocks(dev->gpu, "clocks.supported_graphics_mhz", 1, graphics, &n));
    RETURN_IF_ERROR(supported_clocks(dev->gpu, "clocks.supported_mem_mhz", 0, mem, &n_mem));
    if (!clock_listed(memoryClockMHz, mem, n_mem))
        return NVML_ERROR_NOT_FOUND;
    return copy_clocks(graphics, n, count, clocksMHz);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int *currLinkGen)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return gpu_uint(dev->gpu, "pcie.gen_current", currLinkGen);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *maxLinkGen)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return gpu_uint(dev->gpu, "pcie.gen_max", maxLinkGen);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int *currLinkWidth)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return gpu_uint(dev->gpu, "pcie.width_current", currLinkWidth);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int *maxLinkWidth)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return gpu_uint(dev->gpu, "pcie.width_max", maxLinkWidth);
}

/* ------------------------------------------------------------------------ */
/* Fans                                                                      */
/* ------------------------------------------------------------------------ */

/* A board without fans (SXM, passively cooled PCIe) reports 0 fans. */
nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t device, unsigned int *numFans)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return gpu_uint(dev->gpu, "fan_count", numFans);
}

/* Per-fan fan.<f>.speed_pct, else the board-wide fan_speed_pct. */
static nvmlReturn_t fan_speed(const struct fake_device *dev, unsigned int fan,
                              unsigned int *speed)
{
    unsigned int fans;
    const char *v;
    if (!speed)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (gpu_uint(dev->gpu, "fan_count", &fans) != NVML_SUCCESS || fans == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    if (fan >= fans)
        return NVML_ERROR_INVALID_ARGUMENT;
    v = sub_str(dev->gpu, "fan", fan, "speed_pct");
    return value_uint(v ? v : gpu_str(dev->gpu, "fan_speed_pct"), speed);
}

nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int *speed)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return fan_speed(dev, 0, speed);
}

nvmlReturn_t nvmlDeviceGetFanSpeed_v2(nvmlDevice_t device, unsigned int fan, unsigned int *speed)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return fan_speed(dev, fan, speed);
}

/* ------------------------------------------------------------------------ */
/* Modes, ECC, retired pages, row remapping                                  */
/* ------------------------------------------------------------------------ */

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, unsigned int *mode)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return gpu_uint(dev->gpu, "persistence_mode", mode);
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, unsigned int *mode)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return gpu_uint(dev->gpu, "compute_mode", mode);
}

/* The pending mode takes effect at the next reboot; it defaults to the current one. */
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, unsigned int *current, unsigned int *pending)
{
    unsigned int cur, pend;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!current || !pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(gpu_uint(dev->gpu, "ecc.current", &cur));
    pend = cur;
    if (gpu_str(dev->gpu, "ecc.pending"))
        RETURN_IF_ERROR(gpu_uint(dev->gpu, "ecc.pending", &pend));
    *current = cur;
    *pending = pend;
    return NVML_SUCCESS;
}

/* errorType 0 corrected / 1 uncorrected; counterType 0 volatile / 1 aggregate. */
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, unsigned int errorType,
                                         unsigned int counterType, unsigned long long *eccCounts)
{
    char key[64];
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (errorType > 1 || counterType > 1 || !eccCounts)
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(key, sizeof(key), "ecc.%s.%s", counterType ? "aggregate" : "volatile",
             errorType ? "uncorrected" : "corrected");
    return value_ull(gpu_str(dev->gpu, key), eccCounts);
}

/* Row remapping exists from Ampere on: without remapped.correctable, NOT_SUPPORTED. */
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows,
                                       unsigned int *uncRows, unsigned int *isPending,
                                       unsigned int *failureOccurred)
{
    unsigned int corr, unc = 0, pending = 0, failure = 0;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!corrRows || !uncRows || !isPending || !failureOccurred)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(gpu_uint(dev->gpu, "remapped.correctable", &corr));
    if (gpu_str(dev->gpu, "remapped.uncorrectable"))
        RETURN_IF_ERROR(gpu_uint(dev->gpu, "remapped.uncorrectable", &unc));
    if (gpu_str(dev->gpu, "remapped.pending"))
        RETURN_IF_ERROR(gpu_uint(dev->gpu, "remapped.pending", &pending));
    if (gpu_str(dev->gpu, "remapped.failure"))
        RETURN_IF_ERROR(gpu_uint(dev->gpu, "remapped.failure", &failure));
    *corrRows = corr;
    *uncRows = unc;
    *isPending = pending;
    *failureOccurred = failure;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, unsigned int *isPending)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return gpu_uint(dev->gpu, "retired_pages_pending", isPending);
}

/* ------------------------------------------------------------------------ */
/* MIG                                                                       */
/* ------------------------------------------------------------------------ */

/* Without mig.current the GPU has no MIG support at all: NOT_SUPPORTED. */
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                  unsigned int *pendingMode)
{
    unsigned int cur, pend;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!currentMode || !pendingMode)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(gpu_uint(dev->gpu, "mig.current", &cur));
    pend = cur;
    if (gpu_str(dev->gpu, "mig.pending"))
        RETURN_IF_ERROR(gpu_uint(dev->gpu, "mig.pending", &pend));
    *currentMode = cur;
    *pendingMode = pend;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return gpu_uint(dev->gpu, "mig.max_devices", count);
}

/*
 * Index past mig.max_devices: INVALID_ARGUMENT; an index with no MIG device
 * behind it (or MIG off): NOT_FOUND.  Enumerators skip both, as with NVML.
 */
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t *migDevice)
{
    struct mig_ref refs[MAX_GI_IDS * MAX_CI_IDS];
    unsigned int max, count;
    DEVICE_ENTER(device, dev, MIG_OK);
    if (dev->is_mig || !migDevice)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!gpu_str(dev->gpu, "mig.current"))
        return NVML_ERROR_NOT_SUPPORTED;
    if (gpu_uint(dev->gpu, "mig.max_devices", &max) == NVML_SUCCESS && index >= max)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(mig_devices(dev->gpu, refs, &count));
    if (index >= count)
        return NVML_ERROR_NOT_FOUND;
    *migDevice = &mig_devs[dev->gpu][refs[index].gi][refs[index].ci];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
    DEVICE_ENTER(device, dev, MIG_OK);
    if (!isMigDevice)
        return NVML_ERROR_INVALID_ARGUMENT;
    *isMigDevice = dev->is_mig ? 1 : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                          nvmlDevice_t *device)
{
    DEVICE_ENTER(migDevice, dev, MIG_OK);
    if (!dev->is_mig || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &gpu_devs[dev->gpu];
    return NVML_SUCCESS;
}

/* Instance ids belong to MIG device handles; a GPU handle is an invalid argument. */
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
    DEVICE_ENTER(device, dev, MIG_OK);
    if (!dev->is_mig || !id)
        return NVML_ERROR_INVALID_ARGUMENT;
    *id = dev->gi;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
    DEVICE_ENTER(device, dev, MIG_OK);
    if (!dev->is_mig || !id)
        return NVML_ERROR_INVALID_ARGUMENT;
    *id = dev->ci;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* NVLink                                                                    */
/* ------------------------------------------------------------------------ */

/* Links are 0..nvlink.count-1; a board without NVLink has no nvlink.count. */
static nvmlReturn_t nvlink_check(const struct fake_device *dev, unsigned int link)
{
    unsigned int count;
    RETURN_IF_ERROR(gpu_uint(dev->gpu, "nvlink.count", &count));
    return link < count ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      unsigned int *isActive)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!isActive)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(nvlink_check(dev, link));
    return value_uint(sub_str(dev->gpu, "nvlink", link, "active"), isActive);
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                 nvmlPciInfo_t *pci)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(nvlink_check(dev, link));
    return fill_pci_info(sub_str(dev->gpu, "nvlink", link, "remote_bus_id"),
                         sub_str(dev->gpu, "nvlink", link, "remote_device_id"),
                         sub_str(dev->gpu, "nvlink", link, "remote_subsystem_id"), pci);
}

static const struct enum_name remote_type_names[] = {
    {"gpu", 0}, {"ibmnpu", 1}, {"switch", 2}, {"unknown", 0xFF},
};

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                 unsigned int *pNvLinkDeviceType)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!pNvLinkDeviceType)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(nvlink_check(dev, link));
    return value_enum(sub_str(dev->gpu, "nvlink", link, "remote_type"), remote_type_names,
                      sizeof(remote_type_names) / sizeof(remote_type_names[0]),
                      pNvLinkDeviceType);
}

/* ------------------------------------------------------------------------ */
/* Processes and topology                                                    */
/* ------------------------------------------------------------------------ */

static nvmlReturn_t read_process(unsigned int gpu, unsigned int p, nvmlProcessInfo_t *info)
{
    const char *used = sub_str(gpu, "process", p, "used_mib");
    const char *gi = sub_str(gpu, "process", p, "gi_id");
    const char *ci = sub_str(gpu, "process", p, "ci_id");
    unsigned long long mib = 0;

    memset(info, 0, sizeof(*info));
    if (value_uint(sub_str(gpu, "process", p, "pid"), &info->pid) != NVML_SUCCESS)
        return NVML_ERROR_UNKNOWN;
    if (used && !parse_ull(used, &mib))
        return NVML_ERROR_UNKNOWN;
    info->usedGpuMemory = used ? mib * MIB : NVML_VALUE_NOT_AVAILABLE_ULL;
    info->gpuInstanceId = NVML_VALUE_NOT_AVAILABLE_UINT;
    info->computeInstanceId = NVML_VALUE_NOT_AVAILABLE_UINT;
    if (gi)
        RETURN_IF_ERROR(value_uint(gi, &info->gpuInstanceId));
    if (ci)
        RETURN_IF_ERROR(value_uint(ci, &info->computeInstanceId));
    return NVML_SUCCESS;
}

/*
 * NVML's size protocol: with *infoCount too small (the caller's first call
 * passes 0 and NULL) the needed count comes back with INSUFFICIENT_SIZE, or
 * SUCCESS when no process runs.  A MIG device handle lists the processes of
 * its own GPU and compute instance.
 */
static nvmlReturn_t compute_processes(const struct fake_device *dev, unsigned int *infoCount,
                                      nvmlProcessInfo_t *infos)
{
    nvmlProcessInfo_t found[64];
    unsigned int total, p, n = 0;
    if (!infoCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(gpu_uint(dev->gpu, "process.count", &total));
    for (p = 0; p < total && n < sizeof(found) / sizeof(found[0]); p++) {
        RETURN_IF_ERROR(read_process(dev->gpu, p, &found[n]));
        if (!dev->is_mig ||
            (found[n].gpuInstanceId == dev->gi && found[n].computeInstanceId == dev->ci))
            n++;
    }
    if (*infoCount < n) {
        *infoCount = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n > 0 && !infos)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (n > 0)
        memcpy(infos, found, n * sizeof(found[0]));
    *infoCount = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                     unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
    DEVICE_ENTER(device, dev, MIG_OK);
    return compute_processes(dev, infoCount, infos);
}

/* The R450..R470 name; nvmlProcessInfo_v2_t has the same layout as _v3_t. */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                     unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
    DEVICE_ENTER(device, dev, MIG_OK);
    return compute_processes(dev, infoCount, infos);
}

/*
 * nvmlGpuTopologyLevel_t between two GPUs: topology.<i>.<j> (either order),
 * else topology.default.  A GPU with itself is NVML_TOPOLOGY_INTERNAL.
 */
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                 unsigned int *pathInfo)
{
    struct fake_device *other = NULL;
    const char *v;
    DEVICE_ENTER(device1, dev, GPU_ONLY);
    RETURN_IF_ERROR(device_enter(__func__, device2, GPU_ONLY, &other));
    if (!pathInfo)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (dev->gpu == other->gpu) {
        *pathInfo = 0;
        return NVML_SUCCESS;
    }
    v = fx_fmt("topology.%u.%u", dev->gpu, other->gpu);
    if (!v)
        v = fx_fmt("topology.%u.%u", other->gpu, dev->gpu);
    if (!v)
        v = fx_str("topology.default");
    return value_uint(v, pathInfo);
}

/* ------------------------------------------------------------------------ */
/* MIG GPU and compute instances                                             */
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
        RETURN_IF_ERROR(read_process(gpu, p, &info));
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

/* ------------------------------------------------------------------------ */
/* Setters                                                                   */
/* ------------------------------------------------------------------------ */

nvmlReturn_t nvmlDeviceSetPersistenceMode(nvmlDevice_t device, unsigned int mode)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!gpu_str(dev->gpu, "persistence_mode"))
        return NVML_ERROR_NOT_SUPPORTED;
    if (mode > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    return commit_gpu_uint(dev->gpu, "persistence_mode", mode);
}

/* NVML accepts a limit only inside the board's min..max constraints. */
nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned int limit)
{
    unsigned int lo, hi;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    RETURN_IF_ERROR(gpu_uint(dev->gpu, "power.min_mw", &lo));
    RETURN_IF_ERROR(gpu_uint(dev->gpu, "power.max_mw", &hi));
    if (limit < lo || limit > hi)
        return NVML_ERROR_INVALID_ARGUMENT;
    return commit_gpu_uint(dev->gpu, "power.limit_mw", limit);
}

/* 0 default, 2 prohibited, 3 exclusive process; 1 (exclusive thread) is gone. */
nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, unsigned int mode)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!gpu_str(dev->gpu, "compute_mode"))
        return NVML_ERROR_NOT_SUPPORTED;
    if (mode != 0 && mode != 2 && mode != 3)
        return NVML_ERROR_INVALID_ARGUMENT;
    return commit_gpu_uint(dev->gpu, "compute_mode", mode);
}

/* A new ECC mode is pending until the next reboot: only ecc.pending changes. */
nvmlReturn_t nvmlDeviceSetEccMode(nvmlDevice_t device, unsigned int ecc)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!gpu_str(dev->gpu, "ecc.current"))
        return NVML_ERROR_NOT_SUPPORTED;
    if (ecc > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    return commit_gpu_uint(dev->gpu, "ecc.pending", ecc);
}

/*
 * The new MIG mode is recorded as pending (applied by a GPU reset or
 * reboot); activationStatus reports NVML_SUCCESS for the request itself.
 */
nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                  nvmlReturn_t *activationStatus)
{
    nvmlReturn_t rc;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!activationStatus)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!gpu_str(dev->gpu, "mig.current"))
        return NVML_ERROR_NOT_SUPPORTED;
    if (mode > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    rc = commit_gpu_uint(dev->gpu, "mig.pending", mode);
    if (rc == NVML_SUCCESS)
        *activationStatus = NVML_SUCCESS;
    return rc;
}

/*
 * Locking needs min <= max, each one of the supported graphics clocks when the
 * board lists them (clocks.supported_graphics_mhz), else max at most
 * clocks.max_graphics_mhz.
 */
nvmlReturn_t nvmlDeviceSetGpuLockedClocks(nvmlDevice_t device, unsigned int minGpuClockMHz,
                                          unsigned int maxGpuClockMHz)
{
    char lo[16], hi[16];
    unsigned int top, graphics[MAX_SUPPORTED_CLOCKS], n;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (gpu_str(dev->gpu, "clocks.supported_graphics_mhz")) {
        RETURN_IF_ERROR(
            supported_clocks(dev->gpu, "clocks.supported_graphics_mhz", 1, graphics, &n));
        if (minGpuClockMHz > maxGpuClockMHz || !clock_listed(minGpuClockMHz, graphics, n) ||
            !clock_listed(maxGpuClockMHz, graphics, n))
            return NVML_ERROR_INVALID_ARGUMENT;
    } else {
        RETURN_IF_ERROR(gpu_uint(dev->gpu, "clocks.max_graphics_mhz", &top));
        if (minGpuClockMHz > maxGpuClockMHz || maxGpuClockMHz > top)
            return NVML_ERROR_INVALID_ARGUMENT;
    }
    snprintf(lo, sizeof(lo), "%u", minGpuClockMHz);
    snprintf(hi, sizeof(hi), "%u", maxGpuClockMHz);
    return commit_gpu(dev->gpu, "clocks.locked_min_mhz", lo, "clocks.locked_max_mhz", hi);
}

/* Unlocking removes both locked-clock keys of that GPU. */
nvmlReturn_t nvmlDeviceResetGpuLockedClocks(nvmlDevice_t device)
{
    unsigned int top;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!gpu_str(dev->gpu, "clocks.supported_graphics_mhz"))
        RETURN_IF_ERROR(gpu_uint(dev->gpu, "clocks.max_graphics_mhz", &top));
    return commit_gpu(dev->gpu, "clocks.locked_min_mhz", NULL, "clocks.locked_max_mhz", NULL);
}
