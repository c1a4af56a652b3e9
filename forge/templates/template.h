/* The builtin kernel template library (docs/architecture.md, "MCTS": the `builtin` proposer).
 *
 * A template is a parametrized kernel for one op family. Given the exact signature of a job
 * (kf_job_sig) and one value for each of its knobs, it renders a candidate as the kernel contract
 * wants it (docs/architecture.md, "Kernel contract"): source text with every shape and scalar as a #define,
 * plus a launch record. The proposer walks the knob space by changing one knob index at a time;
 * every knob combination renders a valid candidate, so any index vector with
 * 0 <= knob_idx[k] < knobs[k].n_values is legal.
 *
 * The signature (kf_job_sig) and its conventions are forge/job/sig.h's. The fixed text of the
 * kernels is in files under kernels/ (embedded at build time, bodies.h); README.md says which
 * piece is where.
 *
 * A template's applies() is exact: it returns 1 only when the rendered kernel computes the op for
 * that signature (op name, dtypes, layouts, scalar values), else 0. render() must only be called
 * on a signature applies() accepted; it fails with KF_ERR_UNSUPPORTED otherwise. */
#ifndef KF_FORGE_TEMPLATE_H
#define KF_FORGE_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "forge/job/sig.h"
#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KF_KNOB_MAX_VALUES 8

/* One knob: its name and the values it can take (the proposer moves an index into values[]). */
typedef struct kf_knob_def {
    const char *name; /* "unroll" */
    int n_values;
    int values[KF_KNOB_MAX_VALUES];
} kf_knob_def;

typedef struct kf_template {
    const char *name;    /* "host_row_softmax" */
    const char *backend; /* "host" | "nvrtc": the compiler that builds the rendered source */
    int n_knobs;
    const kf_knob_def *knobs;
    /* 1 when the template can serve this signature exactly (op, dtypes, layouts, scalars). */
    int (*applies)(const kf_job_sig *sig);
    /* knob value indices (n_knobs of them) -> source (malloc'ed C text, shapes and scalars as
     * #defines) + launch record JSON (malloc'ed). On failure both are NULL and err says why. */
    kf_status (*render)(const kf_job_sig *sig, const int *knob_idx, char **source,
                        char **launch_json, char *err, size_t errcap);
    /* Optional: the knob indices the search starts from for this signature (a guess from its
     * shape, e.g. long rows want wide vectors and several blocks per row); NULL: all zero. */
    void (*start)(const kf_job_sig *sig, int *knob_idx);
    /* Optional: why applies() refused `sig`, for the proposer's "no template applies" message:
     * 1 and one short phrase naming the template in `why` ("host_layer_norm: input dtype f64 not
     * handled") when `sig` is of an op this template serves; 0 when it is not, or applies. */
    int (*why_not)(const kf_job_sig *sig, char *why, size_t cap);
} kf_template;

/* The shape family a template's kernels for `sig` serve (docs/architecture.md, "Shape
 * families"), as the cache's "family" JSON object (malloc'ed); NULL when they serve the exact
 * signature only. Only templates whose kernels read their free sizes at launch ("ints") state
 * one; every other dim, stride, dtype and scalar stays the signature's. */
char *kf_template_family(const kf_template *t, const kf_job_sig *sig);
/* The families of the templates that have one (kf_template_family's table, host.c). */
char *kf_host_softmax_family(const kf_job_sig *sig);
char *kf_cuda_softmax_family(const kf_job_sig *sig);
char *kf_host_layer_norm_family(const kf_job_sig *sig);
char *kf_cuda_norm_row_family(const kf_job_sig *sig);

/* NULL-terminated table of all builtin templates. */
extern const kf_template *const kf_builtin_templates[];

/* ---- helpers shared by the template implementations ---- */

/* Knob values by index, checked: fills vals[0..t->n_knobs) or fails with a message. */
kf_status kf_template_knob_values(const kf_template *t, const int *knob_idx, int *vals, char *err,
                                  size_t errcap);
/* The start of a host template's source: a comment naming the template, the op and the knob
 * values, the standard includes, and one `#define KF_<KNOB> value` per knob (name upper-cased). */
void kf_template_host_prologue(kf_strbuf *b, const kf_template *t, const kf_job_sig *sig,
                               const int *vals);
/* Map the schema's tensor arguments `names` (optional[a]: may be None, which the signature
 * records as a None scalar of that name) to indices into in[] (idx[a] = -1 for a None); -1 when
 * the signature does not fit. */
int kf_template_tensor_args(const kf_job_sig *sig, const char *const *names, const int *optional,
                            int n, int *idx);
