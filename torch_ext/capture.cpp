// Real calls copied for tuning jobs. The plugin decides which calls (kf_capture_request); here
// the tensor arguments are copied, before the call runs, with their exact sizes and strides, and
// handed to kernel_forge through torch.ops.kforge.take_captures(key), which writes the job folder
// (running eager on them again for the reference outputs: the intercepted ops are deterministic).
#include <ATen/Functions.h>

#include "torch_ext/ext.h"
#include "torch_ext/state.h"

namespace kforge {
namespace {

constexpr size_t kMaxCasesPerKey = 8;  // a forgotten request must not hold memory forever

// Same sizes and strides, own storage holding exactly the span the tensor addresses (copying the
// span keeps overlapping layouts such as expanded stride-0 tensors, which copy_ cannot write).
at::Tensor copy_exact(const at::Tensor& t) {
  int64_t span = t.numel() > 0 ? 1 : 0;
  for (int64_t d = 0; d < t.dim(); d++)
    if (t.numel() > 0) span += (t.size(d) - 1) * t.stride(d);
  at::Tensor flat = t.as_strided({span}, {1}, t.storage_offset()).clone();
  return flat.as_strided(t.sizes(), t.strides(), 0);
}

std::vector<at::Tensor> take_captures(int64_t key) {
  kf_runtime* rt = kf_runtime_get();
  if (!rt) return {};
  ExtState& st = ext_state(rt);
  std::lock_guard<std::mutex> lock(st.captures_mu);
  auto it = st.captures.find(static_cast<uint64_t>(key));
  if (it == st.captures.end()) return {};
  std::vector<at::Tensor> flat;
  for (auto& c : it->second)
    for (auto& t : c) flat.push_back(std::move(t));
  st.captures.erase(it);
  return flat;
}

}  // namespace

// The tensors a kernel takes, in schema order: tensor arguments, and the elements of a tensor
// list flattened in list order (aten::cat), as Interceptor::serve passes them. A wrapped Python
// number is not one: its value is in the signature, and the job writer passes it to eager again
// as the Python number it was (_jobs.call_from_args).
std::vector<at::Tensor> capture_args(const OpSchemaInfo& info, const torch::jit::Stack& stack) {
  std::vector<at::Tensor> out;
  for_kernel_tensors(stack.data() + (stack.size() - info.n_args), info.n_args,
                     [&out](const at::Tensor& t, size_t, bool) {
                       out.push_back(copy_exact(t));
                       return true;
                     });
  return out;
}

void capture_store(kf_runtime* rt, uint64_t key, std::vector<at::Tensor> args) {
  ExtState& st = ext_state(rt);
  std::lock_guard<std::mutex> lock(st.captures_mu);
  auto& cases = st.captures[key];
  if (cases.size() < kMaxCasesPerKey) cases.push_back(std::move(args));
}

void register_kforge_ops(kf_runtime* rt) {
  ExtState& st = ext_state(rt);
  st.kforge_lib = std::make_unique<torch::Library>(torch::Library::DEF, "kforge", std::nullopt,
                                                   __FILE__, __LINE__);
  // The calls kf_capture_request asked for, flattened: per call, its tensor arguments in schema
  // order (a tensor list's elements in its place). Taking them releases them.
  st.kforge_lib->def("take_captures(int key) -> Tensor[]", &take_captures);
}

}  // namespace kforge
