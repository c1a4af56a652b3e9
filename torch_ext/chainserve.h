// Chain serving (docs/chains.md): the per-thread state machine, hooked into Interceptor::run for
// top-level calls while a chain entry exists or this thread has a chain pending.
#pragma once

#include <string>

#include "plugin/chainserve.h"
#include "torch_ext/ext.h"

namespace kforge {

extern thread_local constinit bool t_chain_pending;  // constinit: read without an init check

// One branch on the hot path while no chain entry exists: nothing to do unless a chain is
// pending on this thread or the call's signature is some entry's head.
inline bool chain_may_apply(kf_runtime* rt, const kf_call& call) {
  return t_chain_pending ||
         (kf_chainserve_active(rt) && call.slot && kf_chainserve_find(rt, kf_slot_key(call.slot)));
}

// What chain serving does with one call. `active`: the call runs eager (its kernel dropped) and
// chain_after must see its outputs. Left active (an exception), it drops the pending chain.
struct ChainStep {
  bool active = false;
  ~ChainStep();
};

// Before a top-level call runs: true when the call was served from a chain (its outputs are on
// the stack, nothing else to do); false to run it the normal way (with call.kernel cleared when
// step->active).
// `eager` runs this call's op eager (deferred mode writes a member's output with it when the
// chain cannot complete).
struct EagerOp {
  const c10::SafeKernelFunction* kernel;
  c10::OperatorHandle op;
  c10::DispatchKeySet ks;
};
bool chain_before(kf_runtime* rt, const OpSchemaInfo& info, kf_call& call, torch::jit::Stack* stack,
                  ChainStep* step, const EagerOp& eager);
// The typed fast path's hand-out (typed.cpp): while a served chain waits for this top-level
// call as its next member and `ins` (its kernel tensor arguments, numbered as tensor_inputs
// numbers them) are the expected ones, the member's `n_outs` outputs are moved into `outs`: true.
// False: nothing changed; the boxed path (Interceptor::run) handles the call and every other case.
bool chain_hand_out(kf_runtime* rt, kf_call& call, c10::ArrayRef<const at::Tensor*> ins, size_t n_outs,
                    c10::SmallVector<at::Tensor, 4>* outs);
// The typed fast path's head (typed.cpp), when no chain is pending on this thread and the call's
// signature is a chain's head: kServed, its outputs in `outs`; kEager, it runs eager now (the
// original kernel, timed if call.time_it) and chain_after gets its outputs; kNormal, it runs
// the normal way, chain serving done with it; kNotMine, nothing was done, the boxed path
// (Interceptor::run) handles it all (a deferred chain, another output count).
enum class ChainHead { kNotMine, kServed, kEager, kNormal };
ChainHead chain_head_typed(kf_runtime* rt, const OpSchemaInfo& info, kf_call& call,
                           c10::ArrayRef<const at::Tensor*> ins, size_t n_outs, c10::SmallVector<at::Tensor, 4>* outs,
                           ChainStep* step);
// A call while the plugin is switched off (kernel_forge.disable()) on a thread with a pending
// chain: the chain ends there (in deferred mode, the outputs it returned are written first).
void chain_switched_off(kf_runtime* rt);
// After an active step's call ran eager: its outputs are on the stack.
void chain_after(kf_runtime* rt, const OpSchemaInfo& info, const torch::jit::Stack& stack, ChainStep* step);
// The same with its outputs (the typed path's).
void chain_after(kf_runtime* rt, const OpSchemaInfo& info, c10::ArrayRef<c10::IValue> rets, ChainStep* step);

// interceptor.cpp: every byte of t's storage set to 0xff.
void poison(const at::Tensor& t);
// interceptor.cpp: kernel output `k` against eager's `e` (common/match.c's rule).
bool matches_eager(const at::Tensor& k, const at::Tensor& e, double atol, double rtol, std::string* why);

}  // namespace kforge
