/* The pointwise engine's table: one row per ATen overload (pointwise_ops.h says what each field
 * means). Each element expression is written once, in the neutral dialect of
 * kernels/pointwise_math.h, as eager computes it (CPU ATen's scalar functions, in its opmath
 * type); host_pointwise and cuda_pointwise render it. Adding an op is adding a row here and its
 * name to plugin/oplist.c.
 *
 * Covered by the older hand-written templates too (which stay: they vectorize and were tuned):
 * gelu, silu, relu(_), clamp_min(_), add/mul(.Tensor, _.Tensor) and pow.Tensor_Scalar by
 * host_eltwise_* (contiguous f32) and cuda_eltwise_* (f32/f16/bf16), copy_ by
 * cuda_eltwise_copy. */
#include "forge/templates/pointwise_ops.h"

#define F KF_PW_FLOAT
#define I KF_PW_INT
#define B KF_PW_BOOL
#define A KF_PW_ALL
#define OPM KF_PW_OPMATH
#define LOG KF_PW_LOGICAL
#define SAME KF_PW_SAME
#define BOOL KF_PW_BOOLRES
#define TOF KF_PW_TOFLOAT

/* the expressions rows share */
#define ADD "KF_ADD(x_self, KF_MUL(KF_S_alpha, x_other))"
#define SUB "KF_SUB(x_self, KF_MUL(KF_S_alpha, x_other))"
#define RSUB "KF_SUB(x_other, KF_MUL(KF_S_alpha, x_self))"
#define MUL "KF_MUL(x_self, x_other)"
#define DIV "KF_PW_DIV(x_self, x_other)"
#define GELU "x_self * (kf_ct)0.5 * ((kf_ct)1 + kf_erf(x_self * (kf_ct)0.70710678118654752440))"
/* kBeta = sqrt(2 / pi), kKappa = 0.044715, x^3 as x * x * x */
#define GELU_TANH                                                                                \
    "(kf_ct)0.5 * x_self * ((kf_ct)1 + kf_tanh((kf_ct)0.79788456080286535588 * "                 \
    "(x_self + (kf_ct)0.044715 * (x_self * x_self * x_self))))"
#define SILU "x_self / ((kf_ct)1 + kf_exp(-x_self))"
#define SIGMOID "(kf_ct)1 / ((kf_ct)1 + kf_exp(-x_self))"
#define HARDSWISH "x_self * kf_pw_min(kf_pw_max(x_self + (kf_ct)3, (kf_ct)0), (kf_ct)6) / (kf_ct)6"
#define RELU "KF_ISNAN(x_self) ? x_self : x_self < 0 ? (kf_ct)0 : x_self" /* NaN stays */
#define LEAKY "x_self > 0 ? x_self : x_self * KF_S_negative_slope"
#define CLAMP "kf_pw_clamp(x_self, has_min, KF_S_min, has_max, KF_S_max)"
#define CLAMP_MIN "kf_pw_clamp(x_self, 1, KF_S_min, 0, (kf_ct)0)"
#define CLAMP_MAX "kf_pw_clamp(x_self, 0, (kf_ct)0, 1, KF_S_max)"
#define HARDTANH "kf_pw_clamp(x_self, 1, KF_S_min_val, 1, KF_S_max_val)"
#define ADDCMUL "KF_ADD(x_self, KF_MUL(KF_MUL(KF_S_value, x_tensor1), x_tensor2))"
#define ADDCDIV "x_self + KF_S_value * (x_tensor1 / x_tensor2)"
#define MASKED "x_mask ? KF_S_value : x_self"

