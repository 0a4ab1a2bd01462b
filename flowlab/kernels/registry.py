"""Kernels, keyed by (op type, device type).

A kernel is a plain function.  The usual form takes the node's static context and
the input arrays and returns the output (or a tuple/list of outputs for ops with
several):

    @kernel("Mul")                       # CPU and GPU: written once over ctx.xp
    def mul(ctx, x, y):
        return ctx.xp.multiply(x, y)

`ctx` is a `NodeContext` built once per node when a plan is compiled: `ctx.attrs`,
`ctx.xp` (numpy or cupy), `ctx.device`, `ctx.resources` (the device's resource
manager), `ctx.name`, `ctx.op`.  It is shared by concurrent steps, so kernels never
store per-step data on it.

Kernels that need the step (its id, undo log for variable writes, cancellation,
rendezvous) declare `step=True` and take `(ctx, step, *inputs)`.  Asynchronous
kernels (Recv, Dequeue) declare `asynchronous=True` and take
`(ctx, step, done, *inputs)`; they return at once and later call `done(outputs)` or
`done(error=exc)` from any thread.  They never block an executor thread.

Inside a loop (the executor's frame path) a `step=True` kernel receives a
`FrameStep`: the step (every attribute forwarded) plus `frame_name`, `frame_id` (one
per loop execution, e.g. "outer/ctx;3;inner/ctx": unique across nested loops'
iterations) and `iteration`.  `frame_of(step)` gives `(frame_id, iteration)` on
either path (`("", 0)` outside loops): rendezvous keys, per-iteration stacks and
TensorArrays key their state by it.

Rules: kernels never modify their inputs in place (values are shared between
consumers and with variables), and raise `flowlab.errors` classes for bad input.

The one exception is buffer forwarding (TensorFlow's
`forward_input_or_allocate_output`).  A kernel registered with `forward=(i, ...)`
names the inputs whose buffer could hold one of its outputs.  When compiling the
straight-line function of a step, the plan (flowlab.runtime.task.forwarding) gives such a
node a context whose `ctx.forwardable` lists those of the positions whose value dies
at this op: read by no later op, not fetched, not fed, not a variable or a constant,
not passed twice.  `ctx.forwardable` is empty everywhere else (the dataflow executor,
traced steps, ops run one by one).  At run time the kernel must additionally call
`can_forward(x)` -- directly, on its own parameter, because it counts references --
which accepts only a writeable NumPy array owning its data that nothing but the
step's slot holds (no alias, view, fetch or feed); and the kernel itself checks that
the output has the input's shape and dtype.  Only then may it write into `x`:

    @kernel("AddV2", forward=(0, 1))
    def add_v2(ctx, x, y):
        if ctx.forwardable and 0 in ctx.forwardable and can_forward(x) and fits(y, x):
            return np.add(x, y, out=x)
        return x + y

The other exception is a deferred variable update.  A kernel registered with
`defer=True` (ApplyAdam) may, when its context says `ctx.defers` (set by the plan
only where no later op of the straight-line step touches the update's variables and
nothing reads its output, flowlab.runtime.task.deferred_updates), hand `step.defer` an
object whose `prepare(step)` runs after every op of the step has succeeded and
returns the closure that writes: in place when the variables hold their arrays
alone, as TensorFlow's kernels update a ref variable.  A step that fails before
then writes nothing.

Placement reads `supported_device_types(op_type)` to know where an op can run;
`host_memory_indices(kdef, op)` turns a kernel's `host_memory` argument names into
input and output positions (flowlab.runtime.task.memory_types).
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


class _Dead:
    """The value of an output on an untaken branch (dead-value propagation).

    Kernels of control-flow ops (Switch, Merge) produce and inspect it; the executor
    makes every other op with a DEAD input dead without calling its kernel."""

    _instance: _Dead | None = None

    def __new__(cls) -> _Dead:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DEAD"

    def __reduce__(self) -> Any:
        return (_Dead, ())


DEAD = _Dead()

CPU = "CPU"
GPU = "GPU"
ALL = (CPU, GPU)


@dataclass(frozen=True)
class KernelDef:
    op_type: str
    device_type: str
    fn: Callable[..., Any]
    needs_step: bool = False
    asynchronous: bool = False
    # Inputs/outputs that stay in host memory on an accelerator (shapes, indices).
    host_memory: tuple[str, ...] = ()
    # Relative cost hint for the executor: True for kernels worth a pool thread.
    expensive: bool = False
    defined_at: str = ""
    # Input positions whose buffer may hold the output (see "buffer forwarding").
    forward: tuple[int, ...] = ()
    # The variable update may run at the end of its step (see "deferred update").
    defer: bool = False


_KERNELS: dict[tuple[str, str], KernelDef] = {}


def kernel(
    op_type: str,
    devices: tuple[str, ...] | str = ALL,
    step: bool = False,
    asynchronous: bool = False,
    host_memory: tuple[str, ...] = (),
    expensive: bool = False,
    forward: tuple[int, ...] = (),
    defer: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the kernel of `op_type` on `devices`
    (`forward`: the inputs it can write its output into; `defer`: its variable update
    may run at the end of the step; see the module docstring)."""
    if isinstance(devices, str):
        devices = (devices,)

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        frame = traceback.extract_stack(limit=2)[0]
        where = f"{frame.filename}:{frame.lineno}"
        for dev in devices:
            key = (op_type, dev)
            if key in _KERNELS:
                raise ValueError(
                    f"Kernel for op '{op_type}' on {dev} is already registered "
                    f"(first at {_KERNELS[key].defined_at})."
                )
            _KERNELS[key] = KernelDef(
                op_type, dev, fn, step or asynchronous, asynchronous, host_memory, expensive, where,
                tuple(forward), defer,
            )
        return fn

    return register


