"""Declarations of the math ops (signatures, allowed dtypes, shape functions), their
static evaluators (Cast, Range, Equal, NotEqual, as `tf.get_static_value` folds them)
and the ones with no gradient.

Allowed dtypes are TensorFlow's, less bfloat16 and the quantized types that flowlab
does not have.  Shape functions follow TensorFlow's C++ shape inference, including
its messages ("Dimensions must be equal, but are 3 and 4").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.const_fold import constant_evaluator, constant_value
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

# Dtype sets (TensorFlow's, without bfloat16 / quantized types).
F = "float16, float32, float64"
C = "complex64, complex128"
SI = "int8, int16, int32, int64"
UI = "uint8, uint16, uint32, uint64"
FLOAT_C = "{" + F + ", " + C + "}"
FLOAT = "{" + F + "}"
SIGNED = "{" + F + ", " + SI + ", " + C + "}"
ABS = "{" + F + ", " + SI + "}"
NUMERIC = "{" + F + ", " + SI + ", " + UI + ", " + C + "}"
REAL = "{" + F + ", " + SI + ", " + UI + "}"
SQDIFF = "{" + F + ", int32, int64, " + C + "}"
TRUNCMOD = "{" + F + ", int32, int64}"
INTEGER = "{" + SI + ", " + UI + "}"
MATMUL = "{" + F + ", int32, int64, " + UI + ", " + C + "}"
BMM = "{" + F + ", int16, int32, int64, " + UI + ", " + C + "}"
ARG = "{" + F + ", " + SI + ", " + UI + ", bool}"
RANGE = "{" + F + ", " + SI + ", uint16, uint32, uint64}"


# --- shape functions ---------------------------------------------------------------
def _dims_equal_error(a: int, b: int) -> ValueError:
    return ValueError(f"Dimensions must be equal, but are {a} and {b}")


def broadcast_dims(x: tuple[Any, ...], y: tuple[Any, ...], strict: bool = True) -> tuple[Any, ...] | None:
    """Broadcast two known-rank shapes as TensorFlow's shape inference does (None when
    `strict` is False and they do not broadcast)."""
    n = max(len(x), len(y))
    x = (1,) * (n - len(x)) + tuple(x)
    y = (1,) * (n - len(y)) + tuple(y)
    out: list[Any] = []
    for a, b in zip(x, y):
        if a is None or b is None:
            if a is not None and a > 1:
                out.append(a)
            elif b is not None and b > 1:
                out.append(b)
            elif a == 1:
                out.append(b)
            elif b == 1:
                out.append(a)
            else:
                out.append(None)
        elif a == 1 or b == 1:
            out.append(b if a == 1 else a)
        elif a == b:
            out.append(a)
        elif strict:
            raise _dims_equal_error(a, b)
        else:
            return None
    return tuple(out)


def _broadcast(op: Operation) -> list[Any]:
    x, y = op.inputs[0].shape.as_tuple(), op.inputs[1].shape.as_tuple()
    if x is None or y is None:
        return [TensorShape(None)]
    strict = op._attrs.get("incompatible_shape_error", True)
    out = broadcast_dims(x, y, strict)
    return [TensorShape(out)]


def _same(op: Operation) -> list[Any]:
    return [op.inputs[0].shape]


def _add_n(op: Operation) -> list[Any]:
    cur = TensorShape(None)
    for t in op.inputs:
        s = t.shape
        if cur.ndims is not None and s.ndims is not None:
            if cur.ndims != s.ndims:
                raise ValueError(
                    f"Shapes must be equal rank, but are {cur.ndims} and {s.ndims}\n"
                    "\tFrom merging shape 0 with other shapes."
                )
            for i, (a, b) in enumerate(zip(cur.as_tuple(), s.as_tuple())):  # type: ignore[arg-type]
                if a is not None and b is not None and a != b:
                    raise ValueError(
                        f"Dimension {i} in both shapes must be equal, but are {a} and {b}. "
                        f"Shapes are {_fmt(cur)} and {_fmt(s)}.\n"
                        "\tFrom merging shape 0 with other shapes."
                    )
        cur = cur.merge_with(s)
    return [cur]


def _fmt(s: TensorShape) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in s.as_tuple()) + "]"  # type: ignore[union-attr]


def _rank_error(want: str, got: int) -> ValueError:
    return ValueError(f"Shape must be {want} but is rank {got}")


def _matmul(op: Operation) -> list[Any]:
    a, b = op.inputs[0].shape.as_tuple(), op.inputs[1].shape.as_tuple()
    for s in (a, b):
        if s is not None and len(s) != 2:
            raise _rank_error("rank 2", len(s))
    a = a if a is not None else (None, None)
    b = b if b is not None else (None, None)
    ta, tb = op._attrs["transpose_a"], op._attrs["transpose_b"]
    rows, inner_a = (a[1], a[0]) if ta else (a[0], a[1])
    inner_b, cols = (b[1], b[0]) if tb else (b[0], b[1])
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise _dims_equal_error(inner_a, inner_b)
    return [TensorShape([rows, cols])]


def _batch_matmul(op: Operation) -> list[Any]:
    a, b = op.inputs[0].shape.as_tuple(), op.inputs[1].shape.as_tuple()
    for s in (a, b):
        if s is not None and len(s) < 2:
            raise _rank_error("at least rank 2", len(s))
    if a is None or b is None:
        return [TensorShape(None)]
    ax, ay = op._attrs["adj_x"], op._attrs["adj_y"]
    rows, inner_a = (a[-1], a[-2]) if ax else (a[-2], a[-1])
    inner_b, cols = (b[-1], b[-2]) if ay else (b[-2], b[-1])
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise _dims_equal_error(inner_a, inner_b)
    batch = broadcast_dims(a[:-2], b[:-2])
    return [TensorShape(tuple(batch) + (rows, cols))]  # type: ignore[arg-type]


def _reduction(op: Operation) -> list[Any]:
    shape = op.inputs[0].shape.as_tuple()
    idx_shape = op.inputs[1].shape
    if idx_shape.ndims is not None and idx_shape.ndims > 1:
        raise _rank_error("at most rank 1", idx_shape.ndims)
    keep = op._attrs["keep_dims"]
    axes = constant_value(op.inputs[1])
    if axes is None or shape is None:
        if keep and shape is not None:
            return [TensorShape([None] * len(shape))]
        return [TensorShape(None)]
    rank = len(shape)
    true_axes = set()
    for a in np.asarray(axes).reshape(-1).tolist():
        if a < -rank or a >= rank:
            raise ValueError(f"Invalid reduction dimension {a} for input with {rank} dimensions.")
        true_axes.add(a + rank if a < 0 else a)
    out = [(1 if keep else None) if i in true_axes else d for i, d in enumerate(shape)]
    return [TensorShape([d for i, d in enumerate(out) if keep or i not in true_axes])]


def _arg_reduce(op: Operation) -> list[Any]:
    shape = op.inputs[0].shape.as_tuple()
    dim = constant_value(op.inputs[1])
    if shape is None:
        return [TensorShape(None)]
    rank = len(shape)
    if dim is None:
        return [TensorShape([None] * max(rank - 1, 0))]
    d = int(np.asarray(dim).reshape(-1)[0]) if np.size(dim) else 0
    lo = -max(rank, 1)
    if d < lo or d >= max(rank, 1):
        raise ValueError(f"Expected dimension in the range [{lo}, {max(rank, 1)}), but got {d}")
    if rank == 0:
        return [TensorShape(())]
    d = d + rank if d < 0 else d
    return [TensorShape(shape[:d] + shape[d + 1 :])]


def range_size(start: Any, limit: Any, delta: Any, dtype: dtypes.DType) -> int:
    """Number of elements of Range, with TensorFlow's checks (ValueError)."""
    if delta == 0:
        raise ValueError("Requires delta != 0")
    if delta > 0 and start > limit:
        raise ValueError(f"Requires start <= limit when delta > 0: {_n(start)}/{_n(limit)}")
    if delta < 0 and start < limit:
        raise ValueError(f"Requires start >= limit when delta < 0: {_n(start)}/{_n(limit)}")
    if dtype.is_integer:
        return int((abs(int(limit) - int(start)) + abs(int(delta)) - 1) // abs(int(delta)))
    t = dtype.as_numpy_dtype
    with np.errstate(all="ignore"):
        return int(np.ceil(np.abs((t(limit) - t(start)) / t(delta))))


def _n(v: Any) -> str:
    v = np.asarray(v).item()
    return repr(v) if isinstance(v, float) and not v.is_integer() else str(int(v)) if isinstance(v, float) else str(v)


def _range(op: Operation) -> list[Any]:
    for t in op.inputs:
        if t.shape.ndims not in (None, 0):
            raise _rank_error("rank 0", t.shape.ndims)  # type: ignore[arg-type]
    vals = [constant_value(t) for t in op.inputs]
    if any(v is None for v in vals):
        return [TensorShape([None])]
    return [TensorShape([range_size(*vals, op._attrs["Tidx"])])]


def _scan(op: Operation) -> list[Any]:
    if op.inputs[1].shape.ndims not in (None, 0):
        raise _rank_error("rank 0", op.inputs[1].shape.ndims)  # type: ignore[arg-type]
    return [op.inputs[0].shape]


# --- declarations --------------------------------------------------------------------
def _binary(name: str, types: str, out: str = "T", shape_fn: Any = _broadcast, extra: tuple[str, ...] = ()) -> None:
    op_def(name, inputs=["x: T", "y: T"], outputs=[f"z: {out}"], attrs=[f"T: {types}", *extra],
           shape_fn=shape_fn)


def _unary(name: str, types: str, out: str = "T") -> None:
    op_def(name, inputs=["x: T"], outputs=[f"y: {out}"], attrs=[f"T: {types}"], shape_fn=_same)


for _name in ("AddV2", "Sub", "Mul", "Div", "RealDiv", "TruncateDiv", "FloorDiv"):
    _binary(_name, NUMERIC)
_binary("Add", "{" + F + ", " + SI + ", uint8, " + C + ", string}")
_binary("FloorMod", REAL)
_binary("TruncateMod", TRUNCMOD)
_binary("Pow", SIGNED)
_binary("Maximum", REAL)
_binary("Minimum", REAL)
_binary("SquaredDifference", SQDIFF)
_binary("BitwiseAnd", INTEGER)
_binary("BitwiseOr", INTEGER)
_binary("BitwiseXor", INTEGER)
for _name in ("Less", "LessEqual", "Greater", "GreaterEqual"):
    _binary(_name, REAL, out="bool")
for _name in ("Equal", "NotEqual"):
    _binary(_name, "type", out="bool", extra=("incompatible_shape_error: bool = true",))
op_def("Atan2", inputs=["y: T", "x: T"], outputs=["z: T"], attrs=[f"T: {FLOAT}"], shape_fn=_broadcast)
for _name in ("LogicalAnd", "LogicalOr"):
    op_def(_name, inputs=["x: bool", "y: bool"], outputs=["z: bool"], shape_fn=_broadcast)
op_def("LogicalNot", inputs=["x: bool"], outputs=["y: bool"], shape_fn=_same)

for _name in ("Neg", "Sign", "Round", "Reciprocal"):
    _unary(_name, SIGNED)
_unary("Abs", ABS)
_unary("Square", NUMERIC)
for _name in ("Sqrt", "Rsqrt", "Exp", "Expm1", "Log", "Log1p", "Tanh", "Sigmoid", "Sin", "Cos",
              "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh"):
    _unary(_name, FLOAT_C)
for _name in ("Floor", "Ceil", "Erf"):
    _unary(_name, FLOAT)
for _name in ("IsNan", "IsInf", "IsFinite"):
    _unary(_name, FLOAT, out="bool")
_unary("Invert", INTEGER)
op_def("ComplexAbs", inputs=["x: T"], outputs=["y: Tout"],
       attrs=["T: {complex64, complex128} = complex64", "Tout: {float32, float64} = float32"],
       shape_fn=_same)
op_def("Conj", inputs=["input: T"], outputs=["output: T"], attrs=["T: {complex64, complex128} = complex64"],
       shape_fn=_same)

op_def("Cast", inputs=["x: SrcT"], outputs=["y: DstT"],
       attrs=["SrcT: type", "DstT: type", "Truncate: bool = false"], shape_fn=_same)
op_def("AddN", inputs=["inputs: N * T"], outputs=["sum: T"], attrs=["N: int >= 1", f"T: {NUMERIC}"],
       shape_fn=_add_n)
op_def("MatMul", inputs=["a: T", "b: T"], outputs=["product: T"],
       attrs=["transpose_a: bool = false", "transpose_b: bool = false", f"T: {MATMUL}",
              "grad_a: bool = false", "grad_b: bool = false"], shape_fn=_matmul)
op_def("SparseMatMul", inputs=["a: Ta", "b: Tb"], outputs=["product: float32"],
       attrs=["transpose_a: bool = false", "transpose_b: bool = false",
              "a_is_sparse: bool = false", "b_is_sparse: bool = false",
              "Ta: {float32} = float32", "Tb: {float32} = float32"], shape_fn=_matmul,
       doc="MatMul with hints that an operand is mostly zeros (the product is the same).")
op_def("BatchMatMulV2", inputs=["x: T", "y: T"], outputs=["output: T"],
       attrs=[f"T: {BMM}", "adj_x: bool = false", "adj_y: bool = false",
              "grad_x: bool = false", "grad_y: bool = false"], shape_fn=_batch_matmul)
_REDUCE_ATTRS = ["keep_dims: bool = false", "Tidx: {int32, int64} = int32"]
for _name, _types in (("Sum", NUMERIC), ("Mean", NUMERIC), ("Prod", NUMERIC), ("Max", REAL), ("Min", REAL)):
    op_def(_name, inputs=["input: T", "reduction_indices: Tidx"], outputs=["output: T"],
           attrs=[*_REDUCE_ATTRS, f"T: {_types}"], shape_fn=_reduction)
for _name in ("All", "Any"):
    op_def(_name, inputs=["input: bool", "reduction_indices: Tidx"], outputs=["output: bool"],
           attrs=_REDUCE_ATTRS, shape_fn=_reduction)
for _name in ("ArgMax", "ArgMin"):
    op_def(_name, inputs=["input: T", "dimension: Tidx"], outputs=["output: output_type"],
           attrs=[f"T: {ARG}", "Tidx: {int32, int64} = int32",
                  "output_type: {int32, int64} = int64"], shape_fn=_arg_reduce)
for _name in ("Cumsum", "Cumprod"):
    op_def(_name, inputs=["x: T", "axis: Tidx"], outputs=["out: T"],
           attrs=["exclusive: bool = false", "reverse: bool = false", f"T: {NUMERIC}",
                  "Tidx: {int32, int64} = int32"], shape_fn=_scan)
op_def("Range", inputs=["start: Tidx", "limit: Tidx", "delta: Tidx"], outputs=["output: Tidx"],
       attrs=[f"Tidx: {RANGE} = int32"], shape_fn=_range)

def _lin_space(op: Operation) -> list[Any]:
    for t, what in zip(op.inputs, ("start", "stop", "num")):
        if t.shape.ndims not in (None, 0):
            raise ValueError(f"Shape must be rank 0 but is rank {t.shape.ndims} ({what})")
    num = constant_value(op.inputs[2])
    return [TensorShape([None if num is None else max(int(num), 0)])]


op_def("LinSpace", inputs=["start: T", "stop: T", "num: Tidx"], outputs=["output: T"],
       attrs=["T: {float16, float32, float64}", "Tidx: {int32, int64} = int32"], shape_fn=_lin_space,
       doc="`num` evenly spaced values from `start` to `stop`, both included.")

# Ops without a gradient in TensorFlow (those whose TF gradient returns None, such as
# Floor or FloorDiv, are the autodiff layer's to register).
for _name in ("Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual",
              "LogicalAnd", "LogicalOr", "LogicalNot", "IsNan", "IsInf", "IsFinite",
              "ArgMax", "ArgMin", "Range", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Invert",
              "All", "Any"):
    not_differentiable(_name)
# TensorFlow 2.x builds linspace from differentiable ops; flowlab's single op has no
# gradient yet (TensorFlow 1.x's LinSpace op had none either).
not_differentiable("LinSpace")


# --- static values ----------------------------------------------------------------------
@constant_evaluator("Cast")
def _cast_value(op: Operation) -> Any:
    v = constant_value(op.inputs[0])
    return None if v is None else np.asarray(v).astype(op._attrs["DstT"].as_numpy_dtype)


@constant_evaluator("Range")
def _range_value(op: Operation) -> Any:
    vals = [constant_value(t) for t in op.inputs]
    if any(v is None for v in vals):
        return None
    return np.arange(*vals, dtype=op._attrs["Tidx"].as_numpy_dtype)


@constant_evaluator("Equal")
def _equal_value(op: Operation) -> Any:
    a, b = constant_value(op.inputs[0]), constant_value(op.inputs[1])
    return None if a is None or b is None else np.equal(a, b)


@constant_evaluator("NotEqual")
def _not_equal_value(op: Operation) -> Any:
    a, b = constant_value(op.inputs[0]), constant_value(op.inputs[1])
    return None if a is None or b is None else np.not_equal(a, b)
