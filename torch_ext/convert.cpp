// IValue / Tensor -> plain C descriptors for plugin/.
#include <ATen/Context.h>
#include <ATen/EmptyTensor.h>
#include <ATen/Functions.h>
#include <c10/core/DeviceGuard.h>

#include "torch_ext/ext.h"

namespace kforge {

int to_kf_dtype(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return KF_F32;
    case c10::ScalarType::Half: return KF_F16;
    case c10::ScalarType::BFloat16: return KF_BF16;
    case c10::ScalarType::Double: return KF_F64;
    case c10::ScalarType::Char: return KF_I8;
    case c10::ScalarType::Byte: return KF_U8;
    case c10::ScalarType::Short: return KF_I16;
    case c10::ScalarType::Int: return KF_I32;
    case c10::ScalarType::Long: return KF_I64;
    case c10::ScalarType::Bool: return KF_BOOL;
    case c10::ScalarType::ComplexFloat: return KF_C64;
    case c10::ScalarType::ComplexDouble: return KF_C128;
    case c10::ScalarType::Float8_e4m3fn: return KF_F8E4M3;
    case c10::ScalarType::Float8_e5m2: return KF_F8E5M2;
    default: return KF_DTYPE_UNKNOWN;
  }
}

c10::ScalarType from_kf_dtype(int d) {
  switch (d) {
    case KF_F32: return c10::ScalarType::Float;
    case KF_F16: return c10::ScalarType::Half;
    case KF_BF16: return c10::ScalarType::BFloat16;
    case KF_F64: return c10::ScalarType::Double;
    case KF_I8: return c10::ScalarType::Char;
    case KF_U8: return c10::ScalarType::Byte;
    case KF_I16: return c10::ScalarType::Short;
    case KF_I32: return c10::ScalarType::Int;
    case KF_I64: return c10::ScalarType::Long;
    case KF_BOOL: return c10::ScalarType::Bool;
    case KF_C64: return c10::ScalarType::ComplexFloat;
    case KF_C128: return c10::ScalarType::ComplexDouble;
    case KF_F8E4M3: return c10::ScalarType::Float8_e4m3fn;
    case KF_F8E5M2: return c10::ScalarType::Float8_e5m2;
    default: return c10::ScalarType::Undefined;
  }
}

static int to_kf_device(c10::DeviceType t) {
  switch (t) {
    case c10::DeviceType::CPU: return KF_DEV_CPU;
    case c10::DeviceType::CUDA: return KF_DEV_CUDA;
    default: return KF_DEV_OTHER;
  }
}

// As eager's structured kernels make one (at::detail, no trip through the dispatcher): on the
// CPU, and on CUDA when the inputs came from the allocator registered for CUDA (`seen`: one of
// them; the caching allocator, which picks a graph's or a mem pool's memory itself), under a
// guard for the output's device as empty_strided_cuda does. Otherwise, and when deterministic mode
// wants uninitialized memory filled, at::empty_strided.
at::Tensor empty_output(c10::IntArrayRef sizes, c10::IntArrayRef strides, int dtype, const c10::Device& device,
                        const c10::Allocator* seen) {
  const bool fill = at::globalContext().deterministicAlgorithms() &&
                    at::globalContext().deterministicFillUninitializedMemory();
  if (!fill && device.is_cpu()) return at::detail::empty_strided_cpu(sizes, strides, from_kf_dtype(dtype));
  if (!fill && device.is_cuda() && seen) {
    c10::Allocator* cuda = c10::GetAllocator(c10::DeviceType::CUDA);
    if (cuda == seen) {
      const c10::DeviceGuard guard(device);
      return at::detail::empty_strided_generic(sizes, strides, cuda, c10::DispatchKeySet(c10::DispatchKey::CUDA),
                                               from_kf_dtype(dtype));
    }
  }
  return at::empty_strided(sizes, strides, at::TensorOptions().dtype(from_kf_dtype(dtype)).device(device));
}

// The allocator t's memory came from, when known (a tensor over foreign memory has none).
const c10::Allocator* allocator_of(const at::Tensor& t) {
  if (!t.has_storage()) return nullptr;
  const c10::StorageImpl* s = t.unsafeGetTensorImpl()->unsafe_storage().unsafeGetStorageImpl();
  return s ? s->allocator() : nullptr;
}

