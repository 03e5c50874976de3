/*
 * slurm_parse.c - reading Slurm's one-line answers and quoting for the
 * batch script (slurm.h). Every value is bounded and checked; a line
 * that is not what it should be is refused, never half read.
 */
#include "slurm.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* The value of 'key' in a line of "Key=Value" words ("" when absent). A
 * value ends at the next space, except Reason's, which may hold spaces
 * and ends at the line's end or at " Key=" of a known follower. Copies at
 * most size-1 bytes. Returns whether the key was there. 'from' (may be
 * NULL) is where to start and receives where the value ended. */
static bool field(const char *line, const char *key, char *buf, size_t size, const char **from)
{
    const char *p = from && *from ? *from : line;
    size_t klen = strlen(key), n = 0;

    buf[0] = '\0';
    for (; (p = strstr(p, key)); p += klen) {
        if ((p == line || p[-1] == ' ') && p[klen] == '=')
            break;
    }
    if (!p)
        return false;
    p += klen + 1;
    while (*p && *p != ' ' && *p != '\n') {
        if (n + 1 < size)
            buf[n++] = *p;
        p++;
    }
    buf[n] = '\0';
    if (from)
        *from = p;
    return true;
}

static bool parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    return s && *s && sl_parse_int64(s, lo, hi, out) == 0;
}

bool sl_slurm_list_has(const char *list, const char *item)
{
    size_t n = strlen(item);

    for (const char *p = list; p && *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && strncmp(p, item, n) == 0)
            return true;
        p = c ? c + 1 : NULL;
    }
    return false;
}

bool sl_slurm_lists_meet(const char *a, const char *b)
{
    char item[128];

    for (const char *p = a; p && *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len > 0 && len < sizeof(item)) {
            memcpy(item, p, len);
            item[len] = '\0';
            if (sl_slurm_list_has(b, item))
                return true;
        }
        p = c ? c + 1 : NULL;
    }
    return false;
}

/* The node's state as an inventory state: DOWN, FAIL and not responding
 * (a trailing '*') are down; DRAIN (IDLE+DRAIN, MIXED+DRAIN, DRAINED,
 * DRAINING) is draining; everything else takes work. */
static enum sl_node_state node_state(const char *s)
{
    if (strstr(s, "DOWN") || strstr(s, "FAIL") || strchr(s, '*') ||
        strstr(s, "NOT_RESPONDING") || strstr(s, "FUTURE") || strstr(s, "POWER"))
        return SL_NODE_DOWN;
    if (strstr(s, "DRAIN") || strstr(s, "MAINT") || strstr(s, "RESERVED"))
        return SL_NODE_DRAINING;
    return SL_NODE_UP;
}

/* Features "gpu_<MODEL>" and "domain_<NAME>" of comma list 'list'. */
static void node_features(const char *list, char *model, size_t msize, char *domain,
                          size_t dsize)
{
    for (const char *p = list; p && *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        size_t ml = strlen(SL_SLURM_FEATURE_MODEL), dl = strlen(SL_SLURM_FEATURE_DOMAIN);
        if (len > ml && len - ml < msize && strncmp(p, SL_SLURM_FEATURE_MODEL, ml) == 0)
            snprintf(model, msize, "%.*s", (int)(len - ml), p + ml);
        else if (len > dl && len - dl < dsize && strncmp(p, SL_SLURM_FEATURE_DOMAIN, dl) == 0)
            snprintf(domain, dsize, "%.*s", (int)(len - dl), p + dl);
        p = c ? c + 1 : NULL;
    }
}

/* The next GRES item of a comma list whose items may hold commas inside
 * parentheses ("gpu:g3:1(IDX:3),gpu:g5:1(S:0-1)"): copies it into 'item'
 * and returns where the rest starts, or NULL at the end. */
static const char *gres_next(const char *p, char *item, size_t size)
{
    int depth = 0;
    size_t n = 0;

    if (!p || !*p)
        return NULL;
    for (; *p && (depth > 0 || *p != ','); p++) {
        depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
        if (n + 1 < size)
            item[n++] = *p;
    }
    item[n] = '\0';
    return *p == ',' ? p + 1 : p;
}

/* One GRES item "name:type:count(...)": its name, its type's index (-1
 * when the type is not gN) and its count. Returns 0 or -EINVAL. */
