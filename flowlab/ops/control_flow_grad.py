"""Gradients through `cond` and `while_loop` (paper sections 3.4 and 4.1).

cond: the gradient of a Merge is a Switch of the incoming gradient on the cond's
predicate, and the gradient of a Switch is a Merge of its two output gradients, so
the backward pass takes the branch the forward pass took.  A Switch whose other
output has no gradient merges with zeros made live exactly when that other branch
was taken (a ZerosLike of a fresh Switch of the same value), so the input's gradient
is never dead.

while_loop: `gradients` treats a loop as one node whose inputs are its Enters'
inputs and whose outputs are its Exits (flowlab/ops/gradients_impl.py), and calls
`backward_loop`, which builds the backward loop:

- a counter added to the forward loop counts its iterations (`forward_counter`);
- the backward loop runs that many times with loop variables (count, the gradient
  of each differentiable loop variable, an accumulator per differentiable loop
  invariant); its body is `gradients` of the forward body, from the body's results
  back to its inputs, taken at the forward loop's level;
- a forward value the backward body uses is pushed onto a stack by the forward loop,
  one push per iteration, and popped by the backward loop (`history_value`, called
  by the backward loop's `GradWhileContext` when it rewires its ops).  Control edges
  through the counters and ControlTriggers keep pushes and pops in iteration order;
  a value made in a cond branch inside the loop is pushed in that branch and popped
  behind a Switch on the (popped) predicate.

Nested loops need nothing more: the inner backward loop is built inside the outer
backward body, and the values it takes from the outer forward loop (its stacks'
handles, its iteration count) are themselves pushed and popped by the outer loops.
Gradients of Enter, Exit and NextIteration are never called one op at a time; they
are registered so that a hand-built loop (raw primitives, no while_loop) gets a clear
error.
"""

from __future__ import annotations

import contextlib
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import control_flow_context as cfc
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.indexed_slices import IndexedSlices


def _switch_grad(op: Operation, *grads: Any) -> Any:
    from flowlab.ops import array_ops
    from flowlab.ops.control_flow_ops import merge, switch

    if all(g is None for g in grads):
        return None, None
    filled = list(grads)
    for k, g in enumerate(filled):
        if g is None:
            # Zeros that are live exactly when output k was: a ZerosLike of a fresh
            # Switch of the same value on the same predicate.
            s = switch(op.inputs[0], op.inputs[1])[k]
            filled[k] = array_ops.zeros_like(s, optimize=False)
    dense = [_dense(g) for g in filled]
    return merge(dense, name="cond_grad")[0], None


def cond_switch_zeros(op: Operation, index: int) -> Tensor | None:
    """Zeros for the output `index` of a cond's Switch that got no gradient, made in
    the `gradients` scope as TensorFlow's ZerosLikeOutsideLoop: a fresh Switch of the
    same value (`gradients/Switch`), an Identity as pivot, its Shape and `zeros` (a
    Fill after the pivot), live exactly when that output was.  None for a Switch
    that is not a cond's."""
    from flowlab.ops import array_ops, core_ops
    from flowlab.ops.builder import apply_op
    from flowlab.ops.control_flow_ops import switch

    ctx = cfc.output_context(op)
    if not isinstance(ctx, cfc.CondContext) or index != 1 - ctx.branch:
        return None
    val = switch(op.inputs[0], ctx.pred)[index]
    pivot = core_ops.identity(val)
    shape = apply_op("Shape", input=val, out_type=dtypes.int32, name="Shape")
    with op.graph.control_dependencies([pivot.op]):
        return array_ops.zeros(shape, dtype=op.outputs[index].dtype.base_dtype)


