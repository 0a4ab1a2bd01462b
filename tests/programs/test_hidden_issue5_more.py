"""More issue 5 programs in the style of its hidden check (session 4, helper D): device
strings in every spelling, nested and reset device scopes, device functions and
DeviceSpec objects, colocation (ignore_existing, conflicts), soft placement, the
session's devices and its placement log.  The programs with state on pinned devices
(slots, global_step, Saver, queues, a graph grown between runs) and the partition
graphs' Send/Recv pairs are in test_hidden_issue5.py and use the helpers here.

Each program runs under TensorFlow 2.21's `tf.compat.v1` and under flowlab with
`ConfigProto(device_count={"CPU": 4})`; values, dtypes, requested devices, the devices
ops end on (read from `RunMetadata.partition_graphs`), names and error classes agree.
Where TensorFlow's partition graphs carry its own rewrites (small constants replicated
to each device that reads them, feeds and fetches as `_Arg`/`_Retval` on the client's
CPU:0), only what both mean is compared; the xfail tests name what still differs."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from tests.programs.hidden_support import same_error, same_results

CPU = "/job:localhost/replica:0/task:0/device:CPU:"


def _config(tf: Any, **kw: Any) -> Any:
    return tf.ConfigProto(device_count={"CPU": 4}, **kw)


def _node_devices(tf: Any, md: Any) -> dict[str, str]:
    """node name -> device of every node of the partition graphs that is not a
    transfer, an argument or a result, nor one of TensorFlow's replicated constants."""
    out: dict[str, str] = {}
    for pg in md.partition_graphs:
        nodes = pg.node if hasattr(pg, "node") else [
            type("N", (), {"name": n["name"], "op": n["op"], "device": n["device"]}) for n in pg["node"]]
        for n in nodes:
            if (n.op in ("_Send", "_Recv", "_HostSend", "_HostRecv", "_Arg", "_Retval") or "/replicate/" in n.name
                    or re.fullmatch(r"_\d+", n.name.rsplit("/", 1)[-1])):
                continue  # transfers and the nodes TensorFlow adds for cross-device control edges
            out[n.name] = n.device
    return out


def _x(tf: Any, name: str = "x") -> Any:
    """A fed input, so that neither TensorFlow's Grappler nor flowlab folds the program away."""
    return tf.placeholder(tf.float32, [2], name=name)


def _feeds(tf: Any) -> dict[Any, Any]:
    """A value for every placeholder of the default graph (the `_x` inputs)."""
    return {op.outputs[0]: np.array([1.0, 2.0], np.float32)
            for op in tf.get_default_graph().get_operations() if op.type == "Placeholder"}


def _run_placed(tf: Any, sess: Any, fetches: Any, feed: Any = None) -> tuple[Any, dict[str, str]]:
    """Run a step asking for its partition graphs: (values, node name -> device)."""
    opts = tf.RunOptions(output_partition_graphs=True, trace_level=tf.RunOptions.FULL_TRACE)
    md = tf.RunMetadata()
    feed = _feeds(tf) if feed is None else feed
    vals = sess.run(fetches, feed, options=opts, run_metadata=md)
    if not md.partition_graphs and hasattr(sess, "placement"):
        # An older flowlab left partition_graphs empty for a step on one device; its
        # placement says the same.
        return vals, {k: d.name for k, d in sess.placement(fetches, feed).device_of.items()}
    return vals, _node_devices(tf, md)


# --- device strings ---------------------------------------------------------------------------------
SPELLINGS = ["/cpu:1", "/device:CPU:1", "CPU:1", "cpu:1", "/CPU:1", "/Cpu:1", "/device:cpu:1",
             CPU + "1", "/job:localhost/replica:0/task:0/cpu:1", "/job:localhost/cpu:1", "//cpu:1/",
             "/cpu:*", "cpu", "CPU", ""]


