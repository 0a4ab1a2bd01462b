"""Variable scopes and get_variable: names, reuse semantics and errors, against
TensorFlow 1.x."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same


def same_graph_facts(tf1, build):
    """`build(tf)` returns plain Python facts about the graph it built (names, dtypes,
    error messages): they must be equal under TensorFlow and flowlab."""
    with tf1.Graph().as_default():
        expected = build(tf1)
    with fl.Graph().as_default():
        actual = build(fl)
    assert actual == expected
    return actual


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class and message are the facts compared
        return type(e).__name__, str(e).split("\n")[0]
    return None


def _ops(tf):
    return [f"{op.name}:{op.type}" for op in tf.get_default_graph().get_operations()]


def test_get_variable_builds_tensorflows_ops(tf1):
    def build(tf):
        with tf.variable_scope("foo"):
            v = tf.get_variable("v", [2, 3])
            i = tf.get_variable("i", [2], dtype=tf.int32)
            b = tf.get_variable("b", [2], dtype=tf.bool)
            c = tf.get_variable("c", [], initializer=tf.constant_initializer(3))
        return [(x.name, x.dtype.name, x.shape.as_list(), x.initializer.name, x.value().name)
                for x in (v, i, b, c)], _ops(tf)

    same_graph_facts(tf1, build)


def test_scope_and_name_scope_names(tf1):
    def build(tf):
        out = []
        with tf.variable_scope("foo") as sc:
            out.append((sc.name, sc.original_name_scope, tf.constant(1.0).name))
            v = tf.get_variable("v", [1])
        with tf.variable_scope("foo", reuse=True) as sc2:
            out.append((sc2.name, sc2.original_name_scope, tf.constant(1.0).name,
                        tf.get_variable("v", [1]) is v))
        with tf.variable_scope(sc):  # re-enter a scope object
            out.append(tf.constant(1.0).name)
            with tf.variable_scope("bar") as bar:
                out.append((bar.name, bar.original_name_scope, tf.constant(1).name))
        with tf.variable_scope(sc, auxiliary_name_scope=False) as same:
            out.append((same.name, same.original_name_scope, tf.constant(1).name))
        for _ in range(2):
            with tf.variable_scope(None, default_name="layer") as d:
                with tf.variable_scope(None, default_name="sub") as e:
                    out.append((d.name, e.name, e.original_name_scope, tf.constant(1).name))
        with tf.variable_scope("blk", default_name="ignored") as d:
            out.append((d.name, d.original_name_scope))
        with tf.variable_scope("outer/deep") as d:
            out.append((d.name, d.original_name_scope, tf.constant(1).name))
        with tf.name_scope("ns"):
            with tf.variable_scope("in2") as i:
                w = tf.get_variable("h", [1])
                out.append((i.name, i.original_name_scope, tf.constant(1).name, w.name, w.op.name))
            q = tf.get_variable("q", [1])
            out.append((q.name, q.initializer.name, q.value().name))
        out.append((tf.get_variable_scope().name, tf.get_variable_scope().reuse))
        return out

    same_graph_facts(tf1, build)


def test_reuse_semantics(tf1):
    def build(tf):
        out = []
        with tf.variable_scope("a", reuse=tf.AUTO_REUSE):
            x1 = tf.get_variable("x", [1], dtype=tf.int32)
        with tf.variable_scope("a", reuse=tf.AUTO_REUSE):
            x2 = tf.get_variable("x", [1], dtype=tf.int32)
        out.append(x1 is x2)
        with tf.variable_scope("outer", reuse=True):
            with tf.variable_scope("inner", reuse=False) as i:  # False inherits True
                out.append(i.reuse)
        with tf.variable_scope("b"):
            y = tf.get_variable("y", [2])
            tf.get_variable_scope().reuse_variables()
            out.append(tf.get_variable("y", [2]) is y)
            out.append(tf.get_variable_scope().reuse)
        with tf.variable_scope("b", reuse=True):
            out.append(tf.get_variable("y") is y)  # shape may be omitted when reusing
        out.append(len(tf.global_variables()))
        return out

    same_graph_facts(tf1, build)


def test_get_variable_errors(tf1):
    def build(tf):
        with tf.variable_scope("foo"):
            tf.get_variable("v", [2, 3])
        with tf.variable_scope("a"):
            tf.get_variable("x", [1], dtype=tf.int32)

        def again():
            with tf.variable_scope("foo"):
                tf.get_variable("v", [2, 3])

        def missing():
            with tf.variable_scope("foo", reuse=True):
                tf.get_variable("zz", [1])

        def bad_shape():
            with tf.variable_scope("a", reuse=True):
                tf.get_variable("x", [2], dtype=tf.int32)

        def bad_dtype():
            with tf.variable_scope("a", reuse=True):
                tf.get_variable("x", [1], dtype=tf.float32)

        return [_error(f) for f in (
            again, missing, bad_shape, bad_dtype,
            lambda: tf.get_variable("noshape"),
            lambda: tf.get_variable("x", [2], initializer=tf.constant([1.0, 2.0])),
            lambda: tf.get_variable("x2", dtype=tf.int32, initializer=tf.constant([1.0, 2.0])),
            lambda: tf.get_variable("x5", [2], dtype=tf.complex64),
            lambda: tf.get_variable("x8", [None, 2]),
            lambda: tf.variable_scope(3).__enter__(),
            lambda: tf.variable_scope(None),
            lambda: tf.variable_scope(None, default_name="q", reuse=True).__enter__(),
            lambda: tf.variable_scope("z", reuse=3),
        )]

    errs = same_graph_facts(tf1, build)
    assert errs[0] == ("ValueError", "Variable foo/v already exists, disallowed. Did you mean to set "
                       "reuse=True or reuse=tf.AUTO_REUSE in VarScope? Originally defined at:")
    assert errs[1][1] == ("Variable foo/zz does not exist, or was not created with tf.get_variable(). "
                          "Did you mean to set reuse=tf.AUTO_REUSE in VarScope?")


def test_already_exists_error_quotes_the_user_line():
    with fl.variable_scope("foo"):
        fl.get_variable("v", [1])
    with pytest.raises(ValueError) as info, fl.variable_scope("foo"):
        fl.get_variable("v", [1])
    assert "test_variable_scope.py" in str(info.value)


def test_initializer_forms(tf1):
    def build(tf):
        vs = [
            tf.get_variable("t", initializer=tf.constant([1.0, 2.0])),
            tf.get_variable("np", initializer=np.array([1, 2])),
            tf.get_variable("lst", initializer=[1.0, 2.0]),
            tf.get_variable("cls", [2], initializer=tf.zeros_initializer),
            tf.get_variable("fn", initializer=lambda: tf.ones([2])),
            tf.get_variable("fn_int", initializer=lambda: tf.ones([2], tf.int32)),
            tf.get_variable("s", [2], dtype=tf.string),
            tf.get_variable("c", [2, 3], initializer=tf.constant_initializer([1, 2, 3, 4])),
        ]
        return [(v.name, v.dtype.name, v.shape.as_list(), v.initial_value.op.name) for v in vs], _ops(tf)

    same_graph_facts(tf1, build)

    def values(tf):
        tf.get_variable("np", initializer=np.array([1, 2]))
        tf.get_variable("c", [2, 3], initializer=tf.constant_initializer([1, 2, 3, 4]))
        tf.get_variable("i", [2], dtype=tf.int64)
        tf.get_variable("s", [2], dtype=tf.string)
        with tf.variable_scope("outer", initializer=tf.constant_initializer(5.0), dtype=tf.float64):
            tf.get_variable("g", [2])
        return [v.value() for v in tf.global_variables()]

    assert_same(tf1, values)


def test_scope_defaults_are_inherited(tf1):
    def build(tf):
        out = []
        with tf.variable_scope("outer", initializer=tf.constant_initializer(5.0), dtype=tf.float64) as o:
            out.append((o.name, o.original_name_scope, o.reuse, o.dtype.name))
            g = tf.get_variable("g", [2])
            out.append((g.dtype.name, g.initial_value.op.name))
            with tf.variable_scope("in", reuse=True) as i:
                out.append((i.name, i.original_name_scope, i.reuse, i.dtype.name))
        with tf.variable_scope(o, auxiliary_name_scope=False) as o2:
            out.append((o2.name, o2.original_name_scope, o2.dtype.name, tf.constant(1).name))
        return out

    same_graph_facts(tf1, build)


def test_local_and_non_trainable(tf1):
    def build(tf):
        lv = tf.get_local_variable("lv", [1])
        nt = tf.get_variable("nt", [1], trainable=False)
        tr = tf.get_variable("tr", [1])
        return ([v.name for v in tf.local_variables()], [v.name for v in tf.global_variables()],
                [v.name for v in tf.trainable_variables()], lv.trainable, nt.trainable, tr.trainable)

    same_graph_facts(tf1, build)


def test_custom_getter_and_regularizer(tf1):
    def build(tf):
        def getter(getter, name, *args, **kwargs):
            return getter(name + "_suffix", *args, **kwargs)

        with tf.variable_scope("cg", custom_getter=getter):
            a = tf.get_variable("w", [1])
        with tf.variable_scope("reg", regularizer=lambda v: tf.reduce_sum(v)):
            tf.get_variable("w", [2])
        losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
        return a.name, len(losses), _ops(tf)[-4:]

    same_graph_facts(tf1, build)


def test_seeded_default_initializer_matches_tensorflow(tf1):
    def build(tf):
        tf.set_random_seed(7)
        with tf.variable_scope("layer"):
            return [tf.get_variable("w", [3, 4]).value(), tf.get_variable("b", [4], dtype=tf.int32).value()]

    out = assert_same(tf1, build, rtol=0, atol=0)
    limit = np.sqrt(6 / 7)
    assert np.all(np.abs(out[0]) <= limit)


def test_resource_variables_are_refused():
    # (partitioner= is supported: tests/train/test_partitioned_variables.py)
    with pytest.raises(NotImplementedError, match="use_resource"):
        fl.get_variable("r", [1], use_resource=True)


def test_scopes_are_per_graph_and_per_thread():
    g1, g2 = fl.Graph(), fl.Graph()
    with g1.as_default(), fl.variable_scope("s"):
        a = fl.get_variable("v", [1])
    with g2.as_default(), fl.variable_scope("s"):
        b = fl.get_variable("v", [1])  # a new graph has its own store: no clash
    assert a is not b and a.graph is g1 and b.graph is g2

    seen = []
    with fl.variable_scope("main_thread"):
        t = threading.Thread(target=lambda: seen.append(fl.get_variable_scope().name))
        t.start()
        t.join()
    assert seen == [""]


def test_variable_scope_enters_the_graph_of_its_values():
    g = fl.Graph()
    with g.as_default():
        x = fl.constant(1.0)
    with fl.variable_scope("s", values=[x]):
        v = fl.get_variable("v", [1])
    assert v.graph is g


def test_improper_nesting_is_detected():
    outer = fl.variable_scope("a")
    inner = fl.variable_scope("b")
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(RuntimeError, match="Improper nesting of variable_scope"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
