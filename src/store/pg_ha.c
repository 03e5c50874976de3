/*
 * pg_ha.c - the PostgreSQL backend's leader lease and members' table
 * (docs/decisions/0015-ha-leader-lease.md; contracts in store.h, "several
 * daemons on one store").
 *
 * Every time is the database's clock (clock_timestamp(), in epoch ms), so
 * the hosts' clocks never matter. The lock modes carry the fencing: a
 * leader's write transaction holds FOR KEY SHARE on the lease's row from
 * its first statement to its commit (pg.c, begin); a takeover first takes
 * FOR UPDATE on that row, which waits for every such transaction to end,
 * and only then moves the epoch on, so that every later transaction of
 * the old leader finds its epoch gone. A renewal is a plain UPDATE of
 * non-key columns (FOR NO KEY UPDATE), which does not conflict with KEY
 * SHARE: the leader's own renewals never wait for its group commits.
 */
#include "pg_int.h"

#include <errno.h>
#include <string.h>

#define NOW_MS "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

static struct sl_pg_stmt q_renew = SL_PG_STMT(
    "UPDATE ha_lease SET renewed_at = " NOW_MS ", expires_at = " NOW_MS " + $3, url = $4 "
    "WHERE id = 1 AND epoch = $1 AND holder = $2 "
    "RETURNING holder, url, epoch, renewed_at, expires_at, " NOW_MS);
static struct sl_pg_stmt q_lock = SL_PG_STMT(
    "SELECT holder, url, epoch, renewed_at, expires_at, " NOW_MS " FROM ha_lease "
    "WHERE id = 1 FOR UPDATE");
/* A takeover's wait for the leader's transactions is bounded: a leader
 * stopped (SIGSTOP, a frozen VM) in the middle of one holds its fence
 * forever. */
static struct sl_pg_stmt q_lock_timeout =
    SL_PG_STMT("SELECT set_config('lock_timeout', $1, true)");
/* Once the lease has run out, the transactions that still hold its row
 * belong to a leader that could not renew it: they are ended (rolled
 * back: none of them was acknowledged), which is what lets the takeover
 * through. Only the role's own sessions can be signalled, and sluiced's
 * are the role's. */
static struct sl_pg_stmt q_break = SL_PG_STMT(
    "SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l "
    "JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'ha_lease' "
    "AND l.pid <> pg_backend_pid() AND l.granted "
    "AND (SELECT expires_at < " NOW_MS " FROM ha_lease WHERE id = 1)");
static struct sl_pg_stmt q_first = SL_PG_STMT(
    "INSERT INTO ha_lease(id, holder, url, epoch, renewed_at, expires_at) "
    "VALUES(1, $1, $2, 1, " NOW_MS ", " NOW_MS " + $3) ON CONFLICT(id) DO NOTHING "
    "RETURNING holder, url, epoch, renewed_at, expires_at, " NOW_MS);
static struct sl_pg_stmt q_take = SL_PG_STMT(
    "UPDATE ha_lease SET holder = $1, url = $2, epoch = epoch + 1, renewed_at = " NOW_MS ", "
    "expires_at = " NOW_MS " + $3 WHERE id = 1 AND expires_at < " NOW_MS " "
    "RETURNING holder, url, epoch, renewed_at, expires_at, " NOW_MS);
static struct sl_pg_stmt q_member = SL_PG_STMT(
    "INSERT INTO ha_members(name, url, role, epoch, started_at, seen_at) "
    "VALUES($1, $2, $3, $4, " NOW_MS ", " NOW_MS ") ON CONFLICT(name) DO UPDATE SET "
    "url = excluded.url, role = excluded.role, epoch = excluded.epoch, "
    "seen_at = excluded.seen_at, started_at = CASE WHEN ha_members.role = excluded.role "
    "THEN ha_members.started_at ELSE excluded.started_at END");
