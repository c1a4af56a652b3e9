/* The generic reductions, described once (docs/architecture.md "Generality"): one row per ATen
 * overload (reduce_ops.c) says which dims it reduces, whether it keeps them, what it outputs;
 * per kind, the combine as C text (an identity, a step folding one element into a state, a
 * merge of two states, a finalize), with an optional first pass whose result `m` the second
 * pass reads (var/std: the mean; logsumexp: the max shift). The plan below maps a signature
 * onto [outer kept O][reduced R] in any layout; host_reduce.c and cuda_reduce_generic.c render
 * kernels from the plan and the same macros, so the two backends compute the same thing.
 *
 * The rendered macros (valid C11 and CUDA C++), over `kf_st s` ({kf_acc a; long long i;}):
 *   KF_INIT(s)  KF_STEP(s, v, r)  KF_MERGE(s, t)  KF_FINAL(s)     the main pass
 *   KF_PRE, and when 1: KF_PINIT(s) KF_PSTEP(s, v) KF_PMERGE(s, t) KF_PFINAL(s) -> m
 * v is one element converted to kf_acc, r its index along the reduced dims (logical order for
 * index outputs), KF_R the count. The offset functions kf_in_o(o), kf_in_r(r), kf_out_o(o) and
 * kf_out2_o(o) (the second output's) are in elements and take the outer index o (innermost kept
 * dim fastest) and r. */
#ifndef KF_FORGE_TEMPLATES_REDUCE_OPS_H
#define KF_FORGE_TEMPLATES_REDUCE_OPS_H

#include <stdint.h>

#include "common/strbuf.h"
#include "forge/job/sig.h"
#include "kforge.h"

enum kf_red_kind {
    KF_RED_SUM, KF_RED_PROD, KF_RED_MEAN, KF_RED_AMAX, KF_RED_AMIN, KF_RED_MAX_DIM,
    KF_RED_MIN_DIM, KF_RED_ARGMAX, KF_RED_ARGMIN, KF_RED_VAR, KF_RED_STD, KF_RED_VAR_MEAN,
    KF_RED_NORM, KF_RED_LOGSUMEXP,
};

/* how an overload names the reduced dims */
enum kf_red_dims {
    KF_RED_DIMS_LIST, /* "dim": int[1]? (None or [] = all) */
    KF_RED_DIMS_INT,  /* "dim": int */
    KF_RED_DIMS_OPT,  /* "dim": int? (None = all, as one flattened dim) */
    KF_RED_DIMS_ALL,  /* no dim argument: all */
};

typedef struct kf_red_op {
    const char *op;   /* "aten::sum.dim_IntList" */
    int kind;         /* kf_red_kind */
    int dims;         /* kf_red_dims */
    int keepdim;      /* has a "keepdim" argument */
    int float_only;   /* eager refuses an integer input without dtype= (or computes in float) */
    int n_out;        /* 1, or 2 (max.dim/min.dim: values + int64 indices; var_mean: var, mean) */
} kf_red_op;

/* The row for `op`, or NULL. */
const kf_red_op *kf_red_op_find(const char *op);

typedef struct kf_red_plan {
    const kf_red_op *op;
    int in_dt, out_dt, out2_dt; /* out2_dt: KF_DTYPE_UNKNOWN without a second output */
    int acc;                    /* KF_F32, KF_F64 or KF_I64: what eager accumulates in,
                                 * except float sums and means: KF_F64 (reduce_ops.c) */
    int index;                  /* the state's index is an output (max.dim, argmax) */
    int64_t o, r;               /* outputs, elements reduced into each */
    int nk, nr;                 /* kept and reduced runs (merged dims), innermost first */
    int64_t ksize[KF_MAX_DIMS], kin[KF_MAX_DIMS], kout[KF_MAX_DIMS], kout2[KF_MAX_DIMS];
    int64_t rsize[KF_MAX_DIMS], rin[KF_MAX_DIMS];
    double p;    /* linalg_vector_norm's ord */
    double corr; /* var/std's correction */
} kf_red_plan;

/* 1 and the plan when the signature is a reduction of the table that a rendered kernel computes
 * exactly as eager (dtypes, dims, keepdim, output shapes; outputs dense and non-overlapping, so
 * every element is written once), else 0. `host`: the host backend's dtypes (f32, f64, the
 * integers and bool), else CUDA's (f32, f16, bf16, f64 in and out; int64 indices). */
int kf_red_plan_make(const kf_job_sig *sig, int host, kf_red_plan *p);

/* The plan's #defines (KF_O, KF_R, KF_PRE, ...), the typedefs kf_acc and kf_st, the combine
 * macros and the offset functions, each function prefixed by `fnq` ("static inline" or
 * "__device__ __forceinline__"). `cuda`: loads widen f16/bf16 through kf_to_f. */
void kf_red_emit(kf_strbuf *b, const kf_red_plan *p, const char *fnq, int cuda);

/* The C element type of a host dtype ("float", "int64_t", "_Bool"), or NULL. */
const char *kf_red_host_type(int dtype);

#endif
