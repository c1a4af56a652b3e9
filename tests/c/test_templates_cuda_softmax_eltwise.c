/* The CUDA builtin templates for softmax and elementwise ops (forge/templates/cuda_softmax.c,
 * forge/templates/cuda_eltwise.c).
 *
 * For signatures covering every op, dtype and layout they claim (odd sizes, one row, sizes the
 * vector width does not divide, 2-byte alignment, channels_last, broadcasting, in place,
 * outputs with gaps, strided unary inputs):
 *  - applies() accepts exactly the intended template, and refuses what it cannot serve (wrong
 *    dtype, non-dense softmax tensors, overlapping outputs, unsupported dim, bad scalars,
 *    wrong aliasing);
 *  - EVERY knob combination renders, its launch record parses and matches the knobs;
 *  - a deterministic spread of combinations (every value of every knob, plus the all-first and
 *    all-last ones; identical sources once) compiles with NVRTC for sm_90 without warnings of
 *    its own; SKIP (exit 0) when NVRTC or the CUDA headers are missing;
 *  - with a CUDA device, each compiled kernel runs on random inputs (with -inf, NaN, huge
 *    values, an all -inf softmax row) against a double-precision reference, with outputs
 *    poisoned with 0xff bytes, canaries around every buffer, inputs checked unchanged, and the
 *    gaps of an output that has them (a slice of a larger buffer) left as they were.
 *
 * The builds here have no GPU; on one: ctest -R templates_cuda_softmax_eltwise. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/c/check.h"
#include "tests/c/cuda_template_test.h"
#include "tests/c/job_sig_build.h"
#include "tests/c/nvcc_ptx.h"
#include "common/cuda_driver.h"
#include "compile/compiler.h"
#include "forge/templates/template.h"

/* ---- fp16 / bf16 on the host (cuda_template_test.h) ---- */

/* Round v to dtype dt: the stored bits in *bits (2 or 4 bytes), the value returned. */
static double to_dtype(int dt, float v, void *bits)
{
    if (dt == KF_F32) {
        memcpy(bits, &v, 4);
        return v;
    }
    uint16_t h = dt == KF_F16 ? f_to_f16(v) : f_to_bf16(v);
    memcpy(bits, &h, 2);
    return dt == KF_F16 ? f16_to_f(h) : bf16_to_f(h);
}

static double from_bits(int dt, const void *bits)
{
    if (dt == KF_F32) {
        float f;
        memcpy(&f, bits, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, bits, 2);
    return dt == KF_F16 ? f16_to_f(h) : bf16_to_f(h);
}

/* ---- signatures ---- */

#define NARGS(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define T(dt, al, ...) sig_tensor(dt, NARGS(__VA_ARGS__), (int64_t[]){__VA_ARGS__}, 0, al)

/* sizes or strides of sig_tensor_strided */
#define IV(...) (int64_t[]){__VA_ARGS__}

/* a fresh unary op's output contiguous, as eager allocates it for a strided input */
static kf_job_sig unary_out(kf_job_sig s)
{
    s.out[0] = sig_tensor(s.in[0].dtype, s.in[0].ndim, s.in[0].sizes, 0, 0);
    return s;
}

/* channels_last strides of an NCHW tensor */
static kf_job_tensor nhwc(kf_job_tensor t)
{
    int64_t c = t.sizes[1], h = t.sizes[2], w = t.sizes[3];
    t.strides[0] = c * h * w, t.strides[1] = 1, t.strides[2] = w * c, t.strides[3] = c;
    return t;
}

/* Qwen 3.5's copy_ destination: f32 [4,32,64,128], a slice of a larger buffer (dim 1 steps
 * 131072 elements where dense would be 8192), each [64,128] block contiguous along dim 2 */
static kf_job_tensor qwen_self(void)
{
    return sig_tensor_strided(KF_F32, 4, IV(4, 32, 64, 128), IV(4194304, 131072, 1, 64), 16);
}

/* [B,S,C] seen from a contiguous [B,C,S] (MMDiT's residual stream): strides (C*S, 1, S) */
static kf_job_tensor bsc_t(int dt, int al, int64_t b, int64_t sq, int64_t c)
{
    return sig_tensor_strided(dt, 3, (int64_t[]){b, sq, c}, (int64_t[]){c * sq, 1, sq}, al);
}

static kf_job_sig gelu_sig(kf_job_tensor x, const char *approximate)
{
    kf_job_sig s = sig_unary("aten::gelu", x);
    snprintf(sig_add_scalar(&s, "approximate", 's')->s, sizeof s.scalars[0].s, "%s", approximate);
    return s;
}
static kf_job_sig clamp_sig(const char *op, kf_job_tensor x, int kind, double min)
{
    kf_job_sig s = sig_unary(op, x);
    kf_job_scalar *m = sig_add_scalar(&s, "min", kind);
    if (kind == 'i') m->i = (int64_t)min;
    else m->d = min;
    return s;
}

/* ---- the templates under test ---- */

static void test_table(void)
{
    static const char *const mine[] = {"cuda_row_softmax", "cuda_eltwise_unary",
                                       "cuda_eltwise_binary", "cuda_eltwise_copy"};
    for (size_t k = 0; k < sizeof mine / sizeof mine[0]; k++) check_template(mine[k], 1, 8, 0);
}

/* ---- what applies() must refuse ---- */

static void test_refusals(void)
{
    kf_job_tensor x = T(KF_F32, 16, 8, 37), xh = T(KF_F16, 16, 8, 37);
    kf_job_tensor x64 = x, xt = x;
    x64.dtype = KF_F64;
    xt.strides[0] = 1, xt.strides[1] = 8; /* transposed */
    kf_job_tensor xs = x;
    xs.strides[0] = 74; /* every other row: not dense, gaps between rows */
    /* outputs where two indices meet one address: rows overlapping, a broadcast (expanded)
     * dim, a negative stride; and interleaved strides not provably apart (refused too) */
    kf_job_tensor xo = x, xe = x, xn = x, xi = x;
    xo.strides[0] = 36;
    xe.strides[0] = 0;
    xn.strides[1] = -1;
    xi.strides[0] = 5, xi.strides[1] = 8; /* 5r + 8c: apart, but 8 does not clear 5 * 7 */
    const kf_job_tensor overlapping[] = {xo, xe, xn, xi};
    kf_job_sig s;

    /* softmax */
    s = sig_softmax("aten::_softmax", x, -1, 0);
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_softmax("aten::_log_softmax", x, 0, 0); /* another dim: columns mode */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_softmax("aten::_softmax", xh, -2, 1); /* half_to_float */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_softmax("aten::_softmax", x64, -1, 0);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_softmax("aten::_softmax", xt, -1, 0);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_softmax("aten::_softmax", x, -1, 0);
    s.out[0] = xt; /* output not contiguous */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_softmax("aten::_softmax", x, 2, 0); /* dim out of range */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_softmax("aten::_softmax", x, -3, 0);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_softmax("aten::_softmax", x, -1, 1); /* half_to_float on f32 input */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_softmax("aten::_softmax", xh, -1, 0);
    s.out[0].dtype = KF_F32; /* f32 out without half_to_float */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_softmax("aten::_softmax", xh, -1, 1);
    s.out[0].dtype = KF_BF16; /* half_to_float with a 16-bit out */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_softmax("aten::softmax.int", x, -1, 0);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_softmax("aten::_softmax", T(KF_F32, 16, 0, 37), -1, 0); /* empty */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_softmax("aten::_softmax", x, -1, 0);
    s.scalars[0].kind = 'd'; /* dim not an int */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_softmax("aten::_softmax", x, -1, 0);
    s.out[0].sizes[1] = 36, s.out[0].strides[0] = 36; /* shape mismatch */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_softmax("aten::_softmax", x, -1, 0);
    s.out_alias[0] = 1;
    CHECK_EQ_INT(nvrtc_applies(&s), 0);

    /* unary */
    s = gelu_sig(x, "none");
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_unary("aten::relu", nhwc(T(KF_F16, 16, 2, 3, 4, 5))); /* channels_last both */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_unary("aten::silu", x64);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_unary("aten::silu", xs);
    s.out[0] = x; /* a strided input, read through its strides */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_unary("aten::relu", T(KF_F16, 16, 2, 3, 4, 5));
    s.out[0] = nhwc(s.in[0]); /* the input in another dim order than the output */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_unary("aten::relu_", xs); /* in place into self with gaps */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    for (int k = 0; k < 4; k++) {
        s = sig_unary("aten::relu_", overlapping[k]);
        CHECK_EQ_INT(nvrtc_applies(&s), 0);
        s = sig_unary("aten::silu", x);
        s.out[0] = overlapping[k];
        CHECK_EQ_INT(nvrtc_applies(&s), 0);
    }
    s = sig_unary("aten::silu", xt); /* transposed in and out: dense, same strides: fine */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = gelu_sig(x, "fast");
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_unary("aten::gelu", x); /* no approximate */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_unary("aten::relu_", x);
    s.out_alias[0] = 0; /* in-place op with a fresh output */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_unary("aten::relu", x);
    s.out_alias[0] = 1; /* fresh op written in place */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_unary("aten::relu", x);
    s.out[0].dtype = KF_F16; /* mixed dtypes */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = clamp_sig("aten::clamp_min", x, 'd', NAN);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = clamp_sig("aten::clamp_min", xh, 'd', 1e6); /* beyond fp16: eager refuses */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = clamp_sig("aten::clamp_min", x, 'd', 1e6);
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = clamp_sig("aten::clamp_min_", x, 'i', -3);
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = clamp_sig("aten::clamp_min", x, 's', 0);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_unary("aten::clamp_min", x); /* no min */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_unary("aten::tanh", x);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_pow(x, 'd', 3.0);
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_pow(x, 'd', INFINITY);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_pow(x, 'b', 1);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_unary("aten::pow.Tensor_Scalar", x); /* no exponent */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_pow(x64, 'i', 2);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);

    /* copy_ */
    s = sig_copy(x, xh); /* a cast */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_copy(x, xt); /* a transposed source */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_copy(x, T(KF_BF16, 16, 37)); /* a broadcast source */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_copy(x, xs); /* a non-dense source is fine */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_copy(xs, x); /* into self with gaps */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_copy(xs, xt); /* into self with gaps, transposed */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    for (int k = 0; k < 4; k++) {
        s = sig_copy(overlapping[k], x);
        CHECK_EQ_INT(nvrtc_applies(&s), 0);
    }
    s = sig_copy(x, x64);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_copy(x64, x);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_copy(x, T(KF_F32, 16, 36)); /* does not broadcast */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_copy(x, x);
    s.out_alias[0] = 0; /* a fresh output */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_copy(x, x);
    s.op[5] = 'X'; /* another op */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);

    /* binary */
    kf_job_tensor c = T(KF_F32, 16, 37);
    s = sig_binary("aten::add.Tensor", x, c, x, 'i', 1);
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_binary("aten::mul.Tensor", c, x, x, 0, 0); /* self broadcasts */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_binary("aten::add.Tensor", x, xh, x, 'i', 1); /* mixed dtypes into f32 */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_binary("aten::add.Tensor", xh, T(KF_BF16, 16, 37), x, 'i', 1);
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_binary("aten::add.Tensor", xh, x, xh, 'i', 1); /* mixed into f16: not eager's */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_binary("aten::add_.Tensor", x, xh, x, 'i', 1); /* mixed in place */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_binary("aten::mul.Tensor", x, x64, x, 0, 0); /* f64 is not a template dtype */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_binary("aten::add.Tensor", x, T(KF_F32, 16, 36), x, 'i', 1); /* no broadcast */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_binary("aten::add.Tensor", x, T(KF_F32, 16, 2, 1, 37), x, 'i', 1); /* more dims */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_binary("aten::mul.Tensor", x, x, xs, 0, 0); /* an output with gaps */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    for (int k = 0; k < 4; k++) {
        s = sig_binary("aten::mul.Tensor", x, x, overlapping[k], 0, 0);
        CHECK_EQ_INT(nvrtc_applies(&s), 0);
        s = sig_binary("aten::add_.Tensor", overlapping[k], x, x, 0, 0);
        CHECK_EQ_INT(nvrtc_applies(&s), 0);
    }
    s = sig_binary("aten::add.Tensor", x, x, x, 'd', 1e300); /* alpha beyond float */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_binary("aten::add.Tensor", x, x, x, 'd', 0.5);
    s.scalars[0].kind = 's';
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_binary("aten::sub.Tensor", x, x, x, 'i', 1);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_binary("aten::mul.Tensor", x64, x64, x64, 0, 0);
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_binary("aten::add_.Tensor", c, x, x, 'i', 1); /* in place into a broadcast self */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);
    s = sig_binary("aten::mul_.Tensor", xt, x, x, 0, 0); /* in place into a transposed self */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_binary("aten::mul_.Tensor", xs, x, x, 0, 0); /* in place into self with gaps */
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    s = sig_binary("aten::add.Tensor", x, x, x, 0, 0);
    s.out_alias[0] = 1; /* fresh op written in place */
    CHECK_EQ_INT(nvrtc_applies(&s), 0);

    /* render refuses what applies() refuses, and bad knob indices */
    const kf_template *sm = find_template("cuda_row_softmax");
    if (!sm) return;
    char *src = (char *)1, *lj = (char *)1, err[256];
    int idx[8] = {0};
    s = sig_binary("aten::add.Tensor", x, x, x, 0, 0);
    CHECK_EQ_INT(sm->render(&s, idx, &src, &lj, err, sizeof err), KF_ERR_UNSUPPORTED);
    CHECK(src == NULL && lj == NULL);
    s = sig_softmax("aten::_softmax", x, -1, 0);
    idx[2] = sm->knobs[2].n_values;
    src = lj = (char *)1;
    CHECK_EQ_INT(sm->render(&s, idx, &src, &lj, err, sizeof err), KF_ERR_INVALID);
    CHECK(src == NULL && lj == NULL);
    CHECK_CONTAINS(err, sm->knobs[2].name);
    idx[2] = -1;
    CHECK_EQ_INT(sm->render(&s, idx, &src, &lj, err, sizeof err), KF_ERR_INVALID);
    CHECK_EQ_INT(sm->render(&s, NULL, &src, &lj, err, sizeof err), KF_ERR_INVALID);
}

