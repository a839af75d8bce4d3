/*
 * tokenizer_json.c - strix_tokenizer_load_json / strix_tokenizer_from_json: a Hugging Face
 * tokenizer.json (the tokenizers library's serialization: tokenizer/serialization.rs, the serde
 * forms of models/bpe, normalizers, pre_tokenizers, processors and decoders) read with cJSON into
 * the builder of tokenizer.c. Every component and option that would change the ids and that strix
 * does not implement is refused by name; the rest (truncation, padding, offsets-only options such
 * as trim_offsets) is ignored.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tok_internal.h"

/* The limit on a tokenizer.json's size (real ones are under 20 MB). */
#define MAX_JSON_BYTES ((size_t)1 << 30)

typedef struct jctx {
    tok_builder *b;
    const char *where;
} jctx;

static strix_status bad(const jctx *c, const char *what) {
    return strix_error(STRIX_ERR_FORMAT, "%s: %s", c->where, what);
}

static strix_status unsupported(const jctx *c, const char *what, const char *name) {
    return strix_error(STRIX_ERR_UNSUPPORTED, "%s: %s %s is not supported", c->where, what, name);
}

/* The "type" string of a component, or "" when it has none. */
static const char *type_of(const cJSON *o) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(t) ? t->valuestring : "";
}

/* A boolean field: absent or null gives `dflt`; anything but a bool is malformed. */
static strix_status get_bool(const jctx *c, const cJSON *o, const char *key, bool dflt, bool *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) {
        *out = dflt;
        return STRIX_OK;
    }
    if (!cJSON_IsBool(v)) {
        char msg[160];
        snprintf(msg, sizeof msg, "\"%s\" is not a boolean", key);
        return bad(c, msg);
    }
    *out = cJSON_IsTrue(v);
    return STRIX_OK;
}

/* Whether a JSON string is valid UTF-8 (cJSON does not check; tokenizers' serde does). */
static strix_status check_utf8(const jctx *c, const char *s, const char *what, size_t index) {
    size_t n = strlen(s);
    if (tok_utf8_invalid_at(s, n) == n) return STRIX_OK;
    return strix_error(STRIX_ERR_FORMAT, "%s: %s %zu is not valid UTF-8", c->where, what, index);
}

/* An exact non-negative integer under 2^31 - 1. */
static bool json_id(const cJSON *v, int32_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!(d >= 0 && d < 2147483647.0) || d != floor(d)) return false;
    *out = (int32_t)d;
    return true;
}

// ---- model -------------------------------------------------------------------------------------

/* One merge: "a b" (exactly one space, as convert_merges_to_hashmap) or ["a", "b"]. */
static strix_status load_merge(const jctx *c, const cJSON *m, size_t rank) {
    char msg[160];
    if (cJSON_IsString(m)) {
        STRIX_TRY(check_utf8(c, m->valuestring, "merge", rank));
        const char *s = m->valuestring, *sp = strchr(s, ' ');
        if (!sp || strchr(sp + 1, ' ')) {
            snprintf(msg, sizeof msg, "merge %zu is not two tokens joined by one space", rank);
            return bad(c, msg);
        }
        return tok_builder_merge(c->b, s, (size_t)(sp - s), sp + 1, strlen(sp + 1));
    }
    if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) &&
        cJSON_IsString(m->child->next)) {
        STRIX_TRY(check_utf8(c, m->child->valuestring, "merge", rank));
        STRIX_TRY(check_utf8(c, m->child->next->valuestring, "merge", rank));
        return tok_builder_merge(c->b, m->child->valuestring, strlen(m->child->valuestring),
                                 m->child->next->valuestring,
                                 strlen(m->child->next->valuestring));
    }
    snprintf(msg, sizeof msg, "merge %zu is neither \"a b\" nor [\"a\", \"b\"]", rank);
    return bad(c, msg);
}

