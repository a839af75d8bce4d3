/*
 * strix/tokenizer.h - byte-level BPE tokenizers as Hugging Face `tokenizers` 0.23 runs them (the
 * GPT-2 / Llama-3 / Qwen2 / SmolLM family), loaded from a tokenizer.json or from the
 * tokenizer.ggml.* arrays of a GGUF file (llama.cpp's keys). Depends on core only (plus cJSON,
 * PCRE2 and utf8proc inside); it does not read GGUF files itself: the caller passes the arrays.
 *
 * Encoding follows tokenizers' pipeline (tokenizers/src/tokenizer/mod.rs, added_vocabulary.rs):
 *   1. the added tokens with normalized = false are found in the raw text (leftmost-longest, as
 *      its Aho-Corasick matcher; single_word, lstrip and rstrip as it applies them);
 *   2. each stretch between them is normalized (NFC or nothing), and the added tokens with
 *      normalized = true are found in the normalized stretch;
 *   3. the pre-tokenizers split what is left (Split with a regex or a string and any of the five
 *      behaviours, Digits, ByteLevel with its GPT-2 regex and add_prefix_space; ByteLevel last),
 *      ByteLevel maps every byte to its printable character (GPT-2's bytes_to_unicode);
 *   4. the BPE model turns each piece into ids: the whole piece when ignore_merges is set and it
 *      is in the vocabulary, else one symbol per byte merged pair by pair, lowest merge rank
 *      first and leftmost first among equal ranks (models/bpe/word.rs); a byte missing from the
 *      vocabulary becomes <0xXX> (byte_fallback), else the unknown token (fused when fuse_unk),
 *      else it is dropped;
 *   5. the post-processor adds the template's special tokens (TemplateProcessing's single
 *      template, e.g. Llama-3's <|begin_of_text|> $A) when asked.
 * Regexes run in PCRE2 (UTF, UCP). Where PCRE2 and tokenizers' Oniguruma differ, the classes are
 * written out: \s and \S are Unicode's White_Space (as Oniguruma; PCRE2 adds U+180E), and the
 * general categories (\p{L}, \p{N}, \p{Lu}, ...) and Digits' numeric test gain what Unicode
 * 15.0-16.0 assigned (Oniguruma and Rust know Unicode 16; Debian's PCRE2 10.42 knows 14, utf8proc
 * 2.8 knows 15). Other Oniguruma-only syntax (e.g. \h as a hex digit) is not translated.
 *
 * Decoding is tokenizers' decode: each id's token (an added token's content), special ones left
 * out when asked, through the ByteLevel decoder (a token whose characters are all byte-level
 * characters gives those bytes, any other token its own UTF-8), and the bytes read as UTF-8 with
 * every invalid sequence replaced by U+FFFD (Rust's from_utf8_lossy: one per maximal invalid
 * subpart). A tokenizer.json without a decoder joins the tokens with spaces, as tokenizers does.
 *
 * Not here: WordPiece/Unigram/SentencePiece models, BPE dropout, continuing_subword_prefix or
 * end_of_word_suffix, normalizers other than NFC, pair encodings, offsets, truncation and padding
 * (ignored in tokenizer.json). All of those are refused by name where they would change ids.
 * A loaded tokenizer is read-only: encode and decode may run on several threads at once.
 */
#ifndef STRIX_TOKENIZER_H
#define STRIX_TOKENIZER_H

#include "strix/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct strix_tokenizer strix_tokenizer;

/* llama.cpp's tokenizer.ggml.token_type values. */
typedef enum strix_token_type {
    STRIX_TOKEN_NORMAL = 1,
    STRIX_TOKEN_UNKNOWN = 2,
    STRIX_TOKEN_CONTROL = 3,      /* a special token (e.g. <|im_start|>) */
    STRIX_TOKEN_USER_DEFINED = 4, /* an added, not special, token */
    STRIX_TOKEN_UNUSED = 5,
    STRIX_TOKEN_BYTE = 6
} strix_token_type;

