"""GraphDef: a graph as documented, self-describing JSON (no pickle, no code).

`graph_to_dict(graph)` gives a graph's GraphDef as a plain dict of JSON values
(`Graph.as_graph_def()` wraps it so that it also reads as TensorFlow's proto,
flowlab.graph.graph_def_proto); `to_json` / `from_json` turn it into text and back; `flowlab.ops.importer.import_graph_def` re-creates the
ops in a graph.  The full schema, with examples, is in docs/graphdef.md.  In short::

    {"format": "flowlab.GraphDef", "version": 1,
     "node": [{"name": "c", "op": "AddN", "input": ["a", "b:1", "^init"],
               "device": "/device:CPU:0",
               "attr": {"N": {"i": 2}, "T": {"type": "DT_FLOAT"}}}, ...],
     "library": {}}

Inputs are written as TensorFlow writes them: `"a"` is output 0 of node `a`, `"a:1"`
output 1, `"^a"` a control input (control inputs come after the data inputs).  Each
attr value is an object with exactly one key that names its kind:

    {"type": "DT_FLOAT"}     {"i": 3}     {"f": 0.5 | "NaN" | "Infinity" | "-Infinity"}
    {"b": true}              {"s": "text"}
    {"shape": {"dim": [2, -1]}}  (-1: unknown dim)   {"shape": {"unknown_rank": true}}
    {"tensor": {"dtype": "DT_FLOAT", "shape": [2], "data": "<base64>"}}
    {"func": {"name": "f"}}
    {"list": {"i": [1, 2]}}  (one key, as above; {"list": {}} is an empty list)

Tensor data is the base64 of the raw little-endian bytes in C order; string tensors
hold a list of base64 strings, one per element.  Colocation is the `_class` attr
(`{"list": {"s": ["loc:@a"]}}`); `as_graph_def(add_shapes=True)` adds each node's
static output shapes as the `_output_shapes` attr.

The attr-value codec is flowlab/graph/attr_value_json.py; this module writes and
validates the graph around it.

Invariants: a dict produced here is valid JSON (no NaN literals, no bytes) and
`parse_graph_def` accepts it; `parse_graph_def` validates every field's type and
raises ValueError naming the node and the field for anything malformed.  Nothing is
ever evaluated or unpickled.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

# Attr values have their own module; their codec is re-exported for old import paths.
from flowlab.graph.attr_value_json import (  # noqa: F401
    _shape_to_json,
    _short,
    attr_from_json,
    attr_to_json,
    dtype_from_json,
    dtype_to_json,
)
from flowlab.graph.device_spec import DeviceSpec

if TYPE_CHECKING:
    from flowlab.graph.graph import Graph
    from flowlab.graph.tensor import Operation

__all__ = [
    "FORMAT", "VERSION", "graph_to_dict", "node_to_dict", "to_json", "from_json",
    "write_graph", "parse_graph_def", "validate_graph_def",
]

FORMAT = "flowlab.GraphDef"
VERSION = 1

# --- export ----------------------------------------------------------------------------
def _input_name(t: Any) -> str:
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def node_to_dict(op: Operation, add_shapes: bool = False) -> dict[str, Any]:
    """The GraphDef node of `op` (`Operation.node_def` is the same node as TensorFlow's
    NodeDef proto)."""
    od = op.op_def
    defs = od.attrs if od is not None else {}
    attrs: dict[str, Any] = {}
    for key, value in op._attrs.items():
        if key in ("_class", "_output_shapes"):
            continue  # derived from the op itself below
        adef = defs.get(key)
        kind = adef.kind if adef is not None else None
        if value is None and kind != "shape":
            if adef is not None and adef.has_default and adef.default is None:
                continue  # importing fills the same default back in
            raise ValueError(
                f"Operation '{op.name}': attr '{key}' is None, which a GraphDef cannot represent"
            )
        try:
            attrs[key] = attr_to_json(value, kind)
        except (ValueError, TypeError, KeyError) as e:
            raise ValueError(
                f"Operation '{op.name}' ({op.type}): attr '{key}' = {_short(value)} cannot be "
                f"written to a GraphDef: {e}"
            ) from None
    if op._colocation:
        attrs["_class"] = {"list": {"s": [f"loc:@{n}" for n in op._colocation]}}
    if add_shapes and op._outputs:
        attrs["_output_shapes"] = {"list": {"shape": [_shape_to_json(t.shape) for t in op._outputs]}}
    return {
        "name": op.name,
        "op": op.type,
        "input": [_input_name(t) for t in op._inputs] + ["^" + c.name for c in op._control_inputs],
        "device": op.device,
        "attr": dict(sorted(attrs.items())),
    }


def graph_to_dict(graph: Graph, add_shapes: bool = False) -> dict[str, Any]:
    """The GraphDef of `graph` (this is `Graph.as_graph_def()`): nodes in creation order."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "node": [node_to_dict(op, add_shapes) for op in graph.get_operations()],
        "library": {},
    }


