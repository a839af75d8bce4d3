/*
 * strix/safetensors.h - safetensors files: reading (in memory, or memory-mapped), the sharded
 * layout of a model.safetensors.index.json, writing, and atomic file writes. Depends on core and
 * tensor only; models, state dicts and checkpoints are built on top of it.
 *
 * The format (huggingface/safetensors, docs "Format"): an 8-byte little-endian unsigned header
 * length N, N bytes of UTF-8 JSON mapping each tensor name to {"dtype", "shape", "data_offsets":
 * [begin, end]} (byte offsets into the data section, which follows the header) plus an optional
 * "__metadata__" object of string to string, then the data section, which the tensors cover
 * exactly, without holes or overlaps. Values are little-endian, row-major. The header may end in
 * spaces (the writer pads it so the data starts 8-byte aligned).
 *
 * dtypes: F32, F16, BF16, I64, I32 and U8 are read and written; any other dtype (F64, I16, I8,
 * U16, BOOL, F8_*, ...) is refused with STRIX_ERR_FORMAT naming it. Each tensor shows its file
 * dtype, its raw bytes and a float32 view. Conversion to float32: F16 and BF16 exactly (every
 * half and bfloat16 value, subnormals, ±inf and NaN payloads included, is a float32); U8 exactly;
 * I32 and I64 exactly up to 2^24 in magnitude and to the nearest float (ties to even) beyond.
 *
 * Rank: at most 4 dims (STRIX_MAX_DIMS); a 0-dim tensor holds one value. Assumes a little-endian
 * host. Not here: GGUF, writing sharded sets, dtypes other than the six above.
 */
#ifndef STRIX_SAFETENSORS_H
#define STRIX_SAFETENSORS_H

#include "strix/core.h"
#include "strix/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The longest path (with its terminating NUL) strix writes or stores. */
#define STRIX_PATH_MAX 4096

// ---- dtypes ------------------------------------------------------------------------------------

/* A tensor's dtype in the file (append-only; 0 = F32, the default of a zeroed strix_st_tensor). */
typedef enum strix_st_dtype {
    STRIX_ST_F32 = 0,
    STRIX_ST_I64 = 1,
    STRIX_ST_F16 = 2,   /* IEEE 754 binary16 */
    STRIX_ST_BF16 = 3,  /* bfloat16: the upper 16 bits of a float32 */
    STRIX_ST_I32 = 4,
    STRIX_ST_U8 = 5,
    STRIX_ST_DTYPE_COUNT
} strix_st_dtype;

/* The dtype's name in a safetensors header ("F32", "BF16", ...); "?" for an unknown value. */
STRIX_API const char *strix_st_dtype_name(strix_st_dtype d);
/* Bytes per element (0 for an unknown value). */
STRIX_API size_t strix_st_dtype_size(strix_st_dtype d);

/* n values of dtype d at src (little-endian, any alignment) as float32 into dst[0..n) (=), with
 * the conversions of the top of this file. Never fails for a known dtype; asserts otherwise. */
STRIX_API void strix_st_convert_to_f32(strix_st_dtype d, const void *src, int64_t n, float *dst);

// ---- tensors -----------------------------------------------------------------------------------

/* One tensor of a file.
 * Reading: name, ndim, shape (unused dims 1), dtype and raw (its bytes in the file, little-endian,
 *   not necessarily aligned; numel·itemsize of them) are always set; data is its values as float32
 *   (numel floats) unless the file was opened with .lazy, where data is set only for F32 tensors
 *   that lie 4-byte aligned in the file (read in place) and is NULL otherwise: convert with
 *   strix_safetensors_to_f32.
 * Writing: only name, ndim, shape and data (float32) are read, so a struct filled field by field
 *   needs nothing else; the file dtypes and raw bytes are arguments of the writers. */
typedef struct strix_st_tensor {
    const char *name;
    int ndim;                       /* 0..STRIX_MAX_DIMS */
    int64_t shape[STRIX_MAX_DIMS];
    const float *data;
    strix_st_dtype dtype;
    const void *raw;
} strix_st_tensor;

/* Π shape (1 for ndim 0). */
STRIX_API int64_t strix_st_numel(const strix_st_tensor *t);

/* One __metadata__ entry. */
typedef struct strix_st_meta {
    const char *key;
    const char *value;
} strix_st_meta;

// ---- reading -----------------------------------------------------------------------------------

/* A parsed, validated safetensors file: its bytes held in memory or mapped read-only. */
typedef struct strix_safetensors strix_safetensors;

/* How strix_safetensors_read_ex reads a file. A zeroed struct (or NULL) gives the defaults. */
typedef struct strix_st_read_options {
    bool no_mmap;  /* read the file into memory instead of mapping it */
    bool lazy;     /* do not convert to float32 up front (see strix_st_tensor.data) */
} strix_st_read_options;

