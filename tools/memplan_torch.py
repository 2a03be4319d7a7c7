#!/usr/bin/python3
"""Export one real PyTorch training step as a memplan-net/1 net (memplan-torch(1)).

    python3 tools/memplan_torch.py torchvision.models:resnet50 --input 8,3,224,224 \\
        --optimizer momentum [--grads keep|set_to_none] [--device cpu|cuda|meta] \\
        [--measure] -o net.json

As a module: export(model, inputs, ...) returns the net as a dict; main(argv)
is the command.  Only the standard library and torch (torchvision for the
models it names) are needed; torch 1.13 and 2.x share every API used here.

How: after a warm-up step, one training step (forward and loss, backward,
optimizer step, zero_grad) runs under a TorchDispatchMode that sees every
aten call.  Every storage is one memplan tensor (a view is its base's
storage); an op reads the storages of its tensor arguments and writes the
storages it creates, plus those its schema says it writes (in place or out=).
A storage's death is when the last tensor holding it dies: tensors are
tracked with weak references, and saved_tensors_hooks hand autograd's saved
tensors to us so that what the graph keeps is seen too.  The op during or
after which a storage dies reads it, so memplan keeps it exactly as long as
PyTorch does.  Scratch memory an op allocates and frees inside itself (seen
by the profiler's memory events between per-op markers) becomes the op's
workspace.
"""

import argparse
import contextlib
import importlib
import json
import os
import statistics
import sys
import tempfile
import time
import weakref

try:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError as e:  # the command says so; importers get the error
    torch = None
    _IMPORT_ERROR = e
    TorchDispatchMode = object

PROG = "memplan_torch"
OPTIMIZERS = ("sgd", "momentum", "adam", "adamw")
GRADS = ("keep", "set_to_none")
AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16} if torch is not None else {}
LOSSES = ("cross_entropy", "mse", "sum", "output")
MARK_BYTES = 9973   # a marker allocation's size: no real storage has it
PHASES = ("forward", "backward", "optimizer")


class ExportError(Exception):
    """Bad use or a model that fails: main() prints it as one line, exit 2."""


def _storage(t):
    """(identity, nbytes) of a tensor's storage, in torch 1.13 and 2.x."""
    if hasattr(t, "untyped_storage"):
        s = t.untyped_storage()
        return s._cdata, s.nbytes()
    s = t.storage()
    return s._storage._cdata, s.nbytes()


