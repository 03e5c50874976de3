/*
 * test_store.c - what is particular to the SQLite backend and to choosing
 * a backend (the conformance suite, tests/store/, checks the contract every
 * backend shares): URIs; the embedded migrations bringing an older data
 * dir up to date and refusing a newer one; the WAL checkpointer thread
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

#include <sqlite3.h>

#include "../../src/store/backend.h"
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

/* sl_pg_redact(uri) into a buffer of 'size' (guarded past its end) is
 * 'want'. */
static void redacts(const char *uri, size_t size, const char *want)
{
    char buf[300];

    memset(buf, 'Z', sizeof(buf));
    sl_pg_redact(uri, buf, size);
    ok(strcmp(buf, want) == 0 && buf[size] == 'Z', "redact %s in %zu bytes: %s", uri, size,
       buf);
}

/* URIs: which backend; a PostgreSQL URI goes to libpq, and its password
 * never into a message. */
static void uris(const char *dir)
{
    struct sl_error err = {0};
    struct sl_store *st;
    char uri[300];
    uint64_t token = 0;

    redacts("postgres://u:pw@h:5/db", 64, "postgres://u:***@h:5/db");
    redacts("postgres://u@h/db?password=", 64, "postgres://u@h/db?password=***");
    redacts("postgres://u@h/db?password=", 28, "postgres://u@h/db?password=");
    redacts("postgres://h/db?password=x", 27, "postgres://h/db?password=*");
    redacts("postgres://h/db?p%61ssword=pw&sslmode=require", 80,
            "postgres://h/db?p%61ssword=***&sslmode=require");
    redacts("postgres://h/db?sslpassword=k&application_name=a@b", 80,
            "postgres://h/db?sslpassword=***&application_name=a@b");
    redacts("postgres://u:p@ss@h/db", 64, "postgres://u:***@h/db");
    redacts("postgres://u:pw@h/db", 12, "postgres://");
    redacts("no scheme", 4, "no ");
    errno = 0;
    st = sl_store_open("postgres://u:s3cret@127.0.0.1:1/sluice?connect_timeout=5", true,
                       false, &err);
    ok(!st && errno == EIO && strstr(err.text, "cannot connect to postgres://u:***@127.0.0.1:1"),
       "a postgres:// URI is PostgreSQL's: no server there fails with where (%s)", err.text);
    ok(!strstr(err.text, "s3cret"), "and the password is not in the message");
    memset(&err, 0, sizeof(err));
    st = sl_store_open("postgresql://127.0.0.1:1/sluice?password=s3cret&connect_timeout=5",
                       true, false, &err);
    ok(!st && strstr(err.text, "cannot connect") && !strstr(err.text, "s3cret"),
       "so is postgresql://, a password= parameter hidden too (%s)", err.text);
    snprintf(uri, sizeof(uri), "sqlite:%s/uri.db", dir);
    st = sl_store_open(uri, true, true, &err);
    ok(st && strcmp(st->ops->name, "sqlite") == 0, "sqlite:PATH opens SQLite");
    ok(st && sl_store_begin(st) == 0 && sl_store_meta_set(st, "k", "v") == 0 &&
           sl_store_commit(st, &token) == 0 && sl_store_sync(st, token) == 0,
       "with every commit durable, sync has nothing to do and succeeds");
    sl_store_close(st);
    snprintf(uri, sizeof(uri), "%s/uri.db", dir);
    st = sl_store_open(uri, false, false, &err);
    ok(st && strcmp(st->ops->name, "sqlite") == 0, "so does a plain path");
    sl_store_close(st);
    snprintf(uri, sizeof(uri), "%s/nodir/x.db", dir);
    ok(!sl_store_open(uri, true, false, &err) && err.text[0], "a path that cannot be "
       "created fails with a message: %s", err.text);
}

static int user_version(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    int v = -1;

    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

/* A data dir of schema version 3 (as an older sluiced left it, with a job
 * in it) is brought up to date; one from a newer sluiced is refused. */
static void migrations(const char *dir)
{
    char path[300], sql[64];
    sqlite3 *db = NULL;
    struct sl_error err = {0};
    struct sl_store *st;
    bool built = true;
    char *text = NULL;
    int rc = -1;

    ok(sl_sqlite_nmigrations >= 6 && sl_sqlite_migrations[0].version == 1 &&
           strcmp(sl_sqlite_migrations[0].name, "init") == 0,
       "the migrations are embedded in order, named after their files");
    snprintf(path, sizeof(path), "%s/old.db", dir);
    built = sqlite3_open(path, &db) == SQLITE_OK;
    for (int v = 0; v < 3 && built; v++)
        built = sqlite3_exec(db, sl_sqlite_migrations[v].sql, NULL, NULL, NULL) == SQLITE_OK;
    built = built && sqlite3_exec(db, "PRAGMA user_version = 3;"
                                      "INSERT INTO jobs(id, name, team, user, queue, "
                                      "priority_class, priority, state, attempt, retries, "
                                      "submitted_at, spec) VALUES(7, 'old', 'ml', 'u', 'q', "
                                      "'batch', 1, 0, 0, 0, 1000, '{}')",
                                  NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(db);
    ok(built, "a data dir at schema version 3 is made");
    st = sl_store_open(path, true, false, &err);
    ok(st != NULL, "it opens%s%s", err.text[0] ? ": " : "", err.text);
    is_int(user_version(path), (int)sl_sqlite_nmigrations, "and is migrated to the latest");
    text = st ? sl_store_job_lineage_get(st, 7, &rc) : NULL;
    ok(rc == 0 && text && !*text, "its job is there, with the columns added since");
    free(text);
    sl_store_close(st);
    snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", (int)sl_sqlite_nmigrations + 1);
    if (sqlite3_open(path, &db) == SQLITE_OK)
        sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    memset(&err, 0, sizeof(err));
    errno = 0;
    ok(!sl_store_open(path, true, false, &err) && strstr(err.text, "newer than this"),
       "a store of a newer schema is refused: %s", err.text);
    unlink(path);
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
    sl_log_set_level(SL_LOG_ERROR);
    uris(dir);
    migrations(dir);
    for (size_t i = 0; i < 3; i++) {
        static const char *const ext[] = {"", "-wal", "-shm"};
        snprintf(path, sizeof(path), "%s/uri.db%s", dir, ext[i]);
        unlink(path);
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
