/* Building kf_job_sig values in the template tests: tensors (contiguous or channels last), ops
 * and their scalars, the softmax, elementwise, normalization and cat signatures. */
#ifndef KF_TESTS_JOB_SIG_BUILD_H
#define KF_TESTS_JOB_SIG_BUILD_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/template.h"

/* contiguous, or channels last (dim 1 innermost) when cl and ndim >= 3 */
static inline kf_job_tensor sig_tensor(int dtype, int ndim, const int64_t *sizes, int cl,
                                       int align)
{
    kf_job_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.ndim = ndim;
    t.align = align;
    for (int d = 0; d < ndim; d++) t.sizes[d] = sizes[d];
    int64_t st = 1;
    if (cl && ndim >= 3) {
        t.strides[1] = st;
        st *= sizes[1];
        for (int d = ndim - 1; d >= 2; d--) {
            t.strides[d] = st;
            st *= sizes[d];
        }
        t.strides[0] = st;
    } else {
        for (int d = ndim - 1; d >= 0; d--) {
            t.strides[d] = st;
            st *= sizes[d];
        }
    }
    return t;
}

static inline kf_job_scalar *sig_add_scalar(kf_job_sig *s, const char *name, int kind)
{
    kf_job_scalar *c = &s->scalars[s->n_scalars++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->kind = kind;
    return c;
}

static inline kf_job_sig sig_of(const char *op)
{
    kf_job_sig s;
    memset(&s, 0, sizeof s);
    snprintf(s.op, sizeof s.op, "%s", op);
    return s;
}

/* _softmax / _log_softmax(self, dim, half_to_float): f32 out when out_f32 */
static inline kf_job_sig sig_softmax(const char *op, kf_job_tensor x, int64_t dim, int out_f32)
{
    kf_job_sig s = sig_of(op);
    s.n_in = s.n_out = 1;
    s.in[0] = s.out[0] = x;
    s.out[0].align = 0;
    if (out_f32) s.out[0].dtype = KF_F32;
    sig_add_scalar(&s, "dim", 'i')->i = dim;
    sig_add_scalar(&s, "half_to_float", 'b')->i = out_f32;
    return s;
}

/* gelu/silu/relu/clamp_min (fresh) or relu_/clamp_min_ (in place, op ends in '_'); the op's
 * scalars are the caller's */
static inline kf_job_sig sig_unary(const char *op, kf_job_tensor x)
{
    kf_job_sig s = sig_of(op);
    s.n_in = s.n_out = 1;
    s.in[0] = s.out[0] = x;
    if (op[strlen(op) - 1] == '_') s.out_alias[0] = 1;
    else s.out[0].align = 0;
    return s;
}

/* pow.Tensor_Scalar(self, exponent): exponent of kind 'i' (int) or else 'd' (float) */
static inline kf_job_sig sig_pow(kf_job_tensor x, int kind, double e)
{
    kf_job_sig s = sig_unary("aten::pow.Tensor_Scalar", x);
    kf_job_scalar *m = sig_add_scalar(&s, "exponent", kind);
    if (kind == 'i') m->i = (int64_t)e;
    else m->d = e;
    return s;
}

/* copy_(self, src, non_blocking=False): written in place into self */
static inline kf_job_sig sig_copy(kf_job_tensor self, kf_job_tensor src)
{
    kf_job_sig s = sig_of("aten::copy_");
    s.n_in = 2;
    s.in[0] = self;
    s.in[1] = src;
    s.n_out = 1;
    s.out[0] = self;
    s.out_alias[0] = 1;
    sig_add_scalar(&s, "non_blocking", 'b')->i = 0;
    return s;
}

/* add/mul (.Tensor or _.Tensor): out is `out` (fresh) or a (in place); alpha_kind 0, 'i', 'd' */
static inline kf_job_sig sig_binary(const char *op, kf_job_tensor a, kf_job_tensor b,
                                    kf_job_tensor out, int alpha_kind, double alpha)
{
    kf_job_sig s = sig_of(op);
    s.n_in = 2;
    s.in[0] = a;
    s.in[1] = b;
    s.n_out = 1;
    if (strstr(op, "_.Tensor")) {
        s.out[0] = a;
        s.out_alias[0] = 1;
    } else {
        s.out[0] = out;
        s.out[0].align = 0;
    }
    if (alpha_kind == 'i') sig_add_scalar(&s, "alpha", 'i')->i = (int64_t)alpha;
    if (alpha_kind == 'd') sig_add_scalar(&s, "alpha", 'd')->d = alpha;
    return s;
}

#define SIG_NONE (-1) /* dtype of an absent optional tensor */

/* a contiguous [n] tensor, 16-byte aligned */
static inline kf_job_tensor sig_vec1(int dtype, int64_t n) { return sig_tensor(dtype, 1, &n, 0, 16); }

/* an optional tensor argument: a [n] tensor of dtype dt, or None */
static inline void sig_add_opt(kf_job_sig *s, const char *name, int dt, int64_t n)
{
    if (dt == SIG_NONE) sig_add_scalar(s, name, 'n');
    else s->in[s->n_in++] = sig_vec1(dt, n);
}

/* native_layer_norm / _fused_rms_norm over the last nn dims; eps < 0: None (rms only) */
static inline kf_job_sig sig_norm_row(int rms, kf_job_tensor x, int nn, int wdt, int bdt,
                                      int statdt, double eps)
{
    kf_job_sig s = sig_of(rms ? "aten::_fused_rms_norm" : "aten::native_layer_norm");
    const int64_t *ns = x.sizes + x.ndim - nn;
    s.in[s.n_in++] = x;
    kf_job_scalar *l = sig_add_scalar(&s, "normalized_shape", 'l');
    l->n = nn;
    for (int k = 0; k < nn; k++) l->v[k] = ns[k];
    if (wdt == SIG_NONE) sig_add_scalar(&s, "weight", 'n');
    else s.in[s.n_in++] = sig_tensor(wdt, nn, ns, 0, 16);
    if (!rms) {
        if (bdt == SIG_NONE) sig_add_scalar(&s, "bias", 'n');
        else s.in[s.n_in++] = sig_tensor(bdt, nn, ns, 0, 16);
    }
    if (eps < 0) sig_add_scalar(&s, "eps", 'n');
    else sig_add_scalar(&s, "eps", 'd')->d = eps;
    int64_t stat[KF_MAX_DIMS];
    for (int d = 0; d < x.ndim; d++) stat[d] = d < x.ndim - nn ? x.sizes[d] : 1;
    s.out[s.n_out++] = x;
    s.out[0].align = 0; /* fresh */
    if (!rms) s.out[s.n_out++] = sig_tensor(statdt, x.ndim, stat, 0, 0);
    s.out[s.n_out++] = sig_tensor(statdt, x.ndim, stat, 0, 0);
    return s;
}

/* native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) */
static inline kf_job_sig sig_group_norm(kf_job_tensor x, int64_t groups, int wdt, int bdt,
                                        int statdt, double eps)
{
    kf_job_sig s = sig_of("aten::native_group_norm");
    int64_t hw = 1;
    for (int d = 2; d < x.ndim; d++) hw *= x.sizes[d];
    s.in[s.n_in++] = x;
    sig_add_opt(&s, "weight", wdt, x.sizes[1]);
    sig_add_opt(&s, "bias", bdt, x.sizes[1]);
    sig_add_scalar(&s, "N", 'i')->i = x.sizes[0];
    sig_add_scalar(&s, "C", 'i')->i = x.sizes[1];
    sig_add_scalar(&s, "HxW", 'i')->i = hw;
    sig_add_scalar(&s, "group", 'i')->i = groups;
    sig_add_scalar(&s, "eps", 'd')->d = eps;
    int64_t st[2] = {x.sizes[0], groups};
    s.out[s.n_out++] = x;
    s.out[0].align = 0;
    s.out[s.n_out++] = sig_tensor(statdt, 2, st, 0, 0);
    s.out[s.n_out++] = sig_tensor(statdt, 2, st, 0, 0);
    return s;
}

/* legit: _native_batch_norm_legit_no_training, else native_batch_norm(training=False);
 * running stats of dtype rdt; save_n: elements of save_mean / save_invstd (0 or C) */
static inline kf_job_sig sig_batch_norm(int legit, kf_job_tensor x, int wdt, int bdt, int rdt,
                                        int save_dt, int64_t save_n, double eps)
{
    kf_job_sig s = sig_of(legit ? "aten::_native_batch_norm_legit_no_training"
                                : "aten::native_batch_norm");
    int64_t c = x.sizes[1];
    s.in[s.n_in++] = x;
    sig_add_opt(&s, "weight", wdt, c);
    sig_add_opt(&s, "bias", bdt, c);
    s.in[s.n_in++] = sig_vec1(rdt, c);
    s.in[s.n_in++] = sig_vec1(rdt, c);
    if (!legit) sig_add_scalar(&s, "training", 'b')->i = 0;
    sig_add_scalar(&s, "momentum", 'd')->d = 0.1;
    sig_add_scalar(&s, "eps", 'd')->d = eps;
    s.out[s.n_out++] = x;
    s.out[0].align = 0;
    s.out[s.n_out++] = sig_vec1(save_dt, save_n);
    s.out[s.n_out++] = sig_vec1(save_dt, save_n);
    s.out[1].align = s.out[2].align = 0;
    return s;
}

/* mean.dim(self, dim, keepdim, dtype=None) reducing the nd dims dims[] (negative allowed), the
 * output as eager allocates it: contiguous in the reduced shape, fresh */
static inline kf_job_sig sig_mean(kf_job_tensor x, int nd, const int64_t *dims, int keepdim)
{
    kf_job_sig s = sig_of("aten::mean.dim");
    s.n_in = s.n_out = 1;
    s.in[0] = x;
    kf_job_scalar *l = sig_add_scalar(&s, "dim", 'l');
    l->n = nd;
    int red[KF_MAX_DIMS] = {0};
    for (int k = 0; k < nd; k++) {
        l->v[k] = dims[k];
        int64_t d = dims[k] < 0 ? dims[k] + x.ndim : dims[k];
        if (d >= 0 && d < x.ndim) red[d] = 1;
    }
    sig_add_scalar(&s, "keepdim", 'b')->i = keepdim;
    sig_add_scalar(&s, "dtype", 'n');
    int64_t sizes[KF_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < x.ndim; d++)
        if (keepdim || !red[d]) sizes[n++] = red[d] ? 1 : x.sizes[d];
    s.out[0] = sig_tensor(x.dtype, n, sizes, 0, 0);
    return s;
}

/* torch's pooling_output_shape (floor division; in ceil mode the last window must start inside
 * the input or the left padding) */
static inline int64_t sig_pool_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d,
                                        int ceil_mode)
{
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil_mode && (o - 1) * s >= in + p) o--;
    return o;
}

