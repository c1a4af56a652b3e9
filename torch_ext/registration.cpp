// All torch registration lives here: for each op of the intercept list, capture the kernel the
// dispatcher would run on CPU / CUDA, then register an Interceptor on that key that calls it.
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include "torch_ext/ext.h"
#include "torch_ext/state.h"

#include "common/log.h"

namespace kforge {
namespace {

// Silences only torch's "Overriding a previously registered kernel" warning, which our own
// registration triggers by design; every other warning goes to the previous handler.
class OverrideWarningFilter final : public c10::WarningHandler {
 public:
  explicit OverrideWarningFilter(c10::WarningHandler* prev) : prev_(prev) {}
  void process(const c10::Warning& w) override {
    if (w.msg().find("Overriding a previously registered kernel") != std::string::npos) return;
    prev_->process(w);
  }

 private:
  c10::WarningHandler* prev_;
};

std::shared_ptr<OpSchemaInfo> schema_info(const std::string& name, const c10::FunctionSchema& s) {
  auto info = std::make_shared<OpSchemaInfo>();
  info->name = name;
  kf_sig_head_make(&info->head, info->name.c_str());
  info->n_args = s.arguments().size();
  info->n_returns = s.returns().size();
  for (const auto& a : s.arguments()) info->written.push_back(a.alias_info() && a.alias_info()->isWrite());
  for (const auto& r : s.returns()) {
    int alias = -1;
    if (r.alias_info() && r.alias_info()->isWrite()) {
      for (size_t i = 0; i < s.arguments().size(); i++) {
        const auto* ai = s.arguments()[i].alias_info();
        if (ai && ai->isWrite() && ai->beforeSets() == r.alias_info()->beforeSets()) alias = static_cast<int>(i);
      }
    }
    info->return_alias.push_back(alias);
  }
  // writes the schema does not show (plugin/writes.c); kept only where this torch's schema has
  // tensors there, and a bool for the condition (else: written whenever given, to be safe)
  uint32_t hidden = 0;
  int when = -1;
  if (kf_op_hidden_writes(name.c_str(), &hidden, &when)) {
    for (size_t i = 0; i < s.arguments().size() && i < 32; i++) {
      const auto kind = s.arguments()[i].type()->kind();
      const bool tensor = kind == c10::TypeKind::TensorType ||
                          (kind == c10::TypeKind::OptionalType &&
                           s.arguments()[i].type()->containedType(0)->kind() == c10::TypeKind::TensorType);
      if (((hidden >> i) & 1u) && tensor) info->hidden_writes |= 1u << i;
    }
    if (when >= 0 && static_cast<size_t>(when) < s.arguments().size() &&
        s.arguments()[when].type()->kind() == c10::TypeKind::BoolType)
      info->hidden_when = when;
  }
  return info;
}

// Why `key` must not get an interceptor for this op, or nullptr when it may.
const char* skip_reason(const c10::OperatorHandle& op, c10::DispatchKey key) {
  if (key == c10::DispatchKey::CUDA && !c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA))
    return "this torch build has no CUDA";
  // A direct kernel on the backend key would stop CompositeImplicitAutograd from filling the
  // Autograd key: the op would lose its gradient. Never do that.
  if (op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) &&
      !op.hasKernelForDispatchKey(key))
    return "CompositeImplicitAutograd (overriding would break autograd)";
  if (!op.hasComputedKernelForDispatchKey(key)) return "no kernel for this key";
  return nullptr;
}

torch::Library& library_for(ExtState& st, c10::DispatchKey key) {
  auto& lib = key == c10::DispatchKey::CUDA ? st.cuda_lib : st.cpu_lib;
  if (!lib) lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", key, __FILE__, __LINE__);
  return *lib;
}

