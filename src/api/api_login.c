/*
 * api_login.c - signing in through the company's identity provider
 * (docs/identity.md): LDAP or Active Directory with a name and password,
 * an OIDC provider's ID token or its device-authorization flow. Each
 * gives a short-lived Sluice token whose team and role the identity
 * file's group rules decide at that moment (src/ident/ident.h).
 *
 * A provider is slow and may hang, and the HTTP thread serves everyone:
 * a login is suspended and handed to one of LOGIN_WORKERS threads, which
 * ask the provider, match the groups, and then either submit the login to
 * the engine (SL_OP_LOGIN: the User, the token and the record in one
 * transaction; its answer resumes the request) or answer the refusal
 * themselves. At most LOGIN_QUEUE logins wait; more are 503.
 *
 * Guessing is bounded: a wrong password counts against the name and the
 * peer's address (sl_http_peer), a refused OIDC token or device code
 * against the address; LOGIN_MAX_FAIL_USER failures of one name or
 * LOGIN_MAX_FAIL_PEER of one address within LOGIN_WINDOW_MS refuse that
 * name's or address's next logins with 429 until the window ends, before
 * the provider is asked. An address starts at most LOGIN_MAX_DEVICE_PEER
 * device authorizations a window, each of which asks the provider.
 * See api_int.h for what the API files share.
 */
#include "api_int.h"

#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ident/ident.h"
#include "../ident/ldap_login.h"
#include "../ident/oidc.h"
#include "../util/jfield.h"

#define LOGIN_WORKERS 2
#define LOGIN_QUEUE 64
#define LOGIN_WINDOW_MS (15 * 60 * 1000)
#define LOGIN_MAX_FAIL_USER 5
#define LOGIN_MAX_FAIL_PEER 30
#define LOGIN_MAX_DEVICE_PEER 30      /* device authorizations started */
#define LOGIN_FAIL_SLOTS 512

enum login_kind {
    LK_PASSWORD,                  /* LDAP: a name and a password */
    LK_REFRESH,                   /* LDAP: the caller's groups again */
    LK_ID_TOKEN,                  /* OIDC: a token the provider issued */
    LK_DEVICE_START,              /* OIDC: start a device authorization */
    LK_DEVICE_POLL                /* OIDC: has the user approved it? */
};

struct login_job {
    enum login_kind kind;
    struct op_state *s;           /* the request's engine op; its state */
    char user[64];
    char password[256];           /* wiped when done */
    char *secret;                 /* LK_ID_TOKEN the token, LK_DEVICE_POLL
                                     the device code; malloc'd, wiped */
    uint64_t peer;
    int64_t replaces;             /* LK_REFRESH: the caller's token */
    struct login_job *next;
};

/* Failures of one name or address in the current window. */
struct fail_slot {
    uint64_t key;                 /* hash of "u:NAME" or the peer; 0 = free */
    int64_t since_ms;             /* the window's start */
    int n;
};

struct sl_login {
    const struct sl_ident *id;
    struct sl_engine *e;
    struct sl_oidc *oidc;         /* NULL = no OIDC provider */
    pthread_mutex_t oidc_mu;      /* sl_oidc is one thread at a time; held
                                     across its (bounded) provider calls */
    pthread_mutex_t mu;           /* the queue, the failures, the counters */
    pthread_cond_t cv;
    struct login_job *head, *tail;
    int queued;
    bool stop;
    pthread_t workers[LOGIN_WORKERS];
    int nworkers;
    struct fail_slot fails[LOGIN_FAIL_SLOTS];
    unsigned char fail_key[crypto_shorthash_KEYBYTES];
    /* counters for /metrics */
    uint64_t ok, denied, unmapped, limited, unavailable;
};

/* ---- failures ---------------------------------------------------------- */

