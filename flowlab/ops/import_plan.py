"""Planning an import: a GraphDef's nodes checked, ordered and created.

`_Plan` does the part of `import_graph_def` that touches nodes.  Every check that
needs no op -- op types, attrs (defaulted and typed by the declaration), inputs and
their dtypes, cycles (bar NextIteration -> Merge loop back edges), colocation,
return_elements -- runs when the plan is made, so a bad GraphDef raises ValueError
naming the node before any op exists.  `create` then builds the ops in TensorFlow's
topological order (earliest listed ready node first) and wires loop back edges and
control inputs once every op exists.
"""

from __future__ import annotations

import contextlib
import heapq
from collections.abc import Iterator
from typing import Any

from flowlab import errors
from flowlab.graph import dtypes
from flowlab.graph.graph import Graph
from flowlab.graph.graph_def import NodeSpec
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import _arg_dtypes, _check_attr, _shape_str
from flowlab.ops.op_def import OpDef, get_op_def

# Loop back edges (TensorFlow's IsMerge / IsNextIteration).
_MERGE_TYPES = {"Merge", "RefMerge"}
_NEXT_ITERATION_TYPES = {"NextIteration", "RefNextIteration"}


class NotFoundError(errors.NotFoundError, ValueError):  # type: ignore[valid-type,misc]
    """An op type that no `op_def` declares.  TensorFlow raises NotFoundError here;
    it is also a ValueError, like every other malformed-GraphDef error."""


def _parse_tensor_name(name: str) -> tuple[str, int]:
    parts = name.split(":")
    if len(parts) == 1:
        return parts[0], 0
    if len(parts) == 2:
        try:
            return parts[0], int(parts[1])
        except ValueError:
            raise ValueError(
                f"Cannot convert {name!r} to a tensor name. Second component of the name "
                f"following the `:` should be an int. Got {parts[1]}."
            ) from None
    raise ValueError(
        f"Cannot convert '{name}' to a tensor name. Tensor names should not contain more "
        f"than 1 `:`. Obtained {len(parts) - 1}"
    )



# --- planning: everything checked before any op exists ------------------------------
class _Node:
    """A node with its declaration, checked attrs and output dtypes."""

    def __init__(self, spec: NodeSpec, od: OpDef, attrs: dict[str, Any], out_dtypes: list[dtypes.DType],
                 in_dtypes: list[dtypes.DType], private: dict[str, Any]) -> None:
        self.spec = spec
        self.od = od
        self.attrs = attrs
        self.out_dtypes = out_dtypes
        self.in_dtypes = in_dtypes
        self.private = private
        self.full_name = ""
        self.colocation: list[str] = []
        self.output_shapes: list[Any] | None = None
        # Filled by _Plan: per data input (source node name or mapped Tensor, index),
        # and per control input a source node name or mapped Operation.
        self.sources: list[tuple[Any, int]] = []
        self.controls: list[Any] = []


