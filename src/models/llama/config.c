/*
 * config.c - the hyperparameters of a Llama-family model: config.json (+ generation_config.json)
 * as transformers 4.57's LlamaConfig, Qwen2Config and Qwen3Config read them (same defaults), the
 * checks every source goes through, and RoPE's inverse frequencies (modeling_rope_utils.py's
 * default, linear and llama3 formulas, in double).
 *
 * Refused by name: other architectures, MoE (num_experts, num_local_experts, n_routed_experts),
 * sliding-window attention in use (use_sliding_window, layer_types "sliding_attention"), logit
 * soft-capping, rope types other than default/linear/llama3, partial rotary embeddings, MLP
 * biases, activations other than SiLU. Not here: tensors (load.c), GGUF metadata (gguf_load.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "llama_internal.h"

#define LLAMA_JSON_MAX (64u << 20) /* a config file over 64 MB is not a config file */
#define LLAMA_DIM_MAX (1 << 20)    /* bound on every dimension, so products fit in size_t */

static const char *const supported_archs =
    "LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM";

/* The whole file at path, NUL-terminated, into *text. STRIX_ERR_IO naming the path. */
static strix_status read_text(const char *path, char **text) {
    *text = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return strix_error(STRIX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return strix_error(STRIX_ERR_IO, "%s: cannot read (not a regular file?)", path);
    }
    if ((unsigned long)size > LLAMA_JSON_MAX) {
        fclose(f);
        return strix_error(STRIX_ERR_FORMAT, "%s: %ld bytes is too large for a JSON config",
                           path, size);
    }
    char *buf = malloc((size_t)size + 1);
    if (!buf) {
        fclose(f);
        return strix_error(STRIX_ERR_ALLOC, "%s: out of memory", path);
    }
    size_t got = fread(buf, 1, (size_t)size, f);
    fclose(f);
    if (got != (size_t)size) {
        free(buf);
        return strix_error(STRIX_ERR_IO, "%s: short read", path);
    }
    buf[size] = '\0';
    *text = buf;
    return STRIX_OK;
}

/* A JSON file parsed into *root (an object). */
static strix_status parse_json_file(const char *path, cJSON **root) {
    char *text;
    STRIX_TRY(read_text(path, &text));
    *root = cJSON_Parse(text);
    free(text);
    if (!*root || !cJSON_IsObject(*root)) {
        cJSON_Delete(*root);
        *root = NULL;
        return strix_error(STRIX_ERR_FORMAT, "%s: not a JSON object", path);
    }
    return STRIX_OK;
}

// ---- typed fields ------------------------------------------------------------------------------

/* The item `key` of obj, NULL when absent or JSON null. */
static const cJSON *field(const cJSON *obj, const char *key) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    return it && !cJSON_IsNull(it) ? it : NULL;
}

/* An integer field in [lo, hi]; `def` when absent (required when def < lo). */
static strix_status get_int(const char *who, const cJSON *obj, const char *key, int def, int lo,
                            int hi, int *out) {
    const cJSON *it = field(obj, key);
    if (!it) {
        if (def < lo) return strix_error(STRIX_ERR_FORMAT, "%s: missing \"%s\"", who, key);
        *out = def;
        return STRIX_OK;
    }
    double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    if (!(v >= lo && v <= hi) || v != floor(v))
        return strix_error(STRIX_ERR_FORMAT, "%s: \"%s\" must be an integer in [%d, %d]", who,
                           key, lo, hi);
    *out = (int)v;
    return STRIX_OK;
}

/* A finite positive number field; `def` when absent. */
static strix_status get_pos(const char *who, const cJSON *obj, const char *key, double def,
                            double *out) {
    const cJSON *it = field(obj, key);
    if (!it) {
        *out = def;
        return STRIX_OK;
    }
    double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    if (!(v > 0.0) || !isfinite(v))
        return strix_error(STRIX_ERR_FORMAT, "%s: \"%s\" must be a positive number", who, key);
    *out = v;
    return STRIX_OK;
}

/* A boolean field; `def` when absent. */
static strix_status get_bool(const char *who, const cJSON *obj, const char *key, bool def,
                             bool *out) {
    const cJSON *it = field(obj, key);
    if (!it) {
        *out = def;
        return STRIX_OK;
    }
    if (!cJSON_IsBool(it))
        return strix_error(STRIX_ERR_FORMAT, "%s: \"%s\" must be true or false", who, key);
    *out = cJSON_IsTrue(it);
    return STRIX_OK;
}

