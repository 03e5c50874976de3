/*
 * backend.h - what each store backend gives store.c: its open function,
 * named in one row of store.c's table of URI schemes. Everything else a
 * backend provides goes through its struct sl_store_ops (store.h).
 */
#ifndef SL_STORE_BACKEND_H
#define SL_STORE_BACKEND_H

#include "store.h"

/* Open a connection to the store at 'location' (the URI without the part
 * the table strips), with sl_store_open's contract. Returns the
 * connection (its struct sl_store, whose ops point at the backend's
 * table), or NULL with 'err' filled and errno set. */
struct sl_store *sl_sqlite_open(const char *location, bool writer, bool sync_full,
                                struct sl_error *err);

/* The PostgreSQL backend (pg.c): 'location' is the whole postgres:// or
 * postgresql:// URI, in libpq's syntax; a password comes from PGPASSFILE,
 * PGPASSWORD or the URI, and is never logged. */
struct sl_store *sl_pg_open(const char *location, bool writer, bool sync_full,
                            struct sl_error *err);
/* 'uri' with any password in it replaced by "***" (a URI's user:password@
 * and a password= parameter), for messages; other text is copied as it is. */
void sl_pg_redact(const char *uri, char *out, size_t size);

/* One numbered migration, embedded from migrations/<backend>/NNNN_NAME.sql
 * by migrations/embed.sh into a generated file under the build directory. */
struct sl_store_migration {
    int version;                  /* NNNN: 1, 2, ... without gaps */
    const char *name;             /* NAME */
    const char *sql;              /* the file's statements */
};

/* SQLite's migrations, in order; version i + 1 at index i. */
extern const struct sl_store_migration sl_sqlite_migrations[];
extern const size_t sl_sqlite_nmigrations;
/* PostgreSQL's, the same way. */
extern const struct sl_store_migration sl_postgres_migrations[];
extern const size_t sl_postgres_nmigrations;

#endif
