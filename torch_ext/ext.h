// torch_ext: the only code that sees libtorch. It turns boxed ATen calls into plain C descriptors
// for plugin/ and runs the original kernel whenever plugin/ does not serve the call.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plugin/plugin.h"

namespace kforge {

// What the interceptor needs to know about an op's schema, computed once at registration.
struct OpSchemaInfo {
  std::string name;         // "aten::add.Tensor"
  size_t n_args = 0;
  size_t n_returns = 0;
  std::vector<bool> written;  // per argument: schema marks it Tensor(a!)
  std::vector<int> return_alias;  // per return: index of the argument it aliases, or -1
  uint32_t hidden_writes = 0;  // arguments written although the schema says read-only
  int hidden_when = -1;        // ... only when this bool argument is True (-1: always)
  int cfg_op = -1;             // its index in the intercept list (kf_runtime_op_cached)
  kf_sig_head head{};          // the signature's first bytes (over `name`, which stays put)
};

// A call made inside another intercepted op's eager kernel (CPU relu -> clamp_min, _to_copy ->
// copy_) is not timed, so never tuned: unless the cache holds kernels for its op, it goes
// straight to eager, undescribed and uncounted.
inline bool nested_pass(kf_runtime* rt, const OpSchemaInfo& info, int depth) {
  return depth > 0 && !kf_runtime_op_cached(rt, info.cfg_op);
}

// Whether the call whose arguments start at `args` writes argument i: the schema says so, or
// kf_op_hidden_writes does (batch norm's running stats when training=True).
bool writes_arg(const OpSchemaInfo& info, const c10::IValue* args, size_t i);
// The arguments it writes that the schema does not mark (written without being returned).
bool writes_hidden(const OpSchemaInfo& info, const c10::IValue* args, size_t i);

// Signature of the call whose arguments are the last info.n_args entries of `stack`.
// Returns false when an argument cannot be described at all (the call then just runs eager).
// `call_device` is the KF_DEV_* of the dispatch key the call arrived on.
bool build_signature(const OpSchemaInfo& info, int call_device, const torch::jit::Stack& stack,
                     kf_sig* sig);

// One argument, as build_signature describes it: any IValue, or a tensor (undefined: None).
// The typed fast path (typed.cpp) describes its unboxed arguments with these, so a call gets the
// same signature bytes whichever way it arrives.
void sig_value(kf_sig* sig, const c10::IValue& v);
void sig_tensor_arg(kf_sig* sig, const at::Tensor& t);
void sig_tensor_list(kf_sig* sig, const at::ITensorListRef& l);  // as sig_value a Tensor[]

int to_kf_dtype(c10::ScalarType t);
c10::ScalarType from_kf_dtype(int d);
// Fills `out` for a strided tensor with at most KF_MAX_DIMS dims; false otherwise.
bool to_kf_tensor(const at::Tensor& t, kf_tensor* out);
// A fresh output as eager lays it out (a served call's, a chain kernel's), uninitialized; `seen`:
// the allocator of an input on `device` (allocator_of), nullptr when none is known.
at::Tensor empty_output(c10::IntArrayRef sizes, c10::IntArrayRef strides, int dtype, const c10::Device& device,
                        const c10::Allocator* seen);
const c10::Allocator* allocator_of(const at::Tensor& t);

// Per thread: the depth of intercepted calls (a call made from inside another intercepted op's
// eager kernel, relu -> clamp_min on CPU, is counted but not timed: its time is already in the
// outer call) and whether the plugin itself is calling ATen (those calls go straight to eager).
struct ThreadState {
  int depth = 0;
  bool bypass = false;
};
ThreadState& thread_state();

struct DepthGuard {
  ThreadState& ts;
  explicit DepthGuard(ThreadState& s) : ts(s) { ++ts.depth; }
  ~DepthGuard() { --ts.depth; }
};

// Last, on every path of a begun call: the call's signature slot may be recycled after it.
struct CallDone {
  kf_runtime* rt;
  kf_call* c;
  ~CallDone() { kf_dispatch_done(rt, c); }
};

// Boxed kernel registered in place of the original on one dispatch key.
class Interceptor final : public c10::OperatorKernel {
 public:
  Interceptor(kf_runtime* rt, std::shared_ptr<const OpSchemaInfo> info, int device,
              c10::SafeKernelFunction orig)
      : rt_(rt), info_(std::move(info)), device_(device), orig_(std::move(orig)) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack);
  // Everything after kf_dispatch_begin, for a call described as `sig` (its args on `stack`);
  // `chains_done`: chain serving has seen it already (the typed path's head).
  void run(kf_call& call, const kf_sig& sig, ThreadState& ts, const c10::OperatorHandle& op,
           c10::DispatchKeySet ks, torch::jit::Stack* stack, bool chains_done = false);
  kf_runtime* runtime() const { return rt_; }
  const OpSchemaInfo& info() const { return *info_; }
  int device() const { return device_; }