def loop_zeros(op: Operation, index: int) -> Tensor | None:
    """Zeros for output `index` of `op`, an op of a forward loop whose backward body
    is being built (the current context), that got no gradient: TensorFlow's
    ControlFlowState.ZerosLike.  A known shape gives a Const in the backward loop; an
    unknown one, zeros of the forward iteration's shape, stacked.  For a cond's Switch
    the zeros stand for its untaken output: they are switched on the popped predicate
    to the other branch (a known shape), or the shape is taken from a Switch of the
    input to that branch and its push and pop are guarded the same way.  None for a
    Switch that is not a cond's (the Switch's gradient fills it)."""
    from flowlab.ops import array_ops
    from flowlab.ops.builder import apply_op
    from flowlab.ops.constant_op import constant
    from flowlab.ops.control_flow_ops import switch

    g = op.graph
    bw = cfc.current_context(g)
    cond = cfc.output_context(op) if op.type in ("Switch", "RefSwitch") else None
    if cond is not None and not isinstance(cond, cfc.CondContext):
        return None
    val = op.outputs[index]
    dtype = val.dtype.base_dtype
    if val.shape.is_fully_defined():
        zeros = constant(0, shape=val.shape.as_list(), dtype=dtype)
        if cond is None:
            return zeros
        return switch(zeros, bw.add_value(cond.pred))[1 - cond.branch]
    if cond is not None:
        with cfc.building(g, cond.outer):
            dead = switch(op.inputs[0], cond.pred)[1 - cond.branch]
            shape = apply_op("Shape", input=dead, out_type=dtypes.int32, name="Shape")
        cfc.set_context(dead.op, cond)
        cfc.set_context(shape.op, cond)
    else:
        with cfc.building(g, cfc.context_of(op)):
            shape = apply_op("Shape", input=val, out_type=dtypes.int32, name="Shape")
    popped = history_value(bw, shape, None, dead_branch=cond is not None)
    return array_ops.zeros(popped, dtype=dtype)


def _merge_grad(op: Operation, grad: Any, _index_grad: Any = None) -> list[Any]:
    from flowlab.ops import math_ops
    from flowlab.ops.cond import cond_contexts_of_merge
    from flowlab.ops.control_flow_ops import switch

    if grad is None:
        return [None] * len(op.inputs)
    ctxs = cond_contexts_of_merge(op)
    if ctxs is not None:
        pred = ctxs[1].pred
        bw = cfc.current_context(op.graph)
        if isinstance(bw, cfc.GradWhileContext) and cfc.value_inside(pred, bw.forward):
            # A cond inside the loop: the predicate of the matching forward iteration,
            # stacked in this gradient's scope (`Merge_grad/f_acc`), as TensorFlow's
            # _MergeGrad asks for it before it makes the Switch.
            pred = bw.add_value(pred)
        g_false, g_true = switch(_dense(grad), pred, name="cond_grad")
        return [g_false, g_true]
    # A Merge built by hand: route the gradient to the input that was live.
    n = len(op.inputs)
    return [switch(_dense(grad), math_ops.equal(op.outputs[1], i))[1] for i in range(n)]


def _dense(g: Any) -> Any:
    from flowlab.ops.builder import convert_to_tensor

    return g if isinstance(g, Tensor) else convert_to_tensor(g)


def _loop_primitive_grad(op: Operation, *grads: Any) -> Any:
    raise LookupError(
        f"Gradient of '{op.name}' (op type: {op.type}): gradients flow through loops "
        "built by tf.while_loop only, which `gradients` differentiates as a whole; this "
        "op belongs to a loop built from the primitives by hand."
    )


gradient("Switch")(_switch_grad)
gradient("Merge")(_merge_grad)
for _t in ("Enter", "Exit", "NextIteration"):
    gradient(_t)(_loop_primitive_grad)
# Reference-typed control flow carries variables into branches and loops for updates;
# a variable used as a value enters through its snapshot and a plain Switch/Enter, so
# no gradient flows through these (TensorFlow registers them; flowlab does not yet).
for _t in ("RefSwitch", "RefMerge", "RefEnter", "RefExit", "RefNextIteration"):
    not_differentiable(_t)


