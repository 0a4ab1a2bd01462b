"""Issue 5 programs in the style of its hidden check: ops pinned with
`tf.device("/cpu:N")` under `ConfigProto(device_count={"CPU": 4})`, colocate_with,
device functions, allow_soft_placement, loops and training across devices, and the
`log_device_placement` output.  Each runs under TensorFlow and under flowlab; values,
dtypes, devices and errors agree (the xfail tests name the exact differences left).
Session 4 added state on pinned devices (slots, global_step, Saver, queues, a graph
grown between runs) and the partition graphs' nodes and Send/Recv pairs, with the
helpers of test_hidden_issue5_more.py (which has the device-string programs)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from tests.programs.hidden_support import same_error, same_results
from tests.programs.test_hidden_issue5_more import CPU, _feeds, _run_placed, _x


def _config(tf, **kw):
    return tf.ConfigProto(device_count={"CPU": 4}, **kw)


def test_colocate_with_variable(tf1):
    def colocation(tf):
        with tf.device("/cpu:1"):
            v = tf.Variable([1.0, 2.0], name="v")
        with tf.device("/cpu:2"):
            a = v * 3.0
            with tf.colocate_with(v):
                b = tf.identity(a, name="b")
                c = tf.assign_add(v, b)
        with tf.Session(config=_config(tf)) as s:
            s.run(tf.global_variables_initializer())
            r = [s.run(c), s.run(c), s.run(v)]
        return r, b.device, a.device, c.device, v.device, b.op.get_attr("_class")

    same_results(tf1, colocation)


def test_colocation_beats_a_later_device_scope(tf1):
    def colocation_and_device(tf):
        with tf.device("/cpu:1"):
            v = tf.Variable([1.0, 2.0], name="v")
        with tf.device("/cpu:2"):
            with tf.colocate_with(v):
                b = tf.identity(v, name="b")
        with tf.device("/cpu:3"):
            c = tf.assign(v, [3.0, 4.0])
        with tf.Session(config=_config(tf)) as s:
            s.run(tf.global_variables_initializer())
            return s.run([b, c]), b.device, b.op.get_attr("_class")

    same_results(tf1, colocation_and_device)


def test_assign_device_is_the_variables(tf1):
    def assign_device(tf):
        with tf.device("/cpu:1"):
            v = tf.Variable([1.0, 2.0], name="v")
        with tf.device("/cpu:3"):
            c = tf.assign(v, [3.0, 4.0])
        return c.device, c.op.get_attr("_class")

    same_results(tf1, assign_device)


def test_soft_placement_of_a_missing_gpu_and_cpu(tf1):
    def soft(tf):
        with tf.device("/gpu:0"):
            a = tf.constant([1.0, 2.0]) * 2.0
        with tf.device("/cpu:9"):
            b = a + 1.0
        with tf.device("/cpu:3"):
            c = b * b
        with tf.Session(config=_config(tf, allow_soft_placement=True)) as s:
            return s.run([a, b, c])

    same_results(tf1, soft)


@pytest.mark.parametrize("device", ["/gpu:0", "/cpu:9"])
def test_missing_device_without_soft_placement_fails(tf1, device):
    def hard(tf):
        with tf.device(device):
            a = tf.constant([1.0, 2.0]) * 2.0
        with tf.Session(config=_config(tf)) as s:
            return s.run(a)

    _, fl_err = same_error(tf1, hard)
    assert "Cannot assign a device for operation" in str(fl_err)


def test_missing_device_error_text(tf1):
    def hard(tf):
        with tf.device("/cpu:9"):
            a = tf.constant([1.0, 2.0]) * 2.0
        with tf.Session(config=_config(tf)) as s:
            return s.run(a)

    tf_err, fl_err = same_error(tf1, hard)
    want = ("Cannot assign a device for operation mul: {{node mul}} was explicitly assigned to /device:CPU:9 "
            "but available devices are [ /job:localhost/replica:0/task:0/device:CPU:0, "
            "/job:localhost/replica:0/task:0/device:CPU:1, /job:localhost/replica:0/task:0/device:CPU:2, "
            "/job:localhost/replica:0/task:0/device:CPU:3 ]. Make sure the device specification refers to a "
            "valid device.")
    assert want in str(tf_err)
    assert want in str(fl_err)


def test_device_function(tf1):
    def device_function(tf):
        def pick(op):
            return "/device:CPU:1" if op.type == "MatMul" else "/device:CPU:2"
        with tf.device(pick):
            x = tf.constant(np.eye(3, dtype=np.float32))
            y = tf.matmul(x, x + 1.0)
        with tf.Session(config=_config(tf)) as s:
            return s.run(y), y.device, x.device

    same_results(tf1, device_function)


def test_device_function_returning_short_names(tf1):
    def device_function(tf):
        with tf.device(lambda op: "/cpu:1"):
            y = tf.constant(1.0) * 2.0
        return y.device

    same_results(tf1, device_function)


def test_colocation_groups_method(tf1):
    def groups(tf):
        v = tf.Variable(1.0, name="v")
        with tf.colocate_with(v):
            b = tf.identity(v, name="b")
        return b.op.colocation_groups()

    same_results(tf1, groups)


def test_while_loop_and_cond_across_devices_with_gradient(tf1):
    def loops_on_devices(tf):
        with tf.device("/cpu:1"):
            v = tf.Variable(2.0)

        def body(i, a):
            with tf.device("/cpu:2"):
                b = a * v
            with tf.device("/cpu:3"):
                c = tf.cond(b > 10.0, lambda: b - 5.0, lambda: b + 1.0)
            return i + 1, c
        with tf.device("/cpu:0"):
            r = tf.while_loop(lambda i, a: i < 6, body, [0, tf.constant(1.0)])
        g = tf.gradients(r[1], v)
        with tf.Session(config=_config(tf)) as s:
            s.run(tf.global_variables_initializer())
            return s.run([r, g])

    same_results(tf1, loops_on_devices)


def test_training_with_variables_on_several_devices(tf1):
    def training(tf):
        with tf.device("/cpu:1"):
            w = tf.Variable(np.ones((3, 2), np.float32))
        with tf.device("/cpu:2"):
            b = tf.Variable(np.zeros(2, np.float32))
        x = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
        with tf.device("/cpu:3"):
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - 1.0))
        opt = tf.train.AdamOptimizer(0.1)
        train = opt.minimize(loss, colocate_gradients_with_ops=True)
        with tf.Session(config=_config(tf)) as s:
            s.run(tf.global_variables_initializer())
            for _ in range(5):
                s.run(train)
            return (s.run([w, b, loss]), opt.get_slot(w, "m").device, opt.get_slot(b, "v").device,
                    sorted({op.device for op in tf.get_default_graph().get_operations()}))

    same_results(tf1, training)


def test_list_devices(tf1):
    def devices(tf):
        with tf.Session(config=_config(tf)) as s:
            return sorted(d.name for d in s.list_devices()), sorted(d.device_type for d in s.list_devices())

    same_results(tf1, devices)


# TensorFlow 2.21's stdout for `_log_program` (printf from its placer; recorded once,
# since capturing a C-level printf in-process is unreliable).
_TF_PLACEMENT_LOG = [
    "v: (VariableV2): /job:localhost/replica:0/task:0/device:CPU:1",
    "v/Assign: (Assign): /job:localhost/replica:0/task:0/device:CPU:1",
    "v/read: (Identity): /job:localhost/replica:0/task:0/device:CPU:1",
    "b: (Mul): /job:localhost/replica:0/task:0/device:CPU:0",
    "c: (AddV2): /job:localhost/replica:0/task:0/device:CPU:2",
    "x: (Placeholder): /job:localhost/replica:0/task:0/device:CPU:0",
    "v/initial_value: (Const): /job:localhost/replica:0/task:0/device:CPU:1",
    "c/y: (Const): /job:localhost/replica:0/task:0/device:CPU:2",
    "--",
]


def _log_program(tf):
    x = tf.placeholder(tf.float32, [2], name="x")
    with tf.device("/cpu:1"):
        v = tf.Variable([1.0, 2.0], name="v")
    b = tf.multiply(x, v, name="b")
    with tf.device("/cpu:2"):
        c = tf.add(b, 1.0, name="c")
    with tf.Session(config=tf.ConfigProto(device_count={"CPU": 3}, log_device_placement=True)) as s:
        s.run(v.initializer)
        print("--")
        return s.run(c, {x: [1.0, 1.0]})


def test_log_device_placement_output(capsys):
    import flowlab as fl
    with fl.Graph().as_default():
        np.testing.assert_array_equal(_log_program(fl), [2.0, 3.0])
    lines = capsys.readouterr().out.splitlines()
    assert all(": (" in line and "/job:localhost/replica:0/task:0/device:CPU:" in line
               for line in lines if line != "--")
    assert lines == _TF_PLACEMENT_LOG


# --- state on pinned devices ------------------------------------------------------------------------
def test_variables_initializers_and_slots_on_their_devices(tf1):
    def slots(tf):
        gs = tf.train.get_or_create_global_step()
        with tf.device("/cpu:1"):
            w = tf.get_variable("w", initializer=np.arange(6, dtype=np.float32).reshape(3, 2) / 10)
        with tf.device("/cpu:2"):
            b = tf.get_variable("b", [2], initializer=tf.zeros_initializer())
        with tf.device("/cpu:3"):
            v = tf.Variable(np.ones(2, np.float32), name="v")
        x = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w) + b - v))
        opt = tf.train.RMSPropOptimizer(0.05, momentum=0.5, centered=True)
        train = opt.minimize(loss, global_step=gs, var_list=[w, b])
        init = tf.global_variables_initializer()
        with tf.Session(config=_config(tf)) as s:
            _, placed = _run_placed(tf, s, init)
            for _ in range(4):
                s.run(train)
            _, step_placed = _run_placed(tf, s, train)
            vals = s.run([w, b, v, gs, loss])
        slot_names = sorted(n for n in opt.get_slot_names())
        slot_devs = [(n, opt.get_slot(var, n).device, opt.get_slot(var, n).op.get_attr("_class"))
                     for var in (w, b) for n in slot_names]
        # Where each variable, its initializer, its slots and its update ran.
        where = {k: placed[k] for k in ("w", "w/Assign", "b", "b/Assign", "v", "v/Assign", "global_step")}
        where.update({k: step_placed[k] for k in step_placed
                      if k.startswith(("RMSProp/update_w", "RMSProp/update_b", "w/RMSProp", "b/RMSProp"))})
        return vals, slot_devs, where

    same_results(tf1, slots)


def test_loss_on_cpu0_variables_on_cpu1_to_3_trained_with_momentum(tf1):
    def towers(tf):
        ws = []
        for i in (1, 2, 3):
            with tf.device(f"/cpu:{i}"):
                ws.append(tf.Variable(np.full((2, 2), float(i), np.float32), name=f"w{i}"))
        x = tf.constant(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
        h = x
        for w in ws:
            h = tf.tanh(tf.matmul(h, w))
        with tf.device("/cpu:0"):
            loss = tf.reduce_mean(tf.square(h - 0.5))
        gs = tf.train.create_global_step()
        train = tf.train.MomentumOptimizer(0.3, 0.9, use_nesterov=True).minimize(loss, global_step=gs)
        with tf.Session(config=_config(tf)) as s:
            s.run(tf.global_variables_initializer())
            losses = [s.run([train, loss])[1] for _ in range(6)]
            _, placed = _run_placed(tf, s, train)
            return losses, s.run(ws), s.run(gs), {k: v for k, v in placed.items()
                                                  if k.startswith(("w1", "w2", "w3", "Momentum/update_"))}

    same_results(tf1, towers, rtol=1e-4)


def test_saver_save_and_restore_with_variables_on_three_devices(tf1, tmp_path):
    def saver(tf):
        vs = []
        for i in (1, 2, 3):
            with tf.device(f"/cpu:{i}"):
                vs.append(tf.Variable(np.full(3, float(i), np.float32), name=f"v{i}"))
        inc = [tf.assign_add(v, tf.ones_like(v)) for v in vs]
        sv = tf.train.Saver()
        path = str(tmp_path / f"ckpt_{tf.__name__.split('.')[0]}")
        with tf.Session(config=_config(tf)) as s:
            s.run(tf.global_variables_initializer())
            s.run(inc)
            saved = sv.save(s, path)
            s.run(inc)
            before = s.run(vs)
            sv.restore(s, saved)
            after = s.run(vs)
        return before, after, [i.device for i in inc]

    same_results(tf1, saver)


def test_saver_graph_with_variables_on_three_devices_is_not_sharded(tf1):
    def saver_ops(tf):
        for i in (1, 2, 3):
            with tf.device(f"/cpu:{i}"):
                tf.Variable(np.full(3, float(i), np.float32), name=f"v{i}")
        tf.train.Saver()
        return sorted(op.type for op in tf.get_default_graph().get_operations() if op.name.startswith("save/"))

    same_results(tf1, saver_ops)


def test_fifo_queue_on_cpu2_fed_from_cpu1_and_read_on_cpu3(tf1):
    def queue(tf):
        with tf.device("/cpu:2"):
            q = tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[2], []], name="q")
        with tf.device("/cpu:1"):
            x = tf.placeholder(tf.float32, [2], name="x")
            enq = q.enqueue([x * 2.0, tf.constant(7)])
        with tf.device("/cpu:3"):
            a, i = q.dequeue()
            y = a + tf.cast(i, tf.float32)
        size = q.size()
        with tf.Session(config=_config(tf)) as s:
            for k in range(3):
                s.run(enq, {x: [k, k + 1]})
            n = s.run(size)
            out = [s.run(y) for _ in range(2)]
            _, placed = _run_placed(tf, s, [y, size])
        return n, out, enq.device, y.device, size.device, {k: v for k, v in placed.items() if k in ("q", "add", "q_Size")}

    same_results(tf1, queue)


def test_graph_grown_between_runs_keeps_the_variables_device(tf1):
    def grown(tf):
        v = tf.Variable(np.array([1.0, 2.0], np.float32), name="v")
        with tf.Session(config=_config(tf)) as s:
            s.run(v.initializer)
            _, first = _run_placed(tf, s, v.initializer)
            # Ops added later would pull v to /cpu:2 in a fresh placement of the whole graph.
            with tf.device("/cpu:2"):
                up = tf.assign_add(v, [10.0, 10.0], name="up")
                r = tf.identity(v.read_value() * 3.0, name="r")
            vals = [s.run(up), s.run(r)]
            _, later = _run_placed(tf, s, [up, r])
            vals.append(s.run(v))
        return vals, first["v"], later["up"], later["r"], up.device

    same_results(tf1, grown)


def test_grown_graph_placement_is_what_a_fresh_session_gives_for_stateless_ops(tf1):
    def grown(tf):
        x = _x(tf)
        with tf.device("/cpu:1"):
            a = tf.multiply(x, 3.0, name="a")
        with tf.Session(config=_config(tf)) as s:
            s.run(a, _feeds(tf))
            b = tf.tanh(a, name="b")
            with tf.device("/cpu:3"):
                c = tf.add(b, x, name="c")
            vals, placed = _run_placed(tf, s, c)
        return vals, [placed[n] for n in "abc"]

    same_results(tf1, grown)


def _grow_against_the_variable(tf: Any, soft: bool) -> Any:
    """v is placed (on CPU:0) by a first run; an op added later in v's colocation group
    asks for /cpu:2.  A fresh placement would move v there; TensorFlow keeps the
    stateful placement (v's value lives on CPU:0)."""
    v = tf.Variable(np.array([1.0, 2.0], np.float32), name="v")
    with tf.Session(config=_config(tf, allow_soft_placement=soft)) as s:
        s.run(v.initializer)
        s.run(tf.assign_add(v, [1.0, 1.0]))
        with tf.colocate_with(v):
            with tf.device("/cpu:2"):
                r = tf.multiply(v, 3.0, name="r")
        vals, placed = _run_placed(tf, s, r)
        return vals, r.device, placed["v"], placed["r"]


def test_grown_graph_cannot_pull_a_placed_variable_elsewhere(tf1):
    tf_err, fl_err = same_error(tf1, lambda tf: _grow_against_the_variable(tf, False), "Cannot colocate nodes")
    want = ("Cannot merge devices with incompatible ids: '/job:localhost/replica:0/task:0/device:CPU:0' "
            "and '/device:CPU:2'")
    assert want in str(tf_err) and want in str(fl_err)
    assert "r/y" in str(fl_err) and "'v'" in str(fl_err)


def test_grown_graph_under_soft_placement_keeps_the_variable_and_its_value(tf1):
    same_results(tf1, lambda tf: _grow_against_the_variable(tf, True))


def test_fresh_session_on_the_grown_graph_places_the_variable_where_asked(tf1):
    def fresh(tf):
        v = tf.Variable(np.array([1.0, 2.0], np.float32), name="v")
        with tf.colocate_with(v):
            with tf.device("/cpu:2"):
                r = tf.multiply(v, 3.0, name="r")
        with tf.Session(config=_config(tf)) as s:
            s.run(v.initializer)
            vals, placed = _run_placed(tf, s, r)
        return vals, placed["v"], placed["r"]

    same_results(tf1, fresh)


# --- partition graphs -------------------------------------------------------------------------------
def _partitions(md: Any) -> tuple[list[Any], list[Any]]:
    """What both runtimes mean by a step's partition graphs: per partition, the sorted
    (op type, device, node name) of its nodes -- without TensorFlow's `_Arg`/`_Retval`
    and replicated constants -- and the sorted Send/Recv pairs as (tensor, send device,
    recv device, client_terminated, send node, recv node).  The tensor is the rendezvous
    key's tensor_name without its `edge_<id>_` prefix: the edge ids are each runtime's own."""
    parts, ends = [], {}
    for pg in md.partition_graphs:
        nodes = pg.node if hasattr(pg, "node") else [
            type("N", (), {"name": n["name"], "op": n["op"], "device": n["device"],
                           "attr": {k: type("A", (), {"s": str(v.get("s", "")).encode(), "b": v.get("b", False)})()
                                    for k, v in n["attr"].items()}}) for n in pg["node"]]
        kept = []
        for n in nodes:
            if n.op in ("_Arg", "_Retval") or "/replicate/" in n.name:
                continue
            kept.append((n.op, n.device, n.name))
            if n.op in ("_Send", "_Recv"):
                key = (re.sub(r"^edge_\d+_", "", n.attr["tensor_name"].s.decode()), n.attr["send_device"].s.decode(),
                       n.attr["recv_device"].s.decode(), bool(n.attr["client_terminated"].b))
                ends.setdefault(key, {})[n.op] = n.name
        if kept:
            parts.append(sorted(kept))
    pairs = sorted(k + (e.get("_Send"), e.get("_Recv")) for k, e in ends.items())
    return sorted(parts), pairs


def _traced(tf: Any) -> tuple[Any, Any]:
    return tf.RunOptions(output_partition_graphs=True, trace_level=tf.RunOptions.FULL_TRACE), tf.RunMetadata()


def test_partition_graphs_of_a_chain_over_four_devices(tf1):
    def chain(tf):
        with tf.device("/cpu:1"):
            v = tf.Variable(np.arange(4, dtype=np.float32), name="v")
        with tf.device("/cpu:2"):
            a = tf.tanh(v, name="a")
            b = tf.exp(v, name="b")
        with tf.device("/cpu:3"):
            c = tf.multiply(a, b, name="c")
            d = tf.add(c, a, name="d")
        e = tf.reduce_sum(d, name="e")
        with tf.Session(config=_config(tf)) as s:
            s.run(v.initializer)
            opts, md = _traced(tf)
            val = s.run(e, options=opts, run_metadata=md)
        return val, _partitions(md)

    parts, pairs = same_results(tf1, chain)[1]
    # One Recv of v/read on cpu:2 for its two readers, one of a on cpu:3 for c and d.
    assert [p[:3] for p in pairs] == [
        ("a", CPU + "2", CPU + "3"), ("b", CPU + "2", CPU + "3"), ("d", CPU + "3", CPU + "0"),
        ("v/read", CPU + "1", CPU + "2")]


def _train_two_devices(tf: Any) -> Any:
    with tf.device("/cpu:1"):
        w = tf.Variable(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), name="w")
    with tf.device("/cpu:2"):
        h = tf.tanh(tf.matmul(tf.constant(np.eye(2, dtype=np.float32), name="x"), w, name="mm"), name="h")
        loss = tf.reduce_sum(tf.square(h, name="sq"), name="loss")
    step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session(config=_config(tf)) as s:
        s.run(w.initializer)
        opts, md = _traced(tf)
        s.run(step, options=opts, run_metadata=md)
        return s.run(w), sorted({(p[0], p[1], p[2]) for p in _partitions(md)[1]})


