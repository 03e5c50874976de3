/*
 * depend.h - job dependencies (spec.dependency, `sluice run --dependency`)
 * in Slurm's syntax: parsing, the normalised text, and the verdict on a
 * dependency given the states of the jobs it names.
 *
 * Syntax: one or more conditions joined with ',' (all must hold):
 *   afterok:ID[:ID...]     each ID ended Succeeded
 *   afternotok:ID[:ID...]  each ID ended Failed, Cancelled, Lost or Timeout
 *   afterany:ID[:ID...]    each ID ended, in any way
 *   singleton              every earlier job (lower id) of the same name and
 *                          user has ended
 * IDs are decimal job ids without sign or leading zero, 1..2^53. At most
 * SL_DEP_MAX (type, id) pairs; a pair given twice, '?' (any of), Slurm's
 * "after" and "+time" forms, blanks and empty parts are refused.
 * Pure: no I/O, no shared state; thread-safe.
 */
#ifndef SL_CORE_DEPEND_H
#define SL_CORE_DEPEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/util.h"
#include "job.h"

#define SL_DEP_MAX 64             /* (type, id) pairs, singleton included */
#define SL_DEP_TEXT_MAX 1400      /* the normalised text, terminator included */

enum sl_dep_type { SL_DEP_AFTEROK, SL_DEP_AFTERNOTOK, SL_DEP_AFTERANY, SL_DEP_SINGLETON };

struct sl_dep_item {
    enum sl_dep_type type;
    int64_t id;                   /* 0 for singleton */
};

struct sl_depend {
    int n;                        /* 1..SL_DEP_MAX */
    struct sl_dep_item item[SL_DEP_MAX];
};

/* Parse 'text' (NUL-terminated). Returns 0 with *out filled, or -EINVAL
 * with 'err' naming the field "spec.dependency" and the reason; *out is
 * unspecified on failure. */
int sl_depend_parse(const char *text, struct sl_depend *out, struct sl_error *err);

/* The normalised text of 'd': conditions in the order of their first
 * appearance, one per type, IDs in the order given ("afterok:3:4,singleton").
 * Parsing it gives the same pairs. Returns the length, or -ENOSPC when it
 * does not fit 'size' (SL_DEP_TEXT_MAX always does). */
int sl_depend_format(const struct sl_depend *d, char *buf, size_t size);

/* What the engine knows of a job a dependency names. */
struct sl_dep_state {
    bool known;                   /* false: no such job (or not visible) */
    enum sl_job_state state;
};

/* The state of job 'id' into *st; returns 0 or a negated errno. */
typedef int (*sl_dep_lookup_fn)(void *arg, int64_t id, struct sl_dep_state *st);

enum sl_dep_verdict {
    SL_DEP_MET,                   /* every condition holds: it may start */
    SL_DEP_WAIT,                  /* some condition may still hold later */
    SL_DEP_NEVER,                 /* some condition can never hold */
};

/* The verdict on 'd': 'lookup' gives the state of each ID; 'singleton' is
 * the earliest job of the same name and user with a lower id that has not
 * ended (id 0: none). A job that is Pending, Running or Preempted has not
 * ended. A condition that can never hold wins over one that waits, then a
 * waiting one over those met. 'why' (may be NULL) receives the first
 * deciding condition in words: "waiting for dependency afterok:12 (job 12
 * is Running)", "dependency afterok:12 can never be satisfied: job 12 ended
 * Failed", "dependency afterok:12 can never be satisfied: job 12 does not
 * exist"; "" when met. Returns the verdict, or a negated errno from
 * 'lookup'. */
int sl_depend_eval(const struct sl_depend *d, sl_dep_lookup_fn lookup, void *arg,
                   int64_t singleton, enum sl_job_state singleton_state, char *why,
                   size_t size);

/* The type's name as written ("afterok"). */
const char *sl_dep_type_name(enum sl_dep_type t);

#endif
