"""The Graph: names, scopes, control dependencies, devices, colocation, collections,
lookup, finalize/version and the default-graph stack, each against TensorFlow 1.x.

Graph-structure tests build the same graph with `lambda tf: ...` under TensorFlow and
flowlab and compare what they return (names, devices, control inputs, errors).
"""

from __future__ import annotations

import pytest

import flowlab as fl
from flowlab.graph.graph import Graph, GraphKeys


def both(tf1, build):
    """Run `build(tf)` in a fresh graph of each module; assert equal results."""
    out = []
    for mod in (tf1, fl):
        g = mod.Graph()
        with g.as_default():
            out.append(build(mod))
    assert out[1] == out[0], f"flowlab {out[1]!r} != TensorFlow {out[0]!r}"
    return out[1]


def error(fn):
    """(class name, message) of what `fn()` raises; KeyError's message unquoted."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the test compares the class
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        return type(e).__name__, msg
    raise AssertionError("did not raise")


def names(ops):
    return [getattr(o, "name", o) for o in ops]


# --- unique names ------------------------------------------------------------------
def test_unique_names_like_tensorflow(tf1):
    def build(tf):
        seq = ["a", "a", "a", "a_1", "A", "b_1", "b", "b", "b", "B_2", "c/d", "c/d"]
        out = [tf.no_op(name=n).name for n in seq]
        g = tf.get_default_graph()
        out.append(g.unique_name("a", mark_as_used=False))
        out.append(g.unique_name("A", mark_as_used=False))
        out.append(g.unique_name("fresh"))
        out.append(g.unique_name("fresh"))
        out.append(tf.no_op(name="fresh").name)
        return out

    got = both(tf1, build)
    assert got[:4] == ["a", "a_1", "a_2", "a_1_1"]
    assert got[4] == "A_3"  # case-insensitive collision, caller's spelling kept


def test_unique_name_without_marking_does_not_reserve():
    g = Graph()
    assert g.unique_name("x", mark_as_used=False) == "x"
    assert g.unique_name("x") == "x"
    assert g.unique_name("x", mark_as_used=False) == "x_1"
    assert g.unique_name("x") == "x_1"
    assert g.unique_name("X") == "X_2"


def test_default_op_names(tf1):
    both(tf1, lambda tf: [tf.no_op().name, tf.no_op().name, tf.constant(1).name,
                          tf.identity(tf.constant(1)).name])


# --- name scopes -------------------------------------------------------------------
def test_name_scope_semantics_like_tensorflow(tf1):
    def build(tf):
        g = tf.get_default_graph()
        out = []
        with tf.name_scope("s") as s:
            out += [s, tf.no_op(name="x").name, g.get_name_scope()]
            with tf.name_scope("t") as t:
                out += [t, tf.no_op(name="x").name, g.get_name_scope()]
            with tf.name_scope("t") as t:
                out += [t]
            with tf.name_scope(None) as n:
                out += [n, tf.no_op(name="root").name, g.get_name_scope()]
            with tf.name_scope("") as n:
                out += [n, tf.no_op(name="root").name]
            out += [g.get_name_scope()]
        with tf.name_scope("s") as s:
            out += [s, tf.no_op(name="x").name]
        with tf.name_scope("s/") as s:  # re-enter exactly
            out += [s, tf.no_op(name="x").name, g.get_name_scope()]
        with tf.name_scope("s/t/") as s:
            out += [s, tf.no_op(name="y").name]
        with tf.name_scope("S") as s:  # case-insensitive reuse
            out += [s]
        with tf.name_scope("zz"):
            pass
        out += [tf.no_op(name="zz").name, tf.no_op(name="s_1").name]
        with tf.name_scope(b"bytes") as s:
            out += [s]
        with tf.name_scope(None, default_name="dflt") as s:
            out += [s]
        with tf.name_scope(None, default_name="dflt") as s:
            out += [s]
        with tf.name_scope("a/b") as s:
            out += [s, tf.no_op(name="c").name]
        out += [tf.get_default_graph().get_name_scope()]
        return out

    got = both(tf1, build)
    assert got[:6] == ["s/", "s/x", "s", "s/t/", "s/t/x", "s/t"]


def test_get_name_scope_module_function():
    with fl.name_scope("outer"):
        with fl.name_scope("inner"):
            assert fl.get_name_scope() == "outer/inner"
    assert fl.get_name_scope() == ""


@pytest.mark.parametrize(
    "name", ["a b", "-x", "_x", "a:b", "x!", "/x", "\\x", ".x", "x//y", "a.b-c_d>e", "x/"]
)
def test_scope_name_validation_like_tensorflow(tf1, name):
    def build(tf):
        out = []
        for nested in (False, True):
            try:
                if nested:
                    with tf.name_scope("outer"), tf.name_scope(name) as s:
                        out.append(s)
                else:
                    with tf.name_scope(name) as s:
                        out.append(s)
            except ValueError as e:
                out.append(("ValueError", str(e)))
        return out

    both(tf1, build)


@pytest.mark.parametrize("name", ["bad name", "_x", "-x", "a:0", "x!"])
def test_invalid_op_names_raise_value_error(tf1, name):
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            with pytest.raises(ValueError, match="not a valid"):
                mod.no_op(name=name)
    # Inside a scope a leading "_" or "-" is fine: the full name starts with the scope.
    if name in ("_x", "-x"):
        both(tf1, lambda tf: _in_scope(tf, name))


def _in_scope(tf, name):
    with tf.name_scope("s"):
        return tf.no_op(name=name).name


# --- control dependencies ----------------------------------------------------------
def test_control_dependencies_like_tensorflow(tf1):
    def build(tf):
        a = tf.constant(1.0, name="a")
        b = tf.constant(2.0, name="b")
        with tf.control_dependencies([a]):
            c = tf.identity(b, name="c")
            d = tf.identity(c, name="d")  # consumes an op of the same block
            e = tf.identity(a, name="e")  # consumes the control input itself
            with tf.control_dependencies([b.op]):
                f = tf.identity(c, name="f")  # dominated for [a], not for [b]
                with tf.control_dependencies(None):
                    h = tf.identity(b, name="h")
                    with tf.control_dependencies([c]):
                        h2 = tf.no_op(name="h2")
                i = tf.add(a, b, name="i")
            k = tf.constant(3.0, name="k")
        with tf.control_dependencies([a, a, a.op, "b", "c:0"]):
            q = tf.no_op(name="q")
        with tf.control_dependencies([]):
            r = tf.no_op(name="r")
        return [(x.name, names(x.control_inputs)) for x in
                (c.op, d.op, e.op, f.op, h.op, h2, i.op, k.op, q, r)]

    got = dict(both(tf1, build))
    assert got["c"] == ["a"] and got["d"] == [] and got["e"] == []
    assert got["f"] == ["b"] and got["h"] == [] and got["q"] == ["a", "b", "c"]


def test_control_dependencies_errors(tf1):
    def build(tf):
        out = []
        a = tf.constant(1.0, name="a")
        other = tf.Graph()
        with other.as_default():
            z = tf.constant(0.0, name="z")
        for bad in ([1], [None], [z], ["nope"], a):
            try:
                with tf.control_dependencies(bad):
                    pass
            except (TypeError, ValueError, KeyError) as e:
                out.append(isinstance(e, TypeError) and "TypeError" or type(e).__name__)
        return out

    assert both(tf1, build) == ["TypeError", "TypeError", "ValueError", "KeyError", "TypeError"]
    a = fl.constant(1.0, name="a")
    with pytest.raises(TypeError, match="Can not convert a int into a Tensor or Operation"):
        with fl.control_dependencies([3]):
            pass
    with fl.Graph().as_default():
        z = fl.constant(0.0)
    with pytest.raises(ValueError, match="is not an element of this graph"):
        with fl.control_dependencies([z]):
            pass
    with pytest.raises(TypeError):
        with fl.control_dependencies(a):
            pass


def test_control_inputs_recorded_both_ways():
    a = fl.constant(1.0, name="a")
    with fl.control_dependencies([a]):
        b = fl.no_op(name="b")
    assert b.control_inputs == [a.op]
    assert a.op._control_outputs == [b]
    assert str(b) == "b = NoOp(^a)"


# --- devices -----------------------------------------------------------------------
def test_device_scopes_like_tensorflow(tf1):
    def build(tf):
        ops = []

        def c(name):
            ops.append(tf.constant(1.0, name=name).op)

        with tf.device("/job:ps/task:1"):
            c("a")
            with tf.device("/gpu:0"):
                c("b")
                with tf.device("/job:worker"):
                    c("c")
                with tf.device(None):
                    c("d")
                    with tf.device("/cpu:1"):
                        c("d2")
                with tf.device(lambda op: "/device:CPU:3"):
                    c("e")
                with tf.device(lambda op: ""):
                    c("e2")
                with tf.device(lambda op: "/job:foo"):
                    c("e3")
                    with tf.device("/task:7"):
                        c("e4")  # the function replaces what inner scopes chose
                with tf.device(tf.DeviceSpec(job="x", device_type="CPU")):
                    c("f")
                with tf.device(""):
                    c("f2")
                with tf.device("/device:GPU:*"):
                    c("f3")
                with tf.device("CPU:0"):
                    c("f4")
                with tf.device("/replica:2"):
                    c("f5")
                with tf.device("/cpu:*"):
                    c("f6")
                with tf.device("/device:cpu:2"):
                    c("f7")
            c("g")
        c("top")
        return [(o.name, o.device) for o in ops]

    got = dict(both(tf1, build))
    assert got["b"] == "/job:ps/task:1/device:GPU:0"
    assert got["c"] == "/job:worker/task:1/device:GPU:0"
    assert got["d"] == "" and got["top"] == ""


@pytest.mark.parametrize("bad", ["/foo:bar", "/job:ps/task:x", "cpu:x", "/device:GPU:x",
                                 "gpu:1:2", "junk", "/cpu:0/gpu:1", "/device:GPU"])
def test_invalid_device_strings_fail_at_the_with(tf1, bad):
    for mod in (tf1, fl):
        g = mod.Graph()
        with g.as_default():
            cm = mod.device(bad)
            with pytest.raises(ValueError):
                cm.__enter__()
            assert g.get_operations() == []


def test_device_function_gets_the_op_and_must_return_a_device():
    seen = []

    def fn(op):
        seen.append((op.type, op.name))
        return fl.DeviceSpec(job="w", task=2)

    with fl.device(fn):
        x = fl.constant(1.0, name="x")
    assert seen == [("Const", "x")] and x.op.device == "/job:w/task:2"
    with fl.device(lambda op: None):
        with pytest.raises(TypeError, match="device function"):
            fl.constant(1.0, name="y")
    assert "y" not in [o.name for o in fl.get_default_graph().get_operations()]
    with pytest.raises(TypeError):
        with fl.device(3):
            pass


def test_device_of_tensor_follows_its_op():
    with fl.device("/cpu:0"):
        x = fl.constant(1.0)
    assert x.device == x.op.device == "/device:CPU:0"


# --- colocation --------------------------------------------------------------------
def test_colocate_with_like_tensorflow(tf1):
    def build(tf):
        ops = []

        def c(name):
            ops.append(tf.constant(1.0, name=name).op)

        with tf.device("/job:ps/task:1"):
            a = tf.constant(1.0, name="a")
            with tf.device("/gpu:0"):
                cc = tf.constant(1.0, name="c")
                with tf.colocate_with(a):
                    c("h")
                    with tf.device("/job:zzz"):
                        c("h2")  # device scopes are ignored inside
                    with tf.colocate_with(cc):
                        c("h3")
                    with tf.colocate_with(cc.op, ignore_existing=True):
                        c("h4")
                    with tf.colocate_with(None, ignore_existing=True):
                        c("h5")
                    with tf.colocate_with(ops[0]):  # colocated with a colocated op
                        c("h6")
                c("after")
        out = []
        for o in [a.op] + ops:
            try:
                cls = o.get_attr("_class")
            except ValueError:
                cls = None
            out.append((o.name, o.device, cls))
        return out

    got = {n: (d, c) for n, d, c in both(tf1, build)}
    assert got["h"] == ("/job:ps/task:1", [b"loc:@a"])
    assert got["h3"][1] == [b"loc:@a", b"loc:@c"] and got["h4"][1] == [b"loc:@c"]
    assert got["a"][1] is None


def test_colocate_with_errors(tf1):
    for mod in (tf1, fl):
        with pytest.raises(ValueError, match="ignore_existing is not True"):
            with mod.colocate_with(None):
                pass
    with pytest.raises(TypeError):
        with fl.colocate_with(3):
            pass


def test_colocation_groups_method():
    a = fl.constant(1.0, name="a")
    with fl.colocate_with(a):
        b = fl.constant(1.0, name="b")
    assert a.op.colocation_groups() == [b"loc:@a"]
    assert b.op.colocation_groups() == [b"loc:@a"]


# --- collections -------------------------------------------------------------------
def test_collections_like_tensorflow(tf1):
    def build(tf):
        g = tf.get_default_graph()
        a = tf.constant(1.0, name="a")
        b = tf.identity(a, name="s1/b")
        c = tf.identity(a, name="x/s1/c")
        d = tf.identity(a, name="S1/d")
        for x in (a, b, c, d, "str", 3):
            g.add_to_collection("k", x)
        out = [names(g.get_collection("k", s)) for s in ("s1", "s", ".*s1", "", "S1", "nope")]
        out.append(names(g.get_collection("k")))
        out.append([g.get_collection("nope"), g.get_collection("nope", "x"),
                    sorted(g.get_all_collection_keys())])
        ref = g.get_collection_ref("new")
        out.append(sorted(g.get_all_collection_keys()))  # listed even while empty
        ref.append(1)
        out.append(g.get_collection("new"))
        g.add_to_collections(["m", "n", "m"], 5)
        g.add_to_collections("mm", 6)
        out.append([g.get_collection("m"), g.get_collection("n"), g.get_collection("mm")])
        g.clear_collection("mm")
        g.clear_collection("never")
        out.append(sorted(g.get_all_collection_keys()))
        copy = g.get_collection("k")
        copy.append(9)  # get_collection returns a copy
        out.append(len(g.get_collection("k")))
        tf.add_to_collection("top", 1)
        tf.add_to_collections(["top2"], 2)
        out.append([tf.get_collection("top"), tf.get_collection_ref("top2")])
        return out

    got = both(tf1, build)
    assert got[0] == ["s1/b:0"]


def test_graph_keys_are_tensorflows(tf1):
    theirs = {k: getattr(tf1.GraphKeys, k) for k in dir(tf1.GraphKeys) if k.isupper()}
    ours = {k: getattr(GraphKeys, k) for k in dir(GraphKeys) if k.isupper()}
    assert ours == theirs
    assert GraphKeys._VARIABLE_COLLECTIONS == tf1.GraphKeys._VARIABLE_COLLECTIONS
    assert fl.GraphKeys is GraphKeys


# --- finalize and version ----------------------------------------------------------
def test_finalize_blocks_every_change(tf1):
    def build(tf):
        g = tf.get_default_graph()
        tf.constant(1.0, name="a")
        g.add_to_collection("c", 1)
        g.finalize()
        out = [g.finalized]
        for fn in (lambda: tf.constant(0.0), lambda: tf.no_op(),
                   lambda: g.add_to_collection("c", 1), lambda: g.clear_collection("c"),
                   lambda: g.add_to_collections(["c"], 1)):
            out.append(error(fn))
        # Reading is still fine.
        out.append([g.get_collection("c"), g.unique_name("q"), len(g.get_operations())])
        with g.name_scope("q") as s:
            out.append(s)
        g._unsafe_unfinalize()
        out.append(tf.no_op(name="later").name)
        return out

    got = both(tf1, build)
    assert got[1] == ("RuntimeError", "Graph is finalized and cannot be modified.")


def test_version_counts_graph_changes(tf1):
    def build(tf):
        g = tf.get_default_graph()
        out = [g.version]
        a = tf.constant(1.0, name="a")
        out.append(g.version)
        g.add_to_collection("c", 1)
        with tf.name_scope("s"), tf.device("/cpu:0"):
            pass
        g.unique_name("zz")
        g.get_operations()
        out.append(g.version)
        with tf.control_dependencies([a]):
            tf.identity(a)
        out.append(g.version)
        return out

    assert both(tf1, build) == [0, 1, 1, 2]


def test_version_grows_on_rewiring():
    a = fl.constant(1.0, name="a")
    b = fl.constant(2.0, name="b")
    c = fl.identity(a, name="c")
    n = fl.no_op(name="n")
    g = fl.get_default_graph()
    v = g.version
    c.op._update_input(0, b)
    assert g.version == v + 1 and c.op.inputs == (b,)
    assert a.consumers() == [] and b.consumers() == [c.op]
    n._add_control_input(a.op)
    assert g.version == v + 2
    n._add_control_input(a.op)  # already there: no change
    assert g.version == v + 2 and n.control_inputs == [a.op]


def test_failed_op_creation_leaves_graph_unchanged():
    g = fl.get_default_graph()
    x = fl.constant([1.0, 2.0], name="x")
    y = fl.constant([1.0, 2.0, 3.0], name="y")
    v, ops = g.version, g.get_operations()
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        fl.add(x, y, name="bad")
    assert g.get_operations() == ops and g.version == v
    assert x.consumers() == [] and y.consumers() == []
    # the failed name stays reserved, as in TensorFlow
    assert fl.add(x, x, name="bad").name == "bad_1:0"


# --- lookup ------------------------------------------------------------------------
def test_lookup_errors_like_tensorflow(tf1):
    def build(tf):
        g = tf.get_default_graph()
        a = tf.constant(1.0, name="a")
        tf.no_op(name="n")
        cases = [
            lambda: g.get_operation_by_name("a:0"),
            lambda: g.get_operation_by_name("nope"),
            lambda: g.get_operation_by_name(3),
            lambda: g.get_tensor_by_name("a"),
            lambda: g.get_tensor_by_name("nope"),
            lambda: g.get_tensor_by_name("nope:0"),
            lambda: g.get_tensor_by_name("a:1"),
            lambda: g.get_tensor_by_name("n:0"),
            lambda: g.get_tensor_by_name("a:x"),
            lambda: g.get_tensor_by_name("a:0:1"),
            lambda: g.get_tensor_by_name(3),
            lambda: g.as_graph_element("a", allow_operation=False),
            lambda: g.as_graph_element("a:0", allow_tensor=False),
            lambda: g.as_graph_element(3),
            lambda: g.as_graph_element(3, allow_operation=False),
            lambda: g.as_graph_element(3, allow_tensor=False),
            lambda: g.as_graph_element(a.op, allow_operation=False),
            lambda: g.as_graph_element("nope"),
            lambda: g.as_graph_element("nope:0"),
        ]
        out = [error(f) for f in cases]
        out.append([g.get_tensor_by_name("a:0").name, g.get_operation_by_name("a").name,
                    g.as_graph_element("a:0").name, g.as_graph_element("a").name,
                    g.as_graph_element(a).name, g.as_graph_element(a.op).name,
                    g.get_tensor_by_name("a:-1").name])
        return out

    both(tf1, build)


def test_as_graph_element_other_graph_and_converters():
    g = fl.get_default_graph()
    a = fl.constant(1.0, name="a")
    with fl.Graph().as_default():
        z = fl.constant(0.0, name="z")
    with pytest.raises(ValueError, match=r'Tensor Tensor\("z:0".*is not an element of this graph'):
        g.as_graph_element(z)
    with pytest.raises(ValueError, match="is not an element of this graph"):
        g.as_graph_element(z.op)
    with pytest.raises(TypeError, match="Can not convert a Tensor into a Operation"):
        g.as_graph_element(a, allow_tensor=False)

    class Wrapper:
        def _as_graph_element(self):
            return a

    assert g.as_graph_element(Wrapper()) is a
    with fl.control_dependencies([Wrapper()]):
        n = fl.no_op()
    assert n.control_inputs == [a.op]


def test_get_operations_in_creation_order_and_copy():
    a = fl.constant(1.0, name="a")
    b = fl.identity(a, name="b")
    g = fl.get_default_graph()
    ops = g.get_operations()
    assert ops == [a.op, b.op]
    ops.clear()
    assert len(g.get_operations()) == 2


# --- gradient override map ---------------------------------------------------------
def test_gradient_override_map_marks_ops_created_in_the_block(tf1):
    def build(tf):
        g = tf.get_default_graph()
        x = tf.constant(1.0, name="x")
        out = []
        with g.gradient_override_map({"Identity": "MyGrad"}):
            a = tf.identity(x, name="a")
            with g.gradient_override_map({"Identity": "Inner", "AddV2": "Sum"}):
                b = tf.identity(x, name="b")
                c = tf.add(x, x, name="c")
            d = tf.add(x, x, name="d")
        e = tf.identity(x, name="e")
        for op in (a.op, b.op, c.op, d.op, e.op, x.op):
            try:
                v = op.get_attr("_gradient_op_type")
                out.append(v.decode() if isinstance(v, bytes) else v)
            except ValueError:
                out.append(None)
        out.append(error(lambda: g.gradient_override_map({"Identity": 3}).__enter__()))
        return out

    got = both(tf1, build)
    assert got[:6] == ["MyGrad", "Inner", "Sum", None, None, None]