static int gres_item(const char *item, char *name, size_t nsize, int *index, int64_t *count)
{
    char copy[128], *type, *cnt, *paren;
    int64_t v;

    if (snprintf(copy, sizeof(copy), "%s", item) >= (int)sizeof(copy))
        return -EINVAL;
    if ((paren = strchr(copy, '(')))
        *paren = '\0';
    if (!(type = strchr(copy, ':')))
        return -EINVAL;
    *type++ = '\0';
    snprintf(name, nsize, "%s", copy);
    *index = -1;
    if ((cnt = strrchr(type, ':'))) {
        *cnt++ = '\0';
        if (type[0] == 'g' && parse_i64(type + 1, 0, SL_EXEC_MAX_GPUS - 1, &v))
            *index = (int)v;
    } else {
        cnt = type; /* "gpu:8": untyped */
    }
    /* Slurm prints a count divisible by 1024 with a suffix: 4K, 1M, 2G */
    {
        size_t len = strlen(cnt);
        int shift = 0;
        char last = len ? cnt[len - 1] : '\0';
        if (last == 'K' || last == 'M' || last == 'G' || last == 'T') {
            shift = last == 'K' ? 10 : last == 'M' ? 20 : last == 'G' ? 30 : 40;
            cnt[len - 1] = '\0';
        }
        if (!parse_i64(cnt, 0, shift ? (int64_t)1 << 20 : (int64_t)1 << 40, count))
            return -EINVAL;
        *count <<= shift;
    }
    return 0;
}

int sl_slurm_parse_node(const char *line, struct sl_slurm_node *out)
{
    char v[512], gres[2048], item[128], name[32], model[48] = "", domain[64] = "";
    struct sl_node_info *n = &out->info;
    int64_t i64, count;
    int idx, untyped = 0, shards = 0, hole = -1;
    bool seen[SL_EXEC_MAX_GPUS] = {false};
    const char *r;

    memset(out, 0, sizeof(*out));
    if (!field(line, "NodeName", v, sizeof(v), NULL) || !v[0] || strlen(v) >= sizeof(n->name))
        return -EINVAL;
    snprintf(n->name, sizeof(n->name), "%s", v);
    if (field(line, "CPUTot", v, sizeof(v), NULL) && parse_i64(v, 0, 1 << 20, &i64))
        n->cpu_milli = i64 * 1000;
    if (field(line, "RealMemory", v, sizeof(v), NULL) && parse_i64(v, 0, INT64_MAX >> 21, &i64))
        n->mem_bytes = i64 << 20;
    field(line, "State", v, sizeof(v), NULL);
    n->state = node_state(v);
    field(line, "ActiveFeatures", v, sizeof(v), NULL);
    node_features(v, model, sizeof(model), domain, sizeof(domain));
    snprintf(n->domain, sizeof(n->domain), "%s", domain);
    field(line, "Partitions", out->partitions, sizeof(out->partitions), NULL);
    n->gpus = out->gpus;
    snprintf(n->gpu_source, sizeof(n->gpu_source), "slurm");
    field(line, "Gres", gres, sizeof(gres), NULL);
    for (const char *p = gres; (p = gres_next(p, item, sizeof(item)));) {
        if (gres_item(item, name, sizeof(name), &idx, &count) < 0)
            continue;
        if (strcmp(name, "shard") == 0 && idx >= 0 && count == SL_SLURM_SHARDS)
            shards++;
        if (strcmp(name, "gpu") != 0)
            continue;
        if (idx < 0) {
            untyped += (int)count;
            continue;
        }
        if (idx + 1 > n->ngpus)
            n->ngpus = idx + 1;
        seen[idx] = true;
        out->gpus[idx].index = idx;
        snprintf(out->gpus[idx].model, sizeof(out->gpus[idx].model), "%s", model);
        out->gpus[idx].dev_major = out->gpus[idx].dev_minor = -1;
    }
    /* a GPU's position is its index: with one missing (a broken GPU left
     * out of gres.conf), only those below it can be placed */
    for (int g = 0; g < n->ngpus && hole < 0; g++)
        if (!seen[g])
            hole = g;
    if (hole >= 0)
        n->ngpus = hole;
    /* Slurm's Reason (last on the line, may hold spaces) first, else what
     * keeps Sluice from placing on the node */
    if ((r = strstr(line, " Reason=")))
        snprintf(n->reason, sizeof(n->reason), "%s", r + 8);
    else if (hole == 0)
        snprintf(n->reason, sizeof(n->reason),
                 "GPU index g0 is missing from Gres=: Sluice places on none of its GPUs "
                 "(docs/slurm.md)");
    else if (hole > 0)
        snprintf(n->reason, sizeof(n->reason),
                 "GPU index g%d is missing from Gres=: Sluice places on g0-g%d only "
                 "(docs/slurm.md)", hole, hole - 1);
    else if (untyped && !n->ngpus)
        snprintf(n->reason, sizeof(n->reason),
                 "%d GPUs without a type per index: Sluice cannot place on them "
                 "(docs/slurm.md)", untyped);
    else if (n->ngpus && shards < n->ngpus)
        snprintf(n->reason, sizeof(n->reason),
                 "%d of its %d GPUs without shard:gN:%d: Slurm refuses a fraction of them "
                 "(docs/slurm.md)", n->ngpus - shards, n->ngpus, SL_SLURM_SHARDS);
    for (char *c = n->reason; *c; c++)
        if (*c == '\n' || (unsigned char)*c < 0x20)
            *c = ' ';
    return 0;
}

