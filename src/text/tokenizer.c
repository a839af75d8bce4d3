/*
 * tokenizer.c - the tokenizer object of strix/tokenizer.h: the builder both loaders fill
 * (tokenizer_json.c, tokenizer_spec.c) and its indexing (the BPE builder of tokenizers'
 * models/bpe/model.rs and the id assignment of tokenizer/added_vocabulary.rs add_tokens), encoding
 * (added tokens, normalization, pre-tokenizers and BPE, post-processor: tokenizer/mod.rs
 * encode_single_sequence) and decoding (tokenizer/mod.rs decode and the ByteLevel decoder).
 * Does not parse files (the loaders) or split text (pretok.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tok_internal.h"

#define NO_TOKEN UINT32_MAX
/* At most this many ids (real vocabularies have under a million; per-id tables are allocated). */
#define MAX_IDS (1 << 26)

static strix_status oom(void) { return strix_error(STRIX_ERR_ALLOC, "tokenizer: out of memory"); }

// ---- freeing -----------------------------------------------------------------------------------

void strix_tokenizer_free(strix_tokenizer *t) {
    if (!t) return;
    free(t->strings);
    free(t->id_off);
    free(t->id_len);
    free(t->dec_off);
    free(t->dec_len);
    free(t->dec);
    free(t->special);
    tok_strmap_free(&t->vocab);
    tok_pairmap_free(&t->merges);
    free(t->added);
    tok_strmap_free(&t->added_map);
    free(t->order[0]);
    free(t->order[1]);
    for (size_t i = 0; i < t->n_pre; i++) pcre2_code_free(t->pre[i].re);
    free(t->pre);
    free(t->post_before);
    free(t->post_after);
    free(t);
}

// ---- the builder -------------------------------------------------------------------------------

strix_status tok_builder_init(tok_builder *b, const char *where) {
    memset(b, 0, sizeof *b);
    b->where = where;
    b->bad = STRIX_ERR_FORMAT;
    b->t = calloc(1, sizeof *b->t);
    if (!b->t) return oom();
    b->t->unk_id = -1;
    b->t->bos = b->t->eos = b->t->pad = -1;
    return STRIX_OK;
}

void tok_builder_abort(tok_builder *b) {
    tok_buf_free(&b->arena);
    tok_buf_free(&b->vocab_keys);
    tok_buf_free(&b->merge_pairs);
    tok_buf_free(&b->added);
    for (size_t i = 0; i < b->pres.len / sizeof(tok_pre); i++)
        pcre2_code_free(((tok_pre *)(void *)b->pres.data)[i].re);
    tok_buf_free(&b->pres);
    tok_buf_free(&b->post_before);
    tok_buf_free(&b->post_after);
    strix_tokenizer_free(b->t);
    b->t = NULL;
}

strix_status tok_builder_str(tok_builder *b, const char *s, size_t len, uint32_t *off) {
    if (len > UINT32_MAX / 2 || b->arena.len > UINT32_MAX / 2 - len)
        return strix_error(b->bad, "%s: the token strings exceed 2 GB", b->where);
    *off = (uint32_t)b->arena.len;
    return tok_buf_append(&b->arena, s, len) ? STRIX_OK : oom();
}

strix_status tok_builder_vocab(tok_builder *b, const char *s, size_t len, int32_t id) {
    uint32_t rec[3];
    STRIX_TRY(tok_builder_str(b, s, len, &rec[0]));
    rec[1] = (uint32_t)len;
    rec[2] = (uint32_t)id;
    return tok_buf_append(&b->vocab_keys, rec, sizeof rec) ? STRIX_OK : oom();
}

strix_status tok_builder_merge(tok_builder *b, const char *a, size_t la, const char *c,
                               size_t lc) {
    uint32_t rec[4];
    STRIX_TRY(tok_builder_str(b, a, la, &rec[0]));
    rec[1] = (uint32_t)la;
    STRIX_TRY(tok_builder_str(b, c, lc, &rec[2]));
    rec[3] = (uint32_t)lc;
    return tok_buf_append(&b->merge_pairs, rec, sizeof rec) ? STRIX_OK : oom();
}

