/* Candidates under verification (kernel_forge.add_kernel runs them in a child process) and the
 * cache as seen from Python: compile + serve a candidate, insert it, list entries. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "compile/source_check.h"
#include "plugin/cachelink.h"
#include "plugin/chainserve.h"
#include "plugin/runtime.h"
#include "plugin/family.h"
#include "plugin/served.h"

static char *hex_of(const uint8_t *b, uint32_t n)
{
    char *h = malloc(2u * n + 1);
    if (!h) return NULL;
    for (uint32_t i = 0; i < n; i++) sprintf(h + 2 * i, "%02x", b[i]);
    h[2u * n] = 0;
    return h;
}

static void format_sig(kf_runtime *rt, const kf_slot *s, char *out, size_t cap)
{
    char op[KF_OP_NAME_MAX];
    kf_sig_op_name(s->key, s->len, op, sizeof op);
    const char *names[KF_MAX_ARGNAMES];
    int n = 0;
    pthread_mutex_lock(&rt->lock);
    const kf_op_info *info = kf_runtime_find_op(rt, op);
    if (info)
        for (n = 0; n < info->n_args; n++) names[n] = info->argnames[n];
    if (kf_sig_format(s->key, s->len, names, n, out, cap) != KF_OK) snprintf(out, cap, "%s(?)", op);
    pthread_mutex_unlock(&rt->lock);
}

/* Why a slot's signature is never served, naming the argument (kf_sig_unservable_reason). */
static void unservable_why(kf_runtime *rt, const kf_slot *s, char *out, size_t cap)
{
    char op[KF_OP_NAME_MAX];
    kf_sig_op_name(s->key, s->len, op, sizeof op);
    const char *names[KF_MAX_ARGNAMES];
    int n = 0;
    pthread_mutex_lock(&rt->lock);
    const kf_op_info *info = kf_runtime_find_op(rt, op);
    if (info)
        for (n = 0; n < info->n_args; n++) names[n] = info->argnames[n];
    if (kf_sig_unservable_reason(s->key, s->len, s->device_type, s->device_index, names, n, out,
                                 cap) || !out[0])
        snprintf(out, cap, "an argument a kernel cannot take");
    pthread_mutex_unlock(&rt->lock);
}

static char *info_json(kf_runtime *rt, kf_slot *s);

char *kf_signature_info_json(kf_runtime *rt, uint64_t key)
{
    if (!rt) return NULL;
    kf_slot *s = kf_runtime_seen_slot(rt, key);
    if (!s) return NULL;
    char *out = info_json(rt, s);
    kf_slot_unpin(s);
    return out;
}

static char *info_json(kf_runtime *rt, kf_slot *s)
{
    char op[KF_OP_NAME_MAX], text[1024];
    kf_sig_op_name(s->key, s->len, op, sizeof op);
    format_sig(rt, s, text, sizeof text);
    const kf_out_layout *outs = atomic_load(&s->outs);
    char *hex = hex_of(s->key, s->len);
    char *outs_json = outs && outs->n > 0 ? kf_layout_to_json(outs) : NULL;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "op", op);
    cJSON_AddStringToObject(doc, "signature", text);
    cJSON_AddStringToObject(doc, "sig_hex", hex ? hex : "");
    cJSON_AddStringToObject(doc, "device", kf_device_type_name(s->device_type));
    cJSON_AddNumberToObject(doc, "device_index", s->device_index);
    cJSON_AddStringToObject(doc, "torch_version", rt->torch_version); /* part of cache keys */
    cJSON_AddBoolToObject(doc, "servable", !(s->flags & (KF_SIG_TRUNCATED | KF_SIG_UNSERVABLE)));
    if (s->flags & (KF_SIG_TRUNCATED | KF_SIG_UNSERVABLE)) {
        char why[256];
        unservable_why(rt, s, why, sizeof why);
        cJSON_AddStringToObject(doc, "unservable_reason", why);
    }
    if (outs_json) cJSON_AddItemToObject(doc, "outputs", cJSON_Parse(outs_json));
    else cJSON_AddNullToObject(doc, "outputs");
    char *out = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    free(hex);
    free(outs_json);
    return out;
}

