/* The dtype table (kf_dtype, include/kforge.h): each code's name, as signatures, job files and
 * stats print it, and its element size. The one place these facts live: the Python package asks
 * through kf_dtype_name / kf_dtype_size. */
#ifndef KF_COMMON_DTYPE_H
#define KF_COMMON_DTYPE_H

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kf_dtype_name, kf_dtype_size and kf_dtype_from_name are exported: kforge.h declares them. */

/* The dtype of a c10::ScalarType code (a dtype argument in a signature: dtype=6 is f32), or
 * KF_DTYPE_UNKNOWN. */
int kf_dtype_from_scalar_type(long long code);

#ifdef __cplusplus
}
#endif
#endif
