/* The gathers' plan and offsets (gather_ops.h). */
#include "forge/templates/gather_ops.h"

#include <string.h>

static int g_dtype_ok(int dt, int host)
{
    switch (dt) {
    case KF_F32: case KF_F64: case KF_I8: case KF_U8: case KF_I16: case KF_I32: case KF_I64:
    case KF_BOOL: case KF_F16: case KF_BF16:
        return 1;
    default:
        (void)host;
        return 0;
    }
}

static int g_dim(const kf_job_sig *sig, int ndim, int *dim)
{
    const kf_job_scalar *s = kf_job_scalar_find(sig, "dim");
    if (!s || s->kind != 'i' || ndim < 1 || s->i < -ndim || s->i >= ndim) return 0;
    *dim = (int)(s->i < 0 ? s->i + ndim : s->i);
    return 1;
}

int kf_gather_plan_make(const kf_job_sig *sig, int host, kf_gather_plan *p)
{
    memset(p, 0, sizeof *p);
    if (!sig || sig->n_in != 2 || sig->n_out != 1 || sig->out_alias[0] != 0) return 0;
    const kf_job_tensor *s = &sig->in[0], *ix = &sig->in[1], *y = &sig->out[0];
    if (ix->dtype != KF_I64 && ix->dtype != KF_I32) return 0;
    if (!g_dtype_ok(s->dtype, host) || y->dtype != s->dtype) return 0;
    if (y->ndim < 1 || y->ndim > KF_MAX_DIMS || s->ndim < 1 || ix->ndim > KF_MAX_DIMS) return 0;
    int64_t ny = kf_job_tensor_numel(y), ni = kf_job_tensor_numel(ix), ns = kf_job_tensor_numel(s);
    if (ny <= 0 || ni <= 0 || ns <= 0 || ny > ((int64_t)1 << 46) || ns > ((int64_t)1 << 46))
        return 0;
    for (int d = 0; d < s->ndim; d++)
        if (s->strides[d] < 0) return 0;
    for (int d = 0; d < ix->ndim; d++)
        if (ix->strides[d] < 0) return 0;
    if (!kf_job_tensor_dense(y)) return 0;
    p->src_dt = s->dtype;
    p->idx_dt = ix->dtype;
    p->n = y->ndim;
    p->numel = ny;
    if (!strcmp(sig->op, "aten::embedding")) {
        if (s->ndim != 2 || y->ndim != ix->ndim + 1) return 0;
        for (int j = 0; j < ix->ndim; j++) {
            if (y->sizes[j] != ix->sizes[j]) return 0;
            p->ist[j] = ix->strides[j];
            p->sst[j] = 0;
        }
        if (y->sizes[ix->ndim] != s->sizes[1]) return 0;
        p->ist[ix->ndim] = 0;
        p->sst[ix->ndim] = s->strides[1];
        p->gst = s->strides[0];
        p->v = s->sizes[0];
    } else if (!strcmp(sig->op, "aten::index_select")) {
        int dim;
        if (!g_dim(sig, s->ndim, &dim) || ix->ndim > 1 || y->ndim != s->ndim) return 0;
        for (int j = 0; j < s->ndim; j++) {
            if (y->sizes[j] != (j == dim ? ni : s->sizes[j])) return 0;
            p->ist[j] = j == dim && ix->ndim == 1 ? ix->strides[0] : 0;
            p->sst[j] = j == dim ? 0 : s->strides[j];
        }
        p->gst = s->strides[dim];
        p->v = s->sizes[dim];
    } else if (!strcmp(sig->op, "aten::gather")) {
        int dim;
        if (!g_dim(sig, s->ndim, &dim) || ix->ndim != s->ndim || y->ndim != s->ndim) return 0;
        for (int j = 0; j < s->ndim; j++) {
            if (y->sizes[j] != ix->sizes[j]) return 0;
            if (j != dim && ix->sizes[j] > s->sizes[j]) return 0; /* eager refuses it */
            p->ist[j] = ix->strides[j];
            p->sst[j] = j == dim ? 0 : s->strides[j];
        }
        p->gst = s->strides[dim];
        p->v = s->sizes[dim];
    } else {
        return 0;
    }
    for (int j = 0; j < y->ndim; j++) {
        p->size[j] = y->sizes[j];
        p->ost[j] = y->strides[j];
    }
    p->ni = ix->ndim;
    p->inumel = ni;
    for (int j = 0; j < ix->ndim; j++) {
        p->isize[j] = ix->sizes[j];
        p->istride[j] = ix->strides[j];
    }
    return p->v >= 1;
}

/* offset of flat index `var` over dims [0, n) of sizes (row-major, the last fastest) */
static void g_off(kf_strbuf *b, const char *fnq, const char *name, int n, const int64_t *size,
                  const int64_t *st)
{
    kf_strbuf_printf(b, "%s long long %s(long long q)\n{\n    (void)q;\n    return 0", fnq, name);
    int64_t below = 1;
    for (int d = n - 1; d >= 0; d--) {
        if (size[d] != 1 && st[d] != 0) {
            kf_strbuf_printf(b, " + q");
            if (below > 1) kf_strbuf_printf(b, " / %lldLL", (long long)below);
            if (d > 0) kf_strbuf_printf(b, " %% %lldLL", (long long)size[d]);
            if (st[d] != 1) kf_strbuf_printf(b, " * %lldLL", (long long)st[d]);
        }
        below *= size[d];
    }
    kf_strbuf_printf(b, ";\n}\n");
}

void kf_gather_emit(kf_strbuf *b, const kf_gather_plan *p, const char *fnq)
{
    const int l = p->n - 1;
    kf_strbuf_printf(b,
                     "#define KF_Q %lldLL /* rows: all but the last output dim */\n"
                     "#define KF_D0 %lldLL\n#define KF_IST0 %lldLL\n#define KF_SST0 %lldLL\n"
                     "#define KF_OST0 %lldLL\n#define KF_GST %lldLL\n#define KF_V %lldLL\n"
                     "#define KF_IN %lldLL\n",
                     (long long)(p->numel / p->size[l]), (long long)p->size[l],
                     (long long)p->ist[l], (long long)p->sst[l], (long long)p->ost[l],
                     (long long)p->gst, (long long)p->v, (long long)p->inumel);
    /* the rows: dims [0, l) */
    g_off(b, fnq, "kf_io", l, p->size, p->ist);
    g_off(b, fnq, "kf_so", l, p->size, p->sst);
    g_off(b, fnq, "kf_oo", l, p->size, p->ost);
    g_off(b, fnq, "kf_ix", p->ni, p->isize, p->istride);
}
