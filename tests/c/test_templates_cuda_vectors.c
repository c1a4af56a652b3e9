/* The CUDA templates move their data with full-width vector accesses (no GPU needed).
 *
 * A guard for a regression we had: a memcpy between a raw vector and an array of __nv_bfloat16
 * made NVRTC emit byte loads (ld.global.nc.u8) instead of one 16-byte load, and a plain struct
 * store of a uint4 became four st.global.u32. Every template now moves vectors through kf_vec
 * (forge/templates/cuda.c: kf_ldg / kf_stcs / kf_stwb on 32-bit words).
 *
 * Cases: representative signatures of EVERY nvrtc template of kf_builtin_templates (f32, f16,
 * bf16; in place; broadcasting; half_to_float; channels last; clusters; tails) with 16-byte
 * vectors (vec 4 for f32, 8 for f16/bf16), each with its knobs as given and with each knob that
 * moves data (not vec, not the team sizes, not transpose_tile) set to each of its other values.
 * Every kernel is compiled to PTX with NVRTC (opened with dlopen; the backend's options,
 * compile/compiler_nvrtc.c, with compute_90 for its sm_90, which yields no PTX) and its PTX must
 * have:
 *  (1) no global (or generic) load or store narrower than the smallest element type of the
 *      signature: no u8/s8/b8 ever, no 16-bit access in an all-f32 signature;
 *  (2) where the case vectorizes (the effective vector width in the source is the knob's), at
 *      least one 16-byte (.v4 of 32 bits) global load and one 16-byte global store.
 * Cases a template does not vectorize by design (2-byte alignment, an input aligned to 4) are
 * held to (1) only. A control kernel in the regression's shape must fail (1), so the scan is
 * known to see byte accesses as this NVRTC writes them.
 * SKIP (exit 0) for the compile part when NVRTC or the CUDA headers are missing. */
#include <dlfcn.h>
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
#include "forge/templates/template.h"
#include "tests/c/nvrtc_find.h"

#define MAX_CASES 80

/* ---- signatures ---- */

#define NONE SIG_NONE
#define NARGS(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
/* contiguous, or channels last (dim 1 innermost) when cl */
#define T(dt, cl, al, ...) sig_tensor(dt, NARGS(__VA_ARGS__), (int64_t[]){__VA_ARGS__}, cl, al)

/* unary ops with gelu "tanh" and clamp_min's min -0.25; binary ops with a float alpha (0: none) */
static kf_job_sig unary_sig(const char *op, kf_job_tensor x)
{
    kf_job_sig s = sig_unary(op, x);
    if (!strcmp(op, "aten::gelu"))
        snprintf(sig_add_scalar(&s, "approximate", 's')->s, sizeof s.scalars[0].s, "tanh");
    if (!strncmp(op, "aten::clamp_min", 15)) sig_add_scalar(&s, "min", 'd')->d = -0.25;
    return s;
}
static kf_job_sig binary_sig(const char *op, kf_job_tensor a, kf_job_tensor b, kf_job_tensor out,
                             double alpha)
{
    return sig_binary(op, a, b, out, alpha != 0 ? 'd' : 0, alpha);
}

/* the norms with eps 1e-5: layer_norm / rms_norm over the last dim, group_norm with stats of
 * x's dtype, batch_norm with f32 saved stats */
static kf_job_sig row_sig(int rms, kf_job_tensor x, int wdt, int bdt, int statdt)
{
    return sig_norm_row(rms, x, 1, wdt, bdt, statdt, 1e-5);
}
/* the same with y contiguous (eager's y for any x) */
static kf_job_sig row_sig_yc(int rms, kf_job_tensor x, int wdt, int bdt, int statdt)
{
    kf_job_sig s = row_sig(rms, x, wdt, bdt, statdt);
    s.out[0] = sig_tensor(x.dtype, x.ndim, x.sizes, 0, 0);
    return s;
}
#define ST(...) (int64_t[]){__VA_ARGS__}
static kf_job_sig gn_sig(kf_job_tensor x, int64_t groups, int wdt, int bdt)
{
    return sig_group_norm(x, groups, wdt, bdt, x.dtype, 1e-5);
}
static kf_job_sig bn_sig(int legit, kf_job_tensor x, int wdt, int bdt, int rdt, int64_t save_n)
{
    return sig_batch_norm(legit, x, wdt, bdt, rdt, KF_F32, save_n, 1e-5);
}

/* ---- the cases ---- */

enum { VEC_NONE = 0, VEC_LD = 1, VEC_ST = 2, VEC_BOTH = 3 };

typedef struct vcase {
    const kf_template *t;
    kf_job_sig sig;
    char label[200];
    int idx[MAX_KNOBS];
    char knobs[160];  /* name=value ... as rendered */
    int expect;       /* VEC_*: the 16-byte accesses that must be there */
    int want_vw;      /* the effective vector width the source must state (expect != 0) */
    int min_bits;     /* narrowest element of the signature */
    char *src;        /* rendered with idx */
} vcase;

static vcase cases[MAX_CASES];
static int n_cases;

/* What is compiled: each case as given (variant 0), then with one knob that moves data
 * (moves_data) set to each of its other values (identical sources once). */
typedef struct job {
    int c;
    int idx[MAX_KNOBS];
    int variant;
    int vw; /* effective vector width in the source */
    char *src, *ptx, *log;
} job;

#define MAX_JOBS 1024
static job jobs[MAX_JOBS];
static int n_jobs;

static void knob_text(const kf_template *t, const int *idx, char *out, size_t cap)
{
    int p = 0;
    out[0] = 0;
    for (int k = 0; k < t->n_knobs && p >= 0 && (size_t)p < cap; k++)
        p += snprintf(out + p, cap - (size_t)p, "%s%s=%d", k ? " " : "", t->knobs[k].name,
                      t->knobs[k].values[idx[k]]);
}

static int src_vw(const char *src)
{
    /* the effective value: the norms #undef and redefine the knobs they clamp */
    long long vw = src_define(src, "KF_VW", -1); /* eltwise, softmax */
    return (int)(vw >= 0 ? vw : src_define(src, "KF_VEC", -1)); /* the norms */
}

/* Add a case of template `tname`: knobs "name=value ..." (the others at the template's start,
 * else their first value); expect VEC_*; a note for the label. */
