/*
 * call.c - `sluice` and the server: where the server and token come from,
 * requests through libsluice, and the one table from answers to exit codes.
 *
 * Every error is printed here as one line, "sluice: ...", so commands only
 * pass the code on.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Answers -> exit codes. A row matches when status is in [lo, hi]; rc < 0
 * (no answer) is the row with lo == hi == 0. First match wins. */
static const struct {
    long lo, hi;
    int exit_code;
} exit_table[] = {
    {0, 0, SL_CLI_FAILED}, /* no answer: refused, timeout, reset */
    {200, 299, SL_CLI_OK},
    {400, 499, SL_CLI_REFUSED}, /* the server refused the request */
    {500, 599, SL_CLI_FAILED},  /* the server failed */
    {100, 399, SL_CLI_FAILED},  /* 1xx/3xx are not answers of this API */
};

int sl_cli_exit_code(int rc, long status)
{
    if (rc < 0)
        status = 0;
    for (size_t i = 0; i < SL_ARRAY_LEN(exit_table); i++)
        if (status >= exit_table[i].lo && status <= exit_table[i].hi)
            return exit_table[i].exit_code;
    return SL_CLI_FAILED;
}

void sl_cli_errorf(const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* One line, whatever the message held. */
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    fflush(stdout);
    fprintf(stderr, "sluice: %s\n", line);
}

int sl_cli_usage_error(const struct sl_error *err)
{
    sl_cli_errorf("%s", err->text);
    return SL_CLI_USAGE;
}

