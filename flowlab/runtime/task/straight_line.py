"""The straight-line function of a plan: one generated line per op (flowlab.runtime.task.plan).

`generate_straight_line(plan)` compiles a plan without control flow (and with at most
one asynchronous kernel) into a Python function `_step(step, feeds)` with one line
per op in a fixed topological order (the approach of torch.fx's code generation):
`s7 = k5(c5, s6, s4.read())` calls node 5's kernel with its context and its input
slots, which are the function's local variables.  Constants are bound as values, an
Identity becomes a second name for its input, a NoOp without inputs no line at all.
Because the order is fixed, the generator knows where each value is read for the last
time: it deletes the name there and lets the kernels that can write their output into
such a dying input do so (buffer forwarding, flowlab.runtime.task.forwarding), and a
Conv2D -> BiasAdd -> Relu chain whose intermediates nothing else reads runs as one
call (flowlab.runtime.task.epilogues).  Ops computed
from shapes alone run as one block that is skipped while the shapes stay the same
(flowlab.runtime.task.shape_memo).

With `traced=True` it generates the recording twin instead (`TracedLine`): every op
keeps its kernel call and its outputs, a clock read goes between two ops, and nothing
is deleted, forwarded, fused or memoized, so that a trace describes the step as the untraced function
runs it.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np

from flowlab.kernels.conv_kernels import conv2d_bias_relu
from flowlab.kernels.core_kernels import identity as _identity_fn
from flowlab.kernels.core_kernels import no_op as _no_op_fn
from flowlab.kernels.resources import GENERATION
from flowlab.runtime.task import deferred_updates, epilogues, forwarding, shape_memo
from flowlab.runtime.task.plan import (
    OutputShape,
    Plan,
    PlanNode,
    TracedLine,
    await_async,
    const_value,
    fed_fetch_value,
    fetch_value,
)

_plan_ids = itertools.count()


def generate_straight_line(plan: Plan, traced: bool = False) -> None:
    """Compile `plan` into one Python function with a line per op (`plan.straight_line`);
    with `traced`, its recording twin instead (`plan.traced`, see `TracedLine`)."""
    lines = ["def _tstep(step, feeds, t, _c=_c):" if traced else "def _step(step, feeds):"]
    ns: dict[str, Any] = {"_fv": fetch_value, "_c": time.perf_counter_ns, "_sd": OutputShape.of}
    line_to_node: dict[int, int] = {}  # line -> node index (traced: position in order)
    out_names: list[str] = []
    out_start: list[int] = []
    if plan.feed_slots:
        lhs = ", ".join(f"s{s}" for s in plan.feed_slots)
        lines.append(f"    {lhs}, = feeds")
        # The traced function is driven by an Execution, which moved the feeds already.
        for j, move in enumerate(() if traced else plan.feed_to_device or ()):
            if move is not None:
                ns[f"_fh{j}"] = move
                lines.append(f"    s{plan.feed_slots[j]} = _fh{j}(s{plan.feed_slots[j]})")
    ns["_aw"] = await_async
    # Both functions run the ops in one order (a trace shows the step as it runs
    # untraced).  Not the dataflow executor's first-in-first-out order: on the mlp_train
    # step that order (all sources first, then layer by layer) cost 2-3% more.
    order = _line_order(plan.nodes)
    # Ops computed from shapes alone run as blocks, once per shape (untraced).
    order, memos = shape_memo.regions(order, plan.fetch_slots)
    # Untraced, a slot is deleted after its last reader and dying inputs may be
    # forwarded (flowlab.runtime.task.forwarding); the traced function keeps every output.
    dying = [[] for _ in order] if traced else forwarding.last_reads(order, plan.fetch_slots)
    forward = {} if traced else forwarding.forwardable(order, dying, plan.feed_slots, plan.fetch_slots)
    memo_at = {} if traced else {r.nodes[0].index: r for r in memos}
    constants = {} if traced else _constant_slots(order)
    # Variable updates that may run, in place, after the last op (deferred_updates).
    defers = set() if traced else deferred_updates.deferrable(order, plan.fetch_slots)
    read_slots = {s for n in order for s, _ in n.inputs} | set(plan.fetch_slots)
    in_memo: set[int] = set()
    handles = [] if traced else [n for n in order if n.op.type == "VariableV2" and n.outputs[0] >= 0]
    # Conv2D -> BiasAdd -> Relu chains done by one call (flowlab.runtime.task.epilogues).
    fused = {} if traced else epilogues.conv_bias_relu(order, dying, forward, _available(order, plan, handles))
    fused_tail = {n.index: c for c, chain in fused.items() for n in chain}

    def emit(node: PlanNode, k: int, pad: str, dels: list[int]) -> None:
        i = node.index
        key = k if traced else i
        out_start.append(len(out_names))
        if traced:
            lines.append(f"{pad}t[{k}] = _c()")
        if node.constants is not None:
            # A folded op: its stored values, bound once like a Const's.
            for j, slot in enumerate(node.outputs):
                ns[f"K{i}_{j}"] = node.constants[j]
                out_names.append(f"s{slot}" if slot >= 0 else f"K{i}_{j}")
                if slot >= 0:
                    lines.append(f"{pad}s{slot} = K{i}_{j}")
                    line_to_node[len(lines)] = key
            return
        if node.op.type == "Const" and node.outputs[0] >= 0:
            # A constant is a value of the generated function, not a call per step.
            ns[f"K{i}"] = const_value(node.op.get_attr("value"))
            lines.append(f"{pad}s{node.outputs[0]} = K{i}")
            line_to_node[len(lines)] = key
            out_names.append(f"s{node.outputs[0]}")
            return
        if not traced and node.kernel.fn is _no_op_fn and not node.inputs:
            return  # computes nothing: its place in the order is all it means
        if not traced and node.outputs and node.outputs[0] >= 0 and (
                (node.kernel.fn is _identity_fn and len(node.inputs) == 1) or _same_shape_reshape(node, constants)):
            # An Identity passes its value on: a name for it, not a kernel call.  So
            # does a Reshape to the shape its input has (Grappler's arithmetic
            # optimizer removes those: the gradient's Sum -> Reshape of a bias).  A
            # name nobody reads is not made (it would keep a variable's array held
            # to the end); a variable is still read (an uninitialized one fails).
            slot, read = node.inputs[0]
            if node.outputs[0] not in read_slots:
                if read:
                    lines.append(f"{pad}s{slot}.read()")
                    line_to_node[len(lines)] = key
                _delete(lines, dels, pad)
                return
            lines.append(f"{pad}s{node.outputs[0]} = s{slot}{'.read()' if read else ''}")
            line_to_node[len(lines)] = key
            _delete(lines, dels, pad)
            return
        if i in fused:
            # The chain's Conv2D: the fused call; `_e{i}` says whether it fused.
            bias_slot, bias_read = fused[i][0].inputs[1]
            ns[f"k{i}"], ns[f"c{i}"] = conv2d_bias_relu, node.ctx
            args = [f"c{i}"] + [f"s{slot}.read()" if read else f"s{slot}" for slot, read in node.inputs]
            args.append(f"s{bias_slot}.read()" if bias_read else f"s{bias_slot}")
            lines.append(f"{pad}s{node.outputs[0]}, _e{i} = k{i}({', '.join(args)})")
            line_to_node[len(lines)] = key
            out_names.append(f"s{node.outputs[0]}")
            _delete(lines, dels, pad)
            return
        call_pad = pad
        if i in fused_tail:
            # The chain's BiasAdd or Relu: done by the Conv2D's call when it fused.
            lines.append(f"{pad}if _e{fused_tail[i]}:")
            lines.append(f"{pad}    s{node.outputs[0]} = s{node.inputs[0][0]}")
            lines.append(f"{pad}else:")
            call_pad = pad + "    "
        ns[f"k{i}"] = node.kernel.fn
        if i in forward or i in defers:
            ns[f"c{i}"] = node.ctx.forwarding(forward.get(i, ()), defers=i in defers)
        else:
            ns[f"c{i}"] = node.ctx
        args = [f"c{i}"]
        if node.kernel.needs_step and not node.kernel.asynchronous:
            args.append("step")
        args.extend(f"s{slot}.read()" if read else f"s{slot}" for slot, read in node.inputs)
        if node.kernel.asynchronous:
            call = f"_aw(step, k{i}, {', '.join(args)})"
        else:
            call = f"k{i}({', '.join(args)})"
        # Traced, an output nobody reads still gets a name: the trace describes it.
        names = [f"s{s}" if s >= 0 else f"u{i}_{j}" if traced else "_" for j, s in enumerate(node.outputs)]
        out_names.extend(names)
        if node.num_outputs == 0 or (not traced and all(s < 0 for s in node.outputs)):
            stmt = call
        elif node.single_output:
            stmt = f"{names[0]} = {call}"
        else:
            stmt = f"{', '.join(names)}, = {call}"
        lines.append(f"{call_pad}{stmt}")
        line_to_node[len(lines)] = key
        _delete(lines, dels, pad)
        if traced:
            # An output nobody reads is kept as its description only: it is freed at
            # once, as in the untraced function (a 400 KB gradient in mlp_train).
            for j, s in enumerate(node.outputs):
                if s < 0 and node.num_outputs:
                    lines.append(f"{pad}u{i}_{j} = _sd(u{i}_{j})")

    if handles:
        _emit_variable_handles(handles, lines, ns, line_to_node, emit)
    held = {n.index for n in handles}
    for k, node in enumerate(order):
        if node.index in held:
            continue
        region = memo_at.get(node.index)
        if region is not None:
            _emit_memo(region, k, dying, lines, ns, line_to_node, emit)
            in_memo.update(n.index for n in region.nodes)
        if node.index in in_memo:
            continue
        emit(node, k, "    ", dying[k])
    out_start.append(len(out_names))
    if traced:
        lines.append(f"    t[{len(order)}] = _c()")
    rets = []
    fed_slots = set(plan.feed_slots)
    ns["_ffv"] = fed_fetch_value
    for slot, ref in zip(plan.fetch_slots, plan.fetch_refs):
        if slot in fed_slots:
            rets.append(f"_ffv(s{slot})")
        else:
            rets.append(f"_fv(s{slot}.read())" if ref else f"_fv(s{slot})")
    if traced:
        outs = f"({', '.join(out_names)},)" if out_names else "()"
        lines.append(f"    return [{', '.join(rets)}], {outs}")
    elif defers:
        # The fetches first (none reads a deferred update's variable), then the writes.
        lines.append(f"    _r = [{', '.join(rets)}]")
        lines.append("    if step.deferred:")
        lines.append("        step.commit()")
        lines.append("    return _r")
    else:
        lines.append(f"    return [{', '.join(rets)}]")
    source = "\n".join(lines) + "\n"
    filename = f"<flowlab {'traced ' if traced else ''}plan {next(_plan_ids)}>"
    code = compile(source, filename, "exec")
    exec(code, ns)
    fn = ns["_tstep" if traced else "_step"]
    if traced:
        plan.traced = TracedLine(fn, fn.__code__, order, out_start, out_names, line_to_node, source)
        return
    plan.straight_line = fn
    plan.code = fn.__code__
    plan.line_to_node = line_to_node
    plan.source = source


def _available(order: list[PlanNode], plan: Plan, handles: list[PlanNode]) -> dict[int, int]:
    """{slot: position in `order` of the line that gives it its value}; -1 for the
    feeds and the variable handles, which the function has before its first op."""
    at = {n.outputs[0]: -1 for n in handles}
    at.update((s, -1) for s in plan.feed_slots)
    for k, n in enumerate(order):
        for s in n.outputs:
            if s >= 0:
                at.setdefault(s, k)
    return at


def _same_shape_reshape(node: PlanNode, constants: dict[int, Any]) -> bool:
    """A Reshape to a constant shape that is its input's known shape (so the kernel
    could not fail: there is nothing to check)."""
    if node.op.type != "Reshape" or node.constants is not None or len(node.inputs) != 2:
        return False
    shape_in = node.op.inputs[0].shape
    target = constants.get(node.inputs[1][0])
    return bool(shape_in.is_fully_defined() and type(target) is np.ndarray and target.ndim == 1
                and target.tolist() == shape_in.as_list())


def _constant_slots(order: list[PlanNode]) -> dict[int, Any]:
    """{slot: value} of the Const and folded ops' outputs."""
    out: dict[int, Any] = {}
    for n in order:
        if n.constants is not None:
            out.update((s, v) for s, v in zip(n.outputs, n.constants) if s >= 0)
        elif n.op.type == "Const" and n.outputs[0] >= 0:
            out[n.outputs[0]] = n.op.get_attr("value")
    return out


