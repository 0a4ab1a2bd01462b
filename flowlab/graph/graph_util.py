"""`tf.graph_util`: passes over GraphDefs, as TensorFlow 1.x has them.

- `extract_sub_graph(graph_def, dest_nodes)`: the nodes `dest_nodes` need (inputs,
  control inputs and `_class` colocations, transitively), in their original order.
- `convert_variables_to_constants(sess, graph_def, output_node_names)`: the
  subgraph for the outputs with every variable (`VariableV2`, `Variable`,
  `VarHandleOp`) replaced by a `Const` of its value in `sess` ("freezing"), and
  each `ReadVariableOp` of one by an `Identity`; `variable_names_whitelist` /
  `blacklist` choose which.
- `remove_training_nodes(graph_def, protected_nodes)`: drops `CheckNumerics` and
  splices out `Identity` / `StopGradient` nodes nothing depends on by name.
- `tensor_shape_from_node_def_name(graph, name)`, `must_run_on_cpu(node)`.

Each pass takes a GraphDef -- flowlab's JSON dict (`sess.graph.as_graph_def()`) or
TensorFlow's proto -- and returns TensorFlow's `GraphDef` proto, as TensorFlow's do, so
that programs can `SerializeToString()` it, write it with `tf.train.write_graph` or
import it with `tf.import_graph_def`; its input is never modified.  As in TensorFlow,
a name in `dest_nodes` that is not in the graph is an AssertionError.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from flowlab.graph.attr_value_json import _tensor_to_json

__all__ = [
    "convert_variables_to_constants", "extract_sub_graph", "must_run_on_cpu",
    "remove_training_nodes", "tensor_shape_from_node_def_name",
]

_VARIABLE_OPS = {"Assign", "AssignAdd", "AssignSub", "Queue", "ScatterAdd", "ScatterSub",
                 "ScatterUpdate", "TruncatedNormal", "Variable", "VariableV2"}


def _as_dict(graph_def: Any) -> dict[str, Any]:
    """The GraphDef dict of a dict or a GraphDef proto."""
    if isinstance(graph_def, dict):
        return dict(graph_def)
    if getattr(getattr(graph_def, "DESCRIPTOR", None), "full_name", None) in (
            "tensorflow.GraphDef", "tensorboard.GraphDef"):
        from flowlab.graph.graph_def_pb import from_proto

        return from_proto(graph_def)
    raise TypeError(f"graph_def must be a GraphDef (dict or graph_pb2.GraphDef proto), but got type {type(graph_def)}.")


def _proto(gd: dict[str, Any]) -> Any:
    """A pass's result as TensorFlow's proto, whichever form came in."""
    from flowlab.graph.graph_def_pb import to_proto

    return to_proto(gd)


def _node_name(n: str) -> str:
    return n[1:] if n.startswith("^") else n.split(":")[0]


def _colocations(node: dict[str, Any]) -> list[str]:
    cls = node.get("attr", {}).get("_class", {}).get("list", {}).get("s", [])
    return [s[5:] if s.startswith("loc:@") else s for s in cls]


def _extract(gd: dict[str, Any], dest_nodes: Any) -> dict[str, Any]:
    if isinstance(dest_nodes, str):
        raise TypeError(f"dest_nodes must be an iterable of strings, but got type {type(dest_nodes)}.")
    by_name = {n["name"]: n for n in gd["node"]}
    for d in dest_nodes:
        assert d in by_name, f"{d} is not in graph"
    keep: set[str] = set()
    todo = list(dest_nodes)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        node = by_name.get(name)
        if node is not None:
            todo.extend(_node_name(i) for i in node.get("input", []))
            todo.extend(_colocations(node))
    out = {k: v for k, v in gd.items() if k != "node"}
    out["node"] = [copy.deepcopy(n) for n in gd["node"] if n["name"] in keep]
    return out


def extract_sub_graph(graph_def: Any, dest_nodes: Any) -> Any:
    """The part of `graph_def` that `dest_nodes` (node names) depend on."""
    gd = _as_dict(graph_def)
    return _proto(_extract(gd, dest_nodes))


def convert_variables_to_constants(sess: Any, input_graph_def: Any, output_node_names: Any,
                                   variable_names_whitelist: Any = None,
                                   variable_names_blacklist: Any = None) -> Any:
    """`input_graph_def` cut down to `output_node_names`, with its variables replaced by
    constants holding their current values in `sess` (see the module docstring).

        frozen = tf.graph_util.convert_variables_to_constants(
            sess, sess.graph.as_graph_def(), ["logits"])
        tf.train.write_graph(frozen, "/tmp", "frozen.pb", as_text=False)
    """
    gd = _as_dict(input_graph_def)
    sub = _extract(gd, output_node_names)

    def wanted(name: str) -> bool:
        if variable_names_whitelist is not None and name not in variable_names_whitelist:
            return False
        return not (variable_names_blacklist is not None and name in variable_names_blacklist)

    handles = {n["name"] for n in sub["node"] if n["op"] == "VarHandleOp" and wanted(n["name"])}
    reads: dict[str, str] = {}  # VarHandleOp name -> a ReadVariableOp of it
    for n in gd["node"]:
        if n["op"] == "ReadVariableOp" and n.get("input") and _node_name(n["input"][0]) in handles:
            reads.setdefault(_node_name(n["input"][0]), n["name"])
    fetch: dict[str, str] = {}
    for n in sub["node"]:
        if n["op"] in ("Variable", "VariableV2") and wanted(n["name"]):
            fetch[n["name"]] = n["name"] + ":0"
        elif n["name"] in handles:
            if n["name"] not in reads:
                raise ValueError(f"Cannot find the value of resource variable '{n['name']}': no "
                                 "ReadVariableOp reads it in the GraphDef")
            fetch[n["name"]] = reads[n["name"]] + ":0"
    names = list(fetch)
    values = dict(zip(names, sess.run([fetch[n] for n in names]))) if names else {}
    nodes = []
    for n in sub["node"]:
        if n["name"] in values:
            value = values[n["name"]]
            dt = n["attr"]["dtype"]["type"].removesuffix("_REF")
            nodes.append({"name": n["name"], "op": "Const", "input": [], "device": "",
                          "attr": {"dtype": {"type": dt},
                                   "value": {"tensor": _const_tensor(value, dt)}}})
        elif n["op"] == "ReadVariableOp" and n.get("input") and _node_name(n["input"][0]) in values:
            m = copy.deepcopy(n)
            m["op"] = "Identity"
            m["attr"] = {"T": m["attr"]["dtype"]}
            nodes.append(m)
        else:
            nodes.append(n)
    sub["node"] = nodes
    return _proto(sub)


def _const_tensor(value: Any, dt: str) -> dict[str, Any]:
    import numpy as np

    from flowlab.graph.attr_value_json import dtype_from_json

    np_type = dtype_from_json(dt, "const").as_numpy_dtype
    arr = np.asarray(value, dtype=object if np_type is object else np_type)
    t = _tensor_to_json(arr)
    t["dtype"] = dt
    return t


def remove_training_nodes(input_graph: Any, protected_nodes: Any = None) -> Any:
    """`input_graph` without `CheckNumerics` and with unneeded `Identity` /
    `StopGradient` nodes spliced out (TensorFlow's rules; `protected_nodes` stay)."""
    gd = _as_dict(input_graph)
    protected = set(protected_nodes or [])
    removed = {n["name"] for n in gd["node"] if n["op"] == "CheckNumerics" and n["name"] not in protected}
    after = []
    for n in gd["node"]:
        if n["name"] in removed:
            continue
        m = copy.deepcopy(n)
        m["input"] = [i for i in n.get("input", []) if re.sub(r"^\^", "", i) not in removed]
        after.append(m)
    control_targets: set[str] = set()
    with_control: set[str] = set()
    colocated: set[str] = set()
    for n in after:
        for i in n["input"]:
            if "^" in i:
                control_targets.add(i.replace("^", ""))
                with_control.add(n["name"])
        colocated.update(_colocations(n))
    splice = {n["name"]: n["input"][0] for n in after
              if n["op"] in ("Identity", "StopGradient") and n["name"] not in protected
              and n["name"] not in colocated and n["name"] not in with_control}
    splice = {k: v for k, v in splice.items() if k not in control_targets}
    out = []
    for n in after:
        if n["name"] in splice:
            continue
        ins = []
        for full in n["input"]:
            name = re.sub(r"^\^", "", full)
            while name in splice:
                full = splice[name]
                name = re.sub(r"^\^", "", full)
            ins.append(full)
        n["input"] = ins
        out.append(n)
    result = {k: v for k, v in gd.items() if k != "node"}
    result["node"] = out
    return _proto(result)


def tensor_shape_from_node_def_name(graph: Any, input_name: str) -> Any:
    """The static shape of tensor `input_name` (`"x"` means `"x:0"`) of `graph`."""
    name = input_name if ":" in input_name else input_name + ":0"
    return graph.get_tensor_by_name(name).get_shape()


def must_run_on_cpu(node: Any, pin_variables_on_cpu: bool = False) -> bool:
    """Whether TensorFlow's rule keeps `node` (an Operation or a GraphDef node) on the CPU:
    int32/string constants, int32 DynamicStitch and Cast from int32 (and variables
    when `pin_variables_on_cpu`)."""
    if hasattr(node, "node_def") and not isinstance(node, dict):
        node = node.node_def
    if not isinstance(node, dict) and not hasattr(node, "attr"):
        raise TypeError(f"must_run_on_cpu expects an Operation or a GraphDef node, got {type(node).__name__}")
    op = node["op"] if isinstance(node, dict) else node.op

    def attr_type(key: str) -> Any:
        if isinstance(node, dict):
            return node.get("attr", {}).get(key, {}).get("type")
        from tensorboard.compat.proto import types_pb2

        return types_pb2.DataType.Name(node.attr[key].type)

    if pin_variables_on_cpu and op in _VARIABLE_OPS:
        return True
    if op == "Const":
        return attr_type("dtype") in ("DT_STRING", "DT_INT32")
    if op in ("DynamicStitch", "ParallelDynamicStitch"):
        return attr_type("T") == "DT_INT32"
    if op == "Cast":
        return attr_type("SrcT") == "DT_INT32"
    return False

