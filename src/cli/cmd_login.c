/*
 * cmd_login.c - `sluice login [--user NAME] [--password-stdin] [--print]`:
 * sign in through the server's LDAP or Active Directory (docs/identity.md)
 * and keep the short-lived token it gives in the login token file
 * (sl_cli_login_token_path), which later commands read when no other token
 * is given. The password is read from the terminal without echo, or from
 * the first line of standard input with --password-stdin; never from
 * the command line. `sluice login --refresh`: the groups read again and
 * the saved token replaced.
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

enum { O_USER = 1, O_PASSWORD_STDIN, O_PRINT, O_REFRESH };

/* clang-format off */
static const struct sl_cli_opt login_opts[] = {
    /* long name, short, takes a value, id */
    {"user", 'u', true, O_USER},
    {"password-stdin", '\0', false, O_PASSWORD_STDIN},
    {"print", '\0', false, O_PRINT},
    {"refresh", '\0', false, O_REFRESH},
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

int sl_cli_cmd_login(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_cli_parser p;
    struct sl_error err = {.text = ""};
    const char *v, *user = NULL, *token;
    bool from_stdin = false, print = false, refresh = false;
    char name[128], password[256], path[1024];
    json_t *body = NULL, *ans = NULL;
    char *text = NULL;
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
    body = json_pack("{s:s, s:s}", "user", name, "password", password);
    sodium_memzero(password, sizeof(password));
    text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body) {
        json_t *pw = json_object_get(body, "password");
        sodium_memzero((char *)json_string_value(pw), json_string_length(pw));
    }
    json_decref(body);
    if (!text) {
        sl_cli_errorf("out of memory");
        return SL_CLI_FAILED;
    }
    code = sl_cli_call_json(ctx, "POST", "/v1/login", "application/json", text, strlen(text),
                            "login", &ans);
    sodium_memzero(text, strlen(text));
    free(text);
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
