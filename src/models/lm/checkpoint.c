/*
 * checkpoint.c - the training checkpoint of every character LM (strix/lm.h): parameters, AdamW moments and the whole run's
 * configuration and position in one safetensors file, and the weights-only file (parameters,
 * config and vocabulary: metadata "contents" = "weights") read by the same open and restore
 * (layout: strix/checkpoint.h).
 *
 * The run's metadata (step, lr, ..., val_loss) is one table, run_fields, read by both the saver
 * and the loader: a new field is one line there.
 *
 * Does not decide what a resumed run may change (the strix tool does) and never loads anything
 * on its own: a checkpoint is read only when a caller names its path.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "strix/checkpoint.h"

#define FORMAT_NAME "strix-gpt"      /* a GPT */
#define FORMAT_NAME_LM "strix-lm"    /* any other architecture, named by metadata "arch" */
#define FORMAT_VERSION "1"
#define CONTENTS_WEIGHTS "weights" /* metadata "contents" of a weights-only file */

struct strix_checkpoint {
    strix_safetensors *st;
    strix_checkpoint_info info;
    char path[STRIX_PATH_MAX];
};

// ---- GPT config as JSON ------------------------------------------------------------------------

static void format_float(char *buf, size_t cap, float x);

/* Adds a float as its shortest exact decimal text. */
static bool add_float(cJSON *obj, const char *key, float v) {
    char text[64];
    format_float(text, sizeof text, v);
    return cJSON_AddRawToObject(obj, key, text) != NULL;
}

strix_status strix_gpt_config_to_json(const strix_gpt_config *c, char **json) {
    *json = NULL;
    cJSON *o = cJSON_CreateObject();
    bool ok = o != NULL;
    ok = ok && cJSON_AddNumberToObject(o, "vocab_size", c->vocab_size);
    ok = ok && cJSON_AddNumberToObject(o, "block_size", c->block_size);
    ok = ok && cJSON_AddNumberToObject(o, "n_layer", c->n_layer);
    ok = ok && cJSON_AddNumberToObject(o, "n_head", c->n_head);
    ok = ok && cJSON_AddNumberToObject(o, "d_model", c->d_model);
    cJSON *heads = ok ? cJSON_AddArrayToObject(o, "head_sizes") : NULL;
    ok = heads != NULL;
    if (ok && c->head_sizes[0] > 0)
        for (int h = 0; ok && h < c->n_head && h < STRIX_GPT_MAX_HEADS; h++)
            ok = cJSON_AddItemToArray(heads, cJSON_CreateNumber(c->head_sizes[h]));
    ok = ok && cJSON_AddNumberToObject(o, "d_ff", c->d_ff);
    const char *act = c->mlp_act == STRIX_ACT_RELU ? "relu" : "gelu";
    ok = ok && cJSON_AddStringToObject(o, "mlp_act", act);
    ok = ok && cJSON_AddBoolToObject(o, "rope", c->rope);
    ok = ok && add_float(o, "rope_base", c->rope_base);
    ok = ok && cJSON_AddBoolToObject(o, "tie_weights", c->tie_weights);
    ok = ok && cJSON_AddBoolToObject(o, "bias", c->bias);
    ok = ok && add_float(o, "ln_eps", c->ln_eps);
    ok = ok && add_float(o, "dropout", c->dropout);
    if (ok) *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return *json ? STRIX_OK : strix_error(STRIX_ERR_ALLOC, "config: out of memory");
}

static bool json_int(const cJSON *o, const char *key, int lo, int hi, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return false;
    *out = (int)v->valuedouble;
    return true;
}

static bool json_bool(const cJSON *o, const char *key, bool *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsBool(v)) return false;
    *out = cJSON_IsTrue(v);
    return true;
}

static bool json_float(const cJSON *o, const char *key, float *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return false;
    *out = (float)v->valuedouble;
    return true;
}

