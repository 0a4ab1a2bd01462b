"""tf.Variable, the state ops (Assign*, Scatter*, CountUpTo, IsVariableInitialized) and
their kernels: values and names against NumPy and TensorFlow, errors, rollback of a
failed step, concurrency, and lifetime across runs and sessions."""

from __future__ import annotations

import threading

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowlab as fl
from flowlab import errors
from tests.difftest import assert_same, assert_same_error, run_with


def _names(tf):
    return [f"{op.name}:{op.type}" for op in tf.get_default_graph().get_operations()]


def same_graph_facts(tf1, build):
    """`build(tf)` returns plain Python facts about the graph it built (names, dtypes):
    they must be equal under TensorFlow and flowlab."""
    with tf1.Graph().as_default():
        expected = build(tf1)
    with fl.Graph().as_default():
        actual = build(fl)
    assert actual == expected
    return actual


# --- construction: names, dtypes, collections ---------------------------------------
def test_variable_builds_tensorflows_ops():
    v = fl.Variable([1.0, 2.0], name="v")
    assert v.name == "v:0"
    assert v.op.name == "v" and v.op.type == "VariableV2"
    assert v.dtype is fl.float32._as_ref() and v.dtype.name == "float32_ref"
    assert v.shape.as_list() == [2] and v.get_shape().as_list() == [2]
    assert v.initializer.name == "v/Assign" and v.initializer.type == "Assign"
    assert v.value().name == "v/read:0" and v.value().dtype is fl.float32
    assert v._ref() is v._as_graph_element() and v._ref().name == "v:0"
    assert v.initial_value.name == "v/initial_value:0"
    assert _names(fl) == ["v/initial_value:Const", "v:VariableV2", "v/Assign:Assign", "v/read:Identity"]
    assert repr(v) == "<tf.Variable 'v:0' shape=(2,) dtype=float32_ref>"
    assert v.op.get_attr("shape") == (2,) and v.op.get_attr("container") == ""
    assert v.initializer.get_attr("use_locking") is True
    assert v.initializer.get_attr("validate_shape") is True


def test_names_and_dtypes_match_tensorflow(tf1):
    def build(tf):
        a = tf.Variable([1.0, 2.0], name="v")
        b = tf.Variable(3, name="v")
        with tf.name_scope("foo"):
            c = tf.Variable(tf.zeros([2, 3]))
        d = tf.Variable(lambda: [1, 2], dtype=tf.float32, name="lazy")
        e = tf.Variable(np.arange(3, dtype=np.int64))
        return [(x.name, x.dtype.name, x.initial_value.name, tuple(x.shape.as_list())) for x in (a, b, c, d, e)], _names(tf)

    same_graph_facts(tf1, build)


def test_collections_and_initializers(tf1):
    def build(tf):
        tf.Variable(1.0, name="a")
        tf.Variable(2, trainable=False, name="b")
        tf.Variable(3.0, collections=[tf.GraphKeys.LOCAL_VARIABLES], name="c")
        names = [[v.name for v in f()] for f in (tf.global_variables, tf.trainable_variables, tf.local_variables)]
        inits = [tf.global_variables_initializer(), tf.local_variables_initializer(),
                 tf.variables_initializer([]), tf.variables_initializer([], name="mine")]
        return names, [(op.name, op.type, sorted(c.name for c in op.control_inputs)) for op in inits]

    same_graph_facts(tf1, build)


def test_constructor_errors():
    with pytest.raises(ValueError, match="initial_value must be specified"):
        fl.Variable(None)
    with pytest.raises(ValueError, match="collections argument .* must be a list, tuple, or set"):
        fl.Variable(1.0, collections="abc")
    with pytest.raises(ValueError, match="initial_value must have a shape specified"):
        fl.Variable(fl.placeholder(fl.float32))
    with pytest.raises(NotImplementedError, match="use_resource"):
        fl.Variable(1.0, use_resource=True)
    with pytest.raises(ValueError, match="constraint"):
        fl.Variable(1.0, constraint=3)