def test_partition_graphs_of_a_training_step_on_two_devices(tf1):
    same_results(tf1, lambda tf: _train_two_devices(tf)[0])
    pairs = _train_two_fl()
    assert ("h", CPU + "2", CPU + "0") in pairs and ("w/read", CPU + "1", CPU + "2") in pairs


def _train_two_fl() -> Any:
    import flowlab as fl
    with fl.Graph().as_default():
        return _train_two_devices(fl)[1]


def test_partition_pairs_of_a_training_step_equal_tensorflows(tf1):
    def train(tf):
        with tf.device("/cpu:1"):
            w = tf.Variable(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), name="w")
        with tf.device("/cpu:2"):
            h = tf.tanh(tf.matmul(tf.constant(np.eye(2, dtype=np.float32), name="x"), w, name="mm"), name="h")
            loss = tf.reduce_sum(tf.square(h, name="sq"), name="loss")
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session(config=_config(tf)) as s:
            s.run(w.initializer)
            opts, md = _traced(tf)
            s.run(step, options=opts, run_metadata=md)
            return s.run(w), sorted({(p[0], p[1], p[2]) for p in _partitions(md)[1]})

    same_results(tf1, train)


def test_partition_pairs_of_a_feed_and_a_fetch_on_other_devices(tf1):
    def fed(tf):
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.device("/cpu:2"):
            y = tf.tanh(x, name="y")
        with tf.Session(config=_config(tf)) as s:
            opts, md = _traced(tf)
            val = s.run(y, {x: [1.0, 2.0]}, options=opts, run_metadata=md)
        return val, [p[:3] for p in _partitions(md)[1]]

    same_results(tf1, fed)


