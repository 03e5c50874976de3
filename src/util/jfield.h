/*
 * jfield.h - the small helpers of the manifest parsers outside src/core
 * (src/meter/pricing.c, src/policy/policy.c): an error naming a field path,
 * a path joined from its parent, an object member that is not null, an
 * object whose keys must all be known, and a bounded string member.
 */
#ifndef SL_JFIELD_H
#define SL_JFIELD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util.h"

#define SL_JF_PATH 96             /* bytes of a field path */

/* Fill 'err' (field 'path', the text) and return -EINVAL. */
int sl_jf_fail(struct sl_error *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* dst (SL_JF_PATH bytes) = parent.key, or key when parent is "". */
void sl_jf_path(char *dst, const char *parent, const char *key);
/* obj[key], or NULL when absent or null. */
const json_t *sl_jf_member(const json_t *obj, const char *key);
/* 'v' must be an object holding only keys of 'allowed' (NULL-ended). */
int sl_jf_check_keys(const json_t *v, const char *path, const char *const *allowed,
                     struct sl_error *err);

/* obj[key], when present (else "is required" when 'required'), as a
 * string of 1 to size-1 bytes without control characters, copied to dst. */
int sl_jf_get_str(const json_t *obj, const char *key, const char *parent, char *dst,
                  size_t size, bool required, struct sl_error *err);

#endif
