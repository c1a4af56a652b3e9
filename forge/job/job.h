/* A tuning job: one signature to find a kernel for, as a folder.
 *
 * The Python package writes it (kernel_forge/_jobs.py: it drives torch to capture real calls, make
 * random inputs of the same signature and run eager on them); the forge worker reads it and writes
 * its results next to it. Everything in it is untrusted input: the loader validates every field.
 *
 *   JOB_DIR/job.json          this description (format below)
 *   JOB_DIR/cases/<file>.bin  raw bytes of one tensor: its strided span, element 0 (the data
 *                             pointer) to the last element it addresses, native byte order;
 *                             length must be exactly kf_job_span_bytes(tensor)
 * written by the worker:
 *   JOB_DIR/tree.json         the search tree, every node (forge/worker)
 *   JOB_DIR/candidates/<id>.* source (.c / .cu), launch record (.json), compile log (.log)
 *   JOB_DIR/progress.jsonl    one line per iteration
 *   JOB_DIR/result.json       the outcome
 *
 * job.json (format 1):
 * {
 *   "format": 1,
 *   "op": "aten::_softmax",
 *   "signature": "_softmax(f32[64,1024], dim=-1, half_to_float=False)",   readable
 *   "sig_hex": "…",            canonical signature bytes (common/signature.h), for the cache key
 *   "torch_version": "2.13.0",
 *   "outputs_layout": […],     eager's output layout as the cache stores it (plugin/layout.h JSON)
 *   "backend": "host" | "nvrtc",
 *   "device_index": 0,
 *   "inputs":  [{"dtype": "f32", "sizes": [64,1024], "strides": [1024,1], "align": 16,
 *                "name": "self"}, …],   one per tensor the kernel takes, in schema order: a
 *                              tensor list's elements each in its place ("tensors.0", …; name
 *                              is for people: the templates go by position); at most
 *                              KF_JOB_MAX_TENSORS, and inputs + fresh outputs at most
 *                              KF_LAUNCH_MAX_ARGS (compile/compiler.h)
 *   "outputs": [{"dtype": "f32", "sizes": […], "strides": […], "alias": -1}, …],
 *                              alias: index into inputs of an output written in place, or -1;
 *                              the op's returns, then each argument it writes without returning
 *                              it (kf_op_hidden_writes: batch norm's running statistics when
 *                              training), as an output aliasing that input
 *   "scalars": [{"name": "dim", "kind": "i", "value": -1},
 *               {"name": "eps", "kind": "d", "value": 1e-5},
 *               {"name": "half_to_float", "kind": "b", "value": false},
 *               {"name": "approximate", "kind": "s", "value": "tanh"},
 *               {"name": "weight", "kind": "n"},
 *               {"name": "normalized_shape", "kind": "l", "value": [1024]},
 *               {"name": "other", "kind": "d", "value": 1e-6, "wrapped": true}],
 *                              wrapped: a Python number in a tensor argument's place, kind
 *                              d, i or b, absent from "inputs" (sig.h)
 *   "cases": [{"kind": "recorded" | "example" | "random", "inputs": ["c0_in0.bin"],
 *              "outputs": ["c0_out0.bin"]}],   recorded: copied from a model's call; example:
 *                              kernel_forge.tune's arguments
 *                              file names under cases/; outputs: every output, eager's values
 *                              (for an in-place output: the argument's contents after eager);
 *                              cases may name one input file (a large gather source kept
 *                              once), which the evaluator then reads and holds once
 *   "eager_us": 123.4,         median eager time, measured like kf_bench (common/bench.h)
 *   "call_floor_us": 1.2,      optional (host): what a call that does no work costs, timed the
 *                              way eager was; a candidate's time excludes it (0 if absent)
 *   "bytes_moved": 524288,     bytes the op must read + write (for the roofline)
 *   "bandwidth_gbs": 4112,     measured copy bandwidth of the device (0: unknown)
 *   "atol": 1e-4, "rtol": 1e-4,
 *   "output_tol": [[1e-4, 1e-4], …],   optional: per output [atol, rtol] (else atol/rtol)
 *   "chain": {…},             op "kforge::chain" only: the chain spec (chain.h says what changes)
 *   "search": {"iterations": 50, "stagnation": 25, "seed": 1, "margin": 0.03, "time_budget_s": 0,
 *              "candidate_timeout_s": 10, "bench_reps": 20, "flush_l2": true,
 *              "proposer": "builtin", "cache_dir": "/…/kernel_forge" | ""}
 * }                            cache_dir "": do not insert a winner */