static void add_case(const char *tname, kf_job_sig sig, const char *knobs, int expect,
                     const char *note)
{
    if (!CHECK(n_cases < MAX_CASES)) return;
    vcase *c = &cases[n_cases];
    memset(c, 0, sizeof *c);
    c->t = find_template(tname);
    c->sig = sig;
    c->expect = expect;
    int p = snprintf(c->label, sizeof c->label, "%s", sig.op + 6);
    for (int i = 0; i < sig.n_in && p < (int)sizeof c->label; i++) {
        const kf_job_tensor *x = &sig.in[i];
        p += snprintf(c->label + p, sizeof c->label - (size_t)p, "%s%s[", i ? ", " : " ",
                      dname(x->dtype));
        for (int d = 0; d < x->ndim && p < (int)sizeof c->label; d++)
            p += snprintf(c->label + p, sizeof c->label - (size_t)p, "%s%lld", d ? "," : "",
                          (long long)x->sizes[d]);
        if (p < (int)sizeof c->label)
            p += snprintf(c->label + p, sizeof c->label - (size_t)p, "]");
    }
    if (p < (int)sizeof c->label)
        snprintf(c->label + p, sizeof c->label - (size_t)p, " -> %s%s%s", dname(sig.out[0].dtype),
                 note && *note ? "; " : "", note ? note : "");
    if (!CHECK(c->t != NULL)) {
        printf("     no template %s\n", tname);
        return;
    }
    if (!CHECK(c->t->applies(&c->sig))) {
        printf("     %s does not apply to %s\n", tname, c->label);
        return;
    }
    c->min_bits = 32;
    for (int i = 0; i < sig.n_in; i++)
        if (esize(sig.in[i].dtype) * 8 < c->min_bits)
            c->min_bits = esize(sig.in[i].dtype) * 8;
    for (int j = 0; j < sig.n_out; j++)
        if (esize(sig.out[j].dtype) * 8 < c->min_bits)
            c->min_bits = esize(sig.out[j].dtype) * 8;

    if (c->t->start) c->t->start(&c->sig, c->idx);
    char buf[160];
    snprintf(buf, sizeof buf, "%s", knobs);
    for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok;
         tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!CHECK(eq != NULL)) continue;
        *eq = 0;
        int v = atoi(eq + 1), found = 0;
        for (int k = 0; k < c->t->n_knobs && !found; k++) {
            if (strcmp(c->t->knobs[k].name, tok)) continue;
            for (int j = 0; j < c->t->knobs[k].n_values && !found; j++)
                if (c->t->knobs[k].values[j] == v) c->idx[k] = j, found = 1;
        }
        if (!CHECK(found)) printf("     %s has no knob %s with value %d\n", tname, tok, v);
        if (!strcmp(tok, "vec")) c->want_vw = v;
    }
    knob_text(c->t, c->idx, c->knobs, sizeof c->knobs);

    char *lj = NULL, err[256];
    kf_status st = c->t->render(&c->sig, c->idx, &c->src, &lj, err, sizeof err);
    free(lj);
    if (!CHECK_EQ_INT(st, KF_OK)) {
        printf("     %s %s: %s\n", tname, c->label, err);
        return;
    }
    /* the case must ask for 16-byte vectors, and where it expects them the template must not
     * have clamped them (else the case, not the template, is wrong) */
    int vw = src_vw(c->src);
    if (expect) {
        int in_bytes = c->want_vw * esize(sig.in[0].dtype);
        if (!CHECK_EQ_INT(in_bytes, 16) || !CHECK_EQ_INT(vw, c->want_vw))
            printf("     %s %s [%s]: effective vector width %d\n", tname, c->label, c->knobs, vw);
    }
    n_cases++;
}