strix_status strix_gpt_config_from_json(const char *json, strix_gpt_config *c) {
    memset(c, 0, sizeof *c);
    cJSON *o = cJSON_Parse(json);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return strix_error(STRIX_ERR_FORMAT, "config is not a JSON object");
    }
    const char *bad = NULL;
    const int big = 1 << 24;
    if (!json_int(o, "vocab_size", 1, 256, &c->vocab_size)) bad = "vocab_size";
    else if (!json_int(o, "block_size", 1, big, &c->block_size)) bad = "block_size";
    else if (!json_int(o, "n_layer", 1, 4096, &c->n_layer)) bad = "n_layer";
    else if (!json_int(o, "n_head", 1, STRIX_GPT_MAX_HEADS, &c->n_head)) bad = "n_head";
    else if (!json_int(o, "d_model", 1, big, &c->d_model)) bad = "d_model";
    else if (!json_int(o, "d_ff", 0, big, &c->d_ff)) bad = "d_ff";
    else if (!json_bool(o, "rope", &c->rope)) bad = "rope";
    else if (!json_float(o, "rope_base", &c->rope_base)) bad = "rope_base";
    else if (!json_bool(o, "tie_weights", &c->tie_weights)) bad = "tie_weights";
    else if (!json_bool(o, "bias", &c->bias)) bad = "bias";
    else if (!json_float(o, "ln_eps", &c->ln_eps)) bad = "ln_eps";
    /* "dropout" came later: a checkpoint without it was trained without dropout */
    else if (cJSON_GetObjectItemCaseSensitive(o, "dropout") &&
             (!json_float(o, "dropout", &c->dropout) || !(c->dropout >= 0.0f) ||
              !(c->dropout < 1.0f)))
        bad = "dropout";
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(o, "mlp_act");
    if (!bad) {
        const char *name = cJSON_IsString(act) ? act->valuestring : "";
        if (strcmp(name, "gelu") == 0) c->mlp_act = STRIX_ACT_GELU;
        else if (strcmp(name, "relu") == 0) c->mlp_act = STRIX_ACT_RELU;
        else bad = "mlp_act";
    }
    const cJSON *heads = cJSON_GetObjectItemCaseSensitive(o, "head_sizes");
    if (!bad) {
        int n = cJSON_GetArraySize(heads);
        if (!cJSON_IsArray(heads) || (n != 0 && n != c->n_head)) bad = "head_sizes";
        for (int h = 0; !bad && h < n; h++) {
            const cJSON *v = cJSON_GetArrayItem(heads, h);
            if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
                v->valuedouble < 1 || v->valuedouble > big)
                bad = "head_sizes";
            else
                c->head_sizes[h] = (int)v->valuedouble;
        }
    }
    cJSON_Delete(o);
    if (bad)
        return strix_error(STRIX_ERR_FORMAT, "config field '%s' is missing or out of range", bad);
    return STRIX_OK;
}

// ---- metadata ----------------------------------------------------------------------------------

#define META_MAX 40

/* Metadata under construction: short values live in `text`, long ones are borrowed. */
typedef struct meta_list {
    strix_st_meta items[META_MAX];
    char text[META_MAX][48];
    int n;
} meta_list;

static void meta_put(meta_list *m, const char *key, const char *value) {
    STRIX_ASSERT(m->n < META_MAX, "metadata list full");
    m->items[m->n].key = key;
    m->items[m->n].value = value;
    m->n++;
}

static void meta_fmt(meta_list *m, const char *key, const char *fmt, ...) STRIX_PRINTF(3, 4);
static void meta_fmt(meta_list *m, const char *key, const char *fmt, ...) {
    STRIX_ASSERT(m->n < META_MAX, "metadata list full");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->text[m->n], sizeof m->text[m->n], fmt, ap);
    va_end(ap);
    meta_put(m, key, m->text[m->n]);
}

/* The shortest "%.Ng" text that reads back as exactly x (at most 9 digits, always exact). */
static void format_float(char *buf, size_t cap, float x) {
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, cap, "%.*g", digits, (double)x);
        if (strtof(buf, NULL) == x || isnan(x)) return;
    }
}

/* The same for a double (at most 17 digits). */
static void format_double(char *buf, size_t cap, double x) {
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, cap, "%.*g", digits, x);
        if (strtod(buf, NULL) == x || isnan(x)) return;
    }
}

static void meta_double(meta_list *m, const char *key, double x) {
    STRIX_ASSERT(m->n < META_MAX, "metadata list full");
    format_double(m->text[m->n], sizeof m->text[m->n], x);
    meta_put(m, key, m->text[m->n]);
}

static void meta_float(meta_list *m, const char *key, float x) {
    STRIX_ASSERT(m->n < META_MAX, "metadata list full");
    format_float(m->text[m->n], sizeof m->text[m->n], x);
    meta_put(m, key, m->text[m->n]);
}

static void vocab_to_hex(const strix_vocab *v, char *hex) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < v->size; i++) {
        hex[2 * i] = digits[v->bytes[i] >> 4];
        hex[2 * i + 1] = digits[v->bytes[i] & 15];
    }
    hex[2 * v->size] = '\0';
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// ---- the run's metadata fields -----------------------------------------------------------------

/* How a field's value is stored in the info struct and spelled in the file. */
typedef enum field_kind {
    FIELD_I64,      /* int64_t, decimal, within [lo, hi] */
    FIELD_INT,      /* int, decimal, within [lo, hi] */
    FIELD_U64,      /* uint64_t, decimal */
    FIELD_HEX64,    /* uint64_t, 16 lowercase hex digits */
    FIELD_F32,      /* float, shortest exact decimal, within [lo, hi] (NaN refused) */
    FIELD_F64,      /* double, shortest exact decimal, within [lo, hi] (NaN refused) */
    FIELD_F64_NAN,  /* the same, NaN allowed */
    FIELD_STR,      /* const char * (NULL written as ""), lo to hi - 1 characters; a loaded
                     * value points into the checkpoint's metadata */
    FIELD_SAMPLING, /* bool: "sequential" (true) or "random" (false) */
} field_kind;