# --- while loops -------------------------------------------------------------------
# TensorFlow's layout and names (control_flow_state.py's GradLoopState), in the name
# scope of the `gradients` call ("gradients/"):
#
#   forward counter, in the forward loop:  f_count (Const 0) -> f_count_1 (Enter) ->
#       Merge -> Switch(LoopCond) -> Add(+1) -> NextIteration; f_count_2 (Exit) = count
#   backward counter:  b_count (Const 1); b_count_1 (Enter of the count) -> Merge_1 ->
#       GreaterEqual(>= 1) -> b_count_2 (LoopCond) -> Switch_1 -> Sub(-1) ->
#       NextIteration_1; b_count_3 (Exit)
#   per differentiable loop variable v (forward ops while/Exit_k, Switch_k, Merge_k,
#   Enter_k):  while/Exit_k_grad/b_exit (Enter of the Exit's gradient) ->
#       while/Switch_k_grad/b_switch (Merge) -> while/Merge_k_grad/Switch (on
#       b_count_2): its true side feeds the body's gradient, its false side
#       while/Enter_k_grad/Exit; the body's gradient of v comes back through
#       while/Switch_k_grad_1/NextIteration
#   per loop invariant x entered as E that gets a gradient:  E_grad/b_acc (zeros),
#       b_acc_1 (Enter), b_acc_2 (Merge), Switch, Add(gradient), NextIteration, b_acc_3
#       (Exit); an IndexedSlices gradient accumulates indices, values (and the dense
#       shape, by maximum) by concatenation instead.
#   a forward value the body gradient reads, in the scope of the op reading it:
#       Const (-1), f_acc (StackV2), Enter (into the forward loop), StackPushV2 (after
#       the counter's Add, before its NextIteration -- through f_sync when pushed in a
#       cond branch); StackPopV2/Enter, StackPopV2 (after Sub), b_sync (a
#       ControlTrigger after the pops, before NextIteration_1).
#
# The control edges keep pushes and pops in iteration order.  The body's gradient
# ops are "gradients/while/<op>_grad/...".  One difference from TensorFlow: the
# forward counter is built once per loop and shared by later `gradients` calls.
def forward_counter(w: cfc.WhileContext) -> tuple[Tensor, Operation, Operation]:
    """(the iteration count (Exit), the increment op, the counter's NextIteration op)
    of the loop `w`; built into the loop the first time a `gradients` call needs it,
    once per call as TensorFlow does (`gradients_1/f_count`)."""
    key = gradients_call(w.graph)
    got = w.forward_counts.get(key)
    if got is not None:
        return got
    from flowlab.ops.constant_op import constant
    from flowlab.ops.control_flow_ops import enter, exit, merge, next_iteration, switch
    from flowlab.ops.math_ops import add

    g = w.graph
    with cfc.building(g, w.outer):
        zero = constant(0, dtype=dtypes.int32, name="f_count")
    outer = w.outer_loop
    if outer is not None and key in outer.forward_counts:
        # A nested loop's i-th run pushes before its (i+1)-th: its counter starts after
        # the outer counter's increment (TensorFlow's AddForwardLoopCounter).
        zero.op._add_control_input(outer.forward_counts[key][1])
    with cfc.building(g, w, w.pivot):
        e = enter(zero, w.name, is_constant=False, parallel_iterations=w.parallel_iterations,
                  name="f_count")
        m = merge([e, e])[0]
        s = switch(m, w.loop_cond)
        inc = add(s[1], 1)
        n = next_iteration(inc)
        m.op._update_input(1, n)
        total = exit(s[0], name="f_count")
    w.forward_counts[key] = (total, inc.op, n.op)
    return w.forward_counts[key]


# graph._scratch keys: the name scope of the `gradients` call being built, and the
# control-flow context it was called in (where its stacks are made).
_GRADIENTS_CALL = "gradients_call"
_GRADIENTS_CONTEXT = "gradients_call_context"


def gradients_call(g: Any) -> Any:
    return g._scratch.get(_GRADIENTS_CALL)


@contextlib.contextmanager
def in_gradients_call(g: Any, scope: str) -> Any:
    """Mark the block as the `gradients` call named `scope` (its forward counters,
    stacks and syncs are its own)."""
    old = g._scratch.get(_GRADIENTS_CALL), g._scratch.get(_GRADIENTS_CONTEXT)
    g._scratch[_GRADIENTS_CALL] = scope
    g._scratch[_GRADIENTS_CONTEXT] = cfc.current_context(g)
    try:
        yield
    finally:
        g._scratch[_GRADIENTS_CALL], g._scratch[_GRADIENTS_CONTEXT] = old


def _forward_sync(w: cfc.WhileContext) -> Operation:
    """The ControlTrigger that orders pushes made in cond branches of `w` before the
    counter's NextIteration (a push in a branch not taken is dead)."""
    key = gradients_call(w.graph)
    got = w.forward_syncs.get(key)
    if got is None:
        from flowlab.ops.control_flow_ops import control_trigger

        g = w.graph
        with cfc.building(g, None):  # placed by hand: no pivot, it fires once the pushes have
            got = control_trigger(name="f_sync")
        cfc.set_context(got, w)
        forward_counter(w)[2]._add_control_input(got)
        w.forward_syncs[key] = got
    return got


