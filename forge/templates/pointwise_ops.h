/* The generic pointwise engine (README.md, "The pointwise engine"): one row per ATen overload
 * (pointwise_ops.c) describes the op once; host_pointwise.c and cuda_pointwise.c render kernels
 * from it. pointwise.c binds a signature to a row (operands, eager's promotion, scalars) and
 * prints the element function both backends share. Private to those files and the tests. */
#ifndef KF_FORGE_TEMPLATES_POINTWISE_OPS_H
#define KF_FORGE_TEMPLATES_POINTWISE_OPS_H

#include "common/strbuf.h"
#include "forge/job/sig.h"
#include "forge/templates/cuda_eltwise.h"

/* dtypes a row takes (of its promoted dtype, or of each operand for KF_PW_LOGICAL) */
enum { KF_PW_FLOAT = 1, KF_PW_INT = 2, KF_PW_BOOL = 4, KF_PW_ALL = 7 };

/* how the compute type follows from the operands */
enum {
    KF_PW_OPMATH,  /* eager's promotion of the operands (masks excluded); compute in its opmath:
                    * float for f16/bf16/f32, double for f64, long long for ints and bool */
    KF_PW_LOGICAL, /* each operand read as (x != 0); compute in int */
    KF_PW_CAST,    /* copy_: the source's own opmath, stored as the destination's dtype */
};

/* the result's dtype */
enum {
    KF_PW_SAME,    /* the promoted dtype (a destination written in place may be another) */
    KF_PW_BOOLRES, /* bool: comparisons, logical ops */
    KF_PW_TOFLOAT, /* the promoted dtype, float32 when that is an integer or bool (exp, div) */
    KF_PW_ASDTYPE, /* the `dtype` argument's, the operand's when None (_to_copy) */
};

typedef struct kf_pw_op {
    const char *name; /* "aten::add.Tensor" */
    /* The tensor arguments (or Python numbers in their place) in schema order, by schema name,
     * blank separated. A suffix says how it is used: none: an operand, read as x_<name>;
     * '&': a bool mask operand, outside the promotion; '?': an optional operand (None: has_<name>
     * is 0); '!': the destination, written and not read (copy_, fill_, out=); '~': a Python
     * number here (or on the host a 0-dim tensor of a wider float dtype) is read in the compute
     * type, not narrowed to an f16 / bf16 promoted dtype first (eager's mul and true division
     * take the scalar's original value); '^': a Python number here is so on CUDA only (eager's
     * CUDA add and sub read a CPU scalar in op math, its CPU kernels narrow it first); '/': on
     * CUDA a Python number here is taken as its reciprocal in the compute type and the row's
     * KF_PW_DIV multiplies by it (eager's div_true_kernel_cuda). */
    const char *args;
    /* The scalar arguments read, as KF_S_<name> in the compute type; suffix '@': rounded to the
     * promoted dtype first (clamp's bounds, fill's value, as eager does); '?': may be None. */
    const char *scalars;
    /* "approximate=tanh": the string argument this row is for; "x=": None; "x=|0": None or the
     * integer (or bool) 0; several conditions blank separated, all holding */
    const char *when;
    int dtypes;       /* KF_PW_FLOAT | KF_PW_INT | KF_PW_BOOL */
    int rule;         /* KF_PW_OPMATH, ... */
    int result;       /* KF_PW_SAME, ... */
    int inplace;      /* 1: the first operand is also the destination (add_, relu_) */
    const char *expr; /* the element, in pointwise_math.h's dialect, of x_* and KF_S_* */
} kf_pw_op;

extern const kf_pw_op kf_pw_ops[];
extern const int kf_pw_n_ops;

#define KF_PW_MAX_OPS 3
#define KF_PW_MAX_SCALARS 4

