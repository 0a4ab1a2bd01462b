"""op.device and `_class` as TensorFlow builds them: device functions keep the string
they return, colocate_with empties the device scopes (those opened inside it still
apply), the innermost colocated op with a device gives it, groups are sorted, and an
op with a ref input is built colocated with that input's op."""

from __future__ import annotations

import pytest

import flowlab as fl


def _class(op):
    try:
        return op.get_attr("_class")
    except ValueError:
        return None


def _facts(tf):
    """(name, device, _class) of every op of a graph that exercises the rules."""
    g = tf.Graph()
    with g.as_default():
        with tf.device(lambda op: "/cpu:1"):
            tf.constant(1.0, name="f_str") * 2.0
        with tf.device(lambda op: tf.DeviceSpec.from_string("/cpu:1")):
            tf.constant(1.0, name="f_spec")
        with tf.device(lambda op: "/CPU:1"), tf.device("/job:w"):
            tf.constant(1.0, name="f_over_job")
        with tf.device("/job:w"), tf.device(lambda op: "/gpu:0"), tf.device("/replica:2"):
            tf.constant(1.0, name="job_fn_replica")
        with tf.device(lambda op: ""):
            tf.constant(1.0, name="f_empty")
        v = tf.Variable([1.0, 2.0], name="v")
        with tf.device("/cpu:1"):
            w = tf.Variable([1.0, 2.0], name="w")
        with tf.device("/cpu:3"):
            tf.assign(v, [3.0, 4.0], name="assign_v")
            tf.assign_add(w, [3.0, 4.0], name="add_w")
            tf.scatter_update(w, [0], [5.0], name="scatter_w")
        with tf.device(lambda op: "/cpu:2"):
            tf.assign(w, [3.0, 4.0], name="assign_w_fn")
        with tf.colocate_with(v):
            tf.assign(w, [3.0, 4.0], name="assign_both")
            with tf.device(lambda op: "/cpu:1"):
                tf.identity(v, name="coloc_then_fn")
        with tf.device(lambda op: "/cpu:3"), tf.colocate_with(w):
            tf.identity(w, name="fn_then_coloc")
        with tf.device("/cpu:2"), tf.colocate_with(w):
            u = tf.Variable(1.0, name="u")
        tf.assign(u, 2.0, name="assign_u")
        with tf.colocate_with(w), tf.colocate_with(v):
            tf.identity(v, name="two_groups")
        with tf.device("/cpu:1"), tf.colocate_with(w):
            with tf.colocate_with(None, ignore_existing=True):
                tf.constant(1.0, name="reset")
        return [(op.name, op.device, _class(op)) for op in g.get_operations()]


def test_devices_and_classes_match_tensorflow(tf1):
    assert _facts(fl) == _facts(tf1)


def test_device_function_string_is_kept_as_returned():
    with fl.device(lambda op: "/cpu:1"):
        a = fl.constant(1.0)
    with fl.device("/cpu:1"):
        b = fl.constant(1.0)
    assert a.device == "/cpu:1" and b.device == "/device:CPU:1"
    a.op._set_device(fl.DeviceSpec.from_string("/cpu:2"))
    assert a.device == "/device:CPU:2"


def test_device_function_results_that_are_not_devices():
    with fl.device(lambda op: None), pytest.raises(TypeError):
        fl.constant(1.0)
    # TensorFlow accepts any string here and fails when the graph is placed.
    with fl.device(lambda op: "bogus"):
        c = fl.constant(1.0)
    assert c.op.device == "bogus"
    with fl.Session() as s, pytest.raises(fl.errors.InvalidArgumentError, match="bogus"):
        s.run(c)


def test_a_short_device_string_is_placed():
    with fl.device(lambda op: "/cpu:1"):
        y = fl.constant(3.0) * 2.0
    with fl.Session(config=fl.ConfigProto(device_count={"CPU": 2})) as s:
        assert s.run(y) == 6.0
        assert s.placement(y).device_of[y.op.name].name.endswith("/device:CPU:1")


def test_colocation_groups_is_a_method_of_bytes():
    a = fl.constant(1.0, name="a")
    with fl.colocate_with(a):
        b = fl.identity(a, name="b")
    assert a.op.colocation_groups() == [b"loc:@a"]
    assert b.op.colocation_groups() == [b"loc:@a"] == b.op.get_attr("_class")


def test_ref_op_takes_the_variables_device_and_group():
    with fl.device("/cpu:1"):
        v = fl.Variable([1.0, 2.0], name="v")
    with fl.device("/cpu:3"):
        c = fl.assign(v, [3.0, 4.0])
    assert c.device == "/device:CPU:1"
    assert c.op.get_attr("_class") == [b"loc:@v"]
    # The value converted before the op is built keeps the scope's device.
    assert c.op.inputs[1].device == "/device:CPU:3"
