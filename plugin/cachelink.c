#include "plugin/cachelink.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "plugin/rebuild.h"
#include "plugin/served.h"

static int backend_index(const char *backend)
{
    if (!strcmp(backend, "host")) return 0;
    if (!strcmp(backend, "nvrtc")) return 1;
    return -1;
}

/* Under cache_lock. */
static kf_compiler_i *compiler_locked(kf_runtime *rt, const char *backend, const char **toolchain)
{
    int i = backend_index(backend);
    if (i < 0) {
        kf_runtime_set_error(rt, "unknown backend '%.32s' (host or nvrtc)", backend);
        return NULL;
    }
    if (rt->compiler_state[i] == 0) {
        char err[512] = "";
        kf_status st = i == 0 ? kf_compiler_host_create(&rt->compilers[0], getenv("CC"))
                              : kf_compiler_nvrtc_create(&rt->compilers[1],
                                                         rt->cfg.nvrtc[0] ? rt->cfg.nvrtc : NULL,
                                                         rt->cfg.cuda_include[0] ? rt->cfg.cuda_include : NULL,
                                                         err, sizeof err);
        kf_compiler_i *cc = &rt->compilers[i];
        if (st == KF_OK) st = cc->toolchain(cc->self, rt->toolchain[i], sizeof rt->toolchain[i]);
        if (st == KF_OK) {
            rt->compiler_state[i] = 1;
        } else {
            rt->compiler_state[i] = -1;
            snprintf(rt->toolchain[i], sizeof rt->toolchain[i], "%s backend unavailable: %s",
                     backend, err[0] ? err : kf_status_str(st));
            KF_INFO("%s", rt->toolchain[i]);
        }
    }
    if (rt->compiler_state[i] < 0) {
        kf_runtime_set_error(rt, "%s", rt->toolchain[i]);
        return NULL;
    }
    if (toolchain) *toolchain = rt->toolchain[i];
    return &rt->compilers[i];
}

kf_compiler_i *kf_cachelink_compiler(kf_runtime *rt, const char *backend, const char **toolchain)
{
    pthread_mutex_lock(&rt->cache_lock);
    kf_compiler_i *cc = compiler_locked(rt, backend, toolchain);
    pthread_mutex_unlock(&rt->cache_lock);
    return cc;
}

void kf_cachelink_set_kernel(kf_runtime *rt, kf_slot *slot, kf_kernel *k)
{
    pthread_mutex_lock(&rt->lock);
    if (k) {
        k->retired_next = rt->retired; /* freed with the runtime: a reader may still hold it */
        rt->retired = k;
        /* the speed guard judges this kernel on its own served samples */
        atomic_store(&slot->sv_min_ns, 0);
        atomic_store(&slot->guard_n, 0);
        atomic_store(&slot->stopped, KF_STOP_NONE);
    }
    atomic_store_explicit(&slot->kernel, k, memory_order_release);
    pthread_mutex_unlock(&rt->lock);
}

/* ---- output layouts as JSON ---- */

char *kf_layout_to_json(const kf_out_layout *l)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < l->n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "alias_arg", l->o[i].alias_arg);
        cJSON_AddNumberToObject(o, "dtype", l->o[i].dtype);
        double sizes[KF_MAX_DIMS], strides[KF_MAX_DIMS];
        for (int d = 0; d < l->o[i].ndim; d++) {
            sizes[d] = (double)l->o[i].sizes[d];
            strides[d] = (double)l->o[i].strides[d];
        }
        cJSON_AddItemToObject(o, "sizes", cJSON_CreateDoubleArray(sizes, l->o[i].ndim));
        cJSON_AddItemToObject(o, "strides", cJSON_CreateDoubleArray(strides, l->o[i].ndim));
        cJSON_AddItemToArray(arr, o);
    }
    char *s = arr ? cJSON_PrintUnformatted(arr) : NULL;
    cJSON_Delete(arr);
    return s;
}

static int json_int(const cJSON *o, const char *name, int64_t lo, int64_t hi, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return -1;
    *out = (int64_t)v->valuedouble;
    return 0;
}

