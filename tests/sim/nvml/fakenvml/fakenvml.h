/*
 * A fake libnvidia-ml.so.1 driven by a key=value fixture file.
 *
 * It exports the NVML entry points that pynvml (nvidia-ml-py) calls for
 * inventory, health and configuration, with the real C signatures, struct
 * layouts and return codes, so that the unmodified pynvml runs against it as
 * it does on a GPU host.  The fixture format is described in
 * tests/sim/nvml/fixtures/README.md.
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
 *  - XID errors: gpu.<i>.xid.<n> lines, delivered through the event API to the
 *    event sets registered before they appeared (api_event.c).
 *  - Not thread safe: a caller with several threads serialises its calls.
 */

/*
 * This header is private to the library: the NVML types it implements (laid
 * out as in nvml.h), its internal types, and what its files share.  The files
 * follow the sections of the library: fixture.c (the fixture table, value
 * parsing, error codes), mig.c (MIG profile tables and instance state),
 * state.c (library state, handles, the checks every entry point makes, writing
 * setter results back), api_system.c (init and system queries), api_device.c
 * (device queries), api_mig.c (MIG GPU and compute instances), api_set.c
 * (setters), api_event.c (XID events).  exports.map keeps everything but the
 * nvml* entry points inside.
 */
#ifndef FAKENVML_H
#define FAKENVML_H

#define _GNU_SOURCE /* dladdr */
#define _XOPEN_SOURCE 700

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
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
/* NVML types, as laid out in nvml.h                                        */
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

/* One sample of nvmlDeviceGetProcessUtilization; times in microseconds. */
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU time of the sample */
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

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

STATIC_ASSERT(process_utilization_sample_size, sizeof(nvmlProcessUtilizationSample_t) == 32);

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
struct nvml_error {
    nvmlReturn_t code;
    const char *name;
    const char *text;
};

/* ------------------------------------------------------------------------ */
/* Internal types                                                           */
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

/* A fixture value that is either a number or one of the given names. */
struct enum_name {
    const char *name;
    unsigned int value;
};

#define RETURN_IF_ERROR(expr)                                                          \
    do {                                                                               \
        nvmlReturn_t rc_ = (expr);                                                     \
        if (rc_ != NVML_SUCCESS)                                                       \
            return rc_;                                                                \
    } while (0)

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