static void make_cases(void)
{
    kf_job_tensor a;

    /* softmax: rows (one pass, two passes, staged, a cluster per row), columns, half_to_float */
    add_case("cuda_row_softmax", sig_softmax("aten::_softmax", T(KF_F32, 0, 16, 64, 1024), -1, 0),
             "threads=256 rows=2 vec=4 strategy=3 split=1", VEC_BOTH, "dim -1, staged");
    add_case("cuda_row_softmax",
             sig_softmax("aten::_softmax", T(KF_BF16, 0, 16, 64, 4096), -1, 0),
             "threads=512 rows=1 vec=8 strategy=0 split=1", VEC_BOTH, "dim -1, two passes");
    add_case("cuda_row_softmax",
             sig_softmax("aten::_log_softmax", T(KF_F16, 0, 16, 16, 8192), -1, 0),
             "threads=256 rows=1 vec=8 strategy=1 split=4", VEC_BOTH, "dim -1, cluster of 4");
    add_case("cuda_row_softmax", sig_softmax("aten::_softmax", T(KF_BF16, 0, 16, 128, 1000), -1, 1),
             "threads=128 rows=4 vec=8 strategy=2 split=1", VEC_BOTH,
             "half_to_float: 32 bytes out a vector");
    add_case("cuda_row_softmax",
             sig_softmax("aten::_log_softmax", T(KF_F16, 0, 16, 8, 2048), -1, 1),
             "threads=256 rows=1 vec=8 strategy=0 split=2", VEC_BOTH,
             "half_to_float, cluster of 2");
    add_case("cuda_row_softmax", sig_softmax("aten::_softmax", T(KF_F32, 0, 16, 8, 128, 64), 1, 0),
             "threads=256 rows=8 vec=4 strategy=1 split=1", VEC_BOTH, "columns (dim 1)");
    add_case("cuda_row_softmax",
             sig_softmax("aten::_softmax", T(KF_BF16, 0, 16, 4, 256, 128), -2, 0),
             "threads=256 rows=16 vec=8 strategy=3 split=1", VEC_BOTH, "columns, staged");

    /* unary: flat, channels last, in place, a tail, and 2-byte alignment (no vectors) */
    add_case("cuda_eltwise_unary", unary_sig("aten::gelu", T(KF_F32, 0, 16, 1 << 20)),
             "vec=4 unroll=2 threads=256 grid=0", VEC_BOTH, "tanh");
    add_case("cuda_eltwise_unary", unary_sig("aten::silu", T(KF_BF16, 0, 16, 4096, 1024)),
             "vec=8 unroll=4 threads=256 grid=2", VEC_BOTH, "grid-stride");
    add_case("cuda_eltwise_unary", unary_sig("aten::relu_", T(KF_F16, 0, 16, 1000, 512)),
             "vec=8 unroll=2 threads=512 grid=0", VEC_BOTH, "in place");
    add_case("cuda_eltwise_unary", unary_sig("aten::relu_", T(KF_F32, 0, 16, 333, 65)),
             "vec=4 unroll=1 threads=128 grid=1", VEC_BOTH, "in place, tail of 1");
    add_case("cuda_eltwise_unary", unary_sig("aten::clamp_min", T(KF_BF16, 0, 16, 37, 1001)),
             "vec=8 unroll=2 threads=256 grid=0", VEC_BOTH, "tail of 5");
    add_case("cuda_eltwise_unary", unary_sig("aten::relu", T(KF_F16, 1, 16, 8, 64, 16, 16)),
             "vec=8 unroll=1 threads=256 grid=0", VEC_BOTH, "channels last");
    add_case("cuda_eltwise_unary", unary_sig("aten::gelu", T(KF_BF16, 0, 2, 64, 96)),
             "vec=8 unroll=2 threads=256 grid=0", VEC_NONE, "align 2: no vectors by design");

    add_case("cuda_eltwise_unary", sig_pow(T(KF_F32, 0, 16, 4, 1024, 2304), 'i', 2),
             "vec=4 unroll=2 threads=256 grid=0", VEC_BOTH, "pow 2");
    /* a strided input: Qwen 3.5's silu of rows 1027 apart (element loads, vector stores); in
     * place into rows with gaps (vectors both ways) */
    a = sig_tensor_strided(KF_BF16, 3, (int64_t[]){4, 8192, 1024}, ST(8413184, 1027, 1), 16);
    {
        kf_job_sig s = unary_sig("aten::silu", a);
        s.out[0] = T(KF_BF16, 0, 0, 4, 8192, 1024);
        add_case("cuda_eltwise_unary", s, "vec=8 unroll=2 threads=256 grid=0", VEC_ST,
                 "rows 1027 apart");
    }
    a = sig_tensor_strided(KF_F16, 3, (int64_t[]){4, 40, 64}, ST(3840, 96, 1), 16);
    add_case("cuda_eltwise_unary", unary_sig("aten::relu_", a), "vec=8 unroll=2 threads=256 grid=0",
             VEC_BOTH, "in place into rows with gaps");

    /* copy_: same dtype, a cast (16-byte stores of f32, 8-byte loads of bf16), a transposed
     * source (gathered: only the stores are vectors) */
    a = T(KF_BF16, 0, 16, 64, 1024);
    add_case("cuda_eltwise_copy", sig_copy(a, a), "vec=8 unroll=2 threads=256 grid=0", VEC_BOTH,
             "same dtype");
    add_case("cuda_eltwise_copy", sig_copy(T(KF_F32, 0, 16, 64, 1024), a),
             "vec=4 unroll=2 threads=256 grid=0", VEC_ST, "cast");
    {
        kf_job_tensor at = a;
        at.strides[0] = 1, at.strides[1] = 64; /* a transposed view: gathered */
        add_case("cuda_eltwise_copy", sig_copy(a, at),
                 "vec=8 unroll=2 threads=256 grid=0 transpose_tile=0", VEC_ST,
                 "src transposed (gather)");
        add_case("cuda_eltwise_copy", sig_copy(a, at), "threads=256 transpose_tile=64", VEC_NONE,
                 "src transposed, tiles through shared memory");
    }

    /* into a self with gaps: Qwen 3.5's KV-cache slice (vectors both ways), its [64,128] blocks
     * transposed into a gapped buffer (loop: vector stores along self's contiguous dim, src
     * gathered; tiles: element accesses) */
    a = sig_tensor_strided(KF_BF16, 4, (int64_t[]){4, 8, 1024, 256},
                           ST(8388608, 1048576, 256, 1), 16);
    add_case("cuda_eltwise_copy", sig_copy(a, T(KF_BF16, 0, 16, 4, 8, 1024, 256)),
             "vec=8 unroll=2 threads=256 grid=0", VEC_BOTH, "KV-cache slice");
    a = sig_tensor_strided(KF_F32, 4, (int64_t[]){4, 32, 64, 128}, ST(4194304, 131072, 1, 64), 16);
    add_case("cuda_eltwise_copy", sig_copy(a, T(KF_F32, 0, 16, 4, 32, 64, 128)),
             "vec=4 unroll=2 threads=256 grid=0 transpose_tile=0", VEC_ST,
             "gapped self transposed (gather)");
    add_case("cuda_eltwise_copy", sig_copy(a, T(KF_F32, 0, 16, 4, 32, 64, 128)),
             "threads=256 transpose_tile=32", VEC_NONE, "gapped self transposed, tiles");

    /* mean.dim: rows (one scalar store a row), the channels_last avgpool (columns) */
    add_case("cuda_reduce_mean", sig_mean(T(KF_F32, 0, 16, 8, 2304), 1, (int64_t[]){-1}, 1),
             "threads=256 rows=2 vec=4 unroll=4", VEC_LD, "rows: a scalar store a row");
    add_case("cuda_reduce_mean",
             sig_mean(T(KF_F16, 1, 16, 8, 256, 7, 7), 2, (int64_t[]){-1, -2}, 1),
             "threads=256 rows=64 vec=8 unroll=4", VEC_BOTH, "channels_last avgpool: columns");
    add_case("cuda_reduce_mean", sig_mean(T(KF_BF16, 0, 2, 33, 40), 1, (int64_t[]){-1}, 1),
             "threads=128 rows=4 vec=8 unroll=2", VEC_NONE, "align 2: no vectors by design");

    /* max_pool2d: channels last (vectors along C, int64 indices in 16-byte pairs); NCHW reads
     * along W, element by element by design */
    add_case("cuda_max_pool2d",
             sig_max_pool2d(T(KF_F16, 1, 16, 8, 64, 14, 14), 3, 3, 2, 2, 1, 1, 1, 1, 0, 1),
             "threads=256 vec=8 wout=2 grid=0 store=0", VEC_BOTH, "channels last, k3 s2 p1");
    add_case("cuda_max_pool2d",
             sig_max_pool2d(T(KF_F32, 1, 16, 4, 32, 9, 9), 3, 3, 2, 2, 1, 1, 1, 1, 0, 1),
             "threads=128 vec=4 wout=1 grid=0 store=1", VEC_BOTH, "channels last f32");
    add_case("cuda_max_pool2d",
             sig_max_pool2d(T(KF_BF16, 0, 16, 4, 16, 12, 12), 2, 2, 2, 2, 0, 0, 1, 1, 0, 0),
             "threads=256 vec=1 wout=2 grid=0 store=0", VEC_NONE, "NCHW: along W");

    /* binary: same shape, broadcast with the innermost dim contiguous in both inputs, a bias
     * broadcast per channel (other read as one value), a gathered (transposed) input, in place */
    a = T(KF_F32, 0, 16, 256, 1024);
    add_case("cuda_eltwise_binary", binary_sig("aten::add.Tensor", a, a, a, 0.5),
             "vec=4 unroll=2 threads=256 grid=0", VEC_BOTH, "alpha 0.5");
    a = T(KF_BF16, 0, 16, 8, 128, 768);
    add_case("cuda_eltwise_binary",
             binary_sig("aten::mul.Tensor", a, T(KF_BF16, 0, 16, 768), a, 0),
             "vec=8 unroll=2 threads=256 grid=0", VEC_BOTH, "broadcast [B,S,H] * [H]");
    add_case("cuda_eltwise_binary",
             binary_sig("aten::add.Tensor", T(KF_F16, 0, 16, 16, 1, 512), T(KF_F16, 0, 16, 4, 512),
                        T(KF_F16, 0, 16, 16, 4, 512), 0),
             "vec=8 unroll=1 threads=128 grid=0", VEC_BOTH,
             "both inputs broadcast, inner dim dense");
    a = T(KF_F32, 0, 16, 4, 64, 16, 16);
    add_case("cuda_eltwise_binary",
             binary_sig("aten::add.Tensor", a, T(KF_F32, 0, 16, 64, 1, 1), a, 0),
             "vec=4 unroll=2 threads=256 grid=0", VEC_BOTH, "[N,C,H,W] + [C,1,1]");
    a = T(KF_BF16, 0, 16, 64, 48);
    {
        kf_job_tensor bt = a;
        bt.strides[0] = 1, bt.strides[1] = 64; /* a transposed view: gathered */
        add_case("cuda_eltwise_binary", binary_sig("aten::add.Tensor", a, bt, a, 0),
                 "vec=8 unroll=2 threads=256 grid=0 transpose_tile=0", VEC_BOTH,
                 "other transposed (gather)");
        add_case("cuda_eltwise_binary", binary_sig("aten::add.Tensor", a, bt, a, 0),
                 "threads=256 transpose_tile=64", VEC_NONE,
                 "other transposed, tiles through shared memory");
    }
    {   /* MMDiT's residual add: self a transposed view, out like self, other contiguous */
        kf_job_tensor at = T(KF_BF16, 0, 16, 2, 256, 192), bc = at;
        at.strides[1] = 1, at.strides[2] = 256;
        add_case("cuda_eltwise_binary", binary_sig("aten::add.Tensor", at, bc, at, 0),
                 "threads=256 transpose_tile=32", VEC_NONE, "self transposed, tiles");
    }
    a = T(KF_F16, 0, 16, 64, 1024);
    add_case("cuda_eltwise_binary", binary_sig("aten::add_.Tensor", a, a, a, 0),
             "vec=8 unroll=4 threads=256 grid=1", VEC_BOTH, "in place");
    a = T(KF_BF16, 1, 16, 4, 64, 8, 8);
    add_case("cuda_eltwise_binary", binary_sig("aten::mul_.Tensor", a, a, a, 0),
             "vec=8 unroll=2 threads=256 grid=0", VEC_BOTH, "in place, channels last");
    a = T(KF_F32, 0, 16, 32, 100);
    add_case("cuda_eltwise_binary",
             binary_sig("aten::mul.Tensor", a, T(KF_F32, 0, 4, 32, 100), a, 0),
             "vec=4 unroll=2 threads=256 grid=0", VEC_NONE, "other aligned to 4: no vectors");

    /* layer_norm / rms_norm: every cache mode, stats, f32 parameters of a 16-bit input */
    add_case("cuda_layer_norm", row_sig(0, T(KF_BF16, 0, 16, 64, 4096), KF_BF16, KF_BF16, KF_F32),
             "tpr=256 rpb=1 vec=8 cache=1 stats=0 reduce=0", VEC_BOTH, "w b, registers");
    add_case("cuda_layer_norm", row_sig(0, T(KF_F32, 0, 16, 128, 1024), KF_F32, KF_F32, KF_F32),
             "tpr=128 rpb=2 vec=4 cache=0 stats=1 reduce=1", VEC_BOTH, "w b, re-read, Welford");
    add_case("cuda_layer_norm", row_sig(0, T(KF_F16, 0, 16, 32, 768), KF_F32, KF_F32, KF_F16),
             "tpr=32 rpb=4 vec=8 cache=2 stats=2 reduce=0", VEC_BOTH,
             "f32 w b, f16 stats, shared memory");
    add_case("cuda_layer_norm", row_sig(0, T(KF_BF16, 0, 2, 33, 200), NONE, NONE, KF_F32),
             "tpr=64 rpb=1 vec=8 cache=1 stats=0 reduce=0", VEC_NONE,
             "align 2: no vectors by design");
    add_case("cuda_rms_norm", row_sig(1, T(KF_BF16, 0, 16, 16, 4096), KF_BF16, NONE, KF_F32),
             "tpr=512 rpb=1 vec=8 cache=1 reduce=0", VEC_BOTH, "w");
    add_case("cuda_rms_norm", row_sig(1, T(KF_F32, 0, 16, 64, 2048), NONE, NONE, KF_F32),
             "tpr=256 rpb=2 vec=4 cache=0 reduce=1", VEC_BOTH, "no w");
    add_case("cuda_rms_norm", row_sig(1, T(KF_F16, 0, 16, 8, 1024), KF_F16, NONE, KF_F32),
             "tpr=128 rpb=8 vec=8 cache=2 reduce=0", VEC_BOTH, "w, shared memory");
    /* strided rows: q/k heads ([B, S, H, D] seen as [B, H, S, D]), a slice with y contiguous */
    a = sig_tensor_strided(KF_BF16, 4, (int64_t[]){2, 8, 64, 64}, ST(32768, 64, 512, 1), 16);
    add_case("cuda_rms_norm", row_sig(1, a, KF_BF16, NONE, KF_F32),
             "tpr=32 rpb=8 vec=8 cache=1 reduce=0", VEC_BOTH, "q/k heads, y like x");
    a = sig_tensor_strided(KF_F32, 3, (int64_t[]){4, 16, 256}, ST(4608, 288, 1), 16);
    add_case("cuda_layer_norm", row_sig_yc(0, a, KF_F32, KF_F32, KF_F32),
             "tpr=64 rpb=4 vec=4 cache=0 stats=1 reduce=1", VEC_BOTH, "slice, y contiguous");

    /* a strided normalized dim ([B, C, S] seen as [B, S, C]): vectors of adjacent rows; y like
     * x, or contiguous (16-byte stores along its rows from the shared-memory tile) */
    a = sig_tensor_strided(KF_BF16, 3, (int64_t[]){2, 512, 384}, ST(196608, 1, 512), 16);
    add_case("cuda_layer_norm_cols", row_sig_yc(0, a, KF_BF16, KF_BF16, KF_F32),
             "threads=256 rows=64 vec=8 unroll=4 tile=64 stats=0", VEC_BOTH, "y contiguous");
    add_case("cuda_layer_norm_cols", row_sig(0, a, NONE, NONE, KF_F32),
             "threads=128 rows=128 vec=8 unroll=2 tile=64 stats=2", VEC_BOTH, "y like x");
    a = sig_tensor_strided(KF_F32, 3, (int64_t[]){2, 256, 64}, ST(16384, 1, 256), 16);
    add_case("cuda_rms_norm_cols", row_sig(1, a, KF_F32, NONE, KF_F32),
             "threads=256 rows=64 vec=4 unroll=4 tile=64", VEC_BOTH, "y like x");
    add_case("cuda_rms_norm_cols", row_sig_yc(1, a, KF_F32, NONE, KF_F32),
             "threads=512 rows=32 vec=4 unroll=8 tile=32", VEC_BOTH, "y contiguous");
    a = sig_tensor_strided(KF_F16, 3, (int64_t[]){2, 37, 30}, ST(1110, 1, 37), 16);
    add_case("cuda_layer_norm_cols", row_sig_yc(0, a, KF_F16, KF_F16, KF_F32),
             "threads=256 rows=64 vec=8 unroll=4 tile=64 stats=1", VEC_NONE,
             "runs of 37: no vectors by design");

    /* group_norm: NCHW and channels last, clusters, registers / staging / re-reads */
    add_case("cuda_group_norm", gn_sig(T(KF_BF16, 0, 16, 2, 64, 16, 16), 8, KF_BF16, KF_BF16),
             "tpg=256 gpb=1 split=1 vec=8 regs=1 stage=0 stats=0 reduce=0", VEC_BOTH, "w b");
    add_case("cuda_group_norm", gn_sig(T(KF_F32, 0, 16, 2, 32, 32, 32), 4, KF_F32, KF_F32),
             "tpg=256 gpb=1 split=4 vec=4 regs=0 stage=64 stats=1 reduce=1", VEC_BOTH,
             "w b, cluster of 4, staged");
    add_case("cuda_group_norm", gn_sig(T(KF_F16, 1, 16, 4, 64, 8, 8), 8, KF_F16, KF_F16),
             "tpg=128 gpb=2 split=1 vec=8 regs=0 stage=0 stats=2 reduce=0", VEC_BOTH,
             "channels last, w b (a, b table)");
    add_case("cuda_group_norm", gn_sig(T(KF_F32, 1, 16, 2, 32, 8, 8), 4, NONE, NONE),
             "tpg=64 gpb=1 split=2 vec=4 regs=1 stage=32 stats=0 reduce=0", VEC_BOTH,
             "channels last, cluster of 2, no w b");
    add_case("cuda_group_norm", gn_sig(T(KF_BF16, 1, 16, 2, 128, 5, 5), 16, KF_F32, NONE),
             "tpg=32 gpb=4 split=1 vec=8 regs=0 stage=96 stats=1 reduce=1", VEC_BOTH,
             "channels last, f32 w");

    /* eval batch norm: both ops, layouts, parameter tables, folded form, save outputs */
    add_case("cuda_batch_norm_eval",
             bn_sig(0, T(KF_F16, 1, 16, 8, 64, 16, 16), KF_F16, KF_F16, KF_F16, 0),
             "threads=256 vec=8 per=4 table=2 form=0", VEC_BOTH, "channels last, registers");
    add_case("cuda_batch_norm_eval",
             bn_sig(1, T(KF_F32, 0, 16, 4, 32, 14, 14), KF_F32, KF_F32, KF_F32, 32),
             "threads=512 vec=4 per=2 table=1 form=1", VEC_BOTH, "table, folded, save [C]");
    add_case("cuda_batch_norm_eval",
             bn_sig(1, T(KF_BF16, 0, 16, 8, 128, 8, 8), NONE, KF_BF16, KF_F32, 128),
             "threads=128 vec=8 per=8 table=0 form=0", VEC_BOTH, "b only, f32 running stats");
    add_case("cuda_batch_norm_eval",
             bn_sig(0, T(KF_F32, 1, 16, 4, 96, 7, 7), KF_F32, NONE, KF_F32, 96),
             "threads=256 vec=4 per=1 table=2 form=1", VEC_BOTH, "channels last, save [C]");
    add_case("cuda_batch_norm_eval",
             bn_sig(0, T(KF_BF16, 0, 2, 2, 24, 9), NONE, KF_BF16, KF_F32, 0),
             "threads=256 vec=8 per=4 table=1 form=0", VEC_NONE, "align 2: no vectors by design");

    /* cat: MMDiT's joint attention along dim 2 through head views, RoPE's halves along the
     * last dim (one a slice), transposed inputs (gathered: only the stores are vectors), odd
     * lengths along the innermost dim (no vectors by design) */
    kf_job_tensor xs[2];
    xs[0] = sig_tensor_strided(KF_BF16, 4, (int64_t[]){2, 24, 256, 64}, ST(393216, 64, 1536, 1),
                               16);
    xs[1] = sig_tensor_strided(KF_BF16, 4, (int64_t[]){2, 24, 77, 64}, ST(118272, 64, 1536, 1),
                               16);
    add_case("cuda_cat", sig_cat(2, xs, 2), "vec=8 unroll=2 threads=256 by_part=1", VEC_BOTH,
             "joint attention, blocks per input");
    xs[0] = T(KF_F32, 0, 16, 4, 64, 8, 64);
    xs[1] = sig_tensor_strided(KF_F32, 4, (int64_t[]){4, 64, 8, 64}, ST(65536, 1024, 128, 1), 16);
    add_case("cuda_cat", sig_cat(2, xs, -1), "vec=4 unroll=4 threads=128 by_part=0", VEC_BOTH,
             "rotate_half, inputs by coordinate");
    xs[0] = sig_tensor_strided(KF_F16, 2, (int64_t[]){64, 32}, ST(1, 64), 16);
    xs[1] = sig_tensor_strided(KF_F16, 2, (int64_t[]){64, 16}, ST(1, 64), 16);
    add_case("cuda_cat", sig_cat(2, xs, 1), "vec=8 unroll=2 threads=256 by_part=1", VEC_ST,
             "transposed inputs (gather)");
    xs[0] = T(KF_BF16, 0, 16, 24, 5);
    xs[1] = T(KF_BF16, 0, 16, 24, 7);
    add_case("cuda_cat", sig_cat(2, xs, 1), "vec=8 unroll=2 threads=256 by_part=1", VEC_NONE,
             "lengths 5 and 7: no vectors by design");

    {   /* triangular solve: B and X column-major per matrix (eager's X), rows as float4 */
        kf_job_sig s = sig_of("aten::linalg_solve_triangular");
        s.in[s.n_in++] = T(KF_F32, 0, 16, 8, 64, 64);
        s.in[s.n_in++] = sig_tensor_strided(KF_F32, 3, (int64_t[]){8, 64, 128},
                                            ST(8192, 1, 64), 16);
        s.out[s.n_out++] = s.in[1];
        sig_add_scalar(&s, "upper", 'b')->i = 0;
        sig_add_scalar(&s, "left", 'b')->i = 1;
        sig_add_scalar(&s, "unitriangular", 'b')->i = 1;
        add_case("cuda_solve_triangular", s, "threads=128 vec=4 pitch=4 minblocks=1", VEC_BOTH,
                 "column-major B and X");
    }
    {   /* Qwen's causal conv1d: 16-byte loads along W, 16-byte output vectors */
        kf_job_sig s = sig_of("aten::_conv_depthwise2d");
        s.in[s.n_in++] = T(KF_BF16, 0, 16, 4, 8192, 1, 1024);
        s.in[s.n_in++] = T(KF_BF16, 0, 16, 8192, 1, 1, 4);
        kf_job_scalar *l = sig_add_scalar(&s, "kernel_size", 'l');
        l->n = 2, l->v[0] = 1, l->v[1] = 4;
        sig_add_scalar(&s, "bias", 'n');
        l = sig_add_scalar(&s, "stride", 'l');
        l->n = 2, l->v[0] = 1, l->v[1] = 1;
        l = sig_add_scalar(&s, "padding", 'l');
        l->n = 2, l->v[0] = 0, l->v[1] = 3;
        l = sig_add_scalar(&s, "dilation", 'l');
        l->n = 2, l->v[0] = 1, l->v[1] = 1;
        s.out[s.n_out++] = T(KF_BF16, 0, 0, 4, 8192, 1, 1027);
        add_case("cuda_depthwise_conv2d", s, "threads=256 vec=8 grid=0 store=0", VEC_BOTH,
                 "Qwen causal conv1d");
    }
}

