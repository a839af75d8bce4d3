/*
 * test_retnet.c - the RetNet decoder layer of strix/retnet.h on every CPU backend ("cpu", and
 * "cpu-blas" when built):
 *  1. torchscale goldens (tools/ref/retnet_ref.py, tests/golden/retnet/; d_model 8, 2 heads,
 *     value dim 16, ffn 16, B 2, T 7): layer 0's output in torchscale's parallel, recurrent and
 *     chunkwise (chunk 3) forms against strix's parallel form, strix's chunkwise form, strix's
 *     recurrent form and T decode steps on a state; dx and every parameter gradient of the
 *     parallel form; all within 1e-5 abs + 1e-4 rel;
 *  2. the whole decoder as a character LM assembled from strix modules (Embedding, 2 layers,
 *     RMSNorm, Linear head): logits, loss, every parameter gradient, logits of step-by-step
 *     decoding and of the chunkwise form; torchscale's state dict (safetensors) loads and gives
 *     the same logits;
 *  3. parallel = chunkwise = recurrent on T 23 (chunks of 5 and 1) to rounding (1e-5 abs +
 *     1e-4 rel); decode steps on a state equal the recurrent form bit for bit; a state split
 *     7 + 16 equals one chunked pass of 23 to rounding; the state position and batch checks;
 *  4. finite differences of the input and every parameter (parallel form); 1 and 2 threads give
 *     the same bits;
 *  5. names, shapes, decay flags and the init distributions of strix_retnet_block_init;
 *  6. relevance: conservation (the gap bounded), relevance at the last step reaching t = 0,
 *     and the golden of tools/ref/retnet_lrp_ref.py (when present);
 *  7. errors: bad configs, shapes, backward/relevance after a non-parallel forward.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nn_testutil.h"
#include "strix/layers.h"
#include "strix/loss.h"
#include "strix/retnet.h"
#include "strix/safetensors.h"
#include "strix/state_dict.h"

#define GOLD_ATOL 1e-5
#define GOLD_RTOL 1e-4

#define OK(expr) assert_int_equal((expr), STRIX_OK)

enum { GB = 2, GT = 7, GC = 8, GH = 2, GV = 16, GF = 16, GL = 2, GVOCAB = 11, GCHUNK = 3 };

static const tl_array *need(const tl_golden *gf, const char *name) {
    return golden_need(gf, name);
}

static void load_golden(const char *name, tl_golden *gf) {
    char path[256];
    snprintf(path, sizeof path, "tests/golden/retnet/%s.bin", name);
    assert_true(tl_golden_load(path, gf));
}

static int same_as(strix_backend *be, const tl_golden *gf, const char *name,
                   const strix_tensor *t) {
    return golden_same_as(be, gf, name, t, GOLD_ATOL, GOLD_RTOL);
}

static strix_retnet_config golden_config(void) {
    strix_retnet_config c = strix_retnet_config_default(GC, GH);
    c.value_dim = GV;
    c.ffn_dim = GF;
    c.chunk_size = GCHUNK;
    return c;
}

/* Uploads every "param.<name>" of the golden; every parameter of ps must be there. */
static void load_params(const tl_golden *gf, strix_params *ps) {
    golden_load_params(gf, ps, false);
}

static int grads_match(strix_backend *be, const tl_golden *gf, const strix_params *ps) {
    return golden_grads_match(be, gf, ps, GOLD_ATOL, GOLD_RTOL);
}

/* y of T decode steps (B,1,C) on a fresh state, gathered into a host array (B,T,C). */
static float *decode_steps(strix_backend *be, strix_module *m, const float *xh, size_t B,
                           size_t T, size_t C) {
    strix_module_state *st;
    OK(strix_module_state_new(m, &st));
    float *out = malloc(B * T * C * sizeof(float)), *step = malloc(B * C * sizeof(float));
    for (size_t t = 0; t < T; t++) {
        for (size_t b = 0; b < B; b++)
            memcpy(step + b * C, xh + (b * T + t) * C, C * sizeof(float));
        int64_t shape[3] = {(int64_t)B, 1, (int64_t)C};
        strix_tensor xs = tensor_from_host(be, 3, shape, step);
        strix_module_io io = strix_module_io_of(&xs);
        io.state = st;
        OK(strix_module_forward_ex(m, &io));
        assert_int_equal(io.n_out, 1);
        float *y = from_backend(be, io.out[0]->data, B * C);
        for (size_t b = 0; b < B; b++) memcpy(out + (b * T + t) * C, y + b * C, C * sizeof(float));
        free(y);
        strix_tensor_free(&xs);
    }
    assert_int_equal(strix_retnet_state_position(st), (long long)T);
    strix_module_state_free(m, st);
    free(step);
    return out;
}