/* A tokenizer as a GGUF file's metadata describes it (llama.cpp's keys, named per field). The
 * arrays are read during strix_tokenizer_from_spec only (copied). */
typedef struct strix_tokenizer_spec {
    const char *model;      /* tokenizer.ggml.model: only "gpt2" (byte-level BPE) */
    const char *pre;        /* tokenizer.ggml.pre: "default"/"gpt2" (the GPT-2 regex),
                             * "llama-bpe"/"llama3" (Llama-3's regex, ignore_merges), "qwen2"
                             * (NFC, Qwen2's regex), "smollm" (Digits one by one, then the GPT-2
                             * regex); NULL = "default"; others refused by name */
    size_t n_tokens;
    const char *const *tokens;  /* tokenizer.ggml.tokens: n_tokens UTF-8 strings (byte-level
                                 * form) */
    const size_t *token_lens;   /* their lengths in bytes (no NUL needed) */
    const int32_t *token_types; /* tokenizer.ggml.token_type or NULL (all normal): CONTROL tokens
                                 * become special added tokens, USER_DEFINED ones added tokens
                                 * (both matched in the raw text before pre-tokenizing) */
    size_t n_merges;
    const char *const *merges;  /* tokenizer.ggml.merges: "a b", rank = index */
    const size_t *merge_lens;
    int32_t bos_id, eos_id, pad_id; /* -1 when absent */
    bool add_bos;                   /* tokenizer.ggml.add_bos_token: encode with add_special
                                     * prepends bos_id */
    int32_t unk_id; /* tokenizer.ggml.unknown_token_id, -1 when absent: a byte whose character
                     * is not in the vocabulary becomes it (a run of them one unk), as
                     * transformers' GGUF tokenizer does; -1 drops such bytes (llama.cpp) */
} strix_tokenizer_spec;

// ---- loading -----------------------------------------------------------------------------------

/* Loads a Hugging Face tokenizer.json (the tokenizers library's format). Model "BPE" (vocab, merges
 * as "a b" strings or ["a", "b"] pairs, ignore_merges, byte_fallback, unk_token, fuse_unk;
 * dropout null); added_tokens (content, special, single_word, lstrip, rstrip, normalized; their
 * ids as tokenizers 0.23 assigns them: the vocabulary's id of the content, else the next id after
 * the vocabulary, a different "id" in the file logged as a warning); normalizer null, NFC or a
 * Sequence of those; pre_tokenizer ByteLevel, Split (Regex or String pattern, behaviour
 * Isolated/Removed/MergedWithPrevious/MergedWithNext/Contiguous, invert), Digits or a Sequence of
 * those with exactly one ByteLevel, last; post_processor null, ByteLevel, TemplateProcessing (its
 * single template: special tokens around one $A) or a Sequence of those; decoder ByteLevel or
 * null. BOS: the one special token the single template puts before $A when there is one, else -1;
 * EOS -1 (set both with strix_tokenizer_set_bos_eos from the model's config).
 * STRIX_ERR_IO (cannot read), STRIX_ERR_ALLOC, STRIX_ERR_FORMAT (not JSON, a missing or mistyped
 * field, a string that is not valid UTF-8, a merge naming a token not in the vocabulary, a bad
 * regex, an id of 2^26 or more), STRIX_ERR_UNSUPPORTED (a component or option not listed, named):
 * one line starting with the path. */
STRIX_API strix_status strix_tokenizer_load_json(const char *path, strix_tokenizer **out);
/* The same from len bytes of JSON in memory (messages start "tokenizer.json:"). */
STRIX_API strix_status strix_tokenizer_from_json(const char *json, size_t len,
                                                 strix_tokenizer **out);
