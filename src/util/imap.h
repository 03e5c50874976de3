/*
 * imap.h - an open-addressing hash map from int64 keys (> 0) to pointers.
 *
 * Not thread-safe. Keys must be positive (0 marks an empty slot, -1 a
 * deleted one). Iteration order is unspecified.
 */
#ifndef SL_IMAP_H
#define SL_IMAP_H

#include <stddef.h>
#include <stdint.h>

struct sl_imap {
    int64_t *keys;   /* owned; cap entries */
    void **vals;     /* owned; cap entries */
    size_t cap;      /* power of two, or 0 */
    size_t len;      /* live entries */
    size_t used;     /* live + deleted slots */
};

void sl_imap_init(struct sl_imap *m);
void sl_imap_fini(struct sl_imap *m);
/* Insert or replace. Returns 0 or -ENOMEM (map unchanged). */
int sl_imap_put(struct sl_imap *m, int64_t key, void *val);
void *sl_imap_get(const struct sl_imap *m, int64_t key);
/* Remove; returns the value or NULL when absent. */
void *sl_imap_del(struct sl_imap *m, int64_t key);

/* Iterate: for (size_t i = 0; sl_imap_next(m, &i, &k, &v); ) ... */
int sl_imap_next(const struct sl_imap *m, size_t *pos, int64_t *key, void **val);

#endif
