"""Graph plumbing ops and the op builder: constants, placeholders, identity, group,
tuple; type inference and build-time errors."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import get_op_def, op_def, parse_arg, parse_attr
from tests.difftest import assert_same


@pytest.mark.parametrize(
    "value, dtype",
    [
        (1.5, None), (3, None), (2**40, None), ([1, 2.5], None), (True, None), ([[1, 2], [3, 4]], None),
        (np.float64(2.0), None), (np.arange(3, dtype=np.int16), None), ("hi", None), ([b"a", b"bc"], None),
        (1, "float32"), (7, "int64"), ([True, False], "bool"), (300, "uint8"), (True, "int32"), (1.0, "float16"), (2, "complex64"),
    ],
)
def test_constant_values_and_dtypes(tf1, value, dtype):
    assert_same(tf1, lambda tf: tf.constant(value, dtype=dtype))


def test_constant_shape_fill_and_pad(tf1):
    assert_same(tf1, lambda tf: [tf.constant(7, shape=[2, 3]), tf.constant([1, 2, 3], shape=[5]),
                                 tf.constant([[1, 2], [3, 4]], shape=[4]), tf.constant(1.0, shape=[])])


def test_constant_errors():
    with pytest.raises(ValueError, match="Too many elements provided. Takes at most 2, but got 3"):
        fl.constant([1, 2, 3], shape=[2])
    with pytest.raises(TypeError, match="Expected int32, but got 1.5 of type 'float'"):
        fl.constant(1.5, dtype=fl.int32)
    with pytest.raises(TypeError, match="Expected bool, but got 1 of type 'int'"):
        fl.constant([1, 0], dtype=fl.bool)
    with pytest.raises(TypeError, match="Expected string"):
        fl.constant([1, "a"], dtype=fl.string)


def test_constant_static_shape_and_name():
    c = fl.constant([[1, 2, 3]], name="k")
    assert c.name == "k:0" and c.shape.as_list() == [1, 3] and c.dtype == fl.int32
    assert fl.constant(1).name == "Const:0"
    assert fl.constant(1).name == "Const_1:0"


def test_placeholder_static_shape_and_feed():
    x = fl.placeholder(fl.float32, shape=[None, 3], name="x")
    assert x.shape.as_list() == [None, 3] and x.op.type == "Placeholder"
    y = fl.placeholder(fl.int32)
    assert y.shape.ndims is None
    with fl.Session() as s:
        assert s.run(fl.identity(y), {y: [[1]]}).tolist() == [[1]]


def test_placeholder_with_default(tf1):
    def build(tf):
        p = tf.placeholder_with_default(tf.constant([1.0, 2.0]), shape=[None])
        return [p, tf.identity(p)]

    assert_same(tf1, build)
    p = fl.placeholder_with_default(fl.constant([1.0, 2.0]), shape=[None])
    with fl.Session() as s:
        np.testing.assert_array_equal(s.run(p, {p: [5.0, 6.0, 7.0]}), [5, 6, 7])
    with pytest.raises(ValueError, match="compatible"):
        fl.placeholder_with_default(fl.constant([1.0, 2.0]), shape=[3])


def test_group_names_and_dependencies(tf1):
    a = fl.constant(1.0, name="a")
    b = fl.constant(2.0, name="b")
    g = fl.group(a, [b.op])
    assert g.name == "group_deps" and g.type == "NoOp"
    assert {op.name for op in g.control_inputs} == {"a", "b"}
    assert fl.group(a, name="init").name == "init"
    assert fl.group(a).name == "group_deps_1"
    with fl.Session() as s:
        assert s.run(g) is None


def test_tuple_gates_all_values():
    a = fl.constant(1.0, name="a")
    b = fl.constant(2.0, name="b")
    ta, tb = fl.tuple([a, b])
    assert ta.name == "tuple/control_dependency:0" and tb.name == "tuple/control_dependency_1:0"
    gate = ta.op.control_inputs[0]
    assert {op.name for op in gate.control_inputs} == {"a", "b"}
    with fl.Session() as s:
        assert s.run([ta, tb]) == [1.0, 2.0]


def test_identity_keeps_dtype_and_shape():
    x = fl.placeholder(fl.float64, [2, None])
    y = fl.identity(x, name="same")
    assert y.dtype == fl.float64 and y.shape.as_list() == [2, None] and y.name == "same:0"


def test_no_op_has_no_outputs():
    op = fl.no_op(name="nothing")
    assert op.outputs == [] and op.type == "NoOp"


# --- the builder -------------------------------------------------------------------------
def test_type_attr_inference_converts_python_values_to_inferred_type():
    op_def_name = "TestingBuilderPair"
    try:
        get_op_def(op_def_name)
    except KeyError:
        op_def(op_def_name, inputs=["x: T", "y: T"], outputs=["z: T"], attrs=["T: numeric"],
               shape_fn=lambda op: [op.inputs[0].shape])
        not_differentiable(op_def_name)
    from flowlab.ops.builder import apply_op

    x = fl.constant(np.float64(1.0))
    z = apply_op(op_def_name, x=x, y=2)
    assert z.op.inputs[1].dtype == fl.float64
    with pytest.raises(TypeError, match="Input 'y' of 'TestingBuilderPair' Op has type int32 that does not match type float64 of argument 'x'"):
        apply_op(op_def_name, x=x, y=fl.constant(1))
    with pytest.raises(TypeError, match="DataType string not in list of allowed values"):
        apply_op(op_def_name, x=fl.constant("a"), y=fl.constant("b"))
    with pytest.raises(TypeError, match="missing input argument 'y'"):
        apply_op(op_def_name, x=x)
    with pytest.raises(TypeError, match="unexpected arguments"):
        apply_op(op_def_name, x=x, y=x, bogus=1)


def test_shape_function_errors_name_op_and_input_shapes():
    name = "TestingBuilderSameShape"
    try:
        get_op_def(name)
    except KeyError:
        def same_shape(op):
            a, b = op.inputs[0].shape, op.inputs[1].shape
            if not a.is_compatible_with(b):
                raise ValueError(f"Shapes must be equal, but are {a} and {b}")
            return [a.merge_with(b)]

        op_def(name, inputs=["x: T", "y: T"], outputs=["z: T"], attrs=["T: numeric"], shape_fn=same_shape)
        not_differentiable(name)
    from flowlab.ops.builder import apply_op

    g = fl.get_default_graph()
    before = len(g.get_operations())
    with pytest.raises(ValueError) as ei:
        apply_op(name, x=fl.constant([1.0, 2.0]), y=fl.constant([1.0, 2.0, 3.0]), name="pair")
    msg = str(ei.value)
    assert "for 'pair' (op: 'TestingBuilderSameShape') with input shapes: [2], [3]" in msg
    assert "test_core_ops.py" in msg
    # The failed op never joined the graph.
    assert all(op.name != "pair" for op in g.get_operations()[before:])


def test_duplicate_op_declaration_says_where_the_first_was():
    with pytest.raises(ValueError, match="already declared .*core_ops.py"):
        op_def("Identity", inputs=["input: T"], outputs=["output: T"], attrs=["T: type"])


def test_spec_parsing():
    a = parse_arg("values: N * T")
    assert a.number_attr == "N" and a.type_attr == "T" and a.is_list
    r = parse_arg("ref: Ref(T)")
    assert r.is_ref and r.type_attr == "T"
    f = parse_arg("idx: int32")
    assert f.fixed_type == fl.int32
    assert parse_attr("N: int >= 2").minimum == 2
    assert parse_attr("padding: string = 'SAME'").default == "SAME"
    assert parse_attr("T: {float32, float64} = float32").allowed == (fl.float32, fl.float64)
    assert parse_attr("shape: shape = [2, 3]").default == (2, 3)
    with pytest.raises(ValueError, match="unknown kind"):
        parse_attr("x: widget")
