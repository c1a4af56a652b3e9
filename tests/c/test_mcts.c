/* The MCTS (forge/search/mcts.h) against a fake evaluator: a deterministic synthetic latency landscape
 * over a 4-knob grid with a region of failing candidates, explored by a fake proposer that changes
 * one knob at a time. The search must find the optimum within its budget, never select a failed,
 * pruned or exhausted node for expansion, respect progressive widening, prune stale subtrees,
 * scale to 10,000 nodes, and be a deterministic function of its seed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/c/check.h"
#include "forge/search/mcts.h"

/* ---- the landscape: 4 knobs with 6 values each ---- */

#define D 4
#define V 6
#define GRID (V * V * V * V)

static const int opt[D] = {4, 1, 3, 5};

/* x0 + x1 == 7 does not compile, say */
static int fails(const int *x) { return x[0] + x[1] == 7; }

static double latency(const int *x)
{
    static const double w[D] = {3.0, 1.5, 2.0, 0.7};
    double l = 10.0;
    for (int k = 0; k < D; k++) l += w[k] * (x[k] - opt[k]) * (x[k] - opt[k]);
    l += 0.5 * (x[2] != opt[2]) * (x[3] != opt[3]); /* a little interaction */
    return l;
}

static int code(const int *x)
{
    int c = 0;
    for (int k = 0; k < D; k++) c = c * V + x[k];
    return c;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- the fake proposer: starts at three corners, then untried one-knob changes, the nearest
 * values first (as the builtin proposer does), ties broken at random ---- */

typedef struct fake {
    uint64_t rng;
    unsigned char tried[GRID];
    int (*vec)[D]; /* per node id */
    int n_starts;
} fake;

static const int starts[3][D] = {{0, 0, 0, 0}, {5, 5, 5, 5}, {0, 5, 0, 5}};

/* 1 and x filled, or 0 when nothing new is left below `parent`. */
static int fake_propose(fake *f, int parent, int *x)
{
    if (parent == KF_MCTS_ROOT) {
        while (f->n_starts < 3) {
            memcpy(x, starts[f->n_starts++], sizeof(int) * D);
            if (!f->tried[code(x)]) {
                f->tried[code(x)] = 1;
                return 1;
            }
        }
        return 0;
    }
    int moves[D * V][2], n = 0, near = V;
    for (int k = 0; k < D; k++)
        for (int v = 0; v < V; v++) {
            int y[D];
            memcpy(y, f->vec[parent], sizeof y);
            int dist = abs(v - y[k]);
            if (dist == 0 || dist > near) continue;
            y[k] = v;
            if (f->tried[code(y)]) continue;
            if (dist < near) near = dist, n = 0;
            moves[n][0] = k, moves[n][1] = v, n++;
        }
    if (!n) return 0;
    int pick = (int)(splitmix(&f->rng) % (uint64_t)n);
    memcpy(x, f->vec[parent], sizeof(int) * D);
    x[moves[pick][0]] = moves[pick][1];
    f->tried[code(x)] = 1;
    return 1;
}

typedef struct run_out {
    int n;             /* nodes */
    int found_at;      /* id of the first optimal node, -1 */
    int selects[4096]; /* select() answers, in order */
    int n_selects;
    kf_mcts_node nodes[1024];
    int bad_select;    /* a failed / pruned / exhausted node was selected */
    int stopped;       /* select said nothing is left */
} run_out;

static void run_search(uint64_t seed, int budget, run_out *r)
{
    memset(r, 0, sizeof *r);
    r->found_at = -1;
    kf_mcts_params p = kf_mcts_default_params(budget, seed);
    kf_mcts *m = NULL;
    if (!CHECK(kf_mcts_create(&p, &m) == KF_OK)) return;
    fake f;
    memset(&f, 0, sizeof f);
    f.rng = seed * 7919 + 1;
    f.vec = calloc((size_t)budget, sizeof *f.vec);
    while (kf_mcts_count(m) < budget) {
        int node;
        if (kf_mcts_select(m, &node) != KF_OK) {
            r->stopped = 1;
            break;
        }
        if (r->n_selects < 4096) r->selects[r->n_selects++] = node;
        if (node != KF_MCTS_ROOT) {
            kf_mcts_node nd;
            kf_mcts_node_get(m, node, &nd);
            if (!nd.ok || nd.pruned || nd.exhausted) r->bad_select++;
        }
        int x[D];
        if (!fake_propose(&f, node, x)) {
            kf_mcts_exhausted(m, node);
            continue;
        }
        int ok = !fails(x);
        int id = kf_mcts_add(m, node, ok, ok ? latency(x) : 0);
        CHECK_EQ_INT(id, kf_mcts_count(m) - 1);
        memcpy(f.vec[id], x, sizeof x);
        if (ok && latency(x) == 10.0 && r->found_at < 0) r->found_at = id;
    }
    r->n = kf_mcts_count(m);
    for (int i = 0; i < r->n && i < 1024; i++) kf_mcts_node_get(m, i, &r->nodes[i]);
    free(f.vec);
    kf_mcts_free(m);
}

static void test_finds_optimum(void)
{
    /* 1296 candidates, 108 of them failing, the optimum 13 one-step moves from the nearest
     * start. With 300 evaluations, a random search would find it with p = 0.23 per seed. */
    int found = 0;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        static run_out r;
        run_search(seed, 300, &r);
        CHECK_EQ_INT(r.bad_select, 0);
        if (r.found_at >= 0) found++;
        else printf("seed %llu: optimum not found in %d nodes (stopped %d)\n",
                    (unsigned long long)seed, r.n, r.stopped);
        /* the reported best is the fastest node there is */
        double best = INFINITY;
        for (int i = 0; i < r.n; i++)
            if (r.nodes[i].ok && r.nodes[i].latency_us < best) best = r.nodes[i].latency_us;
        if (r.found_at >= 0) CHECK(best == 10.0);
    }
    CHECK_EQ_INT(found, 10);
}

