"""User-defined gradients: `RegisterGradient`, `NotDifferentiable`, `custom_gradient`.

- `@tf.RegisterGradient("MySquare")` registers a gradient function under a name; with
  `g.gradient_override_map({"Square": "MySquare"})` the Square ops built in that block
  carry `_gradient_op_type="MySquare"` and `gradients` uses that function for them.
- `tf.NotDifferentiable("MyOp")` (also `tf.no_gradient`) declares that no gradient
  flows through an op type.
- `@tf.custom_gradient` wraps `f(*x) -> (y, grad_fn)`: y is passed through an
  IdentityN op whose gradient is overridden by a function registered under a fresh
  name (`CustomGradient-N`) that calls `grad_fn(*dys)` -- TensorFlow's graph-mode
  construction, so the forward values are untouched and only the backward pass
  changes.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable
from typing import Any

from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation
from flowlab.ops import gradient_registry
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.op_def import op_def

__all__ = ["RegisterGradient", "NotDifferentiable", "no_gradient", "custom_gradient"]


class RegisterGradient:
    """Decorator registering a gradient function for an op type (or override name).

        @tf.RegisterGradient("ClipGrad")
        def _clip_grad(op, grad):
            return [tf.clip_by_value(grad, -1.0, 1.0)]
    """

    def __init__(self, op_type: str) -> None:
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, f: Callable[..., Any]) -> Callable[..., Any]:
        try:
            gradient_registry.gradient(self._op_type)(f)
        except ValueError as e:
            raise KeyError(f"Registering two gradient with name '{self._op_type}'! ({e})") from None
        return f


def NotDifferentiable(op_type: str) -> None:  # noqa: N802 - TensorFlow's name
    """Declare that no gradient flows through ops of `op_type`."""
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")
    try:
        gradient_registry.not_differentiable(op_type)
    except ValueError as e:
        raise KeyError(f"Registering two gradient with name '{op_type}'! ({e})") from None


no_gradient = NotDifferentiable


# --- IdentityN: the carrier of custom gradients ---------------------------------------
_IDN = op_def("IdentityN", inputs=["input: T"], outputs=["output: T"], attrs=["T: list(type)"],
              shape_fn=lambda op: [t.shape for t in op.inputs],
              doc="Its inputs, unchanged (several at once).")


@gradient_registry.gradient("IdentityN")
def _identity_n_grad(op: Operation, *grads: Any) -> Any:
    return list(grads)


_counter = itertools.count()


def custom_gradient(f: Callable[..., Any] | None = None) -> Any:
    """Decorator: `f(*x)` returns `(y, grad_fn)`; gradients of y use `grad_fn(*dy)`.

        @tf.custom_gradient
        def log1pexp(x):
            e = tf.exp(x)
            def grad(dy):
                return dy * (1 - 1 / (1 + e))
            return tf.log(1 + e), grad
    """
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def decorated(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise ValueError(
                "The custom_gradient decorator currently supports keywords arguments only "
                "when eager execution is enabled."
            )
        args = [convert_to_tensor(a) for a in args]
        result, grad_fn = f(*args)
        flat = list(result) if isinstance(result, (list, tuple)) else [result]
        flat = [convert_to_tensor(r) for r in flat]
        params = inspect.signature(grad_fn).parameters
        takes_variables = "variables" in params or any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
        )
        variables = _variables_used(flat, args)
        if variables and not takes_variables:
            raise TypeError(
                "@tf.custom_gradient grad_fn must accept keyword argument 'variables', since "
                f"function uses variables: {[v.name for v in variables]}"
            )
        name = f"CustomGradient-{next(_counter)}"
        n_out, n_in = len(flat), len(args)

        def _grad(op: Operation, *dys: Any) -> Any:
            dys = dys[:n_out]
            if takes_variables:
                input_grads, variable_grads = grad_fn(*dys, variables=variables)
                variable_grads = list(variable_grads or [])
                if len(variable_grads) != len(variables):
                    raise ValueError(
                        f"Must return gradient for each variable from @custom_gradient grad_fn "
                        f"({len(variables)} variables, {len(variable_grads)} gradients)."
                    )
            else:
                input_grads, variable_grads = grad_fn(*dys), []
            input_grads = list(input_grads) if isinstance(input_grads, (list, tuple)) else [input_grads]
            if len(input_grads) != n_in:
                raise ValueError(
                    f"custom_gradient function expected to return {n_in} gradients, "
                    f"but returned {len(input_grads)} instead."
                )
            return [None] * n_out + input_grads + variable_grads

        gradient_registry.gradient(name)(_grad)
        g = get_default_graph()
        with g.gradient_override_map({"IdentityN": name}):
            outs = apply_op("IdentityN", input=flat + list(args) + [v.value() for v in variables],
                            name="IdentityN")
        outs = outs[:n_out]
        for o, r in zip(outs, flat):
            o.set_shape(r.shape)
        if isinstance(result, (list, tuple)):
            return type(result)(outs) if isinstance(result, list) else tuple(outs)
        return outs[0]

    return decorated


def _variables_used(outputs: list[Any], inputs: list[Any]) -> list[Any]:
    """The graph's variables that `outputs` depend on without passing through `inputs`."""
    g = get_default_graph()
    by_op = {}
    for key in ("variables", "local_variables"):
        for v in g.get_collection(key):
            op = getattr(v, "op", None)
            if op is not None:
                by_op.setdefault(op, v)
    if not by_op:
        return []
    stop = {t.op for t in inputs}
    seen: set[Operation] = set()
    stack = [t.op for t in outputs]
    found = []
    while stack:
        op = stack.pop()
        if op in seen or op in stop:
            continue
        seen.add(op)
        if op in by_op:
            found.append(by_op[op])
        stack.extend(t.op for t in op.inputs)
    return sorted(found, key=lambda v: v.name)
