"""Operation and Tensor: the nodes and edges of the dataflow graph.

An `Operation` is immutable after creation except for the control inputs that
`Graph.control_dependencies` and the gradient code add, and its static output shapes
(`Tensor.set_shape` only ever refines them).  Placement never writes to an operation:
the session keeps the op -> device mapping.

Python operators on `Tensor` (`+`, `@`, `x[1:, ::2]`, ...) are installed by the ops
layer through `Tensor._override_operator`, so this module does not import upward.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from flowlab.errors import OperatorNotAllowedInGraphError
from flowlab.graph import dtypes as _dtypes
from flowlab.graph.tensor_shape import TensorShape, as_shape

if TYPE_CHECKING:
    from flowlab.graph.graph import Graph

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class Frame(NamedTuple):
    """One user frame of an op's creation traceback."""

    filename: str
    lineno: int
    name: str

    def __str__(self) -> str:
        """`model.py:14`, or `Cell In[3], line 2` for a notebook cell (IPython's names:
        its cells compile to temporary files such as `1445306353.py`)."""
        cell = notebook_cell(self.filename)
        if cell is not None:
            return f"{cell}, line {self.lineno}"
        return f"{os.path.basename(self.filename)}:{self.lineno}"


def notebook_cell(filename: str) -> str | None:
    """IPython's name of the cell compiled to `filename` (`Cell In[3]`), or None when it
    is not a cell of the running IPython (or no IPython runs).  IPython is looked up,
    never imported: a program that does not use it pays nothing."""
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if callable(get_ipython) else None
    name_of = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if not callable(name_of):
        return None
    try:
        named = name_of(filename)
    except Exception:  # noqa: BLE001 - an odd shell must not break an error message
        return None
    return " ".join(str(part) for part in named) if named else None


def user_traceback(limit: int = 8) -> tuple[Frame, ...]:
    """The caller's stack, innermost first, without frames inside flowlab itself.

    Test files (`tests/`) count as user code even though they sit beside the package.
    """
    frames: list[Frame] = []
    f = sys._getframe(1)
    while f is not None and len(frames) < limit:
        fn = f.f_code.co_filename
        if not fn.startswith(_PACKAGE_DIR) and not fn.startswith("<frozen"):
            frames.append(Frame(fn, f.f_lineno, f.f_code.co_name))
        f = f.f_back  # type: ignore[assignment]
    return tuple(frames)


