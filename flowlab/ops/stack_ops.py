"""Stacks (StackV2, StackPushV2, StackPopV2, StackCloseV2): per-step LIFO storage.

The gradient of a while loop needs, in its backward loop, the forward values of the
same iteration in reverse order (backpropagation through time, paper section 4.1 and
3.4).  The forward loop pushes each value it will need onto a stack, one push per
iteration; the backward loop pops them.  A stack lives for one step: `StackV2` makes a
new, empty one each time it runs, and its handle (a `resource` value) is what flows
to the push and pop ops, so concurrent steps never share a stack.

Kernels: flowlab/kernels/stack_kernels.py.  None of these ops is differentiable.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__: list[str] = []


def _scalar_handle(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    if s.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {s.ndims} for the stack's max_size")
    return [TensorShape([])]


op_def("StackV2", inputs=["max_size: int32"], outputs=["handle: resource"],
       attrs=["elem_type: type", "stack_name: string = ''"], shape_fn=_scalar_handle,
       stateful=True, doc="A new empty stack for this step (max_size < 0: unbounded).")
op_def("StackPushV2", inputs=["handle: resource", "elem: T"], outputs=["output: T"],
       attrs=["T: type", "swap_memory: bool = false"],
       shape_fn=lambda op: [op.inputs[1].shape], stateful=True,
       doc="Push `elem`; outputs it.")
op_def("StackPopV2", inputs=["handle: resource"], outputs=["elem: elem_type"],
       attrs=["elem_type: type"], shape_fn=lambda op: [TensorShape(None)], stateful=True,
       doc="Pop the most recently pushed element.")
op_def("StackCloseV2", inputs=["handle: resource"], stateful=True, doc="Close the stack.")
for _t in ("StackV2", "StackPushV2", "StackPopV2", "StackCloseV2"):
    not_differentiable(_t)


def stack_v2(max_size: Any, elem_type: Any, stack_name: str = "", name: str | None = None) -> Tensor:
    """A new stack of `elem_type` elements; returns its handle.

    Args:
      max_size: int32 scalar; pushes beyond it fail (negative: unbounded).
      elem_type: the dtype of the elements.
      stack_name: a name shown in error messages.
      name: the op's name (default "StackV2").
    """
    return apply_op("StackV2", max_size=max_size, elem_type=dtypes.as_dtype(elem_type),
                    stack_name=stack_name, name=name or "StackV2")


def stack_push_v2(handle: Any, elem: Any, swap_memory: bool = False, name: str | None = None) -> Tensor:
    """Push `elem` on the stack `handle`; returns `elem`."""
    return apply_op("StackPushV2", handle=handle, elem=elem, swap_memory=swap_memory,
                    name=name or "StackPushV2")


def stack_pop_v2(handle: Any, elem_type: Any, name: str | None = None) -> Tensor:
    """Pop the top element of the stack `handle` (InvalidArgumentError when empty)."""
    return apply_op("StackPopV2", handle=handle, elem_type=dtypes.as_dtype(elem_type),
                    name=name or "StackPopV2")


def stack_close_v2(handle: Any, name: str | None = None) -> Operation:
    """Close the stack `handle`; later pushes and pops fail."""
    return apply_op("StackCloseV2", handle=handle, name=name or "StackCloseV2")
