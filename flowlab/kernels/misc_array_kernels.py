"""Kernels of GuaranteeConst and ParallelConcat (flowlab.ops.misc_array_ops)."""

from __future__ import annotations

from typing import Any

from flowlab.kernels.registry import kernel


@kernel("GuaranteeConst")
def guarantee_const(ctx: Any, input: Any) -> Any:  # noqa: A002
    return input


@kernel("ParallelConcat")
def parallel_concat(ctx: Any, *values: Any) -> Any:
    return ctx.xp.concatenate(values, axis=0)