/* A token id field: an integer, or a list of them (eos_token_id); absent leaves *n untouched. */
static strix_status get_ids(const char *who, const cJSON *obj, const char *key, int32_t *ids,
                            int cap, int *n) {
    const cJSON *it = field(obj, key);
    if (!it) return STRIX_OK;
    int count = 0;
    const cJSON *one;
    if (cJSON_IsArray(it)) {
        cJSON_ArrayForEach(one, it) {
            double v = cJSON_IsNumber(one) ? one->valuedouble : NAN;
            if (!(v >= 0 && v < 2147483647.0) || v != floor(v))
                return strix_error(STRIX_ERR_FORMAT, "%s: \"%s\" holds a non-id value", who, key);
            if (count < cap) ids[count++] = (int32_t)v;
        }
    } else {
        double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
        if (!(v >= 0 && v < 2147483647.0) || v != floor(v))
            return strix_error(STRIX_ERR_FORMAT, "%s: \"%s\" is not a token id", who, key);
        ids[count++] = (int32_t)v;
    }
    *n = count;
    return STRIX_OK;
}

// ---- config.json -------------------------------------------------------------------------------

/* Features of the file that strix does not implement, refused by name. */
static strix_status refuse_unsupported(const char *who, const cJSON *root) {
    static const char *const moe_keys[] = {"num_experts", "num_local_experts", "n_routed_experts",
                                           "moe_intermediate_size"};
    for (size_t i = 0; i < sizeof moe_keys / sizeof moe_keys[0]; i++) {
        const cJSON *it = field(root, moe_keys[i]);
        if (it && !(cJSON_IsNumber(it) && it->valuedouble == 0.0))
            return strix_error(STRIX_ERR_UNSUPPORTED,
                               "%s: mixture-of-experts models are not supported (\"%s\")", who,
                               moe_keys[i]);
    }
    const cJSON *sw = field(root, "use_sliding_window");
    if (sw && cJSON_IsTrue(sw))
        return strix_error(STRIX_ERR_UNSUPPORTED,
                           "%s: sliding-window attention is not supported (use_sliding_window "
                           "true)", who);
    const cJSON *types = field(root, "layer_types"), *t;
    if (types && cJSON_IsArray(types))
        cJSON_ArrayForEach(t, types) if (cJSON_IsString(t) &&
                                         strcmp(t->valuestring, "full_attention") != 0)
            return strix_error(STRIX_ERR_UNSUPPORTED,
                               "%s: layer type \"%s\" is not supported (sliding-window "
                               "attention)", who, t->valuestring);
    static const char *const cap_keys[] = {"attn_logit_softcapping", "final_logit_softcapping"};
    for (size_t i = 0; i < 2; i++)
        if (field(root, cap_keys[i]))
            return strix_error(STRIX_ERR_UNSUPPORTED, "%s: logit soft-capping (\"%s\") is not "
                               "supported", who, cap_keys[i]);
    const cJSON *prf = field(root, "partial_rotary_factor");
    if (prf && !(cJSON_IsNumber(prf) && prf->valuedouble == 1.0))
        return strix_error(STRIX_ERR_UNSUPPORTED,
                           "%s: partial rotary embeddings (partial_rotary_factor) are not "
                           "supported", who);
    const cJSON *mb = field(root, "mlp_bias");
    if (mb && cJSON_IsTrue(mb))
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s: MLP biases (mlp_bias true) are not "
                           "supported", who);
    const cJSON *act = field(root, "hidden_act");
    if (act && !(cJSON_IsString(act) && strcmp(act->valuestring, "silu") == 0))
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s: hidden_act %s is not supported (silu)",
                           who, cJSON_IsString(act) ? act->valuestring : "(not a string)");
    return STRIX_OK;
}