/* Reads and validates the file at `path`, mapping it read-only (mmap) and falling back to a plain
 * read when it cannot be mapped (an empty file, a file system without mmap). The map lives until
 * strix_safetensors_free; the file must not be truncated or rewritten in place meanwhile (strix's
 * own writer replaces files by rename, which is safe). Only regular files are read.
 * STRIX_ERR_IO when it cannot be opened or read; STRIX_ERR_ALLOC; STRIX_ERR_FORMAT (message names
 * the path and the problem) for: a file shorter than 8 bytes, a header length past the end or over
 * 100 MB, a header that is not a JSON object or has bytes after it, malformed entries, a dtype
 * other than the six above, a rank over 4, duplicate names, offsets past the end of the data, a
 * size other than numel·itemsize, overlapping tensors, holes or trailing bytes in the data section,
 * non-string or duplicate metadata. */
STRIX_API strix_status strix_safetensors_read_ex(const char *path,
                                                 const strix_st_read_options *opt,
                                                 strix_safetensors **out);

/* strix_safetensors_read_ex with the defaults: mapped, every tensor's data as float32. */
STRIX_API strix_status strix_safetensors_read(const char *path, strix_safetensors **out);

/* The same checks on `n` bytes in memory (copied; `bytes` may be freed afterwards); every tensor's
 * data as float32. STRIX_ERR_FORMAT, STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_safetensors_parse(const void *bytes, size_t n,
                                               strix_safetensors **out);

/* Whether st reads a memory-mapped file (false for parse, no_mmap and the read fallback). */
STRIX_API bool strix_safetensors_is_mapped(const strix_safetensors *st);

/* Tensors, in ascending order of their data offsets. i in [0, count). */
STRIX_API int strix_safetensors_count(const strix_safetensors *st);
STRIX_API const strix_st_tensor *strix_safetensors_at(const strix_safetensors *st, int i);
/* The tensor called `name`, or NULL (binary search over a sorted name index). */
STRIX_API const strix_st_tensor *strix_safetensors_find(const strix_safetensors *st,
                                                        const char *name);
/* Metadata value of `key`, or NULL. */
STRIX_API const char *strix_safetensors_meta(const strix_safetensors *st, const char *key);
/* The __metadata__ entries in the order of the file; i in [0, meta_count). */
STRIX_API int strix_safetensors_meta_count(const strix_safetensors *st);
STRIX_API const strix_st_meta *strix_safetensors_meta_at(const strix_safetensors *st, int i);

/* The dtype tensor t (a pointer from strix_safetensors_at/find of st) has in the file; the same as
 * t->dtype, kept for callers of the first API. */
STRIX_API strix_st_dtype strix_safetensors_dtype(const strix_safetensors *st,
                                                 const strix_st_tensor *t);

/* Tensor t of st as float32 into dst[0..cap) (=): numel values (strix_st_convert_to_f32 of its
 * raw bytes). The way to read a lazily opened file one tensor at a time into the caller's buffer.
 * STRIX_ERR_ARG when cap < numel (nothing written). */
STRIX_API strix_status strix_safetensors_to_f32(const strix_safetensors *st,
                                                const strix_st_tensor *t, float *dst,
                                                int64_t cap);

/* Frees st and its tensors (unmaps the file). NULL is a no-op. */
STRIX_API void strix_safetensors_free(strix_safetensors *st);

// ---- sharded sets ------------------------------------------------------------------------------

/* The sharded layout of transformers' checkpoints: an index file (model.safetensors.index.json)
 * {"metadata": {...}, "weight_map": {"<tensor name>": "<shard file name>", ...}} next to the
 * shard files, each a safetensors file. Opened as one set, looked up by name across the shards. */
typedef struct strix_st_set strix_st_set;

/* Reads the index at `index_path` and every shard it names (relative to the index's directory,
 * each once, with `opt` as in strix_safetensors_read_ex), and checks that the index and the shards
 * agree. STRIX_ERR_IO when the index or a shard cannot be read (the message names the shard);
 * STRIX_ERR_FORMAT for: an index that is not a JSON object, no "weight_map" object, a file name
 * that is not a string or not a plain relative path (empty, absolute, with a ".." part), a name
 * listed twice, a shard with a bad safetensors layer, a tensor held by two shards, a name mapped
 * to a shard that does not hold it, a shard tensor the index does not list; STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_st_set_open(const char *index_path,
                                         const strix_st_read_options *opt, strix_st_set **out);

/* Tensors across all shards, in ascending order of name. i in [0, count). */
STRIX_API int strix_st_set_count(const strix_st_set *set);
STRIX_API const strix_st_tensor *strix_st_set_at(const strix_st_set *set, int i);
/* The tensor called `name` and (if shard is not NULL) the shard holding it, or NULL. */
STRIX_API const strix_st_tensor *strix_st_set_find(const strix_st_set *set, const char *name,
                                                   const strix_safetensors **shard);
