"""Python operators on Tensor (flowlab/ops/operators.py) against TensorFlow 1.x: the
ops they build (types, names, constants), result values and dtypes, reflected
operators with Python and NumPy values, bool vs integer bit ops, identity equality."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same


def ops_of(mod, build):
    g = mod.Graph()
    with g.as_default():
        out = build(mod)
    return [(op.name, op.type) for op in g.get_operations()], out


def run(t, feed=None):
    with fl.Session() as s:
        return s.run(t, feed)


X = np.array([[1.5, -2.0], [3.0, 0.5]], np.float32)
INTS = np.array([[7, -3], [4, 9]], np.int32)
BOOL = np.array([True, False, True, False])


def _arith(tf):
    x, i = tf.constant(X), tf.constant(INTS)
    return [x + x, 1 + x, x - 1, 1 - x, x * 2, 2 * x, x / 2, 2 / x, i / 2, 7 / i, i // 2, 7 // i,
            x // 0.5, i % 5, 7 % i, x % 1.25, x ** 2, 2 ** x, i ** 2, x @ x, X @ x, -x, -i, abs(x), abs(i),
            x + np.float32(2), np.float32(2) + x, X + x, np.array([1.0, 2.0]) * x]


def test_arithmetic_operators_match_tensorflow(tf1):
    out = assert_same(tf1, _arith)
    assert out[3].dtype == np.float32  # 1 - x_float is float32
    assert out[8].dtype == np.float64  # int / int is true division


def test_arithmetic_operators_build_tensorflow_ops(tf1):
    assert ops_of(fl, _arith)[0] == ops_of(tf1, _arith)[0]


def _compare(tf):
    x, i = tf.constant(X), tf.constant(INTS)
    return [x < 1, 1 < x, x <= x, x > 0.5, x >= x, i < 5, 3 >= i, X < x]


def test_comparison_operators(tf1):
    assert_same(tf1, _compare)
    assert ops_of(fl, _compare)[0] == ops_of(tf1, _compare)[0]


def _logic(tf):
    b, c, i = tf.constant(BOOL), tf.constant(BOOL[::-1].copy()), tf.constant(INTS)
    return [b & c, b | c, b ^ c, ~b, True & b, False | b, True ^ b, i & 6, i | 8, i ^ i, ~i, 5 & i]


def test_logical_and_bitwise_operators(tf1):
    assert_same(tf1, _logic)
    assert ops_of(fl, _logic)[0] == ops_of(tf1, _logic)[0]


def test_equality_is_identity_and_tensors_hash():
    x = fl.constant(1.0)
    y = fl.constant(1.0)
    assert (x == x) is True and (x == y) is False and (x != y) is True
    assert {x: 1, y: 2}[y] == 2
    n = len(fl.get_default_graph().get_operations())
    assert len(fl.get_default_graph().get_operations()) == n  # no op was built


def test_reflected_operands_take_the_tensor_dtype():
    x = fl.constant([1.0, 2.0], fl.float64)
    t = 1 - x
    assert t.dtype is fl.float64 and t.op.inputs[0].name == "sub/x:0"
    assert run(t).tolist() == [0.0, -1.0]
    h = fl.constant([1.0], fl.float16)
    assert (2.5 * h).dtype is fl.float16
    with pytest.raises((TypeError, ValueError)):
        _ = 2.5 - fl.constant([1])  # 2.5 is not an int32


def test_operator_errors_name_the_op():
    x = fl.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="Input 'y' of 'AddV2' Op has type int32 that does not match type float32"):
        _ = x + fl.constant([1, 2])
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3 for 'mul"):
        _ = x * fl.constant([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="Invert|not in list of allowed values"):
        _ = ~x
    with pytest.raises(TypeError, match="Neg"):
        _ = -fl.constant([True])


def test_operators_follow_the_graph_of_the_tensor():
    g = fl.Graph()
    with g.as_default():
        x = fl.constant([1.0])
    y = x * 3.0 + 1.0  # built outside the `with`: the ops still land in x's graph
    assert y.graph is g
    assert [op.name for op in g.get_operations()] == ["Const", "mul/y", "mul", "add/y", "add"]


def test_operators_under_name_scope():
    with fl.name_scope("layer"):
        x = fl.constant([2.0])
        y = 1 / x
    assert y.op.name == "layer/truediv" and y.op.inputs[0].op.name == "layer/truediv/x"
    assert run(y).tolist() == [0.5]


def test_matmul_operator_batch_and_values():
    a = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    b = np.arange(6, dtype=np.float32).reshape(3, 2)
    t = fl.constant(a) @ b
    assert t.op.type == "BatchMatMulV2" and t.op.name == "matmul" and t.shape.as_list() == [2, 2, 2]
    np.testing.assert_allclose(run(t), a @ b)


def test_getitem_delegates_to_the_array_family(monkeypatch):
    import flowlab.ops.array_ops as array_ops

    seen = []

    def fake_slice_helper(tensor, key):
        seen.append((tensor, key))
        return tensor

    monkeypatch.setattr(array_ops, "_slice_helper", fake_slice_helper, raising=False)
    x = fl.constant([[1.0, 2.0]])
    assert x[0, 1:] is x
    assert seen == [(x, (0, slice(1, None)))]


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv,
                                operator.floordiv, operator.mod, operator.pow])
def test_binary_operators_match_numpy(op):
    a = np.array([[1.0, 2.5], [-3.0, 4.0]], np.float32)
    b = np.array([2.0, -1.5], np.float32)
    np.testing.assert_allclose(run(op(fl.constant(a), fl.constant(b))), op(a, b), rtol=1e-6)
    np.testing.assert_allclose(run(op(a, fl.constant(b))), op(a, b), rtol=1e-6)
    np.testing.assert_allclose(run(op(fl.constant(a), 3.0)), op(a, np.float32(3.0)), rtol=1e-6)
