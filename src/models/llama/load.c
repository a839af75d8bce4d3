/*
 * load.c - strix_llama_load and the model's memory: the backend, the parameter block with each
 * layer's views, the RoPE tables, the KV cache; a Hugging Face folder's safetensors weights
 * (single or sharded, F32/F16/BF16 upcast exactly), tokenizer.json and chat template; the
 * accessors. GGUF files are read by gguf_load.c into the same model.
 *
 * Every tensor the config implies is checked for presence, dtype and shape, and every tensor of
 * the files must be one of them (the rotary inv_freq buffers of old checkpoints and a tied
 * lm_head.weight are ignored). Weights go through one host staging buffer (the largest tensor)
 * into backend memory. Not here: the forward (forward.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "llama_internal.h"
#include "strix/safetensors.h"

#define LLAMA_DEFAULT_CONTEXT 4096
#define LLAMA_CHUNK 64 /* tokens per decode chunk */

// ---- options -----------------------------------------------------------------------------------

strix_status llama_open_backend(const strix_llama_options *opt, strix_backend **be) {
    const char *name = opt && opt->backend ? opt->backend : "cpu";
    return strix_backend_init(name, be);
}

strix_status llama_choose_context(const char *who, const strix_llama_config *c,
                                  const strix_llama_options *opt, size_t *max_ctx) {
    int want = opt ? opt->max_context : 0;
    if (want < 0)
        return strix_error(STRIX_ERR_ARG, "llama load: max_context %d is negative", want);
    if (want > c->max_position_embeddings)
        return strix_error(STRIX_ERR_ARG,
                           "%s: max_context %d exceeds the model's %d positions", who, want,
                           c->max_position_embeddings);
    if (want == 0)
        want = c->max_position_embeddings < LLAMA_DEFAULT_CONTEXT ? c->max_position_embeddings
                                                                  : LLAMA_DEFAULT_CONTEXT;
    *max_ctx = (size_t)want;
    return STRIX_OK;
}

// ---- memory ------------------------------------------------------------------------------------

/* Hands out views of the parameter block, each 16-float aligned; counts only while base is
 * NULL. */
typedef struct cursor {
    float *base;
    size_t used;
} cursor;

static float *take(cursor *c, size_t n) {
    float *p = c->base ? c->base + c->used : NULL;
    c->used += (n + 15) & ~(size_t)15;
    return p;
}

/* A matrix (rows, cols): a float32 view, or no room when it will hold blocks. */
static void take_mat(cursor *cur, llama_mat *w, size_t rows, size_t cols, bool blocks) {
    w->f = blocks ? NULL : take(cur, rows * cols);
    w->rows = rows;
    w->cols = cols;
}

/* Lays the parameters of m->cfg out over cur (views set when cur->base is not NULL); with
 * mats_in_blocks the weight matrices take no room. */
static void layout(strix_llama *m, cursor *cur, bool mats_in_blocks) {
    const strix_llama_config *c = &m->cfg;
    size_t C = (size_t)c->hidden_size, V = (size_t)c->vocab_size, I = (size_t)c->intermediate_size;
    size_t HD = (size_t)c->num_heads * (size_t)c->head_dim;
    size_t KD = (size_t)c->num_kv_heads * (size_t)c->head_dim, D = (size_t)c->head_dim;
    bool b = mats_in_blocks;
    take_mat(cur, &m->embed, V, C, b);
    for (int l = 0; l < c->num_layers; l++) {
        llama_layer *L = &m->layers[l];
        L->attn_norm = take(cur, C);
        take_mat(cur, &L->wq, HD, C, b);
        take_mat(cur, &L->wk, KD, C, b);
        take_mat(cur, &L->wv, KD, C, b);
        L->bq = c->attention_bias ? take(cur, HD) : NULL;
        L->bk = c->attention_bias ? take(cur, KD) : NULL;
        L->bv = c->attention_bias ? take(cur, KD) : NULL;
        take_mat(cur, &L->wo, C, HD, b);
        L->bo = c->o_bias ? take(cur, C) : NULL;
        L->q_norm = c->qk_norm ? take(cur, D) : NULL;
        L->k_norm = c->qk_norm ? take(cur, D) : NULL;
        L->ffn_norm = take(cur, C);
        take_mat(cur, &L->wg, I, C, b);
        take_mat(cur, &L->wu, I, C, b);
        take_mat(cur, &L->wd, C, I, b);
    }
    m->final_norm = take(cur, C);
    if (!c->tie_word_embeddings) take_mat(cur, &m->head, V, C, b);
    m->lm_head = c->tie_word_embeddings ? &m->embed : &m->head;
}

