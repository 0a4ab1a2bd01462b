"""`case` against TensorFlow: the run-time checks (exclusive=True, and the guarded
default when there is none), dict and OrderedDict input, strict, name scoping, and the
build-time errors."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error, run_with


def _fed(build, value):
    def with_feed(tf):
        out = build(tf)
        x = tf.get_default_graph().get_tensor_by_name("x:0")
        return out, {x: value}
    return with_feed


def _exclusive(tf):
    x = tf.placeholder(tf.int32, [], name="x")
    return tf.case([(x < 5, lambda: tf.constant(1)), (x > 2, lambda: tf.constant(2))],
                   default=lambda: tf.constant(3), exclusive=True)


def _no_default(tf):
    x = tf.placeholder(tf.int32, [], name="x")
    return tf.case([(x < 0, lambda: x * 10), (x > 2, lambda: x * 100)])


def _message(e):
    return str(getattr(e, "message", e))


@pytest.mark.parametrize("v", [-3, 1, 7])
def test_exclusive_case_when_at_most_one_pred_holds(tf1, v):
    assert_same(tf1, _fed(_exclusive, v))


def test_exclusive_case_two_true_preds_is_tensorflows_error(tf1):
    tf_err, fl_err = assert_same_error(tf1, _fed(_exclusive, 3))
    expected = ("assertion failed: [Input error: exclusive=True: more than 1 conditions "
                "(Less:0, Greater:0) evaluated as True:] [1 1]")
    assert expected in _message(tf_err)
    assert expected in _message(fl_err)
    assert "case/Assert/AssertGuard/Assert" in _message(fl_err)


@pytest.mark.parametrize("v", [-3, 7])
def test_case_without_default_takes_the_last_pair_while_its_pred_holds(tf1, v):
    assert_same(tf1, _fed(_no_default, v))


def test_case_without_default_and_no_true_pred_is_tensorflows_error(tf1):
    tf_err, fl_err = assert_same_error(tf1, _fed(_no_default, 1))
    expected = "assertion failed: [Input error: None of conditions evaluated as True:] [0 0]"
    assert expected in _message(tf_err) and expected in _message(fl_err)


def test_case_single_pair_without_default(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, [], name="x")
        return tf.case([(x > 0, lambda: x * 2.0)])

    assert_same(tf1, _fed(build, 3.0))
    tf_err, fl_err = assert_same_error(tf1, _fed(build, -1.0))
    assert "[Input error: None of conditions evaluated as True:] [0]" in _message(fl_err)


@pytest.mark.parametrize("v", [-4.0, 0.5, 9.0])
def test_case_dict_is_ordered_by_predicate_name(tf1, v):
    """A plain dict is sorted by the predicates' op names (so "Greater" is tested
    before "Less" whatever the insertion order); an OrderedDict keeps its order."""
    def build(tf):
        x = tf.placeholder(tf.float32, [], name="x")
        lt = tf.less(x, 1.0, name="b_less")
        gt = tf.greater(x, 0.0, name="a_greater")
        d = tf.case({lt: lambda: x - 1.0, gt: lambda: x + 1.0}, default=lambda: x * 0.0)
        od = tf.case(collections.OrderedDict([(lt, lambda: x - 1.0), (gt, lambda: x + 1.0)]),
                     default=lambda: x * 0.0)
        return [d, od]

    out = assert_same(tf1, _fed(build, v))
    if v == 0.5:  # both true: the dict takes a_greater's fn, the OrderedDict b_less's
        assert out == [1.5, -0.5]


def test_case_strict_and_structures(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, [], name="x")
        one = tf.case([(x > 0, lambda: [x * 2.0])], default=lambda: [x], strict=True)
        loose = tf.case([(x > 0, lambda: [x * 2.0])], default=lambda: [x])
        pair = tf.case([(x > 0, lambda: (x, tf.cast(x, tf.int32)))], default=lambda: (-x, tf.constant(0)))
        assert isinstance(one, list) and not isinstance(loose, list)
        return [one, loose, pair]

    for v in (2.5, -1.5):
        assert_same(tf1, _fed(build, v))


def _op_names(tf, build):
    g = tf.Graph()
    with g.as_default():
        build(tf)
    return sorted(op.name for op in g.get_operations())


def test_case_op_names_are_tensorflows(tf1):
    """The same ops under the same names: nested conds under "case", the exclusive
    Assert and its guard, a second case in "case_1", a name given."""
    def build(tf):
        x = tf.placeholder(tf.int32, [], name="x")
        _exclusive(tf)
        # Branches that use no outside value: a value taken into a nested cond is
        # switched in the outer cond under another name (flowlab "add/Switch/Switch",
        # TensorFlow "add/Switch"), see docs/notes/control-flow.md.
        tf.case([(x < 0, lambda: tf.constant(4)), (x > 3, lambda: tf.constant(5))],
                default=lambda: tf.constant(6), name="pick")
        tf.case({x > 1: lambda: tf.constant(1)}, default=lambda: tf.constant(2))

    assert _op_names(fl, build) == _op_names(tf1, build)


def test_case_build_errors(tf1):
    x = fl.constant(1)
    with pytest.raises(TypeError, match="'pred_fn_pairs' must be a list, tuple, or dict"):
        fl.case(x > 0, default=lambda: x)
    with pytest.raises(TypeError, match="Each entry in 'pred_fn_pairs' must be a 2-tuple"):
        fl.case([[x > 0, lambda: x]], default=lambda: x)
    with pytest.raises(TypeError, match="pred must be Tensor of type bool"):
        fl.case([(x, lambda: x)], default=lambda: x)
    with pytest.raises(TypeError, match="pred must be a Tensor, got: True"):
        fl.case([(True, lambda: x)], default=lambda: x)
    with pytest.raises(TypeError, match="must be callable"):
        fl.case([(x > 0, x)], default=lambda: x)
    with pytest.raises(ValueError, match="not enough values to unpack"):
        fl.case([], default=lambda: x)
    for build in (lambda tf: tf.case([], default=lambda: tf.constant(1)),
                  lambda tf: tf.case([(tf.constant(1), lambda: tf.constant(1))])):
        errs = []
        for mod in (tf1, fl):
            with pytest.raises((TypeError, ValueError)) as info:
                run_with(mod, build)
            errs.append(info.value)
        assert type(errs[0]) is type(errs[1])


def test_case_values_match_numpy_for_many_inputs():
    x = fl.placeholder(fl.float32, [], name="x")
    r = fl.case([(x < -1.0, lambda: x * x), (x < 1.0, lambda: x * 3.0)], default=lambda: -x,
                exclusive=False)
    with fl.Session() as sess:
        for v in np.linspace(-3, 3, 13, dtype=np.float32):
            want = v * v if v < -1 else (v * 3 if v < 1 else -v)
            assert sess.run(r, {x: v}) == pytest.approx(want)
