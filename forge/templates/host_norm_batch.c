/* host_batch_norm_eval: inference batch norm with the running statistics,
 *   aten::native_batch_norm(input, weight?, bias?, running_mean, running_var, training=False,
 *                           momentum, eps)
 *   aten::_native_batch_norm_legit_no_training(input, weight?, bias?, running_mean,
 *                                              running_var, momentum, eps)
 * for an f32 input [N, C, *] in NCHW (contiguous) or channels-last memory order, y in the same
 * order (as eager allocates it), parameters [C] f32. save_mean / save_invstd: eager's CPU
 * kernel returns empty tensors ([0]) in eval mode; a signature with elements there is refused.
 *
 * As eager's CPU kernel, in float: invstd = 1 / sqrt(var + (float)eps), a = invstd * w,
 * s = fma(-mean, a, b) per channel, then y = fma(x, a, s): bit-identical to eager (whose
 * vectorized kernel fuses both). Training mode (batch statistics, running statistics updated in
 * place) is host_batch_norm_train's.
 * Knobs:
 *  omp = NCHW planes (one channel of one sample) or channels-last pixels over OpenMP threads:
 *        0 off, 1 static split, 2/3 dynamic chunks of about 8K/32K elements. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/cuda_norm.h"
#include "forge/templates/host_norm.h"

#define NAME "host_batch_norm_eval"
#define BN_MAX_C 65536 /* the per-channel a, s tables live on the kernel's stack */

static const kf_knob_def bn_knobs[] = {
    {"omp", 4, {0, 1, 2, 3}},
};
#define BN_NKNOBS ((int)(sizeof bn_knobs / sizeof bn_knobs[0]))

typedef struct bn_shape {
    int w, b, rm, rv; /* index into in[]; w, b -1 when None */
    int layout;       /* 0 NCHW, 1 channels last (also NCHW with one pixel per plane) */
    int64_t n, c, hw;
    double eps;
} bn_shape;

/* 1 when the template serves sig; else 0, and why says why if the op is ours (empty if not) */
static int bn_check(const kf_job_sig *sig, bn_shape *s, char *why, size_t cap)
{
    static const char *const names[] = {"input", "weight", "bias", "running_mean",
                                        "running_var"};
    static const int opt_nbn[] = {0, 1, 1, 1, 1}, opt_legit[] = {0, 1, 1, 0, 0};
    int idx[5];
    memset(s, 0, sizeof *s);
    if (why && cap) why[0] = 0;
    if (!sig) return 0;
    int legit = !strcmp(sig->op, "aten::_native_batch_norm_legit_no_training");
    if (!legit && strcmp(sig->op, "aten::native_batch_norm")) return 0;
    if (!legit) {
        const kf_job_scalar *tr = kf_job_scalar_find(sig, "training");
        if (!tr || tr->kind != 'b')
            return kf_host_norm_why(why, cap, NAME, "training is not a bool");
        if (tr->i != 0) return 0; /* training: host_batch_norm_train's, which says why not */
    }
    if (sig->n_out != 3 || sig->out_alias[0] || sig->out_alias[1] || sig->out_alias[2])
        return kf_host_norm_why(why, cap, NAME, "expected 3 fresh outputs");
    if (kf_template_tensor_args(sig, names, legit ? opt_legit : opt_nbn, 5, idx) < 0)
        return kf_host_norm_why(why, cap, NAME, "which optional tensors are given is unclear");
    if (idx[3] < 0 || idx[4] < 0)
        return kf_host_norm_why(why, cap, NAME, "no running statistics (batch statistics not "
                                                "handled)");
    s->w = idx[1], s->b = idx[2], s->rm = idx[3], s->rv = idx[4];
    if (kf_cuda_norm_eps(sig, -1.0, &s->eps) < 0)
        return kf_host_norm_why(why, cap, NAME, "eps is not a finite float");
    const kf_job_tensor *x = &sig->in[0];
    if (x->dtype != KF_F32)
        return kf_host_norm_why(why, cap, NAME, "input dtype %s not handled (f32 only)",
                                kf_dtype_name(x->dtype));
    if (x->ndim < 2) return kf_host_norm_why(why, cap, NAME, "input is not [N, C, *]");
    int64_t total = kf_job_tensor_numel(x);
    if (total <= 0) return kf_host_norm_why(why, cap, NAME, "input has no elements");
    s->n = x->sizes[0];
    s->c = x->sizes[1];
    s->hw = total / s->n / s->c;
    if (s->c > BN_MAX_C)
        return kf_host_norm_why(why, cap, NAME, "%lld channels (at most %d)", (long long)s->c,
                                BN_MAX_C);
    s->layout = kf_cuda_norm_layout(x);
    if (s->layout < 0)
        return kf_host_norm_why(why, cap, NAME, "input layout not handled (contiguous or "
                                                "channels-last only)");
    for (int i = 1; i < sig->n_in; i++) { /* weight, bias, running stats: [C] */
        const kf_job_tensor *p = &sig->in[i];
        const char *what = i == s->w    ? "weight"
                           : i == s->b  ? "bias"
                           : i == s->rm ? "running_mean"
                                        : "running_var";
        if (!kf_host_norm_f32(p, what, why, cap, NAME)) return 0;
        if (p->ndim != 1 || p->sizes[0] != s->c)
            return kf_host_norm_why(why, cap, NAME, "%s is not [C]", what);
    }
    const kf_job_tensor *y = &sig->out[0];
    if (y->dtype != KF_F32 || !kf_job_tensor_same_shape(x, y) ||
        !kf_cuda_norm_same_layout(y, s->layout))
        return kf_host_norm_why(why, cap, NAME, "output y is not an f32 tensor in the input's "
                                                "layout");
    if (kf_job_tensor_numel(&sig->out[1]) != 0 || kf_job_tensor_numel(&sig->out[2]) != 0)
        return kf_host_norm_why(why, cap, NAME, "save_mean / save_invstd with elements (eager's "
                                                "CPU eval returns empty ones)");
    if (s->hw == 1) s->layout = 1; /* [N, C]: the channels are the inner dim either way */
    return 1;
}

