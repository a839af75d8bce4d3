/*
 * retnet.c - torchscale's RetNet decoder layer (strix/retnet.h): multi-scale retention in its
 * parallel, chunkwise and recurrent forms, the gated group-normed output, the GLU FFN, both
 * pre-norm residuals; backward through the parallel form; LRP of the parallel form.
 *
 * Layouts: projections and rotations in the (B,T,·) layout of the Linear modules; the retention
 * runs head-major, (B,H,T,d) blocks (permute_0213), one GEMM batch over the B·H blocks. The
 * position-dependent factors are folded into the rotation tables: the q tables of head h carry
 * c_{h,t} = (Σ_{s<=t} γ_h^s)^(-1/2), the k tables the key scaling d_k^(-1/2), so q̃ = rope(q) and
 * k̃ = rope(k) directly. The decay powers (the mask D, the state's γ^(t+1) for the queries and
 * γ^(Tc-1-u) for the keys, γ^Tc for the old state) are host tables built by repeated
 * multiplication, uploaded once per chunk length. Does not do the decoder (embedding, final
 * norm, head): the character-LM wrapper stacks these layers.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"
#include "strix/layers.h"
#include "strix/retnet.h"

#define WHO "RetNet"

/* Decay tables of one chunk length n (host-built, uploaded): D (H,n,n), E (H,n,dv) = γ^(t+1),
 * W (H,n,dk) = γ^(n-1-u), and γ^n per head on the host. */
typedef struct decay_set {
    size_t n;
    strix_tensor D, E, W;
    float *gn; /* H */
} decay_set;

/* Rotation tables of positions p0 .. p0+n-1: q (H,n,dk/2) with c folded in, k (n,dk/2) with the
 * key scaling folded in. */
typedef struct rope_set {
    size_t p0, n;
    bool valid;
    strix_tensor qcos, qsin, kcos, ksin;
} rope_set;

typedef struct retnet_work {
    strix_tensor x;                 /* view of the last forward's input */
    size_t B, T;
    bool parallel;                  /* the last forward was the parallel form */
    const strix_tensor *q, *k, *v, *g, *o, *a, *b, *f, *xn, *xn2, *on; /* children's outputs */
    strix_tensor qr, kr, qh, kh, vh, QK, G, Yh, Y, sg, gated, x1, ga, hf, y;
    /* chunk forms */
    strix_tensor qc, kc, vc, Yc, QKc, Gc, tmp, kw, S;
    decay_set dec[2];
    rope_set rope[2];
    float *host;
    size_t host_cap;
    /* backward */
    strix_tensor dY, dYh, dG, dvh, dqh, dkh, dq, dk, dv, don, dsg, dg, dxn, dx1, dga, db, da,
        dxn2, dx;
    /* relevance */
    strix_tensor rx1, rf, rxo, ro, rhalf, rY, rYh, rG, rvh, rqh, rkh, rq, rk, rv, qpre, kpre,
        rxn, rxn2, rx;
} retnet_work;

typedef struct strix_retnet {
    strix_module base;
    strix_retnet_config cfg;
    int dk, dv;
    float gamma[64];                /* per head; n_head <= 64 */
    strix_rmsnorm *ln1, *ln2, *gn;
    strix_linear *q_proj, *k_proj, *v_proj, *g_proj, *out_proj, *fc1, *fc2, *gate;
    strix_param *params[10];        /* in the header's order, for strix_retnet_block_init */
    retnet_work *work;
} strix_retnet;

typedef struct retnet_state {
    strix_module_state base;
    strix_tensor S;                 /* (B,H,dk,dv) */
    size_t B;                       /* 0 until the first call */
    long long pos;
} retnet_state;

static const strix_module_i retnet_vt;
static float rope_theta(size_t i, size_t half);

strix_retnet_config strix_retnet_config_default(int d_model, int n_head) {
    strix_retnet_config c = {.d_model = d_model, .n_head = n_head, .value_dim = 2 * d_model,
                             .ffn_dim = 2 * d_model, .norm_eps = 1e-6f, .chunk_size = 64,
                             .layer_index = 0};
    return c;
}

// ---- buffers -----------------------------------------------------------------------------------

static strix_status ens3(strix_backend *be, strix_tensor *t, size_t a, size_t b, size_t c) {
    int64_t s[3] = {(int64_t)a, (int64_t)b, (int64_t)c};
    return strix_tensor_ensure(be, t, 3, s);
}

static strix_status ens4(strix_backend *be, strix_tensor *t, size_t a, size_t b, size_t c,
                         size_t d) {
    return nn_ensure4(be, t, (int64_t)a, (int64_t)b, (int64_t)c, (int64_t)d);
}

static strix_status host_floats(retnet_work *w, size_t n) {
    if (n <= w->host_cap) return STRIX_OK;
    float *p = realloc(w->host, n * sizeof(float));
    if (!p) return NN_ALLOC_FAIL(WHO);
    w->host = p;
    w->host_cap = n;
    return STRIX_OK;
}

static strix_status upload(strix_backend *be, strix_tensor *t, const float *h, size_t n) {
    return strix_copy(be, t->data, h, n * sizeof(float), STRIX_COPY_H2D);
}

/* The decay tables of chunk length n (slot 0 holds the first length asked for, slot 1 any
 * other: a chunked pass alternates between its chunk length and its tail). */
