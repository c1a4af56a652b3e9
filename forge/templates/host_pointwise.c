/* host_pointwise (backend "host"): the pointwise engine's C kernel for any row of the table
 * (pointwise_ops.c) on CPU tensors: broadcasting, any strides, in place and out=, mixed input
 * dtypes, Python numbers compiled in. The output's collapsed dims (kf_ew_collapse) are walked as
 * rows of its innermost dim, each row split into chunks of KF_CHUNK elements; a (row, chunk) is
 * one unit of work, its base offsets computed once through the outer dims, the inner loop a
 * stride per operand (compile-time constants, so that a stride-1 loop vectorizes).
 * Knobs: omp = units over OpenMP threads (0 off, 1 static, 2 dynamic; off below 32768 elements
 * or with one unit); unroll = the inner loop's `#pragma GCC unroll`; chunk = elements per unit;
 * math = 1: in float compute, exp (silu, sigmoid, softplus, ...), expm1 (elu), tanh (tanh,
 * tanh-gelu, mish), erf (gelu), log and log1p (softplus, mish, log) are host_math.h's
 * vectorizable ones, as host_chain's (libm's are a call per element), 0: libm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/pointwise_ops.h"
#include "forge/templates/template.h"

static const kf_knob_def knobs[] = {
    {"omp", 3, {1, 0, 2}},
    {"unroll", 3, {1, 4, 8}},
    {"chunk", 2, {16384, 2048}},
    {"math", 2, {1, 0}},
};
#define NKNOBS ((int)(sizeof knobs / sizeof knobs[0]))

static int applies(const kf_job_sig *sig)
{
    kf_pw_bind b;
    return kf_pw_bind_sig(sig, &b);
}

static kf_status render(const kf_job_sig *sig, const int *knob_idx, char **source,
                        char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_host_pointwise = {
    .name = "host_pointwise",
    .backend = "host",
    .n_knobs = NKNOBS,
    .knobs = knobs,
    .applies = applies,
    .render = render,
};

static kf_status render(const kf_job_sig *sig, const int *knob_idx, char **source,
                        char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_host_pointwise;
    int vals[NKNOBS];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    kf_pw_bind pb;
    kf_pw_bind_sig(sig, &pb);
    const ew_dims *dd = &pb.dd;
    int64_t n = kf_job_tensor_numel(&sig->out[0]), d0 = dd->size[0];
    int64_t chunk = vals[2] < d0 ? vals[2] : d0;

    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, vals);
    if (vals[3] && pb.ct == KF_F32) kf_strbuf_printf(&b, "#define KF_FAST_MATH 1\n%s", kf_body_host_math_h);
    kf_pw_emit_element(&b, &pb, 0);
    kf_strbuf_printf(&b, "\n#define KF_N %lldLL\n#define KF_D0 %lldLL\n#define KF_ROWS %lldLL\n"
                         "#define KF_CH %lldLL\n#define KF_NCH %lldLL\n",
                     (long long)n, (long long)d0, (long long)(n / d0), (long long)chunk,
                     (long long)((d0 + chunk - 1) / chunk));
    /* params: in[] in order (the destination writable), then a fresh output */
    const char *args[KF_JOB_MAX_TENSORS + 1];
    char types[KF_JOB_MAX_TENSORS + 1][32];
    int fresh = pb.dest_in < 0;
    kf_strbuf_printf(&b, "\nvoid kf_kernel(");
    int na = kf_pw_emit_params(&b, sig, &pb, 0, args, types);
    int y = fresh ? sig->n_in : pb.dest_in;
    kf_strbuf_printf(&b, ")\n{\n");
    for (int i = 0; i < sig->n_in; i++) {
        int used = i == pb.dest_in;
        for (int k = 0; k < pb.n; k++) used |= pb.in_idx[k] == i;
        if (!used) kf_strbuf_printf(&b, "    (void)p%d;\n", i);
    }
    /* below torch's grain size (32768 elements) eager stays on one thread, and so do we: a
     * team costs more than it saves there */
    int omp = n >= 32768 && n / chunk > 1 ? vals[0] : 0;
    if (omp != vals[0]) kf_strbuf_printf(&b, "    /* omp = %d: too few elements */\n", vals[0]);
    if (omp == 1) kf_strbuf_printf(&b, "#pragma omp parallel for schedule(static)\n");
    if (omp == 2) kf_strbuf_printf(&b, "#pragma omp parallel for schedule(dynamic, 1)\n");
    kf_strbuf_printf(&b, "    for (int64_t u = 0; u < KF_ROWS * KF_NCH; u++) {\n"
                         "        int64_t q = u / KF_NCH, j0 = (u %% KF_NCH) * KF_CH;\n"
                         "        int64_t j1 = j0 + KF_CH < KF_D0 ? j0 + KF_CH : KF_D0;\n"
                         "        int64_t oy = 0");
    for (int j = 0; j < pb.n_tensors; j++) kf_strbuf_printf(&b, ", o%d = 0", j);
    kf_strbuf_printf(&b, ";\n");
    for (int d = 1; d < dd->nd; d++) {
        kf_strbuf_printf(&b, "        { int64_t c = q %% %lldLL; q /= %lldLL; oy += c * %lldLL;",
                         (long long)dd->size[d], (long long)dd->size[d], (long long)dd->yst[d]);
        for (int j = 0; j < pb.n_tensors; j++)
            kf_strbuf_printf(&b, " o%d += c * %lldLL;", j, (long long)dd->st[j][d]);
        kf_strbuf_printf(&b, " }\n");
    }
    kf_strbuf_printf(&b, "        (void)q;\n#pragma GCC unroll %d\n"
                         "        for (int64_t j = j0; j < j1; j++)\n            p%d[oy + j * %lldLL] = KF_ST(",
                     vals[1], y, (long long)dd->yst[0]);
    char offs[KF_PW_MAX_OPS][64];
    const char *off[KF_PW_MAX_OPS] = {"0", "0", "0"};
    for (int j = 0; j < pb.n_tensors; j++) {
        snprintf(offs[j], sizeof offs[j], "o%d + j * %lldLL", j, (long long)dd->st[j][0]);
        off[pb.op_of[j]] = offs[j];
    }
    kf_pw_emit_call(&b, &pb, off);
    kf_strbuf_printf(&b, ");\n    }\n}\n");
    return kf_template_host_finish(t, &b, args, na, source, launch_json, err, errcap);
}
