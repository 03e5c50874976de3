/*
 * imap.c - open addressing with linear probing; grows at 70 % load
 * (counting deleted slots), so a probe always ends at an empty slot.
 */
#include "imap.h"

#include <errno.h>
#include <stdlib.h>

static size_t slot_of(int64_t key, size_t cap)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (cap - 1);
}

void sl_imap_init(struct sl_imap *m)
{
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->len = m->used = 0;
}

void sl_imap_fini(struct sl_imap *m)
{
    free(m->keys);
    free(m->vals);
    sl_imap_init(m);
}

static int grow(struct sl_imap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    int64_t *keys;
    void **vals;

    if (m->len * 10 < m->cap * 4 && m->cap)
        cap = m->cap; /* mostly tombstones: rehash at the same size */
    keys = calloc(cap, sizeof(*keys));
    vals = calloc(cap, sizeof(*vals));
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        size_t s;
        if (m->keys[i] <= 0)
            continue;
        for (s = slot_of(m->keys[i], cap); keys[s]; s = (s + 1) & (cap - 1))
            ;
        keys[s] = m->keys[i];
        vals[s] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    m->used = m->len;
    return 0;
}

int sl_imap_put(struct sl_imap *m, int64_t key, void *val)
{
    size_t s, tomb = (size_t)-1;

    if ((m->used + 1) * 10 > m->cap * 7 && grow(m) < 0)
        return -ENOMEM;
    for (s = slot_of(key, m->cap); m->keys[s]; s = (s + 1) & (m->cap - 1)) {
        if (m->keys[s] == key) {
            m->vals[s] = val;
            return 0;
        }
        if (m->keys[s] < 0 && tomb == (size_t)-1)
            tomb = s;
    }
    if (tomb != (size_t)-1)
        s = tomb;
    else
        m->used++;
    m->keys[s] = key;
    m->vals[s] = val;
    m->len++;
    return 0;
}

static size_t find(const struct sl_imap *m, int64_t key)
{
    if (!m->cap)
        return (size_t)-1;
    for (size_t s = slot_of(key, m->cap); m->keys[s]; s = (s + 1) & (m->cap - 1))
        if (m->keys[s] == key)
            return s;
    return (size_t)-1;
}

void *sl_imap_get(const struct sl_imap *m, int64_t key)
{
    size_t s = find(m, key);
    return s == (size_t)-1 ? NULL : m->vals[s];
}

void *sl_imap_del(struct sl_imap *m, int64_t key)
{
    size_t s = find(m, key);
    void *v;

    if (s == (size_t)-1)
        return NULL;
    v = m->vals[s];
    m->keys[s] = -1;
    m->vals[s] = NULL;
    m->len--;
    return v;
}

int sl_imap_next(const struct sl_imap *m, size_t *pos, int64_t *key, void **val)
{
    for (; *pos < m->cap; (*pos)++) {
        if (m->keys[*pos] > 0) {
            *key = m->keys[*pos];
            *val = m->vals[*pos];
            (*pos)++;
            return 1;
        }
    }
    return 0;
}
