/*
 * fuzz_trace.c - libFuzzer target for the loaders of the cluster traces
 * that `sluice sim` replays (src/sim/trace.c): node lists, openb pod
 * lists, Philly/Helios job lists, virtual-cluster sizes, and the header
 * sniffer.
 *
 * The first input byte chooses the loader (its value modulo 5); the rest
 * is the file, handed over as a memory file (/proc/self/fd/N) because the
 * loaders take a path. Beyond the sanitizers, every row a loader accepts
 * must hold what trace.h promises (names NUL-terminated within their
 * arrays, counts and sizes in their ranges), and a refusal must name the
 * file and return nothing.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../src/sim/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_trace: %s\n", what);
    abort();
}

static void check_str(const char *s, size_t size, const char *what)
{
    if (strnlen(s, size) == size)
        fail(what);
}

static void check_tasks(const struct sl_trace_task *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        check_str(t[i].name, sizeof(t[i].name), "a task name without its NUL");
        check_str(t[i].user, sizeof(t[i].user), "a user without its NUL");
        check_str(t[i].gpu_spec, sizeof(t[i].gpu_spec), "a gpu_spec without its NUL");
        check_str(t[i].qos, sizeof(t[i].qos), "a qos without its NUL");
        if (!t[i].name[0])
            fail("a task without a name");
        if (t[i].tasks < 1 || t[i].num_gpu < 0 || t[i].num_gpu > 64)
            fail("a task count or GPU count out of range");
        if (t[i].num_gpu > 0 && (t[i].gpu_milli < 1 || t[i].gpu_milli > 1000))
            fail("gpu_milli out of 1..1000 for a GPU task");
        if (t[i].cpu_milli < 0 || t[i].mem_bytes < 0)
            fail("a negative CPU or memory size");
        if (t[i].submit_ms < -1 || t[i].duration_ms < -1)
            fail("a time below -1 (not in trace)");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl_error err = {"", ""};
    char path[64];
    int fd, rc, which;
    size_t n = 0;

    if (size < 1)
        return 0;
    which = data[0] % 5;
    fd = memfd_create("trace.csv", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (size > 1 && write(fd, data + 1, size - 1) != (ssize_t)(size - 1)) {
        close(fd);
        return 0;
    }
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

    switch (which) {
    case 0: {
        struct sl_trace_node *nodes = NULL;
        rc = sl_trace_load_nodes(path, &nodes, &n, &err);
        if (rc == 0) {
            for (size_t i = 0; i < n; i++) {
                check_str(nodes[i].name, sizeof(nodes[i].name), "a node name without its NUL");
                check_str(nodes[i].model, sizeof(nodes[i].model), "a model without its NUL");
                check_str(nodes[i].domain, sizeof(nodes[i].domain), "a domain without its NUL");
                if (!nodes[i].name[0] || nodes[i].ngpus < 0 || nodes[i].ngpus > 64 ||
                    nodes[i].cpu_milli < 0 || nodes[i].mem_bytes < 0)
                    fail("a node out of range");
            }
        } else if (nodes) {
            fail("a refused node list returned rows");
        }
        free(nodes);
        break;
    }
    case 1:
    case 2: {
        struct sl_trace_task *t = NULL;
        rc = which == 1 ? sl_trace_load_pods(path, &t, &n, &err)
                        : sl_trace_load_jobs(path, &t, &n, &err);
        if (rc == 0)
            check_tasks(t, n);
        else if (t)
            fail("a refused task list returned rows");
        free(t);
        break;
    }
    case 3: {
        struct sl_trace_vc *vc = NULL;
        rc = sl_trace_load_vcs(path, &vc, &n, &err);
        if (rc == 0) {
            for (size_t i = 0; i < n; i++) {
                check_str(vc[i].name, sizeof(vc[i].name), "a vc name without its NUL");
                if (vc[i].nodes < 0)
                    fail("a negative vc size");
            }
        } else if (vc) {
            fail("a refused vc list returned rows");
        }
        free(vc);
        break;
    }
    default:
        rc = sl_trace_sniff(path);
        if (rc != 0 && rc != 'p' && rc != 'j' && rc != 'n' && rc >= 0)
            fail("the sniffer answered a format it does not list");
        rc = 0;
        break;
    }
    if (rc < 0 && rc != -ENOMEM) {
        /* "<file>:<line>: ..." or "<path>: ...": the file comes first */
        const char *base = strrchr(path, '/') + 1;
        size_t blen = strlen(base);
        check_str(err.text, sizeof(err.text), "an error text without its NUL");
        if (strncmp(err.text, base, blen) != 0 && strncmp(err.text, path, strlen(path)) != 0)
            fail("an error that does not start with the file's name");
    }
    close(fd);
    return 0;
}
