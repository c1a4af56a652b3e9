/* The exact signature a job (and every candidate for it) is specialized to, as the worker reads
 * it from job.json: the op, its tensor arguments, eager's outputs and the other arguments.
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
 *  - A Python number where the schema has a Tensor (`x + 1e-6` is add.Tensor(x, other=1e-6),
 *    torch wraps the number into a 0-dim CPU tensor) is NOT in in[] and is no kernel argument:
 *    it is in scalars[] under that argument's schema name ("other"), kind 'd' (a Python float,
 *    exact double), 'i' (int) or 'b' (bool), and the kernel compiles its value in (the signature
 *    holds its bit pattern: 1e-6 and 2e-6 are two jobs). So a template looks an operand up in
 *    scalars[] by its schema name when in[] lacks it, and then uses the value as eager's kernel
 *    does (for add/mul: converted to the op math type; on CUDA first cast to the tensor's dtype).
 *    job.json marks it "wrapped": true. The output dtype is eager's (a bf16 tensor + a float
 *    stays bf16, an int tensor + 2.5 is float32): check in[] and out[] dtypes, never assume.
 *  - "contiguous" below is torch's is_contiguous: row-major strides, where a dim of size 1 may
 *    have any stride (its stride never addresses memory). */
#ifndef KF_FORGE_JOB_SIG_H
#define KF_FORGE_JOB_SIG_H

#include <stddef.h>
#include <stdint.h>

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KF_JOB_MAX_TENSORS 16
#define KF_JOB_MAX_OUTPUTS 12 /* the op's returns (cudnn_batch_norm: 4), then the arguments it
                               * writes without returning them (kf_op_hidden_writes) */
#define KF_JOB_MAX_SCALARS 16

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
     * (in-place and out= ops), written through that argument and not passed a second time;
     * k < 0 (chain jobs only): out[j] IS out[-k-1], an earlier fresh output that a later chain
     * member writes in place (deferred mode), not passed a second time either. */
    int out_alias[KF_JOB_MAX_OUTPUTS];
    int n_scalars;
    kf_job_scalar scalars[KF_JOB_MAX_SCALARS];
    /* A chain job's members and dataflow (forge/job/chain.h; owned by the job), else NULL: op is
     * then "kforge::chain", in[]/out[] the chain's and scalars[] empty (they are the members'). */
    const struct kf_job_chain *chain;
} kf_job_sig;

/* The scalar named `name`, or NULL. */
const kf_job_scalar *kf_job_scalar_find(const kf_job_sig *sig, const char *name);
/* The int scalar named `name`: 1 and *v; 0 when absent or of another kind. */
int kf_job_scalar_int(const kf_job_sig *sig, const char *name, int64_t *v);
/* A Python number as eager's float32 op math takes it (a wrapped `other`: absent from in[], a
 * scalar under its name): 1 and *f, a double or an int64 rounded to float, a bool 0/1; 0 when
 * the scalar is absent, of another kind, or not finite as a float (eager's inf/nan arithmetic
 * is left to eager). */
int kf_job_scalar_float(const kf_job_sig *sig, const char *name, float *f);
/* Product of the sizes (1 for a 0-dim tensor); -1 on a negative size or overflow. */
int64_t kf_job_tensor_numel(const kf_job_tensor *t);
/* torch's is_contiguous (see above); 0 for a malformed tensor (ndim out of range). */
int kf_job_tensor_contiguous(const kf_job_tensor *t);
/* Same ndim and sizes. */
int kf_job_tensor_same_shape(const kf_job_tensor *a, const kf_job_tensor *b);
/* Dense and non-overlapping in any dim order, size-1 dims ignored: every element has its own
 * address and no gaps. */
int kf_job_tensor_dense(const kf_job_tensor *t);
/* A contiguous float32 tensor with at least one element. */
int kf_job_tensor_dense_f32(const kf_job_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
