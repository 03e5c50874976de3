/*
 * rng.h - a seeded pseudo-random generator (xoshiro256**, seeded through
 * splitmix64): the same seed gives the same sequence on every machine.
 * Not thread-safe: one generator per user.
 */
#ifndef SL_RNG_H
#define SL_RNG_H

#include <stdint.h>

struct sl_rng {
    uint64_t s[4];
};

void sl_rng_seed(struct sl_rng *r, uint64_t seed);
uint64_t sl_rng_next(struct sl_rng *r);
/* Uniform in [0, n); 0 when n <= 1. Unbiased. */
uint64_t sl_rng_below(struct sl_rng *r, uint64_t n);

#endif
