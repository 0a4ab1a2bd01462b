"""Dataset functions: `map`'s function (and filter's, flat_map's, interleave's) traced
once into a graph of its own, run by a session of its own.

Design.  TensorFlow traces a dataset function into a FunctionDef of the graph's
library and runs it with its function runtime.  flowlab has no function library,
and the simplest sound equivalent is a graph: `trace()` calls the Python function
once on placeholders (one per component of the input element) inside a fresh
`FunctionGraph`, and the dataset op gets the traced function as its `func` attr (the
attr's name, `<fn>_<n>`, is what a GraphDef shows).  At run time the dataset kernel
calls `DatasetFunction.call(components + captured)`, which feeds the placeholders
of a callable made once by a private `Session` over the function graph: the same
runtime (pruning, kernels, control flow, errors) runs the body, once per element.

Captures.  A function may use tensors of the enclosing graph (`lambda x: x * w`).
While tracing, every op joins the function graph (flowlab.ops.builder.graph_of
prefers a function graph being traced), and an input from the enclosing graph is
replaced by a placeholder of the function graph; the outer tensor becomes one of
the dataset op's `other_arguments` inputs, so its value is computed when the
dataset op runs (when the iterator is initialized), as TensorFlow's captures by
value are.  A nested function graph captures through its enclosing one.

State.  A stateful op inside the function (a random op) keeps its state in a private
session of its own per dataset instance (`instance()`: the kernels make one per run of
the dataset op, i.e. per iterator initialization, on the first element), so it advances
from element to element and through a `repeat`, and starts over with a re-initialized
iterator or another session, as TensorFlow instantiates the function per iterator.  A
stateless function shares one session for all.  Variables cannot be written from a
dataset function (their value is captured).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from flowlab.data import vectorize
from flowlab.data.vectorize import BatchedFunction
from flowlab.graph.function_registry import register_builder, register_function
from flowlab.graph.graph import Graph, get_default_graph
from flowlab.graph.graph_def import graph_to_dict
from flowlab.graph.tensor import Tensor
from flowlab.ops import cond as _nest
from flowlab.ops.builder import apply_op, convert_to_tensor


class FunctionGraph(Graph):
    """The graph a dataset function is traced into; captures from `outer`."""

    is_function_graph = True

    def __init__(self, outer: Graph, name: str) -> None:
        super().__init__()
        self.outer = outer
        self.name = name
        self.seed = outer.seed
        self.captures: list[tuple[Tensor, Tensor]] = []  # (outer tensor, placeholder)
        self._captured: dict[int, Tensor] = {}

    def capture(self, t: Tensor) -> Tensor:
        """The placeholder standing for `t` (a tensor of an enclosing graph)."""
        ph = self._captured.get(id(t))
        if ph is not None:
            return ph
        if t.graph is not self.outer:
            if not isinstance(self.outer, FunctionGraph):
                raise ValueError(
                    f"Tensor {t.name} belongs to a graph that does not enclose the function "
                    f"'{self.name}'.")
            outer_t = self.outer.capture(t)
        else:
            outer_t = t
        with self.as_default():
            ph = apply_op("Placeholder", dtype=t.dtype.base_dtype, shape=_shape_attr(t),
                          name="captured")
        self.captures.append((outer_t, ph))
        self._captured[id(t)] = ph
        return ph

    def _create_op(self, op_type: str, inputs: list[Tensor], *args: Any, **kwargs: Any) -> Any:
        inputs = [self.capture(t) if t.graph is not self else t for t in inputs]
        return super()._create_op(op_type, inputs, *args, **kwargs)


def _shape_attr(t: Tensor) -> Any:
    s = t.shape
    return None if s.ndims is None else s.as_list()


_UNSET = object()
_COUNTER = [0]
_COUNTER_LOCK = threading.Lock()


class DatasetFunction:
    """A traced function: its graph, argument placeholders, flat outputs and the
    tensors it captured.  The value of a dataset op's `func` attr."""

    def __init__(self, graph: FunctionGraph, args: list[Tensor], outputs: list[Any],
                 structure: Any) -> None:
        self.graph = graph
        self.name = graph.name
        self.args = args
        self.outputs = outputs  # Tensors (a Dataset's variant for flat_map)
        self.structure = structure  # what the Python function returned (tensors packed)
        self._lock = threading.Lock()
        self._run: Callable[..., Any] | None = None
        self._batched: Any = _UNSET
        register_function(self)  # a task importing a partition finds it by name

    @property
    def captured(self) -> list[Tensor]:
        """The outer tensors to pass after the element's components."""
        return [outer for outer, _ in self.graph.captures]

    def call(self, values: list[Any]) -> list[Any]:
        """The function's flat outputs for the element's components + captures."""
        run = self._run
        if run is None:
            with self._lock:
                if self._run is None:
                    self._run = self._callable()
                run = self._run
        return list(run(*values))  # type: ignore[misc]

    def _callable(self) -> Callable[..., Any]:
        from flowlab.runtime.session import Session

        self.graph.finalize()
        feeds = [*self.args, *(ph for _, ph in self.graph.captures)]
        return Session(graph=self.graph).make_callable(list(self.outputs), feeds)

    @functools.cached_property
    def stateful(self) -> bool:
        """Whether an op of the function keeps state between calls (a random op)."""
        return any(op.op_def is not None and op.op_def.is_stateful for op in self.graph.get_operations())

    def instance(self) -> Callable[[list[Any]], list[Any]]:
        """`call` with state of its own: a session made for this instance on its first
        call (what one iterator's pass over a dataset uses, see the module docstring)."""
        made: list[Callable[..., Any]] = []
        lock = threading.Lock()

        def call(values: list[Any]) -> list[Any]:
            if not made:
                with lock:
                    if not made:
                        made.append(self._callable())
            return list(made[0](*values))

        return call

    @property
    def batched(self) -> BatchedFunction | None:
        """This function run on a batch of stacked elements at once, or None when it is
        not element-wise (flowlab.data.vectorize): what `map` before `batch` runs."""
        if self._batched is _UNSET:
            with self._lock:
                if self._batched is _UNSET:
                    self._batched = vectorize.batched(self)
        return self._batched  # type: ignore[no-any-return]

    def to_message(self) -> tuple[dict[str, Any], list[DatasetFunction]]:
        """This function as plain data, for a task in another process
        (`from_message`), and the functions its ops call."""
        calls: dict[str, list[str]] = {}
        nested: list[DatasetFunction] = []
        for op in self.graph.get_operations():
            for key, v in op._attrs.items():
                if isinstance(v, DatasetFunction):
                    calls.setdefault(op.name, []).append(key)
                    nested.append(v)
        return {
            "kind": "dataset", "name": self.name, "graph_def": graph_to_dict(self.graph),
            "args": [t.name for t in self.args], "outputs": [t.name for t in self.outputs],
            "captures": [ph.name for _, ph in self.graph.captures], "functions": calls,
        }, nested

    @classmethod
    def from_message(cls, message: dict[str, Any], resolve: Callable[[str], Any]) -> DatasetFunction:
        """The function `to_message` described, its graph imported into a graph of its
        own; `resolve(name)` gives each function its ops call.  Its captures' values
        arrive as the dataset op's inputs, so no enclosing graph is needed."""
        from flowlab.ops.importer import import_graph_def

        name = str(message["name"])
        g = FunctionGraph(Graph(), name)
        with g.as_default():
            import_graph_def(message["graph_def"], name="")
        for op_name, keys in (message.get("functions") or {}).items():
            op = g.get_operation_by_name(op_name)
            for key in keys:
                op._attrs[key] = resolve(op._attrs.get(key))
        # Each capture stands for itself: there is no enclosing graph to capture from.
        g.captures = [(ph, ph) for ph in (g.get_tensor_by_name(n) for n in message.get("captures") or [])]
        return cls(g, [g.get_tensor_by_name(n) for n in message["args"]],
                   [g.get_tensor_by_name(n) for n in message["outputs"]], None)

    def __repr__(self) -> str:
        return f"<DatasetFunction {self.name}>"