static strix_status load_model(const jctx *c, const cJSON *model) {
    strix_tokenizer *t = c->b->t;
    if (!cJSON_IsObject(model)) return bad(c, "no \"model\" object");
    const char *type = type_of(model);
    if (*type && strcmp(type, "BPE") != 0) return unsupported(c, "model", type);
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (dropout && !cJSON_IsNull(dropout) &&
        !(cJSON_IsNumber(dropout) && dropout->valuedouble == 0.0))
        return unsupported(c, "BPE option", "dropout");
    static const char *const affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, affixes[i]);
        if (v && !cJSON_IsNull(v) && !(cJSON_IsString(v) && v->valuestring[0] == '\0'))
            return unsupported(c, "BPE option", affixes[i]);
    }
    STRIX_TRY(get_bool(c, model, "ignore_merges", false, &t->ignore_merges));
    STRIX_TRY(get_bool(c, model, "byte_fallback", false, &t->byte_fallback));
    STRIX_TRY(get_bool(c, model, "fuse_unk", false, &t->fuse_unk));
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    if (cJSON_IsString(unk)) {
        STRIX_TRY(check_utf8(c, unk->valuestring, "unk_token", 0));
        STRIX_TRY(tok_builder_str(c->b, unk->valuestring, strlen(unk->valuestring),
                                  &c->b->unk_off));
        c->b->unk_len = (uint32_t)strlen(unk->valuestring);
        c->b->has_unk_token = true;
    } else if (unk && !cJSON_IsNull(unk)) {
        return bad(c, "\"unk_token\" is not a string");
    }
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!cJSON_IsObject(vocab)) return bad(c, "the model has no \"vocab\" object");
    size_t index = 0;
    for (const cJSON *e = vocab->child; e; e = e->next, index++) {
        int32_t id;
        if (!json_id(e, &id)) {
            char msg[300];
            snprintf(msg, sizeof msg, "vocab entry \"%.200s\" is not an id (an integer in "
                     "[0, 2^31-1))", e->string ? e->string : "");
            return bad(c, msg);
        }
        STRIX_TRY(check_utf8(c, e->string, "vocab entry", index));
        STRIX_TRY(tok_builder_vocab(c->b, e->string, strlen(e->string), id));
    }
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!cJSON_IsArray(merges)) return bad(c, "the model has no \"merges\" array");
    size_t rank = 0;
    for (const cJSON *m = merges->child; m; m = m->next) {
        if (cJSON_IsString(m) && strncmp(m->valuestring, "#version", 8) == 0) continue;
        STRIX_TRY(load_merge(c, m, rank));
        rank++;
    }
    return STRIX_OK;
}

// ---- added tokens ------------------------------------------------------------------------------

static strix_status load_added(const jctx *c, const cJSON *added) {
    if (!added || cJSON_IsNull(added)) return STRIX_OK;
    if (!cJSON_IsArray(added)) return bad(c, "\"added_tokens\" is not an array");
    size_t i = 0;
    for (const cJSON *a = added->child; a; a = a->next, i++) {
        char msg[160];
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(a, "content");
        const cJSON *idv = cJSON_GetObjectItemCaseSensitive(a, "id");
        int32_t id = -1;
        if (!cJSON_IsObject(a) || !cJSON_IsString(content) || (idv && !json_id(idv, &id))) {
            snprintf(msg, sizeof msg, "added token %zu has no string \"content\" or a bad \"id\"",
                     i);
            return bad(c, msg);
        }
        STRIX_TRY(check_utf8(c, content->valuestring, "added token", i));
        bool special = false, single_word = false, lstrip = false, rstrip = false,
             normalized = false;
        STRIX_TRY(get_bool(c, a, "special", false, &special));
        STRIX_TRY(get_bool(c, a, "single_word", false, &single_word));
        STRIX_TRY(get_bool(c, a, "lstrip", false, &lstrip));
        STRIX_TRY(get_bool(c, a, "rstrip", false, &rstrip));
        STRIX_TRY(get_bool(c, a, "normalized", !special, &normalized));
        STRIX_TRY(tok_builder_added(c->b, content->valuestring, strlen(content->valuestring), id,
                                    special, single_word, lstrip, rstrip, normalized));
    }
    return STRIX_OK;
}

// ---- normalizer --------------------------------------------------------------------------------

