"""Gradients of the sparse ops: tf.gradients on both sides (TensorFlow's graphs give
TensorFlow's numbers), and finite-difference cases for the gradient TABLE
(tests.ops.gradient_check) of every differentiable sparse op, checked here too.

Gradients reach a SparseTensor's values (and dense operands); indices and shapes
get None, as in TensorFlow.  With `sparse_gradient` the sparse segment ops give an
IndexedSlices (fetched as (values, indices, dense_shape))."""

from __future__ import annotations

import numpy as np
import pytest

from tests.difftest import assert_same, assert_same_error
from tests.ops.gradient_check import TABLE, check_case, grad_case

F64 = np.float64
IND3 = np.array([[0, 0], [0, 2], [1, 1], [2, 0], [2, 2]], np.int64)
UNSORTED = np.array([[2, 2], [0, 2], [1, 1], [2, 0], [0, 0]], np.int64)
W = np.random.RandomState(3).uniform(0.5, 1.5, (32,))


def _weighted(tf, y):
    """sum(y * w) with fixed weights, so no gradient cancels by symmetry."""
    flat = tf.reshape(y, [-1])
    return tf.reduce_sum(flat * tf.slice(tf.constant(W, dtype=y.dtype), [0], tf.shape(flat)))


def _grads(tf, y, xs):
    return [g if g is not None else tf.constant("none") for g in tf.gradients(_weighted(tf, y), xs)]


def _st(tf, values, ind=IND3, shape=(3, 3)):
    return tf.SparseTensor(ind, values, np.array(shape, np.int64))