/* The indices of a GRES detail "gpu:g3:1(IDX:3)" or "shard:g3:500(...)"
 * into 'pl'. */
static void place_gres(const char *gres, struct sl_slurm_place *pl)
{
    char item[128], name[32];
    int64_t count;
    int idx;

    for (const char *p = gres; (p = gres_next(p, item, sizeof(item)));) {
        if (gres_item(item, name, sizeof(name), &idx, &count) < 0 || idx < 0 || count <= 0)
            continue;
        if (strcmp(name, "gpu") == 0 && pl->ngpus < SL_EXEC_MAX_GPUS) {
            pl->gpus[pl->ngpus++] = idx;
        } else if (strcmp(name, "shard") == 0 && pl->nshards < SL_EXEC_MAX_GPUS) {
            pl->shard_gpu[pl->nshards] = idx;
            pl->shards[pl->nshards++] = count > INT32_MAX ? INT32_MAX : (int)count;
        }
    }
}

/* The number of the n decimal digits at p (checked digits). */
static int digits(const char *p, int n)
{
    int v = 0;

    while (n-- > 0)
        v = v * 10 + (*p++ - '0');
    return v;
}

/* A time of scontrol's, "2026-12-04T18:30:01" in local time, into ms
 * since the epoch; false for anything else ("Unknown", "None", a date
 * that does not exist, one before 1970). */
static pthread_mutex_t tz_mu = PTHREAD_MUTEX_INITIALIZER;

static bool parse_time(const char *v, int64_t *ms)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd";
    struct tm tm = {0};
    time_t t;
    int mon, mday;

    if (strlen(v) != sizeof(shape) - 1)
        return false;
    for (size_t i = 0; shape[i]; i++)
        if (shape[i] == 'd' ? !isdigit((unsigned char)v[i]) : v[i] != shape[i])
            return false;
    tm.tm_year = digits(v, 4) - 1900;
    tm.tm_mon = digits(v + 5, 2) - 1;
    tm.tm_mday = digits(v + 8, 2);
    tm.tm_hour = digits(v + 11, 2);
    tm.tm_min = digits(v + 14, 2);
    tm.tm_sec = digits(v + 17, 2);
    tm.tm_isdst = -1;
    mon = tm.tm_mon;
    mday = tm.tm_mday;
    if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 60)
        return false;
    /* mktime reads the zone into globals of glibc's (tzset): one at a time,
     * for threads that parse at once */
    pthread_mutex_lock(&tz_mu);
    t = mktime(&tm);
    pthread_mutex_unlock(&tz_mu);
    /* mktime would take 2026-02-31 as 2026-03-03: refused */
    if (t <= 0 || tm.tm_mon != mon || tm.tm_mday != mday)
        return false;
    *ms = (int64_t)t * 1000;
    return true;
}