def _tensors(x, out):
    """Append every tensor in x (nested lists, tuples, dicts) to out."""
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _tensors(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _tensors(y, out)
    return out


def _call(func, args, kwargs):
    out = func(*args, **kwargs)
    if isinstance(out, (float, int, bool, complex)) and func.__name__.startswith("detach"):
        # torch 1.13 under saved_tensors_hooks hands a detached wrapped
        # number (a Python scalar autograd saved: x * 2.5) to Python as a number
        out = torch.tensor(out, dtype=args[0].dtype, device=args[0].device)
    return out


class _Storage:
    __slots__ = ("name", "nbytes", "kind", "holders", "producer", "comment", "alive", "freed_at", "_used",
                 "per_sample")

    def __init__(self, name, nbytes, kind, producer, comment=""):
        self.name, self.nbytes, self.kind = name, nbytes, kind
        self.holders, self.producer, self.comment = 0, producer, comment
        self.alive, self.freed_at, self._used = True, None, False
        self.per_sample = False


class _Op:
    __slots__ = ("name", "phase", "aten", "module", "inputs", "outputs", "ws", "ms", "call", "index")

    def __init__(self, name, phase, aten, module):
        self.name, self.phase, self.aten, self.module = name, phase, aten, module
        self.inputs, self.outputs, self.ws, self.ms = [], [], 0, None


class _Recorder(TorchDispatchMode):
    """Records every aten call as an op over storages (see the module doc)."""

    def __init__(self, markers):
        super().__init__()
        self.live = {}        # storage identity -> _Storage, while alive
        self.storages = []    # every _Storage, in order of creation
        self.held = {}        # id(tensor) -> storage identity, while the tensor lives
        self.ops = []
        self.phase = "forward"
        self.module = []      # module path stack during forward
        self.markers = markers
        self.n_const = 0
        self.n_calls = 0
        self.windows = None

    # -- storages and their holders ------------------------------------
    def adopt(self, t, name, kind, comment=""):
        """A storage that exists before the step (parameter, state, batch)."""
        key, nbytes = _storage(t)
        s = self.live.get(key)
        if s is None:
            s = _Storage(name, nbytes, kind, -1, comment)
            self.live[key] = s
            self.storages.append(s)
        self.hold(t, key)
        return s

    def hold(self, t, key):
        if id(t) in self.held:
            return
        self.held[id(t)] = key
        self.live[key].holders += 1
        weakref.finalize(t, self._release, id(t), key, self.live[key])

    def _release(self, tid, key, s):
        self.held.pop(tid, None)
        s.holders -= 1
        if s.holders == 0 and s.alive:
            s.alive = False
            s.freed_at = len(self.ops) - 1
            if self.live.get(key) is s:
                del self.live[key]

    def lookup(self, t):
        """The _Storage of a tensor read; one never seen is a constant."""
        key, nbytes = _storage(t)
        s = self.live.get(key)
        if s is None:
            self.n_const += 1
            s = _Storage("const%d" % self.n_const, nbytes, "input", -1,
                         "a tensor that existed before the step")
            self.live[key] = s
            self.storages.append(s)
        self.hold(t, key)
        return s

    def pack(self, t):
        """saved_tensors_hooks: autograd keeps t; hold it as ours."""
        if isinstance(t, torch.Tensor):
            self.lookup(t)
        return t

    # -- ops -----------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.n_calls += 1
        if self.markers:
            torch.empty(MARK_BYTES, dtype=torch.uint8)
        ins = [self.lookup(t) for t in _tensors(args, []) + _tensors(kwargs, [])]
        written = set()
        schema = func._schema
        for i, a in enumerate(schema.arguments):
            if a.alias_info is not None and a.alias_info.is_write:
                v = args[i] if i < len(args) else kwargs.get(a.name)
                for t in _tensors(v, []):
                    written.add(id(self.lookup(t)))
        call = self.n_calls - 1
        out = _call(func, args, kwargs)
        outs = []
        for t in _tensors(out, []):
            key, nbytes = _storage(t)
            s = self.live.get(key)
            if s is None:
                s = _Storage("t%d" % len(self.storages), nbytes,
                             "activation" if self.phase == "forward" else "gradient", len(self.ops))
                self.live[key] = s
                self.storages.append(s)
                outs.append(s)
            self.hold(t, key)
        for s in ins:
            if id(s) in written:
                outs.append(s)
        if not outs:
            return out  # a view, or an op that only reads (item(), equal)
        aten = str(func.overloadpacket.__name__) if hasattr(func, "overloadpacket") else str(func)
        op = _Op("%s.%05d.%s" % ({"forward": "fwd", "backward": "bwd", "optimizer": "opt"}[self.phase], len(self.ops), aten),
                 self.phase, str(func), self.module[-1] if self.phase == "forward" and self.module else "")
        op.call, op.index = call, len(self.ops)
        seen = set()
        for s in ins:
            if id(s) not in seen:
                seen.add(id(s))
                op.inputs.append(s)
        seen = set()
        for s in outs:
            if id(s) not in seen:
                seen.add(id(s))
                op.outputs.append(s)
        self.ops.append(op)
        return out


class _Timer(TorchDispatchMode):
    """Times every aten call of a step (CUDA events, or the host clock)."""

    def __init__(self, cuda):
        super().__init__()
        self.cuda, self.calls = cuda, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.cuda:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            out = _call(func, args, kwargs)
            b.record()
            self.calls.append((str(func), (a, b)))
        else:
            t0 = time.perf_counter()
            out = _call(func, args, kwargs)
            self.calls.append((str(func), (time.perf_counter() - t0) * 1e3))
        return out

    def times(self):
        if self.cuda:
            torch.cuda.synchronize()
            return [(n, a.elapsed_time(b)) for n, (a, b) in self.calls]
        return list(self.calls)


# ---- the training step ------------------------------------------------------

def make_optimizer(name, params):
    """The optimizer the net's update ops come from; ExportError if unknown."""
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.01)
    if name == "momentum":
        return torch.optim.SGD(params, lr=0.01, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-3)
    raise ExportError("--optimizer: unknown optimizer '%s' (%s)" % (name, ", ".join(OPTIMIZERS)))


