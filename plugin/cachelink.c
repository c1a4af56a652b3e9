#include "plugin/cachelink.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"
#include "plugin/chainserve.h"
#include "plugin/family.h"
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

static int find_attached(const kf_runtime *rt, const char *key)
{
    for (int i = 0; i < rt->n_attached; i++)
        if (!strcmp(rt->attached[i].key, key)) return i;
    return -1;
}

/* Decided already: the same key with the same blob, or one from the bundle (a folder entry of
 * the same key does not replace it). A folder entry whose blob changed was replaced. */
static int is_attached(const kf_runtime *rt, const char *key, const char *blob_hash, int bundle)
{
    int i = find_attached(rt, key);
    return i >= 0 && (rt->attached[i].bundle || bundle || !strcmp(rt->attached[i].blob, blob_hash));
}

static void mark_attached(kf_runtime *rt, const char *key, const char *blob_hash, int bundle)
{
    int i = find_attached(rt, key);
    if (i < 0 && rt->n_attached == rt->cap_attached) {
        int cap = rt->cap_attached ? 2 * rt->cap_attached : 64;
        void *p = realloc(rt->attached, (size_t)cap * sizeof *rt->attached);
        if (!p) return; /* worst case it is looked at again on the next reload */
        rt->attached = p;
        rt->cap_attached = cap;
    }
    if (i < 0) i = rt->n_attached++;
    struct kf_attached *a = &rt->attached[i];
    snprintf(a->key, sizeof a->key, "%s", key);
    snprintf(a->blob, sizeof a->blob, "%s", blob_hash);
    a->bundle = bundle;
    a->elsewhere = 0;
}

void kf_cachelink_mark_attached(kf_runtime *rt, const char *key, const char *blob_hash)
{
    pthread_mutex_lock(&rt->cache_lock);
    if (!is_attached(rt, key, blob_hash, 0)) mark_attached(rt, key, blob_hash, 0);
    pthread_mutex_unlock(&rt->cache_lock);
}

/* Not decided after all (the folder was locked, or no slot was free): looked at again later;
 * a replacement gets its old record back, so that it still counts as replaced. */
static void unmark_attached(kf_runtime *rt, const char *key, const struct kf_attached *old)
{
    int i = find_attached(rt, key);
    if (i >= 0 && old) rt->attached[i] = *old;
    else if (i >= 0) rt->attached[i] = rt->attached[--rt->n_attached];
    rt->reload_retry = 1;
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
    kf_slot_unpin(s);
    kf_family_disable(rt, e->key_hex); /* and every shape its family served */
    kf_chainserve_disable(rt, e->key_hex, e->disabled_reason);
}

enum { ATTACH_DONE = 1, ATTACH_LATER = 0, ATTACH_BUSY = 2 };

