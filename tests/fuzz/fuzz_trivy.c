/*
 * fuzz_trivy.c - libFuzzer target for the parser of imported image scans
 * (src/policy/policy.c, sl_trivy_parse: a Trivy JSON report that an admin
 * uploads with `sluice scan import`), and the stored form it is kept in.
 *
 * Beyond the sanitizers: a report that parses has a valid digest, a
 * printable artifact, non-negative counts, a highest severity that is the
 * highest one counted, and printable finding ids of that severity; and it
 * reads back the same from its stored JSON (sl_scan_json, then
 * sl_scan_from_json). A refusal names a reason.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_trivy: %s\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl_error err = {"", ""};
    struct sl_scan s, back;
    json_t *j;
    int rc = sl_trivy_parse((const char *)data, size, &s, &err), top = -1;

    if (rc < 0) {
        if (rc != -EINVAL && rc != -EFBIG && rc != -ENOMEM)
            fail("a report refused with an rc the contract does not list");
        if (!err.text[0])
            fail("a refusal without a reason");
        return 0;
    }
    if (!sl_digest_valid(s.digest) || !sl_text_printable(s.artifact))
        fail("an accepted report without a valid digest or a printable artifact");
    for (int k = 0; k < SL_SEV_COUNT; k++) {
        if (s.counts[k] < 0)
            fail("a negative count");
        if (s.counts[k] > 0)
            top = k;
    }
    if (s.top != top || s.nids < 0 || s.nids > 5 || (top < 0 && s.nids))
        fail("the highest severity or its findings do not match the counts");
    for (int i = 0; i < s.nids; i++)
        if (strnlen(s.ids[i], sizeof(s.ids[i])) == sizeof(s.ids[i]) ||
            !sl_text_printable(s.ids[i]))
            fail("a finding id that is not printable text");
    if (!(j = sl_scan_json(&s)))
        return 0; /* out of memory */
    if (sl_scan_from_json(j, &back) != 0 || strcmp(back.digest, s.digest) ||
        strcmp(back.artifact, s.artifact) || back.top != s.top || back.nids != s.nids ||
        memcmp(back.counts, s.counts, sizeof(s.counts)))
        fail("a scan reads back otherwise from its stored form");
    for (int i = 0; i < s.nids; i++)
        if (strcmp(back.ids[i], s.ids[i]))
            fail("a finding id reads back otherwise");
    json_decref(j);
    return 0;
}
