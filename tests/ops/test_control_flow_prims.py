"""The control-flow primitives: declarations, builders, shapes and values, against
TensorFlow's v1 ops (tensorflow.python.ops.control_flow_ops with control flow v2
off)."""

from __future__ import annotations

import pytest

import flowlab as fl
from flowlab import errors
from flowlab.ops import control_flow_ops as cf
from flowlab.ops.op_def import get_op_def
from tests.difftest import assert_same


def _prims(tf):
    """The primitive builders of `tf` under one set of names."""
    if tf is fl:
        return cf.switch, cf.merge, cf.enter, cf.exit, cf.next_iteration, cf.loop_cond
    from tensorflow.python.ops import control_flow_ops as c

    tf.disable_control_flow_v2()
    return c.switch, c.merge, c._Enter, c.exit, c._NextIteration, c.loop_cond


def test_declarations_match_tensorflow():
    sw = get_op_def("Switch")
    assert [a.name for a in sw.inputs] == ["data", "pred"]
    assert [a.name for a in sw.outputs] == ["output_false", "output_true"]
    m = get_op_def("Merge")
    assert [a.name for a in m.outputs] == ["output", "value_index"]
    assert set(m.attrs) == {"T", "N"}
    e = get_op_def("Enter")
    assert e.attrs["is_constant"].default is False and e.attrs["parallel_iterations"].default == 10
    assert get_op_def("RefMerge").inputs[0].is_ref and get_op_def("RefEnter").outputs[0].is_ref
    for t in ("Switch", "RefSwitch", "Merge", "RefMerge", "Enter", "RefEnter", "Exit", "RefExit",
              "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger"):
        assert get_op_def(t).is_control_flow


def test_builders_names_types_and_shapes():
    x = fl.constant([1.0, 2.0])
    p = fl.placeholder(fl.bool, [])
    f, t = cf.switch(x, p)
    assert (f.op.type, f.name, t.name, f.shape.as_list()) == ("Switch", "Switch:0", "Switch:1", [2])
    out, idx = cf.merge([f, fl.constant([1.0, 2.0, 3.0])])
    assert (out.op.name, out.shape.as_list(), idx.dtype, idx.shape.as_list()) == ("Merge", [None], fl.int32, [])
    out2, _ = cf.merge([fl.zeros([1, 2]), fl.zeros([1, 3])])
    assert out2.shape.as_list() == [1, None]
    out3, _ = cf.merge([fl.zeros([2]), fl.zeros([2, 2])])
    assert out3.shape.ndims is None
    e = cf.enter(x, "frame")
    assert (e.op.type, e.op.name, e.shape.as_list()) == ("Enter", "Enter", [2])
    assert cf.enter(x, "frame", use_input_shape=False).shape.ndims is None
    assert cf.enter(x, "frame", is_constant=True, use_input_shape=False).shape.as_list() == [2]
    assert cf.exit(x).op.name == "Exit"
    assert cf.next_iteration(x).op.name == "NextIteration"
    assert cf.loop_cond(True).op.name == "LoopCond"
    assert cf.control_trigger().name == "ControlTrigger"
    v = fl.Variable(1.0)
    assert cf.switch(v, p)[0].op.type == "Switch"  # read, as TensorFlow's switch
    assert cf.ref_switch(v._ref(), p)[0].dtype.is_ref_dtype
    assert cf.enter(v, "f").op.type == "RefEnter"
    assert cf.exit(v).op.type == "RefExit"
    assert cf.next_iteration(v).op.type == "RefNextIteration"
    assert cf.merge([v._ref(), v._ref()])[0].op.type == "RefMerge"


def test_predicate_must_be_a_scalar():
    with pytest.raises(ValueError, match="rank 0 but is rank 1.*'Switch'"):
        cf.switch(fl.constant([1.0]), fl.constant([True]))
    with pytest.raises(ValueError, match="rank 0 but is rank 1.*'LoopCond'"):
        cf.loop_cond(fl.constant([True]))
    with pytest.raises(ValueError):
        cf.merge([])


@pytest.mark.parametrize("pred", [True, False])
def test_switch_merge_values(tf1, pred):
    def build(tf):
        switch, merge, *_ = _prims(tf)
        p = tf.placeholder(tf.bool, [])
        x = tf.constant([1, 2, 3])
        f, t = switch(x, p)
        out, idx = merge([f * 2, t * 3])
        return [out, idx], {p: pred}

    assert_same(tf1, build)