def make_target(loss, out):
    """Random labels or targets for the loss, fixed before the steps."""
    if loss == "cross_entropy":
        if not isinstance(out, torch.Tensor) or out.dim() < 2:
            raise ExportError("cross-entropy needs an output of shape [N, C, ...], got %s" %
                              (list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__))
        shape = (out.shape[0],) + tuple(out.shape[2:])
        return torch.randint(0, out.shape[1], shape, device=out.device)
    if loss == "mse":
        return torch.randn(out.shape, device=out.device, dtype=out.dtype)
    return None


def _loss(loss, out, target):
    if loss == "cross_entropy":
        return torch.nn.functional.cross_entropy(out, target)
    if loss == "mse":
        return torch.nn.functional.mse_loss(out, target)
    if loss == "sum":
        return out.sum()
    if not isinstance(out, torch.Tensor) or out.numel() != 1:
        raise ExportError("--loss output: the module must return its loss as one number")
    return out.reshape(())


def _output(out):
    """The tensor a model's output holds: the first of a tuple or list, a
    dict's "logits" (Hugging Face), "out" (torchvision's segmentation) or
    first value."""
    if isinstance(out, (tuple, list)):
        return out[0]
    if isinstance(out, dict):
        return out.get("logits", out.get("out", next(iter(out.values()))))
    return out


def _autocast(inputs, autocast):
    """torch.autocast for the step's forward and loss, or nothing."""
    if not autocast:
        return contextlib.nullcontext()
    device = inputs[0].device.type if inputs else "cpu"
    return torch.autocast(device, dtype=AUTOCAST[autocast])


def train_step(model, inputs, target, loss, opt, grads, phase=None, autocast=None):
    """One step as a user's loop writes it; phase(name) marks where each
    begins.  autocast (bf16, fp16): the forward and the loss under
    torch.autocast, as torch.cuda.amp's recipe runs them."""
    if phase:
        phase("forward")
    with _autocast(inputs, autocast):
        out = _output(model(*inputs))
        value = _loss(loss, out, target)
        del out
    if phase:
        phase("backward")
    value.backward()
    del value
    if phase:
        phase("optimizer")
    opt.step()
    opt.zero_grad(set_to_none=(grads == "set_to_none"))


def _run_checked(what, fn):
    try:
        return fn()
    except ExportError:
        raise
    except Exception as e:  # the model's own failure: one line
        msg = str(e).strip().splitlines()
        raise ExportError("%s failed: %s: %s" % (what, type(e).__name__, msg[0] if msg else ""))


def resident(model, inputs, target, opt):
    """The tensors alive across steps: (name, tensor, kind, comment) in order."""
    out = []
    names = {}
    for n, p in model.named_parameters():
        names[id(p)] = n
        out.append((n, p, "parameter", ""))
    for n, b in model.named_buffers():
        out.append((n, b, "parameter", "buffer"))
    for n, p in model.named_parameters():
        if p.grad is not None:
            out.append((n + ".grad", p.grad, "parameter_gradient", ""))
    for group in opt.param_groups:
        for p in group["params"]:
            for k, v in opt.state.get(p, {}).items():
                if isinstance(v, torch.Tensor):
                    out.append(("%s.%s" % (names.get(id(p), "param"), k), v, "optimizer_state", ""))
    for i, x in enumerate(inputs):
        out.append(("input%d" % i if len(inputs) > 1 else "input", x, "input", "the batch"))
    if target is not None:
        out.append(("target", target, "input", "labels" if target.dtype == torch.int64 else "targets"))
    return out


