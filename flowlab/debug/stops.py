"""The Stepper's parts that are not driving: why a command stopped (`Stop`),
breakpoints, tensor watches, the NaN/Inf check, and how names and values are read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.resources import VariableState
from flowlab.runtime.task.fp_errors import enter_quiet, exit_quiet

__all__ = ["Stop", "Breakpoint", "Watch", "has_nan_or_inf"]


@dataclass(frozen=True)
class Stop:
    """Why a command stopped: `kind` is one of "start", "step", "breakpoint", "watch",
    "nan_or_inf", "run_to", "finished", "error", "aborted"; `op` the op it concerns
    (the op about to run for a breakpoint, the op that ran otherwise)."""

    kind: str
    op: str | None
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass
class Breakpoint:
    id: int
    name: str | None
    op_type: str | None
    when: Callable[[Any], bool] | None

    def matches(self, op: Any) -> bool:
        if self.name is not None:
            if self.name.endswith("/"):
                if not op.name.startswith(self.name):
                    return False
            elif op.name != self.name:
                return False
        if self.op_type is not None and op.type != self.op_type:
            return False
        if self.when is not None and not self.when(op):
            return False
        return True

    def __str__(self) -> str:
        parts = []
        if self.name is not None:
            parts.append(f"scope '{self.name}'" if self.name.endswith("/") else f"op '{self.name}'")
        if self.op_type is not None:
            parts.append(f"type {self.op_type}")
        if self.when is not None:
            parts.append(f"when {getattr(self.when, '__name__', 'predicate')}")
        return f"#{self.id} " + " and ".join(parts)


class Watch:
    """A watched tensor: every value it took in this step (`values`, newest last), and an
    optional condition that stops the Stepper when it holds for a new value."""

    def __init__(self, tensor: str, condition: Callable[[Any], bool] | None) -> None:
        self.tensor = tensor
        self.condition = condition
        self.values: list[Any] = []

    @property
    def value(self) -> Any:
        """The latest value (None before the tensor is produced)."""
        return self.values[-1] if self.values else None

    def __repr__(self) -> str:
        cond = f", stops when {getattr(self.condition, '__name__', 'condition')}" if self.condition else ""
        return f"<Watch {self.tensor}: {len(self.values)} value(s){cond}>"


def has_nan_or_inf(value: Any) -> tuple[int, int]:
    """(number of NaNs, number of Infs) in a float or complex value; (0, 0) otherwise."""
    if isinstance(value, VariableState):
        value = value.value
    dt = getattr(value, "dtype", None)
    if dt is None or dt.kind not in "fc":
        return 0, 0
    if dt.kind == "f":
        # One pass and no temporary: a finite sum means every element is finite (an
        # overflowing sum falls through to the exact count, quietly).
        token = enter_quiet()
        try:
            if np.isfinite(np.add.reduce(value, axis=None)):
                return 0, 0
        finally:
            exit_quiet(token)
    finite = np.isfinite(value)
    if finite.all():
        return 0, 0
    nan = int(np.count_nonzero(np.isnan(value)))
    return nan, int(np.size(value)) - int(np.count_nonzero(finite)) - nan


def snapshot(v: Any) -> Any:
    """A value as the user sees it: a variable's current array; arrays copied so that
    editing them cannot change the step."""
    if isinstance(v, VariableState):
        v = v.value
    if isinstance(v, np.ndarray):
        return v.copy()
    return v


def plain(v: Any) -> Any:
    return v.value if isinstance(v, VariableState) else v


def op_name(x: Any) -> str:
    """An op's name from a name, an Operation, a Tensor or a Variable."""
    if isinstance(x, str):
        return x
    op = getattr(x, "op", None)
    return str(op.name if op is not None else x.name)


def tensor_name(x: Any) -> str:
    """"op:i" from "op:i", "op" (output 0), a Tensor or a Variable."""
    name = x if isinstance(x, str) else str(x.name)
    _, sep, idx = name.rpartition(":")
    return name if sep and idx.isdigit() else f"{name}:0"


def fed_values(graph: Any, feed_dict: Any) -> dict[str, Any]:
    """Fed tensor name -> the value as fed (in the tensor's dtype)."""
    out: dict[str, Any] = {}
    for key, value in (feed_dict or {}).items():
        if hasattr(key, "_feed_parts"):
            pairs = list(zip(key._feed_parts(), key._split_feed_value(value)))
        else:
            pairs = [(graph.as_graph_element(key, allow_tensor=True, allow_operation=False), value)]
        for t, v in pairs:
            dt = t.dtype.base_dtype
            out[t.name] = np.asarray(v, dtype=object if dt.name == "string" else dt.as_numpy_dtype)
    return out


def error_op(e: errors.OpError) -> str | None:
    op = getattr(e, "op", None)
    return getattr(op, "name", None)