// ---- 1. layer goldens --------------------------------------------------------------------------

static void test_golden_block(void **state) {
    strix_backend *be = *state;
    tl_golden gp, gr, gc;
    load_golden("block_parallel", &gp);
    load_golden("block_recurrent", &gr);
    load_golden("block_chunkwise", &gc);
    built b;
    begin(&b, be);
    strix_retnet_config cfg = golden_config();
    OK(strix_retnet_block_new(&b.ps, "", &cfg, &b.m));
    OK(strix_params_alloc(&b.ps));
    load_params(&gp, &b.ps);
    const tl_array *xa = need(&gp, "x");
    strix_tensor x = tensor_from_host(be, xa->ndim, xa->shape, xa->data);
    const strix_tensor *y, *dx;
    int bad = 0;
    // strix's chunkwise and recurrent forms against torchscale's
    OK(strix_retnet_block_forward_form(b.m, &x, STRIX_RETNET_CHUNKWISE, &y));
    bad += same_as(be, &gc, "y", y);
    OK(strix_retnet_block_forward_form(b.m, &x, STRIX_RETNET_RECURRENT, &y));
    bad += same_as(be, &gr, "y", y);
    float *steps = decode_steps(be, b.m, xa->data, GB, GT, GC);
    bad += tl_check_close("decode steps vs torchscale recurrent", steps, need(&gr, "y")->data,
                          GB * GT * GC, GOLD_ATOL, GOLD_RTOL) ? 0 : 1;
    free(steps);
    // the parallel form, its backward
    OK(strix_module_forward(b.m, &x, &y));
    bad += same_as(be, &gp, "y", y);
    bad += same_as(be, &gr, "y", y) + same_as(be, &gc, "y", y);
    const tl_array *dya = need(&gp, "dy");
    strix_tensor dy = tensor_from_host(be, dya->ndim, dya->shape, dya->data);
    OK(strix_params_zero_grad(&b.ps));
    OK(strix_module_backward(b.m, &dy, &dx));
    bad += same_as(be, &gp, "dx", dx);
    bad += grads_match(be, &gp, &b.ps);
    if (bad) fail_msg("%d arrays differ from torchscale", bad);
    strix_tensor_free(&x);
    strix_tensor_free(&dy);
    release(&b);
    tl_golden_free(&gp);
    tl_golden_free(&gr);
    tl_golden_free(&gc);
}

/* Whether tensor `name` of sf holds want[0..n) within atol (0: bit for bit). */
static bool safetensors_matches(const strix_safetensors *sf, const char *name, const float *want,
                                size_t n, double atol) {
    const strix_st_tensor *t = strix_safetensors_find(sf, name);
    if (!t || (size_t)strix_st_numel(t) != n) {
        fprintf(stderr, "%s: missing or of another size\n", name);
        return false;
    }
    float got[64];
    assert_true(n <= 64);
    assert_int_equal(strix_safetensors_to_f32(sf, t, got, 64), STRIX_OK);
    return atol == 0.0 ? tl_check_bits(name, got, want, n)
                       : tl_check_close(name, got, want, n, atol, 0.0);
}

// ---- 2. the decoder as a character LM ----------------------------------------------------------

typedef struct lm {
    strix_params ps;
    strix_embedding *emb;
    strix_module *layers[GL];
    strix_rmsnorm *norm;
    strix_linear *head;
} lm;

static void lm_build(lm *L, strix_backend *be) {
    strix_params_init_empty(&L->ps, be);
    OK(strix_embedding_new(&L->ps, "embed_tokens", GVOCAB, GC, 1.0f, &L->emb));
    strix_retnet_config cfg = golden_config();
    for (int l = 0; l < GL; l++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "layers.%d", l);
        cfg.layer_index = l;
        OK(strix_retnet_block_new(&L->ps, prefix, &cfg, &L->layers[l]));
    }
    OK(strix_rmsnorm_new(&L->ps, "layer_norm", GC, 1e-6f, true, &L->norm));
    OK(strix_linear_new(&L->ps, "output_projection", GC, GVOCAB, false, 0.02f, NULL, &L->head));
    OK(strix_params_alloc(&L->ps));
}