class _Plan:
    def __init__(self, g: Graph, specs: list[NodeSpec], input_map: dict[tuple[str, int], tuple[str, Any]],
                 prefix: str) -> None:
        self.g = g
        self.input_map = input_map
        self.prefix = prefix
        self.nodes: dict[str, _Node] = {}
        for spec in specs:
            if spec.name in self.nodes:
                raise ValueError(f"Node '{spec.name}' is not unique")
            self.nodes[spec.name] = _check_node(spec)
        self.used_keys: set[tuple[str, int]] = set()
        for n in self.nodes.values():
            self._check_inputs(n)
            self._check_colocation(n)
        self._check_unused_input_map()
        self.order, self.back_edges = self._topological_order()
        self._assign_names()
        self.created: dict[str, Operation] = {}

    # -- inputs
    def _source(self, n: _Node, src: str, idx: int, raw: str) -> tuple[Any, dtypes.DType | None]:
        """(mapped Tensor/Operation, dtype) or (source node name, dtype)."""
        key = (src, idx)
        if key in self.input_map:
            self.used_keys.add(key)
            v = self.input_map[key][1]
            return v, (v.dtype if isinstance(v, Tensor) else None)
        if src not in self.nodes:
            raise ValueError(f"Node '{n.spec.name}': Unknown input node '{raw}'")
        if idx < 0:
            return src, None
        outs = self.nodes[src].out_dtypes
        if idx >= len(outs):
            raise ValueError(
                f"Node '{n.spec.name}': Connecting to invalid output {idx} of source node {src} "
                f"which has {len(outs)} outputs."
            )
        return src, outs[idx]

    def _check_inputs(self, n: _Node) -> None:
        spec = n.spec
        data = [(s, i, r) for (s, i), r in zip(spec.inputs, spec.raw_inputs) if i >= 0]
        for k, (src, idx, raw) in enumerate(data):
            where, actual = self._source(n, src, idx, raw)
            want = n.in_dtypes[k]
            assert actual is not None
            ok = (
                actual.is_ref_dtype and actual is want if want.is_ref_dtype
                else actual.base_dtype is want
            )
            if not ok:
                origin = where.name if isinstance(where, Tensor) else f"{self._pname(src)}:{idx}"
                raise ValueError(
                    f"Input {k} of node {self._pname(spec.name)} was passed {actual.name} from "
                    f"{origin} incompatible with expected {want.name}."
                )
            n.sources.append((where, idx))
        n.controls = [
            self._source(n, src, -1, raw)[0]
            for (src, idx), raw in zip(spec.inputs, spec.raw_inputs) if idx < 0
        ]

    def _pname(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def _check_colocation(self, n: _Node) -> None:
        for target in n.colocation:
            if target not in self.nodes:
                raise ValueError(
                    f"Node '{n.spec.name}' expects to be colocated with unknown node '{target}'"
                )

    def _check_unused_input_map(self) -> None:
        missing = []
        for key, (k, _) in self.input_map.items():
            if key in self.used_keys:
                continue
            src, idx = key
            node = self.nodes.get(src)
            if node is None or idx >= len(node.out_dtypes):
                missing.append(k)
        if missing:
            raise ValueError(
                f"Attempted to map inputs that were not found in graph_def: [{', '.join(missing)}]"
            )

    # -- order
    def _topological_order(self) -> tuple[list[_Node], list[tuple[_Node, int, str, int]]]:
        """Earliest-listed-ready-first order; Merge inputs from NextIteration wait."""
        nodes = list(self.nodes.values())
        index = {n.spec.name: i for i, n in enumerate(nodes)}
        consumers: list[list[int]] = [[] for _ in nodes]
        pending = [0] * len(nodes)
        for i, n in enumerate(nodes):
            srcs = [s for s, _ in n.sources if isinstance(s, str)]
            ctrls = [s for s in n.controls if isinstance(s, str)]
            back = n.spec.op in _MERGE_TYPES and any(
                self.nodes[s].spec.op in _NEXT_ITERATION_TYPES for s in srcs
            )
            for s in srcs + ctrls:
                consumers[index[s]].append(i)
            pending[i] = len(ctrls) + 1 if back else len(srcs) + len(ctrls)
        ready = [i for i in range(len(nodes)) if pending[i] == 0]
        heapq.heapify(ready)
        order: list[_Node] = []
        done = [False] * len(nodes)
        while ready:
            i = heapq.heappop(ready)
            done[i] = True
            order.append(nodes[i])
            for c in consumers[i]:
                pending[c] -= 1
                if pending[c] == 0 and not done[c]:
                    heapq.heappush(ready, c)
        if len(order) < len(nodes):
            stuck = [n.spec.name for i, n in enumerate(nodes) if not done[i]]
            shown = ", ".join(f"'{s}'" for s in stuck[:10]) + (", ..." if len(stuck) > 10 else "")
            raise ValueError(f"{len(stuck)} nodes in a cycle: {shown}")
        # Data inputs not yet created when their consumer is: loop back edges.
        position = {n.spec.name: k for k, n in enumerate(order)}
        back_edges = []
        for k, n in enumerate(order):
            for j, (src, idx) in enumerate(n.sources):
                if isinstance(src, str) and position[src] > k:
                    if n.spec.op not in _MERGE_TYPES:
                        raise ValueError(f"Node '{n.spec.name}': only a Merge may take a loop back edge")
                    back_edges.append((n, j, src, idx))
        return order, back_edges

    def _assign_names(self) -> None:
        """Prefix, then make unique against the graph's ops (TensorFlow's rule)."""
        existing = set(self.g._by_name)
        prefixes = set()
        for op_name in existing:
            parts = op_name.split("/")
            for k in range(1, len(parts)):
                prefixes.add("/".join(parts[:k]))
        gdef_names = {self._pname(n) for n in self.nodes}
        taken = existing | prefixes
        for n in self.order:
            base = self._pname(n.spec.name)
            name, count = base, 0
            while name in taken or (count > 0 and name in gdef_names):
                count += 1
                name = f"{base}_{count}"
            n.full_name = name
            taken.add(name)

    # -- return elements
    def resolve_returns(self, returns: list[str] | None) -> list[tuple[Any, int | None]] | None:
        """Per name: (mapped Tensor, 0), (node name, output index) or (node name, None)."""
        if returns is None:
            return None
        out: list[tuple[Any, int | None]] = []
        for r in returns:
            if ":" in r:
                src, idx = _parse_tensor_name(r)
                if (src, idx) in self.input_map:
                    out.append((self.input_map[(src, idx)][1], 0))
                    continue
                node = self.nodes.get(src)
                if node is None:
                    raise ValueError(f"Requested return tensor '{r}' not found in graph def")
                if not 0 <= idx < len(node.out_dtypes):
                    raise ValueError(
                        f"Invalid return output {idx} of node '{src}', which has "
                        f"{len(node.out_dtypes)} output(s)"
                    )
                out.append((src, idx))
            else:
                if r not in self.nodes:
                    raise ValueError(f"Requested return node '{r}' not found in graph def")
                out.append((r, None))
        return out

    # -- creation
    def create(self, outer_control: list[Operation]) -> None:
        g = self.g
        with g.control_dependencies(None), g._without_colocation():
            for n in self.order:
                self.created[n.spec.name] = self._create_one(n)
        for n, j, src, idx in self.back_edges:
            self.created[n.spec.name]._update_input(j, self.created[src].outputs[idx])
        for n in self.order:
            op = self.created[n.spec.name]
            for c in n.controls:
                op._add_control_input(self.created[c] if isinstance(c, str) else c)
            for c in outer_control:
                op._add_control_input(c)
        self._colocate()

    def _create_one(self, n: _Node) -> Operation:
        inputs: list[Tensor] = []
        for src, idx in n.sources:
            if isinstance(src, Tensor):
                inputs.append(src)
            elif src in self.created:
                inputs.append(self.created[src].outputs[idx])
            else:  # a loop back edge: stand in with an input of the same type for now
                inputs.append(next(t for t in self._known_inputs(n)))
        with self._device_scope(n):
            return self.g._create_op(
                n.spec.op, inputs, n.out_dtypes, dict(n.attrs, **n.private), n.full_name, n.od,
                _shape_fn(n),
            )

    def _known_inputs(self, n: _Node) -> Iterator[Tensor]:
        for src, idx in n.sources:
            if isinstance(src, Tensor):
                yield src
            elif src in self.created:
                yield self.created[src].outputs[idx]

    @contextlib.contextmanager
    def _device_scope(self, n: _Node) -> Iterator[None]:
        if n.colocation:
            with self.g.device(None):  # colocation wins over device scopes (TensorFlow)
                yield
        elif n.spec.device:
            with self.g.device(n.spec.device):
                yield
        else:
            yield

    def _colocate(self) -> None:
        for n in self.order:
            if not n.colocation:
                continue
            op = self.created[n.spec.name]
            names = tuple(self.nodes[t].full_name for t in n.colocation)
            op._colocation = names
            device = ""
            for name in names:
                other = self.g._by_name.get(name)
                if other is not None and other.device:
                    device = other.device
                    break
            op._set_device(device)


def _shape_fn(n: _Node) -> Any:
    shape_fn = n.od.shape_fn
    name, op_type = n.full_name, n.spec.op

    def shapes(op: Operation) -> list[Any]:
        k = len(n.out_dtypes)
        if n.output_shapes is not None and op.graph._partition_graph:
            # A partition carries the client's shapes: inferring them again could only
            # fail earlier than the client's step would (a bad shape fails at run time).
            return [TensorShape(s) for s in n.output_shapes]
        if shape_fn is None:
            result = [TensorShape(None)] * k
        else:
            try:
                result = list(shape_fn(op))
            except (ValueError, TypeError, KeyError, IndexError) as e:
                ins = ", ".join(_shape_str(t.shape) for t in op._inputs)
                raise ValueError(
                    f"{e} for '{name}' (op: '{op_type}') with input shapes: {ins}"
                ) from None
        if n.output_shapes is not None:
            merged = []
            for i, (s, given) in enumerate(zip(result, n.output_shapes)):
                try:
                    merged.append(TensorShape(s).merge_with(TensorShape(given)))
                except ValueError as e:
                    raise ValueError(
                        f"Node '{name}' has an _output_shapes attribute inconsistent with the "
                        f"GraphDef for output #{i}: {e}"
                    ) from None
            result = merged
        return result

    return shapes


def _check_node(spec: NodeSpec) -> _Node:
    """Attrs against the declaration (defaults filled), dtypes of inputs and outputs."""
    where = f"Node '{spec.name}'"
    try:
        od = get_op_def(spec.op)
    except KeyError:
        raise NotFoundError(
            None, None,
            f"{where}: Op type not registered '{spec.op}' in flowlab. Import the module that "
            "declares it (op_def) before importing the graph.",
        ) from None
    sig = f"Op<name={od.name}>"
    attrs: dict[str, Any] = {}
    private: dict[str, Any] = {}
    colocation: list[str] = []
    output_shapes = None
    for key, (kind, value) in spec.attrs.items():
        if key == "_class":
            if kind not in ("list(string)", "list") or not all(s.startswith("loc:@") for s in value):
                raise ValueError(f"{where}: attr '_class' must be a list of \"loc:@<node>\" strings")
            colocation = list(dict.fromkeys(s[len("loc:@"):] for s in value))
            continue
        if key == "_output_shapes":
            if kind not in ("list(shape)", "list"):
                raise ValueError(f"{where}: attr '_output_shapes' must be a list of shapes")
            output_shapes = value
            continue
        if key.startswith("_"):
            private[key] = value
            continue
        adef = od.attrs.get(key)
        if adef is None:
            raise ValueError(f"{where}: NodeDef mentions attr '{key}' not in {sig}")
        if kind != adef.kind and not (kind == "list" and adef.kind.startswith("list(")):
            raise ValueError(
                f"{where}: attr '{key}' has a value of kind '{kind}' where '{adef.kind}' is expected"
            )
        attrs[key] = value
    for key, adef in od.attrs.items():
        if key not in attrs:
            if not adef.has_default:
                raise ValueError(f"{where}: NodeDef missing attr '{key}' from {sig}")
            attrs[key] = adef.default
    checked: dict[str, Any] = {}
    for key, adef in od.attrs.items():
        try:
            checked[key] = attrs[key] if attrs[key] is None else _check_attr(od, spec.name, adef, attrs[key])
        except (TypeError, ValueError) as e:
            raise ValueError(f"{where}: {e}") from None
    if spec.op == "Const" and dtypes.as_dtype(checked["value"].dtype) is not checked["dtype"]:
        raise ValueError(
            f"{where}: Const value has dtype {dtypes.as_dtype(checked['value'].dtype).name} but attr "
            f"'dtype' is {checked['dtype'].name}"
        )
    try:
        in_dtypes = [d for arg in od.inputs for d in _arg_dtypes(arg, checked)]
        out_dtypes = [d for arg in od.outputs for d in _arg_dtypes(arg, checked)]
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"{where}: cannot compute the argument types from the attrs: {e}") from None
    n_data = len(spec.data_inputs)
    if n_data != len(in_dtypes):
        raise ValueError(
            f"{where}: NodeDef expected inputs '{', '.join(d.name for d in in_dtypes)}' do not "
            f"match {n_data} inputs specified; {sig}"
        )
    if output_shapes is not None and len(output_shapes) != len(out_dtypes):
        raise ValueError(
            f"{where} has {len(out_dtypes)} outputs but the _output_shapes attribute specifies "
            f"shapes for {len(output_shapes)} outputs"
        )
    n = _Node(spec, od, checked, out_dtypes, in_dtypes, private)
    n.colocation = colocation
    n.output_shapes = output_shapes
    return n
