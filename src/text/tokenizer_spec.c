/*
 * tokenizer_spec.c - strix_tokenizer_from_spec: the tokenizer a GGUF file's tokenizer.ggml.*
 * arrays describe (llama.cpp's keys, gguf docs), built with the configuration of the model's own
 * tokenizer.json that its `pre` name stands for (llama.cpp's llama-vocab.cpp uses the same
 * regexes): the vocabulary by index, the merges by rank, CONTROL tokens as special added tokens
 * and USER_DEFINED ones as added tokens (normalized = false, as transformers' GGUF converter adds
 * them), the ByteLevel decoder, BOS prepended when add_bos. Reads no file.
 */
#include <stdio.h>
#include <string.h>

#include "tok_internal.h"

#define WHERE "tokenizer spec"

static strix_status arg(const char *fmt, const char *what) {
    return strix_error(STRIX_ERR_ARG, fmt, what);
}

/* Adds a ByteLevel / Split / Digits step. */
static strix_status add_split(tok_builder *b, const char *re) {
    char err[200];
    tok_pre p = {.kind = TOK_PRE_SPLIT, .behavior = TOK_ISOLATED};
    p.re = tok_regex_compile(re, strlen(re), false, err, sizeof err);
    if (!p.re)
        return strix_error(STRIX_ERR_UNSUPPORTED, WHERE ": a regex does not compile in this PCRE2: "
                           "%s", err);
    return tok_builder_pre(b, &p);
}

static strix_status add_bytelevel(tok_builder *b, bool use_regex) {
    tok_pre p = {.kind = TOK_PRE_BYTELEVEL};
    if (use_regex) {
        char err[200];
        p.re = tok_regex_compile(tok_re_gpt2, strlen(tok_re_gpt2), false, err, sizeof err);
        if (!p.re)
            return strix_error(STRIX_ERR_UNSUPPORTED, WHERE ": the GPT-2 regex does not compile "
                               "in this PCRE2: %s", err);
    }
    return tok_builder_pre(b, &p);
}

/* The normalizer, pre-tokenizers and BPE options of the tokenizer.json each name stands for. */
static strix_status configure(tok_builder *b, const char *pre) {
    strix_tokenizer *t = b->t;
    if (!pre || !strcmp(pre, "default") || !strcmp(pre, "gpt2")) {
        /* GPT-2: ByteLevel with its regex */
        return add_bytelevel(b, true);
    }
    if (!strcmp(pre, "llama-bpe") || !strcmp(pre, "llama3")) {
        /* Llama-3: Split(regex, Isolated), ByteLevel(use_regex = false), ignore_merges */
        t->ignore_merges = true;
        STRIX_TRY(add_split(b, tok_re_llama3));
        return add_bytelevel(b, false);
    }
    if (!strcmp(pre, "qwen2")) {
        /* Qwen2: NFC, Split(regex, Isolated), ByteLevel(use_regex = false) */
        t->nfc = true;
        STRIX_TRY(add_split(b, tok_re_qwen2));
        return add_bytelevel(b, false);
    }
    if (!strcmp(pre, "smollm")) {
        /* SmolLM: Digits(individual_digits), ByteLevel with the GPT-2 regex */
        tok_pre d = {.kind = TOK_PRE_DIGITS, .individual_digits = true};
        STRIX_TRY(tok_builder_pre(b, &d));
        return add_bytelevel(b, true);
    }
    return strix_error(STRIX_ERR_UNSUPPORTED, WHERE ": pre-tokenizer \"%.100s\" is not supported "
                       "(default, gpt2, llama-bpe, llama3, qwen2, smollm are)", pre);
}