/* ---- transpose_tile: which operands the binary template stages ---- */

/* The source of `tname` for sig with every knob at its first value but transpose_tile (index
 * ti) contains `needle` (want 1) or not (want 0). */
static void check_tile_src(const char *tname, const kf_job_sig *sig, int ti, const char *needle,
                           int want, const char *label)
{
    const kf_template *t = find_template(tname);
    if (!CHECK(t && t->applies(sig))) return;
    int idx[8] = {0}, kt = -1;
    for (int k = 0; k < t->n_knobs; k++)
        if (!strcmp(t->knobs[k].name, "transpose_tile")) kt = k;
    if (!CHECK(kt >= 0)) return;
    idx[kt] = ti;
    char *src = NULL, *lj = NULL, err[256];
    if (CHECK_EQ_INT(t->render(sig, idx, &src, &lj, err, sizeof err), KF_OK) &&
        !CHECK_EQ_INT(strstr(src, needle) != NULL, want))
        printf("     %s, transpose_tile index %d: \"%s\" %s\n", label, ti, needle,
               want ? "missing" : "present");
    free(src);
    free(lj);
}

/* The softmax starts rows of at most 64 vectors (Swin's 49-wide windows) on the smallest team
 * in which each thread holds two, at most a warp; longer rows on 64 threads a row. Each start
 * renders, and compiles with nvcc --ptx where nvcc is. */
static void test_softmax_start(void)
{
    const kf_template *t = find_template("cuda_row_softmax");
    if (!CHECK(t && t->start)) return;
    static const struct {
        int dtype, nd;
        int64_t sizes[4];
        int threads, rows;
    } cases[] = {
        {KF_BF16, 4, {64, 12, 49, 49}, 256, 8},  /* 49 vectors of 1: a warp each */
        {KF_BF16, 2, {4096, 128}, 256, 32},      /* 16 vectors of 8: 8 threads each */
        {KF_F32, 2, {4096, 4}, 32, 32},          /* one vector: a thread a row */
        {KF_BF16, 4, {16, 8, 1024, 1024}, 256, 4}, /* 128 vectors: 64 threads a row */
    };
    char path[] = "/tmp/kf_softmax_startXXXXXX";
    FILE *tu = nvcc_ptx_open(path);
    int n = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int idx[8] = {0};
        kf_job_sig s = sig_softmax("aten::_softmax",
                                   sig_tensor(cases[i].dtype, cases[i].nd, cases[i].sizes, 0, 16), -1, 0);
        t->start(&s, idx);
        CHECK_EQ_INT(t->knobs[0].values[idx[0]], cases[i].threads);
        CHECK_EQ_INT(t->knobs[1].values[idx[1]], cases[i].rows);
        char *src = NULL, *launch = NULL, err[256] = "";
        if (!CHECK(t->render(&s, idx, &src, &launch, err, sizeof err) == KF_OK)) {
            printf("  render: %s\n", err);
            continue;
        }
        if (tu) nvcc_ptx_append(tu, "softmax start", n++, src);
        free(src);
        free(launch);
    }
    if (tu) CHECK(nvcc_ptx_compile(tu, path, n));
}

