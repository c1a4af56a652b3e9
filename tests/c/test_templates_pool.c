/* The pooling templates for aten::max_pool2d_with_indices: cuda_max_pool2d
 * (forge/templates/cuda_pool.c) and host_max_pool2d (host_pool.c), which read the signature
 * alike (pool_shape.c).
 *
 * Host: every case small enough, each omp knob value, compiled with the host backend and run on
 * the inputs below against the reference in eager's CPU semantics (the start index of both of its
 * kernels is the first in-range position; f16 / bf16 NaNs stored back as torch converts them, the
 * canonical quiet NaN): values bit for bit, indices exactly, every output written.
 *
 * Without NVRTC: applies() on signatures it must accept and on ones it must refuse (f64, int32
 * indices, output sizes that disagree with torch's formula, ceil mode's sizes in floor mode,
 * padding beyond half the effective kernel, zero stride, non-dense and mixed layouts, 3 and 5
 * dims, missing or malformed scalars, in-place outputs), the start hook, and every knob
 * combination rendered on every case, its launch record parsed and checked against the effective
 * values the source states (threads, grid, vector width within C and the alignment, outputs per
 * thread, eager's kernel).
 * With NVRTC (no GPU needed): the all-first-values vector, the start vector and a spread of
 * combinations covering every value of every knob, per case, compiled for sm_90 with a clean log.
 * With a GPU (the compiler's arch() answers): each of those kernels run on inputs with NaNs
 * (several payloads), -inf, +-0, ties (values from a small set) and whole -inf regions, outputs
 * poisoned with 0xff bytes, compared with a reference in eager's semantics (scan order, first
 * max wins, NaN wins and the last NaN, the start index of the NCHW and NHWC kernels): values bit
 * for bit, indices exactly, every output element written, inputs unchanged. The reference
 * itself is checked first on a hand-worked 3x4 example (ties, NaNs, -inf windows).
 *
 * Cases: NCHW and channels last, f32 / f16 / bf16, odd sizes (7x9, 13x13, 11x9), kernel 2
 * stride 2, kernel 3 stride 1 padding 1, dilation 2, ceil mode with a partial last window,
 * windows wholly in the padding (dilation 3), a 3-D input with an empty stride, C = 1 channels
 * last (torch's heuristic picks the NHWC kernel), 2-byte alignment (bf16), and ResNet-50's stem
 * (f16 [64, 64, 112, 112] channels last) and a batch of 2048 of it (offsets past 2^31, 64-bit
 * arithmetic): rendered and compiled, too big for the host reference. */
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
#include "compile/source_check.h"
#include "forge/templates/template.h"

#define MAX_CASES 32

/* ---- the cases ---- */

typedef struct pcase {
    char label[160];
    kf_job_sig sig;
    int nhwc;  /* eager runs its NHWC kernel (index starts at 0) */
    int norun; /* too big for the GPU level's host reference */
} pcase;

static const kf_template *T;
static pcase cases[MAX_CASES];
static int n_cases;

