"""Mutable state ops: VariableV2 and the ops that read or write a variable in place.

A `VariableV2` op outputs a *reference* (`Ref(T)`, dtype `float32_ref`): at run time
its kernel hands out the `VariableState` that lives in the device's resource manager
(paper section 3.1, "Stateful operations: variables").  Ops whose input is declared
`Ref(T)` (Assign, AssignAdd, Scatter*, CountUpTo, IsVariableInitialized) receive that
state object and update it; every other consumer gets the variable's current array
(the runtime reads it).  Updates return the reference again (`output_ref`), so
fetching `tf.assign(v, x)` gives the new value, as in TensorFlow 1.x.

All writes store a new array (never mutate the stored one) through the step's undo
log, so a failed step leaves the variables as they were.  `use_locking=True` makes a
read-modify-write atomic with respect to other steps; without it concurrent updates
may race (Hogwild!), as the paper intends.

The same op names, attrs and defaults as TensorFlow: `Assign` and `ScatterUpdate`
lock by default, the arithmetic updates do not.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import Graph, get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = [
    "assign", "assign_add", "assign_sub", "scatter_update", "scatter_add", "scatter_sub",
    "scatter_mul", "scatter_div", "scatter_min", "scatter_max", "scatter_nd_update",
    "scatter_nd_add", "scatter_nd_sub", "is_variable_initialized", "count_up_to",
    "batch_scatter_update",
]


# --- shape functions ---------------------------------------------------------------
def shape_str(s: TensorShape) -> str:
    """A shape as TensorFlow's shape inference prints it: `[2,?]`, or `?`."""
    if s.ndims is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in s.as_tuple()) + "]"  # type: ignore[union-attr]


def merge_shapes(a: TensorShape, b: TensorShape) -> TensorShape:
    """Merge two partial shapes with TensorFlow's shape-inference messages."""
    if a.ndims is None:
        return b
    if b.ndims is None:
        return a
    if a.ndims != b.ndims:
        raise ValueError(f"Shapes must be equal rank, but are {a.ndims} and {b.ndims}")
    dims = []
    for i, (x, y) in enumerate(zip(a.as_tuple(), b.as_tuple())):  # type: ignore[arg-type]
        if x is not None and y is not None and x != y:
            raise ValueError(
                f"Dimension {i} in both shapes must be equal, but are {x} and {y}. "
                f"Shapes are {shape_str(a)} and {shape_str(b)}."
            )
        dims.append(x if x is not None else y)
    return TensorShape(dims)


def _variable_shape(op: Operation) -> list[TensorShape]:
    return [TensorShape(op.get_attr("shape"))]


def _assign_shape(op: Operation) -> list[TensorShape]:
    ref, value = op.inputs[0].shape, op.inputs[1].shape
    if op.get_attr("validate_shape"):
        merge_shapes(ref, value)
    return [value]


def _update_shape(op: Operation) -> list[TensorShape]:
    return [merge_shapes(op.inputs[0].shape, op.inputs[1].shape)]


def _scatter_shape(op: Operation) -> list[TensorShape]:
    var, idx, upd = (t.shape for t in op.inputs)
    if var.ndims == 0:
        raise ValueError("Shape must be at least rank 1 but is rank 0")
    if upd.ndims != 0 and var.ndims is not None and idx.ndims is not None:
        merge_shapes(upd, TensorShape(idx.as_tuple() + var.as_tuple()[1:]))  # type: ignore[operator,index]
    return [var]


