"""The Graph: ordered operations with unique names, scopes and collections.

State: `_ops` in creation order (a topological order: inputs exist before their
consumers), `_by_name`, the names in use (case-insensitively, as TensorFlow), and the
builder stacks (name scope, device functions, control-dependency controllers,
colocation).  Invariant: every op's inputs and control inputs belong to this graph.

`version` grows whenever the graph changes (an op is added or rewired); sessions key
their compiled plans on it.  `finalize()` makes the graph read-only, which catches
the classic "graph grows every training step" leak.

Threads: the builder stacks (name scope, devices, control dependencies, colocation)
and the `as_default()` stack are per thread.  The global default graph, used outside
any `as_default()` block, is shared by all threads -- unlike TensorFlow, which gives
each thread its own -- so a helper thread of a notebook sees the graph being built.
Names are reserved under a lock, so concurrent builders never collide.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

from flowlab.graph import dtypes as _dtypes
from flowlab.graph.default_graph import (  # noqa: F401  (re-exported: old import paths)
    _default_stack,
    _eval_function,
    _eval_hook,
    get_default_graph,
    get_name_scope,
    reset_default_graph,
)
from flowlab.graph.device_spec import DeviceSpec, canonical_name
from flowlab.graph.graph_keys import GraphKeys
from flowlab.graph.tensor import Operation, Tensor, user_traceback

DEFAULT_GRAPH_SEED = 87654321


class _ControlDependencies:
    """One `control_dependencies` block: its ops, and the ops created inside it."""

    __slots__ = ("control_inputs", "created")

    def __init__(self, control_inputs: list[Operation]) -> None:
        self.control_inputs = control_inputs
        self.created: set[int] = set()


class Graph:
    """A TensorFlow 1.x dataflow graph. Use `with g.as_default():` to build into it."""

    # A task's graph of imported partitions: it accepts the runtime's `_` names, and the
    # importer takes each node's `_output_shapes` as given (flowlab.runtime.task.registration).
    _partition_graph = False

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._ops: list[Operation] = []
        self._by_name: dict[str, Operation] = {}
        self._names_in_use: dict[str, int] = {}
        self._version = 0
        self._last_id = 0
        self._finalized = False
        self._collections: dict[str, list[Any]] = {}
        self.seed: int | None = None
        self._gradient_override_map: dict[str, str] = {}
        self._local = threading.local()
        # Set by higher layers (variable scopes, control-flow contexts) without
        # this module knowing their types.
        self._scratch: dict[str, Any] = {}

    # --- per-thread builder state -------------------------------------------------
    def _state(self) -> Any:
        st = self._local
        if not hasattr(st, "name_stack"):
            st.name_stack = ""
            st.device_stack = []
            st.control_stack = []
            st.colocation_stack = []
            st.control_flow_context = None
            st.name_journal = None  # provisional_names: names to release on a rename
        return st

    # --- identity and version -----------------------------------------------------
    @property
    def version(self) -> int:
        return self._version

    def _bump_version(self) -> None:
        self._version += 1

    @property
    def finalized(self) -> bool:
        return self._finalized

    def finalize(self) -> None:
        """Make the graph read-only; adding an op afterwards raises RuntimeError."""
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        self._finalized = False

    def _check_not_finalized(self) -> None:
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")

    @contextlib.contextmanager
    def as_default(self) -> Iterator[Graph]:
        """Make this graph the default for ops created in this thread."""
        stack = _default_stack()
        stack.append(self)
        try:
            yield self
        finally:
            stack.pop()

    # --- names --------------------------------------------------------------------
    def get_name_scope(self) -> str:
        return self._state().name_stack

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """`scope/name`, or `scope/name_N` with the smallest free N."""
        stack = self._state().name_stack
        if stack:
            name = stack + "/" + name
        # Names are compared case-insensitively ("foo" and "Foo" collide), as
        # TensorFlow does, but keep the caller's spelling.
        key = name.lower()
        with self._lock:
            i = self._names_in_use.get(key, 0)
            if mark_as_used:
                self._journal(key)
                self._names_in_use[key] = i + 1
            if i > 0:
                while f"{key}_{i}" in self._names_in_use:
                    i += 1
                if mark_as_used:
                    # Reserve "name_i" itself, so a later unique_name("name_i") moves on.
                    self._journal(f"{key}_{i}")
                    self._names_in_use[f"{key}_{i}"] = 1
                name = f"{name}_{i}"
        return name

    def _journal(self, key: str) -> None:
        j = self._state().name_journal
        if j is not None:
            j.append((key, self._names_in_use.get(key)))

    @contextlib.contextmanager
    def name_scope(self, name: str | None) -> Iterator[str]:
        """Open a name scope; yields the scope string (`"outer/inner/"`).

        A new name is made unique (`"scope_1"` on reuse); a name ending in "/"
        re-enters that exact scope; None or "" resets to the root.  A root scope
        must be a valid op name (`[A-Za-z0-9.]` first); a nested one may also start
        with `_`, `-`, `/` or `\\`.  Invalid names are a ValueError.
        """
        st = self._state()
        old = st.name_stack
        if isinstance(name, bytes):
            name = name.decode()
        if name:
            if old:
                if not _VALID_SCOPE_NAME.match(name):
                    raise ValueError(
                        f"'{name}' is not a valid scope name. A scope name has to match the "
                        f"following pattern: {_VALID_SCOPE_NAME.pattern}"
                    )
            elif not _VALID_OP_NAME.match(name):
                raise ValueError(
                    f"'{name}' is not a valid root scope name. A root scope name has to match "
                    f"the following pattern: {_VALID_OP_NAME.pattern}"
                )
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self.unique_name(name)
        st.name_stack = new
        try:
            yield (new + "/") if new else ""
        finally:
            st.name_stack = old

    # --- devices ------------------------------------------------------------------
    @contextlib.contextmanager
    def device(self, device_name_or_function: Any) -> Iterator[None]:
        """Request a device for ops created in the block: a string, DeviceSpec,
        function `op -> device`, or None to clear the outer requests."""
        st = self._state()
        d = device_name_or_function
        if d is not None and not (callable(d) and not isinstance(d, DeviceSpec)):
            d = DeviceSpec.from_string(d)  # parse now: a bad name fails here
        st.device_stack.append(d)
        try:
            yield
        finally:
            st.device_stack.pop()

    def _apply_device_functions(self, op: Operation) -> None:
        # Innermost first: an inner string's set fields win over outer ones, and a
        # function sees (and may override) what the inner scopes chose.
        stack = self._state().device_stack
        start = 0
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is None:
                start = i + 1
                break
        for d in reversed(stack[start:]):
            if callable(d) and not isinstance(d, DeviceSpec):
                # A function replaces what the inner scopes chose (TensorFlow's rule).
                result = d(op)
                if not isinstance(result, (str, bytes, DeviceSpec)):
                    raise TypeError(
                        f"The device function {d!r} returned {result!r} for op '{op.name}'; "
                        "it must return a device string or DeviceSpec ('' for no request)."
                    )
                # The returned string is kept as written ('/cpu:1'), as TensorFlow does;
                # placement parses it.  A DeviceSpec becomes its canonical string.
                op._set_device(result)
            else:
                current = DeviceSpec.from_string(op.device or None)
                op._device = d.make_merged_spec(current).to_string()

    # --- colocation ---------------------------------------------------------------
    @contextlib.contextmanager
    def colocate_with(self, op: Any, ignore_existing: bool = False) -> Iterator[None]:
        """Place ops created in the block with `op` (device scopes are ignored).

        `ignore_existing=True` drops the enclosing colocations; `op=None` (which
        requires it) clears them.
        """
        st = self._state()
        if op is None:
            if not ignore_existing:
                raise ValueError(
                    "Trying to reset colocation (op is None) but ignore_existing is not True"
                )
            old, old_devices = st.colocation_stack, st.device_stack
            st.colocation_stack, st.device_stack = [], []
            try:
                yield
            finally:
                st.colocation_stack, st.device_stack = old, old_devices
            return
        target = _as_operation(op)
        old_stack = st.colocation_stack
        old_devices = st.device_stack
        st.colocation_stack = ([] if ignore_existing else list(old_stack)) + [target]
        st.device_stack = []
        try:
            yield
        finally:
            st.colocation_stack = old_stack
            st.device_stack = old_devices

    @contextlib.contextmanager
    def _without_colocation(self) -> Iterator[None]:
        """Clear the colocation stack but keep the device scopes (import_graph_def:
        `colocate_with(None, ignore_existing=True)` would clear both, as TensorFlow's)."""
        st = self._state()
        old = st.colocation_stack
        st.colocation_stack = []
        try:
            yield
        finally:
            st.colocation_stack = old

    # --- control dependencies -----------------------------------------------------
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs: Any) -> Iterator[None]:
        """Ops created in the block run after `control_inputs` (ops, tensors, their
        names, or objects with `_as_graph_element`, such as variables).

        None clears the outer blocks.  An op created in the block gets no control
        input that one of its data inputs already implies: when it consumes an op
        created in the same block, or the control input itself.
        """
        st = self._state()
        if control_inputs is None:
            old = st.control_stack
            st.control_stack = []
            try:
                yield
            finally:
                st.control_stack = old
            return
        ops: list[Operation] = []
        for c in control_inputs:
            if (
                not isinstance(c, (Tensor, Operation, str))
                and not hasattr(c, "_as_graph_element")
                and isinstance(getattr(c, "op", None), Operation)
            ):
                c = c.op  # e.g. IndexedSlices-like wrappers
            c = self.as_graph_element(c)
            if isinstance(c, Tensor):
                c = c.op
            if c not in ops:
                ops.append(c)
        ctl = _ControlDependencies(ops)
        st.control_stack.append(ctl)
        try:
            yield
        finally:
            st.control_stack.remove(ctl)

    def _control_inputs_for(self, inputs: list[Tensor]) -> list[Operation]:
        input_ops = {id(t.op) for t in inputs}
        out: list[Operation] = []
        for ctl in self._state().control_stack:
            # An input created inside this block already orders us after its ops.
            if any(i in ctl.created for i in input_ops):
                continue
            for c in ctl.control_inputs:
                if id(c) not in input_ops and c not in out:
                    out.append(c)
        return out

    def _record_in_control_blocks(self, op: Operation) -> None:
        """Count `op` as made in the open `control_dependencies` blocks, so that its
        consumers get no control input it already implies (a loop's Enter, made with
        the blocks cleared and given their control inputs by its loop)."""
        for ctl in self._state().control_stack:
            ctl.created.add(id(op))

    # --- control-flow context: the hook on op creation ------------------------------
    def _get_control_flow_context(self) -> Any:
        """The control-flow context new ops are created in (this thread), or None."""
        return self._state().control_flow_context

    def _set_control_flow_context(self, ctx: Any) -> None:
        """Make `ctx` the context of the ops this thread creates from now on.

        The graph does not know what a context is: it only calls `ctx.add_op(op)`
        for each new op (`Operation._control_flow_post_processing`), once the op is
        in the graph with its inputs and control inputs (TensorFlow's `AddOp`).  The
        context may then rewire the op: `_update_input`, `_add_control_input(s)`,
        `_remove_all_control_inputs`, and create ops of its own (with the context
        set as it needs for them).
        """
        self._state().control_flow_context = ctx

    # --- op creation --------------------------------------------------------------
    def _create_op(
        self,
        op_type: str,
        inputs: list[Tensor],
        output_dtypes: list[_dtypes.DType],
        attrs: dict[str, Any],
        name: str,
        op_def: Any = None,
        shape_fn: Callable[[Operation], Any] | None = None,
    ) -> Operation:
        """Build, shape and add an op.  `name` must come from `unique_name`.

        The shape function runs before the op joins the graph, so an op whose shapes
        do not fit never appears in it.
        """
        self._check_not_finalized()
        if not _VALID_OP_NAME.match(name) and not (self._partition_graph and _INTERNAL_OP_NAME.match(name)):
            raise ValueError(
                f"'{name}' is not a valid node name. Accepted names conform to Regex "
                f"/{_VALID_OP_NAME.pattern}/"
            )
        for t in inputs:
            if t.graph is not self:
                raise ValueError(
                    f"Tensor {t.name} must be from the same graph as the op '{name}' being "
                    "created (it belongs to another graph)." + _other_graph_advice(t.op)
                )
        mapped = self._gradient_override_map.get(op_type)
        if mapped is not None:
            attrs = {**attrs, "_gradient_op_type": mapped}
        st = self._state()
        op = Operation(
            self, op_type, name, inputs, output_dtypes, attrs, "",
            self._control_inputs_for(inputs), op_def, (), user_traceback(),
        )
        # Device scopes first (colocate_with emptied the stack, so only the ones opened
        # inside it count), then colocation: the groups of every op on the stack, sorted,
        # and the device of the innermost one that has a device (TensorFlow's rule).
        self._apply_device_functions(op)
        if st.colocation_stack:
            op._colocation = tuple(sorted(
                {n for o in st.colocation_stack for n in o._colocation or (o.name,)}
            ))
            for o in reversed(st.colocation_stack):
                if o.device:
                    op._device = o.device
                    break
        if shape_fn is not None:
            shapes = shape_fn(op)
            for t, s in zip(op._outputs, shapes):
                t.set_shape(s)
        self._add_op(op)
        op._control_flow_post_processing()
        return op

    def _add_op(self, op: Operation) -> None:
        with self._lock:
            self._check_not_finalized()
            if op.name in self._by_name:
                raise ValueError(f"Duplicate node name in graph: '{op.name}'")
            self._last_id += 1
            op._id = self._last_id
            self._ops.append(op)
            self._by_name[op.name] = op
            self._journal(op.name.lower())
            self._names_in_use.setdefault(op.name.lower(), 1)
            for t in op._inputs:
                t._consumers.append(op)
            for c in op._control_inputs:
                c._control_outputs.append(op)
            for ctl in self._state().control_stack:
                ctl.created.add(id(op))
            self._version += 1

    # --- lookup -------------------------------------------------------------------
    def get_operations(self) -> list[Operation]:
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        """The op called `name`; KeyError if absent, ValueError for a tensor name."""
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=False, allow_operation=True)

    def get_tensor_by_name(self, name: str) -> Tensor:
        """The tensor `"op:i"`; KeyError if absent, ValueError for a malformed name."""
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=True, allow_operation=False)

    def as_graph_element(
        self, obj: Any, allow_tensor: bool = True, allow_operation: bool = True
    ) -> Any:
        """Resolve a Tensor, Operation, name, or object with `_as_graph_element`.

        Errors and messages are TensorFlow's: TypeError for an unconvertible object,
        ValueError for an element of another graph or a malformed name, KeyError for
        a name that is not in the graph.
        """
        with self._lock:
            return self._as_graph_element_locked(obj, allow_tensor, allow_operation)

    def _as_graph_element_locked(self, obj: Any, allow_tensor: bool, allow_operation: bool) -> Any:
        kinds = " or ".join(
            k for k, a in (("Tensor", allow_tensor), ("Operation", allow_operation)) if a
        )
        conv = getattr(obj, "_as_graph_element", None)
        if conv is not None and not isinstance(obj, (Tensor, Operation)):
            obj = conv()
        if isinstance(obj, str):
            name = obj
            if ":" in name and allow_tensor:
                try:
                    op_name, out = name.split(":")
                    out_n = int(out)
                except ValueError:
                    raise ValueError(
                        f"The name {name!r} looks a like a Tensor name, but is not a valid one. "
                        'Tensor names must be of the form "<op_name>:<output_index>".'
                    ) from None
                op = self._by_name.get(op_name)
                if op is None:
                    raise KeyError(
                        f"The name {name!r} refers to a Tensor which does not exist. The "
                        f"operation, {op_name!r}, does not exist in the graph."
                    )
                try:
                    return op._outputs[out_n]
                except IndexError:
                    raise KeyError(
                        f"The name {name!r} refers to a Tensor which does not exist. The "
                        f"operation, {op_name!r}, exists but only has {len(op._outputs)} outputs."
                    ) from None
            if ":" in name:
                raise ValueError(f"Name {name!r} appears to refer to a Tensor, not a {kinds}.")
            if allow_operation:
                op = self._by_name.get(name)
                if op is None:
                    raise KeyError(f"The name {name!r} refers to an Operation not in the graph.")
                return op
            if name in self._by_name:
                msg = f"The name {name!r} refers to an Operation, not a {kinds}."
            else:
                msg = f"The name {name!r} looks like an (invalid) Operation name, not a {kinds}."
            raise ValueError(msg + ' Tensor names must be of the form "<op_name>:<output_index>".')
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.graph is not self:
                raise ValueError(f"Tensor {obj} is not an element of this graph."
                                 + _other_graph_advice(obj.op))
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError(f"Operation {obj} is not an element of this graph."
                                 + _other_graph_advice(obj))
            return obj
        raise TypeError(f"Can not convert a {type(obj).__name__} into a {kinds}.")

    # --- collections --------------------------------------------------------------
    def add_to_collection(self, name: str, value: Any) -> None:
        self._check_not_finalized()
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names: Any, value: Any) -> None:
        names = (names,) if isinstance(names, str) else set(names)
        for n in names:
            self.add_to_collection(n, value)

    def get_collection_ref(self, name: str) -> list[Any]:
        return self._collections.setdefault(name, [])

    def get_collection(self, name: str, scope: str | None = None) -> list[Any]:
        items = self._collections.get(name, [])
        if scope is None:
            return list(items)
        pattern = re.compile(scope)
        return [i for i in items if hasattr(i, "name") and pattern.match(i.name)]

    def get_all_collection_keys(self) -> list[str]:
        """Every collection name used so far (an emptied or `get_collection_ref`-made
        collection still counts, as in TensorFlow)."""
        return list(self._collections)

    @property
    def collections(self) -> list[str]:
        return self.get_all_collection_keys()

    def clear_collection(self, name: str) -> None:
        self._check_not_finalized()
        self._collections.pop(name, None)

    # --- gradients (used by the autodiff layer) ------------------------------------
    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: dict[str, str]) -> Iterator[None]:
        """Use another op type's registered gradient for ops created in the block.

        Each op created in the block whose type is a key gets the attr
        `_gradient_op_type` (the mapped type, a str), which the autodiff layer reads.
        """
        if not isinstance(op_type_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in op_type_map.items()
        ):
            raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        old = dict(self._gradient_override_map)
        self._gradient_override_map.update(op_type_map)
        try:
            yield
        finally:
            self._gradient_override_map = old

    # --- serialization ------------------------------------------------------------
    def as_graph_def(self, from_version: int | None = None, add_shapes: bool = False) -> dict[str, Any]:
        """This graph's GraphDef: the JSON dict of flowlab.graph.graph_def that also
        reads, prints and serializes as TensorFlow's proto (`gd.node[0].op`,
        `gd.SerializeToString()`; flowlab.graph.graph_def_proto)."""
        from flowlab.graph.graph_def import graph_to_dict
        from flowlab.graph.graph_def_proto import GraphDef

        return GraphDef(graph_to_dict(self, add_shapes=add_shapes))

    @property
    def building_function(self) -> bool:
        return False

    def is_fetchable(self, tensor_or_op: Any) -> bool:
        return True

    def __repr__(self) -> str:
        return f"<flowlab.Graph with {len(self._ops)} ops, version {self._version}>"

    # Notebook display: the graph's picture (drawn by flowlab.viz, see graph/display.py).
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from flowlab.graph.display import mimebundle

        return mimebundle(self, include, exclude)

    def _repr_svg_(self) -> str | None:
        from flowlab.graph.display import mimebundle

        return mimebundle(self).get("image/svg+xml")