#ifndef KF_FORGE_JOB_H
#define KF_FORGE_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "kforge.h"
#include "common/dtype.h"
#include "forge/job/chain.h"
#include "forge/job/sig.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KF_JOB_FORMAT 1
#define KF_JOB_MAX_CASES 16
#define KF_JOB_MAX_BYTES ((uint64_t)16 << 30) /* a tensor file larger than this is refused */

typedef struct kf_job_case {
    int recorded;                          /* 1: captured from a real call; 0: random */
    char *in_path[KF_JOB_MAX_TENSORS];     /* absolute paths, n_in of them */
    char *out_path[KF_JOB_MAX_OUTPUTS];    /* n_out of them */
} kf_job_case;

typedef struct kf_job_search {
    int iterations;            /* candidates to evaluate (default 50) */
    int stagnation;            /* stop after this many candidates in a row that neither beat the
                                * best by 1% nor started a template (0: never; default -1:
                                * max(10, iterations / 2), kf_job_stagnation) */
    uint64_t seed;             /* default 1 */
    double margin;             /* a winner must beat eager by this fraction (default 0.03) */
    double time_budget_s;      /* 0: none */
    double candidate_timeout_s;/* per candidate evaluation (default 10) */
    int bench_reps;            /* timed runs per candidate (default 20) */
    int flush_l2;              /* flush L2 before each timed run (CUDA; default 1) */
    char *proposer;            /* "builtin" */
    char *cache_dir;           /* "" : do not insert */
} kf_job_search;

/* The search's stagnation limit in candidates (0: none): search.stagnation, or its default. */
int kf_job_stagnation(const kf_job_search *s);

typedef struct kf_job {
    char *dir;                 /* absolute */
    char *op, *signature, *sig_hex, *torch_version;
    char *outputs_layout;      /* JSON text */
    char *backend;             /* "host" | "nvrtc" */
    int device_index;
    kf_job_sig sig;            /* op, inputs (with align), outputs (with out_alias), scalars */
    int n_cases;
    kf_job_case cases[KF_JOB_MAX_CASES];
    double eager_us, call_floor_us, bytes_moved, bandwidth_gbs;
    double roofline_us;        /* bytes_moved / bandwidth (0 when unknown) */
    double atol, rtol;
    double out_atol[KF_JOB_MAX_OUTPUTS], out_rtol[KF_JOB_MAX_OUTPUTS]; /* per output (compare) */
    char *chain;               /* a chain job's spec, JSON object text; NULL for one op */
    kf_job_chain *chain_def;   /* its members (sig.chain points here) */
    kf_job_search search;
} kf_job;

/* Read and validate JOB_DIR/job.json (not the case files: kf_job_read_case_file does that).
 * On failure *out is NULL and err names the field and the reason. */
kf_status kf_job_load(const char *dir, kf_job **out, char *err, size_t errcap);
void kf_job_free(kf_job *job);

/* The time below which a kernel is too fast to trust (0: no floor). On CUDA the roofline is a
 * DRAM copy and candidates run with L2 flushed, so a kernel cannot beat it; on the host both the
 * copy probe and the candidates run from warm caches, where a copy at the op's size is a noisy
 * estimate that a good kernel can beat, so only twice as fast is implausible. */
double kf_job_trust_floor_us(const kf_job *job);

/* Whether a correct candidate timed at latency_us may be trusted (else it is flagged for review,
 * never inserted): not faster than the trust floor, and not more than 10x faster than eager (a
 * chain: 10x per member; the host's call floor added back) unless it runs within 4x of its
 * roofline: beating eager tenfold is then eager's distance to its bandwidth (timm PVT-v2's layer
 * norm over 32 channels: eager 221 us, roofline 9 us on an H100), not a timing error. */
int kf_job_trusts(const kf_job *job, double latency_us);

/* Bytes of a tensor's strided span (0 for an empty tensor); 0 with *ok = 0 on overflow or a
 * malformed tensor (negative sizes/strides). */
uint64_t kf_job_span_bytes(const kf_job_tensor *t, int *ok);
/* Read one case file into buf (exactly `len` bytes, which must be the file's size). */
kf_status kf_job_read_case_file(const char *path, void *buf, uint64_t len, char *err, size_t errcap);


#ifdef __cplusplus
}
#endif
#endif
