/*
 * rng.c - the global seed and the Gaussian draw of the SplitMix64 stream (core.h).
 */
#include <math.h>

#include "strix/core.h"

static uint64_t global_seed;

void strix_set_seed(uint64_t seed) { global_seed = seed; }
uint64_t strix_get_seed(void) { return global_seed; }

double strix_rng_normal(strix_rng *r) {
    double u1 = strix_rng_uniform(r);
    double u2 = strix_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}
