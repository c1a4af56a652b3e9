/* cuda_depthwise_conv2d: aten::_conv_depthwise2d(self, weight, kernel_size, bias?, stride,
 * padding, dilation) for f32/f16/bf16, as eager CUDA computes it
 * (aten/src/ATen/native/cuda/DepthwiseConv2d.cu, conv_depthwise2d_forward_kernel and its
 * _generic twin; both visit the same taps in the same order):
 *   input [N, C_in, H, W], weight [C_out, 1, kH, kW] with C_out = C_in * mult, output
 *   [N, C_out, OH, OW]; output channel c reads input channel c / mult. For output (n, c, oh, ow)
 *   value = bias ? (float)bias[c] : 0, then for i < kH (outer), k < kW (inner), skipping taps
 *   whose h = oh * sH - pH + i * dH or w = ow * sW - pW + k * dW lies outside the input,
 *   value += (float)weight[c, 0, i, k] * (float)x[n, c / mult, h, w]   (nvcc contracts it to
 *   one fma, spelled fmaf here); the output is value rounded to the dtype. The accumulator is
 *   float for all three dtypes (acc_type<T, true>), so results are bit-identical to eager.
 *
 * Layouts: eager calls expect_contiguous() on input, weight and bias (a copy changes no value),
 * so any strides are served, read through the given strides (compile-time constants); the
 * output is written exactly through its given strides (eager's own is contiguous NCHW; any
 * non-overlapping layout is accepted). Refused: what eager refuses (sizes that are not
 * [C_out, 1, kH, kW] with kernel_size equal to the weight's, C_out not a multiple of C_in, a
 * bias that is not [C_out], lists that are not two ints, tensors of 2^31 - 1 or more elements,
 * empty tensors), output sizes that disagree with torch's conv_output_size (or whose numerator
 * is negative), negative padding, mixed dtypes, f64, in-place outputs, overlapping outputs.
 *
 * Kernel: a work item is `vec` neighbouring outputs of one output row (n, c, oh). Where the
 * output rows are contiguous along W and aligned, the items of a row are placed on the
 * output's vector grid (the row's first and last items are partial and store element by
 * element), so full items store one `vec`-wide vector. Each item holds the input window of one
 * kernel row in registers (vec + (kW - 1) * dW inputs for stride 1): every input is loaded
 * once per item, from aligned vectors of up to 16 bytes where the input rows are contiguous
 * along W and the alignment allows (the window's misalignment is a runtime shift picked out with
 * selects / byte_perm), else element by element. Windows wider than 64 inputs load each tap
 * directly (vec 1). The load width is not a knob: the widest allowed is the cheapest (fewest
 * L1 wavefronts per byte) for this streaming kernel.
 * Knobs (every combination renders a valid kernel; values that do not fit are clamped):
 *   threads  threads per block
 *   vec      outputs per thread along W (clamped to the output width, a 64-input window, the
 *            unrolled taps and the registers `threads` leaves a thread)
 *   grid     0: one work item per thread; k > 0: a grid-stride loop over k * (resident blocks
 *            of a 132-SM H100/H200) blocks
 *   store    0: streaming stores (st.global.cs), 1: write-back */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/template.h"

static const kf_knob_def dw_knobs[] = {
    {"threads", 5, {64, 128, 256, 512, 1024}},
    {"vec", 5, {1, 2, 4, 8, 16}},
    {"grid", 4, {0, 1, 2, 4}},
    {"store", 2, {0, 1}},
};
enum { K_THREADS, K_VEC, K_GRID, K_STORE, K_COUNT };

#define DW_MAX_PARAM 65536 /* kernel, stride, padding, dilation: beyond any real model */
#define DW_MAX_SIZE ((int64_t)1 << 30)
#define DW_MAX_SPAN 64 /* inputs of a register window (the KF_USED mask's bits) */

/* ---- the signature ---- */

typedef struct dw_shape {
    int64_t n, ci, h, w, co, mult, oh, ow;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int bias;
    int64_t xs[4], ws[4], bs, ys[4]; /* strides; weight as (c, 1, i, k); bias's one */
} dw_shape;

static int dw_esize(int dtype) { return dtype == KF_F32 ? 4 : 2; }

