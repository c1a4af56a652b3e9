/* The link between the runtime and the kernel cache: entries are attached to their signatures
 * (kernel + eager's output layout) when the plugin loads, nvrtc ones at the first CUDA call,
 * and again whenever the cache's generation changes (another process inserted an entry). */
#ifndef KF_PLUGIN_CACHELINK_H
#define KF_PLUGIN_CACHELINK_H

#include "plugin/runtime.h"

void kf_cachelink_init(kf_runtime *rt);
void kf_cachelink_free(kf_runtime *rt);
/* Attach the nvrtc entries that waited for the first CUDA call (rt->cuda_pending is set). */
void kf_cachelink_attach_cuda(kf_runtime *rt);
/* Looks at the clock, and at the cache's generation once KFORGE_RELOAD_MS passed; the caller
 * calls it only every few hundred calls. */
void kf_cachelink_poll(kf_runtime *rt);
/* The compiler for a backend name, created on first use; NULL (with rt->errmsg) if unavailable. */
kf_compiler_i *kf_cachelink_compiler(kf_runtime *rt, const char *backend, const char **toolchain);
/* Put `k` on the slot (replacing any kernel); the previous one is retired, not freed. */
void kf_cachelink_set_kernel(kf_runtime *rt, kf_slot *slot, kf_kernel *k);

/* Output layout <-> JSON (the manifest's "outputs"). */
char *kf_layout_to_json(const kf_out_layout *l);
kf_status kf_layout_from_json(const char *json, kf_out_layout *l);

#endif
