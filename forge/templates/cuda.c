/* Helpers shared by the CUDA templates (template.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/templates/template.h"

static const char cuda_helpers[] =
    "#include <cuda_fp16.h>\n"
    "#include <cuda_bf16.h>\n"
    "\n"
    "__device__ __forceinline__ float kf_to_f(float v) { return v; }\n"
    "__device__ __forceinline__ float kf_to_f(__half v) { return __half2float(v); }\n"
    "__device__ __forceinline__ float kf_to_f(__nv_bfloat16 v) { return __bfloat162float(v); }\n"
    "template <class T> __device__ __forceinline__ T kf_from_f(float v);\n"
    "template <> __device__ __forceinline__ float kf_from_f<float>(float v) { return v; }\n"
    "template <> __device__ __forceinline__ __half kf_from_f<__half>(float v) { return __float2half_rn(v); }\n"
    "template <> __device__ __forceinline__ __nv_bfloat16 kf_from_f<__nv_bfloat16>(float v)\n"
    "{\n"
    "    return __float2bfloat16_rn(v);\n"
    "}\n\n"
    "/* ---- vectors of V elements moved as one raw load/store (kf_vec<T, V>::ld / unpack / st):\n"
    " * built from 32-bit words, never memcpy, which NVRTC may turn into byte accesses ---- */\n"
    "struct kf_u8w { uint4 a, b; }; /* 32 bytes: two 16-byte accesses */\n"
    "template <int B> struct kf_raw_sel;\n"
    "template <> struct kf_raw_sel<2> { typedef unsigned short t; };\n"
    "template <> struct kf_raw_sel<4> { typedef unsigned int t; };\n"
    "template <> struct kf_raw_sel<8> { typedef uint2 t; };\n"
    "template <> struct kf_raw_sel<16> { typedef uint4 t; };\n"
    "template <> struct kf_raw_sel<32> { typedef kf_u8w t; };\n"
    "\n"
    "__device__ __forceinline__ unsigned short kf_ldg(const unsigned short *p)\n"
    "{\n"
    "    return __ldg(p);\n"
    "}\n"
    "__device__ __forceinline__ unsigned kf_ldg(const unsigned *p) { return __ldg(p); }\n"
    "__device__ __forceinline__ uint2 kf_ldg(const uint2 *p) { return __ldg(p); }\n"
    "__device__ __forceinline__ uint4 kf_ldg(const uint4 *p) { return __ldg(p); }\n"
    "__device__ __forceinline__ kf_u8w kf_ldg(const kf_u8w *p)\n"
    "{\n"
    "    kf_u8w r;\n"
    "    r.a = __ldg(&p->a);\n"
    "    r.b = __ldg(&p->b);\n"
    "    return r;\n"
    "}\n"
    "/* streaming stores: the output is not read again, keep L2 for the input */\n"
    "__device__ __forceinline__ void kf_stcs(unsigned short *p, unsigned short v)\n"
    "{\n"
    "    __stcs(p, v);\n"
    "}\n"
    "__device__ __forceinline__ void kf_stcs(unsigned *p, unsigned v) { __stcs(p, v); }\n"
    "__device__ __forceinline__ void kf_stcs(uint2 *p, uint2 v) { __stcs(p, v); }\n"
    "__device__ __forceinline__ void kf_stcs(uint4 *p, uint4 v) { __stcs(p, v); }\n"
    "__device__ __forceinline__ void kf_stcs(kf_u8w *p, kf_u8w v)\n"
    "{\n"
    "    __stcs(&p->a, v.a);\n"
    "    __stcs(&p->b, v.b);\n"
    "}\n"
    "/* plain (write-back) stores, spelled as intrinsics so they stay one vector access */\n"
    "__device__ __forceinline__ void kf_stwb(unsigned short *p, unsigned short v)\n"
    "{\n"
    "    __stwb(p, v);\n"
    "}\n"
    "__device__ __forceinline__ void kf_stwb(unsigned *p, unsigned v) { __stwb(p, v); }\n"
    "__device__ __forceinline__ void kf_stwb(uint2 *p, uint2 v) { __stwb(p, v); }\n"
    "__device__ __forceinline__ void kf_stwb(uint4 *p, uint4 v) { __stwb(p, v); }\n"
    "__device__ __forceinline__ void kf_stwb(kf_u8w *p, kf_u8w v)\n"
    "{\n"
    "    __stwb(&p->a, v.a);\n"
    "    __stwb(&p->b, v.b);\n"
    "}\n"
    "__device__ __forceinline__ void kf_split(unsigned short r, unsigned *w) { w[0] = r; }\n"
    "__device__ __forceinline__ void kf_split(unsigned r, unsigned *w) { w[0] = r; }\n"
    "__device__ __forceinline__ void kf_split(uint2 r, unsigned *w) { w[0] = r.x, w[1] = r.y; }\n"
    "__device__ __forceinline__ void kf_split(uint4 r, unsigned *w)\n"
    "{\n"
    "    w[0] = r.x, w[1] = r.y, w[2] = r.z, w[3] = r.w;\n"
    "}\n"
    "__device__ __forceinline__ void kf_split(kf_u8w r, unsigned *w)\n"
    "{\n"
    "    kf_split(r.a, w);\n"
    "    kf_split(r.b, w + 4);\n"
    "}\n"
    "__device__ __forceinline__ void kf_join(const unsigned *w, unsigned short &r)\n"
    "{\n"
    "    r = (unsigned short)w[0];\n"
    "}\n"
    "__device__ __forceinline__ void kf_join(const unsigned *w, unsigned &r) { r = w[0]; }\n"
    "__device__ __forceinline__ void kf_join(const unsigned *w, uint2 &r)\n"
    "{\n"
    "    r = make_uint2(w[0], w[1]);\n"
    "}\n"
    "__device__ __forceinline__ void kf_join(const unsigned *w, uint4 &r)\n"
    "{\n"
    "    r = make_uint4(w[0], w[1], w[2], w[3]);\n"
    "}\n"
    "__device__ __forceinline__ void kf_join(const unsigned *w, kf_u8w &r)\n"
    "{\n"
    "    kf_join(w, r.a);\n"
    "    kf_join(w + 4, r.b);\n"
    "}\n"
    "\n"
    "/* element k of a vector of T held in 32-bit words, and back (round to nearest even) */\n"
    "template <class T> __device__ __forceinline__ float kf_get(const unsigned *w, int k);\n"
    "template <> __device__ __forceinline__ float kf_get<float>(const unsigned *w, int k)\n"
    "{\n"
    "    return __uint_as_float(w[k]);\n"
    "}\n"
    "template <>\n"
    "__device__ __forceinline__ float kf_get<__nv_bfloat16>(const unsigned *w, int k)\n"
    "{\n"
    "    return __uint_as_float((k & 1) ? (w[k >> 1] & 0xffff0000u) : (w[k >> 1] << 16));\n"
    "}\n"
    "template <> __device__ __forceinline__ float kf_get<__half>(const unsigned *w, int k)\n"
    "{\n"
    "    const unsigned u = (k & 1) ? w[k >> 1] >> 16 : w[k >> 1] & 0xffffu;\n"
    "    return __half2float(__ushort_as_half((unsigned short)u));\n"
    "}\n"
    "template <class T> __device__ __forceinline__ void kf_put(unsigned *w, int k, float v);\n"
    "template <> __device__ __forceinline__ void kf_put<float>(unsigned *w, int k, float v)\n"
    "{\n"
    "    w[k] = __float_as_uint(v);\n"
    "}\n"
    "template <>\n"
    "__device__ __forceinline__ void kf_put<__nv_bfloat16>(unsigned *w, int k, float v)\n"
    "{\n"
    "    const unsigned h = __bfloat16_as_ushort(__float2bfloat16_rn(v));\n"
    "    w[k >> 1] |= (k & 1) ? h << 16 : h;\n"
    "}\n"
    "template <> __device__ __forceinline__ void kf_put<__half>(unsigned *w, int k, float v)\n"
    "{\n"
    "    const unsigned h = __half_as_ushort(__float2half_rn(v));\n"
    "    w[k >> 1] |= (k & 1) ? h << 16 : h;\n"
    "}\n"
    "\n"
    "template <class T, int V> struct kf_vec {\n"
    "    typedef typename kf_raw_sel<(int)sizeof(T) * V>::t raw;\n"
    "    enum { WORDS = ((int)sizeof(T) * V + 3) / 4 };\n"
    "    static __device__ __forceinline__ raw ld(const T *p)\n"
    "    {\n"
    "        return kf_ldg(reinterpret_cast<const raw *>(p));\n"
    "    }\n"
    "    static __device__ __forceinline__ void unpack(const raw r, float (&f)[V])\n"
    "    {\n"
    "        unsigned w[WORDS];\n"
    "        kf_split(r, w);\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < V; k++) f[k] = kf_get<T>(w, k);\n"
    "    }\n"
    "    static __device__ __forceinline__ raw pack(const float (&f)[V])\n"
    "    {\n"
    "        unsigned w[WORDS];\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < WORDS; i++) w[i] = 0u;\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < V; k++) kf_put<T>(w, k, f[k]);\n"
    "        raw r;\n"
    "        kf_join(w, r);\n"
    "        return r;\n"
    "    }\n"
    "    /* streaming store (the norms: keep L2 for their input) and plain store */\n"
    "    static __device__ __forceinline__ void st(T *p, const float (&f)[V])\n"
    "    {\n"
    "        kf_stcs(reinterpret_cast<raw *>(p), pack(f));\n"
    "    }\n"
    "    static __device__ __forceinline__ void stw(T *p, const float (&f)[V])\n"
    "    {\n"
    "        kf_stwb(reinterpret_cast<raw *>(p), pack(f));\n"
    "    }\n"
    "};\n"
    "\n";


