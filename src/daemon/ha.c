/*
 * ha.c - the leader lease's thread and a follower's answers (ha.h).
 *
 * The thread beats every lease/3 (sl_store_ha_tick: one short transaction
 * on its own connection). A follower whose tick took the lease wakes the
 * main thread, which starts the engine under that epoch. A leader that
 * finds the lease moved on (-ESTALE), or has not renewed it for longer
 * than the lease by its own monotonic clock (the database is unreachable:
 * the others may be taking over), hands over to sl_engine_lose. A
 * connection that fails is opened again at the next beat.
 */
#include "ha.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../store/store.h"
#include "../util/prom.h"

#define MEMBERS_MAX 32

struct member {
    char name[128], url[256], role[16];
    int64_t epoch, seen_age_ms, up_ms;
};

struct sl_ha {
    char store[1100], name[128], url[256];
    int64_t lease_ms;
    struct sl_store *st;          /* the thread's own connection */
    pthread_t thread;
    bool running;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    /* under mu */
    bool stop;
    int64_t epoch;                /* this daemon leads under it; 0 = follows */
    bool lost;
    struct sl_engine *e;          /* sl_ha_attach */
    struct sl_ha_lease lease;     /* as the last beat read it */
    int64_t lease_read_mono;      /* when (mono ms): ages move on from it */
    int64_t renewed_mono;         /* the leader's last renewal (mono ms) */
    int64_t takeovers;            /* epochs this daemon has taken */
    bool db_ok;                   /* the last beat reached the database */
    struct member members[MEMBERS_MAX];
    int nmembers;
};

static int collect_member(void *arg, const struct sl_ha_member_row *r)
{
    struct sl_ha *ha = arg;
    struct member *m;

    if (ha->nmembers >= MEMBERS_MAX)
        return 1;
    m = &ha->members[ha->nmembers++];
    sl_strlcpy(m->name, r->name, sizeof(m->name));
    sl_strlcpy(m->url, r->url, sizeof(m->url));
    sl_strlcpy(m->role, r->role, sizeof(m->role));
    m->epoch = r->epoch;
    m->seen_age_ms = r->now_ms - r->seen_ms;
    m->up_ms = r->now_ms - r->started_ms;
    return 0;
}

/* One beat; returns with mu held by nobody. */
static void beat(struct sl_ha *ha)
{
    struct sl_error err = {0};
    struct sl_ha_lease lease;
    struct sl_engine *e = NULL;
    int64_t epoch, was;
    bool lose = false;
    int rc;

    if (!ha->st && !(ha->st = sl_store_open(ha->store, true, false, &err)))
        sl_warn("msg=\"lease: cannot reach the store\" err=\"%s\"", err.text);
    pthread_mutex_lock(&ha->mu);
    was = epoch = ha->epoch;
    pthread_mutex_unlock(&ha->mu);
    rc = ha->st ? sl_store_ha_tick(ha->st, ha->name, ha->url, ha->lease_ms, &epoch, &lease)
                : -EIO;
    pthread_mutex_lock(&ha->mu);
    ha->db_ok = rc == 0 || rc == -ESTALE;
    if (ha->db_ok) {
        ha->lease = lease;
        ha->lease_read_mono = sl_mono_ms();
    }
    if (rc == 0 && epoch) {
        ha->renewed_mono = sl_mono_ms();
        if (!was) {
            ha->epoch = epoch;
            ha->takeovers++;
            sl_info("msg=\"this daemon leads\" epoch=%lld name=%s", (long long)epoch, ha->name);
            pthread_cond_broadcast(&ha->cond);
        }
    } else if (was && (rc == -ESTALE || sl_mono_ms() - ha->renewed_mono >= ha->lease_ms)) {
        sl_error("msg=\"the lease is lost\" epoch=%lld why=\"%s\"", (long long)was,
                 rc == -ESTALE ? "another daemon took it" : "not renewed within the lease");
        ha->lost = true;
        ha->epoch = 0;
        lose = true;
        e = ha->e;
        pthread_cond_broadcast(&ha->cond);
    }
    pthread_mutex_unlock(&ha->mu);
    if (lose && e)
        sl_engine_lose(e);
    if (ha->st && rc != 0 && rc != -ESTALE) {
        /* a broken connection is opened again at the next beat */
        sl_store_close(ha->st);
        ha->st = NULL;
    }
    if (ha->st) {
        struct sl_ha tmp; /* the scan fills a copy, swapped in under mu */
        tmp.nmembers = 0;
        if (sl_store_ha_members(ha->st, collect_member, &tmp) >= 0) {
            pthread_mutex_lock(&ha->mu);
            memcpy(ha->members, tmp.members, sizeof(tmp.members[0]) * (size_t)tmp.nmembers);
            ha->nmembers = tmp.nmembers;
            pthread_mutex_unlock(&ha->mu);
        }
    }
}