strix_status tok_builder_added(tok_builder *b, const char *content, size_t len, int32_t file_id,
                               bool special, bool single_word, bool lstrip, bool rstrip,
                               bool normalized) {
    tok_added_in a = {.file_id = file_id, .special = special, .single_word = single_word,
                      .lstrip = lstrip, .rstrip = rstrip, .normalized = normalized};
    STRIX_TRY(tok_builder_str(b, content, len, &a.off));
    a.len = (uint32_t)len;
    return tok_buf_append(&b->added, &a, sizeof a) ? STRIX_OK : oom();
}

strix_status tok_builder_pre(tok_builder *b, const tok_pre *p) {
    if (!tok_buf_append(&b->pres, p, sizeof *p)) {
        pcre2_code_free(p->re);
        return oom();
    }
    return STRIX_OK;
}

/* NFC of s[0..n) into a malloc'd string (*out, *out_len). */
static strix_status nfc(const char *s, size_t n, char **out, size_t *out_len) {
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (r < 0) {
        free(dst);
        return r == UTF8PROC_ERROR_NOMEM ? oom()
                                         : strix_error(STRIX_ERR_ARG, "tokenizer: NFC failed: %s",
                                                       utf8proc_errmsg(r));
    }
    *out = (char *)dst;
    *out_len = (size_t)r;
    return STRIX_OK;
}

static bool all_ascii(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return false;
    return true;
}

/* The added tokens: ids as add_tokens assigns them (the id of the content in the vocabulary, else
 * the next id from the vocabulary's size; a content seen before keeps its id and takes the later
 * flags), the normalized form matched for normalized ones, the matching index. */
static strix_status finish_added(tok_builder *b, size_t vocab_entries) {
    strix_tokenizer *t = b->t;
    size_t n_in = b->added.len / sizeof(tok_added_in);
    const tok_added_in *in = (const tok_added_in *)(void *)b->added.data;
    t->added = calloc(n_in ? n_in : 1, sizeof *t->added);
    if (!t->added || !tok_strmap_init(&t->added_map, n_in)) return oom();
    int64_t next_id = (int64_t)vocab_entries;
    for (size_t i = 0; i < n_in; i++) {
        if (in[i].len == 0) continue; /* tokenizers ignores empty added tokens */
        const char *content = b->arena.data + in[i].off;
        int32_t k = tok_strmap_get(&t->added_map, b->arena.data, content, in[i].len);
        tok_added *a;
        if (k >= 0) {
            a = &t->added[k];
        } else {
            int32_t id = tok_strmap_get(&t->vocab, b->arena.data, content, in[i].len);
            if (id < 0) {
                if (next_id > INT32_MAX - 1)
                    return strix_error(b->bad, "%s: too many added tokens", b->where);
                id = (int32_t)next_id++;
            }
            k = (int32_t)t->n_added++;
            a = &t->added[k];
            a->id = id;
            a->off = in[i].off;
            a->len = in[i].len;
            if (!tok_strmap_put(&t->added_map, b->arena.data, in[i].off, in[i].len, k))
                return oom();
        }
        if (in[i].file_id >= 0 && in[i].file_id != a->id)
            strix_log(STRIX_LOG_WARN,
                      "%s: added token %.*s has id %d in the file; tokenizers gives it %d",
                      b->where, (int)in[i].len, content, (int)in[i].file_id, (int)a->id);
        a->special = in[i].special;
        a->single_word = in[i].single_word;
        a->lstrip = in[i].lstrip;
        a->rstrip = in[i].rstrip;
        a->normalized = in[i].normalized;
    }
    /* what each one matches: the content, or its normalized form (normalized_cache) */
    for (size_t i = 0; i < t->n_added; i++) {
        tok_added *a = &t->added[i];
        a->match_off = a->off;
        a->match_len = a->len;
        if (!a->normalized || !t->nfc) continue;
        char *norm = NULL;
        size_t norm_len = 0;
        STRIX_TRY(nfc(b->arena.data + a->off, a->len, &norm, &norm_len));
        strix_status s = STRIX_OK;
        if (norm_len != a->len || memcmp(norm, b->arena.data + a->off, norm_len) != 0)
            s = tok_builder_str(b, norm, norm_len, &a->match_off);
        if (s == STRIX_OK) a->match_len = (uint32_t)norm_len;
        free(norm);
        STRIX_TRY(s);
    }
    return STRIX_OK;
}

