"""The compiled plan of a step signature: read-only, shared by concurrent steps.

`compile_plan` takes the pruned, placed ops and produces a `Plan`: one `PlanNode` per
op (its kernel, its static `NodeContext`, where its inputs come from, whom it feeds)
and value *slots* (one per produced or fed tensor).  Two ways run a plan:

* the straight-line path: when no op is asynchronous or control flow, the plan is
  also compiled into a generated Python function with one line per op, in
  topological order (flowlab.runtime.task.straight_line, which also deletes each value
  after its last reader and forwards dying buffers, flowlab.runtime.task.forwarding).  A cached step then
  costs one Python call per kernel and nothing else.  An exception is traced back to
  its line, hence to its op, at no cost until it happens.  A traced step runs its
  twin (`Plan.traced_line()`, generated on first use), which also reads the clock
  once per op and returns every output, for a trace to describe after the step.
* the dataflow executor (`flowlab.runtime.task.executor`): pending counts, a ready queue,
  dead values, asynchronous kernels, a pool for expensive kernels, events, and
  driving one op at a time.  Every plan can run this way.

Optimization: `compile_plan(..., optimization=opt)` compiles the rewritten view of
`flowlab.runtime.master.optimize` (the Graph itself is never changed): inputs go through
`opt.inputs_of(op)` (merged ops and bypassed identities read their replacement), and
an op folded to constants becomes a node whose kernel returns the stored values
(the straight-line function binds them as constants, like a `Const`).

Reading a variable: an edge from a `Ref(T)` output into a plain input reads the
variable's current array at the consumer (`VariableState.read`), so an
uninitialized variable fails at the op that uses it, as in TensorFlow.  An Identity
of a variable (its `read`) is an alias of it, and an Enter or a Switch over such a
read hands the variable itself into the loop frame or the branch (TensorFlow's
forward the buffer), so a reader there that runs after an update sees it.
"""

from __future__ import annotations

import itertools
import queue
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.graph.tensor import Operation, Tensor
from flowlab.kernels.registry import KernelDef, find_kernel
from flowlab.runtime.task.device import Device
from flowlab.runtime.task.fp_errors import enter_quiet, exit_quiet
from flowlab.runtime.task.memory_types import ensure_memory_types
from flowlab.runtime.task.step import Step


class NodeContext:
    """What a kernel knows about its node; built once per plan, never per step."""

    __slots__ = ("op", "name", "op_type", "attrs", "device", "xp", "resources", "index", "forwardable",
                 "defers")

    def __init__(self, op: Operation, device: Device, index: int) -> None:
        self.op = op
        self.name = op.name
        self.op_type = op.type
        self.attrs = op._attrs
        self.device = device
        self.xp = device.xp
        self.resources = device.resources
        self.index = index
        # Inputs whose value dies at this op (buffer forwarding, see
        # flowlab.kernels.registry): empty but in the straight-line function's twin.
        self.forwardable: tuple[int, ...] = ()
        # The kernel may defer its variable update to the end of the step
        # (flowlab.runtime.task.deferred_updates): False but in the straight-line twin.
        self.defers = False

    def forwarding(self, positions: tuple[int, ...], defers: bool = False) -> NodeContext:
        """A twin of this context whose kernel may write into the inputs at `positions`
        and, with `defers`, defer its variable update."""
        twin = NodeContext(self.op, self.device, self.index)
        twin.forwardable = positions
        twin.defers = defers
        return twin

    def error(self, cls: type[errors.OpError], message: str) -> errors.OpError:
        """An error of `cls` for this node (the executor adds type, device and place)."""
        return cls(None, self.op, message)

    def __repr__(self) -> str:
        return f"<NodeContext {self.op_type} '{self.name}' on {self.device.name}>"


@dataclass
class PlanNode:
    index: int
    op: Operation
    kernel: KernelDef
    ctx: NodeContext
    # (slot, read_ref) per data input, in order.
    inputs: list[tuple[int, bool]]
    # Slot of each output (-1 where nobody needs it).
    outputs: list[int]
    num_outputs: int
    single_output: bool  # the kernel returns one value, not a sequence
    deps: list[int] = field(default_factory=list)  # producer node indices
    consumers: list[int] = field(default_factory=list)
    constants: list[Any] | None = None  # the op was folded: its output values


