/* cuda_pointwise (backend "nvrtc"): the pointwise engine's CUDA kernel for any row of the table
 * (pointwise_ops.c), from the same element function as host_pointwise: broadcasting, any
 * strides, in place and out=, outputs with gaps, mixed input dtypes, Python numbers compiled
 * in. A grid-stride loop over the output in its memory order (the collapsed dims of
 * kf_ew_collapse, innermost first); each operand's and the output's offset from the index
 * through its strides (divisions by compile-time constants). One element per access: the
 * vector widths of cuda_eltwise_* are not (yet) rendered here, which keeps those templates the
 * faster choice for what both serve (f32/f16/bf16 add, mul, gelu, silu, relu, copy_).
 * Knobs: threads per block; unroll = elements per thread per step (loads in flight); grid = 0:
 * enough blocks for every element, k > 0: k times the blocks a 132-SM H100/H200 holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/templates/pointwise_ops.h"
#include "forge/templates/template.h"

static const kf_knob_def knobs[] = {
    {"threads", 3, {256, 128, 512}},
    {"unroll", 3, {4, 1, 2}},
    {"grid", 3, {0, 1, 4}},
};
#define NKNOBS ((int)(sizeof knobs / sizeof knobs[0]))

static int applies(const kf_job_sig *sig)
{
    kf_pw_bind b;
    return kf_pw_bind_sig(sig, &b);
}

static kf_status render(const kf_job_sig *sig, const int *knob_idx, char **source,
                        char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_cuda_pointwise = {
    .name = "cuda_pointwise",
    .backend = "nvrtc",
    .n_knobs = NKNOBS,
    .knobs = knobs,
    .applies = applies,
    .render = render,
};

/* kf_off_<name>(i): the element offset under strides st of output element i (memory order) */
static void emit_offset(kf_strbuf *b, const ew_dims *dd, const int64_t *st, const char *name)
{
    kf_strbuf_printf(b, "__device__ __forceinline__ long long kf_off_%s(long long i)\n{\n"
                        "    return 0", name);
    int64_t pk = 1;
    for (int d = 0; d < dd->nd; d++) {
        if (st[d] != 0 && dd->size[d] > 1) {
            kf_strbuf_printf(b, " + ");
            if (pk > 1) kf_strbuf_printf(b, "i / %lldLL", (long long)pk);
            else kf_strbuf_printf(b, "i");
            if (d + 1 < dd->nd) kf_strbuf_printf(b, " %% %lldLL", (long long)dd->size[d]);
            kf_strbuf_printf(b, " * %lldLL", (long long)st[d]);
        }
        pk *= dd->size[d];
    }
    kf_strbuf_printf(b, ";\n}\n");
}

static kf_status render(const kf_job_sig *sig, const int *knob_idx, char **source,
                        char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_pointwise;
    int vals[NKNOBS];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    kf_pw_bind pb;
    kf_pw_bind_sig(sig, &pb);
    const ew_dims *dd = &pb.dd;
    int64_t n = kf_job_tensor_numel(&sig->out[0]);
    int nt = vals[0], un = vals[1], gs = vals[2];
    int64_t per = (int64_t)nt * un;
    unsigned grid = kf_template_grid((n + per - 1) / per, nt, &gs);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_pw_emit_element(&b, &pb, 1);
    kf_strbuf_printf(&b, "\n#define KF_N %lldLL\n#define KF_NT %d\n#define KF_UN %d\n",
                     (long long)n, nt, un);
    char nm[8];
    for (int j = 0; j < pb.n_tensors; j++) {
        snprintf(nm, sizeof nm, "%d", j);
        emit_offset(&b, dd, dd->st[j], nm);
    }
    emit_offset(&b, dd, dd->yst, "y");

    const char *args[KF_JOB_MAX_TENSORS + 1];
    char types[KF_JOB_MAX_TENSORS + 1][32];
    int fresh = pb.dest_in < 0, na = 0;
    kf_strbuf_printf(&b, "\nextern \"C\" __global__ void kf_kernel(");
    for (int i = 0; i <= sig->n_in; i++) {
        if (i == sig->n_in && !fresh) break;
        int dt = i < sig->n_in ? sig->in[i].dtype : sig->out[0].dtype;
        int w = i == sig->n_in || i == pb.dest_in;
        kf_strbuf_printf(&b, "%s%s%s *%sp%d", i ? ", " : "", w ? "" : "const ",
                         kf_pw_ctype(dt, 1), fresh ? "__restrict__ " : "", i);
        snprintf(types[na], sizeof types[na], "%s%s*", w ? "" : "const ", kf_pw_rectype(dt));
        args[na] = types[na];
        na++;
    }
    int y = fresh ? sig->n_in : pb.dest_in;
    kf_strbuf_printf(&b, ")\n{\n"
                         "    const long long step = (long long)gridDim.x * KF_NT * KF_UN;\n"
                         "    for (long long base = (long long)blockIdx.x * KF_NT * KF_UN + "
                         "threadIdx.x; base < KF_N; base += step) {\n"
                         "#pragma unroll\n"
                         "        for (int u = 0; u < KF_UN; u++) {\n"
                         "            const long long i = base + (long long)u * KF_NT;\n"
                         "            if (i >= KF_N) break;\n"
                         "            p%d[kf_off_y(i)] = KF_ST(", y);
    char offs[KF_PW_MAX_OPS][32];
    const char *off[KF_PW_MAX_OPS] = {"0", "0", "0"};
    for (int j = 0; j < pb.n_tensors; j++) {
        snprintf(offs[j], sizeof offs[j], "kf_off_%d(i)", j);
        off[pb.op_of[j]] = offs[j];
    }
    kf_pw_emit_call(&b, &pb, off);
    kf_strbuf_printf(&b, ");\n        }\n    }\n}\n");
    const unsigned g[3] = {grid, 1, 1}, blk[3] = {(unsigned)nt, 1, 1};
    return kf_template_cuda_finish(t, &b, args, na, g, blk, 0, source, launch_json, err, errcap);
}
