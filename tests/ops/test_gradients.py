"""`gradients()` semantics against TensorFlow, and the table-driven gradient check that
walks the op registry (see tests/ops/gradient_check.py)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import flowlab as fl
from flowlab.ops import gradient_registry
from flowlab.ops.custom_gradient import (
    NotDifferentiable,
    RegisterGradient,
    custom_gradient,
    no_gradient,
)
from flowlab.ops.gradients_impl import AggregationMethod, gradients
from flowlab.ops.indexed_slices import IndexedSlices, IndexedSlicesValue
from flowlab.ops.op_def import registered_ops
from tests.difftest import assert_same
from tests.ops.gradient_check import TABLE, check_case, load_table

load_table()
_CASES = [c for cases in TABLE.values() for c in cases]


# --- the registry walk ------------------------------------------------------------------
def test_every_op_is_differentiable_or_declared_not() -> None:
    load_table()
    missing = sorted(o for o in registered_ops() if not gradient_registry.is_declared(o))
    assert not missing, f"ops with no gradient function and not declared not differentiable: {missing}"


def test_every_differentiable_op_has_a_table_entry() -> None:
    load_table()
    grads = gradient_registry.registered_gradients()
    missing = sorted(o for o in registered_ops() if grads.get(o) is not None and not TABLE.get(o))
    assert not missing, f"ops with a gradient but no finite-difference TABLE entry: {missing}"


@pytest.mark.parametrize("case", _CASES, ids=[c.id for c in _CASES])
def test_gradient_matches_finite_differences(case: Any) -> None:
    check_case(case)


# --- semantics against TensorFlow -----------------------------------------------------------
def _g(tf: Any) -> Any:
    return gradients if tf is fl else tf.gradients


def _none(tf: Any, gs: list[Any]) -> list[Any]:
    return [tf.constant("none") if g is None else g for g in gs]


def test_unconnected_is_none(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x, y, z = tf.constant(1.0), tf.constant(2.0), tf.constant(3.0)
        return _none(tf, _g(tf)(x * y, [x, y, z]))

    assert_same(tf1, build)


def test_unconnected_zero() -> None:
    x, z = fl.constant([1.0, 2.0]), fl.constant([[3.0]])
    gx, gz = gradients(x * 2.0, [x, z], unconnected_gradients="zero")
    with fl.Session() as s:
        vx, vz = s.run([gx, gz])
    np.testing.assert_array_equal(vz, [[0.0]])
    np.testing.assert_array_equal(vx, [2.0, 2.0])


def test_grad_ys_and_multiple_ys(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant([1.0, 2.0, 3.0])
        y1, y2 = x * x, tf.reduce_sum(x)
        return _g(tf)([y1, y2], [x], grad_ys=[tf.constant([1.0, 0.5, -1.0]), 3.0])

    assert_same(tf1, build)


def test_stop_gradients(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        a = tf.constant(2.0)
        b = 3.0 * a
        c = a + b
        return _none(tf, _g(tf)(c, [a, b], stop_gradients=[a, b])) + _g(tf)(c, [a]) + \
            _none(tf, _g(tf)(tf.stop_gradient(b) + a * a, [a]))

    assert_same(tf1, build)


def test_add_n_aggregation_and_names(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, [3], name="x")
        y = x * x + tf.sin(x)
        return _g(tf)(y, x), {x: [1.0, 2.0, 3.0]}

    assert_same(tf1, build)
    x = fl.placeholder(fl.float32, [3], name="x")
    (g,) = gradients(x * x + fl.sin(x), x)
    assert g.op.type == "AddN" and g.name == "gradients/AddN:0"
    names = {op.name for op in fl.get_default_graph().get_operations()}
    assert {"gradients/grad_ys_0", "gradients/mul_grad/Mul", "gradients/Sin_grad/Cos"} <= names
    (g2,) = gradients(x * 3.0, x)
    assert g2.name.startswith("gradients_1/")


@pytest.mark.parametrize("method", [AggregationMethod.ADD_N, AggregationMethod.EXPERIMENTAL_TREE,
                                    AggregationMethod.EXPERIMENTAL_ACCUMULATE_N])
def test_aggregation_methods(method: int) -> None:
    x = fl.constant([1.0, 2.0])
    (g,) = gradients(x * x + 3.0 * x + fl.exp(x), x, aggregation_method=method)
    with fl.Session() as s:
        np.testing.assert_allclose(s.run(g), 2 * np.array([1.0, 2.0]) + 3 + np.exp([1.0, 2.0]), rtol=1e-6)
    with pytest.raises(ValueError, match="Invalid aggregation_method"):
        gradients(x * x + x, x, aggregation_method=7)


def test_colocate_gradients_with_ops() -> None:
    with fl.device("/cpu:0"):
        x = fl.constant([1.0, 2.0], name="x")
        y = fl.sin(x, name="s")
    (g,) = gradients(y, x, colocate_gradients_with_ops=True)
    cos = fl.get_default_graph().get_operation_by_name("gradients/s_grad/Cos")
    assert cos.colocation_groups() == [b"loc:@s"]


def test_gate_gradients_same_values() -> None:
    a, b = fl.constant([[1.0, 2.0]]), fl.constant([[3.0], [4.0]])
    ga, gb = gradients(fl.matmul(a, b), [a, b], gate_gradients=True)
    with fl.Session() as s:
        va, vb = s.run([ga, gb])
    np.testing.assert_array_equal(va, [[3.0, 4.0]])
    np.testing.assert_array_equal(vb, [[1.0], [2.0]])


def test_variable_gradient(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
        return _g(tf)(tf.reduce_sum(tf.matmul(w, w)), [w])

    assert_same(tf1, build)


def test_no_gradient_defined_error() -> None:
    x = fl.constant([3.0, 1.0])
    y = fl.reduce_sum(fl.cast(fl.argmax(fl.expand_dims(x, 0), 1), fl.float32))
    assert gradients(y, x) == [None]  # ArgMax is declared not differentiable
    from flowlab.ops.builder import apply_op

    a = apply_op("BroadcastGradientArgs", s0=fl.constant([2]), s1=fl.constant([2]), name="b")[0]
    assert gradients(fl.cast(a, fl.float32), x) == [None]


def test_grad_ys_type_errors() -> None:
    x = fl.constant([1.0])
    with pytest.raises(TypeError, match="must be real"):
        gradients(x * 2.0, x, grad_ys=[fl.constant([1])])
    with pytest.raises(ValueError, match="Passed 2 grad_ys for 1 ys"):
        gradients(x, x, grad_ys=[1.0, 2.0])


# --- IndexedSlices ---------------------------------------------------------------------------
def test_gather_gives_indexed_slices(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        params = tf.constant(np.arange(12.0).reshape(4, 3))
        y = tf.gather(params, [2, 0, 2]) * tf.constant([[1.0], [2.0], [3.0]], tf.float64)
        (g,) = _g(tf)(y, params)
        assert type(g).__name__ == "IndexedSlices"
        return g, tf.convert_to_tensor(g)

    sl, dense = assert_same(tf1, build)
    assert isinstance(sl, IndexedSlicesValue)
    np.testing.assert_array_equal(sl.indices, [2, 0, 2])
    np.testing.assert_array_equal(dense[2], [4.0, 4.0, 4.0])


def test_indexed_slices_aggregate_with_dense(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        params = tf.constant(np.arange(6.0).reshape(3, 2))
        y = tf.reduce_sum(tf.gather(params, [1, 1])) + tf.reduce_sum(params * params)
        (g,) = _g(tf)(y, params)
        assert type(g).__name__ != "IndexedSlices"  # a dense partial makes the sum dense
        y2 = tf.reduce_sum(tf.gather(params, [1, 1])) + tf.reduce_sum(tf.gather(params, tf.constant([0], tf.int64)))
        (g2,) = _g(tf)(y2, params)
        assert type(g2).__name__ == "IndexedSlices" and g2.indices.dtype == tf.int64
        return g, g2

    assert_same(tf1, build)


def test_run_indexed_slices_value() -> None:
    v, i, d = fl.constant([[1.0, 2.0]]), fl.constant([1]), fl.constant([3, 2])
    s = IndexedSlices(v, i, d)
    assert s.dtype == fl.float32 and s.shape.as_list() == [3, 2] and s.name == v.name
    with fl.Session() as sess:
        got = sess.run(s)
        no_shape = sess.run(IndexedSlices(v, i))
    assert isinstance(got, IndexedSlicesValue)
    np.testing.assert_array_equal(got.dense_shape, [3, 2])
    assert no_shape.dense_shape is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # known dense shape: no warning, as TensorFlow
        dense = fl.convert_to_tensor(s)
    with fl.Session() as sess:
        np.testing.assert_array_equal(sess.run(dense), [[0, 0], [1, 2], [0, 0]])
    unknown = IndexedSlices(v, i, fl.placeholder(fl.int32, [2]))
    with pytest.warns(UserWarning, match="unknown shape"):
        fl.convert_to_tensor(unknown)


# --- user-defined gradients --------------------------------------------------------------------
def test_gradient_override_map(tf1: Any) -> None:
    name = f"FlowlabTestClip{id(tf1)}"

    def build(tf: Any) -> Any:
        if tf is fl:
            reg = RegisterGradient
        else:
            reg = tf.RegisterGradient
        if not gradient_registry.is_declared(name) or tf is not fl:
            try:
                @reg(name)
                def _clip(op: Any, grad: Any) -> Any:
                    return [tf.clip_by_value(grad, -0.5, 0.5)]
            except KeyError:
                pass
        x = tf.constant([1.0, -2.0, 3.0])
        g = tf.get_default_graph()
        with g.gradient_override_map({"Identity": name}):
            y = tf.identity(x)
        assert y.op.get_attr("_gradient_op_type") in (name, name.encode())
        return _g(tf)(y * [1.0, -1.0, 0.25], x)

    assert_same(tf1, build)


def test_register_gradient_twice_and_not_differentiable() -> None:
    @RegisterGradient("FlowlabTwice")
    def _a(op: Any, grad: Any) -> Any:
        return [grad]

    with pytest.raises(KeyError, match="FlowlabTwice"):
        RegisterGradient("FlowlabTwice")(_a)
    NotDifferentiable("FlowlabNoGrad")
    with pytest.raises(KeyError):
        no_gradient("FlowlabNoGrad")
    with pytest.raises(TypeError):
        RegisterGradient(3)  # type: ignore[arg-type]


def test_custom_gradient(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        cg = custom_gradient if tf is fl else tf.custom_gradient

        @cg
        def log1pexp(x: Any) -> Any:
            e = tf.exp(x)

            def grad(dy: Any) -> Any:
                return dy * (1 - 1 / (1 + e))

            return tf.log(1 + e), grad

        x = tf.constant([0.0, 100.0, -3.0])
        y = log1pexp(x)
        return [y] + _g(tf)(tf.reduce_sum(y * 2.0), x)

    assert_same(tf1, build, rtol=1e-6)


def test_custom_gradient_two_inputs() -> None:
    @custom_gradient
    def f(a: Any, b: Any) -> Any:
        def grad(dy: Any) -> Any:
            return dy * 10.0, dy * 20.0

        return a * b, grad

    a, b = fl.constant(2.0), fl.constant(3.0)
    y = f(a, b)
    ga, gb = gradients(y, [a, b])
    with fl.Session() as s:
        assert s.run([y, ga, gb]) == [6.0, 10.0, 20.0]


def test_integer_paths_carry_no_gradient(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x, i = tf.constant([1.5, 2.5]), tf.constant([1, 2])
        y = tf.cast(tf.cast(x, tf.int32) * 2, tf.float32) + tf.cast(i * 3, tf.float32)
        return _none(tf, _g(tf)(y, [x, i]) + _g(tf)(i * 2, [i]))

    assert_same(tf1, build)


def test_custom_gradient_with_variables() -> None:
    w = fl.Variable(3.0, name="w")

    @custom_gradient
    def scaled(x: Any) -> Any:
        def grad(dy: Any, variables: Any = None) -> Any:
            assert [v.name for v in variables] == ["w:0"]
            return dy * 100.0, [dy * 1000.0]

        return x * w, grad

    x = fl.constant(2.0)
    gx, gw = gradients(scaled(x), [x, w])
    with fl.Session() as s:
        s.run(fl.global_variables_initializer())
        assert s.run([gx, gw]) == [100.0, 1000.0]

    @custom_gradient
    def no_vars_kw(x: Any) -> Any:
        return x * w, lambda dy: dy

    with pytest.raises(TypeError, match="variables"):
        no_vars_kw(x)
