#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ __forceinline__ float kf_to_f(float v) { return v; }
__device__ __forceinline__ float kf_to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float kf_to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> __device__ __forceinline__ T kf_from_f(float v);
template <> __device__ __forceinline__ float kf_from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half kf_from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 kf_from_f<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

/* ---- vectors of V elements moved as one raw load/store (kf_vec<T, V>::ld / unpack / st):
 * built from 32-bit words, never memcpy, which NVRTC may turn into byte accesses ---- */
struct kf_u8w { uint4 a, b; }; /* 32 bytes: two 16-byte accesses */
template <int B> struct kf_raw_sel;
template <> struct kf_raw_sel<2> { typedef unsigned short t; };
template <> struct kf_raw_sel<4> { typedef unsigned int t; };
template <> struct kf_raw_sel<8> { typedef uint2 t; };
template <> struct kf_raw_sel<16> { typedef uint4 t; };
template <> struct kf_raw_sel<32> { typedef kf_u8w t; };

__device__ __forceinline__ unsigned short kf_ldg(const unsigned short *p)
{
    return __ldg(p);
}
__device__ __forceinline__ unsigned kf_ldg(const unsigned *p) { return __ldg(p); }
__device__ __forceinline__ uint2 kf_ldg(const uint2 *p) { return __ldg(p); }
__device__ __forceinline__ uint4 kf_ldg(const uint4 *p) { return __ldg(p); }
__device__ __forceinline__ kf_u8w kf_ldg(const kf_u8w *p)
{
    kf_u8w r;
    r.a = __ldg(&p->a);
    r.b = __ldg(&p->b);
    return r;
}
/* streaming stores: the output is not read again, keep L2 for the input */
__device__ __forceinline__ void kf_stcs(unsigned short *p, unsigned short v)
{
    __stcs(p, v);
}
__device__ __forceinline__ void kf_stcs(unsigned *p, unsigned v) { __stcs(p, v); }
__device__ __forceinline__ void kf_stcs(uint2 *p, uint2 v) { __stcs(p, v); }
__device__ __forceinline__ void kf_stcs(uint4 *p, uint4 v) { __stcs(p, v); }
__device__ __forceinline__ void kf_stcs(kf_u8w *p, kf_u8w v)
{
    __stcs(&p->a, v.a);
    __stcs(&p->b, v.b);
}
/* plain (write-back) stores, spelled as intrinsics so they stay one vector access */
__device__ __forceinline__ void kf_stwb(unsigned short *p, unsigned short v)
{
    __stwb(p, v);
}
__device__ __forceinline__ void kf_stwb(unsigned *p, unsigned v) { __stwb(p, v); }
__device__ __forceinline__ void kf_stwb(uint2 *p, uint2 v) { __stwb(p, v); }
__device__ __forceinline__ void kf_stwb(uint4 *p, uint4 v) { __stwb(p, v); }
__device__ __forceinline__ void kf_stwb(kf_u8w *p, kf_u8w v)
{
    __stwb(&p->a, v.a);
    __stwb(&p->b, v.b);
}
__device__ __forceinline__ void kf_split(unsigned short r, unsigned *w) { w[0] = r; }
__device__ __forceinline__ void kf_split(unsigned r, unsigned *w) { w[0] = r; }
__device__ __forceinline__ void kf_split(uint2 r, unsigned *w) { w[0] = r.x, w[1] = r.y; }
__device__ __forceinline__ void kf_split(uint4 r, unsigned *w)
{
    w[0] = r.x, w[1] = r.y, w[2] = r.z, w[3] = r.w;
}
__device__ __forceinline__ void kf_split(kf_u8w r, unsigned *w)
{
    kf_split(r.a, w);
    kf_split(r.b, w + 4);
}
__device__ __forceinline__ void kf_join(const unsigned *w, unsigned short &r)
{
    r = (unsigned short)w[0];
}
__device__ __forceinline__ void kf_join(const unsigned *w, unsigned &r) { r = w[0]; }
__device__ __forceinline__ void kf_join(const unsigned *w, uint2 &r)
{
    r = make_uint2(w[0], w[1]);
}
__device__ __forceinline__ void kf_join(const unsigned *w, uint4 &r)
{
    r = make_uint4(w[0], w[1], w[2], w[3]);
}
__device__ __forceinline__ void kf_join(const unsigned *w, kf_u8w &r)
{
    kf_join(w, r.a);
    kf_join(w + 4, r.b);
}

