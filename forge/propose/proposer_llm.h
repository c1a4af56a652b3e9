/* The proposers that ask an LLM (proposer_llm.c) or mix it with builtin (proposer_mixed.c). */
#ifndef KF_FORGE_PROPOSER_LLM_H
#define KF_FORGE_PROPOSER_LLM_H

#include <stddef.h>

#include "forge/llm/llm.h"
#include "forge/propose/proposer.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kf_job;
/* The `llm` proposer for `job`, configured from the environment (KFORGE_LLM_*, llm_config.c).
 * `totals` (the caller's, outlives the proposer) is updated after every request. A proposal that
 * gets no usable answer fails with KF_ERR_IO (transport, after retries) or KF_ERR_INVALID (the
 * reply: no code, two kernels, a bad launch record, ...) and sets out->proposer = "llm" and
 * out->meta_json, so the caller can record it as a rejected node with `err` as its error. The
 * prompt and reply of node <id> are kept in JOB_DIR/candidates/<id>.prompt.md / .reply.md. */
kf_status kf_proposer_llm_create(const struct kf_job *job, kf_llm_totals *totals,
                                 kf_proposer_i *out, char *err, size_t errcap);
/* Tell the llm proposer about node `id` made by another proposer (its source, for prompts). */
void kf_proposer_llm_note(void *llm_self, int id, int parent, const kf_candidate *c);

/* `builtin` and `llm` children in one tree (taking ownership of both on success): a child of a
 * node the llm made comes from the llm; otherwise every `llm_every`-th proposal goes to the llm
 * and the rest to builtin, and the llm also takes over when builtin has nothing left there. */
kf_status kf_proposer_mixed_create(kf_proposer_i builtin, kf_proposer_i llm, int llm_every,
                                   kf_proposer_i *out, char *err, size_t errcap);

/* The proposer job->search.proposer names ("builtin", "llm" or "mixed"), in *out (the caller
 * destroys it); *have_llm is set when the llm is part of it (it then updates *llm). "mixed"
 * without a template for the job falls back to the llm alone. */
kf_status kf_proposer_for_job(const struct kf_job *job, kf_llm_totals *llm, kf_proposer_i *out,
                              int *have_llm, char *err, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