/* The added tokens of each matching set sorted by first byte, longest first (then by id). */
typedef struct sort_key {
    unsigned char first;
    uint32_t len;
    int32_t id;
    uint32_t index;
} sort_key;

static int cmp_key(const void *x, const void *y) {
    const sort_key *a = x, *b = y;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static strix_status index_added(strix_tokenizer *t) {
    sort_key *keys = malloc((t->n_added ? t->n_added : 1) * sizeof *keys);
    if (!keys) return oom();
    for (int set = 0; set < 2; set++) {
        t->order[set] = malloc((t->n_added ? t->n_added : 1) * sizeof(uint32_t));
        if (!t->order[set]) {
            free(keys);
            return oom();
        }
        size_t n = 0;
        for (size_t i = 0; i < t->n_added; i++) {
            const tok_added *a = &t->added[i];
            if (a->normalized != (set == 1) || a->match_len == 0) continue;
            keys[n++] = (sort_key){(unsigned char)t->strings[a->match_off], a->match_len, a->id,
                                   (uint32_t)i};
        }
        qsort(keys, n, sizeof *keys, cmp_key);
        for (size_t i = 0; i < n; i++) t->order[set][i] = keys[i].index;
        size_t k = 0;
        for (int byte = 0; byte < 256; byte++) {
            while (k < n && keys[k].first < byte) k++;
            t->first[set][byte] = (uint32_t)k;
        }
        t->first[set][256] = (uint32_t)n;
    }
    free(keys);
    return STRIX_OK;
}

/* The bytes a token stands for after the ByteLevel decoder: its characters' bytes when every one
 * is a byte-level character, else its own UTF-8 (decode_chain). */
static bool bytelevel_bytes(const char *s, size_t n, tok_buf *out) {
    size_t i = 0, start = out->len;
    while (i < n) {
        size_t adv;
        int b = tok_char_byte(tok_utf8_decode(s, n, i, &adv));
        if (b < 0) {
            out->len = start;
            return tok_buf_append(out, s, n);
        }
        char c = (char)b;
        if (!tok_buf_append(out, &c, 1)) return false;
        i += adv;
    }
    return true;
}

strix_status tok_builder_finish(tok_builder *b, strix_tokenizer **out) {
    strix_tokenizer *t = b->t;
    strix_status st = STRIX_OK;
    *out = NULL;
    size_t n_vocab = b->vocab_keys.len / (3 * sizeof(uint32_t));
    size_t n_merges = b->merge_pairs.len / (4 * sizeof(uint32_t));
    const uint32_t *vk = (const uint32_t *)(void *)b->vocab_keys.data;
    const uint32_t *mp = (const uint32_t *)(void *)b->merge_pairs.data;
    tok_buf cat = {0};

    /* the vocabulary (a repeated string keeps its later id) */
    if (!tok_strmap_init(&t->vocab, n_vocab)) goto fail_oom;
    for (size_t i = 0; i < n_vocab; i++)
        if (!tok_strmap_put(&t->vocab, b->arena.data, vk[3 * i], vk[3 * i + 1],
                            (int32_t)vk[3 * i + 2]))
            goto fail_oom;
    /* merges: (id a, id b) -> (rank, id of a+b) */
    if (!tok_pairmap_init(&t->merges, n_merges)) goto fail_oom;
    for (size_t r = 0; r < n_merges; r++) {
        const char *sa = b->arena.data + mp[4 * r], *sb = b->arena.data + mp[4 * r + 2];
        uint32_t la = mp[4 * r + 1], lb = mp[4 * r + 3];
        int32_t ia = tok_strmap_get(&t->vocab, b->arena.data, sa, la);
        int32_t ib = tok_strmap_get(&t->vocab, b->arena.data, sb, lb);
        cat.len = 0;
        if (!tok_buf_append(&cat, sa, la) || !tok_buf_append(&cat, sb, lb)) goto fail_oom;
        int32_t ic = tok_strmap_get(&t->vocab, b->arena.data, cat.data, cat.len);
        if (ia < 0 || ib < 0 || ic < 0) {
            const char *what = ia < 0 ? sa : ib < 0 ? sb : cat.data;
            int what_len = (int)(ia < 0 ? la : ib < 0 ? lb : cat.len);
            st = strix_error(b->bad,
                             "%s: merge %zu (\"%.*s %.*s\") names \"%.*s\", which is not in the "
                             "vocabulary", b->where, r, (int)la, sa, (int)lb, sb,
                             what_len > 200 ? 200 : what_len, what);
            goto fail;
        }
        tok_pairmap_put(&t->merges, ia, ib, (int32_t)r, ic);
    }
    tok_buf_free(&cat);
    if (b->has_unk_token)
        t->unk_id = tok_strmap_get(&t->vocab, b->arena.data, b->arena.data + b->unk_off,
                                   b->unk_len);
    st = finish_added(b, t->vocab.count);
    if (st != STRIX_OK) goto fail;

    /* take the arena, pre-tokenizers and post-processor ids */
    t->strings = b->arena.data;
    t->strings_len = b->arena.len;
    b->arena = (tok_buf){0};
    t->n_pre = b->pres.len / sizeof(tok_pre);
    t->pre = (tok_pre *)(void *)b->pres.data;
    b->pres = (tok_buf){0};
    t->n_post_before = b->post_before.len / sizeof(int32_t);
    t->post_before = (int32_t *)(void *)b->post_before.data;
    b->post_before = (tok_buf){0};
    t->n_post_after = b->post_after.len / sizeof(int32_t);
    t->post_after = (int32_t *)(void *)b->post_after.data;
    b->post_after = (tok_buf){0};

    /* ids: the model's strings, then the added tokens' (what decode reads first) */
    int64_t max_id = -1;
    for (size_t i = 0; i < n_vocab; i++)
        if ((int64_t)vk[3 * i + 2] > max_id) max_id = vk[3 * i + 2];
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].id > max_id) max_id = t->added[i].id;
    if (max_id >= MAX_IDS) {
        st = strix_error(b->bad, "%s: token id %lld is over the limit of %d ids", b->where,
                         (long long)max_id, MAX_IDS);
        goto fail;
    }
    t->n_ids = (int32_t)(max_id + 1);
    size_t nid = (size_t)t->n_ids + 1;
    t->id_off = malloc(nid * sizeof(uint32_t));
    t->id_len = calloc(nid, sizeof(uint32_t));
    t->dec_off = calloc(nid, sizeof(uint32_t));
    t->dec_len = calloc(nid, sizeof(uint32_t));
    t->special = calloc(nid, 1);
    if (!t->id_off || !t->id_len || !t->dec_off || !t->dec_len || !t->special) goto fail_oom;
    for (size_t i = 0; i < nid; i++) t->id_off[i] = NO_TOKEN;
    for (size_t i = 0; i < n_vocab; i++) {
        uint32_t id = vk[3 * i + 2];
        /* the id keeps the string the vocabulary maps to it (a repeated id: the later one) */
        t->id_off[id] = vk[3 * i];
        t->id_len[id] = vk[3 * i + 1];
    }
    for (size_t i = 0; i < t->n_added; i++) {
        t->id_off[t->added[i].id] = t->added[i].match_off;
        t->id_len[t->added[i].id] = t->added[i].match_len;
    }
    /* special: an id whose token is the content of a special added token */
    tok_strmap specials = {0};
    if (!tok_strmap_init(&specials, t->n_added)) goto fail_oom;
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].special &&
            !tok_strmap_put(&specials, t->strings, t->added[i].off, t->added[i].len, 1)) {
            tok_strmap_free(&specials);
            goto fail_oom;
        }
    for (int32_t id = 0; id < t->n_ids; id++)
        if (t->id_off[id] != NO_TOKEN &&
            tok_strmap_get(&specials, t->strings, t->strings + t->id_off[id], t->id_len[id]) >= 0)
            t->special[id] = 1;
    tok_strmap_free(&specials);
    /* each id's decoded bytes */
    tok_buf dec = {0};
    for (int32_t id = 0; id < t->n_ids; id++) {
        if (t->id_off[id] == NO_TOKEN) continue;
        size_t start = dec.len;
        const char *s = t->strings + t->id_off[id];
        bool ok = t->decoder == TOK_DEC_BYTELEVEL ? bytelevel_bytes(s, t->id_len[id], &dec)
                                                  : tok_buf_append(&dec, s, t->id_len[id]);
        if (!ok || dec.len > UINT32_MAX) {
            tok_buf_free(&dec);
            goto fail_oom;
        }
        t->dec_off[id] = (uint32_t)start;
        t->dec_len[id] = (uint32_t)(dec.len - start);
    }
    t->dec = dec.data ? dec.data : malloc(1);
    if (!t->dec) goto fail_oom;
    /* the byte-level character of each byte as a model id */
    for (int byte = 0; byte < 256; byte++) {
        char c[2];
        uint16_t ch = tok_byte_char[byte];
        size_t n = 1;
        if (ch < 0x80) {
            c[0] = (char)ch;
        } else {
            c[0] = (char)(0xC0 | (ch >> 6));
            c[1] = (char)(0x80 | (ch & 0x3F));
            n = 2;
        }
        t->byte_id[byte] = tok_strmap_get(&t->vocab, t->strings, c, n);
    }
    st = index_added(t);
    if (st != STRIX_OK) goto fail;
    if (t->bos >= t->n_ids || t->eos >= t->n_ids || t->pad >= t->n_ids) {
        st = strix_error(b->bad, "%s: bos/eos/pad id out of range (vocabulary size %d)", b->where,
                         (int)t->n_ids);
        goto fail;
    }
    for (size_t i = 0; i < t->n_post_before + t->n_post_after; i++) {
        int32_t id = i < t->n_post_before ? t->post_before[i]
                                          : t->post_after[i - t->n_post_before];
        if (id < 0 || id >= t->n_ids) {
            st = strix_error(b->bad, "%s: post-processor id %d out of range (vocabulary size %d)",
                             b->where, (int)id, (int)t->n_ids);
            goto fail;
        }
    }
    b->t = NULL;
    tok_builder_abort(b); /* the rest of the builder */
    *out = t;
    return STRIX_OK;
