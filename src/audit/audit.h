/*
 * audit.h - a tamper-evident audit log: hash-chained JSON lines, a
 * streaming verifier, and signed checkpoints of the chain's head.
 *
 * The library stores nothing: sl_audit_line() turns an event into the
 * canonical text of the next record and advances the caller's head; the
 * daemon appends that text and a '\n' to its log. docs/audit.md gives the
 * format byte by byte.
 *
 * Record N is one line of compact JSON whose "hash" is the SHA-256 of the
 * line without its hash member, and whose "prev" is record N-1's hash
 * (zeros for record 1). A checkpoint is a signed note (C2SP signed-note,
 * tlog-checkpoint style, Ed25519) over the log's origin, size and head
 * hash.
 *
 * What the verifier proves: with no checkpoint, only that the lines form
 * one consistent chain from record 1 - so a clean PREFIX of a log passes
 * (a truncated tail is invisible). With a checkpoint, also that the log
 * holds at least the checkpoint's records and that record ckpt.size has
 * the signed hash: truncation, rollback and rewriting of signed history
 * are caught. The log proves integrity, not that every event was logged.
 *
 * No global state; every function is thread-safe on distinct objects.
 */
#ifndef SL_AUDIT_H
#define SL_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../util/buf.h"
#include "../util/util.h"

#define SL_AUDIT_FIELD_MAX 256     /* bytes of actor, action, object, outcome */
#define SL_AUDIT_LINE_MAX 65536    /* bytes of one record, without its '\n' */
#define SL_AUDIT_NAME_MAX 64       /* bytes of a key name */
#define SL_AUDIT_ORIGIN_MAX 128    /* bytes of a checkpoint's origin */
#define SL_AUDIT_CHECKPOINT_MAX 8192 /* bytes of a checkpoint's text */
#define SL_AUDIT_VKEY_MAX 128      /* a buffer that holds any verifier key */

/* One event, as the caller describes it. Strings are UTF-8; none is kept. */
struct sl_audit_entry {
    int64_t at_ms;          /* wall time, ms since the epoch, 0..year 9999 */
    const char *actor;      /* user name, or "scheduler", "meter", "system" */
    const char *action;     /* e.g. "job.submit", "job.place", "apply.queue" */
    const char *object;     /* e.g. "job:42", "queue:research"; "" allowed */
    const char *outcome;    /* "ok" or "refused" */
    const json_t *details;  /* a JSON object, or NULL for {} */
};

/* The head of a chain: how many records, and the last one's hash.
 * size 0: hash all zero. */
struct sl_audit_head {
    int64_t size;
    unsigned char hash[32];
};

/* Append to 'line' the canonical text of record head->size+1 (no '\n') and
 * advance *head to it. Returns 0; -EINVAL when actor, action or outcome is
 * empty, a string has control characters or is not UTF-8, a string is over
 * SL_AUDIT_FIELD_MAX, details is not an object (or would not read back the
 * same), at_ms is out of range; -EFBIG when the record would be over
 * SL_AUDIT_LINE_MAX; -ENOMEM. On failure *head and 'line' are unchanged.
 * Every line this returns passes the verifier. */
int sl_audit_line(struct sl_audit_head *head, const struct sl_audit_entry *e,
                  struct sl_buf *line);

/* One record read back. */
struct sl_audit_rec {
    int64_t seq;                             /* 1, 2, 3, ... */
    int64_t at_ms;                           /* ms since the epoch */
    char actor[SL_AUDIT_FIELD_MAX + 1];
    char action[SL_AUDIT_FIELD_MAX + 1];
    char object[SL_AUDIT_FIELD_MAX + 1];
    char outcome[SL_AUDIT_FIELD_MAX + 1];
    json_t *details;                         /* owned: sl_audit_rec_fini */
    unsigned char prev[32];                  /* the previous record's hash */
    unsigned char hash[32];                  /* this record's hash */
};

/* Parse one line s[0..n) (without its '\n') into *out. Returns 0 when the
 * line is exactly the canonical text of a record and its hash matches its
 * contents; -EINVAL when it is not canonical; -EBADMSG when only the hash
 * is wrong; -ENOMEM. 'err' (may be NULL) says why. On failure *out holds
 * nothing to free. The chain (seq order, prev) is the verifier's job. */
int sl_audit_parse_line(const char *s, size_t n, struct sl_audit_rec *out,
                        struct sl_error *err);
/* Free out->details; NULL-safe, idempotent. */
void sl_audit_rec_fini(struct sl_audit_rec *r);

/* What a store keeps beside each line to search it by (its index
 * columns): the line's hash covers none of them, so a search trusts them
 * only once they are checked against the line. */
struct sl_audit_index {
    int64_t seq;
    int64_t at_ms;
    const char *actor, *action, *object, *outcome; /* object "" = none */
};

/* Whether 'ix' says what line s[0..n) says. Returns 0; -EBADMSG with 'err'
 * naming the first column that differs, its stored value and the line's
 * ("record 7: its actor column says \"bob\", its line \"alice\""); the
 * errors of sl_audit_parse_line when the line itself is bad. */
int sl_audit_index_check(const struct sl_audit_index *ix, const char *s, size_t n,
                         struct sl_error *err);

