/* The builtin template table and the helpers the templates share (template.h). The host
 * templates themselves live in host_softmax.c, host_norm*.c, host_eltwise.c, host_cat.c,
 * host_pool.c and others; the inline math their `math` knob selects is kernels/host_math.h
 * (kf_body_host_math_h, bodies.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/templates/template.h"

extern const kf_template kf_tmpl_host_row_softmax;
extern const kf_template kf_tmpl_host_layer_norm;
extern const kf_template kf_tmpl_host_group_norm;
extern const kf_template kf_tmpl_host_batch_norm_eval;
extern const kf_template kf_tmpl_host_batch_norm_train;
extern const kf_template kf_tmpl_host_eltwise_unary;
extern const kf_template kf_tmpl_host_eltwise_binary;
extern const kf_template kf_tmpl_host_cat;
extern const kf_template kf_tmpl_host_max_pool2d;
extern const kf_template kf_tmpl_cuda_layer_norm;
extern const kf_template kf_tmpl_cuda_rms_norm;
extern const kf_template kf_tmpl_cuda_layer_norm_cols;
extern const kf_template kf_tmpl_cuda_rms_norm_cols;
extern const kf_template kf_tmpl_cuda_group_norm;
extern const kf_template kf_tmpl_cuda_batch_norm_eval;
extern const kf_template kf_tmpl_cuda_row_softmax;
extern const kf_template kf_tmpl_cuda_eltwise_unary;
extern const kf_template kf_tmpl_cuda_eltwise_binary;
extern const kf_template kf_tmpl_cuda_reduce_mean;
extern const kf_template kf_tmpl_cuda_eltwise_copy;
extern const kf_template kf_tmpl_cuda_max_pool2d;
extern const kf_template kf_tmpl_cuda_cat;
extern const kf_template kf_tmpl_cuda_depthwise_conv2d;
extern const kf_template kf_tmpl_cuda_solve_triangular;
/* generic reductions and gathers (reduce_ops.c) */
extern const kf_template kf_tmpl_host_reduce;
extern const kf_template kf_tmpl_cuda_reduce_generic;
extern const kf_template kf_tmpl_host_gather;
extern const kf_template kf_tmpl_cuda_gather;
extern const kf_template kf_tmpl_host_pointwise;
extern const kf_template kf_tmpl_cuda_pointwise;
extern const kf_template kf_tmpl_host_chain;
extern const kf_template kf_tmpl_cuda_chain;

const kf_template *const kf_builtin_templates[] = {
    &kf_tmpl_host_row_softmax,
    &kf_tmpl_host_layer_norm,
    &kf_tmpl_host_group_norm,
    &kf_tmpl_host_batch_norm_eval,
    &kf_tmpl_host_batch_norm_train,
    &kf_tmpl_host_eltwise_unary,
    &kf_tmpl_host_eltwise_binary,
    &kf_tmpl_host_cat,
    &kf_tmpl_host_max_pool2d,
    &kf_tmpl_cuda_layer_norm,
    &kf_tmpl_cuda_rms_norm,
    &kf_tmpl_cuda_layer_norm_cols,
    &kf_tmpl_cuda_rms_norm_cols,
    &kf_tmpl_cuda_group_norm,
    &kf_tmpl_cuda_batch_norm_eval,
    &kf_tmpl_cuda_row_softmax,
    &kf_tmpl_cuda_eltwise_unary,
    &kf_tmpl_cuda_eltwise_binary,
    &kf_tmpl_cuda_reduce_mean,
    &kf_tmpl_cuda_eltwise_copy,
    &kf_tmpl_cuda_max_pool2d,
    &kf_tmpl_cuda_cat,
    &kf_tmpl_cuda_depthwise_conv2d,
    &kf_tmpl_cuda_solve_triangular,
    /* generic reductions and gathers */
    &kf_tmpl_host_reduce,
    &kf_tmpl_cuda_reduce_generic,
    &kf_tmpl_host_gather,
    &kf_tmpl_cuda_gather,
    /* the pointwise engine (pointwise_ops.c): every row of its table, after the hand-written
     * eltwise templates, which also serve some of those ops (the table's comment says which) */
    &kf_tmpl_host_pointwise,
    &kf_tmpl_cuda_pointwise,
    /* chain jobs (op kforge::chain, chain.h): no other template applies to them */
    &kf_tmpl_host_chain,
    &kf_tmpl_cuda_chain,
    NULL,
};

