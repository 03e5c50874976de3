/*
 * args.c - option parsing and argument values for `sluice`.
 *
 * Pure apart from sl_cli_read_input and -o yaml (which switches
 * sl_cli_print_json to YAML): no network. Global options (--server,
 * --token, -o, --watch, --interval) are accepted before and after the
 * command name,
 * so every command parses them through sl_cli_next. Errors are usage errors
 * whose text names the option and the value.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The global options; ids are negative so they never meet a command's. */
enum {
    G_SERVER = -1,
    G_TOKEN = -2,
    G_OUTPUT = -3,
    G_HELP = -4,
    G_VERSION = -5,
    G_WATCH = -6,
    G_INTERVAL = -7,
    G_CA_CERT = -8,
    G_INSECURE = -9,
    G_CERT = -10,
    G_KEY = -11
};

/* clang-format off */
static const struct sl_cli_opt global_opts[] = {
    /* long name, short, takes a value, id */
    {"server", '\0', true, G_SERVER},
    {"token", '\0', true, G_TOKEN},
    {"output", 'o', true, G_OUTPUT},
    {"help", 'h', false, G_HELP},
    {"version", '\0', false, G_VERSION},
    {"watch", 'w', false, G_WATCH},
    {"interval", '\0', true, G_INTERVAL},
    {"ca-cert", '\0', true, G_CA_CERT},
    {"insecure", '\0', false, G_INSECURE},
    {"cert", '\0', true, G_CERT},
    {"key", '\0', true, G_KEY},
    {NULL, '\0', false, 0},
};
/* clang-format on */

/* Output formats accepted by -o: the format the commands see, and
 * whether it is the wide table or YAML (printed where they print JSON). */
static const struct {
    const char *name;
    enum sl_cli_output fmt;
    bool wide, yaml;
} output_names[] = {
    {"table", SL_CLI_OUT_TABLE, false, false},
    {"wide", SL_CLI_OUT_TABLE, true, false},
    {"json", SL_CLI_OUT_JSON, false, false},
    {"yaml", SL_CLI_OUT_JSON, false, true},
    {"csv", SL_CLI_OUT_CSV, false, false},
};

/* The commands --watch runs again and again. */
static const char *const watchable[] = {"jobs", "nodes", "queues"};

#define WATCH_MIN_MS 100
#define WATCH_MAX_MS 3600000

/* Job states, in the contract's spelling; 'finished' = will not change. */
static const struct {
    const char *name;
    bool finished;
} job_states[] = {
    {"Pending", false}, {"Running", false},  {"Succeeded", true},
    {"Failed", true},   {"Cancelled", true}, {"Preempted", false},
    {"Lost", true},     {"Timeout", true},
};

void sl_cli_parser_init(struct sl_cli_parser *p, int argc, char **argv,
                        int first, bool stop_at_pos)
{
    memset(p, 0, sizeof(*p));
    p->argc = argc;
    p->argv = argv;
    p->i = first;
    p->stop_at_pos = stop_at_pos;
}

static const struct sl_cli_opt *find_long(const struct sl_cli_opt *opts,
                                          const char *name, size_t len)
{
    for (const struct sl_cli_opt *o = opts; o && o->id; o++)
        if (o->name && strlen(o->name) == len &&
            strncmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

static const struct sl_cli_opt *find_short(const struct sl_cli_opt *opts,
                                           char c)
{
    for (const struct sl_cli_opt *o = opts; o && o->id; o++)
        if (o->short_name && o->short_name == c)
            return o;
    return NULL;
}

bool sl_cli_watchable(const char *cmd)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(watchable); i++)
        if (strcmp(cmd, watchable[i]) == 0)
            return true;
    return false;
}

