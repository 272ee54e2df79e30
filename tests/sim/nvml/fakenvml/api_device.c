/*
 * Fake NVML, device queries (identity, CPU affinity, memory, thermals,
 * power, clocks, fans, modes, ECC, MIG mode, NVLink, processes, topology).
 * See fakenvml.h.
 */
#include "fakenvml.h"

/* ------------------------------------------------------------------------ */
/* Device enumeration and identity                                          */
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
/* CPU affinity                                                             */
/* ------------------------------------------------------------------------ */

#define ULONG_BITS (sizeof(unsigned long) * CHAR_BIT)

/*
 * Set the bits of a Linux CPU list ("0-55,112-167") in set, size unsigned
 * longs (CPU c: bit c % 64 of word c / 64), after clearing them; CPUs past
 * the end are left out.  With size 0 the list is only checked.
 */
static nvmlReturn_t cpu_list_mask(const char *v, unsigned int size, unsigned long *set)
{
    const unsigned long long bits = (unsigned long long)size * ULONG_BITS;
    unsigned long long lo, hi, c;
    char tok[48], *dash;

    if (size > 0)
        memset(set, 0, size * sizeof(*set));
    while (v) {
        const char *end = strchr(v, ',');
        size_t len = end ? (size_t)(end - v) : strlen(v);
        if (len >= sizeof(tok))
            return NVML_ERROR_UNKNOWN;
        memcpy(tok, v, len);
        tok[len] = '\0';
        dash = strchr(tok, '-');
        if (dash)
            *dash = '\0';
        if (!parse_ull(trim(tok), &lo))
            return NVML_ERROR_UNKNOWN;
        hi = lo;
        if (dash && !parse_ull(trim(dash + 1), &hi))
            return NVML_ERROR_UNKNOWN;
        if (lo > hi)
            return NVML_ERROR_UNKNOWN;
        for (c = lo; c <= hi && c < bits; c++)
            set[c / ULONG_BITS] |= 1UL << (c % ULONG_BITS);
        v = end ? end + 1 : NULL;
    }
    return NVML_SUCCESS;
}

/*
 * The CPUs near the GPU: gpu.<i>.cpu_affinity, else numa.<n>.cpus of the
 * GPU's numa_node; neither: NOT_SUPPORTED.  One NUMA node per socket, so the
 * socket scope gives the same set.
 */
static nvmlReturn_t cpu_affinity(const struct fake_device *dev, unsigned int cpuSetSize,
                                 unsigned long *cpuSet)
{
    const char *v = gpu_str(dev->gpu, "cpu_affinity");
    int node;
    if (cpuSetSize == 0 || !cpuSet)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!v) {
        RETURN_IF_ERROR(value_int(gpu_str(dev->gpu, "numa_node"), &node));
        v = fx_fmt("numa.%d.cpus", node);
        if (!v)
            return NVML_ERROR_NOT_SUPPORTED;
    }
    RETURN_IF_ERROR(cpu_list_mask(v, 0, NULL));
    return cpu_list_mask(v, cpuSetSize, cpuSet);
}

nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize,
                                      unsigned long *cpuSet)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return cpu_affinity(dev, cpuSetSize, cpuSet);
}

/* nvmlAffinityScope_t: 0 NUMA node, 1 socket. */
nvmlReturn_t nvmlDeviceGetCpuAffinityWithinScope(nvmlDevice_t device, unsigned int cpuSetSize,
                                                 unsigned long *cpuSet, unsigned int scope)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (scope > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    return cpu_affinity(dev, cpuSetSize, cpuSet);
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                   */
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
/* Thermals, power, utilisation, clocks                                     */
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

/* Energy since the driver loaded, in mJ (Volta and later): fixture key power.energy_mj. */
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!energy)
        return NVML_ERROR_INVALID_ARGUMENT;
    return value_ull(gpu_str(dev->gpu, "power.energy_mj"), energy);
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
 * Applications clocks, for graphics (SM runs with it) and memory: what
 * nvmlDeviceSetApplicationsClocks wrote, else the board's default
 * (clocks.default_applications_*_mhz), else its maximum clock.  Video has no
 * applications clock: NOT_SUPPORTED.
 */
static nvmlReturn_t applications_clock(const struct fake_device *dev, unsigned int type,
                                       int default_only, unsigned int *clock)
{
    static const char *const set[] = {"clocks.applications_graphics_mhz",
                                      "clocks.applications_mem_mhz"};
    static const char *const fallback[] = {"clocks.default_applications_graphics_mhz",
                                           "clocks.default_applications_mem_mhz"};
    static const char *const maximum[] = {"clocks.max_graphics_mhz", "clocks.max_mem_mhz"};
    unsigned int domain;
    if (!clock || type >= 4)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (type == 3)
        return NVML_ERROR_NOT_SUPPORTED;
    domain = type == 2;
    if (!default_only && gpu_str(dev->gpu, set[domain]))
        return gpu_uint(dev->gpu, set[domain], clock);
    if (gpu_str(dev->gpu, fallback[domain]))
        return gpu_uint(dev->gpu, fallback[domain], clock);
    return gpu_uint(dev->gpu, maximum[domain], clock);
}

nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t device, unsigned int clockType,
                                            unsigned int *clockMHz)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return applications_clock(dev, clockType, 0, clockMHz);
}

nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t device, unsigned int clockType,
                                                   unsigned int *clockMHz)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    return applications_clock(dev, clockType, 1, clockMHz);
}

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

nvmlReturn_t supported_clocks(unsigned int gpu, const char *key, int ranges,
                              unsigned int *out, unsigned int *n)
{
    const char *v = gpu_str(gpu, key);
    if (!v)
        return NVML_ERROR_NOT_SUPPORTED;
    if (ranges && strchr(v, '-'))
        return parse_clock_range(v, out, n);
    return parse_clock_list(v, out, n);
}

int clock_listed(unsigned int clock, const unsigned int *list, unsigned int n)
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
/* Fans                                                                     */
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
/* Modes, ECC, retired pages, row remapping                                 */
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
/* MIG                                                                      */
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
/* NVLink                                                                   */
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
/* Processes and topology                                                   */
/* ------------------------------------------------------------------------ */

/*
 * The pid of process p of a list: its pid key, or the number on the first
 * line of its pid_file, read at every call.  NOT_FOUND while that file is
 * missing or empty or names a process that does not run (no /proc/<pid>): a
 * job that has not started yet or has ended, which the list leaves out.
 */
nvmlReturn_t process_pid(unsigned int gpu, const char *kind, unsigned int p, unsigned int *pid)
{
    const char *pid_file = sub_str(gpu, kind, p, "pid_file");
    char line[32], proc[48];
    unsigned long long value;
    struct stat st;
    FILE *f;

    if (!pid_file)
        return value_uint(sub_str(gpu, kind, p, "pid"), pid) == NVML_SUCCESS ? NVML_SUCCESS
                                                                         : NVML_ERROR_UNKNOWN;
    f = fopen(pid_file, "r");
    if (!f)
        return NVML_ERROR_NOT_FOUND;
    if (!fgets(line, sizeof(line), f)) {
        fclose(f);
        return NVML_ERROR_NOT_FOUND;
    }
    fclose(f);
    if (!parse_ull(trim(line), &value) || value == 0 || value > INT_MAX)
        return NVML_ERROR_NOT_FOUND;
    snprintf(proc, sizeof(proc), "/proc/%llu", value);
    if (stat(proc, &st) != 0)
        return NVML_ERROR_NOT_FOUND;
    *pid = (unsigned int)value;
    return NVML_SUCCESS;
}

