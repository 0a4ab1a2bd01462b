"""Graph plumbing ops: Placeholder, PlaceholderWithDefault, Identity, NoOp, and the
`group` / `tuple` / `identity` builders made from them."""

from __future__ import annotations

import builtins
from contextlib import nullcontext as _nullcontext
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_evaluator, constant_value
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = [
    "placeholder", "placeholder_with_default", "identity", "no_op", "group", "tuple",
    "stop_gradient",
]


def _same_as_input(op: Operation) -> list[TensorShape]:
    return [op.inputs[0].shape]


op_def(
    "Placeholder", outputs=["output: dtype"], attrs=["dtype: type", "shape: shape = unknown"],
    shape_fn=lambda op: [TensorShape(op.get_attr("shape"))],
    doc="A value that must be fed.",
)
op_def(
    "PlaceholderWithDefault", inputs=["input: dtype"], outputs=["output: dtype"],
    attrs=["dtype: type", "shape: shape"],
    shape_fn=lambda op: [TensorShape(op.get_attr("shape"))],
    doc="The fed value, or `input` when nothing is fed.",
)
op_def("Identity", inputs=["input: T"], outputs=["output: T"], attrs=["T: type"], shape_fn=_same_as_input)
op_def("NoOp", doc="Does nothing; a target for control dependencies.")
op_def(
    "StopGradient", inputs=["input: T"], outputs=["output: T"], attrs=["T: type"],
    shape_fn=_same_as_input, doc="The input; no gradient flows back through it.",
)
not_differentiable("StopGradient")


@constant_evaluator("StopGradient")
def _stop_gradient_value(op: Operation) -> Any:
    return constant_value(op.inputs[0])


@constant_evaluator("PlaceholderWithDefault")
def _placeholder_with_default_value(op: Operation) -> Any:
    return None  # it may be fed: never static


def placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> Tensor:
    """A tensor that must be fed (`tf.placeholder`)."""
    dt = dtypes.as_dtype(dtype)
    s = None if shape is None else as_shape(shape).as_tuple()
    return apply_op("Placeholder", dtype=dt, shape=s, name=name or "Placeholder")


def placeholder_with_default(input: Any, shape: Any, name: str | None = None) -> Tensor:
    """`input` unless fed; the fed value must match `shape`."""
    t = convert_to_tensor(input)
    s = as_shape(shape)
    if not s.is_compatible_with(t.shape):
        raise ValueError(
            f"Shapes must be compatible for PlaceholderWithDefault: the default has shape "
            f"{t.shape}, the requested shape is {s}"
        )
    return apply_op(
        "PlaceholderWithDefault", input=t, dtype=t.dtype, shape=s.as_tuple(),
        name=name or "PlaceholderWithDefault",
    )


def identity(input: Any, name: str | None = None) -> Tensor:
    """The same value (reads a variable's current value when given one)."""
    if hasattr(input, "_as_graph_element") and hasattr(input, "value") and not isinstance(input, Tensor):
        input = input.value()
    t = convert_to_tensor(input)
    return apply_op("Identity", input=t, name=name or "Identity")


def stop_gradient(input: Any, name: str | None = None) -> Tensor:
    """The same value; gradients do not flow back through it (`tf.stop_gradient`)."""
    return apply_op("StopGradient", input=input, name=name or "StopGradient")


def no_op(name: str | None = None) -> Operation:
    return apply_op("NoOp", name=name or "NoOp")


def group(*inputs: Any, **kwargs: Any) -> Operation:
    """An op that runs after all `inputs` (ops or tensors); it has no outputs."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"Unknown keyword arguments: {list(kwargs)}")
    deps = _flatten(inputs)
    g = get_default_graph()
    with g.name_scope(name or "group_deps") as scope:
        # As TensorFlow's control_flow_ops.group: one NoOp per device of the inputs
        # (on that device), and the root over them when there are several devices.
        # A name ending in "/" is the scope's own (unique) name: "group_deps".
        by_device: dict[str, list[Any]] = {}
        for d in deps:
            by_device.setdefault(getattr(d, "device", "") or "", []).append(d)
        if len(by_device) <= 1:
            dev = next(iter(by_device), "")
            with g.control_dependencies(deps), g.device(dev or None) if dev else _nullcontext():
                return no_op(name=scope)
        per_device = []
        for dev in sorted(by_device):
            with g.control_dependencies(by_device[dev]), g.device(dev) if dev else _nullcontext():
                per_device.append(no_op())
        with g.control_dependencies(per_device):
            return no_op(name=scope)


def with_dependencies(dependencies: list[Any], output: Tensor, name: str | None = None) -> Tensor:
    """`output` through an Identity ("control_dependency") that runs after `dependencies`,
    colocated with `output` (TensorFlow's control_flow_ops.with_dependencies; like it, the
    Identity is made even when there is nothing to wait for)."""
    g = output.graph
    with g.name_scope(name or "control_dependency") as scope:
        with g.colocate_with(output.op), g.control_dependencies(dependencies):
            return identity(output, name=scope)


def tuple(tensors: Any, name: str | None = None, control_inputs: Any = None) -> list[Any]:  # noqa: A001
    """The same tensors, each available only after all of them are computed."""
    g = get_default_graph()
    ts = [None if t is None else convert_to_tensor(t) if not isinstance(t, Operation) else t for t in tensors]
    deps = [t for t in ts if t is not None]
    if control_inputs:
        deps += _flatten(control_inputs)
    with g.name_scope(name or "tuple"):
        gate = group(*deps)
        out: list[Any] = []
        with g.control_dependencies([gate]):
            for t in ts:
                if t is None:
                    out.append(None)
                elif isinstance(t, Operation):
                    out.append(group(t, name="control_dependency"))
                else:
                    out.append(identity(t, name="control_dependency"))
    return out


def _flatten(xs: Any) -> list[Any]:
    out: list[Any] = []
    for x in xs:
        if isinstance(x, (list, builtins.tuple)):
            out.extend(_flatten(x))
        elif x is not None:
            out.append(x)
    return out
