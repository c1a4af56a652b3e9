/* The CUDA depthwise convolution template (forge/templates/cuda_conv.c): cuda_depthwise_conv2d
 * for aten::_conv_depthwise2d.
 *
 * Without NVRTC: applies() on signatures it must accept and on ones it must refuse (f64, mixed
 * dtypes, output sizes that disagree with torch's conv_output_size, a negative numerator,
 * kernel_size that disagrees with the weight, a weight that is not [C_out, 1, kH, kW], C_out
 * not a multiple of C_in, a bias of the wrong size, a bias both given and None, lists of the
 * wrong length or kind, missing scalars, zero stride / dilation / kernel, negative padding,
 * 3-D and 5-D inputs, empty and 2^31-element tensors, in-place and overlapping outputs, a wrong
 * op), the start hook, and every knob combination rendered on every case, its launch record
 * parsed and checked against the effective values the source states (threads, grid, outputs
 * per thread within the width and the window, input loads exactly as wide as 16 bytes, W's
 * stride and the alignment allow, vector stores exactly where the output allows them, 64-bit
 * offsets exactly where 32 bits could overflow).
 * With NVRTC (no GPU needed): the all-first-values vector, the start vector and a spread of
 * combinations covering every value of every knob, per case, compiled for sm_90 with a clean
 * log.
 * With a GPU (the compiler's arch() answers): each of those kernels run on random inputs with
 * +-0, subnormals (f32), and an infinite weight tap (so a padding tap taken as 0 * inf shows as
 * NaN), outputs poisoned with 0xff bytes, compared with a host reference in eager's order (bias
 * or +0, then fmaf(w, x, acc) over kH then kW, skipping taps outside the input, rounded once):
 * bit for bit, NaN where the reference is NaN (and not the poison), every output written,
 * inputs unchanged. The reference itself is checked first on hand-worked examples (padding
 * taps skipped, the order of the sum, one fused multiply-add).
 *
 * Cases: Qwen 3.5's causal conv1d (bf16 [4, 8192, 1, 1024], weight [8192, 1, 1, 4], padding
 * [0, 3], no bias; run too) and small versions of it (bf16 and f32 with a bias, f16 without),
 * multiplier 2, 3x3 with stride 2 / padding 1 / dilation 2, a channels-last input, a
 * channels-last output, odd sizes (5x3 kernel, stride 2x1, dilation 1x2, multiplier 3), a
 * 2-byte-aligned input, a strided W, stride 2 along W with aligned loads, a row narrower than
 * the loads, a window of more than 64 inputs (taps loaded directly), and a slice whose offsets
 * pass 2^31 (64-bit arithmetic; rendered and compiled only). */
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

#define MAX_CASES 32

/* ---- signatures ---- */

/* _conv_depthwise2d(x, weight [co, 1, kh, kw] contiguous, kernel_size, bias [co] or None,
 * stride, padding, dilation); the output as eager allocates it (contiguous, fresh), or channels
 * last when out_cl */