def _delete(lines: list[str], slots: list[int], pad: str = "    ") -> None:
    """Drop the straight-line function's names of values read for the last time."""
    if slots:
        lines.append(f"{pad}del {', '.join(f's{s}' for s in slots)}")


def _emit_variable_handles(handles: list[PlanNode], lines: list[str], ns: dict[str, Any],
                           line_to_node: dict[int, int], emit: Any) -> None:
    """The step's VariableV2 ops, first (they wait for nothing): run once, then their
    VariableStates are held by the function until a resource is removed anywhere
    (`resources.GENERATION`), instead of a lookup per variable per step."""
    # One cell holding (generation, states), replaced whole: concurrent steps of the
    # plan read a consistent pair.
    ns["_RG"], ns["_VH"] = GENERATION, [(None, None)]
    names = ", ".join(f"s{n.outputs[0]}" for n in handles)
    lines.append("    _g = _RG[0]")
    lines.append("    _vh = _VH[0]")
    lines.append("    if _vh[0] == _g:")
    lines.append(f"        {names}, = _vh[1]")
    lines.append("    else:")
    for n in handles:
        emit(n, 0, "        ", [])
    lines.append(f"        _VH[0] = (_g, ({names},))")


def _emit_memo(region: shape_memo.Region, k: int, dying: list[list[int]],
               lines: list[str], ns: dict[str, Any], line_to_node: dict[int, int], emit: Any) -> None:
    """A shape-memo block (flowlab.runtime.task.shape_memo): the region's key, its exported
    values from the memo when the key is the last one's, else its lines (which
    delete only the region's own values) and the store.  The inputs that die in the
    region are deleted after the block, on both paths."""
    r = region.nodes[0].index
    ns[f"_M{r}"] = [None]  # (key, exported values), replaced whole (concurrent steps)
    ns["_mst"], ns["_shp"] = shape_memo.store, shape_memo.shape_of
    keys: list[str] = []
    for root in region.roots:
        keys.extend(f"_shp(s{slot})" for slot, _read in root.inputs)
    lines.append(f"    _mk{r} = ({', '.join(keys)},)")
    line_to_node[len(lines)] = region.roots[0].index
    exports = ", ".join(f"s{s}" for s in region.exports)
    lines.append(f"    _m{r} = _M{r}[0]")
    lines.append(f"    if _m{r} is not None and _m{r}[0] == _mk{r}:")
    lines.append(f"        {exports}, = _m{r}[1]" if exports else "        pass")
    lines.append("    else:")
    own = {s for n in region.nodes for s in n.outputs if s >= 0}
    outside: list[int] = []
    for j, node in enumerate(region.nodes):
        at = k + j  # the region's nodes are contiguous in the order from `k`
        emit(node, at, "        ", [s for s in dying[at] if s in own])
        outside.extend(s for s in dying[at] if s not in own)
    lines.append(f"        _mst(_M{r}, _mk{r}, ({exports}{',' if exports else ''}))")
    _delete(lines, outside)


def _line_order(nodes: list[PlanNode]) -> list[PlanNode]:
    """The straight-line functions' order: constants that wait for nothing first (a
    line each, free; placed first as the dataflow executor does, so that a trace's
    critical path does not run through them), then `_async_last_order`."""
    first = [n for n in nodes if not n.deps and (n.constants is not None or n.op.type == "Const")]
    if not first:
        return _async_last_order(nodes)
    hoisted = {n.index for n in first}
    return first + _async_last_order([n for n in nodes if n.index not in hoisted])


def _async_last_order(nodes: list[PlanNode]) -> list[PlanNode]:
    """A topological order that runs the (single) asynchronous node as late as possible:
    everything that does not depend on it first.  Then nothing that could unblock it
    (an enqueue, a close) is still waiting behind it when it blocks, so waiting in line
    is as live as the dataflow executor."""
    waits = [n for n in nodes if n.kernel.asynchronous]
    if not waits:
        return nodes
    after = {waits[0].index}
    for n in nodes:  # nodes are in topological order
        if any(d in after for d in n.deps):
            after.add(n.index)
    return [n for n in nodes if n.index not in after] + [n for n in nodes if n.index in after]