/* Strip surrounding whitespace (a token file ends in a newline). */
static char *trim(char *s)
{
    size_t n;

    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
        s++;
    n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' ||
                     s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

/* The token: --token, $SLUICE_TOKEN, the file $SLUICE_TOKEN_FILE, then
 * ./.sluice/admin.token when it exists (what `make run` writes), then the
 * one `sluice login` saved (sl_cli_login_token_path). *buf
 * receives what was read from a file, *len its size (caller wipes and
 * frees). */
static int find_token(struct sl_cli_ctx *ctx, const char **token, char **buf,
                      size_t *len)
{
    const char *file = getenv("SLUICE_TOKEN_FILE");
    const char *env = getenv("SLUICE_TOKEN");
    char login[1024];
    int rc;

    *token = NULL;
    if (ctx->token) {
        *token = ctx->token;
        return SL_CLI_OK;
    }
    if (env && *env) {
        *token = env;
        return SL_CLI_OK;
    }
    if (!file || !*file) {
        if (access(SL_CLI_DEFAULT_TOKEN_FILE, F_OK) == 0)
            file = SL_CLI_DEFAULT_TOKEN_FILE;
        else if (sl_cli_login_token_path(login, sizeof(login)) == 0 &&
                 access(login, F_OK) == 0)
            file = login; /* what `sluice login` saved */
        else
            return SL_CLI_OK; /* no token: the server will say 401 */
    }
    if ((rc = sl_read_file(file, SL_CLI_MAX_TOKEN_FILE, buf, len)) < 0) {
        sl_cli_errorf("token file %.200s: %s", file,
                      rc == -EFBIG ? "too large for a token" : strerror(-rc));
        return SL_CLI_USAGE;
    }
    *token = trim(*buf);
    return SL_CLI_OK;
}

/* The value of 'flag', else of environment variable 'env' when set and not
 * empty, else NULL. */
static const char *flag_or_env(const char *flag, const char *env)
{
    const char *v = getenv(env);

    return flag ? flag : v && *v ? v : NULL;
}

/* The TLS settings of an https:// client: --ca-cert, --insecure (said on
 * stderr each time), --cert and --key, or their environment variables. */
static int tls_setup(struct sl_cli_ctx *ctx)
{
    struct sl_client_tls t = {
        .ca_file = flag_or_env(ctx->ca_cert, "SLUICE_CA_CERT"),
        .cert_file = flag_or_env(ctx->cert, "SLUICE_CLIENT_CERT"),
        .key_file = flag_or_env(ctx->key, "SLUICE_CLIENT_KEY"),
        .insecure = ctx->insecure,
    };

    if (!t.cert_file != !t.key_file) {
        sl_cli_errorf("--cert and --key (SLUICE_CLIENT_CERT, SLUICE_CLIENT_KEY) go together");
        return SL_CLI_USAGE;
    }
    if (t.insecure)
        fprintf(stderr, "sluice: warning: --insecure: the server's certificate is not "
                        "verified; anyone on the path can read and change this session\n");
    if (sl_client_set_tls(ctx->client, &t) < 0) {
        sl_cli_errorf("cannot create the HTTP client: %s", strerror(ENOMEM));
        return SL_CLI_FAILED;
    }
    return SL_CLI_OK;
}

int sl_cli_client(struct sl_cli_ctx *ctx, struct sl_client **out)
{
    const char *server = ctx->server, *token;
    char *file_buf = NULL;
    size_t file_len = 0;
    int code, err;

    if (ctx->client) {
        *out = ctx->client;
        return SL_CLI_OK;
    }
    if (!server && !((server = getenv("SLUICE_SERVER")) && *server))
        server = SL_CLI_DEFAULT_SERVER;
    if (strncmp(server, "http://", 7) != 0 && strncmp(server, "https://", 8) != 0) {
        sl_cli_errorf("server '%.200s' must be an http:// or https:// URL%s", server,
                      ctx->server ? "" : " (from SLUICE_SERVER)");
        return SL_CLI_USAGE;
    }
    if ((code = find_token(ctx, &token, &file_buf, &file_len)) != SL_CLI_OK)
        goto out;
    if (token && strlen(token) > SL_CLIENT_MAX_TOKEN) {
        sl_cli_errorf("token: longer than %d bytes", SL_CLIENT_MAX_TOKEN);
        code = SL_CLI_USAGE;
        goto out;
    }
    for (const char *p = token; p && *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) {
            sl_cli_errorf("token: holds a space or control character");
            code = SL_CLI_USAGE;
            goto out;
        }
    if (!(ctx->client = sl_client_create(server, token))) {
        err = errno;
        if (err == EINVAL)
            sl_cli_errorf("server '%.200s' is not a usable URL "
                          "(http[s]://HOST[:PORT])",
                          server);
        else
            sl_cli_errorf("cannot create the HTTP client: %s", strerror(err));
        code = err == EINVAL ? SL_CLI_USAGE : SL_CLI_FAILED;
        goto out;
    }
    if (sl_client_https(ctx->client) && (code = tls_setup(ctx)) != SL_CLI_OK)
        goto out;
    *out = ctx->client;
out:
    if (file_buf) {
        /* The token is a secret: do not leave it in freed memory. */
        memset(file_buf, 0, file_len);
        free(file_buf);
    }
    return code;
}

/* Whether 'msg' holds 'what' as whole words ("job 4" is not in "job 42"). */
static bool names(const char *msg, const char *what)
{
    size_t n = strlen(what);

    for (const char *p = strstr(msg, what); p; p = strstr(p + 1, what)) {
        char after = p[n];
        bool word_before =
            p > msg && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
        if (!word_before && !isalnum((unsigned char)after) && after != '_')
            return true;
    }
    return false;
}

/* The error line of a refused or failed request. */
static void report(const struct sl_cli_ctx *ctx, int rc,
                   const struct sl_response *r, const char *what)
{
    const struct sl_api_error *e = &r->error;
    /* No "job 42: " before a message that already names job 42. */
    bool named = what && names(e->message, what);
    const char *pre = what && !named ? what : "",
               *sep = what && !named ? ": " : "";
    char login[1024];
    bool implicit = r->status == 401 && !ctx->token && !getenv("SLUICE_TOKEN") &&
                    !getenv("SLUICE_TOKEN_FILE") &&
                    access(SL_CLI_DEFAULT_TOKEN_FILE, F_OK) != 0;
    bool saved = implicit && sl_cli_login_token_path(login, sizeof(login)) == 0 &&
                 access(login, F_OK) == 0;
    bool no_token = implicit && !saved;
    bool show_field;
    char code[48] = "";

    if (rc < 0) {
        sl_cli_errorf("%s%s%s", pre, sep,
                      e->message[0] ? e->message : strerror(-rc));
        return;
    }
    /* "spec.resources.gpus: must be 0..64 (invalid)"; the field is not
     * repeated when the message already starts with it. */
    show_field =
        e->field[0] && strncmp(e->message, e->field, strlen(e->field)) != 0;
    if (e->code[0])
        snprintf(code, sizeof(code), " (%s)", e->code);
    sl_cli_errorf("%s%s%s%s%s%s%s", pre, sep, show_field ? e->field : "",
                  show_field ? ": " : "", e->message, code,
                  no_token ? "; no token given: use sluice login, --token, SLUICE_TOKEN or "
                             "SLUICE_TOKEN_FILE"
                  : saved ? "; the token sluice login saved was refused (it may have "
                            "expired): sign in again with sluice login"
                          : "");
}

/* An empty answer in 'resp' and the context's client in *c. */
static int request_begin(struct sl_cli_ctx *ctx, struct sl_response *resp, struct sl_client **c)
{
    memset(resp, 0, sizeof(*resp));
    resp->log_offset = -1;
    return sl_cli_client(ctx, c);
}

int sl_cli_request(struct sl_cli_ctx *ctx, const char *method, const char *path,
                   const char *content_type, const char *body, size_t len,
                   const char *what, struct sl_response *resp)
{
    struct sl_client *c;
    int code, rc;

    if ((code = request_begin(ctx, resp, &c)) != SL_CLI_OK)
        return code;
    rc = sl_client_request(c, method, path, content_type, body, len, resp);
    code = sl_cli_exit_code(rc, resp->status);
    if (code != SL_CLI_OK) {
        if (rc == 0 && resp->status < 400)
            snprintf(resp->error.message, sizeof(resp->error.message),
                     "unexpected answer HTTP %ld to %s %s", resp->status,
                     method, path);
        report(ctx, rc, resp, what);
        sl_response_fini(resp);
    }
    return code;
}

int sl_cli_get_transient(struct sl_cli_ctx *ctx, const char *path, const char *what,
                         struct sl_response *resp, bool *transient, char *why,
                         size_t size)
{
    struct sl_client *c;
    int code, rc;

    *transient = false;
    if ((code = request_begin(ctx, resp, &c)) != SL_CLI_OK)
        return code;
    rc = sl_client_request(c, "GET", path, NULL, NULL, 0, resp);
    if (rc < 0 || resp->status >= 500) {
        if (rc < 0)
            snprintf(why, size, "%s", resp->error.message[0] ? resp->error.message
                                                             : strerror(-rc));
        else
            snprintf(why, size, "HTTP %ld%s%s", resp->status,
                     resp->error.message[0] ? ": " : "", resp->error.message);
        *transient = true;
        sl_response_fini(resp);
        return SL_CLI_FAILED;
    }
    code = sl_cli_exit_code(rc, resp->status);
    if (code != SL_CLI_OK) {
        if (resp->status < 400)
            snprintf(resp->error.message, sizeof(resp->error.message),
                     "unexpected answer HTTP %ld to GET %s", resp->status, path);
        report(ctx, rc, resp, what);
        sl_response_fini(resp);
    }
    return code;
}

int sl_cli_call_json(struct sl_cli_ctx *ctx, const char *method,
                     const char *path, const char *content_type,
                     const char *body, size_t len, const char *what,
                     json_t **out)
{
    struct sl_response r;
    json_error_t jerr;
    int code;

    *out = NULL;
    if ((code = sl_cli_request(ctx, method, path, content_type, body, len, what,
                               &r)) != SL_CLI_OK)
        return code;
    if (!(*out = json_loadb(r.body, r.len, 0, &jerr)) ||
        (!json_is_object(*out) && !json_is_array(*out))) {
        sl_cli_errorf(
            "%s%sthe server's answer to %s %s is not a JSON object%s%s",
            what ? what : "", what ? ": " : "", method, path, *out ? "" : ": ",
            *out ? "" : jerr.text);
        json_decref(*out);
        *out = NULL;
        code = SL_CLI_FAILED;
    }
    sl_response_fini(&r);
    return code;
}

int sl_cli_print_json(const json_t *v)
{
    if (sl_cli_yaml())
        return sl_cli_print_yaml(v);
    /* reals in 15 significant digits: 0.2625, not 0.26250000000000001 */
    if (json_dumpf(v, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) < 0 ||
        fputc('\n', stdout) == EOF)
        return -EIO;
    return 0;
}

void sl_cli_print_collected(const struct sl_cli_ctx *ctx, const json_t *all,
                            struct sl_cli_table *t)
{
    if (ctx->output == SL_CLI_OUT_JSON && json_array_size(all))
        sl_cli_print_json(all);
    else if (ctx->output == SL_CLI_OUT_CSV && sl_cli_table_rows(t))
        sl_cli_table_print(t, stdout, SL_CLI_OUT_CSV, 0);
}

int sl_cli_finish_output(int code)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        sl_cli_errorf("writing standard output: %s", strerror(errno));
        return code == SL_CLI_OK ? SL_CLI_FAILED : code;
    }
    return code;
}

