"""Global nn.Module hooks that see each outermost forward start and end, on any thread (a
thread's nested module calls are inside its outermost one): the warm-up's recording windows
(_warmup.ForwardWindows) and the model check's arms (_modelcheck.ForwardArms)."""

import threading


class OutermostForwards:
    """begin(mod) and end() run under the lock when an outermost forward starts and ends, with
    `active` counting the outermost forwards under way on every thread (this one included at
    begin, no longer at end); end() may return a callable to run outside the lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.local = threading.local()  # module nesting depth, per thread
        self.active = 0
        self.handles = []

    def install(self):
        from torch.nn.modules import module as m

        self.handles.append(m.register_module_forward_pre_hook(self._pre))
        try:
            self.handles.append(m.register_module_forward_hook(self._post, always_call=True))
        except TypeError:  # a torch without always_call: a forward that raises ends nothing
            self.handles.append(m.register_module_forward_hook(self._post))

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []

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
                self.begin(mod)

    def _post(self, mod, args, out):
        depth = getattr(self.local, "depth", 0)
        if depth <= 0:
            return  # a forward that began before install
        self.local.depth = depth - 1
        if depth == 1:
            with self.lock:
                self.active -= 1
                later = self.end()
            if later is not None:
                later()
