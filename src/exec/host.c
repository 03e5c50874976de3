/*
 * host.c - host discovery: hostname, CPUs, memory, and GPUs from NVML
 * (loaded at run time with dlopen, no build dependency) or from a
 * --fake-gpus spec.
 *
 * NVML model names are shortened to the names users write in gpuModels and
 * in --fake-gpus ("NVIDIA A100-SXM4-80GB" -> "A100-80GB"); the rule is in
 * sl_host_gpu_short_name below and in docs/executor.md.
 */
#include "exec.h"
#include "gpumon.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define GIB (1024LL * 1024 * 1024)
#define FAKE_SPEC_MAX 1024
#define MODEL_MAX 47

/* Known models. Columns: short name (as written in --fake-gpus and job
 * gpuModels), memory per GPU in GiB. A model with a memory variant has a row
 * per variant; NVML names select a variant only when it has a row here. */
static const struct {
    const char *model;
    int mem_gib;
} gpu_models[] = {
    {"H100", 80}, {"H200", 141}, {"A100", 40}, {"A100-80GB", 80},
    {"V100", 32}, {"T4", 16},    {"L4", 24},   {"L40S", 48},
    {"A10", 24},
};
#define UNKNOWN_MODEL_GIB 16

static int model_row(const char *model)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(gpu_models); i++)
        if (strcasecmp(gpu_models[i].model, model) == 0)
            return (int)i;
    return -1;
}

static bool model_ok(const char *m, size_t len)
{
    if (len < 1 || len > MODEL_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)m[i]) && m[i] != '.' && m[i] != '_' &&
            m[i] != '-')
            return false;
    return true;
}

/* Parse one "<N>x<MODEL>" or "<MODEL>" item of 'len' bytes at 's'. */
static int parse_fake_item(const char *s, size_t len, int *count,
                           char *model, struct sl_error *err)
{
    const char *item = s;
    size_t item_len = len, digits = 0;
    int n = 1;

    while (digits < len && isdigit((unsigned char)s[digits]))
        digits++;
    if (digits > 0 && digits < len && s[digits] == 'x') {
        if (digits > 2)
            return sl_errorf_field(err, -EINVAL, "--fake-gpus",
                                   "--fake-gpus \"%.*s\": count must be "
                                   "1..%d",
                                   (int)len, s, SL_EXEC_MAX_GPUS);
        n = 0;
        for (size_t i = 0; i < digits; i++)
            n = n * 10 + (s[i] - '0');
        s += digits + 1;
        len -= digits + 1;
        if (n < 1 || n > SL_EXEC_MAX_GPUS)
            return sl_errorf_field(err, -EINVAL, "--fake-gpus",
                                   "--fake-gpus \"%dx%.*s\": count must be "
                                   "1..%d",
                                   n, (int)len, s, SL_EXEC_MAX_GPUS);
    }
    if (!model_ok(s, len))
        return sl_errorf_field(err, -EINVAL, "--fake-gpus",
                               "--fake-gpus \"%.*s\": bad model \"%.*s\": "
                               "want 1..%d of [A-Za-z0-9._-], e.g. 8xH100",
                               (int)(item_len > 60 ? 60 : item_len), item,
                               (int)(len > 60 ? 60 : len), s, MODEL_MAX);
    memcpy(model, s, len);
    model[len] = '\0';
    *count = n;
    return 0;
}

static int parse_fake(const char *spec, struct sl_host_info *out,
                      struct sl_error *err)
{
    size_t slen = strnlen(spec, FAKE_SPEC_MAX + 1);
    const char *p = spec;
    int total = 0;

    if (slen > FAKE_SPEC_MAX)
        return sl_errorf_field(err, -EINVAL, "--fake-gpus",
                               "--fake-gpus: longer than %d characters",
                               FAKE_SPEC_MAX);
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char model[MODEL_MAX + 1];
        int count = 0, row, rc;

