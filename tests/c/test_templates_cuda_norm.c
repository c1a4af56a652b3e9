/* The CUDA normalization templates (forge/templates/cuda_norm*.c): cuda_layer_norm,
 * cuda_rms_norm, cuda_layer_norm_cols, cuda_rms_norm_cols, cuda_group_norm and
 * cuda_batch_norm_eval.
 *
 * Without NVRTC: applies() on signatures it must accept and on ones it must refuse, and every
 * knob combination of every template rendered on every case, its launch record parsed and
 * checked against the effective knob values the source states (block size, grid, cluster
 * multiple, shared memory, vector width within the alignment).
 * With NVRTC (no GPU needed): a deterministic spread of combinations per case, covering every
 * value of every knob plus the all-first-values start the proposer uses, compiled for sm_90.
 * With a GPU (the compiler's arch() answers): each of those kernels run on random inputs with
 * outputs poisoned to 0xff bytes (NaN in every float dtype), compared with a double-precision
 * reference in torch's semantics (fp32 1e-4, fp16 1e-3, bf16 1e-2, atol and rtol), inputs
 * checked unchanged, and the memory between a strided output's elements left as poisoned.
 *
 * Cases cover every op, dtype, layout (NCHW, channels last) and weight/bias presence, odd sizes
 * (rows of 1000 and 37, HxW of 35 and 25, 2 channels per group) and 2-byte alignment; for
 * layer_norm / rms_norm also strided rows (q/k heads as a transposed view, slices, permuted
 * leading dims, broadcast rows; y strided like x or contiguous) and a strided normalized dim
 * (the column templates: y with x's strides or contiguous, odd runs that force vec 1), the SD3.5
 * MMDiT signatures among them. */
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

#define NONE SIG_NONE
#define MAX_CASES 48

/* ---- building signatures ---- */

static void add_double(kf_job_sig *s, const char *name, double v)
{
    sig_add_scalar(s, name, 'd')->d = v;
}

/* strides as an argument of sig_tensor_strided */
#define ST(...) (int64_t[]){__VA_ARGS__}

/* layer_norm / rms_norm (sig_norm_row) with y contiguous, as eager allocates it for any x */
static kf_job_sig norm_y_contiguous(int rms, kf_job_tensor x, int nn, int wdt, int bdt,
                                    int statdt, double eps)
{
    kf_job_sig s = sig_norm_row(rms, x, nn, wdt, bdt, statdt, eps);
    s.out[0] = sig_tensor(x.dtype, x.ndim, x.sizes, 0, 0);
    return s;
}

/* ---- the cases ---- */

typedef struct ncase {
    char label[160];
    const kf_template *t;
    kf_job_sig sig;
} ncase;

static ncase cases[MAX_CASES];
static int n_cases;

static void add_case(const char *tname, kf_job_sig sig, const char *note)
{
    if (!CHECK(n_cases < MAX_CASES)) return;
    ncase *c = &cases[n_cases++];
    c->t = find_template(tname);
    c->sig = sig;
    const kf_job_tensor *x = &sig.in[0];
    int p = snprintf(c->label, sizeof c->label, "%s %s[", sig.op + 6, dname(x->dtype));
    p = label_sizes(c->label, sizeof c->label, p, x);
    if (p < (int)sizeof c->label) snprintf(c->label + p, sizeof c->label - (size_t)p, "] %s", note);
    if (!CHECK(c->t != NULL)) return;
    check_serves(c->t, &sig, c->label); /* exactly this nvrtc template serves it */
}