/* rope_scaling: null, {"rope_type"/"type": "default" | "linear" | "llama3", ...}. */
static strix_status parse_rope_scaling(const char *who, const cJSON *root, strix_llama_config *c) {
    c->rope_scaling = STRIX_LLAMA_ROPE_NONE;
    c->rope_factor = 1.0f;
    const cJSON *rs = field(root, "rope_scaling");
    if (!rs) return STRIX_OK;
    if (!cJSON_IsObject(rs))
        return strix_error(STRIX_ERR_FORMAT, "%s: rope_scaling must be an object or null", who);
    const cJSON *type = field(rs, "rope_type");
    if (!type) type = field(rs, "type");
    if (!type || !cJSON_IsString(type))
        return strix_error(STRIX_ERR_FORMAT, "%s: rope_scaling has no \"rope_type\"", who);
    const char *name = type->valuestring;
    if (strcmp(name, "default") == 0) return STRIX_OK;
    double factor = 1.0;
    if (strcmp(name, "linear") == 0) {
        STRIX_TRY(get_pos(who, rs, "factor", -1.0, &factor));
        if (factor < 0)
            return strix_error(STRIX_ERR_FORMAT, "%s: rope_scaling needs a \"factor\"", who);
        c->rope_scaling = STRIX_LLAMA_ROPE_LINEAR;
        c->rope_factor = (float)factor;
        return STRIX_OK;
    }
    if (strcmp(name, "llama3") == 0) {
        double low = 1.0, high = 1.0;
        int orig = 1;
        static const char *const keys[] = {"factor", "low_freq_factor", "high_freq_factor",
                                           "original_max_position_embeddings"};
        for (int i = 0; i < 4; i++)
            if (!field(rs, keys[i]))
                return strix_error(STRIX_ERR_FORMAT, "%s: llama3 rope_scaling needs \"%s\"", who,
                                   keys[i]);
        STRIX_TRY(get_pos(who, rs, "factor", 1.0, &factor));
        STRIX_TRY(get_pos(who, rs, "low_freq_factor", 1.0, &low));
        STRIX_TRY(get_pos(who, rs, "high_freq_factor", 1.0, &high));
        STRIX_TRY(get_int(who, rs, "original_max_position_embeddings", 0, 1, LLAMA_DIM_MAX * 64,
                          &orig));
        c->rope_scaling = STRIX_LLAMA_ROPE_LLAMA3;
        c->rope_factor = (float)factor;
        c->rope_low_freq_factor = (float)low;
        c->rope_high_freq_factor = (float)high;
        c->rope_original_max_positions = orig;
        return STRIX_OK;
    }
    return strix_error(STRIX_ERR_UNSUPPORTED,
                       "%s: rope_scaling type \"%s\" is not supported (supported: default, "
                       "linear, llama3)", who, name);
}

/* The architecture: config.json's architectures[0] (model_type when absent). */
static strix_status parse_arch(const char *who, const cJSON *root, strix_llama_config *c) {
    static const struct { const char *cls, *type; } archs[] = {
        {"LlamaForCausalLM", "llama"},
        {"Qwen2ForCausalLM", "qwen2"},
        {"Qwen3ForCausalLM", "qwen3"}};
    const cJSON *list = field(root, "architectures"), *mt = field(root, "model_type");
    const char *cls = NULL;
    if (list) {
        const cJSON *first = cJSON_IsArray(list) ? cJSON_GetArrayItem(list, 0) : NULL;
        if (!first || !cJSON_IsString(first))
            return strix_error(STRIX_ERR_FORMAT, "%s: \"architectures\" must list class names",
                               who);
        cls = first->valuestring;
    }
    const char *type = mt && cJSON_IsString(mt) ? mt->valuestring : NULL;
    if (!cls && !type)
        return strix_error(STRIX_ERR_FORMAT, "%s: neither \"architectures\" nor \"model_type\"",
                           who);
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        bool hit = cls ? strcmp(cls, archs[i].cls) == 0 : strcmp(type, archs[i].type) == 0;
        if (!hit) continue;
        if (type && strcmp(type, archs[i].type) != 0)
            return strix_error(STRIX_ERR_FORMAT, "%s: architecture %s with model_type \"%s\"",
                               who, archs[i].cls, type);
        snprintf(c->architecture, sizeof c->architecture, "%s", archs[i].type);
        return STRIX_OK;
    }
    if (cls)
        return strix_error(STRIX_ERR_UNSUPPORTED,
                           "%s: architecture %s is not supported (supported: %s)", who, cls,
                           supported_archs);
    return strix_error(STRIX_ERR_UNSUPPORTED,
                       "%s: model_type \"%s\" is not supported (supported: llama, qwen2, qwen3)",
                       who, type);
}

