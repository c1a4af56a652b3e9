/* Verifying and timing one compiled candidate against a job's eager outputs (docs/architecture.md,
 * "Verification"). This runs only inside the worker's evaluator child (forge/eval/evaluator.h): a
 * candidate may crash, hang or corrupt memory, and that must cost the child only.
 *
 * For every case (recorded and random): fresh outputs are pre-filled with 0xff bytes (poison), the
 * kernel runs, then its outputs must match eager's within atol + rtol*|eager| with NaN/Inf in the
 * same places, inputs it must not write are bit-identical afterwards, and bytes around every
 * buffer (guard pages on the host, canary bytes on the device) are untouched. Every case runs
 * twice: with each buffer's data ending flush against a guard page, then starting right after
 * one (on the device: canary bytes of a huge value on both sides, positive then negative), so a
 * read out of bounds faults or changes the output. Timing: warm-up,
 * then `bench_reps` runs timed one by one (CUDA events on one stream, L2 flushed before each run
 * when flush_l2; wall clock on the host), median. */
#ifndef KF_FORGE_EVAL_H
#define KF_FORGE_EVAL_H

#include <stddef.h>

#include "compile/compiler.h"
#include "forge/job/job.h"
#include "compile/source_check.h" /* kf_source_check_backend & co */

#ifdef __cplusplus
extern "C" {
#endif

/* What happened to a candidate (tree node). The worker sets SLOWER itself (verified, not faster
 * than eager by the margin) and FLAGGED (verified but >10x eager or faster than the roofline). */
typedef enum kf_node_status {
    KF_NODE_PENDING = 0,
    KF_NODE_VERIFIED,       /* correct and timed */
    KF_NODE_SLOWER,         /* correct, not faster than eager by the margin */
    KF_NODE_FLAGGED,        /* correct, suspiciously fast: not trusted */
    KF_NODE_REJECTED,       /* static source check failed */
    KF_NODE_COMPILE_ERROR,
    KF_NODE_LOAD_ERROR,     /* compiled but would not load / launch (bad launch record, smem) */
    KF_NODE_WRONG,          /* outputs differ from eager (incl. NaN/Inf positions) */
    KF_NODE_UNTOUCHED,      /* an output still holds the poison pattern */
    KF_NODE_INPUT_WRITTEN,  /* an input it must not write changed */
    KF_NODE_OOB,            /* touched a guard page or canary outside its buffers */
    KF_NODE_CRASH,          /* the evaluator died (signal) or the CUDA context broke */
    KF_NODE_TIMEOUT,        /* ran past the candidate timeout */
    KF_NODE_STATUS_COUNT
} kf_node_status;

/* "verified", "slower", "flagged", "rejected", "compile_error", "load_error", "wrong",
 * "untouched", "input_written", "oob", "crash", "timeout". */
const char *kf_node_status_name(int status);
/* 1 for VERIFIED, SLOWER, FLAGGED (the kernel computes the op correctly). */
int kf_node_status_correct(int status);

typedef struct kf_eval_result {
    int status;             /* kf_node_status */
    char error[512];        /* why, for anything but VERIFIED: "case 2 (random), output 0: 17 of
                               65536 elements outside atol=1e-05 rtol=1e-05 (max abs 0.31 at 1043)" */
    int failed_case;        /* -1 when none */
    double max_abs_err, max_rel_err; /* over every case and output */
    double median_us, min_us;
    int reps;
} kf_eval_result;

typedef struct kf_eval kf_eval;

/* Load every case file of the job into (host or device) buffers with guards around them. For
 * nvrtc jobs this initializes CUDA on job->device_index (primary context, made current on the
 * calling thread). `job` must outlive `ev`. */
kf_status kf_eval_create(const kf_job *job, kf_eval **out, char *err, size_t errcap);
void kf_eval_free(kf_eval *ev);

/* Verify, then (only when correct) time a loaded kernel. Always fills *res. Returns KF_ERR_CUDA
 * when the CUDA context is no longer usable (sticky error): the caller must not use `ev` again
 * and the evaluator process restarts. */
kf_status kf_eval_run(kf_eval *ev, kf_compiler_i *cc, kf_compiled *k, const kf_launch *launch,
                      kf_eval_result *res);

/* For a SIGSEGV/SIGBUS handler in the process that runs kf_eval_run on a host job: when `addr`
 * lies in a guard page of one of ev's buffers, 1 with the reason (as kf_eval_result.error would
 * give it for an OOB node) in msg and the case that ran in *failed_case (-1: a timed run); else 0.
 * Async-signal-safe (reads ev, writes msg). */
int kf_eval_fault_describe(const kf_eval *ev, const void *addr, char *msg, size_t cap,
                           int *failed_case);

#ifdef __cplusplus
}
#endif
#endif