static strix_status decay_for(strix_retnet *m, size_t n, const decay_set **out) {
    retnet_work *w = m->work;
    for (int i = 0; i < 2; i++)
        if (w->dec[i].n == n) {
            *out = &w->dec[i];
            return STRIX_OK;
        }
    decay_set *d = &w->dec[w->dec[0].n == 0 ? 0 : 1];
    strix_backend *be = m->base.be;
    size_t H = (size_t)m->cfg.n_head, dk = (size_t)m->dk, dv = (size_t)m->dv;
    d->n = 0;
    STRIX_TRY(ens3(be, &d->D, H, n, n));
    STRIX_TRY(ens3(be, &d->E, H, n, dv));
    STRIX_TRY(ens3(be, &d->W, H, n, dk));
    if (!d->gn && !(d->gn = malloc(H * sizeof(float)))) return NN_ALLOC_FAIL(WHO);
    size_t big = n * n > n * dv ? n * n : n * dv;
    if (n * dk > big) big = n * dk;
    STRIX_TRY(host_floats(w, H * big));
    float *hb = w->host;
    for (size_t h = 0; h < H; h++) // D[t][u] = γ^(t-u): 1.0f times γ, t-u times (as RETNET_SCORES)
        for (size_t t = 0; t < n; t++) {
            float p = 1.0f;
            for (size_t u = t + 1; u-- > 0;) {
                hb[(h * n + t) * n + u] = p;
                p *= m->gamma[h];
            }
            for (size_t u = t + 1; u < n; u++) hb[(h * n + t) * n + u] = 0.0f;
        }
    STRIX_TRY(upload(be, &d->D, hb, H * n * n));
    for (size_t h = 0; h < H; h++) { // E[t] = γ^(t+1)
        float p = m->gamma[h];
        for (size_t t = 0; t < n; t++, p *= m->gamma[h])
            for (size_t j = 0; j < dv; j++) hb[(h * n + t) * dv + j] = p;
    }
    STRIX_TRY(upload(be, &d->E, hb, H * n * dv));
    for (size_t h = 0; h < H; h++) { // W[u] = γ^(n-1-u); gn = γ^n
        float p = 1.0f;
        for (size_t u = n; u-- > 0; p *= m->gamma[h])
            for (size_t i = 0; i < dk; i++) hb[(h * n + u) * dk + i] = p;
        d->gn[h] = p;
    }
    STRIX_TRY(upload(be, &d->W, hb, H * n * dk));
    d->n = n;
    *out = d;
    return STRIX_OK;
}

/* The rotation tables of positions p0 .. p0+n-1 (slot 0 for p0 = 0, the parallel form's; slot 1
 * for the rest). θ_i = 1/10000^(i/(d_k/2-1)) and the angle p·θ_i in float, as torchscale forms
 * them (angle buffer, index · angle), cos/sin of that float. */
static strix_status rope_for(strix_retnet *m, size_t p0, size_t n, const rope_set **out) {
    retnet_work *w = m->work;
    for (int i = 0; i < 2; i++)
        if (w->rope[i].valid && w->rope[i].p0 == p0 && w->rope[i].n == n) {
            *out = &w->rope[i];
            return STRIX_OK;
        }
    rope_set *r = &w->rope[p0 == 0 ? 0 : 1];
    strix_backend *be = m->base.be;
    size_t H = (size_t)m->cfg.n_head, half = (size_t)m->dk / 2;
    r->valid = false;
    STRIX_TRY(ens3(be, &r->qcos, H, n, half));
    STRIX_TRY(ens3(be, &r->qsin, H, n, half));
    STRIX_TRY(ens3(be, &r->kcos, 1, n, half));
    STRIX_TRY(ens3(be, &r->ksin, 1, n, half));
    STRIX_TRY(host_floats(w, 2 * H * n * half + 2 * n * half));
    float *qc = w->host, *qs = qc + H * n * half, *kc = qs + H * n * half, *ks = kc + n * half;
    float scaling = (float)(1.0 / sqrt((double)m->dk));
    for (size_t t = 0; t < n; t++) {
        double pos = (double)(p0 + t);
        for (size_t i = 0; i < half; i++) {
            float theta = rope_theta(i, half);
            float arg = (float)pos * theta;
            float c = (float)cos((double)arg), s = (float)sin((double)arg);
            kc[t * half + i] = scaling * c;
            ks[t * half + i] = scaling * s;
            for (size_t h = 0; h < H; h++) {
                double g = (double)m->gamma[h];
                // Σ_{s<=p} γ^s; γ rounds to 1.0f for heads h >= 20 (2^(−5−h) < float's eps),
                // where the sum is its limit p + 1 (torchscale's float decay is 1 there too)
                double sum = g == 1.0 ? pos + 1.0 : (1.0 - pow(g, pos + 1.0)) / (1.0 - g);
                float ch = (float)(1.0 / sqrt(sum));
                qc[(h * n + t) * half + i] = ch * c;
                qs[(h * n + t) * half + i] = ch * s;
            }
        }
    }
    STRIX_TRY(upload(be, &r->qcos, qc, H * n * half));
    STRIX_TRY(upload(be, &r->qsin, qs, H * n * half));
    STRIX_TRY(upload(be, &r->kcos, kc, n * half));
    STRIX_TRY(upload(be, &r->ksin, ks, n * half));
    r->p0 = p0;
    r->n = n;
    r->valid = true;
    *out = r;
    return STRIX_OK;
}

/* dst = src rotated per head (inverse: the transpose) with the q or k tables of `rs`; src, dst
 * (B,T,C), rows at positions t (tables from rs->p0). */
static strix_status rotate(strix_retnet *m, const rope_set *rs, bool is_q, const float *src,
                           float *dst, size_t B, size_t T, bool inverse) {
    size_t C = (size_t)m->cfg.d_model, dk = (size_t)m->dk, half = dk / 2;
    for (int h = 0; h < m->cfg.n_head; h++) {
        size_t off = is_q ? (size_t)h * T * half : 0;
        const float *c = (is_q ? rs->qcos.data : rs->kcos.data) + off;
        const float *s = (is_q ? rs->qsin.data : rs->ksin.data) + off;
        STRIX_TRY(strix_rope_rotate(m->base.be, src + (size_t)h * dk, C, c, s,
                                    dst + (size_t)h * dk, C, B * T, T, 0, dk, inverse));
    }
    return STRIX_OK;
}

static strix_status gemm_b(strix_backend *be, const float *a, size_t lda, size_t sa, bool ta,
                           const float *b, size_t ldb, size_t sb, bool tb, float *c, size_t ldc,
                           size_t sc, size_t M, size_t K, size_t N, size_t batch, float beta,
                           strix_gemm_skip skip) {
    strix_gemm_batch g = {.a = a, .lda = lda, .stride_a = sa, .ta = ta, .b = b, .ldb = ldb,
                          .stride_b = sb, .tb = tb, .c = c, .ldc = ldc, .stride_c = sc, .m = M,
                          .k = K, .n = N, .batch = batch, .alpha = 1.0f, .beta = beta,
                          .skip = skip};
    return strix_gemm_batched(be, &g);
}

/* out[b] = in[b] ⊙ tab for b < B, blocks of n floats (tab broadcast over the batch). */
static strix_status mul_bcast(strix_backend *be, const float *in, const float *tab, float *out,
                              size_t B, size_t n) {
    for (size_t b = 0; b < B; b++) STRIX_TRY(strix_mul(be, in + b * n, tab, out + b * n, n));
    return STRIX_OK;
}