static void add_case(kf_job_sig sig, int nhwc, int norun, const char *note)
{
    if (!CHECK(n_cases < MAX_CASES)) return;
    pcase *c = &cases[n_cases++];
    c->sig = sig;
    c->nhwc = nhwc;
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
    x = sig_tensor(KF_F32, SZ(2, 3, 7, 9), 0, 16);
    add_case(sig_max_pool2d(x, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0), 0, 0, "NCHW 7x9 k3 s2 p1");
    x = sig_tensor(KF_F16, SZ(2, 16, 13, 13), 1, 16);
    add_case(sig_max_pool2d(x, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1), 1, 0, "channels last 13x13 k3 s2 p1");
    x = sig_tensor(KF_BF16, SZ(2, 24, 8, 10), 1, 2);
    add_case(sig_max_pool2d(x, 2, 2, 2, 2, 0, 0, 1, 1, 0, 1), 1, 0,
             "channels last k2 s2, align 2");
    x = sig_tensor(KF_F16, SZ(2, 4, 13, 13), 0, 16);
    add_case(sig_max_pool2d(x, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0), 0, 0, "NCHW k3 s1 p1");
    x = sig_tensor(KF_F32, SZ(2, 12, 11, 9), 1, 16);
    add_case(sig_max_pool2d(x, 3, 3, 1, 1, 2, 2, 2, 2, 0, 1), 1, 0,
             "channels last 11x9 k3 s1 p2 dilation 2");
    x = sig_tensor(KF_BF16, SZ(1, 3, 10, 10), 0, 16);
    add_case(sig_max_pool2d(x, 3, 3, 2, 2, 0, 0, 1, 1, 1, 0), 0, 0,
             "NCHW ceil mode, partial last window");
    x = sig_tensor(KF_F16, SZ(2, 8, 9, 9), 1, 16);
    add_case(sig_max_pool2d(x, 2, 2, 2, 2, 0, 0, 1, 1, 1, 1), 1, 0,
             "channels last ceil mode, partial last window");
    x = sig_tensor(KF_F32, SZ(2, 32, 12, 12), 1, 16);
    add_case(sig_max_pool2d(x, 3, 2, 2, 1, 1, 0, 2, 1, 1, 1), 1, 0,
             "channels last k3x2 s2x1 p1x0 dilation 2x1 ceil mode");
    x = sig_tensor(KF_F32, SZ(1, 2, 2, 5), 0, 16);
    add_case(sig_max_pool2d(x, 2, 2, 1, 1, 1, 1, 3, 3, 0, 0), 0, 0,
             "NCHW dilation 3: windows wholly in the padding");
    x = sig_tensor(KF_BF16, SZ(1, 8, 2, 5), 1, 16);
    add_case(sig_max_pool2d(x, 2, 2, 1, 1, 1, 1, 3, 3, 0, 1), 1, 0,
             "channels last dilation 3: windows wholly in the padding");
    x = sig_tensor(KF_F32, SZ(5, 7, 7), 0, 16);
    add_case(sig_max_pool2d(x, 2, 2, 0, 0, 0, 0, 1, 1, 0, 0), 0, 0, "3-D, stride empty");
    x = sig_tensor(KF_F16, SZ(2, 1, 6, 7), 1, 16);
    add_case(sig_max_pool2d(x, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1), 1, 0,
             "C = 1 channels last: the NHWC kernel");
    x = sig_tensor(KF_F16, SZ(3, 40, 9, 9), 1, 16);
    add_case(sig_max_pool2d(x, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1), 1, 0, "channels last C 40");
    x = sig_tensor(KF_F16, SZ(64, 64, 112, 112), 1, 16);
    add_case(sig_max_pool2d(x, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1), 1, 1, "ResNet-50 stem");
    x = sig_tensor(KF_BF16, SZ(2048, 64, 112, 112), 1, 16);
    add_case(sig_max_pool2d(x, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1), 1, 1, "64-bit offsets");
}

/* ---- the table, the start, applies() ---- */

static void test_table(void)
{
    T = check_template("cuda_max_pool2d", 3, MAX_KNOBS, 1);
}

static int knob_value(const int *idx, const char *name)
{
    for (int k = 0; k < T->n_knobs; k++)
        if (!strcmp(T->knobs[k].name, name)) return T->knobs[k].values[idx[k]];
    return -1;
}

static void test_start(void)
{
    kf_job_sig s = sig_max_pool2d(sig_tensor(KF_F16, SZ(64, 64, 112, 112), 1, 16), 3, 3, 2, 2, 1,
                                  1, 1, 1, 0, 1);
    int idx[MAX_KNOBS] = {0};
    T->start(&s, idx);
    for (int k = 0; k < T->n_knobs; k++) CHECK(idx[k] >= 0 && idx[k] < T->knobs[k].n_values);
    /* the stem: 16-byte vectors along C, 256 threads */
    CHECK_EQ_INT(knob_value(idx, "vec"), 8);
    CHECK_EQ_INT(knob_value(idx, "threads"), 256);
    memset(idx, 0, sizeof idx);
    s = sig_max_pool2d(sig_tensor(KF_F32, SZ(2, 8, 9, 9), 0, 16), 3, 3, 2, 2, 1, 1, 1, 1, 0, 0);
    T->start(&s, idx);
    for (int k = 0; k < T->n_knobs; k++) CHECK(idx[k] >= 0 && idx[k] < T->knobs[k].n_values);
}