static void test_failed_never_selected(void)
{
    /* a start that fails, and a start whose children all fail */
    kf_mcts_params p = kf_mcts_default_params(50, 3);
    kf_mcts *m = NULL;
    CHECK(kf_mcts_create(&p, &m) == KF_OK);
    int node;
    CHECK(kf_mcts_select(m, &node) == KF_OK && node == KF_MCTS_ROOT);
    CHECK_EQ_INT(kf_mcts_add(m, KF_MCTS_ROOT, 0, 0), 0);   /* failed */
    CHECK_EQ_INT(kf_mcts_add(m, KF_MCTS_ROOT, 1, 5.0), 1); /* ok */
    kf_mcts_exhausted(m, KF_MCTS_ROOT);
    int selected_fail = 0, n_failed_kids = 0;
    for (int it = 0; it < 40; it++) {
        if (kf_mcts_select(m, &node) != KF_OK) break;
        if (node == 0) selected_fail++;
        kf_mcts_node nd;
        kf_mcts_node_get(m, node, &nd);
        if (!nd.ok) selected_fail++;
        /* node 1's children fail; failures below them are never reached */
        kf_mcts_add(m, node, 0, 0);
        n_failed_kids++;
    }
    CHECK_EQ_INT(selected_fail, 0);
    /* every failure went below node 1 (the only ok node), so node 1 took them all */
    kf_mcts_node n1;
    kf_mcts_node_get(m, 1, &n1);
    CHECK_EQ_INT(n1.n_children, n_failed_kids);
    /* a latency that is not positive and finite is a failure too */
    int bad = kf_mcts_add(m, 1, 1, NAN);
    kf_mcts_node nb;
    CHECK(kf_mcts_node_get(m, bad, &nb) == KF_OK && !nb.ok && isinf(nb.best_us));
    CHECK_EQ_INT(kf_mcts_add(m, 12345, 1, 1.0), -1); /* no such parent */
    CHECK_EQ_INT(kf_mcts_best(m), 1);
    kf_mcts_free(m);
}

