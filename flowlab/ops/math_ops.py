"""The math op family: elementwise arithmetic with NumPy broadcasting, comparisons,
logical ops, Cast, AddN, MatMul / BatchMatMulV2, reductions, ArgMax/ArgMin, Range,
and the TensorFlow 1.x builders made from them (`tf.add`, `tf.truediv`, `tf.div`,
`tf.clip_by_value`, `tf.range`, `tf.reduce_mean`, ...).

Builders follow TensorFlow's graph construction exactly: the same op types, default
names, attrs and helper ops (`tf.truediv` of int32 casts both sides to float64 in a
"truediv" scope; `tf.reduce_sum(x)` reduces over a Const of all axes, a scalar over
Rank + range), because
programs look ops up by name.  A Python value given to a builder is converted inside
the op's own name scope ("add/y"), as TensorFlow's op library does.

Declarations live in `math_defs`; kernels in `flowlab.kernels.math_kernels`;
Python operators on Tensor in `flowlab.ops.operators`.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.ops import math_defs  # noqa: F401  (declares the ops)
from flowlab.ops.builder import apply_op, convert_to_tensor, graph_of
from flowlab.ops.constant_op import make_const
from flowlab.ops.op_def import get_op_def

__all__ = [
    "linspace", "lin_space", "sparse_matmul",
    "add", "add_n", "subtract", "sub", "multiply", "divide", "div", "realdiv", "truediv",
    "floordiv", "floor_div", "mod", "floormod", "truncatediv", "truncatemod", "pow",
    "maximum", "minimum", "squared_difference", "scalar_mul",
    "negative", "neg", "abs", "sign", "square", "sqrt", "rsqrt", "exp", "expm1", "log",
    "log1p", "tanh", "sigmoid", "log_sigmoid", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "erf", "floor", "ceil", "round", "reciprocal", "conj", "atan2",
    "is_nan", "is_inf", "is_finite",
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
    "logical_and", "logical_or", "logical_not", "logical_xor",
    "cast", "to_float", "to_double", "to_int32", "to_int64",
    "matmul", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
    "reduce_all", "reduce_any", "reduce_logsumexp", "count_nonzero", "argmax", "argmin", "arg_max", "arg_min",
    "clip_by_value",
    "range", "cumsum", "cumprod",
]


# --- building helpers ---------------------------------------------------------------


def _op(op_type: str, name: str, **kwargs: Any) -> Any:
    """`apply_op`, converting Python values inside the op's name scope ("Add/y")."""
    inputs = [kwargs[a.name] for a in get_op_def(op_type).inputs if a.name in kwargs]
    if all(isinstance(v, Tensor) for v in inputs):
        return apply_op(op_type, name=name, **kwargs)
    g = graph_of(inputs)
    with g.as_default(), g.name_scope(name) as scope:
        return apply_op(op_type, name=scope, **kwargs)


@contextlib.contextmanager
def _scope(name: str | None, default: str, values: Any = ()) -> Any:
    g = graph_of(values)
    with g.as_default(), g.name_scope(name or default) as scope:
        yield scope


