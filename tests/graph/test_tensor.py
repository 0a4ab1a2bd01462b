"""Tensor and Operation: names, shapes, Python protocol errors, views, node_def and
creation tracebacks, against TensorFlow 1.x where it has the same API."""

from __future__ import annotations

import flowlab as fl
from tests.graph.test_graph import both, error, names


# --- Tensor ------------------------------------------------------------------------
def test_tensor_basics_like_tensorflow(tf1):
    def build(tf):
        a = tf.constant([1.0, 2.0], name="a")
        p = tf.placeholder(tf.float32, name="p")
        i = tf.identity(a, name="i")
        j = tf.add(a, i, name="j")
        out = [a.name, a.value_index, a.dtype.name, str(a.shape), repr(a), str(a), repr(p),
               str(p), a.op.name, a.graph is tf.get_default_graph(),
               [o.name for o in a.consumers()], [o.name for o in i.consumers()],
               j.consumers(), a == a, a != i, hash(a) == hash(a), {a: 1}[a]]
        p.set_shape([None, 3])
        out.append(repr(p))
        p.set_shape([2, None])
        out.append(repr(p))
        p.set_shape(None)
        out.append(str(p.get_shape()))
        with tf.device("/cpu:0"):
            out.append(str(tf.constant(1, name="on_cpu")))
        return out

    got = both(tf1, build)
    assert got[4] == "<tf.Tensor 'a:0' shape=(2,) dtype=float32>"
    assert got[5] == 'Tensor("a:0", shape=(2,), dtype=float32)'


def test_set_shape_errors_like_tensorflow(tf1):
    def build(tf):
        v = tf.constant([1, 2], name="v")
        m = tf.placeholder(tf.float32, [2, None], name="m")
        return [error(lambda: v.set_shape([3])), error(lambda: v.set_shape([2, 1])),
                error(lambda: m.set_shape([3, 4])), error(lambda: m.set_shape([]))]

    got = both(tf1, build)
    assert got[0] == ("ValueError", "Dimension 0 in both shapes must be equal, but are 2 and "
                      "3. Shapes are [2] and [3].")
    assert got[1] == ("ValueError", "Shapes must be equal rank, but are 1 and 2")


def test_tensor_python_protocol_errors_like_tensorflow(tf1):
    def build(tf):
        a = tf.constant([1, 2], name="a")
        s = tf.constant(1, name="s")
        out = []
        for fn in (lambda: bool(a), lambda: iter(a), lambda: iter(s), lambda: list(a),
                   lambda: len(a), lambda: a if a else 0, lambda: [x for x in a]):
            try:
                fn()
            except TypeError as e:
                out.append(type(e).__name__)
        out.append(error(lambda: len(a)))
        return out

    got = both(tf1, build)
    assert got[0] == "OperatorNotAllowedInGraphError"
    assert issubclass(fl.errors.OperatorNotAllowedInGraphError, TypeError)


def test_tensor_is_hashable_by_identity_and_weakrefable():
    import weakref

    a = fl.constant(1.0)
    b = fl.constant(1.0)
    assert a is not b and a != b and len({a, b, a}) == 2
    assert weakref.ref(a)() is a


# --- Operation ---------------------------------------------------------------------
def test_operation_views_like_tensorflow(tf1):
    def build(tf):
        a = tf.constant(1.0, name="a")
        b = tf.constant(2.0, name="b")
        with tf.control_dependencies([a]):
            c = tf.add(a, b, name="c")
        with tf.control_dependencies([b]):
            n = tf.no_op(name="n")
        op = c.op
        return [op.type, op.name, op.device, [t.name for t in op.inputs],
                type(op.inputs).__name__ == "tuple", [t.name for t in op.outputs],
                names(op.control_inputs), names(n.control_inputs), n.outputs,
                [t.name for t in op.values()], op.get_attr("T").name, repr(op), repr(n),
                error(lambda: op.get_attr("nope")), error(lambda: op.get_attr("_class"))]

    got = both(tf1, build)
    assert got[0] == "AddV2" and got[-2] == ("ValueError", "Operation 'c' has no attr named 'nope'.")


def test_operation_views_are_copies():
    a = fl.constant(1.0, name="a")
    with fl.control_dependencies([a]):
        b = fl.identity(a, name="b")
    outs, ctl, attrs = b.op.outputs, b.op.control_inputs, b.op.attrs
    outs.clear()
    ctl.clear()
    attrs.clear()
    assert len(b.op.outputs) == 1 and b.op.control_inputs == [] and b.op.get_attr("T") is fl.float32


def test_node_def_names_inputs_and_attrs():
    a = fl.constant(1.0, name="a")
    with fl.control_dependencies([a]), fl.device("/cpu:0"):
        b = fl.identity(a, name="b")
        c = fl.constant(2.0, name="c")
    nd = b.op.node_def
    assert nd.name == "b" and nd.op == "Identity" and list(nd.input) == ["a"]
    assert nd.device == "/device:CPU:0" and nd.attr["T"].type == fl.float32.as_datatype_enum
    assert list(c.op.node_def.input) == ["^a"]


def test_creation_traceback_holds_only_user_frames():
    def make():
        return fl.constant(1.0, name="here")

    line = make.__code__.co_firstlineno + 1
    op = make().op
    frames = op.traceback
    assert frames and frames[0].filename == __file__ and frames[0].lineno == line
    assert frames[0].name == "make" and frames[1].name == "test_creation_traceback_holds_only_user_frames"
    pkg = fl.__file__.rsplit("/", 1)[0]
    assert not any(f.filename.startswith(pkg + "/") for f in frames)
    assert op.defined_at() == f"test_tensor.py:{line}"