def _scatter_nd_shape(op: Operation) -> list[TensorShape]:
    var, idx, upd = (t.shape for t in op.inputs)
    if idx.ndims == 0:
        raise ValueError("Shape must be at least rank 1 but is rank 0")
    if idx.ndims is None or upd.ndims is None:
        return [var]
    outer = idx.ndims - 1
    ishape, ushape = idx.as_tuple(), upd.as_tuple()
    try:
        merge_shapes(TensorShape(ishape[:outer]), TensorShape(ushape[:outer]))  # type: ignore[index]
    except ValueError as e:
        raise ValueError(
            f"Dimensions [0,{outer}) of indices[shape={shape_str(idx)}] = "
            f"{shape_str(TensorShape(ishape[:outer]))} must match dimensions [0,{outer}) of "  # type: ignore[index]
            f"updates[shape={shape_str(upd)}] = {shape_str(TensorShape(ushape[:outer]))}: {e}"  # type: ignore[index]
        ) from None
    k = ishape[-1]  # type: ignore[index]
    if var.ndims is not None and k is not None and k <= var.ndims:
        inner_var = TensorShape(var.as_tuple()[k:])  # type: ignore[index]
        inner_upd = TensorShape(ushape[outer:])  # type: ignore[index]
        try:
            merge_shapes(inner_var, inner_upd)
        except ValueError as e:
            raise ValueError(
                f"Dimensions [{k},{var.ndims}) of input[shape={shape_str(var)}] = "
                f"{shape_str(inner_var)} must match dimensions [{outer},{upd.ndims}) of "
                f"updates[shape={shape_str(upd)}] = {shape_str(inner_upd)}: {e}"
            ) from None
    return [var]


def _scalar_ref_shape(op: Operation) -> list[TensorShape]:
    s = op.inputs[0].shape
    if s.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {s.ndims}")
    return [TensorShape([])]


# --- declarations ------------------------------------------------------------------
op_def(
    "VariableV2", outputs=["ref: Ref(dtype)"],
    attrs=["shape: shape", "dtype: type", "container: string = ''", "shared_name: string = ''"],
    shape_fn=_variable_shape, stateful=True,
    doc="A mutable tensor that persists across steps; outputs a reference to it.",
)
op_def(
    "Assign", inputs=["ref: Ref(T)", "value: T"], outputs=["output_ref: Ref(T)"],
    attrs=["T: type", "validate_shape: bool = true", "use_locking: bool = true"],
    shape_fn=_assign_shape, stateful=True, doc="ref = value.",
)
for _name, _doc in (("AssignAdd", "ref += value."), ("AssignSub", "ref -= value.")):
    op_def(
        _name, inputs=["ref: Ref(T)", "value: T"], outputs=["output_ref: Ref(T)"],
        attrs=["T: numeric", "use_locking: bool = false"],
        shape_fn=_update_shape, stateful=True, doc=_doc,
    )
_SCATTER = {
    "ScatterUpdate": ("type", "true", "ref[indices, ...] = updates."),
    "ScatterAdd": ("numeric", "false", "ref[indices, ...] += updates (duplicates accumulate)."),
    "ScatterSub": ("numeric", "false", "ref[indices, ...] -= updates (duplicates accumulate)."),
    "ScatterMul": ("numeric", "false", "ref[indices, ...] *= updates (duplicates multiply)."),
    "ScatterDiv": ("numeric", "false", "ref[indices, ...] /= updates (duplicates divide)."),
    "ScatterMin": ("real", "false", "ref[indices, ...] = min(ref[indices, ...], updates)."),
    "ScatterMax": ("real", "false", "ref[indices, ...] = max(ref[indices, ...], updates)."),
}
for _name, (_types, _lock, _doc) in _SCATTER.items():
    op_def(
        _name, inputs=["ref: Ref(T)", "indices: Tindices", "updates: T"],
        outputs=["output_ref: Ref(T)"],
        attrs=[f"T: {_types}", "Tindices: {int32, int64}", f"use_locking: bool = {_lock}"],
        shape_fn=_scatter_shape, stateful=True, doc=_doc,
    )
_SCATTER_ND = {
    "ScatterNdUpdate": ("type", "true", "ref[indices] = updates, indexing the leading dims."),
    "ScatterNdAdd": ("numeric", "false", "ref[indices] += updates (duplicates accumulate)."),
    "ScatterNdSub": ("numeric", "false", "ref[indices] -= updates (duplicates accumulate)."),
}
for _name, (_types, _lock, _doc) in _SCATTER_ND.items():
    op_def(
        _name, inputs=["ref: Ref(T)", "indices: Tindices", "updates: T"],
        outputs=["output_ref: Ref(T)"],
        attrs=[f"T: {_types}", "Tindices: {int32, int64}", f"use_locking: bool = {_lock}",
               "bad_indices_policy: string = ''"],
        shape_fn=_scatter_nd_shape, stateful=True, doc=_doc,
    )
