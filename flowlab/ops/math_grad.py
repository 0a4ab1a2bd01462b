"""Gradient functions of the core and math ops, and the helpers they share.

Each function has TensorFlow's signature, `fn(op, *output_grads) -> input grads`, and
builds the same formula TensorFlow's `math_grad.py` builds (so the numbers agree to
rounding).  The unary elementwise ops and the fused grad ops are in
unary_math_grad.py.  Binary elementwise ops reduce their gradient back to each input's shape
(`unbroadcast`): statically when both shapes are known, else through the
BroadcastGradientArgs op declared here (TensorFlow's op and semantics: the axes along
which each input was broadcast).
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops, slicing
from flowlab.ops.builder import apply_op
from flowlab.ops.const_fold import constant_evaluator, constant_value
from flowlab.ops.constant_op import constant
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.op_def import op_def
from flowlab.ops.unary_math_grad import _conj, _with_dep

__all__: list[str] = []


# --- BroadcastGradientArgs ----------------------------------------------------------
def broadcast_reduction_axes(sx: list[int], sy: list[int]) -> tuple[list[int], list[int]]:
    """TensorFlow's BCast reduction indices: the axes (of the broadcast result) that
    each input's gradient must be summed over.  ValueError if they do not broadcast."""
    n = max(len(sx), len(sy))
    px, py = [1] * (n - len(sx)) + list(sx), [1] * (n - len(sy)) + list(sy)
    if all(d == 1 for d in px + py):
        return list(range(n)), list(range(n))
    rx: list[int] = []
    ry: list[int] = []
    for i, (a, b) in enumerate(zip(px, py)):
        if a == 1 and b == 1:
            continue
        if a != b and a != 1 and b != 1:
            raise ValueError(f"Incompatible shapes: {list(sx)} vs. {list(sy)}")
        if a == 1:
            rx.append(i)
        if b == 1:
            ry.append(i)
    return rx, ry


def _bga_shape(op: Operation) -> list[Any]:
    for t in op.inputs:
        if t.shape.ndims not in (None, 1):
            raise ValueError(f"Shape must be rank 1 but is rank {t.shape.ndims}")
    return [TensorShape([None]), TensorShape([None])]


op_def("BroadcastGradientArgs", inputs=["s0: T", "s1: T"], outputs=["r0: T", "r1: T"],
       attrs=["T: {int32, int64} = int32"], shape_fn=_bga_shape,
       doc="The reduction axes of the gradients of two broadcast inputs.")
not_differentiable("BroadcastGradientArgs")


@constant_evaluator("BroadcastGradientArgs")
def _bga_value(op: Operation) -> Any:
    return None  # a two-output op: folded by its consumers' static paths instead


def broadcast_gradient_args(s0: Tensor, s1: Tensor, name: str = "BroadcastGradientArgs") -> list[Tensor]:
    return apply_op("BroadcastGradientArgs", s0=s0, s1=s1, name=name)


# --- shared helpers -----------------------------------------------------------------
def _static(t: Tensor) -> list[int] | None:
    s = t.shape
    return s.as_list() if s.is_fully_defined() else None


def _reduce_to(grad: Any, axes: Any, shape: Any) -> Any:
    return array_ops.reshape(math_ops.reduce_sum(grad, axes), shape)


def partial_reduction_axes(sx: list[int | None], sy: list[int | None]) -> tuple[list[int], list[int]] | None:
    """The reduction axes decided from partially known shapes, or None when an unknown
    dimension might be a broadcast 1.  Summing over an axis where an input has size 1
    is always harmless, so the only undecidable case is an unknown dimension facing a
    dimension other than a known (or missing) 1."""
    n = max(len(sx), len(sy))
    px: list[int | None] = [1] * (n - len(sx)) + list(sx)
    py: list[int | None] = [1] * (n - len(sy)) + list(sy)
    mx = [i < n - len(sx) for i in range(n)]
    my = [i < n - len(sy) for i in range(n)]
    r: tuple[list[int], list[int]] = ([], [])
    for i in range(n):
        for k, (a, b, missing) in enumerate(((px[i], py[i], mx[i]), (py[i], px[i], my[i]))):
            if a is None:
                if b == 1:
                    continue
                return None
            if a == 1 and (missing or b != 1):
                if not missing and b == 1:
                    continue
                r[k].append(i)
    return r


