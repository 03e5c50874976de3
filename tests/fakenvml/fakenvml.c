/*
 * fakenvml.c - a stand-in for libnvidia-ml.so.1 for the tests: the NVML
 * calls Sluice makes, answering from a state file, so that discovery,
 * sampling, energy and idle detection run on a machine without a GPU.
 * Loaded by sluiced through SLUICE_NVML_LIB; built without sanitizers.
 *
 * $FAKE_NVML_STATE names the file, read again at every call (a test
 * rewrites it to change what the GPUs report). One line per GPU:
 *
 *   UTIL_PCT MEM_USED_MIB MEM_TOTAL_MIB POWER_MW TEMP_C ENERGY [minor=M] NAME...
 *
 * ENERGY is "energy" (the GPU has a total energy counter) or "noenergy"
 * (nvmlDeviceGetTotalEnergyConsumption answers NOT_SUPPORTED, as on
 * pre-Volta GPUs). The counter reads POWER_MW x the wall clock in ms /
 * 1000 mJ, as if the GPU had always drawn that power: exact for a test
 * that keeps each GPU's power constant. A POWER_MW of -1 makes
 * nvmlDeviceGetPowerUsage fail too. nvmlDeviceGetMinorNumber answers M
 * (its /dev/nvidia<M>), the GPU's index when there is no minor= word, and
 * NOT_SUPPORTED for minor=-1. Lines starting with '#' are comments; the
 * UUID of GPU i is GPU-fake-000i.
 *
 * $FAKE_NVML_CLOCK, when set, names a file holding the time in ms that the
 * energy counter is read at, in place of the wall clock: a test that also
 * gives the GPU monitor its clock then reads exact energies without
 * waiting for time to pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_UNKNOWN 999
#define MAX_GPUS 64

struct fake_gpu {
    unsigned util, temp;
    unsigned long long used_mib, total_mib;
    long long power_mw;
    int has_energy;
    long minor;                  /* -1: not supported */
    char name[96];
};

struct nvml_memory { unsigned long long total, free, used; };
struct nvml_utilization { unsigned int gpu, memory; };

/* A device handle is its index + 1 (never NULL). */
typedef struct fake_dev *nvml_device_t;

static int inited;

static int load(struct fake_gpu *g, int max)
{
    const char *path = getenv("FAKE_NVML_STATE");
    char line[512];
    int n = 0;
    FILE *f;

    if (!path || !(f = fopen(path, "r")))
        return -1;
    while (n < max && fgets(line, sizeof(line), f)) {
        char energy[16];
        int off = 0;
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        if (sscanf(line, "%u %llu %llu %lld %u %15s %n", &g[n].util, &g[n].used_mib,
                   &g[n].total_mib, &g[n].power_mw, &g[n].temp, energy, &off) < 6 ||
            off == 0)
            continue;
        g[n].has_energy = strcmp(energy, "energy") == 0;
        g[n].minor = n;
        if (strncmp(line + off, "minor=", 6) == 0) {
            char *end = NULL;
            g[n].minor = strtol(line + off + 6, &end, 10);
            off = (int)(end - line);
            while (line[off] == ' ')
                off++;
        }
        snprintf(g[n].name, sizeof(g[n].name), "%s", line + off);
        n++;
    }
    fclose(f);
    return n;
}

static int get(nvml_device_t d, struct fake_gpu *out)
{
    struct fake_gpu g[MAX_GPUS];
    long i = (long)(size_t)d - 1;
    int n;

    if (!inited)
        return NVML_ERROR_UNINITIALIZED;
    if ((n = load(g, MAX_GPUS)) < 0)
        return NVML_ERROR_UNKNOWN;
    if (i < 0 || i >= n)
        return NVML_ERROR_INVALID_ARGUMENT;
    *out = g[i];
    return NVML_SUCCESS;
}

int nvmlInit_v2(void)
{
    struct fake_gpu g[MAX_GPUS];

    if (load(g, MAX_GPUS) < 0)
        return NVML_ERROR_UNKNOWN;
    inited++;
    return NVML_SUCCESS;
}

