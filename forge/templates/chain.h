/* The chain templates (host_chain.c, cuda_chain.c): one kernel for a chain job (forge/job/chain.h)
 * whose members are pointwise-engine ops (pointwise_ops.c) or an eval batch norm (per element,
 * its running stats and affine read by channel) with at most one last-dim keepdim
 * reduction (sum / mean / amax / 2-norm) among them, e.g. RMSNorm as pow -> mean -> add -> rsqrt ->
 * mul -> mul, or x / x.norm(dim=-1, keepdim=True).clamp_min(eps). Each member's value is its own
 * op's element function, stored as that member's output dtype exactly as eager stores it, and
 * read by later members from that stored value, so a chain without a reduction gives eager's bits.
 *
 * The kernel walks the chain's full shape F (the widest output) as R rows of its last dim (C):
 *   phase 0: the members before the reduction (outputs of shape F), per element, folding the
 *            reduction's input into an accumulator;
 *   phase 1: the reduction's value per row, then the members whose outputs are F's rows ([..,1]);
 *   phase 2: the members after it of shape F, per element (reading phase-0 values back from their
 *            outputs, which this thread wrote).
 * A chain without a reduction is phase 0 alone. A member may instead be a layer norm of the
 * last dim (native_layer_norm, e.g. a residual add then the norm): after phase 0, its mean and
 * variance over the row (two passes over its stored input, or over a kernel input where the norm
 * heads the chain), mean and rstd stored per row, then y per element and per element the
 * pointwise members after it (phase 4, its epilogue: a UNet's norm -> silu). Or a softmax of the last dim (_softmax, e.g. an attention mask added
 * first): the row's max folded into phase 0, then the sum of exp(x - max) over the stored input,
 * then y per element, and per element the pointwise members after it (phase 4, its epilogue:
 * transformers' softmax(x, dtype=float32).to(bf16) casts back). A chain without a reduction or
 * a row tail may hold one cat of the last dim (rotary embeddings: q * cos + cat(-x2, x1) * sin).
 * The norm may also be a group norm (native_group_norm: a UNet's or PoolFormer's residual or
 * time-embedding add then the norm, then its silu), its groups whole runs of rows.
 * The binding refuses (with a reason naming the
 * member and its op) what this cannot compute exactly as eager. Private to those files and the builtin
 * proposer (which reports the reason). */
#ifndef KF_FORGE_TEMPLATES_CHAIN_H
#define KF_FORGE_TEMPLATES_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "forge/job/chain.h"
#include "forge/templates/pointwise_ops.h"

/* NORM2: linalg_vector_norm with ord 2, a sum of squares and its square root (F.normalize's) */
enum { KF_CHAIN_RED_NONE, KF_CHAIN_RED_SUM, KF_CHAIN_RED_MEAN, KF_CHAIN_RED_AMAX, KF_CHAIN_RED_NORM2 };