def find_kernel(op_type: str, device_type: str) -> KernelDef | None:
    return _KERNELS.get((op_type, device_type))


def supported_device_types(op_type: str) -> list[str]:
    return [d for (t, d) in _KERNELS if t == op_type]


def registered_kernels() -> dict[tuple[str, str], KernelDef]:
    return dict(_KERNELS)


def host_memory_indices(kdef: KernelDef, op: Any) -> tuple[frozenset[int], frozenset[int]]:
    """The positions among `op`'s data inputs and among its outputs of the arguments
    `kdef` keeps in host memory (`host_memory` names arguments; a list argument
    covers all its positions).  Unknown names are ignored."""
    names = kdef.host_memory
    od = getattr(op, "op_def", None)
    if not names or od is None:
        return frozenset(), frozenset()
    key = (kdef.op_type, kdef.device_type, _arity(op, od.inputs), _arity(op, od.outputs))
    hit = _HOST_INDICES.get(key)
    if hit is None:
        hit = _HOST_INDICES[key] = (_positions(op, od.inputs, names), _positions(op, od.outputs, names))
    return hit


_HOST_INDICES: dict[tuple[Any, ...], tuple[frozenset[int], frozenset[int]]] = {}


def _arg_len(op: Any, arg: Any) -> int:
    if arg.number_attr is not None:
        return int(op._attrs[arg.number_attr])
    if arg.type_list_attr is not None:
        return len(op._attrs[arg.type_list_attr])
    return 1


def _arity(op: Any, args: Any) -> tuple[int, ...]:
    return tuple(_arg_len(op, a) for a in args)


def _positions(op: Any, args: Any, names: tuple[str, ...]) -> frozenset[int]:
    out: set[int] = set()
    i = 0
    for a in args:
        n = _arg_len(op, a)
        if a.name in names:
            out.update(range(i, i + n))
        i += n
    return frozenset(out)


def frame_of(step: Any) -> tuple[str, int]:
    """`(frame_id, iteration)` of the invocation that received `step`; `("", 0)` in
    the root frame (outside every loop)."""
    return getattr(step, "frame_id", ""), getattr(step, "iteration", 0)


def can_forward(x: Any) -> bool:
    """Whether a kernel may write its output into its input `x`, which the plan
    declared forwardable (`ctx.forwardable`): `x` is a writeable NumPy array (not 0-d:
    those flow as NumPy scalars) that owns its data and that nothing holds but the step's slot and this call -- not an alias
    (an Identity's output still alive, a view's base, a fetched or fed value, a
    variable's or a constant's storage, the same value passed twice).  Call it from
    the kernel itself, on the kernel's own parameter: it counts references, and
    `_ALONE` is the count of a value held by exactly that chain."""
    return (type(x) is np.ndarray and x.base is None and x.ndim > 0 and x.flags.writeable
            and sys.getrefcount(x) <= _ALONE)


def fits(y: Any, x: Any) -> bool:
    """Whether `y` broadcasts to `x`'s shape without growing it and has its dtype, so
    that an elementwise result of the two has `x`'s shape and dtype."""
    if y.dtype != x.dtype:
        return False
    ys, xs = y.shape, x.shape
    if ys == xs or not ys:
        return True
    k = len(xs) - len(ys)
    if k < 0:
        return False
    for i, d in enumerate(ys):
        if d != 1 and d != xs[k + i]:
            return False
    return True


def _count_alone() -> int:
    """The reference count `can_forward` sees for a value held by one local of a
    generated straight-line function and passed to a kernel: measured by running that
    very chain once (a Python version may count differently)."""
    seen: list[int] = []

    def probe_kernel(ctx: Any, x: Any) -> None:
        seen.append(_probe_count(x))

    ns: dict[str, Any] = {"k0": probe_kernel, "np": np}
    exec(compile("def _step(c0):\n    s0 = np.empty(4)\n    k0(c0, s0)\n", "<forwarding probe>", "exec"), ns)
    ns["_step"](None)
    return seen[0]


def _probe_count(x: Any) -> int:
    return sys.getrefcount(x)


_ALONE = _count_alone()