/* A signature bound to a row: where each operand comes from, the types, the scalars. */
typedef struct kf_pw_bind {
    const kf_pw_op *op;
    int n;                          /* operands read */
    char name[KF_PW_MAX_OPS][24];   /* their schema names */
    int in_idx[KF_PW_MAX_OPS];      /* in[] index; -1: a constant (wrapped number) or absent */
    int mask[KF_PW_MAX_OPS];        /* read as a bool mask */
    int unnarrowed[KF_PW_MAX_OPS];  /* '~': a constant or 0-dim operand not narrowed first */
    int unnarrowed_cuda[KF_PW_MAX_OPS]; /* '~' or '^': a constant not narrowed first on CUDA */
    int recip[KF_PW_MAX_OPS];       /* '/' and a float constant: CUDA multiplies by 1 / it */
    int present[KF_PW_MAX_OPS];     /* 0: an optional operand that is None */
    int dtype[KF_PW_MAX_OPS];       /* an operand tensor's dtype */
    double wval[KF_PW_MAX_OPS];     /* a constant's value in the compute type (exact), */
    long long wint[KF_PW_MAX_OPS];
    double wval_cuda[KF_PW_MAX_OPS]; /* and as eager's CUDA kernel takes it ('^', '/') */
    long long wint_cuda[KF_PW_MAX_OPS];
    int dest_in;                    /* in[] index written; -1: a fresh output after in[] */
    int ptype;                      /* the promoted dtype (KF_F32, ...) */
    int ct;                         /* compute type: KF_F32 (float), KF_F64, KF_I64, KF_BOOL */
    int out_dtype;
    int n_tensors;                  /* operands read from in[] (masks included) */
    kf_job_tensor ops[KF_PW_MAX_OPS]; /* those, in operand order, for the collapse */
    int op_of[KF_PW_MAX_OPS];       /* ops[j] is operand op_of[j] */
    ew_dims dd;                     /* the output's collapsed dims, ops[j]'s strides st[j] */
    int n_s;                        /* the row's scalars: */
    char s_name[KF_PW_MAX_SCALARS][24];
    int s_has[KF_PW_MAX_SCALARS];   /* 0: None (an optional one) */
    double s_d[KF_PW_MAX_SCALARS];  /* the value in the compute type (exact) */
    long long s_i[KF_PW_MAX_SCALARS];
} kf_pw_bind;

/* The row for this signature bound to it, or 0 when no row serves it exactly (unknown op, a
 * dtype the row does not take, outputs eager would not produce this way, a scalar missing, a
 * layout the collapse refuses, zero elements...). */
int kf_pw_bind_sig(const kf_job_sig *sig, kf_pw_bind *b);
/* eager's result dtype of two dtypes (c10::promoteTypes, for bool, ints, f16/bf16/f32/f64) */
int kf_pw_promote(int a, int b);
/* The element function and everything before it, for backend "host" or "nvrtc":
 * `KF_PW_FN kf_rt kf_pw_f(kf_ct x_a, ...)` and the load macros KF_LD<k>(p, o) / the store
 * KF_ST(v) (to the destination's storage type). */
void kf_pw_emit_element(kf_strbuf *b, const kf_pw_bind *pb, int cuda);
/* The kernel's parameters (after "kf_kernel("): in[] in order, the destination writable, then
 * a fresh output; `restrict` beside a fresh output. args[] (types[] holds the text) gets their
 * launch-record types; returns how many. */
int kf_pw_emit_params(kf_strbuf *b, const kf_job_sig *sig, const kf_pw_bind *pb, int cuda,
                      const char **args, char (*types)[32]);
/* `kf_pw_f(...)` with operand k read as KF_LD<k>(p<in[] index>, off[k]) or its constant. */
void kf_pw_emit_call(kf_strbuf *b, const kf_pw_bind *pb, const char *const *off);
/* The two halves of kf_pw_emit_element, for a kernel computing several ops (the chain
 * templates): the helpers once (for compute type ct), then each op's element function with its
 * names suffixed by `sfx` (kf_pw_f<sfx>, KF_LD<k><sfx>, KF_W<k><sfx>, KF_ST<sfx>, kf_rt<sfx>; its
 * scalar macros undefined after it when sfx is not ""). */
void kf_pw_emit_math(kf_strbuf *b, int ct, int p_bool, int cuda);
void kf_pw_emit_op(kf_strbuf *b, const kf_pw_bind *pb, int cuda, const char *sfx);
/* kf_pw_f<sfx>(...), operand k read as KF_LD<k><sfx>(src[k], off[k]) (src NULL or src[k] NULL:
 * p<in[] index>) or its constant. */
void kf_pw_emit_call_as(kf_strbuf *b, const kf_pw_bind *pb, const char *sfx,
                        const char *const *src, const char *const *off);
/* The storage type of a dtype in a host ("uint16_t" for f16) or CUDA source ("__half"), and in
 * the launch record ("__half" either way); NULL for a dtype the engine does not take. */
const char *kf_pw_ctype(int dtype, int cuda);
const char *kf_pw_rectype(int dtype);

#endif