        /* Tolerate spaces around items: "4xA100, 2xT4". */
        while (len > 0 && *p == ' ') {
            p++;
            len--;
        }
        while (len > 0 && p[len - 1] == ' ')
            len--;
        if (len == 0)
            return sl_errorf_field(err, -EINVAL, "--fake-gpus",
                                   "--fake-gpus \"%.60s\": empty item; "
                                   "write e.g. 8xH100 or 4xA100-80GB,2xT4",
                                   spec);
        if ((rc = parse_fake_item(p, len, &count, model, err)) < 0)
            return rc;
        if (total + count > SL_EXEC_MAX_GPUS)
            return sl_errorf_field(err, -EINVAL, "--fake-gpus",
                                   "--fake-gpus \"%.60s\": more than %d GPUs "
                                   "in all",
                                   spec, SL_EXEC_MAX_GPUS);
        row = model_row(model);
        for (int i = 0; i < count; i++) {
            struct sl_gpu_info *g = &out->gpus[total + i];
            g->index = total + i;
            /* The table's spelling, so "h100" and "H100" are one model. */
            sl_strlcpy(g->model, row >= 0 ? gpu_models[row].model : model,
                       sizeof(g->model));
            g->mem_bytes = (row >= 0 ? gpu_models[row].mem_gib
                                     : UNKNOWN_MODEL_GIB) *
                           GIB;
            g->uuid[0] = '\0';
            /* As the driver numbers GPUs on most hosts: /dev/nvidia<i>. */
            g->dev_major = SL_EXEC_NVIDIA_MAJOR;
            g->dev_minor = total + i;
        }
        total += count;
        if (!end)
            break;
        p = end + 1;
    }
    out->ngpus = total;
    sl_strlcpy(out->gpu_source, "fake", sizeof(out->gpu_source));
    return 0;
}

/* The rule, in order:
 *   1. drop leading vendor/brand words: NVIDIA, Tesla, GeForce, Quadro;
 *   2. the model is the first word, cut at its first '-'
 *      ("A100-SXM4-80GB" -> "A100", "H100 80GB HBM3" -> "H100"); the words
 *      RTX, GTX and TITAN are joined to the next word ("RTX 6000 Ada" ->
 *      "RTX-6000");
 *   3. when the name also carries a memory size "<N>GB" (as a word or a
 *      '-' part) and the table has a row "<model>-<N>GB", that row's name
 *      is used ("A100-SXM4-80GB" -> "A100-80GB", but "V100-SXM2-32GB" ->
 *      "V100" and "H100 80GB HBM3" -> "H100");
 *   4. characters outside [A-Za-z0-9._-] are dropped, 47 at most;
 *      nothing left -> "GPU". */
void sl_host_gpu_short_name(const char *nvml_name, char *out, size_t size)
{
    static const char *const brands[] = {"NVIDIA", "Tesla", "GeForce",
                                         "Quadro"};
    static const char *const joined[] = {"RTX", "GTX", "TITAN"};
    char name[128], base[64] = "", variant[80];
    char *words[16], *save = NULL;
    int nw = 0, w = 0;
    size_t o = 0;

    sl_strlcpy(name, nvml_name ? nvml_name : "", sizeof(name));
    for (char *t = strtok_r(name, " \t", &save); t && nw < 16;
         t = strtok_r(NULL, " \t", &save))
        words[nw++] = t;
    for (; w < nw; w++) {
        size_t i;
        for (i = 0; i < SL_ARRAY_LEN(brands); i++)
            if (strcasecmp(words[w], brands[i]) == 0)
                break;
        if (i == SL_ARRAY_LEN(brands))
            break;
    }
    if (w < nw) {
        bool join = false;
        for (size_t i = 0; i < SL_ARRAY_LEN(joined); i++)
            if (strcasecmp(words[w], joined[i]) == 0)
                join = true;
        if (join && w + 1 < nw)
            snprintf(base, sizeof(base), "%.20s-%.40s", words[w],
                     words[w + 1]);
        else
            snprintf(base, sizeof(base), "%.60s", words[w]);
        if (!join)
            base[strcspn(base, "-")] = '\0';
    }
    /* Step 3: look for "<N>GB" among the words and their '-' parts. */
    for (int i = w; i < nw && base[0]; i++) {
        char word[64], *s2 = NULL;
        sl_strlcpy(word, words[i], sizeof(word));
        for (char *part = strtok_r(word, "-", &s2); part;
             part = strtok_r(NULL, "-", &s2)) {
            size_t d = strspn(part, "0123456789");
            if (d > 0 && strcasecmp(part + d, "GB") == 0) {
                snprintf(variant, sizeof(variant), "%s-%.*sGB", base, (int)d,
                         part);
                if (model_row(variant) >= 0) {
                    sl_strlcpy(base, gpu_models[model_row(variant)].model,
                               sizeof(base));
                    goto done;
                }
            }
        }
    }
done:
    for (const char *c = base; *c && o + 1 < size && o < MODEL_MAX; c++)
        if (isalnum((unsigned char)*c) || *c == '.' || *c == '_' ||
            *c == '-')
            out[o++] = *c;
    out[o] = '\0';
    if (o == 0)
        sl_strlcpy(out, "GPU", size);
}

