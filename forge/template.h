/* The builtin kernel template library (DESIGN.md, "MCTS": the `builtin` proposer).
 *
 * A template is a parametrized kernel for one op family. Given the exact signature of a job
 * (kf_job_sig) and one value for each of its knobs, it renders a candidate as the kernel contract
 * wants it (DESIGN.md, "Kernel contract"): source text with every shape and scalar as a #define,
 * plus a launch record. The proposer walks the knob space by changing one knob index at a time;
 * every knob combination renders a valid candidate, so any index vector with
 * 0 <= knob_idx[k] < knobs[k].n_values is legal.
 *
 * Conventions for kf_job_sig:
 *  - in[] holds the op's tensor arguments in schema order; an optional tensor that is None is
 *    absent from in[] and appears in scalars[] under its schema name with kind 'n', so a template
 *    can tell which of several optional tensors are present.
 *  - out[] holds the outputs in return order with eager's sizes/strides/dtype; out_alias[] says
 *    which of them are tensor arguments written in place (relu_, add_, out=). Kernel arguments
 *    are in[0..n_in) then the fresh outputs, in that order.
 *  - in[].align: vector loads wider than the recorded alignment are not allowed.
 *  - scalars[] holds the other arguments by schema name: 'i' int (i), 'd' float (d), 'b' bool
 *    (i = 0/1), 's' string (s), 'n' None, 'l' int list (n, v[]; e.g. normalized_shape).
 *  - "contiguous" below is torch's is_contiguous: row-major strides, where a dim of size 1 may
 *    have any stride (its stride never addresses memory).
 *
 * A template's applies() is exact: it returns 1 only when the rendered kernel computes the op for
 * that signature (op name, dtypes, layouts, scalar values), else 0. render() must only be called
 * on a signature applies() accepted; it fails with KF_ERR_UNSUPPORTED otherwise. */
#ifndef KF_FORGE_TEMPLATE_H
#define KF_FORGE_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KF_JOB_MAX_TENSORS 16
#define KF_JOB_MAX_OUTPUTS 8 /* the op's returns (cudnn_batch_norm: 4), then the arguments it
                                 * writes without returning them (kf_op_hidden_writes) */
#define KF_JOB_MAX_SCALARS 16
#define KF_KNOB_MAX_VALUES 8

typedef struct kf_job_tensor {
    int dtype; /* kf_dtype */
    int ndim;
    int64_t sizes[KF_MAX_DIMS], strides[KF_MAX_DIMS]; /* in elements */
    int align; /* bytes the data pointer is aligned to (1..16; 16 means "16 or more"); 0 = unknown */
} kf_job_tensor;

typedef struct kf_job_scalar {
    char name[24]; /* schema name: "dim", "eps", "approximate", ... */
    int kind;      /* 'i', 'd', 'b', 's', 'n' (None), 'l' (int list) */
    int64_t i;     /* 'i', 'b' */
    double d;      /* 'd' */
    char s[32];    /* 's' */
    int n;         /* 'l': v[0..n) */
    int64_t v[KF_MAX_DIMS];
} kf_job_scalar;

/* The exact signature a kernel is specialized to: the op, its tensor arguments (schema order),
 * its outputs (eager's layout), its non-tensor arguments by schema name. */
typedef struct kf_job_sig {
    char op[64]; /* "aten::_softmax" */
    int n_in;
    kf_job_tensor in[KF_JOB_MAX_TENSORS];
    int n_out;
    kf_job_tensor out[KF_JOB_MAX_OUTPUTS];
    /* 0: out[j] is a fresh tensor, passed to the kernel after in[]; k > 0: out[j] IS in[k-1]
     * (in-place and out= ops), written through that argument and not passed a second time. */
    int out_alias[KF_JOB_MAX_OUTPUTS];
    int n_scalars;
    kf_job_scalar scalars[KF_JOB_MAX_SCALARS];
} kf_job_sig;

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
} kf_template;

/* NULL-terminated table of all builtin templates. */
extern const kf_template *const kf_builtin_templates[];

/* ---- helpers shared by the template implementations (and handy for callers) ---- */

/* The scalar named `name`, or NULL. */
const kf_job_scalar *kf_job_scalar_find(const kf_job_sig *sig, const char *name);
/* Product of the sizes (1 for a 0-dim tensor); -1 on a negative size or overflow. */
int64_t kf_job_tensor_numel(const kf_job_tensor *t);
/* torch's is_contiguous (see above); 0 for a malformed tensor (ndim out of range). */
int kf_job_tensor_contiguous(const kf_job_tensor *t);
/* Same ndim and sizes. */
int kf_job_tensor_same_shape(const kf_job_tensor *a, const kf_job_tensor *b);
/* A contiguous float32 tensor with at least one element. */
int kf_job_tensor_dense_f32(const kf_job_tensor *t);

/* A growing string for rendering; on out-of-memory it remembers the failure and stops. */
typedef struct kf_strbuf {
    char *p;
    size_t len, cap;
    int oom;
} kf_strbuf;
void kf_strbuf_printf(kf_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hand the text over (malloc'ed, caller frees) or NULL after an out-of-memory; resets `b`. */
char *kf_strbuf_take(kf_strbuf *b);
void kf_strbuf_free(kf_strbuf *b);

/* Knob values by index, checked: fills vals[0..t->n_knobs) or fails with a message. */
kf_status kf_template_knob_values(const kf_template *t, const int *knob_idx, int *vals, char *err,
                                  size_t errcap);
/* The start of a host template's source: a comment naming the template, the op and the knob
 * values, the standard includes, and one `#define KF_<KNOB> value` per knob (name upper-cased). */
void kf_template_host_prologue(kf_strbuf *b, const kf_template *t, const kf_job_sig *sig,
                               const int *vals);
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

/* ---- CUDA templates (backend "nvrtc"; templates_cuda*.c) ---- */

/* The start of a CUDA template's source: the comment, <cuda_fp16.h> and <cuda_bf16.h>, one
 * `#define KF_<KNOB> value` per knob, and device helpers every CUDA template may use:
 *   float kf_to_f(float|__half|__nv_bfloat16 v);     widen to float
 *   template <class T> T kf_from_f(float v);         round to T (RN, as torch does)
 * The kernel itself must be `extern "C" __global__ void kf_kernel(...)`. */
void kf_template_cuda_prologue(kf_strbuf *b, const kf_template *t, const kf_job_sig *sig,
                               const int *vals);
/* "#define NAME v", followed by `why` as a comment when it is not NULL (why a knob's effective
 * value differs from the knob's). */
void kf_template_define(kf_strbuf *b, const char *name, long long v, const char *why);
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
