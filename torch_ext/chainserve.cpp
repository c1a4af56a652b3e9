// Chain serving (chainserve.h, docs/chains.md): precompute at the head, hand out at each member.
//
// Per thread: at most one pending chain, and per entry the externals of its recent complete runs
// (held weakly, with their version counters). A head with no valid prediction runs eager and
// OBSERVES the chain (learning its externals); with one, the kernel runs at the head and the
// members are CHECKED against eager (first use in the process) or SERVED from its outputs.
// One chain often runs at several places of a forward with other weights (a residual add and
// RMSNorm before attention and before the MLP, in every layer): the prediction is the run one
// period ago, the period being the last one that still predicts a run, else the shortest that
// predicted the last run.
#include "torch_ext/chainserve.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/log.h"
#include "torch_ext/chainwatch.h"

namespace kforge {

constinit thread_local bool t_chain_pending = false;

namespace {

enum class Mode { Observe, Check, Serve };

// How a held tensor is matched: the very TensorImpl; or any tensor over the same storage with
// the same offset, sizes, strides and dtype (a view made anew at each place: rotary's halves of a
// head input, kView, at the head input's version; or its `sin.unsqueeze(1)`, kStorage, predicted
// from an earlier run's storage and held by watching this thread, as it has no version here).
enum class Kind { kExact, kView, kStorage };

using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
using WeakStorage = c10::weak_intrusive_ptr<c10::StorageImpl>;

struct Held {  // a tensor a later member must get, at this version
  at::Tensor t;
  uint32_t version = 0;
  bool versioned = true;  // false: an inference tensor, unchanged while this thread is watched
  Kind kind = Kind::kExact;
  // The user's tensor by identity alone (kExact, t undefined; see weaken): a strong reference
  // taken to a tensor only Python holds, and dropped again, takes the GIL twice (torch keeps the
  // Python object alive while C++ holds the tensor), which was much of a served chain's host time.
  WeakImpl weak{c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>()};
  WeakStorage wstorage{c10::intrusive_ptr<c10::StorageImpl>()};
  bool has_meta = false;  // the member's tensor must still be laid out as `meta`
  kf_tensor meta{};
  c10::Storage storage;  // a predicted external's memory, read by the head's kernel
  bool known() const { return t.defined() || weak._unsafe_get_target() != c10::UndefinedTensorImpl::singleton(); }
  const c10::TensorImpl* impl() const { return t.defined() ? t.unsafeGetTensorImpl() : weak._unsafe_get_target(); }
};

WeakStorage weak_storage_of(const at::Tensor& t) {
  return t.has_storage() ? t.storage().getWeakStorageImpl() : WeakStorage(c10::intrusive_ptr<c10::StorageImpl>());
}

// Held from now on by identity (and, with `meta`, layout): only while the caller's stack still
// holds the tensor, so that dropping ours never takes the GIL.
void weaken(Held& h, bool meta) {
  if (!h.t.defined() || h.kind != Kind::kExact) return;
  if (meta) {
    if (!to_kf_tensor(h.t, &h.meta)) return;
    h.has_meta = true;
    h.wstorage = weak_storage_of(h.t);
  }
  h.weak = WeakImpl(h.t.getIntrusivePtr());
  h.t = at::Tensor();
}

struct RunState {  // a pending chain's state besides its tensors
  kf_chain_entry* e = nullptr;
  const kf_chain_def* d = nullptr;
  Mode mode = Mode::Observe;
  int next = 0;            // the member expected next
  bool in_member = false;  // a member runs eager now (chain_after clears it)
  bool time_members = false;  // the speed guard's eager sample: every member's call is timed...
  bool members_served = false;  // ...each served by its own kernel where it has one (not eager)
  // on the host, a timed head's kernel time and its members' hand-outs so far: one sample of the
  // chain served, taken when it completes (on tiny tensors the hand-outs are what it costs)
  uint64_t kernel_ns = 0, handout_ns = 0;
  bool mispredicted = false;  // a predicted external was another tensor: observed from there
  bool cuda = false;
  void* stream = nullptr;
  // deferred mode (Serve): the kernel runs at the last member; each member handed out before
  // it keeps its call (`calls`), to be run eager into its outputs if the chain cannot complete
  bool deferred = false, timed = false;
};

struct Pending : RunState {
  std::vector<Held> head_in, ext;
  std::vector<std::vector<Held>> seen;        // per member: the outputs its readers must get
  std::vector<std::vector<at::Tensor>> outs;  // per member: the kernel's (Check, Serve)
  // Check: per member, eager's outputs as they came and the op's name, compared with the
  // kernel's only once the run completes (a run dropped before, as every mispredicted place of
  // a model with one weight per layer is until the period is learnt, costs no comparison)
  std::vector<std::vector<at::Tensor>> eager;
  std::vector<std::string> names;
  struct Call {
    EagerOp eager;
    std::vector<c10::IValue> args;
  };
  std::vector<Call> calls;
};

// A remembered run's externals, held weakly: a run long ago must not keep a large tensor made
// for one forward (a mask) alive; one that is gone is no prediction. While a weak reference
// lives, no other tensor can appear at its address.
struct Prediction {
  std::vector<WeakImpl> ext;
  std::vector<uint32_t> version;
  std::vector<char> versioned;  // false: an inference tensor (no version counter)
  std::vector<kf_tensor> meta;  // what each external was: a resize_ or set_ need not bump its version
  // its storage: a view made anew at each place (rotary's sin.unsqueeze(1) in every layer) is
  // gone by the next place, while the storage it views lives on
  std::vector<WeakStorage> storage;
};

bool same_meta(const at::Tensor& t, const kf_tensor& m) {
  kf_tensor now;
  if (!to_kf_tensor(t, &now) || now.data != m.data || now.dtype != m.dtype || now.ndim != m.ndim) return false;
  for (int d = 0; d < m.ndim; d++)
    if (now.sizes[d] != m.sizes[d] || now.strides[d] != m.strides[d]) return false;
  return true;
}

constexpr size_t kHistory = 128;  // runs remembered per chain: two places per layer of 64 layers

constexpr int kMaxOutcomePeriod = 16;

struct History {
  std::deque<Prediction> runs;  // oldest first
  Prediction spare;             // the one that fell off: its vectors filled again by the next run
  size_t period = 1;
  // predicted heads and those whose externals were others: a chain whose places cannot be
  // told apart this way stops predicting (each miss is a launch in vain). A miss of a period
  // that has not predicted a run yet is learning (every place of a model's first forward, XCiT's
  // 36): counted apart, and only more of those than the runs remembered gives up.
  int predicted = 0, missed = 0, learning = 0;
  bool confirmed = false;  // the period predicted a run
  bool given_up() const {
    return (predicted >= 64 && 2 * missed > predicted) || learning > static_cast<int>(kHistory);
  }
  // The outcomes of this thread's last heads, newest in bit 0 (1: completed). One head signature
  // may start the chain at some places of a forward and something else at others (Swin's
  // unshifted blocks run add -> softmax, its shifted ones add -> add -> softmax): the next
  // outcome is the one a period ago, the shortest period (up to 16) under which the last 2 to 4
  // periods repeat, and a head predicted to drop runs eager (observed, so the outcome is learnt).
  uint64_t outcomes = 0;
  int n_outcomes = 0;
  void record(bool completed) {
    outcomes = outcomes << 1 | (completed ? 1u : 0u);
    if (n_outcomes < 64) n_outcomes++;
  }
  bool predicts_drop() const {
    for (int per = 1; per <= kMaxOutcomePeriod; per++) {
      const int w = std::min(n_outcomes - per, 4 * per);
      if (w < std::max(2 * per, 3)) return false;  // not seen repeating yet (nor any longer one)
      const uint64_t mask = (uint64_t{1} << w) - 1;
      if (((outcomes ^ (outcomes >> per)) & mask) == 0) return !((outcomes >> (per - 1)) & 1);
    }
    return false;
  }
};

// The same externals: each the same tensor, or a view at the same place of the same storage.
bool same_tensors(const Prediction& a, const Prediction& b) {
  if (a.ext.size() != b.ext.size()) return false;
  for (size_t i = 0; i < a.ext.size(); i++)
    if (a.ext[i]._unsafe_get_target() != b.ext[i]._unsafe_get_target() &&
        (a.storage[i]._unsafe_get_target() != b.storage[i]._unsafe_get_target() || a.meta[i].data != b.meta[i].data))
      return false;
  return true;
}

// A longer chain predicted to end early at this place, followed by signature alone while a
// shorter one whose members are its first ones serves there, so that its outcome here is still
// learnt (Gemma's norm followed by the residual add at some places, by a linear at others).
struct Shadow {
  kf_chain_entry* e = nullptr;
  int next = 0;  // the member expected next
};

struct ChainThread {
  Pending p;
  Shadow shadow;
  std::unordered_map<const kf_chain_entry*, History> pred;
  ~ChainThread() { watch_forget(); }  // thread exit: the write watch must not reach p any more
};

// Made at a thread's first chain call, destroyed at its exit. Reached through a plain pointer:
// a thread_local with a constructor costs every access an initialization check.
thread_local ChainThread* t_chain_ptr = nullptr;
thread_local bool t_chain_gone = false;
struct ChainThreadOwner {
  bool made = false;
  ~ChainThreadOwner() {
    delete t_chain_ptr;
    t_chain_ptr = nullptr;
    t_chain_gone = true;
  }
};
thread_local ChainThreadOwner t_chain_owner;

// This thread's chain state, made now if need be; nullptr once the thread is exiting.
ChainThread* chain_thread() {
  if (ChainThread* c = t_chain_ptr) return c;
  if (t_chain_gone) return nullptr;
  t_chain_owner.made = true;  // its destructor runs at thread exit from now on
  return t_chain_ptr = new ChainThread;
}

// Inside a call that has this thread's state (every entry point below makes it first).
inline ChainThread& tc() { return *t_chain_ptr; }

struct Bypass {  // our own ATen calls (allocation, comparison) are not the user's
  ThreadState& ts = thread_state();
  bool saved = ts.bypass;
  Bypass() { ts.bypass = true; }
  ~Bypass() { ts.bypass = saved; }
};

// The version counter, or false (an inference tensor has none: nothing can be proven unchanged).
bool version_of(const at::Tensor& t, uint32_t* v) {
  if (!t.defined() || t.is_inference()) return false;
  try {
    *v = t.unsafeGetTensorImpl()->version_counter().current_version();
    return true;
  } catch (...) {
    return false;
  }
}

bool same_place(const at::Tensor& a, const at::Tensor& b) {
  return a.defined() && b.defined() && a.has_storage() && b.has_storage() &&
         a.storage().unsafeGetStorageImpl() == b.storage().unsafeGetStorageImpl() &&
         a.storage_offset() == b.storage_offset() && a.dtype() == b.dtype() && a.sizes() == b.sizes() &&
         a.strides() == b.strides();
}

// The very tensor (or the same view, Kind), unchanged: its version counter, or for an inference
// tensor no write seen on this thread since it was held (any such write ends the pending chain:
// the watch).
bool held_now(const Held& h, const at::Tensor& t) {
  uint32_t v;
  if (!h.known()) return false;
  if (h.kind == Kind::kExact ? t.unsafeGetTensorImpl() != h.impl() : !same_place(h.t, t)) return false;
  if (h.kind == Kind::kStorage || !h.versioned) return watching();
  // a resize_ or set_ need not bump the version
  return version_of(t, &v) && v == h.version && (!h.has_meta || same_meta(t, h.meta));
}

void written(kf_runtime* rt);

// `t` held for a later member: at its version, or (no version counter) watched. False: neither.
bool hold(kf_runtime* rt, const at::Tensor& t, Held* h) {
  h->t = t;
  h->versioned = version_of(t, &h->version);
  return h->versioned || (t.defined() && watch_begin(rt, written));
}

// The call's kernel tensor inputs, numbered as the recorder numbers them (for_kernel_tensors).
c10::SmallVector<at::Tensor, 8> tensor_inputs(const OpSchemaInfo& info, const torch::jit::Stack& stack) {
  c10::SmallVector<at::Tensor, 8> v;
  for_kernel_tensors(stack.data() + (stack.size() - info.n_args), info.n_args,
                     [&v](const at::Tensor& t, size_t, bool) {
                       if (t.defined()) v.push_back(t);
                       return true;
                     });
  return v;
}

void* stream_of(const at::Tensor& t) {
  if (!t.is_cuda()) return nullptr;
  return current_cuda_stream(t.device().index());
}

// As a fresh Pending, with the capacity of its vectors kept: a chain runs at every block of a
// forward, and allocating them anew each time was most of a served chain's host time.
void reset(Pending& p) {
  static_cast<RunState&>(p) = RunState{};
  p.head_in.clear();
  p.ext.clear();
  for (auto& v : p.seen) v.clear();
  for (auto& o : p.outs) o.clear();
  p.eager.clear();
  p.names.clear();
  p.calls.clear();
}

void clear(Pending& p) {
  watch_end();  // nothing is held any more
  watch_reads_end();
  reset(p);
  t_chain_pending = tc().shadow.e != nullptr;
}

// The shadowed chain's next call: its outcome is learnt at the first call that is not its next
// member, or at its last member.
void shadow_step(uint64_t key) {
  Shadow& s = tc().shadow;
  const kf_chain_def* d = kf_chain_entry_def(s.e);
  const bool next = key == d->key[s.next];
  if (next && ++s.next < d->n) return;
  tc().pred[s.e].record(next);
  s = Shadow{};
  t_chain_pending = tc().p.e != nullptr;
}

// Without a prefix of `than`: the longest other entry for its head whose outcomes on this thread
// do not predict a drop, or nullptr. One head signature may start different chains at different
// places (Qwen 3.5 casts to float32 before each norm and before a silu).
kf_chain_entry* sibling(kf_runtime* rt, const kf_chain_entry* than) {
  const uint64_t head = kf_chain_entry_def(than)->key[0];
  kf_chain_entry* best = nullptr;
  for (kf_chain_entry* o = kf_chainserve_next_head(rt, head, nullptr); o; o = kf_chainserve_next_head(rt, head, o)) {
    if (o == than || (best && kf_chain_entry_def(o)->n <= kf_chain_entry_def(best)->n)) continue;
    auto it = tc().pred.find(o);
    if (it == tc().pred.end() || (!it->second.predicts_drop() && !it->second.given_up())) best = o;
  }
  return best;
}

// The entry to start at this head: the longest, or where the longer one's outcomes predict that
// it ends early here (the longer one shadowed) or where its externals cannot be predicted on this
// thread (a residual add's activation), the longest of its prefixes, else a sibling.
kf_chain_entry* head_entry(kf_runtime* rt, uint64_t key) {
  kf_chain_entry* e = kf_chainserve_find(rt, key);
  auto it = e ? tc().pred.find(e) : tc().pred.end();
  if (it == tc().pred.end() || tc().shadow.e) return e;
  const bool unpredictable = it->second.given_up();
  if (!unpredictable && !it->second.predicts_drop()) return e;
  kf_chain_entry* shorter = kf_chainserve_find_prefix(rt, e);
  if (!shorter) shorter = sibling(rt, e);
  if (!shorter) return e;
  if (!unpredictable) {
    tc().shadow = Shadow{e, 1};
    t_chain_pending = true;
  }
  return shorter;
}

// Deferred mode: the members handed out so far, run eager into the outputs they returned (which
// the kernel was to write at the last member), in order. Not counted as a write to them: their
// version counters are eager's (autograd may hold them).
void write_deferred(Pending& p) {
  if (!p.deferred || p.calls.empty()) return;
  WatchQuiet quiet;
  try {
    Bypass bypass;  // the plugin's own calls
    for (size_t k = 0; k < p.calls.size(); k++) {
      torch::jit::Stack st(p.calls[k].args.begin(), p.calls[k].args.end());
      p.calls[k].eager.kernel->callBoxed(p.calls[k].eager.op, p.calls[k].eager.ks, &st);
      at::AutoDispatchBelowADInplaceOrView below;
      for (size_t o = 0; o < p.outs[k].size() && o < st.size(); o++) p.outs[k][o].copy_(st[o].toTensor());
    }
  } catch (const std::exception& ex) {
    KF_ERROR("chain %s: could not write the outputs its members returned (deferred mode): %s", p.d->ops,
             ex.what());
  }
  p.calls.clear();
}

// A drop or a skipped head, for the drop-rate guard (which may detach the entry).
void count_drop(kf_runtime* rt, kf_chain_entry* e, int which) {
  if (kf_chain_entry_count(e, rt, which))
    KF_WARN("chain %s is not served again in this process: its pending state was dropped before "
            "its last member more often than the chain completed", kf_chain_entry_def(e)->ops);
}

// The pending chain cannot go on: release it and count the drop (the guard may detach the
// entry). A prediction that went stale meanwhile (a new weight, a write) is caught at the next
// head by its versions and metadata.
void drop(kf_runtime* rt, const char* why) {
  Pending& p = tc().p;
  if (!p.e) return;
  KF_DEBUG("chain %s: dropped at member %d (%s)", p.d->ops, p.next, why);
  write_deferred(p);
  tc().pred[p.e].record(false);
  if (p.mode != Mode::Observe) count_drop(rt, p.e, KF_CHAIN_DROPPED);
  clear(p);
}

// The write watch saw a call that may write a held inference tensor: it runs eager, after a drop.
void written(kf_runtime* rt) { drop(rt, "a call that may write a held tensor without a version counter"); }

// What member m's input i must be; nullptr when not known yet (an external while observing).
Held* expected(Pending& p, int m, int i) {
  const uint8_t* r = p.d->ref[m][i];
  if (r[0] == KF_CHAIN_IN_HEAD) return &p.head_in[r[1]];
  if (r[0] == KF_CHAIN_IN_MEMBER) return &p.seen[r[1]][r[2]];
  return p.ext[r[1]].known() ? &p.ext[r[1]] : nullptr;
}

enum class Match { Yes, No, OtherExternal };

// Whether the next member's tensor inputs are the expected ones; OtherExternal: all but a
// predicted external are (the chain ran at another place of the model, with another weight).
inline const at::Tensor& tensor_at(const at::Tensor& t) { return t; }
inline const at::Tensor& tensor_at(const at::Tensor* t) { return *t; }

template <class Ins>  // tensors (the boxed path's) or pointers to them (the typed path's)
Match member_inputs_match(Pending& p, const Ins& ins) {
  const int m = p.next;
  if (static_cast<int>(ins.size()) != p.d->n_in[m]) return Match::No;
  bool other_ext = false;
  for (int i = 0; i < p.d->n_in[m]; i++) {
    Held* h = expected(p, m, i);
    if (h && !held_now(*h, tensor_at(ins[i]))) {
      // another external, versioned or an inference tensor (LeViT's attention bias, made once
      // per block under inference_mode): observed from here, so the place is learnt
      if (p.d->ref[m][i][0] != KF_CHAIN_IN_EXT || h->kind == Kind::kView) return Match::No;
      other_ext = true;
    }
    if (!h) {  // observed: the prediction for the next run (its version unused: read at the head)
      Held& x = p.ext[p.d->ref[m][i][1]];
      x.t = tensor_at(ins[i]);
      x.versioned = version_of(x.t, &x.version);
      if (!p.d->deferred) weaken(x, true);  // deferred mode launches with it at the last member
    }
  }
  return other_ext ? Match::OtherExternal : Match::Yes;
}

// A predicted external was another tensor: the kernel's outputs from member m on are wrong for
// this run. The members before m were right (served or checked); from m on the chain runs eager
// and is observed, so that the run is learnt (its externals, the period) when it completes.
void observe_from_here(Pending& p) {
  const int m = p.next;
  History& h = tc().pred[p.e];
  if (++(h.confirmed ? h.missed : h.learning), h.given_up())
    KF_DEBUG("chain %s: its externals cannot be predicted on this thread; it runs eager here", p.d->ops);
  std::vector<bool> used(p.ext.size(), false);  // externals members before m read: verified
  for (int k = 0; k < m; k++)
    for (int i = 0; i < p.d->n_in[k]; i++)
      if (p.d->ref[k][i][0] == KF_CHAIN_IN_EXT) used[p.d->ref[k][i][1]] = true;
  for (size_t e = 0; e < p.ext.size(); e++)
    if (!used[e]) p.ext[e] = Held{};
  for (int k = m; k < p.d->n; k++) p.seen[k].clear();
  p.outs.clear();
  p.eager.clear();
  p.names.clear();
  p.mispredicted = p.mode != Mode::Observe;
  p.mode = Mode::Observe;
}

// Counted as served, untimed: a hand-out is no sample of a kernel's speed (the speed guard's).
void served(kf_runtime* rt, kf_call& call) {
  call.time_it = call.eager_sample = 0;
  kf_dispatch_end(rt, &call, 1, nullptr);
}

void replace_args(const OpSchemaInfo& info, torch::jit::Stack* stack, const std::vector<at::Tensor>& outs) {
  torch::jit::drop(*stack, info.n_args);
  for (const at::Tensor& t : outs) stack->emplace_back(t);
}

// The last member passed: the chain completed.
void complete(kf_runtime* rt) {
  Pending& p = tc().p;
  if (p.kernel_ns && p.mode == Mode::Serve) kf_chain_entry_add_sample(p.e, p.kernel_ns + p.handout_ns);
  if (p.mode != Mode::Observe) kf_chain_entry_count(p.e, rt, KF_CHAIN_COMPLETED);
  if (p.mispredicted) kf_chain_entry_count(p.e, rt, KF_CHAIN_MISPREDICTED);
  if (p.mode == Mode::Check) kf_chain_entry_enable(p.e);
  History& h = tc().pred[p.e];
  h.record(true);
  if (p.mode != Mode::Observe) h.confirmed = true;  // predicted, and right
  Prediction& pr = h.spare;
  pr.ext.clear();
  pr.version.clear();
  pr.versioned.clear();
  pr.meta.assign(p.ext.size(), kf_tensor{});
  pr.storage.clear();
  bool ok = true;
  for (size_t i = 0; i < p.ext.size(); i++) {
    if (p.d->view_head[i] >= 0) {  // taken at the head: nothing to predict
      pr.ext.emplace_back(c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>());
      pr.storage.emplace_back(c10::intrusive_ptr<c10::StorageImpl>());
      pr.version.push_back(0);
      pr.versioned.push_back(1);
      continue;
    }
    const Held& x = p.ext[i];
    if (!x.t.defined()) {  // held by identity since its member (or predicted): as it was there
      ok = x.has_meta && x.known();
      if (!ok) break;
      pr.meta[i] = x.meta;
      pr.ext.push_back(x.weak);
      pr.storage.push_back(x.wstorage);
    } else {
      ok = to_kf_tensor(x.t, &pr.meta[i]);
      if (!ok) break;
      pr.ext.emplace_back(x.t.getIntrusivePtr());
      pr.storage.push_back(weak_storage_of(x.t));
    }
    pr.version.push_back(x.version);
    pr.versioned.push_back(x.versioned);
  }
  if (ok) {
    // the known period first: it predicts a steady model's every run (a scan costs one
    // comparison per place of the chain in a forward)
    const size_t n = h.runs.size();
    if (h.period > n || !same_tensors(h.runs[n - h.period], pr))
      for (size_t per = 1; per <= n; per++)
        if (same_tensors(h.runs[n - per], pr)) {
          h.confirmed = h.confirmed && per == h.period;
          h.period = per;
          break;
        }
    h.runs.push_back(std::move(pr));
    if (h.runs.size() > kHistory) {
      h.spare = std::move(h.runs.front());
      h.runs.pop_front();
    }
  }
  clear(p);
}

// Member m's output written in place by a later member (deferred mode): its value is gone by the
// chain's end, so a check compares the last writer's alone.
bool overwritten(const kf_chain_def* d, int m) {
  const int root = d->writes_of[m] >= 0 ? d->writes_of[m] : m;
  for (int j = m + 1; j < d->n; j++)
    if (d->writes_of[j] == root) return true;
  return false;
}

// The version member m's output has once it returned, from its allocation's: each in-place member
// up to m that writes it bumps its counter on the way out (ADInplaceOrView, above the plugin).
uint32_t inplace_writes(const kf_chain_def* d, int m) {
  uint32_t n = 0;
  for (int j = 1; j <= m && d->writes_of[m] >= 0; j++) n += d->writes_of[j] == d->writes_of[m];
  return n;
}

// Every member's outputs, allocated as eager lays them out, on the device of `like` (a head input).
bool allocate(const kf_chain_def* d, const at::Tensor& like, std::vector<std::vector<at::Tensor>>* outs) {
  const c10::Device device = like.device();
  const c10::Allocator* seen = allocator_of(like);
  outs->resize(d->n);
  for (int m = 0; m < d->n; m++) {
    (*outs)[m].clear();
    if (d->writes_of[m] >= 0) {  // an in-place member's output is the tensor it writes
      (*outs)[m].push_back((*outs)[d->writes_of[m]][0]);
      continue;
    }
    for (int o = 0; o < d->outs[m].n; o++) {
      const auto& l = d->outs[m].o[o];
      (*outs)[m].push_back(
          empty_output(c10::IntArrayRef(l.sizes, l.ndim), c10::IntArrayRef(l.strides, l.ndim), l.dtype, device, seen));
    }
  }
  return true;
}

// The speed guard's sample of a served head (kf_chain_time_start): cancelled unless launched.
struct KernelTimer {
  kf_chain_entry* e;
  void* stream;
  kf_chain_timer t{};
  KernelTimer(kf_chain_entry* e, bool on, bool cuda, void* stream) : e(e), stream(stream) {
    if (on) kf_chain_time_start(e, cuda, stream, &t);
  }
  void launched() { kf_chain_time_end(e, 1, stream, &t); }
  ~KernelTimer() { kf_chain_time_end(e, 0, stream, &t); }
};

// The kernel at the head: inputs (`head`), externals, then every member's outputs. False: not
// launched. Timed: from before the outputs are allocated, as a served call is.
// `fresh`: into outputs allocated now (else p.outs, deferred mode's handed-out ones).
bool launch(kf_runtime* rt, kf_chain_entry* e, Pending& p, c10::ArrayRef<const at::Tensor*> head, bool timed,
            bool fresh = true) {
  const kf_chain_def* d = p.d;
  kf_tensor ts[KF_CHAIN_MAX_ARGS];
  int n = 0;
  KernelTimer timer(e, timed && p.cuda, p.cuda, p.stream);
  const uint64_t t0 = timed && !p.cuda ? kf_now_ns() : 0;
  try {
    Bypass bypass;
    if (fresh) allocate(d, *head[0], &p.outs);
    for (const at::Tensor* t : head)
      if (!to_kf_tensor(*t, &ts[n++])) return false;
    for (const Held& h : p.ext) {
      if (h.t.defined() ? !to_kf_tensor(h.t, &ts[n]) : !h.storage) return false;
      if (!h.t.defined()) ts[n] = h.meta;  // predicted, not locked (Held): its memory is held
      if (ts[n].device_type != ts[0].device_type || ts[n].device_index != ts[0].device_index) return false;
      n++;
    }
    for (int m = 0; m < d->n; m++)
      for (const at::Tensor& t : p.outs[m]) {
        if (d->writes_of[m] >= 0) break;  // written through its member's output, not passed again
        if (!to_kf_tensor(t, &ts[n++])) return false;
        if (p.mode == Mode::Check) poison(t);  // an output the kernel forgets cannot match by luck
      }
  } catch (...) {
    return false;  // e.g. out of memory: the head runs eager
  }
  const int rc = kf_kernel_launch(kf_chain_entry_kernel(e), ts, n, p.stream);
  if (rc == 0) {
    timer.launched();  // may detach the entry (slower than eager): this head still serves
    if (t0) p.kernel_ns = std::max<uint64_t>(kf_now_ns() - t0, 1);
    return true;
  }
  if (rc != KF_KERNEL_LATER) {
    char why[96];
    snprintf(why, sizeof why, "its kernel returned %d", rc);
    if (kf_chain_entry_refuse(e, rt, why, 0))
      KF_WARN("chain kernel for %s returned %d; it is not served again in this process (eager runs "
              "instead)", d->ops, rc);
  }
  return false;
}

// Member m comes next: the write watch lets its call through when it writes the chain's own
// output in place (deferred mode's relu_ after a batch norm).
void expect_next(const Pending& p, int m) {
  watch_writes_next(m < p.d->n && p.d->writes_of[m] >= 0 ? p.d->op[m] : nullptr);
}

// Deferred mode: an output read before the chain could write it is written now.
void read_early(kf_runtime* rt) { drop(rt, "a call reads an output before the chain's last member"); }

// The call's arguments as they are (deferred mode runs it eager later if it must).
std::vector<c10::IValue> args_of(const OpSchemaInfo& info, const torch::jit::Stack& stack) {
  return std::vector<c10::IValue>(stack.end() - static_cast<std::ptrdiff_t>(info.n_args), stack.end());
}

// Deferred mode's head inputs, held since the head.
c10::SmallVector<const at::Tensor*, 8> head_of(const Pending& p) {
  c10::SmallVector<const at::Tensor*, 8> v;
  for (const Held& h : p.head_in) v.push_back(&h.t);
  return v;
}

// Deferred mode at the last member: every input is known; the kernel writes every member's
// outputs. Inputs held since their call must be unchanged (a later write would differ from what
// eager read there). False: not launched (the caller drops, which writes the handed-out ones).
bool launch_deferred(kf_runtime* rt, Pending& p) {
  for (const Held& h : p.head_in)
    if (!held_now(h, h.t)) return false;
  for (const Held& h : p.ext)
    if (!held_now(h, h.t)) return false;
  return launch(rt, p.e, p, head_of(p), p.timed, false);
}

// A tensor over `storage` laid out as `m` was (a view of the earlier run, gone since); undefined
// when the storage is gone too.
at::Tensor at_place(const WeakStorage& storage, const kf_tensor& m) {
  auto st = storage.lock();
  if (!st) return {};
  Bypass bypass;
  const c10::Storage s(std::move(st));
  const int64_t item = c10::elementSize(from_kf_dtype(m.dtype));
  const int64_t off = (static_cast<const char*>(m.data) - static_cast<const char*>(s.data())) / item;
  return at::empty({0}, at::TensorOptions().dtype(from_kf_dtype(m.dtype)).device(s.device()))
      .set_(s, off, c10::IntArrayRef(m.sizes, m.ndim), c10::IntArrayRef(m.strides, m.ndim));
}

// Whether a tensor held weakly, alive, is at version v: its counter outlives release_resources
// (a weak reference keeps the TensorImpl).
bool version_is(const c10::TensorImpl* impl, uint32_t v) {
  try {
    return impl->version_counter().current_version() == v;
  } catch (...) {
    return false;
  }
}

// The memory `m` was in, still there (its storage alive and not reallocated since): held in `out`.
bool memory_of(const WeakStorage& w, const kf_tensor& m, c10::Storage* out) {
  auto st = w.lock();
  if (!st) return false;
  c10::Storage s(std::move(st));
  int64_t last = 0;  // the last element's offset; -1: empty
  for (int d = 0; d < m.ndim && last >= 0; d++) last = m.sizes[d] == 0 ? -1 : last + (m.sizes[d] - 1) * m.strides[d];
  const char* base = static_cast<const char*>(s.data());
  const char* at = static_cast<const char*>(m.data);
  const int64_t item = static_cast<int64_t>(c10::elementSize(from_kf_dtype(m.dtype)));
  if (last >= 0 && (!base || at < base || at + (last + 1) * item > base + s.nbytes())) return false;
  *out = std::move(s);
  return true;
}

// Member m handed out (Serve, not deferred): the caller's stack holds its outputs from here, and
// ours go while it does (Held).
void handed_out(Pending& p, int m) {
  if (p.deferred) return;
  for (Held& h : p.seen[m]) weaken(h, false);
  for (at::Tensor& t : p.outs[m]) t = at::Tensor();
}

// A later member handed out (its outputs given to the caller): a timed host head's hand-out
// time, and the chain complete at its last member.
void member_handed_out(kf_runtime* rt, Pending& p, int m, uint64_t hand_t0) {
  handed_out(p, m);
  if (hand_t0) p.handout_ns += kf_now_ns() - hand_t0;
  if (p.next == p.d->n) complete(rt);
}

// The head: `ins` its kernel tensor arguments; its outputs, when served, replace its arguments on
// `stack`, or without one (the typed path, never for a deferred chain) go to `outs`.
bool start_head(kf_runtime* rt, kf_chain_entry* e, const OpSchemaInfo& info, kf_call& call,
                c10::ArrayRef<const at::Tensor*> ins, torch::jit::Stack* stack, ChainStep* step,
                const EagerOp* eager, c10::SmallVector<at::Tensor, 4>* outs) {
  const kf_chain_def* d = kf_chain_entry_def(e);
  if (d->n_head < 1 || static_cast<int>(ins.size()) != d->n_head || (!stack && d->deferred)) return false;
  Pending& p = tc().p;  // none is pending: built in place, on the vectors of earlier runs
  struct Undo {            // and emptied again unless it starts
    Pending& p;
    bool keep = false;
    ~Undo() {
      if (!keep) reset(p);
    }
  } undo{p};
  p.e = e;
  p.d = d;
  p.cuda = ins[0]->is_cuda();
  try {
    p.stream = stream_of(*ins[0]);
  } catch (...) {
    return false;
  }
  // an inference tensor read or made (outputs as eager allocates them: inference tensors under
  // inference mode) is held unchanged by watching this thread's writes, from the head's return
  // on (begun after the launch: the plugin's own allocations need no watching)
  bool watch = c10::InferenceMode::is_enabled();
  for (const at::Tensor* t : ins) {
    Held& h = p.head_in.emplace_back();
    if (d->deferred)  // it launches with them at the last member
      h.t = *t;
    else
      h.weak = WeakImpl(t->getIntrusivePtr());  // by identity (Held)
    h.versioned = version_of(*t, &h.version);
    watch = watch || !h.versioned;
  }
  if (watch && !watch_possible()) return false;
  const int state = kf_chain_entry_state(e);
  // the check compares on the host: never while a CUDA graph is captured (asked of the driver
  // only then: a serving entry's heads need no such call)
  if (state != KF_CHAIN_SERVING && p.cuda && kf_runtime_capturing(rt, p.stream)) return false;
  p.ext.resize(d->n_ext);
  p.seen.resize(d->n);
  int n_views = 0;
  for (int x = 0; x < d->n_ext; x++) n_views += d->view_head[x] >= 0;
  bool predicted = d->n_ext == n_views || d->deferred;  // deferred: taken at their members
  if (d->deferred && p.cuda && kf_runtime_capturing(rt, p.stream)) return false;
  auto it = tc().pred.find(e);
  if (!predicted && it != tc().pred.end() && !it->second.given_up() &&
      it->second.runs.size() >= it->second.period) {
    const Prediction& pr = it->second.runs[it->second.runs.size() - it->second.period];
    predicted = static_cast<int>(pr.ext.size()) == d->n_ext;
    for (size_t i = 0; predicted && i < pr.ext.size(); i++) {
      if (d->view_head[i] >= 0) continue;
      Held& h = p.ext[i];
      if (pr.versioned[i] && !pr.ext[i].expired()) {
        // not locked (Held): alive, at its version, its memory where it was; that it is the
        // member's argument, laid out so, is checked at the member
        h.weak = pr.ext[i];
        h.wstorage = pr.storage[i];
        h.version = pr.version[i];
        h.meta = pr.meta[i];
        h.has_meta = true;
        predicted = version_is(pr.ext[i]._unsafe_get_target(), h.version) && memory_of(h.wstorage, h.meta, &h.storage);
        continue;
      }
      at::Tensor t;
      if (!pr.versioned[i])
        if (auto strong = pr.ext[i].lock()) t = at::Tensor(std::move(strong));
      if (!t.defined()) t = at_place(pr.storage[i], pr.meta[i]);
      if (t.defined() && watch_possible()) {
        // an inference tensor, or a view made anew whose storage lives on: held by the watch
        h = Held{};
        h.t = std::move(t);
        h.versioned = false;
        h.kind = Kind::kStorage;
        watch = true;
        predicted = same_meta(h.t, pr.meta[i]);
      } else {
        predicted = false;
      }
    }
    if (predicted)
      it->second.predicted++;
    else
      std::fill(p.ext.begin(), p.ext.end(), Held{});
  }
  for (int x = 0; x < d->n_ext; x++) {  // views of the head's inputs, taken now
    const int hi = d->view_head[x];
    if (hi < 0) continue;
    const at::Tensor& base = *ins[hi];
    const int64_t item = static_cast<int64_t>(base.itemsize());
    if (!base.has_storage() || d->view_off[x] % item) return false;
    Held h = p.head_in[hi];
    h.kind = Kind::kView;
    Bypass bypass;
    h.t = base.as_strided(c10::IntArrayRef(d->view_sizes[x], d->view_ndim[x]),
                          c10::IntArrayRef(d->view_strides[x], d->view_ndim[x]),
                          base.storage_offset() + d->view_off[x] / item);
    p.ext[x] = std::move(h);
  }
  p.mode = !predicted ? Mode::Observe : state == KF_CHAIN_SERVING ? Mode::Serve : Mode::Check;
  if (p.mode != Mode::Observe && it != tc().pred.end() && it->second.predicts_drop()) {
    p.mode = Mode::Observe;
    count_drop(rt, e, KF_CHAIN_SKIPPED);
  }
  // an observed run (no prediction yet, or a drop predicted) only learns the chain's outcome and
  // externals: its members run as without chains, each by its own kernel where one is attached
  p.members_served = p.mode == Mode::Observe;
  if (p.mode == Mode::Observe) kf_chain_entry_count(e, rt, KF_CHAIN_OBSERVED);
  // the speed guard: time this head's kernel, or run the members (timed) instead
  const int plan = p.mode == Mode::Serve ? kf_chain_entry_plan(e, p.cuda, p.stream) : KF_CHAIN_PLAN_SERVE;
  if (plan == KF_CHAIN_PLAN_EAGER || plan == KF_CHAIN_PLAN_MEMBERS) {
    p.mode = Mode::Observe, p.time_members = true;
    p.members_served = plan == KF_CHAIN_PLAN_MEMBERS;
  }
  if (p.mode != Mode::Observe && d->deferred) {  // outputs now, the kernel at the last member
    try {
      Bypass bypass;
      allocate(d, *ins[0], &p.outs);
    } catch (...) {
      return false;
    }
    p.deferred = p.mode == Mode::Serve;
    p.timed = plan == KF_CHAIN_PLAN_TIMED;
    watch = watch || p.deferred;
    kf_chain_entry_count(e, rt, KF_CHAIN_HEADS);
  } else if (p.mode != Mode::Observe) {
    if (!launch(rt, e, p, ins, plan == KF_CHAIN_PLAN_TIMED)) return false;
    kf_chain_entry_count(e, rt, KF_CHAIN_HEADS);
  }
  p.next = 1;
  undo.keep = true;
  t_chain_pending = true;
  if (watch && !watch_begin(rt, written)) {
    drop(rt, "this thread's calls cannot be watched");
    return false;
  }
  expect_next(tc().p, 1);
  Pending& q = tc().p;
  if (q.deferred) {
    const void* st[kMaxWatchedStorages];
    int n = 0;
    for (const auto& mo : q.outs)
      for (const at::Tensor& t : mo)
        if (n < kMaxWatchedStorages) st[n++] = t.storage().unsafeGetStorageImpl();
    q.calls.push_back({*eager, args_of(info, *stack)});
    if (!watch_reads(rt, st, n, d->op[1], read_early)) {
      drop(rt, "this thread's calls cannot be watched");
      return false;
    }
  }
  if (q.mode == Mode::Serve) {
    for (int m = 0; m < d->n; m++)
      for (const at::Tensor& t : q.outs[m]) {
        Held h;
        if (!hold(rt, t, &h)) {  // not expected: the watch began above when outputs are inference tensors
          drop(rt, "an output that cannot be held");
          return false;
        }
        if (h.versioned) h.version += inplace_writes(d, m);
        q.seen[m].push_back(std::move(h));
      }
    served(rt, call);
    if (stack)
      replace_args(info, stack, q.outs[0]);
    else
      for (at::Tensor& t : q.outs[0]) outs->push_back(std::move(t));
    handed_out(q, 0);
    return true;
  }
  q.next = 0;  // chain_after takes the head's eager outputs as member 0's
  q.in_member = true;
  if (!q.members_served) call.kernel = nullptr;
  if (q.time_members) call.time_it = 1;
  step->active = true;
  return false;
}

}  // namespace

void chain_switched_off(kf_runtime* rt) {
  if (!t_chain_ptr) return;
  tc().shadow = Shadow{};  // its calls are not seen while off: nothing learnt
  try {
    drop(rt, "the plugin was switched off");
  } catch (...) {
  }
}

ChainStep::~ChainStep() {
  if (active && t_chain_ptr && tc().p.e && tc().p.in_member) drop(nullptr, "the call raised");
}

bool chain_before(kf_runtime* rt, const OpSchemaInfo& info, kf_call& call, torch::jit::Stack* stack,
                  ChainStep* step, const EagerOp& eager) {
  if (!chain_thread()) return false;
  Pending& p = tc().p;
  const uint64_t key = call.slot ? kf_slot_key(call.slot) : 0;
  const uint64_t hand_t0 = p.kernel_ns ? kf_now_ns() : 0;  // a timed host head's hand-out
  try {
    if (tc().shadow.e) shadow_step(key);
    if (p.e) {
      const auto ins = tensor_inputs(info, *stack);
      bool same_stream = true;
      if (p.cuda) same_stream = !ins.empty() && ins[0].is_cuda() && stream_of(ins[0]) == p.stream;
      if (p.in_member || key != p.d->key[p.next]) {
        drop(rt, p.in_member ? "a member did not complete" : "not the next member");
      } else if (Match mt = same_stream ? member_inputs_match(p, ins) : Match::No; mt == Match::No) {
        drop(rt, "the next member with other tensors, or on another stream");
      } else if (mt == Match::OtherExternal && (observe_from_here(p), member_inputs_match(p, ins) != Match::Yes)) {
        drop(rt, "the next member with other tensors");
      } else if (p.mode == Mode::Serve) {
        const int m = p.next;
        if (p.deferred && m + 1 == p.d->n && !launch_deferred(rt, p)) {
          drop(rt, "an input changed before the last member, or the kernel did not launch");
          return false;  // this member runs eager, on the outputs the drop wrote
        }
        if (p.deferred && m + 1 < p.d->n) {
          p.calls.push_back({eager, args_of(info, *stack)});
          watch_reads_next(p.d->op[m + 1]);
        }
        expect_next(p, ++p.next);
        served(rt, call);
        replace_args(info, stack, p.outs[m]);
        member_handed_out(rt, p, m, hand_t0);
        return true;
      } else {
        p.in_member = true;
        if (!p.members_served) call.kernel = nullptr;  // checked and observed against eager itself
        if (p.time_members) call.time_it = 1;
        step->active = true;
        return false;
      }
    }
    if (!call.slot || !kf_chainserve_active(rt)) return false;
    kf_chain_entry* e = head_entry(rt, key);
    if (!e) return false;
    const auto ins = tensor_inputs(info, *stack);
    c10::SmallVector<const at::Tensor*, 8> ptrs;
    for (const at::Tensor& t : ins) ptrs.push_back(&t);
    return start_head(rt, e, info, call, ptrs, stack, step, &eager, nullptr);
  } catch (...) {
    if (tc().p.e) drop(rt, "an error");
    step->active = false;
    return false;  // the normal path runs the call
  }
}

bool chain_hand_out(kf_runtime* rt, kf_call& call, c10::ArrayRef<const at::Tensor*> ins, size_t n_outs,
                    c10::SmallVector<at::Tensor, 4>* outs) {
  if (!t_chain_ptr) return false;
  Pending& p = tc().p;
  if (!p.e || p.mode != Mode::Serve || p.deferred || p.in_member || tc().shadow.e || !call.slot ||
      kf_slot_key(call.slot) != p.d->key[p.next] || p.outs[p.next].size() != n_outs)
    return false;
  const uint64_t hand_t0 = p.kernel_ns ? kf_now_ns() : 0;
  try {
    if (p.cuda && (ins.empty() || !ins[0]->is_cuda() || stream_of(*ins[0]) != p.stream)) return false;
    if (member_inputs_match(p, ins) != Match::Yes) return false;
  } catch (...) {
    return false;
  }
  const int m = p.next++;
  served(rt, call);
  for (at::Tensor& t : p.outs[m]) outs->push_back(std::move(t));
  member_handed_out(rt, p, m, hand_t0);
  return true;
}

ChainHead chain_head_typed(kf_runtime* rt, const OpSchemaInfo& info, kf_call& call,
                           c10::ArrayRef<const at::Tensor*> ins, size_t n_outs, c10::SmallVector<at::Tensor, 4>* outs,
                           ChainStep* step) {
  ChainThread* c = chain_thread();
  if (!c || c->p.e || c->shadow.e || !call.slot || !kf_chainserve_active(rt)) return ChainHead::kNotMine;
  // nothing done yet: a deferred chain (its head's arguments kept, boxed) or another output
  // count goes the boxed way
  const uint64_t key = kf_slot_key(call.slot);
  for (kf_chain_entry* o = kf_chainserve_next_head(rt, key, nullptr); o; o = kf_chainserve_next_head(rt, key, o))
    if (kf_chain_entry_def(o)->deferred || kf_chain_entry_def(o)->outs[0].n != static_cast<int>(n_outs))
      return ChainHead::kNotMine;
  try {
    kf_chain_entry* e = head_entry(rt, key);
    if (e && start_head(rt, e, info, call, ins, nullptr, step, nullptr, outs)) return ChainHead::kServed;
  } catch (...) {
    if (tc().p.e) drop(rt, "an error");
    step->active = false;
  }
  return step->active ? ChainHead::kEager : ChainHead::kNormal;
}

// The kernel disagrees with eager at member m's output o: the entry is refused (its cache entry
// disabled); eager's results were used throughout. Returns false.
static bool refuse_mismatch(kf_runtime* rt, int m, const std::string& name, int o, const std::string& why) {
  Pending& p = tc().p;
  char reason[512];
  snprintf(reason, sizeof reason, "member %d (%s), output %d: %s", m, name.c_str(), o, why.c_str());
  kf_chain_entry* e = p.e;
  const std::string ops = p.d->ops;
  tc().pred.erase(e);
  clear(p);
  if (kf_chain_entry_refuse(e, rt, reason, 1))
    KF_WARN("chain kernel for %s disagrees with eager (%s); it is disabled, eager's results are used",
            ops.c_str(), reason);
  return false;
}

// A checked run completed: every member's kernel outputs against eager's (false: refused).
static bool check_run(kf_runtime* rt) {
  Pending& p = tc().p;
  if (p.eager.size() != static_cast<size_t>(p.d->n)) throw std::runtime_error("the check kept no outputs");
  for (int m = 0; m < p.d->n; m++)
    for (size_t o = 0; o < p.eager[m].size() && !overwritten(p.d, m); o++) {
      std::string why;
      Bypass bypass;
      if (!matches_eager(p.outs[m][o], p.eager[m][o], p.d->atol, p.d->rtol, &why))
        return refuse_mismatch(rt, m, p.names[m], static_cast<int>(o), why);
    }
  return true;
}

void chain_after(kf_runtime* rt, const OpSchemaInfo& info, const torch::jit::Stack& stack, ChainStep* step) {
  const size_t n = std::min(stack.size(), info.n_returns);
  chain_after(rt, info, c10::ArrayRef<c10::IValue>(stack.data() + (stack.size() - n), n), step);
}

void chain_after(kf_runtime* rt, const OpSchemaInfo& info, c10::ArrayRef<c10::IValue> rets, ChainStep* step) {
  step->active = false;
  if (!t_chain_ptr) return;
  Pending& p = tc().p;
  if (!p.e || !p.in_member) return;
  p.in_member = false;
  const int m = p.next;
  const kf_out_layout& l = p.d->outs[m];
  bool completed = false;
  try {
    if (rets.size() != info.n_returns || static_cast<int>(info.n_returns) != l.n) {
      drop(rt, "its outputs are not the entry's");
      return;
    }
    for (int o = 0; o < l.n; o++) {
      if (!rets[o].isTensor()) {
        drop(rt, "a non-tensor output");
        return;
      }
      const at::Tensor& t = rets[o].toTensor();
      Held h;
      if (!hold(rt, t, &h)) {
        drop(rt, "an output without a version counter, on a thread that cannot be watched");
        return;
      }
      if (p.d->writes_of[m] >= 0 && h.versioned) h.version++;  // bumped on its way out, above us
      p.seen[m].push_back(std::move(h));
      if (p.mode != Mode::Check) continue;
      if (p.outs[m][o].strides() != t.strides()) {
        refuse_mismatch(rt, m, info.name, o, "output strides differ from eager");
        return;
      }
      if (p.eager.size() <= static_cast<size_t>(m)) p.eager.resize(p.d->n), p.names.resize(p.d->n);
      Bypass bypass;
      p.eager[m].push_back(t.clone());  // as it is now: a later in-place member may change t
      p.names[m] = info.name;
    }
    expect_next(p, ++p.next);
    if (p.next == p.d->n && p.mode == Mode::Check && p.d->deferred && !launch(rt, p.e, p, head_of(p), false)) {
      clear(p);  // deferred mode's check launches now, every input known; not launched: not checked
      return;
    }
    completed = p.next == p.d->n && (p.mode != Mode::Check || check_run(rt));
  } catch (const std::exception& ex) {
    // a comparison that cannot run: the chain is not served in this process
    kf_chain_entry* e = p.e;
    const std::string ops = p.d->ops;
    clear(p);
    if (kf_chain_entry_refuse(e, rt, ex.what(), 0))
      KF_WARN("could not check the chain kernel for %s against eager (%s); not served in this process",
              ops.c_str(), ex.what());
    return;
  }
  if (completed) complete(rt);
}

}  // namespace kforge