op_def(
    "IsVariableInitialized", inputs=["ref: Ref(dtype)"], outputs=["is_initialized: bool"],
    attrs=["dtype: type"], shape_fn=lambda op: [TensorShape([])], stateful=True,
    doc="Whether the variable has been assigned a value.",
)
op_def(
    "CountUpTo", inputs=["ref: Ref(T)"], outputs=["output: T"],
    attrs=["limit: int", "T: {int32, int64}"], shape_fn=_scalar_ref_shape, stateful=True,
    doc="Increment a scalar variable until it reaches `limit`; outputs the old value.",
)

for _name in ["VariableV2", "Assign", "AssignAdd", "AssignSub", "IsVariableInitialized",
              "CountUpTo", *_SCATTER, *_SCATTER_ND]:
    not_differentiable(_name)


# --- builders ----------------------------------------------------------------------
def _apply(op_type: str, name: str, **kwargs: Any) -> Any:
    """`apply_op` inside the op's own name scope, so that Python values become
    constants named as TensorFlow names them ("Assign/value", "ScatterAdd/indices")."""
    g = get_default_graph()
    for v in kwargs.values():
        vg = getattr(v, "graph", None)
        if isinstance(vg, Graph):
            g = vg
            break
    with g.as_default(), g.name_scope(name) as scope:
        return apply_op(op_type, name=scope, **kwargs)


def variable_op_v2(
    shape: Any, dtype: Any, name: str = "Variable", container: str = "", shared_name: str = ""
) -> Tensor:
    """The raw `VariableV2` op (a reference tensor); `tf.Variable` is the usual way."""
    s = as_shape(shape) if shape is not None else TensorShape(None)
    return apply_op(
        "VariableV2", shape=s.as_tuple(), dtype=dtypes.as_dtype(dtype).base_dtype,
        container=container, shared_name=shared_name, name=name,
    )


def _is_partitioned(ref: Any) -> bool:
    # As TensorFlow, a non-reference `ref` with its own assign methods is asked to
    # assign itself; flowlab.ops.partitioned_variables imports this module, so by duck type.
    return hasattr(ref, "_get_partitions") and hasattr(ref, "_get_variable_list")


def assign(
    ref: Any, value: Any, validate_shape: bool | None = None, use_locking: bool | None = None,
    name: str | None = None,
) -> Tensor:
    """`ref = value`; returns the reference, which evaluates to the new value.

        v = tf.Variable([1.0, 2.0])
        sess.run(tf.assign(v, [3.0, 4.0]))  # array([3., 4.], dtype=float32)

    A PartitionedVariable assigns itself (one Assign per shard, a list back).
    """
    if _is_partitioned(ref):
        return ref.assign(value, name=name)
    return _apply(
        "Assign", name or "Assign", ref=ref, value=value, validate_shape=validate_shape,
        use_locking=use_locking,
    )


def assign_add(ref: Any, value: Any, use_locking: bool | None = None, name: str | None = None) -> Tensor:
    """`ref += value` (same shapes, no broadcasting); returns the reference."""
    if _is_partitioned(ref):
        return ref.assign_add(value)
    return _apply("AssignAdd", name or "AssignAdd", ref=ref, value=value, use_locking=use_locking)


def assign_sub(ref: Any, value: Any, use_locking: bool | None = None, name: str | None = None) -> Tensor:
    """`ref -= value` (same shapes, no broadcasting); returns the reference."""
    if _is_partitioned(ref):
        return ref.assign_sub(value)
    return _apply("AssignSub", name or "AssignSub", ref=ref, value=value, use_locking=use_locking)


def _scatter(op_type: str, ref: Any, indices: Any, updates: Any, use_locking: Any, name: str | None) -> Tensor:
    return _apply(op_type, name or op_type, ref=ref, indices=indices, updates=updates,
                  use_locking=use_locking)


def scatter_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True, name: str | None = None) -> Tensor:
    """`ref[indices, ...] = updates` (rows along the first dimension).

        sess.run(tf.scatter_update(v, [0, 2], [10.0, 30.0]))
    """
    return _scatter("ScatterUpdate", ref, indices, updates, use_locking, name)


