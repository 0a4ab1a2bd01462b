"""Conditional accumulators: the state behind `tf.ConditionalAccumulator` and
`tf.SparseConditionalAccumulator`, and the kernels of their ops
(flowlab.ops.accumulator_ops).

An accumulator lives in its device's resource manager under (container, shared_name
or op name), as queues do.  It holds a global step, a counter of the gradients
accumulated since the last take, their running sum, and a FIFO list of parked take
attempts.  All state is guarded by `lock`; no thread ever waits here.

- apply: a gradient whose local step is older than the global step is dropped
  silently, before any validation (as TensorFlow does); otherwise it is validated
  against the declared shape (and against the running sum's shape when there is one)
  and added; then parked takes that can finish do.
- take(num_required): once `counter >= num_required`, the sum (divided by the counter
  for MEAN; for the sparse accumulator each slice by the number of gradients that
  touched it) is the output, the counter resets and the global step increments.  A
  take that cannot finish parks with its `done` callback, registered with the step's
  cancellation manager (timeout, Session.close, another op failing).
- set_global_step: sets it, lower values included.

The sparse running sum merges each new gradient into the accumulated indices with
TensorFlow's two-pointer walk (it assumes both lists ascend, keeps duplicates of a
gradient as separate entries), so the order of the output indices is TensorFlow's.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import CPU, kernel

_ids = itertools.count()

# TensorFlow registers the accumulator kernels for these dtypes only.
_KERNEL_DTYPES = {np.dtype(np.float16): "DT_HALF", np.dtype(np.float32): "DT_FLOAT",
                  np.dtype(np.float64): "DT_DOUBLE"}


def _dims(shape: Any) -> str:
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None or d < 0 else str(d) for d in shape) + "]"


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


class _Take:
    __slots__ = ("done", "n", "token", "cancellation", "finished")

    def __init__(self, done: Callable[..., None], n: int) -> None:
        self.done = done
        self.n = n
        self.token: int | None = None
        self.cancellation: Any = None
        self.finished = False


class AccumulatorBase:
    """Global step, counter, parked takes; subclasses hold the running sum."""

    kind = "ConditionalAccumulator"

    def __init__(self, op_name: str, dtype: Any, shape: tuple[int | None, ...] | None,
                 reduction_type: str) -> None:
        self.name = f"_{next(_ids)}_{op_name}"
        self.dtype = np.dtype(dtype)
        self.shape = shape
        self.reduction_type = reduction_type
        self.lock = threading.Lock()
        self.global_step = 0
        self.counter = 0
        self._takes: deque[_Take] = deque()

    # A fetched string_ref handle reads as TensorFlow's two-element handle vector.
    def read(self) -> Any:
        return np.array([b"_", self.name.encode()], dtype=object)

    # --- subclasses --------------------------------------------------------------------
    def _validate(self, grad: Any) -> None:
        raise NotImplementedError

    def _start(self, grad: Any) -> None:
        raise NotImplementedError

    def _add(self, grad: Any) -> None:
        raise NotImplementedError

    def _result(self) -> Any:
        raise NotImplementedError

    # --- operations --------------------------------------------------------------------
    def apply(self, local_step: int, grad: Any) -> None:
        """Add `grad` unless it is stale; raises InvalidArgumentError for a bad one."""
        try:
            with self.lock:
                if local_step >= self.global_step:
                    self._validate(grad)
                    if self.counter > 0:
                        self._add(grad)
                    else:
                        self._start(grad)
                    self.counter += 1
        finally:
            self._flush()

    def num_accumulated(self) -> int:
        with self.lock:
            return self.counter

    def set_global_step(self, step: int) -> None:
        with self.lock:
            self.global_step = step

    def take(self, n: int, step: Any, done: Callable[..., None]) -> None:
        if n < 1:
            raise _invalid(f"Argument num_required must be positive, but was {n}")
        a = _Take(done, n)
        cm = step.get_cancellation() if step is not None else None
        if cm is not None:
            a.cancellation = cm
            a.token = cm.register(lambda: self._cancel(a))
            if a.token is None:
                a.finished = True
                done(error=errors.CancelledError(None, None, "TakeGrad operation was cancelled"))
                return
        with self.lock:
            if a.finished:
                return
            self._takes.append(a)
        self._flush()

    def _cancel(self, a: _Take) -> None:
        with self.lock:
            if a.finished:
                return
            a.finished = True
            try:
                self._takes.remove(a)
            except ValueError:
                pass
        a.done(error=errors.CancelledError(None, None, "TakeGrad operation was cancelled"))
        self._flush()

    def _flush(self) -> None:
        finished: list[tuple[_Take, Any, Any]] = []
        with self.lock:
            while self._takes and self.counter >= self._takes[0].n:
                a = self._takes.popleft()
                a.finished = True
                self.global_step += 1
                try:
                    value, err = self._result(), None
                except errors.OpError as e:
                    value, err = None, e
                self.counter = 0
                finished.append((a, value, err))
        for a, value, err in finished:
            if a.cancellation is not None:
                a.cancellation.deregister(a.token)
            if err is not None:
                a.done(error=err)
            else:
                a.done(value)


class DenseAccumulator(AccumulatorBase):
    kind = "ConditionalAccumulator"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._sum: Any = None

    def _validate(self, grad: Any) -> None:
        got = tuple(np.shape(grad))
        if self.counter > 0 and tuple(self._sum.shape) != got:
            raise _invalid(f"Shape mismatch: expected {_dims(self._sum.shape)}, got {_dims(got)}")
        s = self.shape
        if s is not None and (len(s) != len(got) or any(d is not None and d != g for d, g in zip(s, got))):
            raise _invalid(f"Shape mismatch: expected {_dims(s)}, got {_dims(got)}")

    def _start(self, grad: Any) -> None:
        self._sum = np.array(grad, dtype=self.dtype, copy=True)

    def _add(self, grad: Any) -> None:
        self._sum = (self._sum + np.asarray(grad, dtype=self.dtype)).astype(self.dtype, copy=False)

    def _result(self) -> Any:
        out = self._sum
        self._sum = None
        if self.reduction_type == "MEAN":
            out = (out / self.dtype.type(self.counter)).astype(self.dtype, copy=False)
        return np.asarray(out, dtype=self.dtype)


class SparseAccumulator(AccumulatorBase):
    kind = "SparseConditionalAccumulator"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._idx: list[int] = []
        self._val: Any = None
        self._count: list[int] = []

    def _validate(self, grad: Any) -> None:
        idx, val, shape = grad
        if np.ndim(idx) != 1:
            raise _invalid(f"Input indices should be vector but received shape: {_dims(np.shape(idx))}")
        if np.ndim(val) == 0:
            raise _invalid("Values cannot be 0-dimensional.")
        nnz = np.shape(idx)[0]
        if np.shape(val)[0] != nnz:
            raise _invalid(f"Expected {nnz} non-empty input values, got {np.shape(val)[0]}")
        s = self.shape
        rank = -1 if s is None else len(s)
        if shape is not None:
            given = [int(d) for d in np.reshape(shape, [-1])]
            if rank > len(given):
                raise _invalid(f"Shape mismatch: expected shape rank at least {rank}, got {len(given)}")
            for i in range(max(rank, 0)):
                if s[i] is not None and s[i] != given[i]:
                    raise _invalid(f"Shape mismatch: expected shape dim {i} to be {s[i]}, got {given[i]}")
        if rank > 0 and s[0] is not None and nnz:
            over = np.nonzero(np.asarray(idx) >= s[0])[0]
            if over.size:
                i = int(over[0])
                raise _invalid(
                    f"Shape mismatch: index of slice {i} exceeded limits of shape; index is "
                    f"{int(idx[i])} exceeded {s[0]}")
        vshape = np.shape(val)
        if self.counter > 0:
            ashape = self._val.shape
            if len(ashape) != len(vshape):
                raise _invalid(f"Shape mismatch: expected values rank {len(ashape)}, got {len(vshape)}")
            for i in range(1, len(ashape)):
                if ashape[i] != vshape[i]:
                    raise _invalid(f"Shape mismatch: expected values dim {i} to be {ashape[i]}, got {vshape[i]}")
        else:
            if rank > len(vshape):
                raise _invalid(f"Shape mismatch: expected values rank at least {rank}, got {len(vshape)}")
            for i in range(1, max(rank, 0)):
                if s[i] is not None and s[i] != vshape[i]:
                    raise _invalid(f"Shape mismatch: expected values dim {i} to be {s[i]}, got {vshape[i]}")

    def _start(self, grad: Any) -> None:
        idx, val, _ = grad
        self._idx = [int(i) for i in np.asarray(idx).tolist()]
        self._val = np.array(val, dtype=self.dtype, copy=True)
        self._count = [1] * len(self._idx)

    def _add(self, grad: Any) -> None:
        gidx = [int(i) for i in np.asarray(grad[0]).tolist()]
        gval = np.asarray(grad[1], dtype=self.dtype)
        aidx, acount = self._idx, self._count
        # Walk both index lists as if both ascended: each output row comes from the
        # sum, the accumulated rows (src_a >= 0) and/or the gradient's (src_g >= 0).
        out_idx: list[int] = []
        src_a: list[int] = []
        src_g: list[int] = []
        counts: list[int] = []
        i = j = 0
        na, ng = len(aidx), len(gidx)
        while i < na and j < ng:
            if aidx[i] < gidx[j]:
                out_idx.append(aidx[i]); src_a.append(i); src_g.append(-1); counts.append(acount[i])  # noqa: E702
                i += 1
            elif aidx[i] == gidx[j]:
                out_idx.append(aidx[i]); src_a.append(i); src_g.append(j); counts.append(acount[i] + 1)  # noqa: E702
                i += 1
                j += 1
            else:
                out_idx.append(gidx[j]); src_a.append(-1); src_g.append(j); counts.append(1)  # noqa: E702
                j += 1
        for k in range(i, na):
            out_idx.append(aidx[k]); src_a.append(k); src_g.append(-1); counts.append(acount[k])  # noqa: E702
        for k in range(j, ng):
            out_idx.append(gidx[k]); src_a.append(-1); src_g.append(k); counts.append(1)  # noqa: E702
        sa, sg = np.asarray(src_a, dtype=np.int64), np.asarray(src_g, dtype=np.int64)
        vals = np.zeros((len(out_idx), *self._val.shape[1:]), dtype=self.dtype)
        ha, hg = sa >= 0, sg >= 0
        vals[ha] = self._val[sa[ha]]
        vals[hg] = (vals[hg] + gval[sg[hg]]).astype(self.dtype, copy=False)
        self._idx, self._val, self._count = out_idx, vals, counts

    def _result(self) -> Any:
        vals = self._val
        if self.reduction_type == "MEAN" and len(self._count):
            c = np.asarray(self._count).astype(self.dtype).reshape((-1,) + (1,) * (vals.ndim - 1))
            vals = (vals / c).astype(self.dtype, copy=False)
        s = self.shape
        shape = np.empty([vals.ndim], dtype=np.int64)
        shape[0] = s[0] if s and s[0] is not None else -1
        shape[1:] = vals.shape[1:]
        idx = np.asarray(self._idx, dtype=np.int64)
        self._idx, self._val, self._count = [], None, []
        return [idx, np.asarray(vals, dtype=self.dtype), shape]


# --- kernels ---------------------------------------------------------------------------
def _lookup(ctx: Any, cls: type) -> AccumulatorBase:
    a = ctx.attrs
    dt = np.dtype(a["dtype"].as_numpy_dtype)
    if dt not in _KERNEL_DTYPES:
        t = a["dtype"].name
        raise _invalid(
            f"No OpKernel was registered to support Op '{ctx.op_type}' used by {{{{node {ctx.name}}}}} "
            f"with these attrs: [dtype=DT_{t.upper()}, reduction_type=\"{a['reduction_type']}\"]\n"
            "Registered kernels:\n  device='CPU'; dtype in [DT_DOUBLE]\n  device='CPU'; dtype in [DT_FLOAT]\n"
            "  device='CPU'; dtype in [DT_HALF]")
    key = a["shared_name"] or ctx.name
    acc = ctx.resources.get(a["container"], key)
    if acc is None:
        shape = a["shape"]
        shape = None if shape is None else tuple(shape)

        def make() -> AccumulatorBase:
            return cls(ctx.name, dt, shape, a["reduction_type"])

        acc = ctx.resources.lookup_or_create(a["container"], key, make)
    return acc


def _scalar_step(x: Any) -> int:
    return int(np.asarray(x).reshape(-1)[0]) if np.size(x) else 0


@kernel("ResourceConditionalAccumulator", devices=CPU)
def resource_conditional_accumulator(ctx: Any) -> AccumulatorBase:
    return _lookup(ctx, DenseAccumulator)


@kernel("ConditionalAccumulator", devices=CPU)
def conditional_accumulator(ctx: Any) -> AccumulatorBase:
    return _lookup(ctx, DenseAccumulator)


@kernel("SparseConditionalAccumulator", devices=CPU)
def sparse_conditional_accumulator(ctx: Any) -> AccumulatorBase:
    return _lookup(ctx, SparseAccumulator)


def _check_dtype(acc: AccumulatorBase, dtype: Any) -> None:
    if np.dtype(dtype.as_numpy_dtype) != acc.dtype:
        raise _invalid(
            f"Gradient dtype {dtype.name} does not match the accumulator's {np.dtype(acc.dtype).name}")


def _apply_dense(ctx: Any, acc: AccumulatorBase, local_step: Any, gradient: Any) -> None:
    _check_dtype(acc, ctx.attrs["dtype"])
    acc.apply(_scalar_step(local_step), gradient)


def _num(ctx: Any, acc: AccumulatorBase) -> Any:
    return np.int32(acc.num_accumulated())


def _set_step(ctx: Any, acc: AccumulatorBase, new_global_step: Any) -> None:
    acc.set_global_step(_scalar_step(new_global_step))


def _take(ctx: Any, step: Any, done: Any, acc: AccumulatorBase, num_required: Any) -> None:
    _check_dtype(acc, ctx.attrs["dtype"])
    acc.take(int(np.asarray(num_required).reshape(-1)[0]), step, done)


for _prefix in ("Resource", ""):
    kernel(f"{_prefix}AccumulatorApplyGradient", devices=CPU)(_apply_dense)
    kernel(f"{_prefix}AccumulatorNumAccumulated", devices=CPU)(_num)
    kernel(f"{_prefix}AccumulatorSetGlobalStep", devices=CPU)(_set_step)
    kernel(f"{_prefix}AccumulatorTakeGradient", devices=CPU, asynchronous=True,
           host_memory=("num_required",))(_take)


@kernel("SparseAccumulatorApplyGradient", devices=CPU)
def sparse_accumulator_apply_gradient(ctx: Any, acc: AccumulatorBase, local_step: Any, indices: Any,
                                      values: Any, shape: Any) -> None:
    _check_dtype(acc, ctx.attrs["dtype"])
    acc.apply(_scalar_step(local_step), (indices, values, shape if ctx.attrs["has_known_shape"] else None))


@kernel("SparseAccumulatorTakeGradient", devices=CPU, asynchronous=True, host_memory=("num_required",))
def sparse_accumulator_take_gradient(ctx: Any, step: Any, done: Any, acc: AccumulatorBase,
                                     num_required: Any) -> None:
    _take(ctx, step, done, acc, num_required)