/* max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode) with two-int
 * lists (sh == 0: stride empty, meaning the kernel size); the outputs as eager allocates them,
 * fresh, in the input's memory format (out_cl: channels last): values of self's dtype and int64
 * indices */
static inline kf_job_sig sig_max_pool2d(kf_job_tensor x, int64_t kh, int64_t kw, int64_t sh,
                                        int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                                        int64_t dw, int ceil_mode, int out_cl)
{
    kf_job_sig s = sig_of("aten::max_pool2d_with_indices");
    s.n_in = 1;
    s.in[0] = x;
    kf_job_scalar *l = sig_add_scalar(&s, "kernel_size", 'l');
    l->n = 2, l->v[0] = kh, l->v[1] = kw;
    l = sig_add_scalar(&s, "stride", 'l');
    if (sh) l->n = 2, l->v[0] = sh, l->v[1] = sw;
    else sh = kh, sw = kw;
    l = sig_add_scalar(&s, "padding", 'l');
    l->n = 2, l->v[0] = ph, l->v[1] = pw;
    l = sig_add_scalar(&s, "dilation", 'l');
    l->n = 2, l->v[0] = dh, l->v[1] = dw;
    sig_add_scalar(&s, "ceil_mode", 'b')->i = ceil_mode;
    int64_t sizes[KF_MAX_DIMS];
    int nd = x.ndim;
    for (int d = 0; d < nd; d++) sizes[d] = x.sizes[d];
    if (nd >= 2) {
        sizes[nd - 2] = sig_pool_out_size(x.sizes[nd - 2], kh, sh, ph, dh, ceil_mode);
        sizes[nd - 1] = sig_pool_out_size(x.sizes[nd - 1], kw, sw, pw, dw, ceil_mode);
    }
    s.n_out = 2;
    s.out[0] = sig_tensor(x.dtype, nd, sizes, out_cl, 0);
    s.out[1] = sig_tensor(KF_I64, nd, sizes, out_cl, 0);
    return s;
}

