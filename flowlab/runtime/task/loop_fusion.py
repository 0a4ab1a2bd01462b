"""Fused loops: a whole `while_loop` frame run as one generated Python function.

The frame path (`flowlab.runtime.task.frames`) moves every value of every iteration
through pending counts and a ready queue: eight queue items per iteration of the
smallest loop, each a tuple, a dispatch on kind and a consumer walk.  For the loops
`while_loop` builds, all of that is decided statically: every iteration runs the
same ops in the same order, and only the loop predicate picks between "run the body,
start the next iteration" and "leave".  `fusion_for(analysis, info)` recognises such
a frame and compiles it, once per plan, into straight-line Python (as
`plan.generate_straight_line` does for plain plans):

    def _loop(step, fid, chk, e0, e1, ...):   # the values of the frame's Enters
        v4 = e1                              # constant Enters: loop invariants
        m0, i0 = e0, 0                       # each Merge: iteration 0 takes its Enter
        n = 0
        while True:
            v1 = m0 ...                       # Merges, then the condition's ops
            if not v3: break                  # the LoopCond
            v6 = v1 ...                       # Switches' true outputs, then the body
            m0, i0 = v9, 1                    # NextIterations feed the Merges
            n += 1
            if not n & 15: chk()              # deadline and cancellation
        return n, (v1, ...)                   # iterations run, what the Exits carry out

A frame is fusible when it is exactly that shape (`_shape` says why not):
* every op in it is synchronous, and none is a Send/Recv or another op that
  handles dead values itself (a ControlTrigger is allowed where whatever waits on
  it alone does nothing visible: the gradient's push/pop syncs);
* an inner loop is allowed when it is fusible itself and never entered dead: it
  becomes one call of its own function per iteration, with the frame id the general
  path's instance would have;
* one LoopCond; every loop Switch (on the LoopCond) has its false side feeding only
  Exits, its true side no Exit, no control edge out of it; every loop Merge has two
  data inputs, one non-constant Enter and one NextIteration, and no control input;
  every NextIteration is in the body and feeds one Merge; every Exit reads a loop
  Switch's false side; the non-constant Enters feed only their Merge;
* a `cond` (Switches on another predicate, Merges of its branches) may sit in the
  body, with its Merges joining body values only; none in the loop condition.

Then the loop condition has no dead value, and the whole body is dead at once when
the predicate is false: the `break`.  Inside the body, behind a cond's Switch, the
generated lines are dead-aware as the general path is: an op whose input (or an op
it waits on) is `DEAD` is dead and not run, a Switch sends its data to one side and
`DEAD` to the other, a Merge forwards its live input; lines before any cond carry no
check.  Iterations need no pending counts, dead marks or iteration objects.  They
run one after the other, a schedule the general path may also take (as with
parallel_iterations=1); since every kernel is synchronous, overlapping iterations
would buy nothing on one thread.  What the frame path guarantees still holds:
kernels registered with `step=True` get a `FrameStep` with the frame id and
iteration; the deadline and cancellation are checked every 16 iterations; an error
names the op (the failing line of the generated code maps to it) and the step's
undo log rolls back; nothing of an iteration outlives it.  When to use it (no
listener, every Enter live, the pool policy) is the executor's call.

Watched by listeners that all take records (a traced step's StepStats collector, the
live bridge), a loop runs its *recording twin* (`recording_twin`, run by
`loop_recording.recording_class()`'s execution): the same lines, every output named, a clock read
after each kernel call, and one row per iteration (a tuple of those clock reads, each
distinct value once, the dead flags; `LoopLayout`) appended to a
`loop_recording.LoopRecorder`, which
hands the rows to the listener as `events.LoopRecords` every 32 iterations and at the
end; the collector describes them by column and expands them, when read, into the
frame path's node stats.  The frame path's events cost ~60x a scalar loop; the twin
costs a clock read per kernel and a tuple per iteration.  A dead
NextIteration in an iteration that continues (no builder makes one) is an
InternalError on this path.
"""

from __future__ import annotations

import itertools
import os
import time
from collections import deque
from typing import Any

import numpy as np

from flowlab.kernels.registry import DEAD
from flowlab.runtime.task import handoffs
from flowlab.runtime.task.frame_analysis import (
    _ENTER,
    _EXIT,
    _INDEX,
    _MERGE,
    _NEXT,
    _NORMAL,
    _SWITCH,
    _TRIGGER,
    _Analysis,
    _Entry,
    _FrameInfo,
)
from flowlab.runtime.task.plan import const_value

_FORWARD = frozenset({"Identity", "LoopCond"})
_INNER = 99  # the kind of an `_Inner` in a frame's op order
# FLOWLAB_LOOP_FUSION=0 (or setting this False) runs every loop on the general path:
# for comparing the two, and for bisecting a suspected fusion bug.
ENABLED = os.environ.get("FLOWLAB_LOOP_FUSION", "1") != "0"
_fusion_ids = itertools.count()


