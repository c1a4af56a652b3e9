/* Monte Carlo Tree Search over kernel candidates (docs/architecture.md, "MCTS").
 *
 * Node = one candidate. Value = median latency in us (lower is better); a failed node (did not
 * compile, wrong, crashed, ...) is never selected again. Selection walks from the virtual root by
 * UCT on the best latency in each subtree (normalized), with exploration constant c (1.0);
 * progressive widening lets a node have at most ceil(visits^e) children, e annealed from e0 (0.5)
 * to e1 (0.3) over the iteration budget; a subtree that got `prune_visits` (10) visits in a row
 * without improving its best is pruned, unless it holds the overall best node (the incumbent's
 * lineage stays open; the caller's stagnation rule, kf_mcts_since_improvement, ends a search).
 * Ties are broken by a seeded PRNG, so the tree is a deterministic function of (seed, the
 * sequence of results): two runs with the same seed and the same latencies build the same tree.
 *
 * The search never evaluates anything itself: the caller asks where to expand, makes and
 * evaluates a candidate there, and reports the result. */
#ifndef KF_FORGE_MCTS_H
#define KF_FORGE_MCTS_H

#include <stdint.h>

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KF_MCTS_ROOT (-1) /* the virtual root: its children are fresh starting points */

typedef struct kf_mcts_params {
    int budget;          /* planned iterations (for annealing the widening exponent) */
    double c;            /* UCT exploration constant (1.0) */
    double widen_e0, widen_e1; /* progressive widening exponent, start and end (0.5, 0.3) */
    int prune_visits;    /* nodes added in a row below a node without improving its subtree's
                            best that prune it (10), unless its subtree holds the overall best
                            node; <= 0: never prune */
    uint64_t seed;
} kf_mcts_params;

/* Defaults as above with `budget` and `seed`. */
kf_mcts_params kf_mcts_default_params(int budget, uint64_t seed);

typedef struct kf_mcts kf_mcts;

kf_status kf_mcts_create(const kf_mcts_params *p, kf_mcts **out);
void kf_mcts_free(kf_mcts *m);

/* Where to expand next: a node id, or KF_MCTS_ROOT. KF_ERR_NOT_FOUND when nothing is left to
 * expand (every node exhausted, failed or pruned, and the root exhausted). */
kf_status kf_mcts_select(kf_mcts *m, int *node);
/* The proposer has nothing new to offer below `node` (or below the root): never select it for
 * expansion again (it stays in the tree with its value). */
void kf_mcts_exhausted(kf_mcts *m, int node);
/* Add the evaluated child of `parent` (KF_MCTS_ROOT for a starting point): ok = correct and
 * timed, latency_us its median (ok with a latency that is not a positive finite number counts as
 * failed). Back-propagates visits and best values. Returns its id (ids are 0, 1, 2, ... in order
 * of addition), or -1 when out of memory or `parent` is no node. */
int kf_mcts_add(kf_mcts *m, int parent, int ok, double latency_us);

typedef struct kf_mcts_node {
    int id, parent, depth;   /* depth 0 = child of the root */
    int ok;
    double latency_us;       /* its own (meaningless when !ok) */
    double best_us;          /* best in its subtree (INFINITY when none ok) */
    int visits, n_children;
    int exhausted, pruned;
    int iteration;           /* order of addition (== id) */
} kf_mcts_node;

int kf_mcts_count(const kf_mcts *m);
/* Copy of node `id` (0 <= id < count). */
kf_status kf_mcts_node_get(const kf_mcts *m, int id, kf_mcts_node *out);
/* The fastest ok node, or -1. */
int kf_mcts_best(const kf_mcts *m);
/* Iterations since the best latency last improved by more than `rel` (e.g. 0.01). */
int kf_mcts_since_improvement(const kf_mcts *m, double rel);

#ifdef __cplusplus
}
#endif
#endif