static void *ha_main(void *arg)
{
    struct sl_ha *ha = arg;

    pthread_setname_np(pthread_self(), "lease");
    for (;;) {
        struct timespec until;
        int64_t period;
        bool stop;

        beat(ha);
        pthread_mutex_lock(&ha->mu);
        /* a leader beats every lease/3; a follower too, so that a takeover
         * comes within lease + lease/3 of the leader's last renewal */
        period = ha->lease_ms / 3;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += period / 1000;
        until.tv_nsec += (long)(period % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!ha->stop && pthread_cond_timedwait(&ha->cond, &ha->mu, &until) == 0) {
        }
        stop = ha->stop;
        pthread_mutex_unlock(&ha->mu);
        if (stop)
            break;
    }
    return NULL;
}

struct sl_ha *sl_ha_start(const struct sl_ha_config *cfg, struct sl_error *err)
{
    struct sl_ha *ha = calloc(1, sizeof(*ha));
    int rc;

    if (!ha) {
        sl_errorf(err, -ENOMEM, "out of memory");
        return NULL;
    }
    sl_strlcpy(ha->store, cfg->store, sizeof(ha->store));
    sl_strlcpy(ha->name, cfg->name, sizeof(ha->name));
    sl_strlcpy(ha->url, cfg->url, sizeof(ha->url));
    ha->lease_ms = cfg->lease_ms;
    pthread_mutex_init(&ha->mu, NULL);
    pthread_cond_init(&ha->cond, NULL);
    /* the first connection here: a store that cannot be opened (or is
     * newer than this build) stops the start with its reason */
    if (!(ha->st = sl_store_open(ha->store, true, false, err))) {
        sl_ha_stop(ha, false);
        return NULL;
    }
    if ((rc = pthread_create(&ha->thread, NULL, ha_main, ha)) != 0) {
        sl_errorf(err, -rc, "cannot start the lease's thread");
        sl_ha_stop(ha, false);
        return NULL;
    }
    ha->running = true;
    return ha;
}

int64_t sl_ha_wait_leader(struct sl_ha *ha, const sigset_t *sigs, int *sig)
{
    for (;;) {
        struct timespec ts = {0, 100 * 1000000L};
        int64_t epoch;
        int s;

        pthread_mutex_lock(&ha->mu);
        epoch = ha->epoch;
        pthread_mutex_unlock(&ha->mu);
        if (epoch)
            return epoch;
        if ((s = sigtimedwait(sigs, NULL, &ts)) > 0) {
            *sig = s;
            return 0;
        }
    }
}

void sl_ha_attach(struct sl_ha *ha, struct sl_engine *e)
{
    bool lost;

    pthread_mutex_lock(&ha->mu);
    ha->e = e;
    lost = ha->lost;
    pthread_mutex_unlock(&ha->mu);
    if (lost)
        sl_engine_lose(e); /* lost while the engine was starting */
}

bool sl_ha_lost(struct sl_ha *ha)
{
    bool lost;

    if (!ha)
        return false;
    pthread_mutex_lock(&ha->mu);
    lost = ha->lost;
    pthread_mutex_unlock(&ha->mu);
    return lost;
}

