/*
 * cmd_objects.c - the catalog's objects: `sluice get KIND [NAME]`,
 * `sluice describe KIND NAME`, `sluice delete KIND NAME [--force]` and
 * `sluice diff -f FILE` (what apply would change: the server's dry run).
 */
#include "cli.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "../core/spec.h"
#include "../util/buf.h"

/* The path of KIND's objects ("/v1/objects/queues"), or SL_CLI_USAGE. */
static int kind_path(const char *word, const char *name, char *buf, size_t size)
{
    int kind = sl_manifest_kind_parse(word);
    char k[40];
    size_t n = 0;

    if (kind < 0) {
        sl_cli_errorf("unknown kind '%.40s': one of team, queue, cohort, priorityclass, "
                      "user, scheduler, pricing, budget, policy, dataset (singular or "
                      "plural, any case)",
                      word);
        return SL_CLI_USAGE;
    }
    for (const char *p = sl_manifest_kind_name(kind); *p && n + 1 < sizeof(k); p++)
        k[n++] = (char)tolower((unsigned char)*p);
    k[n] = '\0';
    if (name && (!*name || strlen(name) > 120 || strchr(name, '/') || strchr(name, '?') ||
                 strchr(name, '%'))) {
        sl_cli_errorf("'%.64s' is not a name", name);
        return SL_CLI_USAGE;
    }
    snprintf(buf, size, "/v1/objects/%s%s%s", k, name ? "/" : "", name ? name : "");
    return SL_CLI_OK;
}

/* The leaves of a spec as "a.b=v" into 'b' (space-separated). */
static void flatten(const json_t *v, const char *prefix, struct sl_buf *b)
{
    const char *k;
    json_t *e;

    if (json_is_object(v) && json_object_size(v)) {
        json_object_foreach((json_t *)v, k, e)
        {
            char p[256];
            snprintf(p, sizeof(p), "%s%s%s", prefix, *prefix ? "." : "", k);
            flatten(e, p, b);
        }
        return;
    }
    {
        char *t = json_is_string(v) ? NULL
                                    : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY |
                                                        JSON_REAL_PRECISION(15));
        sl_buf_printf(b, "%s%s=%s", b->len ? " " : "", prefix,
                      json_is_string(v) ? json_string_value(v) : t ? t : "?");
        free(t);
    }
}

static int print_items(struct sl_cli_ctx *ctx, const json_t *items)
{
    static const char *const cols[] = {"kind", "name", "spec"};
    struct sl_cli_table *t = sl_cli_table_create(3, cols);
    size_t i;
    json_t *doc;
    int code = SL_CLI_OK;

    if (!t) {
        sl_cli_errorf("out of memory");
        return SL_CLI_FAILED;
    }
    if (ctx->output == SL_CLI_OUT_TABLE)
        sl_cli_table_max_width(t, 2, 100);
    json_array_foreach (items, i, doc) {
        struct sl_buf b;
        const char *cells[3];
        char spec[1024], key[200];

        sl_buf_init(&b);
        flatten(json_object_get(doc, "spec"), "", &b);
        cells[0] = sl_cli_jstr(doc, "kind");
        cells[1] = sl_cli_jstr(json_object_get(doc, "metadata"), "name");
        if (cells[0] && strcmp(cells[0], "Dataset") == 0 && cells[1]) {
            /* a dataset is kept and named by name@version */
            snprintf(key, sizeof(key), "%s@%s", cells[1],
                     sl_cli_jstr(json_object_get(doc, "spec"), "version")
                         ? sl_cli_jstr(json_object_get(doc, "spec"), "version")
                         : "?");
            cells[1] = key;
        }
        cells[2] = sl_cli_sanitize(b.data ? b.data : "", spec, sizeof(spec));
        if (sl_cli_table_add(t, cells) < 0)
            code = SL_CLI_FAILED;
        sl_buf_fini(&b);
    }
    if (code == SL_CLI_OK)
        sl_cli_table_print(t, stdout, ctx->output, 0);
    else
        sl_cli_errorf("out of memory");
    sl_cli_table_destroy(t);
    return code;
}

