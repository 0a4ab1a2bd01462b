"""TensorArray: a step-scoped array of tensors, written and read by ops (TensorArrayV3).

The paper's section 3.4 builds dynamic RNNs and `map_fn` from `while_loop` plus a
TensorArray: each iteration writes its element, and a read after the loop must wait
for the writes.  State is a resource created by `TensorArrayV3` for one step; every
op that touches it takes its `handle` plus a float32 scalar `flow`.  The flow carries
no data: threading it from each write into the next op is what orders reads after
writes in the dataflow graph (and what `gradients` follows backwards, since the
handle is not differentiable).

The Python `TensorArray` is immutable: `write`, `scatter`, `unstack` and `split`
return a new TensorArray sharing the handle with the new flow.  Its element shape is
shared between those objects and refined by every write when `infer_shape` is on
(TensorFlow's behaviour), so a later `read` or `stack` gets a static shape.

Gradients (flowlab/ops/tensor_array_grad.py) go through `TensorArrayGradV3`, which
finds or creates, per gradient *source* (the "gradients" name scope), a gradient
array of the same size whose writes add up.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.ops import math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_value
from flowlab.ops.core_ops import identity
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["TensorArray"]

_SCALAR = TensorShape([])


def _flow_shape(op: Operation) -> list[Any]:
    return [_SCALAR]


def _element_shape_attr(op: Operation, attr: str) -> TensorShape:
    s = op.get_attr(attr)
    return TensorShape(None) if s is None else TensorShape(s)


def _check_index(op: Operation, i: int, what: str) -> None:
    s = op.inputs[i].shape
    if s.ndims is not None and s.ndims != 0:
        raise ValueError(f"Shape must be rank 0 but is rank {s.ndims} for '{what}'")


def _create_shape(op: Operation) -> list[Any]:
    _check_index(op, 0, "size")
    return [TensorShape([2]), _SCALAR]


def _write_shape(op: Operation) -> list[Any]:
    _check_index(op, 1, "index")
    return [_SCALAR]


def _read_shape(op: Operation) -> list[Any]:
    _check_index(op, 1, "index")
    return [None]


def _gather_shape(op: Operation) -> list[Any]:
    idx = op.inputs[1].shape
    if idx.ndims is not None and idx.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {idx.ndims} for 'indices'")
    el = _element_shape_attr(op, "element_shape")
    n = TensorShape([idx[0] if idx.ndims == 1 else None])
    return [n.concatenate(el) if el.ndims is not None else None]


def _scatter_shape(op: Operation) -> list[Any]:
    idx = op.inputs[1].shape
    if idx.ndims is not None and idx.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {idx.ndims} for 'indices'")
    value = op.inputs[2].shape
    if idx.ndims == 1 and value.ndims:
        n, m = idx[0].value, value[0].value
        if n is not None and m is not None and n != m:
            raise ValueError(f"Dimensions must be equal, but are {m} and {n}")
    return [_SCALAR]


def _concat_shape(op: Operation) -> list[Any]:
    el = _element_shape_attr(op, "element_shape_except0")
    value = TensorShape([None]).concatenate(el) if el.ndims is not None else None
    return [value, TensorShape([None])]


# TensorFlow declares every TensorArray op stateful: they read or change the array, so
# no pass may merge, fold or drop them.
op_def("TensorArrayV3", inputs=["size: int32"], outputs=["handle: resource", "flow: float32"],
       attrs=["dtype: type", "element_shape: shape = unknown", "dynamic_size: bool = false",
              "clear_after_read: bool = true", "identical_element_shapes: bool = false",
              "tensor_array_name: string = ''"],
       shape_fn=_create_shape, stateful=True,
       doc="A new TensorArray of `size` elements for this step; its handle and flow.")
op_def("TensorArrayGradV3", inputs=["handle: resource", "flow_in: float32"],
       outputs=["grad_handle: resource", "flow_out: float32"], attrs=["source: string"],
       shape_fn=lambda op: [TensorShape([2]), _SCALAR], stateful=True,
       doc="The gradient TensorArray of `handle` for `source`, created on first use.")
op_def("TensorArrayWriteV3",
       inputs=["handle: resource", "index: int32", "value: T", "flow_in: float32"],
       outputs=["flow_out: float32"], attrs=["T: type"], shape_fn=_write_shape, stateful=True,
       doc="Store `value` at `index`.")
op_def("TensorArrayReadV3", inputs=["handle: resource", "index: int32", "flow_in: float32"],
       outputs=["value: dtype"], attrs=["dtype: type"], shape_fn=_read_shape, stateful=True,
       doc="The element at `index`.")
op_def("TensorArrayGatherV3", inputs=["handle: resource", "indices: int32", "flow_in: float32"],
       outputs=["value: dtype"], attrs=["dtype: type", "element_shape: shape = unknown"],
       shape_fn=_gather_shape, stateful=True, doc="The elements at `indices`, stacked.")
op_def("TensorArrayScatterV3",
       inputs=["handle: resource", "indices: int32", "value: T", "flow_in: float32"],
       outputs=["flow_out: float32"], attrs=["T: type"], shape_fn=_scatter_shape, stateful=True,
       doc="Write `value[i]` at `indices[i]`.")
op_def("TensorArrayConcatV3", inputs=["handle: resource", "flow_in: float32"],
       outputs=["value: dtype", "lengths: int64"],
       attrs=["dtype: type", "element_shape_except0: shape = unknown"],
       shape_fn=_concat_shape, stateful=True,
       doc="All elements concatenated along their first dimension, and their lengths.")
op_def("TensorArraySplitV3",
       inputs=["handle: resource", "value: T", "lengths: int64", "flow_in: float32"],
       outputs=["flow_out: float32"], attrs=["T: type"], shape_fn=_flow_shape, stateful=True,
       doc="Split `value` along its first dimension into elements of `lengths` rows.")
op_def("TensorArraySizeV3", inputs=["handle: resource", "flow_in: float32"],
       outputs=["size: int32"], shape_fn=lambda op: [_SCALAR], stateful=True,
       doc="The current number of elements.")
op_def("TensorArrayCloseV3", inputs=["handle: resource"], stateful=True,
       doc="Release the array's elements.")

for _op in ("TensorArrayV3", "TensorArrayGradV3", "TensorArraySizeV3", "TensorArrayCloseV3"):
    not_differentiable(_op)


class TensorArray:
    """An array of tensors of one dtype, written and read inside a step
    (`tf.TensorArray`).

        ta = tf.TensorArray(tf.float32, size=3)
        ta = ta.write(0, x).write(1, y).write(2, z)   # each write returns a new object
        stacked = ta.stack()                          # [3, ...]

    Args:
      dtype: the element dtype.
      size: int32 scalar: the number of elements (required unless `handle` is given).
      dynamic_size: whether writes past the end grow the array.
      clear_after_read: whether reading an element releases it (a second read fails).
      tensor_array_name: the runtime name of the array.
      handle, flow: wrap an existing array (both needed).
      infer_shape: whether writes refine a shared static element shape and must agree.
      element_shape: the static shape of every element (implies `infer_shape`).
      colocate_with_first_write_call: accepted for compatibility.
      name: the name scope of the creating op ("TensorArray").
    Raises:
      ValueError: a handle without a flow, or no size for a new array.
    """

    def __init__(self, dtype: Any, size: Any = None, dynamic_size: bool | None = None,
                 clear_after_read: bool | None = None, tensor_array_name: str | None = None,
                 handle: Any = None, flow: Any = None, infer_shape: bool = True,
                 element_shape: Any = None, colocate_with_first_write_call: bool = True,
                 name: str | None = None) -> None:
        if handle is not None and tensor_array_name:
            raise ValueError("Cannot construct with both handle and tensor_array_name")
        if handle is not None and not isinstance(handle, Tensor):
            raise TypeError("Handle must be a Tensor")
        if handle is None and size is None:
            raise ValueError("Size must be provided if handle is not provided")
        if handle is not None and size is not None:
            raise ValueError("Cannot provide both a handle and size at the same time")
        if handle is not None and element_shape is not None:
            raise ValueError("Cannot provide both a handle and element_shape at the same time")
        if handle is not None and dynamic_size is not None:
            raise ValueError("Cannot provide both a handle and dynamic_size at the same time")
        if handle is not None and clear_after_read is not None:
            raise ValueError("Cannot provide both a handle and clear_after_read at the same time")
        if handle is not None and flow is None:
            raise ValueError("flow must not be None if handle is not None.")
        self._dtype = dtypes.as_dtype(dtype).base_dtype
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape or element_shape is not None
        # One list shared by every TensorArray made from this one by write/scatter/...,
        # so that a shape learnt from a write reaches the reads built later.
        self._element_shape = [as_shape(element_shape) if element_shape is not None
                               else TensorShape(None)]
        self._size: Tensor | None = None
        # A size given as a Python value: TensorFlow's size() makes a fresh Const of it.
        self._static_size: Any = None
        if handle is not None:
            self._handle = handle
            self._flow = flow
            return
        g = get_default_graph()
        with g.name_scope(name or "TensorArray") as scope:
            size_t = convert_to_tensor(size, dtypes.int32, name="size") if not isinstance(
                size, Tensor) else size
            self._size = size_t
            if not isinstance(size, Tensor):
                self._static_size = size
            es = self._element_shape[0]
            self._handle, self._flow = apply_op(
                "TensorArrayV3", size=size_t, dtype=self._dtype,
                element_shape=es.as_tuple() if es.ndims is not None else None,
                identical_element_shapes=self._infer_shape,
                dynamic_size=self._dynamic_size,
                clear_after_read=True if clear_after_read is None else bool(clear_after_read),
                tensor_array_name=tensor_array_name or "", name=scope,
            )

    # --- properties -------------------------------------------------------------------
    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def handle(self) -> Tensor:
        return self._handle

    @property
    def flow(self) -> Tensor:
        return self._flow

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic_size

    @property
    def element_shape(self) -> TensorShape:
        return self._element_shape[0]

    def __repr__(self) -> str:
        return f"<TensorArray {self._handle.op.name} dtype={self._dtype.name}>"

    # --- helpers ------------------------------------------------------------------------
    def _with_flow(self, flow: Tensor) -> TensorArray:
        ta = TensorArray(self._dtype, handle=self._handle, flow=flow,
                         infer_shape=self._infer_shape)
        ta._dynamic_size = self._dynamic_size
        ta._size = self._size
        ta._static_size = self._static_size
        ta._element_shape = self._element_shape
        return ta

    def _check_element_shape(self, shape: TensorShape) -> None:
        if not shape.is_compatible_with(self.element_shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected {self.element_shape} ")
        if self._infer_shape:
            self._element_shape[0] = self.element_shape.merge_with(shape)

    def _value(self, value: Any) -> Tensor:
        # A value of another dtype is accepted here, as TensorFlow only logs it; the
        # kernel refuses it when the step runs.
        return convert_to_tensor(value, preferred_dtype=self._dtype, name="value")

    # --- ops ----------------------------------------------------------------------------
    def identity(self) -> TensorArray:
        """The same array with a flow that runs after the control dependencies in scope."""
        return self._with_flow(identity(self._flow))

    def grad(self, source: str, flow: Any = None, name: str | None = None) -> TensorArray:
        """The gradient TensorArray of this one for the gradient scope `source`."""
        flow = self._flow if flow is None else flow
        g = get_default_graph()
        with g.name_scope(name or "TensorArrayGrad"):
            g_handle, _ = apply_op("TensorArrayGradV3", handle=self._handle, flow_in=flow,
                                   source=source, name="TensorArrayGradV3")
            with g.control_dependencies([g_handle]):
                flow = identity(flow, name="gradient_flow")
        ta = TensorArray(self._dtype, handle=g_handle, flow=flow, infer_shape=self._infer_shape)
        ta._element_shape = [self.element_shape]
        return ta

    def read(self, index: Any, name: str | None = None) -> Tensor:
        """The element at `index` (int32 scalar)."""
        value = apply_op("TensorArrayReadV3", handle=self._handle, index=_int32(index),
                         flow_in=self._flow, dtype=self._dtype, name=name or "TensorArrayReadV3")
        if self.element_shape.ndims is not None:
            value.set_shape(self.element_shape)
        return value

    def write(self, index: Any, value: Any, name: str | None = None) -> TensorArray:
        """A TensorArray with `value` written at `index`.

        Raises:
          ValueError: the value's shape contradicts the element shape (infer_shape).
        """
        with get_default_graph().name_scope(name or "TensorArrayWrite"):
            v = self._value(value)
            self._check_element_shape(v.shape)
            flow = apply_op("TensorArrayWriteV3", handle=self._handle, index=_int32(index),
                            value=v, flow_in=self._flow, name="TensorArrayWriteV3")
        return self._with_flow(flow)

    def gather(self, indices: Any, name: str | None = None) -> Tensor:
        """The elements at `indices`, stacked along a new first dimension."""
        es = self.element_shape
        value = apply_op("TensorArrayGatherV3", handle=self._handle, indices=_int32(indices),
                         flow_in=self._flow, dtype=self._dtype,
                         element_shape=es.as_tuple() if es.ndims is not None else None,
                         name=name or "TensorArrayGatherV3")
        if es.ndims is not None:
            value.set_shape(TensorShape([None]).concatenate(es))
        return value

    def stack(self, name: str | None = None) -> Tensor:
        """All elements stacked: shape [size] + element shape."""
        with get_default_graph().name_scope(name or "TensorArrayStack"):
            value = self.gather(math_ops.range(0, self.size()))
            if self.element_shape.ndims is not None and not self._dynamic_size and self._size is not None:
                n = constant_value(self._size)
                value.set_shape(TensorShape([None if n is None else int(n)]).concatenate(self.element_shape))
        return value

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> TensorArray:
        """A TensorArray with `value[i]` written at `indices[i]`."""
        with get_default_graph().name_scope(name or "TensorArrayScatter"):
            v = self._value(value)
            if v.shape.ndims is not None:
                self._check_element_shape(v.shape[1:])
            flow = apply_op("TensorArrayScatterV3", handle=self._handle, indices=_int32(indices),
                            value=v, flow_in=self._flow, name="TensorArrayScatterV3")
        return self._with_flow(flow)

    def unstack(self, value: Any, name: str | None = None) -> TensorArray:
        """A TensorArray whose element i is `value[i]`."""
        from flowlab.ops.array_ops import shape as _shape

        with get_default_graph().name_scope(name or "TensorArrayUnstack"):
            v = self._value(value)
            num = _shape(v)[0]
            return self.scatter(math_ops.range(0, num), v)

    def concat(self, name: str | None = None) -> Tensor:
        """All elements concatenated along their first dimension."""
        es = self.element_shape
        except0 = es[1:] if es.ndims is not None and es.ndims >= 1 else TensorShape(None)
        value, _ = apply_op("TensorArrayConcatV3", handle=self._handle, flow_in=self._flow,
                            dtype=self._dtype,
                            element_shape_except0=except0.as_tuple() if except0.ndims is not None else None,
                            name=name or "TensorArrayConcatV3")
        if es.ndims is not None:
            value.set_shape(TensorShape([None]).concatenate(except0))
        return value

    def split(self, value: Any, lengths: Any, name: str | None = None) -> TensorArray:
        """A TensorArray whose elements are `value` split into pieces of `lengths` rows."""
        with get_default_graph().name_scope(name or "TensorArraySplit"):
            v = self._value(value)
            lengths_64 = math_ops.cast(lengths, dtypes.int64)
            if self._infer_shape and v.shape.ndims is not None:
                cl = constant_value(lengths_64)
                if cl is not None and cl.ndim == 1 and cl.size and (cl == cl[0]).all():
                    self._check_element_shape(TensorShape([int(cl[0])]).concatenate(v.shape[1:]))
            flow = apply_op("TensorArraySplitV3", handle=self._handle, value=v, lengths=lengths_64,
                            flow_in=self._flow, name="TensorArraySplitV3")
        return self._with_flow(flow)

    def size(self, name: str | None = None) -> Tensor:
        """The number of elements (int32 scalar)."""
        if not self._dynamic_size and self._size is not None:
            if self._static_size is not None:
                return convert_to_tensor(self._static_size, dtypes.int32)
            return self._size
        return apply_op("TensorArraySizeV3", handle=self._handle, flow_in=self._flow,
                        name=name or "TensorArraySizeV3")

    def close(self, name: str | None = None) -> Operation:
        """An op that releases the array."""
        return apply_op("TensorArrayCloseV3", handle=self._handle, name=name or "TensorArrayCloseV3")


def _int32(x: Any) -> Any:
    # A Python index is converted by the op itself, in its scope (`TensorArrayReadV3/index`).
    return x


def tensor_array_to_flow(value: Any) -> Any:
    """`value`'s flow when it is a TensorArray, else `value` (for loop variables)."""
    return value.flow if isinstance(value, TensorArray) else value


def tensor_array_from_flow(template: Any, flow: Any) -> Any:
    """A TensorArray like `template` carrying `flow`, or `flow` when `template` is not
    a TensorArray (loop variables after Enter/Merge/NextIteration)."""
    if isinstance(template, TensorArray):
        return template._with_flow(flow)
    return flow
