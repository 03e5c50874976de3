/*
 * cmd_login.c - `sluice login [--user NAME] [--password-stdin] [--print]`:
 * sign in through the server's LDAP or Active Directory (docs/identity.md)
 * and keep the short-lived token it gives in the login token file
 * (sl_cli_login_token_path), which later commands read when no other token
 * is given. The password is read from the terminal without echo, or from
 * the first line of standard input with --password-stdin; never from
 * the command line. `sluice login --refresh`: the groups read again and
 * the saved token replaced.
 *
 * `sluice login --oidc`: the OIDC device flow (RFC 8628) through the
 * server, which is the provider's client: POST /v1/login/device gives a
 * code to show the user with the address to enter it at, then POST
 * /v1/login {"device_code"} is polled at the interval the answer names
 * (5 s more after each slow_down) until the user approved or the code
 * expired. `sluice login --id-token-stdin`: a token the provider issued
 * (a CI system's, say) exchanged for a Sluice token.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <sodium.h>

enum { O_USER = 1, O_PASSWORD_STDIN, O_PRINT, O_REFRESH, O_OIDC, O_ID_TOKEN_STDIN };

/* clang-format off */
static const struct sl_cli_opt login_opts[] = {
    /* long name, short, takes a value, id */
    {"user", 'u', true, O_USER},
    {"password-stdin", '\0', false, O_PASSWORD_STDIN},
    {"print", '\0', false, O_PRINT},
    {"refresh", '\0', false, O_REFRESH},
    {"oidc", '\0', false, O_OIDC},
    {"id-token-stdin", '\0', false, O_ID_TOKEN_STDIN},
    {NULL, '\0', false, 0},
};
/* clang-format on */

int sl_cli_login_token_path(char *buf, size_t size)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    int n;

    if (xdg && xdg[0] == '/')
        n = snprintf(buf, size, "%s/sluice/token", xdg);
    else if (home && home[0] == '/')
        n = snprintf(buf, size, "%s/.config/sluice/token", home);
    else
        return -ENOENT;
    return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

/* One line from fd into buf (no newline); false on EOF before any byte,
 * an error, or a line too long. */
static bool read_line(int fd, char *buf, size_t size)
{
    size_t n = 0;
    char c;
    ssize_t r;

    while ((r = read(fd, &c, 1)) != 0) {
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        if (c == '\n')
            break;
        if (n + 1 >= size)
            return false;
        buf[n++] = c;
    }
    if (n && buf[n - 1] == '\r')
        n--;
    buf[n] = '\0';
    return r != 0 || n > 0;
}

/* Ask on the terminal; without echo when 'secret'. */
static bool prompt(const char *what, bool secret, char *buf, size_t size)
{
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
    struct termios old, quiet;
    bool ok, echo_off = false;

    if (fd < 0)
        return false;
    if (write(fd, what, strlen(what)) < 0) {
        close(fd);
        return false;
    }
    if (secret && tcgetattr(fd, &old) == 0) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
        echo_off = tcsetattr(fd, TCSAFLUSH, &quiet) == 0;
    }
    ok = read_line(fd, buf, size);
    if (echo_off) {
        ssize_t w;
        tcsetattr(fd, TCSAFLUSH, &old);
        w = write(fd, "\n", 1); /* the newline the user typed did not echo */
        (void)w;
    }
    close(fd);
    return ok;
}

/* Write the token to the login token file, private (0600 in a 0700
 * directory) whatever the umask. */
static int save_token(const char *token, char *path, size_t size)
{
    char dir[1024];
    char *slash;
    int rc;

    if ((rc = sl_cli_login_token_path(path, size)) < 0) {
        sl_cli_errorf("login: no HOME or XDG_CONFIG_HOME to keep the token in; use --print");
        return SL_CLI_FAILED;
    }
    sl_strlcpy(dir, path, sizeof(dir));
    if ((slash = strrchr(dir, '/')))
        *slash = '\0';
    if ((rc = sl_mkdir_p(dir, 0700)) < 0 || chmod(dir, 0700) < 0) {
        sl_cli_errorf("login: %s: %s", dir, strerror(rc < 0 ? -rc : errno));
        return SL_CLI_FAILED;
    }
    if ((rc = sl_write_file_atomic(path, token, strlen(token), 0600)) < 0) {
        sl_cli_errorf("login: %s: %s", path, strerror(-rc));
        return SL_CLI_FAILED;
    }
    return SL_CLI_OK;
}

