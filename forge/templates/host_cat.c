/* Host template for aten::cat: host_cat. A copy of raw element bits (uint8..uint64_t: any dtype
 * cat.h allows), part by part (the inputs with elements, cat.c): each part's
 * slice of the output is a set of rows along the output's innermost collapsed dim, each row
 * copied from the input through its strides (memcpy where the input's row is contiguous too).
 * Rows are grouped into chunks of about `chunk` elements, the chunks of every part in one loop
 * so that OpenMP balances parts of any size. The kernel takes every input of the list (the
 * skipped legacy-empty and zero-length ones too, unused) and then the output.
 *
 * Knobs: omp = chunks over OpenMP threads (0 off, 1 static split, 2 dynamic); chunk = elements
 * per chunk (at least one row); memcpy = 1 contiguous rows with memcpy, 0 an element loop (a row
 * read through a stride is always the loop). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/cat.h"

static const kf_knob_def cat_knobs[] = {
    {"omp", 3, {0, 1, 2}},
    {"chunk", 2, {1024, 16384}},
    {"memcpy", 2, {1, 0}},
};
#define CAT_NKNOBS ((int)(sizeof cat_knobs / sizeof cat_knobs[0]))

static int cat_applies(const kf_job_sig *sig)
{
    kf_cat_plan p;
    return kf_cat_analyze(sig, &p);
}

static kf_status cat_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                            char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_host_cat = {
    .name = "host_cat",
    .backend = "host",
    .n_knobs = CAT_NKNOBS,
    .knobs = cat_knobs,
    .applies = cat_applies,
    .render = cat_render,
};

/* One part's rows: coordinates of the dims above the innermost decoded from the row index, the
 * row copied. */
static void emit_part(kf_strbuf *b, const kf_cat_plan *p, int k, int use_memcpy)
{
    const kf_cat_part *pt = &p->part[k];
    int64_t run = kf_cat_part_size(p, k, 0);
    kf_strbuf_printf(b,
                     "/* part %d: input %d at %lld along the cat dim, %lld long; rows of %lld */\n"
                     "static void kf_part%d(int64_t r0, int64_t r1, const kf_e *restrict x, "
                     "kf_e *restrict y)\n{\n"
                     "    for (int64_t r = r0; r < r1; r++) {\n"
                     "        int64_t t = r, xo = 0, yo = %lldLL;\n",
                     k, pt->in, (long long)pt->off, (long long)pt->len, (long long)run, k,
                     (long long)(p->cat >= 0 ? pt->off * p->ost[p->cat] : 0));
    for (int d = 1; d < p->nd; d++) {
        long long sz = (long long)kf_cat_part_size(p, k, d);
        if (d + 1 < p->nd)
            kf_strbuf_printf(b, "        { const int64_t c = t %% %lldLL; t /= %lldLL; ", sz, sz);
        else
            kf_strbuf_printf(b, "        { const int64_t c = t; ");
        kf_strbuf_printf(b, "xo += c * %lldLL; yo += c * %lldLL; }\n", (long long)pt->st[d],
                         (long long)p->ost[d]);
    }
    if (p->nd == 1) kf_strbuf_printf(b, "        (void)t;\n");
    if (pt->st[0] == 1 && use_memcpy)
        kf_strbuf_printf(b, "        memcpy(y + yo, x + xo, %lldu * sizeof(kf_e));\n",
                         (long long)run);
    else
        kf_strbuf_printf(b,
                         "        for (int64_t c = 0; c < %lldLL; c++) y[yo + c] = x[xo + c * "
                         "%lldLL];\n",
                         (long long)run, (long long)pt->st[0]);
    kf_strbuf_printf(b, "    }\n}\n\n");
}

static kf_status cat_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                            char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_host_cat;
    int vals[CAT_NKNOBS];
    kf_status st =
        kf_template_render_begin(t, sig, knob_idx, vals, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    kf_cat_plan p;
    kf_cat_analyze(sig, &p);
    const char *ty = kf_cat_launch_type(p.dtype, 1);

    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, vals);
    kf_strbuf_printf(&b, "#include <string.h>\n\n/* inputs: tensors.0..%d (list order; unused: "
                         "legacy empty or zero length); outputs: out */\ntypedef %s kf_e;\n\n",
                     sig->n_in - 1, ty);
    /* chunks: whole rows of one part, about KF_CHUNK elements each */
    int64_t rpc[KF_JOB_MAX_TENSORS], first[KF_JOB_MAX_TENSORS + 1], rows[KF_JOB_MAX_TENSORS];
    first[0] = 0;
    for (int k = 0; k < p.n_parts; k++) {
        int64_t run = kf_cat_part_size(&p, k, 0);
        rows[k] = 1;
        for (int d = 1; d < p.nd; d++) rows[k] *= kf_cat_part_size(&p, k, d);
        rpc[k] = vals[1] / run > 0 ? vals[1] / run : 1;
        first[k + 1] = first[k] + (rows[k] + rpc[k] - 1) / rpc[k];
        emit_part(&b, &p, k, vals[2]);
    }
    kf_strbuf_printf(&b, "void kf_kernel(");
    for (int i = 0; i < sig->n_in; i++) kf_strbuf_printf(&b, "const kf_e *restrict x%d, ", i);
    kf_strbuf_printf(&b, "kf_e *restrict y)\n{\n");
    for (int i = 0, k = 0; i < sig->n_in; i++) { /* the inputs without elements */
        if (k < p.n_parts && p.part[k].in == i) k++;
        else kf_strbuf_printf(&b, "    (void)x%d;\n", i);
    }
    kf_strbuf_printf(&b,
                     "#if KF_OMP == 1\n#pragma omp parallel for schedule(static)\n"
                     "#elif KF_OMP == 2\n#pragma omp parallel for schedule(dynamic, 1)\n#endif\n"
                     "    for (int64_t ck = 0; ck < %lldLL; ck++) {\n",
                     (long long)first[p.n_parts]);
    for (int k = 0; k < p.n_parts; k++) {
        if (k + 1 < p.n_parts)
            kf_strbuf_printf(&b, "        %sif (ck < %lldLL) ", k ? "else " : "",
                             (long long)first[k + 1]);
        else
            kf_strbuf_printf(&b, "        %s", k ? "else " : "");
        kf_strbuf_printf(&b,
                         "{\n            const int64_t r0 = (ck - %lldLL) * %lldLL;\n"
                         "            kf_part%d(r0, r0 + %lldLL < %lldLL ? r0 + %lldLL : %lldLL, "
                         "x%d, y);\n        }\n",
                         (long long)first[k], (long long)rpc[k], k, (long long)rpc[k],
                         (long long)rows[k], (long long)rpc[k], (long long)rows[k],
                         p.part[k].in);
    }
    kf_strbuf_printf(&b, "    }\n}\n");

    char cty[40], mty[40];
    snprintf(cty, sizeof cty, "const %s*", ty);
    snprintf(mty, sizeof mty, "%s*", ty);
    const char *args[KF_JOB_MAX_TENSORS + 1];
    for (int i = 0; i < sig->n_in; i++) args[i] = cty;
    args[sig->n_in] = mty;
    return kf_template_host_finish(t, &b, args, sig->n_in + 1, source, launch_json, err, errcap);
}