class Tensor:
    """The `value_index`-th output of an operation: a symbolic handle, not a value."""

    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "_consumers", "_name", "__weakref__")

    # NumPy arrays on the left of an operator defer to us (np_array + tensor).
    __array_priority__ = 100

    def __init__(self, op: Operation, value_index: int, dtype: _dtypes.DType) -> None:
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = TensorShape(None)
        self._consumers: list[Operation] = []
        self._name = f"{op.name}:{value_index}"

    @property
    def op(self) -> Operation:
        return self._op

    @property
    def value_index(self) -> int:
        return self._value_index

    @property
    def dtype(self) -> _dtypes.DType:
        return self._dtype

    @property
    def graph(self) -> Graph:
        return self._op.graph

    @property
    def name(self) -> str:
        return self._name

    @property
    def device(self) -> str:
        return self._op.device

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape: Any) -> None:
        """Refine the static shape; ValueError if it contradicts what is known.

        The messages are TensorFlow's: "Shapes must be equal rank, but are 1 and 2",
        "Dimension 0 in both shapes must be equal, but are 2 and 3. Shapes are [2]
        and [3]."
        """
        new = as_shape(shape)
        old = self._shape
        a, b = old.as_tuple(), new.as_tuple()
        if a is not None and b is not None:
            if len(a) != len(b):
                raise ValueError(f"Shapes must be equal rank, but are {len(a)} and {len(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                if x is not None and y is not None and x != y:
                    raise ValueError(
                        f"Dimension {i} in both shapes must be equal, but are {x} and {y}. "
                        f"Shapes are {_bracketed(old)} and {_bracketed(new)}."
                    )
        self._shape = old.merge_with(new)

    def consumers(self) -> list[Operation]:
        return list(self._consumers)

    def eval(self, feed_dict: Any = None, session: Any = None) -> Any:
        """Run this tensor in `session` (default: the default session)."""
        from flowlab.graph.default_graph import _eval_hook

        return _eval_hook(self, feed_dict, session)

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self._name}' shape={self._shape} dtype={self._dtype.name}>"

    def __str__(self) -> str:
        # TensorFlow's format: shape only when the rank is known, device when requested.
        shape = f", shape={self._shape}" if self._shape.ndims is not None else ""
        device = f", device={self.device}" if self.device else ""
        return f'Tensor("{self._name}"{shape}, dtype={self._dtype.name}{device})'

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        raise OperatorNotAllowedInGraphError(
            f"Using a symbolic `tf.Tensor` ('{self._name}') as a Python `bool` is not allowed "
            "in graph mode. Use 'if t is not None:' to test for existence, tf.cond to branch "
            "on its value, or run it in a session and test the result."
        )

    def __iter__(self) -> Any:
        raise OperatorNotAllowedInGraphError(
            f"Iterating over a symbolic `tf.Tensor` ('{self._name}') is not allowed in graph "
            "mode. Use tf.unstack(t) for a statically known first dimension, or tf.map_fn."
        )

    def __len__(self) -> int:
        raise TypeError(
            f"len is not well defined for a symbolic Tensor ({self._name}). Please call "
            "`x.shape` rather than `len(x)` for shape information."
        )

    # Filled in by the ops layer (flowlab.ops.operators).
    @classmethod
    def _override_operator(cls, operator: str, func: Callable[..., Any]) -> None:
        setattr(cls, operator, func)

    # The shape as the ops layer's shape functions see it.
    def _shape_tuple(self) -> tuple[int | None, ...] | None:
        return self._shape.as_tuple()


def _bracketed(shape: TensorShape) -> str:
    dims = shape.as_tuple()
    if dims is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