/* Under cache_lock. Attach one entry if it was built for exactly this environment. */
static int attach_entry(kf_runtime *rt, kf_cache *from, const kf_cache_entry *e, int allow_cuda)
{
    if (e->disabled) {
        detach_disabled(rt, e);
        return ATTACH_DONE;
    }
    const int bundle = from == rt->bundle;
    if (is_attached(rt, e->key_hex, e->blob_hash, bundle)) return ATTACH_DONE;
    int was = find_attached(rt, e->key_hex);
    struct kf_attached old_rec, *old = was >= 0 ? &old_rec : NULL; /* a replaced entry */
    if (old) old_rec = rt->attached[was];
    int bi = backend_index(e->backend);
    if (bi < 0) {
        KF_WARN("cache entry %s: unknown backend '%s'; skipped", e->key_hex, e->backend);
        mark_attached(rt, e->key_hex, e->blob_hash, bundle);
        return ATTACH_DONE;
    }
    if (bi == 1 && !allow_cuda) return ATTACH_LATER; /* no CUDA call yet: do not touch the driver */
    /* attached or refused: decided once per entry's blob */
    mark_attached(rt, e->key_hex, e->blob_hash, bundle);
    const char *toolchain = NULL;
    kf_compiler_i *cc = compiler_locked(rt, e->backend, &toolchain);
    if (!cc) return ATTACH_DONE;
    int dtype, didx;
    char arch[128];
    /* a chain's sig is its canonical bytes: the device is its head member's */
    if ((e->chain ? kf_chainserve_device(e->chain, &dtype, &didx)
                  : kf_sig_device_of(e->sig, e->sig_len, &dtype, &didx)) != KF_OK ||
        cc->arch(cc->self, didx, arch, sizeof arch) != KF_OK)
        return ATTACH_DONE;
    kf_key_inputs in = {e->sig, e->sig_len, e->backend, arch, toolchain, rt->torch_version,
                        KF_VERSION_STRING, KF_CONTRACT_VERSION};
    kf_cache_key key = kf_cache_key_compute(&in);
    if (key.hi != e->key.hi || key.lo != e->key.lo) {
        KF_DEBUG("cache entry %s (%s) was built for another environment (arch, compiler, torch or "
                 "plugin version); not used", e->key_hex, e->signature);
        int i = find_attached(rt, e->key_hex);
        if (i >= 0) rt->attached[i].elsewhere = 1;
        return ATTACH_DONE;
    }
    kf_launch launch;
    kf_out_layout outs;
    char err[256];
    if (kf_launch_parse(e->launch, &launch, err, sizeof err) != KF_OK ||
        (!e->chain && kf_layout_from_json(e->outputs, &outs) != KF_OK)) {
        KF_WARN("cache entry %s: bad launch record or outputs; skipped", e->key_hex);
        return ATTACH_DONE;
    }
    void *blob = NULL;
    size_t blob_len = 0;
    kf_status rs = KF_OK;
    if (bi == 0 && bundle) {
        /* a bundle's shared object is never loaded as shipped: built here from its source */
        char why[1024];
        if (kf_rebuild_host_blob(cc, e, &blob, &blob_len, why, sizeof why) != KF_OK) {
            KF_WARN("bundle entry %s (%s): %s; not served", e->key_hex, e->signature, why);
            return ATTACH_DONE;
        }
    } else {
        rs = kf_cache_read_blob(from, e, &blob, &blob_len);
    }
    if (rs == KF_ERR_BUSY) {
        unmark_attached(rt, e->key_hex, old);
        return ATTACH_BUSY;
    }
    if (rs != KF_OK) {
        KF_WARN("cache entry %s: %s; skipped", e->key_hex, kf_cache_errmsg(from));
        return ATTACH_DONE;
    }
    if (e->chain) { /* attached to its head signature (plugin/chainserve.h), checked on first use */
        kf_kernel *ck = kf_served_kernel(rt, cc, &launch, blob, blob_len);
        if (ck && kf_chainserve_add(rt, e->chain, e->outputs, e->sig, e->sig_len, ck, e->atol, e->rtol,
                                    e->key_hex, err, sizeof err) != KF_OK)
            KF_WARN("cache entry %s (%s): %s; not served", e->key_hex, e->signature, err);
        return ATTACH_DONE;
    }
    kf_slot *slot = kf_sigtable_get(rt->sigs, kf_sig_hash(e->sig, e->sig_len), e->sig, e->sig_len, 0,
                                    dtype, didx);
    const kf_out_layout *seen = slot ? atomic_load(&slot->outs) : NULL;
    if (!slot) { /* every slot of its set is in use right now */
        unmark_attached(rt, e->key_hex, old);
        free(blob);
        return ATTACH_DONE;
    }
    if (seen && memcmp(seen, &outs, sizeof outs) != 0) {
        KF_WARN("cache entry %s (%s): its outputs differ from what eager produced in this "
                "process; not served", e->key_hex, e->signature);
        kf_slot_unpin(slot);
        free(blob);
        return ATTACH_DONE;
    }
    kf_kernel *k = kf_served_kernel(rt, cc, &launch, blob, blob_len);
    if (!k) {
        kf_slot_unpin(slot);
        return ATTACH_DONE;
    }
    k->atol = e->atol;
    k->rtol = e->rtol;
    atomic_store(&k->checked, rt->cfg.validate == KF_VALIDATE_OFF);
    snprintf(k->cache_key, sizeof k->cache_key, "%s", e->key_hex);
    kf_slot_set_outs(slot, &outs);
    if (old) kf_family_disable(rt, e->key_hex); /* the replaced entry's shapes look again */
    kf_cachelink_set_kernel(rt, slot, k); /* k->checked: its own first-use check */
    kf_slot_unpin(slot); /* a slot with a kernel is never recycled */
    if (e->family) kf_family_add(rt, e, k->served, &launch, &outs);
    KF_INFO("serving %s from the cache (%s, %s%s)", e->signature, e->backend, e->key_hex,
            old ? ", replacing the entry served before" : "");
    return ATTACH_DONE;
}

