/*
 * format.c - human units, aligned tables and CSV for `sluice` output.
 *
 * Pure: no network, no clock (callers pass now_ms). Strings that came from
 * the server are sanitised before they reach a terminal in table mode, so a
 * job name cannot carry escape sequences; CSV keeps data as it is, quoted.
 * Widths count UTF-8 code points, not bytes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct sl_cli_table {
    size_t ncols;
    char **header; /* owned; ncols cells, or NULL for no header */
    size_t *max;   /* per column: table-mode width limit, 0 = none */
    char **cells;  /* owned; nrows * ncols cells, NULL allowed */
    size_t nrows, cap_rows;
    size_t *width; /* per column: table-mode width of the widest cell */
    bool width_ok; /* 'width' is up to date with the rows */
};

char *sl_cli_fmt_duration(int64_t ms, char *buf, size_t size)
{
    int64_t s = ms > 0 ? ms / 1000 : 0;
    /* the two largest units, the second left out when zero: 5m, 2h5m, 3d */
    int64_t big = s < 60 ? s : s < 3600 ? s / 60 : s < 86400 ? s / 3600 : s / 86400;
    int64_t small = s < 60 ? 0 : s < 3600 ? s % 60 : s < 86400 ? s % 3600 / 60 : s % 86400 / 3600;
    const char *bu = s < 60 ? "s" : s < 3600 ? "m" : s < 86400 ? "h" : "d";
    const char *su = s < 3600 ? "s" : s < 86400 ? "m" : "h";

    if (small)
        snprintf(buf, size, "%lld%s%lld%s", (long long)big, bu, (long long)small, su);
    else
        snprintf(buf, size, "%lld%s", (long long)big, bu);
    return buf;
}

