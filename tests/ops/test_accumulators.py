"""ConditionalAccumulator and SparseConditionalAccumulator, differential against
TensorFlow: values, dtypes, stale gradients, reductions, the sparse merge order,
static shapes and names, and the InvalidArgumentError texts."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import flowlab as fl
from flowlab.ops.accumulator_ops import ConditionalAccumulator, SparseConditionalAccumulator


def _acc(tf):
    return getattr(tf, "ConditionalAccumulator", ConditionalAccumulator)


def _sacc(tf):
    return getattr(tf, "SparseConditionalAccumulator", SparseConditionalAccumulator)


def _run_steps(tf, build):
    """`build(tf)` returns a list of fetches run one after another in one session."""
    with tf.Graph().as_default():
        steps = build(tf)
        with tf.Session() as sess:
            return [sess.run(s) for s in steps]


def _check(e, a, path):
    if isinstance(e, (tuple, list)):
        assert isinstance(a, (tuple, list)) and len(a) == len(e), path
        assert type(a).__name__ == type(e).__name__, (path, type(a), type(e))
        for i, (x, y) in enumerate(zip(e, a)):
            _check(x, y, f"{path}[{i}]")
        return
    if e is None:
        assert a is None, path
        return
    x, y = np.asarray(e), np.asarray(a)
    assert x.dtype == y.dtype, (path, x.dtype, y.dtype)
    assert x.shape == y.shape, (path, x.shape, y.shape)
    np.testing.assert_allclose(y, x, rtol=1e-6, err_msg=path)


def _same(tf1, build):
    expected = _run_steps(tf1, build)
    actual = _run_steps(fl, build)
    _check(expected, actual, "steps")
    return actual


def _same_error(tf1, build):
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            steps = build(tf)
            with tf.Session() as sess:
                with pytest.raises(tf.errors.InvalidArgumentError) as info:
                    for s in steps:
                        sess.run(s)
        msgs.append(info.value.message)
    # TensorFlow's message carries the node and traceback; the error text itself must
    # appear in both.
    text = msgs[1].split(": ", 1)[1].rsplit(" (defined at", 1)[0]
    assert text in msgs[0], (text, msgs[0])
    return text


def test_mean_sum_stale_and_global_step(tf1):
    def build(tf):
        q = _acc(tf)(tf.float32, shape=[2])
        s = _acc(tf)(tf.float64, shape=[], reduction_type="SUM")
        return [q.apply_grad([1.0, 2.0]), q.apply_grad([3.0, 5.0]), q.num_accumulated(), q.take_grad(2),
                q.num_accumulated(),
                q.apply_grad([1.0, 1.0], local_step=0),  # stale: the global step is now 1
                q.num_accumulated(), q.apply_grad([4.0, 4.0], local_step=1), q.apply_grad([0.0, 1.0], local_step=7),
                q.apply_grad([1.0, 1.0], local_step=2), q.take_grad(2),  # mean of all three
                q.set_global_step(10), q.apply_grad([9.0, 9.0], local_step=9), q.num_accumulated(),
                q.set_global_step(3),  # lower values are accepted too
                q.apply_grad([2.0, 2.0], local_step=3), q.take_grad(1),
                s.apply_grad(1.0), s.apply_grad(2.5), s.apply_grad(4.0), s.take_grad(3)]

    out = _same(tf1, build)
    np.testing.assert_allclose(out[3], [2.0, 3.5])
    assert out[6] == 0 and out[13] == 0
    np.testing.assert_allclose(out[10], [5.0 / 3, 6.0 / 3], rtol=1e-6)
    assert out[-1] == 7.5


def test_float16_and_unknown_shape(tf1):
    def build(tf):
        q = _acc(tf)(tf.float16, shape=None)
        return [q.apply_grad(np.float16([[1.5, 3.0]])), q.apply_grad(np.float16([[2.0, 0.25]])), q.take_grad(2)]

    out = _same(tf1, build)
    assert out[-1].dtype == np.float16


def test_static_shapes_names_and_types(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            q = _acc(tf)(tf.float32, shape=[2, None], name="acc")
            assert q.name == "acc" and q.dtype == tf.float32
            assert q.accumulator_ref.op.type == "ResourceConditionalAccumulator"
            assert q.accumulator_ref.dtype == tf.resource and q.accumulator_ref.shape.as_list() == [2]
            t = q.take_grad(1)
            assert t.op.name == "ResourceAccumulatorTakeGradient" and t.shape.as_list() == [2, None]
            assert q.apply_grad(np.ones((2, 3), np.float32)).type == "ResourceAccumulatorApplyGradient"
            assert q.num_accumulated().name == "acc_NumAccumulated:0"
            assert q.set_global_step(1).type == "ResourceAccumulatorSetGlobalStep"
            assert _acc(tf)(tf.float32).take_grad(1).shape.ndims is None
            with pytest.raises(ValueError, match=r"Shapes \(3,\) and \(2, \?\)|incompatible"):
                q.apply_grad([1.0, 2.0, 3.0])
            with pytest.raises(ValueError, match="not in: \"MEAN\", \"SUM\""):
                _acc(tf)(tf.float32, reduction_type="MAX")
            with pytest.raises(TypeError):
                _acc(tf)(tf.string)
            s = _sacc(tf)(tf.float32, shape=[3, 2])
            assert s.accumulator_ref.op.type == "SparseConditionalAccumulator"
            assert s.accumulator_ref.dtype.name == "string_ref" and s.accumulator_ref.shape.as_list() == [2]
            assert s.num_accumulated().op.type == "AccumulatorNumAccumulated"
            assert s.set_global_step(2).type == "AccumulatorSetGlobalStep"
            idx, vals, shape = s.take_grad(1)
            assert (idx.dtype, vals.dtype, shape.dtype) == (tf.int64, tf.float32, tf.int64)
            assert type(s.take_grad(1)).__name__ == "SparseAccumulatorTakeGradient"
            assert s.take_indexed_slices_grad(1).indices.dtype == tf.int64


@pytest.mark.parametrize("grad", [
    np.ones((1, 2), np.float32),  # rank
    np.ones((3,), np.float32),  # dim
])
def test_dense_shape_errors(tf1, grad):
    def build(tf):
        q = _acc(tf)(tf.float32, shape=[2])
        return [q.apply_grad(tf.placeholder_with_default(grad, None))]

    _same_error(tf1, build)


def test_dense_shape_error_against_accumulated_and_num_required(tf1):
    def build(tf):
        q = _acc(tf)(tf.float32)
        return [q.apply_grad([1.0, 2.0]), q.apply_grad([1.0, 2.0, 3.0])]

    assert _same_error(tf1, build) == "Shape mismatch: expected [2], got [3]"

    def build0(tf):
        return [_acc(tf)(tf.float32).take_grad(0)]

    assert _same_error(tf1, build0) == "Argument num_required must be positive, but was 0"


def test_stale_gradients_skip_validation(tf1):
    def build(tf):
        q = _acc(tf)(tf.float32, shape=[2])
        s = _sacc(tf)(tf.float32, shape=[3, 2])
        return [q.set_global_step(3), s.set_global_step(3),
                q.apply_grad(tf.placeholder_with_default([1.0, 2.0, 3.0], [None]), local_step=2),
                s.apply_grad([7], [[1.0, 2.0, 3.0]], local_step=1),
                q.num_accumulated(), s.num_accumulated()]

    out = _same(tf1, build)
    assert out[-2:] == [0, 0]


def test_sparse_mean_per_index_and_merge_order(tf1):
    def build(tf):
        q = _sacc(tf)(tf.float32, shape=[3, 2])
        u = _sacc(tf)(tf.float32)  # unknown shape: output dim 0 is -1
        d = _sacc(tf)(tf.float32, shape=[None, 2])
        s = _sacc(tf)(tf.float64, shape=[3, 2], reduction_type="SUM")
        return [
            q.apply_grad([0, 2], [[1.0, 2.0], [3.0, 4.0]], grad_shape=[3, 2]),
            q.apply_grad([2, 1], [[10.0, 20.0], [5.0, 5.0]]), q.num_accumulated(), q.take_grad(2),
            u.apply_grad([3, 0, 3], [[1.0, 2.0], [7.0, 7.0], [1.0, 1.0]]),
            u.apply_grad([1, 3], [[1.0, 2.0], [1.0, 1.0]]),
            u.apply_grad([0, 0], [[1.0, 2.0], [1.0, 1.0]], grad_shape=[5, 2]), u.take_grad(1),
            d.apply_grad([3], [[1.0, 2.0]], grad_shape=[4, 2]), d.apply_grad([0], [[1.0, 2.0]]), d.take_grad(1),
            d.apply_grad(np.zeros([0], np.int64), np.zeros((0, 2), np.float32), local_step=1), d.take_grad(1),
            s.apply_indexed_slices_grad(tf.IndexedSlices(tf.constant([[1.0, 2.0]], tf.float64), tf.constant([1]),
                                                         tf.constant([3, 2]))),
            s.apply_grad([1], tf.constant([[1.0, 2.0]], tf.float64)), s.take_indexed_slices_grad(2),
        ]

    out = _same(tf1, build)
    np.testing.assert_array_equal(out[3][0], [0, 2, 1])
    np.testing.assert_allclose(out[3][1], [[1, 2], [6.5, 12], [5, 5]])


@pytest.mark.parametrize("case", [
    ([0], [[1.0, 2.0]], [4, 2]),  # shape dim 0
    ([0], [[1.0, 2.0, 3.0]], None),  # values dim 1
    ([0, 1], [[1.0, 2.0]], None),  # nnz
    ([5], [[1.0, 2.0]], None),  # index out of range
    ([0], [1.0, 2.0], None),  # values rank 1 with 1 index
    ([[0]], [[1.0, 2.0]], None),  # indices not a vector
    ([0], 1.0, None),  # 0-d values
    ([0], [[1.0, 2.0]], [3]),  # shape rank
])
def test_sparse_errors(tf1, case):
    def build(tf):
        q = _sacc(tf)(tf.float32, shape=[3, 2])
        return [q.apply_grad(case[0], case[1], grad_shape=case[2])]

    _same_error(tf1, build)


def test_sparse_errors_against_accumulated(tf1):
    for second in ([[[1.0, 2.0]]], [[1.0, 2.0, 3.0]]):
        def build(tf, second=second):
            q = _sacc(tf)(tf.float32)
            return [q.apply_grad([0], [[1.0, 2.0]]), q.apply_grad([0], second)]

        _same_error(tf1, build)

    def build_rank(tf):
        return [_sacc(tf)(tf.float32, shape=[3, 2, 2]).apply_grad([0], [[1.0, 2.0]])]

    assert _same_error(tf1, build_rank) == "Shape mismatch: expected values rank at least 3, got 2"


def test_no_kernel_for_integer_dtypes(tf1):
    for make in (_acc, _sacc):
        def build(tf, make=make):
            return [make(tf)(tf.int32).num_accumulated()]

        for tf in (tf1, fl):
            with tf.Graph().as_default():
                steps = build(tf)
                with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="DT_INT32"):
                    sess.run(steps[0])


def test_take_grad_blocks_until_enough_and_times_out():
    with fl.Graph().as_default():
        q = ConditionalAccumulator(fl.float32, shape=[2], shared_name="shared")
        x = fl.placeholder(fl.float32, [2])
        apply = q.apply_grad(x)
        apply_late = q.apply_grad(x, local_step=1)
        take = q.take_grad(3)
        with fl.Session() as sess:
            with pytest.raises(fl.errors.DeadlineExceededError):
                sess.run(take, options=fl.RunOptions(timeout_in_ms=100))
            result = {}
            t = threading.Thread(target=lambda: result.setdefault("v", sess.run(take)))
            t.start()
            for v in ([1.0, 2.0], [3.0, 4.0]):
                sess.run(apply, {x: v})
            time.sleep(0.05)
            assert t.is_alive()  # two of three
            sess.run(apply, {x: [5.0, 0.0]})
            t.join(10)
            np.testing.assert_allclose(result["v"], [3.0, 2.0])
            # A second accumulator op with the same shared_name is the same accumulator.
            other = ConditionalAccumulator(fl.float32, shared_name="shared", name="other")
            sess.run(apply, {x: [1.0, 1.0]})  # local step 0 < global step 1: dropped
            assert sess.run(other.num_accumulated()) == 0
            sess.run(apply_late, {x: [1.0, 1.0]})
            assert sess.run(other.num_accumulated()) == 1


def test_session_close_cancels_a_blocked_take():
    with fl.Graph().as_default():
        q = SparseConditionalAccumulator(fl.float32, shape=[3, 2])
        take = q.take_grad(1)
        sess = fl.Session()
        errs = []

        def run():
            try:
                sess.run(take)
            except fl.errors.OpError as e:
                errs.append(e)

        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.05)
        sess.close()
        t.join(10)
        assert not t.is_alive()
        assert errs and isinstance(errs[0], fl.errors.CancelledError)
