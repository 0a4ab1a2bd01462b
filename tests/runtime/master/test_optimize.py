"""The graph optimization pass: constant folding, CSE, identity removal, conversion of
ops whose outputs feed only control edges to NoOps.

Every rewrite is checked twice: what the pass did (`plan.optimization`), and that a
step gives the values and dtypes of the unoptimized step (and of TensorFlow).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowlab as fl
from flowlab.graph import graph_def as gd
from flowlab.ops.builder import apply_op
from flowlab.runtime.config import ConfigProto, GraphOptions, OptimizerOptions, RewriterConfig
from flowlab.runtime.master.optimize import OptimizerSwitches, optimization, optimize
from flowlab.runtime.master.prune import prune
from tests.difftest import assert_same

OFF = ConfigProto(graph_options=GraphOptions(optimizer_options=OptimizerOptions(opt_level=OptimizerOptions.L0)))


def _opt(sess, fetches, feed_dict=None):
    return optimization(sess, fetches, feed_dict)


def _run_both(fetches, feed_dict=None, graph=None):
    g = graph or fl.get_default_graph()
    with fl.Session(graph=g) as on, fl.Session(graph=g, config=OFF) as off:
        return on.run(fetches, feed_dict), off.run(fetches, feed_dict), _opt(on, fetches, feed_dict)


def _same(a, b):
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert type(a) is type(b), (type(a), type(b))
    assert np.asarray(a).dtype == np.asarray(b).dtype
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# --- constant folding --------------------------------------------------------------
def test_constant_subgraph_folds_and_its_inputs_are_dropped():
    a = fl.constant([1.0, 2.0], name="a")
    b = fl.constant([3.0, 4.0], name="b")
    c = fl.add(a, b, name="c")
    d = fl.multiply(c, 2.0, name="d")
    x = fl.placeholder(fl.float32, [2], name="x")
    y = fl.add(d, x, name="y")
    on, off, opt = _run_both(y, {x: [1.0, 1.0]})
    _same(on, off)
    np.testing.assert_array_equal(on, [9.0, 13.0])
    assert opt.folded == ["d"]
    assert {"a", "b", "c", "d/y"} <= set(opt.dropped)
    assert [op.name for op in opt.ops] == ["d", "y"]  # x is fed: pruned


def test_folded_value_fetched_is_a_fresh_writable_copy():
    c = fl.add(fl.constant([1, 2]), fl.constant([3, 4]), name="c") * 1
    with fl.Session() as s:
        v = s.run(c)
        assert v.dtype == np.int32 and v.flags.writeable
        v[0] = 100
        np.testing.assert_array_equal(s.run(c), [4, 6])
        assert _opt(s, c).folded == [c.op.name]


def test_scalar_folds_to_numpy_scalar_of_the_declared_dtype():
    c = fl.cast(fl.constant(3) * 2, fl.float64, name="c")
    with fl.Session() as s:
        v = s.run(c)
        assert _opt(s, c).folded == ["c"]
    assert type(v) is np.float64 and v == 6.0


def test_shape_of_fully_defined_placeholder_folds():
    # The builders already return Consts for known shapes: build the ops themselves,
    # as an imported GraphDef has them.
    x = fl.placeholder(fl.float32, [2, 3], name="x")
    s_ = apply_op("Shape", input=x, out_type=fl.int32, name="s")
    n = apply_op("Size", input=x, out_type=fl.int64, name="n")
    r = fl.reduce_sum(x, name="r")
    on, off, opt = _run_both([s_, n, r], {x: np.ones((2, 3), np.float32)})
    _same(on, off)
    assert set(opt.folded) == {"s", "n"}


def test_no_folding_of_random_fed_or_control_dependent_ops():
    r = fl.random_uniform([2], seed=1, name="r")
    rr = fl.add(r, 1.0, name="rr")
    c = fl.constant(1.0, name="c")
    fed = fl.add(c, 1.0, name="fed")
    e = fl.multiply(fed, 3.0, name="e")
    v = fl.Variable(0.0, name="v")
    inc = fl.assign_add(v, 1.0)
    with fl.control_dependencies([inc]):
        k = fl.constant(5.0, name="k")
    kk = fl.add(k, 1.0, name="kk")
    with fl.Session() as s:
        s.run(v.initializer)
        assert s.run(e, {fed: 10.0}) == 30.0
        opt = _opt(s, e, {fed: 10.0})
        assert "e" not in opt.folded and "fed" not in opt.folded
        assert s.run(kk) == 6.0 and s.run(v) == 1.0  # the control dependency still runs
        assert "kk" not in _opt(s, kk).folded
        assert "rr" not in _opt(s, rr).folded


def test_folding_respects_the_size_cap():
    big = fl.fill([600, 600], 1.0, name="big")  # 1.44 MB
    small = fl.fill([2, 2], 1.0, name="small")
    cfg = ConfigProto(graph_options=GraphOptions(optimizer_options=OptimizerOptions(max_folded_constant_in_bytes=1 << 20)))
    with fl.Session(config=cfg) as s:
        assert s.run(big).shape == (600, 600)
        assert _opt(s, [big, small]).folded == ["small"]


def test_a_kernel_error_is_left_to_the_step():
    bad = fl.reshape(fl.constant([1.0, 2.0, 3.0]), fl.constant([2], name="shape") * 1, name="bad")
    with fl.Session() as s, pytest.raises(fl.errors.InvalidArgumentError, match="bad"):
        s.run(bad)


def test_a_reshape_to_its_own_constant_shape_is_a_name_for_its_input():
    """The straight-line function runs no kernel for a Reshape to the constant shape
    its input is known to have (a bias gradient's Sum -> Reshape): the value passes
    on, as Grappler removes such a Reshape.  A Reshape to another shape still runs."""
    x = fl.placeholder(fl.float32, [None, 3])
    b = fl.Variable(np.array([1.0, -2.0, 0.5], np.float32))
    loss = fl.reduce_sum(fl.square(x + b))
    (gb,) = fl.gradients(loss, [b])
    other = fl.reshape(gb, [3, 1], name="other")
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    with fl.Session() as s:
        s.run(b.initializer)
        got_gb, got_other = s.run([gb, other], {x: xv})
        plan = s._plan_of([gb, other], {x: xv})
    want = (2 * (xv + [1.0, -2.0, 0.5])).sum(axis=0)
    np.testing.assert_allclose(got_gb, want)
    np.testing.assert_allclose(got_other, want.reshape(3, 1))
    index = {n.op.name: n.index for n in plan.nodes if n.op.type == "Reshape"}
    bias = [name for name in index if name.startswith("gradients/add_grad/Reshape")
            and plan.nodes[index[name]].op.inputs[0].shape.as_list() == [3]]
    assert len(bias) == 1
    assert f"k{index[bias[0]]}(" not in plan.source  # a name, not a call
    assert f"k{index['other']}(" in plan.source


def test_folding_splits_with_several_outputs():
    parts = fl.split(fl.constant(np.arange(6.0, dtype=np.float32)), 3, name="sp")
    y = parts[0] + parts[2]
    on, off, opt = _run_both([y, parts[1]])
    _same(on, off)
    assert "sp" in opt.folded or "add" in opt.folded


# --- common subexpressions -----------------------------------------------------------
def test_identical_ops_are_merged():
    x = fl.placeholder(fl.float32, [3], name="x")
    a = fl.exp(x, name="a")
    b = fl.exp(x, name="b")
    c = fl.exp(x, name="c2")
    s1 = fl.add(a, b, name="s1")
    s2 = fl.add(a, c, name="s2")
    out = fl.subtract(s1, s2, name="out")
    feed = {x: np.array([0.0, 1.0, -1.0], np.float32)}
    on, off, opt = _run_both(out, feed)
    _same(on, off)
    assert opt.merged == {"b": "a", "c2": "a", "s2": "s1"}
    assert {"b", "c2", "s2"} <= set(opt.dropped)


def test_cse_keeps_different_attrs_devices_and_control_inputs_apart():
    x = fl.placeholder(fl.float32, [2, 2], name="x")
    m1 = fl.matmul(x, x, name="m1")
    m2 = fl.matmul(x, x, transpose_a=True, name="m2")
    with fl.device("/cpu:0"):
        m3 = fl.matmul(x, x, name="m3")
    with fl.control_dependencies([m1]):
        m4 = fl.matmul(x, x, name="m4")
    m5 = fl.matmul(x, x, name="m5")
    out = fl.add_n([m1, m2, m3, m4, m5])
    with fl.Session() as s:
        v = s.run(out, {x: [[1, 2], [3, 4]]})
        assert _opt(s, out, {x: 0}).merged == {"m5": "m1"}
    xv = np.array([[1, 2], [3, 4]], np.float32)
    np.testing.assert_allclose(v, 4 * xv @ xv + xv.T @ xv)


def test_fetched_and_fed_ops_are_never_merged_away():
    x = fl.placeholder(fl.float32, [], name="x")
    a = fl.square(x, name="a")
    b = fl.square(x, name="b")
    with fl.Session() as s:
        assert s.run([a, b], {x: 3.0}) == [9.0, 9.0]
        assert _opt(s, [a, b], {x: 3.0}).merged == {}
        # b fed: a must not read the feed.
        assert s.run(a + b, {x: 3.0, b: 1.0}) == 10.0


def test_random_ops_are_not_merged():
    a = fl.random_normal([3], name="ra")
    b = fl.random_normal([3], name="rb")
    d = a - b
    with fl.Session() as s:
        assert np.all(s.run(d) != 0)
        merged = _opt(s, d).merged
        assert "rb" not in merged and merged  # their equal shape/mean/stddev Consts merge


def test_equal_constants_merge_but_nan_and_negative_zero_stay_exact():
    x = fl.placeholder(fl.float32, [], name="x")
    outs = [x * fl.constant(v) for v in (1.0, 1.0, -0.0, 0.0, np.nan, np.nan)]
    with fl.Session() as s:
        vals = s.run(outs, {x: 2.0})
        with fl.Session(config=OFF) as s2:
            _same(vals, s2.run(outs, {x: 2.0}))
        assert np.signbit(vals[2]) and not np.signbit(vals[3])


# --- identities ------------------------------------------------------------------------
def test_identity_without_a_control_role_is_bypassed():
    x = fl.placeholder(fl.float32, [2], name="x")
    i1 = fl.identity(x, name="i1")
    i2 = fl.identity(i1, name="i2")
    y = fl.multiply(i2, 2.0, name="y")
    on, off, opt = _run_both(y, {x: [1.0, 2.0]})
    _same(on, off)
    assert opt.removed_identities == ["i1", "i2"]
    assert [op.name for op in opt.ops] == ["x", "y/y", "y"] or "i1" not in [op.name for op in opt.ops]


def test_identities_with_roles_stay():
    x = fl.placeholder(fl.float32, [], name="x")
    fetched = fl.identity(x, name="fetched")
    with fl.device("/cpu:1"):
        moved = fl.identity(x, name="moved")
    ctl = fl.identity(x, name="ctl")
    with fl.control_dependencies([ctl]):
        after = fl.identity(x * 2, name="after")
    v = fl.Variable(1.0, name="v")
    read = fl.identity(v, name="read")
    out = fl.add_n([moved, after, read], name="out")
    cfg = ConfigProto(device_count={"CPU": 2})
    with fl.Session(config=cfg) as s:
        s.run(v.initializer)
        r = s.run([fetched, out], {x: 1.0})
        assert r == [1.0, 4.0]
        opt = _opt(s, [fetched, out], {x: 1.0})
    if opt.rewrote:
        assert not {"fetched", "moved", "ctl", "read"} & set(opt.removed_identities)


def test_identity_of_variable_read_under_control_dependency_keeps_its_timing():
    v = fl.Variable(1.0, name="v")
    r = v.read_value() if hasattr(v, "read_value") else fl.identity(v)
    inc = fl.assign_add(v, 10.0)
    with fl.control_dependencies([inc]):
        after = fl.identity(fl.identity(v), name="after")
    with fl.Session() as s, fl.Session(config=OFF) as s_off:
        for sess in (s, s_off):
            sess.run(v.initializer)
        assert s.run([after, r]) == s_off.run([after, r])


# --- conversion to NoOp (Grappler's dependency optimizer) -------------------------------
def _gate_op_program(tf):
    """A layer trained with minimize()'s GATE_OP: the input gradient of the first
    MatMul is grouped with the weight gradient, and read by nobody."""
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 10, name="w")
    loss = tf.reduce_sum(tf.square(tf.matmul(x, w, name="mm")))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    feed = {x: np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)}
    return w, loss, train, feed


def test_unused_gradient_of_a_gated_matmul_becomes_a_noop():
    # The weight gradient's tuple Identity is fetched, so the group it waits for stays,
    # and with it the unused input gradient: as a NoOp.
    w, loss, train, feed = _gate_op_program(fl)
    dw = fl.get_default_graph().get_tensor_by_name("gradients/mm_grad/tuple/control_dependency_1:0")
    calls = []
    with fl.Session() as on, fl.Session(config=OFF) as off:
        for s in (on, off):
            s.run(w.initializer)
        for _ in range(3):
            _same(on.run([train, loss, dw], feed), off.run([train, loss, dw], feed))
        _same(on.run(w), off.run(w))
        opt = _opt(on, [train, loss, dw], feed)
        plan = on._plan_of([train, loss, dw], feed)
        for node in plan.nodes:
            calls.append((node.op.name, node.op.type))
    assert opt.noops == ["gradients/mm_grad/MatMul"]
    assert "converted 1 to NoOp" in opt.summary()
    # The task is sent the converted op as a NoOp node (as TensorFlow's partition
    # graphs hold it): its MatMul kernel never runs.
    assert dict(calls)["gradients/mm_grad/MatMul"] == "NoOp"
    assert not dict(calls)["gradients/mm_grad/MatMul_1"].startswith("converted")
    nodes = {n["name"]: n for n in opt.graph_def()["node"]}
    node = nodes["gradients/mm_grad/MatMul"]
    assert node["op"] == "NoOp" and all(i.startswith("^") for i in node["input"])
    gd.validate_graph_def(opt.graph_def())


def test_a_gated_gradients_tuple_identity_is_bypassed_once_its_group_orders_nothing():
    # Not fetched, the weight gradient's tuple Identity waits (^group_deps) only for
    # the input gradient, a NoOp whose dependencies reach the weight gradient anyway:
    # the Identity is bypassed, and the group and the NoOp go with it, as Grappler's
    # dependency optimizer leaves it (test_tensorflow_skips_the_same_matmul).
    w, loss, train, feed = _gate_op_program(fl)
    calls = []
    with fl.Session() as on, fl.Session(config=OFF) as off:
        for s in (on, off):
            s.run(w.initializer)
        for _ in range(3):
            _same(on.run([train, loss], feed), off.run([train, loss], feed))
        _same(on.run(w), off.run(w))
        opt = _opt(on, [train, loss], feed)
        calls = [node.op.name for node in on._plan_of([train, loss], feed).nodes]
    assert opt.removed_identities == ["gradients/mm_grad/tuple/control_dependency_1"]
    assert opt.noops == []
    gone = {"gradients/mm_grad/tuple/control_dependency_1", "gradients/mm_grad/tuple/group_deps",
            "gradients/mm_grad/MatMul"}
    assert gone <= set(opt.dropped) and not gone & set(calls)
    assert "gradients/mm_grad/MatMul_1" in calls
    apply = fl.get_default_graph().get_operation_by_name("GradientDescent/update_w/ApplyGradientDescent")
    assert [t.op.name for t in opt.inputs_of(apply)][2] == "gradients/mm_grad/MatMul_1"


def test_an_identity_whose_control_input_its_value_does_not_imply_stays():
    # The control input is an assign its value does not depend on: bypassing the
    # Identity would let its reader run before the assign.
    x = fl.placeholder(fl.float32, [2], name="x")
    v = fl.Variable([1.0, 2.0], name="v")
    bump = fl.assign_add(v, [1.0, 1.0], name="bump")
    e = fl.exp(x, name="e")
    with fl.control_dependencies([bump]):
        y = fl.identity(e, name="y")
    assert y.op.control_inputs == [bump.op]
    z = fl.negative(y, name="z")
    feed = {x: np.array([0.0, 1.0], np.float32)}
    with fl.Session() as s:
        s.run(v.initializer)
        opt = _opt(s, [z], feed)
        out = s.run(z, feed)
        np.testing.assert_array_equal(s.run(v), [2.0, 3.0])
    np.testing.assert_allclose(out, -np.exp([0.0, 1.0]).astype(np.float32))
    assert "y" not in opt.removed_identities


def test_tensorflow_skips_the_same_matmul(tf1):
    g = tf1.Graph()
    with g.as_default():
        w, loss, train, feed = _gate_op_program(tf1)
        with tf1.Session() as s:
            s.run(w.initializer)
            md = tf1.RunMetadata()
            s.run([train, loss], feed, options=tf1.RunOptions(output_partition_graphs=True), run_metadata=md)
    ran = {n.name for pg in md.partition_graphs for n in pg.node if n.op == "MatMul"}
    assert "gradients/mm_grad/MatMul_1" in ran and "gradients/mm_grad/MatMul" not in ran


def test_a_chain_read_only_by_converted_ops_converts_and_protected_ops_stay():
    x = fl.placeholder(fl.float32, [2], name="x")
    a = fl.exp(x, name="a")  # read only by b
    b = fl.negative(a, name="b")  # a control input only
    f = fl.square(x, name="f")  # fetched, and a control input
    t = fl.abs(x, name="t")  # a target
    r = fl.random_uniform([2], name="r")  # stateful
    v = fl.Variable([1.0, 2.0], name="v")
    vr = fl.identity(v, name="vr")  # reads a variable
    chk = fl.check_numerics(x, "bad", name="chk")
    with fl.control_dependencies([b, f, t.op, r, vr, chk]):
        y = fl.identity(x, name="y")
    feed = {x: np.array([1.0, 2.0], np.float32)}
    with fl.Session() as s:
        s.run(v.initializer)
        out = s.run([y, f, t.op], feed)
        opt = _opt(s, [y, f, t.op], feed)
    np.testing.assert_array_equal(out[0], [1.0, 2.0])
    assert opt.noops == ["a", "b"]
    with fl.Session(config=ConfigProto(graph_options=GraphOptions(
            rewrite_options=RewriterConfig(dependency_optimization=RewriterConfig.OFF)))) as s:
        s.run(v.initializer)
        assert _opt(s, [y, f, t.op], feed).noops == []


def test_conversion_drops_the_converted_ops_error_as_tensorflow(tf1):
    def build(tf, off):
        a = tf.placeholder(tf.float32, [None, None])
        b = tf.placeholder(tf.float32, [None, None])
        bad = tf.matmul(a, b)  # 2x3 @ 2x3 fails at run time
        with tf.control_dependencies([bad]):
            out = tf.identity(a) * 2.0
        cfg = tf.ConfigProto()
        if off:
            cfg.graph_options.rewrite_options.dependency_optimization = 2  # RewriterConfig.OFF
        return out, {a: np.ones((2, 3), np.float32), b: np.ones((2, 3), np.float32)}, cfg

    for tf in (fl, tf1):
        g = tf.Graph()
        with g.as_default():
            out, feed, cfg = build(tf, off=False)
            with tf.Session(config=cfg) as s:
                assert s.run(out, feed).sum() == 12.0
            out, feed, cfg = build(tf, off=True)
            with tf.Session(config=cfg) as s, pytest.raises(tf.errors.InvalidArgumentError):
                s.run(out, feed)


def test_converted_op_keeps_the_order_it_imposed_on_every_path():
    v = fl.Variable(1.0, name="v")
    inc = fl.assign_add(v, 1.0, name="inc")
    y = fl.multiply(inc, 2.0, name="y")  # its value is unused: it converts
    with fl.control_dependencies([y]):
        r = fl.identity(v.read_value(), name="r") + 0.0
    with fl.Session() as s:
        s.run(v.initializer)
        assert s.run(r) == 2.0
        assert _opt(s, r).noops == ["y"]
        events = []
        s.set_listener(events.append)  # the dataflow executor
        assert s.run(r) == 3.0
        ex, mapper = s.start_execution(r)  # one op at a time
        ex.start()
        while not ex.finished:
            ex.run_one()
        assert mapper.build(ex.finish()) == 4.0
    assert any(e.kind == "op_end" and e.op.name == "y" for e in events)


def test_converted_op_with_several_outputs_and_an_uninitialized_read():
    x = fl.placeholder(fl.float32, [2, 2], name="x")
    parts = fl.unstack(x, name="u")  # Unpack: a list of outputs
    v = fl.Variable([1.0, 2.0], name="v")
    with fl.control_dependencies(parts + [fl.add(v, 1.0, name="va")]):
        y = fl.identity(x, name="y")
    feed = {x: np.eye(2, dtype=np.float32)}
    with fl.Session() as s:
        with pytest.raises(fl.errors.FailedPreconditionError):
            s.run(y, feed)  # the converted va still reads v, as TensorFlow's v/read runs
        s.run(v.initializer)
        np.testing.assert_array_equal(s.run(y, feed), np.eye(2))
        assert sorted(_opt(s, y, feed).noops) == ["u", "va"]
        s.set_listener(lambda e: None)
        np.testing.assert_array_equal(s.run(y, feed), np.eye(2))


def test_converted_op_inside_cond_and_across_devices():
    x = fl.placeholder(fl.float32, [2], name="x")
    p = fl.placeholder(fl.bool, [], name="p")

    def branch():
        side = fl.exp(fl.identity(x), name="side")  # not of a Switch itself: it converts
        with fl.control_dependencies([side]):
            return fl.identity(x) + 1.0

    y = fl.cond(p, branch, lambda: x - 1.0)
    feed = {x: np.array([0.0, 1.0], np.float32)}
    with fl.Session() as s:
        for flag, want in ((True, [1.0, 2.0]), (False, [-1.0, 0.0])):
            np.testing.assert_array_equal(s.run(y, {**feed, p: flag}), want)
        assert any(n.endswith("side") for n in _opt(s, y, {**feed, p: True}).noops)
    with fl.device("/cpu:1"):
        e = fl.exp(x, name="e")
    with fl.control_dependencies([e]):
        z = fl.identity(x, name="z") * 3.0
    with fl.Session(config=ConfigProto(device_count={"CPU": 2})) as s:
        np.testing.assert_array_equal(s.run(z, feed), [0.0, 3.0])


# --- switches and the view -------------------------------------------------------------
def test_switches_follow_tensorflow_names():
    assert OptimizerSwitches.from_graph_options(GraphOptions()) == OptimizerSwitches()
    l0 = GraphOptions(optimizer_options=OptimizerOptions(opt_level=OptimizerOptions.L0))
    assert not OptimizerSwitches.from_graph_options(l0).any
    l0.optimizer_options.do_constant_folding = True
    sw = OptimizerSwitches.from_graph_options(l0)
    assert sw.constant_folding and not sw.cse and not sw.remove_identities
    ro = GraphOptions(rewrite_options=RewriterConfig(common_subgraph_elimination=RewriterConfig.OFF))
    sw = OptimizerSwitches.from_graph_options(ro)
    assert sw.constant_folding and not sw.cse
    off = GraphOptions(rewrite_options=RewriterConfig(disable_meta_optimizer=True))
    assert not OptimizerSwitches.from_graph_options(off).any


def test_opt_level_l0_turns_the_pass_off():
    c = fl.add(fl.constant(1.0), fl.constant(2.0), name="c") * 2.0
    with fl.Session(config=OFF) as s:
        assert s.run(c) == 6.0
        opt = _opt(s, c)
        assert not opt.rewrote and len(opt.ops) == 5
    with fl.Session() as s:
        assert s.run(c) == 6.0 and [op.name for op in _opt(s, c).ops] == [c.op.name]


def test_expensive_kernels_and_variable_shapes_are_not_folded():
    m = fl.matmul(fl.ones([2, 2]), fl.ones([2, 2]), name="m") + 1.0
    v = fl.Variable([1.0, 2.0], name="v")
    r = apply_op("Rank", input=v, name="r") + 1
    with fl.Session() as s:
        np.testing.assert_array_equal(s.run(m), 3 * np.ones((2, 2)))
        assert "m" not in _opt(s, m).folded
        with pytest.raises(fl.errors.FailedPreconditionError):
            s.run(r)


def test_the_users_graph_is_never_changed():
    x = fl.placeholder(fl.float32, [2], name="x")
    y = fl.identity(fl.exp(x) + fl.exp(x) + fl.constant([1.0, 2.0]) * 2.0)
    g = fl.get_default_graph()
    before = gd.to_json(g.as_graph_def())
    version = g.version
    with fl.Session() as s:
        s.run(y, {x: [0.0, 1.0]})
        opt = _opt(s, y, {x: 0})
        assert opt.rewrote
    assert g.version == version
    assert gd.to_json(g.as_graph_def()) == before


def test_optimized_graph_def_is_valid_and_shows_the_rewrites():
    x = fl.placeholder(fl.float32, [2], name="x")
    k = fl.multiply(fl.constant([1.0, 2.0]), 3.0, name="k")
    e1 = fl.exp(x, name="e1")
    e2 = fl.exp(x, name="e2")
    y = fl.add_n([fl.identity(e1, name="i"), e2, k], name="y")
    with fl.Session() as s:
        opt = _opt(s, y, {x: 0})
    gdef = opt.graph_def()
    gd.validate_graph_def(gdef)
    nodes = {n["name"]: n for n in gdef["node"]}
    assert nodes["k"]["op"] == "Const"
    assert nodes["y"]["input"] == ["e1", "e1", "k"]
    assert "e2" not in nodes and "i" not in nodes
    assert "merged 1" in opt.summary()


def test_optimize_is_a_function_of_the_pruned_ops():
    a = fl.constant(2.0)
    b = fl.square(a, name="b")
    ops = prune([b], [], [])
    assert not optimize(ops, [], [b], []).rewrote  # fewer than 4 ops: left alone (Grappler)
    opt = optimize(ops, [], [b], [], OptimizerSwitches(min_graph_nodes=0))
    assert opt.folded == ["b"] and opt.constants["b"] == [4.0]
    assert [o.name for o in ops] == ["Const", "b"]  # the input list is not modified


def test_optimizer_on_and_off_agree_with_tensorflow(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, [2, 2])
        w = tf.constant([[1.0, 2.0], [3.0, 4.0]]) * 0.5
        h = tf.matmul(x, tf.transpose(w)) + tf.matmul(x, tf.transpose(w))
        return [tf.identity(h), tf.shape(h), tf.reduce_sum(w)], {x: np.eye(2, dtype=np.float32)}

    assert_same(tf1, build)


# --- property: random expression graphs ------------------------------------------------
_UNARY = ["neg", "square", "abs", "identity", "exp_small"]
_BINARY = ["add", "sub", "mul", "maximum"]


@st.composite
def _programs(draw):
    n = draw(st.integers(2, 14))
    steps = []
    for i in range(n):
        kind = draw(st.sampled_from(["const", "unary", "binary", "binary", "cast", "after"]))
        a = draw(st.integers(0, max(0, i - 1) + 1))
        b = draw(st.integers(0, max(0, i - 1) + 1))
        steps.append((kind, draw(st.sampled_from(_UNARY)), draw(st.sampled_from(_BINARY)), a, b,
                      draw(st.floats(-3, 3, allow_nan=False, width=32))))
    fetch = draw(st.lists(st.integers(0, n + 1), min_size=1, max_size=3))
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32]))
    return steps, fetch, dtype


def _build(tf, program):
    steps, fetch, dtype = program
    tdt = {np.float32: tf.float32, np.float64: tf.float64, np.int32: tf.int32}[dtype]
    x = tf.placeholder(tdt, [3], name="x")
    pool = [x, tf.constant(np.array([1, 2, 3], dtype))]
    for kind, un, bi, a, b, c in steps:
        p, q = pool[a % len(pool)], pool[b % len(pool)]
        if kind == "const":
            v = tf.constant(np.array([c, c + 1, -c], dtype))
        elif kind == "cast":
            v = tf.cast(tf.cast(p, tf.float64), tdt)
        elif kind == "after":  # p may end up a control input only: converted to NoOp
            # (not on x itself, nor on a cast of x to its own dtype, which is x:
            # flowlab runs a fed placeholder that is a control input)
            dep = pool[1 + a % (len(pool) - 1)]
            with tf.control_dependencies([pool[1] if dep.op.type == "Placeholder" else dep]):
                v = tf.identity(q)
        elif kind == "unary":
            if un == "exp_small":
                v = tf.minimum(p, tf.constant(np.array(5, dtype))) if dtype == np.int32 else tf.exp(tf.minimum(p, 5.0 if dtype != np.int32 else 5))
            elif un == "identity":
                v = tf.identity(p)
            else:
                v = getattr(tf, un)(p)
        else:
            v = {"add": tf.add, "sub": tf.subtract, "mul": tf.multiply, "maximum": tf.maximum}[bi](p, q)
            if dtype == np.int32:
                v = tf.minimum(tf.maximum(v, -1000), 1000)
        pool.append(v)
    fetches = [pool[i % len(pool)] for i in fetch]
    return fetches, {x: np.array([0.5, -1, 2], dtype)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs())
def test_property_optimizer_never_changes_results(program):
    g = fl.Graph()
    with g.as_default():
        fetches, feed = _build(fl, program)
        with fl.Session(graph=g) as on, fl.Session(graph=g, config=OFF) as off:
            _same(on.run(fetches, feed), off.run(fetches, feed))
            # A second signature: the placeholder fed as well as some intermediate.
            inner = fetches[0]
            if inner.op.type != "Placeholder":
                feed2 = dict(feed)
                feed2[inner] = on.run(inner, feed)
                _same(on.run(fetches, feed2), off.run(fetches, feed2))


def test_multi_device_step_with_rewrites_runs_and_steps_op_by_op():
    x = fl.placeholder(fl.float32, [2], name="x")
    with fl.device("/cpu:1"):
        k = fl.multiply(fl.constant([1.0, 2.0], name="k0"), 3.0, name="k")
        e1 = fl.exp(x, name="e1")
        e2 = fl.exp(x, name="e2")
    y = fl.add_n([fl.identity(e1, name="i"), e2, k], name="y")
    feed = {x: np.array([0.0, 1.0], np.float32)}
    with fl.Session(config=ConfigProto(device_count={"CPU": 2})) as s:
        expected = 2 * np.exp(feed[x]) + [3.0, 6.0]
        np.testing.assert_allclose(s.run(y, feed), expected, rtol=1e-6)
        opt = _opt(s, y, feed)
        assert "k" in opt.folded and opt.merged == {"e2": "e1"}
        p = s.placement(y, feed)
        assert p.reasons["e2"] == "not run (merged into e1 by the optimization pass)"
        assert p.device_of["k0"].name.endswith("CPU:1")
        ex, mapper = s.start_execution(y, feed)
        ex.start()
        while not ex.finished:
            ex.run_one()
        np.testing.assert_allclose(mapper.build(ex.finish()), expected, rtol=1e-6)
