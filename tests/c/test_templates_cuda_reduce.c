/* The CUDA reduction template (forge/templates/cuda_reduce.c): cuda_reduce_mean.
 *
 * Without NVRTC: applies() on signatures it must accept and on ones it must refuse, the start
 * hook, and every knob combination rendered on every case, its launch record parsed and checked
 * against the effective values the source states (strategy, [O][R][I] split, block, grid, vector
 * width within the alignment).
 * With NVRTC (no GPU needed): a deterministic spread of combinations per case, covering every
 * value of every knob plus the all-first-values vector and the start hook's, compiled for sm_90.
 * With a GPU (the compiler's arch() answers): each of those kernels run on random inputs with the
 * output poisoned to 0xff bytes (NaN in every float dtype), compared with a double-precision mean
 * (fp32 1e-4, fp16 1e-3, bf16 1e-2, atol and rtol), the input checked unchanged.
 *
 * Cases: LLM RMSNorm variances (rows of 2304 and 256, f32/bf16/f16), the ResNet channels_last
 * avgpool (columns: 49 rows 2048 apart, channels_last and contiguous output strides), rows of
 * 1000 and 37, 2-byte alignment, keepdim False, a whole-tensor mean, a transposed input, an
 * output whose strides do not follow the input's order, a reduced dim of size 1, and (render and
 * compile only) an input of 2^31 elements for 64-bit offsets. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/c/check.h"
#include "tests/c/cuda_template_test.h"
#include "tests/c/job_sig_build.h"
#include "common/cuda_driver.h"
#include "compile/compiler.h"
#include "forge/templates/template.h"

#define MAX_CASES 24

#define DIMS(...) SZ(__VA_ARGS__)

/* x with the given strides */
static kf_job_tensor strided(int dtype, int nd, const int64_t *sizes, const int64_t *strides,
                             int align)
{
    kf_job_tensor t = sig_tensor(dtype, nd, sizes, 0, align);
    for (int d = 0; d < nd; d++) t.strides[d] = strides[d];
    return t;
}

/* ---- the cases ---- */

typedef struct rcase {
    char label[160];
    kf_job_sig sig;
    long long o, r, i; /* the [O][R][I] split the source must state */
    int run;           /* 0: render and compile only (too big for the reference) */
} rcase;

static const kf_template *T;
static rcase cases[MAX_CASES];
static int n_cases;

static void add_case(kf_job_sig sig, long long o, long long r, long long i, int run,
                     const char *note)
{
    if (!CHECK(n_cases < MAX_CASES)) return;
    rcase *c = &cases[n_cases++];
    c->sig = sig;
    c->o = o, c->r = r, c->i = i, c->run = run;
    const kf_job_tensor *x = &sig.in[0];
    const kf_job_scalar *dim = kf_job_scalar_find(&sig, "dim");
    int p = snprintf(c->label, sizeof c->label, "mean %s[", dname(x->dtype));
    p = label_sizes(c->label, sizeof c->label, p, x);
    for (int k = 0; dim && k < dim->n && p < (int)sizeof c->label; k++)
        p += snprintf(c->label + p, sizeof c->label - (size_t)p, "%s%lld", k ? "," : "] dim [",
                      (long long)dim->v[k]);
    if (p < (int)sizeof c->label) snprintf(c->label + p, sizeof c->label - (size_t)p, "] %s", note);
    check_serves(T, &sig, c->label); /* exactly this nvrtc template serves it */
}