static void test_refusals(void)
{
    kf_job_tensor x = sig_tensor(KF_F16, SZ(2, 8, 10, 10), 1, 16);
    kf_job_sig s = sig_max_pool2d(x, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1), r;
    CHECK_EQ_INT(T->applies(&s), 1);
    /* dtypes */
    r = s;
    r.in[0].dtype = r.out[0].dtype = KF_F64;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.out[0].dtype = KF_F32; /* values in the input's dtype */
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.out[1].dtype = KF_I32; /* int64 indices */
    CHECK_EQ_INT(T->applies(&r), 0);
    /* output sizes that disagree with torch's */
    r = s;
    r.out[0].sizes[2] = r.out[1].sizes[2] = 6;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.out[1].sizes[3] = 4;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.out[0].sizes[1] = 7;
    CHECK_EQ_INT(T->applies(&r), 0);
    /* ceil mode's sizes: 10 rows, k2 s2 p0 floor 5 ... k3 s2 p0: floor 4, ceil 5 */
    kf_job_sig c = sig_max_pool2d(sig_tensor(KF_F32, SZ(1, 2, 10, 10), 0, 16), 3, 3, 2, 2, 0, 0,
                                  1, 1, 1, 0);
    CHECK_EQ_INT(c.out[0].sizes[2], 5);
    CHECK_EQ_INT(T->applies(&c), 1);
    scalar_mut(&c, "ceil_mode")->i = 0; /* floor mode: 4, not 5 */
    CHECK_EQ_INT(T->applies(&c), 0);
    /* ceil mode never starts a window in the right padding: 5 rows, k2 s2 p1 -> 3 not 4 */
    c = sig_max_pool2d(sig_tensor(KF_F32, SZ(1, 2, 5, 5), 0, 16), 2, 2, 2, 2, 1, 1, 1, 1, 1, 0);
    CHECK_EQ_INT(c.out[0].sizes[2], 3);
    CHECK_EQ_INT(T->applies(&c), 1);
    c.out[0].sizes[2] = c.out[1].sizes[2] = 4;
    c.out[0] = sig_tensor(KF_F32, 4, c.out[0].sizes, 0, 0);
    c.out[1] = sig_tensor(KF_I64, 4, c.out[1].sizes, 0, 0);
    CHECK_EQ_INT(T->applies(&c), 0);
    /* padding beyond half the effective kernel; negative padding; zero stride, kernel,
     * dilation */
    r = sig_max_pool2d(x, 3, 3, 2, 2, 2, 1, 1, 1, 0, 1);
    CHECK_EQ_INT(T->applies(&r), 0);
    r = sig_max_pool2d(x, 2, 2, 2, 2, 1, 1, 1, 1, 0, 1); /* k2: pad 1 allowed */
    CHECK_EQ_INT(T->applies(&r), 1);
    r = sig_max_pool2d(x, 3, 3, 1, 1, 2, 2, 2, 2, 0, 1); /* k3 dilation 2: pad 2 allowed */
    CHECK_EQ_INT(T->applies(&r), 1);
    r = sig_max_pool2d(x, 3, 3, 1, 1, 3, 3, 2, 2, 0, 1); /* ... pad 3 is not */
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    scalar_mut(&r, "padding")->v[0] = -1;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    scalar_mut(&r, "stride")->v[1] = 0;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    scalar_mut(&r, "dilation")->v[0] = 0;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    scalar_mut(&r, "kernel_size")->v[0] = 0;
    CHECK_EQ_INT(T->applies(&r), 0);
    /* lists of the wrong length or kind; missing scalars */
    r = s;
    scalar_mut(&r, "kernel_size")->n = 3;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    scalar_mut(&r, "kernel_size")->n = 0;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    scalar_mut(&r, "padding")->kind = 'i';
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    scalar_mut(&r, "ceil_mode")->kind = 'i';
    CHECK_EQ_INT(T->applies(&r), 0);
    static const char *const names[] = {"kernel_size", "stride", "padding", "dilation",
                                        "ceil_mode"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        r = s;
        snprintf(scalar_mut(&r, names[i])->name, sizeof r.scalars[0].name, "other");
        if (!CHECK_EQ_INT(T->applies(&r), 0)) printf("     missing %s\n", names[i]);
    }
    /* one-int lists mean both dims (k3 s2 p1 d1 as single values) */
    r = s;
    scalar_mut(&r, "kernel_size")->n = scalar_mut(&r, "stride")->n = 1;
    scalar_mut(&r, "padding")->n = scalar_mut(&r, "dilation")->n = 1;
    CHECK_EQ_INT(T->applies(&r), 1);
    /* layouts: non-dense input, NCHW outputs of a channels-last input (and the reverse), a
     * channels-last input whose outputs are not dense */
    r = s;
    r.in[0].strides[0] *= 2; /* a batch slice: not dense */
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.out[0] = sig_tensor(KF_F16, 4, s.out[0].sizes, 0, 0);
    r.out[1] = sig_tensor(KF_I64, 4, s.out[1].sizes, 0, 0);
    CHECK_EQ_INT(T->applies(&r), 0);
    r = sig_max_pool2d(sig_tensor(KF_F16, SZ(2, 8, 10, 10), 0, 16), 3, 3, 2, 2, 1, 1, 1, 1, 0, 0);
    CHECK_EQ_INT(T->applies(&r), 1);
    r.out[1] = sig_tensor(KF_I64, 4, r.out[1].sizes, 1, 0);
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.out[1].strides[0] += 8;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = sig_max_pool2d(sig_tensor(KF_F32, SZ(4, 9, 9), 0, 16), 3, 3, 2, 2, 1, 1, 1, 1, 0, 0);
    CHECK_EQ_INT(T->applies(&r), 1);
    r.in[0].strides[0] = 1, r.in[0].strides[1] = 9 * 4, r.in[0].strides[2] = 4; /* C inner */
    CHECK_EQ_INT(T->applies(&r), 0);
    /* 5-D and 2-D inputs */
    r = sig_max_pool2d(sig_tensor(KF_F32, SZ(2, 2, 4, 8, 8), 0, 16), 2, 2, 2, 2, 0, 0, 1, 1, 0, 0);
    CHECK_EQ_INT(T->applies(&r), 0);
    r = sig_max_pool2d(sig_tensor(KF_F32, SZ(8, 8), 0, 16), 2, 2, 2, 2, 0, 0, 1, 1, 0, 0);
    CHECK_EQ_INT(T->applies(&r), 0);
    /* an empty batch (eager writes nothing), in-place outputs, a wrong op, an extra input */
    r = sig_max_pool2d(sig_tensor(KF_F32, SZ(0, 2, 8, 8), 0, 16), 2, 2, 2, 2, 0, 0, 1, 1, 0, 0);
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.out_alias[1] = 1;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    snprintf(r.op, sizeof r.op, "aten::max_pool2d");
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.n_in = 2;
    r.in[1] = x;
    CHECK_EQ_INT(T->applies(&r), 0);
    r = s;
    r.n_out = 1;
    CHECK_EQ_INT(T->applies(&r), 0);

    /* render refuses what applies() refuses, and bad knob indices */
    char *src = (char *)1, *lj = (char *)1, err[256];
    int idx[MAX_KNOBS] = {0};
    r = s;
    r.in[0].dtype = r.out[0].dtype = KF_F64;
    CHECK_EQ_INT(T->render(&r, idx, &src, &lj, err, sizeof err), KF_ERR_UNSUPPORTED);
    CHECK(src == NULL && lj == NULL);
    idx[1] = T->knobs[1].n_values;
    CHECK_EQ_INT(T->render(&s, idx, &src, &lj, err, sizeof err), KF_ERR_INVALID);
    CHECK_CONTAINS(err, T->knobs[1].name);
    CHECK(src == NULL && lj == NULL);
}