/* The GPUs NVML reports (gpumon.c loads it), indexed as NVML counts them
 * (PCI bus order; CUDA counts so too under CUDA_DEVICE_ORDER=PCI_BUS_ID),
 * with the device number of each: 195 and NVML's minor number, which need
 * not be the index. */
static void discover_nvml(struct sl_host_info *out)
{
    struct sl_nvml *n = sl_nvml_open();

    sl_strlcpy(out->gpu_source, "none", sizeof(out->gpu_source));
    out->ngpus = 0;
    if (!n)
        return;
    for (int i = 0; i < sl_nvml_count(n); i++) {
        struct sl_gpu_info *g = &out->gpus[out->ngpus];
        char name[96];

        if (sl_nvml_info(n, i, name, sizeof(name), g->uuid, sizeof(g->uuid),
                         &g->mem_bytes) < 0) {
            sl_warn("msg=\"NVML device skipped\" index=%d", i);
            continue;
        }
        g->index = i;
        sl_host_gpu_short_name(name, g->model, sizeof(g->model));
        if (sl_nvml_minor(n, i, &g->dev_minor) == 0) {
            g->dev_major = SL_EXEC_NVIDIA_MAJOR;
        } else {
            g->dev_major = g->dev_minor = -1;
            sl_warn("msg=\"NVML gives no minor number: the GPU cannot be "
                    "isolated\" index=%d",
                    i);
        }
        out->ngpus++;
    }
    sl_strlcpy(out->gpu_source, "nvml", sizeof(out->gpu_source));
    sl_nvml_close(n);
}

static int64_t meminfo_total_bytes(void)
{
    char *text = NULL, *line;
    long long kb = 0;

    if (sl_read_file("/proc/meminfo", 1 << 20, &text, NULL) < 0)
        return 0;
    if ((line = strstr(text, "MemTotal:")) &&
        sscanf(line, "MemTotal: %lld kB", &kb) != 1)
        kb = 0;
    free(text);
    return kb > 0 && kb < INT64_MAX / 1024 ? (int64_t)kb * 1024 : 0;
}

int sl_host_discover(const char *fake, struct sl_host_info *out,
                     struct sl_error *err)
{
    struct sl_host_info h;
    cpu_set_t set;
    long online;
    int rc;

    if (!out)
        return sl_errorf(err, -EINVAL, "host: no output");
    memset(&h, 0, sizeof(h));
    if (gethostname(h.hostname, sizeof(h.hostname) - 1) < 0)
        sl_strlcpy(h.hostname, "localhost", sizeof(h.hostname));
    h.hostname[sizeof(h.hostname) - 1] = '\0';
    online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online < 1)
        online = 1;
    /* A daemon pinned to fewer CPUs (taskset, cpuset) can use only those. */
    if (sched_getaffinity(0, sizeof(set), &set) == 0 &&
        CPU_COUNT(&set) > 0 && CPU_COUNT(&set) < online)
        online = CPU_COUNT(&set);
    h.cpu_milli = (int64_t)online * 1000;
    h.mem_bytes = meminfo_total_bytes();
    if (fake) {
        if ((rc = parse_fake(fake, &h, err)) < 0)
            return rc;
    } else {
        discover_nvml(&h);
    }
    *out = h;
    return 0;
}
