// torch_ext's own state, kept behind kf_runtime.ext so the runtime stays the one owner.
#pragma once

#include <ATen/record_function.h>
#include <torch/library.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>
#include <set>
#include <string>

#include "plugin/plugin.h"

namespace kforge {

struct ExtState {
  // The registrations. Never destroyed: the process may still dispatch to them during exit.
  std::unique_ptr<torch::Library> cpu_lib, cuda_lib;
  std::set<std::string> intercepted;  // full names, for the observer to skip
  // ops of the list whose registration was tried; grows while the observer is off only (it is
  // turned on after every op is registered), under reg_mu
  std::set<std::string> registered;
  std::mutex reg_mu;
  std::optional<at::CallbackHandle> observer;
  std::unique_ptr<torch::Library> kforge_lib;  // torch.ops.kforge.*
  // Real calls copied for tuning jobs (kf_capture_request), per signature key: each is the
  // call's tensor arguments, taken by torch.ops.kforge.take_captures.
  std::mutex captures_mu;
  std::map<uint64_t, std::vector<std::vector<at::Tensor>>> captures;
};

inline ExtState& ext_state(kf_runtime* rt) {
  if (!kf_runtime_ext(rt)) kf_runtime_set_ext(rt, new ExtState());
  return *static_cast<ExtState*>(kf_runtime_ext(rt));
}

}  // namespace kforge
