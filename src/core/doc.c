/*
 * doc.c - decode an untrusted YAML or JSON document into jansson values.
 *
 * JSON goes through json_loadb (duplicate keys refused). YAML goes through
 * libyaml's event parser, never its document loader, so that every node is
 * checked as it arrives: nesting is refused past DOC_MAX_DEPTH before any
 * deeper node is built, anchors and aliases are refused (no billion-laughs
 * expansion), mapping keys must be scalars and unique, strings must be valid
 * UTF-8 without NUL bytes.
 *
 * Scalar typing follows the YAML 1.2 core schema, restricted: a plain
 * (unquoted, untagged) scalar is null ("", "~", "null"), a boolean
 * ("true"/"false"), a decimal integer, or a decimal number; anything else,
 * and every quoted scalar, is a string. "yes"/"no"/"on"/"off" stay strings.
 * The only tags accepted are the standard !!str, !!map and !!seq.
 * Numbers have one meaning or are refused: a negative zero ("-0", "-0.0",
 * in YAML or JSON) could be read as 0 or as a sign error, and a plain
 * integer with a leading zero ("010") is 8 to a YAML 1.1 reader and 10 to a
 * 1.2 one.
 *
 * The format is JSON when the first non-blank byte is '{' or '[' (a JSON
 * array of documents is what `sluice apply` accepts), else YAML.
 * With 'multi', the result is always an array of documents: the YAML
 * documents of the stream (empty ones skipped), or for JSON the top-level
 * array itself, or a one-element array around a top-level object.
 *
 * Invariant: no partial result escapes; on failure *out is untouched.
 */
#include "spec.h"
#include "../util/jfield.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define DOC_MAX_DEPTH 32

#define TAG_STR "tag:yaml.org,2002:str"
#define TAG_MAP "tag:yaml.org,2002:map"
#define TAG_SEQ "tag:yaml.org,2002:seq"

struct frame {
    json_t *node; /* borrowed: owned by its parent or by dec.root */
    char *key;    /* owned; a mapping's key awaiting its value, or NULL */
};

struct dec {
    struct frame stack[DOC_MAX_DEPTH];
    int depth;    /* frames in use */
    json_t *root; /* owned; the document being built */
};



static int mark_error(struct sl_error *err, int rc, const yaml_mark_t *m,
                      const char *what)
{
    return sl_errorf_field(err, rc, "", "line %zu, column %zu: %s",
                           m->line + 1, m->column + 1, what);
}

static int parser_error(const yaml_parser_t *p, struct sl_error *err)
{
    const char *problem = p->problem ? p->problem : "malformed YAML";

    switch (p->error) {
    case YAML_MEMORY_ERROR:
        return sl_errorf_field(err, -ENOMEM, "", "out of memory");
    case YAML_READER_ERROR:
        return sl_errorf_field(err, -EINVAL, "", "byte offset %zu: %s",
                               p->problem_offset, problem);
    default:
        break;
    }
    if (p->context)
        return sl_errorf_field(err, -EINVAL, "", "line %zu, column %zu: %s %s",
                               p->problem_mark.line + 1,
                               p->problem_mark.column + 1, problem, p->context);
    return mark_error(err, -EINVAL, &p->problem_mark, problem);
}

static bool is_null_text(const char *s, size_t n)
{
    return n == 0 || (n == 1 && s[0] == '~') ||
           (n == 4 && (!memcmp(s, "null", 4) || !memcmp(s, "Null", 4) ||
                       !memcmp(s, "NULL", 4)));
}

static int bool_text(const char *s, size_t n)
{
    if (n == 4 && (!memcmp(s, "true", 4) || !memcmp(s, "True", 4) ||
                   !memcmp(s, "TRUE", 4)))
        return 1;
    if (n == 5 && (!memcmp(s, "false", 5) || !memcmp(s, "False", 5) ||
                   !memcmp(s, "FALSE", 5)))
        return 0;
    return -1;
}

