// Chain recording's share of a call (plugin/chains.h): the identities of its tensors, and one
// recorder per thread.
#include <c10/util/intrusive_ptr.h>

#include <algorithm>
#include <iterator>
#include <unordered_map>
#include <vector>

#include "torch_ext/ext.h"

namespace kforge {
namespace {

using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
using WeakStorage = c10::weak_intrusive_ptr<c10::StorageImpl>;

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

// The tensors this thread's recorded calls took or made, by identity, each held by a weak
// reference (so no new tensor takes a listed one's address), with the count of calls when it
// was first listed: an input not listed is new, made since by something the plugin does not see
// (a linear's output). Dead ones are dropped when the list has doubled since the last pass.
struct Seen {
  template <class W>
  struct Entry {
    W t;
    uint64_t at;
  };
  std::unordered_map<uintptr_t, Entry<WeakImpl>> m;
  // the storages of listed tensors: a new view of one (rotary's `sin.unsqueeze(1)`, a slice of
  // a head input) is not new data, and is first seen when its storage was
  std::unordered_map<uintptr_t, Entry<WeakStorage>> st;
  size_t prune_at = 4096;
  uint64_t calls = 0;  // this thread's recorded calls so far
  template <class W>
  static bool look(std::unordered_map<uintptr_t, Entry<W>>& map, uintptr_t id, const W& weak, uint64_t now,
                   uint64_t* at) {
    auto it = map.find(id);
    if (it != map.end() && !it->second.t.expired()) {
      *at = it->second.at;
      return true;
    }
    *at = now;
    if (it != map.end()) it->second = Entry<W>{weak, now};
    else map.emplace(id, Entry<W>{weak, now});
    return false;
  }
  // whether it (or its storage) was listed before, and when (lists it now if not)
  bool seen(const at::Tensor& t, uint64_t* at) {
    const auto id = reinterpret_cast<uintptr_t>(t.unsafeGetTensorImpl());
    bool known = look(m, id, WeakImpl(t.getIntrusivePtr()), calls, at);
    if (t.has_storage()) {
      uint64_t sat;
      if (look(st, reinterpret_cast<uintptr_t>(t.storage().unsafeGetStorageImpl()), t.storage().getWeakStorageImpl(),
               calls, &sat) &&
          (!known || sat < *at)) {
        known = true;
        *at = sat;
      }
    }
    if (m.size() + st.size() >= prune_at) {
      for (auto i = m.begin(); i != m.end();) i = i->second.t.expired() ? m.erase(i) : std::next(i);
      for (auto i = st.begin(); i != st.end();) i = i->second.t.expired() ? st.erase(i) : std::next(i);
      prune_at = std::max<size_t>(4096, 2 * (m.size() + st.size()));
    }
    return known;
  }
};

thread_local Seen t_seen;

void id_of(const at::Tensor& t, ChainIds* ids) {
  if (ids->n >= KF_CHAIN_MAX_IO || !t.defined() || t.unsafeGetTensorImpl()->is_wrapped_number()) return;
  if (!t_seen.seen(t, &ids->seen_at[ids->n])) ids->fresh |= 1u << ids->n;
  const bool st = t.has_storage();
  ids->storage[ids->n] = st ? reinterpret_cast<uintptr_t>(t.storage().unsafeGetStorageImpl()) : 0;
  ids->byte_off[ids->n] = st ? t.storage_offset() * static_cast<int64_t>(t.itemsize()) : 0;
  ids->id[ids->n++] = reinterpret_cast<uintptr_t>(t.unsafeGetTensorImpl());
}

// The kernel's tensor arguments, as a served call passes them: no Python number wrapped into a
// tensor (its value is compiled in), no undefined tensor, a tensor list's elements in its place.
void ids_of(const c10::IValue* v, size_t n, ChainIds* ids) {
  ids->n = 0;
  ids->fresh = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i].isTensor()) id_of(v[i].toTensor(), ids);
    if (v[i].isTensorList())
      for (const at::Tensor& t : v[i].toTensorList().vec()) id_of(t, ids);
  }
}

}  // namespace

void chain_inputs(const OpSchemaInfo& info, const torch::jit::Stack& stack, ChainIds* in) {
  in->now = ++t_seen.calls;
  ids_of(stack.data() + (stack.size() - info.n_args), info.n_args, in);
}

void chain_report(kf_runtime* rt, const kf_call& call, const ChainIds& in, const OpSchemaInfo& info,
                  const torch::jit::Stack& stack) {
  if (!t_rec.rec || stack.size() < info.n_returns) return;
  ChainIds out;
  const c10::IValue* rets = stack.data() + (stack.size() - info.n_returns);
  ids_of(rets, info.n_returns, &out);
  for (size_t r = 0; r < info.n_returns; r++)
    if (rets[r].isTensor() && rets[r].toTensor().defined()) t_rec.keep(rets[r].toTensor());
  bool writes = info.hidden_writes != 0;
  for (size_t i = 0; i < info.n_args && !writes; i++) writes = info.written[i];
  kf_dispatch_chain_call(rt, t_rec.rec, &call, writes, in.fresh, in.id, in.seen_at, in.storage,
                         in.byte_off, in.n, out.id, out.n, in.now);
}

}  // namespace kforge
