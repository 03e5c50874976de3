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
 * IDs are decimal job ids without sign or leading zero, 1..2^53. As in
 * Slurm, an array's id (its first element's) names the whole array, judged
 * once every element has ended: afterok holds when every element ended
 * Succeeded, afternotok when at least one did not, afterany in any case;
 * ID_INDEX names one element of array ID (INDEX 0..SL_ARRAY_INDEX_MAX, no
 * leading zero). At most SL_DEP_MAX (type, id) pairs; a pair given twice,
 * '?' (any of), Slurm's "after" and "+time" forms, blanks and empty parts
 * are refused.
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
#define SL_DEP_TEXT_MAX 2048      /* the normalised text, terminator included */

enum sl_dep_type { SL_DEP_AFTEROK, SL_DEP_AFTERNOTOK, SL_DEP_AFTERANY, SL_DEP_SINGLETON };

struct sl_dep_item {
    enum sl_dep_type type;
    int64_t id;                   /* 0 for singleton */
    int32_t index;                /* ID_INDEX: the element of array 'id'
                                     with this index; -1 = 'id' itself */
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
 * appearance, one per type, IDs in the order given ("afterok:3:4_2,singleton").
 * Parsing it gives the same pairs. Returns the length, or -ENOSPC when it
 * does not fit 'size' (SL_DEP_TEXT_MAX always does). */
int sl_depend_format(const struct sl_depend *d, char *buf, size_t size);

/* What the engine knows of what an item names: one job (an element by
 * ID_INDEX too), or every element of the array whose id the item gives. */
struct sl_dep_state {
    bool known;                   /* false: no such job or element (or not
                                     visible) */
    int64_t id;                   /* one job: its id (an element's own) */
    enum sl_job_state state;      /* one job: its state */
    int elements;                 /* 0: one job; else the array's elements */
    int ended;                    /* an array: how many of them ended */
    int64_t waiting_id;           /* an array: one not ended, and its state */
    enum sl_job_state waiting_state;
    int64_t failed_id;            /* an array whose elements all ended: the
                                     first that ended other than Succeeded
                                     (0 = none), its index and state */
    int32_t failed_index;
    enum sl_job_state failed_state;
};

/* What item 'it' (never singleton) names, into *st (zeroed by the caller);
 * returns 0 or a negated errno. For an array, failed_* need only be set
 * once every element has ended. */
typedef int (*sl_dep_lookup_fn)(void *arg, const struct sl_dep_item *it,
                                struct sl_dep_state *st);

enum sl_dep_verdict {
    SL_DEP_MET,                   /* every condition holds: it may start */
    SL_DEP_WAIT,                  /* some condition may still hold later */
    SL_DEP_NEVER,                 /* some condition can never hold */
};

/* The verdict on 'd': 'lookup' gives the state of what each item names;
 * 'singleton' is the earliest job of the same name and user with a lower
 * id that has not ended (id 0: none). A job that is Pending, Running or
 * Preempted has not ended; an array waits until all its elements have. A
 * condition that can never hold wins over one that waits, then a waiting
 * one over those met. 'why' (may be NULL) receives the first deciding
 * condition in words: "waiting for dependency afterok:12 (job 12 is
 * Running)", "waiting for dependency afterok:20 (array 20: 2 of 5 elements
 * ended; job 22 is Running)", "dependency afterok:12 can never be
 * satisfied: job 12 ended Failed" ("job 23 (20_3) ended Failed" for an
 * array's element), "dependency afterok:12 can never be satisfied: job 12
 * does not exist"; "" when met. Returns the verdict, or a negated errno
 * from 'lookup'. */
int sl_depend_eval(const struct sl_depend *d, sl_dep_lookup_fn lookup, void *arg,
                   int64_t singleton, enum sl_job_state singleton_state, char *why,
                   size_t size);

/* The type's name as written ("afterok"). */
const char *sl_dep_type_name(enum sl_dep_type t);

#endif