/* Launch record for a host kernel taking `n` pointer arguments of the given types. */
char *kf_template_host_launch_json(const char *const *arg_types, int n);
/* The two ends of a render: `begin` checks applies() and the knob indices (vals gets the knob
 * values) and clears the outputs; `finish` hands over the source from `b` and the launch record
 * for `arg_types` (or frees everything and fails with KF_ERR_NOMEM). */
kf_status kf_template_render_begin(const kf_template *t, const kf_job_sig *sig, const int *knob_idx,
                                   int *vals, char **source, char **launch_json, char *err,
                                   size_t errcap);
kf_status kf_template_host_finish(const kf_template *t, kf_strbuf *b, const char *const *arg_types,
                                  int n, char **source, char **launch_json, char *err,
                                  size_t errcap);

/* Appends "ints" (launch-time sizes, compile/compiler.h) to a launch record made by the helpers
 * above; takes `launch_json` and returns the new record (NULL when out of memory). */
char *kf_template_launch_add_ints(char *launch_json, const char *const *ints, int n);
/* Appends "grid_from": [i, per, mul] (grid.x = ceil(ints[i] / per) * mul at each launch,
 * compile/compiler.h) to a record that has ints; like kf_template_launch_add_ints. */
char *kf_template_launch_add_grid_from(char *launch_json, int i, unsigned per, unsigned mul);
/* The rows of a row-wise family kernel: appends the int (ints[0]) and, when grid_per > 0, a
 * grid of ceil(rows / grid_per) * grid_mul blocks. On failure frees *source and *launch_json,
 * says so in err and returns KF_ERR_NOMEM; st when st is not KF_OK. */
kf_status kf_template_rows_arg(const kf_template *t, kf_status st, const char *rows_int,
                               unsigned grid_per, unsigned grid_mul, char **source,
                               char **launch_json, char *err, size_t errcap);
/* The family of a row-wise kernel over contiguous arguments whose rows are the product of every
 * dim but the last: those dims are free in each of the first `n_args` kernel arguments (all
 * of them row-shaped like the first), rows from 1 to max_rows. */
char *kf_template_row_family(const kf_job_sig *sig, int n_args, int64_t max_rows);
/* The family of a kernel over rows whose count is the product of the first `lead` dims of its
 * first input (a norm over the trailing dims): those dims are free in every argument of that
 * many dims (the input, its outputs; each contiguous, of the input's leading sizes), the others
 * (weight, bias) stay fixed; every output must be one of them, else NULL. */
char *kf_template_lead_family(const kf_job_sig *sig, int lead, int64_t max_rows);

/* ---- CUDA templates (backend "nvrtc"; cuda*.c) ---- */

/* The start of a CUDA template's source: the comment, kernels/cuda_common.cuh (<cuda_fp16.h>,
 * <cuda_bf16.h> and device helpers every CUDA template may use), and one
 * `#define KF_<KNOB> value` per knob. The helpers:
 *   float kf_to_f(float|__half|__nv_bfloat16 v);     widen to float
 *   template <class T> T kf_from_f(float v);         round to T (RN, as torch does)
 * The kernel itself must be `extern "C" __global__ void kf_kernel(...)`. */
void kf_template_cuda_prologue(kf_strbuf *b, const kf_template *t, const kf_job_sig *sig,
                               const int *vals);
/* "#define NAME v", followed by `why` as a comment when it is not NULL (why a knob's effective
 * value differs from the knob's). */
void kf_template_define(kf_strbuf *b, const char *name, long long v, const char *why);
#define KF_TEMPLATE_SMS 132 /* multiprocessors a grid is sized for (H100/H200 SXM) */
/* grid.x for `blocks` blocks of `threads` threads: with *gs > 0 (a grid-stride loop) at most
 * *gs times the blocks a 132-SM H100/H200 holds resident; beyond what grid.x holds, that many
 * and *gs = 1 (the kernel then loops). */
unsigned kf_template_grid(int64_t blocks, int threads, int *gs);
/* "float", "__half", "__nv_bfloat16" for KF_F32/KF_F16/KF_BF16; NULL for any other dtype. */
const char *kf_template_cuda_type(int dtype);
/* Launch record for a CUDA kernel: arg_types are launch-record types ("const __half*"). */
char *kf_template_cuda_launch_json(const char *const *arg_types, int n, const unsigned grid[3],
                                   const unsigned block[3], unsigned smem);
/* The end of a CUDA render (like kf_template_host_finish). */
kf_status kf_template_cuda_finish(const kf_template *t, kf_strbuf *b, const char *const *arg_types,
                                  int n, const unsigned grid[3], const unsigned block[3],
                                  unsigned smem, char **source, char **launch_json, char *err,
                                  size_t errcap);

#ifdef __cplusplus
}
#endif
#endif