@pytest.mark.parametrize("spec", SPELLINGS)
def test_device_spellings(tf1, spec):
    def spelling(tf):
        x = _x(tf)
        with tf.device(spec):
            y = tf.multiply(x, 3.0, name="y")
        z = tf.add(y, x, name="z")
        with tf.Session(config=_config(tf)) as s:
            vals, placed = _run_placed(tf, s, z)
        return vals, y.device, placed["y"]

    same_results(tf1, spelling)


@pytest.mark.parametrize("spec", ["/foo:bar", "/cpu:x", "/cpu:1/cpu:2", " /cpu:1", "/device:CPU", "/job:a:b",
                                  "/task:x", "/replica:y"])
def test_unparsable_device_strings_fail_at_build_time(tf1, spec):
    def bad(tf):
        with tf.device(spec):
            return tf.constant(1.0).device

    same_error(tf1, bad)


@pytest.mark.parametrize("spec", ["/job:worker/cpu:0", "/task:1/cpu:0", "/replica:1", "/job:localhost/task:3"])
@pytest.mark.parametrize("soft", [False, True])
def test_a_job_task_or_replica_no_device_has_fails_even_with_soft_placement(tf1, spec, soft):
    def other_task(tf):
        x = _x(tf)
        with tf.device(spec):
            a = x * 2.0
        with tf.Session(config=_config(tf, allow_soft_placement=soft)) as s:
            return s.run(a, _feeds(tf))

    _, fl_err = same_error(tf1, other_task, "Cannot assign a device for operation mul")
    assert "was explicitly assigned to" in str(fl_err)


@pytest.mark.parametrize("spec", ["/gpu:0", "/device:GPU:0", "/GPU:1", "/device:XPU:0", "/device:FOO:0", "/cpu:4"])
def test_a_missing_device_type_or_index_is_relaxed_by_soft_placement(tf1, spec):
    def soft(tf):
        x = _x(tf)
        with tf.device(spec):
            a = x * 2.0
        with tf.device("/cpu:2"):
            b = a + 1.0
        with tf.Session(config=_config(tf, allow_soft_placement=True)) as s:
            vals, placed = _run_placed(tf, s, [a, b])
        return vals, a.device, placed["mul"], placed["add"]

    same_results(tf1, soft)


def test_missing_gpu_error_says_cuda_is_not_enabled(tf1):
    def hard(tf):
        x = _x(tf)
        with tf.device("/gpu:0"):
            a = x * 2.0
        with tf.Session(config=_config(tf)) as s:
            return s.run(a, _feeds(tf))

    same_error(tf1, hard, "The requested device appears to be a GPU, but CUDA is not enabled.")


def test_gpu_in_device_count_on_a_machine_without_one(tf1):
    def gpu_count(tf):
        x = _x(tf)
        with tf.device("/cpu:1"):
            a = x * 2.0
        cfg = tf.ConfigProto(device_count={"CPU": 2, "GPU": 1})
        with tf.Session(config=cfg) as s:
            return s.run(a, _feeds(tf)), sorted(d.name for d in s.list_devices())

    same_results(tf1, gpu_count)


# --- nested scopes, None, functions, DeviceSpec objects ------------------------------------------
def test_nested_device_scopes_merge_partial_specs(tf1):
    def nested(tf):
        out = []
        with tf.device("/job:localhost"):
            with tf.device("/cpu:2"):
                out.append(tf.constant(1.0, name="a").device)
                with tf.device("/replica:0/task:0"):
                    out.append(tf.constant(1.0, name="b").device)
                with tf.device("/device:CPU:3"):
                    out.append(tf.constant(1.0, name="c").device)
                with tf.device(""):
                    out.append(tf.constant(1.0, name="d").device)
                with tf.device(None):
                    out.append(tf.constant(1.0, name="e").device)
                    with tf.device("/cpu:1"):
                        out.append(tf.constant(1.0, name="f").device)
            out.append(tf.constant(1.0, name="g").device)
        return out

    same_results(tf1, nested)