static strix_status load_normalizer(const jctx *c, const cJSON *n) {
    if (!n || cJSON_IsNull(n)) return STRIX_OK;
    const char *type = type_of(n);
    if (strcmp(type, "NFC") == 0) {
        c->b->t->nfc = true;
        return STRIX_OK;
    }
    if (strcmp(type, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(n, "normalizers");
        if (!cJSON_IsArray(list)) return bad(c, "normalizer Sequence has no \"normalizers\" array");
        for (const cJSON *m = list->child; m; m = m->next) STRIX_TRY(load_normalizer(c, m));
        return STRIX_OK;
    }
    return unsupported(c, "normalizer", *type ? type : "(without a type)");
}

// ---- pre-tokenizers ----------------------------------------------------------------------------

static strix_status load_split(const jctx *c, const cJSON *p, tok_pre *out) {
    const cJSON *pattern = cJSON_GetObjectItemCaseSensitive(p, "pattern");
    const cJSON *re = cJSON_GetObjectItemCaseSensitive(pattern, "Regex");
    const cJSON *str = cJSON_GetObjectItemCaseSensitive(pattern, "String");
    const cJSON *use = cJSON_IsString(re) ? re : str;
    if (!cJSON_IsString(use)) return bad(c, "Split has no \"pattern\" {\"Regex\"|\"String\": ...}");
    const cJSON *beh = cJSON_GetObjectItemCaseSensitive(p, "behavior");
    if (!cJSON_IsString(beh)) return bad(c, "Split has no \"behavior\"");
    static const struct {
        const char *name;
        tok_behavior b;
    } behaviors[] = {{"Isolated", TOK_ISOLATED},
                     {"Removed", TOK_REMOVED},
                     {"MergedWithPrevious", TOK_MERGED_PREV},
                     {"MergedWithNext", TOK_MERGED_NEXT},
                     {"Contiguous", TOK_CONTIGUOUS}};
    size_t k = 0;
    while (k < 5 && strcmp(behaviors[k].name, beh->valuestring) != 0) k++;
    if (k == 5) return unsupported(c, "Split behavior", beh->valuestring);
    out->kind = TOK_PRE_SPLIT;
    out->behavior = behaviors[k].b;
    STRIX_TRY(get_bool(c, p, "invert", false, &out->invert));
    char err[200];
    out->re = tok_regex_compile(use->valuestring, strlen(use->valuestring), use == str, err,
                                sizeof err);
    if (!out->re) {
        char msg[400];
        snprintf(msg, sizeof msg, "Split pattern \"%.120s\" does not compile: %s",
                 use->valuestring, err);
        return bad(c, msg);
    }
    return STRIX_OK;
}

static strix_status load_pre(const jctx *c, const cJSON *p) {
    const char *type = type_of(p);
    tok_pre pre = {0};
    if (strcmp(type, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(p, "pretokenizers");
        if (!cJSON_IsArray(list))
            return bad(c, "pre_tokenizer Sequence has no \"pretokenizers\" array");
        for (const cJSON *m = list->child; m; m = m->next) STRIX_TRY(load_pre(c, m));
        return STRIX_OK;
    }
    if (strcmp(type, "ByteLevel") == 0) {
        bool use_regex = true;
        pre.kind = TOK_PRE_BYTELEVEL;
        STRIX_TRY(get_bool(c, p, "add_prefix_space", true, &pre.add_prefix_space));
        STRIX_TRY(get_bool(c, p, "use_regex", true, &use_regex));
        if (use_regex) {
            char err[200];
            pre.re = tok_regex_compile(tok_re_gpt2, strlen(tok_re_gpt2), false, err, sizeof err);
            if (!pre.re)
                return strix_error(STRIX_ERR_UNSUPPORTED, "%s: the GPT-2 regex does not compile "
                                   "in this PCRE2: %s", c->where, err);
        }
    } else if (strcmp(type, "Split") == 0) {
        STRIX_TRY(load_split(c, p, &pre));
    } else if (strcmp(type, "Digits") == 0) {
        pre.kind = TOK_PRE_DIGITS;
        STRIX_TRY(get_bool(c, p, "individual_digits", false, &pre.individual_digits));
    } else {
        return unsupported(c, "pre_tokenizer", *type ? type : "(without a type)");
    }
    return tok_builder_pre(c->b, &pre);
}

// ---- post-processor ----------------------------------------------------------------------------

/* TemplateProcessing's single template: special tokens before and after one $A. */
static strix_status load_template(const jctx *c, const cJSON *p) {
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(p, "single");
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(p, "special_tokens");
    if (!cJSON_IsArray(single)) return bad(c, "TemplateProcessing has no \"single\" array");
    tok_builder *b = c->b;
    if (b->post_before.len || b->post_after.len)
        return unsupported(c, "post_processor", "with two TemplateProcessing");
    bool seen_a = false;
    for (const cJSON *piece = single->child; piece; piece = piece->next) {
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(piece, "Sequence");
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(piece, "SpecialToken");
        if (seq) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(seq, "id");
            if (!cJSON_IsString(id) || strcmp(id->valuestring, "A") != 0 || seen_a)
                return unsupported(c, "TemplateProcessing single template", "other than one $A");
            seen_a = true;
            continue;
        }
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(sp, "id");
        if (!cJSON_IsString(name)) return bad(c, "TemplateProcessing piece is not a Sequence or "
                                              "SpecialToken");
        const cJSON *entry = cJSON_GetObjectItemCaseSensitive(specials, name->valuestring);
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(entry, "ids");
        if (!cJSON_IsArray(ids)) {
            char msg[300];
            snprintf(msg, sizeof msg, "TemplateProcessing special token \"%.200s\" has no ids",
                     name->valuestring);
            return bad(c, msg);
        }
        for (const cJSON *v = ids->child; v; v = v->next) {
            int32_t id;
            if (!json_id(v, &id)) return bad(c, "TemplateProcessing id is not an id");
            if (!tok_buf_push_i32(seen_a ? &b->post_after : &b->post_before, id))
                return strix_error(STRIX_ERR_ALLOC, "tokenizer: out of memory");
        }
    }
    if (!seen_a) return unsupported(c, "TemplateProcessing single template", "without $A");
    return STRIX_OK;
}

static strix_status load_post(const jctx *c, const cJSON *p) {
    if (!p || cJSON_IsNull(p)) return STRIX_OK;
    const char *type = type_of(p);
    if (strcmp(type, "ByteLevel") == 0) return STRIX_OK; /* offsets only */
    if (strcmp(type, "TemplateProcessing") == 0) return load_template(c, p);
    if (strcmp(type, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(p, "processors");
        if (!cJSON_IsArray(list)) return bad(c, "post_processor Sequence has no \"processors\"");
        for (const cJSON *m = list->child; m; m = m->next) STRIX_TRY(load_post(c, m));
        return STRIX_OK;
    }
    return unsupported(c, "post_processor", *type ? type : "(without a type)");
}

// ---- the file ----------------------------------------------------------------------------------

static strix_status load(const char *where, const char *json, size_t len, strix_tokenizer **out) {
    *out = NULL;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return strix_error(STRIX_ERR_FORMAT, "%s: not a JSON object", where);
    }
    tok_builder b;
    strix_status st = tok_builder_init(&b, where);
    if (st != STRIX_OK) {
        cJSON_Delete(root);
        return st;
    }
    jctx c = {&b, where};
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (version && !(cJSON_IsString(version) && strcmp(version->valuestring, "1.0") == 0))
        st = unsupported(&c, "version", cJSON_IsString(version) ? version->valuestring : "?");
    if (st == STRIX_OK)
        st = load_model(&c, cJSON_GetObjectItemCaseSensitive(root, "model"));
    if (st == STRIX_OK)
        st = load_added(&c, cJSON_GetObjectItemCaseSensitive(root, "added_tokens"));
    if (st == STRIX_OK)
        st = load_normalizer(&c, cJSON_GetObjectItemCaseSensitive(root, "normalizer"));
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    if (st == STRIX_OK && (!pre || cJSON_IsNull(pre)))
        st = unsupported(&c, "pre_tokenizer", "null (strix reads byte-level BPE only)");
    if (st == STRIX_OK) st = load_pre(&c, pre);
    if (st == STRIX_OK) {
        size_t n = b.pres.len / sizeof(tok_pre), bytelevel = 0;
        const tok_pre *p = (const tok_pre *)(void *)b.pres.data;
        for (size_t i = 0; i < n; i++) bytelevel += p[i].kind == TOK_PRE_BYTELEVEL;
        if (bytelevel != 1 || p[n - 1].kind != TOK_PRE_BYTELEVEL)
            st = unsupported(&c, "pre_tokenizer", "without exactly one ByteLevel, last");
    }
    if (st == STRIX_OK)
        st = load_post(&c, cJSON_GetObjectItemCaseSensitive(root, "post_processor"));
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    if (st == STRIX_OK) {
        if (!dec || cJSON_IsNull(dec)) b.t->decoder = TOK_DEC_NONE;
        else if (strcmp(type_of(dec), "ByteLevel") == 0) b.t->decoder = TOK_DEC_BYTELEVEL;
        else st = unsupported(&c, "decoder", *type_of(dec) ? type_of(dec) : "(without a type)");
    }
    /* BOS: the one special token the single template puts before $A */
    if (st == STRIX_OK && b.post_before.len == sizeof(int32_t))
        memcpy(&b.t->bos, b.post_before.data, sizeof(int32_t));
    cJSON_Delete(root);
    if (st != STRIX_OK) {
        tok_builder_abort(&b);
        return st;
    }
    return tok_builder_finish(&b, out);
}

strix_status strix_tokenizer_from_json(const char *json, size_t len, strix_tokenizer **out) {
    if (!json) {
        *out = NULL;
        return strix_error(STRIX_ERR_ARG, "tokenizer.json: NULL text");
    }
    return load("tokenizer.json", json, len, out);
}

strix_status strix_tokenizer_load_json(const char *path, strix_tokenizer **out) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return strix_error(STRIX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    tok_buf buf = {0};
    char chunk[65536];
    size_t got;
    bool too_big = false, no_mem = false;
    while (!too_big && !no_mem && (got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        too_big = buf.len + got > MAX_JSON_BYTES;
        no_mem = !too_big && !tok_buf_append(&buf, chunk, got);
    }
    bool err = ferror(f);
    fclose(f);
    if (err || too_big || no_mem) {
        tok_buf_free(&buf);
        if (err) return strix_error(STRIX_ERR_IO, "%s: read error", path);
        if (too_big) return strix_error(STRIX_ERR_FORMAT, "%s: larger than 1 GB", path);
        return strix_error(STRIX_ERR_ALLOC, "tokenizer: out of memory");
    }
    strix_status st = load(path, buf.data ? buf.data : "", buf.len, out);
    tok_buf_free(&buf);
    return st;
}