kf_status kf_template_knob_values(const kf_template *t, const int *knob_idx, int *vals, char *err,
                                  size_t errcap)
{
    for (int k = 0; k < t->n_knobs; k++) {
        if (!knob_idx || knob_idx[k] < 0 || knob_idx[k] >= t->knobs[k].n_values) {
            if (err && errcap)
                snprintf(err, errcap, "%s: knob \"%s\" index %d out of range [0, %d)", t->name,
                         t->knobs[k].name, knob_idx ? knob_idx[k] : -1, t->knobs[k].n_values);
            return KF_ERR_INVALID;
        }
        vals[k] = t->knobs[k].values[knob_idx[k]];
    }
    return KF_OK;
}

char *kf_template_host_launch_json(const char *const *arg_types, int n)
{
    kf_strbuf b = {0};
    kf_strbuf_printf(&b, "{\"entry\":\"kf_kernel\",\"grid\":[1,1,1],\"block\":[1,1,1],\"smem\":0,"
                         "\"args\":[");
    for (int i = 0; i < n; i++) kf_strbuf_printf(&b, "%s\"%s\"", i ? "," : "", arg_types[i]);
    kf_strbuf_printf(&b, "]}");
    return kf_strbuf_take(&b);
}

char *kf_template_family(const kf_template *t, const kf_job_sig *sig)
{
    static const struct {
        const kf_template *t;
        char *(*family)(const kf_job_sig *sig);
    } table[] = {
        {&kf_tmpl_host_row_softmax, kf_host_softmax_family},
        {&kf_tmpl_cuda_row_softmax, kf_cuda_softmax_family},
        {&kf_tmpl_host_layer_norm, kf_host_layer_norm_family},
        {&kf_tmpl_cuda_layer_norm, kf_cuda_norm_row_family},
        {&kf_tmpl_cuda_rms_norm, kf_cuda_norm_row_family},
    };
    if (!t || !sig || !t->applies(sig)) return NULL;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].t == t) return table[i].family(sig);
    return NULL;
}

char *kf_template_launch_add_ints(char *launch_json, const char *const *ints, int n)
{
    size_t len = launch_json ? strlen(launch_json) : 0;
    if (!len || launch_json[len - 1] != '}') {
        free(launch_json);
        return NULL;
    }
    kf_strbuf b = {0};
    kf_strbuf_printf(&b, "%.*s,\"ints\":[", (int)(len - 1), launch_json);
    for (int i = 0; i < n; i++) kf_strbuf_printf(&b, "%s\"%s\"", i ? "," : "", ints[i]);
    kf_strbuf_printf(&b, "]}");
    free(launch_json);
    return kf_strbuf_take(&b);
}

char *kf_template_launch_add_grid_from(char *launch_json, int i, unsigned per, unsigned mul)
{
    size_t len = launch_json ? strlen(launch_json) : 0;
    if (!len || launch_json[len - 1] != '}') {
        free(launch_json);
        return NULL;
    }
    kf_strbuf b = {0};
    kf_strbuf_printf(&b, "%.*s,\"grid_from\":[%d,%u,%u]}", (int)(len - 1), launch_json, i, per,
                     mul);
    free(launch_json);
    return kf_strbuf_take(&b);
}

kf_status kf_template_rows_arg(const kf_template *t, kf_status st, const char *rows_int,
                               unsigned grid_per, unsigned grid_mul, char **source,
                               char **launch_json, char *err, size_t errcap)
{
    if (st != KF_OK) return st;
    const char *ints[] = {rows_int};
    *launch_json = kf_template_launch_add_ints(*launch_json, ints, 1);
    if (*launch_json && grid_per)
        *launch_json = kf_template_launch_add_grid_from(*launch_json, 0, grid_per, grid_mul);
    if (*launch_json) return KF_OK;
    free(*source);
    *source = NULL;
    snprintf(err, errcap, "%s: out of memory", t->name);
    return KF_ERR_NOMEM;
}

char *kf_template_row_family(const kf_job_sig *sig, int n_args, int64_t max_rows)
{
    const kf_job_tensor *x = &sig->in[0];
    if (x->ndim < 2) return NULL; /* a 1-d tensor is one row: nothing to free */
    kf_strbuf b = {0};
    kf_strbuf_printf(&b, "{\"tensors\":[");
    for (int i = 0; i < n_args; i++) kf_strbuf_printf(&b, "%s%d", i ? "," : "", i);
    kf_strbuf_printf(&b, "],\"free_dims\":[");
    for (int d = 0; d + 1 < x->ndim; d++) kf_strbuf_printf(&b, "%s%d", d ? "," : "", d);
    kf_strbuf_printf(&b, "],\"min\":1,\"max\":%lld,\"multiple_of\":1}", (long long)max_rows);
    return kf_strbuf_take(&b);
}