void sl_ha_stop(struct sl_ha *ha, bool release)
{
    int64_t epoch;

    if (!ha)
        return;
    if (ha->running) {
        pthread_mutex_lock(&ha->mu);
        ha->stop = true;
        pthread_cond_broadcast(&ha->cond);
        pthread_mutex_unlock(&ha->mu);
        pthread_join(ha->thread, NULL);
    }
    epoch = ha->lost ? 0 : ha->epoch;
    if (ha->st && release) {
        int rc = sl_store_ha_release(ha->st, ha->name, epoch);
        if (rc < 0)
            sl_warn("msg=\"lease: cannot let the lease go\" err=\"%s\"", strerror(-rc));
        else if (epoch)
            sl_info("msg=\"lease let go\" epoch=%lld", (long long)epoch);
    }
    sl_store_close(ha->st);
    pthread_cond_destroy(&ha->cond);
    pthread_mutex_destroy(&ha->mu);
    free(ha);
}

/* ---- status, metrics, a follower's answers ------------------------------- */

/* The leader's URL when one is known and it is not this daemon; "" else.
 * Under mu. */
static const char *leader_url(const struct sl_ha *ha)
{
    int64_t age = sl_mono_ms() - ha->lease_read_mono;

    if (!ha->lease.holder[0] || strcmp(ha->lease.holder, ha->name) == 0)
        return "";
    /* a lease that has run out by now names nobody who serves */
    if (ha->lease.expires_ms - ha->lease.now_ms - age < 0)
        return "";
    return ha->lease.url;
}

json_t *sl_ha_status_json(struct sl_ha *ha)
{
    json_t *members = json_array(), *leader = json_null(), *o;
    int64_t age;

    pthread_mutex_lock(&ha->mu);
    age = sl_mono_ms() - ha->lease_read_mono;
    if (ha->lease.holder[0])
        leader = json_pack(
            "{s:s, s:s, s:I, s:f, s:f}", "name", ha->lease.holder, "url", ha->lease.url,
            "epoch", (json_int_t)ha->lease.epoch, "lease_age_s",
            (double)(ha->lease.now_ms - ha->lease.renewed_ms + age) / 1000.0, "expires_in_s",
            (double)(ha->lease.expires_ms - ha->lease.now_ms - age) / 1000.0);
    for (int i = 0; i < ha->nmembers; i++) {
        const struct member *m = &ha->members[i];
        json_array_append_new(members,
                              json_pack("{s:s, s:s, s:s, s:f}", "name", m->name, "url", m->url,
                                        "role", m->role, "seen_age_s",
                                        (double)(m->seen_age_ms + age) / 1000.0));
    }
    o = json_pack("{s:s, s:s, s:s, s:I, s:b, s:I, s:o, s:o}", "role",
                  ha->epoch ? "leader" : "follower", "name", ha->name, "url", ha->url, "epoch",
                  (json_int_t)ha->epoch, "store_reachable", ha->db_ok, "lease_ms",
                  (json_int_t)ha->lease_ms, "leader", leader, "members", members);
    pthread_mutex_unlock(&ha->mu);
    return o;
}

