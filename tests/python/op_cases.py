"""Cases for the intercepted ATen ops, run identically with and without the plugin.

Each case names the intercepted op it targets ("aten::add_.Tensor", ...) and builds its inputs
from a fixed seed. Run as a script, every case runs in this process and a dict is saved with
`torch.save` to argv[1]:

    {case_name: [output tensors, cloned]          # outputs, in-place-mutated inputs, out= tensors
                | ("error", type name, message),   # when eager raises
     META_KEY:   {case_name: {"op", "layouts" (of the uncloned outputs), "warnings"}},
     STATS_KEY:  {"per_case": {case_name: [stats rows]}, "intercepted_ops", "ops_info",
                  "enabled", "plugin_loaded"},          # only when KFORGE_DISABLE is not set
     BASELINE_KEY: {"plugin_loaded": False}}            # only when it is

Without KFORGE_DISABLE the plugin is imported first, and each case runs between
`kernel_forge.reset_stats()` and `kernel_forge.stats()`, so its rows belong to it alone. With
KFORGE_DISABLE=1 kernel_forge is not even imported: that run is the true eager baseline.

Usage: python tests/python/op_cases.py OUT.pt [case-name-substring ...]

KFORGE_TEST_DEVICE=cuda runs every case with CUDA as the default device (the same cases, so the
same checks hold on GPU), plus the cases of ops intercepted on CUDA only.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
import zlib
from typing import Callable, NamedTuple, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = os.environ.get("KFORGE_TEST_DEVICE", "cpu")
META_KEY = "__meta__"
STATS_KEY = "__kforge_stats__"
BASELINE_KEY = "__baseline__"

f16, bf16, f32, f64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
i8, u8, i32, i64, b8 = torch.int8, torch.uint8, torch.int32, torch.int64, torch.bool
c64 = torch.complex64
CL = torch.channels_last
NAN, INF = float("nan"), float("inf")


class Case(NamedTuple):
    name: str
    # the intercepted op it targets (or a tuple: any of them, where the device picks one);
    # None: eager raises before any kernel
    op: Optional[str | tuple[str, ...]]
    fn: Callable[[], object]


def targets(c: "Case") -> tuple[str, ...]:
    return () if c.op is None else (c.op,) if isinstance(c.op, str) else c.op


CASES: dict[str, Case] = {}


def add_case(name: str, op: Optional[str], fn: Callable[[], object]) -> None:
    if name in CASES:
        raise ValueError(f"duplicate case {name}")
    CASES[name] = Case(name, op, fn)


def case(op: Optional[str], name: Optional[str] = None):
    def deco(fn):
        add_case(name or fn.__name__, op, fn)
        return fn
    return deco


# ---------------------------------------------------------------------------------------------
# input helpers (all draw from the global generator, seeded per case by the runner)

def rn(*shape, dtype=f32):
    return torch.randn(*shape, dtype=dtype)


def ri(*shape, lo=-5, hi=6, dtype=i64):
    return torch.randint(lo, hi, shape, dtype=dtype)


def rb(*shape):
    return torch.rand(*shape) > 0.5


def cl(x):
    return x.contiguous(memory_format=CL)


_SPECIAL = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 1e-40, -1e-40, 3e38, -3e38, 0.5, -2.5, 65504.0,
            70000.0, 1e-8, 7.0, -7.0, 88.0, -104.0, 20.0, -20.0]


def special(*shape, dtype=f32):
    """NaN, +-Inf, signed zeros, subnormals, huge and ordinary values, in a seeded order."""
    n = math.prod(shape)
    base = torch.tensor(_SPECIAL * (n // len(_SPECIAL) + 1), dtype=f64)[:n]
    base = base[torch.randperm(n)]
    return base.to(dtype).reshape(shape)


def alias(a, b):
    """Whether `a` is `b` (in-place / out= return self) as a tensor, so it is compared too."""
    return torch.tensor([a is b, a.data_ptr() == b.data_ptr()])


# ---------------------------------------------------------------------------------------------
# aten::_softmax

SM = "aten::_softmax"
for d in (0, 1, -1):
    add_case(f"softmax_f32_dim{d}", SM, lambda d=d: F.softmax(rn(4, 5, 6), d))
    add_case(f"softmax_method_dim{d}", SM, lambda d=d: rn(3, 7).softmax(d if d != 1 else -2))
for d in (0, -1):
    add_case(f"softmax_transposed_dim{d}", SM, lambda d=d: F.softmax(rn(6, 5).t(), d))
add_case("softmax_sliced_offset", SM, lambda: F.softmax(rn(8, 10)[1::2, 1:8], -1))
add_case("softmax_channels_last_dim1", SM, lambda: F.softmax(cl(rn(2, 3, 4, 5)), 1))
add_case("softmax_channels_last_dim_last", SM, lambda: F.softmax(cl(rn(2, 3, 4, 5)), -1))
add_case("softmax_expand_dim_last", SM, lambda: F.softmax(rn(1, 7).expand(3, 7), -1))
add_case("softmax_expand_dim0", SM, lambda: F.softmax(rn(1, 7).expand(3, 7), 0))
add_case("softmax_dtype_f64", SM, lambda: F.softmax(rn(3, 5), -1, dtype=f64))
add_case("softmax_dtype_f32_from_f16", SM, lambda: F.softmax(rn(3, 5, dtype=f16), 0, dtype=f32))
add_case("softmax_dtype_f32_from_bf16", SM, lambda: torch.softmax(rn(4, 9, dtype=bf16), -1, dtype=f32))
add_case("softmax_f16", SM, lambda: F.softmax(rn(4, 33, dtype=f16), -1))
add_case("softmax_bf16", SM, lambda: F.softmax(rn(4, 33, dtype=bf16), -1))
add_case("softmax_bf16_dim0", SM, lambda: F.softmax(rn(5, 6, dtype=bf16), 0))
add_case("softmax_f64", SM, lambda: F.softmax(rn(4, 9, dtype=f64), 1))
add_case("softmax_nan_inf", SM, lambda: F.softmax(special(8, 11), -1))
add_case("softmax_all_neg_inf_row", SM,
         lambda: F.softmax(torch.tensor([[-INF, -INF, -INF], [0.0, -INF, 1.0]]), -1))
add_case("softmax_zero_rows", SM, lambda: F.softmax(rn(0, 5), -1))
add_case("softmax_zero_cols", SM, lambda: F.softmax(rn(3, 0), -1))
add_case("softmax_zero_cols_dim0", SM, lambda: F.softmax(rn(3, 0), 0))
add_case("softmax_0dim", SM, lambda: F.softmax(torch.tensor(2.5), 0))
add_case("softmax_long_row", SM, lambda: F.softmax(rn(3, 1027), -1))
add_case("softmax_attention_like", SM, lambda: F.softmax(rn(2, 4, 16, 16) * 0.25, dim=-1))
add_case("softmax_err_dim_out_of_range", SM, lambda: F.softmax(rn(2, 3), 2))
add_case("softmax_err_int_input", SM, lambda: F.softmax(ri(3, 4), 0))
add_case("softmax_err_half_to_float_cpu", SM,
         lambda: torch.ops.aten._softmax(rn(3, 4, dtype=f16), -1, True))

# ---------------------------------------------------------------------------------------------
# aten::_log_softmax

LSM = "aten::_log_softmax"
for d in (0, 1, -1):
    add_case(f"log_softmax_f32_dim{d}", LSM, lambda d=d: F.log_softmax(rn(4, 5, 6), d))
add_case("log_softmax_transposed", LSM, lambda: F.log_softmax(rn(6, 5).t(), -1))
add_case("log_softmax_transposed_dim0", LSM, lambda: F.log_softmax(rn(6, 5).t(), 0))
add_case("log_softmax_channels_last", LSM, lambda: F.log_softmax(cl(rn(2, 3, 4, 5)), 1))
add_case("log_softmax_expand", LSM, lambda: F.log_softmax(rn(1, 9).expand(4, 9), -1))
add_case("log_softmax_dtype_f64", LSM, lambda: F.log_softmax(rn(3, 5), 1, dtype=f64))
add_case("log_softmax_dtype_f32_from_bf16", LSM, lambda: F.log_softmax(rn(3, 5, dtype=bf16), -1, dtype=f32))
add_case("log_softmax_f16", LSM, lambda: F.log_softmax(rn(4, 40, dtype=f16), -1))
add_case("log_softmax_bf16", LSM, lambda: F.log_softmax(rn(4, 40, dtype=bf16), -1))
add_case("log_softmax_f64", LSM, lambda: F.log_softmax(rn(4, 9, dtype=f64), 0))
add_case("log_softmax_nan_inf", LSM, lambda: F.log_softmax(special(6, 11), -1))
add_case("log_softmax_zero_size", LSM, lambda: F.log_softmax(rn(0, 7), -1))
add_case("log_softmax_0dim", LSM, lambda: F.log_softmax(torch.tensor(-1.5), 0))
add_case("log_softmax_long_row", LSM, lambda: F.log_softmax(rn(2, 1031), -1))
add_case("log_softmax_cross_entropy", LSM,
         lambda: F.cross_entropy(rn(6, 10), torch.randint(0, 10, (6,))))
add_case("log_softmax_cross_entropy_3d", LSM,
         lambda: F.cross_entropy(rn(2, 10, 5), torch.randint(0, 10, (2, 5)), reduction="none"))
add_case("log_softmax_err_dim_out_of_range", LSM, lambda: F.log_softmax(rn(2, 3), -3))

# ---------------------------------------------------------------------------------------------
# aten::native_layer_norm

LN = "aten::native_layer_norm"
add_case("layer_norm_affine", LN, lambda: F.layer_norm(rn(4, 6, 8), (8,), rn(8), rn(8)))
add_case("layer_norm_no_affine", LN, lambda: F.layer_norm(rn(4, 6, 8), (8,)))
add_case("layer_norm_weight_only", LN, lambda: F.layer_norm(rn(4, 6, 8), (8,), weight=rn(8)))
add_case("layer_norm_multi_dim_affine", LN,
         lambda: F.layer_norm(rn(3, 6, 8), (6, 8), rn(6, 8), rn(6, 8)))
add_case("layer_norm_multi_dim_no_affine", LN, lambda: F.layer_norm(rn(3, 6, 8), (6, 8)))
add_case("layer_norm_transposed_input", LN,
         lambda: F.layer_norm(rn(8, 5, 6).transpose(0, 2), (8,), rn(8), rn(8)))
add_case("layer_norm_expand_input", LN, lambda: F.layer_norm(rn(1, 16).expand(5, 16), (16,)))
add_case("layer_norm_channels_last_input", LN,
         lambda: F.layer_norm(cl(rn(2, 3, 4, 5)), (5,), rn(5), rn(5)))
add_case("layer_norm_f16", LN,
         lambda: F.layer_norm(rn(4, 32, dtype=f16), (32,), rn(32, dtype=f16), rn(32, dtype=f16)))
add_case("layer_norm_bf16", LN,
         lambda: F.layer_norm(rn(4, 32, dtype=bf16), (32,), rn(32, dtype=bf16), rn(32, dtype=bf16)))
add_case("layer_norm_bf16_input_f32_params", LN,
         lambda: F.layer_norm(rn(4, 32, dtype=bf16), (32,), rn(32), rn(32)))
add_case("layer_norm_f64", LN, lambda: F.layer_norm(rn(4, 32, dtype=f64), (32,), rn(32, dtype=f64)))
add_case("layer_norm_zero_batch", LN, lambda: F.layer_norm(rn(0, 8), (8,), rn(8), rn(8)))
add_case("layer_norm_nan_inf", LN, lambda: F.layer_norm(special(6, 11), (11,)))
add_case("layer_norm_eps", LN, lambda: F.layer_norm(rn(4, 8) * 1e-3, (8,), eps=1e-2))
add_case("layer_norm_long_row", LN, lambda: F.layer_norm(rn(3, 1029), (1029,), rn(1029), rn(1029)))
add_case("layer_norm_module", LN, lambda: nn.LayerNorm(12)(rn(2, 3, 12)))
add_case("layer_norm_err_wrong_normalized_shape", LN, lambda: F.layer_norm(rn(2, 3, 4), (5,)))
add_case("layer_norm_err_wrong_weight_shape", LN,
         lambda: F.layer_norm(rn(2, 3, 4), (4,), weight=torch.ones(5)))

# ---------------------------------------------------------------------------------------------
# aten::native_group_norm

GN = "aten::native_group_norm"
for g in (1, 2, 4, 8):
    add_case(f"group_norm_groups{g}_affine", GN,
             lambda g=g: F.group_norm(rn(2, 8, 5, 5), g, rn(8), rn(8)))
add_case("group_norm_groups2_no_affine", GN, lambda: F.group_norm(rn(2, 8, 5, 5), 2))
add_case("group_norm_groups4_channels_last", GN,
         lambda: F.group_norm(cl(rn(2, 8, 5, 5)), 4, rn(8), rn(8)))
add_case("group_norm_groups8_channels_last_no_affine", GN,
         lambda: F.group_norm(cl(rn(3, 8, 3, 7)), 8))
add_case("group_norm_3d_input", GN, lambda: F.group_norm(rn(3, 6, 7), 3, rn(6), rn(6)))
add_case("group_norm_2d_input", GN, lambda: F.group_norm(rn(4, 6), 2))
add_case("group_norm_transposed_input", GN,
         lambda: F.group_norm(rn(5, 6, 3).transpose(0, 2), 3, rn(6), rn(6)))
add_case("group_norm_bf16", GN,
         lambda: F.group_norm(rn(2, 8, 4, 4, dtype=bf16), 4, rn(8, dtype=bf16), rn(8, dtype=bf16)))
add_case("group_norm_bf16_input_f32_params", GN,
         lambda: F.group_norm(rn(2, 8, 4, 4, dtype=bf16), 4, rn(8), rn(8)))
add_case("group_norm_f16", GN, lambda: F.group_norm(rn(2, 8, 4, 4, dtype=f16), 2))
add_case("group_norm_f64", GN, lambda: F.group_norm(rn(2, 8, 4, 4, dtype=f64), 4, rn(8, dtype=f64)))
add_case("group_norm_zero_batch", GN, lambda: F.group_norm(rn(0, 4, 3), 2))
add_case("group_norm_nan_inf", GN, lambda: F.group_norm(special(2, 4, 11), 2))
add_case("group_norm_eps", GN, lambda: F.group_norm(rn(2, 4, 6) * 1e-3, 2, eps=1e-2))
add_case("group_norm_module", GN, lambda: nn.GroupNorm(4, 8)(rn(2, 8, 3, 3)))
add_case("group_norm_err_numel_mismatch", GN,
         lambda: torch.ops.aten.native_group_norm(rn(2, 3, 4, 4), None, None, 2, 3, 15, 3, 1e-5))
# checked by the composite group_norm before any backend kernel: compared, not counted
add_case("group_norm_err_not_divisible", None, lambda: F.group_norm(rn(2, 3, 4, 4), 2))


# ---------------------------------------------------------------------------------------------
# aten::native_batch_norm (eval and train) and aten::_native_batch_norm_legit_no_training

BN = "aten::native_batch_norm"


def _bn(x, training, affine=True, running=True, momentum=0.1, eps=1e-5):
    c = x.shape[1]
    pd = x.dtype if x.dtype == f64 else f32  # reduced-precision inputs take f32 parameters
    rm = rn(c, dtype=pd) if running else None
    rv = (torch.rand(c, dtype=pd) + 0.5) if running else None
    w, b = (rn(c, dtype=pd), rn(c, dtype=pd)) if affine else (None, None)
    y = F.batch_norm(x, rm, rv, w, b, training=training, momentum=momentum, eps=eps)
    return [y] + ([rm, rv] if running else [])


add_case("batch_norm_eval_running_stats", BN, lambda: _bn(rn(4, 3, 5, 5), False))
add_case("batch_norm_eval_no_affine", BN, lambda: _bn(rn(4, 3, 5, 5), False, affine=False))
add_case("batch_norm_eval_channels_last", BN, lambda: _bn(cl(rn(4, 3, 5, 5)), False))
add_case("batch_norm_eval_2d", BN, lambda: _bn(rn(6, 5), False))
add_case("batch_norm_eval_3d", BN, lambda: _bn(rn(2, 4, 7), False))
add_case("batch_norm_eval_transposed", BN, lambda: _bn(rn(7, 4, 2).transpose(0, 2), False))
add_case("batch_norm_eval_bf16_input_f32_params", BN, lambda: _bn(rn(2, 3, 4, 4, dtype=bf16), False))
add_case("batch_norm_eval_f64", BN, lambda: _bn(rn(2, 3, 4, 4, dtype=f64), False))
add_case("batch_norm_eval_nan_inf", BN, lambda: _bn(special(2, 3, 11), False))
add_case("batch_norm_train_running_stats", BN, lambda: _bn(rn(4, 3, 5, 5), True))
add_case("batch_norm_train_momentum", BN, lambda: _bn(rn(4, 3, 5, 5), True, momentum=0.5, eps=1e-3))
add_case("batch_norm_train_no_running_stats", BN, lambda: _bn(rn(4, 3, 5, 5), True, running=False))
add_case("batch_norm_train_channels_last", BN, lambda: _bn(cl(rn(4, 3, 5, 5)), True))
add_case("batch_norm_train_2d", BN, lambda: _bn(rn(6, 5), True))
add_case("batch_norm_train_3d_no_affine", BN, lambda: _bn(rn(2, 4, 7), True, affine=False))
add_case("batch_norm_train_bf16_input_f32_params", BN, lambda: _bn(rn(3, 3, 4, 4, dtype=bf16), True))
add_case("batch_norm_train_nan_inf", BN, lambda: _bn(special(2, 3, 11), True))


@case(BN)
def batch_norm_module_train_then_eval():
    m = nn.BatchNorm2d(3)
    x = rn(4, 3, 5, 5)
    y1 = m(x)
    m.eval()
    y2 = m(rn(2, 3, 5, 5))
    return [y1, y2, m.running_mean, m.running_var, m.num_batches_tracked]


add_case("batch_norm_direct_short_running_mean", BN,
         lambda: torch.ops.aten.native_batch_norm(rn(2, 3, 4, 4), None, None, torch.zeros(4),
                                                  torch.ones(4), False, 0.1, 1e-5))
# checked by the Python wrapper before any kernel: compared, not counted
add_case("batch_norm_err_train_one_value", None,
         lambda: F.batch_norm(rn(1, 3), torch.zeros(3), torch.ones(3), training=True))
# checked by the composite batch_norm before any backend kernel: compared, not counted
add_case("batch_norm_err_running_mean_size", None,
         lambda: F.batch_norm(rn(2, 3, 4, 4), torch.zeros(4), torch.ones(4)))

BNL = "aten::_native_batch_norm_legit_no_training"


def _bn_legit(x, affine=True):
    c = x.shape[1]
    w, b = (rn(c), rn(c)) if affine else (None, None)
    rm, rv = rn(c), torch.rand(c) + 0.5
    return list(torch.ops.aten._native_batch_norm_legit_no_training(x, w, b, rm, rv, 0.1, 1e-5))


add_case("bn_legit_no_training_contiguous", BNL, lambda: _bn_legit(rn(4, 3, 5, 5)))
add_case("bn_legit_no_training_channels_last", BNL, lambda: _bn_legit(cl(rn(4, 3, 5, 5))))
add_case("bn_legit_no_training_no_affine", BNL, lambda: _bn_legit(rn(4, 3, 5, 5), affine=False))
add_case("bn_legit_no_training_2d", BNL, lambda: _bn_legit(rn(6, 5)))
add_case("bn_legit_no_training_bf16", BNL, lambda: _bn_legit(rn(2, 3, 4, 4, dtype=bf16)))
add_case("bn_legit_no_training_nan", BNL, lambda: _bn_legit(special(2, 3, 11)))

# ---------------------------------------------------------------------------------------------
# aten::gelu, aten::silu

GELU = "aten::gelu"
for appr in ("none", "tanh"):
    add_case(f"gelu_{appr}_f32", GELU, lambda a=appr: F.gelu(rn(4, 37), approximate=a))
    add_case(f"gelu_{appr}_bf16", GELU, lambda a=appr: F.gelu(rn(4, 37, dtype=bf16), approximate=a))
    add_case(f"gelu_{appr}_f16", GELU, lambda a=appr: F.gelu(rn(4, 37, dtype=f16), approximate=a))
    add_case(f"gelu_{appr}_f64", GELU, lambda a=appr: F.gelu(rn(4, 37, dtype=f64), approximate=a))
    add_case(f"gelu_{appr}_transposed", GELU, lambda a=appr: F.gelu(rn(9, 5).t(), approximate=a))
    add_case(f"gelu_{appr}_nan_inf", GELU, lambda a=appr: F.gelu(special(5, 9), approximate=a))
add_case("gelu_channels_last", GELU, lambda: F.gelu(cl(rn(2, 3, 4, 5))))
add_case("gelu_expand", GELU, lambda: F.gelu(rn(1, 6).expand(4, 6), approximate="tanh"))
add_case("gelu_zero_size", GELU, lambda: F.gelu(rn(0, 3)))
add_case("gelu_0dim", GELU, lambda: F.gelu(torch.tensor(0.75), approximate="tanh"))
add_case("gelu_long", GELU, lambda: F.gelu(rn(4099)))
add_case("gelu_module_tanh", GELU, lambda: nn.GELU(approximate="tanh")(rn(3, 8)))
add_case("gelu_err_bad_approximate", GELU, lambda: F.gelu(rn(3), approximate="bogus"))
add_case("gelu_err_int", GELU, lambda: F.gelu(ri(4)))

SILU = "aten::silu"
add_case("silu_f32", SILU, lambda: F.silu(rn(4, 37)))
add_case("silu_transposed", SILU, lambda: F.silu(rn(9, 5).t()))
add_case("silu_channels_last", SILU, lambda: F.silu(cl(rn(2, 3, 4, 5))))
add_case("silu_expand", SILU, lambda: F.silu(rn(1, 6).expand(4, 6)))
add_case("silu_bf16", SILU, lambda: F.silu(rn(4, 37, dtype=bf16)))
add_case("silu_f16", SILU, lambda: F.silu(rn(4, 37, dtype=f16)))
add_case("silu_f64", SILU, lambda: F.silu(rn(4, 37, dtype=f64)))
add_case("silu_nan_inf", SILU, lambda: F.silu(special(5, 9)))
add_case("silu_zero_size", SILU, lambda: F.silu(rn(2, 0, 3)))
add_case("silu_0dim", SILU, lambda: F.silu(torch.tensor(-1.25)))
add_case("silu_long", SILU, lambda: F.silu(rn(4101)))
add_case("silu_module", SILU, lambda: nn.SiLU()(rn(3, 8)))
add_case("silu_err_int", SILU, lambda: F.silu(ri(4)))

# ---------------------------------------------------------------------------------------------
# aten::relu, aten::relu_, aten::clamp_min, aten::clamp_min_

RELU = "aten::relu"
add_case("relu_f32", RELU, lambda: F.relu(rn(4, 37)))
add_case("relu_method", RELU, lambda: rn(3, 5).relu())
add_case("relu_transposed", RELU, lambda: torch.relu(rn(9, 5).t()))
add_case("relu_channels_last", RELU, lambda: F.relu(cl(rn(2, 3, 4, 5))))
add_case("relu_expand", RELU, lambda: F.relu(rn(1, 6).expand(4, 6)))
add_case("relu_int64", RELU, lambda: F.relu(ri(4, 7)))
add_case("relu_int32", RELU, lambda: F.relu(ri(4, 7, dtype=i32)))
add_case("relu_int8", RELU, lambda: F.relu(ri(4, 7, dtype=i8)))
add_case("relu_uint8", RELU, lambda: F.relu(ri(4, 7, lo=0, hi=255, dtype=u8)))
add_case("relu_bf16", RELU, lambda: F.relu(rn(4, 37, dtype=bf16)))
add_case("relu_f16", RELU, lambda: F.relu(rn(4, 37, dtype=f16)))
add_case("relu_f64", RELU, lambda: F.relu(rn(4, 37, dtype=f64)))
add_case("relu_nan_inf", RELU, lambda: F.relu(special(5, 9)))
add_case("relu_zero_size", RELU, lambda: F.relu(rn(0, 4)))
add_case("relu_0dim", RELU, lambda: F.relu(torch.tensor(-3.0)))
add_case("relu_module", RELU, lambda: nn.ReLU()(rn(3, 8)))
add_case("relu_err_bool", RELU, lambda: torch.relu(rb(3)))

RELU_ = "aten::relu_"


@case(RELU_)
def relu__functional_inplace():
    x = rn(4, 37)
    y = F.relu(x, inplace=True)
    return [y, x, alias(y, x)]


@case(RELU_)
def relu__method_on_transposed_view():
    base = rn(6, 5)
    v = base.t()
    y = v.relu_()
    return [y, base, alias(y, v)]


@case(RELU_)
def relu__channels_last():
    x = cl(rn(2, 3, 4, 5))
    y = x.relu_()
    return [y, alias(y, x)]


@case(RELU_)
def relu__int32():
    x = ri(5, 5, dtype=i32)
    return [x.relu_(), x]


@case(RELU_)
def relu__bf16_nan():
    x = special(4, 11).to(bf16)
    return [torch.relu_(x), x]


@case(RELU_)
def relu__module_inplace():
    x = rn(3, 8)
    y = nn.ReLU(inplace=True)(x)
    return [y, x, alias(y, x)]


@case(RELU_)
def relu__zero_size():
    x = rn(0, 3)
    return [x.relu_()]


add_case("relu__err_expanded_self", RELU_, lambda: torch.zeros(1, 3).expand(4, 3).relu_())

CMIN = "aten::clamp_min"
add_case("clamp_min_f32", CMIN, lambda: torch.clamp_min(rn(4, 37), 0.5))
add_case("clamp_min_negative", CMIN, lambda: torch.clamp_min(rn(4, 37), -0.25))
add_case("clamp_min_method_transposed", CMIN, lambda: rn(9, 5).t().clamp_min(0.0))
add_case("clamp_min_int_int", CMIN, lambda: torch.clamp_min(ri(4, 7), 1))
add_case("clamp_min_int_float_promotes", CMIN, lambda: torch.clamp_min(ri(4, 7), 0.5))
add_case("clamp_min_bf16", CMIN, lambda: torch.clamp_min(rn(4, 37, dtype=bf16), 0.1))
add_case("clamp_min_f16", CMIN, lambda: torch.clamp_min(rn(4, 37, dtype=f16), -0.1))
add_case("clamp_min_nan_inf", CMIN, lambda: torch.clamp_min(special(5, 9), 1.0))
add_case("clamp_min_nan_bound", CMIN, lambda: torch.clamp_min(rn(4, 5), NAN))
add_case("clamp_min_expand", CMIN, lambda: torch.clamp_min(rn(1, 6).expand(4, 6), 0.0))
add_case("clamp_min_channels_last", CMIN, lambda: torch.clamp_min(cl(rn(2, 3, 4, 5)), 0.2))
add_case("clamp_min_zero_size", CMIN, lambda: torch.clamp_min(rn(0, 4), 0.0))
add_case("clamp_min_0dim", CMIN, lambda: torch.clamp_min(torch.tensor(-2.0), -1.0))
add_case("relu_calls_clamp_min", RELU, lambda: torch.relu(rn(2, 2, 3)))  # nested: passed through

CMIN_ = "aten::clamp_min_"


@case(CMIN_)
def clamp_min__f32():
    x = rn(4, 37)
    y = x.clamp_min_(0.0)
    return [y, x, alias(y, x)]


@case(CMIN_)
def clamp_min__transposed_view():
    base = rn(6, 5)
    y = base.t().clamp_min_(-0.5)
    return [y, base]


@case(CMIN_)
def clamp_min__int():
    x = ri(4, 7)
    return [x.clamp_min_(2), x]


@case(CMIN_)
def clamp_min__nan_inf():
    x = special(5, 9)
    return [torch.clamp_min_(x, 0.0), x]


@case(CMIN_)
def clamp_min__channels_last_bf16():
    x = cl(rn(2, 3, 4, 5, dtype=bf16))
    return [x.clamp_min_(0.1), x]


add_case("clamp_min__err_int_self_float_min", CMIN_, lambda: ri(3).clamp_min_(0.5))

# ---------------------------------------------------------------------------------------------
# aten::add.Tensor

ADD = "aten::add.Tensor"
add_case("add_contiguous", ADD, lambda: rn(4, 37) + rn(4, 37))
add_case("add_transposed_and_contiguous", ADD, lambda: rn(5, 4).t() + rn(4, 5))
add_case("add_both_transposed", ADD, lambda: torch.add(rn(5, 4).t(), rn(5, 4).t()))
add_case("add_sliced_offset", ADD, lambda: rn(8, 9)[1::2, 2:] + rn(4, 7))
add_case("add_channels_last_both", ADD, lambda: cl(rn(2, 3, 4, 5)) + cl(rn(2, 3, 4, 5)))
add_case("add_channels_last_and_contiguous", ADD, lambda: cl(rn(2, 3, 4, 5)) + rn(2, 3, 4, 5))
add_case("add_contiguous_and_channels_last", ADD, lambda: rn(2, 3, 4, 5) + cl(rn(2, 3, 4, 5)))
add_case("add_channels_last_bias", ADD, lambda: cl(rn(2, 3, 4, 5)) + rn(3, 1, 1))
add_case("add_broadcast_col_row", ADD, lambda: rn(3, 1) + rn(1, 4))
add_case("add_broadcast_bias", ADD, lambda: rn(2, 5, 8) + rn(8))
add_case("add_expand_stride0", ADD, lambda: rn(1, 6).expand(4, 6) + rn(4, 1).expand(4, 6))
add_case("add_zero_size", ADD, lambda: rn(0, 3) + rn(0, 3))
add_case("add_zero_size_broadcast", ADD, lambda: rn(0, 3) + rn(1, 3))
add_case("add_0dim_and_tensor", ADD, lambda: torch.tensor(1.5) + rn(3, 4))
add_case("add_0dim_and_0dim", ADD, lambda: torch.tensor(1.5) + torch.tensor(-0.25))
add_case("add_python_float", ADD, lambda: rn(3, 4) + 2.5)
add_case("add_python_int", ADD, lambda: rn(3, 4) + 2)
add_case("add_python_bool", ADD, lambda: rn(3, 4) + True)
add_case("add_python_complex", ADD, lambda: rn(3, 4) + 1j)
add_case("add_radd_python_float", ADD, lambda: 0.1 + rn(3, 4))
add_case("add_int_tensor_python_float", ADD, lambda: ri(3, 4) + 0.5)
add_case("add_int_tensor_python_int", ADD, lambda: ri(3, 4) + 7)
add_case("add_f16_python_float_stays_f16", ADD, lambda: rn(3, 4, dtype=f16) + 1e-3)
add_case("add_alpha", ADD, lambda: torch.add(rn(3, 4), rn(3, 4), alpha=2))
add_case("add_alpha_float", ADD, lambda: torch.add(rn(3, 4), rn(3, 4), alpha=-0.5))
add_case("add_alpha_int_tensors", ADD, lambda: torch.add(ri(3, 4), ri(3, 4), alpha=3))
add_case("add_f32_f64", ADD, lambda: rn(3, 4) + rn(3, 4, dtype=f64))
add_case("add_f16_f32", ADD, lambda: rn(3, 4, dtype=f16) + rn(3, 4))
add_case("add_bf16_f16", ADD, lambda: rn(3, 4, dtype=bf16) + rn(3, 4, dtype=f16))
add_case("add_bf16_bf16", ADD, lambda: rn(4, 37, dtype=bf16) + rn(4, 37, dtype=bf16))
add_case("add_f16_f16", ADD, lambda: rn(4, 37, dtype=f16) + rn(4, 37, dtype=f16))
add_case("add_int_float", ADD, lambda: ri(3, 4) + rn(3, 4))
add_case("add_int32_int64", ADD, lambda: ri(3, 4, dtype=i32) + ri(3, 4))
add_case("add_uint8_overflow", ADD,
         lambda: ri(3, 4, lo=100, hi=255, dtype=u8) + ri(3, 4, lo=100, hi=255, dtype=u8))
add_case("add_int64_large", ADD,
         lambda: torch.tensor([2**62, -2**62, 2**63 - 1]) + torch.tensor([2**62, -2**62, 1]))
add_case("add_bool_bool", ADD, lambda: rb(3, 4) + rb(3, 4))
add_case("add_bool_int", ADD, lambda: rb(3, 4) + ri(3, 4))
add_case("add_f32_tensor_0dim_f64", ADD, lambda: rn(3, 4) + torch.tensor(0.5, dtype=f64))
add_case("add_int_tensor_0dim_float", ADD, lambda: ri(3, 4) + torch.tensor(0.5))
add_case("add_nan_inf", ADD, lambda: special(6, 11) + special(6, 11))
add_case("add_complex_float", ADD, lambda: rn(3, dtype=c64) + rn(3))
add_case("add_9d_tensor", ADD, lambda: rn(*([2] * 9)) + rn(*([2] * 9)))
add_case("add_12d_tensor", ADD, lambda: rn(*([1] * 10), 2, 3) + rn(2, 3))
add_case("add_err_shape_mismatch", ADD, lambda: rn(2, 3) + rn(4, 5))
add_case("add_err_float_alpha_int_tensors", ADD, lambda: torch.add(ri(3), ri(3), alpha=0.5))
# checked before dispatch (Python binding): compared, not counted
add_case("add_err_bool_sub", None, lambda: rb(2) - rb(2))

# ---------------------------------------------------------------------------------------------
# aten::add_.Tensor


ADD_ = "aten::add_.Tensor"


@case(ADD_)
def add__contiguous():
    x, y = rn(4, 37), rn(4, 37)
    r = x.add_(y)
    return [r, x, alias(r, x)]


@case(ADD_)
def add__broadcast_other():
    x = rn(3, 4)
    return [x.add_(rn(4)), x]


@case(ADD_)
def add__transposed_self():
    base = rn(5, 4)
    v = base.t()
    r = v.add_(rn(4, 5))
    return [r, base, alias(r, v)]


@case(ADD_)
def add__channels_last_self():
    x = cl(rn(2, 3, 4, 5))
    r = x.add_(rn(2, 3, 4, 5))
    return [r, alias(r, x)]


@case(ADD_)
def add__alpha():
    x = rn(3, 4)
    return [x.add_(rn(3, 4), alpha=-1.5), x]


@case(ADD_)
def add__python_scalar():
    x = rn(3, 4)
    return [x.add_(1.5), x]


@case(ADD_)
def add__iadd_operator():
    x = rn(3, 4)
    x += rn(3, 4)
    return [x]


@case(ADD_)
def add__f32_self_f64_other():
    x = rn(3, 4)
    return [x.add_(rn(3, 4, dtype=f64)), x]


@case(ADD_)
def add__bf16_self_f32_other():
    x = rn(3, 4, dtype=bf16)
    return [x.add_(rn(3, 4)), x]


@case(ADD_)
def add__int_self():
    x = ri(3, 4)
    return [x.add_(ri(3, 4), alpha=2), x]


@case(ADD_)
def add__nan_inf():
    x = special(5, 9)
    return [x.add_(special(5, 9)), x]


@case(ADD_)
def add__zero_size():
    x = rn(0, 4)
    return [x.add_(rn(4))]


@case(ADD_)
def add__0dim():
    x = torch.tensor(2.0)
    return [x.add_(torch.tensor(0.5)), x]


@case(ADD_)
def add__expanded_other():
    x = rn(4, 6)
    return [x.add_(rn(1, 6).expand(4, 6)), x]


add_case("add__err_self_needs_broadcast", ADD_, lambda: rn(3, 1).add_(rn(3, 4)))
add_case("add__err_int_self_float_other", ADD_, lambda: ri(3).add_(rn(3)))
add_case("add__err_partial_overlap", ADD_, lambda: (lambda a: a[1:].add_(a[:-1]))(rn(5)))

# ---------------------------------------------------------------------------------------------
# aten::add.out

ADD_OUT = "aten::add.out"


def _binary_out(fn, a, b, out, **kw):
    r = fn(a, b, out=out, **kw)
    return [r, out, alias(r, out)]


add_case("add_out_right_size", ADD_OUT, lambda: _binary_out(torch.add, rn(3, 4), rn(3, 4), torch.empty(3, 4)))
add_case("add_out_wrong_size_resized", ADD_OUT,
         lambda: _binary_out(torch.add, rn(3, 4), rn(3, 4), torch.zeros(5)))
add_case("add_out_empty_resized", ADD_OUT,
         lambda: _binary_out(torch.add, rn(3, 4), rn(3, 4), torch.empty(0)))
add_case("add_out_transposed_out", ADD_OUT,
         lambda: _binary_out(torch.add, rn(3, 4), rn(3, 4), torch.zeros(4, 3).t()))
add_case("add_out_f64_out_f32_inputs", ADD_OUT,
         lambda: _binary_out(torch.add, rn(3, 4), rn(3, 4), torch.zeros(3, 4, dtype=f64)))
add_case("add_out_broadcast_alpha", ADD_OUT,
         lambda: _binary_out(torch.add, rn(3, 1), rn(1, 4), torch.zeros(3, 4), alpha=3))
add_case("add_out_channels_last_inputs", ADD_OUT,
         lambda: _binary_out(torch.add, cl(rn(2, 3, 4, 5)), cl(rn(2, 3, 4, 5)), torch.empty(0)))
add_case("add_out_mixed_dtypes", ADD_OUT,
         lambda: _binary_out(torch.add, rn(3, 4, dtype=f16), rn(3, 4), torch.zeros(3, 4)))


@case(ADD_OUT)
def add_out_aliasing_input():
    a, b = rn(3, 4), rn(3, 4)
    r = torch.add(a, b, out=a)
    return [r, a, alias(r, a)]


add_case("add_out_err_int_out_float_inputs", ADD_OUT,
         lambda: torch.add(rn(3), rn(3), out=torch.zeros(3, dtype=i64)))
add_case("add_out_err_overlapping_out", ADD_OUT,
         lambda: torch.add(rn(3), rn(3), out=torch.zeros(1).expand(3)))
add_case("add_out_err_shape_mismatch", ADD_OUT,
         lambda: torch.add(rn(2, 3), rn(3, 2), out=torch.zeros(2, 3)))

# ---------------------------------------------------------------------------------------------
# aten::mul.Tensor, aten::mul_.Tensor, aten::mul.out

MUL = "aten::mul.Tensor"
add_case("mul_contiguous", MUL, lambda: rn(4, 37) * rn(4, 37))
add_case("mul_transposed", MUL, lambda: rn(5, 4).t() * rn(4, 5))
add_case("mul_channels_last", MUL, lambda: cl(rn(2, 3, 4, 5)) * rn(2, 3, 4, 5))
add_case("mul_broadcast", MUL, lambda: rn(3, 1, 5) * rn(4, 1))
add_case("mul_expand_stride0", MUL, lambda: rn(1, 6).expand(4, 6) * rn(4, 6))
add_case("mul_zero_size", MUL, lambda: rn(0, 3) * rn(3))
add_case("mul_0dim", MUL, lambda: torch.tensor(3.0) * rn(2, 2))
add_case("mul_python_float", MUL, lambda: rn(3, 4) * 0.125)
add_case("mul_python_int_on_int", MUL, lambda: ri(3, 4) * 3)
add_case("mul_python_complex", MUL, lambda: rn(3) * 1j)
add_case("mul_int_float", MUL, lambda: ri(3, 4) * rn(3, 4))
add_case("mul_int32_overflow", MUL,
         lambda: torch.tensor([2**30, -2**30, 123456789], dtype=i32) * torch.tensor([4, 4, 1000], dtype=i32))
add_case("mul_bool_bool", MUL, lambda: rb(3, 4) * rb(3, 4))
add_case("mul_bool_float", MUL, lambda: rb(3, 4) * rn(3, 4))
add_case("mul_f16_f32", MUL, lambda: rn(3, 4, dtype=f16) * rn(3, 4))
add_case("mul_bf16", MUL, lambda: rn(4, 37, dtype=bf16) * rn(4, 37, dtype=bf16))
add_case("mul_f16", MUL, lambda: rn(4, 37, dtype=f16) * rn(37, dtype=f16))
add_case("mul_f64", MUL, lambda: rn(4, 37, dtype=f64) * rn(4, 37))
add_case("mul_nan_inf_zero", MUL, lambda: special(6, 11) * special(6, 11))
add_case("mul_complex", MUL, lambda: rn(3, dtype=c64) * rn(3, dtype=c64))
add_case("mul_complex_conj", MUL, lambda: rn(3, dtype=c64).conj() * rn(3, dtype=c64))
add_case("mul_err_shape_mismatch", MUL, lambda: rn(2, 3) * rn(3, 2))

MUL_ = "aten::mul_.Tensor"


@case(MUL_)
def mul__contiguous():
    x = rn(4, 37)
    r = x.mul_(rn(4, 37))
    return [r, x, alias(r, x)]


@case(MUL_)
def mul__broadcast_other():
    x = rn(3, 4)
    return [x.mul_(rn(4)), x]


@case(MUL_)
def mul__python_scalar():
    x = rn(3, 4)
    return [x.mul_(0.5), x]


@case(MUL_)
def mul__imul_operator():
    x = rn(3, 4)
    x *= rn(3, 4)
    return [x]


@case(MUL_)
def mul__transposed_view():
    base = rn(5, 4)
    r = base.t().mul_(rn(4, 5))
    return [r, base]


@case(MUL_)
def mul__int():
    x = ri(3, 4)
    return [x.mul_(ri(3, 4)), x]


@case(MUL_)
def mul__bf16_self_f32_other():
    x = rn(3, 4, dtype=bf16)
    return [x.mul_(rn(3, 4)), x]


@case(MUL_)
def mul__nan_inf():
    x = special(5, 9)
    return [x.mul_(special(5, 9)), x]


@case(MUL_)
def mul__channels_last():
    x = cl(rn(2, 3, 4, 5))
    return [x.mul_(rn(3, 1, 1)), x]


add_case("mul__err_self_needs_broadcast", MUL_, lambda: rn(1, 4).mul_(rn(3, 4)))

MUL_OUT = "aten::mul.out"
add_case("mul_out_right_size", MUL_OUT, lambda: _binary_out(torch.mul, rn(3, 4), rn(3, 4), torch.empty(3, 4)))
add_case("mul_out_wrong_size_resized", MUL_OUT,
         lambda: _binary_out(torch.mul, rn(3, 4), rn(3, 4), torch.zeros(2, 2)))
add_case("mul_out_empty_resized", MUL_OUT,
         lambda: _binary_out(torch.mul, rn(2, 3), rn(3), torch.empty(0)))
add_case("mul_out_transposed_out", MUL_OUT,
         lambda: _binary_out(torch.mul, rn(3, 4), rn(3, 4), torch.zeros(4, 3).t()))
add_case("mul_out_int_inputs", MUL_OUT,
         lambda: _binary_out(torch.mul, ri(3, 4), ri(3, 4), torch.zeros(3, 4, dtype=i64)))
add_case("mul_out_err_int_out_float_inputs", MUL_OUT,
         lambda: torch.mul(rn(3), rn(3), out=torch.zeros(3, dtype=i32)))

# ---------------------------------------------------------------------------------------------
# aten::copy_

COPY = "aten::copy_"
TO_COPY = "aten::_to_copy"  # .to() reaches copy_ inside _to_copy: nested, passed through
add_case("copy_to_f64", TO_COPY, lambda: rn(4, 37).to(f64))
add_case("copy_float_from_f64", TO_COPY, lambda: rn(4, 37, dtype=f64).float())
add_case("copy_half", TO_COPY, lambda: rn(4, 37).half())
add_case("copy_half_overflow", TO_COPY, lambda: special(6, 11).half())
add_case("copy_bfloat16", TO_COPY, lambda: special(6, 11).bfloat16())
add_case("copy_bf16_to_f32", TO_COPY, lambda: rn(4, 37, dtype=bf16).float())
add_case("copy_f32_to_int32", TO_COPY, lambda: (rn(4, 37) * 100).to(i32))
add_case("copy_int_to_float", TO_COPY, lambda: ri(4, 37).float())
add_case("copy_bool_to_float", TO_COPY, lambda: rb(4, 9).float())
add_case("copy_float_to_bool", TO_COPY, lambda: special(4, 11).bool())
add_case("copy_int64_to_uint8_wrap", TO_COPY, lambda: torch.arange(-300, 300, 7).to(u8))
add_case("copy_contiguous_of_transposed", COPY, lambda: rn(7, 5).t().contiguous())
add_case("copy_contiguous_of_sliced", COPY, lambda: rn(8, 9)[1::3, ::2].contiguous())
add_case("copy_to_channels_last", COPY, lambda: rn(2, 3, 4, 5).contiguous(memory_format=CL))
add_case("copy_from_channels_last", COPY, lambda: cl(rn(2, 3, 4, 5)).contiguous())
add_case("copy_transposed_to_half", TO_COPY, lambda: rn(7, 5).t().half())
add_case("copy_clone", COPY, lambda: rn(3, 4).t().clone())

# aten::_to_copy: .to(dtype) as one functional call (its copy_ runs inside it)
add_case("to_copy_bf16_to_f32", TO_COPY, lambda: rn(4, 37, dtype=bf16).to(f32))
add_case("to_copy_f32_to_bf16_special", TO_COPY, lambda: special(6, 11).to(bf16))
add_case("to_copy_transposed_keeps_strides", TO_COPY, lambda: rn(7, 5).t().half())
add_case("to_copy_channels_last_keeps_format", TO_COPY, lambda: cl(rn(2, 3, 4, 5)).to(f64))
add_case("to_copy_memory_format_given", TO_COPY,
         lambda: rn(7, 5).t().to(f16, memory_format=torch.contiguous_format))
add_case("to_copy_same_dtype_copy", TO_COPY, lambda: rn(3, 4).to(f32, copy=True))
add_case("to_copy_device_given", TO_COPY, lambda: rn(3, 4).to("cpu", f64))
add_case("to_copy_int_to_bool", TO_COPY, lambda: ri(4, 9).bool())


@case(COPY)
def copy_method_broadcast_src():
    dst = torch.zeros(4, 6)
    r = dst.copy_(rn(6))
    return [r, dst, alias(r, dst)]


@case(COPY)
def copy_method_noncontiguous_dst():
    base = torch.zeros(6, 5)
    r = base.t().copy_(rn(5, 6))
    return [r, base]


@case(COPY)
def copy_method_cross_dtype():
    dst = torch.zeros(3, 4, dtype=f16)
    return [dst.copy_(rn(3, 4, dtype=f64)), dst]


@case(COPY)
def copy_method_zero_size():
    dst = torch.zeros(0, 4)
    return [dst.copy_(rn(0, 4))]


@case(COPY)
def copy_method_0dim():
    dst = torch.tensor(0.0)
    return [dst.copy_(torch.tensor(7, dtype=i64)), dst]


@case(COPY)
def copy_method_complex_to_real_warns():
    dst = torch.zeros(3)
    return [dst.copy_(rn(3, dtype=c64)), dst]


add_case("copy_err_shape_mismatch", COPY, lambda: torch.zeros(3).copy_(rn(4)))

# ---------------------------------------------------------------------------------------------
# aten::pow.Tensor_Scalar

POW = "aten::pow.Tensor_Scalar"
for e in (2, 0.5, -1, 3, 0, 1, -0.5, 2.5, -2, 2.0, 3.0):
    add_case(f"pow_f32_exp_{e}".replace(".", "p").replace("-", "m"), POW,
             lambda e=e: rn(4, 37).pow(e))
for e in (2, 0.5, -1, 3):
    tag = str(e).replace(".", "p").replace("-", "m")
    add_case(f"pow_nan_inf_exp_{tag}", POW, lambda e=e: torch.pow(special(6, 11), e))
    add_case(f"pow_bf16_exp_{tag}", POW, lambda e=e: rn(4, 37, dtype=bf16) ** e)
    add_case(f"pow_f16_exp_{tag}", POW, lambda e=e: rn(4, 37, dtype=f16).pow(e))
    add_case(f"pow_f64_exp_{tag}", POW, lambda e=e: rn(4, 37, dtype=f64).pow(e))
    add_case(f"pow_transposed_exp_{tag}", POW, lambda e=e: rn(9, 5).t().pow(e))
add_case("pow_operator_square", POW, lambda: rn(3, 4) ** 2)
add_case("pow_channels_last", POW, lambda: cl(rn(2, 3, 4, 5)).pow(2))
add_case("pow_expand", POW, lambda: rn(1, 6).expand(4, 6).pow(3))
add_case("pow_zero_size", POW, lambda: rn(0, 3).pow(2))
add_case("pow_0dim", POW, lambda: torch.tensor(-1.5).pow(3))
add_case("pow_int_exp_2", POW, lambda: ri(4, 7).pow(2))
add_case("pow_int_exp_3", POW, lambda: ri(4, 7, dtype=i32).pow(3))
add_case("pow_int_exp_0", POW, lambda: ri(4, 7).pow(0))
add_case("pow_int_exp_float", POW, lambda: ri(4, 7).pow(0.5))
add_case("pow_bool_exp_2", POW, lambda: rb(3, 4).pow(2))
add_case("pow_err_int_negative_exp", POW, lambda: ri(4).pow(-1))

# ---------------------------------------------------------------------------------------------
# aten::mean.dim

MEAN = "aten::mean.dim"
add_case("mean_dim0", MEAN, lambda: rn(4, 5, 6).mean(0))
add_case("mean_dim_list", MEAN, lambda: rn(4, 5, 6).mean([1, 2]))
add_case("mean_dim_list_keepdim", MEAN, lambda: rn(4, 5, 6).mean([0, 2], keepdim=True))
add_case("mean_dim_last_keepdim", MEAN, lambda: rn(4, 5, 6).mean(-1, keepdim=True))
add_case("mean_dim_negative_list", MEAN, lambda: rn(4, 5, 6).mean((-1, -3)))
add_case("mean_all", "aten::mean", lambda: rn(4, 5, 6).mean())
add_case("mean_dtype_f64", MEAN, lambda: rn(4, 5, 6).mean([1], dtype=f64))
add_case("mean_dtype_f32_from_bf16", MEAN, lambda: rn(4, 50, dtype=bf16).mean(-1, dtype=f32))
add_case("mean_int_with_dtype", MEAN, lambda: ri(4, 5).mean(0, dtype=f32))
add_case("mean_transposed", MEAN, lambda: rn(7, 5).t().mean(1))
add_case("mean_channels_last_spatial", MEAN, lambda: cl(rn(2, 3, 4, 5)).mean((2, 3), keepdim=True))
add_case("mean_expand", MEAN, lambda: rn(1, 6).expand(4, 6).mean(0))
add_case("mean_f16", MEAN, lambda: rn(4, 300, dtype=f16).mean(-1))
add_case("mean_bf16", MEAN, lambda: rn(4, 300, dtype=bf16).mean(-1, keepdim=True))
add_case("mean_f64", MEAN, lambda: rn(4, 300, dtype=f64).mean(0))
add_case("mean_nan_inf", MEAN, lambda: special(6, 11).mean(-1))
add_case("mean_zero_size_reduced", MEAN, lambda: rn(0, 3).mean(0))
add_case("mean_zero_size_kept", MEAN, lambda: rn(0, 3).mean(1))
add_case("mean_0dim", "aten::mean", lambda: torch.tensor(4.0).mean())
add_case("mean_long_row", MEAN, lambda: rn(3, 4097).mean(-1))
add_case("mean_rms_norm_like", MEAN, lambda: rn(2, 8, 64).pow(2).mean(-1, keepdim=True))
add_case("mean_err_int_no_dtype", MEAN, lambda: ri(4, 5).mean(0))
add_case("mean_err_dim_out_of_range", MEAN, lambda: rn(2, 3).mean(4))
add_case("mean_err_dim_repeated", MEAN, lambda: rn(2, 3).mean([0, 0]))

# ---------------------------------------------------------------------------------------------
# aten::cat

CAT = "aten::cat"
add_case("cat_dim0_several", CAT, lambda: torch.cat([rn(2, 3), rn(1, 3), rn(4, 3)]))
add_case("cat_dim1", CAT, lambda: torch.cat([rn(2, 3), rn(2, 1), rn(2, 5)], dim=1))
add_case("cat_dim_last_3d", CAT, lambda: torch.cat([rn(2, 3, 4), rn(2, 3, 2)], dim=-1))
add_case("cat_dim_middle_3d", CAT, lambda: torch.cat([rn(2, 3, 4), rn(2, 5, 4)], dim=1))
add_case("cat_with_empty_rows", CAT, lambda: torch.cat([rn(2, 3), rn(0, 3), rn(1, 3)]))
add_case("cat_with_legacy_empty", CAT, lambda: torch.cat([rn(2, 3), torch.empty(0), rn(1, 3)]))
add_case("cat_all_empty", CAT, lambda: torch.cat([rn(0, 3), rn(0, 3)]))
add_case("cat_empty_along_dim1", CAT, lambda: torch.cat([rn(2, 0), rn(2, 3)], 1))
add_case("cat_mixed_f32_f64", CAT, lambda: torch.cat([rn(2, 3), rn(2, 3, dtype=f64)]))
add_case("cat_mixed_int_float", CAT, lambda: torch.cat([ri(2, 3), rn(1, 3)]))
add_case("cat_mixed_bool_int", CAT, lambda: torch.cat([rb(2, 3), ri(2, 3, dtype=i32)]))
add_case("cat_mixed_f16_bf16", CAT, lambda: torch.cat([rn(2, 3, dtype=f16), rn(2, 3, dtype=bf16)], 1))
add_case("cat_bf16", CAT, lambda: torch.cat([rn(2, 3, dtype=bf16), rn(2, 3, dtype=bf16)], 1))
add_case("cat_transposed_inputs", CAT, lambda: torch.cat([rn(3, 2).t(), rn(3, 4).t()], 0))
add_case("cat_transposed_inputs_dim1", CAT, lambda: torch.cat([rn(3, 2).t(), rn(3, 2).t()], 1))
add_case("cat_channels_last_dim0", CAT, lambda: torch.cat([cl(rn(1, 3, 4, 5)), cl(rn(2, 3, 4, 5))]))
add_case("cat_channels_last_dim1", CAT, lambda: torch.cat([cl(rn(2, 3, 4, 5)), cl(rn(2, 2, 4, 5))], 1))
add_case("cat_mixed_memory_formats", CAT, lambda: torch.cat([cl(rn(2, 3, 4, 5)), rn(2, 3, 4, 5)], 1))
add_case("cat_expand_inputs", CAT, lambda: torch.cat([rn(1, 4).expand(3, 4), rn(2, 4)]))
add_case("cat_single", CAT, lambda: torch.cat([rn(2, 3)]))
add_case("cat_int64", CAT, lambda: torch.cat([ri(5), ri(3)]))
add_case("cat_nan_inf", CAT, lambda: torch.cat([special(2, 11), special(3, 11)]))
add_case("cat_rotary_like", CAT,
         lambda: (lambda x: torch.cat((-x[..., 4:], x[..., :4]), dim=-1))(rn(2, 4, 6, 8)))
add_case("cat_many_tensors", CAT, lambda: torch.cat([rn(2) for _ in range(40)]))
# enough tensors that the signature no longer fits its buffer (recorded truncated)
add_case("cat_97_tensors", CAT, lambda: torch.cat([rn(2) for _ in range(97)]))
add_case("cat_err_mismatched_shapes", CAT, lambda: torch.cat([rn(2, 3), rn(3, 4)]))
add_case("cat_err_dim_out_of_range", CAT, lambda: torch.cat([rn(2, 3), rn(2, 3)], dim=2))
add_case("cat_err_0dim", CAT, lambda: torch.cat([torch.tensor(1.0), torch.tensor(2.0)]))
add_case("cat_err_ndim_mismatch", CAT, lambda: torch.cat([rn(2, 3), rn(2, 3, 1)]))
# checked by the Python binding: compared, not counted
add_case("cat_err_empty_list", None, lambda: torch.cat([]))

# ---------------------------------------------------------------------------------------------
# aten::max_pool2d_with_indices

MP = "aten::max_pool2d_with_indices"
add_case("max_pool2d_k2", MP, lambda: F.max_pool2d(rn(2, 3, 8, 8), 2))
add_case("max_pool2d_return_indices", MP, lambda: list(F.max_pool2d(rn(2, 3, 8, 8), 2, return_indices=True)))
add_case("max_pool2d_k3_s1_p1", MP,
         lambda: list(F.max_pool2d(rn(2, 3, 7, 7), 3, stride=1, padding=1, return_indices=True)))
add_case("max_pool2d_k3_s2_p1_resnet_stem", MP,
         lambda: list(F.max_pool2d(rn(1, 4, 15, 15), 3, stride=2, padding=1, return_indices=True)))
add_case("max_pool2d_dilation", MP,
         lambda: list(F.max_pool2d(rn(1, 2, 9, 9), 2, dilation=2, return_indices=True)))
add_case("max_pool2d_ceil_mode", MP,
         lambda: list(F.max_pool2d(rn(1, 2, 7, 7), 2, ceil_mode=True, return_indices=True)))
add_case("max_pool2d_rect_kernel", MP,
         lambda: list(F.max_pool2d(rn(2, 2, 6, 9), (2, 3), stride=(1, 2), return_indices=True)))
add_case("max_pool2d_channels_last", MP,
         lambda: list(F.max_pool2d(cl(rn(2, 3, 8, 8)), 2, return_indices=True)))
add_case("max_pool2d_transposed_hw", MP,
         lambda: list(F.max_pool2d(rn(2, 3, 8, 6).transpose(2, 3), 2, return_indices=True)))
add_case("max_pool2d_3d_input", MP, lambda: list(F.max_pool2d(rn(3, 6, 6), 2, return_indices=True)))
add_case("max_pool2d_bf16", MP, lambda: list(F.max_pool2d(rn(2, 3, 8, 8, dtype=bf16), 2, return_indices=True)))
add_case("max_pool2d_f16", MP, lambda: F.max_pool2d(rn(2, 3, 8, 8, dtype=f16), 2))
add_case("max_pool2d_f64", MP, lambda: F.max_pool2d(rn(2, 3, 8, 8, dtype=f64), 3, stride=2))
add_case("max_pool2d_int64", MP, lambda: list(F.max_pool2d(ri(1, 2, 6, 6), 2, return_indices=True)))
add_case("max_pool2d_nan_inf", MP, lambda: list(F.max_pool2d(special(1, 2, 6, 11), 2, return_indices=True)))
add_case("max_pool2d_ties", MP, lambda: list(F.max_pool2d(torch.ones(1, 1, 4, 4), 2, return_indices=True)))
add_case("max_pool2d_zero_batch", MP, lambda: F.max_pool2d(rn(0, 2, 4, 4), 2))
add_case("max_pool2d_module", MP, lambda: nn.MaxPool2d(3, 2, 1)(rn(1, 3, 9, 9)))
add_case("max_pool2d_err_output_too_small", MP, lambda: F.max_pool2d(rn(2, 3, 4, 4), 8))
add_case("max_pool2d_err_pad_too_large", MP, lambda: F.max_pool2d(rn(2, 3, 4, 4), 2, padding=2))

# ---------------------------------------------------------------------------------------------
# aten::linalg_solve_triangular

ST = "aten::linalg_solve_triangular"


def tri(*shape, upper=False, dtype=f32):
    """A well-conditioned triangular matrix (entries of the other triangle left random: the
    solve must not read them)."""
    n = shape[-1]
    a = rn(*shape, dtype=dtype) / n
    a.diagonal(dim1=-2, dim2=-1).add_(2.0)
    return a


def solve(a, b, **kw):
    return torch.linalg.solve_triangular(a, b, **kw)


add_case("solve_triangular_lower_unit", ST,
         lambda: solve(tri(2, 3, 16, 16), rn(2, 3, 16, 8), upper=False, unitriangular=True))
add_case("solve_triangular_upper", ST, lambda: solve(tri(4, 9, 9), rn(4, 9, 5), upper=True))
add_case("solve_triangular_broadcast", ST, lambda: solve(tri(7, 7), rn(3, 7, 2), upper=False))
add_case("solve_triangular_right", ST, lambda: solve(tri(2, 6, 6), rn(2, 4, 6), upper=True, left=False))
add_case("solve_triangular_transposed_b", ST,
         lambda: solve(tri(2, 8, 8), rn(2, 5, 8).transpose(1, 2), upper=False))
add_case("solve_triangular_f64", ST, lambda: solve(tri(5, 5, dtype=f64), rn(5, 3, dtype=f64), upper=True))
add_case("solve_triangular_singular_gives_inf", ST,
         lambda: solve(torch.zeros(3, 3), rn(3, 2), upper=False))
add_case("solve_triangular_err_not_square", ST, lambda: solve(rn(4, 5), rn(4, 2), upper=False))
add_case("solve_triangular_err_int", None, lambda: solve(ri(3, 3), ri(3, 2), upper=False))


# ---------------------------------------------------------------------------------------------
# generic reductions and gathers (forge/templates/reduce_ops.c, gather_ops.c)

SUMD, SUM = "aten::sum.dim_IntList", "aten::sum"
add_case("sum_dim_last", SUMD, lambda: rn(4, 5, 6).sum(-1))
add_case("sum_dim_list_keepdim", SUMD, lambda: rn(4, 5, 6).sum([0, 2], keepdim=True))
add_case("sum_dim_negative_list", SUMD, lambda: rn(4, 5, 6).sum((-1, -3)))
add_case("sum_dim_empty_list_all", SUMD, lambda: torch.sum(rn(4, 5), []))
add_case("sum_dtype_f64", SUMD, lambda: rn(4, 5, 6).sum(1, dtype=f64))
add_case("sum_int_to_i64", SUMD, lambda: ri(4, 9, dtype=i32).sum(1))
add_case("sum_int_dtype_i32", SUMD, lambda: ri(4, 9, dtype=i8).sum(0, dtype=i32))
add_case("sum_bool", SUMD, lambda: rb(5, 7).sum(0))
add_case("sum_transposed", SUMD, lambda: rn(7, 5).t().sum(1))
add_case("sum_channels_last_spatial", SUMD, lambda: cl(rn(2, 3, 4, 5)).sum((2, 3), keepdim=True))
add_case("sum_expand", SUMD, lambda: rn(1, 6).expand(4, 6).sum(0))
add_case("sum_f16", SUMD, lambda: rn(4, 300, dtype=f16).sum(-1))
add_case("sum_bf16_dtype_f32", SUMD, lambda: rn(4, 300, dtype=bf16).sum(-1, dtype=f32))
add_case("sum_nan_inf", SUMD, lambda: special(6, 11).sum(-1))
add_case("sum_zero_size_reduced", SUMD, lambda: rn(0, 3).sum(0))
add_case("sum_zero_size_kept", SUMD, lambda: rn(0, 3).sum(1))
add_case("sum_err_dim_out_of_range", SUMD, lambda: rn(2, 3).sum(4))
add_case("sum_err_repeated_dim", SUMD, lambda: rn(2, 3).sum([1, -1]))
add_case("sum_full", SUM, lambda: rn(4, 5, 6).sum())
add_case("sum_full_int", SUM, lambda: ri(4, 5, dtype=torch.int16).sum())
add_case("sum_full_dtype", SUM, lambda: rn(4, 5).sum(dtype=f64))
add_case("sum_full_0dim", SUM, lambda: torch.tensor(3.5).sum())
add_case("mean_full", "aten::mean", lambda: rn(4, 5, 6).mean())
add_case("mean_full_err_int", "aten::mean", lambda: ri(4, 5).mean())
add_case("amax_dim", "aten::amax", lambda: rn(4, 5, 6).amax(1))
add_case("amax_all_empty_list", "aten::amax", lambda: rn(4, 5).amax([]))
add_case("amax_nan", "aten::amax", lambda: special(6, 11).amax(-1, keepdim=True))
add_case("amax_int", "aten::amax", lambda: ri(6, 7, dtype=i32).amax(0))
add_case("amax_bool", "aten::amax", lambda: rb(6, 7).amax(1))
add_case("amax_err_empty", "aten::amax", lambda: rn(0, 3).amax(0))
add_case("amin_dims", "aten::amin", lambda: rn(4, 5, 6).amin((0, -1)))
add_case("amin_nan", "aten::amin", lambda: special(6, 11).amin(0))
add_case("max_dim", "aten::max.dim", lambda: list(rn(4, 5, 6).max(1)))
add_case("max_dim_keepdim_neg", "aten::max.dim", lambda: list(rn(4, 5, 6).max(-1, keepdim=True)))
add_case("max_dim_ties", "aten::max.dim", lambda: list(ri(5, 9, lo=0, hi=3).float().max(1)))
add_case("max_dim_nan", "aten::max.dim", lambda: list(special(6, 11).max(1)))
add_case("max_dim_int", "aten::max.dim", lambda: list(ri(5, 9, dtype=i32).max(0)))
add_case("min_dim", "aten::min.dim", lambda: list(rn(4, 5, 6).transpose(0, 2).min(0)))
add_case("min_dim_nan", "aten::min.dim", lambda: list(special(6, 11).min(-1)))
add_case("argmax_dim", "aten::argmax", lambda: rn(4, 5, 6).argmax(1))
add_case("argmax_all", "aten::argmax", lambda: rn(4, 5, 6).argmax())
add_case("argmax_all_keepdim", "aten::argmax", lambda: rn(4, 5).argmax(keepdim=True))
add_case("argmax_ties", "aten::argmax", lambda: ri(5, 9, lo=0, hi=2).argmax(1))
add_case("argmax_nan", "aten::argmax", lambda: special(6, 11).argmax(1))
add_case("argmax_transposed_all", "aten::argmax", lambda: rn(5, 7).t().argmax())
add_case("argmax_err_empty", "aten::argmax", lambda: rn(0, 3).argmax())
add_case("argmin_dim", "aten::argmin", lambda: rn(4, 5, 6).argmin(-1))
add_case("prod_dim", "aten::prod.dim_int", lambda: (rn(4, 6) * 0.5 + 1).prod(1))
add_case("prod_dim_int_dtype", "aten::prod.dim_int", lambda: ri(4, 6, lo=-2, hi=3).prod(0, dtype=i32))
add_case("prod_full", "aten::prod", lambda: (rn(3, 4) * 0.2 + 1).prod())
add_case("prod_full_bool", "aten::prod", lambda: rb(3, 4).prod())
add_case("var_dim", "aten::var.correction", lambda: rn(4, 50).var(1))
add_case("var_dims_keepdim_corr0", "aten::var.correction",
         lambda: torch.var(rn(4, 5, 6), (0, 2), correction=0, keepdim=True))
add_case("var_all", "aten::var.correction", lambda: rn(4, 5).var())
add_case("var_corr_too_big", "aten::var.correction", lambda: torch.var(rn(4, 2), 1, correction=3))
add_case("var_nan_inf", "aten::var.correction", lambda: special(6, 11).var(-1))
add_case("std_dim", "aten::std.correction", lambda: rn(4, 50).std(0))
add_case("std_f64_corr2", "aten::std.correction", lambda: torch.std(rn(4, 30, dtype=f64), -1, correction=2))
add_case("var_mean_dim", "aten::var_mean.correction", lambda: list(torch.var_mean(rn(8, 16), 1)))
add_case("var_mean_all", "aten::var_mean.correction", lambda: list(torch.var_mean(rn(8, 16))))
add_case("var_err_int", "aten::var.correction", lambda: ri(4, 5).float().long().var(1))
LVN = "aten::linalg_vector_norm"
for _o in (2, 1, INF, -INF, 0, 3.0, 0.5):
    add_case(f"vector_norm_ord_{_o}", LVN, lambda o=_o: torch.linalg.vector_norm(rn(4, 20), o, dim=1))
add_case("vector_norm_all", LVN, lambda: torch.linalg.vector_norm(rn(4, 5, 6)))
add_case("vector_norm_dims_keepdim", LVN, lambda: torch.linalg.vector_norm(rn(4, 5, 6), dim=(0, 2), keepdim=True))
add_case("vector_norm_dtype_f64", LVN, lambda: torch.linalg.vector_norm(rn(4, 5), dim=-1, dtype=f64))
add_case("vector_norm_nan_inf", LVN, lambda: torch.linalg.vector_norm(special(6, 11), INF, dim=-1))
add_case("vector_norm_f16", LVN, lambda: torch.linalg.vector_norm(rn(4, 64, dtype=f16), dim=-1))
LSE = "aten::logsumexp"
add_case("logsumexp_dim", LSE, lambda: torch.logsumexp(rn(4, 30), 1))
add_case("logsumexp_dims_keepdim", LSE, lambda: torch.logsumexp(rn(4, 5, 6), (0, 2), keepdim=True))
add_case("logsumexp_nan_inf", LSE, lambda: torch.logsumexp(special(6, 11), -1))
add_case("logsumexp_all_neg_inf", LSE, lambda: torch.logsumexp(torch.full((3, 4), -INF), 1))
add_case("logsumexp_int", LSE, lambda: torch.logsumexp(ri(4, 5), 1))
EMB = "aten::embedding"
add_case("embedding_2d_ids", EMB, lambda: F.embedding(ri(3, 4, lo=0, hi=10), rn(10, 8)))
add_case("embedding_i32_ids", EMB, lambda: F.embedding(ri(7, lo=0, hi=10, dtype=i32), rn(10, 8)))
add_case("embedding_bf16", EMB, lambda: F.embedding(ri(2, 5, lo=0, hi=10), rn(10, 16, dtype=bf16)))
add_case("embedding_padding_idx", EMB, lambda: F.embedding(ri(9, lo=0, hi=6), rn(6, 4), padding_idx=0))
add_case("embedding_module", EMB, lambda: nn.Embedding(12, 6)(ri(2, 3, lo=0, hi=12)))
add_case("embedding_err_out_of_range", EMB, lambda: F.embedding(torch.tensor([0, 10]), rn(10, 8)))
add_case("embedding_err_negative", EMB, lambda: F.embedding(torch.tensor([-1]), rn(10, 8)))
IS = "aten::index_select"
add_case("index_select_dim0", IS, lambda: torch.index_select(rn(6, 5), 0, ri(4, lo=0, hi=6)))
add_case("index_select_dim1_i32", IS, lambda: rn(4, 7, 3).index_select(1, ri(9, lo=0, hi=7, dtype=i32)))
add_case("index_select_neg_dim", IS, lambda: rn(4, 7).t().index_select(-1, ri(5, lo=0, hi=4)))
add_case("index_select_0dim_index", IS, lambda: rn(4, 7).index_select(1, torch.tensor(3)))
add_case("index_select_int", IS, lambda: ri(5, 6).index_select(0, ri(3, lo=0, hi=5)))
add_case("index_select_err_out_of_range", IS, lambda: rn(4, 7).index_select(1, torch.tensor([7])))
GA = "aten::gather"
add_case("gather_dim1", GA, lambda: torch.gather(rn(4, 5), 1, ri(4, 3, lo=0, hi=5)))
add_case("gather_dim0_smaller", GA, lambda: torch.gather(rn(6, 5), 0, ri(3, 4, lo=0, hi=6)))
add_case("gather_neg_dim_3d", GA, lambda: rn(3, 4, 5).gather(-1, ri(3, 4, 2, lo=0, hi=5)))
add_case("gather_transposed", GA, lambda: rn(5, 6).t().gather(1, ri(6, 2, lo=0, hi=5)))
add_case("gather_bool", GA, lambda: rb(4, 5).gather(1, ri(4, 5, lo=0, hi=5)))
add_case("gather_err_out_of_range", GA, lambda: torch.gather(rn(4, 5), 1, torch.full((4, 1), 5)))
add_case("gather_err_negative", GA, lambda: torch.gather(rn(4, 5), 1, torch.full((4, 1), -1)))
# end of generic reductions and gathers


if DEVICE.startswith("cuda"):
    # F.rms_norm reaches the fused kernel only on CUDA (on CPU it is CompositeImplicitAutograd)
    RMS = "aten::_fused_rms_norm"
    add_case("rms_norm_affine_bf16", RMS,
             lambda: list(torch.ops.aten._fused_rms_norm(rn(4, 64, dtype=bf16), [64],
                                                         rn(64, dtype=bf16), 1e-6)))
    add_case("rms_norm_functional_f32", RMS, lambda: F.rms_norm(rn(3, 7, 32), (32,), rn(32)))
    add_case("rms_norm_no_weight_2d_shape", RMS, lambda: F.rms_norm(rn(2, 5, 6, 8), (6, 8)))


if DEVICE.startswith("cuda"):
    # depthwise convolution: only a CUDA kernel (what F.conv1d/conv2d with groups == channels
    # reach there when cuDNN does not take them, e.g. Qwen 3.5's causal conv1d in bf16)
    DW = "aten::_conv_depthwise2d"

    def dw(x, w, k, b, s, p, d):
        return torch.ops.aten._conv_depthwise2d(x, w, k, b, s, p, d)

    add_case("conv_depthwise_causal_bf16", DW,
             lambda: dw(rn(2, 16, 1, 40, dtype=bf16), rn(16, 1, 1, 4, dtype=bf16), [1, 4], None,
                        [1, 1], [0, 3], [1, 1]))
    add_case("conv_depthwise_3x3_bias_f32", DW,
             lambda: dw(rn(2, 6, 9, 11), rn(6, 1, 3, 3), [3, 3], rn(6), [2, 2], [1, 1], [1, 1]))
    add_case("conv_depthwise_multiplier_f16", DW,
             lambda: dw(rn(1, 4, 7, 7, dtype=f16), rn(8, 1, 3, 3, dtype=f16), [3, 3], None,
                        [1, 1], [2, 2], [2, 2]))
    add_case("conv_depthwise_channels_last", DW,
             lambda: dw(cl(rn(2, 8, 6, 6)), rn(8, 1, 3, 3), [3, 3], None, [1, 1], [1, 1], [1, 1]))
    add_case("conv_depthwise_functional_conv1d", (DW,),
             lambda: F.conv1d(rn(2, 16, 40, dtype=bf16), rn(16, 1, 4, dtype=bf16), padding=3,
                              groups=16))


# the pointwise engine's ops (tests/python/pointwise_cases.py, a sibling: this folder is on the path)
import pointwise_cases  # noqa: E402

pointwise_cases.register(add_case)


if DEVICE.startswith("cuda"):
    # on CUDA, batch norm reaches cudnn_batch_norm when cuDNN takes the case, else native
    for _name, _c in list(CASES.items()):
        if _c.op == BN:
            CASES[_name] = _c._replace(op=(BN, "aten::cudnn_batch_norm"))


# ---------------------------------------------------------------------------------------------
# running

def _flatten(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        flat = []
        for o in out:
            flat.extend(_flatten(o))
        return flat
    if isinstance(out, (bool, int, float)):
        return [torch.tensor(out)]
    raise TypeError(f"case returned {type(out).__name__}")


def _layout(t: torch.Tensor) -> dict:
    return {"dtype": str(t.dtype), "shape": tuple(t.shape), "stride": tuple(t.stride()),
            "storage_offset": t.storage_offset()}


def case_seed(name: str) -> int:
    return zlib.crc32(name.encode())


def run_case(c: Case):
    """(result, layouts, warnings, stats rows or None) of one case."""
    kf = sys.modules.get("kernel_forge") if not os.environ.get("KFORGE_DISABLE") else None
    torch.manual_seed(case_seed(c.name))
    rows = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if kf is not None:
            kf.reset_stats()
        try:
            outs = _flatten(c.fn())
            error = None
        except Exception as e:  # eager's error, compared across runs
            outs, error = None, ("error", type(e).__name__, str(e))
        if kf is not None:
            rows = [{k: r[k] for k in ("op", "device", "signature", "key", "calls", "served",
                                        "fallback", "intercepted")} for r in kf.stats()]
    warn = [f"{w.category.__name__}: {w.message}" for w in caught]
    if error is not None:
        return error, [], warn, rows
    layouts = [_layout(t) for t in outs]
    result = [t.detach().clone() for t in outs]
    return result, layouts, warn, rows


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    path, filters = argv[1], argv[2:]
    plugin = not os.environ.get("KFORGE_DISABLE")
    if DEVICE != "cpu":
        torch.set_default_device(DEVICE)
    if plugin:
        import kernel_forge as kf  # loads the plugin before any case runs
    results, meta, per_case = {}, {}, {}
    for c in CASES.values():
        if filters and not any(f in c.name for f in filters):
            continue
        result, layouts, warn, rows = run_case(c)
        results[c.name] = result
        meta[c.name] = {"op": c.op, "layouts": layouts, "warnings": warn}
        if rows is not None:
            per_case[c.name] = rows
    results[META_KEY] = meta
    if plugin:
        results[STATS_KEY] = {
            "per_case": per_case,
            "intercepted_ops": kf.intercepted_ops(),
            "ops_info": kf.ops_info(),
            "enabled": kf.enabled(),
            "plugin_loaded": True,
        }
    else:
        # the baseline must never have loaded the plugin
        results[BASELINE_KEY] = {"plugin_loaded": "kernel_forge" in sys.modules}
    torch.save(results, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