int sl_cli_cmd_get(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[2];
    char path[200];
    json_t *ans = NULL, *items;
    int n, code;

    if ((code = sl_cli_parse_simple(ctx, argc, argv, pos, 2, &n)) != SL_CLI_OK)
        return code;
    if (n == 0) {
        sl_cli_errorf("get: KIND is required (sluice get KIND [NAME])");
        return SL_CLI_USAGE;
    }
    if ((code = kind_path(pos[0], n > 1 ? pos[1] : NULL, path, sizeof(path))) != SL_CLI_OK ||
        (code = sl_cli_call_json(ctx, "GET", path, NULL, NULL, 0, NULL, &ans)) != SL_CLI_OK)
        return code;
    if (n > 1) { /* one object: a list of one */
        items = json_pack("[O]", ans);
    } else {
        items = json_incref(json_object_get(ans, "items"));
    }
    if (!items)
        code = SL_CLI_FAILED;
    else if (ctx->output == SL_CLI_OUT_JSON)
        code = sl_cli_print_json(n > 1 ? ans : items) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
    else
        code = print_items(ctx, items);
    json_decref(items);
    json_decref(ans);
    return code;
}

/* A value as text: strings as they are, the rest as compact JSON. */
static void print_value(const json_t *v)
{
    char buf[512];
    char *t = json_is_string(v) ? NULL
                                : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY |
                                                    JSON_REAL_PRECISION(15));

    printf("%s", sl_cli_sanitize(json_is_string(v) ? json_string_value(v) : t ? t : "?", buf,
                                 sizeof(buf)));
    free(t);
}

/* "  key: value" lines of an object, nested objects indented. */
static void print_tree(const json_t *o, int indent)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)o, k, v)
    {
        char kb[128];
        printf("%*s%s:", indent, "", sl_cli_sanitize(k, kb, sizeof(kb)));
        if (json_is_object(v) && json_object_size(v)) {
            printf("\n");
            print_tree(v, indent + 2);
        } else {
            printf(" ");
            print_value(v);
            printf("\n");
        }
    }
}

int sl_cli_cmd_describe(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[2];
    char path[200], b[128];
    json_t *doc = NULL, *rel;
    int n, code;

    if ((code = sl_cli_parse_simple(ctx, argc, argv, pos, 2, &n)) != SL_CLI_OK)
        return code;
    if (n < 2) {
        sl_cli_errorf("describe: KIND and NAME are required (sluice describe KIND NAME)");
        return SL_CLI_USAGE;
    }
    if ((code = kind_path(pos[0], pos[1], path, sizeof(path))) != SL_CLI_OK ||
        (code = sl_cli_call_json(ctx, "GET", path, NULL, NULL, 0, NULL, &doc)) != SL_CLI_OK)
        return code;
    if (ctx->output != SL_CLI_OUT_TABLE) {
        code = sl_cli_print_json(doc) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        json_decref(doc);
        return code;
    }
    printf("Kind: %s\n", sl_cli_sanitize(sl_cli_jstr(doc, "kind") ? sl_cli_jstr(doc, "kind")
                                                                  : "?", b, sizeof(b)));
    printf("Name: %s\n",
           sl_cli_sanitize(sl_cli_jstr(json_object_get(doc, "metadata"), "name")
                               ? sl_cli_jstr(json_object_get(doc, "metadata"), "name")
                               : "?",
                           b, sizeof(b)));
    printf("Spec:\n");
    print_tree(json_object_get(doc, "spec"), 2);
    rel = json_object_get(doc, "related");
    if (json_object_size(rel)) {
        printf("Related:\n");
        print_tree(rel, 2);
    }
    json_decref(doc);
    return SL_CLI_OK;
}

