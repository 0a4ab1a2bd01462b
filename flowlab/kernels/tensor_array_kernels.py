"""Kernels of the TensorArray ops: the array itself is the value of its handle.

`TensorArrayV3` creates a `TensorArrayState` and outputs it as the handle's value, so
the array lives exactly as long as the step that made it (TensorFlow keeps it in a
per-step resource container) and reaches every op that takes the handle, including
through the Enter of a loop.  The flow outputs are float32 zeros.

State and invariants: `elements[i]` is None (never written), the stored array, or
CLEARED (read with clear_after_read).  An element is written once, except in a
gradient array, where writes add up (`aggregate`).  A gradient array reads an
unwritten element as zeros of the element's shape, which it copies from the forward
array when it is created.  A lock guards the state: iterations of a loop may write
concurrently.  Stored arrays are never mutated (aggregation makes a new one).

The error messages are TensorFlow's.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.graph import dtypes
from flowlab.kernels.registry import kernel

CLEARED = object()
_FLOW = np.float32(0.0)


def _shape_str(shape: Any) -> str:
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _compatible(a: tuple[Any, ...] | None, b: tuple[Any, ...] | None) -> bool:
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


class TensorArrayState:
    """One TensorArray of one step (the runtime value of its handle)."""

    def __init__(self, name: str, dtype: Any, size: int, element_shape: Any, dynamic_size: bool,
                 clear_after_read: bool, identical_shapes: bool, is_grad: bool = False) -> None:
        self.name = name
        self.dtype = np.dtype(dtype)
        self.elements: list[Any] = [None] * size
        # Per-element shapes known without a value (copied into gradient arrays).
        self.shapes: list[Any] = [None] * size
        self.element_shape = None if element_shape is None else tuple(element_shape)
        self.dynamic_size = dynamic_size
        self.clear_after_read = clear_after_read
        self.identical_shapes = identical_shapes
        self.is_grad = is_grad
        self.closed = False
        self.grads: dict[str, TensorArrayState] = {}
        self.lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<TensorArrayState {self.name} size={len(self.elements)}>"

    # --- checks -------------------------------------------------------------------------
    def check_open(self) -> None:
        if self.closed:
            raise errors.InvalidArgumentError(
                None, None, f"TensorArray {self.name} has already been closed.")

    def check_dtype(self, value: Any) -> None:
        dt = value.dtype if hasattr(value, "dtype") else np.asarray(value).dtype
        if dt != self.dtype:
            raise errors.InvalidArgumentError(
                None, None,
                f"TensorArray dtype is {dtypes.as_dtype(self.dtype).name} but Op is trying to "
                f"write dtype {dtypes.as_dtype(dt).name}.")

    # --- element access (callers hold the lock) -----------------------------------------
    def write(self, index: int, value: Any) -> None:
        n = len(self.elements)
        if index < 0:
            raise errors.InvalidArgumentError(
                None, None, f"Tried to write to index {index} but array size is: {n}")
        if index >= n:
            if not self.dynamic_size:
                raise errors.InvalidArgumentError(
                    None, None,
                    f"TensorArray {self.name}: Tried to write to index {index} but array is not "
                    f"resizeable and size is: {n}")
            grow = index + 1 - n
            self.elements.extend([None] * grow)
            self.shapes.extend([None] * grow)
        shape = tuple(np.shape(value))
        if self.identical_shapes or self.element_shape is not None:
            if not _compatible(shape, self.element_shape):
                raise errors.InvalidArgumentError(
                    None, None,
                    f"Could not write to TensorArray index {index} because the value shape is "
                    f"{_shape_str(shape)} which is incompatible with the TensorArray's inferred "
                    f"element shape: {_shape_str(self.element_shape)} (consider setting "
                    "infer_shape=False).")
            if self.identical_shapes:
                self.element_shape = shape
        old = self.elements[index]
        if old is CLEARED:
            raise errors.InvalidArgumentError(
                None, None,
                f"Could not write to TensorArray index {index} because it has already been read "
                "and cleared.")
        if old is not None:
            if not self.is_grad:
                raise errors.InvalidArgumentError(
                    None, None,
                    f"TensorArray {self.name}: Could not write to TensorArray index {index} "
                    "because it has already been written to.")
            if np.shape(old) != shape:
                raise errors.InvalidArgumentError(
                    None, None,
                    f"Could not aggregate to TensorArray index {index} because the existing shape "
                    f"is {_shape_str(np.shape(old))} but the new input shape is {_shape_str(shape)}")
            value = old + value  # a new array: the stored one is never mutated
        self.elements[index] = value
        self.shapes[index] = shape

    def read(self, index: int, xp: Any) -> Any:
        n = len(self.elements)
        if index < 0 or index >= n:
            raise errors.InvalidArgumentError(
                None, None, f"Tried to read from index {index} but array size is: {n}")
        v = self.elements[index]
        if v is CLEARED:
            raise errors.InvalidArgumentError(
                None, None,
                f"TensorArray {self.name}: Could not read index {index} twice because it was "
                "cleared after a previous read (perhaps try setting clear_after_read = false?).")
        if v is None:
            # An unwritten element of known shape reads as zeros (TensorFlow's rule, which
            # gradient arrays rely on when a forward element received no gradient).
            shape = self.shapes[index]
            if shape is None and self.element_shape is not None and None not in self.element_shape:
                shape = self.element_shape
            if shape is not None:
                return xp.zeros(shape, self.dtype)
            raise errors.InvalidArgumentError(
                None, None,
                f"TensorArray {self.name}: Could not read from TensorArray index {index}.  "
                f"Furthermore, the element shape is not fully defined: "
                f"{_shape_str(self.element_shape)}.  It is possible you are working with a "
                "resizeable TensorArray and stop_gradients is not allowing the gradients to "
                "be written.  If you set the full element_shape property on the forward "
                "TensorArray, the proper all-zeros tensor will be returned instead of "
                "incurring this error.")
        if self.clear_after_read and not self.is_grad:
            self.elements[index] = CLEARED
        return v

    def make_grad(self, source: str) -> TensorArrayState:
        g = self.grads.get(source)
        if g is None:
            g = TensorArrayState(f"{self.name}@{source}", self.dtype, len(self.elements),
                                 self.element_shape, False, False, self.identical_shapes, True)
            g.shapes = list(self.shapes)
            self.grads[source] = g
        return g


def _index(x: Any) -> int:
    return int(x)


def _host_ints(x: Any) -> list[int]:
    """Indices or lengths as Python ints (a CuPy array is copied to the host)."""
    if hasattr(x, "get") and not isinstance(x, (np.ndarray, np.generic)):
        x = x.get()
    return [int(i) for i in np.asarray(x).reshape(-1)]


@kernel("TensorArrayV3", host_memory=("size", "handle"))
def tensor_array(ctx: Any, size: Any) -> Any:
    a = ctx.attrs
    n = int(size)
    if n < 0:
        raise errors.InvalidArgumentError(None, None, f"Size should be >= 0, got: {n}")
    state = TensorArrayState(
        a["tensor_array_name"] or ctx.name, a["dtype"].as_numpy_dtype, n, a["element_shape"],
        a["dynamic_size"], a["clear_after_read"], a["identical_element_shapes"])
    return state, _FLOW


@kernel("TensorArrayGradV3", host_memory=("handle", "grad_handle"))
def tensor_array_grad(ctx: Any, ta: TensorArrayState, flow: Any) -> Any:
    with ta.lock:
        ta.check_open()
        return ta.make_grad(ctx.attrs["source"]), _FLOW


@kernel("TensorArrayWriteV3", host_memory=("handle", "index"))
def tensor_array_write(ctx: Any, ta: TensorArrayState, index: Any, value: Any, flow: Any) -> Any:
    ta.check_dtype(value)
    with ta.lock:
        ta.check_open()
        ta.write(_index(index), value)
    return flow


@kernel("TensorArrayReadV3", host_memory=("handle", "index"))
def tensor_array_read(ctx: Any, ta: TensorArrayState, index: Any, flow: Any) -> Any:
    with ta.lock:
        ta.check_open()
        return ta.read(_index(index), ctx.xp)


def _stack(ctx: Any, ta: TensorArrayState, values: list[Any], empty_shape: Any, what: str) -> Any:
    xp = ctx.xp
    if not values:
        if empty_shape is None or None in empty_shape:
            raise errors.UnimplementedError(
                None, None,
                f"TensorArray has size zero, but element shape {_shape_str(empty_shape)} is not "
                f"fully defined. Currently only static shapes are supported when {what} "
                "zero-size TensorArrays.")
        return xp.zeros((0, *empty_shape), ta.dtype)
    first = np.shape(values[0])
    for i, v in enumerate(values[1:], 1):
        if np.shape(v) != first:
            raise errors.InvalidArgumentError(
                None, None,
                f"TensorArray has inconsistent shapes.  Index 0 has shape: {_shape_str(first)} but "
                f"index {i} has shape: {_shape_str(np.shape(v))}")
    return xp.stack([xp.asarray(v) for v in values]).astype(ta.dtype, copy=False)


@kernel("TensorArrayGatherV3", host_memory=("handle", "indices"))
def tensor_array_gather(ctx: Any, ta: TensorArrayState, indices: Any, flow: Any) -> Any:
    idx = _host_ints(indices)
    with ta.lock:
        ta.check_open()
        values = [ta.read(i, ctx.xp) for i in idx]
        es = ctx.attrs["element_shape"]
        es = ta.element_shape if es is None or None in es else tuple(es)
    return _stack(ctx, ta, values, es, "packing")


@kernel("TensorArrayScatterV3", host_memory=("handle", "indices"))
def tensor_array_scatter(ctx: Any, ta: TensorArrayState, indices: Any, value: Any, flow: Any) -> Any:
    ta.check_dtype(value)
    idx = _host_ints(indices)
    if np.ndim(value) < 1 or np.shape(value)[0] != len(idx):
        raise errors.InvalidArgumentError(
            None, None,
            f"Expected len(indices) == values.shape[0], but saw: {len(idx)} vs. "
            f"{np.shape(value)[0] if np.ndim(value) else 0}")
    arr = ctx.xp.asarray(value)
    with ta.lock:
        ta.check_open()
        if idx and not ta.dynamic_size and max(idx) >= len(ta.elements):
            raise errors.InvalidArgumentError(
                None, None,
                f"Max scatter index must be < array size ({max(idx)} vs. {len(ta.elements)})")
        for k, i in enumerate(idx):
            ta.write(i, arr[k])
    return flow


@kernel("TensorArrayConcatV3", host_memory=("handle", "lengths"))
def tensor_array_concat(ctx: Any, ta: TensorArrayState, flow: Any) -> Any:
    xp = ctx.xp
    with ta.lock:
        ta.check_open()
        values = [ta.read(i, xp) for i in range(len(ta.elements))]
    for i, v in enumerate(values):
        if np.ndim(v) == 0:
            raise errors.InvalidArgumentError(
                None, None,
                f"Concat saw a scalar shape at index {i} but requires at least vectors.  Did you "
                "mean to call stack?")
    lengths = np.array([np.shape(v)[0] for v in values], np.int64)
    if not values:
        except0 = ctx.attrs["element_shape_except0"]
        if except0 is None or None in except0:
            raise errors.UnimplementedError(
                None, None,
                f"TensorArray has size zero, but element_shape_except0 {_shape_str(except0)} is "
                "not fully defined. Currently only static shapes are supported when "
                "concatenating zero-size TensorArrays.")
        return xp.zeros((0, *except0), ta.dtype), lengths
    rest = np.shape(values[0])[1:]
    for i, v in enumerate(values[1:], 1):
        if np.shape(v)[1:] != rest:
            raise errors.InvalidArgumentError(
                None, None,
                f"TensorArray has inconsistent shapes.  Index 0 has shape: "
                f"{_shape_str(np.shape(values[0]))} but index {i} has shape: "
                f"{_shape_str(np.shape(v))}")
    return xp.concatenate([xp.asarray(v) for v in values]).astype(ta.dtype, copy=False), lengths


@kernel("TensorArraySplitV3", host_memory=("handle", "lengths"))
def tensor_array_split(ctx: Any, ta: TensorArrayState, value: Any, lengths: Any, flow: Any) -> Any:
    ta.check_dtype(value)
    lens = _host_ints(lengths)
    if np.ndim(value) < 1:
        raise errors.InvalidArgumentError(
            None, None, f"Expected value to be at least a vector, but received shape: "
            f"{_shape_str(np.shape(value))}")
    if sum(lens) != np.shape(value)[0]:
        raise errors.InvalidArgumentError(
            None, None,
            f"Expected sum of lengths to be equal to values.shape[0], but sum of lengths is "
            f"{sum(lens)} and value's shape is: {_shape_str(np.shape(value))}")
    arr = ctx.xp.asarray(value)
    with ta.lock:
        ta.check_open()
        if not ta.dynamic_size and len(lens) != len(ta.elements):
            raise errors.InvalidArgumentError(
                None, None,
                f"TensorArray's size is not equal to the size of lengths ({len(lens)} vs. "
                f"{len(ta.elements)}), and the TensorArray is not marked as dynamically resizeable")
        start = 0
        for i, n in enumerate(lens):
            ta.write(i, arr[start:start + n])
            start += n
    return flow


@kernel("TensorArraySizeV3", host_memory=("handle", "size"))
def tensor_array_size(ctx: Any, ta: TensorArrayState, flow: Any) -> Any:
    with ta.lock:
        ta.check_open()
        return np.int32(len(ta.elements))


@kernel("TensorArrayCloseV3", host_memory=("handle",))
def tensor_array_close(ctx: Any, ta: TensorArrayState) -> None:
    with ta.lock:
        ta.closed = True
        ta.elements = [None] * len(ta.elements)