class Operation:
    """A node: an op type, named inputs and typed attrs, producing `outputs`."""

    def __init__(
        self,
        graph: Graph,
        op_type: str,
        name: str,
        inputs: list[Tensor],
        output_dtypes: list[_dtypes.DType],
        attrs: dict[str, Any],
        device: str,
        control_inputs: list[Operation],
        op_def: Any = None,
        colocation: tuple[str, ...] = (),
        traceback: tuple[Frame, ...] = (),
    ) -> None:
        self._graph = graph
        self._type = op_type
        self._name = name
        self._inputs = list(inputs)
        self._attrs = attrs
        self._device = device
        self._control_inputs: list[Operation] = []
        for c in control_inputs:
            if c not in self._control_inputs:
                self._control_inputs.append(c)
        self._control_outputs: list[Operation] = []
        self._op_def = op_def
        self._colocation = colocation
        self._traceback = traceback
        self._outputs = [Tensor(self, i, d) for i, d in enumerate(output_dtypes)]
        self._id = 0
        self._control_flow_context: Any = None  # the cond branch / loop it was built in
        self._provisional: Any = None  # provisional_names: a value its reader renames

    # --- read-only views ----------------------------------------------------------
    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def type(self) -> str:
        return self._type

    @property
    def name(self) -> str:
        return self._name

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return tuple(self._inputs)

    @property
    def outputs(self) -> list[Tensor]:
        return list(self._outputs)

    def values(self) -> tuple[Tensor, ...]:
        return tuple(self._outputs)

    @property
    def control_inputs(self) -> list[Operation]:
        return list(self._control_inputs)

    @property
    def device(self) -> str:
        """The requested (possibly partial) device; placement is kept by the session."""
        return self._device

    @property
    def op_def(self) -> Any:
        return self._op_def

    @property
    def attrs(self) -> dict[str, Any]:
        return dict(self._attrs)

    @property
    def traceback(self) -> tuple[Frame, ...]:
        """User frames where the op was created, innermost first."""
        return self._traceback

    def colocation_groups(self) -> list[bytes]:
        """`b"loc:@name"` entries, as TensorFlow's `_class` attr; `[b"loc:@<own name>"]`
        for an op that is not colocated (a method, as TensorFlow's)."""
        return [f"loc:@{n}".encode() for n in (self._colocation or (self._name,))]

    def get_attr(self, name: str) -> Any:
        """The attr's value; `_class` lists the colocation groups of a colocated op."""
        if name == "_class" and self._colocation:
            return self.colocation_groups()
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.") from None

    def _set_attr(self, name: str, value: Any) -> None:
        self._attrs[name] = value

    def _set_device(self, device: Any) -> None:
        """A string is kept as written ('/cpu:1'), as TensorFlow keeps it: placement
        parses it, and a malformed one is placement's InvalidArgumentError when a
        session runs the op; a DeviceSpec becomes its canonical string."""
        from flowlab.graph.device_spec import DeviceSpec

        if isinstance(device, bytes):
            device = device.decode()
        if device is None or isinstance(device, DeviceSpec):
            self._device = "" if device is None else device.to_string()
            return
        if not isinstance(device, str):
            raise TypeError(f"Expected binary or unicode string, got {device!r}")
        self._device = device

    def _add_control_input(self, op: Operation) -> None:
        if op not in self._control_inputs:
            self._control_inputs.append(op)
            op._control_outputs.append(self)
            self._graph._bump_version()

    def _add_control_inputs(self, ops: list[Operation]) -> None:
        for op in ops:
            self._add_control_input(op)

    def _remove_all_control_inputs(self) -> None:
        """Drop every control input (a control-flow context re-adds the ones it keeps)."""
        for op in self._control_inputs:
            op._control_outputs.remove(self)
        self._control_inputs = []
        self._graph._bump_version()

    # --- control-flow context (see Graph._set_control_flow_context) ----------------
    def _get_control_flow_context(self) -> Any:
        """The cond branch or loop this op belongs to (None at top level)."""
        return self._control_flow_context

    def _set_control_flow_context(self, ctx: Any) -> None:
        self._control_flow_context = ctx

    def _control_flow_post_processing(self) -> None:
        """Hand the new op to the graph's current control-flow context, if any."""
        ctx = self._graph._get_control_flow_context()
        if ctx is not None:
            ctx.add_op(self)

    def _update_input(self, index: int, tensor: Tensor) -> None:
        """Rewire one data input (used by graph transformations such as gradients)."""
        old = self._inputs[index]
        old._consumers.remove(self)
        self._inputs[index] = tensor
        tensor._consumers.append(self)
        self._graph._bump_version()

    @property
    def node_def(self) -> Any:
        """TensorFlow's `NodeDef` protocol buffer of this op: `.name`, `.op`, `.input`
        ("a:1", "^ctrl"), `.device`, `.attr`; printing it shows protobuf text, as
        TensorFlow does.  `flowlab.graph.graph_def.node_to_dict(op)` is the same node
        as flowlab's JSON GraphDef writes it."""
        from flowlab.graph.graph_def import FORMAT, VERSION, node_to_dict
        from flowlab.graph.graph_def_pb import to_proto

        graph_def = {"format": FORMAT, "version": VERSION, "node": [node_to_dict(self)], "library": {}}
        return to_proto(graph_def).node[0]

    def defined_at(self) -> str:
        """'file.py:12' of the innermost user frame, or '' if unknown."""
        return str(self._traceback[0]) if self._traceback else ""

    def run(self, feed_dict: Any = None, session: Any = None) -> None:
        from flowlab.graph.default_graph import _eval_hook

        _eval_hook(self, feed_dict, session)

    def __repr__(self) -> str:
        return f"<tf.Operation '{self._name}' type={self._type}>"

    def __str__(self) -> str:
        ins = ", ".join(t.name for t in self._inputs)
        ctl = ", ".join("^" + c.name for c in self._control_inputs)
        return f"{self._name} = {self._type}({', '.join(x for x in (ins, ctl) if x)})"
