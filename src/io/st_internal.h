/*
 * st_internal.h - what the safetensors reader, writer and sets share inside src/io: the dtype
 * names and sizes and the bit-exact half/bfloat16 conversions. Not installed, not public.
 */
#ifndef STRIX_IO_ST_INTERNAL_H
#define STRIX_IO_ST_INTERNAL_H

#include <stdint.h>

#include "kernels/quant.h" /* strix_half_to_float_bits */
#include "strix/safetensors.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "src/io assumes a little-endian host (safetensors stores little-endian data)"
#endif

#define ST_HEADER_MAX (100u * 1024u * 1024u) /* the reference implementation's limit */

/* Opens `path` read-only (non-blocking: a FIFO never blocks the open) if it is a regular file;
 * *fd and its size in bytes. STRIX_ERR_IO naming the path otherwise (nothing left open). */
strix_status st_open_regular(const char *path, int *fd, uint64_t *size);
/* Reads `size` bytes of fd into a malloc'ed buffer of size + 1 bytes (*buf; the caller frees it,
 * also on failure). STRIX_ERR_ALLOC, STRIX_ERR_IO naming the path. */
strix_status st_read_whole(int fd, const char *path, size_t size, unsigned char **buf);
#define ST_EXACT_INT_MAX 9007199254740992.0  /* 2^53: larger JSON numbers are not exact */

/* IEEE binary16 bits -> float32 bits, exact (subnormals normalised, inf/NaN payload kept):
 * kernels/quant.h's conversion, the one GGUF blocks use too. */
static inline uint32_t st_half_to_float_bits(uint16_t h) { return strix_half_to_float_bits(h); }

/* float32 bits -> binary16 bits, rounded to nearest, ties to even; overflow gives ±inf, a NaN
 * stays a (quiet) NaN. */
static inline uint16_t st_float_to_half_bits(uint32_t f) {
    uint32_t sign = (f >> 16) & 0x8000u;
    uint32_t exp = (f >> 23) & 0xffu, man = f & 0x7fffffu;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) { /* a half subnormal (or zero): units of 2^-24 */
        if (e < -10) return (uint16_t)sign;
        uint32_t m = man | 0x800000u;
        int shift = 14 - e;
        uint32_t half = m >> shift, rem = m & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++; /* a carry may reach inf */
    return (uint16_t)(sign | half);
}

/* float32 bits -> bfloat16 bits, rounded to nearest, ties to even; NaN stays a quiet NaN. */
static inline uint16_t st_float_to_bf16_bits(uint32_t f) {
    if ((f & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((f >> 16) | 0x40u);
    return (uint16_t)((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

#endif
