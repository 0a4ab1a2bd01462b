"""Whole TensorFlow 1.x programs, run once with TensorFlow and once with
`import flowlab as tf`; every fetched value and dtype must agree.

Each program is source text executed with `tf` bound to the module under test; it
leaves its results in a variable named `results`.  They use only the core issue's
ops and state (no gradients, no control flow).
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import _compare

PROGRAMS = {
    "feed_forward_layer": """
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        w = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0, name="w")
        b = tf.Variable(tf.zeros([3]), name="b")
        logits = tf.nn.bias_add(tf.matmul(x, w), b)
        probs = tf.nn.softmax(logits)
        labels = tf.constant([0, 2])
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        pred = tf.argmax(probs, axis=1)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            feed = {x: np.array([[1, 2, 3, 4], [-1, 0.5, 2, 0]], np.float32)}
            results = sess.run([logits, probs, loss, pred], feed)
    """,
    "counter_and_assignments": """
        v = tf.Variable(0, name="counter")
        inc = tf.assign_add(v, 1)
        double = tf.assign(v, v * 2)
        with tf.Session() as sess:
            sess.run(v.initializer)
            seen = []
            for _ in range(3):
                seen.append(sess.run(inc))
            seen.append(sess.run(double))
            results = [seen, sess.run(v), v.dtype.name, v.name]
    """,
    "variable_scopes_and_sharing": """
        with tf.variable_scope("layer", initializer=tf.constant_initializer(0.5)):
            a = tf.get_variable("w", [2, 2])
        with tf.variable_scope("layer", reuse=True):
            b = tf.get_variable("w")
        with tf.variable_scope("other"):
            c = tf.get_variable("w", [2], initializer=tf.ones_initializer())
        total = tf.reduce_sum(a) + tf.reduce_sum(b) + tf.reduce_sum(c)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            results = [sess.run(total), [v.name for v in tf.global_variables()], a is b]
    """,
    "array_manipulation": """
        x = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
        parts = tf.split(x, 2, axis=2)
        y = tf.concat([tf.transpose(parts[1], [0, 2, 1]), tf.ones([2, 2, 3])], axis=1)
        z = tf.reshape(y, [-1, 6])
        g = tf.gather(z, [3, 0, 1])
        s = x[:, 1:, ::2]
        oh = tf.one_hot([0, 2, 1], depth=3)
        st = tf.stack([tf.shape(x), tf.shape(x) * 2])
        results = None
        with tf.Session() as sess:
            results = sess.run([y, z, g, s, oh, st, tf.reduce_max(x, axis=[0, 2], keepdims=True)])
    """,
    "elementwise_math_and_broadcasting": """
        a = tf.constant([[1.0, -2.0, 3.5]])
        b = tf.constant([[2.0], [0.5]])
        i = tf.constant([7, -7, 3])
        out = [a + b, a * b - 1, a / b, tf.maximum(a, b), tf.square(a), tf.exp(-tf.abs(a)),
               i // 2, i % 3, tf.cast(a > 0, tf.int32), tf.sqrt(tf.abs(a)), tf.sigmoid(a), tf.tanh(a),
               tf.reduce_sum(i), tf.reduce_mean(tf.cast(i, tf.float32)), tf.round(tf.constant([0.5, 1.5, 2.5]))]
        with tf.Session() as sess:
            results = sess.run(out)
    """,
    "intermediate_feed_and_fetch_structures": """
        x = tf.placeholder(tf.float32, [None], name="x")
        h = tf.square(x, name="h")
        y = tf.reduce_sum(h)
        with tf.Session() as sess:
            r1 = sess.run({"h": h, "y": y}, {x: [1.0, 2.0]})
            r2 = sess.run(y, {h: [10.0, 20.0, 30.0]})
            r3 = sess.run((h, [y]), feed_dict={"x:0": [3.0]})
            results = [r1, r2, r3]
    """,
    "kmeans_assignment_step": """
        points = tf.constant(np.array([[0, 0], [0.5, 0.2], [5, 5], [5.5, 4.8], [9, 0]], np.float32))
        centroids = tf.Variable(tf.slice(points, [0, 0], [2, 2]), name="centroids")
        expanded_points = tf.expand_dims(points, 0)
        expanded_centroids = tf.expand_dims(centroids, 1)
        distances = tf.reduce_sum(tf.square(tf.subtract(expanded_points, expanded_centroids)), 2)
        assignments = tf.argmin(distances, 0)
        means = []
        for c in range(2):
            mask = tf.reshape(tf.where(tf.equal(assignments, c)), [1, -1])
            means.append(tf.reduce_mean(tf.gather(points, mask), axis=[1]))
        new_centroids = tf.concat(means, 0)
        update = tf.assign(centroids, new_centroids)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                _, c_val, a_val = sess.run([update, centroids, assignments])
            results = [c_val, a_val, sess.run(distances)]
    """,
    "seeded_initializers_and_random_ops": """
        tf.set_random_seed(1234)
        w = tf.get_variable("w", [3, 4])
        b = tf.Variable(tf.random_normal([4], stddev=0.1), name="b")
        u = tf.random_uniform([2, 2], minval=-1, maxval=1, seed=7)
        t = tf.truncated_normal([5], seed=3)
        k = tf.random_uniform([3], maxval=10, dtype=tf.int32, seed=9)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run([w, b, u, t, k])
            second = sess.run([u, t])
            results = [first, second]
    """,
    "integer_and_boolean_logic": """
        a = tf.constant([5, -3, 0, 7], dtype=tf.int64)
        b = tf.constant([2, 2, 3, -2], dtype=tf.int64)
        out = [a // b, a % b, tf.div(a, b), tf.truediv(a, b), tf.maximum(a, b), a * b, -a,
               tf.abs(a), tf.sign(a), tf.logical_and(a > 0, b > 0), tf.logical_or(a > 0, b < 0),
               tf.logical_not(a > 0), tf.reduce_any(a > 6), tf.reduce_all(b > 0),
               tf.cast(tf.reduce_prod(b), tf.float32), tf.argmax(a), tf.equal(a, b), tf.not_equal(a, 0)]
        with tf.Session() as sess:
            results = sess.run(out)
    """,
    "dynamic_partition_stitch_and_scatter": """
        data = tf.constant(np.arange(12, dtype=np.float32).reshape(6, 2))
        parts = tf.dynamic_partition(data, [0, 1, 0, 2, 1, 0], 3)
        idx = tf.dynamic_partition(tf.range(6), [0, 1, 0, 2, 1, 0], 3)
        stitched = tf.dynamic_stitch(idx, parts)
        v = tf.Variable(tf.zeros([4, 2]))
        sc = tf.scatter_add(v, [0, 2, 0], tf.ones([3, 2]))
        nd = tf.scatter_nd([[1], [3]], tf.constant([[1.0, 2.0], [3.0, 4.0]]), [4, 2])
        gnd = tf.gather_nd(data, [[0, 1], [5, 0]])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            results = sess.run(parts + [stitched, sc, nd, gnd])
    """,
    "softmax_losses_on_extreme_logits": """
        logits = tf.constant([[1000.0, -1000.0, 0.0], [1.0, 2.0, 3.0]])
        labels = tf.constant([[0.0, 1.0, 0.0], [0.2, 0.3, 0.5]])
        out = [tf.nn.softmax(logits), tf.nn.log_softmax(logits),
               tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits),
               tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 2], logits=logits),
               tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits),
               tf.nn.l2_loss(logits / 100.0), tf.nn.relu6(logits), tf.nn.elu(logits / 500.0),
               tf.nn.softplus(logits)]
        with tf.Session() as sess:
            results = sess.run(out)
    """,
    "control_dependencies_and_group": """
        v = tf.Variable(1.0)
        w = tf.Variable(10.0)
        a = tf.assign_add(v, 1.0)
        with tf.control_dependencies([a]):
            b = tf.assign(w, v * 3.0)
        both = tf.group(a, b)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(both)
            r1 = sess.run([v, w])
            sess.run(b)
            results = [r1, sess.run([v, w]), both.type, [op.name for op in both.control_inputs]]
    """,
    "tuple_collections_and_graph_lookup": """
        x = tf.placeholder(tf.float32, [None, 3], name="inp")
        with tf.name_scope("block"):
            y = tf.reduce_sum(x * 2.0, axis=1, name="out")
        tf.add_to_collection("outputs", y)
        g = tf.get_default_graph()
        y2 = g.get_tensor_by_name("block/out:0")
        with tf.Session() as sess:
            r = sess.run(tf.get_collection("outputs")[0], {"inp:0": [[1, 2, 3]]})
            results = [r, y2 is y, y.name, x.shape.as_list(), y.shape.as_list()]
    """,
}


def _run(module, source: str):
    g = module.Graph()
    env = {"tf": module, "np": np}
    with g.as_default():
        exec(textwrap.dedent(source), env)  # noqa: S102 - test programs written above
    return env["results"]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_tensorflow(tf1, name):
    expected = _run(tf1, PROGRAMS[name])
    actual = _run(fl, PROGRAMS[name])
    _compare(expected, actual, 1e-6, 1e-6, name)
