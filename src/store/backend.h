/*
 * backend.h - what each store backend gives the store's front: for now the
 * numbered migrations of its schema.
 */
#ifndef SL_STORE_BACKEND_H
#define SL_STORE_BACKEND_H

#include <stddef.h>

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

#endif
