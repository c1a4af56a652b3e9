/* What the aten::cat templates share (cat.c): the analysis of a cat signature into
 * parts and collapsed dims, used by host_cat (host_cat.c) and cuda_cat
 * (cuda_cat.c). Private to those files and their tests.
 *
 * torch.cat's rules, as the analysis applies them: dim may be negative and wraps against the
 * first input that is not a legacy empty tensor (1-D of size 0); legacy empty inputs are
 * skipped; every other input has the output's ndim and sizes except along the cat dim, whose
 * lengths add up to the output's. Inputs may have any strides (transposed, expanded, slices);
 * the output is dense in any dim order (eager allocates it). Every input, the skipped ones
 * included, has the output's dtype (no type promotion; eager promotes over the skipped ones
 * too), one of f32 f16 bf16 f64 i8 u8 i16 i32 i64 bool: the kernels move raw element bits. */
#ifndef KF_FORGE_TEMPLATES_CAT_H
#define KF_FORGE_TEMPLATES_CAT_H

#include "forge/templates/template.h"

/* An input with elements, in list order: which argument, where it lands along the cat dim. */
typedef struct kf_cat_part {
    int in;                     /* index into sig->in (= kernel argument) */
    int64_t off, len;           /* along the cat dim of the output */
    int64_t st[KF_MAX_DIMS];    /* its strides along the collapsed dims */
    int64_t reach;              /* 1 + its largest element offset */
    int align;                  /* bytes its data pointer is aligned to (0: unknown) */
} kf_cat_part;

typedef struct kf_cat_plan {
    int dtype, esize;
    int64_t n;                  /* output elements */
    /* The output's dims of size > 1 in memory order, innermost first, merged where the output
     * and every part stay contiguous; the cat dim is never merged while there are several
     * parts. Output strides are dense: ost[0] = 1. */
    int nd;
    int cat;                    /* the collapsed dim of the cat, -1 when one part is the whole */
    int64_t size[KF_MAX_DIMS];  /* the output's (cat: the sum of the parts' lengths) */
    int64_t ost[KF_MAX_DIMS];
    int n_parts;
    kf_cat_part part[KF_JOB_MAX_TENSORS];
} kf_cat_plan;

/* 1 when `sig` is an aten::cat that the cat templates compute exactly (p filled), else 0. */
int kf_cat_analyze(const kf_job_sig *sig, kf_cat_plan *p);

/* Part k's size along collapsed dim d (its length along the cat dim). */
static inline int64_t kf_cat_part_size(const kf_cat_plan *p, int k, int d)
{
    return d == p->cat ? p->part[k].len : p->size[d];
}

/* The launch-record type of a cat element: its dtype's own name ("__nv_bfloat16", "int64_t")
 * for CUDA, where the kernel takes raw words; the unsigned integer of its size ("uint16_t") for
 * the host, whose kernel takes exactly that C type. NULL for a dtype the cat templates refuse. */
const char *kf_cat_launch_type(int dtype, int host);

#endif
