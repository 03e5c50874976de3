/*
 * slurm_lib.c - submission, and the details of a started job, through
 * Slurm's C API (slurm_int.h).
 *
 * sbatch costs a process per job: on a busy control host it spends
 * several milliseconds of CPU loading slurm.conf and its plugins before
 * one RPC, and the executor's submitters wait for it
 * (bench/slurm_e2e.sh: 800 held submissions from 8 clients took 2.7-4.9 s
 * through sbatch against 0.6-0.8 s through the API, on the lab). The API
 * sends the same job description from the submitter's own thread.
 *
 * libslurm is loaded at run time (dlopen), so that sluiced neither needs
 * Slurm installed nor links against one version of it: the library must
 * be the ABI of the headers this was built with (libslurm.so.38, Slurm
 * 22.05), and its slurm_api_version() must say that ABI.
 * Anything else, and a build without Slurm's headers, leaves every call to
 * the tools. The library reads slurm.conf once, in sl_slx_lib_open; as
 * Slurm exits the process when it cannot read it, the API is used only
 * when the configuration is a file this process can read (a configless
 * site uses the tools).
 *
 * The job description is what sbatch makes of the executor's arguments
 * (slurm.c, sbatch_argv) for a job of one component, per Slurm 22.05's
 * sbatch.c and slurm_opt.c: the same fields, and the environment sbatch
 * would send with --export=ALL from the executor's own (tool_env), with
 * the variables sbatch adds for its options. A heterogeneous job goes
 * through sbatch (sl_slx_lib_fits).
 */
#include "slurm_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Slurm 22.05's headers: what this file knows of the API is theirs */
#if defined(__has_include)
#if __has_include(<slurm/slurm_version.h>)
#include <slurm/slurm_version.h>
#if (SLURM_VERSION_NUMBER >> 8) == (SLURM_VERSION_NUM(22, 5, 0) >> 8)
#define SL_HAVE_SLURM_H 1
#endif
#endif
#endif

bool sl_slx_lib_fits(const struct sjob *j)
{
    return j->ncomp == 1 && j->cpus < 65535; /* cpus_per_task is 16 bits */
}

#ifndef SL_HAVE_SLURM_H

struct sl_slurm_lib *sl_slx_lib_open(char *why, size_t why_size)
{
    snprintf(why, why_size, "built without Slurm 22.05's headers (libslurm-dev)");
    return NULL;
}

uint64_t sl_slx_lib_submit(struct slurm *s, const struct sjob *j, char *say, size_t say_size)
{
    (void)s;
    (void)j;
    snprintf(say, say_size, "built without Slurm's headers");
    return 0;
}

int sl_slx_lib_job_lines(struct slurm *s, uint64_t sid, void (*fn)(void *arg, char *line),
                         void *arg)
{
    (void)s;
    (void)sid;
    (void)fn;
    (void)arg;
    return -EIO;
}

#else

#include <dlfcn.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "../util/buf.h"

/* The library of Slurm 22.05's ABI, and that ABI's number */
#define LIBSLURM "libslurm.so.38"
#define LIBSLURM_ABI 38

struct sl_slurm_lib {
    void (*init)(const char *conf);
    long (*api_version)(void);
    void (*init_desc)(job_desc_msg_t *desc);
    int (*submit)(job_desc_msg_t *desc, submit_response_msg_t **resp);
    void (*free_resp)(submit_response_msg_t *resp);
    char *(*strerror)(int errnum);
    int (*load_job)(job_info_msg_t **resp, uint32_t job_id, uint16_t show_flags);
    void (*free_job_info)(job_info_msg_t *msg);
    char *(*sprint_job)(slurm_job_info_t *job, int one_liner);
    void (*xfree)(void **item);
};

/* One per process: Slurm's configuration is the library's global state. */
static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sl_slurm_lib lib_one;
static bool lib_loaded;

struct sl_slurm_lib *sl_slx_lib_open(char *why, size_t why_size)
{
    const char *conf = getenv("SLURM_CONF");
    struct sl_slurm_lib L;
    void *dl;
    long v;

