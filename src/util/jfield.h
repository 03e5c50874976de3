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
/* dst (SL_JF_PATH bytes) = parent.key, or key when parent is "": the key
 * shown as sl_text_show shows it (at most 40 bytes, printable). */
void sl_jf_path(char *dst, const char *parent, const char *key);
/* obj[key], or NULL when absent or null. */
const json_t *sl_jf_member(const json_t *obj, const char *key);

/* Out of memory in jansson. jansson reports an allocation that fails
 * inside its parser as a syntax error ("string or '}' expected"), which
 * would blame the input for the machine's state; so jfield.c gives jansson
 * an allocator that notes failures per thread. sl_jf_watch starts
 * watching on this thread; sl_jf_oom says whether an allocation of
 * jansson's failed since (and, given the error of a failed load, also
 * when jansson said so itself). A failure then is -ENOMEM. */
void sl_jf_watch(void);
bool sl_jf_oom(const json_error_t *e); /* e may be NULL */
/* json_loadb, watched: after a NULL, sl_jf_oom(e) tells memory from
 * syntax. A load during which an allocation failed returns NULL even when
 * jansson returned a value: its lexer drops bytes it cannot store. */
json_t *sl_jf_loadb(const char *buf, size_t len, size_t flags, json_error_t *e);
/* 'v' must be an object holding only keys of 'allowed' (NULL-ended). */
int sl_jf_check_keys(const json_t *v, const char *path, const char *const *allowed,
                     struct sl_error *err);

/* obj[key], when present (else "is required" when 'required'), as a
 * string of 1 to size-1 bytes without control characters, copied to dst. */
int sl_jf_get_str(const json_t *obj, const char *key, const char *parent, char *dst,
                  size_t size, bool required, struct sl_error *err);

#endif