@dataclass
class Plan:
    """A compiled step.  Read-only after construction."""

    graph_version: int
    nodes: list[PlanNode]
    num_slots: int
    feed_slots: list[int]
    fetch_slots: list[int]
    fetch_refs: list[bool]
    fetch_names: list[str]
    straight_line: Any = None  # generated function (step, feeds) -> list, or None
    line_to_node: dict[int, int] = field(default_factory=dict)
    code: Any = None
    source: str = ""
    # Its traced twin (`traced_line()`), generated on the first traced step.
    traced: TracedLine | None = None
    # Facts about the nodes, computed once by compile_plan (a step reads them).
    # Kernels registered as expensive: with two or more, a session with an op pool
    # runs the plan on the dataflow executor so that independent ones overlap.
    num_expensive: int = 0
    has_async: bool = False  # some kernel may wait: the step needs deadline and cancel
    has_control_flow: bool = False  # some op produces or consumes dead values
    initial_pending: tuple[int, ...] = ()  # pending-input count per node
    placement: Any = None  # the Placement the plan was compiled for (for inspection)
    optimization: Any = None  # the Optimization it was compiled from (for inspection)
    # Per feed, the accelerator's `from_host` that moves the fed host array to where it
    # is read; None when every feed is read on a host-memory device (the usual case).
    feed_to_device: list[Any] | None = None
    _table: list[tuple[Any, ...]] | None = None

    def dataflow_table(self) -> list[tuple[Any, ...]]:
        """Per node, what the dataflow executor's plain loop needs, as one tuple:
        (kernel, ctx, needs_step, special, input slots, reads (None when no input is a
        variable read), output slots, consumers, single).  `special` marks asynchronous
        and expensive kernels, which take the full path.  Built on first use."""
        if self._table is None:
            self._table = [
                (
                    n.kernel.fn, n.ctx, n.kernel.needs_step,
                    n.kernel.asynchronous or n.kernel.expensive,
                    tuple(s for s, _ in n.inputs),
                    tuple(r for _, r in n.inputs) if any(r for _, r in n.inputs) else None,
                    tuple(n.outputs) if n.num_outputs else (), tuple(n.consumers),
                    n.single_output and n.num_outputs == 1,
                )
                for n in self.nodes
            ]
        return self._table

    def node_for_exception(self, exc: BaseException) -> PlanNode | None:
        """The node whose line of the straight-line function raised `exc`."""
        i = _line_of(exc, self.code, self.line_to_node)[0]
        return None if i is None else self.nodes[i]

    def traced_line(self) -> TracedLine | None:
        """The traced straight-line function (None when the plan has no straight-line
        function), generated on first use: untraced steps never pay for it."""
        if self.straight_line is None:
            return None
        if self.traced is None:
            generate_straight_line(self, traced=True)
        return self.traced


@dataclass
class TracedLine:
    """The straight-line function of a plan, recording when each op ran.

    `fn(step, feeds, t)` takes the feeds already on their devices and a list `t` of
    `len(order) + 1` slots; it stores `time.perf_counter_ns()` into `t[k]` before the
    k-th op runs and into `t[len(order)]` after the last, so op k ran from `t[k]` to
    `t[k + 1]` (one clock read per op: what lies between two ops is one list store).
    It returns (fetched values, outputs): every output of every op, flat, op k's at
    `outputs[out_start[k]:out_start[k + 1]]` -- including outputs nobody reads, which
    the untraced function drops -- so that a trace can describe them after the step.
    """

    fn: Any
    code: Any
    order: list[PlanNode]  # the ops in the order the function runs them
    out_start: list[int]  # len(order) + 1 offsets into the outputs
    out_names: list[str]  # the name holding each output (to read a failed step's frame)
    line_to_pos: dict[int, int]  # source line -> position in `order`
    source: str = ""

    def failed_at(self, exc: BaseException) -> tuple[int | None, dict[str, Any]]:
        """(position in `order` of the op whose line raised `exc` or None, the
        generated function's names at that moment)."""
        return _line_of(exc, self.code, self.line_to_pos)