def _memory_events(prof):
    """Bytes of every allocation (+) and free (-) the profiler saw, in order."""
    return [e.nbytes() for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]


def measure_peak(model, inputs, target, loss="cross_entropy", optimizer="momentum", grads="set_to_none",
                 opt=None, autocast=None):
    """PyTorch's peak bytes for one step after a warm-up step, from its allocator:
    the storages alive when the step starts plus the highest running sum of
    the profiler's allocation and free events during the step.  CPU only."""
    from torch.profiler import profile, ProfilerActivity
    opt = opt or make_optimizer(optimizer, model.parameters())
    _run_checked("the warm-up step", lambda: train_step(model, inputs, target, loss, opt, grads, autocast=autocast))
    base, seen = 0, set()
    for _, t, _, _ in resident(model, inputs, target, opt):
        key, nbytes = _storage(t)
        if key not in seen:
            seen.add(key)
            base += nbytes
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        train_step(model, inputs, target, loss, opt, grads, autocast=autocast)
    run = high = 0
    for b in _memory_events(prof):
        run += b
        high = max(high, run)
    return base + high


def _target(model, inputs, loss):
    """Random labels (cross_entropy) or targets (mse) shaped like the
    model's output on inputs; None for the other losses."""
    if loss not in ("cross_entropy", "mse"):
        return None

    def first():
        with torch.no_grad():
            out = _output(model(*inputs))
        return make_target(loss, out)
    return _run_checked("the model", first)


def export(model, inputs, loss="cross_entropy", optimizer="momentum", grads="set_to_none",
           measure=False, repeats=5, name=None, target=None, autocast=None):
    """Record one training step of model on inputs (a list of tensors on the
    model's device) after a warm-up step; return the memplan-net/1 net as a
    dict.  Raises ExportError when the model fails or the arguments are bad."""
    if grads not in GRADS:
        raise ExportError("--grads: expected keep or set_to_none, got '%s'" % grads)
    if loss not in LOSSES:
        raise ExportError("--loss: expected one of %s, got '%s'" % (", ".join(LOSSES), loss))
    if autocast and autocast not in AUTOCAST:
        raise ExportError("--autocast: expected bf16 or fp16, got '%s'" % autocast)
    inputs = list(inputs)
    opt = make_optimizer(optimizer, model.parameters())
    model.train()
    user_target = target
    if target is None:
        target = _target(model, inputs, loss)
    _run_checked("the warm-up step", lambda: train_step(model, inputs, target, loss, opt, grads, autocast=autocast))
    device = inputs[0].device if inputs else next(model.parameters()).device
    rec = _record(model, inputs, target, loss, opt, grads, device.type == "cpu", autocast)
    import gc
    gc.collect()
    if measure:
        _measure(rec, model, inputs, target, loss, opt, grads, device, repeats, autocast)
    batch = _per_sample(rec, model, inputs, loss, optimizer, grads, user_target, autocast)
    net = _net(rec, model, inputs, loss, optimizer, grads, device, measure, name, batch)
    if autocast:
        net["generator"]["autocast"] = autocast
    return net