/* Every nvrtc template of the table has cases, and at least one that vectorizes; the generic
 * templates render element accesses only (their tests: test_templates_pointwise,
 * test_templates_reduce_generic, test_templates_chain). */
static void test_coverage(void)
{
    for (int i = 0; kf_builtin_templates[i]; i++) {
        const kf_template *t = kf_builtin_templates[i];
        if (strcmp(t->backend, "nvrtc") || !strcmp(t->name, "cuda_pointwise") ||
            !strcmp(t->name, "cuda_reduce_generic") || !strcmp(t->name, "cuda_gather") ||
            !strcmp(t->name, "cuda_chain"))
            continue;
        int n = 0, nv = 0;
        for (int c = 0; c < n_cases; c++)
            if (cases[c].t == t) n++, nv += cases[c].expect == VEC_BOTH;
        if (!CHECK(n > 0 && nv > 0)) printf("     template %s has no vector case here\n", t->name);
    }
}

static void add_job(int ci, const int *idx, int variant, char *src)
{
    for (int o = n_jobs - 1; o >= 0 && jobs[o].c == ci; o--)
        if (!strcmp(jobs[o].src, src)) { /* a clamped knob: the same kernel again */
            free(src);
            return;
        }
    if (!CHECK(n_jobs < MAX_JOBS)) {
        free(src);
        return;
    }
    job *j = &jobs[n_jobs++];
    memset(j, 0, sizeof *j);
    j->c = ci;
    memcpy(j->idx, idx, sizeof j->idx);
    j->variant = variant;
    j->vw = src_vw(src);
    j->src = src;
}