def test_validate_shape_false_gives_unknown_shape():
    p = fl.placeholder(fl.float32)
    v = fl.Variable(p, validate_shape=False)
    assert v.shape.ndims is None
    with fl.Session() as s:
        s.run(v.initializer, {p: [[1, 2, 3]]})
        np.testing.assert_array_equal(s.run(v), np.array([[1, 2, 3]], np.float32))


def test_variables_ignore_enclosing_control_dependencies():
    c = fl.constant(1.0)
    with fl.control_dependencies([c]):
        v = fl.Variable(2.0)
    assert v.op.control_inputs == [] and v.initializer.control_inputs == []


def test_conversion_reads_the_value():
    v = fl.Variable([1.0, 2.0])
    assert fl.convert_to_tensor(v) is v.value()
    assert fl.convert_to_tensor(v, as_ref=True) is v._ref()
    with pytest.raises(ValueError, match="Incompatible type conversion requested to type 'int32'"):
        fl.convert_to_tensor(v, dtype=fl.int32)
    assert fl.identity(v).dtype is fl.float32


def test_variable_is_hashable_by_identity():
    a, b = fl.Variable(1.0), fl.Variable(1.0)
    d = {a: 1, b: 2}
    assert d[a] == 1 and a != b and a == a
    assert a.ref() == a.ref() and a.ref().deref() is a and {a.ref(): 1}[a.ref()] == 1
    assert bool(a)


# --- running: values against TensorFlow ---------------------------------------------
def _assign_chain(tf):
    v = tf.Variable([1.0, 2.0, 3.0], name="v")
    a = tf.assign(v, [10.0, 20.0, 30.0])
    with tf.control_dependencies([a]):
        b = tf.assign_add(v, [1.0, 1.0, 1.0])
    with tf.control_dependencies([b]):
        c = tf.assign_sub(v, [0.5, 0.5, 0.5])
    return a, b, c


def test_assign_chain_matches_tensorflow(tf1):
    assert_same(tf1, lambda tf: _assign_chain(tf)[2])
    same_graph_facts(tf1, lambda tf: [
        (t.name, t.dtype.name, t.op.get_attr("use_locking")) for t in _assign_chain(tf)
    ] + _names(tf))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "int8", "uint8", "float16"])
def test_assign_add_sub_dtypes(tf1, dtype):
    def build(tf):
        v = tf.Variable(np.array([[1, 2], [3, 4]], dtype=dtype))
        with tf.control_dependencies([tf.assign_add(v, np.ones((2, 2), dtype))]):
            out = tf.assign_sub(v, np.array([[0, 1], [1, 0]], dtype))
        return out

    out = assert_same(tf1, build)
    assert out.dtype == np.dtype(dtype)


def _methods(tf):
    v = tf.Variable([1.0, 2.0], name="v")
    with tf.name_scope("sc"):
        r = v.read_value()
        a = v.assign([3.0, 4.0])
        op = v.assign_add([1.0, 1.0], read_value=False)
    with tf.control_dependencies([op]):
        out = v.read_value()
    return r, a, op, out


def test_variable_methods_match_tensorflow(tf1):
    assert_same(tf1, lambda tf: [_methods(tf)[3]])
    same_graph_facts(tf1, lambda tf: [
        (r.name, a.name, op.name, type(op).__name__, op.get_attr("use_locking"), out.op.inputs[0].name)
        for r, a, op, out in [_methods(tf)]
    ])


