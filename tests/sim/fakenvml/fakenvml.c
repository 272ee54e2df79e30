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
#define MAX_MIG_DEVICES 8 /* NVML: at most 7 MIG devices per GPU */
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

/* An opaque handle: here a pointer into gpu_devs[] or mig_devs[][]. */
struct fake_device {
    unsigned int gpu;   /* index of the physical GPU */
    int is_mig;         /* 1 for a MIG device handle */
    unsigned int mig;   /* MIG device index on that GPU */
};
typedef struct fake_device *nvmlDevice_t;

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

#define STATIC_ASSERT(name, cond) typedef char static_assert_##name[(cond) ? 1 : -1]
STATIC_ASSERT(memory_v2_version, sizeof(nvmlMemory_v2_t) == 40);
STATIC_ASSERT(pci_info_size, sizeof(nvmlPciInfo_t) == 68);
STATIC_ASSERT(process_info_size, sizeof(nvmlProcessInfo_t) == 24);

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

/* Keep the in-memory table in step with a setter's write (NULL removes). */
static void fx_update(const char *key, const char *value)
{
    size_t i = 0;
    while (i < fixture.count) {
        if (strcmp(fixture.entries[i].key, key) == 0) {
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

/* ------------------------------------------------------------------------ */
/* Library state, handles and the checks every entry point makes             */
/* ------------------------------------------------------------------------ */

static unsigned int init_refcount;
static unsigned int gpu_count;
static struct fake_device gpu_devs[MAX_GPUS];
static struct fake_device mig_devs[MAX_GPUS][MAX_MIG_DEVICES];

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

static int mig_enabled(unsigned int gpu)
{
    unsigned long long mode;
    return parse_ull(gpu_str(gpu, "mig.current"), &mode) && mode == 1;
}

/* MIG devices exist only while MIG mode is on; there are mig.count of them. */
static unsigned int mig_device_count(unsigned int gpu)
{
    unsigned long long n;
    if (!mig_enabled(gpu) || !parse_ull(gpu_str(gpu, "mig.count"), &n))
        return 0;
    return n > MAX_MIG_DEVICES ? MAX_MIG_DEVICES : (unsigned int)n;
}

/* Map a caller's handle back to a device of the current fixture, or NULL. */
static struct fake_device *resolve(nvmlDevice_t handle)
{
    uintptr_t p = (uintptr_t)handle;
    uintptr_t gpu_lo = (uintptr_t)gpu_devs, gpu_hi = gpu_lo + sizeof(gpu_devs);
    uintptr_t mig_lo = (uintptr_t)mig_devs, mig_hi = mig_lo + sizeof(mig_devs);

    if (p >= gpu_lo && p < gpu_hi && (p - gpu_lo) % sizeof(struct fake_device) == 0)
        return handle->gpu < gpu_count ? handle : NULL;
    if (p >= mig_lo && p < mig_hi && (p - mig_lo) % sizeof(struct fake_device) == 0)
        return handle->gpu < gpu_count && handle->mig < mig_device_count(handle->gpu)
                   ? handle
                   : NULL;
    return NULL;
}

static nvmlReturn_t api_enter(const char *symbol)
{
    if (symbol_dropped(symbol))
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (init_refcount == 0)
        return NVML_ERROR_UNINITIALIZED;
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

#define RETURN_IF_ERROR(expr)                                                          \
    do {                                                                               \
        nvmlReturn_t rc_ = (expr);                                                     \
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
 * Copy the fixture's lines from in to out with keys[i] set to values[i]
 * (NULL deletes the key): the first line of a key is replaced, later
 * duplicates dropped, a missing key appended; every other line and comment
 * is kept as it was.  Returns 0 on success.
 */
#define MAX_KEYS_PER_WRITE 2

static int write_updated_lines(FILE *in, FILE *out, size_t n, char *const keys[],
                               const char *const values[])
{
    char *line = NULL, *copy, *key, *value;
    int done[MAX_KEYS_PER_WRITE] = {0}, last_newline = 1, failed = 0;
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
                if (strcmp(key, keys[i]) == 0)
                    match = (int)i;
        free(copy);
        if (match < 0) {
            failed |= fputs(line, out) == EOF;
            last_newline = line[len - 1] == '\n';
        } else {
            if (!done[match] && values[match]) {
                failed |= fprintf(out, "%s=%s\n", keys[match], values[match]) < 0;
                last_newline = 1;
            }
            done[match] = 1;
        }
    }
    free(line);
    failed |= ferror(in) != 0;

    for (i = 0; i < n && !failed; i++) {
        if (done[i] || !values[i])
            continue;
        if (!last_newline)
            failed |= fputc('\n', out) == EOF;
        failed |= fprintf(out, "%s=%s\n", keys[i], values[i]) < 0;
        last_newline = 1;
    }
    return failed ? -1 : 0;
}

/*
 * Apply a setter's change to the fixture file: the new content is written to
 * a temporary file beside it (same mode) and renamed over it, so a reader
 * never sees half a file.  The in-memory table follows.
 */
static nvmlReturn_t fixture_rewrite(size_t n, char *const keys[], const char *const values[])
{
    char tmp[PATH_MAX + 32];
    const char *slash = strrchr(fixture_path, '/');
    int fd, failed, err = 0;
    struct stat st;
    FILE *in, *out;
    size_t i;

    if (n > MAX_KEYS_PER_WRITE)
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

    failed = write_updated_lines(in, out, n, keys, values) != 0;
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
        fx_update(keys[i], values[i]);
    return NVML_SUCCESS;
}

/*
 * The last step of every setter, after its arguments were validated:
 * setters_error models a caller without the rights to change the GPU.
 * key_b may be NULL; a NULL value deletes its key.
 */
static nvmlReturn_t commit_gpu(unsigned int gpu, const char *key_a, const char *value_a,
                               const char *key_b, const char *value_b)
{
    char full_a[128], full_b[128];
    char *keys[2] = {full_a, full_b};
    const char *values[2] = {value_a, value_b};
    const char *forced = fx_str("setters_error");
    nvmlReturn_t rc;

    if (forced) {
        if (!parse_return_code(forced, &rc))
            return NVML_ERROR_UNKNOWN;
        if (rc != NVML_SUCCESS)
            return rc;
    }
    snprintf(full_a, sizeof(full_a), "gpu.%u.%s", gpu, key_a);
    if (key_b)
        snprintf(full_b, sizeof(full_b), "gpu.%u.%s", gpu, key_b);
    return fixture_rewrite(key_b ? 2 : 1, keys, values);
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
    unsigned int g, m;

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
        gpu_devs[g].mig = 0;
        for (m = 0; m < MAX_MIG_DEVICES; m++) {
            mig_devs[g][m].gpu = g;
            mig_devs[g][m].is_mig = 1;
            mig_devs[g][m].mig = m;
        }
    }
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
    unsigned int g, m, migs;
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
        migs = mig_device_count(g);
        for (m = 0; m < migs; m++) {
            v = sub_str(g, "mig", m, "uuid");
            if (v && strcmp(v, uuid) == 0) {
                *device = &mig_devs[g][m];
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

/* A MIG device is named "<GPU name> MIG <profile>" unless the fixture says otherwise. */
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    char composed[160];
    const char *profile, *gpu_name;
    DEVICE_ENTER(device, dev, MIG_OK);
    if (!dev->is_mig)
        return copy_string(gpu_str(dev->gpu, "name"), name, length);
    if (sub_str(dev->gpu, "mig", dev->mig, "name"))
        return copy_string(sub_str(dev->gpu, "mig", dev->mig, "name"), name, length);
    profile = sub_str(dev->gpu, "mig", dev->mig, "profile");
    gpu_name = gpu_str(dev->gpu, "name");
    if (!profile || !gpu_name)
        return copy_string(NULL, name, length);
    snprintf(composed, sizeof(composed), "%s MIG %s", gpu_name, profile);
    return copy_string(composed, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    DEVICE_ENTER(device, dev, MIG_OK);
    if (dev->is_mig)
        return copy_string(sub_str(dev->gpu, "mig", dev->mig, "uuid"), uuid, length);
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

/* Sizes in bytes for a GPU or a MIG device; reserved is FB the driver keeps. */
static nvmlReturn_t memory_values(const struct fake_device *dev, unsigned long long *total,
                                  unsigned long long *used, unsigned long long *reserved)
{
    const char *t, *u, *r;
    if (dev->is_mig) {
        t = sub_str(dev->gpu, "mig", dev->mig, "memory.total_mib");
        u = sub_str(dev->gpu, "mig", dev->mig, "memory.used_mib");
        r = NULL;
    } else {
        t = gpu_str(dev->gpu, "memory.total_mib");
        u = gpu_str(dev->gpu, "memory.used_mib");
        r = gpu_str(dev->gpu, "memory.reserved_mib");
    }
    *used = *reserved = 0;
    RETURN_IF_ERROR(value_ull(t, total));
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
    unsigned int max;
    DEVICE_ENTER(device, dev, MIG_OK);
    if (dev->is_mig || !migDevice)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!gpu_str(dev->gpu, "mig.current"))
        return NVML_ERROR_NOT_SUPPORTED;
    if (gpu_uint(dev->gpu, "mig.max_devices", &max) == NVML_SUCCESS && index >= max)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (index >= mig_device_count(dev->gpu))
        return NVML_ERROR_NOT_FOUND;
    *migDevice = &mig_devs[dev->gpu][index];
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
    if (!dev->is_mig)
        return NVML_ERROR_INVALID_ARGUMENT;
    return value_uint(sub_str(dev->gpu, "mig", dev->mig, "gi_id"), id);
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
    DEVICE_ENTER(device, dev, MIG_OK);
    if (!dev->is_mig)
        return NVML_ERROR_INVALID_ARGUMENT;
    return value_uint(sub_str(dev->gpu, "mig", dev->mig, "ci_id"), id);
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
    unsigned int total, p, n = 0, gi = 0, ci = 0;
    if (!infoCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(gpu_uint(dev->gpu, "process.count", &total));
    if (dev->is_mig) {
        RETURN_IF_ERROR(value_uint(sub_str(dev->gpu, "mig", dev->mig, "gi_id"), &gi));
        RETURN_IF_ERROR(value_uint(sub_str(dev->gpu, "mig", dev->mig, "ci_id"), &ci));
    }
    for (p = 0; p < total && n < sizeof(found) / sizeof(found[0]); p++) {
        RETURN_IF_ERROR(read_process(dev->gpu, p, &found[n]));
        if (!dev->is_mig || (found[n].gpuInstanceId == gi && found[n].computeInstanceId == ci))
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

/* Locking needs a known clock range: min <= max <= clocks.max_graphics_mhz. */
nvmlReturn_t nvmlDeviceSetGpuLockedClocks(nvmlDevice_t device, unsigned int minGpuClockMHz,
                                          unsigned int maxGpuClockMHz)
{
    char lo[16], hi[16];
    unsigned int top;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    RETURN_IF_ERROR(gpu_uint(dev->gpu, "clocks.max_graphics_mhz", &top));
    if (minGpuClockMHz > maxGpuClockMHz || maxGpuClockMHz > top)
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(lo, sizeof(lo), "%u", minGpuClockMHz);
    snprintf(hi, sizeof(hi), "%u", maxGpuClockMHz);
    return commit_gpu(dev->gpu, "clocks.locked_min_mhz", lo, "clocks.locked_max_mhz", hi);
}

/* Unlocking removes both locked-clock keys of that GPU. */
nvmlReturn_t nvmlDeviceResetGpuLockedClocks(nvmlDevice_t device)
{
    unsigned int top;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    RETURN_IF_ERROR(gpu_uint(dev->gpu, "clocks.max_graphics_mhz", &top));
    return commit_gpu(dev->gpu, "clocks.locked_min_mhz", NULL, "clocks.locked_max_mhz", NULL);
}