/* A two-int list scalar into v[0..2); 0 when missing or malformed (eager checks size() == 2) */
static int dw_pair(const kf_job_sig *sig, const char *name, int64_t lo, int64_t *v)
{
    const kf_job_scalar *s = kf_job_scalar_find(sig, name);
    if (!s || s->kind != 'l' || s->n != 2) return 0;
    for (int k = 0; k < 2; k++)
        if (s->v[k] < lo || s->v[k] > DW_MAX_PARAM) return 0;
    v[0] = s->v[0], v[1] = s->v[1];
    return 1;
}

/* torch's conv_output_size for one dim; -1 where the numerator is negative (torch's truncating
 * division would still say 1 there: refused rather than guessed) */
static int64_t dw_out_size(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d)
{
    int64_t num = in + 2 * pad - d * (k - 1) - 1;
    return num < 0 ? -1 : num / s + 1;
}

/* sizes in (0, DW_MAX_SIZE], strides >= 0 where the size is above 1, a sane dtype */
static int dw_tensor_ok(const kf_job_tensor *t, int ndim, int dtype)
{
    if (t->ndim != ndim || t->dtype != dtype) return 0;
    for (int d = 0; d < ndim; d++) {
        if (t->sizes[d] <= 0 || t->sizes[d] > DW_MAX_SIZE) return 0;
        /* (size - 1) * stride <= 2^60: a reach of four dims stays far from overflow */
        if (t->sizes[d] > 1 &&
            (t->strides[d] < 0 || t->strides[d] > ((int64_t)1 << 60) / (t->sizes[d] - 1)))
            return 0;
    }
    return kf_job_tensor_numel(t) > 0;
}

/* no two elements share memory: the dims of size > 1, by stride, each step past the last's
 * extent */
static int dw_no_overlap(const kf_job_tensor *t)
{
    int64_t st[KF_MAX_DIMS], sz[KF_MAX_DIMS];
    int m = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] == 1) continue;
        if (t->strides[d] <= 0) return 0;
        int k = m++;
        for (; k > 0 && st[k - 1] > t->strides[d]; k--) st[k] = st[k - 1], sz[k] = sz[k - 1];
        st[k] = t->strides[d], sz[k] = t->sizes[d];
    }
    for (int k = 1; k < m; k++)
        if (st[k] < st[k - 1] * sz[k - 1]) return 0;
    return 1;
}

/* the optional bias: in[2] when present, else the scalar "bias" is None; -1 when malformed */
static int dw_bias(const kf_job_sig *sig)
{
    const kf_job_scalar *b = kf_job_scalar_find(sig, "bias");
    if (sig->n_in == 3 && !b) return 1;
    if (sig->n_in == 2 && b && b->kind == 'n') return 0;
    return -1;
}

static int dw_check(const kf_job_sig *sig, dw_shape *s)
{
    memset(s, 0, sizeof *s);
    if (!sig || strcmp(sig->op, "aten::_conv_depthwise2d") != 0) return 0;
    if (sig->n_out != 1 || sig->out_alias[0] != 0) return 0;
    s->bias = dw_bias(sig);
    if (s->bias < 0) return 0;
    const kf_job_tensor *x = &sig->in[0], *wt = &sig->in[1], *y = &sig->out[0];
    int dt = x->dtype;
    if (!kf_template_cuda_type(dt)) return 0;
    if (!dw_tensor_ok(x, 4, dt) || !dw_tensor_ok(wt, 4, dt) || !dw_tensor_ok(y, 4, dt)) return 0;
    int64_t k[2], st[2], pd[2], dl[2];
    if (!dw_pair(sig, "kernel_size", 1, k) || !dw_pair(sig, "stride", 1, st) ||
        !dw_pair(sig, "padding", 0, pd) || !dw_pair(sig, "dilation", 1, dl))
        return 0;
    s->n = x->sizes[0], s->ci = x->sizes[1], s->h = x->sizes[2], s->w = x->sizes[3];
    s->co = wt->sizes[0];
    s->kh = k[0], s->kw = k[1], s->sh = st[0], s->sw = st[1];
    s->ph = pd[0], s->pw = pd[1], s->dh = dl[0], s->dw = dl[1];
    /* eager's loops take kH, kW from kernel_size, its output size from the weight: agree */
    if (wt->sizes[1] != 1 || wt->sizes[2] != s->kh || wt->sizes[3] != s->kw) return 0;
    if (s->co % s->ci != 0) return 0;
    s->mult = s->co / s->ci;
    if (s->bias) {
        const kf_job_tensor *b = &sig->in[2];
        if (b->dtype != dt) return 0;
        if (b->ndim == 0) { /* eager: dim() <= 1 and numel() == C_out */
            if (s->co != 1) return 0;
        } else if (!dw_tensor_ok(b, 1, dt) || b->sizes[0] != s->co) {
            return 0;
        }
        s->bs = b->ndim ? b->strides[0] : 0;
    }
    s->oh = dw_out_size(s->h, s->kh, s->ph, s->sh, s->dh);
    s->ow = dw_out_size(s->w, s->kw, s->pw, s->sw, s->dw);
    if (s->oh < 1 || s->ow < 1 || s->oh > DW_MAX_SIZE || s->ow > DW_MAX_SIZE) return 0;
    if (y->sizes[0] != s->n || y->sizes[1] != s->co || y->sizes[2] != s->oh ||
        y->sizes[3] != s->ow)
        return 0;
    /* eager's canUse32BitIndexMath on the (contiguous) input and output */
    if (kf_job_tensor_numel(x) >= INT32_MAX || kf_job_tensor_numel(y) >= INT32_MAX ||
        kf_job_tensor_numel(wt) >= INT32_MAX)
        return 0;
    if (!dw_no_overlap(y)) return 0;
    for (int d = 0; d < 4; d++) {
        s->xs[d] = x->strides[d];
        s->ws[d] = wt->strides[d];
        s->ys[d] = y->strides[d];
    }
    return 1;
}

