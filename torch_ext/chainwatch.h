// Watching this thread's writes while a pending chain holds inference tensors (docs/chains.md):
// they have no version counter, so a thread-local RecordFunction callback stands in for it.
#pragma once

#include "plugin/plugin.h"

namespace kforge {

// Called (once) before a watched call that may write one of its arguments runs; it must end the
// watch (watch_end).
using WriteHandler = void (*)(kf_runtime*);

// From now on, every call on this thread that is not inside an intercepted call is looked at:
// a top-level one whose schema writes an argument, or one at any depth that writes arguments its
// schema does not mark (plugin/writes.c), calls on_write(rt) first. False: this thread's calls
// cannot be watched (RecordFunction is disabled on it). True at once if already watching.
bool watch_begin(kf_runtime* rt, WriteHandler on_write);
// The chain's next member (`next`, "aten::relu_") writes in place a tensor the chain made (deferred
// mode): its call is not a write to watch. nullptr for none.
void watch_writes_next(const char* next);
// The callback removed; nothing if not watching.
void watch_end();
// Thread exit: the callback goes with the thread's RecordFunction state, never called again.
void watch_forget();
// Whether this thread is watched now (and its RecordFunction still enabled).
bool watching();
// Whether watch_begin would succeed now.
bool watch_possible();

// Deferred mode (docs/chains.md): outputs a pending chain has returned are written only at its
// last member. From watch_reads on, every call of this thread that is not inside an intercepted
// call and is not the chain's next member (`next`, "aten::mul.Tensor") and that takes a tensor
// over one of `storages` calls on_read(rt) first, which must write them and end the watch
// (watch_reads_end). Needs the inputs of each call: a second callback, only while on.
using ReadHandler = void (*)(kf_runtime*);
constexpr int kMaxWatchedStorages = 16;
bool watch_reads(kf_runtime* rt, const void* const* storages, int n, const char* next, ReadHandler on_read);
void watch_reads_next(const char* next);
void watch_reads_end();
// While one lives, both callbacks ignore this thread's calls (the plugin's own, writing them).
struct WatchQuiet {
  bool saved;
  WatchQuiet();
  ~WatchQuiet();
};

}  // namespace kforge