def test_device_none_resets_and_values_land_on_cpu0(tf1):
    def reset(tf):
        with tf.device("/cpu:3"):
            a = _x(tf, "a") * 2.0
            with tf.device(None):
                b = tf.subtract(a, 1.0, name="b")
            c = tf.add(b, 1.0, name="c")
        with tf.Session(config=_config(tf)) as s:
            vals, placed = _run_placed(tf, s, c)
        return vals, [placed[n] for n in ("mul", "b", "c")], b.device, c.device

    same_results(tf1, reset)


def test_device_functions_returning_none_spec_and_strings(tf1):
    def functions(tf):
        def by_type(op):
            if op.type == "Mul":
                return tf.DeviceSpec(device_type="CPU", device_index=2)
            if op.type == "AddV2":
                return "/device:CPU:3"
            if op.type == "Sub":
                return ""
            return "/cpu:1"
        with tf.device("/cpu:0"):
            with tf.device(by_type):
                x = _x(tf)
                m = tf.multiply(x, 2.0, name="m")
                a = tf.add(m, 1.0, name="a")
                s_ = tf.subtract(a, x, name="s")
        with tf.Session(config=_config(tf)) as s:
            vals, placed = _run_placed(tf, s, s_)
        return vals, [op.device for op in (x.op, m.op, a.op, s_.op)], [placed[n] for n in ("m", "a", "s")]

    same_results(tf1, functions)


def test_device_function_returning_none_is_a_type_error(tf1):
    def returns_none(tf):
        with tf.device(lambda op: None):
            return tf.constant(1.0).device

    same_error(tf1, returns_none)


@pytest.mark.parametrize("spec", ["/foo:bar", "/cpu:x"])
def test_malformed_device_from_a_device_function_fails_at_run_time(tf1, spec):
    def malformed(tf):
        x = _x(tf)
        with tf.device(lambda op: spec):
            a = tf.multiply(x, 2.0, name="a")
        built = a.device
        try:
            with tf.Session(config=_config(tf)) as s:
                s.run(a, _feeds(tf))
        except Exception as e:  # noqa: BLE001 - the class and text are the result
            return built, type(e).__name__, "Malformed device specification" in str(e)
        return built, None, None

    same_results(tf1, malformed)


def test_device_function_inside_a_string_scope_and_a_string_inside_a_function(tf1):
    def mixed(tf):
        with tf.device(lambda op: "/cpu:1"):
            with tf.device("/cpu:2"):
                a = tf.constant(1.0, name="a")
            b = tf.constant(1.0, name="b")
        with tf.device("/job:localhost"):
            with tf.device(lambda op: "/cpu:3"):
                c = tf.constant(1.0, name="c")
        with tf.device("/cpu:2"):
            with tf.device(lambda op: tf.DeviceSpec(job="localhost")):
                d = tf.constant(1.0, name="d")
        return a.device, b.device, c.device, d.device

    same_results(tf1, mixed)


def test_device_spec_objects_in_tf_device(tf1):
    def specs(tf):
        with tf.device(tf.DeviceSpec(job="localhost", replica=0, task=0, device_type="CPU", device_index=1)):
            a = _x(tf, "a") * 2.0
        with tf.device(tf.DeviceSpec(device_type="CPU", device_index=3)):
            b = tf.add(a, 1.0, name="b")
        with tf.device(tf.DeviceSpec(device_type="CPU")):
            c = tf.add(b, 1.0, name="c")
        spec = tf.DeviceSpec.from_string("/job:localhost/cpu:2")
        with tf.Session(config=_config(tf)) as s:
            vals, placed = _run_placed(tf, s, c)
        return (vals, a.device, b.device, c.device, [placed[n] for n in ("mul", "b", "c")], spec.to_string(),
                spec.device_type, spec.device_index, spec.job)

    same_results(tf1, specs)


