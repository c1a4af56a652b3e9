/* Chain entries (chainserve.h). */
#include "plugin/chainserve.h"

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/hex.h"
#include "common/log.h"
#include "common/signature.h"
#include "compile/source_check.h"
#include "plugin/cachelink.h"
#include "plugin/runtime.h"
#include "plugin/served.h"

_Static_assert(KF_CHAIN_MAX_ARGS <= KF_LAUNCH_MAX_ARGS, "a chain kernel is launched like any other");

struct kf_chain_entry {
    kf_chain_def def;
    kf_runtime *rt; /* its guard reads the members' slots and the sampling settings */
    kf_kernel *kernel;
    uint8_t *sig; /* canonical chain bytes */
    uint32_t sig_len;
    char key_hex[KF_KEY_HEX]; /* its cache entry; "" when added in this process */
    _Atomic int state;
    _Atomic uint64_t n[KF_CHAIN_N_COUNTERS];
    char reason[256]; /* why it was refused, written once by the refusing caller... */
    _Atomic int reason_ready; /* ...and readable once this is set */
    _Atomic int stopped;      /* KF_CHAIN_STOP_*, with the reason */
    /* The speed guard (kf_chain_entry_plan): heads that would serve, the kernel's samples,
     * heads run eager because a member had no eager sample. */
    _Atomic uint64_t plans, timed, time_ns, min_ns, eager_heads;
    struct kf_chain_entry *next;
};

static kf_status fail(char *err, size_t cap, const char *msg, const char *detail)
{
    snprintf(err, cap, "%s%s%s", msg, detail && *detail ? ": " : "", detail ? detail : "");
    return KF_ERR_INVALID;
}

/* A view external's geometry: that of the first member input wired to it, in that member's
 * signature; the head input it views must have its dtype. */
static int view_geometry(const cJSON *members, kf_chain_def *d, int e)
{
    uint8_t buf[KF_SIG_MAX_BYTES];
    kf_sig_item it, head;
    const char *h0 = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(members, 0), "sig_hex")->valuestring;
    kf_hex_decode(h0, strlen(h0), buf);
    if (kf_sig_tensors(buf, (uint32_t)(strlen(h0) / 2), d->view_head[e], &head) <= d->view_head[e]) return 0;
    for (int m = 1; m < d->n; m++)
        for (int i = 0; i < d->n_in[m]; i++) {
            if (d->ref[m][i][0] != KF_CHAIN_IN_EXT || d->ref[m][i][1] != e) continue;
            const char *hex = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(members, m), "sig_hex")->valuestring;
            kf_hex_decode(hex, strlen(hex), buf);
            if (kf_sig_tensors(buf, (uint32_t)(strlen(hex) / 2), i, &it) <= i || it.dtype != head.dtype) return 0;
            d->view_ndim[e] = (int8_t)it.ndim;
            memcpy(d->view_sizes[e], it.sizes, sizeof it.sizes);
            memcpy(d->view_strides[e], it.strides, sizeof it.strides);
            return 1;
        }
    return 0;
}

/* spec's members and refs into def (validated by kf_chain_sig_bytes_obj already); 0 when a view
 * cannot be taken (its geometry unknown, or another dtype than the input it views). */
