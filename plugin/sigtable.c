#include "plugin/sigtable.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* The control word of a slot (sigtable.h says why readers pin). */
enum { SLOT_EMPTY = 0, SLOT_FILLING = 1, SLOT_READY = 2 };
#define CTL_PINS 0xffffffffull
#define CTL_STATE_SHIFT 32
#define CTL_GEN_SHIFT 34
#define CTL(state, gen) \
    (((uint64_t)(state) << CTL_STATE_SHIFT) | ((uint64_t)(gen) << CTL_GEN_SHIFT))
/* Added to the word: EMPTY -> FILLING, FILLING -> READY, keeping pins and generation. */
#define CTL_CLAIM ((uint64_t)SLOT_FILLING << CTL_STATE_SHIFT)
#define CTL_PUBLISH ((uint64_t)(SLOT_READY - SLOT_FILLING) << CTL_STATE_SHIFT)

static int ctl_state(uint64_t c) { return (int)((c >> CTL_STATE_SHIFT) & 3); }
static uint32_t ctl_gen(uint64_t c) { return (uint32_t)(c >> CTL_GEN_SHIFT); }

typedef struct kf_set {
    _Atomic int evicting; /* one recycler per set: two could put one signature in two slots */
    uint32_t hand;        /* the CLOCK hand, only touched by the recycler */
} kf_set;

enum { EV_HOST = 0, EV_DEVICE = 1 };

struct kf_sigtable {
    uint32_t set_mask;
    kf_slot *slots;         /* (set_mask + 1) * KF_SIGTABLE_WAYS */
    _Atomic uint64_t *tags; /* each slot's hash, written before it is READY: a hint for the scan */
    kf_set *sets;
    struct {
        _Atomic uint64_t rows, calls, served, fallback, time_ns;
    } ev[2];
};

kf_status kf_sigtable_create(kf_sigtable **out, uint32_t capacity_log2)
{
    *out = NULL;
    if (capacity_log2 < 4 || capacity_log2 > 24) return KF_ERR_INVALID;
    kf_sigtable *t = calloc(1, sizeof *t);
    if (!t) return KF_ERR_NOMEM;
    size_t n = (size_t)1 << capacity_log2;
    t->set_mask = (uint32_t)(n / KF_SIGTABLE_WAYS) - 1;
    t->slots = calloc(n, sizeof *t->slots);
    t->tags = calloc(n, sizeof *t->tags);
    t->sets = calloc(n / KF_SIGTABLE_WAYS, sizeof *t->sets);
    if (!t->slots || !t->tags || !t->sets) {
        kf_sigtable_free(t);
        return KF_ERR_NOMEM;
    }
    *out = t;
    return KF_OK;
}

void kf_sigtable_free(kf_sigtable *t)
{
    if (!t) return;
    for (uint32_t i = 0; t->slots && i < kf_sigtable_capacity(t); i++) {
        kf_slot *s = &t->slots[i];
        free(s->key);
        free(atomic_load(&s->outs));
        /* kernels are owned by the runtime's retired list */
    }
    free(t->slots);
    free((void *)t->tags);
    free(t->sets);
    free(t);
}

uint32_t kf_sigtable_capacity(const kf_sigtable *t)
{
    return (t->set_mask + 1) * KF_SIGTABLE_WAYS;
}

static int slot_matches(kf_slot *s, uint64_t hash, const uint8_t *key, uint32_t len)
{
    return atomic_load_explicit(&s->hash, memory_order_relaxed) == hash && s->len == len &&
           s->key && memcmp(s->key, key, len) == 0;
}

void kf_slot_unpin(kf_slot *s)
{
    if (s) atomic_fetch_sub_explicit(&s->ctl, 1, memory_order_release);
}

/* Pin, and keep the pin if the slot is READY (and holds this key, when one is given). The add
 * that pins also tells the state, so no recycler can slip in between the check and the pin. */
static int pin_ready(kf_slot *s, const uint8_t *key, uint64_t hash, uint32_t len, int *state)
{
    uint64_t c = atomic_fetch_add_explicit(&s->ctl, 1, memory_order_acquire);
    if (state) *state = ctl_state(c);
    if (ctl_state(c) == SLOT_READY &&
        (key ? slot_matches(s, hash, key, len)
             : atomic_load_explicit(&s->hash, memory_order_relaxed) == hash))
        return 1;
    kf_slot_unpin(s);
    return 0;
}

