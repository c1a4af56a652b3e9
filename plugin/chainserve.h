/* Chain entries (docs/chains.md): a kernel computing every member of a recorded chain at once,
 * attached to the chain's head signature. torch_ext (chainserve.cpp) runs the serving state
 * machine; this side validates entries (untrusted: cache files, bundles, the caller of
 * kf_chain_kernel_add), holds them, their state and counters.
 *
 * Entries are prepended to the runtime's list under rt->lock and never freed before the
 * runtime, so readers walk it without a lock. Per call, while no entry exists, the hot path pays
 * one relaxed load (kf_chainserve_active). */
#ifndef KF_PLUGIN_CHAINSERVE_H
#define KF_PLUGIN_CHAINSERVE_H

#include <stddef.h>
#include <stdint.h>

#include "common/chain_sig.h"
#include "kforge.h"
#include "plugin/layout.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kf_kernel kf_kernel;
typedef struct kf_chain_entry kf_chain_entry;

/* What an entry says about its chain; immutable once the entry is published. */
typedef struct kf_chain_def {
    int n, n_head, n_ext, n_outputs;
    uint64_t key[KF_CHAIN_SPEC_MAX_MEMBERS]; /* the members' signature keys */
    int n_in[KF_CHAIN_SPEC_MAX_MEMBERS];
    uint8_t ref[KF_CHAIN_SPEC_MAX_MEMBERS][KF_CHAIN_SPEC_MAX_INPUTS][3]; /* kind, a, b */
    kf_out_layout outs[KF_CHAIN_SPEC_MAX_MEMBERS]; /* eager's outputs of each member */
    /* per external: -1, predicted from an earlier run; else the head's input it is a view of
     * (taken at the head: rotary's halves of q), at view_off bytes from that input's offset,
     * with the sizes and strides the member reading it has in its signature */
    int8_t view_head[KF_CHAIN_SPEC_MAX_EXT];
    int64_t view_off[KF_CHAIN_SPEC_MAX_EXT];
    int8_t view_ndim[KF_CHAIN_SPEC_MAX_EXT];
    int64_t view_sizes[KF_CHAIN_SPEC_MAX_EXT][KF_MAX_DIMS], view_strides[KF_CHAIN_SPEC_MAX_EXT][KF_MAX_DIMS];
    double atol, rtol;                             /* of the first-use check */
    int deferred;                                  /* its kernel runs at the last member */
    /* per member: -1, or (deferred mode's in-place member, ResNet's relu_ after a batch norm) the
     * member whose output it writes in place, its own output that tensor, not a kernel argument */
    int8_t writes_of[KF_CHAIN_SPEC_MAX_MEMBERS];
    char op[KF_CHAIN_SPEC_MAX_MEMBERS][64];        /* each member's op, "aten::mul.Tensor" */
    char ops[256];                                 /* "pow -> mean -> add -> ..." */
} kf_chain_def;

enum { KF_CHAIN_CHECKING = 0, KF_CHAIN_SERVING = 1, KF_CHAIN_REFUSED = 2 };
/* KF_CHAIN_SKIPPED: heads observed, not served, because the thread predicted, from the outcomes
 * of its last heads, that the chain would not complete at this place of the model */
/* KF_CHAIN_OBSERVED: heads whose run was observed (members run as without the chain, the
 * outcome and externals learnt), skipped ones included */
/* KF_CHAIN_MISPREDICTED: runs that completed after a predicted external turned out to be another
 * tensor (the chain at another place of the model, with another weight): the kernel ran in vain
 * at the head, and the run was observed from that member on */
enum { KF_CHAIN_HEADS, KF_CHAIN_COMPLETED, KF_CHAIN_DROPPED, KF_CHAIN_SKIPPED, KF_CHAIN_OBSERVED,
       KF_CHAIN_MISPREDICTED, KF_CHAIN_N_COUNTERS };

#define KF_CHAIN_MAX_ARGS 16   /* kernel arguments: head inputs, externals, outputs */
#define KF_CHAIN_GUARD_HEADS 32 /* heads before the drop-rate guard judges a chain */
/* Why an entry was refused, for chain_entries()' "stopped": the speed guard, the drop-rate guard,
 * anything else (a mismatch, a failed launch, its cache entry disabled). */
enum { KF_CHAIN_STOP_OTHER = 0, KF_CHAIN_STOP_SLOWER = 1, KF_CHAIN_STOP_DROPPED = 2 };

/* Validate spec (chain_sig.h) and outputs (a JSON array of layouts as the manifest's, each with
 * "member": its member's index, in member order, at least one per member; only the head's may
 * alias an argument) and publish an entry serving kernel k (owned from here, even on failure).
 * The canonical bytes of the spec must equal `sig` when sig is given (a cache entry's). */