int nvmlShutdown(void)
{
    if (!inited)
        return NVML_ERROR_UNINITIALIZED;
    inited--;
    return NVML_SUCCESS;
}

int nvmlDeviceGetCount_v2(unsigned int *count)
{
    struct fake_gpu g[MAX_GPUS];
    int n;

    if (!inited)
        return NVML_ERROR_UNINITIALIZED;
    if ((n = load(g, MAX_GPUS)) < 0)
        return NVML_ERROR_UNKNOWN;
    *count = (unsigned)n;
    return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvml_device_t *d)
{
    unsigned int n;
    int rc = nvmlDeviceGetCount_v2(&n);

    if (rc)
        return rc;
    if (i >= n)
        return NVML_ERROR_INVALID_ARGUMENT;
    *d = (nvml_device_t)(size_t)(i + 1);
    return NVML_SUCCESS;
}

int nvmlDeviceGetName(nvml_device_t d, char *name, unsigned int len)
{
    struct fake_gpu g;
    int rc = get(d, &g);

    if (rc)
        return rc;
    if (strlen(g.name) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(name, g.name, strlen(g.name) + 1);
    return NVML_SUCCESS;
}

int nvmlDeviceGetUUID(nvml_device_t d, char *uuid, unsigned int len)
{
    struct fake_gpu g;
    int rc = get(d, &g);

    if (rc)
        return rc;
    if (len < 20)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    snprintf(uuid, len, "GPU-fake-%04ld", (long)(size_t)d - 1);
    return NVML_SUCCESS;
}

int nvmlDeviceGetMinorNumber(nvml_device_t d, unsigned int *minor)
{
    struct fake_gpu g;
    int rc = get(d, &g);

    if (rc)
        return rc;
    if (g.minor < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *minor = (unsigned)g.minor;
    return NVML_SUCCESS;
}

int nvmlDeviceGetMemoryInfo(nvml_device_t d, struct nvml_memory *m)
{
    struct fake_gpu g;
    int rc = get(d, &g);

    if (rc)
        return rc;
    m->total = g.total_mib << 20;
    m->used = g.used_mib << 20;
    m->free = m->total > m->used ? m->total - m->used : 0;
    return NVML_SUCCESS;
}

int nvmlDeviceGetUtilizationRates(nvml_device_t d, struct nvml_utilization *u)
{
    struct fake_gpu g;
    int rc = get(d, &g);

    if (rc)
        return rc;
    u->gpu = g.util;
    u->memory = g.util / 2;
    return NVML_SUCCESS;
}

int nvmlDeviceGetPowerUsage(nvml_device_t d, unsigned int *mw)
{
    struct fake_gpu g;
    int rc = get(d, &g);

    if (rc)
        return rc;
    if (g.power_mw < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *mw = (unsigned)g.power_mw;
    return NVML_SUCCESS;
}

int nvmlDeviceGetTemperature(nvml_device_t d, int sensor, unsigned int *c)
{
    struct fake_gpu g;
    int rc = get(d, &g);

    if (rc)
        return rc;
    if (sensor != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    *c = g.temp;
    return NVML_SUCCESS;
}

int nvmlDeviceGetTotalEnergyConsumption(nvml_device_t d, unsigned long long *mj)
{
    struct fake_gpu g;
    struct timespec ts;
    int rc = get(d, &g);
    double now_ms;

    if (rc)
        return rc;
    if (!g.has_energy || g.power_mw < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    clock_gettime(CLOCK_REALTIME, &ts);
    now_ms = (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
    {
        const char *path = getenv("FAKE_NVML_CLOCK");
        FILE *f = path ? fopen(path, "r") : NULL;
        double t;
        if (f) {
            if (fscanf(f, "%lf", &t) == 1)
                now_ms = t;
            fclose(f);
        }
    }
    *mj = (unsigned long long)((double)g.power_mw * now_ms / 1000.0);
    return NVML_SUCCESS;
}