static void lm_free(lm *L) {
    strix_module_free(&L->emb->base);
    for (int l = 0; l < GL; l++) strix_module_free(L->layers[l]);
    strix_module_free(&L->norm->base);
    strix_module_free(&L->head->base);
    strix_params_free(&L->ps);
}

/* logits (B,T,V) of ids (backend int32, B·T) in the form (PARALLEL: strix_module_forward). */
static const strix_tensor *lm_forward(lm *L, const int32_t *ids, strix_retnet_form form) {
    int64_t shape[2] = {GB, GT};
    const strix_tensor *h;
    OK(strix_embedding_forward(L->emb, ids, 2, shape, &h));
    for (int l = 0; l < GL; l++)
        OK(strix_retnet_block_forward_form(L->layers[l], h, form, &h));
    OK(strix_module_forward(&L->norm->base, h, &h));
    OK(strix_module_forward(&L->head->base, h, &h));
    return h;
}

static void test_golden_lm(void **state) {
    strix_backend *be = *state;
    tl_golden gf;
    load_golden("lm", &gf);
    lm L;
    lm_build(&L, be);
    load_params(&gf, &L.ps);
    int32_t *ids_h = golden_ints(need(&gf, "ids")), *tg_h = golden_ints(need(&gf, "targets"));
    int32_t *ids, *tg;
    size_t n = GB * GT;
    OK(strix_alloc(be, n * sizeof(int32_t), (void **)&ids));
    OK(strix_alloc(be, n * sizeof(int32_t), (void **)&tg));
    OK(strix_copy(be, ids, ids_h, n * sizeof(int32_t), STRIX_COPY_H2D));
    OK(strix_copy(be, tg, tg_h, n * sizeof(int32_t), STRIX_COPY_H2D));
    int bad = 0;
    const strix_tensor *logits = lm_forward(&L, ids, STRIX_RETNET_CHUNKWISE);
    bad += same_as(be, &gf, "logits_chunkwise", logits);
    logits = lm_forward(&L, ids, STRIX_RETNET_PARALLEL);
    bad += same_as(be, &gf, "logits", logits);
    strix_tensor grad;
    OK(strix_tensor_new(be, logits->ndim, logits->shape, &grad));
    strix_loss_workspace ws;
    strix_loss_workspace_init(&ws, be);
    float loss;
    OK(strix_cross_entropy_loss(&ws, logits->data, tg, n, GVOCAB, STRIX_REDUCTION_MEAN, 0.0f,
                                grad.data, 1.0f, &loss));
    float want = need(&gf, "loss")->data[0];
    if (fabsf(loss - want) > GOLD_ATOL + GOLD_RTOL * fabsf(want))
        fail_msg("loss %.7g, torchscale %.7g", (double)loss, (double)want);
    OK(strix_params_zero_grad(&L.ps));
    const strix_tensor *d;
    OK(strix_module_backward(&L.head->base, &grad, &d));
    OK(strix_module_backward(&L.norm->base, d, &d));
    for (int l = GL; l-- > 0;) OK(strix_module_backward(L.layers[l], d, &d));
    OK(strix_embedding_backward(L.emb, d));
    bad += grads_match(be, &gf, &L.ps);
    // step-by-step decoding: every layer on its own state, one position at a time
    strix_module_state *st[GL];
    for (int l = 0; l < GL; l++) OK(strix_module_state_new(L.layers[l], &st[l]));
    float *rec = malloc(n * GVOCAB * sizeof(float));
    for (int t = 0; t < GT; t++) {
        int32_t step_h[GB];
        for (int b = 0; b < GB; b++) step_h[b] = ids_h[b * GT + t];
        int32_t *step;
        OK(strix_alloc(be, sizeof step_h, (void **)&step));
        OK(strix_copy(be, step, step_h, sizeof step_h, STRIX_COPY_H2D));
        int64_t shape[2] = {GB, 1};
        const strix_tensor *h;
        OK(strix_embedding_forward(L.emb, step, 2, shape, &h));
        for (int l = 0; l < GL; l++) {
            strix_module_io io = strix_module_io_of(h);
            io.state = st[l];
            OK(strix_module_forward_ex(L.layers[l], &io));
            h = io.out[0];
        }
        OK(strix_module_forward(&L.norm->base, h, &h));
        OK(strix_module_forward(&L.head->base, h, &h));
        float *lh = from_backend(be, h->data, GB * GVOCAB);
        for (int b = 0; b < GB; b++)
            memcpy(rec + ((size_t)b * GT + (size_t)t) * GVOCAB, lh + b * GVOCAB,
                   GVOCAB * sizeof(float));
        free(lh);
        strix_free(be, step);
    }
    bad += tl_check_close("logits_recurrent", rec, need(&gf, "logits_recurrent")->data,
                          n * GVOCAB, GOLD_ATOL, GOLD_RTOL) ? 0 : 1;
    free(rec);
    for (int l = 0; l < GL; l++) strix_module_state_free(L.layers[l], st[l]);
    // torchscale's state dict: its rel-pos buffers are not parameters (non-strict load) ...
    lm L2;
    lm_build(&L2, be);
    OK(strix_state_dict_load(&L2.ps, "tests/golden/retnet/lm_torch.st", false));
    logits = lm_forward(&L2, ids, STRIX_RETNET_PARALLEL);
    bad += same_as(be, &gf, "logits", logits);
    assert_int_equal(strix_state_dict_load(&L2.ps, "tests/golden/retnet/lm_torch.st", true),
                     STRIX_ERR_FORMAT); // strict: retnet_rel_pos.angle/decay are unexpected
    // ... and are strix_retnet_rel_pos_values
    strix_safetensors *sf;
    OK(strix_safetensors_read("tests/golden/retnet/lm_torch.st", &sf));
    strix_retnet_config cfg = golden_config();
    float angle[GC / GH], decay[GH];
    OK(strix_retnet_rel_pos_values(&cfg, angle, decay));
    bad += safetensors_matches(sf, "retnet_rel_pos.angle", angle, GC / GH, 0.0) ? 0 : 1;
    bad += safetensors_matches(sf, "retnet_rel_pos.decay", decay, GH, 0.0) ? 0 : 1;
    strix_safetensors_free(sf);
    if (bad) fail_msg("%d arrays differ from torchscale", bad);
    lm_free(&L2);
    strix_loss_workspace_free(&ws);
    strix_tensor_free(&grad);
    strix_free(be, ids);
    strix_free(be, tg);
    free(ids_h);
    free(tg_h);
    lm_free(&L);
    tl_golden_free(&gf);
}

