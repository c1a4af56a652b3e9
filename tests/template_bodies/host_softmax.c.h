/* What a render prints before forge/templates/kernels/host_softmax.c, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 4 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 4
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template host_row_softmax for aten::_softmax; knobs: strategy=1 unroll=1 omp=2 math=1 */
#include <math.h>
#include <stdint.h>

#define KF_STRATEGY 1
#define KF_UNROLL 1
#define KF_OMP 2
#define KF_MATH 1
#define KF_ROWS 15LL
#define KF_COLS 37LL
#define KF_LOG 0
#define KF_RPC 15
/* inputs: self; outputs: out */

#include "host_math.h"
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template host_row_softmax for aten::_log_softmax; knobs: strategy=0 unroll=8 omp=1 math=0 */
#include <math.h>
#include <stdint.h>

#define KF_STRATEGY 0
#define KF_UNROLL 8
#define KF_OMP 1
#define KF_MATH 0
#define KF_ROWS 9LL
#define KF_COLS 1537LL
#define KF_LOG 1
#define KF_RPC 5
/* inputs: self; outputs: out */
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template host_row_softmax for aten::_softmax; knobs: strategy=0 unroll=4 omp=0 math=0 */
#include <math.h>
#include <stdint.h>

#define KF_STRATEGY 0
#define KF_UNROLL 4
#define KF_OMP 0
#define KF_MATH 0
#define KF_ROWS 1LL
#define KF_COLS 1000LL
#define KF_LOG 0
#define KF_RPC 1
/* inputs: self; outputs: out */
#elif KF_CHECK_VARIANT == 3
/* Kernel Forge builtin template host_row_softmax for aten::_softmax; knobs: strategy=0 unroll=16 omp=3 math=1 */
#include <math.h>
#include <stdint.h>

#define KF_STRATEGY 0
#define KF_UNROLL 16
#define KF_OMP 3
#define KF_MATH 1
#define KF_ROWS 15LL
#define KF_COLS 37LL
#define KF_LOG 0
#define KF_RPC 15
/* inputs: self; outputs: out */

#include "host_math.h"
#endif
