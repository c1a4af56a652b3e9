// Library load: create the runtime from the environment and register the interceptors. Runs
// as a static initializer, so `torch.ops.load_library(path)` alone is enough. Never throws:
// a failure leaves torch exactly as it was and is reported through the log.
#include <cstdlib>
#include <torch/version.h>

#include "torch_ext/ext.h"
#include "torch_ext/state.h"

#include "common/log.h"

namespace kforge {
namespace {

kf_runtime* load() {
  kf_config cfg;
  kf_config_from_env(&cfg);
  kf_runtime* rt = nullptr;
  if (kf_runtime_create(&rt, &cfg) != KF_OK) {
    KF_ERROR("could not create the runtime (out of memory); nothing is intercepted");
    return nullptr;
  }
  kf_runtime_set_global(rt);
  // at exit, before libtorch's static destructors (registered earlier, so run later)
  std::atexit([] { kf_runtime_quiesce(kf_runtime_get()); });
  if (cfg.bad_ops[0]) KF_WARN("KFORGE_OPS: ignoring entries %s", cfg.bad_ops);
  if (cfg.bad_env[0]) KF_WARN("%s", cfg.bad_env);
  if (cfg.disable) {
    KF_INFO("KFORGE_DISABLE is set: nothing is intercepted");
    return rt;
  }
  try {
    // the cache first: unless every op is wanted from the start, its entries say which are
    kf_runtime_open_cache(rt, TORCH_VERSION);
    register_ops(rt, cfg.intercept_all != 0);
    register_kforge_ops(rt);
    if (cfg.record) set_observer(rt, true);
  } catch (const std::exception& e) {
    kf_runtime_set_error(rt, "registration failed: %s", e.what());
    KF_ERROR("registration failed: %s", e.what());
  }
  return rt;
}

// The runtime lives until the process exits: the dispatcher may call our kernels until then.
[[maybe_unused]] kf_runtime* const g_loaded = load();

}  // namespace
}  // namespace kforge

extern "C" KF_API kf_status kf_set_observer(kf_runtime* rt, int on) {
  if (!rt) return KF_ERR_INVALID;
  if (kf_runtime_config(rt)->disable) return KF_ERR_UNSUPPORTED;
  try {
    kforge::set_observer(rt, on != 0);
  } catch (const std::exception& e) {
    kf_runtime_set_error(rt, "observer: %s", e.what());
    return KF_ERR_INVALID;
  }
  return KF_OK;
}

extern "C" KF_API kf_status kf_intercept(kf_runtime* rt, int all) {
  if (!rt) return KF_ERR_INVALID;
  if (kf_runtime_config(rt)->disable) return KF_ERR_UNSUPPORTED;
  try {
    kforge::register_ops(rt, all != 0);
  } catch (const std::exception& e) {
    kf_runtime_set_error(rt, "registration: %s", e.what());
    return KF_ERR_INVALID;
  }
  return KF_OK;
}
