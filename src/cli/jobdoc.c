/*
 * jobdoc.c - the job document `sluice run` builds from its flags.
 *
 * Pure. Checks the syntax of each flag (numbers, quantities, durations,
 * KEY=VALUE) and leaves every semantic rule to the server, which validates
 * the document exactly as it validates `sluice submit`. Only the fields the
 * user gave are sent, so the server's defaults apply to the rest, but for
 * two defaults of `run` taken from the context, as sbatch takes them: the
 * job starts in the client's directory (spec.workdir) with the client's
 * environment as --export ALL filters it (spec.env).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli.h"

#include <errno.h>
#include <string.h>

#include "../core/spec.h"

enum {
    O_NAME = 1,
    O_TEAM,
    O_PROJECT,
    O_QUEUE,
    O_GPUS,
    O_GPU_MILLI,
    O_GPU_MODEL,
    O_CPUS,
    O_MEMORY,
    O_TASKS,
    O_PRIORITY,
    O_MAX_RUNTIME,
    O_RETRIES,
    O_IMAGE,
    O_ENV,
    O_TOPOLOGY,
    O_CHDIR,
    O_EXPORT,
    O_DEPENDENCY,
    O_ARRAY,
    O_INTERACTIVE,
    O_TTY,
};

/* clang-format off */
static const struct sl_cli_opt run_opts[] = {
    /* long name, short, takes a value, id */
    {"name", '\0', true, O_NAME},
    {"team", '\0', true, O_TEAM},
    {"project", '\0', true, O_PROJECT},
    {"queue", '\0', true, O_QUEUE},
    {"gpus", '\0', true, O_GPUS},
    {"gpu-milli", '\0', true, O_GPU_MILLI},
    {"gpu-model", '\0', true, O_GPU_MODEL},
    {"cpus", '\0', true, O_CPUS},
    {"memory", '\0', true, O_MEMORY},
    {"tasks", '\0', true, O_TASKS},
    {"priority", '\0', true, O_PRIORITY},
    {"max-runtime", '\0', true, O_MAX_RUNTIME},
    {"retries", '\0', true, O_RETRIES},
    {"image", '\0', true, O_IMAGE},
    {"env", 'e', true, O_ENV},
    {"topology", '\0', true, O_TOPOLOGY},
    {"chdir", '\0', true, O_CHDIR},
    {"export", '\0', true, O_EXPORT},
    {"dependency", 'd', true, O_DEPENDENCY},
    {"array", 'a', true, O_ARRAY},
    {"interactive", 'i', false, O_INTERACTIVE},
    {"tty", 't', false, O_TTY},
    {NULL, '\0', false, 0},
};
/* clang-format on */

/* Values of --topology (SPEC.md section 4). */
static const char *const topologies[] = {"any", "same-node", "same-domain"};

#define MAX_STRING_ARG 1024 /* bytes of a free-text flag value */

static int set_string(json_t *obj, const char *key, const char *flag,
                      const char *v, struct sl_error *err)
{
    if (!*v)
        return sl_errorf(err, -EINVAL, "%s: must not be empty", flag);
    if (strlen(v) > MAX_STRING_ARG)
        return sl_errorf(err, -EINVAL, "%s: longer than %d bytes", flag,
                         MAX_STRING_ARG);
    if (json_object_set_new(obj, key, json_string(v)) < 0)
        return sl_errorf(err, -EINVAL, "%s: not valid UTF-8", flag);
    return 0;
}

static int set_int(json_t *obj, const char *key, int64_t v,
                   struct sl_error *err)
{
    if (json_object_set_new(obj, key, json_integer((json_int_t)v)) < 0)
        return sl_errorf(err, -ENOMEM, "out of memory");
    return 0;
}

