"""`import_graph_def`: re-create the nodes of a GraphDef in the default graph.

TensorFlow 1.x semantics (`tf.import_graph_def`): every node is rebuilt through its
op's declaration (attrs checked and defaulted, output dtypes computed from the attrs,
the shape function run), under the name prefix `name` ("import" by default, made
unique like a name scope; "" for none).  Names that clash with existing ops are made
unique as TensorFlow's importer does (`a` -> `a_1`).  `input_map` replaces inputs
(`"x:0"` or `"x"` -> Tensor, `"^x"` -> Operation for control inputs);
`return_elements` resolves `"op"` to Operations and `"op:0"` to Tensors.  Device
scopes and control-dependency blocks around the call apply to every imported op;
colocated nodes (`_class`) take the device of the op they are colocated with.

Nodes may come in any order: they are created in the topological order that picks
the earliest listed ready node first (TensorFlow's), so an exported graph is
re-created in its original order.  Cycles are rejected, except loop back edges from
a NextIteration into a Merge, which are wired once the NextIteration exists.

Loading never executes code (no pickle, no eval).  Everything that can be checked
before creating ops is checked first (structure, op types, attrs, inputs, dtypes,
cycles, input_map and return_elements), so bad input raises ValueError naming the
node before any op exists; if a shape function still fails, the ops already created
by this call are removed again, so a failed import leaves the graph as it was.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.graph import Graph, get_default_graph
from flowlab.graph.graph_def import (
    NodeSpec,
    attr_from_json,
    attr_to_json,
    discard_ops,
    parse_graph_def,
)
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.import_plan import NotFoundError, _parse_tensor_name, _Plan  # noqa: F401
from flowlab.ops.import_proto import graph_def_for_import, is_graph_def_proto
from flowlab.ops.op_def import OpDef, get_op_def

__all__ = ["import_graph_def"]

def import_graph_def(
    graph_def: dict[str, Any],
    input_map: dict[str, Any] | None = None,
    return_elements: list[str] | None = None,
    name: str | None = None,
    op_dict: Any = None,
    producer_op_list: Any = None,
) -> list[Any] | None:
    """Import a GraphDef dict -- or TensorFlow's GraphDef proto, converted by
    flowlab.ops.import_proto -- into the default graph (`tf.import_graph_def`).

        gd = g.as_graph_def()
        with tf.Graph().as_default():
            y, = tf.import_graph_def(gd, input_map={"x:0": x2}, return_elements=["y:0"])

    `op_dict` is ignored (deprecated in TensorFlow too).  `producer_op_list` lists the
    op declarations of the program that wrote the GraphDef (`{"op": [{"name": ...,
    "attr": [{"name": ..., "default_value": <attr value>}]}]}` or OpDef objects);
    attrs this flowlab does not know are dropped when they hold the producer's default.
    """
    del op_dict
    # Gradient ops (ReluGrad, BiasAddGrad, ...) are declared by the *_grad modules, which
    # load on the first tf.gradients call; a GraphDef holding them may come first.
    from flowlab.ops.gradients_impl import _load_gradient_modules

    _load_gradient_modules()
    if is_graph_def_proto(graph_def):  # TensorFlow's proto (a .pb / .pbtxt read in)
        graph_def = graph_def_for_import(graph_def)
    if not isinstance(graph_def, dict):
        raise TypeError(
            "Argument `graph_def` must be a GraphDef (the dict of Graph.as_graph_def() or of "
            f"flowlab.graph.graph_def.from_json(text)), got {type(graph_def).__name__}."
        )
    keyed = _process_input_map(input_map)
    returns = _process_return_elements(return_elements)
    nodes = parse_graph_def(graph_def)
    if producer_op_list is not None:
        _remove_default_attrs(producer_op_list, nodes)

    g = get_default_graph()
    g._check_not_finalized()
    outer_control = g._control_inputs_for([])
    names_in_use = dict(g._names_in_use)
    n_before = len(g._ops)
    try:
        with g.name_scope(name if name is not None else "import") as scope:
            prefix = scope[:-1] if scope else ""
            mapped = _convert_input_map(name, keyed, g)
        plan = _Plan(g, nodes, mapped, prefix)
        wanted = plan.resolve_returns(returns)
        plan.create(outer_control)
    except BaseException:
        # Leave the graph as it was: no op (not even a converted input_map value)
        # and no name of this call remains.
        discard_ops(g, g.get_operations()[n_before:], names_in_use)
        raise
    if wanted is None:
        return None
    out: list[Any] = []
    for src, idx in wanted:
        if isinstance(src, Tensor):
            out.append(src)
        elif idx is None:
            out.append(plan.created[src])
        else:
            out.append(plan.created[src].outputs[idx])
    return out


# --- arguments -----------------------------------------------------------------------
def _process_input_map(input_map: Any) -> dict[tuple[str, int], tuple[str, Any]]:
    if input_map is None:
        return {}
    if not isinstance(input_map, dict):
        raise TypeError(
            f"Argument `input_map` must be a dictionary. Obtained {type(input_map).__name__}"
        )
    if not all(isinstance(k, (str, bytes)) for k in input_map):
        raise TypeError(
            f"All keys for argument `input_map` must be strings. Obtained keys: {list(input_map)}"
        )
    out: dict[tuple[str, int], tuple[str, Any]] = {}
    for k, v in input_map.items():
        k = k.decode() if isinstance(k, bytes) else k
        key = (k[1:], -1) if k.startswith("^") else _parse_tensor_name(k)
        out[key] = (k, v)
    return out


def _process_return_elements(return_elements: Any) -> list[str] | None:
    if return_elements is None:
        return None
    if isinstance(return_elements, (str, bytes)) or not all(
        isinstance(x, (str, bytes)) for x in return_elements
    ):
        raise TypeError(
            f"Argument `return_elements` must be a list of strings. Obtained {return_elements}."
        )
    return [x.decode() if isinstance(x, bytes) else x for x in return_elements]


def _convert_input_map(
    name: str | None, input_map: dict[tuple[str, int], tuple[str, Any]], g: Graph
) -> dict[tuple[str, int], tuple[str, Any]]:
    """Values as Tensors (or Operations for control keys), converted in `_inputs`."""

    def ready(key: tuple[str, int], v: Any) -> bool:
        return isinstance(v, Tensor) or (key[1] < 0 and isinstance(v, Operation))

    if not all(ready(key, v) for key, (_, v) in input_map.items()):
        if name == "":
            raise ValueError(
                "tf.import_graph_def() requires a non-empty `name` if `input_map` contains "
                "non-Tensor values. Try calling tf.convert_to_tensor() on `input_map` values "
                "before calling tf.import_graph_def()."
            )
        with g.name_scope("_inputs"):
            input_map = {
                key: (k, v if ready(key, v) else convert_to_tensor(v))
                for key, (k, v) in input_map.items()
            }
    out = {}
    for key, (k, v) in input_map.items():
        if key[1] < 0 and isinstance(v, Tensor):
            v = v.op
        if v.graph is not g:
            raise ValueError(
                f"node '{v.name}' in input_map does not exist in graph (input_map entry: {k}->"
                f"{v.name}); input_map values must belong to the graph being imported into."
            )
        out[key] = (k, v)
    return out


def _remove_default_attrs(producer_op_list: Any, nodes: list[NodeSpec]) -> None:
    """Drop attrs unknown here that the producer declared with this default value."""
    defaults: dict[str, dict[str, Any]] = {}
    if isinstance(producer_op_list, dict):
        ops = producer_op_list.get("op", [])
        if not isinstance(ops, list):
            raise ValueError("producer_op_list['op'] must be a list of op declarations")
        for i, o in enumerate(ops):
            where = f"producer_op_list op #{i}"
            if not isinstance(o, dict) or not isinstance(o.get("name"), str):
                raise ValueError(f"{where}: expected {{\"name\": ..., \"attr\": [...]}}")
            d = defaults.setdefault(o["name"], {})
            for a in o.get("attr", []):
                if not isinstance(a, dict) or not isinstance(a.get("name"), str):
                    raise ValueError(f"{where}: each attr is {{\"name\": ..., \"default_value\": ...}}")
                if "default_value" in a:
                    d[a["name"]] = attr_from_json(a["default_value"], f"{where} attr '{a['name']}'")
    else:
        for o in producer_op_list:
            if not isinstance(o, OpDef):
                raise TypeError(f"producer_op_list must hold OpDefs, got {type(o).__name__}")
            d = defaults.setdefault(o.name, {})
            for a in o.attrs.values():
                if a.has_default and a.default is not None:
                    d[a.name] = attr_from_json(attr_to_json(a.default, a.kind), a.name)
    for node in nodes:
        producer = defaults.get(node.op)
        if producer is None:
            continue
        try:
            od = get_op_def(node.op)
        except KeyError:
            continue
        for key in list(node.attrs):
            if key not in od.attrs and key in producer and _same_attr(node.attrs[key], producer[key]):
                del node.attrs[key]


def _same_attr(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    def enc(x: tuple[str, Any]) -> Any:
        kind, v = x
        return attr_to_json(v, None if kind == "list" else kind)

    return enc(a) == enc(b)