/* Already waiting for a CUDA call (a reload that is retried lists it again). */
static int is_pending(kf_runtime *rt, const kf_cache_entry *e)
{
    for (int i = 0; i < rt->n_pending; i++)
        if (!strcmp(rt->pending[i]->key_hex, e->key_hex)) return 1;
    return 0;
}

static void want_op(const kf_config *cfg, const char *op, unsigned char *wanted)
{
    for (int i = 0; op && i < cfg->n_ops; i++)
        if (!strcmp(cfg->ops[i], op)) wanted[i] = 1;
}

/* Under cache_lock: the ops of the intercept list an entry is for (a chain's: its members'). */
static void note_entry_ops(kf_runtime *rt, const kf_cache_entry *e)
{
    if (e->disabled) return;
    want_op(&rt->cfg, e->op, rt->entry_ops);
    cJSON *chain = e->chain ? cJSON_Parse(e->chain) : NULL;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(chain, "members")) {
        const char *op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "op"));
        want_op(&rt->cfg, op, rt->entry_ops);
    }
    cJSON_Delete(chain);
}

/* Under cache_lock: entry_ops for the dispatch path, which reads them without the lock. */
static void publish_entry_ops(kf_runtime *rt)
{
    for (int i = 0; i < rt->cfg.n_ops && i < KF_MAX_OPS; i++)
        if (rt->entry_ops_unlisted || rt->entry_ops[i])
            atomic_store_explicit(&rt->op_cached[i], 1, memory_order_relaxed);
}

/* Under cache_lock: attach what can be, keep nvrtc entries pending until a CUDA call. */
static void load_from(kf_runtime *rt, kf_cache *c)
{
    kf_cache_entry **entries = NULL;
    int n = 0;
    kf_status st = kf_cache_list(c, &entries, &n);
    const int bit = c == rt->bundle ? 2 : 1;
    if (st == KF_OK) rt->entry_ops_unlisted &= ~bit;
    else rt->entry_ops_unlisted |= bit;
    if (st != KF_OK) publish_entry_ops(rt);
    if (st == KF_ERR_BUSY) {
        KF_DEBUG("kernel cache: %s", kf_cache_errmsg(c));
        rt->reload_retry = 1;
        return;
    }
    if (st != KF_OK) {
        KF_WARN("kernel cache: %s", kf_cache_errmsg(c));
        return;
    }
    int elsewhere = 0;
    for (int i = 0; i < n; i++) {
        note_entry_ops(rt, entries[i]);
        const int was = is_attached(rt, entries[i]->key_hex, entries[i]->blob_hash, c == rt->bundle);
        const int r = attach_entry(rt, c, entries[i], 0);
        int k = was ? -1 : find_attached(rt, entries[i]->key_hex);
        elsewhere += k >= 0 && rt->attached[k].elsewhere;
        if (r == ATTACH_LATER && !is_pending(rt, entries[i])) {
            void *p = realloc(rt->pending, (size_t)(rt->n_pending + 1) * sizeof *rt->pending);
            if (p) {
                rt->pending = p;
                rt->pending[rt->n_pending++] = entries[i];
                entries[i] = NULL;
                atomic_store(&rt->cuda_pending, 1);
            }
        }
    }
    publish_entry_ops(rt);
    /* after a plugin upgrade (or a new compiler) every entry is keyed for the old one: say so */
    if (elsewhere)
        KF_INFO("kernel cache: %d of %d entries in %s were built for another environment (arch, "
                "compiler or its flags, torch or plugin version) and are not used here; "
                "`kforge warmup` tunes them again",
                elsewhere, n, c == rt->bundle ? rt->cfg.bundle : rt->cfg.cache_dir);
    kf_cache_entries_free(entries, n);
}

int kf_cachelink_elsewhere(kf_runtime *rt, const char *key_hex)
{
    int i = find_attached(rt, key_hex);
    return i >= 0 && rt->attached[i].elsewhere;
}

