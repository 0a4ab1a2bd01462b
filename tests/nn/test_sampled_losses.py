"""Candidate samplers, accidental hits and the sampled losses against
TensorFlow: the same candidates and expected counts under the same seeds, over
several runs of one session (the generator moves on), the same losses, gradients and
training steps, and TensorFlow's errors."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from tests.difftest import assert_same, assert_same_error

LABELS = np.array([[3], [0], [7], [1], [3]], np.int64)
LABELS2 = np.array([[3, 9], [0, 1], [7, 7]], np.int64)


def _runs(tf, build, runs=3, seed=None):
    g = tf.Graph()
    with g.as_default():
        if seed is not None:
            tf.set_random_seed(seed)
        t = build(tf)
        with tf.Session(graph=g) as s:
            return [s.run(t) for _ in range(runs)]


def _same_runs(tf1, build, runs=3, seed=None):
    want, got = _runs(tf1, build, runs, seed), _runs(fl, build, runs, seed)
    for w, g in zip(want, got):
        for a, b in zip(w, g):
            a, b = np.asarray(a), np.asarray(b)
            assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
            np.testing.assert_array_equal(b, a)
    return got


@pytest.mark.parametrize("sampler", ["log_uniform_candidate_sampler", "uniform_candidate_sampler"])
@pytest.mark.parametrize("unique", [True, False])
@pytest.mark.parametrize("labels,num_sampled,range_max", [
    (LABELS, 4, 10), (LABELS, 9, 10), (LABELS2, 6, 12), (LABELS, 64, 50000)])
def test_samplers_draw_tensorflows_candidates(tf1, sampler, unique, labels, num_sampled, range_max):
    _same_runs(tf1, lambda tf: list(getattr(tf.nn, sampler)(
        labels, labels.shape[1], num_sampled, unique, range_max, seed=11)))


def test_graph_seed_only_and_two_samplers(tf1):
    _same_runs(tf1, lambda tf: list(tf.nn.log_uniform_candidate_sampler(LABELS, 1, 5, True, 40))
               + list(tf.random.uniform_candidate_sampler(LABELS, 1, 3, False, 8)), seed=5)


UNIGRAMS = [5.0, 1.0, 0.5, 3.0, 2.0, 0.25, 7.0, 0.125]


@pytest.mark.parametrize("unique", [True, False])
@pytest.mark.parametrize("kw", [
    {"range_max": 8},
    {"range_max": 8, "distortion": 0.75},
    {"range_max": 11, "num_reserved_ids": 3},
    {"range_max": 4, "num_shards": 2, "shard": 1},
    {"range_max": 6, "num_reserved_ids": 3, "num_shards": 2, "shard": 0},
    {"range_max": 5, "num_reserved_ids": 3, "num_shards": 2, "shard": 1},
])
def test_fixed_unigram_sampler(tf1, unique, kw):
    labels = np.array([[0], [3], [1]], np.int64)
    _same_runs(tf1, lambda tf: list(tf.nn.fixed_unigram_candidate_sampler(
        labels, 1, 3, unique, unigrams=UNIGRAMS, seed=4, **kw)), runs=4)


def test_fixed_unigram_sampler_from_a_vocabulary_file(tf1, tmp_path):
    vocab = tmp_path / "vocab.csv"
    vocab.write_text("".join(f"w{i},x,{c}\n" for i, c in enumerate(UNIGRAMS)), encoding="utf-8")
    _same_runs(tf1, lambda tf: list(tf.nn.fixed_unigram_candidate_sampler(
        LABELS, 1, 5, True, 8, vocab_file=str(vocab), distortion=0.5, seed=8)))


@pytest.mark.parametrize("kw", [
    {"range_max": 7, "unigrams": UNIGRAMS},
    {"range_max": 8},
    {"range_max": 8, "unigrams": UNIGRAMS, "vocab_file": "/nonexistent"},
])
def test_fixed_unigram_sampler_errors(tf1, kw):
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.nn.fixed_unigram_candidate_sampler(
        np.array([[0]], np.int64), 1, 3, True, seed=4, **kw))
    core = e_tf.message.split("Node: ")[-1].split("\n")[1]
    assert core in e_fl.message


@pytest.mark.parametrize("unique", [True, False])
def test_learned_unigram_sampler_learns_from_each_run(tf1, unique):
    _same_runs(tf1, lambda tf: list(tf.nn.learned_unigram_candidate_sampler(
        np.array([[3, 1], [3, 5]], np.int64), 2, 4, unique, 7, seed=3)), runs=6)


def test_all_candidate_sampler(tf1):
    _same_runs(tf1, lambda tf: list(tf.nn.all_candidate_sampler(LABELS2, 2, 10, True, seed=1)))


def test_sampler_static_shapes_and_namedtuple():
    out = fl.nn.log_uniform_candidate_sampler(fl.placeholder(fl.int64, [None, 2]), 2, 7, True, 30)
    assert out.sampled_candidates.shape.as_list() == [7]
    assert out.true_expected_count.shape.as_list() == [None, 2]
    assert out.sampled_expected_count.dtype == fl.float32
    assert out.sampled_candidates.op.type == "LogUniformCandidateSampler"


@pytest.mark.parametrize("build", [
    lambda tf: tf.nn.uniform_candidate_sampler(np.array([[3], [12]], np.int64), 1, 11, True, 10),
    lambda tf: tf.nn.uniform_candidate_sampler(np.array([[3], [12]], np.int64), 1, 3, True, 10),
    lambda tf: tf.nn.log_uniform_candidate_sampler(np.array([[-3]], np.int64), 1, 3, False, 10),
    lambda tf: tf.nn.all_candidate_sampler(np.array([[3]], np.int64), 1, 3, True),
])
def test_true_classes_out_of_range(tf1, build):
    e_tf, e_fl = assert_same_error(tf1, build)
    core = e_tf.message.split("Node: ")[-1].split("\n")[1]
    assert core in e_fl.message


def test_sampler_errors(tf1):
    assert_same_error(tf1, lambda tf: tf.nn.uniform_candidate_sampler(LABELS, 1, 11, True, 10))
    assert_same_error(tf1, lambda tf: tf.nn.uniform_candidate_sampler(
        tf.placeholder_with_default(LABELS, None), 2, 3, True, 10))
    assert_same_error(tf1, lambda tf: tf.nn.uniform_candidate_sampler(
        tf.placeholder_with_default(np.array([1, 2], np.int64), None), 1, 3, True, 10))
    with pytest.raises(errors.InvalidArgumentError, match="Sampler's range is too small"):
        with fl.Session() as s:
            s.run(fl.nn.uniform_candidate_sampler(LABELS, 1, 11, True, 10))
    with pytest.raises(ValueError, match="rank 2"):
        fl.nn.log_uniform_candidate_sampler(np.array([1, 2], np.int64), 1, 3, True, 10)


def test_compute_accidental_hits(tf1):
    sampled = np.array([3, 5, 1, 3, 9, 7], np.int64)  # 3 twice: the last position counts
    assert_same(tf1, lambda tf: list(tf.nn.compute_accidental_hits(LABELS2, sampled, 2)))
    assert_same(tf1, lambda tf: list(tf.nn.compute_accidental_hits(LABELS, [2, 4], 1)))
    assert_same_error(tf1, lambda tf: tf.nn.compute_accidental_hits(
        tf.placeholder_with_default(LABELS2, None), sampled, 1))


def _problem(tf, loss_fn, num_true=1, **kw):
    rng = np.random.default_rng(3)
    classes, dim, batch = 40, 6, 5
    w0 = rng.standard_normal((classes, dim)).astype(np.float32)
    b0 = rng.standard_normal(classes).astype(np.float32) * 0.1
    x = rng.standard_normal((batch, dim)).astype(np.float32)
    labels = rng.integers(0, classes, (batch, num_true))
    tf.set_random_seed(2)
    w = tf.Variable(w0, name="w")
    b = tf.Variable(b0, name="b")
    loss = getattr(tf.nn, loss_fn)(w, b, labels, x, num_sampled=8, num_classes=classes,
                                   num_true=num_true, **kw)
    return w, b, loss


@pytest.mark.parametrize("loss_fn", ["nce_loss", "sampled_softmax_loss"])
@pytest.mark.parametrize("num_true", [1, 3])
def test_sampled_losses_and_gradients(tf1, loss_fn, num_true):
    def build(tf):
        w, b, loss = _problem(tf, loss_fn, num_true)
        return [loss] + tf.gradients(tf.reduce_mean(loss), [w, b])

    got = assert_same(tf1, build, rtol=1e-5, atol=1e-6)
    assert got[0].shape == (5,)


def test_nce_loss_with_accidental_hits_removed(tf1):
    assert_same(tf1, lambda tf: _problem(tf, "nce_loss", 2, remove_accidental_hits=True)[2],
                rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("loss_fn", ["nce_loss", "sampled_softmax_loss"])
def test_three_sgd_steps_like_tensorflow(tf1, loss_fn):
    def build(tf):
        w, b, loss = _problem(tf, loss_fn)
        return tf.reduce_mean(loss), tf.train.GradientDescentOptimizer(0.5).minimize(
            tf.reduce_mean(loss))

    def train(tf):
        g = tf.Graph()
        with g.as_default():
            loss, step = build(tf)
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                return [s.run([loss, step])[0] for _ in range(3)]

    np.testing.assert_allclose(train(fl), train(tf1), rtol=1e-5)


def test_sharded_weights_gather_from_each_shard(tf1):
    def build(tf):
        rng = np.random.default_rng(0)
        shards = [tf.Variable(rng.standard_normal((7, 4)).astype(np.float32)) for _ in range(3)]
        b = tf.Variable(np.zeros(21, np.float32))
        x = rng.standard_normal((2, 4)).astype(np.float32)
        tf.set_random_seed(9)
        return tf.nn.sampled_softmax_loss(shards, b, np.array([[4], [20]]), x, 5, 21,
                                          partition_strategy="div")

    assert_same(tf1, build, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("loss_fn,kw", [("sampled_softmax_loss", {}),
                                        ("nce_loss", {"remove_accidental_hits": True})])
def test_the_loss_graph_is_tensorflows(tf1, loss_fn, kw):
    def ops(tf):
        g = tf.Graph()
        with g.as_default():
            _problem(tf, loss_fn, 2, **kw)
        return [(op.name, op.type, [t.name for t in op.inputs]) for op in g.get_operations()]

    assert sorted(ops(fl)) == sorted(ops(tf1))


def test_word2vec_step_runs_on_the_sampled_values_given():
    w, b = fl.Variable(np.ones((10, 3), np.float32)), fl.Variable(np.zeros(10, np.float32))
    sv = (np.array([1, 2], np.int64), np.full((1, 1), 0.5, np.float32), np.full(2, 0.25, np.float32))
    loss = fl.nn.nce_loss(w, b, np.array([[0]]), np.ones((1, 3), np.float32), 2, 10,
                          sampled_values=sv)
    with fl.Session() as s:
        s.run(fl.global_variables_initializer())
        got = s.run(loss)
    # logits: true 3 - log 0.5, sampled 3 - log 0.25 each; labels 1, 0, 0
    z = np.array([3 - np.log(0.5), 3 - np.log(0.25), 3 - np.log(0.25)])
    want = np.log1p(np.exp(-z[0])) + np.sum(z[1:] + np.log1p(np.exp(-z[1:])))
    np.testing.assert_allclose(got, [want], rtol=1e-5)



def test_sampled_softmax_over_a_partitioned_variable_gathers_on_each_shard(tf1):
    """A PartitionedVariable's shards are the weights (TensorFlow's rule): the loss is
    TensorFlow's, and each Gather reads its own shard, so only the gathered rows would
    cross to another device -- never the whole matrix."""
    def build(tf):
        w = tf.get_variable("sm_w", shape=[20, 3], partitioner=tf.fixed_size_partitioner(3),
                            initializer=tf.random_uniform_initializer(-1.0, 1.0, seed=3))
        b = tf.get_variable("sm_b", initializer=np.linspace(-0.5, 0.5, 20).astype(np.float32))
        x = tf.constant(np.linspace(-1, 1, 15).reshape(5, 3).astype(np.float32))
        loss = tf.nn.sampled_softmax_loss(w, b, LABELS, x, num_sampled=6, num_classes=20, seed=2)
        return [loss, tf.gradients(tf.reduce_sum(loss), [x])[0]]

    def initialized(tf):
        g = tf.Graph()
        with g.as_default():
            t = build(tf)
            with tf.Session(graph=g) as s:
                s.run(tf.global_variables_initializer())
                return s.run(t), g

    (want, _), (got, g) = initialized(tf1), initialized(fl)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-7)
    shard_reads = {op.inputs[0].op.name for op in g.get_operations() if op.type in ("GatherV2", "Gather")}
    assert {"sm_w/part_0/read", "sm_w/part_1/read", "sm_w/part_2/read"} <= shard_reads
