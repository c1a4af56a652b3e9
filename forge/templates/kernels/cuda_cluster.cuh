/* Thread-block clusters (sm_90, a kernel declared __cluster_dims__): the cluster barrier's two
 * halves, this block's rank, and a value of A (whole floats) at the same shared address in
 * another block of the cluster (distributed shared memory). Printed before a kernel that splits
 * one group over a cluster (cuda_norm_group, cuda_chain). */
__device__ __forceinline__ void kf_cluster_arrive()
{
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void kf_cluster_wait()
{
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned kf_cluster_rank()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
/* the A at the same shared address p in block `rank` of this cluster */
template <class A>
__device__ __forceinline__ A kf_ld_cluster(const float *p, unsigned rank)
{
    A v;
    float *o = reinterpret_cast<float *>(&v);
    const unsigned local = (unsigned)__cvta_generic_to_shared(p);
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                 : "=r"(remote)
                 : "r"(local), "r"(rank));
#pragma unroll
    for (int k = 0; k < (int)(sizeof(A) / 4); k++)
        asm volatile("ld.shared::cluster.f32 %0, [%1];"
                     : "=f"(o[k])
                     : "r"(remote + 4u * k)
                     : "memory");
    return v;
}
