"""Loops across devices: each device of a loop gets the control-loop skeleton it needs
(Enter -> Merge -> Switch on the received LoopCond -> NextIteration), Send/Recv pairs
inside the frame run once per iteration under keys with the frame and iteration, and
the step's values equal one device's.  (Programs against TensorFlow:
tests/programs/test_device_programs.py; random programs:
tests/runtime/master/test_multi_device_property.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.kernels import sendrecv_kernels
from flowlab.ops import control_flow_ops as cf
from flowlab.runtime.task import loop_fusion
from flowlab.runtime.task.partitioned_plan import PartitionedPlan
from flowlab.runtime.task.rendezvous import RendezvousManager

CPU = "/job:localhost/replica:0/task:0/device:CPU:{}"
CONFIG = {"device_count": {"CPU": 4}}


def session(**kw):
    return fl.Session(config=fl.ConfigProto(**CONFIG, **kw))


def nodes(parts, k):
    return {n["name"]: n for n in parts[CPU.format(k)]["node"]}


def skeleton_of(ns):
    """The control-loop ops of one partition, by op type (not the token that enters
    the skeleton: `Rank`s of loop inputs, sent over and summed, or a `Const`)."""
    out: dict[str, list[dict]] = {}
    for name, n in ns.items():
        if name.startswith("_cloop") and n["op"] in ("Enter", "Merge", "Switch", "NextIteration"):
            out.setdefault(n["op"], []).append(n)
    return out


def three_device_loop(n=5, parallel_iterations=10):
    x = fl.placeholder(fl.float32, [])

    def body(i, v):
        with fl.device("/cpu:1"):
            v2 = v * 2.0
        with fl.device("/cpu:2"):
            return i + 1, v2 + 1.0

    with fl.device("/cpu:0"):
        _, r = fl.while_loop(lambda i, v: i < n, body, [fl.constant(0), x],
                             parallel_iterations=parallel_iterations)
    return x, r


def test_each_device_of_a_loop_gets_a_skeleton_led_by_the_loop_cond():
    x, r = three_device_loop()
    with session() as s:
        assert s.run(r, {x: 1.0}) == 63.0
        parts = s.partitions(r, {x: 1.0})
    assert sorted(parts) == [CPU.format(k) for k in range(3)]
    # cpu:0 holds the LoopCond and the loop's Merge/NextIteration: it drives the loop.
    assert skeleton_of(nodes(parts, 0)) == {}
    for k in (1, 2):
        ns = nodes(parts, k)
        sk = skeleton_of(ns)
        assert sorted(sk) == ["Enter", "Merge", "NextIteration", "Switch"]
        assert all(len(v) == 1 for v in sk.values())
        enter, merge, switch, nxt = sk["Enter"][0], sk["Merge"][0], sk["Switch"][0], sk["NextIteration"][0]
        assert enter["attr"]["frame_name"] == {"s": "while/while_context"}
        assert enter["attr"]["is_constant"] == {"b": False}
        assert merge["input"] == [enter["name"], nxt["name"]]
        assert nxt["input"] == [switch["name"] + ":1"]
        data, pred = switch["input"]
        assert data == merge["name"]
        # The predicate arrives from cpu:0 every iteration, under the skeleton's Merge.
        recv = ns[pred]
        assert recv["op"] == "_Recv" and recv["input"] == ["^" + merge["name"]]
        assert recv["attr"]["send_device"] == {"s": CPU.format(0)}
        # Every Recv of a value inside the loop runs under the skeleton's Merge.
        for n in ns.values():
            if n["op"] == "_Recv" and n["attr"]["tensor_name"]["s"].split("_", 2)[2].startswith("while/"):
                assert n["input"] == ["^" + merge["name"]], n
        assert all(n["device"] == CPU.format(k) for n in ns.values())
    # The LoopCond goes from its device to every other device of the loop.
    cond_pairs = [p for p in parts.pairs if p.tensor == "while/LoopCond:0"]
    assert sorted(p.dst_device for p in cond_pairs) == [CPU.format(1), CPU.format(2)]
    assert {p.src_device for p in cond_pairs} == {CPU.format(0)} and all(p.dtype == "bool" for p in cond_pairs)
    # The body's values cross inside the frame.
    carried = {p.tensor for p in parts.pairs}
    assert {"while/Identity_1:0", "while/mul:0", "while/add:0"} <= carried


def test_a_recv_inside_the_leading_device_runs_under_the_loops_own_merge():
    x, r = three_device_loop()
    with session() as s:
        ns = nodes(s.partitions(r, {x: 1.0}), 0)
    recvs = [n for n in ns.values() if n["op"] == "_Recv"]
    assert recvs and all(len(n["input"]) == 1 and ns[n["input"][0][1:]]["op"] == "Merge" for n in recvs)


def test_four_devices_and_values_equal_one_device():
    def build(devices):
        x = fl.placeholder(fl.float64, [3])

        def body(i, v, acc):
            with fl.device("/cpu:1" if devices else None):
                a = fl.tanh(v)
            with fl.device("/cpu:2" if devices else None):
                b = a * 0.5 + fl.cast(i, fl.float64)
            with fl.device("/cpu:3" if devices else None):
                c = acc + fl.reduce_sum(b)
            return i + 1, b, c

        with fl.device("/cpu:0" if devices else None):
            out = fl.while_loop(lambda i, v, acc: i < 7, body, [fl.constant(0), x, fl.constant(0.0, fl.float64)])
        return x, out

    feed = np.array([0.1, -2.0, 3.0])
    results = []
    for devices in (False, True):
        g = fl.Graph()
        with g.as_default():
            x, out = build(devices)
            with session() as s:
                results.append(s.run(out, {x: feed}))
                if devices:
                    parts = s.partitions(out, {x: feed})
    for e, a in zip(*results):
        assert np.asarray(a).dtype == np.asarray(e).dtype
        np.testing.assert_array_equal(a, e)
    assert len(parts) == 4
    for k in (1, 2, 3):
        assert sorted(skeleton_of(nodes(parts, k))) == ["Enter", "Merge", "NextIteration", "Switch"]
    assert sorted(p.dst_device for p in parts.pairs if p.tensor == "while/LoopCond:0") == [
        CPU.format(k) for k in (1, 2, 3)
    ]


def test_rendezvous_keys_carry_the_frame_and_the_iteration(monkeypatch):
    monkeypatch.setattr(loop_fusion, "ENABLED", False)  # the partitioned path's keys
    sent: list[str] = []
    real = sendrecv_kernels.LocalRendezvous.send

    def send(self, key, value):
        sent.append(key)
        return real(self, key, value)

    monkeypatch.setattr(sendrecv_kernels.LocalRendezvous, "send", send)
    x, r = three_device_loop(n=5)
    with session() as s:
        assert s.run(r, {x: 1.0}) == 63.0
    parsed = [sendrecv_kernels.parse_key(k) for k in sent]
    cond = [p for p in parsed if p.tensor_name.endswith("while/LoopCond")]
    # One predicate per iteration (5 true, 1 false) for each of the two other devices.
    assert len(cond) == 12
    assert sorted(p.iter_id for p in cond if p.dst_device == CPU.format(1)) == list(range(6))
    assert len({p.frame_id for p in cond}) == 1 and cond[0].frame_id != 0
    # Keys are unique within the step; the transfers are inside the loop, except the
    # tokens that start the skeletons (sent once, at 0:0).
    assert len(set(sent)) == len(sent)
    tokens = [p for p in parsed if "/rank" in p.tensor_name]
    assert len(tokens) == 2 and {(p.frame_id, p.iter_id) for p in tokens} == {(0, 0)}
    assert {p.frame_id for p in parsed if p not in tokens} == {cond[0].frame_id}


def test_no_rendezvous_entries_left_after_a_thousand_loop_steps(monkeypatch):
    left: list[int] = []
    real = RendezvousManager.cleanup

    def cleanup(self, step_id, error=None):
        table = self._tables.get(step_id)
        left.append(len(table) if table is not None else 0)
        return real(self, step_id, error)

    monkeypatch.setattr(RendezvousManager, "cleanup", cleanup)
    x, r = three_device_loop(n=3)
    with session() as s:
        run = s.make_callable(r, [x])
        for k in range(1000):
            assert run(float(k)) == float(k) * 8 + 7
        assert len(s._rendezvous) == 0
    assert len(left) == 1000 and set(left) == {0}


def test_a_failing_op_inside_a_cross_device_loop_cancels_every_partition_and_undoes_writes():
    with fl.device("/cpu:0"):
        counter = fl.Variable(0.0, name="counter")

    def body(i, acc):
        with fl.device("/cpu:0"):
            bump = counter.assign_add(1.0)
        with fl.device("/cpu:1"), fl.control_dependencies([bump]):
            y = fl.debugging.check_numerics(fl.log(3.0 - fl.cast(i, fl.float32)), "log went bad")
        with fl.device("/cpu:2"):
            return i + 1, acc + y

    with fl.device("/cpu:0"):
        _, r = fl.while_loop(lambda i, acc: i < 6, body, [fl.constant(0), fl.constant(0.0)])
    with session() as s:
        s.run(counter.initializer)
        with pytest.raises(errors.InvalidArgumentError, match="log went bad"):
            s.run(r)
        assert s.run(counter) == 0.0
        assert len(s._rendezvous) == 0
        assert len(s.partitions(r)) == 3


def test_loop_inside_an_untaken_branch_across_devices_is_dead_everywhere():
    x = fl.placeholder(fl.float32, [])
    p = fl.placeholder(fl.bool, [])

    def loop():
        def body(i, v):
            with fl.device("/cpu:1"):
                return i + 1, v * 1.5

        with fl.device("/cpu:0"):
            return fl.while_loop(lambda i, v: i < 3, body, [fl.constant(0), x])[1]

    with fl.device("/cpu:2"):
        r = fl.cond(p, loop, lambda: x + 100.0)
    with session() as s:
        assert s.run(r, {x: 2.0, p: True}) == 6.75
        assert s.run(r, {x: 2.0, p: False}) == 102.0
        assert len(s._rendezvous) == 0


def test_nested_loops_stack_their_skeletons():
    x = fl.placeholder(fl.float32, [2])

    def inner_body(j, u):
        with fl.device("/cpu:3"):
            return j + 1, u * 0.5 + 1.0

    def body(i, v):
        with fl.device("/cpu:1"):
            _, u = fl.while_loop(lambda j, u: j < i, inner_body, [fl.constant(0), v])
        with fl.device("/cpu:2"):
            return i + 1, u - 0.25

    with fl.device("/cpu:0"):
        _, r = fl.while_loop(lambda i, v: i < 4, body, [fl.constant(0), x])
    with session() as s:
        out = s.run(r, {x: np.array([1.0, 2.0], np.float32)})
        parts = s.partitions(r, {x: np.array([1.0, 2.0], np.float32)})
    np.testing.assert_allclose(out, [1.6914062, 1.7070312], rtol=1e-6)
    # cpu:3 runs only inner-loop ops: it needs the outer skeleton and, inside it, the inner one.
    sk = skeleton_of(nodes(parts, 3))
    frames = sorted(e["attr"]["frame_name"]["s"] for e in sk["Enter"])
    assert frames == ["while/while/while_context", "while/while_context"]
    ns = nodes(parts, 3)
    inner_enter = next(e for e in sk["Enter"] if e["attr"]["frame_name"]["s"].startswith("while/while/"))
    # The inner skeleton is entered from the outer frame: a token summed from the
    # Ranks of the inner condition's loop inputs, received in each outer iteration.
    token = ns[inner_enter["input"][0]]
    assert token["op"] == "AddN"
    for name in token["input"]:
        assert ns[name]["op"] == "_Recv" and ns[ns[name]["input"][0][1:]]["op"] == "Merge"


def test_a_backward_loop_spans_devices_as_well():
    x = fl.placeholder(fl.float32, [3])

    def body(i, v):
        with fl.device("/cpu:1"):
            v2 = fl.tanh(v * 0.9)
        return i + 1, v2 + 0.1 * v

    with fl.device("/cpu:0"):
        _, r = fl.while_loop(lambda i, v: i < 4, body, [fl.constant(0), x])
        (g,) = fl.gradients(fl.reduce_sum(r * r), [x], colocate_gradients_with_ops=True)
    feed = {x: np.array([0.3, -0.2, 0.7], np.float32)}
    with session() as s:
        value = s.run(g, feed)
        parts = s.partitions(g, feed)
    with fl.Session(config=fl.ConfigProto(allow_soft_placement=True)) as s:
        np.testing.assert_allclose(value, s.run(g, feed), rtol=1e-6)
    frames = {e["attr"]["frame_name"]["s"] for k in range(len(parts))
              for e in skeleton_of(nodes(parts, k)).get("Enter", [])}
    assert any(f.startswith("gradients/") for f in frames)
    assert "while/while_context" in frames


def test_partitioned_loops_keep_one_device_per_op_with_enter_and_next_iteration_moved():
    x, r = three_device_loop()
    with session() as s:
        parts = s.partitions(r, {x: 1.0})
        placement = s.placement(r, {x: 1.0})
    where = {n: CPU.format(k) for k in range(3) for n in nodes(parts, k)}
    # As TensorFlow: a NextIteration sits with its Merge, an Enter with its consumer.
    assert where["while/NextIteration_1"] == where["while/Merge_1"] == CPU.format(0)
    assert where["while/mul/y"] == CPU.format(1)
    for name, dev in placement.device_of.items():
        if name in where and not name.startswith(("while/Enter", "while/NextIteration")):
            assert where[name] == dev.name, name


def test_a_hand_built_loop_without_loop_cond_runs_unpartitioned():
    with fl.device("/cpu:0"):
        enter = cf.enter(fl.constant(0), "byhand")
        ten = cf.enter(fl.constant(10), "byhand", is_constant=True)
        one = cf.enter(fl.constant(1), "byhand", is_constant=True)
        merge = cf.merge([enter, enter])[0]
        pred = merge < ten  # no LoopCond
        false, true = cf.switch(merge, pred)
        out = cf.exit(false)
    with fl.device("/cpu:1"):
        step = fl.identity(true) + one
    merge.op._update_input(1, cf.next_iteration(step))
    with session() as s:
        assert s.run(out) == 10
        parts = s.partitions(out)
        assert parts.pairs == []
        plan = s._plan_for([], [out], [])
        assert not isinstance(plan, PartitionedPlan)
        assert len({d.name for d in plan.placement.device_of.values()}) == 2
