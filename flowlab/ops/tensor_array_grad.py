"""Gradients of the TensorArray ops.

A forward array's gradient lives in a gradient array (`TensorArray.grad(source)`),
one per gradient source: the outermost "gradients" name scope of the gradient tensor,
so that two `tf.gradients` calls over one array never mix their sums.  Reads become
writes into the gradient array, writes become reads from it, gather <-> scatter,
concat <-> split.  Writes into a gradient array add up, so an element read twice
forward gets the sum of both gradients; an element that got no gradient reads as
zeros.

The flow is what carries the dependency backwards: the gradient of a read returns
the gradient array's flow after its write as the gradient of the read's flow input,
and the gradient of a write takes it as its incoming gradient.  The `write_barrier`
identities make the gradient array's creation wait for the last forward write.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Operation
from flowlab.ops.core_ops import identity
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.tensor_array_ops import TensorArray


def _grad_source(t: Any) -> str:
    """The gradient scope of `t`'s name: "gradients" or "gradients_1" (or a nested
    "outer/gradients")."""
    tokens = t.name.split("/")
    pos = [i for i, x in enumerate(tokens) if x.startswith("gradients")]
    if not pos:
        raise ValueError(
            f"Expected op/tensor name to start with gradients (excluding scope), got: {t.name}")
    return "/".join(tokens[: pos[-1] + 1])


def _grad_array(op: Operation, dtype: Any, flow: Any, source: str) -> TensorArray:
    ta = TensorArray(dtype, handle=op.inputs[0], flow=flow)
    return ta.grad(source=source, flow=flow)


def _after(op: Operation, flow: Any) -> Any:
    """`flow`, once the forward op's output flow exists (all forward writes done)."""
    g = op.graph
    flow_out = identity(op.outputs[0], name="flow_out")
    with g.control_dependencies([flow_out]):
        return identity(flow, name="write_barrier")


@gradient("TensorArrayReadV3")
def _read_grad(op: Operation, grad: Any) -> list[Any]:
    index, flow = op.inputs[1], op.inputs[2]
    g = _grad_array(op, op.get_attr("dtype"), flow, _grad_source(grad))
    return [None, None, g.write(index, grad).flow]


@gradient("TensorArrayWriteV3")
def _write_grad(op: Operation, flow: Any) -> list[Any]:
    index = op.inputs[1]
    flow = _after(op, flow)
    g = _grad_array(op, op.get_attr("T"), flow, _grad_source(flow))
    return [None, None, g.read(index), flow]


@gradient("TensorArrayGatherV3")
def _gather_grad(op: Operation, grad: Any) -> list[Any]:
    indices, flow = op.inputs[1], op.inputs[2]
    g = _grad_array(op, op.get_attr("dtype"), flow, _grad_source(grad))
    return [None, None, g.scatter(indices, grad).flow]


@gradient("TensorArrayScatterV3")
def _scatter_grad(op: Operation, flow: Any) -> list[Any]:
    indices = op.inputs[1]
    flow = _after(op, flow)
    g = _grad_array(op, op.get_attr("T"), flow, _grad_source(flow))
    return [None, None, g.gather(indices), flow]


@gradient("TensorArrayConcatV3")
def _concat_grad(op: Operation, grad: Any, unused_lengths_grad: Any) -> list[Any]:
    flow = op.inputs[1]
    g = _grad_array(op, op.get_attr("dtype"), flow, _grad_source(grad))
    return [None, g.split(grad, lengths=op.outputs[1]).flow]


@gradient("TensorArraySplitV3")
def _split_grad(op: Operation, flow: Any) -> list[Any]:
    flow = _after(op, flow)
    g = _grad_array(op, op.get_attr("T"), flow, _grad_source(flow))
    return [None, g.concat(), None, flow]
