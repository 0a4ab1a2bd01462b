"""Kernels of the control-flow primitives.

Switch and Merge decide deadness; Enter, Exit, NextIteration and LoopCond only
forward their input: which frame and iteration the value belongs to is the
executor's business (`flowlab.runtime.task.frames`), done by op type.  Every kernel here
sees `DEAD` inputs (the ops are declared control_flow) and passes death on.
"""

from __future__ import annotations

from typing import Any

from flowlab.kernels.registry import DEAD, kernel


def _switch(ctx: Any, data: Any, pred: Any) -> tuple[Any, Any]:
    if data is DEAD or pred is DEAD:
        return DEAD, DEAD
    return (DEAD, data) if pred else (data, DEAD)


def _merge(ctx: Any, *inputs: Any) -> tuple[Any, Any]:
    for i, x in enumerate(inputs):
        if x is not DEAD and x is not None:
            return x, _INDEX[i] if i < len(_INDEX) else _index(i)
    return DEAD, DEAD


def _index(i: int) -> Any:
    import numpy as np

    return np.int32(i)


_INDEX = tuple(_index(i) for i in range(8))


def _forward(ctx: Any, x: Any) -> Any:
    return x


kernel("Switch", host_memory=("pred",))(_switch)
kernel("RefSwitch", host_memory=("pred",))(_switch)
kernel("Merge", host_memory=("value_index",))(_merge)
kernel("RefMerge", host_memory=("value_index",))(_merge)
for _t in ("Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration"):
    kernel(_t)(_forward)
kernel("LoopCond", host_memory=("input", "output"))(_forward)


@kernel("ControlTrigger")
def control_trigger(ctx: Any) -> None:
    return None