/* [-+]?[0-9]+ */
static bool is_int_text(const char *s, size_t n)
{
    size_t i = (n && (s[0] == '-' || s[0] == '+')) ? 1 : 0;

    if (i == n)
        return false;
    for (; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? with a '.' or an
 * exponent (else it is an integer). */
static bool is_real_text(const char *s, size_t n)
{
    size_t i = 0, digits = 0;
    bool dot = false, exp = false;

    if (i < n && (s[i] == '-' || s[i] == '+'))
        i++;
    while (i < n && isdigit((unsigned char)s[i]))
        i++, digits++;
    if (i < n && s[i] == '.') {
        dot = true;
        i++;
        while (i < n && isdigit((unsigned char)s[i]))
            i++, digits++;
    }
    if (!digits)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t ed = 0;
        exp = true;
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            i++;
        while (i < n && isdigit((unsigned char)s[i]))
            i++, ed++;
        if (!ed)
            return false;
    }
    return i == n && (dot || exp);
}

/* Whether the number text s[0..n) is a negative zero: a '-' and no digit
 * but 0 before an exponent ("-0", "-00", "-0.0", "-.0e5"). */
static bool negative_zero(const char *s, size_t n)
{
    bool digit = false;

    if (n < 2 || s[0] != '-')
        return false;
    for (size_t i = 1; i < n && s[i] != 'e' && s[i] != 'E'; i++) {
        if (s[i] >= '1' && s[i] <= '9')
            return false;
        digit |= s[i] == '0';
    }
    return digit;
}

/* A new jansson value for a scalar event, typed as the file header says. */
static int scalar_value(const yaml_event_t *ev, json_t **out,
                        struct sl_error *err)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    bool typed = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !tag;
    json_t *v = NULL;
    int b;

    if (tag && strcmp(tag, TAG_STR) != 0 && strcmp(tag, "!") != 0)
        return mark_error(err, -EINVAL, &ev->start_mark,
                          "tags are not supported (only !!str)");
    if (!sl_utf8_valid((const unsigned char *)s, n))
        return mark_error(err, -EINVAL, &ev->start_mark, "invalid UTF-8");
    if (memchr(s, '\0', n))
        return mark_error(err, -EINVAL, &ev->start_mark,
                          "strings must not contain NUL bytes");
    if (typed && is_null_text(s, n)) {
        v = json_null();
    } else if (typed && (b = bool_text(s, n)) >= 0) {
        v = json_boolean(b);
    } else if (typed && (is_int_text(s, n) || is_real_text(s, n)) && negative_zero(s, n)) {
        return mark_error(err, -EINVAL, &ev->start_mark,
                          "-0 is not a number with one meaning: write 0");
    } else if (typed && is_int_text(s, n)) {
        char *end;
        long long x;
        size_t d = s[0] == '-' || s[0] == '+';
        if (n - d > 1 && s[d] == '0')
            return mark_error(err, -EINVAL, &ev->start_mark,
                              "an integer with a leading zero is octal to some YAML "
                              "readers: write it without, or quote it for a string");
        errno = 0;
        x = strtoll(s, &end, 10); /* libyaml NUL-terminates values */
        if (errno == ERANGE || end != s + n)
            return mark_error(err, -EINVAL, &ev->start_mark,
                              "integer out of range");
        v = json_integer((json_int_t)x);
    } else if (typed && is_real_text(s, n)) {
        char *end;
        double d = strtod(s, &end);
        if (end != s + n || !isfinite(d))
            return mark_error(err, -EINVAL, &ev->start_mark,
                              "number out of range");
        v = json_real(d);
    } else {
        v = json_stringn_nocheck(s, n);
    }
    if (!v)
        return sl_errorf_field(err, -ENOMEM, "", "out of memory");
    *out = v;
    return 0;
}

/* Attach 'v' (stolen) where the parser stands: document root, array
 * element or mapping value. */
static int attach(struct dec *d, json_t *v)
{
    struct frame *top;
    int rc;

    if (d->depth == 0) {
        json_decref(d->root); /* cannot hold one: a document has one node */
        d->root = v;
        return 0;
    }
    top = &d->stack[d->depth - 1];
    if (json_is_array(top->node)) {
        rc = json_array_append_new(top->node, v);
    } else {
        rc = json_object_set_new_nocheck(top->node, top->key, v);
        free(top->key);
        top->key = NULL;
    }
    return rc < 0 ? -ENOMEM : 0;
}

/* The top frame is a mapping waiting for a key. */
static bool want_key(const struct dec *d)
{
    return d->depth > 0 && json_is_object(d->stack[d->depth - 1].node) &&
           !d->stack[d->depth - 1].key;
}

static void dec_fini(struct dec *d)
{
    for (int i = 0; i < d->depth; i++)
        free(d->stack[i].key);
    d->depth = 0;
    json_decref(d->root);
    d->root = NULL;
}

static int on_scalar(struct dec *d, const yaml_event_t *ev,
                     struct sl_error *err)
{
    json_t *v = NULL;
    int rc;

