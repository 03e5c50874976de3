/*
 * simint.h - what the simulator's files share (internal to src/sim).
 */
#ifndef SL_SIMINT_H
#define SL_SIMINT_H

#include <stddef.h>

#include "../sched/cluster.h"
#include "sim.h"
#include "trace.h"

/* Placement policy by name (NULL = fgd); the error names --policy. */
int sl_sim_policy(const char *name, enum cl_policy *out, struct sl_error *err);
const char *sl_sim_policy_name(enum cl_policy p);

/* Add the trace's nodes to 'c' (models interned as they come). */
int sl_sim_add_nodes(struct cl_cluster *c, const struct sl_trace_node *n,
                     size_t count, struct sl_error *err);

/* One task of trace row 't' as a shape; gpu_spec models are interned (a
 * model no node has gets an id too, so such a task fits nowhere). */
int sl_sim_shape(struct cl_cluster *c, const struct sl_trace_task *t,
                 struct cl_shape *out, struct sl_error *err);

int sl_sim_fill(const struct sl_sim_opts *o, struct sl_buf *out,
                struct sl_error *err);
int sl_sim_timed(const struct sl_sim_opts *o, struct sl_buf *out,
                 struct sl_error *err);

#endif