// ---- 3. the three forms ------------------------------------------------------------------------

static void test_forms_agree(void **state) {
    strix_backend *be = *state;
    enum { B = 3, T = 23, C = 12 };
    built b;
    begin(&b, be);
    strix_retnet_config cfg = strix_retnet_config_default(C, 3);
    cfg.value_dim = 18;
    cfg.ffn_dim = 20;
    cfg.chunk_size = 5;
    OK(strix_retnet_block_new(&b.ps, "blk", &cfg, &b.m));
    OK(strix_params_alloc(&b.ps));
    OK(strix_retnet_block_init(b.m, 7));
    float xh[B * T * C];
    tl_fill_uniform(xh, B * T * C, 11, -2.0f, 2.0f);
    int64_t shape[3] = {B, T, C};
    strix_tensor x = tensor_from_host(be, 3, shape, xh);
    const strix_tensor *y;
    OK(strix_module_forward(b.m, &x, &y));
    float *par = from_backend(be, y->data, B * T * C);
    OK(strix_retnet_block_forward_form(b.m, &x, STRIX_RETNET_CHUNKWISE, &y));
    float *chk = from_backend(be, y->data, B * T * C);
    OK(strix_retnet_block_forward_form(b.m, &x, STRIX_RETNET_RECURRENT, &y));
    float *rec = from_backend(be, y->data, B * T * C);
    assert_true(tl_check_close("chunkwise vs parallel", chk, par, B * T * C, 1e-5, 1e-4));
    assert_true(tl_check_close("recurrent vs parallel", rec, par, B * T * C, 1e-5, 1e-4));
    double worst = 0;
    for (size_t i = 0; i < B * T * C; i++) {
        double d = fabs((double)rec[i] - par[i]);
        if (d > worst) worst = d;
        d = fabs((double)chk[i] - par[i]);
        if (d > worst) worst = d;
    }
    print_message("    forms: max |difference| from the parallel form %.3g\n", worst);
    // decode steps on a state with chunk_size 1 = the recurrent form bit for bit
    strix_module *m1;
    cfg.chunk_size = 1;
    strix_params ps1;
    strix_params_init_empty(&ps1, be);
    OK(strix_retnet_block_new(&ps1, "blk", &cfg, &m1));
    OK(strix_params_alloc(&ps1));
    OK(strix_copy(be, ps1.data, b.ps.data, b.ps.total * sizeof(float), STRIX_COPY_D2D));
    float *steps = decode_steps(be, m1, xh, B, T, C);
    if (strcmp(strix_backend_name(be), "cpu") == 0) // the own GEMM: the same bits for any m
        assert_true(tl_check_bits("decode steps vs recurrent form", steps, rec, B * T * C));
    else // BLAS blocks by the problem's shape
        assert_true(tl_check_close("decode steps vs recurrent form", steps, rec, B * T * C,
                                   1e-6, 1e-5));
    free(steps);
    // a state carried over two calls of 7 and 16 steps (chunks of 5) = one chunked pass
    strix_module_state *st;
    OK(strix_module_state_new(b.m, &st));
    float *two = malloc(B * T * C * sizeof(float));
    size_t cut = 7;
    for (int part = 0; part < 2; part++) {
        size_t t0 = part ? cut : 0, n = part ? T - cut : cut;
        float *xp = malloc(B * n * C * sizeof(float));
        for (size_t bb = 0; bb < B; bb++)
            memcpy(xp + bb * n * C, xh + (bb * T + t0) * C, n * C * sizeof(float));
        int64_t ps_[3] = {B, (int64_t)n, C};
        strix_tensor xs = tensor_from_host(be, 3, ps_, xp);
        strix_module_io io = strix_module_io_of(&xs);
        io.state = st;
        OK(strix_module_forward_ex(b.m, &io));
        float *yp = from_backend(be, io.out[0]->data, B * n * C);
        for (size_t bb = 0; bb < B; bb++)
            memcpy(two + (bb * T + t0) * C, yp + bb * n * C, n * C * sizeof(float));
        free(yp);
        free(xp);
        strix_tensor_free(&xs);
    }
    assert_true(tl_check_close("7 + 16 steps on a state vs parallel", two, par, B * T * C, 1e-5,
                               1e-4));
    assert_int_equal(strix_retnet_state_position(st), T);
    // the state's batch is fixed by its first call
    int64_t s2[3] = {B + 1, 1, C};
    strix_tensor xb;
    OK(strix_tensor_new(be, 3, s2, &xb));
    strix_module_io io = strix_module_io_of(&xb);
    io.state = st;
    assert_int_equal(strix_module_forward_ex(b.m, &io), STRIX_ERR_SHAPE);
    // a state of another module
    io.state = st;
    assert_int_equal(strix_module_forward_ex(m1, &io), STRIX_ERR_ARG);
    strix_module_state_free(b.m, st);
    strix_tensor_free(&xb);
    free(two);
    free(par);
    free(chk);
    free(rec);
    strix_module_free(m1);
    strix_params_free(&ps1);
    strix_tensor_free(&x);
    release(&b);
}

