/*
 * test_store.c - the SQLite store's WAL checkpointer thread
 * (sl_store_checkpointer_start): who may start it, that the WAL stays
 * bounded while commits go on, and that everything committed is there
 * after close and reopen.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/store/store.h"
#include "../tap.h"

#define PAGES 8 /* wake the checkpointer at this many new WAL frames */

/* This process's threads, from /proc/self/status. */
static int thread_count(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;

    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "Threads:", 8) == 0)
            n = (int)strtol(line + 8, NULL, 10);
    if (f)
        fclose(f);
    return n;
}

static long long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

int main(void)
{
    char dir[] = "/tmp/sluice-test-store.XXXXXX", path[256], wal[300], val[32], got[32];
    struct sl_error err = {0};
    struct sl_store *w = NULL, *r = NULL;
    long long wal_max = 0;
    bool all_ok = true;

    if (!mkdtemp(dir)) {
        ok(0, "a temp dir");
        return done_testing();
    }
    snprintf(path, sizeof(path), "%s/sluice.db", dir);
    snprintf(wal, sizeof(wal), "%s-wal", path);

    w = sl_store_open(path, true, false, &err);
    ok(w != NULL, "a writer opens a new store");
    r = sl_store_open(path, false, false, &err);
    ok(r != NULL, "a reader opens it too");
    ok(sl_store_checkpointer_start(r, PAGES, &err) == -EINVAL,
       "a reader may not start a checkpointer");
    memset(&err, 0, sizeof(err));
    ok(sl_store_checkpointer_start(w, PAGES, &err) == 0, "the writer starts one%s%s",
       err.text[0] ? ": " : "", err.text);
    ok(sl_store_checkpointer_start(w, PAGES, &err) == -EINVAL, "but only one");

    /* 3,000 small commits: far more WAL than the bound below if nothing
     * checkpointed. */
    for (int i = 0; i < 3000 && all_ok; i++) {
        long long sz;
        snprintf(val, sizeof(val), "v%d", i);
        all_ok = sl_store_begin(w) == 0 && sl_store_meta_set(w, "k", val) == 0 &&
                 sl_store_meta_set(w, val, val) == 0 && sl_store_commit(w, NULL) == 0;
        if ((sz = file_size(wal)) > wal_max)
            wal_max = sz;
    }
    ok(all_ok, "3,000 commits succeed");
    /* at most 16 x PAGES frames (and those of one commit) before the WAL
     * starts over; a frame is a 4 KiB page and a 24-byte header */
    ok(wal_max > 0 && wal_max <= (16 * PAGES + 8) * (4096 + 24) + 32,
       "the WAL stays bounded: %lld bytes at most", wal_max);
    ok(sl_store_meta_get(r, "k", got, sizeof(got)) == 0 && strcmp(got, "v2999") == 0,
       "a reader sees the last commit");
    {
        int before = thread_count();
        sl_store_close(r);
        sl_store_close(w);
        is_int(thread_count(), before - 1, "close stops the checkpointer's thread");
    }

    w = sl_store_open(path, true, false, &err);
    ok(w && sl_store_meta_get(w, "k", got, sizeof(got)) == 0 && strcmp(got, "v2999") == 0,
       "after reopening, the last value is there");
    all_ok = w != NULL;
    for (int i = 0; i < 3000 && all_ok; i += 7) {
        snprintf(val, sizeof(val), "v%d", i);
        all_ok = sl_store_meta_get(w, val, got, sizeof(got)) == 0 && strcmp(got, val) == 0;
    }
    ok(all_ok, "and so is every row committed before");
    sl_store_close(w);

    unlink(wal);
    snprintf(wal, sizeof(wal), "%s-shm", path);
    unlink(wal);
    unlink(path);
    if (rmdir(dir) < 0)
        diag("could not remove %s", dir);
    return done_testing();
}
