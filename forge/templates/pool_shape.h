/* aten::max_pool2d_with_indices signatures, as the pooling templates (cuda_pool.c, host_pool.c)
 * read them: torch's output sizes and checks (pooling_output_shape), which kernel eager runs
 * (its memory-format heuristic) and the tensors' (n, c, h, w) strides. */
#ifndef KF_FORGE_TEMPLATES_POOL_SHAPE_H
#define KF_FORGE_TEMPLATES_POOL_SHAPE_H

#include <stdint.h>

#include "forge/job/sig.h"

typedef struct kf_pool_shape {
    int ndim, cl; /* cl: eager's channels-last (NHWC) kernel */
    int64_t n, c, h, w, oh, ow;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int ceil_mode;
    int64_t xs[4], ys[4], is[4]; /* strides of input, values, indices as (n, c, h, w) */
} kf_pool_shape;

/* 1 when sig is a max_pool2d_with_indices call a pooling template can compute as eager does,
 * filling s: an input [N, C, H, W] or [C, H, W] of a dtype of the backend (cuda: any the CUDA
 * templates take; host: f32, f16, bf16), dense in the memory format eager picks (s->cl), outputs
 * of torch's sizes dense in that format, indices that fit eager's int. */
int kf_pool_check(const kf_job_sig *sig, int cuda, kf_pool_shape *s);

#endif
