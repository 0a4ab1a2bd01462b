"""The math op family against NumPy and against TensorFlow 1.x (tests/difftest.py):
values, dtypes, broadcasting, op names/types/attrs, build-time and runtime errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowlab as fl
from flowlab import errors
from tests.difftest import assert_same, assert_same_error


def ops_of(mod, build):
    g = mod.Graph()
    with g.as_default():
        build(mod)
    return [(op.name, op.type) for op in g.get_operations()]


def assert_same_ops(tf1, build):
    """Same op names and types, in the same order, as TensorFlow builds."""
    assert ops_of(fl, build) == ops_of(tf1, build)


def run(t, feed=None):
    with fl.Session() as s:
        return s.run(t, feed)


A = np.array([[1.5, -2.0, 3.25], [0.5, 4.0, -1.0]])
B = np.array([2.0, -0.5, 1.25])
IA = np.array([[7, -7, 9], [-9, 4, 5]])
IB = np.array([2, -3, 4])

BINARY = {
    "add": ["float32", "float64", "int32", "int64", "uint8", "complex64"],
    "subtract": ["float32", "float64", "int32", "int64", "int8", "complex128"],
    "multiply": ["float32", "float16", "int32", "int64", "uint16"],
    "realdiv": ["float32", "float64", "complex64"],
    "truediv": ["float32", "float64", "int32", "int64", "int16", "uint8"],
    "divide": ["float32", "int32"],
    "div": ["float32", "float64", "int32", "int64"],
    "floordiv": ["float32", "float64", "int32", "int64", "int8"],
    "floormod": ["float32", "float64", "int32", "int64"],
    "mod": ["float32", "int32"],
    "truncatediv": ["int32", "int64"],
    "truncatemod": ["float32", "int32", "int64"],
    "pow": ["float32", "float64", "int32", "int64"],
    "maximum": ["float32", "float64", "int32", "int64", "uint8"],
    "minimum": ["float32", "float64", "int32", "int64", "int16"],
    "squared_difference": ["float32", "float64", "int32", "int64"],
    "less": ["float32", "int32", "int64"],
    "less_equal": ["float32", "float64", "int32"],
    "greater": ["float32", "int32", "uint8"],
    "greater_equal": ["float64", "int64"],
    "equal": ["float32", "int32", "int64"],
    "not_equal": ["float32", "int32", "float64"],
    "atan2": ["float32", "float64"],
}


def _operands(dtype):
    if np.dtype(dtype).kind in "iu":
        a, b = IA, IB
        if np.dtype(dtype).kind == "u":
            a, b = np.abs(a), np.abs(b)
        return a.astype(dtype), b.astype(dtype)
    return A.astype(dtype), B.astype(dtype)


@pytest.mark.parametrize("fn", sorted(BINARY))
def test_binary_broadcast_matches_tensorflow(tf1, fn):
    def build(tf):
        out = []
        for dtype in BINARY[fn]:
            a, b = _operands(dtype)
            if fn == "pow" and np.dtype(dtype).kind in "iu":
                a, b = np.abs(a) % 4, np.abs(b)
            out += [getattr(tf, fn)(tf.constant(a), tf.constant(b)),
                    getattr(tf, fn)(tf.constant(b), tf.constant(a)),
                    getattr(tf, fn)(tf.constant(a[0, 0]), tf.constant(b))]
        return out

    assert_same(tf1, build, rtol=1e-3 if "float16" in BINARY[fn] else 1e-6)


@pytest.mark.parametrize("fn", ["add", "subtract", "multiply", "maximum", "pow", "floordiv", "div",
                                "truediv", "less", "equal"])
def test_python_scalars_on_either_side(tf1, fn):
    x = np.array([1.0, 2.0, 3.0], np.float32)
    assert_same(tf1, lambda tf: [getattr(tf, fn)(tf.constant(x), 2), getattr(tf, fn)(2.0, tf.constant(x)),
                                 getattr(tf, fn)(tf.constant([4, 5]), 3)])


UNARY = {
    "negative": ["float32", "float64", "int32", "int64", "complex64"],
    "abs": ["float32", "float64", "int32", "int64", "int8", "complex64"],
    "sign": ["float32", "float64", "int32", "int64", "complex128"],
    "square": ["float32", "float64", "int32", "int64", "uint8", "complex64"],
    "sqrt": ["float32", "float64", "float16", "complex64"],
    "rsqrt": ["float32", "float64"],
    "exp": ["float32", "float64", "complex64"],
    "expm1": ["float32", "float64"],
    "log": ["float32", "float64"],
    "log1p": ["float32", "float64"],
    "tanh": ["float32", "float64", "float16"],
    "sigmoid": ["float32", "float64", "float16", "complex64"],
    "sin": ["float32", "float64"],
    "cos": ["float32", "float64"],
    "tan": ["float32", "float64"],
    "asin": ["float32", "float64"],
    "acos": ["float32"],
    "atan": ["float32", "float64"],
    "sinh": ["float32"],
    "cosh": ["float64"],
    "erf": ["float32", "float64"],
    "floor": ["float32", "float64", "float16"],
    "ceil": ["float32", "float64"],
    "round": ["float32", "float64", "int32", "int64"],
    "reciprocal": ["float32", "float64"],
    "is_nan": ["float32", "float64"],
    "is_inf": ["float32"],
    "is_finite": ["float64"],
    "conj": ["complex64", "float32"],
}

U = np.array([[-2.5, -1.5, -0.5, 0.0], [0.5, 1.5, 2.5, 0.25]])
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 0.75])


def _unary_input(fn, dtype):
    kind = np.dtype(dtype).kind
    if kind in "iu":
        return np.array([[-3, -1, 0], [2, 5, 7]]).astype(dtype)
    if kind == "c":
        return (U + 0.5j * U[::-1]).astype(dtype)
    if fn in ("asin", "acos", "atan"):
        return (U / 3).astype(dtype)
    if fn in ("log", "sqrt", "rsqrt", "log1p"):
        return np.abs(U).astype(dtype) + np.asarray(0.1, dtype)
    return U.astype(dtype)


@pytest.mark.parametrize("fn", sorted(UNARY))
def test_unary_matches_tensorflow(tf1, fn):
    tol = 1e-3 if "float16" in UNARY[fn] else 1e-5
    assert_same(tf1, lambda tf: [getattr(tf, fn)(tf.constant(_unary_input(fn, d))) for d in UNARY[fn]],
                rtol=tol, atol=tol)


def test_unary_special_values_like_tensorflow(tf1):
    fns = ["exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "reciprocal", "floor", "ceil", "round",
           "sign", "is_nan", "is_inf", "is_finite", "square", "log1p", "expm1", "abs", "negative"]
    assert_same(tf1, lambda tf: [getattr(tf, fn)(tf.constant(SPECIAL.astype(np.float32))) for fn in fns])


def test_unary_builds_tensorflow_ops(tf1):
    assert_same_ops(tf1, lambda tf: [tf.negative(tf.constant(1.0)), tf.sigmoid(1.0, name="sig"),
                                     tf.round(tf.constant([1.5])), tf.abs(tf.constant(1 + 2j)),
                                     tf.log1p(2.0), tf.logical_not(True)])


def test_round_is_bankers_rounding():
    x = fl.constant([0.5, 1.5, 2.5, -0.5, -1.5, 3.7])
    np.testing.assert_array_equal(run(fl.round(x)), np.array([0, 2, 2, -0, -2, 4], np.float32))


def test_integer_division_semantics():
    x, y = fl.constant([-7, 7, -7, 7]), fl.constant([2, -2, -2, 2])
    fd, fm, td, tm, d = run([fl.floordiv(x, y), fl.floormod(x, y), fl.truncatediv(x, y),
                             fl.truncatemod(x, y), fl.div(x, y)])
    np.testing.assert_array_equal(fd, [-4, -4, 3, 3])
    np.testing.assert_array_equal(fm, [1, -1, -1, 1])
    np.testing.assert_array_equal(td, [-3, -3, 3, 3])
    np.testing.assert_array_equal(tm, [-1, 1, -1, 1])
    np.testing.assert_array_equal(d, [-4, -4, 3, 3])
    assert fd.dtype == np.int32 and d.dtype == np.int32


def test_truediv_casts_integers_like_tensorflow(tf1):
    def build(tf):
        return [tf.truediv(tf.constant([7, 8], tf.int8), tf.constant([2, 3], tf.int8)),
                tf.truediv(tf.constant([7], tf.int32), 2), tf.truediv(tf.constant([7], tf.int64), 2),
                tf.divide(tf.constant([1, 2], tf.uint16), tf.constant([3, 3], tf.uint16))]
    out = assert_same(tf1, build)
    assert [o.dtype for o in out] == [np.float32, np.float64, np.float64, np.float32]
    assert_same_ops(tf1, build)


def test_truediv_errors():
    with pytest.raises(TypeError, match="must have the same dtype"):
        fl.truediv(fl.constant([1]), fl.constant([1.0]))
    with pytest.raises(TypeError, match="Invalid dtype"):
        fl.truediv(fl.constant([True]), fl.constant([False]))


def test_div_float_and_int_names(tf1):
    assert_same_ops(tf1, lambda tf: [tf.div(tf.constant([1.0]), 2.0), tf.div(tf.constant([3]), 2),
                                     tf.realdiv(1.0, 2.0), tf.floordiv(5, 2), tf.floormod(5, 2),
                                     tf.mod(5, 2), tf.truncatediv(5, 2), tf.pow(2, 3)])


def test_binary_ops_names_and_consts(tf1):
    assert_same_ops(tf1, lambda tf: [
        tf.add(tf.constant([1.0]), 1), tf.subtract(tf.constant([1.0]), 2.0),
        tf.multiply(3.0, tf.constant([1.0])), tf.maximum(tf.constant([1]), 0, name="relu_like"),
        tf.squared_difference(tf.constant([1.0]), 2.0), tf.add(1, 2), tf.add("a", "b"),
    ])


def test_add_strings(tf1):
    def build(tf):
        p = tf.placeholder(tf.string, [])
        return [tf.add(tf.constant(["ab", "c"]), tf.constant("x")), tf.add("a", "b"), tf.add(p, p),
                tf.equal(p, "q"), tf.not_equal(tf.constant(["q", "r"]), p)], {p: "q"}
    assert_same(tf1, build)


def test_equal_strings_and_bools(tf1):
    assert_same(tf1, lambda tf: [tf.equal(tf.constant(["a", "b"]), "a"),
                                 tf.not_equal(tf.constant([True, False]), True),
                                 tf.equal(tf.constant([[1.0], [2.0]]), tf.constant([1.0, 2.0]))])


def test_equal_attr_and_incompatible_shapes():
    t = fl.equal(fl.constant([1, 2]), fl.constant([1, 2]))
    assert t.op.get_attr("incompatible_shape_error") is True
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3 for 'Equal"):
        fl.equal(fl.constant([1, 2]), fl.constant([1, 2, 3]))


def test_logical_ops(tf1):
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    assert_same(tf1, lambda tf: [tf.logical_and(a, b), tf.logical_or(a, b), tf.logical_not(a),
                                 tf.logical_xor(tf.constant(a), b), tf.logical_and(a, True)])
    assert_same_ops(tf1, lambda tf: tf.logical_xor(tf.constant(a), tf.constant(b)))


def test_logical_requires_bool():
    with pytest.raises(TypeError, match="LogicalAnd"):
        fl.logical_and(fl.constant([1]), fl.constant([0]))


# --- casts -----------------------------------------------------------------------------
CASTS = [
    ([-1.7, 2.9, 0.5, -0.5, 100.0], "float32", "int32"),
    ([-1.7, 2.9, 1e10, np.nan], "float32", "int32"),
    ([-1.7, 2.9, 3e9], "float64", "int64"),
    ([-1, 256, 300], "int32", "uint8"),
    ([-1.0, 0.0, 0.5, np.nan], "float32", "bool"),
    ([True, False], "bool", "float32"),
    ([True, False], "bool", "int64"),
    ([1.5, -2.25], "float32", "complex64"),
    ([1 + 2j, -3.5 - 1j], "complex64", "float32"),
    ([1e300, -1e300, 1.0], "float64", "float32"),
    ([1, 2**40], "int64", "int32"),
    ([0.1, 2.7], "float32", "float16"),
    ([3, -4], "int32", "float64"),
]


def test_cast_matches_tensorflow(tf1):
    with np.errstate(all="ignore"):
        values = [np.array(v).astype(src) for v, src, _ in CASTS]
    assert_same(tf1, lambda tf: [tf.cast(tf.constant(v), dst) for v, (_, _, dst) in zip(values, CASTS)])


def test_cast_attrs_names_and_identity(tf1):
    x = fl.constant([1.0])
    c = fl.cast(x, fl.int32)
    assert c.op.type == "Cast" and c.op.get_attr("SrcT") is fl.float32 and c.op.get_attr("DstT") is fl.int32
    assert c.op.get_attr("Truncate") is False
    assert fl.cast(x, fl.float32) is x
    assert_same_ops(tf1, lambda tf: [tf.cast(1.5, tf.int32), tf.to_float(tf.constant(1)),
                                     tf.to_int32(tf.constant(1.0)), tf.to_int64(tf.constant(1.0)),
                                     tf.to_double(tf.constant(1.0)), tf.cast(tf.constant(1), "float32")])


def test_cast_string_is_unimplemented():
    with pytest.raises(errors.UnimplementedError, match="Cast string to float32 is not supported"):
        run(fl.cast(fl.constant(["1"]), fl.float32))


def test_static_value_of_cast_range_equal():
    from flowlab.ops.const_fold import constant_value

    np.testing.assert_array_equal(constant_value(fl.cast(fl.constant([1.5, 2.5]), fl.int32)), [1, 2])
    np.testing.assert_array_equal(constant_value(fl.range(1, 7, 2)), [1, 3, 5])
    np.testing.assert_array_equal(constant_value(fl.equal(fl.constant([1, 2]), 2)), [False, True])
    np.testing.assert_array_equal(constant_value(fl.not_equal(fl.constant([1, 2]), 2)), [True, False])
    assert constant_value(fl.cast(fl.placeholder(fl.float32), fl.int32)) is None


# --- add_n, scalar_mul, clip_by_value, range -----------------------------------------
def test_add_n(tf1):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_same(tf1, lambda tf: [tf.add_n([a, a, a]), tf.add_n([tf.constant([1, 2]), [3, 4]]),
                                 tf.add_n([tf.constant(2.0)])])
    assert_same_ops(tf1, lambda tf: [tf.add_n([tf.constant(1.0), 2.0]), tf.add_n([tf.constant(1.0)], name="one")])
    t = fl.add_n([fl.constant([1.0]), fl.constant([2.0]), fl.constant([3.0])])
    assert t.op.get_attr("N") == 3 and t.op.get_attr("T") is fl.float32


def test_add_n_errors(tf1):
    with pytest.raises(ValueError, match="at least one Tensor"):
        fl.add_n([])
    with pytest.raises(TypeError, match=r"have types \[float32, int32\] that don't all match"):
        fl.add_n([fl.constant([1.0]), fl.constant([1])])
    with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal, but are 2 and 3"):
        fl.add_n([fl.constant([1.0, 2.0]), fl.constant([1.0, 2.0, 3.0])])
    with pytest.raises(ValueError, match="(?s)Shapes must be equal rank, but are 1 and 0.*'AddN"):
        fl.add_n([fl.constant([1.0, 2.0]), fl.constant(1.0)])
    p, q = fl.placeholder(fl.float32), fl.placeholder(fl.float32)
    with pytest.raises(errors.InvalidArgumentError, match="AddN"):
        run(fl.add_n([p, q]), {p: [1.0, 2.0], q: [1.0]})


def test_scalar_mul(tf1):
    assert_same(tf1, lambda tf: [tf.scalar_mul(2, tf.constant([1.0, 2.0])), tf.scalar_mul(3, tf.constant([1, 2]))])
    assert_same_ops(tf1, lambda tf: tf.scalar_mul(2.0, tf.constant([1.0])))
    with pytest.raises(ValueError, match="must be a 0-D value"):
        fl.scalar_mul([1.0, 2.0], fl.constant([1.0, 2.0]))


def test_clip_by_value(tf1):
    build = lambda tf: [tf.clip_by_value(tf.constant([1.0, 5.0, 9.0]), 2.0, 6.0),  # noqa: E731
                        tf.clip_by_value(tf.constant([1, 5, 9]), 2, 6),
                        tf.clip_by_value(tf.constant([[1.0, 5.0], [7.0, -1.0]]), [0.0, 6.0], 6.5)]
    assert_same(tf1, build)
    assert_same_ops(tf1, build)


def test_clip_by_value_shape_errors():
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        fl.clip_by_value(fl.constant([1.0, 5.0]), fl.constant([2.0, 3.0, 4.0]), 6.0)
    with pytest.raises(ValueError, match="not compatible"):
        fl.clip_by_value(fl.constant([1.0, 5.0]), 0.0, fl.constant([[1.0, 2.0], [3.0, 4.0]]))


RANGES = [
    ((5,), {}), ((1, 5), {}), ((1, 10, 3), {}), ((5, 1, -1), {}), ((1.0, 5), {}), ((5, 1, -1.5), {}),
    ((0, 1, 0.1), {}), ((1, 5), {"dtype": "float64"}), ((1, 5, 2), {"dtype": "float32"}),
    ((3.5,), {}), ((0,), {}), ((2, 2), {}), ((-3, 4, 2), {"dtype": "int64"}), ((0.0, 1.0, 0.3), {}),
]


def test_range_matches_tensorflow(tf1):
    assert_same(tf1, lambda tf: [tf.range(*args, **kwargs) for args, kwargs in RANGES])


def test_range_dtype_inference_and_names(tf1):
    def build(tf):
        return [tf.range(tf.constant(5, tf.int64)), tf.range(tf.constant(1, tf.int64), 5.0),
                tf.range(1, tf.constant(5.0, tf.float64)), tf.range(tf.constant(1), 4, dtype=tf.float32)]
    assert_same(tf1, build)
    assert_same_ops(tf1, build)


def test_range_shapes_and_errors():
    assert fl.range(2, 11, 3).shape.as_list() == [3]
    assert fl.range(fl.placeholder(fl.int32)).shape.as_list() == [None]
    with pytest.raises(ValueError, match="Requires start <= limit when delta > 0: 5/1 for 'range"):
        fl.range(5, 1)
    with pytest.raises(ValueError, match="Requires delta != 0"):
        fl.range(1, 5, 0)
    with pytest.raises(ValueError, match="Requires start >= limit when delta < 0: 1/5"):
        fl.range(1, 5, -1)
    q = fl.placeholder(fl.int32)
    with pytest.raises(errors.InvalidArgumentError, match="Requires start <= limit when delta > 0: 5/3"):
        run(fl.range(q, 3), {q: 5})


def test_range_runtime_error_class_matches_tensorflow(tf1):
    def build(tf):
        q = tf.placeholder(tf.int32)
        return tf.range(q, 3), {q: 5}
    assert_same_error(tf1, build)


# --- reductions -------------------------------------------------------------------------
R = np.array([[[1.5, -2.0, 3.0], [0.25, 4.0, -1.0]], [[2.0, 2.0, -7.5], [1.0, 0.5, 9.0]]], np.float32)
REDUCERS = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"]
AXES = [None, 0, 1, -1, [0, 2], [], (1, -3), [-1, 0, 1]]


@pytest.mark.parametrize("fn", REDUCERS)
def test_reductions_match_tensorflow(tf1, fn):
    def build(tf):
        out = []
        for x in (R, R.astype(np.float64), (R * 2).astype(np.int32), (R * 2).astype(np.int64)):
            for axis in AXES:
                out.append(getattr(tf, fn)(tf.constant(x), axis=axis))
                out.append(getattr(tf, fn)(tf.constant(x), axis=axis, keepdims=True))
        out.append(getattr(tf, fn)(tf.constant(R), reduction_indices=[1], keep_dims=True))
        out.append(getattr(tf, fn)(tf.constant(R), tf.constant([0, 1])))
        return out

    assert_same(tf1, build, rtol=1e-5)


def test_reduce_all_any(tf1):
    b = np.array([[True, False, True], [True, True, True]])
    assert_same(tf1, lambda tf: [f(tf.constant(b), axis=a, keepdims=k) for f in (tf.reduce_all, tf.reduce_any)
                                 for a in (None, 0, 1, [0, 1]) for k in (False, True)])


def test_reduction_integer_and_empty_semantics(tf1):
    def build(tf):
        e = tf.constant(np.zeros([0, 3], np.float32))
        return [tf.reduce_mean(tf.constant([-1, -2, -2])), tf.reduce_mean(tf.constant([100, 100, 100], tf.int8)),
                tf.reduce_sum(tf.constant([100, 100], tf.int8)), tf.reduce_max(e, 0), tf.reduce_min(e, 0),
                tf.reduce_min(tf.constant(np.zeros([0], np.int32))), tf.reduce_mean(e, 0),
                tf.reduce_mean(tf.constant(np.zeros([0], np.int32))), tf.reduce_prod(e), tf.reduce_sum(e),
                tf.reduce_any(tf.constant(np.zeros([0], bool))), tf.reduce_all(tf.constant(np.zeros([0], bool))),
                tf.reduce_mean(tf.constant([1.0, 2.0], tf.float16)), tf.reduce_max(tf.constant([1.0, np.nan]))]
    out = assert_same(tf1, build)
    assert out[0] == -1 and out[1] == 100 and out[2] == -56


def test_reduction_ops_names_and_attrs(tf1):
    def build(tf):
        x = tf.constant(R)
        return [tf.reduce_sum(x), tf.reduce_sum(x, 1, keepdims=True), tf.reduce_mean(x, axis=[0, 1]),
                tf.reduce_max(x, name="m"), tf.reduce_all(tf.constant([True])), tf.reduce_prod(x, -1)]
    assert_same_ops(tf1, build)
    t = fl.reduce_sum(fl.constant(R), 1, keepdims=True)
    assert t.op.get_attr("keep_dims") is True and t.op.get_attr("Tidx") is fl.int32
    assert t.shape.as_list() == [2, 1, 3]


def test_reduction_shapes():
    p = fl.placeholder(fl.float32, [None, 3, 4])
    assert fl.reduce_sum(p, 1).shape.as_list() == [None, 4]
    assert fl.reduce_sum(p, [0, -1], keepdims=True).shape.as_list() == [1, 3, 1]
    assert fl.reduce_sum(p, fl.placeholder(fl.int32)).shape.ndims is None
    assert fl.reduce_sum(p, fl.placeholder(fl.int32), keepdims=True).shape.as_list() == [None] * 3
    assert fl.reduce_sum(p).shape.as_list() == []


def test_reduction_build_errors():
    x = fl.constant([1.0, 2.0])
    with pytest.raises(ValueError, match="Invalid reduction dimension 1 for input with 1 dimensions.*'Sum"):
        fl.reduce_sum(x, 1)
    with pytest.raises(ValueError, match="Invalid reduction dimension -2"):
        fl.reduce_max(x, -2)
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'reduction_indices'"):
        fl.reduce_sum(x, axis=0, reduction_indices=0)
    with pytest.raises(ValueError, match="Cannot specify both 'keepdims' and 'keep_dims'"):
        fl.reduce_sum(x, keepdims=True, keep_dims=True)
    with pytest.raises(TypeError, match="Mean"):
        fl.reduce_mean(fl.constant([True]))
    with pytest.raises(TypeError, match="Max"):
        fl.reduce_max(fl.constant([1 + 1j]))


def test_reduction_runtime_errors():
    q = fl.placeholder(fl.int32)
    x = fl.constant([[1.0, 2.0]])
    with pytest.raises(errors.InvalidArgumentError, match=r"Invalid reduction dimension \(3 for input with 2 dimension\(s\)"):
        run(fl.reduce_sum(x, q), {q: 3})
    with pytest.raises(errors.InvalidArgumentError, match="Axes contains duplicate dimension: 0"):
        run(fl.reduce_sum(x, q), {q: [0, -2]})


def test_reduction_runtime_error_class_matches_tensorflow(tf1):
    def build(tf):
        q = tf.placeholder(tf.int32)
        return tf.reduce_sum(tf.constant([1.0]), q), {q: 2}
    assert_same_error(tf1, build)


def test_reduce_sum_of_unknown_rank_builds_rank_and_range():
    p = fl.placeholder(fl.float32)
    try:
        t = fl.reduce_sum(p)
    except KeyError:
        pytest.skip("Rank is declared by the array op family")
    assert t.shape.as_list() == []
    assert [op.type for op in fl.get_default_graph().get_operations()][-2:] == ["Range", "Sum"]
    np.testing.assert_allclose(run(t, {p: R}), R.sum(), rtol=1e-6)


def test_count_nonzero(tf1):
    x = np.array([[1.0, 0.0], [2.0, 3.0]], np.float32)
    assert_same(tf1, lambda tf: [tf.count_nonzero(tf.constant(x)), tf.count_nonzero(tf.constant(x), axis=1),
                                 tf.count_nonzero(tf.constant(x), 0, keepdims=True, dtype=tf.int32)])


# --- argmax / argmin -------------------------------------------------------------------------
def test_argmax_argmin(tf1):
    x = np.array([[1.0, 4.0, 4.0], [3.0, 2.0, -1.0]], np.float32)

    def build(tf):
        c = tf.constant(x)
        return [tf.argmax(c), tf.argmax(c, 1), tf.argmin(c, axis=-1), tf.argmax(c, dimension=1),
                tf.argmax(c, axis=1, output_type=tf.int32), tf.argmin(tf.constant([3, 1, 2])),
                tf.argmax(tf.constant([False, True])), tf.argmax(tf.constant(np.zeros([0, 3])), 1)]
    assert_same(tf1, build)
    assert_same_ops(tf1, build)
    t = fl.argmax(fl.constant(x), 1)
    assert t.dtype is fl.int64 and t.shape.as_list() == [2] and t.op.get_attr("output_type") is fl.int64


def test_argmax_skips_nan_like_tensorflow(tf1):
    rows = [[np.nan, 1.0, 3.0], [np.nan, np.nan, np.nan], [1.0, np.nan, 0.0], [np.nan, -np.inf, -np.inf]]
    assert_same(tf1, lambda tf: [tf.argmax(tf.constant(np.array(rows, np.float32)), 1),
                                 tf.argmin(tf.constant(np.array(rows, np.float32)), 1)])


def test_argmax_errors():
    with pytest.raises(ValueError, match=r"Expected dimension in the range \[-2, 2\), but got 2"):
        fl.argmax(fl.constant([[1.0]]), 2)
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dimension'"):
        fl.argmax(fl.constant([[1.0]]), axis=0, dimension=0)
    with pytest.raises(errors.InvalidArgumentError, match=r"Reduction axis 0 is empty in shape \[0,3\]"):
        run(fl.argmax(fl.constant(np.zeros([0, 3], np.float32)), 0))


# --- matmul --------------------------------------------------------------------------------
M1 = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
M2 = np.arange(12, dtype=np.float32).reshape(3, 4) / 3


def test_matmul_matches_tensorflow(tf1):
    def build(tf):
        a, b = tf.constant(M1), tf.constant(M2)
        c = tf.constant((M1 + 1j * M1[::-1]).astype(np.complex64))
        return [tf.matmul(a, b), tf.matmul(b, a, transpose_a=True, transpose_b=True),
                tf.matmul(a, a, transpose_b=True), tf.matmul(a, a, adjoint_a=True),
                tf.matmul(c, c, adjoint_b=True), tf.matmul(c, c, transpose_a=True),
                tf.matmul(tf.constant(M1.astype(np.int32)), tf.constant(M2.astype(np.int32))),
                tf.matmul(tf.constant(M1.astype(np.float64)), M2.astype(np.float64)),
                tf.matmul(tf.constant(np.stack([M1, M1 * 2])), tf.constant(M2)),
                tf.matmul(tf.constant(np.stack([M1, M1 * 2])), tf.constant(np.stack([M2, -M2])[:1])),
                tf.matmul(tf.constant(np.stack([M1, -M1])), tf.constant(np.stack([M1, M1])), transpose_b=True),
                tf.matmul(tf.constant(np.stack([c, c]) if False else np.stack([M1, M1])), tf.constant(M1),
                          adjoint_b=True)]
    assert_same(tf1, build, rtol=1e-5, atol=1e-5)
    assert_same_ops(tf1, build)


def test_matmul_attrs_and_shapes():
    t = fl.matmul(fl.constant(M1), fl.constant(M1), transpose_b=True)
    assert t.op.type == "MatMul" and t.op.get_attr("transpose_b") is True
    assert t.op.get_attr("transpose_a") is False and t.shape.as_list() == [2, 2]
    b = fl.matmul(fl.placeholder(fl.float32, [None, 5, 2, 3]), fl.placeholder(fl.float32, [1, 3, 7]))
    assert b.op.type == "BatchMatMulV2" and b.shape.as_list() == [None, 5, 2, 7]
    assert fl.matmul(fl.placeholder(fl.float32), fl.constant(M1)).op.type == "BatchMatMulV2"


def test_matmul_build_errors():
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 4 for 'MatMul"):
        fl.matmul(fl.constant(np.ones([2, 3], np.float32)), fl.constant(np.ones([4, 3], np.float32)))
    with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1"):
        fl.matmul(fl.constant([1.0, 2.0]), fl.constant(np.ones([2, 2], np.float32)))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        fl.matmul(fl.constant(np.ones([2, 2, 3], np.float32)), fl.constant(np.ones([3, 3, 4], np.float32)))
    with pytest.raises(ValueError, match="Only one of `transpose_a` and `adjoint_a`"):
        fl.matmul(fl.constant(M1), fl.constant(M1), transpose_a=True, adjoint_a=True)
    with pytest.raises(TypeError, match="MatMul"):
        fl.matmul(fl.constant(M1), fl.constant(M2.astype(np.int32)))
    with pytest.raises(TypeError, match="MatMul"):
        fl.matmul(fl.constant([[True]]), fl.constant([[True]]))


def test_matmul_runtime_errors():
    p, q = fl.placeholder(fl.float32, [None, None]), fl.placeholder(fl.float32, [None, None])
    with pytest.raises(errors.InvalidArgumentError, match=r"Matrix size-incompatible: In\[0\]: \[2,3\], In\[1\]: \[4,3\]"):
        run(fl.matmul(p, q), {p: np.ones([2, 3]), q: np.ones([4, 3])})
    u, v = fl.placeholder(fl.float32), fl.placeholder(fl.float32)
    with pytest.raises(errors.InvalidArgumentError, match=r"In\[0\] ndims must be >= 2: 1"):
        run(fl.matmul(u, v), {u: np.ones([3]), v: np.ones([3, 3])})
    with pytest.raises(errors.InvalidArgumentError, match="must have compatible batch dimensions"):
        run(fl.matmul(u, v), {u: np.ones([2, 2, 3]), v: np.ones([3, 3, 4])})


# --- elementwise errors ------------------------------------------------------------------------
def test_elementwise_build_errors():
    x = fl.constant([1.0, 2.0])
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 2 and 3 for 'Add.*input shapes: \[2\], \[3\]"):
        fl.add(x, fl.constant([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match="Input 'y' of 'AddV2' Op has type int32 that does not match type float32"):
        fl.add(x, fl.constant([1, 2]))
    with pytest.raises(TypeError, match="not in list of allowed values"):
        fl.sqrt(fl.constant([4]))
    with pytest.raises(TypeError, match="not in list of allowed values"):
        fl.negative(fl.constant([1], fl.uint8))
    with pytest.raises(TypeError):
        fl.add(1, 2.5)


def test_elementwise_runtime_errors():
    p, q = fl.placeholder(fl.float32), fl.placeholder(fl.float32)
    with pytest.raises(errors.InvalidArgumentError, match=r"Incompatible shapes: \[2\] vs. \[3\]") as e:
        run(p + q, {p: np.ones(2), q: np.ones(3)})
    assert "add" in str(e.value)
    i, j = fl.placeholder(fl.int32), fl.placeholder(fl.int32)
    for fn in (fl.floordiv, fl.floormod, fl.div):
        with pytest.raises(errors.InvalidArgumentError, match="Integer division by zero"):
            run(fn(i, j), {i: [3, 4], j: [0, 1]})
    with pytest.raises(errors.InvalidArgumentError, match="Integers to negative integer powers are not allowed"):
        run(fl.pow(i, j), {i: [3], j: [-1]})
    with pytest.raises(errors.InvalidArgumentError, match="No OpKernel was registered to support Op 'RealDiv'"):
        run(fl.realdiv(i, j), {i: [3], j: [1]})


def test_elementwise_runtime_error_classes_match_tensorflow(tf1):
    def bad_shapes(tf):
        p, q = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
        return p * q, {p: np.ones(2), q: np.ones(3)}

    def div_zero(tf):
        p = tf.placeholder(tf.int32)
        return tf.floormod(tf.constant([1, 2]), p), {p: [1, 0]}

    assert_same_error(tf1, bad_shapes)
    assert_same_error(tf1, div_zero)


def test_float_division_by_zero_is_silent(tf1):
    assert_same(tf1, lambda tf: [tf.constant([1.0, -1.0, 0.0]) / 0.0, tf.floordiv(tf.constant([1.0, -1.0]), 0.0),
                                 tf.floormod(tf.constant([1.0]), 0.0), tf.exp(tf.constant([1000.0]))])


def test_fed_values_keep_dtype_and_scalars():
    p = fl.placeholder(fl.float32, [])
    out = run(p * 2.0 + 1.0, {p: 3.0})
    assert out == 7.0 and isinstance(out, np.float32)


# --- properties (hypothesis) ---------------------------------------------------------------------
shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3)


@settings(max_examples=25, deadline=None)
@given(shapes, shapes, st.sampled_from(["add", "subtract", "multiply", "maximum", "minimum",
                                        "squared_difference", "less", "equal"]))
def test_broadcasting_binary_matches_numpy(sa, sb, fn):
    ref = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
           "minimum": np.minimum, "squared_difference": lambda a, b: (a - b) ** 2, "less": np.less,
           "equal": np.equal}[fn]
    rng = np.random.default_rng(len(sa) * 7 + len(sb))
    a = rng.integers(-5, 5, sa).astype(np.float32)
    b = rng.integers(-5, 5, sb).astype(np.float32)
    fl.reset_default_graph()
    try:
        expected = ref(a, b)
    except ValueError:
        with pytest.raises(ValueError, match="Dimensions must be equal"):
            getattr(fl, fn)(fl.constant(a), fl.constant(b))
        return
    t = getattr(fl, fn)(fl.constant(a), fl.constant(b))
    assert t.shape.as_list() == list(expected.shape)
    out = run(t)
    assert np.asarray(out).dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_reductions_match_numpy(shape, data):
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) - 3
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    keep = data.draw(st.booleans())
    fl.reset_default_graph()
    c = fl.constant(x)
    got = run([fl.reduce_sum(c, axis, keepdims=keep), fl.reduce_max(c, axis, keepdims=keep),
               fl.reduce_mean(c, axis, keepdims=keep), fl.argmin(c, axis)])
    np.testing.assert_allclose(got[0], x.sum(axis, keepdims=keep))
    np.testing.assert_allclose(got[1], x.max(axis, keepdims=keep))
    np.testing.assert_allclose(got[2], x.mean(axis, keepdims=keep))
    np.testing.assert_array_equal(got[3], x.argmin(axis))


def test_reduce_logsumexp_and_log_sigmoid(tf1):
    x = np.array([[0.5, -1.0, 2.0], [1000.0, 999.0, -np.inf]], np.float32)

    def build(tf):
        c = tf.constant(x)
        return [tf.reduce_logsumexp(c), tf.reduce_logsumexp(c, 1), tf.reduce_logsumexp(c, [0], keepdims=True),
                tf.reduce_logsumexp(tf.constant([-np.inf, -np.inf])),
                tf.log_sigmoid(tf.constant([-100.0, -1.0, 0.0, 50.0]))]
    assert_same(tf1, build, rtol=1e-5)
    assert_same_ops(tf1, build)


def test_cumsum_cumprod(tf1):
    x = np.array([[1.0, 2.0, 3.0], [4.0, -5.0, 0.5]], np.float32)

    def build(tf):
        c = tf.constant(x)
        return [f(c, axis=a, exclusive=e, reverse=r) for f in (tf.cumsum, tf.cumprod)
                for a in (0, 1, -1) for e in (False, True) for r in (False, True)] + [
                    tf.cumsum(tf.constant([1, 2, 3])), tf.cumprod(tf.constant([1, 2, 3], tf.int64))]
    assert_same(tf1, build)
    assert_same_ops(tf1, build)


def test_int64_axes_and_dimension(tf1):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_same(tf1, lambda tf: [tf.reduce_sum(tf.constant(x), tf.constant([1], tf.int64)),
                                 tf.argmax(tf.constant(x), tf.constant(1, tf.int64)),
                                 tf.reduce_max(tf.constant(x), np.array([0, 1]))])
    t = fl.reduce_sum(fl.constant(x), fl.constant([1], fl.int64))
    assert t.op.get_attr("Tidx") is fl.int64 and t.shape.as_list() == [2]


def test_every_math_op_has_a_cpu_kernel():
    import flowlab.ops.math_defs as math_defs
    from flowlab.kernels.registry import find_kernel
    from flowlab.ops.op_def import registered_ops

    mine = [name for name, d in registered_ops().items() if d.defined_at.startswith(math_defs.__file__)]
    assert len(mine) > 60
    assert [name for name in mine if find_kernel(name, "CPU") is None] == []