/* ---- every knob combination renders a consistent candidate ---- */

static long n_rendered;

static void check_render(const pcase *c, const int *idx, char **src_out, kf_launch *l_out)
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
    ok = ok && !strcmp(l.entry, "kf_kernel") && l.n_args == 3 && !strcmp(l.arg_types[0], cty) &&
         !strcmp(l.arg_types[1], mty) && !strcmp(l.arg_types[2], "int64_t*");
    /* effective values against the knobs, the signature and the record */
    int x_es = esize(s->in[0].dtype), align = s->in[0].align ? s->in[0].align : x_es;
    int o = s->in[0].ndim - 3;
    long long nb = o ? s->in[0].sizes[0] : 1, ch = s->in[0].sizes[o];
    long long oh = s->out[0].sizes[o + 1], ow = s->out[0].sizes[o + 2];
    long long vec = src_define(src, "KF_VEC", 0), wout = src_define(src, "KF_WOUT", 0);
    long long nt = src_define(src, "KF_NT", 0), gs = src_define(src, "KF_GS", -1);
    long long cl = src_define(src, "KF_CL", -1);
    ok = ok && cl == c->nhwc && nt == knob_value(idx, "threads") && l.block[0] == (unsigned)nt &&
         l.block[1] == 1 && l.block[2] == 1 && l.smem == 0;
    ok = ok && vec >= 1 && vec <= knob_value(idx, "vec") && ch % vec == 0 && vec * x_es <= 32 &&
         (vec == 1 || (vec * x_es > 16 ? 16 : vec * x_es) <= align) && (cl || vec == 1);
    ok = ok && wout >= 1 && wout <= knob_value(idx, "wout") && (wout == 1 || wout <= ow);
    long long items = nb * oh * ((ow + wout - 1) / wout) * (ch / vec);
    long long blocks = (items + nt - 1) / nt;
    ok = ok && src_define(src, "KF_ITEMS", 0) == items && l.grid[1] == 1 && l.grid[2] == 1;
    /* 64-bit offsets exactly where 32 bits could overflow */
    int wide = strstr(src, "typedef long long kf_idx;") != NULL;
    ok = ok && wide == (kf_job_tensor_numel(&s->in[0]) >= (1ll << 30) || items >= (1ll << 30));
    if (knob_value(idx, "grid") == 0) {
        ok = ok && gs == 0 && l.grid[0] == (unsigned)blocks;
    } else {
        long long cap = (long long)knob_value(idx, "grid") * 132 * (2048 / nt);
        ok = ok && gs == 1 && l.grid[0] == (unsigned)(blocks < cap ? blocks : cap);
    }
    if (!CHECK(ok)) {
        print_knobs(T, c->label, idx);
        printf("     record %s (vec %lld wout %lld cl %lld)\n", lj, vec, wout, cl);
    }
    keep_render(ok, src, lj, &l, src_out, l_out);
}

