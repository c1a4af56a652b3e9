/* host_gather: aten::embedding, aten::index_select and aten::gather on the host (gather_ops.h),
 * any source and index strides, int64 or int32 indices, every dtype of the host backend (f16 and
 * bf16 moved as 16-bit words). Knob: omp, the rows over OpenMP threads (0 off). */
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/gather_ops.h"
#include "forge/templates/template.h"

static const kf_knob_def hg_knobs[] = {
    {"omp", 2, {0, 1}},
};

/* the C type of the element, and its launch-record type */
static const char *hg_type(int dt, const char **rec)
{
    static const struct {
        int dt;
        const char *c, *rec;
    } map[] = {
        {KF_F32, "float", "float"},     {KF_F64, "double", "double"},
        {KF_F16, "uint16_t", "__half"}, {KF_BF16, "uint16_t", "__nv_bfloat16"},
        {KF_I8, "int8_t", "int8_t"},    {KF_U8, "uint8_t", "uint8_t"},
        {KF_I16, "int16_t", "int16_t"}, {KF_I32, "int32_t", "int32_t"},
        {KF_I64, "int64_t", "int64_t"}, {KF_BOOL, "_Bool", "bool"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].dt == dt) {
            *rec = map[i].rec;
            return map[i].c;
        }
    return NULL;
}

static int hg_applies(const kf_job_sig *sig)
{
    kf_gather_plan p;
    return kf_gather_plan_make(sig, 1, &p);
}

static kf_status hg_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_host_gather = {
    .name = "host_gather",
    .backend = "host",
    .n_knobs = 1,
    .knobs = hg_knobs,
    .applies = hg_applies,
    .render = hg_render,
};

static kf_status hg_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_host_gather;
    int v[1];
    kf_status st = kf_template_render_begin(t, sig, knob_idx, v, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    kf_gather_plan p;
    kf_gather_plan_make(sig, 1, &p);
    const char *rec = "", *irec = "";
    const char *ty = hg_type(p.src_dt, &rec), *ity = hg_type(p.idx_dt, &irec);
    kf_strbuf b = {0};
    kf_template_host_prologue(&b, t, sig, v);
    kf_strbuf_printf(&b, "/* inputs: %s, index; outputs: out */\ntypedef %s KF_T;\ntypedef %s KF_IDX;\n",
                     strcmp(sig->op, "aten::embedding") ? "self" : "weight", ty, ity);
    kf_gather_emit(&b, &p, "static inline");
    kf_strbuf_printf(&b, "\n%s", kf_body_host_gather_c);
    char a0[40], a1[40], a2[40];
    snprintf(a0, sizeof a0, "const %s*", rec);
    snprintf(a1, sizeof a1, "const %s*", irec);
    snprintf(a2, sizeof a2, "%s*", rec);
    const char *args[] = {a0, a1, a2};
    return kf_template_host_finish(t, &b, args, 3, source, launch_json, err, errcap);
}