static void make_cases(void)
{
    kf_job_sig s;
    kf_job_tensor x;
    /* LLM RMSNorm: the variance over the last dim, keepdim (rows) */
    add_case(sig_mean(sig_tensor(KF_F32, SZ(4, 1024, 2304), 0, 16), DIMS(-1), 1), 4096, 2304, 1,
             1, "rmsnorm");
    add_case(sig_mean(sig_tensor(KF_F32, SZ(4, 1024, 4, 256), 0, 16), DIMS(-1), 1), 16384, 256,
             1, 1, "rmsnorm per head");
    add_case(sig_mean(sig_tensor(KF_BF16, SZ(4, 1024, 2304), 0, 16), DIMS(-1), 1), 4096, 2304, 1,
             1, "rmsnorm");
    add_case(sig_mean(sig_tensor(KF_F16, SZ(64, 4, 256), 0, 16), DIMS(-1), 1), 256, 256, 1, 1,
             "rmsnorm per head");
    /* ResNet avgpool, channels_last: columns of 49 elements 2048 apart; eager's contiguous
     * [64,2048,1,1] output, and channels_last output strides (the same memory) */
    x = sig_tensor(KF_F16, SZ(64, 2048, 7, 7), 1, 16);
    add_case(sig_mean(x, DIMS(-1, -2), 1), 64, 49, 2048, 1, "channels_last avgpool");
    s = sig_mean(x, DIMS(-1, -2), 1);
    s.out[0] = sig_tensor(KF_F16, SZ(64, 2048, 1, 1), 1, 0);
    add_case(s, 64, 49, 2048, 1, "channels_last avgpool, channels_last out");
    x = sig_tensor(KF_BF16, SZ(8, 512, 7, 7), 1, 16);
    add_case(sig_mean(x, DIMS(2, 3), 0), 8, 49, 512, 1, "channels_last, keepdim False");
    x = sig_tensor(KF_F32, SZ(4, 96, 7, 7), 1, 16);
    add_case(sig_mean(x, DIMS(-2, -1), 1), 4, 49, 96, 1, "channels_last avgpool");
    /* odd sizes */
    add_case(sig_mean(sig_tensor(KF_F32, SZ(7, 1000), 0, 16), DIMS(1), 0), 7, 1000, 1, 1,
             "row of 1000, keepdim False");
    add_case(sig_mean(sig_tensor(KF_BF16, SZ(33, 37), 0, 2), DIMS(-1), 1), 33, 37, 1, 1,
             "row of 37, align 2");
    add_case(sig_mean(sig_tensor(KF_F16, SZ(5, 200), 0, 2), DIMS(-1), 1), 5, 200, 1, 1,
             "align 2");
    add_case(sig_mean(sig_tensor(KF_F32, SZ(3, 49, 40), 0, 16), DIMS(1), 0), 3, 49, 40, 1,
             "columns, R 49, I 40");
    add_case(sig_mean(sig_tensor(KF_BF16, SZ(3, 49, 24), 0, 4), DIMS(-2), 1), 3, 49, 24, 1,
             "columns, align 4");
    add_case(sig_mean(sig_tensor(KF_F32, SZ(8, 6, 10), 0, 16), DIMS(0), 1), 1, 8, 60, 1,
             "outermost dim: O = 1");
    add_case(sig_mean(sig_tensor(KF_F32, SZ(3, 333), 0, 16), DIMS(0, -1), 0), 1, 999, 1, 1,
             "every dim: a 0-dim output");
    x = strided(KF_F16, SZ(48, 96), (int64_t[]){1, 48}, 16);
    add_case(sig_mean(x, DIMS(0), 0), 96, 48, 1, 1, "transposed: rows");
    /* channels_last, reduce H only: C and W kept inside, the contiguous output has them the
     * other way round (offsets through the output strides, scalar stores) */
    x = sig_tensor(KF_BF16, SZ(2, 16, 6, 5), 1, 16);
    add_case(sig_mean(x, DIMS(2), 1), 2, 6, 80, 1, "channels_last, dim H, contiguous out");
    add_case(sig_mean(sig_tensor(KF_F32, SZ(16, 1, 24), 0, 16), DIMS(1), 0), 1, 1, 384, 1,
             "a dim of size 1: a copy");
    /* 2^31 elements: 64-bit offsets (not run: the reference would take minutes) */
    add_case(sig_mean(sig_tensor(KF_F16, SZ(65536, 32768), 0, 16), DIMS(-1), 1), 65536, 32768, 1,
             0, "2^31 elements");
}

/* ---- the table, applies() and render refusals ---- */

static void test_table(void)
{
    T = check_template("cuda_reduce_mean", 3, 5, 1);
}

