"""GraphDef: a graph as documented, self-describing JSON (no pickle, no code).

`Graph.as_graph_def()` returns a plain dict of JSON values; `to_json` / `from_json`
turn it into text and back; `flowlab.ops.importer.import_graph_def` re-creates the
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

Invariants: a dict produced here is valid JSON (no NaN literals, no bytes) and
`parse_graph_def` accepts it; `parse_graph_def` validates every field's type and
raises ValueError naming the node and the field for anything malformed.  Nothing is
ever evaluated or unpickled.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.device_spec import DeviceSpec
from flowlab.graph.tensor_shape import TensorShape

if TYPE_CHECKING:
    from flowlab.graph.graph import Graph
    from flowlab.graph.tensor import Operation

__all__ = [
    "FORMAT", "VERSION", "graph_to_dict", "node_to_dict", "to_json", "from_json",
    "write_graph", "parse_graph_def", "validate_graph_def",
]

FORMAT = "flowlab.GraphDef"
VERSION = 1

# --- dtypes ----------------------------------------------------------------------------
_DT_NAME = {
    dtypes.float32: "DT_FLOAT", dtypes.float64: "DT_DOUBLE", dtypes.float16: "DT_HALF",
    dtypes.int8: "DT_INT8", dtypes.int16: "DT_INT16", dtypes.int32: "DT_INT32",
    dtypes.int64: "DT_INT64", dtypes.uint8: "DT_UINT8", dtypes.uint16: "DT_UINT16",
    dtypes.uint32: "DT_UINT32", dtypes.uint64: "DT_UINT64", dtypes.bool: "DT_BOOL",
    dtypes.complex64: "DT_COMPLEX64", dtypes.complex128: "DT_COMPLEX128",
    dtypes.string: "DT_STRING", dtypes.resource: "DT_RESOURCE", dtypes.variant: "DT_VARIANT",
}
_DT_BY_NAME = {v: k for k, v in _DT_NAME.items()}
_DT_BY_NAME.update({v + "_REF": k._as_ref() for k, v in _DT_NAME.items()})


def dtype_to_json(dt: Any) -> str:
    """`float32` -> "DT_FLOAT" (references get a "_REF" suffix, as in TensorFlow)."""
    d = dtypes.as_dtype(dt)
    name = _DT_NAME[d.base_dtype]
    return name + "_REF" if d.is_ref_dtype else name


def dtype_from_json(name: Any, where: str) -> dtypes.DType:
    if not isinstance(name, str) or name not in _DT_BY_NAME:
        raise ValueError(f"{where}: unknown dtype {name!r} (expected e.g. \"DT_FLOAT\")")
    return _DT_BY_NAME[name]


# --- shapes ----------------------------------------------------------------------------
def _shape_to_json(s: Any) -> dict[str, Any]:
    dims = s.as_tuple() if isinstance(s, TensorShape) else (None if s is None else TensorShape(s).as_tuple())
    if dims is None:
        return {"unknown_rank": True}
    return {"dim": [-1 if d is None else int(d) for d in dims]}


def _shape_from_json(obj: Any, where: str) -> tuple[int | None, ...] | None:
    if not isinstance(obj, dict) or not set(obj) <= {"dim", "unknown_rank"}:
        raise ValueError(f"{where}: a shape is {{\"dim\": [...]}} or {{\"unknown_rank\": true}}, got {_short(obj)}")
    unknown = obj.get("unknown_rank", False)
    if not isinstance(unknown, bool):
        raise ValueError(f"{where}: 'unknown_rank' must be true or false, got {_short(unknown)}")
    if unknown:
        if obj.get("dim"):
            raise ValueError(f"{where}: a shape of unknown rank cannot list dims")
        return None
    dims = obj.get("dim", [])
    if not isinstance(dims, list) or not all(_is_int(d) and -1 <= d < 2**63 for d in dims):
        raise ValueError(f"{where}: 'dim' must be a list of sizes >= -1 (-1: unknown), got {_short(dims)}")
    return tuple(None if d == -1 else d for d in dims)


# --- tensors ---------------------------------------------------------------------------
def _le(np_type: Any) -> np.dtype:
    return np.dtype(np_type).newbyteorder("<")


def _tensor_to_json(value: Any) -> dict[str, Any]:
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind in ("U", "S"):
        flat = [v.encode() if isinstance(v, str) else bytes(v) for v in arr.reshape(-1)]
        data: Any = [base64.b64encode(v).decode("ascii") for v in flat]
        dt = dtypes.string
    else:
        dt = dtypes.as_dtype(arr.dtype.newbyteorder("="))
        raw = np.ascontiguousarray(arr, dtype=_le(arr.dtype)).tobytes()
        data = base64.b64encode(raw).decode("ascii")
    return {"dtype": dtype_to_json(dt), "shape": [int(d) for d in arr.shape], "data": data}


def _b64(s: Any, where: str) -> bytes:
    if not isinstance(s, str):
        raise ValueError(f"{where}: expected a base64 string, got {_short(s)}")
    try:
        return base64.b64decode(s.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise ValueError(f"{where}: invalid base64 data") from None


def _tensor_from_json(obj: Any, where: str) -> np.ndarray:
    if not isinstance(obj, dict) or set(obj) != {"dtype", "shape", "data"}:
        raise ValueError(
            f"{where}: a tensor is {{\"dtype\", \"shape\", \"data\"}}, got {_short(obj)}"
        )
    dt = dtype_from_json(obj["dtype"], where)
    if dt.is_ref_dtype or dt in (dtypes.resource, dtypes.variant):
        raise ValueError(f"{where}: tensors of dtype {obj['dtype']} cannot be stored in a GraphDef")
    shape = obj["shape"]
    if not isinstance(shape, list) or not all(_is_int(d) and 0 <= d < 2**31 for d in shape):
        raise ValueError(f"{where}: tensor 'shape' must be a list of sizes >= 0, got {_short(shape)}")
    n = math.prod(shape)
    data = obj["data"]
    if dt is dtypes.string:
        if not isinstance(data, list) or len(data) != n:
            raise ValueError(
                f"{where}: a DT_STRING tensor of shape {shape} needs a list of {n} base64 "
                f"strings as 'data', got {_short(data)}"
            )
        out = np.empty(n, dtype=object)
        out[:] = [_b64(s, where) for s in data]
        arr = out.reshape(shape)
    else:
        raw = _b64(data, where)
        le = _le(dt.as_numpy_dtype)
        if len(raw) != n * le.itemsize:
            raise ValueError(
                f"{where}: tensor data has {len(raw)} bytes, but {obj['dtype']} of shape {shape} "
                f"needs {n * le.itemsize}"
            )
        if dt is dtypes.bool and raw.strip(b"\x00\x01"):
            raise ValueError(f"{where}: DT_BOOL tensor data must be bytes 0 or 1")
        arr = np.frombuffer(raw, dtype=le).astype(dt.as_numpy_dtype).reshape(shape)
    arr.flags.writeable = False
    return arr


# --- attr values -----------------------------------------------------------------------
_SCALAR_KEY = {
    "type": "type", "int": "i", "float": "f", "bool": "b", "string": "s",
    "shape": "shape", "tensor": "tensor", "func": "func",
}
_KIND_OF_KEY = {v: k for k, v in _SCALAR_KEY.items()}
_LIST_KEYS = ("type", "i", "f", "b", "s", "shape", "tensor")


def _float_to_json(v: Any) -> Any:
    f = float(v)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return f


def _scalar_to_json(key: str, v: Any) -> Any:
    if key == "type":
        return dtype_to_json(v)
    if key == "i":
        if isinstance(v, (float, np.floating)) and v != int(v):
            raise ValueError(f"{v!r} is not an integer")
        return int(v)
    if key == "f":
        return _float_to_json(v)
    if key == "b":
        return bool(v)
    if key == "s":
        return v.decode("utf-8") if isinstance(v, (bytes, np.bytes_)) else str(v)
    if key == "shape":
        return _shape_to_json(v)
    if key == "tensor":
        return _tensor_to_json(v)
    if key == "func":
        name = v if isinstance(v, str) else getattr(v, "name", None)
        if not isinstance(name, str):
            raise ValueError(f"{v!r} is not a function name")
        return {"name": name}
    raise AssertionError(key)


def _infer_key(v: Any) -> str:
    if isinstance(v, dtypes.DType):
        return "type"
    if isinstance(v, (bool, np.bool_)):
        return "b"
    if isinstance(v, (int, np.integer)):
        return "i"
    if isinstance(v, (float, np.floating)):
        return "f"
    if isinstance(v, (str, bytes)):
        return "s"
    if isinstance(v, TensorShape):
        return "shape"
    if isinstance(v, np.ndarray):
        return "tensor"
    raise ValueError(f"a value of type {type(v).__name__} has no GraphDef attr encoding")


def attr_to_json(value: Any, kind: str | None = None) -> dict[str, Any]:
    """Encode one attr value; `kind` is the OpDef's attr kind, or None to infer it."""
    if kind is not None and kind.startswith("list("):
        key = _SCALAR_KEY[kind[5:-1]]
        return {"list": {key: [_scalar_to_json(key, v) for v in value]}}
    if kind is not None:
        return {_SCALAR_KEY[kind]: _scalar_to_json(_SCALAR_KEY[kind], value)}
    if isinstance(value, tuple) and all(d is None or _is_int(d) for d in value):
        # flowlab keeps shape attrs as tuples (and lists for list attrs), and decoding
        # gives the same, so kind-less attrs round-trip.
        return {"shape": _shape_to_json(value)}
    if isinstance(value, (list, tuple)):
        if not value:
            return {"list": {}}
        keys = {_infer_key(v) for v in value}
        if keys == {"i", "f"}:
            keys = {"f"}
        if len(keys) != 1:
            raise ValueError(f"a list mixing {sorted(keys)} has no GraphDef attr encoding")
        key = keys.pop()
        return {"list": {key: [_scalar_to_json(key, v) for v in value]}}
    key = _infer_key(value)
    return {key: _scalar_to_json(key, value)}