struct mig_model {
    const char *name; /* the value of gpu.<i>.mig.profiles */
    const struct gi_profile *profiles;
    size_t count;
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

struct mig_ref {
    unsigned int gi;
    unsigned int ci;
};

/* p points at an element of a (possibly multi-dimensional) handle array. */
#define IN_ARRAY(p, array)                                                             \
    ((uintptr_t)(p) >= (uintptr_t)(array) &&                                           \
     (uintptr_t)(p) < (uintptr_t)(array) + sizeof(array) &&                            \
     ((uintptr_t)(p) - (uintptr_t)(array)) % sizeof(*(p)) == 0)

enum { GPU_ONLY = 0, MIG_OK = 1 };

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

/*
 * One change to the fixture: set key to value, delete key (value NULL), or
 * delete every key that starts with key (prefix set, value NULL).
 */
struct fx_edit {
    const char *key;
    const char *value;
    int prefix;
};

/*
 * Supported clocks, as `nvidia-smi -q -d SUPPORTED_CLOCKS` lists them:
 * clocks.supported_mem_mhz and clocks.supported_graphics_mhz hold a comma
 * list ("9001,5001,810,405") or, for graphics, a range "MIN-MAX/STEP" that
 * stands for MAX, MAX-STEP, ..., MIN ((MAX - MIN) a multiple of STEP).  NVML
 * lists the clocks highest first; one graphics list applies to every
 * supported memory clock.  Absent: NOT_SUPPORTED; malformed: UNKNOWN.
 */
#define MAX_SUPPORTED_CLOCKS 1024

/*
 * Running processes: gpu.<i>.process.<p>.* (compute) and
 * gpu.<i>.graphics_process.<p>.* (graphics), each list counted by
 * gpu.<i>.<kind>.count.  At most MAX_PROCESSES of each are listed.
 */
#define COMPUTE_PROCESS "process"
#define GRAPHICS_PROCESS "graphics_process"
#define MAX_PROCESSES 64

/* fixture.c */
extern const struct nvml_error error_table[];
extern const size_t error_table_count;
extern struct fx_table fixture;
extern char fixture_path[PATH_MAX];
char *trim(char *s);
int split_line(char *line, char **key, char **value);
int fixture_load(const char *path);
const char *fx_str(const char *key);
const char *fx_fmt(const char *fmt, ...);
void fx_update(const char *key, const char *value, int prefix);
const char *gpu_str(unsigned int gpu, const char *key);
const char *sub_str(unsigned int gpu, const char *kind, unsigned int n, const char *key);
int parse_ull(const char *s, unsigned long long *out);
nvmlReturn_t value_ull(const char *v, unsigned long long *out);
nvmlReturn_t value_uint(const char *v, unsigned int *out);
nvmlReturn_t value_int(const char *v, int *out);
nvmlReturn_t gpu_uint(unsigned int gpu, const char *key, unsigned int *out);
nvmlReturn_t value_enum(const char *v, const struct enum_name *names, size_t n,
                        unsigned int *out);
int parse_return_code(const char *s, nvmlReturn_t *out);
int parse_bus_id(const char *s, unsigned int *domain, unsigned int *bus,
                 unsigned int *device, unsigned int *function);
nvmlReturn_t copy_string(const char *value, char *buf, unsigned int length);

/* mig.c */
extern const unsigned int ci_profile_slices[NVML_COMPUTE_INSTANCE_PROFILE_COUNT];
int mig_enabled(unsigned int gpu);
nvmlReturn_t mig_model_of(unsigned int gpu, const struct mig_model **out);
const struct gi_profile *profile_by_index(const struct mig_model *m, unsigned int index);
const struct gi_profile *profile_by_id(const struct mig_model *m, unsigned int id);
unsigned int slice_mask(unsigned int start, unsigned int size);
unsigned int gi_id_of(unsigned int start, unsigned int size);
int ci_offered(unsigned int gi_slices, unsigned int profile);
int ci_start_ok(unsigned int gi_slices, unsigned int slices, unsigned int start);
unsigned int ci_placement_count(unsigned int gi_slices, unsigned int slices);
unsigned int gi_used_slices(const struct mig_state *st);
unsigned int gi_count(const struct mig_state *st, const struct gi_profile *p);
unsigned int ci_used_slices(const struct mig_gi *gi);
nvmlReturn_t mig_load(unsigned int gpu, struct mig_state *st);
nvmlReturn_t mig_enter(unsigned int gpu, struct mig_state *st);
int gi_pick_start(const struct mig_state *st, const struct gi_profile *p, unsigned int *start);
unsigned int gi_remaining(const struct mig_state *st, const struct gi_profile *p);
unsigned int ci_remaining(const struct mig_gi *gi, unsigned int profile);
void ci_name(const struct mig_gi *gi, unsigned int profile, char *out, size_t len);
unsigned int ci_sm_count(const struct mig_state *st, const struct mig_gi *gi,
                         unsigned int profile);
void mig_uuid_for(unsigned int gpu, unsigned int gi, unsigned int ci, char *out, size_t len);
const char *mig_uuid(unsigned int gpu, unsigned int gi, unsigned int ci, char *buf, size_t len);
nvmlReturn_t mig_devices(unsigned int gpu, struct mig_ref *refs, unsigned int *count);

/* state.c */
extern unsigned int init_refcount;
extern unsigned int gpu_count;
extern struct fake_device gpu_devs[MAX_GPUS];
extern struct fake_device mig_devs[MAX_GPUS][MAX_GI_IDS][MAX_CI_IDS];
extern struct fake_gpu_instance gi_handles[MAX_GPUS][MAX_GI_IDS];
extern struct fake_compute_instance ci_handles[MAX_GPUS][MAX_GI_IDS][MAX_CI_IDS];
int symbol_dropped(const char *symbol);
int gpu_is_lost(unsigned int gpu);
void reset_call_counts(void);
nvmlReturn_t api_enter(const char *symbol);
nvmlReturn_t device_enter(const char *symbol, nvmlDevice_t handle, int mig_ok,
                          struct fake_device **out);
nvmlReturn_t commit(size_t n, const struct fx_edit edits[]);
nvmlReturn_t commit_gpu(unsigned int gpu, const char *key_a, const char *value_a,
                        const char *key_b, const char *value_b);
nvmlReturn_t commit_gpu_uint(unsigned int gpu, const char *key, unsigned int value);

/* api_system.c */
const char *nvmlErrorString(nvmlReturn_t result);

/* api_device.c */
nvmlReturn_t supported_clocks(unsigned int gpu, const char *key, int ranges,
                              unsigned int *out, unsigned int *n);
int clock_listed(unsigned int clock, const unsigned int *list, unsigned int n);
nvmlReturn_t process_pid(unsigned int gpu, const char *kind, unsigned int p, unsigned int *pid);
nvmlReturn_t read_process(unsigned int gpu, const char *kind, unsigned int p,
                          nvmlProcessInfo_t *info);

#endif /* FAKENVML_H */