typedef struct kf_chain_bind {
    const kf_job_chain *ch;
    int n;                                   /* members */
    kf_pw_bind pb[KF_CHAIN_MAX_MEMBERS];     /* the pointwise members' bindings */
    int phase[KF_CHAIN_MAX_MEMBERS];         /* 0, 1, 2, 3 (a row tail), 4 (after it) */
    int red, red_kind;                       /* the reduction member (-1: none), its kind */
    int ln, ln_w, ln_b;                      /* the layer-norm member (-1: none), its weight's
                                                and bias's kernel inputs (-1: None) */
    double ln_eps;
    /* gn = 1: that member is a group norm (native_group_norm) of an [N, C, ...] chain of at
     * least 3 dims, its groups whole runs of rows (the walk's rows are F's outer dims in order):
     * gn_ng groups (N x group) of gn_rg rows, the channel of row r (r / gn_rpc) % gn_ch, its
     * weight and bias [C] read by channel */
    int gn;
    int64_t gn_ng, gn_rg, gn_rpc, gn_ch;
    /* per member: 1 for an eval batch norm (native_batch_norm, training false), a phase-0 member
     * y = (x - mean[c]) * (1 / sqrt(var[c] + eps)) * w[c] + b[c] of channel c (dim 1); bn_in its
     * input, weight, bias, running mean and var (their kernel inputs, -1 for None; the input
     * may be a member's) */
    int bn[KF_CHAIN_MAX_MEMBERS];
    int bn_in[KF_CHAIN_MAX_MEMBERS][5];
    double bn_eps[KF_CHAIN_MAX_MEMBERS];
    int chan[KF_JOB_MAX_TENSORS];            /* per kernel input: 1 when read by channel (a [C]) */
    /* deferred mode's in-place members (an output's alias_output, forge/job/chain.h): per member,
     * the member whose output pointer it stores through (itself, or the first writer of the
     * tensor it writes in place), and 1 for a dead store (a later member writes it again) */
    int store_to[KF_CHAIN_MAX_MEMBERS];
    int dead[KF_CHAIN_MAX_MEMBERS];
    int sm;                                  /* the softmax member (-1: none) */
    int tail;                                /* ln or sm: the row tail (-1: none) */
    int tail_arg;                            /* the tail's input when a kernel input (a norm
                                                heading the chain), else -1: a member's output */
    /* a cat of the last dim (rotary's cat((-x2, x1), -1)): its parts, each a kernel input read
     * directly or a pointwise member on the part's columns alone (a segment member, read by
     * the cat only), computed and stored inside the cat's branch for its columns */
    int cat, n_parts;                        /* the cat member (-1: none), its parts */
    int64_t part_off[KF_JOB_MAX_TENSORS], part_len[KF_JOB_MAX_TENSORS];
    int part_member[KF_JOB_MAX_TENSORS];     /* the segment member, or -1 */
    int part_arg[KF_JOB_MAX_TENSORS];        /* else the kernel input */
    int seg_part[KF_CHAIN_MAX_MEMBERS];      /* per member: the part it computes, or -1 */
    int in_part[KF_JOB_MAX_TENSORS];         /* per kernel input: the part it is read on, or -1 */
    /* outputs laid out as eager lays them out for strided inputs (rotary's q * cos on a
     * transposed q): per member, 0 when dense in row-major order, else its strides on F's dims
     * (a chain without a reduction or a row tail only) */
    int ostrided[KF_CHAIN_MAX_MEMBERS];
    /* per member: 1 when its output is one value per column ([C], the same for every row: Gemma's
     * `weight.float()`), computed from inputs that vary along the row alone, in its readers'
     * phase, and stored by row 0 */
    int col[KF_CHAIN_MAX_MEMBERS];
    int64_t ost[KF_CHAIN_MAX_MEMBERS][KF_MAX_DIMS];
    /* cuda_chain's tile walk: the kernel input its block stages in shared memory along the rows,
     * read by phase 0 as kf_xs[kf_tx][c] (-1: none; the binding leaves it so) */
    int staged;
    int ct, p_bool;                          /* the members' compute type (all alike) */
    int nd;                                  /* dims of F (at least 1) */
    int64_t full[KF_MAX_DIMS];               /* F */
    int64_t R, C;                            /* rows, last dim */
    /* per kernel input (the job's in[]): its strides on F's dims (0 where it broadcasts) */
    int64_t st[KF_JOB_MAX_TENSORS][KF_MAX_DIMS];
} kf_chain_bind;

/* 1 when the chain templates compute this signature's chain exactly; else 0 and `why` says which
 * member (and op) they cannot. */
int kf_chain_bind_sig(const kf_job_sig *sig, kf_chain_bind *b, char *why, size_t cap);

/* The shared text of both backends: the math helpers, each member's element function, the
 * row base offsets kf_rb<i>(r) of each input, KF_R / KF_C, and the reduction's macros
 * KF_RINIT, KF_RCOMB(a, b), KF_RFINAL(a). `fnq` qualifies functions. */
void kf_chain_emit_defs(kf_strbuf *s, const kf_chain_bind *b, int cuda, const char *fnq);
/* The statements of one phase at indent `ind`: each member's value v<k> (its output's storage
 * type) and its store (full members at r * KF_C + c, row members at r; `store_guard` wraps a
 * row member's store, "if (threadIdx.x == 0)" on CUDA), phase 0 also folding into `acc`. */
void kf_chain_emit_phase(kf_strbuf *s, const kf_chain_bind *b, int phase, int cuda,
                         const char *ind, const char *store_guard);
/* Phase 0 of a chain with a cat, for the columns of its part `part` alone (c in scope, within
 * them): the cat's branch resolved, so that the host's loop over a part has none. */
void kf_chain_emit_phase_part(kf_strbuf *s, const kf_chain_bind *b, int part, int cuda, const char *ind);
/* After the fold (acc holds the row's combined value): the reduction member's v<red> and its
 * store (wrapped by store_guard). */
void kf_chain_emit_red_value(kf_strbuf *s, const kf_chain_bind *b, int cuda, const char *ind,
                             const char *store_guard);
/* cuda_chain's vector layout: elements per access (packs of up to 16 bytes, kf_pack<T, KF_VW>)
 * when the chain has the row length for it (C % KF_VW == 0) and every input read along the row is
 * contiguous along it, its rows and data pointer aligned to a whole pack (the job's "align";
 * outputs are fresh, the allocator's); else 1. */
int kf_chain_vec_width(const kf_chain_bind *b, const kf_job_sig *sig);
/* The dtype member k stores its (first) output in */
int kf_chain_member_dtype(const kf_chain_bind *b, int k);
/* The statements of phase 0 or 2 for the KF_VW elements of row r from column c0 on (a multiple
 * of KF_VW): the packs of the inputs read along the row (a<i>) and, in phase 2, of the phase-0
 * values read back (q<m>), each element as kf_chain_emit_phase computes it, into output packs
 * stored whole. rb<i>, r and c0 are in scope. */