int sl_cli_arg_special(struct sl_cli_ctx *ctx, int id,
                       const struct sl_error *err)
{
    switch (id) {
    case SL_CLI_ARG_HELP:
        sl_cli_usage(stdout, ctx->cmd);
        return SL_CLI_DONE;
    case SL_CLI_ARG_VERSION:
        printf("sluice %s\n", SLUICE_VERSION);
        return SL_CLI_DONE;
    case SL_CLI_ARG_ERROR:
        return sl_cli_usage_error(err);
    }
    return 0;
}

int sl_cli_parse_simple(struct sl_cli_ctx *ctx, int argc, char **argv,
                        const char **pos, int max, int *npos)
{
    struct sl_cli_parser p;
    struct sl_error err = {{0}, {0}};
    const char *v;
    int id, code;

    *npos = 0;
    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((id = sl_cli_next(&p, NULL, ctx, &v, &err)) != SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, id, &err)))
            return code;
        if (*npos >= max) {
            sl_cli_errorf(
                "%s: unexpected argument '%.64s' (see 'sluice help %s')",
                ctx->cmd->name, v, ctx->cmd->name);
            return SL_CLI_USAGE;
        }
        pos[(*npos)++] = v;
    }
    return SL_CLI_OK;
}

int sl_cli_parse_apply(struct sl_cli_ctx *ctx, int argc, char **argv, const char **path,
                       bool *replace)
{
    /* clang-format off */
    static const struct sl_cli_opt opts[] = {
        /* long name, short, takes a value, id */
        {"file", 'f', true, 1},
        {"replace", '\0', false, 2},
        {NULL, '\0', false, 0},
    };
    /* clang-format on */
    struct sl_cli_parser p;
    struct sl_error err = {{0}, {0}};
    const char *v;
    int id, code;

    *path = NULL;
    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((id = sl_cli_next(&p, opts, ctx, &v, &err)) != SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, id, &err)))
            return code;
        if (id == 1) {
            *path = v;
        } else if (id == 2 && replace) {
            *replace = true;
        } else if (id == 2) {
            sl_cli_errorf("%s: --replace is an option of apply", ctx->cmd->name);
            return SL_CLI_USAGE;
        } else {
            sl_cli_errorf("%s: unexpected argument '%.64s' (use -f FILE)", ctx->cmd->name,
                          v ? v : "");
            return SL_CLI_USAGE;
        }
    }
    if (!*path || !**path) {
        sl_cli_errorf("%s: -f FILE is required ('-' reads standard input)",
                      ctx->cmd->name);
        return SL_CLI_USAGE;
    }
    return SL_CLI_OK;
}

