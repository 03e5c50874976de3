/*
 * simint.h - what the simulator's files share (internal to src/sim).
 */
#ifndef SL_SIMINT_H
#define SL_SIMINT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "../sched/sched.h"
#include "sim.h"
#include "trace.h"

/* Placement policy by name (NULL = fgd); the error names --policy. */
int sl_sim_policy(const char *name, enum sl_placement *out, struct sl_error *err);

/* Add the trace's nodes to the scheduler. */
int sl_sim_add_nodes(struct sl_sched *s, const struct sl_trace_node *n, size_t count,
                     struct sl_error *err);

/* The resources of trace row 't' as a job spec (id, queue, times left 0);
 * gpu_spec models become model bits (a model no node has gets an id too,
 * so such a task fits nowhere). */
int sl_sim_spec(struct sl_sched *s, const struct sl_trace_task *t,
                struct sl_sched_job_spec *out, struct sl_error *err);

/* The progress bar on stderr: "sim [####    ] 45% 6750/15000 jobs, day
 * 3.2" ('extra' may be NULL), redrawn at most ten times a second and at
 * the end, when b->on. */
struct sl_sim_bar {
    bool on;
    struct timespec last;         /* the last redraw */
};
void sl_sim_progress(struct sl_sim_bar *b, size_t done, size_t total, const char *what,
                     const char *extra, bool end);

int sl_sim_fill(const struct sl_sim_opts *o, struct sl_buf *out,
                struct sl_error *err);
int sl_sim_timed(const struct sl_sim_opts *o, struct sl_buf *out,
                 struct sl_error *err);

#endif