kf_status kf_layout_from_json(const char *json, kf_out_layout *l)
{
    memset(l, 0, sizeof *l);
    cJSON *arr = json ? cJSON_Parse(json) : NULL;
    kf_status st = KF_ERR_INVALID;
    int n = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;
    if (n < 1 || n > KF_MAX_OUTS) goto out;
    for (int i = 0; i < n; i++) {
        const cJSON *o = cJSON_GetArrayItem(arr, i);
        int64_t alias, dtype;
        if (!cJSON_IsObject(o) || json_int(o, "alias_arg", -1, 15, &alias) ||
            json_int(o, "dtype", 0, KF_DTYPE_COUNT - 1, &dtype))
            goto out;
        const cJSON *sz = cJSON_GetObjectItemCaseSensitive(o, "sizes");
        const cJSON *sd = cJSON_GetObjectItemCaseSensitive(o, "strides");
        int nd = cJSON_IsArray(sz) ? cJSON_GetArraySize(sz) : -1;
        if (nd < 0 || nd > KF_MAX_DIMS || !cJSON_IsArray(sd) || cJSON_GetArraySize(sd) != nd) goto out;
        for (int d = 0; d < nd; d++) {
            const cJSON *a = cJSON_GetArrayItem(sz, d), *b = cJSON_GetArrayItem(sd, d);
            if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || a->valuedouble < 0 || a->valuedouble > 9e15 ||
                b->valuedouble < 0 || b->valuedouble > 9e15)
                goto out;
            l->o[i].sizes[d] = (int64_t)a->valuedouble;
            l->o[i].strides[d] = (int64_t)b->valuedouble;
        }
        l->o[i].alias_arg = (int)alias;
        l->o[i].dtype = (int)dtype;
        l->o[i].ndim = nd;
    }
    l->n = n;
    st = KF_OK;
out:
    cJSON_Delete(arr);
    return st;
}

/* ---- attaching entries ---- */

static int is_attached(kf_runtime *rt, const char *key)
{
    for (int i = 0; i < rt->n_attached; i++)
        if (!strcmp(rt->attached[i], key)) return 1;
    return 0;
}

static void mark_attached(kf_runtime *rt, const char *key)
{
    if (rt->n_attached == rt->cap_attached) {
        int cap = rt->cap_attached ? 2 * rt->cap_attached : 64;
        void *p = realloc(rt->attached, (size_t)cap * sizeof *rt->attached);
        if (!p) return; /* worst case it is looked at again on the next reload */
        rt->attached = p;
        rt->cap_attached = cap;
    }
    snprintf(rt->attached[rt->n_attached++], KF_KEY_HEX, "%s", key);
}

/* Stop serving an entry another process marked disabled. */
static void detach_disabled(kf_runtime *rt, const kf_cache_entry *e)
{
    kf_slot *s = kf_sigtable_find_hash(rt->sigs, kf_sig_hash(e->sig, e->sig_len));
    kf_kernel *k = s ? atomic_load(&s->kernel) : NULL;
    if (k && !strcmp(k->cache_key, e->key_hex)) {
        atomic_store(&s->kernel, NULL);
        KF_WARN("cache entry %s (%s) was disabled: %s; using eager", e->key_hex, e->signature,
                e->disabled_reason ? e->disabled_reason : "no reason given");
    }
}

enum { ATTACH_DONE = 1, ATTACH_LATER = 0 };