/* --gpu-model A100,H100 (repeatable): append each model once. */
static int add_models(json_t *models, const char *v, struct sl_error *err)
{
    const char *p = v;

    for (;;) {
        size_t len = strcspn(p, ",");
        size_t i;
        json_t *m;
        bool dup = false;

        if (len == 0 || len > SL_NAME_MAX)
            return sl_errorf(err, -EINVAL,
                             "--gpu-model: each model must be 1 to %d "
                             "characters, got '%.64s'",
                             SL_NAME_MAX, v);
        json_array_foreach (models, i, m) {
            const char *s = json_string_value(m);
            if (s && strlen(s) == len && strncmp(s, p, len) == 0)
                dup = true;
        }
        if (!dup && json_array_append_new(models, json_stringn(p, len)) < 0)
            return sl_errorf(err, -EINVAL, "--gpu-model: not valid UTF-8");
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

/* --env KEY=VALUE: KEY is a shell variable name; each KEY once. */
static int add_env(json_t *env, const char *v, struct sl_error *err)
{
    const char *eq = strchr(v, '=');
    size_t klen = eq ? (size_t)(eq - v) : 0;
    char key[256];

    if (!eq || klen == 0 || klen >= sizeof(key))
        return sl_errorf(err, -EINVAL, "--env: must be KEY=VALUE, got '%.64s'",
                         v);
    for (size_t i = 0; i < klen; i++) {
        char ch = v[i];
        bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                  ch == '_' || (i > 0 && ch >= '0' && ch <= '9');
        if (!ok)
            return sl_errorf(err, -EINVAL,
                             "--env: '%.*s' is not a variable name "
                             "([A-Za-z_][A-Za-z0-9_]*)",
                             (int)(klen > 64 ? 64 : klen), v);
    }
    memcpy(key, v, klen);
    key[klen] = '\0';
    if (json_object_get(env, key))
        return sl_errorf(err, -EINVAL, "--env: %s given twice", key);
    if (json_object_size(env) >= SL_MAX_ENV)
        return sl_errorf(err, -EINVAL, "--env: at most %d variables",
                         SL_MAX_ENV);
    if (strlen(eq + 1) > 65536)
        return sl_errorf(err, -EINVAL, "--env: value of %s longer than 64 KiB",
                         key);
    if (json_object_set_new(env, key, json_string(eq + 1)) < 0)
        return sl_errorf(err, -EINVAL, "--env: value of %s is not valid UTF-8",
                         key);
    return 0;
}

/* spec.workdir: --chdir DIR (a relative one taken under the current
 * directory), else the current directory; the server normalises it or
 * refuses it. Nothing when the context knows no directory (ctx->cwd NULL)
 * and none was given. */
static int set_workdir(const struct sl_cli_ctx *ctx, const char *dir, json_t *spec,
                       struct sl_error *err)
{
    char path[MAX_STRING_ARG + 2];

    if (dir && !*dir)
        return sl_errorf(err, -EINVAL, "--chdir: must not be empty");
    if (dir && dir[0] == '/')
        return set_string(spec, "workdir", "--chdir", dir, err);
    if (!ctx->cwd && !dir)
        return 0;
    if (!ctx->cwd || !ctx->cwd[0])
        return sl_errorf(err, -EINVAL,
                         "--chdir: the current directory cannot be resolved; give "
                         "--chdir with an absolute path");
    if (!dir)
        return set_string(spec, "workdir", "--chdir", ctx->cwd, err);
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", strcmp(ctx->cwd, "/") ? ctx->cwd : "",
                         dir) >= sizeof(path))
        return sl_errorf(err, -EINVAL, "--chdir: longer than %d bytes", MAX_STRING_ARG);
    return set_string(spec, "workdir", "--chdir", path, err);
}

/* One flag into the document parts. */
static int apply_flag(int id, const char *v, json_t *meta, json_t *spec,
                      json_t *res, json_t *models, json_t *env,
                      struct sl_error *err)
{
    int64_t n;
    int rc;

