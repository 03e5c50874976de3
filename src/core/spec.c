/*
 * spec.c - validation of the job spec (SPEC.md section 4): metadata and
 * labels, the command and environment, resources, topology, checkpoint,
 * datasets, network and code. See spec.h; the field readers are in
 * fields.c, the normalised document in normalise.c.
 *
 * Validation is complete and stops at the first fault, which it names by
 * its full path ("spec.command[2]") and a reason that quotes the bad value
 * when short. Unknown fields are errors.
 *
 * Invariant: a struct sl_job_spec that leaves this file satisfies every
 * bound in spec.h.
 */
#include "spec_int.h"
#include "array.h"
#include "depend.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMAGE_MAX 512
#define ARG_MAX_BYTES 4096
#define ENV_VALUE_MAX 4096
#define LABELS_MAX 64
#define LABEL_KEY_MAX 63
#define LABEL_VALUE_MAX 256
#define GPU_MODELS_MAX 16
#define DATASETS_MAX 64
#define DATASET_VERSION_MAX 63
#define RUNTIME_MS_MAX (3650LL * 86400 * 1000)   /* 10 years */
#define GRACE_MS_MAX (86400LL * 1000)            /* 1 day */
#define RETRIES_MAX 100
#define WORKDIR_MAX 1024
#define DEFAULT_CPU_MILLI 1000
#define DEFAULT_MEM_BYTES (1LL << 30)
#define DEFAULT_GRACE_MS 30000

/* Environment variables the executor sets for every task: {name, what,
 * prefix}; a prefix row reserves every name that starts with 'name'. */
static const struct {
    const char *name;
    const char *what;
    bool prefix;
} reserved_env[] = {
    {"SLUICE_JOB_ID", "the job id", false},
    {"SLUICE_TASK_INDEX", "the task index", false},
    {"SLUICE_ATTEMPT", "the attempt number", false},
    {"SLUICE_ARRAY_JOB_ID", "the job array's id", false},
    {"SLUICE_ARRAY_INDEX", "the job array element's index", false},
    {"SLUICE_ARRAY_TASK_COUNT", "the job array's element count", false},
    {"CUDA_VISIBLE_DEVICES", "the GPUs placed for the task", false},
    {"NVIDIA_VISIBLE_DEVICES", "the GPUs placed for the task", false},
    {"SLUICE_GPUS", "the GPUs placed for the task", false},
    {"CUDA_DEVICE_ORDER", "the GPUs' numbering (PCI bus order)", false},
    {"SLUICE_DATASETS", "the job's datasets", false},
    {"SLUICE_TOKEN", "the job's own API token", false},
    {"SLUICE_SERVER", "the API's address", false},
    {"SLUICE_DATASET_", "a dataset's path or mode", true},
};

/* Allowed keys of each object, NULL-terminated. */
static const char *const job_meta_keys[] = {"name", "team", "project",
                                            "labels", NULL};
static const char *const job_spec_keys[] = {
    "queue",      "priorityClass", "image",   "command",
    "env",        "tasks",         "resources", "topology",
    "maxRuntime", "retries",       "checkpoint", "datasets",
    "network",    "code",          "workdir", "dependency", "array", "interactive", NULL};
static const char *const code_keys[] = {"repo", "commit", NULL};
static const char *const resources_keys[] = {"gpus", "gpuMilli", "gpuModels",
                                             "cpus", "cpuMilli", "memory",
                                             NULL};
static const char *const checkpoint_keys[] = {"signal", "grace", NULL};

/* ---- item rules ---- */

static int check_arg(const json_t *e, const char *path, struct sl_error *err)
{
    if (json_string_length(e) > ARG_MAX_BYTES)
        return sl_spec_fail(err, path, "must be at most %d bytes, got %zu",
                            ARG_MAX_BYTES, json_string_length(e));
    return 0;
}