char *sl_cli_fmt_bytes(int64_t bytes, char *buf, size_t size)
{
    static const char *units[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    uint64_t b = (uint64_t)bytes, tenths = 0;

    if (bytes < 1024) {
        snprintf(buf, size, "%lldB", (long long)(bytes < 0 ? 0 : bytes));
        return buf;
    }
    /* The first unit where the value, rounded to tenths, is under 1024.
     * rem < 2^60 so rem * 10 fits in 64 unsigned bits. */
    for (size_t u = 0; u < SL_ARRAY_LEN(units); u++) {
        uint64_t div = (uint64_t)1 << (10 * (u + 1));
        tenths = b / div * 10 + (b % div * 10 + div / 2) / div;
        if (tenths < 10240 || u + 1 == SL_ARRAY_LEN(units)) {
            snprintf(buf, size, "%llu.%llu%s",
                     (unsigned long long)(tenths / 10),
                     (unsigned long long)(tenths % 10), units[u]);
            break;
        }
    }
    return buf;
}

char *sl_cli_fmt_milli(int64_t milli, char *buf, size_t size)
{
    int64_t whole = milli / 1000, frac = milli % 1000;
    char digits[8];
    int n;

    if (milli < 0) {
        snprintf(buf, size, "-");
        return buf;
    }
    if (!frac) {
        snprintf(buf, size, "%lld", (long long)whole);
        return buf;
    }
    n = snprintf(digits, sizeof(digits), "%03lld", (long long)frac);
    while (n > 0 && digits[n - 1] == '0')
        digits[--n] = '\0';
    snprintf(buf, size, "%lld.%s", (long long)whole, digits);
    return buf;
}

int sl_cli_parse_time(const char *s, int64_t *out_ms)
{
    return sl_parse_rfc3339_ms(s, out_ms);
}

int sl_cli_parse_when_rel(const char *s, int64_t now_ms, int64_t *out_ms)
{
    const int64_t day = 86400000;
    int64_t ago;

    if (strcmp(s, "now") == 0) {
        *out_ms = now_ms;
    } else if (strcmp(s, "today") == 0 || strcmp(s, "yesterday") == 0) {
        *out_ms = now_ms - now_ms % day - (s[0] == 'y' ? day : 0);
    } else if (s[0] == '-' && s[1] != '-') {
        if (sl_parse_duration_ms(s + 1, &ago) < 0 || ago <= 0 || ago > now_ms)
            return -EINVAL;
        *out_ms = now_ms - ago;
    } else {
        return sl_parse_when_ms(s, out_ms);
    }
    return 0;
}

const char *sl_cli_jstr(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

bool sl_cli_jint(const json_t *obj, const char *key, int64_t *out)
{
    return sl_csv_integer(obj, key, out);
}

const json_t *sl_cli_job_spec(const json_t *job)
{
    const json_t *doc = json_object_get(job, "spec");
    const json_t *inner = json_object_get(doc, "spec");

    return json_is_object(inner) ? inner : doc;
}

char *sl_cli_job_gpus(const json_t *job, char *buf, size_t size)
{
    const json_t *spec = sl_cli_job_spec(job);
    const json_t *res = json_object_get(spec, "resources");
    int64_t tasks = 1, gpus = 0, milli = 0;

    if (!sl_cli_jint(spec, "tasks", &tasks) || tasks < 1)
        tasks = 1;
    if (sl_cli_jint(res, "gpus", &gpus) && gpus > 0 && gpus <= INT32_MAX)
        snprintf(buf, size, "%lld", (long long)(tasks * gpus));
    else if (sl_cli_jint(res, "gpuMilli", &milli) && milli > 0 &&
             milli <= INT32_MAX)
        sl_cli_fmt_milli(tasks * milli, buf, size);
    else
        snprintf(buf, size, "0");
    return buf;
}

char *sl_cli_job_time(const json_t *job, int64_t now_ms, char *buf, size_t size)
{
    int64_t submitted, started, finished;
    bool has_sub =
        sl_cli_parse_time(sl_cli_jstr(job, "submitted_at"), &submitted) == 0;
    bool has_start =
        sl_cli_parse_time(sl_cli_jstr(job, "started_at"), &started) == 0;
    bool has_fin =
        sl_cli_parse_time(sl_cli_jstr(job, "finished_at"), &finished) == 0;

    if (has_fin && (has_start || has_sub))
        return sl_cli_fmt_duration(finished - (has_start ? started : submitted),
                                   buf, size);
    if (has_start)
        return sl_cli_fmt_duration(now_ms - started, buf, size);
    if (has_sub)
        return sl_cli_fmt_duration(now_ms - submitted, buf, size);
    snprintf(buf, size, "-");
    return buf;
}

char *sl_cli_job_state_cell(const json_t *job, char *buf, size_t size)
{
    const json_t *idle = json_object_get(job, "idle");
    const char *state = sl_cli_jstr(job, "state");

    snprintf(buf, size, "%s%s", state ? state : "-",
             !json_is_object(idle)                              ? ""
             : json_is_true(json_object_get(idle, "interactive")) ? " (idle session)"
                                                                : " (idle)");
    return buf;
}

const char *sl_cli_job_idle_text(const json_t *job, int64_t now_ms, char *buf, size_t size)
{
    const json_t *idle = json_object_get(job, "idle");
    const char *since = sl_cli_jstr(idle, "since"), *ends = sl_cli_jstr(idle, "ends_at");
    char d[32], at[48] = "";
    int64_t t;

    if (!json_is_object(idle))
        return NULL;
    if (since && sl_cli_parse_time(since, &t) == 0)
        snprintf(at, sizeof(at), " for %s", sl_cli_fmt_duration(now_ms - t, d, sizeof(d)));
    snprintf(buf, size, "%s: GPUs idle%s (since %s)%s%s",
             json_is_true(json_object_get(idle, "interactive")) ? "idle interactive session"
                                                                : "idle but allocated",
             at, since ? since : "?", ends ? "; the idle timeout ends it at " : "",
             ends ? ends : "");
    return buf;
}

char *sl_cli_sanitize(const char *s, char *buf, size_t size)
{
    size_t o = 0;

    if (!size)
        return buf;
    for (; s && *s && o + 1 < size; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '\n' || ch == '\t' || ch == '\r')
            buf[o++] = ' ';
        else if (ch < 0x20 || ch == 0x7f)
            buf[o++] = '?';
        else
            buf[o++] = (char)ch;
    }
    /* Do not leave half a UTF-8 sequence at a cut. */
    if (s && *s) {
        while (o > 0 && ((unsigned char)buf[o - 1] & 0xC0) == 0x80)
            o--;
        if (o > 0 && ((unsigned char)buf[o - 1] & 0xC0) == 0xC0)
            o--;
    }
    buf[o] = '\0';
    return buf;
}

/* Width in code points. */
static size_t text_width(const char *s)
{
    size_t w = 0;

    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

struct sl_cli_table *sl_cli_table_create(size_t ncols,
                                         const char *const *header)
{
    struct sl_cli_table *t = calloc(1, sizeof(*t));

    if (!t)
        return NULL;
    t->ncols = ncols;
    if (!(t->max = calloc(ncols, sizeof(*t->max))) ||
        !(t->width = calloc(ncols, sizeof(*t->width))))
        goto fail;
    if (header) {
        if (!(t->header = calloc(ncols, sizeof(*t->header))))
            goto fail;
        for (size_t i = 0; i < ncols; i++)
            if (!(t->header[i] = strdup(header[i])))
                goto fail;
    }
    return t;
fail:
    sl_cli_table_destroy(t);
    errno = ENOMEM;
    return NULL;
}

void sl_cli_table_destroy(struct sl_cli_table *t)
{
    int saved = errno;

    if (!t)
        return;
    for (size_t i = 0; t->header && i < t->ncols; i++)
        free(t->header[i]);
    free(t->header);
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t->max);
    free(t->width);
    free(t);
    errno = saved;
}

void sl_cli_table_max_width(struct sl_cli_table *t, size_t col, size_t width)
{
    if (col < t->ncols)
        t->max[col] = width < 4 ? 4 : width;
    t->width_ok = false;
}

size_t sl_cli_table_rows(const struct sl_cli_table *t)
{
    return t->nrows;
}

int sl_cli_table_add(struct sl_cli_table *t, const char *const *cells)
{
    char **row;

    if (t->nrows == t->cap_rows) {
        size_t cap = t->cap_rows ? t->cap_rows * 2 : 16;
        char **nc;
        if (cap > SIZE_MAX / sizeof(char *) / t->ncols ||
            !(nc = realloc(t->cells, cap * t->ncols * sizeof(char *))))
            return -ENOMEM;
        t->cells = nc;
        t->cap_rows = cap;
    }
    row = t->cells + t->nrows * t->ncols;
    for (size_t i = 0; i < t->ncols; i++) {
        row[i] = NULL;
        if (cells[i] && !(row[i] = strdup(cells[i]))) {
            while (i-- > 0)
                free(row[i]);
            return -ENOMEM;
        }
    }
    t->nrows++;
    t->width_ok = false;
    return 0;
}

/* The cell as a table shows it: sanitised, cut to the column's limit. */
static const char *shown_cell(const struct sl_cli_table *t, const char *cell,
                              size_t col, char *buf, size_t size)
{
    size_t w, keep, o = 0;

    sl_cli_sanitize(cell ? cell : "-", buf, size);
    w = text_width(buf);
    if (!t->max[col] || w <= t->max[col])
        return buf;
    keep = t->max[col] - 3;
    for (size_t cp = 0; buf[o]; o++) {
        if (((unsigned char)buf[o] & 0xC0) != 0x80 && cp++ == keep)
            break;
    }
    if (o + 4 <= size) {
        memcpy(buf + o, "...", 4);
    }
    return buf;
}

static void compute_widths(struct sl_cli_table *t)
{
    char buf[1024];

    if (t->width_ok)
        return;
    for (size_t c = 0; c < t->ncols; c++) {
        size_t w = t->header ? text_width(t->header[c]) : 0;
        for (size_t r = 0; r < t->nrows; r++) {
            size_t cw = text_width(
                shown_cell(t, t->cells[r * t->ncols + c], c, buf, sizeof(buf)));
            if (cw > w)
                w = cw;
        }
        t->width[c] = w;
    }
    t->width_ok = true;
}

void sl_cli_table_print_row(struct sl_cli_table *t, FILE *fp, size_t row,
                            size_t indent)
{
    char buf[1024];

    if (row == SIZE_MAX && !t->header)
        return;
    compute_widths(t);
    fprintf(fp, "%*s", (int)indent, "");
    for (size_t c = 0; c < t->ncols; c++) {
        const char *s = row == SIZE_MAX
                            ? t->header[c]
                            : shown_cell(t, t->cells[row * t->ncols + c], c,
                                         buf, sizeof(buf));
        if (c + 1 < t->ncols)
            fprintf(fp, "%s%*s", s, (int)(t->width[c] - text_width(s) + 2), "");
        else
            fputs(s, fp);
    }
    fputc('\n', fp);
}

int sl_cli_table_print(struct sl_cli_table *t, FILE *fp, enum sl_cli_output fmt,
                       size_t indent)
{
    struct sl_buf b;
    int rc = 0;

    if (fmt != SL_CLI_OUT_CSV) {
        sl_cli_table_print_row(t, fp, SIZE_MAX, indent);
        for (size_t r = 0; r < t->nrows; r++)
            sl_cli_table_print_row(t, fp, r, indent);
        return ferror(fp) ? -EIO : 0;
    }
    /* through csv.h, which writes the daemon's CSV answers too */
    sl_buf_init(&b);
    for (size_t r = 0; r < t->nrows + 1; r++) {
        char **row = r == 0 ? t->header : t->cells + (r - 1) * t->ncols;
        if (row)
            sl_csv_row(&b, (const char *const *)row, t->ncols);
    }
    if (b.failed)
        rc = -ENOMEM;
    else if ((b.len && fwrite(b.data, 1, b.len, fp) != b.len) || ferror(fp))
        rc = -EIO;
    sl_buf_fini(&b);
    return rc;
}

/* Characters that make a shell word need quotes. */
static bool needs_quotes(const char *s)
{
    if (!*s)
        return true;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                    "0123456789-_./=:,+@%",
                    *s))
            return true;
    return false;
}

