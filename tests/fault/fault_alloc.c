/*
 * fault_alloc.c - allocation-failure sweeps, in the spirit of curl's torture
 * tests: each operation is run once to count its allocations, then once
 * more for every one of them, with that allocation failing. Each run must
 * end in success or -ENOMEM (never another error that would blame the
 * input, never a crash), leave nothing allocated once its result is freed,
 * and, where the contract says so, change nothing on failure.
 *
 * The allocator is replaced for the whole process (glibc lets a program
 * define malloc, calloc, realloc and free; the libraries it uses, jansson
 * and libyaml among them, then call these), so this binary is built
 * without sanitizers (make's SAN=fault). Allocations made while a sweep is
 * armed are tracked, so a leak is any of them still live at the end.
 *
 * Operations: the job spec parser (YAML and JSON, the repository's
 * examples and a full spec), normalisation (sl_job_spec_to_json), the
 * manifest parser (every example manifest, policies, datasets), the
 * document decoder, and the audit writer (sl_audit_line, whose head and
 * line must be unchanged on failure) and verifier.
 */
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/audit/audit.h"
#include "../../src/core/spec.h"
#include "../../src/util/buf.h"
#include "../tap.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

/* ---- the allocator ------------------------------------------------------ */

#define LIVE_SLOTS (1 << 18)

static struct {
    bool armed;
    long count;        /* allocations while armed */
    long fail_at;      /* the count that fails (1-based); 0 = none */
    long failed;       /* allocations refused */
    void *live[LIVE_SLOTS]; /* open addressing; NULL empty, TOMB deleted */
    long nlive;
    bool overflow;
} A;

static char tomb;
#define TOMB ((void *)&tomb)

static size_t slot_of(const void *p)
{
    uintptr_t h = (uintptr_t)p;
    h ^= h >> 17;
    h *= 0xed5ad4bbU;
    h ^= h >> 11;
    return (size_t)h & (LIVE_SLOTS - 1);
}

static void live_add(void *p)
{
    size_t i = slot_of(p);

    if (A.nlive >= LIVE_SLOTS / 2) {
        A.overflow = true;
        return;
    }
    while (A.live[i] && A.live[i] != TOMB)
        i = (i + 1) & (LIVE_SLOTS - 1);
    A.live[i] = p;
    A.nlive++;
}

static bool live_del(void *p)
{
    size_t i = slot_of(p);

    while (A.live[i]) {
        if (A.live[i] == p) {
            A.live[i] = TOMB;
            A.nlive--;
            return true;
        }
        i = (i + 1) & (LIVE_SLOTS - 1);
    }
    return false;
}

/* Whether this allocation fails; counts it. */
static bool fail_now(void)
{
    if (!A.armed)
        return false;
    A.count++;
    if (A.fail_at && A.count == A.fail_at) {
        A.failed++;
        return true;
    }
    return false;
}

void *malloc(size_t n)
{
    void *p;

    if (fail_now())
        return NULL;
    p = __libc_malloc(n);
    if (p && A.armed)
        live_add(p);
    return p;
}

void *calloc(size_t n, size_t size)
{
    void *p;

    if (fail_now())
        return NULL;
    p = __libc_calloc(n, size);
    if (p && A.armed)
        live_add(p);
    return p;
}

void *realloc(void *old, size_t n)
{
    bool tracked;
    void *p;

    if (!old)
        return malloc(n);
    if (fail_now())
        return NULL; /* the old block stays */
    tracked = A.armed && live_del(old);
    p = __libc_realloc(old, n);
    if (!p && tracked)
        live_add(old);
    else if (p && tracked)
        live_add(p);
    return p;
}

void free(void *p)
{
    if (!p)
        return;
    if (A.nlive)
        live_del(p);
    __libc_free(p);
}

/* Not used by the code under test, but they must not reach glibc's own
 * allocator with a pointer ours would then free. */
void *memalign(size_t align, size_t n) { return __libc_memalign(align, n); }
int posix_memalign(void **out, size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}
void *aligned_alloc(size_t align, size_t n) { return __libc_memalign(align, n); }

