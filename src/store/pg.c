/*
 * pg.c - the PostgreSQL backend (libpq): opening a connection, the
 * schema's migrations, transactions and the lease's fence, meta, the
 * helpers of pg_int.h and the ops table that store.c dispatches to. See
 * store.h for the contract and pg_int.h for how the backend's files divide
 * the work.
 *
 * Migrations are src/store/migrations/postgres/NNNN_*.sql, embedded at
 * build time (backend.h). The schema's version is the row 'schema_version'
 * of the table sluice_schema (created by open before the first migration);
 * a writer applies each pending migration in a transaction of its own that
 * first takes a transaction-scoped advisory lock, so two daemons that
 * start at once against one database migrate it once: the second waits,
 * then finds the version moved and applies nothing.
 */
#include "pg_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* pg_advisory_xact_lock's key for migrations: "sluice" in ASCII. */
#define MIGRATE_LOCK_KEY "126943911340389"

static const struct sl_store_ops pg_ops;

/* ---- parameters ---------------------------------------------------------- */

static int param_slot(struct sl_pg_params *p)
{
    if (p->n >= SL_PG_MAXP)
        abort(); /* a statement with more parameters than the table: a bug */
    p->owned[p->n] = NULL;
    return p->n++;
}

void sl_pg_params_fini(struct sl_pg_params *p)
{
    for (int i = 0; i < p->n; i++) {
        free(p->owned[i]);
        p->owned[i] = NULL;
    }
    p->n = 0;
}

int sl_pg_p_text(struct sl_pg_params *p, const char *s)
{
    int i = param_slot(p);
    p->v[i] = s;
    return i + 1;
}

int sl_pg_p_text_or_null(struct sl_pg_params *p, const char *s)
{
    return sl_pg_p_text(p, s && *s ? s : NULL);
}

int sl_pg_p_i64(struct sl_pg_params *p, int64_t x)
{
    int i = param_slot(p);
    snprintf(p->num[i], sizeof(p->num[i]), "%" PRId64, x);
    p->v[i] = p->num[i];
    return i + 1;
}

int sl_pg_p_ms_or_null(struct sl_pg_params *p, int64_t ms)
{
    if (!ms)
        return sl_pg_p_text(p, NULL);
    return sl_pg_p_i64(p, ms);
}

int sl_pg_p_double(struct sl_pg_params *p, double x)
{
    int i = param_slot(p);
    /* 17 significant digits: strtod reads back the same double */
    snprintf(p->num[i], sizeof(p->num[i]), "%.17g", x);
    p->v[i] = p->num[i];
    return i + 1;
}

int sl_pg_p_bytea(struct sl_pg_params *p, const void *b, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = b;
    int i = param_slot(p);
    char *s = malloc(2 * n + 3);

    if (!s)
        abort(); /* 2n + 3 bytes for a 32-byte hash: not a failure to handle */
    s[0] = '\\';
    s[1] = 'x';
    for (size_t k = 0; k < n; k++) {
        s[2 + 2 * k] = hex[u[k] >> 4];
        s[3 + 2 * k] = hex[u[k] & 15];
    }
    s[2 + 2 * n] = '\0';
    p->owned[i] = s;
    p->v[i] = s;
    return i + 1;
}

/* ---- results ------------------------------------------------------------- */

