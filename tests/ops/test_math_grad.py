"""Gradients of the math ops: finite-difference TABLE entries (checked by the registry
walk in test_gradients.py) and differential tests of composite expressions against
TensorFlow's tf.gradients."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from flowlab.ops.builder import apply_op
from flowlab.ops.gradients_impl import gradients
from flowlab.ops.math_grad import broadcast_reduction_axes
from tests.difftest import assert_same
from tests.ops.gradient_check import grad_case

RS = np.random.RandomState(42)
V = np.array([[0.3, -1.2, 0.7], [1.6, -0.4, 2.1]])  # no zeros, no ties
W = np.array([[1.1, 0.45, -0.8], [-1.3, 0.9, 0.6]])
ROW = np.array([0.7, -0.35, 1.4])
POS = np.array([[0.3, 1.2, 0.7], [1.6, 0.4, 2.1]])
UNIT = np.array([[0.3, -0.6, 0.7], [0.15, -0.4, 0.55]])


# --- binary ---------------------------------------------------------------------------------
@grad_case("AddV2", V, ROW)
def _(tf: Any, x: Any, y: Any) -> Any:
    return x + y


@grad_case("Add", V, np.array(0.5))
def _(tf: Any, x: Any, y: Any) -> Any:
    return apply_op("Add", x=x, y=y, name="Add")


@grad_case("Sub", ROW, V)
def _(tf: Any, x: Any, y: Any) -> Any:
    return x - y


@grad_case("Mul", V, ROW.reshape(1, 3))
def _(tf: Any, x: Any, y: Any) -> Any:
    return x * y


@grad_case("RealDiv", V, POS)
def _(tf: Any, x: Any, y: Any) -> Any:
    return x / y


@grad_case("Div", V, ROW)
def _(tf: Any, x: Any, y: Any) -> Any:
    return apply_op("Div", x=x, y=y, name="Div")


@grad_case("FloorDiv", V, np.array([0.9, 1.1, 0.8]))
def _(tf: Any, x: Any, y: Any) -> Any:
    return tf.floordiv(x, y) + x


@grad_case("FloorMod", np.array([1.3, 2.7, -0.4]), np.array([1.1, 1.9, 0.9]))
def _(tf: Any, x: Any, y: Any) -> Any:
    return tf.floormod(x, y)


@grad_case("Pow", POS, np.array([[1.5], [-0.7]]))
def _(tf: Any, x: Any, y: Any) -> Any:
    return tf.pow(x, y)


@grad_case("Maximum", V, W)
def _(tf: Any, x: Any, y: Any) -> Any:
    return tf.maximum(x, y)


@grad_case("Minimum", V, ROW)
def _(tf: Any, x: Any, y: Any) -> Any:
    return tf.minimum(x, y)


@grad_case("SquaredDifference", V, ROW)
def _(tf: Any, x: Any, y: Any) -> Any:
    return tf.squared_difference(x, y)


@grad_case("Atan2", V, W)
def _(tf: Any, y: Any, x: Any) -> Any:
    return tf.atan2(y, x)


@grad_case("AddN", V, W, V * 0.5)
def _(tf: Any, a: Any, b: Any, c: Any) -> Any:
    return tf.add_n([a, b * c, c])


# --- unary ------------------------------------------------------------------------------------
for _op, _fn, _val in [
    ("Neg", "negative", V), ("Abs", "abs", V), ("Square", "square", V), ("Exp", "exp", V),
    ("Expm1", "expm1", V), ("Log", "log", POS), ("Log1p", "log1p", POS), ("Tanh", "tanh", V),
    ("Sigmoid", "sigmoid", V), ("Sin", "sin", V), ("Cos", "cos", V), ("Tan", "tan", UNIT),
    ("Asin", "asin", UNIT), ("Acos", "acos", UNIT), ("Atan", "atan", V), ("Sinh", "sinh", V),
    ("Cosh", "cosh", V), ("Erf", "erf", V), ("Sqrt", "sqrt", POS), ("Rsqrt", "rsqrt", POS),
    ("Reciprocal", "reciprocal", V),
]:
    grad_case(_op, _val)(lambda tf, x, _fn=_fn: getattr(tf, _fn)(x))

for _op, _fn in [("Sign", "sign"), ("Round", "round"), ("Floor", "floor"), ("Ceil", "ceil")]:
    grad_case(_op, V)(lambda tf, x, _fn=_fn: getattr(tf, _fn)(x) * x)

for _op in ("TanhGrad", "SigmoidGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad"):
    grad_case(_op, POS, W)(lambda tf, y, dy, _op=_op: apply_op(_op, y=y, dy=dy, name=_op))


@grad_case("Conj", V)
def _(tf: Any, x: Any) -> Any:
    z = tf.cast(x, tf.complex128) * tf.constant(1 + 2j, tf.complex128)
    return tf.cast(tf.conj(z) * tf.constant(0.5 + 1j, tf.complex128), tf.float64)


@grad_case("ComplexAbs", V, W)
def _(tf: Any, x: Any, y: Any) -> Any:
    z = tf.cast(x, tf.complex128) + tf.cast(y, tf.complex128) * tf.constant(1j, tf.complex128)
    return apply_op("ComplexAbs", x=z, Tout=tf.float64, name="ComplexAbs")


@grad_case("Cast", V)
def _(tf: Any, x: Any) -> Any:
    c = tf.cast(tf.cast(x, tf.complex128) * tf.constant(2 - 1j, tf.complex128), tf.float64)
    return c + tf.cast(tf.cast(x, tf.int32), tf.float64)


# --- matrix products --------------------------------------------------------------------------
for _ta in (False, True):
    for _tb in (False, True):
        a = RS.randn(3, 2) if _ta else RS.randn(2, 3)
        b = RS.randn(4, 3) if _tb else RS.randn(3, 4)
        grad_case("MatMul", a, b)(
            lambda tf, x, y, _ta=_ta, _tb=_tb: tf.matmul(x, y, transpose_a=_ta, transpose_b=_tb))

for _ax in (False, True):
    for _ay in (False, True):
        a = RS.randn(2, 1, 3, 2) if _ax else RS.randn(2, 1, 2, 3)
        b = RS.randn(3, 4, 3) if _ay else RS.randn(3, 3, 4)
        grad_case("BatchMatMulV2", a, b)(
            lambda tf, x, y, _ax=_ax, _ay=_ay: tf.matmul(x, y, adjoint_a=_ax, adjoint_b=_ay))


# --- reductions and scans --------------------------------------------------------------------
X3 = RS.permutation(24).reshape(2, 3, 4) / 7.0 - 1.5  # distinct values
grad_case("Sum", X3)(lambda tf, x: tf.reduce_sum(x, [0, -1]))
grad_case("Sum", X3)(lambda tf, x: tf.reduce_sum(x, 1, keepdims=True))
grad_case("Mean", X3)(lambda tf, x: tf.reduce_mean(x, [-2]))
grad_case("Mean", X3)(lambda tf, x: tf.reduce_mean(x))
grad_case("Max", X3)(lambda tf, x: tf.reduce_max(x, [1, 2]))
grad_case("Min", X3)(lambda tf, x: tf.reduce_min(x, 0, keepdims=True))
grad_case("Prod", V)(lambda tf, x: tf.reduce_prod(x, 1))
grad_case("Prod", np.array([[0.5, 0.0, 2.0], [1.5, -1.0, 0.7]]))(lambda tf, x: tf.reduce_prod(x, -1))
grad_case("Prod", X3[:, :2, :2])(lambda tf, x: tf.reduce_prod(x, [0, 2], keepdims=True))
for _ex in (False, True):
    for _rev in (False, True):
        grad_case("Cumsum", X3)(lambda tf, x, _ex=_ex, _rev=_rev: tf.cumsum(x, 1, exclusive=_ex, reverse=_rev))
        grad_case("Cumprod", V)(lambda tf, x, _ex=_ex, _rev=_rev: tf.cumprod(x, -1, exclusive=_ex, reverse=_rev))


@grad_case("IdentityN", V)
def _(tf: Any, x: Any) -> Any:
    return apply_op("IdentityN", input=[x * 2.0, x], name="IdentityN")[0]


# --- BroadcastGradientArgs ------------------------------------------------------------------
@pytest.mark.parametrize(
    "a,b,ra,rb",
    [([2, 1], [2, 1], [], []), ([2, 3], [3], [], [0]), ([1, 1], [1], [0, 1], [0, 1]),
     ([], [2, 3], [0, 1], []), ([2, 1, 4], [3, 1], [1], [0, 2]), ([5], [1], [], [0]),
     ([0, 1], [1, 3], [1], [0])],
)
def test_broadcast_gradient_args(a: list[int], b: list[int], ra: list[int], rb: list[int]) -> None:
    assert broadcast_reduction_axes(a, b) == (ra, rb)
    sa, sb = fl.placeholder(fl.int32, [None]), fl.placeholder(fl.int32, [None])
    r = apply_op("BroadcastGradientArgs", s0=sa, s1=sb, name="bga")
    with fl.Session() as s:
        got = s.run(r, {sa: a, sb: b})
    assert [v.tolist() for v in got] == [ra, rb]
    assert got[0].dtype == np.int32


def test_broadcast_gradient_args_incompatible() -> None:
    sa, sb = fl.placeholder(fl.int32, [None]), fl.placeholder(fl.int32, [None])
    r = apply_op("BroadcastGradientArgs", s0=sa, s1=sb, name="bga")
    with fl.Session() as s, pytest.raises(fl.errors.InvalidArgumentError, match=r"Incompatible shapes: \[2\] vs. \[3\]"):
        s.run(r, {sa: [2], sb: [3]})


# --- differential tests against TensorFlow -------------------------------------------------
def _grads(tf: Any, ys: Any, xs: Any, **kw: Any) -> list[Any]:
    fn = getattr(tf, "gradients", None) if tf is not fl else None
    out = (fn or gradients)(ys, xs, **kw)
    return [tf.constant("none") if g is None else g for g in out]


def _ph(tf: Any, shape: Any, dtype: Any = None) -> Any:
    return tf.placeholder(dtype or tf.float32, shape)


def test_composite_elementwise(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x, y = _ph(tf, [2, 3]), _ph(tf, [3])
        z = tf.tanh(x * y) + tf.exp(-x) / (1.0 + tf.square(y)) - tf.sqrt(tf.abs(x) + 1.0)
        z = tf.maximum(z, 0.1 * x) + tf.pow(tf.abs(y) + 0.5, 1.5) + tf.sigmoid(x) * tf.log1p(tf.abs(y))
        return _grads(tf, z, [x, y]), {x: V.astype(np.float32), y: ROW.astype(np.float32)}

    assert_same(tf1, build, rtol=1e-5)


def test_composite_reductions_and_matmul(tf1: Any) -> None:
    wv = RS.randn(3, 4).astype(np.float32)

    def build(tf: Any) -> Any:
        x, w = _ph(tf, [None, 3]), _ph(tf, [3, 4])
        h = tf.matmul(x, w)
        loss = tf.reduce_mean(tf.square(h)) + tf.reduce_max(h, axis=1)[0] + tf.reduce_sum(tf.reduce_prod(x, 0))
        loss += tf.reduce_min(tf.cumsum(h, axis=1, reverse=True))
        return _grads(tf, loss, [x, w]), {x: V.astype(np.float32), w: wv}

    assert_same(tf1, build, rtol=1e-5)


def test_composite_float64_and_batch_matmul(tf1: Any) -> None:
    a, b = RS.randn(2, 3, 4), RS.randn(4, 2)

    def build(tf: Any) -> Any:
        x, y = tf.constant(a), tf.constant(b)
        z = tf.matmul(x, y)
        loss = tf.reduce_sum(tf.sin(z) * tf.cos(z)) + tf.reduce_sum(tf.squared_difference(z, 1.0))
        return _grads(tf, [loss, tf.reduce_sum(tf.atan2(x, 2.0))], [x, y])

    assert_same(tf1, build, rtol=1e-10)


def test_int_cast_and_floor_give_none(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant([1.5, 2.5])
        return _grads(tf, tf.cast(tf.cast(x, tf.int32), tf.float32) + tf.floor(x), [x])

    assert_same(tf1, build)


def test_reduction_dynamic_shapes(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, None)
        axis = tf.placeholder(tf.int32, [None])
        loss = tf.reduce_sum(tf.reduce_mean(x, axis) * 2.0) + tf.reduce_sum(tf.reduce_max(x, axis))
        return _grads(tf, loss, [x]), {x: V.astype(np.float32), axis: [-1]}

    assert_same(tf1, build)


def test_unbroadcast_dynamic(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x, y = tf.placeholder(tf.float32, [None, 3]), tf.placeholder(tf.float32, None)
        return _grads(tf, x * y - y / (x + 3.0), [x, y]), {x: V.astype(np.float32), y: [[2.0], [0.5]]}

    assert_same(tf1, build)


@pytest.mark.parametrize(
    "xs,ys,xv,yv",
    [([None, 3], [3], (2, 3), (3,)), ([None, 1], [1, 3], (2, 1), (1, 3)),
     ([None, None], [3], (2, 3), (3,)), ([2, None], [None, 1], (2, 3), (2, 1)),
     (None, [3], (2, 3), (3,)), ([None], [], (4,), ()), ([1, None], [1], (1, 3), (1,))],
)
def test_unbroadcast_partial_shapes(tf1: Any, xs: Any, ys: Any, xv: Any, yv: Any) -> None:
    a, b = np.asarray(RS.randn(*xv), np.float32), np.asarray(RS.randn(*yv), np.float32)

    def build(tf: Any) -> Any:
        x, y = tf.placeholder(tf.float32, xs), tf.placeholder(tf.float32, ys)
        return _grads(tf, x * y + tf.maximum(x, y), [x, y]), {x: a, y: b}

    assert_same(tf1, build, rtol=1e-6)


def test_partial_reduction_axes() -> None:
    from flowlab.ops.math_grad import partial_reduction_axes as p

    assert p([None, 5], [5]) == ([], [0])
    assert p([None, 5], [None, 5]) is None  # either None might be a broadcast 1
    assert p([None, 1], [1, 3]) == ([1], [0])
    assert p([2, 1], [2, 1]) == ([], [])
    assert p([], [None]) == ([0], [])


def test_cumprod_with_zero_as_tensorflow(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant([2.0, 0.0, 3.0])
        return _grads(tf, tf.cumprod(x), [x]) + _grads(tf, tf.cumprod(x, exclusive=True, reverse=True), [x])

    assert_same(tf1, build)


# --- the gradient graph is TensorFlow's, node for node ----------------------------------------
def _grad_graph(tf: Any, fn: Any) -> dict[str, tuple[str, tuple[str, ...]]]:
    g = tf.Graph()
    with g.as_default():
        fn(tf)
    return {op.name: (op.type, tuple(t.name for t in op.inputs)
                      + tuple("^" + c.name for c in op.control_inputs))
            for op in g.get_operations() if op.name.startswith("gradients")}


def _mul_same_shapes(tf: Any) -> None:
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    y = tf.placeholder(tf.float32, [2, 3], name="y")
    tf.gradients(x * y, [x, y])


def _mul_float64(tf: Any) -> None:
    # No fast path for float64: TensorFlow builds mul(x, grad) for y's gradient.
    x = tf.placeholder(tf.float64, [2, 3], name="x")
    y = tf.placeholder(tf.float64, [2, 3], name="y")
    tf.gradients(x * y, [x, y])


def _mul_unknown_shapes(tf: Any) -> None:
    x = tf.placeholder(tf.float32, None, name="x")
    y = tf.placeholder(tf.float32, None, name="y")
    tf.gradients(x * y, [x, y])


def _broadcasting(tf: Any) -> None:
    # Static, partially known and unknown shapes; nothing to sum but a lower rank.
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    b = tf.placeholder(tf.float32, [3], name="b")
    p = tf.placeholder(tf.float32, [None, 3], name="p")
    u = tf.placeholder(tf.float32, None, name="u")
    one = tf.placeholder(tf.float32, [1, 3], name="one")
    ys = [x + b, x - b, x * b, x / b, tf.maximum(x, b), p * b, tf.squared_difference(x, x),
          x - x, x + x, one * x]
    tf.gradients([tf.reduce_sum(y) for y in ys], [x, b, p, one])
    tf.gradients(p + u, [p, u])


def _pow_and_partial_sums(tf: Any) -> None:
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    p = tf.placeholder(tf.float32, [None, 3], name="p")
    # (ones_like of a static shape is `ones_like/Shape/shape_as_tensor` in TensorFlow: array_ops)
    ys = [p ** 2.0, tf.pow(p, x), tf.reduce_sum(p, 1), tf.reduce_sum(p, [0], keepdims=True)]
    tf.gradients([tf.reduce_sum(y) for y in ys], [x, p])


def _empty_list_constants(tf: Any) -> None:
    # [1, 3] + [3]: b's gradient sums over no axis (`reduce_sum(g, [])`); a scalar's
    # Sum gradient reshapes to `[]`.
    b = tf.placeholder(tf.float32, [3], name="b")
    one = tf.placeholder(tf.float32, [1, 3], name="one")
    s = tf.placeholder(tf.float32, [], name="s")
    tf.gradients([tf.reduce_sum(one + b), tf.reduce_sum(s), tf.reduce_mean(s)], [b, s])


def _reductions(tf: Any) -> None:
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    p = tf.placeholder(tf.float32, [None, 3], name="p")
    s = tf.placeholder(tf.float32, [], name="s")
    ys = [tf.reduce_sum(x), tf.reduce_sum(x, 1), tf.reduce_sum(x, [1, 0]),
          tf.reduce_sum(x, -1, keepdims=True), tf.reduce_sum(x, 0), tf.reduce_sum(p),
          tf.reduce_mean(x), tf.reduce_mean(x, 0), tf.reduce_sum(x * s), tf.reduce_mean(p)]
    tf.gradients(ys, [x, p, s])


GRAPH_PROGRAMS = {f.__name__[1:]: f for f in (_mul_same_shapes, _mul_float64, _mul_unknown_shapes,
                                               _broadcasting, _reductions, _pow_and_partial_sums,
                                               _empty_list_constants)}
@pytest.mark.parametrize("name", sorted(GRAPH_PROGRAMS))
def test_gradient_graph_is_tensorflows(tf1: Any, name: str) -> None:
    want = _grad_graph(tf1, GRAPH_PROGRAMS[name])
    got = _grad_graph(fl, GRAPH_PROGRAMS[name])
    diff = [f"{n}: tf {want.get(n)} fl {got.get(n)}" for n in sorted(set(want) | set(got))
            if want.get(n) != got.get(n)]
    assert not diff, "\n".join(diff)