char *sl_cli_shell_join(const json_t *argv)
{
    size_t n = 1, i;
    const json_t *v;
    char *out, *o;

    json_array_foreach (argv, i, v) {
        const char *s = json_string_value(v);
        n += (s ? strlen(s) * 4 : 0) + 3;
    }
    if (!(out = malloc(n)))
        return NULL;
    o = out;
    json_array_foreach (argv, i, v) {
        const char *s = json_string_value(v);
        if (!s)
            continue;
        if (o != out)
            *o++ = ' ';
        if (!needs_quotes(s)) {
            size_t l = strlen(s);
            memcpy(o, s, l);
            o += l;
            continue;
        }
        *o++ = '\'';
        for (; *s; s++) {
            if (*s == '\'') {
                memcpy(o, "'\\''", 4); /* close, escaped quote, reopen */
                o += 4;
            } else {
                *o++ = *s;
            }
        }
        *o++ = '\'';
    }
    *o = '\0';
    return out;
}

/* Columns of `jobs`: table mode is for people (relative time, cut reason),
 * CSV for programs (timestamps, full text). */
static const char *const jobs_cols_table[] = {
    "ID", "NAME", "TEAM", "QUEUE", "STATE", "GPUS", "TIME", "EXIT", "REASON",
};
static const char *const jobs_cols_csv[] = {
    "id",         "name",           "team",      "project", "user",
    "queue",      "priority_class", "state",     "gpus",    "submitted_at",
    "started_at", "finished_at",    "exit_code", "reason",  "message",
};
#define JOBS_REASON_WIDTH 48

