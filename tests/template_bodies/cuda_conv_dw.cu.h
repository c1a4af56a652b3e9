/* What a render prints before forge/templates/kernels/cuda_conv_dw.cu, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 4 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 4
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_depthwise_conv2d for aten::_conv_depthwise2d; knobs: threads=64 vec=1 grid=1 store=1 */
#include "cuda_common.cuh"
#define KF_THREADS 64
#define KF_VEC 1
#define KF_GRID 1
#define KF_STORE 1
/* inputs: self, weight (bias None); outputs: out */
/* effective knob values */
#define KF_NT 64
#undef KF_VEC
#define KF_VEC 1
#define KF_LV 8
#define KF_VST 0
#define KF_SV 1 /* elements a store moves */
#define KF_DIRECT 0
#define KF_GS 1
#define KF_FULL 1
#define KF_SPAN 4 /* inputs of a window row */
#define KF_NCH 2
#define KF_LW 4
#define KF_WWN 3
#define KF_USED 0xfull /* window inputs a tap reads */
#define KF_TYPE __nv_bfloat16
#define KF_ES 2
/* the signature */
#define KF_N 2
#define KF_CI 8
#define KF_CO 8
#define KF_MULT 1
#define KF_H 1
#define KF_W 2
#define KF_OH 1
#define KF_OW 5
#define KF_KH 1
#define KF_KW 4
#define KF_SH 1
#define KF_SW 1
#define KF_PH 0
#define KF_PW 3
#define KF_DH 1
#define KF_DW 1
#define KF_HAS_BIAS 0
#define KF_BS 0
#define KF_XSN 16
#define KF_YSN 40
#define KF_XSC 2
#define KF_YSC 5
#define KF_XSH 2
#define KF_YSH 5
#define KF_XSW 1
#define KF_YSW 1
#define KF_WSC 4
#define KF_WSH 4
#define KF_WSW 1
#define KF_G 5 /* work items per output row */
#define KF_ITEMS 80
typedef int kf_idx;
#define KF_PARAMS const kf_t *__restrict__ x, const kf_t *__restrict__ wt, kf_t *__restrict__ y
#define KF_BIAS_ARG (const kf_t *)0
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template cuda_depthwise_conv2d for aten::_conv_depthwise2d; knobs: threads=64 vec=2 grid=0 store=0 */
#include "cuda_common.cuh"
#define KF_THREADS 64
#define KF_VEC 2
#define KF_GRID 0
#define KF_STORE 0
/* inputs: self, weight, bias; outputs: out */
/* effective knob values */
#define KF_NT 64
#undef KF_VEC
#define KF_VEC 2
#define KF_LV 4
#define KF_VST 1
#define KF_SV 2 /* elements a store moves */
#define KF_DIRECT 0
#define KF_GS 0
#define KF_FULL 1
#define KF_SPAN 6 /* inputs of a window row */
#define KF_NCH 3
#define KF_LW 4
#define KF_WWN 1
#define KF_USED 0x3full /* window inputs a tap reads */
#define KF_TYPE float
#define KF_ES 4
/* the signature */
#define KF_N 1
#define KF_CI 3
#define KF_CO 9
#define KF_MULT 3
#define KF_H 7
#define KF_W 5
#define KF_OH 4
#define KF_OW 3
#define KF_KH 5
#define KF_KW 3
#define KF_SH 2
#define KF_SW 1
#define KF_PH 2
#define KF_PW 1
#define KF_DH 1
#define KF_DW 2
#define KF_HAS_BIAS 1
#define KF_BS 1
#define KF_XSN 105
#define KF_YSN 108
#define KF_XSC 35
#define KF_YSC 12
#define KF_XSH 5
#define KF_YSH 3
#define KF_XSW 1
#define KF_YSW 1
#define KF_WSC 15
#define KF_WSH 3
#define KF_WSW 1
#define KF_G 2 /* work items per output row */
#define KF_ITEMS 72
typedef int kf_idx;
#define KF_PARAMS const kf_t *__restrict__ x, const kf_t *__restrict__ wt, const kf_t *__restrict__ bias, kf_t *__restrict__ y
#define KF_BIAS_ARG bias
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template cuda_depthwise_conv2d for aten::_conv_depthwise2d; knobs: threads=64 vec=1 grid=0 store=1 */
#include "cuda_common.cuh"
#define KF_THREADS 64
#define KF_VEC 1
#define KF_GRID 0
#define KF_STORE 1
/* inputs: self, weight, bias; outputs: out */
/* effective knob values */
#define KF_NT 64
#undef KF_VEC
#define KF_VEC 1
#define KF_LV 1 /* one input per window */
#define KF_VST 0
#define KF_SV 1 /* elements a store moves */
#define KF_DIRECT 1 /* window wider than 64 inputs */
#define KF_GS 0
#define KF_FULL 1
#define KF_SPAN 1 /* inputs of a window row */
#define KF_NCH 1
#define KF_LW 1
#define KF_WWN 1
#define KF_USED 0x0ull /* window inputs a tap reads */
#define KF_TYPE float
#define KF_ES 4
/* the signature */
#define KF_N 1
#define KF_CI 2
#define KF_CO 2
#define KF_MULT 1
#define KF_H 3
#define KF_W 100
#define KF_OH 4
#define KF_OW 100
#define KF_KH 2
#define KF_KW 31
#define KF_SH 1
#define KF_SW 1
#define KF_PH 1
#define KF_PW 45
#define KF_DH 1
#define KF_DW 3
#define KF_HAS_BIAS 1
#define KF_BS 1
#define KF_XSN 600
#define KF_YSN 800
#define KF_XSC 300
#define KF_YSC 400
#define KF_XSH 100
#define KF_YSH 100
#define KF_XSW 1
#define KF_YSW 1
#define KF_WSC 62
#define KF_WSH 31
#define KF_WSW 1
#define KF_G 100 /* work items per output row */
#define KF_ITEMS 800
typedef int kf_idx;
#define KF_PARAMS const kf_t *__restrict__ x, const kf_t *__restrict__ wt, const kf_t *__restrict__ bias, kf_t *__restrict__ y
#define KF_BIAS_ARG bias
#elif KF_CHECK_VARIANT == 3
/* Kernel Forge builtin template cuda_depthwise_conv2d for aten::_conv_depthwise2d; knobs: threads=64 vec=2 grid=1 store=1 */
#include "cuda_common.cuh"
#define KF_THREADS 64
#define KF_VEC 2
#define KF_GRID 1
#define KF_STORE 1
/* inputs: self, weight (bias None); outputs: out */
/* effective knob values */
#define KF_NT 64
#undef KF_VEC
#define KF_VEC 2
#define KF_LV 1 /* W is strided */
#define KF_VST 1
#define KF_SV 2 /* elements a store moves */
#define KF_DIRECT 0
#define KF_GS 1
#define KF_FULL 1
#define KF_SPAN 4 /* inputs of a window row */
#define KF_NCH 1
#define KF_LW 1
#define KF_WWN 1
#define KF_USED 0xfull /* window inputs a tap reads */
#define KF_TYPE __nv_bfloat16
#define KF_ES 2
/* the signature */
#define KF_N 2
#define KF_CI 16
#define KF_CO 16
#define KF_MULT 1
#define KF_H 10
#define KF_W 12
#define KF_OH 10
#define KF_OW 12
#define KF_KH 3
#define KF_KW 3
#define KF_SH 1
#define KF_SW 1
#define KF_PH 1
#define KF_PW 1
#define KF_DH 1
#define KF_DW 1
#define KF_HAS_BIAS 0
#define KF_BS 0
#define KF_XSN 1920
#define KF_YSN 1920
#define KF_XSC 1
#define KF_YSC 120
#define KF_XSH 192
#define KF_YSH 12
#define KF_XSW 16
#define KF_YSW 1
#define KF_WSC 9
#define KF_WSH 3
#define KF_WSW 1
#define KF_G 7 /* work items per output row */
#define KF_ITEMS 2240
typedef int kf_idx;
#define KF_PARAMS const kf_t *__restrict__ x, const kf_t *__restrict__ wt, kf_t *__restrict__ y
#define KF_BIAS_ARG (const kf_t *)0
#endif
