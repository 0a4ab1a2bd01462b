"""`tf.edit_distance` and `tf.fingerprint`: comparing and hashing whole rows.

EditDistance takes two SparseTensors of rank R; the first R-1 index dimensions name a
cell, the last orders that cell's sequence.  Each output cell (float32, shape the
element-wise maximum of both dense shapes without their last dimension) holds the
Levenshtein distance between the cell's hypothesis and truth sequences, divided by the
truth's length when `normalize` (so a cell with no truth is inf, one with no
hypothesis is 1.0).  Fingerprint hashes each row of `data` (its first dimension) with
FarmHash Fingerprint64 into 8 little-endian uint8 bytes.  Neither is differentiable.
Kernels: flowlab.kernels.edit_distance_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["edit_distance", "fingerprint"]


def _edit_distance_shape(op: Operation) -> list[TensorShape]:
    from flowlab.ops.const_fold import constant_value

    hyp, truth = constant_value(op.inputs[2]), constant_value(op.inputs[5])
    if hyp is None or truth is None:
        rank = op.inputs[2].shape.as_list()[0] if op.inputs[2].shape.ndims == 1 else None
        return [TensorShape(None if rank is None else [None] * (rank - 1))]
    return [TensorShape([max(int(a), int(b)) for a, b in zip(hyp[:-1], truth[:-1])])]


op_def("EditDistance",
       inputs=["hypothesis_indices: int64", "hypothesis_values: T", "hypothesis_shape: int64",
               "truth_indices: int64", "truth_values: T", "truth_shape: int64"],
       outputs=["output: float32"], attrs=["normalize: bool = true", "T: type"],
       shape_fn=_edit_distance_shape,
       doc="Levenshtein distances between the sequences of two SparseTensors.")


def _fingerprint_shape(op: Operation) -> list[TensorShape]:
    from flowlab.ops.const_fold import constant_value

    method = constant_value(op.inputs[1])
    if method is not None:
        m = method.item() if hasattr(method, "item") else method
        m = m.decode() if isinstance(m, bytes) else str(m)
        if m != "farmhash64":
            raise ValueError(f"Unsupported method: {m} for '{{{{node {op.name}}}}} = "
                             f"Fingerprint[T=DT_{op.inputs[0].dtype.name.upper()}]'")
    s = op.inputs[0].shape
    if s.ndims is not None and s.ndims < 1:
        raise ValueError(f"Shape must be at least rank 1 but is rank {s.ndims} for "
                         f"'{{{{node {op.name}}}}} = Fingerprint[T={op.inputs[0].dtype.name}]'")
    first = None if s.ndims is None else s.as_list()[0]
    return [TensorShape([first, 8])]


op_def("Fingerprint", inputs=["data: T", "method: string"], outputs=["fingerprint: uint8"],
       attrs=["T: type"], shape_fn=_fingerprint_shape,
       doc="FarmHash Fingerprint64 of each row of data, as 8 little-endian bytes.")
not_differentiable("EditDistance")
not_differentiable("Fingerprint")


def edit_distance(hypothesis: Any, truth: Any, normalize: bool = True,
                  name: str = "edit_distance") -> Tensor:
    """Levenshtein distance between the sequences of `hypothesis` and `truth`
    (SparseTensors), per cell of their leading dimensions.

        tf.edit_distance(hyp, truth)   # float32, shape dense_shape[:-1]
    """
    from flowlab.ops.sparse_tensor import SparseTensor, SparseTensorValue

    if not isinstance(hypothesis, (SparseTensor, SparseTensorValue)):
        raise TypeError("Hypothesis must be a SparseTensor.")
    if not isinstance(truth, (SparseTensor, SparseTensorValue)):
        raise TypeError("Truth must be a SparseTensor.")
    return apply_op("EditDistance", hypothesis_indices=hypothesis.indices,
                    hypothesis_values=hypothesis.values, hypothesis_shape=hypothesis.dense_shape,
                    truth_indices=truth.indices, truth_values=truth.values,
                    truth_shape=truth.dense_shape, normalize=normalize, name=name)


def fingerprint(data: Any, method: str = "farmhash64", name: str | None = None) -> Tensor:
    """8 bytes (uint8) of FarmHash Fingerprint64 per row of `data` (rank >= 1): the row's
    bytes for numbers, the fingerprints of its strings for strings."""
    return apply_op("Fingerprint", data=data, method=method, name=name or "Fingerprint")
