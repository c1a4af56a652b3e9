/* What the CUDA normalization templates share (cuda_norm.c), private to the
 * cuda_norm*.c files. */
#ifndef KF_FORGE_TEMPLATES_CUDA_NORM_H
#define KF_FORGE_TEMPLATES_CUDA_NORM_H

#include "forge/templates/bodies.h"
#include "forge/templates/template.h"

/* f32, f16 or bf16 */
int kf_cuda_norm_float(int dtype);
int kf_cuda_norm_esize(int dtype);
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

/* ---- strided tensors (layer_norm / rms_norm rows at offsets given by the leading dims) ---- */

/* 1 + the largest element offset (0 for an empty tensor); -1 for a negative stride, a malformed
 * tensor or an offset past 2^62. */
int64_t kf_cuda_norm_extent(const kf_job_tensor *t);
/* No two elements share an address (checked the sufficient way: the dims of size > 1 sorted by
 * stride, each stride past the extent of the smaller ones). */
int kf_cuda_norm_no_overlap(const kf_job_tensor *t);
/* Dims [from, ndim) are row-major contiguous among themselves (inner stride 1; size-1 dims may
 * have any stride): each row of those dims is one block of adjacent elements. */
int kf_cuda_norm_block_dense(const kf_job_tensor *t, int from);
/* Every dim d < nlead of size > 1 has a stride that is a multiple of v. */
int kf_cuda_norm_lead_strides_div(const kf_job_tensor *t, int nlead, int64_t v);
/* Dims [from, to) of t, innermost first, with size-1 dims dropped and dims that merge (outer
 * stride = inner stride * inner size) merged: their count, sizes and strides. */
int kf_cuda_norm_merge_dims(const kf_job_tensor *t, int from, int to, int64_t *size, int64_t *stride);
/* Emits `__device__ long long name(unsigned r)`: the element offset in t of logical row r, the
 * rows being the leading nlead dims in row-major order (r < 2^31); size-1 dims are dropped and
 * dims that merge (outer stride = inner stride * inner size) merged, so the divisions, by
 * constants, are as few as the layout allows. */
void kf_cuda_norm_emit_row_offset(kf_strbuf *b, const char *name, const kf_job_tensor *t,
                                  int nlead);

/* What a native_layer_norm / _fused_rms_norm signature is, once checked. */
typedef struct kf_norm_rows {
    int rms;
    int w, b;        /* index into in[] of weight / bias, -1 when None */
    int nn;          /* normalized dims: the trailing nn dims of the input */
    int64_t rows, n; /* rows of n elements */
    double eps;
} kf_norm_rows;
/* Everything but the layouts of x and y's normalized dims: op, arguments, dtypes, shapes, eps;
 * weight / bias contiguous, exactly normalized_shape; mean / rstd one per row in logical row
 * order (contiguous, any shape with `rows` elements); y of x's shape and dtype, with no
 * overlapping elements; x's strides >= 0 (rows may overlap: they are only read). 1 when ok. */
int kf_cuda_norm_rows_parse(const kf_job_sig *sig, int rms, kf_norm_rows *r);

#endif
