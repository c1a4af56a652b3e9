# kf.tune on 37 pointwise ops, f32 and bf16 [2,512,64], one thread: status, eager us, speedup.
#   OMP_NUM_THREADS=1 KFORGE_CACHE_DIR=/tmp/survey/c python3 pointwise-survey.py float32
import sys, torch, kernel_forge as kf
dt = getattr(torch, sys.argv[1])
x = torch.randn(2, 512, 64).to(dt); y = torch.randn(2, 512, 64).to(dt); p = x.abs() + 0.1
ops = [("aten::exp", (x,)), ("aten::log", (p,)), ("aten::sqrt", (p,)), ("aten::rsqrt", (p,)),
       ("aten::sigmoid", (x,)), ("aten::tanh", (x,)), ("aten::silu", (x,)), ("aten::gelu", (x,)),
       ("aten::relu", (x,)), ("aten::leaky_relu", (x, 0.1)),
       ("aten::hardswish", (x,)), ("aten::hardsigmoid", (x,)), ("aten::elu", (x,)), ("aten::softplus", (x, 1, 20)),
       ("aten::mish", (x,)), ("aten::clamp", (x, -1.0, 1.0)), ("aten::maximum", (x, y)), ("aten::minimum", (x, y)),
       ("aten::where.self", (x > 0, x, y)), ("aten::abs", (x,)), ("aten::neg", (x,)), ("aten::reciprocal", (p,)),
       ("aten::sin", (x,)), ("aten::cos", (x,)), ("aten::erf", (x,)), ("aten::log1p", (p,)), ("aten::expm1", (x,)),
       ("aten::pow.Tensor_Scalar", (x, 2)), ("aten::div.Tensor", (x, p)), ("aten::mul.Tensor", (x, y)),
       ("aten::add.Tensor", (x, y)), ("aten::sub.Tensor", (x, y)), ("aten::masked_fill.Scalar", (x, x > 1, -1e4)),
       ("aten::lerp.Scalar", (x, y, 0.3)), ("aten::addcmul", (x, y, p)), ("aten::hardtanh", (x,))]
for op, args in ops:
    try:
        r = kf.tune(op, args, iterations=16)
        print(f"{op:28s} {sys.argv[1]:9s} {r['status']:18s} eager {1e3*r['eager_ms']:8.1f} us  x{(r.get('speedup') or 0):.2f}", flush=True)
    except Exception as e:
        print(f"{op:28s} error {str(e)[:120]}", flush=True)
