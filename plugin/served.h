/* A compiled kernel (from the cache, or a candidate under verification) serving one signature:
 * the compiler that loads it, its launch record and blob, and the per-device loaded modules. */
#ifndef KF_PLUGIN_SERVED_H
#define KF_PLUGIN_SERVED_H

#include <stddef.h>

#include "compile/compiler.h"
#include "kforge.h"

#define KF_MAX_DEVICES 16

typedef struct kf_runtime kf_runtime;
typedef struct kf_served kf_served;

/* Takes ownership of `blob` (malloc'ed). */
kf_status kf_served_create(kf_served **out, kf_runtime *rt, kf_compiler_i *cc, const kf_launch *launch,
                           void *blob, size_t blob_len);
void kf_served_free(kf_served *s);
/* A kernel (for a slot) serving `blob` through `cc`: kf_served_launch over a new kf_served.
 * Takes ownership of `blob` in every case; NULL when out of memory. */
struct kf_kernel *kf_served_kernel(kf_runtime *rt, kf_compiler_i *cc, const kf_launch *launch,
                                   void *blob, size_t blob_len);
const void *kf_served_blob(const kf_served *s, size_t *len);
const char *kf_served_backend(const kf_served *s);
/* kf_kernel_fn: loads the blob for the tensors' device on first use (never during CUDA-graph
 * capture: KF_KERNEL_LATER), then launches with the tensors' data pointers. Non-zero: eager runs
 * instead (and, but for KF_KERNEL_LATER, the kernel is no longer served). */
int kf_served_launch(void *user, const kf_tensor *t, int n, void *stream);

#endif
