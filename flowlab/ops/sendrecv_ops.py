"""Send and Recv: the ops partitioning puts on every cross-device edge (paper 3.3).

`_Send` on the source device hands its input to the step's rendezvous under a key
built from its attrs (see `flowlab.kernels.sendrecv_kernels.make_key`); the `_Recv`
on the destination device with the same `tensor_name`, `send_device`,
`send_device_incarnation` and `recv_device` produces it.  The attrs are
TensorFlow's, so partition GraphDefs read as TensorFlow's do.  `_HostSend` and
`_HostRecv` are the same pair for tensors that stay in host memory on an
accelerator (shapes, indices); between CPU devices they are identical to the plain
pair.

`_Send` is declared a control-flow op: a dead value (an untaken `cond` branch) must
still be sent, so that the receiving device learns the branch is dead.  Partitioning
gives the ops of graphs without control flow a copy of the declaration without that
flag (`SEND_NO_DEAD_VALUES`), since no value there can be dead, so that those
partitions keep the executor's plain path; in graphs with control flow its Recvs get
the flag (`RECV_MAY_BE_DEAD`), as what they receive may be dead.

These ops are built by the partitioner, not by user programs; `send` and `recv`
exist for tests and for hand-built transfers (both ends in one graph).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import OpDef, op_def

__all__: list[str] = []

_ADDRESS = [
    "tensor_name: string",
    "send_device: string",
    "send_device_incarnation: int",
    "recv_device: string",
    "client_terminated: bool = false",
]


def _no_outputs(op: Operation) -> list[Any]:
    return []


def _unknown(op: Operation) -> list[Any]:
    return [None]


SEND = op_def(
    "_Send", inputs=["tensor: T"], attrs=["T: type", *_ADDRESS], shape_fn=_no_outputs,
    stateful=True, control_flow=True,
    doc="Sends `tensor` from send_device to recv_device under its rendezvous key.",
)
RECV = op_def(
    "_Recv", outputs=["tensor: tensor_type"], attrs=["tensor_type: type", *_ADDRESS],
    shape_fn=_unknown, stateful=True,
    doc="Receives the tensor sent under its rendezvous key.",
)
HOST_SEND = op_def(
    "_HostSend", inputs=["tensor: T"], attrs=["T: type", *_ADDRESS], shape_fn=_no_outputs,
    stateful=True, control_flow=True,
    doc="`_Send` of a tensor kept in host memory.",
)
HOST_RECV = op_def(
    "_HostRecv", outputs=["tensor: tensor_type"], attrs=["tensor_type: type", *_ADDRESS],
    shape_fn=_unknown, stateful=True,
    doc="`_Recv` of a tensor kept in host memory.",
)

# The declaration for graphs where no value can be dead (see the module docstring).
SEND_NO_DEAD_VALUES: OpDef = dataclasses.replace(SEND, is_control_flow=False)
# A Recv in a graph with control flow may produce DEAD: flagged so that its partition
# runs on the executor's dead-aware path even if no other op there is control flow.
RECV_MAY_BE_DEAD: OpDef = dataclasses.replace(RECV, is_control_flow=True)

for _t in ("_Send", "_Recv", "_HostSend", "_HostRecv"):
    not_differentiable(_t)


def send(
    tensor: Any, tensor_name: str, send_device: str, send_device_incarnation: int,
    recv_device: str, client_terminated: bool = False, name: str | None = None,
) -> Operation:
    """Sends `tensor` to the `recv` with the same address in this step.

    Args:
      tensor: the tensor to send.
      tensor_name: the transfer's name (part of the rendezvous key).
      send_device, send_device_incarnation, recv_device: the rest of the key.
      client_terminated: TensorFlow's flag for transfers to or from the client.
      name: the op's name (default "Send").

    Returns:
      The `_Send` operation.
    """
    return apply_op(
        "_Send", tensor=tensor, tensor_name=tensor_name, send_device=send_device,
        send_device_incarnation=int(send_device_incarnation), recv_device=recv_device,
        client_terminated=bool(client_terminated), name=name or "Send",
    )


def recv(
    tensor_type: Any, tensor_name: str, send_device: str, send_device_incarnation: int,
    recv_device: str, client_terminated: bool = False, name: str | None = None,
) -> Tensor:
    """The tensor the matching `send` delivers in this step (waits for it without
    holding an executor thread).

    Args:
      tensor_type: the dtype of the tensor.
      tensor_name, send_device, send_device_incarnation, recv_device: the address,
        as given to `send`.
      client_terminated: TensorFlow's flag for transfers to or from the client.
      name: the op's name (default "Recv").

    Returns:
      The received tensor (shape unknown at graph-building time).
    """
    return apply_op(
        "_Recv", tensor_type=dtypes.as_dtype(tensor_type), tensor_name=tensor_name,
        send_device=send_device, send_device_incarnation=int(send_device_incarnation),
        recv_device=recv_device, client_terminated=bool(client_terminated), name=name or "Recv",
    )