fail_oom:
    st = oom();
fail:
    tok_buf_free(&cat);
    tok_builder_abort(b);
    return st;
}

// ---- vocabulary --------------------------------------------------------------------------------

size_t strix_tokenizer_vocab_size(const strix_tokenizer *t) { return (size_t)t->n_ids; }

int32_t strix_tokenizer_token_id(const strix_tokenizer *t, const char *token, size_t len) {
    if (!token && len) return -1;
    int32_t k = tok_strmap_get(&t->added_map, t->strings, token ? token : "", len);
    if (k >= 0) return t->added[k].id;
    return tok_strmap_get(&t->vocab, t->strings, token ? token : "", len);
}

bool strix_tokenizer_is_special(const strix_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_ids && t->special[id];
}

int32_t strix_tokenizer_bos(const strix_tokenizer *t) { return t->bos; }
int32_t strix_tokenizer_eos(const strix_tokenizer *t) { return t->eos; }

strix_status strix_tokenizer_set_bos_eos(strix_tokenizer *t, int32_t bos, int32_t eos) {
    int32_t v[2] = {bos, eos};
    for (int i = 0; i < 2; i++)
        if (v[i] < -1 || v[i] >= t->n_ids || (v[i] >= 0 && t->id_off[v[i]] == NO_TOKEN))
            return strix_error(STRIX_ERR_ARG, "tokenizer: %s id %d has no token (vocabulary size "
                               "%d)", i ? "eos" : "bos", (int)v[i], (int)t->n_ids);
    t->bos = bos;
    t->eos = eos;
    return STRIX_OK;
}

