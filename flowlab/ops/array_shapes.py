"""Static knowledge for the array ops: shape functions and constant evaluation.

The shape functions of the array op family (declared in `flowlab.ops.array_ops`)
live here.  They follow TensorFlow's C++ shape inference: partially known inputs
give partially known outputs, and a contradiction is a ValueError with TensorFlow's
message (the builder adds the op's name and input shapes).

`constant_value_as_shape(t)` reads the partial shape a 1-D shape tensor describes
(through Shape, Pack, ConcatV2 and StridedSlice of those), and `fold(op)` evaluates an
op on statically known inputs by running its own CPU kernel, so that static values
(`tf.shape(x)[0]` of a known `x`) and runtime values come from one definition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape, broadcast_shapes
from flowlab.ops.const_fold import constant_evaluator, constant_value


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
            v = _known_scalar(x)
            dims.append(None if v is None or v < 0 else v)
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


def _known_scalar(t: Tensor) -> int | None:
    """An int scalar's value, also when it is one known entry of a partially known shape
    (`tf.shape(x)[0]` with `x` of shape [3, None])."""
    v = constant_value(t)
    if v is not None:
        return int(v)
    op = t.op
    if op.type == "StridedSlice" and op.get_attr("shrink_axis_mask") == 1 and not any(
        op.get_attr(m) for m in ("ellipsis_mask", "new_axis_mask")
    ):
        b = _int_list(op.inputs[1])
        prev = constant_value_as_shape(op.inputs[0]) if op.inputs[0].shape.ndims == 1 else None
        if b is not None and len(b) == 1 and prev is not None and prev.ndims is not None:
            if -prev.ndims <= b[0] < prev.ndims:
                return prev.as_list()[b[0]]
    return None


# Build-time folding runs an op's CPU kernel on its known inputs: the kernels are the one
# definition of each op's arithmetic.  They are a layer above this one, so they install
# the runner (flowlab/kernels/build_time_folding.py) when they are imported; until then
# nothing folds.
KernelRunner = Callable[[Operation, list[Any]], Any]
_kernel_runner: KernelRunner | None = None
_FOLD_LIMIT = 1 << 16


def set_kernel_runner(run: KernelRunner) -> None:
    """`run(op, input_values)` -> the op's outputs, or None when it cannot run."""
    global _kernel_runner
    _kernel_runner = run


def _fold(op: Operation) -> Any:
    """Run `op`'s CPU kernel on its inputs' known values (small values only)."""
    if _kernel_runner is None:
        return None
    for t in op.outputs:
        n = t.shape.num_elements()
        if n is not None and n > _FOLD_LIMIT:
            return None
    values = []
    for x in op.inputs:
        v = constant_value(x)
        if v is None or np.size(v) > _FOLD_LIMIT:
            return None
        values.append(v)
    return _kernel_runner(op, values)


def _register_folding(*op_types: str) -> None:
    for t in op_types:
        constant_evaluator(t)(_fold)


# --- shape functions ------------------------------------------------------------------
def _dims(t: Tensor) -> list[int | None] | None:
    s = t.shape
    return None if s.ndims is None else s.as_list()


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


def _same_shape_n(op: Operation) -> list[Any]:
    return [x.shape for x in op.inputs[1:]]


def _mirror_pad_grad_fn(op: Operation) -> list[Any]:
    d = _dims(op.inputs[0])
    pv = constant_value(op.inputs[1])
    if d is None:
        return [TensorShape(None)]
    if pv is None:
        return [TensorShape([None] * len(d))]
    pv = np.asarray(pv).reshape(len(d), 2)
    return [TensorShape([None if x is None else x - int(pv[i].sum()) for i, x in enumerate(d)])]


def _broadcast_to_fn(op: Operation) -> list[Any]:
    out = constant_value_as_shape(op.inputs[1])
    d = _dims(op.inputs[0])
    if out.ndims is None or d is None:
        return [out]
    if len(d) > out.ndims:
        raise ValueError(f"Shape must be at most rank {out.ndims} but is rank {len(d)}")
    dims = out.as_list()
    for k, a in enumerate(d[::-1], 1):
        b = dims[-k]
        if a not in (None, 1) and b is not None and a != b:
            raise ValueError(f"Dimensions must be equal, but are {a} and {b}")
        if b is None and a not in (None, 1):
            dims[-k] = a
    return [TensorShape(dims)]
