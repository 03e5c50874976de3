/*
 * cmd_slurm.c - `sluice slurm gres-conf`: print the gres.conf and
 * slurm.conf lines a Slurm cluster needs before sluiced's Slurm executor
 * can place exact GPUs and fractions of one on it (slurmconf.c writes
 * them; docs/slurm.md explains them).
 *
 * Needs no server. Every flag is checked before anything is printed; a bad
 * one is a usage error (exit 1) that names it.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../exec/exec.h"
#include "../util/buf.h"

enum {
    O_NODES = 1, O_GPUS, O_MODEL, O_DOMAIN, O_DEVICE, O_SHARDS, O_PER_NODE,
    O_ONLY,
};

/* clang-format off */
static const struct sl_cli_opt slurm_opts[] = {
    /* long name, short, takes a value, id */
    {"nodes", '\0', true, O_NODES},
    {"gpus", '\0', true, O_GPUS},
    {"model", '\0', true, O_MODEL},
    {"domain", '\0', true, O_DOMAIN},
    {"device", '\0', true, O_DEVICE},
    {"shards", '\0', true, O_SHARDS},
    {"per-node", '\0', false, O_PER_NODE},
    {"only", '\0', true, O_ONLY},
    {NULL, '\0', false, 0},
};
/* clang-format on */

/* Values of --only: the file, and the part of the output it selects. */
static const struct {
    const char *name;
    enum sl_cli_slurm_part part;
} only_names[] = {
    {"gres.conf", SL_CLI_SLURM_GRES},
    {"slurm.conf", SL_CLI_SLURM_NODES},
};

/* A flag that may be given once. */
static int once(const char *flag, const char **slot, const char *v)
{
    if (*slot) {
        sl_cli_errorf("%s: given twice ('%.64s' and '%.64s')", flag, *slot, v);
        return SL_CLI_USAGE;
    }
    *slot = v;
    return SL_CLI_OK;
}

/* A repeatable flag: one more value in vals[*n]. */
static int more(const char *flag, const char **vals, size_t *n, const char *v)
{
    if (*n >= SL_CLI_SLURM_VALUES) {
        sl_cli_errorf("%s: more than %d values", flag, SL_CLI_SLURM_VALUES);
        return SL_CLI_USAGE;
    }
    vals[(*n)++] = v;
    return SL_CLI_OK;
}

static int gres_conf(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    const char *models[SL_CLI_SLURM_VALUES], *domains[SL_CLI_SLURM_VALUES];
    struct sl_cli_gres_opts o = {.device = NULL, .shards = 1000};
    const char *gpus = NULL, *shards = NULL, *only = NULL, *sub = NULL, *v;
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    struct sl_buf out;
    int id, rc, code = SL_CLI_OK;

    sl_cli_parser_init(&p, argc, argv, 1, false);
    while ((id = sl_cli_next(&p, slurm_opts, ctx, &v, &err)) != SL_CLI_ARG_END) {
        if ((code = sl_cli_arg_special(ctx, id, &err)))
            return code;
        switch (id) {
        case SL_CLI_ARG_POS:
            if (sub) {
                sl_cli_errorf("slurm: unexpected argument '%.64s' (see "
                              "'sluice help slurm')",
                              v);
                return SL_CLI_USAGE;
            }
            sub = v;
            break;
        case O_NODES:
            code = once("--nodes", &o.nodes, v);
            break;
        case O_GPUS:
            code = once("--gpus", &gpus, v);
            break;
        case O_MODEL:
            code = more("--model", models, &o.nmodels, v);
            break;
        case O_DOMAIN:
            code = more("--domain", domains, &o.ndomains, v);
            break;
        case O_DEVICE:
            code = once("--device", &o.device, v);
            break;
        case O_SHARDS:
            code = once("--shards", &shards, v);
            break;
        case O_PER_NODE:
            o.per_node = true;
            break;
        case O_ONLY:
            code = once("--only", &only, v);
            break;
        }
        if (code != SL_CLI_OK)
            return code;
    }
    if (!sub || strcmp(sub, "gres-conf") != 0) {
        sl_cli_errorf("slurm: %s%.64s%s (the one subcommand is gres-conf; see "
                      "'sluice help slurm')",
                      sub ? "unknown subcommand '" : "missing subcommand",
                      sub ? sub : "", sub ? "'" : "");
        return SL_CLI_USAGE;
    }
    if (ctx->output != SL_CLI_OUT_TABLE) {
        sl_cli_errorf("-o: slurm gres-conf prints configuration lines; json "
                      "and csv do not apply");
        return SL_CLI_USAGE;
    }
    /* Without --gpus, o.gpus stays 0 and sl_cli_gres_conf says it is
     * required, after --nodes, in the order of the usage line. */
    if ((gpus && sl_cli_int_arg("--gpus", gpus, 1, SL_EXEC_MAX_GPUS, &o.gpus,
                                &err) < 0) ||
        (shards && sl_cli_int_arg("--shards", shards, 0, SL_CLI_SHARDS_MAX,
                                  &o.shards, &err) < 0))
        return sl_cli_usage_error(&err);
    if (only) {
        size_t i;
        for (i = 0; i < SL_ARRAY_LEN(only_names); i++)
            if (strcmp(only, only_names[i].name) == 0)
                break;
        if (i == SL_ARRAY_LEN(only_names)) {
            sl_cli_errorf("--only: must be gres.conf or slurm.conf, got "
                          "'%.64s'",
                          only);
            return SL_CLI_USAGE;
        }
        o.part = only_names[i].part;
    }
    if (!o.device)
        o.device = "/dev/nvidia%d";
    o.models = models;
    o.domains = domains;
    sl_buf_init(&out);
    if ((rc = sl_cli_gres_conf(&o, &out, &err)) == -ENOMEM) {
        sl_cli_errorf("%s", err.text);
        code = SL_CLI_FAILED;
    } else if (rc < 0) {
        code = sl_cli_usage_error(&err);
    } else if (fwrite(out.data, 1, out.len, stdout) != out.len) {
        sl_cli_errorf("standard output: %s", strerror(errno));
        code = SL_CLI_FAILED;
    }
    sl_buf_fini(&out);
    return code;
}

int sl_cli_cmd_slurm(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    return gres_conf(ctx, argc, argv);
}