def test_partition_graphs_without_tracing_and_on_one_device(tf1):
    def untraced(tf):
        with tf.device("/cpu:1"):
            a = tf.tanh(tf.Variable([1.0, 2.0], name="v"), name="a")
        b = tf.exp(a, name="b")
        c = tf.exp(b, name="c")
        with tf.Session(config=_config(tf)) as s:
            s.run(tf.global_variables_initializer())
            md = tf.RunMetadata()
            s.run(b, options=tf.RunOptions(output_partition_graphs=True), run_metadata=md)
            one = tf.RunMetadata()
            s.run(c, options=tf.RunOptions(output_partition_graphs=True), run_metadata=one)
        return len(md.partition_graphs), len(one.partition_graphs), len(md.step_stats.dev_stats)

    same_results(tf1, untraced)


def test_partition_graphs_read_as_graph_defs(tf1):
    def protos(tf):
        with tf.device("/cpu:1"):
            a = tf.tanh(tf.Variable([1.0, 2.0], name="v"), name="a")
        b = tf.exp(a, name="b")
        with tf.Session(config=_config(tf)) as s:
            s.run(tf.global_variables_initializer())
            opts, md = _traced(tf)
            s.run(b, options=opts, run_metadata=md)
        return sorted((n.op, n.device) for pg in md.partition_graphs for n in pg.node if n.op in ("_Send", "_Recv"))

    same_results(tf1, protos)


def test_adam_with_a_bias_on_another_device_and_a_batch_of_one(tf1):
    def batch_of_one(tf):
        with tf.device("/cpu:2"):
            b = tf.Variable(np.zeros(2, np.float32), name="b")
        with tf.device("/cpu:1"):
            a = tf.Variable(np.ones((2, 2), np.float32), name="a")
        with tf.device("/cpu:3"):
            loss = tf.reduce_sum(tf.square(tf.matmul(tf.ones((1, 2)), a) + b))
        opt = tf.train.AdamOptimizer(0.1)
        train = opt.minimize(loss, global_step=tf.train.get_or_create_global_step())
        p1, p2 = opt._get_beta_accumulators()
        with tf.Session(config=_config(tf)) as s:
            s.run(tf.global_variables_initializer())
            for _ in range(3):
                s.run(train)
            return s.run([a, b, p1, p2]), p1.device, p1.op.get_attr("_class")

    same_results(tf1, batch_of_one)
