import json, subprocess, sys, os
def job(Bn, Tn, Cn, h_t, eps):
    def T(what): return '{"dtype": "bf16", "sizes": [%d, %d, %d], "strides": [%d, 1, %d], %s}' % (Bn, Tn, Cn, Tn*Cn, Tn, what)
    def X(what): return '{"dtype": "bf16", "sizes": [%d, %d, %d], "strides": [%d, %d, 1], %s}' % (Bn, Tn, Cn, Tn*Cn, Cn, what)
    def W(what): return '{"dtype": "bf16", "sizes": [%d], "strides": [1], %s}' % (Cn, what)
    L1 = T if h_t else X
    return ('"inputs": [' + T('"align": 16') + ', ' + L1('"align": 16') + ', ' + W('"align": 16') + ', ' + W('"align": 16') + '], '
     '"outputs": [' + T('"alias": -1') + ', ' + X('"alias": -1') + ', '
     '{"dtype": "f32", "sizes": [%d, %d, 1], "strides": [%d, 1, 1], "alias": -1}, ' % (Bn, Tn, Tn) +
     '{"dtype": "f32", "sizes": [%d, %d, 1], "strides": [%d, 1, 1], "alias": -1}], ' % (Bn, Tn, Tn) +
     '"scalars": [{"name": "m0.alpha", "kind": "i", "value": 1}, '
     '{"name": "m1.normalized_shape", "kind": "l", "value": [%d]}, ' % Cn +
     '{"name": "m1.eps", "kind": "d", "value": %g}], ' % eps +
     '"chain": {"version": 1, "n_head_inputs": 2, "n_ext": 2, "members": ['
     '{"op": "aten::add.Tensor", "inputs": [["head", 0], ["head", 1]]}, '
     '{"op": "aten::native_layer_norm", "inputs": [["member", 0, 0], ["ext", 0], ["ext", 1]]}]}')
cases = {"mixA": (64, 196, 768, 1, 1e-6), "mixB": (64, 196, 768, 0, 1e-6), "whB": (16, 1500, 512, 0, 1e-5)}
knobs = {"start": "0 0 0 1 0", "vec": "0 0 0 0 0", "tr32": "0 0 0 1 1", "vec32": "0 0 0 0 1"}
os.makedirs("v", exist_ok=True)
meta = {}
for cn, c in cases.items():
    open(f"v/{cn}.json", "w").write(job(*c))
    for kn, k in knobs.items():
        out = subprocess.run(["/tmp/rc/rc", f"v/{cn}.json", "4", "4"] + k.split(), capture_output=True, text=True).stdout
        src, lj = out.split("\n// launch ")
        open(f"v/{cn}_{kn}.cu", "w").write(src)
        meta[f"{cn}_{kn}"] = {"case": cn, "launch": json.loads(lj)}
        if kn == "start":  # phase 0 unrolled by 4
            s2 = src.replace("#pragma unroll 1\n            for (long long c = kf_ty", "#pragma unroll 4\n            for (long long c = kf_ty", 1)
            assert s2 != src
            open(f"v/{cn}_u4.cu", "w").write(s2)
            meta[f"{cn}_u4"] = {"case": cn, "launch": json.loads(lj)}
json.dump({"cases": cases, "variants": meta}, open("v/meta.json", "w"), indent=1)
print(sorted(meta))
