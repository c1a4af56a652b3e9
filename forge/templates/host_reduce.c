/* host_reduce: every reduction of reduce_ops.c's table (sum, mean, prod, amax, amin, max.dim,
 * min.dim, argmax, argmin, var, std, var_mean, linalg_vector_norm, logsumexp) on the host, for
 * any input strides (expanded ones too), any set of reduced dims, keepdim, dtype=, f32/f64 and
 * integer/bool dtypes, outputs dense in any order. The combine text and the offset functions come
 * from reduce_ops.c, the loops from kernels/host_reduce.c.
 *
 * Knobs:
 *   mode   0 rows: one output at a time over its R elements; 1 columns: KF_TILE adjacent outputs
 *          walk R together (only where the innermost kept dim is contiguous in the input, else
 *          rows);
 *   lanes  interleaved partial states in rows mode (1: one, in order);
 *   omp    outputs over OpenMP threads (0 off);
 *   tile   outputs per tile in columns mode. */
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/reduce_ops.h"
#include "forge/templates/template.h"

static const kf_knob_def hred_knobs[] = {
    {"mode", 2, {0, 1}},
    {"lanes", 4, {8, 1, 4, 16}},
    {"omp", 2, {0, 1}},
    {"tile", 3, {64, 16, 256}},
};
enum { K_MODE, K_LANES, K_OMP, K_TILE, K_COUNT };

static int hred_applies(const kf_job_sig *sig)
{
    kf_red_plan p;
    return kf_red_plan_make(sig, 1, &p);
}

static kf_status hred_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                             char **launch_json, char *err, size_t errcap);

/* columns where R is strided and the kept elements adjacent (x.sum(0)), else rows; threads from
 * a million elements on */
static void hred_start(const kf_job_sig *sig, int *idx)
{
    kf_red_plan p;
    if (!kf_red_plan_make(sig, 1, &p)) return;
    idx[K_MODE] = p.nk > 0 && p.kin[0] == 1 && !(p.nr == 1 && p.rin[0] == 1);
    idx[K_OMP] = p.o * p.r >= (1 << 20) && p.o > 1;
}

const kf_template kf_tmpl_host_reduce = {
    .name = "host_reduce",
    .backend = "host",
    .n_knobs = K_COUNT,
    .knobs = hred_knobs,
    .applies = hred_applies,
    .render = hred_render,
    .start = hred_start,
};

static kf_status hred_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                             char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_host_reduce;
    int v[K_COUNT];
    kf_status st = kf_template_render_begin(t, sig, knob_idx, v, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    kf_red_plan p;
    kf_red_plan_make(sig, 1, &p);
    int mode = v[K_MODE] && p.nk > 0 && p.kin[0] == 1;
    const char *tin = kf_red_host_type(p.in_dt), *tout = kf_red_host_type(p.out_dt);
    const char *tout2 = p.op->n_out == 2 ? kf_red_host_type(p.out2_dt) : NULL;

    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, v);
    kf_strbuf_printf(&b, "/* inputs: self; outputs: %s */\n#define KF_COLS %d%s\n",
                     tout2 ? "out, out2" : "out", mode,
                     mode == v[K_MODE] ? "" : " /* columns need the kept elements adjacent */");
    kf_strbuf_printf(&b, "typedef %s KF_TIN;\ntypedef %s KF_TOUT;\n", tin, tout);
    if (tout2) kf_strbuf_printf(&b, "typedef %s KF_TOUT2;\n", tout2);
    kf_red_emit(&b, &p, "static inline", 0);
    if (tout2)
        kf_strbuf_printf(&b, "#define KF_PARAMS const KF_TIN *restrict x, KF_TOUT *restrict y, "
                             "KF_TOUT2 *restrict y2\n"
                             "#define KF_PARAMS_OUT KF_TOUT *restrict y, KF_TOUT2 *restrict y2\n"
                             "#define KF_ARGS_OUT y, y2\n");
    else
        kf_strbuf_printf(&b, "#define KF_PARAMS const KF_TIN *restrict x, KF_TOUT *restrict y\n"
                             "#define KF_PARAMS_OUT KF_TOUT *restrict y\n#define KF_ARGS_OUT y\n");
    /* the stores: the value (or the index of argmax/argmin), then max.dim's index or
     * var_mean's mean */
    int k = p.op->kind;
    if (k == KF_RED_ARGMAX || k == KF_RED_ARGMIN)
        kf_strbuf_printf(&b, "#define KF_STORE(o, s) (y[kf_out_o(o)] = (KF_TOUT)(s).i)\n");
    else if (k == KF_RED_MAX_DIM || k == KF_RED_MIN_DIM)
        kf_strbuf_printf(&b, "#define KF_STORE(o, s) (y[kf_out_o(o)] = (KF_TOUT)KF_FINAL(s), "
                             "y2[kf_out2_o(o)] = (KF_TOUT2)(s).i)\n");
    else if (k == KF_RED_VAR_MEAN)
        kf_strbuf_printf(&b, "#define KF_STORE(o, s) (y[kf_out_o(o)] = (KF_TOUT)KF_FINAL(s), "
                             "y2[kf_out2_o(o)] = (KF_TOUT2)m)\n");
    else
        kf_strbuf_printf(&b, "#define KF_STORE(o, s) (y[kf_out_o(o)] = (KF_TOUT)KF_FINAL(s))\n");
    kf_strbuf_printf(&b, "\n%s", kf_body_host_reduce_c);

    char a_in[40], a_out[40], a_out2[40];
    snprintf(a_in, sizeof a_in, "const %s*", p.in_dt == KF_BOOL ? "bool" : tin);
    snprintf(a_out, sizeof a_out, "%s*", p.out_dt == KF_BOOL ? "bool" : tout);
    snprintf(a_out2, sizeof a_out2, "%s*", tout2 ? tout2 : "");
    const char *args[] = {a_in, a_out, a_out2};
    return kf_template_host_finish(t, &b, args, tout2 ? 3 : 2, source, launch_json, err, errcap);
}