static void make_cases(void)
{
    kf_job_tensor x;
    /* layer_norm: rows of 1000 / 37, 2-D normalized_shape, mixed weight dtype, align 2,
     * stats in the input's dtype */
    add_case("cuda_layer_norm", sig_norm_row(0, sig_tensor(KF_F32, SZ(5, 1000), 0, 16), 1, KF_F32, KF_F32,
                                        KF_F32, 1e-5), "w b");
    add_case("cuda_layer_norm", sig_norm_row(0, sig_tensor(KF_BF16, SZ(8, 4096), 0, 16), 1, KF_BF16,
                                        KF_BF16, KF_F32, 1e-5), "w b");
    add_case("cuda_layer_norm", sig_norm_row(0, sig_tensor(KF_F16, SZ(3, 7, 64), 0, 16), 2, NONE, NONE,
                                        KF_F32, 1e-6), "no w b, 2-D shape");
    x = sig_tensor(KF_BF16, SZ(33, 200), 0, 2);
    add_case("cuda_layer_norm", sig_norm_row(0, x, 1, KF_F32, NONE, KF_F32, 1e-5), "f32 w, align 2");
    add_case("cuda_layer_norm", sig_norm_row(0, sig_tensor(KF_F32, SZ(1, 37), 0, 16), 1, NONE, KF_F32,
                                        KF_F32, 1e-3), "b only");
    add_case("cuda_layer_norm", sig_norm_row(0, sig_tensor(KF_F16, SZ(64, 256), 0, 16), 1, KF_F16,
                                        KF_F16, KF_F16, 1e-5), "w b, f16 stats");
    /* rms_norm: eps given and None */
    add_case("cuda_rms_norm", sig_norm_row(1, sig_tensor(KF_BF16, SZ(16, 4096), 0, 16), 1, KF_BF16, NONE,
                                      KF_F32, 1e-6), "w");
    add_case("cuda_rms_norm", sig_norm_row(1, sig_tensor(KF_F32, SZ(7, 1000), 0, 16), 1, NONE, NONE,
                                      KF_F32, -1), "eps None");
    x = sig_tensor(KF_F16, SZ(5, 3, 96), 0, 2);
    add_case("cuda_rms_norm", sig_norm_row(1, x, 2, KF_F16, NONE, KF_F32, -1), "w, align 2, eps None");
    /* strided rows: q/k heads ([B, S, H, D] seen as [B, H, S, D], the SD3.5 MMDiT shapes), y
     * strided like x or contiguous; slices; permuted leading dims; broadcast rows */
    x = sig_tensor_strided(KF_BF16, SZ(2, 24, 4096, 64), ST(6291456, 64, 1536, 1), 16);
    add_case("cuda_rms_norm", sig_norm_row(1, x, 1, KF_BF16, NONE, KF_F32, 1e-6),
             "MMDiT q/k heads, y like x");
    x = sig_tensor_strided(KF_BF16, SZ(2, 24, 333, 64), ST(511488, 64, 1536, 1), 16);
    add_case("cuda_rms_norm", norm_y_contiguous(1, x, 1, KF_BF16, NONE, KF_F32, 1e-6),
             "MMDiT q/k heads, y contiguous");
    x = sig_tensor_strided(KF_F16, SZ(2, 3, 5, 64), ST(960, 64, 192, 1), 16);
    add_case("cuda_rms_norm", sig_norm_row(1, x, 1, NONE, NONE, KF_F32, -1),
             "small q/k heads, y like x, eps None");
    x = sig_tensor_strided(KF_F32, SZ(3, 7, 40), ST(336, 48, 1), 16);
    add_case("cuda_layer_norm", norm_y_contiguous(0, x, 1, KF_F32, KF_F32, KF_F32, 1e-5),
             "slice [..., :40] of 48, w b, y contiguous");
    x = sig_tensor_strided(KF_BF16, SZ(5, 9, 37), ST(369, 41, 1), 4);
    add_case("cuda_layer_norm", sig_norm_row(0, x, 1, KF_BF16, NONE, KF_F32, 1e-5),
             "slice, rows of 37, align 4: vec 1, y like x (gaps)");
    x = sig_tensor_strided(KF_F16, SZ(4, 6, 8, 16), ST(128, 512, 16, 1), 16);
    add_case("cuda_layer_norm", sig_norm_row(0, x, 2, KF_F16, KF_F16, KF_F16, 1e-5),
             "permuted leading dims, 2-D shape, y like x");
    x = sig_tensor_strided(KF_BF16, SZ(4, 3, 64), ST(0, 64, 1), 16);
    add_case("cuda_layer_norm", norm_y_contiguous(0, x, 1, KF_BF16, KF_BF16, KF_F32, 1e-5),
             "broadcast rows (stride 0), y contiguous");
    /* a strided normalized dim (the column templates): [B, C, S] seen as [B, S, C], the MMDiT
     * shape among them; y contiguous (eager) or like x; runs of 100, 37 and 33 (vec 4, 1) */
    x = sig_tensor_strided(KF_BF16, SZ(2, 4096, 1536), ST(6291456, 1, 4096), 16);
    add_case("cuda_layer_norm_cols", norm_y_contiguous(0, x, 1, NONE, NONE, KF_F32, 1e-6),
             "MMDiT, y contiguous");
    x = sig_tensor_strided(KF_BF16, SZ(2, 512, 384), ST(196608, 1, 512), 16);
    add_case("cuda_layer_norm_cols", norm_y_contiguous(0, x, 1, KF_BF16, KF_BF16, KF_F32, 1e-6),
             "w b, y contiguous");
    add_case("cuda_layer_norm_cols", sig_norm_row(0, x, 1, NONE, NONE, KF_F32, 1e-6),
             "y like x");
    x = sig_tensor_strided(KF_F32, SZ(3, 100, 48), ST(4800, 1, 100), 16);
    add_case("cuda_layer_norm_cols", norm_y_contiguous(0, x, 1, KF_F32, KF_F32, KF_F32, 1e-5),
             "runs of 100, w b, y contiguous");
    x = sig_tensor_strided(KF_F16, SZ(2, 37, 30), ST(1110, 1, 37), 16);
    add_case("cuda_layer_norm_cols", norm_y_contiguous(0, x, 1, KF_F32, NONE, KF_F16, 1e-5),
             "runs of 37, f32 w, f16 stats, y contiguous");
    add_case("cuda_layer_norm_cols", sig_norm_row(0, x, 1, NONE, KF_F16, KF_F32, 1e-5),
             "runs of 37, b only, y like x");
    x = sig_tensor_strided(KF_BF16, SZ(2, 3, 64, 96), ST(18432, 6144, 1, 64), 16);
    add_case("cuda_layer_norm_cols", norm_y_contiguous(0, x, 1, KF_BF16, KF_BF16, KF_F32, 1e-5),
             "4-D, w b, y contiguous");
    x = sig_tensor_strided(KF_BF16, SZ(2, 256, 64), ST(16384, 1, 256), 16);
    add_case("cuda_rms_norm_cols", sig_norm_row(1, x, 1, KF_BF16, NONE, KF_F32, -1),
             "w, y like x, eps None");
    x = sig_tensor_strided(KF_F32, SZ(5, 33, 20), ST(660, 1, 33), 16);
    add_case("cuda_rms_norm_cols", norm_y_contiguous(1, x, 1, NONE, NONE, KF_F32, 1e-5),
             "runs of 33, y contiguous");
    x = sig_tensor_strided(KF_F16, SZ(2, 40, 1, 24), ST(960, 1, 7, 40), 2);
    add_case("cuda_rms_norm_cols", sig_norm_row(1, x, 1, KF_F16, NONE, KF_F32, 1e-6),
             "a size-1 dim, align 2, y like x");
    /* group_norm: NCHW and channels last, odd HxW, 1 and 2 channels per group, big groups */
    add_case("cuda_group_norm", sig_group_norm(sig_tensor(KF_BF16, SZ(2, 64, 8, 8), 0, 16), 8, KF_BF16,
                                       KF_BF16, KF_BF16, 1e-5), "w b");
    add_case("cuda_group_norm", sig_group_norm(sig_tensor(KF_F32, SZ(2, 32, 5, 7), 0, 16), 4, KF_F32, KF_F32,
                                       KF_F32, 1e-5), "w b, HxW 35");
    add_case("cuda_group_norm", sig_group_norm(sig_tensor(KF_F16, SZ(3, 48, 6, 6), 1, 16), 6, KF_F16, KF_F16,
                                       KF_F16, 1e-5), "channels last, w b");
    add_case("cuda_group_norm", sig_group_norm(sig_tensor(KF_BF16, SZ(2, 64, 5, 5), 1, 16), 32, NONE, NONE,
                                       KF_BF16, 1e-5), "channels last, no w b, 2 ch/group");
    add_case("cuda_group_norm", sig_group_norm(sig_tensor(KF_F32, SZ(4, 16, 10), 0, 4), 16, KF_F32, NONE,
                                       KF_F32, 1e-3), "3-D, w only, 1 ch/group, align 4");
    add_case("cuda_group_norm", sig_group_norm(sig_tensor(KF_BF16, SZ(1, 32, 64, 64), 0, 16), 4, NONE,
                                       KF_BF16, KF_BF16, 1e-5), "b only, 32768 per group");
    /* eval batch norm: both ops, layouts, save outputs [0] and [C], mixed parameter dtypes */
    add_case("cuda_batch_norm_eval", sig_batch_norm(0, sig_tensor(KF_F16, SZ(4, 32, 6, 6), 1, 16), KF_F16,
                                            KF_F16, KF_F16, KF_F32, 0, 1e-5), "channels last");
    add_case("cuda_batch_norm_eval", sig_batch_norm(1, sig_tensor(KF_F32, SZ(3, 20, 7, 5), 0, 16), KF_F32,
                                            KF_F32, KF_F32, KF_F32, 20, 1e-5), "save [C]");
    add_case("cuda_batch_norm_eval", sig_batch_norm(0, sig_tensor(KF_BF16, SZ(2, 24, 9), 0, 2), NONE,
                                            KF_BF16, KF_F32, KF_F32, 0, 1e-3),
             "b only, f32 running stats, align 2");
    add_case("cuda_batch_norm_eval", sig_batch_norm(1, sig_tensor(KF_F16, SZ(8, 256, 4, 4), 1, 16), KF_F16,
                                            KF_F16, KF_F16, KF_F32, 256, 1e-5),
             "channels last, save [C]");
    add_case("cuda_batch_norm_eval", sig_batch_norm(0, sig_tensor(KF_F32, SZ(5, 3), 0, 16), NONE, NONE,
                                            KF_F32, KF_F32, 3, 1e-5), "2-D, no w b");
    add_case("cuda_batch_norm_eval", sig_batch_norm(0, sig_tensor(KF_F16, SZ(4, 24, 5, 5), 1, 16), KF_F16,
                                            KF_F16, KF_F16, KF_F32, 0, 1e-5),
             "channels last, 24 channels (blocks of whole channel rows)");
}