char *kf_template_lead_family(const kf_job_sig *sig, int lead, int64_t max_rows)
{
    const kf_job_tensor *x = &sig->in[0];
    if (lead < 1 || lead >= x->ndim) return NULL;
    int list[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS], n = 0;
    for (int a = 0; a < sig->n_in + sig->n_out; a++) {
        const kf_job_tensor *t = a < sig->n_in ? &sig->in[a] : &sig->out[a - sig->n_in];
        if (a >= sig->n_in && sig->out_alias[a - sig->n_in]) return NULL;
        if (t->ndim != x->ndim) {
            if (a >= sig->n_in) return NULL; /* an output that is not row-shaped */
            continue;                        /* a parameter of the normalized dims */
        }
        if (!kf_job_tensor_contiguous(t)) return NULL;
        for (int d = 0; d < lead; d++)
            if (t->sizes[d] != x->sizes[d]) return NULL;
        list[n++] = a;
    }
    kf_strbuf b = {0};
    kf_strbuf_printf(&b, "{\"tensors\":[");
    for (int i = 0; i < n; i++) kf_strbuf_printf(&b, "%s%d", i ? "," : "", list[i]);
    kf_strbuf_printf(&b, "],\"free_dims\":[");
    for (int d = 0; d < lead; d++) kf_strbuf_printf(&b, "%s%d", d ? "," : "", d);
    kf_strbuf_printf(&b, "],\"min\":1,\"max\":%lld,\"multiple_of\":1}", (long long)max_rows);
    return kf_strbuf_take(&b);
}

void kf_template_host_prologue(kf_strbuf *b, const kf_template *t, const kf_job_sig *sig,
                               const int *vals)
{
    kf_strbuf_printf(b, "/* Kernel Forge builtin template %s for %.64s; knobs:", t->name, sig->op);
    for (int k = 0; k < t->n_knobs; k++) kf_strbuf_printf(b, " %s=%d", t->knobs[k].name, vals[k]);
    kf_strbuf_printf(b, " */\n#include <math.h>\n#include <stdint.h>\n\n");
    for (int k = 0; k < t->n_knobs; k++) {
        char up[64];
        size_t i = 0;
        for (; t->knobs[k].name[i] && i + 1 < sizeof up; i++) {
            char c = t->knobs[k].name[i];
            up[i] = (char)(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
        }
        up[i] = 0;
        kf_strbuf_printf(b, "#define KF_%s %d\n", up, vals[k]);
    }
}

int kf_template_tensor_args(const kf_job_sig *sig, const char *const *names, const int *optional,
                            int n, int *idx)
{
    int k = 0;
    for (int a = 0; a < n; a++) {
        const kf_job_scalar *s = kf_job_scalar_find(sig, names[a]);
        int none = s && s->kind == 'n';
        if (none && !optional[a]) return -1;
        if (!none && s) return -1; /* a tensor argument must not also be a scalar */
        idx[a] = none ? -1 : k++;
    }
    return k == sig->n_in ? 0 : -1;
}

kf_status kf_template_render_begin(const kf_template *t, const kf_job_sig *sig, const int *knob_idx,
                                   int *vals, char **source, char **launch_json, char *err,
                                   size_t errcap)
{
    if (source) *source = NULL;
    if (launch_json) *launch_json = NULL;
    if (!sig || !source || !launch_json) {
        if (err && errcap) snprintf(err, errcap, "%s: missing argument", t->name);
        return KF_ERR_INVALID;
    }
    if (!t->applies(sig)) {
        if (err && errcap)
            snprintf(err, errcap, "%s: does not apply to this %.64s signature", t->name, sig->op);
        return KF_ERR_UNSUPPORTED;
    }
    return kf_template_knob_values(t, knob_idx, vals, err, errcap);
}

kf_status kf_template_host_finish(const kf_template *t, kf_strbuf *b, const char *const *arg_types,
                                  int n, char **source, char **launch_json, char *err,
                                  size_t errcap)
{
    *source = kf_strbuf_take(b);
    *launch_json = kf_template_host_launch_json(arg_types, n);
    if (*source && *launch_json) return KF_OK;
    free(*source);
    free(*launch_json);
    *source = *launch_json = NULL;
    if (err && errcap) snprintf(err, errcap, "%s: out of memory", t->name);
    return KF_ERR_NOMEM;
}