static void test_tiles(void)
{
    const char *bin = "cuda_eltwise_binary";
    kf_job_tensor at = bsc_t(KF_BF16, 16, 2, 37, 45), c = T(KF_BF16, 16, 2, 37, 45);
    kf_job_sig s = sig_binary("aten::add.Tensor", at, c, at, 'i', 1);
    for (int ti = 1; ti <= 2; ti++) {
        check_tile_src(bin, &s, ti, "staged: b */", 1, "MMDiT add, out like self");
        check_tile_src(bin, &s, ti, "#define KF_NSH 1\n", 1, "MMDiT add, out like self");
    }
    check_tile_src(bin, &s, 0, "KF_NSH", 0, "MMDiT add, transpose_tile 0");
    int idx[8] = {0};
    const kf_template *t = find_template(bin);
    if (CHECK(t && t->start)) {
        t->start(&s, idx);
        CHECK_EQ_INT(idx[4], 2); /* 64 for 2-byte types */
    }
    s = sig_binary("aten::add.Tensor", at, c, c, 'i', 1);
    check_tile_src(bin, &s, 1, "staged: a */", 1, "out contiguous");
    s = sig_binary("aten::add.Tensor", at, T(KF_BF16, 16, 1, 37, 45), at, 'i', 1);
    check_tile_src(bin, &s, 2, "staged: b */", 1, "other broadcast over the batch");
    s = sig_binary("aten::mul.Tensor", at, at, c, 0, 0);
    check_tile_src(bin, &s, 2, "staged: a b */", 1, "both transposed, out contiguous");
    s = sig_binary("aten::add_.Tensor", at, c, at, 'i', 1);
    check_tile_src(bin, &s, 1, "staged: b */", 1, "in place into a transposed self");
    s = sig_binary("aten::add.Tensor", at, sig_tensor_strided(KF_BF16, 3, (int64_t[]){2, 37, 45},
                                                              (int64_t[]){0, 1, 0}, 16),
                   c, 'i', 1);
    check_tile_src(bin, &s, 1, "staged: a */", 1, "other broadcast along out's inner dim");
    /* no operand transposes the output: the loop, whatever the knob */
    s = sig_binary("aten::add.Tensor", at, at, at, 'i', 1);
    for (int ti = 0; ti <= 2; ti++) check_tile_src(bin, &s, ti, "KF_NSH", 0, "inputs agree");
    if (t) {
        t->start(&s, idx);
        CHECK_EQ_INT(idx[4], 0);
    }
    kf_job_tensor x = T(KF_F32, 16, 4, 64, 16, 16);
    s = sig_binary("aten::add.Tensor", x, T(KF_F32, 16, 64, 1, 1), x, 0, 0);
    for (int ti = 0; ti <= 2; ti++)
        check_tile_src(bin, &s, ti, "KF_NSH", 0, "[N,C,H,W] + [C,1,1]: a broadcast");
    /* copy_ renders its tiles through the same code */
    s = sig_copy(c, at);
    check_tile_src("cuda_eltwise_copy", &s, 2, "staged: a */", 1, "copy_ of a transposed src");
    /* into self with gaps (Qwen 3.5: a [64,128] block transposed into a slice): the tiles write
     * through self's strides; the batch dim is the gapped one */
    const kf_template *cp = find_template("cuda_eltwise_copy");
    s = sig_copy(qwen_self(), T(KF_F32, 16, 4, 32, 64, 128));
    check_tile_src("cuda_eltwise_copy", &s, 1, "staged: a */", 1, "copy_ into a gapped self");
    check_tile_src("cuda_eltwise_copy", &s, 1, "[128: 131072, 8192]", 1,
                   "copy_ into a gapped self");
    if (CHECK(cp && cp->start)) {
        cp->start(&s, idx);
        CHECK_EQ_INT(idx[4], 1); /* 32 for f32 */
    }
    /* self strided along its innermost dim: no dim of it to write tiles along: the loop */
    s = sig_copy(sig_tensor_strided(KF_F32, 2, IV(6, 50), IV(120, 2), 16),
                 sig_tensor_strided(KF_F32, 2, IV(6, 50), IV(1, 6), 16));
    for (int ti = 0; ti <= 2; ti++)
        check_tile_src("cuda_eltwise_copy", &s, ti, "KF_NSH", 0, "self strided innermost");
    if (cp) {
        cp->start(&s, idx);
        CHECK_EQ_INT(idx[4], 0);
    }
}

/* ---- cases: a signature, its data, its reference ---- */

enum { DATA_SOFTMAX, DATA_ELT };

typedef struct tbuf { /* a tensor's strided span on the host */
    int dtype;
    int64_t span;  /* elements */
    void *bits;    /* span elements of dtype */
    double *val;   /* their values */
} tbuf;

typedef struct tcase {
    char label[160];
    const kf_template *tmpl;
    kf_job_sig sig;
    double tol;
    int mode; /* DATA_*; the data and the reference exist only while its kernels run */
    tbuf in[2];
    double *ref; /* out[0], indexed like its span */
    int64_t out_span;
} tcase;

#define MAX_CASES 80
static tcase cases[MAX_CASES];
static int n_cases;

static int64_t span_of(const kf_job_tensor *t)
{
    int64_t s = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] == 0) return 0;
        s += (t->sizes[d] - 1) * t->strides[d];
    }
    return s;
}

/* Softmax data: mostly [-3, 3), some +-1e4, some -inf, line 1 (the second softmax line) all
 * -inf. Elementwise data: mostly [-4, 4), some +-1e4, some +-1e30 (inf in fp16), a few NaN. */
static float rand_value(int mode)
{
    double u = urand(), v = urand() * 6.0 - 3.0;
    if (mode == DATA_ELT) v *= 4.0 / 3.0;
    if (u < 0.05) v *= 3000.0;
    else if (mode == DATA_SOFTMAX && u < 0.09) v = -INFINITY;
    else if (mode == DATA_ELT && u < 0.07) v = v < 0 ? -1e30 : 1e30;
    else if (mode == DATA_ELT && u < 0.075) v = NAN;
    return (float)v;
}

static void tbuf_fill(tbuf *b, const kf_job_tensor *t, int mode)
{
    b->dtype = t->dtype;
    b->span = span_of(t);
    b->bits = calloc((size_t)b->span, (size_t)esize(t->dtype));
    b->val = calloc((size_t)b->span, sizeof(double));
    for (int64_t i = 0; i < b->span; i++)
        b->val[i] = to_dtype(t->dtype, rand_value(mode),
                             (char *)b->bits + i * esize(t->dtype));
}

/* Element offset of logical index `lin` (row-major over `sizes` of ndim) in tensor t, which is
 * aligned to the right against those sizes (broadcast dims contribute 0). */
static int64_t offset_of(const kf_job_tensor *t, const int64_t *sizes, int ndim, int64_t lin)
{
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        int64_t c = lin % sizes[d];
        lin /= sizes[d];
        int k = d - (ndim - t->ndim);
        if (k >= 0 && t->sizes[k] != 1) off += c * t->strides[k];
    }
    return off;
}

static double ref_unary(const kf_job_sig *s, double x)
{
    const char *op = s->op;
    if (!strncmp(op, "aten::relu", 10) || !strncmp(op, "aten::clamp_min", 15)) {
        double lo = 0.0;
        const kf_job_scalar *m = kf_job_scalar_find(s, "min");
        if (m) { /* Scalar -> float -> dtype, as eager */
            char bits[4];
            lo = to_dtype(s->in[0].dtype, (float)(m->kind == 'i' ? (double)m->i : m->d), bits);
        }
        return isnan(x) ? x : x > lo ? x : lo;
    }
    if (!strcmp(op, "aten::silu")) return x / (1.0 + exp(-x));
    if (!strcmp(op, "aten::pow.Tensor_Scalar")) {
        const kf_job_scalar *e = kf_job_scalar_find(s, "exponent");
        return pow(x, e->kind == 'i' ? (double)e->i : (double)(float)e->d);
    }
    const kf_job_scalar *a = kf_job_scalar_find(s, "approximate");
    if (a && !strcmp(a->s, "tanh"))
        return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    return x * 0.5 * (1.0 + erf(x / sqrt(2.0)));
}

static void make_reference_exact(tcase *c);

/* The exact result in double, then rounded to the output dtype (an fp16 product of two 1e4
 * overflows to inf, as eager's does). */
static void make_reference(tcase *c)
{
    make_reference_exact(c);
    for (int64_t i = 0; i < c->out_span; i++) c->ref[i] = round_to(c->sig.out[0].dtype, c->ref[i]);
}

static void make_reference_exact(tcase *c)
{
    const kf_job_sig *s = &c->sig;
    const kf_job_tensor *y = &s->out[0];
    int64_t n = kf_job_tensor_numel(y);
    c->out_span = span_of(y);
    c->ref = calloc((size_t)c->out_span, sizeof(double));
    if (!strcmp(s->op, "aten::_softmax") || !strcmp(s->op, "aten::_log_softmax")) {
        const kf_job_tensor *x = &s->in[0];
        int64_t dim = kf_job_scalar_find(s, "dim")->i, nd = x->ndim ? x->ndim : 1;
        int d = (int)(dim < 0 ? dim + nd : dim);
        int64_t outer = 1, len = x->ndim ? x->sizes[d] : 1, inner = 1;
        for (int k = 0; k < x->ndim; k++) {
            if (k < d) outer *= x->sizes[k];
            if (k > d) inner *= x->sizes[k];
        }
        int is_log = !strcmp(s->op, "aten::_log_softmax");
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                const double *xv = c->in[0].val + o * len * inner + i;
                double *r = c->ref + o * len * inner + i;
                double m = -INFINITY, sum = 0.0;
                for (int64_t j = 0; j < len; j++) m = xv[j * inner] > m ? xv[j * inner] : m;
                for (int64_t j = 0; j < len; j++) sum += exp(xv[j * inner] - m);
                for (int64_t j = 0; j < len; j++)
                    r[j * inner] = m == -INFINITY ? NAN
                                   : is_log ? (xv[j * inner] - m) - log(sum)
                                            : exp(xv[j * inner] - m) / sum;
            }
        return;
    }
    float alpha = 1.0f;
    const kf_job_scalar *al = kf_job_scalar_find(s, "alpha");
    if (al) alpha = al->kind == 'i' ? (float)al->i : (float)al->d;
    int mul = strstr(s->op, "mul") != NULL;
    for (int64_t lin = 0; lin < n; lin++) {
        int64_t oy = offset_of(y, y->sizes, y->ndim, lin);
        double a = c->in[0].val[offset_of(&s->in[0], y->sizes, y->ndim, lin)];
        if (!strcmp(s->op, "aten::copy_")) {
            c->ref[oy] = c->in[1].val[offset_of(&s->in[1], y->sizes, y->ndim, lin)];
        } else if (s->n_in == 1) {
            c->ref[oy] = ref_unary(s, a);
        } else {
            double b = c->in[1].val[offset_of(&s->in[1], y->sizes, y->ndim, lin)];
            c->ref[oy] = mul ? a * b : a + (double)alpha * b;
        }
    }
}

