/* The eager-match rule, the one place it lives: the worker's verification (forge/eval), the
 * plugin's first-use check (torch_ext) and add_kernel (kernel_forge/_verify.py, through
 * kf_match_dense) all judge a kernel's output by it.
 *
 * A float element (f32, f64, f16, bf16, fp8, complex parts) matches eager's when
 * |k - e| <= atol + rtol * |e|, with NaN exactly where eager has NaN and infinities equal (same
 * sign); integers and bools must be bit-identical. */
#ifndef KF_COMMON_MATCH_H
#define KF_COMMON_MATCH_H

#include <stdint.h>

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when a float value k matches eager's e (the rule above). */
int kf_match_value(double k, double e, double atol, double rtol);
/* The element of `dtype` at p as a double (NaN for a dtype without one); complex: the real part. */
double kf_decode_value(int dtype, const unsigned char *p);
double kf_half_to_double(uint16_t h);
double kf_bf16_to_double(uint16_t b);

/* kf_match_dense (kforge.h) compares two dense host buffers of n elements. */

#ifdef __cplusplus
}
#endif
#endif
