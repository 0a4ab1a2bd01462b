"""Map vectorization: a `map` function that works element by element on its
components runs once per batch instead of once per element.

Why.  `from_tensor_slices(...).shuffle(n).map(f).batch(b)` is the pipeline TF1
tutorials write, with `f` a rescale or a cast.  Run once per element, `f` costs a
session call per element (about 15 µs; 128 of them per batch of an MLP step).  When
`f` is made only of element-wise ops, running it on the stacked rows of a batch gives
the same values, row for row, as running it on each row and stacking the results
(TensorFlow's `map_vectorization` rewrite rests on the same fact).

Which functions.  Every op of the traced function graph is a placeholder (an argument
or a capture), a constant, one of `ELEMENTWISE` below, or a layout op (`_LAYOUT`:
reshape, expand_dims, transpose, one_hot); there are no control inputs and every
tensor's rank is known.  An op's input is *batched* when it depends on an argument.
Batching is sound for an element-wise op when its batched inputs all have the same
rank r and its other inputs have rank <= r: NumPy broadcasting then aligns the
per-element dimensions exactly as it did without the leading batch dimension.  The
element-wise ops listed are pure functions of each element computed with one IEEE
rounding (or exactly), so a value does not depend on where in an array it sits; the
transcendental functions (exp, tanh, ...) are left out because a SIMD loop and its
scalar tail may differ in the last bit.  Integer division is left out: its
zero-divisor error must name the element it came from.  Random and stateful ops are
not element-wise.  A layout op moves values without computing any: it runs on a batch
once its constant argument (read by nothing else) is shifted past the leading
dimension -- a reshape to [n] + shape, an expand_dims or transpose axis one further
on -- and a one_hot whose new dimension is the last needs no change.

How.  The batched function is the traced graph imported into a graph of its own
(`import_graph_def` with `input_map`) with each argument replaced by a placeholder one
dimension longer; a private session runs it, as `DatasetFunction.call` runs the
original.  An output that depends on no argument (a constant component) is computed
once and repeated for each row.  A function this module refuses still runs, once per
element.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import Graph
from flowlab.graph.graph_def import graph_to_dict
from flowlab.graph.tensor import Tensor

if TYPE_CHECKING:
    from flowlab.data.function import DatasetFunction

# Element-wise ops whose per-element result is exact or one correct rounding.
ELEMENTWISE_UNARY = frozenset({
    "Identity", "Cast", "Neg", "Abs", "Sign", "Square", "Sqrt", "Reciprocal", "Inv",
    "Floor", "Ceil", "Rint", "Round", "LogicalNot", "Relu", "Relu6", "IsNan", "IsInf",
    "IsFinite",
})
ELEMENTWISE_BINARY = frozenset({
    "Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "Maximum", "Minimum",
    "SquaredDifference", "Equal", "NotEqual", "Less", "LessEqual", "Greater",
    "GreaterEqual", "LogicalAnd", "LogicalOr",
})
ELEMENTWISE = ELEMENTWISE_UNARY | ELEMENTWISE_BINARY
_FLOAT_ONLY = frozenset({"Div", "RealDiv", "DivNoNan", "Reciprocal", "Inv"})
_LEAVES = frozenset({"Placeholder", "Const"})


# Ops that move an element's dimensions by a constant argument: on a batch the same
# op runs with that constant shifted past the new leading dimension (`_LAYOUT`).
_LAYOUT = frozenset({"Reshape", "ExpandDims", "Transpose", "OneHot"})

# A rewrite of a constant of the traced graph, for the batch form: given the batch-size
# placeholder, the tensor that replaces the constant's output.
Rewrite = Callable[[Tensor], Tensor]


@dataclass
class Vectorization:
    """What running a function on a batch takes: which tensors depend on an argument
    (name -> bool), and the constants to replace (tensor name -> rewrite)."""

    batched: dict[str, bool]
    rewrites: dict[str, Rewrite] = field(default_factory=dict)


def _sole_const(t: Tensor) -> np.ndarray | None:
    """The value of `t` when a constant makes it and nothing else reads it (so that
    replacing it changes only the op being shifted)."""
    if t.op.type != "Const" or t.op.control_inputs or len(t.consumers()) != 1:
        return None
    return np.asarray(t.op.get_attr("value"))


def _layout(op: Any, batched: dict[str, bool]) -> dict[str, Rewrite] | None:
    """The rewrites that let `op` (one of `_LAYOUT`, with a batched input) run on a batch,
    or None when it cannot."""
    from flowlab.ops import array_ops, math_ops
    from flowlab.ops.builder import convert_to_tensor

    first, rest = op.inputs[0], list(op.inputs[1:])
    if not batched.get(first.name, False) or any(batched.get(t.name, False) for t in rest):
        # a layout computed from the element (a shape that depends on it): per element only
        return None
    if op.type == "OneHot":  # indices [...] -> [..., depth]: the new dimension is last
        return {} if op.get_attr("axis") == -1 else None
    arg = _sole_const(rest[0])
    if arg is None or arg.dtype.kind != "i":
        return None
    name, dtype = rest[0].name, rest[0].dtype
    if op.type == "Reshape":  # [n] + the element's shape, -1 resolved per element
        if arg.ndim != 1:
            return None
        return {name: lambda n: array_ops.concat(
            [array_ops.reshape(math_ops.cast(n, dtype), [1]), convert_to_tensor(arg, dtype)], 0)}
    if op.type == "ExpandDims":  # an axis counted from the front moves by one
        if arg.ndim != 0:
            return None
        axis = int(arg)
        return {name: lambda n: convert_to_tensor(np.asarray(axis + 1 if axis >= 0 else axis,
                                                             arg.dtype), dtype)}
    if arg.ndim != 1 or (arg < 0).any():  # Transpose: the batch dimension stays first
        return None
    perm = np.concatenate([[0], arg + 1]).astype(arg.dtype)
    return {name: lambda n: convert_to_tensor(perm, dtype)}


def vectorization(fn: DatasetFunction) -> Vectorization | None:
    """How `fn` runs on a batch, or None when it cannot (see the module docstring)."""
    args = {t.name for t in fn.args}
    plan = Vectorization({})
    batched = plan.batched
    for op in fn.graph.get_operations():  # in creation order: inputs come first
        if op.control_inputs:
            return None
        if op.type not in _LEAVES and op.type not in ELEMENTWISE and op.type not in _LAYOUT:
            return None
        if op.type in _FLOAT_ONLY and not all(t.dtype.is_floating for t in op.outputs):
            return None
        ranks = [t.shape.ndims for t in op.inputs]
        if None in ranks or any(t.shape.ndims is None for t in op.outputs):
            return None
        on_batch = any(batched.get(t.name, False) for t in op.inputs)
        if on_batch and op.type in _LAYOUT:
            rewrites = _layout(op, batched)
            if rewrites is None:
                return None
            plan.rewrites.update(rewrites)
        elif on_batch:
            known = [int(x) for x in ranks if x is not None]
            ins = [r for t, r in zip(op.inputs, known) if batched.get(t.name, False)]
            if any(r != ins[0] for r in ins) or max(known) > ins[0]:
                return None
        for t in op.outputs:
            batched[t.name] = on_batch or t.name in args
    if any(not isinstance(t, Tensor) for t in fn.outputs):
        return None
    return plan


def batched_inputs(fn: DatasetFunction) -> dict[str, bool] | None:
    """Whether each tensor of `fn`'s graph depends on an argument (name -> bool), or
    None when `fn` cannot run on a batch."""
    plan = vectorization(fn)
    return None if plan is None else plan.batched


class BatchedFunction:
    """`fn` run on stacked elements: `call(batch_components + captured)` gives what
    stacking `fn.call(row + captured)` over the rows would."""

    def __init__(self, fn: DatasetFunction, plan: Vectorization) -> None:
        self.fn = fn
        self.repeat = [not plan.batched[t.name] for t in fn.outputs]
        self.needs_size = bool(plan.rewrites)
        self._run = self._build(plan.rewrites)

    def _build(self, rewrites: dict[str, Rewrite]) -> Callable[..., Any]:
        from flowlab.ops.builder import apply_op
        from flowlab.ops.importer import import_graph_def
        from flowlab.runtime.session import Session

        fn = self.fn
        g = Graph()
        with g.as_default():
            rows = [apply_op("Placeholder", dtype=t.dtype.base_dtype,
                             shape=[None, *t.shape.as_list()], name=f"batched_{i}")
                    for i, t in enumerate(fn.args)]
            size = [apply_op("Placeholder", dtype=dtypes.int32, shape=[], name="batch_size")
                    ] if rewrites else []
            by_arg = {t.name: r for t, r in zip(fn.args, rows)}
            mapped = {**by_arg, **{name: make(size[0]) for name, make in rewrites.items()}}
            names = [t.name for t in fn.outputs] + [ph.name for _, ph in fn.graph.captures]
            imported = import_graph_def(graph_to_dict(fn.graph), input_map=mapped,
                                        return_elements=names, name="batched")
        assert imported is not None
        # An argument returned as it is: its batched placeholder, not the mapped-away one.
        outputs = [by_arg.get(t.name, x) for t, x in zip(fn.outputs, imported)]
        fed_captures = imported[len(fn.outputs):]
        g.finalize()
        return Session(graph=g).make_callable(list(outputs), [*rows, *fed_captures, *size])

    def call(self, values: list[Any]) -> list[Any]:
        n = np.shape(values[0])[0]
        out = list(self._run(*values, n) if self.needs_size else self._run(*values))
        for i, again in enumerate(self.repeat):
            if again:  # a component that depends on no argument: the same for each row
                v = np.asarray(out[i])
                out[i] = np.repeat(v[np.newaxis], n, axis=0)
        return out


def batched(fn: DatasetFunction) -> BatchedFunction | None:
    """`fn` as a function of a batch of elements, or None when it is not element-wise
    (or takes no argument: then there is nothing to stack)."""
    if not fn.args:
        return None
    plan = vectorization(fn)
    if plan is None:
        return None
    try:
        return BatchedFunction(fn, plan)
    except (ValueError, TypeError):  # an op's shape function refuses the longer shapes
        return None
