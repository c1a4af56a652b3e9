// The typed (unboxed) fast path. A boxed interceptor costs every call a heap-allocated IValue
// stack, built by the dispatcher and taken apart again by the original kernel's boxed wrapper.
// For ops whose schema is one of a few common C++ signatures, registration.cpp registers this
// unboxed kernel instead: it describes the call from its typed arguments (the same signature
// bytes as build_signature: sig_value / sig_tensor_arg), and when the call is a plain pass-through
// (no kernel, nothing to learn or capture) calls the original kernel unboxed. Chain serving's
// common steps (chainserve.h: a served member's hand-out, a head) are taken here too, on the
// call's tensors by address. Every other call is boxed here and finished by the same
// Interceptor::run as a boxed call, so serving, guards, eager samples, learning and captures
// behave exactly as they do without this path.
#include <ATen/core/boxing/impl/boxing.h>

#include <array>
#include <cstring>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "torch_ext/chainserve.h"
#include "torch_ext/ext.h"
#include "common/log.h"

namespace kforge {
namespace {

// SafeKernelFunction keeps the captured KernelFunction private and offers only callBoxed; the
// typed path calls the same KernelFunction unboxed, and checks the same token first. An explicit
// instantiation may name private members ([temp.spec.general]); a renamed member fails to compile.
template <class Tag, typename Tag::type M>
struct Expose {
  friend typename Tag::type member(Tag) { return M; }
};
struct SafeKernel {
  using type = c10::KernelFunction c10::SafeKernelFunction::*;
  friend type member(SafeKernel);
};
struct SafeToken {
  using type = std::shared_ptr<c10::KernelToken> c10::SafeKernelFunction::*;
  friend type member(SafeToken);
};
template struct Expose<SafeKernel, &c10::SafeKernelFunction::kernel_>;
template struct Expose<SafeToken, &c10::SafeKernelFunction::token_>;

struct TypedState {
  TypedState(kf_runtime* rt, std::shared_ptr<const OpSchemaInfo> info, int device,
             c10::SafeKernelFunction boxed_orig, c10::SafeKernelFunction orig, c10::OperatorHandle op)
      : ic(rt, info, device, std::move(boxed_orig)), safe(std::move(orig)), op(std::move(op)),
        rt(rt), info(info.get()), device(device) {}
  Interceptor ic;               // every call that is more than a pass-through, boxed
  c10::SafeKernelFunction safe;  // owns the original kernel and its token
  c10::OperatorHandle op;
  kf_runtime* rt;
  const OpSchemaInfo* info;  // ic keeps it alive
  int device;
  const c10::KernelFunction& kernel() const { return safe.*member(SafeKernel{}); }
  bool valid() const {
    const auto& token = safe.*member(SafeToken{});
    return token && token->isValid();
  }
};

// Describing one typed argument exactly as build_signature describes its IValue.
inline void describe(kf_sig* sig, const at::Tensor& t) { sig_tensor_arg(sig, t); }
inline void describe(kf_sig* sig, const std::optional<at::Tensor>& t) {
  if (t.has_value())
    sig_tensor_arg(sig, *t);
  else
    kf_sig_none(sig);  // IValue(nullopt) is None
}
inline void describe(kf_sig* sig, c10::SymIntArrayRef v) {
  // IValue(SymIntArrayRef) is an int list when every element is concrete
  if (const auto ints = c10::asIntArrayRefSlowOpt(v))
    kf_sig_int_list(sig, ints->data(), static_cast<int>(ints->size()));
  else
    sig_value(sig, c10::IValue(v));
}
inline void describe(kf_sig* sig, c10::string_view v) {
  std::array<char, 64> buf;  // kf_sig_str takes a C string, as build_signature gives it
  if (v.size() < buf.size() && std::memchr(v.data(), 0, v.size()) == nullptr) {
    std::memcpy(buf.data(), v.data(), v.size());
    buf[v.size()] = 0;
    kf_sig_str(sig, buf.data());
  } else {
    sig_value(sig, c10::IValue(std::string(v)));
  }
}
// IValue(Scalar): symbolic ones first (isFloatingPoint holds for a SymFloat too), then double,
// complex, bool, and the rest as int; the plain kinds straight, the others through the IValue.
inline void describe(kf_sig* sig, const c10::Scalar& v) {
  if (!v.isSymbolic()) {
    if (v.isFloatingPoint()) return kf_sig_double(sig, v.toDouble());
    if (v.isBoolean()) return kf_sig_bool(sig, v.toBool());
    if (v.isIntegral(false)) return kf_sig_int(sig, v.toLong());
  }
  sig_value(sig, c10::IValue(v));
}
inline void describe(kf_sig* sig, const std::optional<c10::Scalar>& v) {
  if (v.has_value())
    describe(sig, *v);
  else
    kf_sig_none(sig);
}
inline void describe(kf_sig* sig, c10::IntArrayRef v) {
  kf_sig_int_list(sig, v.data(), static_cast<int>(v.size()));
}
inline void describe(kf_sig* sig, at::OptionalIntArrayRef v) {
  if (v.has_value())
    describe(sig, *v);
  else
    kf_sig_none(sig);
}
// IValue(SymInt) is an int when concrete; IValue(ScalarType), IValue(Layout) and
// IValue(MemoryFormat) are their enum values as ints; IValue(Device) a device
inline void describe(kf_sig* sig, const c10::SymInt& v) {
  if (const auto i = v.maybe_as_int())
    kf_sig_int(sig, *i);
  else
    sig_value(sig, c10::IValue(v));
}
template <class E, std::enable_if_t<std::is_enum_v<E>, int> = 0>
inline void describe(kf_sig* sig, std::optional<E> v) {
  if (v.has_value())
    kf_sig_int(sig, static_cast<int64_t>(*v));
  else
    kf_sig_none(sig);
}
inline void describe(kf_sig* sig, std::optional<c10::Device> v) {
  if (v.has_value())
    sig_value(sig, c10::IValue(*v));
  else
    kf_sig_none(sig);
}
inline void describe(kf_sig* sig, std::optional<bool> v) {
  if (v.has_value())
    kf_sig_bool(sig, *v);
  else
    kf_sig_none(sig);
}
inline void describe(kf_sig* sig, const at::ITensorListRef& v) { sig_tensor_list(sig, v); }
inline void describe(kf_sig* sig, int64_t v) { kf_sig_int(sig, v); }
inline void describe(kf_sig* sig, bool v) { kf_sig_bool(sig, v); }
inline void describe(kf_sig* sig, double v) { kf_sig_double(sig, v); }

// build_signature's test for a call on Python numbers alone (a wrapped scalar's _to_copy, which
// takes no signature slot): 1 a wrapped number, 2 anything real (a tensor, a list), 0 neither.
inline int arg_kind(const at::Tensor& t) {
  return !t.defined() ? 0 : t.unsafeGetTensorImpl()->is_wrapped_number() ? 1 : 2;
}
inline int arg_kind(const std::optional<at::Tensor>& t) { return t.has_value() ? arg_kind(*t) : 0; }
inline int arg_kind(c10::IntArrayRef) { return 2; }
inline int arg_kind(c10::SymIntArrayRef) { return 2; }
inline int arg_kind(at::OptionalIntArrayRef v) { return v.has_value() ? 2 : 0; }
inline int arg_kind(const at::ITensorListRef&) { return 2; }
template <class T>
inline int arg_kind(const T&) {
  return 0;
}

// A chain member's kernel tensor arguments, as for_kernel_tensors numbers them (no tensor lists
// here: their calls go the boxed way), by address: a copy of a tensor only Python holds would
// take the GIL.
using TensorPtrs = c10::SmallVector<const at::Tensor*, 8>;
inline void kernel_tensor(TensorPtrs* v, const at::Tensor& t) {
  if (t.defined() && !t.unsafeGetTensorImpl()->is_wrapped_number()) v->push_back(&t);
}
inline void kernel_tensor(TensorPtrs* v, const std::optional<at::Tensor>& t) {
  if (t) kernel_tensor(v, *t);
}
template <class T>
inline void kernel_tensor(TensorPtrs*, const T&) {}

template <class T>
constexpr bool is_list = std::is_same_v<std::decay_t<T>, at::ITensorListRef>;

// A chain member's outputs as the op returns them (Tensor, or a tuple of tensors).
template <class Ret>
struct Outputs : std::false_type {};
template <>
struct Outputs<at::Tensor> : std::true_type {
  static constexpr size_t n = 1;
  static at::Tensor make(c10::SmallVector<at::Tensor, 4>& o) { return std::move(o[0]); }
  static void box(const at::Tensor& r, c10::SmallVector<c10::IValue, 4>* v) { v->emplace_back(r); }
};
template <class... T>
struct Outputs<std::tuple<T...>> : std::bool_constant<(std::is_same_v<T, at::Tensor> && ...)> {
  static constexpr size_t n = sizeof...(T);
  static std::tuple<T...> make(c10::SmallVector<at::Tensor, 4>& o) {
    return make_from(o, std::index_sequence_for<T...>{});
  }
  template <size_t... I>
  static std::tuple<T...> make_from(c10::SmallVector<at::Tensor, 4>& o, std::index_sequence<I...>) {
    return std::tuple<T...>(std::move(o[I])...);
  }
  static void box(const std::tuple<T...>& r, c10::SmallVector<c10::IValue, 4>* v) {
    std::apply([v](const auto&... t) { (v->emplace_back(t), ...); }, r);
  }
};

template <class First, class... Rest>
constexpr bool first_mutable() {
  return std::is_same_v<First, at::Tensor&>;
}

template <class Ret, class... Args>
struct TypedKernel {
  // an in-place / out= schema's C++ signature: Tensor& returned, its first or last argument
  static_assert(!std::is_same_v<Ret, at::Tensor&> ||
                std::is_same_v<std::tuple_element_t<first_mutable<Args...>() ? 0 : sizeof...(Args) - 1,
                                                    std::tuple<Args...>>,
                               at::Tensor&>);
  std::shared_ptr<TypedState> st;

