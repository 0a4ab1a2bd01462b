"""The remaining small names beside TensorFlow 1.x (tests/difftest.py):
`nn.with_space_to_batch`, `layers.dropout`, `losses.add_loss`, `data.AUTOTUNE` /
`get_output_classes`, the summary protos, `sparse.SparseTensor`, `tf.test`'s device
queries, `flags.disclaim_key_flags` and a few `tf.train` input and checkpoint helpers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(9)
X = RS.randn(1, 6, 6, 2).astype(np.float32)
K = RS.randn(3, 3, 2, 2).astype(np.float32)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_with_space_to_batch(tf1: Any, padding: str) -> None:
    def build(tf: Any) -> Any:
        x, k = tf.constant(X), tf.constant(K)

        def op(inp: Any, num_spatial_dims: int, padding: str) -> Any:
            return tf.nn.conv2d(inp, k, [1, 1, 1, 1], padding)

        return [
            tf.nn.with_space_to_batch(x, [2, 2], padding, op, filter_shape=[3, 3]),
            tf.nn.with_space_to_batch(x, [1, 1], padding, op, filter_shape=[3, 3]),
            tf.nn.with_space_to_batch(x, [2, 1], padding, op, filter_shape=[3, 3]),
            tf.nn.with_space_to_batch(x, [2, 2], "VALID", op),
        ]

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            for rate, pad in (([2, 2], "SAME"), ([0, 2], "VALID")):
                with pytest.raises(ValueError) as info:
                    tf.nn.with_space_to_batch(tf.constant(X), rate, pad, lambda i, n, p: i)
                msgs.append(str(info.value))
    assert msgs[:2] == msgs[2:]


def test_layers_dropout(tf1: Any) -> None:
    """TensorFlow 2.21 builds tf.layers from Keras 2; its legacy layers are the reference."""
    from tests.programs.hidden_support import tf_with_legacy_keras

    def build(tf: Any) -> Any:
        tf.set_random_seed(4)
        x = tf.constant(np.arange(1.0, 13.0, dtype=np.float32).reshape(3, 4))
        train = tf.placeholder_with_default(True, [])
        return [
            tf.layers.dropout(x, 0.5, training=False),
            tf.layers.dropout(x, 0.25, training=True, seed=2),
            tf.layers.dropout(x, 0.5, noise_shape=[3, 1], training=True, seed=3),
            tf.layers.dropout(x, rate=0.5, training=train, seed=5),
        ]

    assert_same(tf_with_legacy_keras(tf1), build)


def test_add_loss(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        a = tf.constant(2.0)
        b = tf.constant(3.0)
        tf.losses.add_loss(a)
        tf.losses.add_loss(b, loss_collection="extra")
        tf.losses.add_loss(tf.constant(4.0), loss_collection=None)
        return [
            tf.losses.get_losses(),
            tf.get_collection("extra"),
            tf.losses.get_total_loss(add_regularization_losses=False),
        ]

    assert_same(tf1, build)


def test_dataset_autotune_and_output_classes(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            ds = tf.data.Dataset.from_tensor_slices(
                ({"a": np.arange(4)}, np.ones(4, np.float32))
            ).map(lambda d, y: (d, y * 2.0), num_parallel_calls=tf.data.AUTOTUNE)
            classes = tf.data.get_output_classes(ds)
            it = tf.data.make_one_shot_iterator(ds.prefetch(tf.data.AUTOTUNE))
            nxt = it.get_next()
            with tf.Session() as s:
                vals = [s.run(nxt) for _ in range(2)]
            out.append(
                (
                    int(tf.data.AUTOTUNE),
                    classes[0]["a"].__name__,
                    classes[1].__name__,
                    [(v[0]["a"].item(), v[1].item()) for v in vals],
                )
            )
    assert out[0] == out[1]


def test_summary_protos(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        s = tf.summary.Summary(value=[tf.summary.Summary.Value(tag="loss", simple_value=0.5)])
        log = tf.summary.SessionLog(status=tf.summary.SessionLog.START, checkpoint_path="ck")
        ev = tf.summary.Event(step=2, wall_time=3.0, summary=s)
        ev2 = tf.summary.Event(session_log=log)
        desc = tf.summary.SummaryDescription(type_hint="scalar")
        meta = tf.summary.TaggedRunMetadata(tag="step1", run_metadata=b"\x01\x02")
        node = tf.NodeDef(name="n", op="TensorSummary")
        node.attr["description"].s = b'{"typeHint": "scalar"}'  # TensorFlow stores JSON
        got = tf.summary.get_summary_description(node)
        out.append(
            (
                s.SerializeToString(),
                log.SerializeToString(),
                ev.SerializeToString(),
                ev2.WhichOneof("what"),
                desc.SerializeToString(),
                meta.SerializeToString(),
                got.type_hint,
                int(tf.summary.SessionLog.CHECKPOINT),
            )
        )
    assert out[0] == out[1]


def test_get_summary_description_needs_tensor_summary(tf1: Any) -> None:
    msgs = []
    for tf in (tf1, fl):
        with pytest.raises(ValueError) as info:
            tf.summary.get_summary_description(tf.NodeDef(name="n", op="ScalarSummary"))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_sparse_tensor(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        st = tf.sparse.SparseTensor([[0, 1], [2, 0]], [1.5, -2.0], [3, 2])
        ints = tf.sparse.SparseTensor(
            tf.constant([[1]], tf.int64), tf.constant([7]), tf.constant([4], tf.int64)
        )
        return [
            st.indices,
            st.values,
            st.dense_shape,
            tf.sparse.to_dense(st),
            tf.sparse_tensor_to_dense(ints),
            tf.constant(st.shape.as_list()),
            tf.constant(st.dtype.name),
            tf.constant(isinstance(st, tf.SparseTensor)),
        ]

    assert_same(tf1, build)

    def bad(tf: Any) -> Any:
        p = tf.placeholder(tf.int64, [1, 1])
        st = tf.sparse.SparseTensor(p, [1.0], [3])
        return tf.sparse.to_dense(st), {p: np.array([[5]])}

    assert_same_error(tf1, bad)


def test_test_module_device_queries(tf1: Any) -> None:
    def observe(tf: Any) -> list[Any]:
        return [
            tf.test.is_built_with_cuda(),
            tf.test.is_built_with_gpu_support(),
            tf.test.is_gpu_available(),
            tf.test.is_gpu_available(cuda_only=True),
            tf.test.gpu_device_name(),
            Path(tf.test.get_temp_dir()).is_dir(),
            tf.test.get_temp_dir() == tf.test.get_temp_dir(),
            callable(tf.test.main),
        ]

    assert observe(fl) == observe(tf1)


def test_disclaim_key_flags(tf1: Any) -> None:
    """A module that disclaims its key flags: the flags it defines are not key flags of
    the module that reads them, in both."""
    out = []
    for tf in (tf1, fl):
        fv = tf.flags.FlagValues()
        tf.flags.disclaim_key_flags()
        tf.flags.DEFINE_integer("k", 1, "K.", flag_values=fv)
        fv(["prog"])
        out.append((fv.k, [f.name for f in fv.get_key_flags_for_module(__name__)]))
    assert out[0] == out[1]


def test_assert_global_step(tf1: Any) -> None:
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            step = tf.train.get_or_create_global_step()
            tf.train.assert_global_step(step)
            row = []
            for bad in (tf.Variable(1.0), tf.constant([1, 2])):
                with pytest.raises(TypeError) as info:
                    tf.train.assert_global_step(bad)
                row.append(str(info.value).split(" Tensor")[0][:40])
        msgs.append(row)
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("kind", ["batch_join", "shuffle_batch_join"])
def test_batch_join(tf1: Any, kind: str) -> None:
    def program(tf: Any) -> list[Any]:
        with tf.Graph().as_default():
            tf.set_random_seed(1)
            lists = [[tf.constant(float(i)), tf.constant([i, i])] for i in range(2)]
            if kind == "batch_join":
                batch = tf.train.batch_join(lists, batch_size=4, capacity=8)
            else:
                batch = tf.train.shuffle_batch_join(lists, 4, 16, 4, seed=3)
            with tf.Session() as s:
                coord = tf.train.Coordinator()
                threads = tf.train.start_queue_runners(s, coord=coord)
                vals = s.run(batch)
                coord.request_stop()
                coord.join(threads)
            v0, v1 = vals
            # Which list's enqueue ran first is a race: compare the multiset.
            return [
                v0.dtype,
                v0.shape,
                v1.dtype,
                v1.shape,
                sorted(v0.tolist()) != [],
                bool(np.all(v1[:, 0] == v0.astype(np.int32))),
            ]

    assert program(fl) == program(tf1)


def test_checkpoint_state_helpers(tf1: Any, tmp_path: Path) -> None:
    out = []
    for tf, sub in ((tf1, "tf"), (fl, "fl")):
        d = tmp_path / sub
        d.mkdir()
        state = tf.train.generate_checkpoint_state_proto(
            str(d), str(d / "model-2"), all_model_checkpoint_paths=[str(d / "model-1")]
        )
        with tf.Graph().as_default():
            v = tf.Variable(1.0)
            saver = tf.train.Saver()
            with tf.Session() as s:
                s.run(v.initializer)
                path = saver.save(s, str(d / "model"), global_step=3)
        mtimes = tf.train.get_checkpoint_mtimes([path])
        tf.train.remove_checkpoint(path)
        out.append(
            (
                state.model_checkpoint_path.rsplit("/", 1)[-1],
                [p.rsplit("/", 1)[-1] for p in state.all_model_checkpoint_paths],
                len(mtimes),
                all(isinstance(t, float) for t in mtimes),
                tf.train.checkpoint_exists(path),
                sorted(p.name for p in d.iterdir()),
            )
        )
    assert out[0] == out[1]


def test_looper_thread(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        coord = tf.train.Coordinator()
        calls: list[int] = []

        def step(calls: list[int] = calls, coord: Any = coord) -> None:
            calls.append(1)
            if len(calls) == 3:
                coord.request_stop()

        t = tf.train.LooperThread.loop(coord, None, step)
        coord.join([t])
        out.append((len(calls), isinstance(t, tf.train.LooperThread), coord.should_stop()))
    assert out[0] == out[1]