class OutputShape:
    """What a traced step keeps of an array nobody reads: shape, dtype and bytes."""

    __slots__ = ("shape", "dtype", "nbytes")

    def __init__(self, shape: tuple[int, ...], dtype: Any, nbytes: int) -> None:
        self.shape, self.dtype, self.nbytes = shape, dtype, nbytes

    @staticmethod
    def of(v: Any) -> Any:
        if isinstance(v, (np.ndarray, np.generic)):
            return OutputShape(v.shape, v.dtype, v.nbytes)
        return v  # a variable (a Ref output), a string, ...: kept as it is


def _line_of(exc: BaseException, code: Any, line_map: dict[int, int]) -> tuple[int | None, dict[str, Any]]:
    tb = exc.__traceback__
    found: int | None = None
    names: dict[str, Any] = {}
    while tb is not None:
        if tb.tb_frame.f_code is code:
            found = line_map.get(tb.tb_lineno)
            names = {**tb.tb_frame.f_globals, **tb.tb_frame.f_locals}
        tb = tb.tb_next
    return found, names


def fetch_value(x: Any) -> Any:
    """A fetched value as Session.run returns it: a NumPy scalar for 0-d, and never an
    array the runtime still holds (read-only arrays are variable or constant storage)."""
    if type(x) is np.ndarray:
        if not x.ndim:
            return x[()]
        if not x.flags.writeable:
            return x.copy()
        return x
    if hasattr(x, "__cuda_array_interface__"):  # produced on a GPU: back to the host
        return fetch_value(x.get())
    return x


def const_value(arr: Any) -> Any:
    """How a constant flows through a step: 0-d values as NumPy scalars, whose
    arithmetic is several times cheaper than 0-d arrays'; others as the read-only
    array stored in the graph."""
    if type(arr) is np.ndarray and arr.ndim == 0:
        return arr[()]
    return arr


def fed_fetch_value(x: Any) -> Any:
    """A fetched tensor that was fed comes back as the fed array (TensorFlow returns
    a 0-d array here, not a scalar; strings as an object array of bytes, NULs kept)."""
    if isinstance(x, bytes):
        return np.array(x, dtype=object)
    return np.array(x)