/* The retention of one chunk of n steps, head-major blocks (B,H,n,·): QK = q̃k̃ᵀ, G = QK ⊙ D,
 * Y = G·v, plus (have_S) the old state's share (γ^(t+1) q̃_t)·S; then (want_S) the state
 * S = γ^n·S (0 without have_S) + (W ⊙ k̃)ᵀ·v. */
static strix_status retain_chunk(strix_retnet *m, const float *q, const float *k, const float *v,
                                 size_t n, float *QK, float *G, float *Y, float *S, bool have_S,
                                 bool want_S) {
    retnet_work *w = m->work;
    strix_backend *be = m->base.be;
    size_t B = w->B, H = (size_t)m->cfg.n_head, dk = (size_t)m->dk, dv = (size_t)m->dv;
    size_t BH = B * H;
    const decay_set *d;
    STRIX_TRY(decay_for(m, n, &d));
    STRIX_TRY(gemm_b(be, q, dk, n * dk, false, k, dk, n * dk, true, QK, n, n * n, n, dk, n, BH,
                     0.0f, STRIX_GEMM_FULL));
    STRIX_TRY(mul_bcast(be, QK, d->D.data, G, B, H * n * n));
    STRIX_TRY(gemm_b(be, G, n, n * n, false, v, dv, n * dv, false, Y, dv, n * dv, n, n, dv, BH,
                     0.0f, STRIX_GEMM_A_LOWER));
    if (have_S) {
        STRIX_TRY(ens4(be, &w->tmp, B, H, n, dv));
        STRIX_TRY(gemm_b(be, q, dk, n * dk, false, S, dv, dk * dv, false, w->tmp.data, dv,
                         n * dv, n, dk, dv, BH, 0.0f, STRIX_GEMM_FULL));
        STRIX_TRY(mul_bcast(be, w->tmp.data, d->E.data, w->tmp.data, B, H * n * dv));
        STRIX_TRY(strix_add(be, Y, w->tmp.data, Y, BH * n * dv));
    }
    if (want_S) {
        STRIX_TRY(ens4(be, &w->kw, B, H, n, dk));
        STRIX_TRY(mul_bcast(be, k, d->W.data, w->kw.data, B, H * n * dk));
        for (size_t h = 0; h < H; h++)
            STRIX_TRY(gemm_b(be, w->kw.data + h * n * dk, dk, H * n * dk, true, v + h * n * dv,
                             dv, H * n * dv, false, S + h * dk * dv, dv, H * dk * dv, dk, n, dv,
                             B, have_S ? d->gn[h] : 0.0f, STRIX_GEMM_FULL));
    }
    return STRIX_OK;
}

/* The chunked forms: Yh (B,H,T,dv) from qh, kh, vh in chunks of `cs` steps, starting from S
 * (have_S: S holds the state; else zero) and leaving the state of the end in S. */
static strix_status retain_chunked(strix_retnet *m, size_t cs, float *S, bool have_S) {
    retnet_work *w = m->work;
    strix_backend *be = m->base.be;
    size_t B = w->B, T = w->T, H = (size_t)m->cfg.n_head, dk = (size_t)m->dk,
           dv = (size_t)m->dv, BH = B * H;
    size_t n0 = cs < T ? cs : T;
    STRIX_TRY(ens4(be, &w->qc, B, H, n0, dk));
    STRIX_TRY(ens4(be, &w->kc, B, H, n0, dk));
    STRIX_TRY(ens4(be, &w->vc, B, H, n0, dv));
    STRIX_TRY(ens4(be, &w->Yc, B, H, n0, dv));
    STRIX_TRY(ens4(be, &w->QKc, B, H, n0, n0));
    STRIX_TRY(ens4(be, &w->Gc, B, H, n0, n0));
    for (size_t c0 = 0; c0 < T; c0 += cs) {
        size_t n = T - c0 < cs ? T - c0 : cs;
        STRIX_TRY(strix_copy_2d(be, w->qc.data, n * dk, w->qh.data + c0 * dk, T * dk, BH, n * dk));
        STRIX_TRY(strix_copy_2d(be, w->kc.data, n * dk, w->kh.data + c0 * dk, T * dk, BH, n * dk));
        STRIX_TRY(strix_copy_2d(be, w->vc.data, n * dv, w->vh.data + c0 * dv, T * dv, BH, n * dv));
        STRIX_TRY(retain_chunk(m, w->qc.data, w->kc.data, w->vc.data, n, w->QKc.data, w->Gc.data,
                               w->Yc.data, S, have_S, true));
        STRIX_TRY(strix_copy_2d(be, w->Yh.data + c0 * dv, T * dv, w->Yc.data, n * dv, BH, n * dv));
        have_S = true;
    }
    return STRIX_OK;
}

// ---- forward -----------------------------------------------------------------------------------

static strix_status check_x(const strix_retnet *m, const strix_tensor *x) {
    if (x->ndim != 3 || x->shape[2] != m->cfg.d_model || x->shape[0] < 1 || x->shape[1] < 1)
        return strix_error(STRIX_ERR_SHAPE, "%s: x must be (B,T,%d) with B, T >= 1", WHO,
                           m->cfg.d_model);
    return STRIX_OK;
}

/* The whole layer on x from position p0. form PARALLEL: one chunk, caches for backward and
 * relevance; otherwise chunks of cs steps on state S (have_S: S holds the state at p0). */
