/*
 * cmd_token.c - `sluice token create --user NAME [--expires-in D]
 * [--label L]`: create an API token and print it (the server shows it only
 * once); `sluice token list [--user NAME]`; `sluice token revoke ID`.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { O_USER = 1, O_EXPIRES_IN, O_LABEL };

/* clang-format off */
static const struct sl_cli_opt token_opts[] = {
    /* long name, short, takes a value, id */
    {"user", 'u', true, O_USER},
    {"expires-in", '\0', true, O_EXPIRES_IN},
    {"label", '\0', true, O_LABEL},
    {NULL, '\0', false, 0},
};
/* clang-format on */

static int token_list(struct sl_cli_ctx *ctx, const char *user)
{
    char path[SL_CLI_PATH_MAX] = "/v1/tokens", *esc = NULL;
    json_t *ans = NULL, *t;
    size_t i;
    int code;

    if (user) {
        if (!(esc = sl_client_escape(user)))
            return SL_CLI_FAILED;
        snprintf(path, sizeof(path), "/v1/tokens?user=%s", esc);
        free(esc);
    }
    if ((code = sl_cli_call_json(ctx, "GET", path, NULL, NULL, 0, NULL, &ans)) != SL_CLI_OK)
        return code;
    if (ctx->output == SL_CLI_OUT_JSON) {
        code = sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
    } else {
        printf("%-6s %-16s %-12s %-8s %-24s %-24s %s\n", "ID", "USER", "TEAM", "STATE",
               "CREATED", "EXPIRES", "LABEL");
        json_array_foreach(json_object_get(ans, "tokens"), i, t)
            printf("%-6lld %-16s %-12s %-8s %-24s %-24s %s\n",
                   (long long)json_integer_value(json_object_get(t, "id")),
                   sl_cli_jstr(t, "user"), sl_cli_jstr(t, "team"),
                   json_is_true(json_object_get(t, "revoked")) ? "revoked" : "live",
                   sl_cli_jstr(t, "created_at"),
                   json_is_string(json_object_get(t, "expires_at")) ? sl_cli_jstr(t, "expires_at")
                                                                   : "never",
                   sl_cli_jstr(t, "label"));
    }
    json_decref(ans);
    return code;
}

static int token_revoke(struct sl_cli_ctx *ctx, const char *arg)
{
    char path[64], what[48];
    int64_t id;
    json_t *ans = NULL;
    int code;

    if (!arg || sl_parse_int64(arg, 1, INT64_MAX, &id) < 0) {
        sl_cli_errorf("usage: sluice token revoke ID (the id that token list shows)");
        return SL_CLI_USAGE;
    }
    snprintf(path, sizeof(path), "/v1/tokens/%lld", (long long)id);
    snprintf(what, sizeof(what), "token %lld", (long long)id);
    code = sl_cli_call_json(ctx, "DELETE", path, NULL, NULL, 0, what, &ans);
    if (code == SL_CLI_OK) {
        if (ctx->output == SL_CLI_OUT_JSON)
            code = sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        else
            printf("token %lld revoked\n", (long long)id);
    }
    json_decref(ans);
    return code;
}

int sl_cli_cmd_token(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    const char *v, *sub = NULL, *user = NULL, *expires = NULL, *label = NULL, *token;
    const char *arg = NULL;
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
            if (sub && arg) {
                sl_cli_errorf("token: unexpected argument '%.64s'", v);
                return SL_CLI_USAGE;
            }
            if (sub)
                arg = v;
            else
                sub = v;
        } else if (id == O_LABEL) {
            label = v;
        } else if (id == O_USER) {
            user = v;
        } else if (id == O_EXPIRES_IN) {
            expires = v;
        }
    }
    if (sub && strcmp(sub, "list") == 0)
        return token_list(ctx, user);
    if (sub && strcmp(sub, "revoke") == 0)
        return token_revoke(ctx, arg);
    if (!sub || strcmp(sub, "create") != 0 || arg) {
        sl_cli_errorf(
            "token: %s%.64s%s (usage: sluice token create --user NAME "
            "[--expires-in D] [--label L] | list [--user NAME] | revoke ID)",
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
    if (!(user_esc = sl_client_escape(user)) || !(req = json_object()) ||
        (expires && json_object_set_new(req, "expires_in", json_string(expires)) < 0) ||
        (label && json_object_set_new(req, "label", json_string(label)) < 0) ||
        (json_object_size(req) && !(body = json_dumps(req, JSON_COMPACT)))) {
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
