/* The job signature's helpers (sig.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "forge/job/sig.h"

const kf_job_scalar *kf_job_scalar_find(const kf_job_sig *sig, const char *name)
{
    if (!sig || !name) return NULL;
    int n = sig->n_scalars < KF_JOB_MAX_SCALARS ? sig->n_scalars : KF_JOB_MAX_SCALARS;
    for (int i = 0; i < n; i++)
        if (!strncmp(sig->scalars[i].name, name, sizeof sig->scalars[i].name))
            return &sig->scalars[i];
    return NULL;
}

int kf_job_scalar_int(const kf_job_sig *sig, const char *name, int64_t *v)
{
    const kf_job_scalar *s = kf_job_scalar_find(sig, name);
    if (!s || s->kind != 'i') return 0;
    *v = s->i;
    return 1;
}

int kf_job_scalar_float(const kf_job_sig *sig, const char *name, float *f)
{
    const kf_job_scalar *o = kf_job_scalar_find(sig, name);
    if (!o) return 0;
    if (o->kind == 'd') *f = (float)o->d;
    else if (o->kind == 'i') *f = (float)o->i;
    else if (o->kind == 'b') *f = o->i ? 1.0f : 0.0f;
    else return 0;
    return isfinite(*f);
}

int64_t kf_job_tensor_numel(const kf_job_tensor *t)
{
    if (t->ndim < 0 || t->ndim > KF_MAX_DIMS) return -1;
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] < 0) return -1;
        if (t->sizes[d] && n > INT64_MAX / t->sizes[d]) return -1;
        n *= t->sizes[d];
    }
    return n;
}

int kf_job_tensor_contiguous(const kf_job_tensor *t)
{
    if (t->ndim < 0 || t->ndim > KF_MAX_DIMS || kf_job_tensor_numel(t) < 0) return 0;
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->sizes[d] != 1 && t->strides[d] != expect) return 0;
        expect *= t->sizes[d];
    }
    return 1;
}

int kf_job_tensor_same_shape(const kf_job_tensor *a, const kf_job_tensor *b)
{
    if (a->ndim != b->ndim || a->ndim < 0 || a->ndim > KF_MAX_DIMS) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] != b->sizes[d]) return 0;
    return 1;
}

int kf_job_tensor_dense_f32(const kf_job_tensor *t)
{
    return t->dtype == KF_F32 && kf_job_tensor_contiguous(t) && kf_job_tensor_numel(t) > 0;
}

int kf_job_tensor_dense(const kf_job_tensor *t)
{
    int dims[KF_MAX_DIMS], n = 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->sizes[d] != 1) dims[n++] = d;
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && t->strides[dims[b]] < t->strides[dims[b - 1]]; b--) {
            int tmp = dims[b];
            dims[b] = dims[b - 1];
            dims[b - 1] = tmp;
        }
    int64_t expect = 1;
    for (int k = 0; k < n; k++) {
        if (t->strides[dims[k]] != expect) return 0;
        expect *= t->sizes[dims[k]];
    }
    return 1;
}