static void make_case(const char *tmpl_name, kf_job_sig sig, int mode)
{
    if (!CHECK(n_cases < MAX_CASES)) return;
    tcase *c = &cases[n_cases];
    memset(c, 0, sizeof *c);
    c->sig = sig;
    c->tmpl = find_template(tmpl_name);
    if (!CHECK(c->tmpl != NULL)) return;
    /* exactly the intended template serves it */
    CHECK(c->tmpl->applies(&sig));
    CHECK_EQ_INT(nvrtc_applies(&sig), 1);
    int pos = snprintf(c->label, sizeof c->label, "%s", sig.op);
    for (int i = 0; i < sig.n_in && pos < (int)sizeof c->label; i++) {
        const kf_job_tensor *t = &sig.in[i];
        pos += snprintf(c->label + pos, sizeof c->label - (size_t)pos, " %s[", dname(t->dtype));
        pos = label_sizes(c->label, sizeof c->label, pos, t);
        if (pos < (int)sizeof c->label)
            pos += snprintf(c->label + pos, sizeof c->label - (size_t)pos, "]a%d", t->align);
    }
    int dt = sig.out[0].dtype;
    int red = mode == DATA_SOFTMAX;
    c->tol = dt == KF_F32 ? (red ? 1e-4 : 1e-5) : dt == KF_F16 ? 1e-3 : 1e-2;
    c->mode = mode;
    n_cases++;
}

/* Case ci's inputs and reference, to run its kernels. Its data come from a stream of its own,
 * the knob picks (render_case) from the main one: a case added changes neither the other
 * cases' data nor their picks. */
static void case_data(int ci)
{
    tcase *c = &cases[ci];
    const kf_job_sig *sig = &c->sig;
    uint64_t main_rng = rng_state;
    rng_state = 0x9e3779b97f4a7c15ull * (uint64_t)(ci + 1);
    for (int i = 0; i < sig->n_in; i++) tbuf_fill(&c->in[i], &sig->in[i], c->mode);
    rng_state = main_rng;
    if (c->mode == DATA_SOFTMAX) { /* line 1 all -inf (rows mode: row 1; columns: column 1) */
        const kf_job_tensor *x = &sig->in[0];
        int64_t dim = kf_job_scalar_find(sig, "dim")->i, nd = x->ndim ? x->ndim : 1;
        int d = (int)(dim < 0 ? dim + nd : dim);
        int64_t len = x->ndim ? x->sizes[d] : 1, inner = 1, n = kf_job_tensor_numel(x);
        for (int k = d + 1; k < x->ndim; k++) inner *= x->sizes[k];
        int64_t first = inner > 1 ? 1 : len; /* element 0 of line 1 */
        if (n >= 2 * len)
            for (int64_t j = 0; j < len; j++) {
                int64_t e = first + j * (inner > 1 ? inner : 1);
                c->in[0].val[e] = to_dtype(x->dtype, -INFINITY,
                                           (char *)c->in[0].bits + e * esize(x->dtype));
            }
    }
    make_reference(c);
}

static void case_free(tcase *c)
{
    for (int i = 0; i < 2; i++) {
        free(c->in[i].bits);
        free(c->in[i].val);
        c->in[i].bits = NULL;
        c->in[i].val = NULL;
    }
    free(c->ref);
    c->ref = NULL;
}

static void free_cases(void)
{
    for (int k = 0; k < n_cases; k++) case_free(&cases[k]);
    n_cases = 0;
}

/* ---- rendering every combination, choosing the spread ---- */

typedef struct job {
    int c;
    int idx[8];
    char *src, *lj;
    kf_launch l;
    void *blob;
    size_t len;
    int compiled;
} job;

#define MAX_JOBS 2048
#define SPREAD_ROUNDS 2
static job *jobs;
static int n_jobs;

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Hash of a rendered source without its knob lines (the comment naming the knob values and the
 * `#define KF_<KNOB>` lines): knob values that clamp to the same kernel hash the same. */
static uint64_t kernel_hash(const kf_template *t, const char *src)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *line = src; *line;) {
        const char *e = strchr(line, '\n');
        size_t n = e ? (size_t)(e - line + 1) : strlen(line);
        int skip = !strncmp(line, "/* Kernel Forge builtin template", 32);
        for (int k = 0; k < t->n_knobs && !skip; k++) {
            char def[48];
            int m = snprintf(def, sizeof def, "#define KF_%s ", t->knobs[k].name);
            for (int i = 11; i < m - 1; i++)
                def[i] = (char)(def[i] >= 'a' && def[i] <= 'z' ? def[i] - 32 : def[i]);
            skip = !strncmp(line, def, (size_t)m);
        }
        for (size_t i = 0; i < n && !skip; i++) h = (h ^ (unsigned char)line[i]) * 1099511628211ull;
        line += n;
    }
    return h;
}

/* The integer after the first "#define NAME " in src, or -1 (src_define in
 * cuda_template_test.h takes the last). */