// ---- 4. finite differences ---------------------------------------------------------------------

static void test_finite_differences(void **state) {
    strix_backend *be = *state;
    built b;
    begin(&b, be);
    strix_retnet_config cfg = strix_retnet_config_default(8, 2);
    cfg.value_dim = 12;
    cfg.ffn_dim = 10;
    OK(strix_retnet_block_new(&b.ps, "blk", &cfg, &b.m));
    finish(&b, 5);
    int64_t shape[3] = {2, 5, 8};
    // steps of 1e-3 (fd_module's `kinks` mode, which also skips a coordinate whose one-sided
    // slopes disagree, at most a tenth): the group norm divides by the rms of each head's
    // retention output, so with random weights the loss is curved enough that steps of 1e-2
    // miss the slope by a few percent here and there (q_proj: 1.8% on one coordinate)
    fd_module(be, &b.ps, b.m, 3, shape, 17, true, 24);
    release(&b);
}

/* 1 and 2 threads: the same bits for y, dx and every gradient (every primitive's sums have a
 * fixed order). */
static void test_threads_bit_identical(void **state) {
    strix_backend *be = *state;
    enum { B = 2, T = 40, C = 16 };
    built b;
    begin(&b, be);
    strix_retnet_config cfg = strix_retnet_config_default(C, 2);
    OK(strix_retnet_block_new(&b.ps, "blk", &cfg, &b.m));
    OK(strix_params_alloc(&b.ps));
    OK(strix_retnet_block_init(b.m, 21));
    float xh[B * T * C];
    tl_fill_uniform(xh, B * T * C, 8, -1.0f, 1.0f);
    int64_t shape[3] = {B, T, C};
    strix_tensor x = tensor_from_host(be, 3, shape, xh);
    float *out[2][3];
    int saved = strix_get_num_threads();
    for (int k = 0; k < 2; k++) {
        strix_set_num_threads(k + 1);
        const strix_tensor *y, *dx;
        OK(strix_module_forward(b.m, &x, &y));
        OK(strix_params_zero_grad(&b.ps));
        OK(strix_module_backward(b.m, &x, &dx)); // dy = x: any fixed tensor of y's shape
        out[k][0] = from_backend(be, y->data, B * T * C);
        out[k][1] = from_backend(be, dx->data, B * T * C);
        out[k][2] = from_backend(be, b.ps.grad, b.ps.total);
    }
    strix_set_num_threads(saved);
    assert_true(tl_check_bits("y, 1 vs 2 threads", out[0][0], out[1][0], B * T * C));
    assert_true(tl_check_bits("dx, 1 vs 2 threads", out[0][1], out[1][1], B * T * C));
    assert_true(tl_check_bits("grads, 1 vs 2 threads", out[0][2], out[1][2], b.ps.total));
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 3; i++) free(out[k][i]);
    strix_tensor_free(&x);
    release(&b);
}