static strix_status layer_forward(strix_retnet *m, const strix_tensor *x, strix_retnet_form form,
                                  size_t p0, size_t cs, float *S, bool have_S,
                                  const strix_tensor **y) {
    STRIX_TRY(check_x(m, x));
    retnet_work *w = m->work;
    strix_backend *be = m->base.be;
    size_t B = (size_t)x->shape[0], T = (size_t)x->shape[1], C = (size_t)m->cfg.d_model;
    size_t H = (size_t)m->cfg.n_head, dk = (size_t)m->dk, dv = (size_t)m->dv;
    size_t V = (size_t)m->cfg.value_dim, F = (size_t)m->cfg.ffn_dim, BT = B * T;
    w->parallel = false;
    w->x = nn_view_of(x);
    w->B = B;
    w->T = T;
    STRIX_TRY(strix_module_forward(&m->ln1->base, x, &w->xn));
    STRIX_TRY(strix_module_forward(&m->q_proj->base, w->xn, &w->q));
    STRIX_TRY(strix_module_forward(&m->k_proj->base, w->xn, &w->k));
    STRIX_TRY(strix_module_forward(&m->v_proj->base, w->xn, &w->v));
    STRIX_TRY(strix_module_forward(&m->g_proj->base, w->xn, &w->g));
    const rope_set *rs;
    STRIX_TRY(rope_for(m, p0, T, &rs));
    STRIX_TRY(ens3(be, &w->qr, B, T, C));
    STRIX_TRY(ens3(be, &w->kr, B, T, C));
    STRIX_TRY(rotate(m, rs, true, w->q->data, w->qr.data, B, T, false));
    STRIX_TRY(rotate(m, rs, false, w->k->data, w->kr.data, B, T, false));
    STRIX_TRY(ens4(be, &w->qh, B, H, T, dk));
    STRIX_TRY(ens4(be, &w->kh, B, H, T, dk));
    STRIX_TRY(ens4(be, &w->vh, B, H, T, dv));
    STRIX_TRY(ens4(be, &w->Yh, B, H, T, dv));
    STRIX_TRY(strix_permute_0213(be, w->qr.data, w->qh.data, B, T, H, dk));
    STRIX_TRY(strix_permute_0213(be, w->kr.data, w->kh.data, B, T, H, dk));
    STRIX_TRY(strix_permute_0213(be, w->v->data, w->vh.data, B, T, H, dv));
    if (form == STRIX_RETNET_PARALLEL) {
        STRIX_TRY(ens4(be, &w->QK, B, H, T, T));
        STRIX_TRY(ens4(be, &w->G, B, H, T, T));
        STRIX_TRY(retain_chunk(m, w->qh.data, w->kh.data, w->vh.data, T, w->QK.data, w->G.data,
                               w->Yh.data, NULL, false, false));
    } else {
        STRIX_TRY(retain_chunked(m, cs, S, have_S));
    }
    STRIX_TRY(ens4(be, &w->Y, B, T, H, dv));
    STRIX_TRY(strix_permute_0213(be, w->Yh.data, w->Y.data, B, H, T, dv));
    STRIX_TRY(strix_module_forward(&m->gn->base, &w->Y, &w->on));
    STRIX_TRY(ens3(be, &w->sg, B, T, V));
    STRIX_TRY(ens3(be, &w->gated, B, T, V));
    STRIX_TRY(strix_elementwise(be, STRIX_ACT_SILU, w->g->data, w->sg.data, BT * V));
    STRIX_TRY(strix_mul(be, w->sg.data, w->on->data, w->gated.data, BT * V));
    STRIX_TRY(strix_module_forward(&m->out_proj->base, &w->gated, &w->o));
    STRIX_TRY(ens3(be, &w->x1, B, T, C));
    STRIX_TRY(strix_add(be, x->data, w->o->data, w->x1.data, BT * C));
    STRIX_TRY(strix_module_forward(&m->ln2->base, &w->x1, &w->xn2));
    STRIX_TRY(strix_module_forward(&m->fc1->base, w->xn2, &w->a));
    STRIX_TRY(strix_module_forward(&m->gate->base, w->xn2, &w->b));
    STRIX_TRY(ens3(be, &w->ga, B, T, F));
    STRIX_TRY(ens3(be, &w->hf, B, T, F));
    STRIX_TRY(strix_elementwise(be, STRIX_ACT_GELU, w->a->data, w->ga.data, BT * F));
    STRIX_TRY(strix_mul(be, w->ga.data, w->b->data, w->hf.data, BT * F));
    STRIX_TRY(strix_module_forward(&m->fc2->base, &w->hf, &w->f));
    STRIX_TRY(ens3(be, &w->y, B, T, C));
    STRIX_TRY(strix_add(be, w->x1.data, w->f->data, w->y.data, BT * C));
    w->parallel = form == STRIX_RETNET_PARALLEL;
    if (y) *y = &w->y;
    return STRIX_OK;
}

static strix_retnet *as_retnet(strix_module *mod) {
    return mod && mod->vt == &retnet_vt ? (strix_retnet *)mod : NULL;
}

strix_status strix_retnet_block_forward_form(strix_module *mod, const strix_tensor *x,
                                             strix_retnet_form form, const strix_tensor **y) {
    strix_retnet *m = as_retnet(mod);
    if (!m) return strix_error(STRIX_ERR_ARG, "%s: not a RetNet layer", WHO);
    if (form == STRIX_RETNET_PARALLEL) return layer_forward(m, x, form, 0, 0, NULL, false, y);
    if (form != STRIX_RETNET_CHUNKWISE && form != STRIX_RETNET_RECURRENT)
        return strix_error(STRIX_ERR_ARG, "%s: unknown form %d", WHO, (int)form);
    STRIX_TRY(check_x(m, x));
    STRIX_TRY(ens4(mod->be, &m->work->S, (size_t)x->shape[0], (size_t)m->cfg.n_head,
                   (size_t)m->dk, (size_t)m->dv));
    size_t cs = form == STRIX_RETNET_RECURRENT ? 1 : (size_t)m->cfg.chunk_size;
    return layer_forward(m, x, form, 0, cs, m->work->S.data, false, y);
}

static strix_status vt_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y) {
    return layer_forward((strix_retnet *)mod, x, STRIX_RETNET_PARALLEL, 0, 0, NULL, false, y);
}

static strix_status vt_forward_ex(strix_module *mod, strix_module_io *io) {
    strix_retnet *m = (strix_retnet *)mod;
    if (io->n_in != 1 || !io->in[0] || io->ids || io->mask)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s takes one float input x (B,T,C) and an "
                           "optional state", WHO);
    const strix_tensor *x = io->in[0], *y;
    if (!io->state) {
        STRIX_TRY(layer_forward(m, x, STRIX_RETNET_PARALLEL, 0, 0, NULL, false, &y));
    } else {
        if (io->state->owner != mod)
            return strix_error(STRIX_ERR_ARG, "%s: the state belongs to another module", WHO);
        retnet_state *st = (retnet_state *)io->state;
        STRIX_TRY(check_x(m, x));
        size_t B = (size_t)x->shape[0];
        if (st->B && st->B != B)
            return strix_error(STRIX_ERR_SHAPE, "%s: the state holds batch %zu, x has %zu", WHO,
                               st->B, B);
        if (!st->B) {
            STRIX_TRY(ens4(mod->be, &st->S, B, (size_t)m->cfg.n_head, (size_t)m->dk,
                           (size_t)m->dv));
            st->B = B;
        }
        STRIX_TRY(layer_forward(m, x, STRIX_RETNET_RECURRENT, (size_t)st->pos,
                                (size_t)m->cfg.chunk_size, st->S.data, st->pos > 0, &y));
        st->pos += x->shape[1];
    }
    io->n_out = 1;
    io->out[0] = y;
    return STRIX_OK;
}

