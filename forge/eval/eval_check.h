/* One candidate checked outside a search, and compute-sanitizer memcheck of a CUDA kernel
 * before it is trusted.
 *
 * `kforge-worker --check JOB_DIR SOURCE_FILE LAUNCH_FILE` (kernel_forge.add_kernel) runs the
 * static source check, compiles the kernel and verifies it in an evaluator child exactly as the
 * worker verifies a node (forge/eval/eval.h: both placements, guard pages, canaries), then, for a CUDA
 * kernel that verified, once more under memcheck. It writes JOB_DIR/check.json and prints it.
 *
 * Memcheck sees allocation bounds only, not our canary bytes, so its child allocates every device
 * buffer to exactly its span (KFORGE_EVAL_EXACT=1); a read or write outside one is an error
 * there. The tool: $KFORGE_COMPUTE_SANITIZER ("0" or "": never), else
 * /usr/local/cuda/bin/compute-sanitizer, else one on PATH; without it the check is skipped and
 * the record says so. */
#ifndef KF_FORGE_EVAL_CHECK_H
#define KF_FORGE_EVAL_CHECK_H

#include <stddef.h>

#include "forge/eval/eval.h"
#include "forge/job/job.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kf_memcheck_result {
    int ran;          /* 1: the kernel ran under memcheck; 0: skipped (detail says why) */
    int errors;       /* errors memcheck reported; -1: it ran but left no ERROR SUMMARY */
    double seconds;   /* wall time of the memcheck run */
    char detail[512]; /* the first error memcheck reported, or why it did not run */
} kf_memcheck_result;

/* 1 and the tool's path in out when compute-sanitizer is to be used; else 0 with the reason. */
int kf_memcheck_find(char *out, size_t cap);

/* Evaluate `blob_path` (launch record `launch_json`) under memcheck in a fresh evaluator child
 * (`exe --eval`), its report in `log_path`. Fills *mc always and *res with that run's
 * evaluation when it ran. KF_OK unless an argument is missing. */
kf_status kf_memcheck_run(const kf_job *job, const char *exe, const char *blob_path,
                          const char *launch_json, double timeout_s, const char *log_path,
                          kf_eval_result *res, kf_memcheck_result *mc);

/* {"ran": bool, "errors": n | null, "seconds": s, "detail": "..."} (a cJSON object) */
struct cJSON *kf_memcheck_json(const kf_memcheck_result *mc);

/* main() of `kforge-worker --check JOB_DIR SOURCE_FILE LAUNCH_FILE`: 0 when a check.json was
 * written (whatever it says), 2 when the job or the files cannot be read. */
int kf_check_main(const char *exe, const char *job_dir, const char *source_path,
                  const char *launch_path);

#ifdef __cplusplus
}
#endif
#endif
