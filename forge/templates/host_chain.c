/* host_chain (backend "host"): a chain job's one C kernel (chain.h): per row of the chain's full
 * shape, phase 0 over the row (folding the reduction or the row tail's sum or max), the
 * reduction's value and the row members, phase 2 over the row, or the row tail (a layer norm or
 * a softmax); a chain ending in a group norm per group of rows instead. Knobs: omp = rows
 * (or groups) over OpenMP threads (0 off, 1 static, 2 dynamic; off below 32768 elements, where
 * eager stays on one thread); unroll = the row loops' `#pragma GCC unroll` (a phase 0 that folds
 * a sum is an `omp simd` loop instead); math = 1: in a float chain, the
 * softmax tail's exp and the members' exp, expm1, tanh, erf, log and log1p (silu, sigmoid,
 * GPT-2's tanh GELU, softplus) are host_math.h's vectorizable ones (as host_row_softmax's; libm's
 * do not vectorize), 0: libm. */
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/chain.h"
#include "forge/templates/template.h"

static const kf_knob_def knobs[] = {
    {"omp", 3, {1, 0, 2}},
    {"unroll", 2, {1, 4}},
    {"math", 2, {1, 0}},
};
#define NKNOBS ((int)(sizeof knobs / sizeof knobs[0]))

static int applies(const kf_job_sig *sig)
{
    kf_chain_bind b;
    return kf_chain_bind_sig(sig, &b, NULL, 0);
}

static kf_status render(const kf_job_sig *sig, const int *knob_idx, char **source,
                        char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_host_chain = {
    .name = "host_chain",
    .backend = "host",
    .n_knobs = NKNOBS,
    .knobs = knobs,
    .applies = applies,
    .render = render,
};

/* A chain ending in a group norm: per group, phase 0 over its rows (folding the norm's sum),
 * then the tail (chain.c, emit_gn). */
static void render_gn(kf_strbuf *b, const kf_chain_bind *cb, int inline_exp)
{
    kf_strbuf_printf(b, "    for (long long g = 0; g < KF_NG; g++) {\n");
    kf_chain_emit_tail_begin(b, cb, 0, "        ");
    kf_strbuf_printf(b, "        %s\n", kf_chain_group_loop(0));
    kf_chain_emit_rowbases(b, cb, "            ");
    kf_strbuf_printf(b, "%s            for (long long c = 0; c < KF_C; c++) {\n", kf_chain_tail_simd(cb));
    kf_chain_emit_phase(b, cb, 0, 0, "                ", "");
    kf_strbuf_printf(b, "            }\n        }\n");
    kf_chain_emit_tail(b, cb, 0, inline_exp, "        ");
    kf_strbuf_printf(b, "    }\n}\n");
}

static kf_status render(const kf_job_sig *sig, const int *knob_idx, char **source,
                        char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_host_chain;
    int vals[NKNOBS];
    kf_status st = kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    kf_chain_bind cb;
    kf_chain_bind_sig(sig, &cb, NULL, 0);

    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, vals);
    int inline_exp = vals[2] && cb.sm >= 0 && cb.ct == KF_F32;
    /* the members' exp too (silu, sigmoid, ...): libm's expf does not vectorize */
    if (vals[2] && cb.ct == KF_F32) kf_strbuf_printf(&b, "#define KF_FAST_MATH 1\n%s", kf_body_host_math_h);
    kf_chain_emit_defs(&b, &cb, 0, "static inline");
    char types[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS][40];
    const char *args[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS];
    kf_strbuf_printf(&b, "\nvoid kf_kernel(");
    int na = kf_chain_emit_params(&b, &cb, sig, 0, types, args);
    kf_strbuf_printf(&b, ")\n{\n");
    kf_chain_emit_prologue(&b, &cb, 0, "    ");
    const int64_t units = cb.gn ? cb.gn_ng : cb.R; /* a thread's rows: one, or a group's */
    int omp = cb.R * cb.C >= 32768 && units > 1 ? vals[0] : 0;
    if (omp != vals[0]) kf_strbuf_printf(&b, "    /* omp = %d: too few elements or rows */\n", vals[0]);
    if (omp == 1) kf_strbuf_printf(&b, "#pragma omp parallel for schedule(static)\n");
    if (omp == 2) kf_strbuf_printf(&b, "#pragma omp parallel for schedule(dynamic, 1)\n");
    if (cb.gn) {
        render_gn(&b, &cb, inline_exp);
        return kf_template_host_finish(t, &b, args, na, source, launch_json, err, errcap);
    }
    kf_strbuf_printf(&b, "    for (long long r = 0; r < KF_R; r++) {\n");
    kf_chain_emit_rowbases(&b, &cb, "        ");
    if (cb.red >= 0) kf_strbuf_printf(&b, "        kf_ct acc = KF_RINIT;\n");
    kf_chain_emit_tail_begin(&b, &cb, 0, "        ");
    /* a sum folded in phase 0 (RMSNorm's mean) as a vector fold too: a float sum in order is
     * one dependent add per element, which GCC does not reorder on its own */
    char unroll[40];
    snprintf(unroll, sizeof unroll, "#pragma GCC unroll %d\n", vals[1]);
    const char *fold = cb.red >= 0 && cb.red_kind != KF_CHAIN_RED_AMAX
                           ? "#pragma omp simd reduction(+ : acc)\n" : unroll;
    if (cb.tail >= 0) /* a vector fold (GCC takes one pragma before a loop: unroll is not used) */
        kf_strbuf_printf(&b, "%s", kf_chain_tail_simd(&cb));
    else
        kf_strbuf_printf(&b, "%s", fold);
    for (int p = 0; cb.cat >= 0 && p < cb.n_parts; p++) { /* a loop per part of the cat */
        if (p) kf_strbuf_printf(&b, "%s", fold);
        kf_strbuf_printf(&b, "        for (long long c = %lldLL; c < %lldLL; c++) {\n",
                         (long long)cb.part_off[p], (long long)(cb.part_off[p] + cb.part_len[p]));
        kf_chain_emit_phase_part(&b, &cb, p, 0, "            ");
        kf_strbuf_printf(&b, "        }\n");
    }
    if (cb.cat < 0) {
        kf_strbuf_printf(&b, "        for (long long c = 0; c < KF_C; c++) {\n");
        kf_chain_emit_phase(&b, &cb, 0, 0, "            ", "");
        kf_strbuf_printf(&b, "        }\n");
    }
    kf_chain_emit_tail(&b, &cb, 0, inline_exp, "        ");
    if (cb.red >= 0) {
        kf_chain_emit_red_value(&b, &cb, 0, "        ", "");
        kf_chain_emit_phase(&b, &cb, 1, 0, "        ", "");
        kf_strbuf_printf(&b, "#pragma GCC unroll %d\n        for (long long c = 0; c < KF_C; c++) {\n",
                         vals[1]);
        kf_chain_emit_phase(&b, &cb, 2, 0, "            ", "");
        kf_strbuf_printf(&b, "        }\n");
    }
    kf_strbuf_printf(&b, "    }\n}\n");
    return kf_template_host_finish(t, &b, args, na, source, launch_json, err, errcap);
}
