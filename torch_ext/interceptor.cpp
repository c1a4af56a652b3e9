// The boxed kernel that replaces an op's kernel on one dispatch key: describe the call, serve a
// registered kernel when the guard passes, otherwise call the original kernel untouched.
#include <ATen/ops/empty_strided.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "ext.h"
#include "common/log.h"

namespace kforge {

// Depth of intercepted calls on this thread. A call made from inside another intercepted op's
// eager kernel (relu -> clamp_min on CPU) is counted but not timed: its time is already in the
// outer call, and timing it too would count it twice in the model's total.
thread_local int t_depth = 0;

struct DepthGuard {
  DepthGuard() { ++t_depth; }
  ~DepthGuard() { --t_depth; }
};

void* current_cuda_stream(int device_index) {
  const auto* impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  return impl->getStream(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device_index)))
      .native_handle();
}

void Interceptor::operator()(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                             torch::jit::Stack* stack) {
  if (!kf_enabled(rt_)) {
    orig_.callBoxed(op, ks, stack);
    return;
  }
  kf_sig sig;
  bool described = false;
  try {
    described = build_signature(*info_, device_, *stack, &sig);
  } catch (...) {
    described = false;  // e.g. a tensor without storage: not ours to describe, run eager
  }
  if (!described) {
    orig_.callBoxed(op, ks, stack);
    return;
  }
  kf_call call;
  kf_dispatch_begin(rt_, &sig, &call);
  if (t_depth > 0) call.time_it = 0;
  DepthGuard depth;
  void* stream = nullptr;
  if (sig.device_type == KF_DEV_CUDA && (call.time_it || call.kernel)) {
    try {
      stream = current_cuda_stream(sig.device_index);
    } catch (...) {
      call.kernel = nullptr;  // no stream, no launch
      call.time_it = 0;
    }
  }
  if (call.kernel && serve(call, stack, stream)) return;

  // Eager. Keep the mutated arguments of a first call, to learn how eager lays out its outputs.
  const bool learn = call.learn;
  std::vector<at::Tensor> written;
  std::vector<std::vector<int64_t>> written_sizes;
  if (learn) {
    const c10::IValue* args = stack->data() + (stack->size() - info_->n_args);
    for (size_t i = 0; i < info_->n_args; i++) {
      if (info_->written[i] && args[i].isTensor()) {
        written.push_back(args[i].toTensor());
        written_sizes.push_back(args[i].toTensor().sizes().vec());
      } else {
        written.emplace_back();
        written_sizes.emplace_back();
      }
    }
  }
  kf_dispatch_start(rt_, &call, 0, stream);
  try {
    orig_.callBoxed(op, ks, stack);
  } catch (...) {
    kf_dispatch_cancel(rt_, &call);
    throw;  // eager's own error, unchanged
  }
  kf_dispatch_end(rt_, &call, 0, stream);
  if (learn) {
    try {
      record_outputs(call.slot, *stack, written, written_sizes);
    } catch (...) {
      // leaves the signature without a layout: it is simply never served
    }
  }
}

// Eager's outputs of a finished call: fresh tensors (dtype, sizes, strides) or mutated arguments.
void Interceptor::record_outputs(kf_slot* slot, const torch::jit::Stack& stack,
                                 const std::vector<at::Tensor>& written,
                                 const std::vector<std::vector<int64_t>>& written_sizes) {
  kf_out_layout layout{};  // n == 0 until every return is understood: "cannot be served"
  if (fill_layout(stack, written, written_sizes, &layout)) layout.n = static_cast<int>(info_->n_returns);
  kf_dispatch_learn_outputs(slot, &layout);
}

bool Interceptor::fill_layout(const torch::jit::Stack& stack, const std::vector<at::Tensor>& written,
                              const std::vector<std::vector<int64_t>>& written_sizes,
                              kf_out_layout* layout) const {
  if (info_->n_returns == 0 || info_->n_returns > KF_MAX_OUTS || stack.size() < info_->n_returns)
    return false;
  const c10::IValue* rets = stack.data() + (stack.size() - info_->n_returns);
  for (size_t r = 0; r < info_->n_returns; r++) {
    if (!rets[r].isTensor()) return false;
    const at::Tensor& t = rets[r].toTensor();
    auto& o = layout->o[r];
    const int alias = info_->return_alias[r];
    if (alias >= 0) {
      // in-place / out=: served only if eager wrote into the argument without resizing it
      if (!written[alias].defined() || !t.is_same(written[alias]) ||
          t.sizes().vec() != written_sizes[alias])
        return false;
      o.alias_arg = alias;
      continue;
    }
    kf_tensor kt;
    if (!t.defined() || !to_kf_tensor(t, &kt) || kt.dtype == KF_DTYPE_UNKNOWN) return false;
    o.alias_arg = -1;
    o.dtype = kt.dtype;
    o.ndim = kt.ndim;
    std::copy(kt.sizes, kt.sizes + kt.ndim, o.sizes);
    std::copy(kt.strides, kt.strides + kt.ndim, o.strides);
  }
  return true;
}

// Launch the registered kernel; false (with nothing written) sends the call to eager.
bool Interceptor::serve(kf_call& call, torch::jit::Stack* stack, void* stream) {
  const kf_out_layout& layout = *call.outs;
  std::vector<kf_tensor> tensors;
  std::vector<at::Tensor> args_t;  // tensor arguments by argument index (undefined otherwise)
  std::vector<at::Tensor> outs;
  try {
    c10::IValue* args = stack->data() + (stack->size() - info_->n_args);
    args_t.resize(info_->n_args);
    c10::Device device(c10::DeviceType::CPU);
    for (size_t i = 0; i < info_->n_args; i++) {
      if (args[i].isTensor() && args[i].toTensor().defined()) {
        args_t[i] = args[i].toTensor();
        kf_tensor kt;
        if (!to_kf_tensor(args_t[i], &kt)) return false;
        tensors.push_back(kt);
        device = args_t[i].device();
      } else if (args[i].isTensorList()) {
        for (const at::Tensor& t : args[i].toTensorList().vec()) {
          kf_tensor kt;
          if (!to_kf_tensor(t, &kt)) return false;
          tensors.push_back(kt);
          device = t.device();
        }
      }
    }
    for (int r = 0; r < layout.n; r++) {
      const auto& o = layout.o[r];
      if (o.alias_arg >= 0) {
        outs.push_back(args_t[o.alias_arg]);
        continue;
      }
      at::Tensor t = at::empty_strided(c10::IntArrayRef(o.sizes, o.ndim),
                                       c10::IntArrayRef(o.strides, o.ndim),
                                       at::TensorOptions().dtype(from_kf_dtype(o.dtype)).device(device));
      kf_tensor kt;
      if (!to_kf_tensor(t, &kt)) return false;
      tensors.push_back(kt);
      outs.push_back(std::move(t));
    }
  } catch (...) {
    return false;
  }
  kf_dispatch_start(rt_, &call, 1, stream);
  const int rc = kf_kernel_launch(call.kernel, tensors.data(), static_cast<int>(tensors.size()), stream);
  if (rc != 0) {
    kf_dispatch_cancel(rt_, &call);
    KF_WARN("kernel for %s returned %d; running the original kernel", info_->name.c_str(), rc);
    return false;
  }
  kf_dispatch_end(rt_, &call, 1, stream);
  torch::jit::drop(*stack, info_->n_args);
  for (auto& t : outs) stack->emplace_back(std::move(t));
  return true;
}

}  // namespace kforge
