/* cuda_chain: the row reduction's combine over the threads that share a row (KF_LANES of them:
 * the block, KF_NT threads in whole warps, or with KF_ROW_WARP one warp or an aligned group of
 * its lanes, KF_GMASK), every one of them gets
 * the row's value: warp shuffles, and for a block one shared-memory step, shuffles again.
 * KF_RCOMB and KF_RINIT are the reduction's (sum / mean / amax / a 2-norm's sum of squares; a sum
 * for a row tail's sums),
 * kf_ct its type; kMax: a max instead (a softmax's; a NaN is dropped, its exp brings it back).
 * The block's trailing barrier lets the next row reuse the scratch; a warp needs none (its
 * warps take rows of their own and never meet at a barrier). Its barriers also make the row's
 * stores before them visible to all of its threads, which later loops read back. */
template <int kMax>
__device__ __forceinline__ kf_ct kf_chain_comb(kf_ct a, kf_ct b)
{
    return kMax ? (b > a ? b : a) : KF_RCOMB(a, b);
}

template <int kMax>
__device__ __forceinline__ kf_ct kf_chain_row_op(kf_ct v)
{
#if KF_ROW_WARP
    /* the row's stores so far, seen by every lane (the shuffles do not order memory); a group of
     * lanes sharing a row meets alone: the other rows of its warp may have ended their loop */
    __syncwarp(KF_GMASK);
#pragma unroll
    for (int o = KF_LANES / 2; o > 0; o >>= 1) v = kf_chain_comb<kMax>(v, __shfl_xor_sync(KF_GMASK, v, o));
#else
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = kf_chain_comb<kMax>(v, __shfl_xor_sync(0xffffffffu, v, o));
    __shared__ kf_ct part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) part[warp] = v;
    __syncthreads();
    v = lane < (KF_NT >> 5) ? part[lane] : kMax ? -(kf_ct)KF_PW_INF : KF_RINIT;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = kf_chain_comb<kMax>(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
#endif
    return v;
}

__device__ __forceinline__ kf_ct kf_chain_row_reduce(kf_ct v) { return kf_chain_row_op<0>(v); }
__device__ __forceinline__ kf_ct kf_chain_row_max(kf_ct v) { return kf_chain_row_op<1>(v); }

#if defined(KF_CL) && KF_CL > 1
/* A group norm's group split over a cluster of KF_CL blocks (kernels/cuda_cluster.cuh printed
 * before): each block's value (thread 0's, after kf_chain_row_reduce) in its shared memory, read
 * by every block of the cluster in rank order, so that all of them get the same sum. The second
 * barrier keeps the slot until every block has read it (the next reduction, or a block's exit). */
__device__ __forceinline__ kf_ct kf_chain_group_reduce(kf_ct v)
{
    __shared__ kf_ct slot;
    v = kf_chain_row_reduce(v);
    if (threadIdx.x == 0) slot = v;
    kf_cluster_arrive();
    kf_cluster_wait();
    kf_ct s = KF_RINIT;
#pragma unroll
    for (unsigned k = 0; k < KF_CL; k++) s = KF_RCOMB(s, kf_ld_cluster<kf_ct>(&slot, k));
    kf_cluster_arrive();
    kf_cluster_wait();
    return s;
}
#else
__device__ __forceinline__ kf_ct kf_chain_group_reduce(kf_ct v) { return kf_chain_row_reduce(v); }
#endif
