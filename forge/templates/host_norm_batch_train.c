/* host_batch_norm_train: training batch norm with the batch's statistics,
 *   aten::native_batch_norm(input, weight?, bias?, running_mean?, running_var?, training=True,
 *                           momentum, eps)
 * for an f32 input [N, C, *] in NCHW (contiguous) or channels-last memory order, y in the same
 * order, parameters [C] f32. Outputs: y, save_mean and save_invstd [C]; with running statistics
 * (both given) they are updated in place, as eager does (out_alias: written through their
 * input arguments, which the kernel then takes as writable pointers).
 *
 * As eager's CPU kernel: the statistics in double (eager accumulates in double, or in float
 * in its channels-last path: within the tolerance of each other), invstd = 1 / sqrt(var + eps)
 * in double, running_mean = momentum * mean + (1 - momentum) * running_mean, running_var with
 * the unbiased variance, then y from the saved float mean and invstd exactly as in eval mode:
 * a = invstd * w, s = fma(-mean, a, b), y = fma(x, a, s).
 * Knobs:
 *  omp = channels (NCHW) or blocks of adjacent channels (channels last) over OpenMP threads:
 *        0 off, 1 static split, 2 dynamic, one at a time. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/cuda_norm.h"
#include "forge/templates/host_norm.h"

#define NAME "host_batch_norm_train"
#define BT_MAX_C 8192 /* channels last: a task's per-channel sums live on the stack */
#define BT_CL_RUN 128 /* channels last: channels per task, at least */

static const kf_knob_def bt_knobs[] = {
    {"omp", 3, {0, 1, 2}},
};
#define BT_NKNOBS ((int)(sizeof bt_knobs / sizeof bt_knobs[0]))

typedef struct bt_shape {
    int w, b, rm, rv; /* index into in[], -1 when None */
    int layout;       /* 0 NCHW, 1 channels last (also NCHW with one pixel per plane) */
    int64_t n, c, hw;
    double eps, momentum;
} bt_shape;

/* 1 when the template serves sig; else 0, and why says why if the op is ours (empty if not) */
static int bt_check(const kf_job_sig *sig, bt_shape *s, char *why, size_t cap)
{
    static const char *const names[] = {"input", "weight", "bias", "running_mean",
                                        "running_var"};
    static const int opt[] = {0, 1, 1, 1, 1};
    int idx[5];
    memset(s, 0, sizeof *s);
    if (why && cap) why[0] = 0;
    if (!sig || strcmp(sig->op, "aten::native_batch_norm")) return 0;
    const kf_job_scalar *tr = kf_job_scalar_find(sig, "training");
    if (!tr || tr->kind != 'b' || tr->i != 1) return 0; /* eval: host_batch_norm_eval's */
    if (kf_template_tensor_args(sig, names, opt, 5, idx) < 0)
        return kf_host_norm_why(why, cap, NAME, "which optional tensors are given is unclear");
    s->w = idx[1], s->b = idx[2], s->rm = idx[3], s->rv = idx[4];
    if ((s->rm < 0) != (s->rv < 0))
        return kf_host_norm_why(why, cap, NAME, "one of running_mean and running_var is None");
    const int running = s->rm >= 0;
    /* y, save_mean, save_invstd fresh; then running_mean, running_var written in place */
    if (sig->n_out != (running ? 5 : 3) || sig->out_alias[0] || sig->out_alias[1] ||
        sig->out_alias[2] ||
        (running && (sig->out_alias[3] != s->rm + 1 || sig->out_alias[4] != s->rv + 1)))
        return kf_host_norm_why(why, cap, NAME, "unexpected outputs (3 fresh, then the running "
                                                "statistics written in place)");
    if (kf_cuda_norm_eps(sig, -1.0, &s->eps) < 0)
        return kf_host_norm_why(why, cap, NAME, "eps is not a finite float");
    const kf_job_scalar *mo = kf_job_scalar_find(sig, "momentum");
    if (!mo || (mo->kind != 'd' && mo->kind != 'i') || (mo->kind == 'd' && !isfinite(mo->d)))
        return kf_host_norm_why(why, cap, NAME, "momentum is not a finite number");
    s->momentum = mo->kind == 'd' ? mo->d : (double)mo->i;
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
    if (s->n * s->hw < 2) /* the unbiased variance divides by count - 1 */
        return kf_host_norm_why(why, cap, NAME, "one value per channel");
    s->layout = kf_cuda_norm_layout(x);
    if (s->layout < 0)
        return kf_host_norm_why(why, cap, NAME, "input layout not handled (contiguous or "
                                                "channels-last only)");
    if (s->hw == 1) s->layout = 1; /* [N, C]: the channels are the inner dim either way */
    if (s->layout == 1 && s->c > BT_MAX_C)
        return kf_host_norm_why(why, cap, NAME, "channels last with %lld channels (at most %d)",
                                (long long)s->c, BT_MAX_C);
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
        !kf_cuda_norm_same_layout(y, s->layout ? kf_cuda_norm_layout(x) : 0))
        return kf_host_norm_why(why, cap, NAME, "output y is not an f32 tensor in the input's "
                                                "layout");
    for (int j = 1; j < 3; j++) {
        const char *what = j == 1 ? "save_mean" : "save_invstd";
        if (!kf_host_norm_f32(&sig->out[j], what, why, cap, NAME)) return 0;
        if (kf_job_tensor_numel(&sig->out[j]) != s->c)
            return kf_host_norm_why(why, cap, NAME, "%s is not [C]", what);
    }
    return 1;
}