  // A boxed call's result: popped from the stack, or for in-place / out= (Ret is Tensor&) the
  // argument written, as torch's own BoxedKernelWrapper returns it (the first argument when it
  // is a mutable reference, else the last).
  static Ret result(torch::jit::Stack& stack, Args&... args) {
    if constexpr (std::is_same_v<Ret, at::Tensor&>) {
      (void)stack;
      return std::get<first_mutable<Args...>() ? 0 : sizeof...(Args) - 1>(std::forward_as_tuple(args...));
    } else {
      return c10::impl::PopResult<Ret>::call(stack);
    }
  }

  Ret boxed(c10::DispatchKeySet ks, Args... args) const {
    torch::jit::Stack stack = c10::impl::boxArgs<Args...>(args...);
    st->ic(st->op, ks, &stack);
    return result(stack, args...);
  }

  Ret operator()(c10::DispatchKeySet ks, Args... args) const {
    TypedState& s = *st;
    // an invalidated original kernel: the boxed path raises torch's own error, as before
    if (!s.valid()) return boxed(ks, args...);
    ThreadState& ts = thread_state();
    if (ts.bypass || !kf_enabled(s.rt)) {
      if (t_chain_pending && !ts.bypass) chain_switched_off(s.rt);
      return s.kernel().template call<Ret, Args...>(s.op, ks, args...);
    }
    if (nested_pass(s.rt, *s.info, ts.depth)) return s.kernel().template call<Ret, Args...>(s.op, ks, args...);
    // only a Python number among its tensors: undescribed, as build_signature leaves it
    if ((0 | ... | arg_kind(args)) == 1) return s.kernel().template call<Ret, Args...>(s.op, ks, args...);
    kf_sig sig;
    try {
      kf_sig_begin_head(&sig, &s.info->head);
      kf_sig_call_device(&sig, s.device);
      (describe(&sig, args), ...);
    } catch (...) {  // as build_signature's caller: not ours to describe, run eager
      return s.kernel().template call<Ret, Args...>(s.op, ks, args...);
    }
    kf_call call;
    kf_dispatch_begin(s.rt, &sig, &call);
    CallDone call_done{s.rt, &call};
    // Chain serving without boxing (before the call's own kernel, as Interceptor::run): a served
    // chain's next member gets its precomputed outputs; a chain's head is served, or runs eager
    // for the chain to observe. Anything else goes the boxed way.
    const bool chains_on = ts.depth == 0 && kf_dispatch_chains_on(s.rt, &call);
    bool may_chain = ts.depth == 0 && !chains_on && chain_may_apply(s.rt, call);  // once, usually
    bool chains_done = false;
    if constexpr (Outputs<Ret>::value && !(is_list<Args> || ...)) {
      if (may_chain && !call.learn && !call.capture) {
        TensorPtrs ins;
        (kernel_tensor(&ins, args), ...);
        c10::SmallVector<at::Tensor, 4> outs;
        if (t_chain_pending) {
          if (chain_hand_out(s.rt, call, ins, Outputs<Ret>::n, &outs)) return Outputs<Ret>::make(outs);
        } else {
          DepthGuard depth(ts);
          ChainStep step;
          switch (chain_head_typed(s.rt, *s.info, call, ins, Outputs<Ret>::n, &outs, &step)) {
            case ChainHead::kServed:
              return Outputs<Ret>::make(outs);
            case ChainHead::kEager: {
              Ret r = eager(s, call, sig, ks, args...);
              c10::SmallVector<c10::IValue, 4> rets;
              Outputs<Ret>::box(r, &rets);
              chain_after(s.rt, *s.info, rets, &step);
              return r;
            }
            case ChainHead::kNormal:
              chains_done = true;
              break;
            case ChainHead::kNotMine:
              break;
          }
        }
        may_chain = chain_may_apply(s.rt, call);  // what the pending chain's step left
      }
    }
    // chain recording and serving need the call's tensors (top-level calls): boxed too
    if (call.kernel || call.learn || call.capture || chains_on || (!chains_done && may_chain)) {
      // a served host call's time sample covers the boxing too: eager's sample is its typed call
      if (call.kernel && call.time_it && sig.device_type == KF_DEV_CPU) call.t0_ns = kf_now_ns();
      torch::jit::Stack stack = c10::impl::boxArgs<Args...>(args...);
      s.ic.run(call, sig, ts, s.op, ks, &stack, chains_done);
      return result(stack, args...);
    }
    // The pass-through: Interceptor::run with no kernel, nothing learned, nothing captured, no chain.
    if (ts.depth > 0) call.time_it = call.eager_sample = 0;
    DepthGuard depth(ts);
    return eager(s, call, sig, ks, args...);
  }

  // The original kernel, unboxed, timed when the call is an eager sample.
  static Ret eager(TypedState& s, kf_call& call, const kf_sig& sig, c10::DispatchKeySet ks, Args... args) {
    void* stream = nullptr;
    if (sig.device_type == KF_DEV_CUDA && call.time_it) {
      try {
        stream = current_cuda_stream(sig.device_index);
      } catch (...) {
        call.time_it = 0;
      }
    }
    kf_dispatch_start(s.rt, &call, 0, stream);
    try {
      Ret r = s.kernel().template call<Ret, Args...>(s.op, ks, args...);
      kf_dispatch_end(s.rt, &call, 0, stream);
      return r;
    } catch (...) {
      kf_dispatch_cancel(s.rt, &call);
      throw;  // eager's own error, unchanged
    }
  }
};

template <class Ret, class... Args>
torch::CppFunction make(std::shared_ptr<TypedState> st) {
  TypedKernel<Ret, Args...> k{std::move(st)};
  return torch::CppFunction([k](c10::DispatchKeySet ks, Args... args) -> Ret {
    return k(ks, args...);
  });
}

using at::Tensor;
using c10::Scalar;
using OptT = std::optional<Tensor>;
using T2 = std::tuple<Tensor, Tensor>;
using T3 = std::tuple<Tensor, Tensor, Tensor>;

// Schemas (argument and return types; "(a!)" marks the written argument and the return that is
// it) and the C++ signature the dispatcher knows them by. A mismatch is refused by torch at
// registration (the op then gets the boxed interceptor).
struct Variant {
  const char* shape;
  torch::CppFunction (*make)(std::shared_ptr<TypedState>);
};
const Variant kVariants[] = {
    {"Tensor->Tensor", make<Tensor, const Tensor&>},  // relu, silu, sigmoid, ...
    {"Tensor,Tensor->Tensor", make<Tensor, const Tensor&, const Tensor&>},  // mul, div, ...
    {"Tensor,Tensor,Scalar->Tensor", make<Tensor, const Tensor&, const Tensor&, const Scalar&>},
    {"Tensor,Scalar->Tensor", make<Tensor, const Tensor&, const Scalar&>},  // clamp_min, pow
    {"Tensor,Scalar,Scalar->Tensor", make<Tensor, const Tensor&, const Scalar&, const Scalar&>},
    {"Tensor,int,bool->Tensor", make<Tensor, const Tensor&, int64_t, bool>},  // _softmax
    {"Tensor,str->Tensor", make<Tensor, const Tensor&, c10::string_view>},  // gelu
    {"Tensor,Tensor,Tensor->Tensor", make<Tensor, const Tensor&, const Tensor&, const Tensor&>},  // where
    {"Tensor,ScalarType?,Layout?,Device?,bool?,bool,MemoryFormat?->Tensor",  // _to_copy (.to(dtype))
     make<Tensor, const Tensor&, std::optional<c10::ScalarType>, std::optional<c10::Layout>,
          std::optional<c10::Device>, std::optional<bool>, bool, std::optional<c10::MemoryFormat>>},
    {"Tensor[],int->Tensor", make<Tensor, const at::ITensorListRef&, int64_t>},  // cat
    {"Tensor,Tensor,SymInt,bool,bool->Tensor",  // embedding
     make<Tensor, const Tensor&, const Tensor&, c10::SymInt, bool, bool>},
    {"Tensor,int,Tensor->Tensor", make<Tensor, const Tensor&, int64_t, const Tensor&>},  // index_select
    {"Tensor,int,Tensor,bool->Tensor", make<Tensor, const Tensor&, int64_t, const Tensor&, bool>},  // gather
    {"Tensor,Tensor,Tensor,Scalar->Tensor",  // addcmul, addcdiv
     make<Tensor, const Tensor&, const Tensor&, const Tensor&, const Scalar&>},
    {"Tensor,Scalar?,Scalar?->Tensor",  // clamp
     make<Tensor, const Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&>},
    {"Tensor,ScalarType?->Tensor", make<Tensor, const Tensor&, std::optional<c10::ScalarType>>},  // sum
    {"Tensor,int[],bool->Tensor", make<Tensor, const Tensor&, c10::IntArrayRef, bool>},  // amax
    {"Tensor,int[]?,bool,ScalarType?->Tensor",  // sum.dim_IntList, mean.dim
     make<Tensor, const Tensor&, at::OptionalIntArrayRef, bool, std::optional<c10::ScalarType>>},
    {"Tensor,int,bool->(Tensor,Tensor)", make<T2, const Tensor&, int64_t, bool>},  // max.dim
    // in-place: the first argument written and returned
    {"Tensor(a!)->Tensor(a!)", make<Tensor&, Tensor&>},  // relu_, neg_, ...
    {"Tensor(a!),Tensor->Tensor(a!)", make<Tensor&, Tensor&, const Tensor&>},  // mul_, div_
    {"Tensor(a!),Scalar->Tensor(a!)", make<Tensor&, Tensor&, const Scalar&>},  // clamp_min_
    {"Tensor(a!),Scalar,Scalar->Tensor(a!)", make<Tensor&, Tensor&, const Scalar&, const Scalar&>},
    {"Tensor(a!),Scalar?,Scalar?->Tensor(a!)",  // clamp_
     make<Tensor&, Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&>},
    {"Tensor(a!),Tensor,Scalar->Tensor(a!)", make<Tensor&, Tensor&, const Tensor&, const Scalar&>},  // add_
    {"Tensor(a!),Tensor,Tensor,Scalar->Tensor(a!)",  // addcmul_
     make<Tensor&, Tensor&, const Tensor&, const Tensor&, const Scalar&>},
    {"Tensor(a!),str->Tensor(a!)", make<Tensor&, Tensor&, c10::string_view>},  // gelu_
    {"Tensor(a!),Tensor,bool->Tensor(a!)", make<Tensor&, Tensor&, const Tensor&, bool>},  // copy_
    // out=: the last argument written and returned
    {"Tensor,Tensor,Tensor(a!)->Tensor(a!)", make<Tensor&, const Tensor&, const Tensor&, Tensor&>},  // mul.out
    {"Tensor,Tensor,Scalar,Tensor(a!)->Tensor(a!)",  // add.out
     make<Tensor&, const Tensor&, const Tensor&, const Scalar&, Tensor&>},
    // norms
    {"Tensor,SymInt[],Tensor?,Tensor?,float->(Tensor,Tensor,Tensor)",  // native_layer_norm
     make<T3, const Tensor&, c10::SymIntArrayRef, const OptT&, const OptT&, double>},
    {"Tensor,Tensor?,Tensor?,SymInt,SymInt,SymInt,int,float->(Tensor,Tensor,Tensor)",  // group_norm
     make<T3, const Tensor&, const OptT&, const OptT&, c10::SymInt, c10::SymInt, c10::SymInt, int64_t,
          double>},
    {"Tensor,Tensor?,Tensor?,Tensor?,Tensor?,bool,float,float->(Tensor,Tensor,Tensor)",  // batch_norm
     make<T3, const Tensor&, const OptT&, const OptT&, const OptT&, const OptT&, bool, double, double>},
    {"Tensor,Tensor?,Tensor?,Tensor,Tensor,float,float->(Tensor,Tensor,Tensor)",  // ..._no_training
     make<T3, const Tensor&, const OptT&, const OptT&, const Tensor&, const Tensor&, double, double>},
};

}  // namespace

// "(a!)" only for an argument written in place and a return that is such an argument; any
// other alias annotation (views, several written arguments) keeps the op boxed
std::string schema_shape(const c10::FunctionSchema& s) {
  std::string out;
  int written = 0;
  auto type = [&](const c10::Argument& a) {
    const c10::AliasInfo* ai = a.alias_info();
    if (ai && (!ai->isWrite() || a.real_type()->kind() != c10::TypeKind::TensorType)) return false;
    out += a.real_type()->str();
    if (ai) out += "(a!)";
    return true;
  };
  for (const auto& a : s.arguments()) {
    if (!out.empty()) out += ',';
    if (!type(a)) return "";
    written += a.alias_info() != nullptr;
  }
  if (written > 1) return "";
  out += "->";
  if (s.returns().size() != 1) out += "(";
  for (size_t i = 0; i < s.returns().size(); i++) {
    if (i) out += ',';
    if (!type(s.returns()[i])) return "";
  }
  if (s.returns().size() != 1) out += ")";
  return out;
}

std::optional<torch::CppFunction> make_typed(kf_runtime* rt, std::shared_ptr<const OpSchemaInfo> info,
                                             int device, const c10::OperatorHandle& op,
                                             c10::SafeKernelFunction boxed_orig, c10::SafeKernelFunction orig) {
  const std::string shape = schema_shape(op.schema());
  for (const Variant& v : kVariants) {
    if (shape != v.shape) continue;
    auto st = std::make_shared<TypedState>(rt, std::move(info), device, std::move(boxed_orig),
                                           std::move(orig), op);
    return v.make(std::move(st));
  }
  KF_DEBUG("%s: no typed fast path for (%s)", info->name.c_str(), shape.c_str());
  return std::nullopt;
}

}  // namespace kforge
