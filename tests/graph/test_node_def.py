"""Operation.node_def is TensorFlow's NodeDef proto (`tf.NodeDef`), with TensorFlow's
fields and text, as the multi-tower idiom `op.node_def.op` reads it."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl


def _graph(tf):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.constant(np.ones((3, 2), np.float32), name="w")
        with tf.device("/cpu:0"):
            y = tf.matmul(x, w, transpose_b=False, name="mm")
        c = tf.constant(0.0, name="c")
        with tf.control_dependencies([c]):
            z = tf.identity(y, name="z")
        s = tf.split(y, 2, axis=1, name="split")
        a = tf.add(s[1], 1.0, name="add")
    return g, {"x": x, "mm": y, "z": z, "add": a}


@pytest.mark.parametrize("name", ["x", "mm", "z", "add"])
def test_fields_match_tensorflow(tf1, name):
    got = []
    for tf in (tf1, fl):
        _, ts = _graph(tf)
        nd = ts[name].op.node_def
        got.append((nd.name, nd.op, list(nd.input), nd.device, sorted(nd.attr.keys())))
    assert got[1] == got[0]


@pytest.mark.parametrize("name", ["mm", "z"])
def test_text_matches_tensorflow(tf1, name):
    texts = [str(_graph(tf)[1][name].op.node_def) for tf in (tf1, fl)]
    assert texts[1] == texts[0]


def test_is_the_nodedef_class(tf1):
    _, ts = _graph(fl)
    nd = ts["mm"].op.node_def
    assert isinstance(nd, fl.NodeDef)
    assert nd.attr["transpose_a"].b is False and nd.attr["T"].type == fl.float32.as_datatype_enum
    parsed = fl.NodeDef()
    parsed.ParseFromString(nd.SerializeToString())
    assert parsed == nd
    tf_nd = tf1.NodeDef()
    tf_nd.ParseFromString(nd.SerializeToString())  # TensorFlow reads it
    assert tf_nd.op == "MatMul" and list(tf_nd.input) == ["x", "w"]


def test_multi_tower_idiom():
    g, _ = _graph(fl)
    types = {op.node_def.op for op in g.get_operations()}
    assert {"Placeholder", "Const", "MatMul", "Identity", "Split", "AddV2"} <= types