static uint64_t fail_hash(const struct sl_login *l, const char *kind, const void *p, size_t n)
{
    unsigned char buf[80], out[crypto_shorthash_BYTES];
    uint64_t k;
    size_t kn = strlen(kind);

    if (n > sizeof(buf) - kn)
        n = sizeof(buf) - kn;
    memcpy(buf, kind, kn);
    memcpy(buf + kn, p, n);
    crypto_shorthash(out, buf, kn + n, l->fail_key);
    memcpy(&k, out, sizeof(k));
    return k | 1; /* never 0, which marks a free slot */
}

/* The slot of 'key' (mu held): found, or a free or stale one taken. */
static struct fail_slot *fail_slot(struct sl_login *l, uint64_t key, int64_t now, bool take)
{
    size_t i = key % LOGIN_FAIL_SLOTS;
    struct fail_slot *victim = NULL;

    for (size_t k = 0; k < 8; k++) {
        struct fail_slot *f = &l->fails[(i + k) % LOGIN_FAIL_SLOTS];
        if (f->key == key) {
            if (now - f->since_ms >= LOGIN_WINDOW_MS) {
                f->since_ms = now;
                f->n = 0;
            }
            return f;
        }
        if (!victim || (victim->key != 0 && (f->key == 0 || f->since_ms < victim->since_ms)))
            victim = f;
    }
    if (!take)
        return NULL;
    /* a free slot of the probe window, else its oldest gives way: one who
     * fills the table with new names forgets its own failures sooner */
    victim->key = key;
    victim->since_ms = now;
    victim->n = 0;
    return victim;
}

/* Whether the name or the address is over its limit; *retry_s when so.
 * 'user' NULL: the address alone (a provider's token names no one until
 * it is verified). */
static bool fail_limited(struct sl_login *l, const char *user, uint64_t peer, int64_t now,
                         int64_t *retry_s)
{
    uint64_t ku = user ? fail_hash(l, "u:", user, strlen(user)) : 0,
             kp = fail_hash(l, "p:", &peer, sizeof(peer));
    struct fail_slot *fu, *fp;
    bool over = false;

    pthread_mutex_lock(&l->mu);
    fu = user ? fail_slot(l, ku, now, false) : NULL;
    fp = fail_slot(l, kp, now, false);
    if (fu && fu->n >= LOGIN_MAX_FAIL_USER) {
        over = true;
        *retry_s = (fu->since_ms + LOGIN_WINDOW_MS - now + 999) / 1000;
    } else if (fp && fp->n >= LOGIN_MAX_FAIL_PEER) {
        over = true;
        *retry_s = (fp->since_ms + LOGIN_WINDOW_MS - now + 999) / 1000;
    }
    if (over)
        l->limited++;
    pthread_mutex_unlock(&l->mu);
    return over;
}

/* Whether 'peer' may start another device authorization (each asks the
 * provider for one): counted, at most LOGIN_MAX_DEVICE_PEER a window. */
static bool device_allowed(struct sl_login *l, uint64_t peer, int64_t now, int64_t *retry_s)
{
    uint64_t k = fail_hash(l, "d:", &peer, sizeof(peer));
    struct fail_slot *f;
    bool ok;

    pthread_mutex_lock(&l->mu);
    f = fail_slot(l, k, now, true);
    if (!(ok = f->n < LOGIN_MAX_DEVICE_PEER))
        *retry_s = (f->since_ms + LOGIN_WINDOW_MS - now + 999) / 1000;
    else
        f->n++;
    if (!ok)
        l->limited++;
    pthread_mutex_unlock(&l->mu);
    return ok;
}

/* Count a failure (or a success) of 'user' (NULL: the address alone). */
static void fail_count(struct sl_login *l, const char *user, uint64_t peer, bool failed)
{
    uint64_t ku = user ? fail_hash(l, "u:", user, strlen(user)) : 0,
             kp = fail_hash(l, "p:", &peer, sizeof(peer));
    int64_t now = sl_mono_ms();
    struct fail_slot *f;

    pthread_mutex_lock(&l->mu);
    if (failed) {
        if (user)
            fail_slot(l, ku, now, true)->n++;
        fail_slot(l, kp, now, true)->n++;
        l->denied++;
    } else if (user && (f = fail_slot(l, ku, now, false))) {
        f->n = 0; /* a success clears the name's count, not the address's */
    }
    pthread_mutex_unlock(&l->mu);
}

