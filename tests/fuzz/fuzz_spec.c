/*
 * fuzz_spec.c - libFuzzer target for the parsers of untrusted job specs and
 * manifests (src/core: doc.c, fields.c, spec.c, manifest.c, normalise.c).
 *
 * Every input goes to sl_job_spec_parse, sl_manifests_parse and
 * sl_doc_decode. A spec that parses must normalise (to_json), validate
 * again, and normalise to the same document: anything else aborts, so the
 * fuzzer reports it. Everything is freed, so leaks show too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../src/core/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const struct sl_job_spec *spec)
{
    struct sl_job_spec *again = NULL;
    struct sl_error err = {"", ""};
    json_t *a = sl_job_spec_to_json(spec), *b = NULL;

    if (!a)
        return; /* out of memory */
    if (sl_job_spec_from_json(a, &again, &err) != 0) {
        fprintf(stderr, "normalised spec refused: %s: %s\n", err.field,
                err.text);
        abort();
    }
    b = sl_job_spec_to_json(again);
    if (b && !json_equal(a, b)) {
        fprintf(stderr, "normalising twice changed the spec\n");
        abort();
    }
    json_decref(b);
    json_decref(a);
    sl_job_spec_destroy(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    struct sl_job_spec *spec = NULL;
    struct sl_manifest *m = NULL;
    struct sl_error err = {"", ""};
    json_t *doc = NULL;
    size_t n = 0;

    if (sl_job_spec_parse(buf, size, &spec, &err) == 0) {
        round_trip(spec);
        sl_job_spec_destroy(spec);
    }
    if (sl_manifests_parse(buf, size, &m, &n, &err) == 0)
        free(m);
    if (sl_doc_decode(buf, size, true, &doc, &err) == 0)
        json_decref(doc);
    return 0;
}
