// The boxed kernel that replaces an op's kernel on one dispatch key: describe the call, serve a
// registered kernel when the guard passes, otherwise call the original kernel untouched.
#include <ATen/Functions.h>
#include <ATen/MemoryOverlap.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <stdexcept>

#include "torch_ext/chainserve.h"
#include "torch_ext/ext.h"
#include "common/log.h"

namespace kforge {

// What the interceptors keep per thread, in one thread_local so that a call looks it up once.
ThreadState& thread_state() {
  thread_local ThreadState t_state;
  return t_state;
}

// Set while the plugin itself uses ATen (checking a kernel against eager, poisoning outputs):
// those calls go straight to the original kernels, unrecorded.
struct BypassGuard {
  ThreadState& ts = thread_state();
  bool saved = ts.bypass;
  BypassGuard() { ts.bypass = true; }
  ~BypassGuard() { ts.bypass = saved; }
};

// Every byte of `t`'s storage set to 0xff: an output the kernel forgets to write is then NaN
// (floats) or an implausible value, never a lucky zero.
void poison(const at::Tensor& t) {
  BypassGuard bypass;
  at::Tensor bytes = at::empty({0}, at::TensorOptions().dtype(at::kByte).device(t.device()));
  bytes.set_(t.storage(), 0, {static_cast<int64_t>(t.storage().nbytes())}, {1});
  bytes.fill_(255);
}

// Elements compared at a time: the check's extra memory is a few buffers of this many elements,
// whatever the size of the output (on a GPU, device memory).
constexpr int64_t kCheckChunk = int64_t{1} << 18;

// fn(k_part, e_part) over matching views of k and e of at most kCheckChunk elements each (narrowed
// along `dim`, then the next dims while one index of `dim` is still too large); false as soon as
// fn says so.
template <class F>
bool each_chunk(const at::Tensor& k, const at::Tensor& e, int64_t dim, const F& fn) {
  if (k.numel() <= kCheckChunk || dim >= k.dim()) return fn(k, e);
  const int64_t size = k.size(dim), inner = k.numel() / size;
  const int64_t step = std::max<int64_t>(1, kCheckChunk / inner);
  for (int64_t i = 0; i < size; i += step) {
    const int64_t len = std::min(step, size - i);
    const at::Tensor kp = k.narrow(dim, i, len), ep = e.narrow(dim, i, len);
    if (!(inner > kCheckChunk ? each_chunk(kp, ep, dim + 1, fn) : fn(kp, ep))) return false;
  }
  return true;
}

// The integer type whose elements have `size` bytes (Undefined for none): a tensor's bits.
static c10::ScalarType same_size_bits(int64_t size) {
  switch (size) {
    case 1: return at::kByte;
    case 2: return at::kShort;
    case 4: return at::kInt;
    case 8: return at::kLong;
    default: return c10::ScalarType::Undefined;
  }
}

// The mismatch message, with snprintf: no iostreams on the check path (the process crashed while
// forming this message on the GPU machine; benchmarks/results/h200-2026-12-01-crash/).
static std::string describe_mismatch(double max_abs, double atol, double rtol) {
  char buf[160];
  snprintf(buf, sizeof buf, "max abs error %g exceeds atol %g + rtol %g * |eager|", max_abs, atol, rtol);
  return buf;
}

// Kernel output `k` against eager's `e`: same shape and dtype, then the eager-match rule of
// common/match.c (kf_match_dense, the one the worker's verification uses), chunk by chunk on
// host copies of each chunk's elements whose bits differ, so the check's extra memory stays
// bounded. `why` says what failed.
bool matches_eager(const at::Tensor& k, const at::Tensor& e, double atol, double rtol, std::string* why) {
  if (k.sizes() != e.sizes() || k.scalar_type() != e.scalar_type()) {
    *why = "output shape or dtype differs from eager";
    return false;
  }
  if (k.numel() == 0) return true;
  const int dtype = to_kf_dtype(k.scalar_type());
  if (dtype == KF_DTYPE_UNKNOWN) {
    *why = c10::str("no comparison rule for dtype ", k.scalar_type());
    throw std::runtime_error(*why);  // a check that cannot run
  }
  const c10::ScalarType bits = same_size_bits(k.element_size());
  return each_chunk(k, e, 0, [&](const at::Tensor& kp, const at::Tensor& ep) {
    at::Tensor kc = kp.resolve_conj().resolve_neg().contiguous(), ec = ep.resolve_conj().resolve_neg().contiguous();
    // bit-identical elements match by the rule (kf_match_dense compares bytes first): when most
    // are, only the others are copied to the host, which on a GPU is most of the check's time
    if (bits != c10::ScalarType::Undefined) {
      const at::Tensor diff = kc.view(bits).ne(ec.view(bits)).view(-1);
      const int64_t differ = diff.sum().item<int64_t>();
      if (differ == 0) return true;
      if (differ * 4 < diff.numel()) {
        kc = kc.view(-1).masked_select(diff);
        ec = ec.view(-1).masked_select(diff);
      }
    }
    const at::Tensor kh = kc.to(at::kCPU).contiguous(), eh = ec.to(at::kCPU).contiguous();
    kf_match_result r;
    const int64_t bad = kf_match_dense(dtype, kh.data_ptr(), eh.data_ptr(), kh.numel(), atol, rtol, &r);
    if (bad == 0) return true;
    if (bad < 0) throw std::runtime_error("the comparison could not run");
    if (!k.is_floating_point())
      *why = "output differs from eager (exact comparison)";
    else if (r.nonfinite_bad)
      *why = "NaN or Inf positions differ from eager";
    else
      *why = describe_mismatch(r.max_abs, atol, rtol);
    return false;
  });
}

void* current_cuda_stream(int device_index) {
  const auto* impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  return impl->getStream(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device_index)))
      .native_handle();
}

