"""Conditional accumulators (`tf.ConditionalAccumulator`,
`tf.SparseConditionalAccumulator`): the per-variable gradient aggregators of
synchronous replication (paper section 4.4, `tf.train.SyncReplicasOptimizer`).

An accumulator op outputs a handle to an accumulator living in its device's resource
manager (flowlab.kernels.accumulator_kernels); the apply, take, num-accumulated and
set-global-step ops take that handle, so placement colocates them with it.
`take_grad` is an asynchronous kernel: it parks until `num_required` gradients
arrived, and is cancelled with its step.

As in TensorFlow 2.x's tf.compat.v1, the dense accumulator is built from the
resource ops (`ResourceConditionalAccumulator`, `ResourceAccumulatorApplyGradient`,
...) and the sparse one from the reference ops (`SparseConditionalAccumulator`,
whose handle is a `string_ref`, with `AccumulatorNumAccumulated` and
`AccumulatorSetGlobalStep`).  The older reference ops of the dense accumulator
(`ConditionalAccumulator`, `AccumulatorApplyGradient`, `AccumulatorTakeGradient`)
are declared too, for imported GraphDefs.

    >>> acc = ConditionalAccumulator(float32, shape=[2])
    >>> apply = acc.apply_grad([1.0, 2.0], local_step=0)
    >>> avg = acc.take_grad(2)        # blocks until two gradients arrived
"""

from __future__ import annotations

import collections
from typing import Any

from flowlab.graph import dtypes as _dtypes
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.indexed_slices import IndexedSlices
from flowlab.ops.math_ops import cast
from flowlab.ops.op_def import op_def

__all__ = ["ConditionalAccumulatorBase", "ConditionalAccumulator", "SparseConditionalAccumulator"]

_ACC_ATTRS = [
    "dtype: numeric", "shape: shape", "container: string = ''", "shared_name: string = ''",
    "reduction_type: string = 'MEAN'",
]


def _handle(op: Any) -> list[Any]:
    return [TensorShape([2])]


def _scalar(op: Any) -> list[Any]:
    return [TensorShape([])]


def _take_shape(op: Any) -> list[Any]:
    return [TensorShape(None)]


def _sparse_take_shape(op: Any) -> list[Any]:
    return [TensorShape(None)] * 3


op_def("ResourceConditionalAccumulator", outputs=["handle: resource"], attrs=_ACC_ATTRS,
       shape_fn=_handle, stateful=True,
       doc="A conditional accumulator for aggregating gradients (resource handle).")
op_def("ConditionalAccumulator", outputs=["handle: Ref(string)"], attrs=_ACC_ATTRS,
       shape_fn=_handle, stateful=True,
       doc="A conditional accumulator for aggregating gradients (reference handle).")
op_def("SparseConditionalAccumulator", outputs=["handle: Ref(string)"], attrs=_ACC_ATTRS,
       shape_fn=_handle, stateful=True,
       doc="A conditional accumulator for aggregating sparse (IndexedSlices) gradients.")

for _prefix, _h in (("Resource", "handle: resource"), ("", "handle: Ref(string)")):
    op_def(f"{_prefix}AccumulatorApplyGradient", inputs=[_h, "local_step: int64", "gradient: dtype"],
           attrs=["dtype: numeric"], stateful=True,
           doc="Applies a gradient unless it is stale (local_step < the global step).")
    op_def(f"{_prefix}AccumulatorNumAccumulated", inputs=[_h], outputs=["num_accumulated: int32"],
           shape_fn=_scalar, stateful=True, doc="The number of gradients aggregated so far.")
    op_def(f"{_prefix}AccumulatorSetGlobalStep", inputs=[_h, "new_global_step: int64"],
           stateful=True, doc="Sets the accumulator's global step.")
    op_def(f"{_prefix}AccumulatorTakeGradient", inputs=[_h, "num_required: int32"],
           outputs=["average: dtype"], attrs=["dtype: numeric"], shape_fn=_take_shape,
           stateful=True,
           doc="Waits for num_required gradients; returns their average (or sum), resets, "
               "increments the global step.")

op_def("SparseAccumulatorApplyGradient",
       inputs=["handle: Ref(string)", "local_step: int64", "gradient_indices: int64",
               "gradient_values: dtype", "gradient_shape: int64"],
       attrs=["dtype: numeric", "has_known_shape: bool"], stateful=True,
       doc="Applies a sparse gradient unless it is stale.")
op_def("SparseAccumulatorTakeGradient", inputs=["handle: Ref(string)", "num_required: int32"],
       outputs=["indices: int64", "values: dtype", "shape: int64"], attrs=["dtype: numeric"],
       shape_fn=_sparse_take_shape, stateful=True,
       doc="Waits for num_required sparse gradients; returns their average (or sum).")

for _t in ("ResourceConditionalAccumulator", "ConditionalAccumulator", "SparseConditionalAccumulator",
           "ResourceAccumulatorApplyGradient", "AccumulatorApplyGradient",
           "ResourceAccumulatorNumAccumulated", "AccumulatorNumAccumulated",
           "ResourceAccumulatorSetGlobalStep", "AccumulatorSetGlobalStep",
           "ResourceAccumulatorTakeGradient", "AccumulatorTakeGradient",
           "SparseAccumulatorApplyGradient", "SparseAccumulatorTakeGradient"):
    not_differentiable(_t)

SparseAccumulatorTakeGradient = collections.namedtuple(
    "SparseAccumulatorTakeGradient", ["indices", "values", "shape"])


def _shape_attr(shape: TensorShape) -> Any:
    return shape.as_list() if shape.dims is not None else None


