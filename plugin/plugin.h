/* What torch_ext calls: the plugin seen from C++, with no C11 atomics or internals in sight.
 *
 *   kf_call c;
 *   kf_dispatch_begin(rt, &sig, &c);         // counts the call, looks up a kernel
 *   kf_dispatch_start(rt, &c, served, stream); // starts a timing sample when one is due
 *   ... kf_kernel_launch(c.kernel, ...) or the original kernel ...
 *   kf_dispatch_end(rt, &c, served, stream);  // or kf_dispatch_cancel when it did not complete
 *   ... learn outputs, captures ...
 *   kf_dispatch_done(rt, &c);                 // always, last: the slot may be recycled after it
 *
 * Nothing here takes a lock unless a timing sample is taken on CUDA (a few calls in N). */
#ifndef KF_PLUGIN_PLUGIN_H
#define KF_PLUGIN_PLUGIN_H

#include <stdint.h>

#include "common/clock.h"
#include "plugin/chains.h"
#include "plugin/config.h"
#include "kforge.h"
#include "plugin/layout.h"
#include "common/signature.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kf_slot kf_slot;
typedef struct kf_kernel kf_kernel;

typedef struct kf_call {
    kf_slot *slot;             /* NULL: not recorded (no free slot); pinned until dispatch_done */
    const kf_kernel *kernel;   /* non-NULL: a kernel may serve this call */
    const kf_out_layout *outs; /* eager's outputs for this signature, when known */
    int learn;                 /* eager's outputs are still to be learned from this call */
    int validate;              /* run eager too and compare (KFORGE_VALIDATE) before trusting */
    int poison;                /* fill fresh outputs with 0xff bytes before the kernel runs */
    int time_it;               /* a timing sample is due */
    int eager_sample;          /* ...and it is the speed guard's: run eager although a kernel could
                                * serve (torch_ext drops the kernel for this call, or the flag) */
    int capture;               /* copy this call's arguments and results for a tuning job */
    int gpu_token;
    /* a host sample's start; set before kf_dispatch_start, a served call's sample starts there
     * (torch_ext's typed path boxes the arguments to serve: eager's typed call does not) */
    uint64_t t0_ns;
} kf_call;

void kf_dispatch_begin(kf_runtime *rt, const kf_sig *sig, kf_call *c);
/* Chain recording (plugin/chains.h), on while the observer is: 1 when this call should be
 * reported, after it finished, with its tensors' identities (whether it writes one of its
 * arguments, which inputs are new to the thread: bit i for input i, when the thread first saw each, and each one's storage and byte offset in it:
 * kf_chain_observe_views), to kf_dispatch_chain_call. */
int kf_dispatch_chains_on(const kf_runtime *rt, const kf_call *c);
void kf_dispatch_chain_call(kf_runtime *rt, kf_chain_rec *rec, const kf_call *c, int writes,
                            unsigned fresh, const uintptr_t *in,
                            const uint64_t *seen_at, const uintptr_t *storage,
                            const int64_t *byte_off, int n_in,
                            const uintptr_t *out, int n_out, uint64_t now);
void kf_dispatch_start(kf_runtime *rt, kf_call *c, int served, void *stream);
void kf_dispatch_end(kf_runtime *rt, kf_call *c, int served, void *stream);
/* The call did not complete (eager threw, or a kernel refused): drop its timing sample. */
void kf_dispatch_cancel(kf_runtime *rt, kf_call *c);
/* The very end of the call, after everything that uses c->slot (every path, exceptions too):
 * lets the signature table recycle the slot. Sets c->slot to NULL; a second call is a no-op. */
void kf_dispatch_done(kf_runtime *rt, kf_call *c);
int kf_kernel_launch(const kf_kernel *k, const kf_tensor *tensors, int n, void *stream);
void kf_kernel_tolerance(const kf_kernel *k, double *atol, double *rtol);
/* The kernel matched eager on its first use in this process. */
void kf_dispatch_checked(kf_runtime *rt, kf_call *c);
/* The kernel disagreed with eager: stop serving it in this process and mark its cache entry. */
void kf_dispatch_reject(kf_runtime *rt, kf_call *c, const char *reason);
/* The check could not run (out of memory, a device error): the kernel is not served again in
 * this process; its cache entry stays (another process may check it). 1 for the one call that
 * detached it (it warns), 0 when another call already had. */
