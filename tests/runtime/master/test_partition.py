"""Partitioning: per-device subgraphs, Send/Recv pairs (one per tensor and destination),
control edges, feeds and fetches, the partition cache, errors and cancellation across
devices, memory accounting, device listing and placement logging."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.graph.graph_def import validate_graph_def
from flowlab.kernels.sendrecv_kernels import parse_key
from flowlab.runtime.master.partition import partition
from flowlab.runtime.task.partitioned_plan import PartitionedPlan
from flowlab.runtime.task.plan import Plan
from tests.runtime import testing_ops as T

CPU = "/job:localhost/replica:0/task:0/device:CPU:%d"


def four_cpus(optimize: bool = False, **kw) -> fl.ConfigProto:
    """Four virtual CPUs; the graph optimizer off unless asked (these tests look at
    the partitions of the graph as built; constant folding would shrink them)."""
    cfg = fl.ConfigProto(device_count={"CPU": 4}, **kw)
    if not optimize:
        cfg.graph_options.optimizer_options.opt_level = fl.OptimizerOptions.L0
    return cfg


def nodes(parts, i):
    return {n["name"]: n for n in parts[CPU % i]["node"]}


def test_one_recv_per_tensor_and_destination():
    with fl.device("/cpu:1"):
        a = fl.constant([1.0, 2.0], name="a")
    with fl.device("/cpu:2"):
        b = a * 3.0
        c = a + 1.0  # a second consumer of `a` on cpu:2: the same Recv
    with fl.device("/cpu:0"):
        d = fl.add(b, c, name="d")
    with fl.Session(config=four_cpus()) as s:
        np.testing.assert_array_equal(s.run(d), [5.0, 9.0])
        parts = s.partitions(d)
    assert set(parts) == {CPU % 0, CPU % 1, CPU % 2}
    assert [(p.tensor, p.src_device, p.dst_device) for p in parts.pairs] == [
        ("a:0", CPU % 1, CPU % 2), ("mul:0", CPU % 2, CPU % 0), ("add:0", CPU % 2, CPU % 0),
    ]
    p0 = parts.pairs[0]
    assert (p0.send_op, p0.recv_op, p0.tensor_name) == ("a/_0", "a/_1", "edge_0_a")
    assert p0.dtype == "float32" and p0.shape == (2,) and not p0.control
    key = parse_key(p0.key)
    assert (key.src_device, key.dst_device, key.tensor_name, key.frame_id, key.iter_id) == (
        CPU % 1, CPU % 2, "edge_0_a", 0, 0,
    )
    assert key.src_incarnation == s.devices[1].incarnation
    n1, n2 = nodes(parts, 1), nodes(parts, 2)
    send, recv = n1["a/_0"], n2["a/_1"]
    assert send["op"] == "_Send" and send["input"] == ["a"] and send["device"] == CPU % 1
    assert recv["op"] == "_Recv" and recv["input"] == [] and recv["device"] == CPU % 2
    for n in (send, recv):
        assert n["attr"]["tensor_name"] == {"s": "edge_0_a"}
        assert n["attr"]["send_device"] == {"s": CPU % 1}
        assert n["attr"]["recv_device"] == {"s": CPU % 2}
        assert n["attr"]["client_terminated"] == {"b": False}
        assert n["attr"]["send_device_incarnation"] == {"i": s.devices[1].incarnation}
    assert send["attr"]["T"] == {"type": "DT_FLOAT"} and recv["attr"]["tensor_type"] == {"type": "DT_FLOAT"}
    assert n2["mul"]["input"] == ["a/_1", "mul/y"] and n2["add"]["input"] == ["a/_1", "add/y"]
    # Every node carries its assigned device; each partition is a valid GraphDef.
    for dev, gd in parts.items():
        validate_graph_def(gd)
        assert all(n["device"] == dev for n in gd["node"])
    # The user's graph is untouched.
    assert all(op.type not in ("_Send", "_Recv") for op in fl.get_default_graph().get_operations())
    assert d.op.inputs == (b, c)


def test_partitions_of_an_optimized_step():
    # With the graph optimizer on, partitioning works on its view of the step.
    x = fl.placeholder(fl.float32, [2], name="x")
    with fl.device("/cpu:1"):
        k = fl.constant([1.0, 2.0]) * 3.0
    with fl.device("/cpu:2"):
        y = fl.add(x, k, name="y")
        y2 = fl.add(x, k, name="y2")
    with fl.device("/cpu:3"):
        z = fl.multiply(y, y2, name="z")
    with fl.Session(config=four_cpus(optimize=True)) as s:
        xv = np.array([1.0, 1.0], np.float32)
        np.testing.assert_array_equal(s.run(z, {x: xv}), [16.0, 49.0])
        parts = s.partitions(z, {x: xv})
    names = {n["name"] for g in parts.values() for n in g["node"]}
    assert all({p.send_op, p.recv_op} <= names for p in parts.pairs)
    assert nodes(parts, 3)["z"]["op"] == "Mul"


class _FoldedView:
    """The parts of an Optimization that partitioning reads: `mul` folded, no op
    converted to a NoOp."""

    def __init__(self, ops, constants):
        self.ops = ops
        self.constants = constants
        self.noops = []

    def inputs_of(self, op):
        return [] if op.name in self.constants else list(op._inputs)

    def canonical(self, t):
        return t


def test_folded_ops_become_consts_in_their_partition():
    x = fl.placeholder(fl.float32, [2], name="x")
    with fl.device("/cpu:1"):
        k = fl.constant([1.0, 2.0]) * 3.0
    with fl.device("/cpu:2"):
        y = fl.add(x, k, name="y")
    with fl.Session(config=four_cpus()) as s:
        devs = s.devices
    view = _FoldedView([x.op, k.op, y.op], {"mul": [np.array([3.0, 6.0], np.float32)]})
    device_of = {"x": devs[2], "mul": devs[1], "y": devs[2]}
    pg = partition(view.ops, device_of, [x], [y], devs, optimization=view)
    by_dev = {p.device.name: p for p in pg.partitions}
    folded = by_dev[CPU % 1].ops[0]
    assert (folded.name, folded.type, folded._inputs) == ("mul", "Const", [])
    np.testing.assert_array_equal(folded.get_attr("value"), [3.0, 6.0])
    assert [p.tensor for p in pg.pairs] == ["mul:0"]
    assert [f.name for f in by_dev[CPU % 2].feeds] == ["x:0"]


def test_cross_device_control_edge_is_a_send_of_a_dummy():
    with fl.device("/cpu:1"):
        v = fl.Variable(1.0, name="v")
        inc = fl.assign_add(v, 1.0)
    with fl.device("/cpu:0"):
        with fl.control_dependencies([inc]):
            out = fl.constant(10.0, name="out") + 0.0
    with fl.Session(config=four_cpus()) as s:
        s.run(v.initializer)
        assert s.run(out) == 10.0
        assert s.run(v) == 2.0  # the assign ran, once
        parts = s.partitions(out)
    ctrl = [p for p in parts.pairs if p.control]
    assert len(ctrl) == 1 and ctrl[0].tensor == "^" + inc.op.name
    n0 = {n["name"]: n for g in parts.values() for n in g["node"]}
    dummy = n0[n0[ctrl[0].send_op]["input"][0]]
    assert dummy["op"] == "Const" and dummy["input"] == ["^" + inc.op.name]
    consumer = next(n for n in n0.values() if "^" + ctrl[0].recv_op in n["input"])
    assert consumer["device"] == CPU % 0


def test_variables_stay_with_their_users_and_state_is_shared_with_unpartitioned_steps():
    with fl.device("/cpu:1"):
        v = fl.Variable(np.zeros(3, np.float32), name="v")
    with fl.device("/cpu:0"):
        delta = fl.constant(np.ones(3, np.float32)) * 2.0
    upd = fl.assign_add(v, delta)  # colocated with v (it takes v by reference)
    with fl.Session(config=four_cpus()) as s:
        s.run(v.initializer)
        s.run(upd)
        s.run(upd)
        np.testing.assert_array_equal(s.run(v), [4.0, 4.0, 4.0])
        assert s.placement(upd).device_of[upd.op.name].name == CPU % 1
        assert isinstance(s._plan_for([], [upd], []), PartitionedPlan)
        assert isinstance(s._plan_for([], [v.value()], []), Plan)  # one device
        assert s.devices[1].memory_stats()["bytes_in_use"] == 12
        assert s.devices[0].memory_stats()["bytes_in_use"] == 0


def test_reference_edges_never_cross_devices():
    v = fl.Variable(1.0, name="v")
    upd = fl.assign(v, 2.0)
    with fl.Session(config=four_cpus()) as s:
        devs = s.devices
    ops = [v.op, upd.op.inputs[1].op, upd.op]
    device_of = {v.op.name: devs[0], upd.op.inputs[1].op.name: devs[1], upd.op.name: devs[1]}
    with pytest.raises(errors.InternalError, match="by reference"):
        partition(ops, device_of, [], [upd])


def test_feeds_are_written_where_read_and_fetches_read_where_produced():
    x = fl.placeholder(fl.float32, [2], name="x")
    with fl.device("/cpu:1"):
        y = x * 2.0
    with fl.device("/cpu:2"):
        z = x + y
    with fl.Session(config=four_cpus()) as s:
        xv = np.array([1.0, 2.0], np.float32)
        out = s.run([z, x, y], {x: xv})
        np.testing.assert_array_equal(out[0], [3.0, 6.0])
        np.testing.assert_array_equal(out[1], xv)
        np.testing.assert_array_equal(out[2], [2.0, 4.0])
        parts = s.partitions([z, x, y], {x: xv})
    # x is fed: no transfer carries it; y crosses once.
    assert [p.tensor for p in parts.pairs] == ["mul:0"]


def test_fetching_a_fed_tensor_of_a_multi_device_step():
    x = fl.placeholder(fl.float32, [], name="x")
    with fl.device("/cpu:1"):
        a = fl.constant(2.0) * 3.0
    with fl.device("/cpu:2"):
        b = a + 1.0
    with fl.Session(config=four_cpus()) as s:
        out = s.run([b, x, a], {x: 5.0, a: 10.0})
        assert out[0] == 11.0 and out[2] == 10.0
        assert isinstance(out[1], np.ndarray) and out[1] == 5.0  # a fed fetch: a 0-d array


def test_partition_cache_skips_prune_place_and_partition(monkeypatch):
    from flowlab.runtime.master import master as master_mod

    # The master plans a step: prune, then optimize and place, then partition.
    place = "optimize_and_place"
    calls = {"prune": 0, place: 0, "partition": 0}

    def counting(name, fn):
        def wrapped(*a, **k):
            calls[name] += 1
            return fn(*a, **k)
        return wrapped

    for name in calls:
        monkeypatch.setattr(master_mod, name, counting(name, getattr(master_mod, name)))
    x = fl.placeholder(fl.float32, [])
    with fl.device("/cpu:1"):
        y = x * 2.0
    with fl.device("/cpu:2"):
        z = y + 1.0
    with fl.Session(config=four_cpus()) as s:
        assert s.run(z, {x: 1.0}) == 3.0
        assert calls == {"prune": 1, place: 1, "partition": 1}
        for i in range(5):
            assert s.run(z, {x: float(i)}) == 2 * i + 1
        f = s.make_callable(z, [x])
        assert f(4.0) == 9.0
        s.partitions(z, {x: 0})
        assert calls == {"prune": 1, place: 1, "partition": 1}
        fl.constant(0.0)  # the graph grows: a new version, a new plan
        assert s.run(z, {x: 1.0}) == 3.0
        assert calls == {"prune": 2, place: 2, "partition": 2}


def test_single_device_step_keeps_the_straight_line_path():
    with fl.device("/cpu:3"):
        a = fl.constant(1.0) + 2.0
    with fl.Session(config=four_cpus()) as s:
        plan = s._plan_for([], [a], [])
        assert isinstance(plan, Plan) and plan.straight_line is not None
        assert s.run(a) == 3.0
        parts = s.partitions(a)
        # The fetch crosses to the client device in the GraphDefs only (partition_client).
        assert list(parts) == [CPU % 0, CPU % 3] and parts.pairs == []
        assert [(p.send_op, p.recv_op) for p in parts.client_pairs] == [("add/_0", "add/_1")]


def test_error_on_one_device_fails_the_step_and_undoes_writes_everywhere():
    with fl.device("/cpu:1"):
        v = fl.Variable(1.0, name="v")
        upd = fl.assign_add(v, 5.0)
    with fl.device("/cpu:2"):
        bad = T.fail(upd * 1.0, message="broken on cpu:2")
    with fl.device("/cpu:3"):
        blocked = T.block(fl.constant(1.0))
    with fl.Session(config=four_cpus()) as s:
        s.run(v.initializer)
        with pytest.raises(errors.InvalidArgumentError, match="broken on cpu:2") as ei:
            s.run([bad, blocked])
        assert "CPU:2" in str(ei.value)
        assert s.run(v) == 1.0  # the assign on cpu:1 was undone
        assert len(s._rendezvous) == 0


def test_deadline_and_close_cancel_a_partitioned_step():
    import threading

    with fl.device("/cpu:1"):
        blocked = T.block(fl.constant(1.0))
    with fl.device("/cpu:2"):
        out = blocked + 1.0
    s = fl.Session(config=four_cpus())
    with pytest.raises(errors.DeadlineExceededError):
        s.run(out, options=fl.RunOptions(timeout_in_ms=30))
    threading.Timer(0.05, s.close).start()
    with pytest.raises(errors.CancelledError):
        s.run(out)
    assert len(s._rendezvous) == 0


def test_trace_has_send_and_recv_and_the_partition_graphs():
    with fl.device("/cpu:1"):
        a = fl.constant(np.ones(4, np.float32)) * 2.0
    with fl.device("/cpu:2"):
        b = a + 1.0
    events = []
    with fl.Session(config=four_cpus()) as s:
        s.set_listener(events.append)
        md = fl.RunMetadata()
        opts = fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE, output_partition_graphs=True)
        np.testing.assert_array_equal(s.run(b, options=opts, run_metadata=md), [3.0] * 4)
    assert {e.node for e in events if e.kind == "op_end"} >= {"mul", "mul/_0", "mul/_1", "add"}
    assert {e.device for e in events} == {CPU % 1, CPU % 2}
    assert [g["node"][0]["device"] for g in md.partition_graphs] == [CPU % 0, CPU % 1, CPU % 2]
    traced = {ns.node_name for d in md.step_stats.dev_stats for ns in d.node_stats}
    assert {"mul/_0", "mul/_1"} <= traced


def test_stepper_runs_a_multi_device_step_op_by_op():
    with fl.device("/cpu:1"):
        a = fl.constant(3.0) * 2.0
    with fl.device("/cpu:2"):
        b = a + 1.0
    with fl.Session(config=four_cpus()) as s:
        ex, mapper = s.start_execution(b)
        ex.start()
        seen = []
        while ex.ready:
            seen.append(ex.run_one().ctx.device.name)
        assert mapper.build(ex.finish()) == 7.0
        assert set(seen) == {CPU % 1, CPU % 2}


def test_fused_and_executor_paths_give_the_same_values():
    x = fl.placeholder(fl.float32, [3])
    with fl.device("/cpu:1"):
        y = fl.tanh(x) * 2.0
    with fl.device("/cpu:2"):
        z = y + x
    with fl.device("/cpu:0"):
        w = fl.reduce_sum(z * y)
    with fl.Session(config=four_cpus()) as s:
        plan = s._plan_for([x], [w, z], [])
        assert isinstance(plan, PartitionedPlan) and plan.fused is not None
        xv = np.array([0.5, -1.0, 2.0], np.float32)
        fast = s.run([w, z], {x: xv})
        traced = s.run([w, z], {x: xv}, options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE),
                       run_metadata=fl.RunMetadata())
        assert fast[0] == traced[0] and np.array_equal(fast[1], traced[1])
        assert len(s._rendezvous) == 0


def test_memory_accounting_counts_step_tensors_and_zero_copy_transfers():
    big = np.ones((256, 256), np.float32)
    with fl.device("/cpu:1"):
        a = fl.placeholder(fl.float32, [256, 256]) * 2.0
    with fl.device("/cpu:2"):
        b = fl.reduce_sum(a)
    feed = {a.op.inputs[0]: big}
    with fl.Session(config=four_cpus()) as s:
        assert s.run(b, feed) == 2.0 * big.size  # the fused path: transfers only
        assert s.devices[2].memory_stats()["transfers"] == 1
        assert s.devices[1].memory_stats()["peak_bytes_in_use"] == 0
        # A traced step runs the partitions on the executor, which measures the peak.
        s.run(b, feed, options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE),
              run_metadata=fl.RunMetadata())
        st1, st2 = s.devices[1].memory_stats(), s.devices[2].memory_stats()
    assert st1["peak_bytes_in_use"] >= 2 * big.nbytes  # the fed array and the product
    assert st2["bytes_received"] == 2 * big.nbytes and st2["bytes_copied"] == 0
    assert st2["transfers"] == 2 and st2["peak_bytes_in_use"] >= big.nbytes
    assert st1["bytes_limit"] == 256 << 20


def test_list_devices_as_tensorflow():
    with fl.Session(config=four_cpus()) as s:
        ds = s.list_devices()
    assert [d.name for d in ds] == [CPU % i for i in range(4)]
    assert {d.device_type for d in ds} == {"CPU"}
    assert all(d.memory_limit_bytes == 268435456 for d in ds)
    assert len({d.incarnation for d in ds}) == 4
    assert all(-(2**63) <= d.incarnation < 2**63 for d in ds)


def test_log_device_placement_prints_tensorflows_lines(capsys):
    with fl.device("/cpu:1"):
        a = fl.constant(1.0)
    with fl.device("/cpu:2"):
        b = a + 2.0
    with fl.Session(config=four_cpus(log_device_placement=True)) as s:
        s.run(b)
        s.run(b)  # cached: logged once
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == sorted([
        f"Const: (Const): {CPU % 1}", f"add/y: (Const): {CPU % 2}", f"add: (AddV2): {CPU % 2}",
    ])


def test_a_variable_stays_on_one_device_whichever_step_runs_first():
    # v has no request; a pinned user colocates it on cpu:1 -- also in the step that
    # only initializes it (TensorFlow places the whole graph once).
    v = fl.Variable(1.0, name="v")
    inc = fl.assign_add(v, 1.0)
    inc.op._set_device("/cpu:1")  # after building: a device scope no longer reaches a ref op
    with fl.Session(config=four_cpus()) as s:
        s.run(v.initializer)
        assert s.run(inc) == 2.0
        assert s.run(v) == 2.0
        assert s.placement(v.initializer).device_of["v"].name == CPU % 1
        assert s.devices[1].memory_stats()["bytes_in_use"] == 4