static void test_widening(void)
{
    /* e fixed at 0.5, no pruning: node A may hold ceil(sqrt(visits)) children */
    kf_mcts_params p = kf_mcts_default_params(1000, 1);
    p.widen_e0 = p.widen_e1 = 0.5;
    p.prune_visits = 0;
    kf_mcts *m = NULL;
    CHECK(kf_mcts_create(&p, &m) == KF_OK);
    int a = kf_mcts_add(m, KF_MCTS_ROOT, 1, 100.0);
    kf_mcts_exhausted(m, KF_MCTS_ROOT);
    int a_selected = 0, violations = 0;
    double lat = 99.0;
    for (int it = 0; it < 200; it++) {
        int node;
        if (!CHECK(kf_mcts_select(m, &node) == KF_OK)) break;
        kf_mcts_node na;
        kf_mcts_node_get(m, a, &na);
        if (node == a) {
            a_selected++;
            /* only while under the limit (its children are all alive here) */
            if (na.n_children >= (int)ceil(sqrt((double)na.visits) - 1e-9)) violations++;
        }
        kf_mcts_add(m, node, 1, lat);
        lat -= 0.01; /* every node improves a little: nothing gets pruned anyway */
    }
    kf_mcts_node na;
    kf_mcts_node_get(m, a, &na);
    CHECK_EQ_INT(violations, 0);
    CHECK_EQ_INT(na.visits, 201);
    CHECK_EQ_INT(na.n_children, a_selected);
    /* widening let A grow to about sqrt(visits) children, no more */
    CHECK(na.n_children <= (int)ceil(sqrt(201.0)));
    CHECK(na.n_children >= 5);
    kf_mcts_free(m);

    /* annealing: late in the budget e is near 0.3, so far fewer children */
    p = kf_mcts_default_params(200, 1);
    p.prune_visits = 0;
    CHECK(kf_mcts_create(&p, &m) == KF_OK);
    a = kf_mcts_add(m, KF_MCTS_ROOT, 1, 100.0);
    kf_mcts_exhausted(m, KF_MCTS_ROOT);
    lat = 99.0;
    violations = 0;
    for (int it = 0; it < 400; it++) {
        int node;
        if (!CHECK(kf_mcts_select(m, &node) == KF_OK)) break;
        kf_mcts_node nd;
        kf_mcts_node_get(m, node, &nd);
        double prog = fmin(1.0, kf_mcts_count(m) / 200.0);
        double e = 0.5 + (0.3 - 0.5) * prog;
        if (nd.n_children >= (int)ceil(pow((double)nd.visits, e) - 1e-9)) violations++;
        kf_mcts_add(m, node, 1, lat);
        lat -= 0.01;
    }
    CHECK_EQ_INT(violations, 0);
    kf_mcts_node_get(m, a, &na);
    CHECK(na.n_children <= (int)ceil(pow(401.0, 0.3)) + 4); /* grew early, then barely */
    kf_mcts_free(m);

    /* a node whose children are all failures is expanded past its limit: nothing else to do */
    p = kf_mcts_default_params(100, 1);
    p.prune_visits = 0;
    CHECK(kf_mcts_create(&p, &m) == KF_OK);
    a = kf_mcts_add(m, KF_MCTS_ROOT, 1, 100.0);
    kf_mcts_exhausted(m, KF_MCTS_ROOT);
    int all_a = 1;
    for (int it = 0; it < 20; it++) {
        int node;
        if (!CHECK(kf_mcts_select(m, &node) == KF_OK)) break;
        if (node != a) all_a = 0;
        kf_mcts_add(m, node, 0, 0);
    }
    CHECK(all_a);
    kf_mcts_node_get(m, a, &na);
    CHECK_EQ_INT(na.n_children, 20);
    /* ... until it is exhausted: then nothing is left */
    kf_mcts_exhausted(m, a);
    int node;
    CHECK(kf_mcts_select(m, &node) == KF_ERR_NOT_FOUND);
    kf_mcts_free(m);
}

