/* What a render prints before forge/templates/kernels/host_math.h, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: one variant. */
#define KF_CHECK_VARIANTS 1
/* Kernel Forge builtin template host_eltwise_unary for aten::gelu; knobs: unroll=8 omp=2 chunk=1024 math=1 */
#include <math.h>
#include <stdint.h>

#define KF_UNROLL 8
#define KF_OMP 2
#define KF_CHUNK 1024
#define KF_MATH 1
#define KF_N 111LL
/* inputs: self; outputs: out */