/* Knobs swept around each case: not vec (the width under test), not the team sizes, which
 * change the reductions, not how data moves (the cases themselves use several of them), and not
 * transpose_tile (copy_, binary), a strategy with element accesses by design (cases of its
 * own). */
static int moves_data(const char *knob)
{
    static const char *const fixed[] = {"vec", "threads", "rows", "tpr", "rpb", "tpg", "gpb",
                                        "transpose_tile"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strcmp(knob, fixed[i])) return 0;
    return 1;
}

static void make_jobs(void)
{
    for (int ci = 0; ci < n_cases; ci++) {
        vcase *c = &cases[ci];
        if (!c->src) continue;
        add_job(ci, c->idx, 0, c->src);
        c->src = NULL; /* the job owns it */
        for (int k = 0; k < c->t->n_knobs; k++) {
            if (!moves_data(c->t->knobs[k].name)) continue;
            for (int v = 0; v < c->t->knobs[k].n_values; v++) {
                if (v == c->idx[k]) continue;
                int idx[MAX_KNOBS];
                memcpy(idx, c->idx, sizeof idx);
                idx[k] = v;
                char *src = NULL, *lj = NULL, err[256], kn[160];
                kf_status st = c->t->render(&c->sig, idx, &src, &lj, err, sizeof err);
                free(lj);
                if (!CHECK_EQ_INT(st, KF_OK)) {
                    knob_text(c->t, idx, kn, sizeof kn);
                    printf("     %s %s [%s]: %s\n", c->t->name, c->label, kn, err);
                    continue;
                }
                add_job(ci, idx, 1, src);
            }
        }
    }
}

