"""Property tests: "partitioned equals single-piece" for partitioned variables --
any row count and shard count give shards that concatenate to the whole value, a
"div" lookup equal to the whole table's, and a checkpoint that restores into any
other partitioning (flowlab only; the TensorFlow comparisons are in
test_partitioned_variables.py and test_partitioned_saver.py)."""

from __future__ import annotations

import tempfile

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import flowlab as fl
from flowlab.ops.partitioned_variables import iter_slices


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 40), shards=st.integers(1, 12))
def test_slices_tile_the_axis(rows, shards):
    pieces = list(iter_slices([rows, 3], shards, 0))
    assert [off[0] for off, _ in pieces] == list(np.cumsum([0] + [s[0] for _, s in pieces])[:-1])
    sizes = [s[0] for _, s in pieces]
    assert sum(sizes) == rows and max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 17), shards=st.integers(1, 20), data=st.data())
def test_div_lookup_on_shards_equals_lookup_on_the_whole_table(rows, shards, data):
    table = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
    ids = data.draw(st.lists(st.integers(0, rows - 1), min_size=1, max_size=12))
    with fl.Graph().as_default():
        pv = fl.get_variable("emb", [rows, 2], initializer=table,
                             partitioner=fl.fixed_size_partitioner(shards))
        assert len(pv) == min(rows, shards)
        whole = fl.get_variable("whole", initializer=table)
        a = fl.nn.embedding_lookup(pv, ids, partition_strategy="div")
        b = fl.nn.embedding_lookup(whole, ids)
        with fl.Session() as s:
            s.run(fl.global_variables_initializer())
            got, want, joined = s.run([a, b, fl.convert_to_tensor(pv)])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(joined, table)


@settings(max_examples=12, deadline=None)
@given(rows=st.integers(1, 13), saved=st.integers(0, 6), restored=st.integers(0, 6))
def test_any_partitioning_restores_into_any_other(rows, saved, restored):
    table = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)

    def make(shards):
        if shards == 0:
            return fl.get_variable("t", [rows, 3], initializer=fl.zeros_initializer())
        return fl.get_variable("t", [rows, 3], initializer=fl.zeros_initializer(),
                               partitioner=fl.fixed_size_partitioner(shards))

    with tempfile.TemporaryDirectory() as d:
        with fl.Graph().as_default():
            t = make(saved)
            saver = fl.train.Saver()
            with fl.Session() as s:
                s.run(fl.global_variables_initializer())
                s.run(fl.assign(t, table))
                path = saver.save(s, d + "/m")
        assert fl.train.list_variables(d) == [("t", [rows, 3])]
        with fl.Graph().as_default():
            t = make(restored)
            saver = fl.train.Saver()
            with fl.Session() as s:
                saver.restore(s, path)
                np.testing.assert_array_equal(s.run(fl.convert_to_tensor(t)), table)