static void test_refusals(void)
{
    if (!T) return;
    kf_job_tensor x = sig_tensor(KF_BF16, SZ(8, 64), 0, 16);
    kf_job_sig s = sig_mean(x, DIMS(-1), 1), r;
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    r = s;
    scalar_mut(&r, "dtype")->kind = 'i'; /* dtype=torch.float32: another output dtype */
    scalar_mut(&r, "dtype")->i = 6;
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.n_scalars = 0; /* no keepdim */
    kf_job_scalar *l = sig_add_scalar(&r, "dim", 'l');
    l->n = 1, l->v[0] = -1;
    sig_add_scalar(&r, "dtype", 'n');
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    sig_add_scalar(&r, "keepdim", 'b')->i = 1;
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    r = s;
    scalar_mut(&r, "keepdim")->kind = 'i'; /* a bool, not an int */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    scalar_mut(&r, "dim")->n = 0; /* dim=[]: every dim */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    scalar_mut(&r, "dim")->kind = 'n'; /* dim=None: every dim */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    scalar_mut(&r, "dim")->v[0] = 2; /* out of range */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = sig_mean(x, DIMS(1, -1), 1); /* a repeated dim */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[0].dtype = r.out[0].dtype = KF_F64;
    CHECK(!T->applies(&r) && find_template("cuda_reduce_generic")->applies(&r));
    r = s;
    r.out[0].dtype = KF_F32; /* the output has the input's dtype */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.out_alias[0] = 1; /* out= */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.out[0] = sig_tensor(KF_BF16, SZ(8), 0, 0); /* keepdim True keeps the dim */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.out[0].strides[0] = 2; /* gaps in the output */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    snprintf(r.op, sizeof r.op, "aten::mean");
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[0].sizes[0] = r.out[0].sizes[0] = 0; /* empty: eager gives NaN */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[0].strides[0] = 128; /* a strided view: not dense */
    CHECK(!T->applies(&r) && find_template("cuda_reduce_generic")->applies(&r));
    r = s;
    r.in[0].strides[1] = 0; /* expanded */
    CHECK(!T->applies(&r) && find_template("cuda_reduce_generic")->applies(&r));
    /* kept and reduced dims interleaved in memory: [A,B,C] contiguous reducing A and C */
    r = sig_mean(sig_tensor(KF_F32, SZ(4, 5, 6), 0, 16), DIMS(0, 2), 0);
    CHECK(!T->applies(&r) && find_template("cuda_reduce_generic")->applies(&r));
    /* channels_last reducing C and H: W kept between them in memory */
    r = sig_mean(sig_tensor(KF_F16, SZ(2, 8, 4, 4), 1, 16), DIMS(1, 2), 1);
    CHECK(!T->applies(&r) && find_template("cuda_reduce_generic")->applies(&r));
    /* channels_last reducing C and W: adjacent in memory, so rows of 32 */
    r = sig_mean(sig_tensor(KF_F16, SZ(2, 8, 4, 4), 1, 16), DIMS(1, 3), 1);
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    /* the same dims of an NCHW tensor are fine: reducing H, W */
    r = sig_mean(sig_tensor(KF_F16, SZ(2, 8, 4, 4), 0, 16), DIMS(2, 3), 1);
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    /* size-1 dims do not count as interleaving */
    r = sig_mean(sig_tensor(KF_F32, SZ(4, 1, 6), 0, 16), DIMS(0, 2), 0);
    CHECK_EQ_INT(nvrtc_applies(&r), 1);

    /* render refuses what applies() refuses, and bad knob indices */
    char *src = (char *)1, *lj = (char *)1, err[256];
    int idx[MAX_KNOBS] = {0};
    r = sig_mean(sig_tensor(KF_F32, SZ(4, 5, 6), 0, 16), DIMS(0, 2), 0);
    CHECK_EQ_INT(T->render(&r, idx, &src, &lj, err, sizeof err), KF_ERR_UNSUPPORTED);
    CHECK(src == NULL && lj == NULL);
    idx[1] = T->knobs[1].n_values;
    CHECK_EQ_INT(T->render(&s, idx, &src, &lj, err, sizeof err), KF_ERR_INVALID);
    CHECK_CONTAINS(err, T->knobs[1].name);
    CHECK(src == NULL && lj == NULL);
}