static long long first_define(const char *src, const char *name)
{
    char pat[64];
    snprintf(pat, sizeof pat, "#define %s ", name);
    const char *p = strstr(src, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static int n_rendered;

/* Render one combination and check its launch record; the source and record on success. */
static int render_checked(const tcase *c, const int *idx, char **src, char **lj, kf_launch *l)
{
    const kf_template *t = c->tmpl;
    char err[512];
    *src = *lj = NULL;
    kf_status st = t->render(&c->sig, idx, src, lj, err, sizeof err);
    n_rendered++;
    if (!CHECK_EQ_INT(st, KF_OK)) {
        printf("     %s: %s\n", c->label, err);
        return 0;
    }
    int ok = 1;
    ok &= CHECK(strstr(*src, "extern \"C\" __global__ void") != NULL);
    ok &= CHECK(strstr(*src, "kf_kernel(") != NULL);
    memset(l, 0, sizeof *l);
    if (!CHECK_EQ_INT(kf_launch_parse(*lj, l, err, sizeof err), KF_OK)) {
        printf("     %s: %s: %s\n", c->label, *lj, err);
        return 0;
    }
    int fresh = 0;
    for (int i = 0; i < c->sig.n_out; i++) fresh += c->sig.out_alias[i] == 0;
    ok &= CHECK_STR(l->entry, "kf_kernel");
    ok &= CHECK_EQ_INT(l->n_args, c->sig.n_in + fresh);
    /* in place: the first argument is written, so not const; the rest are */
    for (int i = 0; i < l->n_args; i++) {
        int is_out = i >= c->sig.n_in || (i == 0 && c->sig.out_alias[0] == 1);
        ok &= CHECK((strncmp(l->arg_types[i], "const ", 6) != 0) == is_out);
    }
    /* every knob shows as its #define; threads is the block size */
    for (int k = 0; k < t->n_knobs; k++) {
        char up[32];
        size_t j = 0;
        for (; t->knobs[k].name[j] && j + 4 < sizeof up; j++)
            up[j] = (char)(t->knobs[k].name[j] >= 'a' && t->knobs[k].name[j] <= 'z'
                               ? t->knobs[k].name[j] - 32 : t->knobs[k].name[j]);
        up[j] = 0;
        char def[40];
        snprintf(def, sizeof def, "KF_%s", up);
        ok &= CHECK_EQ_INT(first_define(*src, def), t->knobs[k].values[idx[k]]);
        if (!strcmp(t->knobs[k].name, "threads"))
            ok &= CHECK_EQ_INT(l->block[0], t->knobs[k].values[idx[k]]);
    }
    ok &= CHECK(l->block[1] == 1 && l->block[2] == 1 && l->grid[1] == 1 && l->grid[2] == 1);
    /* the loader opts in to more shared memory only above 48 KiB: up to that, the statics must
     * fit beside the dynamic part */
    ok &= CHECK(l->smem > 48 * 1024 || l->smem + 1024 <= 48 * 1024);
    long long cl = first_define(*src, "KF_CL");
    if (cl > 1) ok &= CHECK_EQ_INT(l->grid[0] % cl, 0); /* whole clusters */
    /* a family kernel (rows over the last dim): the rows at launch, the grid following them
     * (ceil(rows / rows per block) clusters) */
    char *fam = kf_template_family(t, &c->sig);
    if (fam) {
        const kf_job_tensor *x = &c->sig.in[0];
        long long rows = kf_job_tensor_numel(x) / x->sizes[x->ndim - 1];
        long long rpb = first_define(*src, "KF_RPB");
        ok &= CHECK(strstr(*src, "#define KF_NROWS kf_rows ") != NULL);
        ok &= CHECK(l->n_ints == 1 && l->ints[0].arg == 0 && l->ints[0].den_arg == 0 &&
                    l->ints[0].dim == KF_LAUNCH_NUMEL && l->ints[0].den_dim == -1);
        ok &= CHECK(l->grid_int == 0 && l->grid_per == (unsigned)rpb &&
                    l->grid_mul == (unsigned)(cl > 1 ? cl : 1));
        ok &= CHECK_EQ_INT(l->grid[0], (rows + rpb - 1) / rpb * (cl > 1 ? cl : 1));
    } else {
        ok &= CHECK(l->n_ints == 0 && l->grid_per == 0);
    }
    free(fam);
    if (!ok) printf("     %s: %s\n", c->label, *lj);
    return ok;
}

/* Every combination of case c; a spread of them (every value of every knob, the all-first and
 * all-last combinations) becomes jobs, one per distinct source. */
static void render_case(int ci)
{
    const tcase *c = &cases[ci];
    const kf_template *t = c->tmpl;
    int total = knob_combinations(t);
    for (int v = 0; v < total; v++) {
        int idx[8];
        knob_combination(t, v, idx);
        char *src, *lj;
        kf_launch l;
        render_checked(c, idx, &src, &lj, &l);
        free(src);
        free(lj);
    }

    /* the all-first and all-last combinations, then SPREAD_ROUNDS rounds that each give every
     * value of every knob once (knob k's values in a random order, cycled) */
    int picks[64][8], n_picks = 2, n_max = 1;
    for (int k = 0; k < t->n_knobs; k++) {
        picks[0][k] = 0, picks[1][k] = t->knobs[k].n_values - 1;
        if (t->knobs[k].n_values > n_max) n_max = t->knobs[k].n_values;
    }
    for (int r = 0; r < SPREAD_ROUNDS; r++) {
        int perm[8][KF_KNOB_MAX_VALUES];
        for (int k = 0; k < t->n_knobs; k++) {
            int n = t->knobs[k].n_values;
            for (int v = 0; v < n; v++) perm[k][v] = v;
            for (int v = n - 1; v > 0; v--) {
                int w = (int)(urand() * (v + 1)), tmp = perm[k][v];
                perm[k][v] = perm[k][w];
                perm[k][w] = tmp;
            }
        }
        for (int q = 0; q < n_max && n_picks < 64; q++, n_picks++)
            for (int k = 0; k < t->n_knobs; k++)
                picks[n_picks][k] = perm[k][q % t->knobs[k].n_values];
    }
    /* softmax: two more with the staged strategy, over the widest cluster and in one block (a
     * row longer than a block stages is then read partly twice: a path the spread may miss) */
    int k_strat = -1, k_split = -1;
    for (int k = 0; k < t->n_knobs; k++) {
        if (!strcmp(t->knobs[k].name, "strategy")) k_strat = k;
        if (!strcmp(t->knobs[k].name, "split")) k_split = k;
    }
    for (int split = 1; split >= 0 && k_strat >= 0 && k_split >= 0 && n_picks < 64; split--) {
        for (int k = 0; k < t->n_knobs; k++)
            picks[n_picks][k] = (int)(urand() * t->knobs[k].n_values);
        picks[n_picks][k_strat] = t->knobs[k_strat].n_values - 1;
        picks[n_picks][k_split] = split ? t->knobs[k_split].n_values - 1 : 0;
        n_picks++;
    }
    uint64_t seen[64];
    int n_seen = 0;
    for (int p = 0; p < n_picks && n_jobs < MAX_JOBS; p++) {
        job *j = &jobs[n_jobs];
        memset(j, 0, sizeof *j);
        j->c = ci;
        memcpy(j->idx, picks[p], sizeof j->idx);
        if (!render_checked(c, j->idx, &j->src, &j->lj, &j->l)) {
            free(j->src);
            free(j->lj);
            continue;
        }
        uint64_t h = kernel_hash(t, j->src) ^ fnv1a(j->lj);
        int dup = 0;
        for (int s = 0; s < n_seen; s++) dup |= seen[s] == h;
        if (dup) {
            free(j->src);
            free(j->lj);
            continue;
        }
        seen[n_seen++] = h;
        n_jobs++;
    }
}

/* The full-size signatures the templates are tuned for: every combination renders and gives a
 * launch record the loader can launch (no data, no compile: too big for a unit test). */
static void test_target_renders(void)
{
    kf_job_sig sigs[16];
    const char *tmpl[16];
    int n = 0;
    kf_job_tensor t;
    tmpl[n] = "cuda_row_softmax";
    sigs[n++] = sig_softmax("aten::_softmax", T(KF_BF16, 16, 8, 16, 1024, 1024), -1, 0);
    tmpl[n] = "cuda_row_softmax";
    sigs[n++] = sig_softmax("aten::_softmax", T(KF_F32, 16, 32, 262144), -1, 0);
    tmpl[n] = "cuda_row_softmax";
    sigs[n++] = sig_softmax("aten::_softmax", T(KF_BF16, 16, 4096, 151936), -1, 0);
    tmpl[n] = "cuda_row_softmax";
    sigs[n++] = sig_softmax("aten::_log_softmax", T(KF_F16, 16, 64, 4096, 128), 1, 1);
    tmpl[n] = "cuda_eltwise_unary";
    sigs[n++] = gelu_sig(T(KF_BF16, 16, 8192, 14336), "tanh");
    tmpl[n] = "cuda_eltwise_unary";
    sigs[n++] = sig_unary("aten::relu", nhwc(T(KF_F16, 16, 64, 256, 56, 56)));
    t = T(KF_BF16, 16, 8192, 14336);
    tmpl[n] = "cuda_eltwise_binary";
    sigs[n++] = sig_binary("aten::mul.Tensor", t, T(KF_BF16, 16, 14336), t, 0, 0);
    t = nhwc(T(KF_F16, 16, 64, 256, 56, 56));
    tmpl[n] = "cuda_eltwise_binary";
    sigs[n++] = sig_binary("aten::add.Tensor", t, T(KF_F16, 16, 256, 1, 1), t, 'd', 0.5);
    tmpl[n] = "cuda_eltwise_unary"; /* the RMSNorms of Gemma and Qwen */
    sigs[n++] = sig_pow(T(KF_F32, 16, 4, 1024, 2304), 'i', 2);
    tmpl[n] = "cuda_eltwise_copy";
    sigs[n++] = sig_copy(T(KF_F32, 16, 4, 1024, 2304), T(KF_BF16, 16, 4, 1024, 2304));
    t = T(KF_BF16, 16, 4, 8192, 1024); /* Qwen 3.5's transposed copy */
    t.strides[1] = 1, t.strides[2] = 8192;
    tmpl[n] = "cuda_eltwise_copy";
    sigs[n++] = sig_copy(T(KF_BF16, 16, 4, 8192, 1024), t);
    /* SD3.5 MMDiT's residual adds: self a transposed view, the output like self (TensorIterator
     * follows the first input's layout), other contiguous or broadcast over the batch */
    t = bsc_t(KF_BF16, 16, 2, 4096, 1536);
    tmpl[n] = "cuda_eltwise_binary";
    sigs[n++] = sig_binary("aten::add.Tensor", t, T(KF_BF16, 16, 2, 4096, 1536), t, 'i', 1);
    tmpl[n] = "cuda_eltwise_binary";
    sigs[n++] = sig_binary("aten::add.Tensor", t, T(KF_BF16, 16, 1, 4096, 1536), t, 'i', 1);
    for (int i = 0; i < n; i++) {
        tcase c;
        memset(&c, 0, sizeof c);
        c.sig = sigs[i];
        c.tmpl = find_template(tmpl[i]);
        snprintf(c.label, sizeof c.label, "%s (target %d)", sigs[i].op, i);
        if (!CHECK(c.tmpl && c.tmpl->applies(&c.sig))) continue;
        CHECK_EQ_INT(nvrtc_applies(&c.sig), 1);
        int total = knob_combinations(c.tmpl);
        for (int v = 0; v < total; v++) {
            int idx[8];
            knob_combination(c.tmpl, v, idx);
            char *src, *lj;
            kf_launch l;
            render_checked(&c, idx, &src, &lj, &l);
            free(src);
            free(lj);
        }
    }
}

static void job_name(const job *j, char *out, size_t cap)
{
    job_label(out, cap, cases[j->c].tmpl, cases[j->c].label, j->idx);
}

/* ---- compiling ---- */

static kf_compiler_i cc;
static char arch[32] = "sm_90";
static _Atomic int next_job;

/* Warnings of the template's own code; the prologue's unused helpers (kf_to_f / kf_from_f
 * overloads a kernel does not need, #177-D) are the prologue's and tolerated here. */
static int own_warnings(const char *log)
{
    for (const char *p = log; p && (p = strstr(p, "warning #")) != NULL; p++) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char line[400];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line - 1 ? n : sizeof line - 1), p);
        if (strstr(line, "#177-D") && (strstr(line, "\"kf_to_f(") || strstr(line, "\"kf_from_f<")))
            continue;
        return 1;
    }
    return 0;
}

static void *compile_worker(void *arg)
{
    (void)arg;
    for (;;) {
        int i = atomic_fetch_add(&next_job, 1);
        if (i >= n_jobs) return NULL;
        job *j = &jobs[i];
        char name[400], *log = NULL;
        job_name(j, name, sizeof name);
        kf_status st = cc.compile(cc.self, j->src, &j->l, arch, &j->blob, &j->len, &log);
        if (!CHECK_EQ_INT(st, KF_OK)) {
            printf("     %s: compile log:\n%s\n", name, log ? log : "(none)");
        } else if (!CHECK(!own_warnings(log))) {
            printf("     %s: %s\n", name, log);
        } else {
            j->compiled = 1;
        }
        free(log);
    }
}

/* ---- running on the GPU ---- */

static kf_cuda_driver drv;

#define GUARD 256 /* canary bytes on each side of every buffer */

typedef struct dbuf {
    unsigned long long base, ptr;
    size_t bytes, total;
} dbuf;

/* Device buffer of `bytes` at `misalign` bytes past a 256-byte boundary, GUARD bytes of 0xa5
 * before and after. */