int sl_slurm_parse_job(const char *line, struct sl_slurm_job *out)
{
    char v[512], a[32], *colon;
    const char *from = NULL;
    int64_t i64, code = 0, sig = 0;

    memset(out, 0, sizeof(*out));
    if (!field(line, "JobId", v, sizeof(v), NULL) || !parse_i64(v, 1, INT64_MAX, &i64))
        return -EINVAL;
    out->id = (uint64_t)i64;
    if (field(line, "HetJobOffset", v, sizeof(v), NULL) && parse_i64(v, 0, 1 << 20, &i64))
        out->het_offset = (int)i64;
    field(line, "JobName", out->name, sizeof(out->name), NULL);
    if (!field(line, "JobState", out->state, sizeof(out->state), NULL) || !out->state[0])
        return -EINVAL;
    field(line, "Reason", out->reason, sizeof(out->reason), NULL);
    if (field(line, "ExitCode", a, sizeof(a), NULL) && (colon = strchr(a, ':'))) {
        *colon = '\0';
        if (!parse_i64(a, 0, 255, &code) || !parse_i64(colon + 1, 0, 255, &sig))
            return -EINVAL;
    }
    out->exit_code = sig ? 128 + (int)sig : (int)code;
    if (sl_slurm_phase(out->state) != SL_SLURM_WAITING &&
        (!field(line, "StartTime", v, sizeof(v), NULL) || !parse_time(v, &out->start_ms)))
        out->start_ms = 0;
    if (sl_slurm_phase(out->state) >= SL_SLURM_ENDED &&
        (!field(line, "EndTime", v, sizeof(v), NULL) || !parse_time(v, &out->end_ms)))
        out->end_ms = 0;
    /* -d: "Nodes=n2 CPU_IDs=0 Mem=100 GRES=gpu:g3:1(IDX:3)" per node group */
    while (out->nplaces < (int)(sizeof(out->places) / sizeof(out->places[0])) &&
           field(line, "Nodes", v, sizeof(v), &from)) {
        struct sl_slurm_place *pl = &out->places[out->nplaces++];
        const char *gfrom = from, *next = from;
        char gres[512] = "";
        snprintf(pl->node, sizeof(pl->node), "%s", v);
        /* this group's GRES, before the next group's Nodes= */
        field(line, "Nodes", v, sizeof(v), &next);
        if (field(line, "GRES", gres, sizeof(gres), &gfrom) && (next == from || gfrom <= next))
            place_gres(gres, pl);
    }
    return 0;
}

int sl_slurm_parse_squeue(const char *line, struct sl_slurm_job *out)
{
    char f[7][64];
    const char *p = line;
    int64_t id, het, off = 0, status;

    memset(out, 0, sizeof(*out));
    /* seven fields, each ended by '|', then the reason to the line's end */
    for (int i = 0; i < 7; i++) {
        const char *bar = strchr(p, '|');
        size_t len;
        if (!bar || (len = (size_t)(bar - p)) >= sizeof(f[i]))
            return -EINVAL;
        memcpy(f[i], p, len);
        f[i][len] = '\0';
        p = bar + 1;
    }
    if (!parse_i64(f[0], 1, INT64_MAX, &id) || !f[3][0] ||
        !parse_i64(f[4], 0, 0xffff, &status))
        return -EINVAL;
    if (strcmp(f[1], "N/A") == 0) {
        if (strcmp(f[2], "N/A") != 0)
            return -EINVAL;
    } else if (!parse_i64(f[1], 1, INT64_MAX, &het) || !parse_i64(f[2], 0, 1 << 20, &off)) {
        return -EINVAL;
    } else {
        id = het;
    }
    for (const char *c = f[3]; *c; c++)
        if (!isupper((unsigned char)*c) && *c != '_')
            return -EINVAL;
    out->id = (uint64_t)id;
    out->het_offset = (int)off;
    snprintf(out->state, sizeof(out->state), "%s", f[3]);
    /* a wait status: the signal in the low 7 bits, else the code above */
    out->exit_code = (status & 0x7f) ? 128 + (int)(status & 0x7f) : (int)(status >> 8);
    if (sl_slurm_phase(out->state) != SL_SLURM_WAITING && !parse_time(f[5], &out->start_ms))
        out->start_ms = 0;
    if (sl_slurm_phase(out->state) >= SL_SLURM_ENDED && !parse_time(f[6], &out->end_ms))
        out->end_ms = 0;
    snprintf(out->reason, sizeof(out->reason), "%.*s", (int)strcspn(p, "\n"), p);
    return 0;
}

enum sl_slurm_phase sl_slurm_phase(const char *s)
{
    static const char *const ended[] = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                                        "OUT_OF_MEMORY", "DEADLINE"};
    static const char *const lost[] = {"NODE_FAIL", "BOOT_FAIL", "PREEMPTED", "REVOKED",
                                       "SPECIAL_EXIT"};
    static const char *const running[] = {"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED",
                                          "SIGNALING", "STAGE_OUT"};

    for (size_t i = 0; i < SL_ARRAY_LEN(ended); i++)
        if (strcmp(s, ended[i]) == 0)
            return SL_SLURM_ENDED;
    for (size_t i = 0; i < SL_ARRAY_LEN(lost); i++)
        if (strcmp(s, lost[i]) == 0)
            return SL_SLURM_LOST;
    for (size_t i = 0; i < SL_ARRAY_LEN(running); i++)
        if (strcmp(s, running[i]) == 0)
            return SL_SLURM_RUNNING;
    return SL_SLURM_WAITING;
}

