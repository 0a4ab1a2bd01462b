"""Host memory on an accelerator (flowlab.runtime.task.memory_types): shapes, axes and indices
reach GPU kernels as host values, Shape's output is a host value, constants live where
their readers want them, and values equal the CPU's.

The GPU is the fake of tests/runtime/fake_gpu.py (its arrays are a distinct type, and
its `xp` rejects host arrays as CuPy does); with `FLOWLAB_REAL_GPU=1` the same steps
run on CuPy's GPU.  Spies replace a GPU kernel in the registry to see what it is given.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np
import pytest

import flowlab as fl
import flowlab.runtime.task.task as task_mod
from flowlab.kernels import registry
from flowlab.runtime.master.prune import prune
from flowlab.runtime.task import gpu
from flowlab.runtime.task.device import local_devices
from flowlab.runtime.task.memory_types import memory_types, to_host_any
from flowlab.runtime.task.plan import compile_plan, run_straight_line
from flowlab.runtime.task.step import Step
from tests.runtime.fake_gpu import fake_gpu_device

REAL = os.environ.get("FLOWLAB_REAL_GPU") == "1"


@pytest.fixture
def devices(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Sessions made in the test get /cpu:0 and /gpu:0 (fake, or CuPy's with
    FLOWLAB_REAL_GPU=1); the list fills with the devices made."""
    made: list[Any] = []
    if REAL:
        if gpu.gpu_count() == 0:
            pytest.skip("no CuPy GPU")
        real = task_mod.local_devices

        def devs_real(count: Any = None, job: str = "localhost", task: int = 0) -> list[Any]:
            out = real({**(count or {}), "GPU": 1}, job, task)
            made.extend(out)
            return out

        monkeypatch.setattr(task_mod, "local_devices", devs_real)
        return made

    def devs(count: Any = None, job: str = "localhost", task: int = 0) -> list[Any]:
        out = [*local_devices({**(count or {}), "GPU": 0}, job, task), fake_gpu_device(0, job, task)]
        made.extend(out)
        return out

    monkeypatch.setattr(task_mod, "local_devices", devs)
    return made


def _is_host(v: Any) -> bool:
    return isinstance(v, (np.ndarray, np.generic)) and not hasattr(v, "__cuda_array_interface__")


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Any:
    """`spy("Reshape")`: the GPU kernel of that op records, per call, whether each input
    was a host value (a list of bools per call, in `spy.calls[op_type]`)."""
    calls: dict[str, list[list[bool]]] = {}

    def install(op_type: str) -> None:
        kdef = registry.find_kernel(op_type, "GPU")
        assert kdef is not None
        offset = 2 if kdef.asynchronous else (1 if kdef.needs_step else 0)
        fn = kdef.fn

        def watched(ctx: Any, *args: Any) -> Any:
            calls.setdefault(op_type, []).append([_is_host(a) for a in args[offset:]])
            return fn(ctx, *args)

        monkeypatch.setitem(registry._KERNELS, (op_type, "GPU"), dataclasses.replace(kdef, fn=watched))

    install.calls = calls  # type: ignore[attr-defined]
    return install


def _both(build: Any, feed: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """Run `build(scope)` on /cpu:0 and on /gpu:0 in fresh graphs: (cpu, gpu) values."""
    out = []
    for scope in ("/cpu:0", "/gpu:0"):
        g = fl.Graph()
        with g.as_default():
            fetches, feeds = build(scope)
            with fl.Session(graph=g) as sess:
                out.append(sess.run(fetches, {feeds[k]: v for k, v in (feed or {}).items()}))
    return out[0], out[1]


# --- declarations --------------------------------------------------------------------
def test_memory_types_follow_the_kernel_declarations() -> None:
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 3])
        r = fl.reshape(x, fl.shape(x))
        c = fl.concat([x, x], axis=1)
    cpu, dev = local_devices({"CPU": 1})[0], fake_gpu_device()
    k = registry.find_kernel("Reshape", "GPU")
    assert memory_types(r.op, k, dev) == ([False, True], [False])
    assert memory_types(r.op.inputs[1].op, registry.find_kernel("Shape", "GPU"), dev) == ([False], [True])
    # ConcatV2's "values" is a list: the axis is its third input here.
    assert memory_types(c.op, registry.find_kernel("ConcatV2", "GPU"), dev) == ([False, False, True], [False])
    assert memory_types(r.op, k, cpu) == ([True, True], [True])  # a CPU is host memory


