"""The graph's hook on op creation (Graph._set_control_flow_context -> ctx.add_op)
and the Operation methods a context rewires ops with."""

from __future__ import annotations

import threading

import flowlab as tf
from flowlab.ops import control_flow_context as cfc


class _Recorder:
    def __init__(self) -> None:
        self.ops: list[tf.Operation] = []

    def add_op(self, op: tf.Operation) -> None:
        self.ops.append(op)


def test_every_op_made_with_a_context_is_handed_to_it() -> None:
    g = tf.Graph()
    rec = _Recorder()
    with g.as_default():
        a = tf.constant(1.0, name="a")
        assert g._get_control_flow_context() is None
        g._set_control_flow_context(rec)
        b = tf.add(a, 2.0, name="b")
        g._set_control_flow_context(None)
        tf.identity(b, name="c")
    # the op is complete (in the graph, with its inputs) when the context sees it
    assert [op.name for op in rec.ops] == ["b/y", "b"]
    assert rec.ops[1].inputs[0] is a


def test_the_current_context_is_per_thread() -> None:
    g = tf.Graph()
    rec = _Recorder()
    g._set_control_flow_context(rec)
    seen = []
    t = threading.Thread(target=lambda: seen.append(g._get_control_flow_context()))
    t.start()
    t.join()
    assert seen == [None]
    assert g._get_control_flow_context() is rec


def test_remove_all_control_inputs_keeps_both_sides_consistent() -> None:
    g = tf.Graph()
    with g.as_default():
        a = tf.no_op(name="a")
        b = tf.no_op(name="b")
        with tf.control_dependencies([a, b]):
            c = tf.no_op(name="c")
        v = g.version
        c._remove_all_control_inputs()
        assert c.control_inputs == [] and a._control_outputs == [] and b._control_outputs == []
        c._add_control_inputs([b])
        assert c.control_inputs == [b] and b._control_outputs == [c]
        assert g.version > v


def test_a_branch_op_knows_its_context_when_made() -> None:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        seen = {}

        def true_fn() -> tf.Tensor:
            y = x * 2.0
            seen["ctx"] = cfc.context_of(y.op)
            seen["current"] = g._get_control_flow_context()
            return y

        tf.cond(x > 0, true_fn, lambda: x)
        assert isinstance(seen["ctx"], cfc.CondContext) and seen["ctx"] is seen["current"]
        assert seen["ctx"].branch == 1
        assert g._get_control_flow_context() is None
        assert cfc.context_of(x.op) is None


def test_while_body_ops_belong_to_the_loop_and_an_outside_control_input_is_proxied() -> None:
    g = tf.Graph()
    with g.as_default():
        outside = tf.no_op(name="outside")
        ops = []

        def body(i: tf.Tensor) -> tf.Tensor:
            with tf.control_dependencies([outside]):
                j = i + 1
            ops.append(j.op)
            return j

        r = tf.while_loop(lambda i: i < 3, body, [0])
        (add,) = ops
        ctx = cfc.context_of(add)
        assert isinstance(ctx, cfc.WhileContext)
        assert outside not in add.control_inputs  # taken in through the loop
        assert all(cfc.is_inside(cfc.context_of(c), ctx) for c in add.control_inputs)
        assert cfc.context_of(r.op) is ctx and cfc.output_context(r.op) is None
        with tf.Session() as sess:
            assert sess.run(r) == 3


def test_ops_imported_into_a_branch_are_rewired_into_it() -> None:
    src = tf.Graph()
    with src.as_default():
        a = tf.placeholder(tf.float32, [], name="a")
        tf.multiply(a, 3.0, name="triple")
    gd = src.as_graph_def()
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")

        def true_fn() -> tf.Tensor:
            (y,) = tf.import_graph_def(gd, input_map={"a:0": x}, return_elements=["triple:0"])
            return y

        r = tf.cond(x > 0, true_fn, lambda: x)
        triple = g.get_operation_by_name("cond/import/triple")
        assert isinstance(cfc.context_of(triple), cfc.CondContext)
        assert triple.inputs[0].op.type == "Switch"  # x enters the branch through a Switch
        with tf.Session() as sess:
            assert sess.run(r, {x: 2.0}) == 6.0
            assert sess.run(r, {x: -1.0}) == -1.0
