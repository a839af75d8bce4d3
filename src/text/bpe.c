/*
 * bpe.c - the BPE model of the tokenizer (strix/tokenizer.h): the byte buffers and hash maps the
 * tokenizer keeps its vocabulary and merge ranks in, and the merge loop of one pre-token as
 * tokenizers' models/bpe (model.rs merge_word, word.rs merge_all) runs it: one symbol per byte's
 * character, a heap of the adjacent pairs that have a merge ordered by (rank, position), the
 * lowest popped and merged unless the entry went stale, the pairs it forms with its neighbours
 * pushed. Does not split text or map bytes to characters beyond the byte table (pretok.c).
 */
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

// ---- byte buffers ------------------------------------------------------------------------------

bool tok_buf_reserve(tok_buf *b, size_t extra) {
    if (extra <= b->cap - b->len) return true;
    if (extra > SIZE_MAX / 2 - b->len) return false;
    size_t cap = b->cap ? b->cap : 64;
    while (cap - b->len < extra) cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) return false;
    b->data = p;
    b->cap = cap;
    return true;
}

bool tok_buf_append(tok_buf *b, const void *bytes, size_t n) {
    if (!tok_buf_reserve(b, n)) return false;
    if (n) memcpy(b->data + b->len, bytes, n);
    b->len += n;
    return true;
}

bool tok_buf_push_i32(tok_buf *b, int32_t v) { return tok_buf_append(b, &v, sizeof v); }

void tok_buf_free(tok_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

// ---- string map --------------------------------------------------------------------------------

/* FNV-1a, 32 bits. */
uint32_t tok_hash(const void *bytes, size_t n) {
    const unsigned char *p = bytes;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

static size_t pow2_at_least(size_t n) {
    size_t c = 16;
    while (c < n) c *= 2;
    return c;
}

bool tok_strmap_init(tok_strmap *m, size_t expected) {
    m->cap = pow2_at_least(expected * 2 + 1);
    m->count = 0;
    m->slots = malloc(m->cap * sizeof *m->slots);
    if (!m->slots) return false;
    for (size_t i = 0; i < m->cap; i++) m->slots[i].val = -1;
    return true;
}

static bool strmap_grow(tok_strmap *m) {
    tok_strmap bigger = {0};
    bigger.cap = m->cap * 2;
    bigger.slots = malloc(bigger.cap * sizeof *bigger.slots);
    if (!bigger.slots) return false;
    for (size_t i = 0; i < bigger.cap; i++) bigger.slots[i].val = -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->slots[i].val < 0) continue;
        size_t j = m->slots[i].hash & (bigger.cap - 1);
        while (bigger.slots[j].val >= 0) j = (j + 1) & (bigger.cap - 1);
        bigger.slots[j] = m->slots[i];
    }
    bigger.count = m->count;
    free(m->slots);
    *m = bigger;
    return true;
}