/* Shards in the order the index names them first; i in [0, shard_count). */
STRIX_API int strix_st_set_shard_count(const strix_st_set *set);
STRIX_API const strix_safetensors *strix_st_set_shard(const strix_st_set *set, int i);
/* The shard file name (as the index spells it) of shard i. */
STRIX_API const char *strix_st_set_shard_name(const strix_st_set *set, int i);
/* A value of the index's "metadata" object as text (a string as it is, any other JSON value as
 * compact JSON, e.g. "total_size" -> "123456"), or NULL. */
STRIX_API const char *strix_st_set_meta(const strix_st_set *set, const char *key);
/* Frees the set and its shards. NULL is a no-op. */
STRIX_API void strix_st_set_free(strix_st_set *set);

// ---- writing -----------------------------------------------------------------------------------

/* Writes tensors[0..n) (in this order, consecutive in the data section) as F32, bit for bit, and
 * meta[0..n_meta) to `path` atomically (strix_write_file_atomic). STRIX_ERR_ARG for duplicate or
 * empty names, a bad rank, negative dims, missing data; STRIX_ERR_ALLOC; STRIX_ERR_IO when the file
 * cannot be written (the previous file at `path`, if any, is then untouched). */
STRIX_API strix_status strix_safetensors_write(const char *path, const strix_st_tensor *tensors,
                                               int n, const strix_st_meta *meta, int n_meta);

/* strix_safetensors_write with tensor i stored as dtypes[i] (dtypes NULL: all F32), its float32
 * data converted: F32 as it is (bit for bit); F16 and BF16 rounded to nearest, ties to even
 * (overflow to ±inf, NaN kept as a quiet NaN); I64, I32 and U8 from whole numbers within ±2^53,
 * the int32 range and [0, 255] respectively (STRIX_ERR_ARG otherwise, nothing written). */
STRIX_API strix_status strix_safetensors_write_typed(const char *path,
                                                     const strix_st_tensor *tensors,
                                                     const strix_st_dtype *dtypes, int n,
                                                     const strix_st_meta *meta, int n_meta);

/* strix_safetensors_write_typed where a tensor with raw[i] non-NULL is written from those bytes
 * (numel·itemsize of dtypes[i], little-endian) as they are, its data unused: the way to write
 * typed data (half bits, int32 ids, bytes) exactly, or to copy a tensor read from another file
 * (its .dtype and .raw). raw NULL: as write_typed. Same statuses. */
STRIX_API strix_status strix_safetensors_write_ex(const char *path,
                                                  const strix_st_tensor *tensors,
                                                  const strix_st_dtype *dtypes,
                                                  const void *const *raw, int n,
                                                  const strix_st_meta *meta, int n_meta);

// ---- atomic writes -----------------------------------------------------------------------------

/* Writes the concatenation of chunks[0..n) (sizes in bytes) to `path` atomically: a temp file
 * ".strix-tmp-<pid>-<hash of the file name>" beside the target is created (O_EXCL), written,
 * flushed and fsync'ed, renamed over the target, and the directory is fsync'ed. A symbolic link
 * at `path` is written through (the target is replaced, in the target's directory; the link
 * stays). A target that exists and is not a regular file (a directory, device, FIFO) is never
 * replaced. On any failure the temp file is removed, the target is left as it was, and STRIX_ERR_IO
 * is returned naming the failing step and the OS reason ("No space left on device");
 * STRIX_ERR_ARG for an empty or too long path. For a text or picture, render it into memory
 * first (open_memstream) and pass the buffer as one chunk. */
STRIX_API strix_status strix_write_file_atomic(const char *path, const void *const *chunks,
                                               const size_t *sizes, int n);

/* The file strix_write_file_atomic(path, ...) replaces, into buf (cap bytes): `path` with the
 * symbolic links of its last component followed (relative links from the link's directory, at
 * most 40); `path` itself when it is no link or names nothing yet. STRIX_ERR_ARG for an empty or
 * too long path, STRIX_ERR_IO for a link loop or an unreadable link. */
STRIX_API strix_status strix_atomic_target_path(const char *path, char *buf, size_t cap);

/* The temp file name strix_write_file_atomic uses for `path` in this process, into buf (cap
 * bytes; truncated if too small), so a caller can check before a long run that it can be
 * created. It lies in the target's directory and its file name is at most 38 bytes long. */
STRIX_API void strix_atomic_temp_path(const char *path, char *buf, size_t cap);

/* Removes the temp files of `path` (the target's) that no running process owns: those of
 * processes that have ended (kill(pid, 0) fails with ESRCH) and of this process, and the
 * "<name>.tmp.<pid>" temp files of earlier strix versions. Call it before this process writes
 * `path`. Returns the number of files removed (0 when the directory cannot be read). */
STRIX_API int strix_atomic_remove_stale(const char *path);

#ifdef __cplusplus
}
#endif
#endif
