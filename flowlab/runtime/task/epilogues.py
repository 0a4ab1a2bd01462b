"""Epilogue fusion on the straight-line path: Conv2D -> BiasAdd -> Relu as one call.

A convolution layer's BiasAdd and Relu are two more passes over the convolution's
output, megabytes that are out of the cache by the time they run; on cnn_train's step
they took ~4.6 ms of ~130 at one thread.  TensorFlow's Grappler remapper rewrites the
pattern into `_FusedConv2D`.  flowlab's graph optimizer rewrites a view of the user's
ops and has no op to make, so the fusion is done where the order of the ops is fixed:
in the generated straight-line function (flowlab.runtime.task.straight_line).  There
the Conv2D line calls `conv_kernels.conv2d_bias_relu`, which adds the bias and applies
the ReLU to each cache block of the convolution's output as it is computed, and the
BiasAdd and Relu lines pass the value on -- or, when that call reports it did not
fuse, run their own kernels, so that their errors are theirs.

`conv_bias_relu(order, dying, forward, available)` finds the patterns:

* a Conv2D, a BiasAdd reading its output as input 0 and a Relu reading the BiasAdd's,
  on one device with NumPy arrays, NHWC, float32 or float64;
* each intermediate read for the last time by the next op, and that op allowed to
  write into it (`forwarding.forwardable`: no other reader, not fetched, fed or a
  constant) -- so nothing but the chain ever sees the intermediate values;
* neither the BiasAdd nor the Relu waits on a control input, and the bias is
  computed before the Conv2D in the order (`available`), so reading it at the
  Conv2D's line is reading the value the BiasAdd would have read.

The values are the three kernels' bits (the same elementwise operations on the same
operands), which tests/runtime/task/test_epilogues.py checks against a plan compiled
with forwarding off.  A traced step runs the three ops one by one (its trace shows
them, as the dataflow executor runs them); `FLOWLAB_FORWARDING=0` turns this off
together with forwarding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.kernels.conv_kernels import conv2d
from flowlab.kernels.nn_kernels import bias_add, relu

_FLOATS = (np.float32, np.float64)


def conv_bias_relu(order: list[Any], dying: list[list[int]], forward: dict[int, tuple[int, ...]],
                   available: dict[int, int]) -> dict[int, tuple[Any, Any]]:
    """{Conv2D node index: (its BiasAdd node, that one's Relu node)} for each chain that
    may run as one call.  `available[slot]` is the position in `order` after which the
    slot holds its value (-1: before the first op: a feed, a variable handle)."""
    pos = {n.index: k for k, n in enumerate(order)}
    readers: dict[int, list[Any]] = {}
    for n in order:
        for slot, _read in n.inputs:
            readers.setdefault(slot, []).append(n)
    found: dict[int, tuple[Any, Any]] = {}
    for conv in order:
        if conv.kernel.fn is not conv2d or not _host_nhwc_float(conv) or conv.outputs[0] < 0:
            continue
        bias = _only_reader(conv.outputs[0], readers, bias_add, 0, dying, forward, pos)
        if bias is None or not _host_nhwc_float(bias) or bias.ctx.device is not conv.ctx.device:
            continue
        act = _only_reader(bias.outputs[0], readers, relu, 0, dying, forward, pos)
        if act is None or act.ctx.device is not conv.ctx.device or act.ctx.attrs.get("T") != conv.ctx.attrs.get("T"):
            continue
        if bias.op.control_inputs or act.op.control_inputs:
            continue
        bias_slot = bias.inputs[1][0]
        if available.get(bias_slot, len(order)) >= pos[conv.index]:
            continue  # not computed yet where the Conv2D runs
        found[conv.index] = (bias, act)
    return found


def _host_nhwc_float(node: Any) -> bool:
    attrs = node.ctx.attrs
    fmt = attrs.get("data_format", "NHWC")
    fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
    dtype = attrs.get("T")
    return (node.ctx.xp is np and fmt == "NHWC" and node.constants is None
            and getattr(dtype, "as_numpy_dtype", None) in _FLOATS)


def _only_reader(slot: int, readers: dict[int, list[Any]], fn: Any, position: int,
                 dying: list[list[int]], forward: dict[int, tuple[int, ...]],
                 pos: dict[int, int]) -> Any:
    """The one node reading `slot`, if its kernel is `fn`, it reads the slot as input
    `position` only, the slot dies there and the node may forward it."""
    rs = readers.get(slot, [])
    if len(rs) != 1 or rs[0].kernel.fn is not fn or rs[0].outputs[0] < 0:
        return None
    node = rs[0]
    if [s for s, _ in node.inputs].count(slot) != 1 or node.inputs[position][0] != slot:
        return None
    if slot not in dying[pos[node.index]] or position not in forward.get(node.index, ()):
        return None
    return node
