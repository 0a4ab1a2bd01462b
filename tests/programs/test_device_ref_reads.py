"""A variable read consumed on another device of the same process sees the variable as
of when the consumer runs: TensorFlow's in-process Send shares the variable's buffer,
flowlab's partitioner sends the variable itself (flowlab/runtime/master/partition_refs.py).
Programs pinned over four CPUs, compared with TensorFlow step after step."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowlab as fl
from flowlab.debug import Stepper
from flowlab.runtime.master import master as master_mod
from tests.programs.test_device_programs import assert_same_on_devices, run_program

CPU = "/job:localhost/replica:0/task:0/device:CPU:%d"


def update_then_read_elsewhere(tf):
    v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
    with tf.device("/cpu:2"):
        upd = tf.assign_add(v, tf.ones([3]))
    with tf.device("/cpu:3"):
        with tf.control_dependencies([upd]):
            out = tf.reduce_sum(v.value()) * 2.0
    return [out], None


def test_assign_then_read_on_another_device_in_the_same_step(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, [3])
        with tf.device("/cpu:1"):
            v = tf.Variable(np.ones(3, np.float32), name="v")
        with tf.device("/cpu:2"):
            snapshot = tf.reduce_max(v.value())  # receives v/read before the assign
        with tf.control_dependencies([snapshot]):
            asg = tf.assign(v, x * 3.0)
        with tf.device("/cpu:2"):
            with tf.control_dependencies([asg]):
                total = tf.reduce_sum(v.value())
                twice = tf.identity(v.value()) * 2.0
        return [snapshot, total, twice], {x: np.array([1.0, -2.0, 0.5], np.float32)}

    assert_same_on_devices(tf1, build, steps=2)


def test_a_read_used_before_and_after_an_update_on_different_devices(tf1):
    def build(tf):
        with tf.device("/cpu:1"):
            v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
        r = v.value()
        with tf.device("/cpu:2"):
            before = r * 1.0
        with tf.control_dependencies([before]):
            upd = tf.assign_add(v, tf.ones([3]))
        with tf.device("/cpu:3"):
            with tf.control_dependencies([upd]):
                after = r * 1.0
        return [before, after], None

    out = assert_same_on_devices(tf1, build, steps=2)
    np.testing.assert_array_equal(out[1][1] - out[1][0], np.ones(3, np.float32))


def test_scatter_add_then_read_across_devices(tf1):
    def build(tf):
        with tf.device("/cpu:1"):
            v = tf.Variable(np.arange(4, dtype=np.int32), name="v")
        with tf.device("/cpu:2"):
            first = tf.gather(v.value(), [0]) * 1
        with tf.control_dependencies([first]):
            sc = tf.scatter_add(v, [0, 2], [10, 20])
        with tf.device("/cpu:2"):
            with tf.control_dependencies([sc]):
                out = tf.gather(v.value(), [2, 0, 1]) + 0
        return [first, out], None

    assert_same_on_devices(tf1, build, steps=3)


def test_a_read_inside_a_while_loop_spanning_devices(tf1):
    # Deterministic in TensorFlow: each update waits for the previous iteration's sum
    # (through `a`), and each sum waits for its iteration's update.
    def build(tf):
        v = tf.Variable(np.arange(3, dtype=np.float32), name="v")

        def body(i, a):
            r = v.read_value()
            with tf.control_dependencies([r]):
                upd = tf.assign_add(v, tf.ones([3]) * (a * 0.0 + 1.0))
            with tf.device("/cpu:3"):
                with tf.control_dependencies([upd]):
                    s = tf.reduce_sum(r)
            return i + 1, a + s

        return [tf.while_loop(lambda i, a: i < 3, body, [0, 0.0])], None

    assert_same_on_devices(tf1, build, steps=2)


def read_entering_a_loop(device):
    def build(tf):
        v = tf.Variable(np.arange(3, dtype=np.float32), name="v")

        def body(i, a):
            upd = tf.assign_add(v, tf.ones([3]) * (a * 0.0 + 1.0))
            with tf.device(device):
                with tf.control_dependencies([upd]):
                    s = tf.reduce_sum(v.value())
            return i + 1, a + s

        return [tf.while_loop(lambda i, a: i < 3, body, [0, 0.0])], None

    return build


def test_a_read_entering_a_loop_on_another_device_sees_each_iterations_update(tf1):
    # v/read is made outside the loop and enters it on cpu:3: TensorFlow's Enter
    # forwards the buffer, flowlab's Enter over the shared read forwards the variable.
    out = assert_same_on_devices(tf1, read_entering_a_loop("/cpu:3"))
    assert out[0][0][1] == 27.0  # 6 + 9 + 12


def test_a_read_entering_a_loop_on_one_device_sees_each_iterations_update(tf1):
    # The plan's Enter over v/read forwards the variable (runtime/plan.py `ref_alias`).
    out = assert_same_on_devices(tf1, read_entering_a_loop("/cpu:0"))
    assert out[0][0][1] == 27.0


def read_in_a_branch_after_an_update(device):
    def build(tf):
        v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
        p = tf.placeholder(tf.bool, [])
        r = v.value()
        first = r * 1.0  # before the update
        with tf.control_dependencies([first]):
            upd = tf.assign_add(v, tf.ones([3]))

        def taken():
            with tf.device(device):
                with tf.control_dependencies([upd]):
                    return tf.reduce_sum(r)

        return [first, tf.cond(p, taken, lambda: tf.constant(0.0))], {p: True}

    return build


def test_a_read_switched_into_a_branch_on_another_device_sees_the_update(tf1):
    # The branch's Switch of v/read is on cpu:3, fed by the shared read: it forwards
    # the variable, and the Sum (after the update) reads it.
    out = assert_same_on_devices(tf1, read_in_a_branch_after_an_update("/cpu:3"), steps=2)
    assert out[0][1] == 6.0


def test_a_read_switched_into_a_branch_on_one_device_sees_the_update(tf1):
    out = assert_same_on_devices(tf1, read_in_a_branch_after_an_update("/cpu:0"), steps=2)
    assert out[0][1] == 6.0


def read_entering_a_nested_loop(tf):
    # v/read enters the outer loop, then the inner one (two constant Enters): every
    # inner iteration's Sum runs after that iteration's update and sees it.
    v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
    r = v.value()

    def outer(i, a):
        def inner(j, b):
            upd = tf.assign_add(v, tf.ones([3]) * (b * 0.0 + 1.0))
            with tf.control_dependencies([upd]):
                s = tf.reduce_sum(r)
            return j + 1, b + s

        return i + 1, tf.while_loop(lambda j, b: j < 2, inner, [0, a])[1]

    return [tf.while_loop(lambda i, a: i < 2, outer, [0, 0.0])], None


def test_a_read_entering_a_nested_loop_sees_each_inner_iterations_update(tf1):
    out = assert_same_on_devices(tf1, read_entering_a_nested_loop, steps=2)
    assert out[0][0][1] == 6.0 + 9.0 + 12.0 + 15.0


def read_used_in_and_after_a_loop(tf):
    v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
    r = v.value()

    def body(i, a):
        upd = tf.assign_add(v, tf.ones([3]) * (a * 0.0 + 1.0))
        with tf.control_dependencies([upd]):
            s = tf.reduce_sum(r)
        return i + 1, a + s

    _, total = tf.while_loop(lambda i, a: i < 3, body, [0, 0.0])
    with tf.control_dependencies([total]):  # after the loop's Exit: every update seen
        after = tf.reduce_sum(r) * 1.0
    return [total, after], None


def test_a_read_used_inside_and_after_a_loop(tf1):
    out = assert_same_on_devices(tf1, read_used_in_and_after_a_loop, steps=2)
    assert out[0] == [27.0, 12.0] and out[1] == [54.0, 21.0]


def read_in_both_branches(taken):
    # Both branches read v/read through the cond's Switch; only the true one updates v
    # (through a RefSwitch of v) before its read.
    def build(tf):
        v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
        p = tf.placeholder(tf.bool, [])
        r = v.value()

        def true_fn():
            upd = tf.assign_add(v, tf.ones([3]))
            with tf.control_dependencies([upd]):
                return tf.reduce_sum(r) * 1.0

        out = tf.cond(p, true_fn, lambda: tf.reduce_sum(r) * 2.0)
        return [out], {p: taken}

    return build


@pytest.mark.parametrize("taken", [True, False])
def test_a_read_in_both_branches_with_an_update_in_one(tf1, taken):
    out = assert_same_on_devices(tf1, read_in_both_branches(taken), steps=2)
    assert [o[0] for o in out] == ([6.0, 9.0] if taken else [6.0, 6.0])


@pytest.mark.parametrize(("device", "taken"), [("/cpu:0", True), ("/cpu:0", False), ("/cpu:2", False)])
def test_a_read_flowing_into_a_merge_is_read_at_the_switch_or_enter(tf1, device, taken):
    # A Merge takes its input as it arrives on the frame path: an Enter or Switch output
    # a Merge consumes carries the value, not the variable (no update here: TensorFlow
    # agrees whichever way).  On cpu:2 the read arrives by reference (partition_refs).
    def build(tf):
        with tf.device("/cpu:1"):
            v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
        r = v.value()
        with tf.device(device):
            p = tf.placeholder(tf.bool, [])
            picked = tf.cond(p, lambda: r, lambda: r * 2.0)
            aliased = tf.cond(p, lambda: tf.identity(r), lambda: r * 3.0)  # a Merge over an alias
            _, x = tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x + 1.0), [0, r])
        return [picked, aliased, x], {p: taken}

    assert_same_on_devices(tf1, build, steps=2)


def _run_one_device(build, steps=1, stepper=False):
    g = fl.Graph()
    with g.as_default():
        fetches, feed = build(fl)
        with fl.Session(graph=g) as s:
            s.run(fl.global_variables_initializer())
            if stepper:
                return [Stepper(s, fetches, feed).result() for _ in range(steps)]
            return [s.run(fetches, feed) for _ in range(steps)]


@pytest.mark.parametrize("fused", [True, False])
def test_reads_entering_loops_on_the_fused_and_the_general_frame_paths(monkeypatch, fused):
    from flowlab.runtime.task import loop_fusion

    monkeypatch.setattr(loop_fusion, "ENABLED", fused)
    assert _run_one_device(read_entering_a_nested_loop)[0][0][1] == 42.0
    assert _run_one_device(read_used_in_and_after_a_loop, steps=2) == [[27.0, 12.0], [54.0, 21.0]]
    assert _run_one_device(read_entering_a_loop("/cpu:0"))[0][0][1] == 27.0


def test_the_stepper_sees_the_update_through_the_forwarded_read():
    assert _run_one_device(read_entering_a_loop("/cpu:0"), steps=2, stepper=True) == [[(3, 27.0)], [(3, 54.0)]]
    assert [o[1] for o in _run_one_device(read_in_a_branch_after_an_update("/cpu:0"), 2, True)] == [6.0, 9.0]
    assert _run_one_device(read_in_both_branches(True), steps=2, stepper=True) == [[6.0], [9.0]]


def test_an_uninitialized_variable_entering_a_loop_fails_at_its_reader():
    g = fl.Graph()
    with g.as_default():
        (loop,), _ = read_entering_a_loop("/cpu:0")(fl)
        with fl.Session(graph=g) as s:
            with pytest.raises(fl.errors.FailedPreconditionError, match="uninitialized value v"):
                s.run(loop)


def test_minimize_with_variables_on_one_device_and_the_loss_on_another(tf1):
    def build(tf):
        with tf.device("/cpu:1"):
            w = tf.Variable(np.linspace(-1.0, 1.0, 6).reshape(3, 2).astype(np.float32), name="w")
            b = tf.Variable(np.full(2, 0.5, np.float32), name="b")
        x = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0)
        with tf.device("/cpu:2"):
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - 1.0))
        train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
        with tf.device("/cpu:3"):
            with tf.control_dependencies([train]):
                after = tf.reduce_sum(w.value()) + tf.reduce_sum(b.value())
        return [loss, after], None

    out = assert_same_on_devices(tf1, build, steps=4)
    assert out[-1][0] < out[0][0]


# --- flowlab's side of it: the GraphDefs, the explicit value path, other drivers ---------
def four_cpus() -> fl.ConfigProto:
    return fl.ConfigProto(device_count={"CPU": 4})


def test_the_update_is_seen_through_the_shared_read():
    assert [r[0] for r in run_program(fl, update_then_read_elsewhere, steps=3)] == [12.0, 18.0, 24.0]


def test_partition_graphs_show_tensorflows_send_of_the_read():
    g = fl.Graph()
    with g.as_default():
        (out,), _ = update_then_read_elsewhere(fl)
        with fl.Session(graph=g, config=four_cpus()) as s:
            s.run(fl.global_variables_initializer())
            md = fl.RunMetadata()
            opts = fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE, output_partition_graphs=True)
            s.run(out, options=opts, run_metadata=md)
            parts = s.partitions(out)
    # As TensorFlow's partition graphs: v, v/read and AssignAdd on CPU:0 (colocated with
    # v), v/read's Send there with T float, its Recv on CPU:3 feeding the Sum.
    (pair,) = [p for p in parts.pairs if p.tensor == "v/read:0"]
    assert pair.by_reference and pair.dtype == "float32"
    assert pair.src_device == CPU % 0 and pair.dst_device == CPU % 3
    src = {n["name"]: n for n in parts[CPU % 0]["node"]}
    dst = {n["name"]: n for n in parts[CPU % 3]["node"]}
    assert src[pair.send_op]["input"] == ["v/read"]
    assert src[pair.send_op]["attr"]["T"] == {"type": "DT_FLOAT"}
    assert dst[pair.recv_op]["attr"]["tensor_type"] == {"type": "DT_FLOAT"}
    assert dst["Sum"]["input"][0] == pair.recv_op
    assert src["v/read"]["input"] == ["v"] and src["v/read"]["attr"]["T"] == {"type": "DT_FLOAT"}
    assert [n["name"] for g in md.partition_graphs for n in g["node"]] == [
        n["name"] for d in parts for n in parts[d]["node"]]
    assert sum(p.by_reference for p in parts.pairs) == 1  # `ones` and the control edge: values


def test_share_references_false_sends_the_value_as_of_the_send(monkeypatch):
    # The path for partitions that will not share a process: the Send reads v/read.
    monkeypatch.setattr(master_mod.Master, "share_references", False)
    assert [r[0] for r in run_program(fl, update_then_read_elsewhere, steps=2)] == [6.0, 12.0]


def test_fed_read_is_sent_as_the_fed_value():
    g = fl.Graph()
    with g.as_default():
        (out,), _ = update_then_read_elsewhere(fl)
        read = g.get_tensor_by_name("v/read:0")
        with fl.Session(graph=g, config=four_cpus()) as s:
            s.run(fl.global_variables_initializer())
            assert s.run(out, {read: np.full(3, 5.0, np.float32)}) == 30.0
            assert not any(p.by_reference for p in s.partitions(out, {read: None}).pairs)
            assert s.run(out) == 18.0  # two updates so far


def test_uninitialized_variable_read_across_devices_fails_the_step():
    g = fl.Graph()
    with g.as_default():
        (out,), _ = update_then_read_elsewhere(fl)
        with fl.Session(graph=g, config=four_cpus()) as s:
            with pytest.raises(fl.errors.FailedPreconditionError, match="uninitialized value v"):
                s.run(out)


def test_traced_step_and_executor_path_see_the_update_and_describe_the_transfer():
    g = fl.Graph()
    with g.as_default():
        (out,), _ = update_then_read_elsewhere(fl)
        with fl.Session(graph=g, config=four_cpus()) as s:
            s.run(fl.global_variables_initializer())
            md = fl.RunMetadata()
            opts = fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE)
            assert s.run(out, options=opts, run_metadata=md) == 12.0
            (pair,) = [p for p in s.partitions(out).pairs if p.by_reference]
            stats = {ns.node_name: ns for d in md.step_stats.dev_stats for ns in d.node_stats}
            # The Recv allocates nothing: it describes the variable's array, 0 bytes new.
            (desc,) = stats[pair.recv_op].output
            assert desc.tensor_description.allocation_description.requested_bytes == 0
            assert [d.size for d in desc.tensor_description.shape.dim] == [3]
            # The receiving device counts the variable's bytes received, none copied.
            st = s.devices[3].memory_stats()
            assert st["bytes_received"] >= 12 and st["bytes_copied"] == 0


def test_stepper_runs_the_shared_read_partition_by_partition():
    g = fl.Graph()
    with g.as_default():
        (out,), _ = update_then_read_elsewhere(fl)
        with fl.Session(graph=g, config=four_cpus()) as s:
            s.run(fl.global_variables_initializer())
            stepper = Stepper(s, out, stop_on_nan_or_inf=True)
            assert stepper.partitioned
            assert stepper.result() == 12.0
            assert s.run(out) == 18.0


@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3)), min_size=1, max_size=6), st.integers(0, 3))
def test_reads_chained_with_updates_over_random_devices_see_every_earlier_update(steps, var_device):
    # A chain of updates and reads ordered by control edges, each read on a random
    # CPU: each read sees exactly the updates before it, as on one device.
    g = fl.Graph()
    with g.as_default():
        with fl.device(f"/cpu:{var_device}"):
            v = fl.Variable(np.zeros(2, np.float32), name="v")
        r = v.value()
        last, reads, expected, total = [], [], [], 0.0
        for k, (update, dev) in enumerate(steps):
            with fl.control_dependencies(last):
                if update:
                    last = [fl.assign_add(v, fl.constant([float(k + 1)] * 2))]
                    total += k + 1
                    continue
                with fl.device(f"/cpu:{dev}"):
                    reads.append(fl.reduce_sum(r) * 1.0)
                last = [reads[-1]]
                expected.append(2.0 * total)
        with fl.Session(graph=g, config=four_cpus()) as s:
            s.run(v.initializer)
            assert s.run(reads) == expected


def test_the_users_graph_is_untouched_and_the_partition_copies_carry_the_reference():
    g = fl.Graph()
    with g.as_default():
        (out,), _ = update_then_read_elsewhere(fl)
        read = g.get_tensor_by_name("v/read:0")
        with fl.Session(graph=g, config=four_cpus()) as s:
            s.run(fl.global_variables_initializer())
            s.run(out)
            plan = s._plan_for([], [out], [])
    assert read.dtype == fl.float32 and not read.op.op_def.inputs[0].is_ref
    (pair,) = [p for p in plan.master_partitions.pairs if p.by_reference]
    # The master's partition copies, and the task's ops imported from what it was sent.
    for ops in ({op.name: op for part in plan.master_partitions.partitions for op in part.ops},
                {op.name: op for part in plan.partitions for op in part.unit.ops}):
        assert ops["v/read"]._outputs[0].dtype == fl.float32._as_ref() and ops["v/read"].op_def.inputs[0].is_ref
        assert ops[pair.send_op].op_def.inputs[0].is_ref and ops[pair.send_op].get_attr("T") == fl.float32
        assert ops[pair.recv_op]._outputs[0].dtype == fl.float32._as_ref()
        assert ops[pair.recv_op].get_attr("tensor_type") == fl.float32
