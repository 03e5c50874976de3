/*
 * cmd_drain.c - `sluice drain|cordon|uncordon NODE [--reason TEXT]`: an
 * admin's state of a node (docs/nodes.md). The command's name is the
 * route's last segment: POST /v1/nodes/NODE/drain, /cordon, /uncordon.
 * Prints "node n2: draining (was active)"; -o json the server's object;
 * -o csv one row.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

enum { O_REASON = 1 };

/* clang-format off */
static const struct sl_cli_opt drain_opts[] = {
    /* long name, short, takes a value, id */
    {"reason", 'r', true, O_REASON},
    {NULL, '\0', false, 0},
};
/* clang-format on */

static const char *const csv_cols[] = {"node", "state", "previous", "changed",
                                       "reason", "by", "at"};

int sl_cli_cmd_node_state(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    struct sl_cli_table *t = NULL;
    const char *v, *node = NULL, *reason = NULL, *what = argv[0];
    char *esc = NULL, *body = NULL, path[256], b1[80], b2[80], b3[300];
    json_t *req = NULL, *ans = NULL;
    int id, code;

    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((id = sl_cli_next(&p, drain_opts, ctx, &v, &err)) != SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, id, &err)))
            return code;
        if (id == SL_CLI_ARG_POS) {
            if (node) {
                sl_cli_errorf("%s: one NODE only, got '%.64s' too (see 'sluice help %s')",
                              what, v, what);
                return SL_CLI_USAGE;
            }
            node = v;
        } else if (id == O_REASON) {
            if (strlen(v) > 256) {
                sl_cli_errorf("--reason: at most 256 characters");
                return SL_CLI_USAGE;
            }
            reason = v;
        }
    }
    if (!node || !*node || strlen(node) > 63) {
        sl_cli_errorf("%s: NODE is required (sluice %s NODE [--reason TEXT])", what, what);
        return SL_CLI_USAGE;
    }
    if (!(req = json_object()) ||
        (reason && json_object_set_new(req, "reason", json_string(reason)) < 0) ||
        !(body = json_dumps(req, JSON_COMPACT)) || !(esc = sl_client_escape(node))) {
        sl_cli_errorf("out of memory");
        code = SL_CLI_FAILED;
        goto out;
    }
    snprintf(path, sizeof(path), "/v1/nodes/%s/%s", esc, what);
    snprintf(b1, sizeof(b1), "node %.64s", node);
    if ((code = sl_cli_call_json(ctx, "POST", path, "application/json", body, strlen(body),
                                 b1, &ans)) != SL_CLI_OK)
        goto out;
    if (ctx->output == SL_CLI_OUT_JSON) {
        code = sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
    } else if (ctx->output == SL_CLI_OUT_CSV) {
        const char *row[] = {sl_cli_jstr(ans, "node"), sl_cli_jstr(ans, "state"),
                             sl_cli_jstr(ans, "previous"),
                             json_is_true(json_object_get(ans, "changed")) ? "true" : "false",
                             sl_cli_jstr(ans, "reason"), sl_cli_jstr(ans, "by"),
                             sl_cli_jstr(ans, "at")};
        if (!(t = sl_cli_table_create(SL_ARRAY_LEN(csv_cols), csv_cols)) ||
            sl_cli_table_add(t, row) < 0) {
            sl_cli_errorf("out of memory");
            code = SL_CLI_FAILED;
            goto out;
        }
        sl_cli_table_print(t, stdout, SL_CLI_OUT_CSV, 0);
    } else {
        const char *st = sl_cli_jstr(ans, "state"), *prev = sl_cli_jstr(ans, "previous");
        printf("node %s: %s", sl_cli_sanitize(node, b1, sizeof(b1)),
               sl_cli_sanitize(st ? st : "?", b2, sizeof(b2)));
        if (!json_is_true(json_object_get(ans, "changed")))
            printf(" (unchanged)");
        else if (prev)
            printf(" (was %s)", sl_cli_sanitize(prev, b3, sizeof(b3)));
        printf("\n");
    }
out:
    sl_cli_table_destroy(t);
    json_decref(req);
    json_decref(ans);
    free(body);
    free(esc);
    return code;
}
