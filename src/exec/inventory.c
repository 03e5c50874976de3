/*
 * inventory.c - node inventories (inventory.h): this host as a node, and
 * the list operations executors and the engine share.
 */
#include "inventory.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *sl_node_state_name(enum sl_node_state s)
{
    switch (s) {
    case SL_NODE_UP:
        return "up";
    case SL_NODE_DRAINING:
        return "draining";
    case SL_NODE_DOWN:
        return "down";
    }
    return "unknown";
}

int sl_inventory_add(struct sl_inventory *inv, const struct sl_node_info *node)
{
    if (inv->n == inv->cap) {
        int cap = inv->cap ? inv->cap * 2 : 4;
        struct sl_node_info *grown = realloc(inv->nodes, (size_t)cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        inv->nodes = grown;
        inv->cap = cap;
    }
    inv->nodes[inv->n++] = *node;
    return 0;
}

int sl_inventory_host(struct sl_inventory *inv, const char *fake_gpus, struct sl_error *err)
{
    struct sl_host_info h;
    struct sl_node_info *n = calloc(1, sizeof(*n));
    int rc;

    if (!n)
        return sl_errorf(err, -ENOMEM, "out of memory");
    if ((rc = sl_host_discover(fake_gpus, &h, err)) < 0)
        goto out;
    sl_strlcpy(n->name, h.hostname, sizeof(n->name));
    n->cpu_milli = h.cpu_milli;
    n->mem_bytes = h.mem_bytes;
    n->ngpus = h.ngpus;
    memcpy(n->gpus, h.gpus, sizeof(h.gpus));
    sl_strlcpy(n->gpu_source, h.gpu_source, sizeof(n->gpu_source));
    n->state = SL_NODE_UP;
    n->devices_here = true;
    if ((rc = sl_inventory_add(inv, n)) < 0)
        sl_errorf(err, rc, "out of memory");
out:
    free(n);
    return rc;
}

int sl_inventory_copy(struct sl_inventory *dst, const struct sl_inventory *src)
{
    *dst = (struct sl_inventory){NULL, 0, 0};
    if (src->n == 0)
        return 0;
    if (!(dst->nodes = malloc((size_t)src->n * sizeof(*dst->nodes))))
        return -ENOMEM;
    memcpy(dst->nodes, src->nodes, (size_t)src->n * sizeof(*dst->nodes));
    dst->n = dst->cap = src->n;
    return 0;
}

void sl_inventory_fini(struct sl_inventory *inv)
{
    if (!inv)
        return;
    free(inv->nodes);
    *inv = (struct sl_inventory){NULL, 0, 0};
}
