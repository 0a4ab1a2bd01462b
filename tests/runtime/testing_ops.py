"""Small ops that exist only for runtime tests: asynchronous, blocking, dead-value
producing and failing kernels, so the executor's paths are tested without depending
on the op families of later issues."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import DEAD, kernel
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def


class Concurrency:
    """Counts kernels in flight at once (tests assert overlap without timing)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.peak = 0

    def enter(self) -> None:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)

    def exit(self) -> None:
        with self.lock:
            self.active -= 1

    def reset(self) -> None:
        with self.lock:
            self.active = self.peak = 0


in_flight = Concurrency()


def _same(op: Any) -> list[Any]:
    return [op.inputs[0].shape]


op_def("TestingPlus", inputs=["x: T", "y: T"], outputs=["z: T"], attrs=["T: numeric"],
       shape_fn=lambda op: [op.inputs[0].shape])
op_def("TestingAsyncCopy", inputs=["x: T"], outputs=["y: T"], attrs=["T: type", "delay: float = 0.01"],
       shape_fn=_same)
op_def("TestingBlock", inputs=["x: T"], outputs=["y: T"], attrs=["T: type"], shape_fn=_same)
op_def("TestingFail", inputs=["x: T"], outputs=["y: T"], attrs=["T: type", "message: string = 'boom'"],
       shape_fn=_same)
op_def("TestingSwitch", inputs=["data: T", "pred: bool"], outputs=["output_false: T", "output_true: T"],
       attrs=["T: type"], shape_fn=lambda op: [op.inputs[0].shape] * 2, control_flow=True)
op_def("TestingMerge", inputs=["inputs: N * T"], outputs=["output: T"], attrs=["T: type", "N: int >= 1"],
       shape_fn=lambda op: [op.inputs[0].shape], control_flow=True)
# Stateful: its kernel counts kernels in flight (a side effect), so the graph
# optimizer must not merge two copies of the same input.
op_def("TestingSlowCopy", inputs=["x: T"], outputs=["y: T"], attrs=["T: type", "seconds: float = 0.1"],
       shape_fn=_same, stateful=True)
for _t in ("TestingSlowCopy", "TestingPlus", "TestingAsyncCopy", "TestingBlock", "TestingFail", "TestingSwitch", "TestingMerge"):
    not_differentiable(_t)


@kernel("TestingPlus")
def _plus(ctx: Any, x: Any, y: Any) -> Any:
    return x + y


@kernel("TestingAsyncCopy", asynchronous=True)
def _async_copy(ctx: Any, step: Any, done: Any, x: Any) -> None:
    in_flight.enter()

    def finish() -> None:
        in_flight.exit()
        done(np.array(x, copy=True))

    threading.Timer(ctx.attrs["delay"], finish).start()


@kernel("TestingBlock", asynchronous=True)
def _block(ctx: Any, step: Any, done: Any, x: Any) -> None:
    """Waits until the step is cancelled (a stand-in for a Recv that never arrives)."""
    token = step.get_cancellation().register(
        lambda: done(error=errors.CancelledError(None, None, "TestingBlock cancelled"))
    )
    if token is None:
        done(error=errors.CancelledError(None, None, "TestingBlock cancelled"))


@kernel("TestingSlowCopy", expensive=True)
def _slow_copy(ctx: Any, x: Any) -> Any:
    """Stands for a large BLAS call: busy without holding the GIL."""
    import time

    in_flight.enter()
    try:
        time.sleep(ctx.attrs["seconds"])
    finally:
        in_flight.exit()
    return np.array(x, copy=True)


@kernel("TestingFail")
def _fail(ctx: Any, x: Any) -> Any:
    raise ValueError(ctx.attrs["message"])


@kernel("TestingSwitch")
def _switch(ctx: Any, data: Any, pred: Any) -> Any:
    if data is DEAD or pred is DEAD:
        return DEAD, DEAD
    return (DEAD, data) if bool(pred) else (data, DEAD)


@kernel("TestingMerge")
def _merge(ctx: Any, *inputs: Any) -> Any:
    for v in inputs:
        if v is not DEAD:
            return v
    return DEAD


def plus(x: Any, y: Any, name: str | None = None) -> Any:
    return apply_op("TestingPlus", x=x, y=y, name=name or "TestingPlus")


def async_copy(x: Any, delay: float = 0.01, name: str | None = None) -> Any:
    return apply_op("TestingAsyncCopy", x=x, delay=delay, name=name or "TestingAsyncCopy")


def slow_copy(x: Any, seconds: float = 0.1, name: str | None = None) -> Any:
    return apply_op("TestingSlowCopy", x=x, seconds=seconds, name=name or "TestingSlowCopy")


def block(x: Any, name: str | None = None) -> Any:
    return apply_op("TestingBlock", x=x, name=name or "TestingBlock")


def fail(x: Any, message: str = "boom", name: str | None = None) -> Any:
    return apply_op("TestingFail", x=x, message=message, name=name or "TestingFail")


def switch(data: Any, pred: Any, name: str | None = None) -> Any:
    return apply_op("TestingSwitch", data=data, pred=pred, name=name or "TestingSwitch")


def merge(inputs: Any, name: str | None = None) -> Any:
    return apply_op("TestingMerge", inputs=inputs, name=name or "TestingMerge")


def run_then_close(session: Any, fetch: Any, wait: float = 0.2) -> list[BaseException]:
    """Run `fetch` on a thread, close `session` once that step is running plus `wait`
    seconds, and return what the run raised; asserts the run ended (a step must not
    outlive its session).  Waiting for the step itself, not for a fixed time, keeps a
    slow or loaded machine from closing the session before the run began."""
    import time

    caught: list[BaseException] = []

    def run() -> None:
        try:
            session.run(fetch)
        except Exception as e:  # noqa: BLE001 - the caller checks the class
            caught.append(e)

    th = threading.Thread(target=run)
    th.start()
    deadline = time.monotonic() + 60
    while not session._task.status()["running_steps"] and th.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert session._task.status()["running_steps"], "the step never started"
    time.sleep(wait)
    session.close()
    th.join(10)
    assert not th.is_alive()
    return caught