void kf_template_cuda_prologue(kf_strbuf *b, const kf_template *t, const kf_job_sig *sig,
                               const int *vals)
{
    kf_strbuf_printf(b, "/* Kernel Forge builtin template %s for %.64s; knobs:", t->name, sig->op);
    for (int k = 0; k < t->n_knobs; k++) kf_strbuf_printf(b, " %s=%d", t->knobs[k].name, vals[k]);
    kf_strbuf_printf(b, " */\n%s", cuda_helpers);
    for (int k = 0; k < t->n_knobs; k++) {
        char up[64];
        size_t i = 0;
        for (; t->knobs[k].name[i] && i + 1 < sizeof up; i++) {
            char c = t->knobs[k].name[i];
            up[i] = (char)(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
        }
        up[i] = 0;
        kf_strbuf_printf(b, "#define KF_%s %d\n", up, vals[k]);
    }
}

void kf_template_define(kf_strbuf *b, const char *name, long long v, const char *why)
{
    kf_strbuf_printf(b, "#define %s %lld%s%s%s\n", name, v, why ? " /* " : "", why ? why : "",
                     why ? " */" : "");
}

#define KF_TEMPLATE_SMS 132 /* multiprocessors a grid-stride grid is sized for (H100/H200 SXM) */

unsigned kf_template_grid(int64_t blocks, int threads, int *gs)
{
    if (*gs) {
        int64_t cap = (int64_t)*gs * KF_TEMPLATE_SMS * (2048 / threads);
        if (blocks > cap) blocks = cap;
    }
    if (blocks > INT32_MAX) { /* more blocks than grid.x holds: loop */
        blocks = INT32_MAX;
        *gs = 1;
    }
    return (unsigned)blocks;
}

const char *kf_template_cuda_type(int dtype)
{
    switch (dtype) {
    case KF_F32: return "float";
    case KF_F16: return "__half";
    case KF_BF16: return "__nv_bfloat16";
    default: return NULL;
    }
}

char *kf_template_cuda_launch_json(const char *const *arg_types, int n, const unsigned grid[3],
                                   const unsigned block[3], unsigned smem)
{
    kf_strbuf b = {0};
    kf_strbuf_printf(&b, "{\"entry\":\"kf_kernel\",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],"
                         "\"smem\":%u,\"args\":[",
                     grid[0], grid[1], grid[2], block[0], block[1], block[2], smem);
    for (int i = 0; i < n; i++) kf_strbuf_printf(&b, "%s\"%s\"", i ? "," : "", arg_types[i]);
    kf_strbuf_printf(&b, "]}");
    return kf_strbuf_take(&b);
}

kf_status kf_template_cuda_finish(const kf_template *t, kf_strbuf *b, const char *const *arg_types,
                                  int n, const unsigned grid[3], const unsigned block[3],
                                  unsigned smem, char **source, char **launch_json, char *err,
                                  size_t errcap)
{
    *source = kf_strbuf_take(b);
    *launch_json = kf_template_cuda_launch_json(arg_types, n, grid, block, smem);
    if (*source && *launch_json) return KF_OK;
    free(*source);
    free(*launch_json);
    *source = *launch_json = NULL;
    if (err && errcap) snprintf(err, errcap, "%s: out of memory", t->name);
    return KF_ERR_NOMEM;
}