/* ---- the worker -------------------------------------------------------- */

/* The answer is set: count it and hand the request back (from a worker
 * thread). */
static void finish(struct login_job *j)
{
    sl_api_metrics_count(j->s->metrics, j->s->row, sl_http_method(j->s->r),
                         sl_http_status(j->s->r), sl_mono_ns() - j->s->start_ns);
    sl_http_resume(j->s->r);
}

static void count_unavailable(struct sl_login *l)
{
    pthread_mutex_lock(&l->mu);
    l->unavailable++;
    pthread_mutex_unlock(&l->mu);
}

/* Answer the request of 'j' with a refusal (from a worker thread). */
static void answer(struct login_job *j, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void answer(struct login_job *j, int status, const char *code, const char *fmt, ...)
{
    char text[384];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (status == 503)
        sl_http_add_header(j->s->r, "Retry-After", "5");
    sl_http_reply_error(j->s->r, status, code, NULL, "%s", text);
    finish(j);
}

/* A wrong name or password: recorded, then 401 (by the engine's answer). */
static void refuse_credentials(struct sl_login *l, struct login_job *j, const char *text)
{
    struct sl_op *op = &j->s->op;

    fail_count(l, j->user, j->peer, true);
    op->kind = SL_OP_AUDIT;
    op->action = "user.login";
    sl_strlcpy(op->who.user, j->user, sizeof(op->who.user));
    op->status = 401;
    op->code = "unauthorized";
    sl_errorf(&op->err, -EACCES, "%s", text);
    sl_engine_submit(l->e, op);
}

/* The provider vouched for 'user' (from 'source', as 'subject') in
 * 'groups': the first rule they match decides team and role (none:
 * deprovisioned), and the engine applies it (SL_OP_LOGIN). */
static void submit_login(struct sl_login *l, struct login_job *j, const char *user,
                         const char *source, const char *subject, char *const *groups,
                         size_t ngroups, int64_t replaces)
{
    const struct sl_ident_rule *rule;
    struct sl_op *op = &j->s->op;
    json_t *seen = json_array();

    for (size_t i = 0; seen && i < ngroups; i++)
        json_array_append_new(seen, json_string(groups[i]));
    /* LDAP groups are DNs, compared as DNs; OIDC's are names */
    rule = sl_ident_match(l->id, groups, ngroups, strcmp(source, "ldap") == 0);
    op->kind = SL_OP_LOGIN;
    op->action = NULL;
    sl_strlcpy(op->who.user, user, sizeof(op->who.user));
    sl_strlcpy(op->u.login.user, user, sizeof(op->u.login.user));
    sl_strlcpy(op->u.login.source, source, sizeof(op->u.login.source));
    sl_strlcpy(op->u.login.subject, subject, sizeof(op->u.login.subject));
    if (rule) {
        sl_strlcpy(op->u.login.team, rule->team, sizeof(op->u.login.team));
        sl_strlcpy(op->u.login.role, rule->role, sizeof(op->u.login.role));
    }
    op->u.login.groups = seen ? seen : json_array();
    /* the token ends with the identity file's tokenTtl: the provider
     * vouched for the user now, not for as long as its own token lives */
    op->u.login.expires_ms = sl_now_ms() + l->id->token_ttl_ms;
    op->u.login.replaces = replaces;
    pthread_mutex_lock(&l->mu);
    if (rule)
        l->ok++;
    else
        l->unmapped++;
    pthread_mutex_unlock(&l->mu);
    sl_engine_submit(l->e, op);
}

static void run_ldap(struct sl_login *l, struct login_job *j)
{
    struct sl_ldap_user u;
    struct sl_error err = {.text = ""};
    int rc;

    rc = j->kind == LK_PASSWORD ? sl_ldap_login(&l->id->ldap, j->user, j->password, &u, &err)
                                : sl_ldap_lookup(&l->id->ldap, j->user, &u, &err);
    sodium_memzero(j->password, sizeof(j->password));
    if (rc == -EACCES) {
        refuse_credentials(l, j, "invalid user name or password");
        return;
    }
    if (rc == -ENOENT && j->kind == LK_REFRESH) {
        /* gone from the directory: as if in no group */
        memset(&u, 0, sizeof(u));
        sl_strlcpy(u.dn, "", sizeof(u.dn));
    } else if (rc < 0) {
        count_unavailable(l);
        sl_warn("msg=\"LDAP login failed\" user=%s why=\"%s\"", j->user, err.text);
        answer(j, 503, "unavailable", "the identity provider cannot be %s: %s; local "
               "accounts still sign in with their tokens",
               rc == -EPROTO ? "trusted" : rc == -EHOSTUNREACH ? "reached" : "used",
               err.text);
        return;
    }
    if (j->kind == LK_PASSWORD)
        fail_count(l, j->user, j->peer, false);
    submit_login(l, j, j->user, "ldap", u.dn, u.groups, u.ngroups, j->replaces);
    sl_ldap_user_clear(&u);
}

/* Answer the request of 'j' with 'doc' (stolen; from a worker thread). */
static void answer_json(struct login_job *j, int status, json_t *doc)
{
    sl_http_reply_json(j->s->r, status, doc);
    finish(j);
}

/* The provider's token in j->secret verified (its key set fetched again,
 * at most once a minute, when it names a key not known yet), its groups
 * matched and the login submitted to the engine. 'oidc_mu' held. */
static void oidc_login(struct sl_login *l, struct login_job *j, const char *jwt)
{
    struct sl_oidc_identity who = {.ngroups = 0};
    struct sl_error err = {.text = ""};
    char subject[sizeof(j->s->op.u.login.subject)];
    int rc;

    rc = sl_oidc_verify(l->oidc, jwt, strlen(jwt), sl_now_ms(), &who, &err);
    if (rc == -ENOKEY) {
        struct sl_error kerr = {.text = ""};
        int k = sl_oidc_refresh_keys(l->oidc, sl_mono_ms(), &kerr);
        if (k == 0) {
            rc = sl_oidc_verify(l->oidc, jwt, strlen(jwt), sl_now_ms(), &who, &err);
        } else if (k != -EAGAIN && k != -ENOTSUP) {
            count_unavailable(l);
            sl_warn("msg=\"OIDC keys cannot be fetched\" why=\"%s\"", kerr.text);
            answer(j, 503, "unavailable", "the identity provider's keys cannot be fetched: "
                   "%s; local accounts still sign in with their tokens", kerr.text);
            return;
        }
    }
    if (rc == -ENOMEM) {
        answer(j, 503, "unavailable", "out of memory");
        return;
    }
    if (rc < 0) {
        /* counted against the address: a token names no one until it
         * is verified */
        fail_count(l, NULL, j->peer, true);
        answer(j, 401, "unauthorized", "OIDC %s", err.text);
        return;
    }
    snprintf(subject, sizeof(subject), "%s#%s", l->id->oidc.issuer, who.subject);
    submit_login(l, j, who.user, "oidc", subject, who.groups, who.ngroups, 0);
    sl_oidc_identity_clear(&who);
}

/* POST /v1/login/device: a device authorization started with the
 * provider on the daemon's behalf (the daemon is the OIDC client and
 * holds its secret). 'oidc_mu' held. */
static void oidc_device_start(struct sl_login *l, struct login_job *j)
{
    struct sl_oidc_device d;
    struct sl_error err = {.text = ""};
    json_t *doc;
    int rc = sl_oidc_device_start(l->oidc, l->id->oidc.scope, &d, &err);

    if (rc == -EACCES) {
        answer(j, 503, "unavailable", "the identity provider refused this server's "
               "device authorization (check oidc.clientId and its secret): %s", err.text);
        return;
    }
    if (rc < 0) {
        count_unavailable(l);
        sl_warn("msg=\"OIDC device authorization failed\" why=\"%s\"", err.text);
        answer(j, 503, "unavailable", "the identity provider cannot be reached: %s", err.text);
        return;
    }
    doc = json_pack("{s:s, s:s, s:s, s:I, s:I}", "device_code", d.device_code, "user_code",
                    d.user_code, "verification_uri", d.verification_uri, "interval",
                    (json_int_t)d.interval_s, "expires_in", (json_int_t)d.expires_in_s);
    if (doc && d.verification_uri_complete[0])
        json_object_set_new(doc, "verification_uri_complete",
                            json_string(d.verification_uri_complete));
    sodium_memzero(d.device_code, sizeof(d.device_code));
    if (!doc) {
        answer(j, 503, "unavailable", "out of memory");
        return;
    }
    answer_json(j, 200, doc);
}

/* POST /v1/login {"device_code"}: one poll of the provider; pending is
 * 202 with the interval to wait, approval a login. 'oidc_mu' held. */
static void oidc_device_poll(struct sl_login *l, struct login_job *j)
{
    struct sl_error err = {.text = ""};
    char *jwt = NULL;
    int rc = sl_oidc_device_poll(l->oidc, j->secret, &jwt, &err);

    if (rc == -EAGAIN || rc == -EBUSY) {
        /* the interval is the client's to keep: RFC 8628 asks 5 s more
         * after slow_down */
        answer_json(j, 202, json_pack("{s:b, s:b}", "pending", 1, "slow_down", rc == -EBUSY));
        return;
    }
    if (rc == -EACCES) {
        fail_count(l, NULL, j->peer, true);
        answer(j, 403, "forbidden", "the sign-in was not approved: %s", err.text);
        return;
    }
    if (rc < 0) {
        count_unavailable(l);
        sl_warn("msg=\"OIDC device poll failed\" why=\"%s\"", err.text);
        answer(j, 503, "unavailable", "the identity provider cannot be reached: %s", err.text);
        return;
    }
    oidc_login(l, j, jwt);
    sodium_memzero(jwt, strlen(jwt));
    free(jwt);
}

static void run_oidc(struct sl_login *l, struct login_job *j)
{
    pthread_mutex_lock(&l->oidc_mu);
    if (j->kind == LK_ID_TOKEN)
        oidc_login(l, j, j->secret);
    else if (j->kind == LK_DEVICE_START)
        oidc_device_start(l, j);
    else
        oidc_device_poll(l, j);
    pthread_mutex_unlock(&l->oidc_mu);
}

static void job_free(struct login_job *j)
{
    if (j->secret) {
        sodium_memzero(j->secret, strlen(j->secret));
        free(j->secret);
    }
    sodium_memzero(j, sizeof(*j));
    free(j);
}

static void *worker(void *arg)
{
    struct sl_login *l = arg;

    for (;;) {
        struct login_job *j;
        pthread_mutex_lock(&l->mu);
        while (!l->head && !l->stop)
            pthread_cond_wait(&l->cv, &l->mu);
        if (!l->head) {
            pthread_mutex_unlock(&l->mu);
            return NULL;
        }
        j = l->head;
        if (!(l->head = j->next))
            l->tail = NULL;
        l->queued--;
        pthread_mutex_unlock(&l->mu);
        if (l->stop)
            answer(j, 503, "unavailable", "the server is stopping");
        else if (j->kind == LK_PASSWORD || j->kind == LK_REFRESH)
            run_ldap(l, j);
        else
            run_oidc(l, j);
        job_free(j);
    }
}

/* Queue 'j' (its request suspended); false when the queue is full. */
static bool enqueue(struct sl_login *l, struct login_job *j)
{
    pthread_mutex_lock(&l->mu);
    if (l->queued >= LOGIN_QUEUE || l->stop) {
        pthread_mutex_unlock(&l->mu);
        return false;
    }
    j->next = NULL;
    if (l->tail)
        l->tail->next = j;
    else
        l->head = j;
    l->tail = j;
    l->queued++;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return true;
}

/* ---- lifecycle --------------------------------------------------------- */

struct sl_login *sl_login_create(struct sl_engine *e, const struct sl_ident *id,
                                 struct sl_error *err)
{
    struct sl_login *l = calloc(1, sizeof(*l));

    if (!l) {
        sl_errorf(err, -ENOMEM, "out of memory");
        return NULL;
    }
    l->id = id;
    l->e = e;
    randombytes_buf(l->fail_key, sizeof(l->fail_key));
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->oidc_mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    if (id->has_oidc && !(l->oidc = sl_ident_oidc_create(&id->oidc, err))) {
        sl_login_destroy(l);
        return NULL;
    }
    for (int i = 0; i < LOGIN_WORKERS; i++) {
        int rc = pthread_create(&l->workers[i], NULL, worker, l);
        if (rc != 0) {
            sl_errorf(err, -rc, "login worker: %s", strerror(rc));
            sl_login_destroy(l);
            return NULL;
        }
        l->nworkers++;
    }
    return l;
}

void sl_login_stop(struct sl_login *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    for (int i = 0; i < l->nworkers; i++)
        pthread_join(l->workers[i], NULL);
    l->nworkers = 0;
}

void sl_login_destroy(struct sl_login *l)
{
    if (!l)
        return;
    sl_login_stop(l);
    sl_oidc_destroy(l->oidc);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->oidc_mu);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

void sl_login_metrics(struct sl_login *l, struct sl_buf *b)
{
    uint64_t ok, denied, unmapped, limited, unavailable;

    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    ok = l->ok;
    denied = l->denied;
    unmapped = l->unmapped;
    limited = l->limited;
    unavailable = l->unavailable;
    pthread_mutex_unlock(&l->mu);
    sl_buf_printf(b,
                  "# HELP sluice_logins_total Logins through the identity provider, by "
                  "outcome.\n"
                  "# TYPE sluice_logins_total counter\n"
                  "sluice_logins_total{outcome=\"ok\"} %llu\n"
                  "sluice_logins_total{outcome=\"denied\"} %llu\n"
                  "sluice_logins_total{outcome=\"unmapped\"} %llu\n"
                  "sluice_logins_total{outcome=\"limited\"} %llu\n"
                  "sluice_logins_total{outcome=\"unavailable\"} %llu\n",
                  (unsigned long long)ok, (unsigned long long)denied,
                  (unsigned long long)unmapped, (unsigned long long)limited,
                  (unsigned long long)unavailable);
}

/* ---- routes ------------------------------------------------------------ */

/* Hand the request to a worker: suspended; or 503 when the queue is full. */
static void submit_job(struct ctx *c, struct login_job *j)
{
    struct sl_login *l = c->a->login;

    if (!(j->s = sl_api_op_new(c, SL_OP_LOGIN))) {
        job_free(j);
        return;
    }
    c->suspended = true;
    sl_http_suspend(c->r);
    if (!enqueue(l, j)) {
        job_free(j);
        sl_http_add_header(c->r, "Retry-After", "1");
        sl_http_reply_error(c->r, 503, "unavailable", NULL,
                            "too many logins in progress; try again");
        c->suspended = false;
        sl_http_resume(c->r);
    }
}

/* GET /v1/login: how one signs in here (public: the CLI and the web UI
 * ask before they offer a form). */
void sl_api_route_login_info(struct ctx *c)
{
    const struct sl_ident *id = c->a->ident;
    json_t *doc, *m = json_array();

    json_array_append_new(m, json_string("token"));
    if (id && id->has_ldap)
        json_array_append_new(m, json_string("password"));
    if (id && id->has_oidc)
        json_array_append_new(m, json_string("oidc"));
    doc = json_pack("{s:o}", "methods", m);
    if (doc && id && id->has_oidc)
        json_object_set_new(doc, "oidc", json_pack("{s:s, s:s}", "issuer", id->oidc.issuer,
                                                   "client_id", id->oidc.client_id));
    sl_http_reply_json(c->r, 200, doc);
}

/* A copy of the string 'v' for a job, or NULL after answering. */
static char *take_secret(struct ctx *c, json_t *v, const char *field, size_t max)
{
    size_t n = json_string_length(v);
    char *p;

    if (n == 0 || n > max) {
        sl_http_reply_error(c->r, 400, "invalid", field, n ? "longer than %zu bytes"
                                                          : "must not be empty", max);
        return NULL;
    }
    if (!(p = strdup(json_string_value(v))))
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
    return p;
}

/* Answer 429: too many 'what'; try again in 'retry' seconds. */
static void too_many(struct ctx *c, int64_t retry, const char *what)
{
    char ra[24];

    snprintf(ra, sizeof(ra), "%lld", (long long)retry);
    sl_http_add_header(c->r, "Retry-After", ra);
    sl_http_reply_error(c->r, 429, "too_many_requests", NULL, "too many %s; try again in %llds",
                        what, (long long)retry);
}

/* Whether the name (NULL: none) or the address is over its failure
 * limit: answered 429 when so. */
static bool limited(struct ctx *c, const char *user)
{
    int64_t retry;

    if (!fail_limited(c->a->login, user, sl_http_peer(c->r), sl_mono_ms(), &retry))
        return false;
    too_many(c, retry, user ? "failed logins for this name or address"
                            : "failed logins from this address");
    return true;
}

/* POST /v1/login, one of three bodies:
 *   {"user": NAME, "password": PASSWORD}   LDAP;
 *   {"id_token": JWT}                      a token the OIDC provider issued;
 *   {"device_code": CODE}                  a device authorization started
 *                                          with POST /v1/login/device. */
void sl_api_route_login(struct ctx *c)
{
    const struct sl_ident *id = c->a->ident;
    json_t *doc, *v;
    const char *key, *user = NULL, *pw = NULL;
    json_t *id_token = NULL, *device_code = NULL;
    struct login_job *j;
    char *secret = NULL;

    if (!id || !c->a->login) {
        sl_http_reply_error(c->r, 404, "not_found", NULL,
                            "no identity provider is configured (sluiced --identity); "
                            "sign in with a token");
        return;
    }
    if (!(doc = sl_api_body_json(c)))
        return;
    json_object_foreach(doc, key, v) {
        bool known = strcmp(key, "user") == 0 || strcmp(key, "password") == 0 ||
                     strcmp(key, "id_token") == 0 || strcmp(key, "device_code") == 0;
        if (!known || !json_is_string(v)) {
            sl_http_reply_error(c->r, 400, "invalid", key,
                                known ? "must be a string"
                                      : "unknown field; expected user and password, "
                                        "id_token, or device_code");
            goto out;
        }
        if (strcmp(key, "user") == 0)
            user = json_string_value(v);
        else if (strcmp(key, "password") == 0)
            pw = json_string_value(v);
        else if (strcmp(key, "id_token") == 0)
            id_token = v;
        else
            device_code = v;
    }
    if ((id_token || device_code) && (user || pw || (id_token && device_code))) {
        sl_http_reply_error(c->r, 400, "invalid", id_token ? "id_token" : "device_code",
                            "give one of: user and password, id_token, device_code");
        goto out;
    }
    if (id_token || device_code) {
        const char *field = id_token ? "id_token" : "device_code";
        if (!id->has_oidc) {
            sl_http_reply_error(c->r, 400, "invalid", field,
                                "this server has no OIDC provider; sign in with %s",
                                id->has_ldap ? "a password or a token" : "a token");
            goto out;
        }
        if (limited(c, NULL))
            goto out;
        secret = take_secret(c, id_token ? id_token : device_code, field,
                             id_token ? SL_OIDC_TOKEN_MAX
                                      : sizeof(((struct sl_oidc_device *)0)->device_code) - 1);
        if (!secret)
            goto out;
        if (!(j = calloc(1, sizeof(*j)))) {
            sodium_memzero(secret, strlen(secret));
            free(secret);
            sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
            goto out;
        }
        j->kind = id_token ? LK_ID_TOKEN : LK_DEVICE_POLL;
        j->secret = secret;
        j->peer = sl_http_peer(c->r);
        submit_job(c, j);
        goto out;
    }
    if (!user || !sl_name_valid(user)) {
        sl_http_reply_error(c->r, 400, "invalid", "user",
                            user ? "not a valid user name" : "is required");
        goto out;
    }
    if (!pw || !*pw || strlen(pw) >= sizeof(j->password)) {
        sl_http_reply_error(c->r, 400, "invalid", "password",
                            pw && *pw ? "longer than 255 bytes" : "is required");
        goto out;
    }
    if (!id->has_ldap) {
        sl_http_reply_error(c->r, 400, "invalid", "password",
                            "this server has no LDAP server to check passwords; sign in "
                            "with OIDC or a token");
        goto out;
    }
    if (limited(c, user))
        goto out;
    if (!(j = calloc(1, sizeof(*j)))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        goto out;
    }
    j->kind = LK_PASSWORD;
    sl_strlcpy(j->user, user, sizeof(j->user));
    sl_strlcpy(j->password, pw, sizeof(j->password));
    j->peer = sl_http_peer(c->r);
    submit_job(c, j);
out:
    /* the secrets leave no copy in the parsed document (the HTTP layer
     * wipes the request's own buffers when it frees them) */
    json_object_foreach(doc, key, v) {
        if (json_is_string(v) && strcmp(key, "user") != 0)
            sodium_memzero((char *)json_string_value(v), json_string_length(v));
    }
    json_decref(doc);
}

/* POST /v1/login/device: start an OIDC device authorization; the client
 * shows the user code and the address, then polls POST /v1/login with
 * the device code. */
void sl_api_route_login_device(struct ctx *c)
{
    const struct sl_ident *id = c->a->ident;
    struct login_job *j;
    int64_t retry;

    if (!id || !id->has_oidc || !c->a->login) {
        sl_http_reply_error(c->r, 404, "not_found", NULL,
                            "no OIDC provider is configured (sluiced --identity)");
        return;
    }
    if (limited(c, NULL))
        return;
    if (!device_allowed(c->a->login, sl_http_peer(c->r), sl_mono_ms(), &retry)) {
        too_many(c, retry, "device sign-ins started from this address");
        return;
    }
    if (!(j = calloc(1, sizeof(*j)))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    j->kind = LK_DEVICE_START;
    j->peer = sl_http_peer(c->r);
    submit_job(c, j);
}

/* POST /v1/login/refresh: the caller's LDAP groups read again (as the
 * search account: no password) and a new token for the one it holds,
 * which is revoked. */
void sl_api_route_login_refresh(struct ctx *c)
{
    const struct sl_ident *id = c->a->ident;
    struct login_job *j;

    if (!id || !id->has_ldap || !c->a->login) {
        sl_http_reply_error(c->r, 404, "not_found", NULL,
                            "no LDAP server is configured (sluiced --identity)");
        return;
    }
    if (c->who.job_id) {
        sl_http_reply_error(c->r, 403, "forbidden", NULL, "a job's token is not refreshed");
        return;
    }
    if (!(j = calloc(1, sizeof(*j)))) {
        sl_http_reply_error(c->r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    j->kind = LK_REFRESH;
    sl_strlcpy(j->user, c->who.user, sizeof(j->user));
    j->peer = sl_http_peer(c->r);
    j->replaces = c->who.token_id;
    submit_job(c, j);
}
