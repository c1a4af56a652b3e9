/* The signature table: one slot per distinct signature, read and inserted without locks.
 *
 * Slots are never removed, so a pointer to a slot stays valid for the life of the table. A slot's
 * key bytes are written once, before its state is published with a release store. */
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
    struct kf_kernel *retired_next; /* kept until the runtime is freed: readers may hold it */
} kf_kernel;

enum {
    KF_SLOT_OBSERVED = 1u << 8, /* counted by the op observer, not intercepted */
};

typedef struct kf_slot {
    _Atomic uint64_t hash; /* written before state is READY */
    _Atomic int state;
    uint32_t len, flags;   /* flags: KF_SIG_* | KF_SLOT_* */
    int device_type, device_index;
    uint8_t *key;
    _Atomic uint64_t calls, served, fallback;
    _Atomic uint64_t fb_timed, fb_time_ns; /* sampled eager time */
    _Atomic uint64_t sv_timed, sv_time_ns; /* sampled served time */
    /* The first sample of each, also in the sums: left out of the per-call estimate once there
     * are others, since a first call can cost milliseconds (lazy kernel loading, allocator
     * growth) and would make a tiny op look hot. */
    _Atomic uint64_t fb_first_ns, sv_first_ns;
    _Atomic(kf_kernel *) kernel;
    _Atomic(kf_out_layout *) outs;
    _Atomic int capture_want; /* real calls still to copy for a tuning job (kf_capture_request) */
    /* Fastest sampled eager and served call (0: none), kept across kf_reset_stats: the guard
     * that stops serving a kernel which is slower here than eager (kf_slot_add_sample). */
    _Atomic uint64_t fb_min_ns, sv_min_ns;
    _Atomic int served_slower; /* that guard stopped serving this signature's kernel */
    _Atomic uint64_t guard_n;  /* served samples since the current kernel was attached */
    _Atomic int stopped;       /* why its kernel was detached in this process (KF_STOP_*) */
} kf_slot;

enum { KF_STOP_NONE, KF_STOP_SLOWER, KF_STOP_LAUNCH_FAILED, KF_STOP_CHECK_FAILED, KF_STOP_CHECK_ERROR };

typedef struct kf_sigtable kf_sigtable;

kf_status kf_sigtable_create(kf_sigtable **out, uint32_t capacity_log2);
void kf_sigtable_free(kf_sigtable *t);

/* The slot for this signature, inserting it on first sight. NULL when the table is full. */
kf_slot *kf_sigtable_get(kf_sigtable *t, uint64_t hash, const uint8_t *key, uint32_t len,
                         uint32_t flags, int device_type, int device_index);
/* First slot whose hash equals `hash`, or NULL. */
kf_slot *kf_sigtable_find_hash(kf_sigtable *t, uint64_t hash);

/* Visit every published slot (a concurrent insert may or may not be seen). */
typedef void (*kf_slot_visit_fn)(kf_slot *s, void *user);
void kf_sigtable_each(kf_sigtable *t, kf_slot_visit_fn fn, void *user);

/* Publish the output layout once; later calls leave the first one in place. */
void kf_slot_set_outs(kf_slot *s, const kf_out_layout *layout);

#endif