    pthread_mutex_lock(&lib_mu);
    if (lib_loaded) {
        pthread_mutex_unlock(&lib_mu);
        return &lib_one;
    }
    if (!conf || !conf[0])
        conf = SL_SLURM_DEFAULT_CONF;
    if (access(conf, R_OK) < 0) {
        snprintf(why, why_size, "Slurm's configuration %s cannot be read here (%s); a "
                 "configless site uses the tools", conf, strerror(errno));
        goto no;
    }
    /* global: Slurm's plugins (auth/munge, ...) take its symbols from the
     * process */
    if (!(dl = dlopen(LIBSLURM, RTLD_NOW | RTLD_GLOBAL))) {
        snprintf(why, why_size, "%s", dlerror());
        goto no;
    }
    *(void **)&L.init = dlsym(dl, "slurm_init");
    *(void **)&L.api_version = dlsym(dl, "slurm_api_version");
    *(void **)&L.init_desc = dlsym(dl, "slurm_init_job_desc_msg");
    *(void **)&L.submit = dlsym(dl, "slurm_submit_batch_job");
    *(void **)&L.free_resp = dlsym(dl, "slurm_free_submit_response_response_msg");
    *(void **)&L.strerror = dlsym(dl, "slurm_strerror");
    *(void **)&L.load_job = dlsym(dl, "slurm_load_job");
    *(void **)&L.free_job_info = dlsym(dl, "slurm_free_job_info_msg");
    *(void **)&L.sprint_job = dlsym(dl, "slurm_sprint_job_info");
    *(void **)&L.xfree = dlsym(dl, "slurm_xfree");
    if (!L.init || !L.api_version || !L.init_desc || !L.submit || !L.free_resp ||
        !L.strerror || !L.load_job || !L.free_job_info || !L.sprint_job || !L.xfree) {
        snprintf(why, why_size, "%s lacks a function of Slurm's API", LIBSLURM);
        goto no; /* a library without its API: left loaded, never called */
    }
    /* the ABI (SLURM_API_CURRENT), in the high bits */
    if ((v = L.api_version()) >> 16 != LIBSLURM_ABI) {
        snprintf(why, why_size, "%s says its API is %ld, not %d", LIBSLURM, v >> 16,
                 LIBSLURM_ABI);
        goto no;
    }
    L.init(conf);
    lib_one = L;
    lib_loaded = true;
    pthread_mutex_unlock(&lib_mu);
    return &lib_one;
no:
    pthread_mutex_unlock(&lib_mu);
    return NULL;
}

/* "NAME=value" into the environment being built; false when out of
 * memory. */