bool tok_strmap_put(tok_strmap *m, const char *base, uint32_t off, uint32_t len, int32_t val) {
    if ((m->count + 1) * 2 > m->cap && !strmap_grow(m)) return false;
    uint32_t h = tok_hash(base + off, len);
    size_t j = h & (m->cap - 1);
    while (m->slots[j].val >= 0) {
        tok_strmap_slot *s = &m->slots[j];
        if (s->hash == h && s->len == len && memcmp(base + s->off, base + off, len) == 0) {
            s->val = val; /* a repeated key: the later value wins */
            return true;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->slots[j] = (tok_strmap_slot){.off = off, .len = len, .val = val, .hash = h};
    m->count++;
    return true;
}

int32_t tok_strmap_get(const tok_strmap *m, const char *base, const char *key, size_t len) {
    if (!m->slots || len > UINT32_MAX) return -1;
    uint32_t h = tok_hash(key, len);
    size_t j = h & (m->cap - 1);
    while (m->slots[j].val >= 0) {
        const tok_strmap_slot *s = &m->slots[j];
        if (s->hash == h && s->len == len && memcmp(base + s->off, key, len) == 0) return s->val;
        j = (j + 1) & (m->cap - 1);
    }
    return -1;
}

void tok_strmap_free(tok_strmap *m) {
    free(m->slots);
    m->slots = NULL;
    m->cap = m->count = 0;
}

// ---- pair map ----------------------------------------------------------------------------------

static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }

static size_t pair_hash(uint64_t k) { return (size_t)strix_mix64(k); }

bool tok_pairmap_init(tok_pairmap *m, size_t expected) {
    m->cap = pow2_at_least(expected * 2 + 1);
    m->count = 0;
    m->slots = malloc(m->cap * sizeof *m->slots);
    if (!m->slots) return false;
    for (size_t i = 0; i < m->cap; i++) m->slots[i].key = UINT64_MAX;
    return true;
}

bool tok_pairmap_put(tok_pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t new_id) {
    STRIX_ASSERT((m->count + 1) * 2 <= m->cap, "tokenizer: pair map sized too small");
    uint64_t k = pair_key(a, b);
    size_t j = pair_hash(k) & (m->cap - 1);
    while (m->slots[j].key != UINT64_MAX && m->slots[j].key != k) j = (j + 1) & (m->cap - 1);
    if (m->slots[j].key == UINT64_MAX) m->count++;
    /* a repeated pair takes the later rank, as tokenizers' HashMap collect does */
    m->slots[j] = (tok_pairmap_slot){.key = k, .rank = rank, .new_id = new_id};
    return true;
}

const tok_pairmap_slot *tok_pairmap_get(const tok_pairmap *m, int32_t a, int32_t b) {
    if (!m->slots) return NULL;
    uint64_t k = pair_key(a, b);
    size_t j = pair_hash(k) & (m->cap - 1);
    while (m->slots[j].key != UINT64_MAX) {
        if (m->slots[j].key == k) return &m->slots[j];
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}

void tok_pairmap_free(tok_pairmap *m) {
    free(m->slots);
    m->slots = NULL;
    m->cap = m->count = 0;
}

// ---- the merge loop ----------------------------------------------------------------------------

typedef struct symbol {
    int32_t id;
    int32_t prev, next; /* -1 at the ends */
    int32_t len;        /* bytes covered; 0 once merged into its left neighbour */
} symbol;

typedef struct merge {
    int32_t rank, pos, new_id;
} merge;

/* Heap order: lower rank first, then lower position (word.rs's Ord for Merge). */
static bool merge_before(merge a, merge b) {
    return a.rank != b.rank ? a.rank < b.rank : a.pos < b.pos;
}

static void heap_push(merge *h, size_t *n, merge m) {
    size_t i = (*n)++;
    h[i] = m;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!merge_before(h[i], h[parent])) break;
        merge tmp = h[i];
        h[i] = h[parent];
        h[parent] = tmp;
        i = parent;
    }
}

static merge heap_pop(merge *h, size_t *n) {
    merge top = h[0];
    h[0] = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, best = i;
        if (l < *n && merge_before(h[l], h[best])) best = l;
        if (r < *n && merge_before(h[r], h[best])) best = r;
        if (best == i) break;
        merge tmp = h[i];
        h[i] = h[best];
        h[best] = tmp;
        i = best;
    }
    return top;
}

/* Appends a symbol (id covering len bytes) to the word. */
static void word_add(symbol *w, size_t *n, int32_t id, int32_t len) {
    int32_t i = (int32_t)*n;
    w[i] = (symbol){.id = id, .prev = i - 1, .next = -1, .len = len};
    if (i > 0) w[i - 1].next = i;
    (*n)++;
}