@pytest.mark.parametrize(
    "fn,indices,updates",
    [
        ("scatter_update", [0, 2], [[1.0, 1.0], [3.0, 3.0]]),
        ("scatter_add", [1, 1, 0], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
        ("scatter_sub", [2, 2], [[1.0, 2.0], [3.0, 4.0]]),
        ("scatter_mul", [0, 0], [[2.0, 2.0], [3.0, 0.5]]),
        ("scatter_div", [1], [[2.0, 4.0]]),
        ("scatter_min", [0, 1], [[0.5, 9.0], [9.0, -1.0]]),
        ("scatter_max", [0, 1], [[0.5, 9.0], [9.0, -1.0]]),
        ("scatter_add", [[0, 1], [1, 2]], np.ones((2, 2, 2))),
        ("scatter_add", [0, 2], 5.0),  # scalar updates broadcast
        ("scatter_update", np.array([], np.int32), np.zeros((0, 2))),
    ],
)
def test_scatter_ops_match_tensorflow(tf1, fn, indices, updates):
    def build(tf):
        v = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="v")
        return getattr(tf, fn)(v, indices, np.asarray(updates, np.float32))

    assert_same(tf1, build)
    same_graph_facts(tf1, lambda tf: (lambda t: (t.name, t.dtype.name, t.op.get_attr("use_locking"),
                                                 _names(tf)))(build(tf)))


def test_scatter_int_and_int64_indices(tf1):
    def build(tf):
        v = tf.Variable(np.array([7, -7, 9, 10], np.int32))
        a = tf.scatter_div(v, np.array([0, 1, 1], np.int64), np.array([2, 2, -1], np.int32))
        with tf.control_dependencies([a]):
            b = tf.scatter_add(v, np.array([3, 3], np.int64), np.array([1, 1], np.int32))
        return b

    assert_same(tf1, build)


def test_scatter_duplicates_accumulate():
    v = fl.Variable(np.zeros(3, np.float32))
    out = fl.scatter_add(v, [1, 1, 1, 2], [1.0, 2.0, 3.0, 4.0])
    with fl.Session() as s:
        s.run(v.initializer)
        np.testing.assert_array_equal(s.run(out), [0.0, 6.0, 4.0])


def test_variable_scatter_methods_take_indexed_slices_like_values():
    class Slices:
        indices = fl.constant([0])
        values = fl.constant([[5.0, 5.0]])

    v = fl.Variable(np.zeros((2, 2), np.float32))
    a = v.scatter_update(Slices())
    with fl.control_dependencies([a]):
        b = v.scatter_add(([1], [[1.0, 2.0]]))
    with pytest.raises(TypeError, match="sparse_delta is not IndexedSlices"):
        v.scatter_sub([1, 2, 3])
    with fl.Session() as s:
        s.run(v.initializer)
        np.testing.assert_array_equal(s.run(b), [[5.0, 5.0], [1.0, 2.0]])
    assert a.op.get_attr("use_locking") is False


def test_count_up_to(tf1):
    def build(tf):
        v = tf.Variable(0, name="cnt")
        c = v.count_up_to(2)
        return [c.dtype.name, c.name, c.op.get_attr("limit")]

    same_graph_facts(tf1, build)
    v = fl.Variable(np.int64(0))
    c = fl.count_up_to(v, 2)
    with fl.Session() as s:
        s.run(v.initializer)
        got = [s.run(c), s.run(c)]
        assert got == [0, 1] and got[0].dtype == np.int64
        with pytest.raises(errors.OutOfRangeError, match="Reached limit of 2"):
            s.run(c)
        assert s.run(v) == 2


def test_operators_use_the_value(tf1):
    def build(tf):
        v = tf.Variable([1.0, 2.0, 3.0], name="v")
        return [v + 1, 2 * v, v - v, -v, v[1], v[::-1], np.float32(2) * v]

    assert_same(tf1, build)
    same_graph_facts(tf1, lambda tf: (lambda v: [(v + 1).name, (v + 1).op.inputs[0].name])(tf.Variable(1.0)))