int64_t sl_pg_get_i64(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return 0;
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

double sl_pg_get_double(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return 0;
    return strtod(PQgetvalue(r, row, col), NULL);
}

static int unhex(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int sl_pg_get_bytea(const PGresult *r, int row, int col, void *out, size_t n)
{
    const char *s;
    unsigned char *o = out;

    if (PQgetisnull(r, row, col))
        return -EIO;
    s = PQgetvalue(r, row, col);
    /* bytea_output = hex (set at open): "\x" then two digits a byte */
    if (s[0] != '\\' || s[1] != 'x' || strlen(s + 2) != 2 * n)
        return -EIO;
    for (size_t k = 0; k < n; k++) {
        int hi = unhex(s[2 + 2 * k]), lo = unhex(s[3 + 2 * k]);
        if (hi < 0 || lo < 0)
            return -EIO;
        o[k] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

/* ---- running statements -------------------------------------------------- */

int sl_pg_errno(struct sl_pg *p, const PGresult *r)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = r ? PQresultErrorMessage(r) : PQerrorMessage(p->conn);
    size_t len = msg ? strcspn(msg, "\n") : 0;
    int rc = -EIO;

    if (state) {
        if (strcmp(state, "23505") == 0)
            rc = -EEXIST;
        else if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 ||
                 strcmp(state, "55P03") == 0)
            rc = -EBUSY;
        else if (strcmp(state, "53100") == 0)
            rc = -ENOSPC;
        else if (strcmp(state, "53200") == 0)
            rc = -ENOMEM;
    }
    sl_warn("msg=\"postgresql statement failed\" sqlstate=%s err=\"%.*s\"",
            state ? state : "none", (int)len, msg ? msg : "");
    return rc;
}

/* The statement's process-wide id, given on first use. */
static int stmt_id(struct sl_pg_stmt *s)
{
    static _Atomic int next = 1;
    int id = atomic_load_explicit(&s->id, memory_order_acquire);

    if (id)
        return id;
    {
        int want = atomic_fetch_add(&next, 1), expect = 0;
        if (atomic_compare_exchange_strong(&s->id, &expect, want))
            return want;
        return expect; /* another thread gave it one first */
    }
}

/* ---- the pipeline (the writer) -------------------------------------------- */

/* Read the results of every statement sent and not yet read, up to and
 * with a sync point. The last one's result (when 'keep') is returned in
 * *last; the first failure among the others is the return value. */
static int drain(struct sl_pg *p, bool keep, PGresult **last)
{
    int rc = 0, n = p->queued;

    if (last)
        *last = NULL;
    if (PQpipelineSync(p->conn) != 1) {
        p->queued = 0;
        return sl_pg_errno(p, NULL);
    }
    for (int k = 0; k < n; k++) {
        PGresult *r = PQgetResult(p->conn);
        ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
        if (!r) {
            rc = rc ? rc : sl_pg_errno(p, NULL);
            break;
        }
        if (st == PGRES_PIPELINE_ABORTED) {
            rc = rc ? rc : -EIO; /* after an earlier failure */
        } else if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
            if (!rc)
                rc = sl_pg_errno(p, r);
        }
        if (keep && k == n - 1 && last)
            *last = r;
        else
            PQclear(r);
        /* each statement's results end with a NULL */
        while ((r = PQgetResult(p->conn)))
            PQclear(r);
    }
    p->queued = 0;
    /* the sync point's own result */
    for (;;) {
        PGresult *r = PQgetResult(p->conn);
        if (!r) {
            if (PQstatus(p->conn) != CONNECTION_OK) {
                rc = rc ? rc : sl_pg_errno(p, NULL);
                break;
            }
            continue;
        }
        if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            break;
        }
        PQclear(r);
    }
    if (rc && last && *last && PQresultStatus(*last) != PGRES_COMMAND_OK &&
        PQresultStatus(*last) != PGRES_TUPLES_OK) {
        PQclear(*last);
        *last = NULL;
    }
    return rc;
}

/* Prepare 's' on this connection unless it is (in the pipeline: sent, its
 * result read with the next drain). */