    if (ev->data.scalar.anchor)
        return mark_error(err, -EINVAL, &ev->start_mark,
                          "anchors and aliases are not supported");
    if (want_key(d)) {
        struct frame *top = &d->stack[d->depth - 1];
        const char *k = (const char *)ev->data.scalar.value;
        size_t n = ev->data.scalar.length;
        const char *tag = (const char *)ev->data.scalar.tag;

        if (tag && strcmp(tag, TAG_STR) != 0 && strcmp(tag, "!") != 0)
            return mark_error(err, -EINVAL, &ev->start_mark,
                              "tags are not supported (only !!str)");
        if (!sl_utf8_valid((const unsigned char *)k, n))
            return mark_error(err, -EINVAL, &ev->start_mark, "invalid UTF-8");
        if (memchr(k, '\0', n))
            return mark_error(err, -EINVAL, &ev->start_mark,
                              "keys must not contain NUL bytes");
        if (json_object_get(top->node, k)) {
            char key[64], msg[96];
            sl_text_show(key, sizeof(key), k, n, 40);
            snprintf(msg, sizeof(msg), "duplicate key \"%s\"", key);
            return mark_error(err, -EINVAL, &ev->start_mark, msg);
        }
        if (!(top->key = strdup(k)))
            return sl_errorf_field(err, -ENOMEM, "", "out of memory");
        return 0;
    }
    if ((rc = scalar_value(ev, &v, err)) < 0)
        return rc;
    if ((rc = attach(d, v)) < 0)
        return sl_errorf_field(err, rc, "", "out of memory");
    return 0;
}

static int on_collection_start(struct dec *d, const yaml_event_t *ev,
                               struct sl_error *err)
{
    bool map = ev->type == YAML_MAPPING_START_EVENT;
    const char *anchor = (const char *)(map ? ev->data.mapping_start.anchor
                                            : ev->data.sequence_start.anchor);
    const char *tag = (const char *)(map ? ev->data.mapping_start.tag
                                         : ev->data.sequence_start.tag);
    json_t *v;
    int rc;

    if (anchor)
        return mark_error(err, -EINVAL, &ev->start_mark,
                          "anchors and aliases are not supported");
    if (tag && strcmp(tag, map ? TAG_MAP : TAG_SEQ) != 0 &&
        strcmp(tag, "!") != 0)
        return mark_error(err, -EINVAL, &ev->start_mark,
                          "tags are not supported (only !!str)");
    if (want_key(d))
        return mark_error(err, -EINVAL, &ev->start_mark,
                          "mapping keys must be scalars");
    if (d->depth >= DOC_MAX_DEPTH)
        return mark_error(err, -EINVAL, &ev->start_mark,
                          "nesting deeper than 32 levels");
    if (!(v = map ? json_object() : json_array()))
        return sl_errorf_field(err, -ENOMEM, "", "out of memory");
    if ((rc = attach(d, v)) < 0)
        return sl_errorf_field(err, rc, "", "out of memory");
    d->stack[d->depth].node = v; /* borrowed: the parent (or root) owns it */
    d->stack[d->depth].key = NULL;
    d->depth++;
    return 0;
}

static int decode_yaml(const char *buf, size_t len, bool multi, json_t **out,
                       struct sl_error *err)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    yaml_mark_t doc_mark = {0, 0, 0};
    struct dec d = {.depth = 0, .root = NULL};
    json_t *docs = NULL;
    bool have_parser = false, have_event = false, done = false;
    int rc = 0;

    if (!(docs = json_array())) {
        rc = sl_errorf_field(err, -ENOMEM, "", "out of memory");
        goto out;
    }
    if (!yaml_parser_initialize(&parser)) {
        rc = sl_errorf_field(err, -ENOMEM, "", "out of memory");
        goto out;
    }
    have_parser = true;
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    while (!done) {
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = parser_error(&parser, err);
            goto out;
        }
        have_event = true;
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT:
            doc_mark = ev.start_mark;
            break;
        case YAML_DOCUMENT_END_EVENT:
            /* An empty document ("---" with nothing after) is skipped. */
            if (d.root && !json_is_null(d.root)) {
                if (!multi && json_array_size(docs) > 0) {
                    rc = mark_error(err, -EINVAL, &doc_mark,
                                    "more than one document");
                    goto out;
                }
                if (json_array_append(docs, d.root) < 0) {
                    rc = sl_errorf_field(err, -ENOMEM, "", "out of memory");
                    goto out;
                }
            }
            json_decref(d.root);
            d.root = NULL;
            break;
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_ALIAS_EVENT:
            rc = mark_error(err, -EINVAL, &ev.start_mark,
                            "anchors and aliases are not supported");
            goto out;
        case YAML_SCALAR_EVENT:
            if ((rc = on_scalar(&d, &ev, err)) < 0)
                goto out;
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if ((rc = on_collection_start(&d, &ev, err)) < 0)
                goto out;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            d.depth--; /* the parser guarantees balance */
            break;
        default: /* stream start, no event */
            break;
        }
        yaml_event_delete(&ev);
        have_event = false;
    }
    if (multi) {
        *out = docs;
        docs = NULL;
    } else if (json_array_size(docs) == 0) {
        rc = sl_errorf_field(err, -EINVAL, "", "document is empty");
    } else {
        *out = json_incref(json_array_get(docs, 0));
    }
