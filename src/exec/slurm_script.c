/*
 * slurm_script.c - the batch script of a Sluice job in Slurm (slurm_int.h):
 * the job's environment as the local executor builds it (the account's
 * HOME, USER, LOGNAME and SHELL, the daemon's LANG, the job's own, the
 * GPUs and datasets), the directory it starts in, and its tasks.
 *
 * The script is the job's whole contract with the node: it runs as the
 * job's account, so everything it does (the cd, the markers) is bounded by
 * that account's rights.
 */
#include "slurm_int.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/buf.h"

/* "K=V" in a new string, or NULL. */
static char *env_kv(const char *k, const char *v)
{
    size_t kl = strlen(k), vl = strlen(v);
    char *p = malloc(kl + vl + 2);

    if (p) {
        memcpy(p, k, kl);
        p[kl] = '=';
        memcpy(p + kl + 1, v, vl + 1);
    }
    return p;
}

/* "export K='V'" for each "K=V" of the job's environment. */
static int put_export(void *arg_, char *kv)
{
    struct sl_buf *b = arg_;
    char *eq;

    if (!kv)
        return -ENOMEM;
    if ((eq = strchr(kv, '=')) && eq != kv) {
        sl_buf_add(b, "export ", 7);
        sl_buf_add(b, kv, (size_t)(eq - kv) + 1);
        sl_slurm_shell_quote(b, eq + 1);
        sl_buf_add(b, "\n", 1);
    }
    free(kv);
    return 0;
}

/* Narrow CUDA_VISIBLE_DEVICES to a task's own GPUs ($sl_g, Sluice's
 * indices): a component's tasks on one node all get its GPUs from Slurm,
 * and under cgroup ConstrainDevices Slurm renumbers them, so the task's
 * GPUs are found by their place in Slurm's own list (SLURM_STEP_GPUS, else
 * SLURM_JOB_GPUS) and the same place of CUDA_VISIBLE_DEVICES is taken.
 * The shell's own word splitting, without a subshell or a process: on a
 * node busy with short jobs every fork is felt. */
static const char narrow_cvd[] =
    "sl_sg=${SLURM_STEP_GPUS:-${SLURM_JOB_GPUS:-}}\n"
    "if [ -n \"$sl_g\" ] && [ -n \"$sl_sg\" ] && [ -n \"${CUDA_VISIBLE_DEVICES:-}\" ]; then\n"
    "  sl_c= sl_ok=1 sl_ifs=$IFS; IFS=,; set -f\n"
    "  for sl_x in $sl_g; do\n"
    "    sl_y= sl_k=0\n"
    "    for sl_v in $sl_sg; do\n"
    "      if [ \"$sl_v\" = \"$sl_x\" ]; then\n"
    "        sl_m=0\n"
    "        for sl_w in $CUDA_VISIBLE_DEVICES; do\n"
    "          [ $sl_m -eq $sl_k ] && { sl_y=$sl_w; break; }; sl_m=$((sl_m+1))\n"
    "        done\n"
    "        break\n"
    "      fi\n"
    "      sl_k=$((sl_k+1))\n"
    "    done\n"
    "    if [ -n \"$sl_y\" ]; then sl_c=${sl_c:+$sl_c,}$sl_y; else sl_ok=0; fi\n"
    "  done\n"
    "  IFS=$sl_ifs; set +f\n"
    "  [ $sl_ok = 1 ] && CUDA_VISIBLE_DEVICES=$sl_c && export CUDA_VISIBLE_DEVICES\n"
    "fi\n";

/* What each task runs (SLUICE_TASK_SCRIPT): by its SLURM_PROCID (the
 * components' tasks in order) its Sluice task index and GPUs, its output
 * appended to OUTDIR/<id>.<task>.log, then the job's command. */
static void task_script(struct sl_buf *t, const struct slurm *s, const struct sjob *j,
                        const struct sl_exec_job *job)
{
    int procid = 0;
    bool whole = false;

    sl_buf_adds(t, "case ${SLURM_PROCID:-0} in\n");
    for (int c = 0; c < j->ncomp; c++)
        for (int k = 0; k < job->ntasks; k++) {
            const struct sl_exec_place *p = &job->tasks[k];
            if (j->comp[k] != c)
                continue;
            sl_buf_printf(t, "%d) sl_t=%d sl_g='", procid++, k);
            for (int g = 0; g < p->ngpus; g++)
                sl_buf_printf(t, "%s%d", g ? "," : "", p->gpus[g]);
            sl_buf_adds(t, "';;\n");
            whole = whole || (p->ngpus > 0 && p->gpu_milli >= 1000);
        }
    sl_buf_adds(t, "*) exit 127;;\nesac\n");
    if (whole)
        sl_buf_adds(t, narrow_cvd);
    sl_buf_adds(t, "SLUICE_TASK_INDEX=$sl_t SLUICE_GPUS=$sl_g\n"
                   "export SLUICE_TASK_INDEX SLUICE_GPUS\nexec >>");
    sl_buf_printf(t, "'%s/%lld.'\"$sl_t\"'.log' 2>&1\n", s->outdir, (long long)job->job_id);
    sl_buf_adds(t, "unset sl_t sl_g sl_sg sl_c sl_ok sl_ifs sl_x sl_y sl_k sl_v sl_m sl_w\nexec");
    for (char *const *a = job->spec->argv; a && *a; a++) {
        sl_buf_add(t, " ", 1);
        sl_slurm_shell_quote(t, *a);
    }
    sl_buf_add(t, "\n", 1);
}

