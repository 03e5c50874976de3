/*
 * trace.c - CSV loaders for the simulator's traces. See trace.h.
 *
 * The CSV reader takes RFC 4180 fields (optionally quoted, "" for a quote
 * inside quotes), LF or CRLF line ends, and refuses what the bounds in
 * trace.h do not allow. A row is first split into at most MAX_FIELDS
 * fields, then each loader looks its columns up by header name and checks
 * every value it uses.
 */
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 64
#define MIB (1024LL * 1024)

struct csv {
    const char *path;
    const char *base;     /* file name, for messages */
    char *data;           /* the whole file, owned */
    size_t len, pos;
    size_t line;          /* 1-based number of the row in fields[] */
    char *fields[MAX_FIELDS];
    int nfields;
    char row[SL_TRACE_MAX_LINE + 1]; /* unquoted copy of the current row */
    /* header */
    char *cols[MAX_FIELDS];
    int ncols;
    char head[SL_TRACE_MAX_LINE + 1];
};

static int csv_open(struct csv *c, const char *path, struct sl_error *err)
{
    int rc;
    const char *slash = strrchr(path, '/');

    c->path = path;
    c->base = slash ? slash + 1 : path;
    c->data = NULL;
    c->len = c->pos = 0;
    c->line = 0;
    c->ncols = 0;
    if ((rc = sl_read_file(path, SL_TRACE_MAX_BYTES, &c->data, &c->len)) < 0) {
        if (rc == -EFBIG)
            return sl_errorf(err, rc, "%s: larger than %zu MiB", path,
                             SL_TRACE_MAX_BYTES >> 20);
        return sl_errorf(err, rc, "%s: %s", path, strerror(-rc));
    }
    return 0;
}

static void csv_close(struct csv *c)
{
    free(c->data);
    c->data = NULL;
}

/* Split the next row into c->fields. Returns 1 for a row, 0 at the end,
 * or -EINVAL. Blank lines are skipped. */
static int csv_next(struct csv *c, struct sl_error *err)
{
    for (;;) {
        size_t o = 0;
        bool quoted = false, start = true;

        if (c->pos >= c->len)
            return 0;
        c->line++;
        c->nfields = 0;
        c->fields[c->nfields++] = c->row;
        while (c->pos < c->len) {
            char ch = c->data[c->pos++];
            if (ch == '\0')
                return sl_errorf(err, -EINVAL, "%s:%zu: NUL byte", c->base, c->line);
            if (quoted) {
                if (ch == '"') {
                    if (c->pos < c->len && c->data[c->pos] == '"') {
                        c->pos++;
                    } else {
                        quoted = false;
                        continue;
                    }
                }
            } else if (ch == '"' && start) {
                quoted = true;
                start = false;
                continue;
            } else if (ch == '\n') {
                break;
            } else if (ch == '\r' && c->pos < c->len && c->data[c->pos] == '\n') {
                continue;
            } else if (ch == ',') {
                if (o >= SL_TRACE_MAX_LINE)
                    return sl_errorf(err, -EINVAL, "%s:%zu: line longer than %d bytes",
                                     c->base, c->line, SL_TRACE_MAX_LINE);
                c->row[o++] = '\0';
                if (c->nfields == MAX_FIELDS)
                    return sl_errorf(err, -EINVAL, "%s:%zu: more than %d fields",
                                     c->base, c->line, MAX_FIELDS);
                c->fields[c->nfields++] = c->row + o;
                start = true;
                continue;
            }
            start = false;
            if (o >= SL_TRACE_MAX_LINE)
                return sl_errorf(err, -EINVAL, "%s:%zu: line longer than %d bytes",
                                 c->base, c->line, SL_TRACE_MAX_LINE);
            c->row[o++] = ch;
        }
        if (quoted)
            return sl_errorf(err, -EINVAL, "%s:%zu: unterminated quoted field",
                             c->base, c->line);
        c->row[o] = '\0';
        if (o == 0 && c->nfields == 1)
            continue; /* blank line */
        return 1;
    }
}