/* ---- applies(): what must be refused ---- */

static void test_table(void)
{
    static const char *const names[] = {"cuda_layer_norm",      "cuda_rms_norm",
                                        "cuda_layer_norm_cols", "cuda_rms_norm_cols",
                                        "cuda_group_norm",      "cuda_batch_norm_eval"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        check_template(names[i], 1, MAX_KNOBS, strstr(names[i], "_cols") != NULL);
}

/* The column templates start with enough blocks (512) to fill a GPU: the most rows per block
 * that still give them, else the fewest (16). */
static void test_cols_start(void)
{
    const kf_template *t = find_template("cuda_layer_norm_cols");
    const kf_template *tr = find_template("cuda_rms_norm_cols");
    if (!CHECK(t && tr && t->start && tr->start)) return;
    int idx[MAX_KNOBS];
    kf_job_tensor x = sig_tensor_strided(KF_BF16, SZ(2, 4096, 1536), ST(6291456, 1, 4096), 16);
    kf_job_sig s = norm_y_contiguous(0, x, 1, NONE, NONE, KF_F32, 1e-6);
    t->start(&s, idx);
    CHECK_EQ_INT(t->knobs[1].values[idx[1]], 16); /* 8192 rows: 512 blocks of 16 */
    CHECK(idx[0] == 0 && idx[2] == 0 && idx[3] == 0 && idx[4] == 0 && idx[5] == 0);
    x = sig_tensor_strided(KF_BF16, SZ(16, 4096, 96), ST(393216, 1, 4096), 16);
    s = sig_norm_row(1, x, 1, KF_BF16, NONE, KF_F32, 1e-6);
    tr->start(&s, idx);
    CHECK_EQ_INT(tr->knobs[1].values[idx[1]], 128); /* 65536 rows: 512 blocks of 128 */
    x = sig_tensor_strided(KF_F16, SZ(2, 37, 30), ST(1110, 1, 37), 16);
    s = norm_y_contiguous(0, x, 1, NONE, NONE, KF_F32, 1e-6);
    t->start(&s, idx);
    CHECK_EQ_INT(t->knobs[1].values[idx[1]], 16);
    idx[1] = 3; /* a signature it does not serve: the first values */
    s = sig_norm_row(0, sig_tensor(KF_F16, SZ(8, 64), 0, 16), 1, NONE, NONE, KF_F32, 1e-6);
    t->start(&s, idx);
    CHECK_EQ_INT(idx[1], 0);
}

/* The row templates start short rows (MMDiT's q/k heads, 64 elements) on the smallest team
 * that covers a row with vectors of 8 and the most rows per block; long rows at the 0s. */
static void test_row_start(void)
{
    const kf_template *t = find_template("cuda_layer_norm");
    const kf_template *tr = find_template("cuda_rms_norm");
    if (!CHECK(t && tr && t->start && tr->start)) return;
    int idx[MAX_KNOBS];
    kf_job_tensor x = sig_tensor_strided(KF_BF16, SZ(2, 24, 4096, 64), ST(6291456, 64, 1536, 1), 16);
    kf_job_sig s = sig_norm_row(1, x, 1, KF_BF16, NONE, KF_F32, 1e-6);
    tr->start(&s, idx);
    CHECK_EQ_INT(tr->knobs[0].values[idx[0]], 8);
    CHECK_EQ_INT(tr->knobs[1].values[idx[1]], 8);
    CHECK(idx[2] == 0 && idx[3] == 0 && idx[4] == 0);
    s = sig_norm_row(0, sig_tensor(KF_F16, SZ(8, 1000), 0, 16), 1, NONE, NONE, KF_F32, 1e-6);
    t->start(&s, idx);
    CHECK_EQ_INT(t->knobs[0].values[idx[0]], 128); /* 125 vectors of 8 */
    s = sig_norm_row(0, sig_tensor(KF_F16, SZ(8, 2304), 0, 16), 1, NONE, NONE, KF_F32, 1e-6);
    t->start(&s, idx);
    for (int k = 0; k < 6; k++) CHECK_EQ_INT(idx[k], 0);
}

static void test_refusals(void)
{
    kf_job_tensor x = sig_tensor(KF_BF16, SZ(8, 64), 0, 16);
    kf_job_sig s = sig_norm_row(0, x, 1, KF_BF16, KF_BF16, KF_F32, 1e-5), r;
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    r = s;
    r.in[0].dtype = r.out[0].dtype = KF_F64;
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.out[0].dtype = KF_F32; /* y must have the input's dtype */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[0].strides[0] = 1, r.in[0].strides[1] = 8; /* transposed: the column template's */
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    CHECK(find_template("cuda_layer_norm_cols") &&
          find_template("cuda_layer_norm_cols")->applies(&r));
    r = s;
    scalar_mut(&r, "normalized_shape")->v[0] = 63; /* not the trailing dims */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[1] = sig_vec1(KF_BF16, 32); /* weight of the wrong size */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.out[1] = sig_vec1(KF_F32, 7); /* one mean per row */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.out_alias[0] = 1; /* in place */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = sig_norm_row(0, x, 1, KF_BF16, KF_BF16, KF_F32, -1); /* layer_norm's eps is never None */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = sig_norm_row(0, x, 1, KF_BF16, NONE, KF_F32, 1e-5);
    r.n_scalars = 0; /* which optional is present? not said */
    kf_job_scalar *l = sig_add_scalar(&r, "normalized_shape", 'l');
    l->n = 1, l->v[0] = 64;
    add_double(&r, "eps", 1e-5);
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    snprintf(r.op, sizeof r.op, "aten::layer_norm");
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = sig_norm_row(1, x, 1, KF_BF16, NONE, KF_F32, -1);
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    r.n_out = 3; /* rms_norm returns (out, rstd) */
    r.out[2] = r.out[1];
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = sig_norm_row(1, x, 1, KF_BF16, NONE, KF_F32, 1e-5);
    scalar_mut(&r, "eps")->kind = 's'; /* eps of another kind */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);

    kf_job_tensor g = sig_tensor(KF_F16, SZ(2, 12, 4, 4), 0, 16);
    s = sig_group_norm(g, 3, KF_F16, KF_F16, KF_F16, 1e-5);
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    r = sig_group_norm(g, 5, KF_F16, KF_F16, KF_F16, 1e-5); /* 5 does not divide 12 */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    scalar_mut(&r, "HxW")->i = 15; /* HxW disagrees with the input */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.out[0] = sig_tensor(KF_F16, SZ(2, 12, 4, 4), 1, 0); /* channels-last y of an NCHW x */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = sig_group_norm(sig_tensor(KF_F16, SZ(2, 12, 4, 4), 1, 16), 3, KF_F16, KF_F16, KF_F16, 1e-5);
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    r.in[0].strides[2] = 1000; /* neither layout */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.out[1] = sig_vec1(KF_F16, 6); /* [N, group] has 6 elements: a flat [6] is fine */
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    r.out[2] = sig_vec1(KF_F16, 5);
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[0].dtype = KF_F64;
    CHECK_EQ_INT(nvrtc_applies(&r), 0);

    kf_job_tensor b = sig_tensor(KF_F16, SZ(4, 8, 3, 3), 1, 16);
    s = sig_batch_norm(0, b, KF_F16, KF_F16, KF_F16, KF_F32, 0, 1e-5);
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    r = s;
    scalar_mut(&r, "training")->i = 1;
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = sig_batch_norm(1, b, NONE, NONE, KF_F32, KF_F32, 8, 1e-5);
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    r.out[1] = sig_vec1(KF_F32, 3); /* save_mean: [0] or [C] */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    /* native_batch_norm without running statistics computes batch statistics: not eval */
    r = sig_of("aten::native_batch_norm");
    r.in[r.n_in++] = b;
    sig_add_opt(&r, "weight", KF_F16, 8);
    sig_add_opt(&r, "bias", KF_F16, 8);
    sig_add_scalar(&r, "running_mean", 'n');
    sig_add_scalar(&r, "running_var", 'n');
    sig_add_scalar(&r, "training", 'b')->i = 0;
    add_double(&r, "momentum", 0.1);
    add_double(&r, "eps", 1e-5);
    r.n_out = 3;
    r.out[0] = b;
    r.out[1] = r.out[2] = sig_vec1(KF_F32, 0);
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[3] = sig_vec1(KF_F16, 9); /* running_mean of the wrong size */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.out[0] = sig_tensor(KF_F16, SZ(4, 8, 3, 3), 0, 0); /* NCHW y of a channels-last x */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);

    /* render refuses what applies() refuses, and bad knob indices */
    const kf_template *t = find_template("cuda_group_norm");
    if (!t) return;
    char *src = (char *)1, *lj = (char *)1, err[256];
    int idx[MAX_KNOBS] = {0};
    s = sig_batch_norm(0, b, KF_F16, KF_F16, KF_F16, KF_F32, 0, 1e-5);
    CHECK_EQ_INT(t->render(&s, idx, &src, &lj, err, sizeof err), KF_ERR_UNSUPPORTED);
    CHECK(src == NULL && lj == NULL);
    s = sig_group_norm(g, 3, KF_F16, KF_F16, KF_F16, 1e-5);
    idx[2] = 4;
    CHECK_EQ_INT(t->render(&s, idx, &src, &lj, err, sizeof err), KF_ERR_INVALID);
    CHECK_CONTAINS(err, "split");
    CHECK(src == NULL && lj == NULL);
}

