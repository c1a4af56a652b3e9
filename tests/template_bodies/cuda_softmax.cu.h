/* What a render prints before forge/templates/kernels/cuda_softmax.cu, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 4 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 4
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_row_softmax for aten::_softmax; knobs: threads=32 rows=8 vec=4 strategy=1 split=8 */
#include "cuda_common.cuh"
#define KF_THREADS 32
#define KF_ROWS 8
#define KF_VEC 4
#define KF_STRATEGY 1
#define KF_SPLIT 8
/* inputs: self; outputs: out */
#define KF_TIN float
#define KF_TOUT float
#define KF_LOG 0
#define KF_MODE 1 /* columns */
#define KF_NT 32
#define KF_RPB 8
#define KF_TPR 4
#define KF_VW 2
#define KF_CL 1
#define KF_STRAT 1
#define KF_NPT 2
#define KF_NREG 0
#define KF_SVEC 0
#define KF_RED_BYTES 512
#define KF_MINB 1 /* blocks per SM the registers must allow */
#define KF_D 7
#define KF_I 10LL
#define KF_IV 5LL
#define KF_NCG 15LL
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template cuda_row_softmax for aten::_softmax; knobs: threads=64 rows=2 vec=8 strategy=2 split=8 */
#include "cuda_common.cuh"
#define KF_THREADS 64
#define KF_ROWS 2
#define KF_VEC 8
#define KF_STRATEGY 2
#define KF_SPLIT 8
/* inputs: self; outputs: out */
#define KF_TIN float
#define KF_TOUT float
#define KF_LOG 0
#define KF_MODE 0 /* rows */
#define KF_NT 64
#define KF_RPB 2
#define KF_TPR 32
#define KF_VW 4
#define KF_CL 8
#define KF_STRAT 2
#define KF_NPT 69
#define KF_NREG 8
#define KF_SVEC 61
#define KF_RED_BYTES 0
#define KF_MINB 1 /* blocks per SM the registers must allow */
#define KF_NROWS 3LL
#define KF_COLS 70000LL
#define KF_NV 17500
#define KF_SLICE 2188
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template cuda_row_softmax for aten::_softmax; knobs: threads=32 rows=2 vec=8 strategy=3 split=4 */
#include "cuda_common.cuh"
#define KF_THREADS 32
#define KF_ROWS 2
#define KF_VEC 8
#define KF_STRATEGY 3
#define KF_SPLIT 4
/* inputs: self; outputs: out */
#define KF_TIN float
#define KF_TOUT float
#define KF_LOG 0
#define KF_MODE 0 /* rows */
#define KF_NT 32
#define KF_RPB 2
#define KF_TPR 16
#define KF_VW 4
#define KF_CL 4
#define KF_STRAT 3
#define KF_NPT 274
#define KF_NREG 8
#define KF_SVEC 216
#define KF_RED_BYTES 0
#define KF_MINB 2 /* blocks per SM the registers must allow */
#define KF_NROWS 3LL
#define KF_COLS 70000LL
#define KF_NV 17500
#define KF_SLICE 4375
#elif KF_CHECK_VARIANT == 3
/* Kernel Forge builtin template cuda_row_softmax for aten::_softmax; knobs: threads=32 rows=4 vec=1 strategy=0 split=2 */
#include "cuda_common.cuh"
#define KF_THREADS 32
#define KF_ROWS 4
#define KF_VEC 1
#define KF_STRATEGY 0
#define KF_SPLIT 2
/* inputs: self; outputs: out */
#define KF_TIN __half
#define KF_TOUT __half
#define KF_LOG 0
#define KF_MODE 0 /* rows */
#define KF_NT 32
#define KF_RPB 4
#define KF_TPR 8
#define KF_VW 1
#define KF_CL 2
#define KF_STRAT 0
#define KF_NPT 1
#define KF_NREG 0
#define KF_SVEC 0
#define KF_RED_BYTES 0
#define KF_MINB 1 /* blocks per SM the registers must allow */
#define KF_NROWS 257LL
#define KF_COLS 8LL
#define KF_NV 8
#define KF_SLICE 4
#endif