static int apply_global(const struct sl_cli_opt *o, const char *val,
                        struct sl_cli_ctx *ctx, struct sl_error *err)
{
    switch (o->id) {
    case G_SERVER:
        if (strncmp(val, "http://", 7) != 0 && strncmp(val, "https://", 8) != 0)
            return sl_errorf(err, SL_CLI_ARG_ERROR,
                             "--server: must be an http:// or https:// URL, got '%.64s'",
                             val);
        ctx->server = val;
        return 0;
    case G_CA_CERT:
        ctx->ca_cert = val;
        return 0;
    case G_INSECURE:
        ctx->insecure = true;
        return 0;
    case G_CERT:
        ctx->cert = val;
        return 0;
    case G_KEY:
        ctx->key = val;
        return 0;
    case G_TOKEN:
        ctx->token = val;
        return 0;
    case G_OUTPUT:
        for (size_t i = 0; i < SL_ARRAY_LEN(output_names); i++)
            if (strcmp(val, output_names[i].name) == 0) {
                ctx->output = output_names[i].fmt;
                ctx->wide = output_names[i].wide;
                sl_cli_set_yaml(output_names[i].yaml);
                return 0;
            }
        return sl_errorf(err, SL_CLI_ARG_ERROR,
                         "-o: must be table, wide, json, yaml or csv, got '%.64s'", val);
    case G_WATCH:
        /* before the command's name, main.c checks it */
        if (ctx->cmd && !sl_cli_watchable(ctx->cmd->name))
            return sl_errorf(err, SL_CLI_ARG_ERROR,
                             "--watch: only for jobs, nodes and queues, not %s",
                             ctx->cmd->name);
        ctx->watch = true;
        return 0;
    case G_INTERVAL: {
        int64_t ms;
        if (ctx->cmd && !sl_cli_watchable(ctx->cmd->name))
            return sl_errorf(err, SL_CLI_ARG_ERROR,
                             "--interval: only for jobs, nodes and queues, not %s",
                             ctx->cmd->name);
        if (sl_parse_duration_ms(val, &ms) < 0 || ms < WATCH_MIN_MS || ms > WATCH_MAX_MS)
            return sl_errorf(err, SL_CLI_ARG_ERROR,
                             "--interval: must be a duration from 100ms to 1h, got '%.64s'",
                             val);
        ctx->interval_ms = ms;
        ctx->watch = true; /* --interval says --watch */
        return 0;
    }
    case G_HELP:
        return SL_CLI_ARG_HELP;
    case G_VERSION:
        return SL_CLI_ARG_VERSION;
    }
    return sl_errorf(err, SL_CLI_ARG_ERROR, "internal: unknown global option");
}

int sl_cli_next(struct sl_cli_parser *p, const struct sl_cli_opt *opts,
                struct sl_cli_ctx *ctx, const char **val, struct sl_error *err)
{
    for (;;) {
        const struct sl_cli_opt *o = NULL;
        const char *arg, *inline_val = NULL;
        char shown[72];
        int rc;

        *val = NULL;
        if (p->bundle && *p->bundle) {
            /* "-it" is "-i -t": flags without a value, one after another */
            char c = *p->bundle++;
            if (!(o = find_short(opts, c)))
                o = find_short(global_opts, c);
            if (!o || o->has_arg)
                return sl_errorf(err, SL_CLI_ARG_ERROR,
                                 o ? "-%c: takes a value, so it cannot be bundled"
                                   : "unknown option '-%c'",
                                 c);
            if (o->id > 0)
                return o->id;
            if ((rc = apply_global(o, NULL, ctx, err)) != 0)
                return rc;
            continue;
        }
        if (p->i >= p->argc)
            return SL_CLI_ARG_END;
        arg = p->argv[p->i++];
        if (p->rest) {
            *val = arg;
            return SL_CLI_ARG_POS;
        }
        if (strcmp(arg, "--") == 0) {
            p->rest = true;
            p->dashdash = true;
            continue;
        }
        if (arg[0] != '-' || arg[1] == '\0') { /* "-" is stdin, a value */
            if (p->stop_at_pos)
                p->rest = true;
            *val = arg;
            return SL_CLI_ARG_POS;
        }
        if (arg[1] == '-') {
            const char *name = arg + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            if (!(o = find_long(opts, name, len)))
                o = find_long(global_opts, name, len);
            snprintf(shown, sizeof(shown), "--%.*s", (int)(len > 64 ? 64 : len),
                     name);
            if (eq)
                inline_val = eq + 1;
        } else {
            if (!(o = find_short(opts, arg[1])))
                o = find_short(global_opts, arg[1]);
            snprintf(shown, sizeof(shown), "-%c", arg[1]);
            if (arg[2])
                inline_val = arg + 2;
        }
        if (!o)
            return sl_errorf(
                err, SL_CLI_ARG_ERROR, "unknown option '%.64s'%s%s", arg,
                ctx->cmd ? " for " : "", ctx->cmd ? ctx->cmd->name : "");
        if (o->has_arg) {
            if (inline_val) {
                *val = inline_val;
            } else if (p->i < p->argc && strncmp(p->argv[p->i], "--", 2) != 0) {
                *val = p->argv[p->i++];
            } else if (p->i < p->argc) {
                /* "--name --gpus 1" is a slip, not a name; "--name=--x" is
                 * how to say it on purpose. */
                return sl_errorf(err, SL_CLI_ARG_ERROR,
                                 "%s: needs a value, got option '%.64s'", shown,
                                 p->argv[p->i]);
            } else {
                return sl_errorf(err, SL_CLI_ARG_ERROR, "%s: needs a value",
                                 shown);
            }
        } else if (inline_val && arg[1] != '-') {
            p->bundle = inline_val; /* "-it": -t comes next */
        } else if (inline_val) {
            return sl_errorf(err, SL_CLI_ARG_ERROR, "%s: takes no value",
                             shown);
        }
        if (o->id > 0)
            return o->id;
        rc = apply_global(o, *val, ctx, err);
        if (rc != 0)
            return rc;
    }
}