struct sl_cli_table *sl_cli_jobs_table(enum sl_cli_output fmt)
{
    struct sl_cli_table *t;

    if (fmt == SL_CLI_OUT_CSV)
        return sl_cli_table_create(SL_ARRAY_LEN(jobs_cols_csv), jobs_cols_csv);
    t = sl_cli_table_create(SL_ARRAY_LEN(jobs_cols_table), jobs_cols_table);
    if (t) {
        sl_cli_table_max_width(t, 1, 40);
        sl_cli_table_max_width(t, 8, JOBS_REASON_WIDTH);
    }
    return t;
}

int sl_cli_jobs_table_add(struct sl_cli_table *t, enum sl_cli_output fmt,
                          const json_t *job, int64_t now_ms)
{
    char id[64] = "-", exit_code[24] = "", gpus[32], time_s[32], state[48], idle[256];
    const char *reason = sl_cli_jstr(job, "reason");
    int64_t v;

    if (sl_cli_jstr(job, "display_id")) /* an array, or one of its elements */
        snprintf(id, sizeof(id), "%s", sl_cli_jstr(job, "display_id"));
    else if (sl_cli_jint(job, "id", &v))
        snprintf(id, sizeof(id), "%lld", (long long)v);
    if (sl_cli_jint(job, "exit_code", &v))
        snprintf(exit_code, sizeof(exit_code), "%lld", (long long)v);
    sl_cli_job_gpus(job, gpus, sizeof(gpus));
    if (fmt == SL_CLI_OUT_CSV) {
        const char *cells[] = {
            id,
            sl_cli_jstr(job, "name"),
            sl_cli_jstr(job, "team"),
            sl_cli_jstr(job, "project"),
            sl_cli_jstr(job, "user"),
            sl_cli_jstr(job, "queue"),
            sl_cli_jstr(job, "priority_class"),
            sl_cli_jstr(job, "state"),
            gpus,
            sl_cli_jstr(job, "submitted_at"),
            sl_cli_jstr(job, "started_at"),
            sl_cli_jstr(job, "finished_at"),
            exit_code,
            reason,
            sl_cli_jstr(job, "message"),
        };
        return sl_cli_table_add(t, cells);
    }
    /* A finished job has no pending reason; its last message says why it
     * ended (e.g. "exceeded maxRuntime 2s"); an idle one, since when. */
    if (!reason && sl_cli_state_finished(sl_cli_jstr(job, "state")))
        reason = sl_cli_jstr(job, "message");
    if (!reason)
        reason = sl_cli_job_idle_text(job, now_ms, idle, sizeof(idle));
    sl_cli_job_time(job, now_ms, time_s, sizeof(time_s));
    {
        const char *cells[] = {
            id,
            sl_cli_jstr(job, "name"),
            sl_cli_jstr(job, "team"),
            sl_cli_jstr(job, "queue"),
            sl_cli_job_state_cell(job, state, sizeof(state)),
            gpus,
            time_s,
            exit_code[0] ? exit_code : NULL,
            reason,
        };
        return sl_cli_table_add(t, cells);
    }
}

