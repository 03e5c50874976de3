/*
 * sqlite_wal.c - the SQLite backend's write-ahead log: making commits
 * durable (the commit token's sync) and checkpointing it off the thread
 * that commits.
 *
 * Durability. The writer runs with synchronous=NORMAL unless opened with
 * sync_full: a COMMIT writes its frames to the WAL file without flushing
 * it. The writer opens that file itself at open; sl_sqlite_sync flushes it
 * (fdatasync) on whichever thread calls it, touching neither the writer's
 * sqlite3 handle nor its statements: only the fd (set before any other
 * thread can see the store), the 'committed' counter (atomic) and 'synced'
 * (under sync_mu). One fdatasync covers every commit whose COMMIT returned
 * before it began, so a sync records the counter as it was just before
 * flushing. SQLite never deletes or replaces the WAL file while the writer
 * is open (a checkpoint restarts it in place), so the fd stays the WAL.
 *
 * Checkpoints. The writer's checkpointer thread has a connection of its
 * own; it shares with the writer only 'ck', under ck->mu.
 */
#include "sqlite_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The writer's checkpointer (sl_store_checkpointer_start). */
struct sl_sqlite_checkpointer {
    pthread_mutex_t mu;
    pthread_cond_t cond;          /* want or stop was set */
    pthread_cond_t idle;          /* busy was cleared */
    bool want, stop;              /* guarded by mu */
    bool busy;                    /* guarded by mu: a checkpoint runs */
    int done;                     /* guarded by mu: WAL frames copied to the
                                     database by the last checkpoint */
    bool running;                 /* thread started; writer thread only */
    int pages;                    /* wake it at this many new WAL frames */
    sqlite3 *db;                  /* its own connection; its thread only */
    pthread_t thread;
};

/* ---- durability ---------------------------------------------------------- */

int sl_sqlite_wal_open(struct sl_sqlite *s, struct sl_error *err)
{
    const char *db = sqlite3_db_filename(s->db, "main");
    const char *wal = db && *db ? sqlite3_filename_wal(db) : NULL;

    if (s->sync_full)
        return 0; /* every COMMIT flushes: nothing for sync to do */
    /* Migrating read the database, which in WAL mode creates the file. */
    if (!wal || !*wal)
        return sl_errorf(err, -EINVAL, "store: no WAL file (not a database on disk)");
    if ((s->wal_fd = open(wal, O_RDONLY | O_CLOEXEC)) < 0)
        return sl_errorf(err, -errno, "store: open %s: %s", wal, strerror(errno));
    return 0;
}

int sl_sqlite_sync(struct sl_store *st, uint64_t token)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    uint64_t upto;
    int rc = 0;

    if (token == 0 || s->wal_fd < 0)
        return 0; /* nothing committed, a reader, or sync_full */
    pthread_mutex_lock(&s->sync_mu);
    if (token > s->synced) {
        upto = atomic_load_explicit(&s->committed, memory_order_acquire);
        if (fdatasync(s->wal_fd) < 0)
            rc = -errno;
        else if (upto > s->synced)
            s->synced = upto;
    }
    pthread_mutex_unlock(&s->sync_mu);
    return rc;
}

/* ---- the checkpointer ---------------------------------------------------- */

static void *checkpointer_main(void *arg)
{
    struct sl_sqlite_checkpointer *ck = arg;

    pthread_setname_np(pthread_self(), "checkpoint");
    for (;;) {
        int rc, nlog = 0, ncopied = 0;
        pthread_mutex_lock(&ck->mu);
        while (!ck->want && !ck->stop)
            pthread_cond_wait(&ck->cond, &ck->mu);
        if (ck->stop) {
            pthread_mutex_unlock(&ck->mu);
            break;
        }
        ck->want = false;
        ck->busy = true;
        pthread_mutex_unlock(&ck->mu);
        /* PASSIVE: copies what no reader still needs, takes no lock that
         * the writer waits for, and calls no busy handler. */
        rc = sqlite3_wal_checkpoint_v2(ck->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &nlog,
                                       &ncopied);
        if (rc != SQLITE_OK && rc != SQLITE_BUSY)
            sl_warn("msg=\"wal checkpoint failed\" err=\"%s\"", sqlite3_errmsg(ck->db));
        pthread_mutex_lock(&ck->mu);
        ck->busy = false;
        if (rc == SQLITE_OK && ncopied > 0)
            ck->done = ncopied;
        pthread_cond_broadcast(&ck->idle);
        pthread_mutex_unlock(&ck->mu);
    }
    return NULL;
}