 private:
  bool serve(kf_call& call, torch::jit::Stack* stack, void* stream);
  bool serve_checked(kf_call& call, const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                     torch::jit::Stack* stack, void* stream);
  void check_cannot_run(kf_call& call, const char* why);
  void record_outputs(kf_slot* slot, const torch::jit::Stack& stack,
                      const std::vector<at::Tensor>& written_before,
                      const std::vector<std::vector<int64_t>>& sizes_before);
  bool fill_layout(const torch::jit::Stack& stack, const std::vector<at::Tensor>& written,
                   const std::vector<std::vector<int64_t>>& written_sizes, kf_out_layout* layout) const;

  kf_runtime* rt_;
  std::shared_ptr<const OpSchemaInfo> info_;
  int device_;  // KF_DEV_CPU or KF_DEV_CUDA: the key this interceptor is registered on
  c10::SafeKernelFunction orig_;
};

// typed.cpp: the schema's argument and return types ("Tensor,Tensor,Scalar->Tensor",
// "Tensor(a!)->Tensor(a!)" for an in-place op; "" for views and other alias annotations), and the
// unboxed interceptor for it when it is one of the typed fast path's signatures (else nullopt).
std::string schema_shape(const c10::FunctionSchema& s);
std::optional<torch::CppFunction> make_typed(kf_runtime* rt, std::shared_ptr<const OpSchemaInfo> info,
                                             int device, const c10::OperatorHandle& op,
                                             c10::SafeKernelFunction boxed_orig, c10::SafeKernelFunction orig);

// Registers interceptors for every op in rt->cfg; the registrations live as long as the process.
// At load: every op of the intercept list when the config says so (KFORGE_INTERCEPT=all,
// recording, tuning), else only the ops the cache has entries for: an op without a kernel then
// costs nothing. register_ops(rt, true) adds the rest (recording or tuning begins); (rt, false)
// the ops of entries that appeared since.
void register_ops(kf_runtime* rt, bool all);
// Defines torch.ops.kforge.take_captures (capture.cpp).
void register_kforge_ops(kf_runtime* rt);
// The tensors a kernel takes among n IValues (a call's arguments or returns), in schema order:
// the defined tensor arguments but wrapped Python numbers (their values are in the signature),
// and a tensor list's elements in its place (aten::cat). f(tensor, argument index, in_list)
// returns false to stop; so does this, then.
template <class F>
bool for_kernel_tensors(const c10::IValue* v, size_t n, F&& f) {
  for (size_t i = 0; i < n; i++) {
    if (v[i].isTensor()) {
      const at::Tensor& t = v[i].toTensor();
      if (t.defined() && !t.unsafeGetTensorImpl()->is_wrapped_number() && !f(t, i, false)) return false;
    } else if (v[i].isTensorList()) {
      for (const at::Tensor& t : v[i].toTensorList().vec())
        if (!f(t, i, true)) return false;
    }
  }
  return true;
}
// Copies of a call's tensor arguments, taken before the call runs (it may write them).
std::vector<at::Tensor> capture_args(const OpSchemaInfo& info, const torch::jit::Stack& stack);
// Keeps them for take_captures, once the call has completed.
void capture_store(kf_runtime* rt, uint64_t key, std::vector<at::Tensor> args);

// Chain recording (chains.cpp): a call's tensor identities (TensorImpl addresses, in order);
// inputs taken before the call, outputs reported with them once it returned.
struct ChainIds {
  int n = 0;
  uintptr_t id[KF_CHAIN_MAX_IO];
  unsigned fresh = 0;        // inputs: bit i, one new to this thread (KF_CHAIN_FRESH)
  uint64_t seen_at[KF_CHAIN_MAX_IO];  // when the thread first saw each (kf_chain_observe_at)
  uintptr_t storage[KF_CHAIN_MAX_IO];  // each one's storage (its live base's identity) and byte offset in it: views
  int64_t byte_off[KF_CHAIN_MAX_IO];
  uint64_t now = 0;
  bool writes = false;  // the call writes an argument (a batch norm's stats only when training)
};
void chain_inputs(const OpSchemaInfo& info, const torch::jit::Stack& stack, ChainIds* in);
void chain_report(kf_runtime* rt, const kf_call& call, const ChainIds& in, const OpSchemaInfo& info,
                  const torch::jit::Stack& stack);

// Global RecordFunction observer for ops outside the list (when recording is on).
void set_observer(kf_runtime* rt, bool on);

void* current_cuda_stream(int device_index);

}  // namespace kforge