static int dw_applies(const kf_job_sig *sig)
{
    dw_shape s;
    return dw_check(sig, &s);
}

/* ---- the plan: effective knob values ---- */

typedef struct dw_plan {
    int threads, vec, lv, gs, store;
    int vst;    /* full items store one vector of vec outputs */
    int direct; /* no register window: each tap loaded where it is used (vec 1, lv 1) */
    int full;   /* the kernel rows fully unrolled */
    int wide;   /* 64-bit offsets and work indices */
    int span;   /* inputs of a window row */
    int nch, lw, wwn; /* chunks of lv elements, words per chunk, words of the shifted window */
    unsigned long long used; /* window inputs some tap reads (per-element loads) */
    int64_t groups, items;
    unsigned grid;
    const char *vec_why, *lv_why, *vst_why;
} dw_plan;

/* A vector of `bytes` may be accessed at t's alignment (fresh outputs: 16) */
static int dw_align_fits(const kf_job_tensor *t, int fresh, int bytes)
{
    int need = bytes > 16 ? 16 : bytes; /* 32 bytes go as two 16-byte accesses */
    int align = t->align > 0 ? t->align : fresh ? 16 : dw_esize(t->dtype);
    if (align > 16) align = 16;
    return need <= align && align % need == 0;
}

static int64_t dw_span(const dw_shape *s, int64_t vec)
{
    return (vec - 1) * s->sw + (s->kw - 1) * s->dw + 1;
}

/* largest element offset + 1 that 4-D strides reach */
static int64_t dw_reach(const int64_t *st, const int64_t *sz)
{
    int64_t r = 1;
    for (int d = 0; d < 4; d++) r += (sz[d] - 1) * st[d];
    return r;
}

/* outputs per thread: the output width, a window of at most DW_MAX_SPAN inputs, the unrolled
 * taps, and registers (window, accumulators, chunks) within what `threads` leaves a thread */
static void dw_plan_vec(const dw_shape *s, const int *v, dw_plan *p)
{
    int regs = 65536 / p->threads > 255 ? 255 : 65536 / p->threads;
    p->vec = v[K_VEC];
    for (; p->vec > 1; p->vec /= 2) {
        int64_t span = dw_span(s, p->vec);
        if (p->vec <= s->ow && span <= DW_MAX_SPAN && s->kw * p->vec <= 256 &&
            span + 3 * p->vec + 24 <= regs)
            break;
    }
    if (p->vec < v[K_VEC]) p->vec_why = "output width, window or registers";
    p->direct = p->vec == 1 && dw_span(s, 1) > DW_MAX_SPAN;
    p->span = p->direct ? 1 : (int)dw_span(s, p->vec);
}

