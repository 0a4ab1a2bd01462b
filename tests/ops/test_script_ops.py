"""tf.py_func / tf.numpy_function against TensorFlow: arguments, results, dtypes, the
op types and attrs, and errors raised by the Python function."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from tests.difftest import assert_same, run_with


def _run_error(tf, build):
    try:
        run_with(tf, build)
    except Exception as e:  # noqa: BLE001 - the caller compares
        return e
    raise AssertionError(f"{tf.__name__} did not raise")


def _core(err: BaseException) -> str:
    """The message TensorFlow's kernel wrote (without either side's op annotations),
    with the token number masked."""
    msg = str(err)
    msg = msg.split("\n\t [[")[0]  # TensorFlow: node annotation after the message
    msg = re.sub(r"^.*\nNode: 'PyFunc[^']*'\n", "", msg, flags=re.S)  # TensorFlow's header
    msg = re.sub(r"^PyFunc(Stateless)? '[^']*' on \S+: ", "", msg)  # flowlab's header
    msg = re.sub(r" \(defined at [^)]*\)$", "", msg)
    return re.sub(r"pyfunc_\d+", "pyfunc_N", msg)


@pytest.mark.parametrize("case", [
    (lambda x: x * 2, [np.float32(3)], "float32"),
    (lambda x: x * 2, [3.0], "float32"),
    (lambda x: x + 1, [[1, 2]], "int32"),
    (lambda: 5, [], "int64"),
    (lambda: "héllo", [], "string"),
    (lambda: np.array(["ab", "c"]), [], "string"),
    (lambda: np.array([b"ab", b"c"]), [], "string"),
    (lambda x: x, ["ab"], "string"),
    (lambda x: x, [np.array([True])], "bool"),
    (lambda: np.zeros((2, 0)), [], "float64"),
    (lambda: 1 + 2j, [], "complex128"),
    (lambda: np.array([1, 2], np.uint8), [], "uint8"),
])
def test_values_match_tensorflow(tf1, case):
    fn, inp, tout = case
    assert_same(tf1, lambda tf: tf.py_func(fn, inp, getattr(tf, tout)))


def test_list_tout_and_tuple_results(tf1):
    assert_same(tf1, lambda tf: tf.py_func(lambda x: (x, x), [np.int32(3)], [tf.int32, tf.int32]))
    assert_same(tf1, lambda tf: tf.py_func(lambda: 5, [], [tf.int64]))
    assert_same(tf1, lambda tf: tf.py_func(lambda: (1,), [], [tf.int64]))
    assert_same(tf1, lambda tf: tf.py_func(lambda x: [x], [np.int32(3)], tf.int32))


def test_arguments_are_numpy_values(tf1):
    def build(tf):
        def describe(*args):
            return [f"{type(a).__name__}:{getattr(a, 'dtype', '')}:{getattr(a, 'shape', '')}:"
                    f"{getattr(getattr(a, 'flags', None), 'writeable', '')}" for a in args]
        inp = [1.0, np.int32(3), [1, 2], "s", ["a", "b"], True, tf.constant([[1.0]])]
        return tf.py_func(lambda *a: np.array(describe(*a)), inp, tf.string)

    assert_same(tf1, build)


def test_function_may_modify_its_argument(tf1):
    def build(tf):
        def inc(v):
            v += 1
            return v

        return tf.py_func(inc, [tf.constant([1.0, 2.0])], tf.float32)

    assert_same(tf1, build)


def test_modifying_an_argument_leaves_the_graph_value_alone():
    # TensorFlow hands the function the constant's own buffer, so `v += 1` there
    # changes the constant that later ops read; flowlab passes a copy (a deliberate
    # difference: kernels never write into values other ops share).
    c = fl.constant([1.0, 2.0])

    def inc(v):
        v += 1
        return v

    y = fl.py_func(inc, [c], fl.float32)
    with fl.Session() as s:
        out, cv = s.run([y, c])
    np.testing.assert_array_equal(out, [2.0, 3.0])
    np.testing.assert_array_equal(cv, [1.0, 2.0])


def test_no_outputs_returns_the_operation(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            op = tf.py_func(lambda: None, [], [])
            assert isinstance(op, tf.Operation) and op.type == "PyFunc"
            with tf.Session() as s:
                assert s.run(op) is None


def test_graph_form(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32)
            y = tf.py_func(lambda v: v, [x, 2], [tf.float32], name="f")[0]
            z = tf.py_func(lambda: 1.0, [], tf.float64, stateful=False)
            w = tf.numpy_function(lambda v: v, [x], tf.float32)
            assert (y.op.type, z.op.type, w.op.type) == ("PyFunc", "PyFuncStateless", "PyFunc")
            assert y.op.name == "f" and y.shape.dims is None
            assert [d.name for d in y.op.get_attr("Tin")] == ["float32", "int32"]
            assert [d.name for d in y.op.get_attr("Tout")] == ["float32"]
            assert re.fullmatch(rb"pyfunc_\d+", tf.compat.as_bytes(y.op.get_attr("token")))
            assert tf.gradients(y, x) == [None]


def test_numpy_function_decorator(tf1):
    def build(tf):
        @tf.numpy_function(Tout=tf.float32)
        def double(v):
            return v * 2

        return double(tf.constant(2.0))

    assert_same(tf1, build)


@pytest.mark.parametrize("fn,inp,tout", [
    (lambda x: x, [np.int32(3)], ["int32", "int32"]),  # one value for two outputs
    (lambda: ["ab", "c"], [], "float32"),  # a list is one value per output
    (lambda: None, [], "float32"),
    (lambda: 1.5, [], "float32"),  # double, not float
    (lambda: 3, [], "bool"),
    (lambda: np.float16(1), [], "float32"),
    (lambda: ["ab", 1], [], ["string", "int32"]),
    (lambda: object(), [], "float32"),
    (lambda: np.array(["ab", 1], dtype=object), [], "string"),
])
def test_result_errors_match_tensorflow(tf1, fn, inp, tout):
    def build(tf):
        t = [getattr(tf, s) for s in tout] if isinstance(tout, list) else getattr(tf, tout)
        return tf.py_func(fn, inp, t)

    e_tf, e_fl = _run_error(tf1, build), _run_error(fl, build)
    assert type(e_fl).__name__ == type(e_tf).__name__
    assert _core(e_fl) == _core(e_tf)


def _boom(x):
    raise ValueError(f"boom {x}")


def _key(x):
    raise KeyError("k")


def _stop():
    raise StopIteration()


def _not_impl():
    raise NotImplementedError("ni")


def _type():
    raise TypeError("te")


def _index():
    raise IndexError("ie")


def _memory():
    raise MemoryError("me")


@pytest.mark.parametrize("fn,inp", [(_boom, [1]), (_key, [1]), (_stop, []), (_not_impl, []),
                                    (_type, []), (_index, []), (_memory, [])])
def test_python_exceptions_match_tensorflow(tf1, fn, inp):
    def build(tf):
        return tf.py_func(fn, inp, tf.int32)

    e_tf, e_fl = _run_error(tf1, build), _run_error(fl, build)
    assert type(e_fl).__name__ == type(e_tf).__name__
    tf_msg, fl_msg = _core(e_tf), _core(e_fl)
    # The first line and the last frames (the user's function) are the same; the
    # frames of each library's own call machinery differ.
    assert fl_msg.split("\n")[0] == tf_msg.split("\n")[0]
    assert fl_msg.split("\n")[1] == "Traceback (most recent call last):"
    user_frame = f'  File "{__file__}"'
    assert fl_msg[fl_msg.index(user_frame):] == tf_msg[tf_msg.index(user_frame):]


def test_error_names_the_op_and_its_definition():
    def bad():
        raise ValueError("boom")

    y = fl.py_func(bad, [], fl.float32, name="mine")
    with fl.Session() as s, pytest.raises(errors.InvalidArgumentError) as info:
        s.run(y)
    assert str(info.value).startswith("PyFunc 'mine' on /job:localhost/replica:0/task:0/device:CPU:0: ValueError: boom\n")
    assert "test_script_ops.py" in str(info.value) and info.value.op is y.op


def test_stateful_py_func_runs_every_step_and_in_parallel_steps():
    calls = []
    lock = threading.Lock()

    def record(v):
        with lock:
            calls.append(int(v))
        return v

    y = fl.py_func(record, [fl.constant(7)], fl.int32)
    with fl.Session() as s:
        threads = [threading.Thread(target=lambda: [s.run(y) for _ in range(5)]) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert calls == [7] * 20


def test_function_lives_as_long_as_the_graph():
    from flowlab.ops.script_ops import REGISTRY

    g = fl.Graph()
    with g.as_default():
        y = fl.py_func(lambda: np.float32(1), [], fl.float32)
    token = y.op.get_attr("token")
    token = token.decode() if isinstance(token, bytes) else token
    assert REGISTRY.get(token) is not None
    del g, y
    import gc

    gc.collect()
    assert REGISTRY.get(token) is None


def test_not_callable():
    with pytest.raises(ValueError, match="Expected func to be callable"):
        fl.py_func(3, [], fl.float32)


_GRAD_NAMES = iter(f"PyFuncSquareGrad{i}" for i in range(1000))


def test_gradient_override_and_while_loop(tf1):
    grad_name = next(_GRAD_NAMES)  # a gradient name registers once per process and library

    def build(tf):
        @tf.RegisterGradient(grad_name)
        def _square_grad(op, grad):
            return grad * 2 * op.inputs[0]

        x = tf.constant([1.0, 2.0, 3.0])
        with tf.get_default_graph().gradient_override_map({"PyFunc": grad_name}):
            y = tf.py_func(lambda v: v * v, [x], tf.float32)
        y.set_shape([3])
        dy = tf.gradients(tf.reduce_sum(y), x)[0]

        def body(i, acc):
            v = tf.py_func(lambda a: np.float32(a * 1.5), [i], tf.float32)
            v.set_shape([])
            return i + 1, acc + v

        _, acc = tf.while_loop(lambda i, a: i < 4, body, [tf.constant(0), tf.constant(0.0)])
        return [y, dy, acc]

    assert_same(tf1, build)
