"""Gradients of the array ops: central finite differences in float64 (entries of the
gradient TABLE of tests/ops/gradient_check.py), and TensorFlow's numbers (values,
dtypes, IndexedSlices) for each op and for composites."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import flowlab as fl
from flowlab.ops import array_grad  # noqa: F401  (registers the gradient functions)
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import get_gradient_function, is_declared
from flowlab.ops.gradients_impl import gradients
from tests.difftest import assert_same
from tests.ops.gradient_check import grad_case

RNG = np.random.default_rng(7)


def _grads(tf: Any, ys: Any, xs: Any, grad_ys: Any = None) -> Any:
    return (gradients if tf is fl else tf.gradients)(ys, xs, grad_ys=grad_ys)


def _r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


COND = np.array([[True, False, True], [False, False, True]])

# op type -> (builder(tf, *inputs) -> y, input arrays).  The builders run under
# flowlab here and under TensorFlow in the differential tests below.
CASES: dict[str, tuple[Callable[..., Any], list[np.ndarray]]] = {
    "Identity": (lambda tf, x: tf.identity(x), [_r(2, 3)]),
    "PlaceholderWithDefault": (lambda tf, x: tf.placeholder_with_default(x, [2, 3]), [_r(2, 3)]),
    "Reshape": (lambda tf, x: tf.reshape(x, [3, -1]), [_r(2, 3, 2)]),
    "ExpandDims": (lambda tf, x: tf.expand_dims(x, -1), [_r(2, 3)]),
    "Squeeze": (lambda tf, x: tf.squeeze(x, [1]), [_r(2, 1, 3)]),
    "Transpose": (lambda tf, x: tf.transpose(x, [2, 0, 1]), [_r(2, 3, 4)]),
    "ReverseV2": (lambda tf, x: tf.reverse(x, [0, -1]), [_r(2, 3, 2)]),
    "BroadcastTo": (lambda tf, x: tf.broadcast_to(x, [2, 3, 4]), [_r(3, 1)]),
    "Fill": (lambda tf, x: tf.fill([2, 3], x), [_r()]),
    "Tile": (lambda tf, x: tf.tile(x, [2, 1, 3]), [_r(2, 2, 2)]),
    "Pack": (lambda tf, x, y: tf.stack([x, y], axis=1), [_r(2, 3), _r(2, 3)]),
    "Unpack": (lambda tf, x: tf.stack(tf.unstack(x, axis=1)[::-1]), [_r(2, 3)]),
    "Split": (lambda tf, x: tf.split(x, 3, axis=-1)[1], [_r(2, 6)]),
    "SplitV": (lambda tf, x: tf.concat(tf.split(x, [1, 3, 2], axis=1)[::-2], 1), [_r(2, 6)]),
    "ConcatV2": (lambda tf, x, y: tf.concat([x, y, x], -1), [_r(2, 2), _r(2, 3)]),
    "Pad": (lambda tf, x: tf.pad(x, [[1, 0], [2, 1]]), [_r(2, 3)]),
    "PadV2": (lambda tf, x: tf.pad(x, [[1, 0], [2, 1]], constant_values=3.0), [_r(2, 3)]),
    "MirrorPad": (lambda tf, x: tf.pad(x, [[1, 1], [2, 1]], mode="REFLECT"), [_r(3, 4)]),
    "Slice": (lambda tf, x: tf.slice(x, [1, 0, 1], [1, -1, 2]), [_r(3, 2, 4)]),
    "StridedSlice": (lambda tf, x: x[::-2, 1:, None, -1], [_r(5, 3, 4)]),
    "GatherV2": (lambda tf, x: tf.gather(x, [[2, 0], [2, 3]], axis=1), [_r(2, 4, 3)]),
    "GatherNd": (lambda tf, x: tf.gather_nd(x, [[1, 2], [0, 1], [1, 2]]), [_r(2, 3, 2)]),
    "ScatterNd": (lambda tf, u: tf.scatter_nd([[1], [3], [1]], u, [4, 2]), [_r(3, 2)]),
    "DynamicPartition": (
        lambda tf, x: tf.concat(tf.dynamic_partition(x, [[1, 0], [2, 1]], 3)[::-1], 0), [_r(2, 2, 3)]),
    "DynamicStitch": (lambda tf, x, y: tf.dynamic_stitch([[0, 2], [[3], [1]]], [x, y]), [_r(2, 3), _r(2, 1, 3)]),
    "Select": (lambda tf, x, y: tf.where(COND, x, y), [_r(2, 3), _r(2, 3)]),
    "SelectV2": (lambda tf, x, y: tf.where_v2(COND, x, y), [_r(1, 3), _r(2, 1)]),
}

# Cases that build a helper op directly (not in TensorFlow's public API).
FL_CASES: dict[str, tuple[Callable[..., Any], list[np.ndarray]]] = {
    "MirrorPadGrad": (lambda tf, x: apply_op("MirrorPadGrad", input=x, paddings=[[1, 1], [2, 0]],
                                             mode="SYMMETRIC"), [_r(4, 5)]),
    "StridedSliceGrad": (lambda tf, x: apply_op(
        "StridedSliceGrad", shape=[4, 6], begin=[3, 1], end=[0, 6], strides=[-2, 2], dy=x), [_r(2, 3)]),
    "GatherV2/axis0": (lambda tf, x: tf.gather(x, [2, 0, 2]), [_r(3, 2)]),
    "GatherV2/batch_dims": (
        lambda tf, x: tf.gather(x, [[1, 0, 0], [2, 2, 1]], axis=2, batch_dims=1), [_r(2, 3, 3)]),
    "GatherV2/unknown_axis": (
        lambda tf, x: tf.gather(x, [1, 1], axis=tf.placeholder_with_default(-1, [])), [_r(2, 3)]),
    "GatherNd/rows": (lambda tf, x: tf.gather_nd(x, [[1], [0], [1]]), [_r(2, 3)]),
    "ConcatV2/many": (lambda tf, x: tf.concat([x[i:i + 1] for i in range(18)], 0), [_r(18, 2)]),
    "MirrorPad/symmetric": (lambda tf, x: tf.pad(x, [[2, 1], [0, 2]], mode="SYMMETRIC"), [_r(3, 2)]),
}


# The finite-difference checks: entries of the registry-walking TABLE, run by
# tests/ops/test_gradients.py (one case per op type, more for GatherV2, GatherNd, ...).
for _name, (_build, _arrays) in {**CASES, **FL_CASES}.items():
    grad_case(_name.split("/")[0], *_arrays)(_build)


def test_every_array_op_is_declared() -> None:
    from flowlab.ops import array_ops, slicing  # noqa: F401
    from flowlab.ops.op_def import registered_ops

    covered = {k.split("/")[0] for k in (*CASES, *FL_CASES)}
    for op_type in ("Shape", "ShapeN", "Size", "Rank", "ZerosLike", "OnesLike", "Where", "OneHot",
                    "InvertPermutation", "ConcatOffset", "Unique", "StopGradient", "Const",
                    "Placeholder", "NoOp"):
        assert is_declared(op_type) and get_gradient_function(op_type) is None, op_type
    for op_type in covered:
        assert op_type in registered_ops() and get_gradient_function(op_type) is not None, op_type


# --- against TensorFlow ---------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_same_as_tensorflow(tf1: Any, name: str, dtype: str) -> None:
    build, arrays = CASES[name]

    def graph(tf: Any) -> Any:
        xs = [tf.constant(a.astype(dtype)) for a in arrays]
        y = build(tf, *xs)
        w = tf.cast(tf.reshape(tf.range(tf.size(y)) + 1, tf.shape(y)), y.dtype)
        return _grads(tf, [y], xs, grad_ys=[w])

    assert_same(tf1, graph, rtol=1e-5, atol=1e-5)


def test_gather_gives_indexed_slices(tf1: Any) -> None:
    def graph(tf: Any) -> Any:
        x = tf.constant(np.arange(12.0, dtype=np.float32).reshape(4, 3))
        y = tf.gather(x, [[3, 1], [3, 0]])
        (g,) = _grads(tf, tf.reduce_sum(y * tf.constant([[[1.0], [2.0]], [[3.0], [4.0]]])), [x])
        assert type(g).__name__ == "IndexedSlices"
        return g

    got = assert_same(tf1, graph)
    assert got.dense_shape.dtype == np.int32 and list(got.indices) == [3, 1, 3, 0]


def test_gather_nd_rows_give_indexed_slices(tf1: Any) -> None:
    def graph(tf: Any) -> Any:
        x = tf.constant(np.arange(6.0).reshape(3, 2))
        (g,) = _grads(tf, tf.gather_nd(x, [[2], [0], [2]]) * 2.0, [x])
        return g

    assert_same(tf1, graph)


COMPOSITES: dict[str, Callable[[Any, Any], Any]] = {
    # slicing with steps and negative indices
    "strided_steps": lambda tf, x: tf.reduce_sum(tf.square(x[::-2, 1:-1, ::3])),
    "strided_shrink_newaxis": lambda tf, x: tf.reduce_sum(x[-1, ..., None, ::-1] * x[0, ..., None, :]),
    "strided_ellipsis_int": lambda tf, x: tf.reduce_mean(tf.exp(x[..., 2]) + x[:, ::-1, -3]),
    # gather + reduce, as an embedding lookup
    "gather_reduce": lambda tf, x: tf.reduce_sum(tf.reduce_mean(tf.gather(x, [[0, 3, 3], [1, 0, 2]]), 1) ** 2),
    "gather_axis_reduce": lambda tf, x: tf.reduce_max(tf.gather(x, [4, 1, 1], axis=-1), axis=[0, 1]),
    "gather_nd_sum": lambda tf, x: tf.reduce_sum(tf.sin(tf.gather_nd(x, [[0, 1, 2], [3, 0, 0], [0, 1, 2]]))),
    # concat / split round trips
    "concat_split": lambda tf, x: tf.reduce_sum(
        tf.split(tf.concat([x, tf.square(x), x[:, :1]], 1), [4, 6, 1], 1)[1] * 3.0),
    "split_concat": lambda tf, x: tf.reduce_sum(tf.concat(tf.split(x, 5, axis=1)[::-1], 0) ** 3),
    "stack_unstack": lambda tf, x: tf.add_n([u * float(i) for i, u in enumerate(tf.unstack(tf.stack([x, -x], 1), axis=2))]),
    # dynamic partition / stitch
    "partition_stitch": lambda tf, x: tf.reduce_sum(tf.dynamic_stitch(
        [[3, 0], [1, 2]], [p * p for p in tf.dynamic_partition(x, [1, 0, 1, 0], 2)])),
    "partition_mean": lambda tf, x: tf.add_n([tf.reduce_mean(p) * float(i + 1)
                                              for i, p in enumerate(tf.dynamic_partition(x, [2, 0, 2, 1], 3))]),
    # reshapes, pads, tiles, selections
    "pad_tile_transpose": lambda tf, x: tf.reduce_sum(
        tf.transpose(tf.tile(tf.pad(x, [[1, 0], [0, 0], [2, 1]], mode="SYMMETRIC"), [1, 2, 1]), [2, 0, 1]) ** 2),
    "select_where": lambda tf, x: tf.reduce_sum(tf.where(x > 0.0, tf.sqrt(tf.abs(x) + 1.0), x * x)),
    "boolean_mask": lambda tf, x: tf.reduce_sum(tf.boolean_mask(x, x[..., 0] > 0.0) ** 2),
    "one_hot_matmul": lambda tf, x: tf.reduce_sum(
        tf.matmul(tf.one_hot([1, 3, 0], 4), tf.reshape(x, [4, 30])) ** 2),
    "reshape_squeeze": lambda tf, x: tf.reduce_sum(tf.squeeze(tf.reshape(x, [4, 1, -1])) * tf.range(30.0)),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composite_gradients_match_tensorflow(tf1: Any, name: str) -> None:
    value = np.linspace(-2.0, 2.5, 120).astype(np.float32).reshape(4, 5, 6)

    def graph(tf: Any) -> Any:
        x = tf.constant(value)
        (g,) = _grads(tf, COMPOSITES[name](tf, x), [x])
        return g

    assert_same(tf1, graph, rtol=1e-5, atol=1e-5)


def test_integer_inputs_and_indices_get_no_gradient(tf1: Any) -> None:
    def unconnected(tf: Any) -> list[bool]:
        with tf.Graph().as_default():
            x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
            i = tf.constant([1, 0])
            shape = tf.constant([2, 2])
            ys = [tf.gather(x, i), tf.reshape(x, shape), tf.scatter_nd(tf.reshape(i, [2, 1]), x, shape),
                  tf.one_hot(i, 3, on_value=x[0, 0]), tf.fill(shape, x[1, 1])]
            return [g is None for g in _grads(tf, ys, [i, shape, x])]

    assert unconnected(fl) == unconnected(tf1) == [True, True, False]


def test_gradient_op_names_follow_tensorflow(tf1: Any) -> None:
    def names(tf: Any) -> list[tuple[str, str]]:
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, [2, 3, 4])
            y = tf.transpose(tf.reshape(x[:, 1:], [2, -1]))
            n0 = len(g.get_operations())
            _grads(tf, y, [x])
            return sorted((op.name, op.type) for op in g.get_operations()[n0:])

    theirs = set(names(tf1))
    ours = set(names(fl))
    for pair in (("gradients/Reshape_grad/Reshape", "Reshape"),
                 ("gradients/transpose_grad/InvertPermutation", "InvertPermutation"),
                 ("gradients/strided_slice_grad/StridedSliceGrad", "StridedSliceGrad")):
        assert pair in theirs and pair in ours, pair


def test_gather_negative_batch_dims_needs_indices_rank() -> None:
    x = fl.placeholder(fl.float32, [2, 3])
    i = fl.placeholder(fl.int32)
    y = fl.gather(x, i, axis=1, batch_dims=-1)
    with pytest.raises(ValueError, match="batch_dims < 0 and the rank of the indices is unknown"):
        gradients(y, [x])


def test_gradient_dtype_follows_input(tf1: Any) -> None:
    def graph(tf: Any) -> Any:
        x = tf.constant(np.ones((2, 3), np.float16))
        return _grads(tf, [tf.tile(x, [2, 1]), tf.pad(x, [[0, 1], [1, 0]])], [x])

    assert_same(tf1, graph)


def test_empty_tensors(tf1: Any) -> None:
    def graph(tf: Any) -> Any:
        x = tf.constant(np.zeros((0, 3), np.float32))
        y = tf.concat([x, x], 0)
        z = tf.gather(tf.constant(np.ones((3, 2), np.float32)), tf.zeros([0], tf.int32))
        return _grads(tf, [tf.reduce_sum(y[:, ::2]) + tf.reduce_sum(z)], [x])

    assert_same(tf1, graph)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_passes_indexed_slices_on(tf1: Any, axis: int) -> None:
    def graph(tf: Any) -> Any:
        a = tf.constant(np.arange(6.0, dtype=np.float32).reshape(2, 3))
        b = tf.constant(np.arange(8.0, dtype=np.float32).reshape(2, 4) if axis else
                        np.arange(9.0, dtype=np.float32).reshape(3, 3))
        y = tf.gather(tf.concat([a, b], axis), [3, 1, 1] if axis == 0 else [1, 0, 1])
        return _grads(tf, y, [a, b], grad_ys=tf.ones_like(y) * 2.0)

    got = assert_same(tf1, graph)
    assert all(type(g).__name__ == "IndexedSlicesValue" for g in got)


@pytest.mark.filterwarnings("ignore:Converting sparse IndexedSlices")  # TensorFlow warns too
def test_unknown_shapes_and_int64_indices(tf1: Any) -> None:
    value = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4) / 7.0

    def graph(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, [None, 3, None])
        u = tf.placeholder(tf.float32)
        i64 = lambda v: tf.constant(v, dtype=tf.int64)  # noqa: E731
        ys = [
            tf.reshape(x, i64([4, -1])),
            tf.squeeze(tf.expand_dims(x, 1)),
            tf.concat([x, u, x[:, :, :1]], 2),
            tf.tile(x, i64([1, 2, 1])),
            tf.pad(x, i64([[1, 0], [0, 0], [0, 2]])),
            tf.pad(x, i64([[1, 0], [0, 1], [0, 2]]), mode="REFLECT"),
            tf.slice(x, i64([1, 0, 1]), i64([-1, 2, 2])),
            tf.strided_slice(x, i64([1, 2]), i64([-3, 0]), i64([-1, -2])),
            tf.transpose(x, i64([1, 2, 0])),
            tf.gather(x, i64([[2, 0]]), axis=i64(1)),
            tf.gather(x, i64([1, 1, 0])),
            tf.reverse(x, i64([1])),
            tf.gather_nd(x, i64([[1, 2], [0, 0]])),
        ]
        loss = tf.add_n([tf.reduce_sum(y * y) for y in ys])
        return _grads(tf, loss, [x, u]), {x: value, u: value[..., :2] * 3.0}

    assert_same(tf1, graph, rtol=1e-5, atol=1e-4)


def test_gather_int64_indices_give_int64_slices(tf1: Any) -> None:
    def graph(tf: Any) -> Any:
        x = tf.constant(np.arange(6.0, dtype=np.float32).reshape(3, 2))
        (g,) = _grads(tf, tf.gather(x, tf.constant([2, 2, 0], tf.int64)), [x])
        return g

    assert assert_same(tf1, graph).indices.dtype == np.int64


def test_gather_rows_aggregate_with_dense_partials(tf1: Any) -> None:
    def graph(tf: Any) -> Any:
        x = tf.constant(np.arange(6.0, dtype=np.float32).reshape(3, 2))
        ys = [tf.gather(x, tf.constant([2, 2], tf.int64)), tf.gather(x, [1]), x * 2.0]
        dense = _grads(tf, [tf.reduce_sum(y) for y in ys], [x])
        sparse = _grads(tf, [tf.reduce_sum(y) for y in ys[:2]], [x])
        return dense + sparse

    dense, sparse = assert_same(tf1, graph)
    assert isinstance(dense, np.ndarray) and sparse.indices.dtype == np.int64


def test_variable_gradients_through_lookups(tf1: Any) -> None:
    def graph(tf: Any) -> Any:
        emb = tf.Variable(np.arange(12.0, dtype=np.float32).reshape(4, 3), name="emb")
        rows = tf.gather(emb, [[0, 2], [2, 2]])
        lookups = _grads(tf, [tf.reduce_sum(tf.gather(emb, [3, 1]) * 2.0), tf.reduce_sum(rows * rows)], [emb])
        slices = _grads(tf, tf.reduce_sum(emb[1:, ::2] * emb[:0:-1, 1:]), [emb])
        return lookups + slices

    assert_same(tf1, graph)


def test_broadcast_reduction_without_broadcast_gradient_args(monkeypatch: Any) -> None:
    """The fallback that computes the reduction axes from a comparison of shapes."""
    from tests.ops.gradient_check import GradCase, check_case

    monkeypatch.setattr(array_grad, "_declared", lambda op_type: False)
    for name in ("BroadcastTo", "SelectV2"):
        build, arrays = CASES[name]
        check_case(GradCase(name, build, arrays))
