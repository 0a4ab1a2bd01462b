"""Session: fetch structures, feeds, plans and their cache, errors, lifetime."""

from __future__ import annotations

import collections
import random
import threading

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from tests.runtime import testing_ops as T


def _consts():
    a = fl.constant(np.array([1.0, 2.0], np.float32), name="a")
    b = fl.constant(np.array([10.0, 20.0], np.float32), name="b")
    return a, b


# --- fetches ---------------------------------------------------------------------------
def test_fetch_structures_are_rebuilt():
    a, b = _consts()
    c = T.plus(a, b)
    Pair = collections.namedtuple("Pair", "x y")
    with fl.Session() as s:
        out = s.run({"sum": c, "both": [a, (b, Pair(a, c))], "op": c.op})
    np.testing.assert_array_equal(out["sum"], [11, 22])
    assert isinstance(out["both"], list) and isinstance(out["both"][1], tuple)
    assert isinstance(out["both"][1][1], Pair)
    np.testing.assert_array_equal(out["both"][1][1].y, [11, 22])
    assert out["op"] is None


def test_fetch_by_name_and_duplicates():
    a, b = _consts()
    c = T.plus(a, b, name="c")
    with fl.Session() as s:
        x, y, z = s.run(["c:0", c, "a:0"])
        assert s.run("c") is None  # an op name fetches the op
    np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(z, [1, 2])


def test_scalar_fetch_is_numpy_scalar():
    with fl.Session() as s:
        v = s.run(fl.constant(3.5))
    assert type(v) is np.float32 and v == 3.5


def test_fetched_arrays_are_writable_copies_of_constants():
    a, _ = _consts()
    with fl.Session() as s:
        v = s.run(a)
        v[0] = 100.0  # must not corrupt the graph's constant
        np.testing.assert_array_equal(s.run(a), [1, 2])


def test_bad_fetches():
    with fl.Session() as s:
        with pytest.raises(TypeError, match="invalid type"):
            s.run(None)
        with pytest.raises(TypeError, match="invalid type"):
            s.run(3)
        with pytest.raises(ValueError, match="cannot be interpreted as a Tensor"):
            s.run("nope:0")


# --- feeds -----------------------------------------------------------------------------
def test_feed_converts_dtype_and_checks_shape():
    x = fl.placeholder(fl.float32, [2], name="x")
    y = fl.identity(x)
    with fl.Session() as s:
        v = s.run(y, {x: [1, 2]})
        assert v.dtype == np.float32
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\) for Tensor x:0, which has shape \(2,\)"):
            s.run(y, {x: [1, 2, 3]})
        with pytest.raises(TypeError, match="cannot be a tf.Tensor"):
            s.run(y, {x: fl.constant([1.0, 2.0])})


def test_feed_intermediate_tensor_cuts_graph():
    x = fl.placeholder(fl.float32, [2], name="x")
    mid = T.plus(x, x, name="mid")
    out = T.plus(mid, mid, name="out")
    with fl.Session() as s:
        # x is never fed: feeding `mid` prunes the placeholder away.
        np.testing.assert_array_equal(s.run(out, {mid: [1.0, 2.0]}), [2, 4])
        # A fed tensor that is also fetched returns the fed value.
        np.testing.assert_array_equal(s.run(mid, {mid: [5.0, 6.0]}), [5, 6])


def test_fed_placeholder_as_control_input_is_satisfied_by_its_feed():
    # TensorFlow moves a fed op's control edges to the feed: the placeholder's own
    # kernel ("You must feed a value") never runs, on one device or several.
    x = fl.placeholder(fl.float32, [], name="x")
    c = fl.constant(3.0)
    with fl.control_dependencies([x]):
        y = fl.identity(c)
    with fl.device("/cpu:1"):
        z = y * 2.0
    with fl.Session() as s:
        assert s.run(y, {x: 1.0}) == 3.0
    with fl.Session(config=fl.ConfigProto(device_count={"CPU": 2})) as s:
        assert s.run(z, {x: 1.0}) == 6.0
    with fl.Session() as s, pytest.raises(errors.InvalidArgumentError, match="must feed a value"):
        # Unfed, the control edge needs the placeholder to run.  (TensorFlow with its
        # optimizers off raises the same; its default constant folding drops the edge.)
        s.run(y)