static struct sl_pg_stmt q_release = SL_PG_STMT(
    "UPDATE ha_lease SET expires_at = " NOW_MS " - 1 WHERE id = 1 AND epoch = $1 "
    "AND holder = $2");
static struct sl_pg_stmt q_member_del = SL_PG_STMT("DELETE FROM ha_members WHERE name = $1");
static struct sl_pg_stmt q_get = SL_PG_STMT(
    "SELECT holder, url, epoch, renewed_at, expires_at, " NOW_MS " FROM ha_lease WHERE id = 1");
static struct sl_pg_stmt q_members = SL_PG_STMT(
    "SELECT name, url, role, epoch, started_at, seen_at, " NOW_MS " FROM ha_members "
    "ORDER BY name COLLATE \"C\"");

/* 'l' from row 0 of a lease's columns (holder ... now). */
static void lease_of(const PGresult *r, struct sl_ha_lease *l)
{
    sl_strlcpy(l->holder, sl_pg_get_str(r, 0, 0), sizeof(l->holder));
    sl_strlcpy(l->url, sl_pg_get_str(r, 0, 1), sizeof(l->url));
    l->epoch = sl_pg_get_i64(r, 0, 2);
    l->renewed_ms = sl_pg_get_i64(r, 0, 3);
    l->expires_ms = sl_pg_get_i64(r, 0, 4);
    l->now_ms = sl_pg_get_i64(r, 0, 5);
}

/* Run 's' with 'pa': 1 and 'l' filled when it gave a row, 0 when none,
 * or -errno. */
static int lease_row(struct sl_pg *p, struct sl_pg_stmt *s, const struct sl_pg_params *pa,
                     struct sl_ha_lease *l)
{
    int rc;
    PGresult *r = sl_pg_query(p, s, pa, &rc);

    if (!r)
        return rc;
    rc = PQntuples(r) == 1;
    if (rc)
        lease_of(r, l);
    PQclear(r);
    return rc;
}

/* The lease step of a tick, inside its transaction: 0 or -ESTALE/-errno. */
static int lease_step(struct sl_pg *p, const char *name, const char *url, int64_t lease_ms,
                      int64_t *epoch, struct sl_ha_lease *l)
{
    struct sl_pg_params pa;
    char timeout[32];
    int rc;

    sl_pg_params_init(&pa);
    if (*epoch) {
        sl_pg_p_i64(&pa, *epoch);
        sl_pg_p_text(&pa, name);
        sl_pg_p_i64(&pa, lease_ms);
        sl_pg_p_text(&pa, url);
        if ((rc = lease_row(p, &q_renew, &pa, l)) < 0)
            return rc;
        if (rc == 0) {
            *epoch = 0;
            return -ESTALE;
        }
        return 0;
    }
    /* waits for the leader's write transactions in flight (their fence),
     * for a third of the lease at most */
    snprintf(timeout, sizeof(timeout), "%lldms", (long long)(lease_ms / 3 > 0 ? lease_ms / 3 : 1));
    sl_pg_p_text(&pa, timeout);
    if ((rc = sl_pg_exec(p, &q_lock_timeout, &pa)) < 0)
        return rc;
    sl_pg_params_init(&pa);
    if ((rc = lease_row(p, &q_lock, NULL, l)) < 0)
        return rc;
    sl_pg_p_text(&pa, name);
    sl_pg_p_text(&pa, url);
    sl_pg_p_i64(&pa, lease_ms);
    if (rc == 0) {
        /* never held: the first daemon takes epoch 1 (a second one racing
         * it waits for that insert and then finds the row) */
        if ((rc = lease_row(p, &q_first, &pa, l)) < 0)
            return rc;
        if (rc == 0 && lease_row(p, &q_get, NULL, l) < 0)
            return -EIO;
    } else if (l->expires_ms < l->now_ms) {
        if ((rc = lease_row(p, &q_take, &pa, l)) < 0)
            return rc;
    } else {
        rc = 0;
    }
    if (rc == 1)
        *epoch = l->epoch; /* taken by this tick */
    return 0;
}