def _create(op_type: str, dtype: Any, shape: Any, shared_name: Any, name: str,
            reduction_type: str) -> Any:
    if reduction_type not in ("MEAN", "SUM"):
        raise ValueError(
            f"Attr 'reduction_type' of '{op_type}' Op passed string '{reduction_type}' not in: "
            '"MEAN", "SUM".')
    return apply_op(op_type, dtype=_dtypes.as_dtype(dtype),
                    shape=_shape_attr(TensorShape(shape) if shape is not None else TensorShape(None)),
                    shared_name=shared_name or "", reduction_type=reduction_type, name=name)


def _step_int64(step: Any) -> Any:
    return cast(convert_to_tensor(step), _dtypes.int64)


class ConditionalAccumulatorBase:
    """An accumulator's handle, dtype and shape (`tf.ConditionalAccumulatorBase`)."""

    _num_op = "ResourceAccumulatorNumAccumulated"
    _set_op = "ResourceAccumulatorSetGlobalStep"

    def __init__(self, dtype: Any, shape: Any, accumulator_ref: Any) -> None:
        self._dtype = dtype
        self._shape = TensorShape(shape) if shape is not None else TensorShape(None)
        self._accumulator_ref = accumulator_ref
        self._name = accumulator_ref.op.name.split("/")[-1]

    @property
    def accumulator_ref(self) -> Any:
        return self._accumulator_ref

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> Any:
        return self._dtype

    def num_accumulated(self, name: str | None = None) -> Any:
        """The number of gradients aggregated since the last take."""
        if name is None:
            name = f"{self._name}_NumAccumulated"
        return apply_op(self._num_op, handle=self._accumulator_ref, name=name)

    def set_global_step(self, new_global_step: Any, name: str | None = None) -> Any:
        """The op setting the accumulator's global step (lower values too)."""
        return apply_op(self._set_op, handle=self._accumulator_ref,
                        new_global_step=_step_int64(new_global_step), name=name)


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """Aggregates dense gradients (`tf.ConditionalAccumulator`): gradients at the
    accumulator's global step or later are summed; `take_grad(n)` waits for n of them
    and returns their mean (or sum with reduction_type="SUM")."""

    def __init__(self, dtype: Any, shape: Any = None, shared_name: str | None = None,
                 name: str = "conditional_accumulator", reduction_type: str = "MEAN") -> None:
        ref = _create("ResourceConditionalAccumulator", dtype, shape, shared_name, name, reduction_type)
        super().__init__(dtype, shape, ref)

    def apply_grad(self, grad: Any, local_step: Any = 0, name: str | None = None) -> Any:
        """The op adding `grad`, silently dropped when `local_step` is older than the
        accumulator's global step.  ValueError when its static shape does not fit."""
        grad = convert_to_tensor(grad, self._dtype)
        grad.shape.assert_is_compatible_with(self._shape)
        local_step = _step_int64(local_step)
        return apply_op("ResourceAccumulatorApplyGradient", handle=self._accumulator_ref,
                        local_step=local_step, gradient=grad, name=name)

    def take_grad(self, num_required: Any, name: str | None = None) -> Any:
        """The mean (or sum) of the gradients, once `num_required` arrived; then the
        counter resets and the global step increments."""
        out = apply_op("ResourceAccumulatorTakeGradient", handle=self._accumulator_ref,
                       num_required=num_required, dtype=_dtypes.as_dtype(self._dtype), name=name)
        out.set_shape(self._shape)
        return out


class SparseConditionalAccumulator(ConditionalAccumulatorBase):
    """Aggregates IndexedSlices gradients (`tf.SparseConditionalAccumulator`); the mean
    divides each slice by the number of gradients that touched its index."""

    _num_op = "AccumulatorNumAccumulated"
    _set_op = "AccumulatorSetGlobalStep"

    def __init__(self, dtype: Any, shape: Any = None, shared_name: str | None = None,
                 name: str = "sparse_conditional_accumulator", reduction_type: str = "MEAN") -> None:
        ref = _create("SparseConditionalAccumulator", dtype, shape, shared_name, name, reduction_type)
        super().__init__(dtype, shape, ref)

    def apply_indexed_slices_grad(self, grad: Any, local_step: Any = 0, name: str | None = None) -> Any:
        """apply_grad with the indices, values and dense_shape of an IndexedSlices."""
        return self.apply_grad(grad_indices=grad.indices, grad_values=grad.values,
                               grad_shape=grad.dense_shape, local_step=local_step, name=name)

    def apply_grad(self, grad_indices: Any, grad_values: Any, grad_shape: Any = None,
                   local_step: Any = 0, name: str | None = None) -> Any:
        """The op adding a sparse gradient (indices, values, optional dense shape),
        silently dropped when `local_step` is older than the global step."""
        local_step = _step_int64(local_step)
        return apply_op(
            "SparseAccumulatorApplyGradient", handle=self._accumulator_ref, local_step=local_step,
            gradient_indices=cast(grad_indices, _dtypes.int64), gradient_values=grad_values,
            gradient_shape=cast([] if grad_shape is None else grad_shape, _dtypes.int64),
            has_known_shape=grad_shape is not None, name=name)

    def take_grad(self, num_required: Any, name: str | None = None) -> Any:
        """(indices, values, shape) of the mean (or sum) gradient, once `num_required`
        gradients arrived."""
        idx, vals, shape = apply_op("SparseAccumulatorTakeGradient", handle=self._accumulator_ref,
                                    num_required=num_required,
                                    dtype=_dtypes.as_dtype(self._dtype), name=name)
        return SparseAccumulatorTakeGradient(idx, vals, shape)

    def take_indexed_slices_grad(self, num_required: Any, name: str | None = None) -> Any:
        """take_grad as an IndexedSlices."""
        idx, vals, shape = self.take_grad(num_required, name=name)
        return IndexedSlices(indices=idx, values=vals, dense_shape=shape)