uint32_t kf_slot_gen(const kf_slot *s)
{
    return ctl_gen(atomic_load_explicit(&((kf_slot *)s)->ctl, memory_order_relaxed));
}

int kf_slot_pin_gen(kf_slot *s, uint32_t gen)
{
    uint64_t c = atomic_fetch_add_explicit(&s->ctl, 1, memory_order_acquire);
    if (ctl_state(c) == SLOT_READY && ctl_gen(c) == gen) return 1;
    kf_slot_unpin(s);
    return 0;
}

/* The slot is ours (FILLING): write the signature, then publish it READY with one pin. */
static kf_slot *fill(kf_sigtable *t, kf_slot *s, uint64_t hash, const uint8_t *key, uint32_t len,
                     uint32_t flags, int device_type, int device_index)
{
    if (!s->key || s->key_cap < len) {
        uint8_t *copy = malloc(len ? len : 1);
        if (copy) {
            free(s->key);
            s->key = copy;
            s->key_cap = len ? len : 1;
        }
    }
    int ok = s->key && s->key_cap >= len;
    if (ok) {
        memcpy(s->key, key, len);
    } else { /* out of memory: a slot no key matches, recycled later like any cold one */
        free(s->key);
        s->key = NULL;
        s->key_cap = 0;
    }
    s->len = ok ? len : 0;
    s->flags = flags;
    s->device_type = device_type;
    s->device_index = device_index;
    /* its first call is no reference: a one-off shape is the first to go, not a hot one */
    atomic_store_explicit(&s->clock_calls, 1, memory_order_relaxed);
    atomic_store_explicit(&s->hash, ok ? hash : 0, memory_order_relaxed);
    atomic_store_explicit(&t->tags[s - t->slots], ok ? hash : 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->ctl, CTL_PUBLISH + 1, memory_order_release);
    if (ok) return s;
    kf_slot_unpin(s);
    return NULL;
}

double kf_slot_per_call_ns(_Atomic uint64_t *sum, _Atomic uint64_t *n, _Atomic uint64_t *first)
{
    uint64_t c = atomic_load(n), t = atomic_load(sum), f = atomic_load(first);
    if (!c) return -1;
    if (c >= 2 && f <= t) return (double)(t - f) / (double)(c - 1);
    return (double)t / (double)c;
}

/* A sample stretched by other work on the machine (a preempted thread: a hundred calls' time)
 * would make its row look hot and push every other one under --min-share: for the estimate, a
 * row's mean counts at most KF_OUTLIER_X times its fastest sample. */
#define KF_OUTLIER_X 4.0

static double clipped(double mean, _Atomic uint64_t *min)
{
    const double m = (double)atomic_load_explicit(min, memory_order_relaxed);
    return m > 0 && mean > KF_OUTLIER_X * m ? KF_OUTLIER_X * m : mean;
}

double kf_slot_estimated_ns(kf_slot *s)
{
    uint64_t fb = kf_slot_fallback(s), sv = atomic_load(&s->served);
    double fbn = clipped(kf_slot_per_call_ns(&s->fb_time_ns, &s->fb_timed, &s->fb_first_ns), &s->fb_low_ns);
    double svn = clipped(kf_slot_per_call_ns(&s->sv_time_ns, &s->sv_timed, &s->sv_first_ns), &s->sv_low_ns);
    return (fbn > 0 ? fbn * (double)fb : 0) + (svn > 0 ? svn * (double)sv : 0);
}

