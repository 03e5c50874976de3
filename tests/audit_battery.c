/*
 * audit_battery.c - audit-battery: the verifier's mutation battery run on
 * a real export.
 *
 *   audit-battery EXPORT.jsonl CHECKPOINT VKEY
 *
 * Verifies the export against the checkpoint (which must sign the export's
 * last record), then tries every single-byte change (each byte ^ 0x01 and
 * ^ 0x20), record deletion, adjacent swap, truncation and duplicate
 * insertion, printing one line per class. Exit 0 when the untouched export
 * passes and every mutation is detected, 1 otherwise, 2 on usage errors.
 * VKEY is the verifier key text or a file holding it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/audit/audit.h"
#include "../src/util/util.h"
#include "audit_battery.h"

#define EXPORT_MAX ((size_t)1 << 30)

int main(int argc, char **argv)
{
    struct sl_audit_head ckpt;
    struct sl_error err = {"", ""};
    struct battery b;
    struct battery_class c[5];
    char *log = NULL, *cp = NULL, *vk = NULL;
    size_t log_len = 0, cp_len = 0, vk_len = 0;
    int rc, status = 0;

    if (argc != 4) {
        fprintf(stderr, "usage: audit-battery EXPORT.jsonl CHECKPOINT VKEY\n");
        return 2;
    }
    if ((rc = sl_read_file(argv[1], EXPORT_MAX, &log, &log_len)) < 0 ||
        (rc = sl_read_file(argv[2], SL_AUDIT_CHECKPOINT_MAX, &cp, &cp_len)) < 0) {
        fprintf(stderr, "audit-battery: %s: %s\n", log ? argv[2] : argv[1],
                strerror(-rc));
        status = 2;
        goto out;
    }
    /* VKEY: a file holding the key text, or the text itself. */
    if (sl_read_file(argv[3], 4096, &vk, &vk_len) < 0 && !(vk = strdup(argv[3]))) {
        status = 2;
        goto out;
    }
    vk[strcspn(vk, "\r\n")] = '\0';
    if (sl_audit_checkpoint_verify(cp, cp_len, vk, &ckpt, NULL, &err) < 0) {
        printf("checkpoint: %s\n", err.text);
        status = 1;
        goto out;
    }
    if (battery_open(&b, log, log_len, &ckpt) < 0) {
        printf("untouched export fails: %s\n", b.why);
        status = 1;
        goto out;
    }
    printf("untouched export: %lld records pass the checkpoint\n", (long long)b.n);
    memset(c, 0, sizeof(c));
    battery_bytes(&b, &c[0]);
    battery_deletions(&b, &c[1]);
    battery_swaps(&b, &c[2]);
    battery_truncations(&b, &c[3]);
    battery_insertions(&b, &c[4]);
    for (int i = 0; i < 5; i++) {
        printf("%s: %lld tried, %lld detected", c[i].name, (long long)c[i].tried,
               (long long)c[i].detected);
        if (i == 3)
            printf(" (%lld of them pass with no checkpoint)", (long long)c[i].passed_bare);
        printf("\n");
        if (c[i].missed[0])
            printf("  first undetected: %s\n", c[i].missed);
        if (c[i].misplaced)
            printf("  %lld reports named another record; first: %s\n",
                   (long long)c[i].misplaced, c[i].strayed);
        if (c[i].detected != c[i].tried)
            status = 1;
    }
    battery_close(&b);
out:
    free(log);
    free(cp);
    free(vk);
    return status;
}