static int dbuf_alloc(dbuf *b, size_t bytes, int misalign)
{
    memset(b, 0, sizeof *b);
    b->bytes = bytes;
    b->total = bytes + 2 * GUARD + 256;
    if (drv.mem_alloc(&b->base, b->total) != KF_CU_SUCCESS) return 0;
    b->ptr = b->base + GUARD + (unsigned)misalign;
    return drv.memset_d8(b->base, 0xa5, b->total) == KF_CU_SUCCESS;
}

/* 1 when everything outside [ptr, ptr + bytes) still holds the canary */
static int dbuf_canary_ok(const dbuf *b)
{
    unsigned char *h = malloc(b->total);
    int ok = drv.memcpy_dtoh(h, b->base, b->total) == KF_CU_SUCCESS;
    size_t lo = (size_t)(b->ptr - b->base), hi = lo + b->bytes;
    for (size_t i = 0; ok && i < b->total; i++)
        if ((i < lo || i >= hi) && h[i] != 0xa5) ok = 0;
    free(h);
    return ok;
}

/* Misalignment that realizes a recorded alignment (16 or unknown: none). */
static int misalign_for(int align) { return align > 0 && align < 16 ? align : 0; }

static long compare_out(const char *name, const tcase *c, const unsigned char *got)
{
    const kf_job_tensor *y = &c->sig.out[0];
    int es = esize(y->dtype);
    long bad = 0;
    int64_t n = kf_job_tensor_numel(y);
    for (int64_t lin = 0; lin < n; lin++) {
        int64_t o = offset_of(y, y->sizes, y->ndim, lin);
        const unsigned char *p = got + o * es;
        int poisoned = 1;
        for (int b = 0; b < es; b++) poisoned &= p[b] == 0xff;
        double g = from_bits(y->dtype, p), r = c->ref[o];
        int ok;
        if (poisoned) ok = 0;
        else if (isnan(r)) ok = isnan(g);
        else if (isinf(r)) ok = g == r;
        else ok = isfinite(g) && fabs(g - r) <= c->tol + c->tol * fabs(r);
        if (!ok && bad++ < 3)
            printf("     %s: out[%lld] (offset %lld) = %.9g%s, reference %.9g\n", name,
                   (long long)lin, (long long)o, g, poisoned ? " (poison: never written)" : "",
                   r);
    }
    return bad;
}

/* The elements of out's span that it does not address (the gaps of a slice) must hold what
 * they held before the launch: `before` (in place: self's data), else the 0xff poison. */
static long compare_gaps(const char *name, const tcase *c, const unsigned char *got,
                         const unsigned char *before)
{
    const kf_job_tensor *y = &c->sig.out[0];
    int es = esize(y->dtype);
    int64_t n = kf_job_tensor_numel(y);
    if (n == c->out_span) return 0; /* dense: no gaps */
    unsigned char *hit = calloc((size_t)c->out_span, 1);
    for (int64_t lin = 0; lin < n; lin++) hit[offset_of(y, y->sizes, y->ndim, lin)] = 1;
    long bad = 0;
    for (int64_t o = 0; o < c->out_span; o++) {
        if (hit[o]) continue;
        int same = 1;
        for (int b = 0; b < es; b++)
            same &= got[o * es + b] == (before ? before[o * es + b] : 0xff);
        if (!same && bad++ < 3)
            printf("     %s: gap element at offset %lld written\n", name, (long long)o);
    }
    free(hit);
    return bad;
}

static int run_job(const job *j)
{
    const tcase *c = &cases[j->c];
    char name[400], err[512];
    job_name(j, name, sizeof name);
    kf_compiled *k = NULL;
    if (!CHECK_EQ_INT(cc.load(cc.self, j->blob, j->len, &j->l, 0, &k, err, sizeof err), KF_OK)) {
        printf("     %s: load: %s\n", name, err);
        return 0;
    }
    const kf_job_sig *s = &c->sig;
    int inplace = s->out_alias[0] == 1, copy = !strcmp(s->op, "aten::copy_");
    dbuf in[2], out;
    memset(&out, 0, sizeof out);
    int ok = 1;
    void *ptrs[4]; /* inputs, the output, a family kernel's rows */
    int np = 0;
    for (int i = 0; i < s->n_in; i++) {
        size_t bytes = (size_t)c->in[i].span * (size_t)esize(s->in[i].dtype);
        ok &= CHECK(dbuf_alloc(&in[i], bytes, misalign_for(s->in[i].align)));
        ok &= CHECK_EQ_INT(drv.memcpy_htod(in[i].ptr, c->in[i].bits, bytes), KF_CU_SUCCESS);
        if (i == 0 && copy) /* self is only written: poison it */
            ok &= CHECK_EQ_INT(drv.memset_d8(in[i].ptr, 0xff, bytes), KF_CU_SUCCESS);
        ptrs[np++] = (void *)(uintptr_t)in[i].ptr;
    }
    size_t out_bytes = (size_t)c->out_span * (size_t)esize(s->out[0].dtype);
    if (!inplace) {
        ok &= CHECK(dbuf_alloc(&out, out_bytes, 0));
        ok &= CHECK_EQ_INT(drv.memset_d8(out.ptr, 0xff, out_bytes), KF_CU_SUCCESS); /* poison */
        ptrs[np++] = (void *)(uintptr_t)out.ptr;
    }
    /* a family kernel's launch-time sizes, as the plugin computes them */
    kf_dims dims[3];
    int64_t iv[KF_LAUNCH_MAX_INTS];
    for (int i = 0; i < np; i++) {
        const kf_job_tensor *t = i < s->n_in ? &s->in[i] : &s->out[0];
        dims[i].ndim = t->ndim, dims[i].sizes = t->sizes;
    }
    ok &= CHECK(j->l.n_ints <= 1) && CHECK_EQ_INT(kf_launch_ints(&j->l, dims, np, iv), KF_OK);
    for (int i = 0; ok && i < j->l.n_ints; i++) ptrs[np++] = (void *)(intptr_t)iv[i];
    if (ok && CHECK_EQ_INT(cc.launch(cc.self, k, ptrs, np, NULL), 0)) {
        kf_cu_result r = drv.ctx_synchronize();
        if (!CHECK_EQ_INT(r, KF_CU_SUCCESS)) {
            char eb[160];
            printf("     %s: %s (the context is gone: stopping)\n", name,
                   kf_cuda_strerror(&drv, r, eb, sizeof eb));
            exit(check_done("templates_cuda_softmax_eltwise"));
        }
        const dbuf *ob = inplace ? &in[0] : &out;
        unsigned char *got = malloc(out_bytes);
        ok &= CHECK_EQ_INT(drv.memcpy_dtoh(got, ob->ptr, out_bytes), KF_CU_SUCCESS);
        long bad = compare_out(name, c, got);
        ok &= CHECK_EQ_INT(bad, 0);
        bad = compare_gaps(name, c, got, inplace && !copy ? c->in[0].bits : NULL);
        ok &= CHECK_EQ_INT(bad, 0);
        free(got);
        for (int i = inplace ? 1 : 0; i < s->n_in; i++) { /* inputs untouched */
            size_t bytes = (size_t)c->in[i].span * (size_t)esize(s->in[i].dtype);
            unsigned char *h = malloc(bytes);
            ok &= CHECK_EQ_INT(drv.memcpy_dtoh(h, in[i].ptr, bytes), KF_CU_SUCCESS);
            ok &= CHECK(memcmp(h, c->in[i].bits, bytes) == 0);
            free(h);
        }
        for (int i = 0; i < s->n_in; i++) ok &= CHECK(dbuf_canary_ok(&in[i]));
        if (!inplace) ok &= CHECK(dbuf_canary_ok(&out));
        if (!ok) printf("     %s failed (%s)\n", name, j->lj);
    } else {
        ok = 0;
        printf("     %s: launch failed (%s)\n", name, j->lj);
    }
    for (int i = 0; i < s->n_in; i++) drv.mem_free(in[i].base);
    if (!inplace) drv.mem_free(out.base);
    cc.unload(cc.self, k);
    return ok;
}

/* ---- the cases ---- */