int sl_cli_cmd_delete(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    static const struct sl_cli_opt opts[] = {
        {"force", '\0', false, 1},
        {NULL, '\0', false, 0},
    };
    struct sl_cli_parser p;
    struct sl_error err = {{0}, {0}};
    const char *pos[2] = {NULL, NULL}, *v;
    char path[220], b[200];
    bool force = false;
    json_t *ans = NULL, *stopping;
    int id, n = 0, code;

    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((id = sl_cli_next(&p, opts, ctx, &v, &err)) != SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, id, &err)))
            return code;
        if (id == 1) {
            force = true;
        } else if (n < 2) {
            pos[n++] = v;
        } else {
            sl_cli_errorf("delete: unexpected argument '%.64s'", v);
            return SL_CLI_USAGE;
        }
    }
    if (n < 2) {
        sl_cli_errorf("delete: KIND and NAME are required (sluice delete KIND NAME [--force])");
        return SL_CLI_USAGE;
    }
    if ((code = kind_path(pos[0], pos[1], path, sizeof(path) - 12)) != SL_CLI_OK)
        return code;
    if (force)
        sl_strlcpy(path + strlen(path), "?force=true", sizeof(path) - strlen(path));
    /* the server's refusals name the object */
    if ((code = sl_cli_call_json(ctx, "DELETE", path, NULL, NULL, 0, NULL, &ans)) != SL_CLI_OK)
        return code;
    if (ctx->output != SL_CLI_OUT_TABLE) {
        code = sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
    } else {
        char k[40];
        size_t i = 0;
        const char *kind = sl_cli_jstr(ans, "kind") ? sl_cli_jstr(ans, "kind") : "?";
        for (; kind[i] && i + 1 < sizeof(k); i++)
            k[i] = (char)tolower((unsigned char)kind[i]);
        k[i] = '\0';
        if (json_array_size(json_object_get(ans, "cancelled")))
            printf("cancelled %zu job(s)\n", json_array_size(json_object_get(ans, "cancelled")));
        stopping = json_object_get(ans, "stopping");
        if (json_is_true(json_object_get(ans, "deleted"))) {
            size_t w;
            json_t *gone;
            printf("%s/%s deleted", k, sl_cli_sanitize(sl_cli_jstr(ans, "name") ?
                                                       sl_cli_jstr(ans, "name") : "?", b,
                                                       sizeof(b)));
            /* what went with a team */
            json_array_foreach (json_object_get(ans, "with"), w, gone)
                printf("%s%s", w ? ", " : " with ",
                       sl_cli_sanitize(json_is_string(gone) ? json_string_value(gone) : "?", b,
                                       sizeof(b)));
            printf("\n");
        } else
            printf("%s/%s not deleted yet: %zu running job(s) are stopping; delete again "
                   "once they have ended\n",
                   k, sl_cli_sanitize(sl_cli_jstr(ans, "name") ? sl_cli_jstr(ans, "name")
                                                               : "?", b, sizeof(b)),
                   json_array_size(stopping));
    }
    json_decref(ans);
    return code;
}

int sl_cli_cmd_diff(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    const char *file;
    json_t *ans = NULL, *row, *c;
    size_t i, k;
    int code;

    if ((code = sl_cli_parse_apply(ctx, argc, argv, &file, NULL)) != SL_CLI_OK ||
        (code = sl_cli_post_document(ctx, file, "/v1/apply?dry_run=true", true, &ans)) !=
            SL_CLI_OK)
        return code;
    if (ctx->output != SL_CLI_OUT_TABLE) {
        code = sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        json_decref(ans);
        return code;
    }
    json_array_foreach (json_object_get(ans, "diff"), i, row) {
        char kb[40], nb[160], fb[160];
        const char *kind = sl_cli_jstr(row, "kind") ? sl_cli_jstr(row, "kind") : "?";
        const char *action = sl_cli_jstr(row, "action") ? sl_cli_jstr(row, "action") : "?";
        size_t n = 0;
        for (; kind[n] && n + 1 < sizeof(kb); n++)
            kb[n] = (char)tolower((unsigned char)kind[n]);
        kb[n] = '\0';
        printf("%s/%s %s\n", kb,
               sl_cli_sanitize(sl_cli_jstr(row, "name") ? sl_cli_jstr(row, "name") : "?", nb,
                               sizeof(nb)),
               strcmp(action, "created") == 0 ? "would be created"
               : strcmp(action, "updated") == 0 ? "would change"
                                                : "unchanged");
        if (strcmp(action, "updated") != 0)
            continue;
        json_array_foreach (json_object_get(row, "changes"), k, c) {
            const json_t *o = json_object_get(c, "old"), *nw = json_object_get(c, "new");
            printf("  %s: ", sl_cli_sanitize(sl_cli_jstr(c, "field") ? sl_cli_jstr(c, "field")
                                                                     : "?", fb, sizeof(fb)));
            if (json_is_null(o))
                printf("(unset)");
            else
                print_value(o);
            printf(" -> ");
            if (json_is_null(nw))
                printf("(unset)");
            else
                print_value(nw);
            printf("%s\n", json_is_true(json_object_get(c, "given"))
                               ? ""
                               : "  (left out: apply refuses without --replace)");
        }
    }
    json_decref(ans);
    return SL_CLI_OK;
}