/* A streaming verifier of a JSON-lines log. Fields after a failure:
 * bad_seq (the seq the bad record should have had: records verified + 1),
 * bad_line (1-based line number), bad_ckpt (the failure is against the
 * checkpoint: truncation, rollback, rewrite) and why (a sentence). */
struct sl_audit_verifier {
    struct sl_audit_head head;  /* verified so far */
    struct sl_audit_head ckpt;  /* the trusted head, when have_ckpt */
    bool have_ckpt;
    int rc;                     /* 0, or the first failure (sticky) */
    int64_t lines;              /* complete lines consumed */
    int64_t bad_seq;
    int64_t bad_line;
    bool bad_ckpt;
    char why[192];
    char *part;                 /* owned: an incomplete line, <= LINE_MAX */
    size_t part_len;
    size_t part_cap;
};

/* Start verifying a log from its first byte; 'ckpt' (may be NULL: none) is
 * a head the reader trusts, from a verified checkpoint. */
void sl_audit_verifier_init(struct sl_audit_verifier *v,
                            const struct sl_audit_head *ckpt);
/* Feed the next 'len' bytes, split anywhere. Returns 0, or -EBADMSG once a
 * record is bad (then and on every later call: the first failure stays),
 * or -ENOMEM. */
int sl_audit_verifier_feed(struct sl_audit_verifier *v, const char *data,
                           size_t len);
/* The end of the log: a last line without '\n' is bad (truncated), and
 * fewer records than the checkpoint's size is bad. Returns 0 when the log
 * is good, else as feed. v->head is then the verified head. */
int sl_audit_verifier_finish(struct sl_audit_verifier *v);
/* Make *dst (uninitialised storage) a deep copy of *src. Returns 0 or
 * -ENOMEM (then *dst holds nothing to free). */
int sl_audit_verifier_copy(struct sl_audit_verifier *dst,
                           const struct sl_audit_verifier *src);
/* Free the partial-line buffer; NULL-safe. */
void sl_audit_verifier_fini(struct sl_audit_verifier *v);

/* An Ed25519 signing key with its note name and key id. Holds the secret:
 * sl_audit_key_fini wipes it. */
struct sl_audit_key {
    char name[SL_AUDIT_NAME_MAX + 1];
    unsigned char id[4];        /* SHA-256(name "\n" 0x01 pk)[0..4) */
    unsigned char pk[32];
    unsigned char sk[64];       /* secret: libsodium's seed || pk */
};

/* Whether 'name' is a key name: 1..64 of [A-Za-z0-9._/-]. */
bool sl_audit_key_name_ok(const char *name);

/* Derive the key 'name' from a 32-byte seed (for tests and tools; the
 * daemon uses sl_audit_key_load_or_create). Returns 0 or -EINVAL. */
int sl_audit_key_from_seed(const char *name, const unsigned char seed[32],
                           struct sl_audit_key *k);

/* Load the private key file 'path' (PRIVATE+KEY+name+id+base64), or create
 * it with a random seed when it does not exist: mode 0600, through a temp
 * file opened O_EXCL, fsync and a rename that never replaces a file. The
 * file is validated completely (format, id, and that it names 'name' when
 * 'name' is not NULL). Returns 0, -EINVAL (bad file or name), -errno; 'err'
 * names the file and the fault. The file's permissions are not checked. */
int sl_audit_key_load_or_create(const char *path, const char *name,
                                struct sl_audit_key *k, struct sl_error *err);
/* Wipe the secret; NULL-safe. */
void sl_audit_key_fini(struct sl_audit_key *k);

/* Write the verifier key text "name+id+base64(0x01 pk)" (no '\n') into buf.
 * Returns its length, or -ENOSPC when size is too small. */
int sl_audit_vkey(const struct sl_audit_key *k, char *buf, size_t size);

/* Append to 'out' a checkpoint of head 'h' of log 'origin', with a time
 * extension line when at_ms >= 0, signed by k. Returns 0, -EINVAL (bad
 * origin, head or time), -ENOMEM; on failure 'out' is unchanged. */
int sl_audit_checkpoint_sign(const struct sl_audit_key *k, const char *origin,
                             const struct sl_audit_head *h, int64_t at_ms,
                             struct sl_buf *out);

/* Verify the checkpoint text[0..len) (at most SL_AUDIT_CHECKPOINT_MAX) with
 * verifier key 'vkey'. Signature lines of other keys are ignored; one of
 * vkey's must be present and valid. Returns 0 and fills *out and *at_ms
 * (-1 when the note has no time line; at_ms may be NULL); -EINVAL (a
 * malformed note or vkey), -EPERM (no valid signature by vkey's key),
 * -EFBIG. 'err' says which line is at fault. On failure *out, *at_ms are
 * unchanged. The origin is not returned: a caller that cares compares it
 * with sl_audit_checkpoint_origin. */
int sl_audit_checkpoint_verify(const char *text, size_t len, const char *vkey,
                               struct sl_audit_head *out, int64_t *at_ms,
                               struct sl_error *err);

/* Copy the first line (origin) of checkpoint text into buf (>= 129 bytes).
 * Returns 0 or -EINVAL. Says nothing about the signature. */
int sl_audit_checkpoint_origin(const char *text, size_t len, char *buf,
                               size_t size);

#endif