def infer_reduction_axes(sx: Any, sy: Any) -> tuple[list[int], list[int]] | None:
    """TensorFlow's _InferGradientReductionAxes: the axes each input was surely
    broadcast along, from partially known shapes; None when it depends on the data."""
    if sx is None or sy is None:
        return None
    n = max(len(sx), len(sy))
    px, py = [1] * (n - len(sx)) + list(sx), [1] * (n - len(sy)) + list(sy)
    rx: list[int] = []
    ry: list[int] = []
    for i, (a, b) in enumerate(zip(px, py)):
        if a == 1 and b != 1:
            rx.append(i)
        elif b == 1 and a != 1:
            ry.append(i)
        elif a is None or b is None:
            return None
    return rx, ry


def unbroadcast(op: Operation, gx: Any, gy: Any, grad: Any = None) -> tuple[Any, Any]:
    """Sum the gradients of a broadcasting binary op back to its inputs' shapes, with
    the nodes TensorFlow's SmartBroadcastGradientArgs builds: `Shape`/`Shape_1` (Consts
    when static), reduction axes decided statically where the shapes allow, else a
    BroadcastGradientArgs.  `grad` given: TensorFlow's fast path (Add, Sub, ...) that
    builds nothing when x, y and grad have one fully known shape."""
    x, y = op.inputs[0], op.inputs[1]
    if isinstance(grad, Tensor):
        s = _static(x)
        if s is not None and s == _static(y) == _static(grad):
            return gx, gy
    return reduce_gradient_args(x, y, gx, gy)


def reduce_gradient_args(x: Tensor, y: Tensor, gx: Any, gy: Any) -> tuple[Any, Any]:
    """TensorFlow's _ReduceGradientArgs: `gx` and `gy`, gradients of a value of the
    broadcast shape of `x` and `y`, summed back to the shapes of `x` and `y` (either may
    be None).  SelectV2's gradient calls it once per branch, with the output as `y`."""
    if gx is None and gy is None:
        return gx, gy
    tsx, tsy = array_ops.shape(x), array_ops.shape(y)
    px, py = x.shape.as_tuple(), y.shape.as_tuple()
    axes = infer_reduction_axes(px, py)
    if axes is None:
        rx, ry = broadcast_gradient_args(tsx, tsy)
        must_x = must_y = True
    else:
        assert px is not None and py is not None
        rx, ry = list(axes[0]), list(axes[1])  # Python lists, converted as TensorFlow does
        # As TensorFlow's must_reduce: an input of lower rank than the result needs its
        # Reshape even with nothing to sum ([1, 2] + [2]: b's gradient is [2], not [1, 2]).
        must_x = bool(axes[0]) or len(px) < len(py)
        must_y = bool(axes[1]) or len(py) < len(px)
    if gx is not None and must_x:
        gx = _reduce_to(gx, rx, tsx)
    if gy is not None and must_y:
        gy = _reduce_to(gy, ry, tsy)
    return gx, gy


# Const, Placeholder, NoOp, Identity and PlaceholderWithDefault are declared with the
# array ops (flowlab.ops.array_grad), as TensorFlow does.


# --- binary arithmetic --------------------------------------------------------------
def _add_grad(op: Operation, grad: Any) -> Any:
    return unbroadcast(op, grad, grad, grad)


gradient("AddV2")(_add_grad)
gradient("Add")(_add_grad)


@gradient("Sub")
def _sub_grad(op: Operation, grad: Any) -> Any:
    if isinstance(grad, Tensor):
        s = _static(op.inputs[0])
        if s is not None and s == _static(op.inputs[1]) == _static(grad):
            return grad, -grad  # TensorFlow's fast path
    return unbroadcast(op, grad, -grad)


@gradient("Mul")
def _mul_grad(op: Operation, grad: Any) -> Any:
    x, y = op.inputs
    if isinstance(grad, Tensor) and grad.dtype.base_dtype in (dtypes.int32, dtypes.float32):
        s = _static(x)
        if s is not None and s == _static(y) == _static(grad):
            # TensorFlow's fast path for equal static shapes: the grad comes first in both.
            return math_ops.multiply(grad, y), math_ops.multiply(grad, x)
    x, y = _conj(x), _conj(y)
    return unbroadcast(op, math_ops.multiply(grad, y), math_ops.multiply(x, grad))


