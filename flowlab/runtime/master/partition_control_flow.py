"""Loops across devices: the control-loop skeleton (paper section 3.4; TensorFlow's
`graph_partition.cc`, `AddControlFlow`).

When the ops of one while loop (a *frame*) sit on several devices, each device runs
its own executor over its partition, and each needs to know when an iteration of the
frame starts and when the loop is over.  The device that computes the loop's
`LoopCond` (the *leader*) knows; the others are told, every iteration, by a Send/Recv
of the predicate.  On every device that has ops of the frame but does not drive it
itself (drive = hold a `NextIteration` of the frame, colocated with its `Merge`),
partitioning adds a *control loop*: four small ops that iterate exactly as the
leader does::

    token --Enter--> Merge <--NextIteration-- Switch:1
                       |                        ^
                       +-------> Switch(pred) --+      pred: the LoopCond, received

Each `_Recv` inside the frame takes a control input from the frame's control op on
its device (the skeleton's `Merge`, or the real loop's `Merge` where the device
drives the frame), so that it runs once per iteration, in the iteration whose key it
waits for; the key carries the frame instance and the iteration
(``...;tensor_name;frame_id:iter``), so every iteration has its own transfers.

Where this differs from TensorFlow, and why:
* The skeleton's Enter does not take a constant (TensorFlow's `_cloop` Enter reads a
  dummy `Const`): it takes a token that is live exactly when the leader's LoopCond
  will run in iteration 0 -- the sum of `Rank`s of the inputs of the Enters the
  LoopCond depends on, each computed where that input lives and sent over in the
  parent frame.  A loop in an untaken `cond` branch, or inside the last (dead)
  iteration of an outer loop, is then dead on every device instead of waiting
  forever for a predicate nobody sends (loop invariants entering it may be live).
* A skeleton is added for every device that has ops of the frame (or ends of a
  transfer inside it), not only for the receiving end of a transfer: a device whose
  ops in the frame read only loop invariants still has to run them once per
  iteration.  Nested frames: a device in an inner frame is in every outer one.
* As TensorFlow (`OptimizeControlFlowColocation`), a `NextIteration` moves to the
  device of the `Merge` it feeds, and an `Enter` (not of a reference or resource) to
  the device of its first consumer: a back edge must not cross devices (a Recv would
  deliver it to the wrong iteration), and a loop invariant then crosses once rather
  than every iteration.  `Switch` and `Exit` stay where placement put them.

A frame that spans devices without a `LoopCond` (a hand-built loop) cannot have
skeletons: `needs_unpartitioned` says so, and the session runs that step as one
placed plan, as before.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from flowlab import errors
from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.kernels.resources import freeze
from flowlab.ops.op_def import get_op_def
from flowlab.runtime.task.device import Device

if TYPE_CHECKING:
    from flowlab.runtime.master.partition import _Partitioner

__all__ = ["Frames", "analyze_frames", "colocate_control_flow", "ControlLoops",
           "loop_spans_devices", "needs_unpartitioned"]

ENTER_TYPES = frozenset({"Enter", "RefEnter"})
EXIT_TYPES = frozenset({"Exit", "RefExit"})
NEXT_TYPES = frozenset({"NextIteration", "RefNextIteration"})
MERGE_TYPES = frozenset({"Merge", "RefMerge"})

InputsOf = Callable[[Operation], list[Tensor]]


@dataclass
class Frames:
    """The frames of a step's ops, as the executor derives them: an Enter's outputs
    are in its child frame (`frame_name`), an Exit's in the parent of the frame it
    runs in, any other op runs in the frame of its first input (or control input)."""

    op_frame: dict[int, str] = field(default_factory=dict)  # id(op) -> frame it runs in
    out_frame: dict[int, str] = field(default_factory=dict)  # id(op) -> frame of its outputs
    parent: dict[str, str] = field(default_factory=dict)  # frame -> parent ("" is the root)
    loop_cond: dict[str, Operation] = field(default_factory=dict)
    enters: dict[str, list[Operation]] = field(default_factory=dict)
    parallel_iterations: dict[str, int] = field(default_factory=dict)

    def depth(self, frame: str) -> int:
        d = 0
        while frame:
            frame = self.parent.get(frame, "")
            d += 1
        return d


def analyze_frames(ops: list[Operation], inputs_of: InputsOf) -> Frames | None:
    """The `Frames` of a step's ops; None without any Enter.  A breadth-first walk
    from the ops without inputs in the step, as the executor's frame analysis (the
    step's order is not topological along a loop's back edge)."""
    if not any(op.type in ENTER_TYPES for op in ops):
        return None
    fr = Frames(parent={"": ""})
    members = {id(op) for op in ops}
    consumers: dict[int, list[Operation]] = {}
    roots = []
    for op in ops:
        deps = [t.op for t in inputs_of(op)] + list(op._control_inputs)
        deps = [d for d in deps if id(d) in members]
        if not deps:
            roots.append(op)
        for d in deps:
            consumers.setdefault(id(d), []).append(op)
    for op in roots:
        fr.op_frame[id(op)] = ""
    queue = deque(roots)
    while queue:
        op = queue.popleft()
        here = fr.op_frame[id(op)]
        if op.type in ENTER_TYPES:
            child = op.get_attr("frame_name")
            fr.parent.setdefault(child, here)
            fr.enters.setdefault(child, []).append(op)
            fr.parallel_iterations.setdefault(child, int(op.get_attr("parallel_iterations")))
            out = child
        elif op.type in EXIT_TYPES:
            out = fr.parent.get(here, "")
        else:
            out = here
            if op.type == "LoopCond" and here:
                fr.loop_cond.setdefault(here, op)
        fr.out_frame[id(op)] = out
        for c in consumers.get(id(op), ()):
            if id(c) not in fr.op_frame:
                fr.op_frame[id(c)] = out
                queue.append(c)
    for op in ops:  # on a cycle no Enter starts: the executor will say so
        fr.op_frame.setdefault(id(op), "")
        fr.out_frame.setdefault(id(op), "")
    return fr


def _spanning_frames(
    ops: list[Operation], device_of: Mapping[str, Device], fr: Frames, inputs_of: InputsOf
) -> set[str]:
    """Frames with a data or control edge between two devices inside them."""
    members = {id(op) for op in ops}
    spanning: set[str] = set()
    for op in ops:
        dst = device_of[op.name]
        for src_op in [t.op for t in inputs_of(op)] + list(op._control_inputs):
            if id(src_op) not in members or device_of[src_op.name] is dst:
                continue
            f = fr.out_frame[id(src_op)] or fr.op_frame[id(op)]
            if f:
                spanning.add(f)
    return spanning


def loop_spans_devices(ops: list[Operation], device_of: Mapping[str, Device], optimization: Any = None) -> bool:
    """Whether a value inside a while loop crosses devices (or a loop's op takes one
    from another device): such a step gets control-loop skeletons."""
    from flowlab.runtime.task.plan import own_inputs

    inputs_of = optimization.inputs_of if optimization is not None else own_inputs
    fr = analyze_frames(ops, inputs_of)
    return fr is not None and bool(_spanning_frames(ops, device_of, fr, inputs_of))


def needs_unpartitioned(ops: list[Operation], device_of: Mapping[str, Device], optimization: Any = None) -> bool:
    """Whether a loop spans devices but has no `LoopCond` to lead it (a hand-built
    loop): partitioning cannot give its devices skeletons, so the session runs such
    a step as one placed plan (every op on its device, no Send/Recv)."""
    from flowlab.runtime.task.plan import own_inputs

    inputs_of = optimization.inputs_of if optimization is not None else own_inputs
    fr = analyze_frames(ops, inputs_of)
    if fr is None:
        return False
    moved = colocate_control_flow(ops, device_of, inputs_of)
    spanning = _spanning_frames(ops, moved, fr, inputs_of)
    # A spanning frame and every frame around it need a leader.
    need = set()
    for f in spanning:
        while f:
            need.add(f)
            f = fr.parent.get(f, "")
    return any(f not in fr.loop_cond for f in need)


def _data_consumers(ops: list[Operation], inputs_of: InputsOf) -> dict[int, list[Operation]]:
    cons: dict[int, list[Operation]] = {}
    for op in ops:
        for t in inputs_of(op):
            lst = cons.setdefault(id(t.op), [])
            if not lst or lst[-1] is not op:
                lst.append(op)
    return cons


def colocate_control_flow(
    ops: list[Operation], device_of: Mapping[str, Device], inputs_of: InputsOf
) -> Mapping[str, Device]:
    """`device_of` with each NextIteration on its Merge's device and each Enter (not
    of a reference or a resource) on its first consumer's device (see the module
    docstring); `device_of` itself when nothing moves."""
    cons: dict[int, list[Operation]] | None = None
    moved: dict[str, Device] | None = None
    for op in reversed(ops):  # consumers first: an Enter may feed an inner Enter
        if op.type not in ("Enter", "NextIteration"):
            continue
        ins = inputs_of(op)
        if not ins:
            continue
        dt = ins[0].dtype
        if dt.is_ref_dtype or dt.base_dtype is dtypes.resource:
            continue
        if cons is None:
            cons = _data_consumers(ops, inputs_of)
        users = cons.get(id(op))
        if not users:
            continue
        where = (moved or device_of)[users[0].name]
        if where is not device_of[op.name]:
            if moved is None:
                moved = dict(device_of)
            moved[op.name] = where
    return device_of if moved is None else moved


class ControlLoops:
    """The control-loop skeletons of one partitioning (see the module docstring)."""

    def __init__(self, p: _Partitioner, fr: Frames, ops: list[Operation], inputs_of: InputsOf) -> None:
        self.p = p
        self.fr = fr
        self.inputs_of = inputs_of
        # (frame, device) -> the real Merge whose NextIteration is on that device.
        self.drivers: dict[tuple[str, str], Operation] = {}
        cons = _data_consumers(ops, inputs_of)
        for op in ops:
            if op.type in NEXT_TYPES:
                dev = p.device_of[op.name]
                for m in cons.get(id(op), []):
                    if m.type in MERGE_TYPES and p.device_of[m.name] is dev:
                        self.drivers.setdefault((fr.op_frame[id(op)], dev.name), m)
                        break
        self.control: dict[tuple[str, str], Operation] = {}
        self.participants: dict[tuple[str, str], Device] = {}
        self.tokens: dict[tuple[int, int], Tensor] = {}

    # Frames of the step's own ops (partition-made ops pass theirs explicitly).
    def out_frame(self, op: Operation) -> str:
        return self.fr.out_frame.get(id(op), "")

    def op_frame(self, op: Operation) -> str:
        return self.fr.op_frame.get(id(op), "")

    def participate(self, frame: str, device: Device) -> None:
        """`device` runs something of `frame` (and so of every frame around it)."""
        while frame and (frame, device.name) not in self.participants:
            self.participants[(frame, device.name)] = device
            frame = self.fr.parent.get(frame, "")

    def control_of(self, frame: str, device: Device) -> Operation:
        """The op on `device` that runs once in every iteration of `frame`: the real
        loop's Merge where the device drives the frame, else its skeleton's Merge."""
        key = (frame, device.name)
        c = self.control.get(key)
        if c is None:
            self.participate(frame, device)
            merge = self.drivers.get(key)
            if merge is not None:
                c = self.control[key] = self.p.clone(merge)
            else:
                c = self.skeleton(frame, device)
        return c

    def finish(self) -> None:
        """Give every participating (frame, device) its control loop, outer frames
        first (building one may add transfers, and so participants)."""
        done: set[tuple[str, str]] = set()
        while True:
            # A frame wholly on one device needs nothing.
            count: dict[str, int] = {}
            for f, _ in self.participants:
                count[f] = count.get(f, 0) + 1
            todo = [k for k in self.participants if k not in done and count[k[0]] > 1]
            if not todo:
                return
            todo.sort(key=lambda k: self.fr.depth(k[0]))
            for k in todo:
                done.add(k)
                self.control_of(k[0], self.participants[k])

    # --- the skeleton --------------------------------------------------------------
    def skeleton(self, frame: str, device: Device) -> Operation:
        p = self.p
        part = p.part(device)
        g = part.graph
        cond = self.fr.loop_cond.get(frame)
        if cond is None:  # needs_unpartitioned keeps such steps away from here
            raise errors.InternalError(
                None, None, f"Partitioning: loop frame '{frame}' spans devices but has no LoopCond."
            )
        token = self.token(frame, device)
        dt = token.dtype
        scalar = TensorShape([])
        _, enter_name, merge_name = p.fresh_names(f"_cloop{cond.name}")
        _, switch_name, next_name = p.fresh_names(f"_cloop{cond.name}")
        enter = Operation(
            g, "Enter", enter_name, [], [dt],
            {"T": dt, "frame_name": frame, "is_constant": False,
             "parallel_iterations": self.fr.parallel_iterations.get(frame, 10)},
            device.name, [], get_op_def("Enter"),
        )
        enter._inputs = [token]
        merge = Operation(
            g, "Merge", merge_name, [], [dt, dtypes.int32], {"T": dt, "N": 2}, device.name, [],
            get_op_def("Merge"),
        )
        for t in (*enter._outputs, *merge._outputs):
            t._shape = scalar
        p.add(part, enter)
        p.add(part, merge)
        self.control[(frame, device.name)] = merge
        # The predicate of this iteration (received under the skeleton's Merge).
        pred = p.value_on(cond._outputs[0], device, switch_name, frame)
        switch = Operation(
            g, "Switch", switch_name, [], [dt, dt], {"T": dt}, device.name, [], get_op_def("Switch"),
        )
        switch._inputs = [merge._outputs[0], pred]
        nxt = Operation(
            g, "NextIteration", next_name, [], [dt], {"T": dt}, device.name, [], get_op_def("NextIteration"),
        )
        nxt._inputs = [switch._outputs[1]]
        merge._inputs = [enter._outputs[0], nxt._outputs[0]]
        for t in (*switch._outputs, *nxt._outputs):
            t._shape = scalar
        p.add(part, switch)
        p.add(part, nxt)
        return merge

    def cone_enters(self, frame: str) -> list[Operation]:
        """The Enters of `frame` that its LoopCond depends on in iteration 0 (through
        Merges' Enter inputs, not their NextIteration ones)."""
        found: list[Operation] = []
        seen: set[int] = set()
        stack = [self.fr.loop_cond[frame]]
        while stack:
            op = stack.pop()
            if id(op) in seen:
                continue
            seen.add(id(op))
            if op.type in ENTER_TYPES:
                if self.fr.out_frame.get(id(op)) == frame:
                    found.append(op)
                continue
            if op.type in NEXT_TYPES or op.type in EXIT_TYPES or self.fr.op_frame.get(id(op)) != frame:
                continue
            stack.extend(t.op for t in self.inputs_of(op))
            stack.extend(op._control_inputs)
        return found

    def token(self, frame: str, device: Device) -> Tensor:
        """A scalar on `device` in the frame around `frame`, live exactly when the
        leader's LoopCond will run in iteration 0, i.e. when the Enters it depends on
        are all live (in an untaken branch or a finished outer loop some are dead
        while loop invariants are not): `Rank` of each such Enter's input, made where
        that input is, summed on `device`."""
        p = self.p
        parent = self.fr.parent.get(frame, "")
        inputs: list[Tensor] = []
        for e in self.cone_enters(frame):
            t = self.inputs_of(e)[0]
            if (id(t.op), t.value_index) not in p.fed and not any(t is u for u in inputs):
                inputs.append(t)
        cond_name = self.fr.loop_cond[frame].name
        if not inputs:
            # Only fed values (live) enter the condition: a constant on the device will do.
            value = freeze(np.zeros((), np.int32))
            _, name, _ = p.fresh_names(f"_cloop{cond_name}/token")
            controls = [self.control_of(parent, device)] if parent else []
            c = Operation(
                p.part(device).graph, "Const", name, [], [dtypes.int32],
                {"value": value, "dtype": dtypes.int32}, device.name, controls, get_op_def("Const"),
            )
            c._outputs[0]._shape = TensorShape([])
            p.add(p.part(device), c)
            return c._outputs[0]
        here = [p.value_on(self.rank(t, parent), device, cond_name, parent) for t in inputs]
        if len(here) == 1:
            return here[0]
        _, name, _ = p.fresh_names(f"_cloop{cond_name}/token")
        op = Operation(
            p.part(device).graph, "AddN", name, [], [dtypes.int32], {"N": len(here), "T": dtypes.int32},
            device.name, [], get_op_def("AddN"),
        )
        op._inputs = here
        op._outputs[0]._shape = TensorShape([])
        p.add(p.part(device), op)
        return op._outputs[0]

    def rank(self, t: Tensor, parent: str) -> Tensor:
        """`Rank` of step tensor `t` (in frame `parent`), on its device, made once."""
        p = self.p
        key = (id(t.op), t.value_index)
        rank = self.tokens.get(key)
        if rank is None:
            src = p.device_of[t.op.name]
            p.clone(t.op)
            _, name, _ = p.fresh_names(f"_cloop{t.op.name}/rank")
            op = Operation(
                p.part(src).graph, "Rank", name, [], [dtypes.int32], {"T": t.dtype.base_dtype},
                src.name, [], get_op_def("Rank"),
            )
            op._inputs = [p.out_of[key]]
            op._outputs[0]._shape = TensorShape([])
            p.add(p.part(src), op)
            if parent:
                self.participate(parent, src)
            rank = self.tokens[key] = op._outputs[0]
            p.new_ops[id(op)] = (src, parent)
        return rank