/* Called by SQLite on the writer's thread after each commit, with the
 * frames now in the WAL ('pages'). Replaces the automatic checkpoint.
 *
 * The thread copies frames to the database once 'ck->pages' new ones have
 * come since its last checkpoint. It rarely finds the WAL wholly copied
 * between two of our commits, and only a wholly copied WAL is reused from
 * its start by the next commit; so once the WAL is 4 times the threshold
 * and the thread has copied all but a few frames, this thread copies the
 * rest itself (little work, two fsyncs) and the WAL starts over. At 16
 * times (the thread is far behind) it waits for the thread's checkpoint to
 * end and checkpoints itself, as SQLite would have: the WAL stays within
 * 16 times the threshold plus one commit, as long as no reader holds an
 * old snapshot. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    struct sl_sqlite_checkpointer *ck = arg;
    bool idle, inline_ckpt;
    int behind, ncopied = 0;

    pthread_mutex_lock(&ck->mu);
    if (pages < ck->done)
        ck->done = 0; /* the WAL started over */
    behind = pages - ck->done;
    idle = !ck->want && !ck->busy;
    if (pages >= 16 * ck->pages) {
        while (ck->busy) /* a PASSIVE checkpoint beside it would give up */
            pthread_cond_wait(&ck->idle, &ck->mu);
        inline_ckpt = true;
    } else {
        inline_ckpt = idle && pages >= 4 * ck->pages && behind < ck->pages;
        if (idle && behind >= ck->pages) {
            ck->want = true;
            pthread_cond_signal(&ck->cond);
        }
    }
    pthread_mutex_unlock(&ck->mu);
    if (inline_ckpt &&
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, &ncopied) ==
            SQLITE_OK) {
        pthread_mutex_lock(&ck->mu);
        if (ncopied > ck->done)
            ck->done = ncopied;
        pthread_mutex_unlock(&ck->mu);
    }
    return SQLITE_OK;
}

static void checkpointer_free(struct sl_sqlite_checkpointer *ck)
{
    sqlite3_close(ck->db);
    pthread_cond_destroy(&ck->idle);
    pthread_cond_destroy(&ck->cond);
    pthread_mutex_destroy(&ck->mu);
    free(ck);
}

int sl_sqlite_checkpointer_start(struct sl_store *st, int pages, struct sl_error *err)
{
    struct sl_sqlite *s = sl_sqlite_of(st);
    struct sl_sqlite_checkpointer *ck = NULL;
    const char *path;
    char *msg = NULL;
    int rc;

    if (!s->writer || s->ck || pages < 1)
        return sl_errorf(err, -EINVAL, "store: checkpointer: writer only, once");
    if (!sqlite3_threadsafe())
        return sl_errorf(err, -ENOTSUP, "store: checkpointer: SQLite built without threads");
    if (!(path = sqlite3_db_filename(s->db, "main")) || !*path)
        return sl_errorf(err, -EINVAL, "store: checkpointer: no database file");
    if (!(ck = calloc(1, sizeof(*ck))))
        return sl_errorf(err, -ENOMEM, "store: out of memory");
    pthread_mutex_init(&ck->mu, NULL);
    pthread_cond_init(&ck->cond, NULL);
    pthread_cond_init(&ck->idle, NULL);
    ck->pages = pages;
    if (sqlite3_open_v2(path, &ck->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK ||
        sqlite3_exec(ck->db, "PRAGMA synchronous=NORMAL", NULL, NULL, &msg) != SQLITE_OK) {
        rc = sl_errorf(err, -EIO, "store: checkpointer: %s",
                       msg ? msg : ck->db ? sqlite3_errmsg(ck->db) : "out of memory");
        sqlite3_free(msg);
        goto fail;
    }
    if ((rc = pthread_create(&ck->thread, NULL, checkpointer_main, ck)) != 0) {
        rc = sl_errorf(err, -rc, "store: checkpointer: %s", strerror(rc));
        goto fail;
    }
    ck->running = true;
    s->ck = ck;
    /* Replaces SQLite's automatic checkpoint (which is itself a WAL hook). */
    sqlite3_wal_hook(s->db, wal_hook, ck);
    return 0;
fail:
    checkpointer_free(ck);
    return rc;
}

static void checkpointer_stop(struct sl_sqlite *s)
{
    struct sl_sqlite_checkpointer *ck = s->ck;

    if (!ck)
        return;
    /* Commits checkpoint themselves again from here on. */
    sqlite3_wal_autocheckpoint(s->db, 1000); /* SQLite's default */
    pthread_mutex_lock(&ck->mu);
    ck->stop = true;
    pthread_cond_signal(&ck->cond);
    pthread_mutex_unlock(&ck->mu);
    if (ck->running)
        pthread_join(ck->thread, NULL);
    checkpointer_free(ck);
    s->ck = NULL;
}

void sl_sqlite_wal_close(struct sl_sqlite *s)
{
    checkpointer_stop(s);
    if (s->wal_fd >= 0)
        close(s->wal_fd);
    s->wal_fd = -1;
}
