#include "plugin/cachelink.h"
#include "plugin/family.h"
#include "plugin/runtime.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"

/* The signature probe is per thread by nature: it captures the next call made by the thread that
 * asked (kernel_forge.signature_key), whatever other threads are doing. */
static _Thread_local struct {
    int active;
    int done;
    uint64_t key;
    char op[KF_OP_NAME_MAX];
} t_probe;

static int probe_wants(const kf_sig *sig)
{
    size_t n = strlen(t_probe.op);
    return sig->len > n && sig->buf[0] == n && memcmp(sig->buf + 1, t_probe.op, n) == 0;
}

void kf_dispatch_begin(kf_runtime *rt, const kf_sig *sig, kf_call *c)
{
    memset(c, 0, sizeof *c);
    c->gpu_token = -1;
    if (sig->device_type == KF_DEV_CUDA && atomic_load_explicit(&rt->cuda_pending, memory_order_relaxed))
        kf_cachelink_attach_cuda(rt);
    /* not a locked add (a third of this function's time): the online tuner reads only whether
     * the count moved, and a lost increment between threads leaves it moved all the same */
    atomic_store_explicit(&rt->total_calls,
                          atomic_load_explicit(&rt->total_calls, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    uint64_t h = kf_sig_hash(sig->buf, sig->len);
    kf_slot *s = kf_sigtable_get(rt->sigs, h, sig->buf, sig->len, sig->flags, sig->device_type,
                                 sig->device_index);
    if (!s) {
        atomic_fetch_add_explicit(&rt->dropped, 1, memory_order_relaxed);
        return;
    }
    c->slot = s;
    uint64_t n = atomic_fetch_add_explicit(&s->calls, 1, memory_order_relaxed) + 1;
    if ((n & 255) == 1) kf_cachelink_poll(rt); /* new entries from other processes */
    /* a power of two (the default 16) without a division: this runs on every call */
    const uint64_t every = (uint64_t)rt->cfg.sample_every;
    c->time_it = n <= 3 || ((every & (every - 1)) ? n % every : n & (every - 1)) == 0;
    const int servable = !(s->flags & (KF_SIG_TRUNCATED | KF_SIG_UNSERVABLE));
    const kf_out_layout *o = atomic_load_explicit(&s->outs, memory_order_acquire);
    c->outs = o;
    c->learn = servable && !o;
    if (n == 1 && atomic_load_explicit(&rt->n_capture_pending, memory_order_relaxed))
        kf_tuning_apply_pending(rt, s); /* a request made before its first call */
    int want = atomic_load_explicit(&s->capture_want, memory_order_relaxed);
    while (want > 0 && !c->capture)
        c->capture = atomic_compare_exchange_weak(&s->capture_want, &want, want - 1);
    /* the thread-local probe only while some thread has one: a TLS lookup saved per call */
    if (atomic_load_explicit(&rt->probes, memory_order_relaxed) && t_probe.active && !t_probe.done &&
        probe_wants(sig)) {
        t_probe.done = 1;
        t_probe.key = h;
        return; /* a probe always runs eager, so the layout of eager's outputs gets recorded */
    }
    if (!servable || !o || o->n <= 0) return;
    kf_kernel *k = atomic_load_explicit(&s->kernel, memory_order_acquire);
    /* no exact kernel: a family's, looked for once per slot and family generation */
    if (!k && atomic_load_explicit(&s->fam_seen, memory_order_relaxed) !=
                  atomic_load_explicit(&rt->fam_gen, memory_order_relaxed))
        k = kf_family_attach(rt, s, o);
    c->kernel = k;
    if (!k) return;
    c->validate = rt->cfg.validate == KF_VALIDATE_ALWAYS ||
                  !atomic_load_explicit(&k->checked, memory_order_acquire);
    c->poison = atomic_load_explicit(&rt->poison, memory_order_relaxed);
    /* The speed guard needs eager's time, and a kernel may serve from the first call: keep at
     * least one eager sample for every eager_every - 1 served ones (only on timed calls; never
     * for a candidate under verification: every call must be its). */
    if (c->time_it && !c->validate && !k->unguarded && rt->cfg.eager_every > 0) {
        uint64_t fb = atomic_load_explicit(&s->fb_timed, memory_order_relaxed);
        uint64_t sv = atomic_load_explicit(&s->sv_timed, memory_order_relaxed);
        c->eager_sample = fb * (uint64_t)(rt->cfg.eager_every - 1) < sv;
    }
}

/* Stop serving `k` on `s` in this process; 1 for the one caller that did. The kernel itself
 * stays on the runtime's retired list: another thread may still be running it. */
static int detach(kf_slot *s, const kf_kernel *k, int why)
{
    kf_kernel *expect = (kf_kernel *)k;
    if (!s || !k || !atomic_compare_exchange_strong(&s->kernel, &expect, NULL)) return 0;
    atomic_store(&s->stopped, why);
    return 1;
}

void kf_dispatch_start(kf_runtime *rt, kf_call *c, int served, void *stream)
{
    if (!c->slot || !c->time_it) return;
    if (c->slot->device_type == KF_DEV_CUDA)
        c->gpu_token =
            kf_gpu_timer_start(rt->gtimer, stream, c->slot, kf_slot_gen(c->slot), served);
    else if (!served || !c->t0_ns)
        c->t0_ns = kf_now_ns(); /* a served host call may start earlier: kf_call.t0_ns */
}

void kf_dispatch_end(kf_runtime *rt, kf_call *c, int served, void *stream)
{
    kf_slot *s = c->slot;
    if (!s) return;
    if (served) atomic_fetch_add_explicit(&s->served, 1, memory_order_relaxed);
    if (!c->time_it) return;
    if (s->device_type == KF_DEV_CUDA) {
        kf_gpu_timer_stop(rt->gtimer, c->gpu_token, stream);
        return;
    }
    kf_slot_add_sample(s, served, kf_now_ns() - c->t0_ns);
}

static void store_min(_Atomic uint64_t *p, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);
    while ((cur == 0 || v < cur) &&
           !atomic_compare_exchange_weak_explicit(p, &cur, v, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

void kf_slot_add_sample(kf_slot *s, int served, uint64_t ns)
{
    if (atomic_fetch_add_explicit(served ? &s->sv_timed : &s->fb_timed, 1, memory_order_relaxed) == 0)
        atomic_store_explicit(served ? &s->sv_first_ns : &s->fb_first_ns, ns, memory_order_relaxed);
    atomic_fetch_add_explicit(served ? &s->sv_time_ns : &s->fb_time_ns, ns, memory_order_relaxed);
    store_min(served ? &s->sv_min_ns : &s->fb_min_ns, ns ? ns : 1);
    store_min(served ? &s->sv_low_ns : &s->fb_low_ns, ns ? ns : 1);
    /* decided on either kind of sample: the decisive one may be eager's */
    uint64_t n = served ? atomic_fetch_add_explicit(&s->guard_n, 1, memory_order_relaxed) + 1
                        : atomic_load_explicit(&s->guard_n, memory_order_relaxed);
    if (n < KF_SPEED_EARLY_SAMPLES) return;
    uint64_t sv = atomic_load(&s->sv_min_ns), fb = atomic_load(&s->fb_min_ns);
    if (!kf_speed_slower(n, sv, fb)) return;
    kf_kernel *k = atomic_load(&s->kernel);
    if (!k || k->unguarded || !detach(s, k, KF_STOP_SLOWER)) return;
    atomic_store(&s->served_slower, 1);
    char op[KF_OP_NAME_MAX];
    kf_sig_op_name(s->key, s->len, op, sizeof op);
    KF_INFO("the kernel for a %s signature is slower here than eager (fastest call %.1f us vs "
            "%.1f us); eager is used from now on in this process",
            op, (double)sv / 1e3, (double)fb / 1e3);
}

int kf_speed_slower(uint64_t n, uint64_t sv_ns, uint64_t fb_ns)
{
    /* minima: robust to the cold first calls (thread pools, page faults) of either side; a
     * kernel far slower is stopped after a few samples, a marginal one after more */
    if (n < KF_SPEED_EARLY_SAMPLES || !sv_ns || !fb_ns) return 0;
    return (double)sv_ns > (double)fb_ns * (n < KF_SPEED_MIN_SAMPLES ? KF_SPEED_EARLY_MARGIN : KF_SPEED_MARGIN);
}

int kf_kernel_launch(const kf_kernel *k, const kf_tensor *tensors, int n, void *stream)
{
    return k->fn(k->user, tensors, n, stream);
}

void kf_kernel_tolerance(const kf_kernel *k, double *atol, double *rtol)
{
    *atol = k->atol;
    *rtol = k->rtol;
}

void kf_dispatch_checked(kf_runtime *rt, kf_call *c)
{
    (void)rt;
    atomic_store(&((kf_kernel *)c->kernel)->checked, 1);
}

void kf_dispatch_recount_eager(kf_call *c)
{
    if (!c->slot) return;
    atomic_fetch_sub_explicit(&c->slot->served, 1, memory_order_relaxed);
}

void kf_dispatch_reject(kf_runtime *rt, kf_call *c, const char *reason)
{
    const kf_kernel *k = c->kernel;
    detach(c->slot, k, KF_STOP_CHECK_FAILED);
    if (k->family) { /* the entry's own signature was verified: only the family is refused */
        if (!atomic_exchange(&((kf_family *)k->family)->refused, 1))
            KF_WARN("the family %s of cache entry %s serves no further shape in this process",
                    k->family->text, k->family->key_hex);
        return;
    }
    if (!k->cache_key[0]) return;
    kf_cachelink_disable_entry(rt, k->cache_key, reason); /* no later process serves it either */
}

int kf_dispatch_check_error(kf_runtime *rt, kf_call *c)
{
    (void)rt;
    return detach(c->slot, c->kernel, KF_STOP_CHECK_ERROR);
}

int kf_dispatch_launch_failed(kf_runtime *rt, kf_call *c)
{
    (void)rt;
    return detach(c->slot, c->kernel, KF_STOP_LAUNCH_FAILED);
}

int kf_dispatch_take_check_fault(kf_runtime *rt)
{
    int n = atomic_load_explicit(&rt->check_faults, memory_order_relaxed);
    while (n > 0 && !atomic_compare_exchange_weak(&rt->check_faults, &n, n - 1)) {
    }
    return n > 0;
}

void kf_fail_next_checks(kf_runtime *rt, int n)
{
    if (rt) atomic_store(&rt->check_faults, n > 0 ? n : 0);
}

void kf_dispatch_learn_outputs(kf_slot *slot, const kf_out_layout *layout)
{
    kf_slot_set_outs(slot, layout);
}

void kf_dispatch_cancel(kf_runtime *rt, kf_call *c)
{
    if (c->gpu_token >= 0) kf_gpu_timer_cancel(rt->gtimer, c->gpu_token);
    c->gpu_token = -1;
    c->time_it = 0;
}

int kf_dispatch_chains_on(const kf_runtime *rt, const kf_call *c)
{
    return c->slot && atomic_load_explicit(&rt->observer_on, memory_order_relaxed);
}

void kf_dispatch_chain_call(kf_runtime *rt, kf_chain_rec *rec, const kf_call *c, int writes,
                            unsigned fresh, const uintptr_t *in,
                            const uint64_t *seen_at, const uintptr_t *storage,
                            const int64_t *byte_off, int n_in,
                            const uintptr_t *out, int n_out, uint64_t now)
{
    if (!c->slot) return;
    unsigned flags = (writes ? KF_CHAIN_WRITES : 0) | KF_CHAIN_FRESH_MASK(fresh);
    if (!(c->slot->flags & (KF_SIG_TRUNCATED | KF_SIG_UNSERVABLE))) flags |= KF_CHAIN_SERVABLE;
    kf_chain_observe_views(rt->chains, rec, kf_slot_key(c->slot), flags, in, seen_at, storage, byte_off, n_in,
                           out, n_out, now);
}

void kf_dispatch_done(kf_runtime *rt, kf_call *c)
{
    (void)rt;
    kf_slot_unpin(c->slot); /* from here on the slot may be recycled for another signature */
    c->slot = NULL;
}

void kf_dispatch_observed(kf_runtime *rt, const char *name, uint64_t ns, uint64_t weight)
{
    kf_sig sig;
    kf_sig_begin(&sig, name);
    uint64_t h = kf_sig_hash(sig.buf, sig.len);
    kf_slot *s = kf_sigtable_get(rt->sigs, h, sig.buf, sig.len, sig.flags | KF_SLOT_OBSERVED,
                                 -1, 0);
    if (!s) {
        atomic_fetch_add_explicit(&rt->dropped, 1, memory_order_relaxed);
        return;
    }
    atomic_fetch_add_explicit(&s->calls, weight, memory_order_relaxed);
    if (atomic_fetch_add_explicit(&s->fb_timed, 1, memory_order_relaxed) == 0)
        atomic_store_explicit(&s->fb_first_ns, ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->fb_time_ns, ns, memory_order_relaxed);
    kf_slot_unpin(s);
}

void kf_probe_begin(kf_runtime *rt, const char *op)
{
    if (rt && !t_probe.active) atomic_fetch_add(&rt->probes, 1);
    memset(&t_probe, 0, sizeof t_probe);
    strncpy(t_probe.op, op, sizeof t_probe.op - 1);
    t_probe.active = 1;
}

kf_status kf_probe_end(kf_runtime *rt, uint64_t *key)
{
    if (rt && t_probe.active) atomic_fetch_sub(&rt->probes, 1);
    int done = t_probe.done;
    *key = t_probe.key;
    memset(&t_probe, 0, sizeof t_probe);
    return done ? KF_OK : KF_ERR_NOT_FOUND;
}

static kf_status register_pinned(kf_runtime *rt, kf_slot *s, uint64_t key, kf_kernel_fn fn,
                                 void *user);

kf_status kf_register_kernel(kf_runtime *rt, uint64_t key, kf_kernel_fn fn, void *user)
{
    if (!rt) return KF_ERR_INVALID;
    kf_slot *s = kf_sigtable_find_hash(rt->sigs, key);
    kf_status st = register_pinned(rt, s, key, fn, user);
    kf_slot_unpin(s);
    return st;
}

static kf_status register_pinned(kf_runtime *rt, kf_slot *s, uint64_t key, kf_kernel_fn fn,
                                 void *user)
{
    if (!s || (s->flags & KF_SLOT_OBSERVED)) {
        kf_runtime_set_error(rt, "no intercepted signature with key %016llx has been seen",
                             (unsigned long long)key);
        return KF_ERR_NOT_FOUND;
    }
    if (fn && (s->flags & (KF_SIG_TRUNCATED | KF_SIG_UNSERVABLE))) {
        kf_runtime_set_error(rt, "signature %016llx has arguments a kernel cannot take",
                             (unsigned long long)key);
        return KF_ERR_UNSUPPORTED;
    }
    const kf_out_layout *outs = atomic_load(&s->outs);
    if (fn && !outs) {
        kf_runtime_set_error(rt, "signature %016llx has no recorded eager outputs "
                             "(it was never completed by eager)", (unsigned long long)key);
        return KF_ERR_UNSUPPORTED;
    }
    if (fn && outs->n <= 0) {
        kf_runtime_set_error(rt, "signature %016llx has outputs a kernel cannot produce "
                             "(non-tensor returns, or an out= tensor that eager resized)",
                             (unsigned long long)key);
        return KF_ERR_UNSUPPORTED;
    }
    kf_kernel *k = NULL;
    if (fn) {
        k = calloc(1, sizeof *k);
        if (!k) return KF_ERR_NOMEM;
        k->fn = fn;
        k->user = user;
        atomic_store(&k->checked, 1); /* registered directly: trusted as is, no first-use check */
    }
    kf_cachelink_set_kernel(rt, s, k);
    if (k) { /* its op's calls made inside other ops are looked at from now on */
        char op[KF_OP_NAME_MAX];
        kf_sig_op_name(s->key, s->len, op, sizeof op);
        kf_cachelink_note_op(rt, op);
    }
    KF_INFO("kernel %s for signature %016llx", fn ? "registered" : "removed",
            (unsigned long long)key);
    return KF_OK;
}

uint64_t kf_slot_key(const kf_slot *slot)
{
    return atomic_load_explicit(&((kf_slot *)slot)->hash, memory_order_relaxed);
}
