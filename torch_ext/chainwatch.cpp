// The write watch of chain serving (chainwatch.h, docs/chains.md "Inference tensors"): while a
// pending chain holds tensors without a version counter, a thread-local RecordFunction callback
// sees every ATen call of this thread and ends the chain before a call that may write one.
//
// Which calls count: those not inside an intercepted call (the plugin's own ATen work and an
// intercepted op's eager internals write only fresh tensors or what the op's own schema says,
// and the op's own call was looked at when it started); of those, a top-level one (not inside
// another call this callback saw) whose schema writes an argument, and at any depth an op that
// writes arguments without its schema saying so: batch norm's running stats (plugin/writes.c,
// and any op with a running_mean / running_var argument: aten::batch_norm passes the user's
// tensors down to a call that writes them). A composite op's other inner writes go to its own
// temporaries (torch's rule: an op writes what its schema marks, the batch norm family aside).
//
// The read watch (deferred mode, docs/chains.md "Deferred mode"): a second callback, with the
// calls' inputs, while outputs a pending chain returned are not written yet; a call taking a
// tensor over their storages, other than the chain's next member, has them written first.
#include "torch_ext/chainwatch.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>

#include "torch_ext/ext.h"

namespace kforge {
namespace {

// Plain data, never destroyed: a call at thread exit may still reach the callback after the
// objects below are gone, and finds `on` cleared.
struct WatchState {
  bool on;
  const at::RecordFunction* top;  // the top-level call running now, or null
  kf_runtime* rt;
  WriteHandler on_write;
  at::CallbackHandle handle;
  char next[96];  // the chain's next member when it writes in place (its own write), else ""
};
thread_local WatchState t_watch{};

struct ReadState {  // plain data too (deferred mode's read watch)
  bool on;
  kf_runtime* rt;
  ReadHandler on_read;
  at::CallbackHandle handle;
  int n;
  const void* storages[kMaxWatchedStorages];
  char next[96];  // "aten::mul.Tensor"
};
thread_local ReadState t_read{};
thread_local bool t_quiet = false;

enum Writes : signed char { kNotAnOp = -1, kReads = 0, kDeclared = 1, kHidden = 2 };

struct Known {
  std::string name, overload;
  Writes writes;
};

// Per operator (keyed by its schema's name string, checked against the strings: an operator
// registered again could reuse the address): whether it writes.
struct OpCache {
  std::unordered_map<const char*, Known> ops;
  ~OpCache() { t_watch.on = t_read.on = false; }
};
thread_local OpCache t_ops;

Writes writes_of(const at::RecordFunction& fn) {
  const char* name = fn.name();
  const char* overload = fn.overload_name();
  auto it = t_ops.ops.find(name);
  if (it != t_ops.ops.end() && it->second.name == name && it->second.overload == overload) return it->second.writes;
  const auto op = fn.operator_name();
  if (!op) return kNotAnOp;  // a named range, not a call: the calls inside it are looked at
  uint32_t hidden_args = 0;
  int when = -1;
  Writes w = kDeclared;  // an operator whose schema cannot be read: assume it writes
  if (kf_op_hidden_writes(op->name.c_str(), &hidden_args, &when)) {
    w = kHidden;
  } else if (auto h = c10::Dispatcher::singleton().findOp(*op); h && h->hasSchema()) {
    w = h->schema().is_mutable() ? kDeclared : kReads;
    // the batch norm family beyond that table: aten::batch_norm, instance_norm and
    // _batch_norm_impl_index pass the running stats down to a call that updates them in place
    for (const auto& a : h->schema().arguments())
      if (w == kReads && (a.name() == "running_mean" || a.name() == "running_var")) w = kHidden;
  }
  if (t_ops.ops.size() >= 4096) t_ops.ops.clear();  // bounded: names of freed ranges never hit
  t_ops.ops[name] = Known{op->name, op->overload_name, w};
  return w;
}

bool is_next(const at::RecordFunction& fn, const char* next) {
  const char* name = fn.name();
  const size_t n = strlen(name);
  if (strncmp(name, next, n) != 0) return false;
  if (next[n] == 0) return true;
  const auto op = fn.operator_name();
  return next[n] == '.' && op && op->overload_name == next + n + 1;
}

std::unique_ptr<at::ObserverContext> on_call(const at::RecordFunction& fn) {
  WatchState& w = t_watch;
  if (!w.on || t_quiet || thread_state().depth > 0) return nullptr;
  if (!w.top && w.next[0] && is_next(fn, w.next)) {  // the chain's own in-place member
    w.top = &fn;
    return nullptr;
  }
  Writes wr;
  try {
    wr = writes_of(fn);
  } catch (...) {
    wr = kDeclared;  // cannot tell: as a write
  }
  if (wr == kHidden || (wr == kDeclared && !w.top)) {
    w.on_write(w.rt);  // ends the watch
    return nullptr;
  }
  if (wr != kNotAnOp && !w.top) w.top = &fn;
  return nullptr;
}


bool over_watched(const at::Tensor& t) {
  if (!t.defined() || !t.has_storage()) return false;
  const void* s = t.storage().unsafeGetStorageImpl();
  for (int i = 0; i < t_read.n; i++)
    if (t_read.storages[i] == s) return true;
  return false;
}

std::unique_ptr<at::ObserverContext> on_read_call(const at::RecordFunction& fn) {
  ReadState& r = t_read;
  if (!r.on || t_quiet || thread_state().depth > 0 || is_next(fn, r.next)) return nullptr;
  bool hit = false;
  for (const c10::IValue& v : fn.inputs()) {
    if (v.isTensor()) hit = over_watched(v.toTensor());
    if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorList().vec()) hit = hit || over_watched(t);
    if (hit) break;
  }
  if (hit) r.on_read(r.rt);  // writes them, ends the watch
  return nullptr;
}

void on_return(const at::RecordFunction& fn, at::ObserverContext*) {
  // a call that started before this watch (or a previous one) never matches: its address is
  // another live frame's
  if (t_watch.top == &fn) t_watch.top = nullptr;
}

}  // namespace

