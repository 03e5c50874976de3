/*
 * heap.c - binary min-heap over an array; see heap.h.
 *
 * Invariant: for every i > 0, v[(i - 1) / 2]->key <= v[i]->key, and
 * v[i]->pos == i + 1.
 */
#include "heap.h"

#include <errno.h>
#include <stdlib.h>

void sl_heap_init(struct sl_heap *h)
{
    h->v = NULL;
    h->n = h->cap = 0;
}

void sl_heap_fini(struct sl_heap *h)
{
    free(h->v);
    sl_heap_init(h);
}

int sl_heap_reserve(struct sl_heap *h, size_t n)
{
    size_t cap = h->cap ? h->cap : 64;
    struct sl_heap_item **nv;

    if (n <= h->cap)
        return 0;
    while (cap < n) {
        if (cap > SIZE_MAX / 2 / sizeof(*nv))
            return -ENOMEM;
        cap *= 2;
    }
    if (!(nv = realloc(h->v, cap * sizeof(*nv))))
        return -ENOMEM;
    h->v = nv;
    h->cap = cap;
    return 0;
}

static void place(struct sl_heap *h, size_t i, struct sl_heap_item *it)
{
    h->v[i] = it;
    it->pos = i + 1;
}

/* Move the item at i towards the root while its parent's key is larger. */
static void sift_up(struct sl_heap *h, size_t i)
{
    struct sl_heap_item *it = h->v[i];

    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h->v[parent]->key <= it->key)
            break;
        place(h, i, h->v[parent]);
        i = parent;
    }
    place(h, i, it);
}

/* Move the item at i towards the leaves while a child's key is smaller. */
static void sift_down(struct sl_heap *h, size_t i)
{
    struct sl_heap_item *it = h->v[i];

    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->v[c + 1]->key < h->v[c]->key)
            c++;
        if (it->key <= h->v[c]->key)
            break;
        place(h, i, h->v[c]);
        i = c;
    }
    place(h, i, it);
}

int sl_heap_set(struct sl_heap *h, struct sl_heap_item *it, int64_t key)
{
    int64_t old = it->key;
    size_t i;

    if (!it->pos) {
        if (h->n == h->cap && sl_heap_reserve(h, h->n + 1) < 0)
            return -ENOMEM;
        it->key = key;
        place(h, h->n++, it);
        sift_up(h, h->n - 1);
        return 0;
    }
    i = it->pos - 1;
    it->key = key;
    if (key < old)
        sift_up(h, i);
    else if (key > old)
        sift_down(h, i);
    return 0;
}

void sl_heap_del(struct sl_heap *h, struct sl_heap_item *it)
{
    size_t i;
    struct sl_heap_item *last;

    if (!it->pos)
        return;
    i = it->pos - 1;
    it->pos = 0;
    last = h->v[--h->n];
    if (i == h->n)
        return;
    /* The last item fills the hole and goes whichever way its key says. */
    place(h, i, last);
    if (i > 0 && h->v[(i - 1) / 2]->key > last->key)
        sift_up(h, i);
    else
        sift_down(h, i);
}
