"""Meta graphs: `export_meta_graph` / `import_meta_graph` (`<prefix>.meta`, JSON).

A meta graph is ``{"format": "flowlab-meta-graph", "version": 1, "meta_info_def",
"graph_def" (the GraphDef JSON dict), "saver_def", "collection_def"}``.
`import_meta_graph` rebuilds the graph, its variables and collections and returns a
Saver, without executing any code: no pickle, and a meta graph that says it is
anything else (``"format": "pickle"``) is refused.

A meta graph read from a file is validated before anything is added to the graph
(`validate`): every field's type, the collection kinds and their values, the saver
def's fields, and that every name a collection or the saver def uses is a node of
the graph def.  The graph def itself is checked by `import_graph_def` before it
creates an op.  Any malformed file gives `DataLossError` naming the file and the
entry -- never a raw KeyError/TypeError -- and leaves the default graph unchanged.
"""

from __future__ import annotations

import json
import os
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from tensorboard.compat.proto.saver_pb2 import SaverDef

from flowlab import errors
from flowlab.graph.graph import get_default_graph
from flowlab.graph.graph_def import graph_to_dict
from flowlab.graph.tensor import Operation, Tensor
from flowlab.kernels import checkpoint_format as fmt
from flowlab.kernels.checkpoint_index import FileTooLarge, NotARegularFile, read_regular
from flowlab.ops.slice_spec import SaveSliceInfo
from flowlab.ops.variables import Variable

__all__ = ["export_meta_graph", "import_meta_graph"]

FORMAT = "flowlab-meta-graph"
_TOP = {"format", "version", "meta_info_def", "graph_def", "saver_def", "collection_def"}
_KINDS = ("variables", "node_list", "bytes_list", "int64_list", "float_list")
_VAR_FIELDS = ("variable_name", "initializer_name", "snapshot_name", "initial_value_name")
# The saver def's fields in JSON: TensorFlow's SaverDef's, by name.  Files written
# before it was the proto also hold "sharded_temp_tensor_name" (now found in the graph
# by the Saver): read and checked, then dropped.
_SAVER_FIELDS = {f.name: f for f in SaverDef.DESCRIPTOR.fields}
_LEGACY_SAVER_FIELD = "sharded_temp_tensor_name"
_NAME_FIELDS = ("filename_tensor_name", "save_tensor_name", "restore_op_name", _LEGACY_SAVER_FIELD)


def _saver_def_json(sd: SaverDef) -> dict[str, Any]:
    return {name: getattr(sd, name) for name in _SAVER_FIELDS}


def _saver_def_of_json(sd: dict[str, Any]) -> SaverDef:
    return SaverDef(**{k: v for k, v in sd.items() if k != _LEGACY_SAVER_FIELD})


def _check_saver_field(k: str, v: Any) -> None:
    if k == _LEGACY_SAVER_FIELD:
        good, want = type(v) is str, "str"
    elif k not in _SAVER_FIELDS:
        raise _Bad(f"'saver_def': unknown field {k!r}")
    elif _SAVER_FIELDS[k].type == FieldDescriptor.TYPE_ENUM:  # version: LEGACY, V1, V2
        numbers = _SAVER_FIELDS[k].enum_type.values_by_number
        if type(v) is not int or v not in numbers:
            raise _Bad(f"'saver_def' {k!r}: expected one of {sorted(numbers)}, got {v!r}")
        return
    else:
        want = {FieldDescriptor.TYPE_STRING: "str", FieldDescriptor.TYPE_BOOL: "bool",
                FieldDescriptor.TYPE_FLOAT: "float"}.get(_SAVER_FIELDS[k].type, "int")
        good = type(v) in {"str": (str,), "bool": (bool,), "float": (int, float), "int": (int,)}[want]
    if not good:
        raise _Bad(f"'saver_def' {k!r}: expected {want}, got {type(v).__name__}")


