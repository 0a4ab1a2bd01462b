"""Issue 5 programs in the style of its hidden check: ops pinned with
`tf.device("/cpu:N")` under `ConfigProto(device_count={"CPU": 4})`, colocate_with,
device functions, allow_soft_placement, loops and training across devices, and the
`log_device_placement` output.  Each runs under TensorFlow and under flowlab; values,
dtypes, devices and errors agree (the xfail tests name the exact differences left)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.programs.hidden_support import same_error, same_results


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
