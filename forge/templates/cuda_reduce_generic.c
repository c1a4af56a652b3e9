/* cuda_reduce_generic: every reduction of reduce_ops.c's table on CUDA (NVRTC), for f32, f16,
 * bf16 and f64 inputs and outputs (float accumulation for the first three, double for f64, as
 * eager's CUDA kernels; sums and means in double: reduce_ops.c says why), int64 indices, any input strides, any set of reduced dims, keepdim,
 * dtype=, outputs dense in any order. The combine text and the offsets come from reduce_ops.c,
 * the kernel from kernels/cuda_reduce_generic.cu. aten::mean.dim signatures that
 * cuda_reduce_mean serves (its vectorized rows and columns) are left to it.
 *
 * Knobs (values that do not fit are clamped: two combinations may render the same kernel):
 *   threads  threads per block;
 *   team     threads per output (1: a thread per output; at most threads, and R rounded up to
 *            a power of two);
 *   unroll   loads in flight per thread. */
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/reduce_ops.h"
#include "forge/templates/template.h"

extern const kf_template kf_tmpl_cuda_reduce_mean;

static const kf_knob_def cred_knobs[] = {
    {"threads", 5, {64, 128, 256, 512, 1024}},
    {"team", 8, {1, 4, 8, 32, 64, 128, 256, 1024}},
    {"unroll", 3, {1, 2, 4}},
};
enum { K_THREADS, K_TEAM, K_UNROLL, K_COUNT };

static int cred_plan(const kf_job_sig *sig, kf_red_plan *p)
{
    if (!kf_red_plan_make(sig, 0, p)) return 0;
    if (kf_tmpl_cuda_reduce_mean.applies(sig)) return 0;
    return p->o <= (int64_t)INT32_MAX * 4; /* grid.x holds the blocks: at least 4 outputs each */
}

static int cred_applies(const kf_job_sig *sig)
{
    kf_red_plan p;
    return cred_plan(sig, &p);
}

static int64_t pow2_ceil(int64_t v)
{
    int64_t p = 1;
    while (p < v) p *= 2;
    return p;
}

static kf_status cred_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                             char **launch_json, char *err, size_t errcap);

/* a team per output where the reduced elements are adjacent, sized for about 8 loads per
 * thread; else a thread per output */
static void cred_start(const kf_job_sig *sig, int *idx)
{
    kf_red_plan p;
    if (!cred_plan(sig, &p)) return;
    idx[K_THREADS] = 2;
    idx[K_UNROLL] = 2;
    int unit = p.nr == 1 && p.rin[0] == 1;
    int k = 0;
    if (unit || p.o < 1024)
        while (k + 1 < cred_knobs[K_TEAM].n_values && cred_knobs[K_TEAM].values[k + 1] <= 256 &&
               cred_knobs[K_TEAM].values[k] * 8 < p.r)
            k++;
    idx[K_TEAM] = k;
}

const kf_template kf_tmpl_cuda_reduce_generic = {
    .name = "cuda_reduce_generic",
    .backend = "nvrtc",
    .n_knobs = K_COUNT,
    .knobs = cred_knobs,
    .applies = cred_applies,
    .render = cred_render,
    .start = cred_start,
};