def _grad_sync(bw: cfc.GradWhileContext) -> Operation:
    """The ControlTrigger after this iteration's pops, before the backward counter's
    NextIteration."""
    if bw.count_sync is None:
        from flowlab.ops.control_flow_ops import control_trigger

        g = bw.graph
        with cfc.building(g, None):  # placed by hand: no pivot, after the pops only
            sync = control_trigger(name="b_sync")
        cfc.set_context(sync, bw)
        bw.grad_index._add_control_input(sync)
        bw.count_sync = sync
    return bw.count_sync


def history_value(bw: cfc.GradWhileContext, t: Tensor, consumer: Operation | None,
                  dead_branch: bool = False) -> Tensor:
    """The value `t` of the forward loop's matching iteration, inside the backward
    loop `bw`: pushed by the forward loop, popped by the backward one.  `dead_branch`:
    `t` stands for a cond branch's untaken side (loop_zeros' shape), so it is pushed
    beside the cond and popped when the other branch was taken."""
    from flowlab.ops.constant_op import constant
    from flowlab.ops.control_flow_ops import switch
    from flowlab.ops.stack_ops import stack_pop_v2, stack_push_v2, stack_v2

    w = bw.forward
    g = w.graph
    if t.op.type == "Const":
        # The same in every iteration: cloned into the backward loop, not stacked
        # (TensorFlow's GetRealValue), in the scope of the gradient using it.
        with g.name_scope((consumer or t.op).name + "/"), cfc.building(g, bw, bw.pivot):
            return constant(t.op.get_attr("value"), dtype=t.dtype.base_dtype)
    vctx = cfc.output_context(t.op)
    _, add_op, _ = forward_counter(w)
    # In the scope of the op reading the value (the current scope if none).
    with g.name_scope(consumer.name + "/") if consumer is not None else contextlib.nullcontext():
        # The stack lives where `gradients` was called (TensorFlow's
        # AddForwardAccumulator); nested loops enter it level by level (Enter, Enter_1).
        with cfc.building(g, g._scratch.get(_GRADIENTS_CONTEXT)):
            max_size = constant(-1, dtype=dtypes.int32)
            handle = stack_v2(max_size, t.dtype.base_dtype, stack_name=t.name, name="f_acc")
        enter_acc = w.add_value(handle)
        with cfc.building(g, vctx.outer if dead_branch else vctx, None):
            push = stack_push_v2(enter_acc, t, swap_memory=w.swap_memory)
        if dead_branch:
            cfc.set_context(push.op, vctx)
        push.op._add_control_input(add_op)
        if vctx is w:
            forward_counter(w)[2]._add_control_input(push.op)
        else:
            _forward_sync(w)._add_control_input(push.op)
        with cfc.building(g, bw, bw.pivot):
            h = handle
            if isinstance(vctx, cfc.CondContext):
                # Popped only in the iterations whose forward pass took this branch.
                h = switch(handle, vctx.pred)[1 - vctx.branch if dead_branch else vctx.branch]
            pop = stack_pop_v2(h, t.dtype.base_dtype)
            pop.set_shape(t.shape)
        _grad_sync(bw)._add_control_input(pop.op)
    return pop


def _trainable(t: Tensor) -> bool:
    from flowlab.ops.gradients_impl import is_trainable

    return is_trainable(t) and t.dtype.base_dtype is not dtypes.resource


def _scope_of(t: Tensor) -> str:
    return t.op.name + "_grad"


def _backward_counter(bw: cfc.GradWhileContext, total: Tensor) -> None:
    """The backward loop's counter, from the forward count down to 0 (sets bw's
    loop_cond, pivot, count_identity and grad_index)."""
    from flowlab.ops.constant_op import constant
    from flowlab.ops.control_flow_ops import enter, exit, loop_cond, merge, next_iteration, switch
    from flowlab.ops.math_ops import greater_equal, subtract

    g = bw.graph
    if isinstance(bw.outer, cfc.GradWhileContext) and cfc.value_inside(total, bw.outer.forward):
        # A nested loop: its count of each outer iteration, stacked in this scope.
        total = bw.outer.add_value(total)
    with cfc.building(g, bw.outer):
        one = constant(1, dtype=dtypes.int32, name="b_count")
    with cfc.building(g, bw) as phase:
        e = enter(total, bw.name, is_constant=False, parallel_iterations=bw.parallel_iterations,
                  name="b_count")
        m = merge([e, e])[0]
        pred = loop_cond(greater_equal(m, one), name="b_count")
        s = switch(m, pred)
        index = subtract(s[1], one)
        phase.pivot = index.op
        n = next_iteration(index)
        m.op._update_input(1, n)
        x = exit(s[0], name="b_count")
    bw.loop_cond, bw.pivot, bw.count_identity, bw.grad_index = pred, index.op, index, n.op
    if isinstance(bw.outer, cfc.GradWhileContext):
        # The pops of an inner loop's i-th run before those of its (i+1)-th
        # (TensorFlow's AddBackpropLoopCounter).
        _grad_sync(bw.outer)._add_control_input(x.op)
    bw.enters.append(e)
    bw.merges.append(m)
    bw.switches.append(s)
    bw.next_iterations.append(n)
    bw.exits.append(x)


