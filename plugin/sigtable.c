#include "plugin/sigtable.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

enum { SLOT_EMPTY = 0, SLOT_FILLING = 1, SLOT_READY = 2 };

struct kf_sigtable {
    uint32_t mask;
    kf_slot *slots;
};

kf_status kf_sigtable_create(kf_sigtable **out, uint32_t capacity_log2)
{
    *out = NULL;
    if (capacity_log2 < 4 || capacity_log2 > 24) return KF_ERR_INVALID;
    kf_sigtable *t = calloc(1, sizeof *t);
    if (!t) return KF_ERR_NOMEM;
    t->mask = (1u << capacity_log2) - 1;
    t->slots = calloc((size_t)t->mask + 1, sizeof *t->slots);
    if (!t->slots) {
        free(t);
        return KF_ERR_NOMEM;
    }
    *out = t;
    return KF_OK;
}

void kf_sigtable_free(kf_sigtable *t)
{
    if (!t) return;
    for (uint32_t i = 0; i <= t->mask; i++) {
        kf_slot *s = &t->slots[i];
        free(s->key);
        free(atomic_load(&s->outs));
        /* kernels are owned by the runtime's retired list */
    }
    free(t->slots);
    free(t);
}

static int slot_matches(kf_slot *s, uint64_t hash, const uint8_t *key, uint32_t len)
{
    return atomic_load_explicit(&s->hash, memory_order_relaxed) == hash && s->len == len &&
           memcmp(s->key, key, len) == 0;
}

kf_slot *kf_sigtable_get(kf_sigtable *t, uint64_t hash, const uint8_t *key, uint32_t len,
                         uint32_t flags, int device_type, int device_index)
{
    for (uint32_t probe = 0, i = (uint32_t)hash & t->mask; probe <= t->mask;
         probe++, i = (i + 1) & t->mask) {
        kf_slot *s = &t->slots[i];
        int st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st == SLOT_EMPTY) {
            int expect = SLOT_EMPTY;
            if (atomic_compare_exchange_strong_explicit(&s->state, &expect, SLOT_FILLING,
                                                        memory_order_acq_rel,
                                                        memory_order_acquire)) {
                uint8_t *copy = malloc(len ? len : 1);
                if (!copy) {
                    /* leave the slot claimed but useless rather than racing to undo the claim */
                    atomic_store_explicit(&s->hash, 0, memory_order_relaxed);
                    s->len = 0;
                    s->key = NULL;
                    atomic_store_explicit(&s->state, SLOT_READY, memory_order_release);
                    return NULL;
                }
                memcpy(copy, key, len);
                s->key = copy;
                s->len = len;
                s->flags = flags;
                s->device_type = device_type;
                s->device_index = device_index;
                atomic_store_explicit(&s->hash, hash, memory_order_relaxed);
                atomic_store_explicit(&s->state, SLOT_READY, memory_order_release);
                return s;
            }
            st = expect;
        }
        while (st == SLOT_FILLING) { /* another thread is copying a key: a few instructions */
            sched_yield();
            st = atomic_load_explicit(&s->state, memory_order_acquire);
        }
        if (s->key && slot_matches(s, hash, key, len)) return s;
    }
    return NULL;
}

kf_slot *kf_sigtable_find_hash(kf_sigtable *t, uint64_t hash)
{
    for (uint32_t probe = 0, i = (uint32_t)hash & t->mask; probe <= t->mask;
         probe++, i = (i + 1) & t->mask) {
        kf_slot *s = &t->slots[i];
        int st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st == SLOT_EMPTY) return NULL;
        if (st == SLOT_READY && s->key &&
            atomic_load_explicit(&s->hash, memory_order_relaxed) == hash)
            return s;
    }
    return NULL;
}

void kf_sigtable_each(kf_sigtable *t, kf_slot_visit_fn fn, void *user)
{
    for (uint32_t i = 0; i <= t->mask; i++) {
        kf_slot *s = &t->slots[i];
        if (atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_READY && s->key)
            fn(s, user);
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
