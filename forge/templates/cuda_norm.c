/* Shared by the CUDA normalization templates (cuda_norm_row.c: layer_norm and
 * rms_norm over rows; cuda_norm_cols.c: the same over a strided normalized dim;
 * cuda_norm_group.c: group_norm; cuda_norm_batch.c: eval
 * batch_norm): the checks their applies() and render() have in common (cuda_norm.h,
 * private to these files). The device helpers every one of their kernels includes are
 * kernels/cuda_norm_common.cuh.
 *
 * Conventions of the norm kernels: math in fp32, inputs and outputs in the dtypes the signature
 * gives (f32, f16, bf16), vectors of KF_VEC elements moved as one raw load/store of up to 16
 * bytes (32 for 8 floats: two) and only where the signature's alignment allows it. Outputs are
 * fresh tensors (out_alias 0) that torch allocated, so their data pointers are at least 16-byte
 * aligned unless out[].align says otherwise. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/cuda_norm.h"

int kf_cuda_norm_float(int dtype)
{
    return dtype == KF_F32 || dtype == KF_F16 || dtype == KF_BF16;
}

int kf_cuda_norm_esize(int dtype)
{
    return dtype == KF_F32 ? 4 : 2;
}

int kf_cuda_norm_eps(const kf_job_sig *sig, double none_value, double *eps)
{
    const kf_job_scalar *e = kf_job_scalar_find(sig, "eps");
    if (!e) return -1;
    if (e->kind == 'i') *eps = (double)e->i;
    else if (e->kind == 'd' && isfinite(e->d)) *eps = e->d;
    else if (e->kind == 'n' && none_value >= 0) *eps = none_value;
    else return -1;
    /* it becomes a float in the kernel, as in torch */
    return fabs(*eps) <= 3.0e38 ? 0 : -1;
}

static int channels_last(const kf_job_tensor *t)
{
    if (t->ndim < 3 || t->ndim > KF_MAX_DIMS || kf_job_tensor_numel(t) < 0) return 0;
    /* dim 1 innermost, then the spatial dims in order, then dim 0; size-1 dims may have any
     * stride, as in torch's checks */
    int64_t expect = 1;
    if (t->sizes[1] != 1 && t->strides[1] != expect) return 0;
    expect *= t->sizes[1];
    for (int d = t->ndim - 1; d >= 2; d--) {
        if (t->sizes[d] != 1 && t->strides[d] != expect) return 0;
        expect *= t->sizes[d];
    }
    return t->sizes[0] == 1 || t->strides[0] == expect;
}

int kf_cuda_norm_layout(const kf_job_tensor *t)
{
    if (kf_job_tensor_contiguous(t)) return 0;
    return channels_last(t) ? 1 : -1;
}

int kf_cuda_norm_same_layout(const kf_job_tensor *out, int layout)
{
    return layout == 0 ? kf_job_tensor_contiguous(out) : channels_last(out);
}

int kf_cuda_norm_vec_fits(const kf_job_tensor *t, int fresh_out, int v)
{
    int bytes = v * kf_cuda_norm_esize(t->dtype);
    int need = bytes > 16 ? 16 : bytes; /* 32 bytes go as two 16-byte accesses */
    int align = t->align > 0 ? t->align : fresh_out ? 16 : kf_cuda_norm_esize(t->dtype);
    if (align > 16) align = 16;
    return need <= align && align % need == 0;
}

void kf_cuda_norm_set(kf_strbuf *b, const char *name, long long v, const char *why)
{
    kf_strbuf_printf(b, "#undef %s\n", name);
    kf_template_define(b, name, v, why);
}

const char *kf_cuda_norm_ptr(int dtype, int is_const)
{
    switch (dtype) {
    case KF_F32: return is_const ? "const float*" : "float*";
    case KF_F16: return is_const ? "const __half*" : "__half*";
    case KF_BF16: return is_const ? "const __nv_bfloat16*" : "__nv_bfloat16*";
    default: return NULL;
    }
}

int kf_cuda_norm_args(const kf_job_sig *sig, const char **args)
{
    int na = 0;
    for (int i = 0; i < sig->n_in; i++) args[na++] = kf_cuda_norm_ptr(sig->in[i].dtype, 1);
    for (int j = 0; j < sig->n_out; j++) args[na++] = kf_cuda_norm_ptr(sig->out[j].dtype, 0);
    return na;
}

int kf_cuda_norm_fresh_outputs(const kf_job_sig *sig)
{
    if (sig->n_out < 1 || sig->n_out > KF_JOB_MAX_OUTPUTS) return 0;
    for (int j = 0; j < sig->n_out; j++)
        if (sig->out_alias[j] != 0 || !kf_cuda_norm_float(sig->out[j].dtype)) return 0;
    return sig->n_in + sig->n_out <= 16;
}

/* ---- strided tensors ---- */

#define NORM_OFFSET_MAX ((int64_t)1 << 62)

int64_t kf_cuda_norm_extent(const kf_job_tensor *t)
{
    if (t->ndim < 0 || t->ndim > KF_MAX_DIMS) return -1;
    int64_t last = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] < 0) return -1;
        if (t->sizes[d] == 0) return 0;
    }
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] == 1) continue;
        if (t->strides[d] < 0) return -1;
        if (t->strides[d] > 0 && t->sizes[d] - 1 > (NORM_OFFSET_MAX - last) / t->strides[d])
            return -1;
        last += (t->sizes[d] - 1) * t->strides[d];
    }
    return last + 1;
}

