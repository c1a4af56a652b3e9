typedef KF_TYPE kf_t;
typedef KF_TYPE_A kf_ta; /* operand a: the output's type except for a cast */
#define KF_ROWS (KF_NT / KF_T) /* tile rows a pass covers */

extern "C" __global__ void __launch_bounds__(KF_NT) kf_kernel(KF_PARAMS)
{
#if KF_INPLACE && !KF_COPY
    const kf_t *a = y; /* in place: the output is the first argument */
#endif
    __shared__ float sh[KF_NSH][KF_T][KF_T + 1]; /* +1: columns fall in distinct banks */
    long long t = blockIdx.x;
    const long long i0 = (t % KF_T0) * KF_T; /* along the output's contiguous dim */
    t /= KF_T0;
    const long long k0 = (t % KF_TK) * KF_T; /* along the staged operands' */
    t /= KF_TK;
    kf_idx yo = 0, ao = 0;
#if KF_NIN == 2
    kf_idx bo = 0;
    kf_bases(t, yo, ao, bo);
#else
    kf_bases(t, yo, ao);
#endif
    const int tx = threadIdx.x % KF_T, ty = threadIdx.x / KF_T;
#if KF_ASH >= 0
    for (int r = ty; r < KF_T; r += KF_ROWS)
        if (k0 + tx < KF_DK && i0 + r < KF_D0)
            sh[KF_ASH][r][tx] =
                kf_to_f(a[ao + (kf_idx)(k0 + tx) * KF_AK + (kf_idx)(i0 + r) * KF_A0]);
#endif
#if KF_BSH >= 0
    for (int r = ty; r < KF_T; r += KF_ROWS)
        if (k0 + tx < KF_DK && i0 + r < KF_D0)
            sh[KF_BSH][r][tx] =
                kf_to_f(b[bo + (kf_idx)(k0 + tx) * KF_BK + (kf_idx)(i0 + r) * KF_B0]);
#endif
    __syncthreads();
    for (int r = ty; r < KF_T; r += KF_ROWS) {
        const long long i = i0 + tx, k = k0 + r;
        if (i >= KF_D0 || k >= KF_DK) continue;
#if KF_ASH >= 0
        const float va = sh[KF_ASH][tx][r];
#else
        const float va = kf_to_f(a[ao + (kf_idx)i * KF_A0 + (kf_idx)k * KF_AK]);
#endif
#if KF_NIN == 2
#if KF_BSH >= 0
        const float vb = sh[KF_BSH][tx][r];
#else
        const float vb = kf_to_f(b[bo + (kf_idx)i * KF_B0 + (kf_idx)k * KF_BK]);
#endif
        y[yo + (kf_idx)i + (kf_idx)k * KF_PK] = kf_from_f<kf_t>(kf_op(va, vb));
#else
        y[yo + (kf_idx)i + (kf_idx)k * KF_PK] = kf_from_f<kf_t>(kf_op(va));
#endif
    }
}
