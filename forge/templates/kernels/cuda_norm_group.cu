/* One group (n, g) of KF_E = KF_D * KF_HW elements per team of KF_TPG threads, KF_GPB
 * groups per block; or, with KF_SPLIT > 1, per thread-block cluster of KF_SPLIT blocks,
 * each taking a contiguous share of the group's vectors and merging statistics through
 * distributed shared memory. Vector i of a group holds its elements i*KF_VEC ... in memory
 * order: channel-major (NCHW) or pixel-major (channels last, KF_CL). */
#define KF_D (KF_C / KF_G)
#define KF_E ((long long)KF_D * KF_HW)
#define KF_NV ((int)(KF_E / KF_VEC))            /* vectors per group */
#define KF_NGRP ((long long)KF_N * KF_G)
typedef kf_vec<kf_x_t, KF_VEC> kf_xv;
typedef kf_vec<kf_y_t, KF_VEC> kf_yv;
typedef kf_xv::raw kf_xr;
#if KF_STATS == 1
typedef kf_w3 kf_acc_t;
#elif KF_STATS == 2
typedef kf_s2 kf_acc_t;
#else
typedef kf_s1 kf_acc_t;
#endif

/* accumulate one vector */
__device__ __forceinline__ void kf_take(kf_acc_t &a, const float (&f)[KF_VEC])
{
#if KF_STATS == 1
    kf_welford(a, f);
#elif KF_STATS == 2
#pragma unroll
    for (int e = 0; e < KF_VEC; e++) a.a += f[e], a.b += f[e] * f[e];
#else
#pragma unroll
    for (int e = 0; e < KF_VEC; e++) a.a += f[e];
#endif
}

/* element offset of vector i of group ng */
__device__ __forceinline__ long long kf_off(long long ng, int i)
{
#if KF_CL
    const long long n = ng / KF_G, e = (long long)i * KF_VEC;
    return (n * KF_HW + e / KF_D) * KF_C + (ng % KF_G) * KF_D + e % KF_D;
#else
    return ng * KF_E + (long long)i * KF_VEC;
#endif
}


/* v (the block's result, valid everywhere) combined over the cluster, in rank order. `slot`
 * and `bcast` serve one call only: a fast block may start the next while a slow one still
 * reads. */
template <class A>
__device__ __forceinline__ A kf_cluster_reduce(A v, float *slot, float *bcast)
{
#if KF_SPLIT > 1
    if (threadIdx.x == 0) *reinterpret_cast<A *>(slot) = v;
    kf_cluster_arrive();
    kf_cluster_wait();
    if (threadIdx.x == 0) {
        A t = kf_ld_cluster<A>(slot, 0);
        for (unsigned r = 1; r < KF_SPLIT; r++) t = kf_comb(t, kf_ld_cluster<A>(slot, r));
        *reinterpret_cast<A *>(bcast) = t;
    }
    __syncthreads();
    v = *reinterpret_cast<const A *>(bcast);
#else
    (void)slot, (void)bcast;
#endif
    return v;
}

/* vectors per thread of a block's share, at most; loops over them: fully unrolled when the
 * share lives in registers (KF_REGS) */
#define KF_PERT (((KF_NV + KF_SPLIT - 1) / KF_SPLIT + KF_TPG - 1) / KF_TPG)
#if KF_REGS
#define KF_FOR_SHARE _Pragma("unroll") for (int k = 0; k < KF_PERT; k++)
#define KF_FETCH(k, j, i) reg[k]
#else
#define KF_FOR_SHARE _Pragma("unroll 4") for (int k = 0; k < KF_PERT; k++)
#if KF_STAGED > 0
#define KF_FETCH(k, j, i) ((j) < KF_STAGED ? stage[j] : kf_xv::ld(x + kf_off(ng, i)))
#else
#define KF_FETCH(k, j, i) kf_xv::ld(x + kf_off(ng, i))
#endif
#endif