static int fill_def(const cJSON *spec, kf_chain_def *d)
{
    const cJSON *members = cJSON_GetObjectItemCaseSensitive(spec, "members");
    d->n = cJSON_GetArraySize(members);
    d->n_head = cJSON_GetObjectItemCaseSensitive(spec, "n_head_inputs")->valueint;
    d->n_ext = cJSON_GetObjectItemCaseSensitive(spec, "n_ext")->valueint;
    size_t at = 0;
    for (int m = 0; m < d->n; m++) {
        const cJSON *mem = cJSON_GetArrayItem(members, m);
        const char *hex = cJSON_GetObjectItemCaseSensitive(mem, "sig_hex")->valuestring;
        uint8_t buf[KF_SIG_MAX_BYTES];
        const size_t hl = strlen(hex);
        kf_hex_decode(hex, hl, buf);
        d->key[m] = kf_sig_hash(buf, (uint32_t)(hl / 2));
        const char *op = cJSON_GetObjectItemCaseSensitive(mem, "op")->valuestring;
        snprintf(d->op[m], sizeof d->op[m], "%s", op);
        const char *shortop = strncmp(op, "aten::", 6) ? op : op + 6;
        at += (size_t)snprintf(d->ops + at, at < sizeof d->ops ? sizeof d->ops - at : 0, "%s%s",
                               m ? " -> " : "", shortop);
        const cJSON *ins = cJSON_GetObjectItemCaseSensitive(mem, "inputs");
        d->n_in[m] = cJSON_GetArraySize(ins);
        for (int i = 0; i < d->n_in[m]; i++) {
            const cJSON *ref = cJSON_GetArrayItem(ins, i);
            const char *kind = cJSON_GetArrayItem(ref, 0)->valuestring;
            uint8_t *r = d->ref[m][i];
            r[0] = !strcmp(kind, "head") ? KF_CHAIN_IN_HEAD : !strcmp(kind, "member") ? KF_CHAIN_IN_MEMBER
                                                                                       : KF_CHAIN_IN_EXT;
            r[1] = (uint8_t)cJSON_GetArrayItem(ref, 1)->valueint;
            r[2] = r[0] == KF_CHAIN_IN_MEMBER ? (uint8_t)cJSON_GetArrayItem(ref, 2)->valueint : 0;
        }
    }
    d->deferred = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "deferred"));
    memset(d->view_head, -1, sizeof d->view_head);
    const cJSON *views = cJSON_GetObjectItemCaseSensitive(spec, "views");
    for (int v = 0; v < cJSON_GetArraySize(views); v++) {
        const cJSON *w = cJSON_GetArrayItem(views, v);
        const int e = cJSON_GetArrayItem(w, 0)->valueint;
        d->view_head[e] = (int8_t)cJSON_GetArrayItem(w, 1)->valueint;
        d->view_off[e] = (int64_t)cJSON_GetArrayItem(w, 2)->valuedouble;
        if (!view_geometry(members, d, e)) return 0;
    }
    return 1;
}

/* outputs: every member's layouts, flat, each with "member" (chainserve.h). */
static kf_status fill_outs(const char *outputs_json, kf_chain_def *d, char *err, size_t cap)
{
    cJSON *arr = outputs_json ? cJSON_Parse(outputs_json) : NULL;
    kf_status st = KF_ERR_INVALID;
    const int n = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : -1;
    if (n < d->n) {
        fail(err, cap, "chain outputs: not an array with at least one layout per member", NULL);
        goto out;
    }
    int m = 0, first = 0, n_args_out = 0; /* the kernel's outputs: an in-place member's is not one */
    for (int i = 0; i <= n; i++) {
        const cJSON *o = i < n ? cJSON_GetArrayItem(arr, i) : NULL;
        const cJSON *mv = o ? cJSON_GetObjectItemCaseSensitive(o, "member") : NULL;
        if (o && (!cJSON_IsNumber(mv) || mv->valueint < m || mv->valueint > m + 1 ||
                  mv->valueint != mv->valuedouble || mv->valueint >= d->n)) {
            fail(err, cap, "chain outputs: \"member\" missing, out of range or out of order", NULL);
            goto out;
        }
        if (o && mv->valueint == m) continue;
        /* layouts [first, i) are member m's: parsed as a manifest's outputs */
        cJSON *part = cJSON_CreateArray();
        for (int j = first; part && j < i; j++)
            cJSON_AddItemToArray(part, cJSON_Duplicate(cJSON_GetArrayItem(arr, j), 1));
        char *text = part ? cJSON_PrintUnformatted(part) : NULL;
        cJSON_Delete(part);
        kf_status ls = kf_layout_from_json(text, &d->outs[m]);
        free(text);
        /* deferred mode's in-place member writes its self, an earlier member's output (bn -> relu_) */
        const int inplace = ls == KF_OK && m > 0 && d->outs[m].n && d->outs[m].o[0].alias_arg >= 0;
        if (ls != KF_OK || (inplace && (!d->deferred || d->outs[m].n != 1 || d->outs[m].o[0].alias_arg != 0 ||
                                        d->ref[m][0][0] != KF_CHAIN_IN_MEMBER || d->ref[m][0][2] != 0))) {
            char which[48];
            snprintf(which, sizeof which, "member %d", m);
            fail(err, cap, "chain outputs: a bad layout (only the head may write an argument; in "
                           "deferred mode, an in-place op its self, an earlier member's output)", which);
            goto out;
        }
        const int src = d->ref[m][0][1];
        d->writes_of[m] = (int8_t)(!inplace ? -1 : d->writes_of[src] >= 0 ? d->writes_of[src] : src);
        for (int k = 0; k < d->outs[m].n && !inplace; k++)
            if (d->outs[m].o[k].alias_arg >= 0) {
                fail(err, cap, "chain outputs: a head writing an argument in place is not served yet", NULL);
                goto out;
            }
        d->n_outputs += d->outs[m].n;
        n_args_out += inplace ? 0 : d->outs[m].n;
        first = i;
        m++;
    }
    if (m != d->n) {
        fail(err, cap, "chain outputs: a member has no layout", NULL);
        goto out;
    }
    for (m = 0; m < d->n; m++)
        for (int i = 0; i < d->n_in[m]; i++)
            if (d->ref[m][i][0] == KF_CHAIN_IN_MEMBER && d->ref[m][i][2] >= d->outs[d->ref[m][i][1]].n) {
                fail(err, cap, "chain spec: an input names an output its member does not have", NULL);
                goto out;
            }
    if (d->n_head + d->n_ext + n_args_out > KF_CHAIN_MAX_ARGS) {
        fail(err, cap, "chain: more kernel arguments than a launch takes", NULL);
        goto out;
    }
    st = KF_OK;
out:
    cJSON_Delete(arr);
    return st;
}