class FusedLoop:
    """A fusible frame compiled: `fn(step, fid, chk, *enter_values)` runs the whole
    loop and returns the number of iterations that continued and the Exits' values
    (in `exits` order)."""

    __slots__ = ("fn", "code", "source", "line_to_entry", "enter_pos", "exits",
                 "num_expensive", "ops_cond", "ops_body", "codes", "shape", "twin", "layout")

    fn: Any
    code: Any
    source: str
    line_to_entry: dict[int, _Entry]
    enter_pos: dict[int, int]  # plan index of an Enter into the frame -> argument position
    exits: tuple[_Entry, ...]
    num_expensive: int
    ops_cond: int  # ops run in every iteration (before the predicate decides)
    ops_body: int  # ops run in iterations that continue
    codes: dict[Any, dict[int, _Entry]]  # its code and its inner loops': line -> op
    shape: tuple[Any, ...]  # what `_generate` was given: for the recording twin
    twin: FusedLoop | None  # the recording twin (`recording_twin`), made on first use
    layout: LoopLayout | None  # a twin's: what its rows hold

    def entry_for(self, exc: BaseException) -> _Entry | None:
        """The op whose line of the generated function raised `exc`."""
        tb = exc.__traceback__
        found = None
        while tb is not None:
            lines = self.codes.get(tb.tb_frame.f_code)
            if lines is not None:
                found = lines.get(tb.tb_lineno)  # the innermost loop's line wins
            tb = tb.tb_next
        return found


class _Inner:
    """A fused inner loop inside the frame being fused: one call per iteration."""

    __slots__ = ("index", "kind", "info", "fz", "enters", "name", "node")

    def __init__(self, index: int, info: _FrameInfo, fz: FusedLoop, enters: list[_Entry]) -> None:
        self.index = index  # negative: a key beside the plan indices
        self.kind = _INNER
        self.info = info
        self.fz = fz
        self.enters = enters
        self.name = info.name
        self.node = None


class _NotFusible(Exception):
    pass


def fusion_for(analysis: _Analysis, info: _FrameInfo) -> FusedLoop | str:
    """The compiled loop of frame `info`, or why it cannot be fused (cached on `info`)."""
    got = info.fusion
    if got is None:
        got = _compile(analysis, info)
        info.fusion = got
    return got


def _compile(analysis: _Analysis, info: _FrameInfo) -> FusedLoop | str:
    shape = _shape(analysis, info)
    if isinstance(shape, str):
        return shape
    try:
        return _generate(info, *shape)
    except _NotFusible as e:
        return str(e)


def recording_twin(fz: FusedLoop) -> FusedLoop:
    """The recording twin of `fz` (made once): the same loop, that also appends one row
    per iteration to its recorder (`loop_recording.LoopRecorder`); see `LoopLayout`."""
    tw = fz.twin
    if tw is None:
        generate: Any = _generate  # (the shape's parts are typed there)
        tw = fz.twin = generate(*fz.shape, traced=True)
    return tw


# --- recognising the shape --------------------------------------------------------------
def why_not_fused(analysis: _Analysis) -> str | None:
    """Why some loop of the analysed plan cannot run fused (None: every one can)."""
    seen = set()
    for e in analysis.entries:
        info = e.info
        if info.parent is analysis.root and info.name not in seen:
            seen.add(info.name)
            fz = fusion_for(analysis, info)
            if isinstance(fz, str):
                return f"loop '{info.name}': {fz}"
    return None


def _producers(analysis: _Analysis) -> dict[int, tuple[int, int]]:
    """Global value slot -> (plan index of its producer, output index)."""
    got = {}
    for e in analysis.entries:
        for k, s in enumerate(e.node.outputs):
            if s >= 0:
                got[s] = (e.index, k)
    return got


