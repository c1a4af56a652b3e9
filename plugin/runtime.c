#include "plugin/runtime.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "plugin/cachelink.h"
#include "plugin/chainserve.h"
#include "plugin/family.h"
#include "plugin/served.h"

/* The only process-wide pointer of the plugin: the runtime torch_ext created at load. */
static _Atomic(kf_runtime *) g_runtime;

/* A sample holds no pin on its slot: it counts only if the slot was not recycled meanwhile. A
 * chain kernel's is its entry's (entries live as long as the runtime). */
static void gpu_sample_done(void *user, uint64_t gen, int served, uint64_t ns)
{
    if (served == KF_CHAIN_GPU_SAMPLE) {
        kf_chain_entry_add_sample(user, ns);
        return;
    }
    if (!kf_slot_pin_gen(user, (uint32_t)gen)) return;
    kf_slot_add_sample(user, served, ns);
    kf_slot_unpin(user);
}

kf_status kf_runtime_create(kf_runtime **out, const kf_config *cfg)
{
    kf_status st;
    *out = NULL;
    kf_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return KF_ERR_NOMEM;
    rt->cfg = *cfg;
    if (rt->cfg.sample_every < 1) rt->cfg.sample_every = 1; /* it is a divisor on the hot path */
    pthread_mutex_init(&rt->lock, NULL);
    pthread_mutex_init(&rt->cache_lock, NULL);
    uint32_t log2 = cfg->sigtable_log2 ? (uint32_t)cfg->sigtable_log2 : KF_SIGTABLE_LOG2;
    st = kf_sigtable_create(&rt->sigs, log2);
    if (st) goto fail_sigs;
    st = kf_gpu_timer_create(&rt->gtimer, gpu_sample_done);
    if (st) goto fail_timer;
    st = kf_chains_create(&rt->chains, 1024);
    if (st == KF_OK) kf_chains_set_deferred(rt->chains, rt->cfg.chain_deferred);
    if (st) goto fail_chains;
    atomic_store(&rt->enabled, cfg->disable ? 0 : 1);
    *out = rt;
    return KF_OK;

fail_chains:
    kf_gpu_timer_free(rt->gtimer);
fail_timer:
    kf_sigtable_free(rt->sigs);
fail_sigs:
    pthread_mutex_destroy(&rt->cache_lock);
    pthread_mutex_destroy(&rt->lock);
    free(rt);
    return st;
}

void kf_runtime_free(kf_runtime *rt)
{
    if (!rt) return;
    kf_runtime *expect = rt;
    atomic_compare_exchange_strong(&g_runtime, &expect, NULL);
    kf_cachelink_stop(rt); /* its thread attaches kernels: stopped before they are freed */
    for (kf_kernel *k = rt->retired, *next; k; k = next) {
        next = k->retired_next;
        kf_served_free(k->served);
        free(k);
    }
    kf_cachelink_free(rt); /* after the served kernels: they use its compilers */
    kf_family_free_all(rt);
    kf_chainserve_free_all(rt);
    kf_gpu_timer_free(rt->gtimer);
    kf_chains_free(rt->chains);
    kf_sigtable_free(rt->sigs);
    pthread_mutex_destroy(&rt->cache_lock);
    pthread_mutex_destroy(&rt->lock);
    free(rt);
}

void kf_runtime_set_global(kf_runtime *rt)
{
    atomic_store(&g_runtime, rt);
}

kf_runtime *kf_runtime_get(void)
{
    return atomic_load(&g_runtime);
}

const char *kf_runtime_errmsg(const kf_runtime *rt)
{
    return rt ? rt->errmsg : "kforge runtime was not created";
}

void kf_runtime_set_error(kf_runtime *rt, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rt->errmsg, sizeof rt->errmsg, fmt, ap);
    va_end(ap);
}

int kf_runtime_add_op(kf_runtime *rt, const char *name, const char *const *argnames, int n)
{
    int idx = -1;
    pthread_mutex_lock(&rt->lock);
    for (int i = 0; i < rt->n_ops; i++)
        if (!strcmp(rt->ops[i].name, name)) idx = i;
    if (idx < 0 && rt->n_ops < KF_MAX_OPS) {
        idx = rt->n_ops++;
        kf_op_info *op = &rt->ops[idx];
        memset(op, 0, sizeof *op);
        snprintf(op->name, sizeof op->name, "%s", name);
        op->n_args = n < KF_MAX_ARGNAMES ? n : KF_MAX_ARGNAMES;
        for (int i = 0; i < op->n_args; i++)
            snprintf(op->argnames[i], KF_ARGNAME_MAX, "%s", argnames[i] ? argnames[i] : "");
    }
    pthread_mutex_unlock(&rt->lock);
    return idx;
}