/* Under cache_lock: attach up to `max` pending nvrtc entries. Stops at a held folder lock and
 * clears cuda_pending: the reload thread sets it again at its next tick, so a held lock costs
 * the CUDA calls one try per tick, not one per call. */
static void attach_pending(kf_runtime *rt, int max)
{
    int done = 0, busy = 0;
    for (; done < rt->n_pending && done < max && !busy; done++) {
        kf_cache_entry *e = rt->pending[done], *now = NULL;
        kf_cache *src = rt->cache ? rt->cache : rt->bundle;
        /* the folder's manifest as it is now, since a deeper search may have replaced the entry
         * after it was listed; not in the folder: the bundle's */
        if (rt->cache) {
            kf_status st = kf_cache_get(rt->cache, e->key_hex, &now);
            if (st == KF_ERR_BUSY) {
                busy = 1;
                break;
            }
            if (st != KF_OK && st != KF_ERR_NOT_FOUND)
                KF_WARN("cache entry %s: %s", e->key_hex, kf_cache_errmsg(rt->cache));
            if (st != KF_OK) src = rt->bundle;
        }
        const int r = src ? attach_entry(rt, src, now ? now : e, 1) : ATTACH_DONE;
        kf_cache_entry_free(now);
        if (r == ATTACH_BUSY) {
            busy = 1;
            break;
        }
        kf_cache_entry_free(e);
    }
    rt->n_pending -= done;
    memmove(rt->pending, rt->pending + done, (size_t)rt->n_pending * sizeof *rt->pending);
    if (!rt->n_pending) {
        free(rt->pending);
        rt->pending = NULL;
    }
    atomic_store(&rt->cuda_pending, rt->n_pending > 0 && !busy);
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
        kf_cache_set_nowait(rt->cache, 1); /* never wait for a writer, even a stopped one */
    }
    if (!rt->cache) return;
    uint64_t gen = kf_cache_generation(rt->cache);
    if (!force && !rt->reload_retry && gen == rt->cache_gen) return;
    rt->cache_gen = gen;
    rt->reload_retry = 0;
    load_from(rt, rt->cache); /* sets reload_retry again if the folder was locked */
}

static kf_status try_disable(kf_runtime *rt, const char *key_hex, const char *reason)
{
    kf_cache *rw = NULL;
    kf_status st = kf_cache_open(&rw, rt->cfg.cache_dir, 0);
    kf_cache_set_nowait(rw, 1);
    if (st == KF_OK) st = kf_cache_set_disabled(rw, key_hex, 1, reason);
    if (st == KF_OK)
        KF_INFO("cache entry %s marked disabled", key_hex);
    else if (st != KF_ERR_BUSY)
        KF_WARN("could not mark cache entry %s disabled: %s", key_hex, kf_cache_errmsg(rw));
    kf_cache_free(rw);
    return st;
}

/* Left for the reload thread; 0 when the queue is full. */
static int queue_disable(kf_runtime *rt, const char *key_hex, const char *reason)
{
    pthread_mutex_lock(&rt->lock);
    int n = rt->n_to_disable, ok = n < KF_MAX_TO_DISABLE;
    if (ok) {
        snprintf(rt->to_disable[n].key, sizeof rt->to_disable[n].key, "%s", key_hex);
        snprintf(rt->to_disable[n].reason, sizeof rt->to_disable[n].reason, "%s", reason);
        rt->n_to_disable = n + 1;
    }
    pthread_mutex_unlock(&rt->lock);
    if (!ok)
        KF_WARN("cache entry %s: the cache is locked by another process; not marked disabled "
                "(later processes check it again on first use)", key_hex);
    return ok;
}

void kf_cachelink_disable_entry(kf_runtime *rt, const char *key_hex, const char *reason)
{
    if (try_disable(rt, key_hex, reason) == KF_ERR_BUSY && queue_disable(rt, key_hex, reason))
        KF_INFO("cache entry %s: the cache is locked by another process; it is marked disabled "
                "once the lock is free", key_hex);
}