def _tensor(x: Any, name: str = "x", dtype_hint: Any = None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    return convert_to_tensor(x, name=name, preferred_dtype=dtype_hint)


# --- elementwise binary ---------------------------------------------------------------
def add(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x + y with broadcasting (`AddV2`; `Add` for strings).  `tf.add(x, 1.0)`"""
    if isinstance(x, Tensor) and isinstance(y, Tensor):
        op_type = "Add" if x.dtype.base_dtype is dtypes.string else "AddV2"
        return apply_op(op_type, name=name or "Add", x=x, y=y)
    with _scope(name, "Add", (x, y)) as scope:
        x = _tensor(x, "x")
        y = _tensor(y, "y", dtype_hint=x.dtype.base_dtype)
        op_type = "Add" if x.dtype.base_dtype is dtypes.string else "AddV2"
        return apply_op(op_type, name=scope, x=x, y=y)


def subtract(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x - y with broadcasting (`Sub`)."""
    return _op("Sub", name or "Sub", x=x, y=y)


sub = subtract


def multiply(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x * y with broadcasting (`Mul`)."""
    return _op("Mul", name or "Mul", x=x, y=y)


def realdiv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y for real types (`RealDiv`); no integer promotion."""
    return _op("RealDiv", name or "RealDiv", x=x, y=y)


def truncatediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y rounded toward zero for integers (`TruncateDiv`)."""
    return _op("TruncateDiv", name or "TruncateDiv", x=x, y=y)


def truncatemod(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Remainder with the sign of x (`TruncateMod`, C's fmod)."""
    return _op("TruncateMod", name or "TruncateMod", x=x, y=y)


def floordiv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x // y, rounding toward -inf (`FloorDiv`).  `tf.floordiv(-7, 2)` is -4."""
    return _op("FloorDiv", name or "floordiv", x=x, y=y)


def floor_div(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`FloorDiv` under its generated name (`tf.floor_div`)."""
    return _op("FloorDiv", name or "FloorDiv", x=x, y=y)


def floormod(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x mod y with the sign of y, as Python's `%` (`FloorMod`)."""
    return _op("FloorMod", name or "FloorMod", x=x, y=y)


mod = floormod


def pow(x: Any, y: Any, name: str | None = None) -> Tensor:  # noqa: A001 - TF's name
    """x ** y elementwise (`Pow`)."""
    return _op("Pow", name or "Pow", x=x, y=y)


def maximum(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise max with broadcasting (`Maximum`); NaN propagates."""
    return _op("Maximum", name or "Maximum", x=x, y=y)


def minimum(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise min with broadcasting (`Minimum`); NaN propagates."""
    return _op("Minimum", name or "Minimum", x=x, y=y)


def squared_difference(x: Any, y: Any, name: str | None = None) -> Tensor:
    """(x - y) ** 2 elementwise (`SquaredDifference`)."""
    return _op("SquaredDifference", name or "SquaredDifference", x=x, y=y)


def atan2(y: Any, x: Any, name: str | None = None) -> Tensor:
    """Elementwise arctan(y / x) with quadrant (`Atan2`)."""
    return _op("Atan2", name or "Atan2", y=y, x=x)


_TRUEDIV_TO = {
    dtypes.int8: dtypes.float32, dtypes.uint8: dtypes.float32,
    dtypes.int16: dtypes.float32, dtypes.uint16: dtypes.float32,
    dtypes.int32: dtypes.float64, dtypes.uint32: dtypes.float64,
    dtypes.int64: dtypes.float64, dtypes.uint64: dtypes.float64,
}
_TRUEDIV_KEEP = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


def truediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y as Python 3 divides: integers are cast to float first (int8/16 to
    float32, int32/64 to float64).  `tf.truediv(7, 2)` is 3.5 (float64)."""
    with _scope(name, "truediv", (x, y)) as scope:
        x = _tensor(x, "x")
        y = _tensor(y, "y", dtype_hint=x.dtype.base_dtype)
        xd, yd = x.dtype.base_dtype, y.dtype.base_dtype
        if xd is not yd:
            raise TypeError(f"`x` and `y` must have the same dtype, got {xd!r} != {yd!r}.")
        if xd not in _TRUEDIV_TO and xd not in _TRUEDIV_KEEP:
            raise TypeError(f"Invalid dtype {xd!r} in __truediv__")
        to = _TRUEDIV_TO.get(xd)
        if to is not None:
            x, y = cast(x, to), cast(y, to)
        return apply_op("RealDiv", name=scope, x=x, y=y)


def divide(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y with Python 3 semantics (`tf.divide`, same as `truediv`)."""
    return truediv(x, y, name=name)


def div(x: Any, y: Any, name: str | None = None) -> Tensor:
    """TensorFlow 1.x `tf.div`: Python 2 division -- floor for integers
    (`FloorDiv`), true division for floats (`RealDiv`)."""
    with _scope(name, "div", (x, y)) as scope:
        x = _tensor(x, "x")
        y = _tensor(y, "y", dtype_hint=x.dtype.base_dtype)
        xd, yd = x.dtype.base_dtype, y.dtype.base_dtype
        if xd is not yd:
            raise TypeError(f"x and y must have the same dtype, got {xd!r} != {yd!r}")
        if xd.is_floating or xd.is_complex:
            return apply_op("RealDiv", name=scope, x=x, y=y)
        return apply_op("FloorDiv", name=scope, x=x, y=y)


def scalar_mul(scalar: Any, x: Any, name: str | None = None) -> Tensor:
    """scalar * x where `scalar` is 0-D (converted to x's dtype)."""
    x = _tensor(x)
    s = convert_to_tensor(scalar, dtype=x.dtype.base_dtype, name="scalar")
    if s.shape.ndims != 0:
        raise ValueError(f"The input scalar must be a 0-D value. Received shape {s.shape}.")
    return apply_op("Mul", name=name or "Mul", x=s, y=x)


def add_n(inputs: Any, name: str | None = None) -> Tensor:
    """Sum of a list of same-shape, same-dtype tensors (`AddN`).  `tf.add_n([a, b, c])`"""
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError(
            "Inputs must be an iterable of at least one Tensor/IndexedSlices with the same "
            "dtype and shape."
        )
    ts = [convert_to_tensor(v) for v in inputs]
    kinds = [t.dtype.base_dtype for t in ts]
    if len(set(kinds)) > 1:
        raise TypeError(
            "Tensors in list passed to 'inputs' of 'AddN' Op have types "
            f"[{', '.join(k.name for k in kinds)}] that don't all match."
        )
    if len(ts) == 1:
        if name:
            from flowlab.ops.core_ops import identity

            return identity(ts[0], name=name)
        return ts[0]
    return apply_op("AddN", name=name or "AddN", inputs=ts)


# --- elementwise unary ------------------------------------------------------------------
def _unary(op_type: str, public: str, doc: str) -> Any:
    def fn(x: Any, name: str | None = None) -> Tensor:
        return _op(op_type, name or op_type, x=x)

    fn.__name__ = fn.__qualname__ = public
    fn.__doc__ = f"{doc} (`{op_type}`).  `tf.{public}(x)`"
    return fn


negative = _unary("Neg", "negative", "-x elementwise")
neg = negative
sign = _unary("Sign", "sign", "-1, 0 or 1 by the sign of x (x/|x| for complex)")
square = _unary("Square", "square", "x * x elementwise")
sqrt = _unary("Sqrt", "sqrt", "Square root elementwise")
rsqrt = _unary("Rsqrt", "rsqrt", "1 / sqrt(x) elementwise")
exp = _unary("Exp", "exp", "e ** x elementwise")
expm1 = _unary("Expm1", "expm1", "e ** x - 1 elementwise, accurate near 0")
log = _unary("Log", "log", "Natural logarithm elementwise")
log1p = _unary("Log1p", "log1p", "log(1 + x) elementwise, accurate near 0")
tanh = _unary("Tanh", "tanh", "Hyperbolic tangent elementwise")
sigmoid = _unary("Sigmoid", "sigmoid", "1 / (1 + exp(-x)) elementwise")
sin = _unary("Sin", "sin", "Sine elementwise")
cos = _unary("Cos", "cos", "Cosine elementwise")
tan = _unary("Tan", "tan", "Tangent elementwise")
asin = _unary("Asin", "asin", "Arcsine elementwise")
acos = _unary("Acos", "acos", "Arccosine elementwise")
atan = _unary("Atan", "atan", "Arctangent elementwise")
sinh = _unary("Sinh", "sinh", "Hyperbolic sine elementwise")
cosh = _unary("Cosh", "cosh", "Hyperbolic cosine elementwise")
erf = _unary("Erf", "erf", "Gauss error function elementwise")
floor = _unary("Floor", "floor", "Largest integer <= x, for floats")
ceil = _unary("Ceil", "ceil", "Smallest integer >= x, for floats")
round = _unary("Round", "round", "Round half to even (banker's rounding)")  # noqa: A001
reciprocal = _unary("Reciprocal", "reciprocal", "1 / x elementwise")
is_nan = _unary("IsNan", "is_nan", "True where x is NaN")
is_inf = _unary("IsInf", "is_inf", "True where x is +-inf")
is_finite = _unary("IsFinite", "is_finite", "True where x is neither inf nor NaN")
logical_not = _unary("LogicalNot", "logical_not", "Elementwise NOT of a bool tensor")


def abs(x: Any, name: str | None = None) -> Tensor:  # noqa: A001 - TF's name
    """|x| elementwise (`Abs`; `ComplexAbs` giving a real tensor for complex x)."""
    x = _tensor(x)
    if x.dtype.is_complex:
        return apply_op("ComplexAbs", name=name or "Abs", x=x, Tout=x.dtype.real_dtype)
    return apply_op("Abs", name=name or "Abs", x=x)


def conj(x: Any, name: str | None = None) -> Tensor:
    """Complex conjugate (`Conj`); real tensors are returned unchanged."""
    x = _tensor(x)
    if x.dtype.is_complex:
        return apply_op("Conj", name=name or "Conj", input=x)
    return x


def log_sigmoid(x: Any, name: str | None = None) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), built as TensorFlow does (Neg, Softplus, Neg)."""
    with _scope(name, "LogSigmoid", (x,)) as scope:
        x = _tensor(x, "x")
        sp = apply_op("Softplus", name="Softplus", features=apply_op("Neg", name="Neg", x=x))
        return apply_op("Neg", name=scope, x=sp)


# --- comparisons and logic ----------------------------------------------------------------
def less(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x < y elementwise, bool (`Less`)."""
    return _op("Less", name or "Less", x=x, y=y)


def less_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x <= y elementwise, bool (`LessEqual`)."""
    return _op("LessEqual", name or "LessEqual", x=x, y=y)


def greater(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x > y elementwise, bool (`Greater`)."""
    return _op("Greater", name or "Greater", x=x, y=y)


def greater_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x >= y elementwise, bool (`GreaterEqual`)."""
    return _op("GreaterEqual", name or "GreaterEqual", x=x, y=y)


def equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x == y elementwise, any dtype including string (`Equal`)."""
    return _op("Equal", name or "Equal", x=x, y=y)


def not_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x != y elementwise, any dtype including string (`NotEqual`)."""
    return _op("NotEqual", name or "NotEqual", x=x, y=y)


def logical_and(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise AND of bool tensors (`LogicalAnd`)."""
    return _op("LogicalAnd", name or "LogicalAnd", x=x, y=y)


def logical_or(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise OR of bool tensors (`LogicalOr`)."""
    return _op("LogicalOr", name or "LogicalOr", x=x, y=y)


def logical_xor(x: Any, y: Any, name: str | None = None) -> Tensor:
    """(x | y) & ~(x & y), built from LogicalOr/LogicalAnd/LogicalNot as TensorFlow does."""
    either = logical_or(x, y)
    both = logical_and(x, y)
    return logical_and(either, logical_not(both), name=name or "LogicalXor")


# --- casts ---------------------------------------------------------------------------------
def cast(x: Any, dtype: Any, name: str | None = None) -> Tensor:
    """x converted to `dtype` (`Cast`): floats truncate toward zero, complex keeps the
    real part, nonzero is True.  A tensor already of `dtype` is returned as is."""
    base = dtypes.as_dtype(dtype).base_dtype
    if isinstance(x, Tensor) and x.dtype is base:
        return x
    with _scope(name, "Cast", (x,)) as scope:
        x = _tensor(x, "x")
        if x.dtype.base_dtype is not base:
            x = apply_op("Cast", name=scope, x=x, DstT=base)
        return x


def to_float(x: Any, name: str = "ToFloat") -> Tensor:
    """TensorFlow 1.x helper: cast to float32."""
    return cast(x, dtypes.float32, name=name)


def to_double(x: Any, name: str = "ToDouble") -> Tensor:
    """TensorFlow 1.x helper: cast to float64."""
    return cast(x, dtypes.float64, name=name)


def to_int32(x: Any, name: str = "ToInt32") -> Tensor:
    """TensorFlow 1.x helper: cast to int32."""
    return cast(x, dtypes.int32, name=name)


def to_int64(x: Any, name: str = "ToInt64") -> Tensor:
    """TensorFlow 1.x helper: cast to int64."""
    return cast(x, dtypes.int64, name=name)


# --- matmul ------------------------------------------------------------------------------
def matmul(
    a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False,
    adjoint_a: bool = False, adjoint_b: bool = False, a_is_sparse: bool = False,
    b_is_sparse: bool = False, output_type: Any = None, grad_a: bool = False,
    grad_b: bool = False, name: str | None = None,
) -> Tensor:
    """Matrix product (`MatMul`); inputs of rank > 2 (or unknown rank) are batches of
    matrices with broadcast batch dims (`BatchMatMulV2`).  `tf.matmul(x, w)`"""
    with _scope(name, "MatMul", (a, b)) as scope:
        if transpose_a and adjoint_a:
            raise ValueError("Only one of `transpose_a` and `adjoint_a` can be True.")
        if transpose_b and adjoint_b:
            raise ValueError("Only one of `transpose_b` and `adjoint_b` can be True.")
        a = _tensor(a, "a")
        b = _tensor(b, "b", dtype_hint=a.dtype.base_dtype)
        ra, rb = a.shape.ndims, b.shape.ndims
        if ra is None or ra > 2 or rb is None or rb > 2:
            # BatchMatMulV2 has only adjoint flags: a transpose is conj + adjoint.
            if transpose_a:
                a, adjoint_a = conj(a), True
            if transpose_b:
                b, adjoint_b = conj(b), True
            return apply_op(
                "BatchMatMulV2", name=scope, x=a, y=b, adj_x=adjoint_a, adj_y=adjoint_b,
                grad_x=grad_a, grad_y=grad_b,
            )
        if adjoint_a:
            a, transpose_a = conj(a), True
        if adjoint_b:
            b, transpose_b = conj(b), True
        return apply_op(
            "MatMul", name=scope, a=a, b=b, transpose_a=transpose_a, transpose_b=transpose_b,
            grad_a=grad_a, grad_b=grad_b,
        )


def sparse_matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False,
                  a_is_sparse: bool = False, b_is_sparse: bool = False,
                  name: str | None = None) -> Tensor:
    """`tf.sparse_matmul`: the float32 matrix product of dense `a` and `b`, with hints
    that one of them is mostly zeros (`SparseMatMul`)."""
    return apply_op("SparseMatMul", a=a, b=b, transpose_a=transpose_a, transpose_b=transpose_b,
                    a_is_sparse=a_is_sparse, b_is_sparse=b_is_sparse,
                    name=name or "SparseMatMul")


# --- reductions -----------------------------------------------------------------------------
def _pick(new: Any, old: Any, new_name: str, old_name: str) -> Any:
    if new is not None and old is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'.")
    return new if new is not None else old


def _reduce(op_type: str, input_tensor: Any, axis: Any, keepdims: Any, name: str | None,
            reduction_indices: Any, keep_dims: Any, dtype: Any = None) -> Tensor:
    axis = _pick(axis, reduction_indices, "axis", "reduction_indices")
    keepdims = bool(_pick(keepdims, keep_dims, "keepdims", "keep_dims") or False)
    x = _tensor(input_tensor, "input_tensor", dtype_hint=dtype)
    all_axes = axis is None
    if all_axes:
        rank = x.shape.ndims
        if rank:
            axis = make_const(np.arange(rank, dtype=np.int32), "Const")
        else:  # TF's _ReductionDims: rank 0 takes the runtime path too
            r = make_const(np.array(0, np.int32), "Rank") if rank == 0 else apply_op("Rank", name="Rank", input=x)
            axis = range(0, r)
    out = _op(op_type, name or op_type, input=x, reduction_indices=axis, keep_dims=keepdims)
    if not keepdims and all_axes and out.shape.ndims is None:
        out.set_shape(())
    return out


def _reducer(op_type: str, public: str, doc: str, dtype: Any = None) -> Any:
    def fn(input_tensor: Any, axis: Any = None, keepdims: Any = None, name: str | None = None,
           reduction_indices: Any = None, keep_dims: Any = None) -> Tensor:
        return _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices,
                       keep_dims, dtype)

    fn.__name__ = fn.__qualname__ = public
    fn.__doc__ = (
        f"{doc} over `axis` (all axes when None), dropping them unless `keepdims` "
        f"(`{op_type}`; TF1's `reduction_indices`/`keep_dims` work too).  "
        f"`tf.{public}(x, axis=1)`"
    )
    return fn


reduce_sum = _reducer("Sum", "reduce_sum", "Sum")
reduce_mean = _reducer("Mean", "reduce_mean", "Mean (integer means truncate toward zero)")
reduce_max = _reducer("Max", "reduce_max", "Maximum")
reduce_min = _reducer("Min", "reduce_min", "Minimum")
reduce_prod = _reducer("Prod", "reduce_prod", "Product")
reduce_all = _reducer("All", "reduce_all", "Logical AND", dtypes.bool)
reduce_any = _reducer("Any", "reduce_any", "Logical OR", dtypes.bool)


def reduce_logsumexp(input_tensor: Any, axis: Any = None, keepdims: Any = None,
                     name: str | None = None, reduction_indices: Any = None,
                     keep_dims: Any = None) -> Tensor:
    """log(sum(exp(x))) over `axis`, computed stably by shifting by the (finite) max,
    from the same ops as TensorFlow (Max, IsFinite, SelectV2, StopGradient, Exp, Sum, Log)."""
    axis = _pick(axis, reduction_indices, "axis", "reduction_indices")
    keepdims = bool(_pick(keepdims, keep_dims, "keepdims", "keep_dims") or False)
    with _scope(name, "ReduceLogSumExp", (input_tensor,)) as scope:
        x = _tensor(input_tensor, "input_tensor")
        raw_max = reduce_max(x, axis=axis, keepdims=True)
        finite = apply_op("IsFinite", name="IsFinite", x=raw_max)
        shift = _op("SelectV2", "SelectV2", condition=finite, t=raw_max, e=0)
        my_max = apply_op("StopGradient", name="StopGradient", input=shift)
        result = log(reduce_sum(exp(subtract(x, my_max)), axis=axis, keepdims=keepdims))
        if not keepdims:
            shape = apply_op("Shape", name="Shape", input=result, out_type=dtypes.int32)
            my_max = apply_op("Reshape", name="Reshape", tensor=my_max, shape=shape)
        result = add(result, my_max, name=scope)
        if not keepdims and axis is None and result.shape.ndims is None:
            result.set_shape(())
        return result


def count_nonzero(input_tensor: Any = None, axis: Any = None, keepdims: Any = None,
                  dtype: Any = dtypes.int64, name: str | None = None,
                  reduction_indices: Any = None, keep_dims: Any = None,
                  input: Any = None) -> Tensor:  # noqa: A002 - TF's name
    """Number of nonzero elements over `axis`, as `dtype` (int64)."""
    input_tensor = _pick(input, input_tensor, "input", "input_tensor")
    keepdims = _pick(keepdims, keep_dims, "keepdims", "keep_dims")
    axis = _pick(axis, reduction_indices, "axis", "reduction_indices")
    with _scope(name, "count_nonzero", (input_tensor,)):
        x = _tensor(input_tensor, "input")
        zero = make_const(np.zeros((), x.dtype.as_numpy_dtype), "zeros")
        nz = cast(not_equal(x, zero), dtypes.int64)
        return cast(reduce_sum(nz, axis=axis, keepdims=keepdims), dtype)


def _arg(op_type: str, input: Any, axis: Any, name: Any, dimension: Any, output_type: Any) -> Tensor:
    axis = _pick(axis, dimension, "axis", "dimension")
    if axis is None:
        axis = 0
    return _op(op_type, name or op_type, input=input, dimension=axis,
               output_type=dtypes.as_dtype(output_type))


def argmax(input: Any, axis: Any = None, name: str | None = None, dimension: Any = None,  # noqa: A002
           output_type: Any = dtypes.int64) -> Tensor:
    """Index of the largest value along `axis` (default 0), as int64 (`ArgMax`)."""
    return _arg("ArgMax", input, axis, name, dimension, output_type)


def argmin(input: Any, axis: Any = None, name: str | None = None, dimension: Any = None,  # noqa: A002
           output_type: Any = dtypes.int64) -> Tensor:
    """Index of the smallest value along `axis` (default 0), as int64 (`ArgMin`)."""
    return _arg("ArgMin", input, axis, name, dimension, output_type)


def arg_max(input: Any, dimension: Any, output_type: Any = dtypes.int64,  # noqa: A002
            name: str | None = None) -> Tensor:
    """`ArgMax` as TensorFlow 1.x's generated `tf.arg_max`: `dimension` is required."""
    return _arg("ArgMax", input, dimension, name, None, output_type)


def arg_min(input: Any, dimension: Any, output_type: Any = dtypes.int64,  # noqa: A002
            name: str | None = None) -> Tensor:
    """`ArgMin` as TensorFlow 1.x's generated `tf.arg_min`: `dimension` is required."""
    return _arg("ArgMin", input, dimension, name, None, output_type)


def _scan(op_type: str, x: Any, axis: Any, exclusive: bool, reverse: bool, name: Any) -> Tensor:
    with _scope(name, op_type, (x,)) as scope:
        x = _tensor(x, "x")
        return apply_op(op_type, name=scope, x=x, axis=axis, exclusive=exclusive, reverse=reverse)


def cumsum(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
           name: str | None = None) -> Tensor:
    """Running sum along `axis` (`Cumsum`).  `tf.cumsum([1, 2, 3])` is [1, 3, 6]."""
    return _scan("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
            name: str | None = None) -> Tensor:
    """Running product along `axis` (`Cumprod`)."""
    return _scan("Cumprod", x, axis, exclusive, reverse, name)


# --- clip_by_value, range ---------------------------------------------------------------------
def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any, name: str | None = None) -> Tensor:
    """min(max(t, lo), hi), built from Minimum and Maximum; the result keeps t's shape."""
    with _scope(name, "clip_by_value", (t, clip_value_min, clip_value_max)) as scope:
        values = _tensor(t, "t")
        t_min = minimum(values, clip_value_max)
        values.shape.merge_with(t_min.shape)
        t_max = maximum(t_min, clip_value_min, name=scope)
        values.shape.merge_with(t_max.shape)
        return t_max


_RANGE_ORDER = [dtypes.int32, dtypes.int64, dtypes.float16, dtypes.float32, dtypes.float64]


def range(start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None,  # noqa: A001
          name: str = "range") -> Tensor:
    """[start, start + delta, ...) up to `limit` (`Range`).  The dtype is the widest of
    the arguments' (int32 < int64 < float32 < float64) unless given.  `tf.range(5)`"""
    if limit is None:
        start, limit = 0, start
    with _scope(name, "Range", (start, limit, delta)) as scope:
        dt = None if dtype is None else dtypes.as_dtype(dtype)
        args = [
            v if isinstance(v, Tensor) else convert_to_tensor(v, dtype=dt, name=n)
            for v, n in ((start, "start"), (limit, "limit"), (delta, "delta"))
        ]
        if dt is None:
            for a in args:
                if a.dtype.base_dtype not in _RANGE_ORDER:
                    raise TypeError(
                        f"Range arguments must be of dtypes {[d.name for d in _RANGE_ORDER]}, "
                        f"got {a.dtype.base_dtype.name}"
                    )
            dt = max((a.dtype.base_dtype for a in args), key=_RANGE_ORDER.index)
        s, lim, d = (cast(a, dt) for a in args)
        return apply_op("Range", name=scope, start=s, limit=lim, delta=d)


def linspace(start: Any, stop: Any, num: Any, name: str | None = None, axis: int = 0) -> Tensor:
    """`num` evenly spaced values from `start` to `stop` inclusive (`tf.linspace`)."""
    if axis != 0:
        raise NotImplementedError("linspace with axis != 0 is not supported yet")
    with _scope(name, "linspace", (start, stop, num)) as scope:
        a = convert_to_tensor(start, name="start", preferred_dtype=dtypes.float32)
        b = convert_to_tensor(stop, name="stop", dtype=a.dtype)
        n = convert_to_tensor(num, name="num", preferred_dtype=dtypes.int32)
        return apply_op("LinSpace", name=scope, start=a, stop=b, num=n)


lin_space = linspace
