/* The aten::cat reference of the cat template tests (test_templates_host.c,
 * test_templates_cuda_cat.c): torch.cat's rules written out directly, element by element, apart
 * from the templates' own analysis (forge/templates/cat.c). Raw bytes: cat copies bits. */
#ifndef KF_TESTS_CAT_REF_H
#define KF_TESTS_CAT_REF_H

#include <stdint.h>
#include <string.h>

#include "forge/templates/template.h"

static inline int cat_ref_skipped(const kf_job_tensor *t)
{
    return t->ndim == 1 && t->sizes[0] == 0;
}

/* Elements of a tensor's strided span (0 when it is empty). */
static inline int64_t cat_ref_span(const kf_job_tensor *t)
{
    int64_t last = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] == 0) return 0;
        last += (t->sizes[d] - 1) * t->strides[d];
    }
    return last + 1;
}

/* out (the output's span, es-byte elements) = cat(ins) as torch computes it for sig */
static inline void cat_ref(const kf_job_sig *sig, int es, const unsigned char *const *ins,
                           unsigned char *out)
{
    const kf_job_tensor *y = &sig->out[0];
    int nd = y->ndim;
    int64_t dim = kf_job_scalar_find(sig, "dim")->i;
    if (dim < 0) dim += nd;
    int64_t n = kf_job_tensor_numel(y), idx[KF_MAX_DIMS] = {0};
    for (int64_t e = 0; e < n; e++) {
        int64_t k = idx[dim], yo = 0, xo = 0;
        int i = 0;
        for (; i < sig->n_in; i++) { /* the input holding cat coordinate k */
            if (cat_ref_skipped(&sig->in[i])) continue;
            if (k < sig->in[i].sizes[dim]) break;
            k -= sig->in[i].sizes[dim];
        }
        for (int d = 0; d < nd; d++) {
            yo += idx[d] * y->strides[d];
            xo += (d == dim ? k : idx[d]) * sig->in[i].strides[d];
        }
        memcpy(out + yo * es, ins[i] + xo * es, (size_t)es);
        for (int d = nd - 1; d >= 0 && ++idx[d] == y->sizes[d]; d--) idx[d] = 0;
    }
}

#endif