// ---- 5. names and init -------------------------------------------------------------------------

static void test_names_and_init(void **state) {
    strix_backend *be = *state;
    built b;
    begin(&b, be);
    strix_retnet_config cfg = strix_retnet_config_default(16, 4);
    OK(strix_retnet_block_new(&b.ps, "layers.3", &cfg, &b.m));
    OK(strix_params_alloc(&b.ps));
    static const struct {
        const char *name;
        int64_t rows, cols;
        double bound; /* 0: ones */
        bool decay;
    } want[] = {
        {"layers.3.retention.q_proj.weight", 16, 16, 0.1767767 * 0.4330127, true},
        {"layers.3.retention.k_proj.weight", 16, 16, 0.1767767 * 0.4330127, true},
        {"layers.3.retention.v_proj.weight", 32, 16, 0.1767767 * 0.3535534, true},
        {"layers.3.retention.g_proj.weight", 32, 16, 0.1767767 * 0.3535534, true},
        {"layers.3.retention.out_proj.weight", 16, 32, 0.3535534, true},
        {"layers.3.retention_layer_norm.weight", 16, 1, 0.0, false},
        {"layers.3.ffn.fc1.weight", 32, 16, 0.25, true},
        {"layers.3.ffn.fc2.weight", 16, 32, 0.1767767, true},
        {"layers.3.ffn.gate.weight", 32, 16, 0.25, true},
        {"layers.3.final_layer_norm.weight", 16, 1, 0.0, false},
    };
    assert_int_equal(b.ps.count, sizeof want / sizeof want[0]);
    OK(strix_retnet_block_init(b.m, 99));
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        strix_param *p = b.ps.items[i];
        assert_string_equal(p->name, want[i].name);
        assert_int_equal(p->shape[0], want[i].rows);
        if (want[i].cols > 1) assert_int_equal(p->shape[1], want[i].cols);
        assert_int_equal(p->decay, want[i].decay);
        float *h = from_backend(be, p->data, p->numel);
        double mx = 0, sq = 0;
        for (size_t j = 0; j < p->numel; j++) {
            if (want[i].bound == 0.0) assert_true(h[j] == 1.0f);
            mx = fmax(mx, fabs(h[j]));
            sq += (double)h[j] * h[j];
        }
        if (want[i].bound > 0.0) {
            // U(-b, b): all within b, the largest near b, the variance b²/3 (256+ draws)
            assert_true(mx <= want[i].bound * (1 + 1e-6));
            assert_true(mx >= 0.9 * want[i].bound);
            double var = sq / (double)p->numel, expect = want[i].bound * want[i].bound / 3.0;
            assert_true(fabs(var - expect) < 0.25 * expect);
        }
        free(h);
    }
    release(&b);
}

// ---- 7. errors ---------------------------------------------------------------------------------

