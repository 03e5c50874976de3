/*
 * gpumon.c - NVML and RAPL readers and the monitor thread (see gpumon.h).
 *
 * NVML is declared here, only what we call, so that the build needs no
 * CUDA headers: the types and values below are those of nvml.h (the
 * versions every driver since R450 exports).
 */
#include "gpumon.h"
#include "exec.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/util.h"

typedef int nvml_return_t;        /* nvmlReturn_t; 0 = NVML_SUCCESS */
typedef struct nvml_device *nvml_device_t;
struct nvml_memory {              /* nvmlMemory_t (v1), bytes */
    unsigned long long total, free, used;
};
struct nvml_utilization {         /* nvmlUtilization_t, percent */
    unsigned int gpu, memory;
};
#define NVML_TEMPERATURE_GPU 0    /* nvmlTemperatureSensors_t */
#define NVML_NAME_BUFFER 96       /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define NVML_UUID_BUFFER 96       /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */

struct sl_nvml {
    void *lib;
    nvml_return_t (*init)(void);
    nvml_return_t (*shutdown)(void);
    nvml_return_t (*count)(unsigned int *);
    nvml_return_t (*by_index)(unsigned int, nvml_device_t *);
    nvml_return_t (*name)(nvml_device_t, char *, unsigned int);
    nvml_return_t (*memory)(nvml_device_t, struct nvml_memory *);
    nvml_return_t (*uuid)(nvml_device_t, char *, unsigned int);
    /* optional: NULL where the library lacks them */
    nvml_return_t (*minor)(nvml_device_t, unsigned int *);
    nvml_return_t (*util)(nvml_device_t, struct nvml_utilization *);
    nvml_return_t (*power)(nvml_device_t, unsigned int *);          /* mW */
    nvml_return_t (*temp)(nvml_device_t, int, unsigned int *);      /* C */
    nvml_return_t (*energy)(nvml_device_t, unsigned long long *);   /* mJ */
    int ndev;
    nvml_device_t dev[SL_EXEC_MAX_GPUS];
    bool have[SL_EXEC_MAX_GPUS];
};

/* dlsym returns an object pointer; memcpy turns it into a function pointer
 * without the cast ISO C does not define. */
static bool sym(void *lib, const char *name, void *fnptr, size_t size)
{
    void *p = dlsym(lib, name);

    memset(fnptr, 0, size);
    if (!p)
        return false;
    memcpy(fnptr, &p, size);
    return true;
}

const char *sl_nvml_lib_path(void)
{
    const char *p = getenv("SLUICE_NVML_LIB");

    return p && *p ? p : "libnvidia-ml.so.1";
}

struct sl_nvml *sl_nvml_open(void)
{
    const char *path = sl_nvml_lib_path();
    struct sl_nvml *n = calloc(1, sizeof(*n));
    unsigned int count = 0;

