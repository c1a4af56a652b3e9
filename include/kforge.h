/* Kernel Forge runtime: the one public C header.
 *
 * Everything here is plain C11 so that the plugin, the cache, the forge worker and ctypes can all
 * use it. Handles are opaque; every function that can fail returns a kf_status and keeps a
 * detailed message on the handle (kf_runtime_errmsg). */
#ifndef KFORGE_H
#define KFORGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KF_BUILDING)
#define KF_API __attribute__((visibility("default")))
#else
#define KF_API
#endif

#define KF_VERSION_MAJOR 0
#define KF_VERSION_MINOR 1
#define KF_VERSION_PATCH 0
#define KF_VERSION_STRING "0.1.0"

#define KF_MAX_DIMS 8

typedef enum kf_status {
    KF_OK = 0,
    KF_ERR_INVALID = 1,     /* bad argument from the caller */
    KF_ERR_NOMEM = 2,
    KF_ERR_FULL = 3,        /* a fixed-size table is full */
    KF_ERR_NOT_FOUND = 4,
    KF_ERR_UNSUPPORTED = 5, /* the signature cannot be served (too many args, unknown types) */
    KF_ERR_KERNEL = 6,      /* a kernel reported failure */
    KF_ERR_CUDA = 7,        /* a CUDA driver call failed or the driver is missing */
    KF_ERR_IO = 8,
    KF_ERR_BUSY = 9,        /* a lock is held elsewhere and the caller asked not to wait */
} kf_status;

KF_API const char *kf_status_str(kf_status s);

typedef enum kf_log_level {
    KF_LOG_DEBUG = 0,
    KF_LOG_INFO = 1,
    KF_LOG_WARNING = 2,
    KF_LOG_ERROR = 3,
} kf_log_level;

/* Called from any thread; must not call back into the plugin. */
typedef void (*kf_log_fn)(int level, const char *msg, void *user);

/* Our own dtype codes: stable across torch versions, used in signatures and cache keys. */
typedef enum kf_dtype {
    KF_DTYPE_UNKNOWN = 0,
    KF_F32, KF_F16, KF_BF16, KF_F64,
    KF_I8, KF_U8, KF_I16, KF_I32, KF_I64, KF_BOOL,
    KF_C64, KF_C128,
    KF_F8E4M3, KF_F8E5M2,
    KF_DTYPE_COUNT
} kf_dtype;
/* The dtype table (common/dtype.c): "f32", "bf16", ... ("?" for an unknown code) and the
 * element size in bytes (0 for an unknown code). */
KF_API const char *kf_dtype_name(int dtype);
KF_API int kf_dtype_size(int dtype);
KF_API int kf_dtype_from_name(const char *name); /* KF_DTYPE_UNKNOWN when not in the table */
/* The verification tolerance for `op`'s outputs of `dtype` (common/tolerance.c; docs/architecture.md
 * "Verification"): fp32/fp64 1e-5, or 1e-4 for ops that accumulate; fp16 1e-3; bf16 1e-2;
 * integers and bool exact (0). */
KF_API kf_status kf_tolerance(const char *op, int dtype, double *atol, double *rtol);
/* 1 when `op`'s kernels accumulate (a reduction, a norm, a softmax: the list behind
 * kf_tolerance's 1e-4), else 0. */
KF_API int kf_op_accumulates(const char *op);
/* At least this for an output computed from a value rounded to `dtype` after a sum in another
 * order than eager's (a chain member downstream of a reduction reading a bf16 cast): that value
 * may round one ulp apart, and the output rounds again: an rtol of bf16 2^-6, f16 2^-9, other
 * dtypes 0 (no widening); atol 0 (kf_tolerance's stands). */
KF_API kf_status kf_tolerance_flipped(int dtype, double *atol, double *rtol);

/* A chain spec's canonical bytes as lowercase hex (common/chain_sig.h, docs/chains.md), for
 * kernel_forge's job writer; NULL with err set when the spec is refused. Free with kf_free. */
