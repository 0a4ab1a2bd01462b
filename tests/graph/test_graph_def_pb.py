"""flowlab graphs as TensorFlow GraphDef protos and back: write_graph (.pb / .pbtxt)
that TensorFlow imports and runs, TensorFlow's GraphDefs imported into flowlab, the
missing-op error, and tf.graph_util against TensorFlow's."""

from __future__ import annotations

import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np
import pytest
from google.protobuf import text_format
from tensorboard.compat.proto import graph_pb2

import flowlab as fl
from flowlab.graph.graph_def_pb import PRODUCER, from_proto, parse_proto, to_proto

RS = np.random.RandomState(5)
X = RS.randn(4, 3).astype(np.float32)
W = RS.randn(3, 2).astype(np.float32)


def _mlp(tf):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(W, name="w")
    b = tf.Variable(tf.zeros([2]), name="b")
    h = tf.nn.relu(tf.matmul(x, w) + b, name="h")
    return x, tf.reduce_sum(h * 3.0, axis=1, name="out")


def _varied_graph():
    with fl.device("/cpu:0"):
        a = fl.constant(np.arange(6, dtype=np.int64).reshape(2, 3), name="a")
    s = fl.constant([b"x", b"\x00yz"], name="s")
    h = fl.constant(np.array([1.5, -0.0, np.inf], np.float16), name="h")
    f = fl.placeholder(fl.float32, [None, 3], name="f")
    with fl.colocate_with(a.op):
        c = fl.cast(a, fl.float32, name="c")
    with fl.control_dependencies([s.op, h.op]):
        y = fl.concat([c, f], axis=0, name="y")
    fl.strided_slice(y, [0, 1], [2, 3], [1, 1], begin_mask=1, name="ss")
    fl.nn.conv2d(fl.zeros([1, 4, 4, 1]), fl.zeros([2, 2, 1, 1]), [1, 1, 1, 1], "SAME", name="conv")
    fl.constant(True, name="t")
    fl.constant(1 + 2j, name="z")
    return fl.get_default_graph()


def test_proto_round_trip_is_exact():
    g = _varied_graph()
    gd = g.as_graph_def(add_shapes=True)
    pb = to_proto(gd)
    assert isinstance(pb, graph_pb2.GraphDef) and pb.versions.producer == PRODUCER
    back = from_proto(pb)
    conv = [n for n in back["node"] if n["name"] == "conv"][0]
    assert conv["attr"]["explicit_paddings"] == {"list": {}}  # an empty ListValue has no kind
    assert from_proto(pb.SerializeToString()) == back
    assert from_proto(text_format.MessageToString(pb)) == back
    with fl.Graph().as_default() as g2:
        fl.import_graph_def(back, name="")
    assert g2.as_graph_def(add_shapes=True) == gd  # importing restores the kind: exact
    nodes = {n.name: n for n in pb.node}
    assert nodes["a"].device == "/device:CPU:0"
    assert list(nodes["c"].attr["_class"].list.s) == [b"loc:@a"]
    assert list(nodes["y"].input) == ["c", "f", "y/axis"] and list(nodes["y/axis"].input) == ["^s", "^h"]
    assert [d.size for d in nodes["y"].attr["_output_shapes"].list.shape[0].dim] == [-1, 3]


def test_tensorflow_imports_and_runs_what_write_graph_writes(tf1, tmp_path):
    x, out = _mlp(fl)
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        want = sess.run(out, {x: X})
        frozen = fl.graph_util.convert_variables_to_constants(sess, sess.graph.as_graph_def(), ["out"])
    for name, as_text in (("frozen.pbtxt", True), ("frozen.pb", False)):
        path = fl.train.write_graph(frozen, str(tmp_path), name, as_text=as_text)
        data = open(path, "rb").read()
        gd = tf1.GraphDef()
        if as_text:
            text_format.Parse(data.decode(), gd)
        else:
            gd.ParseFromString(data)
        with tf1.Graph().as_default() as g:
            tf1.import_graph_def(gd, name="")
            with tf1.Session(graph=g) as sess:
                got = sess.run("out:0", {"x:0": X})
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_write_graph_text_is_tensorflows_text_format(tmp_path):
    fl.constant(1.0, name="one")
    path = fl.io.write_graph(fl.get_default_graph(), str(tmp_path), "g.pbtxt")
    text = open(path).read()
    assert text.startswith('node {\n  name: "one"\n  op: "Const"\n')
    assert "_output_shapes" not in text  # as TensorFlow's write_graph: plain as_graph_def()
    assert f"producer: {PRODUCER}" in text