kf_status kf_chainserve_add(kf_runtime *rt, const char *spec_json, const char *outputs_json,
                            const uint8_t *sig, uint32_t sig_len, kf_kernel *k, double atol,
                            double rtol, const char *key_hex, char *err, size_t err_cap);
void kf_chainserve_free_all(kf_runtime *rt);
/* The device of a chain (its head member's signature), for a cache entry's "chain" object. */
kf_status kf_chainserve_device(const char *chain_json, int *type, int *index);
/* Its cache entry was disabled (by another process): entries from it are refused here too. */
void kf_chainserve_disable(kf_runtime *rt, const char *key_hex, const char *reason);

/* Whether an entry from the cache entry key_hex is attached here and not refused (what
 * cache_entries() calls served_here for a chain). */
int kf_chainserve_attached(kf_runtime *rt, const char *key_hex);
/* Any entry published (the hot path's one check). */
int kf_chainserve_active(const kf_runtime *rt);
/* The entry not refused with the most members whose head signature key is head_key, or NULL. */
kf_chain_entry *kf_chainserve_find(kf_runtime *rt, uint64_t head_key);
/* The same among the entries with fewer members than `than` whose members are its first ones
 * (by signature key), or NULL. */
kf_chain_entry *kf_chainserve_find_prefix(kf_runtime *rt, const kf_chain_entry *than);
/* The entries for head_key that may serve (not refused; deferred ones only in deferred mode), in
 * turn: the first after `after` (NULL: the first). */
kf_chain_entry *kf_chainserve_next_head(kf_runtime *rt, uint64_t head_key, const kf_chain_entry *after);
const kf_chain_def *kf_chain_entry_def(const kf_chain_entry *e);
const kf_kernel *kf_chain_entry_kernel(const kf_chain_entry *e);
int kf_chain_entry_state(const kf_chain_entry *e);
/* The whole chain matched eager on first use: served from now on. */
void kf_chain_entry_enable(kf_chain_entry *e);
/* Stop serving it in this process (a mismatch, a failed launch, the drop-rate guard), and mark
 * its cache entry disabled when `disable_cache`. 1 for the one caller that refused it (it warns). */
int kf_chain_entry_refuse(kf_chain_entry *e, kf_runtime *rt, const char *reason, int disable_cache);
/* Counters (KF_CHAIN_HEADS: the kernel ran at a head). A drop or skip past the guard's threshold
 * (KF_CHAIN_GUARD_HEADS heads and skips, more drops than completions, mispredicted ones
 * included: such a run's members did come in order) refuses the entry (1 returned to the caller
 * that did, which warns). */
int kf_chain_entry_count(kf_chain_entry *e, kf_runtime *rt, int which);

/* The speed guard (docs/chains.md): the kernel's time at a served head against what its members
 * cost without it, each member's fastest call as this process runs it (its own kernel's where one
 * is attached and faster than eager, else eager's: their signature slots' samples), judged by the
 * per-op guard's rule (kf_speed_slower). A head about to serve asks what to do: serve untimed,
 * serve timed (the entry's first 3 such heads, then one in KFORGE_SAMPLE_EVERY), or, on a timed
 * head, run its members timed instead (one in KFORGE_EAGER_SAMPLE_EVERY of those, as a per-op
 * kf_call.eager_sample, so that the members' fastest calls are warm ones; among the first 3 only
 * while some member has no eager sample; never while `stream` is captured into a CUDA graph):
 * eager, or every other time (KF_CHAIN_PLAN_MEMBERS) each by its own kernel where it has one. */
enum { KF_CHAIN_PLAN_SERVE = 0, KF_CHAIN_PLAN_TIMED = 1, KF_CHAIN_PLAN_EAGER = 2, KF_CHAIN_PLAN_MEMBERS = 3 };
int kf_chain_entry_plan(kf_chain_entry *e, int cuda, void *stream);
/* A timed head: from before its outputs are allocated to after the launch, on the host clock or
 * with a CUDA event pair on the launch stream (none while it is captured). end with launched 0
 * cancels; a second end is a no-op. */
typedef struct kf_chain_timer {
    int on, gpu_token;
    uint64_t t0_ns;
} kf_chain_timer;
void kf_chain_time_start(kf_chain_entry *e, int cuda, void *stream, kf_chain_timer *t);
void kf_chain_time_end(kf_chain_entry *e, int launched, void *stream, kf_chain_timer *t);
/* One sample of the kernel's time, and the guard's verdict: 1 when this sample detached the
 * entry (refused, stopped "slower", one warning naming its ops). */
int kf_chain_entry_add_sample(kf_chain_entry *e, uint64_t ns);
/* gpu_timer's `served` value of a chain kernel's sample (its `user` is the entry). */
#define KF_CHAIN_GPU_SAMPLE 2

#ifdef __cplusplus
}
#endif
#endif
