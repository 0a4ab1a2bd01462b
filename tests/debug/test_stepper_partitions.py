"""The Stepper on a step placed on four devices: partition by partition, Send/Recv
pairs as steps, per-device ready queues, stops, values and abort across partitions."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.debug import Stepper

FEED = np.array([[2, 2, 2], [1, 1, 1]], np.float32)  # h = [[6, 6], [3, 3]]: log(h - 3) has -inf
CPU = "/job:localhost/replica:0/task:0/device:CPU:"


def _model(log_device: int = 2):
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 3], name="x")
        with fl.device("/cpu:0"):
            w = fl.Variable(np.ones((3, 2), np.float32), name="w")
            h = fl.matmul(x, w, name="h")
        with fl.device("/cpu:1"):
            a = fl.nn.relu(h, name="a")
        with fl.device(f"/cpu:{log_device}"):
            b = fl.log(h - 3.0, name="b")
        with fl.device("/cpu:3"):
            y = fl.reduce_sum(a * 0.5 + b, name="y")
        with fl.control_dependencies([y]):  # on cpu:0 with w: a control edge from cpu:3
            bump = fl.assign_add(w, np.ones((3, 2), np.float32), name="bump")
        with fl.device("/cpu:3"), fl.control_dependencies([bump]):
            fl.identity(y, name="after_bump")
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 4}))
    sess.run(w.initializer)
    return sess, x, w, y, bump


def _pair(st, src: str, dst_device: int) -> tuple[str, str]:
    """(recv, send) of the transfer of op `src`'s output to cpu:dst_device."""
    for recv, send in st.waiting().items():
        if send.startswith(src + "/") and st.device_of(recv) == CPU + str(dst_device):
            return recv, send
    raise AssertionError(f"no waiting Recv of {src} on cpu:{dst_device}: {st.waiting()}")


def test_partitions_step_separately_and_a_recv_is_ready_once_its_send_ran():
    sess, x, w, y, bump = _model()
    expected = sess.run(y, {x: FEED})
    st = Stepper(sess, [y, bump], {x: FEED})
    assert st.partitioned and st.devices() == [CPU + str(i) for i in range(4)]
    by_dev = st.ready_by_device()
    assert by_dev[CPU + "0"] == ["w"] and by_dev[CPU + "1"] == []
    recv, send = _pair(st, "h", 1)
    assert st.device_of(send) == CPU + "0"
    # cpu:1 has nothing to do until h is sent: the command says so.
    stop = st.step(device="/cpu:1")
    assert stop.kind == "waiting" and recv in stop.message and send in stop.message
    assert st.ran() == []
    st.step(3, device="/cpu:0")
    assert st.ran() == ["w", "w/read", "h"] and send in st.ready("/cpu:0")
    assert recv not in st.ready()
    st.step(op=send)
    assert recv in st.ready(device="cpu:1") and recv not in st.waiting()
    st.step(device="/cpu:1")
    assert st.ran()[-2:] == [send, recv]
    np.testing.assert_array_equal(st.value(f"{recv}:0"), FEED @ np.ones((3, 2), np.float32))
    st.step(device="/cpu:1")
    assert st.ran()[-1] == "a" and st.value("a").shape == (2, 2)
    text = repr(st)
    assert "ready on CPU:0" in text and "ready on CPU:3" in text and "waiting (" in text
    out = st.result()
    assert out[0] == expected and st.status == "finished"
    np.testing.assert_array_equal(sess.run(w), np.full((3, 2), 2.0, np.float32))
    assert len(sess._rendezvous) == 0


def test_devices_take_turns_and_every_op_runs_once():
    sess, x, w, y, bump = _model()
    st = Stepper(sess, [y, bump], {x: FEED})
    st.step(3)
    assert [st.device_of(n) for n in st.ran()] == [CPU + "0", CPU + "2", CPU + "3"]
    st.result()
    types = {sess.graph.get_operation_by_name(n).type if n in _names(sess) else None for n in st.ran()}
    assert None in types  # the Send/Recv ops ran too: they are not in the user's graph
    assert sorted(st.ran()) == sorted(st.ops()) and len(st.ran()) == len(set(st.ran()))
    sends = [n for n in st.ran() if st.device_of(n) and n.split("/")[-1].startswith("_")]
    assert len(sends) >= 8  # 4 data pairs and the control pair, both halves


def _names(sess):
    return {op.name for op in sess.graph.get_operations()}