static void make_cases(void)
{
    /* softmax, rows mode: odd lengths, one row, short rows, a row longer than shared memory */
    make_case("cuda_row_softmax", sig_softmax("aten::_softmax", T(KF_F32, 4, 3, 5, 37), -1, 0),
              DATA_SOFTMAX);
    make_case("cuda_row_softmax",
              sig_softmax("aten::_log_softmax", T(KF_F32, 16, 2, 3, 40), 2, 0), DATA_SOFTMAX);
    make_case("cuda_row_softmax", sig_softmax("aten::_softmax", T(KF_BF16, 16, 1, 1000), -1, 0),
              DATA_SOFTMAX);
    make_case("cuda_row_softmax", sig_softmax("aten::_softmax", T(KF_F16, 2, 257, 8), 1, 0),
              DATA_SOFTMAX);
    make_case("cuda_row_softmax",
              sig_softmax("aten::_log_softmax", T(KF_F16, 16, 5, 520), -1, 1), DATA_SOFTMAX);
    make_case("cuda_row_softmax", sig_softmax("aten::_softmax", T(KF_F32, 16, 3, 70000), -1, 0),
              DATA_SOFTMAX);
    make_case("cuda_row_softmax",
              sig_softmax("aten::_softmax", T(KF_BF16, 16, 4, 100, 1), 1, 1), DATA_SOFTMAX);
    /* columns mode: the reduced dim has elements after it */
    make_case("cuda_row_softmax", sig_softmax("aten::_softmax", T(KF_F32, 16, 3, 7, 10), 1, 0),
              DATA_SOFTMAX);
    make_case("cuda_row_softmax",
              sig_softmax("aten::_log_softmax", T(KF_BF16, 16, 2, 200, 64), -2, 0), DATA_SOFTMAX);
    make_case("cuda_row_softmax",
              sig_softmax("aten::_softmax", T(KF_F16, 2, 5, 4, 3, 6), 0, 1), DATA_SOFTMAX);

    /* unary: flat over memory order; odd sizes, alignment 2, channels_last, in place */
    make_case("cuda_eltwise_unary", gelu_sig(T(KF_F32, 4, 1037), "none"), DATA_ELT);
    make_case("cuda_eltwise_unary", gelu_sig(T(KF_BF16, 16, 3, 37), "tanh"), DATA_ELT);
    make_case("cuda_eltwise_unary", gelu_sig(T(KF_F16, 16, 300001), "tanh"), DATA_ELT);
    make_case("cuda_eltwise_unary", sig_unary("aten::silu", T(KF_F16, 2, 2, 4099)), DATA_ELT);
    make_case("cuda_eltwise_unary", sig_unary("aten::silu", T(KF_F32, 16, 64, 33)), DATA_ELT);
    make_case("cuda_eltwise_unary", sig_unary("aten::relu", nhwc(T(KF_F16, 16, 2, 8, 5, 5))),
              DATA_ELT);
    make_case("cuda_eltwise_unary", sig_unary("aten::relu_", T(KF_BF16, 16, 33, 64)), DATA_ELT);
    make_case("cuda_eltwise_unary", clamp_sig("aten::clamp_min_", T(KF_F32, 8, 1001), 'd', 0.25),
              DATA_ELT);
    make_case("cuda_eltwise_unary", clamp_sig("aten::clamp_min", T(KF_BF16, 16, 7, 9), 'd', 0.1),
              DATA_ELT);
    make_case("cuda_eltwise_unary", clamp_sig("aten::clamp_min", T(KF_F16, 16, 1), 'i', -1),
              DATA_ELT);
    /* pow: eager's special exponents, and powf */
    make_case("cuda_eltwise_unary", sig_pow(T(KF_F32, 16, 4, 1037), 'i', 2), DATA_ELT);
    make_case("cuda_eltwise_unary", sig_pow(T(KF_F32, 4, 4, 33, 1), 'd', -0.5), DATA_ELT);
    make_case("cuda_eltwise_unary", sig_pow(T(KF_BF16, 16, 3, 37), 'd', 0.5), DATA_ELT);
    make_case("cuda_eltwise_unary", sig_pow(T(KF_F16, 2, 1001), 'd', 1.7), DATA_ELT);

    /* copy_: casts both ways, a transposed source, a broadcast source, same dtype */
    make_case("cuda_eltwise_copy", sig_copy(T(KF_F32, 16, 4, 37, 24), T(KF_BF16, 16, 4, 37, 24)),
              DATA_ELT);
    make_case("cuda_eltwise_copy", sig_copy(T(KF_BF16, 2, 1037), T(KF_F32, 4, 1037)), DATA_ELT);
    kf_job_tensor st = T(KF_F16, 16, 3, 24, 40);
    st.strides[0] = 960, st.strides[1] = 1, st.strides[2] = 24; /* a transposed view */
    make_case("cuda_eltwise_copy", sig_copy(T(KF_F16, 16, 3, 24, 40), st), DATA_ELT);
    make_case("cuda_eltwise_copy", sig_copy(T(KF_F32, 16, 5, 64), T(KF_F16, 16, 64)), DATA_ELT);
    /* a cast and a transposition with a batch dim and partial tiles: src is [5,3,45,37] in
     * memory, permuted to self's [5,37,3,45] */
    st = T(KF_BF16, 16, 5, 37, 3, 45);
    st.strides[0] = 4995, st.strides[1] = 1, st.strides[2] = 1665, st.strides[3] = 37;
    make_case("cuda_eltwise_copy", sig_copy(T(KF_F32, 16, 5, 37, 3, 45), st), DATA_ELT);

    /* binary: flat, broadcasting ([N,C,H,W] + [C,1,1], [B,S,H] * [H], both sides), mixed
     * layouts, in place */
    kf_job_tensor a;
    a = T(KF_F32, 4, 37, 41);
    make_case("cuda_eltwise_binary", sig_binary("aten::add.Tensor", a, a, a, 'd', 0.3), DATA_ELT);
    a = T(KF_BF16, 16, 4, 8, 6, 6);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::add.Tensor", a, T(KF_BF16, 16, 8, 1, 1), a, 'i', 2), DATA_ELT);
    a = T(KF_F16, 16, 3, 5, 64);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::mul.Tensor", a, T(KF_F16, 8, 64), a, 0, 0), DATA_ELT);
    a = T(KF_F16, 16, 5, 37);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::add.Tensor", T(KF_F16, 2, 1, 37), T(KF_F16, 16, 5, 1), a, 0, 0),
              DATA_ELT);
    a = T(KF_BF16, 16, 6, 16);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::mul_.Tensor", a, T(KF_BF16, 16, 6, 1), a, 0, 0), DATA_ELT);
    a = nhwc(T(KF_F32, 16, 2, 3, 4, 5));
    make_case("cuda_eltwise_binary",
              sig_binary("aten::add_.Tensor", a, T(KF_F32, 16, 2, 3, 4, 5), a, 'd', -1.5),
              DATA_ELT);
    a = T(KF_BF16, 16, 16, 24);
    kf_job_tensor bt = T(KF_BF16, 16, 16, 24);
    bt.strides[0] = 1, bt.strides[1] = 16; /* a transposed view */
    make_case("cuda_eltwise_binary", sig_binary("aten::add.Tensor", a, bt, a, 'i', 1), DATA_ELT);
    a = T(KF_F32, 16, 7);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::mul.Tensor", sig_tensor(KF_F32, 0, NULL, 0, 16), a, a, 0, 0), DATA_ELT);
    a = nhwc(T(KF_F16, 16, 2, 16, 3, 3));
    make_case("cuda_eltwise_binary",
              sig_binary("aten::mul.Tensor", a, T(KF_F16, 16, 16, 1, 1), a, 0, 0), DATA_ELT);
    /* mixed dtypes into f32 (Qwen 3.5's gated RMSNorm: bf16 weight x f32 rows): flat, odd
     * sizes and a broadcast, and an operand transposed against the output (tiles) */
    a = T(KF_F32, 16, 40, 128);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::mul.Tensor", T(KF_BF16, 16, 40, 128), a, a, 0, 0), DATA_ELT);
    a = T(KF_F32, 16, 5, 37);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::add.Tensor", T(KF_F16, 2, 5, 37), T(KF_BF16, 16, 37), a, 'd', 0.5),
              DATA_ELT);
    a = T(KF_F32, 16, 2, 37, 45);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::mul.Tensor", a, bsc_t(KF_BF16, 16, 2, 37, 45), a, 0, 0), DATA_ELT);

    /* binary with an operand that transposes the output (transpose_tile): sizes no tile side
     * divides. MMDiT's add (self [B,S,C] over a [B,C,S] buffer, out like self, other
     * contiguous: other is staged); out contiguous instead (self staged); other broadcast over
     * the batch; both inputs transposed against a contiguous out (both staged); in place into
     * the transposed self; and inputs that agree (no tiles, the loop) */
    a = bsc_t(KF_BF16, 16, 2, 37, 45);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::add.Tensor", a, T(KF_BF16, 16, 2, 37, 45), a, 'i', 1), DATA_ELT);
    a = bsc_t(KF_F32, 16, 3, 70, 33);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::add.Tensor", a, T(KF_F32, 16, 3, 70, 33), T(KF_F32, 16, 3, 70, 33),
                         'd', 0.5),
              DATA_ELT);
    a = bsc_t(KF_F16, 16, 2, 65, 40);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::add.Tensor", a, T(KF_F16, 16, 1, 65, 40), a, 'd', -2.0), DATA_ELT);
    a = bsc_t(KF_BF16, 16, 2, 33, 70);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::mul.Tensor", a, bsc_t(KF_BF16, 16, 2, 33, 70),
                         T(KF_BF16, 16, 2, 33, 70), 0, 0),
              DATA_ELT);
    a = bsc_t(KF_F32, 16, 2, 45, 67);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::add_.Tensor", a, T(KF_F32, 16, 2, 45, 67), a, 'd', 1.5), DATA_ELT);
    a = bsc_t(KF_F16, 16, 3, 100, 7);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::mul_.Tensor", a, T(KF_F16, 16, 1, 100, 7), a, 0, 0), DATA_ELT);
    /* other [S] along self's strided dim: broadcast along out's innermost, contiguous along S */
    a = T(KF_BF16, 16, 3, 37, 45);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::add.Tensor", bsc_t(KF_BF16, 16, 3, 37, 45),
                         sig_tensor_strided(KF_BF16, 3, (int64_t[]){3, 37, 45},
                                            (int64_t[]){0, 1, 0}, 16),
                         a, 'i', 3),
              DATA_ELT);
    a = bsc_t(KF_F16, 16, 2, 37, 45);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::add.Tensor", a, bsc_t(KF_F16, 16, 2, 37, 45), a, 'i', 1), DATA_ELT);

    /* Outputs with gaps (slices of larger buffers: the gap bytes must stay as they were) and
     * strided inputs of the unary ops. First as recorded in Qwen 3.5's prefill: copy_ into a gapped self transposed
     * against src (tiles over the [64,128] blocks, the gapped dim a batch), the KV-cache copy_
     * (a slice along dim 2: vectors along the last dim), silu of a slice with rows of 1027
     * elements (no input vectors) */
    make_case("cuda_eltwise_copy", sig_copy(qwen_self(), T(KF_F32, 16, 4, 32, 64, 128)),
              DATA_ELT);
    a = sig_tensor_strided(KF_BF16, 4, IV(4, 8, 1024, 256), IV(8388608, 1048576, 256, 1), 16);
    make_case("cuda_eltwise_copy", sig_copy(a, T(KF_BF16, 16, 4, 8, 1024, 256)), DATA_ELT);
    a = sig_tensor_strided(KF_BF16, 3, IV(4, 8192, 1024), IV(8413184, 1027, 1), 16);
    make_case("cuda_eltwise_unary", unary_out(sig_unary("aten::silu", a)), DATA_ELT);
    /* copy_: a broadcast src cast into rows with gaps; a cast into a gapped self transposed
     * against src with a size-1 dim (partial tiles); self strided along its innermost dim (no
     * vectors, no tiles) from a transposed src; a KV-cache slice with a widening cast; size-1
     * dims and src broadcast along self's contiguous dim */
    a = sig_tensor_strided(KF_F16, 3, IV(3, 5, 40), IV(400, 48, 1), 16);
    make_case("cuda_eltwise_copy", sig_copy(a, T(KF_BF16, 16, 40)), DATA_ELT);
    a = sig_tensor_strided(KF_BF16, 4, IV(2, 1, 37, 45), IV(5000, 777, 1, 40), 16);
    make_case("cuda_eltwise_copy", sig_copy(a, T(KF_F32, 16, 2, 1, 37, 45)), DATA_ELT);
    a = sig_tensor_strided(KF_F32, 2, IV(6, 50), IV(120, 2), 16);
    make_case("cuda_eltwise_copy",
              sig_copy(a, sig_tensor_strided(KF_F16, 2, IV(6, 50), IV(1, 6), 16)), DATA_ELT);
    a = sig_tensor_strided(KF_F32, 4, IV(2, 3, 10, 16), IV(1152, 384, 16, 1), 16);
    make_case("cuda_eltwise_copy", sig_copy(a, T(KF_F16, 16, 2, 3, 10, 16)), DATA_ELT);
    a = sig_tensor_strided(KF_F16, 3, IV(3, 1, 8), IV(24, 5, 1), 4);
    make_case("cuda_eltwise_copy", sig_copy(a, T(KF_F32, 16, 3, 1, 1)), DATA_ELT);
    /* unary: an odd row stride (gelu), in place into gapped rows (vectors) and into a self
     * strided along its innermost dim, a transposed input, an expanded input (stride 0),
     * size-1 dims in a strided input */
    a = sig_tensor_strided(KF_F16, 3, IV(5, 33, 70), IV(2409, 73, 1), 2);
    make_case("cuda_eltwise_unary", unary_out(gelu_sig(a, "tanh")), DATA_ELT);
    a = sig_tensor_strided(KF_BF16, 3, IV(4, 40, 64), IV(3840, 96, 1), 16);
    make_case("cuda_eltwise_unary", sig_unary("aten::relu_", a), DATA_ELT);
    a = sig_tensor_strided(KF_F32, 2, IV(7, 30), IV(70, 2), 8);
    make_case("cuda_eltwise_unary", clamp_sig("aten::clamp_min_", a, 'd', 0.25), DATA_ELT);
    a = sig_tensor_strided(KF_F32, 2, IV(37, 45), IV(1, 37), 16);
    make_case("cuda_eltwise_unary", unary_out(sig_unary("aten::silu", a)), DATA_ELT);
    a = sig_tensor_strided(KF_F32, 2, IV(6, 33), IV(0, 1), 16);
    make_case("cuda_eltwise_unary", unary_out(sig_pow(a, 'i', 3)), DATA_ELT);
    a = sig_tensor_strided(KF_BF16, 5, IV(2, 1, 3, 1, 20), IV(200, 7, 40, 3, 1), 16);
    make_case("cuda_eltwise_unary", unary_out(gelu_sig(a, "none")), DATA_ELT);
    /* binary: in place into gapped rows with a broadcast other; in place into a gapped self
     * that a contiguous other transposes (tiles, other staged); a fresh output with gaps */
    a = sig_tensor_strided(KF_BF16, 3, IV(4, 24, 64), IV(1920, 80, 1), 16);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::add_.Tensor", a, T(KF_BF16, 16, 64), a, 'i', 2), DATA_ELT);
    a = sig_tensor_strided(KF_F16, 3, IV(2, 37, 45), IV(2000, 1, 40), 16);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::mul_.Tensor", a, T(KF_F16, 16, 2, 37, 45), a, 0, 0), DATA_ELT);
    make_case("cuda_eltwise_binary",
              sig_binary("aten::mul.Tensor", T(KF_F32, 16, 8, 37), T(KF_F32, 16, 37),
                         sig_tensor_strided(KF_F32, 2, IV(8, 37), IV(74, 1), 16), 0, 0),
              DATA_ELT);
}