/* The reload thread's share of kf_cachelink_disable_entry (no lock held while writing). */
static void disable_queued(kf_runtime *rt)
{
    struct kf_disable_req q[KF_MAX_TO_DISABLE];
    pthread_mutex_lock(&rt->lock);
    int n = rt->n_to_disable;
    memcpy(q, rt->to_disable, (size_t)n * sizeof q[0]);
    rt->n_to_disable = 0;
    pthread_mutex_unlock(&rt->lock);
    for (int i = 0; i < n; i++)
        if (try_disable(rt, q[i].key, q[i].reason) == KF_ERR_BUSY)
            queue_disable(rt, q[i].key, q[i].reason);
}

/* The reload thread: looks every KFORGE_RELOAD_MS, or when kf_cachelink_poll wakes it. */
static void *reload_main(void *arg)
{
    kf_runtime *rt = arg;
    pthread_mutex_lock(&rt->reload_mu);
    while (!rt->reload_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t ms = rt->cfg.reload_every_ms > 0 ? (uint64_t)rt->cfg.reload_every_ms : 1000;
        uint64_t ns = (uint64_t)ts.tv_nsec + (ms % 1000) * 1000000u;
        ts.tv_sec += (time_t)(ms / 1000 + ns / 1000000000u);
        ts.tv_nsec = (long)(ns % 1000000000u);
        pthread_cond_timedwait(&rt->reload_cond, &rt->reload_mu, &ts);
        if (rt->reload_stop) break;
        pthread_mutex_unlock(&rt->reload_mu);
        pthread_mutex_lock(&rt->cache_lock);
        reload_locked(rt, 0);
        if (rt->n_pending) atomic_store(&rt->cuda_pending, 1); /* retried by the next CUDA call */
        pthread_mutex_unlock(&rt->cache_lock);
        disable_queued(rt);
        pthread_mutex_lock(&rt->reload_mu);
    }
    pthread_mutex_unlock(&rt->reload_mu);
    return NULL;
}

static void start_reloader(kf_runtime *rt)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&rt->reload_cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&rt->reload_mu, NULL);
    rt->reload_stop = 0;
    if (pthread_create(&rt->reloader, NULL, reload_main, rt) == 0) {
        rt->reloader_on = 1;
        return;
    }
    KF_WARN("could not start the cache reload thread; new cache entries are picked up by "
            "the calls themselves (never waiting for the cache's lock)");
    pthread_cond_destroy(&rt->reload_cond);
    pthread_mutex_destroy(&rt->reload_mu);
}

void kf_cachelink_stop(kf_runtime *rt)
{
    if (!rt->reloader_on) return;
    pthread_mutex_lock(&rt->reload_mu);
    rt->reload_stop = 1;
    pthread_cond_signal(&rt->reload_cond);
    pthread_mutex_unlock(&rt->reload_mu);
    pthread_join(rt->reloader, NULL);
    rt->reloader_on = 0;
    pthread_cond_destroy(&rt->reload_cond);
    pthread_mutex_destroy(&rt->reload_mu);
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
    start_reloader(rt);
}

void kf_cachelink_entry_ops(kf_runtime *rt, unsigned char *wanted)
{
    pthread_mutex_lock(&rt->cache_lock); /* noted by load_from: at init and at every reload */
    for (int i = 0; i < rt->cfg.n_ops; i++)
        if (rt->entry_ops_unlisted || rt->entry_ops[i]) wanted[i] = 1;
    pthread_mutex_unlock(&rt->cache_lock);
}

void kf_cachelink_note_op(kf_runtime *rt, const char *op)
{
    pthread_mutex_lock(&rt->cache_lock);
    want_op(&rt->cfg, op, rt->entry_ops);
    publish_entry_ops(rt);
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

/* Entries attached per CUDA call: a cache of thousands must not stall one call. */
#define KF_ATTACH_PER_CALL 32

void kf_cachelink_attach_cuda(kf_runtime *rt)
{
    if (pthread_mutex_trylock(&rt->cache_lock) != 0) return; /* a later call tries again */
    if (atomic_load(&rt->cuda_pending)) attach_pending(rt, KF_ATTACH_PER_CALL);
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
    if (rt->reloader_on) {
        pthread_cond_signal(&rt->reload_cond); /* no waiting: the thread does the reading */
        return;
    }
    if (pthread_mutex_trylock(&rt->cache_lock) != 0) return;
    reload_locked(rt, 0);
    if (rt->n_pending) atomic_store(&rt->cuda_pending, 1);
    pthread_mutex_unlock(&rt->cache_lock);
    disable_queued(rt);
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
