"""Map vectorization (flowlab.data.vectorize): an element-wise `map` before `batch` runs
once per batch, and gives what running it once per element gives -- bit for bit,
beside the per-element path and beside TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from flowlab.data import function as function_mod
from flowlab.data import vectorize
from tests.data.datatest import _flat, assert_same_elements, drain

X = np.random.default_rng(5).integers(0, 256, (50, 6)).astype(np.float32)
Y = np.arange(50, dtype=np.int32)

CASES = {
    "scale": lambda tf: tf.data.Dataset.from_tensor_slices((X, Y)).map(
        lambda a, b: (a / 255.0, b)).batch(8),
    "shuffle_map_batch": lambda tf: tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(
        16, seed=4).map(lambda a, b: (a / 255.0 - 0.5, tf.cast(b, tf.float32) * 2.0),
                        num_parallel_calls=2).batch(7, drop_remainder=True),
    "map_shuffle_batch": lambda tf: tf.data.Dataset.from_tensor_slices((X, Y)).map(
        lambda a, b: (tf.maximum(a, 100.0), b + 1)).shuffle(9, seed=2).batch(6).repeat(2),
    "constant_component": lambda tf: tf.data.Dataset.from_tensor_slices(X).map(
        lambda a: (a * 2.0, 7, tf.constant([1.0, 2.0]))).batch(9),
    "capture": lambda tf: (lambda w: tf.data.Dataset.from_tensor_slices(X).map(
        lambda a: a * w + 1.0).batch(10))(tf.constant(np.linspace(0, 1, 6, dtype=np.float32))),
    "capture_reshaped": lambda tf: (lambda w: tf.data.Dataset.from_tensor_slices(X).map(
        lambda a: a * tf.reshape(w, [6])).batch(10))(tf.constant(np.arange(6.0, dtype=np.float32).reshape(2, 3))),
    "dict_and_map_twice": lambda tf: tf.data.Dataset.from_tensor_slices({"x": X, "y": Y}).map(
        lambda d: {"x": tf.sqrt(d["x"]), "y": d["y"]}).map(
        lambda d: (tf.floor(d["x"]), tf.cast(d["y"], tf.float64) / 3.0)).batch(12),
    "strings_pass_through": lambda tf: tf.data.Dataset.from_tensor_slices(
        (np.array([b"r%d" % i for i in range(50)]), X)).map(lambda s, a: (s, -a)).batch(11),
    "layout": lambda tf: tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(10, seed=9).map(
        lambda a, b: (tf.transpose(tf.reshape(a / 255.0, [3, -1, 1]), [2, 0, 1]),
                      tf.one_hot(tf.minimum(b, 9), 10),
                      tf.expand_dims(a, -1), tf.expand_dims(a, 0))).batch(8),
    "shuffle_repeat_map_batch": lambda tf: tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(
        12, seed=8).repeat(3).map(lambda a, b: (a * 0.5, b)).batch(16),
    "map_repeat_forever_take_batch": lambda tf: tf.data.Dataset.from_tensor_slices(X).map(
        lambda a: a - 1.0).repeat().take(130).batch(32),
    "skip_map_batch_repeat": lambda tf: tf.data.Dataset.from_tensor_slices(Y).skip(7).map(
        lambda b: b * 3).batch(10).repeat(2),
    "comparisons": lambda tf: tf.data.Dataset.from_tensor_slices(X).map(
        lambda a: (a > 128.0, tf.logical_not(tf.equal(a, 3.0)))).batch(5),
}


@pytest.fixture
def per_element(monkeypatch: Any) -> None:
    """Every map runs once per element (vectorization off)."""
    monkeypatch.setattr(function_mod.DatasetFunction, "batched", property(lambda self: None))


def _calls(monkeypatch: Any) -> dict[str, int]:
    counts = {"element": 0, "batch": 0}
    element_call = function_mod.DatasetFunction.call
    batch_call = vectorize.BatchedFunction.call

    def count_element(self: Any, values: Any) -> Any:
        counts["element"] += 1
        return element_call(self, values)

    def count_batch(self: Any, values: Any) -> Any:
        counts["batch"] += 1
        return batch_call(self, values)

    element_instance = function_mod.DatasetFunction.instance

    def count_instance(self: Any) -> Any:  # a stateful function's per-iterator calls
        call = element_instance(self)

        def counted(values: Any) -> Any:
            counts["element"] += 1
            return call(values)

        return counted

    monkeypatch.setattr(function_mod.DatasetFunction, "call", count_element)
    monkeypatch.setattr(function_mod.DatasetFunction, "instance", count_instance)
    monkeypatch.setattr(vectorize.BatchedFunction, "call", count_batch)
    return counts


def _same(a: list[Any], b: list[Any]) -> None:
    assert len(a) == len(b)
    for ea, eb in zip(a, b):
        fa, fb = _flat(ea), _flat(eb)
        for x, y in zip(fa, fb):
            x, y = np.asarray(x), np.asarray(y)
            assert x.dtype == y.dtype and x.shape == y.shape
            assert x.tolist() == y.tolist()  # bit for bit (NaN-free data)


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_elements_as_tensorflow(tf1: Any, name: str) -> None:
    assert_same_elements(tf1, CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_call_per_batch_and_the_per_element_values(monkeypatch: Any, name: str) -> None:
    counts = _calls(monkeypatch)
    got, _, _ = drain(fl, CASES[name])
    assert counts["batch"] > 0 and counts["element"] == 0, counts
    with monkeypatch.context() as m:
        m.setattr(function_mod.DatasetFunction, "batched", property(lambda self: None))
        want, _, _ = drain(fl, CASES[name])
    _same(got, want)


REFUSED = {
    "transcendental": lambda tf, a: tf.exp(a),
    "random": lambda tf, a: a + tf.random_uniform([6], seed=1),
    "integer_division": lambda tf, a: tf.cast(a, tf.int32) // 3,
    # The shape constant is read by another op too: shifting it would change that one.
    "reshape_by_a_shared_constant": lambda tf, a: (lambda s: (tf.reshape(a, s), s + 1))(
        tf.constant([2, 3])),
    "one_hot_on_axis_0": lambda tf, a: tf.one_hot(tf.cast(a, tf.int32), 3, axis=0),
    "slice": lambda tf, a: a[1:],
    "reduction": lambda tf, a: tf.reduce_sum(a),
    "shape_dependent": lambda tf, a: a * tf.cast(tf.shape(a)[0], tf.float32),
    # [6] * [2, 6]: per element a [2, 6] result; on a [n, 6] batch NumPy would pair the
    # batch dimension with the 2.
    "constant_of_higher_rank": lambda tf, a: a * tf.ones([2, 6]),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_functions_that_are_not_elementwise_run_per_element(monkeypatch: Any, name: str) -> None:
    def build(tf: Any) -> Any:
        return tf.data.Dataset.from_tensor_slices(X).map(lambda a: REFUSED[name](tf, a)).batch(4)

    counts = _calls(monkeypatch)
    got, _, _ = drain(fl, build)
    assert counts["batch"] == 0 and counts["element"] == len(X), counts
    assert len(got) == 13


def test_batched_operands_of_different_ranks_are_refused() -> None:
    # a [6] + b []: per element a [6]; on a batch [n, 6] + [n] would not line up.
    with fl.Graph().as_default():
        ds = fl.data.Dataset.from_tensor_slices((X, X[:, 0])).map(lambda a, b: a + b)
        fn = ds._variant_tensor.op._attrs["f"]
        assert vectorize.batched_inputs(fn) is None
        ok = fl.data.Dataset.from_tensor_slices((X, X)).map(lambda a, b: a + b)
        assert vectorize.batched_inputs(ok._variant_tensor.op._attrs["f"]) is not None


def test_same_as_tensorflow_without_vectorization(tf1: Any, per_element: None) -> None:
    # The reference the vectorized path is held to, itself equal to TensorFlow's.
    assert_same_elements(tf1, CASES["shuffle_map_batch"])


def test_a_map_over_rows_not_batched_still_runs_per_element(monkeypatch: Any) -> None:
    counts = _calls(monkeypatch)
    got, _, _ = drain(fl, lambda tf: tf.data.Dataset.from_tensor_slices(X).map(lambda a: a * 2.0))
    assert counts == {"element": len(X), "batch": 0}
    np.testing.assert_array_equal(np.stack(got), X * 2.0)


def test_strings_returned_by_a_per_element_map_batch_as_bytes_objects(tf1: Any,
                                                                     per_element: None) -> None:
    # Trailing NULs survive: a fixed-width bytes array would drop them.
    def build(tf: Any) -> Any:
        return tf.data.Dataset.from_tensor_slices(np.array([b"a\x00", b"b", b"cc"], object)).map(
            lambda s: s).batch(2)

    got = assert_same_elements(tf1, build)
    assert got[0].dtype == object and got[0].tolist() == [b"a\x00", b"b"]


def test_batches_of_repeated_taken_and_skipped_rows_are_gathers(monkeypatch: Any) -> None:
    from flowlab.kernels import dataset_values as dv

    gathers = []
    rows = dv.Slices.rows
    monkeypatch.setattr(dv.Slices, "rows", lambda self, idx: gathers.append(len(idx)) or rows(self, idx))
    got, _, _ = drain(fl, lambda tf: tf.data.Dataset.from_tensor_slices(Y).shuffle(6, seed=1).repeat(2)
                      .skip(3).take(90).batch(20))
    assert gathers == [20, 20, 20, 20, 10]
    assert sorted(np.concatenate(got).tolist()) != np.concatenate(got).tolist()  # shuffled
    assert len(np.concatenate(got)) == 90
