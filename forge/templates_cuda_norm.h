/* What the CUDA normalization templates share (templates_cuda_norm.c), private to the four
 * templates_cuda_norm*.c files. */
#ifndef KF_FORGE_TEMPLATES_CUDA_NORM_H
#define KF_FORGE_TEMPLATES_CUDA_NORM_H

#include "template.h"

/* Device code every norm kernel includes: raw vector access and team reductions. */
extern const char kf_cuda_norm_device[];
/* f32, f16 or bf16 */
int kf_cuda_norm_float(int dtype);
int kf_cuda_norm_esize(int dtype);
/* Map the schema's tensor arguments `names` (optional[a]: may be None) to indices into in[]
 * (idx[a] = -1 for a None); -1 when the signature does not fit. */
int kf_cuda_norm_tensor_args(const kf_job_sig *sig, const char *const *names,
                             const int *optional, int n, int *idx);
/* The "eps" scalar (none_value when it is None and none_value >= 0); -1 when unusable. */
int kf_cuda_norm_eps(const kf_job_sig *sig, double none_value, double *eps);
/* 0 contiguous, 1 channels_last, -1 other */
int kf_cuda_norm_layout(const kf_job_tensor *t);
int kf_cuda_norm_same_layout(const kf_job_tensor *out, int layout);
/* A vector of v elements may be loaded/stored at the tensor's alignment. */
int kf_cuda_norm_vec_fits(const kf_job_tensor *t, int fresh_out, int v);
/* "#undef NAME" then "#define NAME v", with `why` as a comment when given, into the source. */
void kf_cuda_norm_set(kf_strbuf *b, const char *name, long long v, const char *why);
const char *kf_cuda_norm_ptr(int dtype, int is_const);
/* The launch record's argument types: inputs (const) then outputs; returns how many. */
int kf_cuda_norm_args(const kf_job_sig *sig, const char **args);
/* Every output is a fresh f32/f16/bf16 tensor (no in-place norms). */
int kf_cuda_norm_fresh_outputs(const kf_job_sig *sig);

#endif
