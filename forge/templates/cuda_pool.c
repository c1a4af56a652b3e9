/* cuda_max_pool2d: aten::max_pool2d_with_indices(self, kernel_size, stride, padding, dilation,
 * ceil_mode) -> (values, indices) for an f32/f16/bf16 input [N, C, H, W] (contiguous or
 * channels last) or [C, H, W] (contiguous), as eager CUDA computes it
 * (aten/src/ATen/native/cuda/DilatedMaxPool2d.cu, max_pool_forward_nchw / _nhwc):
 *   for output (n, c, oh, ow): hstart = oh * sH - pH, wstart = ow * sW - pW; scan the window
 *   h = hstart + i * dH (i < kH), w = wstart + j * dW (j < kW), h outer, w inner, skipping
 *   positions outside the input; a value v replaces the max when v > max or v is NaN (so the first
 *   of equal maxima wins, and the last NaN); max starts at -inf. Index = h * W + w within the
 *   plane. Where nothing replaces the start (every value -inf, or a window wholly in the padding
 *   with dilation) the index is eager's start value, which differs by kernel: the NCHW kernel
 *   starts at the first in-range position (hstart and wstart stepped up by the dilation until
 *   >= 0), the NHWC kernel at 0. Which kernel eager runs is input.suggest_memory_format(): torch's
 *   is_channels_last_strides_2d_s4 heuristic on the input's strides, ported below; the input must
 *   be dense in that format (else eager copies it first: refused), the outputs too (eager
 *   allocates them in it). Values are copied bit for bit (NaN payloads too); the comparisons are
 *   in float, as eager's.
 *
 * Output sizes are recomputed with torch's pooling_output_shape (floor or ceil mode, where the
 * last window must start inside the input or the left padding) and its checks (kernel, stride,
 * dilation > 0; 0 <= padding <= effective kernel / 2; output >= 1); a signature that disagrees,
 * or whose indices eager would compute in overflowing int, is refused.
 *
 * Kernel: one thread takes `vec` channels (one vector load per window position, channels last)
 * or one channel (NCHW) of `wout` neighbouring output positions along W; with wout > 1 each
 * window row's span of columns is loaded once into registers and shared by the outputs. Threads
 * run along C then W (channels last) or along W (NCHW), so neighbouring threads read
 * neighbouring memory. Values are stored as one vector per output position, indices as 16-byte
 * pairs of int64 where the alignment allows, all through the given output strides.
 * Knobs (every combination renders a valid kernel; values that do not fit are clamped):
 *   threads  threads per block
 *   vec      channels per thread (channels last): at most 32 bytes, a divisor of C, within the
 *            recorded alignment; 1 for NCHW
 *   wout     output positions along W per thread (clamped to the output width and to what
 *            fits in registers: the row span, the per-output state against what `threads`
 *            leaves a thread, the unrolled window)
 *   grid     0: one work item per thread; k > 0: a grid-stride loop over k * (resident blocks
 *            of a 132-SM H100/H200) blocks
 *   store    0: streaming stores (st.global.cs, keep L2 for the input), 1: write-back */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/pool_shape.h"
#include "forge/templates/template.h"

static const kf_knob_def pool_knobs[] = {
    {"threads", 5, {64, 128, 256, 512, 1024}},
    {"vec", 5, {1, 2, 4, 8, 16}},
    {"wout", 4, {1, 2, 4, 8}},
    {"grid", 4, {0, 1, 2, 4}},
    {"store", 2, {0, 1}},
};
enum { K_THREADS, K_VEC, K_WOUT, K_GRID, K_STORE, K_COUNT };

static int pool_esize(int dtype) { return dtype == KF_I64 ? 8 : dtype == KF_F32 ? 4 : 2; }

static int pool_applies(const kf_job_sig *sig)
{
    kf_pool_shape s;
    return kf_pool_check(sig, 1, &s);
}

/* ---- the plan: effective knob values ---- */

typedef struct pool_plan {
    int threads, vec, wout, gs, store;
    int ipair;    /* indices stored as 16-byte pairs */
    int full;     /* the window rows fully unrolled */
    int wide;     /* 64-bit offsets and work indices */
    int64_t items;
    unsigned grid;
    const char *vec_why, *wout_why;
} pool_plan;

/* A vector of v elements of t may be accessed at its alignment (fresh outputs: 16) */
static int pool_vec_fits(const kf_job_tensor *t, int fresh, int v)
{
    int bytes = v * pool_esize(t->dtype);
    int need = bytes > 16 ? 16 : bytes; /* 32 bytes go as two 16-byte accesses */
    int align = t->align > 0 ? t->align : fresh ? 16 : pool_esize(t->dtype);
    if (align > 16) align = 16;
    return need <= align && align % need == 0;
}