static int prepare(struct sl_pg *p, struct sl_pg_stmt *s, char *name, size_t size)
{
    int id = stmt_id(s);
    PGresult *r;
    int rc = 0;

    snprintf(name, size, "s%d", id);
    if (id < p->nprepared && p->prepared[id])
        return 0;
    if (id >= p->nprepared) {
        int n = id + 64;
        bool *grown = realloc(p->prepared, (size_t)n * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        memset(grown + p->nprepared, 0, (size_t)(n - p->nprepared) * sizeof(*grown));
        p->prepared = grown;
        p->nprepared = n;
    }
    if (p->pipeline) {
        /* the server infers the parameters' types */
        if (PQsendPrepare(p->conn, name, s->sql, 0, NULL) != 1)
            return sl_pg_errno(p, NULL);
        p->queued++;
        p->prepared[id] = true; /* a failure fails the drain that reads it */
        return 0;
    }
    r = PQprepare(p->conn, name, s->sql, 0, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        sl_error("msg=\"postgresql prepare failed\" sql=\"%.60s\"", s->sql);
        rc = sl_pg_errno(p, r);
    } else {
        p->prepared[id] = true;
    }
    PQclear(r);
    return rc;
}

/* A result as returned: NULL with *rc for a failure. */
static PGresult *result(struct sl_pg *p, PGresult *r, int *rc)
{
    switch (PQresultStatus(r)) {
    case PGRES_TUPLES_OK:
    case PGRES_COMMAND_OK:
        *rc = 0;
        return r;
    default:
        *rc = sl_pg_errno(p, r);
        PQclear(r);
        return NULL;
    }
}

/* In the pipeline: send the statement (prepared 'name', or 'sql' text),
 * then drain; its result, or NULL with *rc. */
static PGresult *piped(struct sl_pg *p, const char *name, const char *sql,
                       const struct sl_pg_params *pa, int *rc)
{
    PGresult *r = NULL;
    int n = pa ? pa->n : 0, sent;

    sent = name ? PQsendQueryPrepared(p->conn, name, n, pa ? pa->v : NULL, NULL, NULL, 0)
                : PQsendQueryParams(p->conn, sql, n, NULL, pa ? pa->v : NULL, NULL, NULL, 0);
    if (sent != 1) {
        *rc = sl_pg_errno(p, NULL);
        return NULL;
    }
    p->queued++;
    if ((*rc = drain(p, true, &r)) < 0) {
        PQclear(r);
        return NULL;
    }
    if (!r) {
        *rc = -EIO;
        return NULL;
    }
    return r;
}

PGresult *sl_pg_query(struct sl_pg *p, struct sl_pg_stmt *s, const struct sl_pg_params *pa,
                      int *rc)
{
    char name[24];

    if ((*rc = prepare(p, s, name, sizeof(name))) < 0)
        return NULL;
    if (p->pipeline)
        return piped(p, name, NULL, pa, rc);
    return result(p, PQexecPrepared(p->conn, name, pa ? pa->n : 0, pa ? pa->v : NULL, NULL,
                                    NULL, 0),
                  rc);
}

int sl_pg_exec(struct sl_pg *p, struct sl_pg_stmt *s, const struct sl_pg_params *pa)
{
    int rc;
    PGresult *r = sl_pg_query(p, s, pa, &rc);

    if (!r)
        return rc;
    rc = (int)strtol(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return rc;
}

int sl_pg_exec_later(struct sl_pg *p, struct sl_pg_stmt *s, const struct sl_pg_params *pa)
{
    char name[24];
    int rc;

    if (!p->pipeline) {
        rc = sl_pg_exec(p, s, pa);
        return rc < 0 ? rc : 0;
    }
    if ((rc = prepare(p, s, name, sizeof(name))) < 0)
        return rc;
    if (PQsendQueryPrepared(p->conn, name, pa ? pa->n : 0, pa ? pa->v : NULL, NULL, NULL, 0) !=
        1)
        return sl_pg_errno(p, NULL);
    p->queued++;
    return 0;
}

int sl_pg_simple(struct sl_pg *p, const char *sql)
{
    PGresult *r;
    int rc = 0;

    if (p->pipeline) {
        r = piped(p, NULL, sql, NULL, &rc);
        PQclear(r);
        return rc;
    }
    r = PQexec(p->conn, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = sl_pg_errno(p, r);
    PQclear(r);
    return rc;
}

/* Send plain SQL without waiting (SAVEPOINT, RELEASE on the writer). */
static int simple_later(struct sl_pg *p, const char *sql)
{
    if (!p->pipeline)
        return sl_pg_simple(p, sql);
    if (PQsendQueryParams(p->conn, sql, 0, NULL, NULL, NULL, NULL, 0) != 1)
        return sl_pg_errno(p, NULL);
    p->queued++;
    return 0;
}

PGresult *sl_pg_query_text(struct sl_pg *p, const char *sql, const struct sl_pg_params *pa,
                           int *rc)
{
    if (p->pipeline)
        return piped(p, NULL, sql, pa, rc);
    return result(p, PQexecParams(p->conn, sql, pa ? pa->n : 0, NULL, pa ? pa->v : NULL, NULL,
                                  NULL, 0),
                  rc);
}

/* ---- transactions -------------------------------------------------------- */

static struct sl_pg_stmt q_fence = SL_PG_STMT(
    "SELECT 1 FROM ha_lease WHERE id = 1 AND epoch = $1 FOR KEY SHARE");

static int pg_begin(struct sl_store *st)
{
    struct sl_pg *p = sl_pg_of(st);
    int rc;

    /* on the writer, BEGIN goes with the group's first statement */
    if ((rc = simple_later(p, "BEGIN")) < 0)
        return rc;
    if (p->epoch) {
        /* The lease's fence (decision 0015): this transaction commits only
         * if this daemon still holds the epoch it leads under; the key
         * share lock keeps a takeover waiting until it has. */
        struct sl_pg_params pa;
        sl_pg_params_init(&pa);
        sl_pg_p_i64(&pa, p->epoch);
        rc = sl_pg_exec(p, &q_fence, &pa);
        if (rc == 0) {
            sl_error("msg=\"the lease moved on: this daemon no longer leads\" epoch=%" PRId64,
                     p->epoch);
            rc = -ESTALE;
        }
        if (rc < 0) {
            sl_pg_simple(p, "ROLLBACK");
            return rc;
        }
    }
    return 0;
}

static int pg_commit(struct sl_store *st, uint64_t *token)
{
    struct sl_pg *p = sl_pg_of(st);
    int rc = 0;
    PGresult *r = p->pipeline ? piped(p, NULL, "COMMIT", NULL, &rc) : PQexec(p->conn, "COMMIT");

    /* A COMMIT of an aborted transaction "succeeds" as a ROLLBACK: only
     * the command tag COMMIT means committed. With the pipeline, any
     * statement of the transaction that failed fails the drain. */
    if (!r) {
        if (rc == 0)
            rc = -EIO;
        sl_error("msg=\"postgresql commit failed\" err=\"%s\"", strerror(-rc));
    } else if (PQresultStatus(r) != PGRES_COMMAND_OK)
        rc = sl_pg_errno(p, r);
    else if (strcmp(PQcmdStatus(r), "COMMIT") != 0) {
        sl_error("msg=\"postgresql rolled the transaction back at commit\" tag=%s",
                 PQcmdStatus(r));
        rc = -EIO;
    }
    PQclear(r);
    if (rc < 0)
        return rc;
    p->committed++;
    if (token)
        *token = p->committed;
    return 0;
}

static int pg_rollback(struct sl_store *st)
{
    return sl_pg_simple(sl_pg_of(st), "ROLLBACK");
}

/* A savepoint and its release cannot fail but with the transaction: they
 * go down the pipeline unawaited. */
static int pg_savepoint(struct sl_store *st)
{
    return simple_later(sl_pg_of(st), "SAVEPOINT req");
}

static int pg_release(struct sl_store *st)
{
    return simple_later(sl_pg_of(st), "RELEASE SAVEPOINT req");
}

static int pg_rollback_to(struct sl_store *st)
{
    /* ROLLBACK TO keeps the savepoint open; the contract closes it. */
    struct sl_pg *p = sl_pg_of(st);
    int rc = sl_pg_simple(p, "ROLLBACK TO SAVEPOINT req");
    return rc ? rc : pg_release(st);
}

static int pg_sync(struct sl_store *st, uint64_t token)
{
    /* COMMIT returned after the server flushed it (synchronous_commit=on) */
    (void)st;
    (void)token;
    return 0;
}

static int pg_checkpointer_start(struct sl_store *st, int pages, struct sl_error *err)
{
    /* PostgreSQL checkpoints by itself */
    (void)st;
    (void)pages;
    (void)err;
    return 0;
}

static int pg_fence(struct sl_store *st, int64_t epoch)
{
    sl_pg_of(st)->epoch = epoch;
    return 0;
}

/* ---- meta ---------------------------------------------------------------- */

static struct sl_pg_stmt q_meta_get = SL_PG_STMT("SELECT value FROM meta WHERE key = $1");
static struct sl_pg_stmt q_meta_set =
    SL_PG_STMT("INSERT INTO meta(key, value) VALUES($1, $2) "
               "ON CONFLICT(key) DO UPDATE SET value = excluded.value");

static int pg_meta_get(struct sl_store *st, const char *key, char *buf, size_t size)
{
    struct sl_pg *p = sl_pg_of(st);
    struct sl_pg_params pa;
    PGresult *r;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, key);
    if (!(r = sl_pg_query(p, &q_meta_get, &pa, &rc)))
        return rc;
    rc = -ENOENT;
    if (PQntuples(r) == 1) {
        sl_strlcpy(buf, sl_pg_get_str(r, 0, 0), size);
        rc = 0;
    }
    PQclear(r);
    return rc;
}

static int pg_meta_set(struct sl_store *st, const char *key, const char *val)
{
    struct sl_pg_params pa;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, key);
    sl_pg_p_text(&pa, val);
    rc = sl_pg_exec(sl_pg_of(st), &q_meta_set, &pa);
    return rc < 0 ? rc : 0;
}

/* ---- open, migrate, close ------------------------------------------------ */

/* Append s[0..len) to out (of 'size', *n used), truncating; always
 * NUL-terminated. */
static void app(char *out, size_t size, size_t *n, const char *s, size_t len)
{
    if (*n + 1 >= size)
        return;
    if (len > size - 1 - *n)
        len = size - 1 - *n;
    memcpy(out + *n, s, len);
    *n += len;
    out[*n] = '\0';
}

/* Whether a query parameter's key may name a secret: any key with
 * "password" in it, any case (password, sslpassword), and any key written
 * with %-escapes (which libpq decodes), rather than decode it here. */
static bool secret_key(const char *k, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (k[i] == '%' || (i + 8 <= len && strncasecmp(k + i, "password", 8) == 0))
            return true;
    return false;
}

void sl_pg_redact(const char *uri, char *out, size_t size)
{
    const char *scheme = strstr(uri, "://"), *auth, *rest, *at = NULL;
    size_t n = 0;

    if (!size)
        return;
    out[0] = '\0';
    if (!scheme) {
        app(out, size, &n, uri, strlen(uri));
        return;
    }
    auth = scheme + 3;
    rest = auth + strcspn(auth, "/?");
    app(out, size, &n, uri, (size_t)(auth - uri));
    /* user:password@host: the password goes (the last '@' of the
     * authority ends the user information) */
    for (const char *p = auth; p < rest; p++)
        if (*p == '@')
            at = p;
    if (at) {
        const char *colon = memchr(auth, ':', (size_t)(at - auth));
        if (colon) {
            app(out, size, &n, auth, (size_t)(colon - auth));
            app(out, size, &n, ":***", 4);
        } else {
            app(out, size, &n, auth, (size_t)(at - auth));
        }
        auth = at;
    }
    app(out, size, &n, auth, (size_t)(rest - auth));
    /* the path, then each parameter, a secret's value replaced */
    {
        const char *q = strchr(rest, '?');
        if (!q) {
            app(out, size, &n, rest, strlen(rest));
            return;
        }
        app(out, size, &n, rest, (size_t)(q + 1 - rest));
        for (const char *p = q + 1; *p;) {
            size_t len = strcspn(p, "&"), klen = strcspn(p, "=&");
            if (klen < len && secret_key(p, klen)) {
                app(out, size, &n, p, klen + 1);
                app(out, size, &n, "***", 3);
            } else {
                app(out, size, &n, p, len);
            }
            p += len;
            if (*p == '&') {
                app(out, size, &n, "&", 1);
                p++;
            }
        }
    }
}

/* The schema's version: 0 for an empty database. */
static int schema_version(struct sl_pg *p, int *version)
{
    PGresult *r = PQexec(p->conn, "SELECT value FROM sluice_schema WHERE key = 'schema_version'");
    int rc = 0;

    *version = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = sl_pg_errno(p, r);
    else if (PQntuples(r) == 1)
        *version = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return rc;
}

/* Apply every pending migration: each in a transaction of its own, which
 * first takes the migrations' advisory lock and reads the version again
 * (another daemon may have applied it while this one waited). */
static int migrate(struct sl_pg *p, struct sl_error *err)
{
    const int latest = (int)sl_postgres_nmigrations;
    int version, rc;

    if ((rc = sl_pg_simple(p, "CREATE TABLE IF NOT EXISTS sluice_schema("
                              "key TEXT PRIMARY KEY, value TEXT NOT NULL)")) < 0 &&
        rc != -EEXIST)
        return sl_errorf(err, -EIO, "store: cannot create the schema's version table: %s",
                         PQerrorMessage(p->conn));
    for (;;) {
        char sql[160];
        if ((rc = sl_pg_simple(p, "BEGIN")) < 0 ||
            (rc = sl_pg_simple(p, "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK_KEY ")")) < 0 ||
            (rc = schema_version(p, &version)) < 0) {
            sl_pg_simple(p, "ROLLBACK");
            return sl_errorf(err, -EIO, "store: reading the schema's version: %s",
                             PQerrorMessage(p->conn));
        }
        if (version > latest) {
            sl_pg_simple(p, "ROLLBACK");
            return sl_errorf(err, -EPROTO,
                             "store: schema version %d is newer than this sluiced (%d)",
                             version, latest);
        }
        if (version == latest)
            return sl_pg_simple(p, "COMMIT") < 0
                       ? sl_errorf(err, -EIO, "store: %s", PQerrorMessage(p->conn))
                       : 0;
        {
            const struct sl_store_migration *m = &sl_postgres_migrations[version];
            PGresult *r = PQexec(p->conn, m->sql);
            if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
                const char *msg = PQresultErrorMessage(r);
                sl_errorf(err, -EIO, "store: migration %04d_%s: %.*s", m->version, m->name,
                          (int)strcspn(msg, "\n"), msg);
                PQclear(r);
                sl_pg_simple(p, "ROLLBACK");
                return -EIO;
            }
            PQclear(r);
            snprintf(sql, sizeof(sql),
                     "INSERT INTO sluice_schema(key, value) VALUES('schema_version', '%d') "
                     "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                     m->version);
            if ((rc = sl_pg_simple(p, sql)) < 0 || (rc = sl_pg_simple(p, "COMMIT")) < 0) {
                sl_pg_simple(p, "ROLLBACK");
                return sl_errorf(err, -EIO, "store: migration %04d_%s: %s", m->version,
                                 m->name, PQerrorMessage(p->conn));
            }
            sl_info("msg=\"store migrated\" version=%d name=%s", m->version, m->name);
        }
    }
}

/* Quiet libpq's notices (CREATE ... IF NOT EXISTS says "skipping"). */
static void notice_none(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static int connect_db(struct sl_pg *p, const char *uri, struct sl_error *err)
{
    char shown[512];
    PGresult *r;
    int ver;

    sl_pg_redact(uri, shown, sizeof(shown));
    if (!(p->conn = PQconnectdb(uri)))
        return sl_errorf(err, -ENOMEM, "store: out of memory");
    if (PQstatus(p->conn) != CONNECTION_OK) {
        const char *msg = PQerrorMessage(p->conn);
        return sl_errorf(err, -EIO, "store: cannot connect to %s: %.*s", shown,
                         (int)strcspn(msg, "\n"), msg);
    }
    PQsetNoticeProcessor(p->conn, notice_none, NULL);
    if ((ver = PQserverVersion(p->conn)) < 140000)
        return sl_errorf(err, -ENOTSUP,
                         "store: %s: PostgreSQL %d.%d is too old (14 or later is needed)",
                         shown, ver / 10000, ver % 10000);
    r = PQexec(p->conn, "SET synchronous_commit = on; SET client_encoding = 'UTF8'; "
                        "SET bytea_output = 'hex'; SET application_name = 'sluiced'; "
                        "SET extra_float_digits = 3; SET TIME ZONE 'UTC'");
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        const char *msg = PQresultErrorMessage(r);
        sl_errorf(err, -EIO, "store: %s: %.*s", shown, (int)strcspn(msg, "\n"), msg);
        PQclear(r);
        return -EIO;
    }
    PQclear(r);
    return 0;
}

static void pg_close(struct sl_store *st)
{
    struct sl_pg *p = sl_pg_of(st);

    if (p->conn)
        PQfinish(p->conn);
    free(p->prepared);
    free(p);
}

struct sl_store *sl_pg_open(const char *uri, bool writer, bool sync_full, struct sl_error *err)
{
    struct sl_pg *p = calloc(1, sizeof(*p));
    (void)sync_full; /* every COMMIT is durable (synchronous_commit=on) */
    if (!p) {
        sl_errorf(err, -ENOMEM, "store: out of memory");
        errno = ENOMEM;
        return NULL;
    }
    p->base.ops = &pg_ops;
    p->writer = writer;
    int rc;

    if ((rc = connect_db(p, uri, err)) < 0 || (writer && (rc = migrate(p, err)) < 0)) {
        pg_close(&p->base);
        errno = -rc;
        return NULL;
    }
    if (!writer) {
        /* a reader reads only what was committed; it never writes */
        int version = 0, latest = (int)sl_postgres_nmigrations;
        if (schema_version(p, &version) < 0 || version != latest) {
            sl_errorf(err, version > latest ? -EPROTO : -EIO,
                      "store: schema version %d where this sluiced needs %d", version,
                      latest);
            pg_close(&p->base);
            errno = EPROTO;
            return NULL;
        }
        sl_pg_simple(p, "SET default_transaction_read_only = on");
    } else if (PQenterPipelineMode(p->conn) == 1) {
        p->pipeline = true;
    } else {
        sl_warn("msg=\"postgresql: no pipeline mode; each statement waits\"");
    }
    return &p->base;
}

/* The table store.c dispatches through (store.h, struct sl_store_ops). */
static const struct sl_store_ops pg_ops = {
    .name = "postgres",
    .close = pg_close,
    .checkpointer_start = pg_checkpointer_start,

    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .savepoint = pg_savepoint,
    .release = pg_release,
    .rollback_to = pg_rollback_to,
    .sync = pg_sync,

    .meta_get = pg_meta_get,
    .meta_set = pg_meta_set,
    .team_upsert = sl_pg_team_upsert,
    .cohort_upsert = sl_pg_cohort_upsert,
    .queue_upsert = sl_pg_queue_upsert,
    .pclass_upsert = sl_pg_pclass_upsert,
    .user_upsert = sl_pg_user_upsert,
    .catalog_del = sl_pg_catalog_del,
    .user_tokens_live = sl_pg_user_tokens_live,
    .load = sl_pg_load,
    .team_scan = sl_pg_team_scan,
    .pclass_scan = sl_pg_pclass_scan,

    .token_insert = sl_pg_token_insert,
    .token_lookup = sl_pg_token_lookup,
    .token_info = sl_pg_token_info,
    .token_revoke = sl_pg_token_revoke,
    .tokens_revoke_job = sl_pg_tokens_revoke_job,
    .token_scan = sl_pg_token_scan,

    .job_insert = sl_pg_job_insert,
    .job_max_id = sl_pg_job_max_id,
    .job_update = sl_pg_job_update,
    .job_read = sl_pg_job_read,
    .job_scan = sl_pg_job_scan,
    .job_lineage = sl_pg_job_lineage,
    .job_respec = sl_pg_job_respec,
    .job_lineage_get = sl_pg_job_lineage_get,
    .event_add = sl_pg_event_add,
    .event_scan = sl_pg_event_scan,
    .attempt_put = sl_pg_attempt_put,
    .attempt_scan = sl_pg_attempt_scan,

    .usage_open = sl_pg_usage_open,
    .usage_close = sl_pg_usage_close,
    .usage_mark_idle = sl_pg_usage_mark_idle,
    .usage_scan = sl_pg_usage_scan,
    .history_scan = sl_pg_history_scan,
    .budget_upsert = sl_pg_budget_upsert,
    .budgets_load = sl_pg_budgets_load,
    .budget_event_add = sl_pg_budget_event_add,
    .budget_event_scan = sl_pg_budget_event_scan,
    .carbon_put = sl_pg_carbon_put,
    .carbon_scan = sl_pg_carbon_scan,

    .audit_add = sl_pg_audit_add,
    .audit_head = sl_pg_audit_head,
    .audit_scan = sl_pg_audit_scan,
    .audit_checkpoint_put = sl_pg_audit_checkpoint_put,
    .audit_checkpoint_last = sl_pg_audit_checkpoint_last,

    .obj_put = sl_pg_obj_put,
    .obj_get = sl_pg_obj_get,
    .obj_del = sl_pg_obj_del,
    .objs_each = sl_pg_objs_each,

    .ha_tick = sl_pg_ha_tick,
    .ha_release = sl_pg_ha_release,
    .ha_lease_get = sl_pg_ha_lease_get,
    .ha_member_scan = sl_pg_ha_member_scan,
    .fence = pg_fence,
};
