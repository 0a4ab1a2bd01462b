"""tf.data sources and transformations against TensorFlow 2.21's tf.compat.v1: element
values, dtypes, order, static types and shapes, and OutOfRangeError at the end."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.data.datatest import assert_same_elements, drain

CASES = {
    "slices_tuple": lambda tf: tf.data.Dataset.from_tensor_slices(([1, 2, 3], [4.0, 5.0, 6.0])),
    "slices_dict": lambda tf: tf.data.Dataset.from_tensor_slices(
        {"b": np.arange(6).reshape(3, 2), "a": np.array([b"x", b"y", b"z"])}),
    "from_tensors": lambda tf: tf.data.Dataset.from_tensors((np.ones((2, 3), np.float32), 7)),
    "range_1": lambda tf: tf.data.Dataset.range(5),
    "range_3": lambda tf: tf.data.Dataset.range(10, 2, -3),
    "range_int32": lambda tf: tf.data.Dataset.range(1, 4, output_type=tf.int32),
    "zip": lambda tf: tf.data.Dataset.zip((tf.data.Dataset.range(3),
                                           tf.data.Dataset.range(10, 20).map(lambda x: x * 2))),
    "zip_dict": lambda tf: tf.data.Dataset.zip({"p": tf.data.Dataset.range(4),
                                                "q": tf.data.Dataset.range(2)}),
    "map_tuple": lambda tf: tf.data.Dataset.from_tensor_slices(([1, 2, 3], [4.0, 5.0, 6.0])).map(
        lambda a, b: (tf.cast(a, tf.float32) * b, a + 1)),
    "map_dict": lambda tf: tf.data.Dataset.from_tensor_slices({"x": [1.0, 2.0]}).map(
        lambda d: {"y": d["x"] * 3.0, "z": tf.shape(d["x"])}),
    "map_parallel": lambda tf: tf.data.Dataset.range(20).map(lambda x: x * x, num_parallel_calls=4),
    "map_capture": lambda tf: (lambda w: tf.data.Dataset.range(4).map(
        lambda x: tf.cast(x, tf.float32) * w))(tf.constant(2.5)),
    "map_list_to_tuple": lambda tf: tf.data.Dataset.range(3).map(lambda x: [x, x + 1]),
    "batch": lambda tf: tf.data.Dataset.range(10).batch(4),
    "batch_drop": lambda tf: tf.data.Dataset.range(10).batch(4, drop_remainder=True),
    "batch_strings": lambda tf: tf.data.Dataset.from_tensor_slices([b"a", b"bb", b"c"]).batch(2),
    "padded_batch": lambda tf: tf.data.Dataset.range(1, 6).map(
        lambda x: tf.fill([x], x)).padded_batch(2, padded_shapes=[None]),
    "padded_batch_fixed": lambda tf: tf.data.Dataset.range(1, 5).map(
        lambda x: (tf.fill([x], tf.cast(x, tf.float32)), x)).padded_batch(
        3, padded_shapes=([6], []), padding_values=(-1.0, np.int64(0)), drop_remainder=True),
    "unbatch": lambda tf: tf.data.Dataset.range(7).batch(3).unbatch(),
    "repeat": lambda tf: tf.data.Dataset.range(3).repeat(3),
    "repeat_forever_take": lambda tf: tf.data.Dataset.range(3).repeat().take(8),
    "repeat_empty_forever": lambda tf: tf.data.Dataset.range(0).repeat(),
    "take_skip": lambda tf: tf.data.Dataset.range(10).skip(2).take(5),
    "take_all": lambda tf: tf.data.Dataset.range(4).take(-1),
    "skip_all": lambda tf: tf.data.Dataset.range(4).skip(-1),
    "filter": lambda tf: tf.data.Dataset.range(10).filter(lambda x: tf.equal(x % 3, 0)),
    "flat_map": lambda tf: tf.data.Dataset.range(1, 4).flat_map(
        lambda x: tf.data.Dataset.from_tensors(x).repeat(x)),
    "interleave": lambda tf: tf.data.Dataset.range(1, 6).interleave(
        lambda x: tf.data.Dataset.from_tensors(x).repeat(x), cycle_length=2, block_length=2),
    "interleave_block1": lambda tf: tf.data.Dataset.range(4).interleave(
        lambda x: tf.data.Dataset.range(x * 10, x * 10 + 3), cycle_length=3),
    "interleave_default_cycle": lambda tf: tf.data.Dataset.range(1, 5).interleave(
        lambda x: tf.data.Dataset.range(x).map(lambda v: v + x * 100)),
    "padded_batch_default_shapes": lambda tf: tf.data.Dataset.range(1, 5).map(
        lambda x: (tf.fill([x, 2], tf.cast(x, tf.int32)), tf.fill([x], b"s"))).padded_batch(3),
    "nested_zip_map": lambda tf: tf.data.Dataset.zip(
        (tf.data.Dataset.range(3), (tf.data.Dataset.range(3, 6), tf.data.Dataset.range(6, 9)))
    ).map(lambda a, bc: {"sum": a + bc[0] + bc[1], "b": bc[1]}),
    "map_with_cond": lambda tf: tf.data.Dataset.range(6).map(
        lambda x: tf.cond(x > 2, lambda: x * 10, lambda: -x)),
    "concatenate": lambda tf: tf.data.Dataset.range(3).map(lambda x: tf.fill([2], x)).concatenate(
        tf.data.Dataset.range(2).map(lambda x: tf.fill([x + 1], x * 10))),
    "apply": lambda tf: tf.data.Dataset.range(5).apply(lambda d: d.skip(2)),
    "cache_repeat": lambda tf: tf.data.Dataset.range(4).map(lambda x: x + 1).cache().repeat(2),
    "prefetch": lambda tf: tf.data.Dataset.range(50).map(lambda x: x * 2).prefetch(3),
    "prefetch_autotune": lambda tf: tf.data.Dataset.range(5).prefetch(tf.data.experimental.AUTOTUNE),
    "shuffle_seeded": lambda tf: tf.data.Dataset.range(10).shuffle(4, seed=1),
    "shuffle_repeat": lambda tf: tf.data.Dataset.range(10).shuffle(4, seed=1).repeat(3),
    "shuffle_fixed": lambda tf: tf.data.Dataset.range(10).shuffle(
        4, seed=1, reshuffle_each_iteration=False).repeat(2),
    "shuffle_big_buffer": lambda tf: tf.data.Dataset.range(100).shuffle(1000, seed=42),
    "shuffle_small_buffer": lambda tf: tf.data.Dataset.range(30).shuffle(2, seed=7),
    "shuffle_batch": lambda tf: tf.data.Dataset.from_tensor_slices(
        (np.arange(40, dtype=np.float32).reshape(20, 2), np.arange(20))).shuffle(
        8, seed=3).batch(6),
    "slices_batch_drop": lambda tf: tf.data.Dataset.from_tensor_slices(
        np.arange(22, dtype=np.float64).reshape(11, 2)).batch(4, drop_remainder=True),
    "slices_shuffle_batch_strings": lambda tf: tf.data.Dataset.from_tensor_slices(
        (np.array([b"s%d" % i for i in range(13)]), np.arange(13))).shuffle(
        5, seed=11).batch(4).repeat(2),
    "shuffle_repeat_batch_across_passes": lambda tf: tf.data.Dataset.from_tensor_slices(
        np.arange(22, dtype=np.int32).reshape(11, 2)).shuffle(4, seed=5).repeat(3).batch(5),
    "take_skip_batch_rows": lambda tf: tf.data.Dataset.from_tensor_slices(
        np.arange(30.0)).skip(4).take(17).batch(6, drop_remainder=True),
    "skip_all_batch_rows": lambda tf: tf.data.Dataset.from_tensor_slices(np.arange(5)).skip(-1).batch(2),
    "empty_repeat_forever_batch": lambda tf: tf.data.Dataset.from_tensor_slices(
        np.zeros((0, 2), np.float32)).repeat().batch(3),
    "shuffle_then_map": lambda tf: tf.data.Dataset.range(12).map(lambda x: x * 3).shuffle(
        5, seed=123).batch(5),
    "from_generator": lambda tf: tf.data.Dataset.from_generator(
        lambda: iter([(1, [1.0, 2.0]), (2, [3.0, 4.0])]), (tf.int32, tf.float32),
        (tf.TensorShape([]), tf.TensorShape([2]))),
    "from_generator_strings": lambda tf: tf.data.Dataset.from_generator(
        lambda: (s for s in ["ab", "c"]), tf.string),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_elements_as_tensorflow(tf1, name):
    assert_same_elements(tf1, CASES[name])


@pytest.mark.parametrize("name", ["shuffle_seeded", "shuffle_repeat", "map_capture", "batch"])
def test_initializable_iterator_same_as_tensorflow(tf1, name):
    assert_same_elements(tf1, CASES[name], initializable=True)


def test_shuffle_with_graph_seed_matches_tensorflow(tf1):
    def build(tf):
        tf.set_random_seed(5)
        return tf.data.Dataset.range(20).shuffle(6).shuffle(3).repeat(2)

    assert_same_elements(tf1, build)


def test_shuffle_without_seed_is_a_permutation():
    got, _, _ = drain(fl, lambda tf: tf.data.Dataset.range(50).shuffle(10))
    assert sorted(int(v) for v in got) == list(range(50))


def _reinit(tf, ds_fn):
    g = tf.Graph()
    with g.as_default():
        it = tf.data.make_initializable_iterator(ds_fn(tf))
        x = it.get_next()
        with tf.Session() as s:
            s.run(it.initializer)
            first = [int(s.run(x)) for _ in range(3)]
            s.run(it.initializer)
            again = [int(s.run(x)) for _ in range(5)]
    return first, again


def test_reinitializing_starts_over_as_tensorflow(tf1):
    fn = lambda tf: tf.data.Dataset.range(10).shuffle(5, seed=9)  # noqa: E731
    assert _reinit(fl, fn) == _reinit(tf1, fn)


def _reinitializable(tf):
    g = tf.Graph()
    with g.as_default():
        a = tf.data.Dataset.range(3)
        b = tf.data.Dataset.range(100, 102)
        it = tf.data.Iterator.from_structure(a.output_types, a.output_shapes)
        x = it.get_next()
        ia, ib = it.make_initializer(a), it.make_initializer(b)
        out = []
        with tf.Session() as s:
            for init in (ia, ib, ia):
                s.run(init)
                while True:
                    try:
                        out.append(int(s.run(x)))
                    except tf.errors.OutOfRangeError:
                        out.append("end")
                        break
    return out, x.dtype.name, x.shape.as_list()


def test_from_structure_and_make_initializer_as_tensorflow(tf1):
    assert _reinitializable(fl) == _reinitializable(tf1)


def test_uninitialized_iterator_is_failed_precondition_as_tensorflow(tf1):
    for tf in (tf1, fl):
        g = tf.Graph()
        with g.as_default():
            it = tf.data.make_initializable_iterator(tf.data.Dataset.range(3))
            x = it.get_next()
            with tf.Session() as s, pytest.raises(tf.errors.FailedPreconditionError) as e:
                s.run(x)
        assert "GetNext() failed because the iterator has not been initialized" in str(e.value)


def test_make_initializer_refuses_other_types_as_tensorflow(tf1):
    for tf in (tf1, fl):
        g = tf.Graph()
        with g.as_default():
            it = tf.data.Iterator.from_structure(tf.int64, tf.TensorShape([]))
            with pytest.raises(TypeError, match="Expected output types"):
                it.make_initializer(tf.data.Dataset.from_tensor_slices([1.0, 2.0]))


def test_one_shot_iterator_refuses_placeholders_as_tensorflow(tf1):
    for tf in (tf1, fl):
        g = tf.Graph()
        with g.as_default():
            p = tf.placeholder(tf.int64, [None])
            ds = tf.data.Dataset.from_tensor_slices(p)
            with pytest.raises(ValueError, match="Cannot capture a placeholder"):
                tf.data.make_one_shot_iterator(ds)


def test_initializable_iterator_takes_feeds_as_tensorflow(tf1):
    def run(tf):
        g = tf.Graph()
        with g.as_default():
            p = tf.placeholder(tf.float32, [None, 2])
            it = tf.data.make_initializable_iterator(
                tf.data.Dataset.from_tensor_slices(p).map(lambda r: tf.reduce_sum(r)))
            x = it.get_next()
            with tf.Session() as s:
                s.run(it.initializer, {p: [[1, 2], [3, 4]]})
                return [float(s.run(x)) for _ in range(2)], x.shape.as_list()

    assert run(fl) == run(tf1)


def test_map_function_error_is_the_op_error_as_tensorflow(tf1):
    for tf in (tf1, fl):
        g = tf.Graph()
        with g.as_default():
            ds = tf.data.Dataset.range(3).map(
                lambda x, tf=tf: tf.reshape(tf.fill([x], x), [2]))
            x = tf.data.make_one_shot_iterator(ds).get_next()
            with tf.Session() as s:
                with pytest.raises(tf.errors.InvalidArgumentError):
                    s.run(x)


def test_batch_of_different_shapes_is_invalid_argument_as_tensorflow(tf1):
    msgs = []
    for tf in (tf1, fl):
        g = tf.Graph()
        with g.as_default():
            ds = tf.data.Dataset.range(1, 4).map(lambda x, tf=tf: tf.fill([x], x)).batch(2)
            x = tf.data.make_one_shot_iterator(ds).get_next()
            with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError) as e:
                s.run(x)
            msgs.append(e.value.message)
    # TensorFlow copies a batch's elements in parallel: which element it reports first
    # varies from run to run.  flowlab reports the offending element (the tensor) against
    # the first element's shape (the batch), one of TensorFlow's two messages.
    start = ("Cannot add tensor to the batch: number of elements does not match. Shapes are: ")
    assert any(start + s in msgs[0] for s in ("[tensor]: [2], [batch]: [1]",
                                              "[tensor]: [1], [batch]: [2]"))
    assert start + "[tensor]: [2], [batch]: [1]" in msgs[1]


def test_filter_predicate_must_be_a_bool_scalar_as_tensorflow(tf1):
    for tf in (tf1, fl):
        g = tf.Graph()
        with g.as_default():
            with pytest.raises(ValueError, match="`predicate` must return a `tf.bool` scalar"):
                tf.data.Dataset.range(3).filter(lambda x: x)


def test_static_structure_names_as_tensorflow(tf1):
    def build(tf):
        ds = tf.data.Dataset.from_tensor_slices(
            (np.zeros((5, 3), np.float32), np.zeros((5,), np.int32))).batch(2)
        return (tf.data.get_output_types(ds), tf.data.get_output_shapes(ds),
                tf.compat.v1.data.get_output_types(ds))

    for tf in (tf1, fl):
        tf.reset_default_graph()
    t_types, t_shapes, t_types2 = build(tf1)
    f_types, f_shapes, f_types2 = build(fl)
    assert [t.name for t in f_types] == [t.name for t in t_types]
    assert [s.as_list() for s in f_shapes] == [s.as_list() for s in t_shapes]
    assert [t.name for t in f_types2] == [t.name for t in t_types2]


def test_graph_has_tensorflow_op_types(tf1):
    def types(tf):
        g = tf.Graph()
        with g.as_default():
            ds = (tf.data.Dataset.from_tensor_slices(([1, 2], [3.0, 4.0]))
                  .map(lambda a, b: a, num_parallel_calls=2).batch(2).shuffle(3, seed=5)
                  .repeat().prefetch(1).take(3).skip(1))
            it = tf.data.make_initializable_iterator(ds)
            it.get_next()
        return [op.type for op in g.get_operations() if op.type.endswith("Dataset")
                or op.type.endswith("DatasetV2") or op.type in ("MakeIterator", "IteratorV2",
                                                                "IteratorGetNext")]

    assert types(fl) == types(tf1)


def test_dataset_ops_are_placed_and_shown():
    g = fl.Graph()
    with g.as_default():
        x = fl.data.make_one_shot_iterator(fl.data.Dataset.range(3).batch(2)).get_next()
        with fl.Session() as s:
            assert s.run(x).tolist() == [0, 1]
    ops = {op.name: op for op in g.get_operations()}
    assert ops["BatchDatasetV2"].inputs[0].op.type == "RangeDataset"
    assert ops["IteratorGetNext"].outputs[0].shape.as_list() == [None]


def test_dataset_methods_make_iterators_as_tensorflow(tf1):
    def run(tf):
        g = tf.Graph()
        with g.as_default():
            a = tf.data.Dataset.range(3).make_one_shot_iterator().get_next()
            it = tf.data.Dataset.range(2).make_initializable_iterator()
            b = it.get_next()
            with tf.Session() as s:
                s.run(it.initializer)
                return [int(s.run(a)) for _ in range(3)], [int(s.run(b)) for _ in range(2)]

    assert run(fl) == run(tf1)


def test_one_shot_iterator_has_no_initializer_as_tensorflow(tf1):
    for tf in (tf1, fl):
        g = tf.Graph()
        with g.as_default():
            it = tf.data.make_one_shot_iterator(tf.data.Dataset.range(3))
            with pytest.raises(ValueError, match="does not have an initializer"):
                it.initializer  # noqa: B018


def test_dataset_graph_draws():
    from flowlab.viz.model import to_picture

    g = fl.Graph()
    with g.as_default():
        fl.data.make_one_shot_iterator(fl.data.Dataset.range(3).map(lambda x: x + 1)).get_next()
    pic = to_picture(g)
    names = {n.name for n in pic.nodes}
    assert {"RangeDataset", "MapDataset", "OneShotIterator", "IteratorGetNext"} <= names


def test_a_random_map_starts_over_with_each_iterator_and_goes_on_through_repeat_as_tensorflow(tf1):
    def draws(tf):
        with tf.Graph().as_default():
            ds = tf.data.Dataset.range(3).map(lambda x: tf.random_uniform([], seed=3)).repeat(2)
            it = tf.data.make_initializable_iterator(ds)
            nxt = it.get_next()
            out = []
            for _ in range(2):  # two sessions, each initializing the iterator twice
                with tf.Session() as sess:
                    for _ in range(2):
                        sess.run(it.initializer)
                        out.append([float(sess.run(nxt)) for _ in range(6)])
            return out

    want, got = draws(tf1), draws(fl)
    assert got == want
    assert len(set(got[0])) == 6 and got[0] == got[1] == got[2]


def test_random_op_in_map_advances_per_element():
    got, _, _ = drain(fl, lambda tf: tf.data.Dataset.range(4).map(
        lambda x: tf.random_uniform([], seed=3)))
    assert len({float(v) for v in got}) == 4


def test_generator_exception_is_invalid_argument_as_tensorflow(tf1):
    def gen():
        yield 1
        raise ValueError("boom")

    for tf in (tf1, fl):
        g = tf.Graph()
        with g.as_default():
            x = tf.data.make_one_shot_iterator(tf.data.Dataset.from_generator(gen, tf.int64)).get_next()
            with tf.Session() as s:
                assert s.run(x) == 1
                with pytest.raises(tf.errors.InvalidArgumentError, match="boom"):
                    s.run(x)


def test_python_iteration_in_graph_mode_is_refused_as_tensorflow(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(RuntimeError, match="only supports Python-style"):
            iter(tf.data.Dataset.range(3))


def test_prefetch_thread_ends_with_the_session():
    import gc
    import threading
    import time

    def prefetchers():
        return sum(t.name.startswith("flowlab-prefetch") for t in threading.enumerate())

    before = prefetchers()
    g = fl.Graph()
    with g.as_default():
        x = fl.data.make_one_shot_iterator(fl.data.Dataset.range(100).prefetch(2)).get_next()
        s = fl.Session()
        assert s.run(x) == 0
        assert prefetchers() == before + 1
        s.close()
    del s, x, g
    deadline = time.time() + 5
    while prefetchers() > before and time.time() < deadline:
        gc.collect()
        time.sleep(0.05)
    assert prefetchers() == before


def test_concurrent_get_next_steps_get_distinct_elements():
    import threading

    g = fl.Graph()
    with g.as_default():
        x = fl.data.make_one_shot_iterator(
            fl.data.Dataset.range(400).map(lambda v: v * 2, num_parallel_calls=2)).get_next()
        got, lock = [], threading.Lock()
        with fl.Session() as s:
            def worker():
                while True:
                    try:
                        v = int(s.run(x))
                    except fl.errors.OutOfRangeError:
                        return
                    with lock:
                        got.append(v)

            ts = [threading.Thread(target=worker) for _ in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
    assert sorted(got) == [2 * i for i in range(400)]


def test_graph_names_types_and_inputs_as_tensorflow(tf1):
    """Node for node (name, type, inputs), as tests/ops/test_tf_names.py compares
    graphs; `unbatch` is left out: TensorFlow adds a normalizing MapDataset before it."""
    def rows(tf):
        g = tf.Graph()
        with g.as_default():
            ds = (tf.data.Dataset.from_tensor_slices((np.zeros((4, 2), np.float32), [1, 2, 3, 4]))
                  .map(lambda a, b: a).batch(2).shuffle(3, seed=1).repeat().prefetch(1).take(2)
                  .skip(1).cache().filter(lambda x: True))
            ds = tf.data.Dataset.zip((ds, tf.data.Dataset.range(3))).padded_batch(2)
            it = tf.data.make_initializable_iterator(ds)
            it.get_next()
            tf.data.make_one_shot_iterator(
                tf.data.Dataset.range(5).shuffle(2).map(lambda x: x, num_parallel_calls=2)
            ).get_next()
        # TensorFlow's OneShotIterator builds its dataset in a function: no data input.
        return [(op.name, op.type, [t.name for t in op.inputs] if op.type != "OneShotIterator"
                 else []) for op in g.get_operations()]

    assert rows(fl) == rows(tf1)


def test_imported_graph_function_without_body_is_unimplemented():
    g = fl.Graph()
    with g.as_default():
        ds = fl.data.Dataset.range(3).map(lambda x: x + 1)
        fl.data.make_one_shot_iterator(ds).get_next()
    gd = g.as_graph_def()
    g2 = fl.Graph()
    with g2.as_default():
        fl.import_graph_def(gd, name="")
        x = g2.get_tensor_by_name("IteratorGetNext:0")
        with fl.Session() as s, pytest.raises(fl.errors.UnimplementedError, match="has no body"):
            s.run(x)


def test_concatenate_refuses_other_types_as_tensorflow(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(TypeError, match="Incompatible dataset elements"):
            tf.data.Dataset.range(3).concatenate(tf.data.Dataset.from_tensors(1.0))


def test_captured_variable_is_read_when_the_iterator_starts_as_tensorflow(tf1):
    def run(tf):
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable(3.0)
            it = tf.data.make_initializable_iterator(
                tf.data.Dataset.range(3).map(lambda x: tf.cast(x, tf.float32) * v))
            x = it.get_next()
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                s.run(it.initializer)
                out = [float(s.run(x))]
                s.run(tf.assign(v, 10.0))
                out.append(float(s.run(x)))  # still 3.0: captured by value at the start
                s.run(it.initializer)
                out += [float(s.run(x)), float(s.run(x))]
                return out

    assert run(fl) == run(tf1) == [0.0, 3.0, 0.0, 10.0]


def test_feedable_iterator_from_string_handle_as_tensorflow(tf1):
    def run(tf):
        g = tf.Graph()
        with g.as_default():
            train = tf.data.Dataset.range(100).repeat()
            val = tf.data.Dataset.range(50, 53)
            handle = tf.placeholder(tf.string, shape=[])
            it = tf.data.Iterator.from_string_handle(handle, train.output_types,
                                                     train.output_shapes)
            x = it.get_next()
            train_it = tf.data.make_one_shot_iterator(train)
            val_it = tf.data.make_initializable_iterator(val)
            with tf.Session() as s:
                th, vh = s.run([train_it.string_handle(), val_it.string_handle()])
                out = [int(s.run(x, {handle: th})) for _ in range(3)]
                s.run(val_it.initializer)
                out += [int(s.run(x, {handle: vh})) for _ in range(3)]
                out.append(int(s.run(x, {handle: th})))
                try:
                    s.run(x, {handle: vh})
                except tf.errors.OutOfRangeError:
                    out.append("end")
            return out, x.dtype.name, x.shape.as_list()

    assert run(fl) == run(tf1)


def test_sparse_elements_are_refused_with_a_clear_error():
    with pytest.raises(TypeError, match="returned a SparseTensor"):
        fl.data.Dataset.range(3).map(lambda x: fl.SparseTensor([[0]], [x], [1]))


def test_pipeline_placed_on_another_device_feeds_through_send_recv():
    g = fl.Graph()
    with g.as_default():
        with fl.device("/cpu:1"):
            ds = fl.data.Dataset.range(5).map(lambda x: x * 2).batch(2)
            x = fl.data.make_one_shot_iterator(ds).get_next()
        with fl.device("/cpu:0"):
            y = x + 1
        with fl.Session(config=fl.ConfigProto(device_count={"CPU": 2})) as s:
            got = [s.run(y).tolist() for _ in range(3)]
            with pytest.raises(fl.errors.OutOfRangeError):
                s.run(y)
    assert got == [[1, 3], [5, 7], [9]]


def test_parallel_map_error_comes_after_the_elements_before_it():
    """A failing element of a parallel map is raised in its turn, after the elements
    before it (workers take runs of elements; the run's earlier results are kept)."""
    def run(parallel):
        g = fl.Graph()
        with g.as_default():
            # Element 25 cannot be reshaped: InvalidArgumentError, after elements 0..24.
            ds = fl.data.Dataset.range(40).map(
                lambda x: fl.reduce_sum(fl.reshape(
                    fl.fill([1], x), fl.reshape(fl.cast(fl.equal(x, 25), fl.int32) + 1, [1]))),
                num_parallel_calls=parallel)
            x = fl.data.make_one_shot_iterator(ds).get_next()
            out = []
            with fl.Session() as s:
                try:
                    while True:
                        out.append(int(s.run(x)))
                except fl.errors.InvalidArgumentError:
                    out.append("error")
        return out

    assert run(3) == run(None) == [*range(25), "error"]


@pytest.mark.parametrize("n,buffer_size", [(1, 1), (10, 3), (64, 64), (100, 7), (50, 1000), (3000, 512)])
def test_shuffled_rows_are_the_generic_shuffle(n, buffer_size):
    """The gather path's shuffle over row numbers equals the element shuffle, pass by
    pass (reshuffled seeds included)."""
    from flowlab.kernels import dataset_order_values as order
    from flowlab.kernels import dataset_values as dv

    a = order.Shuffle(dv.Range(0, n, 1, np.int64), buffer_size, 5, 77, True)
    b = order.Shuffle(dv.Slices((np.arange(n),)), buffer_size, 5, 77, True)
    for _ in range(2):
        generic = [int(e[0]) for e in a.iterate()]
        rows = list(b.row_source()[1])
        assert rows == generic
        assert sorted(rows) == list(range(n))
