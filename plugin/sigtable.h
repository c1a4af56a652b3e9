/* The signature table: one slot per distinct signature, read and inserted without locks, with a
 * bounded size (a decode loop with a growing KV cache makes new signatures for ever).
 *
 * Set-associative: a signature lives in one of KF_SIGTABLE_WAYS slots of the set its hash picks,
 * so a lookup or an insert looks at one set, never the whole table. When a set is full, an insert
 * recycles a cold slot of it (CLOCK: a slot called since the hand last passed it gets a second
 * chance), folding its counters into the table's "evicted" totals.
 *
 * Why recycling is safe with lock-free readers: slot memory is never freed before the table, and
 * every lookup returns the slot *pinned* (a count in its control word, taken by the same atomic
 * add that checks the slot is READY). A slot is recycled only by a compare-and-swap that expects
 * zero pins, so while anyone holds a pin its key, layout and counters stay the signature they
 * were. Holders unpin when done (kf_slot_unpin; the dispatcher at the end of the call). A slot
 * with a kernel or a pending capture request is never recycled. Recycling bumps the slot's
 * generation, so a late GPU timing sample (which holds no pin) can tell it is stale. A pin that is
 * never released only keeps that slot from being recycled. */
#ifndef KF_PLUGIN_SIGTABLE_H
#define KF_PLUGIN_SIGTABLE_H

#include <stdatomic.h>
#include <stdint.h>

#include "kforge.h"
#include "plugin/layout.h"

typedef struct kf_served kf_served;

typedef struct kf_kernel {
    kf_kernel_fn fn;
    void *user;
    _Atomic int checked;   /* passed the first-use check in this process (or needs none) */
    int unguarded;         /* a candidate under verification: the speed guard leaves it */
    double atol, rtol;     /* the tolerance of that check */
    char cache_key[33];    /* the cache entry it came from; "" when registered directly */
    kf_served *served;     /* the compiled kernel behind fn, when it is ours (owned) */
    const struct kf_family *family; /* serving a member of this family (plugin/family.h) */
    struct kf_kernel *retired_next; /* kept until the runtime is freed: readers may hold it */
} kf_kernel;

enum {
    KF_SLOT_OBSERVED = 1u << 8, /* counted by the op observer, not intercepted */
};

#define KF_SIGTABLE_WAYS 16

typedef struct kf_slot {
    _Atomic uint64_t hash; /* written before state is READY */
    _Atomic uint64_t ctl;  /* pins (bits 0-31), state (32-33), generation (34-63): sigtable.c */
    uint32_t len, flags;   /* flags: KF_SIG_* | KF_SLOT_* */
    int device_type, device_index;
    uint8_t *key;
    /* fallback (ran eager) is calls - served (kf_slot_fallback): one atomic add less per call */
    _Atomic uint64_t calls, served;
    _Atomic uint64_t fb_timed, fb_time_ns; /* sampled eager time */
    _Atomic uint64_t sv_timed, sv_time_ns; /* sampled served time */
    /* The first sample of each, also in the sums: left out of the per-call estimate once there
     * are others, since a first call can cost milliseconds (lazy kernel loading, allocator
     * growth) and would make a tiny op look hot. */
    _Atomic uint64_t fb_first_ns, sv_first_ns;
    /* The fastest sample of each since the stats were reset: the estimate's outlier clip. */
    _Atomic uint64_t fb_low_ns, sv_low_ns;
    _Atomic(kf_kernel *) kernel;
    _Atomic(kf_out_layout *) outs;
    _Atomic int capture_want; /* real calls still to copy for a tuning job (kf_capture_request) */
    /* Fastest sampled eager and served call (0: none), kept across kf_reset_stats: the guard
     * that stops serving a kernel which is slower here than eager (kf_slot_add_sample). */
    _Atomic uint64_t fb_min_ns, sv_min_ns;
    _Atomic int served_slower; /* that guard stopped serving this signature's kernel */
    _Atomic uint64_t guard_n;  /* served samples since the current kernel was attached */
    _Atomic int stopped;       /* why its kernel was detached in this process (KF_STOP_*) */
    _Atomic uint64_t clock_calls; /* `calls` when the eviction hand last looked (second chance) */
    uint32_t key_cap;             /* bytes allocated at `key` (reused when the slot is recycled) */
    _Atomic uint32_t fam_seen;    /* the runtime's fam_gen when it last looked for a family */
} kf_slot;

enum { KF_STOP_NONE, KF_STOP_SLOWER, KF_STOP_LAUNCH_FAILED, KF_STOP_CHECK_FAILED, KF_STOP_CHECK_ERROR };

typedef struct kf_sigtable kf_sigtable;

/* 2^capacity_log2 slots, 4 <= capacity_log2 <= 24. */
kf_status kf_sigtable_create(kf_sigtable **out, uint32_t capacity_log2);
void kf_sigtable_free(kf_sigtable *t);
uint32_t kf_sigtable_capacity(const kf_sigtable *t);

/* The slot for this signature, pinned, inserting it on first sight (recycling a cold slot of its
 * set when the set is full). NULL (nothing pinned) when no slot of the set can be recycled now:
 * all pinned, holding kernels, or another thread is recycling in that set. */
kf_slot *kf_sigtable_get(kf_sigtable *t, uint64_t hash, const uint8_t *key, uint32_t len,
                         uint32_t flags, int device_type, int device_index);
/* The slot whose hash equals `hash`, pinned, or NULL. */
kf_slot *kf_sigtable_find_hash(kf_sigtable *t, uint64_t hash);
/* Give back the pin of a slot returned by get or find_hash (NULL: a no-op). */
void kf_slot_unpin(kf_slot *s);
/* The slot's generation (changes when it is recycled), and a pin taken only if it still holds
 * generation `gen` (1) or not at all (0). */
uint32_t kf_slot_gen(const kf_slot *s);
int kf_slot_pin_gen(kf_slot *s, uint32_t gen);

/* Visit every published slot, pinned during the call (a concurrent insert may or may not be
 * seen). */
typedef void (*kf_slot_visit_fn)(kf_slot *s, void *user);
void kf_sigtable_each(kf_sigtable *t, kf_slot_visit_fn fn, void *user);

/* What recycled slots had recorded, split by how their time was measured, so the totals stay
 * honest after eviction. `rows` counts recycled slots that had calls. */
typedef struct kf_evicted {
    uint64_t rows, calls, served, fallback;
    double time_ns; /* estimated as for a live row (kf_slot_estimated_ns) */
} kf_evicted;
void kf_sigtable_evicted(kf_sigtable *t, kf_evicted *host, kf_evicted *device);
void kf_sigtable_reset_evicted(kf_sigtable *t);

/* Mean sampled ns per call, without the first sample once there are others (see above); -1
 * without samples. And a slot's estimated total time: sampled means (at most 4x the fastest
 * sample: an outlier from other work on the machine is left out) times the call counts. */
double kf_slot_per_call_ns(_Atomic uint64_t *sum, _Atomic uint64_t *n, _Atomic uint64_t *first);
/* Calls that ran eager (or are running, or raised): those not served. */
static inline uint64_t kf_slot_fallback(kf_slot *s)
{
    uint64_t c = atomic_load_explicit(&s->calls, memory_order_relaxed);
    uint64_t v = atomic_load_explicit(&s->served, memory_order_relaxed);
    return c > v ? c - v : 0;
}

double kf_slot_estimated_ns(kf_slot *s);

/* Publish the output layout once; later calls leave the first one in place. */
void kf_slot_set_outs(kf_slot *s, const kf_out_layout *layout);

#endif
