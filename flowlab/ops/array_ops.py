"""Array ops: shapes, reshaping, joining and splitting, padding, selection.

Declares the array op family (TensorFlow's op type, argument and attr names) and
builds the Python API on it (`tf.reshape`, `tf.concat`, `tf.zeros`, `tf.where`, ...).
Indexing ops (Slice, StridedSlice, Gather*, Scatter*, DynamicPartition/Stitch,
`boolean_mask`) live in `flowlab.ops.slicing` and are re-exported from here.

Static knowledge: shape functions use `constant_value` and `constant_value_as_shape`
so that `tf.reshape(x, [tf.shape(x)[0], -1])` gets a good static shape, and the ops
whose value TensorFlow folds while building (Shape, Size, Rank, Pack, ConcatV2,
StridedSlice of a known value, ...) register constant evaluators that run their own
CPU kernel on the known inputs.  Python lists holding Tensors convert to a Pack
("autopacking"), as in TensorFlow.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.ops.builder import apply_op, convert_to_tensor, register_tensor_conversion_function
from flowlab.ops.const_fold import constant_evaluator, constant_value
from flowlab.ops.constant_op import constant
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = [
    "shape", "shape_n", "size", "rank", "reshape", "transpose", "concat", "stack", "unstack",
    "split", "expand_dims", "squeeze", "tile", "pad", "fill", "zeros", "ones", "zeros_like",
    "ones_like", "one_hot", "where", "where_v2", "reverse", "reverse_v2", "newaxis",
    "constant_value_as_shape",
]

newaxis = None

_INDEX = "{int32, int64}"


# --- static values ------------------------------------------------------------------
def _int_list(t: Any) -> list[int] | None:
    v = constant_value(t)
    return None if v is None else [int(x) for x in np.asarray(v).reshape(-1)]


def constant_value_as_shape(t: Tensor) -> TensorShape:
    """The partially known shape that the 1-D shape tensor `t` describes (negative or
    unknown entries are unknown dims), as TensorFlow's `constant_value_as_shape`."""
    if t.shape.ndims == 0:
        v = constant_value(t)
        if v is not None and int(v) == -1:
            return TensorShape(None)
        if v is not None:
            raise ValueError(f"Received a scalar with unknown value as shape; require a 1-D tensor: {v}")
        return TensorShape(None)
    full = constant_value(t)
    if full is not None:
        return TensorShape([None if d < 0 else int(d) for d in np.asarray(full).reshape(-1)])
    op = t.op
    if op.type == "Shape":
        return op.inputs[0].shape
    if op.type == "Pack":
        dims = []
        for x in op.inputs:
            v = constant_value(x)
            dims.append(None if v is None or int(v) < 0 else int(v))
        return TensorShape(dims)
    if op.type == "ConcatV2":
        out = TensorShape([])
        for x in op.inputs[:-1]:
            out = out.concatenate(constant_value_as_shape(x))
        return out
    if op.type == "StridedSlice" and not any(
        op.get_attr(m) for m in ("ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    ):
        prev = constant_value_as_shape(op.inputs[0])
        b, e, s = (_int_list(x) for x in op.inputs[1:])
        if prev.ndims is not None and b is not None and e is not None and s is not None and len(b) == 1:
            start = None if op.get_attr("begin_mask") & 1 else b[0]
            stop = None if op.get_attr("end_mask") & 1 else e[0]
            return TensorShape(prev.as_list()[start:stop:s[0]])
    n = t.shape.ndims and t.shape[0].value
    return TensorShape(None if n is None else [None] * n)


class _Known:
    """A stand-in NodeContext for running a CPU kernel on statically known inputs."""

    def __init__(self, op: Operation) -> None:
        self.op, self.name, self.op_type, self.attrs, self.xp = op, op.name, op.type, op._attrs, np


_FOLD_LIMIT = 1 << 16


def _fold(op: Operation) -> Any:
    """Run `op`'s CPU kernel on its inputs' known values (small values only)."""
    values = []
    for x in op.inputs:
        v = constant_value(x)
        if v is None or np.size(v) > _FOLD_LIMIT:
            return None
        values.append(v)
    from flowlab.kernels.registry import find_kernel  # the kernels are the one definition

    k = find_kernel(op.type, "CPU")
    if k is None or k.needs_step:
        return None
    out = k.fn(_Known(op), *values)
    if isinstance(out, (list, builtins.tuple)):
        return [np.asarray(o) for o in out]
    return np.asarray(out)


def _register_folding(*op_types: str) -> None:
    for t in op_types:
        constant_evaluator(t)(_fold)


# --- autopacking: [t, 3] -> Pack -----------------------------------------------------
def _has_tensor(value: Any) -> bool:
    if isinstance(value, Tensor):
        return True
    if isinstance(value, (list, builtins.tuple)):
        return any(_has_tensor(v) for v in value)
    return False


class _ListWithTensorsMeta(type):
    def __instancecheck__(cls, value: Any) -> bool:
        return isinstance(value, (list, builtins.tuple)) and _has_tensor(value)


class _ListWithTensors(metaclass=_ListWithTensorsMeta):
    """Matches lists/tuples that hold at least one Tensor (for the conversion table)."""


def _first_dtype(value: Any) -> dtypes.DType | None:
    if isinstance(value, Tensor):
        return value.dtype.base_dtype
    if isinstance(value, (list, builtins.tuple)):
        for v in value:
            d = _first_dtype(v)
            if d is not None:
                return d
    return None


def _autopack(value: Any, dtype: Any = None, name: str | None = None, as_ref: bool = False) -> Tensor:
    dt = dtypes.as_dtype(dtype).base_dtype if dtype is not None else _first_dtype(value)
    with get_default_graph().name_scope(name or "packed") as scope:
        elems = []
        for i, v in enumerate(value):
            if isinstance(v, Tensor):
                if v.dtype.base_dtype is not dt:
                    raise TypeError(
                        f"Cannot convert a list containing a tensor of dtype "
                        f"{v.dtype.base_dtype.name} to {dt.name} (Tensor is: {v!r})"
                    )
                elems.append(v)
            elif isinstance(v, (list, builtins.tuple)) and _has_tensor(v):
                elems.append(_autopack(v, dt, str(i)))
            else:
                elems.append(constant(v, dtype=dt))
        return apply_op("Pack", values=elems, axis=0, name=scope)


register_tensor_conversion_function(_ListWithTensors, _autopack, priority=99)


def _to_tensor(value: Any, name: str, dtype: Any = None, hint: Any = None) -> Tensor:
    if _has_tensor(value) and not isinstance(value, Tensor):
        return _autopack(value, dtype, name)
    return convert_to_tensor(value, dtype=dtype, name=name, preferred_dtype=hint)


def _name_scope(name: str | None, default: str) -> Iterator[str]:
    return get_default_graph().name_scope(name or default)  # type: ignore[return-value]


# --- shape functions ------------------------------------------------------------------
def _dims(t: Tensor) -> list[int | None] | None:
    s = t.shape
    return None if s.ndims is None else s.as_list()


def _axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1) or (rank == 0 and axis != 0 and axis != -1):
        raise ValueError(f"{what} {axis} is out of bounds for a tensor of rank {rank}; expected [{-rank}, {rank})")
    return axis + rank if axis < 0 else axis


def _shape_fn(op: Operation) -> list[Any]:
    r = op.inputs[0].shape.ndims
    return [TensorShape([r])]


def _shape_n_fn(op: Operation) -> list[Any]:
    return [TensorShape([x.shape.ndims]) for x in op.inputs]


def _reshape_fn(op: Operation) -> list[Any]:
    x, s = op.inputs
    if s.shape.ndims is not None and s.shape.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {s.shape.ndims}")
    out = constant_value_as_shape(s)
    if out.ndims is None:
        return [out]
    dims = out.as_list()
    ind = _dims(x)
    if ind is None:
        return [TensorShape(dims)]
    unknown_out = [i for i, d in enumerate(dims) if d is None]
    known_out = int(np.prod([d for d in dims if d is not None], dtype=np.int64))
    unknown_in = [i for i, d in enumerate(ind) if d is None]
    known_in = int(np.prod([d for d in ind if d is not None], dtype=np.int64))
    shape_str = "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"
    if not unknown_in and not unknown_out and known_in != known_out:
        raise ValueError(
            f"Cannot reshape a tensor with {known_in} elements to shape {shape_str} ({known_out} elements)"
        )
    if len(unknown_out) == 1 and not unknown_in:
        if known_out > 0:
            if known_in % known_out:
                raise ValueError(
                    f"Dimension size must be evenly divisible by {known_out} but is {known_in}"
                )
            dims[unknown_out[0]] = known_in // known_out
    elif len(unknown_out) == 1 and len(unknown_in) == 1 and known_in == known_out:
        dims[unknown_out[0]] = ind[unknown_in[0]]
    return [TensorShape(dims)]


def _transpose_fn(op: Operation) -> list[Any]:
    x, p = op.inputs
    perm = _int_list(p)
    ind = _dims(x)
    n = p.shape[0].value if p.shape.ndims == 1 else None
    if ind is not None and n is not None and n != len(ind):
        raise ValueError(f"Dimension must be {len(ind)} but is {n}")
    if perm is None:
        r = len(ind) if ind is not None else n
        return [TensorShape(None if r is None else [None] * r)]
    r = len(perm)
    for q in perm:
        if not -r <= q < r:
            raise ValueError(f"perm dim {q} is out of range of input rank {r}")
    if ind is None:
        return [TensorShape([None] * r)]
    return [TensorShape([ind[q] for q in perm])]


def _concat_fn(op: Operation) -> list[Any]:
    values, axis_t = op.inputs[:-1], op.inputs[-1]
    ranks = {v.shape.ndims for v in values} - {None}
    if len(ranks) > 1:
        a, b = sorted(ranks)[:2]
        raise ValueError(f"Shape must be rank {a} but is rank {b}")
    if not ranks:
        return [TensorShape(None)]
    r = ranks.pop()
    if r == 0:
        raise ValueError("Can't concatenate scalars (use tf.stack instead)")
    a = constant_value(axis_t)
    if a is None:
        return [TensorShape([None] * r)]
    a = int(a)
    if not -r <= a < r:
        raise ValueError(f"Shape must be at least rank {(a if a >= 0 else -a - 1) + 1} but is rank {r}")
    a %= r
    out: list[int | None] = [None] * r
    total: int | None = 0
    for v in values:
        d = _dims(v)
        if d is None:
            total = None
            continue
        for i in range(r):
            if i == a:
                continue
            if out[i] is not None and d[i] is not None and out[i] != d[i]:
                raise ValueError(f"Dimension {i} in both shapes must be equal, but are {out[i]} and {d[i]}")
            out[i] = out[i] if out[i] is not None else d[i]
        total = None if total is None or d[a] is None else total + d[a]
    out[a] = total
    return [TensorShape(out)]


def _shape_str(s: TensorShape) -> str:
    if s.ndims is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in s.as_list()) + "]"


