"""Kernels of the stack ops: the handle value *is* the stack, made fresh per step.

`StackV2` returns a new `StepStack` object each time it runs; that object flows as
the handle value through Enter and Switch to the push and pop kernels.  So a stack
lives exactly as long as the step that made it, and nothing is registered in a
resource manager.  Pushes and pops are ordered by the graph (the gradient code adds
control edges), so a plain list is enough; elements are stored without copying
because kernels never mutate values.
"""

from __future__ import annotations

from typing import Any

from flowlab import errors
from flowlab.kernels.registry import kernel


class StepStack:
    """A LIFO list of values with a size limit and a closed flag."""

    __slots__ = ("name", "max_size", "items", "closed")

    def __init__(self, name: str, max_size: int) -> None:
        self.name = name
        self.max_size = max_size
        self.items: list[Any] = []
        self.closed = False

    def __repr__(self) -> str:
        return f"<StepStack {self.name!r} size={len(self.items)}>"


def _check(stack: Any) -> StepStack:
    if not isinstance(stack, StepStack):
        raise errors.InvalidArgumentError(None, None, f"Expected a stack handle, got {type(stack).__name__}")
    if stack.closed:
        raise errors.InvalidArgumentError(None, None, f"Stack[{stack.name}] has already been closed.")
    return stack


@kernel("StackV2", host_memory=("max_size", "handle"))
def stack_v2(ctx: Any, max_size: Any) -> StepStack:
    return StepStack(ctx.attrs["stack_name"] or ctx.name, int(max_size))


@kernel("StackPushV2", host_memory=("handle",))
def stack_push_v2(ctx: Any, handle: Any, elem: Any) -> Any:
    s = _check(handle)
    if 0 <= s.max_size <= len(s.items):
        raise errors.InvalidArgumentError(
            None, None, f"Stack[{s.name}] overflowed its max_size ({s.max_size})"
        )
    s.items.append(elem)
    return elem


@kernel("StackPopV2", host_memory=("handle",))
def stack_pop_v2(ctx: Any, handle: Any) -> Any:
    s = _check(handle)
    if not s.items:
        raise errors.InvalidArgumentError(None, None, f"Stack[{s.name}] is empty.")
    return s.items.pop()


@kernel("StackCloseV2", host_memory=("handle",))
def stack_close_v2(ctx: Any, handle: Any) -> None:
    if isinstance(handle, StepStack):
        handle.closed = True
        handle.items.clear()
    return None