static void arm(long fail_at)
{
    A.count = 0;
    A.fail_at = fail_at;
    A.failed = 0;
    A.overflow = false;
    A.armed = true;
}

/* Disarm; returns how many tracked allocations are still live. */
static long disarm(void)
{
    long n = A.nlive;

    A.armed = false;
    if (n) {
        memset(A.live, 0, sizeof(A.live));
        A.nlive = 0;
    }
    return n;
}

/* ---- sweeps ------------------------------------------------------------- */

static char why[512]; /* what a run that did not end in -ENOMEM said */

/* One operation: runs, checks its own invariants (returns false when one
 * fails), frees its results, and returns its status in *rc. */
typedef bool (*op_fn)(const void *arg, int *rc);

struct sweep_result {
    long allocs, runs, ok, enomem, other, leaks, broken;
};

static void sweep(const char *name, op_fn fn, const void *arg)
{
    struct sweep_result r = {0};
    int rc = 0;
    bool fine;
    long live;

    /* Once unarmed first: what a library sets up once and keeps (the time
     * zone, a hash seed) is not the operation's. */
    fn(arg, &rc);
    arm(0);
    fine = fn(arg, &rc);
    r.allocs = A.count;
    live = disarm();
    if (!ok(rc == 0 && fine && live == 0 && !A.overflow,
            "%s: succeeds with every allocation granted (%ld allocations)", name,
            r.allocs))
        diag("rc %d, invariants %s, %ld live", rc, fine ? "hold" : "broken", live);
    for (long k = 1; k <= r.allocs; k++) {
        why[0] = '\0';
        arm(k);
        fine = fn(arg, &rc);
        live = disarm();
        r.runs++;
        if (rc == 0)
            r.ok++;
        else if (rc == -ENOMEM)
            r.enomem++;
        else {
            r.other++;
            if (r.other <= 3)
                diag("%s: allocation %ld failed and the result was %d, not -ENOMEM: %s",
                     name, k, rc, why);
        }
        if (live) {
            r.leaks++;
            if (r.leaks <= 3)
                diag("%s: allocation %ld failed and %ld allocations leaked", name, k,
                     live);
        }
        if (!fine) {
            r.broken++;
            if (r.broken <= 3)
                diag("%s: allocation %ld failed and an invariant broke: %s", name, k, why);
        }
    }
    ok(r.other == 0, "%s: each of %ld failed allocations ends in success or -ENOMEM "
       "(%ld -ENOMEM, %ld handled)", name, r.runs, r.enomem, r.ok);
    ok(r.leaks == 0, "%s: nothing leaks after any of them", name);
    ok(r.broken == 0, "%s: every invariant holds after each", name);
}

/* -- the job spec ---------------------------------------------------------- */

struct text {
    const char *buf;
    size_t len;
};

static bool op_job_parse(const void *arg, int *rc)
{
    const struct text *t = arg;
    struct sl_job_spec *s = NULL;
    struct sl_error err = {"", ""};
    bool fine = true;

    *rc = sl_job_spec_parse(t->buf, t->len, &s, &err);
    if (*rc != 0 && *rc != -ENOMEM && A.failed)
        snprintf(why, sizeof(why), "%s: %s", err.field, err.text);
    if (*rc == 0) {
        json_t *doc = sl_job_spec_to_json(s);
        /* normalising may run out of memory too: NULL, nothing else */
        if (doc) {
            struct sl_job_spec *again = NULL;
            int rc2 = sl_job_spec_from_json(doc, &again, &err);
            fine = rc2 == 0 || rc2 == -ENOMEM;
            if (rc2 == -ENOMEM)
                *rc = -ENOMEM;
            sl_job_spec_destroy(again);
            json_decref(doc);
        }
    } else if (s) {
        fine = false; /* *out is untouched on failure */
    }
    sl_job_spec_destroy(s);
    return fine;
}

static bool op_manifests(const void *arg, int *rc)
{
    const struct text *t = arg;
    struct sl_manifest *m = NULL;
    struct sl_error err = {"", ""};
    size_t n = 0;
    bool fine = true;

    *rc = sl_manifests_parse(t->buf, t->len, &m, &n, &err);
    if (*rc == 0) {
        for (size_t i = 0; i < n; i++) {
            json_t *spec = sl_manifest_spec_json(&m[i]);
            json_decref(spec);
        }
    } else {
        fine = m == NULL;
    }
    free(m);
    return fine;
}

