/*
 * timed.c - timed mode of `sluice sim` (placeholder while fill mode lands).
 */
#include <errno.h>

#include "simint.h"

int sl_sim_timed(const struct sl_sim_opts *o, struct sl_buf *out, struct sl_error *err)
{
    (void)o;
    (void)out;
    return sl_errorf(err, -ENOTSUP, "timed mode is not built yet");
}