KF_API char *kf_chain_sig_hex(const char *spec_json, char *err, size_t err_cap);

/* The eager-match rule (common/match.c; docs/architecture.md "Verification"): n elements of `dtype` in two
 * dense host buffers, the kernel's `got` against eager's `want`. A float element matches when
 * |k - e| <= atol + rtol * |e|, with NaN exactly where eager has NaN and infinities equal;
 * integers and bools must be bit-identical. Returns the number of elements that do not match
 * (-1 for a bad argument); *r gets the first of them and the error maxima over finite pairs. */
typedef struct kf_match_result {
    int64_t bad, first_bad, nonfinite_bad; /* nonfinite_bad: NaN/Inf where eager differs */
    double max_abs, max_rel;
} kf_match_result;
KF_API int64_t kf_match_dense(int dtype, const void *got, const void *want, int64_t n, double atol,
                              double rtol, kf_match_result *r);

typedef enum kf_device_type {
    KF_DEV_CPU = 0,
    KF_DEV_CUDA = 1,
    KF_DEV_OTHER = 2,
} kf_device_type;

/* What the C side knows about a tensor. Strides and sizes are in elements. */
typedef struct kf_tensor {
    void *data;
    int dtype;  /* kf_dtype */
    int ndim;
    int64_t sizes[KF_MAX_DIMS], strides[KF_MAX_DIMS];
    int device_type, device_index;
} kf_tensor;

/* A kernel serves one exact signature. `tensors` holds the op's tensor arguments in schema order
 * (mutated arguments included), then the freshly allocated outputs in return order. `stream` is
 * the caller's current CUDA stream (CUstream) or NULL on CPU. Return 0 on success. KF_KERNEL_LATER
 * declines this one call (it cannot run now, e.g. not loadable during CUDA-graph capture); any
 * other value is a failure: the plugin stops serving the kernel in this process (one warning).
 * Either way the original kernel runs instead, so a kernel that declines must not have written. */
typedef int (*kf_kernel_fn)(void *user, const kf_tensor *tensors, int n_tensors, void *stream);
#define KF_KERNEL_LATER 1000

typedef struct kf_runtime kf_runtime;

/* The runtime created when the plugin library is loaded (NULL if loading failed). */
KF_API kf_runtime *kf_runtime_get(void);
KF_API const char *kf_runtime_errmsg(const kf_runtime *rt);
KF_API const char *kf_version(void);

KF_API void kf_set_log_callback(kf_log_fn fn, void *user);
KF_API void kf_set_log_level(int level);

KF_API void kf_set_enabled(kf_runtime *rt, int on);
KF_API int kf_enabled(const kf_runtime *rt);
/* Chain kernels start at new heads only while on (the default); off, the members run as they
 * would without chain entries (their own kernels, or eager). A chain already started ends as
 * it would. The warm-up's model check times forwards both ways. */
KF_API void kf_set_chains_enabled(kf_runtime *rt, int on);
KF_API int kf_chains_enabled(const kf_runtime *rt);
/* Intercepted calls so far, every thread, every signature (one relaxed counter): the online
 * tuner reads it twice to see whether the model is calling (README, "Online tuning"). */
KF_API uint64_t kf_total_calls(const kf_runtime *rt);

/* JSON documents owned by the caller; release them with kf_free. */
KF_API char *kf_stats_json(kf_runtime *rt);
KF_API char *kf_ops_json(kf_runtime *rt);
KF_API void kf_reset_stats(kf_runtime *rt);
/* Recorded chains (plugin/chains.h) seen at least min_calls times. */
KF_API char *kf_chains_json(kf_runtime *rt, uint64_t min_calls);
/* Chain entries (plugin/chainserve.h): per entry its chain's sig_hex, ops, state ("checking",
 * "served", "refused"), reason and counters (heads, completed, dropped). */
KF_API char *kf_chain_entries_json(kf_runtime *rt);
/* Compile a chain kernel from checked source in this process and attach it to the chain's head
 * (docs/chains.md): spec as kernel_forge.chains() gives it, outputs the layouts of every
 * member's outputs (each with "member"; NULL: eager's in this process), atol/rtol the first-use
 * check's tolerance. With key_out, also insert it into the cache folder (key_out: its key). */