// ---- backward (parallel form) ------------------------------------------------------------------

static strix_status sum_into(strix_backend *be, float *acc, const strix_tensor *t, size_t n,
                             bool first) {
    if (first) return strix_copy(be, acc, t->data, n * sizeof(float), STRIX_COPY_D2D);
    return strix_add(be, acc, t->data, acc, n);
}

static strix_status check_cached(const strix_retnet *m, const strix_tensor *t, const char *what) {
    const retnet_work *w = m->work;
    if (!w->y.data) return strix_error(STRIX_ERR_ARG, "%s: %s before any forward", WHO, what);
    if (!w->parallel)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s: %s needs the parallel form's forward "
                           "(strix_module_forward)", WHO, what);
    return nn_check_same(WHO, t, &w->y);
}

static strix_status vt_backward(strix_module *mod, const strix_tensor *dy,
                                const strix_tensor **dx) {
    strix_retnet *m = (strix_retnet *)mod;
    STRIX_TRY(check_cached(m, dy, "backward"));
    retnet_work *w = m->work;
    strix_backend *be = mod->be;
    size_t B = w->B, T = w->T, C = (size_t)m->cfg.d_model, H = (size_t)m->cfg.n_head;
    size_t dk = (size_t)m->dk, dv = (size_t)m->dv, V = (size_t)m->cfg.value_dim;
    size_t F = (size_t)m->cfg.ffn_dim, BT = B * T, BH = B * H;
    const strix_tensor *t;
    // FFN: y = x1 + fc2(gelu(a) ⊙ b)
    const strix_tensor *dh;
    STRIX_TRY(strix_module_backward(&m->fc2->base, dy, &dh));
    STRIX_TRY(ens3(be, &w->dga, B, T, F));
    STRIX_TRY(ens3(be, &w->db, B, T, F));
    STRIX_TRY(ens3(be, &w->da, B, T, F));
    STRIX_TRY(strix_mul(be, dh->data, w->b->data, w->dga.data, BT * F));
    STRIX_TRY(strix_mul(be, dh->data, w->ga.data, w->db.data, BT * F));
    STRIX_TRY(strix_elementwise_backward(be, STRIX_ACT_GELU, w->a->data, w->dga.data, w->da.data,
                                         BT * F));
    STRIX_TRY(ens3(be, &w->dxn2, B, T, C));
    STRIX_TRY(strix_module_backward(&m->fc1->base, &w->da, &t));
    STRIX_TRY(sum_into(be, w->dxn2.data, t, BT * C, true));
    STRIX_TRY(strix_module_backward(&m->gate->base, &w->db, &t));
    STRIX_TRY(sum_into(be, w->dxn2.data, t, BT * C, false));
    STRIX_TRY(strix_module_backward(&m->ln2->base, &w->dxn2, &t));
    STRIX_TRY(ens3(be, &w->dx1, B, T, C));
    STRIX_TRY(strix_add(be, dy->data, t->data, w->dx1.data, BT * C));
    // retention: x1 = x + out_proj(silu(g) ⊙ on)
    const strix_tensor *dgated;
    STRIX_TRY(strix_module_backward(&m->out_proj->base, &w->dx1, &dgated));
    STRIX_TRY(ens3(be, &w->don, B, T, V));
    STRIX_TRY(ens3(be, &w->dsg, B, T, V));
    STRIX_TRY(ens3(be, &w->dg, B, T, V));
    STRIX_TRY(strix_mul(be, dgated->data, w->sg.data, w->don.data, BT * V));
    STRIX_TRY(strix_mul(be, dgated->data, w->on->data, w->dsg.data, BT * V));
    STRIX_TRY(strix_elementwise_backward(be, STRIX_ACT_SILU, w->g->data, w->dsg.data, w->dg.data,
                                         BT * V));
    int64_t yshape[4] = {(int64_t)B, (int64_t)T, (int64_t)H, (int64_t)dv};
    strix_tensor don4 = strix_tensor_view(w->don.data, w->don.device, 4, yshape);
    const strix_tensor *dY;
    STRIX_TRY(strix_module_backward(&m->gn->base, &don4, &dY));
    STRIX_TRY(ens4(be, &w->dYh, B, H, T, dv));
    STRIX_TRY(strix_permute_0213(be, dY->data, w->dYh.data, B, T, H, dv));
    // Y = (QK ⊙ D)·V per (b, h)
    const decay_set *d;
    STRIX_TRY(decay_for(m, T, &d));
    STRIX_TRY(ens4(be, &w->dG, B, H, T, T));
    STRIX_TRY(ens4(be, &w->dvh, B, H, T, dv));
    STRIX_TRY(ens4(be, &w->dqh, B, H, T, dk));
    STRIX_TRY(ens4(be, &w->dkh, B, H, T, dk));
    STRIX_TRY(gemm_b(be, w->dYh.data, dv, T * dv, false, w->vh.data, dv, T * dv, true, w->dG.data,
                     T, T * T, T, dv, T, BH, 0.0f, STRIX_GEMM_FULL));
    STRIX_TRY(mul_bcast(be, w->dG.data, d->D.data, w->dG.data, B, H * T * T));
    STRIX_TRY(gemm_b(be, w->G.data, T, T * T, true, w->dYh.data, dv, T * dv, false, w->dvh.data,
                     dv, T * dv, T, T, dv, BH, 0.0f, STRIX_GEMM_A_UPPER));
    STRIX_TRY(gemm_b(be, w->dG.data, T, T * T, false, w->kh.data, dk, T * dk, false, w->dqh.data,
                     dk, T * dk, T, T, dk, BH, 0.0f, STRIX_GEMM_A_LOWER));
    STRIX_TRY(gemm_b(be, w->dG.data, T, T * T, true, w->qh.data, dk, T * dk, false, w->dkh.data,
                     dk, T * dk, T, T, dk, BH, 0.0f, STRIX_GEMM_A_UPPER));
    // back to (B,T,·), undo the rotations (their transposes), the projections
    STRIX_TRY(ens3(be, &w->dq, B, T, C));
    STRIX_TRY(ens3(be, &w->dk, B, T, C));
    STRIX_TRY(ens3(be, &w->dv, B, T, V));
    STRIX_TRY(ens3(be, &w->dY, B, T, C)); // scratch for the rotated gradients
    const rope_set *rs;
    STRIX_TRY(rope_for(m, 0, T, &rs));
    STRIX_TRY(strix_permute_0213(be, w->dqh.data, w->dY.data, B, H, T, dk));
    STRIX_TRY(rotate(m, rs, true, w->dY.data, w->dq.data, B, T, true));
    STRIX_TRY(strix_permute_0213(be, w->dkh.data, w->dY.data, B, H, T, dk));
    STRIX_TRY(rotate(m, rs, false, w->dY.data, w->dk.data, B, T, true));
    STRIX_TRY(strix_permute_0213(be, w->dvh.data, w->dv.data, B, H, T, dv));
    STRIX_TRY(ens3(be, &w->dxn, B, T, C));
    STRIX_TRY(strix_module_backward(&m->q_proj->base, &w->dq, &t));
    STRIX_TRY(sum_into(be, w->dxn.data, t, BT * C, true));
    STRIX_TRY(strix_module_backward(&m->k_proj->base, &w->dk, &t));
    STRIX_TRY(sum_into(be, w->dxn.data, t, BT * C, false));
    STRIX_TRY(strix_module_backward(&m->v_proj->base, &w->dv, &t));
    STRIX_TRY(sum_into(be, w->dxn.data, t, BT * C, false));
    STRIX_TRY(strix_module_backward(&m->g_proj->base, &w->dg, &t));
    STRIX_TRY(sum_into(be, w->dxn.data, t, BT * C, false));
    STRIX_TRY(strix_module_backward(&m->ln1->base, &w->dxn, &t));
    STRIX_TRY(ens3(be, &w->dx, B, T, C));
    STRIX_TRY(strix_add(be, w->dx1.data, t->data, w->dx.data, BT * C));
    if (dx) *dx = &w->dx;
    return STRIX_OK;
}

