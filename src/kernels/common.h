/*
 * kernels/common.h - what every kernel header needs: the STRIX_HD marker and the math library.
 *
 * The kernel headers hold the math of each primitive once, as static inline per-element / per-row
 * functions. The CPU backend loops over lanes and calls them; GPU backends (nvcc/hipcc) launch one
 * thread per lane over the same functions. They never allocate, never use OpenMP, and sum in the
 * documented order (ascending, from 0.0f), so every backend gets the same expression order.
 */
#ifndef STRIX_KERNELS_COMMON_H
#define STRIX_KERNELS_COMMON_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define STRIX_HD __host__ __device__
#else
#define STRIX_HD
#endif

/* -inf, spelled so that device compilers accept it. */
#define STRIX_NEG_INF (-INFINITY)

#endif