def _slice_info_to_json(v: Variable) -> dict[str, Any]:
    """A shard's save_slice_info (TensorFlow's VariableDef.save_slice_info_def)."""
    info = v._get_save_slice_info()
    if info is None:
        return {}
    return {"save_slice_info_def": {
        "full_name": info.full_name, "full_shape": [int(d) for d in info.full_shape],
        "var_offset": [int(d) for d in info.var_offset], "var_shape": [int(d) for d in info.var_shape],
    }}


def _check_slice_info(d: Any, where: str) -> None:
    keys = {"full_name", "full_shape", "var_offset", "var_shape"}
    if type(d) is not dict or set(d) != keys or type(d["full_name"]) is not str:
        raise _Bad(f"{where}: expected an object with {', '.join(sorted(keys))}")
    lists = [d["full_shape"], d["var_offset"], d["var_shape"]]
    if any(type(x) is not list or any(type(i) is not int or i < 0 for i in x) for x in lists) \
            or len({len(x) for x in lists}) != 1 \
            or any(o + n > f for f, o, n in zip(*lists)):
        raise _Bad(f"{where}: expected full_shape, var_offset and var_shape of one rank, "
                   "non-negative, the slice inside the full shape")


def _collection_to_json(values: list[Any]) -> dict[str, Any] | None:
    if values and all(isinstance(v, Variable) for v in values):
        return {"kind": "variables", "value": [{
            "variable_name": v._ref().name, "initializer_name": v.initializer.name,
            "snapshot_name": v.value().name, "initial_value_name": v.initial_value.name,
            "trainable": v.trainable,
            **_slice_info_to_json(v),
        } for v in values]}
    if all(isinstance(v, (Tensor, Operation)) for v in values):
        return {"kind": "node_list", "value": [v.name for v in values]}
    if all(isinstance(v, (bytes, str)) for v in values):
        return {"kind": "bytes_list",
                "value": [v.decode("utf-8") if isinstance(v, bytes) else v for v in values]}
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return {"kind": "int64_list", "value": list(values)}
    if all(isinstance(v, float) for v in values):
        return {"kind": "float_list", "value": list(values)}
    return None  # not representable (TensorFlow warns and skips it too)


def export_meta_graph(filename: str | None = None, collection_list: Any = None,
                      graph: Any = None, clear_devices: bool = False,
                      saver_def: Any = None, **kwargs: Any) -> dict[str, Any]:
    """The MetaGraph of `graph` as a JSON-able dict, written to `filename` if given
    (atomically).  `tf.train.export_meta_graph`."""
    g = graph or get_default_graph()
    gd = graph_to_dict(g)
    if clear_devices:
        for node in gd["node"]:
            node.pop("device", None)
    keys = collection_list if collection_list is not None else g.get_all_collection_keys()
    collections = {}
    for key in keys:
        c = _collection_to_json(list(g.get_collection(key)))
        if c is not None:
            collections[key] = c
    meta = {
        "format": FORMAT, "version": 1,
        "meta_info_def": {"flowlab_version": "0.1.0", "tags": []},
        "graph_def": gd,
        "saver_def": _saver_def_json(saver_def) if saver_def is not None else None,
        "collection_def": collections,
    }
    if filename:
        d = os.path.dirname(filename)
        if d:
            os.makedirs(d, exist_ok=True)
        fmt.atomic_write_text(filename, json.dumps(meta))
    return meta


# --- validation ------------------------------------------------------------------------
class _Bad(Exception):
    pass


def _node_names(gd: Any) -> set[str]:
    if type(gd) is not dict:
        raise _Bad("'graph_def': expected an object")
    nodes = gd.get("node", [])
    if type(nodes) is not list:
        raise _Bad("'graph_def' 'node': expected a list")
    names = set()
    for i, n in enumerate(nodes):
        if type(n) is not dict or type(n.get("name")) is not str:
            raise _Bad(f"'graph_def' node {i}: expected an object with a string 'name'")
        names.add(n["name"])
    return names


