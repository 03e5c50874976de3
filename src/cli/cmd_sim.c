/*
 * cmd_sim.c - `sluice sim`: run the scheduler offline against a trace
 * (SPEC.md section 7) and print the JSON summary on standard output.
 *
 * The simulation runs in this process; it needs no server. A bad trace or
 * option is a usage error (exit 1) naming the file, line and column.
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/sim.h"
#include "../util/buf.h"

enum {
    O_NODES = 1, O_WORKLOAD, O_MODE, O_POLICY, O_SEED, O_TARGET, O_SCALE,
    O_CONFIG, O_VCS, O_PLACEMENTS, O_SCHEDULER, O_MAX_JOBS, O_PROGRESS,
    O_NO_PROGRESS, O_ESTIMATE,
};

/* clang-format off */
static const struct sl_cli_opt sim_opts[] = {
    /* long name, short, takes a value, id */
    {"nodes", '\0', true, O_NODES},
    {"workload", '\0', true, O_WORKLOAD},
    {"mode", '\0', true, O_MODE},
    {"policy", '\0', true, O_POLICY},
    {"seed", '\0', true, O_SEED},
    {"target", '\0', true, O_TARGET},
    {"time-scale", '\0', true, O_SCALE},
    {"config", '\0', true, O_CONFIG},
    {"vcs", '\0', true, O_VCS},
    {"placements", '\0', true, O_PLACEMENTS},
    {"scheduler", '\0', true, O_SCHEDULER},
    {"max-jobs", '\0', true, O_MAX_JOBS},
    {"progress", '\0', false, O_PROGRESS},
    {"no-progress", '\0', false, O_NO_PROGRESS},
    {"estimate", '\0', true, O_ESTIMATE},
    {NULL, '\0', false, 0},
};
/* clang-format on */

/* A decimal option value in [min, max]. */
static int real_arg(const char *flag, const char *v, double min, double max,
                    double *out, struct sl_error *err)
{
    char *end;
    double d;

    errno = 0;
    d = strtod(v, &end);
    if (!*v || *end || errno || !isfinite(d) || d < min || d > max)
        return sl_errorf_field(err, -EINVAL, flag,
                               "%s: must be a number from %g to %g, got '%.40s'",
                               flag, min, max, v);
    *out = d;
    return 0;
}

/* Apply option 'opt' (value 'v') to *o. Returns 0, or the exit code of
 * a usage error, already reported. */
static int sim_opt(struct sl_sim_opts *o, int opt, const char *v, struct sl_error *err)
{
    int64_t n;

    switch (opt) {
    case SL_CLI_ARG_POS:
        sl_cli_errorf("sim: unexpected argument '%.64s' (see 'sluice help sim')",
                      v);
        return SL_CLI_USAGE;
    case O_NODES:
        o->nodes_path = v;
        break;
    case O_WORKLOAD:
        o->workload_path = v;
        break;
    case O_MODE:
        if (strcmp(v, "fill") == 0) {
            o->mode = SL_SIM_FILL;
        } else if (strcmp(v, "timed") == 0) {
            o->mode = SL_SIM_TIMED;
        } else {
            sl_cli_errorf("--mode: must be fill or timed, got '%.40s'", v);
            return SL_CLI_USAGE;
        }
        break;
    case O_POLICY:
        o->policy = v;
        break;
    case O_SEED:
        if (sl_cli_int_arg("--seed", v, 0, INT64_MAX, &n, err) < 0)
            return sl_cli_usage_error(err);
        o->seed = (uint64_t)n;
        break;
    case O_TARGET:
        if (real_arg("--target", v, 0.01, 10, &o->target, err) < 0)
            return sl_cli_usage_error(err);
        break;
    case O_SCALE:
        if (real_arg("--time-scale", v, 1e-6, 1e9, &o->time_scale, err) < 0)
            return sl_cli_usage_error(err);
        break;
    case O_CONFIG:
        o->config_path = v;
        break;
    case O_VCS:
        o->vc_path = v;
        break;
    case O_PLACEMENTS:
        o->placements_path = v;
        break;
    case O_SCHEDULER:
        if (strcmp(v, "sluice") != 0 && strcmp(v, "fifo") != 0) {
            sl_cli_errorf("--scheduler: must be sluice or fifo, got '%.40s'", v);
            return SL_CLI_USAGE;
        }
        o->scheduler = v;
        break;
    case O_MAX_JOBS:
        if (sl_cli_int_arg("--max-jobs", v, 1, 10000000, &o->max_jobs, err) < 0)
            return sl_cli_usage_error(err);
        break;
    case O_ESTIMATE:
        if (strcmp(v, "exact") == 0) {
            o->no_estimate = false;
        } else if (strcmp(v, "none") == 0) {
            o->no_estimate = true;
        } else {
            sl_cli_errorf("--estimate: must be exact or none, got '%.40s'", v);
            return SL_CLI_USAGE;
        }
        break;
    case O_PROGRESS:
        o->progress = true;
        break;
    case O_NO_PROGRESS:
        o->progress = false;
        break;
    }
    return 0;
}

int sl_cli_cmd_sim(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    struct sl_error err = {{0}, {0}};
    struct sl_sim_opts o = {.seed = 42};
    struct sl_cli_parser p;
    struct sl_buf out;
    const char *v;
    int opt, code, rc;

    o.progress = isatty(STDERR_FILENO) == 1;
    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((opt = sl_cli_next(&p, sim_opts, ctx, &v, &err)) != SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, opt, &err)))
            return code;
        if ((code = sim_opt(&o, opt, v, &err)))
            return code;
    }
    if (!o.workload_path) {
        sl_cli_errorf("sim: --workload FILE is required (see 'sluice help sim')");
        return SL_CLI_USAGE;
    }
    sl_buf_init(&out);
    rc = sl_sim_run(&o, &out, &err);
    if (rc < 0) {
        sl_buf_fini(&out);
        sl_cli_errorf("sim: %s", err.text);
        return rc == -ENOMEM || rc == -EIO ? SL_CLI_FAILED : SL_CLI_USAGE;
    }
    fwrite(out.data, 1, out.len, stdout);
    sl_buf_fini(&out);
    return SL_CLI_OK;
}
