"""Indexing ops (flowlab.ops.slicing): `x[...]`, Slice, StridedSlice, gathers, scatters,
dynamic partition/stitch and boolean_mask, against NumPy and TensorFlow 1.x."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowlab as fl
from flowlab import errors
from flowlab.ops.array_ops import _slice_helper
from flowlab.ops.const_fold import constant_value
from tests.difftest import assert_same, assert_same_error
from tests.ops.test_array_ops import assert_same_graph, ph

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)


def run(fetches, feed=None):
    with fl.Session() as s:
        return s.run(fetches, feed)


# --- x[...] against NumPy -------------------------------------------------------------------
KEYS = [
    0, -1, (1, 2), (-1, -2, -3), slice(1, None), slice(None, None, -1), slice(-2, None, -2),
    (Ellipsis, 0), (Ellipsis, slice(None, None, 2)), (0, Ellipsis, 1), (None, 1), (1, None),
    (slice(None), None, 2), (Ellipsis, None), (None, Ellipsis, None, -1), (slice(1, 100), slice(-100, 2)),
    (slice(5, 1, -1), slice(None), slice(3, -10, -2)), (2, slice(None), slice(1, 1)), (), Ellipsis,
    (slice(None, None, 3), Ellipsis), (np.int64(1), np.int32(-1)), (np.array(1), np.array(-2)),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_getitem_matches_numpy(key):
    t = fl.constant(X)
    y = _slice_helper(t, key)
    out = run(y)
    expected = X[key]
    assert np.asarray(out).shape == expected.shape
    assert y.shape.as_list() == list(expected.shape)  # static shape agrees with the value
    np.testing.assert_array_equal(out, expected)
    assert y.op.type == "StridedSlice" and y.op.name.startswith("strided_slice")


def _key_strategy():
    bound = st.one_of(st.none(), st.integers(-7, 7))
    step = st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0))
    slices = st.builds(slice, bound, bound, step)
    ints = st.integers(-2, 1)  # in range for every dimension (the smallest is 3)
    entry = st.one_of(slices, ints, st.just(None))
    return st.lists(entry, max_size=3).flatmap(
        lambda es: st.integers(0, len(es)).map(
            lambda i: tuple(es) if i == len(es) or len(es) == 0 else tuple(es[:i]) + (Ellipsis,) + tuple(es[i:])
        )
    )


@settings(max_examples=60, deadline=None)
@given(_key_strategy())
def test_getitem_property(key):
    fl.reset_default_graph()
    x = fl.placeholder(fl.float32, [None, 4, None])
    y = _slice_helper(x, key)
    out = run(y, {x: X})
    expected = X[key]
    np.testing.assert_array_equal(out, expected)
    assert y.shape.is_compatible_with(expected.shape)


def test_tensor_indices_and_bounds():
    i = fl.placeholder(fl.int32, [])
    j = fl.placeholder(fl.int64, [])
    t = fl.constant(X)
    a = _slice_helper(t, i)
    b = _slice_helper(t, (slice(None), slice(i, None)))
    c = _slice_helper(t, (Ellipsis, j))
    d = _slice_helper(t, slice(None, None, i))
    assert a.shape.as_list() == [4, 5] and b.shape.as_list() == [3, None, 5]
    assert c.shape.as_list() == [3, 4] and d.shape.as_list() == [None, 4, 5]
    out = run([a, b, c, d], {i: -1, j: 2})
    np.testing.assert_array_equal(out[0], X[-1])
    np.testing.assert_array_equal(out[1], X[:, -1:])
    np.testing.assert_array_equal(out[2], X[..., 2])
    np.testing.assert_array_equal(out[3], X[::-1])


def test_slice_of_a_known_shape_is_folded():
    x = fl.placeholder(fl.float32, [3, None, 5])
    s = fl.shape(x)
    assert constant_value(_slice_helper(s, 0)) is None  # Shape of a partial shape: unknown
    k = fl.shape(fl.constant(X))
    assert int(constant_value(_slice_helper(k, -1))) == 5
    assert constant_value(_slice_helper(k, slice(1, None))).tolist() == [4, 5]
    assert fl.reshape(x, [_slice_helper(s, 0), -1]).shape.as_list() == [3, None]


def test_strided_slice_and_slice_builders():
    t = fl.constant(X)
    a = fl.strided_slice(t, [0, 1], [2, 3], [1, 1])
    b = fl.strided_slice(t, [0, 0, 0], [0, 0, 0], [1, 1, -1], begin_mask=7, end_mask=7, shrink_axis_mask=0)
    c = fl.slice(t, [1, 0, 2], [-1, 2, -1])
    d = fl.strided_slice(t, [1], [2], shrink_axis_mask=1)
    out = run([a, b, c, d])
    np.testing.assert_array_equal(out[0], X[0:2, 1:3])
    np.testing.assert_array_equal(out[1], X[:, :, ::-1])
    np.testing.assert_array_equal(out[2], X[1:, 0:2, 2:])
    np.testing.assert_array_equal(out[3], X[1])
    assert c.shape.as_list() == [2, 2, 3]


def test_index_type_errors():
    t = fl.constant(X)
    for bad in (1.5, "a", (0, 1.0), fl.constant(1.0), fl.constant([1, 2])):
        with pytest.raises(TypeError, match="Only integers, slices"):
            _slice_helper(t, bad)


def test_getitem_errors_at_build_time():
    t = fl.constant(X)
    with pytest.raises(ValueError, match=r"slice index 3 of dimension 0 out of bounds\. for 'strided_slice"):
        _slice_helper(t, 3)
    with pytest.raises(ValueError, match="Index out of range using input dim 3; input has only 3 dims"):
        _slice_helper(t, (0, 0, 0, 0))
    with pytest.raises(ValueError, match=r"strides\[1\] must be non-zero"):
        _slice_helper(t, (slice(None), slice(None, None, 0)))
    with pytest.raises(ValueError, match="Multiple ellipses in slice spec not allowed"):
        _slice_helper(t, (Ellipsis, 0, Ellipsis))


def test_getitem_errors_at_runtime():
    x = fl.placeholder(fl.float32, None)
    i = fl.placeholder(fl.int32, [])
    cases = [
        (_slice_helper(x, 7), {}, "slice index 7 of dimension 0 out of bounds."),
        (_slice_helper(x, (0, 0, 0, 0)), {}, "Index out of range using input dim 3; input has only 3 dims"),
        (_slice_helper(x, slice(None, None, i)), {i: 0}, "strides[0] must be non-zero"),
        (_slice_helper(x, (Ellipsis, i)), {i: -6}, "slice index -6 of dimension 2 out of bounds."),
        (fl.slice(x, [0, 0, 0], [4, 1, 1]), {}, "Expected size[0] in [0, 3], but got 4"),
        (fl.slice(x, [0, 5, 0], [1, 0, 1]), {}, "Expected begin[1] in [0, 4], but got 5"),
    ]
    for y, feed, message in cases:
        with pytest.raises(errors.InvalidArgumentError) as info:
            run(y, {x: X, **feed})
        assert message in info.value.message


# --- gathers, scatters, partitions ----------------------------------------------------------
def test_gather_values_and_errors():
    out = run([fl.gather(X, [2, 0]), fl.gather(X, [[1, 1]], axis=-1), fl.gather(X, np.array([3], np.int64), axis=1),
               fl.gather(X, [[0], [1], [2]], axis=1, batch_dims=1), fl.gather(X, 1)])
    np.testing.assert_array_equal(out[0], X[[2, 0]])
    np.testing.assert_array_equal(out[1], X[..., [[1, 1]]])
    np.testing.assert_array_equal(out[2], X[:, [3]])
    np.testing.assert_array_equal(out[3], np.stack([X[b][[b]] for b in range(3)]))
    np.testing.assert_array_equal(out[4], X[1])
    idx = fl.placeholder(fl.int32, None)
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1,0\] = 7 is not in \[0, 3\)"):
        run(fl.gather(X, idx), {idx: [[0], [7]]})
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[0\] = -1 is not in \[0, 3\)"):
        run(fl.gather(X, idx), {idx: [-1]})


def test_gather_nd_scatter_nd():
    out = run([fl.gather_nd(X, [[1, 0], [2, 3]]), fl.gather_nd(X, [[[0, 1, 2]]]), fl.gather_nd(X, [[2]]),
               fl.scatter_nd([[1], [1], [3]], [1.0, 2.0, 3.0], [5]),
               fl.scatter_nd([[0, 1]], [[1, 2]], fl.constant([2, 3, 2])),
               fl.scatter_nd(np.array([[0], [0]], np.int64), [True, True], np.array([2], np.int64))])
    np.testing.assert_array_equal(out[0], X[[1, 2], [0, 3]])
    np.testing.assert_array_equal(out[1], [[X[0, 1, 2]]])
    np.testing.assert_array_equal(out[2], X[[2]])
    np.testing.assert_array_equal(out[3], [0, 3, 0, 3, 0])  # duplicates sum
    assert out[4].dtype == np.int32 and out[4][0, 1].tolist() == [1, 2] and out[4].sum() == 3
    assert out[5].tolist() == [True, False]
    i = fl.placeholder(fl.int32, [None, 2])
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1\] = \[0, 9\] does not index into param shape \[3,4,5\]"):
        run(fl.gather_nd(X, i), {i: [[0, 0], [0, 9]]})
    j = fl.placeholder(fl.int32, [None, 1])
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1\] = \[5\] does not index into shape \[3\]"):
        run(fl.scatter_nd(j, [1.0, 2.0], [3]), {j: [[0], [5]]})


def test_dynamic_partition_and_stitch():
    parts = fl.dynamic_partition(X, [1, 0, 1], 3)
    assert [p.shape.as_list() for p in parts] == [[None, 4, 5]] * 3
    out = run(parts)
    np.testing.assert_array_equal(out[0], X[[1]])
    np.testing.assert_array_equal(out[1], X[[0, 2]])
    assert out[2].shape == (0, 4, 5)
    st_ = fl.dynamic_stitch([[0, 2], [1, 2]], [[1.0, 2.0], [3.0, 4.0]])
    assert st_.shape.as_list() == [3]
    np.testing.assert_array_equal(run(st_), [1.0, 3.0, 4.0])  # later indices win
    # The partition / stitch round trip used by sharded embeddings.
    ids = np.array([5, 2, 7, 1, 2])
    p = ids % 2
    pos = fl.dynamic_partition(np.arange(5, dtype=np.int32), p, 2)
    vals = fl.dynamic_partition(ids * 10, p, 2)
    np.testing.assert_array_equal(run(fl.dynamic_stitch(pos, vals)), ids * 10)
    q = fl.placeholder(fl.int32, None)
    with pytest.raises(errors.InvalidArgumentError, match=r"partitions\[2\] = 3 is not in \[0, 3\)"):
        run(fl.dynamic_partition(X, q, 3), {q: [0, 1, 3]})


def test_boolean_mask():
    m2 = X[..., 0] > 20
    out = run([fl.boolean_mask(X, [True, False, True]), fl.boolean_mask(X, m2),
               fl.boolean_mask(X, [False, True, True, False], axis=1), _slice_helper(fl.constant(X), X > 30)])
    np.testing.assert_array_equal(out[0], X[[True, False, True]])
    np.testing.assert_array_equal(out[1], X[m2])
    np.testing.assert_array_equal(out[2], X[:, [False, True, True, False]])
    np.testing.assert_array_equal(out[3], X[X > 30])
    with pytest.raises(ValueError, match="mask cannot be scalar"):
        fl.boolean_mask(X, True)
    with pytest.raises(ValueError, match="incompatible"):
        fl.boolean_mask(X, [True, False])


# --- against TensorFlow -------------------------------------------------------------------------
def _getitem_cases(tf):
    t = tf.constant(X)
    i = tf.constant(1)
    j = tf.constant(2, tf.int64)
    return [t[0], t[-1, 1:, ::-2], t[..., None, 2], t[None], t[1:2, tf.newaxis, :, -1], t[:, i], t[j],
            t[i:, :i], t[::i, ..., -2::-1], t[X > 20], t[2, 3, 4], t[:, 10:], t[-10:2, 3:0:-1]]


VALUE_CASES = {
    "getitem": _getitem_cases,
    "strided_slice": lambda tf: [tf.strided_slice(X, [0, 1], [2, 3]), tf.strided_slice(X, [1, 0], [0, 4], [-1, 2], end_mask=1),
                                 tf.strided_slice(X, [0, 2], [0, 3], new_axis_mask=1, shrink_axis_mask=2),
                                 tf.strided_slice(X, [0, 1], [0, 2], ellipsis_mask=1)],
    "slice": lambda tf: [tf.slice(X, [1, 0, 2], [-1, 2, -1]), tf.slice(X, tf.constant([0, 0, 0], tf.int64), [1, 1, 1]),
                         tf.slice(X, [3, 0, 0], [0, -1, -1])],
    "gather": lambda tf: [tf.gather(X, [2, 0]), tf.gather(X, [[1, 1]], axis=-1), tf.gather(X, 1),
                          tf.gather(X, tf.constant([3], tf.int64), axis=tf.constant(1, tf.int64)),
                          tf.gather(X, [[0], [1], [2]], axis=1, batch_dims=1), tf.gather([b"a", b"b"], [1, 1]),
                          tf.gather(X, np.zeros((0,), np.int32))],
    "gather_nd": lambda tf: [tf.gather_nd(X, [[1, 0], [2, 3]]), tf.gather_nd(X, [[[0, 1, 2]]]), tf.gather_nd(X, [[2]]),
                             tf.gather_nd([[1, 2], [3, 4]], tf.constant([[1, 1]], tf.int64))],
    "scatter_nd": lambda tf: [tf.scatter_nd([[1], [1], [3]], [1.0, 2.0, 3.0], [5]),
                              tf.scatter_nd([[0, 1]], [[1, 2]], tf.constant([2, 3, 2])),
                              tf.scatter_nd(tf.constant([[1]], tf.int64), [[1.5, 2.5]], tf.constant([2, 2], tf.int64))],
    "dynamic_partition": lambda tf: tf.dynamic_partition(X, [1, 0, 1], 3)
    + tf.dynamic_partition([[1, 2], [3, 4]], [[0, 1], [1, 1]], 2),
    "dynamic_stitch": lambda tf: [tf.dynamic_stitch([[0, 2], [1, 2]], [[1.0, 2.0], [3.0, 4.0]]),
                                  tf.dynamic_stitch([[[1]], [0]], [[[[1, 2]]], [[3, 4]]]), tf.dynamic_stitch([3], [[7]])],
    "boolean_mask": lambda tf: [tf.boolean_mask(X, [True, False, True]), tf.boolean_mask(X, X[..., 0] > 20),
                                tf.boolean_mask(X, [False, True, True, False], axis=1),
                                tf.boolean_mask([1, 2, 3], [False, False, False])],
}


@pytest.mark.parametrize("case", sorted(VALUE_CASES))
def test_values_match_tensorflow(tf1, case):
    assert_same(tf1, VALUE_CASES[case])


def test_fed_indices_match_tensorflow(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, [None, 4, None])
        i = tf.placeholder(tf.int32, [])
        m = tf.placeholder(tf.bool, [None])
        return [x[i], x[:i, ..., i], x[::-1, i:], tf.gather(x, [i, 0]), tf.boolean_mask(x, m)], {
            x: X, i: 2, m: [True, False, True]}

    assert_same(tf1, build)


GRAPH_CASES = {
    "getitem": lambda tf: (lambda x, i: [x[0], x[:, 1], x[..., None], x[i], x[i:], x[:, ::2, -1], x[1:, 5:],
                                         x[tf.newaxis, ..., 0:2]])(ph(tf, [None, 4, 6]), tf.placeholder(tf.int32, [])),
    "getitem_unknown_rank": lambda tf: (lambda x: [x[0], x[..., 1], x[None, 1:]])(ph(tf, None)),
    "slice": lambda tf: [tf.slice(ph(tf, [None, 4]), [0, 1], [-1, 2]), tf.slice(ph(tf, [3, 4]), [1, 1], [-1, -1]),
                         tf.slice(ph(tf, [3, 4]), ph(tf, [2], tf.int32), [1, 2])],
    "gather": lambda tf: [tf.gather(ph(tf, [None, 3]), [1, 2]), tf.gather(ph(tf, [5, 3]), ph(tf, [None, 2], tf.int32), axis=1),
                          tf.gather(ph(tf, [5, 3]), [0], axis=ph(tf, [], tf.int32)),
                          tf.gather(ph(tf, [2, 5, 3]), ph(tf, [2, 4], tf.int32), axis=1, batch_dims=1)],
    "gather_nd_scatter": lambda tf: [tf.gather_nd(ph(tf, [None, 3, 4]), ph(tf, [5, 2], tf.int32)),
                                     tf.scatter_nd(ph(tf, [None, 1], tf.int32), ph(tf, [None, 3]), [7, 3]),
                                     tf.scatter_nd([[0]], [[1.0, 2.0]], ph(tf, [2], tf.int32))],
    "partition_stitch": lambda tf: tf.dynamic_partition(ph(tf, [None, 3]), ph(tf, [None], tf.int32), 2)
    + [tf.dynamic_stitch([[0, 1], [2]], [ph(tf, [2, 3]), ph(tf, [1, 3])]),
       tf.dynamic_stitch([ph(tf, [None], tf.int32)], [ph(tf, [None, 3])])],
    "boolean_mask": lambda tf: [tf.boolean_mask(ph(tf, [None, 3]), ph(tf, [None], tf.bool)),
                                tf.boolean_mask(ph(tf, [2, 3, 4]), ph(tf, [2, 3], tf.bool))],
}


@pytest.mark.parametrize("case", sorted(GRAPH_CASES))
def test_graph_matches_tensorflow(tf1, case):
    assert_same_graph(tf1, GRAPH_CASES[case])


def test_getitem_attrs_match_tensorflow(tf1):
    def attrs(tf):
        g = tf.Graph()
        with g.as_default():
            y = tf.constant(X)[1:, ..., tf.newaxis, ::-1, 0]
        return [y.op.get_attr(m) for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                           "shrink_axis_mask")], [i.op.type for i in y.op.inputs]

    assert attrs(fl) == attrs(tf1)


RUNTIME_ERRORS = [
    (lambda tf, p, i: p[i], "slice index 7 of dimension 0 out of bounds."),
    (lambda tf, p, i: tf.gather(p, [0, i]), "indices[1] = 7 is not in [0, 3)"),
    (lambda tf, p, i: tf.gather(p, [[i]], axis=2), "indices[0,0] = 7 is not in [0, 5)"),
    (lambda tf, p, i: tf.gather_nd(p, [[0, i]]), "indices[0] = [0, 7] does not index into param shape [3,4,5]"),
    (lambda tf, p, i: tf.scatter_nd([[1], [i]], [1.0, 2.0], [3]), "indices[1] = [7] does not index into shape [3]"),
    (lambda tf, p, i: tf.dynamic_partition(p, [0, i, 1], 2), "partitions[1] = 7 is not in [0, 2)"),
    (lambda tf, p, i: tf.slice(p, [0, 0, 0], [i, 1, 1]), "Expected size[0] in [0, 3], but got 7"),
    (lambda tf, p, i: p[::i - 7], "strides[0] must be non-zero"),
]


@pytest.mark.parametrize("i", range(len(RUNTIME_ERRORS)))
def test_runtime_errors_match_tensorflow(tf1, i):
    make, message = RUNTIME_ERRORS[i]
    if i == len(RUNTIME_ERRORS) - 1 and not hasattr(fl.Tensor, "__sub__"):
        pytest.skip("needs the math family (Tensor.__sub__)")

    def build(tf):
        p = tf.placeholder(tf.float32, None)
        k = tf.placeholder(tf.int32, [])
        return make(tf, p, k), {p: X, k: 7}

    _, err = assert_same_error(tf1, build)
    assert message in err.message


GRAD_KEYS = [(1, slice(None, None, -1)), (slice(None), None, 2), (Ellipsis, slice(1, 3)), (slice(-1, 0, -2), 0, 3)]


@pytest.mark.parametrize("key", GRAD_KEYS, ids=[repr(k) for k in GRAD_KEYS])
def test_strided_slice_grad_matches_tensorflow(tf1, key):
    from tests.ops.test_array_ops import _raw

    def build(tf):
        x = tf.constant(X)
        y = x[key]
        op = y.op
        masks = {m: op.get_attr(m) for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                             "shrink_axis_mask")}
        dy = tf.ones_like(y) * 2.0 if hasattr(tf, "multiply") else tf.ones_like(y)
        return _raw(tf, "StridedSliceGrad", shape=tf.shape(x), begin=op.inputs[1], end=op.inputs[2],
                    strides=op.inputs[3], dy=dy, **masks)

    out = assert_same(tf1, build)
    expected = np.zeros_like(X)
    expected[key] = 2.0 if hasattr(fl, "multiply") else 1.0
    np.testing.assert_array_equal(out, expected)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2), st.lists(st.integers(0, 9), min_size=0, max_size=6), st.booleans())
def test_gather_and_scatter_property(axis, raw, int64):
    fl.reset_default_graph()
    idx = np.array([r % X.shape[axis] for r in raw], np.int64 if int64 else np.int32)
    x = fl.placeholder(fl.float32, None)
    i = fl.placeholder(fl.int64 if int64 else fl.int32, [None])
    g = fl.gather(x, i, axis=axis)
    upd = np.arange(len(raw), dtype=np.float32) + 1
    s = fl.scatter_nd(fl.expand_dims(i, 1), upd, np.array([X.shape[axis]], idx.dtype))
    got_g, got_s = run([g, s], {x: X, i: idx})
    np.testing.assert_array_equal(got_g, np.take(X, idx, axis=axis))
    want = np.zeros(X.shape[axis], np.float32)
    np.add.at(want, idx, upd)
    np.testing.assert_array_equal(got_s, want)
