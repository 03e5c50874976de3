/*
 * jfield.c - see jfield.h.
 */
#include "jfield.h"

#include <stdlib.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int sl_jf_fail(struct sl_error *err, const char *path, const char *fmt, ...)
{
    char text[sizeof(err->text)];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return sl_errorf_field(err, -EINVAL, path, "%s", text);
}

void sl_jf_path(char *dst, const char *parent, const char *key)
{
    /* a key may be the input's (an unknown field): shown, never raw */
    char shown[48];

    sl_text_show(shown, sizeof(shown), key, strlen(key), 40);
    snprintf(dst, SL_JF_PATH, "%s%s%s", parent, *parent ? "." : "", shown);
}

const json_t *sl_jf_member(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

static _Thread_local bool jf_failed; /* an allocation of jansson's failed */

static void *jf_malloc(size_t n)
{
    void *p = malloc(n);

    if (!p)
        jf_failed = true;
    return p;
}

static void jf_free(void *p) { free(p); }

/* Before main, so before any jansson value exists (jansson requires it). */
__attribute__((constructor)) static void jf_alloc_init(void)
{
    json_set_alloc_funcs(jf_malloc, jf_free);
}

void sl_jf_watch(void) { jf_failed = false; }

bool sl_jf_oom(const json_error_t *e)
{
    return jf_failed || (e && (json_error_code(e) == json_error_out_of_memory || !e->text[0]));
}

json_t *sl_jf_loadb(const char *buf, size_t len, size_t flags, json_error_t *e)
{
    json_t *v;

    sl_jf_watch();
    v = json_loadb(buf, len, flags, e);
    if (v && jf_failed) {
        /* jansson's lexer drops a byte it cannot store and goes on: what
         * it returns after a failed allocation may not be what was sent */
        json_decref(v);
        v = NULL;
    }
    return v;
}

int sl_jf_check_keys(const json_t *v, const char *path, const char *const *allowed,
                     struct sl_error *err)
{
    const char *k;
    json_t *e;

    if (!json_is_object(v))
        return sl_jf_fail(err, path, "must be an object");
    json_object_foreach((json_t *)v, k, e)
    {
        size_t i;
        for (i = 0; allowed[i] && strcmp(k, allowed[i]) != 0; i++)
            ;
        if (!allowed[i]) {
            char p[SL_JF_PATH];
            sl_jf_path(p, path, k);
            return sl_jf_fail(err, p, "unknown field");
        }
        if (json_is_null(e)) {
            /* one meaning: given or left out (as src/core/fields.c) */
            char p[SL_JF_PATH];
            sl_jf_path(p, path, k);
            return sl_jf_fail(err, p, "must not be null: leave the field out for its default");
        }
    }
    return 0;
}

int sl_jf_get_str(const json_t *obj, const char *key, const char *parent, char *dst,
                  size_t size, bool required, struct sl_error *err)
{
    const json_t *v = sl_jf_member(obj, key);
    char p[SL_JF_PATH];
    const char *s;

    sl_jf_path(p, parent, key);
    if (!v)
        return required ? sl_jf_fail(err, p, "is required") : 0;
    if (!json_is_string(v))
        return sl_jf_fail(err, p, "must be a string");
    s = json_string_value(v);
    if (json_string_length(v) == 0 || json_string_length(v) >= size ||
        strlen(s) != json_string_length(v))
        return sl_jf_fail(err, p, "must be 1 to %zu characters", size - 1);
    for (const char *c = s; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return sl_jf_fail(err, p, "must not hold control characters");
    memcpy(dst, s, json_string_length(v) + 1);
    return 0;
}