/* The exact parameter count (without the alignment padding of the block). */
static size_t count_params(const strix_llama_config *c) {
    size_t C = (size_t)c->hidden_size, V = (size_t)c->vocab_size, I = (size_t)c->intermediate_size;
    size_t HD = (size_t)c->num_heads * (size_t)c->head_dim;
    size_t KD = (size_t)c->num_kv_heads * (size_t)c->head_dim, D = (size_t)c->head_dim;
    size_t per = 2 * C + HD * C + 2 * KD * C + C * HD + 3 * I * C;
    if (c->attention_bias) per += HD + 2 * KD;
    if (c->o_bias) per += C;
    if (c->qk_norm) per += 2 * D;
    return V * C * (c->tie_word_embeddings ? 1 : 2) + (size_t)c->num_layers * per + C;
}

/* cos/sin tables (max_ctx, D/2) of the config's frequencies, in double, rounded once. */
static strix_status rope_tables(strix_llama *m) {
    size_t half = (size_t)m->cfg.head_dim / 2, n = m->max_ctx * half;
    double *inv = malloc(half * sizeof *inv);
    float *host = malloc(2 * n * sizeof *host);
    strix_status s = STRIX_OK;
    if (!inv || !host) s = strix_error(STRIX_ERR_ALLOC, "llama: out of memory (RoPE tables)");
    if (s == STRIX_OK) {
        llama_rope_inv_freq(&m->cfg, m->rope_freq_factors, inv);
        for (size_t p = 0; p < m->max_ctx; p++)
            for (size_t i = 0; i < half; i++) {
                double angle = (double)p * inv[i];
                host[p * half + i] = (float)cos(angle);
                host[n + p * half + i] = (float)sin(angle);
            }
        s = strix_alloc(m->be, 2 * n * sizeof(float), (void **)&m->rope_cos);
    }
    if (s == STRIX_OK) {
        m->rope_sin = m->rope_cos + n;
        s = strix_copy(m->be, m->rope_cos, host, 2 * n * sizeof(float), STRIX_COPY_H2D);
    }
    free(inv);
    free(host);
    return s;
}