void sl_ha_metrics(struct sl_ha *ha, struct sl_buf *b)
{
    int64_t age;

    pthread_mutex_lock(&ha->mu);
    age = sl_mono_ms() - ha->lease_read_mono;
    sl_prom_family(b, "sluice_ha_leader", "gauge", "1 when this sluiced leads, else 0.");
    sl_buf_printf(b, "sluice_ha_leader %d\n", ha->epoch ? 1 : 0);
    sl_prom_family(b, "sluice_ha_epoch", "gauge",
                   "The leader lease's epoch (one more at every takeover).");
    sl_buf_printf(b, "sluice_ha_epoch %lld\n", (long long)ha->lease.epoch);
    sl_prom_family(b, "sluice_ha_lease_age_seconds", "gauge",
                   "Since the leader last renewed its lease (the database's clock).");
    sl_buf_adds(b, "sluice_ha_lease_age_seconds ");
    sl_prom_double(b, ha->lease.holder[0]
                          ? (double)(ha->lease.now_ms - ha->lease.renewed_ms + age) / 1000.0
                          : 0.0);
    sl_buf_adds(b, "\n");
    sl_prom_family(b, "sluice_ha_members", "gauge",
                   "sluiced daemons sharing the store, by role, as their heartbeats say.");
    {
        int leaders = 0;
        for (int i = 0; i < ha->nmembers; i++)
            leaders += strcmp(ha->members[i].role, "leader") == 0;
        sl_buf_printf(b, "sluice_ha_members{role=\"leader\"} %d\n", leaders);
        sl_buf_printf(b, "sluice_ha_members{role=\"follower\"} %d\n", ha->nmembers - leaders);
    }
    sl_prom_family(b, "sluice_ha_takeovers_total", "counter",
                   "Times this sluiced took the lease.");
    sl_buf_printf(b, "sluice_ha_takeovers_total %lld\n", (long long)ha->takeovers);
    pthread_mutex_unlock(&ha->mu);
}

void sl_ha_follower_handle(struct sl_ha *ha, struct sl_http_req *r)
{
    const char *path = sl_http_path(r);
    char url[256], *lines;
    size_t tlen, size;
    bool starting;
    const char *target;

    sl_http_add_header(r, "Sluice-Role", "follower");
    if (strcmp(path, "/v1/status") == 0 && (strcmp(sl_http_method(r), "GET") == 0 ||
                                             strcmp(sl_http_method(r), "HEAD") == 0)) {
        sl_http_reply_json(r, 200, sl_ha_status_json(ha));
        return;
    }
    if (strcmp(path, "/metrics") == 0) {
        struct sl_buf b;
        sl_buf_init(&b);
        sl_ha_metrics(ha, &b);
        if (b.failed)
            sl_http_reply_error(r, 503, "unavailable", NULL, "out of memory");
        else
            sl_http_reply(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len);
        sl_buf_fini(&b);
        return;
    }
    pthread_mutex_lock(&ha->mu);
    sl_strlcpy(url, leader_url(ha), sizeof(url));
    starting = ha->epoch != 0;
    pthread_mutex_unlock(&ha->mu);
    if (starting) {
        /* this daemon took the lease and is loading the state */
        sl_http_add_header(r, "Retry-After", "1");
        sl_http_reply_error(r, 503, "unavailable", NULL,
                            "sluiced is starting: it leads and is loading the state");
        return;
    }
    if (strcmp(path, "/healthz") == 0) {
        if (url[0])
            sl_http_add_header(r, "Sluice-Leader", url);
        sl_http_reply_json(r, 503,
                           json_pack("{s:s, s:s?}", "status", "follower", "leader",
                                     url[0] ? url : NULL));
        return;
    }
    target = sl_http_target(r, &tlen);
    /* the answer's head must fit 1 KiB (http.h): a target too long to
     * send back is refused, with where to send it */
    size = strlen(url) * 2 + tlen + 48;
    if (!url[0] || size > 700 || !(lines = malloc(size))) {
        sl_http_add_header(r, "Retry-After", "1");
        if (url[0])
            sl_http_reply_error(r, 503, "unavailable", NULL,
                                "this sluiced follows; send the request to the leader at %s",
                                url);
        else
            sl_http_reply_error(r, 503, "unavailable", NULL,
                                "this sluiced follows and no leader holds the lease now; "
                                "retry");
        return;
    }
    snprintf(lines, size, "Location: %s%.*s\r\nSluice-Leader: %s\r\n", url, (int)tlen, target, url);
    sl_http_set_state(r, lines, free);
    sl_http_add_header_lines(r, lines);
    sl_http_reply_error(r, 307, "redirect", NULL, "this sluiced follows; the leader is at %s",
                        url);
}