def _scalar_from_json(key: str, v: Any, where: str) -> Any:
    if key == "type":
        d = dtype_from_json(v, where)
        if d.is_ref_dtype:
            raise ValueError(f"{where}: a type attr cannot be a reference type ({v})")
        return d
    if key == "i":
        if not _is_int(v) or not -(2**63) <= v < 2**63:
            raise ValueError(f"{where}: expected a 64-bit integer, got {_short(v)}")
        return v
    if key == "f":
        if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
            return float(v.replace("Infinity", "inf"))
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(
                f"{where}: expected a number or \"NaN\"/\"Infinity\"/\"-Infinity\", got {_short(v)}"
            )
        return float(v)
    if key == "b":
        if not isinstance(v, bool):
            raise ValueError(f"{where}: expected true or false, got {_short(v)}")
        return v
    if key == "s":
        if not isinstance(v, str):
            raise ValueError(f"{where}: expected a string, got {_short(v)}")
        return v
    if key == "shape":
        return _shape_from_json(v, where)
    if key == "tensor":
        return _tensor_from_json(v, where)
    if key == "func":
        if not isinstance(v, dict) or set(v) != {"name"} or not isinstance(v["name"], str):
            raise ValueError(f"{where}: a func is {{\"name\": \"...\"}}, got {_short(v)}")
        return v["name"]
    raise AssertionError(key)