static void append(char *dst, size_t cap, const char *sep, const char *s)
{
    size_t used = strlen(dst);
    snprintf(dst + used, cap - used, "%s%s", used ? sep : "", s);
}

void kf_runtime_op_key(kf_runtime *rt, int op, const char *key, const char *skip_reason)
{
    if (op < 0 || op >= rt->n_ops) return;
    pthread_mutex_lock(&rt->lock);
    kf_op_info *info = &rt->ops[op];
    if (skip_reason) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: %s", key, skip_reason);
        append(info->skipped, sizeof info->skipped, "; ", msg);
    } else {
        append(info->keys, sizeof info->keys, ",", key);
    }
    pthread_mutex_unlock(&rt->lock);
}

const kf_op_info *kf_runtime_find_op(const kf_runtime *rt, const char *name)
{
    for (int i = 0; i < rt->n_ops; i++)
        if (!strcmp(rt->ops[i].name, name)) return &rt->ops[i];
    return NULL;
}

const kf_config *kf_runtime_config(const kf_runtime *rt)
{
    return &rt->cfg;
}

void *kf_runtime_ext(const kf_runtime *rt)
{
    return rt->ext;
}

void kf_runtime_set_ext(kf_runtime *rt, void *ext)
{
    rt->ext = ext;
}

void kf_runtime_set_observer_flag(kf_runtime *rt, int on)
{
    atomic_store(&rt->observer_on, on ? 1 : 0);
}

void kf_runtime_open_cache(kf_runtime *rt, const char *torch_version)
{
    snprintf(rt->torch_version, sizeof rt->torch_version, "%s", torch_version);
    kf_cachelink_init(rt);
}

void kf_runtime_cached_ops(kf_runtime *rt, unsigned char *wanted) { kf_cachelink_entry_ops(rt, wanted); }

int kf_runtime_op_cached(const kf_runtime *rt, int op)
{
    return op >= 0 && op < KF_MAX_OPS &&
           atomic_load_explicit(&((kf_runtime *)rt)->op_cached[op], memory_order_relaxed);
}

int kf_runtime_capturing(kf_runtime *rt, void *stream)
{
    return kf_gpu_timer_capturing(rt->gtimer, stream);
}

void kf_set_poison(kf_runtime *rt, int on)
{
    if (rt) atomic_store(&rt->poison, on ? 1 : 0);
}

void kf_set_enabled(kf_runtime *rt, int on)
{
    if (rt) atomic_store(&rt->enabled, on ? 1 : 0);
}

int kf_enabled(const kf_runtime *rt)
{
    return rt ? atomic_load(&((kf_runtime *)rt)->enabled) : 0;
}

void kf_set_chains_enabled(kf_runtime *rt, int on)
{
    if (rt) atomic_store(&rt->chains_off, on ? 0 : 1);
}

int kf_chains_enabled(const kf_runtime *rt)
{
    return rt ? !atomic_load(&((kf_runtime *)rt)->chains_off) : 0;
}

uint64_t kf_total_calls(const kf_runtime *rt)
{
    return rt ? atomic_load_explicit(&((kf_runtime *)rt)->total_calls, memory_order_relaxed) : 0;
}

void kf_free(void *p)
{
    free(p);
}

kf_slot *kf_runtime_seen_slot(kf_runtime *rt, uint64_t key)
{
    kf_slot *s = kf_sigtable_find_hash(rt->sigs, key);
    if (!s || (s->flags & KF_SLOT_OBSERVED)) {
        kf_slot_unpin(s);
        kf_runtime_set_error(rt, "no intercepted signature with key %016" PRIx64 " has been seen", key);
        return NULL;
    }
    return s;
}

void kf_runtime_quiesce(kf_runtime *rt)
{
    if (rt) kf_cachelink_stop(rt); /* joins the reload thread; idempotent */
}