/* largest element offset + 1 that a tensor's (n, c, h, w) strides reach */
static int64_t pool_reach(const int64_t *st, int64_t n, int64_t c, int64_t h, int64_t w)
{
    return (n - 1) * st[0] + (c - 1) * st[1] + (h - 1) * st[2] + (w - 1) * st[3] + 1;
}

static void pool_make_plan(const kf_job_sig *sig, const kf_pool_shape *s, const int *v,
                           pool_plan *p)
{
    memset(p, 0, sizeof *p);
    p->threads = v[K_THREADS];
    p->store = v[K_STORE];
    const kf_job_tensor *x = &sig->in[0];
    int es = pool_esize(x->dtype);
    /* channels per thread: channels last only, dividing C, at most 32 bytes, aligned */
    p->vec = s->cl ? v[K_VEC] : 1;
    if (!s->cl && v[K_VEC] > 1) p->vec_why = "NCHW: one channel per thread";
    for (; p->vec > 1; p->vec /= 2) {
        if (s->c % p->vec || p->vec * es > 32 || !pool_vec_fits(x, 0, p->vec) ||
            !pool_vec_fits(&sig->out[0], 1, p->vec))
            continue;
        break;
    }
    if (s->cl && p->vec < v[K_VEC]) p->vec_why = "C, the alignment or 32 bytes";
    /* outputs along W per thread: bounded by the registers of a row span (raw words), the
     * state (the max's words and an index per channel, per output: a third of what `threads`
     * leaves a thread) and the size of the unrolled window */
    int words = (p->vec * es + 3) / 4;
    int regs = 65536 / p->threads > 255 ? 255 : 65536 / p->threads; /* the most a thread gets */
    p->wout = v[K_WOUT];
    for (; p->wout > 1; p->wout /= 2) {
        int64_t span = (p->wout - 1) * s->sw + (s->kw - 1) * s->dw + 1;
        if (p->wout <= s->ow && span * words <= 64 && p->wout * (words + p->vec) * 3 <= regs &&
            s->kh * s->kw * p->wout <= 256 && s->kw * p->wout <= 64)
            break;
    }
    if (p->wout < v[K_WOUT]) p->wout_why = "output width or registers";
    p->full = s->kh * s->kw * p->wout <= 128;
    p->ipair = p->vec % 2 == 0 && pool_vec_fits(&sig->out[1], 1, 2);
    int64_t cg = s->c / p->vec, owg = (s->ow + p->wout - 1) / p->wout;
    p->items = s->n * s->oh * owg * cg;
    int64_t reach = pool_reach(s->xs, s->n, s->c, s->h, s->w);
    int64_t ry = pool_reach(s->ys, s->n, s->c, s->oh, s->ow);
    int64_t ri = pool_reach(s->is, s->n, s->c, s->oh, s->ow);
    if (ry > reach) reach = ry;
    if (ri > reach) reach = ri;
    /* room for a grid-stride step past the end in 32 bits */
    p->wide = reach >= ((int64_t)1 << 30) || p->items >= ((int64_t)1 << 30);
    p->gs = v[K_GRID];
    p->grid = kf_template_grid((p->items + p->threads - 1) / p->threads, p->threads, &p->gs);
}

/* ---- the kernel: kernels/cuda_pool.cu, after the #defines render() prints ---- */

static kf_status pool_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                             char **launch_json, char *err, size_t errcap);

/* Where the search starts: 256 threads, 16-byte vectors along C (channels last), two outputs
 * per thread sharing their window columns, a work item per thread. */
static void pool_start(const kf_job_sig *sig, int *idx)
{
    kf_pool_shape s;
    idx[K_THREADS] = 2;
    if (!kf_pool_check(sig, 1, &s) || !s.cl) return;
    idx[K_VEC] = sig->in[0].dtype == KF_F32 ? 2 : 3;
    idx[K_WOUT] = 1;
}

const kf_template kf_tmpl_cuda_max_pool2d = {
    .name = "cuda_max_pool2d",
    .backend = "nvrtc",
    .n_knobs = K_COUNT,
    .knobs = pool_knobs,
    .applies = pool_applies,
    .render = pool_render,
    .start = pool_start,
};

