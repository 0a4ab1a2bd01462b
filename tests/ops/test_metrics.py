"""tf.metrics against TensorFlow 2.21: graphs op for op, streams of batches, errors.

Every metric is built under TensorFlow's tf.compat.v1 and under flowlab from
placeholders; the two graphs must have the same ops (name, type, inputs, control
inputs), the same local variables in LOCAL_VARIABLES / METRIC_VARIABLES, and, after
`local_variables_initializer()`, the same update-op result after each of three
batches and the same value at the end (dtypes included).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl

RS = np.random.RandomState(7)
N = 12


def _batches(kind: str, n: int = 3) -> list[dict[str, np.ndarray]]:
    out = []
    for _ in range(n):
        b = {
            "labels_int": RS.randint(0, 4, N).astype(np.int64),
            "pred_int": RS.randint(0, 4, N).astype(np.int64),
            "labels_bin": RS.randint(0, 2, N).astype(np.int64),
            "pred_bin": RS.randint(0, 2, N).astype(np.int64),
            "prob": RS.uniform(0, 1, N).astype(np.float32),
            "real_a": RS.randn(N).astype(np.float32),
            "real_b": RS.randn(N).astype(np.float32),
            "w": RS.uniform(0, 2, N).astype(np.float32),
        }
        out.append(b)
    return out


# name -> (feeds used, build(tf, ph) -> (value, update_op))
def _w(use: bool, tf: Any, ph: dict[str, Any]) -> Any:
    return ph["w"] if use else None


CASES: dict[str, Any] = {}


def case(name: str, *feeds: str, weighted: bool = True, rtol: float = 1e-6) -> Any:
    def register(fn: Any) -> Any:
        CASES[name] = (feeds + (("w",) if weighted else ()), fn, False, rtol)
        if weighted:
            CASES[name + "-weighted"] = (feeds + ("w",), fn, True, rtol)
        return fn
    return register


@case("accuracy", "labels_int", "pred_int")
def _(tf, p, w):
    return tf.metrics.accuracy(p["labels_int"], p["pred_int"], weights=_w(w, tf, p))


@case("mean", "real_a")
def _(tf, p, w):
    return tf.metrics.mean(p["real_a"], weights=_w(w, tf, p))


@case("mean_tensor", "real_a")
def _(tf, p, w):
    return tf.metrics.mean_tensor(p["real_a"], weights=_w(w, tf, p))


@case("mean_absolute_error", "real_a", "real_b")
def _(tf, p, w):
    return tf.metrics.mean_absolute_error(p["real_a"], p["real_b"], weights=_w(w, tf, p))


@case("mean_squared_error", "real_a", "real_b")
def _(tf, p, w):
    return tf.metrics.mean_squared_error(p["real_a"], p["real_b"], weights=_w(w, tf, p))


@case("root_mean_squared_error", "real_a", "real_b")
def _(tf, p, w):
    return tf.metrics.root_mean_squared_error(p["real_a"], p["real_b"], weights=_w(w, tf, p))


@case("mean_relative_error", "real_a", "real_b", "prob")
def _(tf, p, w):
    return tf.metrics.mean_relative_error(p["real_a"], p["real_b"], p["prob"], weights=_w(w, tf, p))


@case("mean_cosine_distance", "real_a", "real_b", weighted=False)
def _(tf, p, w):
    a = tf.reshape(p["real_a"], [-1, 3])
    b = tf.reshape(p["real_b"], [-1, 3])
    return tf.metrics.mean_cosine_distance(a, b, dim=1)


@case("percentage_below", "real_a")
def _(tf, p, w):
    return tf.metrics.percentage_below(p["real_a"], 0.25, weights=_w(w, tf, p))


for _kind in ("true_positives", "false_positives", "true_negatives", "false_negatives", "precision",
              "recall"):
    def _count(tf, p, w, kind=_kind):
        return getattr(tf.metrics, kind)(p["labels_bin"], p["pred_bin"], weights=_w(w, tf, p))
    case(_kind, "labels_bin", "pred_bin")(_count)

    def _at(tf, p, w, kind=_kind):
        return getattr(tf.metrics, kind + "_at_thresholds")(
            p["labels_bin"], p["prob"], [0.1, 0.5, 0.75], weights=_w(w, tf, p))
    if _kind not in ("precision", "recall"):
        case(_kind + "_at_thresholds", "labels_bin", "prob")(_at)

for _kind in ("precision", "recall"):
    def _ratio_at(tf, p, w, kind=_kind):
        return getattr(tf.metrics, kind + "_at_thresholds")(
            p["labels_bin"], p["prob"], [0.0, 0.3, 0.6, 0.9], weights=_w(w, tf, p))
    case(_kind + "_at_thresholds", "labels_bin", "prob")(_ratio_at)


@case("mean_iou", "labels_int", "pred_int")
def _(tf, p, w):
    return tf.metrics.mean_iou(p["labels_int"], p["pred_int"], num_classes=5, weights=_w(w, tf, p))


@case("mean_per_class_accuracy", "labels_int", "pred_int")
def _(tf, p, w):
    return tf.metrics.mean_per_class_accuracy(p["labels_int"], p["pred_int"], 5, weights=_w(w, tf, p))


@case("auc_roc", "labels_bin", "prob")
def _(tf, p, w):
    return tf.metrics.auc(p["labels_bin"], p["prob"], weights=_w(w, tf, p))


@case("auc_roc_minoring_7", "labels_bin", "prob", weighted=False)
def _(tf, p, w):
    return tf.metrics.auc(p["labels_bin"], p["prob"], num_thresholds=7, summation_method="minoring")


@case("auc_roc_majoring_thresholds", "labels_bin", "prob", weighted=False)
def _(tf, p, w):
    return tf.metrics.auc(p["labels_bin"], p["prob"], thresholds=[0.8, 0.2, 0.5], summation_method="majoring")


@case("auc_pr", "labels_bin", "prob", rtol=1e-5)
def _(tf, p, w):
    return tf.metrics.auc(p["labels_bin"], p["prob"], curve="PR", num_thresholds=50, weights=_w(w, tf, p))


@case("auc_pr_careful", "labels_bin", "prob", rtol=1e-5)
def _(tf, p, w):
    return tf.metrics.auc(p["labels_bin"], p["prob"], curve="PR", summation_method="careful_interpolation",
                          weights=_w(w, tf, p))


@case("sensitivity_at_specificity", "labels_bin", "prob")
def _(tf, p, w):
    return tf.metrics.sensitivity_at_specificity(p["labels_bin"], p["prob"], 0.6, weights=_w(w, tf, p),
                                                 num_thresholds=30)


@case("specificity_at_sensitivity", "labels_bin", "prob")
def _(tf, p, w):
    return tf.metrics.specificity_at_sensitivity(p["labels_bin"], p["prob"], 0.4, weights=_w(w, tf, p))


_DTYPES = {"labels_int": "int64", "pred_int": "int64", "labels_bin": "int64", "pred_bin": "int64"}


def _rows(g: Any) -> dict[str, Any]:
    return {op.name: (op.type, tuple(t.name for t in op.inputs) + tuple("^" + c.name for c in op.control_inputs))
            for op in g.get_operations()}


def _stream(tf: Any, name: str, batches: list[dict[str, np.ndarray]]) -> dict[str, Any]:
    feeds, build, weighted, _ = CASES[name]
    g = tf.Graph()
    with g.as_default():
        ph = {k: tf.placeholder(getattr(tf, _DTYPES.get(k, "float32")), [N], name=k) for k in feeds}
        value, update = build(tf, ph, weighted)
        local = [v.name for v in tf.local_variables()]
        metric_vars = [v.name for v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)]
        trainable = tf.trainable_variables()
        init = tf.local_variables_initializer()
        rows = _rows(g)
        updates, values = [], []
        with tf.Session(graph=g) as sess:
            sess.run(init)
            values.append(sess.run(value))
            for b in batches:
                updates.append(sess.run(update, {ph[k]: b[k] for k in feeds}))
                values.append(sess.run(value))
    return dict(rows=rows, local=local, metric_vars=metric_vars, trainable=trainable,
                updates=updates, values=values, value_name=value.name, update_name=update.name)


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(CASES))
def test_metric_matches_tensorflow(tf1: Any, name: str) -> None:
    import logging
    logging.getLogger("flowlab").setLevel(logging.ERROR)
    batches = _batches(name)
    want = _stream(tf1, name, batches)
    got = _stream(fl, name, batches)
    assert got["local"] == want["local"]
    assert got["metric_vars"] == want["local"]
    assert got["trainable"] == []
    assert (got["value_name"], got["update_name"]) == (want["value_name"], want["update_name"])
    diff = [n for n in set(want["rows"]) | set(got["rows"]) if want["rows"].get(n) != got["rows"].get(n)]
    assert not diff, [(n, want["rows"].get(n), got["rows"].get(n)) for n in sorted(diff)[:6]]
    rtol = CASES[name][3]
    for kind in ("updates", "values"):
        for w, a in zip(want[kind], got[kind]):
            w, a = np.asarray(w), np.asarray(a)
            assert a.dtype == w.dtype and a.shape == w.shape, (kind, a.dtype, w.dtype, a.shape, w.shape)
            np.testing.assert_allclose(a, w, rtol=rtol, atol=1e-7, err_msg=kind)


def test_accuracy_stream_by_hand() -> None:
    labels = fl.placeholder(fl.int32, [None])
    preds = fl.placeholder(fl.int32, [None])
    acc, update = fl.metrics.accuracy(labels, preds)
    with fl.Session() as sess:
        sess.run(fl.local_variables_initializer())
        assert sess.run(acc) == 0.0
        assert sess.run(update, {labels: [1, 2, 3, 4], preds: [1, 2, 0, 0]}) == 0.5
        assert sess.run(update, {labels: [1, 1], preds: [1, 1]}) == pytest.approx(4 / 6)
        assert sess.run(acc) == pytest.approx(4 / 6)
        sess.run(fl.local_variables_initializer())  # a new stream
        assert sess.run(acc) == 0.0


@pytest.mark.tf
def test_names_collections_and_reuse(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant([1.0, 2.0])
        m1 = tf.metrics.mean(x, metrics_collections=["mc"], updates_collections=["uc"])
        m2 = tf.metrics.mean(x, metrics_collections=["mc"], updates_collections=["uc"])
        m3 = tf.metrics.accuracy(tf.constant([1]), tf.constant([1]), name="acc")
        m4 = tf.metrics.precision(tf.constant([1]), tf.constant([1]), metrics_collections=["mc"])
        return ([t.name for m in (m1, m2, m3, m4) for t in m],
                [t.name for t in tf.get_collection("mc")], [t.name for t in tf.get_collection("uc")],
                [v.name for v in tf.local_variables()], [v.name for v in tf.global_variables()])

    results = []
    for tf in (tf1, fl):
        g = tf.Graph()
        with g.as_default():
            results.append(build(tf))
    assert results[1] == results[0]
    assert "mean_1/total:0" in results[0][3]


@pytest.mark.tf
def test_confusion_matrix(tf1: Any) -> None:
    from tests.difftest import assert_same

    assert_same(tf1, lambda tf: tf.confusion_matrix([1, 2, 4], [2, 2, 4]))
    assert_same(tf1, lambda tf: tf.confusion_matrix([0, 1, 1], [1, 1, 0], num_classes=3,
                                                    weights=[0.5, 1.0, 2.0], dtype=tf.float64))


def _run_error(tf: Any, build: Any) -> BaseException:
    g = tf.Graph()
    with g.as_default():
        try:
            value, update = build(tf)
            with tf.Session(graph=g) as sess:
                sess.run(tf.local_variables_initializer())
                sess.run(update)
        except Exception as e:  # noqa: BLE001 - compared below
            return e
    raise AssertionError(f"{tf.__name__} did not raise")


@pytest.mark.tf
@pytest.mark.parametrize("build,fragment", [
    (lambda tf: tf.metrics.auc([1, 0], [0.5, 0.2], curve="XY"), "Curve must be either ROC or PR"),
    (lambda tf: tf.metrics.auc(tf.constant([1, 0]), tf.constant([0.5, 0.2]), summation_method="x"), "Invalid summation_method"),
    (lambda tf: tf.metrics.sensitivity_at_specificity([1, 0], [0.5, 0.2], 1.5), "`specificity` must be"),
    (lambda tf: tf.metrics.specificity_at_sensitivity([1, 0], [0.5, 0.2], -1), "`sensitivity` must be"),
    (lambda tf: tf.metrics.auc([1, 0], tf.constant([1.5, 0.2])), "predictions must be in [0, 1]"),
    (lambda tf: tf.metrics.mean_iou(tf.constant([1, 7]), tf.constant([1, 0]), 3), "`labels` out of bound"),
    (lambda tf: tf.metrics.mean_iou(tf.constant([1, 0]), tf.constant([-1, 0]), 3),
     "`predictions` contains negative values"),
    (lambda tf: tf.metrics.true_positives(tf.constant([[1, 0]]), tf.constant([[1, 0]]),
                                          weights=tf.constant([[[[1.0]]]])), "must have rank in"),
    (lambda tf: tf.metrics.accuracy(tf.constant([1, 0, 1]), tf.constant([1, 0])), "are incompatible"),
])
def test_errors_match_tensorflow(tf1: Any, build: Any, fragment: str) -> None:
    want = _run_error(tf1, build)
    got = _run_error(fl, build)
    assert type(got).__name__ == type(want).__name__, (want, got)
    assert fragment in str(want) and fragment in str(got), (str(want)[:300], str(got)[:300])


# --- recall / precision of the top k ------------------------------------------------------
def _at_k_stream(tf: Any) -> tuple[list[Any], dict[str, Any], list[str]]:
    g = tf.Graph()
    with g.as_default():
        labels = tf.placeholder(tf.int64, [None])
        labels2 = tf.placeholder(tf.int64, [None, 2])
        logits = tf.placeholder(tf.float32, [None, 5])
        w = tf.placeholder(tf.float32, [None])
        metrics = [tf.metrics.recall_at_k(labels, logits, 2), tf.metrics.precision_at_k(labels2, logits, 3, weights=w),
                   tf.metrics.recall_at_top_k(labels2, tf.nn.top_k(logits, 2)[1]),
                   tf.metrics.precision_at_k(labels, logits, 1, name="pk"),
                   tf.metrics.recall_at_k(labels2, logits, 4, weights=w)]
        rows = _rows(g)
        names = [v.name for v in tf.local_variables()]
        out = []
        r = np.random.RandomState(0)
        with tf.Session(graph=g) as sess:
            sess.run(tf.local_variables_initializer())
            for _ in range(3):
                feed = {labels: r.randint(0, 5, 6), labels2: r.randint(0, 5, (6, 2)),
                        logits: r.randn(6, 5).astype(np.float32), w: r.uniform(0, 2, 6).astype(np.float32)}
                out.append(sess.run([m[1] for m in metrics], feed))
            out.append(sess.run([m[0] for m in metrics]))
    return out, rows, names


@pytest.mark.tf
def test_at_k_metrics_match_tensorflow(tf1: Any) -> None:
    want, want_rows, want_names = _at_k_stream(tf1)
    got, got_rows, got_names = _at_k_stream(fl)
    assert got_names == want_names
    # Weighted: the assert_broadcastable subgraph is flowlab.ops.weights_broadcast_ops's
    # (its run-time check is built without set ops); everything else is TensorFlow's.
    diff = [n for n in set(want_rows) | set(got_rows)
            if want_rows.get(n) != got_rows.get(n) and "assert_broadcastable" not in n]
    assert not diff, [(n, want_rows.get(n), got_rows.get(n)) for n in sorted(diff)[:6]]
    for w, a in zip(want, got):
        for x, y in zip(w, a):
            assert np.asarray(y).dtype == np.float64
            assert x == y


@pytest.mark.tf
def test_set_ops_match_tensorflow(tf1: Any) -> None:
    from flowlab.ops import set_ops

    a = np.array([[[1, 2, 3], [4, 4, 5]], [[7, 7, 7], [0, 1, 9]]], np.int64)
    b = np.array([[[2, 3], [6, 4]], [[1, 7], [9, 9]]], np.int64)
    want, got = [], []
    for tf, sets in ((tf1, tf1.sets), (fl, set_ops)):
        with tf.Graph().as_default():
            results = [sets.set_intersection(a, b), sets.set_difference(a, b), sets.set_difference(a, b, aminusb=False),
                       sets.set_union(a, b)]
            fetches = [[r.indices, r.values, r.dense_shape, sets.set_size(r)] for r in results]
            with tf.Session() as sess:
                (want if tf is tf1 else got).append(sess.run(fetches))
    for w, g in zip(want[0], got[0]):
        for x, y in zip(w, g):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(y, x)


def test_at_k_refuses_what_it_lacks() -> None:
    logits = fl.constant([[0.1, 0.9]])
    with pytest.raises(NotImplementedError, match="class_id"):
        fl.metrics.recall_at_k(fl.constant([1], fl.int64), logits, 1, class_id=1)
    with pytest.raises(ValueError, match="Unexpected labels shape"):
        fl.metrics.precision_at_k(fl.constant([[[1]]], fl.int64), logits, 1)


def _average_precision_stream(tf: Any) -> tuple[list[Any], dict[str, Any], list[str]]:
    g = tf.Graph()
    with g.as_default():
        labels = tf.placeholder(tf.int64, [None])
        labels3 = tf.placeholder(tf.int64, [None, 3])
        logits = tf.placeholder(tf.float32, [None, 5])
        w = tf.placeholder(tf.float32, [None])
        metrics = [tf.metrics.average_precision_at_k(labels, logits, 2),
                   tf.metrics.average_precision_at_k(labels3, logits, 3, weights=w),
                   tf.metrics.sparse_average_precision_at_k(labels3, logits, 1, name="ap")]
        rows = _rows(g)
        names = [v.name for v in tf.local_variables()]
        out = []
        r = np.random.RandomState(0)
        with tf.Session(graph=g) as sess:
            sess.run(tf.local_variables_initializer())
            for _ in range(3):
                # Labels >= 5 (the number of classes) and -1 count as absent.
                feed = {labels: r.randint(0, 5, 6), labels3: np.concatenate([r.randint(0, 5, (6, 1)),
                                                                            r.randint(-1, 7, (6, 2))], 1),
                        logits: r.randn(6, 5).astype(np.float32), w: r.uniform(0, 2, 6).astype(np.float32)}
                out.append(sess.run([m[1] for m in metrics], feed))
            out.append(sess.run([m[0] for m in metrics]))
    return out, rows, names


@pytest.mark.tf
def test_average_precision_at_k_matches_tensorflow(tf1: Any) -> None:
    want, want_rows, want_names = _average_precision_stream(tf1)
    got, got_rows, got_names = _average_precision_stream(fl)
    assert got_names == want_names  # TensorFlow's own `max_1`, `total`
    diff = [n for n in set(want_rows) | set(got_rows)
            if want_rows.get(n) != got_rows.get(n) and "assert_broadcastable" not in n]
    assert not diff, [(n, want_rows.get(n), got_rows.get(n)) for n in sorted(diff)[:6]]
    for w, a in zip(want, got):
        for x, y in zip(w, a):
            assert np.asarray(y).dtype == np.float64
            np.testing.assert_array_equal(y, x)
