"""ExponentialMovingAverage against TensorFlow: shadow values over steps with and
without num_updates, shadows of tensors, names and collections, and errors."""

from __future__ import annotations

import pytest

import flowlab as fl
from tests.programs.hidden_support import same_results


def test_moving_averages_of_variables(tf1):
    def ema(tf):
        v = tf.Variable(1.0, name="v")
        w = tf.Variable([2.0, 3.0], name="w")
        gs = tf.Variable(0, trainable=False, name="step")
        e = tf.train.ExponentialMovingAverage(0.9, num_updates=gs)
        upd = e.apply([v, w])
        step = tf.group(tf.assign_add(v, 1.0), tf.assign_add(w, [1.0, -1.0]), tf.assign_add(gs, 1))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            seen = []
            for _ in range(4):
                s.run(step)
                s.run(upd)
                seen.append(s.run([e.average(v), e.average(w)]))
            return (seen, e.average_name(v), e.average(w).name, upd.name, upd.type,
                    sorted(x.name for x in tf.global_variables()),
                    sorted(x.name for x in tf.moving_average_variables()),
                    sorted(x.name for x in tf.trainable_variables()))

    same_results(tf1, ema)


def test_moving_average_of_a_tensor_and_default_var_list(tf1):
    def ema_tensor(tf):
        v = tf.Variable([1.0, -1.0], name="v")
        loss = tf.reduce_sum(tf.square(v), name="loss")
        e = tf.train.ExponentialMovingAverage(0.5)
        upd_loss = e.apply([loss])
        upd_all = e.apply()
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out = []
            for _ in range(3):
                s.run(train)
                s.run([upd_loss, upd_all])
                out.append(s.run([e.average(loss), e.average(v)]))
            return out, e.average(loss).name, e.average_name(tf.Variable(0.0, name="later"))

    same_results(tf1, ema_tensor)


def test_errors():
    with pytest.raises(TypeError, match="must be half, float, or double"):
        fl.train.ExponentialMovingAverage(0.9).apply([fl.Variable(1, name="i")])
    with pytest.raises(NotImplementedError):
        fl.train.ExponentialMovingAverage(0.9, zero_debias=True)
