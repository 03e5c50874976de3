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
    struct sl_gpu_info *gpus = NULL;

    if (node->ngpus < 0 || node->ngpus > SL_EXEC_MAX_GPUS || (node->ngpus && !node->gpus))
        return -EINVAL;
    if (inv->n == inv->cap) {
        int cap = inv->cap ? inv->cap * 2 : 4;
        struct sl_node_info *grown = realloc(inv->nodes, (size_t)cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        inv->nodes = grown;
        inv->cap = cap;
    }
    if (node->ngpus && !(gpus = malloc((size_t)node->ngpus * sizeof(*gpus))))
        return -ENOMEM;
    if (gpus)
        memcpy(gpus, node->gpus, (size_t)node->ngpus * sizeof(*gpus));
    inv->nodes[inv->n] = *node;
    inv->nodes[inv->n++].gpus = gpus;
    return 0;
}

int sl_inventory_host(struct sl_inventory *inv, const char *fake_gpus, struct sl_error *err)
{
    struct sl_host_info *h = malloc(sizeof(*h));
    struct sl_node_info n = {0};
    int rc;

    if (!h)
        return sl_errorf(err, -ENOMEM, "out of memory");
    if ((rc = sl_host_discover(fake_gpus, h, err)) < 0)
        goto out;
    sl_strlcpy(n.name, h->hostname, sizeof(n.name));
    n.cpu_milli = h->cpu_milli;
    n.mem_bytes = h->mem_bytes;
    n.ngpus = h->ngpus;
    n.gpus = h->gpus;
    sl_strlcpy(n.gpu_source, h->gpu_source, sizeof(n.gpu_source));
    n.state = SL_NODE_UP;
    n.devices_here = true;
    if ((rc = sl_inventory_add(inv, &n)) < 0)
        sl_errorf(err, rc, "out of memory");
out:
    free(h);
    return rc;
}

int sl_inventory_copy(struct sl_inventory *dst, const struct sl_inventory *src)
{
    *dst = (struct sl_inventory){NULL, 0, 0};
    for (int i = 0; i < src->n; i++) {
        int rc = sl_inventory_add(dst, &src->nodes[i]);
        if (rc < 0) {
            sl_inventory_fini(dst);
            return rc;
        }
    }
    return 0;
}

void sl_inventory_fini(struct sl_inventory *inv)
{
    if (!inv)
        return;
    for (int i = 0; i < inv->n; i++)
        free(inv->nodes[i].gpus);
    free(inv->nodes);
    *inv = (struct sl_inventory){NULL, 0, 0};
}
