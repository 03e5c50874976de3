/*
 * test_heap.c - the deadline heap (src/util/heap.c): order, moves, removal
 * of any item, reserve, and a long random run from a fixed seed checked
 * against a plain array after every operation.
 */
#include <errno.h>
#include <stdlib.h>

#include "../../src/util/heap.h"
#include "../../src/util/rng.h"
#include "../tap.h"

struct thing {
    int id;
    struct sl_heap_item due;
};

#define NTHINGS 200

/* Whether the heap holds exactly the things marked 'in', each at its key,
 * with the heap order and positions intact. */
static bool consistent(const struct sl_heap *h, const struct thing *t,
                       const bool *in, const int64_t *key)
{
    size_t count = 0;

    for (size_t i = 0; i < h->n; i++) {
        if (h->v[i]->pos != i + 1)
            return false;
        if (i > 0 && h->v[(i - 1) / 2]->key > h->v[i]->key)
            return false;
    }
    for (int i = 0; i < NTHINGS; i++) {
        if (sl_heap_has(&t[i].due) != in[i])
            return false;
        if (in[i]) {
            count++;
            if (t[i].due.key != key[i] || h->v[t[i].due.pos - 1] != &t[i].due)
                return false;
        }
    }
    return count == h->n;
}

static void order(void)
{
    struct sl_heap h;
    struct thing t[5] = {{0, {0, 0}}, {1, {0, 0}}, {2, {0, 0}}, {3, {0, 0}}, {4, {0, 0}}};
    static const int64_t keys[5] = {50, 10, 40, 10, 30};
    int64_t last = INT64_MIN;
    bool sorted = true;
    int n = 0;

    sl_heap_init(&h);
    ok(sl_heap_top(&h) == NULL, "an empty heap has no top");
    for (int i = 0; i < 5; i++)
        sl_heap_set(&h, &t[i].due, keys[i]);
    is_int(h.n, 5, "five items go in");
    while (sl_heap_top(&h)) {
        struct thing *x = SL_CONTAINER_OF(sl_heap_top(&h), struct thing, due);
        sorted &= x->due.key >= last;
        last = x->due.key;
        sl_heap_del(&h, &x->due);
        ok(!sl_heap_has(&x->due), "item %d is out once removed", x->id);
        n++;
    }
    ok(sorted && n == 5, "they come out smallest key first, ties included");
    sl_heap_fini(&h);
}

static void moves(void)
{
    struct sl_heap h;
    struct thing a = {0, {0, 0}}, b = {1, {0, 0}}, c = {2, {0, 0}};

    sl_heap_init(&h);
    sl_heap_set(&h, &a.due, 10);
    sl_heap_set(&h, &b.due, 20);
    sl_heap_set(&h, &c.due, 30);
    sl_heap_set(&h, &c.due, 5);
    ok(sl_heap_top(&h) == &c.due, "an item moved earlier comes to the top");
    sl_heap_set(&h, &c.due, 25);
    ok(sl_heap_top(&h) == &a.due, "and moved later, goes down again");
    is_int(h.n, 3, "moving an item does not add it twice");
    sl_heap_del(&h, &b.due);
    sl_heap_del(&h, &b.due);
    is_int(h.n, 2, "removing an item twice removes it once");
    ok(sl_heap_reserve(&h, 1000) == 0 && h.cap >= 1000, "reserve makes room");
    sl_heap_fini(&h);
    ok(h.n == 0 && h.v == NULL, "fini leaves an empty heap");
}

static void random_run(void)
{
    static struct thing t[NTHINGS];
    bool in[NTHINGS] = {false};
    int64_t key[NTHINGS] = {0};
    struct sl_heap h;
    struct sl_rng r;
    bool good = true, tops = true;
    int ops = 0;

    sl_heap_init(&h);
    sl_rng_seed(&r, 42);
    for (int i = 0; i < NTHINGS; i++)
        t[i] = (struct thing){i, {0, 0}};
    for (ops = 0; ops < 20000 && good; ops++) {
        int i = (int)sl_rng_below(&r, NTHINGS);
        uint64_t what = sl_rng_below(&r, 10);
        if (what < 6) {
            key[i] = (int64_t)sl_rng_below(&r, 1000) - 100;
            good = sl_heap_set(&h, &t[i].due, key[i]) == 0;
            in[i] = true;
        } else if (what < 9) {
            sl_heap_del(&h, &t[i].due);
            in[i] = false;
        } else if (sl_heap_top(&h)) {
            /* pop the top: it must be a smallest key of those in */
            struct thing *x = SL_CONTAINER_OF(sl_heap_top(&h), struct thing, due);
            for (int k = 0; k < NTHINGS; k++)
                if (in[k] && key[k] < x->due.key)
                    tops = false;
            sl_heap_del(&h, &x->due);
            in[x->id] = false;
        }
        good = good && consistent(&h, t, in, key);
    }
    ok(good, "20,000 random sets, moves and removals keep the heap consistent (%d done)",
       ops);
    ok(tops, "every top taken was a smallest key");
    sl_heap_fini(&h);
}

int main(void)
{
    order();
    moves();
    random_run();
    return done_testing();
}
