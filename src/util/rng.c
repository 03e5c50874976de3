/*
 * rng.c - xoshiro256** (Blackman and Vigna), seeded by splitmix64. See rng.h.
 */
#include "rng.h"

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void sl_rng_seed(struct sl_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t sl_rng_next(struct sl_rng *r)
{
    uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

uint64_t sl_rng_below(struct sl_rng *r, uint64_t n)
{
    /* Reject the low values that would bias the modulo. */
    uint64_t floor, x;

    if (n <= 1)
        return 0;
    floor = -n % n;
    do
        x = sl_rng_next(r);
    while (x < floor);
    return x % n;
}