kf_status kf_chainserve_add(kf_runtime *rt, const char *spec_json, const char *outputs_json,
                            const uint8_t *sig, uint32_t sig_len, kf_kernel *k, double atol,
                            double rtol, const char *key_hex, char *err, size_t err_cap)
{
    kf_chain_entry *e = calloc(1, sizeof *e);
    cJSON *spec = spec_json ? cJSON_Parse(spec_json) : NULL;
    kf_status st = KF_ERR_NOMEM;
    if (!e) goto fail;
    st = kf_chain_sig_bytes_obj(spec, &e->sig, &e->sig_len, err, err_cap);
    if (st != KF_OK) goto fail;
    if (sig && (sig_len != e->sig_len || memcmp(sig, e->sig, sig_len))) {
        st = fail(err, err_cap, "chain entry: its sig is not the canonical bytes of its chain", NULL);
        goto fail;
    }
    if (!fill_def(spec, &e->def)) {
        st = fail(err, err_cap, "chain spec: a view whose sizes are unknown or whose dtype is not its head input's", NULL);
        goto fail;
    }
    st = fill_outs(outputs_json, &e->def, err, err_cap);
    if (st != KF_OK) goto fail;
    if (!(atol >= 0 && rtol >= 0 && atol < 1 && rtol < 1)) {
        st = fail(err, err_cap, "chain entry: tolerance out of range", NULL);
        goto fail;
    }
    e->def.atol = atol, e->def.rtol = rtol;
    e->kernel = k;
    e->rt = rt;
    snprintf(e->key_hex, sizeof e->key_hex, "%s", key_hex ? key_hex : "");
    pthread_mutex_lock(&rt->lock);
    if (k) { /* freed with the runtime, as every kernel: a reader may hold it */
        k->retired_next = rt->retired;
        rt->retired = k;
    }
    e->next = atomic_load(&rt->chain_entries);
    atomic_store_explicit(&rt->chain_entries, e, memory_order_release);
    pthread_mutex_unlock(&rt->lock);
    cJSON_Delete(spec);
    KF_INFO("chain %s: a kernel is attached (checked against eager on first use)", e->def.ops);
    return KF_OK;
fail:
    if (k) {
        kf_served_free(k->served);
        free(k);
    }
    if (e) free(e->sig);
    free(e);
    cJSON_Delete(spec);
    return st;
}

void kf_chainserve_free_all(kf_runtime *rt)
{
    for (kf_chain_entry *e = atomic_load(&rt->chain_entries), *next; e; e = next) {
        next = e->next;
        free(e->sig);
        free(e);
    }
    atomic_store(&rt->chain_entries, NULL);
}

kf_status kf_chainserve_device(const char *chain_json, int *type, int *index)
{
    cJSON *spec = chain_json ? cJSON_Parse(chain_json) : NULL;
    const cJSON *m0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(spec, "members"), 0);
    const cJSON *hex = cJSON_GetObjectItemCaseSensitive(m0, "sig_hex");
    kf_status st = KF_ERR_INVALID;
    uint8_t buf[KF_SIG_MAX_BYTES];
    const size_t hl = cJSON_IsString(hex) ? strlen(hex->valuestring) : 0;
    if (hl && hl % 2 == 0 && hl / 2 <= sizeof buf && !kf_hex_decode(hex->valuestring, hl, buf))
        st = kf_sig_device_of(buf, (uint32_t)(hl / 2), type, index);
    cJSON_Delete(spec);
    return st;
}

