/* cuda_gather: aten::embedding, aten::index_select and aten::gather on CUDA (gather_ops.h), any
 * source and index strides, int64 or int32 indices, every dtype (moved as is).
 * Knobs: threads per block; ept, elements per thread (the grid shrinks by as much). */
#include <stdio.h>
#include <string.h>

#include "forge/templates/bodies.h"
#include "forge/templates/gather_ops.h"
#include "forge/templates/template.h"

static const kf_knob_def cg_knobs[] = {
    {"threads", 4, {256, 128, 512, 1024}},
    {"ept", 4, {1, 2, 4, 8}},
};

static const char *cg_type(int dt, const char **rec)
{
    static const struct {
        int dt;
        const char *c, *rec;
    } map[] = {
        {KF_F32, "float", "float"},       {KF_F64, "double", "double"},
        {KF_F16, "__half", "__half"},     {KF_BF16, "__nv_bfloat16", "__nv_bfloat16"},
        {KF_I8, "signed char", "int8_t"}, {KF_U8, "unsigned char", "uint8_t"},
        {KF_I16, "short", "int16_t"},     {KF_I32, "int", "int32_t"},
        {KF_I64, "long long", "int64_t"}, {KF_BOOL, "bool", "bool"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].dt == dt) {
            *rec = map[i].rec;
            return map[i].c;
        }
    return NULL;
}

static int cg_applies(const kf_job_sig *sig)
{
    kf_gather_plan p;
    return kf_gather_plan_make(sig, 0, &p);
}

static kf_status cg_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap);

const kf_template kf_tmpl_cuda_gather = {
    .name = "cuda_gather",
    .backend = "nvrtc",
    .n_knobs = 2,
    .knobs = cg_knobs,
    .applies = cg_applies,
    .render = cg_render,
};

static kf_status cg_render(const kf_job_sig *sig, const int *knob_idx, char **source,
                           char **launch_json, char *err, size_t errcap)
{
    const kf_template *t = &kf_tmpl_cuda_gather;
    int v[2];
    kf_status st = kf_template_render_begin(t, sig, knob_idx, v, source, launch_json, err, errcap);
    if (st != KF_OK) return st;
    kf_gather_plan p;
    kf_gather_plan_make(sig, 0, &p);
    const char *rec = "", *irec = "";
    const char *ty = cg_type(p.src_dt, &rec), *ity = cg_type(p.idx_dt, &irec);
    int nt = v[0], ept = v[1];
    int64_t threads = (p.numel + ept - 1) / ept;
    int gs = 1;
    unsigned grid = kf_template_grid((threads + nt - 1) / nt, nt, &gs);
    kf_strbuf b = {0};
    kf_template_cuda_prologue(&b, t, sig, v);
    kf_strbuf_printf(&b, "/* inputs: %s, index; outputs: out */\ntypedef %s KF_T;\ntypedef %s KF_IDX;\n"
                         "#define KF_NT %d /* KF_EPT: the knob */\n",
                     strcmp(sig->op, "aten::embedding") ? "self" : "weight", ty, ity, nt);
    kf_gather_emit(&b, &p, "__device__ __forceinline__");
    kf_strbuf_printf(&b, "\n%s", kf_body_cuda_gather_cu);
    char a0[40], a1[40], a2[40];
    snprintf(a0, sizeof a0, "const %s*", rec);
    snprintf(a1, sizeof a1, "const %s*", irec);
    snprintf(a2, sizeof a2, "%s*", rec);
    const char *args[] = {a0, a1, a2};
    const unsigned g3[3] = {grid, 1, 1}, b3[3] = {(unsigned)nt, 1, 1};
    return kf_template_cuda_finish(t, &b, args, 3, g3, b3, 0, source, launch_json, err, errcap);
}