def _record(model, inputs, target, loss, opt, grads, markers, autocast=None):
    """One recorded step (the warm-up done): the _Recorder, with each op's
    workspace when markers (CPU) let the profiler's events be split by op."""
    rec = _Recorder(markers)
    for n, t, kind, comment in resident(model, inputs, target, opt):
        rec.adopt(t, n, kind, comment)
    # the module path of each forward op
    def enter(name):
        rec.module.append(name)

    def leave():
        if rec.module:
            rec.module.pop()
    hooks = []
    for mname, m in model.named_modules():
        if mname:
            hooks.append(m.register_forward_pre_hook(lambda mod, a, mname=mname: enter(mname)))
            hooks.append(m.register_forward_hook(lambda mod, a, o: leave()))
    starts = {}

    def phase(p):
        starts[p] = len(rec.ops)
        rec.phase = p
        if p == "optimizer":
            import gc
            gc.collect()   # what a reference cycle held dies now, not at random later
            for n, prm in model.named_parameters():
                if prm.grad is not None and grads == "set_to_none":
                    s = rec.lookup(prm.grad)
                    if s.producer >= 0:
                        s.kind, s.name = "parameter_gradient", n + ".grad"

    def step():
        with torch.autograd.graph.saved_tensors_hooks(rec.pack, lambda t: t):
            with rec:
                train_step(model, inputs, target, loss, opt, grads, phase, autocast)
    try:
        if markers:
            from torch.profiler import profile, ProfilerActivity
            with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                _run_checked("the recorded step", step)
            _workspace(rec, _memory_events(prof))
        else:
            _run_checked("the recorded step", step)
    finally:
        for h in hooks:
            h.remove()
    import gc
    gc.collect()
    return rec


def _per_sample(rec, model, inputs, loss, optimizer, grads, user_target, autocast=None):
    """Which storages grow with the batch, for memplan capacity: the step is
    recorded again, on a copy of the model, with every input whose first
    dimension is the batch N (the first input's) one sample longer, and a
    storage is per-sample when its bytes grow by exactly (N + 1) / N; the two
    recordings must create the same storages (kind, and the aten op that
    made each) in the same order.  Marks
    rec's storages and returns N, or returns None (with the reason in
    rec.per_sample_why) when the batch cannot be varied."""
    import copy
    rec.per_sample_why = None
    n = inputs[0].shape[0] if inputs and inputs[0].dim() else 0
    if not n:
        rec.per_sample_why = "the first input has no batch dimension"
        return None
    if user_target is not None:
        rec.per_sample_why = "the target was given, so it cannot be made one sample longer"
        return None

    def longer(x):
        if x.dim() == 0 or x.shape[0] != n:
            return x
        shape = (n + 1,) + tuple(x.shape[1:])
        if x.is_floating_point():
            return torch.randn(shape, device=x.device, dtype=x.dtype)
        return torch.randint(0, int(x.max()) + 1, shape, device=x.device, dtype=x.dtype)
    try:
        m2, in2 = _run_checked("copying the model for batch %d" % (n + 1), lambda: (
            copy.deepcopy(model), [longer(x) for x in inputs]))
        opt2 = make_optimizer(optimizer, m2.parameters())
        target2 = _target(m2, in2, loss)
        _run_checked("the warm-up step at batch %d" % (n + 1), lambda: train_step(m2, in2, target2, loss, opt2, grads, autocast=autocast))
        rec2 = _record(m2, in2, target2, loss, opt2, grads, False, autocast)
    except ExportError as e:
        rec.per_sample_why = str(e)
        return None
    if len(rec2.storages) != len(rec.storages):
        rec.per_sample_why = "the step at batch %d creates %d storages, at batch %d %d" % (
            n, len(rec.storages), n + 1, len(rec2.storages))
        return None
    for i, (a, b) in enumerate(zip(rec.storages, rec2.storages)):
        if a.kind != b.kind or (a.producer < 0) != (b.producer < 0) or \
                (a.producer >= 0 and rec.ops[a.producer].aten != rec2.ops[b.producer].aten):
            rec.per_sample_why = "storage %d differs between the steps at batch %d and %d" % (i, n, n + 1)
            return None
    for a, b in zip(rec.storages, rec2.storages):
        a.per_sample = a.nbytes > 0 and a.nbytes * (n + 1) == b.nbytes * n
    return n


def _workspace(rec, events):
    """Per op, scratch bytes above its outputs, from the memory events between
    its marker and the next op's."""
    windows, cur, i = [], None, 0
    while i < len(events):
        if events[i] == MARK_BYTES and i + 1 < len(events) and events[i + 1] == -MARK_BYTES:
            cur = []
            windows.append(cur)
            i += 2
            continue
        if cur is not None:
            cur.append(events[i])
        i += 1
    if len(windows) != rec.n_calls:
        return  # markers lost (another thread allocating): no workspace
    for op in rec.ops:
        run = high = 0
        for b in windows[op.call]:
            run += b
            high = max(high, run)
        made = sum(s.nbytes for s in op.outputs if s.producer == op.index)
        op.ws = max(0, high - made)