void kf_chainserve_disable(kf_runtime *rt, const char *key_hex, const char *reason)
{
    for (kf_chain_entry *e = atomic_load(&rt->chain_entries); e; e = e->next)
        if (e->key_hex[0] && !strcmp(e->key_hex, key_hex) &&
            kf_chain_entry_refuse(e, rt, reason ? reason : "its cache entry was disabled", 0))
            KF_WARN("chain %s: its cache entry %s was disabled; using eager", e->def.ops, key_hex);
}

int kf_chainserve_attached(kf_runtime *rt, const char *key_hex)
{
    for (kf_chain_entry *e = atomic_load_explicit(&rt->chain_entries, memory_order_acquire); e; e = e->next)
        if (e->key_hex[0] && !strcmp(e->key_hex, key_hex) &&
            atomic_load_explicit(&e->state, memory_order_acquire) != KF_CHAIN_REFUSED)
            return 1;
    return 0;
}

int kf_chainserve_active(const kf_runtime *rt)
{
    kf_runtime *r = (kf_runtime *)rt;
    return atomic_load_explicit(&r->chain_entries, memory_order_relaxed) != NULL &&
           !atomic_load_explicit(&r->chains_off, memory_order_relaxed);
}

/* The longest entry for head_key shorter than `than` (NULL: any) and, given `than`, its prefix. */
static kf_chain_entry *find_(kf_runtime *rt, uint64_t head_key, const kf_chain_entry *than)
{
    kf_chain_entry *best = NULL;
    for (kf_chain_entry *e = kf_chainserve_next_head(rt, head_key, NULL); e; e = kf_chainserve_next_head(rt, head_key, e)) {
        if (best && e->def.n <= best->def.n) continue;
        int prefix = !than || e->def.n < than->def.n;
        for (int m = 1; prefix && than && m < e->def.n; m++) prefix = e->def.key[m] == than->def.key[m];
        if (prefix) best = e;
    }
    return best;
}

kf_chain_entry *kf_chainserve_find(kf_runtime *rt, uint64_t head_key)
{
    return find_(rt, head_key, NULL); /* the longest: a norm with its weight's cast over the norm alone */
}

kf_chain_entry *kf_chainserve_find_prefix(kf_runtime *rt, const kf_chain_entry *than)
{
    return than ? find_(rt, than->def.key[0], than) : NULL;
}

kf_chain_entry *kf_chainserve_next_head(kf_runtime *rt, uint64_t head_key, const kf_chain_entry *after)
{
    kf_chain_entry *e = after ? after->next : atomic_load_explicit(&rt->chain_entries, memory_order_acquire);
    for (; e; e = e->next)
        if (e->def.key[0] == head_key && atomic_load_explicit(&e->state, memory_order_acquire) != KF_CHAIN_REFUSED &&
            (!e->def.deferred || rt->cfg.chain_deferred)) /* deferred mode is opt-in */
            return e;
    return NULL;
}

const kf_chain_def *kf_chain_entry_def(const kf_chain_entry *e) { return &e->def; }
const kf_kernel *kf_chain_entry_kernel(const kf_chain_entry *e) { return e->kernel; }
int kf_chain_entry_state(const kf_chain_entry *e)
{
    return atomic_load_explicit(&((kf_chain_entry *)e)->state, memory_order_acquire);
}

void kf_chain_entry_enable(kf_chain_entry *e)
{
    int want = KF_CHAIN_CHECKING;
    if (atomic_compare_exchange_strong(&e->state, &want, KF_CHAIN_SERVING))
        KF_INFO("chain %s matched eager on first use; served from now on", e->def.ops);
}

static int refuse_as(kf_chain_entry *e, kf_runtime *rt, const char *reason, int disable_cache, int why)
{
    int st = atomic_load(&e->state);
    do {
        if (st == KF_CHAIN_REFUSED) return 0;
    } while (!atomic_compare_exchange_weak(&e->state, &st, KF_CHAIN_REFUSED));
    atomic_store(&e->stopped, why);
    snprintf(e->reason, sizeof e->reason, "%s", reason);
    atomic_store_explicit(&e->reason_ready, 1, memory_order_release);
    if (disable_cache && e->key_hex[0]) kf_cachelink_disable_entry(rt, e->key_hex, reason);
    return 1;
}

int kf_chain_entry_refuse(kf_chain_entry *e, kf_runtime *rt, const char *reason, int disable_cache)
{
    return refuse_as(e, rt, reason, disable_cache, KF_CHAIN_STOP_OTHER);
}

