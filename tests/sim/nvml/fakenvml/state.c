/*
 * Fake NVML, library state, handles, the checks every entry point makes, and
 * writing setter results back. See fakenvml.h.
 */
#include "fakenvml.h"

/* ------------------------------------------------------------------------ */
/* Library state, handles and the checks every entry point makes            */
/* ------------------------------------------------------------------------ */

unsigned int init_refcount;

unsigned int gpu_count;

struct fake_device gpu_devs[MAX_GPUS];

struct fake_device mig_devs[MAX_GPUS][MAX_GI_IDS][MAX_CI_IDS];

struct fake_gpu_instance gi_handles[MAX_GPUS][MAX_GI_IDS];

struct fake_compute_instance ci_handles[MAX_GPUS][MAX_GI_IDS][MAX_CI_IDS];

int symbol_dropped(const char *symbol)
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

int gpu_is_lost(unsigned int gpu)
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

void reset_call_counts(void)
{
    counted_symbols = 0;
}

nvmlReturn_t api_enter(const char *symbol)
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

/*
 * Checks shared by every per-device call: symbol present, library
 * initialised, handle valid, GPU not lost.  Calls that have no meaning for a
 * MIG device handle answer NOT_SUPPORTED for one.
 */
nvmlReturn_t device_enter(const char *symbol, nvmlDevice_t handle, int mig_ok,
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

/* ------------------------------------------------------------------------ */
/* Writing setter results back to the fixture                               */
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
nvmlReturn_t commit(size_t n, const struct fx_edit edits[])
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
nvmlReturn_t commit_gpu(unsigned int gpu, const char *key_a, const char *value_a,
                        const char *key_b, const char *value_b)
{
    char full_a[128], full_b[128];
    struct fx_edit edits[2] = {{full_a, value_a, 0}, {full_b, value_b, 0}};

    snprintf(full_a, sizeof(full_a), "gpu.%u.%s", gpu, key_a);
    if (key_b)
        snprintf(full_b, sizeof(full_b), "gpu.%u.%s", gpu, key_b);
    return commit(key_b ? 2 : 1, edits);
}

nvmlReturn_t commit_gpu_uint(unsigned int gpu, const char *key, unsigned int value)
{
    char text[16];
    snprintf(text, sizeof(text), "%u", value);
    return commit_gpu(gpu, key, text, NULL, NULL);
}