static int check_gpu_model(const json_t *e, const char *path,
                           struct sl_error *err)
{
    if (!sl_spec_gpu_model_valid(json_string_value(e)))
        return sl_spec_fail_got(err, path,
                                "1 to 47 characters of A-Z, a-z, 0-9, '.', '_' and '-'",
                                e);
    return 0;
}

static int check_dataset(const json_t *e, const char *path,
                         struct sl_error *err)
{
    const char *s = json_string_value(e), *at = strchr(s, '@');
    char name[SL_NAME_MAX + 2];

    if (at && (size_t)(at - s) <= SL_NAME_MAX) {
        memcpy(name, s, (size_t)(at - s));
        name[at - s] = '\0';
        const char *ver = at + 1, *mode = strchr(ver, ':');
        char v[DATASET_VERSION_MAX + 2];
        size_t vn = mode ? (size_t)(mode - ver) : strlen(ver);
        if (vn <= DATASET_VERSION_MAX && (!mode || strcmp(mode, ":rw") == 0)) {
            memcpy(v, ver, vn);
            v[vn] = '\0';
            if (sl_name_valid(name) && sl_spec_all_chars(v, 1, DATASET_VERSION_MAX, "._-"))
                return 0;
        }
    }
    return sl_spec_fail_got(err, path,
                            "\"name@version\" or \"name@version:rw\" (name: a-z, 0-9, '-'; "
                            "version: 1 to 63 of A-Z, a-z, 0-9, '.', '_', '-')",
                            e);
}

/* spec.code: {repo: URL, commit: hex}, for lineage. */
static int parse_code(const json_t *code, struct sl_job_spec *s, struct sl_error *err)
{
    const json_t *repo, *commit;
    int rc;

    if (!code)
        return 0;
    if ((rc = sl_spec_check_object(code, "spec.code", code_keys, err)) < 0)
        return rc;
    repo = sl_spec_member(code, "repo");
    commit = sl_spec_member(code, "commit");
    if (!json_is_string(repo) || json_string_length(repo) == 0 ||
        json_string_length(repo) > 512 || !sl_text_printable(json_string_value(repo)))
        return sl_spec_fail(err, "spec.code.repo",
                            "is required: the repository's URL, at most 512 printable characters");
    if (!json_is_string(commit) || json_string_length(commit) < 7 ||
        json_string_length(commit) > 64 ||
        !sl_spec_all_chars(json_string_value(commit), 7, 64, "") ||
        strspn(json_string_value(commit), "0123456789abcdef") != json_string_length(commit))
        return sl_spec_fail(err, "spec.code.commit",
                            "is required: the commit, 7 to 64 lowercase hex digits");
    if (!(s->code_repo = strdup(json_string_value(repo))) ||
        !(s->code_commit = strdup(json_string_value(commit))))
        return sl_spec_oom(err);
    return 0;
}

static bool ascii_only(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return false;
    return true;
}

/* ---- the job spec ---- */

static char *dup_json_string(const json_t *v)
{
    return strndup(json_string_value(v), json_string_length(v));
}

/* A new NULL-terminated copy of the strings of array 'a' (may be NULL). */
static char **dup_string_array(const json_t *a, int *n)
{
    size_t count = a ? json_array_size(a) : 0;
    char **v = calloc(count + 1, sizeof(*v));

    if (!v)
        return NULL;
    for (size_t i = 0; i < count; i++) {
        if (!(v[i] = dup_json_string(json_array_get(a, i)))) {
            for (size_t k = 0; k < i; k++)
                free(v[k]);
            free(v);
            return NULL;
        }
    }
    *n = (int)count;
    return v;
}

