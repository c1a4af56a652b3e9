/* Monte Carlo Tree Search over kernel candidates (mcts.h).
 *
 * Every node keeps its subtree's best latency, its visits (itself plus every node added below it)
 * and a staleness counter (nodes added below it since its best last improved); a stale subtree is
 * pruned unless it holds the overall best, so the search keeps refining its incumbent instead of
 * stopping after a few fruitless tries. Whether a subtree
 * still holds anything to expand ("alive") is kept incrementally, with a count of alive children
 * per node, so select() walks one path and looks only at the children along it. */
#include "forge/search/mcts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct mnode {
    int parent, depth, ok;
    double latency, best;
    int visits, stale;
    int n_children, alive_children;
    int first_child, last_child, next_sibling; /* children in order of addition */
    unsigned char exhausted, pruned, alive;
    unsigned char on_best; /* the overall best node or one of its ancestors: never pruned */
} mnode;

/* A point where the overall best improved, for kf_mcts_since_improvement. */
typedef struct record {
    int id;
    double latency;
} record;

struct kf_mcts {
    kf_mcts_params p;
    uint64_t rng;
    mnode root; /* virtual: ok, latency and depth unused */
    mnode *nodes;
    int count, cap;
    int best_id;
    record *records;
    int n_records, cap_records;
};

kf_mcts_params kf_mcts_default_params(int budget, uint64_t seed)
{
    kf_mcts_params p;
    memset(&p, 0, sizeof p);
    p.budget = budget;
    p.c = 1.0;
    p.widen_e0 = 0.5;
    p.widen_e1 = 0.3;
    p.prune_visits = 10;
    p.seed = seed;
    return p;
}

/* splitmix64: small, seedable, and the same everywhere (no rand()). */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void node_init(mnode *n, int parent, int depth)
{
    memset(n, 0, sizeof *n);
    n->parent = parent;
    n->depth = depth;
    n->best = INFINITY;
    n->first_child = n->last_child = n->next_sibling = -1;
}

kf_status kf_mcts_create(const kf_mcts_params *p, kf_mcts **out)
{
    if (!out) return KF_ERR_INVALID;
    *out = NULL;
    if (!p || p->budget < 0 || !isfinite(p->c) || p->c < 0 || !(p->widen_e0 >= 0) ||
        !(p->widen_e0 <= 1) || !(p->widen_e1 >= 0) || !(p->widen_e1 <= 1))
        return KF_ERR_INVALID;
    kf_mcts *m = calloc(1, sizeof *m);
    if (!m) return KF_ERR_NOMEM;
    m->p = *p;
    m->rng = p->seed;
    node_init(&m->root, KF_MCTS_ROOT, -1);
    m->root.alive = 1; /* not exhausted yet: it can always be asked for a starting point */
    m->best_id = -1;
    *out = m;
    return KF_OK;
}

void kf_mcts_free(kf_mcts *m)
{
    if (!m) return;
    free(m->nodes);
    free(m->records);
    free(m);
}

static mnode *at(kf_mcts *m, int id)
{
    return id == KF_MCTS_ROOT ? &m->root : &m->nodes[id];
}

static int valid_id(const kf_mcts *m, int id)
{
    return id == KF_MCTS_ROOT || (id >= 0 && id < m->count);
}

/* Can the proposer be asked for a new child of this node? */
static int expandable(const kf_mcts *m, const mnode *n)
{
    if (n == &m->root) return !n->exhausted;
    return n->ok && !n->exhausted && !n->pruned;
}

/* Re-derive `alive` for `id` and, where it changed, for its ancestors. A subtree is alive when
 * its top can be expanded or one of its children is alive; failed and pruned nodes never are. */
static void refresh_alive(kf_mcts *m, int id)
{
    for (;;) {
        mnode *n = at(m, id);
        int alive = (n == &m->root || (n->ok && !n->pruned)) &&
                    (expandable(m, n) || n->alive_children > 0);
        if (alive == n->alive) return;
        n->alive = (unsigned char)alive;
        if (id == KF_MCTS_ROOT) return;
        at(m, n->parent)->alive_children += alive ? 1 : -1;
        id = n->parent;
    }
}

/* Children allowed under progressive widening: ceil(visits^e), e annealed e0 -> e1 over the
 * budget (by nodes added so far). */
static int widen_limit(const kf_mcts *m, int visits)
{
    double progress = m->p.budget > 0 ? (double)m->count / m->p.budget : 1.0;
    if (progress > 1.0) progress = 1.0;
    double e = m->p.widen_e0 + (m->p.widen_e1 - m->p.widen_e0) * progress;
    double v = visits > 1 ? (double)visits : 1.0;
    /* the epsilon keeps pow(9, 0.5) = 3.0000000000000004 from allowing a fourth child */
    double lim = ceil(pow(v, e) - 1e-9);
    return lim < 1.0 ? 1 : lim > 1e9 ? 1000000000 : (int)lim;
}

