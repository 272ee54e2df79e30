/*
 * Fake NVML, initialisation and system queries (nvmlInit*, nvmlShutdown,
 * nvmlSystem*, nvmlErrorString). See fakenvml.h.
 */
#include "fakenvml.h"

/* ------------------------------------------------------------------------ */
/* Initialisation                                                           */
/* ------------------------------------------------------------------------ */

/*
 * The file this library was loaded from, resolved when it is loaded: a
 * relative LD_LIBRARY_PATH would name another file after a chdir.
 */
static char library_file[PATH_MAX];

__attribute__((constructor)) static void find_library_file(void)
{
    Dl_info info;

    if (!dladdr((void *)find_library_file, &info) || !info.dli_fname || !realpath(info.dli_fname, library_file))
        library_file[0] = '\0';
}

/*
 * The release of this library: fixture key library_version, or with "auto" the
 * release in the name of the file it was loaded from (a driver package
 * installs libnvidia-ml.so.<release> and the libnvidia-ml.so.1 link to it).
 * Empty when neither says.
 */
static void library_release(char *out, size_t len)
{
    const char *value = fx_str("library_version");
    const char *name, *marker = "libnvidia-ml.so.";

    out[0] = '\0';
    if (!value)
        return;
    if (strcmp(value, "auto") != 0) {
        snprintf(out, len, "%s", value);
        return;
    }
    name = strrchr(library_file, '/');
    name = name ? name + 1 : library_file;
    if (strncmp(name, marker, strlen(marker)) == 0 && strcmp(name + strlen(marker), "1") != 0)
        snprintf(out, len, "%s", name + strlen(marker));
}

/* Whether the library's release differs from the loaded kernel module's (driver_version). */
static int library_mismatch(void)
{
    char release[128];
    const char *loaded = fx_str("driver_version");

    library_release(release, sizeof(release));
    return release[0] != '\0' && loaded && strcmp(release, loaded) != 0;
}

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

    /* A driver changed without a reboot: this library is not the loaded kernel module's release. */
    if (library_mismatch())
        return NVML_ERROR_LIB_RM_VERSION_MISMATCH;

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
    for (i = 0; i < error_table_count; i++)
        if (error_table[i].code == result)
            return error_table[i].text;
    return "Unknown Error";
}

/* ------------------------------------------------------------------------ */
/* System queries                                                           */
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
    static const char *const kinds[] = {COMPUTE_PROCESS, GRAPHICS_PROCESS};
    unsigned int g, k, p, count, proc_pid;
    const char *proc_name;
    char key[48];
    API_ENTER();
    if (!name || length == 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (g = 0; g < gpu_count; g++) {
        for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
            snprintf(key, sizeof(key), "%s.count", kinds[k]);
            if (gpu_uint(g, key, &count) != NVML_SUCCESS)
                continue;
            for (p = 0; p < count; p++) {
                if (process_pid(g, kinds[k], p, &proc_pid) != NVML_SUCCESS || proc_pid != pid)
                    continue;
                proc_name = sub_str(g, kinds[k], p, "name");
                if (!proc_name)
                    return NVML_ERROR_NOT_FOUND;
                snprintf(name, length, "%s", proc_name);
                return NVML_SUCCESS;
            }
        }
    }
    return NVML_ERROR_NOT_FOUND;
}