static kf_status pool_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                             char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_max_pool2d;
    int vals[K_COUNT];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    kf_pool_shape s;
    kf_pool_check(sig, 1, &s);
    pool_plan p;
    pool_make_plan(sig, &s, vals, &p);
    int dt = sig->in[0].dtype;
    const char *ty = kf_template_cuda_type(dt);
    /* -inf in every element of a 32-bit word */
    unsigned ninf = dt == KF_F32 ? 0xff800000u : dt == KF_F16 ? 0xfc00fc00u : 0xff80ff80u;
    /* the columns of a row span that some output of a thread reads (span <= 64 with wout > 1) */
    unsigned long long used = 0;
    for (int q = 0; q < p.wout; q++)
        for (int64_t k = 0; k < s.kw; k++)
            if (q * s.sw + k * s.dw < 64) used |= 1ull << (q * s.sw + k * s.dw);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b, "/* inputs: self; outputs: values, indices (int64); %s, eager's %s "
                         "kernel */\n/* effective knob values */\n",
                     s.ndim == 3 ? "[C, H, W]" : s.cl ? "channels last" : "NCHW",
                     s.cl ? "NHWC" : "NCHW");
    kf_template_define(&b, "KF_NT", p.threads, NULL);
    kf_strbuf_printf(&b, "#undef KF_VEC\n#undef KF_WOUT\n");
    kf_template_define(&b, "KF_VEC", p.vec, p.vec_why);
    kf_template_define(&b, "KF_WOUT", p.wout, p.wout_why);
    kf_template_define(&b, "KF_GS", p.gs != 0, NULL);
    kf_template_define(&b, "KF_IPAIR", p.ipair, p.ipair ? NULL : "8-byte index stores");
    kf_template_define(&b, "KF_FULL", p.full, NULL);
    kf_strbuf_printf(&b, "#define KF_USED 0x%llxull /* columns of a row span read */\n", used);
    kf_strbuf_printf(&b,
                     "/* the signature */\n#define KF_TYPE %s\n#define KF_ESIZE %d\n"
                     "#define KF_NEG_INF_WORD 0x%xu\n#define KF_CL %d\n"
                     "#define KF_N %lld\n#define KF_C %lld\n#define KF_H %lld\n#define KF_W %lld\n"
                     "#define KF_OHEIGHT %lld\n#define KF_OWIDTH %lld\n"
                     "#define KF_KH %lld\n#define KF_KW %lld\n#define KF_SH %lld\n"
                     "#define KF_SW %lld\n#define KF_PH %lld\n#define KF_PW %lld\n"
                     "#define KF_DH %lld\n#define KF_DW %lld\n/* ceil_mode %d */\n",
                     ty, pool_esize(dt), ninf, s.cl, (long long)s.n, (long long)s.c,
                     (long long)s.h, (long long)s.w, (long long)s.oh, (long long)s.ow,
                     (long long)s.kh, (long long)s.kw, (long long)s.sh, (long long)s.sw,
                     (long long)s.ph, (long long)s.pw, (long long)s.dh, (long long)s.dw,
                     s.ceil_mode);
    static const char *const pre[] = {"KF_XS", "KF_YS", "KF_IS"};
    const int64_t *strides[] = {s.xs, s.ys, s.is};
    const char *ll = p.wide ? "LL" : ""; /* 32-bit arithmetic where everything fits */
    for (int k = 0; k < 3; k++)
        kf_strbuf_printf(&b, "#define %sN %lld%s\n#define %sC %lld%s\n#define %sH %lld%s\n"
                             "#define %sW %lld%s\n",
                         pre[k], (long long)strides[k][0], ll, pre[k], (long long)strides[k][1],
                         ll, pre[k], (long long)strides[k][2], ll, pre[k],
                         (long long)strides[k][3], ll);
    kf_strbuf_printf(&b,
                     "#define KF_ITEMS %lld%s\ntypedef %s kf_idx;\n"
                     "#define KF_PARAMS const kf_t *__restrict__ x, kf_t *__restrict__ y, "
                     "long long *__restrict__ ind\n\n%s",
                     (long long)p.items, ll, p.wide ? "long long" : "int", kf_body_cuda_pool_cu);

    char cty[40], mty[40];
    snprintf(cty, sizeof cty, "const %s*", ty);
    snprintf(mty, sizeof mty, "%s*", ty);
    const char *args[3] = {cty, mty, "int64_t*"};
    const unsigned grid[3] = {p.grid, 1, 1}, block[3] = {(unsigned)p.threads, 1, 1};
    return kf_template_cuda_finish(t, &b, args, 3, grid, block, 0, source, launch_json, err,
                                   errcap);
}
