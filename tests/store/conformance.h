/*
 * conformance.h - the checks every store backend must pass: each operation
 * of struct sl_store_ops (src/store/store.h) against the contract stated
 * there, through the public sl_store_* functions.
 *
 * A backend gets a runner of its own, tests/unit/test_store_BACKEND.c,
 * which says how to open a fresh store of that backend and calls
 * sl_store_conformance (the Makefile links every test_store_*.c with this
 * suite). SQLite's is tests/unit/test_store_sqlite.c; a PostgreSQL backend
 * adds tests/unit/test_store_postgres.c the same way. Checks that only one
 * backend can make (SQLite's WAL checkpointer, its migrations of old data
 * dirs) stay in that backend's own tests (tests/unit/test_store.c).
 */
#ifndef SL_TESTS_STORE_CONFORMANCE_H
#define SL_TESTS_STORE_CONFORMANCE_H

#include <stdbool.h>

#include "../../src/store/store.h"

struct sl_store_conformance {
    void *arg;                    /* passed to both callbacks */
    /* The writer of a new, empty store (migrated, nothing in it); every
     * call makes another. NULL when it cannot (the check fails). */
    struct sl_store *(*open_fresh)(void *arg);
    /* Another connection to the store open_fresh made last: a reader
     * (writer false), or a writer again once the first one is closed. */
    struct sl_store *(*open_again)(void *arg, bool writer);
};

/* Run every check as TAP on stdout (numbered, with the plan at the end).
 * Returns 0 when all passed, else 1: the runner's exit status. */
int sl_store_conformance(const struct sl_store_conformance *be);

#endif