strix_status llama_alloc(strix_backend *be, const strix_llama_config *c, size_t max_ctx,
                         const float *rope_factors, bool mats_in_blocks, strix_llama **out) {
    *out = NULL;
    strix_llama *m = calloc(1, sizeof *m);
    if (!m) {
        strix_backend_free(be);
        return strix_error(STRIX_ERR_ALLOC, "llama: out of memory");
    }
    m->be = be;
    m->cfg = *c;
    m->max_ctx = max_ctx;
    strix_status s = STRIX_OK;
    m->layers = calloc((size_t)c->num_layers, sizeof *m->layers);
    if (!m->layers) s = strix_error(STRIX_ERR_ALLOC, "llama: out of memory");
    if (s == STRIX_OK && c->rope_scaling == STRIX_LLAMA_ROPE_FACTORS) {
        size_t half = (size_t)c->head_dim / 2;
        m->rope_freq_factors = malloc(half * sizeof(float));
        if (!m->rope_freq_factors) s = strix_error(STRIX_ERR_ALLOC, "llama: out of memory");
        else memcpy(m->rope_freq_factors, rope_factors, half * sizeof(float));
    }
    cursor cur = {0};
    if (s == STRIX_OK) {
        layout(m, &cur, mats_in_blocks);
        m->n_params = count_params(c);
        s = strix_alloc(be, cur.used * sizeof(float), (void **)&m->params);
    }
    if (s == STRIX_OK) {
        cur = (cursor){.base = m->params};
        layout(m, &cur, mats_in_blocks);
        s = strix_fill(be, m->params, 0.0f, cur.used);
    }
    if (s == STRIX_OK) s = rope_tables(m);
    // the KV cache: per layer K then V, each (max_ctx, KV·D)
    size_t kd = (size_t)c->num_kv_heads * (size_t)c->head_dim, per = max_ctx * kd;
    if (s == STRIX_OK)
        s = strix_alloc(be, (size_t)c->num_layers * 2 * per * sizeof(float), (void **)&m->cache);
    for (int l = 0; s == STRIX_OK && l < c->num_layers; l++) {
        m->layers[l].k_cache = m->cache + (size_t)l * 2 * per;
        m->layers[l].v_cache = m->layers[l].k_cache + per;
    }
    m->chunk = max_ctx < LLAMA_CHUNK ? max_ctx : LLAMA_CHUNK;
    if (s == STRIX_OK) s = llama_work_ensure(m, &m->work, m->chunk, max_ctx);
    if (s == STRIX_OK)
        s = strix_alloc(be, m->chunk * (size_t)c->vocab_size * sizeof(float),
                        (void **)&m->logits_dev);
    if (s == STRIX_OK)
        s = strix_alloc(be, m->chunk * (size_t)c->hidden_size * sizeof(float),
                        (void **)&m->x_dev);
    if (s == STRIX_OK) s = strix_alloc(be, max_ctx * sizeof(int32_t), (void **)&m->ids_dev);
    if (s != STRIX_OK) {
        strix_llama_free(m);
        return s;
    }
    *out = m;
    return STRIX_OK;
}

strix_status llama_upload(strix_llama *m, float *dst, const float *src, size_t n) {
    return strix_copy(m->be, dst, src, n * sizeof(float), STRIX_COPY_H2D);
}

void llama_mat_free(strix_llama *m, llama_mat *w) {
    if (w->own_dev) strix_free(m->be, w->own_dev);
    free(w->own_host);
    w->own_dev = w->own_host = NULL;
}

void strix_llama_free(strix_llama *m) {
    if (!m) return;
    if (m->be && m->layers) {
        for (int l = 0; l < m->cfg.num_layers; l++) {
            llama_layer *L = &m->layers[l];
            llama_mat *mats[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->wg, &L->wu, &L->wd};
            for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) llama_mat_free(m, mats[i]);
        }
        llama_mat_free(m, &m->embed);
        llama_mat_free(m, &m->head);
    }
    if (m->be) {
        llama_work_free(m, &m->work);
        strix_free(m->be, m->params);
        strix_free(m->be, m->rope_cos);
        strix_free(m->be, m->cache);
        strix_free(m->be, m->logits_dev);
        strix_free(m->be, m->x_dev);
        strix_free(m->be, m->ids_dev);
        strix_backend_free(m->be);
    }
    free(m->layers);
    free(m->rope_freq_factors);
    strix_tokenizer_free(m->tok);
    free(m->chat_template);
    strix_gguf_free(m->gguf);
    free(m);
}

// ---- accessors ---------------------------------------------------------------------------------

const strix_llama_config *strix_llama_get_config(const strix_llama *m) { return &m->cfg; }
strix_backend *strix_llama_backend(const strix_llama *m) { return m->be; }
size_t strix_llama_max_context(const strix_llama *m) { return m->max_ctx; }
const strix_tokenizer *strix_llama_tokenizer(const strix_llama *m) { return m->tok; }
const char *strix_llama_chat_template(const strix_llama *m) { return m->chat_template; }
size_t strix_llama_parameter_count(const strix_llama *m) { return m->n_params; }
size_t strix_llama_cached(const strix_llama *m) { return m->cached; }