/* One metadata key of the run: where its value lives in strix_checkpoint_info and its range.
 * A required key missing from a file is a format error; an optional one (a key newer than the
 * format, e.g. grad_accum) loads as `def`. */
typedef struct meta_field {
    const char *key;
    field_kind kind;
    size_t offset, size; /* of the member in strix_checkpoint_info */
    double lo, hi;
    bool optional;
    double def;          /* the value of a missing optional key (FIELD_INT and FIELD_I64) */
} meta_field;

#define MEMBER_SIZE(m) sizeof(((strix_checkpoint_info *)0)->m)
/* The member's size, and a compile error when it is not the `bytes` its kind stores. */
#define SIZE_IS(m, bytes) (MEMBER_SIZE(m) + 0 * sizeof(char[MEMBER_SIZE(m) == (bytes) ? 1 : -1]))
#define FIELD(key, kind, m, bytes, lo, hi)                                                        \
    {key, kind, offsetof(strix_checkpoint_info, m), SIZE_IS(m, bytes), lo, hi, false, 0}
#define I64(key, m, lo, hi) FIELD(key, FIELD_I64, m, sizeof(int64_t), lo, hi)
#define INT(key, m, lo, hi) FIELD(key, FIELD_INT, m, sizeof(int), lo, hi)
#define U64(key, m) FIELD(key, FIELD_U64, m, sizeof(uint64_t), 0, 0)
#define HEX64(key, m) FIELD(key, FIELD_HEX64, m, sizeof(uint64_t), 0, 0)
#define F32(key, m, lo, hi) FIELD(key, FIELD_F32, m, sizeof(float), lo, hi)
#define F64(key, m, lo, hi) FIELD(key, FIELD_F64, m, sizeof(double), lo, hi)
#define F64_NAN(key, m, lo, hi) FIELD(key, FIELD_F64_NAN, m, sizeof(double), lo, hi)
#define STR(key, m, min_len, cap) FIELD(key, FIELD_STR, m, sizeof(const char *), min_len, cap)
#define SAMPLING(key, m) FIELD(key, FIELD_SAMPLING, m, sizeof(bool), 0, 0)
/* An int key that older checkpoints lack: missing loads as def */
#define INT_OPT(key, m, lo, hi, def)                                                              \
    {key, FIELD_INT, offsetof(strix_checkpoint_info, m), SIZE_IS(m, sizeof(int)), lo, hi, true,  \
     def}

#define BIG 9007199254740992.0 /* 2^53 */

/* Every run field, in the order they are written; a new field is one line here. */
static const meta_field run_fields[] = {
    I64("step", state.step, 0, BIG),
    I64("total_steps", train.steps, 1, BIG),
    F64("time_limit", train.time_limit, 0.0, 1e12),
    F32("lr", train.lr, 0.0, 1e6),
    F32("min_lr", train.min_lr, 0.0, 1e6),
    I64("warmup", train.warmup, 0, BIG),
    F32("weight_decay", train.weight_decay, 0.0, 1e6),
    F32("clip", train.clip, 0.0, 1e30),
    /* beta < 1 and eps > 0: beta = 1 zeroes Adam's bias correction, eps = 0 divides 0 by 0 */
    F32("adam_beta1", train.adam_beta1, 0.0, 0.9999999),
    F32("adam_beta2", train.adam_beta2, 0.0, 0.9999999),
    F32("adam_eps", train.adam_eps, 1e-30, 1.0),
    INT("batch", train.batch, 1, 1 << 24),
    INT_OPT("grad_accum", train.grad_accum, 0, 1 << 16, 1), /* 0 and 1: none */
    INT_OPT("grad_shards", train.grad_shards, 0, 1 << 24, 1), /* 0 and 1: none */
    U64("seed", train.seed),
    I64("eval_every", train.eval_every, 1, BIG),
    INT("eval_batches", train.eval_batches, 1, 1 << 24),
    F64("val_fraction", train.val_fraction, 0.0, 1.0),
    STR("data_path", train.data_path, 0, STRIX_PATH_MAX),
    U64("data_size", state.data_size),
    HEX64("data_hash", state.data_hash),
    SAMPLING("sampling", train.sequential),
    I64("stride", train.stride, 0, BIG),
    STR("backend", train.backend, 1, 32), /* the first wave's char[32] */
    U64("data_rng", state.data_rng),
    U64("seq_pos", state.cursor.pos),
    U64("seq_epoch", state.cursor.epoch),
    F64_NAN("val_loss", state.val_loss, 0.0, 1e30),
};
#define N_RUN_FIELDS ((int)(sizeof run_fields / sizeof *run_fields))
/* format, format_version, contents, config, vocab, the run fields and optimizer fit the list */
_Static_assert(sizeof run_fields / sizeof *run_fields + 6 <= META_MAX, "raise META_MAX");