/* ---- PTX ---- */

typedef struct ptx_access {
    int store;   /* 0 ld, 1 st */
    int space;   /* 'g' global, 0 generic; others are not counted */
    int vec;     /* 1, 2, 4, 8 */
    int bits;    /* of one component */
} ptx_access;

/* One PTX line as a ld/st: 1 and *a when it is one. */
static int ptx_parse(const char *line, ptx_access *a)
{
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '@') { /* a predicate: @%p1 or @!%p1 */
        while (*p && *p != ' ' && *p != '\t') p++;
        while (*p == ' ' || *p == '\t') p++;
    }
    char op[96];
    size_t n = 0;
    while (p[n] && p[n] != ' ' && p[n] != '\t' && p[n] != ';' && n + 1 < sizeof op) n++;
    memcpy(op, p, n);
    op[n] = 0;
    if (strncmp(op, "ld.", 3) && strncmp(op, "st.", 3)) return 0;
    memset(a, 0, sizeof *a);
    a->store = op[0] == 's';
    a->vec = 1;
    int other_space = 0;
    char *save = NULL;
    for (char *c = strtok_r(op + 3, ".", &save); c; c = strtok_r(NULL, ".", &save)) {
        if (!strcmp(c, "global")) a->space = 'g';
        else if (!strncmp(c, "shared", 6) || !strncmp(c, "local", 5) || !strncmp(c, "param", 5) ||
                 !strncmp(c, "const", 5) || !strncmp(c, "tex", 3))
            other_space = 1;
        else if (!strcmp(c, "v2")) a->vec = 2;
        else if (!strcmp(c, "v4")) a->vec = 4;
        else if (!strcmp(c, "v8")) a->vec = 8;
        else if (strchr("usbf", c[0]) && c[1] >= '1' && c[1] <= '9' &&
                 strspn(c + 1, "0123456789") == strlen(c + 1))
            a->bits = atoi(c + 1); /* u8 s16 b32 f64 ... */
        else if (!strcmp(c, "bf16"))
            a->bits = 16;
    }
    return !other_space && a->bits > 0;
}

typedef struct ptx_stats {
    int ld, st, ld16, st16, generic, narrow;
    char bad[6][128]; /* the first narrow accesses */
} ptx_stats;

/* Global (and generic) accesses of a PTX text; narrow: fewer bits than min_bits. */
static void ptx_scan(const char *ptx, int min_bits, ptx_stats *s)
{
    memset(s, 0, sizeof *s);
    for (const char *l = ptx; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        char line[512];
        if (n >= sizeof line) n = sizeof line - 1;
        memcpy(line, l, n);
        line[n] = 0;
        ptx_access a;
        if (ptx_parse(line, &a)) {
            int bytes = a.vec * a.bits / 8;
            if (a.store) s->st++, s->st16 += bytes >= 16;
            else s->ld++, s->ld16 += bytes >= 16;
            s->generic += a.space == 0;
            if (a.bits < min_bits) {
                if (s->narrow < 6) {
                    const char *t = line;
                    while (*t == ' ' || *t == '\t') t++;
                    snprintf(s->bad[s->narrow], sizeof s->bad[0], "%s", t);
                    for (char *q = s->bad[s->narrow]; *q; q++)
                        if (*q == '\t') *q = ' ';
                }
                s->narrow++;
            }
        }
        l = e ? e + 1 : NULL;
    }
}