/* Strided layer_norm / rms_norm: what the row and column templates take and what they leave to
 * eager. */
static void test_refusals_strided(void)
{
    const kf_template *ln = find_template("cuda_layer_norm"), *rms = find_template("cuda_rms_norm");
    const kf_template *lnc = find_template("cuda_layer_norm_cols");
    const kf_template *rmsc = find_template("cuda_rms_norm_cols");
    if (!CHECK(ln && rms && lnc && rmsc)) return;

    /* rows: q/k heads [2, 4, 8, 64] of a [2, 8, 4, 64] tensor */
    kf_job_tensor q = sig_tensor_strided(KF_BF16, SZ(2, 4, 8, 64), ST(2048, 64, 256, 1), 16);
    kf_job_sig s = sig_norm_row(1, q, 1, KF_BF16, NONE, KF_F32, 1e-6), r;
    CHECK(rms->applies(&s));
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    r = norm_y_contiguous(1, q, 1, KF_BF16, NONE, KF_F32, 1e-6);
    CHECK(rms->applies(&r));
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    r = sig_norm_row(0, q, 1, KF_F32, KF_F32, KF_F32, 1e-5);
    CHECK(ln->applies(&r));
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    r = s;
    r.in[0].strides[2] = 32; /* x's rows overlap: they are only read */
    CHECK(rms->applies(&r));
    r = s;
    r.out[0].strides[1] = 0; /* y's rows overlap (broadcast) */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.out[0].strides[2] = 32; /* y's rows overlap in part */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[0].strides[3] = 2; /* a row is not one block, and no leading dim has stride 1 */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s; /* y's rows are not blocks: out[] in another layout */
    r.out[0] = sig_tensor_strided(KF_BF16, SZ(2, 4, 8, 64), ST(8192, 2048, 256, 2), 0);
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[0].strides[0] = -2048; /* a negative stride */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[0].strides[0] = (int64_t)1 << 62; /* offsets past 2^62 */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s; /* rstd not in logical row order */
    r.out[1] = sig_tensor_strided(KF_F32, SZ(2, 4, 8, 1), ST(32, 1, 4, 1), 0);
    CHECK_EQ_INT(nvrtc_applies(&r), 0);

    /* columns: [2, 64, 96] of a [2, 96, 64] tensor, normalized over the strided dim */
    kf_job_tensor c = sig_tensor_strided(KF_BF16, SZ(2, 64, 96), ST(6144, 1, 64), 16);
    s = norm_y_contiguous(0, c, 1, KF_BF16, KF_BF16, KF_F32, 1e-5);
    CHECK(lnc->applies(&s));
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    r = sig_norm_row(0, c, 1, NONE, NONE, KF_F32, 1e-5); /* y like x */
    CHECK(lnc->applies(&r));
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    r = sig_norm_row(1, c, 1, KF_BF16, NONE, KF_F32, -1);
    CHECK(rmsc->applies(&r));
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    r = s; /* y in a third layout */
    r.out[0] = sig_tensor_strided(KF_BF16, SZ(2, 64, 96), ST(12288, 1, 128), 0);
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = sig_norm_row(0, c, 1, NONE, NONE, KF_F32, 1e-5);
    r.out[0].strides[0] = 0; /* y like x but overlapping */
    r.in[0].strides[0] = 0;
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[0].strides[2] = 0; /* broadcast along the normalized dim */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s; /* mean not in logical row order */
    r.out[1] = sig_tensor_strided(KF_F32, SZ(2, 64, 1), ST(1, 2, 1), 0);
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[1] = sig_tensor_strided(KF_BF16, SZ(96), ST(2), 16); /* a strided weight */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    /* two normalized dims, neither one a block */
    kf_job_tensor t = sig_tensor_strided(KF_F32, SZ(4, 8, 16), ST(1, 64, 4), 16);
    r = norm_y_contiguous(0, t, 2, NONE, NONE, KF_F32, 1e-5);
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    /* the stride-1 dim is not the innermost leading one */
    t = sig_tensor_strided(KF_F32, SZ(64, 8, 32), ST(1, 2048, 64), 16);
    r = norm_y_contiguous(0, t, 1, NONE, NONE, KF_F32, 1e-5);
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    /* a single strided row */
    t = sig_tensor_strided(KF_F32, SZ(1, 64), ST(128, 2), 16);
    r = norm_y_contiguous(0, t, 1, NONE, NONE, KF_F32, 1e-5);
    CHECK_EQ_INT(nvrtc_applies(&r), 0);

    /* render refuses what applies() refuses */
    char *src = (char *)1, *lj = (char *)1, err[256];
    int idx[MAX_KNOBS] = {0};
    s = sig_norm_row(1, q, 1, KF_BF16, NONE, KF_F32, 1e-6);
    CHECK_EQ_INT(rmsc->render(&s, idx, &src, &lj, err, sizeof err), KF_ERR_UNSUPPORTED);
    CHECK(src == NULL && lj == NULL);
    s = sig_norm_row(1, c, 1, KF_BF16, NONE, KF_F32, -1);
    CHECK_EQ_INT(rms->render(&s, idx, &src, &lj, err, sizeof err), KF_ERR_UNSUPPORTED);
    CHECK(src == NULL && lj == NULL);
}

