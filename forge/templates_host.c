/* The builtin template table and the helpers the templates share (template.h). The host
 * templates themselves live in templates_host_softmax.c, templates_host_norm.c and
 * templates_host_eltwise.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template.h"

extern const kf_template kf_tmpl_host_row_softmax;
extern const kf_template kf_tmpl_host_layer_norm;
extern const kf_template kf_tmpl_host_eltwise_unary;
extern const kf_template kf_tmpl_host_eltwise_binary;

const kf_template *const kf_builtin_templates[] = {
    &kf_tmpl_host_row_softmax,
    &kf_tmpl_host_layer_norm,
    &kf_tmpl_host_eltwise_unary,
    &kf_tmpl_host_eltwise_binary,
    NULL,
};

const kf_job_scalar *kf_job_scalar_find(const kf_job_sig *sig, const char *name)
{
    if (!sig || !name) return NULL;
    int n = sig->n_scalars < KF_JOB_MAX_SCALARS ? sig->n_scalars : KF_JOB_MAX_SCALARS;
    for (int i = 0; i < n; i++)
        if (!strncmp(sig->scalars[i].name, name, sizeof sig->scalars[i].name))
            return &sig->scalars[i];
    return NULL;
}

int64_t kf_job_tensor_numel(const kf_job_tensor *t)
{
    if (t->ndim < 0 || t->ndim > KF_MAX_DIMS) return -1;
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] < 0) return -1;
        if (t->sizes[d] && n > INT64_MAX / t->sizes[d]) return -1;
        n *= t->sizes[d];
    }
    return n;
}

int kf_job_tensor_contiguous(const kf_job_tensor *t)
{
    if (t->ndim < 0 || t->ndim > KF_MAX_DIMS || kf_job_tensor_numel(t) < 0) return 0;
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->sizes[d] != 1 && t->strides[d] != expect) return 0;
        expect *= t->sizes[d];
    }
    return 1;
}

int kf_job_tensor_same_shape(const kf_job_tensor *a, const kf_job_tensor *b)
{
    if (a->ndim != b->ndim || a->ndim < 0 || a->ndim > KF_MAX_DIMS) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] != b->sizes[d]) return 0;
    return 1;
}

int kf_job_tensor_dense_f32(const kf_job_tensor *t)
{
    return t->dtype == KF_F32 && kf_job_tensor_contiguous(t) && kf_job_tensor_numel(t) > 0;
}

void kf_strbuf_printf(kf_strbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->p && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

char *kf_strbuf_take(kf_strbuf *b)
{
    char *p = b->oom ? NULL : b->p;
    if (b->oom) free(b->p);
    memset(b, 0, sizeof *b);
    return p;
}

void kf_strbuf_free(kf_strbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

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