// ---- relevance (parallel form) -----------------------------------------------------------------

/* r_in of child `c` for r with the layer's rule (detach: the normalisation held constant). */
static strix_status child_rel(strix_retnet *m, strix_module *c, const strix_tensor *r,
                              bool detach, const strix_tensor **r_in) {
    c->rule = m->base.rule;
    if (detach) c->rule.layer_norm_detach_std = true;
    return strix_module_relevance(c, r, r_in);
}

static strix_status vt_relevance(strix_module *mod, const strix_tensor *r_out,
                                 const strix_tensor **r_in) {
    strix_retnet *m = (strix_retnet *)mod;
    STRIX_TRY(check_cached(m, r_out, "relevance"));
    if (mod->rule.kind != STRIX_LRP_EPSILON)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s: relevance implements the epsilon rule "
                           "only", WHO);
    retnet_work *w = m->work;
    strix_backend *be = mod->be;
    float eps = mod->rule.epsilon;
    size_t B = w->B, T = w->T, C = (size_t)m->cfg.d_model, H = (size_t)m->cfg.n_head;
    size_t dk = (size_t)m->dk, dv = (size_t)m->dv, V = (size_t)m->cfg.value_dim;
    size_t F = (size_t)m->cfg.ffn_dim, BT = B * T, BH = B * H;
    const strix_tensor *t;
    // y = x1 + f
    STRIX_TRY(ens3(be, &w->rx1, B, T, C));
    STRIX_TRY(ens3(be, &w->rf, B, T, C));
    STRIX_TRY(strix_lrp_residual_split(be, w->x1.data, w->f->data, r_out->data, w->rx1.data,
                                       w->rf.data, BT * C, eps));
    STRIX_TRY(child_rel(m, &m->fc2->base, &w->rf, false, &t));
    STRIX_TRY(ens3(be, &w->rhalf, B, T, F));
    STRIX_TRY(strix_lrp_bilinear_elementwise(be, w->ga.data, w->b->data, t->data, w->rhalf.data,
                                             BT * F, eps));
    STRIX_TRY(ens3(be, &w->rxn2, B, T, C));
    STRIX_TRY(child_rel(m, &m->fc1->base, &w->rhalf, false, &t)); // GELU: passes through
    STRIX_TRY(sum_into(be, w->rxn2.data, t, BT * C, true));
    STRIX_TRY(child_rel(m, &m->gate->base, &w->rhalf, false, &t));
    STRIX_TRY(sum_into(be, w->rxn2.data, t, BT * C, false));
    STRIX_TRY(child_rel(m, &m->ln2->base, &w->rxn2, false, &t));
    STRIX_TRY(strix_add(be, w->rx1.data, t->data, w->rx1.data, BT * C));
    // x1 = x + out_proj(silu(g) ⊙ on): the gate detached, all of it to on
    STRIX_TRY(ens3(be, &w->rx, B, T, C));
    STRIX_TRY(ens3(be, &w->ro, B, T, C));
    STRIX_TRY(strix_lrp_residual_split(be, w->x.data, w->o->data, w->rx1.data, w->rx.data,
                                       w->ro.data, BT * C, eps));
    const strix_tensor *rgated;
    STRIX_TRY(child_rel(m, &m->out_proj->base, &w->ro, false, &rgated));
    int64_t yshape[4] = {(int64_t)B, (int64_t)T, (int64_t)H, (int64_t)dv};
    strix_tensor ron4 = strix_tensor_view(rgated->data, rgated->device, 4, yshape);
    STRIX_TRY(child_rel(m, &m->gn->base, &ron4, true, &t));
    STRIX_TRY(ens4(be, &w->rYh, B, H, T, dv));
    STRIX_TRY(strix_permute_0213(be, t->data, w->rYh.data, B, T, H, dv));
    // Y = G·V, G = QK ⊙ D (D constant), QK = q̃·k̃ᵀ: the bilinear rule twice
    STRIX_TRY(ens4(be, &w->rG, B, H, T, T));
    STRIX_TRY(ens4(be, &w->rvh, B, H, T, dv));
    STRIX_TRY(ens4(be, &w->rqh, B, H, T, dk));
    STRIX_TRY(ens4(be, &w->rkh, B, H, T, dk));
    STRIX_TRY(strix_lrp_bilinear_matmul(be, w->G.data, w->vh.data, w->Yh.data, w->rYh.data,
                                        w->rG.data, w->rvh.data, BH, T, T, dv, eps, false));
    STRIX_TRY(strix_lrp_bilinear_matmul(be, w->qh.data, w->kh.data, w->QK.data, w->rG.data,
                                        w->rqh.data, w->rkh.data, BH, T, dk, T, eps, true));
    // the rotations (epsilon rule of RoPE with c / the key scaling), per (b, h) block
    STRIX_TRY(ens4(be, &w->qpre, B, H, T, dk));
    STRIX_TRY(ens4(be, &w->kpre, B, H, T, dk));
    STRIX_TRY(strix_permute_0213(be, w->q->data, w->qpre.data, B, T, H, dk));
    STRIX_TRY(strix_permute_0213(be, w->k->data, w->kpre.data, B, T, H, dk));
    const rope_set *rs;
    STRIX_TRY(rope_for(m, 0, T, &rs));
    size_t half = dk / 2;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            size_t off = (b * H + h) * T * dk;
            STRIX_TRY(strix_lrp_rope(be, w->qpre.data + off, w->qh.data + off, w->rqh.data + off,
                                     rs->qcos.data + h * T * half, rs->qsin.data + h * T * half,
                                     w->rqh.data + off, T, T, dk, eps));
            STRIX_TRY(strix_lrp_rope(be, w->kpre.data + off, w->kh.data + off, w->rkh.data + off,
                                     rs->kcos.data, rs->ksin.data, w->rkh.data + off, T, T, dk,
                                     eps));
        }
    STRIX_TRY(ens3(be, &w->rq, B, T, C));
    STRIX_TRY(ens3(be, &w->rk, B, T, C));
    STRIX_TRY(ens3(be, &w->rv, B, T, V));
    STRIX_TRY(strix_permute_0213(be, w->rqh.data, w->rq.data, B, H, T, dk));
    STRIX_TRY(strix_permute_0213(be, w->rkh.data, w->rk.data, B, H, T, dk));
    STRIX_TRY(strix_permute_0213(be, w->rvh.data, w->rv.data, B, H, T, dv));
    STRIX_TRY(ens3(be, &w->rxn, B, T, C));
    STRIX_TRY(child_rel(m, &m->q_proj->base, &w->rq, false, &t));
    STRIX_TRY(sum_into(be, w->rxn.data, t, BT * C, true));
    STRIX_TRY(child_rel(m, &m->k_proj->base, &w->rk, false, &t));
    STRIX_TRY(sum_into(be, w->rxn.data, t, BT * C, false));
    STRIX_TRY(child_rel(m, &m->v_proj->base, &w->rv, false, &t));
    STRIX_TRY(sum_into(be, w->rxn.data, t, BT * C, false));
    STRIX_TRY(child_rel(m, &m->ln1->base, &w->rxn, false, &t));
    STRIX_TRY(strix_add(be, w->rx.data, t->data, w->rx.data, BT * C));
    if (r_in) *r_in = &w->rx;
    return STRIX_OK;
}