/* Adds field f of info to m: its text into m's buffer, or the string itself (borrowed). */
static void meta_put_field(meta_list *m, const meta_field *f, const strix_checkpoint_info *info) {
    const char *at = (const char *)info + f->offset;
    int64_t i64;
    uint64_t u64;
    int i;
    float f32;
    double f64;
    bool b;
    switch (f->kind) {
    case FIELD_I64: memcpy(&i64, at, sizeof i64); meta_fmt(m, f->key, "%" PRId64, i64); break;
    case FIELD_INT: memcpy(&i, at, sizeof i); meta_fmt(m, f->key, "%d", i); break;
    case FIELD_U64: memcpy(&u64, at, sizeof u64); meta_fmt(m, f->key, "%" PRIu64, u64); break;
    case FIELD_HEX64: memcpy(&u64, at, sizeof u64); meta_fmt(m, f->key, "%016" PRIx64, u64); break;
    case FIELD_F32: memcpy(&f32, at, sizeof f32); meta_float(m, f->key, f32); break;
    case FIELD_F64:
    case FIELD_F64_NAN: memcpy(&f64, at, sizeof f64); meta_double(m, f->key, f64); break;
    case FIELD_STR: {
        const char *v;
        memcpy(&v, at, sizeof v);
        meta_put(m, f->key, v ? v : "");
        break;
    }
    case FIELD_SAMPLING:
        memcpy(&b, at, sizeof b);
        meta_put(m, f->key, b ? "sequential" : "random");
        break;
    }
}

// ---- save --------------------------------------------------------------------------------------

/* Writes the parameters of g (and with `info` the AdamW moments and the run) with its config and
 * vocabulary: a full checkpoint, or a weights-only file when info is NULL. */
static strix_status write_file(const char *path, strix_lm *lm, const strix_vocab *vocab,
                               const strix_checkpoint_info *info) {
    const strix_lm_config *cfg = strix_lm_config_get(lm);
    char *model_json = NULL;
    STRIX_TRY(strix_lm_config_to_json(cfg, &model_json));
    strix_status s = STRIX_OK;
    if (vocab->size != strix_lm_config_vocab(cfg))
        s = strix_error(STRIX_ERR_ARG, "checkpoint: vocabulary of %d bytes for a model of %d",
                        vocab->size, strix_lm_config_vocab(cfg));
    if (s != STRIX_OK) { free(model_json); return s; }

    strix_params *ps = strix_lm_params(lm);
    const int n_roles = info ? 3 : 1; /* parameters, then optim.m and optim.v */
    size_t total = ps->total;
    float *host = malloc(((size_t)n_roles * total + 1) * sizeof(float));
    int cap = n_roles * ps->count;
    strix_st_tensor *tensors = calloc((size_t)(cap ? cap : 1), sizeof *tensors);
    char (*names)[STRIX_PARAM_NAME_MAX + 16] = calloc((size_t)(cap ? cap : 1), sizeof *names);
    if (!host || !tensors || !names) s = strix_error(STRIX_ERR_ALLOC, "checkpoint: out of memory");
    float *roles[3] = {ps->data, ps->m, ps->v};
    for (int r = 0; r < n_roles && s == STRIX_OK; r++)
        s = strix_copy(ps->be, host + r * total, roles[r], total * sizeof(float), STRIX_COPY_D2H);

    int n = 0;
    static const char *prefix[3] = {"", "optim.m.", "optim.v."};
    for (int r = 0; r < n_roles && s == STRIX_OK; r++) {
        for (int i = 0; i < ps->count; i++) {
            const strix_param *p = ps->items[i];
            if (p->tied_to) continue;
            snprintf(names[n], sizeof names[n], "%s%s", prefix[r], p->name);
            tensors[n].name = names[n];
            tensors[n].ndim = p->ndim;
            for (int d = 0; d < STRIX_MAX_DIMS; d++) tensors[n].shape[d] = p->shape[d];
            tensors[n].data = host + r * total + p->offset;
            n++;
        }
    }

    if (s == STRIX_OK) {
        char vocab_hex[513];
        vocab_to_hex(vocab, vocab_hex);
        meta_list m = {.n = 0};
        bool gpt = cfg->arch == STRIX_ARCH_GPT;
        meta_put(&m, "format", gpt ? FORMAT_NAME : FORMAT_NAME_LM);
        meta_put(&m, "format_version", FORMAT_VERSION);
        if (!gpt) meta_put(&m, "arch", strix_arch_name(cfg->arch));
        if (!info) meta_put(&m, "contents", CONTENTS_WEIGHTS);
        meta_put(&m, "config", model_json);
        meta_put(&m, "vocab", vocab_hex);
        if (info) {
            for (int f = 0; f < N_RUN_FIELDS; f++) meta_put_field(&m, &run_fields[f], info);
            meta_put(&m, "optimizer", "adamw (moments in optim.m.<name>, optim.v.<name>)");
        }
        s = strix_safetensors_write(path, tensors, n, m.items, m.n);
    }
    free(model_json);
    free(host);
    free(tensors);
    free(names);
    return s;
}