/* The rows' offsets as the sources state them: r * KF_NORM for a contiguous tensor (the kernel
 * as before), divisions by the leading sizes for a strided one, merged where the layout allows. */
static void test_row_offsets(void)
{
    const kf_template *rms = find_template("cuda_rms_norm");
    if (!CHECK(rms != NULL)) return;
    int idx[MAX_KNOBS] = {0};
    char *src = NULL, *lj = NULL, err[256];
    kf_job_tensor q =
        sig_tensor_strided(KF_BF16, SZ(2, 24, 4096, 64), ST(6291456, 64, 1536, 1), 16);
    kf_job_sig s = norm_y_contiguous(1, q, 1, KF_BF16, NONE, KF_F32, 1e-6);
    if (CHECK_EQ_INT(rms->render(&s, idx, &src, &lj, err, sizeof err), KF_OK)) {
        CHECK_CONTAINS(src, "o += (long long)(r % 4096u) * 1536LL;\n    r /= 4096u;\n"
                            "    o += (long long)(r % 24u) * 64LL;\n    r /= 24u;\n"
                            "    o += (long long)r * 6291456LL;\n");
        CHECK_CONTAINS(src, "#define KF_XROW(r) kf_xrow((unsigned)(r))");
        CHECK_CONTAINS(src, "#define KF_YROW(r) ((r) * KF_NORM)");
        CHECK(!strstr(src, "kf_yrow"));
    }
    free(src), free(lj);
    s = sig_norm_row(1, sig_tensor(KF_BF16, SZ(16, 64), 0, 16), 1, KF_BF16, NONE, KF_F32, 1e-6);
    if (CHECK_EQ_INT(rms->render(&s, idx, &src, &lj, err, sizeof err), KF_OK)) {
        CHECK_CONTAINS(src, "#define KF_XROW(r) ((r) * KF_NORM)");
        CHECK_CONTAINS(src, "#define KF_YROW(r) ((r) * KF_NORM)");
        CHECK(!strstr(src, "kf_xrow") && !strstr(src, "kf_yrow"));
    }
    free(src), free(lj);
    /* a slice of rows 128 apart: the leading dims merge into one, no division */
    q = sig_tensor_strided(KF_BF16, SZ(2, 3, 5, 64), ST(1920, 640, 128, 1), 16);
    s = sig_norm_row(1, q, 1, KF_BF16, NONE, KF_F32, 1e-6);
    if (CHECK_EQ_INT(rms->render(&s, idx, &src, &lj, err, sizeof err), KF_OK)) {
        CHECK_CONTAINS(src, "    long long o = 0;\n    o += (long long)r * 128LL;\n    return o;");
        CHECK(!strstr(src, "r %"));
    }
    free(src), free(lj);
}

/* ---- every knob combination renders a consistent candidate ---- */

static long n_rendered;

/* every dim d in [0, to) but `skip`, of size > 1, has a stride that is a multiple of v */
static int strides_div(const kf_job_tensor *t, int to, int skip, long long v)
{
    for (int d = 0; d < to; d++)
        if (d != skip && t->sizes[d] > 1 && t->strides[d] % v) return 0;
    return 1;
}

static int is_cols(const kf_template *t) { return strstr(t->name, "_cols") != NULL; }

/* how many dims normalized_shape has */
static int scal_n(const kf_job_sig *s)
{
    const kf_job_scalar *ns = kf_job_scalar_find(s, "normalized_shape");
    return ns ? ns->n : 0;
}

static void check_render(const ncase *c, const int *idx, char **src_out, kf_launch *l_out)
{
    char *src, *lj;
    const kf_job_sig *s = &c->sig;
    kf_launch l;
    int ok = begin_render(c->t, s, idx, c->label, "kf_kernel(KF_PARAMS)", &src, &lj, &l);
    if (ok < 0) return;
    n_rendered++;
    ok = ok && !strcmp(l.entry, "kf_kernel") && l.n_args == s->n_in + s->n_out;
    for (int i = 0; ok && i < l.n_args; i++) {
        int is_in = i < s->n_in;
        int dt = is_in ? s->in[i].dtype : s->out[i - s->n_in].dtype;
        char want[40];
        snprintf(want, sizeof want, "%s%s*", is_in ? "const " : "", cuda_type(dt));
        ok = !strcmp(l.arg_types[i], want);
    }
    unsigned threads = l.block[0] * l.block[1] * l.block[2];
    ok = ok && l.grid[0] >= 1 && l.grid[1] == 1 && l.grid[2] == 1 && threads % 32 == 0 &&
         threads <= 1024 && l.smem <= 200 * 1024;
    /* the effective values the source states agree with the record */
    long long vec = src_define(src, "KF_VEC", 0);
    int x_es = esize(s->in[0].dtype), align = s->in[0].align ? s->in[0].align : x_es;
    ok = ok && vec >= 1 && (vec == 1 || (vec * x_es > 16 ? 16 : vec * x_es) <= align);
    const char *tn = c->t->name;
    const kf_job_tensor *x = &s->in[0], *y = &s->out[0];
    if (ok && (!strcmp(tn, "cuda_layer_norm") || !strcmp(tn, "cuda_rms_norm"))) {
        long long tpr = src_define(src, "KF_TPR", 0), rpb = src_define(src, "KF_RPB", 0);
        long long rows = src_define(src, "KF_M", 0), n = src_define(src, "KF_NORM", 0);
        long long cache = src_define(src, "KF_CACHE", -1);
        int lead = x->ndim - scal_n(s);
        /* a family kernel (contiguous rows): the rows are rstd's element count at launch and
         * the grid follows them; "grid" is the tuned shape's */
        char *fam = c->t->applies(s) ? kf_template_family(c->t, s) : NULL;
        if (fam) {
            rows = kf_job_tensor_numel(&s->out[s->n_out - 1]);
            ok = ok && strstr(src, "#define KF_M kf_m ") && l.n_ints == 1 &&
                 l.ints[0].arg == l.n_args - 1 && l.ints[0].dim == KF_LAUNCH_NUMEL &&
                 l.ints[0].den_arg < 0 && l.grid_int == 0 && l.grid_per == (unsigned)rpb &&
                 l.grid_mul == 1 && kf_job_tensor_contiguous(x) && kf_job_tensor_contiguous(y);
        } else {
            ok = ok && l.n_ints == 0 && l.grid_per == 0;
        }
        free(fam);
        ok = ok && threads == tpr * rpb && l.grid[0] == (rows + rpb - 1) / rpb && n % vec == 0 &&
             rows * n == kf_job_tensor_numel(x) &&
             l.smem == (cache == 2 ? (unsigned)(rpb * n * x_es) : 0u) &&
             strides_div(x, lead, -1, vec) && strides_div(y, lead, -1, vec);
        /* a contiguous tensor's rows at r * n, as the kernel always had them */
        ok = ok && (!kf_job_tensor_contiguous(x) ||
                    strstr(src, "#define KF_XROW(r) ((r) * KF_NORM)\n"));
    } else if (ok && is_cols(c->t)) {
        long long nt = src_define(src, "KF_THREADS", 0), rows = src_define(src, "KF_ROWS", 0);
        long long m = src_define(src, "KF_M", 0), n = src_define(src, "KF_NORM", 0);
        long long tile = src_define(src, "KF_TILE", -1), vy = src_define(src, "KF_VY", 0);
        long long yt = src_define(src, "KF_YT", -1), rv = src_define(src, "KF_RV", 0);
        long long xn = src_define(src, "KF_XN", 0);
        int run = x->ndim - 2;
        while (run > 0 && x->sizes[run] == 1) run--;
        long long cg = rows / vec;
        ok = threads == nt && nt % 32 == 0 && rows % vec == 0 && cg >= 1 && cg <= nt &&
             nt % cg == 0 && l.grid[0] == (m + rows - 1) / rows && l.smem == 0 &&
             m * n == kf_job_tensor_numel(x) && xn == x->strides[x->ndim - 1] && rv >= 1 &&
             vec % rv == 0 && x->strides[run] == 1 && x->sizes[run] % vec == 0 &&
             strides_div(x, x->ndim, run, vec);
        /* y transposed: vectors of vy along its rows; else y has x's strides */
        int eo = esize(y->dtype), yal = y->align ? y->align : 16;
        ok = ok && (yt == 1 ? tile >= vy && tile % vy == 0 && n % vy == 0 && vy * eo <= 16 &&
                                  vy * eo <= yal && strides_div(y, y->ndim - 1, -1, vy)
                            : yt == 0 && tile == 0);
    } else if (ok && !strcmp(tn, "cuda_group_norm")) {
        long long tpg = src_define(src, "KF_TPG", 0), gpb = src_define(src, "KF_GPB", 0);
        long long split = src_define(src, "KF_SPLIT", 0), staged = src_define(src, "KF_STAGED", -1);
        long long ngrp = s->in[0].sizes[0] * src_define(src, "KF_G", 0);
        ok = threads == tpg * gpb && (split == 1 || gpb == 1) &&
             l.grid[0] == (split > 1 ? ngrp * split : (ngrp + gpb - 1) / gpb) &&
             l.grid[0] % split == 0 && l.smem == (unsigned)(staged * gpb * vec * x_es);
    } else if (ok) {
        long long per = src_define(src, "KF_PER", 0), total = kf_job_tensor_numel(&s->in[0]);
        long long chunk = (long long)threads * per * vec;
        ok = total % vec == 0 && l.grid[0] == (total + chunk - 1) / chunk && l.smem == 0;
    }
    if (!CHECK(ok)) {
        print_knobs(c->t, c->label, idx);
        printf("     record %s\n", lj);
    }
    keep_render(ok, src, lj, &l, src_out, l_out);
}

