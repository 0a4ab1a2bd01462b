"""TensorArray: values against NumPy and TensorFlow, static shapes, runtime errors,
and gradients (table cases plus differential checks)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab.ops.tensor_array_ops import TensorArray
from tests.difftest import assert_same, assert_same_error
from tests.ops.gradient_check import grad_case

RS = np.random.RandomState(0)


def _ta(tf, *args, **kwargs):
    return tf.TensorArray(*args, **kwargs) if tf is not fl else TensorArray(*args, **kwargs)


def _run(fetches, feed=None):
    with fl.Session() as sess:
        return sess.run(fetches, feed)


# --- values -----------------------------------------------------------------------------
def test_write_read_stack_values_and_static_shapes():
    ta = TensorArray(fl.float32, size=3, clear_after_read=False)
    ta = ta.write(0, [1.0, 2.0]).write(1, [3.0, 4.0]).write(2, [5.0, 6.0])
    s, r = ta.stack(), ta.read(1)
    assert s.shape.as_list() == [3, 2] and r.shape.as_list() == [2]
    assert ta.handle.op.type == "TensorArrayV3" and ta.handle.op.name == "TensorArray"
    assert ta.flow.op.name == "TensorArrayWrite_2/TensorArrayWriteV3"
    sv, rv = _run([s, r])
    np.testing.assert_array_equal(sv, [[1, 2], [3, 4], [5, 6]])
    assert sv.dtype == np.float32 and rv.dtype == np.float32


def test_unstack_gather_concat_split_size_dynamic():
    x = np.arange(12, dtype=np.float64).reshape(4, 3)
    ta = TensorArray(fl.float64, size=0, dynamic_size=True, clear_after_read=False).unstack(x)
    g, c, n = ta.gather([3, 0]), ta.concat(), ta.size()
    assert n.op.type == "TensorArraySizeV3"
    gv, cv, nv = _run([g, c, n])
    np.testing.assert_array_equal(gv, x[[3, 0]])
    np.testing.assert_array_equal(cv, x.reshape(-1))
    assert nv == 4 and nv.dtype == np.int32
    sp = TensorArray(fl.int32, size=3, infer_shape=False).split(np.arange(6, dtype=np.int32), [1, 2, 3])
    np.testing.assert_array_equal(_run(sp.concat()), np.arange(6))
    np.testing.assert_array_equal(_run(sp.read(2)), [3, 4, 5])


def test_scalars_bool_and_empty():
    ta = TensorArray(fl.bool, size=2).write(0, True).write(1, False)
    v = _run(ta.stack())
    assert v.dtype == np.bool_ and v.tolist() == [True, False]
    empty = TensorArray(fl.float32, size=0, element_shape=[3]).stack()
    ev = _run(empty)
    assert ev.shape == (0, 3) and ev.dtype == np.float32


def test_unwritten_element_of_known_shape_reads_as_zeros():
    ta = TensorArray(fl.float32, size=3).write(1, [1.0, 2.0])
    np.testing.assert_array_equal(_run(ta.stack()), [[0, 0], [1, 2], [0, 0]])


def test_identity_orders_after_control_dependencies():
    v = fl.Variable(1.0)
    ta = TensorArray(fl.float32, size=1).write(0, 5.0)
    with fl.control_dependencies([fl.assign(v, 7.0)]):
        ta2 = ta.identity()
    r = ta2.read(0) + v
    with fl.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(r) == 12.0


def test_close_then_read_fails():
    ta = TensorArray(fl.float32, size=1).write(0, 1.0)
    closed = ta.close()
    with fl.control_dependencies([closed]):
        r = ta.identity().read(0)
    with pytest.raises(fl.errors.InvalidArgumentError, match="has already been closed"):
        _run(r)


def test_build_time_shape_errors():
    ta = TensorArray(fl.float32, size=2).write(0, [[1.0]])
    with pytest.raises(ValueError, match=r"Inconsistent shapes: saw \(1,\) but expected \(1, 1\)"):
        ta.write(1, [1.0])
    with pytest.raises(ValueError, match="rank 0"):
        ta.read([0, 1])
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
        TensorArray(fl.float32, size=2).scatter([0, 1], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="Size must be provided"):
        TensorArray(fl.float32)
    with pytest.raises(ValueError, match="flow must not be None"):
        TensorArray(fl.float32, handle=ta.handle)


@pytest.mark.parametrize("build, match", [
    (lambda: TensorArray(fl.float32, size=2).write(0, 1.0).write(0, 2.0).stack(),
     "because it has already been written to"),
    (lambda: TensorArray(fl.float32, size=2).write(3, 1.0).flow,
     "Tried to write to index 3 but array is not resizeable and size is: 2"),
    (lambda: TensorArray(fl.float32, size=2).read(5), "Tried to read from index 5 but array size is: 2"),
    (lambda: TensorArray(fl.float32, size=2).read(1), "Furthermore, the element shape is not fully"),
    (lambda: TensorArray(fl.float32, size=2, infer_shape=False).write(0, [1.0]).write(1, [1.0, 2.0]).stack(),
     r"inconsistent shapes.  Index 0 has shape: \[1\] but index 1 has shape: \[2\]"),
    (lambda: TensorArray(fl.float32, size=2).split([1.0, 2.0, 3.0], [1, 1]).flow,
     "sum of lengths is 2 and value's shape is: \\[3\\]"),
    (lambda: TensorArray(fl.float32, size=2).unstack([1.0, 2.0, 3.0]).flow,
     r"Max scatter index must be < array size \(2 vs. 2\)"),
    (lambda: TensorArray(fl.float32, size=2).write(0, fl.constant(1)).flow,
     "TensorArray dtype is float32 but Op is trying to write dtype int32"),
])
def test_runtime_errors(build, match):
    with pytest.raises(fl.errors.InvalidArgumentError, match=match):
        _run(build())


def test_read_twice_after_clear():
    ta = TensorArray(fl.float32, size=1).write(0, 1.0)
    with pytest.raises(fl.errors.InvalidArgumentError, match="Could not read index 0 twice"):
        _run([ta.read(0), ta.read(0)])
    ta = TensorArray(fl.float32, size=1, clear_after_read=False).write(0, 1.0)
    assert _run([ta.read(0), ta.read(0)]) == [1.0, 1.0]


def test_empty_stack_of_unknown_shape_is_unimplemented():
    with pytest.raises(fl.errors.UnimplementedError, match="size zero"):
        _run(TensorArray(fl.float32, size=0).stack())


# --- against TensorFlow -----------------------------------------------------------------
def test_same_as_tensorflow_values(tf1):
    x = RS.randn(4, 3).astype(np.float32)

    def build(tf):
        ta = _ta(tf, tf.float32, size=4).unstack(x)
        t2 = _ta(tf, tf.float32, size=0, dynamic_size=True).write(2, [1.0, 2.0])
        t3 = _ta(tf, tf.int64, size=2, infer_shape=False).split(np.arange(5), [2, 3])
        return [ta.stack(), ta.size(), t2.stack(), t2.size(), t3.concat(),
                _ta(tf, tf.float32, size=0, element_shape=[2, 3]).stack()]

    assert_same(tf1, build)


def test_same_error_as_tensorflow(tf1):
    assert_same_error(tf1, lambda tf: _ta(tf, tf.float32, size=2).write(0, 1.0).write(0, 2.0).stack())
    assert_same_error(tf1, lambda tf: _ta(tf, tf.float32, size=0).stack())


def test_gradients_same_as_tensorflow(tf1):
    xv = RS.randn(3, 2).astype(np.float32)

    def build(tf):
        x = tf.placeholder(tf.float32, [3, 2])
        ta = _ta(tf, tf.float32, size=3).unstack(x)
        y = ta.read(1) * 2.0 + ta.read(2)
        t2 = _ta(tf, tf.float32, size=2).write(0, x[0] * x[1]).write(1, x[2])
        z = tf.reduce_sum(t2.stack() * 3.0)
        return [tf.gradients(y, x)[0], tf.gradients(z, x)[0]], {x: xv}

    assert_same(tf1, build)


def test_gradients_of_read_twice_add_up():
    x = fl.placeholder(fl.float64, [2])
    ta = TensorArray(fl.float64, size=1, clear_after_read=False).write(0, x)
    y = ta.read(0) * 2.0 + ta.read(0) * 3.0
    np.testing.assert_allclose(_run(fl.gradients(y, x)[0], {x: [1.0, 2.0]}), [5.0, 5.0])


def test_two_gradient_calls_keep_separate_arrays():
    x = fl.placeholder(fl.float64, [2, 2])
    s = TensorArray(fl.float64, size=2).unstack(x).stack()
    g1 = fl.gradients(s * 2.0, x)[0]
    g2 = fl.gradients(s * 3.0, x)[0]
    a, b = _run([g1, g2], {x: np.ones((2, 2))})
    np.testing.assert_allclose(a, 2.0)
    np.testing.assert_allclose(b, 3.0)


# --- gradient table ---------------------------------------------------------------------
@grad_case("TensorArrayReadV3", RS.randn(3, 2))
def _(tf, x):
    ta = TensorArray(tf.float64, size=3).unstack(x)
    return ta.read(0) * ta.read(2)


@grad_case("TensorArrayWriteV3", RS.randn(2), RS.randn(2))
def _(tf, a, b):
    return TensorArray(tf.float64, size=2).write(0, a * b).write(1, b).stack()


@grad_case("TensorArrayGatherV3", RS.randn(4, 2))
def _(tf, x):
    return TensorArray(tf.float64, size=4).unstack(x).gather([3, 1])


@grad_case("TensorArrayScatterV3", RS.randn(3, 2))
def _(tf, x):
    return TensorArray(tf.float64, size=4).scatter([0, 2, 3], x * x).stack()


@grad_case("TensorArrayConcatV3", RS.randn(5))
def _(tf, x):
    return TensorArray(tf.float64, size=2, infer_shape=False).split(x, [2, 3]).concat() * x


@grad_case("TensorArraySplitV3", RS.randn(4, 2))
def _(tf, x):
    ta = TensorArray(tf.float64, size=2).split(x, [2, 2])
    return ta.read(0) * 2.0 + ta.read(1)