    if (!n)
        return NULL;
    if (!(n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
        sl_debug("msg=\"no NVML\" lib=\"%s\" error=\"%s\"", path, dlerror());
        free(n);
        return NULL;
    }
    if (!sym(n->lib, "nvmlInit_v2", &n->init, sizeof(n->init)) ||
        !sym(n->lib, "nvmlShutdown", &n->shutdown, sizeof(n->shutdown)) ||
        !sym(n->lib, "nvmlDeviceGetCount_v2", &n->count, sizeof(n->count)) ||
        !sym(n->lib, "nvmlDeviceGetHandleByIndex_v2", &n->by_index, sizeof(n->by_index)) ||
        !sym(n->lib, "nvmlDeviceGetName", &n->name, sizeof(n->name)) ||
        !sym(n->lib, "nvmlDeviceGetMemoryInfo", &n->memory, sizeof(n->memory)) ||
        !sym(n->lib, "nvmlDeviceGetUUID", &n->uuid, sizeof(n->uuid))) {
        sl_warn("msg=\"NVML lacks a needed symbol; no GPUs\" lib=\"%s\"", path);
        goto fail;
    }
    sym(n->lib, "nvmlDeviceGetMinorNumber", &n->minor, sizeof(n->minor));
    sym(n->lib, "nvmlDeviceGetUtilizationRates", &n->util, sizeof(n->util));
    sym(n->lib, "nvmlDeviceGetPowerUsage", &n->power, sizeof(n->power));
    sym(n->lib, "nvmlDeviceGetTemperature", &n->temp, sizeof(n->temp));
    sym(n->lib, "nvmlDeviceGetTotalEnergyConsumption", &n->energy, sizeof(n->energy));
    if (n->init() != 0) {
        sl_warn("msg=\"nvmlInit failed; no GPUs\" lib=\"%s\"", path);
        goto fail;
    }
    if (n->count(&count) != 0) {
        sl_warn("msg=\"nvmlDeviceGetCount failed; no GPUs\"");
        n->shutdown();
        goto fail;
    }
    if (count > SL_EXEC_MAX_GPUS) {
        sl_warn("msg=\"more GPUs than supported\" found=%u used=%d", count,
                SL_EXEC_MAX_GPUS);
        count = SL_EXEC_MAX_GPUS;
    }
    n->ndev = (int)count;
    for (int i = 0; i < n->ndev; i++)
        n->have[i] = n->by_index((unsigned int)i, &n->dev[i]) == 0;
    return n;
fail:
    dlclose(n->lib);
    free(n);
    return NULL;
}

int sl_nvml_count(const struct sl_nvml *n)
{
    return n ? n->ndev : 0;
}

int sl_nvml_info(struct sl_nvml *n, int i, char *name, size_t name_size, char *uuid,
                 size_t uuid_size, int64_t *mem_total)
{
    char nb[NVML_NAME_BUFFER] = "", ub[NVML_UUID_BUFFER] = "";
    struct nvml_memory mem = {0, 0, 0};

    if (!n || i < 0 || i >= n->ndev || !n->have[i])
        return -ENODEV;
    if (n->name(n->dev[i], nb, sizeof(nb)) != 0)
        nb[0] = '\0';
    nb[sizeof(nb) - 1] = '\0';
    if (n->uuid(n->dev[i], ub, sizeof(ub)) != 0)
        ub[0] = '\0';
    ub[sizeof(ub) - 1] = '\0';
    if (n->memory(n->dev[i], &mem) != 0)
        mem.total = 0;
    sl_strlcpy(name, nb, name_size);
    sl_strlcpy(uuid, ub, uuid_size);
    *mem_total = mem.total > (unsigned long long)INT64_MAX ? INT64_MAX : (int64_t)mem.total;
    return 0;
}

int sl_nvml_minor(struct sl_nvml *n, int i, int *minor)
{
    unsigned int m = 0;

    if (!n || i < 0 || i >= n->ndev || !n->have[i])
        return -ENODEV;
    if (!n->minor || n->minor(n->dev[i], &m) != 0 || m > INT32_MAX)
        return -EOPNOTSUPP;
    *minor = (int)m;
    return 0;
}

int sl_nvml_sample(struct sl_nvml *n, int i, struct sl_gpu_sample *out)
{
    struct nvml_utilization u;
    struct nvml_memory mem;
    unsigned int mw, c;
    unsigned long long mj;
    nvml_device_t d;

    memset(out, 0, sizeof(*out));
    if (!n || i < 0 || i >= n->ndev || !n->have[i])
        return -ENODEV;
    d = n->dev[i];
    if (n->util && n->util(d, &u) == 0 && u.gpu <= 100) {
        out->has_util = true;
        out->util = u.gpu / 100.0;
    }
    if (n->memory(d, &mem) == 0 && mem.used <= (unsigned long long)INT64_MAX) {
        out->has_mem = true;
        out->mem_used_bytes = (int64_t)mem.used;
    }
    if (n->power && n->power(d, &mw) == 0) {
        out->has_power = true;
        out->power_w = mw / 1000.0;
    }
    if (n->temp && n->temp(d, NVML_TEMPERATURE_GPU, &c) == 0) {
        out->has_temp = true;
        out->temp_c = c;
    }
    if (n->energy && n->energy(d, &mj) == 0) {
        out->has_energy = true;
        out->energy_j = (double)mj / 1000.0;
    }
    return 0;
}

void sl_nvml_close(struct sl_nvml *n)
{
    if (!n)
        return;
    n->shutdown();
    dlclose(n->lib);
    free(n);
}

/* ---- RAPL ---------------------------------------------------------------- */

#define RAPL_MAX 16

struct sl_rapl {
    int n;
    char path[RAPL_MAX][600];         /* .../energy_uj */
    double max_uj[RAPL_MAX];          /* wrap; 0 = unknown */
    double last_uj[RAPL_MAX];
    double joules;
};

static int read_number(const char *path, double *v)
{
    char *text = NULL;
    char *end;
    int rc;

    if ((rc = sl_read_file(path, 64, &text, NULL)) < 0)
        return rc;
    errno = 0;
    *v = strtod(text, &end);
    rc = end == text || errno || *v < 0 ? -EIO : 0;
    free(text);
    return rc;
}

/* "intel-rapl:N": a package, not one of its subdomains (":N:M"). */
static bool package_domain(const char *name)
{
    const char *p = strncmp(name, "intel-rapl:", 11) == 0 ? name + 11 : NULL;

    if (!p || !*p)
        return false;
    for (; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    return true;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

struct sl_rapl *sl_rapl_open(const char *dir)
{
    const char *env = getenv("SLUICE_POWERCAP_DIR");
    struct sl_rapl *r;
    struct dirent *de;
    char *names[RAPL_MAX];
    int nn = 0;
    DIR *d;

    if (!dir)
        dir = env && *env ? env : "/sys/class/powercap";
    if (!(d = opendir(dir)))
        return NULL;
    while ((de = readdir(d)) && nn < RAPL_MAX)
        if (package_domain(de->d_name) && (names[nn] = strdup(de->d_name)))
            nn++;
    closedir(d);
    qsort(names, (size_t)nn, sizeof(*names), name_cmp);
    r = calloc(1, sizeof(*r));
    for (int i = 0; i < nn; i++) {
        char p[600];
        double v, max = 0;
        if (r) {
            snprintf(p, sizeof(p), "%s/%s/max_energy_range_uj", dir, names[i]);
            if (read_number(p, &max) < 0)
                max = 0;
            snprintf(p, sizeof(p), "%s/%s/energy_uj", dir, names[i]);
            if (read_number(p, &v) == 0) {
                sl_strlcpy(r->path[r->n], p, sizeof(r->path[0]));
                r->max_uj[r->n] = max;
                r->last_uj[r->n] = v;
                r->n++;
            } else {
                sl_debug("msg=\"RAPL domain not readable\" path=\"%s\"", p);
            }
        }
        free(names[i]);
    }
    if (r && r->n == 0) {
        free(r);
        r = NULL;
    }
    return r;
}

int sl_rapl_domains(const struct sl_rapl *r)
{
    return r ? r->n : 0;
}

int sl_rapl_read(struct sl_rapl *r, double *joules)
{
    double v[RAPL_MAX];

    for (int i = 0; i < r->n; i++)
        if (read_number(r->path[i], &v[i]) < 0)
            return -EIO;
    for (int i = 0; i < r->n; i++) {
        double d = v[i] - r->last_uj[i];
        if (d < 0)
            d = r->max_uj[i] > 0 ? d + r->max_uj[i] : 0; /* wrapped */
        r->joules += d / 1e6;
        r->last_uj[i] = v[i];
    }
    *joules = r->joules;
    return 0;
}

void sl_rapl_close(struct sl_rapl *r)
{
    free(r);
}

/* ---- integration --------------------------------------------------------- */

#define SPAN_MS 200

void sl_energy_acc_add(struct sl_energy_acc *a, const struct sl_gpu_sample *s,
                       int64_t now_ms)
{
    double dt = a->started ? (double)(now_ms - a->last_ms) / 1000.0 : 0;
    double w = a->last_w;

    if (a->started && dt < 0)
        return; /* the clock stepped back: wait until it passes again */
    if (!a->started) {
        a->energy_ok = s->has_energy || s->has_power;
        a->util_ok = s->has_util;
        a->span_ms = now_ms;
        a->span_j = 0;
    } else {
        double dj = -1;
        if (s->has_energy && a->last_has_counter && s->energy_j >= a->last_counter_j)
            dj = s->energy_j - a->last_counter_j;
        else if (s->has_power)
            dj = (a->last_w + s->power_w) / 2 * dt;
        if (dj >= 0) {
            a->joules += dj;
            /* Without a power reading the power is the counter's average
             * over the last SPAN_MS or more: a short step between two reads
             * close together says little of it, at a counter's resolution. */
            if (!s->has_power && now_ms - a->span_ms >= SPAN_MS) {
                w = (a->joules - a->span_j) * 1000.0 / (double)(now_ms - a->span_ms);
                a->span_ms = now_ms;
                a->span_j = a->joules;
            }
        } else {
            a->energy_ok = false; /* a step nothing measured */
        }
        if (s->has_util)
            a->busy_s += s->util * dt;
        else
            a->util_ok = false;
    }
    if (s->has_power)
        w = s->power_w;
    a->last_w = w;
    a->last_util = s->has_util ? s->util : 0;
    a->last_has_counter = s->has_energy;
    a->last_counter_j = s->energy_j;
    a->last_ms = now_ms;
    a->started = true;
}

void sl_energy_acc_at(const struct sl_energy_acc *a, int64_t at_ms, struct sl_gpu_meter *out)
{
    double dt = (double)(at_ms - a->last_ms) / 1000.0;

    memset(out, 0, sizeof(*out));
    if (!a->started)
        return;
    out->energy_ok = a->energy_ok;
    out->energy_j = a->joules + a->last_w * dt;
    out->util_ok = a->util_ok;
    out->busy_s = a->busy_s + a->last_util * dt;
    out->util = a->last_util;
}

/* ---- the monitor --------------------------------------------------------- */

struct sl_gpumon {
    struct sl_nvml *nvml;
    struct sl_rapl *rapl;
    int64_t period_ms;            /* 0: no thread (sl_gpumon_round) */
    int64_t (*now_ms)(void *arg); /* the clock samples are stamped by */
    void *now_arg;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stop;
    /* guarded by mu */
    uint64_t rounds;
    struct sl_energy_acc gpu[SL_EXEC_MAX_GPUS];
    struct sl_gpu_sample last[SL_EXEC_MAX_GPUS];
    bool have_last[SL_EXEC_MAX_GPUS];
    struct sl_energy_acc cpu;
};

/* Read the RAPL packages and add the sample, stamped as it is read. Called
 * with mu held: the reads are a few sysfs files, and readers at an
 * interval's edge read afresh rather than extrapolate, as a counter without
 * a power reading extrapolates poorly. */
static void cpu_sample(struct sl_gpumon *m)
{
    struct sl_gpu_sample cs = {0};

    if (!m->rapl || sl_rapl_read(m->rapl, &cs.energy_j) < 0)
        return;
    cs.has_energy = true;
    sl_energy_acc_add(&m->cpu, &cs, m->now_ms(m->now_arg));
}

static void sample_round(struct sl_gpumon *m)
{
    int n = sl_nvml_count(m->nvml);
    struct sl_gpu_sample s[SL_EXEC_MAX_GPUS];
    bool got[SL_EXEC_MAX_GPUS];
    int64_t now;

    /* The reads happen outside the lock: a slow driver call never holds up
     * a reader. All samples of a round share one time stamp. */
    for (int i = 0; i < n; i++)
        got[i] = sl_nvml_sample(m->nvml, i, &s[i]) == 0;
    now = m->now_ms(m->now_arg);
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < n; i++) {
        if (!got[i])
            continue;
        sl_energy_acc_add(&m->gpu[i], &s[i], now);
        m->last[i] = s[i];
        m->have_last[i] = true;
    }
    cpu_sample(m);
    m->rounds++;
    pthread_mutex_unlock(&m->mu);
}

static void *monitor_main(void *arg)
{
    struct sl_gpumon *m = arg;

    pthread_setname_np(pthread_self(), "sluice-gpumon");
    for (;;) {
        struct timespec ts;
        sample_round(m);
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += m->period_ms / 1000;
        ts.tv_nsec += (long)(m->period_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&m->mu);
        while (!m->stop && pthread_cond_timedwait(&m->cond, &m->mu, &ts) == 0)
            ;
        if (m->stop) {
            pthread_mutex_unlock(&m->mu);
            return NULL;
        }
        pthread_mutex_unlock(&m->mu);
    }
}

static int64_t wall_ms(void *arg)
{
    (void)arg;
    return sl_now_ms();
}

struct sl_gpumon *sl_gpumon_start(struct sl_nvml *nvml, struct sl_rapl *rapl,
                                  int64_t period_ms)
{
    return sl_gpumon_start_clock(nvml, rapl, period_ms > 0 ? period_ms : 1000, NULL, NULL);
}

void sl_gpumon_round(struct sl_gpumon *m)
{
    if (m)
        sample_round(m);
}

struct sl_gpumon *sl_gpumon_start_clock(struct sl_nvml *nvml, struct sl_rapl *rapl,
                                        int64_t period_ms, int64_t (*now_ms)(void *arg),
                                        void *arg)
{
    struct sl_gpumon *m = calloc(1, sizeof(*m));
    pthread_condattr_t ca;

    if (!m) {
        sl_nvml_close(nvml);
        sl_rapl_close(rapl);
        return NULL;
    }
    m->nvml = nvml;
    m->rapl = rapl;
    m->period_ms = period_ms > 0 ? period_ms : 0;
    m->now_ms = now_ms ? now_ms : wall_ms;
    m->now_arg = arg;
    pthread_mutex_init(&m->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cond, &ca);
    pthread_condattr_destroy(&ca);
    sample_round(m); /* a first sample before anyone reads */
    if (m->period_ms && pthread_create(&m->thread, NULL, monitor_main, m) != 0) {
        sl_warn("msg=\"cannot start the GPU monitor; energy is estimated\"");
        pthread_cond_destroy(&m->cond);
        pthread_mutex_destroy(&m->mu);
        sl_nvml_close(nvml);
        sl_rapl_close(rapl);
        free(m);
        return NULL;
    }
    return m;
}

bool sl_gpumon_gpu(struct sl_gpumon *m, int i, int64_t at_ms, struct sl_gpu_meter *out)
{
    bool ok;

    memset(out, 0, sizeof(*out));
    if (!m || i < 0 || i >= sl_nvml_count(m->nvml))
        return false;
    pthread_mutex_lock(&m->mu);
    sl_energy_acc_at(&m->gpu[i], at_ms, out);
    ok = m->gpu[i].started;
    pthread_mutex_unlock(&m->mu);
    return ok;
}

bool sl_gpumon_last(struct sl_gpumon *m, int i, struct sl_gpu_sample *out)
{
    bool ok;

    memset(out, 0, sizeof(*out));
    if (!m || i < 0 || i >= sl_nvml_count(m->nvml))
        return false;
    pthread_mutex_lock(&m->mu);
    if ((ok = m->have_last[i]))
        *out = m->last[i];
    pthread_mutex_unlock(&m->mu);
    return ok;
}

bool sl_gpumon_cpu(struct sl_gpumon *m, int64_t at_ms, double *joules)
{
    struct sl_gpu_meter g;

    *joules = 0;
    if (!m || !m->rapl)
        return false;
    pthread_mutex_lock(&m->mu);
    if (at_ms >= m->cpu.last_ms)
        cpu_sample(m); /* nearer 'at_ms' than the last round */
    sl_energy_acc_at(&m->cpu, at_ms, &g);
    pthread_mutex_unlock(&m->mu);
    *joules = g.energy_j;
    return g.energy_ok;
}

bool sl_gpumon_has_cpu(const struct sl_gpumon *m)
{
    return m && m->rapl;
}

uint64_t sl_gpumon_rounds(struct sl_gpumon *m)
{
    uint64_t r;

    pthread_mutex_lock(&m->mu);
    r = m->rounds;
    pthread_mutex_unlock(&m->mu);
    return r;
}

void sl_gpumon_stop(struct sl_gpumon *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->stop = true;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->mu);
    if (m->period_ms)
        pthread_join(m->thread, NULL);
    pthread_cond_destroy(&m->cond);
    pthread_mutex_destroy(&m->mu);
    sl_nvml_close(m->nvml);
    sl_rapl_close(m->rapl);
    free(m);
}