static void free_strv(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

void sl_job_spec_destroy(struct sl_job_spec *spec)
{
    int saved = errno;

    if (spec) {
        json_decref(spec->labels);
        free(spec->image);
        free_strv(spec->argv);
        free_strv(spec->env);
        free_strv(spec->gpu_models);
        free_strv(spec->datasets);
        free(spec->code_repo);
        free(spec->code_commit);
        free(spec->workdir);
        free(spec->dependency);
        free(spec->array);
        free(spec);
    }
    errno = saved;
}

static int parse_metadata(const json_t *doc, struct sl_job_spec *s,
                          struct sl_error *err)
{
    const json_t *meta = sl_spec_member(doc, "metadata"), *labels;
    const char *k;
    json_t *e;
    int rc;

    if (!meta)
        return 0;
    if ((rc = sl_spec_check_object(meta, "metadata", job_meta_keys, err)) < 0)
        return rc;
    if ((rc = sl_spec_get_name(meta, "name", "metadata", s->name, false, err)) < 0 ||
        (rc = sl_spec_get_name(meta, "team", "metadata", s->team, false, err)) < 0 ||
        (rc = sl_spec_get_name(meta, "project", "metadata", s->project, false, err)) < 0)
        return rc;
    if (!(labels = sl_spec_member(meta, "labels")))
        return 0;
    if (!json_is_object(labels))
        return sl_spec_fail_got(err, "metadata.labels", "an object of strings", labels);
    if (json_object_size(labels) > LABELS_MAX)
        return sl_spec_fail(err, "metadata.labels",
                            "must have at most %d labels, got %zu", LABELS_MAX,
                            json_object_size(labels));
    json_object_foreach((json_t *)labels, k, e)
    {
        char p[PATH_MAX_LEN];

        sl_spec_path_key(p, "metadata.labels", k);
        if (!ascii_only(k) || !sl_spec_all_chars(k, 1, LABEL_KEY_MAX, "._/-"))
            return sl_spec_fail(err, p,
                                "label keys must be 1 to 63 characters of A-Z, a-z, "
                                "0-9, '.', '_', '/' and '-'");
        if (!json_is_string(e))
            return sl_spec_fail_got(err, p, "a string", e);
        if (strlen(json_string_value(e)) != json_string_length(e))
            return sl_spec_fail(err, p, "must not contain NUL bytes");
        if (!sl_text_printable(json_string_value(e)))
            /* shown by sluice show and in reports: no terminal escapes,
             * no line breaks that fake another line */
            return sl_spec_fail(err, p, "must not contain control characters");
        if (json_string_length(e) > LABEL_VALUE_MAX)
            return sl_spec_fail(err, p, "must be at most %d bytes, got %zu",
                                LABEL_VALUE_MAX, json_string_length(e));
        if (json_object_set_new(s->labels, k, json_string(json_string_value(e))) < 0)
            return sl_spec_oom(err);
    }
    return 0;
}

static int parse_env(const json_t *spec, struct sl_job_spec *s,
                     struct sl_error *err)
{
    const json_t *env = sl_spec_member(spec, "env");
    const char *k;
    json_t *e;
    int n = 0;

    if (env && !json_is_object(env))
        return sl_spec_fail_got(err, "spec.env", "an object of strings", env);
    if (env && json_object_size(env) > SL_MAX_ENV)
        return sl_spec_fail(err, "spec.env", "must have at most %d variables, got %zu",
                            SL_MAX_ENV, json_object_size(env));
    /* Exactly as many slots as variables: a pending job keeps its spec. */
    if (!(s->env = calloc((env ? json_object_size(env) : 0) + 1, sizeof(*s->env))))
        return sl_spec_oom(err);
    if (!env)
        return 0;
    json_object_foreach((json_t *)env, k, e)
    {
        char p[PATH_MAX_LEN];
        size_t klen = strlen(k), vlen;

        sl_spec_path_key(p, "spec.env", k);
        if (klen == 0 || klen > ENV_KEY_MAX || !ascii_only(k) ||
            isdigit((unsigned char)k[0]) || !sl_spec_all_chars(k, 1, ENV_KEY_MAX, "_"))
            return sl_spec_fail(err, p,
                                "variable names must match [A-Za-z_][A-Za-z0-9_]* "
                                "(at most %d characters)",
                                ENV_KEY_MAX);
        for (size_t i = 0; i < SL_ARRAY_LEN(reserved_env); i++)
            if (reserved_env[i].prefix
                    ? strncmp(k, reserved_env[i].name,
                              strlen(reserved_env[i].name)) == 0
                    : strcmp(k, reserved_env[i].name) == 0)
                return sl_spec_fail(err, p,
                                    "is set by the executor to %s and cannot be "
                                    "overridden",
                                    reserved_env[i].what);
        if (!json_is_string(e)) {
            char got[64];
            return sl_spec_fail(err, p, "must be a string, got %s%s",
                                sl_spec_describe(e, got, sizeof(got)),
                                json_is_number(e) || json_is_boolean(e)
                                    ? " (quote it)"
                                    : "");
        }
        vlen = json_string_length(e);
        if (strlen(json_string_value(e)) != vlen)
            return sl_spec_fail(err, p, "must not contain NUL bytes");
        if (vlen > ENV_VALUE_MAX)
            return sl_spec_fail(err, p, "must be at most %d bytes, got %zu",
                                ENV_VALUE_MAX, vlen);
        if (!(s->env[n] = malloc(klen + vlen + 2)))
            return sl_spec_oom(err);
        memcpy(s->env[n], k, klen);
        s->env[n][klen] = '=';
        memcpy(s->env[n] + klen + 1, json_string_value(e), vlen + 1);
        n++;
    }
    s->envc = n;
    return 0;
}

/* spec.dependency: Slurm's syntax (src/core/depend.h), kept normalised. */
static int parse_dependency(const json_t *spec, struct sl_job_spec *s, struct sl_error *err)
{
    struct sl_depend d;
    const json_t *v;
    char text[SL_DEP_TEXT_MAX];
    int rc;

    if ((rc = sl_spec_get_string(spec, "dependency", "spec", 4096, &v, err)) < 0 || !v)
        return rc;
    if ((rc = sl_depend_parse(json_string_value(v), &d, err)) < 0)
        return rc;
    if (sl_depend_format(&d, text, sizeof(text)) < 0)
        return sl_spec_fail(err, "spec.dependency", "too long");
    if (!(s->dependency = strdup(text)))
        return sl_spec_oom(err);
    return 0;
}

/* spec.array: Slurm's --array syntax (src/core/array.h), kept as written. */
static int parse_array(const json_t *spec, struct sl_job_spec *s, struct sl_error *err)
{
    struct sl_array *a;
    const json_t *v;
    int rc;

    if ((rc = sl_spec_get_string(spec, "array", "spec", SL_ARRAY_TEXT_MAX - 1, &v, err)) < 0 ||
        !v)
        return rc;
    if (!(a = malloc(sizeof(*a))))
        return sl_spec_oom(err);
    rc = sl_array_parse(json_string_value(v), a, err);
    free(a);
    if (rc < 0)
        return rc;
    if (!(s->array = strdup(json_string_value(v))))
        return sl_spec_oom(err);
    return 0;
}

/* spec.interactive: a terminal a person attaches to, so one task, once:
 * not a gang (which terminal?) nor an array (many sessions at once). */
static int parse_interactive(const json_t *spec, struct sl_job_spec *s, struct sl_error *err)
{
    int rc;

    if ((rc = sl_spec_get_bool(spec, "interactive", "spec", &s->interactive, err)) < 0 ||
        !s->interactive)
        return rc;
    if (s->tasks != 1)
        return sl_spec_fail(err, "spec.interactive",
                            "an interactive job has one task, got tasks: %d", s->tasks);
    if (s->array)
        return sl_spec_fail(err, "spec.interactive", "an array cannot be interactive");
    return 0;
}

/* spec.workdir: an absolute path, kept normalised (a repeated '/', "."
 * and a trailing '/' dropped) so that one directory has one spelling.
 * ".." is refused: what it names depends on the links on the way, which
 * only the node knows. */
static int parse_workdir(const json_t *spec, struct sl_job_spec *s,
                         struct sl_error *err)
{
    const json_t *v;
    const char *in, *c;
    char *out;
    size_t n = 0;
    int rc;

    if ((rc = sl_spec_get_string(spec, "workdir", "spec", WORKDIR_MAX, &v, err)) < 0 || !v)
        return rc;
    in = json_string_value(v);
    if (in[0] != '/')
        return sl_spec_fail_got(err, "spec.workdir", "an absolute path", v);
    for (c = in; *c; c++)
        if (iscntrl((unsigned char)*c))
            return sl_spec_fail(err, "spec.workdir", "must not contain control characters");
    if (!(out = malloc(strlen(in) + 1)))
        return sl_spec_oom(err);
    for (c = in; *c;) {
        size_t len;

        while (*c == '/')
            c++;
        len = strcspn(c, "/");
        if (len == 2 && c[0] == '.' && c[1] == '.') {
            free(out);
            return sl_spec_fail(err, "spec.workdir",
                                "must not contain \"..\" (what it names depends on "
                                "symbolic links): give the directory itself");
        }
        if (len > 0 && !(len == 1 && c[0] == '.')) {
            out[n++] = '/';
            memcpy(out + n, c, len);
            n += len;
        }
        c += len;
    }
    if (n == 0)
        out[n++] = '/';
    out[n] = '\0';
    s->workdir = out;
    return 0;
}

static int parse_resources(const json_t *spec, struct sl_job_spec *s,
                           struct sl_error *err)
{
    const char *P = "spec.resources";
    const json_t *r = sl_spec_member(spec, "resources"), *models, *cpus, *mem;
    int64_t gpus = 0, milli = 0, cpu_milli = 0;
    bool has_milli = false, has_cpu_milli = false;
    int rc;

    s->cpu_milli = DEFAULT_CPU_MILLI;
    s->mem_bytes = DEFAULT_MEM_BYTES;
    if (!(s->gpu_models = calloc(1, sizeof(*s->gpu_models))))
        return sl_spec_oom(err);
    if (!r)
        return 0;
    if ((rc = sl_spec_check_object(r, P, resources_keys, err)) < 0)
        return rc;
    if ((rc = sl_spec_get_int(r, "gpus", P, 0, SL_MAX_GPUS_PER_TASK, &gpus, NULL,
                              err)) < 0 ||
        (rc = sl_spec_get_int(r, "gpuMilli", P, 1, 1000, &milli, &has_milli, err)) < 0)
        return rc;
    if (has_milli && gpus > 0)
        return sl_spec_fail(err, "spec.resources.gpuMilli",
                            "cannot be combined with gpus > 0 (got gpus %" PRId64
                            "): ask for whole GPUs or a fraction of one",
                            gpus);
    s->gpus = (int)gpus;
    s->gpu_milli = (int)milli;
    if ((rc = sl_spec_get_string_array(r, "gpuModels", P, GPU_MODELS_MAX,
                                       check_gpu_model, &models, err)) < 0)
        return rc;
    if (models) {
        free(s->gpu_models);
        if (!(s->gpu_models = dup_string_array(models, &s->n_gpu_models)))
            return sl_spec_oom(err);
    }
    if ((cpus = sl_spec_member(r, "cpus")) &&
        (rc = sl_spec_parse_cpus(cpus, "spec.resources.cpus", 1, &s->cpu_milli, err)) < 0)
        return rc;
    if ((rc = sl_spec_get_int(r, "cpuMilli", P, 1, CPU_MILLI_MAX, &cpu_milli,
                              &has_cpu_milli, err)) < 0)
        return rc;
    if (has_cpu_milli) {
        if (cpus)
            return sl_spec_fail(err, "spec.resources.cpuMilli",
                                "cannot be combined with cpus: give one of them");
        s->cpu_milli = cpu_milli;
    }
    if ((mem = sl_spec_member(r, "memory")) &&
        (rc = sl_spec_parse_memory(mem, "spec.resources.memory", 1, &s->mem_bytes, err)) < 0)
        return rc;
    return 0;
}

static int parse_checkpoint(const json_t *spec, struct sl_job_spec *s,
                            struct sl_error *err)
{
    const char *P = "spec.checkpoint";
    const json_t *c = sl_spec_member(spec, "checkpoint"), *sig;
    int rc;

    s->ckpt_signal = SIGTERM;
    s->ckpt_grace_ms = DEFAULT_GRACE_MS;
    if (!c)
        return 0;
    if ((rc = sl_spec_check_object(c, P, checkpoint_keys, err)) < 0)
        return rc;
    if ((rc = sl_spec_get_string(c, "signal", P, 32, &sig, err)) < 0)
        return rc;
    if (sig) {
        int n = sl_signal_from_name(json_string_value(sig));
        if (n < 0)
            return sl_spec_fail_got(err, "spec.checkpoint.signal",
                                    "a signal name such as SIGUSR1 or SIGTERM", sig);
        if (n == SIGKILL || n == SIGSTOP)
            return sl_spec_fail(err, "spec.checkpoint.signal",
                                "cannot be %s: a job cannot catch it to checkpoint",
                                sl_signal_name(n));
        s->ckpt_signal = n;
    }
    return sl_spec_get_duration(c, "grace", P, 0, GRACE_MS_MAX,
                                "a duration from 0s to 1d", &s->ckpt_grace_ms, err);
}

static int parse_spec(const json_t *doc, struct sl_job_spec *s,
                      struct sl_error *err)
{
    const char *P = "spec";
    const json_t *spec = sl_spec_member(doc, "spec"), *image, *cmd, *ds;
    int64_t tasks = 1, retries = 0;
    int topo = SL_TOPO_ANY, net = SL_NET_EGRESS;
    int rc;

    if (!spec)
        return sl_spec_fail(err, "spec", "is required");
    if ((rc = sl_spec_check_object(spec, P, job_spec_keys, err)) < 0)
        return rc;
    if ((rc = sl_spec_get_name(spec, "queue", P, s->queue, false, err)) < 0 ||
        (rc = sl_spec_get_name(spec, "priorityClass", P, s->priority_class, false,
                               err)) < 0)
        return rc;
    if ((rc = sl_spec_get_string(spec, "image", P, IMAGE_MAX, &image, err)) < 0)
        return rc;
    if (image) {
        const char *i = json_string_value(image);
        if (!*i)
            return sl_spec_fail(err, "spec.image", "must not be empty");
        for (const char *c = i; *c; c++)
            if (isspace((unsigned char)*c) || iscntrl((unsigned char)*c))
                return sl_spec_fail_got(err, "spec.image",
                                        "an image reference without spaces", image);
        if (!(s->image = dup_json_string(image)))
            return sl_spec_oom(err);
    }
    if ((rc = sl_spec_get_string_array(spec, "command", P, SL_MAX_ARGS, check_arg, &cmd,
                                       err)) < 0)
        return rc;
    if (!cmd)
        return sl_spec_fail(err, "spec.command", "is required");
    if (json_array_size(cmd) == 0)
        return sl_spec_fail(err, "spec.command",
                            "must have at least one entry (the program)");
    if (json_string_length(json_array_get(cmd, 0)) == 0)
        return sl_spec_fail(err, "spec.command[0]", "must not be empty");
    if (!(s->argv = dup_string_array(cmd, &s->argc)))
        return sl_spec_oom(err);
    if ((rc = parse_env(spec, s, err)) < 0 || (rc = parse_workdir(spec, s, err)) < 0 ||
        (rc = parse_dependency(spec, s, err)) < 0 || (rc = parse_array(spec, s, err)) < 0)
        return rc;
    if ((rc = sl_spec_get_int(spec, "tasks", P, 1, SL_MAX_TASKS, &tasks, NULL, err)) < 0)
        return rc;
    s->tasks = (int)tasks;
    if ((rc = parse_resources(spec, s, err)) < 0)
        return rc;
    if ((rc = sl_spec_get_enum(spec, "topology", P, sl_spec_topology_names, &topo, err)) < 0)
        return rc;
    s->topology = (enum sl_topology)topo;
    if ((rc = sl_spec_get_duration(spec, "maxRuntime", P, 1, RUNTIME_MS_MAX,
                                   "a duration above 0 and at most 3650d",
                                   &s->max_runtime_ms, err)) < 0)
        return rc;
    if ((rc = sl_spec_get_int(spec, "retries", P, 0, RETRIES_MAX, &retries, NULL,
                              err)) < 0)
        return rc;
    s->retries = (int)retries;
    if ((rc = parse_checkpoint(spec, s, err)) < 0)
        return rc;
    if ((rc = sl_spec_get_string_array(spec, "datasets", P, DATASETS_MAX, check_dataset,
                                       &ds, err)) < 0)
        return rc;
    if (!(s->datasets = dup_string_array(ds, &s->n_datasets)))
        return sl_spec_oom(err);
    s->network_set = sl_spec_member(spec, "network") != NULL;
    if ((rc = sl_spec_get_enum(spec, "network", P, sl_spec_network_names, &net, err)) < 0)
        return rc;
    s->network = (enum sl_network)net;
    if ((rc = parse_interactive(spec, s, err)) < 0)
        return rc;
    return parse_code(sl_spec_member(spec, "code"), s, err);
}

int sl_job_spec_from_json(const json_t *doc, struct sl_job_spec **out,
                          struct sl_error *err)
{
    struct sl_job_spec *s = NULL;
    const char *kind;
    int rc;

    if (!doc) {
        rc = sl_spec_fail(err, "", "no document");
        goto out;
    }
    if (!json_is_object(doc)) {
        rc = sl_spec_fail_got(err, "", "an object (a job document)", doc);
        goto out;
    }
    if ((rc = sl_spec_check_object(doc, "", sl_spec_top_keys, err)) < 0 ||
        (rc = sl_spec_check_header(doc, "", &kind, err)) < 0)
        goto out;
    if (strcmp(kind, "Job") != 0) {
        char got[64];
        bool manifest = false;
        for (size_t i = 0; sl_spec_manifest_kinds[i].name; i++)
            manifest = manifest || !strcmp(kind, sl_spec_manifest_kinds[i].name);
        rc = sl_spec_fail(err, "kind", "must be \"Job\", got %s%s",
                          sl_spec_describe(sl_spec_member(doc, "kind"), got, sizeof(got)),
                          manifest ? " (declare it with `sluice apply -f FILE`)" : "");
        goto out;
    }
    if (!(s = calloc(1, sizeof(*s))) || !(s->labels = json_object())) {
        rc = sl_spec_oom(err);
        goto out;
    }
    if ((rc = parse_metadata(doc, s, err)) < 0 ||
        (rc = parse_spec(doc, s, err)) < 0)
        goto out;
    *out = s;
    s = NULL;
out:
    sl_job_spec_destroy(s);
    return rc;
}

int sl_job_spec_parse(const char *buf, size_t len, struct sl_job_spec **out,
                      struct sl_error *err)
{
    json_t *doc = NULL;
    int rc;

    if ((rc = sl_doc_decode(buf, len, false, &doc, err)) < 0)
        goto out;
    rc = sl_job_spec_from_json(doc, out, err);
out:
    json_decref(doc);
    return rc;
}