/* ---- every knob combination renders a consistent candidate ---- */

static int pow2(long long v) { return v >= 1 && (v & (v - 1)) == 0; }

static long n_rendered;

static void check_render(const rcase *c, const int *idx, char **src_out, kf_launch *l_out)
{
    char *src, *lj;
    const kf_job_sig *s = &c->sig;
    kf_launch l;
    int ok = begin_render(T, s, idx, c->label, "kf_kernel(", &src, &lj, &l);
    if (ok < 0) return;
    n_rendered++;
    const char *ty = cuda_type(s->in[0].dtype);
    char want_in[40], want_out[40];
    snprintf(want_in, sizeof want_in, "const %s*", ty);
    snprintf(want_out, sizeof want_out, "%s*", ty);
    ok = ok && !strcmp(l.entry, "kf_kernel") && l.n_args == 2 &&
         !strcmp(l.arg_types[0], want_in) && !strcmp(l.arg_types[1], want_out);
    unsigned threads = l.block[0];
    ok = ok && l.grid[0] >= 1 && l.grid[1] == 1 && l.grid[2] == 1 && l.block[1] == 1 &&
         l.block[2] == 1 && threads >= 1 && threads <= 1024 && l.smem == 0;
    /* the effective values the source states agree with the shape and the record */
    long long mode = src_define(src, "KF_MODE", -1), nt = src_define(src, "KF_NT", 0);
    long long vw = src_define(src, "KF_VW", 0), un = src_define(src, "KF_UN", 0);
    long long npt = src_define(src, "KF_NPT", 0);
    long long o = src_define(src, "KF_O", 0), r = src_define(src, "KF_R", 0);
    long long i = src_define(src, "KF_I", 0);
    int es = esize(s->in[0].dtype), align = s->in[0].align ? s->in[0].align : es;
    ok = ok && o == c->o && r == c->r && i == c->i && mode == (i > 1) && nt == threads &&
         pow2(vw) && vw <= 8 && (vw == 1 || (vw * es > 16 ? 16 : vw * es) <= align) &&
         pow2(un) && un <= 8 && (un == 1 || un <= npt);
    if (ok && mode == 0) {
        long long tpr = src_define(src, "KF_TPR", 0), rpb = src_define(src, "KF_RPB", 0);
        long long nv = src_define(src, "KF_NV", 0);
        ok = threads % 32 == 0 && pow2(tpr) && nt == tpr * rpb && r % vw == 0 && nv == r / vw &&
             npt == (nv + tpr - 1) / tpr && l.grid[0] == (unsigned)((o + rpb - 1) / rpb);
    } else if (ok) {
        long long tx = src_define(src, "KF_TX", 0), ty = src_define(src, "KF_TY", 0);
        long long ncg = src_define(src, "KF_NCG", 0), ovec = src_define(src, "KF_OVEC", -1);
        ok = pow2(tx) && pow2(ty) && nt == tx * ty && i % vw == 0 && ncg == o * (i / vw) &&
             npt == (r + ty - 1) / ty && l.grid[0] == (unsigned)((ncg + tx - 1) / tx) &&
             (ovec == 0 || (ovec == 1 && vw > 1));
    }
    /* 64-bit offsets exactly where 32 bits do not reach */
    int wide = strstr(src, "typedef unsigned long long kf_idx;") != NULL;
    ok = ok && wide == (o * r * i > INT32_MAX);
    if (!CHECK(ok)) {
        print_knobs(T, c->label, idx);
        printf("     record %s\n", lj);
    }
    keep_render(ok, src, lj, &l, src_out, l_out);
}

KF_DEFINE_TEST_RENDER_ALL()

