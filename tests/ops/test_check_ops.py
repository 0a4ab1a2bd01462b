"""Assert, the assert_* helpers, CheckNumerics, add_check_numerics_ops and Print:
NumPy-level checks of the summary format, and differential tests against TensorFlow
(op types and names, values, error classes and messages)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import flowlab as fl
from flowlab.kernels.check_kernels import summarize_value
from flowlab.ops.gradients_impl import gradients
from tests.difftest import assert_same, run_with
from tests.ops.gradient_check import grad_case

_MSG = re.compile(r"(assertion failed: .*?|\S* : Tensor had [A-Za-z ]+ values)(?=\n|\s\(defined at|$)", re.S)


def _run_error(mod: Any, build: Any) -> BaseException:
    try:
        run_with(mod, build)
    except Exception as e:  # noqa: BLE001 - compared by the caller
        return e
    raise AssertionError(f"{mod.__name__} did not raise")


def _same_message(tf1: Any, build: Any) -> str:
    """Both raise InvalidArgumentError with the same assertion / numerics message."""
    te, fe = _run_error(tf1, build), _run_error(fl, build)
    assert type(te).__name__ == type(fe).__name__ == "InvalidArgumentError", (te, fe)
    tm, fm = _MSG.search(te.message), _MSG.search(fe.message)
    assert tm is not None and fm is not None, (te.message, fe.message)
    assert fm.group(1) == tm.group(1)
    return fm.group(1)


# --- the summary format -----------------------------------------------------------

@pytest.mark.parametrize("value, n, want", [
    (np.arange(10).reshape(2, 5), 3, "[0 1 2...]..."),
    (np.arange(12).reshape(3, 4), 5, "[0 1 2 3][4...]..."),
    (np.arange(12).reshape(3, 4), -1, "[0 1 2 3][4 5 6 7][8 9 10 11]"),
    (np.arange(5), 3, "0 1 2..."),
    (np.zeros((0, 3)), 3, ""),
    (np.float32(2.5), 3, "2.5"),
    (np.array([True, False]), 3, "1 0"),
    (np.array([b"a", b"b"]), 3, "a b"),
    (np.array([0.1, 1e10, 1e-7], np.float32), 3, "0.1 1e+10 1e-07"),
    (np.array([0.1, np.nan, -np.inf]), 3, "0.1 nan -inf"),
    (np.arange(8).reshape(2, 2, 2), 3, "[[0 1][2...]]..."),
    (np.arange(8).reshape(2, 2, 2), 6, "[[0 1][2 3]][[4 5]]..."),
    (np.array([b"a\nb", b"q'\x01"]), 3, "a\\nb q\\'\\001"),
])
def test_summarize_value(value: Any, n: int, want: str) -> None:
    assert summarize_value(value, n) == want


# --- Assert -----------------------------------------------------------------------

def test_assert_op_and_guard_names(tf1: Any) -> None:
    for tf in (tf1, fl):
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, name="x")
            a = tf.Assert(tf.reduce_all(x > 0), ["x:", x])  # float data: guarded by a cond
            b = tf.Assert(True, ["only strings", tf.constant(1)], summarize=7, name="plain")
            assert (a.name, a.type) == ("Assert/AssertGuard/Merge", "Merge")
            assert (b.name, b.type) == ("plain/Assert", "Assert")
            assert b.get_attr("summarize") == 7
            inner = g.get_operation_by_name("Assert/AssertGuard/Assert")
            assert inner.type == "Assert" and inner.get_attr("summarize") == 3


@pytest.mark.parametrize("data, summarize", [
    (lambda tf, x: ["hello", x, tf.constant([[1.5, 2.25], [3.0, 4.0]]), tf.constant(True)], None),
    (lambda tf, x: [np.arange(12).reshape(3, 4), "s"], 5),
    (lambda tf, x: [np.arange(12, dtype=np.int64).reshape(3, 4)], -1),
    (lambda tf, x: [np.zeros((0, 3)), np.array(["a", "b"]), np.float64(2.5), np.array([1.0, np.nan, np.inf])], None),
    (lambda tf, x: [tf.constant([0.1, 1e10, 1e-7]), tf.constant(7, tf.int32)], None),
    (lambda tf, x: [np.arange(8).reshape(2, 2, 2), np.array([[1.5]], np.float16)], 6),
    (lambda tf, x: [np.array([1, -2], np.int8), np.array([1, 2], np.uint8), np.array(["a\nb", "c"])], None),
    (lambda tf, x: [np.array([1 / 3, 2 / 3]), np.array([1 / 3], np.float32), np.array([1e300, -0.0])], None),
])
def test_assert_message_matches_tf(tf1: Any, data: Any, summarize: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, name="x")
        a = tf.Assert(tf.reduce_all(x > 0), data(tf, x), summarize=summarize)
        return a, {x: np.arange(-3, 7, dtype=np.float32).reshape(2, 5)}

    _same_message(tf1, build)


def test_assert_passes_and_guards_with_control_dependencies(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, [None], name="x")
        with tf.control_dependencies([tf.Assert(tf.reduce_all(x > 0), [x])]):
            y = tf.identity(x * 2.0)
        return y, {x: np.array([1.0, 2.0], np.float32)}

    assert_same(tf1, build)

    def failing(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, [None], name="x")
        with tf.control_dependencies([tf.Assert(tf.reduce_all(x > 0), ["bad x", x])]):
            y = tf.identity(x * 2.0)
        return y, {x: np.array([1.0, -2.0], np.float32)}

    assert _same_message(tf1, failing) == "assertion failed: [bad x] [1 -2]"


def test_assert_non_scalar_condition_is_runtime_error() -> None:
    c = fl.placeholder(fl.bool)
    a = fl.Assert(c, ["s"])
    with fl.Session() as s, pytest.raises(fl.errors.InvalidArgumentError, match="scalar"):
        s.run(a, {c: [True, False]})


def test_assert_failure_leaves_variables_unchanged() -> None:
    v = fl.Variable(1.0)
    with fl.control_dependencies([fl.Assert(False, ["no"])]):
        up = fl.assign_add(v, 1.0)
    with fl.Session() as s:
        s.run(v.initializer)
        with pytest.raises(fl.errors.InvalidArgumentError, match=r"assertion failed: \[no\]"):
            s.run(up)
        assert s.run(v) == 1.0


# --- the assert_* helpers -----------------------------------------------------------

@pytest.mark.parametrize("which, x, y", [
    ("assert_equal", [1, 2], [2, 1]),
    ("assert_less", [1.0, 3.0], [2.0, 2.0]),
    ("assert_greater", [1, 2], 1),
    ("assert_less_equal", [3], [2]),
    ("assert_greater_equal", [1.5], [2.5]),
    ("assert_none_equal", [1, 2], [1, 3]),
])
def test_binary_asserts_at_run_time(tf1: Any, which: str, x: Any, y: Any) -> None:
    dt = np.asarray(x).dtype

    def build(tf: Any) -> Any:
        px = tf.placeholder(tf.as_dtype(dt), name="px")
        return getattr(tf, which)(px, tf.constant(y, dtype=tf.as_dtype(dt))), {px: np.asarray(x, dt)}

    _same_message(tf1, build)

    def ok(tf: Any) -> Any:
        px = tf.placeholder(tf.as_dtype(dt), name="px")
        a = getattr(tf.debugging, which)(px, px if which.endswith(("equal", "l")) and "none" not in which else px + 1,
                                         message="m")
        with tf.control_dependencies([a]):
            return tf.identity(px), {px: np.asarray(x, dt)}

    if which in ("assert_equal", "assert_less_equal", "assert_greater_equal"):
        assert_same(tf1, ok)


def test_binary_assert_names_match_tf(tf1: Any) -> None:
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            p = tf.placeholder(tf.float32, name="p")
            assert tf.assert_equal(p, 1.0).name == "assert_equal_1/Assert/AssertGuard/Merge"
            assert tf.assert_positive(p).name == "assert_positive/assert_less/Assert/AssertGuard/Merge"
            assert tf.assert_equal(p, p).type == "NoOp"
            i = tf.placeholder(tf.int32, name="i")
            assert tf.assert_less(i, 3, name="lt").name == "lt/Assert/Assert"


def test_static_failures_raise_at_build_time(tf1: Any) -> None:
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 3]), message="msg")
            msgs.append(e.value.message)
            with pytest.raises(tf.errors.InvalidArgumentError):
                tf.assert_positive(tf.constant([1.0, -1.0]))
            ok = tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 2]))
            assert ok.type == "Assert"
    assert msgs[0] == msgs[1] == "msg\nCondition x == y did not hold element-wise:\nx (Const:0) = \n[1 2]\ny (Const_1:0) = \n[1 3]"


@pytest.mark.parametrize("which, bad", [
    ("assert_positive", [1.0, 0.0]),
    ("assert_non_negative", [1, -1]),
    ("assert_negative", [-1.0, 2.0]),
    ("assert_non_positive", [0, 3]),
])
def test_unary_asserts(tf1: Any, which: str, bad: Any) -> None:
    dt = np.asarray(bad).dtype

    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.as_dtype(dt), name="x")
        return getattr(tf, which)(x, message="check"), {x: np.asarray(bad, dt)}

    _same_message(tf1, build)


def test_assert_rank(tf1: Any) -> None:
    errs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            z = tf.zeros([2, 3])
            assert tf.assert_rank(z, 2).name == "assert_rank/static_checks_determined_all_ok"
            with pytest.raises(ValueError) as e:
                tf.assert_rank(z, 3, message="r")
            errs.append(str(e.value))
    assert errs[0] == errs[1]

    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, name="x")
        return tf.assert_rank(x, 2), {x: np.ones(2, np.float32)}

    assert _same_message(tf1, build) == "assertion failed: [] [Tensor x:0 must have rank] [2] [Received shape: ] [2]"


def test_assert_type_and_scalar(tf1: Any) -> None:
    errs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, name="x")
            assert tf.assert_type(x, tf.float32).name == "assert_type/statically_determined_correct_type"
            with pytest.raises(TypeError) as e:
                tf.assert_type(x, tf.int32)
            errs.append(str(e.value))
            s = tf.constant(1.0)
            assert tf.assert_scalar(s) is s
            with pytest.raises(ValueError):
                tf.assert_scalar(tf.zeros([2]))
    assert errs[0] == errs[1] == "x:0 must be of type tf.int32; got tf.float32"


# --- CheckNumerics ----------------------------------------------------------------

def test_check_numerics_passes_values(tf1: Any) -> None:
    for dt in (np.float16, np.float32, np.float64):
        assert_same(tf1, lambda tf, dt=dt: tf.check_numerics(tf.constant(np.array([1.5, -2.0], dt)), "m"))
    assert_same(tf1, lambda tf: tf.debugging.check_numerics(tf.constant(3.0), "m") * 2.0)


@pytest.mark.parametrize("vals, what", [
    ([1.0, np.nan], "NaN"), ([np.inf, 1.0], "Inf"), ([-np.inf, np.nan], "Inf and NaN"),
])
def test_check_numerics_messages(tf1: Any, vals: Any, what: str) -> None:
    msg = _same_message(tf1, lambda tf: tf.check_numerics(tf.constant(vals), "boom"))
    assert msg == f"boom : Tensor had {what} values"


def test_check_numerics_int_input_is_build_error() -> None:
    with pytest.raises(TypeError, match="CheckNumerics"):
        fl.check_numerics(fl.constant([1, 2]), "m")


def test_check_numerics_gradient(tf1: Any) -> None:
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, name="x")
            c = tf.check_numerics(x, "m")
            g = (gradients if tf is fl else tf.gradients)(c * 3.0, x)[0]
            cn = [op for op in tf.get_default_graph().get_operations()
                  if op.type == "CheckNumerics" and op.name.startswith("gradients")]
            assert len(cn) == 1
            msg = cn[0].get_attr("message")
            assert (msg.decode() if isinstance(msg, bytes) else msg) == (
                "Not a number (NaN) or infinity (Inf) values detected in gradient. b'm'")
            with tf.Session() as s:
                np.testing.assert_allclose(s.run(g, {x: [1.0, 2.0]}), [3.0, 3.0])


def test_verify_tensor_all_finite(tf1: Any) -> None:
    assert_same(tf1, lambda tf: tf.verify_tensor_all_finite(tf.constant([1.0, 2.0]), "v"))
    _same_message(tf1, lambda tf: tf.verify_tensor_all_finite(tf.constant([1.0, np.inf]), "v"))


def test_add_check_numerics_ops(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, [2], name="x")
        y = tf.log(x)
        z = y * 2.0
        return [z, tf.add_check_numerics_ops()], {x: np.array([1.0, 0.0], np.float32)}

    assert _same_message(tf1, build) == "Log:0 : Tensor had Inf values"

    def ok(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, [2], name="x")
        z = tf.log(x) * 2.0
        return [z, tf.add_check_numerics_ops()], {x: np.array([1.0, 2.0], np.float32)}

    assert_same(tf1, ok)


def test_add_check_numerics_ops_refuses_control_flow() -> None:
    p = fl.placeholder(fl.bool)
    fl.cond(p, lambda: fl.constant(1.0), lambda: fl.constant(2.0))
    with pytest.raises(ValueError, match="not compatible"):
        fl.add_check_numerics_ops()


# --- Print --------------------------------------------------------------------------

def test_print_passes_through_and_prints(tf1: Any, capfd: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, name="x")
        p = tf.Print(x, [x, "s", tf.constant([[1, 2], [3, 4]])], message="msg: ", summarize=2)
        return p * 1.0, {x: np.array([1.0, 2.5, 3.0], np.float32)}

    assert_same(tf1, build)
    err = capfd.readouterr().err
    assert err.count("msg: [1 2.5...][s][[1 2]...]") == 2  # TensorFlow's line, then ours


def test_print_first_n_and_gradient(capfd: Any) -> None:
    x = fl.placeholder(fl.float32, name="x")
    p = fl.Print(x, [x], first_n=2)
    assert p.op.type == "Print" and p.op.name == "Print"
    g = gradients(p * 2.0, x)[0]
    with fl.Session() as s:
        for _ in range(4):
            s.run(p, {x: 1.0})
        np.testing.assert_allclose(s.run(g, {x: 1.0}), 2.0)
    assert capfd.readouterr().err.count("[1]") == 2


def test_debugging_namespace() -> None:
    for n in ("Assert", "check_numerics", "assert_equal", "assert_less", "assert_greater",
              "assert_non_negative", "assert_positive", "assert_rank", "assert_type"):
        assert getattr(fl.debugging, n) is getattr(fl, n)


@grad_case("CheckNumerics", np.random.default_rng(0).standard_normal((2, 3)))
def _(tf: Any, x: Any) -> Any:
    return tf.check_numerics(x * x, "sq")


@grad_case("Print", np.random.default_rng(1).standard_normal((3,)))
def _(tf: Any, x: Any) -> Any:  # noqa: F811
    return tf.Print(x * 2.0, [x], first_n=1)