KF_DEFINE_TEST_RENDER_ALL()

/* ---- compile a spread of combinations with NVRTC (cuda_template_test.h) ---- */

KF_DEFINE_TEST_JOBS()

/* ---- running them: host-side dtype conversions (exact for the values used) ---- */

static float bits_to_f(int dt, uint32_t b)
{
    if (dt == KF_F32) {
        float f;
        memcpy(&f, &b, 4);
        return f;
    }
    return dt == KF_BF16 ? bf16_to_f((uint16_t)b) : f16_to_f((uint16_t)b);
}

/* bits of small values that f16 and bf16 hold exactly: k / 4 for |k| <= 16 */
static uint32_t f_to_bits(int dt, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if (dt == KF_F32) return u;
    if (dt == KF_BF16) return u >> 16;
    if (f == 0.0f) return (u >> 16) & 0x8000u;
    uint32_t sign = (u >> 16) & 0x8000u, e = (u >> 23) & 0xffu, m = (u >> 13) & 0x3ffu;
    return sign | ((e - 112u) << 10) | m;
}

static uint32_t get_bits(const void *p, int dt, int64_t i)
{
    return dt == KF_F32 ? ((const uint32_t *)p)[i] : ((const uint16_t *)p)[i];
}

static void put_bits(void *p, int dt, int64_t i, uint32_t b)
{
    if (dt == KF_F32) ((uint32_t *)p)[i] = b;
    else ((uint16_t *)p)[i] = (uint16_t)b;
}

/* NaNs of several payloads and signs; -inf */
static uint32_t nan_bits(int dt, int k)
{
    static const uint32_t f32[] = {0x7fc00000u, 0xffc00001u, 0x7f800123u};
    static const uint32_t f16[] = {0x7e00u, 0xfe01u, 0x7c07u};
    static const uint32_t bf16[] = {0x7fc0u, 0xffc1u, 0x7f85u};
    return dt == KF_F32 ? f32[k % 3] : dt == KF_F16 ? f16[k % 3] : bf16[k % 3];
}

static uint32_t ninf_bits(int dt)
{
    return dt == KF_F32 ? 0xff800000u : dt == KF_F16 ? 0xfc00u : 0xff80u;
}

/* ---- the reference: eager's loops ---- */

typedef struct geom {
    int64_t n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t xs[4], ys[4], is[4];
} geom;

static void strides4(const kf_job_tensor *t, int64_t *s)
{
    int o = t->ndim - 3;
    s[0] = o ? t->strides[0] : 0;
    for (int d = 0; d < 3; d++) s[1 + d] = t->strides[o + d];
}

static void geom_of(const kf_job_sig *s, geom *g)
{
    const kf_job_tensor *x = &s->in[0];
    int o = x->ndim - 3;
    const kf_job_scalar *k = kf_job_scalar_find(s, "kernel_size");
    const kf_job_scalar *st = kf_job_scalar_find(s, "stride");
    const kf_job_scalar *p = kf_job_scalar_find(s, "padding");
    const kf_job_scalar *d = kf_job_scalar_find(s, "dilation");
    g->n = o ? x->sizes[0] : 1;
    g->c = x->sizes[o], g->h = x->sizes[o + 1], g->w = x->sizes[o + 2];
    g->oh = s->out[0].sizes[o + 1], g->ow = s->out[0].sizes[o + 2];
    g->kh = k->v[0], g->kw = k->n == 2 ? k->v[1] : k->v[0];
    g->sh = st->n ? st->v[0] : g->kh;
    g->sw = st->n == 2 ? st->v[1] : st->n ? st->v[0] : g->kw;
    g->ph = p->v[0], g->pw = p->n == 2 ? p->v[1] : p->v[0];
    g->dh = d->v[0], g->dw = d->n == 2 ? d->v[1] : d->v[0];
    strides4(x, g->xs);
    strides4(&s->out[0], g->ys);
    strides4(&s->out[1], g->is);
}

