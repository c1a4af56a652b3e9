"""aten::max_pool2d_with_indices on the host (host_max_pool2d): tuned with kf.tune and served,
its values and indices eager's bit for bit, in eager's memory format: NCHW and channels last,
3-D input, f16 / bf16 (compared in float), padding with dilation, ceil_mode, NaN (which wins,
the last one in a window) and -inf windows (which keep their first in-range index)."""

import pytest
import torch

import kernel_forge as kf
from kernel_forge import _jobs

OP = "aten::max_pool2d_with_indices"


pytestmark = pytest.mark.usefixtures("one_eager_thread")  # conftest.py


def _nan_and_inf(x):
    x[0, 3, 5, 7] = float("nan")
    x[0, 3, 5, 8] = float("nan")  # two NaNs in one window: the last one's index
    x[-1, :, :4, :4] = float("-inf")  # whole windows of -inf
    return x


# Shapes no other test uses (a served kernel must not leak into other tests).
CASES = {
    "nchw": (lambda: torch.randn(4, 24, 60, 60), ([3, 3], [2, 2], [1, 1], [1, 1], False)),
    "channels_last": (lambda: torch.randn(4, 24, 58, 58).to(memory_format=torch.channels_last),
                      ([3, 3], [2, 2], [1, 1], [1, 1], False)),
    "bf16_dilated_ceil": (lambda: _nan_and_inf(torch.randn(2, 40, 33, 31, dtype=torch.bfloat16)
                                               .to(memory_format=torch.channels_last)),
                          ([3, 2], [2, 3], [1, 1], [2, 1], True)),
    "f16_3d_ceil": (lambda: _nan_and_inf(torch.randn(6, 17, 29, dtype=torch.float16)[None])[0],
                    ([2, 2], [2, 2], [0, 0], [1, 1], True)),
    "f32_nan_default_stride": (lambda: _nan_and_inf(torch.randn(2, 8, 40, 44)),
                               ([2, 3], [], [1, 1], [1, 1], False)),
}


def same(got, want):
    """Bit for bit, NaN where eager has NaN; the same strides."""
    return (got.dtype == want.dtype and got.stride() == want.stride()
            and torch.equal(got.isnan(), want.isnan())
            and torch.equal(got.nan_to_num(), want.nan_to_num()))


@pytest.mark.parametrize("case", sorted(CASES))
def test_max_pool2d_is_tuned_and_served_as_eager_computes_it(case):
    make, params = CASES[case]
    x = make()
    args = (x, *params)
    res = kf.tune(OP, args, iterations=3, margin=-100)
    assert res["status"] == "inserted", res
    key = kf.signature_key(OP, *args)
    before = next(r for r in kf.stats() if r["key"] == key)["served"]
    got = torch.ops.aten.max_pool2d_with_indices(*args)
    assert next(r for r in kf.stats() if r["key"] == key)["served"] == before + 1
    with _jobs.bypass():
        want = torch.ops.aten.max_pool2d_with_indices(*args)
    assert same(got[0], want[0]) and same(got[1], want[1])


def test_what_eager_would_copy_first_stays_on_eager():
    # a non-dense input: eager copies it into its format first; the template refuses it
    x = torch.randn(2, 8, 40, 80)[..., ::2]
    res = kf.tune(OP, (x, [2, 2], [2, 2], [0, 0], [1, 1], False), iterations=2)
    assert res["status"] == "no_template", res
    got = torch.ops.aten.max_pool2d_with_indices(x, [2, 2], [2, 2], [0, 0], [1, 1], False)
    with _jobs.bypass():
        want = torch.ops.aten.max_pool2d_with_indices(x, [2, 2], [2, 2], [0, 0], [1, 1], False)
    assert same(got[0], want[0]) and same(got[1], want[1])