def test_device_spec_parsing_and_merging(tf1):
    def parsing(tf):
        out = []
        for s in ["/cpu:1", "CPU:1", "/job:ps/replica:1/task:2/gpu:3", "/device:cpu:0", "/job:w", "/cpu:*", "gpu"]:
            d = tf.DeviceSpec.from_string(s)
            out.append([d.to_string(), d.job, d.replica, d.task, d.device_type, d.device_index])
        a = tf.DeviceSpec.from_string("/job:ps/cpu:0")
        b = tf.DeviceSpec.from_string("/task:1/gpu:2")
        out.append(a.make_merged_spec(b).to_string())
        out.append(b.make_merged_spec(a).to_string())
        return out

    same_results(tf1, parsing)


# --- colocation -------------------------------------------------------------------------------------
def test_colocate_with_ignore_existing(tf1):
    def ignore(tf):
        with tf.device("/cpu:1"):
            a = tf.identity(_x(tf), name="a")
        with tf.device("/cpu:2"):
            b = tf.identity(_x(tf, "y"), name="b")
        with tf.colocate_with(a):
            c = tf.add(a, b, name="c")
            with tf.colocate_with(b, ignore_existing=True):
                d = tf.multiply(c, b, name="d")
                with tf.colocate_with(None, ignore_existing=True):
                    with tf.device("/cpu:3"):
                        e = tf.subtract(d, c, name="e")
        with tf.Session(config=_config(tf)) as s:
            vals, placed = _run_placed(tf, s, [d, e])
        return (vals, [op.colocation_groups() for op in (c.op, d.op, e.op)],
                [placed[n] for n in ("c", "d", "e")], [op.device for op in (c.op, d.op, e.op)])

    same_results(tf1, ignore)


def test_nested_colocation_with_ops_on_two_devices_fails_at_run_time(tf1):
    def nested(tf):
        x = _x(tf)
        with tf.device("/cpu:1"):
            a = tf.identity(x, name="a")
        with tf.device("/cpu:2"):
            b = tf.identity(x, name="b")
        with tf.colocate_with(a):
            with tf.colocate_with(b):
                e = tf.add(a, b, name="e")
        groups = e.op.colocation_groups()
        with tf.Session(config=_config(tf)) as s:
            return groups, s.run(e, _feeds(tf))

    tf_err, fl_err = same_error(tf1, nested, "Cannot colocate nodes")
    for err in (tf_err, fl_err):
        assert "Cannot merge devices with incompatible ids: '/device:CPU:1' and '/device:CPU:2'" in str(err) or \
            "Cannot merge devices with incompatible ids: '/device:CPU:2' and '/device:CPU:1'" in str(err)


def test_colocate_with_an_op_pinned_elsewhere_is_an_error_at_run_time(tf1):
    def conflict(tf):
        with tf.device("/cpu:1"):
            a = tf.identity(_x(tf), name="a")
            b = tf.identity(a, name="b")
        with tf.device("/cpu:2"):
            with tf.colocate_with(b):
                c = tf.identity(b, name="c")
        with tf.device("/cpu:3"):
            d = tf.identity(c, name="d")
        with tf.colocate_with(d):
            with tf.device("/cpu:0"):
                e = tf.identity(d, name="e")
        with tf.Session(config=_config(tf)) as s:
            return s.run(e, _feeds(tf)), c.device, e.device

    same_results(tf1, conflict)


def test_explicit_conflict_inside_a_colocation_group(tf1):
    def conflict(tf):
        with tf.device("/cpu:1"):
            a = tf.identity(_x(tf), name="a")
            b = tf.identity(a, name="b")
        with tf.colocate_with(b):
            c = tf.identity(b, name="c")
        c.op._set_device("/cpu:2")
        with tf.Session(config=_config(tf)) as s:
            return s.run(c, _feeds(tf))

    tf_err, fl_err = same_error(tf1, conflict, "Cannot colocate nodes")
    for e in (tf_err, fl_err):
        assert "Cannot merge devices with incompatible ids" in str(e)