int main(void)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rng_state = 0x5eed4321u;
    test_table();
    test_refusals();
    test_tiles();
    test_softmax_start();
    test_target_renders();
    make_cases();

    jobs = calloc(MAX_JOBS, sizeof *jobs);
    for (int ci = 0; ci < n_cases; ci++) render_case(ci);
    printf("%d renders over %d cases in %.1f s; %d distinct kernels to compile\n", n_rendered,
           n_cases, seconds_since(&t0), n_jobs);

    /* the spread must reach every code path of the softmax template: per mode (rows, rows in a
     * cluster, columns) each strategy, and staging in registers only, with shared memory, and
     * with a remainder read twice */
    static const char *const path_names[] = {"two-pass", "online", "staged in registers",
                                             "staged in shared memory", "staged partly"};
    int paths[3][5] = {{0}};
    for (int i = 0; i < n_jobs; i++) {
        const char *src = jobs[i].src;
        long long mode = first_define(src, "KF_MODE"), strat = first_define(src, "KF_STRAT");
        long long cl = first_define(src, "KF_CL"), npt = first_define(src, "KF_NPT");
        long long nreg = first_define(src, "KF_NREG"), svec = first_define(src, "KF_SVEC");
        if (mode < 0 || strat < 0) continue;
        int m = mode ? 2 : cl > 1;
        int p = strat < 2 ? (int)strat : nreg + svec < npt ? 4 : svec > 0 ? 3 : 2;
        paths[m][p]++;
    }
    for (int p = 0; p < 5; p++) {
        printf("softmax kernels %-24s rows %3d, rows in clusters %3d, columns %3d\n",
               path_names[p], paths[0][p], paths[1][p], paths[2][p]);
        for (int m = 0; m < 3; m++) CHECK(paths[m][p] > 0);
    }

    if (open_nvrtc(&cc)) {
        int have_gpu = 0;
        char a[64], err[512];
        if (cc.arch(cc.self, 0, a, sizeof a) == KF_OK) {
            have_gpu = 1;
            snprintf(arch, sizeof arch, "%s", a);
        }
        long nth = sysconf(_SC_NPROCESSORS_ONLN);
        int n_threads = nth < 1 ? 1 : nth > 8 ? 8 : (int)nth;
        pthread_t th[8];
        for (int i = 0; i < n_threads; i++)
            CHECK(pthread_create(&th[i], NULL, compile_worker, NULL) == 0);
        for (int i = 0; i < n_threads; i++) pthread_join(th[i], NULL);
        int n_ok = 0;
        for (int i = 0; i < n_jobs; i++) n_ok += jobs[i].compiled;
        printf("compiled %d of %d for %s (%d threads)\n", n_ok, n_jobs, arch, n_threads);
        CHECK_EQ_INT(n_ok, n_jobs);

        if (have_gpu) {
            kf_cu_device dev;
            kf_cu_context ctx = NULL, dummy;
            int ready = CHECK_EQ_INT(kf_cuda_driver_open(&drv, NULL, err, sizeof err), KF_OK) &&
                        CHECK_EQ_INT(drv.init(0), 0) && CHECK_EQ_INT(drv.device_get(&dev, 0), 0) &&
                        CHECK_EQ_INT(drv.primary_ctx_retain(&ctx, dev), 0) &&
                        CHECK_EQ_INT(drv.ctx_push_current(ctx), 0);
            int n_run = 0, n_good = 0, cur = -1;
            for (int i = 0; ready && i < n_jobs; i++) {
                if (!jobs[i].compiled) continue;
                if (jobs[i].c != cur) { /* the jobs come case by case: one case's data at a time */
                    if (cur >= 0) case_free(&cases[cur]);
                    cur = jobs[i].c;
                    case_data(cur);
                }
                n_run++;
                n_good += run_job(&jobs[i]);
            }
            printf("ran %d kernels on the GPU, %d correct\n", n_run, n_good);
            CHECK_EQ_INT(n_good, n_run);
            if (ready) {
                drv.ctx_pop_current(&dummy);
                drv.primary_ctx_release(dev);
            }
        } else {
            printf("SKIP running: no CUDA device (%s)\n", a);
        }
        cc.destroy(cc.self);
    }

    for (int i = 0; i < n_jobs; i++) {
        free(jobs[i].src);
        free(jobs[i].lj);
        free(jobs[i].blob);
    }
    free(jobs);
    free_cases();
    return test_done(&t0, "templates_cuda_softmax_eltwise");
}
