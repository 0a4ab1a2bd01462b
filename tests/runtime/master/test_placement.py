"""Placement: colocation, merged requests, conflicts, soft placement, reasons, and the
opt-in greedy simulation over the cost model."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab.runtime.config import ConfigProto
from flowlab.runtime.master.cost_model import CostModel, simulate
from flowlab.runtime.master.placement import place
from flowlab.runtime.master.prune import prune
from flowlab.runtime.task.device import local_devices

CPU = "/job:localhost/replica:0/task:0/device:CPU:"


def _place(fetches, n=4, **kw):
    ops = prune(fetches, [], [])
    return place(ops, local_devices({"CPU": n}), **kw)


def _where(p, name):
    return p.device_of[name].name


# --- requests, groups and reasons ---------------------------------------------------
def test_default_is_the_first_device_as_tensorflow():
    a = fl.constant(1.0, name="a")
    b = fl.square(a, name="b")
    p = _place([b])
    assert _where(p, "a") == _where(p, "b") == CPU + "0"
    assert p.reasons["b"] == "default: first feasible device"
    assert p.strategy == "first" and p.estimates == {} and p.predicted_step_time is None


def test_requested_devices_and_their_reasons():
    with fl.device("/cpu:2"):
        a = fl.constant(1.0, name="a")
    b = fl.square(a, name="b")
    p = _place([b])
    assert _where(p, "a") == CPU + "2" and _where(p, "b") == CPU + "0"
    assert p.reasons["a"] == "requested /device:CPU:2"
    p1 = _place([fl.square(fl.constant(2.0, name="c"), name="b1")], n=1)
    assert p1.reasons["b1"] == "only feasible device"


def test_colocated_ops_follow_and_say_with_whom():
    with fl.device("/cpu:3"):
        v = fl.Variable(1.0, name="emb")
    inc = fl.assign_add(v, 2.0, name="inc")
    p = _place([inc])
    assert _where(p, "inc") == CPU + "3"
    assert p.reasons["inc"] == "colocated with emb; requested /device:CPU:3"


def test_reference_edge_wins_over_the_consumers_request_as_in_tensorflow():
    with fl.device("/cpu:0"):
        v = fl.Variable(1.0, name="v")
    inc = fl.assign_add(v, 1.0, name="inc")
    # Set after building: a ref op is built colocated with its variable (TensorFlow), so a
    # device scope around it no longer reaches it.
    inc.op._set_device("/cpu:1")
    p = _place([inc])
    assert _where(p, "inc") == CPU + "0"
    assert "ignoring its request /device:CPU:1" in p.reasons["inc"]
    with fl.Session(config=ConfigProto(device_count={"CPU": 2})) as s:
        s.run(v.initializer)
        assert s.run(inc) == 2.0


def test_conflicting_colocation_is_an_error_naming_both_ops_and_requests():
    with fl.device("/cpu:0"):
        a = fl.constant(1.0, name="a")
    with fl.colocate_with(a):
        b = fl.identity(a, name="b")
    b.op._set_device("/cpu:1")
    with pytest.raises(fl.errors.InvalidArgumentError) as e:
        _place([b])
    msg = str(e.value)
    assert "Cannot colocate nodes 'b' and 'a'" in msg
    assert "Cannot merge devices with incompatible ids: '/device:CPU:1' and '/device:CPU:0'" in msg
    p = _place([b], allow_soft_placement=True)
    assert _where(p, "b") == CPU + "0"
    # TensorFlow's soft merge drops the differing index: the group may go anywhere on a CPU.
    assert "soft placement: its request /device:CPU:1 and /device:CPU:0 merge to /device:CPU:*" in p.reasons["b"]


def test_conflict_error_matches_tensorflows_class_and_wording(tf1):
    def run(tf):
        g = tf.Graph()
        with g.as_default():
            with tf.device("/cpu:0"):
                a = tf.constant(1.0, name="a")
            with tf.colocate_with(a):
                b = tf.identity(a, name="b")
            b.op._set_device("/cpu:1")
            with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as s:
                s.run(b)

    for mod in (tf1, fl):
        with pytest.raises(Exception) as e:
            run(mod)
        assert type(e.value).__name__ == "InvalidArgumentError"
        assert "Cannot merge devices with incompatible ids: '/device:CPU:1' and '/device:CPU:0'" in str(e.value)


def test_unsatisfiable_request_and_soft_placement():
    with fl.device("/gpu:0"):
        a = fl.constant(1.0, name="a")
    with pytest.raises(fl.errors.InvalidArgumentError, match="was explicitly assigned to /device:GPU:0"):
        _place([a])
    p = _place([a], allow_soft_placement=True)
    assert _where(p, "a") == CPU + "0"
    assert p.reasons["a"] == "soft placement: no device matches /device:GPU:0"


def test_pinned_program_lands_where_tensorflow_puts_it(tf1):
    def build(tf):
        with tf.device("/cpu:1"):
            x = tf.constant([1.0, 2.0], name="x")
            y = tf.square(x, name="y")
        with tf.device("/cpu:3"):
            z = tf.add(y, 1.0, name="z")
        w = tf.multiply(z, 2.0, name="w")
        return w

    def placed(tf, cfg):
        g = tf.Graph()
        with g.as_default():
            w = build(tf)
            md = tf.RunMetadata()
            with tf.Session(config=cfg) as s:
                val = s.run(w, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
            return val, {n.node_name: d.device for d in md.step_stats.dev_stats for n in d.node_stats}

    tf_val, tf_dev = placed(tf1, tf1.ConfigProto(device_count={"CPU": 4}))
    with fl.Graph().as_default():
        w = build(fl)
        with fl.Session(config=ConfigProto(device_count={"CPU": 4})) as s:
            val = s.run(w)
            p = s.placement(w)
    np.testing.assert_array_equal(val, tf_val)
    for name in ("y", "z", "w"):
        if name in tf_dev:
            assert p.device_of[name].name == tf_dev[name], name


# --- cost model ----------------------------------------------------------------------
def test_cost_model_counts_matmul_flops_and_transfer_bytes():
    a = fl.placeholder(fl.float32, [64, 128])
    b = fl.placeholder(fl.float32, [128, 32])
    m = fl.matmul(a, b)
    mt = fl.matmul(b, a, transpose_a=True, transpose_b=True)
    cm = CostModel()
    assert cm.flops(m.op) == 2 * 64 * 128 * 32
    assert cm.flops(mt.op) == 2 * 128 * 32 * 64
    assert cm.tensor_bytes(m) == 64 * 32 * 4
    d0, d1 = local_devices({"CPU": 2})
    assert cm.transfer_time(100, d0, d0) == 0.0
    assert cm.transfer_time(10**6, d0, d1) == pytest.approx(cm.transfer_latency + 1e-4)
    slow = CostModel(device_speed={d1.name: 0.5})
    assert slow.compute_time(m.op, d1) == pytest.approx(2 * slow.compute_time(m.op, d0))
    slow.measured[m.op.name] = 1.0
    assert slow.compute_time(m.op, d0) == 1.0


def test_conv_flops():
    x = fl.placeholder(fl.float32, [2, 8, 8, 3])
    f = fl.placeholder(fl.float32, [3, 3, 3, 16])
    y = fl.nn.conv2d(x, f, [1, 1, 1, 1], "SAME")
    assert CostModel().flops(y.op) == 2 * (2 * 8 * 8 * 16) * 3 * 3 * 3


# --- greedy --------------------------------------------------------------------------
def _towers(n_towers, depth, size):
    outs = []
    for t in range(n_towers):
        h = fl.constant(np.ones((size, size), np.float32), name=f"x{t}")
        w = fl.constant(np.eye(size, dtype=np.float32) * (t + 1), name=f"w{t}")  # no CSE
        for i in range(depth):
            h = fl.matmul(h, w, name=f"t{t}/mm{i}")
        outs.append(h)
    return outs


def test_greedy_keeps_a_chain_on_one_device():
    outs = _towers(1, 5, 64)
    p = _place(outs, strategy="greedy")
    assert {d.name for d in p.device_of.values()} == {CPU + "0"}
    assert p.reasons["t0/mm1"].startswith("fastest: est. ")
    assert p.reasons["x0"] == "generator: placed with its consumer t0/mm0"
    assert set(p.estimates["t0/mm1"]) == {CPU + str(i) for i in range(4)}


def test_greedy_spreads_independent_heavy_towers():
    outs = _towers(4, 4, 512)
    p = _place(outs, strategy="greedy")
    per_tower = [{p.device_of[f"t{t}/mm{i}"].name for i in range(4)} for t in range(4)]
    assert all(len(s) == 1 for s in per_tower)  # each tower stays together
    assert len(set().union(*per_tower)) == 4  # and the four use four devices
    ops = prune(outs, [], [])
    one = {op.name: local_devices({"CPU": 1})[0] for op in ops}
    t_one, _ = simulate(ops, one)
    assert p.predicted_step_time < t_one / 3


def test_greedy_does_not_spread_cheap_towers():
    outs = _towers(4, 3, 4)
    p = _place(outs, strategy="greedy")
    assert {d.name for d in p.device_of.values()} == {CPU + "0"}


def test_greedy_respects_pins_and_colocation():
    with fl.device("/cpu:2"):
        v = fl.Variable(np.ones((256, 256), np.float32), name="v")
    h = fl.matmul(v, v, name="h")
    inc = fl.assign_add(v, h, name="inc")
    p = _place([inc], strategy="greedy")
    assert _where(p, "v") == _where(p, "inc") == CPU + "2"
    assert _where(p, "h") == CPU + "2"  # its input is there: moving it costs transfers


def test_unknown_strategy_is_an_error():
    with pytest.raises(ValueError, match="placement_strategy"):
        _place([fl.constant(1.0)], strategy="random")


def test_greedy_session_gives_the_values_of_one_device():
    outs = _towers(4, 2, 128)
    total = fl.add_n([fl.reduce_sum(o) for o in outs])
    cfg = ConfigProto(device_count={"CPU": 4}, placement_strategy="greedy")
    with fl.Session(config=cfg) as s, fl.Session() as s1:
        assert s.run(total) == s1.run(total)
        p = s.placement(total)
        assert p.strategy == "greedy" and len({d.name for d in p.device_of.values()}) == 4


def _tf_devices(tf1, build):
    """op name -> device in a TensorFlow step (optimizer off, so every op runs)."""
    g = tf1.Graph()
    with g.as_default():
        fetches, feed = build(tf1)
        cfg = tf1.ConfigProto(device_count={"CPU": 4})
        cfg.graph_options.optimizer_options.opt_level = tf1.OptimizerOptions.L0
        cfg.graph_options.rewrite_options.disable_meta_optimizer = True
        md = tf1.RunMetadata()
        with tf1.Session(config=cfg) as s:
            s.run(fetches, feed, options=tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE), run_metadata=md)
    return {n.node_name: d.device for d in md.step_stats.dev_stats for n in d.node_stats}


def test_tensorflows_generator_and_metadata_heuristics(tf1):
    def build(tf):
        p = tf.placeholder(tf.float32, None, name="p")
        k = tf.constant([1.0, 2.0], name="k")  # unpinned, one consumer on /cpu:2
        shared = tf.constant(3.0, name="shared")  # consumers on two devices: stays
        with tf.device("/cpu:2"):
            u = tf.multiply(p, k, name="u")
            a = tf.add(u, shared, name="a")
        with tf.device("/cpu:1"):
            b = tf.add(u, shared, name="b")
        sh = tf.shape(b, name="sh")  # unknown shape: a Shape op, with its input
        return [a, b, sh], {p: np.array([1.0, 1.0], np.float32)}

    expected = _tf_devices(tf1, build)
    with fl.Graph().as_default():
        fetches, feed = build(fl)
        off = fl.ConfigProto(device_count={"CPU": 4}, graph_options=fl.GraphOptions(
            optimizer_options=fl.OptimizerOptions(opt_level=fl.OptimizerOptions.L0)))
        with fl.Session(config=off) as s:
            s.run(fetches, feed)
            p = s.placement(fetches, feed)
    # ("shared" is replicated per device by TensorFlow 2's constant replication pass.)
    for name in ("k", "u", "a", "b", "sh"):
        assert p.device_of[name].name == expected[name], (name, p.reasons[name])
    assert p.reasons["k"] == "generator: placed with its consumer u"
    assert p.reasons["sh"] == "metadata: placed with its input b"
    assert p.device_of["shared"].name == CPU + "0"


# --- the whole graph, once per version ---------------------------------------------------
def _session(n=4, **kw):
    return fl.Session(config=ConfigProto(device_count={"CPU": n}, **kw))


def test_two_fetch_sets_place_each_variable_identically():
    v = fl.Variable(1.0, name="v")  # no request: its users' requests decide
    w = fl.Variable(2.0, name="w")
    inc = fl.assign_add(v, 1.0, name="inc")
    inc.op._set_device("/cpu:2")  # after building: a device scope no longer reaches a ref op
    total = fl.add(v, w, name="total")
    init = fl.global_variables_initializer()
    with _session() as s:
        init_p = s.placement(v.initializer)  # a step that never runs `inc`
        s.run(init)
        assert s.run(inc) == 2.0
        assert s.run(total) == 4.0
        inc_p, total_p = s.placement(inc), s.placement(total)
        assert init_p.device_of["v"].name == inc_p.device_of["v"].name == CPU + "2"
        assert init_p.device_of["v/Assign"].name == CPU + "2"
        assert total_p.device_of["v"].name == CPU + "2"
        assert total_p.device_of["w"].name == s.placement(w.initializer).device_of["w"].name == CPU + "0"
        assert init_p.reasons["v/Assign"] == "colocated with inc; requested /device:CPU:2"
        # One whole-graph placement served every step of this graph version.
        assert s._whole is not None and s._whole.builds == 1


def test_graph_extended_between_runs_keeps_earlier_assignments():
    v = fl.Variable(1.0, name="v")
    with _session() as s:
        s.run(v.initializer)
        assert s.placement(v.initializer).device_of["v"].name == CPU + "0"
        # A new user pinned elsewhere: TensorFlow keeps the variable where it lives
        # (its stateful placement is restored) and the reference user follows it.
        with fl.device("/cpu:3"):
            inc = fl.assign_add(v, 5.0, name="inc")
        assert s.run(inc) == 6.0
        p = s.placement(inc)
        assert p.device_of["v"].name == p.device_of["inc"].name == CPU + "0"
        assert s._whole.builds == 2
        # And a later unrelated op leaves them alone too.
        with fl.device("/cpu:1"):
            k = fl.constant(3.0, name="k") * 2.0
        assert s.run(k) == 6.0 and s.run(inc) == 11.0
        assert s.placement(inc).device_of["v"].name == CPU + "0"


def test_same_variable_device_under_greedy_in_every_step():
    outs = _towers(2, 2, 256)
    v = fl.Variable(np.ones((256, 256), np.float32), name="v")
    uses = [fl.matmul(o, v, name=f"use{i}") for i, o in enumerate(outs)]
    with fl.colocate_with(v):
        probe = fl.reduce_sum(v, name="probe")
    with _session(placement_strategy="greedy") as s:
        s.run(v.initializer)
        places = [s.placement(f) for f in (v.initializer, uses[0], uses[1], probe)]
        assert len({p.device_of["v"].name for p in places}) == 1
        assert places[3].device_of["probe"] is places[3].device_of["v"]
        assert all(p.strategy == "greedy" for p in places)


def test_unplaceable_op_fails_every_step_as_in_tensorflow():
    with fl.device("/cpu:9"):
        bad = fl.constant(1.0, name="bad")
    ok = fl.constant(2.0, name="ok")
    with _session(n=2) as s:
        for fetch in (ok, bad):  # TensorFlow places every op of the graph for each step
            with pytest.raises(fl.errors.InvalidArgumentError, match="bad: {{node bad}} was explicitly assigned"):
                s.run(fetch)


def test_graph_placement_reasons_and_candidates_for_inspection():
    from flowlab.runtime.master.placement import GraphPlacement

    with fl.device("/cpu:1"):
        a = fl.constant(1.0, name="a")
    b = fl.square(a, name="b")
    g = a.graph
    gp = GraphPlacement(local_devices({"CPU": 2})).update(g)
    assert gp.device_of["a"].name == CPU + "1" and gp.reasons["a"] == "requested /device:CPU:1"
    assert gp.device_of["b"].name == CPU + "0"
    assert gp.update(g) is gp and gp.builds == 1  # same version: nothing to do
    fl.identity(b, name="c")
    assert gp.update(g).builds == 2 and gp.device_of["c"].name == CPU + "0"


def test_malformed_device_of_an_op_is_tensorflows_placement_error():
    # The graph refuses such strings when built; an op whose device was set behind its
    # back (as TensorFlow allows) fails where TensorFlow fails: placing it.
    x = fl.placeholder(fl.float32, name="x")
    a = fl.multiply(x, 2.0, name="a")
    a.op._device = "/foo:bar"
    with pytest.raises(fl.errors.InvalidArgumentError, match=r"Malformed device specification '/foo:bar' in node 'a'"):
        _place([a])
    with pytest.raises(fl.errors.InvalidArgumentError, match="Malformed device specification"):
        _place([a], allow_soft_placement=True)
