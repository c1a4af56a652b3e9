// torch_ext's own state, kept behind kf_runtime.ext so the runtime stays the one owner.
#pragma once

#include <ATen/record_function.h>
#include <torch/library.h>

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "plugin/plugin.h"

namespace kforge {

struct ExtState {
  // The registrations. Never destroyed: the process may still dispatch to them during exit.
  std::unique_ptr<torch::Library> cpu_lib, cuda_lib;
  std::set<std::string> intercepted;  // full names, for the observer to skip
  std::optional<at::CallbackHandle> observer;
};

inline ExtState& ext_state(kf_runtime* rt) {
  if (!kf_runtime_ext(rt)) kf_runtime_set_ext(rt, new ExtState());
  return *static_cast<ExtState*>(kf_runtime_ext(rt));
}

}  // namespace kforge