// ---- safetensors -------------------------------------------------------------------------------

/* The weights of a folder: one file or a sharded set. */
typedef struct st_source {
    strix_safetensors *single;
    strix_st_set *set;
    char path[STRIX_PATH_MAX]; /* the file errors name */
} st_source;

static const strix_st_tensor *src_find(const st_source *src, const char *name,
                                       const strix_safetensors **owner) {
    if (src->single) {
        *owner = src->single;
        return strix_safetensors_find(src->single, name);
    }
    return strix_st_set_find(src->set, name, owner);
}

static int src_count(const st_source *src) {
    return src->single ? strix_safetensors_count(src->single) : strix_st_set_count(src->set);
}

static const strix_st_tensor *src_at(const st_source *src, int i) {
    return src->single ? strix_safetensors_at(src->single, i) : strix_st_set_at(src->set, i);
}

/* One tensor the model expects: its HF name, shape and destination. */
typedef struct expected {
    char name[96];
    int ndim;
    int64_t shape[2];
    float *dst;
} expected;

/* The tensors of m->cfg with HF names into list (count returned; list NULL counts only). */
static int expected_tensors(const strix_llama *m, expected *list) {
    const strix_llama_config *c = &m->cfg;
    int64_t C = c->hidden_size, V = c->vocab_size, I = c->intermediate_size, D = c->head_dim;
    int64_t HD = (int64_t)c->num_heads * D, KD = (int64_t)c->num_kv_heads * D;
    int n = 0;
#define EXPECT(dst_, r_, c_, ...)                                                              \
    do {                                                                                       \
        if (list) {                                                                            \
            expected *e = &list[n];                                                            \
            snprintf(e->name, sizeof e->name, __VA_ARGS__);                                    \
            e->ndim = (c_) > 0 ? 2 : 1;                                                        \
            e->shape[0] = (r_);                                                                \
            e->shape[1] = (c_);                                                                \
            e->dst = (dst_);                                                                   \
        }                                                                                      \
        n++;                                                                                   \
    } while (0)
    EXPECT(m->embed.f, V, C, "model.embed_tokens.weight");
    for (int l = 0; l < c->num_layers; l++) {
        const llama_layer *L = &m->layers[l];
        EXPECT(L->attn_norm, C, 0, "model.layers.%d.input_layernorm.weight", l);
        EXPECT(L->wq.f, HD, C, "model.layers.%d.self_attn.q_proj.weight", l);
        EXPECT(L->wk.f, KD, C, "model.layers.%d.self_attn.k_proj.weight", l);
        EXPECT(L->wv.f, KD, C, "model.layers.%d.self_attn.v_proj.weight", l);
        if (c->attention_bias) {
            EXPECT(L->bq, HD, 0, "model.layers.%d.self_attn.q_proj.bias", l);
            EXPECT(L->bk, KD, 0, "model.layers.%d.self_attn.k_proj.bias", l);
            EXPECT(L->bv, KD, 0, "model.layers.%d.self_attn.v_proj.bias", l);
        }
        EXPECT(L->wo.f, C, HD, "model.layers.%d.self_attn.o_proj.weight", l);
        if (c->o_bias) EXPECT(L->bo, C, 0, "model.layers.%d.self_attn.o_proj.bias", l);
        if (c->qk_norm) {
            EXPECT(L->q_norm, D, 0, "model.layers.%d.self_attn.q_norm.weight", l);
            EXPECT(L->k_norm, D, 0, "model.layers.%d.self_attn.k_norm.weight", l);
        }
        EXPECT(L->ffn_norm, C, 0, "model.layers.%d.post_attention_layernorm.weight", l);
        EXPECT(L->wg.f, I, C, "model.layers.%d.mlp.gate_proj.weight", l);
        EXPECT(L->wu.f, I, C, "model.layers.%d.mlp.up_proj.weight", l);
        EXPECT(L->wd.f, C, I, "model.layers.%d.mlp.down_proj.weight", l);
    }
    EXPECT(m->final_norm, C, 0, "model.norm.weight");
    if (!c->tie_word_embeddings) EXPECT(m->head.f, V, C, "lm_head.weight");
#undef EXPECT
    return n;
}