    switch (id) {
    case O_NAME:
        return set_string(meta, "name", "--name", v, err);
    case O_TEAM:
        return set_string(meta, "team", "--team", v, err);
    case O_PROJECT:
        return set_string(meta, "project", "--project", v, err);
    case O_QUEUE:
        return set_string(spec, "queue", "--queue", v, err);
    case O_PRIORITY:
        return set_string(spec, "priorityClass", "--priority", v, err);
    case O_IMAGE:
        return set_string(spec, "image", "--image", v, err);
    case O_DEPENDENCY:
        return set_string(spec, "dependency", "--dependency", v, err);
    case O_ARRAY:
        return set_string(spec, "array", "--array", v, err);
    case O_GPUS:
        if ((rc =
                 sl_cli_int_arg("--gpus", v, 0, SL_MAX_GPUS_PER_TASK, &n, err)))
            return rc;
        return set_int(res, "gpus", n, err);
    case O_GPU_MILLI:
        if ((rc = sl_cli_int_arg("--gpu-milli", v, 1, 1000, &n, err)))
            return rc;
        return set_int(res, "gpuMilli", n, err);
    case O_GPU_MODEL:
        return add_models(models, v, err);
    case O_CPUS:
        if (sl_parse_cpu_milli(v, &n) < 0 || n <= 0)
            return sl_errorf(err, -EINVAL,
                             "--cpus: must be a CPU amount such as 2, 0.5 or "
                             "250m, got '%.64s'",
                             v);
        /* Whole CPUs go as "cpus", fractions as "cpuMilli": both are job
         * spec fields, and integers need no decimal parsing server-side. */
        json_object_del(res, "cpus");
        json_object_del(res, "cpuMilli");
        if (n % 1000 == 0)
            return set_int(res, "cpus", n / 1000, err);
        return set_int(res, "cpuMilli", n, err);
    case O_MEMORY:
        if (sl_parse_bytes(v, &n) < 0 || n <= 0)
            return sl_errorf(err, -EINVAL,
                             "--memory: must be a quantity such as 4Gi, 512Mi "
                             "or 1G, got '%.64s'",
                             v);
        return set_string(res, "memory", "--memory", v, err);
    case O_TASKS:
        if ((rc = sl_cli_int_arg("--tasks", v, 1, SL_MAX_TASKS, &n, err)))
            return rc;
        return set_int(spec, "tasks", n, err);
    case O_MAX_RUNTIME:
        if (sl_parse_duration_ms(v, &n) < 0 || n <= 0)
            return sl_errorf(err, -EINVAL,
                             "--max-runtime: must be a duration such as 90s, "
                             "2h or 1h30m, got '%.64s'",
                             v);
        return set_string(spec, "maxRuntime", "--max-runtime", v, err);
    case O_RETRIES:
        if ((rc = sl_cli_int_arg("--retries", v, 0, 100, &n, err)))
            return rc;
        return set_int(spec, "retries", n, err);
    case O_ENV:
        return add_env(env, v, err);
    case O_TOPOLOGY:
        for (size_t i = 0; i < SL_ARRAY_LEN(topologies); i++)
            if (strcmp(v, topologies[i]) == 0)
                return set_string(spec, "topology", "--topology", v, err);
        return sl_errorf(err, -EINVAL,
                         "--topology: must be any, same-node or same-domain, "
                         "got '%.64s'",
                         v);
    }
    return sl_errorf(err, -EINVAL, "internal: unknown flag %d", id);
}

int sl_cli_run_doc(struct sl_cli_ctx *ctx, int argc, char **argv, json_t **out, int *attach,
                   struct sl_error *err)
{
    int mode = SL_CLI_ATTACH_NONE;
    json_t *doc = json_object(), *meta = json_object(), *spec = json_object();
    json_t *res = json_object(), *models = json_array(), *env = json_object();
    json_t *cmd = json_array();
    struct sl_cli_parser p;
    bool gpus = false, milli = false;
    const char *v, *chdir_to = NULL, *export = NULL;
    int id, rc = 0;

