/*
 * cmd_apply.c - `sluice apply -f FILE`: send manifests (Team, Queue,
 * PriorityClass, User, ...) and print what each became.
 */
#include "cli.h"

#include <ctype.h>

/* "team/vision created": the kind in lower case, as kubectl prints it. */
static void print_applied(const json_t *item)
{
    const char *kind = sl_cli_jstr(item, "kind"),
               *name = sl_cli_jstr(item, "name");
    const char *action = sl_cli_jstr(item, "action");
    char k[64], n[128], a[32];

    sl_cli_sanitize(kind ? kind : "?", k, sizeof(k));
    for (char *p = k; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    printf("%s/%s %s\n", k, sl_cli_sanitize(name ? name : "?", n, sizeof(n)),
           sl_cli_sanitize(action ? action : "applied", a, sizeof(a)));
}

int sl_cli_cmd_apply(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    static const char *const cols[] = {"kind", "name", "action"};
    struct sl_cli_table *t = NULL;
    const char *path;
    json_t *ans = NULL, *applied, *item;
    bool replace = false;
    size_t i;
    int code;

    if ((code = sl_cli_parse_apply(ctx, argc, argv, &path, &replace)) != SL_CLI_OK)
        return code;
    if ((code = sl_cli_post_document(ctx, path,
                                     replace ? "/v1/apply?replace=true" : "/v1/apply", true,
                                     &ans)) != SL_CLI_OK)
        goto out;
    if (ctx->output == SL_CLI_OUT_JSON) {
        code = sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        goto out;
    }
    if (!json_is_array(applied = json_object_get(ans, "applied"))) {
        sl_cli_errorf("the server's answer to apply has no \"applied\" list");
        code = SL_CLI_FAILED;
        goto out;
    }
    if (ctx->output == SL_CLI_OUT_CSV) {
        if (!(t = sl_cli_table_create(3, cols))) {
            code = SL_CLI_FAILED;
            goto out;
        }
        json_array_foreach (applied, i, item) {
            const char *cells[] = {sl_cli_jstr(item, "kind"),
                                   sl_cli_jstr(item, "name"),
                                   sl_cli_jstr(item, "action")};
            if (sl_cli_table_add(t, cells) < 0) {
                sl_cli_errorf("out of memory");
                code = SL_CLI_FAILED;
                goto out;
            }
        }
        sl_cli_table_print(t, stdout, SL_CLI_OUT_CSV, 0);
        goto out;
    }
    json_array_foreach (applied, i, item) {
        print_applied(item);
    }
out:
    sl_cli_table_destroy(t);
    json_decref(ans);
    return code;
}