/* The batch script: the job's environment (as the local executor's: the
 * account's HOME, USER, LOGNAME and SHELL, the daemon's LANG, then the
 * job's own), its spec.workdir (else its home), then its tasks: the one
 * in place (in this shell), or srun across all (all components of a
 * heterogeneous job; a failed task stops the others, as a gang), which
 * pass them the script's environment. */
char *sl_slx_batch_script(const struct slurm *s, const struct sjob *j,
                          const struct sl_exec_job *job, const struct passwd *pw)
{
    struct sl_buf b, t;
    char line[256], up[PATH_MAX + 64];
    const char *home = pw ? pw->pw_dir : NULL, *lang = getenv("LANG");
    bool failed;

    sl_buf_init(&b);
    sl_buf_init(&t);
    /* not ':', a special built-in: a shell exits when its redirection fails */
    sl_buf_printf(&b, "#!/bin/sh\n# sluice job %lld, attempt %d\ntrue 2>/dev/null >",
                  (long long)job->job_id, job->attempt);
    sl_slx_up_path(s, job->job_id, job->attempt, up, sizeof(up));
    sl_slurm_shell_quote(&b, up);
    sl_buf_add(&b, "\n", 1);
    put_export(&b, strdup("PATH=" TASK_PATH));
    if (pw) {
        const char *shell = pw->pw_shell && pw->pw_shell[0] ? pw->pw_shell : "/bin/sh";
        put_export(&b, env_kv("HOME", home && home[0] == '/' ? home : "/"));
        put_export(&b, env_kv("USER", pw->pw_name));
        put_export(&b, env_kv("LOGNAME", pw->pw_name));
        put_export(&b, env_kv("SHELL", shell));
    }
    if (lang && lang[0] && strlen(lang) < 64)
        put_export(&b, env_kv("LANG", lang));
    for (char *const *e = job->env; e && *e; e++)
        if (strncmp(*e, "SLUICE_DATASET", 14) != 0)
            put_export(&b, strdup(*e));
    snprintf(line, sizeof(line), "SLUICE_JOB_ID=%lld", (long long)job->job_id);
    put_export(&b, strdup(line));
    snprintf(line, sizeof(line), "SLUICE_ATTEMPT=%d", job->attempt);
    put_export(&b, strdup(line));
    put_export(&b, strdup("CUDA_DEVICE_ORDER=PCI_BUS_ID"));
    sl_exec_dataset_env(job->datasets, job->ndatasets, put_export, &b);
    if (job->spec->workdir && job->spec->workdir[0] == '/') {
        /* as the job's account; one it cannot enter fails the job */
        sl_buf_adds(&b, "cd ");
        sl_slurm_shell_quote(&b, job->spec->workdir);
        sl_buf_adds(&b, " 2>/dev/null || { echo 'sluice: spec.workdir: cannot enter '");
        sl_slurm_shell_quote(&b, job->spec->workdir);
        sl_buf_adds(&b, "\" as $(id -un)\" >&2; exit 127; }\n");
    } else if (home && home[0] == '/') {
        sl_buf_adds(&b, "cd ");
        sl_slurm_shell_quote(&b, home);
        sl_buf_adds(&b, " 2>/dev/null || cd /\n");
    }
    task_script(&t, s, j, job);
    if (job->ntasks == 1) {
        /* in place: a second shell costs a node about 7 ms of CPU a job */
        if (t.data)
            sl_buf_adds(&b, t.data);
    } else {
        sl_buf_adds(&b, "SLUICE_TASK_SCRIPT=");
        if (t.data)
            sl_slurm_shell_quote(&b, t.data);
        sl_buf_adds(&b, "\nexport SLUICE_TASK_SCRIPT\nexec srun --export=ALL "
                        "--kill-on-bad-exit=1 ");
        if (j->ncomp > 1)
            sl_buf_printf(&b, "--het-group=0-%d ", j->ncomp - 1);
        sl_buf_adds(&b, "/bin/sh -c \"$SLUICE_TASK_SCRIPT\"\n");
    }
    failed = b.failed || t.failed;
    sl_buf_fini(&t);
    if (failed) {
        sl_buf_fini(&b);
        return NULL;
    }
    return b.data;
}