strix_status strix_checkpoint_save_lm(const char *path, strix_lm *lm,
                                      const strix_checkpoint_info *info) {
    char *model_json = NULL, *info_json = NULL;
    STRIX_TRY(strix_lm_config_to_json(strix_lm_config_get(lm), &model_json));
    strix_status s = strix_lm_config_to_json(&info->model, &info_json);
    if (s == STRIX_OK && (strcmp(model_json, info_json) != 0 ||
                          info->model.arch != strix_lm_arch(lm)))
        s = strix_error(STRIX_ERR_ARG, "checkpoint: the info's config differs from the model's");
    free(model_json);
    free(info_json);
    return s == STRIX_OK ? write_file(path, lm, &info->vocab, info) : s;
}

strix_status strix_checkpoint_save_weights_lm(const char *path, strix_lm *lm,
                                              const strix_vocab *vocab) {
    return write_file(path, lm, vocab, NULL);
}

/* The GPT shorthands: g wrapped in a borrowed strix_lm for the call. */
strix_status strix_checkpoint_save(const char *path, strix_gpt *g,
                                   const strix_checkpoint_info *info) {
    strix_lm *lm;
    STRIX_TRY(strix_lm_wrap_gpt(g, &lm));
    strix_status s = strix_checkpoint_save_lm(path, lm, info);
    strix_lm_free(lm);
    return s;
}

strix_status strix_checkpoint_save_weights(const char *path, strix_gpt *g,
                                           const strix_vocab *vocab) {
    strix_lm *lm;
    STRIX_TRY(strix_lm_wrap_gpt(g, &lm));
    strix_status s = write_file(path, lm, vocab, NULL);
    strix_lm_free(lm);
    return s;
}

// ---- open --------------------------------------------------------------------------------------

/* Reads metadata values of one checkpoint, remembering the first problem. */
typedef struct meta_reader {
    const strix_safetensors *st;
    const char *path;
    strix_status s;
} meta_reader;

static const char *meta_get(meta_reader *r, const char *key) {
    if (r->s != STRIX_OK) return NULL;
    const char *v = strix_safetensors_meta(r->st, key);
    if (!v)
        r->s = strix_error(STRIX_ERR_FORMAT, "checkpoint '%s' has no metadata '%s'", r->path, key);
    return v;
}

static void meta_bad(meta_reader *r, const char *key, const char *v) {
    r->s = strix_error(STRIX_ERR_FORMAT, "checkpoint '%s': metadata '%s' = '%.40s' is invalid",
                       r->path, key, v);
}

static int64_t meta_i64(meta_reader *r, const char *key, int64_t lo, int64_t hi) {
    const char *v = meta_get(r, key);
    if (!v) return 0;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!v[0] || *end || errno || x < lo || x > hi) { meta_bad(r, key, v); return 0; }
    return x;
}

static uint64_t meta_u64(meta_reader *r, const char *key, int base) {
    const char *v = meta_get(r, key);
    if (!v) return 0;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, base);
    if (!v[0] || v[0] == '-' || *end || errno) { meta_bad(r, key, v); return 0; }
    return x;
}

static double meta_f64(meta_reader *r, const char *key, double lo, double hi, bool nan_ok) {
    const char *v = meta_get(r, key);
    if (!v) return 0;
    char *end;
    double x = strtod(v, &end);
    if (!v[0] || *end || (isnan(x) ? !nan_ok : (x < lo || x > hi))) {
        meta_bad(r, key, v);
        return 0;
    }
    return x;
}

static float meta_f32(meta_reader *r, const char *key, double lo, double hi) {
    const char *v = meta_get(r, key);
    if (!v) return 0;
    char *end;
    float x = strtof(v, &end);
    if (!v[0] || *end || !(x >= lo && x <= hi)) { meta_bad(r, key, v); return 0; }
    return x;
}

