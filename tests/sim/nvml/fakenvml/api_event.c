/*
 * Fake NVML, events: XID errors delivered from the fixture through NVML's
 * event API (nvmlEventSetCreate, nvmlDeviceGetSupportedEventTypes,
 * nvmlDeviceRegisterEvents, nvmlEventSetWait, nvmlEventSetFree).
 *
 * An XID is a fixture line gpu.<i>.xid.<n>=<code>: the n-th XID of GPU i
 * (n from 1, in the order they happened).  Like the driver, an event set
 * gets only the XIDs that happen after its registration: registering a GPU
 * notes the highest n the fixture has for it, and every wait reads the
 * fixture file again (not the table that nvmlInit loaded), so a line that a
 * test appends while a process waits is delivered to that process, once.
 * Each event set remembers what it delivered; XIDs of several GPUs come in
 * the order of the GPUs, then of n.  See fixtures/README.md.
 */
#include "fakenvml.h"

#define EVENT_XID 0x8ULL                  /* nvmlEventTypeXidCriticalError */
#define EVENT_ECC 0x3ULL                  /* single and double bit ECC errors */
#define EVENT_SUPPORTED (EVENT_XID | EVENT_ECC)
#define NO_INSTANCE 0xFFFFFFFFU           /* not a MIG device's event */
#define WAIT_STEP_MS 20

struct fake_event_set {
    unsigned long long types[MAX_GPUS];   /* what each GPU is registered for */
    unsigned long long last[MAX_GPUS];    /* the highest XID n delivered or seen at registration */
};

typedef struct fake_event_set *nvmlEventSet_t;

typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

/* One gpu.<i>.xid.<n>=<code> line; 0 for any other line. */
static int xid_line(char *line, unsigned int *gpu, unsigned long long *n, unsigned long long *code)
{
    char *key, *value, *end;
    unsigned long g;

    if (!split_line(line, &key, &value) || strncmp(key, "gpu.", 4) != 0)
        return 0;
    errno = 0;
    g = strtoul(key + 4, &end, 10);
    if (errno || end == key + 4 || strncmp(end, ".xid.", 5) != 0 || g >= MAX_GPUS)
        return 0;
    if (!parse_ull(end + 5, n) || !parse_ull(value, code))
        return 0;
    *gpu = (unsigned int)g;
    return 1;
}

/*
 * The next XID for the set after what it has had (found 1), none (0), or the
 * fixture unreadable (-1).  With take 0, only notes in last[] the highest n of
 * each GPU in mask (registration).
 */
static int next_xid(struct fake_event_set *set, int take, unsigned long long mask_gpu,
                    unsigned int *gpu, unsigned long long *code)
{
    char line[1024];
    unsigned int g, best_gpu = 0;
    unsigned long long n, c, best_n = 0, best_code = 0;
    int found = 0;
    FILE *in = fopen(fixture_path, "r");

    if (!in)
        return -1;
    while (fgets(line, sizeof(line), in)) {
        if (!xid_line(line, &g, &n, &c))
            continue;
        if (!take) {
            if (g == mask_gpu && n > set->last[g])
                set->last[g] = n;
            continue;
        }
        if (!(set->types[g] & EVENT_XID) || n <= set->last[g])
            continue;
        if (!found || g < best_gpu || (g == best_gpu && n < best_n)) {
            found = 1;
            best_gpu = g;
            best_n = n;
            best_code = c;
        }
    }
    fclose(in);
    if (found) {
        set->last[best_gpu] = best_n;
        *gpu = best_gpu;
        *code = best_code;
    }
    return found;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    API_ENTER();
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    *set = calloc(1, sizeof(**set));
    return *set ? NVML_SUCCESS : NVML_ERROR_MEMORY;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    API_ENTER();
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    free(set);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!eventTypes)
        return NVML_ERROR_INVALID_ARGUMENT;
    *eventTypes = EVENT_SUPPORTED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set)
{
    DEVICE_ENTER(device, dev, GPU_ONLY);
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (eventTypes & ~EVENT_SUPPORTED)
        return NVML_ERROR_NOT_SUPPORTED;
    if (next_xid(set, 0, dev->gpu, NULL, NULL) < 0)
        return NVML_ERROR_UNKNOWN;
    set->types[dev->gpu] |= eventTypes;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    unsigned int waited = 0, gpu;
    unsigned long long code;
    struct timespec step = {0, WAIT_STEP_MS * 1000000L};
    int found;

    API_ENTER();
    if (!set || !data)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (;;) {
        found = next_xid(set, 1, 0, &gpu, &code);
        if (found < 0)
            return NVML_ERROR_UNKNOWN;
        if (found) { /* a lost GPU's XID (79) is delivered too: the set, not the GPU, is asked */
            data->device = &gpu_devs[gpu];
            data->eventType = EVENT_XID;
            data->eventData = code;
            data->gpuInstanceId = NO_INSTANCE;
            data->computeInstanceId = NO_INSTANCE;
            return NVML_SUCCESS;
        }
        if (waited >= timeoutms)
            return NVML_ERROR_TIMEOUT;
        nanosleep(&step, NULL);
        waited += WAIT_STEP_MS;
    }
}

nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    return nvmlEventSetWait_v2(set, data, timeoutms);
}
