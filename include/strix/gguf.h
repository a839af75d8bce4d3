/*
 * strix/gguf.h - GGUF files (llama.cpp's model format): the header, metadata and tensor infos of
 * versions 2 and 3, the tensors' bytes in place in the memory-mapped file, and their
 * dequantization to float32 exactly as ggml does it. Depends on core only.
 *
 * The format (ggml, docs/gguf.md), all little-endian: the magic "GGUF", u32 version, u64 tensor
 * count, u64 metadata count; the metadata key/value pairs (key: a string; u32 value type; the
 * value); the tensor infos (name: a string; u32 n_dims; u64 ne[n_dims]; u32 ggml type; u64 offset
 * into the data section); padding up to `general.alignment` (a u32, a nonzero power of two,
 * default 32); the data section. A string is a u64 byte length and that many bytes (no NUL). An
 * array is a u32 element type, a u64 count and the elements. Version 1 (32-bit counts) and
 * big-endian files are refused, and so are arrays of arrays.
 *
 * Tensor types: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K and Q6_K are read (block layouts
 * of ggml's ggml-common.h; values as gguf-py's gguf/quants.py dequantize them, bit for bit). Other
 * types ggml knows (Q2_K, IQ4_XS, ...) are refused by name, unknown numbers by number.
 *
 * Not here: writing GGUF, llama.cpp's tensor names or its Q/K row permutation (the model code maps
 * them), the tokenizer (it reads tokenizer.ggml.* through the metadata calls below).
 */
#ifndef STRIX_GGUF_H
#define STRIX_GGUF_H

#include "strix/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ggml tensor types (ggml.h's enum ggml_type numbering) that strix reads. */
typedef enum strix_gguf_type {
    STRIX_GGUF_F32 = 0,
    STRIX_GGUF_F16 = 1,   /* IEEE binary16 */
    STRIX_GGUF_Q4_0 = 2,  /* 32 values: f16 d, 16 bytes of 4-bit q; x = d·(q - 8) */
    STRIX_GGUF_Q4_1 = 3,  /* 32 values: f16 d, f16 m, 16 bytes of 4-bit q; x = d·q + m */
    STRIX_GGUF_Q5_0 = 6,  /* 32 values: f16 d, u32 high bits, 16 bytes; x = d·(q - 16) */
    STRIX_GGUF_Q5_1 = 7,  /* 32 values: f16 d, f16 m, u32 high bits, 16 bytes; x = d·q + m */
    STRIX_GGUF_Q8_0 = 8,  /* 32 values: f16 d, 32 int8 q; x = q·d */
    STRIX_GGUF_Q4_K = 12, /* 256 values: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 q */
    STRIX_GGUF_Q6_K = 14, /* 256 values: 128 low, 64 high, 16 int8 scales, f16 d */
    STRIX_GGUF_BF16 = 30  /* bfloat16: the upper 16 bits of a float32 */
} strix_gguf_type;

/* Metadata value types (gguf_type). */
typedef enum strix_gguf_vtype {
    STRIX_GGUF_UINT8 = 0,
    STRIX_GGUF_INT8,
    STRIX_GGUF_UINT16,
    STRIX_GGUF_INT16,
    STRIX_GGUF_UINT32,
    STRIX_GGUF_INT32,
    STRIX_GGUF_FLOAT32,
    STRIX_GGUF_BOOL, /* one byte; nonzero is true */
    STRIX_GGUF_STRING,
    STRIX_GGUF_ARRAY,
    STRIX_GGUF_UINT64,
    STRIX_GGUF_INT64,
    STRIX_GGUF_FLOAT64
} strix_gguf_vtype;

/* An opened, validated GGUF file (its bytes mapped read-only or held in memory). */
typedef struct strix_gguf strix_gguf;

/* One tensor of a file. */
typedef struct strix_gguf_tensor {
    const char *name;    /* NUL-terminated copy */
    int ndim;            /* 1..4 */
    int64_t ne[4];       /* ggml order: ne[0] is the fastest-varying (a row); unused dims 1 */
    strix_gguf_type type;
    const void *data;    /* its bytes in the mapped file; the address is a multiple of
                          * min(alignment, 16), so F32 data of a file aligned to 4 or more
                          * may be read in place as floats */
    size_t nbytes;       /* numel / block values · block bytes */
    size_t numel;        /* Π ne */
} strix_gguf_tensor;

// ---- opening -----------------------------------------------------------------------------------

/* How strix_gguf_open_ex reads a file. A zeroed struct (or NULL) gives the defaults. */
typedef struct strix_gguf_options {
    bool no_mmap; /* read the file into memory instead of mapping it */
} strix_gguf_options;