/* ---- `why` and `queues`: amounts and blockers in words ---------------- */

bool sl_cli_jmilli(const json_t *obj, const char *key, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    double d;

    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < -9000000000000LL || i > 9000000000000LL)
            return false;
        *out = (int64_t)i * 1000;
        return true;
    }
    if (!json_is_real(v))
        return false;
    d = json_real_value(v) * 1000;
    /* The API sends decimals of at most three places through a binary
     * double (0.2 arrives as 0.20000000000000001): round to the nearest. */
    if (!(d >= -9.0e15 && d <= 9.0e15))
        return false;
    *out = (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
    return true;
}

bool sl_cli_jbytes(const json_t *obj, const char *key, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    double d;

    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    if (!json_is_real(v))
        return false;
    d = json_real_value(v);
    if (!(d >= -9.0e18 && d <= 9.0e18))
        return false;
    *out = (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
    return true;
}

/* What a resource name of the API is: "gpu", "cpu", "memory", "gpu[A100]". */
enum res_kind { RES_GPU, RES_CPU, RES_MEM, RES_MODEL, RES_OTHER };

static enum res_kind res_kind(const char *res, const char **model,
                              size_t *model_len)
{
    size_t n = res ? strlen(res) : 0;

    if (!res)
        return RES_OTHER;
    if (strcmp(res, "gpu") == 0 || strcmp(res, "gpus") == 0)
        return RES_GPU;
    if (strcmp(res, "cpu") == 0 || strcmp(res, "cpus") == 0)
        return RES_CPU;
    if (strcmp(res, "memory") == 0)
        return RES_MEM;
    if (n > 5 && strncmp(res, "gpu[", 4) == 0 && res[n - 1] == ']') {
        *model = res + 4;
        *model_len = n - 5;
        return RES_MODEL;
    }
    return RES_OTHER;
}

/* An amount member of a blocker as a bare number: "2", "0.5", "16.0Gi".
 * *value_out (may be NULL) gets it in milli-units (bytes for memory), for
 * comparisons. False when absent or not a number. */
static bool res_amount(const json_t *obj, const char *key, enum res_kind k,
                       char *buf, size_t size, int64_t *value_out)
{
    int64_t v;

    if (k == RES_MEM) {
        if (!sl_cli_jbytes(obj, key, &v))
            return false;
        sl_cli_fmt_bytes(v, buf, size);
    } else {
        if (!sl_cli_jmilli(obj, key, &v))
            return false;
        sl_cli_fmt_milli(v, buf, size);
    }
    if (value_out)
        *value_out = v;
    return true;
}

/* The unit words after an amount of 'value': " GPUs", " GPU of model A100",
 * " CPUs", " of memory", " <resource>". */
static void res_unit(enum res_kind k, const char *res, const char *model,
                     size_t model_len, int64_t value, char *buf, size_t size)
{
    const char *s = value == 1000 ? "" : "s";

    switch (k) {
    case RES_GPU:
        snprintf(buf, size, " GPU%s", s);
        break;
    case RES_CPU:
        snprintf(buf, size, " CPU%s", s);
        break;
    case RES_MEM:
        snprintf(buf, size, " of memory");
        break;
    case RES_MODEL:
        snprintf(buf, size, " GPU%s of model %.*s", s, (int)model_len, model);
        break;
    default:
        snprintf(buf, size, " %s", res ? res : "");
        break;
    }
}

/* Append to buf at *o; output past the end is dropped. */
static void app(char *buf, size_t size, size_t *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void app(char *buf, size_t size, size_t *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*o + 1 >= size)
        return;
    va_start(ap, fmt);
    n = vsnprintf(buf + *o, size - *o, fmt, ap);
    va_end(ap);
    if (n > 0)
        *o = (size_t)n >= size - *o ? size - 1 : *o + (size_t)n;
}

/* quota, cohort, user_limit, model_quota: "queue research holds 16 of 16
 * GPUs; this job needs 2, over the limit by 2": the job's own request,
 * and by how much the total would pass the limit (what must be released:
 * the same number as the server's "would run if"). */
static void quota_words(const json_t *b, const char *kind, char *buf,
                        size_t size, size_t *o)
{
    const char *res = sl_cli_jstr(b, "resource"), *model = NULL;
    const char *queue = sl_cli_jstr(b, "queue");
    size_t model_len = 0;
    enum res_kind k = res_kind(res, &model, &model_len);
    char used[32], limit[32], shortby[32], need[32], unit[96];
    int64_t u = 0, l = 0, w = 0, s = 0;
    bool has_u = res_amount(b, "used", k, used, sizeof(used), &u);
    bool has_l = res_amount(b, "limit", k, limit, sizeof(limit), &l);
    bool has_w = res_amount(b, "would_use", k, need, sizeof(need), &w);
    bool has_s = res_amount(b, "short", k, shortby, sizeof(shortby), &s);

    res_unit(k, res, model, model_len, has_l ? l : s, unit, sizeof(unit));
    if (strcmp(kind, "cohort") == 0)
        app(buf, size, o, "the queues of cohort %s hold",
            sl_cli_jstr(b, "cohort") ? sl_cli_jstr(b, "cohort") : "?");
    else if (strcmp(kind, "user_limit") == 0)
        app(buf, size, o, "%s holds",
            sl_cli_jstr(b, "user") ? sl_cli_jstr(b, "user") : "the user");
    else
        app(buf, size, o, "queue %s holds", queue ? queue : "?");
    if (has_u && has_l)
        app(buf, size, o, " %s of %s%s", used, limit, unit);
    else if (has_l)
        app(buf, size, o, " its limit of %s%s", limit, unit);
    if (strcmp(kind, "user_limit") == 0 && queue)
        app(buf, size, o, " in queue %s", queue);
    if (has_u && has_w && w > u) {
        /* What the job adds; when part of the limit is still free, also
         * by how much it is over. */
        int64_t add = w - u;
        if (k == RES_MEM)
            sl_cli_fmt_bytes(add, need, sizeof(need));
        else
            sl_cli_fmt_milli(add, need, sizeof(need));
        app(buf, size, o, "; this job needs %s", need);
        if (has_s && s > 0)
            app(buf, size, o, ", over the limit by %s", shortby);
    } else if (has_s) {
        app(buf, size, o, "; this job is %s%s short", shortby, unit);
    }
}

/* " (n3 draining: disk swap; n2 down)": the nodes that take no task. */
static void unschedulable_words(const json_t *list, char *buf, size_t size, size_t *o)
{
    const json_t *n;
    size_t i;

    json_array_foreach (list, i, n) {
        const char *node = sl_cli_jstr(n, "node"), *why = sl_cli_jstr(n, "why");
        if (!node)
            continue;
        app(buf, size, o, "%s%s%s%s", i ? "; " : " (", node, why ? " " : "", why ? why : "");
    }
    if (json_array_size(list) > 0)
        app(buf, size, o, ")");
}

/* nodes, gang: "0 of 1 tasks fit; of 4 nodes, 3 lack free GPUs, 1 has the
 * wrong GPU model". */
static void nodes_words(const json_t *b, const char *kind, char *buf,
                        size_t size, size_t *o)
{
    /* Reasons in the order people look for them: key, one, many. */
    static const struct {
        const char *key, *one, *many;
    } reasons[] = {
        {"gpus", "lacks free GPUs", "lack free GPUs"},
        {"gpu_model", "has the wrong GPU model", "have the wrong GPU model"},
        {"cpu", "lacks free CPUs", "lack free CPUs"},
        {"memory", "lacks free memory", "lack free memory"},
        {"unschedulable", "is unschedulable", "are unschedulable"},
    };
    const json_t *rej = json_object_get(b, "nodes_rejected");
    const char *topo = sl_cli_jstr(b, "topology");
    int64_t tasks = 0, fit = 0, nodes = 0, total = 0;
    bool first = true;

    sl_cli_jint(b, "tasks", &tasks);
    sl_cli_jint(b, "tasks_fit", &fit);
    app(buf, size, o, "%lld of %lld tasks fit", (long long)fit,
        (long long)tasks);
    if (strcmp(kind, "gang") == 0)
        app(buf, size, o, " (all %lld start together or none)",
            (long long)tasks);
    for (size_t i = 0; i < SL_ARRAY_LEN(reasons); i++) {
        int64_t n = 0;
        if (sl_cli_jint(rej, reasons[i].key, &n) && n > 0)
            total += n;
    }
    if (total > 0) {
        if (sl_cli_jint(b, "nodes", &nodes) && nodes > 0)
            app(buf, size, o, "; of %lld node%s, ", (long long)nodes,
                nodes == 1 ? "" : "s");
        else
            app(buf, size, o, "; ");
        for (size_t i = 0; i < SL_ARRAY_LEN(reasons); i++) {
            int64_t n = 0;
            if (!sl_cli_jint(rej, reasons[i].key, &n) || n <= 0)
                continue;
            app(buf, size, o, "%s%lld %s", first ? "" : ", ", (long long)n,
                n == 1 ? reasons[i].one : reasons[i].many);
            first = false;
        }
    }
    unschedulable_words(json_object_get(b, "unschedulable_nodes"), buf, size, o);
    if (topo && strcmp(topo, "any") != 0)
        app(buf, size, o, "; topology %s", topo);
}

char *sl_cli_why_blocker(const json_t *b, bool label, char *buf, size_t size)
{
    const char *kind = sl_cli_jstr(b, "kind");
    size_t o = 0;

    if (!size)
        return buf;
    buf[0] = '\0';
    if (!kind)
        kind = "unknown";
    if (strcmp(kind, "quota") == 0 || strcmp(kind, "cohort") == 0 ||
        strcmp(kind, "user_limit") == 0 || strcmp(kind, "model_quota") == 0) {
        if (label)
            app(buf, size, &o, "%s: ",
                strcmp(kind, "user_limit") == 0    ? "user limit"
                : strcmp(kind, "model_quota") == 0 ? "model quota"
                                                   : kind);
        quota_words(b, kind, buf, size, &o);
    } else if (strcmp(kind, "nodes") == 0 || strcmp(kind, "gang") == 0) {
        if (label)
            app(buf, size, &o, "%s: ", kind);
        nodes_words(b, kind, buf, size, &o);
    } else if (strcmp(kind, "backoff") == 0) {
        const char *until = sl_cli_jstr(b, "until");
        app(buf, size, &o, "%s%s%s (a retry waits after a failure)",
            label ? "backoff " : "", until ? "until " : "a retry delay",
            until ? until : "");
    } else if (strcmp(kind, "preempting") == 0) {
        const json_t *victims = json_object_get(b, "victims"), *v;
        size_t i, n = json_array_size(victims);
        if (label)
            app(buf, size, &o, "preempting: ");
        if (n == 0) {
            app(buf, size, &o, "waiting for the jobs it preempted to stop");
            return buf;
        }
        app(buf, size, &o, "waiting for job%s ", n == 1 ? "" : "s");
        json_array_foreach (victims, i, v)
            app(buf, size, &o, "%s%lld", i ? ", " : "",
                json_is_integer(v) ? (long long)json_integer_value(v) : 0LL);
        app(buf, size, &o, " to stop");
    } else if (strcmp(kind, "cannot_run") == 0) {
        /* the detail says "cannot run: ..." itself */
        const char *detail = sl_cli_jstr(b, "detail");
        app(buf, size, &o, "%s", detail ? detail : "cannot run");
        unschedulable_words(json_object_get(b, "unschedulable_nodes"), buf, size, &o);
    } else {
        /* reservation, and kinds this client does not know yet. */
        const char *detail = sl_cli_jstr(b, "detail");
        app(buf, size, &o, "%s%s%s", label ? kind : "",
            label && detail ? ": " : "", detail ? detail : "");
    }
    return buf;
}

char *sl_cli_queue_gpus(const json_t *queue, char *buf, size_t size)
{
    const json_t *used = json_object_get(queue, "used");
    const json_t *nominal = json_object_get(queue, "nominal");
    char u[32] = "0", n[32] = "-";
    int64_t v;

    if (sl_cli_jmilli(used, "gpus", &v))
        sl_cli_fmt_milli(v, u, sizeof(u));
    if (sl_cli_jmilli(nominal, "gpus", &v))
        sl_cli_fmt_milli(v, n, sizeof(n));
    snprintf(buf, size, "%s/%s", u, n);
    return buf;
}
