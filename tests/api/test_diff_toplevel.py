"""Top-level `tf.*` names beside TensorFlow 1.x (tests/difftest.py): segment and
scatter ops, the comparison asserts, the variable-collection helpers, dtypes and the
small graph-mode switches, each run under both with values, dtypes and errors compared."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error

DATA = np.array(
    [[1.0, 2.0, 3.0], [4.0, -5.0, 6.0], [-7.0, 8.0, 9.0], [0.5, 0.25, -1.0]], np.float32
)
Fn = Callable[[Any], Callable[..., Any]]

SEGMENT = [
    ("segment_sum", lambda tf: tf.segment_sum),
    ("segment_mean", lambda tf: tf.segment_mean),
    ("segment_max", lambda tf: tf.segment_max),
    ("segment_min", lambda tf: tf.segment_min),
]


@pytest.mark.parametrize("name,fn", SEGMENT, ids=[s[0] for s in SEGMENT])
def test_sorted_segments(tf1: Any, name: str, fn: Fn) -> None:
    def build(tf: Any) -> Any:
        p = tf.placeholder(tf.float32, [4, 3])
        ints = tf.constant([[1, 2], [3, 4], [5, 6], [7, 8]])
        # Segment 1 is empty: TensorFlow writes the op's identity-less default (0).
        return [
            fn(tf)(p, tf.constant([0, 0, 2, 2])),
            fn(tf)(p, tf.constant([0, 1, 1, 3])),
            fn(tf)(ints, tf.constant([0, 0, 0, 1], tf.int64)),
        ], {p: DATA}

    assert_same(tf1, build)


def test_sorted_segments_unsorted_ids_error(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        p = tf.placeholder(tf.int32, [4])
        return tf.segment_sum(tf.constant(DATA), p), {p: np.array([1, 0, 2, 2], np.int32)}

    assert_same_error(tf1, build)


UNSORTED = [
    ("unsorted_segment_sum", lambda tf: tf.unsorted_segment_sum),
    ("unsorted_segment_max", lambda tf: tf.unsorted_segment_max),
    ("unsorted_segment_min", lambda tf: tf.unsorted_segment_min),
    ("unsorted_segment_prod", lambda tf: tf.unsorted_segment_prod),
    ("unsorted_segment_mean", lambda tf: tf.unsorted_segment_mean),
    ("unsorted_segment_sqrt_n", lambda tf: tf.unsorted_segment_sqrt_n),
]


@pytest.mark.parametrize("name,fn", UNSORTED, ids=[s[0] for s in UNSORTED])
def test_unsorted_segments(tf1: Any, name: str, fn: Fn) -> None:
    def build(tf: Any) -> Any:
        p = tf.placeholder(tf.float32, [4, 3])
        ids = tf.constant([2, 0, 2, -1])  # -1 is dropped; segment 1 stays empty
        out = [
            fn(tf)(p, ids, 4),
            fn(tf)(p, tf.constant([[0, 1, 0], [1, 1, 0], [2, 0, 1], [0, 0, 0]]), 3),
        ]
        if name not in ("unsorted_segment_mean", "unsorted_segment_sqrt_n"):
            out.append(fn(tf)(tf.constant([3, 1, 4, 1]), tf.constant([1, 1, 0, 0]), 2))
        return out, {p: DATA}

    assert_same(tf1, build)


def test_sparse_segments(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        data = tf.constant(DATA)
        idx = tf.constant([0, 2, 3, 1])
        seg = tf.constant([0, 0, 1, 1])
        return [
            tf.sparse_segment_mean(data, idx, seg),
            tf.sparse_segment_sqrt_n(data, idx, seg),
            tf.sparse_segment_mean(data, tf.constant([3, 3]), tf.constant([0, 2])),
            tf.sparse_segment_sqrt_n(data, idx, seg, num_segments=3),
        ]

    assert_same(tf1, build)


SCATTER = [
    ("scatter_sub", lambda tf: tf.scatter_sub),
    ("scatter_mul", lambda tf: tf.scatter_mul),
    ("scatter_max", lambda tf: tf.scatter_max),
    ("scatter_min", lambda tf: tf.scatter_min),
]


@pytest.mark.parametrize("name,fn", SCATTER, ids=[s[0] for s in SCATTER])
def test_scatter_updates(tf1: Any, name: str, fn: Fn) -> None:
    def build(tf: Any) -> Any:
        v = tf.Variable(DATA, name="v")
        iv = tf.Variable([1, 5, 3, 2], name="iv")
        up = fn(tf)(
            v,
            tf.constant([2, 0, 2]),
            tf.constant([[1.5, 1.5, 1.5], [2.0, 3.0, -1.0], [0.5, 10.0, -4.0]]),
        )
        with tf.control_dependencies([up]):
            ui = fn(tf)(iv, tf.constant([3, 3]), tf.constant([4, -6]))
        with tf.control_dependencies([ui]):
            return [tf.identity(v), tf.identity(iv), tf.constant(up.dtype.name)]

    assert_same(tf1, build)


def test_scatter_out_of_range(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        v = tf.Variable([1.0, 2.0])
        return tf.scatter_sub(v, tf.constant([5]), tf.constant([1.0]))

    e, a = assert_same_error(tf1, build)
    assert type(e).__name__ == "InvalidArgumentError"


def test_scatter_nd_update(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        v = tf.Variable(DATA)
        up = tf.scatter_nd_update(v, tf.constant([[0, 1], [3, 2]]), tf.constant([10.0, 20.0]))
        row = tf.Variable(np.zeros([3, 2], np.int32))
        up2 = tf.scatter_nd_update(row, tf.constant([[2]]), tf.constant([[7, 8]]))
        with tf.control_dependencies([up, up2]):
            return [tf.identity(v), tf.identity(row)]

    assert_same(tf1, build)


@pytest.mark.parametrize(
    "name", ["assert_greater", "assert_greater_equal", "assert_less_equal", "assert_none_equal"]
)
def test_binary_asserts(tf1: Any, name: str) -> None:
    cases = {
        "assert_greater": ([3, 4], [1, 4]),
        "assert_greater_equal": ([3, 4], [1, 5]),
        "assert_less_equal": ([1, 4], [1, 3]),
        "assert_none_equal": ([1, 2], [1, 3]),
    }
    ok_y = {
        "assert_greater": [1, 2],
        "assert_greater_equal": [3, 4],
        "assert_less_equal": [3, 4],
        "assert_none_equal": [2, 3],
    }
    fns = {
        "assert_greater": lambda tf: tf.assert_greater,
        "assert_greater_equal": lambda tf: tf.assert_greater_equal,
        "assert_less_equal": lambda tf: tf.assert_less_equal,
        "assert_none_equal": lambda tf: tf.assert_none_equal,
    }
    x, bad_y = cases[name]

    def build(tf: Any, y: list[int]) -> Any:
        p = tf.placeholder(tf.int32, [2])
        with tf.control_dependencies([fns[name](tf)(tf.constant(x), p, message="checked")]):
            return tf.identity(p), {p: np.array(y, np.int32)}

    assert_same(tf1, lambda tf: build(tf, ok_y[name]))
    e, a = assert_same_error(tf1, lambda tf: build(tf, bad_y))
    assert type(e).__name__ == "InvalidArgumentError"
    assert "checked" in a.message and "checked" in e.message


@pytest.mark.parametrize("name", ["assert_negative", "assert_non_negative", "assert_non_positive"])
def test_sign_asserts(tf1: Any, name: str) -> None:
    fns = {
        "assert_negative": lambda tf: tf.assert_negative,
        "assert_non_negative": lambda tf: tf.assert_non_negative,
        "assert_non_positive": lambda tf: tf.assert_non_positive,
    }
    good = {
        "assert_negative": [-1.0, -2.0],
        "assert_non_negative": [0.0, 2.0],
        "assert_non_positive": [0.0, -3.0],
    }
    bad = {
        "assert_negative": [-1.0, 0.0],
        "assert_non_negative": [-0.5, 2.0],
        "assert_non_positive": [0.0, 3.0],
    }

    def build(tf: Any, x: list[float]) -> Any:
        p = tf.placeholder(tf.float32, [2])
        with tf.control_dependencies([fns[name](tf)(p, message="sign")]):
            return tf.identity(p), {p: np.array(x, np.float32)}

    assert_same(tf1, lambda tf: build(tf, good[name]))
    e, a = assert_same_error(tf1, lambda tf: build(tf, bad[name]))
    assert "sign" in a.message and "sign" in e.message
    # A constant that passes statically gives the same (no-op) result in both.
    names = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            op = fns[name](tf)(tf.constant(good[name]))
            names.append(op is None or op.type)
    assert names[0] == names[1]


def test_variable_collections(tf1: Any) -> None:
    """all_variables / model_variables / the old initializer names."""
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            a = tf.Variable(1.0, name="a")
            b = tf.Variable(2, name="b", collections=[tf.GraphKeys.LOCAL_VARIABLES])
            c = tf.Variable(
                [3.0, 4.0],
                name="c",
                collections=[tf.GraphKeys.GLOBAL_VARIABLES, tf.GraphKeys.MODEL_VARIABLES],
            )
            names = (
                [v.op.name for v in tf.all_variables()],
                [v.op.name for v in tf.model_variables()],
            )
            inits = [
                tf.initialize_all_variables(),
                tf.initialize_local_variables(),
                tf.initialize_variables([a]),
            ]
            with tf.Session() as s:
                s.run(inits[:2])
                vals = s.run([a, b, c])
                s.run(tf.assign(a, 5.0))
                s.run(inits[2])
                vals.append(s.run(a))
            out.append((names, [op.type for op in inits], [np.asarray(v).tolist() for v in vals]))
    assert out[0] == out[1]


def test_lin_space_matrix_transpose_reverse_v2(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        m = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
        return [
            tf.lin_space(0.0, 1.0, 5),
            tf.lin_space(tf.constant(-2.0, tf.float64), 2.0, 3),
            tf.matrix_transpose(m),
            tf.matrix_transpose(tf.constant([[1, 2], [3, 4]])),
            tf.reverse_v2(m, [0, 2]),
            tf.reverse_v2(tf.constant([1, 2, 3]), axis=[-1]),
        ]

    assert_same(tf1, build)


def test_cholesky_solve(tf1: Any) -> None:
    a = np.array([[4.0, 2.0, 0.4], [2.0, 5.0, 1.0], [0.4, 1.0, 3.0]])

    def build(tf: Any) -> Any:
        chol = tf.cholesky(tf.constant(a))
        rhs = tf.constant([[1.0, 0.0], [2.0, 1.0], [0.5, -1.0]], tf.float64)
        return [
            tf.cholesky_solve(chol, rhs),
            tf.linalg.cholesky_solve(tf.cast(chol, tf.float32), tf.cast(rhs, tf.float32)),
        ]

    assert_same(tf1, build, rtol=1e-5)


def test_dtypes(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        ds = [tf.uint32, tf.uint64, tf.variant]
        row = [
            (
                d.name,
                d.size if d is not tf.variant else None,
                d.is_unsigned,
                d.is_integer,
                d.as_numpy_dtype.__name__ if d is not tf.variant else None,
            )
            for d in ds
        ]
        row.append(tf.as_dtype(tf.uint32.as_datatype_enum) == tf.uint32)
        row.append(isinstance(tf.float32, tf.DType))
        row.append(isinstance(tf.as_dtype("uint64"), tf.DType))
        out.append(row)
    assert out[0] == out[1]

    def build(tf: Any) -> Any:
        return [
            tf.constant([1, 2**32 - 1], tf.uint32),
            tf.constant([7], tf.uint64),
            tf.cast(tf.constant([3.7, 2.0]), tf.uint32),
        ]

    assert_same(tf1, build)


def test_dtype_from_enum(tf1: Any) -> None:
    out = [repr(tf.DType(tf.uint64.as_datatype_enum)) for tf in (tf1, fl)]
    assert out[0] == out[1]


def test_dtype_constructor_takes_the_enum_as_tensorflow(tf1: Any) -> None:
    # Every enum value flowlab has (refs too) gives the interned DType, equal to
    # TensorFlow's by name and enum; the argument goes through int() first; invalid
    # values are TensorFlow's errors by type and message.
    from flowlab.graph.dtypes import ALL_TYPES

    for d in ALL_TYPES:
        for e in (d.as_datatype_enum, d._as_ref().as_datatype_enum):
            mine, theirs = fl.DType(e), tf1.DType(e)
            assert mine is fl.as_dtype(e)
            assert (mine.name, mine.as_datatype_enum) == (theirs.name, theirs.as_datatype_enum)
    for arg in ("1", 1.0, True, np.int32(3)):
        assert repr(fl.DType(arg)) == repr(tf1.DType(arg))
    for arg in (999, 0, -1, None, "float32"):
        errs = []
        for tf in (tf1, fl):
            with pytest.raises((TypeError, ValueError)) as e:
                tf.DType(arg)
            errs.append((e.type, str(e.value)))
        assert errs[0] == errs[1], arg
    with pytest.raises(TypeError, match="DT_BFLOAT16, a DataType flowlab does not have"):
        fl.DType(tf1.bfloat16.as_datatype_enum)


def test_graph_mode_switches(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        tf.disable_eager_execution()
        tf.disable_v2_behavior()
        out.append(tf.executing_eagerly())
    assert out == [False, False]


def test_convert_to_tensor_or_indexed_slices(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        t = tf.convert_to_tensor_or_indexed_slices([[1.0, 2.0]])
        s = tf.IndexedSlices(tf.constant([[1.0]]), tf.constant([0]), tf.constant([2, 1]))
        same = tf.convert_to_tensor_or_indexed_slices(s)
        return [
            t,
            tf.constant(same is s),
            tf.constant(isinstance(t, tf.Tensor)),
            tf.convert_to_tensor_or_indexed_slices(np.int64(3), dtype=tf.int64),
        ]

    assert_same(tf1, build)


def test_register_tensor_conversion_function(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        class Pair:
            def __init__(self, a: float, b: float) -> None:
                self.a, self.b = a, b

        def convert(value: Pair, dtype: Any = None, name: Any = None, as_ref: bool = False) -> Any:
            return tf.constant([value.a, value.b], dtype=dtype or tf.float32, name=name)

        tf.register_tensor_conversion_function(Pair, convert)
        return [tf.add(Pair(1.0, 2.0), 1.0), tf.convert_to_tensor(Pair(3, 4), tf.float64)]

    assert_same(tf1, build)


def test_no_gradient(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        tf.no_gradient("FlowlabTestNoGradientOp")
        with pytest.raises(Exception) as info:
            tf.no_gradient(7)
        out.append(type(info.value).__name__)
    assert out[0] == out[1]


def test_no_regularizer(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        with tf.variable_scope("s", regularizer=lambda w: tf.reduce_sum(w)):
            a = tf.get_variable("a", [2], initializer=tf.ones_initializer())
            b = tf.get_variable(
                "b", [2], initializer=tf.ones_initializer(), regularizer=tf.no_regularizer
            )
        losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
        return [
            tf.constant(len(losses)),
            tf.add_n(losses),
            a + b,
            tf.constant(tf.no_regularizer(a) is None),
        ]

    assert_same(tf1, build)


def test_variable_scope_object(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with tf.variable_scope("outer") as scope:
                pass
            row = [
                isinstance(scope, tf.VariableScope),
                scope.name,
                scope.original_name_scope,
                scope.reuse,
            ]
            with tf.variable_scope(scope, reuse=True) as again:
                row += [again.name, again.reuse]
            vs = tf.VariableScope(False, name="made")
            row += [vs.name, vs.reuse]
        out.append(row)
    assert out[0] == out[1]


def test_unconnected_gradients(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant([1.0, 2.0])
        y = tf.constant([3.0])
        z = x * 2.0
        return [
            tf.gradients(z, [x, y], unconnected_gradients=tf.UnconnectedGradients.ZERO),
            tf.constant(tf.UnconnectedGradients.NONE.value),
            tf.constant(tf.UnconnectedGradients("zero").name),
        ]

    assert_same(tf1, build)


def test_gpu_options(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        o = tf.GPUOptions(per_process_gpu_memory_fraction=0.5, allow_growth=True)
        cfg = tf.ConfigProto(gpu_options=o)
        out.append(
            (
                o.per_process_gpu_memory_fraction,
                o.allow_growth,
                cfg.gpu_options.allow_growth,
                o.visible_device_list,
            )
        )
    assert out[0] == out[1]


def test_event_proto(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        e = tf.Event(wall_time=1.5, step=3, file_version="brain.Event:2")
        back = tf.Event.FromString(e.SerializeToString())
        out.append(
            (
                back.wall_time,
                back.step,
                back.file_version,
                back.WhichOneof("what"),
                e.SerializeToString(),
            )
        )
    assert out[0] == out[1]


def test_tables_initializer(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            empty = [
                tf.tables_initializer(),
                tf.initialize_all_tables(name="all_tables"),
                tf.initializers.tables_initializer(),
            ]
            v = tf.Variable(0, name="v")
            tf.add_to_collection(tf.GraphKeys.TABLE_INITIALIZERS, tf.assign(v, 7).op)
            grouped = tf.tables_initializer()
            row: list[Any] = [(op.type, op.name) for op in [*empty, grouped]]
            with tf.Session() as s:
                s.run(v.initializer)
                s.run(grouped)
                row.append(s.run(v))
        out.append(row)
    assert out[0] == out[1]


def test_op_error_at_top_level(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        p = tf.placeholder(tf.float32, [None])
        return tf.reshape(p, [3]), {p: np.zeros([2], np.float32)}

    e, a = assert_same_error(tf1, build)
    assert isinstance(e, tf1.OpError) and isinstance(a, fl.OpError)
    assert fl.OpError is fl.errors.OpError and tf1.OpError is tf1.errors.OpError


def test_convert_to_tensor_or_sparse_tensor(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        st = tf.SparseTensor([[0, 1]], [2.0], [2, 2])
        same = tf.convert_to_tensor_or_sparse_tensor(st)
        from_value = tf.convert_to_tensor_or_sparse_tensor(
            tf.SparseTensorValue(np.array([[1, 0]]), np.array([3], np.int32), np.array([2, 2]))
        )
        dense = tf.convert_to_tensor_or_sparse_tensor([1, 2], dtype=tf.int64)
        return [
            tf.constant(same is st),
            from_value.values,
            from_value.indices,
            tf.sparse.to_dense(from_value),
            dense,
        ]

    assert_same(tf1, build)
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(RuntimeError) as info:
            tf.convert_to_tensor_or_sparse_tensor(tf.SparseTensor([[0]], [1.0], [1]), tf.int32)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_is_symbolic_tensor(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            v = tf.Variable(1.0)
            out.append(
                [
                    tf.is_symbolic_tensor(tf.constant(1.0)),
                    tf.is_symbolic_tensor(v.value()),
                    tf.is_symbolic_tensor(np.ones(2)),
                    tf.is_symbolic_tensor(3.0),
                    tf.is_symbolic_tensor(tf.SparseTensor([[0]], [1.0], [1])),
                ]
            )
    assert out[0] == out[1]


@pytest.mark.parametrize("known", [True, False])
def test_required_space_to_batch_paddings(tf1: Any, known: bool) -> None:
    def build(tf: Any) -> Any:
        shape = [5, 7] if known else tf.placeholder_with_default([5, 7], [2])
        base = [[1, 0], [2, 1]]
        p1, c1 = tf.required_space_to_batch_paddings(shape, [2, 3])
        p2, c2 = tf.required_space_to_batch_paddings(shape, [4, 2], base_paddings=base)
        p3, c3 = tf.required_space_to_batch_paddings(
            tf.zeros([0], tf.int32), tf.zeros([0], tf.int32)
        )
        return [p1, c1, p2, c2, p3, c3]

    assert_same(tf1, build)


def test_batch_scatter_update(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        v = tf.Variable(np.arange(12, dtype=np.float32).reshape(2, 2, 3))
        w = tf.Variable([[1, 2, 3], [4, 5, 6]])
        up = tf.batch_scatter_update(
            v, [[[2], [0]], [[1], [1]]], [[[-1.0], [-2.0]], [[-3.0], [-4.0]]]
        )
        up2 = tf.batch_scatter_update(w, tf.constant([[0, 2], [1, 0]], tf.int64), [[9, 8], [7, 6]])
        with tf.control_dependencies([up, up2]):
            return [tf.identity(v), tf.identity(w)]

    assert_same(tf1, build)


def test_variable_synchronization_and_aggregation(tf1: Any) -> None:
    def observe(tf: Any) -> list[Any]:
        out: list[Any] = [
            [(m.name, m.value) for m in tf.VariableSynchronization],
            [(m.name, m.value) for m in tf.VariableAggregation],
            tf.VariableAggregation.ONLY_FIRST_TOWER is tf.VariableAggregation.ONLY_FIRST_REPLICA,
        ]
        with tf.Graph().as_default():
            plain = tf.Variable(1.0, name="plain")
            on_read = tf.Variable(
                2.0,
                name="on_read",
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.SUM,
            )
            by_value = tf.Variable(3.0, name="by_value", synchronization=2, aggregation=2)
            for v in (plain, on_read, by_value):
                out.append((v.synchronization.name, v.aggregation.name, v.trainable))
            out.append([v.op.name for v in tf.trainable_variables()])
            for kw in ({"synchronization": 9}, {"aggregation": 7}):
                with pytest.raises(ValueError) as info:
                    tf.Variable(1.0, name="bad", **kw)
                out.append(str(info.value))
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                out.append(s.run([plain, on_read, by_value]))
        return out

    assert observe(fl) == observe(tf1)


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_sparse_matmul_and_gradient(tf1: Any, ta: bool, tb: bool) -> None:
    rs = np.random.RandomState(3)
    a = rs.randn(3, 4).astype(np.float32) * (rs.rand(3, 4) > 0.5)
    b = rs.randn(4, 2).astype(np.float32)
    a, b = (a.T if ta else a), (b.T if tb else b)

    def build(tf: Any) -> Any:
        x, y = tf.constant(a), tf.constant(b)
        p = tf.sparse_matmul(x, y, transpose_a=ta, transpose_b=tb, a_is_sparse=True)
        q = tf.sparse_matmul(tf.nn.relu(x), y, transpose_a=ta, transpose_b=tb)
        return [
            p,
            q,
            tf.gradients(tf.reduce_sum(p * p), [x, y]),
            tf.gradients(tf.reduce_sum(q), [x, y]),
        ]

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)


def test_sparse_matmul_errors(tf1: Any) -> None:
    names = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(ValueError):
                tf.sparse_matmul(tf.zeros([2, 3]), tf.zeros([2, 3]))
            with pytest.raises(TypeError) as info:
                tf.sparse_matmul(tf.zeros([2, 2], tf.float64), tf.zeros([2, 2], tf.float64))
            names.append(type(info.value).__name__)
    assert names[0] == names[1]
