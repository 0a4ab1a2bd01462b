"""Static analysis of a plan with loops, for the executor's frame path.

`analyze(plan)` gives every op its frame (a breadth-first walk from the ops without
inputs: Enter's consumers are in the child frame named by its `frame_name`, Exit's in
the parent, any other op's in its own), checks that no other edge crosses frames,
renumbers value slots per frame (a slot lives in the frame of its consumers), and
precomputes what `flowlab.runtime.task.frames` needs per op: its kind, how the inline path
calls its kernel, and its propagation lists (consumers, Merge inputs, Switch sides),
all in the local numbering of the frame they are delivered to.  The result is cached
on the plan.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.runtime.task.plan import Plan, const_value

# Node kinds on this path.
_NORMAL, _MERGE, _ENTER, _EXIT, _NEXT, _TRIGGER, _SWITCH = range(7)
_KINDS = {
    "Merge": _MERGE, "RefMerge": _MERGE, "Enter": _ENTER, "RefEnter": _ENTER,
    "Exit": _EXIT, "RefExit": _EXIT, "NextIteration": _NEXT, "RefNextIteration": _NEXT,
    "ControlTrigger": _TRIGGER, "Switch": _SWITCH, "RefSwitch": _SWITCH,
}
_INDEX = tuple(np.int32(i) for i in range(16))
_FORWARD = frozenset({"Identity", "LoopCond"})


# --- static analysis ------------------------------------------------------------------
def _const_fn(value: Any) -> Any:
    # A Const inside a loop runs once per iteration: its value, without a lookup.
    return lambda ctx: value


class _Entry:
    """What the frame path needs of one node (built once per plan)."""

    __slots__ = (
        "node", "index", "local", "kind", "fn", "ctx", "needs_step", "special", "in_slots",
        "reads", "outs", "single", "nouts", "info", "out_info", "data_cons", "ctrl_cons",
        "merge_cons", "reader_cons", "constant", "name", "cons", "switch_cons", "mode", "merge1",
    )
    # Declared for the type checker (slots carry no annotations of their own).
    node: Any
    index: Any
    local: Any
    kind: Any
    fn: Any
    ctx: Any
    needs_step: Any
    special: Any
    in_slots: Any
    reads: Any
    outs: Any
    single: Any
    nouts: Any
    info: Any
    out_info: Any
    data_cons: Any
    ctrl_cons: Any
    merge_cons: Any
    reader_cons: Any
    constant: Any
    name: Any
    cons: Any
    switch_cons: Any
    mode: Any
    merge1: Any


class _FrameInfo:
    """A frame (loop) of the plan: its nodes, slots and pending-count template."""

    __slots__ = ("name", "parent", "entries", "num_slots", "pending", "num_enters",
                 "parallel_iterations", "roots", "merge_ninputs", "fusion")

    def __init__(self, name: str, parent: _FrameInfo | None) -> None:
        self.name = name
        self.parent = parent
        self.entries: list[_Entry] = []
        self.num_slots = 0
        self.pending: list[int] = []
        self.num_enters = 0
        self.parallel_iterations = 10
        self.roots: list[int] = []
        self.merge_ninputs: dict[int, int] = {}
        # `loop_fusion.fusion_for`'s verdict, computed on first use: the compiled
        # loop, or why the frame is not fusible.
        self.fusion: Any = None


class _Analysis:
    __slots__ = ("root", "entries", "slot_local", "feed_local", "fetch_local")
    root: _FrameInfo
    entries: list[_Entry]
    slot_local: Any
    feed_local: Any
    fetch_local: Any


def _frame_error(msg: str) -> errors.OpError:
    return errors.InvalidArgumentError(None, None, msg)


def analyze(plan: Plan) -> _Analysis:
    """Frames, local slots and propagation lists of `plan` (cached on the plan)."""
    cached = plan.__dict__.get("_frames")
    if cached is not None:
        return cached
    nodes = plan.nodes
    n = len(nodes)
    consumers_of = [node.consumers for node in nodes]
    root = _FrameInfo("", None)
    infos: dict[str, _FrameInfo] = {"": root}
    frame_of: list[_FrameInfo | None] = [None] * n

    def out_frame(i: int) -> _FrameInfo:
        node = nodes[i]
        f = frame_of[i]
        assert f is not None
        t = node.op.type
        if t in ("Enter", "RefEnter"):
            name = node.op.get_attr("frame_name")
            child = infos.get(name)
            if child is None:
                child = infos[name] = _FrameInfo(name, f)
                child.parallel_iterations = int(node.op.get_attr("parallel_iterations"))
            elif child.parent is not f:
                raise _frame_error(
                    f"Frame '{name}' is entered from two frames ('{child.parent.name if child.parent else ''}' "
                    f"and '{f.name}'), at '{node.op.name}'."
                )
            return child
        if t in ("Exit", "RefExit"):
            if f.parent is None:
                raise _frame_error(f"Exit '{node.op.name}' is not inside a loop frame.")
            return f.parent
        return f

    # Breadth-first from the ops without inputs (TensorFlow's BuildControlFlowInfo).
    queue = deque(i for i in range(n) if not nodes[i].deps)
    for i in queue:
        frame_of[i] = root
    while queue:
        i = queue.popleft()
        of = out_frame(i)
        for c in consumers_of[i]:
            if frame_of[c] is None:
                frame_of[c] = of
                queue.append(c)
    for i in range(n):
        if frame_of[i] is None:  # unreachable from a root: only via a cycle
            raise _frame_error(f"Op '{nodes[i].op.name}' is on a cycle that no Enter starts.")
    # Check every edge stays within a frame, and give each frame its entries.
    out_info = [out_frame(i) for i in range(n)]
    for i, node in enumerate(nodes):
        for d in node.deps:
            if out_info[d] is not frame_of[i]:
                raise _frame_error(
                    f"{node.op.type} '{node.op.name}' has inputs from different frames. The input "
                    f"'{nodes[d].op.name}' is in frame '{out_info[d].name}'. The op is in frame "
                    f"'{frame_of[i].name}'."  # type: ignore[union-attr]
                )
    # Local slots: a slot lives in the frame of its consumers.
    slot_local: dict[int, tuple[_FrameInfo, int]] = {}

    def local_slot(slot: int, info: _FrameInfo) -> int:
        have = slot_local.get(slot)
        if have is not None:
            if have[0] is not info:
                raise _frame_error(f"A value is used in two frames ('{have[0].name}' and '{info.name}').")
            return have[1]
        slot_local[slot] = (info, info.num_slots)
        info.num_slots += 1
        return info.num_slots - 1

    feed_local = [local_slot(s, root) for s in plan.feed_slots]
    entries: list[_Entry] = []
    for i, node in enumerate(nodes):
        e = _Entry()
        info = frame_of[i]
        assert info is not None
        e.node, e.index, e.info, e.out_info = node, i, info, out_info[i]
        e.name = node.op.name
        e.kind = _KINDS.get(node.op.type, _NORMAL)
        e.local = len(info.entries)
        info.entries.append(e)
        e.fn, e.ctx, e.needs_step = node.kernel.fn, node.ctx, node.kernel.needs_step
        # (A Const with stored values, e.g. copied to a GPU, keeps its kernel: it returns them.)
        if node.op.type == "Const" and not e.needs_step and node.constants is None:
            e.fn = _const_fn(const_value(node.op.get_attr("value")))
        e.special = node.kernel.asynchronous or node.kernel.expensive
        e.single = node.single_output and node.num_outputs == 1
        e.nouts = node.num_outputs
        e.constant = e.kind == _ENTER and bool(node.op.get_attr("is_constant"))
        # How the inline path calls the kernel: 1 forwards the input (Identity,
        # LoopCond), 2/3/4 a plain kernel of two/one/no inputs, 0 the general call.
        e.mode = 0
        if e.kind == _NORMAL and e.single and not e.needs_step:
            nin = len(node.inputs)
            if node.op.type in _FORWARD and nin == 1:
                e.mode = 1
            elif not any(r for _, r in node.inputs) and nin <= 2:
                e.mode = (4, 3, 2)[nin]
        if e.kind == _ENTER:
            out_info[i].num_enters += 1
        entries.append(e)
    for e in entries:
        node = e.node
        e.in_slots = tuple(local_slot(s, e.info) for s, _ in node.inputs)
        e.reads = tuple(r for _, r in node.inputs) if any(r for _, r in node.inputs) else None
        e.outs = tuple(local_slot(s, e.out_info) if s >= 0 else -1 for s in node.outputs)
    fetch_local = []
    for s in plan.fetch_slots:
        have = slot_local.get(s)
        if have is None:
            have = (root, local_slot(s, root))
        if have[0] is not root:
            raise _frame_error(f"Cannot fetch a tensor inside loop frame '{have[0].name}'.")
        fetch_local.append(have[1])
    # Propagation lists, in the consumers' (the output frame's) local numbering.
    for e in entries:
        node = e.node
        my_slots = {s for s in node.outputs if s >= 0}
        data, ctrl, merges, readers = [], [], [], []
        for c in node.consumers:
            ce = entries[c]
            cnode = ce.node
            positions = tuple(j for j, (s, _) in enumerate(cnode.inputs) if s in my_slots)
            is_ctrl = any(co is node.op for co in cnode.op._control_inputs)
            if ce.kind == _MERGE:
                merges.append((ce.local, tuple((j, ce.in_slots[j]) for j in positions), is_ctrl))
            elif positions:
                data.append(ce.local)
                readers.append((ce.local, tuple(ce.in_slots[j] for j in positions)))
            else:
                ctrl.append(ce.local)
        e.data_cons, e.ctrl_cons, e.merge_cons = tuple(data), tuple(ctrl), tuple(merges)
        e.cons = e.data_cons + e.ctrl_cons
        e.merge1 = None
        if len(merges) == 1 and len(merges[0][1]) == 1 and not merges[0][2]:
            e.merge1 = (merges[0][0], merges[0][1][0][0])
        e.switch_cons = None
        if e.kind == _SWITCH and not merges:
            # Consumers of each output, when each reads only one: the inline path.
            by_out: tuple[list[int], list[int]] = ([], [])
            ok = True
            for c in node.consumers:
                cnode = entries[c].node
                reads_out = {k for k in (0, 1) if node.outputs[k] >= 0
                             and any(cs == node.outputs[k] for cs, _ in cnode.inputs)}
                if not reads_out:
                    continue  # a control consumer
                if len(reads_out) != 1:
                    ok = False
                    break
                by_out[reads_out.pop()].append(entries[c].local)
            if ok:
                e.switch_cons = (tuple(by_out[0]), tuple(by_out[1]))
        e.reader_cons = tuple(readers)
    for info in infos.values():
        pend = []
        for e in info.entries:
            node = e.node
            if e.kind == _MERGE:
                nctrl = sum(1 for d in node.deps if any(co is nodes[d].op for co in node.op._control_inputs))
                pend.append(1 + 2 * nctrl)
                info.merge_ninputs[e.local] = len(node.inputs)
            else:
                pend.append(len(node.deps))
        info.pending = pend
        info.roots = [k for k, p in enumerate(pend) if p == 0 and info.entries[k].kind != _MERGE]
    a = _Analysis()
    a.root, a.entries, a.slot_local = root, entries, slot_local
    a.feed_local, a.fetch_local = feed_local, fetch_local
    plan.__dict__["_frames"] = a
    return a