static void render_job(int ci, const int *idx, char **src, kf_launch *l)
{
    check_render(&cases[ci], idx, src, l);
}

static void test_render_all(void)
{
    for (int ci = 0; ci < n_cases; ci++) {
        const ncase *c = &cases[ci];
        if (!c->t) continue;
        int total = knob_combinations(c->t), idx[MAX_KNOBS];
        /* all of them, or (group_norm has 92160) every step-th from an offset that varies by
         * case, step a prime above 8: prime to every knob's count, so every value of every knob
         * is still taken */
        int step = 1;
        if (total > 4000) {
            step = total / 2000;
            for (int prime = 0; !prime; step++) {
                prime = step > 8;
                for (int d = 2; prime && d * d <= step; d++) prime = step % d != 0;
            }
            step--;
        }
        for (int v = step > 1 ? ci % step : 0; v < total; v += step) {
            knob_combination(c->t, v, idx);
            check_render(c, idx, NULL, NULL);
        }
    }
    if (n_cases > 0 && cases[0].t) check_render_deterministic(cases[0].t, &cases[0].sig);
    printf("rendered %ld knob combinations over %d cases\n", n_rendered, n_cases);
}

/* ---- compile a spread of combinations with NVRTC (cuda_template_test.h) ---- */

#define MAX_JOBS 768
static kernel_job jobs[MAX_JOBS];
static int n_jobs;
static kf_compiler_i nv;

static void make_jobs(void)
{
    for (int ci = 0; ci < n_cases; ci++)
        if (cases[ci].t)
            add_spread_jobs(jobs, &n_jobs, MAX_JOBS, ci, cases[ci].t, &cases[ci].sig,
                            cases[ci].label, render_job);
}

/* ---- the references, in torch's semantics, indexed by memory offset ---- */

typedef struct gcase {
    int ok;
    int nt;                                   /* n_in + n_out */
    size_t bytes[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS];
    void *host[KF_JOB_MAX_TENSORS];           /* inputs as uploaded */
    unsigned long long base[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS]; /* as allocated */
    unsigned long long dev[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS];  /* as passed */
    double *ref[KF_JOB_MAX_OUTPUTS];          /* reference outputs */
    void *got[KF_JOB_MAX_OUTPUTS];            /* downloaded outputs */
} gcase;

static const kf_job_scalar *scal(const kf_job_sig *s, const char *name)
{
    return kf_job_scalar_find(s, name);
}

/* index into in[] of an optional argument among `names` (in[0] is the input), -1 if None */
static int arg_index(const kf_job_sig *s, const char *const *names, int n, const char *name)
{
    int k = 1;
    for (int a = 0; a < n; a++) {
        const kf_job_scalar *sc = scal(s, names[a]);
        int none = sc && sc->kind == 'n';
        if (!strcmp(names[a], name)) return none ? -1 : k;
        if (!none) k++;
    }
    return -1;
}

static double eps_of(const kf_job_sig *s, double none_value)
{
    const kf_job_scalar *e = scal(s, "eps");
    return e && e->kind == 'd' ? e->d : none_value;
}

/* the memory offset of logical element i (row-major over the sizes) of t */
static int64_t elem_off(const kf_job_tensor *t, int64_t i)
{
    int64_t o = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        o += (i % t->sizes[d]) * t->strides[d];
        i /= t->sizes[d];
    }
    return o;
}

/* 1 + the largest offset of t (strides >= 0): the elements a buffer for it holds */
static int64_t extent(const kf_job_tensor *t)
{
    int64_t e = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] == 0) return 0;
        e += (t->sizes[d] - 1) * t->strides[d];
    }
    return e;
}

static void ref_row(const kf_job_sig *s, gcase *g, int rms)
{
    static const char *const names[] = {"weight", "bias"};
    const kf_job_tensor *x = &s->in[0], *y = &s->out[0];
    const kf_job_scalar *ns = scal(s, "normalized_shape");
    int64_t n = 1;
    for (int k = 0; k < ns->n; k++) n *= ns->v[k];
    int64_t rows = kf_job_tensor_numel(x) / n;
    int wi = arg_index(s, names, rms ? 1 : 2, "weight");
    int bi = rms ? -1 : arg_index(s, names, 2, "bias");
    double eps = (float)eps_of(s, 1.1920928955078125e-07);
    for (int64_t r = 0; r < rows; r++) {
        double m = 0, v = 0;
        for (int64_t j = 0; j < n; j++) m += get(g->host[0], x->dtype, elem_off(x, r * n + j));
        m /= (double)n;
        for (int64_t j = 0; j < n; j++) {
            double xv = get(g->host[0], x->dtype, elem_off(x, r * n + j));
            v += rms ? xv * xv : (xv - m) * (xv - m);
        }
        v /= (double)n;
        double rs = 1.0 / sqrt(v + eps);
        for (int64_t j = 0; j < n; j++) {
            double xv = get(g->host[0], x->dtype, elem_off(x, r * n + j));
            double yv = rms ? xv * rs : (xv - m) * rs;
            if (wi > 0) yv *= get(g->host[wi], s->in[wi].dtype, j);
            if (bi > 0) yv += get(g->host[bi], s->in[bi].dtype, j);
            g->ref[0][elem_off(y, r * n + j)] = yv;
        }
        if (!rms) g->ref[1][r] = m;
        g->ref[rms ? 1 : 2][r] = rs;
    }
}

