/* The analysis of an aten::cat signature (cat.h), shared by host_cat and cuda_cat. */
#include <stdint.h>
#include <string.h>

#include "compile/compiler.h" /* KF_LAUNCH_MAX_ARGS */
#include "forge/templates/cat.h"

#define CAT_MAX_NUMEL ((int64_t)1 << 46) /* as the elementwise templates: offsets stay exact */

static const struct {
    int dtype;
    const char *cuda, *host;
} cat_types[] = {
    {KF_F32, "float", "uint32_t"},  {KF_F16, "__half", "uint16_t"},
    {KF_BF16, "__nv_bfloat16", "uint16_t"}, {KF_F64, "double", "uint64_t"},
    {KF_I8, "int8_t", "uint8_t"},   {KF_U8, "uint8_t", "uint8_t"},
    {KF_I16, "int16_t", "uint16_t"}, {KF_I32, "int32_t", "uint32_t"},
    {KF_I64, "int64_t", "uint64_t"}, {KF_BOOL, "bool", "uint8_t"},
};

const char *kf_cat_launch_type(int dtype, int host)
{
    for (size_t i = 0; i < sizeof cat_types / sizeof cat_types[0]; i++)
        if (cat_types[i].dtype == dtype) return host ? cat_types[i].host : cat_types[i].cuda;
    return NULL;
}

/* torch.cat skips these whatever the other inputs' ndim (a leftover of the old empty tensor) */
static int legacy_empty(const kf_job_tensor *t)
{
    return t->ndim == 1 && t->sizes[0] == 0;
}

/* (kf_job_dtype_size is job.c's, in the worker library: the templates, in kf_core, cannot call it) */
static int esize_of(int dtype)
{
    switch (dtype) {
    case KF_F64: case KF_I64: return 8;
    case KF_F32: case KF_I32: return 4;
    case KF_F16: case KF_BF16: case KF_I16: return 2;
    default: return 1;
    }
}

/* Non-negative strides, and the largest element offset within int64 (job.c checks the same
 * on job files; a signature built elsewhere may not have been). */
static int offsets_fit(const kf_job_tensor *t)
{
    int64_t r = 0;
    for (int d = 0; d < t->ndim; d++) {
        int64_t step = t->sizes[d] - 1, st = t->strides[d];
        if (st < 0 || step < 0) return 0;
        if (step && st > (INT64_MAX - r) / step) return 0;
        r += step * st;
    }
    return 1;
}

int kf_cat_analyze(const kf_job_sig *sig, kf_cat_plan *p)
{
    if (!sig || !p || strcmp(sig->op, "aten::cat") || sig->n_out != 1 || sig->out_alias[0])
        return 0;
    /* every input and the output are kernel arguments */
    if (sig->n_in < 1 || sig->n_in > KF_JOB_MAX_TENSORS || sig->n_in + 1 > KF_LAUNCH_MAX_ARGS)
        return 0;
    const kf_job_scalar *ds = kf_job_scalar_find(sig, "dim");
    const kf_job_tensor *y = &sig->out[0];
    if (!ds || ds->kind != 'i' || !kf_cat_launch_type(y->dtype, 0)) return 0;
    memset(p, 0, sizeof *p);
    p->dtype = y->dtype;
    p->esize = esize_of(y->dtype);

    const kf_job_tensor *ref = NULL; /* the dim wraps against the first non-skipped input */
    for (int i = 0; i < sig->n_in; i++) {
        const kf_job_tensor *x = &sig->in[i];
        if (x->dtype != y->dtype || x->ndim < 0 || x->ndim > KF_MAX_DIMS) return 0;
        if (!ref && !legacy_empty(x)) ref = x;
    }
    if (!ref) return 0; /* every input skipped: an empty output */
    int nd = ref->ndim;
    if (nd < 1 || ds->i < -nd || ds->i >= nd || y->ndim != nd) return 0;
    int dim = (int)(ds->i < 0 ? ds->i + nd : ds->i);
    p->n = kf_job_tensor_numel(y);
    if (p->n <= 0 || p->n > CAT_MAX_NUMEL) return 0;

    int64_t off = 0;
    for (int i = 0; i < sig->n_in; i++) {
        const kf_job_tensor *x = &sig->in[i];
        if (legacy_empty(x)) continue;
        if (x->ndim != nd) return 0;
        for (int d = 0; d < nd; d++)
            if (d != dim && x->sizes[d] != y->sizes[d]) return 0;
        if (x->sizes[dim] < 0 || x->sizes[dim] > y->sizes[dim] - off) return 0;
        if (x->sizes[dim] == 0) continue; /* contributes nothing */
        if (!offsets_fit(x)) return 0;
        kf_cat_part *k = &p->part[p->n_parts++];
        k->in = i;
        k->off = off;
        k->len = x->sizes[dim];
        k->align = x->align;
        off += x->sizes[dim];
    }
    if (off != y->sizes[dim] || p->n_parts < 1) return 0;

    /* the output's dims of size > 1, innermost first; dense (any order) */
    int dims[KF_MAX_DIMS], n = 0;
    for (int d = 0; d < nd; d++)
        if (y->sizes[d] > 1) dims[n++] = d;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && y->strides[dims[j]] < y->strides[dims[j - 1]]; j--) {
            int tmp = dims[j];
            dims[j] = dims[j - 1];
            dims[j - 1] = tmp;
        }
    int64_t expect = 1;
    for (int i = 0; i < n; i++) {
        if (y->strides[dims[i]] != expect) return 0; /* gaps or overlap */
        expect *= y->sizes[dims[i]];
    }
    /* one part is a strided copy: the cat dim is a dim like any other */
    int cat_dim = p->n_parts > 1 ? dim : -1;
    p->cat = -1;
    if (n == 0) { /* one element: any stride addresses it */
        p->nd = 1;
        p->size[0] = 1;
        p->ost[0] = 1;
        return 1;
    }
    int prev = -1; /* the original dim last added */
    for (int i = 0; i < n; i++) {
        int d = dims[i], c = p->nd - 1;
        int merge = c >= 0 && d != cat_dim && prev != cat_dim;
        for (int k = 0; k < p->n_parts && merge; k++)
            merge = p->part[k].st[c] <= INT64_MAX / p->size[c] &&
                    sig->in[p->part[k].in].strides[d] == p->part[k].st[c] * p->size[c];
        if (merge) {
            p->size[c] *= y->sizes[d];
        } else {
            c = p->nd++;
            p->size[c] = y->sizes[d];
            p->ost[c] = y->strides[d];
            for (int k = 0; k < p->n_parts; k++)
                p->part[k].st[c] = sig->in[p->part[k].in].strides[d];
            if (d == cat_dim) p->cat = c;
        }
        prev = d;
    }
    for (int k = 0; k < p->n_parts; k++) { /* within int64: offsets_fit said so */
        int64_t r = 0;
        for (int d = 0; d < p->nd; d++) r += (kf_cat_part_size(p, k, d) - 1) * p->part[k].st[d];
        p->part[k].reach = r + 1;
    }
    return 1;
}