static void shape_text(char *buf, size_t cap, int ndim, const int64_t *shape) {
    int at = snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && at > 0 && (size_t)at < cap; d++)
        at += snprintf(buf + at, cap - (size_t)at, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (at > 0 && (size_t)at < cap) snprintf(buf + at, cap - (size_t)at, "]");
}

/* Whether t's name and shape are e's. */
static bool same_shape(const strix_st_tensor *t, const expected *e) {
    if (t->ndim != e->ndim) return false;
    for (int d = 0; d < e->ndim; d++)
        if (t->shape[d] != e->shape[d]) return false;
    return true;
}

static strix_status shape_error(const char *who, const char *name, const strix_st_tensor *t,
                                const expected *e) {
    char got[96], want[96];
    shape_text(got, sizeof got, t->ndim, t->shape);
    shape_text(want, sizeof want, e->ndim, e->shape);
    return strix_error(STRIX_ERR_FORMAT, "%s: tensor %s has shape %s, expected %s", who, name,
                       got, want);
}

/* Every tensor of the files is one of list[0..n) (or an ignorable one). */
static strix_status check_extra(const strix_llama *m, const st_source *src, const expected *list,
                                int n) {
    int count = src_count(src);
    for (int i = 0; i < count; i++) {
        const strix_st_tensor *t = src_at(src, i);
        bool known = false;
        for (int j = 0; j < n && !known; j++) known = strcmp(list[j].name, t->name) == 0;
        if (known) continue;
        size_t len = strlen(t->name);
        const char *suffix = "rotary_emb.inv_freq";
        if (len >= strlen(suffix) && strcmp(t->name + len - strlen(suffix), suffix) == 0)
            continue; /* a buffer older transformers saved */
        if (m->cfg.tie_word_embeddings && strcmp(t->name, "lm_head.weight") == 0) {
            expected e = {.ndim = 2, .shape = {m->cfg.vocab_size, m->cfg.hidden_size}};
            if (!same_shape(t, &e)) return shape_error(src->path, t->name, t, &e);
            continue; /* tied: the embedding serves */
        }
        return strix_error(STRIX_ERR_FORMAT, "%s: unexpected tensor %s (not part of a %s model "
                           "with this config)", src->path, t->name, m->cfg.architecture);
    }
    return STRIX_OK;
}

/* Checks and uploads every expected tensor. */
static strix_status load_tensors(strix_llama *m, const st_source *src) {
    int n = expected_tensors(m, NULL);
    expected *list = calloc((size_t)n, sizeof *list);
    if (!list) return strix_error(STRIX_ERR_ALLOC, "llama: out of memory");
    expected_tensors(m, list);
    strix_status s = check_extra(m, src, list, n);
    size_t biggest = 0;
    for (int i = 0; s == STRIX_OK && i < n; i++) {
        const strix_safetensors *owner;
        const strix_st_tensor *t = src_find(src, list[i].name, &owner);
        if (!t) {
            s = strix_error(STRIX_ERR_FORMAT, "%s: missing tensor %s", src->path, list[i].name);
        } else if (!same_shape(t, &list[i])) {
            s = shape_error(src->path, list[i].name, t, &list[i]);
        } else if (t->dtype != STRIX_ST_F32 && t->dtype != STRIX_ST_F16 &&
                   t->dtype != STRIX_ST_BF16) {
            s = strix_error(STRIX_ERR_FORMAT, "%s: tensor %s has dtype %s (expected F32, F16 or "
                            "BF16)", src->path, list[i].name, strix_st_dtype_name(t->dtype));
        }
        size_t cols = list[i].ndim == 2 ? (size_t)list[i].shape[1] : 1;
        size_t numel = (size_t)list[i].shape[0] * cols;
        if (numel > biggest) biggest = numel;
    }
    float *staging = s == STRIX_OK ? malloc(biggest * sizeof(float)) : NULL;
    if (s == STRIX_OK && !staging) s = strix_error(STRIX_ERR_ALLOC, "llama: out of memory");
    for (int i = 0; s == STRIX_OK && i < n; i++) {
        const strix_safetensors *owner;
        const strix_st_tensor *t = src_find(src, list[i].name, &owner);
        int64_t numel = strix_st_numel(t);
        s = strix_safetensors_to_f32(owner, t, staging, numel);
        if (s == STRIX_OK) s = llama_upload(m, list[i].dst, staging, (size_t)numel);
    }
    free(staging);
    free(list);
    return s;
}