/* The start hook: indices in range, and the guesses the models' shapes should get. */
static void test_start(void)
{
    if (!T) return;
    for (int ci = 0; ci < n_cases; ci++) {
        int idx[MAX_KNOBS] = {0};
        T->start(&cases[ci].sig, idx);
        int ok = 1;
        for (int k = 0; k < T->n_knobs; k++) ok = ok && idx[k] >= 0 && idx[k] < T->knobs[k].n_values;
        if (!CHECK(ok)) printf("     start of %s out of range\n", cases[ci].label);
    }
    /* rmsnorm f32 [4096 x 2304]: 8-float vectors, 288 a row: 128 threads a row, 2 rows a block */
    int idx[MAX_KNOBS] = {0};
    char *src = NULL, *lj = NULL, err[256];
    T->start(&cases[0].sig, idx);
    if (CHECK_EQ_INT(T->render(&cases[0].sig, idx, &src, &lj, err, sizeof err), KF_OK)) {
        CHECK_EQ_INT(src_define(src, "KF_MODE", -1), 0);
        CHECK_EQ_INT(src_define(src, "KF_VW", 0), 8);
        CHECK_EQ_INT(src_define(src, "KF_TPR", 0), 128);
        CHECK_EQ_INT(src_define(src, "KF_NT", 0), 256);
    }
    free(src), free(lj);
    /* avgpool: 16-byte vectors of channels, R = 49 split over 2 threads */
    memset(idx, 0, sizeof idx);
    T->start(&cases[4].sig, idx);
    if (CHECK_EQ_INT(T->render(&cases[4].sig, idx, &src, &lj, err, sizeof err), KF_OK)) {
        CHECK_EQ_INT(src_define(src, "KF_MODE", -1), 1);
        CHECK_EQ_INT(src_define(src, "KF_VW", 0), 8);
        CHECK_EQ_INT(src_define(src, "KF_TY", 0), 2);
        CHECK_EQ_INT(src_define(src, "KF_OVEC", -1), 1);
    }
    free(src), free(lj);
}

/* ---- compile a spread of combinations with NVRTC (cuda_template_test.h) ---- */

KF_DEFINE_TEST_JOBS()

/* ---- the reference: the mean in double, indexed by output memory offset ---- */

typedef struct gcase {
    int ok;
    size_t in_bytes, out_bytes;
    void *host;                       /* the input as uploaded */
    unsigned long long base[2], dev[2];
    double *ref;                      /* by output offset */
    void *got;
} gcase;

static void ref_mean(const kf_job_sig *s, gcase *g)
{
    const kf_job_tensor *x = &s->in[0], *y = &s->out[0];
    const kf_job_scalar *dim = kf_job_scalar_find(s, "dim");
    int keep = (int)kf_job_scalar_find(s, "keepdim")->i, red[KF_MAX_DIMS] = {0};
    for (int k = 0; k < dim->n; k++) red[dim->v[k] < 0 ? dim->v[k] + x->ndim : dim->v[k]] = 1;
    int64_t ost[KF_MAX_DIMS] = {0}, cnt = 1; /* output stride of each input dim (0: reduced) */
    for (int d = 0, k = 0; d < x->ndim; d++) {
        if (red[d]) cnt *= x->sizes[d];
        if (!red[d]) ost[d] = y->strides[keep ? d : k];
        if (keep || !red[d]) k++;
    }
    int64_t n = kf_job_tensor_numel(x), idx[KF_MAX_DIMS] = {0};
    for (int64_t e = 0; e < n; e++) {
        int64_t xo = 0, yo = 0;
        for (int d = 0; d < x->ndim; d++) xo += idx[d] * x->strides[d], yo += idx[d] * ost[d];
        g->ref[yo] += get(g->host, x->dtype, xo);
        for (int d = x->ndim - 1; d >= 0 && ++idx[d] == x->sizes[d]; d--) idx[d] = 0;
    }
    for (int64_t o = 0; o < kf_job_tensor_numel(y); o++) g->ref[o] /= (double)cnt;
}

/* ---- with a GPU ---- */

static void gcase_free(gpu *G, gcase *g)
{
    for (int i = 0; i < 2; i++)
        if (g->base[i]) G->d.mem_free(g->base[i]);
    free(g->host);
    free(g->ref);
    free(g->got);
    memset(g, 0, sizeof *g);
}