static kf_job_sig sig_dwconv(kf_job_tensor x, int64_t co, int64_t kh, int64_t kw, int64_t sh,
                             int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
                             int bias, int out_cl)
{
    kf_job_sig s = sig_of("aten::_conv_depthwise2d");
    s.in[s.n_in++] = x;
    s.in[s.n_in++] = sig_tensor(x.dtype, 4, (int64_t[]){co, 1, kh, kw}, 0, 16);
    kf_job_scalar *l = sig_add_scalar(&s, "kernel_size", 'l');
    l->n = 2, l->v[0] = kh, l->v[1] = kw;
    if (bias) s.in[s.n_in++] = sig_vec1(x.dtype, co);
    else sig_add_scalar(&s, "bias", 'n');
    l = sig_add_scalar(&s, "stride", 'l');
    l->n = 2, l->v[0] = sh, l->v[1] = sw;
    l = sig_add_scalar(&s, "padding", 'l');
    l->n = 2, l->v[0] = ph, l->v[1] = pw;
    l = sig_add_scalar(&s, "dilation", 'l');
    l->n = 2, l->v[0] = dh, l->v[1] = dw;
    int64_t oh = (x.sizes[2] + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
    int64_t ow = (x.sizes[3] + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
    s.n_out = 1;
    s.out[0] = sig_tensor(x.dtype, 4, (int64_t[]){x.sizes[0], co, oh, ow}, out_cl, 0);
    return s;
}

/* Qwen's causal conv1d as conv1d hands it on: [n, c, 1, w], kernel 1x4, padding [0, 3] */
static kf_job_sig sig_causal(int dt, int64_t n, int64_t c, int64_t w, int bias)
{
    return sig_dwconv(sig_tensor(dt, 4, (int64_t[]){n, c, 1, w}, 0, 16), c, 1, 4, 1, 1, 0, 3, 1,
                      1, bias, 0);
}

/* ---- the cases ---- */

typedef struct ccase {
    char label[160];
    kf_job_sig sig;
    int norun; /* rendered and compiled only */
} ccase;

static const kf_template *T;
static ccase cases[MAX_CASES];
static int n_cases;

static void add_case(kf_job_sig sig, int norun, const char *note)
{
    if (!CHECK(n_cases < MAX_CASES)) return;
    ccase *c = &cases[n_cases++];
    c->sig = sig;
    c->norun = norun;
    const kf_job_tensor *x = &sig.in[0];
    int p = snprintf(c->label, sizeof c->label, "%s[", dname(x->dtype));
    p = label_sizes(c->label, sizeof c->label, p, x);
    if (p < (int)sizeof c->label) snprintf(c->label + p, sizeof c->label - (size_t)p, "] %s", note);
    check_serves(T, &sig, c->label); /* exactly this nvrtc template serves it */
}

static void make_cases(void)
{
    kf_job_tensor x;
    add_case(sig_causal(KF_BF16, 4, 8192, 1024, 0), 0, "Qwen 3.5 causal conv1d");
    add_case(sig_causal(KF_BF16, 2, 16, 37, 1), 0, "causal conv1d, bias");
    add_case(sig_causal(KF_F32, 2, 8, 50, 1), 0, "causal conv1d, bias");
    add_case(sig_causal(KF_F16, 3, 12, 29, 0), 0, "causal conv1d");
    x = sig_tensor(KF_F32, 4, (int64_t[]){2, 4, 9, 11}, 0, 16);
    add_case(sig_dwconv(x, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0), 0, "multiplier 2, 3x3 p1");
    x = sig_tensor(KF_F16, 4, (int64_t[]){2, 6, 13, 15}, 0, 16);
    add_case(sig_dwconv(x, 6, 3, 3, 2, 2, 1, 1, 2, 2, 1, 0), 0, "3x3 s2 p1 d2");
    x = sig_tensor(KF_BF16, 4, (int64_t[]){2, 16, 10, 12}, 1, 16);
    add_case(sig_dwconv(x, 16, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0), 0, "channels-last input, 3x3 p1");
    x = sig_tensor(KF_F16, 4, (int64_t[]){2, 8, 6, 7}, 0, 16);
    add_case(sig_dwconv(x, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), 0, "channels-last output");
    x = sig_tensor(KF_F32, 4, (int64_t[]){1, 3, 7, 5}, 0, 16);
    add_case(sig_dwconv(x, 9, 5, 3, 2, 1, 2, 1, 1, 2, 1, 0), 0,
             "odd: 5x3 s2x1 p2x1 d1x2, multiplier 3");
    x = sig_tensor(KF_BF16, 4, (int64_t[]){2, 4, 3, 33}, 0, 2);
    add_case(sig_dwconv(x, 4, 1, 4, 1, 1, 0, 3, 1, 1, 0, 0), 0, "input aligned to 2 bytes");
    x = sig_tensor_strided(KF_F16, 4, (int64_t[]){2, 4, 5, 20}, (int64_t[]){800, 200, 40, 2}, 16);
    add_case(sig_dwconv(x, 4, 2, 3, 1, 1, 1, 1, 1, 1, 1, 0), 0, "strided W");
    x = sig_tensor(KF_BF16, 4, (int64_t[]){2, 4, 3, 64}, 0, 16);
    add_case(sig_dwconv(x, 4, 1, 3, 1, 2, 0, 1, 1, 1, 1, 0), 0, "stride 2 along W");
    x = sig_tensor(KF_BF16, 4, (int64_t[]){2, 8, 1, 2}, 0, 16);
    add_case(sig_dwconv(x, 8, 1, 4, 1, 1, 0, 3, 1, 1, 0, 0), 0, "row of 2, padding 3");
    x = sig_tensor(KF_F32, 4, (int64_t[]){1, 2, 3, 100}, 0, 16);
    add_case(sig_dwconv(x, 2, 2, 31, 1, 1, 1, 45, 1, 3, 1, 0), 0, "1x31 d3: taps loaded directly");
    x = sig_tensor_strided(KF_BF16, 4, (int64_t[]){2, 8, 4, 64},
                           (int64_t[]){(int64_t)1 << 31, 256, 64, 1}, 16);
    add_case(sig_dwconv(x, 8, 1, 4, 1, 1, 0, 3, 1, 1, 0, 0), 1, "offsets past 2^31");
}

/* ---- the table, the start, applies() ---- */

static void test_table(void)
{
    T = check_template("cuda_depthwise_conv2d", 4, MAX_KNOBS, 1);
}

static int knob_value(const int *idx, const char *name)
{
    for (int k = 0; k < T->n_knobs; k++)
        if (!strcmp(T->knobs[k].name, name)) return T->knobs[k].values[idx[k]];
    return -1;
}

static void test_start(void)
{
    kf_job_sig s = sig_causal(KF_BF16, 4, 8192, 1024, 0);
    int idx[MAX_KNOBS] = {0};
    T->start(&s, idx);
    for (int k = 0; k < T->n_knobs; k++) CHECK(idx[k] >= 0 && idx[k] < T->knobs[k].n_values);
    /* Qwen: 16-byte output vectors, 256 threads ... */
    CHECK_EQ_INT(knob_value(idx, "vec"), 8);
    CHECK_EQ_INT(knob_value(idx, "threads"), 256);
    /* ... and so they are in the kernel: vector stores on the output's grid, 16-byte loads */
    char *src = NULL, *lj = NULL, err[256];
    if (CHECK_EQ_INT(T->render(&s, idx, &src, &lj, err, sizeof err), KF_OK)) {
        CHECK_EQ_INT(src_define(src, "KF_VEC", 0), 8);
        CHECK_EQ_INT(src_define(src, "KF_LV", 0), 8);
        CHECK_EQ_INT(src_define(src, "KF_VST", 0), 1);
        CHECK_EQ_INT(src_define(src, "KF_DIRECT", 1), 0);
        CHECK_EQ_INT(src_define(src, "KF_G", 0), 130); /* ceil((1027 + 7) / 8) */
        CHECK(strstr(src, "typedef int kf_idx;") != NULL);
    }
    free(src), free(lj);
    memset(idx, 0, sizeof idx);
    s = sig_causal(KF_F32, 2, 8, 50, 1);
    T->start(&s, idx);
    CHECK_EQ_INT(knob_value(idx, "vec"), 4);
    for (int k = 0; k < T->n_knobs; k++) CHECK(idx[k] >= 0 && idx[k] < T->knobs[k].n_values);
}

static void test_refusals(void)
{
    kf_job_sig s = sig_causal(KF_BF16, 2, 16, 37, 1), r;
    CHECK_EQ_INT(T->applies(&s), 1);
    /* dtypes: f64, a weight / bias / output of another dtype */
    r = s;
    r.in[0].dtype = r.in[1].dtype = r.in[2].dtype = r.out[0].dtype = KF_F64;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.in[1].dtype = KF_F32;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.in[2].dtype = KF_F32;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.out[0].dtype = KF_F32;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.in[0].dtype = r.in[1].dtype = r.in[2].dtype = r.out[0].dtype = KF_I32;
    CHECK_EQ_INT(T->applies(&r), 0);
    /* output sizes that disagree with torch's */
    for (int d = 0; d < 4; d++) {
        r = s;
        r.out[0].sizes[d] += 1;
        if (!CHECK_EQ_INT(T->applies(&r), 0)) printf("     output dim %d\n", d);
    }
    /* a negative numerator (torch's truncating division would say 1): W 2, kernel 4, no pad */
    r = sig_dwconv(sig_tensor(KF_F32, 4, (int64_t[]){1, 2, 1, 2}, 0, 16), 2, 1, 4, 1, 1, 0, 0,
                   1, 1, 0, 0);
    r.out[0].sizes[3] = 1;
    CHECK_EQ_INT(T->applies(&r), 0);
    /* kernel_size against the weight; the weight's shape; C_out a multiple of C_in */
    r = s;
    scalar_mut(&r, "kernel_size")->v[1] = 3;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.in[1].sizes[1] = 2;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = sig_dwconv(sig_tensor(KF_F32, 4, (int64_t[]){2, 4, 5, 5}, 0, 16), 6, 3, 3, 1, 1, 1, 1, 1,
                   1, 0, 0);
    CHECK_EQ_INT(T->applies(&r), 0); /* 6 % 4 */
    r = sig_dwconv(sig_tensor(KF_F32, 4, (int64_t[]){2, 4, 5, 5}, 0, 16), 12, 3, 3, 1, 1, 1, 1,
                   1, 1, 0, 0);
    CHECK_EQ_INT(T->applies(&r), 1); /* multiplier 3 */
    r = sig_dwconv(sig_tensor(KF_F32, 4, (int64_t[]){2, 4, 5, 5}, 0, 16), 2, 3, 3, 1, 1, 1, 1, 1,
                   1, 0, 0);
    CHECK_EQ_INT(T->applies(&r), 0); /* fewer outputs than inputs */
    /* the bias: its size, its rank, given and None at once, absent without None */
    r = s;
    r.in[2].sizes[0] = 15;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.in[2] = sig_tensor(KF_BF16, 2, (int64_t[]){16, 1}, 0, 16);
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    sig_add_scalar(&r, "bias", 'n');
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.n_in = 2;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = sig_causal(KF_BF16, 2, 16, 37, 0);
    CHECK_EQ_INT(T->applies(&r), 1);
    scalar_mut(&r, "bias")->kind = 'i';
    CHECK_EQ_INT(T->applies(&r), 0);
    r = sig_causal(KF_F32, 2, 1, 37, 1); /* one channel: a 0-dim bias is eager's too */
    CHECK_EQ_INT(T->applies(&r), 1);
    r.in[2] = sig_tensor(KF_F32, 0, NULL, 0, 16);
    CHECK_EQ_INT(T->applies(&r), 1);
    /* zero stride, dilation, kernel; negative padding */
    r = s;
    scalar_mut(&r, "stride")->v[0] = 0;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    scalar_mut(&r, "dilation")->v[1] = 0;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    scalar_mut(&r, "kernel_size")->v[0] = 0;
    r.in[1].sizes[2] = 0;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = sig_dwconv(sig_tensor(KF_F32, 4, (int64_t[]){1, 2, 6, 6}, 0, 16), 2, 3, 3, 1, 1, -1, 1,
                   1, 1, 0, 0);
    CHECK_EQ_INT(T->applies(&r), 0);
    /* lists of the wrong length or kind; missing scalars */
    static const char *const names[] = {"kernel_size", "stride", "padding", "dilation"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        r = s;
        scalar_mut(&r, names[i])->n = 1;
        if (!CHECK_EQ_INT(T->applies(&r), 0)) printf("     one-int %s\n", names[i]);
        r = s;
        scalar_mut(&r, names[i])->n = 3;
        CHECK_EQ_INT(T->applies(&r), 0);
        r = s;
        scalar_mut(&r, names[i])->kind = 'i';
        CHECK_EQ_INT(T->applies(&r), 0);
        r = s;
        snprintf(scalar_mut(&r, names[i])->name, sizeof r.scalars[0].name, "other");
        if (!CHECK_EQ_INT(T->applies(&r), 0)) printf("     missing %s\n", names[i]);
    }
    /* 3-D and 5-D inputs; an empty batch; 2^31 - 1 elements or more (eager's 32-bit check) */
    r = s;
    r.in[0].ndim = 3;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.in[0] = sig_tensor(KF_BF16, 5, (int64_t[]){2, 16, 1, 1, 37}, 0, 16);
    CHECK_EQ_INT(T->applies(&r), 0);
    r = sig_causal(KF_BF16, 0, 16, 37, 0);
    CHECK_EQ_INT(T->applies(&r), 0);
    r = sig_causal(KF_BF16, 64, 8192, 4096, 0);
    CHECK_EQ_INT(T->applies(&r), 0);
    r = sig_causal(KF_BF16, 63, 8192, 4096, 0); /* just under */
    CHECK_EQ_INT(T->applies(&r), 1);
    /* outputs: in place, two of them, overlapping (a zero or shared stride); a wrong op */
    r = s;
    r.out_alias[0] = 1;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.n_out = 2;
    r.out[1] = r.out[0];
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.out[0].strides[3] = 0;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.out[0].strides[1] = r.out[0].strides[3]; /* channels onto columns */
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    snprintf(r.op, sizeof r.op, "aten::convolution");
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.n_in = 4;
    r.in[3] = r.in[2];
    CHECK_EQ_INT(T->applies(&r), 0);
    /* any input layout is fine (eager copies it contiguous), a transposed output too */
    r = s;
    r.in[0] = sig_tensor(KF_BF16, 4, s.in[0].sizes, 1, 16);
    CHECK_EQ_INT(T->applies(&r), 1);
    r = s;
    r.in[1].strides[0] = 0; /* an expanded weight */
    CHECK_EQ_INT(T->applies(&r), 1);
    r = s;
    r.out[0] = sig_tensor(KF_BF16, 4, s.out[0].sizes, 1, 0);
    CHECK_EQ_INT(T->applies(&r), 1);

    /* render refuses what applies() refuses, and bad knob indices */
    char *src = (char *)1, *lj = (char *)1, err[256];
    int idx[MAX_KNOBS] = {0};
    r = s;
    r.in[0].dtype = r.in[1].dtype = r.in[2].dtype = r.out[0].dtype = KF_F64;
    CHECK_EQ_INT(T->render(&r, idx, &src, &lj, err, sizeof err), KF_ERR_UNSUPPORTED);
    CHECK(src == NULL && lj == NULL);
    idx[1] = T->knobs[1].n_values;
    CHECK_EQ_INT(T->render(&s, idx, &src, &lj, err, sizeof err), KF_ERR_INVALID);
    CHECK_CONTAINS(err, T->knobs[1].name);
    CHECK(src == NULL && lj == NULL);
}

/* ---- every knob combination renders a consistent candidate ---- */

/* largest element offset + 1 of a tensor */
static long long reach_of(const kf_job_tensor *t)
{
    long long r = 1;
    for (int d = 0; d < t->ndim; d++) r += (t->sizes[d] - 1) * t->strides[d];
    return r;
}

static int align_fits(const kf_job_tensor *t, int fresh, int bytes)
{
    int need = bytes > 16 ? 16 : bytes;
    int al = t->align > 0 ? t->align : fresh ? 16 : esize(t->dtype);
    if (al > 16) al = 16;
    return need <= al && al % need == 0;
}

static long n_rendered;

/* the effective values a rendered source states, against the knobs and the signature */
static int check_effective(const kf_job_sig *s, const int *idx, const char *src,
                           const kf_launch *l)
{
    const kf_job_tensor *x = &s->in[0], *y = &s->out[0];
    const kf_job_scalar *st = kf_job_scalar_find(s, "stride");
    const kf_job_scalar *dl = kf_job_scalar_find(s, "dilation");
    long long kw = s->in[1].sizes[3], sw = st->v[1], dw = dl->v[1];
    long long ow = y->sizes[3], es = esize(x->dtype);
    long long nt = src_define(src, "KF_NT", 0), vec = src_define(src, "KF_VEC", 0);
    long long lv = src_define(src, "KF_LV", 0), vst = src_define(src, "KF_VST", -1);
    long long direct = src_define(src, "KF_DIRECT", -1), gs = src_define(src, "KF_GS", -1);
    int ok = nt == knob_value(idx, "threads") && l->block[0] == (unsigned)nt &&
             l->block[1] == 1 && l->block[2] == 1 && l->smem == 0;
    /* outputs per thread: a power of two within the knob, the width and a 64-input window */
    long long span = (vec - 1) * sw + (kw - 1) * dw + 1;
    ok = ok && vec >= 1 && (vec & (vec - 1)) == 0 && vec <= knob_value(idx, "vec") &&
         (vec == 1 || (vec <= ow && span <= 64));
    ok = ok && direct == (vec == 1 && span > 64);
    /* input loads: the widest of 16 bytes the alignment allows, where W is contiguous and a
     * window holds more than one input */
    long long want_lv = 16 / es;
    while (want_lv > 1 && !align_fits(x, 0, (int)(want_lv * es))) want_lv /= 2;
    if (direct || span == 1 || (x->strides[3] != 1 && x->sizes[3] > 1)) want_lv = 1;
    ok = ok && lv == want_lv;
    /* vector stores exactly where the output allows them */
    ok = ok && vst == (vec > 1 && y->strides[3] == 1 && align_fits(y, 1, (int)(vec * es)));
    long long g = vst ? (ow + 2 * vec - 2) / vec : (ow + vec - 1) / vec;
    long long items = y->sizes[0] * y->sizes[1] * y->sizes[2] * g;
    ok = ok && src_define(src, "KF_G", 0) == g && src_define(src, "KF_ITEMS", 0) == items;
    ok = ok && src_define(src, "KF_HAS_BIAS", -1) == (s->n_in == 3);
    /* 64-bit offsets exactly where 32 bits could overflow */
    long long reach = reach_of(x);
    if (reach_of(y) > reach) reach = reach_of(y);
    if (reach_of(&s->in[1]) > reach) reach = reach_of(&s->in[1]);
    int wide = strstr(src, "typedef long long kf_idx;") != NULL;
    ok = ok && wide == (reach >= (1ll << 30) || items >= (1ll << 30));
    long long blocks = (items + nt - 1) / nt;
    ok = ok && l->grid[1] == 1 && l->grid[2] == 1;
    if (knob_value(idx, "grid") == 0) {
        ok = ok && gs == 0 && l->grid[0] == (unsigned)blocks;
    } else {
        long long cap = (long long)knob_value(idx, "grid") * 132 * (2048 / nt);
        ok = ok && gs == 1 && l->grid[0] == (unsigned)(blocks < cap ? blocks : cap);
    }
    return ok;
}

static void check_render(const ccase *c, const int *idx, char **src_out, kf_launch *l_out)
{
    char *src, *lj;
    const kf_job_sig *s = &c->sig;
    kf_launch l;
    int ok = begin_render(T, s, idx, c->label, "kf_kernel(KF_PARAMS)", &src, &lj, &l);
    if (ok < 0) return;
    n_rendered++;
    char cty[40], mty[40];
    snprintf(cty, sizeof cty, "const %s*", cuda_type(s->in[0].dtype));
    snprintf(mty, sizeof mty, "%s", cty + 6);
    int n_args = s->n_in + 1;
    ok = ok && !strcmp(l.entry, "kf_kernel") && l.n_args == n_args;
    for (int a = 0; ok && a < n_args; a++)
        ok = !strcmp(l.arg_types[a], a < s->n_in ? cty : mty);
    ok = ok && check_effective(s, idx, src, &l);
    if (!CHECK(ok)) {
        print_knobs(T, c->label, idx);
        printf("     record %s (vec %lld lv %lld vst %lld)\n", lj, src_define(src, "KF_VEC", 0),
               src_define(src, "KF_LV", 0), src_define(src, "KF_VST", -1));
    }
    keep_render(ok, src, lj, &l, src_out, l_out);
}

KF_DEFINE_TEST_RENDER_ALL()

/* ---- compile a spread of combinations with NVRTC (cuda_template_test.h) ---- */

KF_DEFINE_TEST_JOBS()

/* ---- the reference: eager's loops ---- */

static uint32_t get_bits(const void *p, int dt, int64_t i)
{
    return dt == KF_F32 ? ((const uint32_t *)p)[i] : ((const uint16_t *)p)[i];
}

/* the float result rounded to dt, as bits (NaNs in the host's spelling) */
static uint32_t round_bits(int dt, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return dt == KF_F32 ? u : dt == KF_BF16 ? f_to_bf16(v) : f_to_f16(v);
}

static int bits_nan(int dt, uint32_t b)
{
    if (dt == KF_F32) return (b & 0x7fffffffu) > 0x7f800000u;
    return dt == KF_BF16 ? (b & 0x7fffu) > 0x7f80u : (b & 0x7fffu) > 0x7c00u;
}

typedef struct geom {
    int64_t n, ci, h, w, co, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
    int bias;
} geom;

static void geom_of(const kf_job_sig *s, geom *g)
{
    const int64_t *st = kf_job_scalar_find(s, "stride")->v;
    const int64_t *pd = kf_job_scalar_find(s, "padding")->v;
    const int64_t *dl = kf_job_scalar_find(s, "dilation")->v;
    g->n = s->in[0].sizes[0], g->ci = s->in[0].sizes[1];
    g->h = s->in[0].sizes[2], g->w = s->in[0].sizes[3];
    g->co = s->in[1].sizes[0], g->kh = s->in[1].sizes[2], g->kw = s->in[1].sizes[3];
    g->oh = s->out[0].sizes[2], g->ow = s->out[0].sizes[3];
    g->sh = st[0], g->sw = st[1], g->ph = pd[0], g->pw = pd[1], g->dh = dl[0], g->dw = dl[1];
    g->bias = s->n_in == 3;
}

static int64_t offset4(const kf_job_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return a * t->strides[0] + b * t->strides[1] + c * t->strides[2] + d * t->strides[3];
}

/* expected bits at the output's memory offsets: bias or +0, then fmaf(w, x, acc) over kH then
 * kW, skipping taps outside the input (conv_depthwise2d_forward_kernel), rounded once */
static void reference(const kf_job_sig *s, const void *x, const void *w, const void *b,
                      uint32_t *out)
{
    geom g;
    geom_of(s, &g);
    int dt = s->in[0].dtype;
    const kf_job_tensor *tx = &s->in[0], *tw = &s->in[1], *ty = &s->out[0];
    int64_t mult = g.co / g.ci, bs = g.bias && s->in[2].ndim ? s->in[2].strides[0] : 0;
    for (int64_t n = 0; n < g.n; n++)
        for (int64_t c = 0; c < g.co; c++)
            for (int64_t oh = 0; oh < g.oh; oh++)
                for (int64_t ow = 0; ow < g.ow; ow++) {
                    float acc = g.bias ? (float)get(b, dt, c * bs) : 0.0f;
                    for (int64_t i = 0; i < g.kh; i++) {
                        int64_t h = oh * g.sh - g.ph + i * g.dh;
                        if (h < 0 || h >= g.h) continue;
                        for (int64_t k = 0; k < g.kw; k++) {
                            int64_t iw = ow * g.sw - g.pw + k * g.dw;
                            if (iw < 0 || iw >= g.w) continue;
                            float wv = (float)get(w, dt, offset4(tw, c, 0, i, k));
                            float xv = (float)get(x, dt, offset4(tx, n, c / mult, h, iw));
                            acc = fmaf(wv, xv, acc);
                        }
                    }
                    out[offset4(ty, n, c, oh, ow)] = round_bits(dt, acc);
                }
}

/* The reference on hand-worked examples: padding taps skipped (an infinite weight on them
 * leaves the output finite), the sum in eager's order, one fused multiply-add per tap. */
static void test_reference(void)
{
    kf_job_sig s = sig_dwconv(sig_tensor(KF_F32, 4, (int64_t[]){1, 1, 1, 3}, 0, 16), 1, 1, 2, 1,
                              1, 0, 1, 1, 1, 1, 0);
    CHECK_EQ_INT(s.out[0].sizes[3], 4);
    float x[3] = {1, 2, 3}, w[2] = {10, 100}, b[1] = {0};
    uint32_t out[4];
    reference(&s, x, w, b, out);
    static const float want[4] = {100, 210, 320, 30};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(out[i], round_bits(KF_F32, want[i]));
    w[0] = INFINITY; /* the tap of ow 0 that lies in the padding */
    reference(&s, x, w, b, out);
    CHECK_EQ_INT(out[0], round_bits(KF_F32, 100));
    CHECK_EQ_INT(out[3], round_bits(KF_F32, INFINITY));
    /* order: bias 1, then 2^24 (1 + 2^24 rounds to 2^24), then 1 again: 2^24, not 2^24 + 2 */
    kf_job_sig o = sig_dwconv(sig_tensor(KF_F32, 4, (int64_t[]){1, 1, 1, 2}, 0, 16), 1, 1, 2, 1,
                              1, 0, 0, 1, 1, 1, 0);
    float xo[2] = {16777216.0f, 1}, wo[2] = {1, 1}, bo[1] = {1};
    reference(&o, xo, wo, bo, out);
    CHECK_EQ_INT(out[0], round_bits(KF_F32, 16777216.0f));
    /* fused: (1 + 2^-12)^2 - 1 is 2^-11 + 2^-24 in one fma, 2^-11 with a rounded product */
    kf_job_sig f = sig_dwconv(sig_tensor(KF_F32, 4, (int64_t[]){1, 1, 1, 1}, 0, 16), 1, 1, 1, 1,
                              1, 0, 0, 1, 1, 1, 0);
    float xf[1] = {1 + 0x1p-12f}, wf[1] = {1 + 0x1p-12f}, bf[1] = {-1};
    reference(&f, xf, wf, bf, out);
    CHECK_EQ_INT(out[0], round_bits(KF_F32, 0x1p-11f + 0x1p-24f));
}

/* ---- running them ---- */

/* Random inputs of case c in x (the whole reach), weight and bias: values in [-2, 2] rounded to
 * the dtype, +-0, subnormals (f32), and weight tap 0 of channel 1 infinite. */
static void make_inputs(const kf_job_sig *s, void *x, int64_t nx, void *w, int64_t nw, void *b,
                        int64_t nb)
{
    int dt = s->in[0].dtype;
    for (int64_t i = 0; i < nx; i++) {
        double u = urand(), v = urand() * 4 - 2;
        if (u < 0.03) v = urand() < 0.5 ? 0.0 : -0.0;
        else if (u < 0.05 && dt == KF_F32) v = (urand() - 0.5) * 1e-39;
        put(x, dt, i, v);
    }
    for (int64_t i = 0; i < nw; i++) put(w, dt, i, urand() < 0.05 ? -0.0 : urand() * 2 - 1);
    for (int64_t i = 0; i < nb; i++) put(b, dt, i, urand() * 2 - 1);
    if (s->in[1].sizes[0] > 1) put(w, dt, s->in[1].strides[0], INFINITY);
}

typedef struct gcase {
    int ok, n_args;
    size_t bytes[4];
    unsigned long long base[4], dev[4];
    void *host[4];    /* x, weight, bias, (unused) */
    uint32_t *expect; /* at the output's offsets */
    int64_t ny;
} gcase;

static void gcase_make(gpu *G, const ccase *c, gcase *g)
{
    const kf_job_sig *s = &c->sig;
    int dt = s->in[0].dtype, es = esize(dt);
    memset(g, 0, sizeof *g);
    g->n_args = s->n_in + 1;
    int64_t nx = reach_of(&s->in[0]), nw = reach_of(&s->in[1]);
    int64_t nb = s->n_in == 3 ? reach_of(&s->in[2]) : 0;
    g->ny = kf_job_tensor_numel(&s->out[0]);
    g->bytes[0] = (size_t)nx * es, g->bytes[1] = (size_t)nw * es, g->bytes[2] = (size_t)nb * es;
    for (int i = 0; i < 3; i++) g->host[i] = calloc(1, g->bytes[i] + 4);
    g->expect = calloc((size_t)g->ny, sizeof *g->expect);
    make_inputs(s, g->host[0], nx, g->host[1], nw, g->host[2], nb);
    reference(s, g->host[0], g->host[1], g->host[2], g->expect);
    size_t by = (size_t)g->ny * es;
    size_t alloc[4] = {g->bytes[0] + 32, g->bytes[1] + 16, g->bytes[2] + 16, by};
    int ok = 1;
    for (int i = 0; i < 4; i++) ok = ok && CHECK_EQ_INT(G->d.mem_alloc(&g->base[i], alloc[i]), 0);
    if (ok) {
        int al = s->in[0].align;
        g->dev[0] = g->base[0] + (al > 0 && al < 16 ? (unsigned)al : 0u); /* a misaligned view */
        g->dev[1] = g->base[1], g->dev[2] = g->base[2], g->dev[3] = g->base[3];
        for (int i = 0; i < 3 && ok; i++)
            if (g->bytes[i])
                ok = CHECK_EQ_INT(G->d.memcpy_htod(g->dev[i], g->host[i], g->bytes[i]), 0);
    }
    g->ok = ok;
}

static void gcase_free(gpu *G, gcase *g)
{
    for (int i = 0; i < 4; i++)
        if (g->base[i]) G->d.mem_free(g->base[i]);
    for (int i = 0; i < 3; i++) free(g->host[i]);
    free(g->expect);
}

/* the output against the reference (every element written), the inputs unchanged */
static long compare(const ccase *c, const gcase *g, const void *gy, void *const *gin,
                    const char *name)
{
    int dt = c->sig.in[0].dtype;
    uint32_t poison = dt == KF_F32 ? 0xffffffffu : 0xffffu;
    long bad = 0;
    for (int64_t e = 0; e < g->ny; e++) {
        uint32_t v = get_bits(gy, dt, e), r = g->expect[e];
        int ok = bits_nan(dt, r) ? bits_nan(dt, v) && v != poison : v == r;
        if (!ok && bad++ == 0)
            printf("     %s: out[%lld] = 0x%x, reference 0x%x\n", name, (long long)e, v, r);
    }
    static const char *const what[] = {"self", "weight", "bias"};
    for (int i = 0; i < 3; i++)
        if (g->bytes[i] && memcmp(gin[i], g->host[i], g->bytes[i])) {
            printf("     %s: %s changed\n", name, what[i]);
            bad++;
        }
    return bad;
}

/* one kernel of a case on its prepared buffers; 1 when right */
static int gpu_run(gpu *G, kernel_job *j, const gcase *g)
{
    const ccase *c = &cases[j->c];
    char name[400], err[512];
    kernel_job_name(j, name, sizeof name);
    kf_compiled *k = NULL;
    if (!CHECK_EQ_INT(nv.load(nv.self, j->blob, j->len, &j->l, 0, &k, err, sizeof err), KF_OK)) {
        printf("     %s: load: %s\n", name, err);
        return 0;
    }
    size_t by = (size_t)g->ny * esize(c->sig.in[0].dtype);
    void *ptrs[4];
    int a = 0;
    for (int i = 0; i < 3; i++)
        if (i < 2 || c->sig.n_in == 3) ptrs[a++] = (void *)(uintptr_t)g->dev[i];
    ptrs[a++] = (void *)(uintptr_t)g->dev[3];
    CHECK_EQ_INT(G->d.memset_d8(g->dev[3], 0xff, by), 0);
    int good = 0;
    if (CHECK_EQ_INT(nv.launch(nv.self, k, ptrs, a, NULL), 0) &&
        CHECK_EQ_INT(G->d.ctx_synchronize(), 0)) {
        void *gy = malloc(by), *gin[3] = {NULL, NULL, NULL};
        CHECK_EQ_INT(G->d.memcpy_dtoh(gy, g->dev[3], by), 0);
        for (int i = 0; i < 3; i++) {
            if (!g->bytes[i]) continue;
            gin[i] = malloc(g->bytes[i]);
            CHECK_EQ_INT(G->d.memcpy_dtoh(gin[i], g->dev[i], g->bytes[i]), 0);
        }
        good = CHECK_EQ_INT(compare(c, g, gy, gin, name), 0);
        free(gy);
        for (int i = 0; i < 3; i++) free(gin[i]);
    }
    nv.unload(nv.self, k);
    return good;
}

KF_DEFINE_TEST_GPU(!cases[ci].norun)

int main(void)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rng_state = 0x6477636fu;
    test_table();
    if (!T) return check_done("templates_cuda_conv");
    test_start();
    test_refusals();
    test_reference();
    make_cases();
    test_render_all();
    nvrtc_levels(&nv, make_jobs, jobs, &n_jobs, test_gpu);
    free_jobs(jobs, n_jobs);
    return test_done(&t0, "templates_cuda_conv");
}
