"""Control-flow contexts: which cond branch or loop body each op was built in.

TensorFlow 1.x builds `cond` and `while_loop` from Switch/Merge/Enter/Exit and keeps,
per op, the *control-flow context* it was created in (paper section 3.4).  The context
makes a branch or a loop body self-contained:

- a tensor from outside a cond branch enters it through a Switch on the branch's
  predicate (so the branch's ops are dead when it is not taken);
- a tensor from outside a loop enters it through a constant Enter (a loop invariant,
  visible in every iteration); a control input from outside the loop becomes a control
  input from an Identity (one per op) of the Enter of that input's first output;
- an op with no inputs (a constant) gets a control input from the context's *pivot*,
  so that it runs in the branch or iteration and not once outside.

State: each op knows its context (`op._get_control_flow_context()`, None at top
level), and the graph knows, per thread, the context new ops are created in
(`graph._get_control_flow_context()`).  `building(g, ctx)` makes `ctx` current for a
build phase (a branch, a loop's cond or body, ops the gradient code adds to a loop).
The graph hands every op created then to `ctx.add_op` (its hook on op creation,
TensorFlow's `AddOp`), which records the membership at once -- so "is this value
inside context C?" has an answer at any time -- and queues the op.  The rewiring of
the queued ops' external inputs (`_process`) waits for the end of the phase, in
creation order: that order fixes which op first uses an outside value, hence the
names of the Switches and Enters made for it, and the names of the graphs flowlab
built before the hook existed (pinned by tests/ops/test_graph_hook_golden.py).
A nested cond whose outer branch reads `x` before the inner one does would name
the outer Switch of `x` after the outer reader if ops were rewired as they are made.

Invariants: an Enter belongs to its loop and an Exit too, but the Exit's *value* is
in the loop's outer context; a value is rewired into a context at most once per
context (`_external` caches Switches and Enters); rewiring never changes an input's
dtype or shape.

`GradWhileContext` is the backward loop of a forward loop: a forward value it uses is
replaced by a pop from a stack that the forward loop fills, one push per iteration
(backpropagation through time; see flowlab/ops/control_flow_grad.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from flowlab.graph.graph import Graph
from flowlab.graph.tensor import Operation, Tensor

_LOOPS = "control_flow_loops"


def context_of(op: Operation) -> Any:
    """The control-flow context `op` was built in (None at top level)."""
    return op._control_flow_context


def output_context(op: Operation) -> Any:
    """The context where `op`'s outputs live: an Exit's values are outside its loop,
    and the Switch that brings an outside value into a cond branch makes a value of
    that branch (it is dead when the branch is not taken)."""
    ctx = context_of(op)
    if ctx is not None and op.type in ("Exit", "RefExit"):
        return ctx.outer
    branches = op.graph._scratch.get(_BRANCH_SWITCH)
    if branches is not None and op in branches:
        return branches[op]
    return ctx


# graph._scratch key: Switch op -> the CondContext whose branch it feeds (its input is
# outside the branch).
_BRANCH_SWITCH = "control_flow_branch_switches"


def current_context(g: Graph) -> Any:
    """The innermost context being built (where a new op will belong), or None."""
    return g._get_control_flow_context()


def is_inside(ctx: Any, outer: Any) -> bool:
    """Whether context `ctx` is `outer` or nested in it (everything is inside None)."""
    while ctx is not None:
        if ctx is outer:
            return True
        ctx = ctx.outer
    return outer is None


def value_inside(t: Tensor, ctx: Any) -> bool:
    return is_inside(output_context(t.op), ctx)


def loop_of(ctx: Any) -> Any:
    """The innermost WhileContext at or around `ctx` (None outside any loop)."""
    while ctx is not None and not isinstance(ctx, WhileContext):
        ctx = ctx.outer
    return ctx


def while_context_of_op(op: Operation) -> Any:
    return loop_of(context_of(op))


class _Phase:
    """One `building` block of a context: the pivot and the ops made in it."""

    __slots__ = ("ctx", "pivot", "pending")

    def __init__(self, ctx: Any, pivot: Operation | None) -> None:
        self.ctx = ctx
        self.pivot = pivot
        self.pending: dict[Operation, None] = {}  # ordered: creation order


@contextlib.contextmanager
def building(g: Graph, ctx: Any, pivot: Operation | None = None,
             clear_control_dependencies: bool = True) -> Iterator[_Phase]:
    """Ops created in the block belong to `ctx` (None: top level) and are rewired into
    it when the block ends; input-less ones get a control input from `pivot` (which
    the block may still set: `phase.pivot = op`).

    Works for a context being built and for one built earlier (the gradient code adds
    stack pushes to a finished loop).  Outer control dependencies do not apply unless
    `clear_control_dependencies` is False."""
    phase = _Phase(ctx, pivot)
    prev = g._get_control_flow_context()
    saved = ctx._phase if ctx is not None else None
    if ctx is not None:
        ctx._phase = phase
    g._set_control_flow_context(ctx)
    try:
        if clear_control_dependencies:
            with g.control_dependencies(None):
                yield phase
        else:
            yield phase
    finally:
        g._set_control_flow_context(prev)
        if ctx is not None:
            ctx._phase = saved
    if ctx is not None:
        for op in list(phase.pending):
            if g._by_name.get(op.name) is op:  # not discarded since (a failed import)
                ctx._process(op, phase.pivot)


def set_context(op: Operation, ctx: Any) -> None:
    """Place `op` in `ctx` by hand (plumbing, an Exit, a cond's pivot): the context
    it was created in no longer rewires it."""
    made_in = op._control_flow_context
    if made_in is not None and made_in._phase is not None:
        made_in._phase.pending.pop(op, None)
    op._set_control_flow_context(ctx)


class ControlFlowContext:
    """What cond and while contexts share: the outer context and rewiring."""

    def __init__(self, graph: Graph, outer: Any) -> None:
        self.graph = graph
        self.outer = outer
        self._external: dict[Tensor, Tensor] = {}
        self._phase: _Phase | None = None  # the innermost `building` block of this context

    def add_op(self, op: Operation) -> None:
        """The graph's hook: `op` was just created with this context current."""
        op._set_control_flow_context(self)
        phase = self._phase
        if phase is None:
            return
        if phase.pivot is None and getattr(self, "pivot", None) is None:
            phase.pending[op] = None  # a loop still being built: its pivot comes later
        else:
            # Rewired at once, as TensorFlow's AddOp: the first op to read an outside
            # value names its Switch or Enter (`cond/Greater/Switch`).
            self._process(op, phase.pivot)

    def _process(self, op: Operation, pivot: Operation | None) -> None:
        if op.type in ("Enter", "RefEnter"):
            # An Enter's input is outside this loop by design: the outer context wires it.
            if self.outer is not None:
                self.outer._process_inputs(op)
            return
        self._process_inputs(op)
        self._process_control(op, pivot)

    def _process_inputs(self, op: Operation) -> None:
        for i, t in enumerate(op.inputs):
            if not value_inside(t, self):
                op._update_input(i, self.add_value(t, op))

    def _process_control(self, op: Operation, pivot: Operation | None) -> None:
        if pivot is None or op.inputs:
            return
        if not any(is_inside(context_of(c), self) for c in op.control_inputs):
            op._add_control_input(pivot)

    def add_value(self, t: Tensor, consumer: Operation | None = None) -> Tensor:
        """`t` (from outside) as seen inside this context; cached per tensor."""
        got = self._external.get(t)
        if got is None:
            g = self.graph
            outer_t = self._outer_value(t, consumer)
            scope = (consumer.name + "/") if consumer is not None else None
            # The plumbing is placed by _make_external itself, not by the hook.
            prev = g._get_control_flow_context()
            g._set_control_flow_context(None)
            try:
                with g.control_dependencies(None), (g.name_scope(scope) if scope else contextlib.nullcontext()):
                    got = self._make_external(outer_t)
            finally:
                g._set_control_flow_context(prev)
            self._external[t] = got
            self._took_in(got.op)
        return got

    def _took_in(self, op: Operation) -> None:
        """`op` (a Switch or Enter) just brought an outside value in, made with the
        control dependencies cleared; the open blocks may still apply to it."""

    def _outer_value(self, t: Tensor, consumer: Operation | None) -> Tensor:
        """`t` as the outer context sees it, brought in there first and in the same
        name scope (TensorFlow's AddValue): a nested cond's outer Switch of `x` read by
        `add` is `add/Switch` and the inner one `add/Switch_1`."""
        if self.outer is None or value_inside(t, self.outer):
            return t
        return self.outer.add_value(t, consumer)

    def _make_external(self, t: Tensor) -> Tensor:
        raise NotImplementedError


class CondContext(ControlFlowContext):
    """One branch of a `cond`: `pred` (the `pred_id` Identity), `pivot` (switch_t or
    switch_f) and `branch` (1 for true, 0 for false)."""

    def __init__(self, graph: Graph, outer: Any, pred: Tensor, pivot: Tensor, branch: int) -> None:
        super().__init__(graph, outer)
        self.pred = pred
        self.pivot = pivot
        self.branch = branch

    def _make_external(self, t: Tensor) -> Tensor:
        from flowlab.ops.control_flow_ops import ref_switch, switch

        # The Switch belongs to the outer context, which may need to bring t in first.
        # A variable stays a reference in the branch (TensorFlow's _SwitchRefOrTensor).
        s = ref_switch(t, self.pred, name="Switch") if t.dtype.is_ref_dtype else switch(t, self.pred)
        sw = s[0].op
        set_context(sw, self.outer)
        self.graph._scratch.setdefault(_BRANCH_SWITCH, {})[sw] = self
        if self.outer is not None:
            self.outer._process_inputs(sw)
        return s[self.branch]

    def _process(self, op: Operation, pivot: Operation | None) -> None:
        super()._process(op, pivot if pivot is not None else self.pivot.op)

    def _process_control(self, op: Operation, pivot: Operation | None) -> None:
        # Inside a loop, a control input from outside that loop is dropped, as
        # TensorFlow's CondContext does (_RemoveExternalControlEdges, no Identity):
        # it would cross the loop's frame.
        loop = loop_of(self)
        if loop is not None:
            kept = [c for c in op.control_inputs if loop_of(output_context(c)) is loop]
            if len(kept) != len(op.control_inputs):
                op._remove_all_control_inputs()
                op._add_control_inputs(kept)
        super()._process_control(op, pivot)

    def __repr__(self) -> str:
        return f"<CondContext pred={self.pred.name} branch={self.branch}>"


class WhileContext(ControlFlowContext):
    """A loop: its frame name, options, and the ops that make its skeleton.

    After `while_loop` builds it: `enters` (loop-var Enters), `merges`, `switches`,
    `identities` (the body's inputs), `next_iterations`, `exits`, `loop_cond`,
    `body_results` (the NextIteration inputs); `const_enters` grows as external values
    are used inside.  The gradient code adds a forward counter per `gradients` call (`forward_counts`)."""

    def __init__(self, graph: Graph, outer: Any, name: str, parallel_iterations: int = 10,
                 back_prop: bool = True, swap_memory: bool = False,
                 maximum_iterations: Any = None) -> None:
        super().__init__(graph, outer)
        self.name = name
        self.parallel_iterations = parallel_iterations
        self.back_prop = back_prop
        self.swap_memory = swap_memory
        self.maximum_iterations = maximum_iterations
        self.enters: list[Tensor] = []
        self.merges: list[Tensor] = []
        self.switches: list[list[Tensor]] = []
        self.identities: list[Tensor] = []
        self.next_iterations: list[Tensor] = []
        self.exits: list[Tensor] = []
        self.body_results: list[Tensor] = []
        self.const_enters: list[Tensor] = []
        self.loop_cond: Tensor | None = None
        self.pivot: Operation | None = None  # the body's pivot (first Identity)
        # Per `gradients` call (TensorFlow builds one counter per call): its name
        # scope -> (the count (Exit), the counter's add op, its NextIteration op).
        self.forward_counts: dict[Any, Any] = {}
        self.forward_syncs: dict[Any, Operation] = {}
        graph._scratch.setdefault(_LOOPS, []).append(self)

    @property
    def outer_loop(self) -> Any:
        return loop_of(self.outer)

    def skeleton_ops(self) -> set[Operation]:
        """The loop's own plumbing: Enters of loop variables, Merges, Switches,
        LoopCond, NextIterations and Exits (not the body's computation)."""
        ts = self.enters + self.merges + self.next_iterations + self.exits
        ops = {t.op for t in ts}
        ops.update(s[0].op for s in self.switches)
        if self.loop_cond is not None:
            ops.add(self.loop_cond.op)
        return ops

    def _make_external(self, t: Tensor) -> Tensor:
        from flowlab.ops.control_flow_ops import enter

        e = enter(t, self.name, is_constant=True, parallel_iterations=self.parallel_iterations)
        set_context(e.op, self)
        if self.outer is not None:
            self.outer._process_inputs(e.op)
        self.const_enters.append(e)
        return e

    def _took_in(self, op: Operation) -> None:
        self.take_outer_controls(op)

    def take_outer_controls(self, enter_op: Operation) -> None:
        """Give an Enter of this loop the control inputs of the open
        `control_dependencies` blocks that its input does not already imply, those
        of this loop's outer contexts up to the enclosing loop (an input from beyond
        that loop would fire once, not per outer iteration), and count it as made in
        those blocks, so that the ops reading it inherit nothing more -- TensorFlow's
        `_FixControlInputsAndContext`: the loop's Merges take no control input and a
        constant Enter of an outside value takes the block's."""
        g = self.graph
        controls = [c for c in g._control_inputs_for([enter_op.inputs[0]]) if self._keeps_control(c)]
        if controls:
            enter_op._add_control_inputs(controls)
        g._record_in_control_blocks(enter_op)

    def _keeps_control(self, c: Operation) -> bool:
        where = output_context(c)
        ctx, outer_loop = self.outer, self.outer_loop
        while ctx is not where:
            if ctx is None or ctx is outer_loop:
                return False
            ctx = ctx.outer
        return True

    def _process_control(self, op: Operation, pivot: Operation | None) -> None:
        # TensorFlow's WhileContext._AddOpInternal.  A control input from outside the
        # loop would fire once, not per iteration: it comes in as the value of an
        # Identity made inside, one per op.  An op with no inputs, or with loop
        # invariants only, runs once per iteration through the pivot (the frame
        # executor hands invariants to an iteration's ops on demand).
        if op.type in ("Enter", "RefEnter"):
            return
        pivot = pivot if pivot is not None else self.pivot
        external = [c for c in op.control_inputs if not is_inside(context_of(c), self)]
        if external:
            kept = [c for c in op.control_inputs if c not in external]
            op._remove_all_control_inputs()
            op._add_control_inputs(kept)
        if pivot is not None and not op.control_inputs and (
                not op.inputs or all(self._is_invariant(t) for t in op.inputs)):
            op._add_control_input(pivot)
        if external:
            # In the scope TensorFlow's AddOp runs in: the op's own (its wrapper opened
            # it), the enclosing one for a Const (made without a scope of its own).
            scope = op.name.rpartition("/")[0] + "/" if op.type == "Const" else op.name + "/"
            with self.graph.name_scope(scope if scope != "/" else None):
                op._add_control_inputs([self._control_proxy(c, pivot) for c in external])

    def _is_invariant(self, t: Tensor) -> bool:
        return t.op.type in ("Enter", "RefEnter") and context_of(t.op) is self \
            and bool(t.op.get_attr("is_constant"))

    def _control_proxy(self, c: Operation, pivot: Operation | None) -> Operation:
        """An Identity inside the loop of `c`'s first output, made in the current name
        scope (`while/Less/Identity` for `while/Less/y`; its Enter is
        `while/Less/Identity/Enter`, shared by every proxy of `c`).  An op with no
        outputs (a group) gets a constant made after it outside the loop --
        TensorFlow drops such a control input instead, which would let the op run
        before the group."""
        from flowlab.ops import core_ops
        from flowlab.ops.constant_op import constant

        g = self.graph
        if c.outputs:
            src = c.outputs[0]
        else:
            key = ("control", c)
            src = self._external.get(key)  # type: ignore[call-overload]
            if src is None:
                with building(g, self.outer), g.control_dependencies([c]):
                    src = constant(0, name=c.name.split("/")[-1] + "_ctrl")
                self._external[key] = src  # type: ignore[index]
        with building(g, self, pivot):
            proxy = core_ops.identity(src)
        return proxy.op

    def __repr__(self) -> str:
        return f"<WhileContext {self.name!r}>"


def loops_of(g: Graph) -> list[WhileContext]:
    return list(g._scratch.get(_LOOPS, ()))


class GradWhileContext(WhileContext):
    """The backward loop of `forward` (a WhileContext).

    A forward value it uses is replaced by the value of the same iteration, popped
    from a stack that the forward loop fills (`history_value`); loop invariants come
    in through constant Enters of their outer value."""

    def __init__(self, graph: Graph, outer: Any, name: str, forward: WhileContext) -> None:
        super().__init__(graph, outer, name, forward.parallel_iterations,
                         swap_memory=forward.swap_memory)
        self.forward = forward
        self.count_identity: Tensor | None = None  # this iteration's backward counter
        self.count_sync: Operation | None = None  # pops happen before the decrement

    def add_op(self, op: Operation) -> None:
        # TensorFlow's WhileContext.AddOp: a Shape, Size or Rank of a forward value is
        # computed in the forward loop, beside that value, so the backward loop stacks
        # the small result rather than the value itself.
        if op.type in ("Shape", "Size", "Rank") and op.inputs and \
                loop_of(output_context(op.inputs[0].op)) is self.forward:
            where = output_context(op.inputs[0].op)
            op._set_control_flow_context(where)
            where._process(op, getattr(where, "pivot", None))
            return
        super().add_op(op)

    def add_value(self, t: Tensor, consumer: Operation | None = None) -> Tensor:
        op = t.op
        while op.type in ("Switch", "RefSwitch", "Identity", "RefIdentity"):
            op = op.inputs[0].op
        if op.type in ("Enter", "RefEnter") and op.get_attr("is_constant") and \
                context_of(op) is self.forward:
            # A loop invariant of the forward loop (through Identities and a cond's
            # Switches, as TensorFlow's GetLoopConstantEnter): its outer value, entered here.
            return self.add_value(op.inputs[0], consumer)
        if not value_inside(t, self.forward):
            return super().add_value(t, consumer)
        got = self._external.get(t)
        if got is None:
            from flowlab.ops.control_flow_grad import history_value

            got = history_value(self, t, consumer)
            self._external[t] = got
        return got

    def __repr__(self) -> str:
        return f"<GradWhileContext {self.name!r} of {self.forward.name!r}>"