def test_breakpoints_watches_and_the_first_nan_across_partitions():
    sess, x, w, y, bump = _model()
    st = Stepper(sess, [y, bump], {x: FEED}, stop_on_nan_or_inf=True)
    st.add_breakpoint(op_type="_Recv", when=lambda op: op.device.endswith("CPU:3"))
    stop = st.continue_()
    assert stop.kind == "breakpoint" and st.device_of(stop.op) == CPU + "3"
    wa = st.watch("b:0")
    stop = st.continue_()
    while stop.kind == "breakpoint":
        stop = st.continue_()
    assert stop.kind == "nan_or_inf" and stop.op == "b" and "2 Inf" in stop.message
    assert np.isinf(wa.value).sum() == 2
    # The Recv carrying b's Inf to cpu:3 only passes it on: no stop there.
    st.clear_breakpoints()
    assert st.continue_().kind == "finished"
    assert np.isneginf(st.result()[0])


def test_abort_rolls_back_and_drops_the_step_table():
    sess, x, w, y, bump = _model()
    st = Stepper(sess, "after_bump:0", {x: FEED})
    st.run_to("bump")
    np.testing.assert_array_equal(sess.run(w), np.full((3, 2), 2.0, np.float32))  # written
    st.abort()
    assert st.status == "aborted"
    np.testing.assert_array_equal(sess.run(w), np.ones((3, 2), np.float32))  # undone
    assert len(sess._rendezvous) == 0
    with pytest.raises(errors.CancelledError):
        st.result()


def test_an_error_on_one_device_fails_the_whole_step():
    g = fl.Graph()
    with g.as_default():
        a = fl.placeholder(fl.float32, [None], name="a")
        b = fl.placeholder(fl.float32, [None], name="b")
        v = fl.Variable(1.0, name="v")
        with fl.device("/cpu:0"):
            inc = fl.assign_add(v, 1.0, name="inc")
            a2 = fl.identity(a, name="a2")
        with fl.device("/cpu:1"), fl.control_dependencies([inc]):
            c = fl.add(a2, b, name="c")  # shapes 2 and 3: fails at run time
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    sess.run(v.initializer)
    st = Stepper(sess, c, {a: np.ones(2, np.float32), b: np.ones(3, np.float32)})
    stop = st.continue_()
    assert stop.kind == "error" and stop.op == "c" and st.status == "failed"
    with pytest.raises(errors.InvalidArgumentError, match="AddV2 'c'"):
        st.result()
    assert sess.run(v) == 1.0 and len(sess._rendezvous) == 0


def test_one_queue_on_request_and_partitioned_needs_partitions():
    sess, x, w, y, bump = _model()
    expected = sess.run(y, {x: FEED})
    st = Stepper(sess, [y, bump], {x: FEED}, partitioned=False)
    assert not st.partitioned and not st.waiting()
    assert not any("/_" in n for n in st.ops())  # no Send/Recv
    assert st.result()[0] == expected  # the same step, as one queue
    with pytest.raises(ValueError, match="No op of this step runs on"):
        Stepper(sess, y, {x: FEED}).step(device="/cpu:7")
    g = fl.Graph()
    with g.as_default():
        z = fl.constant(1.0) + 1.0
    with fl.Session(graph=g) as s1, pytest.raises(ValueError, match="one partition"):
        Stepper(s1, z, partitioned=True)


def test_close_cancels_a_partitioned_step_being_stepped():
    sess, x, w, y, bump = _model()
    st = Stepper(sess, [y, bump], {x: FEED})
    st.step(4)
    sess.close()
    with pytest.raises(errors.CancelledError):
        st.result()


def test_the_op_a_breakpoint_stopped_before_runs_first_on_the_next_command():
    sess, x, w, y, bump = _model()
    st = Stepper(sess, [y, bump], {x: FEED})
    st.add_breakpoint("a")  # on cpu:1
    assert st.continue_().op == "a"
    assert len([d for d, ops in st.ready_by_device().items() if ops]) > 1  # others could run
    st.step()
    assert st.ran()[-1] == "a"
    assert st.continue_().kind == "finished"


def test_a_loop_across_devices_steps_per_partition_iteration_by_iteration():
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [], name="x")

        def body(i, v):
            with fl.device("/cpu:1"):
                v2 = fl.multiply(v, 2.0, name="double")
            return i + 1, v2

        _, out = fl.while_loop(lambda i, v: i < 3, body, [fl.constant(0), x])
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    st = Stepper(sess, out, {x: 1.0})
    assert st.partitioned
    doubles = st.watch("while/double:0")
    while st.step(device="/cpu:1").kind != "waiting":  # cpu:1 alone gets stuck waiting
        pass
    assert not st.finished and st.waiting()
    assert st.result() == 8.0
    assert [float(v) for v in doubles.values] == [2.0, 4.0, 8.0]
    assert st.frame()[0] == "while/while_context"