/* Opens and validates the GGUF file at `path`, mapping it read-only (falling back to reading it
 * when it cannot be mapped). Tensor data stays in the map until strix_gguf_free; the file must not
 * be rewritten in place meanwhile. Every count, length, offset and size is checked against the
 * bytes there are before it is used, so no allocation exceeds a small multiple of the file size.
 * STRIX_ERR_IO: cannot open or read, not a regular file. STRIX_ERR_ALLOC. STRIX_ERR_FORMAT (one
 * line naming the path and the problem): no "GGUF" magic, version other than 2 or 3 (or a
 * big-endian file), a count, string or array that runs past the end of the file, an unknown value
 * type, an array of arrays, a key or tensor name holding a NUL byte, duplicate keys or tensor
 * names, `general.alignment` not a u32 nonzero power of two, n_dims outside 1..4, a negative or
 * overflowing shape, a row (ne[0]) not a multiple of the type's block, an unknown tensor type, an
 * offset not a multiple of the alignment, data running past the end of the file, overlapping
 * tensors. STRIX_ERR_UNSUPPORTED: a tensor type ggml knows but strix does not read (named). */
STRIX_API strix_status strix_gguf_open_ex(const char *path, const strix_gguf_options *opt,
                                          strix_gguf **out);
/* strix_gguf_open_ex with the defaults (mapped). */
STRIX_API strix_status strix_gguf_open(const char *path, strix_gguf **out);
/* The same checks on n bytes in memory, copied (`bytes` may be freed afterwards); messages start
 * "gguf:" instead of the path. Same statuses. */
STRIX_API strix_status strix_gguf_parse(const void *bytes, size_t n, strix_gguf **out);
/* Frees g (unmaps the file). NULL is a no-op. */
STRIX_API void strix_gguf_free(strix_gguf *g);

/* The file's GGUF version (2 or 3). */
STRIX_API uint32_t strix_gguf_version(const strix_gguf *g);
/* Whether g reads a memory-mapped file (false for parse, no_mmap and the read fallback). */
STRIX_API bool strix_gguf_is_mapped(const strix_gguf *g);
/* The data alignment in bytes (general.alignment, or 32) and the data section's offset in the file
 * (a multiple of the alignment). */
STRIX_API size_t strix_gguf_alignment(const strix_gguf *g);
STRIX_API size_t strix_gguf_data_offset(const strix_gguf *g);

// ---- tensors -----------------------------------------------------------------------------------

/* Tensors in the order of the file's tensor infos; i in [0, count) (asserted). */
STRIX_API size_t strix_gguf_tensor_count(const strix_gguf *g);
STRIX_API const strix_gguf_tensor *strix_gguf_tensor_at(const strix_gguf *g, size_t i);
/* The tensor called `name`, or NULL if none (binary search over a sorted name index). */
STRIX_API const strix_gguf_tensor *strix_gguf_find_tensor(const strix_gguf *g, const char *name);

// ---- metadata ----------------------------------------------------------------------------------

/* Metadata pairs in the order of the file; i in [0, count) (asserted). The key is a NUL-terminated
 * copy. Lookups by key below are binary searches over a sorted key index. */
STRIX_API size_t strix_gguf_kv_count(const strix_gguf *g);
STRIX_API const char *strix_gguf_kv_key(const strix_gguf *g, size_t i);
STRIX_API bool strix_gguf_has_key(const strix_gguf *g, const char *key);
/* The value type of `key` into *type; false when absent. */
STRIX_API bool strix_gguf_get_type(const strix_gguf *g, const char *key, strix_gguf_vtype *type);
/* Any integer type (and bool: 0 or 1) as int64; false when absent or not an integer (or a UINT64
 * over INT64_MAX). */
STRIX_API bool strix_gguf_get_int(const strix_gguf *g, const char *key, int64_t *out);
/* FLOAT32/FLOAT64 (exactly) and integers (nearest double; not bools) as double; false when absent
 * or another type. */
STRIX_API bool strix_gguf_get_float(const strix_gguf *g, const char *key, double *out);
/* A STRING value: pointer into the file (NOT NUL-terminated, UTF-8 as written, unchecked) and its
 * length in bytes into *len (len may be NULL); NULL when absent or another type. */
STRIX_API const char *strix_gguf_get_string(const strix_gguf *g, const char *key, size_t *len);
/* An ARRAY: its element type and count (either pointer may be NULL); false when absent or not an
 * array. */
STRIX_API bool strix_gguf_get_array(const strix_gguf *g, const char *key, strix_gguf_vtype *elem,
                                    size_t *count);
/* Element i of a STRING array (pointer into the file, not NUL-terminated; its length into *len,
 * which may be NULL), in O(1) (the elements are indexed at open); NULL when not a string array or
 * i out of range. */
STRIX_API const char *strix_gguf_array_string(const strix_gguf *g, const char *key, size_t i,
                                              size_t *len);
