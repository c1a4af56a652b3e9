/* Shape families (docs/architecture.md, "Shape families"): a cache entry whose kernel reads
 * some sizes at launch (its launch record's "ints") may state a family, the shapes it also
 * serves. A family frees some dims of some kernel arguments (every other dim, every stride,
 * dtype, device, alignment and scalar stays the entry's signature's); the freed tensors must be
 * contiguous, share their free dims' sizes, and the product of the free dims (the extent: rows
 * for a row-wise op) must lie in [min, max] and be a multiple of multiple_of.
 *
 * The record is untrusted (cache/bundle input): kf_family_parse checks it against the entry's
 * own signature, output layout and launch record. A signature is matched against families once
 * per slot (and again when a family is added), never per call: the slot then holds a kernel of
 * its own (own first-use check, own speed guard) that launches the entry's compiled code. */
#ifndef KF_PLUGIN_FAMILY_H
#define KF_PLUGIN_FAMILY_H

#include <stdatomic.h>
#include <stdint.h>

#include "cache/cache.h"
#include "compile/compiler.h"
#include "plugin/layout.h"

typedef struct kf_runtime kf_runtime;
typedef struct kf_slot kf_slot;
typedef struct kf_kernel kf_kernel;
typedef struct kf_served kf_served;

#define KF_FAMILY_TEXT_MAX 256

typedef struct kf_family {
    char key_hex[KF_KEY_HEX]; /* the cache entry that states it */
    uint8_t *sig;             /* the entry's signature (owned) */
    uint32_t sig_len;
    kf_out_layout outs;       /* the entry's output layout */
    uint32_t tensors;         /* kernel arguments (inputs, then fresh outputs) with free dims */
    uint32_t free_dims;       /* dim indices free in each of them */
    int64_t min, max, multiple_of; /* of the extent: the product of the free dims */
    double atol, rtol;        /* the entry's first-use tolerance */
    double kernel_us, eager_us; /* the entry's times at its own signature */
    kf_served *served;        /* the entry's compiled kernel (owned by the entry's kf_kernel) */
    _Atomic int refused;      /* a member disagreed with eager, or the entry was disabled */
    char text[KF_FAMILY_TEXT_MAX]; /* "_softmax(f32[*,1000], dim=-1, half_to_float=False)" */
    struct kf_family *next;
} kf_family;

/* Parse and check a "family" record against its entry (sig, outs, launch). On failure err says
 * why and *out is NULL. The result owns a copy of sig; kf_family_free. */
kf_status kf_family_parse(const char *json, const uint8_t *sig, uint32_t sig_len,
                          const kf_out_layout *outs, const kf_launch *launch, kf_family **out,
                          char *err, size_t errcap);
void kf_family_free(kf_family *f);

/* 1 when a call with signature (sig, len) and eager outputs `outs` is a member of f (and sets
 * *extent), 0 otherwise. */
int kf_family_match(const kf_family *f, const uint8_t *sig, uint32_t len,
                    const kf_out_layout *outs, int64_t *extent);

/* The family text of f, formatted with `argnames` (the op's schema names; may be NULL). */
void kf_family_format(kf_family *f, const char *const *argnames, int n_argnames);

/* The runtime's families (prepended, never removed before kf_runtime_free; readers walk the list
 * without a lock). kf_family_add parses entry e's record and publishes it (a bad record: one
 * warning, the entry still serves its own signature). */
void kf_family_add(kf_runtime *rt, const kf_cache_entry *e, kf_served *served,
                   const kf_launch *launch, const kf_out_layout *outs);
void kf_family_free_all(kf_runtime *rt);
/* The entry was disabled: its family serves no new shape, and stops serving the shapes it did. */
void kf_family_disable(kf_runtime *rt, const char *key_hex);

/* On a call whose slot has no kernel and has not looked at the current families yet: a kernel of
 * the first family the slot is a member of, put on the slot (NULL: none, or another thread is
 * looking). `outs` is the slot's eager layout. */
kf_kernel *kf_family_attach(kf_runtime *rt, kf_slot *s, const kf_out_layout *outs);

#endif
