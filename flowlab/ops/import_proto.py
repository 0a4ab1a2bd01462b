"""Importing TensorFlow's `GraphDef` protos: what `tf.import_graph_def` does first when
it is given a proto (a `.pb` / `.pbtxt` that TensorFlow or flowlab wrote).

`graph_def_for_import(pb)` converts the proto to flowlab's GraphDef dict
(flowlab/graph/graph_def_pb.py) and checks it against flowlab's op registry:

- every op type the graph uses must be declared in flowlab; otherwise one
  `NotFoundError` lists all the missing types, each with how many nodes use it and
  the first of them, so a user sees at once what a graph needs;
- attrs that flowlab's declaration of an op does not have (TensorFlow adds attrs over
  the years: MatMul's `grad_a`, Conv2D's `explicit_paddings`, ...) are dropped, with
  one warning naming them, as TensorFlow itself ignores attrs its op registry does
  not know when it reads a newer graph.  Private attrs (`_class`, `_output_shapes`)
  are kept.

The proto is not modified; nothing is executed.
"""

from __future__ import annotations

import warnings
from typing import Any

from flowlab.graph.graph_def_pb import from_proto
from flowlab.ops.import_plan import NotFoundError
from flowlab.ops.op_def import registered_ops

__all__ = ["graph_def_for_import", "is_graph_def_proto"]


def is_graph_def_proto(value: Any) -> bool:
    """Whether `value` is a GraphDef protocol buffer (any protobuf runtime's)."""
    # tensorboard's copy of the schema is package "tensorboard", TensorFlow's "tensorflow":
    # the same message on the wire.
    desc = getattr(value, "DESCRIPTOR", None)
    return getattr(desc, "full_name", None) in ("tensorflow.GraphDef", "tensorboard.GraphDef")


def graph_def_for_import(pb: Any) -> dict[str, Any]:
    """flowlab's GraphDef dict of a GraphDef proto, checked against the op registry
    (see the module docstring)."""
    from tensorboard.compat.proto import graph_pb2

    if not isinstance(pb, graph_pb2.GraphDef):
        # A message of another module's classes (e.g. TensorFlow's own graph_pb2):
        # re-read its bytes with tensorboard's.
        copy = graph_pb2.GraphDef()
        copy.ParseFromString(pb.SerializeToString())
        pb = copy
    gd = from_proto(pb)
    registry = registered_ops()
    missing: dict[str, list[str]] = {}
    dropped: dict[str, set[str]] = {}
    for node in gd["node"]:
        od = registry.get(node["op"])
        if od is None:
            missing.setdefault(node["op"], []).append(node["name"])
            continue
        for key in list(node["attr"]):
            if not key.startswith("_") and key not in od.attrs:
                del node["attr"][key]
                dropped.setdefault(node["op"], set()).add(key)
    if missing:
        parts = [f"'{op}' ({len(names)} node{'s' if len(names) > 1 else ''}, e.g. '{names[0]}')"
                 for op, names in sorted(missing.items())]
        raise NotFoundError(
            None, None,
            f"The GraphDef uses {len(missing)} op type{'s' if len(missing) > 1 else ''} that flowlab "
            f"does not have: {', '.join(parts)}. Nothing was imported.",
        )
    if dropped:
        listed = "; ".join(f"{op}: {', '.join(sorted(keys))}" for op, keys in sorted(dropped.items()))
        warnings.warn(f"import_graph_def: ignoring attrs flowlab's ops do not declare ({listed})",
                      stacklevel=3)
    return gd