int sl_pg_ha_tick(struct sl_store *st, const char *name, const char *url, int64_t lease_ms,
                  int64_t *epoch, struct sl_ha_lease *lease)
{
    struct sl_pg *p = sl_pg_of(st);
    struct sl_pg_params pa;
    int rc, mrc;

    memset(lease, 0, sizeof(*lease));
    if ((rc = sl_pg_simple(p, "BEGIN")) < 0)
        return rc;
    rc = lease_step(p, name, url, lease_ms, epoch, lease);
    if (rc == 0 || rc == -ESTALE) {
        sl_pg_params_init(&pa);
        sl_pg_p_text(&pa, name);
        sl_pg_p_text(&pa, url);
        sl_pg_p_text(&pa, *epoch ? "leader" : "follower");
        sl_pg_p_i64(&pa, *epoch);
        if ((mrc = sl_pg_exec(p, &q_member, &pa)) < 0)
            rc = mrc;
    }
    if (rc == 0 || rc == -ESTALE) {
        int crc = sl_pg_simple(p, "COMMIT");
        if (crc < 0) {
            /* the takeover, if any, did not happen */
            *epoch = rc == -ESTALE ? 0 : *epoch;
            return crc;
        }
        return rc;
    }
    sl_pg_simple(p, "ROLLBACK");
    if (rc == -EBUSY && !*epoch) {
        /* the lease's row stayed locked past the timeout: if the lease has
         * run out, end its holder's transactions; the next beat takes it */
        int brc;
        PGresult *r = sl_pg_query(p, &q_break, NULL, &brc);
        if (r && PQntuples(r) == 1 && sl_pg_get_i64(r, 0, 0) > 0)
            sl_warn("msg=\"lease: ended the transactions of a leader whose lease ran out\" "
                    "sessions=%lld", (long long)sl_pg_get_i64(r, 0, 0));
        PQclear(r);
        return sl_pg_ha_lease_get(st, lease);
    }
    return rc;
}

int sl_pg_ha_release(struct sl_store *st, const char *name, int64_t epoch)
{
    struct sl_pg *p = sl_pg_of(st);
    struct sl_pg_params pa;
    int rc;

    sl_pg_params_init(&pa);
    sl_pg_p_i64(&pa, epoch);
    sl_pg_p_text(&pa, name);
    if (epoch && (rc = sl_pg_exec(p, &q_release, &pa)) < 0)
        return rc;
    sl_pg_params_init(&pa);
    sl_pg_p_text(&pa, name);
    rc = sl_pg_exec(p, &q_member_del, &pa);
    return rc < 0 ? rc : 0;
}

int sl_pg_ha_lease_get(struct sl_store *st, struct sl_ha_lease *lease)
{
    int rc;

    memset(lease, 0, sizeof(*lease));
    rc = lease_row(sl_pg_of(st), &q_get, NULL, lease);
    return rc < 0 ? rc : 0;
}

int sl_pg_ha_member_scan(struct sl_store *st,
                         int (*fn)(void *arg, const struct sl_ha_member_row *r), void *arg)
{
    int rc;
    PGresult *r = sl_pg_query(sl_pg_of(st), &q_members, NULL, &rc);

    if (!r)
        return rc;
    for (int i = 0; i < PQntuples(r) && rc == 0; i++) {
        struct sl_ha_member_row m = {
            .name = sl_pg_get_str(r, i, 0),
            .url = sl_pg_get_str(r, i, 1),
            .role = sl_pg_get_str(r, i, 2),
            .epoch = sl_pg_get_i64(r, i, 3),
            .started_ms = sl_pg_get_i64(r, i, 4),
            .seen_ms = sl_pg_get_i64(r, i, 5),
            .now_ms = sl_pg_get_i64(r, i, 6),
        };
        rc = fn(arg, &m);
    }
    PQclear(r);
    return rc;
}