def _merge_all(shapes: list[TensorShape]) -> TensorShape:
    out = TensorShape(None)
    for s in shapes:
        if out.ndims is not None and s.ndims is not None:
            if out.ndims != s.ndims:
                raise ValueError(f"Shapes must be equal rank, but are {out.ndims} and {s.ndims}")
            for i, (a, b) in enumerate(zip(out.as_list(), s.as_list())):
                if a is not None and b is not None and a != b:
                    raise ValueError(f"Dimension {i} in both shapes must be equal, but are {a} and "
                                     f"{b}. Shapes are {_shape_str(out)} and {_shape_str(s)}.")
        out = out.merge_with(s)
    return out


def _pack_fn(op: Operation) -> list[Any]:
    s = _merge_all([v.shape for v in op.inputs])
    if s.ndims is None:
        return [TensorShape(None)]
    d = s.as_list()
    a = op.get_attr("axis")
    r = len(d) + 1
    if not -r <= a < r:
        raise ValueError(f"Pack: axis = {a} not in [{-r}, {r})")
    a %= r
    return [TensorShape(d[:a] + [len(op.inputs)] + d[a:])]


def _unpack_fn(op: Operation) -> list[Any]:
    d = _dims(op.inputs[0])
    num = op.get_attr("num")
    if d is None:
        return [TensorShape(None)] * num
    a = op.get_attr("axis")
    if not -len(d) <= a < len(d):
        raise ValueError(f"axis = {a} not in [{-len(d)}, {len(d)})")
    a %= len(d)
    if d[a] is not None and d[a] != num:
        raise ValueError(f"Dimension must be {num} but is {d[a]}")
    return [TensorShape(d[:a] + d[a + 1:])] * num


