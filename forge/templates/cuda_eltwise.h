/* What the elementwise CUDA templates share (cuda_eltwise.c: the layouts, the plan and
 * the rendered loop), private to cuda_eltwise.c and cuda_copy.c; the pointwise engine
 * (pointwise.c, host_pointwise.c, cuda_pointwise.c) uses the layouts (kf_ew_collapse). */
#ifndef KF_FORGE_TEMPLATES_CUDA_ELTWISE_H
#define KF_FORGE_TEMPLATES_CUDA_ELTWISE_H

#include "forge/templates/template.h"

enum { K_VEC, K_UNROLL, K_THREADS, K_GRID, K_COUNT };
/* The knobs of the loop, in K_* order: the elementwise templates' table, and the first K_COUNT
 * entries of copy_'s. */
#define KF_EW_KNOB_DEFS                                                                          \
    {"vec", 4, {1, 2, 4, 8}}, {"unroll", 4, {1, 2, 4, 8}},                                       \
        {"threads", 4, {128, 256, 512, 1024}}, {"grid", 4, {0, 1, 2, 4}}

/* The knob the tiled templates (copy_, binary) append after the loop's: 0 the elementwise loop;
 * 32 or 64: T x T tiles through shared memory when an operand transposes the output. */
enum { K_TILE = K_COUNT, K_TILE_COUNT };
#define KF_EW_TILE_KNOB_DEF {"transpose_tile", 3, {0, 32, 64}}


/* The output's dims (size > 1) in memory order, innermost first, collapsed where every tensor
 * stays contiguous; st[k][d] is operand k's stride (0 for broadcast), yst[d] the output's; gaps:
 * the output is not dense (a slice of a larger buffer), so its offsets come from yst. */
#define KF_EW_MAX_IN 3 /* operands kf_ew_collapse takes (the eltwise templates use 2) */
typedef struct ew_dims {
    int nd, gaps;
    int64_t size[KF_MAX_DIMS];
    int64_t st[KF_EW_MAX_IN][KF_MAX_DIMS];
    int64_t yst[KF_MAX_DIMS];
} ew_dims;

typedef struct ew_plan {
    int nin, inplace, copy, dtype, esize;
    int dtype_a, esize_a; /* operand a's type: the output's, except for copy_ (a cast) and */
    int dtype_b, esize_b; /* binary ops on mixed dtypes (b's: the output's except there) */
    int vw, un, nt, gs;
    int flat;
    int mode[2]; /* per input: 0 vector, 1 broadcast, 2 gather */
    int64_t n, nvec, tail;
    int wide; /* 64-bit element offsets */
    unsigned grid;
    ew_dims dd;
    /* tiles (kf_ew_plan_tiles): side (0: the loop), the collapsed dim tiled beside dim 0, and
     * the tiles along dims 0 and tk */
    int tile, tk;
    int64_t ntile[2];
} ew_plan;

int kf_ew_esize(int dtype);
/* f32, f16 or bf16 */
int kf_ew_float_dtype(int dtype);
/* 1 when `out` is non-overlapping (any dim order; gaps allowed) and every input (at most
 * KF_EW_MAX_IN) broadcasts to it. */
int kf_ew_collapse(const kf_job_tensor *out, const kf_job_tensor *in, int n_in, ew_dims *dd);
/* The output must not be a written-in-place argument unless the op is the in-place variant, and
 * then it must be exactly in[0]. */
int kf_ew_alias_ok(const kf_job_sig *sig, int inplace);
/* The plan for knob values v: `ops` are the operands read (sig->in, or copy_'s src); the output
 * is sig->out[0], which is sig->in[0] when in place; copy: operand a may have its own dtype. */
void kf_ew_make_plan(const kf_job_sig *sig, const kf_job_tensor *ops, int nin, int inplace,
                     int copy, const int *v, ew_plan *p);
/* The source after the prologue: the plan's constants, kf_op (given), offsets, the loop. */
void kf_ew_emit(kf_strbuf *b, const ew_plan *p, const char *op_src);
/* The collapsed dim k > 0 along which some operand is contiguous while it is strided (not
 * contiguous, not broadcast) along the output's innermost dim: a transposition; or -1, also
 * when the output is not contiguous along its innermost dim (tiles write along it). */
int kf_ew_tile_dim(const ew_dims *dd, int nin);
/* Switch the plan to T x T tiles over dims 0 and kf_ew_tile_dim when T > 0, an operand
 * transposes the output and the grid holds one block per tile; else it stays the loop. */
void kf_ew_plan_tiles(ew_plan *p, int T);
/* The source after the prologue for a tiled plan (p->tile > 0), around kf_op (given). */
void kf_ew_emit_tiles(kf_strbuf *b, const ew_plan *p, const char *op_src);
/* The start of knob K_TILE: tiles where an operand of `ops` transposes sig->out[0] (64 for
 * 2-byte types, 32 for f32), else 0. */
void kf_ew_tile_start(const kf_job_sig *sig, const kf_job_tensor *ops, int nin, int *idx);
/* Hand over the source and the launch record of the plan's kernel. */
kf_status kf_ew_finish(const kf_template *t, kf_strbuf *b, const ew_plan *p, char **source,
                       char **launch_json, char *err, size_t errcap);
/* Where the search starts: 16-byte vectors, two in flight, 256 threads, a tile per block. */
void kf_ew_start(const kf_job_sig *sig, int *idx);

#endif