def _measure(rec, model, inputs, target, loss, opt, grads, device, repeats, autocast=None):
    from torch.profiler import profile, ProfilerActivity
    cuda = device.type == "cuda"
    runs = []
    for _ in range(repeats):
        tm = _Timer(cuda)
        # as recorded: under the profiler (the optimizer's record_function
        # dispatches ops only while one runs) and saved-tensor hooks (which
        # change autograd's detach calls)
        with profile(activities=[ProfilerActivity.CPU]):
            with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                with tm:
                    train_step(model, inputs, target, loss, opt, grads, autocast=autocast)
        runs.append(tm.times())
    for r in runs:
        if len(r) != rec.n_calls:
            raise ExportError("--measure: the timed steps ran %d aten calls, the recorded one %d "
                              "(the model's work changes from step to step)" % (len(r), rec.n_calls))
    for op in rec.ops:
        op.ms = statistics.median(r[op.call][1] for r in runs)


def _net(rec, model, inputs, loss, optimizer, grads, device, measure, name, batch=None):
    """The memplan-net/1 dict of a recorded step."""
    ops = rec.ops
    # a storage dies after the op during or after which PyTorch freed it:
    # that op reads it, so memplan's liveness keeps it exactly as long
    for s in rec.storages:
        k = s.freed_at
        if s.producer < 0 or k is None or k < 0 or k == s.producer:
            continue
        if s not in ops[k].inputs and s not in ops[k].outputs:
            ops[k].inputs.append(s)
    # zero-byte storages (empty tensors) are nothing to memplan; an op left
    # writing nothing is dropped
    for op in ops:
        op.inputs = [s for s in op.inputs if s.nbytes]
        op.outputs = [s for s in op.outputs if s.nbytes]
    ops = _drop_zeroing([op for op in ops if op.outputs])
    _drop_stale_reads(ops)
    rec.n_pinned, rec.n_unpinned = _pin_order(ops)
    used, names = [], set()
    for op in ops:
        for s in op.inputs + op.outputs:
            if not getattr(s, "_used", False):
                s._used = True
                used.append(s)
    tensors = []
    for s in used:
        n, i = s.name, 1
        while n in names:
            i += 1
            n = "%s.%d" % (s.name, i)
        names.add(n)
        s.name = n
        kind = s.kind
        comment = s.comment
        if kind == "parameter_gradient" and s.producer < 0:
            comment = "kept across steps (\"grads\": \"keep\")"
        t = {"name": n, "kind": kind, "bytes": s.nbytes}
        if batch and s.per_sample:
            t["per_sample"] = True
        if comment:
            t["comment"] = comment
        tensors.append(t)
    out_ops = []
    for op in ops:
        o = {"name": op.name, "phase": op.phase,
             "inputs": [s.name for s in op.inputs], "outputs": [s.name for s in op.outputs]}
        if op.ws:
            o["workspace"] = op.ws
        if op.ms is not None:
            o["time"] = round(op.ms, 6)
        if op.phase == "forward" and any(s.producer < 0 for s in op.outputs):
            o["recompute"] = False   # it updates state that exists across steps
        o["comment"] = op.aten + (" in " + op.module if op.module else "")
        out_ops.append(o)
    net = {"format": "memplan-net/1",
           "name": name or type(model).__name__,
           "description": "one training step recorded by memplan_torch from PyTorch %s on %s" %
                          (torch.__version__, device.type)}
    if batch:
        net["batch"] = batch
    net["grads"] = grads
    net["framework"] = "pytorch"
    if measure:
        net["time_source"] = "measured:%s" % (
            "cuda:" + torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (host clock)")
    net["generator"] = {"tool": "memplan_torch", "torch": torch.__version__, "device": device.type,
                        "inputs": [list(x.shape) for x in inputs], "loss": loss,
                        "optimizer": optimizer, "grads": grads, "aten_calls": rec.n_calls,
                        "unfreed": sum(1 for s in rec.storages if s.producer >= 0 and s.alive),
                        "order_pinned": rec.n_pinned, "order_free": rec.n_unpinned}
    if not batch:
        net["generator"]["no_batch"] = rec.per_sample_why
    net["tensors"] = tensors
    net["ops"] = out_ops
    return net


def _drop_zeroing(ops):
    """zero_grad() of gradients kept across steps zeroes them in place: no
    memory moves, and memplan, which orders a tensor's readers after all its
    writers of a phase, would run the optimizer's reads of the gradients
    after it.  Drop those ops; what they kept alive, the op before keeps."""
    out = []
    for op in ops:
        if (op.phase == "optimizer" and out and not op.ws and
                all(s.producer < 0 and s.kind == "parameter_gradient" and s in op.inputs for s in op.outputs)):
            prev = out[-1]
            for s in op.inputs:
                if s not in op.outputs and s not in prev.inputs and s not in prev.outputs:
                    prev.inputs.append(s)
            continue
        out.append(op)
    return out


def _drop_stale_reads(ops):
    """memplan orders a reader of a tensor after every writer of it in the
    phase, so a read followed by an in-place write (dropout's empty_like
    before the mul_ that applies the mask) would wait for its own successor.
    The later writer keeps the tensor alive past the read anyway: drop the
    read; no lifetime changes."""
    writers = {}
    for i, op in enumerate(ops):
        for s in op.outputs:
            writers[(id(s), op.phase)] = i
    for i, op in enumerate(ops):
        op.inputs = [s for s in op.inputs
                     if s in op.outputs or writers.get((id(s), op.phase), -1) <= i]


def _pin_order(ops):
    """Make memplan run the ops in the order PyTorch ran them.  memplan orders
    a phase by a depth-first walk over data dependencies; where op i+1 does
    not already depend on op i, it reads a tensor op i wrote that is alive
    anyway (a resident one, or one read later), which changes no lifetime.
    memplan makes a reader wait for every writer of the phase, so a read
    before an in-place write (j) is ordered after it: no pins between the
    two, or they would close a cycle.  Returns (pairs pinned, pairs left
    free)."""
    last, writers, readers = {}, {}, {}
    for i, op in enumerate(ops):
        for s in op.inputs + op.outputs:
            last[id(s)] = i
        for s in op.outputs:
            writers.setdefault((id(s), op.phase), []).append(i)
        for s in op.inputs:
            if s not in op.outputs:
                readers.setdefault((id(s), op.phase), []).append(i)
    blocked = [False] * len(ops)
    for key, rs in readers.items():
        ws = writers.get(key, [])
        for r in rs:
            later = [j for j in ws if j > r]
            for i in range(r, max(later) if later else r):
                blocked[i] = True
    pinned = free = 0
    for i in range(len(ops) - 1):
        a, b = ops[i], ops[i + 1]
        if a.phase != b.phase:
            continue
        bout = set(id(s) for s in b.outputs)
        ain = set(id(s) for s in a.inputs)
        if any(s in b.inputs and (id(s) not in bout or id(s) not in ain) for s in a.outputs):
            continue  # b already waits for a
        if blocked[i]:
            free += 1
            continue
        for s in a.outputs:
            if (id(s) not in bout and (s.producer < 0 or last[id(s)] > i) and
                    max(writers[(id(s), a.phase)]) <= i):
                b.inputs.append(s)
                pinned += 1
                break
        else:
            free += 1
    return pinned, free


def dumps(net):
    """The net as JSON text, one tensor or op per line."""
    head = {k: v for k, v in net.items() if k not in ("tensors", "ops")}
    text = json.dumps(head, indent=1)[:-2] + ",\n"
    for key in ("tensors", "ops"):
        text += ' "%s": [\n' % key
        text += ",\n".join("  " + json.dumps(x) for x in net[key])
        text += "\n ]" + (",\n" if key == "tensors" else "\n}\n")
    return text


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ExportError(message)


def parse_shape(text):
    try:
        dims = [int(x) for x in text.split(",")]
    except ValueError:
        dims = []
    if not dims or any(d < 1 for d in dims):
        raise ExportError("--input: expected a shape of positive integers like 8,3,224,224, got '%s'" % text)
    return dims


def load_model(spec):
    """The nn.Module that MODULE:CALLABLE returns."""
    mod, sep, fn = spec.partition(":")
    if not sep or not mod or not fn:
        raise ExportError("%s: expected MODULE:CALLABLE, for example torchvision.models:resnet50" % spec)
    for d in (os.getcwd(), os.path.dirname(os.path.abspath(__file__))):
        if d not in sys.path:
            sys.path.insert(0, d)
    try:
        m = importlib.import_module(mod)
    except Exception as e:
        raise ExportError("%s: cannot import module '%s': %s" % (spec, mod, e))
    f = m
    for part in fn.split("."):
        f = getattr(f, part, None)
        if f is None:
            raise ExportError("%s: module '%s' has no '%s'" % (spec, mod, fn))
    model = _run_checked(spec, f) if callable(f) else f
    if not isinstance(model, torch.nn.Module):
        raise ExportError("%s: returned %s, not a torch.nn.Module" % (spec, type(model).__name__))
    return model


def run(argv):
    ap = _Parser(prog=PROG, description="Export one PyTorch training step as a memplan-net/1 net.")
    ap.add_argument("model", help="MODULE:CALLABLE returning the nn.Module")
    ap.add_argument("--input", action="append", required=True, help="input shape, e.g. 8,3,224,224 (repeatable)")
    ap.add_argument("--optimizer", default="momentum")
    ap.add_argument("--grads", default="set_to_none")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--loss", default="cross_entropy")
    ap.add_argument("--autocast", choices=None, default=None)
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args(argv)
    if a.optimizer not in OPTIMIZERS:
        raise ExportError("--optimizer: unknown optimizer '%s' (%s)" % (a.optimizer, ", ".join(OPTIMIZERS)))
    if a.grads not in GRADS:
        raise ExportError("--grads: expected keep or set_to_none, got '%s'" % a.grads)
    if a.loss not in LOSSES:
        raise ExportError("--loss: expected one of %s, got '%s'" % (", ".join(LOSSES), a.loss))
    if a.device not in ("cpu", "cuda", "meta"):
        raise ExportError("--device: expected cpu, cuda or meta, got '%s'" % a.device)
    if a.repeats < 1:
        raise ExportError("--repeats: expected a positive number, got %d" % a.repeats)
    shapes = [parse_shape(s) for s in a.input]
    outdir = os.path.dirname(os.path.abspath(a.output))
    if not os.path.isdir(outdir):
        raise ExportError("%s: no directory '%s'" % (a.output, outdir))
    if a.device == "cuda" and not torch.cuda.is_available():
        raise ExportError("--device cuda: no usable GPU")
    torch.manual_seed(a.seed)
    model = load_model(a.model)
    device = torch.device(a.device)
    model = _run_checked("moving the model to " + a.device, lambda: model.to(device))
    inputs = [torch.randn(s, device=device) for s in shapes]
    net = export(model, inputs, loss=a.loss, optimizer=a.optimizer, grads=a.grads,
                 measure=a.measure, repeats=a.repeats, name=a.model, autocast=a.autocast)
    fd, tmp = tempfile.mkstemp(dir=outdir, prefix=".memplan_torch.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(dumps(net))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, a.output)
    except BaseException:
        os.unlink(tmp)
        raise
    return 0


def main(argv=None):
    """The command: 0 on success; 2 with one line on stderr for bad use or a
    model that fails."""
    if torch is None:
        sys.stderr.write("%s: cannot import torch: %s\n" % (PROG, _IMPORT_ERROR))
        return 2
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except ExportError as e:
        sys.stderr.write("%s: %s\n" % (PROG, e))
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
