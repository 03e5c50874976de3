/*
 * test_store_sqlite.c - the store conformance suite (tests/store/) run on
 * the SQLite backend: every fresh store is a new database file in a temp
 * dir, removed at the end. A second backend gets a runner like this one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../store/conformance.h"

struct sqlite_dirs {
    char dir[64];
    char path[128];               /* the store open_fresh made last */
    int n;                        /* stores made */
};

static struct sl_store *open_fresh(void *arg)
{
    struct sqlite_dirs *d = arg;
    struct sl_error err = {0};
    struct sl_store *st;

    snprintf(d->path, sizeof(d->path), "sqlite:%s/store%d.db", d->dir, ++d->n);
    if (!(st = sl_store_open(d->path, true, false, &err)))
        fprintf(stderr, "# %s: %s\n", d->path, err.text);
    return st;
}

static struct sl_store *open_again(void *arg, bool writer)
{
    struct sqlite_dirs *d = arg;
    struct sl_error err = {0};
    struct sl_store *st = sl_store_open(d->path, writer, false, &err);

    if (!st)
        fprintf(stderr, "# %s: %s\n", d->path, err.text);
    return st;
}

int main(void)
{
    struct sqlite_dirs d = {.dir = "/tmp/sluice-store-sqlite.XXXXXX"};
    struct sl_store_conformance be = {&d, open_fresh, open_again};
    int rc;

    /* refused writes (the -EEXIST checks) are logged at warn */
    sl_log_set_level(SL_LOG_ERROR);
    if (!mkdtemp(d.dir)) {
        printf("not ok 1 - a temp dir\n1..1\n");
        return 1;
    }
    rc = sl_store_conformance(&be);
    for (int i = 1; i <= d.n; i++) {
        static const char *const ext[] = {"", "-wal", "-shm"};
        for (size_t e = 0; e < 3; e++) {
            char path[160];
            snprintf(path, sizeof(path), "%s/store%d.db%s", d.dir, i, ext[e]);
            unlink(path);
        }
    }
    if (rmdir(d.dir) < 0)
        fprintf(stderr, "# could not remove %s\n", d.dir);
    return rc;
}