static kf_status candidate_register(kf_runtime *rt, kf_slot *s, uint64_t key, const char *backend,
                                    const char *source, const char *launch_json, char **log);

/* The key an entry serving this signature has in the cache (the fleet cache asks for it by
 * that key): computed as attach_entry does, from this process's compiler, arch and versions. */
kf_status kf_signature_cache_key(kf_runtime *rt, uint64_t key, const char *backend, char *key_out)
{
    if (!rt || !key_out) return KF_ERR_INVALID;
    key_out[0] = 0;
    kf_slot *s = kf_runtime_seen_slot(rt, key);
    if (!s) return KF_ERR_NOT_FOUND;
    if (!backend || !*backend) backend = s->device_type == KF_DEV_CUDA ? "nvrtc" : "host";
    const char *toolchain = NULL;
    kf_compiler_i *cc = kf_cachelink_compiler(rt, backend, &toolchain);
    char arch[128] = "";
    kf_status st = KF_ERR_UNSUPPORTED;
    if (!cc) goto unpin;
    if (cc->arch(cc->self, s->device_index, arch, sizeof arch) != KF_OK) {
        kf_runtime_set_error(rt, "%s: cannot tell the target architecture", backend);
        goto unpin;
    }
    kf_key_inputs in = {s->key, s->len, backend, arch, toolchain, rt->torch_version,
                        KF_VERSION_STRING, KF_CONTRACT_VERSION};
    kf_cache_key_hex(kf_cache_key_compute(&in), key_out);
    st = KF_OK;
unpin:
    kf_slot_unpin(s);
    return st;
}

kf_status kf_candidate_register(kf_runtime *rt, uint64_t key, const char *backend, const char *source,
                                const char *launch_json, char **log)
{
    *log = NULL;
    if (!rt || !backend || !source || !launch_json) return KF_ERR_INVALID;
    kf_slot *s = kf_runtime_seen_slot(rt, key);
    if (!s) return KF_ERR_NOT_FOUND;
    kf_status st = candidate_register(rt, s, key, backend, source, launch_json, log);
    kf_slot_unpin(s); /* pinned through the compile: the slot stays this signature's */
    return st;
}

static kf_status candidate_register(kf_runtime *rt, kf_slot *s, uint64_t key, const char *backend,
                                    const char *source, const char *launch_json, char **log)
{
    if (s->flags & (KF_SIG_TRUNCATED | KF_SIG_UNSERVABLE)) {
        char why[256];
        unservable_why(rt, s, why, sizeof why);
        kf_runtime_set_error(rt, "signature %016" PRIx64 " is not servable: %s", key, why);
        return KF_ERR_UNSUPPORTED;
    }
    const kf_out_layout *outs = atomic_load(&s->outs);
    if (!outs || outs->n <= 0) {
        kf_runtime_set_error(rt, "signature %016" PRIx64 " has outputs a kernel cannot produce", key);
        return KF_ERR_UNSUPPORTED;
    }
    kf_launch launch;
    char err[512];
    if (!kf_source_check_backend(source, backend, err, sizeof err)) {
        kf_runtime_set_error(rt, "%s", err); /* the host compiler checks again after cc -E */
        return KF_ERR_INVALID;
    }
    kf_status st = kf_launch_parse(launch_json, &launch, err, sizeof err);
    if (st != KF_OK) {
        kf_runtime_set_error(rt, "launch record: %s", err);
        return st;
    }
    const char *toolchain;
    kf_compiler_i *cc = kf_cachelink_compiler(rt, backend, &toolchain);
    if (!cc) return KF_ERR_UNSUPPORTED;
    char arch[128];
    st = cc->arch(cc->self, s->device_index, arch, sizeof arch);
    if (st != KF_OK) {
        kf_runtime_set_error(rt, "%s: cannot tell the target architecture", backend);
        return st;
    }
    void *blob = NULL;
    size_t blob_len = 0;
    st = cc->compile(cc->self, source, &launch, arch, &blob, &blob_len, log);
    if (st != KF_OK) {
        kf_runtime_set_error(rt, "%s compile failed%s%.400s", backend, *log ? ": " : "", *log ? *log : "");
        free(blob);
        return st;
    }
    kf_kernel *k = kf_served_kernel(rt, cc, &launch, blob, blob_len);
    if (!k) return KF_ERR_NOMEM;
    atomic_store(&k->checked, 1); /* the caller verifies it, with poisoned outputs */
    k->unguarded = 1;             /* ...and times it against eager: the speed guard leaves it */
    kf_cachelink_set_kernel(rt, s, k);
    return KF_OK;
}

