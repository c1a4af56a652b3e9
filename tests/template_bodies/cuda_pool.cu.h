/* What a render prints before forge/templates/kernels/cuda_pool.cu, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 4 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 4
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_max_pool2d for aten::max_pool2d_with_indices; knobs: threads=64 vec=8 wout=8 grid=4 store=0 */
#include "cuda_common.cuh"
#define KF_THREADS 64
#define KF_VEC 8
#define KF_WOUT 8
#define KF_GRID 4
#define KF_STORE 0
/* inputs: self; outputs: values, indices (int64); channels last, eager's NHWC kernel */
/* effective knob values */
#define KF_NT 64
#undef KF_VEC
#undef KF_WOUT
#define KF_VEC 8
#define KF_WOUT 4 /* output width or registers */
#define KF_GS 1
#define KF_IPAIR 1
#define KF_FULL 1
#define KF_USED 0xffull /* columns of a row span read */
/* the signature */
#define KF_TYPE __half
#define KF_ESIZE 2
#define KF_NEG_INF_WORD 0xfc00fc00u
#define KF_CL 1
#define KF_N 2
#define KF_C 8
#define KF_H 9
#define KF_W 9
#define KF_OHEIGHT 5
#define KF_OWIDTH 5
#define KF_KH 2
#define KF_KW 2
#define KF_SH 2
#define KF_SW 2
#define KF_PH 0
#define KF_PW 0
#define KF_DH 1
#define KF_DW 1
/* ceil_mode 1 */
#define KF_XSN 648
#define KF_XSC 1
#define KF_XSH 72
#define KF_XSW 8
#define KF_YSN 200
#define KF_YSC 1
#define KF_YSH 40
#define KF_YSW 8
#define KF_ISN 200
#define KF_ISC 1
#define KF_ISH 40
#define KF_ISW 8
#define KF_ITEMS 20
typedef int kf_idx;
#define KF_PARAMS const kf_t *__restrict__ x, kf_t *__restrict__ y, long long *__restrict__ ind
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template cuda_max_pool2d for aten::max_pool2d_with_indices; knobs: threads=128 vec=1 wout=4 grid=0 store=1 */
#include "cuda_common.cuh"
#define KF_THREADS 128
#define KF_VEC 1
#define KF_WOUT 4
#define KF_GRID 0
#define KF_STORE 1
/* inputs: self; outputs: values, indices (int64); [C, H, W], eager's NCHW kernel */
/* effective knob values */
#define KF_NT 128
#undef KF_VEC
#undef KF_WOUT
#define KF_VEC 1
#define KF_WOUT 2 /* output width or registers */
#define KF_GS 0
#define KF_IPAIR 0 /* 8-byte index stores */
#define KF_FULL 1
#define KF_USED 0xfull /* columns of a row span read */
/* the signature */
#define KF_TYPE float
#define KF_ESIZE 4
#define KF_NEG_INF_WORD 0xff800000u
#define KF_CL 0
#define KF_N 1
#define KF_C 5
#define KF_H 7
#define KF_W 7
#define KF_OHEIGHT 3
#define KF_OWIDTH 3
#define KF_KH 2
#define KF_KW 2
#define KF_SH 2
#define KF_SW 2
#define KF_PH 0
#define KF_PW 0
#define KF_DH 1
#define KF_DW 1
/* ceil_mode 0 */
#define KF_XSN 0
#define KF_XSC 49
#define KF_XSH 7
#define KF_XSW 1
#define KF_YSN 0
#define KF_YSC 9
#define KF_YSH 3
#define KF_YSW 1
#define KF_ISN 0
#define KF_ISC 9
#define KF_ISH 3
#define KF_ISW 1
#define KF_ITEMS 30
typedef int kf_idx;
#define KF_PARAMS const kf_t *__restrict__ x, kf_t *__restrict__ y, long long *__restrict__ ind
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template cuda_max_pool2d for aten::max_pool2d_with_indices; knobs: threads=1024 vec=8 wout=2 grid=0 store=0 */
#include "cuda_common.cuh"
#define KF_THREADS 1024
#define KF_VEC 8
#define KF_WOUT 2
#define KF_GRID 0
#define KF_STORE 0
/* inputs: self; outputs: values, indices (int64); channels last, eager's NHWC kernel */
/* effective knob values */
#define KF_NT 1024
#undef KF_VEC
#undef KF_WOUT
#define KF_VEC 8
#define KF_WOUT 1 /* output width or registers */
#define KF_GS 0
#define KF_IPAIR 1
#define KF_FULL 1
#define KF_USED 0x9ull /* columns of a row span read */
/* the signature */
#define KF_TYPE __nv_bfloat16
#define KF_ESIZE 2
#define KF_NEG_INF_WORD 0xff80ff80u
#define KF_CL 1
#define KF_N 1
#define KF_C 8
#define KF_H 2
#define KF_W 5
#define KF_OHEIGHT 1
#define KF_OWIDTH 4
#define KF_KH 2
#define KF_KW 2
#define KF_SH 1
#define KF_SW 1
#define KF_PH 1
#define KF_PW 1
#define KF_DH 3
#define KF_DW 3
/* ceil_mode 0 */
#define KF_XSN 80
#define KF_XSC 1
#define KF_XSH 40
#define KF_XSW 8
#define KF_YSN 32
#define KF_YSC 1
#define KF_YSH 32
#define KF_YSW 8
#define KF_ISN 32
#define KF_ISC 1
#define KF_ISH 32
#define KF_ISW 8
#define KF_ITEMS 4
typedef int kf_idx;
#define KF_PARAMS const kf_t *__restrict__ x, kf_t *__restrict__ y, long long *__restrict__ ind
#elif KF_CHECK_VARIANT == 3
/* Kernel Forge builtin template cuda_max_pool2d for aten::max_pool2d_with_indices; knobs: threads=64 vec=2 wout=1 grid=1 store=0 */
#include "cuda_common.cuh"
#define KF_THREADS 64
#define KF_VEC 2
#define KF_WOUT 1
#define KF_GRID 1
#define KF_STORE 0
/* inputs: self; outputs: values, indices (int64); channels last, eager's NHWC kernel */
/* effective knob values */
#define KF_NT 64
#undef KF_VEC
#undef KF_WOUT
#define KF_VEC 2
#define KF_WOUT 1
#define KF_GS 1
#define KF_IPAIR 1
#define KF_FULL 1
#define KF_USED 0x3ull /* columns of a row span read */
/* the signature */
#define KF_TYPE __half
#define KF_ESIZE 2
#define KF_NEG_INF_WORD 0xfc00fc00u
#define KF_CL 1
#define KF_N 2
#define KF_C 8
#define KF_H 9
#define KF_W 9
#define KF_OHEIGHT 5
#define KF_OWIDTH 5
#define KF_KH 2
#define KF_KW 2
#define KF_SH 2
#define KF_SW 2
#define KF_PH 0
#define KF_PW 0
#define KF_DH 1
#define KF_DW 1
/* ceil_mode 1 */
#define KF_XSN 648
#define KF_XSC 1
#define KF_XSH 72
#define KF_XSW 8
#define KF_YSN 200
#define KF_YSC 1
#define KF_YSH 40
#define KF_YSW 8
#define KF_ISN 200
#define KF_ISC 1
#define KF_ISH 40
#define KF_ISW 8
#define KF_ITEMS 200
typedef int kf_idx;
#define KF_PARAMS const kf_t *__restrict__ x, kf_t *__restrict__ y, long long *__restrict__ ind
#endif
