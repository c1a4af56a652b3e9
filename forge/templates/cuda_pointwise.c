/* cuda_pointwise (backend "nvrtc"): the pointwise engine's CUDA kernel for any row of the table
 * (pointwise_ops.c), from the same element function as host_pointwise: broadcasting, any
 * strides, in place and out=, outputs with gaps, mixed input dtypes, Python numbers compiled
 * in. A grid-stride loop over the output in its memory order (the collapsed dims of
 * kf_ew_collapse, innermost first); each operand's and the output's offset from the index
 * through its strides (divisions by compile-time constants), one element per access; or, with
 * vec = 1 when every operand and the output are contiguous (an operand may be a broadcast
 * scalar, read per element) and aligned to a whole vector (the job's "align"; a fresh output
 * is the allocator's), 128-bit accesses: KF_VW elements of the widest type (4 x f32, 8 x
 * f16/bf16) per load and store, the last numel % KF_VW elements one at a time. Each element is
 * the same expression either way, so results are bit-identical to the scalar loop's.
 * Knobs: threads per block; unroll = elements (vectors) per thread per step (loads in flight);
 * grid = 0: enough blocks for every element (vector), k > 0: k times the blocks a 132-SM
 * H100/H200 holds; vec = 1: vectors where the signature allows them, 0: never. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/templates/pointwise_ops.h"
#include "forge/templates/template.h"

static const kf_knob_def knobs[] = {
    {"threads", 3, {256, 128, 512}},
    {"unroll", 3, {4, 1, 2}},
    {"grid", 3, {0, 1, 4}},
    {"vec", 2, {1, 0}},
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

/* Elements per 128-bit access for this binding (y of dtype ydt, alignment y_align bytes), or 1
 * when a vector loop does not fit: the output collapses to one contiguous run, every operand
 * read is contiguous along it or a broadcast scalar, and every vector starts aligned. */
static int vec_width(const kf_pw_bind *pb, int ydt, int y_align, int64_t n)
{
    const ew_dims *dd = &pb->dd;
    if (dd->nd != 1 || dd->gaps || dd->yst[0] != 1) return 1;
    int es = kf_dtype_size(ydt);
    for (int j = 0; j < pb->n_tensors; j++)
        if (kf_dtype_size(pb->ops[j].dtype) > es) es = kf_dtype_size(pb->ops[j].dtype);
    if (es < 1 || es > 8) return 1;
    int vw = 16 / es;
    if (vw < 2 || n < vw || y_align < vw * kf_dtype_size(ydt)) return 1;
    for (int j = 0; j < pb->n_tensors; j++) {
        if (dd->st[j][0] == 0) continue; /* a scalar: read per element */
        if (dd->st[j][0] != 1 || pb->ops[j].align < vw * kf_dtype_size(pb->ops[j].dtype))
            return 1;
    }
    return vw;
}