int kf_cuda_norm_no_overlap(const kf_job_tensor *t)
{
    if (kf_cuda_norm_extent(t) < 0) return 0;
    int dims[KF_MAX_DIMS], nd = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] <= 1) continue;
        int k = nd++; /* insertion sort by stride */
        while (k > 0 && t->strides[dims[k - 1]] > t->strides[d]) dims[k] = dims[k - 1], k--;
        dims[k] = d;
    }
    int64_t reach = 0; /* largest offset the smaller dims reach */
    for (int k = 0; k < nd; k++) {
        const int d = dims[k];
        if (t->strides[d] <= reach) return 0;
        reach += (t->sizes[d] - 1) * t->strides[d]; /* no overflow: bounded by the extent */
    }
    return 1;
}

int kf_cuda_norm_block_dense(const kf_job_tensor *t, int from)
{
    if (from < 0 || from > t->ndim || t->ndim > KF_MAX_DIMS) return 0;
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= from; d--) {
        if (t->sizes[d] != 1 && t->strides[d] != expect) return 0;
        expect *= t->sizes[d];
    }
    return 1;
}

int kf_cuda_norm_lead_strides_div(const kf_job_tensor *t, int nlead, int64_t v)
{
    for (int d = 0; d < nlead && d < t->ndim; d++)
        if (t->sizes[d] > 1 && t->strides[d] % v) return 0;
    return 1;
}

int kf_cuda_norm_merge_dims(const kf_job_tensor *t, int from, int to, int64_t *size, int64_t *stride)
{
    int nd = 0;
    for (int d = to - 1; d >= from; d--) {
        if (t->sizes[d] == 1) continue;
        if (nd > 0 && t->strides[d] == stride[nd - 1] * size[nd - 1]) {
            size[nd - 1] *= t->sizes[d];
            continue;
        }
        size[nd] = t->sizes[d], stride[nd] = t->strides[d], nd++;
    }
    return nd;
}

void kf_cuda_norm_emit_row_offset(kf_strbuf *b, const char *name, const kf_job_tensor *t,
                                  int nlead)
{
    int64_t size[KF_MAX_DIMS], stride[KF_MAX_DIMS];
    const int nd = kf_cuda_norm_merge_dims(t, 0, nlead, size, stride);
    kf_strbuf_printf(b,
                     "/* element offset of logical row r (the leading dims, row-major) */\n"
                     "__device__ __forceinline__ long long %s(unsigned r)\n{\n"
                     "    long long o = 0;\n",
                     name);
    for (int k = 0; k + 1 < nd; k++)
        kf_strbuf_printf(b, "    o += (long long)(r %% %lluu) * %lldLL;\n    r /= %lluu;\n",
                         (unsigned long long)size[k], (long long)stride[k],
                         (unsigned long long)size[k]);
    if (nd > 0) kf_strbuf_printf(b, "    o += (long long)r * %lldLL;\n", (long long)stride[nd - 1]);
    else kf_strbuf_printf(b, "    (void)r;\n");
    kf_strbuf_printf(b, "    return o;\n}\n");
}

int kf_cuda_norm_rows_parse(const kf_job_sig *sig, int rms, kf_norm_rows *r)
{
    static const char *const names[] = {"input", "weight", "bias"};
    static const int opt[] = {0, 1, 1};
    int idx[3] = {-1, -1, -1};
    memset(r, 0, sizeof *r);
    r->rms = rms;
    if (!sig || strcmp(sig->op, rms ? "aten::_fused_rms_norm" : "aten::native_layer_norm"))
        return 0;
    if (sig->n_out != (rms ? 2 : 3) || !kf_cuda_norm_fresh_outputs(sig)) return 0;
    if (kf_template_tensor_args(sig, names, opt, rms ? 2 : 3, idx) < 0) return 0;
    r->w = idx[1];
    r->b = rms ? -1 : idx[2];
    const kf_job_tensor *x = &sig->in[0];
    if (!kf_cuda_norm_float(x->dtype) || x->ndim < 1 || kf_cuda_norm_extent(x) <= 0) return 0;
    int64_t total = kf_job_tensor_numel(x);
    if (total <= 0) return 0;
    const kf_job_scalar *ns = kf_job_scalar_find(sig, "normalized_shape");
    if (!ns || ns->kind != 'l' || ns->n < 1 || ns->n > x->ndim) return 0;
    r->nn = ns->n;
    r->n = 1;
    for (int k = 0; k < ns->n; k++) {
        if (ns->v[k] != x->sizes[x->ndim - ns->n + k]) return 0;
        r->n *= ns->v[k];
    }
    if (r->n > INT_MAX / 2) return 0; /* vector indices are ints */
    r->rows = total / r->n;
    if (r->rows > INT_MAX) return 0; /* blocks; row offsets are computed from 32-bit indices */
    for (int i = 1; i < sig->n_in; i++) { /* weight, bias: exactly normalized_shape */
        const kf_job_tensor *p = &sig->in[i];
        if (!kf_cuda_norm_float(p->dtype) || !kf_job_tensor_contiguous(p) || p->ndim != ns->n)
            return 0;
        for (int k = 0; k < ns->n; k++)
            if (p->sizes[k] != ns->v[k]) return 0;
    }
    if (kf_cuda_norm_eps(sig, rms ? 1.1920928955078125e-07 /* FLT_EPSILON */ : -1.0, &r->eps) <
        0)
        return 0;
    const kf_job_tensor *y = &sig->out[0];
    if (y->dtype != x->dtype || !kf_job_tensor_same_shape(x, y) || !kf_cuda_norm_no_overlap(y))
        return 0;
    for (int j = 1; j < sig->n_out; j++) /* mean, rstd: one per row, any contiguous shape */
        if (!kf_job_tensor_contiguous(&sig->out[j]) ||
            kf_job_tensor_numel(&sig->out[j]) != r->rows)
            return 0;
    return 1;
}
