/*
 * Fake NVML, the fixture table, value parsing and NVML's error codes. See
 * fakenvml.h.
 */
#include "fakenvml.h"

/* ------------------------------------------------------------------------ */
/* Error codes                                                              */
/* ------------------------------------------------------------------------ */

const struct nvml_error error_table[] = {
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

const size_t error_table_count = sizeof(error_table) / sizeof(error_table[0]);

/* ------------------------------------------------------------------------ */
/* Fixture table                                                            */
/* ------------------------------------------------------------------------ */

struct fx_table fixture;

char fixture_path[PATH_MAX];

char *trim(char *s)
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
int split_line(char *line, char **key, char **value)
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

int fixture_load(const char *path)
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
const char *fx_str(const char *key)
{
    size_t i = fixture.count;
    while (i-- > 0)
        if (strcmp(fixture.entries[i].key, key) == 0)
            return fixture.entries[i].value;
    return NULL;
}

const char *fx_fmt(const char *fmt, ...)
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
void fx_update(const char *key, const char *value, int prefix)
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
const char *gpu_str(unsigned int gpu, const char *key)
{
    const char *v = fx_fmt("gpu.%u.%s", gpu, key);
    return v ? v : fx_fmt("gpu.*.%s", key);
}

/* gpu.<i>.<kind>.<n>.<key> with '*' defaults for the GPU and the item index. */
const char *sub_str(unsigned int gpu, const char *kind, unsigned int n, const char *key)
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
/* Value parsing                                                            */
/* ------------------------------------------------------------------------ */

int parse_ull(const char *s, unsigned long long *out)
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
nvmlReturn_t value_ull(const char *v, unsigned long long *out)
{
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!v)
        return NVML_ERROR_NOT_SUPPORTED;
    return parse_ull(v, out) ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

nvmlReturn_t value_uint(const char *v, unsigned int *out)
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

nvmlReturn_t value_int(const char *v, int *out)
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

nvmlReturn_t gpu_uint(unsigned int gpu, const char *key, unsigned int *out)
{
    return value_uint(gpu_str(gpu, key), out);
}

nvmlReturn_t value_enum(const char *v, const struct enum_name *names, size_t n,
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
int parse_return_code(const char *s, nvmlReturn_t *out)
{
    unsigned long long n;
    size_t i;
    if (strncasecmp(s, "NVML_ERROR_", 11) == 0)
        s += 11;
    for (i = 0; i < error_table_count; i++) {
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
int parse_bus_id(const char *s, unsigned int *domain, unsigned int *bus,
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

nvmlReturn_t copy_string(const char *value, char *buf, unsigned int length)
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