/* name, args, scalars, when, dtypes, rule, result, inplace, expr */
const kf_pw_op kf_pw_ops[] = {
    /* ---- arithmetic (alpha as eager takes it: in the compute type; a Python number as
     * `other`: mul and true division read it unnarrowed on both devices (eager's
     * original_scalar_value), add and sub on CUDA only; CUDA divides by it as x * (1 / s)) ---- */
    {"aten::add.Tensor", "self other^", "alpha", 0, A, OPM, SAME, 0, ADD},
    {"aten::add_.Tensor", "self other^", "alpha", 0, A, OPM, SAME, 1, ADD},
    {"aten::add.out", "self other^ out!", "alpha", 0, A, OPM, SAME, 0, ADD},
    {"aten::add.Scalar", "self other^", "alpha", 0, A, OPM, SAME, 0, ADD},
    {"aten::sub.Tensor", "self other^", "alpha", 0, F | I, OPM, SAME, 0, SUB},
    {"aten::sub_.Tensor", "self other^", "alpha", 0, F | I, OPM, SAME, 1, SUB},
    {"aten::sub.Scalar", "self other^", "alpha", 0, F | I, OPM, SAME, 0, SUB},
    {"aten::rsub.Tensor", "self other^", "alpha", 0, F | I, OPM, SAME, 0, RSUB},
    {"aten::rsub.Scalar", "self other^", "alpha", 0, F | I, OPM, SAME, 0, RSUB},
    {"aten::mul.Tensor", "self other~", 0, 0, A, OPM, SAME, 0, MUL},
    {"aten::mul_.Tensor", "self other~", 0, 0, A, OPM, SAME, 1, MUL},
    {"aten::mul.out", "self other~ out!", 0, 0, A, OPM, SAME, 0, MUL},
    {"aten::mul.Scalar", "self other~", 0, 0, A, OPM, SAME, 0, MUL},
    /* true division: integers divide as float32 */
    {"aten::div.Tensor", "self other~/", 0, 0, A, OPM, TOF, 0, DIV},
    {"aten::div_.Tensor", "self other~/", 0, 0, F, OPM, SAME, 1, DIV},
    {"aten::div.Scalar", "self other~/", 0, 0, A, OPM, TOF, 0, DIV},
    {"aten::div.out", "self other~/ out!", 0, 0, A, OPM, TOF, 0, DIV},
    /* rounding modes: floats only (an integer divided by 0 raises in eager) */
    {"aten::div.Tensor_mode", "self other~/", 0, "rounding_mode=", A, OPM, TOF, 0, DIV},
    {"aten::div.Tensor_mode", "self other", 0, "rounding_mode=trunc", F, OPM, SAME, 0,
     "kf_trunc(x_self / x_other)"},
    {"aten::div.Tensor_mode", "self other", 0, "rounding_mode=floor", F, OPM, SAME, 0,
     "kf_pw_div_floor(x_self, x_other)"},
    {"aten::pow.Tensor_Scalar", "self", "exponent", 0, F, OPM, SAME, 0,
     "kf_pw_pow_scalar(x_self, KF_S_exponent, KF_PW_PROD_RND)"},
    {"aten::pow.Tensor_Tensor", "self exponent", 0, 0, F, OPM, SAME, 0,
     "kf_pow(x_self, x_exponent)"},
    {"aten::neg", "self", 0, 0, F | I, OPM, SAME, 0, "KF_NEG(x_self)"},
    {"aten::neg_", "self", 0, 0, F | I, OPM, SAME, 1, "KF_NEG(x_self)"},
    {"aten::abs", "self", 0, 0, F | I, OPM, SAME, 0, "KF_ABS(x_self)"},
    {"aten::reciprocal", "self", 0, 0, A, OPM, TOF, 0, "(kf_ct)1 / x_self"},
    /* ---- math (integers as float32) ---- */
    {"aten::exp", "self", 0, 0, A, OPM, TOF, 0, "kf_exp(x_self)"},
    {"aten::exp_", "self", 0, 0, F, OPM, SAME, 1, "kf_exp(x_self)"},
    {"aten::exp2", "self", 0, 0, A, OPM, TOF, 0, "kf_exp2(x_self)"},
    {"aten::expm1", "self", 0, 0, A, OPM, TOF, 0, "kf_expm1(x_self)"},
    {"aten::log", "self", 0, 0, A, OPM, TOF, 0, "kf_log(x_self)"},
    {"aten::log1p", "self", 0, 0, A, OPM, TOF, 0, "kf_log1p(x_self)"},
    {"aten::log2", "self", 0, 0, A, OPM, TOF, 0, "kf_log2(x_self)"},
    {"aten::sqrt", "self", 0, 0, A, OPM, TOF, 0, "kf_sqrt(x_self)"},
    {"aten::rsqrt", "self", 0, 0, A, OPM, TOF, 0, "(kf_ct)1 / kf_sqrt(x_self)"},
    {"aten::sin", "self", 0, 0, A, OPM, TOF, 0, "kf_sin(x_self)"},
    {"aten::cos", "self", 0, 0, A, OPM, TOF, 0, "kf_cos(x_self)"},
    {"aten::tanh", "self", 0, 0, A, OPM, TOF, 0, "kf_tanh(x_self)"},
    {"aten::tanh_", "self", 0, 0, F, OPM, SAME, 1, "kf_tanh(x_self)"},
    {"aten::erf", "self", 0, 0, A, OPM, TOF, 0, "kf_erf(x_self)"},
    {"aten::sigmoid", "self", 0, 0, A, OPM, TOF, 0, SIGMOID},
    {"aten::sigmoid_", "self", 0, 0, F, OPM, SAME, 1, SIGMOID},
    /* ---- activations ---- */
    {"aten::gelu", "self", 0, "approximate=none", F, OPM, SAME, 0, GELU},
    {"aten::gelu", "self", 0, "approximate=tanh", F, OPM, SAME, 0, GELU_TANH},
    {"aten::gelu_", "self", 0, "approximate=none", F, OPM, SAME, 1, GELU},
    {"aten::gelu_", "self", 0, "approximate=tanh", F, OPM, SAME, 1, GELU_TANH},
    {"aten::silu", "self", 0, 0, F, OPM, SAME, 0, SILU},
    {"aten::silu_", "self", 0, 0, F, OPM, SAME, 1, SILU},
    {"aten::mish", "self", 0, 0, F, OPM, SAME, 0, "x_self * kf_tanh(kf_log1p(kf_exp(x_self)))"},
    {"aten::hardswish", "self", 0, 0, F, OPM, SAME, 0, HARDSWISH},
    {"aten::hardswish_", "self", 0, 0, F, OPM, SAME, 1, HARDSWISH},
    {"aten::hardsigmoid", "self", 0, 0, F, OPM, SAME, 0,
     "kf_pw_min(kf_pw_max(x_self + (kf_ct)3, (kf_ct)0), (kf_ct)6) / (kf_ct)6"},
    {"aten::relu", "self", 0, 0, F | I, OPM, SAME, 0, RELU},
    {"aten::relu_", "self", 0, 0, F | I, OPM, SAME, 1, RELU},
    {"aten::leaky_relu", "self", "negative_slope", 0, F, OPM, SAME, 0, LEAKY},
    {"aten::leaky_relu_", "self", "negative_slope", 0, F, OPM, SAME, 1, LEAKY},
    {"aten::elu", "self", "alpha scale input_scale", 0, F, OPM, SAME, 0,
     "x_self <= 0 ? kf_expm1(x_self * KF_S_input_scale) * (KF_S_alpha * KF_S_scale) "
     ": x_self * KF_S_scale"},
    {"aten::softplus", "self", "beta threshold", 0, F, OPM, SAME, 0,
     "x_self * KF_S_beta > KF_S_threshold ? x_self "
     ": kf_log1p(kf_exp(x_self * KF_S_beta)) / KF_S_beta"},
    /* ---- clamps (bounds rounded to the dtype, as eager does) ---- */
    {"aten::clamp", "self", "min?@ max?@", 0, F | I, OPM, SAME, 0, CLAMP},
    {"aten::clamp_", "self", "min?@ max?@", 0, F | I, OPM, SAME, 1, CLAMP},
    {"aten::clamp.Tensor", "self min? max?", 0, 0, F | I, OPM, SAME, 0,
     "kf_pw_clamp(x_self, has_min, x_min, has_max, x_max)"},
    {"aten::clamp_min", "self", "min@", 0, F | I, OPM, SAME, 0, CLAMP_MIN},
    {"aten::clamp_min_", "self", "min@", 0, F | I, OPM, SAME, 1, CLAMP_MIN},
    {"aten::clamp_max", "self", "max@", 0, F | I, OPM, SAME, 0, CLAMP_MAX},
    {"aten::clamp_max_", "self", "max@", 0, F | I, OPM, SAME, 1, CLAMP_MAX},
    {"aten::hardtanh", "self", "min_val@ max_val@", 0, F, OPM, SAME, 0, HARDTANH},
    {"aten::hardtanh_", "self", "min_val@ max_val@", 0, F, OPM, SAME, 1, HARDTANH},
    {"aten::minimum", "self other", 0, 0, A, OPM, SAME, 0, "kf_pw_min(x_self, x_other)"},
    {"aten::maximum", "self other", 0, 0, A, OPM, SAME, 0, "kf_pw_max(x_self, x_other)"},
    /* ---- selection and blends ---- */
    {"aten::where.self", "condition& self other", 0, 0, A, OPM, SAME, 0,
     "x_condition ? x_self : x_other"},
    {"aten::masked_fill.Scalar", "self mask&", "value@", 0, A, OPM, SAME, 0, MASKED},
    {"aten::masked_fill_.Scalar", "self mask&", "value@", 0, A, OPM, SAME, 1, MASKED},
    {"aten::lerp.Scalar", "self end", "weight", 0, F, OPM, SAME, 0,
     "kf_pw_lerp(x_self, x_end, KF_S_weight)"},
    {"aten::lerp.Tensor", "self end weight", 0, 0, F, OPM, SAME, 0,
     "kf_pw_lerp(x_self, x_end, x_weight)"},
    {"aten::addcmul", "self tensor1 tensor2", "value", 0, F | I, OPM, SAME, 0, ADDCMUL},
    {"aten::addcmul_", "self tensor1 tensor2", "value", 0, F | I, OPM, SAME, 1, ADDCMUL},
    {"aten::addcdiv", "self tensor1 tensor2", "value", 0, F, OPM, SAME, 0, ADDCDIV},
    {"aten::addcdiv_", "self tensor1 tensor2", "value", 0, F, OPM, SAME, 1, ADDCDIV},
    /* ---- comparisons (in the promoted type) ---- */
    {"aten::eq.Tensor", "self other", 0, 0, A, OPM, BOOL, 0, "x_self == x_other"},
    {"aten::eq.Scalar", "self other", 0, 0, A, OPM, BOOL, 0, "x_self == x_other"},
    {"aten::ne.Tensor", "self other", 0, 0, A, OPM, BOOL, 0, "x_self != x_other"},
    {"aten::ne.Scalar", "self other", 0, 0, A, OPM, BOOL, 0, "x_self != x_other"},
    {"aten::lt.Tensor", "self other", 0, 0, A, OPM, BOOL, 0, "x_self < x_other"},
    {"aten::lt.Scalar", "self other", 0, 0, A, OPM, BOOL, 0, "x_self < x_other"},
    {"aten::le.Tensor", "self other", 0, 0, A, OPM, BOOL, 0, "x_self <= x_other"},
    {"aten::le.Scalar", "self other", 0, 0, A, OPM, BOOL, 0, "x_self <= x_other"},
    {"aten::gt.Tensor", "self other", 0, 0, A, OPM, BOOL, 0, "x_self > x_other"},
    {"aten::gt.Scalar", "self other", 0, 0, A, OPM, BOOL, 0, "x_self > x_other"},
    {"aten::ge.Tensor", "self other", 0, 0, A, OPM, BOOL, 0, "x_self >= x_other"},
    {"aten::ge.Scalar", "self other", 0, 0, A, OPM, BOOL, 0, "x_self >= x_other"},
    /* ---- logical (any dtype, x != 0) and bitwise (integers and bool) ---- */
    {"aten::logical_not", "self", 0, 0, A, LOG, BOOL, 0, "!x_self"},
    {"aten::logical_and", "self other", 0, 0, A, LOG, BOOL, 0, "x_self && x_other"},
    {"aten::logical_or", "self other", 0, 0, A, LOG, BOOL, 0, "x_self || x_other"},
    {"aten::logical_xor", "self other", 0, 0, A, LOG, BOOL, 0, "x_self != x_other"},
    {"aten::bitwise_and.Tensor", "self other", 0, 0, I | B, OPM, SAME, 0, "x_self & x_other"},
    {"aten::bitwise_or.Tensor", "self other", 0, 0, I | B, OPM, SAME, 0, "x_self | x_other"},
    {"aten::bitwise_xor.Tensor", "self other", 0, 0, I | B, OPM, SAME, 0, "x_self ^ x_other"},
    {"aten::bitwise_not", "self", 0, 0, I | B, OPM, SAME, 0, "KF_P_BOOL ? !x_self : ~x_self"},
    /* ---- writes: casts, fills ---- */
    {"aten::copy_", "self! src", 0, 0, A, KF_PW_CAST, SAME, 0, "x_src"},
    /* .to(dtype) / .float() on the tensor's own device (a job has None for it), strided (0),
     * preserving its format (1) */
    {"aten::_to_copy", "self", 0, "layout=|0 device= pin_memory=|0 memory_format=|1", A, KF_PW_CAST,
     KF_PW_ASDTYPE, 0, "x_self"},
    {"aten::fill_.Scalar", "self!", "value@", 0, A, OPM, SAME, 0, "KF_S_value"},
    {"aten::zero_", "self!", 0, 0, A, OPM, SAME, 0, "(kf_ct)0"},
};
const int kf_pw_n_ops = (int)(sizeof kf_pw_ops / sizeof kf_pw_ops[0]);