# TensorFlow's rules: an op name (and a root scope) starts with a letter, digit or
# "."; a nested scope may also start with "_", "-", "/" or "\\".
_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
# Names the runtime gives the ops it adds (`_cloop...`, `_arg_x_0_0`), as TensorFlow's
# partitions hold them; only a graph built from partitions accepts them.
_INTERNAL_OP_NAME = re.compile(r"^_[A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")


def _as_operation(x: Any) -> Operation:
    if hasattr(x, "_as_graph_element") and not isinstance(x, (Tensor, Operation)):
        x = x._as_graph_element()
    if isinstance(x, Tensor):
        return x.op
    if isinstance(x, Operation):
        return x
    if hasattr(x, "op") and isinstance(x.op, Operation):
        return x.op
    raise TypeError(f"Expected an Operation, Tensor or Variable, got {x!r}")


__all__ = [
    "Graph",
    "GraphKeys",
    "get_default_graph",
    "reset_default_graph",
    "get_name_scope",
    "canonical_name",
    "DEFAULT_GRAPH_SEED",
]


def _other_graph_advice(op: Operation) -> str:
    """Where an element of another graph was made, and the two ways out (a learner
    usually re-ran a cell with `tf.reset_default_graph()` or built in a `with
    tf.Graph().as_default():` block)."""
    where = op.defined_at()
    return (
        f" '{op.name}' was built in another tf.Graph" + (f" (defined at {where})" if where else "")
        + ": run it in a session of that graph (tf.Session(graph=t.graph)), or build it again"
        " in this one (after tf.reset_default_graph(), re-run the cells that build the model)."
    )
