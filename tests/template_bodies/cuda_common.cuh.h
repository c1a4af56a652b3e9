/* What a render prints before forge/templates/kernels/cuda_common.cuh, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: one variant. */
#define KF_CHECK_VARIANTS 1
/* Kernel Forge builtin template cuda_cat for aten::cat; knobs: vec=4 unroll=4 threads=512 by_part=1 */
