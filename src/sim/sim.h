/*
 * sim.h - `sluice sim`: the scheduler run against a trace with a virtual
 * clock and a simulated executor (SPEC.md section 7).
 *
 * Fill mode reproduces the protocol of the FGD paper (USENIX ATC'23) on the
 * openb files: the pods are shuffled with the seed, resampled with
 * replacement (or thinned) until their GPU demand is target x capacity,
 * placed one at a time in that order, and never leave. Timed mode replays
 * arrivals and run times through queues, quotas, priorities, preemption
 * and backfill (see timed.c).
 *
 * Both write a JSON summary to 'out'; fill mode can also write one CSV row
 * per placement attempt (seq,pod,node,gpus,gpu_milli). Progress goes to
 * stderr when 'progress' is set. Not thread-safe (one run at a time per
 * options struct); no global state.
 */
#ifndef SL_SIM_H
#define SL_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "../util/buf.h"
#include "../util/util.h"

enum sl_sim_mode { SL_SIM_AUTO, SL_SIM_FILL, SL_SIM_TIMED };

struct sl_sim_opts {
    const char *nodes_path;       /* node list CSV; timed mode may omit it */
    const char *workload_path;    /* pods or jobs CSV */
    enum sl_sim_mode mode;        /* AUTO: fill for pod lists, else timed */
    const char *policy;           /* placement policy name; NULL = fgd */
    uint64_t seed;
    double target;                /* demand as a multiple of GPU capacity:
                                     fill mode's (0 = 1.3); timed mode
                                     resamples pod lists to it (0 = not) */
    double time_scale;            /* timed: inter-arrival times divided by it */
    const char *config_path;      /* timed: queues, quotas, classes (YAML) */
    const char *vc_path;          /* timed: "vc,node num" sizes, optional */
    const char *placements_path;  /* fill: CSV to write, or NULL */
    const char *scheduler;        /* timed: "sluice" (default) or "fifo" */
    int64_t max_jobs;             /* timed: replay at most this many; 0 = all */
    bool no_estimate;             /* timed: jobs declare no maxRuntime, so
                                     backfill has no run-time estimates */
    bool progress;                /* a progress bar on stderr */
};

/* Run one simulation. Returns 0 with the JSON summary appended to 'out',
 * or a negated errno with 'err' naming the fault (bad input names the file,
 * line and column). */
int sl_sim_run(const struct sl_sim_opts *o, struct sl_buf *out,
               struct sl_error *err);

#endif