def _tf_graph_def(tf1, tmp_path, as_text):
    with tf1.Graph().as_default() as g:
        x, out = _mlp(tf1)
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            want = sess.run(out, {x: X})
            frozen = tf1.graph_util.convert_variables_to_constants(sess, g.as_graph_def(), ["out"])
        name = "tf.pbtxt" if as_text else "tf.pb"
        path = tf1.train.write_graph(frozen, str(tmp_path), name, as_text=as_text)
    return path, want


@pytest.mark.parametrize("as_text", [True, False], ids=["pbtxt", "pb"])
def test_flowlab_imports_and_runs_a_graph_tensorflow_wrote(tf1, tmp_path, as_text):
    path, want = _tf_graph_def(tf1, tmp_path, as_text)
    data = open(path, "rb").read()
    gd = fl.GraphDef()
    if as_text:
        text_format.Parse(data.decode(), gd)
    else:
        gd.ParseFromString(data)
    with fl.Graph().as_default():
        x2 = fl.placeholder(fl.float32, [None, 3], name="x2")
        (out,) = fl.import_graph_def(gd, input_map={"x:0": x2}, return_elements=["out:0"])
        with fl.Session() as sess:
            got = sess.run(out, {x2: X})
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert out.name == "import/out:0"


def test_missing_op_types_are_listed_in_one_error():
    pb = parse_proto(
        'node { name: "a" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }\n'
        'node { name: "b" op: "FancyOp" input: "a" }\n'
        'node { name: "c" op: "FancyOp" input: "b" }\n'
        'node { name: "d" op: "OtherOp" input: "c" }\n'
    )
    before = len(fl.get_default_graph().get_operations())
    with pytest.raises(fl.errors.NotFoundError) as e:
        fl.import_graph_def(pb)
    assert str(e.value) == (
        "The GraphDef uses 2 op types that flowlab does not have: 'FancyOp' (2 nodes, e.g. 'b'), "
        "'OtherOp' (1 node, e.g. 'd'). Nothing was imported."
    )
    assert isinstance(e.value, ValueError)
    assert len(fl.get_default_graph().get_operations()) == before


def test_attrs_flowlab_does_not_declare_are_dropped_with_a_warning():
    pb = parse_proto(
        'node { name: "a" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }'
        '  attr { key: "future_attr" value { i: 3 } } attr { key: "_private" value { s: "kept" } } }'
    )
    with pytest.warns(UserWarning, match=r"ignoring attrs flowlab's ops do not declare \(Placeholder: future_attr\)"):
        (a,) = fl.import_graph_def(pb, return_elements=["a"], name="")
    assert a.get_attr("_private") == "kept"
    assert pb.node[0].attr["future_attr"].i == 3  # the caller's proto is not modified


def test_unrepresentable_protos_are_value_errors():
    with pytest.raises(ValueError, match="Node 'b': attr 'dtype': dtype DT_BFLOAT16 is not supported"):
        from_proto(parse_proto('node { name: "b" op: "Placeholder" attr { key: "dtype" value { type: DT_BFLOAT16 } } }'))
    with pytest.raises(ValueError, match="holds functions"):
        from_proto(parse_proto('library { function { signature { name: "f" } } }'))
    with pytest.raises(ValueError, match="neither a binary nor a text GraphDef"):
        parse_proto(b"\xff\xfe not a graph")


def test_to_proto_refuses_what_is_not_a_graph():
    with pytest.raises(TypeError, match="expects a flowlab Graph or GraphDef dict"):
        to_proto(42)
    with pytest.raises(ValueError, match="format"):
        to_proto({"node": []})


# --- tf.graph_util -------------------------------------------------------------------
def _both_graph_defs(tf1):
    with tf1.Graph().as_default() as tg:
        _mlp(tf1)
        tf1.identity(tg.get_tensor_by_name("h:0"), name="unused")
    with fl.Graph().as_default() as fg:
        _mlp(fl)
        fl.identity(fg.get_tensor_by_name("h:0"), name="unused")
    return tg, fg


def test_extract_sub_graph_keeps_what_tensorflow_keeps(tf1):
    tg, fg = _both_graph_defs(tf1)
    want = [n.name for n in tf1.graph_util.extract_sub_graph(tg.as_graph_def(), ["h"]).node]
    got = fl.graph_util.extract_sub_graph(fg.as_graph_def(), ["h"])
    assert isinstance(got, graph_pb2.GraphDef)  # a proto, as TensorFlow's, from a dict too
    assert [n.name for n in got.node] == want
    from_proto_in = fl.graph_util.extract_sub_graph(to_proto(fg), ["h"])
    assert [n.name for n in from_proto_in.node] == want
    with pytest.raises(AssertionError, match="nope is not in graph"):
        fl.graph_util.extract_sub_graph(fg.as_graph_def(), ["nope"])
    with pytest.raises(TypeError, match="dest_nodes must be an iterable of strings"):
        fl.graph_util.extract_sub_graph(fg.as_graph_def(), "h")


