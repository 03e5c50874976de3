/*
 * cmd_token.c - `sluice token create --user NAME [--expires-in D]`: create
 * an API token (admin only) and print it; the server shows it only once.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { O_USER = 1, O_EXPIRES_IN };

/* clang-format off */
static const struct sl_cli_opt token_opts[] = {
    /* long name, short, takes a value, id */
    {"user", 'u', true, O_USER},
    {"expires-in", '\0', true, O_EXPIRES_IN},
    {NULL, '\0', false, 0},
};
/* clang-format on */

int sl_cli_cmd_token(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    const char *v, *sub = NULL, *user = NULL, *expires = NULL, *token;
    char path[SL_CLI_PATH_MAX];
    char *user_esc = NULL, *body = NULL;
    json_t *req = NULL, *ans = NULL;
    int64_t ms;
    int id, code;

    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((id = sl_cli_next(&p, token_opts, ctx, &v, &err)) !=
           SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, id, &err)))
            return code;
        if (id == SL_CLI_ARG_POS) {
            if (sub) {
                sl_cli_errorf("token: unexpected argument '%.64s'", v);
                return SL_CLI_USAGE;
            }
            sub = v;
        } else if (id == O_USER) {
            user = v;
        } else if (id == O_EXPIRES_IN) {
            expires = v;
        }
    }
    if (!sub || strcmp(sub, "create") != 0) {
        sl_cli_errorf(
            "token: %s%.64s%s (usage: sluice token create --user NAME "
            "[--expires-in D])",
            sub ? "unknown subcommand '" : "missing subcommand", sub ? sub : "",
            sub ? "'" : "");
        return SL_CLI_USAGE;
    }
    if (!user || !*user || strlen(user) > 256) {
        sl_cli_errorf("token create: --user NAME is required");
        return SL_CLI_USAGE;
    }
    if (expires && (sl_parse_duration_ms(expires, &ms) < 0 || ms <= 0)) {
        sl_cli_errorf(
            "--expires-in: must be a duration such as 24h or 30d, got "
            "'%.64s'",
            expires);
        return SL_CLI_USAGE;
    }
    if (!(user_esc = sl_client_escape(user)) ||
        (expires && (!(req = json_pack("{s:s}", "expires_in", expires)) ||
                     !(body = json_dumps(req, JSON_COMPACT))))) {
        sl_cli_errorf("out of memory");
        code = SL_CLI_FAILED;
        goto out;
    }
    snprintf(path, sizeof(path), "/v1/users/%s/tokens", user_esc);
    /* Without --expires-in the body is empty: the server's default. */
    code =
        sl_cli_call_json(ctx, "POST", path, "application/json",
                         body ? body : "", body ? strlen(body) : 0, NULL, &ans);
    if (code != SL_CLI_OK)
        goto out;
    if (ctx->output == SL_CLI_OUT_JSON) {
        code = sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
    } else if (!(token = sl_cli_jstr(ans, "token"))) {
        sl_cli_errorf("the server's answer has no token");
        code = SL_CLI_FAILED;
    } else {
        printf("%s\n", token);
    }
out:
    free(user_esc);
    free(body);
    json_decref(req);
    json_decref(ans);
    return code;
}
