"""Cost model: estimated compute and transfer times, for greedy placement (white paper
section 3.2.1, "Cost Model").

The white paper's placer simulates a step: it estimates each node's compute time on
each candidate device and the time to bring its inputs over, from static shapes or
from measured step statistics.  Here:

* compute(op, device) = per-op overhead + max(FLOPs / FLOP rate, bytes touched /
  memory bandwidth), divided by the device's relative speed.  FLOPs are counted for
  the ops that are compute-bound (MatMul, BatchMatMulV2, Conv2D and its two
  backprops: 2 * multiply-adds); every other op is memory-bound (bytes of its inputs
  and outputs).  Unknown dimensions count as `unknown_dim` elements.
* transfer(bytes, src, dst) = 0 on the same device, else latency + bytes / bandwidth.
* a device's first op in a step starts no earlier than `device_startup` (another
  partition: its executor, Send/Recv bookkeeping), so that cheap independent work
  stays on one device and only work that pays for it spreads.
* measured times (seconds per op name, e.g. from a traced step's `step_stats`, see
  `CostModel.record_step_stats`) replace the estimate of that op when present.

The numbers are parameters, not truths: defaults describe one CPU core running
NumPy (about 20 GFLOP/s for a large float32 matmul, 10 GB/s memory traffic, 2 us
of Python per kernel) and a local Send/Recv (20 us, 10 GB/s).  `simulate` replays a
whole placement on the model (the predicted step time the benchmarks quote).
Nothing here reads or changes an Operation beyond its static attrs and shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flowlab.graph.tensor import Operation, Tensor
from flowlab.runtime.task.plan import own_inputs

# Ops that cost only the per-op overhead (no data moves, or the value already exists).
_FREE_OPS = frozenset({
    "Const", "NoOp", "Placeholder", "PlaceholderWithDefault", "VariableV2", "Identity",
    "StopGradient", "Shape", "Size", "Rank", "ShapeN", "Reshape", "ExpandDims", "Squeeze",
})


@dataclass
class CostModel:
    """Parameters of the estimate; all times in seconds, rates per second.

    `flops_per_second` and `memory_bandwidth` are per device type; `device_speed`
    multiplies a device's rates by name (e.g. {"/job:localhost/replica:0/task:0/
    device:CPU:1": 0.5} for a device half as fast).  `measured` maps op names to a
    measured compute time that wins over the estimate.
    """

    flops_per_second: dict[str, float] = field(default_factory=lambda: {"CPU": 2e10, "GPU": 5e12})
    memory_bandwidth: dict[str, float] = field(default_factory=lambda: {"CPU": 1e10, "GPU": 5e11})
    op_overhead: float = 2e-6
    transfer_latency: float = 2e-5
    transfer_bandwidth: float = 1e10
    device_startup: float = 5e-5
    unknown_dim: int = 32
    device_speed: dict[str, float] = field(default_factory=dict)
    measured: dict[str, float] = field(default_factory=dict)

    # --- sizes ------------------------------------------------------------------
    def num_elements(self, t: Tensor) -> int:
        shape = t.shape
        dims = shape.as_tuple() if shape.ndims is not None else (self.unknown_dim,)
        n = 1
        for d in dims or ():
            n *= self.unknown_dim if d is None else d
        return n

    def tensor_bytes(self, t: Tensor) -> int:
        """Estimated size of `t`'s value (8 bytes per element for strings and handles)."""
        return self.num_elements(t) * _itemsize(t.dtype.base_dtype)

    # --- compute ----------------------------------------------------------------
    def flops(self, op: Operation) -> int:
        """Floating-point operations of a compute-bound op (0 for memory-bound ones)."""
        t = op.type
        if t == "MatMul" and len(op._inputs) == 2:
            a, b = (self._dims(x) for x in op._inputs)
            if len(a) == 2 and len(b) == 2:
                m, k = (a[1], a[0]) if op._attrs.get("transpose_a") else (a[0], a[1])
                n = b[0] if op._attrs.get("transpose_b") else b[1]
                return 2 * m * k * n
        if t == "BatchMatMulV2" and len(op._inputs) == 2 and op._outputs:
            a = self._dims(op._inputs[0])
            out = self._dims(op._outputs[0])
            if len(a) >= 2 and len(out) >= 2:
                k = a[-2] if op._attrs.get("adj_x") else a[-1]
                return 2 * int(np.prod(out)) * k
        if t in ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter") and op._outputs:
            # The backprops do the forward's multiply-adds: count them on its shapes
            # (the forward's output is the backprops' out_backprop input).
            out = self._dims(op._outputs[0] if t == "Conv2D" else op._inputs[2])
            f = self._dims(op._outputs[0] if t == "Conv2DBackpropFilter" else op._inputs[1])
            if len(out) == 4 and len(f) == 4:
                return 2 * int(np.prod(out)) * f[0] * f[1] * f[2]
        return 0

    def bytes_touched(self, op: Operation) -> int:
        return sum(self.tensor_bytes(t) for t in op._inputs) + sum(self.tensor_bytes(t) for t in op._outputs)

    def compute_time(self, op: Operation, device: Any) -> float:
        """Estimated seconds to run `op`'s kernel on `device`."""
        if op.name in self.measured:
            return self.measured[op.name]
        dtype = device.device_type
        speed = self.device_speed.get(device.name, 1.0)
        if op.type in _FREE_OPS:
            return self.op_overhead / speed
        flop_time = self.flops(op) / self.flops_per_second.get(dtype, 2e10)
        mem_time = self.bytes_touched(op) / self.memory_bandwidth.get(dtype, 1e10)
        return (self.op_overhead + max(flop_time, mem_time)) / speed

    def transfer_time(self, nbytes: int, src: Any, dst: Any) -> float:
        """Seconds to move `nbytes` from device `src` to device `dst`."""
        if src is dst or src.name == dst.name:
            return 0.0
        return self.transfer_latency + nbytes / self.transfer_bandwidth

    # --- measured figures --------------------------------------------------------
    def record_step_stats(self, step_stats: Any) -> None:
        """Use the op times of a traced step (`RunMetadata.step_stats`) from now on."""
        for dev in step_stats.dev_stats:
            for ns in dev.node_stats:
                self.measured[ns.node_name] = max(ns.op_end_rel_micros, 1) * 1e-6

    def _dims(self, t: Tensor) -> tuple[int, ...]:
        if t.shape.ndims is None:
            return ()
        return tuple(self.unknown_dim if d is None else int(d) for d in t.shape.as_tuple() or ())