KF_API kf_status kf_chain_kernel_add(kf_runtime *rt, const char *spec_json, const char *outputs_json,
                                     const char *backend, const char *source, const char *launch_json,
                                     double atol, double rtol, char *key_out, char **log);
KF_API void kf_free(void *p);

/* Signature probe: between begin and end, the first call of `op` (e.g. "aten::relu") on this thread has its
 * signature key stored and is run by the original kernel. */
KF_API void kf_probe_begin(kf_runtime *rt, const char *op);
KF_API kf_status kf_probe_end(kf_runtime *rt, uint64_t *key);

/* Attach a kernel to the signature with this key (it must have been seen). fn == NULL detaches. */
KF_API kf_status kf_register_kernel(kf_runtime *rt, uint64_t key, kf_kernel_fn fn, void *user);

/* Arguments `op` writes although its schema does not mark them written (plugin/writes.c): bit i
 * of *args for argument i in schema order (an undefined tensor there is not written), written
 * only when the bool argument *when_true is True (-1: always). Returns 1 when `op` has such
 * writes, else 0 with *args = 0. aten::native_batch_norm in training mode is one. */
KF_API int kf_op_hidden_writes(const char *op, uint32_t *args, int *when_true);

/* ---- the kernel cache (plugin/cachelink.c, plugin/candidate.c) ---- */

/* Look at the cache folder now and serve what is new; returns the entries decided so far. */
KF_API int kf_reload_cache(kf_runtime *rt);
/* Testing: the next `n` first-use checks fail as if they could not run (out of memory), to
 * exercise that path (the entry is then rejected in this process). */
KF_API void kf_fail_next_checks(kf_runtime *rt, int n);
/* Fill fresh outputs with 0xff bytes before a kernel runs (verification: an untouched output
 * is then NaN / garbage, never a plausible zero). */
KF_API void kf_set_poison(kf_runtime *rt, int on);
/* JSON: op, signature, canonical bytes (hex), device, eager's outputs, for a seen signature. */
KF_API char *kf_signature_info_json(kf_runtime *rt, uint64_t key);
/* The cache key (32 hex + NUL into key_out) an entry serving a seen signature has, for `backend`
 * ("host" | "nvrtc"; NULL: the signature's device's); what the fleet cache asks for. */
KF_API kf_status kf_signature_cache_key(kf_runtime *rt, uint64_t key, const char *backend,
                                        char *key_out);
/* Compile `source` with `backend` ("host" | "nvrtc") for the signature and serve it in this
 * process without a first-use check (the caller verifies it). The compile log (may be NULL) is
 * returned in *log, to be released with kf_free. */
KF_API kf_status kf_candidate_register(kf_runtime *rt, uint64_t key, const char *backend,
                                       const char *source, const char *launch_json, char **log);
/* The static source check (compile/source_check.h) on the raw text, for backend "host" or "nvrtc":
 * 1 when it passes, 0 with the reason in err. The host compiler also checks its preprocessor's
 * output; this one needs no compiler. */
KF_API int kf_source_check_text(const char *backend, const char *source, char *err, size_t errcap);
/* Insert the candidate serving `key` into the cache folder, with the verification results in
 * `meta_json` (max_abs_err, max_rel_err, atol, rtol, eager_us, kernel_us, proposer, job,
 * compile_options). The cache key (32 hex + NUL) is written to key_out. */
KF_API kf_status kf_candidate_insert(kf_runtime *rt, uint64_t key, const char *meta_json,
                                     char *key_out);
/* Entries of the cache folder and bundle, with whether this process serves each. */
KF_API char *kf_cache_entries_json(kf_runtime *rt);

/* ---- tuning jobs (plugin/tuning.c) ---- */