def _accumulator(bw: cfc.GradWhileContext, init: Tensor, step: Any, shape: TensorShape) -> Tensor:
    """A backward-loop variable from `init` updated by `step(previous)` each
    iteration (b_acc Enter, Merge, Switch, step, NextIteration, Exit); its Exit."""
    from flowlab.ops.control_flow_ops import enter, exit, merge, next_iteration, switch

    g = bw.graph
    with cfc.building(g, bw, bw.pivot):
        e = enter(init, bw.name, is_constant=False, parallel_iterations=bw.parallel_iterations,
                  use_input_shape=False, name="b_acc")
        e.set_shape(shape)
        m = merge([e, e], name="b_acc")[0]
        s = switch(m, bw.loop_cond)
        n = next_iteration(step(s[1]))
        m.op._update_input(1, n)
        x = exit(s[0], name="b_acc")
    bw.enters.append(e)
    bw.merges.append(m)
    bw.switches.append(s)
    bw.next_iterations.append(n)
    bw.exits.append(x)
    return x


def _dense_accumulator(bw: cfc.GradWhileContext, enter_op: Operation, d: Tensor) -> Tensor:
    from flowlab.ops import array_ops, math_ops
    from flowlab.ops.constant_op import constant

    g = bw.graph
    x = enter_op.inputs[0]
    with cfc.building(g, bw.outer):
        if d.shape.is_fully_defined():
            init = constant(0, dtype=d.dtype.base_dtype, shape=d.shape.as_list(), name="b_acc")
        else:
            init = array_ops.zeros(array_ops.shape(x), d.dtype.base_dtype)
    return _accumulator(bw, init, lambda prev: math_ops.add(prev, d), x.shape)


def _sparse_accumulator(bw: cfc.GradWhileContext, enter_op: Operation, d: IndexedSlices) -> IndexedSlices:
    """TensorFlow accumulates a sparse gradient of an invariant by concatenating its
    rows (from a zero row at index 0), so the result is IndexedSlices."""
    from flowlab.ops import array_ops, math_ops
    from flowlab.ops.constant_op import constant

    g = bw.graph
    x = enter_op.inputs[0]
    values, indices, dense_shape = d.values, d.indices, d.dense_shape
    vs = values.shape
    with cfc.building(g, bw.outer):
        if vs.is_fully_defined():
            values_init = constant(0, dtype=values.dtype.base_dtype, shape=[1] + vs.as_list()[1:],
                                   name="b_acc")
        else:
            rows = array_ops.concat([[1], array_ops.shape(x)[1:]], 0)
            values_init = array_ops.zeros(rows, values.dtype.base_dtype)
        indices_init = constant([0], dtype=indices.dtype.base_dtype)
        shape_init = None
        if dense_shape is not None:
            if dense_shape.shape.is_fully_defined():
                shape_init = constant(0, dtype=dense_shape.dtype.base_dtype,
                                      shape=dense_shape.shape.as_list(), name="b_acc")
            else:
                shape_init = array_ops.zeros_like(array_ops.shape(x,
                                                                  out_type=dense_shape.dtype))
    rest = vs[1:] if vs.ndims is not None else TensorShape(None)
    idx = _accumulator(bw, indices_init, lambda prev: array_ops.concat([prev, indices], 0),
                       TensorShape([None]))
    vals = _accumulator(bw, values_init, lambda prev: array_ops.concat([prev, values], 0),
                        TensorShape([None]).concatenate(rest))
    shape = None
    if shape_init is not None:
        shape = _accumulator(bw, shape_init, lambda prev: math_ops.maximum(dense_shape, prev),
                             dense_shape.shape)
    return IndexedSlices(vals, idx, shape)