bool tok_bpe(const strix_tokenizer *t, const unsigned char *piece, size_t n, tok_buf *out,
             tok_buf *scratch) {
    if (n == 0) return true;
    if (n > INT32_MAX / 4) return false;
    if (t->ignore_merges) {
        /* the whole piece when the vocabulary has it (model.rs tokenize_with_cache) */
        scratch->len = 0;
        if (!tok_buf_reserve(scratch, 2 * n)) return false;
        char *mapped = scratch->data;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            uint16_t c = tok_byte_char[piece[i]];
            if (c < 0x80) {
                mapped[k++] = (char)c;
            } else {
                mapped[k++] = (char)(0xC0 | (c >> 6));
                mapped[k++] = (char)(0x80 | (c & 0x3F));
            }
        }
        int32_t id = tok_strmap_get(&t->vocab, t->strings, mapped, k);
        if (id >= 0) return tok_buf_push_i32(out, id);
    }
    /* symbols and heap in the scratch buffer: up to 2n symbols (byte fallback), 4n heap entries */
    scratch->len = 0;
    size_t need = 2 * n * sizeof(symbol) + 4 * n * sizeof(merge) + 16;
    if (!tok_buf_reserve(scratch, need)) return false;
    symbol *w = (symbol *)(void *)scratch->data;
    merge *heap = (merge *)(void *)(scratch->data + 2 * n * sizeof(symbol));
    size_t nw = 0, nh = 0;
    int32_t unk_len = 0; /* a pending unknown run (bytes), fused when fuse_unk */
    for (size_t i = 0; i < n; i++) {
        int32_t id = t->byte_id[piece[i]];
        if (id >= 0) {
            if (unk_len) word_add(w, &nw, t->unk_id, unk_len);
            unk_len = 0;
            word_add(w, &nw, id, 1);
            continue;
        }
        if (t->byte_fallback) {
            /* "<0xXX>" for each UTF-8 byte of the byte's character (merge_word works on the
             * byte-level string; Rust's {:#04X}: lower-case 0x, upper-case digits), all or none */
            static const char hex[] = "0123456789ABCDEF";
            uint16_t ch = tok_byte_char[piece[i]];
            unsigned char utf[2] = {(unsigned char)ch, 0};
            int nu = 1;
            if (ch >= 0x80) {
                utf[0] = (unsigned char)(0xC0 | (ch >> 6));
                utf[1] = (unsigned char)(0x80 | (ch & 0x3F));
                nu = 2;
            }
            int32_t fb[2] = {-1, -1};
            for (int k = 0; k < nu; k++) {
                char code[6] = {'<', '0', 'x', hex[utf[k] >> 4], hex[utf[k] & 15], '>'};
                fb[k] = tok_strmap_get(&t->vocab, t->strings, code, sizeof code);
            }
            if (fb[0] >= 0 && (nu == 1 || fb[1] >= 0)) { /* the pending unk is not flushed first,
                                                          * as in merge_word */
                for (int k = 0; k < nu; k++) word_add(w, &nw, fb[k], 1);
                continue;
            }
        }
        if (t->unk_id >= 0) {
            if (unk_len && !t->fuse_unk) {
                word_add(w, &nw, t->unk_id, unk_len);
                unk_len = 0;
            }
            unk_len += 1;
        } /* no unk token: the byte is dropped */
    }
    if (unk_len) word_add(w, &nw, t->unk_id, unk_len);

    for (size_t i = 0; i + 1 < nw; i++) {
        const tok_pairmap_slot *m = tok_pairmap_get(&t->merges, w[i].id, w[i + 1].id);
        if (m) heap_push(heap, &nh, (merge){m->rank, (int32_t)i, m->new_id});
    }
    while (nh > 0) {
        merge top = heap_pop(heap, &nh);
        symbol *cur = &w[top.pos];
        if (cur->len == 0 || cur->next < 0) continue;
        symbol *right = &w[cur->next];
        const tok_pairmap_slot *m = tok_pairmap_get(&t->merges, cur->id, right->id);
        if (!m || m->new_id != top.new_id) continue; /* a stale entry */
        cur->id = top.new_id;
        cur->len += right->len;
        right->len = 0;
        cur->next = right->next;
        if (cur->next >= 0) w[cur->next].prev = top.pos;
        /* each merge removes a symbol and pushes at most two entries: 2n bounds the heap */
        if (cur->prev >= 0) {
            const tok_pairmap_slot *p = tok_pairmap_get(&t->merges, w[cur->prev].id, cur->id);
            if (p) heap_push(heap, &nh, (merge){p->rank, cur->prev, p->new_id});
        }
        if (cur->next >= 0) {
            const tok_pairmap_slot *p = tok_pairmap_get(&t->merges, cur->id, w[cur->next].id);
            if (p) heap_push(heap, &nh, (merge){p->rank, top.pos, p->new_id});
        }
    }
    for (size_t i = 0; i < nw; i++)
        if (w[i].len > 0 && !tok_buf_push_i32(out, w[i].id)) return false;
    return true;
}
