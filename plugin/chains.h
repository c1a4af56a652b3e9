/* Chain recording (docs/architecture.md, "Chains"): which runs of intercepted calls on a thread
 * recur, linked by dataflow, so that they can become one job and one kernel.
 *
 * Each thread keeps a recorder: the run of calls it is in. A finished call joins the run when one
 * of its tensor inputs is an output of a member (the same tensor: its TensorImpl); otherwise, or
 * when it cannot be served, the run ends and is counted in the shared table under its identity
 * (the members' signature keys, whether each writes in place and, for every tensor input, which
 * member and output it came from, which of the head's inputs it is, or which external tensor:
 * one from outside the run, numbered in order of first use), and the call starts the next run.
 * Runs of one call are not chains. A call linked to nothing whose inputs are all tensors seen
 * before (a weight's cast) is held back instead, and joins the run when the next call reads both
 * its output and a member's; otherwise it is replayed as it came. A call reading a view of a
 * member's output re-splits the run at the first member that read that output itself, which
 * heads the rest (its views then link as views of a head input).
 *
 * The listing gives each chain its spec (common/chain_sig.h, docs/chains.md): the fusable prefix
 * (cut before the first later member that writes in place) with every member's signature bytes.
 *
 * Cost: a few comparisons per call on the calling thread while recording is on
 * (kernel_forge.set_recording, KFORGE_RECORD, KFORGE_TUNE, kforge warmup / run); the table's
 * mutex only when a run ends. A table that is full drops new chains (counted). */
#ifndef KF_PLUGIN_CHAINS_H
#define KF_PLUGIN_CHAINS_H

#include <stdint.h>

#include "common/signature.h"
#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KF_CHAIN_MAX 12   /* members of one chain; a longer run is cut there */
#define KF_CHAIN_MAX_IO 8 /* tensor inputs / outputs looked at per call */

typedef struct kf_chains kf_chains;       /* the table, one per runtime */
typedef struct kf_chain_rec kf_chain_rec; /* one thread's open run */

kf_status kf_chains_create(kf_chains **out, int capacity);
void kf_chains_free(kf_chains *c);
void kf_chains_reset(kf_chains *c);
/* Deferred mode (KFORGE_CHAIN_DEFERRED=1, docs/chains.md): a chain whose later members read
 * externals the head cannot predict is listed with a spec marked "deferred" (its kernel runs at
 * the last member, with every member's inputs). */
void kf_chains_set_deferred(kf_chains *c, int on);

kf_chain_rec *kf_chain_rec_create(void);
void kf_chain_rec_free(kf_chain_rec *r);

enum {
    KF_CHAIN_SERVABLE = 1, /* a kernel could serve the call */
    KF_CHAIN_WRITES = 2,   /* it writes a tensor argument (in place, out=) */
};
/* input i is a tensor the thread had not seen before the call (an activation from an op the
 * plugin does not see, a linear's output, or a weight in its first forward) */
#define KF_CHAIN_FRESH(i) (1u << (8 + (i)))
#define KF_CHAIN_FRESH_MASK(bits) (((unsigned)(bits) & 0xffu) << 8)

/* One finished call on r's thread: its signature key, KF_CHAIN_* flags, the identities of its
 * tensor inputs (the kernel's tensor arguments: no Python numbers, no None) and outputs, in
 * schema order. Each chain counts, per member, the runs in which it read a fresh external
 * (KF_CHAIN_FRESH): serving predicts each external at the head from the tensors of an earlier
 * run, so one most of whose runs read a fresh one voids the spec; the listing says why. */
void kf_chain_observe(kf_chains *c, kf_chain_rec *r, uint64_t key, unsigned flags,
                      const uintptr_t *in, int n_in, const uintptr_t *out, int n_out);
/* The same, with when the thread first saw each input (seen_at[i], in a count of its calls that
 * only grows; `now` the count at this call): a member's external seen before the call but first
 * after the previous run of the same chain on this thread ended cannot be predicted either (an
 * activation of this run made by another intercepted call, or the residual sum a block's other
 * place made): a member most of whose runs read one can only start a spec (the listing takes the
 * longest part that allows). */
void kf_chain_observe_at(kf_chains *c, kf_chain_rec *r, uint64_t key, unsigned flags,
                         const uintptr_t *in, const uint64_t *seen_at, int n_in,
                         const uintptr_t *out, int n_out, uint64_t now);
/* The same, with each input's storage (an opaque identity, 0: none) and byte offset in it: an
 * input that is no member's output but a view of one of the head's inputs (its storage, not the
 * tensor: rotary's halves of q) joins the run, wired as that input at that offset (the spec's
 * "views"). */
void kf_chain_observe_views(kf_chains *c, kf_chain_rec *r, uint64_t key, unsigned flags,
                            const uintptr_t *in, const uint64_t *seen_at, const uintptr_t *storage,
                            const int64_t *byte_off, int n_in, const uintptr_t *out, int n_out,
                            uint64_t now);
/* End r's open run now (counted if it is a chain). */
void kf_chain_flush(kf_chains *c, kf_chain_rec *r);

/* What the listing needs to know of a member's signature (the signature table has it). */
typedef struct kf_chain_member_info {
    char op[128];
    char signature[1024]; /* readable */
    uint8_t sig[KF_SIG_MAX_BYTES];
    uint32_t sig_len;
} kf_chain_member_info;
/* 1 with *out filled when the signature of `key` is known (0: evicted). */
typedef int (*kf_chain_lookup_fn)(void *user, uint64_t key, kf_chain_member_info *out);

/* {"chains": [{"id", "calls", "members": [{"key", "writes", "inputs": [[member, output] | null
 * ...]}], "spec": {...} | null, "fusable_reason"}], "dropped"}: chains seen at least min_calls
 * times, most frequent first; the spec carries "sig_hex" (the canonical chain bytes) and per
 * member "sig_hex". `lookup` may be NULL (every spec is then null). Caller frees (kf_free). */
char *kf_chains_json_doc(kf_chains *c, uint64_t min_calls, kf_chain_lookup_fn lookup, void *user);

#ifdef __cplusplus
}
#endif
#endif