int kf_dispatch_check_error(kf_runtime *rt, kf_call *c);
/* The kernel returned a failure (not KF_KERNEL_LATER): the same, after its first failure. */
int kf_dispatch_launch_failed(kf_runtime *rt, kf_call *c);
/* Testing (kf_fail_next_checks): 1 when this check is to fail as if it could not run. */
int kf_dispatch_take_check_fault(kf_runtime *rt);
/* A call that ended with eager's result after the kernel ran (a failed or impossible check):
 * count it as eager, not served. */
void kf_dispatch_recount_eager(kf_call *c);
/* Publish eager's output layout for the slot (first call wins). A layout with n == 0 says the
 * outputs cannot be reproduced (non-tensor returns, a resized out=): never served, never asked
 * again. */
void kf_dispatch_learn_outputs(kf_slot *slot, const kf_out_layout *layout);
/* A timing sample of one call (served by a kernel, or eager). Also the speed guard: with eager
 * samples (taken on served signatures too: kf_call.eager_sample) and, since the kernel was
 * attached, KF_SPEED_EARLY_SAMPLES served ones, a kernel whose fastest served call is over 2x
 * eager's fastest stops being served in this process; with KF_SPEED_MIN_SAMPLES, one over 5%
 * slower (its cache entry stays: it may win on another machine or in another process). */
void kf_slot_add_sample(kf_slot *slot, int served, uint64_t ns);
#define KF_SPEED_MIN_SAMPLES 16
#define KF_SPEED_EARLY_SAMPLES 4
#define KF_SPEED_EARLY_MARGIN 2.0 /* before KF_SPEED_MIN_SAMPLES: only a kernel far slower */
#define KF_SPEED_MARGIN 1.05
/* That verdict, shared with the chain guard (chainserve.h): after n served samples, the fastest
 * served call sv_ns against eager's fastest fb_ns (0: none yet, no verdict). */
int kf_speed_slower(uint64_t n, uint64_t sv_ns, uint64_t fb_ns);
/* The signature key of a slot (what stats() and the tuning API call `key`). */
uint64_t kf_slot_key(const kf_slot *slot);

/* An op seen by the observer (not intercepted): counted by name with its host time. `weight`
 * scales sampled observations back to estimated calls. */
void kf_dispatch_observed(kf_runtime *rt, const char *name, uint64_t ns, uint64_t weight);

kf_status kf_runtime_create(kf_runtime **out, const kf_config *cfg);
void kf_runtime_free(kf_runtime *rt);
void kf_runtime_set_global(kf_runtime *rt);
const kf_config *kf_runtime_config(const kf_runtime *rt);
void *kf_runtime_ext(const kf_runtime *rt);
void kf_runtime_set_ext(kf_runtime *rt, void *ext);
void kf_runtime_set_observer_flag(kf_runtime *rt, int on);
/* 1 when `stream` is being captured into a CUDA graph (or that cannot be told). */
int kf_runtime_capturing(kf_runtime *rt, void *stream);
/* Once torch_ext knows the torch version (part of cache keys): read the kernel cache. */
void kf_runtime_open_cache(kf_runtime *rt, const char *torch_version);
/* Which ops of the intercept list the cache's entries are for (wanted[i] for cfg.ops[i]). */
void kf_runtime_cached_ops(kf_runtime *rt, unsigned char *wanted);
/* Whether the cache has held an entry for cfg.ops[op] (or could not be listed): without one, a
 * call made inside another intercepted op's kernel is passed through undescribed. Lock-free. */
int kf_runtime_op_cached(const kf_runtime *rt, int op);
/* Registration bookkeeping. add_op returns the op's index or -1. */
int kf_runtime_add_op(kf_runtime *rt, const char *name, const char *const *argnames, int n);
void kf_runtime_op_key(kf_runtime *rt, int op, const char *key, const char *skip_reason);
void kf_runtime_set_error(kf_runtime *rt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif
