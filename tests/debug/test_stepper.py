"""flowlab.debug.Stepper: one step op by op on the real executor."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors, viz
from flowlab.debug import DEAD, Stepper
from flowlab.ops import control_flow_ops as cfo


def _model(devices: int = 1):
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 3], name="x")
        w = fl.Variable(np.ones((3, 2), np.float32), name="w")
        with fl.name_scope("layer1"):
            h = fl.matmul(x, w)
        with fl.device(f"/cpu:{devices - 1}"), fl.name_scope("layer2"):
            lg = fl.log(h - 3.0)
            total = fl.reduce_sum(lg, name="sum")
        with fl.control_dependencies([total]):  # after the forward pass: no race on w
            bump = fl.assign_add(w, np.ones((3, 2), np.float32), name="bump")
        with fl.control_dependencies([bump]):
            out = fl.identity(total, name="out")
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": devices}))
    sess.run(w.initializer)
    return g, sess, x, w, out


FEED = np.array([[2, 2, 2], [1, 1, 1]], np.float32)  # h = [[6, 6], [3, 3]]: log(0) = -inf


def test_steps_run_the_ops_in_order_and_give_the_step_result():
    g, sess, x, w, out = _model()
    expected = sess.run(out, {x: FEED})
    sess.run(w.assign(np.ones((3, 2), np.float32)))
    st = Stepper(sess, out, {x: FEED})
    assert st.status == "running" and st.ran() == []
    first = st.ready()[0]
    stop = st.step()
    assert stop.kind == "step" and st.ran() == [first]
    st.step(3)
    assert len(st.ran()) == 4 and set(st.ran()) <= set(st.ops())
    assert st.result() == expected and st.status == "finished"
    assert sorted(st.ran()) == sorted(st.ops())
    assert st.stop.kind == "finished" and "all" in st.stop.message


def test_ready_queue_and_step_a_chosen_op():
    g, sess, x, w, out = _model()
    st = Stepper(sess, out, {x: FEED})
    ready = st.ready()
    assert "w" in ready and "layer1/MatMul" not in ready
    other = ready[-1]
    st.step(op=other)
    assert st.ran() == [other] and other not in st.ready()
    with pytest.raises(ValueError, match="not ready"):
        st.step(op="out")
    with pytest.raises(ValueError, match="n >= 1"):
        st.step(0)


def test_stop_on_nan_or_inf_names_the_first_op():
    g, sess, x, w, out = _model()
    st = Stepper(sess, out, {x: FEED}, stop_on_nan_or_inf=True)
    stop = st.continue_()
    assert stop.kind == "nan_or_inf" and stop.op == "layer2/Log"
    assert "layer2/Log:0 has 0 NaN and 2 Inf of 4 values" in stop.message
    assert st.ran()[-1] == "layer2/Log" and "layer2/sum" not in st.ran()
    np.testing.assert_array_equal(st.value("layer2/sub:0"), [[3, 3], [0, 0]])
    assert np.isneginf(st.value("layer2/Log")).sum() == 2
    assert "stopped after 'layer2/Log'" in repr(st)
    assert "(Log on CPU:0)" in stop.message  # devices named as everywhere else


def test_breakpoints_stop_before_the_op_and_continue_passes_them():
    g, sess, x, w, out = _model()
    st = Stepper(sess, out, {x: FEED})
    st.add_breakpoint("layer2/sum")
    stop = st.continue_()
    assert stop.kind == "breakpoint" and stop.op == "layer2/sum"
    assert "layer2/sum" not in st.ran() and st.ready()[0] == "layer2/sum"
    st.continue_()
    assert st.status == "finished"


def test_breakpoints_by_scope_type_and_predicate():
    g, sess, x, w, out = _model()
    st = Stepper(sess, out, {x: FEED})
    bp = st.add_breakpoint("layer2/")
    assert st.continue_().op.startswith("layer2/")
    st.remove_breakpoint(bp)
    st.add_breakpoint(op_type="Identity", when=lambda op: op.name == "out")
    assert st.continue_().op == "out"
    assert st.breakpoints == ["#2 type Identity and when <lambda>"]
    st.clear_breakpoints()
    st.continue_()
    assert st.status == "finished"
    with pytest.raises(ValueError, match="No breakpoint #7"):
        st.remove_breakpoint(7)


def test_breakpoint_errors_name_the_op():
    g, sess, x, w, out = _model()
    with g.as_default():
        unused = fl.constant(1.0, name="unused")
    st = Stepper(sess, out, {x: FEED})
    with pytest.raises(ValueError, match="No op named 'nope'"):
        st.add_breakpoint("nope")
    with pytest.raises(ValueError, match="'unused' is not part of this step"):
        st.add_breakpoint(unused)
    with pytest.raises(ValueError, match="scope 'zzz/'"):
        st.add_breakpoint("zzz/")
    with pytest.raises(ValueError, match="needs a name"):
        st.add_breakpoint()


def test_run_to_stops_after_the_op():
    g, sess, x, w, out = _model()
    st = Stepper(sess, out, {x: FEED})
    stop = st.run_to("layer1/MatMul")
    assert stop.kind == "run_to" and st.ran()[-1] == "layer1/MatMul"
    np.testing.assert_array_equal(st.value("layer1/MatMul:0"), FEED @ np.ones((3, 2)))
    with pytest.raises(ValueError, match="already run"):
        st.run_to("layer1/MatMul")


def test_value_errors_and_fed_values():
    g, sess, x, w, out = _model()
    st = Stepper(sess, out, {x: FEED})
    np.testing.assert_array_equal(st.value(x), FEED)
    with pytest.raises(ValueError, match="'out' has not run yet"):
        st.value("out:0")
    with pytest.raises(ValueError, match="has 1 outputs; there is no out:3"):
        st.value("out:3")
    st.run_to("layer2/sub")
    v = st.value("layer2/sub")
    v[...] = 99  # a copy: the step is not changed
    np.testing.assert_array_equal(st.value("layer2/sub"), [[3, 3], [0, 0]])
    assert np.isneginf(st.result())


def test_unconsumed_outputs_are_kept():
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.int32, [None], name="x")  # fed: nothing is folded away
        u = fl.unique(x, name="u")
        y = fl.identity(u[0], name="y")  # u[1] (the indices) is consumed by nobody
    sess = fl.Session(graph=g)
    st = Stepper(sess, y, {x: [3, 1, 3, 2]})
    st.continue_()
    idx = st.value(u[1])
    assert u[1].op.type == "Unique" and u[1].name.endswith(":1")
    np.testing.assert_array_equal(idx, [0, 1, 0, 2])
    assert idx.dtype == np.int32


def test_variables_keep_what_ops_wrote_and_abort_rolls_back():
    g, sess, x, w, out = _model()
    st = Stepper(sess, out, {x: FEED})
    st.add_breakpoint("out")
    st.continue_()
    assert "bump" in st.ran()
    np.testing.assert_array_equal(sess.run(w), 2 * np.ones((3, 2)))  # written mid-step
    st.abort()
    assert st.status == "aborted" and st.stop.kind == "aborted"
    np.testing.assert_array_equal(sess.run(w), np.ones((3, 2)))
    with pytest.raises(errors.CancelledError, match="aborted"):
        st.result()
    st.abort()  # twice is harmless


def test_a_failing_op_fails_the_step_and_rolls_back():
    g = fl.Graph()
    with g.as_default():
        v = fl.Variable(0.0, name="v")
        i = fl.placeholder(fl.int32, [], name="i")
        bump = fl.assign_add(v, 1.0)
        with fl.control_dependencies([bump]):
            bad = fl.gather(fl.constant([1.0, 2.0]), i, name="bad")
    sess = fl.Session(graph=g)
    sess.run(v.initializer)
    st = Stepper(sess, bad, {i: 5})
    stop = st.continue_()
    assert stop.kind == "error" and stop.op == "bad" and st.status == "failed"
    assert "InvalidArgumentError" in stop.message
    assert sess.run(v) == 0.0
    with pytest.raises(errors.InvalidArgumentError, match="bad"):
        st.result()


def test_watches_record_values_and_stop_on_condition():
    g, sess, x, w, out = _model()
    st = Stepper(sess, out, {x: FEED})
    seen = st.watch("layer1/MatMul:0")
    stopper = st.watch("layer2/sub:0", condition=lambda v: (v == 0).any())
    stop = st.continue_()
    assert stop.kind == "watch" and stop.op == "layer2/sub"
    assert seen.value is not None and len(stopper.values) == 1
    with pytest.raises(ValueError, match="there is no out:2"):
        st.watch("out:2")
    assert set(st.watches) == {"layer1/MatMul:0", "layer2/sub:0"}


def test_dead_ops_of_an_untaken_branch():
    g = fl.Graph()
    with g.as_default():
        p = fl.placeholder(fl.bool, [], name="p")
        x = fl.constant(4.0, name="x")
        f, t = cfo.switch(x, p, name="sw")
        neg = fl.negative(f, name="neg")  # the false branch
        sq = fl.square(t, name="sq")  # the true branch
        m, _ = cfo.merge([neg, sq], name="m")
    sess = fl.Session(graph=g)
    st = Stepper(sess, m, {p: True})
    assert st.result() == 16.0
    assert st.dead() == ["neg"]
    assert st.value("sw:0") is DEAD and st.value("neg") is DEAD
    assert "dead (1): neg" in repr(st)


def test_a_step_on_two_devices_steps_too():
    g, sess, x, w, out = _model(devices=2)
    expected = sess.run(out, {x: FEED})
    sess.run(w.assign(np.ones((3, 2), np.float32)))
    st = Stepper(sess, out, {x: FEED}, stop_on_nan_or_inf=True)
    assert st.continue_().op == "layer2/Log"
    assert st.result() == expected


def test_repr_says_what_ran_what_is_ready_and_why_it_stopped():
    g, sess, x, w, out = _model()
    st = Stepper(sess, out, {x: FEED})
    st.add_breakpoint(op_type="Log")
    st.continue_()
    text = repr(st)
    assert text.startswith("<flowlab.debug.Stepper: ")
    assert "stopped: stopped before 'layer2/Log' (Log): breakpoint #1 type Log" in text
    assert "ready (1): layer2/Log (Log)" in text and "last run:" in text


def test_the_first_nan_of_a_500_op_chain():
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [8], name="x")
        y = x
        for i in range(500):
            y = y + 0.001
            if i == 300:
                planted = fl.sqrt(y - 1.0, name="planted")  # sqrt(0.301 - 1): NaN
                y = planted
    sess = fl.Session(graph=g)
    st = Stepper(sess, y, {x: np.zeros(8, np.float32)}, stop_on_nan_or_inf=True)
    stop = st.continue_()
    assert stop.op == "planted" and "8 NaN" in stop.message
    assert st.ran()[-1] == "planted" and st.status == "running"


def test_the_stepper_picture_marks_states():
    g, sess, x, w, out = _model()
    st = Stepper(sess, out, {x: FEED})
    st.add_breakpoint("layer2/Log")
    st.continue_()
    pic = viz.to_picture(st)
    states = {n.name: n.state for n in pic.nodes}
    assert states["layer1/MatMul"] == "done" and states["layer2/Log"] == "stopped"
    assert states["out"] is None
    assert "step: " in viz.graph(st).source


def test_nan_stops_only_where_a_nan_starts():
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [2], name="x")
        first = fl.log(x, name="first")  # log(-1): NaN
        passed_on = fl.multiply(first, 2.0, name="passed_on")  # NaN in, NaN out: not a stop
        second = fl.sqrt(fl.constant([-1.0, 4.0]) + x * 0.0 + 1.0 - 1.0, name="second")
        out = fl.add_n([passed_on, second], name="out")
    sess = fl.Session(graph=g)
    st = Stepper(sess, out, {x: [-1.0, 1.0]}, stop_on_nan_or_inf=True)
    assert st.continue_().op == "first"
    assert st.continue_().op == "second"
    assert "its inputs had none" in st.stop.message
    st.continue_()
    assert st.status == "finished" and "passed_on" in st.ran()


def test_a_nan_fed_in_stops_at_its_first_reader():
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [2], name="x")
        y = fl.negative(x, name="reader")
        fl.identity(y, name="out")
    sess = fl.Session(graph=g)
    st = Stepper(sess, "out:0", {x: [np.nan, 1.0]}, stop_on_nan_or_inf=True)
    st.continue_()
    assert st.stop.kind == "finished"  # the NaN came in with the feed: no op made it
    st = Stepper(sess, "out:0", {x: [1.0, 1.0]}, stop_on_nan_or_inf=True)
    assert st.continue_().kind == "finished"


def test_stepping_a_while_loop_reports_frame_and_iteration():
    pytest.importorskip("flowlab.runtime.task.frames")
    from flowlab.ops.while_loop import while_loop

    g = fl.Graph()
    with g.as_default():
        s = fl.placeholder(fl.float32, [], name="s")
        i, r = while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, fl.sqrt(s - 10.0)),
                          [fl.constant(0), s])
    sess = fl.Session(graph=g)
    expected = sess.run(r, {s: 500.0})  # 490 -> 22.1 -> 12.1 -> 3.5 -> -6.5: NaN at iteration 2
    st = Stepper(sess, r, {s: 500.0}, stop_on_nan_or_inf=True)
    stop = st.continue_()
    assert stop.op == "while/Sqrt" and st.frame() == ("while/while_context", 2)
    assert "frame: while/while_context, iteration 2" in repr(st)
    st.add_breakpoint("while/Sqrt")
    st.continue_()
    assert st.stop.kind == "breakpoint" and st.frame()[1] >= 2
    assert np.isnan(st.result()) and np.isnan(expected)
    assert st.ran().count("while/Sqrt") == 6 and "while/Sqrt" in st.dead()  # dead in the last


def test_has_nan_or_inf_counts_exactly():
    from flowlab.debug import has_nan_or_inf

    big = np.array([3e38, 3e38], np.float32)  # the sum overflows; the values are finite
    assert has_nan_or_inf(big) == (0, 0)
    assert has_nan_or_inf(np.array([np.inf, -np.inf, np.nan, 1.0], np.float32)) == (1, 2)
    assert has_nan_or_inf(np.array([1 + 1j, complex(np.nan, 0)])) == (1, 0)
    assert has_nan_or_inf(np.array([1, 2])) == (0, 0) and has_nan_or_inf(np.float64(np.inf)) == (0, 1)


def test_a_training_step_on_two_devices():
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 3], name="x")
        with fl.device("/cpu:0"):
            w = fl.Variable(np.ones((3, 2), np.float32), name="w")
            h = fl.matmul(x, w)
        with fl.device("/cpu:1"):
            loss = fl.reduce_mean(fl.square(h))
        train = fl.train.GradientDescentOptimizer(0.1).minimize(loss)
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    sess.run(w.initializer)
    st = Stepper(sess, [loss, train], {x: FEED})
    st.add_breakpoint(op_type="ApplyGradientDescent")
    assert st.continue_().kind == "breakpoint"
    loss_value, _ = st.result()
    assert loss_value == np.mean(np.square(FEED @ np.ones((3, 2), np.float32)))
    assert not np.array_equal(sess.run(w), np.ones((3, 2)))  # the update landed


def test_messages_agree_with_their_counts():
    g = fl.Graph()
    with g.as_default():
        c = fl.constant(1.0, name="c")
        neg = fl.negative(c, name="neg")
    sess = fl.Session(graph=g)
    st = Stepper(sess, c)
    assert st.stop.message == "not started: 1 op to run"
    st.continue_()
    assert st.stop.message == "finished: its one op ran"
    st = Stepper(sess, neg)
    st.step()
    st.abort()
    assert st.stop.message.startswith("aborted after 1 op;")
    passes = viz.passes(sess, c)
    assert "  pruned: 1 op" in repr(passes) and "placed: 1 op on 1 device" in repr(passes)
    sess.close()
