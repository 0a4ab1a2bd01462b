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


def _merge_grad(op: Operation, grad: Any, _index_grad: Any = None) -> list[Any]:
    from flowlab.ops import math_ops
    from flowlab.ops.cond import cond_contexts_of_merge
    from flowlab.ops.control_flow_ops import switch

    if grad is None:
        return [None] * len(op.inputs)
    ctxs = cond_contexts_of_merge(op)
    if ctxs is not None:
        pred = ctxs[1].pred
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
def forward_counter(w: cfc.WhileContext) -> tuple[Tensor, Operation, Tensor, Operation]:
    """(this iteration's count, the increment op, the final count, the push sync) of
    the loop `w`; built into the loop the first time a gradient needs it."""
    if w.forward_count is not None:
        return w.forward_count
    from flowlab.ops.constant_op import constant
    from flowlab.ops.control_flow_ops import (
        control_trigger,
        enter,
        exit,
        merge,
        next_iteration,
        switch,
    )
    from flowlab.ops.core_ops import identity
    from flowlab.ops.math_ops import add

    g = w.graph
    with g.name_scope(w.name.rsplit("/", 1)[0] + "/"):
        with cfc.building(g, w.outer):
            zero = constant(0, dtype=dtypes.int32, name="f_count")
        with cfc.building(g, w, w.pivot):
            e = enter(zero, w.name, is_constant=False, parallel_iterations=w.parallel_iterations,
                      name="f_count")
            m = merge([e, e], name="f_count_merge")[0]
            s = switch(m, w.loop_cond, name="f_count_switch")
            ident = identity(s[1], name="f_count_identity")
            sync = control_trigger(name="f_sync")
            with g.control_dependencies([sync]):
                inc = add(ident, 1, name="f_count_add")
            n = next_iteration(inc, name="f_count_next")
            m.op._update_input(1, n)
            total = exit(s[0], name="f_count_exit")
        cfc.set_context(total.op, w)
    w.forward_count = (ident, inc.op, total, sync)
    return w.forward_count


def history_value(bw: cfc.GradWhileContext, t: Tensor, consumer: Operation | None) -> Tensor:
    """The value `t` of the forward loop's matching iteration, inside the backward
    loop `bw`: pushed by the forward loop, popped by the backward one."""
    from flowlab.ops.control_flow_ops import switch
    from flowlab.ops.stack_ops import stack_pop_v2, stack_push_v2, stack_v2

    w = bw.forward
    g = w.graph
    vctx = cfc.output_context(t.op)
    count_ident, _, _, sync = forward_counter(w)
    base = t.op.name + "/"
    with g.name_scope(base):
        with cfc.building(g, w.outer):
            handle = stack_v2(-1, t.dtype.base_dtype, stack_name=t.name, name="f_acc")
        with cfc.building(g, vctx, None):
            push = stack_push_v2(handle, t, swap_memory=w.swap_memory)
        push.op._add_control_input(count_ident.op)
        sync._add_control_input(push.op)
        with cfc.building(g, bw, bw.pivot):
            h = handle
            if isinstance(vctx, cfc.CondContext):
                # Popped only in the iterations whose forward pass took this branch.
                h = switch(handle, vctx.pred)[vctx.branch]
            pop = stack_pop_v2(h, t.dtype.base_dtype)
            pop.set_shape(t.shape)
        pop.op._add_control_input(bw.count_identity.op)
        bw.count_sync._add_control_input(pop.op)
    return pop


def _trainable(t: Tensor) -> bool:
    from flowlab.ops.gradients_impl import is_trainable

    return is_trainable(t) and t.dtype.base_dtype is not dtypes.resource