@pytest.mark.parametrize("adj_a,adj_b", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_grad(tf1, adj_a, adj_b):
    def build(tf):
        v = tf.constant(np.arange(1, 6, dtype=F64))
        b = tf.constant(np.arange(6, dtype=F64).reshape((2, 3) if adj_b else (3, 2)) - 2.5)
        y = tf.sparse_tensor_dense_matmul(_st(tf, v), b, adjoint_a=adj_a, adjoint_b=adj_b)
        return _grads(tf, y, [v, b])
    assert_same(tf1, build)


@pytest.mark.parametrize("axis,keep", [(None, False), (0, False), (1, True), (-1, False), ([0, 1], True)])
def test_reduce_sum_grad(tf1, axis, keep):
    def build(tf):
        v = tf.constant(np.arange(1, 6, dtype=F64))
        y = tf.sparse_reduce_sum(_st(tf, v), axis, keepdims=keep)
        return _grads(tf, tf.reshape(y, [-1]), [v])
    assert_same(tf1, build)


def test_add_grads(tf1):
    def build(tf):
        a = tf.constant(np.array([1.0, -2.0, 3.0, 0.5, 2.0]))
        b = tf.constant(np.array([-1.0, 4.0, 0.25]))
        sa = _st(tf, a)
        sb = tf.SparseTensor(np.array([[0, 0], [1, 0], [2, 2]], np.int64), b, np.array([3, 3], np.int64))
        total = tf.sparse.add(sa, sb, threshold=0.1)  # [0,0] sums to 0 and is dropped
        dense = tf.constant(np.arange(9, dtype=F64).reshape(3, 3))
        mixed = tf.sparse.add(sa, dense)
        return _grads(tf, total.values, [a, b]) + _grads(tf, mixed, [a, dense])
    assert_same(tf1, build)


def test_softmax_grad(tf1):
    def build(tf):
        v = tf.constant(np.array([0.5, -1.0, 2.0, 0.0, 1.5]))
        return _grads(tf, tf.sparse.softmax(_st(tf, v)).values, [v])
    assert_same(tf1, build)


def test_reorder_fill_slice_to_dense_grads(tf1):
    def build(tf):
        v = tf.constant(np.array([0.5, -1.0, 2.0, 3.0, 1.5]))
        d = tf.constant(np.float64(-2.0))
        unsorted = _st(tf, v, UNSORTED)
        out = [_grads(tf, tf.sparse.reorder(unsorted).values, [v])]
        filled, _ = tf.sparse.fill_empty_rows(_st(tf, v, IND3, (5, 3)), d)
        out.append(_grads(tf, filled.values, [v, d]))
        out.append(_grads(tf, tf.sparse.slice(_st(tf, v), [0, 1], [3, 2]).values, [v]))
        out.append(_grads(tf, tf.sparse.to_dense(_st(tf, v), default_value=d), [v, d]))
        out.append(_grads(tf, tf.sparse.to_dense(tf.sparse.transpose(_st(tf, v))), [v]))
        return out
    assert_same(tf1, build)


@pytest.mark.parametrize("dense_shape", [(3, 3), (3,), (3, 1)])
def test_cwise_grads(tf1, dense_shape):
    def build(tf):
        v = tf.constant(np.array([0.5, -1.0, 2.0, 3.0, 1.5]))
        dense = tf.constant(np.arange(1, 1 + int(np.prod(dense_shape)), dtype=F64).reshape(dense_shape))
        s = _st(tf, v)
        return _grads(tf, (s * dense).values, [v, dense]) + _grads(tf, (s / dense).values, [v, dense]) \
            + _grads(tf, (dense * s).values, [v, dense])
    assert_same(tf1, build)


def test_cwise_grad_of_a_scalar_fails_as_tensorflows(tf1):
    # TensorFlow's gradient adds into a rank-0 dense tensor with SparseTensorDenseAdd, which refuses it.
    def build(tf):
        v = tf.constant(np.array([0.5, -1.0, 2.0, 3.0, 1.5]))
        d = tf.constant(np.float64(2.0))
        return tf.gradients(tf.reduce_sum((_st(tf, v) * d).values), [d])
    e_tf, e_fl = assert_same_error(tf1, build)
    assert "Only tensors with ranks between 1 and 5 are currently supported.  Tensor rank: 0" in e_fl.message
    assert "Only tensors with ranks between 1 and 5 are currently supported.  Tensor rank: 0" in e_tf.message


def test_values_through_dense_ops(tf1):
    def build(tf):
        v = tf.constant(np.array([0.5, -1.0, 2.0, 3.0, 1.5]))
        s = _st(tf, tf.square(v) * 2.0)
        y = tf.sparse_tensor_dense_matmul(s, tf.ones([3, 2], tf.float64))
        return _grads(tf, y, [v]) + _grads(tf, tf.sparse.reduce_sum(s, 1), [v])
    assert_same(tf1, build)


@pytest.mark.parametrize("fn", ["sparse_segment_sum", "sparse_segment_mean", "sparse_segment_sqrt_n"])
@pytest.mark.parametrize("num", [None, 4])
def test_segment_grads(tf1, fn, num):
    def build(tf):
        data = tf.constant(np.arange(8, dtype=F64).reshape(4, 2))
        kw = {} if num is None else {"num_segments": num}
        y = getattr(tf, fn)(data, [0, 2, 2, 3], [0, 0, 1, 3], **kw)
        dense = tf.gradients(_weighted(tf, y), [data])
        sparse = tf.gradients(_weighted(tf, getattr(tf, fn)(data, [3, 0, 3], [0, 1, 1], sparse_gradient=True, **kw)),
                              [data])[0]
        return dense + [sparse.values, sparse.indices, sparse.dense_shape]
    assert_same(tf1, build)


# --- finite differences (the gradient TABLE's entries for the sparse ops) -----------------------
V5 = np.array([0.5, -1.0, 2.0, 3.0, 1.5])


def _sp(tf, v, ind=IND3, shape=(3, 3)):
    return tf.SparseTensor(ind, v, np.array(shape, np.int64))


grad_case("SparseTensorDenseMatMul", V5, np.arange(6.0).reshape(3, 2))(
    lambda tf, v, b: tf.sparse_tensor_dense_matmul(_sp(tf, v), b, adjoint_a=True))
grad_case("SparseReduceSum", V5)(lambda tf, v: tf.sparse_reduce_sum(_sp(tf, v), 1))
grad_case("SparseReorder", V5)(lambda tf, v: tf.sparse.reorder(_sp(tf, v, UNSORTED)).values)
grad_case("SparseAdd", V5, np.array([1.0, -2.0, 0.5]))(
    lambda tf, a, b: tf.sparse.add(_sp(tf, a), _sp(tf, b, np.array([[0, 0], [1, 0], [2, 2]], np.int64))).values)
grad_case("SparseTensorDenseAdd", V5, np.arange(9.0).reshape(3, 3))(
    lambda tf, v, d: tf.sparse.add(_sp(tf, v), d))
grad_case("SparseSlice", V5)(lambda tf, v: tf.sparse.slice(_sp(tf, v), [1, 0], [2, 3]).values)
grad_case("SparseDenseCwiseMul", V5, np.array([1.0, 2.0, 3.0]))(lambda tf, v, d: (_sp(tf, v) * d).values)
grad_case("SparseDenseCwiseDiv", V5, np.array([[1.0], [2.0], [3.0]]))(lambda tf, v, d: (_sp(tf, v) / d).values)
grad_case("SparseSoftmax", V5)(lambda tf, v: tf.sparse.softmax(_sp(tf, v)).values)
grad_case("SparseFillEmptyRows", V5, np.array(2.0))(
    lambda tf, v, d: tf.sparse.fill_empty_rows(_sp(tf, v, IND3, (5, 3)), d)[0].values)
for _fn, _op in (("sparse_segment_sum", "Sum"), ("sparse_segment_mean", "Mean"), ("sparse_segment_sqrt_n", "SqrtN")):
    grad_case(f"SparseSegment{_op}", np.arange(8.0).reshape(4, 2))(
        lambda tf, x, _fn=_fn: getattr(tf, _fn)(x, [0, 2, 2, 3], [0, 0, 1, 3]))
    grad_case(f"SparseSegment{_op}WithNumSegments", np.arange(8.0).reshape(4, 2))(
        lambda tf, x, _fn=_fn: getattr(tf, _fn)(x, [3, 0, 3], [0, 1, 1], num_segments=3, sparse_gradient=True))

_MINE = [c for name, cases in TABLE.items() if name.startswith("Sparse") for c in cases
         if c.where.startswith("test_sparse_grad")]


@pytest.mark.parametrize("case", _MINE, ids=[c.id for c in _MINE])
def test_finite_differences(case):
    check_case(case)


def test_every_sparse_gradient_has_a_case():
    from flowlab.ops import gradient_registry
    from flowlab.ops.gradients_impl import _load_gradient_modules
    from flowlab.ops.op_def import registered_ops

    _load_gradient_modules()
    grads = gradient_registry.registered_gradients()
    ours = {c.op_type for c in _MINE} | {"SparseToDense"}  # SparseToDense: tests/ops/test_sparse_ops.py
    sparse = {o for o in registered_ops() if o.startswith("Sparse") and grads.get(o) is not None
              # an nn op, and a dense MatMul with sparsity hints (its finite-difference
              # cases: tests/ops/test_sparse_matmul_grad.py)
              and o not in ("SparseSoftmaxCrossEntropyWithLogits", "SparseMatMul")}
    assert sparse <= ours, sorted(sparse - ours)
    declared = {o for o in registered_ops() if o.startswith("Sparse") and not gradient_registry.is_declared(o)}
    assert not declared, sorted(declared)