def _element(name: Any, nodes: set[str], where: str) -> None:
    """`name` ("op" or "op:i") must name a node of the graph def."""
    if type(name) is not str:
        raise _Bad(f"{where}: expected a string, got {type(name).__name__}")
    op, _, idx = name.partition(":")
    if op not in nodes or (idx and not idx.isdigit()):
        raise _Bad(f"{where}: {name!r} is not a node of the graph def")


def validate(meta: Any) -> None:
    """Check a meta graph dict's structure (raises _Bad naming the entry)."""
    if type(meta) is not dict:
        raise _Bad(f"expected a JSON object, got {type(meta).__name__}")
    unknown = set(meta) - _TOP
    if unknown:
        raise _Bad(f"unknown field {sorted(unknown)[0]!r}")
    if meta.get("format") != FORMAT:
        raise _Bad(f"'format': expected {FORMAT!r}, got {meta.get('format')!r} (flowlab reads "
                   "only its own JSON meta graphs; nothing is unpickled)")
    if "version" in meta and (type(meta["version"]) is not int or meta["version"] != 1):
        raise _Bad(f"'version': expected 1, got {meta['version']!r}")
    if type(meta.get("meta_info_def", {})) is not dict:
        raise _Bad("'meta_info_def': expected an object")
    if "graph_def" not in meta:
        raise _Bad("missing field 'graph_def'")
    nodes = _node_names(meta["graph_def"])
    colls = meta.get("collection_def", {})
    if type(colls) is not dict:
        raise _Bad("'collection_def': expected an object")
    for key, c in colls.items():
        where = f"collection_def[{key!r}]"
        if type(c) is not dict or set(c) != {"kind", "value"}:
            raise _Bad(f"{where}: expected an object with 'kind' and 'value'")
        kind, values = c["kind"], c["value"]
        if kind not in _KINDS:
            raise _Bad(f"{where} 'kind': {kind!r} is not one of {', '.join(_KINDS)}")
        if type(values) is not list:
            raise _Bad(f"{where} 'value': expected a list")
        for i, v in enumerate(values):
            w = f"{where} value {i}"
            if kind == "variables":
                if type(v) is not dict or not set(_VAR_FIELDS) <= set(v) or \
                        not set(v) <= {*_VAR_FIELDS, "trainable", "save_slice_info_def"}:
                    raise _Bad(f"{w}: expected an object with {', '.join(_VAR_FIELDS)}")
                if "save_slice_info_def" in v:
                    _check_slice_info(v["save_slice_info_def"], f"{w} 'save_slice_info_def'")
                for f in _VAR_FIELDS:
                    _element(v[f], nodes, f"{w} {f!r}")
                if type(v.get("trainable", True)) is not bool:
                    raise _Bad(f"{w} 'trainable': expected true or false")
            elif kind == "node_list":
                _element(v, nodes, w)
            elif kind == "bytes_list" and type(v) is not str:
                raise _Bad(f"{w}: expected a string")
            elif kind == "int64_list" and type(v) is not int:
                raise _Bad(f"{w}: expected an integer")
            elif kind == "float_list" and type(v) not in (int, float):
                raise _Bad(f"{w}: expected a number")
    sd = meta.get("saver_def")
    if sd is not None:
        if type(sd) is not dict:
            raise _Bad("'saver_def': expected an object or null")
        for k, v in sd.items():
            _check_saver_field(k, v)
        for k in _NAME_FIELDS:
            if sd.get(k):
                _element(sd[k], nodes, f"'saver_def' {k!r}")


def _read(path: str) -> Any:
    try:
        raw = read_regular(path, 1 << 34)
    except FileNotFoundError:
        raise OSError(f"File does not exist. Received: {path}.") from None
    except (NotARegularFile, FileTooLarge) as e:
        raise errors.DataLossError(None, None, f"Meta graph file {path} is corrupted: {e}.") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise errors.DataLossError(
            None, None, f"Meta graph file {path} is corrupted ({type(e).__name__}: "
            f"{str(e)[:100]})."
        ) from None


