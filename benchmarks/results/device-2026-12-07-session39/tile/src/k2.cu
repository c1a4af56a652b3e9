// Hand tile walk for add -> layer_norm over a transposed stream: x [KB][KC][KT] (row r = (b, t), its
// elements KT apart), h either the same layout (HT 1) or contiguous [KB][KT][KC] (HT 0); the sum
// stored like x, y contiguous [KB][KT][KC], mean / rstd f32 per row. Rows in pairs (bf16x2 along t).
#include <cuda_bf16.h>
#ifndef TR
#define TR 16
#endif
#define NT 256
#define NP (TR / 2)          /* row pairs per tile */
#define NG (NT / NP)         /* column groups */
#define PAD 2
#ifndef UN
#define UN 4
#endif
typedef __nv_bfloat16 bf;
constexpr int kUN = UN;
__device__ __forceinline__ long long xb(long long r) { return (r % KT) + (r / KT) * (long long)KT * KC; }
extern "C" __global__ void __launch_bounds__(NT) k2(const bf *__restrict__ x, const bf *__restrict__ h,
    const bf *__restrict__ w, const bf *__restrict__ bb, bf *__restrict__ s, bf *__restrict__ y,
    float *__restrict__ mo, float *__restrict__ ro)
{
    extern __shared__ __align__(16) unsigned char dyn[];
    bf (*xs)[KC + PAD] = reinterpret_cast<bf (*)[KC + PAD]>(dyn);
    __shared__ float ps[2][NT], ms[TR], rs[TR];
    const int p = threadIdx.x % NP, g = threadIdx.x / NP;
    const long long R = (long long)KB * KT;
    for (long long r0 = (long long)blockIdx.x * TR; r0 < R; r0 += (long long)gridDim.x * TR) {
#if !HT
        /* h's rows staged along c: words of 2 columns */
#pragma unroll 4
        for (int e = threadIdx.x; e < TR * KC / 2; e += NT) {
            const int i = e / (KC / 2), cw = e - i * (KC / 2);
            if (r0 + i < R)
                *reinterpret_cast<__nv_bfloat162 *>(&xs[i][2 * cw]) =
                    __ldg(reinterpret_cast<const __nv_bfloat162 *>(h + (r0 + i) * KC) + cw);
        }
        __syncthreads();
#endif
        float s0 = 0.f, s1 = 0.f;
        const long long r = r0 + 2 * p;
        if (r < R) {
            const long long o = xb(r);
#pragma unroll kUN
            for (int c = g; c < KC; c += NG) {
                const __nv_bfloat162 a = __ldg(reinterpret_cast<const __nv_bfloat162 *>(x + o + (long long)c * KT));
#if HT
                const __nv_bfloat162 b2 = __ldg(reinterpret_cast<const __nv_bfloat162 *>(h + o + (long long)c * KT));
                const float h0 = __low2float(b2), h1 = __high2float(b2);
#else
                const float h0 = __bfloat162float(xs[2 * p][c]), h1 = __bfloat162float(xs[2 * p + 1][c]);
#endif
                const bf v0 = __float2bfloat16_rn(__low2float(a) + h0), v1 = __float2bfloat16_rn(__high2float(a) + h1);
                __nv_bfloat162 st; st.x = v0; st.y = v1;
                *reinterpret_cast<__nv_bfloat162 *>(s + o + (long long)c * KT) = st;
                xs[2 * p][c] = v0, xs[2 * p + 1][c] = v1;
                s0 += __bfloat162float(v0), s1 += __bfloat162float(v1);
            }
        }
        ps[0][threadIdx.x] = s0, ps[1][threadIdx.x] = s1;
        __syncthreads();
        if (threadIdx.x < TR) {
            const int q = threadIdx.x / 2, k = threadIdx.x & 1;
            float t = 0.f;
            for (int gg = 0; gg < NG; gg++) t += ps[k][gg * NP + q];
            ms[threadIdx.x] = t / KC;
        }
        __syncthreads();
        float q0 = 0.f, q1 = 0.f;
        if (r < R) {
            const float m0 = ms[2 * p], m1 = ms[2 * p + 1];
            for (int c = g; c < KC; c += NG) {
                const float d0 = __bfloat162float(xs[2 * p][c]) - m0, d1 = __bfloat162float(xs[2 * p + 1][c]) - m1;
                q0 += d0 * d0, q1 += d1 * d1;
            }
        }
        ps[0][threadIdx.x] = q0, ps[1][threadIdx.x] = q1;
        __syncthreads();
        if (threadIdx.x < TR) {
            const int q = threadIdx.x / 2, k = threadIdx.x & 1;
            float t = 0.f;
            for (int gg = 0; gg < NG; gg++) t += ps[k][gg * NP + q];
            const float rstd = rsqrtf(t / KC + EPS);
            rs[threadIdx.x] = rstd;
            if (r0 + threadIdx.x < R) mo[r0 + threadIdx.x] = ms[threadIdx.x], ro[r0 + threadIdx.x] = rstd;
        }
        __syncthreads();
        /* y along the rows, words of 2 columns */
#pragma unroll 4
        for (int e = threadIdx.x; e < TR * KC / 2; e += NT) {
            const int i = e / (KC / 2), cw = e - i * (KC / 2);
            if (r0 + i >= R) break;
            const __nv_bfloat162 v = *reinterpret_cast<const __nv_bfloat162 *>(&xs[i][2 * cw]);
            const __nv_bfloat162 ww = __ldg(reinterpret_cast<const __nv_bfloat162 *>(w) + cw);
            const __nv_bfloat162 b2 = __ldg(reinterpret_cast<const __nv_bfloat162 *>(bb) + cw);
            const float m = ms[i], rr = rs[i];
            __nv_bfloat162 o;
            o.x = __float2bfloat16_rn((__low2float(v) - m) * rr * __low2float(ww) + __low2float(b2));
            o.y = __float2bfloat16_rn((__high2float(v) - m) * rr * __high2float(ww) + __high2float(b2));
            reinterpret_cast<__nv_bfloat162 *>(y + (r0 + i) * KC)[cw] = o;
        }
        __syncthreads();
    }
}
