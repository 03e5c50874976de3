/*
 * heap.h - an intrusive binary min-heap of deadlines.
 *
 * The owner embeds a struct sl_heap_item in each object that can be due
 * (a running job, say) and finds the object again from the item with
 * SL_CONTAINER_OF. Each item is in the heap at most once and knows its
 * position, so moving or removing it costs O(log n) and finding what is due
 * costs O(1) per item due: a loop touches what is due, not everything.
 *
 * A zeroed item is "not in the heap". Not thread-safe.
 */
#ifndef SL_HEAP_H
#define SL_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl_heap_item {
    int64_t key;                  /* the deadline, in the owner's unit */
    size_t pos;                   /* index in the heap + 1; 0 = not in it */
};

struct sl_heap {
    struct sl_heap_item **v;      /* owned array of borrowed items */
    size_t n, cap;
};

#define SL_CONTAINER_OF(ptr, type, member)                                     \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

void sl_heap_init(struct sl_heap *h);
/* Frees the array; the items are the owner's (their pos is left as is). */
void sl_heap_fini(struct sl_heap *h);

/* Make room for 'n' items in all, so that sl_heap_set of up to that many
 * cannot fail. Returns 0 or -ENOMEM (heap unchanged). */
int sl_heap_reserve(struct sl_heap *h, size_t n);

/* Insert 'it' with 'key', or move it there when it is in the heap already.
 * Returns 0, or -ENOMEM when a new item found no room (then it is not in
 * the heap; nothing else changed). */
int sl_heap_set(struct sl_heap *h, struct sl_heap_item *it, int64_t key);

/* Remove 'it'; nothing when it is not in the heap. */
void sl_heap_del(struct sl_heap *h, struct sl_heap_item *it);

/* The item with the smallest key, or NULL when the heap is empty. Ties
 * come out in no particular order. */
static inline struct sl_heap_item *sl_heap_top(const struct sl_heap *h)
{
    return h->n ? h->v[0] : NULL;
}

static inline bool sl_heap_has(const struct sl_heap_item *it) { return it->pos != 0; }

#endif