def test_explicit_conflict_inside_a_colocation_group_with_soft_placement(tf1):
    def conflict(tf):
        with tf.device("/cpu:1"):
            a = tf.negative(_x(tf), name="a")
            b = tf.negative(a, name="b")
        with tf.colocate_with(b):
            c = tf.negative(b, name="c")
        c.op._set_device("/cpu:2")
        with tf.colocate_with(a):
            with tf.device("/gpu:0"):
                d = tf.abs(c, name="d")
        with tf.Session(config=_config(tf, allow_soft_placement=True)) as s:
            vals, placed = _run_placed(tf, s, [c, d])
        return vals, [placed[n] for n in "acd"], d.device

    same_results(tf1, conflict)


# --- devices and the placement log ------------------------------------------------------------------
@pytest.mark.parametrize("count", [{"CPU": 4}, {"CPU": 2, "GPU": 0}, {"CPU": 1, "GPU": 2}, {}])
def test_list_devices_fields(tf1, count):
    def devices(tf):
        with tf.Session(config=tf.ConfigProto(device_count=count)) as s:
            ds = s.list_devices()
            return [(d.name, d.device_type, d.memory_limit_bytes, type(d.incarnation).__name__) for d in ds]

    same_results(tf1, devices)


def test_no_cpu_device_is_not_found(tf1):
    def none(tf):
        with tf.Session(config=tf.ConfigProto(device_count={"CPU": 0})) as s:
            return s.list_devices()

    same_error(tf1, none, "No CPU devices are available in this process")


# TensorFlow 2.21's stdout for `_log_program` below (printf from its placer, recorded once:
# capturing a C-level printf in-process is unreliable).  Generators (no inputs) come last.
_TF_LOG = f"""\
w: (VariableV2): {CPU}1
w/Assign: (Assign): {CPU}1
w/read: (Identity): {CPU}1
h: (MatMul): {CPU}2
Square: (Square): {CPU}2
loss: (Mean): {CPU}2
enq: (QueueEnqueueV2): {CPU}0
sh: (Shape): {CPU}3
n: (Size): {CPU}3
x: (Placeholder): {CPU}0
w/initial_value: (Const): {CPU}1
Const: (Const): {CPU}2
q: (FIFOQueueV2): {CPU}0
--""".splitlines()


def _log_program(tf: Any) -> Any:
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    with tf.device("/cpu:1"):
        w = tf.get_variable("w", initializer=np.ones((2, 2), np.float32))
    with tf.device("/cpu:2"):
        h = tf.matmul(x, w, name="h")
        loss = tf.reduce_mean(tf.square(h), name="loss")
    q = tf.FIFOQueue(3, tf.float32, name="q")
    enq = q.enqueue(loss, name="enq")
    with tf.device("/cpu:3"):
        sh = tf.shape(h, name="sh")
        n = tf.size(x, name="n")
    with tf.Session(config=tf.ConfigProto(device_count={"CPU": 4}, log_device_placement=True)) as s:
        s.run(w.initializer)
        print("--")
        return s.run([enq, sh, n], {x: np.ones((3, 2), np.float32)})[1:]


def test_log_device_placement_of_variables_queues_and_shapes(capsys):
    import flowlab as fl
    with fl.Graph().as_default():
        sh, n = _log_program(fl)
    assert list(sh) == [3, 2] and n == 6
    assert capsys.readouterr().out.splitlines() == _TF_LOG


def test_an_unplaceable_op_fails_steps_that_do_not_run_it(tf1):
    def whole_graph(tf):
        x = tf.placeholder(tf.float32, name="x")
        c = tf.add(x, 1.0, name="c")
        with tf.device("/cpu:9"):
            tf.multiply(x, 2.0, name="b")
        with tf.Session(config=_config(tf)) as s:
            return s.run(c, {x: 1.0})

    same_error(tf1, whole_graph, "Cannot assign a device for operation b: {{node b}} was explicitly assigned")