/* Reads field f from the file into info, or records the problem in r. */
static void meta_read_field(meta_reader *r, const meta_field *f, strix_checkpoint_info *info) {
    char *at = (char *)info + f->offset;
    if (f->optional && r->s == STRIX_OK && !strix_safetensors_meta(r->st, f->key)) {
        STRIX_ASSERT(f->kind == FIELD_INT || f->kind == FIELD_I64,
                     "checkpoint: optional key '%s' of a kind without a default", f->key);
        int64_t x = (int64_t)f->def;
        int i = (int)x;
        if (f->kind == FIELD_INT) memcpy(at, &i, sizeof i);
        else memcpy(at, &x, sizeof x);
        return;
    }
    switch (f->kind) {
    case FIELD_I64: {
        int64_t x = meta_i64(r, f->key, (int64_t)f->lo, (int64_t)f->hi);
        memcpy(at, &x, sizeof x);
        break;
    }
    case FIELD_INT: {
        int x = (int)meta_i64(r, f->key, (int64_t)f->lo, (int64_t)f->hi);
        memcpy(at, &x, sizeof x);
        break;
    }
    case FIELD_U64:
    case FIELD_HEX64: {
        uint64_t x = meta_u64(r, f->key, f->kind == FIELD_HEX64 ? 16 : 10);
        memcpy(at, &x, sizeof x);
        break;
    }
    case FIELD_F32: {
        float x = meta_f32(r, f->key, f->lo, f->hi);
        memcpy(at, &x, sizeof x);
        break;
    }
    case FIELD_F64:
    case FIELD_F64_NAN: {
        double x = meta_f64(r, f->key, f->lo, f->hi, f->kind == FIELD_F64_NAN);
        memcpy(at, &x, sizeof x);
        break;
    }
    case FIELD_STR: {
        const char *v = meta_get(r, f->key);
        if (v && (strlen(v) < (size_t)f->lo || strlen(v) >= (size_t)f->hi)) meta_bad(r, f->key, v);
        else memcpy(at, v ? &v : &(const char *){""}, sizeof v); /* lives until close */
        break;
    }
    case FIELD_SAMPLING: {
        const char *v = meta_get(r, f->key);
        bool sequential = v && strcmp(v, "sequential") == 0;
        if (v && !sequential && strcmp(v, "random") != 0) meta_bad(r, f->key, v);
        memcpy(at, &sequential, sizeof sequential);
        break;
    }
    }
}

static strix_status parse_info(meta_reader *r, strix_checkpoint_info *info) {
    const char *format = strix_safetensors_meta(r->st, "format");
    bool gpt = format && strcmp(format, FORMAT_NAME) == 0;
    if (!gpt && !(format && strcmp(format, FORMAT_NAME_LM) == 0))
        return strix_error(STRIX_ERR_FORMAT, "'%s' is not a strix checkpoint (format '%.40s')",
                           r->path, format ? format : "none");
    const char *version = meta_get(r, "format_version");
    if (r->s != STRIX_OK) return r->s;
    if (strcmp(version, FORMAT_VERSION) != 0)
        return strix_error(STRIX_ERR_FORMAT,
                           "checkpoint '%s' has format version '%.20s'; this strix reads "
                           FORMAT_VERSION, r->path, version);
    strix_arch arch = STRIX_ARCH_GPT;
    if (!gpt) {
        const char *name = meta_get(r, "arch");
        if (r->s != STRIX_OK) return r->s;
        if (strix_arch_from_name(name, &arch) != STRIX_OK || arch == STRIX_ARCH_GPT)
            return strix_error(STRIX_ERR_FORMAT, "checkpoint '%s': metadata 'arch' = '%.40s' is "
                               "not a sequence architecture of this strix", r->path, name);
    }
    const char *config = meta_get(r, "config");
    if (r->s != STRIX_OK) return r->s;
    if (strix_lm_config_from_json(arch, config, &info->model) != STRIX_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", strix_last_error());
        return strix_error(STRIX_ERR_FORMAT, "checkpoint '%s': %s", r->path, msg);
    }
    if (strix_lm_config_check(&info->model) != STRIX_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", strix_last_error());
        return strix_error(STRIX_ERR_FORMAT, "checkpoint '%s' holds an invalid config: %s",
                           r->path, msg);
    }
    const char *hex = meta_get(r, "vocab");
    if (r->s != STRIX_OK) return r->s;
    size_t len = strlen(hex);
    unsigned char bytes[256];
    bool ok = len % 2 == 0 && len >= 2 && len <= 512;
    for (size_t i = 0; ok && i < len / 2; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        ok = hi >= 0 && lo >= 0;
        bytes[i] = (unsigned char)(hi * 16 + lo);
    }
    if (!ok || strix_vocab_from_bytes(bytes, (int)(len / 2), &info->vocab) != STRIX_OK)
        return strix_error(STRIX_ERR_FORMAT, "checkpoint '%s': metadata 'vocab' is invalid",
                           r->path);
    if (info->vocab.size != strix_lm_config_vocab(&info->model))
        return strix_error(STRIX_ERR_FORMAT,
                           "checkpoint '%s': vocabulary of %d bytes but config vocab_size %d",
                           r->path, info->vocab.size, strix_lm_config_vocab(&info->model));
    const char *contents = strix_safetensors_meta(r->st, "contents");
    if (contents && strcmp(contents, CONTENTS_WEIGHTS) != 0)
        return strix_error(STRIX_ERR_FORMAT, "checkpoint '%s': metadata 'contents' = '%.40s' is "
                           "invalid (only \"" CONTENTS_WEIGHTS "\" is known)", r->path, contents);
    if (contents) { /* weights only: no run to read */
        info->weights_only = true;
        info->train.data_path = "";
        info->train.backend = "";
        return STRIX_OK;
    }

    for (int f = 0; f < N_RUN_FIELDS; f++) meta_read_field(r, &run_fields[f], info);
    /* checks across fields */
    strix_train_config *t = &info->train;
    strix_train_state *st = &info->state;
    st->cursor.stride = (uint64_t)t->stride;
    if (r->s == STRIX_OK && t->min_lr > t->lr)
        r->s = strix_error(STRIX_ERR_FORMAT, "checkpoint '%s': min_lr %g exceeds lr %g", r->path,
                           (double)t->min_lr, (double)t->lr);
    if (r->s == STRIX_OK && st->step > t->steps)
        r->s = strix_error(STRIX_ERR_FORMAT, "checkpoint '%s': step %" PRId64 " is past its "
                           "total of %" PRId64, r->path, st->step, t->steps);
    return r->s;
}