def backward_loop(w: cfc.WhileContext, const_enters: list[Tensor], exit_grads: list[Any],
                  level_gradients: Any, needed: list[bool] | None = None) -> list[Any]:
    """Gradients for the inputs of `w`'s Enters (loop variables, then `const_enters`)
    given the gradients of its Exits; `level_gradients(ys, xs, grad_ys, level)` is the
    gradient walk, taken at the forward loop's level for the body.  `needed` (one flag
    per input, default all) says which loop invariants lie between the walk's xs and
    ys: the others get no accumulator and no body gradient (None), as in TensorFlow,
    whose walk never reaches their Enters."""
    from flowlab.ops import array_ops
    from flowlab.ops.control_flow_ops import enter, exit, merge, next_iteration, switch

    n_vars = len(w.enters)
    none: list[Any] = [None] * (n_vars + len(const_enters))
    if not w.back_prop:
        return none
    if isinstance(w, cfc.GradWhileContext):
        raise TypeError("Second-order gradient for while loops not supported.")
    g = w.graph
    var_idx = [j for j in range(n_vars) if _trainable(w.exits[j])]
    if not any(exit_grads[j] is not None for j in var_idx):
        return none
    inv_idx = [k for k, e in enumerate(const_enters)
               if _trainable(e) and (needed is None or needed[n_vars + k])]
    total = forward_counter(w)[0]
    bw = cfc.GradWhileContext(g, cfc.current_context(g), g.unique_name(w.name, mark_as_used=False), w)
    _backward_counter(bw, total)
    init_g = []
    for j in var_idx:
        if exit_grads[j] is not None:
            init_g.append(_dense(exit_grads[j]))
        else:
            # TensorFlow's ZerosLikeForExit: a Const `zeros` when the shape is known.
            x = w.exits[j]
            init_g.append(array_ops.zeros(x.shape.as_list(), dtype=x.dtype.base_dtype)
                          if x.shape.is_fully_defined() else array_ops.zeros_like(x, optimize=False))
    # Per loop variable: b_exit -> b_switch (Merge) -> Merge_k_grad/Switch.
    b_switches, b_merges = [], []
    for i, j in enumerate(var_idx):
        with g.name_scope(_scope_of(w.exits[j])), cfc.building(g, bw, bw.pivot):
            e = enter(init_g[i], bw.name, is_constant=False,
                      parallel_iterations=bw.parallel_iterations, use_input_shape=False,
                      name="b_exit")
            e.set_shape(w.merges[j].shape)
        with g.name_scope(_scope_of(w.switches[j][0])), cfc.building(g, bw, bw.pivot):
            m = merge([e, e], name="b_switch")[0]
        with g.name_scope(_scope_of(w.merges[j])), cfc.building(g, bw, bw.pivot):
            s = switch(m, bw.loop_cond)
        bw.enters.append(e)
        bw.merges.append(m)
        bw.switches.append(s)
        b_merges.append(m)
        b_switches.append(s)
    bw.identities = [s[1] for s in b_switches]
    # The body's gradient, taken at the forward loop's level.
    with cfc.building(g, bw, bw.pivot):
        ys = [w.body_results[j] for j in var_idx]
        xs = [w.identities[j] for j in var_idx] + [const_enters[k] for k in inv_idx]
        grads = level_gradients(ys, xs, [s[1] for s in b_switches], w)
    out = list(none)
    for i, k in enumerate(inv_idx):
        d = grads[len(var_idx) + i]
        if d is None:
            continue
        enter_op = const_enters[k].op
        with g.name_scope(_scope_of(const_enters[k])):
            if isinstance(d, IndexedSlices):
                out[n_vars + k] = _sparse_accumulator(bw, enter_op, d)
            else:
                out[n_vars + k] = _dense_accumulator(bw, enter_op, _dense(d))
    results = []
    for i, j in enumerate(var_idx):
        d = grads[i]
        with g.name_scope(_scope_of(w.switches[j][0])), cfc.building(g, bw, bw.pivot):
            if d is None:
                like = b_switches[i][1] if w.merges[j].shape.is_fully_defined() else w.identities[j]
                d = array_ops.zeros_like(like)
            n = next_iteration(_dense(d))
            b_merges[i].op._update_input(1, n)
        bw.next_iterations.append(n)
        results.append(n.op.inputs[0])
        with g.name_scope(_scope_of(w.enters[j])), cfc.building(g, bw, bw.pivot):
            x = exit(b_switches[i][0])
        bw.exits.append(x)
        out[j] = x
    bw.body_results = results
    return out
