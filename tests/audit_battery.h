/*
 * audit_battery.h - the mutation battery of the audit-log verifier, shared
 * by tests/unit/test_audit.c and tests/audit_battery.c (static functions:
 * include it once per program).
 *
 * Given an export (JSON lines) and the head its checkpoint signs, each
 * class makes every mutation of one kind - a changed byte, a deleted
 * record, two records swapped, the log cut at a record, a record repeated
 * - and verifies the mutated log against the checkpoint. To stay fast the
 * verifier is snapshotted at each line start (sl_audit_verifier_copy) and
 * fed only from the first changed line onwards, which is the same as
 * verifying the whole mutated file: the lines before it are untouched.
 * Each mutation also says which records may be reported as bad; a report
 * elsewhere counts as 'misplaced'.
 */
#ifndef SL_AUDIT_BATTERY_H
#define SL_AUDIT_BATTERY_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/audit/audit.h"

struct battery {
    char *data;                       /* the export; borrowed, mutated and restored */
    size_t len;
    int64_t n;                        /* records (lines) */
    size_t *off;                      /* owned, n+1: start of line i; off[n] = len */
    struct sl_audit_head ckpt;        /* the head the checkpoint signs */
    struct sl_audit_verifier *snap;   /* owned, n+1: after i lines, checkpoint on */
    struct sl_audit_verifier *bare;   /* owned, n+1: the same, no checkpoint */
    char why[256];                    /* why battery_open failed */
};

struct battery_class {
    const char *name;                 /* "single-byte changes" */
    int64_t tried, detected, misplaced;
    int64_t passed_bare;              /* truncations: passed with no checkpoint */
    char missed[256];                 /* the first mutation that passed */
    char strayed[256];                /* the first misplaced report */
};

struct piece {
    const char *p;
    size_t n;
};

static void battery_close(struct battery *b)
{
    if (b->snap)
        for (int64_t i = 0; i <= b->n; i++)
            sl_audit_verifier_fini(&b->snap[i]);
    if (b->bare)
        for (int64_t i = 0; i <= b->n; i++)
            sl_audit_verifier_fini(&b->bare[i]);
    free(b->snap);
    free(b->bare);
    free(b->off);
    b->snap = b->bare = NULL;
    b->off = NULL;
}

/* Verify the untouched export against 'ckpt' and take the snapshots.
 * Returns 0, or -EBADMSG with b->why when the export does not pass or the
 * checkpoint is not of this export's last record. */
static int battery_open(struct battery *b, char *data, size_t len,
                        const struct sl_audit_head *ckpt)
{
    struct sl_audit_verifier v, w;
    int64_t n = 0;
    int rc = 0;

    memset(b, 0, sizeof(*b));
    b->data = data;
    b->len = len;
    b->ckpt = *ckpt;
    for (size_t i = 0; i < len; i++)
        n += data[i] == '\n';
    b->off = calloc((size_t)n + 1, sizeof(*b->off));
    b->snap = calloc((size_t)n + 1, sizeof(*b->snap));
    b->bare = calloc((size_t)n + 1, sizeof(*b->bare));
    if (!b->off || !b->snap || !b->bare) {
        snprintf(b->why, sizeof(b->why), "out of memory");
        rc = -ENOMEM;
        goto out;
    }
    b->n = n;
    for (size_t i = 0, k = 1; i < len; i++)
        if (data[i] == '\n' && k <= (size_t)n)
            b->off[k++] = i + 1;
    b->off[n] = len;
    sl_audit_verifier_init(&v, ckpt);
    sl_audit_verifier_init(&w, NULL);
    for (int64_t i = 0; i <= n; i++) {
        if (sl_audit_verifier_copy(&b->snap[i], &v) < 0 ||
            sl_audit_verifier_copy(&b->bare[i], &w) < 0) {
            snprintf(b->why, sizeof(b->why), "out of memory");
            rc = -ENOMEM;
            break;
        }
        if (i == n)
            break;
        sl_audit_verifier_feed(&v, data + b->off[i], b->off[i + 1] - b->off[i]);
        sl_audit_verifier_feed(&w, data + b->off[i], b->off[i + 1] - b->off[i]);
    }
    if (rc == 0 && (rc = sl_audit_verifier_finish(&v)) < 0)
        snprintf(b->why, sizeof(b->why), "%s", v.why);
    else if (rc == 0 && v.head.size != ckpt->size) {
        snprintf(b->why, sizeof(b->why),
                 "the export has %lld records, the checkpoint signs %lld: the "
                 "battery needs the checkpoint of this very export",
                 (long long)v.head.size, (long long)ckpt->size);
        rc = -EBADMSG;
    }
    sl_audit_verifier_fini(&v);
    sl_audit_verifier_fini(&w);
out:
    if (rc < 0)
        battery_close(b);
    return rc;
}

/* Verify from the snapshot after 'at' lines with the given pieces as the
 * rest of the file; count the result in c. A report must name a record in
 * [lo, hi] or be a checkpoint failure. */