/* input chunk width: W contiguous, within the input's alignment and 16 bytes */
static void dw_plan_load(const kf_job_sig *sig, const dw_shape *s, dw_plan *p)
{
    int es = dw_esize(sig->in[0].dtype);
    p->lv = 16 / es;
    if (p->lv > 1 && (p->direct || (p->vec == 1 && p->span == 1))) {
        p->lv = 1; /* one input per item: nothing to share */
        p->lv_why = "one input per window";
    }
    if (p->lv > 1 && s->xs[3] != 1 && s->w > 1) {
        p->lv = 1;
        p->lv_why = "W is strided";
    }
    for (; p->lv > 1 && !dw_align_fits(&sig->in[0], 0, p->lv * es); p->lv /= 2)
        p->lv_why = "the input's alignment";
    if (p->lv > 1) {
        p->lw = p->lv * es / 4;
        if (es == 4) {
            p->nch = (p->lv - 1 + p->span + p->lv - 1) / p->lv;
        } else {
            p->wwn = (p->span + 1) / 2 + 1;
            p->nch = (p->lw - 1 + p->wwn + p->lw - 1) / p->lw;
        }
    }
    for (int q = 0; q < p->vec && !p->direct; q++)
        for (int64_t k = 0; k < s->kw; k++) p->used |= 1ull << (q * s->sw + k * s->dw);
}

static void dw_make_plan(const kf_job_sig *sig, const dw_shape *s, const int *v, dw_plan *p)
{
    memset(p, 0, sizeof *p);
    p->threads = v[K_THREADS];
    p->store = v[K_STORE];
    int es = dw_esize(sig->in[0].dtype);
    dw_plan_vec(s, v, p);
    dw_plan_load(sig, s, p);
    /* vector stores: W contiguous and aligned to the vector */
    p->vst = p->vec > 1 && (s->ys[3] == 1 || s->ow == 1) &&
             dw_align_fits(&sig->out[0], 1, p->vec * es);
    if (p->vec > 1 && !p->vst) p->vst_why = "output W strided or misaligned";
    p->full = s->kh * s->kw * p->vec <= 256;
    p->groups = p->vst ? (s->ow + 2 * p->vec - 2) / p->vec : (s->ow + p->vec - 1) / p->vec;
    p->items = s->n * s->co * s->oh * p->groups;
    const int64_t xsz[4] = {s->n, s->ci, s->h, s->w}, ysz[4] = {s->n, s->co, s->oh, s->ow};
    const int64_t wsz[4] = {s->co, 1, s->kh, s->kw};
    int64_t reach = dw_reach(s->xs, xsz), ry = dw_reach(s->ys, ysz), rw = dw_reach(s->ws, wsz);
    if (ry > reach) reach = ry;
    if (rw > reach) reach = rw;
    /* room for a grid-stride step past the end, and a window past a row, in 32 bits */
    p->wide = reach >= ((int64_t)1 << 30) || p->items >= ((int64_t)1 << 30);
    p->gs = v[K_GRID];
    p->grid = kf_template_grid((p->items + p->threads - 1) / p->threads, p->threads, &p->gs);
}

/* ---- the kernel: kernels/cuda_conv_dw.cu, after the #defines render() prints ---- */

static kf_status dw_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap);

/* Where the search starts: 256 threads, 16-byte output vectors, a work item per thread,
 * streaming stores. */
static void dw_start(const kf_job_sig *sig, int *idx)
{
    dw_shape s;
    idx[K_THREADS] = 2;
    if (!dw_check(sig, &s)) return;
    idx[K_VEC] = sig->in[0].dtype == KF_F32 ? 2 : 3;
}

const kf_template kf_tmpl_cuda_depthwise_conv2d = {
    /* .name = */ "cuda_depthwise_conv2d",
    /* .backend = */ "nvrtc",
    /* .n_knobs = */ K_COUNT,
    /* .knobs = */ dw_knobs,
    /* .applies = */ dw_applies,
    /* .render = */ dw_render,
    /* .start = */ dw_start,
    /* .why_not = */ NULL,
};

