/* The verification tolerances (docs/architecture.md "Verification"): the one table, asked by the Python
 * package when it writes a job or checks a kernel. */
#include <string.h>

#include "kforge.h"

/* ops whose kernels accumulate (a sum over a row, a substitution): fp32 gets 1e-4, not 1e-5 */
static const char *const accumulating[] = {
    "_softmax", "_log_softmax", "native_layer_norm", "native_group_norm", "_fused_rms_norm",
    "native_batch_norm", "cudnn_batch_norm", "_native_batch_norm_legit_no_training", "mean",
    "linalg_solve_triangular", "_conv_depthwise2d",
    /* generic reductions (forge/templates/reduce_ops.c): amax/amin/max/min/argmax pick an
     * element and stay exact */
    "sum", "prod", "var", "std", "var_mean", "linalg_vector_norm", "logsumexp", NULL,
};

/* "aten::mean.dim" -> "mean" */
int kf_op_accumulates(const char *op)
{
    const char *base = strstr(op, "::");
    base = base ? base + 2 : op;
    size_t n = strcspn(base, ".");
    for (int i = 0; accumulating[i]; i++)
        if (strlen(accumulating[i]) == n && !strncmp(base, accumulating[i], n)) return 1;
    return 0;
}

kf_status kf_tolerance(const char *op, int dtype, double *atol, double *rtol)
{
    if (!op || !atol || !rtol) return KF_ERR_INVALID;
    double t;
    switch (dtype) {
    case KF_F16: t = 1e-3; break;
    case KF_BF16: t = 1e-2; break;
    case KF_F32: case KF_F64: case KF_F8E4M3: case KF_F8E5M2: t = kf_op_accumulates(op) ? 1e-4 : 1e-5; break;
    default: t = 0; break; /* integers and bool exact */
    }
    *atol = *rtol = t;
    return KF_OK;
}

kf_status kf_tolerance_flipped(int dtype, double *atol, double *rtol)
{
    if (!atol || !rtol) return KF_ERR_INVALID;
    /* the input one ulp off at the bottom of its binade, both results rounded: 2^-(p-2) for p
     * significand bits (bf16 8, f16 11); torch.testing's bf16 default is 1.6e-2 */
    *atol = 0;
    *rtol = dtype == KF_BF16 ? 0x1p-6 : dtype == KF_F16 ? 0x1p-9 : 0;
    return KF_OK;
}