static int bn_applies(const kf_job_sig *sig)
{
    bn_shape s;
    return bn_check(sig, &s, NULL, 0);
}

static int bn_why_not(const kf_job_sig *sig, char *why, size_t cap)
{
    bn_shape s;
    if (bn_check(sig, &s, why, cap)) return 0;
    return why && cap && why[0];
}

static kf_status bn_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_host_batch_norm_eval = {
    .name = NAME,
    .backend = "host",
    .n_knobs = BN_NKNOBS,
    .knobs = bn_knobs,
    .applies = bn_applies,
    .render = bn_render,
    .why_not = bn_why_not,
};

static kf_status bn_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_host_batch_norm_eval;
    int vals[BN_NKNOBS];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    bn_shape s;
    bn_check(sig, &s, NULL, 0);
    /* a work item is a plane (NCHW) or a pixel (channels last): items per dynamic chunk */
    int64_t item = s.layout ? s.c : s.hw, ipc = (vals[0] == 3 ? 32768 : 8192) / item;
    if (ipc < 1) ipc = 1;

    const char *args[8];
    int na = 0;
    for (int i = 0; i < sig->n_in; i++) args[na++] = "const float*";
    for (int j = 0; j < 3; j++) args[na++] = "float*";

    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b,
                     "#define KF_N %lldLL\n#define KF_C %lldLL\n#define KF_HW %lldLL\n"
                     "#define KF_CL %d\n#define KF_EPS %.17g\n#define KF_IPC %lld\n"
                     "#define KF_HAS_W %d\n#define KF_HAS_B %d\n"
                     "/* inputs: input%s%s, running_mean, running_var; outputs: out, save_mean, "
                     "save_invstd (empty) */\n"
                     "#define KF_PARAMS const float *restrict x, %s%sconst float *restrict rm, "
                     "const float *restrict rv, float *restrict y, float *restrict save_mean, "
                     "float *restrict save_invstd\n"
                     "#define KF_W %s\n#define KF_B %s\n\n%s",
                     (long long)s.n, (long long)s.c, (long long)s.hw, s.layout, s.eps,
                     (long long)ipc, s.w >= 0, s.b >= 0, s.w >= 0 ? ", weight" : "",
                     s.b >= 0 ? ", bias" : "", s.w >= 0 ? "const float *restrict w, " : "",
                     s.b >= 0 ? "const float *restrict b, " : "",
                     s.w >= 0 ? "w" : "(const float *)0", s.b >= 0 ? "b" : "(const float *)0",
                     kf_body_host_norm_batch_c);
    return kf_template_host_finish(t, &b, args, na, source, launch_json, err, errcap);
}
