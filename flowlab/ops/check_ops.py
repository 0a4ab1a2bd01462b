"""Run-time checks: Assert, CheckNumerics, Print, and TensorFlow's assert_* helpers.

`Assert` and `Print` are stateful ops whose kernels format their data tensors the way
TensorFlow's `Tensor::SummarizeValue` does ("[[1 2 3...]...]"), so a failed assertion
reads as in TensorFlow: "assertion failed: [msg] [x (x:0) = ] [1 -1]".  As in
TensorFlow, `tf.Assert` guards the Assert op with a cond ("AssertGuard") unless every
data tensor is a string or int32, and the assert_* helpers fail at build time when both
sides are statically known (InvalidArgumentError, or ValueError/TypeError for ranks
and dtypes).  CheckNumerics raises on NaN/Inf; its gradient is CheckNumerics of the
gradient, as TensorFlow's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops, core_ops, math_ops
from flowlab.ops import control_flow_context as cfc
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_value
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.op_def import op_def

__all__ = [
    "Assert", "Print", "check_numerics", "add_check_numerics_ops", "verify_tensor_all_finite",
    "assert_equal", "assert_none_equal", "assert_less", "assert_less_equal", "assert_greater",
    "assert_greater_equal", "assert_negative", "assert_positive", "assert_non_negative",
    "assert_non_positive", "assert_rank", "assert_type", "assert_scalar",
]

op_def(
    "Assert", inputs=["condition: bool", "data: T"], attrs=["T: list(type)", "summarize: int = 3"],
    shape_fn=lambda op: [], stateful=True,
    doc="Raises InvalidArgumentError listing `data` when `condition` is false.",
)
op_def(
    "CheckNumerics", inputs=["tensor: T"], outputs=["output: T"],
    attrs=["T: {float16, float32, float64}", "message: string"],
    shape_fn=lambda op: [op.inputs[0].shape], stateful=True,
    doc="The input; raises InvalidArgumentError when it holds NaN or Inf.",
)
op_def(
    "Print", inputs=["input: T", "data: U"], outputs=["output: T"],
    attrs=["T: type", "U: list(type)", "message: string = ''", "first_n: int = -1",
           "summarize: int = 3"],
    shape_fn=lambda op: [op.inputs[0].shape], stateful=True,
    doc="The input; prints `message` and `data` to stderr when it runs.",
)
not_differentiable("Assert")


@gradient("CheckNumerics")
def _check_numerics_grad(op: Operation, grad: Any) -> Any:
    # TensorFlow formats the bytes attr, hence the b'...' in its message.
    msg = op.get_attr("message")
    msg = msg.encode() if isinstance(msg, str) else msg
    return apply_op(
        "CheckNumerics", tensor=grad,
        message=f"Not a number (NaN) or infinity (Inf) values detected in gradient. {msg!r}",
        name="CheckNumerics",
    )


@gradient("Print")
def _print_grad(op: Operation, *grads: Any) -> Any:
    return [grads[0]] + [None] * (len(op.inputs) - 1)


def Assert(condition: Any, data: Any, summarize: int | None = None, name: str | None = None) -> Operation:  # noqa: N802 - TF's name
    """Asserts that `condition` is true (`tf.Assert`).

    Args:
      condition: A scalar boolean tensor.
      data: Tensors (or values) printed when the condition is false.
      summarize: How many entries of each tensor to print (default 3; -1: all).
      name: A name for the operation (default "Assert").

    Returns:
      The Operation to run (or to use in `tf.control_dependencies`).

    Raises:
      InvalidArgumentError: at run time, when `condition` is false.
    """
    g = get_default_graph()
    with g.name_scope(name or "Assert"):
        xs = [convert_to_tensor(d) for d in data]
        attrs: dict[str, Any] = {} if summarize is None else {"summarize": int(summarize)}
        if all(x.dtype in (dtypes.string, dtypes.int32) for x in xs):
            # TensorFlow passes the raw `data` on (the converted `xs` only decide the path), so
            # Python values become the op's own `Assert/data_i` Consts.
            return apply_op("Assert", condition=condition, data=list(data), name="Assert", **attrs)
        from flowlab.ops.cond import cond

        condition = convert_to_tensor(condition, name="Condition")
        guarded = cond(
            condition, core_ops.no_op,
            lambda: apply_op("Assert", condition=condition, data=list(data), name="Assert", **attrs),
            name="AssertGuard",
        )
        return guarded.op


def check_numerics(tensor: Any, message: str, name: str | None = None) -> Tensor:
    """`tensor`, after checking that it holds no NaN or Inf (`tf.debugging.check_numerics`).

    Raises:
      InvalidArgumentError: at run time, "<message> : Tensor had NaN values" (or Inf).
    """
    return apply_op("CheckNumerics", tensor=tensor, message=message, name=name or "CheckNumerics")


def verify_tensor_all_finite(t: Any, msg: str, name: str | None = None) -> Tensor:
    """`tf.verify_tensor_all_finite`: `t` guarded by a CheckNumerics."""
    g = get_default_graph()
    with g.name_scope(name or "VerifyFinite"):
        t = convert_to_tensor(t, name="t")
        with g.colocate_with(t.op):
            verify = check_numerics(t, message=msg)
            with g.control_dependencies([verify]):
                return core_ops.identity(t)


def add_check_numerics_ops() -> Operation:
    """A CheckNumerics on every half/float/double tensor of the default graph, chained
    so that inputs are checked before outputs; returns a group of them.

    Raises:
      ValueError: if the graph contains control flow (cond / while_loop).
    """
    g = get_default_graph()
    checks: list[Tensor] = []
    for op in g.get_operations():
        for out in op.outputs:
            if out.dtype in (dtypes.float16, dtypes.float32, dtypes.float64):
                if cfc.context_of(op) is not None:
                    raise ValueError(
                        "`tf.add_check_numerics_ops() is not compatible with TensorFlow "
                        "control flow operations such as `tf.cond()` or `tf.while_loop()`."
                    )
                with g.control_dependencies(checks):
                    checks = [check_numerics(out, message=f"{op.name}:{out.value_index}")]
    return core_ops.group(*checks)


def Print(input_: Any, data: Any, message: str | None = None, first_n: int | None = None,  # noqa: N802
          summarize: int | None = None, name: str | None = None) -> Tensor:
    """`input_` unchanged; prints `message` and the `data` tensors to stderr (`tf.Print`).

    Args:
      first_n: print only the first n times (default: always).
      summarize: entries printed per tensor (default 3).
    """
    attrs: dict[str, Any] = {}
    if message is not None:
        attrs["message"] = message
    if first_n is not None:
        attrs["first_n"] = int(first_n)
    if summarize is not None:
        attrs["summarize"] = int(summarize)
    return apply_op("Print", input=input_, data=list(data), name=name or "Print", **attrs)


# --- the assert_* helpers --------------------------------------------------------

def _static_str(t: Any) -> str:
    if not isinstance(t, Tensor):
        return str(t)
    v = constant_value(t)
    return str(v) if v is not None else str(t)


def _assert_static(ok: Any, data: list[Any]) -> None:
    if not ok:
        raise errors.InvalidArgumentError(None, None, "\n".join(_static_str(x) for x in data))


def _binary_assert(sym: str, opname: str, op_func: Any, static_func: Any, x: Any, y: Any,
                   data: Any, summarize: Any, message: Any, name: Any) -> Any:
    with get_default_graph().name_scope(name or opname):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y")
        if data is None:
            data = [f"Condition x {sym} y did not hold element-wise:",
                    f"x ({x.name}) = ", x, f"y ({y.name}) = ", y]
        if message is not None:
            data = [message] + list(data)
        condition = math_ops.reduce_all(op_func(x, y))
        xs, ys = constant_value(x), constant_value(y)
        if xs is not None and ys is not None:
            _assert_static(np.all(static_func(xs, ys)), data)
        return Assert(condition, data, summarize=summarize)


def _binary(sym: str, opname: str, op_func: Any, static_func: Any) -> Any:
    def fn(x: Any, y: Any, data: Any = None, summarize: Any = None, message: Any = None,
           name: Any = None) -> Any:
        return _binary_assert(sym, opname, op_func, static_func, x, y, data, summarize, message, name)

    fn.__name__ = fn.__qualname__ = opname
    fn.__doc__ = (f"Asserts `x {sym} y` element-wise (`tf.{opname}`); returns the Assert op.\n\n"
                  "    Raises:\n      InvalidArgumentError: at build time when both are constant "
                  "and the check fails,\n        else at run time.\n    ")
    return fn


_assert_equal = _binary("==", "assert_equal", math_ops.equal, np.equal)


def assert_equal(x: Any, y: Any, data: Any = None, summarize: Any = None, message: Any = None,
                 name: Any = None) -> Any:
    """Asserts `x == y` element-wise (`tf.assert_equal`); returns the Assert op.

    Raises:
      InvalidArgumentError: at build time when both are constant and differ, else at
        run time.
    """
    # TensorFlow opens (and uses up) one scope for its `x is y` shortcut first, so the
    # checks live in "assert_equal_1/".
    with get_default_graph().name_scope(name or "assert_equal"):
        if x is y:
            return core_ops.no_op()
    return _assert_equal(x, y, data, summarize, message, name)
assert_none_equal = _binary("!=", "assert_none_equal", math_ops.not_equal, np.not_equal)
assert_less = _binary("<", "assert_less", math_ops.less, np.less)
assert_less_equal = _binary("<=", "assert_less_equal", math_ops.less_equal, np.less_equal)
assert_greater = _binary(">", "assert_greater", math_ops.greater, np.greater)
assert_greater_equal = _binary(">=", "assert_greater_equal", math_ops.greater_equal, np.greater_equal)


def _message_prefix(message: Any) -> str:
    return f"{message}.  " if message else ""


def _unary(sym: str, opname: str, against: str) -> Any:
    def fn(x: Any, data: Any = None, summarize: Any = None, message: Any = None, name: Any = None) -> Any:
        message = _message_prefix(message)
        with get_default_graph().name_scope(name or opname):
            x = convert_to_tensor(x, name="x")
            if data is None:
                data = [message, f"Condition x {sym} 0 did not hold element-wise:", f"x ({x.name}) = ", x]
                if opname == "assert_non_positive":  # TensorFlow's missing comma joins the two
                    data[1:3] = [data[1] + data[2]]
            zero = convert_to_tensor(0, dtype=x.dtype)
            pairs = {"less": (x, zero), "greater": (zero, x), "less_equal": (x, zero),
                     "greater_equal": (zero, x)}
            helper = {"less": assert_less, "greater": assert_less, "less_equal": assert_less_equal,
                      "greater_equal": assert_less_equal}[against]
            a, b = pairs[against]
            return helper(a, b, data=data, summarize=summarize)

    fn.__name__ = fn.__qualname__ = opname
    fn.__doc__ = f"Asserts `x {sym} 0` element-wise (`tf.{opname}`); returns the Assert op.\n"
    return fn


assert_negative = _unary("<", "assert_negative", "less")
assert_positive = _unary(">", "assert_positive", "greater")
assert_non_negative = _unary(">=", "assert_non_negative", "greater_equal")
assert_non_positive = _unary("<=", "assert_non_positive", "less_equal")


def assert_rank(x: Any, rank: Any, data: Any = None, summarize: Any = None, message: Any = None,
                name: str | None = None) -> Any:
    """Asserts that `x` has rank `rank` (`tf.assert_rank`).

    Returns:
      A NoOp when the rank is statically right, else the Assert op.

    Raises:
      ValueError: if the static rank is known and wrong.
    """
    g = get_default_graph()
    with g.name_scope(name or "assert_rank"):
        x = convert_to_tensor(x, name="x")
        rank = convert_to_tensor(rank, name="rank")
        message = _message_prefix(message)
        if data is None:
            data = [message, f"Tensor {x.name} must have rank", rank, "Received shape: ",
                    array_ops.shape(x)]
        assert_type(rank, dtypes.int32)
        rank_static = constant_value(rank)
        if rank_static is not None:
            if np.ndim(rank_static) != 0:
                raise ValueError("Rank must be a scalar.")
            x_rank = x.shape.ndims
            if x_rank is not None:
                if x_rank != int(rank_static):
                    raise ValueError(
                        f"{message}Tensor {x.name} must have rank {int(rank_static)}.  "
                        f"Received rank {x_rank}, shape {x.shape}"
                    )
                return core_ops.no_op(name="static_checks_determined_all_ok")
        condition = math_ops.equal(array_ops.rank(x), rank)
        if rank_static is None:
            check = assert_rank(rank, 0, data=["Rank must be a scalar. Received rank: ", rank])
            with g.control_dependencies([check]):
                condition = core_ops.identity(condition)
        return Assert(condition, data, summarize=summarize)


def assert_scalar(tensor: Any, name: str | None = None, message: Any = None) -> Tensor:
    """`tensor`, after a static check that it is a scalar (`tf.assert_scalar`).

    Raises:
      ValueError: if its static rank is known and not 0.
    """
    with get_default_graph().name_scope(name or "assert_scalar"):
        tensor = convert_to_tensor(tensor, name="tensor")
        r = tensor.shape.ndims
        if r is None:
            raise ValueError(f"{_message_prefix(message)}Expected scalar shape for {tensor.name}, saw unknown shape.")
        if r != 0:
            raise ValueError(f"{_message_prefix(message)}Expected scalar shape for {tensor.name}, saw shape: {tensor.shape}.")
        return tensor


def assert_type(tensor: Any, tf_type: Any, message: Any = None, name: str | None = None) -> Operation:
    """Statically asserts the dtype of `tensor` (`tf.assert_type`); returns a NoOp.

    Raises:
      TypeError: if the dtype differs.
    """
    tf_type = dtypes.as_dtype(tf_type)
    with get_default_graph().name_scope(name or "assert_type"):
        tensor = convert_to_tensor(tensor, name="tensor")
        if tensor.dtype != tf_type:
            raise TypeError(
                f"{_message_prefix(message)}{tensor.name} must be of type {tf_type!r}; got {tensor.dtype!r}"
            )
        return core_ops.no_op(name="statically_determined_correct_type")