/* expected values (bits) and indices at the outputs' memory offsets */
static void reference(const pcase *c, const void *x, uint32_t *val, int64_t *ind)
{
    geom g;
    geom_of(&c->sig, &g);
    int dt = c->sig.in[0].dtype;
    for (int64_t n = 0; n < g.n; n++)
        for (int64_t ch = 0; ch < g.c; ch++)
            for (int64_t oh = 0; oh < g.oh; oh++)
                for (int64_t ow = 0; ow < g.ow; ow++) {
                    int64_t hs = oh * g.sh - g.ph, ws = ow * g.sw - g.pw;
                    int64_t he = hs + (g.kh - 1) * g.dh + 1, we = ws + (g.kw - 1) * g.dw + 1;
                    if (he > g.h) he = g.h;
                    if (we > g.w) we = g.w;
                    while (hs < 0) hs += g.dh;
                    while (ws < 0) ws += g.dw;
                    float m = -INFINITY;
                    uint32_t mb = ninf_bits(dt);
                    int64_t mi = c->nhwc ? 0 : hs * g.w + ws;
                    for (int64_t h = hs; h < he; h += g.dh)
                        for (int64_t w = ws; w < we; w += g.dw) {
                            uint32_t b = get_bits(x, dt, n * g.xs[0] + ch * g.xs[1] +
                                                             h * g.xs[2] + w * g.xs[3]);
                            float v = bits_to_f(dt, b);
                            if (v > m || isnan(v)) m = v, mb = b, mi = h * g.w + w;
                        }
                    val[n * g.ys[0] + ch * g.ys[1] + oh * g.ys[2] + ow * g.ys[3]] = mb;
                    ind[n * g.is[0] + ch * g.is[1] + oh * g.is[2] + ow * g.is[3]] = mi;
                }
}

/* Inputs for case c: values k / 4 from a small set (ties), +-0, NaNs, -inf, and a block of
 * -inf rows in the first image (windows with nothing above -inf). */
static void make_input(const pcase *c, void *x)
{
    geom g;
    geom_of(&c->sig, &g);
    int dt = c->sig.in[0].dtype;
    for (int64_t n = 0; n < g.n; n++)
        for (int64_t ch = 0; ch < g.c; ch++)
            for (int64_t h = 0; h < g.h; h++)
                for (int64_t w = 0; w < g.w; w++) {
                    int64_t o = n * g.xs[0] + ch * g.xs[1] + h * g.xs[2] + w * g.xs[3];
                    double u = urand();
                    uint32_t b;
                    if (n == 0 && h < 2 && ch % 2 == 0) b = ninf_bits(dt);
                    else if (u < 0.03) b = nan_bits(dt, (int)(urand() * 3));
                    else if (u < 0.08) b = ninf_bits(dt);
                    else if (u < 0.12) b = f_to_bits(dt, urand() < 0.5 ? 0.0f : -0.0f);
                    else b = f_to_bits(dt, (float)((int)(urand() * 25) - 12) / 4.0f);
                    put_bits(x, dt, o, b);
                }
}

/* one kernel of case c on the prepared buffers; 1 when right */
static int gpu_run(gpu *G, kernel_job *j, unsigned long long *dev, const void *xh,
                   const uint32_t *rv, const int64_t *ri)
{
    const pcase *c = &cases[j->c];
    const kf_job_sig *s = &c->sig;
    char name[400], err[512];
    kernel_job_name(j, name, sizeof name);
    kf_compiled *k = NULL;
    if (!CHECK_EQ_INT(nv.load(nv.self, j->blob, j->len, &j->l, 0, &k, err, sizeof err), KF_OK)) {
        printf("     %s: load: %s\n", name, err);
        return 0;
    }
    size_t bx = tensor_bytes(&s->in[0]), by = tensor_bytes(&s->out[0]);
    size_t bi = tensor_bytes(&s->out[1]);
    void *ptrs[3] = {(void *)(uintptr_t)dev[0], (void *)(uintptr_t)dev[1],
                     (void *)(uintptr_t)dev[2]};
    CHECK_EQ_INT(G->d.memset_d8(dev[1], 0xff, by), 0);
    CHECK_EQ_INT(G->d.memset_d8(dev[2], 0xff, bi), 0);
    int good = 0;
    if (CHECK_EQ_INT(nv.launch(nv.self, k, ptrs, 3, NULL), 0) &&
        CHECK_EQ_INT(G->d.ctx_synchronize(), 0)) {
        void *gy = malloc(by), *gi = malloc(bi), *gx = malloc(bx);
        CHECK_EQ_INT(G->d.memcpy_dtoh(gy, dev[1], by), 0);
        CHECK_EQ_INT(G->d.memcpy_dtoh(gi, dev[2], bi), 0);
        CHECK_EQ_INT(G->d.memcpy_dtoh(gx, dev[0], bx), 0);
        int dt = s->in[0].dtype;
        int64_t n = kf_job_tensor_numel(&s->out[0]);
        long bad = 0;
        for (int64_t e = 0; e < n; e++) {
            uint32_t v = get_bits(gy, dt, e);
            int64_t ix = ((const int64_t *)gi)[e];
            if ((v != rv[e] || ix != ri[e]) && bad++ == 0)
                printf("     %s: out[%lld] = 0x%x index %lld, reference 0x%x index %lld\n", name,
                       (long long)e, v, (long long)ix, rv[e], (long long)ri[e]);
        }
        if (memcmp(gx, xh, bx)) {
            printf("     %s: the input changed\n", name);
            bad++;
        }
        good = CHECK_EQ_INT(bad, 0);
        free(gy), free(gi), free(gx);
    }
    nv.unload(nv.self, k);
    return good;
}