    if (!doc || !meta || !spec || !res || !models || !env || !cmd) {
        rc = sl_errorf(err, -ENOMEM, "out of memory");
        goto out;
    }
    sl_cli_parser_init(&p, argc, argv, 1, true);
    while ((id = sl_cli_next(&p, run_opts, ctx, &v, err)) != SL_CLI_ARG_END) {
        if (id == SL_CLI_ARG_HELP || id == SL_CLI_ARG_VERSION) {
            rc = id;
            goto out;
        }
        if (id == SL_CLI_ARG_ERROR) {
            rc = -EINVAL;
            goto out;
        }
        if (id == SL_CLI_ARG_POS) {
            if (json_array_size(cmd) >= SL_MAX_ARGS) {
                rc = sl_errorf(err, -EINVAL, "command: at most %d arguments",
                               SL_MAX_ARGS);
                goto out;
            }
            if (json_array_append_new(cmd, json_string(v)) < 0) {
                rc = sl_errorf(err, -EINVAL,
                               "command: argument %zu is not valid UTF-8",
                               json_array_size(cmd) + 1);
                goto out;
            }
            continue;
        }
        if (id == O_INTERACTIVE || id == O_TTY) {
            if (id == O_TTY || mode == SL_CLI_ATTACH_NONE)
                mode = id == O_TTY ? SL_CLI_ATTACH_TTY : SL_CLI_ATTACH_PIPE;
            continue;
        }
        if (id == O_CHDIR || id == O_EXPORT) { /* the last one counts */
            *(id == O_CHDIR ? &chdir_to : &export) = v;
            continue;
        }
        gpus |= id == O_GPUS;
        milli |= id == O_GPU_MILLI;
        if ((rc = apply_flag(id, v, meta, spec, res, models, env, err)) < 0)
            goto out;
    }
    if (gpus && milli) {
        rc = sl_errorf(err, -EINVAL,
                       "--gpus and --gpu-milli: give one, not both");
        goto out;
    }
    if (json_array_size(cmd) == 0) {
        rc = sl_errorf(
            err, -EINVAL,
            "run: missing command (sluice run [FLAGS] -- CMD ARGS...)");
        goto out;
    }
    /* after --env, whose values win */
    if ((rc = set_workdir(ctx, chdir_to, spec, err)) < 0 ||
        (rc = sl_cli_export_env(export, ctx->envp, env, err)) < 0)
        goto out;
    if (mode != SL_CLI_ATTACH_NONE) {
        /* The task's terminal is of the client's kind. */
        const char *term = NULL;
        for (char *const *e = ctx->envp; e && *e && !term; e++)
            if (strncmp(*e, "TERM=", 5) == 0)
                term = *e + 5;
        if (json_object_set_new(spec, "interactive", json_true()) < 0 ||
            (term && *term && !json_object_get(env, "TERM") &&
             json_object_set_new(env, "TERM", json_string(term)) < 0))
            goto nomem;
    }
    if (attach)
        *attach = mode;
    if (json_array_size(models) &&
        json_object_set(res, "gpuModels", models) < 0)
        goto nomem;
    if (json_object_set(spec, "command", cmd) < 0 ||
        (json_object_size(env) && json_object_set(spec, "env", env) < 0) ||
        (json_object_size(res) &&
         json_object_set(spec, "resources", res) < 0) ||
        json_object_set_new(doc, "apiVersion", json_string("sluice/v1")) < 0 ||
        json_object_set_new(doc, "kind", json_string("Job")) < 0 ||
        json_object_set(doc, "metadata", meta) < 0 ||
        json_object_set(doc, "spec", spec) < 0)
        goto nomem;
    *out = doc;
    doc = NULL;
    goto out;
nomem:
    rc = sl_errorf(err, -ENOMEM, "out of memory");
out:
    json_decref(doc);
    json_decref(meta);
    json_decref(spec);
    json_decref(res);
    json_decref(models);
    json_decref(env);
    json_decref(cmd);
    return rc;
}
