/*
 * yaml_out.c - `-o yaml`: a JSON document as YAML, block style.
 *
 * Every string is double-quoted with JSON's escapes, which YAML 1.2's
 * double-quoted scalars read the same way, so that no string can be taken
 * for a number, a boolean, null or a key; a key is written plain only
 * when it is a safe identifier. Empty objects and arrays are {} and [].
 * The output loads (PyYAML, libyaml) to exactly the document `-o json`
 * prints. sl_cli_print_json prints this instead of JSON once -o yaml has
 * switched it on (sl_cli_set_yaml).
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A string as a double-quoted scalar. */
static int put_str(const char *s, size_t len)
{
    json_t *j = json_stringn(s, len);
    int rc = j && json_dumpf(j, stdout, JSON_ENCODE_ANY) == 0 ? 0 : -EIO;

    json_decref(j);
    return rc;
}

/* A key: plain when [A-Za-z_][A-Za-z0-9_-]* and not a word YAML reads as
 * something else, else quoted. */
static int put_key(const char *k)
{
    static const char *const words[] = {"true", "false", "null", "yes", "no",
                                        "on",   "off",   "y",    "n"};
    bool plain = (k[0] >= 'a' && k[0] <= 'z') || (k[0] >= 'A' && k[0] <= 'Z') || k[0] == '_';

    for (const char *p = k; plain && *p; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                (*p >= '0' && *p <= '9') || *p == '_' || *p == '-';
    for (size_t i = 0; plain && i < SL_ARRAY_LEN(words); i++)
        plain = strcasecmp(k, words[i]) != 0;
    if (plain)
        return fputs(k, stdout) == EOF ? -EIO : 0;
    return put_str(k, strlen(k));
}

static bool is_empty_container(const json_t *v)
{
    return (json_is_object(v) && json_object_size(v) == 0) ||
           (json_is_array(v) && json_array_size(v) == 0);
}

static int put_node(const json_t *v, int indent);

/* A scalar or empty container, on the current line. */
static int put_scalar(const json_t *v)
{
    if (json_is_string(v))
        return put_str(json_string_value(v), json_string_length(v));
    if (json_is_object(v))
        return fputs("{}", stdout) == EOF ? -EIO : 0;
    if (json_is_array(v))
        return fputs("[]", stdout) == EOF ? -EIO : 0;
    if (json_is_real(v)) {
        /* YAML 1.1 readers (PyYAML) take 1e20 for a string: a float
         * needs a dot and a signed exponent, 1.0e+20 */
        char buf[64], *e;
        size_t n = json_dumpb(v, buf, sizeof(buf) - 4, JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
        if (n == 0 || n >= sizeof(buf) - 4)
            return -EIO;
        buf[n] = '\0';
        if ((e = strpbrk(buf, "eE"))) {
            if (e[1] >= '0' && e[1] <= '9') {
                memmove(e + 2, e + 1, strlen(e + 1) + 1);
                e[1] = '+';
            }
            if (!strchr(buf, '.')) {
                memmove(e + 2, e, strlen(e) + 1);
                memcpy(e, ".0", 2);
            }
        }
        return fputs(buf, stdout) == EOF ? -EIO : 0;
    }
    return json_dumpf(v, stdout, JSON_ENCODE_ANY) == 0 ? 0 : -EIO;
}

/* An item after "key:" or "-": a scalar on the same line, a container on
 * the next lines at 'indent'; the line (or lines) ended. */
static int put_value(const json_t *v, int indent)
{
    if ((!json_is_object(v) && !json_is_array(v)) || is_empty_container(v))
        return fputc(' ', stdout) == EOF || put_scalar(v) < 0 || fputc('\n', stdout) == EOF
                   ? -EIO
                   : 0;
    return fputc('\n', stdout) == EOF ? -EIO : put_node(v, indent);
}

/* A non-empty container, each entry on its own lines at 'indent'. */
static int put_node(const json_t *v, int indent)
{
    const char *key;
    json_t *x;
    size_t i;

    if (json_is_object(v)) {
        json_object_foreach ((json_t *)v, key, x) {
            if (printf("%*s", indent, "") < 0 || put_key(key) < 0 || fputc(':', stdout) == EOF ||
                put_value(x, indent + 2) < 0)
                return -EIO;
        }
        return 0;
    }
    json_array_foreach (v, i, x) {
        if (printf("%*s-", indent, "") < 0 || put_value(x, indent + 2) < 0)
            return -EIO;
    }
    return 0;
}

static bool yaml_on; /* -o yaml; the CLI is one thread */

void sl_cli_set_yaml(bool on) { yaml_on = on; }

bool sl_cli_yaml(void) { return yaml_on; }

int sl_cli_print_yaml(const json_t *v)
{
    if (!json_is_object(v) && !json_is_array(v)) {
        if (put_scalar(v) < 0 || fputc('\n', stdout) == EOF)
            return -EIO;
        return 0;
    }
    if (is_empty_container(v))
        return put_scalar(v) < 0 || fputc('\n', stdout) == EOF ? -EIO : 0;
    return put_node(v, 0);
}