_ITEMSIZE: dict[Any, int] = {}


def _itemsize(dt: Any) -> int:
    size = _ITEMSIZE.get(dt)
    if size is None:
        try:
            npd = np.dtype(dt.as_numpy_dtype)
            size = 8 if npd == np.dtype(object) or npd.itemsize == 0 else npd.itemsize
        except (TypeError, AttributeError):
            size = 8
        _ITEMSIZE[dt] = size
    return size


def simulate(
    ops: Iterable[Operation],
    device_of: dict[str, Any],
    cost_model: CostModel | None = None,
    inputs_of: Callable[[Operation], list[Tensor]] = own_inputs,
) -> tuple[float, dict[str, float]]:
    """Replay a placement on the cost model: each device runs one op at a time, an op
    starts when its inputs have arrived and its device is free.  Returns (predicted
    step time, finish time per op name).  `ops` must be in topological order."""
    cm = cost_model or CostModel()
    busy: dict[str, float] = {}
    finish: dict[str, float] = {}
    first = None
    for op in ops:
        dev = device_of[op.name]
        first = first or dev.name
        ready = busy.get(dev.name, 0.0 if dev.name == first else cm.device_startup)
        for t in inputs_of(op):
            src = device_of.get(t.op.name)
            if src is None or t.op.name not in finish:
                continue  # fed, or produced outside the step
            ready = max(ready, finish[t.op.name] + cm.transfer_time(cm.tensor_bytes(t), src, dev))
        for c in op._control_inputs:
            if c.name in finish:
                src = device_of[c.name]
                ready = max(ready, finish[c.name] + cm.transfer_time(0, src, dev))
        finish[op.name] = ready + cm.compute_time(op, dev)
        busy[dev.name] = finish[op.name]
    return (max(finish.values()) if finish else 0.0), finish
