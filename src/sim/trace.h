/*
 * trace.h - loaders for the cluster traces `sluice sim` replays.
 *
 * Formats (see ../shared/traces/<name>/README.md for their origin):
 *   - openb node list (Alibaba GPU v2023): sn,cpu_milli,memory_mib,gpu,model
 *   - openb pod list: name,cpu_milli,memory_mib,num_gpu,gpu_milli
 *     [,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time]
 *   - job lists of the Philly and Helios subsets:
 *     u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status
 *   - virtual-cluster sizes: vc,node num
 * Columns are found by their header names, so column order does not matter
 * and extra columns are ignored; a missing required column is an error.
 *
 * Every file is untrusted input: at most SL_TRACE_MAX_BYTES, lines of at
 * most SL_TRACE_MAX_LINE bytes, SL_TRACE_MAX_ROWS rows; every value is
 * checked, and an error names the file, line and column and quotes the
 * value ("pods.csv:12: num_gpu: must be 0..64, got '65'"). Nothing is
 * returned on error. Thread-safe: no shared state.
 */
#ifndef SL_TRACE_H
#define SL_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "../util/util.h"

#define SL_TRACE_MAX_BYTES ((size_t)256 << 20)
#define SL_TRACE_MAX_LINE 65536
#define SL_TRACE_MAX_ROWS 10000000
#define SL_TRACE_NAME_MAX 63
#define SL_TRACE_SPEC_MAX 255

struct sl_trace_node {
    char name[SL_TRACE_NAME_MAX + 1];
    char model[48];               /* GPU model; "" on a CPU-only node */
    char domain[SL_TRACE_NAME_MAX + 1]; /* "" = none */
    int ngpus;                    /* 0..64 */
    int64_t cpu_milli;
    int64_t mem_bytes;
};

struct sl_trace_task {            /* one pod, or one job of a job list */
    char name[SL_TRACE_NAME_MAX + 1];
    char user[SL_TRACE_NAME_MAX + 1]; /* "" when the trace has none */
    char gpu_spec[SL_TRACE_SPEC_MAX + 1]; /* allowed models, '|'-separated;
                                             "" = any */
    char qos[16];                 /* openb QoS (LS, BE, ...); "" if none */
    int tasks;                    /* gang size, >= 1 */
    int num_gpu;                  /* GPUs per task: 0..64 */
    int gpu_milli;                /* per GPU: 1..1000 when num_gpu > 0 */
    int64_t cpu_milli;            /* per task */
    int64_t mem_bytes;            /* per task */
    int64_t submit_ms;            /* from trace start; -1 = not in trace */
    int64_t duration_ms;          /* run time; -1 = not in trace */
};

/* Load a node list. On success *out is a new array of *n nodes (free()). */
int sl_trace_load_nodes(const char *path, struct sl_trace_node **out, size_t *n,
                        struct sl_error *err);

/* Load an openb pod list (11- or 5-column form). Times: creation_time is
 * the submit time; the duration is deletion - scheduled (deletion -
 * creation for a pod never scheduled). */
int sl_trace_load_pods(const char *path, struct sl_trace_task **out, size_t *n,
                       struct sl_error *err);

/* Load a Philly/Helios job list: submit = running sum of 'interval' (s),
 * duration = run_time (s), tasks = node_num, GPUs per task =
 * ceil(gpu_num / node_num), CPUs per task = ceil(cpu_num / node_num),
 * user = "u<user>"; a job's name is "job-<u_id>". */
int sl_trace_load_jobs(const char *path, struct sl_trace_task **out, size_t *n,
                       struct sl_error *err);

struct sl_trace_vc {
    char name[SL_TRACE_NAME_MAX + 1];
    int nodes;
};
/* Load a "vc,node num" file. */
int sl_trace_load_vcs(const char *path, struct sl_trace_vc **out, size_t *n,
                      struct sl_error *err);

/* Which of the three formats a header line is: 'p' pods, 'j' jobs,
 * 'n' nodes, 0 none, or -errno when 'path' cannot be read. Reads only the
 * first line. */
int sl_trace_sniff(const char *path);

#endif