def _shape(analysis: _Analysis, info: _FrameInfo) -> Any:
    entries = analysis.entries
    frame = info.entries
    producer = _producers(analysis)
    enters = [e for e in entries if e.kind == _ENTER and e.out_info is info]
    loop_conds = [e for e in frame if e.node.op.type == "LoopCond"]
    if len(loop_conds) != 1:
        return f"{len(loop_conds)} LoopCond ops"
    cond = loop_conds[0]
    pred_slot = cond.node.outputs[0]
    for e in frame:
        node = e.node
        if e.kind not in (_NORMAL, _MERGE, _SWITCH, _EXIT, _NEXT, _TRIGGER, _ENTER):
            return f"{node.op.type} '{e.name}' in the frame"
        if node.kernel.asynchronous:
            return f"asynchronous {node.op.type} '{e.name}'"
        od = node.op.op_def
        if (e.kind == _NORMAL and e is not cond and od is not None and od.is_control_flow
                and e.fn is not handoffs.receive and e.fn is not handoffs.sent):
            return f"{node.op.type} '{e.name}' handles dead values itself"
    # Inner loops: each a fused loop of its own, called once per iteration.
    inner: dict[int, _Inner] = {}
    enter_macro: dict[int, int] = {}
    exit_macro: dict[int, int] = {}
    for e in frame:
        if e.kind == _ENTER and e.out_info.name not in {m.name for m in inner.values()}:
            child = e.out_info
            fz = fusion_for(analysis, child)
            if isinstance(fz, str):
                return f"inner loop '{child.name}': {fz}"
            key = -1 - len(inner)
            inner[key] = _Inner(key, child, fz, [x for x in frame if x.kind == _ENTER and x.out_info is child])
            enter_macro.update((x.index, key) for x in inner[key].enters)
            exit_macro.update((x.index, key) for x in fz.exits)
    # Loop Switches are on the LoopCond (a skeleton's, of another device, through a
    # hand-off: `handoffs`); others are a cond's, inside the body.
    switches = [e for e in frame if e.kind == _SWITCH and _source(e.node.inputs[1][0], entries, producer) == pred_slot]
    if not switches:
        return "no Switch on the loop predicate"
    # Loop Merges join an Enter and a NextIteration; others are a cond's.
    loop_feeds = {e.index for e in enters} | {e.index for e in frame if e.kind == _NEXT}
    merges = [e for e in frame if e.kind == _MERGE and any(d in loop_feeds for d in e.node.deps)]
    for e in switches:
        node = e.node
        out0, out1 = node.outputs
        for c in node.consumers:
            ce = entries[c]
            reads = {k for k, s in ((0, out0), (1, out1)) if s >= 0 and any(cs == s for cs, _ in ce.node.inputs)}
            if not reads:
                return f"control edge out of Switch '{e.name}'"
            if reads != ({0} if ce.kind == _EXIT else {1}):
                return f"Switch '{e.name}' output feeds '{ce.name}'"
    for e in merges:
        node = e.node
        if len(node.inputs) != 2 or len(node.deps) != 2 or info.pending[e.local] != 1:
            return f"Merge '{e.name}' is not a loop Merge"
        kinds = []
        for s, _ in node.inputs:
            pe = entries[producer[s][0]]
            kinds.append(pe.kind if pe.kind != _ENTER or not pe.constant else -1)
        if sorted(kinds) != sorted([_ENTER, _NEXT]):
            return f"Merge '{e.name}' is not a loop Merge"
    for e in enters:
        cons = [entries[c] for c in e.node.consumers]
        if e.constant:
            if any(c.kind == _MERGE for c in cons):
                return f"constant Enter '{e.name}' feeds a Merge"
        elif len(cons) != 1 or cons[0].kind != _MERGE:
            return f"Enter '{e.name}' feeds more than its Merge"
    loop_switches = {e.index for e in switches}
    for e in frame:
        if e.kind == _NEXT:
            cons = [entries[c] for c in e.node.consumers]
            if len(cons) != 1 or cons[0].kind != _MERGE:
                return f"NextIteration '{e.name}' feeds more than its Merge"
        elif e.kind == _EXIT:
            deps = e.node.deps
            if len(deps) != 1 or deps[0] not in loop_switches or producer[e.node.inputs[0][0]][1] != 0:
                return f"Exit '{e.name}' does not read a loop Switch"
    # Edges inside an iteration, an inner loop standing for its Enters and Exits.
    def succ(i: int) -> list[int]:
        if i in enter_macro:
            return [enter_macro[i]]
        if i < 0:
            return list(dict.fromkeys(c for x in inner[i].fz.exits for c in x.node.consumers))
        return entries[i].node.consumers

    def deps_of(i: int) -> list[int]:
        if i < 0:
            return [x.index for x in inner[i].enters]
        return list(dict.fromkeys(exit_macro.get(d, d) for d in entries[i].node.deps))

    # The body: everything downstream of a loop Switch's true side (Exits aside).
    local = {e.index for e in frame} | set(inner)
    body: set[int] = set()
    todo = deque(c for sw in switches for c in sw.node.consumers if entries[c].kind != _EXIT)
    while todo:
        c = todo.popleft()
        if c in body or c not in local:
            continue
        body.add(c)
        if c < 0 or entries[c].kind != _NEXT:  # the back edge leads to the next iteration
            todo.extend(succ(c))
    loop_merges = {e.index for e in merges}
    for e in frame:
        if e.index in body and (e.index in loop_switches or e.index in loop_merges):
            return f"{e.node.op.type} '{e.name}' is inside the body"
        if e.index not in body and e.kind in (_SWITCH, _MERGE) and e.index not in loop_switches | loop_merges:
            return f"{e.node.op.type} '{e.name}' is in the loop condition"
        if e.kind == _MERGE and e.index in body and not all(d in body for d in deps_of(e.index)):
            return f"Merge '{e.name}' joins the body with the condition"
        if e.kind == _NEXT and e.index not in body:
            return f"NextIteration '{e.name}' does not depend on the loop predicate"
    if cond.index in body:
        return "the LoopCond depends on the body"
    order = _topological(entries, local, loop_merges, inner, succ, deps_of)
    if order is None:
        return "a cycle inside an iteration"
    # In the last iteration the body is dead, and the fused loop skips it.  The
    # general path still runs a ControlTrigger there (it runs on dead inputs), and
    # what waits on it alone: fine while those ops do nothing visible.
    live_at_end: set[int] = set()
    for e in order:
        if e.index not in body:
            continue
        deps = deps_of(e.index)
        if e.kind == _TRIGGER:
            live = True
        elif e.kind == _MERGE:
            live = any(d in live_at_end for d in deps)
        else:
            live = all(d in live_at_end or (d not in body and d not in loop_switches) for d in deps)
        if live:
            if e.kind != _TRIGGER and (e.kind == _INNER or e.node.op.type not in ("Const", "NoOp")):
                return f"{e.node.op.type} '{e.name}' in the body runs off a ControlTrigger alone"
            live_at_end.add(e.index)
    # ControlTriggers do nothing but order: the generated code's order is enough.
    cond_ops = [e for e in order if e.index not in body and e.kind in (_NORMAL, _INNER)]
    body_ops = [e for e in order if e.index in body and e.kind not in (_TRIGGER, _ENTER)]
    exits = tuple(e for e in frame if e.kind == _EXIT)
    triggers = [e for e in order if e.index in body and e.kind == _TRIGGER]
    at_end = [e for e in order if e.index in live_at_end and e.kind != _TRIGGER]
    return enters, merges, cond, switches, cond_ops, body_ops, exits, producer, entries, (triggers, at_end)