// ---- encoding ----------------------------------------------------------------------------------

typedef struct enc {
    const strix_tokenizer *t;
    bool parse_special;
    pcre2_match_data *md;
    tok_buf *out, *scratch;
} enc;

/* Whether s[0..n) ends with a \w character (Rust regex \w$). */
static bool ends_with_word(const char *s, size_t n) {
    if (n == 0) return false;
    size_t i = n - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
    size_t adv;
    return tok_is_word(tok_utf8_decode(s, n, i, &adv));
}

static bool starts_with_word(const char *s, size_t n) {
    size_t adv;
    return n > 0 && tok_is_word(tok_utf8_decode(s, n, 0, &adv));
}

/* Start of the whitespace that ends s[0..n) (\s*$). */
static size_t trailing_space_start(const char *s, size_t n) {
    size_t end = n;
    while (end > 0) {
        size_t i = end - 1;
        while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
        size_t adv;
        if (!tok_is_space(tok_utf8_decode(s, n, i, &adv))) break;
        end = i;
    }
    return end;
}

/* Length of the whitespace that starts s[0..n) (^\s*). */
static size_t leading_space_len(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t adv;
        if (!tok_is_space(tok_utf8_decode(s, n, i, &adv))) break;
        i += adv;
    }
    return i;
}