def _div_grad(op: Operation, grad: Any) -> Any:
    x, y = (_conj(t) for t in op.inputs)
    div = math_ops.realdiv if op.type == "RealDiv" else _div
    return unbroadcast(op, div(grad, y), grad * div(div(-x, y), y))


def _div(x: Any, y: Any) -> Any:
    return apply_op("Div", x=x, y=y, name="div")


gradient("RealDiv")(_div_grad)
gradient("Div")(_div_grad)


@gradient("FloorDiv")
def _floor_div_grad(op: Operation, grad: Any) -> Any:
    return [None, None]


not_differentiable("TruncateDiv")
not_differentiable("TruncateMod")


@gradient("FloorMod")
def _floor_mod_grad(op: Operation, grad: Any) -> Any:
    x, y = op.inputs
    return unbroadcast(op, grad, grad * -math_ops.floordiv(x, y))


@gradient("Pow")
def _pow_grad(op: Operation, grad: Any) -> Any:
    # TensorFlow's nodes, in its order: mul, sub, Pow, mul_1; Greater, Select, Log, ...
    x, y = op.inputs
    cx, cy = _conj(x), _conj(y)
    gx = grad * cy * math_ops.pow(cx, cy - 1)
    mask = math_ops.not_equal(cx, 0) if x.dtype.is_complex else cx > 0
    safe_x = array_ops.where(mask, cx, array_ops.ones_like(x))
    log_x = array_ops.where(mask, math_ops.log(safe_x), array_ops.zeros_like(x))
    return unbroadcast(op, gx, grad * _conj(op.outputs[0]) * log_x)


def _max_min_grad(op: Operation, grad: Any) -> Any:
    x, y = op.inputs
    select = math_ops.greater_equal if op.type == "Maximum" else math_ops.less_equal
    xmask = select(x, y)
    zeros = array_ops.zeros_like(grad)
    return unbroadcast(op, array_ops.where_v2(xmask, grad, zeros), array_ops.where_v2(xmask, zeros, grad))


gradient("Maximum")(_max_min_grad)
gradient("Minimum")(_max_min_grad)


@gradient("SquaredDifference")
def _squared_difference_grad(op: Operation, grad: Any) -> Any:
    x, y = op.inputs
    with _with_dep(grad):
        two = constant(2, dtype=grad.dtype.base_dtype, name="scalar")  # as scalar_mul
        x_grad = math_ops.multiply(two, grad) * (x - y)
    return unbroadcast(op, x_grad, -x_grad, grad)


@gradient("Atan2")
def _atan2_grad(op: Operation, grad: Any) -> Any:
    y, x = op.inputs
    with _with_dep(grad):
        grad_inv = grad / (math_ops.square(x) + math_ops.square(y))
        # The op's inputs are (y, x): unbroadcast pairs gradients with inputs in order.
        return unbroadcast(op, x * grad_inv, -y * grad_inv)


# --- casts, sums of lists, products ----------------------------------------------------
_CASTABLE = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


@gradient("Cast")
def _cast_grad(op: Operation, grad: Any) -> Any:
    src = op.get_attr("SrcT").base_dtype
    dst = op.get_attr("DstT").base_dtype
    if src in _CASTABLE and dst in _CASTABLE:
        return [math_ops.cast(grad, src)]
    return [None]


@gradient("AddN")
def _add_n_grad(op: Operation, grad: Any) -> Any:
    return [grad] * len(op.inputs)


@gradient("MatMul")
def _matmul_grad(op: Operation, grad: Any) -> Any:
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    a, b = (_conj(t) for t in op.inputs)
    mm = math_ops.matmul
    if not ta and not tb:
        return mm(grad, b, transpose_b=True), mm(a, grad, transpose_a=True)
    if not ta and tb:
        return mm(grad, b), mm(grad, a, transpose_a=True)
    if ta and not tb:
        return mm(b, grad, transpose_b=True), mm(a, grad)
    return mm(b, grad, transpose_a=True, transpose_b=True), mm(grad, a, transpose_a=True, transpose_b=True)