def _split_dims(value: Tensor, axis_t: Tensor) -> tuple[list[int | None] | None, int | None]:
    d = _dims(value)
    a = constant_value(axis_t)
    if d is None or a is None:
        return d, None
    a = int(a)
    if not -len(d) <= a < len(d):
        raise ValueError(f"Dimension size must be in range [{-len(d)}, {len(d)}) but is {a}")
    return d, a % len(d)


def _split_fn(op: Operation) -> list[Any]:
    n = op.get_attr("num_split")
    d, a = _split_dims(op.inputs[1], op.inputs[0])
    if d is None:
        return [TensorShape(None)] * n
    if a is None:
        return [TensorShape([None] * len(d))] * n
    if d[a] is not None and d[a] % n:
        raise ValueError(f"Dimension size must be evenly divisible by {n} but is {d[a]}")
    return [TensorShape(d[:a] + [None if d[a] is None else d[a] // n] + d[a + 1:])] * n


def _split_v_fn(op: Operation) -> list[Any]:
    n = op.get_attr("num_split")
    d, a = _split_dims(op.inputs[0], op.inputs[2])
    sizes = _int_list(op.inputs[1])
    if d is None:
        return [TensorShape(None)] * n
    if a is None:
        return [TensorShape([None] * len(d))] * n
    if sizes is None:
        return [TensorShape(d[:a] + [None] + d[a + 1:])] * n
    if len(sizes) != n:
        raise ValueError(f"Length of size_splits should be equal to num_split: {len(sizes)} vs {n}")
    unknown = [i for i, v in enumerate(sizes) if v == -1]
    if len(unknown) > 1:
        raise ValueError("size_splits can only have one -1")
    known = sum(v for v in sizes if v != -1)
    if d[a] is not None:
        if unknown and known <= d[a]:
            sizes[unknown[0]] = d[a] - known
        elif not unknown and known != d[a] or unknown:
            raise ValueError(
                f"can't split axis of size {d[a]} into pieces of size "
                f"[{','.join(str(v) for v in sizes)}]"
            )
    return [TensorShape(d[:a] + [None if s == -1 else s] + d[a + 1:]) for s in sizes]


def _fill_fn(op: Operation) -> list[Any]:
    dims_t, v = op.inputs
    if v.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {v.shape.ndims}")
    if dims_t.shape.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {dims_t.shape.ndims}")
    vals = _int_list(dims_t)
    if vals is not None and any(x < 0 for x in vals):
        raise ValueError("Fill dimensions must be >= 0")
    return [constant_value_as_shape(dims_t)]


def _expand_dims_fn(op: Operation) -> list[Any]:
    d = _dims(op.inputs[0])
    a = _int_list(op.inputs[1])
    if d is None or a is None:
        return [TensorShape(None)]
    if len(a) != 1:
        raise ValueError(f"'dim' must be a tensor with a single value, got {a}")
    r = len(d) + 1
    if not -r <= a[0] < r:
        raise ValueError(f"dim {a[0]} not in the interval [{-r}, {r - 1}].")
    i = a[0] % r
    return [TensorShape(d[:i] + [1] + d[i:])]


def _squeeze_fn(op: Operation) -> list[Any]:
    d = _dims(op.inputs[0])
    axes = op.get_attr("squeeze_dims")
    if d is None:
        return [TensorShape(None)]
    r = len(d)
    norm = set()
    for a in axes:
        if not -r <= a < max(r, 1):
            raise ValueError(f"squeeze_dims[{axes.index(a)}] not in [{-r},{r}).")
        norm.add(a % r)
    out: list[int | None] = []
    for i, x in enumerate(d):
        if norm:
            if i in norm:
                if x is not None and x != 1:
                    raise ValueError(f"Can not squeeze dim[{i}], expected a dimension of 1, got {x}")
                continue
        elif x == 1:
            continue
        elif x is None:
            return [TensorShape(None)]
        out.append(x)
    return [TensorShape(out)]


def _tile_fn(op: Operation) -> list[Any]:
    d = _dims(op.inputs[0])
    m_t = op.inputs[1]
    n = m_t.shape[0].value if m_t.shape.ndims == 1 else None
    if d is not None and n is not None and n != len(d):
        raise ValueError(f"Shape must be rank {len(d)} but is rank {n}")
    m = constant_value_as_shape(m_t)
    r = len(d) if d is not None else n
    if r is None:
        return [TensorShape(None)]
    md = m.as_list() if m.ndims is not None else [None] * r
    dd = d if d is not None else [None] * r
    return [TensorShape([None if a is None or b is None else a * b for a, b in zip(dd, md)])]


def _pad_fn(op: Operation) -> list[Any]:
    x, p = op.inputs[0], op.inputs[1]
    d = _dims(x)
    if p.shape.ndims is not None and p.shape.ndims != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {p.shape.ndims}")
    pv = constant_value(p)
    if d is None:
        if p.shape.ndims == 2 and p.shape[0].value is not None:
            return [TensorShape([None] * p.shape[0].value)]
        return [TensorShape(None)]
    if p.shape.ndims == 2 and p.shape[0].value not in (None, len(d)):
        raise ValueError(f"Dimension 0 in both shapes must be equal, but are {p.shape[0].value} and {len(d)}")
    if len(op.inputs) > 2 and op.inputs[2].shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {op.inputs[2].shape.ndims}")
    if pv is None:
        return [TensorShape([None] * len(d))]
    pv = np.asarray(pv).reshape(len(d), 2)
    if (pv < 0).any():
        raise ValueError(f"The 1st dimension of paddings must be non-negative: {pv.tolist()}")
    return [TensorShape([None if x is None else x + int(pv[i].sum()) for i, x in enumerate(d)])]


def _same_shape(op: Operation) -> list[Any]:
    return [op.inputs[0].shape]


def _where_fn(op: Operation) -> list[Any]:
    r = op.inputs[0].shape.ndims
    return [TensorShape([None, r])]


def _select_fn(op: Operation) -> list[Any]:
    c, t, e = (x.shape for x in op.inputs)
    out = _merge_all([t, e])
    if c.ndims is None or out.ndims is None or c.ndims == 0:
        return [out]
    if c.ndims == 1 and out.ndims > 1:
        _merge_all([c, out[:1]])
        return [out]
    return [_merge_all([out, c])]


def _select_v2_fn(op: Operation) -> list[Any]:
    from flowlab.graph.tensor_shape import broadcast_shapes

    c, t, e = (x.shape for x in op.inputs)
    try:
        return [broadcast_shapes(broadcast_shapes(t, e), c)]
    except ValueError:
        pass
    pairs = [(t, e), (c, t), (c, e)]
    for a, b in pairs:
        x, y = a.as_list()[::-1], b.as_list()[::-1]
        for p, q in zip(x, y):
            if p not in (None, 1) and q not in (None, 1) and p != q:
                raise ValueError(f"Dimensions must be equal, but are {p} and {q}")
    raise ValueError(f"Incompatible shapes: {c}, {t}, {e}")


def _one_hot_fn(op: Operation) -> list[Any]:
    d = _dims(op.inputs[0])
    for i in (2, 3):
        if op.inputs[i].shape.ndims not in (None, 0):
            raise ValueError(f"Shape must be rank 0 but is rank {op.inputs[i].shape.ndims}")
    depth = constant_value(op.inputs[1])
    if depth is not None and int(depth) < 0:
        raise ValueError(
            f"Dimension size, given by scalar input 1, must be non-negative but is {int(depth)}"
        )
    if d is None:
        return [TensorShape(None)]
    a = op.get_attr("axis")
    if a < -1 or a > len(d):
        raise ValueError(f"Expected axis to be -1 or between [0, {len(d) + 1}).  But received: {a}")
    a = len(d) if a == -1 else a
    return [TensorShape(d[:a] + [None if depth is None else int(depth)] + d[a:])]


def _reverse_fn(op: Operation) -> list[Any]:
    d = _dims(op.inputs[0])
    a = _int_list(op.inputs[1])
    if d is not None and a is not None:
        for x in a:
            if not -len(d) <= x < len(d):
                raise ValueError(f"'axis'[0] = {x} is out of valid range [0, {len(d) - 1}")
    return [op.inputs[0].shape]


op_def("Shape", inputs=["input: T"], outputs=["output: out_type"],
       attrs=["T: type", f"out_type: {_INDEX} = int32"], shape_fn=_shape_fn)
op_def("ShapeN", inputs=["input: N * T"], outputs=["output: N * out_type"],
       attrs=["N: int >= 1", "T: type", f"out_type: {_INDEX} = int32"], shape_fn=_shape_n_fn)
op_def("Size", inputs=["input: T"], outputs=["output: out_type"],
       attrs=["T: type", f"out_type: {_INDEX} = int32"], shape_fn=lambda op: [TensorShape([])])
op_def("Rank", inputs=["input: T"], outputs=["output: int32"], attrs=["T: type"],
       shape_fn=lambda op: [TensorShape([])])
op_def("Reshape", inputs=["tensor: T", "shape: Tshape"], outputs=["output: T"],
       attrs=["T: type", f"Tshape: {_INDEX} = int32"], shape_fn=_reshape_fn)
op_def("Transpose", inputs=["x: T", "perm: Tperm"], outputs=["y: T"],
       attrs=["T: type", f"Tperm: {_INDEX} = int32"], shape_fn=_transpose_fn)
op_def("ConcatV2", inputs=["values: N * T", "axis: Tidx"], outputs=["output: T"],
       attrs=["N: int >= 2", "T: type", f"Tidx: {_INDEX} = int32"], shape_fn=_concat_fn)
op_def("Pack", inputs=["values: N * T"], outputs=["output: T"],
       attrs=["N: int >= 1", "T: type", "axis: int = 0"], shape_fn=_pack_fn)
op_def("Unpack", inputs=["value: T"], outputs=["output: num * T"],
       attrs=["num: int >= 0", "T: type", "axis: int = 0"], shape_fn=_unpack_fn)
op_def("Split", inputs=["split_dim: int32", "value: T"], outputs=["output: num_split * T"],
       attrs=["num_split: int >= 1", "T: type"], shape_fn=_split_fn)
op_def("SplitV", inputs=["value: T", "size_splits: Tlen", "split_dim: int32"],
       outputs=["output: num_split * T"],
       attrs=["num_split: int >= 1", "T: type", "Tlen: {int8, int32, int64} = int64"],
       shape_fn=_split_v_fn)
op_def("Fill", inputs=["dims: index_type", "value: T"], outputs=["output: T"],
       attrs=["T: type", f"index_type: {_INDEX} = int32"], shape_fn=_fill_fn)
op_def("ZerosLike", inputs=["x: T"], outputs=["y: T"], attrs=["T: type"], shape_fn=_same_shape)
op_def("OnesLike", inputs=["x: T"], outputs=["y: T"], attrs=["T: number_or_bool"],
       shape_fn=_same_shape)
op_def("ExpandDims", inputs=["input: T", "dim: Tdim"], outputs=["output: T"],
       attrs=["T: type", f"Tdim: {_INDEX} = int32"], shape_fn=_expand_dims_fn)
op_def("Squeeze", inputs=["input: T"], outputs=["output: T"],
       attrs=["T: type", "squeeze_dims: list(int) = []"], shape_fn=_squeeze_fn)
op_def("Tile", inputs=["input: T", "multiples: Tmultiples"], outputs=["output: T"],
       attrs=["T: type", f"Tmultiples: {_INDEX} = int32"], shape_fn=_tile_fn)
op_def("Pad", inputs=["input: T", "paddings: Tpaddings"], outputs=["output: T"],
       attrs=["T: type", f"Tpaddings: {_INDEX} = int32"], shape_fn=_pad_fn)
op_def("PadV2", inputs=["input: T", "paddings: Tpaddings", "constant_values: T"],
       outputs=["output: T"], attrs=["T: type", f"Tpaddings: {_INDEX} = int32"], shape_fn=_pad_fn)
op_def("MirrorPad", inputs=["input: T", "paddings: Tpaddings"], outputs=["output: T"],
       attrs=["T: type", f"Tpaddings: {_INDEX} = int32", "mode: string"], shape_fn=_pad_fn)
op_def("Where", inputs=["input: T"], outputs=["index: int64"], attrs=["T: number_or_bool = bool"],
       shape_fn=_where_fn)
op_def("Select", inputs=["condition: bool", "t: T", "e: T"], outputs=["output: T"],
       attrs=["T: type"], shape_fn=_select_fn)
op_def("SelectV2", inputs=["condition: bool", "t: T", "e: T"], outputs=["output: T"],
       attrs=["T: type"], shape_fn=_select_v2_fn)
op_def("OneHot", inputs=["indices: TI", "depth: int32", "on_value: T", "off_value: T"],
       outputs=["output: T"],
       attrs=["axis: int = -1", "T: type", "TI: {uint8, int8, int32, int64} = int64"],
       shape_fn=_one_hot_fn)
op_def("ReverseV2", inputs=["tensor: T", "axis: Tidx"], outputs=["output: T"],
       attrs=[f"Tidx: {_INDEX} = int32", "T: type"], shape_fn=_reverse_fn)

for _t in ("Shape", "ShapeN", "Size", "Rank", "ZerosLike", "OnesLike", "Where"):
    not_differentiable(_t)

_register_folding("Pack", "Unpack", "ConcatV2", "Reshape", "ExpandDims", "Squeeze", "Transpose",
                  "ZerosLike", "OnesLike", "Tile", "ReverseV2", "Split", "SplitV")


@constant_evaluator("Shape")
def _shape_value(op: Operation) -> Any:
    s = op.inputs[0].shape
    return np.array(s.as_list(), op.get_attr("out_type").as_numpy_dtype) if s.is_fully_defined() else None


@constant_evaluator("ShapeN")
def _shape_n_value(op: Operation) -> Any:
    dt = op.get_attr("out_type").as_numpy_dtype
    return [np.array(x.shape.as_list(), dt) if x.shape.is_fully_defined() else None for x in op.inputs]


@constant_evaluator("Size")
def _size_value(op: Operation) -> Any:
    n = op.inputs[0].shape.num_elements()
    return None if n is None else np.array(n, op.get_attr("out_type").as_numpy_dtype)


@constant_evaluator("Rank")
def _rank_value(op: Operation) -> Any:
    r = op.inputs[0].shape.ndims
    return None if r is None else np.array(r, np.int32)


@constant_evaluator("Fill")
def _fill_value(op: Operation) -> Any:
    d = _int_list(op.inputs[0])
    if d is None or np.prod(d, dtype=np.int64) > _FOLD_LIMIT:
        return None
    return _fold(op)


# --- builders -------------------------------------------------------------------------
def _out_type(out_type: Any) -> dtypes.DType:
    return dtypes.as_dtype(out_type).base_dtype


def shape(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:
    """The shape of `input` as a 1-D int tensor (a Const when statically known).

    >>> tf.shape(tf.zeros([2, 3]))   # [2, 3]
    """
    x = _to_tensor(input, "input")
    ot = _out_type(out_type)
    if x.shape.is_fully_defined():
        return constant(x.shape.as_list(), dtype=ot, name=name or "Shape")
    return apply_op("Shape", input=x, out_type=ot, name=name or "Shape")


def shape_n(input: Any, out_type: Any = dtypes.int32, name: str | None = None) -> list[Tensor]:
    """The shapes of several tensors (one ShapeN op)."""
    xs = [_to_tensor(x, "input") for x in input]
    return apply_op("ShapeN", input=xs, out_type=_out_type(out_type), name=name or "ShapeN")


def size(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:
    """The number of elements of `input`."""
    x = _to_tensor(input, "input")
    ot = _out_type(out_type)
    n = x.shape.num_elements()
    if n is not None:
        return constant(n, dtype=ot, name=name or "Size")
    return apply_op("Size", input=x, out_type=ot, name=name or "Size")


def rank(input: Any, name: str | None = None) -> Tensor:
    """The number of dimensions of `input` (int32 scalar)."""
    x = _to_tensor(input, "input")
    if x.shape.ndims is not None:
        return constant(x.shape.ndims, dtype=dtypes.int32, name=name or "Rank")
    return apply_op("Rank", input=x, name=name or "Rank")


def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    """`tensor` with a new shape; one dimension may be -1 (inferred).

    >>> tf.reshape(x, [tf.shape(x)[0], -1])
    """
    return apply_op("Reshape", tensor=_to_tensor(tensor, "tensor"), shape=_to_tensor(shape, "shape"),
                    name=name or "Reshape")


def transpose(a: Any, perm: Any = None, name: str = "transpose", conjugate: bool = False) -> Tensor:
    """Permute dimensions; `perm` defaults to reversing them."""
    with _name_scope(name, "transpose") as scope:
        x = _to_tensor(a, "a")
        if perm is None:
            r = x.shape.ndims
            if r is not None:
                perm = constant(np.arange(r - 1, -1, -1, dtype=np.int32), name="perm")
            else:
                rk = apply_op("Rank", input=x, name="Rank")
                sub = apply_op("Sub", x=rk, y=1, name="sub")
                perm = apply_op("Range", start=sub, limit=-1, delta=-1, name="Range")
        out = apply_op("Transpose", x=x, perm=_to_tensor(perm, "perm"), name=scope)
        if conjugate and x.dtype.is_complex:
            out = apply_op("Conj", input=out, name="Conj")
        return out


def concat(values: Any, axis: Any, name: str = "concat") -> Tensor:
    """Join tensors along `axis` (negative counts from the end)."""
    if not isinstance(values, (list, builtins.tuple)):
        values = [values]
    if len(values) == 1:
        with _name_scope(name, "concat"):
            a = _to_tensor(axis, "concat_dim", dtype=dtypes.int32)
            if a.shape.ndims not in (None, 0):
                raise ValueError(f"Shape must be rank 0 but is rank {a.shape.ndims} for concat axis")
            from flowlab.ops.core_ops import identity

            return identity(values[0], name=name or "concat")
    return apply_op("ConcatV2", values=list(values), axis=_to_tensor(axis, "axis"), name=name or "concat")


def stack(values: Any, axis: int = 0, name: str = "stack") -> Tensor:
    """Stack rank-R tensors into one rank-(R+1) tensor (a Const for Python values)."""
    if axis == 0 and not _has_tensor(values):
        try:
            return constant(values, name=name)
        except (TypeError, ValueError):
            pass
    first = _to_tensor(values[0], name)
    if first.shape.ndims is not None:
        r = first.shape.ndims + 1
        if not -r <= axis < r:
            raise ValueError(f"Argument `axis` = {axis} not in range [{-r}, {r})")
    return apply_op("Pack", values=list(values), axis=axis, name=name)


def unstack(value: Any, num: int | None = None, axis: int = 0, name: str = "unstack") -> list[Tensor]:
    """Split a rank-R tensor into `num` rank-(R-1) tensors along `axis`."""
    x = _to_tensor(value, "value")
    if num is None:
        d = _dims(x)
        if d is None:
            raise ValueError(f"Cannot infer argument `num` from shape {x.shape}")
        if not -len(d) <= axis < len(d):
            raise ValueError(f"Argument `axis` = {axis} not in range [{-len(d)}, {len(d)})")
        num = d[axis]
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {x.shape}")
    return apply_op("Unpack", value=x, num=num, axis=axis, name=name or "unstack")


def split(value: Any, num_or_size_splits: Any, axis: Any = 0, num: int | None = None,
          name: str = "split") -> list[Tensor]:
    """Split along `axis` into `num_or_size_splits` equal parts (an int) or parts of the
    given sizes (a list; one may be -1)."""
    if isinstance(num_or_size_splits, (int, np.integer)) and not isinstance(num_or_size_splits, bool):
        return apply_op("Split", split_dim=_to_tensor(axis, "split_dim", dtypes.int32),
                        value=_to_tensor(value, "value"), num_split=int(num_or_size_splits),
                        name=name or "split")
    sizes = _to_tensor(num_or_size_splits, "size_splits")
    if num is None:
        s = sizes.shape
        if s.ndims != 1 or s[0].value is None:
            raise ValueError(f"Cannot infer argument `num` from shape {s}")
        num = s[0].value
    return apply_op("SplitV", value=_to_tensor(value, "value"), size_splits=sizes,
                    split_dim=_to_tensor(axis, "split_dim", dtypes.int32), num_split=num,
                    name=name or "split")


def expand_dims(input: Any, axis: Any = None, name: str | None = None, dim: Any = None) -> Tensor:
    """Insert a dimension of size 1 at `axis`."""
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    return apply_op("ExpandDims", input=_to_tensor(input, "input"), dim=_to_tensor(axis, "dim"),
                    name=name or "ExpandDims")


def squeeze(input: Any, axis: Any = None, name: str | None = None, squeeze_dims: Any = None) -> Tensor:
    """Remove dimensions of size 1 (all of them, or those in `axis`)."""
    if squeeze_dims is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'squeeze_dims' and 'axis'")
        axis = squeeze_dims
    if isinstance(axis, (int, np.integer)):
        axis = [axis]
    return apply_op("Squeeze", input=_to_tensor(input, "input"), squeeze_dims=list(axis or []),
                    name=name or "Squeeze")


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:
    """Repeat `input` `multiples[i]` times along each dimension i."""
    return apply_op("Tile", input=_to_tensor(input, "input"), multiples=_to_tensor(multiples, "multiples"),
                    name=name or "Tile")


def pad(tensor: Any, paddings: Any, mode: str = "CONSTANT", name: str | None = None,
        constant_values: Any = 0) -> Tensor:
    """Pad with a constant (Pad/PadV2) or by mirroring (MirrorPad: REFLECT, SYMMETRIC)."""
    m = mode.upper()
    x = _to_tensor(tensor, "input")
    p = _to_tensor(paddings, "paddings")
    if m == "CONSTANT":
        if not isinstance(constant_values, Tensor) and np.all(np.asarray(constant_values) == 0):
            return apply_op("Pad", input=x, paddings=p, name=name or "Pad")
        return apply_op("PadV2", input=x, paddings=p, constant_values=constant_values,
                        name=name or "PadV2")
    if m in ("REFLECT", "SYMMETRIC"):
        return apply_op("MirrorPad", input=x, paddings=p, mode=m, name=name or "MirrorPad")
    raise ValueError(f"Value of argument `mode` expected to be one of \"CONSTANT\", \"REFLECT\", or "
                     f"\"SYMMETRIC\". Received `mode` = {mode}")


def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    """A tensor of shape `dims` filled with the scalar `value`."""
    return apply_op("Fill", dims=_to_tensor(dims, "dims"), value=_to_tensor(value, "value"),
                    name=name or "Fill")


def _filled(shape: Any, value: Any, dtype: Any, name: str | None, default: str) -> Tensor:
    dt = dtypes.as_dtype(dtype).base_dtype
    with _name_scope(name, default) as scope:
        if not isinstance(shape, Tensor) and not _has_tensor(shape):
            try:
                dims = as_shape(shape)
                if dims.is_fully_defined() and not isinstance(shape, (int, np.integer)) \
                        and np.prod(dims.as_list(), dtype=np.int64) < 1000:
                    arr = np.full(dims.as_list(), value, dtype=dt.as_numpy_dtype
                                  if dt is not dtypes.string else object)
                    arr.flags.writeable = False
                    # A scope name ("zeros/") names the Const itself, as TensorFlow does.
                    return apply_op("Const", value=arr, dtype=dt, name=scope)
                shape_t = constant(dims.as_list(), dtype=dtypes.int64 if any(
                    d >= 2**31 for d in dims.as_list()) else dtypes.int32, name="shape_as_tensor")
            except (TypeError, ValueError):
                shape_t = _to_tensor(shape, "shape", dtypes.int32)
        else:
            shape_t = _to_tensor(shape, "shape")
        if shape_t.shape.ndims == 0:
            shape_t = reshape(shape_t, [-1])
        return apply_op("Fill", dims=shape_t, value=constant(value, dtype=dt), name=scope)


def _zero(dt: dtypes.DType) -> Any:
    return False if dt is dtypes.bool else b"" if dt is dtypes.string else 0


def zeros(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """A tensor of zeros: a Const when small and known, else Fill."""
    dt = dtypes.as_dtype(dtype).base_dtype
    return _filled(shape, _zero(dt), dt, name, "zeros")


def ones(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """A tensor of ones: a Const when small and known, else Fill."""
    dt = dtypes.as_dtype(dtype).base_dtype
    return _filled(shape, True if dt is dtypes.bool else 1, dt, name, "ones")


def _like_input(tensor: Any) -> Tensor:
    if not isinstance(tensor, Tensor) and hasattr(tensor, "value") and hasattr(tensor, "_as_graph_element"):
        return tensor.value()  # a Variable: its current value
    return _to_tensor(tensor, "tensor")


def zeros_like(tensor: Any, dtype: Any = None, name: str | None = None, optimize: bool = True) -> Tensor:
    """Zeros with the shape of `tensor` (a Const when its shape is known)."""
    with _name_scope(name, "zeros_like") as scope:
        x = _like_input(tensor)
        dt = x.dtype.base_dtype if dtype is None else dtypes.as_dtype(dtype).base_dtype
        if optimize and x.shape.is_fully_defined():
            return zeros(x.shape.as_list(), dt, name=scope)
        if dt is not x.dtype.base_dtype:
            return zeros(shape(x), dt, name=scope)
        return apply_op("ZerosLike", x=x, name=scope)


def ones_like(tensor: Any, dtype: Any = None, name: str | None = None, optimize: bool = True) -> Tensor:
    """Ones with the shape of `tensor` (Fill of its shape)."""
    with _name_scope(name, "ones_like") as scope:
        x = _like_input(tensor)
        dt = x.dtype.base_dtype if dtype is None else dtypes.as_dtype(dtype).base_dtype
        s = shape(x) if optimize else apply_op("Shape", input=x, name="Shape")
        out = ones(s, dt, name=scope)
        out.set_shape(x.shape)
        return out


def one_hot(indices: Any, depth: Any, on_value: Any = None, off_value: Any = None, axis: Any = None,
            dtype: Any = None, name: str | None = None) -> Tensor:
    """One-hot vectors of length `depth` along `axis` (default last); dtype from
    `on_value`/`off_value`, else `dtype`, else float32."""
    with _name_scope(name, "one_hot") as scope:
        dt = None if dtype is None else dtypes.as_dtype(dtype).base_dtype
        on = None if on_value is None else _to_tensor(on_value, "on_value", hint=dt)
        off = None if off_value is None else _to_tensor(off_value, "off_value", hint=dt)
        if on is not None or off is not None:
            if dt is not None:
                for t, what in ((on, "on_value"), (off, "off_value")):
                    if t is not None and t.dtype.base_dtype is not dt:
                        raise TypeError(
                            f"dtype {t.dtype.base_dtype.name} of {what} does not match dtype "
                            f"parameter {dt.name}"
                        )
            else:
                dt = (on if on is not None else off).dtype.base_dtype  # type: ignore[union-attr]
        elif dt is None:
            dt = dtypes.float32
        if on is None:
            on = constant(True if dt is dtypes.bool else 1, dtype=dt, name="on_value")
        if off is None:
            off = constant(_zero(dt), dtype=dt, name="off_value")
        if on.dtype.base_dtype is not off.dtype.base_dtype:
            raise TypeError(
                f"dtype {on.dtype.base_dtype.name} of on_value does not match dtype "
                f"{off.dtype.base_dtype.name} of off_value"
            )
        return apply_op("OneHot", indices=_to_tensor(indices, "indices"),
                        depth=_to_tensor(depth, "depth", dtypes.int32), on_value=on, off_value=off,
                        axis=-1 if axis is None else axis, name=scope)


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """TF1 `tf.where`: coordinates of true elements (int64 [n, rank]) with one argument;
    with three, elements of `x` where `condition` else `y` (Select: `condition` has the
    shape of `x` or is a vector matching its first dimension)."""
    if x is None and y is None:
        with _name_scope(name, "Where") as scope:
            c = _to_tensor(condition, "condition", hint=dtypes.bool)
            return apply_op("Where", input=c, name=scope)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return apply_op("Select", condition=condition, t=x, e=y, name=name or "Select")


def where_v2(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """`tf.where` of TF2: SelectV2, which broadcasts `condition`, `x` and `y`."""
    if x is None and y is None:
        return where(condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return apply_op("SelectV2", condition=condition, t=x, e=y, name=name or "SelectV2")


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Tensor:
    """Reverse the given dimensions (ReverseV2)."""
    return apply_op("ReverseV2", tensor=_to_tensor(tensor, "tensor"), axis=_to_tensor(axis, "axis"),
                    name=name or "ReverseV2")


reverse_v2 = reverse

from flowlab.ops.slicing import *  # noqa: E402,F401,F403
from flowlab.ops.slicing import __all__ as _slicing_all  # noqa: E402
from flowlab.ops.slicing import _slice_helper, strided_slice_plan  # noqa: E402,F401

__all__ += _slicing_all