/* The scanner itself, on PTX as NVRTC writes it (the regression's shapes included). */
static void test_scanner(void)
{
    static const char ptx[] =
        "\tld.global.nc.u8 \t%rs1, [%rd4+1];\n"
        "\t@%p1 ld.global.nc.v4.u32 \t{%r1, %r2, %r3, %r4}, [%rd2];\n"
        "\tst.global.u32 \t[%rd7], %r9;\n"
        "\t@!%p2 st.global.cs.v4.u32 \t[%rd8], {%r1, %r2, %r3, %r4};\n"
        "\tst.global.wb.v4.f32 \t[%rd8], {%f1, %f2, %f3, %f4};\n"
        "\tld.global.nc.L1::no_allocate.v2.u64 \t{%rd1, %rd2}, [%rd3];\n"
        "\tst.u8 \t[%rd1], %rs2;\n"
        "\tld.shared.u8 \t%rs3, [%r1];\n"
        "\tld.local.u8 \t%rs3, [%rd1];\n"
        "\tld.param.u64 \t%rd1, [kf_kernel_param_0];\n"
        "\tst.shared.v4.u32 \t[%r2], {%r1, %r2, %r3, %r4};\n"
        "\tld.global.nc.u16 \t%rs4, [%rd9];\n"
        "\t// ld.global.u8 in a comment\n"
        "\tstmatrix.sync.aligned.m8n8.x4.shared.b16 \t[%r1], {%r2, %r3, %r4, %r5};\n";
    ptx_stats s;
    ptx_scan(ptx, 16, &s);
    CHECK_EQ_INT(s.ld, 4);
    CHECK_EQ_INT(s.st, 4);
    CHECK_EQ_INT(s.ld16, 2);
    CHECK_EQ_INT(s.st16, 2);
    CHECK_EQ_INT(s.generic, 1);
    CHECK_EQ_INT(s.narrow, 2); /* ld.global.nc.u8, st.u8 */
    CHECK_CONTAINS(s.bad[0], "ld.global.nc.u8");
    CHECK_CONTAINS(s.bad[1], "st.u8");
    ptx_scan(ptx, 32, &s); /* an all-f32 signature: the u16 load is narrow too */
    CHECK_EQ_INT(s.narrow, 3);
}

/* ---- NVRTC by dlopen, found like compile/compiler_nvrtc.c finds it (then the pip wheel) ---- */

typedef int (*nvrtc_fn_version)(int *, int *);
typedef const char *(*nvrtc_fn_errstr)(int);
typedef int (*nvrtc_fn_create)(void **, const char *, const char *, int, const char *const *,
                               const char *const *);
typedef int (*nvrtc_fn_compile)(void *, int, const char *const *);
typedef int (*nvrtc_fn_size)(void *, size_t *);
typedef int (*nvrtc_fn_get)(void *, char *);
typedef int (*nvrtc_fn_destroy)(void **);

static struct {
    nvrtc_fn_version version;
    nvrtc_fn_errstr errstr;
    nvrtc_fn_create create;
    nvrtc_fn_compile compile;
    nvrtc_fn_size log_size, ptx_size;
    nvrtc_fn_get log, ptx;
    nvrtc_fn_destroy destroy;
    int major, minor;
    const char *inc;
    char path[4096];
} nv;

static int nv_bind(void *lib)
{
    int missing = 0;
#define NV_SYM(field, name) \
    (*(void **)&nv.field = dlsym(lib, name), missing |= *(void **)&nv.field == NULL)
    NV_SYM(version, "nvrtcVersion");
    NV_SYM(errstr, "nvrtcGetErrorString");
    NV_SYM(create, "nvrtcCreateProgram");
    NV_SYM(compile, "nvrtcCompileProgram");
    NV_SYM(log_size, "nvrtcGetProgramLogSize");
    NV_SYM(log, "nvrtcGetProgramLog");
    NV_SYM(ptx_size, "nvrtcGetPTXSize");
    NV_SYM(ptx, "nvrtcGetPTX");
    NV_SYM(destroy, "nvrtcDestroyProgram");
#undef NV_SYM
    return !missing && nv.version(&nv.major, &nv.minor) == 0;
}

/* As the backend does: NVRTC loads libnvrtc-builtins through its own RUNPATH, which an
 * intercepted dlopen (ASan) or an explicit path loses; load it from libnvrtc's folder first. */
static void nv_preload_builtins(void)
{
    Dl_info info;
    if (!dladdr(*(void **)&nv.version, &info) || !info.dli_fname) return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return;
    char p[4200];
    snprintf(p, sizeof p, "%.*s/libnvrtc-builtins.so.%d.%d", (int)(slash - info.dli_fname),
             info.dli_fname, nv.major, nv.minor);
    dlopen(p, RTLD_NOW | RTLD_LOCAL); /* missing: NVRTC will say */
}

/* 1 when NVRTC and the headers are there; else prints SKIP and returns 0. The library stays
 * open (NVRTC keeps process-wide state). */
static int nv_open(void)
{
    nv.inc = nvrtc_find_include();
    if (!nv.inc) {
        printf("SKIP compiling: no CUDA headers for <cuda_bf16.h> (set KFORGE_CUDA_INCLUDE)\n");
        return 0;
    }
    const char *names[9];
    int n = 0;
    const char *env = getenv("KFORGE_NVRTC");
    if (env && *env) names[n++] = env;
    names[n++] = "libnvrtc.so.13";
    names[n++] = "libnvrtc.so.12";
    names[n++] = "libnvrtc.so";
    names[n++] = "/usr/local/cuda/lib64/libnvrtc.so.13";
    names[n++] = "/usr/local/cuda/lib64/libnvrtc.so.12";
    names[n++] = "/usr/local/cuda/lib64/libnvrtc.so";
    char wheel[4096];
    if (nvrtc_find_wheel(wheel, sizeof wheel)) names[n++] = wheel;
    for (int i = 0; i < n; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib) continue;
        if (nv_bind(lib)) {
            snprintf(nv.path, sizeof nv.path, "%s", names[i]);
            nv_preload_builtins();
            return 1;
        }
        dlclose(lib); /* never called into */
    }
    printf("SKIP compiling: no NVRTC (KFORGE_NVRTC, libnvrtc.so.13/12, /usr/local/cuda/lib64, "
           "the nvidia-cuda-nvrtc wheel)\n");
    return 0;
}

/* src -> PTX (malloc'ed) for compute_90 with the backend's flags (compile/compiler_nvrtc.c:
 * -std=c++17 -default-device, the include path; sm_90 there, which yields no PTX); NULL on
 * failure, with the log in *log. */
static char *nv_ptx(const char *src, char **log)
{
    char incl[4200];
    snprintf(incl, sizeof incl, "--include-path=%s", nv.inc);
    const char *opts[] = {"--gpu-architecture=compute_90", "-std=c++17", "-default-device", incl};
    void *prog = NULL;
    char *ptx = NULL;
    *log = NULL;
    int r = nv.create(&prog, src, "kf_kernel.cu", 0, NULL, NULL);
    if (r != 0) {
        *log = strdup(nv.errstr(r));
        return NULL;
    }
    int cr = nv.compile(prog, (int)(sizeof opts / sizeof opts[0]), opts);
    size_t n = 0;
    if (nv.log_size(prog, &n) == 0 && n > 1) {
        *log = malloc(n + 1);
        if (*log && nv.log(prog, *log) == 0) (*log)[n] = 0;
    }
    if (cr == 0 && nv.ptx_size(prog, &n) == 0 && n > 0) {
        ptx = malloc(n + 1);
        if (ptx && nv.ptx(prog, ptx) == 0) {
            ptx[n] = 0;
        } else {
            free(ptx);
            ptx = NULL;
        }
    }
    if (cr != 0 && !*log) *log = strdup(nv.errstr(cr));
    nv.destroy(&prog);
    return ptx;
}

