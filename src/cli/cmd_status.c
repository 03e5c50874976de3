/*
 * cmd_status.c - `sluice status`: which sluiced answers, and with several
 * on one store (docs/ha.md) the leader, its epoch, the lease's age and the
 * members, as GET /v1/status says.
 */
#include "cli.h"

#include <stdio.h>

/* A number of seconds as "1.2s", or "-" when absent. */
static void secs(char *buf, size_t size, json_t *v)
{
    if (json_is_number(v))
        snprintf(buf, size, "%.1fs", json_number_value(v));
    else
        snprintf(buf, size, "-");
}

int sl_cli_cmd_status(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    static const char *const cols[] = {"NAME", "ROLE", "URL", "SEEN"};
    struct sl_cli_table *t = NULL;
    const char *pos[1];
    json_t *st = NULL, *leader, *members, *m;
    size_t i;
    int n, code;

    if ((code = sl_cli_parse_simple(ctx, argc, argv, pos, 0, &n)) != SL_CLI_OK)
        return code;
    if ((code = sl_cli_call_json(ctx, "GET", "/v1/status", NULL, NULL, 0, NULL, &st)) !=
        SL_CLI_OK)
        return code;
    if (ctx->output == SL_CLI_OUT_JSON) {
        code = sl_cli_print_json(st) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        goto out;
    }
    leader = json_object_get(st, "leader");
    members = json_object_get(st, "members");
    printf("answered by: %s (%s)\n", sl_cli_jstr(st, "name")[0] ? sl_cli_jstr(st, "name")
                                                                : "this sluiced",
           sl_cli_jstr(st, "role"));
    if (json_is_object(leader)) {
        char age[32], left[32];
        secs(age, sizeof(age), json_object_get(leader, "lease_age_s"));
        secs(left, sizeof(left), json_object_get(leader, "expires_in_s"));
        printf("leader:      %s at %s\n", sl_cli_jstr(leader, "name"),
               sl_cli_jstr(leader, "url"));
        printf("epoch:       %lld\n",
               (long long)json_integer_value(json_object_get(leader, "epoch")));
        printf("lease:       renewed %s ago, expires in %s\n", age, left);
    } else {
        printf("leader:      %s\n", json_is_false(json_object_get(st, "shared"))
                                        ? "this sluiced (one daemon on its own store)"
                                        : "none holds the lease now");
    }
    if (json_array_size(members) == 0)
        goto out;
    if (!(t = sl_cli_table_create(4, cols))) {
        sl_cli_errorf("out of memory");
        code = SL_CLI_FAILED;
        goto out;
    }
    json_array_foreach(members, i, m) {
        char seen[32];
        const char *row[4];
        secs(seen, sizeof(seen), json_object_get(m, "seen_age_s"));
        row[0] = sl_cli_jstr(m, "name");
        row[1] = sl_cli_jstr(m, "role");
        row[2] = sl_cli_jstr(m, "url");
        row[3] = seen;
        if (sl_cli_table_add(t, row) < 0) {
            sl_cli_errorf("out of memory");
            code = SL_CLI_FAILED;
            goto out;
        }
    }
    printf("\n");
    sl_cli_table_print(t, stdout, ctx->output, 0);
out:
    sl_cli_table_destroy(t);
    json_decref(st);
    return code;
}
