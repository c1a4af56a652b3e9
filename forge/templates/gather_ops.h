/* The memory-bound gathers, described once: aten::embedding(weight [V, D], indices),
 * aten::index_select(self, dim, index) and aten::gather(self, dim, index) all write
 *   out[c] = src[so(c) + index[io(c)] * gst]
 * over the output's coordinates c, where so and io are sums of c's coordinates times per-dim
 * strides (0 where a dim does not address that tensor). The plan holds those strides per output
 * dim; host_gather.c and cuda_gather.c render kernels from it. An index outside [0, V) is an
 * error in eager (all three refuse negative indices): the host kernel checks every index first
 * and declines the call (eager then raises its error); the CUDA kernel traps, as eager's
 * device-side assert does. */
#ifndef KF_FORGE_TEMPLATES_GATHER_OPS_H
#define KF_FORGE_TEMPLATES_GATHER_OPS_H

#include <stdint.h>

#include "common/strbuf.h"
#include "forge/job/sig.h"
#include "kforge.h"

typedef struct kf_gather_plan {
    int src_dt, idx_dt;
    int n; /* output dims, logical order (the last is the inner loop) */
    int64_t size[KF_MAX_DIMS], ist[KF_MAX_DIMS], sst[KF_MAX_DIMS], ost[KF_MAX_DIMS];
    int64_t gst, v;  /* the gathered dim's source stride and size */
    int64_t numel;   /* output elements */
    int ni;          /* the index tensor's own dims (the up-front check walks them) */
    int64_t isize[KF_MAX_DIMS], istride[KF_MAX_DIMS];
    int64_t inumel;
} kf_gather_plan;

/* 1 and the plan when `sig` is one of the three with an int64/int32 index, a source of a dtype
 * `host` (else CUDA) handles, an output dense and non-overlapping of eager's shape. */
int kf_gather_plan_make(const kf_job_sig *sig, int host, kf_gather_plan *p);

/* KF_Q (rows: output elements / inner size), KF_D0, KF_IST0, KF_SST0, KF_OST0, KF_GST, KF_V,
 * KF_IN (index elements), and the offset functions kf_io(q), kf_so(q), kf_oo(q) of a row's first
 * element and kf_ix(e) of index element e, each prefixed by `fnq`. */
void kf_gather_emit(kf_strbuf *b, const kf_gather_plan *p, const char *fnq);

#endif