# --- errors -----------------------------------------------------------------------
def test_uninitialized_read_names_the_variable(tf1):
    for build in (
        lambda tf: _uninit(tf).value(),
        lambda tf: tf.assign_add(_uninit(tf), [1.0, 1.0]),
        lambda tf: tf.scatter_add(_uninit(tf), [0], [1.0]),
        lambda tf: _uninit(tf),
    ):
        _, err = assert_same_error_no_init(tf1, build)
        assert isinstance(err, errors.FailedPreconditionError)
        assert "Attempting to use uninitialized value myvar" in str(err)


def _uninit(tf):
    return tf.Variable([1.0, 2.0], name="myvar")


def assert_same_error_no_init(tf1, build):
    errs = []
    for mod in (tf1, fl):
        with pytest.raises(Exception) as info:
            run_with(mod, build, init_variables=False)
        errs.append(info.value)
    assert type(errs[0]).__name__ == type(errs[1]).__name__, errs
    return errs


def test_is_variable_initialized_and_report(tf1):
    def build(tf):
        a = tf.Variable(1.0, name="a")
        b = tf.Variable(2, name="b")
        tf.Variable(3.0, name="c", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        return [tf.is_variable_initialized(a), tf.is_variable_initialized(b), tf.report_uninitialized_variables(),
                tf.report_uninitialized_variables([b]), tf.report_uninitialized_variables([])]

    for mod in (tf1, fl):
        got = run_with(mod, build, init_variables=False)
        assert got[0] == np.False_ and got[1] == np.False_
        np.testing.assert_array_equal(got[2], np.array([b"a", b"b", b"c"], dtype=object))
        np.testing.assert_array_equal(got[3], np.array([b"b"], dtype=object))
        assert got[4].shape == (0,) and got[4].dtype == object
    g = fl.Graph()
    with g.as_default():
        a = fl.Variable(1.0, name="a")
        fl.Variable(2, name="b")
        r = fl.report_uninitialized_variables()
        assert r.name.startswith("report_uninitialized_variables/")
        with fl.Session() as s:
            s.run(a.initializer)
            np.testing.assert_array_equal(s.run(r), np.array([b"b"], dtype=object))
            assert s.run(fl.is_variable_initialized(a)) is np.True_


def test_assign_shape_errors(tf1):
    v = fl.Variable([1.0, 2.0], name="v")
    with pytest.raises(ValueError, match=r"Dimension 0 in both shapes must be equal, but are 2 and 3. "
                                         r"Shapes are \[2\] and \[3\]. for 'Assign' \(op: 'Assign'\)"):
        fl.assign(v, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="Shapes must be equal rank, but are 1 and 2 for 'AssignAdd'"):
        fl.assign_add(v, [[1.0, 2.0]])
    with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal, but are 3 and 2.*ScatterUpdate"):
        fl.scatter_update(v, [0, 1], [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="requires that input 'ref' be a mutable tensor"):
        fl.assign(fl.constant([1.0]), [2.0])
    with pytest.raises(TypeError, match="int32"):
        fl.assign_add(v, fl.constant([1, 2]))
    w = fl.assign(v, [1.0, 2.0, 3.0], validate_shape=False)
    assert w.shape.as_list() == [3]

    def runtime(tf):
        v = tf.Variable([1.0, 2.0], name="v")
        p = tf.placeholder(tf.float32)
        return tf.assign(v, p), {p: [1.0, 2.0, 3.0]}

    _, err = assert_same_error(tf1, runtime)
    assert "Assign requires shapes of both tensors to match. lhs shape= [2] rhs shape= [3]" in str(err)


def test_runtime_update_errors(tf1):
    def add_bad(tf):
        v = tf.Variable([1.0, 2.0], name="v")
        p = tf.placeholder(tf.float32)
        return tf.assign_add(v, p), {p: 1.0}

    _, err = assert_same_error(tf1, add_bad)
    assert "Parameters and update must be the same size" in str(err)

    def oob(tf):
        v = tf.Variable([1.0, 2.0, 3.0], name="v")
        p = tf.placeholder(tf.int32)
        return tf.scatter_update(v, p, [1.0, 2.0]), {p: [0, 5]}

    _, err = assert_same_error(tf1, oob)
    assert "indices[1] = 5 is not in [0, 3)" in str(err)

    def neg(tf):
        v = tf.Variable([1.0, 2.0, 3.0], name="v")
        p = tf.placeholder(tf.int32)
        return tf.scatter_add(v, p, [1.0, 2.0]), {p: [-1, 0]}

    _, err = assert_same_error(tf1, neg)
    assert "indices[0] = -1 is not in [0, 3)" in str(err)

    def scalar_index(tf):
        v = tf.Variable(np.zeros((3, 2), np.float32), name="v")
        p = tf.placeholder(tf.int32, [])
        return tf.scatter_add(v, p, [1.0, 2.0]), {p: 5}

    _, err = assert_same_error(tf1, scalar_index)
    assert "indices = 5 is not in [0, 3)" in str(err)

    def nd_index(tf):
        v = tf.Variable(np.zeros((3, 2), np.float32), name="v")
        return tf.scatter_add(v, [[0, 4]], np.ones((1, 2, 2), np.float32))

    _, err = assert_same_error(tf1, nd_index)
    assert "indices[0,1] = 4 is not in [0, 3)" in str(err)

    def bad_updates(tf):
        v = tf.Variable(np.zeros((2, 2), np.float32), name="v")
        p = tf.placeholder(tf.float32)
        return tf.scatter_add(v, [1], p), {p: [[1.0, 2.0, 3.0]]}

    _, err = assert_same_error(tf1, bad_updates)
    assert ("Must have updates.shape = indices.shape + params.shape[1:] or updates.shape = [], got "
            "updates.shape [1,3], indices.shape [1], params.shape [2,2]") in str(err)


def test_assign_after_validate_shape_false_checks_current_shape():
    v = fl.Variable([1.0, 2.0])
    p = fl.placeholder(fl.float32)
    grow = fl.assign(v, p, validate_shape=False)
    strict = fl.assign(v, p)
    with fl.Session() as s:
        s.run(v.initializer)
        s.run(grow, {p: [1.0, 2.0, 3.0]})
        with pytest.raises(errors.InvalidArgumentError, match=r"lhs shape= \[3\] rhs shape= \[2\]"):
            s.run(strict, {p: [5.0, 6.0]})
        np.testing.assert_array_equal(s.run(v), [1.0, 2.0, 3.0])


# --- state semantics ----------------------------------------------------------------
@pytest.mark.parametrize("path", ["straight_line", "executor"])
def test_failed_step_leaves_variables_unchanged(path):
    v = fl.Variable([1.0, 2.0], name="v")
    w = fl.Variable([0.0, 0.0], name="w")
    a = fl.assign(v, [5.0, 5.0])
    b = fl.assign_add(w, [1.0, 1.0])
    with fl.control_dependencies([a, b]):
        bad = fl.scatter_update(v, [7], [1.0])
    # A traced run goes through the dataflow executor instead of the generated function.
    kw = {} if path == "straight_line" else dict(
        options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE), run_metadata=fl.RunMetadata())
    with fl.Session() as s:
        s.run(fl.global_variables_initializer(), **kw)
        with pytest.raises(errors.InvalidArgumentError, match=r"indices\[0\] = 7 is not in \[0, 2\)"):
            s.run(bad, **kw)
        np.testing.assert_array_equal(s.run(v, **kw), [1.0, 2.0])
        np.testing.assert_array_equal(s.run(w, **kw), [0.0, 0.0])
        np.testing.assert_array_equal(s.run(b, **kw), [1.0, 1.0])


def test_values_persist_across_runs_and_are_fresh_in_a_new_session():
    v = fl.Variable(0, name="counter")
    inc = fl.assign_add(v, 1)
    with fl.Session() as s:
        s.run(v.initializer)
        for _ in range(3):
            s.run(inc)
        assert s.run(v) == 3
    with fl.Session() as s:
        with pytest.raises(errors.FailedPreconditionError, match="uninitialized value counter"):
            s.run(v)
        s.run(v.initializer)
        assert s.run(inc) == 1


def test_fetched_value_is_a_snapshot_and_feeds_are_copied():
    v = fl.Variable(np.zeros(3, np.float32))
    p = fl.placeholder(fl.float32, [3])
    a = fl.assign(v, p)
    feed = np.array([1.0, 2.0, 3.0], np.float32)
    with fl.Session() as s:
        s.run(a, {p: feed})
        feed[0] = 100.0  # the variable must not alias the caller's array
        got = s.run(v)
        got[1] = -1.0  # nor hand out its own storage
        np.testing.assert_array_equal(s.run(v), [1.0, 2.0, 3.0])
        before = s.run(v.value())
        s.run(fl.assign_add(v, [1.0, 1.0, 1.0]))
        np.testing.assert_array_equal(before, [1.0, 2.0, 3.0])


def test_locked_concurrent_increments_are_exact():
    v = fl.Variable(0, name="total")
    inc = fl.assign_add(v, 1, use_locking=True)
    with fl.Session() as s:
        s.run(v.initializer)
        step = s.make_callable(inc.op)

        def work():
            for _ in range(200):
                step()

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert s.run(v) == 1600


def test_locked_concurrent_scatter_adds_are_exact():
    v = fl.Variable(np.zeros(4, np.int64))
    inc = fl.scatter_add(v, [0, 3, 3], np.array([1, 1, 1], np.int64), use_locking=True)
    with fl.Session() as s:
        s.run(v.initializer)

        def work():
            for _ in range(100):
                s.run(inc.op)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        np.testing.assert_array_equal(s.run(v), [400, 0, 0, 800])


def test_eval_load_and_initialized_value():
    v = fl.Variable([1, 2], name="v")
    w = fl.Variable(v.initialized_value() * 2, name="w")
    with fl.Session() as s:
        s.run(fl.global_variables_initializer())
        np.testing.assert_array_equal(v.eval(s), [1, 2])
        np.testing.assert_array_equal(w.eval(s), [2, 4])
        v.load([5, 6], s)
        with s.as_default():
            np.testing.assert_array_equal(v.eval(), [5, 6])
    with pytest.raises(ValueError, match="Either session argument should be provided"):
        v.load([1, 2])


def test_shared_name_shares_state():
    a = fl.Variable(1.0, name="a")
    b = fl.Variable(2.0, name="b")
    shared = fl.ops.state_ops.variable_op_v2([], fl.float32, name="alias", shared_name="a")
    with fl.Session() as s:
        s.run([a.initializer, b.initializer])
        assert s.run(shared) == 1.0


def test_state_ops_are_not_differentiable():
    from flowlab.ops.gradient_registry import get_gradient_function

    for t in ("VariableV2", "Assign", "AssignAdd", "AssignSub", "ScatterUpdate", "ScatterAdd",
              "ScatterSub", "ScatterMul", "ScatterDiv", "ScatterMin", "ScatterMax",
              "IsVariableInitialized", "CountUpTo"):
        assert get_gradient_function(t) is None


_SCATTER_REFS = {
    "scatter_add": np.add.at, "scatter_sub": np.subtract.at, "scatter_mul": np.multiply.at,
    "scatter_min": np.minimum.at, "scatter_max": np.maximum.at,
}


@given(
    fn=st.sampled_from(sorted(_SCATTER_REFS)),
    data=st.data(),
)
@settings(max_examples=40, deadline=None)
def test_scatter_ops_against_numpy_reference(fn, data):
    params = data.draw(hnp.arrays(np.int64, (5, 3), elements=st.integers(-50, 50)))
    n = data.draw(st.integers(0, 8))
    idx = data.draw(hnp.arrays(np.int32, (n,), elements=st.integers(0, 4)))
    upd = data.draw(hnp.arrays(np.int64, (n, 3), elements=st.integers(-5, 5)))
    g = fl.Graph()
    with g.as_default():
        v = fl.Variable(params)
        pi = fl.placeholder(fl.int32, [None])
        pu = fl.placeholder(fl.int64, [None, 3])
        out = getattr(fl, fn)(v, pi, pu)
        with fl.Session() as s:
            s.run(v.initializer)
            got = s.run(out, {pi: idx, pu: upd})
    want = params.copy()
    _SCATTER_REFS[fn](want, idx, upd)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64


def test_feeding_a_variable_replaces_its_value_for_the_step(tf1):
    def build(tf):
        v = tf.Variable([1.0, 2.0])
        return [v * 2, v], {v: [5.0, 6.0]}

    assert_same(tf1, build)
    v = fl.Variable([1.0, 2.0])
    with fl.Session() as s:
        np.testing.assert_array_equal(s.run(v * 2, {v: [5.0, 6.0]}), [10.0, 12.0])
        with pytest.raises(errors.FailedPreconditionError):
            s.run(v)  # the feed did not initialize it


@pytest.mark.parametrize(
    "fn,indices,updates",
    [
        ("scatter_nd_update", [[0], [2]], [[1.0, 2.0], [3.0, 4.0]]),
        ("scatter_nd_add", [[0, 1], [0, 1], [2, 0]], [5.0, 6.0, 7.0]),
        ("scatter_nd_sub", [[[1, 1]], [[2, 1]]], [[1.0], [2.0]]),
        ("scatter_nd_add", np.array([[1]], np.int64), [[9.0, 9.0]]),
    ],
)
def test_scatter_nd_ops_match_tensorflow(tf1, fn, indices, updates):
    def build(tf):
        v = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="v")
        return getattr(tf, fn)(v, indices, np.asarray(updates, np.float32))

    assert_same(tf1, build)
    same_graph_facts(tf1, lambda tf: (lambda t: (t.name, t.op.get_attr("use_locking"), _names(tf)))(build(tf)))