def import_meta_graph(meta_graph_or_file: Any, clear_devices: bool = False,
                      import_scope: str | None = None, **kwargs: Any) -> Any:
    """Rebuild a graph exported by `export_meta_graph`/`Saver.save` into the default
    graph (with its variables and collections); returns a Saver for it, or None when
    it has no saver and no variables.  `tf.train.import_meta_graph`."""
    from flowlab.ops.importer import import_graph_def
    from flowlab.train.saver import Saver

    meta = meta_graph_or_file
    source = "The meta graph"
    if not isinstance(meta, dict):
        source = f"Meta graph file {os.fspath(meta)}"
        meta = _read(os.fspath(meta))
    try:
        validate(meta)
    except _Bad as e:
        raise errors.DataLossError(None, None, f"{source} is malformed: {e}") from None
    gd = meta["graph_def"]
    if clear_devices:
        gd = dict(gd, node=[{k: v for k, v in n.items() if k != "device"} for n in gd["node"]])
    g = get_default_graph()
    try:
        import_graph_def(gd, name=import_scope or "")
    except (ValueError, TypeError, KeyError) as e:
        raise errors.DataLossError(
            None, None, f"{source} is malformed: 'graph_def': {e}"
        ) from None
    prefix = (import_scope + "/") if import_scope else ""
    has_vars = False
    try:
        for key, c in meta.get("collection_def", {}).items():
            kind, values = c["kind"], c["value"]
            if kind == "variables":
                for vd in values:
                    has_vars = True
                    g.add_to_collection(key, _rebuilt_variable(g, vd, prefix))
            elif kind == "node_list":
                for name in values:
                    g.add_to_collection(key, g.as_graph_element(prefix + name))
            else:
                for v in values:
                    g.add_to_collection(key, v)
    except (ValueError, TypeError, KeyError) as e:  # e.g. "op:7" of an op with 1 output
        raise errors.DataLossError(
            None, None, f"{source} is malformed: collection_def[{key!r}]: {e}"
        ) from None
    sd = meta.get("saver_def")
    if sd is not None:
        sd = _saver_def_of_json(sd)
        if prefix:
            sd.filename_tensor_name = prefix + sd.filename_tensor_name
            sd.save_tensor_name = prefix + sd.save_tensor_name
            sd.restore_op_name = prefix + sd.restore_op_name
        return Saver(saver_def=sd)
    return Saver(**kwargs) if has_vars else None


_VAR_CACHE_KEY = "_flowlab_rebuilt_variables"


def _rebuilt_variable(g: Any, vd: dict[str, Any], prefix: str) -> Variable:
    """A Variable object over imported ops (one per variable, shared by collections)."""
    cache = g.__dict__.setdefault(_VAR_CACHE_KEY, {})
    name = prefix + vd["variable_name"]
    if name in cache:
        return cache[name]
    v = Variable.__new__(Variable)
    v._variable = g.as_graph_element(name)
    v._snapshot = g.as_graph_element(prefix + vd["snapshot_name"])
    v._initializer_op = g.as_graph_element(prefix + vd["initializer_name"])
    v._initial_value = g.as_graph_element(prefix + vd["initial_value_name"])
    v._trainable = bool(vd.get("trainable", True))
    v._constraint = None
    v._caching_device = None
    info = vd.get("save_slice_info_def")
    # As TensorFlow's SaveSliceInfo.from_proto: the full name moves into the import scope.
    v._save_slice_info = None if info is None else SaveSliceInfo(
        prefix + info["full_name"], list(info["full_shape"]), list(info["var_offset"]),
        list(info["var_shape"]))
    cache[name] = v
    return v
