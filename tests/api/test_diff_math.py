"""`tf.math` and its top-level aliases beside TensorFlow 1.x (tests/difftest.py): the
element-wise functions, comparisons, logic, reductions, scans, special functions and
the small helpers, each run under both with values and dtypes compared, fed through
placeholders so the kernels (not constant folding) produce the results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(22)
UNIT = np.array([[-0.9, -0.25, 0.0], [0.3, 0.5, 0.95]])  # inside (-1, 1)
POS = np.array([[0.5, 1.0, 2.5], [3.0, 7.25, 10.0]])  # positive
ABOVE1 = np.array([[1.0, 1.5, 2.0], [3.0, 7.25, 10.0]])  # >= 1
REAL = np.array([[-3.7, -1.5, -0.5], [0.5, 2.5, 4.2]])  # halves: round-half-to-even
SPECIAL = np.array([np.inf, -np.inf, np.nan, 0.0, -1.5, 3.0])


def _fed(tf: Any, fn: Callable[[Any], Any], x: np.ndarray) -> Any:
    p = tf.placeholder(tf.as_dtype(x.dtype), x.shape)
    return fn(p), {p: x}


Fn = Callable[[Any], Callable[..., Any]]
UNARY: list[tuple[str, Fn, np.ndarray]] = [
    ("math.abs", lambda tf: tf.math.abs, REAL),
    ("math.acos", lambda tf: tf.math.acos, UNIT),
    ("acos", lambda tf: tf.acos, UNIT),
    ("math.asin", lambda tf: tf.math.asin, UNIT),
    ("asin", lambda tf: tf.asin, UNIT),
    ("atan", lambda tf: tf.atan, REAL),
    ("acosh", lambda tf: tf.acosh, ABOVE1),
    ("asinh", lambda tf: tf.asinh, REAL),
    ("atanh", lambda tf: tf.atanh, UNIT),
    ("math.ceil", lambda tf: tf.math.ceil, REAL),
    ("ceil", lambda tf: tf.ceil, REAL),
    ("math.floor", lambda tf: tf.math.floor, REAL),
    ("rint", lambda tf: tf.rint, REAL),
    ("math.round", lambda tf: tf.math.round, REAL),
    ("math.cos", lambda tf: tf.math.cos, REAL),
    ("cosh", lambda tf: tf.cosh, REAL),
    ("sinh", lambda tf: tf.sinh, REAL),
    ("math.sin", lambda tf: tf.math.sin, REAL),
    ("math.tan", lambda tf: tf.math.tan, UNIT),
    ("tan", lambda tf: tf.tan, UNIT),
    ("math.tanh", lambda tf: tf.math.tanh, REAL),
    ("math.exp", lambda tf: tf.math.exp, REAL),
    ("expm1", lambda tf: tf.expm1, REAL),
    ("math.log", lambda tf: tf.math.log, POS),
    ("erf", lambda tf: tf.erf, REAL),
    ("erfc", lambda tf: tf.erfc, REAL),
    ("math.digamma", lambda tf: tf.math.digamma, POS),
    ("math.sigmoid", lambda tf: tf.math.sigmoid, REAL),
    ("math.log_sigmoid", lambda tf: tf.math.log_sigmoid, REAL),
    ("math.softsign", lambda tf: tf.math.softsign, REAL),
    ("math.sign", lambda tf: tf.math.sign, REAL),
    ("math.sqrt", lambda tf: tf.math.sqrt, POS),
    ("math.square", lambda tf: tf.math.square, REAL),
    ("math.negative", lambda tf: tf.math.negative, REAL),
    ("math.conj", lambda tf: tf.math.conj, REAL),
    ("math.softmax", lambda tf: tf.math.softmax, REAL),
    ("math.log_softmax", lambda tf: tf.math.log_softmax, REAL),
    ("math.l2_normalize", lambda tf: tf.math.l2_normalize, REAL),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,x", UNARY, ids=[u[0] for u in UNARY])
def test_unary(tf1: Any, name: str, fn: Fn, x: np.ndarray, dtype: type) -> None:
    assert_same(tf1, lambda tf: _fed(tf, fn(tf), x.astype(dtype)), rtol=2e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize(
    "fn",
    [
        lambda tf: tf.math.abs,
        lambda tf: tf.math.sign,
        lambda tf: tf.math.negative,
        lambda tf: tf.math.square,
    ],
    ids=["abs", "sign", "negative", "square"],
)
def test_unary_integers(tf1: Any, fn: Fn, dtype: type) -> None:
    x = np.array([[-7, 0, 3], [5, -2, 9]], dtype)
    assert_same(tf1, lambda tf: _fed(tf, fn(tf), x))


PREDICATES = [
    ("math.is_finite", lambda tf: tf.math.is_finite),
    ("is_finite", lambda tf: tf.is_finite),
    ("math.is_inf", lambda tf: tf.math.is_inf),
    ("is_inf", lambda tf: tf.is_inf),
    ("math.is_nan", lambda tf: tf.math.is_nan),
    ("is_nan", lambda tf: tf.is_nan),
]


@pytest.mark.parametrize("name,fn", PREDICATES, ids=[p[0] for p in PREDICATES])
def test_predicates(tf1: Any, name: str, fn: Fn) -> None:
    for dtype in (np.float32, np.float64, np.float16):
        x = SPECIAL.astype(dtype)
        assert_same(tf1, lambda tf, x=x: _fed(tf, fn(tf), x))


def test_predicates_refuse_integers(tf1: Any) -> None:
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(TypeError) as info:
            tf.math.is_nan(tf.constant([1, 2]))
        msgs.append(type(info.value).__name__)
    assert msgs[0] == msgs[1]


BINARY: list[tuple[str, Fn, list[Any]]] = [
    ("math.add", lambda tf: tf.math.add, [np.float32, np.int32, np.int64]),
    ("math.subtract", lambda tf: tf.math.subtract, [np.float64, np.int32]),
    ("math.multiply", lambda tf: tf.math.multiply, [np.float32, np.int64]),
    ("math.divide", lambda tf: tf.math.divide, [np.float32, np.int32]),
    ("math.truediv", lambda tf: tf.math.truediv, [np.float64, np.int32, np.int64]),
    ("math.floordiv", lambda tf: tf.math.floordiv, [np.float32, np.int32]),
    ("floor_div", lambda tf: tf.floor_div, [np.float32, np.int32, np.int64]),
    ("math.mod", lambda tf: tf.math.mod, [np.float32, np.int32]),
    ("math.pow", lambda tf: tf.math.pow, [np.float32, np.int32]),
    ("math.maximum", lambda tf: tf.math.maximum, [np.float32, np.int64]),
    ("math.minimum", lambda tf: tf.math.minimum, [np.float64, np.int32]),
    ("math.atan2", lambda tf: tf.math.atan2, [np.float32, np.float64]),
    ("math.equal", lambda tf: tf.math.equal, [np.float32, np.int32]),
    ("math.not_equal", lambda tf: tf.math.not_equal, [np.float32, np.int64]),
    ("math.less", lambda tf: tf.math.less, [np.float32, np.int32]),
    ("math.less_equal", lambda tf: tf.math.less_equal, [np.float64, np.int32]),
    ("less_equal", lambda tf: tf.less_equal, [np.float32]),
    ("math.greater", lambda tf: tf.math.greater, [np.float32, np.int32]),
    ("math.greater_equal", lambda tf: tf.math.greater_equal, [np.float64, np.int64]),
    ("greater_equal", lambda tf: tf.greater_equal, [np.int32]),
]


@pytest.mark.parametrize("name,fn,dtypes", BINARY, ids=[b[0] for b in BINARY])
def test_binary_broadcast(tf1: Any, name: str, fn: Fn, dtypes: list[Any]) -> None:
    x = np.array([[7, -7, 9], [-9, 4, 5]])
    y = np.array([2, -3, 4])
    for dtype in dtypes:
        xs, ys = x.astype(dtype), y.astype(dtype)
        if name == "math.pow" and np.dtype(dtype).kind == "i":
            xs, ys = np.abs(xs), np.abs(ys)

        def build(tf: Any, xs: np.ndarray = xs, ys: np.ndarray = ys) -> Any:
            a = tf.placeholder(tf.as_dtype(xs.dtype), [2, 3])
            b = tf.placeholder(tf.as_dtype(ys.dtype), [3])
            return [fn(tf)(a, b), fn(tf)(b, a)], {a: xs, b: ys}

        assert_same(tf1, build, rtol=2e-6)


def test_binary_with_python_scalars(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant([[1.5, -2.0], [3.0, 4.5]])
        i = tf.constant([7, -8])
        return [
            tf.math.add(x, 2),
            tf.math.multiply(x, 3),
            tf.math.subtract(x, 1.5),
            tf.math.divide(i, 2),
            tf.math.truediv(i, 3),
            tf.math.floordiv(i, 3),
            tf.math.mod(i, 3),
            tf.math.pow(x, 2.0),
            tf.math.maximum(i, 0),
            tf.math.minimum(x, 0.0),
            tf.math.scalar_mul(2.5, x),
            tf.math.scalar_mul(3, i),
        ]

    assert_same(tf1, build)


def test_binary_dtype_mismatch_is_an_error(tf1: Any) -> None:
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(TypeError) as info:
                tf.math.add(tf.constant([1.0]), tf.constant([1]))
            # A Python int on the left is converted first, so the float is the mismatch.
            with pytest.raises(TypeError) as left:
                tf.math.multiply(3, tf.constant([1.5]))
            msgs.append((str(info.value).split(" (at ")[0], str(left.value).split(" (at ")[0]))
    assert msgs[0] == msgs[1]


def test_div_no_nan(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant([[1.0, -2.0, 0.0], [3.0, 4.0, 5.0]])
        y = tf.constant([0.0, 2.0, 0.0])
        xd = tf.constant([1.5, 2.5], tf.float64)
        return [tf.div_no_nan(x, y), tf.div_no_nan(xd, tf.constant([0.0, 0.5], tf.float64))]

    assert_same(tf1, build)


def test_integer_division_by_zero(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        p = tf.placeholder(tf.int32, [2])
        return tf.math.floordiv(tf.constant([4, 5]), p), {p: np.array([1, 0], np.int32)}

    assert_same_error(tf1, build)


LOGIC = [
    ("math.logical_and", lambda tf: tf.math.logical_and),
    ("math.logical_or", lambda tf: tf.math.logical_or),
    ("math.logical_xor", lambda tf: tf.math.logical_xor),
]


@pytest.mark.parametrize("name,fn", LOGIC, ids=[x[0] for x in LOGIC])
def test_logic(tf1: Any, name: str, fn: Fn) -> None:
    a = np.array([[True, True], [False, False]])
    b = np.array([True, False])

    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.bool, [2, 2])
        y = tf.placeholder(tf.bool, [2])
        return [fn(tf)(x, y), tf.math.logical_not(x)], {x: a, y: b}

    assert_same(tf1, build)


def test_add_n(tf1: Any) -> None:
    arrays = [RS.randn(2, 3).astype(np.float32) for _ in range(3)]

    def build(tf: Any) -> Any:
        xs = [tf.constant(a) for a in arrays]
        ints = [tf.constant([1, 2]), tf.constant([3, 4])]
        return [tf.math.add_n(xs), tf.math.add_n(ints), tf.math.add_n([xs[0]])]

    assert_same(tf1, build)


REDUCE: list[tuple[str, Fn]] = [
    ("math.reduce_sum", lambda tf: tf.math.reduce_sum),
    ("math.reduce_mean", lambda tf: tf.math.reduce_mean),
    ("math.reduce_max", lambda tf: tf.math.reduce_max),
    ("math.reduce_min", lambda tf: tf.math.reduce_min),
    ("math.reduce_prod", lambda tf: tf.math.reduce_prod),
    ("math.reduce_logsumexp", lambda tf: tf.math.reduce_logsumexp),
]
X3 = RS.randn(2, 3, 4)


@pytest.mark.parametrize("name,fn", REDUCE, ids=[r[0] for r in REDUCE])
def test_reductions(tf1: Any, name: str, fn: Fn) -> None:
    def build(tf: Any) -> Any:
        p = tf.placeholder(tf.float32, [2, 3, 4])
        f = fn(tf)
        return [
            f(p),
            f(p, 0),
            f(p, axis=[0, 2]),
            f(p, -1, keepdims=True),
            f(p, axis=1, keep_dims=True),
            f(p, reduction_indices=[1]),
        ], {p: X3.astype(np.float32)}

    assert_same(tf1, build, rtol=1e-5)
    if name != "math.reduce_logsumexp":
        ints = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
        assert_same(tf1, lambda tf: [fn(tf)(tf.constant(ints)), fn(tf)(tf.constant(ints), 1)])


def test_reductions_of_empty(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        p = tf.placeholder(tf.float32, [0, 3])
        return [
            tf.math.reduce_sum(p, 0),
            tf.math.reduce_prod(p, 0),
            tf.math.reduce_mean(p),
            tf.math.reduce_max(p, 0),
            tf.math.reduce_min(p, 0),
        ], {p: np.zeros([0, 3], np.float32)}

    assert_same(tf1, build)


def test_boolean_reductions(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        p = tf.placeholder(tf.bool, [2, 3])
        return [
            tf.math.reduce_all(p),
            tf.math.reduce_any(p),
            tf.math.reduce_all(p, 1),
            tf.math.reduce_any(p, 0, keepdims=True),
        ], {p: np.array([[True, False, True], [True, True, True]])}

    assert_same(tf1, build)


def test_count_nonzero(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
        return [
            tf.math.count_nonzero(x),
            tf.math.count_nonzero(x, 0),
            tf.math.count_nonzero(x, axis=1, keepdims=True),
            tf.math.count_nonzero(x, dtype=tf.int32),
            tf.math.count_nonzero(tf.constant([True, False, True])),
        ]

    assert_same(tf1, build)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans(tf1: Any, exclusive: bool, reverse: bool) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        i = tf.constant([1, 2, 3, 4], tf.int64)
        kw = {"exclusive": exclusive, "reverse": reverse}
        return [
            tf.math.cumsum(x, 1, **kw),
            tf.math.cumprod(x, 0, **kw),
            tf.math.cumsum(i, **kw),
            tf.math.cumprod(i, **kw),
        ]

    assert_same(tf1, build)


def test_arg_reductions(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant([[1.0, 5.0, 5.0], [7.0, -2.0, 7.0]])
        return [
            tf.math.argmax(x, 1),
            tf.math.argmin(x, 0),
            tf.math.argmax(x, 0, output_type=tf.int32),
            tf.math.argmin(x, axis=1, output_type=tf.int32),
            tf.arg_max(x, 1),
            tf.arg_min(x, 1),
            tf.arg_max(x, 0, output_type=tf.int32),
        ]

    assert_same(tf1, build)


def test_top_k_and_in_top_k(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant([[1.0, 5.0, 3.0, 5.0], [7.0, -2.0, 0.5, 4.0]])
        values, indices = tf.math.top_k(x, 2)
        v3, i3 = tf.math.top_k(tf.constant([3, 1, 2]), k=3, sorted=True)
        hit = tf.math.in_top_k(x, tf.constant([3, 2]), 2)
        return [values, indices, v3, i3, hit]

    assert_same(tf1, build)


def test_top_k_too_large(tf1: Any) -> None:
    names = []
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(ValueError) as info:
            tf.math.top_k(tf.constant([1.0, 2.0]), 3)
        names.append(type(info.value).__name__)
    assert names[0] == names[1]


def test_special_functions(tf1: Any) -> None:
    a = np.array([0.5, 1.0, 2.5, 4.0])
    x = np.array([0.25, 1.5, 2.0, 3.0])

    def build(tf: Any) -> Any:
        out = []
        for dt in (tf.float32, tf.float64):
            ta, tx = tf.constant(a, dt), tf.constant(x, dt)
            out += [
                tf.math.igamma(ta, tx),
                tf.math.igammac(ta, tx),
                tf.math.betainc(ta, tf.constant(x + 0.5, dt), tf.constant(x / 4.0, dt)),
                tf.math.zeta(tf.constant(x + 1.5, dt), ta),
                tf.math.polygamma(tf.constant([0.0, 1.0, 2.0, 3.0], dt), tx),
            ]
        return out

    assert_same(tf1, build, rtol=1e-5, atol=1e-6)


def test_confusion_matrix(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        labels = tf.constant([1, 2, 4, 0, 2])
        preds = tf.constant([2, 2, 4, 0, 1])
        return [
            tf.math.confusion_matrix(labels, preds),
            tf.math.confusion_matrix(
                labels,
                preds,
                num_classes=6,
                dtype=tf.float32,
                weights=tf.constant([1.0, 2.0, 0.5, 1.0, 3.0]),
            ),
        ]

    assert_same(tf1, build)


def test_invert_permutation(tf1: Any) -> None:
    assert_same(
        tf1,
        lambda tf: [
            tf.math.invert_permutation(tf.constant([3, 4, 0, 2, 1])),
            tf.math.invert_permutation(tf.constant([1, 0], tf.int64)),
        ],
    )