/* Say why an allocation is not the one decided; returns -EINVAL. */
static int mismatch(char *why, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int mismatch(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;

    if (why && size) {
        va_start(ap, fmt);
        vsnprintf(why, size, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

/* Index of 'v' in the first n of 'a', or -1. */
static int find(const int *a, int n, int v)
{
    for (int i = 0; i < n; i++)
        if (a[i] == v)
            return i;
    return -1;
}

int sl_slurm_check_place(const struct sl_slurm_place *got, const struct sl_slurm_place *want,
                         char *why, size_t why_size)
{
    if (strcmp(got->node, want->node) != 0)
        return mismatch(why, why_size, "Slurm ran it on %s, not %s", got->node, want->node);
    for (int i = 0; i < want->ngpus; i++)
        if (find(got->gpus, got->ngpus, want->gpus[i]) < 0)
            return mismatch(why, why_size, "Slurm did not give GPU %d on %s", want->gpus[i],
                            got->node);
    for (int i = 0; i < got->ngpus; i++)
        if (find(want->gpus, want->ngpus, got->gpus[i]) < 0)
            return mismatch(why, why_size, "Slurm gave GPU %d on %s, not decided",
                            got->gpus[i], got->node);
    for (int i = 0; i < want->nshards; i++) {
        int k = find(got->shard_gpu, got->nshards, want->shard_gpu[i]);
        if (k < 0 || got->shards[k] != want->shards[i])
            return mismatch(why, why_size, "Slurm gave %d shards of GPU %d on %s, not %d",
                            k < 0 ? 0 : got->shards[k], want->shard_gpu[i], got->node,
                            want->shards[i]);
    }
    for (int i = 0; i < got->nshards; i++)
        if (find(want->shard_gpu, want->nshards, got->shard_gpu[i]) < 0)
            return mismatch(why, why_size, "Slurm gave shards of GPU %d on %s, not decided",
                            got->shard_gpu[i], got->node);
    return 0;
}

void sl_slurm_shell_quote(struct sl_buf *b, const char *s)
{
    sl_buf_add(b, "'", 1);
    for (; *s; s++) {
        if (*s == '\'')
            sl_buf_adds(b, "'\\''");
        else
            sl_buf_add(b, s, 1);
    }
    sl_buf_add(b, "'", 1);
}

/* The value of "Key = value" on a line of `scontrol show config`, copied
 * to 'buf' (trailing blanks cut); false when no line starts with 'key'. */
static bool config_value(const char *text, const char *key, char *buf, size_t size)
{
    size_t klen = strlen(key);

    for (const char *line = text, *next; line && *line; line = next) {
        const char *p = line, *end;
        size_t n;
        next = strchr(line, '\n');
        next = next ? next + 1 : NULL;
        if (strncmp(p, key, klen) != 0 || (p[klen] != ' ' && p[klen] != '='))
            continue;
        p += klen;
        while (*p == ' ')
            p++;
        if (*p != '=')
            continue;
        p++;
        while (*p == ' ')
            p++;
        end = strchr(p, '\n');
        n = end ? (size_t)(end - p) : strlen(p);
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\r'))
            n--;
        if (n >= size)
            n = size - 1;
        memcpy(buf, p, n);
        buf[n] = '\0';
        return true;
    }
    return false;
}

static bool config_yes(const char *text, const char *key)
{
    char v[16];

    return config_value(text, key, v, sizeof(v)) && strcasecmp(v, "yes") == 0;
}

int sl_slurm_parse_confine(const char *text, struct sl_slurm_confine *out)
{
    char plugins[256];

    memset(out, 0, sizeof(*out));
    if (!config_value(text, "TaskPlugin", plugins, sizeof(plugins)))
        return -EINVAL;
    out->task_cgroup = sl_slurm_list_has(plugins, "task/cgroup");
    out->cores = config_yes(text, "ConstrainCores");
    out->ram = config_yes(text, "ConstrainRAMSpace");
    out->devices = config_yes(text, "ConstrainDevices");
    return 0;
}
