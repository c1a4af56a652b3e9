/* The worker's evaluator: a child process that holds a job's cases and runs candidates.
 *
 * The search (the worker's main process) compiles candidates; the child loads and runs them
 * (forge/eval/eval.h). A candidate that crashes the child, hangs past its timeout or breaks the CUDA
 * context costs the child only: the parent marks the node (CRASH with the signal, TIMEOUT, or the
 * CUDA error) and starts a fresh child for the next candidate, so the job continues.
 *
 * The child is this same executable run as `kforge-worker --eval JOB_DIR`; requests and replies
 * are single lines on its stdin/stdout. */
#ifndef KF_FORGE_EVALUATOR_H
#define KF_FORGE_EVALUATOR_H

#include <stddef.h>

#include "forge/eval/eval.h"
#include "forge/job/job.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kf_evaluator kf_evaluator;

/* `exe`: path of the kforge-worker executable (argv[0] resolved, or /proc/self/exe). The child
 * starts lazily on the first run. */
kf_status kf_evaluator_create(const kf_job *job, const char *exe, kf_evaluator **out, char *err,
                              size_t errcap);
/* Evaluate a compiled blob (file written by the caller) with its launch record. Always fills
 * *res; KF_OK unless the evaluator cannot start at all (then res->error says why). */
kf_status kf_evaluator_run(kf_evaluator *ev, const char *blob_path, const char *launch_json,
                           double timeout_s, kf_eval_result *res);
/* Run the child under a wrapper: argv `prefix` (NULL-terminated, at most 16, argv[0] a path)
 * before `EXE --eval JOB_DIR` (compute-sanitizer, forge/eval/eval_check.h); a child that is leaving
 * gets `exit_grace_ms` (<= 0: the default 2 s) before it is killed. Only before the first run. */
kf_status kf_evaluator_set_prefix(kf_evaluator *ev, const char *const *prefix, int exit_grace_ms);
/* Restarts so far (children that died or were killed). */
int kf_evaluator_restarts(const kf_evaluator *ev);
void kf_evaluator_free(kf_evaluator *ev);

/* main() of `kforge-worker --eval JOB_DIR`: returns the process exit code. */
int kf_evaluator_child_main(const char *job_dir);

#ifdef __cplusplus
}
#endif
#endif
