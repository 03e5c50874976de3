/*
 * cmd_gov.c - governance commands: `sluice audit log|export|verify|
 * checkpoint|pubkey`, `sluice lineage REF`, `sluice models ...`,
 * `sluice scan import FILE`. docs/cli.md has their forms.
 */
#include "cli.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../audit/audit.h"

#define EXPORT_PAGE 100000

enum {
    O_ACTOR = 1, O_ACTION, O_OBJECT, O_OUTCOME, O_FROM, O_TO, O_AFTER, O_LIMIT, O_FILE,
    O_CHECKPOINT, O_PUBKEY, O_STAGE, O_COMMENT, O_NAME, O_VERSION, O_DIGEST, O_URI, O_JOB,
    O_TEAM, O_BEFORE, O_METRIC,
};

/* clang-format off */
static const struct sl_cli_opt gov_opts[] = {
    /* long name, short, takes a value, id */
    {"actor", '\0', true, O_ACTOR},
    {"action", '\0', true, O_ACTION},
    {"object", '\0', true, O_OBJECT},
    {"outcome", '\0', true, O_OUTCOME},
    {"from", '\0', true, O_FROM},
    {"to", '\0', true, O_TO},
    {"after", '\0', true, O_AFTER},
    {"limit", 'n', true, O_LIMIT},
    {"before", '\0', true, O_BEFORE},
    {"file", 'f', true, O_FILE},
    {"checkpoint", '\0', true, O_CHECKPOINT},
    {"pubkey", '\0', true, O_PUBKEY},
    {"stage", '\0', true, O_STAGE},
    {"comment", '\0', true, O_COMMENT},
    {"name", '\0', true, O_NAME},
    {"version", '\0', true, O_VERSION},
    {"digest", '\0', true, O_DIGEST},
    {"uri", '\0', true, O_URI},
    {"job", '\0', true, O_JOB},
    {"team", '\0', true, O_TEAM},
    {"metric", '\0', true, O_METRIC},
    {NULL, '\0', false, 0},
};
/* clang-format on */

struct gov_args {
    const char *pos[3];
    int npos;
    const char *opt[O_METRIC + 1];
    json_t *metrics;              /* --metric K=V, repeated */
};

static int gov_parse(struct sl_cli_ctx *ctx, int argc, char **argv, struct gov_args *a)
{
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    const char *v;
    int id, code;

    memset(a, 0, sizeof(*a));
    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((id = sl_cli_next(&p, gov_opts, ctx, &v, &err)) != SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, id, &err)))
            return code;
        if (id == SL_CLI_ARG_POS) {
            if (a->npos == 3) {
                sl_cli_errorf("%s: unexpected argument '%.64s'", ctx->cmd->name, v);
                return SL_CLI_USAGE;
            }
            a->pos[a->npos++] = v;
        } else if (id == O_METRIC) {
            const char *eq = strchr(v, '=');
            char key[65], *end;
            double d;
            if (!eq || eq == v || (size_t)(eq - v) >= sizeof(key)) {
                sl_cli_errorf("--metric: NAME=VALUE, got '%.64s'", v);
                return SL_CLI_USAGE;
            }
            memcpy(key, v, (size_t)(eq - v));
            key[eq - v] = '\0';
            if (!a->metrics && !(a->metrics = json_object()))
                return SL_CLI_FAILED;
            d = strtod(eq + 1, &end);
            json_object_set_new(a->metrics, key,
                                *eq && end != eq + 1 && !*end ? json_real(d)
                                                              : json_string(eq + 1));
        } else {
            a->opt[id] = v;
        }
    }
    return SL_CLI_OK;
}

/* Append "&key=escaped" to a query. */
static int query_add(char *q, size_t size, const char *key, const char *val)
{
    char *esc;
    size_t n = strlen(q);

    if (!val)
        return 0;
    if (!(esc = sl_client_escape(val)))
        return -ENOMEM;
    snprintf(q + n, size - n, "%s%s=%s", n ? "&" : "?", key, esc);
    free(esc);
    return strlen(q) + 1 >= size ? -E2BIG : 0;
}

#define SUMMARY_MAX 72

/* The details of a record in at most SUMMARY_MAX characters on one line:
 * its scalar fields as key=value (strings with their control characters
 * shown as '?'), objects and arrays as key={...} and key=[N]; "..." when
 * cut. -o json has them all. */