/* the signature's shape, scalars and strides as #defines */
static void dw_emit_shape(kf_strbuf *b, const dw_shape *s, const dw_plan *p)
{
    const char *ll = p->wide ? "LL" : ""; /* 32-bit arithmetic where everything fits */
    kf_strbuf_printf(b,
                     "/* the signature */\n#define KF_N %lld\n#define KF_CI %lld\n"
                     "#define KF_CO %lld\n#define KF_MULT %lld\n#define KF_H %lld\n"
                     "#define KF_W %lld\n#define KF_OH %lld\n#define KF_OW %lld\n"
                     "#define KF_KH %lld\n#define KF_KW %lld\n#define KF_SH %lld\n"
                     "#define KF_SW %lld\n#define KF_PH %lld\n#define KF_PW %lld\n"
                     "#define KF_DH %lld\n#define KF_DW %lld\n#define KF_HAS_BIAS %d\n"
                     "#define KF_BS %lld%s\n",
                     (long long)s->n, (long long)s->ci, (long long)s->co, (long long)s->mult,
                     (long long)s->h, (long long)s->w, (long long)s->oh, (long long)s->ow,
                     (long long)s->kh, (long long)s->kw, (long long)s->sh, (long long)s->sw,
                     (long long)s->ph, (long long)s->pw, (long long)s->dh, (long long)s->dw,
                     s->bias, (long long)s->bs, ll);
    static const char *const dims = "NCHW";
    for (int d = 0; d < 4; d++) {
        kf_strbuf_printf(b, "#define KF_XS%c %lld%s\n#define KF_YS%c %lld%s\n", dims[d],
                         (long long)s->xs[d], ll, dims[d], (long long)s->ys[d], ll);
    }
    kf_strbuf_printf(b, "#define KF_WSC %lld%s\n#define KF_WSH %lld%s\n#define KF_WSW %lld%s\n",
                     (long long)s->ws[0], ll, (long long)s->ws[2], ll, (long long)s->ws[3], ll);
}

static kf_status dw_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_depthwise_conv2d;
    int vals[K_COUNT];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    dw_shape s;
    dw_check(sig, &s);
    dw_plan p;
    dw_make_plan(sig, &s, vals, &p);
    int dt = sig->in[0].dtype;
    const char *ty = kf_template_cuda_type(dt);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b,
                     "/* inputs: self, weight%s; outputs: out */\n/* effective knob values */\n",
                     s.bias ? ", bias" : " (bias None)");
    kf_template_define(&b, "KF_NT", p.threads, NULL);
    kf_strbuf_printf(&b, "#undef KF_VEC\n");
    kf_template_define(&b, "KF_VEC", p.vec, p.vec_why);
    kf_template_define(&b, "KF_LV", p.lv, p.lv_why);
    kf_template_define(&b, "KF_VST", p.vst, p.vst_why);
    int sv = p.vec * dw_esize(dt) > 16 ? 16 / dw_esize(dt) : p.vec;
    kf_template_define(&b, "KF_SV", sv, "elements a store moves");
    kf_template_define(&b, "KF_DIRECT", p.direct, p.direct ? "window wider than 64 inputs" : NULL);
    kf_template_define(&b, "KF_GS", p.gs != 0, NULL);
    kf_template_define(&b, "KF_FULL", p.full, NULL);
    kf_template_define(&b, "KF_SPAN", p.span, "inputs of a window row");
    kf_template_define(&b, "KF_NCH", p.nch > 0 ? p.nch : 1, NULL);
    kf_template_define(&b, "KF_LW", p.lw > 0 ? p.lw : 1, NULL);
    kf_template_define(&b, "KF_WWN", p.wwn > 0 ? p.wwn : 1, NULL);
    kf_strbuf_printf(&b, "#define KF_USED 0x%llxull /* window inputs a tap reads */\n", p.used);
    kf_strbuf_printf(&b, "#define KF_TYPE %s\n#define KF_ES %d\n", ty, dw_esize(dt));
    dw_emit_shape(&b, &s, &p);
    const char *ll = p.wide ? "LL" : "";
    kf_strbuf_printf(&b,
                     "#define KF_G %lld /* work items per output row */\n#define KF_ITEMS %lld%s\n"
                     "typedef %s kf_idx;\n"
                     "#define KF_PARAMS const kf_t *__restrict__ x, const kf_t *__restrict__ wt, "
                     "%skf_t *__restrict__ y\n#define KF_BIAS_ARG %s\n\n%s",
                     (long long)p.groups, (long long)p.items, ll, p.wide ? "long long" : "int",
                     s.bias ? "const kf_t *__restrict__ bias, " : "",
                     s.bias ? "bias" : "(const kf_t *)0", kf_body_cuda_conv_dw_cu);

    char cty[40], mty[40];
    snprintf(cty, sizeof cty, "const %s*", ty);
    snprintf(mty, sizeof mty, "%s*", ty);
    const char *args[4] = {cty, cty, cty, mty};
    if (!s.bias) args[2] = mty;
    const unsigned grid[3] = {p.grid, 1, 1}, block[3] = {(unsigned)p.threads, 1, 1};
    return kf_template_cuda_finish(t, &b, args, s.bias ? 4 : 3, grid, block, 0, source,
                                   launch_json, err, errcap);
}