extern "C" __global__ void
#if KF_SPLIT > 1
__cluster_dims__(KF_SPLIT, 1, 1)
#endif
__launch_bounds__(KF_BLOCK) kf_kernel(KF_PARAMS)
{
    __shared__ float kf_red[KF_RED_FLOATS];
    __shared__ float kf_slot[2][4], kf_bcast[2][4];
#if KF_STAGED > 0
    extern __shared__ __align__(16) unsigned char kf_smem[];
    kf_xr *const stage =
        reinterpret_cast<kf_xr *>(kf_smem) + (threadIdx.x / KF_TPG) * KF_STAGED;
#endif
#if KF_ABTAB
    __shared__ float2 kf_ab[KF_GPB][KF_D]; /* per channel of the group: a, b */
#endif
#if KF_REGS
    kf_xr reg[KF_PERT];
#endif
    const int lt = threadIdx.x % KF_TPG;
#if KF_SPLIT > 1
    const long long ng = blockIdx.x / KF_SPLIT;
    const unsigned rank = kf_cluster_rank();
    const bool active = true;
#else
    const long long ng = (long long)blockIdx.x * KF_GPB + threadIdx.x / KF_TPG;
    const unsigned rank = 0;
    const bool active = ng < KF_NGRP; /* spare teams of the last block join the barriers */
#endif
    const int lo = (int)((long long)rank * KF_NV / KF_SPLIT);
    const int cnt = active ? (int)((long long)(rank + 1) * KF_NV / KF_SPLIT) - lo : 0;

    /* pass 1: read this share once, stage what fits, accumulate */
    kf_acc_t acc = {};
    KF_FOR_SHARE {
        const int j = lt + k * KF_TPG;
        if (j < cnt) {
            const kf_xr r = kf_xv::ld(x + kf_off(ng, lo + j));
#if KF_REGS
            reg[k] = r;
#elif KF_STAGED > 0
            if (j < KF_STAGED) stage[j] = r; /* read back by this same thread only */
#endif
            float f[KF_VEC];
            kf_xv::unpack(r, f);
            kf_take(acc, f);
        }
    }
    acc = kf_cluster_reduce(kf_team_reduce(acc, kf_red), kf_slot[0], kf_bcast[0]);

    float mean, var;
#if KF_STATS == 1
    mean = acc.m;
    var = acc.q / (float)KF_E;
#elif KF_STATS == 2
    mean = acc.a / (float)KF_E;
    var = acc.b / (float)KF_E - mean * mean;
#else
    mean = acc.a / (float)KF_E;
    kf_s1 sq = {};
    KF_FOR_SHARE {
        const int j = lt + k * KF_TPG;
        if (j < cnt) {
            float f[KF_VEC];
            kf_xv::unpack(KF_FETCH(k, j, lo + j), f);
#pragma unroll
            for (int e = 0; e < KF_VEC; e++) {
                const float d = f[e] - mean;
                sq.a += d * d;
            }
        }
    }
    sq = kf_cluster_reduce(kf_team_reduce(sq, kf_red), kf_slot[1], kf_bcast[1]);
    var = sq.a / (float)KF_E;
#endif
#if KF_SPLIT > 1
    kf_cluster_arrive(); /* done reading the others' slots: they wait for this to exit */
#endif
    /* like torch: eps in the input's type; statistics stored in theirs, used as stored */
    const float eps = kf_to_f(kf_from_f<kf_x_t>((float)(KF_EPS)));
    const float rstd = rsqrtf(fmaxf(var, 0.f) + eps);
    if (active && rank == 0 && lt == 0) {
        mean_out[ng] = kf_from_f<kf_m_t>(mean);
        rstd_out[ng] = kf_from_f<kf_r_t>(rstd);
    }
    const float ms = kf_to_f(kf_from_f<kf_m_t>(mean));
    const float rs = kf_to_f(kf_from_f<kf_r_t>(rstd));
    const int c_first = (int)(ng % KF_G) * KF_D; /* the group's first channel */
    (void)c_first;
#if KF_HAS_W || KF_HAS_B
#define KF_A(c) (rs * KF_WC(c))
#define KF_B(c, a) (-(a) * ms + KF_BC(c))
#if KF_HAS_W
#define KF_WC(c) kf_to_f(w[c])
#else
#define KF_WC(c) 1.f
#endif
#if KF_HAS_B
#define KF_BC(c) kf_to_f(b[c])
#else
#define KF_BC(c) 0.f
#endif
#endif
#if KF_ABTAB
    for (int d = lt; d < KF_D; d += KF_TPG) {
        const float a = KF_A(c_first + d);
        kf_ab[threadIdx.x / KF_TPG][d] = make_float2(a, KF_B(c_first + d, a));
    }
    __syncthreads();
#endif

    /* last pass: y = a * x + b per channel, a = rstd * w, b = bias - a * mean (as torch) */
    KF_FOR_SHARE {
        const int j = lt + k * KF_TPG;
        if (j >= cnt) continue;
        const int i = lo + j;
        float f[KF_VEC], o[KF_VEC];
        kf_xv::unpack(KF_FETCH(k, j, i), f);
#if KF_CL
        const int d0 = (int)(((long long)i * KF_VEC) % KF_D); /* channels c_first+d0+e */
#elif KF_HW % KF_VEC == 0
        const int d0 = (int)(((long long)i * KF_VEC) / KF_HW); /* one channel */
#endif
#pragma unroll
        for (int e = 0; e < KF_VEC; e++) {
#if KF_CL
            const int d = d0 + e;
#elif KF_HW % KF_VEC == 0
            const int d = d0;
#else
            const int d = (int)(((long long)i * KF_VEC + e) / KF_HW);
#endif
#if KF_ABTAB
            const float2 ab = kf_ab[threadIdx.x / KF_TPG][d];
            o[e] = ab.x * f[e] + ab.y;
#elif KF_HAS_W || KF_HAS_B
            const float a = KF_A(c_first + d);
            o[e] = a * f[e] + KF_B(c_first + d, a);
#else
            (void)d;
            o[e] = (f[e] - ms) * rs;
#endif
        }
        kf_yv::st(y + kf_off(ng, i), o);
    }
#if KF_SPLIT > 1
    kf_cluster_wait();
#endif
}
