/*
 * test_jfield.c - src/util/jfield.h against its contract: the error that
 * names a field path, paths joined from a parent with the key shown
 * printable and bounded, members that are null counted absent, objects
 * whose keys must all be known (and never null), bounded string members,
 * and jansson's allocation failures told apart from syntax errors.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../../src/util/jfield.h"
#include "../tap.h"

static void test_fail_and_path(void)
{
    struct sl_error err = {"", ""};
    char p[SL_JF_PATH];

    is_int(sl_jf_fail(&err, "spec.gpus", "must be %d or more", 0), -EINVAL,
           "sl_jf_fail returns -EINVAL");
    is_str(err.field, "spec.gpus", "and names the field");
    ok(strstr(err.text, "must be 0 or more") != NULL, "and says why: %s", err.text);

    sl_jf_path(p, "spec", "gpus");
    is_str(p, "spec.gpus", "parent.key");
    sl_jf_path(p, "", "kind");
    is_str(p, "kind", "a top-level key alone");
    sl_jf_path(p, "groups[0]", "grou\n- !\x1b[31m");
    ok(strchr(p, '\n') == NULL && strchr(p, '\x1b') == NULL && strncmp(p, "groups[0].grou?", 15) == 0,
       "a key from the input with control characters is shown with '?': %s", p);
    sl_jf_path(p, "a", "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk");
    ok(strlen(p) < 2 + 40 + 4 && strstr(p, "...") != NULL, "a long key is cut at 40 bytes "
       "and shown cut: %s", p);
    sl_jf_path(p, "a", "\xff\xfe");
    is_str(p, "a.??", "invalid UTF-8 in a key is shown with '?'");
}

static void test_member_and_keys(void)
{
    static const char *const allowed[] = {"name", "gpus", NULL};
    struct sl_error err = {"", ""};
    json_t *o = json_pack("{s:s, s:n}", "name", "x", "gpus");

    ok(sl_jf_member(o, "name") != NULL, "a member that is there");
    ok(sl_jf_member(o, "gpus") == NULL, "a null member counts as absent");
    ok(sl_jf_member(o, "other") == NULL, "an absent one");
    is_int(sl_jf_check_keys(o, "spec", allowed, &err), -EINVAL, "a null value is refused");
    is_str(err.field, "spec.gpus", "naming it");
    ok(strstr(err.text, "must not be null") != NULL, "saying leave it out: %s", err.text);
    json_object_set_new(o, "gpus", json_integer(1));
    is_int(sl_jf_check_keys(o, "spec", allowed, &err), 0, "known keys only: accepted");
    json_object_set_new(o, "colour", json_string("blue"));
    is_int(sl_jf_check_keys(o, "spec", allowed, &err), -EINVAL, "an unknown key is refused");
    is_str(err.field, "spec.colour", "naming it");
    is_int(sl_jf_check_keys(json_object_get(o, "name"), "spec.name", allowed, &err), -EINVAL,
           "not an object: refused");
    ok(strstr(err.text, "must be an object") != NULL, "saying so");
    json_decref(o);
}

static void test_get_str(void)
{
    struct sl_error err = {"", ""};
    json_t *o = json_pack("{s:s, s:i, s:s, s:s, s:s}", "name", "abc", "n", 3, "ctl", "a\tb",
                          "long", "abcdefgh", "empty", "");
    char dst[8] = "keep";

    is_int(sl_jf_get_str(o, "name", "m", dst, sizeof(dst), true, &err), 0, "a string");
    is_str(dst, "abc", "copied");
    sl_strlcpy(dst, "keep", sizeof(dst));
    is_int(sl_jf_get_str(o, "absent", "m", dst, sizeof(dst), false, &err), 0,
           "absent and optional: 0");
    is_str(dst, "keep", "dst left as it was");
    is_int(sl_jf_get_str(o, "absent", "m", dst, sizeof(dst), true, &err), -EINVAL,
           "absent and required: refused");
    is_str(err.field, "m.absent", "naming it");
    ok(strstr(err.text, "is required") != NULL, "saying it is required");
    is_int(sl_jf_get_str(o, "n", "m", dst, sizeof(dst), true, &err), -EINVAL,
           "a number: refused");
    ok(strstr(err.text, "must be a string") != NULL, "saying it must be a string");
    is_int(sl_jf_get_str(o, "long", "m", dst, sizeof(dst), true, &err), -EINVAL,
           "longer than size-1 bytes: refused, never cut");
    ok(strstr(err.text, "1 to 7") != NULL, "saying the bound: %s", err.text);
    is_int(sl_jf_get_str(o, "empty", "m", dst, sizeof(dst), true, &err), -EINVAL,
           "an empty string: refused");
    is_int(sl_jf_get_str(o, "ctl", "m", dst, sizeof(dst), true, &err), -EINVAL,
           "a control character: refused");
    json_decref(o);
}

static void test_load(void)
{
    static const char doc[] = "{\"a\": [1, 2]}";
    json_error_t e;
    json_t *v = sl_jf_loadb(doc, strlen(doc), 0, &e);

    ok(json_is_object(v) && !sl_jf_oom(NULL), "a document loads; no allocation failed");
    json_decref(v);
    v = sl_jf_loadb("{\"a\": ", 6, 0, &e);
    ok(v == NULL && !sl_jf_oom(&e), "a syntax error is a syntax error, not memory");
}

int main(void)
{
    test_fail_and_path();
    test_member_and_keys();
    test_get_str();
    test_load();
    return done_testing();
}