static double meta_num(const cJSON *m, const char *name, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, name);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : dflt;
}

static char *meta_str(const cJSON *m, const char *name, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, name);
    return strdup(cJSON_IsString(v) ? v->valuestring : dflt);
}

static kf_status candidate_insert(kf_runtime *rt, kf_slot *s, uint64_t key, const char *meta_json,
                                  char *key_out);

kf_status kf_candidate_insert(kf_runtime *rt, uint64_t key, const char *meta_json, char *key_out)
{
    key_out[0] = 0;
    if (!rt || !meta_json) return KF_ERR_INVALID;
    kf_slot *s = kf_runtime_seen_slot(rt, key);
    if (!s) return KF_ERR_NOT_FOUND;
    kf_status st = candidate_insert(rt, s, key, meta_json, key_out);
    kf_slot_unpin(s);
    return st;
}

static kf_status candidate_insert(kf_runtime *rt, kf_slot *s, uint64_t key, const char *meta_json,
                                  char *key_out)
{
    kf_kernel *k = atomic_load(&s->kernel);
    if (!k || !k->served) {
        kf_runtime_set_error(rt, "no candidate is registered for %016" PRIx64, key);
        return KF_ERR_NOT_FOUND;
    }
    cJSON *meta = cJSON_Parse(meta_json);
    if (!cJSON_IsObject(meta)) {
        cJSON_Delete(meta);
        kf_runtime_set_error(rt, "candidate metadata is not a JSON object");
        return KF_ERR_INVALID;
    }
    kf_status st = KF_ERR_NOMEM;
    kf_cache *rw = NULL;
    const char *backend = k->served ? kf_served_backend(k->served) : "";
    const char *toolchain = NULL;
    kf_compiler_i *cc = kf_cachelink_compiler(rt, backend, &toolchain);
    char arch[128] = "", text[1024], op[KF_OP_NAME_MAX];
    if (!cc || cc->arch(cc->self, s->device_index, arch, sizeof arch) != KF_OK) {
        st = KF_ERR_UNSUPPORTED;
        goto out;
    }
    format_sig(rt, s, text, sizeof text);
    kf_sig_op_name(s->key, s->len, op, sizeof op);
    kf_cache_entry e = {0};
    e.format = KF_CACHE_FORMAT;
    e.contract_version = KF_CONTRACT_VERSION;
    e.op = strdup(op);
    e.signature = strdup(text);
    e.sig = s->key;
    e.sig_len = s->len;
    e.backend = strdup(backend);
    e.arch = strdup(arch);
    e.toolchain = strdup(toolchain);
    e.torch_version = strdup(rt->torch_version);
    e.plugin_version = strdup(KF_VERSION_STRING);
    e.source = meta_str(meta, "source", "");
    e.launch = meta_str(meta, "launch", "");
    e.compile_options = meta_str(meta, "compile_options", toolchain);
    e.outputs = kf_layout_to_json(atomic_load(&s->outs));
    e.max_abs_err = meta_num(meta, "max_abs_err", 0);
    e.max_rel_err = meta_num(meta, "max_rel_err", 0);
    e.atol = meta_num(meta, "atol", 0);
    e.rtol = meta_num(meta, "rtol", 0);
    e.eager_us = meta_num(meta, "eager_us", 0);
    e.kernel_us = meta_num(meta, "kernel_us", 0);
    e.proposer = meta_str(meta, "proposer", "hand-written");
    e.job = meta_str(meta, "job", "");
    e.disabled_reason = strdup("");
    e.created = (double)time(NULL);
    if (!e.op || !e.signature || !e.backend || !e.arch || !e.toolchain || !e.torch_version ||
        !e.plugin_version || !e.source || !e.launch || !e.compile_options || !e.outputs ||
        !e.proposer || !e.job || !e.disabled_reason)
        goto free_entry;
    size_t blob_len;
    const void *blob = kf_served_blob(k->served, &blob_len);
    st = kf_cache_open(&rw, rt->cfg.cache_dir, 0);
    if (st == KF_OK) st = kf_cache_insert(rw, &e, blob, blob_len, key_out);
    if (st != KF_OK)
        kf_runtime_set_error(rt, "cache %s: %s", rt->cfg.cache_dir, kf_cache_errmsg(rw));
free_entry:
    e.sig = NULL; /* borrowed from the slot */
    free(e.op), free(e.signature), free(e.backend), free(e.arch), free(e.toolchain);
    free(e.torch_version), free(e.plugin_version), free(e.source), free(e.launch);
    free(e.compile_options), free(e.outputs), free(e.proposer), free(e.job), free(e.disabled_reason);
out:
    kf_cache_free(rw);
    cJSON_Delete(meta);
    return st;
}