void kf_chain_emit_phase_vec(kf_strbuf *s, const kf_chain_bind *b, int phase, const char *ind);
/* Whether a layer norm ending the chain can keep its input in registers as packs of vw (cuda 3
 * below): no epilogue after it, its weight and bias read along the row and aligned */
int kf_chain_tail_packs(const kf_chain_bind *b, const kf_job_sig *sig, int vw);
/* cuda 3's phase 0: the thread's KF_PPL packs of row r (pack jp at column
 * c0 = (KF_LANE + jp * KF_LANES) * KF_VW), unrolled, the norm's input kept in kf_x[jp * KF_VW + e] */
void kf_chain_emit_phase_vec_cache(kf_strbuf *s, const kf_chain_bind *b, const char *ind);
/* The kernel's parameters ("const float *p0, ..., float *y2") and the launch record's types;
 * returns the count. */
int kf_chain_emit_params(kf_strbuf *s, const kf_chain_bind *b, const kf_job_sig *sig, int cuda,
                         char types[][40], const char **args);
/* The row tail (a layer norm or a softmax as the last member): its accumulators, declared
 * before row r's phase 0 (which folds the tail's input into them: the norm's sum kf_s, the
 * softmax's max kf_m), then its statements after phase 0. On the host one thread per row (the
 * norm in double, the softmax in kf_ct); on CUDA the block's threads striding the row (columns
 * as in phase 0), in kf_ct, combined with kf_chain_block_reduce (KF_RCOMB a sum) and
 * kf_chain_block_max; thread 0 stores the norm's mean and rstd. The host's phase-0 loop takes
 * kf_chain_tail_simd's pragma; inline_exp: the softmax's exp is host_math.h's vectorizable
 * kf_expf_neg (its argument x - max is never positive), which the source must include. */
void kf_chain_emit_tail_begin(kf_strbuf *s, const kf_chain_bind *b, int cuda, const char *ind);
/* cuda 2 (cuda_chain, rows short enough): the tail's input is kept in registers, kf_x[j] for
 * the thread's column c = KF_COL(j) (KF_LANE + j * KF_LANES, j < KF_CPL, the phase-0 loop
 * unrolled), each stored by kf_chain_emit_tail_cache after phase 0, not read back from memory;
 * cuda 3 the same in packs (kf_chain_emit_phase_vec_cache), the norm's y written in packs */
void kf_chain_emit_tail_cache(kf_strbuf *s, const kf_chain_bind *b, const char *ind);
/* The loop over a thread's columns of row r, its "{" left open (cuda 0: every column; 1: c from
 * KF_LANE by KF_LANES; 2 and 3: j < KF_CPL unrolled, c = KF_COL(j), so that phase 0 and the tail
 * index kf_x[j] alike); the text is in buf, printed after `ind`. */
const char *kf_chain_cols_loop(char *buf, size_t cap, int cuda, const char *ind);
/* The loop over group g of a chain ending in a group norm, "{" left open: the host's over its
 * rows (r), CUDA's over its elements (r and c declared, strided over the block or cluster) */
const char *kf_chain_group_loop(int cuda);
void kf_chain_emit_tail(kf_strbuf *s, const kf_chain_bind *b, int cuda, int inline_exp,
                        const char *ind);
const char *kf_chain_tail_simd(const kf_chain_bind *b);
/* cuda_chain's tile walk: a layer norm's y at (r, c) from its input as stored (xs, an lvalue of
 * the input member's dtype), with kf_mean, kf_rstd and the row bases in scope: weight and bias,
 * the store, then the norm's epilogue */
void kf_chain_emit_ln_tile_y(kf_strbuf *s, const kf_chain_bind *b, const char *xs, const char *ind);
/* the same's input as kf_ct, from xs as stored */
void kf_chain_emit_tile_x(kf_strbuf *s, const kf_chain_bind *b, const char *xs);
/* A layer norm's y for the pack of KF_VW columns at c0 of row r (kf_mean, kf_rstd, the row bases
 * in scope): weight and bias read in packs, y stored in one access; x the norm's input at column
 * c0 + e as kf_ct, `each` (or NULL) a statement per element, after its y */
void kf_chain_emit_ln_y_pack(kf_strbuf *s, const kf_chain_bind *b, const char *x, const char *each,
                             const char *ind);
/* member k's (full) output at (r, c) := v, through its pointer and layout */
void kf_chain_emit_store(kf_strbuf *s, const kf_chain_bind *b, int k, const char *v, const char *ind);
/* Before the walk: an eval batch norm's save_mean and save_invstd where they are [C] (CUDA's:
 * the running mean and eager's invstd), over the grid's threads on CUDA */
void kf_chain_emit_prologue(kf_strbuf *s, const kf_chain_bind *b, int cuda, const char *ind);
/* "const long long rb0 = kf_rb0(r), ...;" for every input */
void kf_chain_emit_rowbases(kf_strbuf *s, const kf_chain_bind *b, const char *ind);

#endif