kf_status kf_mcts_select(kf_mcts *m, int *node)
{
    if (!m || !node) return KF_ERR_INVALID;
    *node = KF_MCTS_ROOT;
    int id = KF_MCTS_ROOT;
    for (;;) {
        mnode *n = at(m, id);
        if (expandable(m, n) &&
            (n->alive_children == 0 || n->n_children < widen_limit(m, n->visits))) {
            *node = id;
            return KF_OK;
        }
        if (n->alive_children == 0) return KF_ERR_NOT_FOUND; /* only the root gets here */

        /* UCT on normalized best latency: reward = overall best / subtree best, in (0, 1] */
        double best_root = m->root.best, lnv = log(n->visits > 1 ? (double)n->visits : 1.0);
        int pick = -1, ties = 0;
        double pick_score = -INFINITY;
        for (int c = n->first_child; c >= 0; c = m->nodes[c].next_sibling) {
            const mnode *ch = &m->nodes[c];
            if (!ch->alive) continue;
            double score = best_root / ch->best + m->p.c * sqrt(lnv / ch->visits);
            if (score > pick_score) {
                pick = c, pick_score = score, ties = 1;
            } else if (score == pick_score) {
                /* reservoir sampling: each of the tied children equally likely */
                if (rng_next(&m->rng) % (uint64_t)++ties == 0) pick = c;
            }
        }
        if (pick < 0) return KF_ERR_NOT_FOUND; /* alive_children out of step: cannot happen */
        id = pick;
    }
}

void kf_mcts_exhausted(kf_mcts *m, int node)
{
    if (!m || !valid_id(m, node)) return;
    at(m, node)->exhausted = 1;
    refresh_alive(m, node);
}

static int grow_nodes(kf_mcts *m)
{
    if (m->count < m->cap) return 1;
    if (m->cap > (1 << 28)) return 0;
    int cap = m->cap ? m->cap * 2 : 64;
    mnode *p = realloc(m->nodes, (size_t)cap * sizeof *p);
    if (!p) return 0;
    m->nodes = p;
    m->cap = cap;
    return 1;
}

static int add_record(kf_mcts *m, int id, double latency)
{
    if (m->n_records == m->cap_records) {
        int cap = m->cap_records ? m->cap_records * 2 : 16;
        record *r = realloc(m->records, (size_t)cap * sizeof *r);
        if (!r) return 0;
        m->records = r;
        m->cap_records = cap;
    }
    m->records[m->n_records++] = (record){id, latency};
    return 1;
}

int kf_mcts_add(kf_mcts *m, int parent, int ok, double latency_us)
{
    if (!m || !valid_id(m, parent)) return -1;
    /* a latency the rewards cannot use (0, negative, NaN, inf) is no result */
    ok = ok && isfinite(latency_us) && latency_us > 0;
    if (!grow_nodes(m)) return -1;
    if (ok && latency_us < m->root.best && !add_record(m, m->count, latency_us)) return -1;

    int id = m->count++;
    mnode *n = &m->nodes[id], *p = at(m, parent);
    node_init(n, parent, parent == KF_MCTS_ROOT ? 0 : p->depth + 1);
    n->ok = ok;
    n->latency = ok ? latency_us : 0.0;
    n->best = ok ? latency_us : INFINITY;
    n->visits = 1;
    if (p->last_child >= 0)
        m->nodes[p->last_child].next_sibling = id;
    else
        p->first_child = id;
    p->last_child = id;
    p->n_children++;
    if (ok && latency_us < m->root.best) {
        for (int a = m->best_id; a >= 0; a = m->nodes[a].parent) m->nodes[a].on_best = 0;
        for (int a = id; a >= 0; a = m->nodes[a].parent) m->nodes[a].on_best = 1;
        m->best_id = id;
    }
    refresh_alive(m, id);

    /* back-propagate: visits, subtree bests, and staleness (which prunes) */
    for (int a = parent;; a = at(m, a)->parent) {
        mnode *an = at(m, a);
        an->visits++;
        if (ok && latency_us < an->best) {
            an->best = latency_us;
            an->stale = 0;
        } else {
            an->stale++;
        }
        if (a != KF_MCTS_ROOT && m->p.prune_visits > 0 && an->stale >= m->p.prune_visits &&
            !an->pruned && !an->on_best) {
            an->pruned = 1;
            refresh_alive(m, a);
        }
        if (a == KF_MCTS_ROOT) break;
    }
    return id;
}

int kf_mcts_count(const kf_mcts *m)
{
    return m ? m->count : 0;
}

kf_status kf_mcts_node_get(const kf_mcts *m, int id, kf_mcts_node *out)
{
    if (!m || !out || id < 0 || id >= m->count) return KF_ERR_INVALID;
    const mnode *n = &m->nodes[id];
    memset(out, 0, sizeof *out);
    out->id = id;
    out->parent = n->parent;
    out->depth = n->depth;
    out->ok = n->ok;
    out->latency_us = n->latency;
    out->best_us = n->best;
    out->visits = n->visits;
    out->n_children = n->n_children;
    out->exhausted = n->exhausted;
    out->pruned = n->pruned;
    out->iteration = id;
    return KF_OK;
}

int kf_mcts_best(const kf_mcts *m)
{
    return m ? m->best_id : -1;
}

int kf_mcts_since_improvement(const kf_mcts *m, double rel)
{
    if (!m) return 0;
    if (m->n_records == 0) return m->count;
    if (!(rel > 0)) rel = 0;
    /* the records are every strict improvement; keep those that beat the last kept one by rel */
    double ref = m->records[0].latency;
    int last = m->records[0].id;
    for (int i = 1; i < m->n_records; i++) {
        if (m->records[i].latency < ref * (1.0 - rel)) {
            ref = m->records[i].latency;
            last = m->records[i].id;
        }
    }
    return m->count - 1 - last;
}