/* offset of element (n, c, spatial s) of t */
static int64_t off_ncs(const kf_job_tensor *t, int64_t n, int64_t c, int64_t s)
{
    int64_t o = n * t->strides[0] + c * t->strides[1];
    for (int d = t->ndim - 1; d >= 2; d--) {
        o += (s % t->sizes[d]) * t->strides[d];
        s /= t->sizes[d];
    }
    return o;
}

/* Statistics first; y from the statistics as stored (torch computes y from its mean / rstd
 * tensors): with rounded (f16/bf16) statistics, from the kernel's, which were checked. */
static void ref_group(const kf_job_sig *s, gcase *g, int y_from_got)
{
    static const char *const names[] = {"weight", "bias"};
    const kf_job_tensor *x = &s->in[0];
    int64_t nn = scal(s, "N")->i, c = scal(s, "C")->i, hw = scal(s, "HxW")->i;
    int64_t grp = scal(s, "group")->i, d = c / grp;
    int wi = arg_index(s, names, 2, "weight"), bi = arg_index(s, names, 2, "bias");
    double eps = round_to(x->dtype, (float)eps_of(s, 0));
    int sdt = s->out[1].dtype;
    for (int64_t n = 0; n < nn; n++)
        for (int64_t gi = 0; gi < grp; gi++) {
            int64_t ng = n * grp + gi;
            double m = 0, v = 0, cnt = (double)(d * hw);
            for (int64_t ch = gi * d; ch < (gi + 1) * d; ch++)
                for (int64_t sp = 0; sp < hw; sp++)
                    m += get(g->host[0], x->dtype, off_ncs(x, n, ch, sp));
            m /= cnt;
            for (int64_t ch = gi * d; ch < (gi + 1) * d; ch++)
                for (int64_t sp = 0; sp < hw; sp++) {
                    double t = get(g->host[0], x->dtype, off_ncs(x, n, ch, sp)) - m;
                    v += t * t;
                }
            double rs = 1.0 / sqrt(v / cnt + eps);
            g->ref[1][ng] = m;
            g->ref[2][ng] = rs;
            double ms = y_from_got ? get(g->got[1], sdt, ng) : m;
            double rr = y_from_got ? get(g->got[2], s->out[2].dtype, ng) : rs;
            for (int64_t ch = gi * d; ch < (gi + 1) * d; ch++) {
                double a = rr * (wi > 0 ? get(g->host[wi], s->in[wi].dtype, ch) : 1.0);
                double b = -a * ms + (bi > 0 ? get(g->host[bi], s->in[bi].dtype, ch) : 0.0);
                for (int64_t sp = 0; sp < hw; sp++) {
                    int64_t o = off_ncs(x, n, ch, sp);
                    double xv = get(g->host[0], x->dtype, o);
                    g->ref[0][o] = wi > 0 || bi > 0 ? a * xv + b : (xv - ms) * rr;
                }
            }
        }
}

static void ref_batch(const kf_job_sig *s, gcase *g)
{
    static const char *const names[] = {"weight", "bias", "running_mean", "running_var"};
    const kf_job_tensor *x = &s->in[0];
    int wi = arg_index(s, names, 4, "weight"), bi = arg_index(s, names, 4, "bias");
    int mi = arg_index(s, names, 4, "running_mean"), vi = arg_index(s, names, 4, "running_var");
    int64_t nn = x->sizes[0], c = x->sizes[1], hw = kf_job_tensor_numel(x) / nn / c;
    double eps = (float)eps_of(s, 0);
    for (int64_t ch = 0; ch < c; ch++) {
        double m = get(g->host[mi], s->in[mi].dtype, ch);
        double is = 1.0 / sqrt(get(g->host[vi], s->in[vi].dtype, ch) + eps);
        double w = wi > 0 ? get(g->host[wi], s->in[wi].dtype, ch) : 1.0;
        double b = bi > 0 ? get(g->host[bi], s->in[bi].dtype, ch) : 0.0;
        for (int64_t n = 0; n < nn; n++)
            for (int64_t sp = 0; sp < hw; sp++) {
                int64_t o = off_ncs(x, n, ch, sp);
                g->ref[0][o] = ((get(g->host[0], x->dtype, o) - m) * is) * w + b;
            }
        if (kf_job_tensor_numel(&s->out[1]) > 0) g->ref[1][ch] = m;
        if (kf_job_tensor_numel(&s->out[2]) > 0) g->ref[2][ch] = is;
    }
}

/* ---- with a GPU ---- */

static void gcase_free(gpu *G, gcase *g)
{
    for (int i = 0; i < g->nt; i++)
        if (g->base[i]) G->d.mem_free(g->base[i]);
    for (int i = 0; i < KF_JOB_MAX_TENSORS; i++) free(g->host[i]);
    for (int j = 0; j < KF_JOB_MAX_OUTPUTS; j++) {
        free(g->ref[j]);
        free(g->got[j]);
    }
    memset(g, 0, sizeof *g);
}

/* Random inputs for case c, uploaded; the references that do not depend on the kernel. */
static void gcase_make(gpu *G, const ncase *c, gcase *g)
{
    const kf_job_sig *s = &c->sig;
    memset(g, 0, sizeof *g);
    g->nt = s->n_in + s->n_out;
    int is_bn = !strcmp(c->t->name, "cuda_batch_norm_eval");
    for (int i = 0; i < g->nt; i++) {
        const kf_job_tensor *t = i < s->n_in ? &s->in[i] : &s->out[i - s->n_in];
        g->bytes[i] = (size_t)extent(t) * (size_t)esize(t->dtype); /* strided: with the gaps */
        size_t alloc = g->bytes[i] + 16; /* +16: a misaligned view for align < 16 */
        if (!CHECK_EQ_INT(G->d.mem_alloc(&g->base[i], alloc), 0)) return;
        g->dev[i] = g->base[i];
        if (i < s->n_in && t->align > 0 && t->align < 16) g->dev[i] += (unsigned)t->align;
        if (i >= s->n_in) {
            int j = i - s->n_in;
            int64_t n = extent(t);
            g->ref[j] = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
            g->got[j] = calloc(1, g->bytes[i] + 4);
            continue;
        }
        g->host[i] = calloc(1, g->bytes[i] + 4);
        int64_t n = extent(t);
        for (int64_t e = 0; e < n; e++) {
            double v = urand() * 6.0 - 3.0;
            if (i == 0 && urand() < 0.01) v *= 40.0; /* a few large magnitudes */
            if (i == 0 && !is_bn) v += 0.5;
            if (is_bn && i == s->n_in - 1) v = 0.25 + urand() * 2.0; /* running_var > 0 */
            put(g->host[i], t->dtype, e, v);
        }
        CHECK_EQ_INT(G->d.memcpy_htod(g->dev[i], g->host[i], g->bytes[i]), 0);
    }
    if (!strncmp(c->t->name, "cuda_layer_norm", 15)) ref_row(s, g, 0);
    else if (!strncmp(c->t->name, "cuda_rms_norm", 13)) ref_row(s, g, 1);
    else if (is_bn) ref_batch(s, g);
    g->ok = 1;
}