/* The vector loop (vec_width > 1): operand j contiguous is loaded as a kf_pack into a<j>. */
static void emit_vector_loop(kf_strbuf *b, const kf_pw_bind *pb, int y, const char *yt)
{
    kf_strbuf_printf(b, ")\n{\n"
                        "    const long long step = (long long)gridDim.x * KF_NT * KF_UN;\n"
                        "    for (long long base = (long long)blockIdx.x * KF_NT * KF_UN + "
                        "threadIdx.x; base < KF_NV; base += step) {\n"
                        "#pragma unroll\n"
                        "        for (int u = 0; u < KF_UN; u++) {\n"
                        "            const long long v = base + (long long)u * KF_NT;\n"
                        "            if (v >= KF_NV) break;\n");
    char bases[KF_PW_MAX_OPS][16];
    const char *bp[KF_PW_MAX_OPS] = {NULL, NULL, NULL};
    const char *off[KF_PW_MAX_OPS] = {"0", "0", "0"};
    for (int j = 0; j < pb->n_tensors; j++) {
        if (pb->dd.st[j][0] == 0) continue;
        const char *ct = kf_pw_ctype(pb->ops[j].dtype, 1);
        int k = pb->op_of[j];
        kf_strbuf_printf(b, "            const kf_pack<%s, KF_VW> a%d = *reinterpret_cast<const "
                            "kf_pack<%s, KF_VW> *>(p%d + v * KF_VW);\n",
                         ct, j, ct, pb->in_idx[k]);
        snprintf(bases[j], sizeof bases[j], "a%d.v", j);
        bp[k] = bases[j];
        off[k] = "e";
    }
    kf_strbuf_printf(b, "            kf_pack<%s, KF_VW> r;\n#pragma unroll\n"
                        "            for (int e = 0; e < KF_VW; e++) r.v[e] = KF_ST(", yt);
    kf_pw_emit_call_as(b, pb, "", bp, off);
    kf_strbuf_printf(b, ");\n            kf_pack_st(p%d + v * KF_VW, r);\n        }\n    }\n"
                        "    /* the tail: the last KF_N %% KF_VW elements, one at a time */\n"
                        "    for (long long i = KF_NV * KF_VW + (long long)blockIdx.x * KF_NT + "
                        "threadIdx.x; i < KF_N; i += (long long)gridDim.x * KF_NT)\n"
                        "        p%d[i] = KF_ST(", y, y);
    const char *ioff[KF_PW_MAX_OPS] = {"0", "0", "0"};
    for (int j = 0; j < pb->n_tensors; j++)
        if (pb->dd.st[j][0] != 0) ioff[pb->op_of[j]] = "i";
    kf_pw_emit_call(b, pb, ioff);
    kf_strbuf_printf(b, ");\n}\n");
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
    int fresh = pb.dest_in < 0;
    int ydt = fresh ? sig->out[0].dtype : sig->in[pb.dest_in].dtype;
    int vw = vals[3] ? vec_width(&pb, ydt, fresh ? 16 : sig->in[pb.dest_in].align, n) : 1;
    int64_t per = (int64_t)nt * un, items = vw > 1 ? n / vw : n;
    unsigned grid = kf_template_grid((items + per - 1) / per, nt, &gs);

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, vals);
    kf_pw_emit_element(&b, &pb, 1);
    kf_strbuf_printf(&b, "\n#define KF_N %lldLL\n#define KF_NT %d\n#define KF_UN %d\n",
                     (long long)n, nt, un);
    if (vw > 1)
        kf_strbuf_printf(&b, "#define KF_VW %d /* elements per 128-bit access */\n"
                             "#define KF_NV %lldLL /* whole vectors */\n",
                         vw, (long long)(n / vw));
    else if (vals[3])
        kf_strbuf_printf(&b, "/* vec=1: one element per access (operands not all contiguous "
                             "and aligned, or fewer elements than a vector) */\n");
    char nm[8];
    for (int j = 0; j < pb.n_tensors; j++) {
        snprintf(nm, sizeof nm, "%d", j);
        emit_offset(&b, dd, dd->st[j], nm);
    }
    emit_offset(&b, dd, dd->yst, "y");

    const char *args[KF_JOB_MAX_TENSORS + 1];
    char types[KF_JOB_MAX_TENSORS + 1][32];
    kf_strbuf_printf(&b, "\nextern \"C\" __global__ void kf_kernel(");
    int na = kf_pw_emit_params(&b, sig, &pb, 1, args, types);
    int y = fresh ? sig->n_in : pb.dest_in;
    const unsigned g[3] = {grid, 1, 1}, blk[3] = {(unsigned)nt, 1, 1};
    if (vw > 1) {
        emit_vector_loop(&b, &pb, y, kf_pw_ctype(ydt, 1));
        return kf_template_cuda_finish(t, &b, args, na, g, blk, 0, source, launch_json, err,
                                       errcap);
    }
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
    return kf_template_cuda_finish(t, &b, args, na, g, blk, 0, source, launch_json, err, errcap);
}