static strix_status encode_normalized(const enc *e, const char *s, size_t n);

/* The text between added tokens: set 0 goes on to normalization and set 1, set 1 to the
 * pre-tokenizers. */
static strix_status gap(const enc *e, int set, const char *s, size_t n) {
    if (n == 0) return STRIX_OK;
    if (set == 1) return tok_pretokenize(e->t, 0, s, n, e->md, e->out, e->scratch);
    return encode_normalized(e, s, n);
}

/* Finds the added tokens of `set` in s[0..n) leftmost-longest, non-overlapping (daachorse's
 * leftmost_find_iter) and applies find_matches's rules; tokens go to out, gaps on. */
static strix_status match_added(const enc *e, int set, const char *s, size_t n) {
    const strix_tokenizer *t = e->t;
    if (t->first[set][256] == 0) return gap(e, set, s, n);
    size_t pos = 0, start_offset = 0;
    while (pos < n) {
        unsigned char c = (unsigned char)s[pos];
        const tok_added *hit = NULL;
        for (uint32_t k = t->first[set][c]; k < t->first[set][c + 1]; k++) {
            const tok_added *a = &t->added[t->order[set][k]];
            if (a->match_len <= n - pos &&
                memcmp(s + pos, t->strings + a->match_off, a->match_len) == 0) {
                hit = a; /* the longest, as they are sorted longest first */
                break;
            }
        }
        if (!hit) {
            pos++;
            continue;
        }
        size_t start = pos, stop = pos + hit->match_len;
        pos = stop; /* the next search starts after this match, used or not */
        if (hit->special && !e->parse_special) continue;
        if (hit->single_word) {
            bool start_space = start == 0 || !ends_with_word(s, start);
            bool stop_space = stop == n || !starts_with_word(s + stop, n - stop);
            if (!start_space || !stop_space) continue;
        }
        if (hit->lstrip) {
            size_t ns = trailing_space_start(s, start);
            start = ns > start_offset ? ns : start_offset;
        }
        if (hit->rstrip) stop += leading_space_len(s + stop, n - stop);
        if (start_offset < start) STRIX_TRY(gap(e, set, s + start_offset, start - start_offset));
        if (!tok_buf_push_i32(e->out, hit->id)) return oom();
        start_offset = stop;
        if (pos < stop) pos = stop;
    }
    if (start_offset < n) STRIX_TRY(gap(e, set, s + start_offset, n - start_offset));
    return STRIX_OK;
}