static strix_status build(tok_builder *b, const strix_tokenizer_spec *s) {
    strix_tokenizer *t = b->t;
    if (!s->model || strcmp(s->model, "gpt2") != 0)
        return strix_error(STRIX_ERR_UNSUPPORTED, WHERE ": tokenizer model \"%.100s\" is not "
                           "supported (only \"gpt2\", byte-level BPE)", s->model ? s->model : "");
    if (s->n_tokens > INT32_MAX / 2) return arg(WHERE ": %s", "more than 2^30 tokens");
    if ((s->n_tokens && (!s->tokens || !s->token_lens)) ||
        (s->n_merges && (!s->merges || !s->merge_lens)))
        return arg(WHERE ": %s", "NULL tokens or merges");
    int32_t n = (int32_t)s->n_tokens;
    const int32_t ids[4] = {s->bos_id, s->eos_id, s->pad_id, s->unk_id};
    static const char *const names[4] = {"bos_id", "eos_id", "pad_id", "unk_id"};
    for (int i = 0; i < 4; i++)
        if (ids[i] < -1 || ids[i] >= n)
            return strix_error(STRIX_ERR_ARG, WHERE ": %s %d is out of range (%d tokens)",
                               names[i], (int)ids[i], (int)n);
    if (s->add_bos && s->bos_id < 0) return arg(WHERE ": %s", "add_bos without a bos_id");
    STRIX_TRY(configure(b, s->pre));
    for (int32_t i = 0; i < n; i++) {
        const char *tok = s->tokens[i];
        size_t len = s->token_lens[i];
        if ((!tok && len) || tok_utf8_invalid_at(tok, len) < len)
            return strix_error(STRIX_ERR_ARG, WHERE ": token %d is not valid UTF-8", (int)i);
        STRIX_TRY(tok_builder_vocab(b, tok ? tok : "", len, i));
    }
    for (size_t r = 0; r < s->n_merges; r++) {
        const char *m = s->merges[r];
        size_t len = s->merge_lens[r];
        if ((!m && len) || tok_utf8_invalid_at(m, len) < len)
            return strix_error(STRIX_ERR_ARG, WHERE ": merge %zu is not valid UTF-8", r);
        const char *sp = len ? memchr(m, ' ', len) : NULL;
        if (!sp || memchr(sp + 1, ' ', len - (size_t)(sp + 1 - m)))
            return strix_error(STRIX_ERR_ARG, WHERE ": merge %zu is not two tokens joined by one "
                               "space", r);
        STRIX_TRY(tok_builder_merge(b, m, (size_t)(sp - m), sp + 1, len - (size_t)(sp + 1 - m)));
    }
    /* control tokens (special) first, then user-defined ones, each in index order */
    for (int pass = 0; pass < 2 && s->token_types; pass++) {
        int32_t want = pass == 0 ? STRIX_TOKEN_CONTROL : STRIX_TOKEN_USER_DEFINED;
        for (int32_t i = 0; i < n; i++)
            if (s->token_types[i] == want)
                STRIX_TRY(tok_builder_added(b, s->tokens[i] ? s->tokens[i] : "", s->token_lens[i],
                                            -1, pass == 0, false, false, false, false));
    }
    if (s->add_bos && !tok_buf_push_i32(&b->post_before, s->bos_id))
        return strix_error(STRIX_ERR_ALLOC, "tokenizer: out of memory");
    t->decoder = TOK_DEC_BYTELEVEL;
    t->unk_id = s->unk_id;
    t->fuse_unk = true;      /* transformers' GGUF converter: BPE(fuse_unk = True, */
    t->byte_fallback = true; /*                                byte_fallback = True) */
    t->bos = s->bos_id;
    t->eos = s->eos_id;
    t->pad = s->pad_id;
    return STRIX_OK;
}

strix_status strix_tokenizer_from_spec(const strix_tokenizer_spec *spec, strix_tokenizer **out) {
    *out = NULL;
    if (!spec) return strix_error(STRIX_ERR_ARG, WHERE ": NULL");
    tok_builder b;
    STRIX_TRY(tok_builder_init(&b, WHERE));
    b.bad = STRIX_ERR_ARG;
    strix_status st = build(&b, spec);
    if (st != STRIX_OK) {
        tok_builder_abort(&b);
        return st;
    }
    return tok_builder_finish(&b, out);
}