def to_json(graph_def: dict[str, Any], pretty: bool = True) -> str:
    """JSON text of a GraphDef dict (validated first, so the text always reads back).

    `pretty` puts each node on a line of its own (readable, and diffs line up with
    ops); otherwise the text is compact.
    """
    validate_graph_def(graph_def)
    if not pretty:
        return json.dumps(graph_def, separators=(",", ":"), allow_nan=False)
    lines = []
    for key, value in graph_def.items():
        if key == "node":
            nodes = ",\n".join("  " + json.dumps(n, allow_nan=False) for n in value)
            lines.append(f' "node": [\n{nodes}\n ]' if value else ' "node": []')
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value, allow_nan=False)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def from_json(text: str | bytes) -> dict[str, Any]:
    """Parse and validate GraphDef JSON text; ValueError naming the bad node/field."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if not isinstance(text, str):
        raise TypeError(f"from_json expects str or bytes, got {type(text).__name__}")
    try:
        gd = json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise ValueError(f"GraphDef JSON is malformed: {e}") from None
    except RecursionError:
        raise ValueError("GraphDef JSON is nested too deeply") from None
    validate_graph_def(gd)
    return gd


def write_graph(graph_or_graph_def: Any, logdir: str, name: str, as_text: bool = True) -> str:
    """Write a graph's GraphDef as JSON to `logdir/name` (like `tf.io.write_graph`).

    `as_text=True` writes one node per line, False compact JSON.  The file is written to a
    temporary name and renamed, so a reader never sees half a file.  Returns the path.

        path = write_graph(tf.get_default_graph(), "/tmp/model", "graph.json")
    """
    gd = graph_or_graph_def.as_graph_def() if hasattr(graph_or_graph_def, "as_graph_def") else graph_or_graph_def
    text = to_json(gd, pretty=as_text)
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


# --- validation and parsing ------------------------------------------------------------
_NODE_NAME = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.\-/>]*$")
_OP_TYPE = re.compile(r"^[A-Za-z_][A-Za-z0-9_>.]*$")
_ATTR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NODE_KEYS = {"name", "op", "input", "device", "attr"}
_TOP_KEYS = {"format", "version", "node", "library"}


@dataclass
class NodeSpec:
    """One validated node: inputs as (node name, output index; -1 for control)."""

    index: int
    name: str
    op: str
    inputs: list[tuple[str, int]]
    raw_inputs: list[str]
    device: str
    attrs: dict[str, tuple[str, Any]] = field(default_factory=dict)

    @property
    def data_inputs(self) -> list[tuple[str, int]]:
        return [i for i in self.inputs if i[1] >= 0]

    @property
    def control_inputs(self) -> list[str]:
        return [n for n, i in self.inputs if i < 0]


def parse_input(s: str) -> tuple[str, int]:
    """`"a"` -> ("a", 0); `"a:2"` -> ("a", 2); `"^a"` -> ("a", -1).  ValueError if bad."""
    if s.startswith("^"):
        name, idx = s[1:], -1
    else:
        name, sep, tail = s.rpartition(":")
        if not sep:
            name, idx = s, 0
        elif tail.isdigit() and tail.isascii() and (tail == "0" or not tail.startswith("0")):
            idx = int(tail)
        else:
            raise ValueError(f"bad output index in {s!r}")
    if not _NODE_NAME.fullmatch(name):
        raise ValueError(f"{s!r} does not name a node")
    return name, idx


def parse_graph_def(graph_def: Any) -> list[NodeSpec]:
    """Validate the structure of a GraphDef dict and decode every node.

    Checks types and forms only (what needs no op registry): names, input syntax
    (control inputs last), device syntax, attr encodings.  Raises ValueError naming the
    node and the field.
    """
    if not isinstance(graph_def, dict):
        raise ValueError(f"A GraphDef is a JSON object, got {type(graph_def).__name__}")
    extra = set(graph_def) - _TOP_KEYS
    if extra:
        raise ValueError(f"GraphDef has unknown fields {sorted(extra)} (allowed: {sorted(_TOP_KEYS)})")
    if graph_def.get("format") != FORMAT:
        raise ValueError(f"GraphDef 'format' must be {FORMAT!r}, got {_short(graph_def.get('format'))}")
    version = graph_def.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"GraphDef 'version' must be a positive integer, got {_short(version)}")
    if version > VERSION:
        raise ValueError(f"GraphDef version {version} is newer than this flowlab reads ({VERSION})")
    library = graph_def.get("library", {})
    if not isinstance(library, dict) or not set(library) <= {"function"}:
        raise ValueError(f"GraphDef 'library' must be an object, got {_short(library)}")
    if library.get("function"):
        raise ValueError("GraphDef 'library' holds functions, which flowlab does not support")
    nodes = graph_def.get("node")
    if not isinstance(nodes, list):
        raise ValueError(f"GraphDef 'node' must be a list, got {_short(nodes)}")
    return [_parse_node(i, n) for i, n in enumerate(nodes)]


def validate_graph_def(graph_def: Any) -> None:
    """Raise ValueError if `graph_def` is not a well-formed GraphDef dict."""
    parse_graph_def(graph_def)


def _parse_node(i: int, node: Any) -> NodeSpec:
    where = f"GraphDef node #{i}"
    if not isinstance(node, dict):
        raise ValueError(f"{where}: a node is a JSON object, got {_short(node)}")
    name = node.get("name")
    if not isinstance(name, str) or not _NODE_NAME.fullmatch(name):
        raise ValueError(f"{where}: field 'name' must be a node name (letters, digits, '_./-'), got {_short(name)}")
    where = f"Node '{name}'"
    extra = set(node) - _NODE_KEYS
    if extra:
        raise ValueError(f"{where}: unknown fields {sorted(extra)} (allowed: {sorted(_NODE_KEYS)})")
    op = node.get("op")
    if not isinstance(op, str) or not _OP_TYPE.fullmatch(op):
        raise ValueError(f"{where}: field 'op' must be an op type name, got {_short(op)}")
    raw = node.get("input", [])
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise ValueError(f"{where}: field 'input' must be a list of strings, got {_short(raw)}")
    inputs = []
    seen_control = False
    for s in raw:
        try:
            src, idx = parse_input(s)
        except ValueError as e:
            raise ValueError(f"{where}: field 'input': {e}") from None
        if idx < 0:
            seen_control = True
        elif seen_control:
            raise ValueError(f"{where}: Control dependencies must come after regular dependencies")
        inputs.append((src, idx))
    device = node.get("device", "")
    if not isinstance(device, str):
        raise ValueError(f"{where}: field 'device' must be a string, got {_short(device)}")
    try:
        DeviceSpec.from_string(device)
    except ValueError as e:
        raise ValueError(f"{where}: field 'device': {e}") from None
    raw_attrs = node.get("attr", {})
    if not isinstance(raw_attrs, dict):
        raise ValueError(f"{where}: field 'attr' must be an object, got {_short(raw_attrs)}")
    attrs = {}
    for key, value in raw_attrs.items():
        if not isinstance(key, str) or not _ATTR_NAME.fullmatch(key):
            raise ValueError(f"{where}: bad attr name {_short(key)}")
        attrs[key] = attr_from_json(value, f"{where}: attr '{key}'")
    return NodeSpec(i, name, op, inputs, list(raw), device, attrs)


# --- helpers ---------------------------------------------------------------------------
def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"GraphDef JSON has a duplicate key {k!r}")
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"GraphDef JSON may not contain {name} (write floats as \"NaN\"/\"Infinity\")")


def discard_ops(graph: Graph, ops: list[Operation], names_in_use: dict[str, int]) -> None:
    """Undo the creation of `ops` (the last ones added to `graph`) after a failed import,
    restoring the graph's used names to `names_in_use`.  Only for the importer."""
    doomed = {id(op) for op in ops}
    with graph._lock:
        for op in ops:
            for t in op._inputs:
                if op in t._consumers:
                    t._consumers.remove(op)
            for c in op._control_inputs:
                if op in c._control_outputs:
                    c._control_outputs.remove(op)
            graph._by_name.pop(op.name, None)
        graph._ops = [o for o in graph._ops if id(o) not in doomed]
        graph._names_in_use.clear()
        graph._names_in_use.update(names_in_use)
        graph._bump_version()
