"""Partitioning: one subgraph per device, with Send/Recv on cross-device edges
(paper section 3.3, white paper section 3.2.2).

`partition(ops, device_of, feeds, fetches)` takes a pruned, placed step and returns
a `PartitionedGraph`: per device, the step's ops on that device plus

* a `_Send` for every tensor a different device consumes, and on that device one
  `_Recv` per (tensor, destination device), however many consumers it has there;
* for a control edge between devices, a dummy `Const` on the source device with a
  control input from the source op, its `_Send`, and on the destination a `_Recv`
  that the consumer takes as a control input.  A dead source (an untaken branch)
  makes the dummy dead, and the dead value crosses the edge, as in TensorFlow.

Each pair shares one rendezvous key,
``send_device;incarnation;recv_device;tensor_name;frame:iter`` with TensorFlow's
names (`Const/_0` for the Send, `Const/_1` for its Recv, tensor_name
`edge_0_Const`).  Fed tensors are written into every partition that reads them, and
fetched tensors are read from the partition that produces them (the client is in the
same process), so no transfer touches the client; the GraphDefs show TensorFlow's
call frame anyway (`partition_client`: `_Arg`/`_Retval` on CPU:0 and their pairs).  A
small constant read on several CPUs is copied onto each, as TensorFlow's
ReplicateConstants does (`partition_constants`).  An op taking a reference is
on its variable's device (placement colocates them; partitioning checks), but a
variable's *read* may cross: between CPU devices its Send carries the variable, read
by the consumers when they run, as TensorFlow's in-process Send shares the buffer
(`partition_refs`; `share_references=False` sends the value instead).

The user's graph is never modified: each partition holds clones of the operations
(same name, type, attrs and definition site) in a graph of its own, so kernel state
found by name on a device (variables, queues, random generators) is the same as for
an unpartitioned step, and errors quote the user's code.

A `PartitionedPlan` is the compiled form (one `Plan` per partition) that a session
caches per step signature; `run_partitioned` runs one step of it, every partition an
`Execution` of the same `Step` (one cancellation, one undo log, one rendezvous table).
`Partitions` is the inspectable view: device name -> GraphDef (the JSON schema of
`flowlab.graph.graph_def`, each node with its assigned device) and the list of
`SendRecvPair`s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.graph import dtypes
from flowlab.graph.graph import Graph
from flowlab.graph.graph_def import FORMAT, VERSION, node_to_dict
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.kernels import sendrecv_kernels
from flowlab.kernels.resources import freeze
from flowlab.ops import sendrecv_ops
from flowlab.ops.op_def import get_op_def
from flowlab.runtime.master.partition_client import ClientView, client_device, client_view
from flowlab.runtime.master.partition_constants import Replicas, replicas
from flowlab.runtime.master.partition_control_flow import (
    ControlLoops,
    analyze_frames,
    colocate_control_flow,
    loop_spans_devices,
    needs_unpartitioned,
)
from flowlab.runtime.master.partition_refs import Refs, by_reference
from flowlab.runtime.master.partition_view import Partitions
from flowlab.runtime.task.device import Device
from flowlab.runtime.task.memory_types import declared_host_memory
from flowlab.runtime.task.plan import (
    Plan,
    input_ref_flags,
    own_inputs,
)

__all__ = [
    "SendRecvPair", "DevicePartition", "PartitionedGraph", "Partitions",
    "partition", "loop_spans_devices", "needs_unpartitioned",
]


@dataclass(frozen=True)
class SendRecvPair:
    """One cross-device edge: the `_Send`/`_Recv` ops that carry it and their key."""

    key: str  # the rendezvous key (frame and iteration 0:0)
    tensor_name: str  # the key's name part, e.g. "edge_0_Const"
    send_op: str
    recv_op: str
    tensor: str  # the carried tensor ("a:0"), or "^a" for a control edge
    src_device: str
    dst_device: str
    dtype: str  # "float32"; "float32" for the dummy of a control edge
    shape: tuple[int | None, ...] | None  # the static shape (None: unknown rank)
    # The transfer carries a variable, not its value (partition_refs): read by the
    # consumers when they run, as TensorFlow's in-process Send shares the buffer.
    by_reference: bool = False

    @property
    def control(self) -> bool:
        return self.tensor.startswith("^")


@dataclass
class DevicePartition:
    """The ops of one device, with the step's feeds and fetches that touch it."""

    device: Device
    graph: Graph  # owns the clones (and the Send/Recv ops); never a default graph
    ops: list[Operation] = field(default_factory=list)  # topological order
    feeds: list[Tensor] = field(default_factory=list)  # the user's fed tensors read here
    feed_index: list[int] = field(default_factory=list)  # their positions in the step's feeds
    fetches: list[Tensor] = field(default_factory=list)  # clone tensors fetched from here
    fetch_index: list[int] = field(default_factory=list)  # their positions in the step's fetches
    plan: Plan | None = None  # set by compile_partitions

    def graph_def(self) -> dict[str, Any]:
        """This partition as a GraphDef dict; every node carries its assigned device."""
        return {
            "format": FORMAT, "version": VERSION,
            "node": [node_to_dict(op) for op in self.ops], "library": {},
        }


