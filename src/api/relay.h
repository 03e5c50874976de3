/*
 * relay.h - the attach relay: one thread that carries interactive
 * sessions between WebSocket clients (GET /v1/jobs/{id}/attach, after its
 * 101) and the shims of interactive tasks (src/exec/attach.h).
 *
 * The client side speaks binary WebSocket messages whose first byte is a
 * channel, as Kubernetes' exec protocol does (docs/api-contract.md,
 * "Interactive sessions"): 0 stdin and 4 resize ({"Width":W,"Height":H})
 * from the client, 1 output and 3 status ({"exit_code":N}) to it. Every
 * buffer is bounded, both ways: a client that reads slowly stops the
 * relay reading the shim (which stops reading the task's terminal), and a
 * task that does not read its terminal stops the relay reading the client.
 *
 * One client per job at a time: sl_relay_reserve claims the job before the
 * shim is connected, and the claim ends with the session.
 *
 * Thread-safety: every function may be called from any thread.
 */
#ifndef SL_RELAY_H
#define SL_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_RELAY_MAX_SESSIONS 128   /* sessions at once */
#define SL_RELAY_FRAME_MAX 32768    /* payload of a client's data frame */
#define SL_RELAY_PING_MS 30000      /* a ping after this long without one */
#define SL_RELAY_DEAD_MS 90000      /* nothing from the client this long:
                                       it is gone */

struct sl_relay;

/* Start the relay's thread. NULL with errno set. */
struct sl_relay *sl_relay_create(void);
/* End every session (the shims see their clients leave) and the thread;
 * NULL-safe. */
void sl_relay_destroy(struct sl_relay *rl);

/* Claim job 'job_id' for a client. Returns 0, -EBUSY when a client holds
 * it (attached, or being attached), -EAGAIN when the relay is full. */
int sl_relay_reserve(struct sl_relay *rl, int64_t job_id);
/* Whether a client holds job 'job_id' (attached, or being attached). */
bool sl_relay_claimed(struct sl_relay *rl, int64_t job_id);
/* How many jobs clients hold. */
int sl_relay_claims(struct sl_relay *rl);
/* Give a claim up that did not become a session. */
void sl_relay_unreserve(struct sl_relay *rl, int64_t job_id);

struct ssl_st; /* OpenSSL's SSL (src/http/tls.h) */

/* Carry a session of claimed job 'job_id' between 'ws_fd' (the client's
 * connection after its 101, with 'early' bytes it sent already; over
 * HTTPS with 'ssl', its TLS session, else NULL) and 'shim_fd' (connected
 * to the shim's attach socket); both descriptors and 'ssl' are the
 * relay's from here (it frees the SSL when the session ends), and the
 * claim ends with the session. Returns 0, or -ENOMEM: then the SSL is
 * freed, both descriptors closed and the claim given up. */
int sl_relay_add(struct sl_relay *rl, int64_t job_id, int ws_fd, struct ssl_st *ssl,
                 int shim_fd, const char *early, size_t nearly);

#endif