static int bt_applies(const kf_job_sig *sig)
{
    bt_shape s;
    return bt_check(sig, &s, NULL, 0);
}

static int bt_why_not(const kf_job_sig *sig, char *why, size_t cap)
{
    bt_shape s;
    if (bt_check(sig, &s, why, cap)) return 0;
    return why && cap && why[0];
}

static kf_status bt_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_host_batch_norm_train = {
    .name = NAME,
    .backend = "host",
    .n_knobs = BT_NKNOBS,
    .knobs = bt_knobs,
    .applies = bt_applies,
    .render = bt_render,
    .why_not = bt_why_not,
};

static kf_status bt_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_host_batch_norm_train;
    int vals[BT_NKNOBS];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    bt_shape s;
    bt_check(sig, &s, NULL, 0);
    const int running = s.rm >= 0;
    int64_t cb = s.layout ? BT_CL_RUN : 1; /* channels per task */
    if (cb > s.c) cb = s.c;

    const char *args[8];
    int na = 0;
    for (int i = 0; i < sig->n_in; i++)
        args[na++] = i == s.rm || i == s.rv ? "float*" : "const float*";
    for (int j = 0; j < 3; j++) args[na++] = "float*";

    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b,
                     "#define KF_N %lldLL\n#define KF_C %lldLL\n#define KF_HW %lldLL\n"
                     "#define KF_CL %d\n#define KF_CB %lldLL /* channels last: channels per "
                     "task */\n#define KF_EPS %.17g\n#define KF_MOMENTUM %.17g\n"
                     "#define KF_HAS_W %d\n#define KF_HAS_B %d\n#define KF_RUNNING %d\n"
                     "/* inputs: input%s%s%s; outputs: out, save_mean, save_invstd%s */\n"
                     "#define KF_PARAMS const float *restrict x, %s%s%sfloat *restrict y, "
                     "float *restrict save_mean, float *restrict save_invstd\n"
                     "#define KF_W %s\n#define KF_B %s\n#define KF_RM %s\n#define KF_RV %s\n\n%s",
                     (long long)s.n, (long long)s.c, (long long)s.hw, s.layout, (long long)cb,
                     s.eps, s.momentum, s.w >= 0, s.b >= 0, running,
                     s.w >= 0 ? ", weight" : "", s.b >= 0 ? ", bias" : "",
                     running ? ", running_mean, running_var (written)" : "",
                     running ? " (the running statistics updated in place)" : "",
                     s.w >= 0 ? "const float *restrict w, " : "",
                     s.b >= 0 ? "const float *restrict b, " : "",
                     running ? "float *restrict rm, float *restrict rv, " : "",
                     s.w >= 0 ? "w" : "(const float *)0", s.b >= 0 ? "b" : "(const float *)0",
                     running ? "rm" : "(float *)0", running ? "rv" : "(float *)0",
                     kf_body_host_norm_batch_train_c);
    return kf_template_host_finish(t, &b, args, na, source, launch_json, err, errcap);
}