def test_scatter_nd_errors(tf1):
    def build_error(tf):
        v = tf.Variable(np.zeros((3, 2), np.float32))
        try:
            tf.scatter_nd_add(v, [[0, 1]], [5.0, 6.0])
        except ValueError as e:
            return str(e).split(" for ")[0]

    same_graph_facts(tf1, build_error)

    def oob(tf):
        v = tf.Variable(np.zeros((3, 2), np.float32), name="v")
        p = tf.placeholder(tf.int32)
        return tf.scatter_nd_sub(v, p, [5.0]), {p: [[0, 7]]}

    _, err = assert_same_error(tf1, oob)
    assert "indices[0] = [0, 7] does not index into shape [3,2]" in str(err)


def test_variable_scatter_nd_methods():
    v = fl.Variable(np.zeros((2, 2), np.float32))
    a = v.scatter_nd_update([[0, 0]], [1.0])
    with fl.control_dependencies([a]):
        b = v.scatter_nd_add([[1, 1], [1, 1]], [2.0, 3.0])
    assert a.op.get_attr("use_locking") is True and b.op.get_attr("use_locking") is True
    with fl.Session() as s:
        s.run(v.initializer)
        np.testing.assert_array_equal(s.run(b), [[1.0, 0.0], [0.0, 5.0]])


def test_assert_variables_initialized(tf1):
    def build(tf):
        a = tf.Variable(1.0, name="a")
        tf.Variable([1, 2], name="b")
        r = tf.assert_variables_initialized()
        r1 = tf.assert_variables_initialized([a])
        return r, r1

    same_graph_facts(tf1, lambda tf: [t.name for t in build(tf)] + _names(tf))
    assert_same(tf1, build)
    assert_same_error_no_init(tf1, lambda tf: build(tf)[0])
    with fl.Graph().as_default():
        assert fl.assert_variables_initialized() is None