bool watch_begin(kf_runtime* rt, WriteHandler on_write) {
  WatchState& w = t_watch;
  if (w.on) return true;
  if (!at::isRecordFunctionEnabled()) return false;
  (void)t_ops.ops.size();  // constructed now, so that its destructor clears `on` at thread exit
  w.handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_call, on_return).needsInputs(false).scopes({at::RecordScope::FUNCTION}));
  w.top = nullptr;
  w.next[0] = 0;
  w.rt = rt;
  w.on_write = on_write;
  w.on = true;
  return true;
}

void watch_end() {
  WatchState& w = t_watch;
  if (!w.on) return;
  w.on = false;
  w.top = nullptr;
  at::removeCallback(w.handle);
}

void watch_writes_next(const char* next) {
  if (next)
    snprintf(t_watch.next, sizeof t_watch.next, "%s", next);
  else
    t_watch.next[0] = 0;  // every served member passes here: no formatting
}

void watch_forget() { t_watch.on = t_read.on = false; }

bool watch_reads(kf_runtime* rt, const void* const* storages, int n, const char* next, ReadHandler on_read) {
  ReadState& r = t_read;
  if (r.on || n > kMaxWatchedStorages || !at::isRecordFunctionEnabled()) return false;
  (void)t_ops.ops.size();  // its destructor clears `on` at thread exit
  r.n = n;
  for (int i = 0; i < n; i++) r.storages[i] = storages[i];
  snprintf(r.next, sizeof r.next, "%s", next);
  r.rt = rt;
  r.on_read = on_read;
  r.handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_read_call).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
  r.on = true;
  return true;
}

void watch_reads_next(const char* next) { snprintf(t_read.next, sizeof t_read.next, "%s", next); }

void watch_reads_end() {
  ReadState& r = t_read;
  if (!r.on) return;
  r.on = false;
  at::removeCallback(r.handle);
}

WatchQuiet::WatchQuiet() : saved(t_quiet) { t_quiet = true; }
WatchQuiet::~WatchQuiet() { t_quiet = saved; }

bool watching() { return t_watch.on && at::isRecordFunctionEnabled(); }

bool watch_possible() { return t_watch.on || at::isRecordFunctionEnabled(); }

}  // namespace kforge

// Testing: bit 0, this thread is watched; bit 1, it has any thread-local RecordFunction callback.
extern "C" KF_API int kf_chain_thread_watched(void) {
  return (kforge::watching() ? 1 : 0) | (at::hasThreadLocalCallbacks() ? 2 : 0);
}