/* POST /v1/login with {"field": value}, and "user" when not NULL; value
 * and every copy of it are wiped. */
static int post_secret(struct sl_cli_ctx *ctx, const char *user, const char *field,
                       char *value, json_t **ans)
{
    json_t *body = user ? json_pack("{s:s, s:s}", "user", user, field, value)
                        : json_pack("{s:s}", field, value);
    char *text;
    int code;

    sodium_memzero(value, strlen(value));
    text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body) {
        json_t *v = json_object_get(body, field);
        sodium_memzero((char *)json_string_value(v), json_string_length(v));
    }
    json_decref(body);
    if (!text) {
        sl_cli_errorf("out of memory");
        return SL_CLI_FAILED;
    }
    code = sl_cli_call_json(ctx, "POST", "/v1/login", "application/json", text, strlen(text),
                            "login", ans);
    sodium_memzero(text, strlen(text));
    free(text);
    return code;
}

/* The device flow: the code shown on standard error (standard output
 * may be the token's, with --print), then polled until approved, denied
 * or expired. */
static int device_flow(struct sl_cli_ctx *ctx, json_t **ans)
{
    json_t *start = NULL;
    const char *uri, *full, *user_code, *dc;
    char code_buf[1100];
    int64_t interval, deadline;
    int code;

    code = sl_cli_call_json(ctx, "POST", "/v1/login/device", NULL, NULL, 0, "login", &start);
    if (code != SL_CLI_OK)
        return code;
    uri = sl_cli_jstr(start, "verification_uri");
    full = sl_cli_jstr(start, "verification_uri_complete");
    user_code = sl_cli_jstr(start, "user_code");
    dc = sl_cli_jstr(start, "device_code");
    interval = json_integer_value(json_object_get(start, "interval"));
    deadline = sl_mono_ms() + 1000 * json_integer_value(json_object_get(start, "expires_in"));
    if (!uri || !user_code || !dc || strlen(dc) >= sizeof(code_buf) || interval < 1) {
        sl_cli_errorf("login: the server's device authorization answer is incomplete");
        json_decref(start);
        return SL_CLI_FAILED;
    }
    sl_strlcpy(code_buf, dc, sizeof(code_buf));
    fprintf(stderr, "To sign in, open %s and enter the code %s\n", uri, user_code);
    if (full)
        fprintf(stderr, "(or open %s)\n", full);
    fprintf(stderr, "Waiting for the sign-in to be approved...\n");
    json_decref(start);
    for (;;) {
        char dc_copy[sizeof(code_buf)];
        if (sl_mono_ms() + interval * 1000 > deadline) {
            sodium_memzero(code_buf, sizeof(code_buf));
            sl_cli_errorf("login: the code expired before the sign-in was approved; run "
                          "sluice login --oidc again");
            return SL_CLI_FAILED;
        }
        sleep((unsigned)interval);
        sl_strlcpy(dc_copy, code_buf, sizeof(dc_copy));
        code = post_secret(ctx, NULL, "device_code", dc_copy, ans);
        if (code != SL_CLI_OK || !json_is_true(json_object_get(*ans, "pending")))
            break;
        if (json_is_true(json_object_get(*ans, "slow_down")))
            interval += 5; /* RFC 8628 section 3.5 */
        json_decref(*ans);
        *ans = NULL;
    }
    sodium_memzero(code_buf, sizeof(code_buf));
    return code;
}