static void test_errors(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_module *m = NULL;
    strix_retnet_config c = strix_retnet_config_default(8, 3); // 3 does not divide 8
    assert_int_equal(strix_retnet_block_new(&ps, "x", &c, &m), STRIX_ERR_ARG);
    c = strix_retnet_config_default(6, 2); // key size 3 is odd
    assert_int_equal(strix_retnet_block_new(&ps, "x", &c, &m), STRIX_ERR_ARG);
    c = strix_retnet_config_default(8, 2);
    c.chunk_size = 0;
    assert_int_equal(strix_retnet_block_new(&ps, "x", &c, &m), STRIX_ERR_ARG);
    c = strix_retnet_config_default(8, 2);
    c.value_dim = 7;
    assert_int_equal(strix_retnet_block_new(&ps, "x", &c, &m), STRIX_ERR_ARG);
    assert_null(m);
    assert_int_equal(ps.count, 0);
    c = strix_retnet_config_default(8, 2);
    OK(strix_retnet_block_new(&ps, "x", &c, &m));
    OK(strix_params_alloc(&ps));
    OK(strix_retnet_block_init(m, 1));
    int64_t bad_shape[3] = {2, 3, 7}, good[3] = {2, 3, 8};
    strix_tensor xb, x;
    OK(strix_tensor_new(be, 3, bad_shape, &xb));
    OK(strix_tensor_new(be, 3, good, &x));
    const strix_tensor *y, *dx;
    assert_int_equal(strix_module_forward(m, &xb, &y), STRIX_ERR_SHAPE);
    assert_int_equal(strix_module_backward(m, &x, &dx), STRIX_ERR_ARG); // before any forward
    OK(strix_retnet_block_forward_form(m, &x, STRIX_RETNET_CHUNKWISE, &y));
    assert_int_equal(strix_module_backward(m, &x, &dx), STRIX_ERR_UNSUPPORTED);
    assert_int_equal(strix_module_relevance(m, &x, &dx), STRIX_ERR_UNSUPPORTED);
    OK(strix_module_forward(m, &x, &y));
    assert_int_equal(strix_module_backward(m, &xb, &dx), STRIX_ERR_SHAPE);
    OK(strix_module_backward(m, &x, &dx));
    assert_int_equal(strix_retnet_block_init(NULL, 1), STRIX_ERR_ARG);
    strix_tensor_free(&x);
    strix_tensor_free(&xb);
    strix_module_free(m);
    strix_params_free(&ps);
}

// ---- 6. relevance ------------------------------------------------------------------------------

/* Sum of n backend floats in double on the host. */
static double host_sum(strix_backend *be, const float *dev, size_t n, double *abs_sum) {
    float *h = from_backend(be, dev, n);
    double s = 0, a = 0;
    for (size_t i = 0; i < n; i++) {
        s += h[i];
        a += fabs(h[i]);
    }
    free(h);
    if (abs_sum) *abs_sum = a;
    return s;
}

static void test_lrp_golden(void **state) {
    strix_backend *be = *state;
    tl_golden gf;
    load_golden("lrp", &gf);
    built b;
    begin(&b, be);
    strix_retnet_config cfg = golden_config();
    OK(strix_retnet_block_new(&b.ps, "", &cfg, &b.m));
    OK(strix_params_alloc(&b.ps));
    load_params(&gf, &b.ps);
    const tl_array *xa = need(&gf, "x");
    strix_tensor x = tensor_from_host(be, xa->ndim, xa->shape, xa->data);
    const strix_tensor *y, *r_in;
    OK(strix_module_forward(b.m, &x, &y));
    b.m->rule.epsilon = 1e-9f; // the transcription drops the stabilisers
    int bad = 0;
    static const char *const seeds[][2] = {{"r_rand", "rel_rand"}, {"r_last", "rel_last"}};
    for (int i = 0; i < 2; i++) {
        const tl_array *ra = need(&gf, seeds[i][0]);
        strix_tensor r = tensor_from_host(be, ra->ndim, ra->shape, ra->data);
        OK(strix_module_relevance(b.m, &r, &r_in));
        bad += same_as(be, &gf, seeds[i][1], r_in);
        strix_tensor_free(&r);
    }
    if (bad) fail_msg("%d relevances differ from the PyTorch transcription", bad);
    strix_tensor_free(&x);
    release(&b);
    tl_golden_free(&gf);
}

/* Conservation with the default epsilon (1e-6) on a random layer, and relevance seeded at the
 * last step reaching t = 0. */
