#if KF_VW > 1
typedef kf_raw_sel<KF_ES * KF_VW>::t kf_r;
#define KF_WORDS ((KF_ES * KF_VW + 3) / 4)
template <int GATHER, long long IS0>
__device__ __forceinline__ kf_r kf_ld(const kf_e *p, kf_idx o)
{
    if constexpr (GATHER == 0) {
        return kf_ldg(reinterpret_cast<const kf_r *>(p + o));
    } else {
        unsigned w[KF_WORDS];
#pragma unroll
        for (int i = 0; i < KF_WORDS; i++) w[i] = 0u;
#pragma unroll
        for (int k = 0; k < KF_VW; k++) kf_put_e(w, k, __ldg(p + o + (kf_idx)(k * IS0)));
        kf_r r;
        kf_join(w, r);
        return r;
    }
}
__device__ __forceinline__ void kf_st(kf_e *p, kf_r v)
{
    kf_stwb(reinterpret_cast<kf_r *>(p), v);
}
#else
typedef kf_e kf_r;
template <int GATHER, long long IS0>
__device__ __forceinline__ kf_r kf_ld(const kf_e *p, kf_idx o)
{
    return __ldg(p + o);
}
__device__ __forceinline__ void kf_st(kf_e *p, kf_r v) { *p = v; }
#endif

