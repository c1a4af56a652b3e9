/* Proposers: who writes the candidates the search evaluates (docs/architecture.md, "MCTS").
 *
 * A proposer is asked for a new child of a node (or a fresh starting point below the root) and
 * answers with a candidate: source, launch record, and a one-line description of how it differs
 * from its parent ("unroll 4 -> 8", "strategy two_pass -> online"), which the tree shows. It is
 * told every result, so later proposals can use them (the LLM proposer puts them in its prompt).
 * Node ids are the search tree's (forge/search/mcts.h): the proposer keys its own per-node state by them. */
#ifndef KF_FORGE_PROPOSER_H
#define KF_FORGE_PROPOSER_H

#include <stddef.h>
#include <stdint.h>

#include "kforge.h"
#include "forge/templates/template.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kf_candidate {
    char *source;        /* malloc'ed */
    char *launch_json;   /* malloc'ed */
    char backend[16];    /* "host" | "nvrtc" */
    char proposer[16];   /* "builtin" | "llm" */
    char origin[64];     /* template name (builtin) or model name (llm) */
    char change[160];    /* how it differs from its parent; "start: <template>" below the root */
    char *meta_json;     /* malloc'ed JSON object for the tree: {"template": ..., "knobs": {...}} */
    int first_start;     /* a template's own start point (builtin: the knobs its start() guesses),
                            what a ramp pass (kforge-worker --starts-only) evaluates */
} kf_candidate;

void kf_candidate_clear(kf_candidate *c); /* frees and zeroes; NULL-safe */
/* The shape family a verified candidate for `sig` serves as the cache's "family" JSON
 * (malloc'ed): the one its builtin template states for a kernel that reads its free sizes at
 * launch; NULL for anything else (an LLM's kernel serves its exact signature only). */
char *kf_candidate_family(const kf_candidate *c, const kf_job_sig *sig);

typedef struct kf_proposer_i {
    const char *name; /* "builtin", "llm", "sabotage(builtin)" */
    /* A new child of `parent` (KF_MCTS_ROOT: a starting point) that will get id `child_id` once
     * evaluated. KF_ERR_NOT_FOUND: nothing new below `parent`; anything else: err says why. */
    kf_status (*propose)(void *self, int parent, int child_id, kf_candidate *out, char *err,
                         size_t errcap);
    /* The result of node `id`: its status name ("verified", "wrong", ...), latency, error text. */
    void (*feedback)(void *self, int id, const char *status, double latency_us, const char *error);
    void (*destroy)(void *self);
    void *self;
} kf_proposer_i;

/* The builtin template library (template.h) for `sig` on `backend`: starting points are every
 * applicable template at its first knob values; a child changes exactly one knob of its parent
 * (or switches the strategy knob), never repeating a combination already proposed anywhere in the
 * tree. Deterministic given `seed`. KF_ERR_NOT_FOUND when no template applies (err says so). */
kf_status kf_proposer_builtin_create(const kf_job_sig *sig, const char *backend, uint64_t seed,
                                     kf_proposer_i *out, char *err, size_t errcap);

/* Fault injection for tests (docs/architecture.md: swap the table): wraps `inner` (taking ownership on
 * success; on failure it stays the caller's) and rewrites every `every`-th candidate so that its
 * kernel crashes, hangs or writes out of bounds, cycling through `modes` (a comma list of "crash",
 * "hang", "oob"). The change line says so ("sabotaged: oob (unroll 4 -> 8)") and meta_json gets
 * "sabotage": mode. Out of bounds is one byte just before the first output (the first non-const
 * pointer of the launch record) and one at (1 << 22) elements past its start: the launch record
 * carries no sizes. A candidate that cannot be rewritten fails the proposal (err says why). */
kf_status kf_proposer_sabotage_create(kf_proposer_i inner, const char *modes, int every,
                                      kf_proposer_i *out, char *err, size_t errcap);

#ifdef __cplusplus
}
#endif
#endif