static bool env_add(char **env, uint32_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool env_add(char **env, uint32_t *n, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vasprintf(&env[*n], fmt, ap);
    va_end(ap);
    if (rc < 0) {
        env[*n] = NULL;
        return false;
    }
    (*n)++;
    return true;
}

/* The GRES of the job's one component, as sbatch's --gres becomes
 * tres_per_node: each of its whole GPUs by index, "gres:gpu:g3:1", and
 * its shards of each GPU, "gres:shard:g3:500". NULL for none. */
static char *tres_per_node(const struct sl_slurm_place *c, bool *failed)
{
    struct sl_buf g;

    if (c->ngpus == 0 && c->nshards == 0)
        return NULL;
    sl_buf_init(&g);
    for (int k = 0; k < c->ngpus; k++)
        sl_buf_printf(&g, "%sgres:gpu:g%d:1", k ? "," : "", c->gpus[k]);
    for (int k = 0; k < c->nshards; k++)
        sl_buf_printf(&g, "%sgres:shard:g%d:%d", k || c->ngpus ? "," : "", c->shard_gpu[k],
                      c->shards[k]);
    if (g.failed) {
        sl_buf_fini(&g);
        *failed = true;
        return NULL;
    }
    return g.data;
}

uint64_t sl_slx_lib_submit(struct slurm *s, const struct sjob *j, char *say, size_t say_size)
{
    const struct sl_slurm_lib *L = s->lib;
    const struct sl_slurm_place *c = &j->comps[0];
    char name[64], out[PATH_MAX + 32], dep[48], host[256] = "", comment[] = "sluice",
         root[] = "/";
    char *env[16] = {0};
    uint32_t nenv = 0;
    bool failed = false;
    submit_response_msg_t *resp = NULL;
    job_desc_msg_t d;
    uint64_t id = 0;
    int ntasks = j->ncomp_tasks[0];

    /* sbatch --export=ALL sends its own environment (the executor's,
     * tool_env, with the umask for tasks) with what it adds for its
     * options: the job's name, the task count and CPUs (for srun in the
     * script), the open mode (for the steps), the dependency, the submit
     * directory and host. Not its nice value nor its resource limits: the
     * job gets slurmd's, not sluiced's. The job's own environment is set
     * by its script. */
    for (char *const *e = s->tool_env; *e && !failed; e++)
        failed = !env_add(env, &nenv, "%s", *e);
    gethostname(host, sizeof(host) - 1);
    failed = failed || !env_add(env, &nenv, "SLURM_JOB_NAME=sluice-%lld-%d", (long long)j->id,
                                j->attempt) ||
             !env_add(env, &nenv, "SLURM_NTASKS=%d", ntasks) ||
             !env_add(env, &nenv, "SLURM_NPROCS=%d", ntasks) ||
             !env_add(env, &nenv, "SLURM_CPUS_PER_TASK=%lld", (long long)j->cpus) ||
             !env_add(env, &nenv, "SLURM_OPEN_MODE=a") ||
             !env_add(env, &nenv, "SLURM_SUBMIT_DIR=/") ||
             !env_add(env, &nenv, "SLURM_SUBMIT_HOST=%s", host);
    if (!failed && j->dep)
        failed = !env_add(env, &nenv, "SLURM_JOB_DEPENDENCY=afterok:%llu",
                          (unsigned long long)j->after_sid);

    L->init_desc(&d);
    snprintf(name, sizeof(name), "sluice-%lld-%d", (long long)j->id, j->attempt);
    snprintf(out, sizeof(out), "%s/%lld.0.log", s->outdir, (long long)j->id);
    d.name = name;
    d.comment = comment;
    d.partition = s->partition;
    d.environment = env;
    d.env_size = nenv;
    d.script = j->script;
    d.std_out = out;
    d.open_mode = OPEN_MODE_APPEND;
    d.requeue = 0;
    d.work_dir = root; /* the script goes home where the node has it */
    if (j->as_uid) {
        d.user_id = j->uid;
        d.group_id = j->gid;
    }
    if (j->dep) {
        snprintf(dep, sizeof(dep), "afterok:%llu", (unsigned long long)j->after_sid);
        d.dependency = dep;
    }
    if (j->time_min > 0)
        d.time_limit = (uint32_t)(j->time_min < INFINITE - 1 ? j->time_min : INFINITE - 1);
    d.min_nodes = d.max_nodes = 1;
    d.req_nodes = (char *)c->node; /* only read */
    d.bitflags |= JOB_NTASKS_SET | JOB_CPUS_SET;
    d.num_tasks = (uint32_t)ntasks;
    d.cpus_per_task = (uint16_t)j->cpus;
    d.min_cpus = (uint32_t)(ntasks * j->cpus);
    d.pn_min_memory = (uint64_t)j->mem_mb * (uint64_t)ntasks;
    d.tres_per_node = tres_per_node(c, &failed);

    if (failed) {
        snprintf(say, say_size, "out of memory");
    } else if (L->submit(&d, &resp) != 0) {
        int e = errno;
        snprintf(say, say_size, "%s", L->strerror(e));
    } else if (!resp || !(id = resp->job_id)) {
        snprintf(say, say_size, "Slurm answered no job id");
    }
    if (resp)
        L->free_resp(resp);
    free(d.tres_per_node);
    for (uint32_t i = 0; i < nenv; i++)
        free(env[i]);
    return id;
}

/* scontrol show job -d -o is slurm_load_job with SHOW_DETAIL, then each
 * record printed on one line (scontrol/info_job.c): one RPC, no process. */
int sl_slx_lib_job_lines(struct slurm *s, uint64_t sid, void (*fn)(void *arg, char *line),
                         void *arg)
{
    const struct sl_slurm_lib *L = s->lib;
    job_info_msg_t *m = NULL;

    if (sid > UINT32_MAX)
        return -ENOENT;
    if (L->load_job(&m, (uint32_t)sid, SHOW_DETAIL) != 0) {
        int e = errno;
        return e == ESLURM_INVALID_JOB_ID ? -ENOENT : -EIO;
    }
    for (uint32_t i = 0; m && i < m->record_count; i++) {
        char *text = L->sprint_job(&m->job_array[i], 1);
        if (!text)
            continue;
        text[strcspn(text, "\n")] = '\0';
        fn(arg, text);
        L->xfree((void **)&text);
    }
    if (m)
        L->free_job_info(m);
    return 0;
}

#endif
