/* Recorded statistics as JSON for Python (kernel_forge.stats, kforge run, the UI later). */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "plugin/family.h"
#include "plugin/runtime.h"
#include "common/signature.h"

static double estimated_ms(kf_slot *s)
{
    return kf_slot_estimated_ns(s) / 1e6;
}

static double per_call_us(_Atomic uint64_t *sum, _Atomic uint64_t *n, _Atomic uint64_t *first)
{
    double ns = kf_slot_per_call_ns(sum, n, first);
    return ns < 0 ? -1 : ns / 1e3;
}

typedef struct stats_ctx {
    kf_runtime *rt;
    cJSON *rows;
    int failed;
    int occupied;
} stats_ctx;

static void add_row(kf_slot *s, void *user)
{
    stats_ctx *ctx = user;
    ctx->occupied++;
    if (atomic_load(&s->calls) == 0) return;
    char op[KF_OP_NAME_MAX], sigtext[1024], key[17], dev[32] = "";
    kf_sig_op_name(s->key, s->len, op, sizeof op);
    const kf_op_info *info = kf_runtime_find_op(ctx->rt, op);
    const char *const *names = NULL;
    const char *namebuf[KF_MAX_ARGNAMES];
    int n_names = 0;
    if (info) {
        for (int i = 0; i < info->n_args; i++) namebuf[i] = info->argnames[i];
        names = namebuf;
        n_names = info->n_args;
    }
    if (kf_sig_format(s->key, s->len, names, n_names, sigtext, sizeof sigtext) != KF_OK)
        snprintf(sigtext, sizeof sigtext, "%s(<unreadable signature>)", op);
    snprintf(key, sizeof key, "%016" PRIx64, atomic_load(&s->hash));
    int observed = (s->flags & KF_SLOT_OBSERVED) != 0;
    if (observed)
        dev[0] = 0;
    else if (s->device_type == KF_DEV_CUDA)
        snprintf(dev, sizeof dev, "cuda:%d", s->device_index);
    else
        snprintf(dev, sizeof dev, "%s", kf_device_type_name(s->device_type));

    cJSON *r = cJSON_CreateObject();
    if (!r) {
        ctx->failed = 1;
        return;
    }
    cJSON_AddStringToObject(r, "op", op);
    cJSON_AddStringToObject(r, "device", dev);
    cJSON_AddStringToObject(r, "signature", observed ? op : sigtext);
    cJSON_AddStringToObject(r, "key", key);
    cJSON_AddNumberToObject(r, "calls", (double)atomic_load(&s->calls));
    cJSON_AddNumberToObject(r, "served", (double)atomic_load(&s->served));
    cJSON_AddNumberToObject(r, "fallback", (double)kf_slot_fallback(s));
    cJSON_AddNumberToObject(r, "time_ms", estimated_ms(s));
    cJSON_AddNumberToObject(r, "eager_us", per_call_us(&s->fb_time_ns, &s->fb_timed, &s->fb_first_ns));
    cJSON_AddNumberToObject(r, "served_us", per_call_us(&s->sv_time_ns, &s->sv_timed, &s->sv_first_ns));
    cJSON_AddBoolToObject(r, "served_slower", atomic_load(&s->served_slower));
    static const char *const stopped[] = {"", "slower", "launch_failed", "check_failed", "check_error"};
    int why = atomic_load(&s->stopped);
    cJSON_AddStringToObject(r, "stopped", why > 0 && why <= KF_STOP_CHECK_ERROR ? stopped[why] : "");
    cJSON_AddNumberToObject(r, "timed_calls",
                            (double)(atomic_load(&s->fb_timed) + atomic_load(&s->sv_timed)));
    cJSON_AddBoolToObject(r, "intercepted", !observed);
    cJSON_AddStringToObject(r, "time_source", observed ? "host-wall (observer)"
                                              : s->device_type == KF_DEV_CUDA ? "cuda-events"
                                                                              : "host-wall");
    cJSON_AddBoolToObject(r, "servable", !observed && !(s->flags & (KF_SIG_TRUNCATED | KF_SIG_UNSERVABLE)));
    if (!observed && (s->flags & (KF_SIG_TRUNCATED | KF_SIG_UNSERVABLE))) {
        char why[256];
        if (kf_sig_unservable_reason(s->key, s->len, s->device_type, s->device_index, names,
                                     n_names, why, sizeof why) || !why[0])
            snprintf(why, sizeof why, "an argument a kernel cannot take");
        cJSON_AddStringToObject(r, "unservable_reason", why);
    }
    const kf_kernel *k = atomic_load(&s->kernel);
    cJSON_AddBoolToObject(r, "has_kernel", k != NULL);
    /* served by a shape family: which one, and the cache entry that states it */
    cJSON_AddStringToObject(r, "family", k && k->family ? k->family->text : "");
    cJSON_AddStringToObject(r, "family_entry", k && k->family ? k->family->key_hex : "");
    cJSON_AddItemToArray(ctx->rows, r);
}

/* The signature table: its size and what its recycled slots had recorded (sigtable.h). */
static int add_table(cJSON *doc, kf_runtime *rt, int occupied)
{
    kf_evicted ev[2];
    kf_sigtable_evicted(rt->sigs, &ev[0], &ev[1]);
    cJSON *t = cJSON_AddObjectToObject(doc, "table");
    cJSON *e = t ? cJSON_AddObjectToObject(t, "evicted") : NULL;
    if (!e) return -1;
    cJSON_AddNumberToObject(t, "capacity", kf_sigtable_capacity(rt->sigs));
    cJSON_AddNumberToObject(t, "occupied", occupied);
    static const char *const basis[2] = {"host", "device"};
    for (int d = 0; d < 2; d++) {
        cJSON *b = cJSON_AddObjectToObject(e, basis[d]);
        if (!b) return -1;
        cJSON_AddNumberToObject(b, "rows", (double)ev[d].rows);
        cJSON_AddNumberToObject(b, "calls", (double)ev[d].calls);
        cJSON_AddNumberToObject(b, "served", (double)ev[d].served);
        cJSON_AddNumberToObject(b, "fallback", (double)ev[d].fallback);
        cJSON_AddNumberToObject(b, "time_ms", ev[d].time_ns / 1e6);
    }
    return 0;
}