def backward_loop(w: cfc.WhileContext, const_enters: list[Tensor], exit_grads: list[Any],
                  level_gradients: Any) -> list[Any]:
    """Gradients for the inputs of `w`'s Enters (loop variables, then `const_enters`)
    given the gradients of its Exits; `level_gradients(ys, xs, grad_ys, level)` is the
    gradient walk, taken at the forward loop's level for the body."""
    from flowlab.ops import array_ops, math_ops
    from flowlab.ops.control_flow_ops import control_trigger
    from flowlab.ops.core_ops import identity
    from flowlab.ops.while_loop import build_loop

    n_vars = len(w.enters)
    none = [None] * (n_vars + len(const_enters))
    if not w.back_prop:
        return none
    if isinstance(w, cfc.GradWhileContext):
        raise TypeError("Second-order gradient for while loops not supported.")
    g = w.graph
    var_idx = [j for j in range(n_vars) if _trainable(w.exits[j])]
    if not any(exit_grads[j] is not None for j in var_idx):
        return none
    inv_idx = [k for k, e in enumerate(const_enters) if _trainable(e)]
    sparse = {k: _sparse_index_dtype(const_enters[k]) for k in inv_idx}
    total = forward_counter(w)[2]
    init_g = [_dense(exit_grads[j]) if exit_grads[j] is not None
              else array_ops.zeros_like(w.exits[j]) for j in var_idx]
    init_acc: list[Tensor] = []
    acc_inv: list[TensorShape] = []
    for k in inv_idx:
        x = const_enters[k].op.inputs[0]
        if sparse[k] is None:
            init_acc.append(array_ops.zeros_like(x, optimize=False))
            acc_inv.append(x.shape)
        else:
            # TensorFlow accumulates a sparse gradient of an invariant by concatenating
            # its rows (from a zero row at index 0), so the result is IndexedSlices.
            rest = x.shape.as_list()[1:] if x.shape.ndims is not None else None
            if rest is not None and all(d is not None for d in rest):
                zero_row = array_ops.zeros([1] + rest, x.dtype.base_dtype)
            else:
                zero_row = array_ops.zeros(array_ops.concat([[1], array_ops.shape(x)[1:]], 0),
                                           x.dtype.base_dtype)
            init_acc += [zero_row, array_ops.zeros([1], sparse[k])]
            acc_inv += [TensorShape([None] + rest) if rest is not None else TensorShape(None),
                        TensorShape([None])]
    scope = w.name.rsplit("/", 1)[0]
    with g.name_scope(scope.split("/")[-1]) as bscope:
        bw = cfc.GradWhileContext(g, cfc.current_context(g), bscope + "while_context", w)

        def cond(c: Tensor, *rest: Any) -> Tensor:
            return math_ops.greater(c, 0)

        def body(c: Tensor, *rest: Any) -> list[Any]:
            bw.count_identity = c
            bw.count_sync = control_trigger(name="b_sync")
            with g.control_dependencies([bw.count_sync]):
                c_next = math_ops.subtract(c, 1)
            gs = list(rest[: len(var_idx)])
            accs = list(rest[len(var_idx):])
            ys = [w.body_results[j] for j in var_idx]
            xs = [w.identities[j] for j in var_idx] + [const_enters[k] for k in inv_idx]
            grads = level_gradients(ys, xs, gs, w)
            new_gs = []
            for i, j in enumerate(var_idx):
                d = grads[i]
                if d is None:
                    like = gs[i] if w.merges[j].shape.is_fully_defined() else w.identities[j]
                    d = array_ops.zeros_like(like)
                new_gs.append(identity(_dense(d)))
            new_accs: list[Any] = []
            a = 0
            for i, k in enumerate(inv_idx):
                d = grads[len(var_idx) + i]
                if sparse[k] is None:
                    new_accs.append(accs[a] if d is None else math_ops.add(accs[a], _dense(d)))
                    a += 1
                    continue
                vals, idx = accs[a], accs[a + 1]
                a += 2
                if d is not None:
                    if isinstance(d, Tensor):  # not sparse after all: one row per index
                        raise TypeError(
                            f"The gradient of loop invariant {const_enters[k].name} was "
                            "expected to be sparse (it is only gathered from)."
                        )
                    vals = array_ops.concat([vals, d.values], 0)
                    idx = array_ops.concat([idx, math_ops.cast(d.indices, sparse[k])], 0)
                new_accs += [vals, idx]
            return [c_next, *new_gs, *new_accs]

        invariants = [TensorShape([])] + [w.merges[j].shape for j in var_idx] + acc_inv
        _, exits = build_loop(bw, cond, body, [total, *init_g, *init_acc], invariants,
                              return_same_structure=True)
    out = list(none)
    for i, j in enumerate(var_idx):
        out[j] = exits[1 + i]
    a = 1 + len(var_idx)
    for k in inv_idx:
        if sparse[k] is None:
            out[n_vars + k] = exits[a]
            a += 1
        else:
            x = const_enters[k].op.inputs[0]
            out[n_vars + k] = IndexedSlices(exits[a], exits[a + 1], array_ops.shape(x))
            a += 2
    return out


def _sparse_index_dtype(e: Tensor) -> Any:
    """The index dtype when every differentiable use of the loop invariant `e` is an
    axis-0 gather from it (its gradient is then IndexedSlices), else None."""
    from flowlab.ops.const_fold import constant_value

    kinds = set()
    uses = [c for c in e.consumers() if any(_trainable(o) for o in c.outputs)]
    if not uses:
        return None
    for c in uses:
        if c.type != "GatherV2" or c.inputs[0] is not e or c.inputs[1] is e:
            return None
        axis = constant_value(c.inputs[2])
        if axis is None or int(axis) != 0 or c.get_attr("batch_dims") != 0:
            return None
        kinds.add(c.inputs[1].dtype.base_dtype)
    return dtypes.int32 if kinds == {dtypes.int32} else dtypes.int64