// ---- a Hugging Face folder ---------------------------------------------------------------------

static bool is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* "<dir>/<name>" into buf; STRIX_ERR_ARG when too long. */
static strix_status join(char *buf, size_t cap, const char *dir, const char *name) {
    int n = snprintf(buf, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap)
        return strix_error(STRIX_ERR_ARG, "llama load: path too long: %s/%s", dir, name);
    return STRIX_OK;
}

/* The chat template of a folder: tokenizer_config.json's "chat_template" (a string, or a list of
 * {name, template} where "default" is taken), else chat_template.jinja; NULL when neither. */
static strix_status load_chat_template(const char *dir, char **out) {
    *out = NULL;
    char path[STRIX_PATH_MAX];
    STRIX_TRY(join(path, sizeof path, dir, "tokenizer_config.json"));
    FILE *f = is_file(path) ? fopen(path, "rb") : NULL;
    char *text = NULL;
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (f && size >= 0 && size < (64L << 20) && fseek(f, 0, SEEK_SET) == 0) {
        text = malloc((size_t)size + 1);
        if (text && fread(text, 1, (size_t)size, f) == (size_t)size) text[size] = '\0';
        else free(text), text = NULL;
    }
    if (f) fclose(f);
    if (text) {
        cJSON *root = cJSON_Parse(text);
        free(text);
        const cJSON *ct = root ? cJSON_GetObjectItemCaseSensitive(root, "chat_template") : NULL;
        const char *tmpl = NULL;
        if (cJSON_IsString(ct)) {
            tmpl = ct->valuestring;
        } else if (cJSON_IsArray(ct)) {
            const cJSON *e;
            cJSON_ArrayForEach(e, ct) {
                const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
                const cJSON *tp = cJSON_GetObjectItemCaseSensitive(e, "template");
                if (cJSON_IsString(nm) && cJSON_IsString(tp) &&
                    strcmp(nm->valuestring, "default") == 0)
                    tmpl = tp->valuestring;
            }
        }
        if (tmpl) {
            size_t len = strlen(tmpl);
            *out = malloc(len + 1);
            if (*out) memcpy(*out, tmpl, len + 1);
            cJSON_Delete(root);
            return *out ? STRIX_OK : strix_error(STRIX_ERR_ALLOC, "llama: out of memory");
        }
        cJSON_Delete(root);
    }
    STRIX_TRY(join(path, sizeof path, dir, "chat_template.jinja"));
    if (!is_file(path)) return STRIX_OK;
    f = fopen(path, "rb");
    if (!f) return strix_error(STRIX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    char *buf = size >= 0 && size < (16L << 20) ? malloc((size_t)size + 1) : NULL;
    bool ok = buf && fseek(f, 0, SEEK_SET) == 0 && fread(buf, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    if (!ok) {
        free(buf);
        return strix_error(STRIX_ERR_IO, "%s: cannot read", path);
    }
    buf[size] = '\0';
    *out = buf;
    return STRIX_OK;
}

/* The tokenizer of a folder (tokenizer.json; NULL when absent) with the config's BOS/EOS. */
static strix_status load_tokenizer(strix_llama *m, const char *dir) {
    char path[STRIX_PATH_MAX];
    STRIX_TRY(join(path, sizeof path, dir, "tokenizer.json"));
    if (!is_file(path)) return STRIX_OK;
    STRIX_TRY(strix_tokenizer_load_json(path, &m->tok));
    int32_t bos = m->cfg.bos_token_id, eos = m->cfg.n_eos > 0 ? m->cfg.eos_token_ids[0] : -1;
    size_t vocab = strix_tokenizer_vocab_size(m->tok);
    if (bos >= (int32_t)vocab) bos = -1;
    if (eos >= (int32_t)vocab) eos = -1;
    if (bos >= 0 || eos >= 0) STRIX_TRY(strix_tokenizer_set_bos_eos(m->tok, bos, eos));
    return STRIX_OK;
}

static strix_status load_folder(const char *dir, const strix_llama_options *opt,
                                strix_llama **out) {
    char cfg_path[STRIX_PATH_MAX], gen_path[STRIX_PATH_MAX];
    st_source src = {0};
    STRIX_TRY(join(cfg_path, sizeof cfg_path, dir, "config.json"));
    STRIX_TRY(join(gen_path, sizeof gen_path, dir, "generation_config.json"));
    if (!is_file(cfg_path))
        return strix_error(STRIX_ERR_IO, "%s: no config.json (a model folder or a .gguf file "
                           "is expected)", dir);
    strix_llama_config c;
    STRIX_TRY(llama_config_from_json(cfg_path, gen_path, &c));
    size_t max_ctx = 0;
    STRIX_TRY(llama_choose_context(cfg_path, &c, opt, &max_ctx));
    // the weights: model.safetensors, else the sharded index
    strix_st_read_options ro = {.lazy = true};
    STRIX_TRY(join(src.path, sizeof src.path, dir, "model.safetensors"));
    if (is_file(src.path)) {
        STRIX_TRY(strix_safetensors_read_ex(src.path, &ro, &src.single));
    } else {
        STRIX_TRY(join(src.path, sizeof src.path, dir, "model.safetensors.index.json"));
        if (!is_file(src.path))
            return strix_error(STRIX_ERR_IO, "%s: neither model.safetensors nor "
                               "model.safetensors.index.json", dir);
        STRIX_TRY(strix_st_set_open(src.path, &ro, &src.set));
    }
    strix_backend *be = NULL;
    strix_llama *m = NULL;
    strix_status s = llama_open_backend(opt, &be);
    if (s == STRIX_OK) s = llama_alloc(be, &c, max_ctx, NULL, false, &m);
    if (s == STRIX_OK) s = load_tensors(m, &src);
    strix_safetensors_free(src.single);
    strix_st_set_free(src.set);
    if (s == STRIX_OK) s = load_tokenizer(m, dir);
    if (s == STRIX_OK) s = load_chat_template(dir, &m->chat_template);
    if (s != STRIX_OK) {
        strix_llama_free(m);
        return s;
    }
    *out = m;
    return STRIX_OK;
}

strix_status strix_llama_load(const char *path, const strix_llama_options *opt,
                              strix_llama **out) {
    *out = NULL;
    if (!path || !*path) return strix_error(STRIX_ERR_ARG, "llama load: empty path");
    struct stat st;
    if (stat(path, &st) != 0)
        return strix_error(STRIX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return load_folder(path, opt, out);
    size_t n = strlen(path);
    if (S_ISREG(st.st_mode) && n > 12 && strcmp(path + n - 12, ".safetensors") == 0)
        return strix_error(STRIX_ERR_ARG, "%s: a safetensors file alone is not a model; give "
                           "the folder that holds it and its config.json", path);
    if (S_ISREG(st.st_mode)) return llama_load_gguf(path, opt, out);
    return strix_error(STRIX_ERR_IO, "%s: neither a model folder nor a .gguf file", path);
}
