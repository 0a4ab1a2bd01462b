"""flowlab GraphDefs as TensorFlow's `GraphDef` protocol buffer, both ways.

flowlab's GraphDef is JSON (flowlab/graph/graph_def.py, docs/graphdef.md) with
TensorFlow's field names; this module maps it onto `tensorboard.compat.proto.graph_pb2
.GraphDef` -- TensorFlow's own schema, shipped by the `tensorboard` package -- so that
TensorBoard's graph dashboard, Netron and TensorFlow itself read flowlab graphs, and
flowlab reads graphs TensorFlow wrote:

    pb = to_proto(graph)                 # a Graph (shapes added), or a GraphDef dict
    pb.SerializeToString()               # the .pb bytes; text_format for .pbtxt
    gd = from_proto(pb)                  # a GraphDef dict (also from bytes / text)

Mapping (one attr kind each way): `type` <-> `DataType` enum (`DT_FLOAT_REF` for
references), `i`/`f`/`b` as they are, `s` <-> UTF-8 bytes, `shape` <->
`TensorShapeProto` (-1 unknown dim, `unknown_rank`), `tensor` <-> `TensorProto`
(written as raw little-endian `tensor_content`, or `string_val`; read in any of
TensorFlow's encodings, repeated last values included), `func` <-> `NameAttrList`,
`list` <-> `ListValue`.  Devices are the requested devices; a Graph's export carries
`_output_shapes` for TensorBoard's edge labels.  `versions.producer` is the one
TensorFlow 2.21 writes.

Invariants: `from_proto(to_proto(gd)) == gd` for every valid GraphDef dict `gd`,
except that an empty list attr reads back as `{"list": {}}` (a `ListValue` does not
say what its empty list would hold; importing fills the kind back in from the op's
declaration, so `import_graph_def(from_proto(to_proto(g)), name="")` rebuilds `g`
exactly); and neither direction executes anything.
What flowlab cannot represent (function libraries, `placeholder` attrs, dtypes
such as bfloat16, non-UTF-8 string attrs) is a ValueError naming the node and attr.
"""

from __future__ import annotations

import base64
import math
from typing import TYPE_CHECKING, Any

from tensorboard.compat.proto import graph_pb2, types_pb2

from flowlab.graph.attr_value_json import _tensor_to_json
from flowlab.graph.graph_def import FORMAT, VERSION, graph_to_dict, validate_graph_def

if TYPE_CHECKING:
    from flowlab.graph.graph import Graph

GraphDef = graph_pb2.GraphDef  # TensorFlow's message class (`tf.GraphDef`)

__all__ = ["GraphDef", "to_proto", "from_proto", "parse_proto", "write_graph", "PRODUCER", "MIN_CONSUMER"]

# TensorFlow 2.21's TF_GRAPH_DEF_VERSION and TF_GRAPH_DEF_VERSION_MIN_CONSUMER, the
# versions its `as_graph_def()` writes (the run-metadata GraphDefs use the same).
PRODUCER = 2474
MIN_CONSUMER = 12

_DT_VALUE = types_pb2.DataType.Value
_DT_NAME = types_pb2.DataType.Name


# --- flowlab JSON -> proto ---------------------------------------------------------------
def _shape_pb(obj: dict[str, Any], out: Any) -> None:
    if obj.get("unknown_rank"):
        out.unknown_rank = True
        return
    for d in obj.get("dim", []):
        out.dim.add(size=d)


def _tensor_pb(obj: dict[str, Any], out: Any) -> None:
    out.dtype = _DT_VALUE(obj["dtype"])
    for d in obj["shape"]:
        out.tensor_shape.dim.add(size=d)
    data = obj["data"]
    if obj["dtype"] == "DT_STRING":
        out.string_val.extend(base64.b64decode(s) for s in data)
    elif data:
        out.tensor_content = base64.b64decode(data)


def _float(v: Any) -> float:
    return float(v.replace("Infinity", "inf")) if isinstance(v, str) else float(v)