register_builder("dataset", DatasetFunction.from_message)


def trace(fn: Callable[..., Any], specs: Any, name: str, unpack_tuple: bool = True
          ) -> DatasetFunction:
    """Trace `fn` on placeholders shaped as `specs` (a nested structure of
    `TensorSpec`s): a tuple element is passed as separate arguments (TensorFlow's
    rule), anything else as one."""
    from flowlab.data.structure import TensorSpec  # noqa: F401  (specs' type)

    outer = get_default_graph()
    with _COUNTER_LOCK:
        _COUNTER[0] += 1
        fname = f"{getattr(fn, '__name__', 'fn').strip('<>')}_{_COUNTER[0]}"
    g = FunctionGraph(outer, fname)
    with g.as_default():
        flat_specs = _nest.flatten(specs)
        args = [apply_op("Placeholder", dtype=s.dtype, shape=None if s.shape.ndims is None
                         else s.shape.as_list(), name=f"args_{i}")
                for i, s in enumerate(flat_specs)]
        packed = _nest.pack_sequence_as(specs, args)
        if unpack_tuple and isinstance(packed, tuple) and not hasattr(packed, "_fields"):
            result = fn(*packed)
        else:
            result = fn(packed)
        from flowlab.data.dataset import Dataset

        if isinstance(result, list):
            result = tuple(result)  # TensorFlow converts a returned list to a tuple
        if isinstance(result, Dataset):
            outputs: list[Any] = [result._variant_tensor]
            structure: Any = result
        else:
            leaves = _nest.flatten(result)
            for x in leaves:
                if hasattr(x, "dense_shape") and hasattr(x, "indices"):
                    raise TypeError(
                        f"The function '{fname}' returned a SparseTensor: flowlab's dataset "
                        "elements are dense tensors (TensorFlow's sparse elements are not "
                        "supported yet). Return tf.sparse.to_dense(...) or its indices, values "
                        "and dense_shape as separate components.")
            tensors = [x if isinstance(x, Tensor) else convert_to_tensor(x) for x in leaves]
            outputs = tensors
            structure = _nest.pack_sequence_as(result, tensors)
    return DatasetFunction(g, args, outputs, structure)