def _source(slot: int, entries: list[_Entry], producer: dict[int, tuple[int, int]]) -> int:
    """The slot whose value `slot` holds: itself, or what a hand-off's Send read."""
    while slot in producer:
        e = entries[producer[slot][0]]
        if e.fn is not handoffs.receive:
            break
        slot = e.node.inputs[0][0]
    return slot


def _topological(entries: list[_Entry], local: set[int], loop_merges: set[int],
                 inner: dict[int, _Inner], succ: Any, deps_of: Any) -> list[Any] | None:
    """Frame ops and inner loops (loop Merges aside: they start an iteration) in an
    order that respects every edge inside an iteration."""
    pend = {i: sum(1 for d in deps_of(i) if d in local and d not in loop_merges)
            for i in local if i not in loop_merges}
    ready = deque(i for i, p in pend.items() if p == 0)
    order: list[Any] = []
    while ready:
        i = ready.popleft()
        order.append(inner[i] if i < 0 else entries[i])
        for c in succ(i):
            if c in pend:
                pend[c] -= 1
                if pend[c] == 0:
                    ready.append(c)
    return order if len(order) == len(pend) else None


# --- generating the function ------------------------------------------------------------
class LoopLayout:
    """What the rows of a recording twin (`recording_twin`) hold.  A row is one
    iteration: `ntimes` clock reads (`perf_counter_ns`; read after each op that calls a
    kernel, the first at the iteration's start), then `nvals` values, then the flags of
    the ops that may be dead.  Each value is there once, however many outputs are it (an
    Identity's output is its input, a NextIteration's too); constants are not in the
    row but in `consts`.  A col is `(node, t0, t1, outs, flag, switch)`: its op ran from
    `row[t0]` to `row[t1]` (equal for an op that is only a name: an Identity, a Merge, a
    constant), its outputs are `row[j]` for each `j >= 0` in `outs` and `consts[-1 - j]`
    for the others, it was dead when `flag >= 0` and `row[flag]`; a loop Switch
    (`switch` 1 or 2) has one value, its data, which went out on its true (1) or its
    false (2) side.  A Merge's value_index is recorded as the later iterations' (1).
    `full` describes an iteration that continues, `last` the one where the predicate is
    false (the condition's ops, the Switches, the ControlTriggers and what runs off them
    alone; no flags); in that one the other ops of the body (`dead_at_end`) are dead,
    and in each other one the Exits are, as on the frame path."""

    __slots__ = ("frame", "full", "last", "ntimes_full", "nvals_full", "ntimes_last", "consts",
                 "static", "exits", "dead_at_end", "exprs", "line_to_pos", "code", "ns", "inner")

    frame: str
    full: list[tuple[Any, ...]]
    last: list[tuple[Any, ...]]
    ntimes_full: int
    nvals_full: int
    ntimes_last: int
    consts: list[Any]
    # Per value of a full row: its description when the graph fixes it (shape, dtype),
    # else None (described from the values).
    static: list[Any]
    exits: tuple[_Entry, ...]
    dead_at_end: list[_Entry]
    exprs: list[str]  # a full row's expressions (to rebuild a failed iteration's row)
    line_to_pos: dict[int, int]  # line of the twin -> number of `full` cols before it
    code: Any
    ns: dict[str, Any]
    inner: list[FusedLoop]  # the inner loops' twins, by the index `LoopRecorder.inner` gets