void Interceptor::operator()(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                             torch::jit::Stack* stack) {
  ThreadState& ts = thread_state();
  if (ts.bypass || !kf_enabled(rt_)) {
    if (t_chain_pending && !ts.bypass) chain_switched_off(rt_);
    orig_.callBoxed(op, ks, stack);
    return;
  }
  if (nested_pass(rt_, *info_, ts.depth)) {
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
  CallDone call_done{rt_, &call};
  run(call, sig, ts, op, ks, stack);
}

// The rest of a described, begun call (also the typed fast path's way for every call that is
// more than a pass-through): serve it, or run eager and learn / capture what is due.
void Interceptor::run(kf_call& call, const kf_sig& sig, ThreadState& ts, const c10::OperatorHandle& op,
                      c10::DispatchKeySet ks, torch::jit::Stack* stack, bool chains_done) {
  if (ts.depth > 0) call.time_it = call.eager_sample = 0;
  DepthGuard depth(ts);
  void* stream = nullptr;
  bool have_stream = false;
  // a capture needs the current stream too: only it tells whether a CUDA graph is being captured
  if (sig.device_type == KF_DEV_CUDA && (call.time_it || call.kernel || call.capture)) {
    try {
      stream = current_cuda_stream(sig.device_index);
      have_stream = true;
    } catch (...) {
      call.kernel = nullptr;  // no stream, no launch
      call.time_it = 0;
      call.capture = 0;  // and no telling whether a graph is being captured
    }
  }
  // The speed guard's eager sample: this call runs eager, timed, instead of the kernel (not
  // inside a CUDA-graph capture, which is not timed and would keep eager in the graph).
  if (call.eager_sample && call.kernel) {
    if (call.time_it && !(sig.device_type == KF_DEV_CUDA && kf_runtime_capturing(rt_, stream)))
      call.kernel = nullptr;
    else
      call.eager_sample = 0;
  }
  // A capture is taken whichever way the call is then run: a chain kernel that serves the member
  // calls of a longer chain's job would otherwise keep that job from ever being written.
  std::vector<at::Tensor> captured;
  bool capture = call.capture && !(device_ == KF_DEV_CUDA && kf_runtime_capturing(rt_, stream));
  if (capture) {
    try {
      BypassGuard bypass;
      captured = capture_args(*info_, *stack);
    } catch (...) {
      capture = false;  // e.g. out of memory: this call is simply not kept
    }
  }
  auto keep_capture = [&] {  // once the call has completed
    if (!capture || !call.slot) return;
    try {
      BypassGuard bypass;
      capture_store(rt_, kf_slot_key(call.slot), std::move(captured));
    } catch (...) {
    }
  };
  ChainIds chain_in;
  // a call made inside another intercepted op's kernel is part of that op, not of a chain
  const bool chains = ts.depth == 1 && kf_dispatch_chains_on(rt_, &call);
  if (chains) chain_inputs(*info_, *stack, &chain_in);
  // chain serving (docs/chains.md): a top-level call may be a chain's head or its next member
  ChainStep chain;
  if (ts.depth == 1 && !chains_done && chain_may_apply(rt_, call) && chain_before(rt_, *info_, call, stack, &chain, EagerOp{&orig_, op, ks})) {
    if (chains) chain_report(rt_, call, chain_in, *info_, *stack);
    keep_capture();
    return;
  }
  // the chain speed guard's eager sample times this member (chainserve.cpp): on its stream
  if (chain.active && call.time_it && !have_stream && sig.device_type == KF_DEV_CUDA) {
    try {
      stream = current_cuda_stream(sig.device_index);
    } catch (...) {
      call.time_it = 0;
    }
  }
  if (call.kernel &&
      (call.validate ? serve_checked(call, op, ks, stack, stream) : serve(call, stack, stream))) {
    // an observed chain's member run by its own kernel: the chain takes its outputs as eager's
    if (chain.active) chain_after(rt_, *info_, *stack, &chain);
    if (chains) chain_report(rt_, call, chain_in, *info_, *stack);
    keep_capture();
    return;
  }

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
  if (chain.active) chain_after(rt_, *info_, *stack, &chain);
  if (chains) chain_report(rt_, call, chain_in, *info_, *stack);
  keep_capture();
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

// A tensor an in-place op writes may share memory with another argument only as the very same
// view (x.add_(x)): eager refuses a partial overlap with an error, and a kernel would race.
static bool may_write_over(const at::Tensor& w, const at::Tensor& t) {
  if (!w.defined() || !t.defined() || !w.has_storage() || !t.has_storage()) return true;
  if (!w.storage().is_alias_of(t.storage())) return true;
  const at::MemOverlapStatus st = at::get_overlap_status(w, t);
  return st == at::MemOverlapStatus::Full || st == at::MemOverlapStatus::No;
}

// Launch the registered kernel; false (with nothing written) sends the call to eager.
bool Interceptor::serve(kf_call& call, torch::jit::Stack* stack, void* stream) {
  const kf_out_layout& layout = *call.outs;
  // no heap on this path: a servable signature has at most KF_SIG_MAX_TENSORS tensor arguments
  // (and a layout at most KF_MAX_OUTS outputs); more than that is refused, not grown
  kf_tensor tensors[KF_SIG_MAX_TENSORS + KF_MAX_OUTS];
  int n_tensors = 0;
  c10::SmallVector<at::Tensor, 8> args_t;  // tensor arguments by argument index (undefined otherwise)
  c10::SmallVector<at::Tensor, KF_MAX_OUTS> outs;
  // timed from here: allocating the outputs is part of a served call, as it is of eager's
  kf_dispatch_start(rt_, &call, 1, stream);
  const auto refuse = [&] {
    kf_dispatch_cancel(rt_, &call);
    return false;
  };
  try {
    c10::IValue* args = stack->data() + (stack->size() - info_->n_args);
    args_t.resize(info_->n_args);
    // fresh outputs go to the call's device, which every tensor argument is on (a servable
    // signature says so; checked again here, as the kernel gets their pointers). A Python
    // number wrapped into a CPU tensor is no kernel argument (its value is compiled in): it is
    // neither passed nor consulted for the device.
    c10::Device device(device_ == KF_DEV_CUDA ? c10::DeviceType::CUDA : c10::DeviceType::CPU);
    bool placed = false;
    const c10::Allocator* seen = nullptr;
    auto on_device = [&](const at::Tensor& t) {
      if (!placed && t.device().type() == device.type())
        device = t.device(), seen = allocator_of(t), placed = true;
      return t.device() == device;
    };
    if (!for_kernel_tensors(args, info_->n_args, [&](const at::Tensor& t, size_t i, bool in_list) {
          if (!in_list) args_t[i] = t;
          return n_tensors < KF_SIG_MAX_TENSORS && on_device(t) && to_kf_tensor(t, &tensors[n_tensors++]);
        }))
      return refuse();
    // an argument written without being returned (batch norm's running stats) shares memory
    // with no other argument: a kernel reading one while writing the other would race
    for (size_t w = 0; info_->hidden_writes && w < info_->n_args; w++) {
      if (!writes_hidden(*info_, args, w)) continue;
      for (size_t i = 0; i < info_->n_args; i++)
        if (i != w && args_t[i].defined() && args_t[i].has_storage() &&
            args_t[w].storage().is_alias_of(args_t[i].storage()) &&
            at::get_overlap_status(args_t[w], args_t[i]) != at::MemOverlapStatus::No)
          return refuse();
    }
    for (int r = 0; r < layout.n; r++) {
      const auto& o = layout.o[r];
      if (o.alias_arg >= 0) {
        const at::Tensor& w = args_t[o.alias_arg];
        for (size_t i = 0; i < info_->n_args; i++) {
          if (static_cast<int>(i) == o.alias_arg) continue;
          if (args_t[i].defined() && !may_write_over(w, args_t[i])) return refuse();
          if (args[i].isTensorList())
            for (const at::Tensor& t : args[i].toTensorList().vec())
              if (!may_write_over(w, t)) return refuse();
        }
        outs.push_back(w);
        continue;
      }
      at::Tensor t = empty_output(c10::IntArrayRef(o.sizes, o.ndim), c10::IntArrayRef(o.strides, o.ndim),
                                  o.dtype, device, seen);
      if (!to_kf_tensor(t, &tensors[n_tensors++])) return refuse();
      if (call.poison) poison(t);
      outs.push_back(std::move(t));
    }
  } catch (...) {
    return refuse();
  }
  const int rc = kf_kernel_launch(call.kernel, tensors, n_tensors, stream);
  if (rc != 0) {
    kf_dispatch_cancel(rt_, &call);
    // a failure, unless the kernel only declined this call: not served again here, one warning
    if (rc != KF_KERNEL_LATER && kf_dispatch_launch_failed(rt_, &call))
      KF_WARN("kernel for %s returned %d; it is not served again in this process (the original "
              "kernel runs instead)", info_->name.c_str(), rc);
    return false;
  }
  kf_dispatch_end(rt_, &call, 1, stream);
  torch::jit::drop(*stack, info_->n_args);
  for (auto& t : outs) stack->emplace_back(std::move(t));
  return true;
}

// A check that cannot run counts as a failure of the entry in this process: otherwise every
// later call would run the kernel, eager and the failing check again.
void Interceptor::check_cannot_run(kf_call& call, const char* why) {
  if (kf_dispatch_check_error(rt_, &call))
    KF_WARN("could not check the kernel for %s against eager (%s); it is not served in this "
            "process, eager's result is used", info_->name.c_str(), why);
}

// First use of a kernel in this process (KFORGE_VALIDATE=first) or every use (always): run eager
// too, on copies of the arguments it writes, and keep the kernel's result only if it matches.
bool Interceptor::serve_checked(kf_call& call, const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                                torch::jit::Stack* stack, void* stream) {
  // comparing needs the results on the host: impossible inside a CUDA-graph capture
  if (device_ == KF_DEV_CUDA && kf_runtime_capturing(rt_, stream)) return false;
  const size_t n = info_->n_args, nret = info_->n_returns;
  BypassGuard bypass;  // eager and the comparisons below are ours, not the user's calls
  std::vector<at::Tensor> originals(n), clones(n);  // clones: what eager writes into
  torch::jit::Stack eager;
  try {
    eager.assign(stack->end() - n, stack->end());
    for (size_t i = 0; i < n; i++) {
      if (writes_arg(*info_, stack->data() + (stack->size() - n), i) && eager[i].isTensor()) {
        originals[i] = eager[i].toTensor();
        clones[i] = originals[i].clone();
        eager[i] = clones[i];
      }
    }
  } catch (const std::exception& e) {
    check_cannot_run(call, e.what());  // e.g. out of memory for the copies
    return false;
  } catch (...) {
    check_cannot_run(call, "unknown error");
    return false;
  }
  try {
    orig_.callBoxed(op, ks, &eager);  // before the kernel, which may write its arguments
  } catch (...) {
    return false;  // the normal eager path runs and raises the same error for the user
  }
  if (eager.size() != nret || !serve(call, stack, stream)) return false;
  double atol, rtol;
  kf_kernel_tolerance(call.kernel, &atol, &rtol);
  std::string why;
  bool ok = true, unchecked = false;
  try {
    if (kf_dispatch_take_check_fault(rt_))
      throw std::runtime_error("out of memory (kf_fail_next_checks)");
    for (size_t r = 0; ok && r < nret; r++) {
      const c10::IValue& kv = (*stack)[stack->size() - nret + r];
      ok = kv.isTensor() && eager[r].isTensor() &&
           matches_eager(kv.toTensor(), eager[r].toTensor(), atol, rtol, &why);
    }
    // what the call writes without returning it: the kernel's writes against eager's
    for (size_t i = 0; ok && info_->hidden_writes && i < n; i++) {
      if (!clones[i].defined() || info_->written[i]) continue;
      ok = matches_eager(originals[i], clones[i], atol, rtol, &why);
      if (!ok) why = "argument " + std::to_string(i) + " (written, not returned): " + why;
    }
  } catch (const std::exception& e) {
    ok = false;
    unchecked = true;
    why = e.what();
  } catch (...) {
    ok = false;
    unchecked = true;
    why = "unknown error";
  }
  if (ok) {
    kf_dispatch_checked(rt_, &call);
    return true;
  }
  if (unchecked) {
    check_cannot_run(call, why.c_str());
  } else {
    KF_WARN("served kernel for %s disagrees with eager (%s); it is disabled and eager's result "
            "is returned", info_->name.c_str(), why.c_str());
    kf_dispatch_reject(rt_, &call, why.c_str());
  }
  // eager's result stands: written arguments get eager's values back
  kf_dispatch_recount_eager(&call);
  for (size_t i = 0; info_->hidden_writes && i < n; i++)
    if (clones[i].defined() && !info_->written[i]) originals[i].copy_(clones[i]);
  for (size_t r = 0; r < nret; r++) {
    c10::IValue& slot = (*stack)[stack->size() - nret + r];
    const int alias = info_->return_alias[r];
    if (alias >= 0 && originals[alias].defined()) {
      originals[alias].copy_(eager[r].toTensor());
      slot = originals[alias];
    } else {
      slot = eager[r];
    }
  }
  return true;
}

}  // namespace kforge

extern "C" KF_API void kf_set_thread_bypass(int on) { kforge::thread_state().bypass = on != 0; }