int kf_chain_entry_count(kf_chain_entry *e, kf_runtime *rt, int which)
{
    if (which < 0 || which >= KF_CHAIN_N_COUNTERS) return 0;
    atomic_fetch_add_explicit(&e->n[which], 1, memory_order_relaxed);
    if (which != KF_CHAIN_DROPPED && which != KF_CHAIN_SKIPPED) return 0;
    /* a mispredicted run completed too: a model running the chain at more places than the guard's
     * threshold, each with its own weight, mispredicts every head of its first forward (XCiT) */
    const uint64_t heads = atomic_load(&e->n[KF_CHAIN_HEADS]),
                   done = atomic_load(&e->n[KF_CHAIN_COMPLETED]) + atomic_load(&e->n[KF_CHAIN_MISPREDICTED]);
    const uint64_t dropped = atomic_load(&e->n[KF_CHAIN_DROPPED]), skipped = atomic_load(&e->n[KF_CHAIN_SKIPPED]);
    /* skipped heads count: a chain that never completes is skipped after a few drops */
    if (heads + skipped < KF_CHAIN_GUARD_HEADS || dropped <= done) return 0;
    char why[160];
    snprintf(why, sizeof why, "dropped before its last member %llu times in %llu heads (the kernel "
             "costs more than the head alone)", (unsigned long long)dropped, (unsigned long long)heads);
    return refuse_as(e, rt, why, 0, KF_CHAIN_STOP_DROPPED); /* another process may use it better: entry stays */
}

/* The members' fastest sampled calls summed: eager's, or (served) each one's fastest as this
 * process runs it without the chain, its own kernel's where that is attached and faster; 0 while
 * a member has no eager sample (or its signature's slot was recycled, which starts its samples
 * afresh). */
static uint64_t members_ns(kf_chain_entry *e, int served)
{
    uint64_t sum = 0;
    for (int m = 0; m < e->def.n; m++) {
        kf_slot *s = kf_sigtable_find_hash(e->rt->sigs, e->def.key[m]);
        uint64_t fb = s ? atomic_load_explicit(&s->fb_min_ns, memory_order_relaxed) : 0;
        const uint64_t sv = s ? atomic_load_explicit(&s->sv_min_ns, memory_order_relaxed) : 0;
        if (served && sv && sv < fb && atomic_load_explicit(&s->kernel, memory_order_acquire)) fb = sv;
        kf_slot_unpin(s);
        if (!fb) return 0;
        sum += fb;
    }
    return sum;
}

int kf_chain_entry_plan(kf_chain_entry *e, int cuda, void *stream)
{
    kf_runtime *rt = e->rt;
    const uint64_t n = atomic_fetch_add_explicit(&e->plans, 1, memory_order_relaxed) + 1;
    if (n > 3 && n % (uint64_t)rt->cfg.sample_every) return KF_CHAIN_PLAN_SERVE;
    const int every = rt->cfg.eager_every;
    /* as kf_dispatch_begin's eager_sample: one eager head for every - 1 kernel samples; once
     * every member has a sample, from the 16th head on only (the first samples are the
     * first-use check's, often cold: they are refreshed, the first heads still serve) */
    if (every <= 0 || (n <= 3 && members_ns(e, 0))) return KF_CHAIN_PLAN_TIMED;
    const uint64_t eager = atomic_load(&e->eager_heads), timed = atomic_load(&e->timed);
    if (eager * (uint64_t)(every - 1) >= timed || (cuda && kf_runtime_capturing(rt, stream)))
        return KF_CHAIN_PLAN_TIMED;
    /* every other one by the members' own kernels, once each has an eager sample to weigh */
    const uint64_t k = atomic_fetch_add_explicit(&e->eager_heads, 1, memory_order_relaxed);
    return k % 2 && members_ns(e, 0) ? KF_CHAIN_PLAN_MEMBERS : KF_CHAIN_PLAN_EAGER;
}

void kf_chain_time_start(kf_chain_entry *e, int cuda, void *stream, kf_chain_timer *t)
{
    t->gpu_token = cuda ? kf_gpu_timer_start(e->rt->gtimer, stream, e, 0, KF_CHAIN_GPU_SAMPLE) : -1;
    t->on = !cuda || t->gpu_token >= 0; /* no event pair (capturing, no driver): no sample */
    t->t0_ns = kf_now_ns();
}

void kf_chain_time_end(kf_chain_entry *e, int launched, void *stream, kf_chain_timer *t)
{
    if (!t->on) return;
    t->on = 0;
    if (t->gpu_token >= 0) {
        if (launched)
            kf_gpu_timer_stop(e->rt->gtimer, t->gpu_token, stream); /* read back lazily */
        else
            kf_gpu_timer_cancel(e->rt->gtimer, t->gpu_token);
        return;
    }
    if (launched) kf_chain_entry_add_sample(e, kf_now_ns() - t->t0_ns);
}