static void test_gpu(void)
{
    gpu G;
    if (!gpu_open(&G)) return;
    int ran = 0, passed = 0;
    for (int ci = 0; ci < n_cases; ci++) {
        const pcase *c = &cases[ci];
        if (c->norun) continue;
        const kf_job_sig *s = &c->sig;
        size_t bx = tensor_bytes(&s->in[0]);
        int64_t n = kf_job_tensor_numel(&s->out[0]);
        void *xh = calloc(1, bx + 4);
        uint32_t *rv = calloc((size_t)n, sizeof *rv);
        int64_t *ri = calloc((size_t)n, sizeof *ri);
        unsigned long long base[3] = {0, 0, 0}, dev[3] = {0, 0, 0};
        make_input(c, xh);
        reference(c, xh, rv, ri);
        size_t sizes[3] = {bx + 16, tensor_bytes(&s->out[0]), tensor_bytes(&s->out[1])};
        int ok = 1;
        for (int i = 0; i < 3; i++) ok = ok && CHECK_EQ_INT(G.d.mem_alloc(&base[i], sizes[i]), 0);
        if (ok) {
            int al = s->in[0].align;
            dev[0] = base[0] + (al > 0 && al < 16 ? (unsigned)al : 0u); /* a misaligned view */
            dev[1] = base[1], dev[2] = base[2];
            ok = CHECK_EQ_INT(G.d.memcpy_htod(dev[0], xh, bx), 0);
        }
        for (int i = 0; ok && i < n_jobs; i++) {
            if (jobs[i].c != ci || !jobs[i].blob) continue;
            ran++;
            passed += gpu_run(&G, &jobs[i], dev, xh, rv, ri);
        }
        for (int i = 0; i < 3; i++)
            if (base[i]) G.d.mem_free(base[i]);
        free(xh), free(rv), free(ri);
    }
    printf("ran %d kernels on the GPU, %d correct\n", ran, passed);
    CHECK_EQ_INT(passed, ran);
    CHECK(ran > 0);
    gpu_close(&G);
}

/* ---- the host template: eager's CPU semantics, compiled and run here ---- */

/* what eager's CPU kernel stores for a maximum with bits b: scalar_t(float(b)), which keeps an
 * f32 NaN's payload and makes an f16 or bf16 NaN torch's canonical one */
static uint32_t cpu_stored(int dt, uint32_t b)
{
    if (dt == KF_F16 && (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu)) return (b & 0x8000u) | 0x7e00u;
    if (dt == KF_BF16 && (b & 0x7f80u) == 0x7f80u && (b & 0x7fu)) return 0x7fc0u;
    return b;
}

static int host_run(kf_compiler_i *cc, const kf_template *h, const pcase *c, int omp)
{
    char err[512] = "", *src = NULL, *lj = NULL, *log = NULL;
    void *blob = NULL, *x = NULL, *y = NULL;
    uint32_t *rv = NULL;
    int64_t *ind = NULL, *ri = NULL;
    size_t len = 0;
    kf_compiled *k = NULL;
    kf_launch l;
    int ok = 0, idx[1] = {omp}, dt = c->sig.in[0].dtype, es = esize(dt);
    pcase cpu = *c;
    cpu.nhwc = 0; /* both CPU kernels start at the first in-range position */
    if (!CHECK_EQ_INT(h->render(&c->sig, idx, &src, &lj, err, sizeof err), KF_OK)) goto out;
    if (!CHECK(kf_source_check_backend(src, "host", err, sizeof err)))
        printf("     %s: %s\n", c->label, err);
    if (!CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK)) goto out;
    if (!CHECK_EQ_INT(cc->compile(cc->self, src, &l, NULL, &blob, &len, &log), KF_OK) ||
        !CHECK(!log || !strstr(log, "warning"))) {
        printf("     %s: %s\n--- source ---\n%s\n", c->label, log ? log : "", src);
        goto out;
    }
    if (!CHECK_EQ_INT(cc->load(cc->self, blob, len, &l, 0, &k, err, sizeof err), KF_OK)) goto out;
    int64_t nx = kf_job_tensor_numel(&c->sig.in[0]), ny = kf_job_tensor_numel(&c->sig.out[0]);
    x = calloc((size_t)nx, 4), y = malloc((size_t)ny * 4), ind = malloc((size_t)ny * 8);
    rv = calloc((size_t)ny, 4), ri = calloc((size_t)ny, 8);
    if (!CHECK(x && y && ind && rv && ri)) goto out;
    make_input(c, x);
    reference(&cpu, x, rv, ri);
    memset(y, 0xff, (size_t)ny * (size_t)es);
    memset(ind, 0xff, (size_t)ny * 8);
    void *ptrs[3] = {x, y, ind};
    if (!CHECK_EQ_INT(cc->launch(cc->self, k, ptrs, 3, NULL), 0)) goto out;
    long bad = 0;
    for (int64_t o = 0; o < ny; o++) {
        uint32_t want = cpu_stored(dt, rv[o]), got = get_bits(y, dt, o);
        if ((got != want || ind[o] != ri[o]) && bad++ < 3)
            printf("     %s omp=%d: out[%lld] = %#x index %lld, eager %#x index %lld\n", c->label,
                   omp, (long long)o, got, (long long)ind[o], want, (long long)ri[o]);
    }
    ok = CHECK_EQ_INT(bad, 0);