def attr_from_json(obj: Any, where: str) -> tuple[str, Any]:
    """Decode one attr value: (kind, value).  The kind of an empty list is "list"."""
    if not isinstance(obj, dict) or len(obj) != 1:
        raise ValueError(
            f"{where}: an attr value is an object with one key (type, i, f, b, s, shape, tensor, "
            f"func or list), got {_short(obj)}"
        )
    ((key, v),) = obj.items()
    if key == "list":
        if not isinstance(v, dict) or len(v) > 1 or not set(v) <= set(_LIST_KEYS):
            raise ValueError(
                f"{where}: a list attr is {{\"list\": {{<kind>: [...]}}}} with one of "
                f"{', '.join(_LIST_KEYS)}, got {_short(v)}"
            )
        if not v:
            return "list", []
        ((k, items),) = v.items()
        if not isinstance(items, list):
            raise ValueError(f"{where}: list '{k}' must be a JSON array, got {_short(items)}")
        return f"list({_KIND_OF_KEY[k]})", [_scalar_from_json(k, x, f"{where}[{i}]") for i, x in enumerate(items)]
    if key not in _KIND_OF_KEY:
        raise ValueError(f"{where}: unknown attr value kind {key!r}")
    return _KIND_OF_KEY[key], _scalar_from_json(key, v, where)


# --- export ----------------------------------------------------------------------------
def _input_name(t: Any) -> str:
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def node_to_dict(op: Operation, add_shapes: bool = False) -> dict[str, Any]:
    """The GraphDef node of `op` (this is `Operation.node_def`)."""
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
def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."


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
