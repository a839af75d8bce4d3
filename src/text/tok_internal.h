/*
 * tok_internal.h - what the files of the BPE tokenizer share (strix/tokenizer.h): the tokenizer
 * struct, its string and pair hash maps (bpe.c), UTF-8 helpers and the pre-tokenizer steps
 * (pretok.c), the builder the two loaders fill (tokenizer.c: tok_build_*). Not public.
 */
#ifndef STRIX_TOK_INTERNAL_H
#define STRIX_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "strix/tokenizer.h"

// ---- byte buffers ------------------------------------------------------------------------------

/* A growable byte buffer (also used for int32 arrays through tok_buf_push_i32). */
typedef struct tok_buf {
    char *data;
    size_t len, cap;
} tok_buf;

bool tok_buf_reserve(tok_buf *b, size_t extra);
bool tok_buf_append(tok_buf *b, const void *bytes, size_t n);
bool tok_buf_push_i32(tok_buf *b, int32_t v);
void tok_buf_free(tok_buf *b);

// ---- hash maps ---------------------------------------------------------------------------------

/* String -> int32 map over strings kept in one arena (`base` + offset), open addressing. */
typedef struct tok_strmap_slot {
    uint32_t off, len; /* the key: base[off .. off+len) */
    int32_t val;       /* -1: empty slot */
    uint32_t hash;
} tok_strmap_slot;

typedef struct tok_strmap {
    tok_strmap_slot *slots;
    size_t cap, count; /* cap a power of two */
} tok_strmap;

uint32_t tok_hash(const void *bytes, size_t n);
bool tok_strmap_init(tok_strmap *m, size_t expected);
/* Inserts or overwrites (a repeated key takes the later value). false: out of memory. */
bool tok_strmap_put(tok_strmap *m, const char *base, uint32_t off, uint32_t len, int32_t val);
int32_t tok_strmap_get(const tok_strmap *m, const char *base, const char *key, size_t len);
void tok_strmap_free(tok_strmap *m);

/* (id_a, id_b) -> (rank, new id) map of the BPE merges. */
typedef struct tok_pairmap_slot {
    uint64_t key; /* UINT64_MAX: empty */
    int32_t rank, new_id;
} tok_pairmap_slot;

typedef struct tok_pairmap {
    tok_pairmap_slot *slots;
    size_t cap, count;
} tok_pairmap;

bool tok_pairmap_init(tok_pairmap *m, size_t expected);
bool tok_pairmap_put(tok_pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t new_id);
const tok_pairmap_slot *tok_pairmap_get(const tok_pairmap *m, int32_t a, int32_t b);
void tok_pairmap_free(tok_pairmap *m);

// ---- UTF-8 and Unicode -------------------------------------------------------------------------

/* Offset of the first invalid UTF-8 byte of s[0..n) (Rust's str rules), or n when valid. */
size_t tok_utf8_invalid_at(const char *s, size_t n);
/* Decodes the code point at s[i] of valid UTF-8 (i < n); its byte length into *adv. */
int32_t tok_utf8_decode(const char *s, size_t n, size_t i, size_t *adv);
/* Appends s[0..n) to out with every maximal invalid subpart replaced by U+FFFD
 * (from_utf8_lossy). */
bool tok_utf8_lossy(tok_buf *out, const char *s, size_t n);
/* Unicode White_Space (Rust's char::is_whitespace, Oniguruma's \s). */
bool tok_is_space(int32_t cp);
/* Rust's char::is_numeric (general category Nd, Nl or No; Unicode 16). */
bool tok_is_numeric(int32_t cp);
/* Rust regex's \w (alphabetic, marks, decimal digits, connector punctuation, join controls). */
bool tok_is_word(int32_t cp);

/* GPT-2's bytes_to_unicode: the character each byte stands for, and back (-1: not one). */
extern const uint16_t tok_byte_char[256];
int tok_char_byte(int32_t cp);

// ---- pre-tokenizers ----------------------------------------------------------------------------

typedef enum tok_pre_kind { TOK_PRE_SPLIT, TOK_PRE_DIGITS, TOK_PRE_BYTELEVEL } tok_pre_kind;

/* tokenizers' SplitDelimiterBehavior. */
typedef enum tok_behavior {
    TOK_ISOLATED,
    TOK_REMOVED,
    TOK_MERGED_PREV,
    TOK_MERGED_NEXT,
    TOK_CONTIGUOUS
} tok_behavior;

typedef struct tok_pre {
    tok_pre_kind kind;
    tok_behavior behavior;  /* Split */
    bool invert;            /* Split */
    pcre2_code *re;         /* Split; ByteLevel with use_regex (the GPT-2 regex) */
    bool individual_digits; /* Digits */
    bool add_prefix_space;  /* ByteLevel */
} tok_pre;

/* The GPT-2, Llama-3 and Qwen2 regexes as tokenizer.json files write them. */
extern const char tok_re_gpt2[], tok_re_llama3[], tok_re_qwen2[];

/* Compiles a tokenizers (Oniguruma) regex for PCRE2 with \s, \S, \p{L} and \p{N} rewritten (see
 * strix/tokenizer.h); a literal string instead when `literal`. NULL on failure with the PCRE2
 * message in err[0..cap). */
