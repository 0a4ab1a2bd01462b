"""Control-flow primitives (paper section 3.4): Switch, Merge, Enter, Exit,
NextIteration, LoopCond, ControlTrigger, and their Ref variants.

These are the ops from which `cond` and `while_loop` are built; they hold no Python
callbacks.  Switch routes its input to one of two outputs by a boolean and makes the
other *dead*; deadness propagates through ordinary ops, and Merge forwards whichever
input is live.  Enter puts a value into a child frame (a loop's execution context,
named by `frame_name`), NextIteration carries a value to the next iteration of its
frame, Exit takes it out, and LoopCond's value decides whether the loop goes on.  The
executor does the frame bookkeeping by op type (`flowlab.runtime.task.frames`); the kernels
only forward values.

The builders here are the low-level ones of TensorFlow's control_flow_ops.py
(`switch`, `merge`, `_Enter`, `exit`, `_NextIteration`, `loop_cond`), under public
names.  `cond` and `while_loop` live elsewhere.  Gradients of Switch, Merge, Enter,
Exit and NextIteration are registered by the control-flow gradient module; LoopCond
and ControlTrigger have none.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = [
    "switch", "ref_switch", "merge", "ref_merge", "enter", "ref_enter", "exit",
    "ref_exit", "next_iteration", "ref_next_iteration", "loop_cond", "control_trigger",
    "CONTROL_FLOW_OP_TYPES",
]

# Op types the executor treats as frame/deadness plumbing.
CONTROL_FLOW_OP_TYPES = frozenset({
    "Switch", "RefSwitch", "Merge", "RefMerge", "Enter", "RefEnter", "Exit", "RefExit",
    "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger",
})


def _scalar_pred(shape: TensorShape, what: str) -> None:
    if shape.ndims is not None and shape.ndims != 0:
        raise ValueError(f"Shape must be rank 0 but is rank {shape.ndims} for {what}")


def _switch_shape(op: Operation) -> list[Any]:
    _scalar_pred(op.inputs[1].shape, "the predicate of Switch")
    s = op.inputs[0].shape
    return [s, s]


def _merge_shape(op: Operation) -> list[Any]:
    # TensorFlow's MergeShape: the first input's shape, dims that differ unknown,
    # unknown rank when ranks differ.
    out = op.inputs[0].shape
    if out.ndims is not None:
        dims = list(out.as_list())
        for t in op.inputs[1:]:
            s = t.shape
            if s.ndims != len(dims):
                dims = None
                break
            dims = [a if a == b else None for a, b in zip(dims, s.as_list())]
        out = TensorShape(dims)
    return [out, TensorShape([])]


def _enter_shape(op: Operation) -> list[Any]:
    # TensorFlow's Enter: unknown unless constant (the builder may copy the input's
    # shape, as `_Enter(use_input_shape=True)` does).
    return [op.inputs[0].shape if op.get_attr("is_constant") else TensorShape(None)]


def _same_shape(op: Operation) -> list[Any]:
    return [op.inputs[0].shape]


def _loop_cond_shape(op: Operation) -> list[Any]:
    _scalar_pred(op.inputs[0].shape, "the input of LoopCond")
    return [TensorShape([])]


for _ref in (False, True):
    _t = "Ref(T)" if _ref else "T"
    _p = "Ref" if _ref else ""
    _nt = "Ref(N * T)" if _ref else "N * T"
    op_def(
        f"{_p}Switch", inputs=[f"data: {_t}", "pred: bool"],
        outputs=[f"output_false: {_t}", f"output_true: {_t}"], attrs=["T: type"],
        shape_fn=_switch_shape, control_flow=True,
        doc="`data` on output_true if `pred`, else on output_false; the other is dead.",
    )
    op_def(
        f"{_p}Merge", inputs=[f"inputs: {_nt}"],
        outputs=[f"output: {_t}", "value_index: int32"], attrs=["T: type", "N: int >= 1"],
        shape_fn=_merge_shape, control_flow=True,
        doc="The one live input and its index; dead only when every input is.",
    )
    op_def(
        f"{_p}Enter", inputs=[f"data: {_t}"], outputs=[f"output: {_t}"],
        attrs=["T: type", "frame_name: string", "is_constant: bool = false",
               "parallel_iterations: int = 10"],
        shape_fn=_enter_shape, control_flow=True,
        doc="`data` in the child frame `frame_name` (every iteration's if constant).",
    )
    op_def(
        f"{_p}Exit", inputs=[f"data: {_t}"], outputs=[f"output: {_t}"], attrs=["T: type"],
        shape_fn=_same_shape, control_flow=True,
        doc="`data` in the parent frame: a loop's result.",
    )
    op_def(
        f"{_p}NextIteration", inputs=[f"data: {_t}"], outputs=[f"output: {_t}"],
        attrs=["T: type"], shape_fn=_same_shape, control_flow=True,
        doc="`data` in the next iteration of its frame.",
    )
op_def(
    "LoopCond", inputs=["input: bool"], outputs=["output: bool"],
    shape_fn=_loop_cond_shape, control_flow=True,
    doc="The loop's predicate; false ends the loop (its Switches send to the Exits).",
)
op_def(
    "ControlTrigger", control_flow=True,
    doc="Does nothing; live even when its control inputs are dead.",
)
not_differentiable("LoopCond")
not_differentiable("ControlTrigger")


def _tensor(x: Any, name: str, as_ref: bool = False) -> Tensor:
    return x if isinstance(x, Tensor) else convert_to_tensor(x, name=name, as_ref=as_ref)


def switch(data: Any, pred: Any, dtype: Any = None, name: str | None = None) -> list[Tensor]:
    """Forwards `data` to the output chosen by `pred`.

    Args:
      data: the tensor to route.
      pred: a scalar bool tensor.
      dtype: optional dtype of `data`.
      name: the op's name (default "Switch").

    Returns:
      (output_false, output_true): `data` on the taken side; the other one is dead.

    Raises:
      ValueError: `pred` is not a scalar.
    """
    if not isinstance(data, Tensor):
        data = convert_to_tensor(data, dtype=dtype, name="data")
    # As TensorFlow's `switch`: a reference is read (RefSwitch only through ref_switch).
    return apply_op("Switch", data=data, pred=_tensor(pred, "pred"), name=name or "Switch")


def ref_switch(data: Tensor, pred: Any, name: str | None = None) -> list[Tensor]:
    """Switch of a reference (a variable): both outputs are references."""
    return apply_op("RefSwitch", data=data, pred=_tensor(pred, "pred"), name=name or "RefSwitch")


def merge(inputs: Any, name: str | None = None) -> list[Tensor]:
    """Forwards the live one of `inputs` (RefMerge when all are references).

    Returns:
      (output, value_index): the live input's value and its index (int32).

    Raises:
      ValueError: `inputs` is empty.
    """
    inputs = [_tensor(x, "inputs", as_ref=True) for x in inputs]
    if not inputs:
        raise ValueError("Merge needs at least one input")
    if all(t.dtype.is_ref_dtype for t in inputs):
        return ref_merge(inputs, name=name)
    return apply_op("Merge", inputs=inputs, name=name or "Merge")


def ref_merge(inputs: Any, name: str | None = None) -> list[Tensor]:
    """Merge of references."""
    return apply_op("RefMerge", inputs=list(inputs), name=name or "RefMerge")


def enter(
    data: Any, frame_name: str, is_constant: bool = False, parallel_iterations: int = 10,
    use_ref: bool = True, use_input_shape: bool = True, name: str | None = None,
) -> Tensor:
    """Makes `data` available in the child frame `frame_name` (TensorFlow's `_Enter`).

    Args:
      data: the tensor entering the frame.
      frame_name: the frame's (loop's) unique name.
      is_constant: True for a loop invariant, visible in every iteration.
      parallel_iterations: how many iterations may run at once.
      use_ref: a reference stays a reference (RefEnter).
      use_input_shape: give the output the input's static shape.
      name: the op's name (default "Enter").
    """
    data = _tensor(data, "data", as_ref=use_ref)
    kw = dict(frame_name=frame_name, is_constant=bool(is_constant),
              parallel_iterations=int(parallel_iterations))
    if data.dtype.is_ref_dtype and use_ref:
        out = apply_op("RefEnter", data=data, name=name or "RefEnter", **kw)
    else:
        out = apply_op("Enter", data=data, name=name or "Enter", **kw)
    if use_input_shape:
        out.set_shape(data.shape)
    return out


def ref_enter(data: Tensor, frame_name: str, is_constant: bool = False,
              parallel_iterations: int = 10, name: str | None = None) -> Tensor:
    """Enter of a reference."""
    return enter(data, frame_name, is_constant, parallel_iterations, True, True, name)


def exit(data: Any, name: str | None = None) -> Tensor:  # noqa: A001 - TensorFlow's name
    """Takes `data` out of its frame to the parent frame (RefExit for a reference)."""
    data = _tensor(data, "data", as_ref=True)
    if data.dtype.is_ref_dtype:
        return ref_exit(data, name=name)
    return apply_op("Exit", data=data, name=name or "Exit")


def ref_exit(data: Tensor, name: str | None = None) -> Tensor:
    """Exit of a reference."""
    return apply_op("RefExit", data=data, name=name or "RefExit")


def next_iteration(data: Any, name: str | None = None) -> Tensor:
    """Makes `data` available to the next iteration (TensorFlow's `_NextIteration`)."""
    data = _tensor(data, "data", as_ref=True)
    if data.dtype.is_ref_dtype:
        return ref_next_iteration(data, name=name)
    return apply_op("NextIteration", data=data, name=name or "NextIteration")


def ref_next_iteration(data: Tensor, name: str | None = None) -> Tensor:
    """NextIteration of a reference."""
    return apply_op("RefNextIteration", data=data, name=name or "RefNextIteration")


def loop_cond(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The loop predicate: a scalar bool whose false value ends the loop."""
    return apply_op("LoopCond", input=convert_to_tensor(input, dtype=dtypes.bool),
                    name=name or "LoopCond")


def control_trigger(name: str | None = None) -> Operation:
    """An op that does nothing and is never dead (a scheduling point)."""
    return apply_op("ControlTrigger", name=name or "ControlTrigger")
