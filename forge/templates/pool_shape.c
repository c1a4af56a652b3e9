#include "forge/templates/pool_shape.h"

#include <stdint.h>
#include <string.h>

#include "forge/templates/template.h"

#define POOL_MAX_PARAM 65536  /* kernel, stride, padding, dilation: beyond any real model */
#define POOL_MAX_SIZE ((int64_t)1 << 30)

/* An int list scalar with 1 or 2 values (or 0 when allow_empty) into v[0..2); 0 when unusable */
static int pool_pair(const kf_job_sig *sig, const char *name, int allow_empty, int64_t *v,
                     int *n)
{
    const kf_job_scalar *s = kf_job_scalar_find(sig, name);
    if (!s || s->kind != 'l' || s->n < (allow_empty ? 0 : 1) || s->n > 2) return 0;
    for (int k = 0; k < s->n; k++)
        if (s->v[k] < -POOL_MAX_PARAM || s->v[k] > POOL_MAX_PARAM) return 0;
    *n = s->n;
    v[0] = s->n ? s->v[0] : 0;
    v[1] = s->n == 2 ? s->v[1] : v[0];
    return 1;
}

/* torch's div_rtn: floor division for a positive divisor */
static int64_t pool_floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* torch's pooling_output_shape (with its checks on pad); -1 when torch refuses */
static int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d, int ceil)
{
    if (k <= 0 || s <= 0 || d <= 0 || pad < 0 || pad > ((k - 1) * d + 1) / 2) return -1;
    int64_t o = pool_floordiv(in + 2 * pad - d * (k - 1) - 1 + (ceil ? s - 1 : 0), s) + 1;
    if (ceil && (o - 1) * s >= in + pad) o--; /* the last window starts inside */
    return o >= 1 ? o : -1;
}

/* torch's is_channels_last_strides_2d_s4: what suggest_memory_format() says for a 4-D tensor */
static int pool_cl_suggested(const kf_job_tensor *t)
{
    static const int order[] = {1, 3, 2, 0};
    if (t->ndim != 4 || t->strides[1] == 0) return 0;
    int64_t min = 0;
    for (int k = 0; k < 4; k++) {
        int d = order[k];
        if (t->sizes[d] == 0 || t->strides[d] < min) return 0;
        if (d == 0 && min == t->strides[1]) return 0; /* ambiguous: torch says NCHW */
        if (t->sizes[d] > 1 && t->strides[d] > INT64_MAX / t->sizes[d]) return 0;
        min = t->strides[d] * (t->sizes[d] > 1 ? t->sizes[d] : 1);
    }
    return 1;
}

/* dense channels last (dims of size 1 may have any stride, as torch's checks allow) */
static int pool_cl_dense(const kf_job_tensor *t)
{
    if (t->ndim != 4 || kf_job_tensor_numel(t) < 0) return 0;
    static const int order[] = {1, 3, 2, 0};
    int64_t expect = 1;
    for (int k = 0; k < 4; k++) {
        int d = order[k];
        if (t->sizes[d] != 1 && t->strides[d] != expect) return 0;
        expect *= t->sizes[d];
    }
    return 1;
}

static int pool_dense(const kf_job_tensor *t, int cl)
{
    return cl ? pool_cl_dense(t) : kf_job_tensor_contiguous(t);
}

/* (n, c, h, w) strides of a 3-D or 4-D tensor (n: 0 for 3-D) */
static void pool_strides(const kf_job_tensor *t, int64_t *s)
{
    int o = t->ndim - 3;
    s[0] = o ? t->strides[0] : 0;
    for (int d = 0; d < 3; d++) s[1 + d] = t->strides[o + d];
}

int kf_pool_check(const kf_job_sig *sig, int cuda, kf_pool_shape *s)
{
    memset(s, 0, sizeof *s);
    if (!sig || strcmp(sig->op, "aten::max_pool2d_with_indices")) return 0;
    if (sig->n_in != 1 || sig->n_out != 2 || sig->out_alias[0] || sig->out_alias[1]) return 0;
    const kf_job_tensor *x = &sig->in[0], *y = &sig->out[0], *ix = &sig->out[1];
    const int typed = cuda ? kf_template_cuda_type(x->dtype) != NULL
                           : x->dtype == KF_F32 || x->dtype == KF_F16 || x->dtype == KF_BF16;
    if (!typed || y->dtype != x->dtype || ix->dtype != KF_I64) return 0;
    if (x->ndim != 3 && x->ndim != 4) return 0;
    int64_t k[2], st[2], pd[2], dl[2];
    int nk, ns, np, nd;
    if (!pool_pair(sig, "kernel_size", 0, k, &nk) || !pool_pair(sig, "stride", 1, st, &ns) ||
        !pool_pair(sig, "padding", 0, pd, &np) || !pool_pair(sig, "dilation", 0, dl, &nd))
        return 0;
    const kf_job_scalar *cm = kf_job_scalar_find(sig, "ceil_mode");
    if (!cm || cm->kind != 'b' || (cm->i != 0 && cm->i != 1)) return 0;
    if (ns == 0) st[0] = k[0], st[1] = k[1]; /* empty stride: the kernel size */
    s->ndim = x->ndim;
    s->kh = k[0], s->kw = k[1], s->sh = st[0], s->sw = st[1];
    s->ph = pd[0], s->pw = pd[1], s->dh = dl[0], s->dw = dl[1];
    s->ceil_mode = (int)cm->i;
    int o = x->ndim - 3;
    s->n = o ? x->sizes[0] : 1;
    s->c = x->sizes[o], s->h = x->sizes[o + 1], s->w = x->sizes[o + 2];
    if (s->n <= 0 || s->c <= 0 || s->h <= 0 || s->w <= 0) return 0;
    if (s->n > POOL_MAX_SIZE || s->c > POOL_MAX_SIZE || s->h > POOL_MAX_SIZE ||
        s->w > POOL_MAX_SIZE)
        return 0;
    s->oh = pool_out_size(s->h, s->kh, s->ph, s->sh, s->dh, s->ceil_mode);
    s->ow = pool_out_size(s->w, s->kw, s->pw, s->sw, s->dw, s->ceil_mode);
    if (s->oh < 1 || s->ow < 1) return 0;
    /* eager's indices are int h * W + w (the NCHW start may sit up to a dilation below H) */
    if ((s->h + s->dh) * s->w > INT32_MAX) return 0;
    /* the element counts stay far from int64 overflow */
    int64_t nin = kf_job_tensor_numel(x), nout = kf_job_tensor_numel(y);
    if (nin <= 0 || nin > ((int64_t)1 << 46) || nout <= 0 || nout > ((int64_t)1 << 46)) return 0;
    /* eager's kernel and memory format */
    s->cl = pool_cl_suggested(x);
    if (!pool_dense(x, s->cl)) return 0;
    for (int j = 0; j < 2; j++) {
        const kf_job_tensor *t = &sig->out[j];
        if (t->ndim != x->ndim) return 0;
        if ((o && t->sizes[0] != s->n) || t->sizes[o] != s->c || t->sizes[o + 1] != s->oh ||
            t->sizes[o + 2] != s->ow)
            return 0;
        if (!pool_dense(t, s->cl)) return 0;
    }
    pool_strides(x, s->xs);
    pool_strides(y, s->ys);
    pool_strides(ix, s->is);
    return 1;
}
