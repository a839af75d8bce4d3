/*
 * gguf_quant.c - ggml's tensor types for strix/gguf.h: their names, the block sizes of the types
 * strix reads, dequantization to float32 and dot products in block format. The block layouts and
 * the formulas are those of kernels/quant.h (ggml's ggml-common.h blocks; values as ggml's
 * dequantize_row_* and gguf-py's gguf/quants.py compute them, bit for bit), which the backends'
 * strix_matmul_blocks calls too, so each formula exists once. Does not quantize, and reads no
 * file (gguf.c does).
 */
#include <string.h>

#include "kernels/quant.h"
#include "strix/gguf.h"

/* strix_block_type (the backend's numbers) and strix_gguf_type are both ggml's enum ggml_type. */
#define SAME_TYPE(t)                                                                           \
    _Static_assert((int)STRIX_GGUF_##t == (int)STRIX_BLOCK_##t, "ggml type " #t)
SAME_TYPE(F32);
SAME_TYPE(F16);
SAME_TYPE(Q4_0);
SAME_TYPE(Q4_1);
SAME_TYPE(Q5_0);
SAME_TYPE(Q5_1);
SAME_TYPE(Q8_0);
SAME_TYPE(Q4_K);
SAME_TYPE(Q6_K);
SAME_TYPE(BF16);
#undef SAME_TYPE

// ---- type table --------------------------------------------------------------------------------

const char *strix_gguf_type_name(int t) { return strix_quant_type_name(t); }

bool strix_gguf_type_block(strix_gguf_type t, size_t *block_values, size_t *block_bytes) {
    return strix_quant_block((int)t, block_values, block_bytes);
}

// ---- rows --------------------------------------------------------------------------------------

strix_status strix_gguf_dequantize(strix_gguf_type t, const void *src, size_t n, float *dst) {
    size_t bv, bb;
    if (!strix_gguf_type_block(t, &bv, &bb)) {
        const char *name = strix_gguf_type_name((int)t);
        return strix_error(STRIX_ERR_UNSUPPORTED, "gguf: cannot dequantize %s (type %d)",
                           name ? name : "an unknown type", (int)t);
    }
    if (n % bv != 0)
        return strix_error(STRIX_ERR_ARG, "gguf: %zu values of %s are not whole blocks of %zu", n,
                           strix_gguf_type_name((int)t), bv);
    strix_quant_decode_row((int)t, src, n, dst);
    return STRIX_OK;
}

strix_status strix_gguf_tensor_to_f32(const strix_gguf_tensor *t, float *dst, size_t cap) {
    if (cap < t->numel)
        return strix_error(STRIX_ERR_ARG, "gguf: tensor '%s' has %zu values, the buffer room for "
                           "%zu", t->name, t->numel, cap);
    return strix_gguf_dequantize(t->type, t->data, t->numel, dst);
}

// ---- dot products ------------------------------------------------------------------------------

float strix_gguf_dot_f32(const float *w, const float *x, size_t n) {
    float acc[STRIX_QUANT_LANES] = {0};
    strix_quant_lanes_add(acc, w, x, n, 0);
    return strix_quant_lanes_fold(acc);
}

float strix_gguf_dot(strix_gguf_type t, const void *row, const float *x, size_t n) {
    size_t bv = 1, bb = 0;
    STRIX_ASSERT(strix_gguf_type_block(t, &bv, &bb), "gguf_dot: type %d is not read", (int)t);
    STRIX_ASSERT(n % bv == 0, "gguf_dot: %zu values are not whole blocks of %zu", n, bv);
    return strix_quant_dot((int)t, row, x, n);
}

size_t strix_gguf_row_bytes(strix_gguf_type t, size_t n) {
    size_t bv = 1, bb = 0;
    STRIX_ASSERT(strix_gguf_type_block(t, &bv, &bb), "gguf_row_bytes: type %d is not read",
                 (int)t);
    STRIX_ASSERT(n % bv == 0, "gguf_row_bytes: %zu values are not whole blocks of %zu", n, bv);
    return n / bv * bb;
}

void strix_gguf_matvec(strix_gguf_type t, const void *w, size_t rows, size_t cols,
                       const float *x, float *y) {
    size_t stride = strix_gguf_row_bytes(t, cols);
    for (size_t r = 0; r < rows; r++)
        y[r] = strix_gguf_dot(t, (const unsigned char *)w + r * stride, x, cols);
}