static void test_pruning_and_exhaustion(void)
{
    kf_mcts_params p = kf_mcts_default_params(100, 1);
    p.widen_e0 = p.widen_e1 = 1.0; /* widening never blocks: it is not what is tested here */
    kf_mcts *m = NULL;
    CHECK(kf_mcts_create(&p, &m) == KF_OK);
    int a = kf_mcts_add(m, KF_MCTS_ROOT, 1, 10.0);
    int c = kf_mcts_add(m, KF_MCTS_ROOT, 1, 5.0); /* the incumbent lives elsewhere */
    kf_mcts_exhausted(m, KF_MCTS_ROOT);
    /* 9 worse children, then a better one, then 9 worse: not pruned (improvement reset it) */
    for (int i = 0; i < 9; i++) kf_mcts_add(m, a, 1, 20.0);
    kf_mcts_node na;
    kf_mcts_node_get(m, a, &na);
    CHECK(!na.pruned);
    int b = kf_mcts_add(m, a, 1, 9.0);
    for (int i = 0; i < 9; i++) kf_mcts_add(m, b, i % 2, 30.0);
    kf_mcts_node_get(m, a, &na);
    CHECK(!na.pruned);
    CHECK(na.best_us == 9.0);
    CHECK_EQ_INT(na.visits, 20);
    /* the 10th stale visit prunes B and A */
    kf_mcts_add(m, b, 1, 30.0);
    kf_mcts_node nb;
    kf_mcts_node_get(m, b, &nb);
    kf_mcts_node_get(m, a, &na);
    CHECK(nb.pruned);
    CHECK(na.pruned);
    /* only C's subtree is left; C holds the best, so no number of stale visits prunes it */
    int outside = 0;
    for (int it = 0; it < 40; it++) {
        int node;
        if (!CHECK(kf_mcts_select(m, &node) == KF_OK)) break;
        int x = node;
        while (x >= 0 && x != c) {
            kf_mcts_node nx;
            kf_mcts_node_get(m, x, &nx);
            x = nx.parent;
        }
        if (x != c) outside++;
        kf_mcts_add(m, node, 1, 50.0);
    }
    CHECK_EQ_INT(outside, 0);
    kf_mcts_node nc;
    kf_mcts_node_get(m, c, &nc);
    CHECK(!nc.pruned);
    CHECK_EQ_INT(nc.visits, 41);
    CHECK_EQ_INT(kf_mcts_best(m), c);
    /* a new best in A's old subtree moves the incumbent: pruned nodes keep their values */
    int d = kf_mcts_add(m, b, 1, 1.0);
    CHECK_EQ_INT(kf_mcts_best(m), d);
    kf_mcts_node_get(m, b, &nb);
    CHECK(nb.pruned && nb.best_us == 1.0);
    kf_mcts_free(m);

    /* with the root exhausted and every subtree pruned or spent, nothing is left */
    p = kf_mcts_default_params(100, 1);
    CHECK(kf_mcts_create(&p, &m) == KF_OK);
    a = kf_mcts_add(m, KF_MCTS_ROOT, 1, 10.0);
    c = kf_mcts_add(m, KF_MCTS_ROOT, 1, 5.0);
    kf_mcts_exhausted(m, KF_MCTS_ROOT);
    for (int i = 0; i < 10; i++) kf_mcts_add(m, a, 0, 0);
    kf_mcts_node_get(m, a, &na);
    CHECK(na.pruned); /* ten failures in a row */
    kf_mcts_exhausted(m, c);
    int node;
    CHECK(kf_mcts_select(m, &node) == KF_ERR_NOT_FOUND);
    kf_mcts_free(m);

    /* exhausted nodes are walked through to their children, never expanded */
    p = kf_mcts_default_params(100, 2);
    p.prune_visits = 0;
    CHECK(kf_mcts_create(&p, &m) == KF_OK);
    a = kf_mcts_add(m, KF_MCTS_ROOT, 1, 10.0);
    b = kf_mcts_add(m, a, 1, 8.0);
    kf_mcts_exhausted(m, KF_MCTS_ROOT);
    kf_mcts_exhausted(m, a);
    int ok_walk = 1;
    for (int it = 0; it < 30; it++) {
        if (!CHECK(kf_mcts_select(m, &node) == KF_OK)) break;
        if (node == a || node == KF_MCTS_ROOT) ok_walk = 0;
        kf_mcts_add(m, node, 1, 9.0 + it);
    }
    CHECK(ok_walk);
    kf_mcts_node_get(m, a, &na);
    CHECK_EQ_INT(na.n_children, 1);
    kf_mcts_free(m);
}

