"""Kernels of the graph plumbing ops (Placeholder, Identity, NoOp)."""

from __future__ import annotations

from typing import Any

from flowlab import errors
from flowlab.kernels.registry import kernel


@kernel("Placeholder")
def placeholder(ctx: Any) -> Any:
    # Only runs when the placeholder was not fed (a fed tensor cuts the graph).
    shape = ctx.attrs.get("shape")
    dims = "<unknown>" if shape is None else "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"
    raise errors.InvalidArgumentError(
        None, ctx.op,
        f"You must feed a value for placeholder tensor '{ctx.name}' with dtype "
        f"{ctx.attrs['dtype'].name} and shape {dims}",
    )


@kernel("PlaceholderWithDefault")
def placeholder_with_default(ctx: Any, x: Any) -> Any:
    return x


@kernel("Identity")
def identity(ctx: Any, x: Any) -> Any:
    return x


@kernel("StopGradient")
def stop_gradient(ctx: Any, x: Any) -> Any:
    return x


@kernel("NoOp")
def no_op(ctx: Any) -> None:
    return None


@kernel("Const")
def const(ctx: Any) -> Any:
    # The stored array is read-only, so handing it out is safe (fetches copy it);
    # 0-d values flow as NumPy scalars (cheap arithmetic), as everywhere in a step.
    v = ctx.attrs["value"]
    return v[()] if v.ndim == 0 else v