/* Under cache_lock. Attach one entry if it was built for exactly this environment. */
static int attach_entry(kf_runtime *rt, kf_cache *from, const kf_cache_entry *e, int allow_cuda)
{
    if (e->disabled) {
        detach_disabled(rt, e);
        return ATTACH_DONE;
    }
    if (is_attached(rt, e->key_hex)) return ATTACH_DONE;
    int bi = backend_index(e->backend);
    if (bi < 0) {
        KF_WARN("cache entry %s: unknown backend '%s'; skipped", e->key_hex, e->backend);
        mark_attached(rt, e->key_hex);
        return ATTACH_DONE;
    }
    if (bi == 1 && !allow_cuda) return ATTACH_LATER; /* no CUDA call yet: do not touch the driver */
    mark_attached(rt, e->key_hex); /* attached or refused: decided once per process */
    const char *toolchain = NULL;
    kf_compiler_i *cc = compiler_locked(rt, e->backend, &toolchain);
    if (!cc) return ATTACH_DONE;
    int dtype, didx;
    char arch[128];
    if (kf_sig_device_of(e->sig, e->sig_len, &dtype, &didx) != KF_OK ||
        cc->arch(cc->self, didx, arch, sizeof arch) != KF_OK)
        return ATTACH_DONE;
    kf_key_inputs in = {e->sig, e->sig_len, e->backend, arch, toolchain, rt->torch_version,
                        KF_VERSION_STRING, KF_CONTRACT_VERSION};
    kf_cache_key key = kf_cache_key_compute(&in);
    if (key.hi != e->key.hi || key.lo != e->key.lo) {
        KF_DEBUG("cache entry %s (%s) was built for another environment (arch, compiler, torch or "
                 "plugin version); not used", e->key_hex, e->signature);
        return ATTACH_DONE;
    }
    kf_launch launch;
    kf_out_layout outs;
    char err[256];
    if (kf_launch_parse(e->launch, &launch, err, sizeof err) != KF_OK ||
        kf_layout_from_json(e->outputs, &outs) != KF_OK) {
        KF_WARN("cache entry %s: bad launch record or outputs; skipped", e->key_hex);
        return ATTACH_DONE;
    }
    void *blob = NULL;
    size_t blob_len = 0;
    if (bi == 0 && from == rt->bundle) {
        /* a bundle's shared object is never loaded as shipped: built here from its source */
        char why[1024];
        if (kf_rebuild_host_blob(cc, e, &blob, &blob_len, why, sizeof why) != KF_OK) {
            KF_WARN("bundle entry %s (%s): %s; not served", e->key_hex, e->signature, why);
            return ATTACH_DONE;
        }
    } else if (kf_cache_read_blob(from, e, &blob, &blob_len) != KF_OK) {
        KF_WARN("cache entry %s: %s; skipped", e->key_hex, kf_cache_errmsg(from));
        return ATTACH_DONE;
    }
    kf_slot *slot = kf_sigtable_get(rt->sigs, kf_sig_hash(e->sig, e->sig_len), e->sig, e->sig_len, 0,
                                    dtype, didx);
    const kf_out_layout *seen = slot ? atomic_load(&slot->outs) : NULL;
    if (!slot || (seen && memcmp(seen, &outs, sizeof outs) != 0)) {
        KF_WARN("cache entry %s (%s): %s; not served", e->key_hex, e->signature,
                slot ? "its outputs differ from what eager produced in this process" : "table full");
        free(blob);
        return ATTACH_DONE;
    }
    kf_kernel *k = kf_served_kernel(rt, cc, &launch, blob, blob_len);
    if (!k) return ATTACH_DONE;
    k->atol = e->atol;
    k->rtol = e->rtol;
    atomic_store(&k->checked, rt->cfg.validate == KF_VALIDATE_OFF);
    snprintf(k->cache_key, sizeof k->cache_key, "%s", e->key_hex);
    kf_slot_set_outs(slot, &outs);
    kf_cachelink_set_kernel(rt, slot, k);
    KF_INFO("serving %s from the cache (%s, %s)", e->signature, e->backend, e->key_hex);
    return ATTACH_DONE;
}

/* Under cache_lock: attach what can be, keep nvrtc entries pending until a CUDA call. */
static void load_from(kf_runtime *rt, kf_cache *c)
{
    kf_cache_entry **entries = NULL;
    int n = 0;
    if (kf_cache_list(c, &entries, &n) != KF_OK) {
        KF_WARN("kernel cache: %s", kf_cache_errmsg(c));
        return;
    }
    for (int i = 0; i < n; i++) {
        if (attach_entry(rt, c, entries[i], 0) == ATTACH_LATER) {
            void *p = realloc(rt->pending, (size_t)(rt->n_pending + 1) * sizeof *rt->pending);
            if (p) {
                rt->pending = p;
                rt->pending[rt->n_pending++] = entries[i];
                entries[i] = NULL;
                atomic_store(&rt->cuda_pending, 1);
            }
        }
    }
    kf_cache_entries_free(entries, n);
}