static void test_lrp_conservation_and_reach(void **state) {
    strix_backend *be = *state;
    enum { B = 2, T = 12, C = 12 };
    built b;
    begin(&b, be);
    strix_retnet_config cfg = strix_retnet_config_default(C, 3);
    OK(strix_retnet_block_new(&b.ps, "blk", &cfg, &b.m));
    OK(strix_params_alloc(&b.ps));
    OK(strix_retnet_block_init(b.m, 3));
    float xh[B * T * C];
    tl_fill_uniform(xh, B * T * C, 5, -1.5f, 1.5f);
    int64_t shape[3] = {B, T, C};
    strix_tensor x = tensor_from_host(be, 3, shape, xh);
    const strix_tensor *y, *r_in;
    OK(strix_module_forward(b.m, &x, &y));
    float *yh = from_backend(be, y->data, B * T * C);
    // seed: R_y = y on the last step (explaining the last position), 0 elsewhere
    float rh[B * T * C];
    memset(rh, 0, sizeof rh);
    for (int bb = 0; bb < B; bb++)
        for (int c = 0; c < C; c++) rh[(bb * T + T - 1) * C + c] = yh[(bb * T + T - 1) * C + c];
    strix_tensor r = tensor_from_host(be, 3, shape, rh);
    OK(strix_module_relevance(b.m, &r, &r_in));
    double total_abs, sy = host_sum(be, r.data, B * T * C, &total_abs);
    double sx = host_sum(be, r_in->data, B * T * C, NULL);
    double gap = fabs(sx - sy) / total_abs;
    print_message("    conservation: sum R_y %.6g, sum R_x %.6g, gap %.2e of sum |R_y|\n", sy, sx,
                  gap);
    assert_true(gap < 1e-5); // only the stabilisers' share is lost (eps 1e-6; measured 6e-7)
    float *rx = from_backend(be, r_in->data, B * T * C);
    double at0 = 0, all = 0;
    for (int bb = 0; bb < B; bb++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
                double v = fabs(rx[(bb * T + t) * C + c]);
                all += v;
                if (t == 0) at0 += v;
            }
    print_message("    relevance at t = 0: %.3g of %.3g\n", at0, all);
    assert_true(at0 > 1e-3 * all); // the retention carries it back to the first step
    free(rx);
    free(yh);
    strix_tensor_free(&r);
    strix_tensor_free(&x);
    release(&b);
}

static void test_lrp_errors(void **state) {
    strix_backend *be = *state;
    built b;
    begin(&b, be);
    strix_retnet_config cfg = strix_retnet_config_default(8, 2);
    OK(strix_retnet_block_new(&b.ps, "blk", &cfg, &b.m));
    OK(strix_params_alloc(&b.ps));
    OK(strix_retnet_block_init(b.m, 3));
    int64_t shape[3] = {1, 4, 8}, other[3] = {1, 5, 8};
    strix_tensor x, r2;
    OK(strix_tensor_new(be, 3, shape, &x));
    OK(strix_tensor_new(be, 3, other, &r2));
    const strix_tensor *y, *r_in;
    assert_int_equal(strix_module_relevance(b.m, &x, &r_in), STRIX_ERR_ARG); // no forward yet
    OK(strix_module_forward(b.m, &x, &y));
    assert_int_equal(strix_module_relevance(b.m, &r2, &r_in), STRIX_ERR_SHAPE);
    b.m->rule.kind = STRIX_LRP_GAMMA;
    assert_int_equal(strix_module_relevance(b.m, &x, &r_in), STRIX_ERR_UNSUPPORTED);
    strix_tensor_free(&x);
    strix_tensor_free(&r2);
    release(&b);
}

int main(void) {
    struct CMUnitTest tests[] = {
        BACKEND_TEST(test_golden_block),   BACKEND_TEST(test_golden_lm),
        BACKEND_TEST(test_forms_agree),    BACKEND_TEST(test_finite_differences),
        BACKEND_TEST(test_names_and_init), BACKEND_TEST(test_errors),
        BACKEND_TEST(test_lrp_golden),     BACKEND_TEST(test_lrp_conservation_and_reach),
        BACKEND_TEST(test_lrp_errors),     BACKEND_TEST(test_threads_bit_identical),
    };
    return run_on_each_backend("retnet", tests, sizeof tests / sizeof tests[0]) ? 1 : 0;
}
