/* The fixed text of the builtin templates: every file under forge/templates/kernels/, embedded
 * by the build (forge/templates/embed.cmake) as a NUL-terminated array named kf_body_ and the
 * file's name with '.' as '_'. A render prints the comment, knob and shape #defines and the
 * generated parts in C, and these bytes as they are (README.md there says which piece is
 * where). A file added there needs its line here; a line here without its file does not link. */
#ifndef KF_FORGE_TEMPLATES_BODIES_H
#define KF_FORGE_TEMPLATES_BODIES_H

/* CUDA (NVRTC): shared device helpers, printed by every CUDA prologue (kf_vec, kf_to_f, ...) */
extern const char kf_body_cuda_common_cuh[];
/* CUDA pieces some templates share or choose between */
extern const char kf_body_cuda_mufu_cuh[];          /* ex2/rcp on MUFU (eltwise gelu, silu) */
/* the norm kernels' reductions over a team of threads (kf_team_reduce), parametrized by
 * KF_BLOCK (threads per block, whole warps), KF_TEAM (threads per team, a power of two) and
 * KF_REDUCE (0: warp shuffles then one shared-memory step, 1: a tree in shared memory) */
extern const char kf_body_cuda_norm_common_cuh[];
extern const char kf_body_cuda_cat_move_cuh[];      /* cat's raw vector moves */
extern const char kf_body_cuda_eltwise_loop_cuh[];  /* the loop up to its store */
extern const char kf_body_cuda_eltwise_loop_tail_cuh[]; /* the loop after its store */
extern const char kf_body_cuda_eltwise_tile_cuh[];  /* the tiled (transposing) kernel */
extern const char kf_body_cuda_cluster_cuh[];       /* thread-block clusters' barrier, rank, loads */
/* CUDA kernels, one per template */
extern const char kf_body_cuda_conv_dw_cu[];
extern const char kf_body_cuda_norm_batch_cu[];
extern const char kf_body_cuda_norm_cols_cu[];
extern const char kf_body_cuda_norm_group_cu[];
extern const char kf_body_cuda_norm_row_cu[];
extern const char kf_body_cuda_pool_cu[];
extern const char kf_body_cuda_reduce_cu[];
extern const char kf_body_cuda_softmax_cu[];
extern const char kf_body_cuda_solve_cu[];
/* the chain kernel's block-wide row reduction (cuda_chain.c) */
extern const char kf_body_cuda_chain_reduce_cuh[];
/* host (cc): the inline math the `math` knob selects (kernels/host_math.h), and the kernels.
 *
 * Float exp, sigmoid and erf that GCC vectorizes without -ffast-math: straight-line code,
 * selects as ternaries, fmaf for the polynomials (ISO C mode does not contract a*b+c on its
 * own), no float->int conversion (the round-to-integer trick keeps n in the bits of t, so NaN is
 * no undefined behaviour), unsigned arithmetic on the bit patterns. Each clamp costs a compare
 * and a blend (GCC keeps NaN through `x < lo ? lo : x`, and chained clamps cost more), so the
 * kernels use kf_expf_neg (one clamp) and build the rest on it. Worst relative errors, measured
 * over every float against double libm: kf_expf and kf_expf_neg 8.5e-8 (denormal results within
 * one denormal step), kf_sigmoidf 1.8e-7, kf_erff 3.6e-7 (6 steps of the float grid just below
 * 1; the rational fit itself is 2e-8).
 * Special values as libm: exp(-inf) = 0, exp(+inf) and overflow = +inf, exp(NaN) = NaN;
 * sigmoid(-inf) = 0, sigmoid(+inf) = 1; erf(+-inf) = +-1; NaN stays NaN throughout. */
extern const char kf_body_host_math_h[];
/* the pointwise engine's element helpers, neutral C for both backends (pointwise_ops.h) */
extern const char kf_body_pointwise_math_h[];
extern const char kf_body_host_eltwise_c[];
extern const char kf_body_host_norm_c[];
extern const char kf_body_host_norm_group_c[];
extern const char kf_body_host_norm_batch_c[];
extern const char kf_body_host_norm_batch_train_c[];
extern const char kf_body_host_softmax_c[];
/* generic reductions and gathers (reduce_ops.h) */
extern const char kf_body_host_reduce_c[];
extern const char kf_body_cuda_reduce_generic_cu[];
extern const char kf_body_host_gather_c[];
extern const char kf_body_host_pool_c[];
extern const char kf_body_cuda_gather_cu[];

#endif