int sl_cli_cmd_login(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_cli_parser p;
    struct sl_error err = {.text = ""};
    const char *v, *user = NULL, *token;
    bool from_stdin = false, print = false, refresh = false, oidc = false, id_stdin = false;
    char name[128], password[256], path[1024];
    json_t *ans = NULL;
    int id, code;

    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((id = sl_cli_next(&p, login_opts, ctx, &v, &err)) != SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, id, &err)))
            return code;
        if (id == SL_CLI_ARG_POS) {
            sl_cli_errorf("login: unexpected argument '%.64s'", v);
            return SL_CLI_USAGE;
        }
        if (id == O_USER)
            user = v;
        else if (id == O_PASSWORD_STDIN)
            from_stdin = true;
        else if (id == O_PRINT)
            print = true;
        else if (id == O_REFRESH)
            refresh = true;
        else if (id == O_OIDC)
            oidc = true;
        else if (id == O_ID_TOKEN_STDIN)
            id_stdin = true;
    }
    if ((oidc || id_stdin) && (user || from_stdin || refresh || (oidc && id_stdin))) {
        sl_cli_errorf("login: --%s takes none of --user, --password-stdin, --refresh%s",
                      oidc ? "oidc" : "id-token-stdin", oidc ? ", --id-token-stdin" : "");
        return SL_CLI_USAGE;
    }
    if (oidc) {
        code = device_flow(ctx, &ans);
        goto answer;
    }
    if (id_stdin) {
        /* a JWS is at most 16 KiB (the server's limit) */
        char *jwt = malloc(16 * 1024 + 2);
        if (!jwt) {
            sl_cli_errorf("out of memory");
            return SL_CLI_FAILED;
        }
        if (!read_line(STDIN_FILENO, jwt, 16 * 1024 + 2) || !jwt[0]) {
            free(jwt);
            sl_cli_errorf("login: no token on standard input (one line, at most 16 KiB)");
            return SL_CLI_USAGE;
        }
        code = post_secret(ctx, NULL, "id_token", jwt, &ans);
        free(jwt);
        goto answer;
    }
    if (refresh) {
        if (user || from_stdin) {
            sl_cli_errorf("login: --refresh takes no --user or --password-stdin: it "
                          "renews the token in use");
            return SL_CLI_USAGE;
        }
        code = sl_cli_call_json(ctx, "POST", "/v1/login/refresh", NULL, NULL, 0, "login",
                                &ans);
        goto answer;
    }
    if (user) {
        sl_strlcpy(name, user, sizeof(name));
    } else if (!prompt("User: ", false, name, sizeof(name)) || !name[0]) {
        sl_cli_errorf("login: no user name: give --user NAME (no terminal to ask on)");
        return SL_CLI_USAGE;
    }
    if (from_stdin ? !read_line(STDIN_FILENO, password, sizeof(password))
                   : !prompt("Password: ", true, password, sizeof(password))) {
        sodium_memzero(password, sizeof(password));
        sl_cli_errorf(from_stdin ? "login: no password on standard input"
                                 : "login: no terminal to ask the password on: use "
                                   "--password-stdin");
        return SL_CLI_USAGE;
    }
    code = post_secret(ctx, name, "password", password, &ans);
    sodium_memzero(password, sizeof(password));
answer:
    if (code != SL_CLI_OK)
        return code;
    if (!(token = sl_cli_jstr(ans, "token")) || !*token) {
        sl_cli_errorf("login: the server's answer holds no token");
        json_decref(ans);
        return SL_CLI_FAILED;
    }
    if (print) {
        printf("%s\n", token);
    } else if ((code = save_token(token, path, sizeof(path))) == SL_CLI_OK) {
        if (ctx->output == SL_CLI_OUT_JSON) {
            json_object_del(ans, "token");
            json_object_set_new(ans, "saved_to", json_string(path));
            code = sl_cli_print_json(ans) < 0 ? SL_CLI_FAILED : SL_CLI_OK;
        } else {
            printf("signed in as %s (team %s, role %s) until %s; token saved to %s\n",
                   sl_cli_jstr(ans, "user"), sl_cli_jstr(ans, "team"),
                   sl_cli_jstr(ans, "role"), sl_cli_jstr(ans, "expires_at"), path);
        }
    }
    {
        json_t *t = json_object_get(ans, "token");
        if (t)
            sodium_memzero((char *)json_string_value(t), json_string_length(t));
    }
    json_decref(ans);
    return code;
}