/* Read the header row. */
static int csv_header(struct csv *c, struct sl_error *err)
{
    int rc = csv_next(c, err);
    size_t o = 0;

    if (rc < 0)
        return rc;
    if (rc == 0)
        return sl_errorf(err, -EINVAL, "%s: empty file (no header)", c->base);
    for (int i = 0; i < c->nfields; i++) {
        size_t n = strlen(c->fields[i]);
        c->cols[i] = c->head + o;
        memcpy(c->head + o, c->fields[i], n + 1);
        o += n + 1;
    }
    c->ncols = c->nfields;
    return 0;
}

/* Index of column 'name', or -1. */
static int col(const struct csv *c, const char *name)
{
    for (int i = 0; i < c->ncols; i++)
        if (strcmp(c->cols[i], name) == 0)
            return i;
    return -1;
}

static int need_cols(const struct csv *c, const char *const *names, int *idx,
                     struct sl_error *err)
{
    for (int i = 0; names[i]; i++)
        if ((idx[i] = col(c, names[i])) < 0)
            return sl_errorf(err, -EINVAL, "%s: header has no column '%s'",
                             c->base, names[i]);
    return 0;
}

static const char *field(const struct csv *c, int i)
{
    return i >= 0 && i < c->nfields ? c->fields[i] : NULL;
}

static int bad(const struct csv *c, const char *colname, const char *what,
               const char *v, struct sl_error *err)
{
    char show[48];

    sl_text_show(show, sizeof(show), v ? v : "", v ? strlen(v) : 0, 40);
    return sl_errorf_field(err, -EINVAL, colname, "%s:%zu: %s: %s, got '%s'",
                           c->base, c->line, colname, what, show);
}

/* An integer column in [min, max]; an empty cell is 'dflt' when
 * allow_empty, else an error. */
static int get_int(const struct csv *c, int i, const char *name, int64_t min,
                   int64_t max, bool allow_empty, int64_t dflt, int64_t *out,
                   struct sl_error *err)
{
    const char *v = field(c, i);
    char what[96];

    if (!v)
        return bad(c, name, "missing (the row has too few fields)", "", err);
    if (!*v && allow_empty) {
        *out = dflt;
        return 0;
    }
    /* Some exports write integers as "12.0": accept a zero fraction. */
    {
        char buf[32];
        size_t n = strlen(v);
        const char *dot = strchr(v, '.');
        if (dot && n < sizeof(buf) && strspn(dot + 1, "0") == strlen(dot + 1) &&
            dot > v) {
            memcpy(buf, v, (size_t)(dot - v));
            buf[dot - v] = '\0';
            if (sl_parse_int64(buf, min < 0 ? 0 : min, max, out) == 0)
                return 0;
        }
    }
    if (sl_parse_int64(v, min < 0 ? 0 : min, max, out) < 0) {
        snprintf(what, sizeof(what), "must be an integer from %" PRId64 " to %" PRId64,
                 min, max);
        return bad(c, name, what, v, err);
    }
    return 0;
}

/* A name-like text column: 1..max bytes of printable ASCII. */
static int get_text(const struct csv *c, int i, const char *name, size_t max,
                    bool allow_empty, char *out, size_t size, struct sl_error *err)
{
    const char *v = field(c, i);
    size_t n;
    char what[64];

    if (!v)
        return bad(c, name, "missing (the row has too few fields)", "", err);
    n = strlen(v);
    snprintf(what, sizeof(what), "must be %s1 to %zu printable ASCII characters",
             allow_empty ? "empty or " : "", max);
    if ((!n && !allow_empty) || n > max)
        return bad(c, name, what, v, err);
    for (size_t k = 0; k < n; k++)
        if ((unsigned char)v[k] < 0x21 || (unsigned char)v[k] > 0x7e)
            return bad(c, name, what, v, err);
    sl_strlcpy(out, v, size);
    return 0;
}

