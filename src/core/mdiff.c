/*
 * mdiff.c - comparing manifests: kind names as people type them, and the
 * field-by-field difference between an object's spec in force and the one
 * an apply would give it, with whether the document gave each field. The
 * engine refuses an apply that would reset a field left out
 * (docs/decisions/0011-apply-semantics.md) and answers a dry run with the
 * same list. Pure.
 */
#include "spec_int.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

/* Each kind's words, compared ignoring case, '-' and '_': the kind's name
 * and its plural. */
static const struct {
    enum sl_manifest_kind kind;
    const char *one, *many;
} kind_words[] = {
    {SL_KIND_TEAM, "team", "teams"},
    {SL_KIND_QUEUE, "queue", "queues"},
    {SL_KIND_COHORT, "cohort", "cohorts"},
    {SL_KIND_PRIORITY_CLASS, "priorityclass", "priorityclasses"},
    {SL_KIND_USER, "user", "users"},
    {SL_KIND_SCHEDULER, "scheduler", "schedulers"},
    {SL_KIND_PRICING, "pricing", "pricings"},
    {SL_KIND_BUDGET, "budget", "budgets"},
    {SL_KIND_POLICY, "policy", "policies"},
    {SL_KIND_DATASET, "dataset", "datasets"},
};

int sl_manifest_kind_parse(const char *word)
{
    char w[32];
    size_t n = 0;

    if (!word)
        return -EINVAL;
    for (; *word; word++) {
        if (*word == '-' || *word == '_')
            continue;
        if (n + 1 >= sizeof(w) || !isalpha((unsigned char)*word))
            return -EINVAL;
        w[n++] = (char)tolower((unsigned char)*word);
    }
    w[n] = '\0';
    for (size_t i = 0; i < SL_ARRAY_LEN(kind_words); i++)
        if (strcmp(w, kind_words[i].one) == 0 || strcmp(w, kind_words[i].many) == 0)
            return (int)kind_words[i].kind;
    return -EINVAL;
}

const char *sl_manifest_kind_name(int kind)
{
    for (size_t i = 0; sl_spec_manifest_kinds[i].name; i++)
        if (sl_spec_manifest_kinds[i].value == kind)
            return sl_spec_manifest_kinds[i].name;
    return NULL;
}

/* Whether 'given' (the document's spec, or NULL) gives the field at key
 * path keys[0..n): it holds the whole path, or a part of it whose value is
 * not an object with members (a list, a scalar, null or {} set the whole
 * of what is under it). */
static bool given_at(const json_t *given, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!json_is_object(given))
            return false;
        if (!(given = json_object_get(given, keys[i])))
            return false;
        if (!json_is_object(given) || json_object_size(given) == 0)
            return true;
    }
    return true;
}

struct walk {
    json_t *out;
    const json_t *given;
    const char *keys[16];
};

static int add_change(struct walk *w, size_t depth, const json_t *old, const json_t *new)
{
    char path[PATH_MAX_LEN] = "spec";
    json_t *c;

    for (size_t i = 0; i < depth; i++) {
        char p[PATH_MAX_LEN];
        sl_spec_path_key(p, path, w->keys[i]);
        sl_strlcpy(path, p, sizeof(path));
    }
    c = json_pack("{s:s, s:O, s:O, s:b}", "field", path, "old", old ? old : json_null(),
                  "new", new ? new : json_null(), "given",
                  given_at(w->given, w->keys, depth));
    if (!c || json_array_append_new(w->out, c) < 0)
        return -ENOMEM;
    return 0;
}

/* Compare 'old' and 'new' (either may be NULL: absent) at keys[0..depth). */
static int walk(struct walk *w, size_t depth, const json_t *old, const json_t *new)
{
    const char *k;
    json_t *v;
    int rc;

    if (old && new && json_equal(old, new))
        return 0;
    if (!json_is_object(old) && !json_is_object(new))
        return old || new ? add_change(w, depth, old, new) : 0;
    if (depth == SL_ARRAY_LEN(w->keys) || (old && !json_is_object(old)) ||
        (new && !json_is_object(new)))
        return add_change(w, depth, old, new);
    /* objects on both sides (or one side absent): member by member, the
     * old ones first, then those only in new */
    json_object_foreach((json_t *)(old ? old : new), k, v)
    {
        w->keys[depth] = k;
        if ((rc = walk(w, depth + 1, old ? v : NULL,
                       old ? json_object_get(new, k) : v)) < 0)
            return rc;
    }
    if (!old || !new)
        return 0;
    json_object_foreach((json_t *)new, k, v)
    {
        if (json_object_get(old, k))
            continue;
        w->keys[depth] = k;
        if ((rc = walk(w, depth + 1, NULL, v)) < 0)
            return rc;
    }
    return 0;
}

json_t *sl_manifest_compare(const json_t *old, const json_t *new, const json_t *given)
{
    struct walk w = {.out = json_array(), .given = given};

    if (!w.out)
        return NULL;
    if (walk(&w, 0, old, new) < 0) {
        json_decref(w.out);
        errno = ENOMEM;
        return NULL;
    }
    return w.out;
}
