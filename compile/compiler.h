/* Compile backends behind one function-pointer table.
 *
 * A candidate is source text plus a launch record (docs/architecture.md, "Kernel contract"):
 *   {"entry": "kf_kernel", "grid": [x,y,z], "block": [x,y,z], "smem": n,
 *    "args": ["const float*", "float*"]}
 * The arguments are the op's tensor arguments then its outputs, as typed pointers; shapes and
 * scalars are compile-time constants (#define) in the source, except a shape family's free sizes:
 * "ints": ["numel(t0)/size(t0,-1)"] appends int64_t arguments computed from the tensors at
 * each launch. An int travels in the launch's pointer array as its value ((void *)(intptr_t)v):
 * `launch` gets n_args + n_ints entries. A grid that follows the free extent (a family kernel's
 * blocks over its rows): "grid_from": [i, per, mul] makes grid.x = ceil(ints[i] / per) * mul at
 * each launch (nvrtc), "grid" then being the tuned shape's. `host` compiles C with the system
 * compiler into a shared object; `nvrtc` compiles CUDA C++ to a cubin for the exact arch. Both
 * NVRTC and the CUDA driver are opened at run time, so nothing here needs CUDA to build or load. */
#ifndef KF_FORGE_COMPILER_H
#define KF_FORGE_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KF_LAUNCH_MAX_ARGS 16
#define KF_LAUNCH_TYPE_MAX 32
#define KF_ENTRY_MAX 64
#define KF_LAUNCH_MAX_INTS 4
#define KF_LAUNCH_NUMEL (-100) /* kf_launch_int.dim: the tensor's element count */

/* A launch-time size (a shape family's free extent): the size of dim `dim` (KF_LAUNCH_NUMEL:
 * the element count) of kernel argument `arg`, divided by that of (den_arg, den_dim) when
 * den_arg >= 0 (the division must be exact). Written in a record as "numel(t0)",
 * "size(t1,-1)" or "numel(t0)/size(t0,-1)" (t<k>: the k-th pointer argument). */
typedef struct kf_launch_int {
    int arg, dim;
    int den_arg, den_dim;
} kf_launch_int;

typedef struct kf_launch {
    char entry[KF_ENTRY_MAX];       /* C identifier */
    unsigned grid[3], block[3];     /* nvrtc; ignored by host */
    unsigned smem;
    int n_args;
    char arg_types[KF_LAUNCH_MAX_ARGS][KF_LAUNCH_TYPE_MAX]; /* whitelisted pointer types */
    int n_ints; /* "ints": int64_t arguments after the pointers, computed at each launch */
    kf_launch_int ints[KF_LAUNCH_MAX_INTS];
    /* "grid_from": grid.x = ceil(ints[grid_int] / grid_per) * grid_mul; grid_per 0: fixed */
    int grid_int;
    unsigned grid_per, grid_mul;
} kf_launch;

/* What a launch-time size is computed from: one argument's dims. */
typedef struct kf_dims {
    int ndim;
    const int64_t *sizes;
} kf_dims;

/* Parse and validate a launch record (untrusted: it may come from an LLM or a bundle). Types
 * must be one of a fixed list of pointer types ("float*", "const __nv_bfloat16*", ...). */
kf_status kf_launch_parse(const char *json, kf_launch *out, char *err, size_t errcap);
/* The record's launch-time sizes for arguments `t` (n of them, the pointer arguments in order):
 * out[0..l->n_ints). KF_ERR_INVALID when an argument or dim is missing, a division is not exact
 * or a size is negative or overflows: the call must not be launched. */
kf_status kf_launch_ints(const kf_launch *l, const kf_dims *t, int n, int64_t *out);
/* grid.x for a launch whose ints are `ints` (l->grid[0] without "grid_from"). KF_ERR_INVALID when
 * the extent is not positive or the grid would exceed what grid.x holds: no launch. */
kf_status kf_launch_grid_x(const kf_launch *l, const int64_t *ints, unsigned *gx);

typedef struct kf_compiled kf_compiled; /* a loaded, launchable kernel */

typedef struct kf_compiler_i {
    const char *name; /* "host" | "nvrtc" */
    /* What goes into the cache key: compiler/NVRTC version and flags. On failure `out` holds
     * the reason. */
    kf_status (*toolchain)(void *self, char *out, size_t cap);
    /* The target: "sm_90" for device `device_index`; the host's machine for "host". On failure
     * `out` holds the reason. */
    kf_status (*arch)(void *self, int device_index, char *out, size_t cap);
    /* Source -> blob (cubin / shared object). The compile log (warnings, errors) is returned in
     * *log (malloc'ed, may be NULL) in every case. */
    kf_status (*compile)(void *self, const char *source, const kf_launch *launch, const char *arch,
                         void **blob, size_t *blob_len, char **log);
    /* Blob -> launchable kernel for a device. Never called during CUDA-graph capture. */
    kf_status (*load)(void *self, const void *blob, size_t blob_len, const kf_launch *launch,
                      int device_index, kf_compiled **out, char *err, size_t errcap);
    /* Launch with the data pointers of the tensors, in launch-record order, then the record's
     * ints as values (see above), on `stream`. */
    int (*launch)(void *self, kf_compiled *k, void *const *ptrs, int n, void *stream);
    void (*unload)(void *self, kf_compiled *k);
    void (*destroy)(void *self);
    void *self;
} kf_compiler_i;

/* `cc`: the C compiler command ($CC or "cc"); flags are fixed and recorded in the toolchain id. */
kf_status kf_compiler_host_create(kf_compiler_i *out, const char *cc);
/* `nvrtc_path`: libnvrtc to open (NULL: $KFORGE_NVRTC, else the usual places); `include_dir`:
 * CUDA headers for cuda_bf16.h etc. (NULL: none). Fails with KF_ERR_CUDA and a message if NVRTC
 * cannot be opened. The driver is optional: without one, compile works for an arch the caller
 * names ("sm_90"), while arch, load and launch fail with KF_ERR_CUDA. */
kf_status kf_compiler_nvrtc_create(kf_compiler_i *out, const char *nvrtc_path,
                                   const char *include_dir, char *err, size_t errcap);

#ifdef __cplusplus
}
#endif
#endif