/* End to end on this NVRTC: the regression's shape (16 bytes moved through a byte-aligned raw
 * struct and memcpy, as before kf_vec) compiles to byte accesses, which the scan must catch. */
static void test_control(void)
{
    static const char src[] =
        "#include <cuda_bf16.h>\n"
        "struct raw16 { unsigned char b[16]; };\n"
        "extern \"C\" __global__ void kf_kernel(const __nv_bfloat16 *__restrict__ x,\n"
        "                                     __nv_bfloat16 *__restrict__ y)\n"
        "{\n"
        "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    const raw16 r = *reinterpret_cast<const raw16 *>(x + i * 8);\n"
        "    __nv_bfloat16 v[8];\n"
        "    memcpy(v, &r, sizeof r);\n"
        "    for (int e = 0; e < 8; e++)\n"
        "        v[e] = __float2bfloat16_rn(__bfloat162float(v[e]) * 2.f);\n"
        "    memcpy(y + i * 8, v, sizeof v);\n"
        "}\n";
    char *log = NULL, *ptx = nv_ptx(src, &log);
    if (CHECK(ptx != NULL)) {
        ptx_stats s;
        ptx_scan(ptx, 16, &s);
        printf("control (memcpy through a byte-aligned struct): ld.global %d (16 B: %d), "
               "st.global %d (16 B: %d), narrower than 16 bits: %d%s%s\n",
               s.ld, s.ld16, s.st, s.st16, s.narrow, s.narrow ? ", e.g. " : "",
               s.narrow ? s.bad[0] : "");
        CHECK(s.narrow > 0 && s.ld16 == 0 && s.st16 == 0);
    } else {
        printf("     control: %s\n", log ? log : "(no log)");
    }
    free(ptx);
    free(log);
}

static _Atomic int next_job;

static void *compile_worker(void *arg)
{
    (void)arg;
    for (;;) {
        int i = atomic_fetch_add(&next_job, 1);
        if (i >= n_jobs) return NULL;
        jobs[i].ptx = nv_ptx(jobs[i].src, &jobs[i].log);
    }
}

/* The jobs of case ci: both properties on each; one summary for the case. */
static void check_case(int ci)
{
    const vcase *c = &cases[ci];
    int n = 0, n_vec = 0, narrow = 0, min_ld16 = 1 << 30, min_st16 = 1 << 30;
    ptx_stats base;
    memset(&base, 0, sizeof base);
    for (int i = 0; i < n_jobs; i++) {
        const job *j = &jobs[i];
        if (j->c != ci) continue;
        char kn[160];
        knob_text(c->t, j->idx, kn, sizeof kn);
        if (!CHECK(j->ptx != NULL)) {
            printf("     %s %s [%s]: compile failed:\n%s\n", c->t->name, c->label, kn,
                   j->log ? j->log : "(no log)");
            continue;
        }
        ptx_stats s;
        ptx_scan(j->ptx, c->min_bits, &s);
        if (!j->variant) base = s;
        n++;
        narrow += s.narrow;
        /* a variant whose other knobs clamp the vector (none should) is held to (1) only */
        int vec = c->expect && j->vw == c->want_vw;
        int no_ld16 = vec && (c->expect & VEC_LD) && s.ld16 == 0;
        int no_st16 = vec && (c->expect & VEC_ST) && s.st16 == 0;
        if (s.ld == 0 || s.st == 0 || s.narrow || no_ld16 || no_st16)
            printf("     %s %s [%s] (vec %d): ld.global %d (16 B: %d), st.global %d (16 B: %d)\n",
                   c->t->name, c->label, kn, j->vw, s.ld, s.ld16, s.st, s.st16);
        CHECK(s.ld > 0 && s.st > 0);
        if (!CHECK_EQ_INT(s.narrow, 0))
            for (int k = 0; k < s.narrow && k < 6; k++) printf("     narrow: %s\n", s.bad[k]);
        if (no_ld16) printf("     no 16-byte global load\n");
        if (no_st16) printf("     no 16-byte global store\n");
        CHECK(!no_ld16 && !no_st16);
        if (vec) {
            n_vec++;
            if (s.ld16 < min_ld16) min_ld16 = s.ld16;
            if (s.st16 < min_st16) min_st16 = s.st16;
        }
    }
    printf("%-20s %s\n    knobs %s: ld.global %d (16 B: %d), st.global %d (16 B: %d)%s; "
           "narrower than %d bits: %d\n",
           c->t->name, c->label, c->knobs, base.ld, base.ld16, base.st, base.st16,
           base.generic ? " incl. generic" : "", c->min_bits, base.narrow);
    if (c->expect)
        printf("    + %d kernels with one data knob changed: %d with 16-byte vectors (fewest "
               "16 B loads %d, stores %d), narrow accesses %d\n",
               n - 1, n_vec, n_vec ? min_ld16 : 0, n_vec ? min_st16 : 0, narrow);
    else
        printf("    + %d kernels with one data knob changed; no vectors by design; narrow "
               "accesses %d\n", n - 1, narrow);
    /* vec is the only knob that sets the width: the swept knobs must not clamp it */
    if (c->expect && !CHECK_EQ_INT(n_vec, n))
        printf("     %s %s: a swept knob changed the vector width\n", c->t->name, c->label);
}

int main(void)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    test_scanner();
    make_cases();
    test_coverage();
    printf("%d cases rendered\n", n_cases);

    if (nv_open()) {
        printf("NVRTC %d.%d (%s), headers %s\n", nv.major, nv.minor, nv.path, nv.inc);
        test_control();
        make_jobs();
        long nth = sysconf(_SC_NPROCESSORS_ONLN);
        int n_threads = nth < 1 ? 1 : nth > 4 ? 4 : (int)nth;
        pthread_t th[4];
        for (int i = 0; i < n_threads; i++)
            CHECK(pthread_create(&th[i], NULL, compile_worker, NULL) == 0);
        for (int i = 0; i < n_threads; i++) pthread_join(th[i], NULL);
        int ok = 0;
        for (int i = 0; i < n_cases; i++) check_case(i);
        for (int i = 0; i < n_jobs; i++) ok += jobs[i].ptx != NULL;
        printf("compiled %d of %d kernels (%d cases) to PTX for compute_90 (%d threads)\n", ok,
               n_jobs, n_cases, n_threads);
    }
    for (int i = 0; i < n_cases; i++) free(cases[i].src);
    for (int i = 0; i < n_jobs; i++) {
        free(jobs[i].src);
        free(jobs[i].ptx);
        free(jobs[i].log);
    }
    return test_done(&t0, "templates_cuda_vectors");
}
