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
// The callback removed; nothing if not watching.
void watch_end();
// Thread exit: the callback goes with the thread's RecordFunction state, never called again.
void watch_forget();
// Whether this thread is watched now (and its RecordFunction still enabled).
bool watching();
// Whether watch_begin would succeed now.
bool watch_possible();

}  // namespace kforge
