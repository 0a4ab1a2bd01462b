"""Learning-rate schedules and the global step, against TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same

STEPS = [0, 1, 7, 10, 15, 20, 33, 100]


def _schedule(tf, fn):
    step = tf.placeholder(tf.int64, [], name="step")
    lr = fn(tf, step)
    return lr, step


def _values(tf, fn, steps=STEPS):
    with tf.Graph().as_default():
        lr, step = _schedule(tf, fn)
        with tf.Session() as sess:
            return [sess.run(lr, {step: s}) for s in steps], lr.dtype.base_dtype.name


SCHEDULES = {
    "exp": lambda tf, s: tf.train.exponential_decay(0.1, s, 10, 0.5),
    "exp_stair": lambda tf, s: tf.train.exponential_decay(0.1, s, 10, 0.5, staircase=True),
    "exp_f64": lambda tf, s: tf.train.exponential_decay(np.float64(0.3), s, 7, 0.9),
    "natural_exp": lambda tf, s: tf.train.natural_exp_decay(0.1, s, 5, 0.3),
    "natural_exp_stair": lambda tf, s: tf.train.natural_exp_decay(0.1, s, 5, 0.3, staircase=True),
    "inverse_time": lambda tf, s: tf.train.inverse_time_decay(0.1, s, 10, 0.5),
    "inverse_time_stair": lambda tf, s: tf.train.inverse_time_decay(0.1, s, 10, 0.5, staircase=True),
    "poly": lambda tf, s: tf.train.polynomial_decay(0.1, s, 20, end_learning_rate=0.01),
    "poly_power": lambda tf, s: tf.train.polynomial_decay(0.1, s, 20, 0.01, power=2.0),
    "poly_cycle": lambda tf, s: tf.train.polynomial_decay(0.1, s, 20, 0.01, power=0.5, cycle=True),
    "piecewise": lambda tf, s: tf.train.piecewise_constant(s, [np.int64(10), np.int64(20)], [1.0, 0.5, 0.1]),
    "piecewise_int32_boundaries": lambda tf, s: tf.train.piecewise_constant(s, [5, 15, 30], [4, 3, 2, 1]),
}


@pytest.mark.parametrize("which", sorted(SCHEDULES))
def test_schedule_matches_tensorflow(tf1, which):
    expected, edtype = _values(tf1, SCHEDULES[which])
    actual, adtype = _values(fl, SCHEDULES[which])
    assert adtype == edtype
    for s, e, a in zip(STEPS, expected, actual):
        assert np.asarray(a).dtype == np.asarray(e).dtype, s
        np.testing.assert_allclose(a, e, rtol=1e-6, err_msg=f"step {s}")


def test_exponential_decay_numpy():
    step = fl.constant(25, fl.int32)
    lr = fl.train.exponential_decay(0.2, step, 10, 0.1)
    stair = fl.train.exponential_decay(0.2, step, 10, 0.1, staircase=True)
    assert lr.op.name == "ExponentialDecay" and lr.dtype == fl.float32
    with fl.Session() as sess:
        np.testing.assert_allclose(sess.run(lr), 0.2 * 0.1 ** 2.5, rtol=1e-6)
        np.testing.assert_allclose(sess.run(stair), 0.2 * 0.1 ** 2, rtol=1e-6)


def test_schedule_errors(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(ValueError, match="None values not supported"):
                tf.train.exponential_decay(0.1, None, 10, 0.5)
            with pytest.raises(ValueError, match="1 less than the length of values"):
                tf.train.piecewise_constant(tf.constant(3), [1, 2], [1.0, 2.0])
            with pytest.raises(ValueError, match="Values must have elements all with the same dtype"):
                tf.train.piecewise_constant(tf.constant(3), [1], [1.0, 2])


def test_decayed_learning_rate_drives_training(tf1):
    def build(tf):
        w = tf.Variable([1.0, -2.0], name="w")
        gs = tf.train.get_or_create_global_step()
        lr = tf.train.exponential_decay(0.2, gs, 3, 0.5, staircase=True)
        train = tf.train.GradientDescentOptimizer(lr).minimize(tf.reduce_sum(w * w), global_step=gs)
        return train, w, gs, lr

    res = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            train, w, gs, lr = build(tf)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                lrs = []
                for _ in range(8):
                    lrs.append(sess.run(lr))
                    sess.run(train)
                res.append((sess.run(w), sess.run(gs), lrs))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-6)
    assert res[1][1] == res[0][1] == 8
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-7)


# --- global step -------------------------------------------------------------------
def test_global_step_matches_tensorflow(tf1):
    def build(tf):
        gs = tf.train.get_or_create_global_step()
        assert tf.train.get_or_create_global_step() is gs
        assert tf.train.get_global_step() is gs
        assert gs in tf.get_collection(tf.GraphKeys.GLOBAL_STEP)
        assert gs in tf.global_variables() and gs not in tf.trainable_variables()
        assert (gs.name, gs.dtype.name, gs.shape.as_list()) == ("global_step:0", "int64_ref", [])
        return tf.assign_add(gs, 3)

    assert_same(tf1, build)


def test_global_step_absent_and_duplicate(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            assert tf.train.get_global_step() is None
            with tf.name_scope("inside"):
                gs = tf.train.create_global_step()
            assert gs.name == "global_step:0"
            with pytest.raises(ValueError, match='"global_step" already exists'):
                tf.train.create_global_step()


def test_global_step_found_by_name_and_checked(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            v = tf.Variable(0, name="global_step", dtype=tf.int64, trainable=False)
            found = tf.train.get_global_step()
            assert found is not None and found.name == v.name
        with tf.Graph().as_default():
            tf.Variable(0.0, name="global_step")
            with pytest.raises(TypeError, match="does not have integer type"):
                tf.train.get_global_step()
        with tf.Graph().as_default():
            tf.Variable([1, 2], name="global_step")
            with pytest.raises(TypeError, match="is not scalar"):
                tf.train.get_global_step()


def test_global_step_other_graph():
    g = fl.Graph()
    gs = fl.train.get_or_create_global_step(g)
    assert gs.graph is g
    assert fl.train.get_global_step() is None
    with g.as_default(), fl.Session() as sess:
        sess.run(gs.initializer)
        assert fl.train.global_step(sess, gs) == 0