def test_fetching_the_untaken_side_is_an_error():
    p = fl.placeholder(fl.bool, [])
    f, t = cf.switch(fl.constant(1.0), p)
    with fl.Session() as s:
        with pytest.raises(errors.InvalidArgumentError, match="dead"):
            s.run(t, {p: False})


def test_merge_of_dead_inputs_is_dead_and_forwards_by_index():
    p = fl.placeholder(fl.bool, [])
    f, t = cf.switch(fl.constant(5.0), p)
    both_dead, _ = cf.merge([t + 1.0, t * 2.0])
    out, idx = cf.merge([both_dead, f])
    with fl.Session() as s:
        assert s.run([out, idx], {p: False}) == [5.0, 1]
        assert s.run([out, idx], {p: True}) == [6.0, 0]


def _loop(tf, n_iters, parallel_iterations=10, nested=False):
    """A hand-built while loop (TensorFlow's structure) summing i * scale."""
    switch, merge, enter, exit_, next_iteration, loop_cond = _prims(tf)

    def loop(name, init, lim, step_value):
        e_i = enter(init[0], name, parallel_iterations=parallel_iterations)
        e_s = enter(init[1], name, parallel_iterations=parallel_iterations)
        lim_in = enter(lim, name, is_constant=True, parallel_iterations=parallel_iterations)
        one_in = enter(step_value, name, is_constant=True, parallel_iterations=parallel_iterations)
        m_i, _ = merge([e_i, e_i])
        m_s, _ = merge([e_s, e_s])
        pred = loop_cond(tf.less(m_i, lim_in))
        i_f, i_t = switch(m_i, pred)
        s_f, s_t = switch(m_s, pred)
        i_b, s_b = tf.identity(i_t), tf.identity(s_t)
        return (m_i, m_s), (i_b, s_b), one_in, (exit_(i_f), exit_(s_f)), next_iteration

    n = tf.constant(n_iters)
    (m_i, m_s), (i_b, s_b), one, exits, nxt = loop("outer", (tf.constant(0), tf.constant(0.0)), n,
                                                   tf.constant(1))
    with tf.control_dependencies([i_b]):
        half = tf.constant(0.5)
    s_next = s_b + tf.cast(i_b, tf.float32) * half
    if nested:
        (im_i, im_s), (ii_b, is_b), ione, iexits, _ = loop("inner", (i_b - i_b, s_next), i_b + one, one)
        with tf.control_dependencies([ii_b]):
            q = tf.constant(0.25)
        inner_next = is_b + q
        im_i.op._update_input(1, nxt(ii_b + ione))
        im_s.op._update_input(1, nxt(inner_next))
        s_next = iexits[1]
    m_i.op._update_input(1, nxt(i_b + one))
    m_s.op._update_input(1, nxt(s_next))
    return list(exits)


@pytest.mark.parametrize("n_iters", [0, 1, 7])
def test_hand_built_loop_against_tensorflow(tf1, n_iters):
    assert_same(tf1, lambda tf: _loop(tf, n_iters))


def test_hand_built_nested_loop_against_tensorflow(tf1):
    out = assert_same(tf1, lambda tf: _loop(tf, 5, nested=True))
    # Outer i in 0..4 adds i/2, the inner loop adds (i + 1) / 4.
    assert out[1] == pytest.approx(sum(i * 0.5 + (i + 1) * 0.25 for i in range(5)))


def test_hand_built_loop_parallel_iterations_one(tf1):
    assert_same(tf1, lambda tf: _loop(tf, 6, parallel_iterations=1))


def test_control_trigger_runs_even_when_its_control_inputs_are_dead():
    p = fl.placeholder(fl.bool, [])
    f, t = cf.switch(fl.constant(1.0), p)
    dead_side = fl.identity(t)
    with fl.control_dependencies([dead_side]):
        trig = cf.control_trigger()
    with fl.control_dependencies([trig]):
        after = fl.constant(3.0)
    with fl.control_dependencies([dead_side]):
        plain = fl.constant(4.0)
    with fl.Session() as s:
        assert s.run(after, {p: False}) == 3.0
        with pytest.raises(errors.InvalidArgumentError, match="dead"):
            s.run(plain, {p: False})
