/*
 * copy.c - an SQLite store copied into an empty PostgreSQL store (copy.h).
 *
 * It works below the store's interface, on both databases' own APIs: the
 * interface reads and writes rows the engine's way, one at a time, while a
 * copy wants every table whole. The tables and their columns are read from
 * the databases themselves (the two schemas have the same tables and
 * columns in the same order, which pg_schema.t checks), in the order their
 * migrations created them, so a table comes after those it refers to.
 * PostgreSQL's tokens.id is SQLite's rowid of the token (pg_int.h). Values
 * go as COPY's text format: integers and text as SQLite gives them, reals
 * with 17 significant digits (the ledger is conserved exactly), blobs as
 * bytea hex, NULL as \N.
 */
#include "copy.h"

#include <errno.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../audit/audit.h"
#include "../util/buf.h"
#include "backend.h"
#include "pg_int.h"
#include "store.h"

#define MAX_TABLES 64

struct table {
    char name[64];
    int64_t rows;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* 's' as a field of COPY's text format. */
static void copy_text(struct sl_buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '\\': sl_buf_add(b, "\\\\", 2); break;
        case '\n': sl_buf_add(b, "\\n", 2); break;
        case '\r': sl_buf_add(b, "\\r", 2); break;
        case '\t': sl_buf_add(b, "\\t", 2); break;
        default: sl_buf_add(b, s + i, 1);
        }
    }
}

static void copy_value(struct sl_buf *b, sqlite3_stmt *q, int i)
{
    static const char hex[] = "0123456789abcdef";

    switch (sqlite3_column_type(q, i)) {
    case SQLITE_NULL:
        sl_buf_add(b, "\\N", 2);
        break;
    case SQLITE_INTEGER:
        sl_buf_printf(b, "%lld", (long long)sqlite3_column_int64(q, i));
        break;
    case SQLITE_FLOAT:
        sl_buf_printf(b, "%.17g", sqlite3_column_double(q, i));
        break;
    case SQLITE_BLOB: {
        const unsigned char *p = sqlite3_column_blob(q, i);
        int n = sqlite3_column_bytes(q, i);
        sl_buf_add(b, "\\\\x", 3);
        for (int k = 0; k < n; k++) {
            char h[2] = {hex[p[k] >> 4], hex[p[k] & 15]};
            sl_buf_add(b, h, 2);
        }
        break;
    }
    default:
        copy_text(b, (const char *)sqlite3_column_text(q, i), (size_t)sqlite3_column_bytes(q, i));
    }
}

/* PostgreSQL's answer to 'sql' (no parameters), or NULL with 'err'. */
static PGresult *pg_q(PGconn *c, const char *sql, struct sl_error *err)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK)
        return r;
    sl_errorf(err, -EIO, "target: %.*s", (int)strcspn(PQresultErrorMessage(r), "\n"),
              PQresultErrorMessage(r));
    PQclear(r);
    return NULL;
}

/* Copy one table; t->rows gets the rows sent. */
static int copy_table(sqlite3 *db, PGconn *pg, struct table *t, struct sl_error *err)
{
    char sql[1024];
    struct sl_buf cols, sel, row;
    sqlite3_stmt *q = NULL;
    PGresult *r;
    bool tokens = strcmp(t->name, "tokens") == 0;
    int ncols = 0, rc = 0, step;

    sl_buf_init(&cols);
    sl_buf_init(&sel);
    sl_buf_init(&row);
    snprintf(sql, sizeof(sql), "SELECT name FROM pragma_table_info('%s') ORDER BY cid", t->name);
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
        rc = sl_errorf(err, -EIO, "source: %s: %s", t->name, sqlite3_errmsg(db));
        goto out;
    }
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(q, 0);
        sl_buf_printf(&cols, "%s\"%s\"", ncols ? ", " : "", c);
        sl_buf_printf(&sel, "%s\"%s\"", ncols ? ", " : "", c);
        ncols++;
    }
    sqlite3_finalize(q);
    q = NULL;
    if (tokens) {
        /* a token's id is its rowid in SQLite, a column here */
        sl_buf_adds(&cols, ", \"id\"");
        sl_buf_adds(&sel, ", rowid");
        ncols++;
    }
    snprintf(sql, sizeof(sql), "SELECT 1 FROM \"%s\" LIMIT 1", t->name);
    if (!(r = pg_q(pg, sql, err))) {
        rc = -EIO;
        goto out;
    }
    if (PQntuples(r) > 0) {
        PQclear(r);
        rc = sl_errorf(err, -EEXIST, "target: table %s is not empty: the target must be a "
                       "new, empty database", t->name);
        goto out;
    }
    PQclear(r);
    snprintf(sql, sizeof(sql), "COPY \"%s\"(%s) FROM STDIN", t->name, cols.data);
    r = PQexec(pg, sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        rc = sl_errorf(err, -EIO, "target: %s: %.*s", t->name,
                       (int)strcspn(PQresultErrorMessage(r), "\n"), PQresultErrorMessage(r));
        PQclear(r);
        goto out;
    }
    PQclear(r);
    snprintf(sql, sizeof(sql), "SELECT %s FROM \"%s\"", sel.data, t->name);
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
        PQputCopyEnd(pg, "source unreadable");
        rc = sl_errorf(err, -EIO, "source: %s: %s", t->name, sqlite3_errmsg(db));
        goto drain;
    }
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        row.len = 0;
        for (int i = 0; i < ncols; i++) {
            if (i)
                sl_buf_add(&row, "\t", 1);
            copy_value(&row, q, i);
        }
        sl_buf_add(&row, "\n", 1);
        if (row.failed || PQputCopyData(pg, row.data, (int)row.len) != 1) {
            rc = sl_errorf(err, -EIO, "target: %s: %s", t->name,
                           row.failed ? "out of memory" : PQerrorMessage(pg));
            break;
        }
        t->rows++;
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = sl_errorf(err, -EIO, "source: %s: %s", t->name, sqlite3_errmsg(db));
    PQputCopyEnd(pg, rc ? "copy failed" : NULL);
