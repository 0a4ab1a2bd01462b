"""Argument specs of op_def: the list-of-references form `Ref(N * T)`."""

from __future__ import annotations

import pytest

import flowlab  # noqa: F401  (declares the ops)
from flowlab.graph import dtypes
from flowlab.ops.op_def import ArgDef, get_op_def, parse_arg


def test_ref_list_spec_parses() -> None:
    assert parse_arg("inputs: Ref(N * T)") == ArgDef("inputs", type_attr="T", number_attr="N", is_ref=True)
    assert parse_arg("xs: Ref( N*int32 )") == ArgDef(
        "xs", fixed_type=dtypes.int32, number_attr="N", is_ref=True)
    assert parse_arg("ref: Ref(T)") == ArgDef("ref", type_attr="T", is_ref=True)


@pytest.mark.parametrize("spec", ["x: Ref()", "x: Ref(N * )", "x: T U"])
def test_malformed_specs_are_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="bad argument spec"):
        parse_arg(spec)


def test_ref_merge_is_declared_as_tensorflow(tf1) -> None:
    from tensorflow.python.framework import op_def_registry

    theirs = op_def_registry.get("RefMerge")
    ours = get_op_def("RefMerge")
    assert [a.name for a in ours.inputs] == [a.name for a in theirs.input_arg]
    assert [a.name for a in ours.outputs] == [a.name for a in theirs.output_arg]
    (t_in,), (o_in,) = theirs.input_arg, ours.inputs
    assert (o_in.type_attr, o_in.number_attr, o_in.is_ref) == (t_in.type_attr, t_in.number_attr, t_in.is_ref)
    assert t_in.is_ref and o_in.is_ref
    assert [(a.type_attr, a.is_ref) for a in ours.outputs] == [
        (a.type_attr or None, a.is_ref) for a in theirs.output_arg][:1] + [(None, False)]
    assert set(ours.attrs) == {a.name for a in theirs.attr}
    assert not get_op_def("Merge").inputs[0].is_ref


def test_ref_merge_builds_from_references() -> None:
    import flowlab as tf
    from flowlab.ops.control_flow_ops import ref_merge

    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(3.0, name="v")
        w = tf.Variable(4.0, name="w")
        out, idx = ref_merge([v._ref(), w._ref()])
        assert out.op.type == "RefMerge" and out.dtype.is_ref_dtype
        assert out.op.get_attr("N") == 2 and idx.dtype == tf.int32