def test_feed_by_name_and_string_dtype():
    x = fl.placeholder(fl.string, [None], name="s")
    y = fl.identity(x)
    with fl.Session() as s:
        out = s.run(y, {"s:0": ["ab", b"cd"]})
    assert list(out) == [b"ab", b"cd"]


def test_unfed_placeholder_error_names_op_and_definition():
    x = fl.placeholder(fl.float32, [None, 3], name="inputs")
    y = fl.identity(x, name="y")
    with fl.Session() as s:
        with pytest.raises(errors.InvalidArgumentError) as ei:
            s.run(y)
    msg = str(ei.value)
    assert "You must feed a value for placeholder tensor 'inputs' with dtype float32 and shape [?,3]" in msg
    assert "Placeholder 'inputs'" in msg and "device:CPU:0" in msg
    assert "test_session.py" in msg
    assert ei.value.op is x.op


# --- plans -----------------------------------------------------------------------------
def test_plan_is_cached_and_invalidated_by_graph_version():
    a, b = _consts()
    c = T.plus(a, b)
    with fl.Session() as s:
        s.run(c)
        s.run(c)
        assert len(s._plans) == 1
        T.plus(c, c)  # extending the graph invalidates
        s.run(c)
        assert len(s._plans) == 2


def test_straight_line_and_dataflow_paths_agree():
    x = fl.placeholder(fl.float32, [3], name="x")
    ys = [x]
    for i in range(30):
        ys.append(T.plus(ys[-1], ys[i // 2]))
    feed = {x: np.arange(3, dtype=np.float32)}
    with fl.Session() as s:
        fast = s.run(ys[-1], feed)
        events = []
        s.set_listener(events.append)
        slow = s.run(ys[-1], feed)
    np.testing.assert_array_equal(fast, slow)
    assert sum(e.kind == "op_end" for e in events) == 30


def test_make_callable_with_feeds():
    x = fl.placeholder(fl.float32, [None], name="x")
    y = T.plus(x, x)
    with fl.Session() as s:
        f = s.make_callable([y, {"x2": y}], [x])
        out = f(np.array([1.0, 2.0], np.float32))
        np.testing.assert_array_equal(out[0], [2, 4])
        np.testing.assert_array_equal(out[1]["x2"], [2, 4])
        with pytest.raises(TypeError, match="takes 1 feed values, got 0"):
            f()
        g = s.make_callable(y.op)
        with pytest.raises(errors.InvalidArgumentError, match="must feed"):
            g()


# --- errors and lifetime ---------------------------------------------------------------
def test_kernel_exception_becomes_invalid_argument_naming_op():
    a, _ = _consts()
    y = T.fail(a, message="bad input", name="layer/fail")
    with fl.Session() as s:
        with pytest.raises(errors.InvalidArgumentError) as ei:
            s.run(y)
    assert "TestingFail 'layer/fail'" in str(ei.value)
    assert "bad input" in str(ei.value)


def test_closed_session_refuses_to_run():
    a, _ = _consts()
    s = fl.Session()
    s.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        s.run(a)


def test_session_context_makes_graph_and_session_default():
    g = fl.Graph()
    with g.as_default():
        c = fl.constant(2.0)
    with fl.Session(graph=g) as s:
        assert fl.get_default_graph() is g
        assert fl.get_default_session() is s
        assert c.eval() == 2.0
    assert fl.get_default_session() is None


def test_eval_without_default_session():
    c = fl.constant(1.0)
    with pytest.raises(ValueError, match="No default session"):
        c.eval()


def test_interactive_session_is_default_until_closed():
    c = fl.constant([1, 2])
    s = fl.InteractiveSession()
    try:
        np.testing.assert_array_equal(c.eval(), [1, 2])
        assert fl.no_op().run() is None
    finally:
        s.close()
    assert fl.get_default_session() is None


def test_tensor_from_another_graph_is_rejected():
    g = fl.Graph()
    with g.as_default():
        c = fl.constant(1.0)
    with fl.Session() as s:
        with pytest.raises(ValueError):
            s.run(c)


def test_list_devices_and_virtual_cpus():
    with fl.Session(config=fl.ConfigProto(device_count={"CPU": 3})) as s:
        names = [d.name for d in s.list_devices()]
    assert names == [f"/job:localhost/replica:0/task:0/device:CPU:{i}" for i in range(3)]


def test_unsatisfiable_device_request():
    with fl.device("/gpu:0"):
        c = fl.constant(1.0, name="on_gpu")
    with fl.Session() as s:
        with pytest.raises(errors.InvalidArgumentError, match="Cannot assign a device for operation on_gpu: "):
            s.run(c)
    with fl.Session(config=fl.ConfigProto(allow_soft_placement=True)) as s:
        assert s.run(c) == 1.0


def test_concurrent_runs_from_threads():
    x = fl.placeholder(fl.float32, [], name="x")
    y = T.plus(x, x)
    results: dict[int, float] = {}
    with fl.Session() as s:
        def work(i: int) -> None:
            for _ in range(200):
                results[i] = float(s.run(y, {x: float(i)}))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == {i: 2.0 * i for i in range(8)}


def test_run_metadata_full_trace_has_node_stats():
    a, b = _consts()
    c = T.plus(a, b, name="c")
    md = fl.RunMetadata()
    with fl.Session() as s:
        s.run(c, options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE), run_metadata=md)
    names = [n.node_name for d in md.step_stats.dev_stats for n in d.node_stats]
    assert set(names) == {"a", "b", "c"}
    assert md.step_stats.dev_stats[0].device.endswith("device:CPU:0")


def test_config_rejects_unknown_fields():
    with pytest.raises(AttributeError):
        fl.ConfigProto(no_such_field=1)
    cfg = fl.ConfigProto()
    cfg.gpu_options.allow_growth = True
    assert cfg.gpu_options.allow_growth is True


def test_floating_point_errors_are_silent_inside_steps_only():
    import warnings

    x = fl.placeholder(fl.float32, [2])
    y = fl.log(x) + fl.constant(1.0) / x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with fl.Session() as s:
            out = s.run(y, {x: [0.0, 1.0]})
            s.set_listener(lambda e: None)
            out2 = s.run(y, {x: [0.0, 1.0]})
    assert np.isnan(out[0]) or np.isinf(out[0])
    np.testing.assert_array_equal(out, out2)
    assert np.geterr()["divide"] == "warn"  # the user's settings are untouched


def test_fetching_a_fed_tensor_returns_the_fed_array(tf1):
    from tests.difftest import assert_same

    def build(tf):
        c = tf.constant(1.0)
        x = tf.placeholder(tf.int32, [])
        return [c, x, x + 1], {c: 10.0, x: 3}

    out = assert_same(tf1, build)
    assert isinstance(out[0], np.ndarray) and out[0].shape == ()
    assert type(out[2]) is np.int32


def test_a_fetched_fed_string_is_an_object_array_of_its_bytes_as_tensorflow(tf1):
    # Trailing NULs kept: a fixed-width bytes array ('S2') would drop them.
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            p = tf.placeholder(tf.string, [])
            with tf.Session() as sess:
                for got in (sess.run(p, {p: b"a\x00"}),
                            sess.make_callable(p, [p])(np.array(b"a\x00", dtype=object))):
                    assert isinstance(got, np.ndarray) and got.dtype == object, (tf, got)
                    assert got.shape == () and got[()] == b"a\x00"


def test_interactive_session_makes_its_graph_default_until_closed():
    g = fl.Graph()
    with g.as_default():
        c = fl.constant(5)
    s = fl.InteractiveSession(graph=g)
    try:
        assert fl.get_default_graph() is g
        assert c.eval() == 5
    finally:
        s.close()
    assert fl.get_default_graph() is not g


def test_close_cancels_a_step_driven_op_by_op() -> None:
    """A step started with start_execution (a Stepper's) is cancelled by close()."""
    g = fl.Graph()
    with g.as_default():
        q = fl.FIFOQueue(1, fl.float32)
        y = q.dequeue() + 1.0
    sess = fl.Session(graph=g)
    ex, _ = sess.start_execution(y)
    ex.start()
    while ex.ready_nodes():
        ex.run_one()
    assert ex.outstanding == 1  # the dequeue waits on the empty queue
    sess.close()
    ex.wait_one()
    with pytest.raises(fl.errors.CancelledError, match="closed"):
        ex.finish()


def test_session_optimization_reports_folded_ops() -> None:
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, name="x")
        c = fl.multiply(fl.constant(2.0), 3.0, name="c")
        y = fl.add(fl.add(x, c), 1.0, name="y")
        z = fl.add(y, 1.0, name="z")
    with fl.Session(graph=g) as sess:
        opt = sess.optimization(z, [x])
        assert sess.run(z, {x: 1.0}) == 9.0
    assert "c" in opt.folded


def test_a_feed_shape_is_checked_until_accepted_and_every_other_shape_still_fails():
    """The feed converter remembers the last shape it accepted (a training loop's one
    shape is checked once): a different, wrong shape after it still fails."""
    x = fl.placeholder(fl.float32, [None, 3], name="x")
    y = x * 2.0
    with fl.Session() as sess:
        step = sess.make_callable(y, [x])
        for rows in (2, 2, 5):
            assert step(np.ones((rows, 3), np.float32)).shape == (rows, 3)
        for bad in ((5, 4), (3,), (5, 3, 1)):
            with pytest.raises(ValueError, match=r"Cannot feed value of shape .* for Tensor x:0"):
                step(np.ones(bad, np.float32))
        assert step(np.ones((5, 3), np.float32)).shape == (5, 3)


def test_a_scalar_fed_to_a_matrix_placeholder_is_refused_as_tensorflow(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [None, None], name="x")
            y = x * 2.0
            with tf.Session() as s, pytest.raises(ValueError, match=r"Cannot feed value of shape \(\) for Tensor"):
                s.run(y, {x: 1.0})
            with tf.Session() as s:  # and the first fed shape that fits is not a free pass later
                assert s.run(y, {x: [[1.0]]}).shape == (1, 1)
                with pytest.raises(ValueError, match="Cannot feed value of shape"):
                    s.run(y, {x: 3.0})


def test_a_session_leaves_pythons_random_stream_alone():
    """TF1 programs seed Python's `random` for their data (the tutorials' toy sequences,
    word2vec's batches); TensorFlow draws its ids in C++, so a flowlab session must not
    draw from the same stream."""
    random.seed(3)
    expected = [random.random() for _ in range(3)]
    random.seed(3)
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None])
        v = fl.Variable(fl.ones([2]))
        y = fl.reduce_sum(x) + fl.reduce_sum(v)
        with fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2})) as sess:
            sess.run(v.initializer)
            sess.run(y, {x: [1.0, 2.0]})
    assert [random.random() for _ in range(3)] == expected


def test_a_tuple_key_feeds_each_tensor_from_its_place_in_the_value_as_tensorflow(tf1):
    # An RNN's state fed back: {initial_state: state} with an LSTMStateTuple of tensors.
    import collections

    Pair = collections.namedtuple("Pair", "c h")
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            a, b, c = (tf.placeholder(tf.float32, [2]) for _ in range(3))
            total = a + b * 10.0 + c * 100.0
            with tf.Session() as sess:
                got = sess.run(total, {(a, Pair(b, c)): (np.ones(2), Pair(np.array([1.0, 2.0]), np.zeros(2)))})
                np.testing.assert_array_equal(got, [11.0, 21.0])
                with pytest.raises(ValueError, match=r"Could not flatten dictionary\. Key had 2 elements, "
                                                     r"but value had 1 elements"):
                    sess.run(a + b, {(a, b): np.ones(2)})