drain:
    while ((r = PQgetResult(pg))) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK && rc == 0)
            rc = sl_errorf(err, -EIO, "target: %s: %.*s", t->name,
                           (int)strcspn(PQresultErrorMessage(r), "\n"),
                           PQresultErrorMessage(r));
        PQclear(r);
    }
out:
    sqlite3_finalize(q);
    sl_buf_fini(&cols);
    sl_buf_fini(&sel);
    sl_buf_fini(&row);
    return rc;
}

/* The audit log as copied: every record's hash chained to the one before
 * and its index columns matching its line, and as many as the source's
 * head says, ending at its hash. */
static int verify_audit(PGconn *pg, sqlite3 *db, struct sl_error *err)
{
    struct sl_audit_verifier v;
    struct sl_error ierr = {0};
    unsigned char want[32] = {0};
    int64_t want_size = 0;
    sqlite3_stmt *q = NULL;
    PGresult *r;
    int rc = 0;

    if (sqlite3_prepare_v2(db, "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1", -1, &q,
                           NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW) {
        want_size = sqlite3_column_int64(q, 0);
        if (sqlite3_column_bytes(q, 1) == 32)
            memcpy(want, sqlite3_column_blob(q, 1), 32);
    }
    sqlite3_finalize(q);
    if (!(r = pg_q(pg, "SELECT seq, at, actor, action, object, outcome, line FROM audit "
                       "ORDER BY seq", err)))
        return -EIO;
    sl_audit_verifier_init(&v, NULL);
    for (int i = 0; i < PQntuples(r) && rc == 0; i++) {
        struct sl_audit_index ix = {sl_pg_get_i64(r, i, 0), sl_pg_get_i64(r, i, 1),
                                    PQgetvalue(r, i, 2), PQgetvalue(r, i, 3),
                                    PQgetvalue(r, i, 4), PQgetvalue(r, i, 5)};
        const char *line = PQgetvalue(r, i, 6);
        size_t len = (size_t)PQgetlength(r, i, 6);
        if (sl_audit_verifier_feed(&v, line, len) < 0 || sl_audit_verifier_feed(&v, "\n", 1) < 0)
            rc = sl_errorf(err, -EBADMSG, "audit record %lld: %s", (long long)ix.seq, v.why);
        else if (sl_audit_index_check(&ix, line, len, &ierr) < 0)
            rc = sl_errorf(err, -EBADMSG, "audit: %s", ierr.text);
    }
    PQclear(r);
    if (rc == 0 && sl_audit_verifier_finish(&v) < 0)
        rc = sl_errorf(err, -EBADMSG, "audit: %s", v.why);
    if (rc == 0 && (v.head.size != want_size || memcmp(v.head.hash, want, 32) != 0))
        rc = sl_errorf(err, -EBADMSG,
                       "audit: the copy ends at record %lld, the source at %lld (or another "
                       "hash)", (long long)v.head.size, (long long)want_size);
    sl_audit_verifier_fini(&v);
    return rc;
}

int sl_store_copy(const char *from, const char *to, FILE *out, struct sl_error *err)
{
    struct table tables[MAX_TABLES];
    int ntables = 0, version = 0, rc = 0;
    const char *path = strncmp(from, "sqlite:", 7) == 0 ? from + 7 : from;
    char shown[512];
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    struct sl_store *st;
    PGconn *pg = NULL;
    PGresult *r;
    double t0 = now_s();

    if (strncmp(from, "postgres", 8) == 0 || !*path)
        return sl_errorf(err, -EINVAL, "--from: an SQLite store (a path or sqlite:PATH), "
                         "got '%.64s'", from);
    if (strncmp(to, "postgres://", 11) != 0 && strncmp(to, "postgresql://", 13) != 0)
        return sl_errorf(err, -EINVAL, "--to: a PostgreSQL store (postgres://...)");
    sl_pg_redact(to, shown, sizeof(shown));
    /* the target at this build's schema (created when new) */
    if (!(st = sl_store_open(to, true, false, err)))
        return -EIO;
    sl_store_close(st);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        rc = sl_errorf(err, -ENOENT, "--from %s: %s", path, db ? sqlite3_errmsg(db) : "no memory");
        goto out;
    }
    sqlite3_busy_timeout(db, 10000);
    /* one snapshot of the live store for everything read below */
    if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, NULL) != SQLITE_OK ||
        sqlite3_step(q) != SQLITE_ROW) {
        rc = sl_errorf(err, -EIO, "--from %s: not a readable SQLite store: %s", path,
                       sqlite3_errmsg(db));
        goto out;
    }
    version = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    q = NULL;
    if (version != (int)sl_sqlite_nmigrations || version != (int)sl_postgres_nmigrations) {
        rc = sl_errorf(err, -EPROTO,
                       "--from %s: schema version %d, this sluiced's is %d: start this "
                       "sluiced on it once (or sluiced migrate) before copying",
                       path, version, (int)sl_sqlite_nmigrations);
        goto out;
    }
    if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND "
                               "name NOT LIKE 'sqlite_%' ORDER BY rowid",
                           -1, &q, NULL) != SQLITE_OK) {
        rc = sl_errorf(err, -EIO, "--from %s: %s", path, sqlite3_errmsg(db));
        goto out;
    }
    while (sqlite3_step(q) == SQLITE_ROW && ntables < MAX_TABLES) {
        sl_strlcpy(tables[ntables].name, (const char *)sqlite3_column_text(q, 0),
                   sizeof(tables[0].name));
        tables[ntables++].rows = 0;
    }
    sqlite3_finalize(q);
    q = NULL;
    pg = PQconnectdb(to);
    if (PQstatus(pg) != CONNECTION_OK) {
        rc = sl_errorf(err, -EIO, "--to %s: %.*s", shown,
                       (int)strcspn(PQerrorMessage(pg), "\n"), PQerrorMessage(pg));
        goto out;
    }
    if (!(r = pg_q(pg, "BEGIN ISOLATION LEVEL SERIALIZABLE; SET CONSTRAINTS ALL DEFERRED; "
                       "SET synchronous_commit = on; SET client_encoding = 'UTF8'",
                   err))) {
        rc = -EIO;
        goto out;
    }
    PQclear(r);
    for (int i = 0; i < ntables && rc == 0; i++) {
        double ts = now_s();
        if ((rc = copy_table(db, pg, &tables[i], err)) == 0 && out)
            fprintf(out, "%-20s %10lld rows  %7.2f s\n", tables[i].name,
                    (long long)tables[i].rows, now_s() - ts);
    }
    /* verify: the rows of each table, then the audit chain */
    for (int i = 0; i < ntables && rc == 0; i++) {
        char sql[160];
        int64_t src = -1, dst = -1;
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM \"%s\"", tables[i].name);
        if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
            src = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
        q = NULL;
        if ((r = pg_q(pg, sql, err))) {
            dst = sl_pg_get_i64(r, 0, 0);
            PQclear(r);
        }
        if (src < 0 || src != dst)
            rc = sl_errorf(err, -EIO, "verify: table %s has %lld rows in the source's snapshot "
                           "and %lld in the copy", tables[i].name, (long long)src, (long long)dst);
    }
    if (rc == 0)
        rc = verify_audit(pg, db, err);
    if (rc == 0) {
        if (!(r = pg_q(pg, "COMMIT", err)))
            rc = -EIO;
        else if (strcmp(PQcmdStatus(r), "COMMIT") != 0)
            rc = sl_errorf(err, -EIO, "target: the transaction was rolled back at commit");
        PQclear(r);
    }
    if (rc == 0 && out)
        fprintf(out, "copied %d tables to %s in %.2f s; rows and the audit chain verified\n",
                ntables, shown, now_s() - t0);
out:
    if (rc < 0 && pg && PQstatus(pg) == CONNECTION_OK)
        PQclear(PQexec(pg, "ROLLBACK"));
    sqlite3_finalize(q);
    if (db) {
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        sqlite3_close(db);
    }
    PQfinish(pg);
    return rc;
}