@dataclass
class PartitionedGraph:
    """The result of `partition`: partitions in session device order, and the pairs."""

    partitions: list[DevicePartition]
    pairs: list[SendRecvPair]
    fed_fetches: list[tuple[int, int]]  # (fetch position, feed position): fetches that are fed
    num_fetches: int
    # Every partition op in one order valid across devices (each Send before its Recv),
    # the step's feeds, and its fetches as partition tensors (a fed one as itself).
    sequence: list[Operation] = field(default_factory=list)
    feeds: list[Tensor] = field(default_factory=list)
    fetches: list[Tensor] = field(default_factory=list)
    client: ClientView = field(default_factory=ClientView)  # feeds/fetches via CPU:0, as shown


# --- partitioning --------------------------------------------------------------------------
class _Partitioner:
    def __init__(
        self, ops: list[Operation], device_of: Mapping[str, Device], feeds: list[Tensor], optimization: Any,
        share_references: bool = True,
    ) -> None:
        self.device_of = device_of
        self.opt = optimization
        self.constants: dict[str, list[Any]] = optimization.constants if optimization is not None else {}
        # Ops the dependency optimization converted: cloned as NoOps (see `clone`).
        self.noops: set[str] = set(optimization.noops) if optimization is not None else set()
        # (id(op), output index) -> the partition tensor standing for that output.
        self.out_of: dict[tuple[int, int], Tensor] = {}
        self.has_control_flow = any(op.op_def is not None and op.op_def.is_control_flow for op in ops)
        self.send_def = sendrecv_ops.SEND if self.has_control_flow else sendrecv_ops.SEND_NO_DEAD_VALUES
        self.recv_def = sendrecv_ops.RECV_MAY_BE_DEAD if self.has_control_flow else sendrecv_ops.RECV
        # _HostSend/_HostRecv: a tensor in host memory on either side (memory_types).
        self.host_send_def = replace(sendrecv_ops.HOST_SEND, is_control_flow=self.send_def.is_control_flow)
        self.host_recv_def = replace(sendrecv_ops.HOST_RECV, is_control_flow=self.recv_def.is_control_flow)
        # Variable reads shared between CPU devices of this process (partition_refs).
        self.share_references = share_references
        self.refs = Refs()
        self.fed: dict[tuple[int, int], int] = {}
        for i, t in enumerate(feeds):
            self.fed[(id(t.op), t.value_index)] = i  # a tensor fed twice: the last value wins
        self.parts: dict[str, DevicePartition] = {}
        self.clone_of: dict[int, Operation] = {}
        self.recv_of: dict[tuple[int, int, str, bool], Tensor] = {}
        self.ctrl_recv_of: dict[tuple[int, str], Operation] = {}
        self.pairs: list[SendRecvPair] = []
        self.taken = {op.name for op in ops}
        self.counter = 0
        self.sequence: list[Operation] = []
        # Loops across devices (partition_control_flow): set by `partition`.
        self.loops: ControlLoops | None = None
        self.new_ops: dict[int, tuple[Device, str]] = {}  # id -> (device, frame) of ops made here
        self.replicas = Replicas({})  # small constants copied onto each reading device

    def part(self, device: Device) -> DevicePartition:
        p = self.parts.get(device.name)
        if p is None:
            p = self.parts[device.name] = DevicePartition(device, Graph())
        return p

    def clone(self, op: Operation) -> Operation:
        c = self.clone_of.get(id(op))
        if c is None:
            device = self.device_of[op.name]
            values = self.constants.get(op.name)
            if values is not None:
                c = self.folded(op, device, values)
            elif op.name in self.noops:
                # As Grappler leaves it: a NoOp whose data inputs became control inputs
                # (`partition` adds them), so the step skips the same work on every path.
                c = Operation(
                    self.part(device).graph, "NoOp", op.name, [], [], {}, device.name, [],
                    get_op_def("NoOp"), op._colocation, op._traceback,
                )
            else:
                c = Operation(
                    self.part(device).graph, op.type, op.name, [], [t.dtype for t in op._outputs],
                    op._attrs, device.name, [], op._op_def, op._colocation, op._traceback,
                )
                for ct, t in zip(c._outputs, op._outputs):
                    ct._shape = t._shape
                    self.out_of[(id(op), t.value_index)] = ct
            c._id = op._id
            self.clone_of[id(op)] = c
            self.refs.own(c)
        return c

    def folded(self, op: Operation, device: Device, values: list[Any]) -> Operation:
        """An op the optimization pass folded: one `Const` per output (the first under
        the op's own name, the others `name/folded_i`, as the pass's GraphDef shows)."""
        const_def = get_op_def("Const")
        first: Operation | None = None
        for i, (t, v) in enumerate(zip(op._outputs, values)):
            name = op.name if i == 0 else f"{op.name}/folded_{i}"
            self.taken.add(name)
            dt = t.dtype.base_dtype
            arr = freeze(np.array(v, dtype=object if dt is dtypes.string else dt.as_numpy_dtype))
            c = Operation(
                self.part(device).graph, "Const", name, [], [dt], {"value": arr, "dtype": dt},
                device.name, [], const_def, op._colocation, op._traceback,
            )
            c._outputs[0]._shape = TensorShape(arr.shape)
            self.out_of[(id(op), t.value_index)] = c._outputs[0]
            if first is None:
                first = c
            else:
                self.add(self.part(device), c)
        assert first is not None
        return first

    def use_feed(self, part: DevicePartition, t: Tensor) -> None:
        if not any(f is t for f in part.feeds):
            part.feeds.append(t)
            part.feed_index.append(self.fed[(id(t.op), t.value_index)])

    def add(self, part: DevicePartition, op: Operation) -> Operation:
        op._id = len(part.ops)
        part.ops.append(op)
        # Ops are added producers first (the step's ops in topological order, a Send
        # when its consumer's Recv is made): `sequence` is a valid global order.
        self.sequence.append(op)
        return op

    def fresh_names(self, base: str) -> tuple[int, str, str]:
        while True:
            n = self.counter
            self.counter += 2
            send, recv = f"{base}/_{n}", f"{base}/_{n + 1}"
            if send not in self.taken and recv not in self.taken:
                self.taken.update((send, recv))
                return n, send, recv

    def transfer(
        self, value: Tensor, src: Device, dst: Device, carried: str, dtype: dtypes.DType, consumer: str,
        frame: str = "", host_recv: bool = False, by_ref: bool = False,
    ) -> Operation:
        """A Send of `value` on `src` and its Recv on `dst` (for `consumer`, the first
        op there that needs it); returns the Recv op.  Inside loop `frame` the Recv
        runs under the frame's control op on `dst`, once per iteration.  A `_HostSend`
        when `value` is declared host memory on `src`, a `_HostRecv` with `host_recv`
        (TensorFlow's rule, `memory_types.send_recv_types`).  With `by_ref` the
        Send takes `value` (a variable) by reference and the Recv's output is a
        reference (partition_refs); `dtype` stays the base dtype."""
        host_send = declared_host_memory(value.op, src, value.value_index, output=True)
        n, send_name, recv_name = self.fresh_names(value.op.name)
        base_name = carried.lstrip("^").rsplit(":", 1)[0]
        tensor_name = f"edge_{n}_{base_name}"
        address = {
            "tensor_name": tensor_name, "send_device": src.name,
            "send_device_incarnation": src.incarnation, "recv_device": dst.name,
            "client_terminated": False,
        }
        send_def = self.host_send_def if host_send else self.send_def
        recv_def = self.host_recv_def if host_recv else self.recv_def
        if by_ref:
            send_def, recv_def = by_reference(send_def), by_reference(recv_def)
        send = Operation(
            self.part(src).graph, "_HostSend" if host_send else "_Send", send_name, [value], [],
            {"T": dtype, **address, "_src": base_name, "_dst": consumer}, src.name, [], send_def,
        )
        recv = Operation(
            self.part(dst).graph, "_HostRecv" if host_recv else "_Recv", recv_name, [],
            [dtype._as_ref() if by_ref else dtype],
            {"tensor_type": dtype, **address, "_src": base_name, "_dst": consumer}, dst.name, [], recv_def,
        )
        recv._outputs[0]._shape = value.shape
        self.refs.own(recv)
        self.add(self.part(src), send)
        self.add(self.part(dst), recv)
        if frame and self.loops is not None:
            self.loops.participate(frame, src)
            recv._control_inputs = [self.loops.control_of(frame, dst)]
        key = sendrecv_kernels.make_key(src.name, src.incarnation, dst.name, tensor_name)
        shape = value.shape.as_tuple() if value.shape.ndims is not None else None
        self.pairs.append(SendRecvPair(
            key, tensor_name, send_name, recv_name, carried, src.name, dst.name, dtype.name, shape, by_ref,
        ))
        return recv

    def data_input(self, consumer: Operation, k: int, t: Tensor, takes_ref: bool) -> Tensor:
        dst = self.device_of[consumer.name]
        if (id(t.op), t.value_index) in self.fed:
            self.use_feed(self.part(dst), t)
            return t
        if t.op in self.replicas:
            return self.replicas.on(self, t.op, dst, self.constants.get(t.op.name))
        src = self.device_of[t.op.name]
        self.clone(t.op)
        produced = self.out_of[(id(t.op), t.value_index)]
        if src is dst:
            return produced
        if takes_ref or t.dtype.base_dtype is dtypes.resource:
            raise errors.InternalError(
                None, consumer,
                f"Partitioning: '{consumer.name}' input {k} takes {t.name} by reference, but "
                f"'{consumer.name}' is on {dst.name} and '{t.op.name}' on {src.name}; placement "
                "must colocate an op with the state it references.",
            )
        host = declared_host_memory(consumer, dst, k, output=False)
        return self.value_on(t, dst, consumer.name, host_recv=host)

    def value_on(
        self, t: Tensor, dst: Device, consumer: str, frame: str | None = None, host_recv: bool = False,
    ) -> Tensor:
        """Tensor `t` (of the step, or made here) as available on `dst`: itself, or
        the one Recv per (tensor, device, host memory) of it; `frame`: the frame `t` is
        in (by default, its op's output frame); `host_recv`: the reader wants it in
        host memory (a `_HostRecv`)."""
        key = (id(t.op), t.value_index, dst.name, host_recv)
        r = self.recv_of.get(key)
        if r is not None:
            return r
        made = self.new_ops.get(id(t.op))
        if made is None:
            src = self.device_of[t.op.name]
            self.clone(t.op)
            produced = self.out_of[(id(t.op), t.value_index)]
            if frame is None:
                frame = self.loops.out_frame(t.op) if self.loops is not None else ""
        else:
            src, made_frame = made
            produced = t
            if frame is None:
                frame = made_frame
        if src is dst:
            return produced
        # A variable (or a read of one) moves as itself between CPUs (partition_refs).
        by_ref = (
            self.share_references and made is None and src.device_type == "CPU" == dst.device_type
            and self.refs.holds_reference(produced)
        )
        recv = self.transfer(produced, src, dst, t.name, t.dtype.base_dtype, consumer, frame, host_recv, by_ref)
        r = self.recv_of[key] = recv._outputs[0]
        return r

    def control_input(self, consumer: Operation, c: Operation) -> Operation:
        dst = self.device_of[consumer.name]
        src = self.device_of[c.name]
        if src is dst:
            return self.clone(c)
        key = (id(c), dst.name)
        r = self.ctrl_recv_of.get(key)
        if r is None:
            # A scalar that exists only to carry "c has run" (or "c is dead") across.
            _, dummy_name, _ = self.fresh_names(c.name)
            value = freeze(np.zeros((), np.float32))
            dummy = Operation(
                self.part(src).graph, "Const", dummy_name, [], [dtypes.float32],
                {"value": value, "dtype": dtypes.float32}, src.name, [self.clone(c)],
                get_op_def("Const"),
            )
            dummy._outputs[0]._shape = TensorShape([])
            self.add(self.part(src), dummy)
            frame = self.loops.out_frame(c) if self.loops is not None else ""
            r = self.ctrl_recv_of[key] = self.transfer(
                dummy._outputs[0], src, dst, "^" + c.name, dtypes.float32, consumer.name, frame
            )
        return r