strix_status llama_config_from_json(const char *path, const char *gen_path,
                                    strix_llama_config *c) {
    memset(c, 0, sizeof *c);
    cJSON *root;
    STRIX_TRY(parse_json_file(path, &root));
    const char *who = path;
    strix_status s = parse_arch(who, root, c);
    if (s == STRIX_OK) s = refuse_unsupported(who, root);
    bool qwen2 = strcmp(c->architecture, "qwen2") == 0;
    bool qwen3 = strcmp(c->architecture, "qwen3") == 0;
    int head_dim = 0;
    double eps = 1e-6, theta = 10000.0;
    if (s == STRIX_OK)
        s = get_int(who, root, "vocab_size", -1, 1, LLAMA_DIM_MAX * 4, &c->vocab_size);
    if (s == STRIX_OK) s = get_int(who, root, "hidden_size", -1, 1, LLAMA_DIM_MAX, &c->hidden_size);
    if (s == STRIX_OK)
        s = get_int(who, root, "intermediate_size", -1, 1, LLAMA_DIM_MAX, &c->intermediate_size);
    if (s == STRIX_OK) s = get_int(who, root, "num_hidden_layers", -1, 1, 4096, &c->num_layers);
    if (s == STRIX_OK) s = get_int(who, root, "num_attention_heads", -1, 1, 4096, &c->num_heads);
    if (s == STRIX_OK)
        s = get_int(who, root, "num_key_value_heads", c->num_heads, 1, 4096, &c->num_kv_heads);
    if (s == STRIX_OK) s = get_int(who, root, "head_dim", 0, 0, LLAMA_DIM_MAX, &head_dim);
    if (s == STRIX_OK)
        s = get_int(who, root, "max_position_embeddings", qwen2 || qwen3 ? 32768 : 2048, 1,
                    1 << 30, &c->max_position_embeddings);
    if (s == STRIX_OK) s = get_pos(who, root, "rms_norm_eps", 1e-6, &eps);
    if (s == STRIX_OK) s = get_pos(who, root, "rope_theta", 10000.0, &theta);
    if (s == STRIX_OK) s = parse_rope_scaling(who, root, c);
    if (s == STRIX_OK)
        s = get_bool(who, root, "tie_word_embeddings", false, &c->tie_word_embeddings);
    bool attn_bias = false;
    if (s == STRIX_OK) s = get_bool(who, root, "attention_bias", false, &attn_bias);
    c->head_dim = head_dim > 0 ? head_dim : (c->num_heads ? c->hidden_size / c->num_heads : 0);
    c->rms_norm_eps = (float)eps;
    c->rope_theta = (float)theta;
    c->attention_bias = qwen2 || attn_bias; /* Qwen2: q/k/v always biased, o never */
    c->o_bias = !qwen2 && attn_bias;
    c->qk_norm = qwen3;
    c->bos_token_id = -1;
    if (s == STRIX_OK) {
        int nb = 0;
        s = get_ids(who, root, "bos_token_id", &c->bos_token_id, 1, &nb);
    }
    if (s == STRIX_OK) s = get_ids(who, root, "eos_token_id", c->eos_token_ids,
                                   STRIX_LLAMA_MAX_EOS, &c->n_eos);
    cJSON_Delete(root);
    if (s != STRIX_OK) return s;
    // generation_config.json, when present, has the ids generate() uses
    if (gen_path) {
        FILE *f = fopen(gen_path, "rb");
        if (f) {
            fclose(f);
            STRIX_TRY(parse_json_file(gen_path, &root));
            int nb = 0;
            s = get_ids(gen_path, root, "bos_token_id", &c->bos_token_id, 1, &nb);
            if (s == STRIX_OK)
                s = get_ids(gen_path, root, "eos_token_id", c->eos_token_ids, STRIX_LLAMA_MAX_EOS,
                            &c->n_eos);
            cJSON_Delete(root);
            STRIX_TRY(s);
        }
    }
    return llama_config_check(who, c);
}

// ---- checks ------------------------------------------------------------------------------------

