/*
 * export.c - `sluice run --export`: which of the client's environment
 * variables go into the job's spec.env (cli.h).
 *
 * Pure: the environment comes in as an array. ALL leaves out what the
 * executor sets from the job's own account and placement, what belongs to
 * the client's session, and what looks like a credential: a job's spec is
 * stored and shown to whoever may read the job, so a secret is sent only
 * when named (--export NAME or --env).
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "../core/spec.h"

#define EXPORT_NAME_MAX 128       /* spec.env's bound on a name */
#define EXPORT_VALUE_MAX 4096     /* spec.env's bound on a value */
#define EXPORT_BYTES_MAX 65536    /* names and values sent, in all */

/* Names ALL never sends, exactly. */
static const char *const skip_names[] = {
    /* set by the executor from the job's account and placement */
    "HOME", "USER", "LOGNAME", "SHELL", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    /* the client's shell and session */
    "PWD", "OLDPWD", "SHLVL", "_", "DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR", "XDG_SESSION_ID", "XDG_SESSION_TYPE", "XDG_SESSION_CLASS",
    "XDG_SEAT", "XDG_VTNR", "TMUX", "TMUX_PANE", "STY", "WINDOWID", "KRB5CCNAME",
    "GPG_AGENT_INFO", "MAIL",
};

/* Prefixes ALL never sends: Sluice's own (the CLI's SLUICE_TOKEN and
 * SLUICE_SERVER, the executor's SLUICE_*), and the SSH session's
 * (SSH_AUTH_SOCK reaches the user's keys). */
static const char *const skip_prefixes[] = {"SLUICE_", "SSH_"};

/* Words that mark a credential anywhere in a name, in any case. */
static const char *const secret_words[] = {
    "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY", "API_KEY",
    "ACCESS_KEY", "PRIVATE_KEY", "AUTH", "COOKIE",
};

static bool export_name_ok(const char *k, size_t len)
{
    if (len == 0 || len > EXPORT_NAME_MAX || isdigit((unsigned char)k[0]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)k[i]) && k[i] != '_')
            return false;
    return true;
}

bool sl_cli_export_skipped(const char *name)
{
    size_t len = strlen(name);

    for (size_t i = 0; i < SL_ARRAY_LEN(skip_names); i++)
        if (strcmp(name, skip_names[i]) == 0)
            return true;
    for (size_t i = 0; i < SL_ARRAY_LEN(skip_prefixes); i++)
        if (strncmp(name, skip_prefixes[i], strlen(skip_prefixes[i])) == 0)
            return true;
    for (size_t i = 0; i < SL_ARRAY_LEN(secret_words); i++) {
        size_t w = strlen(secret_words[i]);
        for (size_t at = 0; at + w <= len; at++)
            if (strncasecmp(name + at, secret_words[i], w) == 0)
                return true;
    }
    return false;
}

/* The value of 'name' (len bytes) in 'envp', or NULL. */
static const char *export_lookup(char *const *envp, const char *name, size_t len)
{
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
            return *e + len + 1;
    return NULL;
}

/* Add one variable; 'all': a bad one is left out, else refused. */
static int export_put(json_t *env, const char *name, size_t nlen, const char *value, bool all,
               size_t *bytes, struct sl_error *err)
{
    char key[EXPORT_NAME_MAX + 1];
    size_t vlen = strlen(value);
    json_t *s;

    memcpy(key, name, nlen);
    key[nlen] = '\0';
    if (json_object_get(env, key))
        return 0; /* --env gave it: that value wins */
    if (vlen > EXPORT_VALUE_MAX) {
        if (all)
            return 0;
        return sl_errorf(err, -EINVAL,
                         "--export: the value of %s is %zu bytes, more than spec.env's "
                         "%d",
                         key, vlen, EXPORT_VALUE_MAX);
    }
    if (!(s = json_string(value))) {
        if (all)
            return 0;
        return sl_errorf(err, -EINVAL, "--export: the value of %s is not valid UTF-8", key);
    }
    if (json_object_size(env) >= SL_MAX_ENV || *bytes + nlen + vlen > EXPORT_BYTES_MAX) {
        json_decref(s);
        return sl_errorf(err, -EINVAL,
                         "--export%s: more than %d variables or %d bytes for spec.env; "
                         "name the ones the job needs (--export VAR,...) or send none "
                         "(--export NONE)",
                         all ? " ALL" : "", SL_MAX_ENV, EXPORT_BYTES_MAX);
    }
    if (json_object_set_new(env, key, s) < 0)
        return sl_errorf(err, -ENOMEM, "out of memory");
    *bytes += nlen + vlen;
    return 0;
}

int sl_cli_export_env(const char *policy, char *const *envp, json_t *env,
                      struct sl_error *err)
{
    size_t bytes = 0;
    int rc;

    if (!policy || strcmp(policy, "ALL") == 0) {
        for (char *const *e = envp; e && *e; e++) {
            const char *eq = strchr(*e, '=');
            size_t nlen = eq ? (size_t)(eq - *e) : 0;
            char key[EXPORT_NAME_MAX + 1];

            if (!eq || !export_name_ok(*e, nlen))
                continue;
            memcpy(key, *e, nlen);
            key[nlen] = '\0';
            if (sl_cli_export_skipped(key))
                continue;
            if ((rc = export_put(env, *e, nlen, eq + 1, true, &bytes, err)) < 0)
                return rc;
        }
        return 0;
    }
    if (strcmp(policy, "NONE") == 0)
        return 0;
    for (const char *p = policy;;) {
        size_t len = strcspn(p, ",");
        const char *v;

        if (!export_name_ok(p, len))
            return sl_errorf(err, -EINVAL,
                             "--export: must be ALL, NONE or a comma list of variable "
                             "names, got '%.64s'",
                             policy);
        /* named: sent as asked (an unset one is not); the server refuses
         * what the executor reserves */
        if ((v = export_lookup(envp, p, len)) && (rc = export_put(env, p, len, v, false, &bytes, err)) < 0)
            return rc;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}