pcre2_code *tok_regex_compile(const char *pattern, size_t len, bool literal, char *err,
                              size_t cap);

// ---- the tokenizer -----------------------------------------------------------------------------

typedef struct tok_added {
    int32_t id;
    uint32_t off, len;           /* content in the string arena */
    uint32_t match_off, match_len; /* what is matched (the normalized content when normalized) */
    bool special, single_word, lstrip, rstrip, normalized;
} tok_added;

typedef enum tok_decoder { TOK_DEC_BYTELEVEL, TOK_DEC_NONE } tok_decoder;

struct strix_tokenizer {
    char *strings;            /* arena of every token string */
    size_t strings_len;
    int32_t n_ids;            /* max id + 1 */
    uint32_t *id_off, *id_len; /* per id: the token decode reads (UINT32_MAX off: no token) */
    uint32_t *dec_off, *dec_len; /* per id: its bytes after the decoder, in dec */
    char *dec;
    uint8_t *special;         /* per id: 1 when special */
    tok_strmap vocab;         /* the model's vocabulary */
    tok_pairmap merges;
    int32_t byte_id[256];     /* the model id of each byte's character, -1 */
    bool ignore_merges, byte_fallback, fuse_unk;
    int32_t unk_id;           /* -1: none */
    size_t n_added;
    tok_added *added;
    tok_strmap added_map;     /* content -> index in added */
    /* per matching set (0: normalized = false, 1: true), the added tokens sorted by the first
     * byte of what is matched, longest first: order[s][first[s][b] .. first[s][b+1]) are the
     * indices into added of those starting with byte b */
    uint32_t *order[2];
    uint32_t first[2][257];
    bool nfc;
    size_t n_pre;
    tok_pre *pre;
    int32_t *post_before, *post_after;
    size_t n_post_before, n_post_after;
    tok_decoder decoder;
    int32_t bos, eos, pad;
};

/* The builder both loaders use: strings go into the arena, then tok_builder_finish indexes
 * everything as tokenizers' BPE builder and AddedVocabulary do. */
typedef struct tok_builder {
    strix_tokenizer *t; /* the options set directly: nfc, decoder, ignore_merges, ... */
    tok_buf arena;
    tok_buf vocab_keys;  /* (u32 off, u32 len, i32 id) per vocabulary entry */
    tok_buf merge_pairs; /* (u32 off_a, u32 len_a, u32 off_b, u32 len_b) per merge, by rank */
    tok_buf added;       /* tok_added_in records, in the file's order */
    tok_buf pres;        /* tok_pre records */
    tok_buf post_before, post_after; /* int32 ids */
    bool has_unk_token;  /* json: unk_token names a vocabulary string (unk_off, unk_len) */
    uint32_t unk_off, unk_len;
    const char *where;   /* message prefix: the path, "tokenizer.json" or "tokenizer spec" */
    strix_status bad;    /* the status of bad contents: FORMAT (a file) or ARG (a spec) */
} tok_builder;

/* An added token as a file lists it. */
typedef struct tok_added_in {
    uint32_t off, len;
    int32_t file_id; /* the id the file gives (-1: none); tokenizers assigns its own */
    bool special, single_word, lstrip, rstrip, normalized;
} tok_added_in;

strix_status tok_builder_init(tok_builder *b, const char *where);
/* Adds a string to the arena; its offset into *off. */
strix_status tok_builder_str(tok_builder *b, const char *s, size_t len, uint32_t *off);
strix_status tok_builder_vocab(tok_builder *b, const char *s, size_t len, int32_t id);
strix_status tok_builder_merge(tok_builder *b, const char *a, size_t la, const char *c,
                               size_t lc);
strix_status tok_builder_added(tok_builder *b, const char *content, size_t len, int32_t file_id,
                               bool special, bool single_word, bool lstrip, bool rstrip,
                               bool normalized);
/* Takes ownership of p->re (freed with the tokenizer, or by tok_builder_abort). */
strix_status tok_builder_pre(tok_builder *b, const tok_pre *p);
/* Resolves merges and added tokens, indexes everything and hands the tokenizer to *out; the
 * builder is freed either way. STRIX_ERR_FORMAT (a merge outside the vocabulary, ...),
 * STRIX_ERR_ALLOC. */
strix_status tok_builder_finish(tok_builder *b, strix_tokenizer **out);
void tok_builder_abort(tok_builder *b);

/* BPE of one pre-token (raw bytes, before the byte-level mapping), ids appended to out. */
bool tok_bpe(const strix_tokenizer *t, const unsigned char *piece, size_t n, tok_buf *out,
             tok_buf *scratch);

/* Runs pre-tokenizer steps [step, n_pre) and BPE on piece s[0..n) (valid UTF-8), ids appended
 * to out. STRIX_ERR_ALLOC, or STRIX_ERR_ARG when PCRE2 gives up (its match limit). */
strix_status tok_pretokenize(const strix_tokenizer *t, size_t step, const char *s, size_t n,
                             pcre2_match_data *md, tok_buf *out, tok_buf *scratch);

#endif