out:
    if (have_event)
        yaml_event_delete(&ev);
    if (have_parser)
        yaml_parser_delete(&parser);
    dec_fini(&d);
    json_decref(docs);
    return rc;
}

/* Depth of collections in 'v' is at most 'left'. */
static bool depth_ok(const json_t *v, int left)
{
    if (!json_is_object(v) && !json_is_array(v))
        return true;
    if (left == 0)
        return false;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!depth_ok(json_array_get(v, i), left - 1))
                return false;
    } else {
        const char *k;
        const json_t *e;
        /* jansson's iteration macros take non-const pointers */
        json_object_foreach((json_t *)v, k, e)
        {
            (void)k;
            if (!depth_ok(e, left - 1))
                return false;
        }
    }
    return true;
}

/* The first negative zero among the numbers of JSON text buf[0..len) (not
 * inside strings): jansson reads "-0" as the integer 0. Returns 0, or
 * -EINVAL with 'err' giving its line and column. */
static int json_negative_zero(const char *buf, size_t len, struct sl_error *err)
{
    bool in_str = false;
    int line = 1, col = 0;

    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        col++;
        if (c == '\n') {
            line++;
            col = 0;
        }
        if (in_str) {
            if (c == '\\')
                i++, col++;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"') {
            in_str = true;
        } else if (c == '-') {
            size_t j = i + 1;
            while (j < len && (isdigit((unsigned char)buf[j]) || buf[j] == '.' ||
                               buf[j] == 'e' || buf[j] == 'E' ||
                               ((buf[j] == '+' || buf[j] == '-') &&
                                (buf[j - 1] == 'e' || buf[j - 1] == 'E'))))
                j++;
            if (negative_zero(buf + i, j - i))
                return sl_errorf_field(err, -EINVAL, "",
                                       "line %d, column %d: -0 is not a number with "
                                       "one meaning: write 0",
                                       line, col);
            col += (int)(j - i - 1);
            i = j - 1;
        }
    }
    return 0;
}

static int decode_json(const char *buf, size_t len, bool multi, json_t **out,
                       struct sl_error *err)
{
    json_error_t jerr;
    json_t *v = NULL, *docs = NULL;
    int rc = 0;

    if (!(v = sl_jf_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr))) {
        char text[128];
        if (sl_jf_oom(&jerr))
            return sl_errorf_field(err, -ENOMEM, "", "out of memory");
        /* jansson may quote the offending input: keep the message clean */
        sl_text_show(text, sizeof(text), jerr.text, strlen(jerr.text), 120);
        return sl_errorf_field(err, -EINVAL, "", "line %d, column %d: %s",
                               jerr.line, jerr.column, text);
    }
    if ((rc = json_negative_zero(buf, len, err)) < 0)
        goto out;
    if (!depth_ok(v, DOC_MAX_DEPTH)) {
        rc = sl_errorf_field(err, -EINVAL, "", "nesting deeper than 32 levels");
        goto out;
    }
    if (multi && !json_is_array(v)) {
        if (!(docs = json_array()) || json_array_append(docs, v) < 0) {
            rc = sl_errorf_field(err, -ENOMEM, "", "out of memory");
            goto out;
        }
        *out = docs;
        docs = NULL;
        goto out;
    }
    *out = v;
    v = NULL;
out:
    json_decref(docs);
    json_decref(v);
    return rc;
}

int sl_doc_decode(const char *buf, size_t len, bool multi, json_t **out,
                  struct sl_error *err)
{
    size_t i = 0;

    if (len > SL_SPEC_MAX_BYTES)
        return sl_errorf_field(err, -EFBIG, "",
                               "document is larger than %d bytes",
                               SL_SPEC_MAX_BYTES);
    if (!buf)
        len = 0;
    while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' ||
                       buf[i] == '\n'))
        i++;
    if (i < len && (buf[i] == '{' || buf[i] == '['))
        return decode_json(buf, len, multi, out, err);
    return decode_yaml(len ? buf : "", len, multi, out, err);
}
