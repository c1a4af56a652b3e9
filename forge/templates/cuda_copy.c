/* CUDA template for aten::copy_ (backend "nvrtc"): self[...] = src, between f32/f16/bf16 (a
 * cast: src widened to float exactly, rounded once to self's dtype as eager does) and/or
 * layouts. self is non-overlapping (any dim order), with gaps or not (a slice of a larger buffer,
 * a KV cache: the gaps are never written); src broadcasts to it with any strides.
 *
 * Two ways to walk it:
 *   the elementwise loop (cuda_eltwise.c): self in memory order (through its strides
 *     when it has gaps), src read through its strides (vectors where its innermost dim is
 *     contiguous, else element by element);
 *   transpose_tile T > 0, when src is a transposition of self (its contiguous dim is not
 *     self's): T x T tiles through shared memory, read along src's contiguous dim and written
 *     along self's, so both sides are coalesced (the elementwise loop would read src elements
 *     a stride apart; self must be contiguous along its innermost dim, the other dims are a
 *     batch with any strides); shared with cuda_eltwise_binary (kf_ew_plan_tiles,
 *     kf_ew_emit_tiles).
 *
 * Knobs: vec, unroll, threads, grid as the elementwise templates (vec/unroll/grid unused by
 * tiles), transpose_tile (0: the elementwise loop; 32 or 64: tiles of that side, when src
 * transposes). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/cuda_eltwise.h"

static const kf_knob_def copy_knobs[K_TILE_COUNT] = {KF_EW_KNOB_DEFS, KF_EW_TILE_KNOB_DEF};

static int copy_applies(const kf_job_sig *sig)
{
    if (!sig || strcmp(sig->op, "aten::copy_") || sig->n_in != 2 || sig->n_out != 1) return 0;
    if (!kf_ew_alias_ok(sig, 1)) return 0;
    const kf_job_tensor *y = &sig->out[0], *src = &sig->in[1];
    if (!kf_ew_float_dtype(y->dtype) || !kf_ew_float_dtype(src->dtype)) return 0;
    if (kf_job_tensor_numel(y) > ((int64_t)1 << 46)) return 0;
    ew_dims dd;
    return kf_ew_collapse(y, src, 1, &dd);
}

static void copy_start(const kf_job_sig *sig, int *idx)
{
    kf_ew_start(sig, idx);
    kf_ew_tile_start(sig, &sig->in[1], 1, idx);
}

static kf_status copy_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                             char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_cuda_eltwise_copy = {
    .name = "cuda_eltwise_copy",
    .backend = "nvrtc",
    .n_knobs = K_TILE_COUNT,
    .knobs = copy_knobs,
    .applies = copy_applies,
    .render = copy_render,
    .start = copy_start,
};

static kf_status copy_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                             char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_eltwise_copy;
    int vals[K_TILE_COUNT];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    ew_plan p;
    kf_ew_make_plan(sig, &sig->in[1], 1, 1, 1, vals, &p);
    kf_ew_plan_tiles(&p, vals[K_TILE]);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b, "/* inputs: self, src; outputs: self (in place) */\n");
    /* the value rounded once to self's dtype (src -> float is exact) */
    static const char op[] = "__device__ __forceinline__ float kf_op(float v) { return v; }\n";
    if (p.tile) {
        kf_ew_emit_tiles(&b, &p, op);
    } else {
        if (vals[K_TILE])
            kf_strbuf_printf(&b, "/* transpose_tile = %d: src does not transpose self here */\n",
                             vals[K_TILE]);
        kf_ew_emit(&b, &p, op);
    }
    return kf_ew_finish(t, &b, &p, source, launch_json, err, errcap);
}
