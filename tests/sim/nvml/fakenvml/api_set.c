/*
 * Fake NVML, setters (persistence, compute mode, power limit, locked graphics
 * and memory clocks, applications clocks, ECC, MIG mode). See fakenvml.h.
 */
#include "fakenvml.h"

/* ------------------------------------------------------------------------ */
/* Setters                                                                  */
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

/*
 * Locking the memory clock follows nvmlDeviceSetGpuLockedClocks: min <= max,
 * each one of the supported memory clocks when the board lists them
 * (clocks.supported_mem_mhz), else max at most clocks.max_mem_mhz.
 */
nvmlReturn_t nvmlDeviceSetMemoryLockedClocks(nvmlDevice_t device, unsigned int minMemClockMHz,
                                             unsigned int maxMemClockMHz)
{
    char lo[16], hi[16];
    unsigned int top, memory[MAX_SUPPORTED_CLOCKS], n;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (gpu_str(dev->gpu, "clocks.supported_mem_mhz")) {
        RETURN_IF_ERROR(supported_clocks(dev->gpu, "clocks.supported_mem_mhz", 0, memory, &n));
        if (minMemClockMHz > maxMemClockMHz || !clock_listed(minMemClockMHz, memory, n) ||
            !clock_listed(maxMemClockMHz, memory, n))
            return NVML_ERROR_INVALID_ARGUMENT;
    } else {
        RETURN_IF_ERROR(gpu_uint(dev->gpu, "clocks.max_mem_mhz", &top));
        if (minMemClockMHz > maxMemClockMHz || maxMemClockMHz > top)
            return NVML_ERROR_INVALID_ARGUMENT;
    }
    snprintf(lo, sizeof(lo), "%u", minMemClockMHz);
    snprintf(hi, sizeof(hi), "%u", maxMemClockMHz);
    return commit_gpu(dev->gpu, "clocks.locked_mem_min_mhz", lo, "clocks.locked_mem_max_mhz", hi);
}

/* Unlocking removes both locked memory clock keys of that GPU. */
nvmlReturn_t nvmlDeviceResetMemoryLockedClocks(nvmlDevice_t device)
{
    unsigned int top;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!gpu_str(dev->gpu, "clocks.supported_mem_mhz"))
        RETURN_IF_ERROR(gpu_uint(dev->gpu, "clocks.max_mem_mhz", &top));
    return commit_gpu(dev->gpu, "clocks.locked_mem_min_mhz", NULL, "clocks.locked_mem_max_mhz",
                      NULL);
}

/*
 * One clock of an applications clocks pair, checked as
 * nvmlDeviceSetGpuLockedClocks checks graphics clocks: one of the board's
 * supported clocks (supported_key) when it lists them, else at most its
 * maximum (max_key).  Neither key: NOT_SUPPORTED; *ok 0 for a clock NVML
 * refuses.
 */
static nvmlReturn_t applications_clock_ok(unsigned int gpu, const char *supported_key, int ranges,
                                          const char *max_key, unsigned int clock, int *ok)
{
    unsigned int list[MAX_SUPPORTED_CLOCKS], n, top;
    if (gpu_str(gpu, supported_key)) {
        RETURN_IF_ERROR(supported_clocks(gpu, supported_key, ranges, list, &n));
        *ok = clock_listed(clock, list, n);
    } else {
        RETURN_IF_ERROR(gpu_uint(gpu, max_key, &top));
        *ok = clock > 0 && clock <= top;
    }
    return NVML_SUCCESS;
}

/*
 * A memory and graphics clock pair the board supports (both clocks checked
 * by applications_clock_ok), written to clocks.applications_graphics_mhz
 * and clocks.applications_mem_mhz.
 */
nvmlReturn_t nvmlDeviceSetApplicationsClocks(nvmlDevice_t device, unsigned int memClockMHz,
                                             unsigned int graphicsClockMHz)
{
    char mem[16], graphics[16];
    int mem_ok, graphics_ok;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    RETURN_IF_ERROR(applications_clock_ok(dev->gpu, "clocks.supported_mem_mhz", 0,
                                          "clocks.max_mem_mhz", memClockMHz, &mem_ok));
    RETURN_IF_ERROR(applications_clock_ok(dev->gpu, "clocks.supported_graphics_mhz", 1,
                                          "clocks.max_graphics_mhz", graphicsClockMHz,
                                          &graphics_ok));
    if (!mem_ok || !graphics_ok)
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(mem, sizeof(mem), "%u", memClockMHz);
    snprintf(graphics, sizeof(graphics), "%u", graphicsClockMHz);
    return commit_gpu(dev->gpu, "clocks.applications_graphics_mhz", graphics,
                      "clocks.applications_mem_mhz", mem);
}

/* Back to the default applications clocks: removes both keys of that GPU. */
nvmlReturn_t nvmlDeviceResetApplicationsClocks(nvmlDevice_t device)
{
    int ok;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    RETURN_IF_ERROR(applications_clock_ok(dev->gpu, "clocks.supported_mem_mhz", 0,
                                          "clocks.max_mem_mhz", 0, &ok));
    RETURN_IF_ERROR(applications_clock_ok(dev->gpu, "clocks.supported_graphics_mhz", 1,
                                          "clocks.max_graphics_mhz", 0, &ok));
    return commit_gpu(dev->gpu, "clocks.applications_graphics_mhz", NULL,
                      "clocks.applications_mem_mhz", NULL);
}
