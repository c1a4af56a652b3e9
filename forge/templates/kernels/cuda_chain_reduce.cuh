/* cuda_chain: the row reduction's combine over the block (KF_NT threads, whole warps), every
 * thread gets the row's value: warp shuffles, one shared-memory step, shuffles again. KF_RCOMB
 * and KF_RINIT are the reduction's (sum / mean / amax; a sum for a layer norm's two), kf_ct its
 * type. The trailing barrier
 * lets the next row reuse the scratch. */
__device__ __forceinline__ kf_ct kf_chain_block_reduce(kf_ct v)
{
    __shared__ kf_ct part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = KF_RCOMB(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) part[warp] = v;
    __syncthreads();
    v = lane < (KF_NT >> 5) ? part[lane] : KF_RINIT;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = KF_RCOMB(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
    return v;
}
