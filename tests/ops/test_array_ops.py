"""Array ops (flowlab.ops.array_ops): values against NumPy, graphs, static shapes,
build-time and runtime errors against TensorFlow 1.x."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowlab as fl
from flowlab import errors
from flowlab.ops.const_fold import constant_value
from tests.difftest import assert_same, assert_same_error, run_with

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def run(fetches, feed=None):
    with fl.Session() as s:
        return s.run(fetches, feed)


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [y for e in x for y in _flat(e)]
    return [x]


def graph_facts(tf, build):
    """(op type, op name, dtype, static shape) of each tensor `build` returns."""
    g = tf.Graph()
    with g.as_default():
        out = build(tf)
    facts = []
    for t in _flat(out):
        s = None if t.shape.ndims is None else tuple(t.shape.as_list())
        facts.append((t.op.type, t.op.name, t.dtype.name, s))
    return facts


def assert_same_graph(tf1, build):
    assert graph_facts(fl, build) == graph_facts(tf1, build)


def ph(tf, shape, dtype=None):
    return tf.placeholder(dtype or tf.float32, shape)


# --- values against NumPy (no TensorFlow needed) ---------------------------------------
def test_shape_size_rank_values():
    x = fl.placeholder(fl.float32, [None, 3, 4])
    out = run([fl.shape(x), fl.size(x), fl.rank(x), fl.shape(x, out_type=fl.int64)], {x: X})
    np.testing.assert_array_equal(out[0], [2, 3, 4])
    assert out[0].dtype == np.int32 and out[3].dtype == np.int64
    assert out[1] == 24 and out[2] == 3


def test_reshape_transpose_values():
    x = fl.constant(X)
    a, b, c = run([fl.reshape(x, [4, -1]), fl.transpose(x), fl.transpose(x, [1, 0, 2])])
    np.testing.assert_array_equal(a, X.reshape(4, -1))
    np.testing.assert_array_equal(b, X.transpose())
    np.testing.assert_array_equal(c, X.transpose(1, 0, 2))


def test_concat_stack_split_values():
    x = fl.constant(X)
    out = run([fl.concat([x, x], -1), fl.stack([x, x], axis=-1), fl.unstack(x, axis=2),
               fl.split(x, 2, 2), fl.split(x, [1, -1], 1)])
    np.testing.assert_array_equal(out[0], np.concatenate([X, X], -1))
    np.testing.assert_array_equal(out[1], np.stack([X, X], -1))
    for i, u in enumerate(out[2]):
        np.testing.assert_array_equal(u, X[:, :, i])
    np.testing.assert_array_equal(out[3][1], X[:, :, 2:])
    np.testing.assert_array_equal(out[4][1], X[:, 1:])


def test_fill_zeros_ones_values_and_dtypes():
    out = run([fl.fill([2, 1], 7), fl.zeros([2, 3], fl.int64), fl.ones([2], fl.bool),
               fl.zeros_like(X), fl.ones_like(fl.constant([1, 2])), fl.zeros([0, 2])])
    assert out[0].dtype == np.int32 and out[0].tolist() == [[7], [7]]
    assert out[1].dtype == np.int64 and not out[1].any()
    assert out[2].dtype == np.bool_ and out[2].all()
    assert out[3].dtype == np.float32 and out[3].shape == X.shape
    assert out[4].dtype == np.int32 and out[4].tolist() == [1, 1]
    assert out[5].shape == (0, 2)


def test_pad_modes_match_numpy():
    p = [[1, 1], [2, 1], [0, 1]]
    out = run([fl.pad(X, p), fl.pad(X, p, constant_values=-3.0), fl.pad(X, p, "REFLECT"),
               fl.pad(X, p, "symmetric")])
    np.testing.assert_array_equal(out[0], np.pad(X, p))
    np.testing.assert_array_equal(out[1], np.pad(X, p, constant_values=-3))
    np.testing.assert_array_equal(out[2], np.pad(X, p, "reflect"))
    np.testing.assert_array_equal(out[3], np.pad(X, p, "symmetric"))


def test_where_select_one_hot_reverse_values():
    c = X > 10
    out = run([fl.where(c), fl.where(c, X, -X), fl.where([True, False], X, -X),
               fl.where_v2(c[0], X, 0.0), fl.one_hot([0, 2, -1, 5], 3), fl.reverse(X, [0, -1])])
    np.testing.assert_array_equal(out[0], np.argwhere(c))
    assert out[0].dtype == np.int64
    np.testing.assert_array_equal(out[1], np.where(c, X, -X))
    np.testing.assert_array_equal(out[2], np.stack([X[0], -X[1]]))
    np.testing.assert_array_equal(out[3], np.where(c[0], X, 0))
    np.testing.assert_array_equal(out[4], np.eye(3, dtype=np.float32)[[0, 2]].tolist() + [[0] * 3] * 2)
    np.testing.assert_array_equal(out[5], X[::-1, :, ::-1])


def test_expand_squeeze_tile_values():
    z = np.zeros((1, 2, 1), np.float32)
    out = run([fl.expand_dims(X, -1), fl.squeeze(z), fl.squeeze(z, [2]), fl.squeeze(z, axis=0),
               fl.tile(X, [1, 2, 3])])
    assert out[0].shape == (2, 3, 4, 1)
    assert out[1].shape == (2,) and out[2].shape == (1, 2) and out[3].shape == (2, 1)
    np.testing.assert_array_equal(out[4], np.tile(X, [1, 2, 3]))


def test_empty_tensors():
    e = np.zeros((0, 3), np.float32)
    out = run([fl.concat([e, e], 0), fl.reshape(e, [-1, 3]), fl.transpose(e), fl.stack([e]),
               fl.where(e > 0), fl.tile(e, [2, 2]), fl.reverse(e, [0])])
    assert [o.shape for o in out] == [(0, 3), (0, 3), (3, 0), (1, 0, 3), (0, 2), (0, 6), (0, 3)]


def test_string_tensors():
    s = fl.constant([[b"a", b"b"], [b"c", b"d"]])
    out = run([fl.reshape(s, [-1]), fl.transpose(s), fl.concat([s, s], 0), fl.zeros_like(
        fl.placeholder_with_default(s, [None, 2]))])
    assert out[0].tolist() == [b"a", b"b", b"c", b"d"]
    assert out[1].tolist() == [[b"a", b"c"], [b"b", b"d"]]
    assert out[3].tolist() == [[b"", b""], [b"", b""]]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_reshape_transpose_property(dims, rnd):
    fl.reset_default_graph()
    a = np.arange(int(np.prod(dims)), dtype=np.float64).reshape(dims)
    perm = list(range(len(dims)))
    rnd.shuffle(perm)
    x = fl.placeholder(fl.float64, [None] * len(dims))
    flat = fl.reshape(x, [-1])
    t = fl.transpose(x, perm)
    back = fl.reshape(flat, fl.shape(x))
    f, tt, b = run([flat, t, back], {x: a})
    np.testing.assert_array_equal(f, a.reshape(-1))
    np.testing.assert_array_equal(tt, a.transpose(perm))
    np.testing.assert_array_equal(b, a)


# --- static knowledge ---------------------------------------------------------------------
def test_static_shapes_use_known_values():
    x = fl.placeholder(fl.float32, [2, 3, 4])
    u = fl.placeholder(fl.float32, [None, 3])
    assert fl.reshape(x, [fl.shape(x)[0], -1]).shape.as_list() == [2, 12]
    assert fl.reshape(u, [fl.shape(u)[0], -1]).shape.as_list() == [None, None]
    assert fl.reshape(u, [-1, 3]).shape.as_list() == [None, 3]
    assert fl.reshape(x, fl.stack([fl.size(x)])).shape.as_list() == [24]
    assert fl.zeros(fl.shape(u)).shape.as_list() == [None, 3]
    np.testing.assert_array_equal(constant_value(fl.shape(x)[1:]), [3, 4])
    assert constant_value(fl.shape(u)) is None
    assert constant_value(fl.stack([fl.size(x), 5])).tolist() == [24, 5]
    assert constant_value(fl.concat([fl.shape(x), [7]], 0)).tolist() == [2, 3, 4, 7]


def test_autopacking_lists_with_tensors():
    u = fl.placeholder(fl.float32, [None, 3])
    n = fl.shape(u)[0]
    t = fl.convert_to_tensor([n, 3])
    assert t.op.type == "Pack" and t.dtype == fl.int32
    assert run(fl.reshape(u, [n, 3, 1]), {u: np.ones((2, 3))}).shape == (2, 3, 1)
    with pytest.raises(TypeError, match="Cannot convert a list containing a tensor of dtype int64"):
        fl.convert_to_tensor([n, fl.constant(1, fl.int64)])


def test_zeros_like_of_variable():
    if not hasattr(fl, "Variable"):
        pytest.skip("variables are not available")
    v = fl.Variable(np.ones((2, 2), np.float32))
    z = fl.zeros_like(v)
    with fl.Session() as s:
        s.run(fl.global_variables_initializer())
        out = s.run(z)
    assert out.dtype == np.float32 and out.shape == (2, 2) and not out.any()


def test_kernels_do_not_mutate_inputs():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    a_copy = a.copy()
    x = fl.placeholder(fl.float32, [2, 3])
    run([fl.reshape(x, [-1]), fl.transpose(x), fl.pad(x, [[1, 1], [0, 0]]), fl.reverse(x, [1]),
         fl.tile(x, [2, 1]), fl.split(x, 3, 1), fl.squeeze(fl.expand_dims(x, 0))], {x: a})
    np.testing.assert_array_equal(a, a_copy)


# --- against TensorFlow -----------------------------------------------------------------------
VALUE_CASES = {
    "shape": lambda tf: [tf.shape(X), tf.size(X), tf.rank(X), tf.shape(X, out_type=tf.int64)],
    "shape_fed": lambda tf: (lambda p: ([tf.shape(p), tf.size(p, out_type=tf.int64), tf.rank(p)]
                                        + tf.shape_n([p, p[0]]), {p: X}))(ph(tf, [None, 3, None])),
    "reshape": lambda tf: [tf.reshape(X, [-1]), tf.reshape(X, [4, -1]),
                           tf.reshape(X, tf.constant([3, 8], tf.int64)), tf.reshape(5, [1, 1])],
    "reshape_empty": lambda tf: (lambda p: ([tf.reshape(p, [-1, 0]), tf.reshape(p, [0, -1]), tf.reshape(p, [-1, 2]),
                                             tf.reshape(p, [3, 0, -1])], {p: np.zeros((0, 3), np.float32)}))(ph(tf, None)),
    "transpose": lambda tf: [tf.transpose(X), tf.transpose(X, [1, 0, 2]), tf.transpose(3.0)],
    "transpose_unknown_rank": lambda tf: (lambda p: (tf.transpose(p), {p: X}))(ph(tf, None)),
    "concat": lambda tf: [tf.concat([X, X], -1), tf.concat([X], 0), tf.concat([X, X, X], 1),
                          tf.concat([[1, 2], [3]], tf.constant(0, tf.int64))],
    "stack": lambda tf: [tf.stack([X, X], axis=1), tf.stack([1, 2]), tf.stack([1.5, 2.0], axis=0)]
    + tf.unstack(X, axis=-1) + tf.unstack([[1, 2], [3, 4]]),
    "split": lambda tf: tf.split(X, 2, 2) + tf.split(X, [1, -1, 1], 1) + tf.split(X, [3], -2),
    "fill": lambda tf: [tf.fill([2, 3], 7), tf.fill(tf.constant([2], tf.int64), 1.5),
                        tf.fill([], True), tf.fill([2], b"ab"), tf.zeros([2], tf.string)],
    "zeros_ones": lambda tf: [tf.zeros([2, 3]), tf.ones([2], tf.int64), tf.zeros(5),
                              tf.zeros([2], tf.bool), tf.ones([0, 3]), tf.zeros([40, 30]),
                              tf.ones(tf.constant([2, 2]), tf.int32), tf.zeros((), tf.float64)],
    "like": lambda tf: [tf.zeros_like(X), tf.ones_like(X), tf.zeros_like(X, tf.int32),
                        tf.ones_like([True, False]), tf.zeros_like([1, 2], dtype=tf.float64)],
    "like_fed": lambda tf: (lambda p: ([tf.zeros_like(p), tf.ones_like(p), tf.zeros_like(p, tf.int64),
                                        tf.ones_like(p, tf.bool)], {p: X}))(ph(tf, [None, 3, 4])),
    "expand_squeeze": lambda tf: [tf.expand_dims(X, -1), tf.expand_dims(X, 0), tf.expand_dims(1, 0),
                                  tf.squeeze(tf.zeros([1, 2, 1])), tf.squeeze(tf.zeros([1, 2, 1]), [-1]),
                                  tf.squeeze(tf.zeros([1, 1]))],
    "tile": lambda tf: [tf.tile(X, [1, 2, 1]), tf.tile([1, 2], tf.constant([3], tf.int64)),
                        tf.tile(X, [0, 1, 1])],
    "pad": lambda tf: [tf.pad(X, [[1, 0], [0, 1], [2, 2]]),
                       tf.pad(X, [[1, 1], [0, 0], [0, 0]], constant_values=-1),
                       tf.pad(X, [[1, 1], [2, 2], [0, 0]], "REFLECT"),
                       tf.pad(X, [[1, 2], [3, 3], [0, 0]], "SYMMETRIC"),
                       tf.pad([1, 2], tf.constant([[1, 1]], tf.int64))],
    "where": lambda tf: [tf.where(X > 5), tf.where([[1, 0], [0, 3]]), tf.where([0.0, 2.5]),
                         tf.where([True, False], [[1, 2], [3, 4]], [[5, 6], [7, 8]]),
                         tf.where(X > 5, X, -X), tf.where(True, 1, 2)],
    "where_v2": lambda tf: [tf.where_v2(X > 5, X, 0.0), tf.where_v2([True, False, True, False], 1, [[2], [3]]),
                            tf.where_v2(X[0, 0] > 1, X, X * 2)],
    "one_hot": lambda tf: [tf.one_hot([1, 2, -1, 7], 3), tf.one_hot([[1], [2]], 4, axis=0),
                           tf.one_hot([1], 2, on_value=5, off_value=-1),
                           tf.one_hot([0], 2, dtype=tf.int64), tf.one_hot(tf.constant([1], tf.int64), 3),
                           tf.one_hot([1], 3, on_value=True, off_value=False),
                           tf.one_hot([[0, 1], [1, 0]], 2, axis=1, on_value=2.0),
                           tf.one_hot([2], 3, off_value=tf.constant(0.5, tf.float64)),
                           tf.one_hot(1, 3)],
    "reverse": lambda tf: [tf.reverse(X, [0, -1]), tf.reverse(X, tf.constant([1], tf.int64)),
                           tf.reverse(X, [])],
    "dtypes": lambda tf: [tf.reshape(np.arange(4, dtype=np.int8), [2, 2]),
                          tf.concat([np.ones(2, np.float16), np.zeros(1, np.float16)], 0),
                          tf.stack([np.complex64(1 + 2j), np.complex64(3)]),
                          tf.transpose(np.eye(2, dtype=np.uint8)), tf.tile([True], [3]),
                          tf.pad(np.ones((1, 1), np.int64), [[1, 0], [0, 1]], constant_values=9)],
}


@pytest.mark.parametrize("case", sorted(VALUE_CASES))
def test_values_match_tensorflow(tf1, case):
    assert_same(tf1, VALUE_CASES[case])


GRAPH_CASES = {
    "shape_known": lambda tf: [tf.shape(ph(tf, [2, 3])), tf.size(ph(tf, [2, 3])), tf.rank(ph(tf, [2]))],
    "shape_unknown": lambda tf: [tf.shape(ph(tf, [None, 3])), tf.size(ph(tf, None)),
                                 tf.rank(ph(tf, None))] + tf.shape_n([ph(tf, [2]), ph(tf, None)]),
    "reshape": lambda tf: [tf.reshape(ph(tf, [None, 3]), [-1]), tf.reshape(ph(tf, [None, 3]), [-1, 3]),
                           tf.reshape(ph(tf, [2, 6]), [3, -1]), tf.reshape(ph(tf, None), [2, -1]),
                           tf.reshape(ph(tf, [2, 3]), [-1, -1]),
                           tf.reshape(ph(tf, [2, 3]), ph(tf, [3], tf.int32)),
                           tf.reshape(ph(tf, [2, 3]), ph(tf, None, tf.int32))],
    "reshape_shape_of": lambda tf: (lambda x, u: [tf.reshape(x, [tf.shape(x)[0], -1]),
                                                  tf.reshape(u, [tf.shape(u)[0], -1]),
                                                  tf.reshape(u, tf.shape(u)[:1]),
                                                  tf.reshape(x, tf.concat([tf.shape(x)[1:], [2]], 0))])(
        ph(tf, [2, 3, 4]), ph(tf, [None, 3])),
    "transpose": lambda tf: [tf.transpose(ph(tf, [None, 3])), tf.transpose(ph(tf, [2, 3, 4]), [2, 0, 1]),
                             tf.transpose(ph(tf, [2, 3]), ph(tf, [2], tf.int32))],
    "concat": lambda tf: [tf.concat([ph(tf, [None, 3]), ph(tf, [2, None])], 0),
                          tf.concat([ph(tf, [None, 3]), ph(tf, [2, None])], 1),
                          tf.concat([ph(tf, [1, 3]), ph(tf, None)], 0),
                          tf.concat([ph(tf, [1, 3]), ph(tf, [1, 3])], ph(tf, [], tf.int32)),
                          tf.concat([ph(tf, [1, 3])], 1)],
    "stack": lambda tf: [tf.stack([ph(tf, [None, 3]), ph(tf, [2, None])], axis=1), tf.stack([1, 2]),
                         tf.stack([ph(tf, None), ph(tf, [2])])] + tf.unstack(ph(tf, [2, None]))
    + tf.unstack(ph(tf, [None, 2]), axis=1) + tf.unstack(ph(tf, None), num=2),
    "split": lambda tf: tf.split(ph(tf, [4, None]), 2) + tf.split(ph(tf, [None, 6]), [1, 2, -1], 1)
    + tf.split(ph(tf, [None, 6]), 3, -1) + tf.split(ph(tf, [5, 6]), ph(tf, [2], tf.int32), num=2),
    "fill": lambda tf: [tf.fill([2, 3], 1.0), tf.fill(ph(tf, [2], tf.int32), 1),
                        tf.zeros(ph(tf, [3], tf.int32)), tf.zeros([2, 3]), tf.ones([5000]), tf.zeros(5),
                        tf.zeros([ph(tf, [], tf.int32), 3]), tf.ones(tf.constant([2, 2])),
                        tf.zeros(ph(tf, None, tf.int32)), tf.ones(ph(tf, [], tf.int32)),
                        tf.zeros(ph(tf, [2], tf.int64), tf.int32)],
    "like": lambda tf: [tf.zeros_like(ph(tf, [2, 3])), tf.zeros_like(ph(tf, [None, 3])),
                        tf.ones_like(ph(tf, [2, 3])), tf.ones_like(ph(tf, [None, 3])),
                        tf.zeros_like(ph(tf, [None]), tf.int32), tf.zeros_like(ph(tf, [2]), tf.int32)],
    "dims": lambda tf: [tf.expand_dims(ph(tf, [None, 3]), 1), tf.expand_dims(ph(tf, None), 0),
                        tf.squeeze(ph(tf, [1, None, 1])), tf.squeeze(ph(tf, [1, 2, 1]), [0]),
                        tf.squeeze(ph(tf, [None, 2, 1]), [2]), tf.squeeze(ph(tf, None))],
    "tile_pad": lambda tf: [tf.tile(ph(tf, [None, 3]), [2, 2]), tf.tile(ph(tf, [2, 3]), ph(tf, [2], tf.int32)),
                            tf.pad(ph(tf, [None, 3]), [[1, 1], [2, 0]]),
                            tf.pad(ph(tf, [2, 3]), ph(tf, [2, 2], tf.int32)),
                            tf.pad(ph(tf, [2, 3]), [[1, 1], [0, 0]], "REFLECT", constant_values=3)],
    "select": lambda tf: [tf.where(ph(tf, [None, 3], tf.bool)), tf.where(ph(tf, None, tf.bool)),
                          tf.where(ph(tf, [None], tf.bool), ph(tf, [None, 3]), ph(tf, [2, None])),
                          tf.where_v2(ph(tf, [3], tf.bool), ph(tf, [2, 1]), 0.0)],
    "one_hot_reverse": lambda tf: [tf.one_hot(ph(tf, [None], tf.int32), 4), tf.one_hot([[1]], ph(tf, [], tf.int32)),
                                   tf.one_hot([1, 2], 3, axis=0), tf.reverse(ph(tf, [None, 3]), [1])],
    "names": lambda tf: [tf.reshape(X, [-1], name="r"), tf.concat([X, X], 0, name="c"),
                         tf.stack([X], name="s"), tf.zeros([2], name="z"), tf.ones_like(X, name="ol"),
                         tf.zeros([2000], name="zz"), tf.one_hot([1], 2, name="oh"), tf.where(X > 0, name="w")],
}


@pytest.mark.parametrize("case", sorted(GRAPH_CASES))
def test_graph_matches_tensorflow(tf1, case):
    """Same op types, default names, dtypes and static shapes as TensorFlow."""
    assert_same_graph(tf1, GRAPH_CASES[case])


BUILD_ERRORS = [
    (lambda tf: tf.reshape(X, [5]), ValueError, "Cannot reshape a tensor with 24 elements to shape [5] (5 elements)"),
    (lambda tf: tf.reshape(X, [5, -1]), ValueError, "Dimension size must be evenly divisible by 5 but is 24"),
    (lambda tf: tf.reshape(X, [[24]]), ValueError, "Shape must be rank 1 but is rank 2"),
    (lambda tf: tf.concat([X, X], 3), ValueError, "Shape must be at least rank 4 but is rank 3"),
    (lambda tf: tf.concat([X, X[0]], 0), ValueError, "Shape must be rank"),
    (lambda tf: tf.concat([X, np.zeros((2, 3), np.float64)], 0), TypeError, "don't all match"),
    (lambda tf: tf.stack([X, X[:1]]), ValueError, "Dimension 0 in both shapes must be equal, but are 2 and 1"),
    (lambda tf: tf.stack([X], axis=5), ValueError, "not in range [-4, 4)"),
    (lambda tf: tf.unstack(X, num=3), ValueError, "Dimension must be 3 but is 2"),
    (lambda tf: tf.unstack(ph(tf, None)), ValueError, "Cannot infer argument `num` from shape"),
    (lambda tf: tf.split(X, 5, 1), ValueError, "Dimension size must be evenly divisible by 5 but is 3"),
    (lambda tf: tf.split(X, [1, 1], 1), ValueError, "can't split axis of size 3 into pieces of size [1,1]"),
    (lambda tf: tf.squeeze(X, [0]), ValueError, "Can not squeeze dim[0], expected a dimension of 1, got 2"),
    (lambda tf: tf.squeeze(X, 5), ValueError, "squeeze_dims[0] not in [-3,3)."),
    (lambda tf: tf.transpose(X, [0, 1]), ValueError, "Dimension must be 3 but is 2"),
    (lambda tf: tf.tile(X, [1]), ValueError, "Shape must be rank 3 but is rank 1"),
    (lambda tf: tf.expand_dims(X, 4), ValueError, "dim 4 not in the interval [-4, 3]."),
    (lambda tf: tf.reverse(X, [3]), ValueError, "'axis'[0] = 3 is out of valid range [0, 2"),
    (lambda tf: tf.fill([2, -1], 1.0), ValueError, "Fill dimensions must be >= 0"),
    (lambda tf: tf.fill([2], [1.0]), ValueError, "Shape must be rank 0 but is rank 1"),
    (lambda tf: tf.one_hot([1], -1), ValueError, "must be non-negative but is -1"),
    (lambda tf: tf.one_hot([1], 3, on_value=1.0, off_value=0), TypeError, "of on_value does not match dtype"),
    (lambda tf: tf.one_hot([1], 3, on_value=1.0, dtype=tf.int32), TypeError, "does not match dtype parameter"),
    (lambda tf: tf.where([True], X[0], X[0]), ValueError, "Dimension 0 in both shapes must be equal, but are 1 and 3"),
    (lambda tf: tf.where(X > 0, X, X[0]), ValueError, "Shapes must be equal rank, but are 3 and 2"),
    (lambda tf: tf.where_v2([True, False], X, 0.0), ValueError, "Dimensions must be equal, but are 2 and 4"),
    (lambda tf: tf.pad(X, [[1, 1]] * 3, "FOO"), ValueError, "Received `mode` = FOO"),
    (lambda tf: tf.shape(ph(tf, [None]), out_type=tf.float32), TypeError, "float32"),
]


@pytest.mark.parametrize("i", range(len(BUILD_ERRORS)))
def test_build_errors_match_tensorflow(tf1, i):
    build, cls, message = BUILD_ERRORS[i]
    for tf in (tf1, fl):
        g = tf.Graph()
        with g.as_default(), pytest.raises(cls) as info:
            build(tf)
        if tf is fl:
            assert message in str(info.value)


def test_build_error_names_the_op():
    with pytest.raises(ValueError, match=r"for 'my_reshape' \(op: 'Reshape'\) with input shapes: \[2,3,4\], \[1\]"):
        fl.reshape(X, [5], name="my_reshape")
    assert not fl.get_default_graph().get_operations()[-1].name.startswith("my_reshape")


RUNTIME_ERRORS = [
    (lambda tf, p: tf.reshape(p, [5]), "Input to reshape is a tensor with 24 values, but the requested shape has 5"),
    (lambda tf, p: tf.reshape(p, [5, -1]), "Input to reshape is a tensor with 24 values, but the requested shape requires a multiple of 5"),
    (lambda tf, p: tf.transpose(p, [0, 0, 1]), "2 is missing from {0,0,1}."),
    (lambda tf, p: tf.concat([p, tf.zeros([1, 2, 3])], 0), "ConcatOp : Dimension 1 in both shapes must be equal: shape[0] = [2,3,4] vs. shape[1] = [1,2,3]"),
    (lambda tf, p: tf.stack([p, tf.zeros([1, 2])]), "Shapes of all inputs must match: values[0].shape = [2,3,4] != values[1].shape = [1,2]"),
    (lambda tf, p: tf.unstack(p, num=3), "Input shape axis 0 must equal 3, got shape [2,3,4]"),
    (lambda tf, p: tf.split(p, 5, 1), "Number of ways to split should evenly divide the split dimension, but got split_dim 1 (size = 3) and num_split 5"),
    (lambda tf, p: tf.split(p, [1, 1], 1), "Determined shape must either match input shape along split_dim exactly"),
    (lambda tf, p: tf.squeeze(p, [0]), "Can not squeeze dim[0], expected a dimension of 1, got 2"),
    (lambda tf, p: tf.expand_dims(p, 5), "Tried to expand dim index 5 for tensor with 3 dimensions."),
    (lambda tf, p: tf.reverse(p, [3]), "'axis'[0] = 3 is out of valid range [0, 2"),
    (lambda tf, p: tf.pad(p, [[3, 3], [0, 0], [0, 0]], "REFLECT"), "paddings must be less than the dimension size: 3, 3 not less than 2"),
    (lambda tf, p: tf.pad(p, [[3, 3], [0, 0], [0, 0]], "SYMMETRIC"), "paddings must be no greater than the dimension size: 3, 3 greater than 2"),
    (lambda tf, p: tf.where([True], p, p), "Number of batches of 'then' must match size of 'cond', but saw: 2 vs. 1"),
    (lambda tf, p: tf.fill(tf.cast(tf.shape(p), tf.int32) - 3, 1.0), "Dimension -1 must be >= 0"),
]


@pytest.mark.parametrize("i", range(len(RUNTIME_ERRORS)))
def test_runtime_errors_match_tensorflow(tf1, i):
    make, message = RUNTIME_ERRORS[i]
    if "tf.cast" in make.__code__.co_names or "cast" in make.__code__.co_names:
        if not hasattr(fl, "cast"):
            pytest.skip("needs the math family (cast)")

    def build(tf):
        p = tf.placeholder(tf.float32, None)
        return make(tf, p), {p: X}

    _, err = assert_same_error(tf1, build)
    assert isinstance(err, errors.InvalidArgumentError)
    assert message in err.message


def test_runtime_error_without_tensorflow():
    p = fl.placeholder(fl.int32, None)
    with pytest.raises(errors.InvalidArgumentError, match="Dimension -2 must be >= 0"):
        run(fl.fill(p, 0), {p: [2, -2]})
    x = fl.placeholder(fl.float32, None)
    with pytest.raises(errors.InvalidArgumentError, match="requested shape has 7"):
        run(fl.reshape(x, [7]), {x: X})
    r = run_with(fl, lambda tf: tf.reshape(X, [2, -1]))
    assert r.shape == (2, 12)


# --- ops used by gradient functions and broadcasting ---------------------------------------------
def _raw(tf, op_type, **kwargs):
    """The raw op: flowlab's apply_op, or TensorFlow's generated wrapper."""
    if tf is fl:
        from flowlab.ops.builder import apply_op

        return apply_op(op_type, **kwargs)
    import re

    from tensorflow.python.ops import gen_array_ops  # type: ignore[import-not-found]

    return getattr(gen_array_ops, re.sub(r"(?<!^)(?=[A-Z])", "_", op_type).lower())(**kwargs)


def test_broadcast_to_and_invert_permutation():
    out = run([fl.broadcast_to([1.0, 2.0], [3, 2]), fl.invert_permutation([2, 0, 1])])
    np.testing.assert_array_equal(out[0], np.broadcast_to([1.0, 2.0], (3, 2)))
    assert out[1].tolist() == [1, 2, 0] and out[1].dtype == np.int32
    p = fl.placeholder(fl.int32, None)
    with pytest.raises(errors.InvalidArgumentError, match="0 is duplicated in the input."):
        run(fl.invert_permutation(p), {p: [0, 0]})
    with pytest.raises(ValueError, match="Shape must be at most rank 1 but is rank 3"):
        fl.broadcast_to(X, [4])


def test_gradient_helper_ops_match_tensorflow(tf1):
    big = np.arange(112, dtype=np.float32).reshape(4, 4, 7)
    assert_same(tf1, lambda tf: [tf.broadcast_to(X, [2, 2, 3, 4]), tf.broadcast_to(3, []),
                                 tf.invert_permutation(tf.constant([3, 0, 2, 1], tf.int64))])
    assert_same(tf1, lambda tf: _raw(tf, "ConcatOffset", concat_dim=1, shape=[[2, 3], [2, 4], [2, 1]]))
    assert_same(tf1, lambda tf: _raw(tf, "ConcatOffset", concat_dim=-1,
                                     shape=[tf.constant([2, 3], tf.int64), tf.constant([2, 4], tf.int64)]))
    for mode in ("REFLECT", "SYMMETRIC"):
        assert_same(tf1, lambda tf, mode=mode: _raw(tf, "MirrorPadGrad", input=big,
                                                    paddings=[[1, 1], [1, 0], [0, 2]], mode=mode))
    assert_same_graph(tf1, lambda tf: [tf.broadcast_to(ph(tf, [None, 1]), [2, 3]),
                                       tf.broadcast_to(ph(tf, [3]), ph(tf, [2], tf.int32)),
                                       tf.invert_permutation(ph(tf, [None], tf.int32))])


def test_static_dimensions_and_shapes_convert(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, [2, None, 4])
        return [tf.reshape(x, [x.shape[0], -1]), tf.zeros([x.shape[0], 3]), tf.zeros(x.shape[::2]),
                tf.fill([x.shape[0]], 2.0), tf.zeros(tf.TensorShape([2, 3]))]

    assert [f[2:] for f in graph_facts(fl, build)] == [f[2:] for f in graph_facts(tf1, build)]
    x = fl.placeholder(fl.float32, [2, None, 4])
    assert run(fl.convert_to_tensor(x.shape[0])) == 2
    with pytest.raises(ValueError, match=r"Cannot convert a partially known TensorShape \(2, \?, 4\)"):
        fl.zeros(x.shape)
    with pytest.raises(TypeError, match="Failed to convert elements"):
        fl.reshape(x, [x.shape[1], -1])


def test_graph_def_round_trip():
    """Exported and re-imported, the array ops give the same values and static shapes."""
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 3, 4], name="x")
        outs = [fl.reshape(x, [fl.shape(x)[0], -1]), fl.squeeze(fl.expand_dims(x, 0), [0]),
                fl.pad(x, [[1, 1], [0, 0], [0, 0]], "REFLECT"), fl.one_hot([1, 2], 3, axis=0),
                fl.where(x > 5), fl.split(x, [1, -1], 2)[1], fl.dynamic_stitch([[0], [1]], [[1.0], [2.0]]),
                fl.concat([x, x], -1), fl.tile(x, [1, 1, 2]), fl.zeros_like(x), fl.ones_like(x),
                fl.stack(fl.unstack(x, axis=1), axis=2), fl.broadcast_to(x[:1], [3, 3, 4])]
        names = [t.name for t in outs]
        ref = run(outs, {x: X})
        gd = g.as_graph_def()
    g2 = fl.Graph()
    with g2.as_default():
        fl.import_graph_def(gd, name="")
        got = run(names, {"x:0": X})
    for n, a, b in zip(names, ref, got):
        assert a.dtype == b.dtype and np.array_equal(a, b), n
        assert g.get_tensor_by_name(n).shape == g2.get_tensor_by_name(n).shape, n


def test_unique(tf1):
    y, idx = run(fl.unique([4, 1, 4, 2, 1, 9]))
    assert y.tolist() == [4, 1, 2, 9] and idx.tolist() == [0, 1, 0, 2, 1, 3] and idx.dtype == np.int32
    assert_same(tf1, lambda tf: list(tf.unique([4, 1, 4, 2, 1, 9])) + list(tf.unique(np.array([3.0, 1.0, 3.0]), out_idx=tf.int64))
                + list(tf.unique(np.zeros(0, np.int64))))
    assert_same_graph(tf1, lambda tf: list(tf.unique(ph(tf, [None], tf.int32))))


def test_split_by_a_scalar_tensor_is_refused():
    with pytest.raises(ValueError, match="Rank-0 tensors are not supported as the num_or_size_splits"):
        fl.split([1, 2], fl.constant(2))


def test_sequence_mask(tf1):
    out = run(fl.sequence_mask([1, 3, 0], 4))
    assert out.tolist() == [[True, False, False, False], [True, True, True, False], [False] * 4]
    assert_same(tf1, lambda tf: [tf.sequence_mask([1, 3, 0], 4), tf.sequence_mask([[1, 2], [3, 0]]),
                                 tf.sequence_mask(np.array([2, 1], np.int64), dtype=tf.float32)])
    assert_same(tf1, lambda tf: (lambda p: (tf.sequence_mask(p), {p: [[1, 2], [3, 0]]}))(ph(tf, None, tf.int32)))
    assert_same_graph(tf1, lambda tf: [tf.sequence_mask(ph(tf, [None], tf.int32)),
                                       tf.sequence_mask(ph(tf, [None], tf.int32), 5, tf.float32)])
    with pytest.raises(ValueError, match="must be scalar"):
        fl.sequence_mask([1], [2, 3])
