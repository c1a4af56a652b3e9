/* The forge worker: one job folder in, a search tree, candidates and maybe a cache entry out.
 *
 * `kforge-worker JOB_DIR [options]` (forge/worker/main.c) runs kf_worker_run. It never
 * loads libtorch and never runs a candidate itself: compiled candidates go to an evaluator child
 * (forge/eval/evaluator.h), so a crash, a hang or a broken CUDA context costs one node, not the job.
 * The winner is inserted into the cache only if it is verified and faster than eager by the
 * margin (docs/architecture.md, "Process model" and "Verification"). */
#ifndef KF_FORGE_WORKER_H
#define KF_FORGE_WORKER_H

#include <stdio.h>

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kf_worker_opts {
    const char *job_dir;
    const char *exe;          /* this executable, for the evaluator child */
    /* overrides of job.json's "search" (< 0 / NULL: keep the job's) */
    int iterations;
    long long seed;
    double margin, time_budget_s, candidate_timeout_s;
    const char *cache_dir;    /* "" : do not insert */
    const char *timings_from; /* a previous run's job folder: replay its latencies (see below) */
    const char *sabotage;     /* "crash,hang,oob": fault injection for tests */
    int sabotage_every;
    const char *proposer;     /* "builtin" | "llm" | "mixed" (NULL: the job's search.proposer) */
    double llm_budget_usd;    /* stop when the model has cost this much (<= 0: no limit) */
    int llm_max_requests;     /* stop after this many HTTP requests to the model (<= 0: none) */
    FILE *progress;           /* one JSON line per node and one at the end (NULL: none) */
    int starts_only;          /* the ramp pass: only each template's start point (first_start),
                                 then stop ("start candidates evaluated") */
    double better_than_us;    /* > 0: insert only a winner at least 1% faster than this (an
                                 earlier pass's kernel for the job); else "no_better_kernel" */
    double duty;              /* (0, 1): sleep between nodes so that the time spent working
                                 (all but those sleeps) is at most this share of the wall time;
                                 <= 0 or >= 1: never sleep */
    double duty_credit;       /* seconds of work allowed before the duty share applies (the
                                 online tuner's burst credit left): work <= credit + duty x wall */
    int gate;                 /* before each candidate's timing: {"event":"gate"} on progress,
                                 then wait for a line on stdin (the online tuner answers in a
                                 quiet gap of the model's calls, or when its wait runs out); the
                                 wait counts as a duty sleep; end of input: no more waits */
} kf_worker_opts;

/* Run the job to the end. KF_OK when the search ran, whatever it found (JOB_DIR/result.json says
 * what); an error (with err) when the job could not run at all (bad job.json, no compiler).
 *
 * timings_from: for a node whose source is byte-identical to the same node id of the earlier run,
 * the earlier median latency is used instead of the new measurement (the node is still compiled
 * and verified), and the earlier run's eager and roofline times replace this job's. The tree is a deterministic function of the seed and the latencies, so a replay
 * rebuilds the same tree; real timings differ from run to run on a shared machine. */
kf_status kf_worker_run(const kf_worker_opts *o, char *err, size_t errcap);

#ifdef __cplusplus
}
#endif
#endif
