/* The proposer a job asks for (proposer.h): builtin, llm, or both in one tree (docs/architecture.md "MCTS"). */
#include <string.h>

#include "common/log.h"
#include "forge/job/job.h"
#include "forge/propose/proposer_llm.h"

kf_status kf_proposer_for_job(const kf_job *job, kf_llm_totals *llm, kf_proposer_i *out,
                              int *have_llm, char *err, size_t cap)
{
    const kf_job_search *s = &job->search;
    kf_proposer_i b, l;
    kf_status st;
    if (strcmp(s->proposer, "llm")) {
        st = kf_proposer_builtin_create(&job->sig, job->backend, s->seed, &b, err, cap);
        /* mixed without a template still has the model */
        if (st != KF_OK && (st != KF_ERR_NOT_FOUND || strcmp(s->proposer, "mixed"))) return st;
        if (st != KF_OK) {
            KF_INFO("worker: %s; the llm proposes alone", err);
            st = kf_proposer_llm_create(job, llm, out, err, cap);
            if (st == KF_OK) *have_llm = 1;
            return st;
        }
        if (!strcmp(s->proposer, "builtin")) {
            *out = b;
            return KF_OK;
        }
    }
    st = kf_proposer_llm_create(job, llm, &l, err, cap);
    if (st != KF_OK) {
        if (strcmp(s->proposer, "llm") && b.destroy) b.destroy(b.self);
        return st;
    }
    *have_llm = 1;
    if (!strcmp(s->proposer, "llm")) {
        *out = l;
        return KF_OK;
    }
    st = kf_proposer_mixed_create(b, l, 2, out, err, cap);
    if (st != KF_OK) {
        b.destroy(b.self), l.destroy(l.self);
        return st;
    }
    return KF_OK;
}