static void attach_pending(kf_runtime *rt)
{
    kf_cache *from = rt->cache ? rt->cache : rt->bundle;
    for (int i = 0; i < rt->n_pending; i++) {
        kf_cache *src = from;
        kf_cache_entry *e = rt->pending[i];
        /* a pending entry may come from the bundle: try the folder first, then the bundle */
        if (rt->cache && rt->bundle) {
            kf_cache_entry *probe = NULL;
            if (kf_cache_get(rt->cache, e->key_hex, &probe) != KF_OK) src = rt->bundle;
            kf_cache_entry_free(probe);
        }
        attach_entry(rt, src, e, 1);
        kf_cache_entry_free(e);
    }
    free(rt->pending);
    rt->pending = NULL;
    rt->n_pending = 0;
    atomic_store(&rt->cuda_pending, 0);
}

static int dir_exists(const char *path)
{
    struct stat st;
    return path[0] && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Under cache_lock. */
static void reload_locked(kf_runtime *rt, int force)
{
    char entries[sizeof rt->cfg.cache_dir + 16];
    snprintf(entries, sizeof entries, "%s/entries", rt->cfg.cache_dir);
    /* nothing inserted yet (the folder may hold only jobs/): not an error, just nothing to load */
    if (!rt->cache && dir_exists(entries)) {
        if (kf_cache_open(&rt->cache, rt->cfg.cache_dir, 1) != KF_OK) {
            KF_WARN("kernel cache %s: %s", rt->cfg.cache_dir, kf_cache_errmsg(rt->cache));
            kf_cache_free(rt->cache);
            rt->cache = NULL;
        }
    }
    if (!rt->cache) return;
    uint64_t gen = kf_cache_generation(rt->cache);
    if (!force && gen == rt->cache_gen) return;
    rt->cache_gen = gen;
    load_from(rt, rt->cache);
}

void kf_cachelink_init(kf_runtime *rt)
{
    pthread_mutex_lock(&rt->cache_lock);
    if (rt->cfg.bundle[0]) {
        if (kf_cache_open_bundle(&rt->bundle, rt->cfg.bundle) != KF_OK) {
            KF_WARN("KFORGE_CACHE=%s: %s; not used", rt->cfg.bundle, kf_cache_errmsg(rt->bundle));
            kf_cache_free(rt->bundle);
            rt->bundle = NULL;
        } else {
            load_from(rt, rt->bundle);
        }
    }
    reload_locked(rt, 1);
    atomic_store(&rt->next_check_ns, kf_now_ns() + (uint64_t)rt->cfg.reload_every_ms * 1000000u);
    pthread_mutex_unlock(&rt->cache_lock);
}

void kf_cachelink_free(kf_runtime *rt)
{
    for (int i = 0; i < rt->n_pending; i++) kf_cache_entry_free(rt->pending[i]);
    free(rt->pending);
    free(rt->attached);
    kf_cache_free(rt->cache);
    kf_cache_free(rt->bundle);
    for (int i = 0; i < 2; i++)
        if (rt->compiler_state[i] > 0 && rt->compilers[i].destroy)
            rt->compilers[i].destroy(rt->compilers[i].self);
}

void kf_cachelink_attach_cuda(kf_runtime *rt)
{
    pthread_mutex_lock(&rt->cache_lock);
    if (atomic_load(&rt->cuda_pending)) attach_pending(rt);
    pthread_mutex_unlock(&rt->cache_lock);
}

void kf_cachelink_poll(kf_runtime *rt)
{
    uint64_t due = atomic_load_explicit(&rt->next_check_ns, memory_order_relaxed);
    uint64_t now = kf_now_ns();
    if (now < due) return;
    /* one thread wins the check; the others go on */
    if (!atomic_compare_exchange_strong(&rt->next_check_ns, &due,
                                        now + (uint64_t)rt->cfg.reload_every_ms * 1000000u))
        return;
    if (pthread_mutex_trylock(&rt->cache_lock) != 0) return;
    reload_locked(rt, 0);
    pthread_mutex_unlock(&rt->cache_lock);
}

int kf_reload_cache(kf_runtime *rt)
{
    if (!rt) return -1;
    pthread_mutex_lock(&rt->cache_lock);
    reload_locked(rt, 1);
    int n = rt->n_attached;
    pthread_mutex_unlock(&rt->cache_lock);
    return n;
}
