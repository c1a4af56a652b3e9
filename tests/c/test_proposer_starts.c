/* The builtin proposer marks each template's own start point (kf_candidate.first_start), what
 * `kforge-worker --starts-only` (the online tuner's ramp pass) evaluates: every root proposal
 * until each applicable template has started is one, the random starts after them and every
 * child are not. */
#include <stdio.h>
#include <string.h>

#include "tests/c/check.h"
#include "tests/c/job_sig_build.h"
#include "forge/search/mcts.h"
#include "forge/propose/proposer.h"

int main(void)
{
    kf_job_sig s;
    memset(&s, 0, sizeof s);
    snprintf(s.op, sizeof s.op, "aten::_softmax");
    s.n_in = s.n_out = 1;
    s.in[0].dtype = KF_F32;
    s.in[0].ndim = 2;
    s.in[0].sizes[0] = 8, s.in[0].sizes[1] = 37;
    s.in[0].strides[0] = 37, s.in[0].strides[1] = 1;
    s.in[0].align = 16;
    s.out[0] = s.in[0];
    sig_add_scalar(&s, "dim", 'i')->i = -1;
    sig_add_scalar(&s, "half_to_float", 'b')->i = 0;

    kf_proposer_i p;
    char err[512];
    CHECK(kf_proposer_builtin_create(&s, "host", 1, &p, err, sizeof err) == KF_OK);
    int id = 0, starts = 0, later = 0;
    char first[64][64];
    kf_candidate c;
    CHECK(p.propose(p.self, KF_MCTS_ROOT, id++, &c, err, sizeof err) == KF_OK);
    CHECK(c.first_start);
    snprintf(first[starts++], sizeof first[0], "%s", c.origin);
    kf_candidate_clear(&c);
    /* a child of the first start point is never one */
    CHECK(p.propose(p.self, 0, id++, &c, err, sizeof err) == KF_OK);
    CHECK(!c.first_start && strncmp(c.change, "start", 5) != 0);
    kf_candidate_clear(&c);
    for (; id < 64; id++) {
        if (p.propose(p.self, KF_MCTS_ROOT, id, &c, err, sizeof err) != KF_OK) break;
        if (c.first_start) {
            CHECK(later == 0); /* every first start comes before any random start */
            CHECK(strncmp(c.change, "start: ", 7) == 0 && !strstr(c.change, "random"));
            for (int i = 0; i < starts; i++) CHECK(strcmp(first[i], c.origin) != 0);
            snprintf(first[starts++], sizeof first[0], "%s", c.origin);
        } else {
            CHECK(strstr(c.change, "random knobs") != NULL);
            later++;
        }
        kf_candidate_clear(&c);
    }
    CHECK(starts >= 1 && later >= 1);
    p.destroy(p.self);
    printf("test_proposer_starts: %d templates started, then %d random starts: ok\n", starts, later);
    return check_failures() ? 1 : 0;
}