static kf_status cred_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                             char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_reduce_generic;
    int v[K_COUNT];
    kf_status st = kf_template_render_begin(t, sig, knob_idx, v, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    kf_red_plan p;
    cred_plan(sig, &p);
    int nt = v[K_THREADS], tpr = v[K_TEAM] < nt ? v[K_TEAM] : nt;
    if (tpr > pow2_ceil(p.r)) tpr = (int)pow2_ceil(p.r); /* idle threads otherwise */
    int rpb = nt / tpr;
    int64_t blocks = (p.o + rpb - 1) / rpb;
    if (blocks > INT32_MAX) {
        if (err && errcap) snprintf(err, errcap, "%s: %lld blocks do not fit grid.x", t->name,
                                    (long long)blocks);
        return KF_ERR_UNSUPPORTED;
    }
    const char *tin = kf_template_cuda_type(p.in_dt);
    const char *tout = p.out_dt == KF_I64 ? "long long" : kf_template_cuda_type(p.out_dt);
    const char *tout2 = p.op->n_out == 2 ? (p.out2_dt == KF_I64 ? "long long"
                                                                : kf_template_cuda_type(p.out2_dt))
                                         : NULL;
    if (!tin && p.in_dt == KF_F64) tin = "double";
    if (!tout && p.out_dt == KF_F64) tout = "double";
    if (tout2 == NULL && p.op->n_out == 2 && p.out2_dt == KF_F64) tout2 = "double";

    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, v);
    kf_strbuf_printf(&b, "/* inputs: self; outputs: %s */\n", tout2 ? "out, out2" : "out");
    kf_strbuf_printf(&b, "#define KF_NT %d\n#define KF_TPR %d\n#define KF_RPB %d\n#define KF_UN %d\n",
                     nt, tpr, rpb, v[K_UNROLL]);
    kf_strbuf_printf(&b, "typedef %s KF_TIN;\ntypedef %s KF_TOUT;\n", tin, tout);
    if (tout2) kf_strbuf_printf(&b, "typedef %s KF_TOUT2;\n", tout2);
    kf_red_emit(&b, &p, "__device__ __forceinline__", 1);
    kf_strbuf_printf(&b, "#define KF_PARAMS const KF_TIN *__restrict__ x, KF_TOUT *__restrict__ y%s\n",
                     tout2 ? ", KF_TOUT2 *__restrict__ y2" : "");
    /* the stores: f16/bf16 rounded once from the float result */
    int half = p.out_dt == KF_F16 || p.out_dt == KF_BF16;
    char val[96];
    snprintf(val, sizeof val, half ? "kf_from_f<KF_TOUT>((float)KF_FINAL(s))" : "(KF_TOUT)KF_FINAL(s)");
    int k = p.op->kind;
    if (k == KF_RED_ARGMAX || k == KF_RED_ARGMIN)
        kf_strbuf_printf(&b, "#define KF_STORE(o, s) (y[kf_out_o(o)] = (KF_TOUT)(s).i)\n");
    else if (k == KF_RED_MAX_DIM || k == KF_RED_MIN_DIM)
        kf_strbuf_printf(&b, "#define KF_STORE(o, s) (y[kf_out_o(o)] = %s, "
                             "y2[kf_out2_o(o)] = (KF_TOUT2)(s).i)\n", val);
    else if (k == KF_RED_VAR_MEAN)
        kf_strbuf_printf(&b, "#define KF_STORE(o, s) (y[kf_out_o(o)] = %s, y2[kf_out2_o(o)] = %s)\n",
                         val, half ? "kf_from_f<KF_TOUT2>((float)m)" : "(KF_TOUT2)m");
    else
        kf_strbuf_printf(&b, "#define KF_STORE(o, s) (y[kf_out_o(o)] = %s)\n", val);
    kf_strbuf_printf(&b, "\n%s", kf_body_cuda_reduce_generic_cu);

    char a_in[40], a_out[40], a_out2[40];
    snprintf(a_in, sizeof a_in, "const %s*", tin);
    snprintf(a_out, sizeof a_out, "%s*", p.out_dt == KF_I64 ? "int64_t" : tout);
    snprintf(a_out2, sizeof a_out2, "%s*",
             !tout2 ? "" : p.out2_dt == KF_I64 ? "int64_t" : tout2);
    const char *args[] = {a_in, a_out, a_out2};
    const unsigned grid[3] = {(unsigned)blocks, 1, 1}, block[3] = {(unsigned)nt, 1, 1};
    return kf_template_cuda_finish(t, &b, args, tout2 ? 3 : 2, grid, block, 0, source,
                                   launch_json, err, errcap);
}
