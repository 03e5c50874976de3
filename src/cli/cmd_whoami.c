/*
 * cmd_whoami.c - `sluice whoami`: the user, team and role behind the token.
 */
#include "cli.h"

int sl_cli_cmd_whoami(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    static const char *const cols[] = {"user", "team", "role"};
    struct sl_cli_table *t = NULL;
    const char *pos[1];
    json_t *who = NULL;
    int n, code;

    if ((code = sl_cli_parse_simple(ctx, argc, argv, pos, 0, &n)) != SL_CLI_OK)
        return code;
    if ((code = sl_cli_call_json(ctx, "GET", "/v1/whoami", NULL, NULL, 0, NULL,
                                 &who)) != SL_CLI_OK)
        return code;
    if (ctx->output == SL_CLI_OUT_JSON) {
        code = sl_cli_print_json(who) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
    } else {
        const char *cells[] = {sl_cli_jstr(who, "user"),
                               sl_cli_jstr(who, "team"),
                               sl_cli_jstr(who, "role")};
        const char *labels[] = {"user:", "team:", "role:"};
        if (ctx->output == SL_CLI_OUT_CSV) {
            t = sl_cli_table_create(3, cols);
            if (!t || sl_cli_table_add(t, cells) < 0) {
                sl_cli_errorf("out of memory");
                code = SL_CLI_FAILED;
                goto out;
            }
        } else {
            /* "user: admin" lines, aligned like `show`. */
            if (!(t = sl_cli_table_create(2, NULL))) {
                sl_cli_errorf("out of memory");
                code = SL_CLI_FAILED;
                goto out;
            }
            for (int i = 0; i < 3; i++) {
                const char *row[] = {labels[i], cells[i]};
                if (sl_cli_table_add(t, row) < 0) {
                    sl_cli_errorf("out of memory");
                    code = SL_CLI_FAILED;
                    goto out;
                }
            }
        }
        sl_cli_table_print(t, stdout, ctx->output, 0);
    }
out:
    sl_cli_table_destroy(t);
    json_decref(who);
    return code;
}
