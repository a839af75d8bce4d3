/*
 * strix/data.h - the byte-level character corpus of the GPT trainer: loading a text file or a
 * directory of text files, the byte vocabulary, encode/decode, the train/validation split and the
 * two batch samplers (random windows, nanoGPT get_batch; sequential stride walk, microGPT).
 *
 * Tokens are bytes (docs/SEMANTICS.md: "Character vocabulary"): the vocabulary is the sorted set of
 * distinct bytes (unsigned char) present, so any text trains and multi-byte UTF-8 is learned byte
 * by byte. Not here: subword tokenisers, shuffling of whole documents, streaming of corpora that
 * do not fit in memory, and sampling from a model (strix/sample.h).
 */
#ifndef STRIX_DATA_H
#define STRIX_DATA_H

#include "strix/core.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- vocabulary --------------------------------------------------------------------------------

/* A byte vocabulary: id i stands for byte bytes[i]; bytes are strictly ascending. */
typedef struct strix_vocab {
    int size;                  /* V, 1..256 */
    unsigned char bytes[256];  /* the V bytes in ascending order */
    int16_t id_of[256];        /* id of each byte, -1 when the byte is not in the vocabulary */
} strix_vocab;

/* Builds a vocabulary from `n` bytes that must be strictly ascending (as stored in a checkpoint).
 * STRIX_ERR_FORMAT when n is outside 1..256 or the bytes are not strictly ascending. */
STRIX_API strix_status strix_vocab_from_bytes(const unsigned char *bytes, int n, strix_vocab *out);

/* Encodes `n` bytes of `text` into ids[0..n). STRIX_ERR_ARG naming the first byte that is not in
 * the vocabulary (printable bytes shown as 'c', others as 0xNN) and its offset; ids is then
 * partially written. */
STRIX_API strix_status strix_vocab_encode(const strix_vocab *v, const unsigned char *text,
                                          size_t n, int32_t *ids);

/* Decodes `n` ids into out[0..n) bytes (no terminating NUL is written). STRIX_ERR_ARG when an id is
 * outside [0, V). */
STRIX_API strix_status strix_vocab_decode(const strix_vocab *v, const int32_t *ids, size_t n,
                                          unsigned char *out);

// ---- corpus ------------------------------------------------------------------------------------

/* A loaded corpus: the whole text as byte ids, its vocabulary and its split point. */
typedef struct strix_corpus {
    uint8_t *ids;        /* size ids, one per byte of text (id < 256 always fits) */
    size_t size;         /* characters (bytes) in the corpus */
    strix_vocab vocab;   /* the sorted distinct bytes of the text */
    size_t n_train;      /* ids[0, n_train) train, ids[n_train, size) validation */
    int n_files;         /* text files read */
    int n_skipped;       /* entries of a directory skipped (n_skipped_text + n_skipped_other) */
    int n_skipped_text;  /* ... of them regular files skipped as binary or empty */
    int n_skipped_other; /* ... of them hidden entries, links, subdirectories, devices, FIFOs */
    uint64_t hash;       /* FNV-1a 64 of the text: tells whether a corpus changed */
} strix_corpus;

/* The largest corpus strix_corpus_load reads (1 GiB of text, a file or a directory's total). */
#define STRIX_CORPUS_MAX_BYTES ((size_t)1 << 30)

/* Loads `path`: one regular text file, or every text file directly inside a directory (not
 * recursive), in ascending byte order of their names (strcmp), concatenated without separators.
 * In a directory, hidden entries (".x"), symbolic links, subdirectories, anything that is not a
 * regular file (devices, FIFOs, sockets), empty files and binary files are skipped (Debian's
 * fortunes ship .dat indexes and .u8 links beside each text). A file is binary when it holds a NUL
 * byte or when more than 10% of its bytes are control characters other than \t \n \v \f \r \b
 * ESC. The split is set to the default 0.9/0.1 (strix_corpus_split). Returns STRIX_ERR_IO (path
 * missing or unreadable), STRIX_ERR_ARG (a path that is neither a regular file nor a directory
 * such as /dev/zero, a corpus over STRIX_CORPUS_MAX_BYTES (checked from the file sizes before
 * reading), empty file, binary file given directly, directory without a text file),
 * STRIX_ERR_ALLOC. On error *out is zeroed. */
STRIX_API strix_status strix_corpus_load(const char *path, strix_corpus *out);

/* Builds a corpus from `n` bytes in memory (tests, prompts). Same vocabulary and split rules;
 * STRIX_ERR_ARG for n == 0. */
STRIX_API strix_status strix_corpus_from_bytes(const unsigned char *text, size_t n,
                                               strix_corpus *out);

/* Frees the ids and zeroes the struct. NULL-safe. */
STRIX_API void strix_corpus_free(strix_corpus *c);

/* Deterministic split (nanoGPT prepare.py): the first floor(size·(1 − val_fraction)) characters
 * train, the rest validate. val_fraction must lie in (0, 1), else STRIX_ERR_ARG. */
STRIX_API strix_status strix_corpus_split(strix_corpus *c, double val_fraction);

typedef enum strix_split { STRIX_SPLIT_TRAIN = 0, STRIX_SPLIT_VAL = 1 } strix_split;

/* Characters in a split. */
STRIX_API size_t strix_corpus_split_size(const strix_corpus *c, strix_split split);

/* Checks that a window of T+1 characters fits in the whole corpus and in both splits.
 * STRIX_ERR_ARG ("corpus of N characters is shorter than one block of T+1 = M characters", or
 * the same naming the split) otherwise, and for T < 1. */
STRIX_API strix_status strix_corpus_check_block(const strix_corpus *c, int T);

/* Random batch (nanoGPT get_batch): for each of B rows, start s = strix_rng_below(rng, n − T)
 * within the split (n characters), ids[b][t] = text[s + t], targets[b][t] = text[s + t + 1];
 * ids and targets are host int32 (B,T). Draws exactly B numbers from rng. STRIX_ERR_ARG when the
 * split is shorter than T+1 or B, T < 1. */
STRIX_API strix_status strix_corpus_batch_random(const strix_corpus *c, strix_split split,
                                                 strix_rng *rng, int B, int T, int32_t *ids,
                                                 int32_t *targets);

/* Cursor of the sequential walk (microGPT's window trainer). Its three numbers are its whole
 * state, so a checkpoint restores it exactly. */
typedef struct strix_seq_cursor {
    uint64_t pos;     /* start of the next window within the split */
    uint64_t stride;  /* characters between consecutive windows (T gives non-overlapping ones) */
    uint64_t epoch;   /* wraps completed */
} strix_seq_cursor;

/* Sequential batch: for each of B rows, if the window [pos, pos + T] does not fit in the split,
 * pos = 0 and epoch += 1; the row is that window (ids and shifted targets as above); then
 * pos += stride. Rows of one batch are consecutive windows. STRIX_ERR_ARG for a split shorter
 * than T+1, stride 0, or B, T < 1. */
STRIX_API strix_status strix_corpus_batch_sequential(const strix_corpus *c, strix_split split,
                                                     strix_seq_cursor *cur, int B, int T,
                                                     int32_t *ids, int32_t *targets);

/* FNV-1a 64-bit hash of n bytes (Fowler, Noll, Vo), continuing from h (start with
 * STRIX_FNV1A_INIT). */
#define STRIX_FNV1A_INIT 0xcbf29ce484222325ULL
STRIX_API uint64_t strix_fnv1a64(uint64_t h, const void *data, size_t n);

#ifdef __cplusplus
}
#endif
#endif
