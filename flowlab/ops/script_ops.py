"""Python inside the graph: `tf.py_func` and `tf.numpy_function`.

`py_func(func, inp, Tout)` adds a `PyFunc` op (`PyFuncStateless` with
`stateful=False`) whose kernel (flowlab.kernels.script_kernels) calls `func` with the
NumPy values of `inp` and returns what it gives back as tensors of dtypes `Tout`.
The op names `func` by a `token` attr ("pyfunc_0", "pyfunc_1", ...), as
TensorFlow's does: a process-wide registry maps tokens to functions through weak
references, and the graph that holds the op holds the function, so a function lives
as long as a graph that calls it.  Output shapes are unknown; there is no gradient.

    def clip(x):
        return np.clip(x, 0, 1)
    y = tf.py_func(clip, [x], tf.float32)
    a, b = tf.py_func(lambda v: (v, v * 2), [x], [tf.float32, tf.float32])

Like TensorFlow's, the function runs where the op is placed, on the executor's
threads, holding the GIL while it runs; it must not call back into the session that
runs it.  A token is meaningful only in the process that made it: a graph with
py_funcs does not run on another task.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import convert_to_tensor, create_op, outputs_of
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["py_func", "numpy_function"]


def _unknown_shapes(op: Any) -> list[Any]:
    return [TensorShape(None)] * len(op.get_attr("Tout"))


_DOC = "Calls the Python function registered under `token` with the inputs' values."
op_def("PyFunc", inputs=["input: Tin"], outputs=["output: Tout"],
       attrs=["token: string", "Tin: list(type) >= 0", "Tout: list(type) >= 0"],
       shape_fn=_unknown_shapes, stateful=True, doc=_DOC)
op_def("PyFuncStateless", inputs=["input: Tin"], outputs=["output: Tout"],
       attrs=["token: string", "Tin: list(type) >= 0", "Tout: list(type) >= 0"],
       shape_fn=_unknown_shapes, doc=_DOC + " Declared free of side effects.")
not_differentiable("PyFunc")
not_differentiable("PyFuncStateless")


class FuncRegistry:
    """Tokens to Python functions, through weak references (the graph keeps them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 0
        self._funcs: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()

    def insert(self, func: Callable[..., Any]) -> str:
        with self._lock:
            token = f"pyfunc_{self._next}"
            self._next += 1
        self._funcs[token] = func
        return token

    def get(self, token: str) -> Callable[..., Any] | None:
        return self._funcs.get(token)

    def size(self) -> int:
        return len(self._funcs)


class _Callable:
    """A strong, weak-referenceable holder of the user's callable (a bound method or a
    builtin cannot be weakly referenced itself)."""

    __slots__ = ("func", "__weakref__")

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func

    def __call__(self, *args: Any) -> Any:
        return self.func(*args)


REGISTRY = FuncRegistry()


def py_func(func: Callable[..., Any], inp: Any, Tout: Any, stateful: bool = True,  # noqa: N803 - TF's name
            name: str | None = None) -> Any:
    """Wrap the NumPy function `func` as an op of the default graph (`tf.py_func`).

    `func` receives one NumPy value per element of `inp` (scalars as NumPy scalars,
    string scalars as `bytes`) and returns one value per dtype of `Tout`.  With a list
    `Tout` the result is a list of tensors (the Operation when `Tout` is empty),
    otherwise one tensor.  `stateful=False` declares that `func` has no side effects.
    Exceptions raised by `func` fail the step: ValueError and TypeError as
    InvalidArgumentError, StopIteration as OutOfRangeError, NotImplementedError as
    UnimplementedError, MemoryError as ResourceExhaustedError, any other as
    UnknownError, each with the Python traceback in its message.

        y = tf.py_func(np.sinh, [x], tf.float32)
    """
    if not callable(func):
        raise ValueError(f"Expected func to be callable. Received func={func} of type {type(func)}.")
    is_list = isinstance(Tout, (list, tuple))
    tout = [dtypes.as_dtype(t) for t in (Tout if is_list else [Tout])]
    inputs = [convert_to_tensor(x) for x in inp]
    holder = _Callable(func)
    token = REGISTRY.insert(holder)
    op = create_op("PyFunc" if stateful else "PyFuncStateless", name=name or "PyFunc",
                   input=inputs, token=token, Tin=[t.dtype.base_dtype for t in inputs], Tout=tout)
    _keep_alive(op, holder)
    if not tout:
        return op
    outs = outputs_of(op)
    return outs if is_list else outs[0]


def _keep_alive(op: Operation, holder: _Callable) -> None:
    graph = op.graph
    held = getattr(graph, "_py_funcs_used_in_graph", None)
    if held is None:
        held = []
        graph._py_funcs_used_in_graph = held  # type: ignore[attr-defined]
    held.append(holder)


def numpy_function(func: Callable[..., Any] | None = None, inp: Any = None, Tout: Any = None,  # noqa: N803
                   stateful: bool = True, name: str | None = None) -> Any:
    """`py_func` under its TensorFlow 2 name (`tf.numpy_function`); called without
    `func` it is a decorator: `@tf.numpy_function(Tout=tf.float32)`."""
    if func is None:
        def decorator(f: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any) -> Any:
                return py_func(f, list(args), Tout, stateful=stateful, name=name)

            wrapper.__name__ = getattr(f, "__name__", "numpy_function")
            wrapper.__doc__ = getattr(f, "__doc__", None)
            return wrapper

        return decorator
    return py_func(func, inp, Tout, stateful=stateful, name=name)