static void add_entries(cJSON *arr, kf_runtime *rt, kf_cache *c, const char *origin)
{
    kf_cache_entry **es = NULL;
    int n = 0;
    if (!c || kf_cache_list(c, &es, &n) != KF_OK) return;
    for (int i = 0; i < n; i++) {
        const kf_cache_entry *e = es[i];
        kf_slot *s = kf_sigtable_find_hash(rt->sigs, kf_sig_hash(e->sig, e->sig_len));
        kf_kernel *k = s ? atomic_load(&s->kernel) : NULL; /* kernels are never freed */
        kf_slot_unpin(s);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "key", e->key_hex);
        cJSON_AddStringToObject(o, "op", e->op);
        cJSON_AddStringToObject(o, "signature", e->signature);
        cJSON_AddStringToObject(o, "backend", e->backend);
        cJSON_AddStringToObject(o, "arch", e->arch);
        cJSON_AddNumberToObject(o, "eager_us", e->eager_us);
        cJSON_AddNumberToObject(o, "kernel_us", e->kernel_us);
        cJSON_AddNumberToObject(o, "speedup", e->kernel_us > 0 ? e->eager_us / e->kernel_us : 0);
        cJSON_AddNumberToObject(o, "max_abs_err", e->max_abs_err);
        cJSON_AddNumberToObject(o, "atol", e->atol);
        cJSON_AddNumberToObject(o, "rtol", e->rtol);
        cJSON_AddStringToObject(o, "proposer", e->proposer);
        cJSON_AddBoolToObject(o, "disabled", e->disabled);
        cJSON_AddStringToObject(o, "disabled_reason", e->disabled_reason ? e->disabled_reason : "");
        cJSON_AddStringToObject(o, "origin", origin);
        /* a chain's kernel is attached to its chain, not to a signature's slot */
        cJSON_AddBoolToObject(o, "served_here", e->chain ? kf_chainserve_attached(rt, e->key_hex)
                                                              : k && !strcmp(k->cache_key, e->key_hex));
        cJSON_AddBoolToObject(o, "elsewhere", kf_cachelink_elsewhere(rt, e->key_hex));
        /* its shape family as this process accepted it ("" when it has none or it was refused) */
        const kf_family *f = atomic_load(&rt->families);
        while (f && strcmp(f->key_hex, e->key_hex)) f = f->next;
        cJSON_AddStringToObject(o, "family", f ? f->text : "");
        cJSON_AddBoolToObject(o, "family_record", e->family != NULL);
        cJSON_AddItemToArray(arr, o);
    }
    kf_cache_entries_free(es, n);
}

char *kf_cache_entries_json(kf_runtime *rt)
{
    if (!rt) return NULL;
    cJSON *arr = cJSON_CreateArray();
    pthread_mutex_lock(&rt->cache_lock);
    add_entries(arr, rt, rt->cache, rt->cfg.cache_dir);
    add_entries(arr, rt, rt->bundle, rt->cfg.bundle);
    pthread_mutex_unlock(&rt->cache_lock);
    char *out = cJSON_PrintUnformatted(arr);
    cJSON_Delete(arr);
    return out;
}
