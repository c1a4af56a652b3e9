"""Cases for the pointwise engine's ops (forge/templates/pointwise_ops.c), registered into
op_cases.py's table (op_cases calls register), so test_bit_identical.py runs them with and without
the plugin: outputs bit-identical to eager (NaN/Inf, signed zeros, dtypes, strides), the same
errors, and every op reached. Scalars, promotion (mixed dtypes, 0-dim tensors, Python numbers),
broadcasting, transposed views, zero-size, int and bool."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

f16, bf16, f32, f64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
i8, u8, i32, i64, b8 = torch.int8, torch.uint8, torch.int32, torch.int64, torch.bool
NAN, INF = float("nan"), float("inf")
A = torch.ops.aten

_SPECIAL = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 1e-40, 3e38, -3e38, 0.5, -2.5, 65504.0, 1e-8,
            88.0, -104.0, 20.0, -20.0, 3.0, -3.0, 6.0]


def rn(*shape, dtype=f32):
    return torch.randn(*shape, dtype=dtype)


def pos(*shape, dtype=f32):
    return (torch.rand(*shape) * 3 + 0.05).to(dtype)


def ri(*shape, lo=-5, hi=6, dtype=i64):
    return torch.randint(lo, hi, shape, dtype=dtype)


def rb(*shape):
    return torch.rand(*shape) > 0.5


def special(*shape, dtype=f32):
    n = math.prod(shape)
    base = torch.tensor(_SPECIAL * (n // len(_SPECIAL) + 1), dtype=f64)[:n]
    return base[torch.randperm(n)].to(dtype).reshape(shape)


def _inplace(fn, x, *a, **kw):
    """x after fn(x, ...) in place, and whether fn returned x itself"""
    r = fn(x, *a, **kw)
    return [x, torch.tensor([r is x])]


# unary ops: (op, fn, input maker); each also runs on NaN/Inf, bf16, a transposed view, zero-size
UNARY = {
    "aten::neg": (torch.neg, rn), "aten::abs": (torch.abs, rn),
    "aten::reciprocal": (torch.reciprocal, rn), "aten::exp": (torch.exp, rn),
    "aten::exp2": (torch.exp2, rn), "aten::expm1": (torch.expm1, rn),
    "aten::log": (torch.log, pos), "aten::log1p": (torch.log1p, pos),
    "aten::log2": (torch.log2, pos), "aten::sqrt": (torch.sqrt, pos),
    "aten::rsqrt": (torch.rsqrt, pos), "aten::sin": (torch.sin, rn), "aten::cos": (torch.cos, rn),
    "aten::tanh": (torch.tanh, rn), "aten::erf": (torch.erf, rn),
    "aten::sigmoid": (torch.sigmoid, rn), "aten::mish": (F.mish, rn),
    "aten::hardswish": (F.hardswish, rn), "aten::hardsigmoid": (F.hardsigmoid, rn),
    "aten::leaky_relu": (lambda x: F.leaky_relu(x, 0.2), rn), "aten::elu": (F.elu, rn),
    "aten::softplus": (lambda x: F.softplus(x, beta=2.0, threshold=5.0), rn),
    "aten::hardtanh": (F.relu6, rn), "aten::logical_not": (torch.logical_not, rn),
}
INPLACE = {
    "aten::neg_": lambda x: x.neg_(), "aten::exp_": lambda x: x.exp_(),
    "aten::tanh_": lambda x: x.tanh_(), "aten::sigmoid_": lambda x: x.sigmoid_(),
    "aten::gelu_": lambda x: A.gelu_(x, approximate="tanh"),
    "aten::silu_": lambda x: F.silu(x, inplace=True),
    "aten::hardswish_": lambda x: F.hardswish(x, inplace=True),
    "aten::leaky_relu_": lambda x: F.leaky_relu(x, 0.1, inplace=True),
    "aten::hardtanh_": lambda x: F.hardtanh(x, -0.5, 0.5, inplace=True),
    "aten::clamp_": lambda x: x.clamp_(-0.5, 0.7),
    "aten::clamp_max_": lambda x: x.clamp_max_(0.25),
}
# binary ops with a Tensor other: (op, fn)
BINARY = {
    "aten::sub.Tensor": lambda a, b: a - b, "aten::rsub.Tensor": lambda a, b: torch.rsub(a, b, alpha=2),
    "aten::div.Tensor": lambda a, b: a / b, "aten::pow.Tensor_Tensor": lambda a, b: a.abs() ** b,
    "aten::minimum": torch.minimum, "aten::maximum": torch.maximum,
    "aten::eq.Tensor": lambda a, b: a == b, "aten::ne.Tensor": lambda a, b: a != b,
    "aten::lt.Tensor": lambda a, b: a < b, "aten::le.Tensor": lambda a, b: a <= b,
    "aten::gt.Tensor": lambda a, b: a > b, "aten::ge.Tensor": lambda a, b: a >= b,
    "aten::logical_and": torch.logical_and, "aten::logical_or": torch.logical_or,
    "aten::logical_xor": torch.logical_xor,
}
# with a Python number (Scalar overloads reached through torch.ops, the others by operators)
SCALAR = {
    "aten::add.Scalar": lambda a: A.add.Scalar(a, 0.5, alpha=2),
    "aten::sub.Scalar": lambda a: A.sub.Scalar(a, 3),
    "aten::rsub.Scalar": lambda a: 1 - a, "aten::mul.Scalar": lambda a: A.mul.Scalar(a, 1e-3),
    "aten::div.Scalar": lambda a: A.div.Scalar(a, 7), "aten::eq.Scalar": lambda a: a == 0,
    "aten::ne.Scalar": lambda a: a != 1, "aten::lt.Scalar": lambda a: a < 0.5,
    "aten::le.Scalar": lambda a: a <= 0, "aten::gt.Scalar": lambda a: a > -0.5,
    "aten::ge.Scalar": lambda a: a >= 2, "aten::clamp_max": lambda a: torch.clamp_max(a, 0.3),
    "aten::clamp": lambda a: a.clamp(max=0.4),
}


def register(add_case):
    for op, (fn, mk) in UNARY.items():
        n = op.split("::")[1]
        add_case(f"pw_{n}_f32", op, lambda fn=fn, mk=mk: fn(mk(6, 35)))
        add_case(f"pw_{n}_nan_inf", op, lambda fn=fn: fn(special(4, 21)))
        add_case(f"pw_{n}_bf16_transposed", op, lambda fn=fn, mk=mk: fn(mk(9, 5, dtype=bf16).t()))
        add_case(f"pw_{n}_zero_size", op, lambda fn=fn: fn(rn(0, 4)))
    for n in ("neg", "abs", "exp", "sqrt", "sigmoid", "rsqrt"):  # integers (exp: as float32)
        add_case(f"pw_{n}_int", f"aten::{n}", lambda n=n: getattr(torch, n)(ri(5, 7).abs() + 1))
    for n in ("logical_not",):
        add_case(f"pw_{n}_int_bool", f"aten::{n}", lambda: [torch.logical_not(ri(5, 7)),
                                                            torch.logical_not(rb(3, 4))])
    for op, fn in INPLACE.items():
        n = op.split("::")[1]
        add_case(f"pw_{n}_f32", op, lambda fn=fn: _inplace(fn, rn(5, 13)))
        add_case(f"pw_{n}_nan_inf_f16", op, lambda fn=fn: _inplace(fn, special(3, 14, dtype=f16)))
        add_case(f"pw_{n}_transposed", op, lambda fn=fn: _inplace(fn, rn(13, 5).t()))
    for op, fn in BINARY.items():
        n = op.split("::")[1].replace(".", "_")
        add_case(f"pw_{n}_f32", op, lambda fn=fn: fn(rn(6, 7), rn(6, 7)))
        add_case(f"pw_{n}_broadcast_nan", op, lambda fn=fn: fn(special(4, 1, 21), special(21)))
        add_case(f"pw_{n}_mixed_f16_f32", op, lambda fn=fn: fn(rn(5, 6, dtype=f16), rn(6)))
        add_case(f"pw_{n}_0dim", op, lambda fn=fn: fn(rn(5, 6, dtype=bf16), torch.tensor(1.25)))
        add_case(f"pw_{n}_int", op, lambda fn=fn: fn(ri(5, 6, dtype=i32), ri(5, 6, lo=1)))
        add_case(f"pw_{n}_transposed", op, lambda fn=fn: fn(rn(7, 5).t(), rn(5, 7)))
        add_case(f"pw_{n}_zero_size", op, lambda fn=fn: fn(rn(0, 3), rn(3)))
    for n in ("eq", "ne", "lt", "minimum", "maximum", "logical_and", "logical_xor"):
        op = f"aten::{n}" if n in ("minimum", "maximum") or n.startswith("logical") \
            else f"aten::{n}.Tensor"
        add_case(f"pw_{n}_bool", op, lambda fn=BINARY[op]: fn(rb(4, 5), rb(5)))
    for op, fn in SCALAR.items():
        n = op.split("::")[1].replace(".", "_")
        add_case(f"pw_{n}_f32", op, lambda fn=fn: fn(rn(6, 11)))
        add_case(f"pw_{n}_int", op, lambda fn=fn: fn(ri(6, 11, dtype=i32)))
        add_case(f"pw_{n}_nan_inf_bf16", op, lambda fn=fn: fn(special(3, 7, dtype=bf16)))
    _more(add_case)


def _more(add_case):
    # in place and out=
    add_case("pw_sub__broadcast", "aten::sub_.Tensor", lambda: _inplace(lambda x: x.sub_(rn(9), alpha=3), rn(4, 9)))
    add_case("pw_sub__int", "aten::sub_.Tensor", lambda: _inplace(lambda x: x.sub_(7), ri(4, 9)))
    add_case("pw_div__f32", "aten::div_.Tensor", lambda: _inplace(lambda x: x.div_(rn(4, 9)), rn(4, 9)))
    add_case("pw_div__int_raises", None, lambda: ri(4, 9).div_(ri(4, 9, lo=1)))

    def div_out(a, b, out):
        r = torch.div(a, b, out=out)
        return [out, torch.tensor([r is out])]
    add_case("pw_div_out", "aten::div.out", lambda: div_out(rn(5, 8), rn(8), torch.empty(5, 8)))
    add_case("pw_div_out_transposed_out", "aten::div.out",
             lambda: div_out(rn(5, 8), rn(5, 8), torch.empty(8, 5).t()))
    for mode in ("trunc", "floor", None):
        add_case(f"pw_div_mode_{mode}_f32", "aten::div.Tensor_mode",
                 lambda m=mode: torch.div(special(6, 7), rn(6, 7) * 3, rounding_mode=m))
        add_case(f"pw_div_mode_{mode}_int", "aten::div.Tensor_mode",
                 lambda m=mode: torch.div(ri(6, 7), ri(6, 7, lo=1), rounding_mode=m))
    add_case("pw_div_floor_int_by_zero_raises", None,
             lambda: torch.div(ri(3, 3), torch.zeros(3, 3, dtype=i64), rounding_mode="floor"))
    add_case("pw_clamp_scalar_both", "aten::clamp", lambda: special(6, 7).clamp(-1.5, 2.0))
    add_case("pw_clamp_min_above_max", "aten::clamp", lambda: rn(6, 7).clamp(1.0, -1.0))
    add_case("pw_clamp_int8", "aten::clamp", lambda: ri(6, 7, lo=-100, hi=100, dtype=i8).clamp(-3, 50))
    add_case("pw_clamp_none_raises", None, lambda: torch.clamp(rn(3)))
    add_case("pw_clamp_tensor", "aten::clamp.Tensor", lambda: torch.clamp(special(4, 7), rn(7), rn(4, 1) + 1))
    add_case("pw_clamp_tensor_min_only", "aten::clamp.Tensor", lambda: torch.clamp(rn(4, 7), min=rn(4, 7)))
    add_case("pw_clamp_tensor_nan_bound", "aten::clamp.Tensor",
             lambda: torch.clamp(rn(3, 4), min=torch.tensor([NAN, 0.0, -1.0, 0.5])))
    add_case("pw_hardtanh_f64", "aten::hardtanh", lambda: F.hardtanh(rn(3, 4, dtype=f64), -2.0, 2.0))
    # selection and blends
    add_case("pw_where_broadcast", "aten::where.self", lambda: torch.where(rb(4, 1, 6), rn(5, 6), rn(4, 5, 1)))
    add_case("pw_where_scalar_other", "aten::where.self", lambda: torch.where(rb(4, 6), rn(4, 6), 0.0))
    add_case("pw_where_mixed", "aten::where.self", lambda: torch.where(rb(4, 6), rn(4, 6, dtype=f16), ri(4, 6)))
    add_case("pw_where_int_bool", "aten::where.self", lambda: [torch.where(rb(3, 5), ri(3, 5), ri(5)),
                                                               torch.where(rb(3, 5), rb(3, 5), rb(5))])
    add_case("pw_where_nan", "aten::where.self", lambda: torch.where(rb(3, 7), special(3, 7), special(3, 7)))
    add_case("pw_where_uint8_cond_raises", None, lambda: torch.where(ri(3, dtype=u8), rn(3), rn(3)))
    add_case("pw_masked_fill_neg_inf", "aten::masked_fill.Scalar",
             lambda: rn(2, 4, 6).masked_fill(rb(4, 6), float("-inf")))
    add_case("pw_masked_fill_finfo_min_bf16", "aten::masked_fill.Scalar",
             lambda: rn(2, 6, dtype=bf16).masked_fill(rb(2, 6), torch.finfo(bf16).min))
    add_case("pw_masked_fill_int", "aten::masked_fill.Scalar", lambda: ri(3, 5).masked_fill(rb(5), 7))
    add_case("pw_masked_fill_float_mask_raises", None, lambda: rn(3, 5).masked_fill(rn(3, 5), 1.0))
    add_case("pw_masked_fill__", "aten::masked_fill_.Scalar",
             lambda: _inplace(lambda x: x.masked_fill_(rb(5, 6), -1e4), rn(5, 6)))
    add_case("pw_lerp_scalar", "aten::lerp.Scalar", lambda: torch.lerp(special(4, 7), rn(4, 7), 0.3))
    add_case("pw_lerp_scalar_big_weight", "aten::lerp.Scalar", lambda: torch.lerp(rn(4, 7), rn(7), 0.9))
    add_case("pw_lerp_tensor", "aten::lerp.Tensor", lambda: torch.lerp(rn(4, 7), rn(4, 7), torch.rand(7)))
    add_case("pw_lerp_tensor_bf16", "aten::lerp.Tensor",
             lambda: torch.lerp(rn(4, 7, dtype=bf16), rn(4, 7, dtype=bf16), torch.rand(4, 7).to(bf16)))
    add_case("pw_addcmul", "aten::addcmul", lambda: torch.addcmul(rn(4, 7), rn(7), rn(4, 1), value=0.5))
    add_case("pw_addcmul_int", "aten::addcmul", lambda: torch.addcmul(ri(4, 7), ri(7), ri(4, 7), value=3))
    add_case("pw_addcmul_", "aten::addcmul_",
             lambda: _inplace(lambda x: x.addcmul_(rn(5, 6), rn(5, 6), value=0.001), rn(5, 6)))
    add_case("pw_addcdiv", "aten::addcdiv", lambda: torch.addcdiv(rn(4, 7), rn(4, 7), pos(4, 7), value=-2))
    add_case("pw_addcdiv_int_raises", None, lambda: torch.addcdiv(ri(3), ri(3), ri(3, lo=1)))
    add_case("pw_addcdiv_", "aten::addcdiv_",
             lambda: _inplace(lambda x: x.addcdiv_(rn(5, 6), pos(5, 6) + 1e-8, value=-0.01), rn(5, 6)))
    # bitwise
    for n, fn in (("and", torch.bitwise_and), ("or", torch.bitwise_or), ("xor", torch.bitwise_xor)):
        op = f"aten::bitwise_{n}.Tensor"
        add_case(f"pw_bitwise_{n}_int", op, lambda fn=fn: fn(ri(5, 6, lo=-100, hi=100), ri(6, dtype=i32)))
        add_case(f"pw_bitwise_{n}_bool", op, lambda fn=fn: fn(rb(5, 6), rb(5, 6)))
        add_case(f"pw_bitwise_{n}_u8_i8", op, lambda fn=fn: fn(ri(5, 6, lo=0, hi=255, dtype=u8),
                                                                ri(5, 6, lo=-128, hi=127, dtype=i8)))
    add_case("pw_bitwise_and_float_raises", None, lambda: rn(3) & rn(3))
    add_case("pw_bitwise_not_int_bool", "aten::bitwise_not", lambda: [~ri(5, 6), ~rb(5, 6), ~ri(4, lo=0, hi=200, dtype=u8)])
    # arithmetic corner cases through operators (wrapped numbers, int overflow, u8 wrap)
    add_case("pw_sub_int_overflow", "aten::sub.Tensor",
             lambda: torch.tensor([-2**63, 5], dtype=i64) - torch.tensor([1, -2**63], dtype=i64))
    add_case("pw_sub_bool_raises", None, lambda: rb(3) - rb(3))
    add_case("pw_neg_bool_raises", None, lambda: -rb(3))
    add_case("pw_pow_int_int", "aten::pow.Tensor_Tensor", lambda: ri(4, 5, lo=0, hi=4) ** ri(4, 5, lo=0, hi=4))
    add_case("pw_exp_f64", "aten::exp", lambda: torch.exp(special(3, 7, dtype=f64)))
    add_case("pw_rsqrt_0dim", "aten::rsqrt", lambda: torch.rsqrt(torch.tensor(4.0)))
    # fills
    add_case("pw_fill_", "aten::fill_.Scalar", lambda: _inplace(lambda x: x.fill_(2.5), rn(4, 6)))
    add_case("pw_fill_int_from_float", "aten::fill_.Scalar", lambda: _inplace(lambda x: x.fill_(-2.7), ri(4, 6)))
    add_case("pw_fill_bf16_transposed", "aten::fill_.Scalar",
             lambda: _inplace(lambda x: x.fill_(1 / 3), rn(6, 4, dtype=bf16).t()))
    add_case("pw_full", "aten::fill_.Scalar", lambda: torch.full((3, 5), 7.0))
    add_case("pw_zero_", "aten::zero_", lambda: _inplace(lambda x: x.zero_(), rn(4, 6)))
    add_case("pw_zero__strided", "aten::zero_", lambda: _inplace(lambda x: x.zero_(), rn(4, 12)[:, ::3]))
