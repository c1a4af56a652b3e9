"""The facts C owns and the Python package asks for (dtype names and sizes, tolerances)."""
import torch

from kernel_forge import _jobs, _native


def test_dtype_table_round_trip():
    lib = _native.lib()
    for code in range(1, 15):
        name = _native.dtype_name(code)
        assert name != "?"
        assert lib.kf_dtype_from_name(name.encode()) == code
    assert _native.dtype_name(0) == "?" and _native.dtype_name(999) == "?"
    assert lib.kf_dtype_from_name(b"float32") == 0
    for name, dt in _jobs._TORCH_DTYPES.items():
        assert lib.kf_dtype_size(lib.kf_dtype_from_name(name.encode())) == dt.itemsize


def test_tolerances_are_the_design_table():
    assert _jobs.tolerance("aten::relu", torch.float32) == (1e-5, 1e-5)
    assert _jobs.tolerance("aten::add.Tensor", torch.float64) == (1e-5, 1e-5)
    assert _jobs.tolerance("aten::_softmax", torch.float32) == (1e-4, 1e-4)
    assert _jobs.tolerance("aten::mean.dim", torch.float32) == (1e-4, 1e-4)
    assert _jobs.tolerance("aten::meanx", torch.float32) == (1e-5, 1e-5)
    assert _jobs.tolerance("aten::gelu", torch.float16) == (1e-3, 1e-3)
    assert _jobs.tolerance("aten::gelu", torch.bfloat16) == (1e-2, 1e-2)
    assert _jobs.tolerance("aten::add.Tensor", torch.int64) == (0.0, 0.0)
    assert _jobs.tolerance("aten::add.Tensor", torch.bool) == (0.0, 0.0)
