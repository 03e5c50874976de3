/*
 * array.h - job arrays (spec.array, `sluice run --array`): Slurm's
 * --array syntax parsed into the list of indices and the limit of elements
 * running at once.
 *
 * Syntax: one or more parts joined with ',', then an optional "%N":
 *   I          one index
 *   A-B        A to B (A <= B)
 *   A-B:S      A, A+S, ... up to B (S >= 1)
 * Indices are decimal without sign or leading zero (0 itself is allowed),
 * 0..SL_ARRAY_INDEX_MAX; at most SL_ARRAY_MAX elements in all; an index
 * given twice is refused; N is 1..SL_ARRAY_MAX. The elements are the
 * indices in ascending order. The text is at most SL_ARRAY_TEXT_MAX - 1
 * bytes and is kept as written (it has one meaning).
 * Pure: no I/O, no shared state; thread-safe.
 */
#ifndef SL_CORE_ARRAY_H
#define SL_CORE_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#include "../util/util.h"

#define SL_ARRAY_MAX 1000         /* elements of one array */
#define SL_ARRAY_INDEX_MAX 999999 /* the largest index */
#define SL_ARRAY_TEXT_MAX 256     /* spec.array, terminator included */

struct sl_array {
    int n;                        /* elements, 1..SL_ARRAY_MAX */
    int limit;                    /* at most this many running; 0 = no limit */
    int32_t index[SL_ARRAY_MAX];  /* ascending, distinct */
};

/* Parse 'text'. Returns 0 with *out filled, or -EINVAL with 'err' naming
 * the field "spec.array" and the reason. */
int sl_array_parse(const char *text, struct sl_array *out, struct sl_error *err);

#endif