def test_convert_variables_to_constants_as_tensorflow(tf1):
    tg, fg = _both_graph_defs(tf1)
    with tf1.Session(graph=tg) as sess:
        sess.run(tf1.global_variables_initializer())
        want = tf1.graph_util.convert_variables_to_constants(sess, tg.as_graph_def(), ["out"])
    with fl.Session(graph=fg) as sess:
        sess.run(fl.global_variables_initializer())
        got = fl.graph_util.convert_variables_to_constants(sess, fg.as_graph_def(), ["out"])
        only_w = fl.graph_util.convert_variables_to_constants(
            sess, fg.as_graph_def(), ["out"], variable_names_blacklist=["b"])
    assert [(n.name, n.op) for n in got.node] == [(n.name, n.op) for n in want.node]
    consts = {n.name: n for n in got.node}
    assert consts["w"].op == "Const" and consts["w"].attr["dtype"].type == 1  # DT_FLOAT
    np.testing.assert_array_equal(np.frombuffer(consts["w"].attr["value"].tensor.tensor_content, "<f4"),
                                  W.reshape(-1))
    with fl.Graph().as_default():
        (out,) = fl.import_graph_def(got, return_elements=["out:0"], name="")
        assert not fl.global_variables()
        with fl.Session() as sess:
            np.testing.assert_allclose(sess.run(out, {"x:0": X}),
                                       np.maximum(X @ W, 0).sum(axis=1) * 3.0, rtol=1e-5)
    assert {n.name: n.op for n in only_w.node}["b"] == "VariableV2"


def test_remove_training_nodes_as_tensorflow(tf1):
    with fl.Graph().as_default() as fg:
        x = fl.placeholder(fl.float32, [2], name="x")
        c = fl.check_numerics(x, "bad", name="check")
        fl.add(c, x, name="z")
        i = fl.identity(x, name="ident")
        fl.stop_gradient(i, name="stop")
        fl.add(fl.identity(x, name="kept"), 1.0, name="y")
    gd = fg.as_graph_def()
    tf_gd = tf1.GraphDef()
    tf_gd.ParseFromString(to_proto(gd).SerializeToString())
    want = tf1.graph_util.remove_training_nodes(tf_gd, protected_nodes=["kept"])
    got = fl.graph_util.remove_training_nodes(gd, protected_nodes=["kept"])
    assert [(n.name, list(n.input)) for n in got.node] == [(n.name, list(n.input)) for n in want.node]


def test_must_run_on_cpu_and_tensor_shape():
    a = fl.constant(1, name="i")
    b = fl.constant(1.0, name="f")
    assert fl.graph_util.must_run_on_cpu(a.op) and not fl.graph_util.must_run_on_cpu(b.op)
    assert fl.graph_util.must_run_on_cpu(to_proto(fl.get_default_graph()).node[0])
    assert fl.graph_util.tensor_shape_from_node_def_name(fl.get_default_graph(), "f").as_list() == []


def test_a_tensorflow_training_graph_imports_and_trains_the_same(tf1):
    with tf1.Graph().as_default() as g:
        x = tf1.placeholder(tf1.float32, [None, 3], name="x")
        w = tf1.Variable(tf1.ones([3, 2]), name="w")
        loss = tf1.reduce_mean(tf1.square(tf1.nn.sigmoid(tf1.matmul(x, w))), name="loss")
        tf1.train.AdamOptimizer(0.1).minimize(loss, name="train")
        tf1.global_variables_initializer()
        tf1.summary.scalar("loss_s", loss)
        data = g.as_graph_def().SerializeToString()
        with tf1.Session() as sess:
            sess.run("init")
            for _ in range(3):
                sess.run("train", {x: X})
            want = sess.run(["loss:0", "loss_s:0", "w:0"], {x: X})
    pb = fl.GraphDef()
    pb.ParseFromString(data)
    with fl.Graph().as_default():
        fl.import_graph_def(pb, name="")
        with fl.Session() as sess:
            sess.run("init")
            for _ in range(3):
                sess.run("train", {"x:0": X})
            got = sess.run(["loss:0", "loss_s:0", "w:0"], {"x:0": X})
    assert got[0] == want[0] and got[1] == want[1]  # the summary's bytes too
    np.testing.assert_array_equal(got[2], want[2])


