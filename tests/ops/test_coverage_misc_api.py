"""tf.print, switch_case, make_template, guarantee_const, parallel_stack,
histogram_fixed_width_bins, grad_pass_through, NoGradient, get_logger, init_scope,
op_scope / variable_op_scope and the mode queries / disable switches, run beside
TensorFlow."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same

RS = np.random.RandomState(15)


def _printed(tf: Any, capfd: Any, tmp_path: Any) -> Any:
    path = tmp_path / f"{tf.__name__}.txt"
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.constant([[1.5, 2.0], [3.0, 4.25]])
        ops = [tf.print("x:", x, output_stream=sys.stdout),
               tf.print(tf.constant("lone"), output_stream=sys.stdout),
               tf.print({"b": tf.constant(7), "a": [1, x[0]]}, "end", sep="|", end="!\n", output_stream=sys.stdout),
               tf.print(tf.range(10), summarize=2, output_stream=sys.stdout),
               tf.print("to stderr {}", tf.constant(True)),
               tf.print("file", tf.constant([1, 2]), output_stream="file://" + str(path))]
        for op in ops:
            s.run(op)
            sys.stdout.flush()
            sys.stderr.flush()
    out = capfd.readouterr()
    return out.out, out.err, path.read_text(), ops[0].type


def test_print(tf1: Any, capfd: Any, tmp_path: Any) -> None:
    assert _printed(tf1, capfd, tmp_path) == _printed(fl, capfd, tmp_path)


def test_switch_case(tf1: Any) -> None:
    x = RS.randn(3).astype(np.float32)

    def build(tf: Any) -> Any:
        xt = tf.constant(x)
        i = tf.placeholder(tf.int32, [])
        fns = [lambda: xt * 2.0, lambda: xt + 1.0, lambda: tf.sin(xt)]
        y = tf.switch_case(i, fns)
        z = tf.switch_case(i, {0: lambda: xt, 1: lambda: -xt}, default=lambda: xt * 0.0)
        g = tf.gradients(tf.reduce_sum(y * y), xt)
        return [y, z, g], {i: 1}

    assert_same(tf1, build)

    def out_of_range(tf: Any) -> Any:
        i = tf.placeholder(tf.int32, [])
        return tf.switch_case(i, [lambda: tf.constant(1), lambda: tf.constant(2)]), {i: 7}

    assert_same(tf1, out_of_range)


def test_make_template(tf1: Any) -> None:
    a, b = RS.randn(2, 3).astype(np.float32), RS.randn(4, 3).astype(np.float32)

    def build(tf: Any) -> Any:
        def dense(x: Any, units: int) -> Any:
            w = tf.get_variable("w", [x.shape[-1], units], initializer=tf.constant_initializer(0.5))
            return tf.matmul(x, w)

        t = tf.make_template("layer", dense, units=2)
        y1, y2 = t(tf.constant(a)), t(tf.constant(b))
        t2 = tf.make_template("layer", dense, create_scope_now_=True, units=1)
        y3 = t2(tf.constant(a))
        names = [v.op.name for v in tf.global_variables()]
        return [y1, y2, y3, tf.constant(names), tf.constant([v.op.name for v in t.trainable_variables]),
                tf.constant([t.variable_scope_name, t2.variable_scope_name, t.name])]

    assert_same(tf1, build)
    for tf in (tf1, fl):
        _template_misuse(tf)


def _template_misuse(tf: Any) -> None:
    with tf.Graph().as_default():
        bad = tf.make_template("bad", lambda: tf.Variable(1.0))
        bad()
        with pytest.raises(ValueError, match="Trainable variable created when calling a template"):
            bad()


def test_misc_array_ops(tf1: Any) -> None:
    v = RS.randn(20).astype(np.float32) * 3

    def build(tf: Any) -> Any:
        xt = tf.constant(v)
        g = tf.guarantee_const(xt)
        p = tf.parallel_stack([tf.constant([1, 2]), tf.constant([3, 4]), tf.constant([5, 6])])
        h = tf.histogram_fixed_width_bins(xt, [-2.0, 2.0], nbins=5)
        h2 = tf.histogram_fixed_width_bins(tf.constant([[0.0, 1.0], [9.0, 12.0]]), [0.0, 10.0], nbins=4)
        sq = tf.grad_pass_through(lambda t: tf.round(t) * 3.0)(xt)
        return [g, p, h, h2, sq, tf.gradients(tf.reduce_sum(sq * 2.0), xt),
                tf.constant(str(p.shape))]

    assert_same(tf1, build)
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            x = tf.constant(1.0)
            with pytest.raises(LookupError, match="GuaranteeConst"):
                tf.gradients(tf.guarantee_const(x) * 2.0, x)


def test_scopes_and_switches(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            a = tf.constant(1.0, name="a")
            with tf.control_dependencies([a]):
                with tf.init_scope():
                    free = tf.constant(2.0, name="free")
                held = tf.constant(3.0, name="held")
            with tf.op_scope([a], "outer", "dflt"):
                n1 = tf.constant(0, name="c")
            with tf.variable_op_scope([a], None, default_name="vs"):
                v = tf.get_variable("w", [], initializer=tf.zeros_initializer())
            tf.disable_control_flow_v2()
            tf.disable_resource_variables()
            tf.disable_tensor_equality()
            tf.disable_v2_tensorshape()
            out.append([len(free.op.control_inputs), len(held.op.control_inputs), n1.op.name, v.op.name,
                        tf.executing_eagerly_outside_functions(), tf.control_flow_v2_enabled(),
                        tf.resource_variables_enabled(), a == a, hash(a) == hash(a),
                        type(tf.TensorShape([2]).dims[0]).__name__, tf.get_logger().name,
                        tf.NoGradient is tf.NotDifferentiable])
    assert out[0] == out[1]