static bool op_decode(const void *arg, int *rc)
{
    const struct text *t = arg;
    struct sl_error err = {"", ""};
    json_t *doc = NULL;

    *rc = sl_doc_decode(t->buf, t->len, true, &doc, &err);
    if (*rc == 0)
        json_decref(doc);
    return *rc == 0 || doc == NULL;
}

/* -- the audit writer --------------------------------------------------------- */

static bool op_audit_line(const void *arg, int *rc)
{
    struct sl_audit_head head = {41, {0}}, before;
    struct sl_audit_entry e = {1796000000000, "alice", "job.submit", "job:42", "ok", NULL};
    struct sl_buf line;
    json_t *d;
    size_t len0;
    bool fine;

    (void)arg;
    memset(head.hash, 0xab, sizeof(head.hash));
    before = head;
    sl_buf_init(&line);
    sl_buf_adds(&line, "{\"earlier\":1}\n");
    if (line.failed) {
        sl_buf_fini(&line);
        *rc = -ENOMEM;
        return true;
    }
    len0 = line.len;
    d = json_pack("{s:s, s:i, s:[s, s], s:{s:b}}", "queue", "research", "gpus", 2,
                  "tasks", "a\n\"b\"", "caf\xc3\xa9", "nested", "x", 1);
    if (!d) {
        sl_buf_fini(&line);
        *rc = -ENOMEM;
        return true;
    }
    e.details = d;
    *rc = sl_audit_line(&head, &e, &line);
    if (*rc == 0) {
        /* the record verifies as a line of its own */
        struct sl_audit_rec r;
        int prc = sl_audit_parse_line(line.data + len0, line.len - len0, &r, NULL);
        fine = head.size == 42 && (prc == 0 || prc == -ENOMEM);
        if (prc == -ENOMEM)
            *rc = -ENOMEM;
        sl_audit_rec_fini(&r);
    } else {
        /* no side effect on failure */
        fine = head.size == before.size && !memcmp(head.hash, before.hash, 32) &&
               line.len == len0 && !memcmp(line.data, "{\"earlier\":1}\n", len0);
        if (!fine)
            snprintf(why, sizeof(why), "rc %d: head %lld, line %zu bytes (was %zu)%s", *rc,
                     (long long)head.size, line.len, len0, line.failed ? ", failed" : "");
    }
    json_decref(d);
    sl_buf_fini(&line);
    return fine;
}

static bool op_audit_verify(const void *arg, int *rc)
{
    const struct text *t = arg;
    struct sl_audit_verifier v;
    bool fine = true;
    int frc;

    sl_audit_verifier_init(&v, NULL);
    *rc = sl_audit_verifier_feed(&v, t->buf, t->len);
    frc = *rc == 0 ? sl_audit_verifier_finish(&v) : *rc;
    if (frc != 0 && frc != -ENOMEM) {
        fine = false; /* a good log never fails for anything but memory */
        snprintf(why, sizeof(why), "%s", v.why);
    }
    *rc = frc;
    sl_audit_verifier_fini(&v);
    return fine;
}