char *kf_stats_json(kf_runtime *rt)
{
    if (!rt) return NULL;
    kf_gpu_timer_poll(rt->gtimer, 1);
    cJSON *doc = cJSON_CreateObject();
    stats_ctx ctx = {rt, cJSON_AddArrayToObject(doc, "rows"), 0, 0};
    if (!ctx.rows) goto fail;
    pthread_mutex_lock(&rt->lock); /* add_row reads rt->ops */
    kf_sigtable_each(rt->sigs, add_row, &ctx);
    pthread_mutex_unlock(&rt->lock);
    if (ctx.failed) goto fail;
    cJSON_AddNumberToObject(doc, "dropped", (double)atomic_load(&rt->dropped));
    if (add_table(doc, rt, ctx.occupied)) goto fail;
    cJSON_AddStringToObject(doc, "gpu_timer", kf_gpu_timer_status(rt->gtimer));
    char *out = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    return out;
fail:
    cJSON_Delete(doc);
    return NULL;
}

static void zero_slot(kf_slot *s, void *user)
{
    (void)user;
    atomic_store(&s->calls, 0);
    atomic_store(&s->served, 0);
    atomic_store(&s->fb_timed, 0);
    atomic_store(&s->fb_time_ns, 0);
    atomic_store(&s->sv_timed, 0);
    atomic_store(&s->sv_time_ns, 0);
    atomic_store(&s->fb_first_ns, 0);
    atomic_store(&s->sv_first_ns, 0);
    atomic_store(&s->fb_low_ns, 0);
    atomic_store(&s->sv_low_ns, 0);
}

void kf_reset_stats(kf_runtime *rt)
{
    if (!rt) return;
    kf_gpu_timer_poll(rt->gtimer, 1); /* so no late sample lands after the reset */
    kf_sigtable_each(rt->sigs, zero_slot, NULL);
    kf_sigtable_reset_evicted(rt->sigs);
    kf_chains_reset(rt->chains);
    atomic_store(&rt->dropped, 0);
}

/* A chain member's signature, from the signature table (chains.h). */
static int chain_member(void *user, uint64_t key, kf_chain_member_info *out)
{
    kf_runtime *rt = user;
    kf_slot *s = kf_sigtable_find_hash(rt->sigs, key);
    if (!s) return 0;
    int ok = s->len <= sizeof out->sig;
    if (ok) {
        memcpy(out->sig, s->key, s->len);
        out->sig_len = s->len;
        kf_sig_op_name(s->key, s->len, out->op, sizeof out->op);
        const kf_op_info *info = kf_runtime_find_op(rt, out->op);
        const char *names[KF_MAX_ARGNAMES];
        int n_names = info ? info->n_args : 0;
        for (int i = 0; i < n_names; i++) names[i] = info->argnames[i];
        if (kf_sig_format(s->key, s->len, names, n_names, out->signature, sizeof out->signature) != KF_OK)
            snprintf(out->signature, sizeof out->signature, "%s(<unreadable signature>)", out->op);
    }
    kf_slot_unpin(s);
    return ok;
}

char *kf_chains_json(kf_runtime *rt, uint64_t min_calls)
{
    return rt ? kf_chains_json_doc(rt->chains, min_calls, chain_member, rt) : NULL;
}

char *kf_ops_json(kf_runtime *rt)
{
    if (!rt) return NULL;
    cJSON *doc = cJSON_CreateObject();
    if (!doc) return NULL;
    cJSON_AddBoolToObject(doc, "enabled", atomic_load(&rt->enabled));
    cJSON_AddBoolToObject(doc, "disabled_by_env", rt->cfg.disable);
    cJSON_AddBoolToObject(doc, "tune", rt->cfg.tune);
    cJSON_AddBoolToObject(doc, "observer", atomic_load(&rt->observer_on));
    cJSON_AddNumberToObject(doc, "sample_every", rt->cfg.sample_every);
    cJSON_AddNumberToObject(doc, "eager_sample_every", rt->cfg.eager_every);
    cJSON_AddStringToObject(doc, "bad_ops", rt->cfg.bad_ops);
    cJSON_AddStringToObject(doc, "error", rt->errmsg);
    cJSON_AddStringToObject(doc, "cache_dir", rt->cfg.cache_dir);
    cJSON_AddStringToObject(doc, "cache_bundle", rt->cfg.bundle);
    cJSON_AddStringToObject(doc, "validate", rt->cfg.validate == KF_VALIDATE_OFF ? "off"
                                             : rt->cfg.validate == KF_VALIDATE_ALWAYS ? "always" : "first");
    cJSON *ops = cJSON_AddArrayToObject(doc, "ops");
    pthread_mutex_lock(&rt->lock);
    for (int i = 0; ops && i < rt->n_ops; i++) {
        const kf_op_info *op = &rt->ops[i];
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddStringToObject(o, "op", op->name);
        cJSON_AddStringToObject(o, "keys", op->keys);
        cJSON_AddStringToObject(o, "skipped", op->skipped);
        cJSON_AddItemToArray(ops, o);
    }
    pthread_mutex_unlock(&rt->lock);
    char *out = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    return out;
}