/* The slot is ours and unpinned: fold what it recorded into the totals, and clear it. */
static void recycle(kf_sigtable *t, kf_slot *s)
{
    uint64_t calls = atomic_load_explicit(&s->calls, memory_order_relaxed);
    if (calls) {
        int cuda = s->device_type == KF_DEV_CUDA && !(s->flags & KF_SLOT_OBSERVED);
        int d = cuda ? EV_DEVICE : EV_HOST;
        atomic_fetch_add(&t->ev[d].rows, 1);
        atomic_fetch_add(&t->ev[d].calls, calls);
        atomic_fetch_add(&t->ev[d].served, atomic_load(&s->served));
        atomic_fetch_add(&t->ev[d].fallback, kf_slot_fallback(s));
        atomic_fetch_add(&t->ev[d].time_ns, (uint64_t)kf_slot_estimated_ns(s));
    }
    free(atomic_load(&s->outs));
    atomic_store(&s->outs, NULL);
    _Atomic uint64_t *zero[] = {&s->calls, &s->served, &s->fb_timed, &s->fb_time_ns,
                                &s->sv_timed, &s->sv_time_ns, &s->fb_first_ns, &s->sv_first_ns,
                                &s->fb_min_ns, &s->sv_min_ns, &s->clock_calls, &s->guard_n,
                                &s->fb_low_ns, &s->sv_low_ns};
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++) atomic_store(zero[i], 0);
    atomic_store(&s->served_slower, 0);
    atomic_store(&s->stopped, KF_STOP_NONE); /* the speed guard's verdict was on the old signature */
    atomic_store(&s->capture_want, 0);
    atomic_store(&s->fam_seen, 0); /* a new signature looks at the families again */
}

/* Under the set's `evicting` flag: take the next cold, unpinned slot without a kernel. */
static kf_slot *take_victim(kf_sigtable *t, kf_set *set, kf_slot *ways)
{
    for (uint32_t i = 0; i < 2 * KF_SIGTABLE_WAYS; i++) {
        uint32_t w = (set->hand + i) % KF_SIGTABLE_WAYS;
        kf_slot *s = &ways[w];
        uint64_t c = atomic_load_explicit(&s->ctl, memory_order_acquire);
        if (ctl_state(c) != SLOT_READY || (c & CTL_PINS)) continue;
        if (atomic_load(&s->kernel) || atomic_load(&s->capture_want) > 0) continue;
        uint64_t calls = atomic_load_explicit(&s->calls, memory_order_relaxed);
        if (calls != atomic_load_explicit(&s->clock_calls, memory_order_relaxed)) {
            atomic_store_explicit(&s->clock_calls, calls, memory_order_relaxed);
            continue; /* called since the hand last passed: a second chance */
        }
        uint64_t want = CTL(SLOT_READY, ctl_gen(c));
        uint64_t mine = CTL(SLOT_FILLING, ctl_gen(c) + 1);
        if (!atomic_compare_exchange_strong_explicit(&s->ctl, &want, mine, memory_order_acq_rel,
                                                     memory_order_relaxed))
            continue; /* pinned meanwhile */
        /* a pinned holder may have set a kernel or a capture request just before its unpin */
        if (atomic_load(&s->kernel) || atomic_load(&s->capture_want) > 0) {
            atomic_fetch_add_explicit(&s->ctl, CTL_PUBLISH, memory_order_release);
            continue;
        }
        set->hand = (w + 1) % KF_SIGTABLE_WAYS;
        recycle(t, s);
        return s;
    }
    return NULL;
}

static kf_slot *insert_evicting(kf_sigtable *t, uint32_t set_i, uint64_t hash, const uint8_t *key,
                                uint32_t len, uint32_t flags, int device_type, int device_index)
{
    kf_set *set = &t->sets[set_i];
    kf_slot *ways = &t->slots[(size_t)set_i * KF_SIGTABLE_WAYS];
    int idle = 0;
    if (!atomic_compare_exchange_strong(&set->evicting, &idle, 1))
        return NULL; /* never wait on the hot path: this call goes unrecorded */
    kf_slot *got = NULL;
    /* another recycler may have inserted this very key before we got the flag */
    for (int w = 0; w < KF_SIGTABLE_WAYS && !got; w++)
        if (pin_ready(&ways[w], key, hash, len, NULL)) got = &ways[w];
    if (!got) {
        kf_slot *s = take_victim(t, set, ways);
        if (s) got = fill(t, s, hash, key, len, flags, device_type, device_index);
    }
    atomic_store(&set->evicting, 0);
    return got;
}