/* Random input for case c (dense: its span is numel elements), uploaded; the reference. */
static void gcase_make(gpu *G, const rcase *c, gcase *g)
{
    const kf_job_sig *s = &c->sig;
    const kf_job_tensor *x = &s->in[0], *y = &s->out[0];
    memset(g, 0, sizeof *g);
    int64_t n = kf_job_tensor_numel(x), m = kf_job_tensor_numel(y);
    g->in_bytes = tensor_bytes(x);
    g->out_bytes = tensor_bytes(y);
    size_t bytes[2] = {g->in_bytes, g->out_bytes};
    for (int i = 0; i < 2; i++) {
        if (!CHECK_EQ_INT(G->d.mem_alloc(&g->base[i], bytes[i] + 16), 0)) return;
        g->dev[i] = g->base[i];
    }
    if (x->align > 0 && x->align < 16) g->dev[0] += (unsigned)x->align; /* a misaligned view */
    g->host = calloc(1, g->in_bytes + 4);
    g->ref = calloc((size_t)m, sizeof(double));
    g->got = calloc(1, g->out_bytes + 4);
    for (int64_t e = 0; e < n; e++) {
        double v = urand() * 6.0 - 3.0 + 0.5;
        if (urand() < 0.01) v *= 40.0; /* a few large magnitudes */
        put(g->host, x->dtype, e, v);
    }
    CHECK_EQ_INT(G->d.memcpy_htod(g->dev[0], g->host, g->in_bytes), 0);
    ref_mean(s, g);
    g->ok = 1;
}

static int gpu_run(gpu *G, kernel_job *j, gcase *g)
{
    const kf_job_sig *s = &cases[j->c].sig;
    const kf_job_tensor *y = &s->out[0];
    char name[400], err[512];
    kernel_job_name(j, name, sizeof name);
    kf_compiled *k = NULL;
    if (!CHECK_EQ_INT(nv.load(nv.self, j->blob, j->len, &j->l, 0, &k, err, sizeof err), KF_OK)) {
        printf("     %s: load: %s\n", name, err);
        return 0;
    }
    void *ptrs[2] = {(void *)(uintptr_t)g->dev[0], (void *)(uintptr_t)g->dev[1]};
    CHECK_EQ_INT(G->d.memset_d8(g->dev[1], 0xff, g->out_bytes), 0);
    int good = 0;
    if (CHECK_EQ_INT(nv.launch(nv.self, k, ptrs, 2, NULL), 0) &&
        CHECK_EQ_INT(G->d.ctx_synchronize(), 0)) {
        CHECK_EQ_INT(G->d.memcpy_dtoh(g->got, g->dev[1], g->out_bytes), 0);
        long bad = 0;
        double tol = tol_of(y->dtype);
        for (int64_t o = 0; o < kf_job_tensor_numel(y); o++) {
            double r = round_to(y->dtype, g->ref[o]), v = get(g->got, y->dtype, o);
            if (isfinite(v) && fabs(v - r) <= tol + tol * fabs(r)) continue;
            if (bad++ == 0)
                printf("     %s: out[%lld] = %.8g, reference %.8g\n", name, (long long)o, v,
                       g->ref[o]);
        }
        void *back = malloc(g->in_bytes + 1); /* the input unchanged */
        CHECK_EQ_INT(G->d.memcpy_dtoh(back, g->dev[0], g->in_bytes), 0);
        bad += memcmp(back, g->host, g->in_bytes) != 0;
        free(back);
        good = CHECK_EQ_INT(bad, 0);
    }
    nv.unload(nv.self, k);
    return good;
}

KF_DEFINE_TEST_GPU(cases[ci].run)

int main(void)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rng_state = 0x6d65616eu;
    test_table();
    test_refusals();
    make_cases();
    test_start();
    test_render_all();
    if (T) nvrtc_levels(&nv, make_jobs, jobs, &n_jobs, test_gpu);
    free_jobs(jobs, n_jobs);
    return test_done(&t0, "templates_cuda_reduce");
}