int sl_cli_post_document(struct sl_cli_ctx *ctx, const char *path,
                         const char *api_path, bool json_array_ok, json_t **out)
{
    struct sl_error err = {{0}, {0}};
    const char *type;
    char *buf = NULL;
    size_t len = 0;
    int code;

    *out = NULL;
    if (sl_cli_read_input(path, SL_CLI_MAX_INPUT, &buf, &len, &err) < 0)
        return sl_cli_usage_error(&err);
    if (!(type = sl_cli_doc_type(buf, len, json_array_ok))) {
        sl_cli_errorf("%.200s: empty document",
                      strcmp(path, "-") == 0 ? "standard input" : path);
        free(buf);
        return SL_CLI_USAGE;
    }
    code = sl_cli_call_json(ctx, "POST", api_path, type, buf, len, NULL, out);
    free(buf);
    return code;
}

int sl_cli_print_created(struct sl_cli_ctx *ctx, const json_t *job)
{
    int64_t id;

    if (ctx->output == SL_CLI_OUT_JSON)
        return sl_cli_print_json(job) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
    if (!sl_cli_jint(job, "id", &id)) {
        sl_cli_errorf("the server accepted the job but its answer has no id");
        return SL_CLI_FAILED;
    }
    printf("%lld\n", (long long)id);
    return SL_CLI_OK;
}

/* GET 'path' quietly: the decoded answer, or NULL. */
json_t *sl_cli_get_quiet(struct sl_cli_ctx *ctx, const char *path)
{
    struct sl_client *c;
    struct sl_response r;
    json_t *out = NULL;

    if (sl_cli_client(ctx, &c) != SL_CLI_OK)
        return NULL;
    memset(&r, 0, sizeof(r));
    if (sl_client_request(c, "GET", path, NULL, NULL, 0, &r) == 0 && r.status == 200 && r.body)
        out = json_loadb(r.body, r.len, 0, NULL);
    sl_response_fini(&r);
    return out;
}