def test_a_tensorflow_conv_loop_cond_graph_imports_and_trains_alike(tf1):
    images = RS.rand(2, 8, 8, 3).astype(np.float32)
    with tf1.Graph().as_default() as g:
        x = tf1.placeholder(tf1.float32, [None, 8, 8, 3], name="x")
        k = tf1.Variable(tf1.random_normal([3, 3, 3, 4], seed=1), name="k")
        c = tf1.nn.sigmoid(tf1.nn.conv2d(x, k, [1, 1, 1, 1], "SAME"))
        p = tf1.nn.max_pool(c, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        m, v = tf1.nn.moments(p, [0, 1, 2])
        f = tf1.reshape(tf1.nn.batch_normalization(p, m, v, None, None, 1e-3), [-1, 64])
        _, s = tf1.while_loop(lambda i, s: i < 3,
                              lambda i, s: (i + 1, tf1.cond(s > 0, lambda: s * 0.5, lambda: s + 1.0)),
                              [tf1.constant(0), tf1.reduce_sum(f * f)])
        loss = tf1.identity(s + tf1.reduce_mean(tf1.nn.softmax(f)), name="loss")
        tf1.train.MomentumOptimizer(0.1, 0.9).minimize(loss, name="train")
        init = tf1.global_variables_initializer()
        data = g.as_graph_def().SerializeToString()
        with tf1.Session() as sess:
            sess.run(init)
            kernel = sess.run(k)  # flowlab's Philox stream is not under test here
            sess.run("train", {x: images})
            want = sess.run(loss, {x: images})
    pb = fl.GraphDef()
    pb.ParseFromString(data)
    with fl.Graph().as_default() as fg:
        fl.import_graph_def(pb, name="")
        set_kernel = fl.assign(fg.get_tensor_by_name("k:0"), kernel)
        with fl.Session() as sess:
            sess.run("init")
            sess.run(set_kernel)
            sess.run("train", {"x:0": images})
            got = sess.run("loss:0", {"x:0": images})
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_gradient_ops_import_before_any_gradients_call():
    """ReluGrad & co. are declared by the gradient modules, which load lazily: a fresh
    process that imports a graph holding them first must still find them."""
    import subprocess
    import sys

    code = (
        "import flowlab as fl\n"
        "from flowlab.graph.graph_def_pb import parse_proto\n"
        "pb = parse_proto('node { name: \"a\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } }'\n"
        "                 'node { name: \"g\" op: \"ReluGrad\" input: \"a\" input: \"a\" '\n"
        "                 'attr { key: \"T\" value { type: DT_FLOAT } } }')\n"
        "(g,) = fl.import_graph_def(pb, return_elements=['g:0'], name='')\n"
        "print(fl.Session().run(g, {'a:0': [-1.0, 2.0]}).tolist())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr[-2000:]
    import ast

    assert ast.literal_eval(out.stdout.strip().splitlines()[-1]) == [0.0, 2.0]


def test_as_graph_def_reads_prints_and_serializes_as_tensorflows(tf1):
    # The idioms of TF1 programs: node names, their count, an op type, the bytes a frozen
    # model is written as, printing the GraphDef.
    def idioms(tf):
        with tf.Graph().as_default() as g:
            _mlp(tf)
            gd = g.as_graph_def()
            names = [n.name for n in gd.node]
            ops = {n.name: (n.op, list(n.input)) for n in gd.node}
            data = gd.SerializeToString()
            text = str(gd)
        parsed = graph_pb2.GraphDef.FromString(data)
        from_text = text_format.Parse(text, graph_pb2.GraphDef())
        return names, len(gd.node), ops, [n.name for n in parsed.node], [n.name for n in from_text.node], \
            gd.versions.producer, gd.ByteSize() == len(data)

    want, got = idioms(tf1), idioms(fl)
    assert got[:5] == want[:5]
    assert got[5] == PRODUCER and got[6] and want[6]


def test_a_serialized_as_graph_def_imports_and_runs_in_tensorflow(tf1):
    with fl.Graph().as_default() as g:
        x = fl.placeholder(fl.float32, [None, 3], name="x")
        fl.multiply(fl.tanh(x), 2.0, name="y")
        data = g.as_graph_def().SerializeToString()
    with tf1.Graph().as_default() as tg:
        tf1.import_graph_def(tf1.GraphDef.FromString(data), name="")
        with tf1.Session(graph=tg) as s:
            got = s.run("y:0", {"x:0": X})
    np.testing.assert_allclose(got, np.tanh(X) * 2.0, rtol=1e-6)


def test_as_graph_def_is_still_the_json_dict():
    with fl.Graph().as_default() as g:
        fl.constant(1.0, name="c")
        gd = g.as_graph_def()
    assert isinstance(gd, dict) and gd["node"][0]["op"] == "Const"
    from flowlab.graph.graph_def import graph_to_dict, to_json

    assert gd == graph_to_dict(g) and to_json(gd) == to_json(graph_to_dict(g))