# --- a step on the GPU ---------------------------------------------------------------
def test_shape_input_from_a_gpu_op_reaches_reshape_on_the_host(devices: Any, spy: Any) -> None:
    spy("Reshape")
    spy("Shape")

    def build(scope: str) -> Any:
        x = fl.placeholder(fl.float32, [None, 6], name="x")
        with fl.device(scope):
            s = fl.shape(x)  # host int32 on the GPU
            twice = s * fl.constant([2, 1], fl.int32) // fl.constant([1, 2], fl.int32)  # device int32
            y = fl.reshape(x * 2.0, twice)
        return [y, s], {"x": x}

    X = np.arange(12, dtype=np.float32).reshape(2, 6)
    (want_y, want_s), (got_y, got_s) = _both(build, {"x": X})
    np.testing.assert_array_equal(got_y, want_y)
    assert got_y.shape == (4, 3) and got_y.dtype == np.float32
    np.testing.assert_array_equal(got_s, want_s)
    assert type(got_s) is np.ndarray and got_s.dtype == np.int32
    # Reshape got its tensor on the device and its shape on the host.
    assert spy.calls["Reshape"] == [[False, True]]
    assert spy.calls["Shape"] == [[False]]


def test_axes_multiples_and_sizes_from_gpu_ops_are_host_values(devices: Any, spy: Any) -> None:
    for op_type in ("Sum", "Slice", "ConcatV2", "Tile", "Fill", "ExpandDims", "Transpose"):
        spy(op_type)

    def build(scope: str) -> Any:
        x = fl.placeholder(fl.float32, [None, 3], name="x")
        with fl.device(scope):
            # An int32 computed on the device from the data (nothing folds it).
            one = fl.cast(fl.reduce_min(x) * 0.0 + 1.0, fl.int32)
            s = fl.reduce_sum(x, axis=one)
            sl = fl.slice(x, fl.stack([0, one]), fl.stack([2, one + 1]))
            cat = fl.concat([x, x], axis=one)
            tiled = fl.tile(x, fl.stack([one, one + 1]))
            filled = fl.fill(fl.shape(x), fl.constant(7.0))
            ex = fl.expand_dims(x, one)
            tr = fl.transpose(x, fl.stack([one, one - 1]))
        return [s, sl, cat, tiled, filled, ex, tr], {"x": x}

    X = np.arange(6, dtype=np.float32).reshape(2, 3)
    want, got = _both(build, {"x": X})
    for w, v in zip(want, got):
        np.testing.assert_array_equal(v, w)
        assert type(v) is np.ndarray and v.dtype == w.dtype
    assert spy.calls["Sum"] == [[False, True]]
    assert spy.calls["Slice"] == [[False, True, True]]
    assert spy.calls["ConcatV2"] == [[False, False, True]]
    assert spy.calls["Tile"] == [[False, True]]
    assert spy.calls["Fill"] == [[True, False]]  # dims on the host, the value on the device
    assert spy.calls["ExpandDims"] == [[False, True]]
    assert spy.calls["Transpose"] == [[False, True]]


def test_constants_live_where_their_readers_want_them(devices: Any) -> None:
    if REAL:
        pytest.skip("counts the fake device's transfers")
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 4], name="x")
        with fl.device("/gpu:0"):
            shape = fl.constant([2, 2], fl.int32, name="shape")  # read only as a shape
            y = fl.reshape(x, shape) + fl.constant(1.0, name="one")  # 1.0: on the device
    with fl.Session(graph=g) as sess:
        X = np.arange(4, dtype=np.float32).reshape(1, 4)
        got = sess.run(y, {x: X})
        gpu_dev = next(d for d in devices if d.device_type == "GPU")
        before = gpu_dev.memory_stats()["bytes_from_host"]
        again = sess.run(y, {x: X})
        moved = gpu_dev.memory_stats()["bytes_from_host"] - before
    np.testing.assert_array_equal(got, X.reshape(2, 2) + 1.0)
    np.testing.assert_array_equal(again, got)
    assert moved == X.nbytes  # per step only the feed goes over; the shape never does


