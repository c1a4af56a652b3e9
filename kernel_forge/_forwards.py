"""Global nn.Module hooks that see each outermost forward start and end, on any thread (a
thread's nested module calls are inside its outermost one): the warm-up's recording windows
(_warmup.ForwardWindows) and the model check's arms (_modelcheck.ForwardArms).

A global hook puts every module call on torch's slow path (Module._call_impl): 1.3 ms of host
time a forward on PVT-v2-B0 on the CPU (benchmarks/results/device-2026-12-07-session40/), and on
an H100 its served forwards, host-bound, timed 1.3-1.5 ms slower under them than without: a timing
taken under them saw that and not the kernels. With narrow_after = n the hooks move, once n
outermost forwards have ended, onto the modules seen outermost so far; an outermost forward of
another module is not seen from then on."""

import threading


class OutermostForwards:
    """begin(mod) and end() run under the lock when an outermost forward starts and ends, with
    `active` counting the outermost forwards under way on every thread (this one included at
    begin, no longer at end); end() may return a callable to run outside the lock."""

    def __init__(self, narrow_after: int = 0):
        self.lock = threading.Lock()
        self.local = threading.local()  # module nesting depth, per thread
        self.active = 0
        self.handles = []
        self.narrow_after = narrow_after  # 0: the global hooks stay
        self.roots = []  # the modules seen outermost while the hooks are global
        self.ended = 0   # outermost forwards ended

    def install(self):
        from torch.nn.modules import module as m

        self._add(m.register_module_forward_pre_hook, m.register_module_forward_hook)

    def _add(self, pre, post):
        self.handles.append(pre(self._pre))
        try:
            self.handles.append(post(self._post, always_call=True))
        except TypeError:  # a torch without always_call: a forward that raises ends nothing
            self.handles.append(post(self._post))

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []
        self.roots = []

    def _narrow(self):
        """Under the lock: the hooks on the roots alone (a hook list changed during a module call
        is not seen by that call: torch iterates a copy)."""
        roots = self.roots
        self.remove()
        self.narrow_after = 0
        for m in roots:
            self._add(m.register_forward_pre_hook, m.register_forward_hook)

    def begin(self, mod):
        pass

    def end(self):
        return None

    def _pre(self, mod, args):
        depth = getattr(self.local, "depth", 0)
        self.local.depth = depth + 1
        if depth == 0:
            with self.lock:
                self.active += 1
                if self.narrow_after and not any(m is mod for m in self.roots):
                    self.roots.append(mod)
                self.begin(mod)

    def _post(self, mod, args, out):
        depth = getattr(self.local, "depth", 0)
        if depth <= 0:
            return  # a forward that began before install
        self.local.depth = depth - 1
        if depth == 1:
            with self.lock:
                self.active -= 1
                self.ended += 1
                later = self.end()
                if self.narrow_after and self.ended >= self.narrow_after and self.handles:
                    self._narrow()
            if later is not None:
                later()
