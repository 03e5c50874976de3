/*
 * fuzz_slurm.c - libFuzzer target for what the Slurm executor reads of
 * Slurm's answers (src/exec/slurm_parse.c): a line of `scontrol show node
 * -o`, a line of `scontrol show job -d -o`, of the jobcomp file or of the
 * executor's squeue (both job parsers read mode 1's input), the answer of
 * `scontrol show config`, and the comma lists of partitions.
 *
 * Byte 0 mod 4 picks the parser; the rest, NUL-terminated, is its input
 * (mode 3: two lists split at the first NUL or newline).
 *
 * Beyond the sanitizers: a node that parses has a name, at most
 * SL_EXEC_MAX_GPUS GPUs whose positions are their indices, non-negative
 * CPUs and memory, and a NUL-terminated printable-length reason; a job that
 * parses has an id, a state, places within their arrays with GPU indices
 * in range and positive shard counts, an exit code in 0..383, and no
 * start while it waits nor end before it ended; list matching is
 * symmetric, and a list meets each item it has.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/exec/slurm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_slurm: %s\n", what);
    abort();
}

static void node(const char *line)
{
    struct sl_slurm_node n;

    if (sl_slurm_parse_node(line, &n) < 0)
        return;
    if (!n.info.name[0] || strnlen(n.info.name, sizeof(n.info.name)) == sizeof(n.info.name))
        fail("a node without a name, or one not terminated");
    if (n.info.ngpus < 0 || n.info.ngpus > SL_EXEC_MAX_GPUS || n.info.gpus != n.gpus)
        fail("a GPU count out of range");
    for (int g = 0; g < n.info.ngpus; g++)
        if (n.gpus[g].index != g)
            fail("a GPU whose position is not its index");
    if (n.info.cpu_milli < 0 || n.info.mem_bytes < 0)
        fail("negative CPUs or memory");
    if (strnlen(n.info.reason, sizeof(n.info.reason)) == sizeof(n.info.reason) ||
        strnlen(n.partitions, sizeof(n.partitions)) == sizeof(n.partitions))
        fail("a reason or partition list not terminated");
    for (const char *c = n.info.reason; *c; c++)
        if ((unsigned char)*c < 0x20)
            fail("a control character in a reason");
}

static void job(const char *line)
{
    struct sl_slurm_job j;
    enum sl_slurm_phase p;

    if (sl_slurm_parse_job(line, &j) < 0)
        return;
    if (j.id == 0 || !j.state[0] || strnlen(j.state, sizeof(j.state)) == sizeof(j.state))
        fail("a job without an id or a state");
    if (j.exit_code < 0 || j.exit_code > 128 + 255)
        fail("an exit code out of range");
    if (j.nplaces < 0 || j.nplaces > (int)(sizeof(j.places) / sizeof(j.places[0])))
        fail("a place count out of range");
    for (int k = 0; k < j.nplaces; k++) {
        const struct sl_slurm_place *pl = &j.places[k];
        if (pl->ngpus < 0 || pl->ngpus > SL_EXEC_MAX_GPUS || pl->nshards < 0 ||
            pl->nshards > SL_EXEC_MAX_GPUS)
            fail("a GPU or shard count out of range");
        for (int g = 0; g < pl->ngpus; g++)
            if (pl->gpus[g] < 0 || pl->gpus[g] >= SL_EXEC_MAX_GPUS)
                fail("a GPU index out of range");
        for (int g = 0; g < pl->nshards; g++)
            if (pl->shard_gpu[g] < 0 || pl->shard_gpu[g] >= SL_EXEC_MAX_GPUS ||
                pl->shards[g] <= 0)
                fail("a shard of no GPU, or no shards");
    }
    p = sl_slurm_phase(j.state);
    if (j.start_ms < 0 || j.end_ms < 0 || (p == SL_SLURM_WAITING && j.start_ms) ||
        (p < SL_SLURM_ENDED && j.end_ms))
        fail("a time its phase does not have");
}

static void squeue_line(const char *line)
{
    struct sl_slurm_job j;
    enum sl_slurm_phase p;

    if (sl_slurm_parse_squeue(line, &j) < 0)
        return;
    if (j.id == 0 || !j.state[0] || strnlen(j.state, sizeof(j.state)) == sizeof(j.state) ||
        strnlen(j.reason, sizeof(j.reason)) == sizeof(j.reason))
        fail("a squeue line without an id or a state, or one not terminated");
    for (const char *c = j.state; *c; c++)
        if ((*c < 'A' || *c > 'Z') && *c != '_')
            fail("a state that is not Slurm's shape");
    if (j.het_offset < 0 || j.exit_code < 0 || j.exit_code > 255 + 128 || j.nplaces != 0)
        fail("an offset, exit code or places out of range");
    p = sl_slurm_phase(j.state);
    if (j.start_ms < 0 || j.end_ms < 0 || (p == SL_SLURM_WAITING && j.start_ms) ||
        (p < SL_SLURM_ENDED && j.end_ms))
        fail("a time its phase does not have");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;
    int mode;

    if (size < 1)
        return 0;
    mode = data[0] % 4;
    if (!(text = malloc(size)))
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    if (mode == 0) {
        node(text);
    } else if (mode == 1) {
        job(text);
        squeue_line(text);
    } else if (mode == 2) {
        struct sl_slurm_confine c;
        int rc = sl_slurm_parse_confine(text, &c);
        if (rc != 0 && rc != -EINVAL)
            fail("a confine answer refused with an rc the contract does not list");
    } else {
        char *b = text + strcspn(text, "\n");
        if (*b)
            *b++ = '\0';
        if (sl_slurm_lists_meet(text, b) != sl_slurm_lists_meet(b, text))
            fail("lists_meet is not symmetric");
        if (sl_slurm_list_has(text, b) && b[0] && !sl_slurm_lists_meet(text, b) &&
            !strchr(b, ','))
            fail("a list holds an item it does not meet");
    }
    free(text);
    return 0;
}