def scatter_add(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
    """`ref[indices, ...] += updates`; repeated indices accumulate."""
    return _scatter("ScatterAdd", ref, indices, updates, use_locking, name)


def scatter_sub(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
    """`ref[indices, ...] -= updates`; repeated indices accumulate."""
    return _scatter("ScatterSub", ref, indices, updates, use_locking, name)


def scatter_mul(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
    """`ref[indices, ...] *= updates`."""
    return _scatter("ScatterMul", ref, indices, updates, use_locking, name)


def scatter_div(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
    """`ref[indices, ...] /= updates` (integers divide truncating toward zero)."""
    return _scatter("ScatterDiv", ref, indices, updates, use_locking, name)


def scatter_min(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
    """`ref[indices, ...] = minimum(ref[indices, ...], updates)`."""
    return _scatter("ScatterMin", ref, indices, updates, use_locking, name)


def scatter_max(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
    """`ref[indices, ...] = maximum(ref[indices, ...], updates)`."""
    return _scatter("ScatterMax", ref, indices, updates, use_locking, name)


def scatter_nd_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True,
                      name: str | None = None) -> Tensor:
    """`ref[indices[i]] = updates[i]`, where each row of `indices` (last dimension K)
    indexes the first K dimensions of `ref`.

        sess.run(tf.scatter_nd_update(v, [[0, 1], [2, 0]], [5.0, 6.0]))
    """
    return _scatter("ScatterNdUpdate", ref, indices, updates, use_locking, name)


def batch_scatter_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True,
                         name: str | None = None) -> Tensor:
    """`ref[i..., indices[i..., j]] = updates[i..., j]` for every leading index `i...`
    (`tf.batch_scatter_update`): a ScatterNdUpdate whose coordinates are a range over
    each leading dimension of `indices` followed by `indices` itself, as TensorFlow
    builds it."""
    from flowlab.ops import array_ops, math_ops
    from flowlab.ops.builder import convert_to_tensor

    with get_default_graph().name_scope(name or "batch_scatter_update"):
        indices = convert_to_tensor(indices, name="indices")
        indices_shape = array_ops.shape(indices)
        ndims = indices.shape.ndims
        if ndims is None:
            raise ValueError("batch_gather does not allow indices with unknown shape.")
        nd_indices = array_ops.expand_dims(indices, axis=-1)
        parts = []
        for d in range(ndims - 1):
            size = indices_shape[d]
            broadcast = [1] * (ndims + 1)
            broadcast[d] = size
            dim_range = array_ops.reshape(math_ops.range(0, size, 1), broadcast)
            if dim_range.dtype.base_dtype != nd_indices.dtype:
                dim_range = math_ops.cast(dim_range, nd_indices.dtype)
            parts.append(dim_range * array_ops.ones_like(nd_indices))
        parts.append(nd_indices)
        final = array_ops.concat(parts, axis=-1)
        return scatter_nd_update(ref, final, updates, use_locking=use_locking)


def scatter_nd_add(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                   name: str | None = None) -> Tensor:
    """`ref[indices[i]] += updates[i]`; repeated indices accumulate."""
    return _scatter("ScatterNdAdd", ref, indices, updates, use_locking, name)


def scatter_nd_sub(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                   name: str | None = None) -> Tensor:
    """`ref[indices[i]] -= updates[i]`; repeated indices accumulate."""
    return _scatter("ScatterNdSub", ref, indices, updates, use_locking, name)


def is_variable_initialized(variable: Any, name: str | None = None) -> Tensor:
    """A scalar bool: whether `variable` holds a value in the running session."""
    return apply_op("IsVariableInitialized", ref=variable, name=name or "IsVariableInitialized")


def count_up_to(ref: Any, limit: int, name: str | None = None) -> Tensor:
    """Increment the scalar int variable `ref` and output its value before the
    increment; fails with OutOfRangeError once it has reached `limit`."""
    return apply_op("CountUpTo", ref=ref, limit=limit, name=name or "CountUpTo")
