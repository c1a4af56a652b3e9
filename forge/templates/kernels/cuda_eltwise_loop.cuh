typedef KF_TYPE kf_t;
typedef KF_TYPE_A kf_ta; /* operand a: the output's type except for a cast */

typedef kf_vec<kf_t, KF_VW> kf_v;

/* KF_VW values of an operand at element offset o: 0 a vector load, 1 one value
 * broadcast along the innermost dim (stride 0), 2 KF_VW loads IS0 apart */
template <int MODE, long long IS0, class T>
__device__ __forceinline__ void kf_load(const T *p, kf_idx o, float (&v)[KF_VW])
{
    if constexpr (MODE == 0) {
        kf_vec<T, KF_VW>::unpack(kf_vec<T, KF_VW>::ld(p + o), v);
    } else if constexpr (MODE == 1) {
        const float s = kf_to_f(p[o]);
#pragma unroll
        for (int e = 0; e < KF_VW; e++) v[e] = s;
    } else {
#pragma unroll
        for (int e = 0; e < KF_VW; e++) v[e] = kf_to_f(p[o + (kf_idx)(e * IS0)]);
    }
}

#define KF_TILE ((long long)KF_NT * KF_UN) /* vectors a block takes per step */

extern "C" __global__ void __launch_bounds__(KF_NT) kf_kernel(KF_PARAMS)
{
    const int tid = threadIdx.x;
#if KF_INPLACE && !KF_COPY
    const kf_t *a = y; /* in place: the output is the first argument */
#endif
#if KF_GS
    for (long long q0 = (long long)blockIdx.x * KF_TILE; q0 < KF_NVEC;
         q0 += (long long)gridDim.x * KF_TILE) {
#else
    {
        const long long q0 = (long long)blockIdx.x * KF_TILE;
#endif
        float va[KF_UN][KF_VW];
#if KF_NIN == 2
        float vb[KF_UN][KF_VW];
#endif
#pragma unroll
        for (int u = 0; u < KF_UN; u++) {
            const long long q = q0 + u * KF_NT + tid;
            if (q < KF_NVEC) {
                const kf_idx i = (kf_idx)(q * KF_VW);
                kf_load<KF_AMODE, KF_AIS0>(a, kf_off_a(i), va[u]);
#if KF_NIN == 2
                kf_load<KF_BMODE, KF_BIS0>(b, kf_off_b(i), vb[u]);
#endif
            }
        }
#pragma unroll
        for (int u = 0; u < KF_UN; u++) {
            const long long q = q0 + u * KF_NT + tid;
            if (q < KF_NVEC) {
                float r[KF_VW];
#pragma unroll
                for (int e = 0; e < KF_VW; e++)
#if KF_NIN == 2
                    r[e] = kf_op(va[u][e], vb[u][e]);
#else
                    r[e] = kf_op(va[u][e]);
#endif
