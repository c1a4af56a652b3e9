/* A chain job (op "kforge::chain", docs/chains.md): one kernel computing several intercepted calls
 * that follow each other, linked by dataflow. job.json's "chain" is the chain spec the plugin
 * records (plugin/chains.c); the loader (job.c) checks it against the job's tensors and builds
 * each member's own signature, so that a chain template can bind every member with the same
 * code the one-op templates use.
 *
 * The job's tensors: inputs = the head's tensor inputs (n_head), then the externals (n_ext);
 * outputs = every member's, in member order (the head's first may alias one of its inputs; a
 * later member's is fresh, or in deferred mode, where it writes its input 0 in place (relu_ after
 * a batch norm), "alias_output": the earlier output it writes, also its member's): one each, or up to KF_CHAIN_EXTRA_OUTPUTS more where
 * "outputs_layout" marks them with their member (a norm's mean and rstd, which no member reads;
 * without the marks only the last member may have them). A member's input is one of: the
 * head's input i, an earlier member's (first) output, an external e. Scalars are named
 * "m<k>.<schema name>" in job.json and end up in member k's signature without the prefix. */
#ifndef KF_FORGE_JOB_CHAIN_H
#define KF_FORGE_JOB_CHAIN_H

#include <stddef.h>

#include "forge/job/sig.h"
#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KF_CHAIN_OP "kforge::chain"
#define KF_CHAIN_MAX_MEMBERS KF_JOB_MAX_OUTPUTS
#define KF_CHAIN_EXTRA_OUTPUTS 2 /* a member's outputs beyond its first */

enum { KF_CHAIN_HEAD, KF_CHAIN_MEMBER, KF_CHAIN_EXT };

typedef struct kf_chain_ref {
    int kind; /* KF_CHAIN_HEAD / MEMBER / EXT */
    int a;    /* the head's input index, the member, the external */
} kf_chain_ref;

typedef struct kf_job_member {
    kf_job_sig sig;                     /* op, in[] (the referenced tensors), out[], scalars */
    kf_chain_ref ref[KF_JOB_MAX_TENSORS]; /* where sig.in[i] comes from */
} kf_job_member;

typedef struct kf_job_chain {
    int n_members, n_head, n_ext;
    kf_job_member m[KF_CHAIN_MAX_MEMBERS];
    int out0[KF_CHAIN_MAX_MEMBERS];   /* the job's output index of member k's first output */
    int out_member[KF_JOB_MAX_OUTPUTS]; /* the member of each of the job's outputs */
} kf_job_chain;

struct cJSON;
/* Check the spec (untrusted) against the job's tensors (job->in/out/out_alias as parsed) and fill
 * ch (members' sigs without scalars); `layout` is job.json's "outputs_layout" (NULL: none), whose
 * "member" marks say which member each output is. Errors name the member and its op. */
kf_status kf_job_chain_parse(const struct cJSON *spec, const struct cJSON *layout, const kf_job_sig *job,
                             kf_job_chain *ch, char *err, size_t errcap);
/* The job's input index of member k's input i (HEAD: i, EXT: n_head + e); -1 for a member's
 * output. */
int kf_job_chain_arg(const kf_job_chain *ch, int k, int i);

#ifdef __cplusplus
}
#endif
#endif