int sl_cli_int_arg(const char *flag, const char *v, int64_t min, int64_t max,
                   int64_t *out, struct sl_error *err)
{
    int64_t n;

    if (sl_parse_int64(v, min, max, &n) < 0)
        return sl_errorf(
            err, -EINVAL,
            "%s: must be an integer from %lld to %lld, got '%.64s'", flag,
            (long long)min, (long long)max, v);
    *out = n;
    return 0;
}

int sl_cli_job_id(const char *v, int64_t *out, struct sl_error *err)
{
    int64_t n;

    if (sl_parse_int64(v, 1, INT64_MAX, &n) < 0)
        return sl_errorf(
            err, -EINVAL,
            "JOB: must be a job id (a positive integer), got '%.64s'", v);
    *out = n;
    return 0;
}

const char *sl_cli_state_canonical(const char *name, size_t len)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(job_states); i++)
        if (strlen(job_states[i].name) == len &&
            strncasecmp(job_states[i].name, name, len) == 0)
            return job_states[i].name;
    return NULL;
}

bool sl_cli_state_finished(const char *state)
{
    for (size_t i = 0; state && i < SL_ARRAY_LEN(job_states); i++)
        if (strcasecmp(job_states[i].name, state) == 0)
            return job_states[i].finished;
    return false;
}

int sl_cli_states_parse(const char *v, char *out, size_t size,
                        struct sl_error *err)
{
    bool seen[SL_ARRAY_LEN(job_states)] = {false};
    const char *p = v;
    size_t used = 0;

    if (strcasecmp(v, "all") == 0) {
        sl_strlcpy(out, "all", size);
        return 0;
    }
    out[0] = '\0';
    for (;;) {
        size_t len = strcspn(p, ",");
        const char *name = sl_cli_state_canonical(p, len);
        size_t i, n;

        if (!name)
            return sl_errorf(err, -EINVAL,
                             "--state: unknown state '%.*s' (one of Pending, "
                             "Running, Succeeded, Failed, Cancelled, "
                             "Preempted, Lost, or all)",
                             (int)(len > 32 ? 32 : len), p);
        for (i = 0; job_states[i].name != name; i++)
            ;
        if (!seen[i]) {
            seen[i] = true;
            n = (size_t)snprintf(out + used, size - used, "%s%s",
                                 used ? "," : "", name);
            if (n >= size - used)
                return sl_errorf(err, -EINVAL, "--state: too long");
            used += n;
        }
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    return 0;
}

int sl_cli_read_input(const char *path, size_t cap, char **out, size_t *len,
                      struct sl_error *err)
{
    char *buf = NULL;
    size_t used = 0, size = 0;
    int rc = 0;

    if (strcmp(path, "-") != 0) {
        rc = sl_read_file(path, cap, out, len);
        if (rc == -EFBIG)
            return sl_errorf(err, rc,
                             "%.128s: larger than %zu KiB (the "
                             "server's limit)",
                             path, cap >> 10);
        if (rc < 0)
            return sl_errorf(err, rc, "%.128s: %s", path, strerror(-rc));
        return 0;
    }
    for (;;) {
        ssize_t n;
        if (used == size) {
            char *nb;
            size_t want = size ? size * 2 : 65536;
            if (want > cap + 1)
                want = cap + 1; /* one byte more tells "too large" */
            if (!(nb = realloc(buf, want + 1))) {
                rc = sl_errorf(err, -ENOMEM, "standard input: out of memory");
                goto out;
            }
            buf = nb;
            size = want;
        }
        n = read(STDIN_FILENO, buf + used, size - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = sl_errorf(err, -errno, "standard input: %s", strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        used += (size_t)n;
        if (used > cap) {
            rc = sl_errorf(err, -EFBIG,
                           "standard input: larger than %zu KiB "
                           "(the server's limit)",
                           cap >> 10);
            goto out;
        }
    }
    if (!buf && !(buf = malloc(1))) {
        rc = sl_errorf(err, -ENOMEM, "standard input: out of memory");
        goto out;
    }
    buf[used] = '\0';
    *out = buf;
    *len = used;
    buf = NULL;
out:
    free(buf);
    return rc;
}

const char *sl_cli_doc_type(const char *buf, size_t len, bool json_array_ok)
{
    size_t i = 0;

    /* A UTF-8 byte order mark is not content. */
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        i = 3;
    for (; i < len; i++) {
        char ch = buf[i];
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')
            continue;
        if (ch == '{' || (json_array_ok && ch == '['))
            return "application/json";
        return "application/yaml";
    }
    return NULL;
}