/* bad elements of output j (prints the first), references and results both at the elements'
 * memory offsets; the memory between a strided output's elements must still hold the poison */
static long compare(const char *name, const gcase *g, const kf_job_sig *s, int j)
{
    const kf_job_tensor *t = &s->out[j];
    int64_t n = kf_job_tensor_numel(t), ext = extent(t);
    double tol = tol_of(t->dtype);
    long bad = 0;
    unsigned char *mine = ext > n ? calloc((size_t)ext, 1) : NULL;
    for (int64_t i = 0; i < n; i++) {
        int64_t o = elem_off(t, i);
        if (mine) mine[o] = 1;
        double r = round_to(t->dtype, g->ref[j][o]), v = get(g->got[j], t->dtype, o);
        int ok = isnan(r)   ? isnan(v)
                 : isinf(r) ? v == r
                            : isfinite(v) && fabs(v - r) <= tol + tol * fabs(r);
        if (!ok && bad++ == 0)
            printf("     %s: out[%d] element %lld (offset %lld) = %.8g, reference %.8g\n", name,
                   j, (long long)i, (long long)o, v, g->ref[j][o]);
    }
    const unsigned char *bytes = g->got[j];
    int es = esize(t->dtype);
    for (int64_t o = 0; mine && o < ext; o++) {
        int poisoned = 1;
        for (int k = 0; k < es; k++) poisoned &= bytes[o * es + k] == 0xff;
        if (!mine[o] && !poisoned && bad++ == 0)
            printf("     %s: out[%d] offset %lld is no element but was written\n", name, j,
                   (long long)o);
    }
    free(mine);
    return bad;
}

static int gpu_run(gpu *G, kernel_job *j, gcase *g)
{
    const ncase *c = &cases[j->c];
    const kf_job_sig *s = &c->sig;
    char name[400], err[512];
    kernel_job_name(j, name, sizeof name);
    kf_compiled *k = NULL;
    if (!CHECK_EQ_INT(nv.load(nv.self, j->blob, j->len, &j->l, 0, &k, err, sizeof err), KF_OK)) {
        printf("     %s: load: %s\n", name, err);
        return 0;
    }
    void *ptrs[KF_LAUNCH_MAX_ARGS];
    for (int i = 0; i < g->nt; i++) ptrs[i] = (void *)(uintptr_t)g->dev[i];
    for (int i = s->n_in; i < g->nt; i++)
        if (g->bytes[i]) CHECK_EQ_INT(G->d.memset_d8(g->dev[i], 0xff, g->bytes[i]), 0);
    /* a family kernel's launch-time sizes, as the plugin computes them */
    kf_dims dims[KF_LAUNCH_MAX_ARGS];
    int64_t iv[KF_LAUNCH_MAX_INTS];
    for (int i = 0; i < g->nt; i++) {
        const kf_job_tensor *t = i < s->n_in ? &s->in[i] : &s->out[i - s->n_in];
        dims[i].ndim = t->ndim, dims[i].sizes = t->sizes;
    }
    int np = g->nt;
    CHECK_EQ_INT(kf_launch_ints(&j->l, dims, g->nt, iv), KF_OK);
    for (int i = 0; i < j->l.n_ints; i++) ptrs[np++] = (void *)(intptr_t)iv[i];
    int good = 0;
    if (CHECK_EQ_INT(nv.launch(nv.self, k, ptrs, np, NULL), 0) &&
        CHECK_EQ_INT(G->d.ctx_synchronize(), 0)) {
        for (int i = s->n_in; i < g->nt; i++)
            if (g->bytes[i])
                CHECK_EQ_INT(G->d.memcpy_dtoh(g->got[i - s->n_in], g->dev[i], g->bytes[i]), 0);
        long bad = 0;
        if (!strcmp(c->t->name, "cuda_group_norm")) {
            /* statistics first, then y from them as stored */
            ref_group(s, g, 0);
            bad += compare(name, g, s, 1) + compare(name, g, s, 2);
            if (s->out[1].dtype != KF_F32) ref_group(s, g, 1);
            bad += compare(name, g, s, 0);
        } else {
            for (int o = 0; o < s->n_out; o++) bad += compare(name, g, s, o);
        }
        /* inputs unchanged */
        for (int i = 0; i < s->n_in; i++) {
            void *back = malloc(g->bytes[i] + 1);
            CHECK_EQ_INT(G->d.memcpy_dtoh(back, g->dev[i], g->bytes[i]), 0);
            bad += memcmp(back, g->host[i], g->bytes[i]) != 0;
            free(back);
        }
        good = CHECK_EQ_INT(bad, 0);
    }
    nv.unload(nv.self, k);
    return good;
}

KF_DEFINE_TEST_GPU(1)

/* Eval batch norm, channels last: a block of whole channel rows, so that each thread keeps its
 * channels' parameters in registers, and whole warps (EfficientNet's 144 channels, vectors of 8,
 * and 256 threads: 288). */
static void test_batch_rows(void)
{
    const kf_template *t = find_template("cuda_batch_norm_eval");
    if (!CHECK(t != NULL)) return;
    const int64_t chans[] = {144, 24, 64, 2048, 3072};
    const char *want[] = {"#define KF_BLOCK 288", "#define KF_BLOCK 192", "#define KF_BLOCK 256",
                          "#define KF_BLOCK 256", "#define KF_BLOCK 384"};
    for (int i = 0; i < 5; i++) {
        kf_job_sig s = sig_batch_norm(0, sig_tensor(KF_F16, SZ(8, chans[i], 7, 7), 1, 16), KF_F16, KF_F16,
                                      KF_F16, KF_F32, 0, 1e-5);
        int idx[MAX_KNOBS] = {0}; /* threads 256, vec 8, per 4, table 2, form 0 */
        char *src = NULL, *lj = NULL, err[256];
        if (CHECK_EQ_INT(t->render(&s, idx, &src, &lj, err, sizeof err), KF_OK)) {
            if (!CHECK(strstr(src, want[i]) && strstr(src, "#define KF_TABLE 2")))
                printf("     %lld channels: want \"%s\" and table 2\n", (long long)chans[i], want[i]);
        }
        free(src);
        free(lj);
    }
}

int main(void)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rng_state = 0x6e6f726du;
    test_table();
    test_refusals();
    test_refusals_strided();
    test_row_offsets();
    test_cols_start();
    test_row_start();
    test_batch_rows();
    make_cases();
    test_render_all();
    nvrtc_levels(&nv, make_jobs, jobs, &n_jobs, test_gpu);
    free_jobs(jobs, n_jobs);
    return test_done(&t0, "templates_cuda_norm");
}