def compile_plan(
    ops: list[Operation],
    device_of: dict[str, Device],
    feeds: list[Tensor],
    fetches: list[Tensor],
    graph_version: int,
    straight_line: bool = True,
    optimization: Any = None,
) -> Plan:
    """Build the plan for `ops` (topologically ordered, already pruned and placed;
    with `optimization`, its rewritten view: `ops` is `optimization.ops`)."""
    inputs_of = optimization.inputs_of if optimization is not None else own_inputs
    folded = optimization.constants if optimization is not None else {}
    slot_of: dict[tuple[int, int], int] = {}
    counter = itertools.count()
    feed_slots = []
    for t in feeds:
        key = (id(t.op), t.value_index)
        if key not in slot_of:
            slot_of[key] = next(counter)
        feed_slots.append(slot_of[key])
    fed = {(id(t.op), t.value_index) for t in feeds}

    index_of = {id(op): i for i, op in enumerate(ops)}
    # Which outputs someone needs: consumers in the plan, and fetches.
    needed: set[tuple[int, int]] = set()
    for op in ops:
        for t in inputs_of(op):
            needed.add((id(t.op), t.value_index))
    for t in fetches:
        needed.add((id(t.op), t.value_index))

    nodes: list[PlanNode] = []
    for i, op in enumerate(ops):
        device = device_of[op.name]
        values = folded.get(op.name)
        if device.xp is not np and (values is not None or op.type == "Const"):
            # A constant on an accelerator: memory_types copies it there once (where
            # its readers compute on the device), not per step.
            if values is None:
                values = [const_value(op.get_attr("value"))]
        kdef = find_kernel(op.type, device.device_type) if values is None else _constant_kernel(op, device, values)
        if optimization is not None and op.name in optimization.noops:
            kdef = optimization.noop_kernel(op, device.device_type)  # its outputs are unused
        if kdef is None:
            raise errors.NotFoundError(
                None, op,
                f"No kernel registered for op {op.type} '{op.name}' on {device.name}"
                + (f" (defined at {op.defined_at()})" if op.defined_at() else ""),
            )
        outs = []
        for t in op._outputs:
            key = (id(op), t.value_index)
            if key in fed:
                outs.append(-1)  # a fed output: the feed wins, the kernel's value is dropped
            elif key in needed:
                slot_of[key] = next(counter)
                outs.append(slot_of[key])
            else:
                outs.append(-1)
        od = op.op_def
        single = od is not None and len(od.outputs) == 1 and not od.outputs[0].is_list
        nodes.append(
            PlanNode(i, op, kdef, NodeContext(op, device, i), [], outs, len(op._outputs), single,
                     constants=values)
        )

    # An Identity of a variable (its "read" op) aliases the variable in TensorFlow 1.x:
    # the buffer is shared, so a consumer sees the value as of when *it* runs (e.g.
    # after an assign_add it is control-dependent on).  Such an Identity's output slot is
    # therefore an alias of the variable's slot: its consumers read the variable.
    # An Enter or a Switch over such a read forwards the variable itself into the loop
    # frame or the branch (TensorFlow's forward the buffer): its output slots hold the
    # VariableState and alias themselves, so readers there read it when they run.  Not
    # into a Merge, which takes its input as it arrives on the frame path: an output a
    # Merge consumes is read at the Enter or Switch, as before, and a Merge over an
    # alias takes the aliasing Identity's value.
    ref_alias: dict[int, int] = {}
    into_merge = merge_inputs(ops, inputs_of)
    for node in nodes:
        op = node.op
        arg_is_ref = input_ref_flags(op)
        deps: set[int] = set()
        forwards = op.type in FORWARDS_REFERENCE and not any(
            (id(op), k) in into_merge for k, s in enumerate(node.outputs) if s >= 0)
        for t, takes_ref in zip(inputs_of(op), arg_is_ref):
            key = (id(t.op), t.value_index)
            slot = slot_of.get(key)
            if slot is None:
                raise errors.InternalError(None, op, f"input {t.name} of '{op.name}' has no value slot")
            if key in fed and takes_ref:
                raise errors.InvalidArgumentError(
                    None, op,
                    f"{op.type} '{op.name}' needs the variable behind {t.name} itself, but "
                    f"{t.name} is fed; a fed variable only replaces its value for readers.",
                )
            # A fed reference is a plain value already: readers take it as it is.
            read = t.dtype.is_ref_dtype and not takes_ref and key not in fed
            if not read and not takes_ref and slot in ref_alias and op.type not in MERGES:
                slot, read = ref_alias[slot], True
            if read and forwards and not node.inputs:  # the data input: hand the variable on
                read = False
                for s in node.outputs:
                    if s >= 0:
                        ref_alias[s] = s
            node.inputs.append((slot, read))
            if key not in fed:
                deps.add(index_of[id(t.op)])
        if op.type == "Identity" and node.inputs and node.inputs[0][1] and node.outputs[0] >= 0:
            ref_alias[node.outputs[0]] = node.inputs[0][0]
        for c in op._control_inputs:
            if id(c) in index_of:
                deps.add(index_of[id(c)])
        node.deps = sorted(deps)
        for d in node.deps:
            nodes[d].consumers.append(node.index)

    n_async = sum(n.kernel.asynchronous for n in nodes)
    fetch_slots = [slot_of[(id(t.op), t.value_index)] for t in fetches]
    fetch_refs = [t.dtype.is_ref_dtype and (id(t.op), t.value_index) not in fed for t in fetches]
    for i, slot in enumerate(fetch_slots):
        if not fetch_refs[i] and slot in ref_alias and slot not in feed_slots:
            fetch_slots[i], fetch_refs[i] = ref_alias[slot], True
    plan = Plan(
        graph_version, nodes, next(counter), feed_slots, fetch_slots, fetch_refs,
        [t.name for t in fetches],
        num_expensive=sum(n.kernel.expensive for n in nodes),
        has_async=n_async > 0,
        has_control_flow=any(n.op.op_def is not None and n.op.op_def.is_control_flow for n in nodes),
        initial_pending=tuple(len(n.deps) for n in nodes),
    )
    # Host and device memories agree on every edge (no-op for CPU-only plans).
    plan.feed_to_device = ensure_memory_types(nodes, feed_slots, _constant_kernel)
    if straight_line and n_async <= 1 and not plan.has_control_flow:
        generate_straight_line(plan)
    return plan


# Ops whose first input flows out unchanged into a frame or a branch (TensorFlow's
# forward the buffer); flowlab.runtime.master.partition_refs does the same across devices.
FORWARDS_REFERENCE = frozenset({"Enter", "Switch"})


