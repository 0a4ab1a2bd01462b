"""The local rendezvous: keys, the table's send/recv/abort contract, the `_Send` and
`_Recv` kernels (asynchronous, zero-copy, dead values, cancellation), and that no
entry of any step is left behind."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.kernels.registry import DEAD
from flowlab.kernels.sendrecv_kernels import LocalRendezvous, make_key, parse_key
from flowlab.ops import sendrecv_ops
from flowlab.runtime.task.rendezvous import RendezvousManager
from tests.runtime import testing_ops as T

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"


def four_cpus() -> fl.ConfigProto:
    return fl.ConfigProto(device_count={"CPU": 4})


# --- keys --------------------------------------------------------------------------------
def test_key_has_tensorflows_format_and_parses_back():
    key = make_key(CPU0, 0xABCDEF, CPU1, "edge_3_a", 2, 7)
    assert key == f"{CPU0};0000000000abcdef;{CPU1};edge_3_a;2:7"
    assert parse_key(key) == (CPU0, 0xABCDEF, CPU1, "edge_3_a", 2, 7)
    # A negative (signed) incarnation is written as its unsigned 64-bit pattern.
    assert make_key(CPU0, -1, CPU1, "t").split(";")[1] == "f" * 16
    assert parse_key(make_key(CPU0, -5, CPU1, "t")).src_incarnation == -5


@pytest.mark.parametrize("bad", ["a;b;c", f"{CPU0};zz;{CPU1};t;0:0", f"{CPU0};01;{CPU1};t;00"])
def test_malformed_key_is_a_value_error(bad):
    with pytest.raises(ValueError, match="Invalid rendezvous key"):
        parse_key(bad)


# --- the table ---------------------------------------------------------------------------
def test_send_then_recv_delivers_at_once_the_same_object():
    r = LocalRendezvous()
    x = np.arange(3.0)
    r.send("k", x)
    assert len(r) == 1
    got = []
    r.recv("k", lambda v, e: got.append((v, e)))
    assert got == [(x, None)] and got[0][0] is x
    assert len(r) == 0


def test_recv_then_send_calls_the_waiting_receiver():
    r = LocalRendezvous()
    got = []
    r.recv("k", lambda v, e: got.append((v, e)))
    assert got == [] and r.pending_keys() == ["k"]
    r.send("k", DEAD)
    assert got == [(DEAD, None)]
    assert len(r) == 0


def test_a_key_is_sent_and_received_once():
    r = LocalRendezvous(step_id=5)
    r.send("k", 1)
    with pytest.raises(errors.InternalError, match="already sent.*step 5"):
        r.send("k", 2)
    r.recv("j", lambda v, e: None)
    got = []
    r.recv("j", lambda v, e: got.append(e))
    assert isinstance(got[0], errors.InternalError) and "Two receivers" in str(got[0])


def test_abort_fails_waiters_once_and_refuses_later_use():
    r = LocalRendezvous()
    got = []
    r.recv("a", lambda v, e: got.append(e))
    r.send("b", 1)
    boom = errors.CancelledError(None, None, "stop")
    r.abort(boom)
    assert got == [boom] and len(r) == 0
    r.abort()  # idempotent, nobody is called twice
    assert got == [boom]
    with pytest.raises(errors.CancelledError):
        r.send("c", 1)
    late = []
    r.recv("d", lambda v, e: late.append(e))
    assert late == [boom]


def test_concurrent_sends_and_receives_pair_up():
    r = LocalRendezvous()
    n = 2000
    got: list[int] = []
    lock = threading.Lock()

    def receiver():
        for i in range(n):
            r.recv(f"k{i}", lambda v, e: (lock.acquire(), got.append(v), lock.release()))

    def sender():
        for i in range(n):
            r.send(f"k{i}", i)

    ts = [threading.Thread(target=receiver), threading.Thread(target=sender)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert sorted(got) == list(range(n)) and len(r) == 0


def test_manager_drops_a_step_table_and_fails_its_waiters():
    m = RendezvousManager()
    r = m.find_or_create(1)
    assert m.find_or_create(1) is r and len(m) == 1
    got = []
    r.recv("k", lambda v, e: got.append(e))
    m.cleanup(1, errors.AbortedError(None, None, "gone"))
    assert len(m) == 0 and isinstance(got[0], errors.AbortedError)
    m.cleanup(1)  # unknown step: nothing to do


# --- the kernels, through sessions -------------------------------------------------------
def _pair(x, name="t", src=CPU0, dst=CPU1, incarnation=1):
    """A hand-built Send/Recv; fetch the Send too (nothing else needs it)."""
    with fl.device(src):
        send = sendrecv_ops.send(x, name, src, incarnation, dst)
    with fl.device(dst):
        return sendrecv_ops.recv(x.dtype, name, src, incarnation, dst), send


def test_hand_built_pair_moves_the_array_without_a_copy():
    x = fl.placeholder(fl.float32, [None])
    y, send = _pair(x)
    assert y.op.type == "_Recv" and y.op.get_attr("tensor_type") == fl.float32
    assert send.type == "_Send" and send.get_attr("T") == fl.float32
    big = np.ones(1 << 20, np.float32)
    with fl.Session(config=four_cpus()) as s:
        out, _ = s.run([y, send], {x: big})
        # Same host memory: the received array is the fed array itself.
        assert np.shares_memory(out, big)
        assert s.devices[1].bytes_copied == 0 and s.devices[1].bytes_received == big.nbytes


def test_hand_built_pair_on_one_device_uses_a_table_of_the_step():
    x = fl.constant(np.float32(2.5))
    y, send = _pair(x, src=CPU0, dst=CPU0)
    with fl.Session() as s:
        assert s.run([y, send]) == [np.float32(2.5), None]
        assert s.run([y * 2, send])[0] == np.float32(5.0)


def test_recv_waits_without_holding_a_thread():
    # The Recv is ready at once; its Send runs only after a slow asynchronous op.
    x = fl.constant(np.arange(3, dtype=np.float32))
    with fl.device("/cpu:0"):
        slow = T.async_copy(x, delay=0.05)
    y, send = _pair(slow)
    with fl.device("/cpu:1"):
        z = y + 1.0
    with fl.Session(config=four_cpus()) as s:
        np.testing.assert_array_equal(s.run([z, send])[0], [1.0, 2.0, 3.0])


def test_recv_that_never_gets_its_tensor_hits_the_deadline_and_leaves_nothing():
    with fl.device("/cpu:1"):
        y = sendrecv_ops.recv(fl.float32, "never", CPU0, 1, CPU1)
        z = y + 1.0
    with fl.device("/cpu:0"):
        w = fl.constant(1.0) * 2.0
    with fl.Session(config=four_cpus()) as s:
        with pytest.raises(errors.DeadlineExceededError):
            s.run([z, w], options=fl.RunOptions(timeout_in_ms=50))
        assert len(s._rendezvous) == 0


def test_a_failing_op_cancels_the_recv_waiting_on_another_device():
    x = fl.constant(np.float32(1.0))
    with fl.device("/cpu:0"):
        bad = T.fail(x, message="kaput")
    y, send = _pair(bad)
    with fl.device("/cpu:1"):
        z = y * 2.0
    with fl.Session(config=four_cpus()) as s:
        with pytest.raises(errors.InvalidArgumentError, match="kaput") as ei:
            s.run([z, send])
        assert "TestingFail" in str(ei.value)
        assert len(s._rendezvous) == 0


def test_a_dead_value_crosses_devices():
    x = fl.constant(np.float32(3.0))
    pred = fl.placeholder(fl.bool, [])
    with fl.device("/cpu:0"):
        f, t = T.switch(x, pred)
    with fl.device("/cpu:1"):
        t2 = T.plus(t, t, name="true_branch")
    with fl.device("/cpu:2"):
        f2 = T.plus(f, x, name="false_branch")
    with fl.device("/cpu:3"):
        m = T.merge([f2, t2])
    events = []
    with fl.Session(config=four_cpus()) as s:
        s.set_listener(events.append)
        assert s.run(m, {pred: True}) == 6.0
        assert s.run(m, {pred: False}) == 6.0
        dead = {(e.node, e.device[-5:]) for e in events if e.kind == "op_dead"}
        assert dead == {("true_branch", "CPU:1"), ("false_branch", "CPU:2")}
        assert len(s.partitions(m, {pred: True}).pairs) >= 4
        with pytest.raises(errors.InvalidArgumentError, match="is dead"):
            s.run(t2, {pred: False})


# --- nothing left behind -----------------------------------------------------------------
def test_no_rendezvous_entries_after_10000_steps():
    x = fl.placeholder(fl.float32, [])
    with fl.device("/cpu:1"):
        y = x * 2.0
    with fl.device("/cpu:2"):
        z = y + x
    with fl.device("/cpu:3"):
        bad = T.fail(z, message="odd step")
    with fl.Session(config=four_cpus()) as s:
        step = s.make_callable(z, [x])
        for i in range(10_000):
            assert step(float(i)) == np.float32(3 * i)
            if i % 1000 == 0:
                with pytest.raises(errors.InvalidArgumentError, match="odd step"):
                    s.run(bad, {x: 1.0})
        assert len(s._rendezvous) == 0 and s._rendezvous.total_entries() == 0


def test_keys_inside_a_loop_carry_the_frame_and_iteration():
    # A hand-built pair inside a while loop: each iteration's transfer has its own key.
    def body(i, v):
        send = sendrecv_ops.send(v * 2.0, "loopval", CPU0, 1, CPU0)
        with fl.control_dependencies([send]):
            r = sendrecv_ops.recv(fl.float32, "loopval", CPU0, 1, CPU0)
        r.set_shape([])
        return i + 1, r + 1.0

    _, out = fl.while_loop(lambda i, v: i < 4, body, [fl.constant(0), fl.constant(1.0)])
    with fl.Session() as s:
        assert s.run(out) == 31.0