/* cat(tensors, dim) of the n inputs xs (any strides; a legacy empty input is a [0] tensor), the
 * output as eager allocates it for inputs of one memory format: contiguous, fresh, of the first
 * input's dtype and the sizes of the first input that is not legacy empty, the cat dim summed */
static inline kf_job_sig sig_cat(int n, const kf_job_tensor *xs, int64_t dim)
{
    kf_job_sig s = sig_of("aten::cat");
    const kf_job_tensor *ref = NULL;
    int64_t len = 0;
    for (int i = 0; i < n; i++) {
        s.in[s.n_in++] = xs[i];
        if (xs[i].ndim == 1 && xs[i].sizes[0] == 0) continue;
        if (!ref) ref = &xs[i];
    }
    int nd = ref ? ref->ndim : 1, d = (int)(dim < 0 ? dim + nd : dim);
    int64_t sizes[KF_MAX_DIMS] = {0};
    for (int k = 0; ref && k < nd; k++) sizes[k] = ref->sizes[k];
    for (int i = 0; i < n; i++)
        if (!(xs[i].ndim == 1 && xs[i].sizes[0] == 0) && d >= 0 && d < xs[i].ndim)
            len += xs[i].sizes[d];
    if (d >= 0 && d < nd) sizes[d] = len;
    s.n_out = 1;
    s.out[0] = sig_tensor(n ? xs[0].dtype : KF_F32, nd, sizes, 0, 0);
    sig_add_scalar(&s, "dim", 'i')->i = dim;
    return s;
}

/* a tensor with explicit strides (in elements): a view such as a transpose or a slice */
static inline kf_job_tensor sig_tensor_strided(int dtype, int ndim, const int64_t *sizes,
                                               const int64_t *strides, int align)
{
    kf_job_tensor t = sig_tensor(dtype, ndim, sizes, 0, align);
    for (int d = 0; d < ndim; d++) t.strides[d] = strides[d];
    return t;
}

#endif
