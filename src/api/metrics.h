/*
 * metrics.h - GET /metrics: the Prometheus text exposition (format 0.0.4)
 * of the cluster, the jobs, the queues, the scheduler and this API.
 *
 * The request counters are kept here, under their own mutex, by the HTTP
 * thread and the threads that complete suspended requests; the engine's
 * figures come from sl_engine_metrics (a short copy under its lock). All
 * functions are thread-safe.
 */
#ifndef SL_API_METRICS_H
#define SL_API_METRICS_H

#include <stdint.h>

#include "../engine/engine.h"
#include "../util/buf.h"

#define SL_METRICS_CTYPE "text/plain; version=0.0.4; charset=utf-8"

struct sl_api_metrics;

/* Counters for a route table of 'n' rows whose path patterns are
 * patterns[0..n-1] (borrowed: they must outlive the counters; rows may
 * share a pattern). 'version' (borrowed) goes into sluice_build_info.
 * Returns NULL and sets errno. */
struct sl_api_metrics *sl_api_metrics_create(const char *const *patterns, int n,
                                             const char *version);
void sl_api_metrics_destroy(struct sl_api_metrics *m); /* NULL-safe */

/* Count one answered request: route row 'row' (-1 = no route matched:
 * labelled "other"), its method as sent, the status answered and how long
 * it took in nanoseconds. Never fails; a label set past the table's room
 * is counted under route, method and code "other". */
void sl_api_metrics_count(struct sl_api_metrics *m, int row, const char *method,
                          int status, int64_t ns);

/* Append the whole exposition to 'b', with 'attached' interactive
 * sessions that have a client (the relay's count). Returns 0, or -ENOMEM
 * (the engine's snapshot or 'b' ran out of memory; 'b' is then
 * incomplete). */
int sl_api_metrics_render(struct sl_api_metrics *m, struct sl_engine *e, int attached,
                          struct sl_buf *b);

#endif
