/* builtin and llm children in one tree (llm.h, kf_proposer_mixed_create). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/propose/proposer_llm.h"

#define MAX_NODE_ID (1 << 24)

typedef struct mixed {
    kf_proposer_i builtin, llm;
    int every, turn;
    unsigned char *by_llm; /* per node id: 1 when the llm made it */
    int cap;
} mixed;

static int mark(mixed *m, int id, int v)
{
    if (id < 0 || id >= MAX_NODE_ID) return 0;
    if (id >= m->cap) {
        int cap = id + 256;
        unsigned char *p = realloc(m->by_llm, (size_t)cap);
        if (!p) return 0;
        memset(p + m->cap, 0, (size_t)(cap - m->cap));
        m->by_llm = p, m->cap = cap;
    }
    m->by_llm[id] = (unsigned char)v;
    return 1;
}

static kf_status ask_llm(mixed *m, int parent, int child_id, kf_candidate *out, char *err, size_t cap)
{
    kf_status st = m->llm.propose(m->llm.self, parent, child_id, out, err, cap);
    mark(m, child_id, 1);
    return st;
}

static kf_status mixed_propose(void *self, int parent, int child_id, kf_candidate *out, char *err,
                               size_t cap)
{
    mixed *m = self;
    if (parent >= 0 && parent < m->cap && m->by_llm[parent])
        return ask_llm(m, parent, child_id, out, err, cap); /* builtin cannot extend it */
    if (++m->turn % m->every == 0) return ask_llm(m, parent, child_id, out, err, cap);
    kf_status st = m->builtin.propose(m->builtin.self, parent, child_id, out, err, cap);
    if (st == KF_OK) {
        mark(m, child_id, 0);
        kf_proposer_llm_note(m->llm.self, child_id, parent, out);
        return KF_OK;
    }
    if (st == KF_ERR_NOMEM) return st;
    kf_candidate_clear(out); /* builtin has nothing new here: the model may */
    return ask_llm(m, parent, child_id, out, err, cap);
}

static void mixed_feedback(void *self, int id, const char *status, double latency_us, const char *error)
{
    mixed *m = self;
    if (m->builtin.feedback) m->builtin.feedback(m->builtin.self, id, status, latency_us, error);
    if (m->llm.feedback) m->llm.feedback(m->llm.self, id, status, latency_us, error);
}

static void mixed_destroy(void *self)
{
    mixed *m = self;
    if (!m) return;
    if (m->builtin.destroy) m->builtin.destroy(m->builtin.self);
    if (m->llm.destroy) m->llm.destroy(m->llm.self);
    free(m->by_llm);
    free(m);
}

kf_status kf_proposer_mixed_create(kf_proposer_i builtin, kf_proposer_i llm, int llm_every,
                                   kf_proposer_i *out, char *err, size_t cap)
{
    mixed *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, cap, "out of memory");
        return KF_ERR_NOMEM;
    }
    m->builtin = builtin, m->llm = llm, m->every = llm_every > 0 ? llm_every : 2;
    *out = (kf_proposer_i){
        /* .name = */ "mixed",
        /* .propose = */ mixed_propose,
        /* .feedback = */ mixed_feedback,
        /* .destroy = */ mixed_destroy,
        /* .self = */ m,
    };
    return KF_OK;
}