def test_host_and_device_values_agree_inside_one_placed_plan(devices: Any) -> None:
    """A plan spanning the CPU and the GPU without Send/Recv (a loop across devices,
    or the Stepper): a CPU op reading a GPU value gets a host copy and the reverse."""
    g = fl.Graph()
    with g.as_default():
        with fl.device("/gpu:0"):
            a = fl.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="a")
            b = fl.square(a, name="b")
        with fl.device("/cpu:0"):
            c = fl.reduce_sum(b, axis=1, name="c")
            n = fl.size(b, name="n")
        with fl.device("/gpu:0"):
            d = fl.multiply(c, 2.0, name="d")
            e = fl.cast(n, fl.float32, name="e")
    with fl.Session(graph=g) as sess:
        by_type = {dv.device_type: dv for dv in sess.devices}
        ops = prune([d, e], [], [])
        device_of = {op.name: by_type["CPU" if op.name in ("c", "n", "c/reduction_indices") else "GPU"]
                     for op in ops}
        plan = compile_plan(ops, device_of, [], [d, e], g.version)
        got_d, got_e = run_straight_line(plan, Step(sess), [])
    np.testing.assert_array_equal(got_d, 2 * (np.arange(6, dtype=np.float32).reshape(2, 3) ** 2).sum(1))
    assert got_e == np.float32(6)


def test_cpu_only_plans_are_untouched() -> None:
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 3])
        y = fl.reshape(x, fl.shape(x))
    with fl.Session(graph=g) as sess:
        plan = sess._plan_of(y, {x: 0})
        assert plan.feed_to_device is None
        assert all(n.kernel is registry.find_kernel(n.op.type, "CPU") for n in plan.nodes)


def test_to_host_any_passes_host_values_through() -> None:
    d = fake_gpu_device()
    v = np.arange(3)
    assert to_host_any(v) is v and to_host_any(np.int32(2)) == 2
    back = to_host_any(d.from_host(v))
    assert type(back) is np.ndarray and back.tolist() == [0, 1, 2]



def test_while_loop_with_a_tensor_array_on_the_gpu(devices: Any, spy: Any) -> None:
    """Loop counters are device int32 on the GPU; TensorArray indices, sizes and
    TopKV2's k arrive on the host (TensorFlow's HostMemory registrations)."""
    spy("TensorArrayWriteV3")
    spy("TopKV2")

    def build(scope: str) -> Any:
        x = fl.placeholder(fl.float32, [None, 3], name="x")
        with fl.device(scope):
            n = fl.shape(x)[0]
            ta = fl.TensorArray(fl.float32, size=n)

            def body(i: Any, ta: Any) -> Any:
                return i + 1, ta.write(i, x[i] * fl.cast(i, fl.float32))

            _, ta = fl.while_loop(lambda i, ta: i < n, body, [fl.constant(0), ta])
            y = ta.stack()
            z = fl.reduce_sum(y, axis=0)
            k = fl.nn.top_k(z, k=fl.size(z) - 1).values
        return [y, k], {"x": x}

    want, got = _both(build, {"x": np.arange(12, dtype=np.float32).reshape(4, 3)})
    for w, v in zip(want, got):
        np.testing.assert_array_equal(v, w)
    # (handle, index, value, flow): the index on the host, the value on the device.
    calls = spy.calls["TensorArrayWriteV3"]
    assert len(calls) == 4 and all(c[1] and not c[2] for c in calls)
    assert spy.calls["TopKV2"] == [[False, True]]