class _Trace:
    """The recording twin's bookkeeping while it is generated."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.ns = ns
        self.cols: list[list[Any]] = []  # [entry, t0, t1, exprs, flag, switch]
        self.cur = 0  # the clock read the next op starts at
        self.nclk = 1  # t0: the iteration's start
        self.line_to_pos: dict[int, int] = {}
        self.inner: list[FusedLoop] = []
        self.alias: dict[str, str] = {}  # a name -> the name whose value it is
        self.consts: dict[str, Any] = {}  # a name -> its value, the same in every iteration
        self.const_values: list[Any] = []
        self.const_pos: dict[str, int] = {}
        self.static: list[Any] = []  # the last `row`'s values' static descriptions

    def clock(self, emit: Any, indent: int) -> None:
        emit(f"t{self.nclk} = _c()", indent)
        self.cur = self.nclk
        self.nclk += 1

    def col(self, e: _Entry, t0: int, exprs: list[str], flag: str = "", switch: int = 0) -> None:
        self.cols.append([e, t0, self.cur, exprs, flag, switch])

    def canon(self, x: str) -> str:
        while x in self.alias:
            x = self.alias[x]
        return x

    def row(self, cols: list[list[Any]], ntimes: int, flags: bool) -> tuple[list[str], list[tuple[Any, ...]], int]:
        """A row's expressions for `cols`, the cols as the layout has them, and the
        number of values in the row."""
        pos: dict[str, int] = {}
        packed: list[list[Any]] = []
        self.static = []
        for e, t0, t1, exprs, flag, switch in cols:
            outs = []
            for k, x in enumerate(exprs):
                x = self.canon(x)
                if x in self.consts:
                    if x not in self.const_pos:
                        self.const_pos[x] = len(self.const_values)
                        self.const_values.append(self.consts[x])
                    outs.append(-1 - self.const_pos[x])
                else:
                    if x not in pos:
                        pos[x] = len(pos)
                        # A cond's Switch sends DEAD to one side: described from the values.
                        cond_switch = e.kind == _SWITCH and not switch
                        self.static.append(None if cond_switch else _static_description(e, 1 if switch == 1 else k))
                    outs.append(ntimes + pos[x])
            packed.append([e.node, t0, t1, tuple(outs), flag if flags else "", switch])
        vals = list(pos)
        flag_names = []
        for c in packed:
            if c[4]:
                flag_names.append(c[4])
                c[4] = ntimes + len(vals) + len(flag_names) - 1
            else:
                c[4] = -1
        return ([f"t{j}" for j in range(ntimes)] + vals + flag_names,
                [tuple(c) for c in packed], len(vals))


_NUMERIC = frozenset({"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                      "uint16", "uint32", "uint64", "bool", "complex64", "complex128"})


def _static_description(e: _Entry, k: int) -> Any:
    """(shape, numpy dtype, nbytes, False) of op `e`'s output `k` when the graph fixes
    them (a fully defined shape, a numeric dtype, not a reference), else None: such an
    output is described once per loop, not per iteration (`LoopLayout.static`)."""
    outputs = e.node.op.outputs
    if k >= len(outputs):
        return None
    t = outputs[k]
    dt = t.dtype
    if dt.is_ref_dtype or dt.name not in _NUMERIC or not t.shape.is_fully_defined():
        return None  # (a resource's handle, a string, a variable's storage: as they are)
    try:
        npdt = np.dtype(dt.as_numpy_dtype)
    except TypeError:
        return None
    if npdt.kind not in "biufc":
        return None
    shape = tuple(t.shape.as_list())
    return (shape, npdt, int(np.prod(shape, dtype=np.int64)) * npdt.itemsize, False)


def _names(e: _Entry, traced: bool) -> list[str]:
    """The names of op `e`'s outputs in the generated code (traced: every output has
    one; untraced: only the read ones, "_" for the others)."""
    if traced:
        return [f"v{s}" if s >= 0 else f"u{e.index}_{j}" for j, s in enumerate(e.outs)]
    return [f"v{s}" if s >= 0 else "_" for s in e.outs]


def _generate(info: _FrameInfo, enters: list[_Entry], merges: list[_Entry], cond: _Entry,
              switches: list[_Entry], cond_ops: list[Any], body_ops: list[Any],
              exits: tuple[_Entry, ...], producer: dict[int, tuple[int, int]],
              entries: list[_Entry], at_end: tuple[list[_Entry], list[_Entry]],
              traced: bool = False) -> FusedLoop:
    """The loop's function; with `traced`, its recording twin: the same lines, every
    output named, a clock read after each kernel call, and one row appended to the
    recorder `P` per iteration (`LoopLayout`)."""
    from flowlab.runtime.task.frame_state import FrameStep

    shape = (info, enters, merges, cond, switches, cond_ops, body_ops, exits, producer, entries, at_end)
    ns: dict[str, Any] = {"FS": FrameStep, "NAME": info.name, "DEAD": DEAD, "_dead_next": _dead_next}
    tr = _Trace(ns) if traced else None
    head = "def _loop(step, fid, chk" + (", P" if traced else "")
    lines = [head + "".join(f", e{j}" for j in range(len(enters))) + (", _c=_c):" if traced else "):")]
    ns["_c"] = time.perf_counter_ns
    line_to_entry: dict[int, _Entry] = {}
    off = [0]

    def emit(text: str, indent: int, e: _Entry | None = None) -> None:
        lines.append("    " * (indent + off[0]) + text)
        if e is not None:
            line_to_entry[len(lines)] = e
        if tr is not None:
            tr.line_to_pos[len(lines)] = len(tr.cols)

    def arg(slot: int, read: bool) -> str:
        return f"v{slot}.read()" if read else f"v{slot}"

    if tr is not None:
        emit("R = P.rows.append", 1)
        emit("n = 0", 1)
        emit("try:", 1)
        off[0] = 1
    needs_step = any(e.needs_step for e in cond_ops + body_ops if e.kind != _INNER)
    enter_pos = {e.index: j for j, e in enumerate(enters)}
    # Each Merge: m{k} is its value in the coming iteration, i{k} its value_index.
    merge_of_next: dict[int, int] = {}
    first_index, later_index = [], []
    for k, m in enumerate(merges):
        for j, (s, _) in enumerate(m.node.inputs):
            pe = entries[producer[s][0]]
            if pe.kind == _ENTER:
                emit(f"m{k} = e{enter_pos[pe.index]}", 1)
                first_index.append(j)
            else:
                merge_of_next[pe.index] = k
                later_index.append(j)
    for e in enters:
        if e.constant and e.outs[0] >= 0:
            emit(f"v{e.outs[0]} = e{enter_pos[e.index]}", 1)
    index_of = [tr is not None or m.outs[1] >= 0 for m in merges]  # which Merges keep i{k}
    for k in range(len(merges)):
        if index_of[k]:
            ns[f"I{k}"], ns[f"J{k}"] = _INDEX[first_index[k]], _INDEX[later_index[k]]
            emit(f"i{k} = I{k}", 1)
    emit("n = 0", 1)
    if tr is not None:
        emit("tL = _c()", 1)
    emit("while True:", 1)
    if tr is not None:
        emit("t0 = tL", 2)
    if needs_step:
        emit("fs = FS(step, NAME, fid, n)", 2)
    for k, m in enumerate(merges):
        if tr is not None:
            n0, n1 = _names(m, True)
            emit(f"{n0} = m{k}", 2)
            tr.consts[n1] = _INDEX[later_index[k]]
            tr.col(m, tr.cur, [n0, n1])
            continue
        if m.outs[0] >= 0:
            emit(f"v{m.outs[0]} = m{k}", 2)
        if m.outs[1] >= 0:
            emit(f"v{m.outs[1]} = i{k}", 2)
    for e in cond_ops:
        if e.kind == _INNER:
            _emit_inner(e, ns, emit, arg, 2, tr)
        else:
            _emit_timed(e, ns, emit, arg, 2, tr)
    emit(f"if not v{cond.outs[0]}:", 2, cond)
    triggers, live_at_end = at_end
    last_cols: list[list[Any]] = []
    last_layout: list[tuple[Any, ...]] = []
    ntimes_last = 0
    if tr is not None:
        # The last iteration's row: the condition's ops, then the Switches (their data
        # goes out on the false side), the ControlTriggers and what runs off them.
        last_cols = [c[:] for c in tr.cols]
        for sw in switches:
            last_cols.append([sw, tr.cur, tr.cur, [arg(sw.in_slots[0], bool(sw.reads and sw.reads[0]))], "", 2])
        for e in triggers + live_at_end:
            if e.node.op.type == "Const" and e.outs and not e.needs_step and e.node.constants is None:
                tr.consts[f"K{e.index}"] = const_value(e.node.op.get_attr("value"))
                exprs = [f"K{e.index}"]
            else:
                exprs = []
            last_cols.append([e, tr.cur, tr.cur, exprs, "", 0])
        ntimes_last = tr.cur + 1
        row, last_layout, _ = tr.row(last_cols, ntimes_last, False)
        emit(f"R(({''.join(x + ', ' for x in row)}))", 3)
    emit("break", 3)
    for sw in switches:
        data = arg(sw.in_slots[0], bool(sw.reads and sw.reads[0]))
        if sw.outs[1] >= 0:
            emit(f"v{sw.outs[1]} = {data}", 2, sw)
        if tr is not None:
            tr.col(sw, tr.cur, [data], switch=1)
            if sw.outs[1] >= 0 and not (sw.reads and sw.reads[0]):
                tr.alias[f"v{sw.outs[1]}"] = data
    _emit_body(body_ops, merges, merge_of_next, entries, producer, ns, emit, arg, tr, index_of)
    if tr is not None:
        for e in triggers:
            tr.col(e, tr.cur, [])
        row, full_layout, nvals = tr.row(tr.cols, tr.nclk, True)
        static = tr.static
        emit(f"R(({''.join(x + ', ' for x in row)}))", 2)
        emit(f"tL = t{tr.cur}", 2)
    emit("n += 1", 2)
    emit("if not n & 15:", 2)
    emit("chk()", 3)
    if tr is not None:
        emit("if not n & 31:", 3)
        emit("P.flush()", 4)  # a long loop's rows go to the listener in batches (values freed)
    rets = []
    for x in exits:
        sw = entries[x.node.deps[0]]
        rets.append(arg(sw.in_slots[0], bool(sw.reads and sw.reads[0])))
    if tr is not None:
        emit(f"_r = ({''.join(r + ', ' for r in rets)})", 1, exits[0] if exits else None)
        emit("P.end(_r)", 1)
        emit("return n, _r", 1)
        off[0] = 0
        emit("except BaseException as _x:", 1)
        emit("P.failed(n, locals(), _x)", 2)
        emit("raise", 2)
    else:
        emit(f"return n, ({''.join(r + ', ' for r in rets)})", 1, exits[0] if exits else None)
    source = "\n".join(lines) + "\n"
    kind = "recording loop" if traced else "loop"
    code = compile(source, f"<flowlab {kind} {info.name} {next(_fusion_ids)}>", "exec")
    exec(code, ns)
    fz = FusedLoop()
    fz.fn = ns["_loop"]
    fz.code = fz.fn.__code__
    fz.source = source
    fz.line_to_entry = line_to_entry
    fz.codes = {fz.code: line_to_entry}
    fz.enter_pos = enter_pos
    fz.exits = exits
    fz.shape = shape
    fz.twin = None
    fz.layout = None
    fz.num_expensive = 0
    for e in cond_ops + body_ops:
        if e.kind == _INNER:
            fz.num_expensive += e.fz.num_expensive
            fz.codes.update((recording_twin(e.fz) if traced else e.fz).codes)
        elif e.node.kernel.expensive:
            fz.num_expensive += 1
    fz.ops_cond = len(merges) + len(cond_ops)
    fz.ops_body = len(switches) + len(body_ops)
    if tr is not None:
        dead_at_end = [e for e in body_ops if e.kind != _INNER and e not in live_at_end]
        lay = fz.layout = LoopLayout()
        lay.frame = info.name
        lay.full, lay.last = full_layout, last_layout
        lay.ntimes_full, lay.nvals_full, lay.ntimes_last = tr.nclk, nvals, ntimes_last
        lay.consts = tr.const_values
        lay.static = static
        lay.exits, lay.dead_at_end = exits, dead_at_end
        lay.exprs = row
        lay.line_to_pos = tr.line_to_pos
        lay.inner = tr.inner
        lay.code, lay.ns = fz.code, ns
    return fz


def _dead_next(name: str) -> None:
    from flowlab import errors

    raise errors.InternalError(
        None, None,
        f"NextIteration '{name}' is dead in an iteration that continues, which a fused loop "
        "cannot follow; run with FLOWLAB_LOOP_FUSION=0 for the general frame path.")


def _emit_body(body_ops: list[Any], merges: list[_Entry], merge_of_next: dict[int, int],
               entries: list[_Entry], producer: dict[int, tuple[int, int]], ns: dict[str, Any],
               emit: Any, arg: Any, tr: _Trace | None = None, index_of: list[bool] | None = None) -> None:
    """The body's ops.  Behind a cond's Switch values may be dead (`DEAD`), as on the
    general path: such an op checks its inputs (and the ops it waits on) first, and
    is dead, not run, when one is; a cond's Merge forwards its live input.  Traced,
    every op that may be dead has a flag (`d{index}`) the row records."""
    traced = tr is not None
    maybe_dead: set[int] = set()  # may be dead as a whole (its outputs and its control edges)
    dead_outs: set[int] = set()  # whose outputs may be DEAD
    flagged = set()  # ops whose deadness a control edge reads: d{index}
    for e in body_ops:
        if e.kind == _INNER:
            # Entered dead, an inner loop's Exits would never fire: the general path's.
            for x in e.enters:
                xd = {producer[s][0] for s, _ in x.node.inputs}
                if xd & dead_outs or any(d in maybe_dead for d in x.node.deps):
                    raise _NotFusible(f"inner loop '{e.name}' may be entered dead")
            continue
        node = e.node
        data_deps = {producer[s][0] for s, _ in node.inputs}
        terms = [f"v{ls} is DEAD" for (s, _), ls in zip(node.inputs, e.in_slots) if producer[s][0] in dead_outs]
        ctrl = [d for d in node.deps if d not in data_deps and d in maybe_dead]
        terms += [f"d{d}" for d in ctrl]
        flagged.update(ctrl)
        if terms:
            maybe_dead.add(e.index)
        if terms or e.kind == _SWITCH:
            dead_outs.add(e.index)
    if traced:
        flagged |= maybe_dead
    for e in body_ops:
        if e.kind == _INNER:
            _emit_inner(e, ns, emit, arg, 2, tr)
            continue
        node = e.node
        data_deps = {producer[s][0] for s, _ in node.inputs}
        reads = e.reads or (False,) * len(e.in_slots)
        ins = [(ls, r, producer[s][0] in dead_outs) for (s, _), ls, r in zip(node.inputs, e.in_slots, reads)]
        ctrl = [f"d{d}" for d in node.deps if d not in data_deps and d in maybe_dead]
        flag = e.index in flagged
        fname = f"d{e.index}" if traced and e.index in maybe_dead else ""
        names = _names(e, traced)
        t0 = tr.cur if tr is not None else 0
        if e.kind == _MERGE:
            # The first live input (a cond has one); dead when all are.
            first = "if"
            for j, (ls, r, _) in enumerate(ins):
                ns[f"X{j}"] = _INDEX[j] if j < len(_INDEX) else np.int32(j)
                emit(f"{first} v{ls} is not DEAD:", 2, e)
                first = "elif"
                if names[0] != "_":
                    emit(f"{names[0]} = {arg(ls, r)}", 3, e)
                if names[1] != "_":
                    emit(f"{names[1]} = X{j}", 3)
                if flag:
                    emit(f"d{e.index} = False", 3)
            emit("else:", 2)
            for x in names:
                if x != "_":
                    emit(f"{x} = DEAD", 3)
            emit(f"d{e.index} = True" if flag else "pass", 3)
            if tr is not None:
                tr.col(e, t0, names, fname)
            continue
        terms = [f"v{ls} is DEAD" for ls, _, may in ins if may] + ctrl
        indent = 2
        if terms:
            emit(f"if {' or '.join(terms)}:", 2, e)
            for x in names:
                if x != "_":
                    emit(f"{x} = DEAD", 3)
            if e.kind == _NEXT:
                emit(f"_dead_next({e.name!r})", 3, e)
            emit(f"d{e.index} = True" if flag else "pass", 3)
            emit("else:", 2)
            indent = 3
        if e.kind == _SWITCH:
            (ds, dr, _), (ps, pr, _) = ins
            o0, o1 = names
            emit(f"if {arg(ps, pr)}:", indent, e)
            if o0 != "_":
                emit(f"{o0} = DEAD", indent + 1)
            emit(f"{o1} = {arg(ds, dr)}" if o1 != "_" else "pass", indent + 1, e)
            emit("else:", indent)
            emit(f"{o0} = {arg(ds, dr)}" if o0 != "_" else "pass", indent + 1, e)
            if o1 != "_":
                emit(f"{o1} = DEAD", indent + 1)
            exprs = names
        elif e.kind == _NEXT:
            k = merge_of_next[e.index]
            emit(f"m{k} = {arg(e.in_slots[0], bool(e.reads))}", indent, e)
            if index_of[k] if index_of is not None else merges[k].outs[1] >= 0:
                emit(f"i{k} = J{k}", indent)
            exprs = [f"m{k}"]
            if tr is not None and not e.reads:
                tr.alias[f"m{k}"] = f"v{e.in_slots[0]}"
        else:
            timed, exprs = _emit_op(e, ns, emit, arg, indent, tr)
            if flag:
                emit(f"d{e.index} = False", indent)
            if tr is not None:
                if timed:
                    tr.clock(emit, 2)
                tr.col(e, t0, exprs, fname)
            continue
        if flag:
            emit(f"d{e.index} = False", indent)
        if tr is not None:
            tr.col(e, t0, exprs, fname)


def _emit_timed(e: _Entry, ns: dict[str, Any], emit: Any, arg: Any, indent: int, tr: _Trace | None) -> None:
    """An op of the loop condition: its line, and traced, its clock read and col."""
    t0 = tr.cur if tr is not None else 0
    timed, exprs = _emit_op(e, ns, emit, arg, indent, tr)
    if tr is not None:
        if timed:
            tr.clock(emit, indent)
        tr.col(e, t0, exprs)


def _emit_inner(m: _Inner, ns: dict[str, Any], emit: Any, arg: Any, indent: int,
                tr: _Trace | None = None) -> None:
    """An inner loop as one call: its Enters' inputs in, its Exits' values out; its
    frame id is this iteration's, as the general path's instance would have.  Traced,
    its own twin with a recorder of its own (`LoopRecorder.inner`)."""
    k = -m.index
    fn = m.fz.fn
    rec = ""
    if tr is not None:
        fn = recording_twin(m.fz).fn
        rec = f", P.inner({len(tr.inner)}, n)"
        tr.inner.append(recording_twin(m.fz))
    ns[f"L{k}"], ns[f"N{k}"] = fn, m.info.name
    args = [""] * len(m.enters)
    for x in m.enters:
        args[m.fz.enter_pos[x.index]] = arg(x.in_slots[0], bool(x.reads))
    call = f"L{k}(step, f'{{fid}};{{n}};{{N{k}}}', chk{rec}{''.join(', ' + a for a in args)})"
    names = [f"v{x.outs[0]}" if x.outs[0] >= 0 else "_" for x in m.fz.exits]
    emit(f"_, ({''.join(v + ', ' for v in names)}) = {call}" if names else call, indent)
    if tr is not None:
        tr.clock(emit, indent)


def _emit_op(e: _Entry, ns: dict[str, Any], emit: Any, arg: Any, indent: int,
             tr: _Trace | None = None) -> tuple[bool, list[str]]:
    """One op of the loop as a line: a bound constant, a forwarded input, or a call.
    Returns whether it calls a kernel and its outputs' names (traced: every output's;
    a constant's and a forwarded input's are known to `tr`)."""
    node = e.node
    i = e.index
    outs = e.outs
    traced = tr is not None
    names = _names(e, traced)
    if node.op.type == "Const" and not e.needs_step and node.constants is None:
        if outs[0] >= 0 or traced:
            ns[f"K{i}"] = const_value(node.op.get_attr("value"))
            emit(f"{names[0]} = K{i}", indent, e)
            if tr is not None:
                tr.consts[names[0]] = ns[f"K{i}"]
        return False, names
    if e.fn is handoffs.sent:
        emit("pass", indent, e)  # its Recv reads the value where it is
        return False, names
    if node.op.type in _FORWARD and len(e.in_slots) == 1 and e.single:
        if outs[0] >= 0 or traced:
            emit(f"{names[0]} = {arg(e.in_slots[0], bool(e.reads))}", indent, e)
            if tr is not None and not e.reads:
                tr.alias[names[0]] = f"v{e.in_slots[0]}"
        return False, names
    ns[f"k{i}"], ns[f"c{i}"] = e.fn, e.ctx
    args = [f"c{i}"]
    if e.needs_step:
        args.append("fs")
    reads = e.reads or (False,) * len(e.in_slots)
    args.extend(arg(s, r) for s, r in zip(e.in_slots, reads))
    call = f"k{i}({', '.join(args)})"
    if e.single:
        emit(f"{names[0]} = {call}" if names[0] != "_" else call, indent, e)
    elif not e.nouts or all(x == "_" for x in names):
        emit(call, indent, e)
    else:
        emit(f"{', '.join(names)}, = {call}", indent, e)
    return True, names