static strix_status encode_normalized(const enc *e, const char *s, size_t n) {
    if (!e->t->nfc || all_ascii(s, n)) return match_added(e, 1, s, n);
    char *norm = NULL;
    size_t norm_len = 0;
    STRIX_TRY(nfc(s, n, &norm, &norm_len));
    strix_status st = match_added(e, 1, norm, norm_len);
    free(norm);
    return st;
}

strix_status strix_tokenizer_encode(const strix_tokenizer *t, const char *text, size_t len,
                                    bool add_special, bool parse_special, int32_t **ids,
                                    size_t *n) {
    *ids = NULL;
    *n = 0;
    if (!text && len) return strix_error(STRIX_ERR_ARG, "tokenizer: text is NULL");
    size_t bad = tok_utf8_invalid_at(text, len);
    if (bad < len)
        return strix_error(STRIX_ERR_ARG, "tokenizer: the text is not valid UTF-8 at byte offset "
                           "%zu (byte 0x%02X)", bad, (unsigned)(unsigned char)text[bad]);
    tok_buf out = {0}, scratch = {0};
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    strix_status st = md && tok_buf_reserve(&out, 4 + len / 2) ? STRIX_OK : oom();
    enc e = {t, parse_special, md, &out, &scratch};
    if (st == STRIX_OK && add_special &&
        !tok_buf_append(&out, t->post_before, t->n_post_before * sizeof(int32_t)))
        st = oom();
    if (st == STRIX_OK && len) st = match_added(&e, 0, text, len);
    if (st == STRIX_OK && add_special &&
        !tok_buf_append(&out, t->post_after, t->n_post_after * sizeof(int32_t)))
        st = oom();
    pcre2_match_data_free(md);
    tok_buf_free(&scratch);
    if (st != STRIX_OK) {
        tok_buf_free(&out);
        return st;
    }
    *ids = (int32_t *)(void *)out.data;
    *n = out.len / sizeof(int32_t);
    return STRIX_OK;
}

// ---- decoding ----------------------------------------------------------------------------------

static strix_status check_id(const strix_tokenizer *t, int32_t id, size_t i) {
    if (id < 0 || id >= t->n_ids)
        return strix_error(STRIX_ERR_ARG, "tokenizer: id %d at position %zu is out of range "
                           "(vocabulary size %d)", (int)id, i, (int)t->n_ids);
    if (t->id_off[id] == NO_TOKEN)
        return strix_error(STRIX_ERR_ARG, "tokenizer: id %d at position %zu has no token", (int)id,
                           i);
    return STRIX_OK;
}

strix_status strix_tokenizer_decode(const strix_tokenizer *t, const int32_t *ids, size_t n,
                                    bool skip_special, char **text, size_t *len) {
    *text = NULL;
    if (len) *len = 0;
    if (!ids && n) return strix_error(STRIX_ERR_ARG, "tokenizer: ids is NULL");
    for (size_t i = 0; i < n; i++) STRIX_TRY(check_id(t, ids[i], i));
    tok_buf raw = {0}, res = {0};
    bool ok = true, first = true;
    for (size_t i = 0; ok && i < n; i++) {
        int32_t id = ids[i];
        if (skip_special && t->special[id]) continue;
        if (t->decoder == TOK_DEC_NONE && !first) ok = tok_buf_append(&raw, " ", 1);
        first = false;
        ok = ok && tok_buf_append(&raw, t->dec + t->dec_off[id], t->dec_len[id]);
    }
    ok = ok && tok_utf8_lossy(&res, raw.data ? raw.data : "", raw.len) &&
         tok_buf_append(&res, "", 1);
    tok_buf_free(&raw);
    if (!ok) {
        tok_buf_free(&res);
        return oom();
    }
    *text = res.data;
    if (len) *len = res.len - 1;
    return STRIX_OK;
}

size_t strix_tokenizer_token_bytes(const strix_tokenizer *t, int32_t id, char *buf, size_t cap) {
    if (id < 0 || id >= t->n_ids || t->id_off[id] == NO_TOKEN) return 0;
    size_t n = t->dec_len[id];
    if (buf && cap) memcpy(buf, t->dec + t->dec_off[id], n < cap ? n : cap);
    return n;
}