static void store_min(_Atomic uint64_t *p, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);
    while ((cur == 0 || v < cur) &&
           !atomic_compare_exchange_weak_explicit(p, &cur, v, memory_order_relaxed, memory_order_relaxed)) {
    }
}

int kf_chain_entry_add_sample(kf_chain_entry *e, uint64_t ns)
{
    const uint64_t n = atomic_fetch_add_explicit(&e->timed, 1, memory_order_relaxed) + 1;
    atomic_fetch_add_explicit(&e->time_ns, ns, memory_order_relaxed);
    store_min(&e->min_ns, ns ? ns : 1);
    if (n < KF_SPEED_EARLY_SAMPLES || kf_chain_entry_state(e) != KF_CHAIN_SERVING) return 0;
    const uint64_t sv = atomic_load(&e->min_ns), fb = members_ns(e, 1);
    if (!kf_speed_slower(n, sv, fb)) return 0;
    char why[240];
    snprintf(why, sizeof why, "slower than its members: %.1f us vs %.1f us (the kernel's fastest sampled "
             "call vs the sum of its members' fastest calls, each eager or by its own kernel, %llu samples)",
             (double)sv / 1e3, (double)fb / 1e3, (unsigned long long)n);
    if (!refuse_as(e, e->rt, why, 0, KF_CHAIN_STOP_SLOWER)) return 0; /* it may win elsewhere: entry stays */
    KF_WARN("chain %s is slower here than its members run without it (%.1f us vs %.1f us); they run "
            "as before from now on in this process", e->def.ops, (double)sv / 1e3, (double)fb / 1e3);
    return 1;
}

char *kf_chain_entries_json(kf_runtime *rt)
{
    if (!rt) return NULL;
    cJSON *arr = cJSON_CreateArray();
    static const char *const states[] = {"checking", "served", "refused"};
    for (kf_chain_entry *e = atomic_load(&rt->chain_entries); arr && e; e = e->next) {
        cJSON *o = cJSON_CreateObject();
        char *hex = malloc(2 * (size_t)e->sig_len + 1);
        if (!o || !hex) {
            cJSON_Delete(o);
            free(hex);
            break;
        }
        kf_hex_encode(e->sig, e->sig_len, hex);
        cJSON_AddStringToObject(o, "sig_hex", hex);
        free(hex);
        cJSON_AddStringToObject(o, "ops", e->def.ops);
        /* deferred: served only with KFORGE_CHAIN_DEFERRED=1 */
        cJSON_AddBoolToObject(o, "deferred", e->def.deferred);
        cJSON_AddStringToObject(o, "cache_key", e->key_hex);
        const int st = kf_chain_entry_state(e);
        cJSON_AddStringToObject(o, "state", states[st]);
        const int ready = atomic_load_explicit(&e->reason_ready, memory_order_acquire);
        cJSON_AddStringToObject(o, "reason", st == KF_CHAIN_REFUSED && ready ? e->reason : "");
        cJSON_AddNumberToObject(o, "heads", (double)atomic_load(&e->n[KF_CHAIN_HEADS]));
        cJSON_AddNumberToObject(o, "completed", (double)atomic_load(&e->n[KF_CHAIN_COMPLETED]));
        cJSON_AddNumberToObject(o, "dropped", (double)atomic_load(&e->n[KF_CHAIN_DROPPED]));
        cJSON_AddNumberToObject(o, "skipped", (double)atomic_load(&e->n[KF_CHAIN_SKIPPED]));
        cJSON_AddNumberToObject(o, "observed", (double)atomic_load(&e->n[KF_CHAIN_OBSERVED]));
        cJSON_AddNumberToObject(o, "mispredicted", (double)atomic_load(&e->n[KF_CHAIN_MISPREDICTED]));
        static const char *const stopped[] = {"other", "slower", "dropped"};
        const int why = atomic_load(&e->stopped);
        cJSON_AddStringToObject(o, "stopped", st == KF_CHAIN_REFUSED && ready && why >= 0 && why <= 2 ? stopped[why] : "");
        /* the speed guard's samples: the kernel's (fastest, us), the members' (fastest, summed:
         * eager, and as they run without the chain, which the guard compares) */
        const uint64_t kmin = atomic_load(&e->min_ns), fb = members_ns(e, 0), mb = members_ns(e, 1);
        cJSON_AddNumberToObject(o, "timed", (double)atomic_load(&e->timed));
        cJSON_AddNumberToObject(o, "kernel_us", kmin ? (double)kmin / 1e3 : -1.0);
        cJSON_AddNumberToObject(o, "eager_us", fb ? (double)fb / 1e3 : -1.0);
        cJSON_AddNumberToObject(o, "members_us", mb ? (double)mb / 1e3 : -1.0);
        cJSON_AddNumberToObject(o, "eager_heads", (double)atomic_load(&e->eager_heads));
        cJSON_AddItemToArray(arr, o);
    }
    char *text = arr ? cJSON_PrintUnformatted(arr) : NULL;
    cJSON_Delete(arr);
    return text;
}

