/* Chain recording (docs/architecture.md, "Chains"): which runs of intercepted calls on a thread
 * recur, linked by dataflow, so that they can become one job and one kernel.
 *
 * Each thread keeps a recorder: the run of calls it is in. A finished call joins the run when one
 * of its tensor inputs is an output of a member (the same tensor: its TensorImpl); otherwise, or
 * when it cannot be served, the run ends and is counted in the shared table under its identity
 * (the members' signature keys and, for every input, which member and output it came from, or
 * "from outside"), and the call starts the next run. Runs of one call are not chains.
 *
 * Cost: a few comparisons per call on the calling thread while recording is on
 * (kernel_forge.set_recording, KFORGE_RECORD, KFORGE_TUNE, kforge warmup / run); the table's
 * mutex only when a run ends. A table that is full drops new chains (counted). */
#ifndef KF_PLUGIN_CHAINS_H
#define KF_PLUGIN_CHAINS_H

#include <stdint.h>

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KF_CHAIN_MAX 8    /* members of one chain; a longer run is cut there */
#define KF_CHAIN_MAX_IO 8 /* tensor inputs / outputs looked at per call */

typedef struct kf_chains kf_chains;       /* the table, one per runtime */
typedef struct kf_chain_rec kf_chain_rec; /* one thread's open run */

kf_status kf_chains_create(kf_chains **out, int capacity);
void kf_chains_free(kf_chains *c);
void kf_chains_reset(kf_chains *c);

kf_chain_rec *kf_chain_rec_create(void);
void kf_chain_rec_free(kf_chain_rec *r);

/* One finished call on r's thread: its signature key, whether it can be served, the identities of
 * its tensor inputs (0 for an argument that is not a tensor) and outputs, in schema order. */
void kf_chain_observe(kf_chains *c, kf_chain_rec *r, uint64_t key, int servable,
                      const uintptr_t *in, int n_in, const uintptr_t *out, int n_out);
/* End r's open run now (counted if it is a chain). */
void kf_chain_flush(kf_chains *c, kf_chain_rec *r);

/* {"chains": [{"id", "calls", "members": [{"key", "inputs": [[member, output] | null ...]}]}],
 *  "dropped"}: chains seen at least min_calls times, most frequent first. Caller frees (kf_free). */
char *kf_chains_json_doc(kf_chains *c, uint64_t min_calls);

#ifdef __cplusplus
}
#endif
#endif