static void test_since_improvement(void)
{
    kf_mcts_params p = kf_mcts_default_params(10, 1);
    kf_mcts *m = NULL;
    CHECK(kf_mcts_create(&p, &m) == KF_OK);
    CHECK_EQ_INT(kf_mcts_best(m), -1);
    CHECK_EQ_INT(kf_mcts_since_improvement(m, 0.01), 0);
    kf_mcts_add(m, KF_MCTS_ROOT, 0, 0);
    CHECK_EQ_INT(kf_mcts_since_improvement(m, 0.01), 1); /* nothing ok yet */
    kf_mcts_add(m, KF_MCTS_ROOT, 1, 100.0); /* 1 */
    kf_mcts_add(m, 1, 1, 99.5);             /* 2: less than 1% better */
    kf_mcts_add(m, 2, 1, 98.0);             /* 3: more than 1% better than 100 */
    kf_mcts_add(m, 3, 1, 97.9);             /* 4: a little */
    kf_mcts_add(m, 3, 1, 120.0);            /* 5: worse */
    CHECK_EQ_INT(kf_mcts_best(m), 4);
    CHECK_EQ_INT(kf_mcts_since_improvement(m, 0.01), 2);
    CHECK_EQ_INT(kf_mcts_since_improvement(m, 0.0), 1);
    CHECK_EQ_INT(kf_mcts_since_improvement(m, 0.5), 4);
    kf_mcts_node n;
    CHECK(kf_mcts_node_get(m, 5, &n) == KF_OK);
    CHECK_EQ_INT(n.parent, 3);
    CHECK_EQ_INT(n.depth, 3);
    CHECK_EQ_INT(n.iteration, 5);
    CHECK(kf_mcts_node_get(m, 6, &n) == KF_ERR_INVALID);
    kf_mcts_free(m);
}

static int same_run(const run_out *a, const run_out *b)
{
    if (a->n != b->n || a->n_selects != b->n_selects) return 0;
    if (memcmp(a->selects, b->selects, sizeof(int) * (size_t)a->n_selects)) return 0;
    for (int i = 0; i < a->n && i < 1024; i++) {
        const kf_mcts_node *x = &a->nodes[i], *y = &b->nodes[i];
        if (x->parent != y->parent || x->ok != y->ok || x->latency_us != y->latency_us ||
            x->visits != y->visits || x->pruned != y->pruned || x->exhausted != y->exhausted)
            return 0;
    }
    return 1;
}