def partition(
    ops: list[Operation], device_of: Mapping[str, Device], feeds: list[Tensor], fetches: list[Tensor],
    devices: list[Device] | None = None, optimization: Any = None, share_references: bool = True,
) -> PartitionedGraph:
    """Split a pruned, placed step into per-device subgraphs joined by Send/Recv.

    Args:
      ops: the step's ops in a topological order (as `prune` returns them).
      device_of: op name -> assigned Device (a `Placement.device_of`).
      feeds: the step's fed tensors; fetches: its fetched tensors.
      devices: the session's devices, for the order of the partitions.
      optimization: the optimization pass's view of the step
        (`flowlab.runtime.master.optimize.Optimization`), if it ran: `ops` are then its
        ops, inputs are read through `inputs_of`, and folded ops become `Const`s.
      share_references: every device is in this process: a variable (or a read of
        one) crossing between CPU devices is sent as the variable, which consumers
        read when they run (`partition_refs`); False sends its value as of the Send
        (partitions that will run in other processes).

    Returns:
      A `PartitionedGraph`.

    Raises:
      InternalError: a reference or resource edge crosses devices.
    """
    inputs_of = optimization.inputs_of if optimization is not None else own_inputs
    frames = analyze_frames(ops, inputs_of)
    if frames is not None:
        device_of = colocate_control_flow(ops, device_of, inputs_of)
    p = _Partitioner(ops, device_of, feeds, optimization, share_references)
    in_step = {op.name for op in ops}
    if frames is not None:
        p.loops = ControlLoops(p, frames, ops, inputs_of)
    else:  # TensorFlow's ReplicateConstants (partition_constants)
        pinned = {id(t.op) for t in [*feeds, *fetches]}
        p.replicas = replicas(ops, inputs_of, device_of, p.constants, p.noops, pinned, p.taken)
    for op in ops:
        if op in p.replicas:
            continue
        c = p.clone(op)
        part = p.part(device_of[op.name])
        if p.loops is not None:
            p.loops.participate(p.loops.op_frame(op), part.device)
        deps = op._control_inputs
        if op.name in p.noops:  # converted: its producers become control inputs
            deps = [t.op for t in inputs_of(op) if (id(t.op), t.value_index) not in p.fed] + deps
        else:
            ref_flags = input_ref_flags(op)
            c._inputs = [p.data_input(op, k, t, ref_flags[k]) for k, t in enumerate(inputs_of(op))]
            p.refs.forward(c)
        controls: list[Operation] = []
        for ctl in deps:
            if ctl.name not in in_step:
                continue  # not run this step: satisfied by a feed (see prune)
            r = p.control_input(op, ctl)
            if r not in controls:
                controls.append(r)
        c._control_inputs = controls
        p.add(part, c)
    if p.loops is not None:
        p.loops.finish()
    fed_fetches: list[tuple[int, int]] = []
    all_fetches: list[Tensor] = []
    answered: list[tuple[Tensor, Tensor]] = []
    for i, t in enumerate(fetches):
        fi = p.fed.get((id(t.op), t.value_index))
        if fi is not None:
            fed_fetches.append((i, fi))
            all_fetches.append(t)
            continue
        user = t
        if optimization is not None:
            t = optimization.canonical(t)
        part = p.part(device_of[t.op.name])
        p.clone(t.op)
        part.fetches.append(p.out_of[(id(t.op), t.value_index)])
        part.fetch_index.append(i)
        all_fetches.append(part.fetches[-1])
        answered.append((user, part.fetches[-1]))
    order = {d.name: i for i, d in enumerate(devices or [])}
    parts = sorted(p.parts.values(), key=lambda q: order.get(q.device.name, len(order)))
    for part in parts:
        for op in part.ops:  # the consumer lists of tensors, as a graph's ops have them
            for t in op._inputs:
                t._consumers.append(op)
    client = client_view(p, parts, list(feeds), answered, client_device(devices), [d.name for d in devices or []])
    return PartitionedGraph(
        parts, p.pairs, fed_fetches, len(fetches), p.sequence, list(feeds), all_fetches, client
    )
