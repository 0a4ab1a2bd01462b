"""Memory types: which values of a compiled step live in host memory on an accelerator
(TensorFlow's `MemoryTypesForNode` and `EnsureMemoryTypes`).

A kernel declares the inputs and outputs it keeps in host memory by argument name
(`@kernel("Reshape", host_memory=("shape",))`): shapes, axes, indices, sizes, which
the kernel reads on the host (TensorFlow registers its GPU kernels the same way,
e.g. `HostMemory("shape")`, and Shape's output is in host memory).  Strings,
resource and variant handles are always host values.  On a CPU every value is in
host memory.

`ensure_memory_types(nodes, feed_slots, make_constant_kernel)` runs when a plan with
an accelerator op is compiled and makes every edge agree:

* each value slot gets a memory: a kernel's output by the declarations above, a
  feed in host memory unless a reader wants it on its device (then the step copies it
  there once, before any op runs: `Plan.feed_to_device`), a constant (a `Const` or a
  folded op on an accelerator) where its readers want it -- copied to the device once,
  here, unless every reader wants it on the host;
* an input whose value is in the other memory gets a conversion on the consumer's
  side (the kernel function is wrapped): `to_host` before a host-memory input or a
  CPU op, `from_host` before a device input.  Outputs a kernel declares host-memory
  are moved to the host if the kernel produced a device array.

Values coming out of control-flow ops (Switch, Merge, Enter, ...) may be either: their
consumers convert whatever arrives (both conversions pass a value already in the
right memory through).  Control-flow kernels themselves are never wrapped (the frame
executor handles some of them inline), and an input taken by reference (the variable
itself) is never converted.  Plans on CPU devices only are untouched: no wrapper, no
cost.

int32 on an accelerator (TensorFlow's convention, mirrored): TensorFlow registers the
GPU kernels of the element-wise ops, comparisons, reductions and shape plumbing
(Pack, ConcatV2, StridedSlice, Reshape, Fill, Range, ...) for int32 with every
argument in host memory, computing with the CPU functor (cwise_op_add_1.cc: "A special
GPU kernel for int32 ... requires all int32 inputs and outputs to be in host memory").
`INT32_ON_HOST` lists those op types with the attr naming their type; such an op on a
GPU with that attr int32 has every input and output in host memory and runs its CPU
kernel (NumPy) while staying placed on the GPU.  So shape arithmetic (`tf.shape(x)[0]
* 2`, a `tf.stack` of sizes) never crosses to the device and back.  int32 tensors
elsewhere (Gather's indices, labels, a Cast's output) stay in device memory, as in
TensorFlow.  Control-flow ops are left as they are (their outputs may be either).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation
from flowlab.kernels.registry import DEAD, KernelDef, find_kernel, host_memory_indices
from flowlab.runtime.task.device import Device

# TensorFlow's DataTypeAlwaysOnHost.
_HOST_DTYPES = frozenset({dtypes.string, dtypes.resource, dtypes.variant})


# Op type -> the attr holding its data type, for the ops whose TensorFlow GPU kernel
# keeps int32 in host memory (searched in TensorFlow's kernels: the `HostMemory`
# registrations with `TypeConstraint<int32>` of cwise_op_*.cc, reduction_ops_*.cc,
# pack_op.cc, concat_op.cc, strided_slice_op.cc, slice_op.cc, reshape_op.cc,
# constant_op.cc (Fill), shape_ops.cc (ExpandDims, Squeeze),
# sequence_ops.cc (Range), unpack_op.cc).  Not Identity (TensorFlow's is int32-host too):
# the executors forward an Identity's value without calling its kernel, so its output
# is wherever its input is.
INT32_ON_HOST: dict[str, str] = {
    **dict.fromkeys((
        "Add", "AddV2", "Sub", "Mul", "Div", "FloorDiv", "FloorMod", "TruncateDiv", "Maximum", "Minimum",
        "SquaredDifference", "Neg", "Abs", "Sign", "Square",
        "Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual",
        "Sum", "Prod", "Max", "Min",
        "Pack", "Unpack", "ConcatV2", "StridedSlice", "Slice", "Reshape", "Fill",
        "ExpandDims", "Squeeze",
    ), "T"),
    "Range": "Tidx",
}


def int32_on_host(op: Operation, device: Device) -> bool:
    """Whether `op` on the accelerator `device` computes on the host with every argument
    in host memory (TensorFlow's int32 GPU kernels; see INT32_ON_HOST)."""
    attr = INT32_ON_HOST.get(op.type)
    if attr is None or on_host(device):
        return False
    t = op._attrs.get(attr)
    return t is not None and getattr(t, "base_dtype", None) == dtypes.int32


def on_host(device: Device) -> bool:
    """Whether `device` computes in host memory (a CPU)."""
    return device.xp is np


def memory_types(op: Operation, kdef: KernelDef | None, device: Device) -> tuple[list[bool], list[bool]]:
    """Per data input and per output of `op` placed on `device`: True where the value is
    in host memory."""
    n_in, n_out = len(op._inputs), len(op._outputs)
    if on_host(device) or int32_on_host(op, device):
        return [True] * n_in, [True] * n_out
    ins, outs = host_memory_indices(kdef, op) if kdef is not None else (frozenset(), frozenset())
    in_host = [i in ins or t.dtype.base_dtype in _HOST_DTYPES for i, t in enumerate(op._inputs)]
    out_host = [i in outs or t.dtype.base_dtype in _HOST_DTYPES for i, t in enumerate(op._outputs)]
    return in_host, out_host


def _is_control_flow(op: Operation) -> bool:
    od = op.op_def
    return od is not None and od.is_control_flow


def to_host_any(value: Any) -> Any:
    """A device array copied to the host; anything else as it is."""
    if hasattr(value, "__cuda_array_interface__") and type(value) is not np.ndarray:
        out = value.get()
        return out[()] if getattr(out, "ndim", 1) == 0 else out
    return value


def _host_converter(device: Device | None) -> Callable[[Any], Any]:
    """To host memory, counted on `device` when it is the accelerator that held it."""
    if device is not None and not on_host(device):
        return device.to_host
    return to_host_any


def _device_converter(device: Device) -> Callable[[Any], Any]:
    """Host arrays and NumPy scalars into `device`'s memory; anything else (device
    arrays, handles, DEAD) as it is."""
    from_host = device.from_host

    def to_device(value: Any) -> Any:
        if isinstance(value, (np.ndarray, np.generic)) and value.dtype != object:
            return from_host(value)
        return value

    return to_device


def ensure_memory_types(
    nodes: list[Any],
    feed_slots: list[int],
    make_constant_kernel: Callable[[Operation, Device, list[Any]], KernelDef],
) -> list[Any] | None:
    """Make the memories of `nodes` (a plan's PlanNodes, inputs resolved) agree; see the
    module docstring.  Returns the plan's `feed_to_device` (None: no feed moves)."""
    if all(on_host(n.ctx.device) for n in nodes):
        return None
    from flowlab.runtime.task.plan import input_ref_flags  # plan imports this module

    types = [memory_types(n.op, n.kernel, n.ctx.device) for n in nodes]
    takes_ref = [input_ref_flags(n.op) for n in nodes]
    # Who reads each slot: (node, input index, wants host memory).
    readers: dict[int, list[tuple[Any, int, bool]]] = {}
    for n, (in_host, _), refs in zip(nodes, types, takes_ref):
        for k, (slot, _read) in enumerate(n.inputs):
            if not refs[k]:
                readers.setdefault(slot, []).append((n, k, in_host[k]))

    # Where each slot's value lives: (in host memory, the device holding it).
    where: dict[int, tuple[bool, Device | None]] = {}
    moves: list[Any] = []
    for slot in feed_slots:
        dev = next((n.ctx.device for n, _, host in readers.get(slot, ()) if not host), None)
        moves.append(None if dev is None else _device_converter(dev))
        where[slot] = (dev is None, dev)
    unknown: set[int] = set()  # slots a control-flow op fills: either memory
    for n, (_, out_host) in zip(nodes, types):
        device = n.ctx.device
        for j, slot in enumerate(n.outputs):
            if slot < 0:
                continue
            if n.constants is not None and not on_host(device):
                host = all(h for _, _, h in readers.get(slot, ())) if readers.get(slot) else True
                where[slot] = (host, device)
            else:
                where[slot] = (out_host[j], device)
            if _is_control_flow(n.op):
                unknown.add(slot)
        if n.constants is not None and not on_host(device):
            # A constant on an accelerator: copied to the device once, here, for the
            # outputs whose readers compute there.
            values = [
                v if slot < 0 or where[slot][0] else device.from_host(v)
                for v, slot in zip(n.constants, n.outputs)
            ]
            n.constants = values
            n.kernel = make_constant_kernel(n.op, device, values)

    for n in nodes:
        if n.constants is None and int32_on_host(n.op, n.ctx.device):
            n.kernel = _host_kernel(n)

    for n, (in_host, _), refs in zip(nodes, types, takes_ref):
        if _is_control_flow(n.op) or n.constants is not None:
            continue
        device = n.ctx.device
        convert: list[tuple[int, Callable[[Any], Any]]] = []
        for k, (slot, read) in enumerate(n.inputs):
            if refs[k]:
                continue
            have_host, holder = where.get(slot, (True, None))
            if read and holder is not None:  # a variable's array lives on its device
                have_host = on_host(holder)
            if slot in unknown or have_host != in_host[k]:
                convert.append((k, _host_converter(holder) if in_host[k] else _device_converter(device)))
        out_convert: list[int] = []
        if not on_host(device):
            _, declared = host_memory_indices(n.kernel, n.op)
            out_convert = [j for j in sorted(declared) if j < len(n.outputs) and n.outputs[j] >= 0]
        if convert or out_convert:
            n.kernel = _converting_kernel(n.kernel, convert, out_convert, device, n.single_output)
    return moves if any(m is not None for m in moves) else None


def _host_kernel(n: Any) -> KernelDef:
    """The CPU kernel of node `n` (placed on an accelerator), computing with NumPy on
    host values: TensorFlow's int32 GPU kernels (`BinaryOp<CPUDevice, ...>`)."""
    cpu = find_kernel(n.op.type, "CPU")
    if cpu is None:
        return n.kernel  # type: ignore[no-any-return]
    host_ctx = copy.copy(n.ctx)  # the node's context, but NumPy as its array module
    host_ctx.xp = np
    fn = cpu.fn

    def on_the_host(ctx: Any, *args: Any) -> Any:
        return fn(host_ctx, *args)

    return dataclasses.replace(cpu, fn=on_the_host)


def _converting_kernel(
    kdef: KernelDef, convert: list[tuple[int, Callable[[Any], Any]]], out_convert: list[int],
    device: Device, single: bool,
) -> KernelDef:
    """`kdef` with its inputs converted before the call and its host-memory outputs
    moved to the host after it."""
    fn = kdef.fn
    offset = 2 if kdef.asynchronous else (1 if kdef.needs_step else 0)
    ins = tuple((offset + 1 + k, c) for k, c in convert)  # +1: the NodeContext
    to_host = device.to_host

    def outputs(r: Any) -> Any:
        if single:
            return to_host(r) if r is not DEAD else r
        r = list(r)
        for j in out_convert:
            if j < len(r) and r[j] is not DEAD:
                r[j] = to_host(r[j])
        return r

    if kdef.asynchronous:
        def run_async(*args: Any) -> Any:
            a = list(args)
            for i, c in ins:
                a[i] = c(a[i])
            if out_convert:
                done = a[2]

                def converted_done(result: Any = None, error: BaseException | None = None) -> None:
                    if error is not None:
                        done(error=error)
                    else:
                        done(outputs(result))

                a[2] = converted_done
            return fn(*a)

        return dataclasses.replace(kdef, fn=run_async)

    def run(*args: Any) -> Any:
        if ins:
            a = list(args)
            for i, c in ins:
                a[i] = c(a[i])
            args = tuple(a)
        r = fn(*args)
        return outputs(r) if out_convert else r

    return dataclasses.replace(kdef, fn=run)


# --- cross-device edges ----------------------------------------------------------------
def declared_host_memory(op: Operation, device: Device, index: int, output: bool) -> bool:
    """Whether the kernel of `op` on `device`'s type declares its input `index` (its
    output, with `output`) host memory, or the tensor's dtype always lives on the host.
    Unlike `memory_types`, a CPU answers by the declarations too (for the choice of
    `_HostSend`/`_HostRecv`, as TensorFlow's CPU kernels declare them)."""
    t = op._outputs[index] if output else op._inputs[index]
    if t.dtype.base_dtype in _HOST_DTYPES or (device.device_type != "CPU" and int32_on_host(op, device)):
        return True
    kdef = find_kernel(op.type, device.device_type)
    if kdef is None:
        return False
    ins, outs = host_memory_indices(kdef, op)
    return index in (outs if output else ins)


def send_recv_types(
    producer: Operation, output: int, src: Device, consumer: Operation, input_index: int, dst: Device,
) -> tuple[str, str]:
    """The op types of the pair carrying `producer:output` (on `src`) to input
    `input_index` of `consumer` (on `dst`), by TensorFlow's rule (graph_partition.cc):
    `_HostSend` when the sender's output is declared host memory, `_HostRecv` when the
    receiver's input is -- on any device type, as TensorFlow's CPU kernels declare
    them too (a Shape feeding a Reshape's shape on another CPU crosses as
    `_HostSend`/`_HostRecv`; a float tensor as `_Send`/`_Recv`).  A receiver that
    wants host memory and one that does not need separate Recvs (TensorFlow keys its
    Recvs by (tensor, device, host memory))."""
    host_send = declared_host_memory(producer, src, output, output=True)
    host_recv = declared_host_memory(consumer, dst, input_index, output=False)
    return ("_HostSend" if host_send else "_Send", "_HostRecv" if host_recv else "_Recv")