bool to_kf_tensor(const at::Tensor& t, kf_tensor* out) {
  if (t.layout() != c10::kStrided || t.dim() > KF_MAX_DIMS) return false;
  out->data = const_cast<void*>(t.const_data_ptr());
  out->dtype = to_kf_dtype(t.scalar_type());
  out->ndim = static_cast<int>(t.dim());
  const c10::IntArrayRef sizes = t.sizes(), strides = t.strides();  // no per-dim bounds checks
  std::copy(sizes.begin(), sizes.end(), out->sizes);
  std::copy(strides.begin(), strides.end(), out->strides);
  out->device_type = to_kf_device(t.device().type());
  out->device_index = t.device().has_index() ? t.device().index() : 0;
  return true;
}

static void kf_sig_device_hint_of(kf_sig* sig, const at::Tensor& t) {
  kf_sig_device_hint(sig, to_kf_device(t.device().type()), t.device().has_index() ? t.device().index() : 0);
}

// A tensor argument: exact when it is a plain strided tensor of a known dtype; otherwise an
// opaque marker that keeps the signature recordable but never servable.
static void sig_tensor(kf_sig* sig, const at::Tensor& t) {
  if (t.unsafeGetTensorImpl()->is_wrapped_number()) {
    // A Python number turned into a tensor: its value and "wrapped" status change type
    // promotion and the result, so both are part of the signature. No device hint: it is a
    // CPU tensor whatever the call's device, and no kernel argument (serve skips it).
    // Read the value directly: t.item() would be another trip through the dispatcher.
    switch (t.scalar_type()) {
      case c10::ScalarType::Double:
        kf_sig_wrapped(sig, KF_F64, *static_cast<const double*>(t.const_data_ptr()), 0);
        break;
      case c10::ScalarType::Long:
        kf_sig_wrapped(sig, KF_I64, 0, *static_cast<const int64_t*>(t.const_data_ptr()));
        break;
      case c10::ScalarType::Bool:
        kf_sig_wrapped(sig, KF_BOOL, 0, *static_cast<const bool*>(t.const_data_ptr()) ? 1 : 0);
        break;
      default:
        kf_sig_opaque(sig, "wrapped-number");
    }
    return;
  }
  const c10::Device dev = t.device();
  const int dev_type = to_kf_device(dev.type()), dev_index = dev.has_index() ? dev.index() : 0;
  if (!t.has_storage() && t.layout() == c10::kStrided && !t.is_meta()) {
    kf_sig_device_hint(sig, dev_type, dev_index);  // kf_sig_tensor_parts gives it otherwise
    kf_sig_opaque(sig, "storage-less tensor");
    return;
  }
  // what to_kf_tensor + kf_sig_tensor would write, without the copy into a kf_tensor
  const int dtype = to_kf_dtype(t.scalar_type());
  const int64_t nd = t.dim();
  if (t.layout() != c10::kStrided || nd > KF_MAX_DIMS || dtype == KF_DTYPE_UNKNOWN ||
      t.is_conj() || t.is_neg()) {
    kf_sig_device_hint(sig, dev_type, dev_index);
    std::string what = std::string(c10::toString(t.scalar_type())) + "/" +
                       c10::str(t.layout()) + (t.is_conj() ? "/conj" : "") +
                       (t.is_neg() ? "/neg" : "") + "/" + std::to_string(t.dim()) + "d";
    kf_sig_opaque(sig, what.c_str());
    return;
  }
  kf_sig_tensor_parts(sig, dtype, dev_type, dev_index, t.const_data_ptr(), static_cast<int>(nd),
                      t.sizes().data(), t.strides().data());
}

bool writes_hidden(const OpSchemaInfo& info, const c10::IValue* args, size_t i) {
  if (i >= 32 || !((info.hidden_writes >> i) & 1u)) return false;
  if (!args[i].isTensor() || !args[i].toTensor().defined()) return false;  // None: nothing written
  if (info.hidden_when < 0) return true;
  const c10::IValue& when = args[info.hidden_when];
  return !when.isBool() || when.toBool();  // not a bool: this torch differs, assume written
}