/* Builds the tokenizer of a GGUF file's tokenizer.ggml.* arrays (see strix_tokenizer_spec): the
 * vocabulary is the tokens by index (a repeated string maps to its last index, as llama.cpp and
 * transformers); normalizer, pre-tokenizers and ignore_merges as `pre` names them (the configs of
 * the models' own tokenizer.json, which llama.cpp's regexes follow); the ByteLevel decoder.
 * STRIX_ERR_ARG: NULL arrays, a token or merge that is not valid UTF-8, a merge that is not two
 * tokens of the vocabulary joined by one space (or whose concatenation is not a token), an id out
 * of range, add_bos without a bos_id, 2^26 ids or more. STRIX_ERR_UNSUPPORTED: a model other
 * than "gpt2" or an unknown `pre` (named). STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_tokenizer_from_spec(const strix_tokenizer_spec *spec,
                                                 strix_tokenizer **out);
/* Frees t. NULL is a no-op. */
STRIX_API void strix_tokenizer_free(strix_tokenizer *t);

/* Sets the ids strix_tokenizer_bos/eos report (-1: none), e.g. from config.json. It does not
 * change what encode adds (the post-processor does). STRIX_ERR_ARG for an id that has no token. */
STRIX_API strix_status strix_tokenizer_set_bos_eos(strix_tokenizer *t, int32_t bos, int32_t eos);

// ---- vocabulary --------------------------------------------------------------------------------

/* Largest id of the model's vocabulary and the added tokens, plus 1. */
STRIX_API size_t strix_tokenizer_vocab_size(const strix_tokenizer *t);
/* The id of a token given in its vocabulary form (byte-level characters, e.g. "Ġthe"; an added
 * token's content), added tokens first as tokenizers' token_to_id; -1 when none. */
STRIX_API int32_t strix_tokenizer_token_id(const strix_tokenizer *t, const char *token,
                                           size_t len);
/* Whether id is a special token (false out of range): an added token with special = true, or an
 * id whose token is the content of one (tokenizers skips those when decoding). */
STRIX_API bool strix_tokenizer_is_special(const strix_tokenizer *t, int32_t id);
/* The BOS and EOS ids (-1 when none). */
STRIX_API int32_t strix_tokenizer_bos(const strix_tokenizer *t);
STRIX_API int32_t strix_tokenizer_eos(const strix_tokenizer *t);

// ---- encoding and decoding ---------------------------------------------------------------------

/* Encodes len bytes of UTF-8 text (NUL bytes are text like any other). add_special: apply the
 * post-processor (e.g. prepend BOS as the template or add_bos says). parse_special: special added
 * tokens written in the text become their ids (as tokenizers does by default); false: they are
 * split as plain text (tokenizers' encode_special_tokens; added tokens that are not special are
 * still matched). *ids is malloc'd (at least one int32 even when *n is 0), the caller frees it.
 * STRIX_ERR_ARG: invalid UTF-8 (one line naming the byte offset; Rust's str rules: no overlong
 * forms, surrogates or code points over U+10FFFF), text NULL with len > 0. STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_tokenizer_encode(const strix_tokenizer *t, const char *text,
                                              size_t len, bool add_special, bool parse_special,
                                              int32_t **ids, size_t *n);
/* Decodes ids as tokenizers' decode(ids, skip_special_tokens = skip_special) does (see the top of
 * this file; invalid UTF-8 from partial tokens becomes U+FFFD). *text is malloc'd and
 * NUL-terminated, *len its length without the NUL (len may be NULL). STRIX_ERR_ARG for an id out of
 * range or without a token (named with its position). STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_tokenizer_decode(const strix_tokenizer *t, const int32_t *ids,
                                              size_t n, bool skip_special, char **text,
                                              size_t *len);
/* The raw bytes one token stands for (its characters byte-level decoded; an added token's content;
 * not necessarily valid UTF-8 on its own), for streaming: writes min(count, cap) bytes to buf
 * (buf may be NULL when cap is 0) and returns the count, which may exceed cap. 0 for an id out of
 * range or without a token. */
STRIX_API size_t strix_tokenizer_token_bytes(const strix_tokenizer *t, int32_t id, char *buf,
                                             size_t cap);

#ifdef __cplusplus
}
#endif

#endif
