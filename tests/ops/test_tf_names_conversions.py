"""TensorFlow's graph for converted Python values, scalar reductions, flatten, stack.

Like tests/ops/test_tf_names.py (whose helpers this reuses): each program is built
under TensorFlow 2.21's `tf.compat.v1` and under flowlab and the GraphDefs are
compared node by node.  The cases are the quirks of TensorFlow's builders:
- op_def_library converts a Python value for a type attr with a default and allowed
  types on its own first; `[]` becomes float32, is not allowed, and is converted again
  (a float32 `Reshape/shape` left unread, the int32 `Reshape/shape_1` used);
- `_ReductionDims` takes Rank + range for a scalar (rank 0 counts as unknown);
- `layers.flatten` reshapes to a `flatten/Const`, or `[shape(x)[0], -1]` autopacked;
- `stack` converts the whole list first (autopacking: `stack/1`);
- `ones_like` of a known shape is `ones_like/Shape/shape_as_tensor`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.ops.test_tf_names import _build, _diff, tf_ref  # noqa: F401 - tf_ref is a fixture

PROGRAMS: dict[str, tuple[Any, str | None]] = {}


def program(fn: Any = None, *, xfail: str | None = None) -> Any:
    def register(f: Any) -> Any:
        PROGRAMS[f.__name__] = (f, xfail)
        return f
    return register(fn) if fn is not None else register


@program
def empty_lists_for_index_inputs(tf: Any) -> None:
    s = tf.placeholder(tf.float32, [], name="s")
    v = tf.placeholder(tf.float32, [2], name="v")
    tf.reduce_sum(s, [])
    tf.reduce_sum(v, ())
    tf.reduce_mean(v, [], keepdims=True)
    tf.reduce_max(v, np.zeros(0, np.int32))
    tf.reshape(s, [])
    tf.reshape(v, (2,))
    tf.reshape(s, ())
    tf.tile(s, [])
    tf.fill([], 1.0)
    tf.transpose(s, [])
    tf.broadcast_to(s, [])
    tf.reverse(s, [])
    tf.reduce_sum(v, [0])


@program
def reductions_over_scalars(tf: Any) -> None:
    s = tf.placeholder(tf.float32, [], name="s")
    b = tf.placeholder(tf.bool, [], name="b")
    u = tf.placeholder(tf.float32, None, name="u")
    tf.reduce_sum(s)
    tf.reduce_mean(s, keepdims=True)
    tf.reduce_all(b)
    tf.reduce_max(u)
    tf.reduce_prod(tf.constant(3))
    with tf.name_scope("inner"):
        tf.reduce_min(s)


@program
def flatten_shapes(tf: Any) -> None:
    tf.layers.flatten(tf.placeholder(tf.float32, [None, 2, 3], name="a"))
    tf.layers.flatten(tf.placeholder(tf.float32, [5, None, 3], name="b"))
    tf.layers.flatten(tf.placeholder(tf.float32, [None, None, 3], name="c"))
    tf.layers.flatten(tf.placeholder(tf.float32, [4], name="d"))
    e = tf.placeholder(tf.float32, [None, 2, 3, 4], name="e")
    tf.layers.flatten(e, data_format="channels_first")
    tf.layers.flatten(e, name="named")


@program
def stack_conversions(tf: Any) -> None:
    a = tf.constant(1.0)
    b = tf.placeholder(tf.float32, [1], name="b")
    tf.stack([a, 2.0])
    tf.stack([b, b], axis=-1)
    tf.stack([1, 2])
    tf.stack([a, 2.0], axis=0, name="named")
    v1 = tf.Variable(1.0, name="v1")
    v2 = tf.Variable(2.0, name="v2")
    tf.stack([v1, v2])
    tf.stack([np.ones(2, np.float32), np.zeros(2, np.float32)])
    tf.stack([a, np.float32(3)])
    tf.stack([tf.shape(b), [1]], axis=1)
    tf.stack([])
    tf.stack(a)


@program
def stack_nested_lists(tf: Any) -> None:
    a = tf.constant(1.0)
    tf.stack([[a, 1.0], [2.0, 3.0]])
    tf.stack([tf.constant([1, 2]), [3, 4]])


@program
def stack_variable_and_python_value(tf: Any) -> None:
    v1 = tf.Variable(1.0, name="v1")
    tf.stack([v1, 3.0])


@program
def strided_slice_default_strides(tf: Any) -> None:
    x = tf.constant(np.ones((2, 3), np.float32))
    tf.strided_slice(x, [0], [1])


@program
def ones_like_shapes(tf: Any) -> None:
    s = tf.placeholder(tf.float32, [], name="s")
    m = tf.placeholder(tf.float32, [4, 3], name="m")
    u = tf.placeholder(tf.float32, [None, 3], name="u")
    tf.ones_like(s)
    tf.ones_like(m)
    tf.ones_like(u)
    tf.zeros_like(s)
    tf.zeros_like(m)
    tf.ones_like(m, dtype=tf.int32)


def _params() -> list[Any]:
    return [pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=why)] if why else [])
            for n, (_, why) in PROGRAMS.items()]


@pytest.mark.parametrize("name", _params())
def test_graph_is_tensorflows(tf_ref: Any, name: str) -> None:  # noqa: F811 - the fixture
    fn, _ = PROGRAMS[name]
    diff = _diff(_build(tf_ref, fn), _build(fl, fn))
    assert not diff, f"{name}: {len(diff)} differences\n" + "\n".join(diff[:40])


def test_empty_list_values_and_dtypes(tf1: Any) -> None:
    """The dangling float32 constants change nothing: same values and dtypes."""
    from tests.difftest import assert_same

    def build(tf: Any) -> Any:
        s = tf.constant(2.5)
        v = tf.constant([1.0, 2.0])
        return [tf.reduce_sum(s, []), tf.reduce_sum(v, []), tf.reshape(s, []), tf.tile(s, []),
                tf.fill([], 1.0), tf.transpose(s, []), tf.reduce_sum(s), tf.reduce_mean(s),
                tf.reduce_all(tf.constant(True)), tf.stack([s, 2.0]), tf.ones_like(s)]

    assert_same(tf1, build)


def test_gather_with_an_empty_python_list_is_a_type_error(tf1: Any) -> None:
    """GatherV2's Tindices has no default: `[]` stays float32, which is not allowed."""
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(TypeError, match="float32 not in list of allowed values"):
                tf.gather(tf.constant([1.0]), [])