static void test_determinism(void)
{
    static run_out a, b, c;
    run_search(42, 150, &a);
    run_search(42, 150, &b);
    run_search(43, 150, &c);
    CHECK(same_run(&a, &b));
    CHECK(!same_run(&a, &c));

    /* the search's own seed breaks ties: four equal starting points */
    int picks[32], same_seed_same = 1;
    for (int s = 0; s < 32; s++) {
        for (int rep = 0; rep < 2; rep++) {
            kf_mcts_params p = kf_mcts_default_params(10, (uint64_t)s);
            kf_mcts *m = NULL;
            CHECK(kf_mcts_create(&p, &m) == KF_OK);
            for (int i = 0; i < 4; i++) kf_mcts_add(m, KF_MCTS_ROOT, 1, 10.0);
            kf_mcts_exhausted(m, KF_MCTS_ROOT);
            int node = -2;
            CHECK(kf_mcts_select(m, &node) == KF_OK);
            CHECK(node >= 0 && node < 4);
            if (rep == 0) picks[s] = node;
            else if (picks[s] != node) same_seed_same = 0;
            kf_mcts_free(m);
        }
    }
    CHECK(same_seed_same);
    int seen[4] = {0};
    for (int s = 0; s < 32; s++) seen[picks[s] & 3]++;
    CHECK(seen[0] && seen[1] && seen[2] && seen[3]); /* every tied child gets picked by some seed */
}

static void test_ten_thousand(void)
{
    /* random latencies, endless starting points, default pruning: 10,000 nodes quickly */
    kf_mcts_params p = kf_mcts_default_params(10000, 9);
    kf_mcts *m = NULL;
    CHECK(kf_mcts_create(&p, &m) == KF_OK);
    uint64_t rng = 5;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int max_depth = 0, bad = 0;
    while (kf_mcts_count(m) < 10000) {
        int node;
        if (!CHECK(kf_mcts_select(m, &node) == KF_OK)) break;
        uint64_t r = splitmix(&rng);
        if (node != KF_MCTS_ROOT) {
            kf_mcts_node nd;
            kf_mcts_node_get(m, node, &nd);
            if (!nd.ok || nd.pruned || nd.exhausted) bad++;
            if (nd.depth > max_depth) max_depth = nd.depth;
            if (r % 50 == 0) { /* the proposer sometimes runs dry */
                kf_mcts_exhausted(m, node);
                continue;
            }
        }
        int ok = r % 7 != 0;
        double lat = 1.0 + (double)(r >> 40) / (double)(1 << 24) * 100.0;
        kf_mcts_add(m, node, ok, lat);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("10,000 nodes in %.3f s (max depth %d)\n", s, max_depth);
    CHECK_EQ_INT(kf_mcts_count(m), 10000);
    CHECK_EQ_INT(bad, 0);
    CHECK(s < 5.0); /* generous for sanitizer builds; about 10 ms plain */
    int best = kf_mcts_best(m);
    kf_mcts_node nb;
    CHECK(kf_mcts_node_get(m, best, &nb) == KF_OK && nb.ok);
    kf_mcts_free(m);
}

static void test_bad_params(void)
{
    kf_mcts *m = (kf_mcts *)1;
    kf_mcts_params p = kf_mcts_default_params(10, 1);
    CHECK(p.c == 1.0 && p.widen_e0 == 0.5 && p.widen_e1 == 0.3 && p.prune_visits == 10);
    p.c = NAN;
    CHECK(kf_mcts_create(&p, &m) == KF_ERR_INVALID && m == NULL);
    p = kf_mcts_default_params(-1, 1);
    CHECK(kf_mcts_create(&p, &m) == KF_ERR_INVALID);
    CHECK(kf_mcts_create(NULL, &m) == KF_ERR_INVALID);
    kf_mcts_free(NULL);
    CHECK_EQ_INT(kf_mcts_count(NULL), 0);
}

int main(void)
{
    test_bad_params();
    test_since_improvement();
    test_failed_never_selected();
    test_widening();
    test_pruning_and_exhaustion();
    test_finds_optimum();
    test_determinism();
    test_ten_thousand();
    return check_done("test_mcts");
}
