// Hot-op discovery beyond the intercept list: a RecordFunction observer that counts every ATen op
// by name with its host self time (children excluded), so stats() shows where a model spends time
// even in ops nothing intercepts yet. Installed only when recording is on (kforge run,
// KFORGE_RECORD=1, KFORGE_TUNE=1): an active observer slows every op a little.
#include <vector>

#include "torch_ext/ext.h"
#include "torch_ext/state.h"

namespace kforge {
namespace {

struct Frame {
  uint64_t t0;
  uint64_t children_ns;
  bool record;
};

// Per-thread stack of open ops, to subtract children from each op's time.
thread_local std::vector<Frame> t_frames;

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  kf_runtime* rt = kf_runtime_get();
  if (!rt || !kf_runtime_ext(rt)) return nullptr;
  bool record = true;
  if (const auto name = fn.operator_name()) {
    const std::string full = name->overload_name.empty() ? name->name : name->name + "." + name->overload_name;
    // intercepted ops are timed by their interceptor; they still count as children here
    record = !static_cast<ExtState*>(kf_runtime_ext(rt))->intercepted.count(full);
  }
  t_frames.push_back(Frame{kf_now_ns(), 0, record});
  return nullptr;
}

void on_exit(const at::RecordFunction& fn, at::ObserverContext*) {
  if (t_frames.empty()) return;
  const Frame f = t_frames.back();
  t_frames.pop_back();
  const uint64_t dur = kf_now_ns() - f.t0;
  if (!t_frames.empty()) t_frames.back().children_ns += dur;
  kf_runtime* rt = kf_runtime_get();
  if (!rt || !f.record) return;
  const uint64_t self = dur > f.children_ns ? dur - f.children_ns : 0;
  const double p = kf_runtime_config(rt)->observer_prob;
  kf_dispatch_observed(rt, fn.name(), self, p >= 1.0 ? 1 : static_cast<uint64_t>(1.0 / p + 0.5));
}

}  // namespace

void set_observer(kf_runtime* rt, bool on) {
  ExtState& st = ext_state(rt);
  // every op first: the observer reads st.intercepted, which must not change while it is on
  if (on && !st.observer) register_ops(rt, true);
  if (on && !st.observer) {
    st.observer = at::addGlobalCallback(at::RecordFunctionCallback(on_enter, on_exit)
                                            .needsInputs(false)
                                            .samplingProb(kf_runtime_config(rt)->observer_prob)
                                            .scopes({at::RecordScope::FUNCTION}));
  } else if (!on && st.observer) {
    at::removeCallback(*st.observer);
    st.observer.reset();
  }
  kf_runtime_set_observer_flag(rt, on);
}

}  // namespace kforge