static kf_status add_compiled(kf_runtime *rt, const char *spec_json, const char *outputs_json,
                              const char *backend, const char *source, const char *launch_json,
                              double atol, double rtol, char *key_out, char **log);

/* Every member's outputs as eager laid them out in this process (the signature table's), flat
 * with "member"; NULL with the runtime's error when a member's layout is not known. */
static char *outputs_from_slots(kf_runtime *rt, const char *spec_json)
{
    cJSON *spec = cJSON_Parse(spec_json), *all = cJSON_CreateArray();
    const cJSON *members = cJSON_GetObjectItemCaseSensitive(spec, "members");
    char *text = NULL;
    for (int m = 0; all && m < cJSON_GetArraySize(members); m++) {
        const cJSON *hex = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(members, m), "sig_hex");
        uint8_t buf[KF_SIG_MAX_BYTES];
        const size_t hl = cJSON_IsString(hex) ? strlen(hex->valuestring) : 0;
        if (!hl || hl % 2 || hl / 2 > sizeof buf || kf_hex_decode(hex->valuestring, hl, buf)) {
            kf_runtime_set_error(rt, "chain kernel: member %d: sig_hex is not a signature", m);
            goto out;
        }
        kf_slot *s = kf_sigtable_find_hash(rt->sigs, kf_sig_hash(buf, (uint32_t)(hl / 2)));
        const kf_out_layout *l = s ? atomic_load(&s->outs) : NULL;
        char *lj = l && l->n > 0 ? kf_layout_to_json(l) : NULL;
        kf_slot_unpin(s);
        cJSON *part = lj ? cJSON_Parse(lj) : NULL;
        free(lj);
        if (!part) {
            kf_runtime_set_error(rt, "chain kernel: member %d's outputs are not known in this process "
                                     "(run the chain once, or pass outputs)", m);
            goto out;
        }
        for (cJSON *o = part->child; o; o = o->next) cJSON_AddNumberToObject(o, "member", m);
        while (part->child) cJSON_AddItemToArray(all, cJSON_DetachItemFromArray(part, 0));
        cJSON_Delete(part);
    }
    text = cJSON_PrintUnformatted(all);
out:
    cJSON_Delete(spec);
    cJSON_Delete(all);
    return text;
}

/* The chain kernel as a cache entry (docs/chains.md): op kforge::chain, sig the canonical bytes. */
static kf_status insert(kf_runtime *rt, const char *spec_json, const char *outputs_json, kf_kernel *k,
                        kf_compiler_i *cc, const char *backend, const char *toolchain, const char *arch,
                        const char *source, const char *launch_json, double atol, double rtol,
                        char key[KF_KEY_HEX], char blob_hash[KF_KEY_HEX])
{
    (void)cc;
    char err[256], name[300];
    kf_cache_entry e = {0};
    kf_cache *rw = NULL;
    kf_status st = kf_chain_sig_bytes(spec_json, &e.sig, &e.sig_len, err, sizeof err);
    if (st != KF_OK) {
        kf_runtime_set_error(rt, "%s", err);
        return st;
    }
    kf_chain_def d;
    memset(&d, 0, sizeof d);
    cJSON *spec = cJSON_Parse(spec_json);
    (void)fill_def(spec, &d); /* only its ops are used here */
    cJSON_Delete(spec);
    snprintf(name, sizeof name, "chain: %s", d.ops);
    e.format = KF_CACHE_FORMAT;
    e.contract_version = KF_CONTRACT_VERSION;
    e.op = "kforge::chain";
    e.signature = name;
    e.backend = (char *)backend;
    e.arch = (char *)arch;
    e.toolchain = (char *)toolchain;
    e.torch_version = rt->torch_version;
    e.plugin_version = KF_VERSION_STRING;
    e.source = (char *)source;
    e.launch = (char *)launch_json;
    e.compile_options = (char *)toolchain;
    e.outputs = (char *)outputs_json;
    e.chain = (char *)spec_json;
    e.atol = atol, e.rtol = rtol;
    e.proposer = "hand-written";
    e.job = "";
    e.disabled_reason = "";
    e.created = (double)time(NULL);
    size_t blob_len;
    const void *blob = kf_served_blob(k->served, &blob_len);
    st = kf_cache_open(&rw, rt->cfg.cache_dir, 0);
    if (st == KF_OK) st = kf_cache_insert(rw, &e, blob, blob_len, key);
    if (st == KF_OK) kf_cache_blob_hash(blob, blob_len, blob_hash); /* what the insert recorded */
    if (st != KF_OK) kf_runtime_set_error(rt, "cache %s: %s", rt->cfg.cache_dir, kf_cache_errmsg(rw));
    kf_cache_free(rw);
    free(e.sig);
    return st;
}