def _attr_pb(obj: dict[str, Any], out: Any) -> None:
    ((key, v),) = obj.items()
    if key == "type":
        out.type = _DT_VALUE(v)
    elif key == "i":
        out.i = v
    elif key == "f":
        out.f = _float(v)
    elif key == "b":
        out.b = v
    elif key == "s":
        out.s = v.encode("utf-8")
    elif key == "shape":
        _shape_pb(v, out.shape)
    elif key == "tensor":
        _tensor_pb(v, out.tensor)
    elif key == "func":
        out.func.name = v["name"]
    elif key == "list":
        lst = out.list
        lst.SetInParent()  # an empty list is still a list
        for k, items in v.items():
            if k == "type":
                lst.type.extend(_DT_VALUE(t) for t in items)
            elif k == "i":
                lst.i.extend(items)
            elif k == "f":
                lst.f.extend(_float(x) for x in items)
            elif k == "b":
                lst.b.extend(items)
            elif k == "s":
                lst.s.extend(s.encode("utf-8") for s in items)
            elif k == "shape":
                for s in items:
                    _shape_pb(s, lst.shape.add())
            elif k == "tensor":
                for t in items:
                    _tensor_pb(t, lst.tensor.add())
    else:  # validate_graph_def has refused anything else
        raise AssertionError(key)


def to_proto(graph_or_graph_def: Graph | dict[str, Any], add_shapes: bool = True) -> Any:
    """TensorFlow's `GraphDef` proto of a flowlab Graph or GraphDef dict.

    A Graph is exported with `as_graph_def(add_shapes=add_shapes)` (`_output_shapes`
    on every node, what TensorBoard labels edges with); a dict is validated and
    converted as it is.

        pb = to_proto(tf.get_default_graph())
        open("graph.pb", "wb").write(pb.SerializeToString())
    """
    if isinstance(graph_or_graph_def, dict):
        gd = graph_or_graph_def
        validate_graph_def(gd)
    elif hasattr(graph_or_graph_def, "as_graph_def"):  # a Graph
        gd = graph_to_dict(graph_or_graph_def, add_shapes=add_shapes)
    else:
        raise TypeError(
            f"to_proto expects a flowlab Graph or GraphDef dict, got {type(graph_or_graph_def).__name__}"
        )
    pb = graph_pb2.GraphDef()
    for n in gd["node"]:
        node = pb.node.add()
        node.name = n["name"]
        node.op = n["op"]
        node.input.extend(n.get("input", ()))
        node.device = n.get("device", "")
        attrs = node.attr
        for k, v in n.get("attr", {}).items():
            _attr_pb(v, attrs[k])
    pb.versions.producer = PRODUCER
    pb.versions.min_consumer = MIN_CONSUMER
    return pb


# --- proto -> flowlab JSON ---------------------------------------------------------------
def _dtype_json(v: int, where: str) -> str:
    try:
        name = _DT_NAME(v)
    except ValueError:
        raise ValueError(f"{where}: unknown DataType {v}") from None
    from flowlab.graph.attr_value_json import _DT_BY_NAME

    if name not in _DT_BY_NAME:
        raise ValueError(f"{where}: dtype {name} is not supported by flowlab")
    return name


def _shape_json(s: Any) -> dict[str, Any]:
    if s.unknown_rank:
        return {"unknown_rank": True}
    return {"dim": [d.size for d in s.dim]}


def _tensor_json(t: Any, where: str) -> dict[str, Any]:
    import numpy as np
    from tensorboard.util import tensor_util

    name = _dtype_json(t.dtype, where)
    if name in ("DT_RESOURCE", "DT_VARIANT") or name.endswith("_REF"):
        raise ValueError(f"{where}: tensors of dtype {name} cannot be stored in a GraphDef")
    try:
        arr = tensor_util.make_ndarray(t)
    except Exception as e:  # malformed content: wrong byte count, bad shape
        raise ValueError(f"{where}: cannot decode the TensorProto: {e}") from None
    if name == "DT_STRING":
        arr = np.asarray(arr, dtype=object)
    out = _tensor_to_json(arr)
    out["dtype"] = name  # make_ndarray keeps the dtype; say it as the proto does
    return out


def _float_json(f: float) -> Any:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return f


def _str_json(b: bytes, where: str) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{where}: string attr is not UTF-8 text, which flowlab attrs must be") from None


