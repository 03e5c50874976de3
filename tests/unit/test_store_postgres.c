/*
 * test_store_postgres.c - the store conformance suite (tests/store/) run on
 * the PostgreSQL backend, against a real server: the one named by
 * SLUICE_TEST_PG_URL (with PGPASSFILE), or else one this test starts with
 * tests/pg/pg.sh in a temp dir and stops at the end. Every fresh store is a
 * new database, dropped at the end. Without PostgreSQL's server programs
 * the test is skipped.
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../store/conformance.h"

struct pg_dbs {
    char base[256];               /* postgres://sluice@127.0.0.1:PORT/ */
    char uri[320];                /* the store open_fresh made last */
    char maint[320];              /* the maintenance database's URI */
    int n;                        /* databases made */
    int pid;
};

static int maint_exec(const struct pg_dbs *d, const char *sql)
{
    PGconn *c = PQconnectdb(d->maint);
    PGresult *r;
    int ok;

    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "# %s\n", PQerrorMessage(c));
        PQfinish(c);
        return -1;
    }
    r = PQexec(c, sql);
    ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        fprintf(stderr, "# %s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    PQfinish(c);
    return ok ? 0 : -1;
}

static struct sl_store *open_fresh(void *arg)
{
    struct pg_dbs *d = arg;
    struct sl_error err = {0};
    struct sl_store *st;
    char sql[128];

    snprintf(sql, sizeof(sql), "CREATE DATABASE conf_%d_%d", d->pid, ++d->n);
    if (maint_exec(d, sql) < 0)
        return NULL;
    snprintf(d->uri, sizeof(d->uri), "%sconf_%d_%d", d->base, d->pid, d->n);
    if (!(st = sl_store_open(d->uri, true, false, &err)))
        fprintf(stderr, "# %s: %s\n", d->uri, err.text);
    return st;
}

static struct sl_store *open_again(void *arg, bool writer)
{
    struct pg_dbs *d = arg;
    struct sl_error err = {0};
    struct sl_store *st = sl_store_open(d->uri, writer, false, &err);

    if (!st)
        fprintf(stderr, "# %s: %s\n", d->uri, err.text);
    return st;
}

/* Run tests/pg/pg.sh with 'args'; its first line of output in 'out'. */
static int pg_sh(const char *args, char *out, size_t size)
{
    char cmd[512];
    FILE *f;
    int rc;
    /* prove runs the tests from the repository's root */
    const char *src = getenv("SLUICE_SRCDIR");

    snprintf(cmd, sizeof(cmd), "sh %s/tests/pg/pg.sh %s", src && *src ? src : ".", args);
    if (!(f = popen(cmd, "r")))
        return -1;
    if (!out || !fgets(out, (int)size, f)) {
        if (out)
            out[0] = '\0';
    }
    rc = pclose(f);
    if (out)
        out[strcspn(out, "\n")] = '\0';
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int main(void)
{
    struct pg_dbs d = {.pid = (int)getpid()};
    char top[] = "/tmp/sluice-store-pg.XXXXXX", dir[64], url[256], args[128];
    const char *given = getenv("SLUICE_TEST_PG_URL");
    bool started = false;
    int rc;

    /* refused writes (the -EEXIST checks) are logged at warn */
    sl_log_set_level(SL_LOG_ERROR);
    if (given && *given) {
        sl_strlcpy(url, given, sizeof(url));
    } else {
        if (!mkdtemp(top) || chmod(top, 0711) < 0) {
            printf("not ok 1 - a temp dir\n1..1\n");
            return 1;
        }
        snprintf(dir, sizeof(dir), "%s/pg", top);
        snprintf(args, sizeof(args), "start %s", dir);
        rc = pg_sh(args, url, sizeof(url));
        if (rc == 2) {
            printf("1..0 # SKIP PostgreSQL's server programs are not installed\n");
            rmdir(top);
            return 0;
        }
        if (rc != 0) {
            printf("not ok 1 - a PostgreSQL server starts (tests/pg/pg.sh: %d)\n1..1\n", rc);
            return 1;
        }
        started = true;
        snprintf(args, sizeof(args), "%s/pgpass", dir);
        setenv("PGPASSFILE", args, 1);
    }
    /* postgres://sluice@127.0.0.1:PORT/DB: the base is up to the last '/' */
    {
        char *slash = strrchr(url, '/');
        if (!slash || slash - url < 12) {
            printf("not ok 1 - a server URL (%s)\n1..1\n", url);
            return 1;
        }
        slash[1] = '\0';
        snprintf(d.base, sizeof(d.base), "%s", url);
        snprintf(d.maint, sizeof(d.maint), "%spostgres", url);
    }
    printf("# PostgreSQL at %s\n", d.base);
    {
        struct sl_store_conformance be = {&d, open_fresh, open_again};
        rc = sl_store_conformance(&be);
    }
    for (int i = 1; i <= d.n; i++) {
        char sql[128];
        snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS conf_%d_%d WITH (FORCE)", d.pid, i);
        maint_exec(&d, sql);
    }
    if (started) {
        snprintf(args, sizeof(args), "stop %s", dir);
        pg_sh(args, NULL, 0);
        snprintf(args, sizeof(args), "rm -rf %s", top);
        if (system(args) != 0)
            fprintf(stderr, "# could not remove %s\n", top);
    }
    return rc;
}