strix_status strix_checkpoint_open(const char *path, strix_checkpoint **out) {
    *out = NULL;
    if (strlen(path) >= STRIX_PATH_MAX)
        return strix_error(STRIX_ERR_ARG, "path too long: %s", path);
    strix_checkpoint *ck = calloc(1, sizeof *ck);
    if (!ck) return strix_error(STRIX_ERR_ALLOC, "checkpoint: out of memory");
    strcpy(ck->path, path);
    strix_status s = strix_safetensors_read(path, &ck->st);
    if (s == STRIX_OK) {
        meta_reader r = {.st = ck->st, .path = path, .s = STRIX_OK};
        s = parse_info(&r, &ck->info);
    }
    if (s != STRIX_OK) {
        strix_checkpoint_close(ck);
        return s;
    }
    *out = ck;
    return STRIX_OK;
}

const strix_checkpoint_info *strix_checkpoint_info_of(const strix_checkpoint *ck) {
    return &ck->info;
}

/* The largest header strix_checkpoint_probe reads (the safetensors reader's limit). */
#define PROBE_HEADER_MAX ((uint64_t)100 << 20)

strix_status strix_checkpoint_probe(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strix_error(STRIX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    unsigned char len_bytes[8];
    strix_status s = STRIX_OK;
    char *header = NULL;
    uint64_t header_len = 0, size = 0;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
        s = strix_error(STRIX_ERR_FORMAT, "'%s' is not a regular file", path);
    else if ((size = (uint64_t)st.st_size) < 8 || fread(len_bytes, 1, 8, f) != 8)
        s = strix_error(STRIX_ERR_FORMAT, "'%s' is too short for a safetensors file", path);
    if (s == STRIX_OK) {
        for (int b = 0; b < 8; b++) header_len |= (uint64_t)len_bytes[b] << (8 * b);
        if (header_len < 2 || header_len > size - 8 || header_len > PROBE_HEADER_MAX)
            s = strix_error(STRIX_ERR_FORMAT, "'%s' has no safetensors header", path);
    }
    if (s == STRIX_OK && !(header = malloc((size_t)header_len)))
        s = strix_error(STRIX_ERR_ALLOC, "out of memory reading '%s'", path);
    if (s == STRIX_OK && fread(header, 1, (size_t)header_len, f) != (size_t)header_len)
        s = strix_error(STRIX_ERR_IO, "cannot read '%s': %s", path,
                        ferror(f) ? strerror(errno) : "file shrank");
    fclose(f);
    if (s != STRIX_OK) {
        free(header);
        return s;
    }
    cJSON *root = header[0] == '{' ? cJSON_ParseWithLength(header, (size_t)header_len) : NULL;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(meta, "format");
    if (!cJSON_IsObject(root))
        s = strix_error(STRIX_ERR_FORMAT, "'%s' has no safetensors header", path);
    else if (!cJSON_IsString(format) || (strcmp(format->valuestring, FORMAT_NAME) != 0 &&
                                         strcmp(format->valuestring, FORMAT_NAME_LM) != 0))
        s = strix_error(STRIX_ERR_FORMAT, "'%s' is not a strix checkpoint (format '%.40s')",
                        path, cJSON_IsString(format) ? format->valuestring : "none");
    cJSON_Delete(root);
    free(header);
    return s;
}

// ---- restore -----------------------------------------------------------------------------------

/* The tensor `prefix``name` of the file, checked against p's shape; NULL with an error set. */
static const strix_st_tensor *expect_tensor(const strix_checkpoint *ck, const char *prefix,
                                            const strix_param *p, strix_status *s) {
    char name[STRIX_PARAM_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s%s", prefix, p->name);
    const strix_st_tensor *t = strix_safetensors_find(ck->st, name);
    if (!t) {
        *s = strix_error(STRIX_ERR_FORMAT, "checkpoint '%s' has no tensor '%s'", ck->path, name);
        return NULL;
    }
    if (strix_safetensors_dtype(ck->st, t) != STRIX_ST_F32) {
        *s = strix_error(STRIX_ERR_FORMAT, "checkpoint '%s': tensor '%s' is not F32", ck->path,
                         name);
        return NULL;
    }
    bool same = t->ndim == p->ndim;
    for (int d = 0; same && d < p->ndim; d++) same = t->shape[d] == p->shape[d];
    if (!same) {
        *s = strix_error(STRIX_ERR_FORMAT,
                         "checkpoint '%s': tensor '%s' has shape [%" PRId64 ",%" PRId64 ",...] "
                         "(%d dims) but the model expects [%" PRId64 ",%" PRId64 ",...] (%d dims)",
                         ck->path, name, t->shape[0], t->ndim > 1 ? t->shape[1] : 1, t->ndim,
                         p->shape[0], p->ndim > 1 ? p->shape[1] : 1, p->ndim);
        return NULL;
    }
    return t;
}

strix_status strix_checkpoint_restore_lm(const strix_checkpoint *ck, strix_lm *lm,
                                         bool optimizer) {
    char *a = NULL, *b = NULL;
    const strix_lm_config *mine = strix_lm_config_get(lm);
    /* the weights fit any dropout: a fine-tune may change it (the caller decides) */
    strix_lm_config theirs = ck->info.model;
    if (theirs.arch == STRIX_ARCH_GPT && mine->arch == STRIX_ARCH_GPT)
        theirs.gpt.dropout = mine->gpt.dropout;
    /* nor does a sequence model's training window */
    if (theirs.arch != STRIX_ARCH_GPT && mine->arch == theirs.arch)
        theirs.seq.block_size = mine->seq.block_size;
    STRIX_TRY(strix_lm_config_to_json(mine, &a));
    strix_status s = strix_lm_config_to_json(&theirs, &b);
    if (s == STRIX_OK && (strcmp(a, b) != 0 || theirs.arch != mine->arch))
        s = strix_error(STRIX_ERR_ARG, "checkpoint '%s' was written for another model config",
                        ck->path);
    free(a);
    free(b);
    if (s != STRIX_OK) return s;

    if (optimizer && ck->info.weights_only)
        return strix_error(STRIX_ERR_FORMAT, "'%s' is a weights-only file (no optimizer state "
                           "and no run): it cannot be resumed, only sampled, explained or "
                           "trained from anew", ck->path);
    strix_params *ps = strix_lm_params(lm);
    static const char *prefix[3] = {"", "optim.m.", "optim.v."};
    const int n_roles = ck->info.weights_only ? 1 : 3;
    int stored = 0;
    for (int r = 0; r < n_roles && s == STRIX_OK; r++)
        for (int i = 0; i < ps->count && s == STRIX_OK; i++) {
            if (ps->items[i]->tied_to) continue;
            expect_tensor(ck, prefix[r], ps->items[i], &s);
            stored++;
        }
    if (s == STRIX_OK && strix_safetensors_count(ck->st) != stored)
        s = strix_error(STRIX_ERR_FORMAT,
                        "checkpoint '%s' holds %d tensors; the model has %d (%s)", ck->path,
                        strix_safetensors_count(ck->st), stored,
                        ck->info.weights_only ? "parameters of a weights-only file"
                                              : "parameters and optimizer moments");
    if (s != STRIX_OK) return s;

    float *roles[3] = {ps->data, ps->m, ps->v};
    for (int r = 0; r < (optimizer ? 3 : 1); r++)
        for (int i = 0; i < ps->count; i++) {
            const strix_param *p = ps->items[i];
            if (p->tied_to) continue;
            const strix_st_tensor *t = expect_tensor(ck, prefix[r], p, &s);
            STRIX_TRY(s);
            STRIX_TRY(strix_copy(ps->be, roles[r] + p->offset, t->data, p->numel * sizeof(float),
                                 STRIX_COPY_H2D));
        }
    return STRIX_OK;
}

strix_status strix_checkpoint_restore(const strix_checkpoint *ck, strix_gpt *g, bool optimizer) {
    strix_lm *lm;
    STRIX_TRY(strix_lm_wrap_gpt(g, &lm));
    strix_status s = strix_checkpoint_restore_lm(ck, lm, optimizer);
    strix_lm_free(lm);
    return s;
}

void strix_checkpoint_close(strix_checkpoint *ck) {
    if (!ck) return;
    strix_safetensors_free(ck->st);
    free(ck);
}
