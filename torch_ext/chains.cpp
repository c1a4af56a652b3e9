// Chain recording's share of a call (plugin/chains.h): the identities of its tensors, and one
// recorder per thread.
#include <c10/util/intrusive_ptr.h>

#include <algorithm>
#include <iterator>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "torch_ext/ext.h"

namespace kforge {
namespace {

using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

// A tensor's identity is its TensorImpl's address. The recorder keeps a weak reference to each
// output of its last calls (at least those of an open run), so that no new tensor can be made at
// the address of an output it may still link to: the tensor's memory is released as usual, only
// the small TensorImpl block stays until the reference is dropped.
constexpr size_t kKept = KF_CHAIN_MAX * KF_CHAIN_MAX_IO;

struct RecHolder {
  kf_chain_rec* rec = kf_chain_rec_create();
  std::vector<WeakImpl> kept;
  size_t next = 0;
  ~RecHolder() { kf_chain_rec_free(rec); }
  void keep(const at::Tensor& t) {
    WeakImpl w(t.getIntrusivePtr());
    if (kept.size() < kKept) {
      kept.push_back(std::move(w));
    } else {
      kept[next] = std::move(w);
      next = (next + 1) % kKept;
    }
  }
};

thread_local RecHolder t_rec;

struct PlaceHash {
  size_t operator()(const std::pair<uintptr_t, int64_t>& p) const {
    return std::hash<uintptr_t>()(p.first) ^ (std::hash<int64_t>()(p.second) * 0x9e3779b97f4a7c15ull);
  }
};

// The tensors this thread's recorded calls took or made, by identity, each held by a weak
// reference (so no new tensor takes a listed one's address), with the count of calls when it
// was first listed: an input not listed is new, made since by something the plugin does not see
// (a linear's output). Dead ones are dropped when the list has doubled since the last pass.
struct Seen {
  struct Entry {
    WeakImpl t;
    uint64_t at;
  };
  std::unordered_map<uintptr_t, Entry> m;
  // a listed tensor per storage (its base): a new view of a storage whose base lives (rotary's
  // `sin.unsqueeze(1)`, a slice of a head input) is not new data, was first seen when the base
  // was, and is known by the base's identity, which no other storage can have while the base
  // lives (a StorageImpl's address can: a freed temporary's is soon another's). Holding each
  // StorageImpl block weakly instead slowed every recorded call ~30%.
  std::unordered_map<uintptr_t, uintptr_t> st;
  // the places (base identity, byte offset) of the tensors seen over each listed storage: a
  // view at a place new to it is new data to a chain (a recurrence's `x[:, t]`, another row at
  // every step, which no earlier run's tensor can predict), one at a known place is not
  // (rotary's `sin.unsqueeze(1)` in every layer)
  std::unordered_set<std::pair<uintptr_t, int64_t>, PlaceHash> places;
  size_t prune_at = 4096;
  uint64_t calls = 0;  // this thread's recorded calls so far
  // the identity of the live listed base of t's storage, or 0
  uintptr_t base_of(const at::Tensor& t) {
    const void* s = t.storage().unsafeGetStorageImpl();
    auto si = st.find(reinterpret_cast<uintptr_t>(s));
    if (si == st.end()) return 0;
    auto it = m.find(si->second);
    if (it == m.end()) return 0;
    auto other = it->second.t.lock();
    return other && other->has_storage() && other->storage().unsafeGetStorageImpl() == s ? si->second : 0;
  }
  // whether it (or its storage's live base) was listed before, and when (lists it now if not);
  // *storage: its storage's base identity (0: no storage)
  bool seen(const at::Tensor& t, uint64_t* at, uintptr_t* storage) {
    const auto id = reinterpret_cast<uintptr_t>(t.unsafeGetTensorImpl());
    const uintptr_t base = t.has_storage() ? base_of(t) : 0;
    const int64_t off = t.has_storage() ? t.storage_offset() * static_cast<int64_t>(t.itemsize()) : 0;
    if (t.has_storage() && !base) {
      st[reinterpret_cast<uintptr_t>(t.storage().unsafeGetStorageImpl())] = id;
      places.insert({id, off});
    }
    *storage = !t.has_storage() ? 0 : base ? base : id;
    auto it = m.find(id);
    if (it != m.end() && !it->second.t.expired()) {
      *at = it->second.at;
      return true;
    }
    const bool known = base && !places.insert({base, off}).second;
    *at = known ? m.find(base)->second.at : calls;
    if (it != m.end()) it->second = Entry{WeakImpl(t.getIntrusivePtr()), *at};
    else m.emplace(id, Entry{WeakImpl(t.getIntrusivePtr()), *at});
    if (m.size() >= prune_at) {
      for (auto i = m.begin(); i != m.end();) i = i->second.t.expired() ? m.erase(i) : std::next(i);
      for (auto i = st.begin(); i != st.end();) i = m.count(i->second) ? std::next(i) : st.erase(i);
      for (auto i = places.begin(); i != places.end();) i = m.count(i->first) ? std::next(i) : places.erase(i);
      prune_at = std::max<size_t>(4096, 2 * m.size());
    }
    return known;
  }
};

thread_local Seen t_seen;

void id_of(const at::Tensor& t, ChainIds* ids) {
  if (ids->n >= KF_CHAIN_MAX_IO || !t.defined()) return;
  if (!t_seen.seen(t, &ids->seen_at[ids->n], &ids->storage[ids->n])) ids->fresh |= 1u << ids->n;
  ids->byte_off[ids->n] = t.has_storage() ? t.storage_offset() * static_cast<int64_t>(t.itemsize()) : 0;
  ids->id[ids->n++] = reinterpret_cast<uintptr_t>(t.unsafeGetTensorImpl());
}

// The kernel's tensor arguments, as a served call passes them (for_kernel_tensors).
void ids_of(const c10::IValue* v, size_t n, ChainIds* ids) {
  ids->n = 0;
  ids->fresh = 0;
  for_kernel_tensors(v, n, [ids](const at::Tensor& t, size_t, bool) {
    id_of(t, ids);
    return true;
  });
}

}  // namespace

void chain_inputs(const OpSchemaInfo& info, const torch::jit::Stack& stack, ChainIds* in) {
  in->now = ++t_seen.calls;
  const c10::IValue* args = stack.data() + (stack.size() - info.n_args);
  in->writes = false;
  for (size_t i = 0; i < info.n_args && !in->writes; i++) in->writes = writes_arg(info, args, i);
  ids_of(args, info.n_args, in);
}

void chain_report(kf_runtime* rt, const kf_call& call, const ChainIds& in, const OpSchemaInfo& info,
                  const torch::jit::Stack& stack) {
  if (!t_rec.rec || stack.size() < info.n_returns) return;
  ChainIds out;
  const c10::IValue* rets = stack.data() + (stack.size() - info.n_returns);
  ids_of(rets, info.n_returns, &out);
  for (size_t r = 0; r < info.n_returns; r++)
    if (rets[r].isTensor() && rets[r].toTensor().defined()) t_rec.keep(rets[r].toTensor());
  kf_dispatch_chain_call(rt, t_rec.rec, &call, in.writes, in.fresh, in.id, in.seen_at, in.storage,
                         in.byte_off, in.n, out.id, out.n, in.now);
}

}  // namespace kforge