kf_status kf_chain_kernel_add(kf_runtime *rt, const char *spec_json, const char *outputs_json,
                              const char *backend, const char *source, const char *launch_json,
                              double atol, double rtol, char *key_out, char **log)
{
    if (log) *log = NULL;
    if (key_out) key_out[0] = 0;
    if (!rt || !spec_json || !backend || !source || !launch_json || !log) return KF_ERR_INVALID;
    char *from_slots = NULL;
    if (!outputs_json) {
        cJSON *probe = cJSON_Parse(spec_json);
        int is_obj = cJSON_IsObject(probe);
        cJSON_Delete(probe);
        if (!is_obj) {
            kf_runtime_set_error(rt, "chain kernel: the spec is not a JSON object");
            return KF_ERR_INVALID;
        }
        outputs_json = from_slots = outputs_from_slots(rt, spec_json);
        if (!from_slots) return KF_ERR_NOT_FOUND;
    }
    kf_status st = add_compiled(rt, spec_json, outputs_json, backend, source, launch_json, atol, rtol,
                                key_out, log);
    free(from_slots);
    return st;
}

static kf_status add_compiled(kf_runtime *rt, const char *spec_json, const char *outputs_json,
                              const char *backend, const char *source, const char *launch_json,
                              double atol, double rtol, char *key_out, char **log)
{
    char err[512];
    if (!kf_source_check_backend(source, backend, err, sizeof err)) {
        kf_runtime_set_error(rt, "chain kernel: %s", err); /* the host compiler checks again after cc -E */
        return KF_ERR_INVALID;
    }
    kf_launch launch;
    kf_status st = kf_launch_parse(launch_json, &launch, err, sizeof err);
    if (st != KF_OK) {
        kf_runtime_set_error(rt, "chain kernel: launch record: %s", err);
        return st;
    }
    const char *toolchain;
    kf_compiler_i *cc = kf_cachelink_compiler(rt, backend, &toolchain);
    if (!cc) return KF_ERR_UNSUPPORTED;
    char arch[128];
    st = cc->arch(cc->self, 0, arch, sizeof arch);
    if (st != KF_OK) {
        kf_runtime_set_error(rt, "chain kernel: %s: cannot tell the target architecture", backend);
        return st;
    }
    void *blob = NULL;
    size_t blob_len = 0;
    st = cc->compile(cc->self, source, &launch, arch, &blob, &blob_len, log);
    if (st != KF_OK) {
        kf_runtime_set_error(rt, "chain kernel: %s compile failed%s%.400s", backend, *log ? ": " : "",
                             *log ? *log : "");
        free(blob);
        return st;
    }
    kf_kernel *k = kf_served_kernel(rt, cc, &launch, blob, blob_len);
    if (!k) return KF_ERR_NOMEM;
    char key[KF_KEY_HEX] = "", blob_hash[KF_KEY_HEX];
    if (key_out) {
        st = insert(rt, spec_json, outputs_json, k, cc, backend, toolchain, arch, source, launch_json, atol,
                    rtol, key, blob_hash);
        if (st != KF_OK) {
            kf_served_free(k->served);
            free(k);
            return st;
        }
        kf_cachelink_mark_attached(rt, key, blob_hash); /* attached below, not again by a reload */
        snprintf(key_out, KF_KEY_HEX, "%s", key);
    }
    st = kf_chainserve_add(rt, spec_json, outputs_json, NULL, 0, k, atol, rtol, key, err, sizeof err);
    if (st != KF_OK) kf_runtime_set_error(rt, "%s", err);
    return st;
}