static void battery_try(struct battery *b, struct battery_class *c, int64_t at,
                        const struct piece *pc, int npc, int64_t lo, int64_t hi,
                        const char *what)
{
    struct sl_audit_verifier v;
    int rc = 0;

    c->tried++;
    if (sl_audit_verifier_copy(&v, &b->snap[at]) < 0) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    for (int i = 0; i < npc && rc == 0; i++)
        rc = sl_audit_verifier_feed(&v, pc[i].p, pc[i].n);
    if (rc == 0)
        rc = sl_audit_verifier_finish(&v);
    if (rc == -ENOMEM) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    if (rc < 0) {
        c->detected++;
        if (!v.bad_ckpt && (v.bad_seq < lo || v.bad_seq > hi)) {
            if (!c->misplaced++)
                snprintf(c->strayed, sizeof(c->strayed),
                         "%s: reported record %lld (%s)", what,
                         (long long)v.bad_seq, v.why);
        }
    } else if (!c->missed[0]) {
        snprintf(c->missed, sizeof(c->missed), "%s: passed", what);
    }
    sl_audit_verifier_fini(&v);
}

static struct piece piece_line(const struct battery *b, int64_t i)
{
    return (struct piece){b->data + b->off[i], b->off[i + 1] - b->off[i]};
}

static struct piece piece_from(const struct battery *b, int64_t i)
{
    return (struct piece){b->data + b->off[i], b->len - b->off[i]};
}

/* (a) Every byte, flipped by each mask: the record holding it, or the
 * next, or the checkpoint must catch it. */
static void battery_bytes(struct battery *b, struct battery_class *c)
{
    static const unsigned char masks[] = {0x01, 0x20};
    char what[96];

    c->name = "single-byte changes";
    for (int64_t i = 0; i < b->n; i++) {
        struct piece rest = piece_from(b, i);
        for (size_t p = b->off[i]; p < b->off[i + 1]; p++)
            for (size_t m = 0; m < sizeof(masks); m++) {
                b->data[p] ^= (char)masks[m];
                snprintf(what, sizeof(what), "byte %zu ^ 0x%02x (record %lld)", p,
                         masks[m], (long long)(i + 1));
                battery_try(b, c, i, &rest, 1, i + 1, i + 2, what);
                b->data[p] ^= (char)masks[m];
            }
    }
}

/* (b) Every record deleted: caught at its place. */
static void battery_deletions(struct battery *b, struct battery_class *c)
{
    char what[64];

    c->name = "record deletions";
    for (int64_t i = 0; i < b->n; i++) {
        struct piece rest = piece_from(b, i + 1);
        snprintf(what, sizeof(what), "record %lld deleted", (long long)(i + 1));
        battery_try(b, c, i, &rest, 1, i + 1, i + 1, what);
    }
}

/* (c) Every two neighbours swapped: caught at the first of them. */
static void battery_swaps(struct battery *b, struct battery_class *c)
{
    char what[64];

    c->name = "adjacent swaps";
    for (int64_t i = 0; i + 1 < b->n; i++) {
        struct piece pc[3] = {piece_line(b, i + 1), piece_line(b, i),
                              piece_from(b, i + 2)};
        snprintf(what, sizeof(what), "records %lld and %lld swapped",
                 (long long)(i + 1), (long long)(i + 2));
        battery_try(b, c, i, pc, 3, i + 1, i + 1, what);
    }
}

/* (d) The log cut after r records, r = 0..n-1: the checkpoint catches it;
 * with no checkpoint each cut passes (counted in passed_bare). */
static void battery_truncations(struct battery *b, struct battery_class *c)
{
    char what[64];

    c->name = "truncations";
    for (int64_t r = 0; r < b->n; r++) {
        struct sl_audit_verifier v;
        snprintf(what, sizeof(what), "cut to %lld records", (long long)r);
        battery_try(b, c, r, NULL, 0, r + 1, r + 1, what);
        if (sl_audit_verifier_copy(&v, &b->bare[r]) == 0 &&
            sl_audit_verifier_finish(&v) == 0)
            c->passed_bare++;
        sl_audit_verifier_fini(&v);
    }
}

/* (e) A copy of a record inserted at every position p = 0..n (it becomes
 * line p+1): once the record just before (a replay), once a distant one. */
static void battery_insertions(struct battery *b, struct battery_class *c)
{
    char what[80];

    c->name = "duplicate insertions";
    for (int64_t p = 0; p <= b->n && b->n > 0; p++) {
        int64_t dup[2] = {p > 0 ? p - 1 : 0, (p + b->n / 2) % b->n};
        for (int k = 0; k < 2; k++) {
            struct piece pc[2] = {piece_line(b, dup[k]), piece_from(b, p)};
            snprintf(what, sizeof(what), "record %lld inserted as line %lld",
                     (long long)(dup[k] + 1), (long long)(p + 1));
            battery_try(b, c, p, pc, 2, p + 1, p + 2, what);
        }
    }
}

#endif