/* element k of a vector of T held in 32-bit words, and back (round to nearest even) */
template <class T> __device__ __forceinline__ float kf_get(const unsigned *w, int k);
template <> __device__ __forceinline__ float kf_get<float>(const unsigned *w, int k)
{
    return __uint_as_float(w[k]);
}
template <>
__device__ __forceinline__ float kf_get<__nv_bfloat16>(const unsigned *w, int k)
{
    return __uint_as_float((k & 1) ? (w[k >> 1] & 0xffff0000u) : (w[k >> 1] << 16));
}
template <> __device__ __forceinline__ float kf_get<__half>(const unsigned *w, int k)
{
    const unsigned u = (k & 1) ? w[k >> 1] >> 16 : w[k >> 1] & 0xffffu;
    return __half2float(__ushort_as_half((unsigned short)u));
}
template <class T> __device__ __forceinline__ void kf_put(unsigned *w, int k, float v);
template <> __device__ __forceinline__ void kf_put<float>(unsigned *w, int k, float v)
{
    w[k] = __float_as_uint(v);
}
template <>
__device__ __forceinline__ void kf_put<__nv_bfloat16>(unsigned *w, int k, float v)
{
    const unsigned h = __bfloat16_as_ushort(__float2bfloat16_rn(v));
    w[k >> 1] |= (k & 1) ? h << 16 : h;
}
template <> __device__ __forceinline__ void kf_put<__half>(unsigned *w, int k, float v)
{
    const unsigned h = __half_as_ushort(__float2half_rn(v));
    w[k >> 1] |= (k & 1) ? h << 16 : h;
}

template <class T, int V> struct kf_vec {
    typedef typename kf_raw_sel<(int)sizeof(T) * V>::t raw;
    enum { WORDS = ((int)sizeof(T) * V + 3) / 4 };
    static __device__ __forceinline__ raw ld(const T *p)
    {
        return kf_ldg(reinterpret_cast<const raw *>(p));
    }
    static __device__ __forceinline__ void unpack(const raw r, float (&f)[V])
    {
        unsigned w[WORDS];
        kf_split(r, w);
#pragma unroll
        for (int k = 0; k < V; k++) f[k] = kf_get<T>(w, k);
    }
    static __device__ __forceinline__ raw pack(const float (&f)[V])
    {
        unsigned w[WORDS];
#pragma unroll
        for (int i = 0; i < WORDS; i++) w[i] = 0u;
#pragma unroll
        for (int k = 0; k < V; k++) kf_put<T>(w, k, f[k]);
        raw r;
        kf_join(w, r);
        return r;
    }
    /* streaming store (the norms: keep L2 for their input) and plain store */
    static __device__ __forceinline__ void st(T *p, const float (&f)[V])
    {
        kf_stcs(reinterpret_cast<raw *>(p), pack(f));
    }
    static __device__ __forceinline__ void stw(T *p, const float (&f)[V])
    {
        kf_stwb(reinterpret_cast<raw *>(p), pack(f));
    }
};

/* ---- packs: VW elements of T kept as values (the chain and pointwise kernels' vector loops).
 * Stored through kf_pack_st, one raw vector access: a plain struct assignment is split into
 * an access per element once the loop around it is unrolled (f16 chains stored in 2-byte
 * pieces ran at a third of copy bandwidth on an H100) ---- */
template <class T, int N> struct alignas(sizeof(T) * N) kf_pack {
    T v[N];
};
__device__ __forceinline__ unsigned long long kf_bits(float v) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned long long kf_bits(double v)
{
    return (unsigned long long)__double_as_longlong(v);
}
__device__ __forceinline__ unsigned long long kf_bits(__half v) { return __half_as_ushort(v); }
__device__ __forceinline__ unsigned long long kf_bits(__nv_bfloat16 v)
{
    return __bfloat16_as_ushort(v);
}
template <class T> __device__ __forceinline__ unsigned long long kf_bits(T v) /* integers, bool */
{
    return sizeof(T) == 8 ? (unsigned long long)v : (unsigned long long)v & ((1ull << (8 * sizeof(T))) - 1);
}
template <class T, int N> __device__ __forceinline__ void kf_pack_st(T *p, const kf_pack<T, N> &o)
{
    typedef kf_vec<T, N> V;
    unsigned w[V::WORDS];
#pragma unroll
    for (int i = 0; i < V::WORDS; i++) w[i] = 0u;
#pragma unroll
    for (int k = 0; k < N; k++) {
        const unsigned long long b = kf_bits(o.v[k]);
        const int bit = k * (int)sizeof(T) * 8;
        w[bit / 32] |= (unsigned)(b << (bit % 32));
        if (sizeof(T) == 8) w[bit / 32 + 1] = (unsigned)(b >> 32);
    }
    typename V::raw r;
    kf_join(w, r);
    kf_stwb(reinterpret_cast<typename V::raw *>(p), r);
}