@gradient("SparseMatMul")
def _sparse_matmul_grad(op: Operation, grad: Any) -> Any:
    """MatMul's gradient through SparseMatMul products, carrying the operands' sparsity
    hints (and ReluGrad's output as sparse), as TensorFlow builds it."""
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    a, b = op.inputs
    sparse = {id(a): op.get_attr("a_is_sparse"), id(b): op.get_attr("b_is_sparse"),
              id(grad): grad.op.type == "ReluGrad"}

    def smm(t1: Any, t2: Any, out_dtype: Any, transpose_a: bool = False,
            transpose_b: bool = False) -> Any:
        s1, s2 = sparse[id(t1)], sparse[id(t2)]
        if transpose_b:
            t2, transpose_b = array_ops.transpose(t2), False
        prod = math_ops.sparse_matmul(t1, t2, transpose_a=transpose_a, transpose_b=transpose_b,
                                      a_is_sparse=s1, b_is_sparse=s2)
        return prod if prod.dtype == out_dtype else math_ops.cast(prod, out_dtype)

    da, db = a.dtype, b.dtype
    if not ta and not tb:
        return smm(grad, b, da, transpose_b=True), smm(a, grad, db, transpose_a=True)
    if not ta and tb:
        return smm(grad, b, da), smm(grad, a, db, transpose_a=True)
    if ta and not tb:
        return smm(b, grad, da, transpose_b=True), smm(a, grad, db)
    return (smm(b, grad, da, transpose_a=True, transpose_b=True),
            smm(grad, a, db, transpose_a=True, transpose_b=True))


def _bmm(x: Any, y: Any, adj_x: bool = False, adj_y: bool = False) -> Tensor:
    return apply_op("BatchMatMulV2", x=x, y=y, adj_x=adj_x, adj_y=adj_y, name="MatMul")


@gradient("BatchMatMulV2")
def _batch_matmul_grad(op: Operation, grad: Any) -> Any:
    x, y = op.inputs
    ax, ay = op.get_attr("adj_x"), op.get_attr("adj_y")
    if not ax and not ay:
        gx, gy = _bmm(grad, y, False, True), _bmm(x, grad, True, False)
    elif not ax and ay:
        gx, gy = _bmm(grad, y, False, False), _bmm(grad, x, True, False)
    elif ax and not ay:
        gx, gy = _bmm(y, grad, False, True), _bmm(x, grad, False, False)
    else:
        gx, gy = _bmm(y, grad, True, True), _bmm(grad, x, True, True)
    sx, sy = _static(x), _static(y)
    if sx is not None and sy is not None:
        if sx[:-2] == sy[:-2]:
            return gx, gy
        rx, ry = broadcast_reduction_axes(sx[:-2], sy[:-2])
        if rx:
            gx = _reduce_to(gx, np.array(rx, np.int32), sx)
        if ry:
            gy = _reduce_to(gy, np.array(ry, np.int32), sy)
        return gx, gy
    tsx, tsy = array_ops.shape(x), array_ops.shape(y)
    bx = slicing.strided_slice(tsx, [0], [-2])
    by = slicing.strided_slice(tsy, [0], [-2])
    rx, ry = broadcast_gradient_args(bx, by)
    return _reduce_to(gx, rx, tsx), _reduce_to(gy, ry, tsy)


# --- reductions -------------------------------------------------------------------------
def _static_axes(op: Operation) -> list[int] | None:
    rank = op.inputs[0].shape.ndims
    axes = constant_value(op.inputs[1])
    if rank is None or axes is None:
        return None
    return sorted({int(a) % rank if rank else 0 for a in np.asarray(axes).reshape(-1).tolist()})


def _kept_shape(op: Operation) -> tuple[Any, Any]:
    """(output shape with reduced axes kept as 1, input shape), static when possible."""
    sx = _static(op.inputs[0])
    axes = _static_axes(op)
    if sx is not None and axes is not None:
        kept = [1 if i in axes else d for i, d in enumerate(sx)]
        return np.array(kept, np.int32), np.array(sx, np.int32)
    shape = array_ops.shape(op.inputs[0])
    rank = op.inputs[0].shape.ndims
    if axes is not None and rank is not None:
        mask = np.array([i in axes for i in range(rank)])
        if mask.all():
            return np.ones(rank, np.int32), shape
        return array_ops.where_v2(mask, array_ops.ones_like(shape), shape), shape
    rank_t = array_ops.rank(op.inputs[0])
    axes_t = math_ops.cast(array_ops.reshape(op.inputs[1], [-1]), dtypes.int32)
    axes_t = math_ops.floormod(axes_t + rank_t, math_ops.maximum(rank_t, 1))
    hit = math_ops.equal(array_ops.expand_dims(math_ops.range(rank_t), 1), array_ops.expand_dims(axes_t, 0))
    mask_t = math_ops.reduce_any(hit, axis=1)
    kept = array_ops.where_v2(mask_t, array_ops.ones_like(shape), shape)
    return kept, shape