// The typed fast path (typed.cpp) for an op whose schema has one, unless KFORGE_TYPED=0; false
// when the op gets the boxed interceptor instead (also when torch refuses the C++ signature).
bool register_typed(kf_runtime* rt, ExtState& st, const std::shared_ptr<OpSchemaInfo>& info, int device,
                    const c10::OperatorHandle& op, c10::DispatchKey key, const std::string& impl_name) {
  if (!kf_runtime_config(rt)->typed) return false;
  // two captures of the original kernel, taken before the override: the boxed one for calls
  // that are more than a pass-through, the other called unboxed
  auto kernel = make_typed(rt, info, device, op, op.getComputedKernelForDispatchKey(key),
                           op.getComputedKernelForDispatchKey(key));
  if (!kernel) return false;
  try {
    library_for(st, key).impl(impl_name.c_str(), std::move(*kernel));
  } catch (const std::exception& e) {
    KF_DEBUG("%s: no typed fast path (%s)", info->name.c_str(), e.what());
    return false;
  }
  KF_DEBUG("%s on %s: typed fast path", info->name.c_str(), key == c10::DispatchKey::CUDA ? "CUDA" : "CPU");
  return true;
}

void register_one(kf_runtime* rt, ExtState& st, const std::string& name, int cfg_op) {
  const size_t ns_end = name.find("::");
  const size_t dot = name.find('.', ns_end == std::string::npos ? 0 : ns_end);
  const std::string base = name.substr(0, dot);
  const std::string overload = dot == std::string::npos ? "" : name.substr(dot + 1);
  const auto op = c10::Dispatcher::singleton().findOp(c10::OperatorName(base, overload));
  if (!op) {
    KF_WARN("intercept list: no operator named %s in this torch; skipped", name.c_str());
    const int idx = kf_runtime_add_op(rt, name.c_str(), nullptr, 0);
    kf_runtime_op_key(rt, idx, "all", "unknown operator");
    return;
  }
  const auto& schema = op->schema();
  auto info = schema_info(name, schema);
  info->cfg_op = cfg_op;
  std::vector<const char*> argnames;
  for (const auto& a : schema.arguments()) argnames.push_back(a.name().c_str());
  const int idx = kf_runtime_add_op(rt, name.c_str(), argnames.data(), static_cast<int>(argnames.size()));

  for (const auto key : {c10::DispatchKey::CPU, c10::DispatchKey::CUDA}) {
    const char* key_name = key == c10::DispatchKey::CPU ? "CPU" : "CUDA";
    if (const char* why = skip_reason(*op, key)) {
      kf_runtime_op_key(rt, idx, key_name, why);
      KF_DEBUG("%s on %s: not intercepted (%s)", name.c_str(), key_name, why);
      continue;
    }
    const int device = key == c10::DispatchKey::CUDA ? KF_DEV_CUDA : KF_DEV_CPU;
    const std::string impl_name = name.substr(ns_end + 2);  // "add.Tensor"
    OverrideWarningFilter filter(c10::WarningUtils::get_warning_handler());
    c10::WarningUtils::WarningHandlerGuard guard(&filter);
    if (!register_typed(rt, st, info, device, *op, key, impl_name)) {
      auto orig = op->getComputedKernelForDispatchKey(key);
      auto kernel = torch::CppFunction::makeFromBoxedFunctor(
          std::make_unique<Interceptor>(rt, info, device, std::move(orig)));
      library_for(st, key).impl(impl_name.c_str(), std::move(kernel));
    }
    kf_runtime_op_key(rt, idx, key_name, nullptr);
    st.intercepted.insert(name);
  }
}

}  // namespace

void register_ops(kf_runtime* rt, bool all) {
  ExtState& st = ext_state(rt);
  const kf_config* cfg = kf_runtime_config(rt);
  std::vector<unsigned char> wanted(static_cast<size_t>(cfg->n_ops), all ? 1 : 0);
  if (!all) kf_runtime_cached_ops(rt, wanted.data());
  std::lock_guard<std::mutex> lock(st.reg_mu);
  int added = 0;
  for (int i = 0; i < cfg->n_ops; i++) {
    if (!wanted[static_cast<size_t>(i)] || !st.registered.insert(cfg->ops[i]).second) continue;
    added++;
    try {
      register_one(rt, st, cfg->ops[i], i);
    } catch (const std::exception& e) {
      KF_WARN("could not intercept %s: %s", cfg->ops[i], e.what());
    }
  }
  if (added && st.registered.size() < static_cast<size_t>(cfg->n_ops))
    KF_INFO("intercepting %zu of %d ops: those with kernels in the cache (every op once recording "
            "or tuning begins, or with KFORGE_INTERCEPT=all)", st.registered.size(), cfg->n_ops);
}

}  // namespace kforge