MERGES = frozenset({"Merge", "RefMerge"})


def merge_inputs(ops: list[Operation], inputs_of: Any) -> set[tuple[int, int]]:
    """(id(op), output index) of every tensor some Merge of `ops` takes as input."""
    return {(id(t.op), t.value_index) for op in ops if op.type in MERGES for t in inputs_of(op)}


def own_inputs(op: Operation) -> list[Tensor]:
    """An op's data inputs as the graph has them (no optimization view)."""
    return op._inputs


def _constant_kernel(op: Operation, device: Device, values: list[Any]) -> KernelDef:
    """The kernel of a folded op: its stored output values."""
    od = op.op_def
    if len(values) == 1 and not od.outputs[0].is_list:
        value = values[0]

        def fn(ctx: Any) -> Any:
            return value
    else:
        out = list(values)

        def fn(ctx: Any) -> Any:
            return out

    return KernelDef(op.type, device.device_type, fn, defined_at="constant folding")


def input_ref_flags(op: Operation) -> list[bool]:
    """Per data input of `op`, whether its op definition takes it as a reference."""
    od = op.op_def
    if od is None:
        return [False] * len(op._inputs)
    flags: list[bool] = []
    for arg in od.inputs:
        if arg.number_attr is not None:
            n = int(op._attrs[arg.number_attr])
        elif arg.type_list_attr is not None:
            n = len(op._attrs[arg.type_list_attr])
        else:
            n = 1
        flags.extend([arg.is_ref] * n)
    return flags


def await_async(step: Step, fn: Any, ctx: NodeContext, *args: Any) -> Any:
    """Run an asynchronous kernel on the straight-line path and wait for its `done`
    (at once when it completes synchronously).  The step's deadline bounds the wait;
    cancellation reaches the kernel through the callbacks it registered."""
    box: queue.SimpleQueue[Any] = queue.SimpleQueue()
    fn(ctx, step, lambda outputs=None, error=None: box.put((outputs, error)), *args)
    try:
        if step.deadline is None:
            outputs, error = box.get()
        else:
            outputs, error = box.get(timeout=max(0.0, step.deadline - time.monotonic()))
    except queue.Empty:
        err = errors.DeadlineExceededError(
            None, None, "Timed out waiting for the step to finish (RunOptions.timeout_in_ms)."
        )
        step.get_cancellation().cancel(err)
        raise err from None
    if error is not None:
        raise error
    return outputs


def op_error(exc: BaseException, op: Operation | None, device: str) -> errors.OpError:
    """Turn a kernel's exception into the TensorFlow-class error that names the op."""
    if isinstance(exc, errors.OpError):
        if getattr(exc, "_flowlab_located", False):
            return exc
        cls: type[errors.OpError] = type(exc)
        msg = exc.message
        op = exc.op if exc.op is not None and op is None else op
    elif isinstance(exc, (ValueError, IndexError, TypeError, ZeroDivisionError, KeyError, np.linalg.LinAlgError)):
        cls, msg = errors.InvalidArgumentError, f"{type(exc).__name__}: {exc}"
    elif isinstance(exc, MemoryError):
        cls, msg = errors.ResourceExhaustedError, f"out of memory: {exc}"
    else:
        cls, msg = errors.UnknownError, f"{type(exc).__name__}: {exc}"
    if op is not None:
        where = op.defined_at()
        msg = f"{op.type} '{op.name}' on {device}: {msg}" + (f" (defined at {where})" if where else "")
    err = cls(None, op, msg)
    err._flowlab_located = True  # type: ignore[attr-defined]
    return err


def run_straight_line(plan: Plan, step: Step, feed_values: list[Any]) -> list[Any]:
    """Run the generated function; on failure undo the step's writes and raise the
    error of the op that failed."""
    token = enter_quiet()
    try:
        return plan.straight_line(step, feed_values)  # type: ignore[misc]
    except Exception as e:
        step.rollback()
        node = plan.node_for_exception(e)
        if node is None:
            raise
        raise op_error(e, node.op, node.ctx.device.name) from e
    finally:
        exit_quiet(token)


# The code generator reads this module's classes and helpers: imported once they exist.
from flowlab.runtime.task.straight_line import generate_straight_line  # noqa: E402