out:
    if (k) cc->unload(cc->self, k);
    free(blob), free(log), free(src), free(lj), free(x), free(y), free(ind), free(rv), free(ri);
    return ok;
}

static void test_host(void)
{
    const kf_template *h = find_template("host_max_pool2d");
    kf_compiler_i cc;
    if (!CHECK(h && !strcmp(h->backend, "host") && !h->applies(NULL)) ||
        !CHECK_EQ_INT(kf_compiler_host_create(&cc, NULL), KF_OK))
        return;
    int ran = 0, passed = 0;
    for (int i = 0; i < n_cases; i++) {
        if (cases[i].norun) continue;
        if (!CHECK(h->applies(&cases[i].sig))) {
            printf("     host_max_pool2d does not apply to %s\n", cases[i].label);
            continue;
        }
        for (int omp = 0; omp < 2; omp++, ran++) passed += host_run(&cc, h, &cases[i], omp);
    }
    printf("host_max_pool2d: %d of %d runs match eager's CPU kernels\n", passed, ran);
    CHECK(ran > 0);
    /* f64 and the CUDA-only dtypes stay refused on the host too */
    kf_job_sig s = cases[0].sig;
    s.in[0].dtype = s.out[0].dtype = KF_F64;
    CHECK(!h->applies(&s));
    cc.destroy(cc.self);
}

/* The host reference itself on a hand-checked 1x1x3x3 window set: ties take the first, a NaN
 * wins and the last NaN wins, -inf windows keep the start index (NCHW: first in range). */
static void test_reference(void)
{
    kf_job_sig s = sig_max_pool2d(sig_tensor(KF_F32, SZ(1, 1, 3, 4), 0, 16), 2, 2, 1, 2, 0, 0, 1,
                                  1, 0, 0);
    pcase c;
    memset(&c, 0, sizeof c);
    c.sig = s;
    /* rows: [1 2 2 -inf] [2 0 -inf -inf] [nan 1 nan 3] */
    float xv[12] = {1, 2, 2, -INFINITY, 2, 0, -INFINITY, -INFINITY, NAN, 1, NAN, 3};
    uint32_t xb[12], val[4];
    int64_t ind[4];
    for (int i = 0; i < 12; i++) xb[i] = f_to_bits(KF_F32, xv[i]);
    xb[10] = 0x7fc00042u; /* the later NaN, its own payload */
    CHECK_EQ_INT(s.out[0].sizes[2], 2);
    CHECK_EQ_INT(s.out[0].sizes[3], 2);
    reference(&c, xb, val, ind);
    CHECK_EQ_INT(ind[0], 1); /* 1 2 / 2 0: the first 2 */
    CHECK_EQ_INT(val[0], f_to_bits(KF_F32, 2));
    CHECK_EQ_INT(ind[1], 2); /* 2 -inf / -inf -inf */
    CHECK_EQ_INT(ind[2], 8); /* 2 0 / nan 1: NaN wins */
    CHECK_EQ_INT(val[2], xb[8]);
    CHECK_EQ_INT(ind[3], 10); /* -inf -inf / nan 3: the NaN, not 3 */
    CHECK_EQ_INT(val[3], 0x7fc00042u);
    xb[2] = ninf_bits(KF_F32); /* window 1 all -inf: NCHW keeps its first position, NHWC 0 */
    reference(&c, xb, val, ind);
    CHECK_EQ_INT(ind[1], 2);
    CHECK_EQ_INT(val[1], 0xff800000u);
    c.nhwc = 1;
    reference(&c, xb, val, ind);
    CHECK_EQ_INT(ind[1], 0);
    CHECK_EQ_INT(ind[0], 1);
}

int main(void)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rng_state = 0x706f6f6cu;
    test_table();
    if (!T) return check_done("templates_pool");
    test_start();
    test_refusals();
    test_reference();
    make_cases();
    test_host();
    test_render_all();
    nvrtc_levels(&nv, make_jobs, jobs, &n_jobs, test_gpu);
    free_jobs(jobs, n_jobs);
    return test_done(&t0, "templates_pool");
}