def _attr_json(a: Any, where: str) -> dict[str, Any]:
    kind = a.WhichOneof("value")
    if kind == "type":
        return {"type": _dtype_json(a.type, where)}
    if kind == "i":
        return {"i": a.i}
    if kind == "f":
        return {"f": _float_json(a.f)}
    if kind == "b":
        return {"b": a.b}
    if kind == "s":
        return {"s": _str_json(a.s, where)}
    if kind == "shape":
        return {"shape": _shape_json(a.shape)}
    if kind == "tensor":
        return {"tensor": _tensor_json(a.tensor, where)}
    if kind == "func":
        return {"func": {"name": a.func.name}}
    if kind == "list":
        lst = a.list
        if lst.func:
            raise ValueError(f"{where}: lists of functions are not supported by flowlab")
        for key, items in (("s", lst.s), ("i", lst.i), ("f", lst.f), ("b", lst.b), ("type", lst.type),
                           ("shape", lst.shape), ("tensor", lst.tensor)):
            if len(items):
                if key == "s":
                    return {"list": {"s": [_str_json(x, where) for x in items]}}
                if key == "f":
                    return {"list": {"f": [_float_json(x) for x in items]}}
                if key == "type":
                    return {"list": {"type": [_dtype_json(x, where) for x in items]}}
                if key == "shape":
                    return {"list": {"shape": [_shape_json(x) for x in items]}}
                if key == "tensor":
                    return {"list": {"tensor": [_tensor_json(x, where) for x in items]}}
                return {"list": {key: list(items)}}
        return {"list": {}}
    if kind == "placeholder":
        raise ValueError(f"{where}: attr placeholders ('{a.placeholder}') belong to functions, "
                         "which flowlab does not support")
    raise ValueError(f"{where}: the attr value is not set")


def parse_proto(data: bytes | str, as_text: bool | None = None) -> Any:
    """A `GraphDef` proto from `.pb` bytes or `.pbtxt` text (`as_text=None`: text when
    `data` is a str or does not parse as binary)."""
    from google.protobuf import message, text_format

    pb = graph_pb2.GraphDef()
    if isinstance(data, str) or as_text:
        text_format.Parse(data if isinstance(data, str) else data.decode("utf-8"), pb)
        return pb
    try:
        pb.ParseFromString(data)
    except message.DecodeError:
        if as_text is False:
            raise ValueError("The data is not a binary GraphDef protocol buffer") from None
        try:
            text_format.Parse(data.decode("utf-8"), pb)
        except (UnicodeDecodeError, text_format.ParseError) as e:
            raise ValueError(f"The data is neither a binary nor a text GraphDef: {e}") from None
    return pb


def from_proto(graph_def: Any) -> dict[str, Any]:
    """The flowlab GraphDef dict of a TensorFlow `GraphDef` (a proto, or its bytes or text).

    Node names, op types, inputs, devices and attrs are kept as they are; what flowlab
    cannot represent is a ValueError naming the node (see the module docstring).
    Whether flowlab has each op type is for the importer to say
    (`tf.import_graph_def` lists the missing ones).
    """
    pb = graph_def if hasattr(graph_def, "node") else parse_proto(graph_def)
    if pb.library.function:
        names = ", ".join(repr(f.signature.name) for f in pb.library.function[:5])
        raise ValueError(f"The GraphDef's library holds functions ({names}), which flowlab does not support")
    nodes = []
    for n in pb.node:
        where = f"Node '{n.name}'"
        nodes.append({
            "name": n.name,
            "op": n.op,
            "input": list(n.input),
            "device": n.device,
            "attr": {k: _attr_json(n.attr[k], f"{where}: attr '{k}'") for k in sorted(n.attr)},
        })
    gd = {"format": FORMAT, "version": VERSION, "node": nodes, "library": {}}
    validate_graph_def(gd)
    return gd


def write_graph(graph_or_graph_def: Any, logdir: str, name: str, as_text: bool = True) -> str:
    """Write a graph as TensorFlow's `GraphDef` to `logdir/name`; returns the path
    (`tf.train.write_graph` / `tf.io.write_graph`).

    `as_text=True` writes the text format (`.pbtxt`), else the binary proto (`.pb`),
    both as TensorFlow writes them and readable by TensorFlow, TensorBoard and Netron.
    A Graph is exported with `as_graph_def()` (no `_output_shapes`, as TensorFlow);
    a GraphDef dict or proto is written as it is.  The file is written under a
    temporary name and renamed, so a reader never sees half of it.
    (flowlab's JSON GraphDef is `flowlab.graph.graph_def.write_graph`.)

        tf.train.write_graph(sess.graph, "/tmp/model", "graph.pbtxt")
    """
    import os
    import tempfile

    from google.protobuf import text_format

    g = graph_or_graph_def
    pb = g if isinstance(g, graph_pb2.GraphDef) else to_proto(g, add_shapes=False)
    if as_text:
        data = text_format.MessageToString(pb).encode("utf-8")  # floats: shortest round trip
    else:
        data = pb.SerializeToString(deterministic=True)
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