// ---- lifecycle ---------------------------------------------------------------------------------

static strix_status vt_state_new(strix_module *mod, strix_module_state **out) {
    retnet_state *st = calloc(1, sizeof *st);
    if (!st) return NN_ALLOC_FAIL(WHO);
    st->base.owner = mod;
    *out = &st->base;
    return STRIX_OK;
}

static void vt_state_free(strix_module *mod, strix_module_state *s) {
    (void)mod;
    retnet_state *st = (retnet_state *)s;
    strix_tensor_free(&st->S);
    free(st);
}

long long strix_retnet_state_position(const strix_module_state *s) {
    if (!s || !s->owner || s->owner->vt != &retnet_vt) return -1;
    return ((const retnet_state *)s)->pos;
}

static void vt_destroy(strix_module *mod) {
    strix_retnet *m = (strix_retnet *)mod;
    retnet_work *w = m->work;
    strix_module *kids[] = {&m->ln1->base, &m->ln2->base, &m->gn->base, &m->q_proj->base,
                            &m->k_proj->base, &m->v_proj->base, &m->g_proj->base,
                            &m->out_proj->base, &m->fc1->base, &m->fc2->base, &m->gate->base};
    for (size_t i = 0; i < sizeof kids / sizeof kids[0]; i++)
        strix_module_free(kids[i]);
    strix_tensor *ts[] = {
        &w->qr, &w->kr, &w->qh, &w->kh, &w->vh, &w->QK, &w->G, &w->Yh, &w->Y, &w->sg,
        &w->gated, &w->x1, &w->ga, &w->hf, &w->y, &w->qc, &w->kc, &w->vc, &w->Yc, &w->QKc,
        &w->Gc, &w->tmp, &w->kw, &w->S, &w->dY, &w->dYh, &w->dG, &w->dvh, &w->dqh, &w->dkh,
        &w->dq, &w->dk, &w->dv, &w->don, &w->dsg, &w->dg, &w->dxn, &w->dx1, &w->dga, &w->db,
        &w->da, &w->dxn2, &w->dx, &w->rx1, &w->rf, &w->rxo, &w->ro, &w->rhalf, &w->rY, &w->rYh,
        &w->rG, &w->rvh, &w->rqh, &w->rkh, &w->rq, &w->rk, &w->rv, &w->qpre, &w->kpre,
        &w->rxn, &w->rxn2, &w->rx};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
    for (int i = 0; i < 2; i++) {
        strix_tensor_free(&w->dec[i].D);
        strix_tensor_free(&w->dec[i].E);
        strix_tensor_free(&w->dec[i].W);
        free(w->dec[i].gn);
        strix_tensor_free(&w->rope[i].qcos);
        strix_tensor_free(&w->rope[i].qsin);
        strix_tensor_free(&w->rope[i].kcos);
        strix_tensor_free(&w->rope[i].ksin);
    }
    free(w->host);
    free(m);
}

static const strix_module_i retnet_vt = {
    .type = "RetNet", .forward = vt_forward, .backward = vt_backward, .destroy = vt_destroy,
    .relevance = vt_relevance, .forward_ex = vt_forward_ex, .state_new = vt_state_new,
    .state_free = vt_state_free};

/* xavier_uniform bound: gain·sqrt(6/(fan_in + fan_out)). */
static float xavier(int fan_in, int fan_out, double gain) {
    return (float)(gain * sqrt(6.0 / (double)(fan_in + fan_out)));
}

static strix_status add_linear(strix_params *ps, const char *prefix, const char *name, int in,
                               int out, float bound, strix_linear **lin) {
    char full[STRIX_PARAM_NAME_MAX];
    STRIX_TRY(nn_name(full, prefix, name));
    STRIX_TRY(strix_linear_new(ps, full, in, out, false, 0.0f, NULL, lin));
    (*lin)->weight->init = STRIX_INIT_UNIFORM;
    (*lin)->weight->init_std = bound;
    return STRIX_OK;
}

