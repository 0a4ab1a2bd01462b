"""`while_loop`: a loop in the graph, built from Enter, Merge, Switch, LoopCond,
NextIteration and Exit (paper section 3.4; TensorFlow 1.x's v1 layout and names).

Per loop variable v (names under the loop's scope, "while/"):

    Enter(v, frame_name="while/while_context")  -> Merge(Enter, NextIteration)
    Merge -> Switch(Merge, LoopCond) -> Identity (body input, output_true)
                                     -> Exit (the result, output_false)
    body result -> NextIteration -> Merge's second input (the back edge)

`cond(*vars)` is built on the Merges and feeds LoopCond; `body(*vars)` on the
Identities.  The executor runs each iteration in its own frame iteration; the Switch
sends the values to the Exits when LoopCond is false.  A `WhileContext` tracks the
loop's ops: values from outside enter through constant Enters, constants inside get a
control input from the pivot (the first Merge while building `cond`, the first
Identity while building `body`).

`maximum_iterations` adds a counter loop variable (`iteration_counter`) and ands
`counter < maximum_iterations` into the condition, as TensorFlow does.  A loop
variable whose shape changes in the body without a `shape_invariants` entry that
allows it is a ValueError at build time naming the variable and both shapes.

Loop variables may be nested structures of tensors, and TensorArray-like objects
(anything with `flow` and `_with_flow(flow)`), which travel as their flow tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor, user_traceback
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.ops import control_flow_context as cfc
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.cond import assert_same_structure, flatten, pack_sequence_as
from flowlab.ops.control_flow_ops import enter, exit, loop_cond, merge, next_iteration, switch
from flowlab.ops.core_ops import identity

__all__ = ["while_loop"]


def _shape_str(s: TensorShape) -> str:
    dims = s.as_tuple()
    return "<unknown>" if dims is None else str(tuple(dims))


def _less_or_equal(s1: TensorShape, s2: TensorShape) -> bool:
    """Whether s1 is at least as specific as s2 (every known dim of s2 equal in s1)."""
    d2 = s2.as_tuple()
    if d2 is None:
        return True
    d1 = s1.as_tuple()
    if d1 is None or len(d1) != len(d2):
        return False
    return all(b is None or a == b for a, b in zip(d1, d2))


def _is_flow_object(v: Any) -> bool:
    return hasattr(v, "_with_flow") and hasattr(v, "flow")


def _to_flows(flat: list[Any]) -> list[Any]:
    return [v.flow if _is_flow_object(v) else v for v in flat]


def _from_flows(originals: list[Any], flat: list[Any]) -> list[Any]:
    return [o._with_flow(t) if _is_flow_object(o) else t for o, t in zip(originals, flat)]


def _as_loop_tensor(v: Any) -> Tensor:
    if isinstance(v, Tensor):
        return v
    return convert_to_tensor(v)


def build_loop(
    ctx: cfc.WhileContext,
    cond: Callable[..., Any],
    body: Callable[..., Any],
    loop_vars: Any,
    shape_invariants: Any = None,
    return_same_structure: bool = False,
) -> tuple[Any, list[Tensor]]:
    """Build the loop of `ctx` (a WhileContext made for it) in the current name scope.

    Returns (the packed result as while_loop returns it, the Exit tensors)."""
    g = ctx.graph
    original = loop_vars
    flat_orig = flatten(loop_vars)
    flat = [_as_loop_tensor(v) for v in _to_flows(flat_orig)]
    if shape_invariants is not None:
        flat_inv = flatten(shape_invariants) if not isinstance(shape_invariants, TensorShape) \
            else [shape_invariants]
        try:
            assert_same_structure([0] * len(flat), [0] * len(flat_inv))
        except ValueError:
            raise ValueError(
                f"shape_invariants has {len(flat_inv)} shapes for {len(flat)} loop variables"
            ) from None
        invariants = [as_shape(s) for s in flat_inv]
        for v, s in zip(flat, invariants):
            if not _less_or_equal(v.shape, s):
                raise ValueError(
                    f"The shape invariant specified for {v.name} is not compatible with the "
                    f"initial shape of the loop variable. It enters the loop with shape "
                    f"{_shape_str(v.shape)}, but the specified shape invariant is {_shape_str(s)}."
                )
    else:
        invariants = None

    if ctx.outer is not None:
        # The loop variables are brought into the outer context first, in the loop's
        # scope (`cond/while/Switch`), as TensorFlow's _BuildLoop does.
        flat = [v if cfc.value_inside(v, ctx.outer) else ctx.outer.add_value(v) for v in flat]
    with cfc.building(g, ctx, clear_control_dependencies=False) as phase:
        with g.control_dependencies(None):
            enters = []
            for i, v in enumerate(flat):
                e = enter(v, ctx.name, is_constant=False, parallel_iterations=ctx.parallel_iterations,
                          use_input_shape=invariants is None)
                if invariants is not None:
                    e.set_shape(invariants[i])
                enters.append(e)
        for e in enters:
            ctx.take_outer_controls(e.op)
        merges = [merge([e, e])[0] for e in enters]
        phase.pivot = merges[0].op  # what the cond's input-less ops run after
        ctx.enters, ctx.merges = enters, merges
        packed = pack_sequence_as(original, _from_flows(flat_orig, merges))
        c = cond(*packed) if isinstance(original, (list, tuple)) else cond(packed)
        c = convert_to_tensor(c)
        pivot = loop_cond(c, name="LoopCond")
        ctx.loop_cond = pivot
        switches = [switch(m, pivot) for m in merges]
        identities = [identity(s[1]) for s in switches]
        ctx.switches, ctx.identities = switches, identities
    ctx.pivot = identities[0].op

    with cfc.building(g, ctx, ctx.pivot, clear_control_dependencies=False):
        packed_body = pack_sequence_as(original, _from_flows(flat_orig, identities))
        result = body(*packed_body) if isinstance(original, (list, tuple)) else body(packed_body)
        if not isinstance(result, (list, tuple, dict)) or hasattr(result, "flow"):
            result = [result]
        body_structure = result
        structure_in = list(packed_body) if isinstance(original, (list, tuple)) else [packed_body]
        assert_same_structure(
            structure_in if not isinstance(result, dict) else packed_body,
            list(result) if isinstance(result, (list, tuple)) and not hasattr(result, "_fields")
            else result,
        )
        flat_res = [_as_loop_tensor(v) for v in _to_flows(flatten(result))]
        results = []
        for m, v, init in zip(merges, flat_res, flat):
            if v.dtype.base_dtype is not m.dtype.base_dtype:
                raise TypeError(
                    f"Loop variable '{init.name}' enters the loop with dtype "
                    f"{m.dtype.base_dtype.name}, but the body returns dtype "
                    f"{v.dtype.base_dtype.name} for it."
                )
            if not cfc.value_inside(v, ctx):  # the body returned an outside value
                # Through an Identity in the body: the value of this iteration, not
                # the loop invariant itself, goes to NextIteration.
                v = identity(ctx.add_value(v))
            results.append(v)
    ctx.body_results = results
    # The back edges, and the shape check of TensorFlow's _EnforceShapeInvariant.
    nexts = []
    with cfc.building(g, ctx, ctx.pivot):
        for m, v, init in zip(merges, results, flat):
            if not _less_or_equal(v.shape, m.shape):
                raise ValueError(
                    f"Input tensor '{init.name}' enters the loop with shape "
                    f"{_shape_str(init.shape)}, but has shape {_shape_str(v.shape)} after one "
                    "iteration. To allow the shape to vary across iterations, use the "
                    "`shape_invariants` argument of tf.while_loop to specify a less-specific shape."
                    + _loop_advice(init, v)
                )
            n = next_iteration(v)
            m.op._update_input(1, n)
            nexts.append(n)
        exits = [exit(s[0]) for s in switches]
    ctx.next_iterations, ctx.exits = nexts, exits
    for x in exits:
        cfc.set_context(x.op, ctx)
    out_flat = _from_flows(flatten(body_structure), exits)
    packed_out = pack_sequence_as(body_structure, out_flat)
    if return_same_structure:
        return packed_out, exits
    if len(exits) == 1:
        return out_flat[0], exits
    return packed_out, exits


def while_loop(
    cond: Callable[..., Any],
    body: Callable[..., Any],
    loop_vars: Any,
    shape_invariants: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
    maximum_iterations: Any = None,
    return_same_structure: bool = False,
) -> Any:
    """Repeat `body` while `cond` is true (TensorFlow 1.x's `tf.while_loop`).

        i, s = tf.while_loop(lambda i, s: i < 10, lambda i, s: (i + 1, s + i), [0, 0])

    Args:
      cond: callable taking the loop variables, returning a scalar bool tensor.
      body: callable taking the loop variables, returning new values of the same
        structure, dtypes and (unless `shape_invariants` relaxes them) shapes.
      loop_vars: a (nested) list/tuple/dict of tensors, Python values or TensorArrays.
      shape_invariants: the shapes the loop variables may take (same structure).
      parallel_iterations: how many iterations may run at once.
      back_prop: whether gradients flow through the loop.
      swap_memory: accepted (saved forward values stay in memory).
      name: name scope (default "while").
      maximum_iterations: stop after this many iterations even if `cond` holds.
      return_same_structure: always return the loop variables' structure (otherwise a
        single loop variable is returned unpacked).

    Returns:
      The loop variables' values after the last iteration.

    Raises:
      TypeError: `cond`/`body` not callable, bad `parallel_iterations`, or the body
        changes a loop variable's dtype.
      ValueError: no loop variables, a structure mismatch, or a shape that changes
        without a shape invariant allowing it.
    """
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if isinstance(parallel_iterations, bool) or not isinstance(parallel_iterations, int) \
            or parallel_iterations < 1:
        raise TypeError("'parallel_iterations' must be a positive integer.")
    single = not isinstance(loop_vars, (list, tuple, dict))
    if single:
        if loop_vars is None:
            raise ValueError("'loop_vars' must be provided.")
        loop_vars = [loop_vars]
        if shape_invariants is not None:
            shape_invariants = [shape_invariants]
    elif len(loop_vars) == 0:
        raise ValueError("'loop_vars' must be provided.")
    g = get_default_graph()
    for v in flatten(loop_vars):
        if isinstance(v, Tensor):
            g = v.graph
            break
    with g.as_default(), g.name_scope(name or "while") as scope:
        if maximum_iterations is not None:
            maximum_iterations = convert_to_tensor(maximum_iterations, name="maximum_iterations")
            if maximum_iterations.shape.ndims not in (None, 0):
                raise ValueError(
                    "'maximum_iterations' must be a scalar. Received shape: "
                    f"{_shape_str(maximum_iterations.shape)}"
                )
            if maximum_iterations.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
                raise TypeError("maximum_iterations must be an int32 or int64 tensor, got "
                                f"{maximum_iterations.dtype.name}")
            from flowlab.ops.constant_op import constant
            from flowlab.ops.math_ops import logical_and

            counter = constant(0, dtype=maximum_iterations.dtype, name="iteration_counter")
            orig_cond, orig_body, mi = cond, body, maximum_iterations
            # TensorFlow's try_to_pack: one loop variable travels unwrapped.
            pack = len(loop_vars) == 1 and not return_same_structure and not isinstance(loop_vars, dict)
            if pack:
                loop_vars = (counter, loop_vars[0])

                def cond(i: Any, lv: Any) -> Any:  # noqa: F811
                    return logical_and(i < mi, orig_cond(lv))

                def body(i: Any, lv: Any) -> Any:  # noqa: F811
                    r = orig_body(lv)
                    if isinstance(r, (list, tuple)) and len(r) == 1 and not hasattr(r, "_fields"):
                        r = r[0]
                    return (i + 1, r)
            else:
                star = not isinstance(loop_vars, dict)
                loop_vars = (counter, loop_vars)

                def cond(i: Any, lv: Any) -> Any:  # noqa: F811
                    return logical_and(i < mi, orig_cond(*lv) if star else orig_cond(lv))

                def body(i: Any, lv: Any) -> Any:  # noqa: F811
                    return (i + 1, orig_body(*lv) if star else orig_body(lv))
            if shape_invariants is not None:
                shape_invariants = (TensorShape([]), shape_invariants[0] if pack else shape_invariants)
        ctx = cfc.WhileContext(g, cfc.current_context(g), scope + "while_context",
                               parallel_iterations, back_prop, swap_memory, maximum_iterations)
        result, _ = build_loop(ctx, cond, body, loop_vars, shape_invariants,
                               return_same_structure or maximum_iterations is not None)
        if maximum_iterations is not None:
            result = result[1]
        if single and isinstance(result, (list, tuple)) and len(result) == 1:
            result = result[0]
        return result


def _loop_advice(init: Tensor, after: Tensor) -> str:
    """Where the loop was built, and the invariant that would accept both shapes."""
    frames = user_traceback(limit=1)
    dims = [None if a != b else a for a, b in zip(init.shape.as_list(), after.shape.as_list())] \
        if init.shape.rank is not None and init.shape.rank == after.shape.rank else None
    inv = f"tf.TensorShape({dims})" if dims is not None else "tf.TensorShape(None)"
    return (
        (f" (tf.while_loop at {frames[0]})" if frames else "")
        + f" For this loop variable, shape_invariants={inv} accepts both shapes (one entry per"
        " loop variable); or keep the body's result the same shape as the loop variable."
    )
