/* cuda_gather: out[c] = src[so(c) + index[io(c)] * KF_GST] (gather_ops.h), KF_EPT elements per
 * thread KF_NT * gridDim.x apart (grid-stride when KF_GS), so a warp moves adjacent elements of
 * a row. An index outside [0, KF_V) traps, as eager's device-side assert stops its kernel. */
extern "C" __global__ void __launch_bounds__(KF_NT)
kf_kernel(const KF_T *__restrict__ src, const KF_IDX *__restrict__ idx, KF_T *__restrict__ out)
{
    const long long step = (long long)KF_NT * gridDim.x;
#pragma unroll 1
    for (long long e0 = (long long)blockIdx.x * KF_NT + threadIdx.x; e0 < KF_Q * KF_D0;
         e0 += step * KF_EPT) {
#pragma unroll
        for (int u = 0; u < KF_EPT; u++) {
            const long long e = e0 + u * step;
            if (e >= KF_Q * KF_D0) break;
            const long long q = e / KF_D0, k = e % KF_D0;
            const long long i = (long long)idx[kf_io(q) + k * KF_IST0];
            if (i < 0 || i >= KF_V) __trap();
            out[kf_oo(q) + k * KF_OST0] = src[kf_so(q) + i * KF_GST + k * KF_SST0];
        }
    }
}