static strix_status check_config(const strix_retnet_config *c, const char *prefix) {
    if (c->d_model < 1 || c->n_head < 1 || c->n_head > 64 || c->value_dim < 1 ||
        c->ffn_dim < 1 || c->d_model % c->n_head || (c->d_model / c->n_head) % 2 ||
        c->value_dim % c->n_head || !(c->norm_eps > 0.0f) || c->chunk_size < 1)
        return strix_error(STRIX_ERR_ARG, "%s %s: d_model %d, n_head %d (1..64, dividing d_model "
                           "and value_dim %d, even key size), ffn_dim %d, norm_eps %g, "
                           "chunk_size %d", WHO, prefix ? prefix : "", c->d_model, c->n_head,
                           c->value_dim, c->ffn_dim, (double)c->norm_eps, c->chunk_size);
    return STRIX_OK;
}

/* θ_i of pair i < half, in float as torchscale: 1 / 10000^linspace(0, 1, half)[i]. */
static float rope_theta(size_t i, size_t half) {
    float lin = half > 1 ? (float)((double)i / (double)(half - 1)) : 0.0f;
    return (float)(1.0 / (double)powf(10000.0f, lin));
}

strix_status strix_retnet_rel_pos_values(const strix_retnet_config *cfg, float *angle,
                                         float *decay) {
    STRIX_TRY(check_config(cfg, "rel_pos"));
    size_t half = (size_t)(cfg->d_model / cfg->n_head) / 2;
    if (angle)
        for (size_t i = 0; i < half; i++) angle[2 * i] = angle[2 * i + 1] = rope_theta(i, half);
    if (decay)
        for (int h = 0; h < cfg->n_head; h++)
            decay[h] = logf((float)(1.0 - ldexp(1.0, -5 - h)));
    return STRIX_OK;
}

strix_status strix_retnet_block_new(strix_params *ps, const char *prefix,
                                    const strix_retnet_config *cfg, strix_module **out) {
    *out = NULL;
    const strix_retnet_config *c = cfg;
    STRIX_TRY(check_config(c, prefix));
    strix_retnet *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL(WHO);
    m->base.vt = &retnet_vt;
    m->base.be = ps->be;
    m->base.rule = (strix_lrp_rule){.kind = STRIX_LRP_EPSILON, .epsilon = 1e-6f};
    m->cfg = *c;
    m->dk = c->d_model / c->n_head;
    m->dv = c->value_dim / c->n_head;
    for (int h = 0; h < c->n_head; h++) m->gamma[h] = (float)(1.0 - ldexp(1.0, -5 - h));
    int C = c->d_model, V = c->value_dim, F = c->ffn_dim;
    float g = (float)pow(2.0, -2.5);
    char name[STRIX_PARAM_NAME_MAX];
    strix_status s = STRIX_OK;
#define STEP(expr)                                                                                \
    do {                                                                                          \
        if (s == STRIX_OK) s = (expr);                                                            \
    } while (0)
    STEP(add_linear(ps, prefix, "retention.q_proj", C, C, xavier(C, C, g), &m->q_proj));
    STEP(add_linear(ps, prefix, "retention.k_proj", C, C, xavier(C, C, g), &m->k_proj));
    STEP(add_linear(ps, prefix, "retention.v_proj", C, V, xavier(C, V, g), &m->v_proj));
    STEP(add_linear(ps, prefix, "retention.g_proj", C, V, xavier(C, V, g), &m->g_proj));
    STEP(add_linear(ps, prefix, "retention.out_proj", V, C, xavier(V, C, 1.0), &m->out_proj));
    STEP(nn_name(name, prefix, "retention_layer_norm"));
    STEP(strix_rmsnorm_new(ps, name, C, c->norm_eps, true, &m->ln1));
    float bc = (float)(1.0 / sqrt((double)C)), bf = (float)(1.0 / sqrt((double)F));
    STEP(add_linear(ps, prefix, "ffn.fc1", C, F, bc, &m->fc1));
    STEP(add_linear(ps, prefix, "ffn.fc2", F, C, bf, &m->fc2));
    STEP(add_linear(ps, prefix, "ffn.gate", C, F, bc, &m->gate));
    STEP(nn_name(name, prefix, "final_layer_norm"));
    STEP(strix_rmsnorm_new(ps, name, C, c->norm_eps, true, &m->ln2));
    STEP(nn_name(name, prefix, "retention.group_norm"));
    STEP(strix_rmsnorm_new(ps, name, m->dv, c->norm_eps, false, &m->gn));
#undef STEP
    if (s != STRIX_OK) {
        strix_module *kids[] = {(strix_module *)m->ln1, (strix_module *)m->ln2,
                                (strix_module *)m->gn, (strix_module *)m->q_proj,
                                (strix_module *)m->k_proj, (strix_module *)m->v_proj,
                                (strix_module *)m->g_proj, (strix_module *)m->out_proj,
                                (strix_module *)m->fc1, (strix_module *)m->fc2,
                                (strix_module *)m->gate};
        for (size_t i = 0; i < sizeof kids / sizeof kids[0]; i++) strix_module_free(kids[i]);
        free(m);
        return s;
    }
    strix_param *order[10] = {m->q_proj->weight, m->k_proj->weight, m->v_proj->weight,
                              m->g_proj->weight, m->out_proj->weight, m->ln1->weight,
                              m->fc1->weight, m->fc2->weight, m->gate->weight, m->ln2->weight};
    memcpy(m->params, order, sizeof order);
    *out = &m->base;
    return STRIX_OK;
}

strix_status strix_retnet_block_init(strix_module *mod, uint64_t seed) {
    strix_retnet *m = as_retnet(mod);
    if (!m) return strix_error(STRIX_ERR_ARG, "%s: not a RetNet layer", WHO);
    size_t max = 0;
    for (int i = 0; i < 10; i++)
        if (m->params[i]->numel > max) max = m->params[i]->numel;
    STRIX_TRY(host_floats(m->work, max));
    float *h = m->work->host;
    for (int i = 0; i < 10; i++) {
        strix_param *p = m->params[i];
        STRIX_ASSERT(p->data != NULL, "%s: parameters not allocated", WHO);
        strix_rng rng;
        strix_rng_seed(&rng, strix_seed_derive(seed, (uint64_t)i));
        for (size_t j = 0; j < p->numel; j++)
            h[j] = p->init == STRIX_INIT_ONES
                       ? 1.0f
                       : (float)(p->init_std * (2.0 * strix_rng_uniform(&rng) - 1.0));
        STRIX_TRY(strix_copy(mod->be, p->data, h, p->numel * sizeof(float), STRIX_COPY_H2D));
    }
    return STRIX_OK;
}