/* Process p of a list (COMPUTE_PROCESS, GRAPHICS_PROCESS); NOT_FOUND: not running (pid_file). */
nvmlReturn_t read_process(unsigned int gpu, const char *kind, unsigned int p,
                          nvmlProcessInfo_t *info)
{
    const char *used = sub_str(gpu, kind, p, "used_mib");
    const char *gi = sub_str(gpu, kind, p, "gi_id");
    const char *ci = sub_str(gpu, kind, p, "ci_id");
    unsigned long long mib = 0;

    memset(info, 0, sizeof(*info));
    RETURN_IF_ERROR(process_pid(gpu, kind, p, &info->pid));
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

/* Length of a process list: gpu.<i>.<kind>.count; absent is 0 where optional. */
static nvmlReturn_t process_count(unsigned int gpu, const char *kind, int optional,
                                  unsigned int *total)
{
    char key[48];
    snprintf(key, sizeof(key), "%s.count", kind);
    if (optional && !gpu_str(gpu, key)) {
        *total = 0;
        return NVML_SUCCESS;
    }
    return gpu_uint(gpu, key, total);
}

/*
 * NVML's size protocol: with *infoCount too small (the caller's first call
 * passes 0 and NULL) the needed count comes back with INSUFFICIENT_SIZE, or
 * SUCCESS when no process runs.  A MIG device handle lists the processes of
 * its own GPU and compute instance.  Without process.count the compute list
 * is NOT_SUPPORTED; without graphics_process.count no graphics process runs,
 * as on a GPU that drives no display.
 */
static nvmlReturn_t running_processes(const struct fake_device *dev, const char *kind,
                                      unsigned int *infoCount, nvmlProcessInfo_t *infos)
{
    nvmlProcessInfo_t found[MAX_PROCESSES];
    unsigned int total, p, n = 0;
    if (!infoCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(process_count(dev->gpu, kind, strcmp(kind, COMPUTE_PROCESS) != 0, &total));
    for (p = 0; p < total && n < MAX_PROCESSES; p++) {
        nvmlReturn_t rc = read_process(dev->gpu, kind, p, &found[n]);
        if (rc == NVML_ERROR_NOT_FOUND)
            continue;
        RETURN_IF_ERROR(rc);
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
    return running_processes(dev, COMPUTE_PROCESS, infoCount, infos);
}

/* The R450..R470 name; nvmlProcessInfo_v2_t has the same layout as _v3_t. */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                     unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
    DEVICE_ENTER(device, dev, MIG_OK);
    return running_processes(dev, COMPUTE_PROCESS, infoCount, infos);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                      unsigned int *infoCount,
                                                      nvmlProcessInfo_t *infos)
{
    DEVICE_ENTER(device, dev, MIG_OK);
    return running_processes(dev, GRAPHICS_PROCESS, infoCount, infos);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
                                                      unsigned int *infoCount,
                                                      nvmlProcessInfo_t *infos)
{
    DEVICE_ENTER(device, dev, MIG_OK);
    return running_processes(dev, GRAPHICS_PROCESS, infoCount, infos);
}

/* A per-process utilization value: absent 0, a percentage otherwise. */
static nvmlReturn_t percent_value(const char *v, unsigned int *out)
{
    *out = 0;
    if (!v)
        return NVML_SUCCESS;
    RETURN_IF_ERROR(value_uint(v, out));
    return *out <= 100 ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

/*
 * The utilization samples newer than after: one for each process of either
 * list that has sm_util or mem_util (the first entry of a pid that is in both
 * lists), stamped util_timestamp_us, else the time of the call.
 */
static nvmlReturn_t utilization_samples(unsigned int gpu, unsigned long long after,
                                        nvmlProcessUtilizationSample_t *out, unsigned int *n)
{
    static const char *const kinds[] = {COMPUTE_PROCESS, GRAPHICS_PROCESS};
    unsigned int k, p, i, total, pid, pids[2 * MAX_PROCESSES], n_pids = 0;
    unsigned long long stamp, now;
    struct timespec ts;
    nvmlReturn_t rc;
    const char *v;
    int seen;

    clock_gettime(CLOCK_REALTIME, &ts);
    now = (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000ULL;
    *n = 0;
    for (k = 0; k < 2; k++) {
        RETURN_IF_ERROR(process_count(gpu, kinds[k], 1, &total));
        for (p = 0; p < total && p < MAX_PROCESSES; p++) {
            if (!sub_str(gpu, kinds[k], p, "sm_util") && !sub_str(gpu, kinds[k], p, "mem_util"))
                continue;
            rc = process_pid(gpu, kinds[k], p, &pid);
            if (rc == NVML_ERROR_NOT_FOUND)
                continue;
            RETURN_IF_ERROR(rc);
            for (i = 0, seen = 0; i < n_pids; i++)
                seen |= pids[i] == pid;
            if (seen)
                continue;
            pids[n_pids++] = pid;
            v = sub_str(gpu, kinds[k], p, "util_timestamp_us");
            stamp = now;
            if (v)
                RETURN_IF_ERROR(value_ull(v, &stamp));
            if (stamp <= after)
                continue;
            memset(&out[*n], 0, sizeof(out[*n]));
            out[*n].pid = pid;
            out[*n].timeStamp = stamp;
            RETURN_IF_ERROR(percent_value(sub_str(gpu, kinds[k], p, "sm_util"), &out[*n].smUtil));
            RETURN_IF_ERROR(percent_value(sub_str(gpu, kinds[k], p, "mem_util"), &out[*n].memUtil));
            RETURN_IF_ERROR(percent_value(sub_str(gpu, kinds[k], p, "enc_util"), &out[*n].encUtil));
            RETURN_IF_ERROR(percent_value(sub_str(gpu, kinds[k], p, "dec_util"), &out[*n].decUtil));
            (*n)++;
        }
    }
    return NVML_SUCCESS;
}

/*
 * The size query (utilization NULL) returns INSUFFICIENT_SIZE and the number
 * of samples, at least 1: an idle GPU answers it the same way.  The call with
 * a buffer returns the samples newer than lastSeenTimeStamp, NOT_FOUND when
 * there are none, INSUFFICIENT_SIZE (and the count) when they do not fit.
 * MIG device handles: NOT_SUPPORTED.
 */
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount,
                                             unsigned long long lastSeenTimeStamp)
{
    nvmlProcessUtilizationSample_t found[2 * MAX_PROCESSES];
    unsigned int n;
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!processSamplesCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    RETURN_IF_ERROR(utilization_samples(dev->gpu, lastSeenTimeStamp, found, &n));
    if (!utilization) {
        *processSamplesCount = n > 0 ? n : 1;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n == 0)
        return NVML_ERROR_NOT_FOUND;
    if (*processSamplesCount < n) {
        *processSamplesCount = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    memcpy(utilization, found, n * sizeof(found[0]));
    *processSamplesCount = n;
    return NVML_SUCCESS;
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
