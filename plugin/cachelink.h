/* The link between the runtime and the kernel cache: entries are attached to their signatures
 * (kernel + eager's output layout) when the plugin loads, nvrtc ones at the first CUDA call,
 * and again whenever the cache's generation changes (another process inserted an entry); an
 * entry replaced under the same key (a new blob: a deeper search's winner) is attached again.
 *
 * The user's calls never wait for the cache: changes are picked up by a background thread, every
 * read of the folder uses a non-blocking flock (a writer holding the lock, even a stopped one,
 * means "look again at the next tick"), and the hot path takes cache_lock only with trylock. */
#ifndef KF_PLUGIN_CACHELINK_H
#define KF_PLUGIN_CACHELINK_H

#include "plugin/runtime.h"

/* Loads the cache (without waiting for its lock) and starts the reload thread. */
void kf_cachelink_init(kf_runtime *rt);
/* Stops the reload thread: before anything it may touch (kernels, the table) is freed. */
void kf_cachelink_stop(kf_runtime *rt);
void kf_cachelink_free(kf_runtime *rt);
/* On a CUDA call while rt->cuda_pending: attach a bounded number of the nvrtc entries that
 * waited for it, if nobody holds cache_lock or the folder's lock; the rest on later calls. */
void kf_cachelink_attach_cuda(kf_runtime *rt);
/* Looks at the clock; once KFORGE_RELOAD_MS passed, wakes the reload thread. The caller calls
 * it only every few hundred calls. Never waits. */
void kf_cachelink_poll(kf_runtime *rt);
/* Mark a cache entry disabled (a kernel failed its first-use check), so that no later process
 * serves it. Never waits: while another process holds the folder's lock, the reload thread
 * marks it later. */
void kf_cachelink_disable_entry(kf_runtime *rt, const char *key_hex, const char *reason);
/* The compiler for a backend name, created on first use; NULL (with rt->errmsg) if unavailable. */
kf_compiler_i *kf_cachelink_compiler(kf_runtime *rt, const char *backend, const char **toolchain);
/* An entry this process inserted and attached itself, with the hash of the blob it inserted
 * (a reload attaches a changed blob again): not attached again by a reload. */
void kf_cachelink_mark_attached(kf_runtime *rt, const char *key, const char *blob_hash);
/* Put `k` on the slot (replacing any kernel); the previous one is retired, not freed. */
void kf_cachelink_set_kernel(kf_runtime *rt, kf_slot *slot, kf_kernel *k);

/* Which ops of the intercept list (cfg.ops) the cache's entries (folder and bundle) are for: a
 * chain entry counts for each of its members' ops. Sets wanted[i] (n_ops flags) for op i, from
 * the entries listed at init and at each reload (not listed again here); the entries are only
 * read, not checked (a superset is harmless: an op intercepted for nothing, one whose entry was
 * removed or disabled since); a cache whose last listing failed (another process held its
 * lock) wants every op. */
void kf_cachelink_entry_ops(kf_runtime *rt, unsigned char *wanted);
/* A kernel for `op` came from elsewhere than the cache (kf_register_kernel): noted as an entry's. */
void kf_cachelink_note_op(kf_runtime *rt, const char *op);

/* Under cache_lock: 1 when the entry was looked at and found built for another environment
 * (its key differs from the one computed here), so it is not used. */
int kf_cachelink_elsewhere(kf_runtime *rt, const char *key_hex);

/* Output layout <-> JSON (the manifest's "outputs"). */
char *kf_layout_to_json(const kf_out_layout *l);
kf_status kf_layout_from_json(const char *json, kf_out_layout *l);

#endif