bool writes_arg(const OpSchemaInfo& info, const c10::IValue* args, size_t i) {
  return info.written[i] || writes_hidden(info, args, i);
}

// A tensor list's elements, get(j) for j < n: exact when every one is a plain strided tensor,
// else an opaque marker with the first element's device.
template <class Get>
static void sig_tensor_elems(kf_sig* sig, size_t n, const Get& get) {
  kf_tensor local[4] = {};  // no heap for the common short list
  std::vector<kf_tensor> heap(n > 4 ? n : 0);
  kf_tensor* ts = n > 4 ? heap.data() : local;
  bool exact = true;
  for (size_t j = 0; j < n && exact; j++) {
    const at::Tensor& t = get(j);
    exact = t.defined() && !t.unsafeGetTensorImpl()->is_wrapped_number() && !t.is_conj() && !t.is_neg() &&
            to_kf_tensor(t, &ts[j]) && ts[j].dtype != KF_DTYPE_UNKNOWN;
  }
  if (exact) {
    kf_sig_tensor_list(sig, ts, static_cast<int>(n));
  } else {
    if (n > 0 && get(0).defined()) kf_sig_device_hint_of(sig, get(0));
    kf_sig_opaque(sig, "tensor-list");
  }
}

void sig_tensor_list(kf_sig* sig, const at::ITensorListRef& l) {
  c10::SmallVector<const at::Tensor*, 8> p;  // random access without a copy of each element
  for (const at::Tensor& t : l) p.push_back(&t);
  sig_tensor_elems(sig, p.size(), [&](size_t j) -> const at::Tensor& { return *p[j]; });
}

// One argument of any type, as build_signature describes it.
void sig_value(kf_sig* sig, const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (t.defined())
      sig_tensor(sig, t);
    else
      kf_sig_none(sig);
  } else if (v.isNone()) {
    kf_sig_none(sig);
  } else if (v.isInt()) {
    kf_sig_int(sig, v.toInt());
  } else if (v.isDouble()) {
    kf_sig_double(sig, v.toDouble());
  } else if (v.isBool()) {
    kf_sig_bool(sig, v.toBool());
  } else if (v.isString()) {
    kf_sig_str(sig, v.toStringRef().c_str());
  } else if (v.isIntList()) {
    const auto l = v.toIntVector();
    kf_sig_int_list(sig, l.data(), static_cast<int>(l.size()));
  } else if (v.isTensorList()) {
    const auto l = v.toTensorList();
    sig_tensor_elems(sig, l.size(), [&](size_t j) { return l.get(j); });
  } else if (v.isDevice()) {
    const c10::Device d = v.toDevice();
    kf_sig_device(sig, to_kf_device(d.type()), d.has_index() ? d.index() : -1);
  } else {
    kf_sig_opaque(sig, v.tagKind().c_str());
  }
}

void sig_tensor_arg(kf_sig* sig, const at::Tensor& t) {
  if (t.defined())
    sig_tensor(sig, t);
  else
    kf_sig_none(sig);
}

bool build_signature(const OpSchemaInfo& info, int call_device, const torch::jit::Stack& stack,
                     kf_sig* sig) {
  if (stack.size() < info.n_args) return false;
  kf_sig_begin_head(sig, &info.head);
  kf_sig_call_device(sig, call_device);
  const c10::IValue* args = stack.data() + (stack.size() - info.n_args);
  // a call on Python numbers alone (TensorIterator converting a wrapped scalar with _to_copy)
  // is the plugin's nothing to serve: it takes no signature slot
  bool real = false, wrapped = false;
  for (size_t i = 0; i < info.n_args; i++) {
    sig_value(sig, args[i]);
    if (!args[i].isTensor()) {
      real = real || args[i].isTensorList() || args[i].isList();
    } else if (const at::Tensor& t = args[i].toTensor(); t.defined()) {
      (t.unsafeGetTensorImpl()->is_wrapped_number() ? wrapped : real) = true;
    }
  }
  return real || !wrapped;
}

}  // namespace kforge