kf_slot *kf_sigtable_get(kf_sigtable *t, uint64_t hash, const uint8_t *key, uint32_t len,
                         uint32_t flags, int device_type, int device_index)
{
    uint32_t set_i = (uint32_t)hash & t->set_mask;
    size_t base = (size_t)set_i * KF_SIGTABLE_WAYS;
    kf_slot *ways = &t->slots[base];
    /* the fast path: the tags of one set (128 bytes), then the one slot that matches */
    for (int w = 0; w < KF_SIGTABLE_WAYS; w++)
        if (atomic_load_explicit(&t->tags[base + w], memory_order_relaxed) == hash &&
            pin_ready(&ways[w], key, hash, len, NULL))
            return &ways[w];
    /* Not seen (or being published): slots of a set fill in order and are never emptied, so
     * the first EMPTY one ends the set, and two threads inserting one key meet on it. */
    for (int w = 0; w < KF_SIGTABLE_WAYS; w++) {
        kf_slot *s = &ways[w];
        uint64_t c = atomic_load_explicit(&s->ctl, memory_order_acquire);
        for (;;) {
            if (ctl_state(c) == SLOT_EMPTY) {
                if (atomic_compare_exchange_weak_explicit(&s->ctl, &c, c + CTL_CLAIM,
                                                          memory_order_acquire,
                                                          memory_order_acquire))
                    return fill(t, s, hash, key, len, flags, device_type, device_index);
                continue;
            }
            if (ctl_state(c) == SLOT_READY) break;
            sched_yield(); /* another thread is writing a key: a few instructions */
            c = atomic_load_explicit(&s->ctl, memory_order_acquire);
        }
        if (pin_ready(s, key, hash, len, NULL)) return s;
    }
    return insert_evicting(t, set_i, hash, key, len, flags, device_type, device_index);
}

kf_slot *kf_sigtable_find_hash(kf_sigtable *t, uint64_t hash)
{
    kf_slot *ways = &t->slots[(size_t)((uint32_t)hash & t->set_mask) * KF_SIGTABLE_WAYS];
    for (int w = 0; w < KF_SIGTABLE_WAYS; w++) {
        kf_slot *s = &ways[w];
        if (atomic_load_explicit(&s->hash, memory_order_relaxed) != hash) continue;
        if (pin_ready(s, NULL, hash, 0, NULL)) {
            if (s->key) return s;
            kf_slot_unpin(s);
        }
    }
    return NULL;
}

void kf_sigtable_each(kf_sigtable *t, kf_slot_visit_fn fn, void *user)
{
    for (uint32_t i = 0; i < kf_sigtable_capacity(t); i++) {
        kf_slot *s = &t->slots[i];
        uint64_t c = atomic_fetch_add_explicit(&s->ctl, 1, memory_order_acquire);
        if (ctl_state(c) == SLOT_READY && s->key) fn(s, user);
        kf_slot_unpin(s);
    }
}

void kf_sigtable_evicted(kf_sigtable *t, kf_evicted *host, kf_evicted *device)
{
    kf_evicted *out[2] = {host, device};
    for (int d = 0; d < 2; d++) {
        if (!out[d]) continue;
        out[d]->rows = atomic_load(&t->ev[d].rows);
        out[d]->calls = atomic_load(&t->ev[d].calls);
        out[d]->served = atomic_load(&t->ev[d].served);
        out[d]->fallback = atomic_load(&t->ev[d].fallback);
        out[d]->time_ns = (double)atomic_load(&t->ev[d].time_ns);
    }
}

void kf_sigtable_reset_evicted(kf_sigtable *t)
{
    for (int d = 0; d < 2; d++) {
        atomic_store(&t->ev[d].rows, 0);
        atomic_store(&t->ev[d].calls, 0);
        atomic_store(&t->ev[d].served, 0);
        atomic_store(&t->ev[d].fallback, 0);
        atomic_store(&t->ev[d].time_ns, 0);
    }
}

void kf_slot_set_outs(kf_slot *s, const kf_out_layout *layout)
{
    if (atomic_load_explicit(&s->outs, memory_order_acquire)) return;
    kf_out_layout *copy = malloc(sizeof *copy);
    if (!copy) return;
    *copy = *layout;
    kf_out_layout *expect = NULL;
    if (!atomic_compare_exchange_strong(&s->outs, &expect, copy)) free(copy);
}