static void record_summary(const json_t *details, char *out, size_t size)
{
    const char *key;
    json_t *v;
    size_t n = 0;

    out[0] = '\0';
    json_object_foreach((json_t *)details, key, v) {
        char val[SUMMARY_MAX + 1];
        if (json_is_string(v))
            snprintf(val, sizeof(val), "%s", json_string_value(v));
        else if (json_is_object(v))
            snprintf(val, sizeof(val), "{...}");
        else if (json_is_array(v))
            snprintf(val, sizeof(val), "[%zu]", json_array_size(v));
        else
            sl_csv_number(v, val, sizeof(val));
        for (char *p = val; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = '?';
        n += (size_t)snprintf(out + n, n < size ? size - n : 0, "%s%s=%s", n ? " " : "", key,
                              val);
        if (n >= SUMMARY_MAX)
            break;
    }
    if (n > SUMMARY_MAX && size > SUMMARY_MAX + 1)
        snprintf(out + SUMMARY_MAX - 3, size - (SUMMARY_MAX - 3), "...");
}

static void print_record(const json_t *r)
{
    char summary[SUMMARY_MAX * 2 + 64];

    record_summary(json_object_get(r, "details"), summary, sizeof(summary));
    printf("%-6lld %-24s %-16s %-16s %-24s %-8s %s\n",
           (long long)json_integer_value(json_object_get(r, "seq")), sl_cli_jstr(r, "time"),
           sl_cli_jstr(r, "actor"), sl_cli_jstr(r, "action"), sl_cli_jstr(r, "object"),
           sl_cli_jstr(r, "outcome"), summary);
}

static int audit_log(struct sl_cli_ctx *ctx, const struct gov_args *a)
{
    static const struct { int id; const char *key; } keys[] = {
        {O_ACTOR, "actor"}, {O_ACTION, "action"}, {O_OBJECT, "object"},
        {O_OUTCOME, "outcome"}, {O_FROM, "from"}, {O_TO, "to"}, {O_AFTER, "after"},
        {O_LIMIT, "limit"}, {O_BEFORE, "before"},
    };
    char path[SL_CLI_PATH_MAX] = "", q[SL_CLI_PATH_MAX - 16] = "";
    json_t *ans = NULL, *recs, *r;
    size_t i;
    int code;

    for (i = 0; i < SL_ARRAY_LEN(keys); i++)
        if (query_add(q, sizeof(q), keys[i].key, a->opt[keys[i].id]) < 0) {
            sl_cli_errorf("audit log: the filters are too long");
            return SL_CLI_USAGE;
        }
    if (a->opt[O_AFTER] && a->opt[O_BEFORE]) {
        sl_cli_errorf("audit log: --after (oldest first) or --before (newest first), not both");
        return SL_CLI_USAGE;
    }
    /* newest first, unless paging forward from --after */
    snprintf(path, sizeof(path), "/v1/audit%s%sorder=%s", q, *q ? "&" : "?",
             a->opt[O_AFTER] ? "asc" : "desc");
    if ((code = sl_cli_call_json(ctx, "GET", path, NULL, NULL, 0, NULL, &ans)) != SL_CLI_OK)
        return code;
    if (ctx->output == SL_CLI_OUT_JSON) {
        code = sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
    } else {
        recs = json_object_get(ans, "records");
        printf("%-6s %-24s %-16s %-16s %-24s %-8s %s\n", "SEQ", "TIME", "ACTOR", "ACTION",
               "OBJECT", "OUTCOME", "DETAILS");
        json_array_foreach(recs, i, r) print_record(r);
        if (json_is_integer(json_object_get(ans, "next")))
            fprintf(stderr, "(more: --%s %lld)\n", a->opt[O_AFTER] ? "after" : "before",
                    (long long)json_integer_value(json_object_get(ans, "next")));
    }
    json_decref(ans);
    return code;
}

/* The whole log, page by page, exactly as stored: JSON lines. */
static int audit_export(struct sl_cli_ctx *ctx, const struct gov_args *a)
{
    FILE *out = stdout;
    int64_t after = 0;
    int code = SL_CLI_OK;

    if (a->opt[O_FILE] && strcmp(a->opt[O_FILE], "-") != 0 &&
        !(out = fopen(a->opt[O_FILE], "w"))) {
        sl_cli_errorf("%.200s: %s", a->opt[O_FILE], strerror(errno));
        return SL_CLI_USAGE;
    }
    for (;;) {
        struct sl_response resp;
        char path[128];
        int64_t lines = 0;
        snprintf(path, sizeof(path), "/v1/audit/export?after=%lld&limit=%d", (long long)after,
                 EXPORT_PAGE);
        if ((code = sl_cli_request(ctx, "GET", path, NULL, NULL, 0, NULL, &resp)) != SL_CLI_OK)
            break;
        for (size_t i = 0; i < resp.len; i++)
            lines += resp.body[i] == '\n';
        if (resp.len && fwrite(resp.body, 1, resp.len, out) != resp.len) {
            sl_cli_errorf("write: %s", strerror(errno));
            code = SL_CLI_FAILED;
        }
        if (lines == EXPORT_PAGE && code == SL_CLI_OK) {
            /* the next page starts after the last line's seq: {"seq":N,... */
            size_t i = resp.len - 1;
            while (i > 0 && resp.body[i - 1] != '\n')
                i--;
            after = strncmp(resp.body + i, "{\"seq\":", 7) == 0
                        ? strtoll(resp.body + i + 7, NULL, 10)
                        : 0;
        }
        sl_response_fini(&resp);
        if (code != SL_CLI_OK || lines < EXPORT_PAGE || after <= 0)
            break;
    }
    if (out != stdout && fclose(out) != 0 && code == SL_CLI_OK) {
        sl_cli_errorf("%.200s: %s", a->opt[O_FILE], strerror(errno));
        code = SL_CLI_FAILED;
    }
    return code;
}

static int read_text(const char *file, char **text, size_t *len)
{
    int rc = sl_read_file(strcmp(file, "-") == 0 ? "/dev/stdin" : file, 64 << 20, text, len);
    if (rc < 0)
        sl_cli_errorf("%.200s: %s", file, rc == -EFBIG ? "too large" : strerror(-rc));
    return rc;
}

/* Offline: an export, and optionally a checkpoint with the key it must be
 * signed by. */
static int audit_verify_file(const struct gov_args *a)
{
    struct sl_audit_verifier v;
    struct sl_audit_head ck;
    struct sl_error err = {{0}, {0}};
    char *text = NULL, *ckt = NULL, *key = NULL, hex[65];
    size_t len = 0, cklen = 0, klen = 0;
    int64_t at = 0;
    bool ok;

    if (!!a->opt[O_CHECKPOINT] != !!a->opt[O_PUBKEY]) {
        sl_cli_errorf("audit verify: --checkpoint and --pubkey go together");
        return SL_CLI_USAGE;
    }
    if (read_text(a->opt[O_FILE], &text, &len) < 0)
        return SL_CLI_USAGE;
    if (a->opt[O_CHECKPOINT]) {
        if (read_text(a->opt[O_CHECKPOINT], &ckt, &cklen) < 0 ||
            read_text(a->opt[O_PUBKEY], &key, &klen) < 0) {
            free(text);
            free(ckt);
            return SL_CLI_USAGE;
        }
        while (klen && (key[klen - 1] == '\n' || key[klen - 1] == '\r'))
            key[--klen] = '\0';
        if (sl_audit_checkpoint_verify(ckt, cklen, key, &ck, &at, &err) < 0) {
            sl_cli_errorf("checkpoint %.200s: %s", a->opt[O_CHECKPOINT], err.text);
            free(text);
            free(ckt);
            free(key);
            return SL_CLI_FAILED;
        }
    }
    sl_audit_verifier_init(&v, ckt ? &ck : NULL);
    sl_audit_verifier_feed(&v, text, len);
    ok = sl_audit_verifier_finish(&v) == 0;
    sodium_bin2hex(hex, sizeof(hex), v.head.hash, 32);
    if (ok) {
        printf("ok: %lld records, head %s", (long long)v.head.size, hex);
        if (ckt)
            printf("; the signed checkpoint of %lld records matches", (long long)ck.size);
        else
            printf("; the chain is consistent (without a checkpoint a cut tail cannot be "
                   "told)");
        printf("\n");
    } else {
        sl_cli_errorf("audit log does not verify: %s (line %lld)", v.why, (long long)v.bad_line);
    }
    sl_audit_verifier_fini(&v);
    free(text);
    free(ckt);
    free(key);
    return ok ? SL_CLI_OK : SL_CLI_FAILED;
}

static int audit_verify_live(struct sl_cli_ctx *ctx)
{
    json_t *ans = NULL, *e;
    int code = sl_cli_call_json(ctx, "GET", "/v1/audit/verify", NULL, NULL, 0, NULL, &ans);

    if (code != SL_CLI_OK)
        return code;
    if (ctx->output == SL_CLI_OUT_JSON)
        sl_cli_print_json(ans);
    if (json_is_true(json_object_get(ans, "ok"))) {
        if (ctx->output != SL_CLI_OUT_JSON)
            printf("ok: %lld records, head %s\n",
                   (long long)json_integer_value(json_object_get(ans, "records")),
                   sl_cli_jstr(ans, "head"));
    } else {
        e = json_object_get(ans, "error");
        sl_cli_errorf("audit log does not verify: %s",
                      e ? sl_cli_jstr(e, "message") : sl_cli_jstr(ans, "error"));
        code = SL_CLI_FAILED;
    }
    json_decref(ans);
    return code;
}

static int get_text(struct sl_cli_ctx *ctx, const char *path)
{
    struct sl_response resp;
    int code = sl_cli_request(ctx, "GET", path, NULL, NULL, 0, NULL, &resp);

    if (code != SL_CLI_OK)
        return code;
    if (resp.len && fwrite(resp.body, 1, resp.len, stdout) != resp.len)
        code = SL_CLI_FAILED;
    sl_response_fini(&resp);
    return code;
}

int sl_cli_cmd_audit(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct gov_args a;
    int code = gov_parse(ctx, argc, argv, &a);
    const char *sub = a.npos ? a.pos[0] : NULL;

    if (code != SL_CLI_OK)
        return code == SL_CLI_DONE ? SL_CLI_OK : code;
    json_decref(a.metrics);
    if (!sub)
        code = -1;
    else if (strcmp(sub, "log") == 0)
        return audit_log(ctx, &a);
    else if (strcmp(sub, "export") == 0)
        return audit_export(ctx, &a);
    else if (strcmp(sub, "verify") == 0)
        return a.opt[O_FILE] ? audit_verify_file(&a) : audit_verify_live(ctx);
    else if (strcmp(sub, "checkpoint") == 0)
        return get_text(ctx, "/v1/audit/checkpoint");
    else if (strcmp(sub, "pubkey") == 0)
        return get_text(ctx, "/v1/audit/pubkey");
    sl_cli_errorf("audit: %s%.64s%s (log, export, verify, checkpoint or pubkey)",
                  sub ? "unknown subcommand '" : "missing subcommand", sub ? sub : "",
                  sub ? "'" : "");
    return SL_CLI_USAGE;
}

/* ---- lineage -------------------------------------------------------------- */

int sl_cli_cmd_lineage(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[1];
    int npos = 0, code = sl_cli_parse_simple(ctx, argc, argv, pos, 1, &npos);
    char path[SL_CLI_PATH_MAX], *esc;
    json_t *ans = NULL, *m, *j, *u, *d;
    size_t i;

    if (code != SL_CLI_OK)
        return code == SL_CLI_DONE ? SL_CLI_OK : code;
    if (npos != 1) {
        sl_cli_errorf("usage: sluice lineage model:NAME@VERSION | job:ID");
        return SL_CLI_USAGE;
    }
    if (!(esc = sl_client_escape(pos[0])))
        return SL_CLI_FAILED;
    snprintf(path, sizeof(path), "/v1/lineage/%s", esc);
    free(esc);
    if ((code = sl_cli_call_json(ctx, "GET", path, NULL, NULL, 0, pos[0], &ans)) != SL_CLI_OK)
        return code;
    if (ctx->output == SL_CLI_OUT_JSON) {
        code = sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        json_decref(ans);
        return code;
    }
    m = json_object_get(ans, "model");
    j = json_object_get(ans, "job");
    if (json_is_object(m))
        printf("model %s@%s  stage %s  digest %s\n  uri %s  registered by %s at %s\n",
               sl_cli_jstr(m, "name"), sl_cli_jstr(m, "version"), sl_cli_jstr(m, "stage"),
               sl_cli_jstr(m, "digest"), sl_cli_jstr(m, "uri"), sl_cli_jstr(m, "registered_by"),
               sl_cli_jstr(m, "registered_at"));
    if (json_is_object(j)) {
        u = json_object_get(j, "usage");
        printf("%s job %lld %s  user %s  team %s  queue %s  %s\n", json_is_object(m) ? "<-" : "",
               (long long)json_integer_value(json_object_get(j, "id")), sl_cli_jstr(j, "name"),
               sl_cli_jstr(j, "user"), sl_cli_jstr(j, "team"), sl_cli_jstr(j, "queue"),
               sl_cli_jstr(j, "state"));
        printf("   %.4f GPU-hours  %.4f CU  %.6f kWh (%s)  %.4f %s  %.4f kg CO2e\n",
               json_number_value(json_object_get(u, "gpu_hours")),
               json_number_value(json_object_get(u, "cu")),
               json_number_value(json_object_get(u, "energy_kwh")),
               json_is_true(json_object_get(u, "energy_measured")) ? "measured" : "estimated",
               json_number_value(json_object_get(u, "cost")), sl_cli_jstr(u, "currency"),
               json_number_value(json_object_get(u, "co2_kg")));
        d = json_object_get(j, "image");
        printf("<- image %s%s%s\n", json_is_object(d) ? sl_cli_jstr(d, "ref") : "(none)",
               json_is_object(d) && json_object_get(d, "digest") ? "  digest " : "",
               json_is_object(d) && json_object_get(d, "digest") ? sl_cli_jstr(d, "digest") : "");
        d = json_object_get(j, "code");
        if (json_is_object(d))
            printf("<- code %s @ %s\n", sl_cli_jstr(d, "repo"), sl_cli_jstr(d, "commit"));
        else
            printf("<- code (not recorded)\n");
        json_array_foreach(json_object_get(j, "datasets"), i, d)
            printf("<- dataset %s@%s (%s)%s%s\n", sl_cli_jstr(d, "name"),
                   sl_cli_jstr(d, "version"), sl_cli_jstr(d, "mode"),
                   *sl_cli_jstr(d, "digest") ? "  digest " : "", sl_cli_jstr(d, "digest"));
    } else if (json_is_object(m)) {
        printf("<- (registered without a job)\n");
    }
    json_decref(ans);
    return SL_CLI_OK;
}

/* ---- models ----------------------------------------------------------------- */

int sl_cli_cmd_models(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct gov_args a;
    int code = gov_parse(ctx, argc, argv, &a);
    const char *sub = a.npos ? a.pos[0] : NULL;
    json_t *req = NULL, *ans = NULL, *m;
    char path[SL_CLI_PATH_MAX], *body = NULL, *esc = NULL;
    size_t i;

    if (code != SL_CLI_OK)
        return code == SL_CLI_DONE ? SL_CLI_OK : code;
    if (sub && strcmp(sub, "register") == 0) {
        if (!a.opt[O_NAME] || !a.opt[O_VERSION] || !a.opt[O_DIGEST] || !a.opt[O_URI]) {
            sl_cli_errorf("usage: sluice models register --name N --version V --digest "
                          "sha256:... --uri URI [--metric K=V]... [--job ID] [--team T]");
            json_decref(a.metrics);
            return SL_CLI_USAGE;
        }
        req = json_pack("{s:s, s:s, s:s, s:s}", "name", a.opt[O_NAME], "version",
                        a.opt[O_VERSION], "digest", a.opt[O_DIGEST], "uri", a.opt[O_URI]);
        if (a.metrics)
            json_object_set(req, "metrics", a.metrics);
        if (a.opt[O_TEAM])
            json_object_set_new(req, "team", json_string(a.opt[O_TEAM]));
        if (a.opt[O_JOB]) {
            int64_t id;
            if (sl_parse_int64(a.opt[O_JOB], 1, INT64_MAX, &id) < 0) {
                sl_cli_errorf("--job: a job id, got '%.64s'", a.opt[O_JOB]);
                code = SL_CLI_USAGE;
                goto out;
            }
            json_object_set_new(req, "job", json_integer(id));
        }
        if (!(body = json_dumps(req, JSON_COMPACT))) {
            code = SL_CLI_FAILED;
            goto out;
        }
        code = sl_cli_call_json(ctx, "POST", "/v1/models", "application/json", body,
                                strlen(body), NULL, &ans);
        if (code == SL_CLI_OK && ctx->output != SL_CLI_OUT_JSON)
            printf("model/%s@%s registered\n", a.opt[O_NAME], a.opt[O_VERSION]);
    } else if (sub && strcmp(sub, "stage") == 0 && a.npos == 2 && a.opt[O_STAGE]) {
        req = json_pack("{s:s}", "stage", a.opt[O_STAGE]);
        if (a.opt[O_COMMENT])
            json_object_set_new(req, "comment", json_string(a.opt[O_COMMENT]));
        if (!(body = json_dumps(req, JSON_COMPACT)) || !(esc = sl_client_escape(a.pos[1]))) {
            code = SL_CLI_FAILED;
            goto out;
        }
        snprintf(path, sizeof(path), "/v1/models/%s/stage", esc);
        code = sl_cli_call_json(ctx, "POST", path, "application/json", body, strlen(body),
                                a.pos[1], &ans);
        if (code == SL_CLI_OK && ctx->output != SL_CLI_OUT_JSON)
            printf("model/%s: %s\n", a.pos[1], a.opt[O_STAGE]);
    } else if (!sub || strcmp(sub, "list") == 0) {
        char q[256] = "";
        if (query_add(q, sizeof(q), "name", a.opt[O_NAME]) < 0 ||
            query_add(q, sizeof(q), "stage", a.opt[O_STAGE]) < 0) {
            code = SL_CLI_USAGE;
            goto out;
        }
        snprintf(path, sizeof(path), "/v1/models%s", q);
        code = sl_cli_call_json(ctx, "GET", path, NULL, NULL, 0, NULL, &ans);
        if (code == SL_CLI_OK && ctx->output != SL_CLI_OUT_JSON) {
            printf("%-24s %-12s %-10s %-12s %-8s %s\n", "NAME", "VERSION", "TEAM", "STAGE",
                   "JOB", "URI");
            json_array_foreach(json_object_get(ans, "models"), i, m)
                printf("%-24s %-12s %-10s %-12s %-8lld %s\n", sl_cli_jstr(m, "name"),
                       sl_cli_jstr(m, "version"), sl_cli_jstr(m, "team"),
                       sl_cli_jstr(m, "stage"),
                       (long long)json_integer_value(json_object_get(m, "job")),
                       sl_cli_jstr(m, "uri"));
        }
    } else {
        sl_cli_errorf("usage: sluice models [list [--name N] [--stage S]] | register ... | "
                      "stage NAME@VERSION --stage none|staging|production|archived "
                      "[--comment C]");
        code = SL_CLI_USAGE;
    }
    if (code == SL_CLI_OK && ctx->output == SL_CLI_OUT_JSON)
        code = sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
out:
    json_decref(a.metrics);
    json_decref(req);
    json_decref(ans);
    free(body);
    free(esc);
    return code;
}

/* ---- scans ---------------------------------------------------------------------- */

int sl_cli_cmd_scan(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[2];
    int npos = 0, code = sl_cli_parse_simple(ctx, argc, argv, pos, 2, &npos);
    char *text = NULL;
    size_t len = 0;
    json_t *ans = NULL, *sc;

    if (code != SL_CLI_OK)
        return code == SL_CLI_DONE ? SL_CLI_OK : code;
    if (npos != 2 || strcmp(pos[0], "import") != 0) {
        sl_cli_errorf("usage: sluice scan import TRIVY-REPORT.json");
        return SL_CLI_USAGE;
    }
    if (read_text(pos[1], &text, &len) < 0)
        return SL_CLI_USAGE;
    code = sl_cli_call_json(ctx, "POST", "/v1/scans", "application/json", text, len, NULL,
                            &ans);
    free(text);
    if (code == SL_CLI_OK) {
        if (ctx->output == SL_CLI_OUT_JSON) {
            code = sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        } else {
            const json_t *c;
            sc = json_object_get(ans, "scan");
            c = json_object_get(sc, "counts");
            printf("scan/%s %s: critical %lld, high %lld, medium %lld, low %lld, unknown %lld\n",
                   sl_cli_jstr(sc, "digest"), sl_cli_jstr(ans, "action"),
                   (long long)json_integer_value(json_object_get(c, "critical")),
                   (long long)json_integer_value(json_object_get(c, "high")),
                   (long long)json_integer_value(json_object_get(c, "medium")),
                   (long long)json_integer_value(json_object_get(c, "low")),
                   (long long)json_integer_value(json_object_get(c, "unknown")));
        }
    }
    json_decref(ans);
    return code;
}
