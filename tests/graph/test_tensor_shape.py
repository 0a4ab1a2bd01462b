"""TensorShape and Dimension against TensorFlow's (tf.compat.v1 after
disable_v2_behavior, where `shape[i]` is a Dimension), plus merge laws."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowlab as fl
from flowlab.graph.tensor_shape import (
    Dimension,
    TensorShape,
    as_shape,
    broadcast_shapes,
    dimension_value,
    scalar,
    unknown_shape,
)


def outcome(fn):
    """A comparable summary of `fn()`: its repr-ish value, or (error class, message)."""
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 - compared between the two libraries
        return ("raise", type(e).__name__, str(e))
    if isinstance(r, (list, tuple)):
        return type(r).__name__, [outcome(lambda x=x: x) for x in r]
    if type(r).__name__ in ("TensorShape", "Dimension"):
        return repr(r)
    return r


def compare(tf1, cases):
    for i, case in enumerate(cases):
        theirs = outcome(lambda case=case: case(tf1))
        ours = outcome(lambda case=case: case(fl))
        assert ours == theirs, f"case {i}: flowlab {ours!r} != TensorFlow {theirs!r}"


def test_shape_views_like_tensorflow(tf1):
    S = lambda tf, d: tf.TensorShape(d)  # noqa: E731
    compare(tf1, [
        lambda tf: S(tf, [2, None, 3]),
        lambda tf: str(S(tf, [2, None, 3])),
        lambda tf: str(S(tf, [5])),
        lambda tf: str(S(tf, [])),
        lambda tf: repr(S(tf, [])),
        lambda tf: str(S(tf, None)),
        lambda tf: repr(S(tf, None)),
        lambda tf: S(tf, [2, None, 3])[0],
        lambda tf: S(tf, [2, None, 3])[1],
        lambda tf: S(tf, [2, None, 3])[-1],
        lambda tf: S(tf, [2, None, 3])[0:2],
        lambda tf: S(tf, [2, None, 3])[::-1],
        lambda tf: S(tf, None)[0],
        lambda tf: S(tf, None)[1:],
        lambda tf: S(tf, [2, None, 3]).dims,
        lambda tf: S(tf, None).dims,
        lambda tf: S(tf, [2, None, 3]).ndims,
        lambda tf: S(tf, [2, None, 3]).rank,
        lambda tf: S(tf, None).ndims,
        lambda tf: S(tf, [2, None, 3]).as_list(),
        lambda tf: S(tf, None).as_list(),
        lambda tf: len(S(tf, [2, 3])),
        lambda tf: len(S(tf, None)),
        lambda tf: list(S(tf, [2, None])),
        lambda tf: list(S(tf, None)),
        lambda tf: S(tf, [2, None, 3]).num_elements(),
        lambda tf: S(tf, [2, 3]).num_elements(),
        lambda tf: S(tf, []).num_elements(),
        lambda tf: S(tf, [0, 5]).num_elements(),
        lambda tf: S(tf, None).num_elements(),
        lambda tf: S(tf, [2, 3]).is_fully_defined(),
        lambda tf: S(tf, [2, None]).is_fully_defined(),
        lambda tf: S(tf, None).is_fully_defined(),
        lambda tf: bool(S(tf, [])),
        lambda tf: bool(S(tf, None)),
        lambda tf: S(tf, 3),
        lambda tf: S(tf, (np.int64(3), None)),
        lambda tf: S(tf, np.array([2, 3])),
        lambda tf: S(tf, np.int64(3)),
        lambda tf: S(tf, np.array(4)),
        lambda tf: S(tf, (tf.Dimension(2), tf.Dimension(None))),
        lambda tf: S(tf, S(tf, [1, 2])),
        lambda tf: _raises(IndexError, lambda: S(tf, [2, 3])[5]),
    ])


def _raises(cls, fn):
    try:
        fn()
    except cls:
        return True
    return False


def test_shape_combination_like_tensorflow(tf1):
    s = lambda tf: tf.TensorShape([2, None, 3])  # noqa: E731
    compare(tf1, [
        lambda tf: s(tf).merge_with([2, 4, 3]),
        lambda tf: s(tf).merge_with([2, 4]),
        lambda tf: s(tf).merge_with([1, 4, 3]),
        lambda tf: s(tf).merge_with(None),
        lambda tf: tf.TensorShape(None).merge_with(s(tf)),
        lambda tf: s(tf).concatenate([1]),
        lambda tf: s(tf).concatenate(None),
        lambda tf: tf.TensorShape(None).concatenate([1]),
        lambda tf: s(tf) + [4],
        lambda tf: [4] + s(tf),
        lambda tf: s(tf) + tf.TensorShape([7]),
        lambda tf: s(tf).is_compatible_with([2, 5, 3]),
        lambda tf: s(tf).is_compatible_with([2, 5]),
        lambda tf: s(tf).is_compatible_with([3, 5, 3]),
        lambda tf: s(tf).is_compatible_with(None),
        lambda tf: s(tf).assert_is_compatible_with([2, 5, 3]),
        lambda tf: s(tf).with_rank(3),
        lambda tf: s(tf).with_rank(2),
        lambda tf: tf.TensorShape(None).with_rank(2),
        lambda tf: s(tf).with_rank_at_least(4),
        lambda tf: s(tf).with_rank_at_least(2),
        lambda tf: s(tf).with_rank_at_most(1),
        lambda tf: s(tf).with_rank_at_most(3),
        lambda tf: s(tf).assert_has_rank(2),
        lambda tf: s(tf).assert_has_rank(3),
        lambda tf: s(tf).assert_same_rank(tf.TensorShape([1])),
        lambda tf: s(tf).assert_same_rank(tf.TensorShape(None)),
        lambda tf: s(tf).most_specific_compatible_shape(tf.TensorShape([2, 4, 4])),
        lambda tf: s(tf).most_specific_compatible_shape(tf.TensorShape([2, 4])),
        lambda tf: s(tf) == tf.TensorShape([2, None, 3]),
        lambda tf: s(tf) == [2, None, 3],
        lambda tf: tf.TensorShape([2, 3]) == (2, 3),
        lambda tf: tf.TensorShape([2, 3]) == tf.TensorShape([2, None]),
        lambda tf: tf.TensorShape(None) == tf.TensorShape(None),
        lambda tf: s(tf) != [2, None, 3],
        lambda tf: tf.TensorShape([1]) == "x",
        lambda tf: hash(tf.TensorShape([2, 3])) == hash(tf.TensorShape((2, 3))),
        lambda tf: tf.TensorShape([2, 3]).merge_with(tf.TensorShape([2, None])).as_list(),
    ])


def test_bad_dimensions_like_tensorflow(tf1):
    compare(tf1, [
        lambda tf: tf.TensorShape([-1]),
        lambda tf: tf.TensorShape([1.5]),
        lambda tf: tf.TensorShape([2.0]),
        lambda tf: tf.TensorShape(["a"]),
        lambda tf: tf.Dimension(-1),
        lambda tf: tf.Dimension(1.5),
        lambda tf: tf.Dimension("3"),
        lambda tf: tf.Dimension(np.int32(4)),
    ])


def test_dimension_like_tensorflow(tf1):
    D = lambda tf, v: tf.Dimension(v)  # noqa: E731
    compare(tf1, [
        lambda tf: D(tf, 3) == 3,
        lambda tf: D(tf, None) == 3,
        lambda tf: D(tf, 3) == D(tf, None),
        lambda tf: D(tf, 3) != 4,
        lambda tf: D(tf, None) != 4,
        lambda tf: D(tf, 3) + 1,
        lambda tf: 1 + D(tf, 3),
        lambda tf: D(tf, 3) - 1,
        lambda tf: 5 - D(tf, 3),
        lambda tf: D(tf, 3) - 5,
        lambda tf: D(tf, 3) * D(tf, None),
        lambda tf: 2 * D(tf, 3),
        lambda tf: D(tf, 7) // 2,
        lambda tf: 7 // D(tf, 2),
        lambda tf: D(tf, 7) % 3,
        lambda tf: 7 % D(tf, 3),
        lambda tf: D(tf, 7) / 2,
        lambda tf: D(tf, None) + D(tf, 1),
        lambda tf: D(tf, 3) < 4,
        lambda tf: D(tf, None) < 4,
        lambda tf: D(tf, 3) >= D(tf, 3),
        lambda tf: D(tf, 3) > D(tf, None),
        lambda tf: D(tf, 2) <= 1,
        lambda tf: repr(D(tf, 3)),
        lambda tf: str(D(tf, 3)),
        lambda tf: str(D(tf, None)),
        lambda tf: repr(D(tf, None)),
        lambda tf: int(D(tf, 3)),
        lambda tf: [1, 2, 3][D(tf, 1)],
        lambda tf: D(tf, 3).merge_with(4),
        lambda tf: D(tf, None).merge_with(4),
        lambda tf: D(tf, 3).merge_with(None),
        lambda tf: D(tf, 3).merge_with(D(tf, 3)),
        lambda tf: D(tf, 3).is_compatible_with(4),
        lambda tf: D(tf, 3).is_compatible_with(None),
        lambda tf: D(tf, 3).assert_is_compatible_with(4),
        lambda tf: bool(D(tf, 0)),
        lambda tf: bool(D(tf, None)),
        lambda tf: D(tf, D(tf, 5)),
        lambda tf: D(tf, 3).value,
        lambda tf: tf.compat.dimension_value(D(tf, 3)),
        lambda tf: tf.compat.dimension_value(3),
        lambda tf: tf.compat.dimension_value(None),
    ])


def test_dimension_extras():
    # flowlab keeps Dimension hashable (TensorFlow's is not), equal to its int.
    assert hash(Dimension(3)) == hash(3)
    with pytest.raises(TypeError):
        int(Dimension(None))
    assert dimension_value(Dimension(None)) is None
    assert fl.dimension_value(4) == 4
    with pytest.raises(TypeError):
        Dimension(3) + "a"  # noqa: B018


def test_helpers():
    assert unknown_shape() == TensorShape(None)
    assert unknown_shape(2).as_list() == [None, None]
    assert scalar() == TensorShape([]) and scalar().ndims == 0
    s = TensorShape([1, 2])
    assert as_shape(s) is s and as_shape([1, 2]) == s
    assert s.as_tuple() == (1, 2) and TensorShape(None).as_tuple() is None
    assert broadcast_shapes(TensorShape([None, 1, 3]), TensorShape([4, 1])).as_list() == [None, 4, 3]
    assert broadcast_shapes(TensorShape([2, 3]), TensorShape(None)) == TensorShape(None)
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
        broadcast_shapes(TensorShape([2]), TensorShape([3]))
    import pickle

    for shape in (TensorShape([2, None]), TensorShape(None), TensorShape([])):
        assert pickle.loads(pickle.dumps(shape)) == shape


# --- properties --------------------------------------------------------------------
dims = st.one_of(st.none(), st.integers(0, 6))
shapes = st.one_of(st.none(), st.lists(dims, max_size=4)).map(TensorShape)


def _more_specific_or_equal(a: TensorShape, b: TensorShape) -> bool:
    """Every known fact of b also holds in a."""
    if b.ndims is None:
        return True
    if a.ndims != b.ndims:
        return False
    return all(y is None or x == y for x, y in zip(a.as_list(), b.as_list()))


@settings(max_examples=150, deadline=None)
@given(shapes, shapes, shapes)
def test_merge_laws(a, b, c):
    assert a.is_compatible_with(b) == b.is_compatible_with(a)
    assert a.merge_with(a) == a
    assert a.merge_with(TensorShape(None)) == a
    if not a.is_compatible_with(b):
        with pytest.raises(ValueError, match="are not compatible"):
            a.merge_with(b)
        return
    m = a.merge_with(b)
    assert m == b.merge_with(a)  # commutative
    assert _more_specific_or_equal(m, a) and _more_specific_or_equal(m, b)
    assert m.is_compatible_with(a) and m.is_compatible_with(b)
    try:
        left = m.merge_with(c)
    except ValueError:
        with pytest.raises(ValueError):
            a.merge_with(b.merge_with(c))
    else:
        assert left == a.merge_with(b.merge_with(c))  # associative
    msc = a.most_specific_compatible_shape(b)
    assert _more_specific_or_equal(a, msc) and _more_specific_or_equal(b, msc)


@settings(max_examples=200, deadline=None)
@given(shapes, shapes)
def test_concatenate_and_num_elements(a, b):
    c = a.concatenate(b)
    if a.ndims is None or b.ndims is None:
        assert c.ndims is None
    else:
        assert c.as_list() == a.as_list() + b.as_list()
        if a.is_fully_defined() and b.is_fully_defined():
            assert c.num_elements() == a.num_elements() * b.num_elements()
            assert c.num_elements() == int(np.prod(c.as_list(), dtype=np.int64))
        else:
            assert c.num_elements() is None
