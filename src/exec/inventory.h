/*
 * inventory.h - the nodes an executor offers: their names, CPUs, memory,
 * GPUs (model, memory, UUID, device numbers), topology domain and state.
 *
 * The engine asks its executor for the inventory (sl_executor_nodes) and
 * schedules on exactly those nodes, in that order: node N of the
 * inventory is node N of the scheduler, and a node is only ever added at
 * the end. Nothing assumes that node 0 is this machine: a node whose GPUs
 * are this machine's devices says so (devices_here), and only then are
 * device rules and this machine's meters (NVML, RAPL) applied to it.
 *
 * The local and simulated executors offer this host (sl_inventory_host)
 * or a node list they are given (the engine reads --fake-nodes files); a
 * cluster executor (Slurm) fills the same structure from its cluster.
 *
 * Plain data; not thread-safe.
 */
#ifndef SL_INVENTORY_H
#define SL_INVENTORY_H

#include <stdbool.h>
#include <stdint.h>

#include "exec.h"

/* A node's state as its executor reports it. */
enum sl_node_state {
    SL_NODE_UP,                   /* takes new tasks */
    SL_NODE_DRAINING,             /* keeps its tasks, takes no new one */
    SL_NODE_DOWN,                 /* takes no new task; the executor reports
                                     its tasks lost when they are */
};

const char *sl_node_state_name(enum sl_node_state s); /* "up", ... */

struct sl_node_info {
    char name[64];
    char domain[64];              /* NVLink domain or rack; "" = none */
    int64_t cpu_milli;
    int64_t mem_bytes;
    int ngpus;                    /* 0..SL_EXEC_MAX_GPUS */
    struct sl_gpu_info *gpus;     /* ngpus entries, index i = the
                                     placement's GPU index i on this node;
                                     an inventory's nodes own theirs (a
                                     node of thousands is kept small: the
                                     daemon forks tasks, and a fork copies
                                     the page tables of all it holds) */
    char gpu_source[16];          /* "nvml", "fake" or "none" */
    enum sl_node_state state;
    char reason[128];             /* why it is draining or down, as its
                                     executor says; "" = none */
    bool devices_here;            /* its GPUs are this machine's devices:
                                     a task given GPU i may be kept from
                                     every other, and this machine's
                                     meters (NVML, RAPL) measure it when
                                     its executor runs commands */
};

struct sl_inventory {
    struct sl_node_info *nodes;   /* owned */
    int n, cap;
};

/* This machine as one node: sl_host_discover (NVML, or the --fake-gpus
 * spec 'fake_gpus' when not NULL) and its hostname. 'devices_here' is
 * true. Returns 0, or -EINVAL / -ENOMEM with 'err' filled; on failure 'inv'
 * is unchanged. */
int sl_inventory_host(struct sl_inventory *inv, const char *fake_gpus, struct sl_error *err);

/* Append a copy of 'node' (its GPUs too). Returns 0, -EINVAL (ngpus out of
 * range) or -ENOMEM; then 'inv' is unchanged. */
int sl_inventory_add(struct sl_inventory *inv, const struct sl_node_info *node);

/* A deep copy of 'src' into 'dst' (uninitialised). Returns 0 or -ENOMEM
 * (then 'dst' holds nothing to free). */
int sl_inventory_copy(struct sl_inventory *dst, const struct sl_inventory *src);

/* Free the nodes and their GPUs; NULL-safe, leaves an empty inventory. */
void sl_inventory_fini(struct sl_inventory *inv);

#endif
