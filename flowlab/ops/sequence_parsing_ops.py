"""`tf.io.parse_single_sequence_example` / `parse_sequence_example`: serialized
`tf.train.SequenceExample`s to tensors, as one `ParseSequenceExampleV2` op
(TensorFlow's op type and signature, without its ragged features).

A SequenceExample holds `context` features (one `Features` map, parsed as an
Example's: `FixedLenFeature` dense, `VarLenFeature` sparse) and `feature_lists`
(a list of `Features` per step).  A `FixedLenSequenceFeature(shape, dtype,
allow_missing)` of the sequence features is a dense tensor of `[steps] + shape`
(batched: `[batch, longest] + shape`, padded with zeros, and its lengths in a third
dict); a missing feature list is an error unless `allow_missing`, then it has no
steps.  A `VarLenFeature` of the sequence features is a SparseTensor indexed by
(step, position) (batched: (example, step, position)).

    >>> context, sequence = parse_single_sequence_example(
    ...     record, {"label": FixedLenFeature([], tf.int64)},
    ...     {"tokens": FixedLenSequenceFeature([], tf.int64)})
    >>> sequence["tokens"]     # int64 [steps]

The kernel is flowlab.kernels.sequence_parsing_kernels.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.ops.builder import convert_to_tensor, create_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def
from flowlab.ops.parsing_ops import FixedLenFeature, VarLenFeature, _check_dtype
from flowlab.ops.sparse_tensor import SparseTensor

__all__ = ["FixedLenSequenceFeature", "parse_sequence_example", "parse_single_sequence_example"]


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """A feature list of steps of a fixed shape (`tf.io.FixedLenSequenceFeature`)."""

    def __new__(cls, shape: Any, dtype: Any, allow_missing: bool = False,
                default_value: Any = None) -> FixedLenSequenceFeature:
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


def _shape_fn(op: Any) -> list[TensorShape]:
    serialized = op.inputs[0].shape
    batch = [] if serialized.ndims == 0 else [serialized[0].value if serialized.ndims else None]
    nc, nf = op.get_attr("Ncontext_sparse"), op.get_attr("Nfeature_list_sparse")
    rc, rf = len(batch) + 1, len(batch) + 2
    out = [TensorShape([None, rc])] * nc + [TensorShape([None])] * nc + [TensorShape([rc])] * nc
    out += [TensorShape(batch).concatenate(as_shape(s)) for s in op.get_attr("context_dense_shapes")]
    out += [TensorShape([None, rf])] * nf + [TensorShape([None])] * nf + [TensorShape([rf])] * nf
    shapes = op.get_attr("feature_list_dense_shapes")
    out += [TensorShape([*batch, None]).concatenate(as_shape(s)) for s in shapes]
    out += [TensorShape(batch)] * len(shapes)
    return out


op_def("ParseSequenceExampleV2",
       inputs=["serialized: string", "debug_name: string", "context_sparse_keys: string",
               "context_dense_keys: string", "context_ragged_keys: string",
               "feature_list_sparse_keys: string", "feature_list_dense_keys: string",
               "feature_list_ragged_keys: string", "feature_list_dense_missing_assumed_empty: bool",
               "context_dense_defaults: Tcontext_dense"],
       outputs=["context_sparse_indices: Ncontext_sparse * int64",
                "context_sparse_values: context_sparse_types",
                "context_sparse_shapes: Ncontext_sparse * int64",
                "context_dense_values: Tcontext_dense",
                "context_ragged_values: context_ragged_value_types",
                "context_ragged_row_splits: context_ragged_split_types",
                "feature_list_sparse_indices: Nfeature_list_sparse * int64",
                "feature_list_sparse_values: feature_list_sparse_types",
                "feature_list_sparse_shapes: Nfeature_list_sparse * int64",
                "feature_list_dense_values: feature_list_dense_types",
                "feature_list_dense_lengths: Nfeature_list_dense * int64",
                "feature_list_ragged_values: feature_list_ragged_value_types",
                "feature_list_ragged_outer_splits: feature_list_ragged_split_types",
                "feature_list_ragged_inner_splits: feature_list_ragged_split_types"],
       attrs=["Ncontext_sparse: int >= 0 = 0", "Tcontext_dense: list(type) >= 0 = []",
              "context_sparse_types: list(type) >= 0 = []",
              "context_ragged_value_types: list(type) >= 0 = []",
              "context_ragged_split_types: list(type) >= 0 = []",
              "context_dense_shapes: list(shape) >= 0 = []",
              "Nfeature_list_sparse: int >= 0 = 0", "Nfeature_list_dense: int >= 0 = 0",
              "feature_list_dense_types: list(type) >= 0 = []",
              "feature_list_sparse_types: list(type) >= 0 = []",
              "feature_list_ragged_value_types: list(type) >= 0 = []",
              "feature_list_ragged_split_types: list(type) >= 0 = []",
              "feature_list_dense_shapes: list(shape) >= 0 = []"],
       shape_fn=_shape_fn,
       doc="Parses serialized SequenceExample protos (a scalar or a vector): context and "
           "feature-list features, dense and sparse.")
not_differentiable("ParseSequenceExampleV2")


def _strings(keys: list[str], name: str) -> Any:
    return convert_to_tensor(np.array([k.encode() for k in keys], dtype=object), dtype=dtypes.string,
                             name=name)


def _kinds(features: dict[str, Any] | None, dense_type: type, where: str) -> tuple[list[str], list[str]]:
    features = features or {}
    for k, f in features.items():
        if not isinstance(f, (VarLenFeature, dense_type)):
            raise ValueError(f"Invalid feature {k}:{f}. flowlab parses {dense_type.__name__} and "
                             f"VarLenFeature {where}.")
    return (sorted(k for k, f in features.items() if isinstance(f, VarLenFeature)),
            sorted(k for k, f in features.items() if isinstance(f, dense_type)))


def _context_default(key: str, f: FixedLenFeature) -> Any:
    dt = _check_dtype(key, f.dtype)
    shape = as_shape(f.shape)
    if f.default_value is None:
        empty = np.zeros([0], object if dt == dtypes.string else dt.as_numpy_dtype)
        return convert_to_tensor(empty, dtype=dt, name=f"key_{key}")
    dv = np.asarray(f.default_value, dtype=object if dt == dtypes.string else dt.as_numpy_dtype)
    dv = np.broadcast_to(dv, shape.as_tuple()) if dv.size == 1 else dv.reshape(shape.as_tuple())
    return convert_to_tensor(np.array(dv), dtype=dt, name=f"key_{key}")


def _parse(serialized: Any, context_features: Any, sequence_features: Any, name: str | None,
           default: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    if not (context_features or sequence_features):
        raise ValueError("Both context_features and sequence_features are None, but at least one "
                         "should have values.")
    cs, cd = _kinds(context_features, FixedLenFeature, "in context_features")
    fs, fd = _kinds(sequence_features, FixedLenSequenceFeature, "in sequence_features")
    context_features, sequence_features = context_features or {}, sequence_features or {}
    for k in fd:
        if sequence_features[k].default_value is not None:
            raise ValueError(f"Value feature_list.dense_defaults[{k}] must be None")
    for k in cd:
        if not as_shape(context_features[k].shape).is_fully_defined():
            raise ValueError(f"All dimensions of shape for feature {k} need to be known but received "
                             f"{as_shape(context_features[k].shape)}.")
    with get_default_graph().name_scope(name or default):
        ser = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        if ser.shape.ndims not in (None, 0, 1):
            raise ValueError(f"Input serialized must be a scalar or a vector, got shape {ser.shape}")
        op = create_op(
            "ParseSequenceExampleV2", serialized=ser,
            debug_name=_strings([], "debug_name"),
            context_sparse_keys=_strings(cs, "context_sparse_keys"),
            context_dense_keys=_strings(cd, "context_dense_keys"),
            context_ragged_keys=_strings([], "context_ragged_keys"),
            feature_list_sparse_keys=_strings(fs, "feature_list_sparse_keys"),
            feature_list_dense_keys=_strings(fd, "feature_list_dense_keys"),
            feature_list_ragged_keys=_strings([], "feature_list_ragged_keys"),
            feature_list_dense_missing_assumed_empty=convert_to_tensor(
                np.array([bool(sequence_features[k].allow_missing) for k in fd], dtype=bool),
                dtype=dtypes.bool, name="feature_list_dense_missing_assumed_empty"),
            context_dense_defaults=[_context_default(k, context_features[k]) for k in cd],
            Ncontext_sparse=len(cs),
            context_sparse_types=[_check_dtype(k, context_features[k].dtype) for k in cs],
            context_dense_shapes=[as_shape(context_features[k].shape).as_list() for k in cd],
            Nfeature_list_sparse=len(fs), Nfeature_list_dense=len(fd),
            feature_list_dense_types=[_check_dtype(k, sequence_features[k].dtype) for k in fd],
            feature_list_sparse_types=[_check_dtype(k, sequence_features[k].dtype) for k in fs],
            feature_list_dense_shapes=[as_shape(sequence_features[k].shape).as_list() for k in fd],
            name="ParseSequenceExampleV2")
    outs = list(op.outputs)
    take = iter(outs)

    def nxt(n: int) -> list[Any]:
        return [next(take) for _ in range(n)]

    def sparse(idx: list[Any], vals: list[Any], shapes: list[Any]) -> list[SparseTensor]:
        out = []
        for i, v, s in zip(idx, vals, shapes):
            st = SparseTensor.__new__(SparseTensor)
            st._indices, st._values, st._dense_shape = i, v, s
            out.append(st)
        return out

    c_sparse = sparse(nxt(len(cs)), nxt(len(cs)), nxt(len(cs)))
    c_dense = nxt(len(cd))
    f_sparse = sparse(nxt(len(fs)), nxt(len(fs)), nxt(len(fs)))
    f_dense = nxt(len(fd))
    lengths = nxt(len(fd))
    return (dict(zip(cs + cd, c_sparse + c_dense)), dict(zip(fs + fd, f_sparse + f_dense)),
            dict(zip(fd, lengths)))


def parse_single_sequence_example(serialized: Any, context_features: Any = None,
                                  sequence_features: Any = None, example_name: Any = None,
                                  name: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """One serialized SequenceExample (a scalar): (context dict, feature-list dict)."""
    ser = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
    if ser.shape.ndims not in (None, 0):
        raise ValueError(f"Input serialized must be a scalar, got shape {ser.shape}")
    context, sequence, _ = _parse(ser, context_features, sequence_features, name,
                                  "ParseSingleSequenceExample")
    return context, sequence


def parse_sequence_example(serialized: Any, context_features: Any = None,
                           sequence_features: Any = None, example_names: Any = None,
                           name: str | None = None
                           ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A vector of serialized SequenceExamples: (context dict, feature-list dict, the
    lengths of the dense feature lists)."""
    return _parse(serialized, context_features, sequence_features, name, "ParseSequenceExample")