strix_status llama_config_check(const char *who, const strix_llama_config *c) {
    if (c->vocab_size <= 0 || c->hidden_size <= 0 || c->intermediate_size <= 0 ||
        c->num_layers <= 0 || c->num_heads <= 0 || c->num_kv_heads <= 0 || c->head_dim <= 0 ||
        c->max_position_embeddings <= 0)
        return strix_error(STRIX_ERR_FORMAT, "%s: every dimension must be positive", who);
    if (c->vocab_size > LLAMA_DIM_MAX * 4 || c->hidden_size > LLAMA_DIM_MAX ||
        c->intermediate_size > LLAMA_DIM_MAX || c->head_dim > LLAMA_DIM_MAX ||
        c->num_layers > 4096 || c->num_heads > 4096)
        return strix_error(STRIX_ERR_FORMAT, "%s: a dimension is implausibly large", who);
    if ((size_t)c->num_heads * (size_t)c->head_dim > LLAMA_DIM_MAX)
        return strix_error(STRIX_ERR_FORMAT, "%s: num_heads·head_dim is implausibly large", who);
    if (c->num_heads % c->num_kv_heads != 0)
        return strix_error(STRIX_ERR_FORMAT,
                           "%s: %d attention heads are not a multiple of %d key/value heads",
                           who, c->num_heads, c->num_kv_heads);
    if (c->head_dim % 2 != 0)
        return strix_error(STRIX_ERR_FORMAT, "%s: RoPE needs an even head_dim (got %d)", who,
                           c->head_dim);
    if (!(c->rms_norm_eps > 0.0f) || !isfinite(c->rms_norm_eps) || !(c->rope_theta > 0.0f) ||
        !isfinite(c->rope_theta))
        return strix_error(STRIX_ERR_FORMAT, "%s: rms_norm_eps and rope_theta must be positive",
                           who);
    if (c->rope_scaling == STRIX_LLAMA_ROPE_LINEAR && !(c->rope_factor > 0.0f))
        return strix_error(STRIX_ERR_FORMAT, "%s: rope scaling factor must be positive", who);
    if (c->rope_scaling == STRIX_LLAMA_ROPE_LLAMA3 &&
        (!(c->rope_factor > 0.0f) || !(c->rope_low_freq_factor > 0.0f) ||
         !(c->rope_high_freq_factor > c->rope_low_freq_factor) ||
         c->rope_original_max_positions <= 0))
        return strix_error(STRIX_ERR_FORMAT,
                           "%s: llama3 rope_scaling needs factor > 0, 0 < low_freq_factor < "
                           "high_freq_factor and original_max_position_embeddings > 0", who);
    if (c->bos_token_id >= c->vocab_size)
        return strix_error(STRIX_ERR_FORMAT, "%s: bos_token_id %d outside the vocabulary of %d",
                           who, c->bos_token_id, c->vocab_size);
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos_token_ids[i] < 0 || c->eos_token_ids[i] >= c->vocab_size)
            return strix_error(STRIX_ERR_FORMAT,
                               "%s: eos_token_id %d outside the vocabulary of %d", who,
                               c->eos_token_ids[i], c->vocab_size);
    return STRIX_OK;
}

// ---- RoPE --------------------------------------------------------------------------------------

void llama_rope_inv_freq(const strix_llama_config *c, const float *factors, double *inv_freq) {
    int half = c->head_dim / 2;
    double base = (double)c->rope_theta, factor = (double)c->rope_factor;
    const double pi = 3.14159265358979323846;
    for (int i = 0; i < half; i++) {
        double f = 1.0 / pow(base, (double)(2 * i) / (double)c->head_dim);
        switch (c->rope_scaling) {
        case STRIX_LLAMA_ROPE_LINEAR:
            f /= factor;
            break;
        case STRIX_LLAMA_ROPE_LLAMA3: {
            // modeling_rope_utils._compute_llama3_parameters
            double old = (double)c->rope_original_max_positions;
            double low = (double)c->rope_low_freq_factor, high = (double)c->rope_high_freq_factor;
            double wavelen = 2.0 * pi / f;
            if (wavelen > old / low) {
                f /= factor;
            } else if (!(wavelen < old / high)) {
                double smooth = (old / wavelen - low) / (high - low);
                f = (1.0 - smooth) * f / factor + smooth * f;
            }
            break;
        }
        case STRIX_LLAMA_ROPE_FACTORS:
            f /= (double)factors[i];
            break;
        default:
            break;
        }
        inv_freq[i] = f;
    }
}