/* ---- inputs ------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = '\0';
        *len = (size_t)n;
    } else {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

static const char full_job[] =
    "apiVersion: sluice/v1\n"
    "kind: Job\n"
    "metadata:\n"
    "  name: pytorch-mnist\n"
    "  team: team-a\n"
    "  project: vision\n"
    "  labels: {stage: training, owner: ml-platform}\n"
    "spec:\n"
    "  queue: research\n"
    "  priorityClass: batch\n"
    "  image: registry.internal/ml/pytorch-mnist@sha256:"
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
    "  command: [python, /opt/mnist.py, --epochs=1]\n"
    "  env: {EPOCHS: \"1\", LR: \"0.01\"}\n"
    "  tasks: 2\n"
    "  resources:\n"
    "    gpus: 1\n"
    "    gpuModels: [A100, H100]\n"
    "    cpus: 4\n"
    "    memory: 16Gi\n"
    "  topology: same-node\n"
    "  maxRuntime: 2h\n"
    "  retries: 2\n"
    "  checkpoint: {signal: SIGUSR1, grace: 60s}\n"
    "  datasets: [imagenet@v3, coco@2017:rw]\n"
    "  network: isolated\n"
    "  code: {repo: https://git.internal/ml/mnist, commit: 0123456789abcdef}\n";

static const char full_json[] =
    "{\"apiVersion\": \"sluice/v1\", \"kind\": \"Job\", \"metadata\": {\"name\": \"x\", "
    "\"labels\": {\"a\": \"b\"}}, \"spec\": {\"command\": [\"sh\", \"-c\", \"true\"], "
    "\"env\": {\"K\": \"V\"}, \"resources\": {\"gpuMilli\": 500, \"cpus\": \"250m\"}, "
    "\"tasks\": 1}}";

static const char policy_docs[] =
    "apiVersion: sluice/v1\n"
    "kind: Policy\n"
    "metadata: {name: vision-rules}\n"
    "spec:\n"
    "  teams: [vision]\n"
    "  images:\n"
    "    requireImage: true\n"
    "    allowedRegistries: [registry.internal/]\n"
    "    deny: ['*:latest']\n"
    "    requireDigest: [production]\n"
    "  network: {allowed: [internal, isolated], default: isolated}\n"
    "  caps: {maxGpusPerJob: 2, maxRuntime: 1h}\n"
    "---\n"
    "apiVersion: sluice/v1\n"
    "kind: Dataset\n"
    "metadata: {name: imagenet}\n"
    "spec: {version: v3, owner: nlp, path: /data/imagenet/v3, "
    "access: [{team: vision, mode: ro}]}\n";

int main(int argc, char **argv)
{
    const char *repo = argc > 1 ? argv[1] : ".";
    static const char *const examples[] = {"examples/job.yaml", "examples/demo-teams.yaml",
                                           "examples/pricing.yaml"};
    char *files[3] = {NULL, NULL, NULL};
    struct text job_yaml = {full_job, sizeof(full_job) - 1};
    struct text job_json = {full_json, sizeof(full_json) - 1};
    struct text policies = {policy_docs, sizeof(policy_docs) - 1};
    struct text ex[3];
    struct sl_buf log;
    struct text chain;
    struct sl_audit_head head = {0, {0}};

    /* stdout's buffer is made now, not in a sweep */
    printf("# allocation-failure sweeps\n");
    fflush(stdout);
    for (int i = 0; i < 3; i++) {
        char path[4096];
        size_t len = 0;
        snprintf(path, sizeof(path), "%s/%s", repo, examples[i]);
        if (!(files[i] = slurp(path, &len))) {
            printf("Bail out! cannot read %s\n", path);
            return 1;
        }
        ex[i] = (struct text){files[i], len};
    }

    sweep("job spec, YAML with every field", op_job_parse, &job_yaml);
    sweep("job spec, JSON", op_job_parse, &job_json);
    sweep("job spec, examples/job.yaml", op_job_parse, &ex[0]);
    sweep("manifests, examples/demo-teams.yaml", op_manifests, &ex[1]);
    sweep("manifests, examples/pricing.yaml", op_manifests, &ex[2]);
    sweep("manifests, a Policy and a Dataset", op_manifests, &policies);
    sweep("document decoder, examples/demo-teams.yaml", op_decode, &ex[1]);
    sweep("audit writer, one record", op_audit_line, NULL);

    /* a short chain for the verifier */
    sl_buf_init(&log);
    for (int i = 0; i < 5; i++) {
        struct sl_audit_entry e = {1796000000000 + i, "bob", "apply", "queue:q", "ok", NULL};
        if (sl_audit_line(&head, &e, &log) < 0) {
            printf("Bail out! cannot build a chain\n");
            return 1;
        }
        sl_buf_add(&log, "\n", 1);
    }
    chain = (struct text){log.data, log.len};
    sweep("audit verifier, 5 records", op_audit_verify, &chain);
    sl_buf_fini(&log);
    for (int i = 0; i < 3; i++)
        free(files[i]);
    return done_testing();
}