# --- int32 on the GPU: TensorFlow's host-memory convention ---------------------------------
def test_int32_shape_math_on_the_gpu_stays_on_the_host(devices: Any) -> None:
    """Shape arithmetic on the GPU (StridedSlice, Mul, AddV2, FloorDiv, Pack of int32)
    runs on the host as TensorFlow's int32 GPU kernels do: per step only the feed goes
    to the device; no int32 crosses either way."""
    if REAL:
        pytest.skip("counts the fake device's transfers")

    def build(scope: str) -> Any:
        x = fl.placeholder(fl.float32, [None, 6], name="x")
        with fl.device(scope):
            n = fl.shape(x)[0]
            rows = n * 2 + 0 * fl.reduce_prod(fl.shape(x))
            y = fl.reshape(x * 3.0, fl.stack([rows, (fl.size(x) // rows)]))
        return [y, rows], {"x": x}

    X = np.arange(12, dtype=np.float32).reshape(2, 6)
    (want_y, want_rows), (got_y, got_rows) = _both(build, {"x": X})
    np.testing.assert_array_equal(got_y, want_y)
    assert got_rows == want_rows == 4 and type(got_rows) is np.int32
    g = fl.Graph()
    with g.as_default():
        (y, rows), feeds = build("/gpu:0")
        with fl.Session(graph=g) as sess:
            sess.run(y, {feeds["x"]: X})
            gpu_dev = next(d for d in sess.devices if d.device_type == "GPU")
            before = dict(gpu_dev.memory_stats())
            sess.run(y, {feeds["x"]: X})
            after = gpu_dev.memory_stats()
    assert after["bytes_from_host"] - before["bytes_from_host"] == X.nbytes  # the feed only
    # Nothing comes back through the device's to_host (the fetch is read by the session
    # with `.get()`); with int32 math on the device, Reshape's shape would.
    assert after["bytes_to_host"] - before["bytes_to_host"] == 0


def test_int32_ops_on_the_gpu_run_their_cpu_kernel_with_host_values(devices: Any) -> None:
    g = fl.Graph()
    with g.as_default():
        a = fl.placeholder(fl.int32, [3], name="a")
        f = fl.placeholder(fl.float32, [3], name="f")
        with fl.device("/gpu:0"):
            i = fl.add(a, 1, name="i")  # int32: host memory, the CPU kernel
            x = fl.add(f, 1.0, name="x")  # float32: the device
            c = fl.cast(i, fl.float32, name="c")  # Cast keeps int32 in device memory
            lab = fl.nn.sparse_softmax_cross_entropy_with_logits(labels=a, logits=fl.stack([x, x, x]))
    dev = fake_gpu_device()
    assert memory_types(i.op, registry.find_kernel("AddV2", "GPU"), dev) == ([True, True], [True])
    assert memory_types(x.op, registry.find_kernel("AddV2", "GPU"), dev) == ([False, False], [False])
    assert memory_types(c.op, registry.find_kernel("Cast", "GPU"), dev) == ([False], [False])
    assert memory_types(lab.op, registry.find_kernel("SparseSoftmaxCrossEntropyWithLogits", "GPU"),
                        dev)[0] == [False, False]
    with fl.Session(graph=g) as sess:
        got = sess.run([i, x, c, lab], {a: [0, 1, 2], f: [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(got[0], [1, 2, 3])
    assert got[0].dtype == np.int32 and got[2].dtype == np.float32


def test_int32_on_a_gpu_crosses_as_host_send_and_recv(devices: Any) -> None:
    """TensorFlow's int32 GPU kernels declare their arguments host memory, so an int32
    Add's output leaving a GPU goes by `_HostSend`."""
    g = fl.Graph()
    with g.as_default():
        n = fl.placeholder(fl.int32, [], name="n")
        with fl.device("/gpu:0"):
            a = fl.add(n, 1, name="a")
        with fl.device("/cpu:0"):
            z = fl.add(a, 2, name="z")
    with fl.Session(graph=g) as sess:
        assert sess.run(z, {n: 3}) == 6
        parts = sess.partitions(z, {n: 3})
    # The step's own pairs; the feed's client pair (a _Send from CPU:0) is shown, not run.
    shown = {name for p in parts.client_pairs for name in (p.send_op, p.recv_op)}
    types = {nd["op"] for gd in parts.values() for nd in gd["node"] if nd["name"] not in shown}
    assert "_HostSend" in types and "_Send" not in types


# --- which pair crosses devices ------------------------------------------------------------
def _cross_edges(tf: Any) -> tuple[list[Any], dict[str, Any]]:
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        s64 = tf.shape(x, out_type=tf.int64, name="s64")
        s32 = tf.shape(x, name="s32")
        n = tf.placeholder(tf.int32, [], name="n")
        a = tf.add(n, 1, name="a")
        b = tf.cast(n, tf.bool, name="b")
    with tf.device("/cpu:1"):
        y = tf.reshape(x, s64, name="y")
        y2 = tf.reshape(x, s32, name="y2")
        z = tf.add(a, 2, name="z")
        q = tf.logical_not(b, name="q")
        f = tf.fill(s32, 1.5, name="f")
    return [y, y2, z, q, f], {x: np.ones((1, 3), np.float32), n: 3}


def test_send_recv_types_follow_tensorflows_partitions(tf1: Any) -> None:
    """TensorFlow's partition graphs (two CPUs): `_HostSend`/`_HostRecv` exactly where
    the sender's output / the receiver's input is declared host memory."""
    from flowlab.runtime.task.memory_types import send_recv_types

    g = tf1.Graph()
    with g.as_default():
        fetches, feed = _cross_edges(tf1)
        md = tf1.RunMetadata()
        with tf1.Session(config=tf1.ConfigProto(device_count={"CPU": 2})) as s:
            s.run(fetches, feed, options=tf1.RunOptions(output_partition_graphs=True), run_metadata=md)
    nodes = [nd for gd in md.partition_graphs for nd in gd.node]
    send_of = {nd.input[0].split(":")[0]: nd.op for nd in nodes if nd.op in ("_Send", "_HostSend")}
    recv_into = {nd.name: nd.op for nd in nodes if nd.op in ("_Recv", "_HostRecv")}
    # consumer op name -> {input index: recv type}
    tf_recv: dict[tuple[str, int], str] = {}
    for nd in nodes:
        for k, inp in enumerate(nd.input):
            if inp.split(":")[0] in recv_into:
                tf_recv[(nd.name, k)] = recv_into[inp.split(":")[0]]

    with fl.Graph().as_default() as fg:
        _cross_edges(fl)
        cpus = local_devices({"CPU": 2})
        dev = {op.name: cpus[1 if op.device.endswith("CPU:1") else 0] for op in fg.get_operations()}
        checked = 0
        for op in fg.get_operations():
            for k, t in enumerate(op.inputs):
                if dev[op.name] is dev[t.op.name] or t.op.name not in send_of:
                    continue  # same device, or fed (TensorFlow sends an _Arg)
                send, recv = send_recv_types(t.op, t.value_index, dev[t.op.name], op, k, dev[op.name])
                assert send == send_of[t.op.name], (t.name, op.name)
                assert recv == tf_recv[(op.name, k)], (t.name, op.name, k)
                checked += 1
    assert checked >= 5


def test_partitions_carry_host_memory_tensors_as_host_send_and_recv(devices: Any) -> None:
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 6], name="x")
        with fl.device("/cpu:0"):
            xc = fl.identity(x, name="xc")
            s_cpu = fl.reverse(fl.shape(xc), [0], name="s_cpu")  # host int32 on the CPU
        with fl.device("/gpu:0"):
            y = fl.reshape(xc * 2.0, s_cpu, name="y")  # its shape input is host memory
            s_gpu = fl.shape(y, name="s_gpu")  # Shape's output: host memory on the GPU
        with fl.device("/cpu:0"):
            z = fl.fill(s_gpu, 1.0, name="z") + fl.cast(s_gpu[0], fl.float32)
    X = np.arange(12, dtype=np.float32).reshape(2, 6)
    with fl.Session(graph=g) as sess:
        got_y, got_z = sess.run([y, z], {x: X})
        parts = sess.partitions([y, z], [x])
    np.testing.assert_array_equal(got_y, (X * 2).reshape(6, 2))
    np.testing.assert_array_equal(got_z, np.full((6, 2), 7.0, np.float32))
    kinds = {nd["name"]: nd["op"] for gd in parts.values() for nd in gd["node"]}
    ops_of: dict[str, set[tuple[str, str]]] = {}
    for p in parts.pairs:
        ops_of.setdefault(p.tensor, set()).add((kinds[p.send_op], kinds[p.recv_op]))
    assert ops_of["s_cpu:0"] == {("_Send", "_HostRecv")}  # ReverseV2's output is not declared
    # Shape's output on the GPU is host memory: Fill's dims (host) and the StridedSlice's
    # input (not host) each get their Recv, as TensorFlow keys Recvs by memory too.
    assert ops_of["s_gpu:0"] == {("_HostSend", "_HostRecv"), ("_HostSend", "_Recv")}
    assert ops_of["xc:0"] == {("_Send", "_Recv")}
