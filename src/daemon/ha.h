/*
 * ha.h - several sluiced on one PostgreSQL store: the leader lease's
 * thread, what a follower answers, and the status and metrics of both
 * (docs/ha.md; docs/decisions/0015-ha-leader-lease.md).
 *
 * sl_ha_start opens a store connection of its own and starts a thread
 * that beats every lease/3: as a follower it takes the lease once it has
 * expired; as the leader it renews it, and calls sl_engine_lose when the
 * lease has moved on or could not be renewed before it would expire. The
 * status (role, lease, members) is kept in memory under a mutex, so that
 * answering /v1/status or /metrics never waits on the database. All
 * functions are thread-safe.
 */
#ifndef SL_DAEMON_HA_H
#define SL_DAEMON_HA_H

#include <jansson.h>
#include <signal.h>
#include <stdint.h>

#include "../engine/engine.h"
#include "../http/http.h"
#include "../util/buf.h"
#include "../util/util.h"

struct sl_ha;

struct sl_ha_config {
    const char *store;            /* the store's URL (borrowed for the call) */
    const char *name;             /* this daemon among them */
    const char *url;              /* where it serves */
    int64_t lease_ms;             /* the lease: >= 300 */
};

/* Open the connection and start the thread (it beats at once). NULL with
 * 'err' filled. */
struct sl_ha *sl_ha_start(const struct sl_ha_config *cfg, struct sl_error *err);
/* Wait until this daemon leads (returns its epoch) or one of 'sigs'
 * arrives (returns 0 with *sig set). */
int64_t sl_ha_wait_leader(struct sl_ha *ha, const sigset_t *sigs, int *sig);
/* From now on a lost lease is the engine's to act on (sl_engine_lose). */
void sl_ha_attach(struct sl_ha *ha, struct sl_engine *e);
/* Stop the thread; when this daemon led under an epoch and 'release', let
 * the lease go at once (a clean stop: the engine has committed its last
 * group). NULL-safe. */
void sl_ha_stop(struct sl_ha *ha, bool release);
/* Whether the lease was lost while this daemon led. */
bool sl_ha_lost(struct sl_ha *ha);

/* GET /v1/status: this daemon, the lease and the members. */
json_t *sl_ha_status_json(struct sl_ha *ha);
/* The sluice_ha_* metrics, appended to 'b'. */
void sl_ha_metrics(struct sl_ha *ha, struct sl_buf *b);
/* A follower's answer to any request but those it serves itself:
 * /healthz (503, "follower"), /v1/status, /metrics; everything else is
 * sent to the leader (307, Location and Sluice-Leader) or, with no leader
 * known, 503 with Retry-After. */
void sl_ha_follower_handle(struct sl_ha *ha, struct sl_http_req *r);

#endif