/* The arguments of a seen signature, decoded, in schema order, as JSON:
 * {"op": ..., "args": [{"name": "self", "kind": "tensor", "dtype": "f32", "sizes": [...],
 *  "strides": [...], "align": 16, "device": "cpu", "device_index": 0}, {"name": "dim", "kind": "i",
 *  "value": -1}, ...]}; kinds: tensor, i, d, b, s, n (None), l (int list), tensor_list (its
 * elements under "tensors", each described like a tensor argument; a kernel takes them as tensor
 * arguments of their own, in list order), wrapped (a Python number torch made a 0-dim tensor of,
 * `x + 1e-6`: "dtype" f64/i64/bool, "scalar" the job scalar kind d/i/b it becomes, "value", and
 * "text" for a non-finite float; no kernel argument, its value is compiled in), and the ones a
 * kernel cannot take: device, opaque (also a tensor list with an element that cannot be
 * described exactly). */
KF_API char *kf_signature_args_json(kf_runtime *rt, uint64_t key);
/* Copy the arguments and results of the next `n` eager calls of a seen signature (outside CUDA
 * graph capture) for a tuning job; torch_ext keeps them for `torch.ops.kforge.take_captures`. */
KF_API kf_status kf_capture_request(kf_runtime *rt, uint64_t key, int n);
/* Calls made by this thread go straight to the original kernels, unrecorded (the tuner's own
 * eager references and timings), while other threads are served as usual. */
KF_API void kf_set_thread_bypass(int on);
/* Testing (docs/chains.md, inference tensors): bit 0 set while this thread's writes are watched
 * for a pending chain, bit 1 while it has any thread-local RecordFunction callback. */
KF_API int kf_chain_thread_watched(void);
/* Stop the runtime's background thread (the cache reload): at process exit, before the
 * interpreter or libtorch is torn down, so no thread of ours logs or loads into a dying process.
 * Serving goes on; new cache entries are then read only by kf_reload_cache. Idempotent. */
KF_API void kf_runtime_quiesce(kf_runtime *rt);
/* Count ops that are not intercepted too (a RecordFunction observer, torch_ext/observer.cpp),
 * by name with their host time; KF_ERR_UNSUPPORTED when the plugin is disabled. */
KF_API kf_status kf_set_observer(kf_runtime *rt, int on);
/* Register interceptors now: for every op of the intercept list (`all`), or for the ops of cache
 * entries that appeared since load (KFORGE_INTERCEPT, torch_ext/registration.cpp). Idempotent;
 * KF_ERR_UNSUPPORTED when the plugin is disabled. */
KF_API kf_status kf_intercept(kf_runtime *rt, int all);

/* ---- cache folders without a runtime (plugin/cache_cli.c: `kforge cache ...`) ----
 * Each opens the cache folder `dir`, does one thing and closes it; on failure err[cap] says
 * why. JSON results are released with kf_free (NULL on failure). */
KF_API char *kf_cache_dir_ls_json(const char *dir);
KF_API char *kf_cache_dir_show_json(const char *dir, const char *key, char *err, size_t cap);
KF_API kf_status kf_cache_dir_rm(const char *dir, const char *key, char *err, size_t cap);
KF_API kf_status kf_cache_dir_set_disabled(const char *dir, const char *key, int disabled,
                                           const char *reason, char *err, size_t cap);
KF_API kf_status kf_cache_dir_clear(const char *dir, char *err, size_t cap);
/* Write the entries (of the ops in the comma-separated `ops_csv`, or all for NULL / ""; an item
 * of 32 hex digits picks the entry with that key) to the bundle file `path`; *n gets how many. */
KF_API kf_status kf_cache_dir_export(const char *dir, const char *path, const char *ops_csv, int *n,
                                     char *err, size_t cap);
/* Validate every member of the bundle `path` and insert them; *n gets how many. */
KF_API kf_status kf_cache_dir_import(const char *dir, const char *path, int *n, char *err, size_t cap);
/* Re-check every entry's files and hashes: [{"key": ..., "problem": ...}, ...]. */
KF_API char *kf_cache_dir_verify_json(const char *dir, char *err, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