/* A GPU model: letters, digits, '.', '_', '-'. */
static bool model_ok(const char *s, size_t n)
{
    if (n < 1 || n > 47)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
              (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
    void *np;
    size_t ncap;

    if (n < *cap)
        return 0;
    ncap = *cap ? *cap * 2 : 1024;
    if (!(np = realloc(*p, ncap * elem)))
        return -ENOMEM;
    *p = np;
    *cap = ncap;
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Refuse a duplicate name among 'n' records of 'size' bytes that start
 * with their name. */
static int unique_names(const void *recs, size_t n, size_t size, const char *file,
                        const char *colname, struct sl_error *err);

/* The end of a loader: at least one row, and the names in column
 * 'namecol' (the records' first field; NULL: not checked) unique. */
static int rows_end(const struct csv *c, const void *recs, size_t n, size_t size,
                    const char *what, const char *namecol, struct sl_error *err)
{
    if (n == 0)
        return sl_errorf(err, -EINVAL, "%s: no %s", c->base, what);
    return namecol ? unique_names(recs, n, size, c->base, namecol, err) : 0;
}

static int unique_names(const void *recs, size_t n, size_t size, const char *file,
                        const char *colname, struct sl_error *err)
{
    const char **v = malloc(sizeof(*v) * n);
    int rc = 0;

    if (!v)
        return sl_errorf(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        v[i] = (const char *)recs + i * size;
    qsort(v, n, sizeof(*v), name_cmp);
    for (size_t i = 1; i < n && rc == 0; i++)
        if (strcmp(v[i - 1], v[i]) == 0)
            rc = sl_errorf_field(err, -EINVAL, colname, "%s: %s: '%s' appears twice",
                                 file, colname, v[i]);
    free(v);
    return rc;
}

/* ---- node lists ------------------------------------------------------- */

int sl_trace_load_nodes(const char *path, struct sl_trace_node **out, size_t *n,
                        struct sl_error *err)
{
    static const char *const names[] = {"sn", "cpu_milli", "memory_mib", "gpu",
                                        "model", NULL};
    struct csv *c = malloc(sizeof(*c));
    struct sl_trace_node *v = NULL;
    size_t cnt = 0, cap = 0;
    int idx[5], domain_col, rc;

    if (!c)
        return sl_errorf(err, -ENOMEM, "out of memory");
    if ((rc = csv_open(c, path, err)) < 0)
        goto out;
    if ((rc = csv_header(c, err)) < 0 || (rc = need_cols(c, names, idx, err)) < 0)
        goto out;
    domain_col = col(c, "domain");
    while ((rc = csv_next(c, err)) == 1) {
        struct sl_trace_node *nd;
        int64_t cpu, mib, gpus;

        if (cnt == SL_TRACE_MAX_ROWS) {
            rc = sl_errorf(err, -EINVAL, "%s: more than %d rows", c->base,
                           SL_TRACE_MAX_ROWS);
            goto out;
        }
        if ((rc = grow((void **)&v, &cap, cnt, sizeof(*v))) < 0) {
            sl_errorf(err, rc, "out of memory");
            goto out;
        }
        nd = &v[cnt];
        memset(nd, 0, sizeof(*nd));
        if ((rc = get_text(c, idx[0], "sn", SL_TRACE_NAME_MAX, false, nd->name,
                           sizeof(nd->name), err)) < 0 ||
            (rc = get_int(c, idx[1], "cpu_milli", 0, 1000000000, false, 0, &cpu,
                          err)) < 0 ||
            (rc = get_int(c, idx[2], "memory_mib", 0, 1LL << 30, false, 0, &mib,
                          err)) < 0 ||
            (rc = get_int(c, idx[3], "gpu", 0, 64, true, 0, &gpus, err)) < 0)
            goto out;
        {
            const char *m = field(c, idx[4]);
            if (!m) {
                rc = bad(c, "model", "missing (the row has too few fields)", "", err);
                goto out;
            }
            if ((*m && !model_ok(m, strlen(m))) || (!*m && gpus > 0)) {
                rc = bad(c, "model",
                         *m ? "must be 1 to 47 of A-Z a-z 0-9 . _ -"
                            : "must name the GPU model of a node with GPUs",
                         m, err);
                goto out;
            }
            sl_strlcpy(nd->model, gpus > 0 ? m : "", sizeof(nd->model));
        }
        if (domain_col >= 0 &&
            (rc = get_text(c, domain_col, "domain", SL_TRACE_NAME_MAX, true,
                           nd->domain, sizeof(nd->domain), err)) < 0)
            goto out;
        nd->ngpus = (int)gpus;
        nd->cpu_milli = cpu;
        nd->mem_bytes = mib * MIB;
        cnt++;
    }
    if (rc == 0)
        rc = rows_end(c, v, cnt, sizeof(*v), "nodes", "sn", err);
    if (rc == 0) {
        *out = v;
        *n = cnt;
        v = NULL;
    }
out:
    free(v);
    csv_close(c);
    free(c);
    return rc;
}

/* ---- openb pods ------------------------------------------------------- */

static int gpu_spec(const struct csv *c, int i, char *out, size_t size,
                    struct sl_error *err)
{
    const char *v = field(c, i), *p;

    out[0] = '\0';
    if (!v || !*v)
        return 0;
    if (strlen(v) >= size)
        return bad(c, "gpu_spec", "too long", v, err);
    for (p = v; *p;) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n && !model_ok(p, n))
            return bad(c, "gpu_spec", "must be GPU models separated by '|'", v, err);
        p += n + (bar ? 1 : 0);
        if (!bar)
            break;
    }
    sl_strlcpy(out, v, size);
    return 0;
}

/* The columns of a pod list: the required ones, then the optional ones
 * (-1 when absent). */
struct pod_cols {
    int idx[5];                   /* name, cpu_milli, memory_mib, num_gpu, gpu_milli */
    int spec, qos, cre, del, sch; /* gpu_spec, qos, creation, deletion, scheduled time */
};

/* The current row of a pod list into *t. */
static int pod_row(struct csv *c, const struct pod_cols *k, struct sl_trace_task *t,
                   struct sl_error *err)
{
    const int *idx = k->idx;
    int64_t cpu, mib, ngpu, milli, cre = -1, del = -1, sch = -1;
    int rc;

    memset(t, 0, sizeof(*t));
    if ((rc = get_text(c, idx[0], "name", SL_TRACE_NAME_MAX, false, t->name,
                       sizeof(t->name), err)) < 0 ||
        (rc = get_int(c, idx[1], "cpu_milli", 0, 1000000000, false, 0, &cpu,
                      err)) < 0 ||
        (rc = get_int(c, idx[2], "memory_mib", 0, 1LL << 30, false, 0, &mib,
                      err)) < 0 ||
        (rc = get_int(c, idx[3], "num_gpu", 0, 64, false, 0, &ngpu, err)) < 0 ||
        (rc = get_int(c, idx[4], "gpu_milli", 0, 1000, false, 0, &milli, err)) < 0)
        return rc;
    if (ngpu > 0 && milli == 0)
        return bad(c, "gpu_milli", "must be 1..1000 when num_gpu > 0", field(c, idx[4]), err);
    if (ngpu == 0 && milli != 0)
        return bad(c, "gpu_milli", "must be 0 when num_gpu is 0", field(c, idx[4]), err);
    if (ngpu > 1 && milli != 1000)
        return bad(c, "gpu_milli",
                   "must be 1000 for a pod of several GPUs (a fraction is of one GPU)",
                   field(c, idx[4]), err);
    if (k->spec >= 0 &&
        (rc = gpu_spec(c, k->spec, t->gpu_spec, sizeof(t->gpu_spec), err)) < 0)
        return rc;
    if (k->qos >= 0 &&
        (rc = get_text(c, k->qos, "qos", 15, true, t->qos, sizeof(t->qos), err)) < 0)
        return rc;
    if (k->cre >= 0 && (rc = get_int(c, k->cre, "creation_time", 0, 1LL << 40, true,
                                     -1, &cre, err)) < 0)
        return rc;
    if (k->del >= 0 && (rc = get_int(c, k->del, "deletion_time", 0, 1LL << 40, true,
                                     -1, &del, err)) < 0)
        return rc;
    if (k->sch >= 0 && (rc = get_int(c, k->sch, "scheduled_time", 0, 1LL << 40, true,
                                     -1, &sch, err)) < 0)
        return rc;
    if (cre >= 0 && del >= 0 && del < cre)
        return bad(c, "deletion_time", "must not be before creation_time",
                   field(c, k->del), err);
    if (sch >= 0 && ((cre >= 0 && sch < cre) || (del >= 0 && sch > del)))
        return bad(c, "scheduled_time", "must lie between creation and deletion",
                   field(c, k->sch), err);
    t->tasks = 1;
    t->num_gpu = (int)ngpu;
    t->gpu_milli = (int)milli;
    t->cpu_milli = cpu;
    t->mem_bytes = mib * MIB;
    t->submit_ms = cre >= 0 ? cre * 1000 : -1;
    t->duration_ms = del < 0 ? -1 : (del - (sch >= 0 ? sch : cre >= 0 ? cre : del)) * 1000;
    return 0;
}

int sl_trace_load_pods(const char *path, struct sl_trace_task **out, size_t *n,
                       struct sl_error *err)
{
    static const char *const names[] = {"name", "cpu_milli", "memory_mib",
                                        "num_gpu", "gpu_milli", NULL};
    struct csv *c = malloc(sizeof(*c));
    struct sl_trace_task *v = NULL;
    struct pod_cols k;
    size_t cnt = 0, cap = 0;
    int rc;

    if (!c)
        return sl_errorf(err, -ENOMEM, "out of memory");
    if ((rc = csv_open(c, path, err)) < 0)
        goto out;
    if ((rc = csv_header(c, err)) < 0 || (rc = need_cols(c, names, k.idx, err)) < 0)
        goto out;
    k.spec = col(c, "gpu_spec");
    k.qos = col(c, "qos");
    k.cre = col(c, "creation_time");
    k.del = col(c, "deletion_time");
    k.sch = col(c, "scheduled_time");
    while ((rc = csv_next(c, err)) == 1) {
        if (cnt == SL_TRACE_MAX_ROWS) {
            rc = sl_errorf(err, -EINVAL, "%s: more than %d rows", c->base,
                           SL_TRACE_MAX_ROWS);
            goto out;
        }
        if ((rc = grow((void **)&v, &cap, cnt, sizeof(*v))) < 0) {
            sl_errorf(err, rc, "out of memory");
            goto out;
        }
        if ((rc = pod_row(c, &k, &v[cnt], err)) < 0)
            goto out;
        cnt++;
    }
    if (rc == 0)
        rc = rows_end(c, v, cnt, sizeof(*v), "pods", "name", err);
    if (rc == 0) {
        *out = v;
        *n = cnt;
        v = NULL;
    }
out:
    free(v);
    csv_close(c);
    free(c);
    return rc;
}

/* ---- Philly / Helios job lists ---------------------------------------- */

int sl_trace_load_jobs(const char *path, struct sl_trace_task **out, size_t *n,
                       struct sl_error *err)
{
    static const char *const names[] = {"u_id", "user", "gpu_num", "cpu_num",
                                        "node_num", "interval", "run_time", NULL};
    struct csv *c = malloc(sizeof(*c));
    struct sl_trace_task *v = NULL;
    size_t cnt = 0, cap = 0;
    int idx[7] = {0}, rc;
    int64_t clock_s = 0;

    if (!c)
        return sl_errorf(err, -ENOMEM, "out of memory");
    if ((rc = csv_open(c, path, err)) < 0)
        goto out;
    if ((rc = csv_header(c, err)) < 0 || (rc = need_cols(c, names, idx, err)) < 0)
        goto out;
    while ((rc = csv_next(c, err)) == 1) {
        struct sl_trace_task *t;
        int64_t uid, user, gpus, cpus, nodes, interval, run;

        if (cnt == SL_TRACE_MAX_ROWS) {
            rc = sl_errorf(err, -EINVAL, "%s: more than %d rows", c->base,
                           SL_TRACE_MAX_ROWS);
            goto out;
        }
        if ((rc = grow((void **)&v, &cap, cnt, sizeof(*v))) < 0) {
            sl_errorf(err, rc, "out of memory");
            goto out;
        }
        t = &v[cnt];
        memset(t, 0, sizeof(*t));
        if ((rc = get_int(c, idx[0], "u_id", 0, INT32_MAX, false, 0, &uid, err)) < 0 ||
            (rc = get_int(c, idx[1], "user", 0, INT32_MAX, false, 0, &user, err)) < 0 ||
            (rc = get_int(c, idx[2], "gpu_num", 0, 65536, false, 0, &gpus, err)) < 0 ||
            (rc = get_int(c, idx[3], "cpu_num", 0, 1000000, false, 0, &cpus, err)) < 0 ||
            (rc = get_int(c, idx[4], "node_num", 1, 1024, false, 0, &nodes, err)) < 0 ||
            (rc = get_int(c, idx[5], "interval", 0, 1LL << 33, false, 0, &interval,
                          err)) < 0 ||
            (rc = get_int(c, idx[6], "run_time", 0, 1LL << 33, false, 0, &run, err)) < 0)
            goto out;
        if ((gpus + nodes - 1) / nodes > 64) {
            rc = bad(c, "gpu_num", "more than 64 GPUs per node", field(c, idx[2]), err);
            goto out;
        }
        clock_s += interval;
        if (clock_s > (1LL << 40)) {
            rc = bad(c, "interval", "the arrival time overflows", field(c, idx[5]), err);
            goto out;
        }
        snprintf(t->name, sizeof(t->name), "job-%" PRId64, uid);
        snprintf(t->user, sizeof(t->user), "u%" PRId64, user);
        t->tasks = (int)nodes;
        t->num_gpu = (int)((gpus + nodes - 1) / nodes);
        t->gpu_milli = t->num_gpu ? 1000 : 0;
        t->cpu_milli = (cpus + nodes - 1) / nodes * 1000;
        t->mem_bytes = 0;
        t->submit_ms = clock_s * 1000;
        t->duration_ms = run * 1000;
        cnt++;
    }
    if (rc == 0)
        rc = rows_end(c, v, cnt, sizeof(*v), "jobs", NULL, err);
    if (rc == 0) {
        *out = v;
        *n = cnt;
        v = NULL;
    }
out:
    free(v);
    csv_close(c);
    free(c);
    return rc;
}

int sl_trace_load_vcs(const char *path, struct sl_trace_vc **out, size_t *n,
                      struct sl_error *err)
{
    static const char *const names[] = {"vc", "node num", NULL};
    struct csv *c = malloc(sizeof(*c));
    struct sl_trace_vc *v = NULL;
    size_t cnt = 0, cap = 0;
    int idx[2], rc;

    if (!c)
        return sl_errorf(err, -ENOMEM, "out of memory");
    if ((rc = csv_open(c, path, err)) < 0)
        goto out;
    if ((rc = csv_header(c, err)) < 0 || (rc = need_cols(c, names, idx, err)) < 0)
        goto out;
    while ((rc = csv_next(c, err)) == 1) {
        int64_t nodes;
        if (cnt == 4096) {
            rc = sl_errorf(err, -EINVAL, "%s: more than 4096 virtual clusters", c->base);
            goto out;
        }
        if ((rc = grow((void **)&v, &cap, cnt, sizeof(*v))) < 0) {
            sl_errorf(err, rc, "out of memory");
            goto out;
        }
        if ((rc = get_text(c, idx[0], "vc", SL_TRACE_NAME_MAX, false, v[cnt].name,
                           sizeof(v[cnt].name), err)) < 0 ||
            (rc = get_int(c, idx[1], "node num", 0, 1000000, false, 0, &nodes, err)) < 0)
            goto out;
        v[cnt++].nodes = (int)nodes;
    }
    if (rc == 0)
        rc = rows_end(c, v, cnt, sizeof(*v), "virtual clusters", "vc", err);
    if (rc == 0) {
        *out = v;
        *n = cnt;
        v = NULL;
    }
out:
    free(v);
    csv_close(c);
    free(c);
    return rc;
}

int sl_trace_sniff(const char *path)
{
    FILE *fp = fopen(path, "re");
    char line[512];
    int kind = 0;

    if (!fp)
        return -errno;
    if (fgets(line, sizeof(line), fp)) {
        if (strncmp(line, "name,", 5) == 0)
            kind = 'p';
        else if (strncmp(line, "u_id,", 5) == 0)
            kind = 'j';
        else if (strncmp(line, "sn,", 3) == 0)
            kind = 'n';
    }
    fclose(fp);
    return kind;
}