def _tile_back(op: Operation, grad: Any) -> Any:
    """`grad` of the reduced shape tiled back to the input's shape."""
    kept, shape = _kept_shape(op)
    g = array_ops.reshape(grad, kept)
    if isinstance(kept, np.ndarray):
        if isinstance(shape, np.ndarray):
            multiples = np.array([s // max(k, 1) for s, k in zip(shape.tolist(), kept.tolist())], np.int32)
            if not multiples.size or (multiples == 1).all():
                return g
            return array_ops.tile(g, multiples)
        if (kept == 1).all():
            return array_ops.tile(g, shape)  # reduced over every axis
    return array_ops.tile(g, math_ops.floordiv(shape, math_ops.maximum(kept, 1)))


_REDUCED_SHAPES: weakref.WeakKeyDictionary[Any, set[Any]] = weakref.WeakKeyDictionary()


def _sum_back(op: Operation, grad: Any) -> Any:
    """TensorFlow's _SumGrad where the input's rank and the axes are static: a Reshape
    and a Tile (always, even by ones), the multiples a `Const` when every axis is
    reduced (in order), else `Tile/multiples`; other cases through _tile_back."""
    shape = op.inputs[0].shape.as_tuple()
    axes = constant_value(op.inputs[1])
    if shape is not None and axes is not None:
        rank = len(shape)
        axes = np.asarray(axes)
        if np.array_equal(axes, np.arange(rank)):
            g = array_ops.reshape(grad, [1] * rank)
            if None in shape:
                return array_ops.tile(g, array_ops.shape(op.inputs[0]))
            return array_ops.tile(g, constant(list(shape), dtype=dtypes.int32))
        if None not in shape:
            hit = {int(a) % rank for a in axes.reshape(-1).tolist()} if rank else set()
            kept = [1 if i in hit else int(d) for i, d in enumerate(shape)]
            scaling = [int(d) // max(k, 1) for d, k in zip(shape, kept)]
            cache = _REDUCED_SHAPES.setdefault(op.graph, set())
            key = (tuple(shape), tuple(axes.reshape(-1).tolist()))
            if key not in cache:
                # TensorFlow computes the multiples once per graph and key with ops it
                # then folds (_SafeShapeDiv): they stay in its graph, unread.
                cache.add(key)
                math_ops.floordiv(np.array(shape, np.int32),
                                  math_ops.maximum(np.array(kept, np.int32), np.int32(1)))
            return array_ops.tile(array_ops.reshape(grad, kept), scaling)
    if shape is not None and None in shape:
        # TensorFlow's general path: reshape to reduced_shape, then BroadcastTo.
        ins = array_ops.shape(op.inputs[0])
        if not op.get_attr("keep_dims"):
            grad = array_ops.reshape(grad, _reduced_shape(ins, op.inputs[1]))
        return array_ops.broadcast_to(grad, ins)
    return _tile_back(op, grad)


def _reduced_shape(ins: Tensor, axes: Tensor) -> Tensor:
    """TensorFlow's math_ops.reduced_shape for a dynamic input shape: the shape with
    the reduced axes set to 1, through a DynamicStitch."""
    rank = array_ops.size(ins, out_type=axes.dtype)
    axes = math_ops.floormod(math_ops.add(axes, rank, name="add"), rank, name="mod")
    ones = array_ops.ones(array_ops.shape(axes), dtype=ins.dtype)
    return slicing.dynamic_stitch([math_ops.range(rank), axes], [ins, ones])


@gradient("Sum")
def _sum_grad(op: Operation, grad: Any) -> Any:
    return [_sum_back(op, grad), None]


@gradient("Mean")
def _mean_grad(op: Operation, grad: Any) -> Any:
    sum_grad = _sum_back(op, grad)
    sx, sy = _static(op.inputs[0]), _static(op.outputs[0])
    if sx is not None and sy is not None:
        factor = max(int(np.prod(sx, dtype=np.int64)) // max(int(np.prod(sy, dtype=np.int64)), 1), 1)
        return [math_ops.truediv(sum_grad, constant(factor, dtype=sum_grad.dtype.base_dtype)), None]
    # As TensorFlow: the product of the input's dimensions along the reduced axes.
    ins = array_ops.shape(op.inputs[0])
    rank = array_ops.size(ins)
    axes = math_ops.cast(op.inputs[1], rank.dtype)
    axes = math_ops.floormod(math_ops.add(axes, rank, name="add"), rank, name="mod")
    factor = math_ops.reduce_prod(slicing.gather(ins, axes))
    return [math_ops.truediv(sum_grad, math_ops.cast(factor, sum_grad.dtype)), None]


def _min_max_grad(op: Operation, grad: Any) -> Any:
    kept, shape = _kept_shape(op)
    x = op.inputs[0]
    y = array_ops.reshape(op.outputs[0], kept)
    g = array_ops.reshape(grad, kept)
    indicators = math_ops.cast(math_ops.equal(y, x), g.dtype)
    num_selected = array_ops.reshape(math_ops.reduce_sum(indicators, op.inputs[1]), kept)
    return [math_ops.divide(indicators, num_selected) * g, None]


gradient("Max")(_min_max_grad)
gradient("Min")(_min_max_grad)


@gradient("Prod")
def _prod_grad(op: Operation, grad: Any) -> Any:
    """The product of all other elements, from exclusive cumulative products on both
    sides (exact where x has zeros), as TensorFlow computes it."""
    x = op.inputs[0]
    rank = x.shape.ndims
    axes = _static_axes(op)
    g = _tile_back(op, grad)
    if rank is None or axes is None:
        # Unknown rank or axes: the quotient form (wrong where x has zeros).
        y = array_ops.reshape(op.outputs[0], _kept_shape(op)[0])
        return [g * y / x, None]
    if rank == 0:
        return [g, None]
    other = [i for i in range(rank) if i not in axes]
    perm = axes + other
    shape = array_ops.shape(x)
    permuted = array_ops.transpose(x, perm)
    permuted_shape = array_ops.shape(permuted)
    reduced_num = math_ops.reduce_prod(slicing.gather(shape, np.array(axes, np.int32)))
    other_num = math_ops.reduce_prod(slicing.gather(shape, np.array(other, np.int32)))
    reshaped = array_ops.reshape(permuted, array_ops.stack([reduced_num, other_num]))
    left = math_ops.cumprod(reshaped, axis=0, exclusive=True)
    right = math_ops.cumprod(reshaped, axis=0, exclusive=True, reverse=True)
    y = array_ops.reshape(_conj(left) * _conj(right), permuted_shape)
    inv = np.argsort(perm).astype(np.int32)
    out = g * array_ops.transpose(y, inv)
    return [array_ops.reshape(out, shape), None]


# --- scans --------------------------------------------------------------------------------
@gradient("Cumsum")
def _cumsum_grad(op: Operation, grad: Any) -> Any:
    return [math_ops.cumsum(grad, op.inputs[1], exclusive=op.get_attr("exclusive"),
                            reverse=not op.get_attr("reverse")), None]


@gradient("Cumprod")
def _cumprod_grad(op: Operation, grad: Any) -> Any:
    # As TensorFlow: divides by x with 0 where x is 0 (so it is wrong at zeros of x).
    x, axis = op.inputs
    ex, rev = op.get_attr("exclusive"), op.get_attr("reverse")
    prod = math_ops.cumprod(x, axis, exclusive=ex, reverse=rev)
    out = math_ops.cumsum(prod * grad, axis, exclusive=ex, reverse=not rev)
    zero = math_ops.equal(x, array_ops.zeros_like(x))
    safe = array_ops.where_v2(zero, array_ops.ones_like(x), x)
    return [array_ops.where_v2(zero, array_ops.zeros_like(out), math_ops.divide(out, safe)), None]
