/*
 * copy.h - copying an SQLite store into an empty PostgreSQL one, live
 * (`sluiced copy-store`, docs/ha.md "Moving an SQLite store to PostgreSQL").
 */
#ifndef SL_STORE_COPY_H
#define SL_STORE_COPY_H

#include <stdio.h>

#include "../util/util.h"

/* Copy the SQLite store 'from' (a path or sqlite:PATH; a daemon may go on
 * writing to it: the copy reads one snapshot, in one read transaction) to
 * the PostgreSQL store 'to' (postgres://...; migrated first to this build's
 * schema, and refused unless every table is empty). The source must be at
 * this build's schema version too. Every table is written with COPY in one
 * transaction, which commits only after the copy is verified: each table
 * holds as many rows as in the snapshot, and the audit log verifies (each
 * record's hash chained to the one before, its index columns matching its
 * line) up to the source's head. Progress, one line per table (rows,
 * time), goes to 'out'. Returns 0; or -errno with 'err' saying what and
 * where (the table, or the audit record), the target left unchanged. */
int sl_store_copy(const char *from, const char *to, FILE *out, struct sl_error *err);

#endif