/* Element i of an integer (or bool) array as int64; false when absent, not such an array, i out
 * of range, or a UINT64 over INT64_MAX. */
STRIX_API bool strix_gguf_array_int(const strix_gguf *g, const char *key, size_t i, int64_t *out);
/* Element i of a numeric array (floats exactly, integers to the nearest double; not bools) as
 * double; false when absent, not numeric, or i out of range. */
STRIX_API bool strix_gguf_array_float(const strix_gguf *g, const char *key, size_t i, double *out);
/* The elements of a numeric (not string) array as they lie in the file: count values of the
 * element type, little-endian, possibly unaligned (read them with memcpy); NULL when absent, not
 * an array, or a string array. *elem and *count as strix_gguf_get_array (may be NULL). */
STRIX_API const void *strix_gguf_array_data(const strix_gguf *g, const char *key,
                                            strix_gguf_vtype *elem, size_t *count);

/* "UINT8", "STRING", ...; NULL for a number that is not a value type. */
STRIX_API const char *strix_gguf_vtype_name(int v);

// ---- types and dequantization ------------------------------------------------------------------

/* Values per block and bytes per block of a type strix reads (1 and 4 for F32; 32 and 20 for Q4_1;
 * 256 and 144 for Q4_K, ...); false (outputs untouched) for any other type. Either pointer may be
 * NULL. */
STRIX_API bool strix_gguf_type_block(strix_gguf_type t, size_t *block_values, size_t *block_bytes);
/* ggml's name of tensor type t ("Q4_1", "IQ4_XS", ...), for every type gguf-py 0.19 knows,
 * supported or not; NULL for a number ggml does not (or no longer) use. */
STRIX_API const char *strix_gguf_type_name(int t);

/* Dequantizes n values of type t (n a multiple of the block size; src holds n / block values
 * blocks, any alignment) into dst[0..n) (=), exactly as ggml and gguf-py: the f16 scales converted
 * exactly, then per value the float32 products and sums of the type's formula above (Q4_K:
 * (d·sc)·q - (dmin·m); Q6_K: (d·sc)·q), no fused multiply-add. STRIX_ERR_ARG for an n that is not a
 * multiple of the block size (nothing written), STRIX_ERR_UNSUPPORTED for a type strix does not
 * read. */
STRIX_API strix_status strix_gguf_dequantize(strix_gguf_type t, const void *src, size_t n,
                                             float *dst);
/* The whole tensor t as float32 into dst[0..cap) (=: numel values, ggml order, ne[0] fastest).
 * STRIX_ERR_ARG when cap < numel (nothing written). */
STRIX_API strix_status strix_gguf_tensor_to_f32(const strix_gguf_tensor *t, float *dst,
                                                size_t cap);

// ---- products in block format -------------------------------------------------------------------

/* The accumulation order of the dot products below, the same for every type: 16 partial sums
 * from 0.0f, lane k += w[i]·x[i] (the float32 product rounded, then added) for i ≡ k (mod 16) in
 * ascending i; then the lanes folded pairwise, for s = 8, 4, 2, 1: lane[k] += lane[k + s] for
 * k < s; the result is lane[0]. So strix_gguf_dot of a row equals strix_gguf_dot_f32 of that row
 * dequantized by strix_gguf_dequantize, bit for bit. */

/* Σ w[i]·x[i] of n float32 weights and n float32 x, in the order above. */
STRIX_API float strix_gguf_dot_f32(const float *w, const float *x, size_t n);
/* Σ w[i]·x[i] where w is n values of type t in block format at `row` (any alignment): each block
 * (or run of up to 256 values of F32/F16/BF16) dequantized exactly as strix_gguf_dequantize, then
 * accumulated in the order above (kernels/quant.h's strix_quant_dot, whose bits
 * strix_matmul_blocks gives on every backend). Asserts that t is a type strix reads and n a
 * multiple of its block size. */
STRIX_API float strix_gguf_dot(strix_gguf_type t, const void *row, const float *x, size_t n);
/* Bytes of a row of n values of type t (n / block values · block bytes); asserts as
 * strix_gguf_dot. */
STRIX_API size_t strix_gguf_row_bytes(strix_gguf_type t, size_t n);
/* y[r] = strix_gguf_dot(t, row r of w, x, cols) for r in [0, rows) (=): w is rows rows of cols
 * values of type t, each strix_gguf_row_bytes(t, cols) bytes, one after the other (a ggml weight of
 * ne = {cols, rows}). One thread; rows are independent, so a caller may split them. */
STRIX_API void strix_gguf_matvec(strix_gguf_type t, const void *w, size_t rows, size_t cols,
                                 const float *x, float *y);

#ifdef __cplusplus
}
#endif

#endif
